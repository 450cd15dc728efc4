/* Every event object the session emits, as bytes (src/proto/event.c): the
 * key order is part of the protocol. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "proto/event.h"

Suite *event_suite(void);

/* Compact JSON of ev (taken); the caller frees it. */
static char *dump(json_t *ev)
{
	char *s;

	ck_assert_ptr_nonnull(ev);
	s = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	return s;
}

static void expect(json_t *ev, const char *want)
{
	char *got = dump(ev);

	ck_assert_str_eq(got, want);
	free(got);
}

START_TEST(test_run_and_turn_events_have_pi_shapes)
{
	json_t *msg = json_pack("{s:s}", "role", "user");

	expect(event_agent_start(), "{\"type\":\"agent_start\"}");
	expect(event_turn_start(), "{\"type\":\"turn_start\"}");
	expect(event_message_start(msg), "{\"type\":\"message_start\",\"message\":{\"role\":\"user\"}}");
	expect(event_message_end(msg), "{\"type\":\"message_end\",\"message\":{\"role\":\"user\"}}");
	expect(event_turn_end(msg),
	       "{\"type\":\"turn_end\",\"message\":{\"role\":\"user\"},\"toolResults\":[]}");
	/* Borrowed: the message is still the caller's. */
	ck_assert_int_eq(msg->refcount, 1);
	expect(event_agent_end(json_pack("[O]", msg)),
	       "{\"type\":\"agent_end\",\"messages\":[{\"role\":\"user\"}],\"willRetry\":false,\"isTerminal\":true,\"yielded\":true}");
	json_decref(msg);
}
END_TEST

START_TEST(test_full_update_carries_the_partial_twice_and_delta_update_none)
{
	json_t *partial = json_pack("{s:s}", "role", "assistant");

	expect(event_message_update(event_text_start(0), partial),
	       "{\"type\":\"message_update\",\"message\":{\"role\":\"assistant\"},"
	       "\"assistantMessageEvent\":{\"type\":\"text_start\",\"contentIndex\":0,"
	       "\"partial\":{\"role\":\"assistant\"}}}");
	expect(event_message_update(event_text_delta(2, "a\"b", 3), NULL),
	       "{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"text_delta\","
	       "\"contentIndex\":2,\"delta\":\"a\\\"b\"}}");
	expect(event_message_update(event_text_end(1, json_string("all")), NULL),
	       "{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"text_end\","
	       "\"contentIndex\":1,\"content\":\"all\"}}");
	json_decref(partial);
}
END_TEST

START_TEST(test_delta_line_is_the_bytes_of_the_delta_update_event)
{
	const char *texts[] = { "plain", "tab\there \"q\" \\ \x01", "\xc3\xa9 \xf0\x9f\x99\x82", "" };
	struct jsontext_buf b = { 0 };

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		char *want = dump(event_message_update(event_text_delta(i, texts[i], strlen(texts[i])),
						       NULL));

		b.len = 0;
		ck_assert_int_eq(event_delta_line(&b, i, texts[i], strlen(texts[i])), 0);
		ck_assert_uint_eq(b.len, strlen(want) + 1);
		ck_assert_int_eq(memcmp(b.data, want, strlen(want)), 0);
		ck_assert_int_eq(b.data[b.len - 1], '\n');
		free(want);
	}
	/* Not UTF-8: refused, as jansson refuses it, and nothing written. */
	b.len = 0;
	ck_assert_int_eq(event_delta_line(&b, 0, "\xff", 1), -2);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_ptr_null(event_text_delta(0, "\xff", 1));
	free(b.data);
}
END_TEST

START_TEST(test_thinking_delta_line_is_the_bytes_of_its_delta_update_event)
{
	const char *texts[] = { "plain", "tab\there \"q\" \\ \x01", "\xc3\xa9 \xf0\x9f\x99\x82", "" };
	struct jsontext_buf b = { 0 };

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		char *want = dump(event_message_update(event_thinking_delta(i * 1000, texts[i],
									    strlen(texts[i])), NULL));

		b.len = 0;
		ck_assert_int_eq(event_thinking_delta_line(&b, i * 1000, texts[i], strlen(texts[i])), 0);
		ck_assert_uint_eq(b.len, strlen(want) + 1);
		ck_assert_int_eq(memcmp(b.data, want, strlen(want)), 0);
		free(want);
	}
	b.len = 0;
	ck_assert_int_eq(event_thinking_delta_line(&b, 0, "\xff", 1), -2);
	ck_assert_uint_eq(b.len, 0);
	free(b.data);
}
END_TEST

START_TEST(test_thinking_events_have_pi_shapes)
{
	char *s = dump(event_thinking_start(2));

	ck_assert_str_eq(s, "{\"type\":\"thinking_start\",\"contentIndex\":2}");
	free(s);
	s = dump(event_thinking_end(2, json_string("all")));
	ck_assert_str_eq(s, "{\"type\":\"thinking_end\",\"contentIndex\":2,\"content\":\"all\"}");
	free(s);
	s = dump(event_thinking_level_changed("high"));
	ck_assert_str_eq(s, "{\"type\":\"thinking_level_changed\",\"level\":\"high\"}");
	free(s);
}
END_TEST

START_TEST(test_retry_events_leave_out_absent_fields)
{
	expect(event_auto_retry_start(1, 3, 2000, "overloaded", "transient", -1, NULL),
	       "{\"type\":\"auto_retry_start\",\"attempt\":1,\"maxAttempts\":3,\"delayMs\":2000,"
	       "\"errorMessage\":\"overloaded\",\"reason\":\"transient\"}");
	expect(event_auto_retry_start(2, 3, 5000, "429", "server-hint", 5000, NULL),
	       "{\"type\":\"auto_retry_start\",\"attempt\":2,\"maxAttempts\":3,\"delayMs\":5000,"
	       "\"errorMessage\":\"429\",\"reason\":\"server-hint\",\"hintMs\":5000}");
	expect(event_auto_retry_end(true, 2, NULL, NULL),
	       "{\"type\":\"auto_retry_end\",\"success\":true,\"attempt\":2}");
	expect(event_auto_retry_end(false, 3, "503", NULL),
	       "{\"type\":\"auto_retry_end\",\"success\":false,\"attempt\":3,\"finalError\":\"503\"}");
}
END_TEST

START_TEST(test_retry_events_say_which_class_and_rule_decided)
{
	const struct event_why why = { "retryable", "http-status:429", false };
	const struct event_why over = { "retryable", "http-status:529", true };

	expect(event_auto_retry_start(1, 3, 2000, "429", "backoff", -1, &why),
	       "{\"type\":\"auto_retry_start\",\"attempt\":1,\"maxAttempts\":3,\"delayMs\":2000,"
	       "\"errorMessage\":\"429\",\"reason\":\"backoff\",\"errorClass\":\"retryable\","
	       "\"rule\":\"http-status:429\",\"overload\":false}");
	expect(event_auto_retry_start(1, 3, 2000, "529", "backoff", -1, &over),
	       "{\"type\":\"auto_retry_start\",\"attempt\":1,\"maxAttempts\":3,\"delayMs\":2000,"
	       "\"errorMessage\":\"529\",\"reason\":\"backoff\",\"errorClass\":\"retryable\","
	       "\"rule\":\"http-status:529\",\"overload\":true}");
	expect(event_auto_retry_end(false, 3, "429", &why),
	       "{\"type\":\"auto_retry_end\",\"success\":false,\"attempt\":3,\"finalError\":\"429\","
	       "\"errorClass\":\"retryable\",\"rule\":\"http-status:429\"}");
	/* A success closes the chain with no failure to explain. */
	expect(event_auto_retry_end(true, 2, NULL, &why),
	       "{\"type\":\"auto_retry_end\",\"success\":true,\"attempt\":2}");
}
END_TEST

START_TEST(test_fallback_and_notice_events)
{
	expect(event_fallback_applied("credential", "a", "b", NULL),
	       "{\"type\":\"retry_fallback_applied\",\"kind\":\"credential\",\"from\":\"a\",\"to\":\"b\"}");
	expect(event_fallback_applied("model", "m1", "m2", "overloaded"),
	       "{\"type\":\"retry_fallback_applied\",\"kind\":\"model\",\"from\":\"m1\",\"to\":\"m2\","
	       "\"reason\":\"overloaded\"}");
	expect(event_notice("error", "session", "cannot write"),
	       "{\"type\":\"notice\",\"level\":\"error\",\"source\":\"session\","
	       "\"message\":\"cannot write\"}");
}
END_TEST

Suite *event_suite(void)
{
	Suite *s = suite_create("event");
	TCase *tc = tcase_create("event");

	tcase_add_test(tc, test_run_and_turn_events_have_pi_shapes);
	tcase_add_test(tc, test_full_update_carries_the_partial_twice_and_delta_update_none);
	tcase_add_test(tc, test_delta_line_is_the_bytes_of_the_delta_update_event);
	tcase_add_test(tc, test_thinking_delta_line_is_the_bytes_of_its_delta_update_event);
	tcase_add_test(tc, test_thinking_events_have_pi_shapes);
	tcase_add_test(tc, test_retry_events_leave_out_absent_fields);
	tcase_add_test(tc, test_retry_events_say_which_class_and_rule_decided);
	tcase_add_test(tc, test_fallback_and_notice_events);
	suite_add_tcase(s, tc);
	return s;
}

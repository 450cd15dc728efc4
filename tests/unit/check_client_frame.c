/* What a line of the daemon is (src/client/frame.c), and message text
 * (src/shared/message.c). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "client/frame.h"
#include "retryd/client.h"

Suite *client_frame_suite(void);

static json_t *parse(const char *line, struct retryd_frame *f)
{
	char err[128];

	return retryd_frame_parse(line, strlen(line), f, err, sizeof(err));
}

START_TEST(test_ready_line_is_ready)
{
	struct retryd_frame f;
	json_t *o = parse("{\"type\":\"ready\"}", &f);

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(f.kind, RETRYD_FRAME_READY);
	json_decref(o);
}
END_TEST

START_TEST(test_response_carries_id_command_success_and_data)
{
	struct retryd_frame f;
	json_t *o = parse("{\"id\":\"req_7\",\"type\":\"response\",\"command\":\"get_state\","
			  "\"success\":true,\"data\":{\"isStreaming\":false}}", &f);

	ck_assert_int_eq(f.kind, RETRYD_FRAME_RESPONSE);
	ck_assert_str_eq(f.id, "req_7");
	ck_assert_str_eq(f.command, "get_state");
	ck_assert(f.success);
	ck_assert(json_is_false(json_object_get(f.data, "isStreaming")));
	ck_assert_ptr_null(f.error);
	json_decref(o);
}
END_TEST

START_TEST(test_failed_response_carries_error_and_no_data)
{
	struct retryd_frame f;
	json_t *o = parse("{\"id\":\"x\",\"type\":\"response\",\"command\":\"frob\","
			  "\"success\":false,\"error\":\"Unknown command: frob\"}", &f);

	ck_assert_int_eq(f.kind, RETRYD_FRAME_RESPONSE);
	ck_assert(!f.success);
	ck_assert_str_eq(f.error, "Unknown command: frob");
	ck_assert_ptr_null(f.data);
	json_decref(o);
}
END_TEST

START_TEST(test_response_without_id_has_null_id)
{
	struct retryd_frame f;
	json_t *o = parse("{\"type\":\"response\",\"command\":\"parse\",\"success\":false,"
			  "\"error\":\"Failed to parse command\"}", &f);

	ck_assert_int_eq(f.kind, RETRYD_FRAME_RESPONSE);
	ck_assert_ptr_null(f.id);
	json_decref(o);
}
END_TEST

START_TEST(test_events_are_events)
{
	static const char *lines[] = {
		"{\"type\":\"agent_start\"}",
		"{\"type\":\"auto_retry_start\",\"attempt\":1,\"maxAttempts\":3,\"delayMs\":2000,"
		"\"errorMessage\":\"503\"}",
		"{\"type\":\"some_future_event\",\"x\":[1,2]}",
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct retryd_frame f;
		json_t *o = parse(lines[i], &f);

		ck_assert_int_eq(f.kind, RETRYD_FRAME_EVENT);
		ck_assert_ptr_null(f.id);
		json_decref(o);
	}
}
END_TEST

START_TEST(test_bad_lines_are_invalid_with_a_reason)
{
	static const char *lines[] = { "not json", "[1,2]", "{\"type\":5}", "{\"x\":1}", "\"s\"" };

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct retryd_frame f;
		char err[128] = "";
		json_t *o = retryd_frame_parse(lines[i], strlen(lines[i]), &f, err, sizeof(err));

		ck_assert_ptr_null(o);
		ck_assert_int_eq(f.kind, RETRYD_FRAME_INVALID);
		ck_assert_msg(err[0] != '\0', "no reason for %s", lines[i]);
	}
}
END_TEST

START_TEST(test_message_text_joins_text_blocks_only)
{
	json_t *m = json_loads("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"one \"},"
			       "{\"type\":\"thinking\",\"thinking\":\"hm\"},"
			       "{\"type\":\"text\",\"text\":\"two\"}]}", 0, NULL);
	char *t = retryd_message_text(m);

	ck_assert_str_eq(t, "one two");
	free(t);
	json_decref(m);
}
END_TEST

START_TEST(test_message_text_of_failed_attempt_is_empty)
{
	json_t *m = json_loads("{\"role\":\"assistant\",\"content\":[],\"stopReason\":\"error\"}", 0, NULL);
	char *t = retryd_message_text(m);

	ck_assert_str_eq(t, "");
	free(t);
	ck_assert_ptr_null(retryd_message_text(json_array_get(NULL, 0)));
	json_decref(m);
}
END_TEST

Suite *client_frame_suite(void)
{
	Suite *s = suite_create("client_frame");
	TCase *tc = tcase_create("frame");

	tcase_add_test(tc, test_ready_line_is_ready);
	tcase_add_test(tc, test_response_carries_id_command_success_and_data);
	tcase_add_test(tc, test_failed_response_carries_error_and_no_data);
	tcase_add_test(tc, test_response_without_id_has_null_id);
	tcase_add_test(tc, test_events_are_events);
	tcase_add_test(tc, test_bad_lines_are_invalid_with_a_reason);
	tcase_add_test(tc, test_message_text_joins_text_blocks_only);
	tcase_add_test(tc, test_message_text_of_failed_attempt_is_empty);
	suite_add_tcase(s, tc);
	return s;
}

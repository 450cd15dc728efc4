/* session_events: messageId stamping and the event filter. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/session_events.h"

Suite *session_events_suite(void);

static json_t *seen;

static void record(void *ctx, json_t *event)
{
	(void)ctx;
	json_array_append_new(seen, event);
}

static struct jsontext_buf line;
static int lines_done;

static struct jsontext_buf *line_buf(void *ctx)
{
	(void)ctx;
	return &line;
}

static void line_done(void *ctx)
{
	(void)ctx;
	lines_done++;
}

static void setup(struct session_events *ev)
{
	struct assistant_output next = { .emit = record, .line_buf = line_buf,
					 .line_done = line_done };

	seen = json_array();
	memset(&line, 0, sizeof(line));
	lines_done = 0;
	session_events_init(ev, &next);
}

static void teardown(struct session_events *ev)
{
	session_events_release(ev);
	json_decref(seen);
	free(line.data);
}

static void send_type(struct session_events *ev, const char *type)
{
	session_events_emit(ev, json_pack("{s:s}", "type", type));
}

static const char *id_at(size_t i)
{
	return json_string_value(json_object_get(json_array_get(seen, i), "messageId"));
}

static int set_filter(struct session_events *ev, const char *events, char *err, size_t errlen)
{
	json_t *v = json_loads(events, JSON_DECODE_ANY, NULL), *active = NULL;
	int rc = session_events_set_filter(ev, v, &active, err, errlen);

	json_decref(v);
	json_decref(active);
	return rc;
}

START_TEST(test_one_message_keeps_its_id_across_updates_and_the_next_gets_a_new_one)
{
	struct session_events ev;

	setup(&ev);
	send_type(&ev, "message_start");
	send_type(&ev, "message_update");
	send_type(&ev, "message_end");
	send_type(&ev, "turn_end");
	send_type(&ev, "message_start");
	send_type(&ev, "message_end");
	ck_assert_str_eq(id_at(0), "msg-1");
	ck_assert_str_eq(id_at(1), "msg-1");
	ck_assert_str_eq(id_at(2), "msg-1");
	ck_assert_ptr_null(id_at(3));
	ck_assert_str_eq(id_at(4), "msg-2");
	ck_assert_str_eq(id_at(5), "msg-2");
	teardown(&ev);
}
END_TEST

START_TEST(test_a_filtered_out_message_still_uses_up_its_id)
{
	struct session_events ev;
	char err[512];

	setup(&ev);
	ck_assert_int_eq(set_filter(&ev, "[\"agent_start\",\"agent_end\"]", err, sizeof(err)), 0);
	send_type(&ev, "message_start");
	send_type(&ev, "message_end");
	send_type(&ev, "prompt_result");
	ck_assert_uint_eq(json_array_size(seen), 1);
	ck_assert_int_eq(set_filter(&ev, "null", err, sizeof(err)), 0);
	send_type(&ev, "message_start");
	ck_assert_str_eq(id_at(1), "msg-2");
	teardown(&ev);
}
END_TEST

START_TEST(test_the_fast_line_gets_the_id_before_its_closing_brace)
{
	struct session_events ev;
	struct assistant_output out;
	struct jsontext_buf *b;
	const char *text = "{\"type\":\"message_update\",\"assistantMessageEvent\":{\"x\":1}}\n";

	setup(&ev);
	out = session_events_output(&ev);
	out.emit(out.ctx, json_pack("{s:s}", "type", "message_start"));
	b = out.line_buf(out.ctx);
	ck_assert_ptr_eq(b, &line);
	ck_assert_int_eq(jsontext_reserve(b, strlen(text)), 0);
	memcpy(b->data, text, strlen(text));
	b->len = strlen(text);
	out.line_done(out.ctx);
	ck_assert_int_eq(lines_done, 1);
	ck_assert_int_eq((int)b->len, (int)strlen(text) + 20);
	ck_assert(memcmp(b->data + strlen(text) - 2, ",\"messageId\":\"msg-1\"}\n", 22) == 0);
	teardown(&ev);
}
END_TEST

START_TEST(test_a_filter_without_message_update_gets_no_line_buffer)
{
	struct session_events ev;
	struct assistant_output out;
	char err[512];

	setup(&ev);
	ck_assert_int_eq(set_filter(&ev, "[\"message_start\",\"message_end\"]", err, sizeof(err)), 0);
	out = session_events_output(&ev);
	ck_assert_ptr_null(out.line_buf(out.ctx));
	teardown(&ev);
}
END_TEST

START_TEST(test_past_the_open_limit_the_newest_message_still_pairs_its_start_and_end)
{
	struct session_events ev;
	int n = SESSION_EVENTS_OPEN_MAX + 2;

	setup(&ev);
	for (int i = 0; i < n; i++)
		send_type(&ev, "message_start");
	send_type(&ev, "message_update");
	send_type(&ev, "message_end");
	ck_assert_str_eq(id_at((size_t)n), id_at((size_t)n - 1));
	ck_assert_str_eq(id_at((size_t)n + 1), id_at((size_t)n - 1));
	send_type(&ev, "message_end");
	ck_assert_str_eq(id_at((size_t)n + 2), id_at((size_t)n - 2));
	teardown(&ev);
}
END_TEST

START_TEST(test_unknown_names_and_a_start_without_its_end_are_refused_and_the_filter_stays)
{
	struct session_events ev;
	char err[512];

	setup(&ev);
	ck_assert_int_eq(set_filter(&ev, "[\"notice\"]", err, sizeof(err)), 0);
	ck_assert_int_eq(set_filter(&ev, "[\"turn_strat\"]", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "set_event_filter: unknown event type \"turn_strat\" (did you mean "
			 "\"turn_start\"?)");
	ck_assert_int_eq(set_filter(&ev, "[\"auto_retry_start\"]", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "set_event_filter: \"auto_retry_start\" without \"auto_retry_end\" "
			 "would show a retry chain start but never its end; name both, or the end "
			 "alone");
	ck_assert_int_eq(set_filter(&ev, "{}", err, sizeof(err)), -1);
	ck_assert_int_eq(set_filter(&ev, "[1]", err, sizeof(err)), -1);
	send_type(&ev, "agent_start");
	send_type(&ev, "notice");
	ck_assert_uint_eq(json_array_size(seen), 1);
	teardown(&ev);
}
END_TEST

Suite *session_events_suite(void)
{
	Suite *s = suite_create("session_events");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_one_message_keeps_its_id_across_updates_and_the_next_gets_a_new_one);
	tcase_add_test(tc, test_a_filtered_out_message_still_uses_up_its_id);
	tcase_add_test(tc, test_the_fast_line_gets_the_id_before_its_closing_brace);
	tcase_add_test(tc, test_a_filter_without_message_update_gets_no_line_buffer);
	tcase_add_test(tc, test_unknown_names_and_a_start_without_its_end_are_refused_and_the_filter_stays);
	tcase_add_test(tc, test_past_the_open_limit_the_newest_message_still_pairs_its_start_and_end);
	suite_add_tcase(s, tc);
	return s;
}

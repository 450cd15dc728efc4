/* log's JSON lines: one object {"ts","level","msg"}, ts ISO-8601 UTC with
 * milliseconds, msg escaped so that any text (quotes, controls, bad UTF-8)
 * still makes one line of valid JSON. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/jsontext.h"
#include "base/log.h"

Suite *log_suite(void);

static json_t *parse_line(struct jsontext_buf *b)
{
	json_error_t e;
	json_t *v;

	ck_assert_uint_gt(b->len, 0);
	ck_assert_int_eq(b->data[b->len - 1], '\n');
	ck_assert_ptr_null(memchr(b->data, '\n', b->len - 1));
	v = json_loadb(b->data, b->len, 0, &e);
	ck_assert_msg(v != NULL, "not JSON: %.*s (%s)", (int)b->len, b->data, e.text);
	return v;
}

START_TEST(test_json_line_has_ts_level_msg_in_order)
{
	struct jsontext_buf b = { 0 };
	/* 2026-12-01T00:09:18.042Z */
	int64_t ms = INT64_C(1796083758042);
	const char *want = "{\"ts\":\"2026-12-01T00:09:18.042Z\",\"level\":\"debug\","
			   "\"msg\":\"decision: action=retry\"}\n";

	ck_assert_int_eq(log_json_line(&b, ms, "debug", "decision: action=retry", 22), 0);
	ck_assert_uint_eq(b.len, strlen(want));
	ck_assert_mem_eq(b.data, want, b.len);
	free(b.data);
}
END_TEST

START_TEST(test_json_line_escapes_quotes_controls_and_newlines)
{
	struct jsontext_buf b = { 0 };
	const char msg[] = "say \"hi\"\\ line\nbreak\ttab \x01 \xe2\x82\xac";
	json_t *v;

	ck_assert_int_eq(log_json_line(&b, 0, "warn", msg, sizeof(msg) - 1), 0);
	v = parse_line(&b);
	ck_assert_str_eq(json_string_value(json_object_get(v, "msg")), msg);
	ck_assert_str_eq(json_string_value(json_object_get(v, "ts")), "1970-01-01T00:00:00.000Z");
	json_decref(v);
	free(b.data);
}
END_TEST

START_TEST(test_json_line_repairs_bad_utf8_and_nul_bytes)
{
	struct jsontext_buf b = { 0 };
	const char msg[] = "bad \xff byte and a \0 nul";
	json_t *v;

	ck_assert_int_eq(log_json_line(&b, 1000, "error", msg, sizeof(msg) - 1), 0);
	v = parse_line(&b);
	ck_assert_str_eq(json_string_value(json_object_get(v, "msg")), "bad ? byte and a ? nul");
	json_decref(v);
	free(b.data);
}
END_TEST

START_TEST(test_json_line_appends_after_what_the_buffer_holds)
{
	struct jsontext_buf b = { 0 };
	size_t first;

	ck_assert_int_eq(log_json_line(&b, 0, "info", "one", 3), 0);
	first = b.len;
	ck_assert_int_eq(log_json_line(&b, 0, "info", "one", 3), 0);
	ck_assert_uint_eq(b.len, 2 * first);
	ck_assert_mem_eq(b.data, b.data + first, first);
	free(b.data);
}
END_TEST

Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("json");

	tcase_add_test(tc, test_json_line_has_ts_level_msg_in_order);
	tcase_add_test(tc, test_json_line_escapes_quotes_controls_and_newlines);
	tcase_add_test(tc, test_json_line_repairs_bad_utf8_and_nul_bytes);
	tcase_add_test(tc, test_json_line_appends_after_what_the_buffer_holds);
	suite_add_tcase(s, tc);
	return s;
}

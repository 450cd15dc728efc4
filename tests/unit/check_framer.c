#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framer.h"

Suite *framer_suite(void);

struct seen {
	char lines[16][256];
	int count;
	int oversize;
};

static void collect(void *ctx, enum framer_kind kind, const char *line, size_t len)
{
	struct seen *s = ctx;

	if (kind == FRAMER_OVERSIZE) {
		snprintf(s->lines[s->count++], 256, "<oversize>");
		s->oversize++;
		return;
	}
	if (len >= 256) {
		snprintf(s->lines[s->count++], 256, "<%zu bytes>", len);
		return;
	}
	memcpy(s->lines[s->count], line, len);
	s->lines[s->count][len] = '\0';
	s->count++;
}

START_TEST(test_line_split_across_reads_is_joined)
{
	struct framer f;
	struct seen s = { 0 };

	framer_init(&f, 1024);
	framer_feed(&f, "{\"type\":", 8, collect, &s);
	ck_assert_int_eq(s.count, 0);
	framer_feed(&f, "\"get_state\"}\n{\"a\"", 17, collect, &s);
	ck_assert_int_eq(s.count, 1);
	ck_assert_str_eq(s.lines[0], "{\"type\":\"get_state\"}");
	framer_feed(&f, ":1}\n", 4, collect, &s);
	ck_assert_int_eq(s.count, 2);
	ck_assert_str_eq(s.lines[1], "{\"a\":1}");
	framer_release(&f);
}
END_TEST

START_TEST(test_byte_at_a_time_feed_yields_same_lines)
{
	const char *in = "ab\r\n\ncd\n";
	struct framer f;
	struct seen s = { 0 };

	framer_init(&f, 1024);
	for (size_t i = 0; i < strlen(in); i++)
		framer_feed(&f, in + i, 1, collect, &s);
	ck_assert_int_eq(s.count, 2);
	ck_assert_str_eq(s.lines[0], "ab");
	ck_assert_str_eq(s.lines[1], "cd");
	framer_release(&f);
}

END_TEST

START_TEST(test_trailing_cr_is_stripped_once)
{
	struct framer f;
	struct seen s = { 0 };

	framer_init(&f, 1024);
	framer_feed(&f, "x\r\r\n", 4, collect, &s);
	ck_assert_int_eq(s.count, 1);
	ck_assert_str_eq(s.lines[0], "x\r");
	framer_release(&f);
}
END_TEST

START_TEST(test_blank_and_whitespace_lines_are_skipped)
{
	struct framer f;
	struct seen s = { 0 };

	framer_init(&f, 1024);
	framer_feed(&f, "\n\r\n  \t \n{}\n", 11, collect, &s);
	ck_assert_int_eq(s.count, 1);
	ck_assert_str_eq(s.lines[0], "{}");
	framer_release(&f);
}
END_TEST

START_TEST(test_u2028_inside_a_string_does_not_split)
{
	/* U+2028 and U+2029 are E2 80 A8 / E2 80 A9: ordinary bytes here. */
	const char in[] = "{\"m\":\"a\xe2\x80\xa8" "b\xe2\x80\xa9" "c\"}\n";
	struct framer f;
	struct seen s = { 0 };

	framer_init(&f, 1024);
	framer_feed(&f, in, sizeof(in) - 1, collect, &s);
	ck_assert_int_eq(s.count, 1);
	ck_assert_uint_eq(strlen(s.lines[0]), sizeof(in) - 2);
	framer_release(&f);
}
END_TEST

START_TEST(test_oversize_line_reported_once_and_rest_discarded)
{
	struct framer f;
	struct seen s = { 0 };
	char big[100];

	memset(big, 'x', sizeof(big));
	framer_init(&f, 16);
	framer_feed(&f, "{\"a\":", 5, collect, &s);
	framer_feed(&f, big, sizeof(big), collect, &s);
	framer_feed(&f, big, sizeof(big), collect, &s);
	framer_feed(&f, "tail\nok\n", 8, collect, &s);
	ck_assert_int_eq(s.oversize, 1);
	ck_assert_int_eq(s.count, 2);
	ck_assert_str_eq(s.lines[0], "<oversize>");
	ck_assert_str_eq(s.lines[1], "ok");
	/* The discarded line's bytes are not kept. */
	ck_assert_uint_le(f.cap, 64 * 1024);
	ck_assert_uint_eq(f.len, 0);
	framer_release(&f);
}
END_TEST

START_TEST(test_line_of_exactly_the_limit_is_accepted)
{
	struct framer f;
	struct seen s = { 0 };

	framer_init(&f, 4);
	framer_feed(&f, "abcd\nabcde\nxy\n", 14, collect, &s);
	ck_assert_int_eq(s.count, 3);
	ck_assert_str_eq(s.lines[0], "abcd");
	ck_assert_str_eq(s.lines[1], "<oversize>");
	ck_assert_str_eq(s.lines[2], "xy");
	framer_release(&f);
}
END_TEST

START_TEST(test_large_line_memory_is_given_back)
{
	struct framer f;
	struct seen s = { 0 };
	size_t n = 1 << 20;
	char *big = malloc(n);

	memset(big, ' ', n);
	big[0] = 'a';
	framer_init(&f, 2 << 20);
	framer_feed(&f, big, n, collect, &s);
	ck_assert_uint_ge(f.cap, n);
	framer_feed(&f, "\n", 1, collect, &s);
	ck_assert_int_eq(s.count, 1);
	ck_assert_str_eq(s.lines[0], "<1048576 bytes>");
	ck_assert_uint_eq(f.cap, 0);
	free(big);
	framer_release(&f);
}
END_TEST

START_TEST(test_last_line_without_lf_is_delivered_at_eof)
{
	struct framer f;
	struct seen s = { 0 };

	framer_init(&f, 1024);
	framer_feed(&f, "a\nlast", 6, collect, &s);
	ck_assert_int_eq(s.count, 1);
	framer_finish(&f, collect, &s);
	ck_assert_int_eq(s.count, 2);
	ck_assert_str_eq(s.lines[1], "last");
	framer_release(&f);
}
END_TEST

Suite *framer_suite(void)
{
	Suite *s = suite_create("framer");
	TCase *tc = tcase_create("framing");

	tcase_add_test(tc, test_line_split_across_reads_is_joined);
	tcase_add_test(tc, test_byte_at_a_time_feed_yields_same_lines);
	tcase_add_test(tc, test_trailing_cr_is_stripped_once);
	tcase_add_test(tc, test_blank_and_whitespace_lines_are_skipped);
	tcase_add_test(tc, test_u2028_inside_a_string_does_not_split);
	tcase_add_test(tc, test_oversize_line_reported_once_and_rest_discarded);
	tcase_add_test(tc, test_line_of_exactly_the_limit_is_accepted);
	tcase_add_test(tc, test_large_line_memory_is_given_back);
	tcase_add_test(tc, test_last_line_without_lf_is_delivered_at_eof);
	suite_add_tcase(s, tc);
	return s;
}

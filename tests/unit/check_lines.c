/* The client's framing of the daemon's stdout (src/shared/lines.c), used by the daemon for stdin and agent-CLI output too. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/lines.h"

Suite *lines_suite(void);

struct seen {
	char lines[16][256];
	int count;
	int oversize;
	int stop_after;  /* 0: never stop */
};

static bool collect(void *ctx, enum retryd_lines_kind kind, const char *line, size_t len)
{
	struct seen *s = ctx;

	if (kind == RETRYD_LINES_OVERSIZE) {
		snprintf(s->lines[s->count++], 256, "<oversize>");
		s->oversize++;
	} else if (len >= 256) {
		snprintf(s->lines[s->count++], 256, "<%zu bytes>", len);
	} else {
		memcpy(s->lines[s->count], line, len);
		s->lines[s->count][len] = '\0';
		s->count++;
	}
	return s->stop_after == 0 || s->count < s->stop_after;
}

START_TEST(test_line_split_across_reads_is_joined)
{
	struct retryd_lines l;
	struct seen s = { 0 };

	retryd_lines_init(&l, 1024);
	retryd_lines_feed(&l, "{\"type\":", 8, collect, &s);
	ck_assert_int_eq(s.count, 0);
	retryd_lines_feed(&l, "\"ready\"}\n{\"a\"", 13, collect, &s);
	ck_assert_int_eq(s.count, 1);
	ck_assert_str_eq(s.lines[0], "{\"type\":\"ready\"}");
	retryd_lines_feed(&l, ":1}\n", 4, collect, &s);
	ck_assert_int_eq(s.count, 2);
	ck_assert_str_eq(s.lines[1], "{\"a\":1}");
	retryd_lines_release(&l);
}
END_TEST

START_TEST(test_byte_at_a_time_gives_the_same_lines)
{
	const char *in = "ab\r\n\n  \ncd\n";
	struct retryd_lines l;
	struct seen s = { 0 };

	retryd_lines_init(&l, 1024);
	for (size_t i = 0; i < strlen(in); i++)
		retryd_lines_feed(&l, in + i, 1, collect, &s);
	ck_assert_int_eq(s.count, 2);
	ck_assert_str_eq(s.lines[0], "ab");
	ck_assert_str_eq(s.lines[1], "cd");
	retryd_lines_release(&l);
}
END_TEST

START_TEST(test_unicode_line_separators_do_not_split)
{
	/* U+2028 and U+2029 in UTF-8 inside a JSON string are not line ends. */
	const char *in = "{\"t\":\"a\xe2\x80\xa8" "b\xe2\x80\xa9" "c\"}\n";
	struct retryd_lines l;
	struct seen s = { 0 };

	retryd_lines_init(&l, 1024);
	retryd_lines_feed(&l, in, strlen(in), collect, &s);
	ck_assert_int_eq(s.count, 1);
	ck_assert_uint_eq(strlen(s.lines[0]), strlen(in) - 1);
	retryd_lines_release(&l);
}
END_TEST

START_TEST(test_oversize_line_is_reported_once_and_skipped)
{
	struct retryd_lines l;
	struct seen s = { 0 };
	char big[100];

	memset(big, 'x', sizeof(big));
	retryd_lines_init(&l, 16);
	retryd_lines_feed(&l, "ok\n", 3, collect, &s);
	retryd_lines_feed(&l, big, sizeof(big), collect, &s);
	retryd_lines_feed(&l, big, sizeof(big), collect, &s);
	retryd_lines_feed(&l, "tail\nnext\n", 10, collect, &s);
	ck_assert_int_eq(s.count, 3);
	ck_assert_str_eq(s.lines[0], "ok");
	ck_assert_str_eq(s.lines[1], "<oversize>");
	ck_assert_str_eq(s.lines[2], "next");
	ck_assert_int_eq(s.oversize, 1);
	retryd_lines_release(&l);
}
END_TEST

START_TEST(test_line_of_exactly_the_limit_is_kept)
{
	struct retryd_lines l;
	struct seen s = { 0 };

	retryd_lines_init(&l, 4);
	retryd_lines_feed(&l, "ab", 2, collect, &s);
	retryd_lines_feed(&l, "cd\nabcde\n", 9, collect, &s);
	ck_assert_int_eq(s.count, 2);
	ck_assert_str_eq(s.lines[0], "abcd");
	ck_assert_str_eq(s.lines[1], "<oversize>");
	retryd_lines_release(&l);
}
END_TEST

START_TEST(test_multi_megabyte_line_arrives_whole)
{
	size_t n = 3u * 1024u * 1024u;
	char *big = malloc(n + 1);
	struct retryd_lines l;
	struct seen s = { 0 };

	memset(big, 'y', n);
	big[n] = '\n';
	retryd_lines_init(&l, 64u * 1024u * 1024u);
	for (size_t off = 0; off <= n; off += 65536)
		retryd_lines_feed(&l, big + off, off + 65536 > n + 1 ? n + 1 - off : 65536, collect, &s);
	ck_assert_int_eq(s.count, 1);
	ck_assert_str_eq(s.lines[0], "<3145728 bytes>");
	retryd_lines_release(&l);
	free(big);
}
END_TEST

START_TEST(test_finish_delivers_last_line_without_lf)
{
	struct retryd_lines l;
	struct seen s = { 0 };

	retryd_lines_init(&l, 64);
	retryd_lines_feed(&l, "a\nlast", 6, collect, &s);
	ck_assert_int_eq(s.count, 1);
	retryd_lines_finish(&l, collect, &s);
	ck_assert_int_eq(s.count, 2);
	ck_assert_str_eq(s.lines[1], "last");
	retryd_lines_release(&l);
}
END_TEST

START_TEST(test_callback_returning_false_stops_delivery)
{
	struct retryd_lines l;
	struct seen s = { .stop_after = 1 };

	retryd_lines_init(&l, 64);
	retryd_lines_feed(&l, "a\nb\nc\n", 6, collect, &s);
	ck_assert_int_eq(s.count, 1);
	retryd_lines_release(&l);
}
END_TEST

START_TEST(test_trailing_cr_is_stripped_once)
{
	struct retryd_lines f;
	struct seen s = { 0 };

	retryd_lines_init(&f, 1024);
	retryd_lines_feed(&f, "x\r\r\n", 4, collect, &s);
	ck_assert_int_eq(s.count, 1);
	ck_assert_str_eq(s.lines[0], "x\r");
	retryd_lines_release(&f);
}
END_TEST

START_TEST(test_blank_and_whitespace_lines_are_skipped)
{
	struct retryd_lines f;
	struct seen s = { 0 };

	retryd_lines_init(&f, 1024);
	retryd_lines_feed(&f, "\n\r\n  \t \n{}\n", 11, collect, &s);
	ck_assert_int_eq(s.count, 1);
	ck_assert_str_eq(s.lines[0], "{}");
	retryd_lines_release(&f);
}
END_TEST

START_TEST(test_large_line_memory_is_given_back)
{
	struct retryd_lines f;
	struct seen s = { 0 };
	size_t n = 1 << 20;
	char *big = malloc(n);

	memset(big, ' ', n);
	big[0] = 'a';
	retryd_lines_init(&f, 2 << 20);
	retryd_lines_feed(&f, big, n, collect, &s);
	ck_assert_uint_ge(f.cap, n);
	retryd_lines_feed(&f, "\n", 1, collect, &s);
	ck_assert_int_eq(s.count, 1);
	ck_assert_str_eq(s.lines[0], "<1048576 bytes>");
	ck_assert_uint_eq(f.cap, 0);
	free(big);
	retryd_lines_release(&f);
}
END_TEST

Suite *lines_suite(void)
{
	Suite *s = suite_create("lines");
	TCase *tc = tcase_create("lines");

	tcase_add_test(tc, test_line_split_across_reads_is_joined);
	tcase_add_test(tc, test_byte_at_a_time_gives_the_same_lines);
	tcase_add_test(tc, test_unicode_line_separators_do_not_split);
	tcase_add_test(tc, test_oversize_line_is_reported_once_and_skipped);
	tcase_add_test(tc, test_line_of_exactly_the_limit_is_kept);
	tcase_add_test(tc, test_multi_megabyte_line_arrives_whole);
	tcase_add_test(tc, test_finish_delivers_last_line_without_lf);
	tcase_add_test(tc, test_callback_returning_false_stops_delivery);
	tcase_add_test(tc, test_trailing_cr_is_stripped_once);
	tcase_add_test(tc, test_blank_and_whitespace_lines_are_skipped);
	tcase_add_test(tc, test_large_line_memory_is_given_back);
	suite_add_tcase(s, tc);
	return s;
}

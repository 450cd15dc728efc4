/* retryctl's progress text and mode (src/retryctl/progress.c). */
#include <check.h>
#include <string.h>

#include "retryctl/progress.h"

Suite *progress_suite(void);

#define DASH "\xe2\x80\x94"
#define DOTS "\xe2\x80\xa6"

START_TEST(test_mode_is_live_only_on_a_tty_that_asked_for_nothing_plainer)
{
	ck_assert_int_eq(progress_mode_pick(NULL, "xterm-256color", true), PROGRESS_LIVE);
	ck_assert_int_eq(progress_mode_pick(NULL, "xterm-256color", false), PROGRESS_PLAIN);
	ck_assert_int_eq(progress_mode_pick(NULL, "dumb", true), PROGRESS_PLAIN);
	ck_assert_int_eq(progress_mode_pick(NULL, NULL, true), PROGRESS_PLAIN);
	ck_assert_int_eq(progress_mode_pick(NULL, "", true), PROGRESS_PLAIN);
}
END_TEST

START_TEST(test_no_color_with_any_value_means_plain_and_empty_means_unset)
{
	ck_assert_int_eq(progress_mode_pick("1", "xterm", true), PROGRESS_PLAIN);
	ck_assert_int_eq(progress_mode_pick("0", "xterm", true), PROGRESS_PLAIN);
	ck_assert_int_eq(progress_mode_pick("false", "xterm", true), PROGRESS_PLAIN);
	/* no-color.org: present and not empty. */
	ck_assert_int_eq(progress_mode_pick("", "xterm", true), PROGRESS_LIVE);
}
END_TEST

START_TEST(test_width_from_the_tty_then_columns_then_80)
{
	ck_assert_int_eq(progress_width(132, "40"), 132);
	ck_assert_int_eq(progress_width(0, "40"), 40);
	ck_assert_int_eq(progress_width(0, NULL), 80);
	ck_assert_int_eq(progress_width(0, ""), 80);
	ck_assert_int_eq(progress_width(0, "wide"), 80);
	ck_assert_int_eq(progress_width(0, "-3"), 80);
	ck_assert_int_eq(progress_width(0, "40x"), 80);
}
END_TEST

START_TEST(test_delay_in_tenths_rounded_up_under_a_minute)
{
	char buf[32];

	progress_delay_text(buf, sizeof(buf), 1600);
	ck_assert_str_eq(buf, "1.6s");
	progress_delay_text(buf, sizeof(buf), 1501);
	ck_assert_str_eq(buf, "1.6s");
	progress_delay_text(buf, sizeof(buf), 1);
	ck_assert_str_eq(buf, "0.1s");
	progress_delay_text(buf, sizeof(buf), 100);
	ck_assert_str_eq(buf, "0.1s");
	progress_delay_text(buf, sizeof(buf), 0);
	ck_assert_str_eq(buf, "0.0s");
	progress_delay_text(buf, sizeof(buf), 2000);
	ck_assert_str_eq(buf, "2.0s");
	progress_delay_text(buf, sizeof(buf), 59900);
	ck_assert_str_eq(buf, "59.9s");
}
END_TEST

START_TEST(test_delay_of_a_minute_or_more_in_minutes_and_seconds)
{
	char buf[32];

	progress_delay_text(buf, sizeof(buf), 59901);
	ck_assert_str_eq(buf, "1m00s");
	progress_delay_text(buf, sizeof(buf), 65000);
	ck_assert_str_eq(buf, "1m05s");
	progress_delay_text(buf, sizeof(buf), 64001);
	ck_assert_str_eq(buf, "1m05s");
	progress_delay_text(buf, sizeof(buf), 3599000);
	ck_assert_str_eq(buf, "59m59s");
	progress_delay_text(buf, sizeof(buf), 1800000);
	ck_assert_str_eq(buf, "30m00s");
	progress_delay_text(buf, sizeof(buf), 3600000);
	ck_assert_str_eq(buf, "1h00m");
	progress_delay_text(buf, sizeof(buf), 3900000);
	ck_assert_str_eq(buf, "1h05m");
}
END_TEST

START_TEST(test_cut_counts_code_points_and_never_splits_one)
{
	char s[64];

	strcpy(s, "caf\xc3\xa9 \xe2\x80\x94 ok");
	ck_assert_uint_eq(progress_columns(s), 9);
	ck_assert(progress_cut(s, 4));
	ck_assert_str_eq(s, "caf\xc3\xa9");
	strcpy(s, "\xe2\x80\x94\xe2\x80\x94");
	ck_assert(progress_cut(s, 1));
	ck_assert_str_eq(s, "\xe2\x80\x94");
	strcpy(s, "short");
	ck_assert(!progress_cut(s, 5));
	ck_assert_str_eq(s, "short");
	ck_assert(progress_cut(s, 0));
	ck_assert_str_eq(s, "");
}
END_TEST

START_TEST(test_clean_blanks_what_a_terminal_would_act_on)
{
	char s[64];

	strcpy(s, "a\x1b[31mb\r\nc\x7f" "d\xc2\x9b" "e\xc3\xa9");
	progress_clean(s);
	ck_assert_str_eq(s, "a [31mb  c d e\xc3\xa9");
}
END_TEST

START_TEST(test_retry_line_names_the_error_and_its_class)
{
	struct progress_retry r = { 1, 3, "529 overloaded", "retryable" };
	char buf[256];

	progress_retry_line(buf, sizeof(buf), &r, 1600, 80);
	ck_assert_str_eq(buf, "Retrying (1/3) in 1.6s " DASH " 529 overloaded (retryable)");
	progress_retry_line(buf, sizeof(buf), &r, 1600, 0);
	ck_assert_str_eq(buf, "Retrying (1/3) in 1.6s " DASH " 529 overloaded (retryable)");
	r.error_class = NULL;
	progress_retry_line(buf, sizeof(buf), &r, 300, 0);
	ck_assert_str_eq(buf, "Retrying (1/3) in 0.3s " DASH " 529 overloaded");
	r.error = "";
	r.error_class = "usage_limit";
	progress_retry_line(buf, sizeof(buf), &r, 65000, 0);
	ck_assert_str_eq(buf, "Retrying (1/3) in 1m05s (usage_limit)");
}
END_TEST

START_TEST(test_hold_line_names_its_cause_cuts_it_to_the_width_and_blanks_escapes)
{
	char buf[256];

	progress_hold_line(buf, sizeof(buf), "another retryd of yours got 429 retry-after 8s",
			   7700, 80);
	ck_assert_str_eq(buf, "held 7.7s " DASH " another retryd of yours got 429 retry-after 8s");
	progress_hold_line(buf, sizeof(buf), "another retryd of yours got 429 retry-after 8s",
			   7700, 30);
	ck_assert_str_eq(buf, "held 7.7s " DASH " another retryd o\xe2\x80\xa6");
	ck_assert_uint_eq(progress_columns(buf), 29);
	progress_hold_line(buf, sizeof(buf), NULL, 400, 80);
	ck_assert_str_eq(buf, "held 0.4s");
	progress_hold_line(buf, sizeof(buf), "bad\x1b[31m", 400, 0);
	ck_assert_str_eq(buf, "held 0.4s " DASH " bad [31m");
}
END_TEST

START_TEST(test_retry_line_cuts_the_error_to_the_width_and_keeps_the_class)
{
	struct progress_retry r = { 2, 3, "503 Service Unavailable \xe2\x80\x94 caf\xc3\xa9 ferm\xc3\xa9",
				    "retryable" };
	char buf[256];

	/* "Retrying (2/3) in 0.5s — " is 25 columns, " (retryable)" 12: at
	 * width 50 the error gets 49 - 37 = 12 columns, the last one "…". */
	progress_retry_line(buf, sizeof(buf), &r, 500, 50);
	ck_assert_str_eq(buf, "Retrying (2/3) in 0.5s " DASH " 503 Service" DOTS " (retryable)");
	ck_assert_uint_eq(progress_columns(buf), 49);
	/* The cut lands inside the multi-byte part: on a boundary. */
	progress_retry_line(buf, sizeof(buf), &r, 500, 69);
	ck_assert_str_eq(buf, "Retrying (2/3) in 0.5s " DASH " 503 Service Unavailable " DASH " caf\xc3\xa9" DOTS
			      " (retryable)");
	ck_assert_uint_eq(progress_columns(buf), 68);
	/* Exactly fitting: no cut. */
	progress_retry_line(buf, sizeof(buf), &r, 500, 74);
	ck_assert_uint_eq(progress_columns(buf), 73);
	ck_assert_ptr_null(strstr(buf, DOTS));
}
END_TEST

START_TEST(test_retry_line_on_a_very_narrow_terminal_drops_the_error_then_cuts)
{
	struct progress_retry r = { 1, 3, "503", "retryable" };
	char buf[256];

	progress_retry_line(buf, sizeof(buf), &r, 1000, 38);
	ck_assert_str_eq(buf, "Retrying (1/3) in 1.0s (retryable)");
	progress_retry_line(buf, sizeof(buf), &r, 1000, 11);
	ck_assert_str_eq(buf, "Retrying (");
}
END_TEST

START_TEST(test_retry_line_cleans_escape_codes_from_the_error)
{
	struct progress_retry r = { 1, 3, "bad\x1b[2J\nnews", "retryable" };
	char buf[256];

	progress_retry_line(buf, sizeof(buf), &r, 1000, 0);
	ck_assert_str_eq(buf, "Retrying (1/3) in 1.0s " DASH " bad [2J news (retryable)");
}
END_TEST

START_TEST(test_retry_line_in_a_small_buffer_ends_on_a_code_point)
{
	struct progress_retry r = { 1, 3, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", NULL };
	char buf[26];

	/* "Retrying (1/3) in 1.0s " is 23 bytes, "—" 3 more: 25 bytes fit, two
	 * of the dash's three. */
	progress_retry_line(buf, sizeof(buf), &r, 1000, 0);
	ck_assert_str_eq(buf, "Retrying (1/3) in 1.0s ");
}
END_TEST

START_TEST(test_spinner_frames_go_round)
{
	char a[64], b[64];

	progress_spinner_line(a, sizeof(a), 0);
	ck_assert_str_eq(a, "\xe2\xa0\x8b Waiting for the model" DOTS);
	progress_spinner_line(b, sizeof(b), 1);
	ck_assert_str_ne(a, b);
	progress_spinner_line(b, sizeof(b), 10);
	ck_assert_str_eq(a, b);
}
END_TEST

START_TEST(test_failed_line_wording)
{
	char buf[128];

	progress_failed_line(buf, sizeof(buf), 3, "503");
	ck_assert_str_eq(buf, "Retry failed after 3 attempts: 503");
	progress_failed_line(buf, sizeof(buf), 1, NULL);
	ck_assert_str_eq(buf, "Retry failed after 1 attempt: Unknown error");
	progress_failed_line(buf, sizeof(buf), 2, "x\x1b[0m");
	ck_assert_str_eq(buf, "Retry failed after 2 attempts: x [0m");
}
END_TEST

START_TEST(test_a_park_reads_in_hours_and_minutes_with_the_local_reset_time)
{
	char buf[128];

	progress_park_line(buf, sizeof(buf), 4 * 3600000 + 12 * 60000, "23:00 AKST", 0);
	ck_assert_str_eq(buf, "Usage limit: waiting 4h12m for the reset at 23:00 AKST");
	progress_park_line(buf, sizeof(buf), 90000, "Wed 03 Dec 05:00 UTC", 0);
	ck_assert_str_eq(buf, "Usage limit: waiting 1m30s for the reset at Wed 03 Dec 05:00 UTC");
	progress_park_line(buf, sizeof(buf), 2500, NULL, 0);
	ck_assert_str_eq(buf, "Usage limit: waiting 2.5s for the reset");
	progress_park_line(buf, sizeof(buf), 4 * 3600000, "23:00 AKST", 21);
	ck_assert_str_eq(buf, "Usage limit: waiting");
}
END_TEST

Suite *progress_suite(void)
{
	Suite *s = suite_create("progress");
	TCase *tc = tcase_create("progress");

	tcase_add_test(tc, test_mode_is_live_only_on_a_tty_that_asked_for_nothing_plainer);
	tcase_add_test(tc, test_no_color_with_any_value_means_plain_and_empty_means_unset);
	tcase_add_test(tc, test_width_from_the_tty_then_columns_then_80);
	tcase_add_test(tc, test_delay_in_tenths_rounded_up_under_a_minute);
	tcase_add_test(tc, test_delay_of_a_minute_or_more_in_minutes_and_seconds);
	tcase_add_test(tc, test_cut_counts_code_points_and_never_splits_one);
	tcase_add_test(tc, test_clean_blanks_what_a_terminal_would_act_on);
	tcase_add_test(tc, test_retry_line_names_the_error_and_its_class);
	tcase_add_test(tc, test_retry_line_cuts_the_error_to_the_width_and_keeps_the_class);
	tcase_add_test(tc, test_retry_line_on_a_very_narrow_terminal_drops_the_error_then_cuts);
	tcase_add_test(tc, test_retry_line_cleans_escape_codes_from_the_error);
	tcase_add_test(tc, test_retry_line_in_a_small_buffer_ends_on_a_code_point);
	tcase_add_test(tc, test_spinner_frames_go_round);
	tcase_add_test(tc, test_failed_line_wording);
	tcase_add_test(tc, test_hold_line_names_its_cause_cuts_it_to_the_width_and_blanks_escapes);
	tcase_add_test(tc, test_a_park_reads_in_hours_and_minutes_with_the_local_reset_time);
	suite_add_tcase(s, tc);
	return s;
}

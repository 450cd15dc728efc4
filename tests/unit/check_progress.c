/* retryctl's progress wording (src/retryctl/progress.c). */
#include <check.h>

#include "retryctl/progress.h"

Suite *progress_suite(void);

START_TEST(test_seconds_round_up)
{
	ck_assert_int_eq(progress_seconds(0), 0);
	ck_assert_int_eq(progress_seconds(1), 1);
	ck_assert_int_eq(progress_seconds(1000), 1);
	ck_assert_int_eq(progress_seconds(1001), 2);
	ck_assert_int_eq(progress_seconds(2000), 2);
}
END_TEST

START_TEST(test_live_line_wording)
{
	char buf[128];

	progress_live_line(buf, sizeof(buf), 1, 3, 2000);
	ck_assert_str_eq(buf, "Retrying (1/3) in 2s\xe2\x80\xa6 (Ctrl-C to cancel)");
	progress_live_line(buf, sizeof(buf), 2, 3, 1500);
	ck_assert_str_eq(buf, "Retrying (2/3) in 2s\xe2\x80\xa6 (Ctrl-C to cancel)");
}
END_TEST

START_TEST(test_plain_line_names_the_error)
{
	char buf[128];

	progress_plain_line(buf, sizeof(buf), 1, 3, 4000, "503 Service Unavailable");
	ck_assert_str_eq(buf, "Retrying (1/3) in 4s\xe2\x80\xa6 (503 Service Unavailable)");
	progress_plain_line(buf, sizeof(buf), 3, 3, 0, NULL);
	ck_assert_str_eq(buf, "Retrying (3/3) in 0s\xe2\x80\xa6");
}
END_TEST

START_TEST(test_failed_line_wording)
{
	char buf[128];

	progress_failed_line(buf, sizeof(buf), 3, "503");
	ck_assert_str_eq(buf, "Retry failed after 3 attempts: 503");
	progress_failed_line(buf, sizeof(buf), 1, NULL);
	ck_assert_str_eq(buf, "Retry failed after 1 attempt: Unknown error");
}
END_TEST

Suite *progress_suite(void)
{
	Suite *s = suite_create("progress");
	TCase *tc = tcase_create("progress");

	tcase_add_test(tc, test_seconds_round_up);
	tcase_add_test(tc, test_live_line_wording);
	tcase_add_test(tc, test_plain_line_names_the_error);
	tcase_add_test(tc, test_failed_line_wording);
	suite_add_tcase(s, tc);
	return s;
}

/* base/fsutil: where the settings file and the session files live. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"

Suite *fsutil_suite(void);

/* Under CK_FORK=no (valgrind) the tests share one environment: HOME is put
 * back after each. */
static char *saved_home;

static void save_home(void)
{
	const char *h = getenv("HOME");

	saved_home = h ? strdup(h) : NULL;
}

static void restore_home(void)
{
	if (saved_home != NULL)
		setenv("HOME", saved_home, 1);
	else
		unsetenv("HOME");
	free(saved_home);
	saved_home = NULL;
	unsetenv("RETRYD_TEST_XDG");
}

START_TEST(test_an_absolute_xdg_variable_wins_over_home)
{
	char *p;

	setenv("RETRYD_TEST_XDG", "/x/state", 1);
	setenv("HOME", "/home/u", 1);
	p = fsutil_xdg_path("RETRYD_TEST_XDG", ".local/state", "/retryd/sessions");
	ck_assert_str_eq(p, "/x/state/retryd/sessions");
	free(p);
	unsetenv("RETRYD_TEST_XDG");
}
END_TEST

START_TEST(test_a_relative_xdg_variable_is_ignored_as_the_spec_says)
{
	char *p;

	setenv("RETRYD_TEST_XDG", "relative/dir", 1);
	setenv("HOME", "/home/u", 1);
	p = fsutil_xdg_path("RETRYD_TEST_XDG", ".config", "/retryd/settings.json");
	ck_assert_str_eq(p, "/home/u/.config/retryd/settings.json");
	free(p);
	unsetenv("RETRYD_TEST_XDG");
}
END_TEST

START_TEST(test_no_xdg_and_no_home_gives_null)
{
	unsetenv("RETRYD_TEST_XDG");
	setenv("HOME", "", 1);
	ck_assert_ptr_null(fsutil_xdg_path("RETRYD_TEST_XDG", ".config", "/x"));
}
END_TEST

START_TEST(test_read_full_gathers_short_reads_and_stops_at_the_end)
{
	char buf[16] = "";
	int fds[2];

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(write(fds[1], "abc", 3), 3);
	ck_assert_int_eq(write(fds[1], "de", 2), 2);
	close(fds[1]);
	ck_assert_uint_eq(fsutil_read_full(fds[0], buf, sizeof(buf)), 5);
	ck_assert_str_eq(buf, "abcde");
	ck_assert_uint_eq(fsutil_read_full(fds[0], buf, sizeof(buf)), 0);
	close(fds[0]);
	ck_assert_uint_eq(fsutil_read_full(-1, buf, sizeof(buf)), 0);  /* an error: none */
}
END_TEST

Suite *fsutil_suite(void)
{
	Suite *s = suite_create("fsutil");
	TCase *tc = tcase_create("xdg");

	tcase_add_checked_fixture(tc, save_home, restore_home);

	tcase_add_test(tc, test_an_absolute_xdg_variable_wins_over_home);
	tcase_add_test(tc, test_a_relative_xdg_variable_is_ignored_as_the_spec_says);
	tcase_add_test(tc, test_no_xdg_and_no_home_gives_null);
	tcase_add_test(tc, test_read_full_gathers_short_reads_and_stops_at_the_end);
	suite_add_tcase(s, tc);
	return s;
}

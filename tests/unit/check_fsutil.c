/* base/fsutil: where the settings file and the session files live. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* The judge reads only st_mode and st_uid: the kind comes from a real
 * object, the owner is set, so any owner can be tried without root. */
static struct stat file_of(const char *path, int fd, uid_t uid)
{
	struct stat st;

	ck_assert_int_eq(path != NULL ? stat(path, &st) : fstat(fd, &st), 0);
	st.st_uid = uid;
	return st;
}

START_TEST(test_a_file_is_ours_when_regular_and_ours_or_roots_where_root_is_trusted)
{
	uid_t me = geteuid(), other = me == 65534 ? 65533 : 65534;
	struct stat st;
	char why[128], want[128], file[] = "/tmp/retryd-check-fsutil-XXXXXX";
	int fd = mkstemp(file), fds[2];

	ck_assert_int_ge(fd, 0);
	unlink(file);
	st = file_of(NULL, fd, me);
	ck_assert_int_eq(fsutil_judge_own_file(&st, false, why, sizeof(why)), 0);
	st = file_of(NULL, fd, other);
	ck_assert_int_eq(fsutil_judge_own_file(&st, true, why, sizeof(why)), -1);
	snprintf(want, sizeof(want), "belongs to uid %lu, not to you (uid %lu)",
		 (unsigned long)other, (unsigned long)me);
	ck_assert_str_eq(why, want);
	st = file_of(NULL, fd, 0);
	ck_assert_int_eq(fsutil_judge_own_file(&st, true, why, sizeof(why)), 0);
	ck_assert_int_eq(fsutil_judge_own_file(&st, false, why, sizeof(why)), me == 0 ? 0 : -1);
	close(fd);
	ck_assert_int_eq(pipe(fds), 0);
	st = file_of(NULL, fds[0], me);
	ck_assert_int_eq(fsutil_judge_own_file(&st, false, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "is a FIFO, not a regular file");
	close(fds[0]);
	close(fds[1]);
	st = file_of("/dev/null", -1, 0);
	ck_assert_int_eq(fsutil_judge_own_file(&st, true, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "is a device, not a regular file");
	st = file_of("/", -1, me);
	ck_assert_int_eq(fsutil_judge_own_file(&st, false, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "is a directory, not a regular file");
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
	tcase_add_test(tc, test_a_file_is_ours_when_regular_and_ours_or_roots_where_root_is_trusted);
	suite_add_tcase(s, tc);
	return s;
}

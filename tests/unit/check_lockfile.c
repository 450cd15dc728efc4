/* io/lockfile: shared records and leases, on real files in a fresh temporary
 * directory, with real other processes (forked children) as the other
 * retryds. The parent never sleeps: it waits only on a child's pipe or its
 * exit. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/lockfile.h"

Suite *lockfile_suite(void);

static char tmp[64];

static void rm_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;
		char sub[512];

		chmod(path, 0700);
		while (d != NULL && (e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
			rm_tree(sub);
		}
		if (d != NULL)
			closedir(d);
		rmdir(path);
	} else {
		unlink(path);
	}
}

static void make_tmp(void)
{
	strcpy(tmp, "/tmp/retryd-lockfile-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void remove_tmp(void)
{
	rm_tree(tmp);
}

static char *in_tmp(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%s/%s", tmp, name);
	return buf;
}

static void write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* The file's bytes into buf (NUL-terminated); their count. */
static size_t read_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n;
}

/* ---- an update that records what it saw and writes what it is told ---- */

struct seen {
	const char *write; /* NULL: return -1 */
	bool called;
	bool old_null;
	size_t old_len;
	char old[LOCKFILE_MAX + 1];
};

static long record_and_write(void *ctx, const char *old, size_t old_len, char *out,
			     size_t out_cap)
{
	struct seen *s = ctx;
	size_t n;

	s->called = true;
	s->old_null = old == NULL;
	s->old_len = old_len;
	if (old != NULL)
		memcpy(s->old, old, old_len);
	s->old[old_len] = '\0';
	if (s->write == NULL)
		return -1;
	n = strlen(s->write);
	ck_assert_uint_le(n, out_cap);
	memcpy(out, s->write, n);
	return (long)n;
}

/* A decimal counter, one up per call. */
static long increment(void *ctx, const char *old, size_t old_len, char *out, size_t out_cap)
{
	char num[32] = "";
	long v;

	(void)ctx;
	if (old != NULL && old_len < sizeof num)
		memcpy(num, old, old_len);
	v = strtol(num, NULL, 10) + 1;
	return snprintf(out, out_cap, "%ld", v);
}

START_TEST(test_update_creates_reads_and_rewrites_a_record_in_place)
{
	char path[128], buf[64], err[256] = "";
	struct seen s = {.write = "first, long"};
	struct stat st;

	in_tmp(path, sizeof path, "rec");
	ck_assert_int_eq(lockfile_update(path, 10, record_and_write, &s, err, sizeof err),
			 LOCKFILE_OK);
	ck_assert(s.called);
	ck_assert(s.old_null);
	ck_assert_uint_eq(s.old_len, 0);
	ck_assert_uint_eq(read_file(path, buf, sizeof buf), 11);
	ck_assert_str_eq(buf, "first, long");
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);

	/* A shorter record leaves none of the longer one's tail. */
	memset(&s, 0, sizeof s);
	s.write = "2nd";
	ck_assert_int_eq(lockfile_update(path, 10, record_and_write, &s, err, sizeof err),
			 LOCKFILE_OK);
	ck_assert(!s.old_null);
	ck_assert_str_eq(s.old, "first, long");
	ck_assert_uint_eq(read_file(path, buf, sizeof buf), 3);
	ck_assert_str_eq(buf, "2nd");

	/* Written empty, it reads as new again. */
	memset(&s, 0, sizeof s);
	s.write = "";
	ck_assert_int_eq(lockfile_update(path, 10, record_and_write, &s, err, sizeof err),
			 LOCKFILE_OK);
	memset(&s, 0, sizeof s);
	s.write = "x";
	ck_assert_int_eq(lockfile_update(path, 10, record_and_write, &s, err, sizeof err),
			 LOCKFILE_OK);
	ck_assert(s.old_null);
	ck_assert_uint_eq(s.old_len, 0);
}
END_TEST

START_TEST(test_an_update_returning_minus_one_leaves_the_file_as_it_was)
{
	char path[128], buf[64], err[256] = "";
	struct seen s = {.write = NULL};

	in_tmp(path, sizeof path, "rec");
	write_file(path, "keep me", 7);
	ck_assert_int_eq(lockfile_update(path, 10, record_and_write, &s, err, sizeof err),
			 LOCKFILE_OK);
	ck_assert(s.called);
	ck_assert_str_eq(s.old, "keep me");
	ck_assert_uint_eq(read_file(path, buf, sizeof buf), 7);
	ck_assert_str_eq(buf, "keep me");
}
END_TEST

START_TEST(test_a_record_of_exactly_the_maximum_is_read_whole)
{
	static char big[LOCKFILE_MAX];
	char path[128], err[256] = "";
	struct seen s = {.write = NULL};

	memset(big, 'a', sizeof big);
	in_tmp(path, sizeof path, "rec");
	write_file(path, big, sizeof big);
	ck_assert_int_eq(lockfile_update(path, 10, record_and_write, &s, err, sizeof err),
			 LOCKFILE_OK);
	ck_assert(!s.old_null);
	ck_assert_uint_eq(s.old_len, LOCKFILE_MAX);
	ck_assert_int_eq(memcmp(s.old, big, sizeof big), 0);
}
END_TEST

START_TEST(test_an_oversized_record_is_taken_as_damaged_and_replaced)
{
	static char big[LOCKFILE_MAX + 10];
	char path[128], buf[64], err[256] = "";
	struct seen s = {.write = "fresh"};

	memset(big, 'z', sizeof big);
	in_tmp(path, sizeof path, "rec");
	write_file(path, big, sizeof big);
	ck_assert_int_eq(lockfile_update(path, 10, record_and_write, &s, err, sizeof err),
			 LOCKFILE_OK);
	ck_assert(s.old_null);
	ck_assert_uint_eq(s.old_len, 0);
	ck_assert_uint_eq(read_file(path, buf, sizeof buf), 5);
	ck_assert_str_eq(buf, "fresh");
}
END_TEST

START_TEST(test_a_record_behind_a_symbolic_link_is_refused)
{
	char path[128], target[128], err[256] = "";
	struct seen s = {.write = "x"};

	in_tmp(target, sizeof target, "elsewhere");
	in_tmp(path, sizeof path, "rec");
	write_file(target, "theirs", 6);
	ck_assert_int_eq(symlink(target, path), 0);
	ck_assert_int_eq(lockfile_update(path, 10, record_and_write, &s, err, sizeof err),
			 LOCKFILE_ERROR);
	ck_assert(!s.called);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_nonnull(strstr(err, "symbolic link"));
}
END_TEST

START_TEST(test_an_update_in_a_missing_directory_says_which_file)
{
	char path[128], err[256] = "";
	struct seen s = {.write = "x"};

	in_tmp(path, sizeof path, "no/such/rec");
	ck_assert_int_eq(lockfile_update(path, 10, record_and_write, &s, err, sizeof err),
			 LOCKFILE_ERROR);
	ck_assert(!s.called);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_nonnull(strstr(err, strerror(ENOENT)));
}
END_TEST

/* ---- other processes ------------------------------------------------------ */

#define CHILDREN 4
#define ROUNDS 200

START_TEST(test_concurrent_updates_from_several_processes_lose_none)
{
	char path[128], buf[64], err[256] = "";
	pid_t pids[CHILDREN];

	in_tmp(path, sizeof path, "counter");
	for (int c = 0; c < CHILDREN; c++) {
		pids[c] = fork();
		ck_assert_int_ge(pids[c], 0);
		if (pids[c] == 0) {
			char cerr[256];

			for (int i = 0; i < ROUNDS; i++)
				if (lockfile_update(path, 10000, increment, NULL, cerr,
						    sizeof cerr) != LOCKFILE_OK)
					_exit(1);
			_exit(0);
		}
	}
	for (int c = 0; c < CHILDREN; c++) {
		int status;

		ck_assert_int_eq(waitpid(pids[c], &status, 0), pids[c]);
		ck_assert(WIFEXITED(status));
		ck_assert_int_eq(WEXITSTATUS(status), 0);
	}
	read_file(path, buf, sizeof buf);
	ck_assert_int_eq(atoi(buf), CHILDREN * ROUNDS);
	(void)err;
}
END_TEST

/* A child that runs `hold` and then keeps what it holds until the parent
 * closes the pipe (or kills it). The parent reads one byte from *ready
 * when the child holds it. */
struct holder {
	pid_t pid;
	int ready;
	int release;
};

static void holder_start(struct holder *h, int (*hold)(const char *arg), const char *arg)
{
	int up[2], down[2];
	char c = 'h';

	ck_assert_int_eq(pipe(up), 0);
	ck_assert_int_eq(pipe(down), 0);
	h->pid = fork();
	ck_assert_int_ge(h->pid, 0);
	if (h->pid == 0) {
		close(up[0]);
		close(down[1]);
		if (hold(arg) != 0)
			_exit(2);
		if (write(up[1], &c, 1) != 1)
			_exit(3);
		while (read(down[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	h->ready = up[0];
	h->release = down[1];
	ck_assert_int_eq(read(h->ready, &c, 1), 1);
}

static void holder_stop(struct holder *h, bool kill_it)
{
	int status;

	if (kill_it)
		ck_assert_int_eq(kill(h->pid, SIGKILL), 0);
	close(h->release);
	ck_assert_int_eq(waitpid(h->pid, &status, 0), h->pid);
	close(h->ready);
	if (kill_it) {
		ck_assert(WIFSIGNALED(status));
	} else {
		ck_assert(WIFEXITED(status));
		ck_assert_int_eq(WEXITSTATUS(status), 0);
	}
}

/* Locks the record file the way lockfile_update does, and keeps it. */
static int hold_flock(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT, 0600);

	return fd < 0 ? -1 : flock(fd, LOCK_EX);
}

static int hold_lease(const char *prefix)
{
	char err[256];

	return lockfile_lease_take(prefix, 1, err, sizeof err) >= 0 ? 0 : -1;
}

START_TEST(test_a_lock_held_by_another_process_gives_busy_not_a_wait)
{
	char path[128], err[256] = "";
	struct seen s = {.write = "x"};
	struct holder h;

	in_tmp(path, sizeof path, "rec");
	holder_start(&h, hold_flock, path);
	ck_assert_int_eq(lockfile_update(path, 20, record_and_write, &s, err, sizeof err),
			 LOCKFILE_BUSY);
	ck_assert(!s.called);
	ck_assert_int_eq(lockfile_update(path, 0, record_and_write, &s, err, sizeof err),
			 LOCKFILE_BUSY);
	holder_stop(&h, false);
	/* Free again once the holder has gone. */
	ck_assert_int_eq(lockfile_update(path, 0, record_and_write, &s, err, sizeof err),
			 LOCKFILE_OK);
	ck_assert(s.called);
}
END_TEST

START_TEST(test_a_glance_reads_a_record_whose_lock_another_process_holds)
{
	char path[128], buf[LOCKFILE_MAX], err[256] = "";
	struct seen s = {.write = "block_until=5"};
	struct holder h;
	size_t len = 99;

	in_tmp(path, sizeof path, "rec");
	ck_assert_int_eq(lockfile_glance(path, buf, sizeof buf, &len, err, sizeof err),
			 LOCKFILE_OK);
	ck_assert_uint_eq(len, 0);   /* no record yet */
	ck_assert_int_eq(lockfile_update(path, 0, record_and_write, &s, err, sizeof err),
			 LOCKFILE_OK);
	holder_start(&h, hold_flock, path);
	ck_assert_int_eq(lockfile_read(path, 0, buf, sizeof buf, &len, err, sizeof err),
			 LOCKFILE_BUSY);
	ck_assert_int_eq(lockfile_glance(path, buf, sizeof buf, &len, err, sizeof err),
			 LOCKFILE_OK);
	ck_assert_uint_eq(len, strlen("block_until=5"));
	ck_assert(memcmp(buf, "block_until=5", len) == 0);
	holder_stop(&h, false);
}
END_TEST

/* ---- leases ------------------------------------------------------------------ */

START_TEST(test_leases_give_out_as_many_slots_as_there_are_then_busy)
{
	char prefix[128], err[256] = "";
	int a, b;

	in_tmp(prefix, sizeof prefix, "lease");
	ck_assert_int_eq(lockfile_lease_count(prefix, 2), 0);
	a = lockfile_lease_take(prefix, 2, err, sizeof err);
	ck_assert_int_ge(a, 0);
	ck_assert_int_eq(lockfile_lease_count(prefix, 2), 1);
	b = lockfile_lease_take(prefix, 2, err, sizeof err);
	ck_assert_int_ge(b, 0);
	ck_assert_int_eq(lockfile_lease_count(prefix, 2), 2);
	ck_assert_int_eq(lockfile_lease_take(prefix, 2, err, sizeof err), -1);

	lockfile_lease_release(a);
	ck_assert_int_eq(lockfile_lease_count(prefix, 2), 1);
	a = lockfile_lease_take(prefix, 2, err, sizeof err);
	ck_assert_int_ge(a, 0);
	lockfile_lease_release(a);
	lockfile_lease_release(b);
	lockfile_lease_release(-1);
	ck_assert_int_eq(lockfile_lease_count(prefix, 2), 0);
}
END_TEST

START_TEST(test_a_lease_of_a_killed_holder_is_free_again)
{
	char prefix[128], err[256] = "";
	struct holder h;
	int fd;

	in_tmp(prefix, sizeof prefix, "lease");
	holder_start(&h, hold_lease, prefix);
	ck_assert_int_eq(lockfile_lease_count(prefix, 1), 1);
	ck_assert_int_eq(lockfile_lease_take(prefix, 1, err, sizeof err), -1);
	holder_stop(&h, true);
	ck_assert_int_eq(lockfile_lease_count(prefix, 1), 0);
	fd = lockfile_lease_take(prefix, 1, err, sizeof err);
	ck_assert_int_ge(fd, 0);
	lockfile_lease_release(fd);
}
END_TEST

START_TEST(test_a_lease_that_cannot_be_made_is_an_error_not_busy)
{
	char prefix[128], err[256] = "";

	in_tmp(prefix, sizeof prefix, "no/such/lease");
	ck_assert_int_eq(lockfile_lease_take(prefix, 2, err, sizeof err), -2);
	ck_assert_ptr_nonnull(strstr(err, prefix));
}
END_TEST

/* ---- the directory ----------------------------------------------------------- */

START_TEST(test_dir_check_makes_missing_directories_mode_0700)
{
	char dir[128], parent[128], err[256] = "";
	struct stat st;

	in_tmp(dir, sizeof dir, "a/b/fleet");
	ck_assert_int_eq(lockfile_dir_check(dir, err, sizeof err), 0);
	ck_assert_int_eq(lstat(dir, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(lstat(in_tmp(parent, sizeof parent, "a"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	/* Again on what is now there, and with a trailing slash. */
	ck_assert_int_eq(lockfile_dir_check(dir, err, sizeof err), 0);
	strcat(dir, "/");
	ck_assert_int_eq(lockfile_dir_check(dir, err, sizeof err), 0);
}
END_TEST

START_TEST(test_dir_check_refuses_a_directory_others_can_read)
{
	char dir[128], want[512], err[256] = "";

	in_tmp(dir, sizeof dir, "fleet");
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_int_eq(chmod(dir, 0755), 0);
	ck_assert_int_eq(lockfile_dir_check(dir, err, sizeof err), -1);
	snprintf(want, sizeof want, "%s is mode 0755; it must be 0700 (chmod 700 %s)", dir, dir);
	ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_dir_check_refuses_a_symbolic_link_to_a_good_directory)
{
	char dir[128], real[128], err[256] = "";

	in_tmp(real, sizeof real, "real");
	in_tmp(dir, sizeof dir, "fleet");
	ck_assert_int_eq(mkdir(real, 0700), 0);
	ck_assert_int_eq(symlink(real, dir), 0);
	ck_assert_int_eq(lockfile_dir_check(dir, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, dir));
	ck_assert_ptr_nonnull(strstr(err, "symbolic link"));
	strcat(dir, "/");
	ck_assert_int_eq(lockfile_dir_check(dir, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "symbolic link"));
}
END_TEST

START_TEST(test_dir_check_refuses_a_file)
{
	char dir[128], under[160], err[256] = "";

	in_tmp(dir, sizeof dir, "fleet");
	write_file(dir, "", 0);
	ck_assert_int_eq(lockfile_dir_check(dir, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, dir));
	ck_assert_ptr_nonnull(strstr(err, "not a directory"));
	/* And a path through it cannot be made. */
	snprintf(under, sizeof under, "%s/sub", dir);
	ck_assert_int_eq(lockfile_dir_check(under, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot create"));
}
END_TEST

START_TEST(test_dir_check_refuses_a_directory_of_another_user)
{
	char dir[128], want[512], err[256] = "";

	in_tmp(dir, sizeof dir, "fleet");
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	/* Only root can give a directory away: elsewhere there is nothing to see. */
	if (chown(dir, geteuid() + 1, (gid_t)-1) != 0)
		return;
	ck_assert_int_eq(lockfile_dir_check(dir, err, sizeof err), -1);
	snprintf(want, sizeof want, "%s: owned by uid %lu, not by you (uid %lu)", dir,
		 (unsigned long)geteuid() + 1, (unsigned long)geteuid());
	ck_assert_str_eq(err, want);
}
END_TEST

Suite *lockfile_suite(void)
{
	Suite *s = suite_create("lockfile");
	TCase *rec = tcase_create("record");
	TCase *proc = tcase_create("processes");
	TCase *lease = tcase_create("lease");
	TCase *dir = tcase_create("dir");

	tcase_add_checked_fixture(rec, make_tmp, remove_tmp);
	tcase_add_test(rec, test_update_creates_reads_and_rewrites_a_record_in_place);
	tcase_add_test(rec, test_an_update_returning_minus_one_leaves_the_file_as_it_was);
	tcase_add_test(rec, test_a_record_of_exactly_the_maximum_is_read_whole);
	tcase_add_test(rec, test_an_oversized_record_is_taken_as_damaged_and_replaced);
	tcase_add_test(rec, test_a_record_behind_a_symbolic_link_is_refused);
	tcase_add_test(rec, test_an_update_in_a_missing_directory_says_which_file);
	suite_add_tcase(s, rec);

	tcase_add_checked_fixture(proc, make_tmp, remove_tmp);
	tcase_set_timeout(proc, 60);
	tcase_add_test(proc, test_concurrent_updates_from_several_processes_lose_none);
	tcase_add_test(proc, test_a_lock_held_by_another_process_gives_busy_not_a_wait);
	tcase_add_test(proc, test_a_glance_reads_a_record_whose_lock_another_process_holds);
	suite_add_tcase(s, proc);

	tcase_add_checked_fixture(lease, make_tmp, remove_tmp);
	tcase_set_timeout(lease, 20);
	tcase_add_test(lease, test_leases_give_out_as_many_slots_as_there_are_then_busy);
	tcase_add_test(lease, test_a_lease_of_a_killed_holder_is_free_again);
	tcase_add_test(lease, test_a_lease_that_cannot_be_made_is_an_error_not_busy);
	suite_add_tcase(s, lease);

	tcase_add_checked_fixture(dir, make_tmp, remove_tmp);
	tcase_add_test(dir, test_dir_check_makes_missing_directories_mode_0700);
	tcase_add_test(dir, test_dir_check_refuses_a_directory_others_can_read);
	tcase_add_test(dir, test_dir_check_refuses_a_symbolic_link_to_a_good_directory);
	tcase_add_test(dir, test_dir_check_refuses_a_file);
	tcase_add_test(dir, test_dir_check_refuses_a_directory_of_another_user);
	suite_add_tcase(s, dir);
	return s;
}

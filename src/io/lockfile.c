#include "io/lockfile.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/errbuf.h"

/* The pause between two tries of a busy lock: short at first (a record is
 * held for a few microseconds), growing to this. */
#define LOCKFILE_NAP_FIRST_NS 100000L
#define LOCKFILE_NAP_MAX_NS 1000000L

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nap_ns(long ns)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = ns};

	/* An EINTR is a shorter nap, which the caller's deadline absorbs. */
	nanosleep(&ts, NULL);
}

/* ---- the directory ------------------------------------------------------- */

/* mkdir -p with mode 0700 for every directory it makes. Another retryd may
 * be making the same ones at the same moment: EEXIST is success here, and
 * what exists is judged by the checks after. */
static int make_parents(char *path, char *err, size_t errlen)
{
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(path, 0700) != 0 && errno != EEXIST) {
			int e = errno;

			*p = c;
			return errbuf_set(err, errlen, "%s: cannot create it: %s", path,
					  strerror(e));
		}
		*p = c;
		if (c == '\0')
			return 0;
	}
}

int lockfile_dir_check(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	char *path;
	size_t len;
	int fd, rc = -1;

	if (dir == NULL || dir[0] == '\0')
		return errbuf_set(err, errlen, "the directory is empty: it needs a path");
	path = strdup(dir);
	if (path == NULL)
		return errbuf_set(err, errlen, "%s: out of memory", dir);
	/* "/run/x/" would make lstat follow a symlink x: judge "/run/x". */
	len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';

	if (make_parents(path, err, errlen) != 0)
		goto out;
	if (lstat(path, &st) != 0) {
		errbuf_set(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		errbuf_set(err, errlen,
			   "%s is a symbolic link; it must be a real directory of your own",
			   path);
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		errbuf_set(err, errlen, "%s exists but is not a directory", path);
		goto out;
	}
	/* Judge what an open gets, not what lstat saw a moment before. */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		errbuf_set(err, errlen, "%s: cannot open it: %s", path, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) != 0) {
		errbuf_set(err, errlen, "%s: %s", path, strerror(errno));
	} else if (st.st_uid != geteuid()) {
		errbuf_set(err, errlen, "%s: owned by uid %lu, not by you (uid %lu)", path,
			   (unsigned long)st.st_uid, (unsigned long)geteuid());
	} else if ((st.st_mode & 0077) != 0 || (st.st_mode & 0700) != 0700) {
		errbuf_set(err, errlen, "%s is mode %04o; it must be 0700 (chmod 700 %s)", path,
			   (unsigned)(st.st_mode & 07777), path);
	} else {
		rc = 0;
	}
	close(fd);
out:
	free(path);
	return rc;
}

int lockfile_dir_owned(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc = -1;

	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			return errbuf_set(err, errlen, "%s is not a real directory (%s)", dir,
					  errno == ELOOP ? "a symbolic link" : "not a directory");
		return errbuf_set(err, errlen, "%s: cannot open it: %s", dir, strerror(errno));
	}
	if (fstat(fd, &st) != 0)
		errbuf_set(err, errlen, "%s: %s", dir, strerror(errno));
	else if (st.st_uid != geteuid())
		errbuf_set(err, errlen, "%s belongs to uid %lu, not to you (uid %lu)", dir,
			   (unsigned long)st.st_uid, (unsigned long)geteuid());
	else if ((st.st_mode & 0022) != 0)
		errbuf_set(err, errlen, "%s is mode %04o: others may write in it", dir,
			   (unsigned)(st.st_mode & 07777));
	else
		rc = 0;
	close(fd);
	return rc;
}

/* ---- records --------------------------------------------------------------- */

/* What is at a record's path must be a record: a regular file of our own.
 * A FIFO (whose read would wait for a writer for ever), a device, a
 * directory or another user's file is refused before anything reads it. */
static int judge_record(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return errbuf_set(err, errlen, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return errbuf_set(err, errlen,
				  "%s is %s, not a regular file; refusing to use it (remove it)",
				  path, S_ISFIFO(st.st_mode)  ? "a FIFO"
					: S_ISDIR(st.st_mode) ? "a directory"
					: S_ISSOCK(st.st_mode) ? "a socket"
					: S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
					: "a special file");
	if (st.st_uid != geteuid())
		return errbuf_set(err, errlen,
				  "%s belongs to uid %lu, not to you (uid %lu); refusing to use it",
				  path, (unsigned long)st.st_uid, (unsigned long)geteuid());
	return 0;
}

/* open(2) of a record as a file only: never through a symbolic link, and
 * O_NONBLOCK so that a FIFO put there cannot hold the open itself. */
static int open_checked(const char *path, int flags, char *err, size_t errlen)
{
	int fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);

	if (fd < 0) {
		int e = errno;  /* the caller tells a missing record (ENOENT) apart */

		if (e == ELOOP)
			errbuf_set(err, errlen, "%s is a symbolic link; refusing to follow it", path);
		else if (e == ENXIO)  /* a FIFO with no reader, opened to write */
			errbuf_set(err, errlen,
				   "%s is a FIFO, not a regular file; refusing to use it (remove it)",
				   path);
		else
			errbuf_set(err, errlen, "%s: cannot open it: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if (judge_record(fd, path, err, errlen) != 0) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

static int open_record(const char *path, char *err, size_t errlen)
{
	return open_checked(path, O_RDWR | O_CREAT, err, errlen);
}

/* flock(how | LOCK_NB) tried until wait_ms has passed (at least once). */
static enum lockfile_status lock_how_within(int fd, int how, const char *path, int wait_ms,
					    char *err, size_t errlen)
{
	int64_t deadline = mono_ns() + (int64_t)(wait_ms > 0 ? wait_ms : 0) * 1000000;
	long nap = LOCKFILE_NAP_FIRST_NS;

	for (;;) {
		if (flock(fd, how | LOCK_NB) == 0)
			return LOCKFILE_OK;
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK) {
			errbuf_set(err, errlen, "%s: cannot lock it: %s", path, strerror(errno));
			return LOCKFILE_ERROR;
		}
		int64_t left = deadline - mono_ns();

		if (left <= 0)
			return LOCKFILE_BUSY;
		nap_ns(left < nap ? (long)left : nap);
		nap = nap * 3 / 2 < LOCKFILE_NAP_MAX_NS ? nap * 3 / 2 : LOCKFILE_NAP_MAX_NS;
	}
}

static enum lockfile_status lock_within(int fd, const char *path, int wait_ms, char *err,
					size_t errlen)
{
	return lock_how_within(fd, LOCK_EX, path, wait_ms, err, errlen);
}

/* The whole file into buf (cap bytes): its length, or -1 with errno. */
static ssize_t read_all(int fd, char *buf, size_t cap)
{
	size_t got = 0;

	while (got < cap) {
		ssize_t n = pread(fd, buf + got, cap - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int write_all(int fd, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, buf + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* True when the file fd holds is still the one at path: a record removed
 * (or replaced) while we waited for its lock must be opened again, or our
 * write would land in a file nobody else will ever read. */
static bool still_linked(int fd, const char *path)
{
	struct stat held, named;

	if (fstat(fd, &held) != 0 || lstat(path, &named) != 0)
		return false;
	return held.st_nlink > 0 && held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

enum lockfile_status lockfile_update(const char *path, int wait_ms, lockfile_update_fn update,
				     void *ctx, char *err, size_t errlen)
{
	/* One byte more than a record may hold, to see an oversized one. */
	char old[LOCKFILE_MAX + 1];
	char out[LOCKFILE_MAX];
	enum lockfile_status st;
	ssize_t got;
	long n;
	int fd, tries = 0;

	for (;;) {
		fd = open_record(path, err, errlen);
		if (fd < 0)
			return LOCKFILE_ERROR;
		st = lock_within(fd, path, wait_ms, err, errlen);
		if (st != LOCKFILE_OK) {
			close(fd);
			return st;
		}
		if (still_linked(fd, path) || ++tries >= 3)
			break;
		flock(fd, LOCK_UN);
		close(fd);
	}

	got = read_all(fd, old, sizeof old);
	if (got < 0) {
		errbuf_set(err, errlen, "%s: cannot read it: %s", path, strerror(errno));
		st = LOCKFILE_ERROR;
		goto out;
	}
	if (got > LOCKFILE_MAX)
		got = 0; /* not one of ours, or damaged: start it afresh */
	n = update(ctx, got > 0 ? old : NULL, (size_t)got, out, sizeof out);
	assert(n <= (long)sizeof out);
	if (n < 0)
		goto out;
	/* Written over the old bytes, then cut to length: nobody reads without
	 * the lock, so nobody sees the moment between. */
	if (write_all(fd, out, (size_t)n) != 0 || ftruncate(fd, (off_t)n) != 0) {
		errbuf_set(err, errlen, "%s: cannot write it: %s", path, strerror(errno));
		st = LOCKFILE_ERROR;
	}
out:
	flock(fd, LOCK_UN);
	close(fd);
	return st;
}

enum lockfile_status lockfile_read(const char *path, int wait_ms, char *buf, size_t cap,
				   size_t *len, char *err, size_t errlen)
{
	enum lockfile_status st;
	ssize_t got;
	int fd;

	*len = 0;
	errno = 0;
	fd = open_checked(path, O_RDONLY, err, errlen);
	if (fd < 0 && errno == ENOENT)
		return LOCKFILE_OK; /* no record yet: nothing known */
	if (fd < 0)
		return LOCKFILE_ERROR;
	st = lock_how_within(fd, LOCK_SH, path, wait_ms, err, errlen);
	if (st == LOCKFILE_OK) {
		got = read_all(fd, buf, cap);
		if (got < 0) {
			errbuf_set(err, errlen, "%s: cannot read it: %s", path, strerror(errno));
			st = LOCKFILE_ERROR;
		} else {
			*len = (size_t)got;
		}
		flock(fd, LOCK_UN);
	}
	close(fd);
	return st;
}

enum lockfile_status lockfile_glance(const char *path, char *buf, size_t cap, size_t *len,
				     char *err, size_t errlen)
{
	char again[LOCKFILE_MAX];
	ssize_t a, b;
	int fd;

	*len = 0;
	errno = 0;
	fd = open_checked(path, O_RDONLY, err, errlen);
	if (fd < 0)
		return errno == ENOENT ? LOCKFILE_OK : LOCKFILE_ERROR;
	a = read_all(fd, buf, cap);
	b = a >= 0 && (size_t)a <= sizeof(again) ? read_all(fd, again, sizeof(again)) : -1;
	close(fd);
	if (a < 0 || b != a || memcmp(buf, again, (size_t)a) != 0)
		return LOCKFILE_BUSY;
	*len = (size_t)a;
	return LOCKFILE_OK;
}

/* ---- leases ---------------------------------------------------------------- */

static int slot_path(char *buf, size_t cap, const char *prefix, int i)
{
	int n = snprintf(buf, cap, "%s.%d", prefix, i);

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int lockfile_lease_take(const char *prefix, int slots, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int start;

	assert(slots > 0);
	/* Start where this pid points, so holders spread over the slots and a
	 * take finds a free one at the first try more often. */
	start = (int)((unsigned long)getpid() % (unsigned long)slots);
	for (int k = 0; k < slots; k++) {
		int i = (start + k) % slots;
		int fd;

		if (slot_path(path, sizeof path, prefix, i) != 0) {
			errbuf_set(err, errlen, "%s: the path is too long", prefix);
			return -2;
		}
		fd = open_record(path, err, errlen);
		if (fd < 0)
			return -2;
		for (;;) {
			if (flock(fd, LOCK_EX | LOCK_NB) == 0)
				return fd;
			if (errno != EINTR)
				break;
		}
		if (errno != EWOULDBLOCK) {
			errbuf_set(err, errlen, "%s: cannot lock it: %s", path, strerror(errno));
			close(fd);
			return -2;
		}
		close(fd);
	}
	return -1;
}

void lockfile_lease_release(int fd)
{
	if (fd < 0)
		return;
	flock(fd, LOCK_UN);
	close(fd);
}

int lockfile_lease_count(const char *prefix, int slots)
{
	char path[PATH_MAX];
	int held = 0;

	for (int i = 0; i < slots; i++) {
		int fd, rc;

		if (slot_path(path, sizeof path, prefix, i) != 0)
			return -1;
		errno = 0;
		fd = open_checked(path, O_RDONLY, NULL, 0);
		if (fd < 0) {
			if (errno == ENOENT)
				continue; /* never taken */
			return -1;
		}
		/* A shared probe conflicts only with a holder's exclusive lock,
		 * not with another count's probe. */
		do
			rc = flock(fd, LOCK_SH | LOCK_NB);
		while (rc != 0 && errno == EINTR);
		if (rc == 0)
			flock(fd, LOCK_UN);
		else if (errno == EWOULDBLOCK)
			held++;
		else
			held = -1;
		close(fd);
		if (held < 0)
			return -1;
	}
	return held;
}

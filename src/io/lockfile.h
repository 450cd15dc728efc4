/* lockfile — small shared records on one machine: files read and rewritten
 * under flock(2), and leases that the kernel frees when their holder dies.
 *
 * Nothing here blocks the loop for long: a lock is tried without waiting
 * (LOCK_NB) a few times over at most `wait_ms` milliseconds; when it is
 * still busy the caller gets LOCKFILE_BUSY and decides locally this time.
 * Records are tiny (well under a page) and live in a directory of the
 * user's own (lockfile_dir_check), usually on tmpfs. */
#ifndef RETRYD_LOCKFILE_H
#define RETRYD_LOCKFILE_H

#include <stdbool.h>
#include <stddef.h>

enum lockfile_status {
	LOCKFILE_OK = 0,
	LOCKFILE_BUSY,   /* the lock stayed taken for wait_ms */
	LOCKFILE_ERROR,  /* err says what (open, read, write failed) */
};

/* Creates dir (and its parents) with mode 0700 when missing, then checks
 * that it is a directory owned by this user with no access for group or
 * others. Returns 0, or -1 with err naming the directory and the problem. */
int lockfile_dir_check(const char *dir, char *err, size_t errlen);

/* The read-modify-write of one record file, under an exclusive flock:
 * update(ctx, old, old_len, out, out_cap) gets the current contents (old
 * NULL/0 when the file is new or empty) and writes the new contents into
 * out, returning their length, or -1 to leave the file unchanged. The file
 * is rewritten in place (truncate + pwrite), never left half-written for a
 * reader that takes the lock. old and out are at most LOCKFILE_MAX bytes. */
#define LOCKFILE_MAX 4096
typedef long (*lockfile_update_fn)(void *ctx, const char *old, size_t old_len, char *out,
				   size_t out_cap);
enum lockfile_status lockfile_update(const char *path, int wait_ms, lockfile_update_fn update,
				     void *ctx, char *err, size_t errlen);

/* A lease: one of `slots` lock files "<prefix>.<i>" held with flock while
 * the holder lives; the kernel frees it when the process dies, however it
 * dies. Returns the held fd (>= 0), -1 when every slot is taken (BUSY), -2
 * with err on an error. Release with lockfile_lease_release(fd). */
int lockfile_lease_take(const char *prefix, int slots, char *err, size_t errlen);
void lockfile_lease_release(int fd);
/* How many of the slots are held now (by anyone), for get_state. */
int lockfile_lease_count(const char *prefix, int slots);

#endif

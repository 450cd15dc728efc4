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

/* Creates dir (and its parents) with mode 0700 when missing (another
 * process making them at the same time is fine), then checks that it is a
 * real directory (not a symbolic link) owned by this user (geteuid) with
 * mode 0700: no access for group or others. Returns 0, or -1 with err
 * naming the directory and the problem ("/tmp/x is mode 0755; it must be
 * 0700 (chmod 700 /tmp/x)"); the caller may put the setting's name before
 * it. dir is borrowed. */
int lockfile_dir_check(const char *dir, char *err, size_t errlen);

/* A directory made by someone else that ours will live in (the runtime
 * dir): it must exist, be a real directory (not a symbolic link), belong
 * to this user and be writable by no one else (no group or other write
 * bit): else a user whose folder it is could swap our records. Returns 0,
 * or -1 with err saying which and why. Creates nothing. */
int lockfile_dir_owned(const char *dir, char *err, size_t errlen);

/* The read-modify-write of one record file, under an exclusive flock:
 * update(ctx, old, old_len, out, out_cap) gets the current contents (old
 * NULL/0 when the file is new or empty) and writes the new contents into
 * out, returning their length (at most out_cap), or -1 to leave the file
 * unchanged. The file (created with mode 0600, never through a symbolic
 * link) is rewritten in place: pwrite at offset 0, then ftruncate to the
 * new length. Every reader takes the lock first, so none sees the moment
 * between; a holder killed right there leaves the new record followed by
 * the old one's tail, so record formats must tell where they end (and
 * callers treat what they cannot parse as empty). old and out are at most
 * LOCKFILE_MAX bytes; a file larger than that is taken as damaged: update
 * sees it as empty (old NULL) and what it returns replaces it. A record
 * removed while its lock was awaited is opened (created) again. path and
 * ctx are borrowed; old is valid only during the call. Blocks for at most
 * about wait_ms (0: one try). */
#define LOCKFILE_MAX 4096
typedef long (*lockfile_update_fn)(void *ctx, const char *old, size_t old_len, char *out,
				   size_t out_cap);
enum lockfile_status lockfile_update(const char *path, int wait_ms, lockfile_update_fn update,
				     void *ctx, char *err, size_t errlen);

/* A reader's look at one record, under a shared flock (readers do not
 * wait for each other, only for a writer): up to cap bytes into buf, *len
 * its length (0 when the file does not exist yet). */
enum lockfile_status lockfile_read(const char *path, int wait_ms, char *buf, size_t cap,
				   size_t *len, char *err, size_t errlen);

/* A look at a record whose lock stayed busy, without the lock: read twice,
 * and only when both reads are the same is it an answer (LOCKFILE_OK), so
 * a writer caught between its write and its truncate is not believed;
 * else LOCKFILE_BUSY. What it holds is still only a hint: the caller
 * checks it like any record. Never waits. */
enum lockfile_status lockfile_glance(const char *path, char *buf, size_t cap, size_t *len,
				     char *err, size_t errlen);

/* A lease: one of `slots` (> 0) lock files "<prefix>.<i>" held with flock
 * while the holder lives; the kernel frees it when the process dies,
 * however it dies. Returns the held fd (>= 0, close-on-exec, so spawned
 * children do not keep it), -1 when every slot is taken (BUSY), -2 with
 * err on an error. The search starts at a slot picked by the pid, so
 * holders spread. A flock belongs to its open file description, so one
 * process may hold several leases (each take opens its own) and they
 * count against each other like any other holder's. prefix is borrowed;
 * the fd is owned by the caller until lockfile_lease_release(fd) (which
 * takes ownership; -1 is ignored). */
int lockfile_lease_take(const char *prefix, int slots, char *err, size_t errlen);
void lockfile_lease_release(int fd);
/* How many of the slots are held now (by anyone, this process included),
 * for get_state; -1 when a slot file cannot be opened. Each slot is probed
 * with a shared non-blocking flock taken and dropped at once: holders are
 * untouched, but a take racing with the probe may see that slot busy for
 * those microseconds (it moves on to the next one). prefix is borrowed. */
int lockfile_lease_count(const char *prefix, int slots);

#endif

/* fleet_user — the user store (fleet.mode "user"): one record file per
 * scope, credential and model in <fleet.dir>/<namespace>, each
 * read-modify-write under flock (io/lockfile), and leases as lock slots the
 * kernel frees when their holder dies. A lock busy past cfg->lock_wait_ms
 * means "decide locally this time" (core/fleet.c's local copy): never a
 * blocked loop. The hooks are in core/fleet_store.h. */
#include "core/fleet.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errbuf.h"
#include "base/log.h"
#include "core/fleet_store.h"
#include "io/lockfile.h"

/* Writes whose lock was busy: tried again every 2 ms, for up to half a
 * second, then given up (logged at debug). At most LATER_MAX wait. */
#define LATER_MAX 64
#define LATER_TRIES 250

/* The store's state (f->store). */
struct fleet_user {
	char *dir;                  /* owned: <fleet.dir>/<namespace> */
	int lease_fd;               /* the held lease, or -1 */

	/* Writes whose lock was busy, tried again from a timer (a report
	 * lost under contention would be knowledge lost). */
	struct deferred *later;     /* owned: LATER_MAX of them once one was needed */
	size_t nlater;
	struct clock_timer later_timer;
};

/* FNV-1a, 64 bits: file names for keys. */
static uint64_t fnv64(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* One file per record, named by a hash of its key. */
static void record_path(const struct fleet_user *u, char kind, const char *key, char *out,
			size_t cap)
{
	uint64_t h = fnv64(14695981039346656037ULL, key, strlen(key));

	snprintf(out, cap, "%s/%c-%016" PRIx64, u->dir, kind, h);
}

static long scope_update(void *ctx, const char *old, size_t len, char *out, size_t cap)
{
	struct fleet_scope_job *j = ctx;
	struct fleet_scope s;
	size_t n;

	if (old == NULL || fleet_scope_parse(&s, old, len) != 0)
		fleet_scope_init(&s);
	fleet_apply_scope(j, &s);
	if (j->op == FLEET_OP_READ)
		return -1;
	n = fleet_scope_format(&s, out, cap);
	return n > 0 ? (long)n : -1;
}

static long int_update(void *ctx, const char *old, size_t len, char *out, size_t cap)
{
	struct fleet_int_job *j = ctx;
	char text[64];
	long long a = 0, b = 0;
	int n;

	if (old != NULL && len < sizeof(text)) {
		memcpy(text, old, len);
		text[len] = '\0';
		if (sscanf(text, "%lld %lld", &a, &b) < 1)
			a = b = 0;
	}
	if (j->kind == 'c') {
		j->until = a;
	} else {
		j->m.streak = a;
		j->m.cool_until = b;
	}
	fleet_apply_int(j);
	if (j->op == 0)
		return -1;
	n = j->kind == 'c' ? snprintf(out, cap, "%lld\n", (long long)j->until)
			   : snprintf(out, cap, "%lld %lld\n", (long long)j->m.streak,
				      (long long)j->m.cool_until);
	return n > 0 && (size_t)n < cap ? n : -1;
}

struct deferred {
	char kind;                 /* 's', 'c' or 'm' */
	char key[400];
	enum fleet_rec_op op;      /* 's': FLEET_OP_REPORT or FLEET_OP_CLEAR */
	struct fleet_outcome out;  /* 's' */
	struct fleet_int_job ij;   /* 'c', 'm' */
	int64_t now;               /* when it happened */
	int tries;
};

static void on_later(struct clock_timer *timer, void *ctx);

static struct deferred *defer_slot(struct fleet *f, const char *key)
{
	struct fleet_user *u = f->store;
	struct deferred *d;

	if (u->nlater >= LATER_MAX) {
		LOG_DEBUG("fleet: too many reports waiting for their locks; %s stays local", key);
		return NULL;
	}
	if (u->later == NULL) {
		u->later = calloc(LATER_MAX, sizeof(*u->later));
		if (u->later == NULL)
			return NULL;
	}
	d = &u->later[u->nlater++];
	memset(d, 0, sizeof(*d));
	snprintf(d->key, sizeof(d->key), "%s", key);
	if (!clock_timer_active(&u->later_timer))
		clock_timer_start(f->cfg->clock, &u->later_timer, 2, on_later, f);
	return d;
}

static void defer_scope(struct fleet *f, const char *key, const struct fleet_scope_job *j)
{
	struct deferred *d = defer_slot(f, key);

	if (d == NULL)
		return;
	d->kind = 's';
	d->op = j->op;
	if (j->out != NULL)
		d->out = *j->out;
	d->now = j->now;
}

static void defer_int(struct fleet *f, const char *key, const struct fleet_int_job *j)
{
	struct deferred *d = defer_slot(f, key);

	if (d == NULL)
		return;
	d->kind = j->kind;
	d->ij = *j;
	d->now = j->now;
}

/* One more try of a deferred write, without waiting for the lock. */
static bool retry_write(struct fleet *f, struct deferred *d)
{
	char path[4200], err[256];
	enum lockfile_status st;

	record_path(f->store, d->kind, d->key, path, sizeof(path));
	if (d->kind == 's') {
		struct fleet_verdict v;
		struct fleet_scope_job j = { .op = d->op, .f = f, .now = d->now, .out = &d->out,
					     .v = &v };
		struct fleet_scope *local;

		st = lockfile_update(path, 0, scope_update, &j, err, sizeof(err));
		if (st == LOCKFILE_OK && (local = fleet_local_scope(f, d->key)) != NULL)
			*local = j.result;
	} else {
		d->ij.p = &f->cfg->params;
		st = lockfile_update(path, 0, int_update, &d->ij, err, sizeof(err));
	}
	return st != LOCKFILE_BUSY;  /* done, or an error that will not pass */
}

static void on_later(struct clock_timer *timer, void *ctx)
{
	struct fleet *f = ctx;
	struct fleet_user *u = f->store;
	size_t i = 0;

	(void)timer;
	while (i < u->nlater) {
		struct deferred *d = &u->later[i];

		if (retry_write(f, d) || ++d->tries >= LATER_TRIES) {
			if (d->tries >= LATER_TRIES)
				LOG_DEBUG("fleet: %s stayed locked; its report stays local", d->key);
			u->later[i] = u->later[--u->nlater];
			continue;
		}
		i++;
	}
	if (u->nlater > 0)
		clock_timer_start(f->cfg->clock, &u->later_timer, 2, on_later, f);
}

/* The scope's record in its file; a busy lock's report or clear is
 * deferred (on_later). */
static int run_scope_user(struct fleet *f, const char *key, struct fleet_scope_job *j)
{
	char path[4200], err[256], buf[LOCKFILE_MAX];
	enum lockfile_status st;
	size_t len;

	record_path(f->store, 's', key, path, sizeof(path));
	if (j->op == FLEET_OP_READ) {
		st = lockfile_read(path, f->cfg->lock_wait_ms, buf, sizeof(buf), &len, err,
				   sizeof(err));
		if (st == LOCKFILE_OK) {
			if (len == 0 || fleet_scope_parse(&j->result, buf, len) != 0)
				fleet_scope_init(&j->result);
			return 0;
		}
	} else {
		st = lockfile_update(path, f->cfg->lock_wait_ms, scope_update, j, err,
				     sizeof(err));
		if (st == LOCKFILE_OK)
			return 0;
		if (st == LOCKFILE_BUSY && (j->op == FLEET_OP_REPORT || j->op == FLEET_OP_CLEAR))
			defer_scope(f, key, j);
	}
	if (st == LOCKFILE_ERROR)
		LOG_WARN("fleet: %s; deciding locally", err);
	else
		LOG_DEBUG("fleet: %s is busy; deciding locally this time", path);
	f->local_decisions++;
	return -1;
}

/* The same for a credential's or a model's record. */
static int run_int_user(struct fleet *f, const char *key, struct fleet_int_job *j)
{
	char path[4200], err[256], buf[LOCKFILE_MAX];
	enum lockfile_status st;
	size_t len;

	record_path(f->store, j->kind, key, path, sizeof(path));
	if (j->op == 0) {
		st = lockfile_read(path, f->cfg->lock_wait_ms, buf, sizeof(buf), &len, err,
				   sizeof(err));
		if (st == LOCKFILE_OK)
			int_update(j, len > 0 ? buf : NULL, len, buf, 0);
	} else {
		st = lockfile_update(path, f->cfg->lock_wait_ms, int_update, j, err,
				     sizeof(err));
		if (st == LOCKFILE_BUSY)
			defer_int(f, key, j);
	}
	if (st == LOCKFILE_OK)
		return 0;
	f->local_decisions++;
	return -1;
}

static void lease_user(struct fleet *f, const char *scope, struct fleet_answer *a)
{
	struct fleet_user *u = f->store;
	char prefix[4200], err[256];
	int fd;

	if (f->cfg->concurrency <= 0 || a->wait_ms > 0)
		return;
	record_path(u, 'l', scope, prefix, sizeof(prefix));
	fd = lockfile_lease_take(prefix, f->cfg->concurrency, err, sizeof(err));
	if (fd >= 0) {
		u->lease_fd = fd;
		a->lease = true;
	} else if (fd == -1) {
		/* Every slot held: look again soon (the kernel frees a dead
		 * holder's slot; no one tells us, so this polls). */
		a->wait_ms = 50 + (int64_t)(fleet_rand(f) % 100);
		a->reason = FLEET_CONCURRENCY;
		a->reserved = false;
	} else {
		LOG_WARN("fleet: %s; running without a lease", err);
	}
}

static void done_user(struct fleet *f)
{
	struct fleet_user *u = f->store;

	if (u->lease_fd >= 0) {
		lockfile_lease_release(u->lease_fd);
		u->lease_fd = -1;
	}
}

static int default_dir(char *out, size_t cap, char *err, size_t errlen)
{
	const char *run = getenv("XDG_RUNTIME_DIR");

	if (run != NULL && run[0] == '/') {
		snprintf(out, cap, "%s/retryd/fleet", run);
		return 0;
	}
	/* /tmp is everyone's: the per-user folder itself must be ours, 0700. */
	snprintf(out, cap, "/tmp/retryd-%u", (unsigned)geteuid());
	if (lockfile_dir_check(out, err, errlen) != 0)
		return -1;
	snprintf(out + strlen(out), cap - strlen(out), "/fleet");
	return 0;
}

/* Checks (creates, mode 0700) fleet.dir, or the default, and the
 * namespace's folder in it. */
static int open_user(struct fleet *f, char *err, size_t errlen)
{
	const char *given = f->cfg->dir;
	struct fleet_user *u = calloc(1, sizeof(*u));
	char dir[4096];

	if (u == NULL)
		goto nomem;
	u->lease_fd = -1;
	if (given != NULL && given[0] != '\0')
		snprintf(dir, sizeof(dir), "%s", given);
	else if (default_dir(dir, sizeof(dir), err, errlen) != 0)
		goto fail;
	if (lockfile_dir_check(dir, err, errlen) != 0)
		goto fail;
	u->dir = malloc(strlen(dir) + strlen(f->ns) + 2);
	if (u->dir == NULL)
		goto nomem;
	sprintf(u->dir, "%s/%s", dir, f->ns);
	if (lockfile_dir_check(u->dir, err, errlen) != 0)
		goto fail;
	f->store = u;
	return 0;
nomem:
	errbuf_set(err, errlen, "out of memory");
fail:
	if (u != NULL)
		free(u->dir);
	free(u);
	return -1;
}

static void close_user(struct fleet *f, void (*closed)(struct fleet *f))
{
	struct fleet_user *u = f->store;

	clock_timer_stop(f->cfg->clock, &u->later_timer);
	free(u->later);
	free(u->dir);
	free(u);
	f->store = NULL;
	closed(f);
}

const struct fleet_store_ops fleet_user_ops = {
	.open = open_user,
	.run_scope = run_scope_user,
	.run_int = run_int_user,
	.lease = lease_user,
	.done = done_user,
	.close = close_user,
};

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
#include "base/fsutil.h"
#include "base/log.h"
#include "base/number.h"
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
	bool refusal_logged;        /* a record out of range was said once */
	char last_error[256];       /* the last record file error said */
};

/* A record file that cannot be used (a FIFO, another user's): said when it
 * is new, not on every read of it. */
static void file_error(struct fleet *f, const char *err)
{
	struct fleet_user *u = f->store;

	if (strcmp(u->last_error, err) == 0) {
		LOG_DEBUG("fleet: %s; deciding locally", err);
		return;
	}
	snprintf(u->last_error, sizeof(u->last_error), "%s", err);
	LOG_WARN("fleet: %s; deciding locally", err);
}

/* A record held values out of range (fleet_scope_check & co): said once
 * per daemon, not per read (a poisoned file is read on every ask). */
static void refused(struct fleet *f, char kind, unsigned n, const struct fleet_refusal *why)
{
	struct fleet_user *u = f->store;

	if (n == 0 || u == NULL || u->refusal_logged)
		return;
	u->refusal_logged = true;
	LOG_WARN("fleet: a %s record in %s held %s=%lld, out of its range; refused (%u field%s "
		 "taken as unset; said once)",
		 kind == 's' ? "scope" : kind == 'c' ? "credential" : "model", u->dir, why->field,
		 (long long)why->value, n, n == 1 ? "" : "s");
}

/* The scope record text of a file, checked: a record that is not one, or
 * its fields out of range, is taken as new or as unset. */
static void scope_read(struct fleet *f, struct fleet_scope *s, const char *text, size_t len,
		       int64_t now)
{
	struct fleet_refusal why;

	if (text == NULL || len == 0 || fleet_scope_parse(s, text, len) != 0) {
		fleet_scope_init(s);
		return;
	}
	refused(f, 's', fleet_scope_check(s, &f->cfg->params, now, &why), &why);
}

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

	scope_read(j->f, &s, old, len, clock_wall_ms(j->f->cfg->clock));
	fleet_apply_scope(j, &s);
	if (j->op == FLEET_OP_READ)
		return -1;
	n = fleet_scope_format(&s, out, cap);
	return n > 0 ? (long)n : -1;
}

/* What int_update works on: the job, and the fleet it reads for. */
struct int_ctx {
	struct fleet *f;
	struct fleet_int_job *j;
};

static long int_update(void *ctx, const char *old, size_t len, char *out, size_t cap)
{
	struct int_ctx *c = ctx;
	struct fleet_int_job *j = c->j;
	int64_t now = clock_wall_ms(c->f->cfg->clock);
	struct fleet_refusal why;
	int64_t v[4] = { 0, 0, 0, 0 };
	int n;

	if (old != NULL && len > 0)
		fleet_ints_parse(old, len, v, j->kind == 'c' ? 4 : 2);
	if (j->kind == 'c') {
		j->until = v[0];
		j->turn = v[1];
		j->turn_end = v[2];
		j->turn_gap = v[3];
		n = (int)fleet_until_check(&j->until, &c->f->cfg->params, now, &why);
		n = (int)fleet_turn_check(&j->turn, &j->turn_end, &j->turn_gap, &c->f->cfg->params,
					  now, &why, (unsigned)n);
	} else {
		j->m.streak = v[0];
		j->m.cool_until = v[1];
		n = (int)fleet_model_check(&j->m, now, FLEET_COOL_MAX_MS, &why);
	}
	refused(c->f, j->kind, (unsigned)n, &why);
	fleet_apply_int(j);
	/* Nothing to write back: a read, or a claim, turn or confirm that
	 * changed nothing. */
	if (j->op == 0 || (j->op >= 3 && !j->claimed && !j->turned))
		return -1;
	/* The train's numbers only while it runs (until is then 0): a record
	 * without them is what a daemon that knows no trains reads. */
	if (j->kind == 'c' && j->turn_end > now)
		n = snprintf(out, cap, "%lld %lld %lld %lld\n", (long long)j->until,
			     (long long)j->turn, (long long)j->turn_end, (long long)j->turn_gap);
	else if (j->kind == 'c')
		n = snprintf(out, cap, "%lld\n", (long long)j->until);
	else
		n = snprintf(out, cap, "%lld %lld\n", (long long)j->m.streak,
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
		struct int_ctx c = { .f = f, .j = &d->ij };

		d->ij.p = &f->cfg->params;
		st = lockfile_update(path, 0, int_update, &c, err, sizeof(err));
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

/* A record whose lock stayed busy: what a look at it shows joins the local
 * copy the decision is then made on, so a daemon that never read the record
 * does not send through a block the others know of. */
static void glance_scope(struct fleet *f, const char *path, const char *key)
{
	struct fleet_scope *local = fleet_local_scope(f, key), seen;
	char buf[LOCKFILE_MAX], err[256];
	size_t len;

	if (local == NULL ||
	    lockfile_glance(path, buf, sizeof(buf), &len, err, sizeof(err)) != LOCKFILE_OK ||
	    len == 0)
		return;
	scope_read(f, &seen, buf, len, clock_wall_ms(f->cfg->clock));
	fleet_scope_merge(local, &seen);
}

/* The scope's record in its file; a busy lock's report or clear is
 * deferred (on_later), a read or an ask decided on the local copy after a
 * look (glance_scope). */
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
			scope_read(f, &j->result, buf, len, clock_wall_ms(f->cfg->clock));
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
	if (st == LOCKFILE_BUSY && (j->op == FLEET_OP_READ || j->op == FLEET_OP_ACQUIRE))
		glance_scope(f, path, key);
	if (st == LOCKFILE_ERROR)
		file_error(f, err);
	else
		LOG_DEBUG("fleet: %s is busy; deciding locally this time", path);
	f->store_busy = st == LOCKFILE_BUSY;
	f->local_decisions++;
	return -1;
}

/* Who holds a credential's probe: its own small record beside the
 * credential's ("member until\n"), so that the credential's record stays
 * what every version reads. It names the prober only while the
 * credential's until is still the claim's. */
static long prober_update(void *ctx, const char *old, size_t len, char *out, size_t cap)
{
	const struct fleet_int_job *j = ctx;
	int n = snprintf(out, cap, "%lld %lld\n", (long long)j->member, (long long)j->until);

	(void)old;
	(void)len;
	return n > 0 && (size_t)n < cap ? n : -1;
}

static void prober_read(struct fleet *f, const char *key, struct fleet_int_job *j)
{
	char path[4200], err[256], buf[64];
	int64_t v[2];
	size_t len;

	record_path(f->store, 'p', key, path, sizeof(path));
	if (lockfile_read(path, f->cfg->lock_wait_ms, buf, sizeof(buf), &len, err,
			  sizeof(err)) == LOCKFILE_OK && len > 0 &&
	    fleet_ints_parse(buf, len, v, 2) == 0 && v[1] == j->until && v[0] > 0)
		j->prober = v[0];
}

static void prober_write(struct fleet *f, const char *key, struct fleet_int_job *j)
{
	char path[4200], err[256];

	record_path(f->store, 'p', key, path, sizeof(path));
	if (lockfile_update(path, f->cfg->lock_wait_ms, prober_update, j, err, sizeof(err)) ==
	    LOCKFILE_ERROR)
		file_error(f, err);
}

/* A credential's record whose lock stayed busy: a train the look shows
 * running is one this ask cannot take a slot of (turn_unsure). */
static void glance_cred(struct fleet *f, const char *path, struct fleet_int_job *j)
{
	char buf[LOCKFILE_MAX], err[256];
	struct fleet_refusal why;
	int64_t now = clock_wall_ms(f->cfg->clock), v[4];
	size_t len;

	if (lockfile_glance(path, buf, sizeof(buf), &len, err, sizeof(err)) != LOCKFILE_OK ||
	    len == 0 || fleet_ints_parse(buf, len, v, 4) != 0)
		return;
	if (fleet_until_check(&v[0], &f->cfg->params, now, &why) +
		    fleet_turn_check(&v[1], &v[2], &v[3], &f->cfg->params, now, &why, 0) == 0 &&
	    v[0] <= now && v[2] > now) {
		j->turn_unsure = true;
		j->turn_gap = v[3];
	}
}

/* The same for a credential's or a model's record. */
static int run_int_user(struct fleet *f, const char *key, struct fleet_int_job *j)
{
	char path[4200], err[256], buf[LOCKFILE_MAX];
	struct int_ctx c = { .f = f, .j = j };
	enum lockfile_status st;
	bool wanted_turn = false;
	size_t len;

	record_path(f->store, j->kind, key, path, sizeof(path));
	if (j->op == 0 || j->op == 3) {
		st = lockfile_read(path, f->cfg->lock_wait_ms, buf, sizeof(buf), &len, err,
				   sizeof(err));
		if (st == LOCKFILE_OK)
			int_update(&c, len > 0 ? buf : NULL, len, buf, 0);
		if (st == LOCKFILE_BUSY && j->op == 3 && j->kind == 'c')
			glance_cred(f, path, j);
		if (st == LOCKFILE_OK && j->op == 3 && j->kind == 'c' && !j->claimed &&
		    j->until > clock_wall_ms(f->cfg->clock))
			prober_read(f, key, j);
		if (st != LOCKFILE_OK || (!j->claimed && !j->turned))
			goto done;
		/* A probe to claim or a turn to take: again under the write
		 * lock, where another daemon may have taken it first. */
		wanted_turn = j->turned;
		j->claimed = j->turned = false;
	}
	st = lockfile_update(path, f->cfg->lock_wait_ms, int_update, &c, err, sizeof(err));
	if (st == LOCKFILE_BUSY && j->op != 3)
		defer_int(f, key, j);
	if (st == LOCKFILE_BUSY && wanted_turn)
		j->turn_unsure = true;
	if (st == LOCKFILE_OK && j->op == 3 && j->claimed)
		prober_write(f, key, j);
	else if (st == LOCKFILE_OK && j->op == 3 && j->until > clock_wall_ms(f->cfg->clock))
		prober_read(f, key, j); /* another daemon claimed it first */
done:
	if (st == LOCKFILE_OK)
		return 0;
	if (st == LOCKFILE_ERROR)
		file_error(f, err);
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

/* The default folder: $XDG_RUNTIME_DIR/retryd/fleet, the runtime dir
 * itself judged first (after `su` without `-`, or `sudo -E`, it is another
 * user's, who could swap records in), and each folder below it ours, 0700. */
static int default_dir(char *out, size_t cap, char *err, size_t errlen)
{
	const char *run = getenv("XDG_RUNTIME_DIR");

	if (run != NULL && run[0] == '/') {
		if (lockfile_dir_owned(run, err, errlen) != 0) {
			char why[512];

			snprintf(why, sizeof(why), "%s", err);
			return errbuf_set(err, errlen, "XDG_RUNTIME_DIR: %s", why);
		}
		if (fsutil_format(out, cap, "%s/retryd", run) != 0)
			goto long_path;
		if (lockfile_dir_check(out, err, errlen) != 0)
			return -1;
		if (fsutil_format(out, cap, "%s/retryd/fleet", run) != 0)
			goto long_path;
		return 0;
	}
	/* /tmp is everyone's: the per-user folder itself must be ours, 0700. */
	snprintf(out, cap, "/tmp/retryd-%u", (unsigned)geteuid());
	if (lockfile_dir_check(out, err, errlen) != 0)
		return -1;
	snprintf(out + strlen(out), cap - strlen(out), "/fleet");
	return 0;
long_path:
	return errbuf_set(err, errlen, "XDG_RUNTIME_DIR is a path too long for the fleet's "
			  "folder in it (%zu bytes at most)", cap - 32);
}

/* Checks (creates, mode 0700) fleet.dir, or the default, and the
 * namespace's folder in it. A path that does not fit is refused, never
 * cut (a cut path is another folder). */
static int open_user(struct fleet *f, char *err, size_t errlen)
{
	const char *given = f->cfg->dir;
	struct fleet_user *u = calloc(1, sizeof(*u));
	char dir[4096];
	size_t n;

	if (u == NULL)
		goto nomem;
	u->lease_fd = -1;
	if (given != NULL && given[0] != '\0') {
		if (fsutil_format(dir, sizeof(dir), "%s", given) != 0) {
			errbuf_set(err, errlen, "fleet.dir is longer than %zu bytes", sizeof(dir) - 1);
			goto fail;
		}
	} else if (default_dir(dir, sizeof(dir), err, errlen) != 0) {
		goto fail;
	}
	if (lockfile_dir_check(dir, err, errlen) != 0)
		goto fail;
	/* Room for "/<kind>-<16 hex>.<slot>" after it in every record path. */
	n = strlen(dir) + strlen(f->ns) + 2;
	if (n + 40 > sizeof(dir)) {
		errbuf_set(err, errlen, "the fleet's folder is a path too long for its records "
			   "(%zu bytes at most): %s/%s", sizeof(dir) - 41, dir, f->ns);
		goto fail;
	}
	u->dir = malloc(n);
	if (u->dir == NULL)
		goto nomem;
	snprintf(u->dir, n, "%s/%s", dir, f->ns);
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

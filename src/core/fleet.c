/* fleet — the shared state of many daemons; see fleet.h. */
#include "core/fleet.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errbuf.h"
#include "base/log.h"
#include "core/fleet_script.h"
#include "core/settings.h"
#include "io/lockfile.h"
#include "io/redis.h"

#define LAT_N 512
#define STATE_FRESH_MS 100
#define HIST_N 11

/* A record as this daemon last knew it: a scope's ('s'), a credential's
 * ('c': exhausted until) or a model's ('m'). */
struct local_rec {
	char kind;
	char *key;  /* owned */
	union {
		struct fleet_scope s;
		int64_t until;
		struct fleet_model m;
	} u;
};

/* A pending Redis ask: what the answer needs, copied. */
struct pending {
	struct fleet_ask q;
	char **strings;   /* owned copies behind q's pointers */
	size_t nstrings;
	fleet_answer_fn cb;
	void *ctx;
	struct redis_call *call;
	/* Set while redis_eval runs: an answer from inside it (Redis down)
	 * goes here instead of to cb, so cb always runs from the loop. */
	struct fleet_answer *sync_out;
	bool *sync_done;
};

struct fleet {
	struct fleet_config cfg;
	char *dir;        /* owned: user mode: <fleet.dir>/<namespace> */
	char *ns;         /* owned */
	char *prefix;     /* owned: redis mode: "retryd:{<ns>}:" */
	struct local_rec *recs;     /* owned */
	size_t nrecs;

	int lease_fd;               /* user mode: the held lease, or -1 */
	bool lease_redis;           /* redis mode: a lease is held */
	char lease_args[3][160];    /* redis mode: provider, cred, model of the lease */
	struct clock_timer renew_timer;

	struct pending *pending;
	char sha1[41];
	int64_t fleet_size;         /* redis mode: the last size seen (>= 1) */
	bool degraded;              /* redis mode: the last call failed */
	uint64_t rng;

	void (*close_done)(void *ctx);
	void *close_ctx;

	/* User mode: writes whose lock was busy, tried again from a timer
	 * (a report lost under contention would be knowledge lost). */
	struct deferred *later;
	size_t nlater;
	struct clock_timer later_timer;

	/* How long asks took (µs), the last LAT_N of them, for get_state. */
	uint32_t lat[LAT_N];
	uint64_t asks;
	uint64_t hist[HIST_N + 1];  /* asks by latency bucket (hist_le) */
	uint64_t ask_started;
	uint64_t local_decisions;   /* records decided on the local copy */
	int64_t rpm_prior;          /* the last request rate the provider announced */
	uint64_t state_read_at;     /* clock_now() + 1 of get_state's last file read; 0: never */
};

const char *fleet_mode_name(enum fleet_mode m)
{
	return m == FLEET_MODE_PROCESS ? "process" : m == FLEET_MODE_USER ? "user" : "redis";
}

static const char *scope_kind_name(enum fleet_scope_kind k)
{
	return k == FLEET_SCOPE_MODEL ? "model" : k == FLEET_SCOPE_CREDENTIAL ? "credential"
									     : "provider";
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

static uint64_t next_rand(struct fleet *f)
{
	/* xorshift64*: only for jitter and the throttle's draw. */
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return f->rng * 2685821657736338717ULL;
}

/* The scope's name: coarser kinds drop the model, then the credential. */
static void scope_name(const struct fleet *f, const char *provider, const char *cred,
		       const char *model, char *out, size_t cap)
{
	switch (f->cfg.scope) {
	case FLEET_SCOPE_PROVIDER:
		snprintf(out, cap, "%s", provider);
		break;
	case FLEET_SCOPE_CREDENTIAL:
		snprintf(out, cap, "%s|%s", provider, cred ? cred : "-");
		break;
	default:
		snprintf(out, cap, "%s|%s|%s", provider, cred ? cred : "-", model);
	}
}

/* Local records. */

/* The local record of that kind and key, made (zeroed; a scope's
 * initialised) the first time; NULL when memory ran out. */
static struct local_rec *local_rec(struct fleet *f, char kind, const char *key)
{
	struct local_rec *grown;

	for (size_t i = 0; i < f->nrecs; i++)
		if (f->recs[i].kind == kind && strcmp(f->recs[i].key, key) == 0)
			return &f->recs[i];
	grown = realloc(f->recs, (f->nrecs + 1) * sizeof(*grown));
	if (grown == NULL)
		return NULL;
	f->recs = grown;
	memset(&grown[f->nrecs], 0, sizeof(*grown));
	grown[f->nrecs].kind = kind;
	grown[f->nrecs].key = strdup(key);
	if (grown[f->nrecs].key == NULL)
		return NULL;
	if (kind == 's')
		fleet_scope_init(&grown[f->nrecs].u.s);
	return &grown[f->nrecs++];
}

static struct fleet_scope *local_scope(struct fleet *f, const char *key)
{
	struct local_rec *r = local_rec(f, 's', key);

	return r != NULL ? &r->u.s : NULL;
}

/* User mode: one file per record, named by a hash of its key. */

static void record_path(const struct fleet *f, char kind, const char *key, char *out, size_t cap)
{
	uint64_t h = fnv64(14695981039346656037ULL, key, strlen(key));

	snprintf(out, cap, "%s/%c-%016" PRIx64, f->dir, kind, h);
}

enum rec_op { OP_ACQUIRE, OP_REPORT, OP_CLEAR, OP_READ };

struct scope_job {
	enum rec_op op;
	struct fleet *f;
	int64_t now;
	bool retry;
	int64_t rand_milli;
	const struct fleet_outcome *out;
	struct fleet_verdict *v;
	int64_t rpm_prior;
	struct fleet_scope result;
};

static void apply_scope(struct scope_job *j, struct fleet_scope *s)
{
	struct fleet_params p = j->f->cfg.params;

	switch (j->op) {
	case OP_ACQUIRE:
		/* A scope that has no rate of its own yet (a key just switched to)
		 * is paced at the one learned for the provider's other scopes. */
		if (j->rpm_prior > 0 && fleet_rules_rpm(s, &p) == 0)
			p.rpm = j->rpm_prior;
		fleet_rules_acquire(s, &p, j->now, j->retry, j->rand_milli, j->v);
		break;
	case OP_REPORT:
		fleet_rules_report(s, &j->f->cfg.params, j->now, j->out);
		break;
	case OP_CLEAR:
		fleet_rules_clear(s);
		break;
	case OP_READ:
		break;
	}
	j->result = *s;
}

static long scope_update(void *ctx, const char *old, size_t len, char *out, size_t cap)
{
	struct scope_job *j = ctx;
	struct fleet_scope s;
	size_t n;

	if (old == NULL || fleet_scope_parse(&s, old, len) != 0)
		fleet_scope_init(&s);
	apply_scope(j, &s);
	if (j->op == OP_READ)
		return -1;
	n = fleet_scope_format(&s, out, cap);
	return n > 0 ? (long)n : -1;
}

/* Runs the job on the scope's record: in its file (user mode), else — and
 * when the file's lock is busy or fails — on the local copy. The local copy
 * ends up equal to what was decided. Returns whether it was decided
 * locally. */
static void defer_scope(struct fleet *f, const char *key, const struct scope_job *j);

static bool run_scope(struct fleet *f, const char *key, struct scope_job *j)
{
	struct fleet_scope *local = local_scope(f, key);
	struct fleet_scope scratch;

	if (f->cfg.mode == FLEET_MODE_USER) {
		char path[4200], err[256], buf[LOCKFILE_MAX];
		enum lockfile_status st;
		size_t len;

		record_path(f, 's', key, path, sizeof(path));
		if (j->op == OP_READ) {
			st = lockfile_read(path, f->cfg.lock_wait_ms, buf, sizeof(buf), &len, err,
					   sizeof(err));
			if (st == LOCKFILE_OK) {
				if (len == 0 || fleet_scope_parse(&j->result, buf, len) != 0)
					fleet_scope_init(&j->result);
				if (local != NULL)
					*local = j->result;
				return false;
			}
		} else {
			st = lockfile_update(path, f->cfg.lock_wait_ms, scope_update, j, err,
					     sizeof(err));
			if (st == LOCKFILE_OK) {
				if (local != NULL)
					*local = j->result;
				return false;
			}
			if (st == LOCKFILE_BUSY && (j->op == OP_REPORT || j->op == OP_CLEAR))
				defer_scope(f, key, j);
		}
		if (st == LOCKFILE_ERROR)
			LOG_WARN("fleet: %s; deciding locally", err);
		else
			LOG_DEBUG("fleet: %s is busy; deciding locally this time", path);
		f->local_decisions++;
	}
	if (local == NULL) {
		fleet_scope_init(&scratch);
		local = &scratch;
	}
	apply_scope(j, local);
	return f->cfg.mode != FLEET_MODE_PROCESS;
}

struct int_job {
	char kind;          /* 'c': a credential's until, 'm': a model's record */
	int op;             /* 0 read, 1 exhaust / model report, 2 clear */
	const struct fleet_params *p;
	int64_t now, reset_ms;
	bool overload, success;
	int64_t after, cooldown_ms;
	int64_t until;
	struct fleet_model m;
};

static void apply_int(struct int_job *j)
{
	if (j->op == 2) {
		j->until = 0;
		memset(&j->m, 0, sizeof(j->m));
	} else if (j->op == 1 && j->kind == 'c') {
		fleet_rules_exhaust(&j->until, j->p, j->now, j->reset_ms);
	} else if (j->op == 1) {
		fleet_rules_model_report(&j->m, j->now, j->overload, j->success, j->after,
					 j->cooldown_ms);
	}
}

static long int_update(void *ctx, const char *old, size_t len, char *out, size_t cap)
{
	struct int_job *j = ctx;
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
	apply_int(j);
	if (j->op == 0)
		return -1;
	n = j->kind == 'c' ? snprintf(out, cap, "%lld\n", (long long)j->until)
			   : snprintf(out, cap, "%lld %lld\n", (long long)j->m.streak,
				      (long long)j->m.cool_until);
	return n > 0 && (size_t)n < cap ? n : -1;
}

/* The same for a credential's or a model's record. */
static void defer_int(struct fleet *f, const char *key, const struct int_job *j);

static void run_int(struct fleet *f, const char *key, struct int_job *j)
{
	struct local_rec *rec = local_rec(f, j->kind, key);
	int64_t *cred = rec != NULL && j->kind == 'c' ? &rec->u.until : NULL;
	struct fleet_model *model = rec != NULL && j->kind == 'm' ? &rec->u.m : NULL;

	if (f->cfg.mode == FLEET_MODE_USER) {
		char path[4200], err[256], buf[LOCKFILE_MAX];
		enum lockfile_status st;
		size_t len;

		record_path(f, j->kind, key, path, sizeof(path));
		if (j->op == 0) {
			st = lockfile_read(path, f->cfg.lock_wait_ms, buf, sizeof(buf), &len, err,
					   sizeof(err));
			if (st == LOCKFILE_OK)
				int_update(j, len > 0 ? buf : NULL, len, buf, 0);
		} else {
			st = lockfile_update(path, f->cfg.lock_wait_ms, int_update, j, err,
					     sizeof(err));
			if (st == LOCKFILE_BUSY)
				defer_int(f, key, j);
		}
		if (st == LOCKFILE_OK) {
			if (cred != NULL)
				*cred = j->until;
			if (model != NULL)
				*model = j->m;
			return;
		}
		f->local_decisions++;
	}
	if (cred != NULL)
		j->until = *cred;
	if (model != NULL)
		j->m = *model;
	apply_int(j);
	if (cred != NULL)
		*cred = j->until;
	if (model != NULL)
		*model = j->m;
}

/* Writes whose lock was busy: tried again every 2 ms, for up to half a
 * second, then given up (logged at debug). At most LATER_MAX wait. */
#define LATER_MAX 64
#define LATER_TRIES 250

struct deferred {
	char kind;                 /* 's', 'c' or 'm' */
	char key[400];
	enum rec_op op;            /* 's': OP_REPORT or OP_CLEAR */
	struct fleet_outcome out;  /* 's' */
	struct int_job ij;         /* 'c', 'm' */
	int64_t now;               /* when it happened */
	int tries;
};

static void on_later(struct clock_timer *timer, void *ctx);

static struct deferred *defer_slot(struct fleet *f, const char *key)
{
	struct deferred *d;

	if (f->nlater >= LATER_MAX) {
		LOG_DEBUG("fleet: too many reports waiting for their locks; %s stays local", key);
		return NULL;
	}
	if (f->later == NULL) {
		f->later = calloc(LATER_MAX, sizeof(*f->later));
		if (f->later == NULL)
			return NULL;
	}
	d = &f->later[f->nlater++];
	memset(d, 0, sizeof(*d));
	snprintf(d->key, sizeof(d->key), "%s", key);
	if (!clock_timer_active(&f->later_timer))
		clock_timer_start(f->cfg.clock, &f->later_timer, 2, on_later, f);
	return d;
}

static void defer_scope(struct fleet *f, const char *key, const struct scope_job *j)
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

static void defer_int(struct fleet *f, const char *key, const struct int_job *j)
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

	record_path(f, d->kind, d->key, path, sizeof(path));
	if (d->kind == 's') {
		struct fleet_verdict v;
		struct scope_job j = { .op = d->op, .f = f, .now = d->now, .out = &d->out, .v = &v };
		struct fleet_scope *local;

		st = lockfile_update(path, 0, scope_update, &j, err, sizeof(err));
		if (st == LOCKFILE_OK && (local = local_scope(f, d->key)) != NULL)
			*local = j.result;
	} else {
		d->ij.p = &f->cfg.params;
		st = lockfile_update(path, 0, int_update, &d->ij, err, sizeof(err));
	}
	return st != LOCKFILE_BUSY;  /* done, or an error that will not pass */
}

static void on_later(struct clock_timer *timer, void *ctx)
{
	struct fleet *f = ctx;
	size_t i = 0;

	(void)timer;
	while (i < f->nlater) {
		struct deferred *d = &f->later[i];

		if (retry_write(f, d) || ++d->tries >= LATER_TRIES) {
			if (d->tries >= LATER_TRIES)
				LOG_DEBUG("fleet: %s stayed locked; its report stays local", d->key);
			f->later[i] = f->later[--f->nlater];
			continue;
		}
		i++;
	}
	if (f->nlater > 0)
		clock_timer_start(f->cfg.clock, &f->later_timer, 2, on_later, f);
}

/* A credential's or a model's record key: "provider|name". */
static void pair_key(const char *provider, const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "%s|%s", provider, name);
}

/* Settings. */

int fleet_config_from_settings(struct fleet_config *cfg, struct settings *settings,
			       const char *provider, char *err, size_t errlen)
{
	const char *mode = settings_get_string(settings, "fleet.mode");
	const char *scope = settings_get_string(settings, "fleet.scope");
	const json_t *budget = settings_get(settings, "fleet.retryBudget");
	const json_t *per = settings_get(settings, "fleet.providerScopes"), *v;
	const char *name;

	json_object_foreach((json_t *)per, name, v) {
		const char *k = json_string_value(v);

		if (k == NULL || (strcmp(k, "model") != 0 && strcmp(k, "credential") != 0 &&
				  strcmp(k, "provider") != 0))
			return errbuf_set(err, errlen,
					  "fleet.providerScopes.%s must be \"model\", \"credential\" "
					  "or \"provider\"", name);
		if (strcmp(name, provider) == 0)
			scope = k;
	}

	memset(cfg, 0, sizeof(*cfg));
	fleet_params_default(&cfg->params);
	cfg->mode = strcmp(mode, "process") == 0 ? FLEET_MODE_PROCESS
		  : strcmp(mode, "redis") == 0   ? FLEET_MODE_REDIS
						 : FLEET_MODE_USER;
	cfg->scope = strcmp(scope, "provider") == 0	  ? FLEET_SCOPE_PROVIDER
		     : strcmp(scope, "credential") == 0 ? FLEET_SCOPE_CREDENTIAL
							: FLEET_SCOPE_MODEL;
	cfg->ns = settings_get_string(settings, "fleet.namespace");
	for (const char *c = cfg->ns; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.')) {
			errbuf_set(err, errlen,
				   "fleet.namespace \"%s\": only letters, digits, '-', '_' and '.'",
				   cfg->ns);
			return -1;
		}
	}
	cfg->dir = settings_string(settings, "fleet.dir", NULL);
	cfg->params.min_block_ms = settings_get_int(settings, "fleet.minSharedBlockMs");
	cfg->params.max_block_ms = settings_get_int(settings, "fleet.maxSharedBlockMs");
	cfg->params.rpm = settings_get_int(settings, "fleet.rpm");
	cfg->params.probe_interval_ms = settings_get_int(settings, "fleet.probeIntervalMs");
	cfg->params.open_after = settings_get_int(settings, "fleet.openAfter");
	if (json_is_object(budget)) {
		cfg->params.budget_max = (int64_t)(json_number_value(
			json_object_get(budget, "maxTokens")) * 1000);
		cfg->params.budget_ratio = (int64_t)(json_number_value(
			json_object_get(budget, "tokenRatio")) * 1000);
	} else {
		cfg->params.budget_max = 0;
	}
	cfg->concurrency = (int)settings_get_int(settings, "fleet.concurrency");
	cfg->lease_ttl_ms = settings_get_int(settings, "fleet.leaseTtlMs");
	cfg->lock_wait_ms = 10;
	if (cfg->mode == FLEET_MODE_PROCESS) {
		/* Alone: today's behaviour, the daemon's own retry policy only. */
		cfg->params.open_after = 0;
		cfg->params.budget_max = 0;
	}
	return 0;
}

/* Life. */

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

struct fleet *fleet_new(const struct fleet_config *cfg, char *err, size_t errlen)
{
	struct fleet *f = calloc(1, sizeof(*f));
	char dir[4096];

	if (f == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	f->cfg = *cfg;
	f->lease_fd = -1;
	f->fleet_size = 1;
	f->rng = (uint64_t)cfg->member * 0x9E3779B97F4A7C15ULL | 1;
	f->ns = strdup(cfg->ns ? cfg->ns : "default");
	f->cfg.ns = f->ns;
	f->cfg.dir = NULL;
	if (f->ns == NULL)
		goto nomem;
	if (cfg->mode == FLEET_MODE_USER) {
		if (cfg->dir != NULL && cfg->dir[0] != '\0')
			snprintf(dir, sizeof(dir), "%s", cfg->dir);
		else if (default_dir(dir, sizeof(dir), err, errlen) != 0)
			goto fail;
		if (lockfile_dir_check(dir, err, errlen) != 0)
			goto fail;
		f->dir = malloc(strlen(dir) + strlen(f->ns) + 2);
		if (f->dir == NULL)
			goto nomem;
		sprintf(f->dir, "%s/%s", dir, f->ns);
		if (lockfile_dir_check(f->dir, err, errlen) != 0)
			goto fail;
	}
	if (cfg->mode == FLEET_MODE_REDIS) {
		f->prefix = malloc(strlen(f->ns) + 16);
		if (f->prefix == NULL)
			goto nomem;
		sprintf(f->prefix, "retryd:{%s}:", f->ns);
		redis_script_sha1(fleet_script_text, f->sha1);
	}
	return f;
nomem:
	errbuf_set(err, errlen, "out of memory");
fail:
	if (cfg->redis != NULL && f->cfg.redis == cfg->redis)
		f->cfg.redis = NULL; /* still the caller's on failure */
	free(f->ns);
	free(f->dir);
	free(f->prefix);
	free(f);
	return NULL;
}

static void pending_free(struct pending *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nstrings; i++)
		free(p->strings[i]);
	free(p->strings);
	free((void *)p->q.creds);
	free((void *)p->q.models);
	free(p);
}

void fleet_cancel(struct fleet *f)
{
	if (f->pending == NULL)
		return;
	redis_cancel(f->cfg.redis, f->pending->call);
	pending_free(f->pending);
	f->pending = NULL;
}

static void free_all(struct fleet *f)
{
	for (size_t i = 0; i < f->nrecs; i++)
		free(f->recs[i].key);
	free(f->recs);
	free(f->later);
	free(f->ns);
	free(f->dir);
	free(f->prefix);
	free(f);
}

static void on_redis_closed(void *ctx)
{
	struct fleet *f = ctx;
	void (*done)(void *) = f->close_done;
	void *dctx = f->close_ctx;

	free_all(f);
	if (done)
		done(dctx);
}

void fleet_close(struct fleet *f, void (*done)(void *ctx), void *ctx)
{
	fleet_cancel(f);
	fleet_done(f);
	clock_timer_stop(f->cfg.clock, &f->renew_timer);
	clock_timer_stop(f->cfg.clock, &f->later_timer);
	if (f->cfg.redis != NULL) {
		f->close_done = done;
		f->close_ctx = ctx;
		redis_close(f->cfg.redis, on_redis_closed, f);
		return;
	}
	free_all(f);
	if (done)
		done(ctx);
}

/* Asking. */

/* The credential and model to use, from what is known here (the user
 * store's files, else the local records). */
static void pick(struct fleet *f, const struct fleet_ask *q, int64_t now, struct fleet_answer *a)
{
	char key[512];

	a->cred = q->ncreds > 0 ? -1 : 0;
	a->cred_until = 0;
	for (size_t i = 0; i < q->ncreds; i++) {
		struct int_job j = { .kind = 'c', .op = 0, .p = &f->cfg.params, .now = now };

		pair_key(q->provider, q->creds[i], key, sizeof(key));
		run_int(f, key, &j);
		if (j.until <= now) {
			a->cred = (int)i;
			break;
		}
		if (a->cred_until == 0 || j.until < a->cred_until)
			a->cred_until = j.until;
	}
	a->model = 0;
	for (size_t i = 0; i < q->nmodels; i++) {
		struct int_job j = { .kind = 'm', .op = 0, .p = &f->cfg.params, .now = now };

		pair_key(q->provider, q->models[i], key, sizeof(key));
		run_int(f, key, &j);
		if (j.m.cool_until <= now) {
			a->model = (int)i;
			break;
		}
	}
}

static void lease_local(struct fleet *f, const char *scope, struct fleet_answer *a)
{
	char prefix[4200], err[256];
	int fd;

	if (f->cfg.concurrency <= 0 || a->wait_ms > 0 || f->cfg.mode != FLEET_MODE_USER)
		return;
	record_path(f, 'l', scope, prefix, sizeof(prefix));
	fd = lockfile_lease_take(prefix, f->cfg.concurrency, err, sizeof(err));
	if (fd >= 0) {
		f->lease_fd = fd;
		a->lease = true;
	} else if (fd == -1) {
		/* Every slot held: look again soon (the kernel frees a dead
		 * holder's slot; no one tells us, so this polls). */
		a->wait_ms = 50 + (int64_t)(next_rand(f) % 100);
		a->reason = FLEET_CONCURRENCY;
		a->reserved = false;
	} else {
		LOG_WARN("fleet: %s; running without a lease", err);
	}
}

/* Whether the scope's record holds a block now, or fails for everyone
 * (read, not changed): a slot reserved before either must wait again. */
static bool blocked(struct fleet *f, const char *scope, int64_t now)
{
	struct scope_job j = { .op = OP_READ, .f = f };

	run_scope(f, scope, &j);
	return j.result.block_until > now || (j.result.open && j.result.shared);
}

/* A wait that is not a reserved slot (the probe, the budget, a lease) is
 * looked at again after at most a quarter of the probe interval, jittered:
 * nothing tells a waiter that the circuit closed or a lease came free, and
 * a fleet should come back within moments of its provider. */
static void poll_sooner(struct fleet *f, struct fleet_answer *a)
{
	int64_t cap = f->cfg.params.probe_interval_ms / 4;

	if (a->wait_ms <= 0 || a->reserved || a->cred < 0)
		return;
	if (cap < 100)
		cap = 100;
	cap = cap * 3 / 4 + (int64_t)(next_rand(f) % (uint64_t)(cap / 2 + 1));
	if (a->wait_ms > cap)
		a->wait_ms = cap;
}

/* Process and user mode, and Redis mode's fall back. */
static void ask_local(struct fleet *f, const struct fleet_ask *q, struct fleet_answer *a)
{
	int64_t now = clock_wall_ms(f->cfg.clock);
	struct fleet_verdict v;
	struct scope_job j = { .op = OP_ACQUIRE, .f = f, .now = now, .retry = q->retry, .v = &v };
	const char *cred;

	memset(a, 0, sizeof(*a));
	pick(f, q, now, a);
	cred = q->ncreds > 0 && a->cred >= 0 ? q->creds[a->cred] : NULL;
	scope_name(f, q->provider, cred, q->models[a->model], a->scope, sizeof(a->scope));
	if (a->cred < 0)
		return;
	if (q->held && a->cred <= 0 && a->model == 0 && !blocked(f, a->scope, now)) {
		/* The slot reserved before is this one's: go (a lease is still
		 * needed). Another credential or model means another scope, and
		 * a block that came meanwhile a new wait. */
		lease_local(f, a->scope, a);
		return;
	}
	j.rpm_prior = f->rpm_prior;
	for (size_t i = 0; j.rpm_prior == 0 && i < q->ncreds; i++) {
		/* Nor did this daemon learn a rate: the one the fleet learned for
		 * the provider and model under another of these credentials. */
		struct scope_job r = { .op = OP_READ, .f = f };
		char other[160];

		if ((int)i == a->cred)
			continue;
		scope_name(f, q->provider, q->creds[i], q->models[a->model], other, sizeof(other));
		run_scope(f, other, &r);
		j.rpm_prior = r.result.rpm_learned;
	}
	j.rand_milli = (int64_t)(next_rand(f) % 1000);
	if (f->cfg.mode == FLEET_MODE_REDIS)
		f->cfg.params.divide = f->fleet_size;
	a->local = run_scope(f, a->scope, &j);
	f->cfg.params.divide = 1;
	a->wait_ms = v.wait_ms;
	a->reason = v.reason;
	a->probe = v.probe;
	a->reserved = v.wait_ms > 0 && (v.reason == FLEET_SERVER_BLOCK || v.reason == FLEET_PACING);
	lease_local(f, a->scope, a);
	poll_sooner(f, a);
}

/* Upper bounds (µs) of the latency histogram's buckets; one more bucket
 * holds the rest. A histogram, unlike a percentile, adds up across a
 * fleet's daemons. */
static const uint32_t hist_le[HIST_N] = { 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000,
					  50000, 100000 };

/* One ask's latency, from fleet_ask to its answer. */
static void took(struct fleet *f)
{
	uint64_t us = clock_precise_us() - f->ask_started;
	size_t b = 0;

	f->lat[f->asks++ % LAT_N] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	while (b < HIST_N && us > hist_le[b])
		b++;
	f->hist[b]++;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The 99th percentile of the asks kept, in µs. */
static uint32_t p99(const struct fleet *f)
{
	uint32_t sorted[LAT_N];
	size_t n = f->asks < LAT_N ? (size_t)f->asks : LAT_N;

	if (n == 0)
		return 0;
	memcpy(sorted, f->lat, n * sizeof(sorted[0]));
	qsort(sorted, n, sizeof(sorted[0]), cmp_u32);
	return sorted[(n * 99 + 99) / 100 - 1];
}

/* Redis mode. The script's contract is at the top of core/fleet.lua. */

static void start_renew(struct fleet *f);

/* The 11 PARAMS of every script op, in fleet.lua's order, as text. */
static void params_args(const struct fleet_params *p, char buf[11][24], const char **out)
{
	const int64_t v[11] = { p->min_block_ms, p->max_block_ms, p->rpm, p->probe_interval_ms,
				p->open_after, p->window_ms, p->k_milli, p->throttle_min,
				p->budget_max, p->budget_ratio, p->divide };

	for (int i = 0; i < 11; i++) {
		snprintf(buf[i], 24, "%lld", (long long)v[i]);
		out[i] = buf[i];
	}
}

static void went_degraded(struct fleet *f, enum redis_status st)
{
	if (!f->degraded)
		LOG_WARN("fleet: redis %s (%s); deciding on local records until it is back",
			 st == REDIS_TIMEOUT ? "did not answer in time" : "is unreachable",
			 redis_last_error(f->cfg.redis));
	f->degraded = true;
}

static void came_back(struct fleet *f)
{
	if (f->degraded)
		LOG_WARN("fleet: redis is back; sharing again");
	f->degraded = false;
}

static int64_t elem_int(const struct redis_value *v, size_t i)
{
	if (v == NULL || v->type != REDIS_V_ARRAY || i >= v->n || v->elems[i].type != REDIS_V_INT)
		return 0;
	return v->elems[i].i;
}

static void on_ask_reply(void *ctx, enum redis_status st, const struct redis_value *v)
{
	struct fleet *f = ctx;
	struct pending *p = f->pending;
	struct fleet_answer a;

	f->pending = NULL;
	if (st == REDIS_OK && v->type == REDIS_V_ARRAY && v->n >= 10) {
		const char *cred;
		struct fleet_scope *local;

		came_back(f);
		memset(&a, 0, sizeof(a));
		a.wait_ms = elem_int(v, 0);
		a.reason = (enum fleet_reason)elem_int(v, 1);
		a.probe = elem_int(v, 2) != 0;
		a.cred = (int)elem_int(v, 3);
		a.cred_until = elem_int(v, 4);
		a.model = (int)elem_int(v, 5);
		if (a.model < 0 || (size_t)a.model >= p->q.nmodels)
			a.model = 0;
		if (a.cred >= (int)p->q.ncreds)
			a.cred = 0; /* not one we listed: the one in use */
		f->fleet_size = elem_int(v, 6) > 0 ? elem_int(v, 6) : 1;
		a.lease = elem_int(v, 8) != 0;
		a.reserved = a.wait_ms > 0 &&
			     (a.reason == FLEET_SERVER_BLOCK || a.reason == FLEET_PACING);
		cred = p->q.ncreds > 0 && a.cred >= 0 ? p->q.creds[a.cred] : NULL;
		scope_name(f, p->q.provider, cred, p->q.models[a.model], a.scope, sizeof(a.scope));
		local = local_scope(f, a.scope);
		if (local != NULL && elem_int(v, 7) > local->block_until)
			local->block_until = elem_int(v, 7);
		if (a.lease) {
			f->lease_redis = true;
			snprintf(f->lease_args[0], sizeof(f->lease_args[0]), "%s", p->q.provider);
			snprintf(f->lease_args[1], sizeof(f->lease_args[1]), "%s", cred ? cred : "");
			snprintf(f->lease_args[2], sizeof(f->lease_args[2]), "%s",
				 p->q.models[a.model]);
		}
	} else {
		if (st == REDIS_OK)
			LOG_WARN("fleet: redis answered the ask with %s; deciding locally",
				 v->type == REDIS_V_ERR ? v->s : "an unexpected reply");
		else
			went_degraded(f, st);
		if (st == REDIS_CLOSED) {
			pending_free(p);
			return;
		}
		ask_local(f, &p->q, &a);
		a.local = true;
		f->local_decisions++;
	}
	if (st == REDIS_OK && v->type == REDIS_V_ARRAY)
		poll_sooner(f, &a);
	took(f);
	LOG_DEBUG("fleet: %s: %s %lld ms%s%s", a.scope, fleet_reason_name(a.reason),
		  (long long)a.wait_ms, a.probe ? " (the probe)" : "",
		  a.local ? " (decided locally)" : "");
	if (a.lease)
		start_renew(f);
	if (p->sync_out != NULL) {
		*p->sync_out = a;
		*p->sync_done = true;
	} else {
		p->cb(p->ctx, &a);
	}
	pending_free(p);
}

static char *keep(struct pending *p, const char *s)
{
	char *c = strdup(s ? s : "");

	if (c != NULL)
		p->strings[p->nstrings++] = c;
	return c;
}

static struct pending *pending_new(const struct fleet_ask *q)
{
	struct pending *p = calloc(1, sizeof(*p));
	size_t n = 1 + q->ncreds + q->nmodels;

	if (p == NULL)
		return NULL;
	p->strings = calloc(n, sizeof(char *));
	p->q.creds = calloc(q->ncreds + 1, sizeof(char *));
	p->q.models = calloc(q->nmodels + 1, sizeof(char *));
	if (p->strings == NULL || p->q.creds == NULL || p->q.models == NULL)
		goto fail;
	p->q = (struct fleet_ask){ .creds = p->q.creds, .models = p->q.models,
				   .ncreds = q->ncreds, .nmodels = q->nmodels,
				   .retry = q->retry, .held = q->held };
	if ((p->q.provider = keep(p, q->provider)) == NULL)
		goto fail;
	for (size_t i = 0; i < q->ncreds; i++)
		if ((((const char **)p->q.creds)[i] = keep(p, q->creds[i])) == NULL)
			goto fail;
	for (size_t i = 0; i < q->nmodels; i++)
		if ((((const char **)p->q.models)[i] = keep(p, q->models[i])) == NULL)
			goto fail;
	return p;
fail:
	pending_free(p);
	return NULL;
}

int fleet_ask(struct fleet *f, const struct fleet_ask *q, struct fleet_answer *a,
	      fleet_answer_fn cb, void *ctx)
{
	struct pending *p;
	struct redis_call *call;
	bool sync_done = false;
	const char *args[64 + 40];
	char nums[11][24], small[8][24];
	size_t n = 0;

	fleet_cancel(f);
	f->ask_started = clock_precise_us();
	if (f->cfg.mode != FLEET_MODE_REDIS || q->ncreds > 32 || q->nmodels > 32) {
		ask_local(f, q, a);
		took(f);
		LOG_DEBUG("fleet: %s: %s %lld ms%s%s", a->scope, fleet_reason_name(a->reason),
			  (long long)a->wait_ms, a->probe ? " (the probe)" : "",
			  a->local ? " (decided locally)" : "");
		return 1;
	}
	p = pending_new(q);
	if (p == NULL) {
		ask_local(f, q, a);
		return 1;
	}
	p->cb = cb;
	p->ctx = ctx;
	snprintf(small[0], 24, "%lld", (long long)f->cfg.member);
	snprintf(small[1], 24, "%d", q->retry ? 1 : 0);
	snprintf(small[2], 24, "%lld", (long long)(next_rand(f) % 1000));
	snprintf(small[3], 24, "%zu", q->ncreds);
	snprintf(small[4], 24, "%zu", q->nmodels);
	snprintf(small[5], 24, "%d", f->cfg.concurrency);
	snprintf(small[6], 24, "%lld", (long long)f->cfg.lease_ttl_ms);
	args[n++] = "ask";
	args[n++] = "-1";
	args[n++] = small[0];
	args[n++] = scope_kind_name(f->cfg.scope);
	args[n++] = q->provider;
	args[n++] = small[1];
	args[n++] = small[2];
	params_args(&f->cfg.params, nums, args + n);
	n += 11;
	args[n++] = small[3];
	for (size_t i = 0; i < q->ncreds; i++)
		args[n++] = q->creds[i];
	args[n++] = small[4];
	for (size_t i = 0; i < q->nmodels; i++)
		args[n++] = q->models[i];
	args[n++] = small[5];
	args[n++] = small[6];
	args[n++] = small[0]; /* the lease holder: this daemon */
	args[n++] = q->held ? "1" : "0";
	snprintf(small[7], 24, "%lld", (long long)f->rpm_prior);
	args[n++] = small[7];
	f->pending = p;
	p->sync_out = a;
	p->sync_done = &sync_done;
	call = redis_eval(f->cfg.redis, f->sha1, fleet_script_text, 1,
			  (const char *const *)&f->prefix, n, args, on_ask_reply, f);
	if (sync_done)
		return 1; /* answered from inside redis_eval (down): p is gone */
	p->call = call;
	p->sync_out = NULL;
	p->sync_done = NULL;
	return 0;
}

/* Telling. */

static void on_tell_reply(void *ctx, enum redis_status st, const struct redis_value *v)
{
	struct fleet *f = ctx;

	if (st == REDIS_OK && v->type != REDIS_V_ERR)
		came_back(f);
	else if (st == REDIS_OK)
		LOG_WARN("fleet: redis answered a report with %s", v->s);
	else if (st != REDIS_CLOSED)
		went_degraded(f, st);
}

static void tell_redis(struct fleet *f, const struct fleet_tell *t)
{
	static const char *const kinds[] = { "success", "answered", "server", "local" };
	const char *args[40];
	char nums[11][24], small[8][24];
	size_t n = 0;

	snprintf(small[0], 24, "%lld", (long long)f->cfg.member);
	snprintf(small[1], 24, "%lld", (long long)t->out.block_ms);
	snprintf(small[2], 24, "%lld", (long long)t->out.rpm_limit);
	snprintf(small[3], 24, "%lld", (long long)t->usage_reset_ms);
	snprintf(small[4], 24, "%d", t->overload ? 1 : 0);
	snprintf(small[5], 24, "%d", t->out.kind == FLEET_OUT_SUCCESS ? 1 : 0);
	snprintf(small[6], 24, "%lld", (long long)t->fallback_after);
	snprintf(small[7], 24, "%lld", (long long)t->cooldown_ms);
	args[n++] = "tell";
	args[n++] = "-1";
	args[n++] = small[0];
	args[n++] = scope_kind_name(f->cfg.scope);
	args[n++] = t->provider;
	args[n++] = t->cred ? t->cred : "";
	args[n++] = t->model;
	args[n++] = kinds[t->out.kind];
	args[n++] = small[1];
	args[n++] = small[2];
	params_args(&f->cfg.params, nums, args + n);
	n += 11;
	for (int i = 3; i < 8; i++)
		args[n++] = small[i];
	/* Fire and forget: the reply only updates the link's state. */
	redis_eval(f->cfg.redis, f->sha1, fleet_script_text, 1, (const char *const *)&f->prefix, n,
		   args, on_tell_reply, f);
}

void fleet_tell(struct fleet *f, const struct fleet_tell *t)
{
	int64_t now = clock_wall_ms(f->cfg.clock);
	char scope[160], key[512];
	struct fleet_outcome out = t->out;
	struct scope_job j = { .op = OP_REPORT, .f = f, .now = now, .out = &out };

	out.member = f->cfg.member;
	if (t->out.rpm_limit > 0)
		f->rpm_prior = t->out.rpm_limit;

	scope_name(f, t->provider, t->cred, t->model, scope, sizeof(scope));
	run_scope(f, scope, &j);
	if (t->usage_reset_ms >= 0 && t->cred != NULL) {
		struct int_job c = { .kind = 'c', .op = 1, .p = &f->cfg.params, .now = now,
				     .reset_ms = t->usage_reset_ms };

		pair_key(t->provider, t->cred, key, sizeof(key));
		run_int(f, key, &c);
	}
	if (t->out.kind != FLEET_OUT_LOCAL) {
		struct int_job m = { .kind = 'm', .op = 1, .p = &f->cfg.params, .now = now,
				     .overload = t->overload,
				     .success = t->out.kind == FLEET_OUT_SUCCESS,
				     .after = t->fallback_after, .cooldown_ms = t->cooldown_ms };

		pair_key(t->provider, t->model, key, sizeof(key));
		run_int(f, key, &m);
	}
	if (f->cfg.mode == FLEET_MODE_REDIS)
		tell_redis(f, t);
}

static void on_lease_reply(void *ctx, enum redis_status st, const struct redis_value *v)
{
	(void)v;
	if (st != REDIS_OK && st != REDIS_CLOSED)
		went_degraded(ctx, st);
}

static void lease_call(struct fleet *f, bool renew)
{
	const char *args[8];
	char member[24], ttl[24];
	size_t n = 0;

	snprintf(member, sizeof(member), "%lld", (long long)f->cfg.member);
	snprintf(ttl, sizeof(ttl), "%lld", (long long)f->cfg.lease_ttl_ms);
	/* release SCOPE holder; renew now SCOPE holder ttlMs */
	args[n++] = renew ? "renew" : "release";
	if (renew)
		args[n++] = "-1";
	args[n++] = scope_kind_name(f->cfg.scope);
	args[n++] = f->lease_args[0];
	args[n++] = f->lease_args[1];
	args[n++] = f->lease_args[2];
	args[n++] = member;
	if (renew)
		args[n++] = ttl;
	redis_eval(f->cfg.redis, f->sha1, fleet_script_text, 1, (const char *const *)&f->prefix, n,
		   args, on_lease_reply, f);
}

static void on_renew(struct clock_timer *timer, void *ctx)
{
	struct fleet *f = ctx;

	(void)timer;
	if (!f->lease_redis)
		return;
	lease_call(f, true);
	start_renew(f);
}

static void start_renew(struct fleet *f)
{
	int64_t every = f->cfg.lease_ttl_ms / 3;

	clock_timer_start(f->cfg.clock, &f->renew_timer, (uint64_t)(every > 0 ? every : 1),
			  on_renew, f);
}

void fleet_done(struct fleet *f)
{
	if (f->lease_fd >= 0) {
		lockfile_lease_release(f->lease_fd);
		f->lease_fd = -1;
	}
	if (f->lease_redis) {
		f->lease_redis = false;
		clock_timer_stop(f->cfg.clock, &f->renew_timer);
		lease_call(f, false);
	}
}

/* Looking. */

int64_t fleet_known_block(struct fleet *f, const char *provider, const char *cred,
			  const char *model)
{
	char scope[160];
	struct fleet_scope *s;

	scope_name(f, provider, cred, model, scope, sizeof(scope));
	s = local_scope(f, scope);
	return s != NULL ? s->block_until : 0;
}

static void on_clear_reply(void *ctx, enum redis_status st, const struct redis_value *v)
{
	(void)ctx;
	if (st == REDIS_OK && v->type == REDIS_V_INT)
		LOG_INFO("fleet: fleet_clear reset %lld shared record(s)", (long long)v->i);
	else if (st != REDIS_CLOSED)
		LOG_WARN("fleet: fleet_clear could not reach redis; the shared block stays until "
			 "it ends");
}

enum fleet_mode fleet_config_mode(const struct fleet *f)
{
	return f->cfg.mode;
}

int fleet_clear(struct fleet *f, const char *provider, const char *cred, const char *model,
		char *scope, size_t scope_cap)
{
	char key[512];
	struct scope_job j = { .op = OP_CLEAR, .f = f };
	int n = 0;

	scope_name(f, provider, cred, model, scope, scope_cap);
	run_scope(f, scope, &j);
	n++;
	if (cred != NULL) {
		struct int_job c = { .kind = 'c', .op = 2, .p = &f->cfg.params };

		pair_key(provider, cred, key, sizeof(key));
		run_int(f, key, &c);
		n++;
	}
	{
		struct int_job m = { .kind = 'm', .op = 2, .p = &f->cfg.params };

		pair_key(provider, model, key, sizeof(key));
		run_int(f, key, &m);
		n++;
	}
	if (f->cfg.mode == FLEET_MODE_REDIS) {
		const char *args[5] = { "clear", scope_kind_name(f->cfg.scope), provider,
					cred ? cred : "", model };

		redis_eval(f->cfg.redis, f->sha1, fleet_script_text, 1,
			   (const char *const *)&f->prefix, 5, args, on_clear_reply, f);
	}
	return n;
}

json_t *fleet_state(struct fleet *f, const char *provider, const char *cred, const char *model)
{
	char scope[160];
	struct fleet_scope s;
	struct scope_job j = { .op = OP_READ, .f = f };
	int64_t now = clock_wall_ms(f->cfg.clock), rpm;
	json_t *o;

	scope_name(f, provider, cred, model, scope, sizeof(scope));
	/* get_state is a hot command (clients poll it, pipelined): the shared
	 * record is read at most every STATE_FRESH_MS, the local copy (which
	 * that read and every ask and report refresh) answers in between. */
	if (f->cfg.mode == FLEET_MODE_USER &&
	    (clock_now(f->cfg.clock) >= f->state_read_at + STATE_FRESH_MS ||
	     f->state_read_at == 0)) {
		run_scope(f, scope, &j);
		f->state_read_at = clock_now(f->cfg.clock) + 1;
		s = j.result;
	} else {
		struct fleet_scope *local = local_scope(f, scope);

		if (local != NULL)
			s = *local;
		else
			fleet_scope_init(&s);
	}
	rpm = fleet_rules_rpm(&s, &f->cfg.params);
	o = json_pack("{s:s, s:s, s:s, s:b, s:b, s:b}", "mode", fleet_mode_name(f->cfg.mode),
		      "scopeKind", scope_kind_name(f->cfg.scope), "scope", scope, "connected",
		      f->cfg.mode != FLEET_MODE_REDIS || redis_connected(f->cfg.redis),
		      "degraded", f->cfg.mode == FLEET_MODE_REDIS && f->degraded, "open",
		      s.open != 0 && s.shared != 0);
	if (o == NULL)
		return NULL;
	if (s.block_until > now) {
		json_object_set_new(o, "blockedUntil", json_integer(s.block_until));
		json_object_set_new(o, "blockedForMs", json_integer(s.block_until - now));
	}
	if (rpm > 0)
		json_object_set_new(o, "rpm", json_integer(rpm));
	if (f->cfg.mode == FLEET_MODE_REDIS)
		json_object_set_new(o, "members", json_integer(f->fleet_size));
	if (f->cfg.concurrency > 0)
		json_object_set_new(o, "concurrency", json_integer(f->cfg.concurrency));
	json_object_set_new(o, "asks", json_integer((json_int_t)f->asks));
	json_object_set_new(o, "localDecisions", json_integer((json_int_t)f->local_decisions));
	json_object_set_new(o, "askP99Us", json_integer(p99(f)));
	{
		json_t *h = json_object();
		char le[16];

		for (size_t b = 0; h != NULL && b <= HIST_N; b++) {
			if (b < HIST_N)
				snprintf(le, sizeof(le), "%u", (unsigned)hist_le[b]);
			else
				snprintf(le, sizeof(le), "more");
			json_object_set_new(h, le, json_integer((json_int_t)f->hist[b]));
		}
		json_object_set_new(o, "askLatencyUs", h);
	}
	return o;
}

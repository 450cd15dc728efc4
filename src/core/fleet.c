/* fleet — the shared state of many daemons; see fleet.h. Here: the
 * configuration, the local records and the one algorithm on them, and the
 * dispatch to the store of fleet.mode (core/fleet_store.h). The process
 * store is the local records alone; the user and the Redis store are
 * core/fleet_user.c and core/fleet_redis.c. */
#include "core/fleet.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/errbuf.h"
#include "base/log.h"
#include "base/secret.h"
#include "core/fleet_store.h"
#include "core/settings.h"

#define STATE_FRESH_MS 100
/* A paced ask whose record stayed locked is asked again after 5-10 ms. */
#define BUSY_RETRY_MS 5

/* A record as this daemon last knew it: a scope's ('s'), a credential's
 * ('c': exhausted until) or a model's ('m'). */
struct fleet_local_rec {
	char kind;
	char *key;  /* owned */
	union {
		struct fleet_scope s;
		int64_t until;
		struct fleet_model m;
	} u;
};

const char *fleet_mode_name(enum fleet_mode m)
{
	return m == FLEET_MODE_PROCESS ? "process" : m == FLEET_MODE_USER ? "user" : "redis";
}

const char *fleet_scope_kind_name(const struct fleet *f)
{
	enum fleet_scope_kind k = f->cfg->scope;

	return k == FLEET_SCOPE_MODEL ? "model" : k == FLEET_SCOPE_CREDENTIAL ? "credential"
									     : "provider";
}

uint64_t fleet_rand(struct fleet *f)
{
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return f->rng * 2685821657736338717ULL;
}

const char *fleet_provider_id(const char *name, const char *base_url, char *out, size_t cap)
{
	const char *p = base_url != NULL ? strstr(base_url, "://") : NULL, *end, *at;
	char host[300], fp[17];
	size_t n = 0;
	bool https;

	if (p == NULL || p[3] == '\0') {
		snprintf(out, cap, "%s", name);
		return out;
	}
	https = p - base_url == 5 && strncasecmp(base_url, "https", 5) == 0;
	p += 3;
	end = p + strcspn(p, "/?#");
	/* user:password@host: the part before the last @ is no place. */
	for (at = p; at < end; at++)
		if (*at == '@')
			p = at + 1;
	for (; p < end && n + 1 < sizeof(host); p++)
		host[n++] = (char)tolower((unsigned char)*p);
	host[n] = '\0';
	if ((https && n > 4 && strcmp(host + n - 4, ":443") == 0) ||
	    (!https && n > 3 && strcmp(host + n - 3, ":80") == 0))
		host[n - (https ? 4 : 3)] = '\0';
	n = strlen(host);
	if (n == 0)
		snprintf(out, cap, "%s", name);
	else if (n <= 64)
		snprintf(out, cap, "%s@%s", name, host);
	else
		snprintf(out, cap, "%s@%.48s~%s", name, host, (secret_fingerprint(host, fp), fp));
	return out;
}

void fleet_scope_name(const struct fleet *f, const char *provider, const char *cred,
		      const char *model, char *out, size_t cap)
{
	switch (f->cfg->scope) {
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
static struct fleet_local_rec *local_rec(struct fleet *f, char kind, const char *key)
{
	struct fleet_local_rec *grown;

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

struct fleet_scope *fleet_local_scope(struct fleet *f, const char *key)
{
	struct fleet_local_rec *r = local_rec(f, 's', key);

	return r != NULL ? &r->u.s : NULL;
}

void fleet_apply_scope(struct fleet_scope_job *j, struct fleet_scope *s)
{
	struct fleet_params p = j->f->cfg->params;

	switch (j->op) {
	case FLEET_OP_ACQUIRE:
		/* A scope that has no rate of its own yet (a key just switched to)
		 * is paced at the one learned for the provider's other scopes. */
		if (j->rpm_prior > 0 && fleet_rules_rpm(s, &p) == 0)
			p.rpm = j->rpm_prior;
		fleet_rules_acquire(s, &p, j->now, j->retry, j->rand_milli, j->v);
		break;
	case FLEET_OP_REPORT:
		fleet_rules_report(s, &j->f->cfg->params, j->now, j->out);
		break;
	case FLEET_OP_CLEAR:
		fleet_rules_clear(s);
		break;
	case FLEET_OP_READ:
		break;
	}
	j->result = *s;
}

/* Runs the job on the scope's record: in the store (its file, user mode),
 * else (and when the store cannot this time) on the local copy. The local
 * copy ends up equal to what was decided. Returns whether it was decided
 * locally. */
static bool run_scope(struct fleet *f, const char *key, struct fleet_scope_job *j)
{
	struct fleet_scope *local = fleet_local_scope(f, key);
	struct fleet_scope scratch;

	if (f->ops->run_scope != NULL && f->ops->run_scope(f, key, j) == 0) {
		if (local != NULL)
			*local = j->result;
		return false;
	}
	if (local == NULL) {
		fleet_scope_init(&scratch);
		local = &scratch;
	}
	fleet_apply_scope(j, local);
	return f->cfg->mode != FLEET_MODE_PROCESS;
}

void fleet_apply_int(struct fleet_int_job *j)
{
	/* A train leaves at the gap its prober set (a record of a daemon that
	 * knows none: the waiter's own). */
	int64_t gap = j->turn_gap > 0 ? j->turn_gap : fleet_rules_turn_gap(j->p, 0);

	if (j->op == 2) {
		j->until = j->turn = j->turn_end = j->turn_gap = 0;
		memset(&j->m, 0, sizeof(j->m));
	} else if (j->op == 1 && j->kind == 'c') {
		fleet_rules_exhaust(&j->until, j->p, j->now, j->reset_ms);
		j->turn = j->turn_end = j->turn_gap = 0;
	} else if (j->op == 3 && j->kind == 'c') {
		j->claimed = fleet_rules_claim(&j->until, j->now, FLEET_PROBE_HOLD_MS);
		if (j->claimed)
			j->prober = j->member;
		j->turned = !j->claimed && !j->held && j->until <= j->now && j->turn_end > j->now;
		j->turn_wait = j->turned ? fleet_rules_turn(&j->turn, j->turn_end, j->now, gap, j->p)
					 : 0;
		/* The store could not take the turn it saw: one gap, asked again. */
		if (!j->turned && j->turn_unsure && !j->claimed && !j->held)
			j->turn_wait = gap;
	} else if (j->op == 4 && j->kind == 'c') {
		j->claimed = j->until > 0;
		j->until = 0;
		if (j->claimed && j->success) {
			j->turn_gap = fleet_rules_turn_gap(j->p, j->rpm_learned);
			fleet_rules_turn_start(&j->turn, &j->turn_end, j->now, j->turn_gap);
		}
	} else if (j->op == 5 && j->kind == 'c') {
		int64_t was = j->until;

		fleet_rules_unclaim(&j->until, j->now, FLEET_PROBE_HOLD_MS);
		j->claimed = j->until != was;
	} else if (j->op == 1) {
		fleet_rules_model_report(&j->m, j->now, j->overload, j->success, j->after,
					 j->cooldown_ms);
	}
}

/* The same for a credential's or a model's record. */
static void run_int(struct fleet *f, const char *key, struct fleet_int_job *j)
{
	struct fleet_local_rec *rec = local_rec(f, j->kind, key);
	int64_t *cred = rec != NULL && j->kind == 'c' ? &rec->u.until : NULL;
	struct fleet_model *model = rec != NULL && j->kind == 'm' ? &rec->u.m : NULL;

	if (f->ops->run_int != NULL && f->ops->run_int(f, key, j) == 0) {
		if (cred != NULL)
			*cred = j->until;
		if (model != NULL)
			*model = j->m;
		return;
	}
	if (cred != NULL)
		j->until = *cred;
	if (model != NULL)
		j->m = *model;
	/* Decided here, a train's slot would be nobody's: turn_unsure instead
	 * (one of the train's gaps, as the record was seen). */
	j->turn = j->turn_end = 0;
	if (!j->turn_unsure)
		j->turn_gap = 0;
	fleet_apply_int(j);
	if (cred != NULL)
		*cred = j->until;
	if (model != NULL)
		*model = j->m;
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
	/* A folder's name in user mode: "." or ".." would be another folder. */
	if (cfg->ns[0] == '\0' || strcmp(cfg->ns, ".") == 0 || strcmp(cfg->ns, "..") == 0)
		return errbuf_set(err, errlen,
				  "fleet.namespace \"%s\": must be a plain name (letters, digits, "
				  "'-', '_' and '.'), not empty, \".\" or \"..\"", cfg->ns);
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

/* The process store: the local records are the store, it has no hook. */
static const struct fleet_store_ops process_ops = { 0 };

struct fleet *fleet_new(const struct fleet_config *cfg, char *err, size_t errlen)
{
	struct fleet *f = calloc(1, sizeof(*f));

	if (f == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	f->cfg = malloc(sizeof(*f->cfg));
	if (f->cfg == NULL)
		goto nomem;
	*f->cfg = *cfg;
	f->ops = cfg->mode == FLEET_MODE_USER	 ? &fleet_user_ops
		 : cfg->mode == FLEET_MODE_REDIS ? &fleet_redis_ops
						 : &process_ops;
	f->fleet_size = 1;
	f->rng = (uint64_t)cfg->member * 0x9E3779B97F4A7C15ULL | 1;
	f->ns = strdup(cfg->ns ? cfg->ns : "default");
	f->cfg->ns = f->ns;
	if (f->ns == NULL)
		goto nomem;
	if (f->ops->open != NULL && f->ops->open(f, err, errlen) != 0)
		goto fail;
	f->cfg->dir = NULL;
	return f;
nomem:
	errbuf_set(err, errlen, "out of memory");
fail:
	/* cfg->redis stays the caller's on failure: nothing here closed it. */
	free(f->ns);
	free(f->cfg);
	free(f);
	return NULL;
}

void fleet_cancel(struct fleet *f)
{
	if (f->ops->cancel != NULL)
		f->ops->cancel(f);
}

static void free_all(struct fleet *f)
{
	for (size_t i = 0; i < f->nrecs; i++)
		free(f->recs[i].key);
	free(f->recs);
	free(f->ns);
	free(f->cfg);
	free(f);
}

/* The store is closed: the rest goes, then the caller hears of it. */
static void closed(struct fleet *f)
{
	void (*done)(void *) = f->close_done;
	void *dctx = f->close_ctx;

	free_all(f);
	if (done)
		done(dctx);
}

/* Gives back the credential probe this daemon claimed (fleet_abandon):
 * key's, or whichever when key is NULL. */
static void unclaim(struct fleet *f, const char *key)
{
	struct fleet_int_job c = { .kind = 'c', .op = 5, .p = &f->cfg->params,
				   .now = clock_wall_ms(f->cfg->clock) };
	char k[sizeof(f->probing)];

	if (f->probing[0] == '\0' || (key != NULL && strcmp(key, f->probing) != 0))
		return;
	snprintf(k, sizeof(k), "%s", f->probing);
	f->probing[0] = '\0';
	run_int(f, k, &c);
}

void fleet_abandon(struct fleet *f, const char *provider, const char *cred)
{
	char key[512];

	if (cred == NULL)
		return;
	pair_key(provider, cred, key, sizeof(key));
	unclaim(f, key);
}

void fleet_close(struct fleet *f, void (*done)(void *ctx), void *ctx)
{
	fleet_cancel(f);
	fleet_done(f);
	unclaim(f, NULL);
	f->close_done = done;
	f->close_ctx = ctx;
	if (f->ops->close != NULL)
		f->ops->close(f, closed);
	else
		closed(f);
}

/* Asking. */

/* The credential and model to use, from what is known here (the user
 * store's files, else the local records); returns the wait for the
 * credential's train (fleet_rules_turn), 0 when none. */
static int64_t pick(struct fleet *f, const struct fleet_ask *q, int64_t now,
		    struct fleet_answer *a, bool *turn_firm)
{
	int64_t turn_wait = 0;
	char key[512];

	a->cred = q->ncreds > 0 ? -1 : 0;
	a->cred_until = 0;
	for (size_t i = 0; i < q->ncreds; i++) {
		struct fleet_int_job j = { .kind = 'c', .op = 3, .p = &f->cfg->params, .now = now,
					   .held = q->held, .member = f->cfg->member };

		pair_key(q->provider, q->creds[i], key, sizeof(key));
		run_int(f, key, &j);
		if (j.claimed)
			snprintf(f->probing, sizeof(f->probing), "%s", key);
		if (j.until <= now || j.claimed) {
			a->cred = (int)i;
			turn_wait = j.turn_wait;
			*turn_firm = j.turned;
			break;
		}
		if (a->cred_until == 0 || j.until < a->cred_until) {
			a->cred_until = j.until;
			a->cred_probing = j.prober != 0 && j.prober != f->cfg->member;
		}
	}
	a->model = 0;
	for (size_t i = 0; i < q->nmodels; i++) {
		struct fleet_int_job j = { .kind = 'm', .op = 0, .p = &f->cfg->params, .now = now };

		pair_key(q->provider, q->models[i], key, sizeof(key));
		run_int(f, key, &j);
		if (j.m.cool_until <= now) {
			a->model = (int)i;
			break;
		}
	}
	return turn_wait;
}

/* Whether the scope's record holds a block now, or fails for everyone
 * (read, not changed): a slot reserved before either must wait again. */
static bool blocked(struct fleet *f, const char *scope, int64_t now)
{
	struct fleet_scope_job j = { .op = FLEET_OP_READ, .f = f };

	run_scope(f, scope, &j);
	return j.result.block_until > now || (j.result.open && j.result.shared);
}

/* A wait that is not a reserved slot (the probe, the budget, a lease) is
 * looked at again after at most a quarter of the probe interval, jittered:
 * nothing tells a waiter that the circuit closed or a lease came free, and
 * a fleet should come back within moments of its provider. */
void fleet_poll_sooner(struct fleet *f, struct fleet_answer *a)
{
	int64_t cap = f->cfg->params.probe_interval_ms / 4;

	/* A server block ends when it says (a record locked at the ask makes
	 * it no slot, not a shorter wait). */
	if (a->wait_ms <= 0 || a->reserved || a->cred < 0 || a->reason == FLEET_SERVER_BLOCK)
		return;
	if (cap < 100)
		cap = 100;
	cap = cap * 3 / 4 + (int64_t)(fleet_rand(f) % (uint64_t)(cap / 2 + 1));
	if (a->wait_ms > cap)
		a->wait_ms = cap;
}

/* Process and user mode, and Redis mode's fall back. */
void fleet_ask_local(struct fleet *f, const struct fleet_ask *q, struct fleet_answer *a)
{
	int64_t now = clock_wall_ms(f->cfg->clock);
	struct fleet_verdict v;
	struct fleet_scope_job j = { .op = FLEET_OP_ACQUIRE, .f = f, .now = now, .retry = q->retry,
				     .v = &v };
	const char *cred;

	bool turn_firm = false, busy;
	int64_t turn_wait;

	memset(a, 0, sizeof(*a));
	turn_wait = pick(f, q, now, a, &turn_firm);
	cred = q->ncreds > 0 && a->cred >= 0 ? q->creds[a->cred] : NULL;
	fleet_scope_name(f, q->provider, cred, q->models[a->model], a->scope, sizeof(a->scope));
	if (a->cred < 0)
		return;
	if (q->held && a->cred <= 0 && a->model == 0 && !blocked(f, a->scope, now)) {
		/* The slot reserved before is this one's: go (a lease is still
		 * needed). Another credential or model means another scope, and
		 * a block that came meanwhile a new wait. */
		if (f->ops->lease != NULL)
			f->ops->lease(f, a->scope, a);
		return;
	}
	j.rpm_prior = f->rpm_prior;
	for (size_t i = 0; j.rpm_prior == 0 && i < q->ncreds; i++) {
		/* Nor did this daemon learn a rate: the one the fleet learned for
		 * the provider and model under another of these credentials. */
		struct fleet_scope_job r = { .op = FLEET_OP_READ, .f = f };
		char other[FLEET_SCOPE_MAX];

		if ((int)i == a->cred)
			continue;
		fleet_scope_name(f, q->provider, q->creds[i], q->models[a->model], other,
				 sizeof(other));
		run_scope(f, other, &r);
		j.rpm_prior = r.result.rpm_learned;
	}
	j.rand_milli = (int64_t)(fleet_rand(f) % 1000);
	if (f->cfg->mode == FLEET_MODE_REDIS)
		f->cfg->params.divide = f->fleet_size;
	f->store_busy = false;
	a->local = run_scope(f, a->scope, &j);
	f->cfg->params.divide = 1;
	busy = a->local && f->store_busy;
	if (busy && v.wait_ms == 0 && !v.probe &&
	    (fleet_rules_rpm(&j.result, &f->cfg->params) > 0 || j.rpm_prior > 0)) {
		/* A paced scope whose record stayed locked: deciding here would
		 * give the slot another daemon takes too. Asked again soon. */
		v.wait_ms = BUSY_RETRY_MS + (int64_t)(fleet_rand(f) % BUSY_RETRY_MS);
		v.reason = FLEET_PACING;
	}
	a->block_seen = j.result.block_seen;
	a->block_member = j.result.block_member;
	a->block_status = j.result.block_status;
	a->block_asked = j.result.block_asked;
	if (turn_wait > v.wait_ms && !v.probe) {
		/* Waited for the probe's answer: leave in turn. A wait that is
		 * asked again (budget, probe, lease) stays what it is, longer. */
		if (v.reason == FLEET_GO || v.reason == FLEET_PACING ||
		    v.reason == FLEET_SERVER_BLOCK)
			v.reason = FLEET_PACING;
		v.wait_ms = turn_wait;
	} else {
		turn_firm = true;
	}
	a->wait_ms = v.wait_ms;
	a->reason = v.reason;
	a->probe = v.probe;
	/* A turn the store could not record, or a wait decided on the local
	 * copy while the record was locked, is no slot: asked again. */
	a->reserved = v.wait_ms > 0 && turn_firm && !busy &&
		      (v.reason == FLEET_SERVER_BLOCK || v.reason == FLEET_PACING);
	if (f->ops->lease != NULL)
		f->ops->lease(f, a->scope, a);
	fleet_poll_sooner(f, a);
}

/* Upper bounds (µs) of the latency histogram's buckets; one more bucket
 * holds the rest. A histogram, unlike a percentile, adds up across a
 * fleet's daemons. */
static const uint32_t hist_le[FLEET_HIST_N] = { 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000,
					  50000, 100000 };

/* One ask's latency, from fleet_ask to its answer. */
static void took(struct fleet *f)
{
	uint64_t us = clock_precise_us() - f->ask_started;
	size_t b = 0;

	f->lat[f->asks++ % FLEET_LAT_N] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	while (b < FLEET_HIST_N && us > hist_le[b])
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
	uint32_t sorted[FLEET_LAT_N];
	size_t n = f->asks < FLEET_LAT_N ? (size_t)f->asks : FLEET_LAT_N;

	if (n == 0)
		return 0;
	memcpy(sorted, f->lat, n * sizeof(sorted[0]));
	qsort(sorted, n, sizeof(sorted[0]), cmp_u32);
	return sorted[(n * 99 + 99) / 100 - 1];
}

void fleet_answered(struct fleet *f, struct fleet_answer *a)
{
	a->block_mine = a->block_member != 0 && a->block_member == f->cfg->member;
	took(f);
	LOG_DEBUG("fleet: %s: %s %lld ms%s%s", a->scope, fleet_reason_name(a->reason),
		  (long long)a->wait_ms, a->probe ? " (the probe)" : "",
		  a->local ? " (decided locally)" : "");
}

int fleet_ask(struct fleet *f, const struct fleet_ask *q, struct fleet_answer *a,
	      fleet_answer_fn cb, void *ctx)
{
	fleet_cancel(f);
	f->ask_started = clock_precise_us();
	if (f->ops->ask != NULL) {
		int r = f->ops->ask(f, q, a, cb, ctx);

		if (r >= 0)
			return r;
	}
	fleet_ask_local(f, q, a);
	fleet_answered(f, a);
	return 1;
}

/* Telling. */

/* The credential's record after an answer: a usage limit exhausts it; the
 * answer to this daemon's claimed probe replaces the claim's hold with what
 * it says (good: the credential is back, and its waiters leave at the rate
 * the scope learned, rpm_learned, which the answer itself may have told). */
static void tell_credential(struct fleet *f, const struct fleet_tell *t, int64_t now,
			    int64_t rpm_learned)
{
	struct fleet_int_job c = { .kind = 'c', .op = 2, .p = &f->cfg->params, .now = now,
				   .reset_ms = t->usage_reset_ms, .rpm_learned = rpm_learned };
	char key[512];
	bool probe;

	pair_key(t->provider, t->cred, key, sizeof(key));
	probe = strcmp(key, f->probing) == 0;
	if (probe)
		f->probing[0] = '\0';
	if (probe && (t->out.kind == FLEET_OUT_SUCCESS || t->usage_reset_ms >= 0)) {
		c.op = 4;
		c.success = t->out.kind == FLEET_OUT_SUCCESS && t->usage_reset_ms < 0;
		run_int(f, key, &c);
	}
	if (t->usage_reset_ms >= 0) {
		c.op = 1;
		run_int(f, key, &c);
	}
}

void fleet_tell(struct fleet *f, const struct fleet_tell *t)
{
	int64_t now = clock_wall_ms(f->cfg->clock);
	char scope[FLEET_SCOPE_MAX], key[512];
	struct fleet_outcome out = t->out;
	struct fleet_scope_job j = { .op = FLEET_OP_REPORT, .f = f, .now = now, .out = &out };

	out.member = f->cfg->member;
	if (t->out.rpm_limit > 0)
		f->rpm_prior = t->out.rpm_limit;

	fleet_scope_name(f, t->provider, t->cred, t->model, scope, sizeof(scope));
	run_scope(f, scope, &j);
	if (t->cred != NULL)
		tell_credential(f, t, now, j.result.rpm_learned);
	if (t->out.kind != FLEET_OUT_LOCAL) {
		struct fleet_int_job m = { .kind = 'm', .op = 1, .p = &f->cfg->params, .now = now,
					   .overload = t->overload,
					   .success = t->out.kind == FLEET_OUT_SUCCESS,
					   .after = t->fallback_after,
					   .cooldown_ms = t->cooldown_ms };

		pair_key(t->provider, t->model, key, sizeof(key));
		run_int(f, key, &m);
	}
	if (f->ops->tell != NULL)
		f->ops->tell(f, t);
}

void fleet_done(struct fleet *f)
{
	if (f->ops->done != NULL)
		f->ops->done(f);
}

/* Looking. */

int64_t fleet_known_block(struct fleet *f, const char *provider, const char *cred,
			  const char *model, struct fleet_answer *who)
{
	char scope[FLEET_SCOPE_MAX];
	struct fleet_scope *s;

	fleet_scope_name(f, provider, cred, model, scope, sizeof(scope));
	s = fleet_local_scope(f, scope);
	if (who != NULL) {
		memset(who, 0, sizeof(*who));
		snprintf(who->scope, sizeof(who->scope), "%s", scope);
		if (s != NULL) {
			who->block_seen = s->block_seen;
			who->block_member = s->block_member;
			who->block_status = s->block_status;
			who->block_asked = s->block_asked;
			who->block_mine = s->block_member != 0 &&
					  s->block_member == f->cfg->member;
		}
	}
	return s != NULL ? s->block_until : 0;
}

enum fleet_mode fleet_config_mode(const struct fleet *f)
{
	return f->cfg->mode;
}

int fleet_clear(struct fleet *f, const char *provider, const char *cred, const char *model,
		char *scope, size_t scope_cap)
{
	char key[512];
	struct fleet_scope_job j = { .op = FLEET_OP_CLEAR, .f = f };
	int n = 0;

	fleet_scope_name(f, provider, cred, model, scope, scope_cap);
	run_scope(f, scope, &j);
	n++;
	if (cred != NULL) {
		struct fleet_int_job c = { .kind = 'c', .op = 2, .p = &f->cfg->params };

		pair_key(provider, cred, key, sizeof(key));
		run_int(f, key, &c);
		n++;
	}
	{
		struct fleet_int_job m = { .kind = 'm', .op = 2, .p = &f->cfg->params };

		pair_key(provider, model, key, sizeof(key));
		run_int(f, key, &m);
		n++;
	}
	if (f->ops->clear != NULL)
		f->ops->clear(f, provider, cred, model);
	return n;
}

json_t *fleet_state(struct fleet *f, const char *provider, const char *cred, const char *model)
{
	char scope[FLEET_SCOPE_MAX];
	struct fleet_scope s;
	struct fleet_scope_job j = { .op = FLEET_OP_READ, .f = f };
	struct fleet_store_state store = { .connected = true };
	int64_t now = clock_wall_ms(f->cfg->clock), rpm;
	json_t *o;

	fleet_scope_name(f, provider, cred, model, scope, sizeof(scope));
	/* get_state is a hot command (clients poll it, pipelined): the shared
	 * record is read at most every STATE_FRESH_MS, the local copy (which
	 * that read and every ask and report refresh) answers in between. */
	if (f->cfg->mode == FLEET_MODE_USER &&
	    (clock_now(f->cfg->clock) >= f->state_read_at + STATE_FRESH_MS ||
	     f->state_read_at == 0)) {
		run_scope(f, scope, &j);
		f->state_read_at = clock_now(f->cfg->clock) + 1;
		s = j.result;
	} else {
		struct fleet_scope *local = fleet_local_scope(f, scope);

		if (local != NULL)
			s = *local;
		else
			fleet_scope_init(&s);
	}
	rpm = fleet_rules_rpm(&s, &f->cfg->params);
	if (f->ops->state != NULL)
		f->ops->state(f, &store);
	o = json_pack("{s:s, s:s, s:s, s:b, s:b, s:b}", "mode", fleet_mode_name(f->cfg->mode),
		      "scopeKind", fleet_scope_kind_name(f), "scope", scope, "connected",
		      store.connected, "degraded", store.degraded, "open",
		      s.open != 0 && s.shared != 0);
	if (o == NULL)
		return NULL;
	if (s.block_until > now) {
		json_object_set_new(o, "blockedUntil", json_integer(s.block_until));
		json_object_set_new(o, "blockedForMs", json_integer(s.block_until - now));
	}
	if (rpm > 0)
		json_object_set_new(o, "rpm", json_integer(rpm));
	if (store.members > 0)
		json_object_set_new(o, "members", json_integer(store.members));
	if (f->cfg->concurrency > 0)
		json_object_set_new(o, "concurrency", json_integer(f->cfg->concurrency));
	json_object_set_new(o, "asks", json_integer((json_int_t)f->asks));
	json_object_set_new(o, "localDecisions", json_integer((json_int_t)f->local_decisions));
	json_object_set_new(o, "askP99Us", json_integer(p99(f)));
	{
		json_t *h = json_object();
		char le[16];

		for (size_t b = 0; h != NULL && b <= FLEET_HIST_N; b++) {
			if (b < FLEET_HIST_N)
				snprintf(le, sizeof(le), "%u", (unsigned)hist_le[b]);
			else
				snprintf(le, sizeof(le), "more");
			json_object_set_new(h, le, json_integer((json_int_t)f->hist[b]));
		}
		json_object_set_new(o, "askLatencyUs", h);
	}
	return o;
}


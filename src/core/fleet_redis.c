/* fleet_redis — the Redis store (fleet.mode "redis"): a redis-server
 * shared by many machines (io/redis, on the loop), the rules run there as
 * Lua (core/fleet.lua, embedded as fleet_script). The script's contract is
 * at the top of fleet.lua. When Redis is slow or down the ask is decided on
 * the local records (core/fleet.c), the shared rate divided by the last
 * fleet size seen, and io/redis reconnects in the background: Redis never
 * fails a prompt. The hooks are in core/fleet_store.h. */
#include "core/fleet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/log.h"
#include "base/number.h"
#include "core/fleet_script.h"
#include "core/fleet_store.h"
#include "io/redis.h"

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

/* The store's state (f->store). The client itself is f->cfg->redis. */
struct fleet_redis {
	char *prefix;               /* owned: "retryd:{<ns>}:" */
	char sha1[41];              /* the script's, for EVALSHA */
	struct pending *pending;    /* owned: the ask in flight, or NULL */
	bool degraded;              /* the last call failed */
	/* Redis's last word that the provider fails for everyone (a probe or
	 * budget hold): its reason, when it was said (wall ms) and for which
	 * provider. A slow Redis does not undo it (held_on_word). */
	enum fleet_reason held_reason;
	int64_t held_said;
	char held_provider[128];
	bool refusal_logged;        /* an answer out of range was said once */

	bool lease_held;            /* a lease is held */
	char lease_args[3][160];    /* provider, cred, model of the lease */
	struct clock_timer renew_timer;

	void (*closed)(struct fleet *f);  /* fleet_close's, once the client is closed */
};

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

static void cancel_redis(struct fleet *f)
{
	struct fleet_redis *fr = f->store;

	if (fr->pending == NULL)
		return;
	redis_cancel(f->cfg->redis, fr->pending->call);
	pending_free(fr->pending);
	fr->pending = NULL;
}

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
	struct fleet_redis *fr = f->store;

	if (!fr->degraded)
		LOG_WARN("fleet: redis %s (%s); deciding on local records until it is back",
			 st == REDIS_TIMEOUT ? "did not answer in time" : "is unreachable",
			 redis_last_error(f->cfg->redis));
	fr->degraded = true;
}

static void came_back(struct fleet *f)
{
	struct fleet_redis *fr = f->store;

	if (fr->degraded)
		LOG_WARN("fleet: redis is back; sharing again");
	fr->degraded = false;
}

/* The ask's answer, believed only within its ranges (fleet_reply_check):
 * 0 with *out, or -1 when it is refused (said once per daemon, with what
 * was wrong: a reply of another shape, an unknown reason code, a time too
 * far), and the ask is decided on the records here. */
static int ask_answer(struct fleet *f, const struct pending *p, const struct redis_value *v,
		      struct fleet_reply *out)
{
	struct fleet_redis *fr = f->store;
	struct fleet_refusal why = { "shape", 0 };
	int64_t ints[15];
	int64_t wait_max = fleet_rules_slot_bound(&f->cfg->params);
	bool ok = v != NULL && v->type == REDIS_V_ARRAY && v->n >= 10;
	size_t n = ok ? (v->n >= 15 ? 15 : v->n >= 14 ? 14 : 10) : 0;

	if (f->cfg->lease_ttl_ms > wait_max)
		wait_max = f->cfg->lease_ttl_ms;
	for (size_t i = 0; ok && i < n; i++) {
		ok = v->elems[i].type == REDIS_V_INT;
		ints[i] = ok ? v->elems[i].i : 0;
		if (!ok)
			why.value = (int64_t)i;
	}
	if (ok && fleet_reply_check(ints, n, p->q.ncreds, p->q.nmodels, &f->cfg->params,
				    clock_wall_ms(f->cfg->clock), wait_max, out, &why) == 0)
		return 0;
	if (!fr->refusal_logged) {
		fr->refusal_logged = true;
		if (strcmp(why.field, "shape") == 0)
			LOG_WARN("fleet: redis answered an ask with %s; refused, deciding locally "
				 "(said once)",
				 v == NULL ? "nothing" : v->type == REDIS_V_ERR ? "an error"
				 : v->type != REDIS_V_ARRAY ? "a reply that is not an array"
				 : v->n < 10 ? "a short array" : "an element that is not an integer");
		else
			LOG_WARN("fleet: redis answered an ask with %s=%lld, out of its range; "
				 "refused, deciding locally (said once)",
				 why.field, (long long)why.value);
	}
	return -1;
}

/* What Redis answered last about the provider failing for everyone. */
static void remember_word(struct fleet *f, const struct fleet_ask *q, const struct fleet_answer *a)
{
	struct fleet_redis *fr = f->store;

	if (a->wait_ms > 0 && (a->reason == FLEET_PROBE || a->reason == FLEET_BUDGET)) {
		fr->held_reason = a->reason;
		fr->held_said = clock_wall_ms(f->cfg->clock);
		snprintf(fr->held_provider, sizeof(fr->held_provider), "%s", q->provider);
	} else if (strcmp(fr->held_provider, q->provider) == 0) {
		fr->held_provider[0] = '\0';
	}
}

/* An ask Redis did not answer in time, while its last word was that the
 * provider fails for everyone: the local records know only this daemon's
 * own failures and would send. A fleet whose waiters all ask at once is
 * what makes Redis slow, so each would send to the dead provider. The
 * word stands as long as a probe gap can last (4x the interval); the
 * waiter asks again after a jittered poll. Past that, or with Redis down
 * (refused, closed), the local records decide. */
static void held_on_word(struct fleet *f, const struct fleet_ask *q, struct fleet_answer *a)
{
	struct fleet_redis *fr = f->store;
	int64_t stands = number_sat_mul(number_clamp(f->cfg->params.probe_interval_ms), 4);
	int64_t age = number_sat_sub(clock_wall_ms(f->cfg->clock), fr->held_said);

	if (a->cred < 0 || a->wait_ms > 0 || fr->held_provider[0] == '\0' ||
	    strcmp(fr->held_provider, q->provider) != 0 || age < 0 || age >= stands)
		return;
	a->wait_ms = stands - age;
	a->reason = fr->held_reason;
	a->probe = false;
	a->reserved = false;
	fleet_poll_sooner(f, a);
	LOG_DEBUG("fleet: %s: redis is slow and said %lld ms ago that the provider fails for "
		  "everyone; held, not sent", a->scope, (long long)age);
}

static void on_ask_reply(void *ctx, enum redis_status st, const struct redis_value *v)
{
	struct fleet *f = ctx;
	struct fleet_redis *fr = f->store;
	struct pending *p = fr->pending;
	struct fleet_answer a;
	struct fleet_reply rep;

	fr->pending = NULL;
	if (st == REDIS_OK && v->type != REDIS_V_ERR && ask_answer(f, p, v, &rep) == 0) {
		const char *cred;
		struct fleet_scope *local;

		came_back(f);
		memset(&a, 0, sizeof(a));
		a.wait_ms = rep.wait_ms;
		a.reason = rep.reason;
		a.probe = rep.probe;
		a.cred = rep.cred;
		a.cred_until = rep.cred_until;
		a.cred_probing = rep.cred_probing;
		a.model = rep.model;
		f->fleet_size = rep.members;
		a.lease = rep.lease;
		a.reserved = a.wait_ms > 0 &&
			     (a.reason == FLEET_SERVER_BLOCK || a.reason == FLEET_PACING);
		cred = p->q.ncreds > 0 && a.cred >= 0 ? p->q.creds[a.cred] : NULL;
		fleet_scope_name(f, p->q.provider, cred, p->q.models[a.model], a.scope,
				 sizeof(a.scope));
		local = fleet_local_scope(f, a.scope);
		/* Who set the block (a script before these four: zeros). */
		a.block_seen = rep.block_seen;
		a.block_member = rep.block_member;
		a.block_status = rep.block_status;
		a.block_asked = rep.block_asked;
		if (local != NULL && rep.block_until > local->block_until) {
			local->block_until = rep.block_until;
			local->block_seen = a.block_seen;
			local->block_member = a.block_member;
			local->block_status = a.block_status;
			local->block_asked = a.block_asked;
		}
		if (a.lease) {
			fr->lease_held = true;
			snprintf(fr->lease_args[0], sizeof(fr->lease_args[0]), "%s", p->q.provider);
			snprintf(fr->lease_args[1], sizeof(fr->lease_args[1]), "%s",
				 cred ? cred : "");
			snprintf(fr->lease_args[2], sizeof(fr->lease_args[2]), "%s",
				 p->q.models[a.model]);
		}
	} else {
		if (st == REDIS_OK && v->type == REDIS_V_ERR)
			LOG_WARN("fleet: redis answered the ask with %s; deciding locally", v->s);
		else if (st != REDIS_OK)
			went_degraded(f, st);
		if (st == REDIS_CLOSED) {
			pending_free(p);
			return;
		}
		fleet_ask_local(f, &p->q, &a);
		a.local = true;
		f->local_decisions++;
		if (st == REDIS_TIMEOUT)
			held_on_word(f, &p->q, &a);
	}
	if (!a.local) {
		remember_word(f, &p->q, &a);
		fleet_poll_sooner(f, &a);
	}
	fleet_answered(f, &a);
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

static int ask_redis(struct fleet *f, const struct fleet_ask *q, struct fleet_answer *a,
		     fleet_answer_fn cb, void *ctx)
{
	struct fleet_redis *fr = f->store;
	struct pending *p;
	struct redis_call *call;
	bool sync_done = false;
	const char *args[64 + 40];
	char nums[11][24], small[8][24];
	size_t n = 0;

	if (q->ncreds > 32 || q->nmodels > 32)
		return -1; /* more than args holds: decided here */
	p = pending_new(q);
	if (p == NULL) {
		fleet_ask_local(f, q, a);
		return 1;
	}
	p->cb = cb;
	p->ctx = ctx;
	snprintf(small[0], 24, "%lld", (long long)f->cfg->member);
	snprintf(small[1], 24, "%d", q->retry ? 1 : 0);
	snprintf(small[2], 24, "%lld", (long long)(fleet_rand(f) % 1000));
	snprintf(small[3], 24, "%zu", q->ncreds);
	snprintf(small[4], 24, "%zu", q->nmodels);
	snprintf(small[5], 24, "%d", f->cfg->concurrency);
	snprintf(small[6], 24, "%lld", (long long)f->cfg->lease_ttl_ms);
	args[n++] = "ask";
	args[n++] = "-1";
	args[n++] = small[0];
	args[n++] = fleet_scope_kind_name(f);
	args[n++] = q->provider;
	args[n++] = small[1];
	args[n++] = small[2];
	params_args(&f->cfg->params, nums, args + n);
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
	fr->pending = p;
	p->sync_out = a;
	p->sync_done = &sync_done;
	call = redis_eval(f->cfg->redis, fr->sha1, fleet_script_text, 1,
			  (const char *const *)&fr->prefix, n, args, on_ask_reply, f);
	if (sync_done)
		return 1; /* answered from inside redis_eval (down): p is gone */
	p->call = call;
	p->sync_out = NULL;
	p->sync_done = NULL;
	return 0;
}

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
	struct fleet_redis *fr = f->store;
	const char *args[40];
	char nums[11][24], small[9][24];
	size_t n = 0;

	snprintf(small[0], 24, "%lld", (long long)f->cfg->member);
	snprintf(small[1], 24, "%lld", (long long)t->out.block_ms);
	snprintf(small[2], 24, "%lld", (long long)t->out.rpm_limit);
	snprintf(small[3], 24, "%lld", (long long)t->usage_reset_ms);
	snprintf(small[4], 24, "%d", t->overload ? 1 : 0);
	snprintf(small[5], 24, "%d", t->out.kind == FLEET_OUT_SUCCESS ? 1 : 0);
	snprintf(small[6], 24, "%lld", (long long)t->fallback_after);
	snprintf(small[7], 24, "%lld", (long long)t->cooldown_ms);
	snprintf(small[8], 24, "%lld", (long long)t->out.status);
	args[n++] = "tell";
	args[n++] = "-1";
	args[n++] = small[0];
	args[n++] = fleet_scope_kind_name(f);
	args[n++] = t->provider;
	args[n++] = t->cred ? t->cred : "";
	args[n++] = t->model;
	args[n++] = kinds[t->out.kind];
	args[n++] = small[1];
	args[n++] = small[2];
	params_args(&f->cfg->params, nums, args + n);
	n += 11;
	for (int i = 3; i < 9; i++)
		args[n++] = small[i];
	/* Fire and forget: the reply only updates the link's state. */
	redis_eval(f->cfg->redis, fr->sha1, fleet_script_text, 1,
		   (const char *const *)&fr->prefix, n, args, on_tell_reply, f);
}

static void on_lease_reply(void *ctx, enum redis_status st, const struct redis_value *v)
{
	(void)v;
	if (st != REDIS_OK && st != REDIS_CLOSED)
		went_degraded(ctx, st);
}

static void lease_call(struct fleet *f, bool renew)
{
	struct fleet_redis *fr = f->store;
	const char *args[8];
	char member[24], ttl[24];
	size_t n = 0;

	snprintf(member, sizeof(member), "%lld", (long long)f->cfg->member);
	snprintf(ttl, sizeof(ttl), "%lld", (long long)f->cfg->lease_ttl_ms);
	/* release SCOPE holder; renew now SCOPE holder ttlMs */
	args[n++] = renew ? "renew" : "release";
	if (renew)
		args[n++] = "-1";
	args[n++] = fleet_scope_kind_name(f);
	args[n++] = fr->lease_args[0];
	args[n++] = fr->lease_args[1];
	args[n++] = fr->lease_args[2];
	args[n++] = member;
	if (renew)
		args[n++] = ttl;
	redis_eval(f->cfg->redis, fr->sha1, fleet_script_text, 1,
		   (const char *const *)&fr->prefix, n, args, on_lease_reply, f);
}

static void on_renew(struct clock_timer *timer, void *ctx)
{
	struct fleet *f = ctx;
	struct fleet_redis *fr = f->store;

	(void)timer;
	if (!fr->lease_held)
		return;
	lease_call(f, true);
	start_renew(f);
}

static void start_renew(struct fleet *f)
{
	struct fleet_redis *fr = f->store;
	int64_t every = f->cfg->lease_ttl_ms / 3;

	clock_timer_start(f->cfg->clock, &fr->renew_timer, (uint64_t)(every > 0 ? every : 1),
			  on_renew, f);
}

static void done_redis(struct fleet *f)
{
	struct fleet_redis *fr = f->store;

	if (fr->lease_held) {
		fr->lease_held = false;
		clock_timer_stop(f->cfg->clock, &fr->renew_timer);
		lease_call(f, false);
	}
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

static void clear_redis(struct fleet *f, const char *provider, const char *cred,
			const char *model)
{
	struct fleet_redis *fr = f->store;
	const char *args[5] = { "clear", fleet_scope_kind_name(f), provider, cred ? cred : "",
				model };

	redis_eval(f->cfg->redis, fr->sha1, fleet_script_text, 1,
		   (const char *const *)&fr->prefix, 5, args, on_clear_reply, f);
}

static void state_redis(struct fleet *f, struct fleet_store_state *out)
{
	struct fleet_redis *fr = f->store;

	out->connected = redis_connected(f->cfg->redis);
	out->degraded = fr->degraded;
	out->members = f->fleet_size;
}

static int open_redis(struct fleet *f, char *err, size_t errlen)
{
	struct fleet_redis *fr = calloc(1, sizeof(*fr));

	if (fr != NULL)
		fr->prefix = malloc(strlen(f->ns) + 16);
	if (fr == NULL || fr->prefix == NULL) {
		free(fr);
		return errbuf_set(err, errlen, "out of memory");
	}
	sprintf(fr->prefix, "retryd:{%s}:", f->ns);
	redis_script_sha1(fleet_script_text, fr->sha1);
	f->store = fr;
	return 0;
}

static void on_redis_closed(void *ctx)
{
	struct fleet *f = ctx;
	struct fleet_redis *fr = f->store;
	void (*closed)(struct fleet *) = fr->closed;

	free(fr->prefix);
	free(fr);
	f->store = NULL;
	closed(f);
}

static void close_redis(struct fleet *f, void (*closed)(struct fleet *f))
{
	struct fleet_redis *fr = f->store;

	clock_timer_stop(f->cfg->clock, &fr->renew_timer);
	fr->closed = closed;
	if (f->cfg->redis != NULL)
		redis_close(f->cfg->redis, on_redis_closed, f);
	else
		on_redis_closed(f);
}

const struct fleet_store_ops fleet_redis_ops = {
	.open = open_redis,
	.ask = ask_redis,
	.cancel = cancel_redis,
	.tell = tell_redis,
	.done = done_redis,
	.clear = clear_redis,
	.state = state_redis,
	.close = close_redis,
};

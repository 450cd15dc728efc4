#include "core/retry.h"

#include "base/errbuf.h"
#include "core/settings.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* In the order of enum retry_jitter; the names retry.jitter accepts. */
static const char *const jitter_names[] = { "none", "full", "equal", "decorrelated" };
static const char *const reason_names[] = { "backoff", "server-hint", "credential-switch",
					    "model-fallback", "usage-reset" };

const char *retry_reason_name(enum retry_reason r)
{
	return reason_names[r];
}

/* retry.<name> (key is the full "retry.<name>"): the value in `retry` when it
 * is an integer, else the settings table's default. */
static int64_t int_of(const json_t *retry, const char *key)
{
	json_t *v = json_object_get(retry, key + strlen("retry."));

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : settings_default_int(key);
}

static bool bool_of(const json_t *retry, const char *key)
{
	json_t *v = json_object_get(retry, key + strlen("retry."));

	return json_is_boolean(v) ? json_is_true(v) : settings_default_bool(key);
}

static int jitter_of(const char *name, enum retry_jitter *out)
{
	for (size_t i = 0; i < sizeof(jitter_names) / sizeof(jitter_names[0]); i++) {
		if (strcmp(name, jitter_names[i]) == 0) {
			*out = (enum retry_jitter)i;
			return 0;
		}
	}
	return -1;
}

void retry_policy_default(struct retry_policy *p)
{
	(void)retry_policy_from_json(p, NULL, true, NULL, 0);
}

int retry_policy_from_json(struct retry_policy *p, const json_t *retry, bool max_explicit,
			   char *err, size_t errlen)
{
	json_t *v;

	if (retry != NULL && !json_is_object(retry)) {
		retry_policy_default(p);
		return errbuf_set(err, errlen, "retry must be an object");
	}
	memset(p, 0, sizeof(*p));
	p->enabled = bool_of(retry, "retry.enabled");
	p->max_retries = (int)int_of(retry, "retry.maxRetries");
	p->unknown_retries = (int)int_of(retry, "retry.unknownRetries");
	p->base_delay_ms = int_of(retry, "retry.baseDelayMs");
	p->max_delay_ms = int_of(retry, "retry.maxDelayMs");
	p->respect_hints = bool_of(retry, "retry.respectServerHints");
	v = json_object_get(retry, "jitter");
	if (jitter_of(json_is_string(v) ? json_string_value(v) : settings_default_string("retry.jitter"),
		      &p->jitter) != 0)
		return errbuf_set(err, errlen, "retry.jitter must be one of none|full|equal|decorrelated");
	v = json_object_get(retry, "jitterSeed");
	if (json_is_integer(v)) {
		p->seeded = true;
		p->jitter_seed = (uint64_t)json_integer_value(v);
	}
	/* An empty schedule, the table's default, means the exponential formula. */
	v = json_object_get(retry, "schedule");
	if (json_is_array(v) && json_array_size(v) > 0) {
		size_t i;
		json_t *d;

		if (json_array_size(v) > RETRY_SCHEDULE_MAX)
			return errbuf_set(err, errlen, "retry.schedule may list at most %d delays",
					  RETRY_SCHEDULE_MAX);
		json_array_foreach(v, i, d) {
			if (!json_is_integer(d) || json_integer_value(d) < 0)
				return errbuf_set(err, errlen,
						  "retry.schedule[%zu] must be an integer >= 0", i);
			p->schedule[i] = json_integer_value(d);
		}
		p->schedule_len = json_array_size(v);
		if (!max_explicit)
			p->max_retries = (int)p->schedule_len;
	}
	p->idle_timeout_ms = int_of(retry, "retry.idleTimeoutMs");
	p->fallback_after_consecutive = (int)int_of(retry, "retry.fallbackAfterConsecutive");
	return 0;
}

void retry_budget_configure(struct retry_budget *b, const json_t *config)
{
	double max, ratio;

	if (!json_is_object(config)) {
		memset(b, 0, sizeof(*b));
		return;
	}
	max = json_number_value(json_object_get(config, "maxTokens"));
	ratio = json_number_value(json_object_get(config, "tokenRatio"));
	if (!b->enabled || b->max_tokens != max)
		b->tokens = max;
	b->enabled = true;
	b->max_tokens = max;
	b->ratio = ratio;
	if (b->tokens > max)
		b->tokens = max;
}

json_t *retry_budget_json(const struct retry_budget *b)
{
	if (!b->enabled)
		return json_null();
	return json_pack("{s:f, s:f, s:f, s:b}", "tokens", b->tokens, "maxTokens", b->max_tokens,
			 "tokenRatio", b->ratio, "throttled", b->tokens <= b->max_tokens / 2);
}

int64_t retry_backoff_ms(const struct retry_policy *policy, int attempt)
{
	int64_t d = policy->base_delay_ms;

	if (attempt < 1)
		attempt = 1;
	if (policy->schedule_len > 0) {
		size_t i = (size_t)attempt - 1;

		return policy->schedule[i < policy->schedule_len ? i : policy->schedule_len - 1];
	}
	for (int i = 1; i < attempt; i++) {
		if (d > INT64_MAX / 2)
			return INT64_MAX;
		d *= 2;
	}
	return d;
}

/* splitmix64: small, fast, and good enough to spread retries. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static int64_t uniform(uint64_t *state, int64_t lo, int64_t hi)
{
	uint64_t span;

	if (hi <= lo)
		return lo;
	span = (uint64_t)(hi - lo) + 1;
	return lo + (int64_t)(span == 0 ? next_random(state) : next_random(state) % span);
}

static int64_t jittered(const struct retry_policy *p, struct retry_chain *c, int attempt,
			uint64_t now_ms)
{
	int64_t d = retry_backoff_ms(p, attempt);
	int64_t base, prev;

	/* AWS: the jitter is drawn within min(cap, nominal). */
	if (p->max_delay_ms > 0 && d > p->max_delay_ms)
		d = p->max_delay_ms;
	if (p->jitter == RETRY_JITTER_NONE)
		return d;
	if (c->rng == 0) {
		c->rng = p->seeded ? p->jitter_seed : now_ms ^ ((uint64_t)(uintptr_t)c << 16);
		c->rng ^= 0x5DEECE66Dull; /* never a zero state */
	}
	switch (p->jitter) {
	case RETRY_JITTER_FULL:
		return uniform(&c->rng, 0, d);
	case RETRY_JITTER_EQUAL:
		return d / 2 + uniform(&c->rng, 0, d - d / 2);
	case RETRY_JITTER_DECORRELATED:
		base = retry_backoff_ms(p, 1);
		prev = c->prev_delay_ms > 0 ? c->prev_delay_ms : base;
		d = uniform(&c->rng, base, prev > INT64_MAX / 3 ? INT64_MAX : prev * 3);
		if (p->max_delay_ms > 0 && d > p->max_delay_ms)
			d = p->max_delay_ms;
		c->prev_delay_ms = d;
		return d;
	case RETRY_JITTER_NONE:
		break;
	}
	return d;
}

static void reset_chain(struct retry_chain *c)
{
	c->attempt = 0;
	c->prev_delay_ms = 0;
	c->rng = 0;
}

static void stop(struct retry_chain *chain, int end_attempt, const char *error,
		 struct retry_decision *d)
{
	d->action = RETRY_ACT_STOP;
	if (chain->attempt > 0) {
		d->end = true;
		d->end_success = false;
		d->end_attempt = end_attempt;
		d->final_error = error;
	}
	reset_chain(chain);
}

/* Ends the chain with a message of our own, even when no retry was started:
 * the caller must learn why none will be. */
static void stop_with(struct retry_chain *chain, int end_attempt, struct retry_decision *d,
		      const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 5)))
#endif
	;

static void stop_with(struct retry_chain *chain, int end_attempt, struct retry_decision *d,
		      const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	d->owned = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (d->owned != NULL) {
		va_start(ap, fmt);
		vsnprintf(d->owned, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	d->action = RETRY_ACT_STOP;
	d->end = true;
	d->end_success = false;
	d->end_attempt = end_attempt;
	d->final_error = d->owned ? d->owned : "Retry stopped";
	reset_chain(chain);
}

void retry_park(const struct retry_policy *policy, struct retry_chain *chain, int64_t delay_ms,
		struct retry_decision *d)
{
	memset(d, 0, sizeof(*d));
	if (chain->attempt == 0)
		chain->attempt = 1;
	d->action = RETRY_ACT_WAIT;
	d->attempt = chain->attempt;
	d->max_attempts = policy->max_retries;
	d->delay_ms = delay_ms > 0 ? delay_ms : 0;
	d->reason = RETRY_REASON_USAGE_RESET;
	d->hint_ms = -1;
}

void retry_decide(const struct retry_policy *policy, struct retry_chain *chain,
		  struct retry_budget *budget, const struct retry_outcome *outcome,
		  uint64_t now_ms, struct retry_decision *d)
{
	const char *msg = outcome->error_message ? outcome->error_message : "Unknown error";
	int next;
	int64_t delay;

	memset(d, 0, sizeof(*d));
	d->hint_ms = -1;
	if (outcome->failure == RETRY_OK) {
		d->action = RETRY_ACT_DONE;
		if (budget != NULL && budget->enabled) {
			budget->tokens += budget->ratio;
			if (budget->tokens > budget->max_tokens)
				budget->tokens = budget->max_tokens;
		}
		if (chain->attempt > 0) {
			d->end = true;
			d->end_success = true;
			d->end_attempt = chain->attempt;
		}
		reset_chain(chain);
		return;
	}
	if (outcome->failure == RETRY_PERMANENT || !policy->enabled) {
		stop(chain, chain->attempt, msg, d);
		return;
	}
	if (budget != NULL && budget->enabled) {
		budget->tokens -= 1;
		if (budget->tokens < 0)
			budget->tokens = 0;
	}
	if (chain->attempt + 1 > policy->max_retries) {
		/* The end event names the last retry made, not the refused one;
		 * with maxRetries 0 no chain was opened, so none is closed. */
		stop(chain, chain->attempt, msg, d);
		return;
	}
	if (budget != NULL && budget->enabled && budget->tokens <= budget->max_tokens / 2) {
		stop_with(chain, chain->attempt, d,
			  "Retry budget exhausted (%.2f of %.2f tokens left; retries resume above %.2f). "
			  "Original error: %s", budget->tokens, budget->max_tokens,
			  budget->max_tokens / 2, msg);
		return;
	}
	next = chain->attempt + 1;
	d->attempt = next;
	d->max_attempts = policy->max_retries;
	if (outcome->switched != RETRY_SWITCH_NONE) {
		d->reason = outcome->switched == RETRY_SWITCH_CREDENTIAL
				    ? RETRY_REASON_CREDENTIAL_SWITCH : RETRY_REASON_MODEL_FALLBACK;
		d->action = RETRY_ACT_WAIT;
		d->delay_ms = 0;
		chain->attempt = next;
		return;
	}
	delay = jittered(policy, chain, next, now_ms);
	if (policy->max_delay_ms > 0 && delay > policy->max_delay_ms)
		delay = policy->max_delay_ms;
	d->reason = RETRY_REASON_BACKOFF;
	if (policy->respect_hints && outcome->hint_ms >= 0) {
		if (policy->max_delay_ms > 0 && outcome->hint_ms > policy->max_delay_ms) {
			stop_with(chain, next, d,
				  "Provider requested %" PRId64 "ms wait, exceeds retry.maxDelayMs "
				  "(%" PRId64 "ms). Original error: %s",
				  outcome->hint_ms, policy->max_delay_ms, msg);
			return;
		}
		if (outcome->hint_ms >= delay) {
			delay = outcome->hint_ms;
			d->reason = RETRY_REASON_SERVER_HINT;
			d->hint_ms = outcome->hint_ms;
		}
	}
	d->action = RETRY_ACT_WAIT;
	d->delay_ms = delay;
	chain->attempt = next;
}

void retry_decision_release(struct retry_decision *d)
{
	free(d->owned);
	d->owned = NULL;
}

void retry_cancel(struct retry_chain *chain, struct retry_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->hint_ms = -1;
	stop(chain, chain->attempt, RETRY_CANCELLED, d);
}

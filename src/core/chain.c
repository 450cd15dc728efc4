#include "core/chain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/hint.h"
#include "base/log.h"
#include "base/number.h"
#include "base/secret.h"
#include "base/utf8.h"
#include "core/fleet_hold.h"
#include "core/thinking.h"
#include "proto/event.h"

#define ABORTED_MESSAGE "Request was aborted"
#define FLEET_CANCELLED_MESSAGE "Fleet wait cancelled"

static void emit(struct chain *self, json_t *event)
{
	if (event == NULL) {
		LOG_ERROR("out of memory building an event");
		return;
	}
	self->cfg.ops.emit(self->cfg.ops.ctx, event);
}

static int64_t wall_ms(struct chain *self)
{
	return clock_wall_ms(self->cfg.clock);
}

/* A backoff or fleet hold starts or ends (get_session_stats' waitedMs). */
static void wait_begin(struct chain *self)
{
	if (self->stats.waiting)
		return;
	self->stats.waiting = true;
	self->stats.wait_since = clock_now(self->cfg.clock);
}

static void wait_end(struct chain *self)
{
	struct chain_stats *rs = &self->stats;

	if (!rs->waiting)
		return;
	rs->waiting = false;
	rs->waited_ms = number_add(rs->waited_ms,
				   (int64_t)(clock_now(self->cfg.clock) - rs->wait_since));
}

static void park_emit(void *ctx, json_t *event)
{
	emit(ctx, event);
}

int chain_init(struct chain *self, const struct chain_config *cfg)
{
	memset(self, 0, sizeof(*self));
	self->cfg = *cfg;
	park_init(&self->park, cfg->clock, park_emit, self);
	park_set_file(&self->park, cfg->ops.parked, cfg->ops.ctx);
	assistant_init(&self->reply, &cfg->out);
	continuation_init(&self->cont);
	retry_policy_default(&self->policy.retry);
	retry_budget_configure(&self->budget, settings_get(cfg->settings, "retry.budget"));
	if (fallback_init(&self->fallback, cfg->provider->credentials, cfg->model) != 0) {
		chain_release(self);
		return -1;
	}
	return 0;
}

void chain_release(struct chain *self)
{
	if (self->cfg.clock != NULL) {
		clock_timer_stop(self->cfg.clock, &self->wait_timer);
		clock_timer_stop(self->cfg.clock, &self->idle_timer);
		clock_timer_stop(self->cfg.clock, &self->start_failed_timer);
		park_forget(&self->park);
	}
	classify_free(self->cfg.classify);
	policy_release(&self->policy);
	fallback_release(&self->fallback);
	assistant_release(&self->reply);
	continuation_release(&self->cont);
	memset(self, 0, sizeof(*self));
}

static void start_attempt(struct chain *self);

/* The provider is running an attempt (not just failed to start one). */
static bool provider_running(struct chain *self)
{
	return self->phase == CHAIN_ATTEMPT && !clock_timer_active(&self->start_failed_timer);
}

/* Ends the attempt in flight without a word from the provider. */
static void stop_attempt(struct chain *self)
{
	if (provider_running(self))
		self->cfg.provider->ops->abort(self->cfg.provider);
	clock_timer_stop(self->cfg.clock, &self->start_failed_timer);
	clock_timer_stop(self->cfg.clock, &self->idle_timer);
}

void chain_turn(struct chain *self, const json_t *policy, unsigned policy_gen,
		const json_t *messages)
{
	const struct chain_ops *ops = &self->cfg.ops;
	size_t i;
	json_t *m, *ev;

	if (policy != NULL) {
		self->notices = 0;
		self->unknown_retried = 0;
		self->keep_park = false;
		park_forget(&self->park);
		/* set_auto_retry after the prompt was accepted still has its say. */
		policy_adopt(&self->policy, (json_t *)policy, policy_gen, self->cfg.settings,
			     self->cfg.classify);
		if (fallback_revert_if_rested(&self->fallback, wall_ms(self), &ev))
			emit(self, ev);
	}
	self->phase = CHAIN_ATTEMPT;
	emit(self, event_turn_start());
	json_array_foreach(messages, i, m) {
		emit(self, event_message_start(m));
		ops->journal(ops->ctx, m, false);
		ops->append(ops->ctx, m);
		emit(self, event_message_end(m));
	}
	start_attempt(self);
}

static void on_wait_over(struct clock_timer *timer, void *ctx);

/* A backoff is over: the retry's turn, with what was steered meanwhile. */
static void backoff_over(struct chain *self)
{
	wait_end(self);
	park_wake(&self->park, wall_ms(self));
	self->cfg.ops.retry_turn(self->cfg.ops.ctx);
}

/* The streamed message. */

static void on_idle_timeout(struct clock_timer *timer, void *ctx);

/* Data arrived: the stall clock starts again. */
static void touch(struct chain *self)
{
	int64_t idle = self->policy.retry.idle_timeout_ms;

	if (idle > 0 && self->phase == CHAIN_ATTEMPT && !self->cfg.provider->owns_idle_timeout)
		clock_timer_start(self->cfg.clock, &self->idle_timer, (uint64_t)idle,
				  on_idle_timeout, self);
}

/* message_start, once per attempt. */
static void open_reply(struct chain *self)
{
	struct provider *p = self->cfg.provider;

	assistant_open(&self->reply, p->api, p->name, self->fallback.model, wall_ms(self));
}

/* Closes the streamed message into the context; returns it borrowed from
 * there. usage: the provider's counts (NULL: none). skipped: why a retryable
 * failure is not retried, or NULL. journal_now: false when the caller writes
 * it to the file itself. */
static json_t *close_reply(struct chain *self, enum stop_reason stop, const char *error,
			   const struct assistant_usage *usage, const char *skipped,
			   bool journal_now)
{
	const struct chain_ops *ops = &self->cfg.ops;
	json_t *msg;

	open_reply(self);
	msg = assistant_close(&self->reply, stop_reason_name(stop), error, usage, skipped);
	ops->append(ops->ctx, msg);
	if (journal_now)
		ops->journal(ops->ctx, msg, false);
	json_decref(msg);
	return msg;
}

static void sink_start(void *ctx)
{
	touch(ctx);
	open_reply(ctx);
}

static void tell_fleet(struct chain *self, const struct provider_result *r,
		       const struct policy_verdict *v, const struct retry_policy *policy);

/* The fleet's probe is answered once its answer begins: an open circuit's
 * waiters leave now, not after the whole answer has streamed. */
static void probe_answered(struct chain *self)
{
	struct provider_result ok = { .stop = STOP_STOP };
	struct policy_verdict v = { .failed = false };
	struct retry_policy rp;

	if (self->cfg.fleet == NULL || !self->fleet_ans.probe || !self->attempt_sent)
		return;
	self->fleet_ans.probe = false;
	rp = policy_current(&self->policy, self->auto_retry_gen, self->cfg.settings);
	tell_fleet(self, &ok, &v, &rp);
}

static void sink_text_start(void *ctx)
{
	struct chain *self = ctx;

	touch(self);
	open_reply(self);
	probe_answered(self);
	continuation_text_start(&self->cont, &self->reply);
}

static void sink_text_delta(void *ctx, const char *s, size_t n)
{
	struct chain *self = ctx;

	touch(self);
	continuation_text_delta(&self->cont, &self->reply, s, n);
}

static void sink_text_end(void *ctx)
{
	struct chain *self = ctx;

	touch(self);
	continuation_text_end(&self->cont, &self->reply);
}

/* A thinking block streams like text, and keeps the stall clock from
 * firing as text does: a model that reasons for a minute is not stalled. */
static void sink_thinking_start(void *ctx)
{
	struct chain *self = ctx;

	touch(self);
	open_reply(self);
	probe_answered(self);
	assistant_thinking_start(&self->reply);
}

static void sink_thinking_delta(void *ctx, const char *s, size_t n)
{
	struct chain *self = ctx;

	touch(self);
	assistant_thinking_delta(&self->reply, s, n);
}

static void sink_thinking_end(void *ctx, const char *signature, size_t len, bool redacted)
{
	struct chain *self = ctx;

	touch(self);
	assistant_thinking_end(&self->reply, signature, len, redacted);
}

/* The backend's own retry inside the attempt: what it streamed of the
 * failed try is closed as a failed message is before a retry of ours, and
 * kept out of the context, so the answer holds the last try only. */
static void reset_reply(struct chain *self, const char *why)
{
	json_t *msg;

	if (!assistant_has_content(&self->reply))
		return;
	msg = assistant_close(&self->reply, stop_reason_name(STOP_ERROR), why, NULL, NULL);
	json_decref(msg);
	open_reply(self);
}

/* Whether a retry notice names a failure that no retry mends (a 401, a
 * spent quota, an overflow): the backend is then stopped rather than left to
 * retry it. Words the classifier does not know leave the backend alone. */
static bool notice_is_final(struct chain *self, const char *text, char *rule, size_t rulelen)
{
	struct classify_input in = { .text = text, .len = strlen(text), .now_ms = wall_ms(self) };
	struct classify_result r;

	classify_decide(policy_classifier(&self->policy, self->cfg.classify), &in, &r);
	snprintf(rule, rulelen, "%s", r.rule);
	return r.verdict != CLASSIFY_RETRYABLE && r.verdict != CLASSIFY_UNKNOWN;
}

/* Retries made in this chain: ours, and the backend's own where they count
 * (provider.counts_notices; none while retries are off). */
static int retries_used(const struct chain *self)
{
	return self->policy.retry.enabled ? self->retry.attempt + self->notices : 0;
}

static void on_start_failed(struct clock_timer *timer, void *ctx);

static void sink_event(void *ctx, json_t *event)
{
	struct chain *self = ctx;
	const char *type = json_string_value(json_object_get(event, "type"));
	const char *text;
	char rule[96], notice[sizeof(self->deferred_error)];

	touch(self);
	open_reply(self);
	if (type == NULL || strcmp(type, "provider_retry") != 0) {
		emit(self, event);
		return;
	}
	text = json_string_value(json_object_get(event, "errorMessage"));
	snprintf(notice, sizeof(notice), "%s", text ? text : "retrying");
	reset_reply(self, notice);
	emit(self, event);
	if (self->phase != CHAIN_ATTEMPT)
		return;
	if (self->cfg.provider->counts_notices)
		self->notices++;
	if (notice_is_final(self, notice, rule, sizeof(rule))) {
		LOG_INFO("%s: its own retry of a final failure (%s): attempt ended",
			 self->cfg.provider->name, rule);
	} else if (retries_used(self) > self->policy.retry.max_retries) {
		/* One retry layer: the backend's own retries are retries too. */
		LOG_INFO("%s: its own retries used up retry.maxRetries (%d): attempt ended",
			 self->cfg.provider->name, self->policy.retry.max_retries);
	} else {
		return;
	}
	snprintf(self->deferred_error, sizeof(self->deferred_error), "%s", notice);
	/* Reported on the next loop turn, as a start failure: inside the provider's call. */
	stop_attempt(self);
	clock_timer_start(self->cfg.clock, &self->start_failed_timer, 0, on_start_failed, self);
}

/* The end of an attempt. */

/* why: the judged failure that ended the chain, or NULL. */
static void emit_retry_end(struct chain *self, const struct retry_decision *d,
			   const struct event_why *why)
{
	if (!d->end)
		return;
	if (d->end_success)
		self->stats.succeeded++;
	else
		self->stats.failed++;
	emit(self, event_auto_retry_end(d->end_success, d->end_attempt, d->final_error, why));
}

/* abort, abort_retry, a cancelled hold: the open chain, if any, ends
 * cancelled. */
static void cancel_chain(struct chain *self)
{
	struct retry_decision d;

	retry_cancel(&self->retry, &d);
	if (d.end) {
		self->stats.cancelled++;
		emit(self, event_auto_retry_end(false, d.end_attempt, d.final_error, NULL));
	}
	retry_decision_release(&d);
}

/* What the log needs to say about a decision besides the decision. */
struct decision_note {
	const struct policy_verdict *v;
	const struct retry_policy *policy;
	int tried;          /* retries made in the chain before this attempt */
};

/* One debug line per decision: what failed, the rule, what happens next
 * and what set the wait. The error comes last and whole: the logger masks
 * the line before anything could cut it. */
static void log_decision(const struct retry_decision *d, const struct retry_outcome *o,
			 const struct decision_note *n, int64_t delay, const char *reason)
{
	const char *cls = n->v->failed ? classify_class_name(n->v->verdict) : "none";
	const char *rule = n->v->failed ? n->v->rule : "none";

	if (log_level < LOG_LEVEL_DEBUG)
		return;
	if (d->action == RETRY_ACT_DONE) {
		LOG_DEBUG("decision: action=done class=%s retries=%d", cls, n->tried);
		return;
	}
	if (d->action == RETRY_ACT_WAIT) {
		const char *src = d->reason == RETRY_REASON_SERVER_HINT ? n->v->hint_source : NULL;

		LOG_DEBUG("decision: action=retry attempt=%d/%d delay_ms=%lld set_by=%s%s%s "
			  "class=%s rule=%s error=%s", d->attempt, d->max_attempts,
			  (long long)delay, reason, src ? ":" : "", src ? src : "", cls, rule,
			  o->error_message);
		return;
	}
	LOG_DEBUG("decision: action=stop why=%s retries=%d/%d class=%s rule=%s error=%s",
		  o->failure == RETRY_PERMANENT ? "not-retryable"
		  : !n->policy->enabled ? "retries-off"
		  : n->tried >= n->policy->max_retries ? "retries-exhausted" : "limit",
		  n->tried, n->policy->max_retries, cls, rule,
		  d->final_error ? d->final_error : o->error_message);
}

static const char *fleet_who(struct chain *self)
{
	return fleet_provider_id(self->cfg.provider->name, self->cfg.provider->base_url,
				 self->fleet_provider, sizeof(self->fleet_provider));
}

static void stop_on_block(struct chain *self, struct retry_decision *d,
			  const struct retry_policy *policy);

/* Says what retry_decide decided, makes the planned switch before a retry,
 * and arms the backoff or hands the turn back. msg: borrowed, the closed
 * message. */
static void report(struct chain *self, const struct retry_decision *d,
		   const struct retry_outcome *o, const struct fallback_plan *plan,
		   const struct park_plan *park, const struct event_why *why,
		   const struct decision_note *note, json_t *msg)
{
	const struct chain_ops *ops = &self->cfg.ops;
	json_t *ev;
	int64_t delay;
	const char *reason;

	if (d->action != RETRY_ACT_WAIT) {
		park_forget(&self->park);
		log_decision(d, o, note, 0, NULL);
		/* A success closes the chain inside its turn, a failure after it. */
		if (d->action == RETRY_ACT_DONE)
			emit_retry_end(self, d, NULL);
		emit(self, event_turn_end(msg));
		if (d->action == RETRY_ACT_STOP)
			emit_retry_end(self, d, why);
		ops->turn_over(ops->ctx);
		return;
	}
	emit(self, event_turn_end(msg));
	if (fallback_apply(&self->fallback, plan, &ev))
		emit(self, ev);
	delay = d->delay_ms;
	reason = retry_reason_name(d->reason);
	if (self->cfg.fleet != NULL &&
	    (d->reason == RETRY_REASON_BACKOFF || d->reason == RETRY_REASON_SERVER_HINT)) {
		/* Another daemon's word holds the scope longer than this wait:
		 * say so now, rather than in a fleet_wait after the backoff. */
		int64_t left = fleet_known_block(self->cfg.fleet, fleet_who(self),
						 self->fleet_cred, self->fallback.model, NULL) -
			       wall_ms(self);

		if (left > delay + 100) {
			delay = left;
			reason = "fleet-server-block";
		}
	}
	log_decision(d, o, note, delay, reason);
	self->stats.retries++;
	ev = event_auto_retry_start(d->attempt, d->max_attempts, delay, o->error_message, reason,
				    d->hint_ms, why);
	continuation_announce(&self->cont, ev, self->cfg.provider, self->fallback.model, msg);
	if (d->reason == RETRY_REASON_USAGE_RESET) {
		park_begin(&self->park, park, policy_int(&self->policy, "usageWaitHeartbeatMs"),
			   wall_ms(self));
		park_describe(&self->park, ev);
	}
	emit(self, ev);
	if (d->reason == RETRY_REASON_USAGE_RESET)
		park_record(&self->park, &self->policy, o->error_message, why ? why->rule : NULL);
	/* The failed message leaves the context; the session file keeps it,
	 * marked "retried". */
	ops->drop_last(ops->ctx);
	self->phase = CHAIN_BACKOFF;
	wait_begin(self);
	clock_timer_start(self->cfg.clock, &self->wait_timer, (uint64_t)delay, on_wait_over, self);
}

/* An error no rule knows is neither transient nor final by any rule: it
 * gets retry.unknownRetries tries of this prompt's retries (pi and
 * oh-my-pi stop on it; docs/classify.md says why retryd does not). */
static void judge_unknown(struct chain *self, const struct provider_result *r,
			  const struct retry_policy *policy, struct policy_verdict *v)
{
	const char *e = v->error ? v->error : "";
	size_t n = strlen(e) < sizeof(self->stats.last_unknown) - 1
			   ? strlen(e) : sizeof(self->stats.last_unknown) - 1;

	memcpy(self->stats.last_unknown, e, n);
	self->stats.last_unknown[n] = '\0';
	utf8_repair(self->stats.last_unknown);
	/* A provider that could not even start (a missing program, a bad
	 * URL) meets the same next time. */
	if (r->next == PROVIDER_NEXT_CANNOT || !policy->enabled || self->start_failed)
		return;
	if (self->unknown_retried < policy->unknown_retries) {
		v->retryable = true;
		return;
	}
	if (policy->unknown_retries > 0) {
		char why[96];

		snprintf(why, sizeof(why), "unknown error: retry.unknownRetries (%d) used",
			 policy->unknown_retries);
		policy_verdict_stop(v, why);
	}
}

static void log_unknown(struct chain *self, const struct policy_verdict *v,
			const struct retry_policy *policy, bool retried)
{
	if (retried) {
		self->unknown_retried++;
		LOG_INFO("unknown error, retried %s: %s",
			 policy->unknown_retries == 1 ? "once" : "again", v->error);
	} else {
		LOG_INFO("unknown error, not retried: %s", v->error);
	}
}

/* classify once → fallback plan → retry_decide → emit → timer. */
static void sink_finish(void *ctx, const struct provider_result *r)
{
	struct chain *self = ctx;
	struct retry_policy policy = policy_current(&self->policy, self->auto_retry_gen,
						    self->cfg.settings);
	struct retry_outcome outcome = { .failure = RETRY_OK, .hint_ms = -1 };
	struct fallback_plan plan = { .kind = RETRY_SWITCH_NONE, .credential = -1 };
	struct park_plan park = { .park = false };
	struct policy_verdict v;
	struct event_why why = { NULL, NULL, false };
	struct retry_decision d;
	struct decision_note note = { &v, &policy, 0 };
	struct assistant_usage usage = { r->input_tokens, r->output_tokens, r->cache_read_tokens,
					 r->cache_write_tokens, r->total_tokens };
	json_t *msg;

	clock_timer_stop(self->cfg.clock, &self->idle_timer);
	self->next = r->next;
	policy_judge(&self->policy, self->cfg.classify, r, policy.enabled, wall_ms(self), &v);
	if (continuation_finish(&self->cont, &self->reply, r))
		v.retryable = true; /* the continuation's fault, not the request's: replayed */
	self->last_failed = v.failed;
	self->last_verdict = v.verdict;
	self->last_status = r->http_status;
	/* The backend's own retries count: when they and ours have made as
	 * many as the policy allows, this failure is the last. */
	if (self->notices > 0 && policy.enabled && v.retryable &&
	    retries_used(self) >= policy.max_retries) {
		char spent[128];

		snprintf(spent, sizeof(spent), "the agent's own retries used up retry.maxRetries (%d)",
			 policy.max_retries);
		policy_verdict_stop(&v, spent);
	}
	if (v.failed && v.verdict == CLASSIFY_UNKNOWN)
		judge_unknown(self, r, &policy, &v);
	if (self->fleet_spent && v.usage_limit) /* exact, not the text's rounding */
		v.hint_ms = self->fleet_ans.cred_until > wall_ms(self)
				    ? self->fleet_ans.cred_until - wall_ms(self) : 0;
	if (v.retryable && policy.enabled) {
		fallback_plan(&self->fallback, &self->policy, v.usage_limit, v.overload, v.hint_ms,
			      wall_ms(self), &plan);
		if (v.usage_limit && plan.kind == RETRY_SWITCH_NONE)
			park_consider(&self->park, &self->policy, r, &v, wall_ms(self), &park);
		/* Told by the fleet, not by its own answer: another daemon probes
		 * first, this one leaves after its answer, not in the same second. */
		if (park.park && self->fleet_spent)
			park_stagger(&park, PARK_MARGIN_MS + (int64_t)(clock_precise_us() % 2000000) / 1000);
	}
	self->fleet_spent = false; /* this attempt's word, not the next prompt's */
	if (v.failed) {
		why.error_class = classify_class_name(v.verdict);
		why.rule = v.rule;
		why.overload = v.overload;
	}
	if (self->cfg.fleet != NULL) {
		tell_fleet(self, r, &v, &policy);
		fleet_done(self->cfg.fleet);
	}
	/* Retries being off is no silent stop: the failed message says so
	 * (no auto_retry_end is owed, no chain having started). */
	msg = close_reply(self, r->stop, v.error, &usage,
			  r->stop == STOP_ERROR && v.retryable && !policy.enabled ? "disabled" : NULL,
			  false);
	if (r->stop == STOP_ERROR || r->stop == STOP_ABORTED) {
		outcome.error_message = v.error ? v.error
				      : r->error_message ? r->error_message : "Unknown error";
		outcome.failure = v.retryable ? RETRY_TRANSIENT : RETRY_PERMANENT;
		outcome.hint_ms = v.hint_ms;
		outcome.switched = plan.kind;
	} else {
		fallback_succeeded(&self->fallback);
	}
	if (v.failed && (size_t)v.verdict < sizeof(self->stats.errors) /
					      sizeof(self->stats.errors[0]))
		self->stats.errors[v.verdict]++;
	note.tried = self->retry.attempt;
	if (park.park)
		retry_park(&policy, &self->retry, park.delay_ms, &d);
	else
		retry_decide(&policy, &self->retry, &self->budget, &outcome,
			     clock_now(self->cfg.clock), &d);
	stop_on_block(self, &d, &policy);
	if (v.failed && v.verdict == CLASSIFY_UNKNOWN)
		log_unknown(self, &v, &policy, d.action == RETRY_ACT_WAIT);
	/* Written once the decision is known: a retried attempt is marked, so
	 * a resume does not load it back into the context. */
	self->cfg.ops.journal(self->cfg.ops.ctx, msg, d.action == RETRY_ACT_WAIT);
	report(self, &d, &outcome, &plan, &park, &why, &note, msg);
	retry_decision_release(&d);
	policy_verdict_release(&v);
}

static void on_idle_timeout(struct clock_timer *timer, void *ctx)
{
	struct chain *self = ctx;
	char err[96];
	struct provider_result r = { .stop = STOP_ERROR, .error_message = err, .hint_ms = -1 };

	(void)timer;
	if (self->phase != CHAIN_ATTEMPT)
		return;
	errbuf_set(err, sizeof(err), "stream stall: no data for %lld ms",
		   (long long)self->policy.retry.idle_timeout_ms);
	stop_attempt(self);
	sink_finish(self, &r);
}

/* A provider that cannot start is reported on the next loop turn, as one
 * that fails later is: reporting it from start_attempt would start the next
 * queued prompt from inside this one, and a long queue would recurse. */
static void on_start_failed(struct clock_timer *timer, void *ctx)
{
	struct chain *self = ctx;
	struct provider_result r = { .stop = STOP_ERROR, .error_message = self->deferred_error,
				     .hint_ms = -1, .next = self->deferred_next,
				     .next_why = self->deferred_next == PROVIDER_NEXT_CANNOT
							 ? self->deferred_why : NULL };

	(void)timer;
	self->deferred_next = PROVIDER_NEXT_CONTINUE;
	self->start_failed = true;
	sink_finish(self, &r);
	self->start_failed = false;
}

static const struct provider_sink sink_template = {
	.start = sink_start,
	.text_start = sink_text_start,
	.text_delta = sink_text_delta,
	.text_end = sink_text_end,
	.finish = sink_finish,
	.event = sink_event,
	.thinking_start = sink_thinking_start,
	.thinking_delta = sink_thinking_delta,
	.thinking_end = sink_thinking_end,
};

static void send_attempt(struct chain *self)
{
	struct provider_sink sink = sink_template;
	struct chain_context cc = { NULL, NULL };
	struct attempt_ctx actx = {
		.model = self->fallback.model,
		.credential = fallback_credential(&self->fallback),
		.attempt = self->retry.attempt,
		.next = self->retry.attempt > 0 ? self->next : PROVIDER_NEXT_CONTINUE,
		.idle_timeout_ms = self->policy.retry.idle_timeout_ms,
		.continuation_prompt = policy_string(&self->policy, "continuationPrompt"),
	};
	struct provider *p = self->cfg.provider;

	self->cfg.ops.context(self->cfg.ops.ctx, &cc);
	actx.messages = continuation_attempt(&self->cont, &actx, cc.messages,
					     policy_string(&self->policy, "continueCutAnswers"));
	/* The model of this attempt may be a fallback: clamped again. */
	actx.thinking_level = thinking_clamp(provider_model(p, self->fallback.model),
					     cc.thinking_level);
	sink.ctx = self;
	self->phase = CHAIN_ATTEMPT;
	self->reply.delta_updates =
		strcmp(settings_get_string(self->cfg.settings, "rpc.messageUpdates"), "delta") == 0;
	touch(self);
	self->attempt_sent = false;
	self->stats.attempts++;
	if (p->ops->start(p, &actx, &sink, self->deferred_error, sizeof(self->deferred_error)) != 0) {
		clock_timer_start(self->cfg.clock, &self->start_failed_timer, 0, on_start_failed,
				  self);
		return;
	}
	self->attempt_sent = true;
	if (self->output_paused && p->ops->pause)
		p->ops->pause(p, true);
}

/* The fleet. */

/* The fleet's name for a credential: the provider's fingerprint of its
 * secret, else one of its name (sim, agent CLIs: no secret here). */
static const char *cred_fingerprint(struct chain *self, const char *name, char out[17])
{
	const json_t *fp = json_object_get(self->cfg.provider->fingerprints, name);
	char salted[300];

	if (json_is_string(fp))
		return json_string_value(fp);
	snprintf(salted, sizeof(salted), "%s:%s", self->cfg.provider->name, name);
	secret_fingerprint(salted, out);
	return out;
}

const char *chain_credential_fingerprint(struct chain *self, char out[17])
{
	struct authstore *auth = &self->fallback.auth;

	return auth->count > 0 ? cred_fingerprint(self, authstore_current(auth), out) : NULL;
}

static void on_fleet_answer(void *ctx, const struct fleet_answer *a);

static bool fleet_alone(struct chain *self)
{
	return fleet_config_mode(self->cfg.fleet) == FLEET_MODE_PROCESS;
}

/* A retry whose backoff would end inside a shared block longer than
 * retry.maxDelayMs is no retry: d becomes a stop that says so, as the
 * daemon's own server hint would (auto_retry_end even before any retry),
 * the chain reset. The sentence stays in deferred_error for the report. */
static void stop_on_block(struct chain *self, struct retry_decision *d,
			  const struct retry_policy *policy)
{
	struct fleet_answer who;
	struct retry_decision gone;
	int64_t left;

	if (self->cfg.fleet == NULL || d->action != RETRY_ACT_WAIT || policy->max_delay_ms <= 0 ||
	    (d->reason != RETRY_REASON_BACKOFF && d->reason != RETRY_REASON_SERVER_HINT))
		return;
	left = fleet_known_block(self->cfg.fleet, fleet_who(self), self->fleet_cred,
				 self->fallback.model, &who) - wall_ms(self);
	if (left <= d->delay_ms + 100 || left <= policy->max_delay_ms)
		return;
	fleet_hold_refusal(&who, fleet_alone(self), left, policy->max_delay_ms, wall_ms(self),
			   self->deferred_error, sizeof(self->deferred_error));
	retry_cancel(&self->retry, &gone);
	retry_decision_release(&gone);
	*d = (struct retry_decision){ .action = RETRY_ACT_STOP, .end = true,
				      .end_attempt = d->attempt, .hint_ms = -1,
				      .final_error = self->deferred_error };
}

/* Before an attempt: whether the fleet lets it go, with which credential
 * and model. The answer may come later (Redis); the phase is HOLD till then. */
static void ask_fleet(struct chain *self, bool held)
{
	struct authstore *auth = &self->fallback.auth;
	const json_t *fallbacks = json_object_get(self->policy.json, "fallbackModels");
	const char *creds[32], *models[33];
	char fps[32][17];
	struct fleet_ask q = { .provider = fleet_who(self), .creds = creds,
			       .models = models, .retry = self->retry.attempt > 0,
			       .held = held };
	struct fleet_answer a;
	size_t i;

	for (i = 0; i < auth->count && q.ncreds < 32; i++) {
		size_t k = (auth->current + i) % auth->count;

		creds[q.ncreds] = cred_fingerprint(self, auth->names[k], fps[q.ncreds]);
		q.ncreds++;
	}
	models[q.nmodels++] = self->fallback.model;
	for (i = 0; i < json_array_size(fallbacks) && q.nmodels < 33; i++) {
		const char *m = json_string_value(json_array_get(fallbacks, i));

		if (m != NULL && strcmp(m, self->fallback.model) != 0)
			models[q.nmodels++] = m;
	}
	self->phase = CHAIN_HOLD;
	if (fleet_ask(self->cfg.fleet, &q, &a, on_fleet_answer, self) == 1)
		on_fleet_answer(self, &a);
}

static void hold_over(struct chain *self)
{
	wait_end(self);
	/* A probe, budget or lease wait asks again. A reserved slot (a block's
	 * end, a pacing slot) is ours, but the fleet may have learned since
	 * that the credential is spent or the model cooling: ask, holding it. */
	ask_fleet(self, self->fleet_ans.reserved);
}

static void on_wait_over(struct clock_timer *timer, void *ctx)
{
	struct chain *self = ctx;

	(void)timer;
	if (self->phase == CHAIN_BACKOFF)
		backoff_over(self);
	else
		hold_over(self);
}

static void on_fleet_answer(void *ctx, const struct fleet_answer *a)
{
	struct chain *self = ctx;
	struct authstore *auth = &self->fallback.auth;
	json_t *ev;

	self->fleet_ans = *a;
	self->fleet_cred = NULL;
	if (auth->count > 0 && a->cred < 0) {
		/* Every credential is spent, as the fleet knows: the answer a
		 * request would get, without sending it. */
		self->fleet_spent = true;
		fleet_hold_spent(a, self->cfg.provider->name, wall_ms(self), self->deferred_error,
				 sizeof(self->deferred_error));
		self->phase = CHAIN_ATTEMPT;
		clock_timer_start(self->cfg.clock, &self->start_failed_timer, 0, on_start_failed,
				  self);
		return;
	}
	if (auth->count > 0 && a->cred > 0) {
		struct fallback_plan plan = { .kind = RETRY_SWITCH_CREDENTIAL,
					      .credential = (int)((auth->current + (size_t)a->cred) %
								  auth->count) };

		if (fallback_apply(&self->fallback, &plan, &ev))
			emit(self, ev);
	}
	if (a->model > 0) {
		const json_t *fallbacks = json_object_get(self->policy.json, "fallbackModels");
		const char *to = NULL;
		int seen = 0;

		for (size_t i = 0; i < json_array_size(fallbacks) && to == NULL; i++) {
			const char *m = json_string_value(json_array_get(fallbacks, i));

			if (m != NULL && strcmp(m, self->fallback.model) != 0 && ++seen == a->model)
				to = m;
		}
		if (to != NULL) {
			struct fallback_plan plan = { .kind = RETRY_SWITCH_MODEL, .credential = -1,
						      .model = to, .reason = "overloaded" };

			if (fallback_apply(&self->fallback, &plan, &ev))
				emit(self, ev);
		}
	}
	if (auth->count > 0) {
		char fp[17];

		/* Kept for the attempt's report: the provider's string may not be. */
		snprintf(self->fleet_fp, sizeof(self->fleet_fp), "%s",
			 cred_fingerprint(self, authstore_current(auth), fp));
		self->fleet_cred = self->fleet_fp;
	}
	if (a->wait_ms > 0 && a->reason == FLEET_SERVER_BLOCK &&
	    self->policy.retry.max_delay_ms > 0 && a->wait_ms > self->policy.retry.max_delay_ms) {
		/* Another daemon's server word obeys this daemon's own limit, as
		 * its own server hint would: the prompt ends now, saying whose. */
		fleet_hold_refusal(a, fleet_alone(self), a->wait_ms, self->policy.retry.max_delay_ms,
				   wall_ms(self), self->deferred_error, sizeof(self->deferred_error));
		snprintf(self->deferred_why, sizeof(self->deferred_why),
			 "a shared block longer than retry.maxDelayMs");
		self->deferred_next = PROVIDER_NEXT_CANNOT;
		self->phase = CHAIN_ATTEMPT;
		clock_timer_start(self->cfg.clock, &self->start_failed_timer, 0, on_start_failed,
				  self);
		return;
	}
	if (a->wait_ms > 0) {
		/* Every hold, first or repeated, says how long, why and who
		 * caused it: the announced waits add up to the time held. */
		emit(self, fleet_hold_event(a, fleet_alone(self), wall_ms(self)));
		self->hold_reason = a->reason;
		wait_begin(self);
		clock_timer_start(self->cfg.clock, &self->wait_timer, (uint64_t)a->wait_ms,
				  on_wait_over, self);
		return;
	}
	send_attempt(self);
}

static void start_attempt(struct chain *self)
{
	self->hold_reason = FLEET_GO;
	if (self->cfg.fleet != NULL)
		ask_fleet(self, false);
	else
		send_attempt(self);
}

/* Ends a hold without sending: no callback, no timer. */
static void stop_hold(struct chain *self)
{
	if (self->cfg.fleet != NULL)
		fleet_cancel(self->cfg.fleet);
	clock_timer_stop(self->cfg.clock, &self->wait_timer);
	wait_end(self);
}

/* How the provider's answer counts for the fleet. */
static enum fleet_outcome_kind fleet_kind(const struct provider_result *r,
					  const struct policy_verdict *v)
{
	if (r->stop != STOP_ERROR)
		return FLEET_OUT_SUCCESS;
	if (!v->failed)
		return FLEET_OUT_LOCAL;
	if (v->verdict == CLASSIFY_RETRYABLE) {
		/* No answer at all (refused, reset, timed out, a stall): this
		 * daemon's network, not the provider's state. */
		if (r->http_status == 0 && !v->overload &&
		    (strncmp(v->rule, "text:transientPatterns", 22) == 0 ||
		     strncmp(v->rule, "text:transportPatterns", 22) == 0 ||
		     strstr(v->error ? v->error : "", "stream stall") != NULL))
			return FLEET_OUT_LOCAL;
		return FLEET_OUT_SERVER;
	}
	return FLEET_OUT_ANSWERED;
}

static void tell_fleet(struct chain *self, const struct provider_result *r,
		       const struct policy_verdict *v, const struct retry_policy *policy)
{
	struct fleet_tell t = {
		.provider = fleet_who(self),
		.cred = self->fleet_cred,
		.model = self->fallback.model,
		.out = { .kind = fleet_kind(r, v), .block_ms = -1,
			 .rpm_limit = hint_announced_rpm(r->headers), .member = 0,
			 .status = r->http_status },
		.usage_reset_ms = -1,
		.overload = v->failed && v->overload,
		.fallback_after = policy->fallback_after_consecutive,
		.cooldown_ms = policy_int(&self->policy, "fallbackCooldownMs"),
	};

	if (r->stop == STOP_ABORTED || !self->attempt_sent) {
		fleet_abandon(self->cfg.fleet, t.provider, t.cred);
		return;
	}
	/* The server's word is shared only when this daemon takes it itself. */
	if (policy->respect_hints) {
		if (v->failed && v->hint_ms > 0)
			t.out.block_ms = v->hint_ms;
		else if (r->stop != STOP_ERROR &&
			 !hint_in_headers(r->headers, wall_ms(self), true, &t.out.block_ms))
			t.out.block_ms = -1;
	}
	if (v->failed && v->usage_limit) {
		t.usage_reset_ms = v->hint_ms > 0 ? v->hint_ms
			: policy_int(&self->policy, "usageLimitCooldownMs");
		t.out.block_ms = -1; /* the credential's, not the scope's */
	}
	fleet_tell(self->cfg.fleet, &t);
}

/* Cancelling. */

/* A held attempt ends as an aborted message, inside its turn. */
static void abort_hold(struct chain *self)
{
	stop_hold(self);
	emit(self, event_turn_end(close_reply(self, STOP_ABORTED, FLEET_CANCELLED_MESSAGE, NULL,
					      NULL, true)));
	cancel_chain(self);
}

bool chain_abort_retry(struct chain *self)
{
	if (self->phase == CHAIN_HOLD) {
		abort_hold(self);
		self->phase = CHAIN_IDLE;
		return true;
	}
	if (self->phase != CHAIN_BACKOFF)
		return false;
	clock_timer_stop(self->cfg.clock, &self->wait_timer);
	park_record_end(&self->park, self->keep_park);
	park_forget(&self->park);
	wait_end(self);
	self->phase = CHAIN_IDLE;
	cancel_chain(self);
	return true;
}

void chain_abort(struct chain *self)
{
	/* Stopped while a park's probe (or the backoff after it) was out: the
	 * park is due now, so a --continue probes at once. */
	bool kept = self->keep_park && park_probe_out(&self->park);
	json_t *msg;

	park_record_end(&self->park, self->keep_park);
	if (self->phase == CHAIN_BACKOFF) {
		clock_timer_stop(self->cfg.clock, &self->wait_timer);
		wait_end(self);
		cancel_chain(self);
	} else if (self->phase == CHAIN_HOLD) {
		abort_hold(self);
	} else if (self->phase == CHAIN_ATTEMPT) {
		stop_attempt(self);
		msg = close_reply(self, STOP_ABORTED, ABORTED_MESSAGE, NULL, NULL, !kept);
		if (kept) /* the probe's answer is still owed: not the conversation's */
			self->cfg.ops.journal(self->cfg.ops.ctx, msg, true);
		emit(self, event_turn_end(msg));
		cancel_chain(self);
	}
	if (kept)
		park_record_stopped(&self->park, wall_ms(self));
	park_forget(&self->park);
	self->keep_park = false;
	self->phase = CHAIN_IDLE;
}

void chain_keep_park(struct chain *self)
{
	self->keep_park = true;
}

bool chain_resume_park(struct chain *self, const json_t *policy, unsigned policy_gen,
		       const json_t *record)
{
	const char *error = json_string_value(json_object_get(record, "errorMessage"));
	const char *rule = json_string_value(json_object_get(record, "rule"));
	struct event_why why = { classify_class_name(CLASSIFY_USAGE_LIMIT), rule ? rule : "", false };
	struct retry_policy rp;
	struct park_plan plan;
	struct retry_decision d;
	json_t *ev;

	self->notices = 0;
	self->unknown_retried = 0;
	policy_adopt(&self->policy, (json_t *)policy, policy_gen, self->cfg.settings,
		     self->cfg.classify);
	if (park_restore(&self->park, &self->policy, record, wall_ms(self), &plan) != 0)
		return false;
	if (!plan.park) {
		LOG_WARN("not resuming the park: %s", plan.why);
		emit(self, event_auto_retry_end(false, 1, plan.why, &why));
		if (self->cfg.ops.parked != NULL) /* not waited: not resumed again */
			self->cfg.ops.parked(self->cfg.ops.ctx, NULL);
		park_forget(&self->park);
		return false;
	}
	rp = policy_current(&self->policy, self->auto_retry_gen, self->cfg.settings);
	retry_park(&rp, &self->retry, plan.delay_ms, &d);
	ev = event_auto_retry_start(d.attempt, d.max_attempts, d.delay_ms,
				    error ? error : "usage limit", retry_reason_name(d.reason), -1,
				    &why);
	park_begin(&self->park, &plan, policy_int(&self->policy, "usageWaitHeartbeatMs"),
		   wall_ms(self));
	park_describe(&self->park, ev);
	emit(self, ev);
	park_record(&self->park, &self->policy, error, rule);
	LOG_INFO("resuming a park: probe in %lld ms", (long long)d.delay_ms);
	self->stats.retries++;
	self->phase = CHAIN_BACKOFF;
	wait_begin(self);
	clock_timer_start(self->cfg.clock, &self->wait_timer, (uint64_t)d.delay_ms, on_wait_over,
			  self);
	return true;
}

void chain_retry_toggled(struct chain *self)
{
	self->auto_retry_gen++;
}

void chain_set_classify(struct chain *self, struct classify *c)
{
	classify_free(self->cfg.classify);
	self->cfg.classify = c;
	retry_budget_configure(&self->budget, settings_get(self->cfg.settings, "retry.budget"));
}

void chain_set_output_paused(struct chain *self, bool paused)
{
	struct provider *p = self->cfg.provider;

	self->output_paused = paused;
	if (provider_running(self) && p->ops->pause)
		p->ops->pause(p, paused);
}

void chain_reset(struct chain *self)
{
	memset(&self->stats, 0, sizeof(self->stats));
	self->retry.attempt = 0;
}

/* What the owner shows. */

json_t *chain_prompt_result(const struct chain *self, const json_t *messages, const char *id,
			    bool aborted)
{
	const json_t *last = NULL, *m;
	const char *stop, *status = aborted ? "aborted" : "completed";
	json_t *error = NULL;
	size_t i;

	json_array_foreach(messages, i, m)
		if (json_is_string(json_object_get(m, "role")) &&
		    strcmp(json_string_value(json_object_get(m, "role")), "assistant") == 0)
			last = m;
	stop = json_string_value(json_object_get(last, "stopReason"));
	if (!aborted && stop != NULL && strcmp(stop, "aborted") == 0)
		status = "aborted";
	if (!aborted && stop != NULL && strcmp(stop, "error") == 0) {
		status = "error";
		error = chain_failure_json(self, json_object_get(last, "errorMessage"),
					   json_object_get(last, "provider"),
					   json_object_get(last, "model"));
	}
	return event_prompt_result(id, status, error, true);
}

json_t *chain_failure_json(const struct chain *self, const json_t *message,
			   const json_t *provider, const json_t *model)
{
	/* Transient, so that resubmitting later may succeed: a retryable
	 * failure, or a usage limit (its window resets). */
	bool retryable = self->last_failed && (self->last_verdict == CLASSIFY_RETRYABLE ||
					       self->last_verdict == CLASSIFY_USAGE_LIMIT);
	json_t *e = json_pack("{s:s, s:b}", "message",
			      json_is_string(message) ? json_string_value(message) : "Unknown error",
			      "retryable", retryable);

	if (e == NULL)
		return NULL;
	if (json_is_string(provider))
		json_object_set(e, "provider", (json_t *)provider);
	if (json_is_string(model))
		json_object_set(e, "model", (json_t *)model);
	if (self->last_failed && self->last_status >= 100 && self->last_status <= 599)
		json_object_set_new(e, "httpStatus", json_integer(self->last_status));
	return e;
}

json_t *chain_stats_json(const struct chain *self)
{
	const struct chain_stats *rs = &self->stats;
	int64_t waited = rs->waited_ms;

	if (rs->waiting)
		waited = number_add(waited, (int64_t)(clock_now(self->cfg.clock) - rs->wait_since));
	return json_pack(
		"{s:I, s:I, s:{s:I, s:I, s:I}, s:I, s:{s:I, s:I, s:I, s:I, s:I}, s:o}",
		"attempts", (json_int_t)rs->attempts, "retries", (json_int_t)rs->retries,
		"chains", "succeeded", (json_int_t)rs->succeeded,
		"failed", (json_int_t)rs->failed, "cancelled", (json_int_t)rs->cancelled,
		"waitedMs", (json_int_t)waited,
		"errorsByClass",
		classify_class_name(CLASSIFY_RETRYABLE), (json_int_t)rs->errors[CLASSIFY_RETRYABLE],
		classify_class_name(CLASSIFY_NOT_RETRYABLE),
		(json_int_t)rs->errors[CLASSIFY_NOT_RETRYABLE],
		classify_class_name(CLASSIFY_CONTEXT_OVERFLOW),
		(json_int_t)rs->errors[CLASSIFY_CONTEXT_OVERFLOW],
		classify_class_name(CLASSIFY_USAGE_LIMIT),
		(json_int_t)rs->errors[CLASSIFY_USAGE_LIMIT],
		classify_class_name(CLASSIFY_UNKNOWN), (json_int_t)rs->errors[CLASSIFY_UNKNOWN],
		"lastUnknownError", rs->last_unknown[0] != '\0' ? json_string(rs->last_unknown)
								: json_null());
}

json_t *chain_usage_reset(const struct chain *self)
{
	return park_state_json(&self->park, clock_wall_ms(self->cfg.clock));
}

json_t *chain_fleet_state(struct chain *self)
{
	char fp[17];
	const char *cred = chain_credential_fingerprint(self, fp);

	return fleet_state(self->cfg.fleet, fleet_who(self), cred, self->fallback.model);
}

json_t *chain_fleet_clear(struct chain *self)
{
	char fp[17], scope[FLEET_SCOPE_MAX];
	const char *cred;
	int n;

	if (self->cfg.fleet == NULL)
		return json_pack("{s:i}", "cleared", 0);
	cred = chain_credential_fingerprint(self, fp);
	n = fleet_clear(self->cfg.fleet, fleet_who(self), cred, self->fallback.model,
			scope, sizeof(scope));
	LOG_INFO("fleet: fleet_clear on %s", scope);
	return json_pack("{s:i, s:s, s:s}", "cleared", n, "scope", scope, "mode",
			 fleet_mode_name(fleet_config_mode(self->cfg.fleet)));
}

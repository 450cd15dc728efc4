#include "core/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "base/errbuf.h"
#include "base/hint.h"
#include "base/log.h"
#include "base/number.h"
#include "base/random.h"
#include "base/secret.h"
#include "base/utf8.h"
#include "core/queue.h"
#include "core/thinking.h"
#include "proto/command.h"
#include "proto/event.h"
#include "proto/message.h"
#include "proto/state.h"

#define ABORTED_MESSAGE "Request was aborted"
#define FLEET_CANCELLED_MESSAGE "Fleet wait cancelled"

/* Helpers. */

static void emit(struct session *self, json_t *event)
{
	if (event == NULL) {
		LOG_ERROR("out of memory building an event");
		return;
	}
	self->cfg.emit(self->cfg.emit_ctx, event);
}

static int64_t wall_ms(struct session *self)
{
	return clock_wall_ms(self->cfg.clock);
}

/* retried: a failed attempt that a retry drops from the context. */
static void journal_write(struct session *self, const json_t *message, bool retried)
{
	char err[512];
	bool reported = self->journal.failed;

	if (journal_append(&self->journal, message, retried, err, sizeof(err)) == 0 || reported)
		return;
	LOG_ERROR("%s", err);
	utf8_repair(err); /* the path is bytes */
	emit(self, event_notice("error", "session", err));
}

/* Adds a message to the context and to this run's messages; the caller
 * writes it to the session file. */
static void add_to_context(struct session *self, json_t *message)
{
	json_array_append(self->messages, message);
	json_array_append(self->run_messages, message);
}

/* Adds a message to the session file, the context and this run's messages. */
static void add_message(struct session *self, json_t *message)
{
	journal_write(self, message, false);
	add_to_context(self, message);
}

/* A backoff or fleet hold starts or ends (get_session_stats' waitedMs). */
static void wait_begin(struct session *self)
{
	if (self->retry_stats.waiting)
		return;
	self->retry_stats.waiting = true;
	self->retry_stats.wait_since = clock_now(self->cfg.clock);
}

static void wait_end(struct session *self)
{
	struct session_retry_stats *rs = &self->retry_stats;

	if (!rs->waiting)
		return;
	rs->waiting = false;
	rs->waited_ms = number_add(rs->waited_ms,
				   (int64_t)(clock_now(self->cfg.clock) - rs->wait_since));
}

static void drop_last_message(struct session *self)
{
	size_t n = json_array_size(self->messages);
	size_t r = json_array_size(self->run_messages);

	if (n > 0)
		json_array_remove(self->messages, n - 1);
	if (r > 0)
		json_array_remove(self->run_messages, r - 1);
}

static void start_new_session(struct session *self)
{
	int64_t now = wall_ms(self);

	random_uuid_v7(self->id, now);
	free(self->file);
	self->file = self->fixed_file != NULL ? strdup(self->fixed_file)
		   : journal_path(self->session_dir, self->id, now);
	journal_release(&self->journal);
	journal_init(&self->journal, self->file, self->id, now);
	json_array_clear(self->messages);
	free(self->name);
	self->name = NULL;
	memset(&self->retry_stats, 0, sizeof(self->retry_stats));
}

/* The session continues a file: its id, its messages, appended to without
 * a new header. new_session leaves it for a new file in the directory. */
static int resume_session(struct session *self, const struct session_config *cfg)
{
	json_t *copy = json_deep_copy(cfg->resume_messages);

	if (copy == NULL || json_array_extend(self->messages, copy) != 0) {
		json_decref(copy);
		return -1;
	}
	json_decref(copy);
	snprintf(self->id, sizeof(self->id), "%s", cfg->resume_id);
	free(self->file);
	self->file = strdup(cfg->resume_file);
	journal_release(&self->journal);
	if (self->file == NULL ||
	    journal_init(&self->journal, self->file, self->id, wall_ms(self)) != 0)
		return -1;
	journal_continue(&self->journal);
	return 0;
}

/* The provider's first model: the one a session without --model uses. */
static const char *first_model(const struct provider *p)
{
	const char *id = json_string_value(json_object_get(json_array_get(p->models, 0), "id"));

	return id != NULL ? id : "";
}

/* The thinking level. */

/* The settings entry of the model in use (borrowed), or NULL. */
static const json_t *model_entry(struct session *self, const char *model)
{
	return provider_model(self->cfg.provider, model);
}

/* pi's start: the level a resumed file last changed to, else the setting
 * defaultThinkingLevel, clamped to the model. */
static void init_thinking_level(struct session *self)
{
	char *saved = self->cfg.resume_file != NULL
		? journal_load_thinking_level(self->cfg.resume_file) : NULL;
	const char *want = saved != NULL
		? saved : settings_get_string(self->cfg.settings, "defaultThinkingLevel");

	self->thinking_level = thinking_clamp(model_entry(self, self->fallback.model), want);
	free(saved);
}

/* A level (static) that may differ from the current one: pi journals,
 * persists and announces only a change. */
static void apply_thinking_level(struct session *self, const char *level)
{
	char err[512];
	const json_t *model = model_entry(self, self->fallback.model);

	if (strcmp(level, self->thinking_level) == 0)
		return;
	self->thinking_level = level;
	if (journal_thinking_level(&self->journal, level, wall_ms(self), err, sizeof(err)) != 0) {
		LOG_ERROR("%s", err);
		utf8_repair(err);
		emit(self, event_notice("error", "session", err));
	}
	/* pi keeps "off" from a model that cannot think out of the default. */
	if ((thinking_model_reasons(model) || strcmp(level, "off") != 0) &&
	    settings_persist(self->cfg.settings, "defaultThinkingLevel", json_string(level), err,
			     sizeof(err)) != 0)
		LOG_WARN("%s", err);
	emit(self, event_thinking_level_changed(level));
}

void session_set_thinking_level(struct session *self, const char *level)
{
	apply_thinking_level(self, thinking_clamp(model_entry(self, self->fallback.model), level));
}

void session_cycle_thinking_level(struct session *self, json_t **data)
{
	const char *next = thinking_next(model_entry(self, self->fallback.model),
					 self->thinking_level);

	*data = NULL;
	if (next == NULL)
		return;
	apply_thinking_level(self, next);
	*data = json_pack("{s:s}", "level", self->thinking_level);
}

/* After set_model (old_reasons: the model before it could think): pi keeps
 * the level of a thinking model, else starts from the setting, clamped to
 * the new model. */
static void rethink_for_model(struct session *self, bool old_reasons)
{
	const char *want = old_reasons
		? self->thinking_level : settings_get_string(self->cfg.settings, "defaultThinkingLevel");

	apply_thinking_level(self, thinking_clamp(model_entry(self, self->fallback.model), want));
}

int session_init(struct session *self, const struct session_config *cfg)
{
	struct assistant_output out = {
		.emit = cfg->emit, .line_buf = cfg->line_buf, .line_done = cfg->line_done,
		.ctx = cfg->emit_ctx,
	};

	memset(self, 0, sizeof(*self));
	self->cfg = *cfg;
	assistant_init(&self->reply, &out);
	self->fixed_file = cfg->session_file ? strdup(cfg->session_file) : NULL;
	self->session_dir = cfg->session_dir ? strdup(cfg->session_dir) : NULL;
	self->messages = json_array();
	self->run_messages = json_array();
	self->steering = json_array();
	self->follow_ups = json_array();
	retry_policy_default(&self->policy.retry);
	retry_budget_configure(&self->budget, settings_get(cfg->settings, "retry.budget"));
	if (self->messages == NULL || self->run_messages == NULL || self->steering == NULL ||
	    self->follow_ups == NULL ||
	    fallback_init(&self->fallback, cfg->provider->credentials,
			  cfg->model ? cfg->model : first_model(cfg->provider)) != 0) {
		session_release(self);
		return -1;
	}
	start_new_session(self);
	if (cfg->resume_file != NULL && resume_session(self, cfg) != 0) {
		session_release(self);
		return -1;
	}
	init_thinking_level(self);
	return 0;
}

void session_release(struct session *self)
{
	if (self->cfg.clock != NULL) {
		clock_timer_stop(self->cfg.clock, &self->retry_timer);
		clock_timer_stop(self->cfg.clock, &self->idle_timer);
		clock_timer_stop(self->cfg.clock, &self->start_failed_timer);
		clock_timer_stop(self->cfg.clock, &self->hold_timer);
	}
	classify_free(self->cfg.classify);
	policy_release(&self->policy);
	fallback_release(&self->fallback);
	assistant_release(&self->reply);
	json_decref(self->messages);
	json_decref(self->run_messages);
	json_decref(self->steering);
	json_decref(self->follow_ups);
	journal_release(&self->journal);
	free(self->fixed_file);
	free(self->session_dir);
	free(self->file);
	free(self->name);
	memset(self, 0, sizeof(*self));
}

/* The run. */

static void start_attempt(struct session *self);

static void maybe_idle(struct session *self)
{
	void (*cb)(void *) = self->idle_cb;

	if (cb == NULL || self->busy)
		return;
	self->idle_cb = NULL;
	cb(self->idle_ctx);
}

static void end_run(struct session *self)
{
	json_t *messages = self->run_messages;

	self->run_messages = json_array();
	self->busy = false;
	self->phase = SESSION_IDLE;
	emit(self, event_agent_end(messages));
	maybe_idle(self);
}

/* Moves the messages of one delivery (all, or the first) from a queue. */
/* turn_start, the newly delivered queue items (takes ownership of the array
 * of {"message","policy","autoRetryGen"}), an attempt. A new chain adopts
 * the policy of the last item delivered, and may bring the primary model
 * back. */
static void start_turn(struct session *self, json_t *deliver, bool new_chain)
{
	size_t i;
	json_t *item, *ev;

	if (new_chain && json_array_size(deliver) > 0) {
		item = json_array_get(deliver, json_array_size(deliver) - 1);
		/* set_auto_retry after the prompt was accepted still has its say. */
		policy_adopt(&self->policy, json_object_get(item, "policy"),
			     (unsigned)json_integer_value(json_object_get(item, "autoRetryGen")),
			     self->cfg.settings, self->cfg.classify);
		if (fallback_revert_if_rested(&self->fallback, wall_ms(self), &ev))
			emit(self, ev);
	}
	self->phase = SESSION_ATTEMPT;
	emit(self, event_turn_start());
	json_array_foreach(deliver, i, item) {
		json_t *m = json_object_get(item, "message");

		emit(self, event_message_start(m));
		add_message(self, m);
		emit(self, event_message_end(m));
	}
	json_decref(deliver);
	start_attempt(self);
}

static void next_or_end(struct session *self)
{
	if (json_array_size(self->steering) > 0)
		start_turn(self, queue_take(self->steering, self->steer_all), true);
	else if (json_array_size(self->follow_ups) > 0)
		start_turn(self, queue_take(self->follow_ups, self->follow_up_all), true);
	else
		end_run(self);
}

static void on_retry_timer(struct clock_timer *timer, void *ctx)
{
	struct session *self = ctx;

	(void)timer;
	wait_end(self);
	/* Steering that arrived during the backoff goes before the next attempt. */
	start_turn(self, json_array_size(self->steering) > 0
			 ? queue_take(self->steering, self->steer_all) : json_array(), false);
}

/* The provider is running an attempt (not just failed to start one). */
static bool provider_running(struct session *self)
{
	return self->phase == SESSION_ATTEMPT && !clock_timer_active(&self->start_failed_timer);
}

/* Ends the attempt in flight without a word from the provider. */
static void stop_attempt(struct session *self)
{
	if (provider_running(self))
		self->cfg.provider->ops->abort(self->cfg.provider);
	clock_timer_stop(self->cfg.clock, &self->start_failed_timer);
	clock_timer_stop(self->cfg.clock, &self->idle_timer);
}

/* The streamed message. */

static void on_idle_timeout(struct clock_timer *timer, void *ctx);

/* Data arrived: the stall clock starts again. */
static void touch(struct session *self)
{
	int64_t idle = self->policy.retry.idle_timeout_ms;

	if (idle > 0 && self->phase == SESSION_ATTEMPT && !self->cfg.provider->owns_idle_timeout)
		clock_timer_start(self->cfg.clock, &self->idle_timer, (uint64_t)idle,
				  on_idle_timeout, self);
}

/* message_start, once per attempt. */
static void open_reply(struct session *self)
{
	struct provider *p = self->cfg.provider;

	assistant_open(&self->reply, p->api, p->name, self->fallback.model, wall_ms(self));
}

/* Closes the streamed message into the context; returns it borrowed from
 * there. usage: the provider's counts (NULL: none). skipped: why a retryable
 * failure is not retried, or NULL. journal_now: false when the caller writes
 * it to the file itself. */
static json_t *close_reply(struct session *self, enum stop_reason stop, const char *error,
			   const struct assistant_usage *usage, const char *skipped,
			   bool journal_now)
{
	json_t *msg;

	open_reply(self);
	msg = assistant_close(&self->reply, stop_reason_name(stop), error, usage, skipped);
	add_to_context(self, msg);
	if (journal_now)
		journal_write(self, msg, false);
	json_decref(msg);
	return msg;
}

static void sink_start(void *ctx)
{
	touch(ctx);
	open_reply(ctx);
}

static void sink_text_start(void *ctx)
{
	struct session *self = ctx;

	touch(self);
	open_reply(self);
	assistant_text_start(&self->reply);
}

static void sink_text_delta(void *ctx, const char *s, size_t n)
{
	struct session *self = ctx;

	touch(self);
	assistant_text_delta(&self->reply, s, n);
}

static void sink_text_end(void *ctx)
{
	struct session *self = ctx;

	touch(self);
	assistant_text_end(&self->reply);
}

/* A thinking block streams like text, and counts as activity for the
 * stall clock as text does: a model that reasons for a minute is not
 * stalled. */
static void sink_thinking_start(void *ctx)
{
	struct session *self = ctx;

	touch(self);
	open_reply(self);
	assistant_thinking_start(&self->reply);
}

static void sink_thinking_delta(void *ctx, const char *s, size_t n)
{
	struct session *self = ctx;

	touch(self);
	assistant_thinking_delta(&self->reply, s, n);
}

static void sink_thinking_end(void *ctx, const char *signature, size_t len, bool redacted)
{
	struct session *self = ctx;

	touch(self);
	assistant_thinking_end(&self->reply, signature, len, redacted);
}

static void sink_event(void *ctx, json_t *event)
{
	touch(ctx);
	open_reply(ctx);
	emit(ctx, event);
}

/* The end of an attempt. */

/* why: the judged failure that ended the chain, or NULL. */
static void emit_retry_end(struct session *self, const struct retry_decision *d,
			   const struct event_why *why)
{
	if (!d->end)
		return;
	if (d->end_success)
		self->retry_stats.succeeded++;
	else
		self->retry_stats.failed++;
	emit(self, event_auto_retry_end(d->end_success, d->end_attempt, d->final_error, why));
}

/* abort, abort_retry, a cancelled hold: the open chain, if any, ends
 * cancelled. */
static void cancel_chain(struct session *self)
{
	struct retry_decision d;

	retry_cancel(&self->chain, &d);
	if (d.end) {
		self->retry_stats.cancelled++;
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

/* Says what retry_decide decided, makes the planned switch before a retry,
 * and arms the backoff or moves on. msg: borrowed, the closed message. */
static void report(struct session *self, const struct retry_decision *d,
		   const struct retry_outcome *o, const struct fallback_plan *plan,
		   const struct event_why *why, const struct decision_note *note, json_t *msg)
{
	json_t *ev;
	int64_t delay;
	const char *reason;

	if (d->action != RETRY_ACT_WAIT) {
		log_decision(d, o, note, 0, NULL);
		/* A success closes the chain inside its turn, a failure after it. */
		if (d->action == RETRY_ACT_DONE)
			emit_retry_end(self, d, NULL);
		emit(self, event_turn_end(msg));
		if (d->action == RETRY_ACT_STOP)
			emit_retry_end(self, d, why);
		next_or_end(self);
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
		int64_t left = fleet_known_block(self->cfg.fleet, self->cfg.provider->name,
						 self->fleet_cred, self->fallback.model) -
			       wall_ms(self);

		if (left > delay + 100) {
			delay = left;
			reason = "fleet-server-block";
		}
	}
	log_decision(d, o, note, delay, reason);
	self->retry_stats.retries++;
	emit(self, event_auto_retry_start(d->attempt, d->max_attempts, delay, o->error_message,
					  reason, d->hint_ms, why));
	/* The failed message leaves the context; the session file keeps it,
	 * marked "retried". */
	drop_last_message(self);
	self->phase = SESSION_BACKOFF;
	wait_begin(self);
	clock_timer_start(self->cfg.clock, &self->retry_timer, (uint64_t)delay, on_retry_timer,
			  self);
}

static void tell_fleet(struct session *self, const struct provider_result *r,
		       const struct policy_verdict *v, const struct retry_policy *policy);

/* classify once → fallback plan → retry_decide → emit → timer. */
static void sink_finish(void *ctx, const struct provider_result *r)
{
	struct session *self = ctx;
	struct retry_policy policy = policy_current(&self->policy, self->auto_retry_gen,
						    self->cfg.settings);
	struct retry_outcome outcome = { .failure = RETRY_OK, .hint_ms = -1 };
	struct fallback_plan plan = { .kind = RETRY_SWITCH_NONE, .credential = -1 };
	struct policy_verdict v;
	struct event_why why = { NULL, NULL, false };
	struct retry_decision d;
	struct decision_note note = { &v, &policy, 0 };
	struct assistant_usage usage = { r->input_tokens, r->output_tokens, r->cache_read_tokens,
					 r->cache_write_tokens, r->total_tokens };
	json_t *msg;

	clock_timer_stop(self->cfg.clock, &self->idle_timer);
	policy_judge(&self->policy, self->cfg.classify, r, policy.enabled, wall_ms(self), &v);
	if (v.retryable && policy.enabled) {
		fallback_plan(&self->fallback, &self->policy, v.usage_limit, v.overload, v.hint_ms,
			      wall_ms(self), &plan);
		if (v.usage_limit && plan.kind == RETRY_SWITCH_NONE)
			policy_verdict_stop_usage(&v);
	}
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
	if (v.failed && (size_t)v.verdict < sizeof(self->retry_stats.errors) /
					      sizeof(self->retry_stats.errors[0]))
		self->retry_stats.errors[v.verdict]++;
	note.tried = self->chain.attempt;
	retry_decide(&policy, &self->chain, &self->budget, &outcome, clock_now(self->cfg.clock), &d);
	/* Written once the decision is known: a retried attempt is marked, so
	 * a resume does not load it back into the context. */
	journal_write(self, msg, d.action == RETRY_ACT_WAIT);
	report(self, &d, &outcome, &plan, &why, &note, msg);
	retry_decision_release(&d);
	policy_verdict_release(&v);
}

static void on_idle_timeout(struct clock_timer *timer, void *ctx)
{
	struct session *self = ctx;
	char err[96];
	struct provider_result r = { .stop = STOP_ERROR, .error_message = err, .hint_ms = -1 };

	(void)timer;
	if (self->phase != SESSION_ATTEMPT)
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
	struct session *self = ctx;
	struct provider_result r = { .stop = STOP_ERROR, .error_message = self->start_error,
				     .hint_ms = -1 };

	(void)timer;
	sink_finish(self, &r);
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

static void send_attempt(struct session *self)
{
	struct provider_sink sink = sink_template;
	struct attempt_ctx actx = {
		.messages = self->messages,
		.model = self->fallback.model,
		.credential = fallback_credential(&self->fallback),
		.attempt = self->chain.attempt,
		.idle_timeout_ms = self->policy.retry.idle_timeout_ms,
		.continuation_prompt = policy_string(&self->policy, "continuationPrompt"),
		/* The model of this attempt may be a fallback: clamped again. */
		.thinking_level = thinking_clamp(model_entry(self, self->fallback.model),
						 self->thinking_level),
	};
	struct provider *p = self->cfg.provider;

	sink.ctx = self;
	self->phase = SESSION_ATTEMPT;
	self->reply.delta_updates =
		strcmp(settings_get_string(self->cfg.settings, "rpc.messageUpdates"), "delta") == 0;
	touch(self);
	self->attempt_sent = false;
	self->retry_stats.attempts++;
	if (p->ops->start(p, &actx, &sink, self->start_error, sizeof(self->start_error)) != 0) {
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
static const char *cred_fingerprint(struct session *self, const char *name, char out[17])
{
	const json_t *fp = json_object_get(self->cfg.provider->fingerprints, name);
	char salted[300];

	if (json_is_string(fp))
		return json_string_value(fp);
	snprintf(salted, sizeof(salted), "%s:%s", self->cfg.provider->name, name);
	secret_fingerprint(salted, out);
	return out;
}

static void on_fleet_answer(void *ctx, const struct fleet_answer *a);

/* Before an attempt: whether the fleet lets it go, with which credential
 * and model. The answer may come later (Redis); the phase is HOLD till then. */
static void ask_fleet(struct session *self, bool held)
{
	struct authstore *auth = &self->fallback.auth;
	const json_t *fallbacks = json_object_get(self->policy.json, "fallbackModels");
	const char *creds[32], *models[33];
	char fps[32][17];
	struct fleet_ask q = { .provider = self->cfg.provider->name, .creds = creds,
			       .models = models, .retry = self->chain.attempt > 0,
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
	self->phase = SESSION_HOLD;
	if (fleet_ask(self->cfg.fleet, &q, &a, on_fleet_answer, self) == 1)
		on_fleet_answer(self, &a);
}

static void on_hold_over(struct clock_timer *timer, void *ctx)
{
	struct session *self = ctx;

	(void)timer;
	wait_end(self);
	/* A probe, budget or lease wait asks again. A reserved slot (a block's
	 * end, a pacing slot) is ours, but the fleet may have learned since
	 * that the credential is spent or the model cooling: ask, holding it. */
	ask_fleet(self, self->fleet_ans.reserved);
}

static void on_fleet_answer(void *ctx, const struct fleet_answer *a)
{
	struct session *self = ctx;
	struct authstore *auth = &self->fallback.auth;
	json_t *ev;

	self->fleet_ans = *a;
	self->fleet_cred = NULL;
	if (auth->count > 0 && a->cred < 0) {
		char left[64];

		/* Every credential is spent, as the fleet knows: the answer a
		 * request would get, without sending it. */
		hint_format(a->cred_until - wall_ms(self), left, sizeof(left));
		errbuf_set(self->start_error, sizeof(self->start_error),
			   "Usage limit reached for every credential of %s (shared by the fleet; "
			   "resets in %s)", self->cfg.provider->name, left);
		self->phase = SESSION_ATTEMPT;
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
		const char *name = authstore_current(auth);

		char fp[17];

		/* Kept for the attempt's report: the provider's string may not be. */
		snprintf(self->fleet_fp, sizeof(self->fleet_fp), "%s",
			 cred_fingerprint(self, name, fp));
		self->fleet_cred = self->fleet_fp;
	}
	if (a->wait_ms > 0) {
		/* Once per attempt and reason: a probe or lease wait looks again
		 * every few hundred ms, which is no news. */
		if (a->reason != self->hold_reason)
			emit(self, event_fleet_wait(a->wait_ms, fleet_reason_name(a->reason),
						    a->scope));
		self->hold_reason = a->reason;
		wait_begin(self);
		clock_timer_start(self->cfg.clock, &self->hold_timer, (uint64_t)a->wait_ms,
				  on_hold_over, self);
		return;
	}
	send_attempt(self);
}

static void start_attempt(struct session *self)
{
	self->hold_reason = FLEET_GO;
	if (self->cfg.fleet != NULL)
		ask_fleet(self, false);
	else
		send_attempt(self);
}

/* Ends a hold without sending: no callback, no timer. */
static void stop_hold(struct session *self)
{
	if (self->cfg.fleet != NULL)
		fleet_cancel(self->cfg.fleet);
	clock_timer_stop(self->cfg.clock, &self->hold_timer);
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

/* A request limit per minute the answer announced (OpenAI's and
 * Anthropic's headers), or 0. */
static int64_t announced_rpm(const json_t *headers)
{
	static const char *const names[] = { "x-ratelimit-limit-requests",
					     "anthropic-ratelimit-requests-limit" };
	int64_t v;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *s = json_string_value(json_object_get(headers, names[i]));

		if (s != NULL && number_from_digits(s, strlen(s), &v) == NUMBER_EXACT && v > 0)
			return v;
	}
	return 0;
}

static void tell_fleet(struct session *self, const struct provider_result *r,
		       const struct policy_verdict *v, const struct retry_policy *policy)
{
	struct fleet_tell t = {
		.provider = self->cfg.provider->name,
		.cred = self->fleet_cred,
		.model = self->fallback.model,
		.out = { .kind = fleet_kind(r, v), .block_ms = -1,
			 .rpm_limit = announced_rpm(r->headers), .member = 0 },
		.usage_reset_ms = -1,
		.overload = v->failed && v->overload,
		.fallback_after = policy->fallback_after_consecutive,
		.cooldown_ms = policy_int(&self->policy, "fallbackCooldownMs"),
	};

	if (r->stop == STOP_ABORTED || !self->attempt_sent)
		return;
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

/* Commands. */

static void begin_run(struct session *self, json_t *item)
{
	json_t *deliver = json_array();

	json_array_append_new(deliver, item);
	self->busy = true;
	json_array_clear(self->run_messages);
	emit(self, event_agent_start());
	start_turn(self, deliver, true);
}

/* A queue item: the user message and the policy snapshot taken now.
 * policy: takes ownership. */
static int enqueue(struct session *self, json_t *queue, const char *text, const json_t *images,
		   json_t *policy, session_taken_fn taken, void *ctx)
{
	json_t *item = queue_item_new(text, images, wall_ms(self), policy, self->auto_retry_gen);

	if (item == NULL)
		return -1;
	if (self->busy && json_array_append_new(queue, item) != 0)
		return -1;
	if (taken != NULL)
		taken(ctx);
	if (!self->busy)
		begin_run(self, item);
	return 0;
}

int session_accept(struct session *self, int behavior, const json_t *retry, json_t **policy,
		   char *err, size_t errlen)
{
	*policy = NULL;
	if (self->busy && behavior == BEHAVIOR_NONE)
		return errbuf_set(err, errlen, "Agent is already processing. Specify "
				  "streamingBehavior ('steer' or 'followUp') to queue the message.");
	*policy = policy_for_prompt(self->cfg.settings, retry, err, errlen);
	return *policy ? 0 : -1;
}

int session_prompt(struct session *self, const char *text, const json_t *images,
		   int behavior, json_t *policy, session_taken_fn taken, void *ctx)
{
	return enqueue(self, behavior == BEHAVIOR_STEER ? self->steering : self->follow_ups, text,
		       images, policy, taken, ctx);
}

static int enqueue_plain(struct session *self, json_t *queue, const char *text,
			 const json_t *images, session_taken_fn taken, void *ctx)
{
	json_t *policy = session_retry_policy(self);

	return policy ? enqueue(self, queue, text, images, policy, taken, ctx) : -1;
}

int session_steer(struct session *self, const char *text, const json_t *images,
		  session_taken_fn taken, void *ctx)
{
	return enqueue_plain(self, self->steering, text, images, taken, ctx);
}

int session_follow_up(struct session *self, const char *text, const json_t *images,
		      session_taken_fn taken, void *ctx)
{
	return enqueue_plain(self, self->follow_ups, text, images, taken, ctx);
}

/* A held attempt ends as an aborted message, inside its turn. */
static void abort_hold(struct session *self)
{
	stop_hold(self);
	emit(self, event_turn_end(close_reply(self, STOP_ABORTED, FLEET_CANCELLED_MESSAGE, NULL,
					      NULL, true)));
	cancel_chain(self);
}

void session_abort_retry(struct session *self)
{
	if (self->phase == SESSION_HOLD) {
		abort_hold(self);
		self->phase = SESSION_IDLE;
		next_or_end(self);
		return;
	}
	if (self->phase != SESSION_BACKOFF)
		return;
	clock_timer_stop(self->cfg.clock, &self->retry_timer);
	wait_end(self);
	self->phase = SESSION_IDLE;
	cancel_chain(self);
	next_or_end(self);
}

void session_abort(struct session *self, json_t **data)
{
	json_t *dropped = json_array();

	/* Nothing queued may start while the run is being taken down. */
	queue_drop_texts(self->steering, dropped);
	queue_drop_texts(self->follow_ups, dropped);
	if (self->phase == SESSION_BACKOFF) {
		clock_timer_stop(self->cfg.clock, &self->retry_timer);
		wait_end(self);
		cancel_chain(self);
	} else if (self->phase == SESSION_HOLD) {
		abort_hold(self);
	} else if (self->phase == SESSION_ATTEMPT) {
		stop_attempt(self);
		emit(self, event_turn_end(close_reply(self, STOP_ABORTED, ABORTED_MESSAGE, NULL, NULL,
						      true)));
		cancel_chain(self);
	}
	if (self->busy)
		end_run(self);
	if (data != NULL)
		*data = json_pack("{s:o}", "discardedMessages", dropped);
	else
		json_decref(dropped);
}

int session_abort_and_prompt(struct session *self, const char *text, const json_t *images,
			     const json_t *retry, json_t **data, session_taken_fn taken, void *ctx,
			     char *err, size_t errlen)
{
	json_t *policy = policy_for_prompt(self->cfg.settings, retry, err, errlen);

	*data = NULL;
	if (policy == NULL)
		return -1;
	session_abort(self, data);
	/* Idle now, so the prompt begins a run, as a prompt sent after abort would. */
	if (enqueue(self, self->follow_ups, text, images, policy, taken, ctx) != 0)
		return errbuf_set(err, errlen, "out of memory: the run was aborted but the "
				  "new prompt could not be started");
	return 0;
}

int session_set_auto_retry(struct session *self, bool enabled, bool persist, json_t **data,
			   char *err, size_t errlen)
{
	self->auto_retry_gen++;
	*data = policy_set_enabled(self->cfg.settings, enabled, persist, err, errlen);
	return 0;
}

json_t *session_classify(struct session *self, struct classify_input *in)
{
	struct classify_result r;

	in->now_ms = wall_ms(self);
	classify_decide(self->cfg.classify, in, &r);
	return classify_result_json(&r);
}

json_t *session_model(struct session *self)
{
	return fallback_model_json(&self->fallback, self->cfg.provider);
}

json_t *session_state(struct session *self)
{
	struct state_view v = {
		.model = session_model(self),
		.streaming = self->busy,
		.steer_all = self->steer_all,
		.follow_up_all = self->follow_up_all,
		.session_id = self->id,
		.message_count = json_array_size(self->messages),
		.pending_count = json_array_size(self->steering) + json_array_size(self->follow_ups),
		.auto_retry_enabled = settings_get_bool(self->cfg.settings, "retry.enabled"),
		.retrying = self->phase == SESSION_BACKOFF,
		.retry_attempt = self->chain.attempt,
		.session_file = self->file,
		.session_name = self->name,
		.retry_policy = self->busy ? self->policy.json : NULL,
		.retry_budget = retry_budget_json(&self->budget),
		.thinking_level = self->thinking_level,
	};
	json_t *state = state_json(&v);

	if (state != NULL && self->cfg.fleet != NULL) {
		struct authstore *auth = &self->fallback.auth;
		char fp[17];
		const char *cred = auth->count > 0
			? cred_fingerprint(self, authstore_current(auth), fp) : NULL;

		json_object_set_new(state, "fleet", fleet_state(self->cfg.fleet,
								self->cfg.provider->name, cred,
								self->fallback.model));
	}
	return state;
}

json_t *session_fleet_clear(struct session *self)
{
	struct authstore *auth = &self->fallback.auth;
	char fp[17], scope[160];
	const char *cred;
	int n;

	if (self->cfg.fleet == NULL)
		return json_pack("{s:i}", "cleared", 0);
	cred = auth->count > 0 ? cred_fingerprint(self, authstore_current(auth), fp) : NULL;
	n = fleet_clear(self->cfg.fleet, self->cfg.provider->name, cred, self->fallback.model,
			scope, sizeof(scope));
	LOG_INFO("fleet: fleet_clear on %s", scope);
	return json_pack("{s:i, s:s, s:s}", "cleared", n, "scope", scope, "mode",
			 fleet_mode_name(fleet_config_mode(self->cfg.fleet)));
}

json_t *session_retry_policy(struct session *self)
{
	char err[512];

	return policy_resolve(self->cfg.settings, NULL, err, sizeof(err));
}

int session_set_retry_policy(struct session *self, const json_t *policy, bool persist,
			     json_t **data, char *err, size_t errlen)
{
	struct classify *c = policy_apply(self->cfg.settings, policy, persist, data, err, errlen);

	if (c == NULL)
		return -1;
	classify_free(self->cfg.classify);
	self->cfg.classify = c;
	retry_budget_configure(&self->budget, settings_get(self->cfg.settings, "retry.budget"));
	return 0;
}

json_t *session_messages(struct session *self)
{
	return json_pack("{s:O}", "messages", self->messages);
}

json_t *session_last_assistant_text(struct session *self)
{
	return assistant_last_text(self->messages);
}

json_t *session_stats(struct session *self)
{
	const struct session_retry_stats *rs = &self->retry_stats;
	json_t *st = message_stats(self->messages, self->id, self->file);
	int64_t waited = rs->waited_ms;

	if (rs->waiting)
		waited = number_add(waited, (int64_t)(clock_now(self->cfg.clock) - rs->wait_since));
	if (st != NULL)
		json_object_set_new(st, "retry", json_pack(
			"{s:I, s:I, s:{s:I, s:I, s:I}, s:I, s:{s:I, s:I, s:I, s:I}}",
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
			(json_int_t)rs->errors[CLASSIFY_USAGE_LIMIT]));
	return st;
}

json_t *session_models(struct session *self)
{
	return fallback_models(&self->fallback, self->cfg.provider);
}

int session_set_model(struct session *self, const char *provider, const char *model_id,
		      char *err, size_t errlen)
{
	bool old_reasons = thinking_model_reasons(model_entry(self, self->fallback.model));

	/* A model the caller picks is the new primary; fallbacks start over. */
	if (fallback_select(&self->fallback, self->cfg.provider, provider, model_id, err, errlen) != 0)
		return -1;
	rethink_for_model(self, old_reasons);
	return 0;
}

void session_new(struct session *self)
{
	session_abort(self, NULL);
	start_new_session(self);
	self->chain.attempt = 0;
#ifdef __GLIBC__
	/* The old conversation was thousands of small blocks; glibc keeps
	 * freed ones for reuse unless told to give them back, so a long
	 * conversation's memory would stay with the process. */
	malloc_trim(0);
#endif
}

void session_set_steering_mode(struct session *self, bool all)
{
	self->steer_all = all;
}

void session_set_follow_up_mode(struct session *self, bool all)
{
	self->follow_up_all = all;
}

int session_set_name(struct session *self, const char *name)
{
	char *copy = strdup(name);

	if (copy == NULL)
		return -1;
	free(self->name);
	self->name = copy;
	return 0;
}

void session_set_output_paused(struct session *self, bool paused)
{
	struct provider *p = self->cfg.provider;

	self->output_paused = paused;
	if (provider_running(self) && p->ops->pause)
		p->ops->pause(p, paused);
}

void session_when_idle(struct session *self, void (*cb)(void *ctx), void *ctx)
{
	self->idle_cb = cb;
	self->idle_ctx = ctx;
	maybe_idle(self);
}

#include "core/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/errbuf.h"
#include "base/log.h"
#include "base/utf8.h"
#include "core/queue.h"
#include "core/thinking.h"
#include "proto/command.h"
#include "proto/event.h"
#include "proto/message.h"
#include "proto/state.h"

static void emit(struct session *self, json_t *event)
{
	if (event == NULL) {
		LOG_ERROR("out of memory building an event");
		return;
	}
	session_events_emit(&self->events, event);
}

static int64_t wall_ms(struct session *self)
{
	return clock_wall_ms(self->cfg.clock);
}

/* The conversation, as the chain reaches it (core/chain.h chain_ops). */

/* retried: a failed attempt that a retry drops from the context. */
static void ops_journal(void *ctx, const json_t *message, bool retried)
{
	struct session *self = ctx;
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
static void ops_append(void *ctx, json_t *message)
{
	struct session *self = ctx;

	json_array_append(self->messages, message);
	json_array_append(self->run_messages, message);
}

static void ops_drop_last(void *ctx)
{
	struct session *self = ctx;
	size_t n = json_array_size(self->messages);
	size_t r = json_array_size(self->run_messages);

	if (n > 0)
		json_array_remove(self->messages, n - 1);
	if (r > 0) {
		/* Kept: when the retry it made way for is cancelled, the run ends on it. */
		json_decref(self->retried_last);
		self->retried_last = json_incref(json_array_get(self->run_messages, r - 1));
		json_array_remove(self->run_messages, r - 1);
	}
}

static void ops_parked(void *ctx, const json_t *record)
{
	struct session *self = ctx;
	char err[512];

	if (journal_park(&self->journal, record, wall_ms(self), err, sizeof(err)) != 0)
		LOG_ERROR("%s", err);
}

/* What a prompt's result is judged on: the run's messages, and the failed
 * attempt a cancelled retry left last (new reference). */
static json_t *result_basis(struct session *self, json_t *messages)
{
	const json_t *last = json_array_get(messages, json_array_size(messages) - 1);
	const char *role = json_string_value(json_object_get(last, "role"));
	json_t *basis;

	if (self->retried_last == NULL || (role != NULL && strcmp(role, "assistant") == 0))
		return json_incref(messages);
	basis = json_copy(messages);
	if (basis != NULL)
		json_array_append(basis, self->retried_last);
	return basis;
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

/* A level (static) that may differ from the current one: pi journals,
 * persists and announces only a change. */
static void apply_thinking_level(struct session *self, const char *level)
{
	char err[512];
	const json_t *model = model_entry(self, self->chain.fallback.model);

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
	apply_thinking_level(self, thinking_clamp(model_entry(self, self->chain.fallback.model), level));
}

void session_cycle_thinking_level(struct session *self, json_t **data)
{
	const char *next = thinking_next(model_entry(self, self->chain.fallback.model),
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

	apply_thinking_level(self, thinking_clamp(model_entry(self, self->chain.fallback.model), want));
}

static void ops_emit(void *ctx, json_t *event)
{
	emit(ctx, event);
}

static void ops_context(void *ctx, struct chain_context *out)
{
	struct session *self = ctx;

	out->messages = self->messages;
	out->thinking_level = self->thinking_level;
}

static void next_or_end(struct session *self);
static void start_turn(struct session *self, json_t *deliver, bool new_chain);

static void ops_turn_over(void *ctx)
{
	next_or_end(ctx);
}

/* Steering that arrived during the backoff goes before the next attempt. */
static void ops_retry_turn(void *ctx)
{
	struct session *self = ctx;

	start_turn(self, json_array_size(self->steering) > 0
			 ? queue_take(self->steering, self->steer_all) : json_array(), false);
}

int session_init(struct session *self, const struct session_config *cfg)
{
	struct assistant_output out = { .emit = cfg->emit, .line_buf = cfg->line_buf,
					.line_done = cfg->line_done, .ctx = cfg->emit_ctx };
	struct chain_config cc = {
		.settings = cfg->settings, .classify = cfg->classify, .clock = cfg->clock,
		.provider = cfg->provider, .fleet = cfg->fleet,
		.model = cfg->model ? cfg->model : first_model(cfg->provider),
		.ops = { .emit = ops_emit, .append = ops_append, .journal = ops_journal,
			 .drop_last = ops_drop_last, .context = ops_context,
			 .turn_over = ops_turn_over, .retry_turn = ops_retry_turn,
			 .parked = ops_parked, .ctx = self },
	};

	memset(self, 0, sizeof(*self));
	self->cfg = *cfg;
	/* Everything the session and its chain send passes session_events. */
	session_events_init(&self->events, &out);
	cc.out = session_events_output(&self->events);
	self->fixed_file = cfg->session_file ? strdup(cfg->session_file) : NULL;
	self->session_dir = cfg->session_dir ? strdup(cfg->session_dir) : NULL;
	self->messages = json_array();
	self->run_messages = json_array();
	self->run_prompts = json_array();
	self->dropped_prompts = json_array();
	self->steering = json_array();
	self->follow_ups = json_array();
	if (chain_init(&self->chain, &cc) != 0) {
		/* The chain took the classifier and freed it. */
		self->cfg.classify = NULL;
		session_release(self);
		return -1;
	}
	if (self->messages == NULL || self->run_messages == NULL || self->steering == NULL ||
	    self->follow_ups == NULL || self->run_prompts == NULL || self->dropped_prompts == NULL) {
		session_release(self);
		return -1;
	}
	if (session_file_start(self) != 0) {
		session_release(self);
		return -1;
	}
	return 0;
}

void session_release(struct session *self)
{
	chain_release(&self->chain);
	json_decref(self->messages);
	json_decref(self->run_messages);
	json_decref(self->run_prompts);
	json_decref(self->dropped_prompts);
	json_decref(self->retried_last);
	json_decref(self->steering);
	json_decref(self->follow_ups);
	journal_release(&self->journal);
	free(self->fixed_file);
	free(self->session_dir);
	free(self->file);
	free(self->name);
	session_events_release(&self->events);
	memset(self, 0, sizeof(*self));
}

/* The run. */

static void maybe_idle(struct session *self)
{
	void (*cb)(void *) = self->idle_cb;

	if (cb == NULL || self->busy)
		return;
	self->idle_cb = NULL;
	cb(self->idle_ctx);
}

static void end_run_as(struct session *self, bool aborted)
{
	json_t *messages = self->run_messages;
	json_t *prompts = self->run_prompts;
	json_t *dropped = self->dropped_prompts;
	json_t *basis;
	size_t i;
	json_t *id;

	self->run_messages = json_array();
	self->run_prompts = json_array();
	self->dropped_prompts = json_array();
	self->busy = false;
	self->chain.phase = CHAIN_IDLE;
	json_incref(messages);
	emit(self, event_agent_end(messages));
	/* Nothing runs, waits or is queued now: every prompt of the run has
	 * its result (oh-my-pi), and the session is settled (pi 1.6's
	 * agent_settled, oh-my-pi's session_settled). */
	basis = result_basis(self, messages);
	json_decref(self->retried_last);
	self->retried_last = NULL;
	json_array_foreach(prompts, i, id)
		emit(self, chain_prompt_result(&self->chain, basis, json_string_value(id), aborted));
	/* Prompts clear_queue took away never ran: aborted. */
	json_array_foreach(dropped, i, id)
		emit(self, chain_prompt_result(&self->chain, basis, json_string_value(id), true));
	json_decref(basis);
	emit(self, event_agent_settled(aborted));
	emit(self, event_session_settled());
	json_decref(dropped);
	json_decref(prompts);
	json_decref(messages);
	maybe_idle(self);
}

static void end_run(struct session *self)
{
	end_run_as(self, false);
}

/* Hands one turn to the chain: the newly delivered queue items (takes
 * ownership of the array of {"message","policy","autoRetryGen"}). A new
 * chain adopts the policy of the last item delivered. */
static void start_turn(struct session *self, json_t *deliver, bool new_chain)
{
	json_t *messages = json_array();
	const json_t *policy = NULL;
	unsigned gen = 0;
	size_t i;
	json_t *item;

	if (new_chain) {
		/* A failed attempt of an earlier chain is not this one's end. */
		json_decref(self->retried_last);
		self->retried_last = NULL;
	}
	if (new_chain && json_array_size(deliver) > 0) {
		item = json_array_get(deliver, json_array_size(deliver) - 1);
		policy = json_object_get(item, "policy");
		gen = (unsigned)json_integer_value(json_object_get(item, "autoRetryGen"));
	}
	json_array_foreach(deliver, i, item) {
		json_array_append(messages, json_object_get(item, "message"));
		if (json_object_get(item, "promptId") != NULL)
			json_array_append(self->run_prompts, json_object_get(item, "promptId"));
	}
	chain_turn(&self->chain, policy, gen, messages);
	json_decref(messages);
	json_decref(deliver);
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
		   json_t *policy, const char *id, session_taken_fn taken, void *ctx)
{
	json_t *item = queue_item_new(text, images, wall_ms(self), policy, self->chain.auto_retry_gen);

	if (item == NULL)
		return -1;
	/* A prompt's own result is owed to its command (oh-my-pi's prompt_result). */
	if (id != NULL)
		json_object_set_new(item, "promptId", json_string(id));
	if (self->busy && json_array_append_new(queue, item) != 0)
		return -1;
	if (taken != NULL)
		taken(ctx, self->busy ? "queued" : "started");
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
		   int behavior, json_t *policy, const char *id, session_taken_fn taken,
		   void *ctx)
{
	return enqueue(self, behavior == BEHAVIOR_STEER ? self->steering : self->follow_ups, text,
		       images, policy, id, taken, ctx);
}

static int enqueue_plain(struct session *self, json_t *queue, const char *text,
			 const json_t *images, session_taken_fn taken, void *ctx)
{
	json_t *policy = session_retry_policy(self);

	return policy ? enqueue(self, queue, text, images, policy, NULL, taken, ctx) : -1;
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

void session_abort_retry(struct session *self)
{
	if (chain_abort_retry(&self->chain))
		next_or_end(self);
}

void session_abort(struct session *self, json_t **data)
{
	json_t *dropped = json_array();

	/* Nothing queued may start while the run is being taken down; a
	 * dropped prompt's result is owed all the same (aborted). */
	queue_prompt_ids(self->steering, self->run_prompts);
	queue_prompt_ids(self->follow_ups, self->run_prompts);
	queue_drop_texts(self->steering, dropped);
	queue_drop_texts(self->follow_ups, dropped);
	chain_abort(&self->chain);
	if (self->busy)
		end_run_as(self, true);
	if (data != NULL)
		*data = json_pack("{s:o}", "discardedMessages", dropped);
	else
		json_decref(dropped);
}

void session_stop(struct session *self)
{
	chain_keep_park(&self->chain);
	session_abort(self, NULL);
}

json_t *session_clear_queue(struct session *self)
{
	json_t *steering = json_array(), *follow_ups = json_array();

	/* Their prompt_results (aborted) follow the run's agent_end. */
	queue_prompt_ids(self->steering, self->dropped_prompts);
	queue_prompt_ids(self->follow_ups, self->dropped_prompts);
	queue_drop_texts(self->steering, steering);
	queue_drop_texts(self->follow_ups, follow_ups);
	return json_pack("{s:o, s:o}", "steering", steering, "followUp", follow_ups);
}

void session_resume_park(struct session *self, const json_t *record)
{
	json_t *policy = record ? park_record_policy(record, self->cfg.settings) : NULL;

	if (policy == NULL || self->busy) {
		json_decref(policy);
		return;
	}
	self->busy = true;
	json_array_clear(self->run_messages);
	emit(self, event_agent_start());
	if (!chain_resume_park(&self->chain, policy, self->chain.auto_retry_gen, record))
		end_run(self);
	json_decref(policy);
}

int session_abort_and_prompt(struct session *self, const char *text, const json_t *images,
			     const json_t *retry, const char *id, json_t **data,
			     session_taken_fn taken, void *ctx, char *err, size_t errlen)
{
	json_t *policy = policy_for_prompt(self->cfg.settings, retry, err, errlen);

	*data = NULL;
	if (policy == NULL)
		return -1;
	session_abort(self, data);
	/* Idle now, so the prompt begins a run, as a prompt sent after abort would. */
	if (enqueue(self, self->follow_ups, text, images, policy, id, taken, ctx) != 0)
		return errbuf_set(err, errlen, "out of memory: the run was aborted but the "
				  "new prompt could not be started");
	return 0;
}

int session_set_auto_retry(struct session *self, bool enabled, bool persist, json_t **data,
			   char *err, size_t errlen)
{
	chain_retry_toggled(&self->chain);
	*data = policy_set_enabled(self->cfg.settings, enabled, persist, err, errlen);
	return 0;
}

json_t *session_classify(struct session *self, struct classify_input *in)
{
	struct classify_result r;

	in->now_ms = wall_ms(self);
	classify_decide(self->chain.cfg.classify, in, &r);
	return classify_result_json(&r);
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
	chain_set_classify(&self->chain, c);
	return 0;
}

int session_set_model(struct session *self, const char *provider, const char *model_id,
		      char *err, size_t errlen)
{
	bool old_reasons = thinking_model_reasons(model_entry(self, self->chain.fallback.model));

	/* A model the caller picks is the new primary; fallbacks start over. */
	if (fallback_select(&self->chain.fallback, self->cfg.provider, provider, model_id, err, errlen) != 0)
		return -1;
	rethink_for_model(self, old_reasons);
	return 0;
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
	chain_set_output_paused(&self->chain, paused);
}

void session_when_idle(struct session *self, void (*cb)(void *ctx), void *ctx)
{
	self->idle_cb = cb;
	self->idle_ctx = ctx;
	maybe_idle(self);
}

#include "core/session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "proto/command.h"
#include "base/hint.h"
#include "base/jsontext.h"
#include "base/log.h"
#include "base/utf8.h"

#define ABORTED_MESSAGE "Request was aborted"

static const struct provider_sink sink_template;

/* Helpers. */

static void emit(struct session *self, json_t *event)
{
	if (event == NULL) {
		LOG_ERROR("out of memory building an event");
		return;
	}
	self->cfg.emit(self->cfg.emit_ctx, event);
}

static void emit_simple(struct session *self, const char *type)
{
	emit(self, json_pack("{s:s}", "type", type));
}

static int64_t wall_ms(struct session *self)
{
	return clock_wall_ms(self->cfg.clock);
}

static void make_uuid_v7(char out[40], int64_t ms)
{
	unsigned char b[16] = { 0 };

	if (uv_random(NULL, NULL, b, sizeof(b), 0, NULL) != 0) {
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (unsigned char)rand();
	}
	for (int i = 0; i < 6; i++)
		b[i] = (unsigned char)((uint64_t)ms >> (8 * (5 - i)));
	b[6] = (unsigned char)(0x70 | (b[6] & 0x0f));
	b[8] = (unsigned char)(0x80 | (b[8] & 0x3f));
	snprintf(out, 40,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		 b[12], b[13], b[14], b[15]);
}

/* The running chain's snapshot, except that set_auto_retry after the
 * snapshot was taken still turns retrying off (or on) at the next failure. */
static struct retry_policy current_policy(struct session *self)
{
	struct retry_policy p = self->policy.retry;

	if (self->auto_retry_gen != self->policy_gen)
		p.enabled = settings_bool(self->cfg.settings, "retry.enabled", true);
	return p;
}

static struct classify *classifier(struct session *self)
{
	return policy_classifier(&self->policy, self->cfg.classify);
}

/* A number from the snapshot; `fallback` when absent. */
static int64_t policy_int(struct session *self, const char *key, int64_t fallback)
{
	json_t *v = json_object_get(self->policy.json, key);

	return json_is_integer(v) ? json_integer_value(v) : fallback;
}

static json_t *user_message(struct session *self, const char *text, const json_t *images)
{
	json_t *content = json_pack("[{s:s, s:s}]", "type", "text", "text", text);
	size_t i;
	json_t *img;

	if (content == NULL)
		return NULL;
	json_array_foreach(images, i, img)
		json_array_append(content, (json_t *)img);
	return json_pack("{s:s, s:o, s:I}", "role", "user", "content", content,
			 "timestamp", (json_int_t)wall_ms(self));
}

static void journal_write(struct session *self, const json_t *message)
{
	char err[512];
	bool reported = self->journal.failed;

	if (journal_append(&self->journal, message, err, sizeof(err)) == 0 || reported)
		return;
	LOG_ERROR("%s", err);
	utf8_repair(err); /* the path is bytes */
	emit(self, json_pack("{s:s, s:s, s:s, s:s}", "type", "notice", "level", "error",
			     "source", "session", "message", err));
}

/* Adds a message to the context and to this run's messages. */
static void add_message(struct session *self, json_t *message)
{
	journal_write(self, message);
	json_array_append(self->messages, message);
	json_array_append(self->run_messages, message);
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

static char *session_path(struct session *self)
{
	char stamp[32], *path;
	time_t secs = (time_t)(wall_ms(self) / 1000);
	struct tm tm;
	size_t n;

	if (self->fixed_file != NULL)
		return strdup(self->fixed_file);
	if (self->session_dir == NULL)
		return NULL;
	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H-%M-%SZ", &tm);
	n = strlen(self->session_dir) + strlen(stamp) + strlen(self->id) + 10;
	path = malloc(n);
	if (path != NULL)
		snprintf(path, n, "%s/%s_%s.jsonl", self->session_dir, stamp, self->id);
	return path;
}

static void start_new_session(struct session *self)
{
	int64_t now = wall_ms(self);

	make_uuid_v7(self->id, now);
	free(self->file);
	self->file = session_path(self);
	journal_release(&self->journal);
	journal_init(&self->journal, self->file, self->id, now);
	json_array_clear(self->messages);
	free(self->name);
	self->name = NULL;
}

int session_init(struct session *self, const struct session_config *cfg)
{
	memset(self, 0, sizeof(*self));
	self->cfg = *cfg;
	self->model = strdup(cfg->model ? cfg->model : "sim-1");
	self->fixed_file = cfg->session_file ? strdup(cfg->session_file) : NULL;
	self->session_dir = cfg->session_dir ? strdup(cfg->session_dir) : NULL;
	self->messages = json_array();
	self->run_messages = json_array();
	self->steering = json_array();
	self->follow_ups = json_array();
	if (self->model == NULL || self->messages == NULL || self->run_messages == NULL ||
	    self->steering == NULL || self->follow_ups == NULL ||
	    authstore_init(&self->auth, cfg->provider->credentials) != 0) {
		session_release(self);
		return -1;
	}
	self->primary_model = strdup(self->model);
	self->model_cooldown = json_object();
	retry_policy_default(&self->policy.retry);
	retry_budget_configure(&self->budget, settings_get(cfg->settings, "retry.budget"));
	if (self->primary_model == NULL || self->model_cooldown == NULL) {
		session_release(self);
		return -1;
	}
	start_new_session(self);
	return 0;
}

void session_release(struct session *self)
{
	if (self->cfg.clock != NULL) {
		clock_timer_stop(self->cfg.clock, &self->retry_timer);
		clock_timer_stop(self->cfg.clock, &self->idle_timer);
	}
	classify_free(self->cfg.classify);
	policy_release(&self->policy);
	free(self->primary_model);
	json_decref(self->model_cooldown);
	json_decref(self->messages);
	json_decref(self->run_messages);
	json_decref(self->steering);
	json_decref(self->follow_ups);
	json_decref(self->partial);
	journal_release(&self->journal);
	authstore_release(&self->auth);
	free(self->text.data);
	json_decref(self->model_json);
	free(self->model);
	free(self->fixed_file);
	free(self->session_dir);
	free(self->file);
	free(self->name);
	memset(self, 0, sizeof(*self));
}

/* The run. */

static void start_attempt(struct session *self);
static void next_or_end(struct session *self);

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
	emit(self, json_pack("{s:s, s:o}", "type", "agent_end", "messages", messages));
	maybe_idle(self);
}

/* Moves the messages of one delivery (all, or the first) from a queue. */
static json_t *take_queued(json_t *queue, bool all)
{
	json_t *out;

	if (all) {
		out = json_copy(queue);
		json_array_clear(queue);
		return out;
	}
	out = json_array();
	json_array_append(out, json_array_get(queue, 0));
	json_array_remove(queue, 0);
	return out;
}

/* A new chain runs on the policy its prompt was accepted with. */
static void adopt_policy(struct session *self, json_t *item)
{
	json_t *daemon_retry = settings_get(self->cfg.settings, "retry");
	char err[512];

	policy_release(&self->policy);
	/* set_auto_retry after the prompt was accepted still has its say. */
	self->policy_gen = (unsigned)json_integer_value(json_object_get(item, "autoRetryGen"));
	if (policy_load(&self->policy, json_object_get(item, "policy"), daemon_retry,
			self->cfg.classify, err, sizeof(err)) != 0) {
		/* Checked at acceptance, so only memory can fail here. */
		LOG_ERROR("retry policy: %s", err);
		retry_policy_default(&self->policy.retry);
	}
}

static void revert_model_if_rested(struct session *self);

/* turn_start, the newly delivered queue items (stolen array of
 * {"message","policy"}), an attempt. A new chain adopts the policy of the
 * last item delivered. */
static void start_turn(struct session *self, json_t *deliver, bool new_chain)
{
	size_t i;
	json_t *item;

	if (new_chain && json_array_size(deliver) > 0) {
		adopt_policy(self, json_array_get(deliver, json_array_size(deliver) - 1));
		revert_model_if_rested(self);
	}
	self->phase = SESSION_ATTEMPT;
	emit_simple(self, "turn_start");
	json_array_foreach(deliver, i, item) {
		json_t *m = json_object_get(item, "message");

		emit(self, json_pack("{s:s, s:O}", "type", "message_start", "message", m));
		add_message(self, m);
		emit(self, json_pack("{s:s, s:O}", "type", "message_end", "message", m));
	}
	json_decref(deliver);
	start_attempt(self);
}

static void next_or_end(struct session *self)
{
	if (json_array_size(self->steering) > 0)
		start_turn(self, take_queued(self->steering, self->steer_all), true);
	else if (json_array_size(self->follow_ups) > 0)
		start_turn(self, take_queued(self->follow_ups, self->follow_up_all), true);
	else
		end_run(self);
}

static void on_retry_timer(struct clock_timer *timer, void *ctx)
{
	struct session *self = ctx;

	(void)timer;
	/* Steering that arrived during the backoff goes before the next attempt. */
	start_turn(self, json_array_size(self->steering) > 0
			 ? take_queued(self->steering, self->steer_all) : json_array(), false);
}

static json_t *new_partial(struct session *self)
{
	return json_pack("{s:s, s:[], s:s, s:s, s:s, s:{s:i, s:i, s:i, s:i, s:i, s:{s:f, s:f, s:f, s:f, s:f}}, s:s, s:I}",
			 "role", "assistant", "content", "api", self->cfg.provider->api,
			 "provider", self->cfg.provider->name, "model", self->model,
			 "usage", "input", 0, "output", 0, "cacheRead", 0, "cacheWrite", 0,
			 "totalTokens", 0, "cost", "input", 0.0, "output", 0.0, "cacheRead", 0.0,
			 "cacheWrite", 0.0, "total", 0.0,
			 "stopReason", "stop", "timestamp", (json_int_t)wall_ms(self));
}

/* pi's message_update repeats the whole partial message twice, so output
 * grows with the square of the answer; rpc.messageUpdates "delta" sends the
 * assistantMessageEvent alone. ame: stolen. */
static json_t *update_event(struct session *self, json_t *ame)
{
	if (self->delta_updates)
		return json_pack("{s:s, s:o}", "type", "message_update", "assistantMessageEvent", ame);
	json_object_set(ame, "partial", self->partial);
	return json_pack("{s:s, s:O, s:o}", "type", "message_update", "message", self->partial,
			 "assistantMessageEvent", ame);
}

static size_t content_index(struct session *self)
{
	size_t n = json_array_size(json_object_get(self->partial, "content"));

	return n ? n - 1 : 0;
}

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
static void ensure_partial(struct session *self)
{
	if (self->partial != NULL)
		return;
	self->partial = new_partial(self);
	self->text_idx = 0;
	emit(self, json_pack("{s:s, s:O}", "type", "message_start", "message", self->partial));
}

static void sink_start(void *ctx)
{
	struct session *self = ctx;

	touch(self);
	ensure_partial(self);
}

static void sink_text_start(void *ctx)
{
	struct session *self = ctx;

	touch(self);
	ensure_partial(self);
	self->text.len = 0;
	self->text_utf8 = true;
	self->text_synced = true;
	json_array_append_new(json_object_get(self->partial, "content"),
			      json_pack("{s:s, s:s}", "type", "text", "text", ""));
	self->text_idx = content_index(self);
	emit(self, update_event(self, json_pack("{s:s, s:i}", "type", "text_start",
						"contentIndex", (int)self->text_idx)));
}

/* The open block's text as a new JSON string. Pieces that were each valid
 * UTF-8 add up to valid UTF-8, so it is not checked again (a 10 MB answer
 * is put in text_end, its block and message_end: three scans saved). */
static json_t *text_string(struct session *self)
{
	const char *s = self->text.data ? self->text.data : "";

	return self->text_utf8 ? json_stringn_nocheck(s, self->text.len)
			       : json_stringn(s, self->text.len);
}

/* The open block's "text" brought up to date, once per change. */
static json_t *sync_block_text(struct session *self, json_t *msg)
{
	json_t *block = json_array_get(json_object_get(msg, "content"), self->text_idx);
	json_t *text;

	if (self->text_synced)
		return json_incref(json_object_get(block, "text"));
	text = text_string(self);
	if (text != NULL && json_object_set(block, "text", text) == 0)
		self->text_synced = true;
	return text;
}

static int text_append(struct session *self, const char *s, size_t n, bool valid)
{
	if (jsontext_reserve(&self->text, n) != 0)
		return -1;
	memcpy(self->text.data + self->text.len, s, n);
	self->text.len += n;
	self->text_utf8 = self->text_utf8 && valid;
	self->text_synced = false;
	return 0;
}

static void sink_text_delta(void *ctx, const char *s, size_t n)
{
	struct session *self = ctx;
	size_t idx = self->text_idx;

	touch(self);
	if (self->partial == NULL)
		return;
	if (self->delta_updates && self->cfg.line_buf != NULL) {
		/* The hot path: the line written straight into the output
		 * buffer, without building a tree; the text is checked for UTF-8
		 * as it is escaped. With the output gone nothing is written, but
		 * the message still grows. */
		struct jsontext_buf *b = self->cfg.line_buf(self->cfg.emit_ctx);
		size_t mark = b != NULL ? b->len : 0;
		int rc = b != NULL ? jsontext_delta_append(b, idx, s, n) : 0;

		if (rc == 0 && text_append(self, s, n, b != NULL || utf8_valid(s, n)) == 0) {
			if (b != NULL)
				self->cfg.line_done(self->cfg.emit_ctx);
			return;
		}
		if (rc != -2) {
			if (b != NULL)
				b->len = mark;
			LOG_ERROR("out of memory building an event");
			return;
		}
		/* Not UTF-8: the json path below refuses it as jansson does. */
	}
	if (text_append(self, s, n, utf8_valid(s, n)) != 0) {
		LOG_ERROR("out of memory building an event");
		return;
	}
	if (!self->delta_updates)
		json_decref(sync_block_text(self, self->partial));
	emit(self, update_event(self, json_pack("{s:s, s:i, s:s%}", "type", "text_delta",
						"contentIndex", (int)idx, "delta", s, n)));
}

static void sink_event(void *ctx, json_t *event)
{
	struct session *self = ctx;

	touch(self);
	ensure_partial(self);
	emit(self, event);
}

static void sink_text_end(void *ctx)
{
	struct session *self = ctx;
	json_t *text;

	touch(self);
	if (self->partial == NULL)
		return;
	/* With delta updates the block's text is only kept here; another
	 * block (an agent CLI writes several) starts from nothing. */
	text = sync_block_text(self, self->partial);
	emit(self, update_event(self, json_pack("{s:s, s:i, s:o}", "type", "text_end",
						"contentIndex", (int)self->text_idx,
						"content", text)));
}

static void set_usage(json_t *msg, int64_t input, int64_t output)
{
	json_t *usage = json_object_get(msg, "usage");

	json_object_set_new(usage, "input", json_integer(input));
	json_object_set_new(usage, "output", json_integer(output));
	json_object_set_new(usage, "totalTokens", json_integer(input + output));
}

/* Closes the streamed message: stop reason, error, message_end, context.
 * Returns it borrowed from the context. */
static json_t *close_message(struct session *self, enum stop_reason stop, const char *error,
			     int64_t input, int64_t output)
{
	json_t *msg;

	ensure_partial(self);
	msg = self->partial;
	self->partial = NULL;
	if (self->text.len > 0)
		json_decref(sync_block_text(self, msg));
	self->text.len = 0;
	json_object_set_new(msg, "stopReason", json_string(stop_reason_name(stop)));
	if (error != NULL)
		json_object_set_new(msg, "errorMessage", json_string(error));
	set_usage(msg, input, output);
	emit(self, json_pack("{s:s, s:O}", "type", "message_end", "message", msg));
	add_message(self, msg);
	/* The context holds it now; borrowed until it is dropped from there. */
	json_decref(msg);
	return msg;
}

static void emit_turn_end(struct session *self, json_t *msg)
{
	emit(self, json_pack("{s:s, s:O, s:[]}", "type", "turn_end", "message", msg,
			     "toolResults"));
}

static void emit_retry_end(struct session *self, const struct retry_decision *d)
{
	json_t *ev;

	if (!d->end)
		return;
	ev = json_pack("{s:s, s:b, s:i}", "type", "auto_retry_end", "success", d->end_success,
		       "attempt", d->end_attempt);
	if (ev != NULL && d->final_error != NULL)
		json_object_set_new(ev, "finalError", json_string(d->final_error));
	emit(self, ev);
}

/* How long a server asked us to wait: the provider's structured hint, else
 * one parsed from the error text; -1 when there is none. */
static int64_t server_hint(struct session *self, const struct provider_result *r)
{
	int64_t hint = r->hint_ms;

	if (hint < 0 && r->error_message != NULL &&
	    !hint_parse(r->error_message, strlen(r->error_message), wall_ms(self), &hint))
		hint = -1;
	return hint;
}

/* A usage-limit error: mark the credential exhausted until the hint (or the
 * cooldown), and say which credential is ready instead (-1: none). */
static int credential_switch(struct session *self, int64_t hint)
{
	int64_t now = wall_ms(self);
	int64_t wait = hint >= 0 ? hint : policy_int(self, "usageLimitCooldownMs", 1800000);

	authstore_mark_exhausted(&self->auth, now + wait);
	return authstore_next_available(&self->auth, now);
}

static bool model_rested(struct session *self, const char *model, int64_t now)
{
	json_t *until = json_object_get(self->model_cooldown, model);

	return until == NULL || json_integer_value(until) <= now;
}

/* The first model of [primary, fallbackModels...] other than the current one
 * that is not cooling down, or NULL. Borrowed. */
static const char *next_model(struct session *self, int64_t now)
{
	json_t *list = json_object_get(self->policy.json, "fallbackModels");
	size_t i;
	json_t *id;

	if (json_array_size(list) == 0)
		return NULL;
	if (strcmp(self->primary_model, self->model) != 0 &&
	    model_rested(self, self->primary_model, now))
		return self->primary_model;
	json_array_foreach(list, i, id) {
		const char *m = json_string_value(id);

		if (m != NULL && strcmp(m, self->model) != 0 && model_rested(self, m, now))
			return m;
	}
	return NULL;
}

static void use_model(struct session *self, const char *model, const char *kind_reason)
{
	json_t *ev = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "retry_fallback_applied",
			       "kind", "model", "from", self->model, "to", model,
			       "reason", kind_reason);
	char *copy = strdup(model);

	if (copy == NULL) {
		json_decref(ev);
		return;
	}
	free(self->model);
	self->model = copy;
	self->overloads = 0;
	emit(self, ev);
}

/* The primary model comes back once its cooldown is over (checked when a
 * chain starts, so one chain never flips between models). */
static void revert_model_if_rested(struct session *self)
{
	if (strcmp(self->model, self->primary_model) == 0 ||
	    !model_rested(self, self->primary_model, wall_ms(self)))
		return;
	use_model(self, self->primary_model, "cooldown-expired");
}

/* After a transient failure: pick what changes before the retry. Returns
 * the switch made ready (performed later, only if a retry happens). */
static enum retry_switch plan_switch(struct session *self, const char *error, int64_t hint,
				     int *cred, const char **model, const char **why)
{
	struct classify *c = classifier(self);
	int64_t now = wall_ms(self);
	size_t len = strlen(error);
	bool usage = classify_is_usage_limit(c, error, len);

	*cred = -1;
	*model = NULL;
	if (usage) {
		*cred = credential_switch(self, hint);
		if (*cred >= 0)
			return RETRY_SWITCH_CREDENTIAL;
	}
	if (classify_is_overload(c, error, len))
		self->overloads++;
	else
		self->overloads = 0;
	if (usage || self->overloads >= self->policy.retry.fallback_after_consecutive) {
		*model = next_model(self, now);
		if (*model != NULL) {
			int64_t rest = usage ? (hint >= 0 ? hint : policy_int(self, "usageLimitCooldownMs", 1800000))
					     : policy_int(self, "fallbackCooldownMs", 60000);

			json_object_set_new(self->model_cooldown, self->model, json_integer(now + rest));
			*why = usage ? "usage-limit" : "overloaded";
			return RETRY_SWITCH_MODEL;
		}
	}
	return RETRY_SWITCH_NONE;
}

static void stop_idle_timer(struct session *self)
{
	clock_timer_stop(self->cfg.clock, &self->idle_timer);
}

static void sink_finish(void *ctx, const struct provider_result *r)
{
	struct session *self = ctx;
	struct retry_policy policy = current_policy(self);
	struct retry_outcome outcome = { .failure = RETRY_OK, .hint_ms = -1 };
	struct retry_decision d;
	int next_cred = -1;
	const char *next_mod = NULL, *why = NULL;
	const char *error = r->stop == STOP_ERROR ? r->error_message : NULL;
	char *final = NULL;
	bool retryable = false;
	json_t *msg, *ev;

	stop_idle_timer(self);
	if (error != NULL)
		retryable = classify_error(classifier(self), error, strlen(error)) == CLASSIFY_RETRYABLE;
	if (retryable && r->no_resume != NULL && policy.enabled) {
		/* Never a blind replay: the failure is final, and says why. */
		size_t n = strlen(error) + strlen(r->no_resume) + 32;

		final = malloc(n);
		if (final != NULL) {
			snprintf(final, n, "%s (not retried: %s)", error, r->no_resume);
			error = final;
		}
		retryable = false;
	}
	msg = close_message(self, r->stop, error, r->input_tokens, r->output_tokens);
	if (r->stop == STOP_ERROR || r->stop == STOP_ABORTED) {
		const char *text = error ? error : "";

		outcome.error_message = error ? error
				      : r->error_message ? r->error_message : "Unknown error";
		outcome.failure = RETRY_PERMANENT;
		if (retryable) {
			outcome.failure = RETRY_TRANSIENT;
			outcome.hint_ms = server_hint(self, r);
			if (policy.enabled)
				outcome.switched = plan_switch(self, text, outcome.hint_ms, &next_cred,
							       &next_mod, &why);
		}
	} else {
		self->overloads = 0;
	}
	retry_decide(&policy, &self->chain, &self->budget, &outcome, clock_now(self->cfg.clock), &d);
	switch (d.action) {
	case RETRY_ACT_DONE:
		emit_retry_end(self, &d);
		emit_turn_end(self, msg);
		next_or_end(self);
		break;
	case RETRY_ACT_STOP:
		emit_turn_end(self, msg);
		emit_retry_end(self, &d);
		next_or_end(self);
		break;
	case RETRY_ACT_WAIT:
		emit_turn_end(self, msg);
		if (outcome.switched == RETRY_SWITCH_CREDENTIAL) {
			const char *from = authstore_current(&self->auth);

			ev = json_pack("{s:s, s:s, s:s, s:s}", "type", "retry_fallback_applied",
				       "kind", "credential", "from", from ? from : "",
				       "to", self->auth.names[next_cred]);
			authstore_use(&self->auth, (size_t)next_cred);
			emit(self, ev);
		} else if (outcome.switched == RETRY_SWITCH_MODEL) {
			use_model(self, next_mod, why);
		}
		ev = json_pack("{s:s, s:i, s:i, s:I, s:s, s:s}", "type", "auto_retry_start",
			       "attempt", d.attempt, "maxAttempts", d.max_attempts,
			       "delayMs", (json_int_t)d.delay_ms, "errorMessage",
			       outcome.error_message, "reason", retry_reason_name(d.reason));
		if (ev != NULL && d.hint_ms >= 0)
			json_object_set_new(ev, "hintMs", json_integer(d.hint_ms));
		emit(self, ev);
		/* The failed message leaves the context; the session file keeps it. */
		drop_last_message(self);
		self->phase = SESSION_BACKOFF;
		clock_timer_start(self->cfg.clock, &self->retry_timer, (uint64_t)d.delay_ms,
				  on_retry_timer, self);
		break;
	}
	retry_decision_release(&d);
	free(final);
}

static void on_idle_timeout(struct clock_timer *timer, void *ctx)
{
	struct session *self = ctx;
	char err[96];
	struct provider_result r = { .stop = STOP_ERROR, .error_message = err, .hint_ms = -1 };

	(void)timer;
	if (self->phase != SESSION_ATTEMPT)
		return;
	snprintf(err, sizeof(err), "stream stall: no data for %" PRId64 " ms",
		 self->policy.retry.idle_timeout_ms);
	self->cfg.provider->ops->abort(self->cfg.provider);
	sink_finish(self, &r);
}

static const struct provider_sink sink_template = {
	.start = sink_start,
	.text_start = sink_text_start,
	.text_delta = sink_text_delta,
	.text_end = sink_text_end,
	.finish = sink_finish,
	.event = sink_event,
};

static void start_attempt(struct session *self)
{
	struct provider_sink sink = sink_template;
	struct attempt_ctx actx = {
		.messages = self->messages,
		.model = self->model,
		.credential = authstore_current(&self->auth),
		.attempt = self->chain.attempt,
		.idle_timeout_ms = self->policy.retry.idle_timeout_ms,
		.continuation_prompt = json_string_value(json_object_get(self->policy.json,
									  "continuationPrompt")),
	};
	char err[512];
	struct provider *p = self->cfg.provider;

	sink.ctx = self;
	self->phase = SESSION_ATTEMPT;
	self->delta_updates = strcmp(settings_string(self->cfg.settings, "rpc.messageUpdates", "full"),
				     "delta") == 0;
	touch(self);
	if (p->ops->start(p, &actx, &sink, err, sizeof(err)) != 0) {
		struct provider_result r = { .stop = STOP_ERROR, .error_message = err, .hint_ms = -1 };

		sink_finish(self, &r);
		return;
	}
	if (self->output_paused && p->ops->pause)
		p->ops->pause(p, true);
}

/* Commands. */

static void begin_run(struct session *self, json_t *item)
{
	json_t *deliver = json_array();

	json_array_append_new(deliver, item);
	self->busy = true;
	json_array_clear(self->run_messages);
	emit_simple(self, "agent_start");
	start_turn(self, deliver, true);
}

/* A queue item: the user message and the policy snapshot taken now.
 * policy: stolen. */
static int enqueue(struct session *self, json_t *queue, const char *text, const json_t *images,
		   json_t *policy)
{
	json_t *item = json_pack("{s:o, s:o, s:I}", "message", user_message(self, text, images),
				 "policy", policy, "autoRetryGen", (json_int_t)self->auto_retry_gen);

	if (item == NULL)
		return -1;
	if (!self->busy) {
		begin_run(self, item);
		return 0;
	}
	return json_array_append_new(queue, item);
}

int session_accept(struct session *self, int behavior, const json_t *retry, json_t **policy,
		   char *err, size_t errlen)
{
	if (self->busy && behavior == BEHAVIOR_NONE) {
		snprintf(err, errlen, "Agent is already processing. Specify streamingBehavior "
			 "('steer' or 'followUp') to queue the message.");
		return -1;
	}
	*policy = policy_resolve(self->cfg.settings, retry, err, errlen);
	if (*policy != NULL && policy_check_prompt_override(retry, err, errlen) != 0) {
		json_decref(*policy);
		*policy = NULL;
	}
	return *policy ? 0 : -1;
}

int session_prompt(struct session *self, const char *text, const json_t *images,
		   int behavior, json_t *policy)
{
	return enqueue(self, behavior == BEHAVIOR_STEER ? self->steering : self->follow_ups, text,
		       images, policy);
}

static int enqueue_plain(struct session *self, json_t *queue, const char *text,
			 const json_t *images)
{
	char err[256];
	json_t *policy = policy_resolve(self->cfg.settings, NULL, err, sizeof(err));

	if (policy == NULL)
		return -1;
	return enqueue(self, queue, text, images, policy);
}

int session_steer(struct session *self, const char *text, const json_t *images)
{
	return enqueue_plain(self, self->steering, text, images);
}

int session_follow_up(struct session *self, const char *text, const json_t *images)
{
	return enqueue_plain(self, self->follow_ups, text, images);
}

void session_abort_retry(struct session *self)
{
	struct retry_decision d;

	if (self->phase != SESSION_BACKOFF)
		return;
	clock_timer_stop(self->cfg.clock, &self->retry_timer);
	self->phase = SESSION_IDLE;
	retry_cancel(&self->chain, &d);
	emit_retry_end(self, &d);
	next_or_end(self);
}

static void collect_texts(json_t *out, json_t *queue)
{
	size_t i;
	json_t *m;

	json_array_foreach(queue, i, m) {
		json_t *first = json_array_get(json_object_get(json_object_get(m, "message"), "content"), 0);

		json_array_append(out, json_object_get(first, "text"));
	}
	json_array_clear(queue);
}

void session_abort(struct session *self, json_t **data)
{
	json_t *dropped = json_array();
	struct retry_decision d;

	/* Nothing queued may start while the run is being taken down. */
	collect_texts(dropped, self->steering);
	collect_texts(dropped, self->follow_ups);
	if (self->phase == SESSION_BACKOFF) {
		clock_timer_stop(self->cfg.clock, &self->retry_timer);
		retry_cancel(&self->chain, &d);
		emit_retry_end(self, &d);
	} else if (self->phase == SESSION_ATTEMPT) {
		json_t *msg;

		self->cfg.provider->ops->abort(self->cfg.provider);
		stop_idle_timer(self);
		msg = close_message(self, STOP_ABORTED, ABORTED_MESSAGE, 0, 0);
		emit_turn_end(self, msg);
		retry_cancel(&self->chain, &d);
		emit_retry_end(self, &d);
	}
	if (self->busy)
		end_run(self);
	if (data != NULL)
		*data = json_pack("{s:o}", "discardedMessages", dropped);
	else
		json_decref(dropped);
}

int session_set_auto_retry(struct session *self, bool enabled, json_t **data,
			   char *err, size_t errlen)
{
	int rc = settings_persist(self->cfg.settings, "retry.enabled", json_boolean(enabled),
				  err, errlen);

	self->auto_retry_gen++;
	*data = NULL;
	if (rc != 0) {
		/* Applied for this process all the same; say what was not saved. */
		LOG_WARN("%s", err);
		*data = json_pack("{s:b, s:s}", "persisted", 0, "warning", utf8_repair(err));
	}
	return 0;
}

static json_t *model_object(struct session *self, const char *id)
{
	json_t *m = provider_model(self->cfg.provider, id);
	json_t *cw = json_object_get(m, "contextWindow"), *mt = json_object_get(m, "maxTokens");

	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:[s], s:{s:f, s:f, s:f, s:f}, s:I, s:I}",
			 "id", id, "name", id, "api", self->cfg.provider->api,
			 "provider", self->cfg.provider->name, "baseUrl", self->cfg.provider->base_url,
			 "reasoning", 0, "input", "text", "cost", "input", 0.0, "output", 0.0,
			 "cacheRead", 0.0, "cacheWrite", 0.0,
			 "contextWindow", json_is_integer(cw) ? json_integer_value(cw) : (json_int_t)128000,
			 "maxTokens", json_is_integer(mt) ? json_integer_value(mt) : (json_int_t)8192);
}

json_t *session_model(struct session *self)
{
	const char *id = json_string_value(json_object_get(self->model_json, "id"));

	/* get_state carries it: built once per model, not per call. */
	if (id == NULL || strcmp(id, self->model) != 0) {
		json_decref(self->model_json);
		self->model_json = model_object(self, self->model);
	}
	return json_incref(self->model_json);
}

json_t *session_state(struct session *self)
{
	/* Built member by member: json_pack parses its format on every call,
	 * and get_state is the command a client polls. */
	json_t *st = json_object();
	json_int_t pending = (json_int_t)(json_array_size(self->steering) +
					  json_array_size(self->follow_ups));

	if (st == NULL)
		return NULL;
	json_object_set_new_nocheck(st, "model", session_model(self));
	json_object_set_new_nocheck(st, "thinkingLevel", json_string_nocheck("off"));
	json_object_set_new_nocheck(st, "isStreaming", json_boolean(self->busy));
	json_object_set_new_nocheck(st, "isCompacting", json_false());
	json_object_set_new_nocheck(st, "steeringMode",
				    json_string_nocheck(self->steer_all ? "all" : "one-at-a-time"));
	json_object_set_new_nocheck(st, "followUpMode",
				    json_string_nocheck(self->follow_up_all ? "all" : "one-at-a-time"));
	json_object_set_new_nocheck(st, "sessionId", json_string(self->id));
	json_object_set_new_nocheck(st, "autoCompactionEnabled", json_false());
	json_object_set_new_nocheck(st, "messageCount",
				    json_integer((json_int_t)json_array_size(self->messages)));
	json_object_set_new_nocheck(st, "pendingMessageCount", json_integer(pending));
	json_object_set_new_nocheck(st, "autoRetryEnabled",
				    json_boolean(settings_bool(self->cfg.settings, "retry.enabled", true)));
	json_object_set_new_nocheck(st, "isRetrying", json_boolean(self->phase == SESSION_BACKOFF));
	json_object_set_new_nocheck(st, "retryAttempt", json_integer(self->chain.attempt));
	if (self->file != NULL)
		json_object_set_new_nocheck(st, "sessionFile", json_string(self->file));
	if (self->name != NULL)
		json_object_set_new_nocheck(st, "sessionName", json_string(self->name));
	/* The snapshot the running chain uses; null when idle. */
	json_object_set_new_nocheck(st, "retryPolicy", self->busy && self->policy.json
						       ? json_deep_copy(self->policy.json) : json_null());
	json_object_set_new_nocheck(st, "retryBudget", retry_budget_json(&self->budget));
	/* A member whose value could not be made is missing: say so, once. */
	if (json_object_size(st) < 15) {
		json_decref(st);
		return NULL;
	}
	return st;
}

json_t *session_retry_policy(struct session *self)
{
	char err[512];

	return policy_resolve(self->cfg.settings, NULL, err, sizeof(err));
}

int session_set_retry_policy(struct session *self, const json_t *policy, bool persist,
			     json_t **data, char *err, size_t errlen)
{
	json_t *resolved;
	struct classify *c;
	const char *key;
	json_t *v;
	char name[128], werr[512] = "";
	bool saved = true;

	*data = NULL;
	if (!json_is_object(policy)) {
		snprintf(err, errlen, "set_retry_policy: field \"policy\" must be an object of retry settings");
		return -1;
	}
	/* Everything is checked before anything changes. */
	resolved = policy_resolve(self->cfg.settings, policy, err, errlen);
	if (resolved == NULL)
		return -1;
	c = classify_new(resolved, err, errlen);
	json_decref(resolved);
	if (c == NULL)
		return -1;
	json_object_foreach((json_t *)policy, key, v) {
		snprintf(name, sizeof(name), "retry.%s", key);
		if (persist) {
			if (settings_persist(self->cfg.settings, name, json_deep_copy(v), werr,
					     sizeof(werr)) != 0)
				saved = false;
		} else {
			settings_override_value(self->cfg.settings, name, json_deep_copy(v), werr,
						sizeof(werr));
		}
	}
	classify_free(self->cfg.classify);
	self->cfg.classify = c;
	retry_budget_configure(&self->budget, settings_get(self->cfg.settings, "retry.budget"));
	*data = json_pack("{s:o, s:b}", "policy", session_retry_policy(self), "persisted",
			  persist && saved);
	if (!saved) {
		LOG_WARN("%s", werr);
		json_object_set_new(*data, "warning", json_string(utf8_repair(werr)));
	}
	return 0;
}

json_t *session_messages(struct session *self)
{
	return json_pack("{s:O}", "messages", self->messages);
}

json_t *session_last_assistant_text(struct session *self)
{
	size_t i = json_array_size(self->messages);

	while (i-- > 0) {
		json_t *m = json_array_get(self->messages, i);
		const char *role = json_string_value(json_object_get(m, "role"));
		json_t *part, *out;
		size_t k, len = 0;
		char *text = NULL;

		if (role == NULL || strcmp(role, "assistant") != 0)
			continue;
		/* pi joins the text blocks of the last assistant message. */
		json_array_foreach(json_object_get(m, "content"), k, part) {
			json_t *t = json_object_get(part, "text");
			char *p;

			if (!json_is_string(t))
				continue;
			p = realloc(text, len + json_string_length(t) + 1);
			if (p == NULL)
				break;
			text = p;
			memcpy(text + len, json_string_value(t), json_string_length(t));
			len += json_string_length(t);
		}
		out = text ? json_pack("{s:s%}", "text", text, len) : json_pack("{s:n}", "text");
		free(text);
		return out;
	}
	return json_pack("{s:n}", "text");
}

json_t *session_stats(struct session *self)
{
	size_t i, user = 0, assistant = 0;
	json_int_t in = 0, out = 0;
	json_t *m;
	json_t *st;

	json_array_foreach(self->messages, i, m) {
		const char *role = json_string_value(json_object_get(m, "role"));
		json_t *usage = json_object_get(m, "usage");

		if (role != NULL && strcmp(role, "user") == 0)
			user++;
		else if (role != NULL && strcmp(role, "assistant") == 0)
			assistant++;
		in += json_integer_value(json_object_get(usage, "input"));
		out += json_integer_value(json_object_get(usage, "output"));
	}
	st = json_pack("{s:s, s:I, s:I, s:i, s:i, s:I, s:{s:I, s:I, s:i, s:i, s:I}, s:f}",
		       "sessionId", self->id, "userMessages", (json_int_t)user,
		       "assistantMessages", (json_int_t)assistant, "toolCalls", 0, "toolResults", 0,
		       "totalMessages", (json_int_t)json_array_size(self->messages),
		       "tokens", "input", in, "output", out, "cacheRead", 0, "cacheWrite", 0,
		       "total", in + out, "cost", 0.0);
	if (st != NULL && self->file != NULL)
		json_object_set_new(st, "sessionFile", json_string(self->file));
	return st;
}

json_t *session_models(struct session *self)
{
	json_t *ids = self->cfg.provider->models;
	json_t *models = json_array();
	size_t i;
	json_t *id;
	bool listed = false;

	json_array_foreach(ids, i, id) {
		const char *mid = json_string_value(json_object_get(id, "id"));

		json_array_append_new(models, model_object(self, mid));
		listed |= strcmp(mid, self->model) == 0;
	}
	if (!listed)
		json_array_insert_new(models, 0, session_model(self));
	return json_pack("{s:o}", "models", models);
}

int session_set_model(struct session *self, const char *provider, const char *model_id,
		      char *err, size_t errlen)
{
	char *copy;

	if (strcmp(provider, self->cfg.provider->name) != 0) {
		snprintf(err, errlen, "Model not found: %.100s/%.100s (provider is \"%s\")",
			 provider, model_id, self->cfg.provider->name);
		return -1;
	}
	if (provider_model(self->cfg.provider, model_id) == NULL && strcmp(model_id, self->model) != 0) {
		snprintf(err, errlen, "Model not found: %.100s/%.100s", provider, model_id);
		return -1;
	}
	copy = strdup(model_id);
	if (copy == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	free(self->model);
	self->model = copy;
	/* A model the caller picks is the new primary; fallbacks start over. */
	free(self->primary_model);
	self->primary_model = strdup(copy);
	self->overloads = 0;
	json_object_clear(self->model_cooldown);
	return self->primary_model ? 0 : -1;
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
	if (self->phase == SESSION_ATTEMPT && p->ops->pause)
		p->ops->pause(p, paused);
}

void session_when_idle(struct session *self, void (*cb)(void *ctx), void *ctx)
{
	self->idle_cb = cb;
	self->idle_ctx = ctx;
	maybe_idle(self);
}

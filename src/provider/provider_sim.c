#include "provider/provider_sim.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/hint.h"
#include "base/number.h"

/* With no chunk delay, stream this many words per loop turn, so output
 * I/O and incoming commands interleave with a long answer. */
#define SIM_BATCH 64

enum sim_phase {
	SIM_IDLE,
	SIM_DELAY,   /* waiting out the step's delayMs */
	SIM_STREAM,  /* sending words */
	SIM_HANG,    /* started; never ends */
};

struct sim {
	struct provider base;
	struct clock *clock;
	json_t *plan;          /* owned */
	size_t next;           /* next step */
	int64_t chunk_delay_ms;

	/* The running attempt. */
	enum sim_phase phase;
	struct provider_sink sink;
	struct clock_timer timer;
	bool paused;
	char *text;            /* owned: what to stream */
	size_t text_len, pos;
	bool text_started;
	char *error;           /* owned; NULL for a success */
	const json_t *step;    /* borrowed from plan: the typed failure (status, body, headers) */
	int64_t hint_ms;
	bool hang;
	int64_t input_tokens;
	int64_t output_tokens;
};

static const char *const step_keys[] = { "text", "error", "hang", "delayMs", "retryAfterMs",
					 "status", "body", "headers", NULL };

/* A failure's typed facts, as an HTTP provider would report them. */
static int check_typed(const json_t *step, size_t i, char *err, size_t errlen)
{
	json_t *v = json_object_get(step, "status");
	const char *key;
	json_t *h;

	if (v != NULL && (!json_is_integer(v) || json_integer_value(v) < 100 ||
			  json_integer_value(v) > 599))
		return errbuf_set(err, errlen, "sim.plan[%zu]: \"status\" must be an HTTP status (100-599)", i);
	v = json_object_get(step, "body");
	if (v != NULL && !json_is_string(v))
		return errbuf_set(err, errlen, "sim.plan[%zu]: \"body\" must be a string", i);
	v = json_object_get(step, "headers");
	if (v != NULL && !json_is_object(v))
		return errbuf_set(err, errlen, "sim.plan[%zu]: \"headers\" must be an object of strings", i);
	json_object_foreach(v, key, h) {
		if (!json_is_string(h))
			return errbuf_set(err, errlen, "sim.plan[%zu]: headers.%.60s must be a string", i, key);
	}
	if (json_object_get(step, "error") == NULL &&
	    (json_object_get(step, "status") || json_object_get(step, "body") || v != NULL))
		return errbuf_set(err, errlen, "sim.plan[%zu]: \"status\", \"body\" and \"headers\" go with \"error\"", i);
	return 0;
}

int provider_sim_check_plan(const json_t *plan, char *err, size_t errlen)
{
	size_t i;
	json_t *step;

	if (!json_is_array(plan))
		return errbuf_set(err, errlen, "sim.plan must be an array of steps");
	json_array_foreach(plan, i, step) {
		const char *key;
		json_t *v;
		bool any = false;

		if (!json_is_object(step))
			return errbuf_set(err, errlen, "sim.plan[%zu] must be an object like {\"text\": \"...\"}", i);
		json_object_foreach(step, key, v) {
			size_t k = 0;

			while (step_keys[k] != NULL && strcmp(step_keys[k], key) != 0)
				k++;
			if (step_keys[k] == NULL)
				return errbuf_set(err, errlen,
						   "sim.plan[%zu]: unknown key \"%.60s\" (expected text, error, hang, delayMs, retryAfterMs, status, body, headers)",
						   i, key);
		}
		v = json_object_get(step, "text");
		if (v != NULL && !json_is_string(v))
			return errbuf_set(err, errlen, "sim.plan[%zu]: \"text\" must be a string", i);
		any |= v != NULL;
		v = json_object_get(step, "error");
		if (v != NULL && !json_is_string(v))
			return errbuf_set(err, errlen, "sim.plan[%zu]: \"error\" must be a string", i);
		any |= v != NULL;
		v = json_object_get(step, "hang");
		if (v != NULL && !json_is_boolean(v))
			return errbuf_set(err, errlen, "sim.plan[%zu]: \"hang\" must be true or false", i);
		any |= json_is_true(v);
		v = json_object_get(step, "delayMs");
		if (v != NULL && (!json_is_integer(v) || json_integer_value(v) < 0))
			return errbuf_set(err, errlen, "sim.plan[%zu]: \"delayMs\" must be an integer >= 0", i);
		v = json_object_get(step, "retryAfterMs");
		if (v != NULL && (!json_is_integer(v) || json_integer_value(v) < 0))
			return errbuf_set(err, errlen, "sim.plan[%zu]: \"retryAfterMs\" must be an integer >= 0", i);
		if (!any)
			return errbuf_set(err, errlen, "sim.plan[%zu] needs \"text\", \"error\" or \"hang\": true", i);
		if (check_typed(step, i, err, errlen) != 0)
			return -1;
	}
	return 0;
}

static void reset_attempt(struct sim *self)
{
	clock_timer_stop(self->clock, &self->timer);
	free(self->text);
	free(self->error);
	self->text = NULL;
	self->error = NULL;
	self->step = NULL;
	self->text_len = self->pos = 0;
	self->text_started = false;
	self->hint_ms = -1;
	self->hang = false;
	self->phase = SIM_IDLE;
}

static char *dup_n(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p != NULL) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0';
}

/* The end of the next word: leading whitespace, then non-whitespace. */
static size_t word_end(const char *s, size_t len, size_t pos)
{
	while (pos < len && is_space(s[pos]))
		pos++;
	while (pos < len && !is_space(s[pos]))
		pos++;
	return pos;
}

static void finish(struct sim *self)
{
	struct provider_sink sink = self->sink;
	struct provider_result r = {
		.stop = self->error ? STOP_ERROR : STOP_STOP,
		.error_message = self->error,
		.hint_ms = self->hint_ms,
		.input_tokens = self->input_tokens,
		.output_tokens = self->output_tokens,
	};
	char *error = self->error;
	json_t *body = json_object_get(self->step, "body");

	if (error != NULL && self->step != NULL) {
		r.http_status = (int)json_integer_value(json_object_get(self->step, "status"));
		r.error_body = json_string_value(body);
		r.error_body_len = json_string_length(body);
		r.headers = json_object_get(self->step, "headers");
	}

	self->error = NULL;
	reset_attempt(self);
	sink.finish(sink.ctx, &r);
	free(error);
}

static void step(struct clock_timer *timer, void *ctx);

static void schedule(struct sim *self, uint64_t delay)
{
	if (!self->paused)
		clock_timer_start(self->clock, &self->timer, delay, step, self);
}

static void step(struct clock_timer *timer, void *ctx)
{
	struct sim *self = ctx;
	int budget = self->chunk_delay_ms > 0 ? 1 : SIM_BATCH;

	(void)timer;
	if (self->phase == SIM_DELAY) {
		self->phase = self->hang && self->text == NULL ? SIM_HANG : SIM_STREAM;
		self->sink.start(self->sink.ctx);
		if (self->phase == SIM_HANG)
			return;
		if (self->text != NULL) {
			self->text_started = true;
			self->sink.text_start(self->sink.ctx);
		}
	}
	while (self->text != NULL && self->pos < self->text_len && budget-- > 0) {
		size_t end = word_end(self->text, self->text_len, self->pos);

		self->sink.text_delta(self->sink.ctx, self->text + self->pos, end - self->pos);
		self->pos = end;
		if (self->paused)
			return;
	}
	if (self->text != NULL && self->pos < self->text_len) {
		schedule(self, (uint64_t)self->chunk_delay_ms);
		return;
	}
	if (self->text_started) {
		self->text_started = false;
		self->sink.text_end(self->sink.ctx);
	}
	if (self->hang) {
		self->phase = SIM_HANG;
		return;
	}
	finish(self);
}

/* The last user message's text, for the echo once the plan is used up. */
static void last_user_text(const json_t *messages, const char **text, size_t *len)
{
	size_t i = json_array_size(messages);

	*text = "";
	*len = 0;
	while (i-- > 0) {
		json_t *m = json_array_get(messages, i);
		json_t *content, *part;
		size_t k;

		const char *role = json_string_value(json_object_get(m, "role"));

		if (role == NULL || strcmp(role, "user") != 0)
			continue;
		content = json_object_get(m, "content");
		json_array_foreach(content, k, part) {
			json_t *t = json_object_get(part, "text");

			if (json_is_string(t)) {
				*text = json_string_value(t);
				*len = json_string_length(t);
				return;
			}
		}
		return;
	}
}

static int64_t count_input_tokens(const json_t *messages)
{
	size_t i, k, chars = 0;
	json_t *m, *part;

	json_array_foreach(messages, i, m) {
		json_array_foreach(json_object_get(m, "content"), k, part)
			chars += json_string_length(json_object_get(part, "text"));
	}
	return (int64_t)((chars + 3) / 4);
}

static int sim_start(struct provider *base, const struct attempt_ctx *ctx,
		     const struct provider_sink *sink, char *err, size_t errlen)
{
	struct sim *self = (struct sim *)base;
	json_t *st = json_array_get(self->plan, self->next);
	const char *text = NULL;
	size_t text_len = 0;
	int64_t delay = 0;

	reset_attempt(self);
	if (st != NULL) {
		json_t *t = json_object_get(st, "text");
		json_t *e = json_object_get(st, "error");
		json_t *h = json_object_get(st, "retryAfterMs");
		int64_t n;

		self->next++;
		self->step = st;
		if (json_is_string(t)) {
			text = json_string_value(t);
			text_len = json_string_length(t);
		}
		if (json_is_string(e))
			self->error = dup_n(json_string_value(e), json_string_length(e));
		/* Checked >= 0 by provider_sim_check_plan(); saturated like any
		 * number from outside, the hint at HINT_MAX_MS like a server's
		 * (a wait of 2^63-1 ms overflowed now + wait). */
		if (number_from_json(h, &n) > 0)
			self->hint_ms = n < HINT_MAX_MS ? n : HINT_MAX_MS;
		self->hang = json_is_true(json_object_get(st, "hang"));
		number_from_json(json_object_get(st, "delayMs"), &delay);
	} else {
		last_user_text(ctx->messages, &text, &text_len);
	}
	if (text != NULL) {
		self->text = dup_n(text, text_len);
		self->text_len = text_len;
	}
	if ((text != NULL && self->text == NULL) ||
	    (st != NULL && json_is_string(json_object_get(st, "error")) && self->error == NULL)) {
		reset_attempt(self);
		return errbuf_set(err, errlen, "sim: out of memory");
	}
	self->input_tokens = count_input_tokens(ctx->messages);
	self->output_tokens = (int64_t)((text_len + 3) / 4);
	self->sink = *sink;
	self->phase = SIM_DELAY;
	clock_timer_start(self->clock, &self->timer, (uint64_t)delay, step, self);
	return 0;
}

static void sim_abort(struct provider *base)
{
	reset_attempt((struct sim *)base);
}

static void sim_pause(struct provider *base, bool paused)
{
	struct sim *self = (struct sim *)base;

	if (self->paused == paused)
		return;
	self->paused = paused;
	if (paused) {
		if (self->phase == SIM_STREAM)
			clock_timer_stop(self->clock, &self->timer);
	} else if (self->phase == SIM_STREAM && !clock_timer_active(&self->timer)) {
		schedule(self, 0);
	}
}

static void sim_free(struct provider *base)
{
	struct sim *self = (struct sim *)base;

	reset_attempt(self);
	json_decref(self->plan);
	json_decref(self->base.models);
	json_decref(self->base.credentials);
	free(self);
}

static const struct provider_ops sim_ops = {
	.start = sim_start,
	.abort = sim_abort,
	.pause = sim_pause,
	.free = sim_free,
};

struct provider *provider_sim_new(struct clock *clock, const json_t *plan, int64_t chunk_delay_ms,
				  const json_t *models, const json_t *credentials)
{
	struct sim *self = calloc(1, sizeof(*self));

	if (self == NULL)
		return NULL;
	self->base.ops = &sim_ops;
	self->base.name = "sim";
	self->base.api = "sim";
	self->base.base_url = "";
	self->base.models = provider_models_from(models);
	self->base.credentials = credentials ? json_deep_copy(credentials) : json_array();
	self->clock = clock;
	self->plan = plan ? json_deep_copy(plan) : json_array();
	self->chunk_delay_ms = chunk_delay_ms;
	self->hint_ms = -1;
	if (self->plan == NULL || self->base.models == NULL || self->base.credentials == NULL) {
		sim_free(&self->base);
		return NULL;
	}
	return &self->base;
}

#include "support/recsink.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(struct recsink *self, const char *p, size_t n)
{
	if (self->len + n + 1 > self->cap) {
		size_t cap = (self->len + n + 1) * 2;
		char *log = realloc(self->log, cap);

		if (log == NULL) {
			fputs("recsink: out of memory\n", stderr);
			abort();
		}
		self->log = log;
		self->cap = cap;
	}
	memcpy(self->log + self->len, p, n);
	self->len += n;
	self->log[self->len] = '\0';
}

static void put_str(struct recsink *self, const char *s)
{
	put(self, s, strlen(s));
}

static void misorder(struct recsink *self, bool bad, const char *what)
{
	if (bad && self->misorder == NULL)
		self->misorder = what;
}

static void on_start(void *ctx)
{
	struct recsink *self = ctx;

	misorder(self, self->starts > 0, "start() twice");
	self->starts++;
	put_str(self, "start;");
}

static bool text_open(const struct recsink *self)
{
	return self->text_starts > self->text_ends;
}

static bool thinking_open(const struct recsink *self)
{
	return self->thinking_starts > self->thinking_ends;
}

static void on_text_start(void *ctx)
{
	struct recsink *self = ctx;

	misorder(self, self->starts == 0, "text_start() before start()");
	misorder(self, text_open(self), "text_start() inside a text block");
	misorder(self, thinking_open(self), "text_start() inside a thinking block");
	self->text_starts++;
	put_str(self, "text_start;");
}

static void on_text_delta(void *ctx, const char *text, size_t len)
{
	struct recsink *self = ctx;

	misorder(self, !text_open(self), "text_delta() outside a text block");
	if (len == 0 || (self->check_delta != NULL && !self->check_delta(text, len)))
		self->bad_deltas++;
	self->deltas++;
	put_str(self, "delta(");
	put(self, text, len);
	put_str(self, ");");
}

static void on_text_end(void *ctx)
{
	struct recsink *self = ctx;

	misorder(self, !text_open(self), "text_end() without an open text block");
	self->text_ends++;
	put_str(self, "text_end;");
}

static void on_thinking_start(void *ctx)
{
	struct recsink *self = ctx;

	misorder(self, self->starts == 0, "thinking_start() before start()");
	misorder(self, thinking_open(self), "thinking_start() inside a thinking block");
	misorder(self, text_open(self), "thinking_start() inside a text block");
	self->thinking_starts++;
	put_str(self, "thinking_start;");
}

static void on_thinking_delta(void *ctx, const char *text, size_t len)
{
	struct recsink *self = ctx;

	misorder(self, !thinking_open(self), "thinking_delta() outside a thinking block");
	if (len == 0 || (self->check_delta != NULL && !self->check_delta(text, len)))
		self->bad_deltas++;
	self->thinking_deltas++;
	put_str(self, "thinking_delta:");
	put(self, text, len);
	put_str(self, ";");
}

static void on_thinking_end(void *ctx, const char *signature, size_t signature_len,
			    bool redacted)
{
	struct recsink *self = ctx;

	misorder(self, !thinking_open(self), "thinking_end() without an open thinking block");
	self->thinking_ends++;
	if (redacted)
		self->redacted++;
	put_str(self, "thinking_end:");
	if (signature != NULL)
		put(self, signature, signature_len);
	if (redacted)
		put_str(self, "|redacted");
	put_str(self, ";");
}

static void on_finish(void *ctx, const struct provider_result *result)
{
	struct recsink *self = ctx;
	char note[64];

	misorder(self, self->finishes > 0, "finish() twice");
	misorder(self, text_open(self), "finish() inside a text block");
	misorder(self, thinking_open(self), "finish() inside a thinking block");
	self->finishes++;
	self->result = *result;
	if (result->error_message != NULL) {
		snprintf(self->error_text, sizeof(self->error_text), "%s", result->error_message);
		self->result.error_message = self->error_text;
	}
	snprintf(note, sizeof(note), "finish(%d);", (int)result->stop);
	put_str(self, note);
}

static void on_event(void *ctx, json_t *event)
{
	struct recsink *self = ctx;
	const char *type = json_string_value(json_object_get(event, "type"));

	self->events++;
	put_str(self, "event(");
	put_str(self, type != NULL ? type : "?");
	put_str(self, ");");
	json_decref(event);
}

void recsink_init(struct recsink *self)
{
	memset(self, 0, sizeof(*self));
}

void recsink_release(struct recsink *self)
{
	free(self->log);
	self->log = NULL;
	self->len = self->cap = 0;
}

struct provider_sink recsink_sink(struct recsink *self)
{
	return (struct provider_sink){
		.start = on_start,
		.text_start = on_text_start,
		.text_delta = on_text_delta,
		.text_end = on_text_end,
		.finish = on_finish,
		.ctx = self,
		.event = on_event,
		.thinking_start = on_thinking_start,
		.thinking_delta = on_thinking_delta,
		.thinking_end = on_thinking_end,
	};
}

void recsink_note(struct recsink *self, const char *text, size_t len)
{
	put(self, text, len);
}

char *recsink_take_log(struct recsink *self)
{
	char *log = self->log;

	if (log == NULL) {
		log = strdup("");
		if (log == NULL)
			abort();
	}
	self->log = NULL;
	self->len = self->cap = 0;
	return log;
}

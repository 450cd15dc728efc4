#include "core/assistant.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/number.h"
#include "base/utf8.h"
#include "proto/event.h"

static void emit(struct assistant *self, json_t *event)
{
	if (event == NULL) {
		LOG_ERROR("out of memory building an event");
		return;
	}
	self->out.emit(self->out.ctx, event);
}

/* ame: takes ownership. */
static void emit_update(struct assistant *self, json_t *ame)
{
	emit(self, event_message_update(ame, self->delta_updates ? NULL : self->partial));
}

void assistant_init(struct assistant *self, const struct assistant_output *out)
{
	memset(self, 0, sizeof(*self));
	self->out = *out;
}

void assistant_release(struct assistant *self)
{
	json_decref(self->partial);
	free(self->text.data);
	memset(self, 0, sizeof(*self));
}

bool assistant_is_open(const struct assistant *self)
{
	return self->partial != NULL;
}

bool assistant_has_content(const struct assistant *self)
{
	return self->partial != NULL &&
	       json_array_size(json_object_get(self->partial, "content")) > 0;
}

void assistant_open(struct assistant *self, const char *api, const char *provider,
		    const char *model, int64_t timestamp_ms)
{
	if (self->partial != NULL)
		return;
	self->partial = json_pack("{s:s, s:[], s:s, s:s, s:s, s:{s:i, s:i, s:i, s:i, s:i, "
				  "s:{s:f, s:f, s:f, s:f, s:f}}, s:s, s:I}",
				  "role", "assistant", "content", "api", api, "provider", provider,
				  "model", model, "usage", "input", 0, "output", 0, "cacheRead", 0,
				  "cacheWrite", 0, "totalTokens", 0, "cost", "input", 0.0,
				  "output", 0.0, "cacheRead", 0.0, "cacheWrite", 0.0, "total", 0.0,
				  "stopReason", "stop", "timestamp", (json_int_t)timestamp_ms);
	self->text_idx = 0;
	self->text.len = 0;
	self->text_synced = true;
	emit(self, event_message_start(self->partial));
}

static size_t last_index(const struct assistant *self)
{
	size_t n = json_array_size(json_object_get(self->partial, "content"));

	return n ? n - 1 : 0;
}

/* The member of the block that holds its text. */
static const char *text_key(const struct assistant *self)
{
	return self->thinking ? "thinking" : "text";
}

/* The open block's text as a new JSON string. Pieces that were each valid
 * UTF-8 add up to valid UTF-8, so it is not checked again (a 10 MB answer
 * is put in text_end, its block and message_end: three scans saved). */
static json_t *text_string(struct assistant *self)
{
	const char *s = self->text.data ? self->text.data : "";

	return self->text_utf8 ? json_stringn_nocheck(s, self->text.len)
			       : json_stringn(s, self->text.len);
}

/* The open block's text member brought up to date, once per change;
 * returns it (new reference). */
static json_t *sync_block_text(struct assistant *self, json_t *msg)
{
	json_t *block = json_array_get(json_object_get(msg, "content"), self->text_idx);
	json_t *text;

	if (self->text_synced)
		return json_incref(json_object_get(block, text_key(self)));
	text = text_string(self);
	if (text != NULL && json_object_set(block, text_key(self), text) == 0)
		self->text_synced = true;
	return text;
}

/* A new block of either kind; the one before keeps its text (a provider
 * that starts a block without ending the last loses nothing). */
static void block_start(struct assistant *self, bool thinking)
{
	json_t *block;

	if (self->partial == NULL)
		return;
	json_decref(sync_block_text(self, self->partial));
	self->text.len = 0;
	self->text_utf8 = true;
	self->text_synced = true;
	self->thinking = thinking;
	block = thinking ? json_pack("{s:s, s:s}", "type", "thinking", "thinking", "")
			 : json_pack("{s:s, s:s}", "type", "text", "text", "");
	json_array_append_new(json_object_get(self->partial, "content"), block);
	self->text_idx = last_index(self);
	emit_update(self, thinking ? event_thinking_start(self->text_idx)
				   : event_text_start(self->text_idx));
}

void assistant_text_start(struct assistant *self)
{
	block_start(self, false);
}

void assistant_thinking_start(struct assistant *self)
{
	block_start(self, true);
}

static int text_append(struct assistant *self, const char *s, size_t n, bool valid)
{
	if (jsontext_reserve(&self->text, n) != 0)
		return -1;
	memcpy(self->text.data + self->text.len, s, n);
	self->text.len += n;
	self->text_utf8 = self->text_utf8 && valid;
	self->text_synced = false;
	return 0;
}

static void block_delta(struct assistant *self, const char *s, size_t n)
{
	size_t idx = self->text_idx;

	if (self->partial == NULL)
		return;
	if (self->delta_updates && self->out.line_buf != NULL) {
		/* The hot path: the line written straight into the output
		 * buffer, without building a tree; the text is checked for UTF-8
		 * as it is escaped. With the output gone nothing is written, but
		 * the message still grows. */
		struct jsontext_buf *b = self->out.line_buf(self->out.ctx);
		size_t mark = b != NULL ? b->len : 0;
		int rc = b == NULL ? 0
			 : self->thinking ? event_thinking_delta_line(b, idx, s, n)
					  : event_delta_line(b, idx, s, n);

		if (rc == 0 && text_append(self, s, n, b != NULL || utf8_valid(s, n)) == 0) {
			if (b != NULL)
				self->out.line_done(self->out.ctx);
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
	emit_update(self, self->thinking ? event_thinking_delta(idx, s, n)
					 : event_text_delta(idx, s, n));
}

void assistant_text_delta(struct assistant *self, const char *s, size_t n)
{
	block_delta(self, s, n);
}

void assistant_text_seed(struct assistant *self, const char *s, size_t n)
{
	if (self->partial == NULL || text_append(self, s, n, utf8_valid(s, n)) != 0)
		return;
	if (!self->delta_updates)
		json_decref(sync_block_text(self, self->partial));
}

void assistant_blocks_prepend(struct assistant *self, const json_t *blocks)
{
	json_t *content, *block;
	size_t i;

	if (self->partial == NULL || !json_is_array(blocks))
		return;
	json_decref(sync_block_text(self, self->partial));
	content = json_object_get(self->partial, "content");
	json_array_foreach(blocks, i, block)
		json_array_insert_new(content, i, json_deep_copy(block));
	self->text_idx += json_array_size(blocks);
}

void assistant_thinking_delta(struct assistant *self, const char *s, size_t n)
{
	block_delta(self, s, n);
}

void assistant_text_end(struct assistant *self)
{
	if (self->partial == NULL)
		return;
	/* With delta updates the block's text is only kept here; another
	 * block (an agent CLI writes several) starts from nothing. */
	emit_update(self, event_text_end(self->text_idx, sync_block_text(self, self->partial)));
}

void assistant_thinking_end(struct assistant *self, const char *signature, size_t len,
			    bool redacted)
{
	json_t *block, *content;

	if (self->partial == NULL)
		return;
	if (redacted && self->text.len == 0)
		text_append(self, ASSISTANT_REDACTED_THINKING,
			    sizeof(ASSISTANT_REDACTED_THINKING) - 1, true);
	content = sync_block_text(self, self->partial);
	block = json_array_get(json_object_get(self->partial, "content"), self->text_idx);
	/* A signature that is not UTF-8 cannot be kept in JSON: left out, as
	 * when the provider sends none. */
	if (signature != NULL)
		json_object_set_new(block, "thinkingSignature", json_stringn(signature, len));
	if (redacted)
		json_object_set_new(block, "redacted", json_true());
	emit_update(self, event_thinking_end(self->text_idx, content));
}

static void set_count(json_t *usage, const char *key, int64_t n)
{
	json_object_set_new(usage, key, json_integer(n));
}

json_t *assistant_close(struct assistant *self, const char *stop_reason, const char *error,
			const struct assistant_usage *counts, const char *retry_skipped)
{
	json_t *msg = self->partial, *ev;
	json_t *usage = json_object_get(msg, "usage");
	struct assistant_usage u = { 0 };

	self->partial = NULL;
	if (self->text.len > 0)
		json_decref(sync_block_text(self, msg));
	self->text.len = 0;
	json_object_set_new(msg, "stopReason", json_string(stop_reason));
	if (error != NULL)
		json_object_set_new(msg, "errorMessage", json_string(error));
	/* The counts came from a provider: clamped again, and summed without
	 * overflow, whatever a provider let through. */
	if (counts != NULL)
		u = *counts;
	set_count(usage, "input", number_clamp(u.input));
	set_count(usage, "output", number_clamp(u.output));
	set_count(usage, "cacheRead", number_clamp(u.cache_read));
	set_count(usage, "cacheWrite", number_clamp(u.cache_write));
	set_count(usage, "totalTokens",
		  u.total > 0 ? number_clamp(u.total)
			      : number_add(number_add(u.input, u.output),
					   number_add(u.cache_read, u.cache_write)));
	ev = event_message_end(msg);
	if (ev != NULL && retry_skipped != NULL)
		json_object_set_new(ev, "retrySkipped", json_string(retry_skipped));
	emit(self, ev);
	return msg;
}

json_t *assistant_last_text(const json_t *messages)
{
	size_t i = json_array_size(messages);

	while (i-- > 0) {
		json_t *m = json_array_get(messages, i);
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

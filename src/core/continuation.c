#include "core/continuation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"

/* Past this much held text the filter decides anyway: a repeat is never
 * longer than the window, whatever whitespace the model changed. */
#define PENDING_MAX (4 * CONTINUATION_WINDOW)

static const char *const mode_names[] = {
	[CONTINUATION_NONE] = "none",
	[CONTINUATION_REPLAY] = "replay",
	[CONTINUATION_TURN] = "turn",
	[CONTINUATION_PREFILL] = "prefill",
	[CONTINUATION_RESUME] = "resume",
};

const char *continuation_mode_name(enum continuation_mode mode)
{
	return (size_t)mode < sizeof(mode_names) / sizeof(mode_names[0]) ? mode_names[mode] : "none";
}

void continuation_init(struct continuation *self)
{
	memset(self, 0, sizeof(*self));
}

static void drop_plan(struct continuation *self)
{
	free(self->kept);
	self->kept = NULL;
	json_decref(self->kept_thinking);
	self->kept_thinking = NULL;
	self->kept_len = 0;
	self->kept_chars = 0;
	self->mode = CONTINUATION_NONE;
	self->reason = NULL;
}

void continuation_release(struct continuation *self)
{
	drop_plan(self);
	free(self->pending);
	json_decref(self->messages);
	memset(self, 0, sizeof(*self));
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static size_t count_chars(const char *s, size_t n)
{
	size_t chars = 0;

	for (size_t i = 0; i < n; i++)
		chars += ((unsigned char)s[i] & 0xC0) != 0x80;
	return chars;
}

/* The text blocks of msg joined (a new string), or NULL with *why when
 * the message cannot be continued. */
static char *kept_text(const json_t *msg, size_t *len, const char **why)
{
	const json_t *block;
	size_t i, n = 0;
	char *out = NULL;

	json_array_foreach(json_object_get(msg, "content"), i, block) {
		const char *type = json_string_value(json_object_get(block, "type"));
		const json_t *t = json_object_get(block, "text");
		char *p;

		/* Thinking is no text to continue: a resume puts it back
		 * (thinking_blocks), a prefill or turn cannot continue it. */
		if (type != NULL && strcmp(type, "thinking") == 0)
			continue;
		if (type == NULL || strcmp(type, "text") != 0 || !json_is_string(t)) {
			*why = "a tool call was cut";
			free(out);
			return NULL;
		}
		p = realloc(out, n + json_string_length(t) + 1);
		if (p == NULL) {
			free(out);
			*why = NULL;
			return NULL;
		}
		out = p;
		memcpy(out + n, json_string_value(t), json_string_length(t));
		n += json_string_length(t);
		out[n] = '\0';
	}
	if (n == 0) {
		free(out);
		*why = "the cut came before any text";
		return NULL;
	}
	*len = n;
	return out;
}

/* Copies of the thinking blocks of msg, in order (a new array), or NULL
 * when it has none. */
static json_t *thinking_blocks(const json_t *msg)
{
	json_t *out = NULL;
	const json_t *block;
	size_t i;

	json_array_foreach(json_object_get(msg, "content"), i, block) {
		const char *type = json_string_value(json_object_get(block, "type"));

		if (type == NULL || strcmp(type, "thinking") != 0)
			continue;
		if (out == NULL && (out = json_array()) == NULL)
			return NULL;
		json_array_append_new(out, json_deep_copy(block));
	}
	return out;
}

enum continuation_mode continuation_plan(struct continuation *self, const json_t *cut,
					 enum provider_continue offered)
{
	const char *why = NULL;
	char *carried = self->carry ? self->kept : NULL;
	size_t carried_len = self->kept_len;

	if (carried != NULL)
		self->kept = NULL;
	self->carry = false;
	drop_plan(self);
	if (offered == PROVIDER_CONTINUE_NONE) {
		free(carried);
		return CONTINUATION_NONE;
	}
	self->kept = kept_text(cut, &self->kept_len, &why);
	if (self->tool_cut) {
		/* The message holds its text only; the call itself was cut. */
		free(self->kept);
		self->kept = NULL;
		why = "a tool call was cut";
	}
	self->tool_cut = false;
	/* A continuation that failed before its first byte leaves the answer
	 * where the one before it did. */
	if (self->kept == NULL && carried != NULL && why != NULL &&
	    strcmp(why, "a tool call was cut") != 0) {
		self->kept = carried;
		self->kept_len = carried_len;
		carried = NULL;
	}
	free(carried);
	if (self->kept == NULL) {
		if (why == NULL)
			return CONTINUATION_NONE;
		self->mode = CONTINUATION_REPLAY;
		self->reason = why;
		return self->mode;
	}
	self->kept_chars = count_chars(self->kept, self->kept_len);
	self->mode = offered == PROVIDER_CONTINUE_PREFILL ? CONTINUATION_PREFILL
		     : offered == PROVIDER_CONTINUE_RESUME ? CONTINUATION_RESUME
							    : CONTINUATION_TURN;
	if (self->mode == CONTINUATION_RESUME)
		self->kept_thinking = thinking_blocks(cut);
	return self->mode;
}

/* Case-insensitive search for needle in len bytes of s. */
static bool says(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle);

	for (size_t i = 0; s != NULL && i + n <= len; i++)
		if (strncasecmp(s + i, needle, n) == 0)
			return true;
	return false;
}

const char *continuation_refusal(const struct continuation *self,
				 const struct provider_result *r)
{
	const char *e = r->error_message;

	if (!self->active || r->stop != STOP_ERROR)
		return NULL;
	if (self->mode == CONTINUATION_RESUME && r->http_status >= 400 && r->http_status < 500 &&
	    r->http_status != 429)
		return "the resume id expired";
	if (self->mode == CONTINUATION_PREFILL && r->http_status == 400 &&
	    (says(e, e ? strlen(e) : 0, "prefill") ||
	     says(r->error_body, r->error_body_len, "prefill")))
		return "the provider refused the prefill";
	return NULL;
}

void continuation_refused(struct continuation *self, const char *reason)
{
	drop_plan(self);
	self->mode = CONTINUATION_REPLAY;
	self->reason = reason;
}

enum continuation_mode continuation_declined(struct continuation *self, const json_t *cut,
					     const char *why)
{
	/* What the cut itself rules out is said first. */
	if (continuation_plan(self, cut, PROVIDER_CONTINUE_TURN) == CONTINUATION_TURN)
		continuation_refused(self, why);
	return self->mode;
}

json_t *continuation_json(const struct continuation *self)
{
	json_t *o;

	if (self->mode == CONTINUATION_NONE)
		return NULL;
	o = json_pack("{s:s, s:I}", "mode", continuation_mode_name(self->mode), "keptChars",
		      (json_int_t)self->kept_chars);
	if (o != NULL && self->reason != NULL)
		json_object_set_new(o, "reason", json_string(self->reason));
	return o;
}

json_t *continuation_messages(const struct continuation *self, const json_t *messages)
{
	json_t *out, *assistant;
	size_t len = self->kept_len;

	if ((self->mode != CONTINUATION_TURN && self->mode != CONTINUATION_PREFILL) ||
	    !json_is_array(messages))
		return NULL;
	/* A prefill may not end in whitespace (Anthropic refuses it); the
	 * filter drops the whitespace the model then sends again. */
	if (self->mode == CONTINUATION_PREFILL)
		while (len > 0 && is_space((unsigned char)self->kept[len - 1]))
			len--;
	if (len == 0)
		return NULL;
	out = json_copy((json_t *)messages);
	assistant = json_pack("{s:s, s:[{s:s, s:s%}], s:s}", "role", "assistant", "content",
			      "type", "text", "text", self->kept, len, "stopReason", "stop");
	if (out == NULL || assistant == NULL || json_array_append_new(out, assistant) != 0)
		goto fail;
	if (self->mode == CONTINUATION_TURN &&
	    json_array_append_new(out, json_pack("{s:s, s:s}", "role", "user", "content",
						 CONTINUATION_INSTRUCTION)) != 0)
		goto fail;
	return out;
fail:
	json_decref(out);
	return NULL;
}

void continuation_begin(struct continuation *self)
{
	self->active = self->mode == CONTINUATION_TURN || self->mode == CONTINUATION_PREFILL ||
		       self->mode == CONTINUATION_RESUME;
	self->seeded = false;
	/* A resumed stream sends only what was not read: nothing to match. */
	self->decided = !self->active || self->mode == CONTINUATION_RESUME;
	self->pending_len = 0;
	self->dropped = 0;
	if (!self->active)
		drop_plan(self);
}

void continuation_end(struct continuation *self)
{
	self->active = false;
	self->decided = true;
	self->pending_len = 0;
	drop_plan(self);
}

/* Matches kept[start, kept_len) against the start of next, whitespace runs
 * against whitespace runs. Returns the bytes of next it covers, -1 on a
 * mismatch, -2 when next ends first, -3 when next ends at the kept text's
 * trailing whitespace (all of it matched, but more whitespace may follow). */
static long match_at(const char *kept, size_t start, size_t kept_len, const char *next,
		     size_t next_len, size_t *solid, size_t *words)
{
	size_t i = start, j = 0;

	*solid = 0;
	*words = 1;
	/* The model may open with whitespace of its own. */
	while (j < next_len && is_space((unsigned char)next[j]))
		j++;
	while (i < kept_len) {
		if (is_space((unsigned char)kept[i])) {
			while (i < kept_len && is_space((unsigned char)kept[i]))
				i++;
			if (i == kept_len) {
				/* Trailing: any whitespace, or none, follows; the
				 * kept text shows one run already. */
				while (j < next_len && is_space((unsigned char)next[j]))
					j++;
				if (j == next_len)
					return -3; /* whitespace may still come */
				break;
			}
			if (j == next_len)
				return -2;
			if (!is_space((unsigned char)next[j]))
				return -1;
			while (j < next_len && is_space((unsigned char)next[j]))
				j++;
			(*words)++;
			continue;
		}
		if (j == next_len)
			return -2;
		if (kept[i] != next[j])
			return -1;
		i++;
		j++;
		(*solid)++;
	}
	return (long)j;
}

/* The whitespace at the start of next that the kept text already ends
 * with (-1: next is all whitespace so far). */
static long shown_space(const char *kept, size_t kept_len, const char *next, size_t next_len,
			bool final)
{
	size_t j = 0;

	if (kept_len == 0 || !is_space((unsigned char)kept[kept_len - 1]))
		return 0;
	while (j < next_len && is_space((unsigned char)next[j]))
		j++;
	return j == next_len && !final ? -1 : (long)j;
}

/* continuation_overlap(), with whole_only: only a repeat of all of the
 * kept text counts. */
static long overlap(const char *kept, size_t kept_len, const char *next, size_t next_len,
		    bool final, bool whole_only)
{
	size_t from = kept_len > CONTINUATION_WINDOW ? kept_len - CONTINUATION_WINDOW : 0;
	size_t to = whole_only ? (from == 0 ? 1 : 0) : kept_len;
	bool mid_word = kept_len > 0 && !is_space((unsigned char)kept[kept_len - 1]);
	/* A model restarting the word the cut split does not open with a
	 * space. */
	bool restart = mid_word && next_len > 0 && !is_space((unsigned char)next[0]);

	if (next_len > PENDING_MAX)
		final = true;
	/* Longest first: the first candidate that matches whole wins, unless
	 * a longer one could still match when more text comes. */
	for (size_t s = from; s < to && s < kept_len; s++) {
		size_t solid, words;
		long r;

		if (is_space((unsigned char)kept[s]) || (s > 0 && !is_space((unsigned char)kept[s - 1])))
			continue;
		r = match_at(kept, s, kept_len, next, next_len, &solid, &words);
		if (r == -3 && !final)
			return -1;
		if (r == -3)
			r = (long)next_len;
		if (r == -2 && !final)
			return -1;
		if (r < 0)
			continue;
		if (!(words >= 2 && solid >= CONTINUATION_MIN_REPEAT) && solid < CONTINUATION_MIN_RUN &&
		    s != 0 && !(restart && kept_len - s == solid))
			continue;
		return r;
	}
	/* No repeat: only the whitespace the kept text already ends with. */
	return shown_space(kept, kept_len, next, next_len, final);
}

long continuation_overlap(const char *kept, size_t kept_len, const char *next, size_t next_len,
			  bool final)
{
	return overlap(kept, kept_len, next, next_len, final, false);
}

static int hold(struct continuation *self, const char *text, size_t len)
{
	if (len == 0)
		return 0;
	if (self->pending_len + len > self->pending_cap) {
		size_t cap = (self->pending_len + len) * 2;
		char *p = realloc(self->pending, cap);

		if (p == NULL)
			return -1;
		self->pending = p;
		self->pending_cap = cap;
	}
	memcpy(self->pending + self->pending_len, text, len);
	self->pending_len += len;
	return 0;
}

static void decide(struct continuation *self, bool final, continuation_emit_fn emit, void *ctx)
{
	/* After a prefill the model goes on from the text as its own: what
	 * it says is new, but for the whitespace the prefill could not end
	 * with, or all of the text again (a backend that ignored the prefill). */
	long drop = overlap(self->kept, self->kept_len, self->pending, self->pending_len, final,
			    self->mode == CONTINUATION_PREFILL);

	if (drop < 0)
		return;
	self->decided = true;
	self->dropped = (size_t)drop;
	if ((size_t)drop < self->pending_len)
		emit(ctx, self->pending + drop, self->pending_len - (size_t)drop);
	self->pending_len = 0;
}

void continuation_feed(struct continuation *self, const char *text, size_t len,
		       continuation_emit_fn emit, void *ctx)
{
	if (!self->active || self->decided) {
		emit(ctx, text, len);
		return;
	}
	if (hold(self, text, len) != 0) {
		/* Out of memory: shown as it came rather than lost. */
		LOG_ERROR("out of memory holding a continuation's text");
		self->decided = true;
		emit(ctx, self->pending, self->pending_len);
		self->pending_len = 0;
		emit(ctx, text, len);
		return;
	}
	decide(self, false, emit, ctx);
}

void continuation_flush(struct continuation *self, continuation_emit_fn emit, void *ctx)
{
	if (!self->active || self->decided)
		return;
	decide(self, true, emit, ctx);
}

/* ---- the chain's hooks ------------------------------------------------------ */

static const enum provider_continue to_provider[] = {
	[CONTINUATION_NONE] = PROVIDER_CONTINUE_NONE,
	[CONTINUATION_REPLAY] = PROVIDER_CONTINUE_NONE,
	[CONTINUATION_TURN] = PROVIDER_CONTINUE_TURN,
	[CONTINUATION_PREFILL] = PROVIDER_CONTINUE_PREFILL,
	[CONTINUATION_RESUME] = PROVIDER_CONTINUE_RESUME,
};

const json_t *continuation_attempt(struct continuation *self, struct attempt_ctx *actx,
				   const json_t *messages, const char *setting)
{
	snprintf(self->setting, sizeof(self->setting), "%s", setting ? setting : "");
	if (actx->attempt == 0) {
		self->carry = false;
		self->refusal = NULL;
		continuation_end(self);
	}
	continuation_begin(self);
	json_decref(self->messages);
	self->messages = continuation_messages(self, messages);
	actx->continuation = to_provider[self->mode];
	actx->continue_setting = self->setting[0] != '\0' ? self->setting : NULL;
	return self->messages != NULL ? self->messages : messages;
}

static void to_reply(void *ctx, const char *text, size_t len)
{
	assistant_text_delta(ctx, text, len);
}

void continuation_text_start(struct continuation *self, struct assistant *reply)
{
	assistant_text_start(reply);
	if (self->active && !self->seeded) {
		assistant_text_seed(reply, self->kept, self->kept_len);
		self->seeded = true;
	}
}

void continuation_text_delta(struct continuation *self, struct assistant *reply,
			     const char *text, size_t len)
{
	continuation_feed(self, text, len, to_reply, reply);
}

void continuation_text_end(struct continuation *self, struct assistant *reply)
{
	continuation_flush(self, to_reply, reply);
	assistant_text_end(reply);
}

bool continuation_finish(struct continuation *self, struct assistant *reply,
			 const struct provider_result *r)
{
	self->refusal = continuation_refusal(self, r);
	self->tool_cut = r->tool_call_begun;
	/* An attempt stopped by the chain (a stall) has not closed its block:
	 * what the filter holds still goes into the message. */
	continuation_flush(self, to_reply, reply);
	if (self->active && !self->seeded && assistant_is_open(reply)) {
		continuation_text_start(self, reply);
		assistant_text_end(reply);
	}
	if (self->active && self->kept_thinking != NULL && assistant_is_open(reply))
		assistant_blocks_prepend(reply, self->kept_thinking);
	if (self->active && !self->seeded && self->refusal == NULL) {
		self->carry = true;
		self->active = false;
		self->decided = true;
		self->pending_len = 0;
	} else {
		continuation_end(self);
	}
	return self->refusal != NULL;
}

void continuation_announce(struct continuation *self, json_t *ev, struct provider *p,
			   const char *model, const json_t *msg)
{
	enum provider_continue offered = PROVIDER_CONTINUE_NONE;
	const char *why = NULL;
	json_t *j;

	if (p->ops->continuation != NULL)
		offered = p->ops->continuation(p, model,
					       self->setting[0] != '\0' ? self->setting : "lossless",
					       &why);
	if (self->refusal != NULL)
		continuation_refused(self, self->refusal);
	else if (offered == PROVIDER_CONTINUE_NONE && why != NULL)
		continuation_declined(self, msg, why);
	else
		continuation_plan(self, msg, offered);
	self->refusal = NULL;
	j = continuation_json(self);
	if (ev != NULL && j != NULL)
		json_object_set_new(ev, "continuation", j);
	else
		json_decref(j);
}

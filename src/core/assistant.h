/* assistant — the assistant message of one attempt, as it streams.
 *
 * It holds the partial message (pi's shape: role, content blocks, api,
 * provider, model, usage, stopReason, timestamp), the open block's text so
 * far, and says each step as an event: message_start when the attempt first
 * reports, message_update for text_start / text_delta / text_end and
 * thinking_start / thinking_delta / thinking_end, and message_end when it is
 * closed. Blocks follow each other in the order they stream (thinking, text,
 * thinking again, ...), one open at a time: a text block {type:"text",
 * text}, a thinking block {type:"thinking", thinking, thinkingSignature?,
 * redacted?} (pi's ThinkingContent). The open block's text is kept in one
 * growing buffer and put into the block only when someone will read it, so
 * a long answer is not copied per chunk. With rpc.messageUpdates "delta"
 * and an output buffer, each text_delta and thinking_delta is written as
 * JSON text straight into that buffer (the per-chunk hot path). */
#ifndef RETRYD_ASSISTANT_H
#define RETRYD_ASSISTANT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/jsontext.h"

struct assistant_output {
	/* event: takes ownership (never NULL). */
	void (*emit)(void *ctx, json_t *event);
	/* Optional (both or neither): the buffer the next output line is
	 * appended to (borrowed, NULL when the output is gone), and the call
	 * that sends what was appended. */
	struct jsontext_buf *(*line_buf)(void *ctx);
	void (*line_done)(void *ctx);
	void *ctx;
};

struct assistant {
	struct assistant_output out;
	bool delta_updates;      /* rpc.messageUpdates "delta": no partial in updates */
	json_t *partial;         /* owned: the open message, or NULL */
	struct jsontext_buf text; /* owned: the open (or last) block's text so far */
	size_t text_idx;         /* contentIndex of that block */
	bool thinking;           /* that block is a thinking block ("thinking", not "text") */
	bool text_utf8;          /* every piece was valid UTF-8 (so is their sum) */
	bool text_synced;        /* the block's text member already holds the text */
};

/* What a redacted thinking block shows as its text (pi's placeholder). */
#define ASSISTANT_REDACTED_THINKING "[Reasoning redacted]"

/* out: borrowed (copied). */
void assistant_init(struct assistant *self, const struct assistant_output *out);
void assistant_release(struct assistant *self);

bool assistant_is_open(const struct assistant *self);
/* The open message has a block (text, thinking), streamed or streaming. */
bool assistant_has_content(const struct assistant *self);
/* Opens the message and emits message_start, unless it is open already.
 * Strings: borrowed (copied). */
void assistant_open(struct assistant *self, const char *api, const char *provider,
		    const char *model, int64_t timestamp_ms);
/* A new text block (the message must be open). */
void assistant_text_start(struct assistant *self);
/* text: borrowed, len bytes. Ignored while no message is open. */
void assistant_text_delta(struct assistant *self, const char *text, size_t len);
/* Text that belongs to the open text block but was shown before (a cut
 * answer this attempt continues): kept in the block and the message, sent
 * in no text_delta. text: borrowed, len bytes. Ignored while no message is
 * open. */
void assistant_text_seed(struct assistant *self, const char *text, size_t len);
/* Ignored while no message is open. */
void assistant_text_end(struct assistant *self);
/* Whole blocks shown before (a resumed answer's thinking), put at the
 * front of the open message's content, sent in no event: message_end
 * holds them. Call it once streaming is over (the streamed blocks'
 * indices stay as they were sent). blocks: borrowed (copied). Ignored
 * while no message is open. */
void assistant_blocks_prepend(struct assistant *self, const json_t *blocks);
/* A new thinking block (the message must be open). */
void assistant_thinking_start(struct assistant *self);
/* text: borrowed, len bytes. Ignored while no message is open. */
void assistant_thinking_delta(struct assistant *self, const char *text, size_t len);
/* Ends the thinking block: signature (borrowed, len bytes; NULL: none)
 * becomes its thinkingSignature, redacted marks it (an encrypted block: its
 * text, when none streamed, is ASSISTANT_REDACTED_THINKING). Ignored while
 * no message is open. */
void assistant_thinking_end(struct assistant *self, const char *signature, size_t len,
			    bool redacted);
/* A message's token counts, as pi's usage holds them (input, output,
 * cacheRead, cacheWrite, totalTokens; see provider_result). total 0: the
 * sum of the four. */
struct assistant_usage {
	int64_t input;
	int64_t output;
	int64_t cache_read;
	int64_t cache_write;
	int64_t total;
};

/* Closes the open message: stopReason, errorMessage (borrowed; NULL leaves
 * it out), usage (borrowed; NULL: all 0; each count clamped to [0,
 * NUMBER_MAX], totalTokens the given total or else the saturating sum);
 * emits message_end, with "retrySkipped": retry_skipped (borrowed; NULL
 * leaves it out) beside the message when a retryable failure is not retried
 * ("disabled": retries are off). Returns the message (new reference). */
json_t *assistant_close(struct assistant *self, const char *stop_reason, const char *error,
			const struct assistant_usage *usage, const char *retry_skipped);

/* get_last_assistant_text's answer for messages (borrowed): {"text": the
 * text blocks of the last assistant message joined, or null}. New reference. */
json_t *assistant_last_text(const json_t *messages);

#endif

/* api — what the LLM wire formats retryd speaks have in common, and the
 * table each format fills (api_openai.h: "openai-completions",
 * api_anthropic.h: "anthropic-messages"; api_formats.h finds one by name).
 *
 * Pure (no I/O): request bodies from retryd's pi-shaped context, a stream
 * decoder that turns SSE events into provider_sink calls and a
 * provider_result, and pi-style text for HTTP error responses. The HTTP
 * provider moves the bytes; everything it must know about the formats is
 * here and in the format tables, so tests feed strings.
 *
 * This module knows no format by name: the decoder calls the format's
 * functions through its table. The format modules use the helpers at the
 * end of this header and know nothing of each other. */
#ifndef RETRYD_API_H
#define RETRYD_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider/http/jsonscan.h"
#include "provider/http/sse.h"
#include "provider/provider.h"

/* Error texts taken from the wire are cut to this many bytes. */
#define API_TEXT_MAX 300
#define API_ERROR_MAX 512
/* The longest thinking signature held for a block that is still open
 * (Gemini's thoughtSignature; a longer one is dropped, and the block goes
 * back unsigned, as text). */
#define API_SIGNATURE_MAX 16384

/* The attempt succeeds only when the format's terminal marker arrived;
 * otherwise it fails with this text, which the classifier retries. */
#define API_TRUNCATED "connection error: stream ended before completion"

struct api_stream;

/* What one request is built from. All borrowed. */
struct api_request {
	const json_t *messages;     /* the conversation (see api_messages) */
	const char *model;          /* the model id */
	int64_t max_tokens;         /* the model's maxTokens, or 0: the format's default */
	const char *thinking_level; /* pi's level ("off" ... "xhigh"); NULL: "off" */
	bool reasoning;             /* the model declares reasoning: true */
	const json_t *options;      /* the provider's settings object, or NULL */
	/* Responses: run it in background mode (stored, so a cut stream can be
	 * resumed from its last sequence number). */
	bool background;
};

/* What a format's quick reader took from one chunk, read in place without
 * jansson (see jsonscan.h). */
struct api_quick {
	const char *content;  /* the delta's text, into the data or content_buf;
			       * may hold NUL; or NULL */
	size_t content_len;
	const char *reason;   /* a finish reason, NUL-terminated, or NULL */
	size_t reason_len;
	bool has_seq;         /* the event's sequence_number (Responses), in seq */
	int64_t seq;
	char reason_buf[64];
	char content_buf[JSONSCAN_SCRATCH];
};

/* One wire format. The tables are constants of the format modules. */
struct api_format {
	const char *name;           /* pi's api name: "openai-completions" */
	const char *path;           /* appended to the provider's base URL: "/chat/completions" */
	const char *key_header;     /* the header that carries the API key: "Authorization" */
	const char *key_prefix;     /* before the key in it: "Bearer ", or "" */
	const char *fixed_header;   /* a "Name: value" line every request carries, or NULL */

	/* The request body, a new reference (NULL when messages is not an
	 * array, model is NULL or memory runs out); see the format's header
	 * for its shape and api_messages() for what is sent. */
	json_t *(*request)(const struct api_request *req);
	/* Optional (NULL: base_url + path): the request URL when the format
	 * puts more in it (the model, an api-version). Writes it to out and
	 * returns 0, or -1 when it does not fit. */
	int (*url)(const struct api_request *req, const char *base_url, char *out, size_t outlen);

	/* The hot path: the everyday chunk (a text delta) read in place. Returns
	 * 1 and fills q, or 0 for anything else (valid or not), which then goes
	 * to event_tree. Pure. Both paths must end in the same state and sink
	 * calls (tests/unit/check_jsonscan.c and the jsonscan fuzz target run
	 * them side by side). */
	int (*quick)(const struct sse_event *ev, struct api_quick *q);
	/* Any event, read with jansson. Returns 0, or -1 when the attempt has
	 * failed. */
	int (*event_tree)(struct api_stream *self, const struct sse_event *ev);
	/* A finish reason that quick read (q->reason): sets the stop reason and
	 * completes the answer. NULL when quick never reads one. */
	void (*finish)(struct api_stream *self, const char *reason);
};

/* The decoder for one response body (one attempt).
 *
 * Calls on the sink: start() once, at the first decoded event; text_start()
 * at the first non-empty text delta, text_delta() for each, text_end() from
 * api_stream_end() when text was started. All text goes into one text
 * block. finish() is never called: the provider calls it with the result
 * api_stream_end() fills (after adding hint_ms if it has one).
 *
 * The attempt succeeds only when the format's terminal marker arrived —
 * OpenAI: a choice with a finish_reason, or `data: [DONE]`; Anthropic:
 * message_stop. Otherwise it fails with API_TRUNCATED. The first failure
 * wins; once the terminal marker is in, later failures are ignored (the
 * answer is whole). */
struct api_stream {
	const struct api_format *format;  /* borrowed (a constant table) */
	struct provider_sink sink;  /* copied at init */
	bool started;               /* sink.start() called */
	bool text_open;             /* text_start() called, text_end() not yet */
	bool thinking_open;         /* thinking_start() called, thinking_end() not yet */
	/* The signature a thinking block gets when something else closes it
	 * (a text delta, the end): a format's static text, held_signature, or
	 * NULL. */
	const char *thinking_signature;
	/* A signature the stream sent for the open block before its end
	 * (api_stream_thinking_sign), NUL-terminated. */
	char held_signature[API_SIGNATURE_MAX];
	bool complete;              /* the terminal marker arrived */
	bool tool_call_begun;       /* a tool call's first piece arrived (provider_result's) */
	bool done;                  /* nothing more is expected: [DONE] / message_stop */
	bool failed;
	/* The failure is an error object the server sent inside the stream
	 * (set by a format that has a typed error body, e.g. Gemini's
	 * google.rpc.Status): the failing event's data is that body, which the
	 * provider hands to the classifier. */
	bool error_object;
	enum stop_reason stop;      /* from the finish/stop reason */
	/* The usage so far, as provider_result carries it; each in [0,
	 * NUMBER_MAX] (api_stream_count). */
	int64_t input_tokens;
	int64_t output_tokens;
	int64_t cache_read_tokens;
	int64_t cache_write_tokens;
	int64_t total_tokens;       /* the format's reported total, or 0 */
	bool bad_usage_logged;      /* a rejected count was logged */
	unsigned format_flags;      /* the format's own state, 0 at init */
	/* Responses: the response's id ("" until response.created) and the
	 * last sequence_number read (-1: none), where a resume starts after. */
	char response_id[96];
	int64_t last_seq;
	char error[API_ERROR_MAX];  /* the failure, or the text for stop == STOP_ERROR */
};

/* format: borrowed (kept); sink: borrowed (copied). */
void api_stream_init(struct api_stream *self, const struct api_format *format,
		     const struct provider_sink *sink);

/* Decodes one SSE event: the format's quick reader first, jansson for
 * anything it does not take. Returns 0, or -1 when the attempt has failed
 * (self->error says why: an in-stream error event, "malformed stream: ..."):
 * stop feeding and call api_stream_end(). Unknown events are ignored. */
int api_stream_event(struct api_stream *self, const struct sse_event *ev);

/* api_stream_event() as an sse_cb (ctx: the struct api_stream). Returns 1,
 * not -1, on failure, so sse_feed()'s result tells a decoder failure (1)
 * from an SSE framing failure (-1). */
int api_stream_sse_cb(void *ctx, const struct sse_event *ev);

/* Fails the attempt from outside (a transport error, an oversize SSE
 * event): message is copied, cut to fit. Ignored after the terminal marker
 * or an earlier failure. */
void api_stream_fail(struct api_stream *self, const char *message);

/* True once nothing more is expected ([DONE] / message_stop) or the
 * attempt has failed: the provider may stop reading and end it. */
bool api_stream_done(const struct api_stream *self);

/* The end of the body (or of the attempt): closes an open text block
 * (text_end) and fills *out — stop, error_message (borrowed from self, valid
 * until self is initialised again), the token counts; hint_ms is -1. */
void api_stream_end(struct api_stream *self, struct provider_result *out);

/* pi-style text for an HTTP error response: "<status> <message>", the
 * message taken from a JSON body's error.message (OpenAI {"error":{"message"}},
 * Anthropic {"type":"error","error":{"type","message"}}; also {"error":"..."}
 * and {"message":"..."}) or a short plain-text body, else the standard reason
 * phrase ("503 Service Unavailable", "429 Too Many Requests"). Body text is
 * cut to API_TEXT_MAX bytes, control characters become spaces, and anything
 * shaped like an API key is masked. body: borrowed, need not be
 * NUL-terminated. Returns out. */
const char *api_http_error(long status, const char *body, size_t len, char *out, size_t outlen);

/* ---- for the format modules ------------------------------------------------ */

/* The image part of a user message in a format's shape; mime and data are
 * non-empty strings (borrowed). Returns a new reference, or NULL when memory
 * runs out. */
typedef json_t *(*api_image_fn)(const json_t *mime, const json_t *data);

/* retryd's context as the wire's message list, a new reference (NULL when
 * messages is not an array or memory runs out). messages: borrowed — user
 * messages {role:"user", content: string | [{type:"text",text} |
 * {type:"image",data,mimeType}]}, assistant messages {role:"assistant",
 * content:[{type:"text",text}], stopReason}. Each becomes {role, content:
 * [{type:"text",text} | image(mime, data)]}, images only for users. Like
 * pi, assistant messages that ended in "error" or "aborted" are not sent
 * (a retried attempt continues from the last good state), empty text parts
 * are dropped, and a message left with no content is skipped; other roles
 * and content types are ignored. */
json_t *api_messages(const json_t *messages, api_image_fn image);

/* A thinking block of an assistant message ({type:"thinking", thinking,
 * thinkingSignature?, redacted?}, borrowed) in a format's shape: appends
 * what the format sends for it (nothing, or one or more parts) to parts.
 * same: the message came from the model and API of this request, so its
 * signature means something to the provider (pi's transformMessages: only
 * then does a block go back as thinking). Returns 0, or -1 when memory runs
 * out. */
typedef int (*api_thinking_fn)(json_t *parts, const json_t *block, bool same);

/* The request's model entry in the provider's settings (options.models[]
 * whose id is req->model; borrowed), or NULL when it is not listed or is a
 * bare id. */
const json_t *api_model_entry(const struct api_request *req);

/* True when the assistant message msg (borrowed) was answered by model over
 * the API named api (pi's isSameProviderAndModel; the provider's own name is
 * not known to a format). */
bool api_same_model(const json_t *msg, const char *api, const char *model);

/* api_messages(), with the thinking blocks of assistant messages given to
 * thinking in their place among the text parts (api_messages() drops
 * them); api and model (borrowed) are the request's, for `same`. */
json_t *api_messages_thinking(const json_t *messages, api_image_fn image,
			      api_thinking_fn thinking, const char *api, const char *model);

/* One message's parts in a format's shape, for api_messages_map(): msg
 * (borrowed) is a user message (user true) or an assistant message that
 * did not fail; ctx as given there. Returns a new array (empty: the message
 * is left out), or NULL when memory runs out. */
typedef json_t *(*api_parts_fn)(const json_t *msg, bool user, void *ctx);

/* The walk behind api_messages(), for a format with its own parts: a new
 * reference (NULL when messages is not an array or memory runs out),
 * [{"role": "user" or assistant_role, parts_key: parts(msg)}] for the user
 * messages and the assistant messages that did not end in "error" or
 * "aborted" (like pi, a retried attempt continues from the last good
 * state), leaving out messages with no parts; other roles are skipped.
 * assistant_role, parts_key: borrowed. */
json_t *api_messages_map(const json_t *messages, const char *assistant_role,
			 const char *parts_key, api_parts_fn parts, void *ctx);

/* An assistant message (borrowed) that ended in "error" or "aborted": pi
 * does not send it again. */
bool api_assistant_failed(const json_t *msg);

/* Wire text for an error message: control characters → spaces, key-like
 * words masked, cut at a UTF-8 boundary to at most API_TEXT_MAX bytes and
 * outlen - 1. Returns the bytes written (NUL-terminated). */
size_t api_clean_text(const char *s, size_t len, char *out, size_t outlen);
/* A JSON value for an error text: a string as is, else compact JSON. Fills
 * out via api_clean_text. v: borrowed. */
void api_json_text(const json_t *v, char *out, size_t outlen);

/* Records a failure (first one wins; ignored once complete). Returns -1. */
int api_stream_failf(struct api_stream *self, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A data line that is not a JSON object: fails with "malformed stream: ...".
 * Returns a new reference or NULL (after failing the stream). */
json_t *api_stream_parse(struct api_stream *self, const struct sse_event *ev);
/* sink.start() once. */
void api_stream_begin(struct api_stream *self);
/* Text deltas, with start/text_start as needed (an open thinking block is
 * closed first, unsigned); empty ones are dropped. */
void api_stream_text(struct api_stream *self, const char *text, size_t len);
/* Thinking deltas, with start/thinking_start as needed (an open text block
 * is closed first); empty ones are dropped. Nothing reaches a sink without
 * thinking callbacks. */
void api_stream_thinking(struct api_stream *self, const char *text, size_t len);
/* Opens a thinking block (start/thinking_start as needed, an open text
 * block closed first) before any text arrives: a reasoning item that may
 * stay empty. Nothing when one is open or the sink has no thinking. */
void api_stream_thinking_start(struct api_stream *self);
/* Holds sig (borrowed, len bytes; the latest one wins) as the open
 * thinking block's signature, given when the block closes; the block stays
 * open. Ignored while no thinking block is open. */
void api_stream_thinking_sign(struct api_stream *self, const char *sig, size_t len);
/* Closes the open thinking block with its signature (borrowed, len bytes;
 * NULL: none). With redacted, opens one first when none is open (an
 * encrypted block has no text). */
void api_stream_thinking_end(struct api_stream *self, const char *signature, size_t len,
			     bool redacted);
/* One count of a usage report (v borrowed; NULL when absent) through
 * number_from_json(): a count above NUMBER_MAX is saturated; a negative,
 * fractional or non-numeric one is ignored like an absent one, logged at
 * debug once a stream. Returns true and sets *count when v is taken, else
 * false with *count as it was. */
bool api_stream_count(struct api_stream *self, const json_t *v, int64_t *count);
/* A usage report's input and output counts (borrowed; NULL when absent),
 * each through api_stream_count(): an ignored one keeps its earlier value
 * (0 at first). */
void api_stream_usage(struct api_stream *self, const json_t *input, const json_t *output);

/* A format's quick reader starts with this: q emptied, js (the reader's
 * own) set on data[0..len) and inside its top-level object. Returns 0, or
 * JSONSCAN_BAIL when data is not an object (the reader returns 0). */
int api_quick_open(struct jsonscan *js, const char *data, size_t len, struct api_quick *q);
/* ... and ends with this: rc is the loop's last jsonscan_key() result; the
 * object must have closed with nothing after it. The strings q points to
 * in js's scratch are copied into q (the scanner is dropped when the reader
 * returns). Returns 1 (q holds the chunk), or 0 (for jansson). */
int api_quick_close(struct jsonscan *js, int rc, struct api_quick *q);

#endif

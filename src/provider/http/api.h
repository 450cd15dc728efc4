/* api — the two LLM wire formats retryd speaks: OpenAI chat completions
 * ("openai-completions") and Anthropic messages ("anthropic-messages").
 *
 * Pure (no I/O): request bodies from retryd's pi-shaped context, a stream
 * decoder that turns SSE events into provider_sink calls and a
 * provider_result, and pi-style text for HTTP error responses. The HTTP
 * provider moves the bytes; everything it must know about the formats is
 * here, so tests feed strings.
 *
 * Shared parts (the decoder's life cycle, error texts) live in
 * api_openai.c; api_anthropic.c holds the Anthropic specifics. */
#ifndef RETRYD_API_H
#define RETRYD_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider/http/jsonscan.h"
#include "provider/provider.h"
#include "provider/http/sse.h"

enum api_kind {
	API_OPENAI,     /* pi's api "openai-completions" */
	API_ANTHROPIC,  /* pi's api "anthropic-messages" */
};

/* Error texts taken from the wire are cut to this many bytes. */
#define API_TEXT_MAX 300
#define API_ERROR_MAX 512

/* "openai-completions" / "anthropic-messages" → kind. Returns 0, or -1 for
 * any other name. */
int api_kind_from_name(const char *name, enum api_kind *out);

/* Request bodies, new references (NULL when messages is not an array or
 * memory runs out). messages: borrowed, retryd's context — user messages
 * {role:"user", content: string | [{type:"text",text} | {type:"image",data,
 * mimeType}]}, assistant messages {role:"assistant", content:[{type:"text",
 * text}], stopReason}. Like pi, assistant messages that ended in "error" or
 * "aborted" are not sent (a retried attempt continues from the last good
 * state), empty text parts are dropped, and a message left with no content
 * is skipped; other roles and content types are ignored. Both bodies ask
 * for a stream; no system prompt.
 *
 * OpenAI: {model, messages, stream:true, stream_options:{include_usage:true},
 * max_completion_tokens (only when max_tokens > 0)}; an image becomes
 * {type:"image_url", image_url:{url:"data:<mimeType>;base64,<data>"}}. */
json_t *api_openai_request(const json_t *messages, const char *model, int64_t max_tokens);
/* Anthropic: {model, max_tokens, messages, stream:true}; the API requires
 * max_tokens, so max_tokens <= 0 sends API_ANTHROPIC_DEFAULT_MAX_TOKENS; an
 * image becomes {type:"image", source:{type:"base64", media_type, data}}. */
#define API_ANTHROPIC_DEFAULT_MAX_TOKENS 8192
json_t *api_anthropic_request(const json_t *messages, const char *model, int64_t max_tokens);
/* Either of the two by kind. */
json_t *api_request(enum api_kind kind, const json_t *messages, const char *model, int64_t max_tokens);

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
 * message_stop. Otherwise it fails with API_TRUNCATED, which the classifier
 * retries. The first failure wins; once the terminal marker is in, later
 * failures are ignored (the answer is whole). */
#define API_TRUNCATED "connection error: stream ended before completion"

struct api_stream {
	enum api_kind kind;
	struct provider_sink sink;  /* copied at init */
	bool started;               /* sink.start() called */
	bool text_open;             /* text_start() called, text_end() not yet */
	bool complete;              /* the terminal marker arrived */
	bool done;                  /* nothing more is expected: [DONE] / message_stop */
	bool failed;
	enum stop_reason stop;      /* from the finish/stop reason */
	int64_t input_tokens;
	int64_t output_tokens;
	char error[API_ERROR_MAX];  /* the failure, or the text for stop == STOP_ERROR */
};

/* sink: borrowed (copied). */
void api_stream_init(struct api_stream *self, enum api_kind kind, const struct provider_sink *sink);

/* Decodes one SSE event. Returns 0, or -1 when the attempt has failed
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
 * until self is initialised again), tokens; hint_ms is -1. */
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

/* Internal to the api_* files. The _tree forms read every event with
 * jansson; the plain ones read the everyday text delta in place first
 * (api_openai_quick, api_anthropic_quick) and give anything else to the
 * _tree form. Both must end in the same state and sink calls (the unit
 * tests and the jsonscan fuzz target run them side by side). */
int api_openai_event(struct api_stream *self, const struct sse_event *ev);
int api_openai_event_tree(struct api_stream *self, const struct sse_event *ev);
int api_anthropic_event(struct api_stream *self, const struct sse_event *ev);
int api_anthropic_event_tree(struct api_stream *self, const struct sse_event *ev);

/* What api_openai_quick() or api_anthropic_quick() read of one chunk. */
struct api_quick {
	const char *content;  /* the delta's text (OpenAI: the first choice's),
			       * into the data or content_buf; may hold NUL; or NULL */
	size_t content_len;
	const char *reason;   /* OpenAI's finish_reason, NUL-terminated, or NULL */
	size_t reason_len;
	char reason_buf[64];
	char content_buf[JSONSCAN_SCRATCH];
};

/* The everyday chunk read in place, without jansson (see jsonscan.h):
 * {"choices":[{"index":0,"delta":{"content":"..."},"finish_reason":null}]}
 * plus any other members, with "usage" and "error" absent or null and one
 * choice at most. Returns 1 and fills q when data is such a chunk, 0 when
 * it is anything else (valid or not), which the caller gives to jansson.
 * Pure. */
int api_openai_quick(const char *data, size_t len, struct api_quick *q);

/* The same for Anthropic's content_block_delta:
 * {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"..."}}
 * (q->content is the text when the delta's type is text_delta, else NULL;
 * q->reason is not used). Returns 1 or 0 as above. Pure. */
int api_anthropic_quick(const char *data, size_t len, struct api_quick *q);

/* The strings q points to in js's scratch, copied into q (the scanner is
 * dropped when the reader returns). Returns 1, or 0 when they do not fit. */
int api_quick_keep(const struct jsonscan *js, struct api_quick *q);

/* Wire text for an error message: control characters → spaces, key-like
 * words masked, cut at a UTF-8 boundary to at most API_TEXT_MAX bytes and
 * outlen - 1. Returns the bytes written (NUL-terminated). */
size_t api_clean_text(const char *s, size_t len, char *out, size_t outlen);
/* Records a failure (first one wins; ignored once complete). Returns -1. */
int api_stream_failf(struct api_stream *self, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A data line that is not a JSON object: fails with "malformed stream: ...".
 * Returns a new reference or NULL (after failing the stream). */
json_t *api_stream_parse(struct api_stream *self, const struct sse_event *ev);
/* Text deltas, with start/text_start as needed. */
void api_stream_text(struct api_stream *self, const char *text, size_t len);
/* pi drops assistant turns that ended in "error" or "aborted" from what it
 * sends: the retry goes on from the last good state. */
bool api_assistant_failed(const json_t *msg);
/* sink.start() once. */
void api_stream_begin(struct api_stream *self);
/* A JSON value for an error text: a string as is, else compact JSON. Fills
 * out via api_clean_text. */
void api_json_text(const json_t *v, char *out, size_t outlen);

#endif

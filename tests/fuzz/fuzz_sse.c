/* Fuzz target "sse": a streamed HTTP answer, as the HTTP provider sees it —
 * the Server-Sent Events framer (provider/http/sse.c) feeding the stream
 * decoder (provider/http/api.c) with the OpenAI, Anthropic or Gemini
 * format, and the same bytes read as an HTTP error body (api_http_error).
 *
 * Input: byte 0: bits 0-6 pick how the body is cut into reads (0: all at
 * once, else pieces of that many bytes, each copied to a buffer of its exact
 * size), bit 7 the Gemini format (over byte 1's API bits);
 * byte 1: bits 0 and 7 the API (0 OpenAI, 1 Anthropic, 0x80 OpenAI
 * Responses, 0x81 Azure's), bit 1 a small per-event limit (256 bytes, to
 * reach the oversize path), bits 2-6 the HTTP status for the error-body
 * reading; the rest is the body.
 *
 * Invariants: the sink sees start → text_start → text_delta* → text_end in
 * that order, each once except the deltas (a text block again only after a
 * thinking block); deltas, thinking ones too, are non-empty UTF-8 (the
 * session builds JSON strings from them); finish() is never called by the
 * decoder; the result's error text is UTF-8, NUL-terminated, and present
 * exactly when the stop reason is "error". */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "provider/http/api.h"
#include "provider/http/api_anthropic.h"
#include "provider/http/api_gemini.h"
#include "provider/http/api_openai.h"
#include "provider/http/api_responses.h"
#include "provider/http/sse.h"
#include "support/recsink.h"

static void check_text(const char *s, size_t cap, const char *what)
{
	size_t n = strnlen(s, cap);

	FUZZ_CHECK(n < cap, "%s is not NUL-terminated within %zu bytes", what, cap);
	FUZZ_CHECK(fuzz_utf8_valid(s, n), "%s is not UTF-8: %s", what, s);
}

static void decode(const struct api_format *format, size_t max_event, size_t piece, const char *body,
		   size_t len)
{
	struct recsink t;
	struct provider_sink sink = recsink_sink(&t);
	struct api_stream st;
	struct sse_parser p;
	struct provider_result r;
	size_t at = 0;
	int rc = 0;

	recsink_init(&t);
	/* The session builds JSON strings from the deltas. */
	t.check_delta = fuzz_utf8_valid;
	api_stream_init(&st, format, &sink);
	sse_init(&p, max_event);
	/* As provider_http's on_data: stop at a failure or once the stream is done. */
	while (at < len && rc == 0 && !api_stream_done(&st)) {
		size_t n = piece == 0 || len - at < piece ? len - at : piece;
		char *copy = malloc(n);

		if (copy == NULL)
			break;
		memcpy(copy, body + at, n);
		rc = sse_feed(&p, copy, n, api_stream_sse_cb, &st);
		free(copy);
		at += n;
		if (rc == -1) {
			check_text(p.error, sizeof(p.error), "the SSE error");
			api_stream_fail(&st, p.error);
		}
	}
	api_stream_end(&st, &r);
	sse_release(&p);
	FUZZ_CHECK(t.misorder == NULL, "%s", t.misorder);
	FUZZ_CHECK(t.starts <= 1 && t.text_starts <= 1 + t.thinking_starts,
		   "more than one start(), or text_start() again without a thinking block between");
	FUZZ_CHECK(t.thinking_ends == t.thinking_starts, "an open thinking block was not closed");
	FUZZ_CHECK(t.text_ends == t.text_starts, "an open text block was not closed");
	FUZZ_CHECK(t.thinking_ends == t.thinking_starts, "an open thinking block was not closed");
	FUZZ_CHECK(t.bad_deltas == 0, "an empty text_delta() or one with invalid UTF-8");
	FUZZ_CHECK(t.finishes == 0, "the decoder called finish()");
	recsink_release(&t);
	FUZZ_CHECK(r.stop <= STOP_ABORTED, "stop reason %d", (int)r.stop);
	FUZZ_CHECK(r.stop != STOP_ABORTED, "the decoder reported an abort");
	FUZZ_CHECK((r.stop == STOP_ERROR) == (r.error_message != NULL),
		   "error text present iff stopReason is error (stop %d)", (int)r.stop);
	if (r.error_message != NULL)
		check_text(r.error_message, API_ERROR_MAX, "the error text");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[API_ERROR_MAX];
	const char *body;
	size_t len;
	long status;

	if (size < 2)
		return 0;
	body = (const char *)data + 2;
	len = size - 2;
	static const struct api_format *const formats[] = {
		&api_openai_format, &api_anthropic_format, &api_responses_format, &api_azure_responses_format,
	};

	decode((data[0] & 0x80) ? &api_gemini_format : formats[(data[1] & 1) | ((data[1] >> 6) & 2)],
	       (data[1] & 2) ? 256 : 1u << 20, data[0] & 0x7f, body, len);
	status = 400 + ((data[1] >> 2) & 0x1f) * 3;
	api_http_error(status, body, len, out, sizeof(out));
	check_text(out, sizeof(out), "the HTTP error text");
	return 0;
}

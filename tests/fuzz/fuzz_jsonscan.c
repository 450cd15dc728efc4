/* Fuzz target "jsonscan": the in-place chunk readers
 * (provider/http/jsonscan.c, each format's quick reader) against the jansson decoders they
 * stand in for.
 *
 * Input: byte 0: bit 0 the API (0 OpenAI, 1 Anthropic), bit 1 the SSE event
 * name "error" instead of "message", bit 2 the Gemini format and bit 7 the
 * OpenAI Responses format (each over bit 0, Gemini first); the rest is up
 * to 64 event payloads separated by LF.
 *
 * Invariants: the stream decoder with the in-place readers
 * (api_stream_event) and without them (the format's event_tree) make the same sink calls
 * with the same bytes and end in the same state (complete, done, failed,
 * stop reason, token counts, error text); whatever the scanner accepts as a
 * whole value, jansson accepts too. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "provider/http/api.h"
#include "provider/http/api_anthropic.h"
#include "provider/http/api_gemini.h"
#include "provider/http/api_openai.h"
#include "provider/http/api_responses.h"
#include "provider/http/jsonscan.h"
#include "support/recsink.h"

/* One path over the payloads: the decoder (which tries the format's quick
 * reader first) or the format's jansson reader alone; the log (l:
 * initialised here) ends with the decoder's state. */
static void run(const struct api_format *format, bool tree, const char *name,
		const char *const *data, const size_t *lens, size_t n, struct recsink *l)
{
	struct provider_sink sink = recsink_sink(l);
	struct api_stream st;
	char state[API_ERROR_MAX + 128];
	int len;

	recsink_init(l);
	api_stream_init(&st, format, &sink);
	for (size_t i = 0; i < n && !api_stream_done(&st); i++) {
		struct sse_event ev = { name, strlen(name), data[i], lens[i] };

		if (tree)
			format->event_tree(&st, &ev);
		else
			api_stream_event(&st, &ev);
	}
	FUZZ_CHECK(l->finishes == 0, "the decoder called finish()");
	len = snprintf(state, sizeof(state), "complete=%d done=%d failed=%d stop=%d in=%lld out=%lld error=%s",
		       st.complete, st.done, st.failed, (int)st.stop, (long long)st.input_tokens,
		       (long long)st.output_tokens, st.failed || st.stop == STOP_ERROR ? st.error : "");
	recsink_note(l, state, (size_t)len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *parts[64];
	size_t lens[64], n = 0;
	struct recsink quick, tree;
	const struct api_format *format;
	const char *name, *p, *end;

	if (size < 1)
		return 0;
	format = (data[0] & 4)      ? &api_gemini_format
		 : (data[0] & 0x80) ? &api_responses_format
		 : (data[0] & 1)    ? &api_anthropic_format
				    : &api_openai_format;
	name = (data[0] & 2) ? "error" : "message";
	p = (const char *)data + 1;
	end = (const char *)data + size;
	while (p <= end && n < 64) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end;

		parts[n] = p;
		lens[n++] = (size_t)(stop - p);
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	run(format, false, name, parts, lens, n, &quick);
	run(format, true, name, parts, lens, n, &tree);
	FUZZ_CHECK(quick.len == tree.len && memcmp(quick.log, tree.log, quick.len) == 0,
		   "in place and jansson differ:\n%.*s\n%.*s", (int)(quick.len > 600 ? 600 : quick.len),
		   quick.log, (int)(tree.len > 600 ? 600 : tree.len), tree.log);
	recsink_release(&quick);
	recsink_release(&tree);
	/* Whatever the scanner takes as one whole value, jansson takes too. */
	for (size_t i = 0; i < n; i++) {
		struct jsonscan js;

		jsonscan_init(&js, parts[i], lens[i]);
		if (jsonscan_skip(&js) == 0 && jsonscan_end(&js)) {
			json_t *v = json_loadb(parts[i], lens[i], JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

			FUZZ_CHECK(v != NULL, "the scanner accepted what jansson refuses: %.*s",
				   (int)(lens[i] > 300 ? 300 : lens[i]), parts[i]);
			json_decref(v);
		}
	}
	return 0;
}

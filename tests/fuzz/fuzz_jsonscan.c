/* Fuzz target "jsonscan": the in-place chunk readers (src/jsonscan.c,
 * api_openai_quick, api_anthropic_quick) against the jansson decoders they
 * stand in for.
 *
 * Input: byte 0: bit 0 the API (0 OpenAI, 1 Anthropic), bit 1 the SSE event
 * name "error" instead of "message"; the rest is up to 64 event payloads
 * separated by LF.
 *
 * Invariants: the stream decoder with the in-place readers
 * (api_*_event) and without them (api_*_event_tree) make the same sink calls
 * with the same bytes and end in the same state (complete, done, failed,
 * stop reason, token counts, error text); whatever the scanner accepts as a
 * whole value, jansson accepts too. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider/http/api.h"
#include "fuzz.h"
#include "provider/http/jsonscan.h"

struct log {
	char *text;
	size_t len, cap;
};

static void add(struct log *l, const char *s, size_t n)
{
	if (l->len + n + 2 > l->cap) {
		size_t cap = (l->len + n + 2) * 2;
		char *p = realloc(l->text, cap);

		FUZZ_CHECK(p != NULL, "out of memory");
		l->text = p;
		l->cap = cap;
	}
	memcpy(l->text + l->len, s, n);
	l->len += n;
	l->text[l->len++] = '|';
}

static void on_start(void *ctx)
{
	add(ctx, "start", 5);
}

static void on_text_start(void *ctx)
{
	add(ctx, "text_start", 10);
}

static void on_text_delta(void *ctx, const char *s, size_t n)
{
	add(ctx, "delta", 5);
	add(ctx, s, n);
}

static void on_text_end(void *ctx)
{
	add(ctx, "text_end", 8);
}

static void on_finish(void *ctx, const struct provider_result *r)
{
	(void)ctx;
	(void)r;
	FUZZ_CHECK(0, "the decoder called finish()");
}

static void run(enum api_kind kind, bool tree, const char *name, const char *const *data,
		const size_t *lens, size_t n, struct log *l)
{
	struct provider_sink sink = { on_start, on_text_start, on_text_delta, on_text_end,
				      on_finish, l, NULL };
	struct api_stream st;
	char state[API_ERROR_MAX + 128];
	int len;

	api_stream_init(&st, kind, &sink);
	for (size_t i = 0; i < n && !api_stream_done(&st); i++) {
		struct sse_event ev = { name, strlen(name), data[i], lens[i] };

		if (kind == API_OPENAI)
			tree ? api_openai_event_tree(&st, &ev) : api_openai_event(&st, &ev);
		else
			tree ? api_anthropic_event_tree(&st, &ev) : api_anthropic_event(&st, &ev);
	}
	len = snprintf(state, sizeof(state), "complete=%d done=%d failed=%d stop=%d in=%lld out=%lld error=%s",
		       st.complete, st.done, st.failed, (int)st.stop, (long long)st.input_tokens,
		       (long long)st.output_tokens, st.failed || st.stop == STOP_ERROR ? st.error : "");
	add(l, state, (size_t)len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *parts[64];
	size_t lens[64], n = 0;
	struct log quick = { 0 }, tree = { 0 };
	enum api_kind kind;
	const char *name, *p, *end;

	if (size < 1)
		return 0;
	kind = (data[0] & 1) ? API_ANTHROPIC : API_OPENAI;
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
	run(kind, false, name, parts, lens, n, &quick);
	run(kind, true, name, parts, lens, n, &tree);
	FUZZ_CHECK(quick.len == tree.len && memcmp(quick.text, tree.text, quick.len) == 0,
		   "in place and jansson differ:\n%.*s\n%.*s", (int)(quick.len > 600 ? 600 : quick.len),
		   quick.text, (int)(tree.len > 600 ? 600 : tree.len), tree.text);
	free(quick.text);
	free(tree.text);
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

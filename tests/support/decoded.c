#include "support/decoded.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider/http/sse.h"
#include "support/recsink.h"

struct decoded decoded_run(const struct api_format *format, const char *body, size_t len,
			   size_t split, size_t chunk, bool thinking)
{
	struct recsink r;
	struct provider_sink sink = recsink_sink(&r);
	struct api_stream st;
	struct sse_parser p;
	struct provider_result res;
	struct decoded o = { 0 };
	size_t at = 0;

	recsink_init(&r);
	if (!thinking) {
		sink.thinking_start = NULL;
		sink.thinking_delta = NULL;
		sink.thinking_end = NULL;
	}
	api_stream_init(&st, format, &sink);
	sse_init(&p, 1 << 20);
	if (chunk == 0)
		chunk = len ? len : 1;
	while (at < len && o.feed_rc == 0) {
		size_t want = at < split ? split - at : chunk;
		size_t n = len - at < want ? len - at : want;
		char *copy = malloc(n);

		if (copy == NULL)
			abort();
		memcpy(copy, body + at, n);
		o.feed_rc = sse_feed(&p, copy, n, api_stream_sse_cb, &st);
		free(copy);
		at += n;
	}
	o.error_object = st.error_object;
	api_stream_end(&st, &res);
	sse_release(&p);
	o.misorder = r.misorder;
	o.finishes = r.finishes;
	o.log = recsink_take_log(&r);
	o.stop = res.stop;
	o.tool_call_begun = res.tool_call_begun;
	o.has_error = res.error_message != NULL;
	if (res.error_message != NULL)
		snprintf(o.error, sizeof(o.error), "%s", res.error_message);
	o.hint_ms = res.hint_ms;
	o.input_tokens = res.input_tokens;
	o.output_tokens = res.output_tokens;
	o.cache_read_tokens = res.cache_read_tokens;
	o.cache_write_tokens = res.cache_write_tokens;
	o.total_tokens = res.total_tokens;
	recsink_release(&r);
	return o;
}

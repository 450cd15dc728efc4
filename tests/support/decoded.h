/* decoded — one SSE body through a format's stream decoder, for the unit
 * tests of the wire formats (one harness rather than one per format file).
 *
 * The body is fed as an HTTP read loop would: the first `split` bytes, then
 * `chunk` bytes at a time (0: all at once), each piece copied to a buffer of
 * its exact size so ASan sees an overread. The sink is a recsink. No Check
 * here (the fuzz targets link tests/support too): the caller asserts
 * `misorder` and `finishes`. Out of memory aborts. */
#ifndef RETRYD_TEST_DECODED_H
#define RETRYD_TEST_DECODED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider/http/api.h"

struct decoded {
	char *log;               /* owned: the recsink log (free it) */
	const char *misorder;    /* static text, or NULL */
	unsigned finishes;       /* sink finish() calls: the decoder must make none */
	enum stop_reason stop;
	bool has_error;
	char error[API_ERROR_MAX];
	bool error_object;       /* the failure was an error object in the stream */
	int64_t hint_ms, input_tokens, output_tokens;
	int64_t cache_read_tokens, cache_write_tokens, total_tokens;
	int feed_rc;             /* the first non-zero sse_feed result */
	bool tool_call_begun;    /* provider_result's */
};

/* format: borrowed; body: borrowed, len bytes. thinking false leaves the
 * sink's thinking callbacks out (the decoder must then drop thinking). */
struct decoded decoded_run(const struct api_format *format, const char *body, size_t len,
			   size_t split, size_t chunk, bool thinking);

#endif

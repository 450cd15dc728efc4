/* Fuzz target "secret": the one masker (src/base/secret.c), whole texts and
 * streams. Input: byte 0 picks how many of the registered keys are on (the
 * keys are fixed: a plain word key, keys that are prefixes of each other, a
 * key-shaped one); the rest is split at every 0xff byte into the pieces a
 * stream receives (the 0xff bytes themselves are dropped).
 *
 * Invariants: the stream's output, piece by piece, is exactly the whole
 * text masked at once; no registered key survives in either; a masked text
 * never grows; secret_copy into any size masks first and cuts after: its
 * output is a prefix of the whole text masked, NUL-terminated. */
#include <stdlib.h>
#include <string.h>

#include "base/secret.h"
#include "fuzz.h"

static const char *const keys[] = {
	"Quiet-Harbor-Lantern-Velvet", "abcdefgh12", "abcdefgh12345678", "sk-live-Zq8vK3nR7tW2yL5m",
};

static bool contains(const char *hay, size_t n, const char *needle, size_t k)
{
	for (size_t i = 0; k <= n && i <= n - k; i++)
		if (memcmp(hay + i, needle, k) == 0)
			return true;
	return false;
}

struct out {
	char *buf;
	size_t len, cap;
};

static void collect(void *ctx, const char *text, size_t len)
{
	struct out *o = ctx;

	FUZZ_CHECK(len > 0, "the stream emitted an empty piece");
	if (o->len + len + 1 > o->cap) {
		o->cap = (o->len + len + 1) * 2;
		o->buf = realloc(o->buf, o->cap);
		FUZZ_CHECK(o->buf != NULL, "out of memory");
	}
	memcpy(o->buf + o->len, text, len);
	o->len += len;
	o->buf[o->len] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool registered_all;
	struct secret_stream st;
	struct out o = { 0 };
	char *whole, *flat, small[64];
	size_t n = 0, wlen, start;

	if (size < 1)
		return 0;
	/* The registry is process-wide: register once, all of them. */
	if (!registered_all) {
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			FUZZ_CHECK(secret_register(keys[k]) == 0, "register");
		registered_all = true;
	}
	flat = malloc(size + 1);
	whole = malloc(size + 1);
	FUZZ_CHECK(flat != NULL && whole != NULL, "out of memory");
	for (size_t i = 1; i < size; i++)
		if (data[i] != 0xff)
			flat[n++] = (char)data[i];
	flat[n] = '\0';
	memcpy(whole, flat, n + 1);
	wlen = n;
	secret_mask(whole, &wlen);
	FUZZ_CHECK(wlen <= n, "masking grew the text: %zu > %zu", wlen, n);

	secret_stream_init(&st);
	start = 1;
	for (size_t i = 1; i <= size; i++) {
		if (i == size || data[i] == 0xff) {
			if (i > start)
				secret_stream_feed(&st, (const char *)data + start, i - start, collect, &o);
			start = i + 1;
		}
	}
	secret_stream_end(&st, collect, &o);
	secret_stream_release(&st);
	FUZZ_CHECK(o.len == wlen && (wlen == 0 || memcmp(o.buf, whole, wlen) == 0),
		   "stream (%zu bytes) differs from the whole text masked (%zu bytes)", o.len, wlen);
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		size_t kl = strlen(keys[k]);

		FUZZ_CHECK(!contains(whole, wlen, keys[k], kl),
			   "key %zu survives masking", k);
	}
	/* Cut after masking, at a size the first byte picks. */
	{
		size_t cut = (size_t)data[0] % sizeof(small);
		size_t w = secret_copy(small, cut, flat, n);

		FUZZ_CHECK(cut == 0 || (w < cut && small[w] == '\0'), "secret_copy: %zu into %zu", w, cut);
		FUZZ_CHECK(w <= wlen && memcmp(small, whole, w) == 0,
			   "secret_copy's %zu bytes are not a prefix of the masked text", w);
	}
	free(o.buf);
	free(flat);
	free(whole);
	return 0;
}

/* Fuzz target "hint": server error text, as the retry coordinator sees it —
 * the retry-hint grammar (src/base/hint.c), the normal form both read
 * (src/base/errtext.c) and the PCRE2 classifier with its built-in patterns
 * (src/core/classify.c, its rows in src/core/classify_rules.def).
 *
 * Input: the error text, raw bytes (not NUL-terminated). The same bytes are
 * also split into a message and a body at a point the first byte picks, with
 * a status the second byte picks; read as response headers, one
 * "name: value" a line; and put whole as the value of each header a wait is
 * read from (Retry-After in its three date forms and as seconds, the
 * x-ratelimit-* and anthropic-ratelimit-* resets, Date), alone and beside a
 * Date. Invariants: every hint within [0, HINT_MAX_MS], the same answer
 * twice, classifier results well formed. */
#include <stdlib.h>
#include <string.h>

#include "base/errtext.h"
#include "base/hint.h"
#include "core/classify.h"
#include "fuzz.h"

/* 2025-06-01T00:00:00Z, and the epoch itself: dates before and after. */
#define NOW_MS INT64_C(1748736000000)

static struct classify *classifier;

static const char *const wait_headers[] = {
	"retry-after-ms", "retry-after", "x-ratelimit-reset-ms", "x-ratelimit-reset",
	"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens",
	"anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-reset", "date",
};

static void release_classifier(void)
{
	classify_free(classifier);
}

static void check_result(const struct classify_result *r)
{
	FUZZ_CHECK(memchr(r->rule, '\0', sizeof(r->rule)) != NULL && r->rule[0] != '\0',
		   "rule not a NUL-terminated name");
	FUZZ_CHECK(r->verdict == CLASSIFY_RETRYABLE || !r->overload,
		   "overload on a %s verdict", classify_class_name(r->verdict));
	FUZZ_CHECK(r->hint_ms == -1 || (r->hint_ms >= 0 && r->hint_ms <= HINT_MAX_MS),
		   "hint %lld ms out of range", (long long)r->hint_ms);
}

static void check_headers(const json_t *headers)
{
	const int64_t nows[] = { NOW_MS, 0, INT64_MAX / 2 };

	for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
		for (int buckets = 0; buckets < 2; buckets++) {
			int64_t ms = -7, again = -7;
			bool found = hint_in_headers(headers, nows[i], buckets, &ms);

			FUZZ_CHECK(!found || (ms >= 0 && ms <= HINT_MAX_MS),
				   "header hint %lld ms out of range", (long long)ms);
			FUZZ_CHECK(hint_in_headers(headers, nows[i], buckets, &again) == found &&
					   (!found || again == ms),
				   "the same headers gave two answers");
		}
	}
}

/* As io/http keeps them: names lowercased, values from after the colon and
 * its blanks; a value that is not UTF-8 is left out, as provider_http
 * leaves it out. */
static json_t *headers_of_lines(const char *text)
{
	json_t *h = json_object();

	for (const char *p = text; h != NULL && *p != '\0';) {
		const char *end = strchr(p, '\n'), *colon;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char name[128], value[1024];
		size_t nlen, vlen;

		colon = memchr(p, ':', len);
		if (colon != NULL && (nlen = (size_t)(colon - p)) > 0 && nlen < sizeof(name)) {
			for (size_t i = 0; i < nlen; i++)
				name[i] = (p[i] >= 'A' && p[i] <= 'Z') ? (char)(p[i] - 'A' + 'a') : p[i];
			name[nlen] = '\0';
			colon++;
			while (colon < p + len && (*colon == ' ' || *colon == '\t'))
				colon++;
			vlen = (size_t)(p + len - colon);
			if (vlen > 0 && colon[vlen - 1] == '\r')
				vlen--;
			if (vlen < sizeof(value)) {
				memcpy(value, colon, vlen);
				value[vlen] = '\0';
				json_object_set_new(h, name, json_string(value));
			}
		}
		p += len + (end != NULL);
	}
	return h;
}

static void fuzz_headers(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	json_t *h;

	FUZZ_CHECK(text != NULL, "out of memory");
	memcpy(text, data, size);
	text[size] = '\0';
	h = headers_of_lines(text);
	check_headers(h);
	json_decref(h);
	for (size_t i = 0; i < sizeof(wait_headers) / sizeof(wait_headers[0]); i++) {
		h = json_object();
		json_object_set_new(h, wait_headers[i], json_string(text));
		check_headers(h);
		json_object_set_new(h, "date", json_string("Sun, 01 Jun 2025 00:00:00 GMT"));
		json_object_set_new(h, "anthropic-ratelimit-requests-remaining", json_string("0"));
		json_object_set_new(h, "x-ratelimit-remaining-requests", json_string("0"));
		check_headers(h);
		json_decref(h);
	}
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const int64_t nows[] = { NOW_MS, 0, INT64_MAX / 2 };
	char err[512];
	struct classify_input in = { 0 };
	struct classify_result r;
	size_t split = size > 0 ? (size_t)data[0] * size / 256 : 0;
	char *norm;
	size_t n;

	for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
		int64_t ms = -7;
		bool found = hint_parse(text, size, nows[i], &ms);

		FUZZ_CHECK(!found || (ms >= 0 && ms <= HINT_MAX_MS),
			   "hint %lld ms out of range", (long long)ms);
		FUZZ_CHECK(found || ms == -7, "hint_parse wrote a value but found none");
		ms = -7;
		found = hint_in_text(text, size, nows[i], &ms);
		FUZZ_CHECK(!found || (ms >= 0 && ms <= HINT_MAX_MS),
			   "text hint %lld ms out of range", (long long)ms);
	}
	{
		int64_t ms = -7;

		FUZZ_CHECK(!hint_duration(text, size, &ms) || (ms >= 0 && ms <= HINT_MAX_MS),
			   "duration %lld ms out of range", (long long)ms);
	}
	fuzz_headers(data, size);
	/* The normal form never grows and is valid UTF-8. */
	norm = malloc(size > 0 ? size : 1);
	FUZZ_CHECK(norm != NULL, "out of memory");
	n = errtext_normalize(norm, text, size, NULL, 0);
	FUZZ_CHECK(n <= size && fuzz_utf8_valid(norm, n), "normal form of %zu bytes is %zu", size,
		   n);
	FUZZ_CHECK(n == 0 || (norm[0] != ' ' && norm[n - 1] != ' '), "normal form not trimmed");
	free(norm);

	if (classifier == NULL) {
		classifier = classify_new(NULL, err, sizeof(err));
		FUZZ_CHECK(classifier != NULL, "built-in patterns: %s", err);
		atexit(release_classifier);
	}
	(void)classify_error(classifier, text, size);
	(void)classify_is_usage_limit(classifier, text, size);
	(void)classify_is_overload(classifier, text, size);
	in.text = text;
	in.len = size;
	classify_decide(classifier, &in, &r);
	check_result(&r);
	in.len = split;
	in.body = text + split;
	in.body_len = size - split;
	in.status = size > 1 ? 380 + data[1] : 0;
	in.now_ms = NOW_MS;
	classify_decide(classifier, &in, &r);
	check_result(&r);
	return 0;
}

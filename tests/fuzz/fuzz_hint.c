/* Fuzz target "hint": server error text, as the retry coordinator sees it —
 * the retry-hint grammar (src/base/hint.c), the normal form both read
 * (src/base/errtext.c) and the PCRE2 classifier with its built-in patterns
 * (src/core/classify.c, its rows in src/core/classify_rules.def).
 *
 * Input: the error text, raw bytes (not NUL-terminated). The same bytes are
 * also split into a message and a body at a point the first byte picks, with
 * a status the second byte picks. */
#include <stdlib.h>
#include <string.h>

#include "base/errtext.h"
#include "base/hint.h"
#include "core/classify.h"
#include "fuzz.h"

/* 2025-06-01T00:00:00Z, and the epoch itself: dates before and after. */
#define NOW_MS INT64_C(1748736000000)

static struct classify *classifier;

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

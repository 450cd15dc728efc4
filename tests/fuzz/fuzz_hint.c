/* Fuzz target "hint": server error text, as the retry coordinator sees it —
 * the retry-hint parser (src/base/hint.c) and the PCRE2 classifier with the
 * built-in pattern lists (src/core/classify.c).
 *
 * Input: the error text, raw bytes (not NUL-terminated). */
#include <stdlib.h>

#include "core/classify.h"
#include "fuzz.h"
#include "base/hint.h"

/* 2025-06-01T00:00:00Z, and the epoch itself: dates before and after. */
#define NOW_MS INT64_C(1748736000000)

static struct classify *classifier;

static void release_classifier(void)
{
	classify_free(classifier);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const int64_t nows[] = { NOW_MS, 0, INT64_MAX / 2 };
	char err[512];

	for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
		int64_t ms = -7;
		bool found = hint_parse(text, size, nows[i], &ms);

		FUZZ_CHECK(!found || (ms >= 0 && ms <= INT64_C(1000000000000000)),
			   "hint %lld ms out of range", (long long)ms);
		FUZZ_CHECK(found || ms == -7, "hint_parse wrote a value but found none");
	}
	if (classifier == NULL) {
		classifier = classify_new(NULL, err, sizeof(err));
		FUZZ_CHECK(classifier != NULL, "default patterns: %s", err);
		atexit(release_classifier);
	}
	(void)classify_error(classifier, text, size);
	(void)classify_is_usage_limit(classifier, text, size);
	(void)classify_is_overload(classifier, text, size);
	return 0;
}

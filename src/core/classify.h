/* classify — is a failed attempt's error message worth retrying?
 *
 * Pure: compiled PCRE2 pattern lists in, a verdict out. Patterns are compiled
 * once (caseless, UTF, JIT where available) from the `retry` settings object.
 * Order of the checks: context overflow (never retried) → non-retryable →
 * retryable → otherwise not retryable. */
#ifndef RETRYD_CLASSIFY_H
#define RETRYD_CLASSIFY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum classify_verdict {
	CLASSIFY_RETRYABLE,
	CLASSIFY_NOT_RETRYABLE,
	CLASSIFY_CONTEXT_OVERFLOW,
};

struct classify;

/* The built-in lists, as a new reference:
 * {"retryablePatterns":[...], "nonRetryablePatterns":[...],
 *  "contextOverflowPatterns":[...], "usageLimitPatterns":[...],
 *  "overloadPatterns":[...]}.
 * core/builtins.c hands this object to settings as the built-in "retry"
 * layer; classify_new falls back to it for a list the settings lack. */
json_t *classify_defaults(void);

/* Compiles the five lists from `retry` (borrowed; the settings' "retry"
 * object, may be NULL). A list missing from `retry` falls back to its
 * default. Returns NULL and fills err with e.g.
 * "retry.retryablePatterns[2] \"(oops\": missing closing parenthesis at offset 5"
 * when a pattern does not compile or a list is not an array of strings. */
struct classify *classify_new(const json_t *retry, char *err, size_t errlen);
/* Classifiers are shared by reference (a running chain keeps the one its
 * prompt was accepted with): classify_ref adds one, classify_free drops one
 * and frees with the last. */
struct classify *classify_ref(struct classify *self);
void classify_free(struct classify *self);

/* message: borrowed, `len` bytes, need not be NUL-terminated. */
enum classify_verdict classify_error(const struct classify *self, const char *message, size_t len);
bool classify_is_usage_limit(const struct classify *self, const char *message, size_t len);
/* The model is overloaded (what retry.fallbackAfterConsecutive counts). */
bool classify_is_overload(const struct classify *self, const char *message, size_t len);

/* "retryable", "not-retryable", "context-overflow". */
const char *classify_verdict_name(enum classify_verdict verdict);

#endif

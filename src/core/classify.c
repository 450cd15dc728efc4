#define PCRE2_CODE_UNIT_WIDTH 8

#include "core/classify.h"

#include <assert.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/errbuf.h"

/* PCRE2's JIT code reads the subject a vector at a time, past its end but
 * inside the page, and memcheck cannot see through generated code: it
 * reports hundreds of uninitialised reads that are not bugs. Under valgrind
 * the patterns run in PCRE2's interpreter instead (same results), so
 * `make check-valgrind` reports only real errors. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

/* Error text from a provider may be cut mid-character; with this option an
 * invalid sequence simply cannot match instead of failing the whole match. */
#ifdef PCRE2_MATCH_INVALID_UTF
#define CLASSIFY_COMPILE_OPTIONS (PCRE2_CASELESS | PCRE2_UTF | PCRE2_MATCH_INVALID_UTF)
#else
#define CLASSIFY_COMPILE_OPTIONS (PCRE2_CASELESS | PCRE2_UTF)
#endif

/* In the order of the object classify_defaults() returns. */
enum classify_list_id {
	LIST_RETRYABLE,
	LIST_NON_RETRYABLE,
	LIST_CONTEXT_OVERFLOW,
	LIST_USAGE_LIMIT,
	LIST_OVERLOAD,
	LIST_COUNT,
};

static const char *const list_keys[LIST_COUNT] = {
	[LIST_RETRYABLE] = "retryablePatterns",
	[LIST_NON_RETRYABLE] = "nonRetryablePatterns",
	[LIST_CONTEXT_OVERFLOW] = "contextOverflowPatterns",
	[LIST_USAGE_LIMIT] = "usageLimitPatterns",
	[LIST_OVERLOAD] = "overloadPatterns",
};

/* Statuses only as whole numbers: "max_tokens must be <= 1500" and
 * "port 5003" are not server errors. */
static const char *const default_retryable[] = {
	"overloaded",
	"rate.?limit",
	"usage.?limit",
	"too many requests",
	"(?<![0-9])(?:429|500|502|503|504)(?![0-9])",
	"service.?unavailable",
	"server.?error",
	"internal.?error",
	"connection.?error",
	"connection.?refused",
	"other side closed",
	"fetch failed",
	"upstream.?connect",
	"reset before headers",
	"network.?error",
	"socket hang up",
	"timed? out",
	"timeout",
	"terminated",
	"retry delay",
	"stream stall",
	/* Codex and Gemini CLI's final messages after their own retries. */
	"stream disconnected",
	"high demand",
	"at capacity",
	"econnreset|connection.?reset",
	/* An agent CLI that died before its terminal line (provider_cli.c). */
	"agent exited without a result",
	NULL,
};

static const char *const default_non_retryable[] = {
	"(?<![0-9])(?:400|401|403|404)(?![0-9])",
	"invalid.?api.?key",
	"unauthorized",
	"forbidden",
	"permission denied",
	"authentication",
	"invalid.?request",
	"bad request",
	NULL,
};

/* pi's isContextOverflow list, plus omp's 413 / payload-too-large forms. */
static const char *const default_context_overflow[] = {
	"prompt is too long",
	"exceeds the context window",
	"maximum context length is \\d+ tokens",
	"context[_ ]length[_ ]exceeded",
	"too many tokens",
	"input is too long for requested model",
	"reduce the length of the messages",
	"request too large",
	"payload too large",
	"(?<![0-9])413(?![0-9])",
	"^4(?:00|13)\\s*(?:status code)?\\s*\\(no body\\)",
	NULL,
};

/* omp's isUsageLimitError. */
static const char *const default_usage_limit[] = {
	"usage.?limit",
	"usage_limit_reached",
	"limit_reached",
	"quota.?exceeded",
	"quota.?reached",
	"resource.?exhausted",
	"exhausted your capacity",
	"quota will reset",
	"exceeded your current quota",
	"insufficient_quota",
	NULL,
};

/* The model itself is saturated: what model fallback counts. */
static const char *const default_overload[] = {
	"overloaded",
	"(?<![0-9])(?:503|529)(?![0-9])",
	"service.?unavailable",
	"over.?capacity",
	"model.?capacity",
	NULL,
};

static const char *const *const default_lists[LIST_COUNT] = {
	[LIST_RETRYABLE] = default_retryable,
	[LIST_NON_RETRYABLE] = default_non_retryable,
	[LIST_CONTEXT_OVERFLOW] = default_context_overflow,
	[LIST_USAGE_LIMIT] = default_usage_limit,
	[LIST_OVERLOAD] = default_overload,
};

struct classify_list {
	pcre2_code **codes;
	size_t count;
};

struct classify {
	int refs;
	struct classify_list lists[LIST_COUNT];
	/* One block shared by every pattern, sized for the one with the most
	 * groups: a verdict needs only "did it match", and the daemon
	 * classifies on a single thread. */
	pcre2_match_data *match;
};

json_t *classify_defaults(void)
{
	json_t *obj = json_object();

	if (obj == NULL)
		return NULL;
	for (size_t l = 0; l < LIST_COUNT; l++) {
		json_t *array = json_array();

		if (json_object_set_new(obj, list_keys[l], array) != 0)
			goto fail;
		for (const char *const *p = default_lists[l]; *p != NULL; p++)
			if (json_array_append_new(array, json_string(*p)) != 0)
				goto fail;
	}
	return obj;
fail:
	json_decref(obj);
	return NULL;
}

static int compile_list(struct classify_list *list, const char *key, const json_t *array,
			uint32_t *max_captures, char *err, size_t errlen)
{
	size_t n;

	if (!json_is_array(array)) {
		errbuf_set(err, errlen, "retry.%s must be an array of strings", key);
		return -1;
	}
	n = json_array_size(array);
	/* calloc(0) may return NULL; an empty list is legitimate. */
	list->codes = calloc(n > 0 ? n : 1, sizeof(*list->codes));
	if (list->codes == NULL) {
		errbuf_set(err, errlen, "retry.%s: out of memory", key);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *item = json_array_get(array, i);
		PCRE2_UCHAR msg[256];
		PCRE2_SIZE erroffset;
		uint32_t captures;
		pcre2_code *code;
		int errcode;

		if (!json_is_string(item)) {
			errbuf_set(err, errlen, "retry.%s[%zu] must be a string", key, i);
			return -1;
		}
		code = pcre2_compile((PCRE2_SPTR)json_string_value(item), json_string_length(item),
				     CLASSIFY_COMPILE_OPTIONS, &errcode, &erroffset, NULL);
		if (code == NULL) {
			if (pcre2_get_error_message(errcode, msg, sizeof(msg)) < 0)
				snprintf((char *)msg, sizeof(msg), "error %d", errcode);
			errbuf_set(err, errlen, "retry.%s[%zu] \"%s\": %s at offset %zu", key, i,
				json_string_value(item), (const char *)msg, (size_t)erroffset);
			return -1;
		}
		list->codes[list->count++] = code;
		/* Where JIT is unavailable the interpreter is used; that is fine. */
		if (!RUNNING_ON_VALGRIND)
			(void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
		if (pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &captures) == 0 &&
		    captures > *max_captures)
			*max_captures = captures;
	}
	return 0;
}

struct classify *classify_new(const json_t *retry, char *err, size_t errlen)
{
	struct classify *self = NULL;
	json_t *defaults = NULL;
	uint32_t max_captures = 0;

	if (retry != NULL && !json_is_object(retry)) {
		errbuf_set(err, errlen, "retry must be an object");
		return NULL;
	}
	self = calloc(1, sizeof(*self));
	if (self != NULL)
		self->refs = 1;
	defaults = classify_defaults();
	if (self == NULL || defaults == NULL) {
		errbuf_set(err, errlen, "retry: out of memory");
		goto fail;
	}
	for (size_t l = 0; l < LIST_COUNT; l++) {
		const json_t *array = retry != NULL ? json_object_get(retry, list_keys[l]) : NULL;

		if (array == NULL)
			array = json_object_get(defaults, list_keys[l]);
		if (compile_list(&self->lists[l], list_keys[l], array, &max_captures,
				 err, errlen) != 0)
			goto fail;
	}
	self->match = pcre2_match_data_create(max_captures + 1, NULL);
	if (self->match == NULL) {
		errbuf_set(err, errlen, "retry: out of memory");
		goto fail;
	}
	json_decref(defaults);
	return self;
fail:
	json_decref(defaults);
	classify_free(self);
	return NULL;
}

struct classify *classify_ref(struct classify *self)
{
	if (self != NULL)
		self->refs++;
	return self;
}

void classify_free(struct classify *self)
{
	if (self == NULL || --self->refs > 0)
		return;
	for (size_t l = 0; l < LIST_COUNT; l++) {
		for (size_t i = 0; i < self->lists[l].count; i++)
			pcre2_code_free(self->lists[l].codes[i]);
		free(self->lists[l].codes);
	}
	pcre2_match_data_free(self->match);
	free(self);
}

static bool list_matches(const struct classify *self, enum classify_list_id id,
			 const char *message, size_t len)
{
	const struct classify_list *list = &self->lists[id];

	/* A NULL subject is only allowed by newer PCRE2 releases. */
	if (message == NULL) {
		message = "";
		len = 0;
	}
	for (size_t i = 0; i < list->count; i++) {
		/* rc 0 (ovector too small) is still a match; any error, e.g.
		 * a user pattern hitting the match limit, counts as no match. */
		int rc = pcre2_match(list->codes[i], (PCRE2_SPTR)message, len, 0, 0,
				     self->match, NULL);

		if (rc >= 0)
			return true;
	}
	return false;
}

enum classify_verdict classify_error(const struct classify *self, const char *message, size_t len)
{
	assert(self != NULL);
	if (list_matches(self, LIST_CONTEXT_OVERFLOW, message, len))
		return CLASSIFY_CONTEXT_OVERFLOW;
	if (list_matches(self, LIST_NON_RETRYABLE, message, len))
		return CLASSIFY_NOT_RETRYABLE;
	if (list_matches(self, LIST_RETRYABLE, message, len))
		return CLASSIFY_RETRYABLE;
	return CLASSIFY_NOT_RETRYABLE;
}

bool classify_is_usage_limit(const struct classify *self, const char *message, size_t len)
{
	assert(self != NULL);
	return list_matches(self, LIST_USAGE_LIMIT, message, len);
}

bool classify_is_overload(const struct classify *self, const char *message, size_t len)
{
	assert(self != NULL);
	return list_matches(self, LIST_OVERLOAD, message, len);
}

const char *classify_verdict_name(enum classify_verdict verdict)
{
	switch (verdict) {
	case CLASSIFY_RETRYABLE:
		return "retryable";
	case CLASSIFY_NOT_RETRYABLE:
		return "not-retryable";
	case CLASSIFY_CONTEXT_OVERFLOW:
		return "context-overflow";
	}
	return "unknown";
}

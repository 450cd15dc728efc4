#include "core/classify_patterns.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define CLASSIFY_COMPILE_OPTIONS (PCRE2_CASELESS | PCRE2_UTF)

const char classify_user_keys[U_COUNT][24] = {
	[U_RETRYABLE] = "retryablePatterns",
	[U_NON_RETRYABLE] = "nonRetryablePatterns",
	[U_CONTEXT_OVERFLOW] = "contextOverflowPatterns",
	[U_USAGE_LIMIT] = "usageLimitPatterns",
	[U_OVERLOAD] = "overloadPatterns",
};

/* The built-in lists; the daemon is single-threaded. */
static struct {
	struct classify_list lists[LIST_COUNT];
	uint32_t max_captures;
	int users;	/* live classifiers */
	bool ready;
} shared;

/* Compiles one pattern into list (which has room). "what" names it in err. */
static int compile_one(struct classify_list *list, const char *pattern, size_t len,
		       uint32_t *max_captures, const char *what, size_t index, char *err,
		       size_t errlen)
{
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE erroffset;
	uint32_t captures;
	pcre2_code *code;
	int errcode;

	code = pcre2_compile((PCRE2_SPTR)pattern, len, CLASSIFY_COMPILE_OPTIONS, &errcode,
			     &erroffset, NULL);
	if (code == NULL) {
		if (pcre2_get_error_message(errcode, msg, sizeof(msg)) < 0)
			snprintf((char *)msg, sizeof(msg), "error %d", errcode);
		return errbuf_set(err, errlen, "%s[%zu] \"%s\": %s at offset %zu", what, index,
				  pattern, (const char *)msg, (size_t)erroffset);
	}
	list->codes[list->count++] = code;
	/* Where JIT is unavailable the interpreter is used; that is fine. */
	if (!RUNNING_ON_VALGRIND)
		(void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
	if (pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &captures) == 0 &&
	    captures > *max_captures)
		*max_captures = captures;
	return 0;
}

static int alloc_list(struct classify_list *list, size_t n, char *err, size_t errlen)
{
	/* calloc(0) may return NULL; an empty list is legitimate. */
	list->codes = calloc(n > 0 ? n : 1, sizeof(*list->codes));
	if (list->codes == NULL)
		return errbuf_set(err, errlen, "retry: out of memory");
	return 0;
}

/* array: the settings list, NULL when there is none (empty). */
static int compile_user(struct classify_list *list, const char *key, const json_t *array,
			uint32_t *max_captures, char *err, size_t errlen)
{
	size_t n;
	char what[64];

	if (array != NULL && !json_is_array(array))
		return errbuf_set(err, errlen, "retry.%s must be an array of strings", key);
	n = json_array_size(array);
	if (alloc_list(list, n, err, errlen) != 0)
		return -1;
	snprintf(what, sizeof(what), "retry.%.40s", key);
	for (size_t i = 0; i < n; i++) {
		const json_t *item = json_array_get(array, i);

		if (!json_is_string(item))
			return errbuf_set(err, errlen, "retry.%s[%zu] must be a string", key, i);
		if (compile_one(list, json_string_value(item), json_string_length(item),
				max_captures, what, i, err, errlen) != 0)
			return -1;
	}
	return 0;
}

static void release_list(struct classify_list *list)
{
	for (size_t i = 0; i < list->count; i++)
		pcre2_code_free(list->codes[i]);
	free(list->codes);
	free(list->rows);
	memset(list, 0, sizeof(*list));
}

/* Every row of the table into its list, in the table's order; a row whose
 * number is not its place in the list is refused (its rule would lie). */
static int compile_builtins(uint32_t *max, char *err, size_t errlen)
{
	size_t n[LIST_COUNT] = { 0 };
	char what[64];

	for (size_t r = 0; r < classify_wording_count; r++)
		n[classify_wordings[r].list]++;
	for (size_t l = 0; l < LIST_COUNT; l++) {
		struct classify_list *list = &shared.lists[l];

		if (alloc_list(list, n[l], err, errlen) != 0)
			return -1;
		list->rows = calloc(n[l] > 0 ? n[l] : 1, sizeof(*list->rows));
		if (list->rows == NULL)
			return errbuf_set(err, errlen, "retry: out of memory");
	}
	for (size_t r = 0; r < classify_wording_count; r++) {
		const struct classify_wording *row = &classify_wordings[r];
		struct classify_list *list = &shared.lists[row->list];

		snprintf(what, sizeof(what), "classify: built-in %s", classify_list_name(row->list));
		if (row->index != list->count)
			return errbuf_set(err, errlen, "%s[%u] is row %zu of its list", what,
					  row->index, list->count);
		list->rows[list->count] = row;
		if (compile_one(list, row->pattern, PCRE2_ZERO_TERMINATED, max, what, row->index, err,
				errlen) != 0)
			return -1;
	}
	return 0;
}

int classify_patterns_init(struct classify_patterns *p, const json_t *retry, char *err,
			   size_t errlen)
{
	memset(p, 0, sizeof(*p));
	shared.users++;
	for (size_t u = 0; u < U_COUNT; u++)
		if (compile_user(&p->user[u], classify_user_keys[u],
				 retry != NULL ? json_object_get(retry, classify_user_keys[u]) : NULL,
				 &p->user_captures, err, errlen) != 0)
			return -1;
	return 0;
}

void classify_patterns_fini(struct classify_patterns *p)
{
	for (size_t u = 0; u < U_COUNT; u++)
		release_list(&p->user[u]);
	pcre2_match_data_free(p->match);
	p->match = NULL;
	if (--shared.users == 0 && shared.ready) {
		for (size_t l = 0; l < LIST_COUNT; l++)
			release_list(&shared.lists[l]);
		memset(&shared, 0, sizeof(shared));
	}
}

int classify_patterns_ready(struct classify_patterns *p)
{
	char err[256];

	if (p->builtin != NULL)
		return 0;
	if (!shared.ready) {
		uint32_t max = 0;

		/* A bad row says so in err; the unit tests would see every
		 * decision fail. */
		if (compile_builtins(&max, err, sizeof(err)) != 0) {
			for (size_t l = 0; l < LIST_COUNT; l++)
				release_list(&shared.lists[l]);
			return -1;
		}
		shared.max_captures = max;
		shared.ready = true;
	}
	p->match = pcre2_match_data_create((shared.max_captures > p->user_captures
					    ? shared.max_captures : p->user_captures) + 1, NULL);
	if (p->match == NULL)
		return -1;
	p->builtin = shared.lists;
	return 0;
}

#include "core/classify_patterns.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/errtext.h"

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

/* The built-in set is JIT-compiled after this many decisions of the
 * process. JIT costs some 30 ms for the whole set, five times its plain
 * compile, and saves about 0.6 ms a decision on a long 429 body: it pays
 * for itself after some fifty decisions, and waiting that long costs at
 * most as much again (the ski-rental rule). A daemon that sees a few
 * failures, or two hundred such daemons whose first failures come in the
 * same second, never pay for it. */
#define JIT_AFTER 48

/* The built-in lists; the daemon is single-threaded. */
static struct {
	struct classify_list lists[LIST_COUNT];
	uint32_t max_captures;
	int users;	/* live classifiers */
	unsigned decisions;	/* up to JIT_AFTER */
	bool ready;
} shared;

/* Where JIT is unavailable the interpreter is used; that is fine. */
static void jit(pcre2_code *code)
{
	if (code != NULL && !RUNNING_ON_VALGRIND)
		(void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
}

static void jit_builtins(void)
{
	for (size_t l = 0; l < LIST_COUNT; l++) {
		const struct classify_list *list = &shared.lists[l];

		for (size_t i = 0; i < list->count; i++) {
			jit(list->codes[i]);
			for (size_t a = 0; list->alts != NULL && a < list->alts[i].count; a++)
				jit(list->alts[i].codes[a]);
		}
	}
}

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
	if (pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &captures) == 0 &&
	    captures > *max_captures)
		*max_captures = captures;
	return 0;
}

/* The '[' of a class at pattern[i]: where its body starts, less one (past
 * a '^', and past a ']' first in the class, which is one of its characters). */
static size_t class_body(const char *pattern, size_t len, size_t i)
{
	if (i + 1 < len && pattern[i + 1] == '^')
		i++;
	if (i + 1 < len && pattern[i + 1] == ']')
		i++;
	return i;
}

/* The top-level alternatives of pattern[0..len): their starts and lengths,
 * at most max; 0 when the row is to stay whole, because an inline option
 * or a back reference would reach from one alternative into another, or it
 * has more than max. */
static size_t split_alternatives(const char *pattern, size_t len, size_t *starts, size_t *lens,
				 size_t max)
{
	size_t n = 0, from = 0;
	int depth = 0;
	bool in_class = false;

	for (size_t i = 0; i <= len; i++) {
		char c = i < len ? pattern[i] : '|';

		if (c == '\\' && i + 1 < len) {
			char e = pattern[++i];

			if ((e >= '1' && e <= '9') || e == 'g' || e == 'k' || e == 'Q')
				return 0;
		} else if (in_class) {
			in_class = c != ']';
		} else if (c == '[') {
			in_class = true;
			i = class_body(pattern, len, i);
		} else if (c == '(') {
			size_t k = i + 1;

			if (k < len && pattern[k] == '?') {
				for (k++; k < len && (isalpha((unsigned char)pattern[k]) ||
						      pattern[k] == '-' || pattern[k] == '^'); k++)
					;
				if (k < len && pattern[k] == ')' && depth == 0)
					return 0;	/* (?i) for the rest of the pattern */
			}
			depth++;
		} else if (c == ')') {
			depth--;
		} else if (c == '|' && depth == 0) {
			if (n == max)
				return 0;
			starts[n] = from;
			lens[n++] = i - from;
			from = i + 1;
		}
	}
	return depth == 0 && !in_class ? n : 0;
}

/* Whether an alternative starts with a character outside ASCII (a word of
 * Chinese, Japanese, Korean or Cyrillic): PCRE2 then knows its first byte,
 * which an English text hardly has. */
static bool starts_outside_ascii(const pcre2_code *code)
{
	uint32_t type = 0, unit = 0;

	return pcre2_pattern_info(code, PCRE2_INFO_FIRSTCODETYPE, &type) == 0 && type == 1 &&
	       pcre2_pattern_info(code, PCRE2_INFO_FIRSTCODEUNIT, &unit) == 0 && unit >= 0x80;
}

/* The index of the ']' that closes the class opened at pattern[i]. */
static size_t class_end(const char *pattern, size_t len, size_t i)
{
	for (i = class_body(pattern, len, i) + 1; i < len && pattern[i] != ']'; i++)
		if (pattern[i] == '\\')
			i++;
	return i;
}

/* The index of the ')' that closes the group opened at pattern[i]
 * ("(?:a|[)]b)" → the last ')'). */
static size_t group_end(const char *pattern, size_t len, size_t i)
{
	int depth = 0;

	for (; i < len; i++) {
		if (pattern[i] == '\\')
			i++;
		else if (pattern[i] == '[')
			i = class_end(pattern, len, i);
		else if (pattern[i] == '(')
			depth++;
		else if (pattern[i] == ')' && --depth == 0)
			return i;
	}
	return len;
}

/* The longest run of plain ASCII characters an alternative's every match
 * holds, lower-cased into out (cut at CLASSIFY_LIT_MAX - 1; "" when shorter
 * than 3): only what stands outside groups and classes, not made optional
 * by ?, * or {0, and not repeated past itself by + or {n. An escape of a
 * letter (\b, \s, \x…) or any other construct ends a run. */
static void required_literal(const char *pattern, size_t len, char *out)
{
	char run[CLASSIFY_LIT_MAX];
	size_t n = 0, best = 0;

	out[0] = '\0';
	for (size_t i = 0; i <= len; i++) {
		unsigned char c = i < len ? (unsigned char)pattern[i] : '\0';
		bool lit = c >= 0x20 && c < 0x80 && !strchr(".^$|()[]{}?*+\\", c);
		bool more = true;	/* the run may go on after this character */

		if (c == '\\' && i + 1 < len && !isalnum((unsigned char)pattern[i + 1]) &&
		    (unsigned char)pattern[i + 1] < 0x80) {
			c = (unsigned char)pattern[++i];
			lit = true;
		}
		if (lit && i + 1 < len && strchr("?*{+", pattern[i + 1])) {
			char q = pattern[i + 1];

			/* ?, * and {0 leave the character out; + and {n keep it once */
			lit = q == '+' || (q == '{' && i + 2 < len && pattern[i + 2] != '0' &&
					   pattern[i + 2] != ',');
			more = false;
		}
		if (lit && n < CLASSIFY_LIT_MAX - 1)
			run[n++] = (char)tolower(c);
		if (lit && more && n < CLASSIFY_LIT_MAX - 1)
			continue;
		if (n > best) {
			best = n;
			memcpy(out, run, n);
			out[n] = '\0';
		}
		n = 0;
		if (!lit && c == '(')
			i = group_end(pattern, len, i);
		else if (!lit && c == '[')
			i = class_end(pattern, len, i);
		else if (!lit && c == '{')
			while (i < len && pattern[i] != '}')
				i++;
		else if (!lit && c == '\\')
			i++;	/* \b, \s, \x…: its letter is not a literal */
	}
	if (best < 3)
		out[0] = '\0';
}

/* Frees what one row's alternatives compiled so far. */
static void drop_alts(struct classify_list *one)
{
	for (size_t j = 0; j < one->count; j++)
		pcre2_code_free(one->codes[j]);
	one->count = 0;
}

/* Compiles a row of a boolean list into alts: each top-level alternative on
 * its own, except that those starting outside ASCII go back together into
 * one (apart, each would cost a call for little). A row that does not
 * split, or whose alternatives do not compile alone, stays whole. On an
 * error alts holds what was compiled, for release_list. */
static int compile_alts(struct classify_alts *alts, const char *pattern, uint32_t *max_captures,
			const char *what, size_t index, char *err, size_t errlen)
{
	size_t starts[128], lens[128];
	size_t n = split_alternatives(pattern, strlen(pattern), starts, lens, 128);
	struct classify_list one = { 0 };
	char *joined = n > 1 ? malloc(strlen(pattern) + 1) : NULL;
	size_t jlen = 0;
	int rc = 0;

	alts->codes = calloc(n > 0 ? n : 1, sizeof(*alts->codes));
	alts->lits = calloc(n > 0 ? n : 1, sizeof(*alts->lits));
	if (alts->codes == NULL || alts->lits == NULL || (n > 1 && joined == NULL)) {
		free(joined);
		return errbuf_set(err, errlen, "retry: out of memory");
	}
	one.codes = alts->codes;
	for (size_t k = 0; k < n && one.codes != NULL; k++) {
		if (compile_one(&one, pattern + starts[k], lens[k], max_captures, what, index, err,
				errlen) != 0) {
			drop_alts(&one);
			one.codes = NULL;	/* the whole row instead */
		} else if (n > 1 && starts_outside_ascii(one.codes[one.count - 1])) {
			pcre2_code_free(one.codes[--one.count]);
			if (jlen > 0)
				joined[jlen++] = '|';
			memcpy(joined + jlen, pattern + starts[k], lens[k]);
			jlen += lens[k];
		} else if (n > 1) {
			required_literal(pattern + starts[k], lens[k], alts->lits[one.count - 1]);
		}
	}
	if (one.codes != NULL && jlen > 0 &&
	    compile_one(&one, joined, jlen, max_captures, what, index, err, errlen) != 0) {
		drop_alts(&one);
		one.codes = NULL;
	}
	free(joined);
	if (one.codes == NULL || one.count == 0) {
		one.codes = alts->codes;
		one.count = 0;
		memset(alts->lits, 0, (n > 0 ? n : 1) * sizeof(*alts->lits));
		rc = compile_one(&one, pattern, PCRE2_ZERO_TERMINATED, max_captures, what, index, err,
				 errlen);
		if (rc == 0)
			err[0] = '\0';
	}
	alts->count = one.count;
	return rc;
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
		/* a few, and the user's: at once */
		jit(list->codes[list->count - 1]);
	}
	return 0;
}

static void release_list(struct classify_list *list)
{
	for (size_t i = 0; i < list->count; i++) {
		pcre2_code_free(list->codes[i]);
		if (list->alts == NULL)
			continue;
		for (size_t k = 0; k < list->alts[i].count; k++)
			pcre2_code_free(list->alts[i].codes[k]);
		free(list->alts[i].codes);
		free(list->alts[i].lits);
	}
	free(list->codes);
	free(list->alts);
	free(list->rows);
	memset(list, 0, sizeof(*list));
}

/* The lists whose matches' groups or places are read keep whole patterns. */
static bool whole_rows(enum classify_list_id l)
{
	return l == LIST_statusPatterns || l == LIST_typedPatterns;
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
		if (!whole_rows(l))
			list->alts = calloc(n[l] > 0 ? n[l] : 1, sizeof(*list->alts));
		if (list->rows == NULL || (!whole_rows(l) && list->alts == NULL))
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
		if (list->alts != NULL) {
			/* counted either way: release_list frees what it holds */
			if (compile_alts(&list->alts[list->count++], row->pattern, max, what,
					 row->index, err, errlen) != 0)
				return -1;
		} else if (compile_one(list, row->pattern, PCRE2_ZERO_TERMINATED, max, what,
				       row->index, err, errlen) != 0) {
			return -1;
		}
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

/* hay[0..len) into p->lower in ASCII lower case, once per memo: the memo's
 * last byte becomes 1, or 2 when the literals cannot be trusted for this
 * hay. PCRE2's caseless UTF matching lets 'k' and 's' match the Kelvin sign
 * and the long s, which lower-casing ASCII does not; a hay holding either,
 * or longer than the buffer, is matched without the literals. */
static bool lowered(const struct classify_patterns *p, const char *hay, size_t len,
		    unsigned char *memo)
{
	if (memo[CLASSIFY_MEMO_MAX] == 0) {
		bool odd = p->lower == NULL || len > ERRTEXT_MAX;

		for (size_t i = 0; !odd && i < len; i++) {
			unsigned char c = (unsigned char)hay[i];

			p->lower[i] = (char)(c < 0x80 ? tolower(c) : c);
			odd = (c == 0xE2 && i + 2 < len && (unsigned char)hay[i + 1] == 0x84 &&
			       (unsigned char)hay[i + 2] == 0xAA) ||
			      (c == 0xC5 && i + 1 < len && (unsigned char)hay[i + 1] == 0xBF);
		}
		memo[CLASSIFY_MEMO_MAX] = odd ? 2 : 1;
	}
	return memo[CLASSIFY_MEMO_MAX] == 1;
}

/* Whether lower[0..len) holds lit (NUL-terminated, at least 3 bytes). */
static bool holds(const char *lower, size_t len, const char *lit)
{
	size_t n = strlen(lit);
	const char *at = lower, *end = lower + len;

	while (n <= (size_t)(end - at) &&
	       (at = memchr(at, lit[0], (size_t)(end - at) - n + 1)) != NULL) {
		if (memcmp(at + 1, lit + 1, n - 1) == 0)
			return true;
		at++;
	}
	return false;
}

bool classify_patterns_row(const struct classify_patterns *p, const struct classify_list *list,
			   size_t i, const char *hay, size_t len, unsigned char *memo)
{
	size_t k = list->rows != NULL ? (size_t)(list->rows[i] - classify_wordings)
				      : CLASSIFY_MEMO_MAX;
	bool yes = false;

	if (k < CLASSIFY_MEMO_MAX && memo[k] != 0)
		return memo[k] == 2;
	if (list->alts == NULL)
		yes = classify_patterns_match(p, list->codes[i], hay, len, 0) >= 0;
	for (size_t a = 0; list->alts != NULL && a < list->alts[i].count && !yes; a++) {
		const char *lit = list->alts[i].lits[a];

		if (lit[0] != '\0' && lowered(p, hay, len, memo) && !holds(p->lower, len, lit))
			continue;
		yes = classify_patterns_match(p, list->alts[i].codes[a], hay, len, 0) >= 0;
	}
	if (k < CLASSIFY_MEMO_MAX)
		memo[k] = yes ? 2 : 1;
	return yes;
}

int classify_patterns_first(const struct classify_patterns *p, const struct classify_list *list,
			    const char *hay, size_t len, unsigned char *memo)
{
	for (size_t i = 0; i < list->count; i++)
		if (classify_patterns_row(p, list, i, hay, len, memo))
			return (int)i;
	return -1;
}

void classify_patterns_fini(struct classify_patterns *p)
{
	for (size_t u = 0; u < U_COUNT; u++)
		release_list(&p->user[u]);
	pcre2_match_data_free(p->match);
	p->match = NULL;
	free(p->lower);
	p->lower = NULL;
	if (--shared.users == 0 && shared.ready) {
		for (size_t l = 0; l < LIST_COUNT; l++)
			release_list(&shared.lists[l]);
		memset(&shared, 0, sizeof(shared));
	}
}

int classify_patterns_ready(struct classify_patterns *p)
{
	char err[256];

	if (shared.ready && shared.decisions < JIT_AFTER && ++shared.decisions == JIT_AFTER)
		jit_builtins();
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
	if (p->match == NULL)
		p->match = pcre2_match_data_create((shared.max_captures > p->user_captures
						    ? shared.max_captures : p->user_captures) + 1,
						   NULL);
	if (p->lower == NULL)
		p->lower = malloc(ERRTEXT_MAX);
	if (p->match == NULL || p->lower == NULL)
		return -1;
	p->builtin = shared.lists;
	return 0;
}

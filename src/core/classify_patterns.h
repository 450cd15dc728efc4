/* classify_patterns — one classifier's compiled patterns: the built-in
 * wordings (core/classify_table), compiled once per process and shared by
 * every classifier, its own settings lists, and the one match block they
 * all use. All are compiled caseless and UTF, JIT where available (the
 * built-in set after its first decisions).
 *
 * The built-in set is compiled at the first decision, not at start (~6 ms
 * that a daemon which never sees a failure never needs), and JIT-compiled
 * only once the process has made enough decisions to gain from it. It is
 * freed with the last classifier. Not thread-safe: the daemon classifies on
 * one thread. */
#ifndef RETRYD_CLASSIFY_PATTERNS_H
#define RETRYD_CLASSIFY_PATTERNS_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif

#include <jansson.h>
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/classify_table.h"

/* The settings lists (the `retry` keys), in the order classify_defaults()
 * gives them. */
enum classify_user_id {
	U_RETRYABLE,
	U_NON_RETRYABLE,
	U_CONTEXT_OVERFLOW,
	U_USAGE_LIMIT,
	U_OVERLOAD,
	U_COUNT,
};

/* "retryablePatterns", ... */
/* Kept in the array, not pointed at: no relocation at start. */
extern const char classify_user_keys[U_COUNT][24];

/* The longest required ASCII literal kept of an alternative (a longer one
 * is cut: any piece of it is required too). */
#define CLASSIFY_LIT_MAX 24

/* One row's top-level alternatives, each compiled on its own, and each
 * one's literal that every match contains, in ASCII lower case ("" none):
 * a text without it is not given to PCRE2 at all, which saves a call
 * (the call, not the matching, is most of what an alternative costs). */
struct classify_alts {
	pcre2_code **codes;
	char (*lits)[CLASSIFY_LIT_MAX];
	size_t count;
};

struct classify_list {
	/* The whole pattern of each row: where a match's groups or place are
	 * read (statusPatterns, typedPatterns, the settings lists); NULL for a
	 * row that has alts. */
	pcre2_code **codes;
	/* Where only whether a row matches is asked (the other built-in lists):
	 * each row as its top-level alternatives, NULL for a list without. A
	 * union of some twenty alternatives, one of them starting with a
	 * lookaround, loses PCRE2's start-of-match optimisations and runs every
	 * alternative at every position; each alone keeps its own (a first
	 * character, a required one), three to six times faster on a body.
	 * The row matches when one of them does. */
	struct classify_alts *alts;
	/* A built-in list's rows, one per code; NULL for a settings list. */
	const struct classify_wording **rows;
	size_t count;
};

struct classify_patterns {
	/* The shared built-in lists by enum classify_list_id, NULL until
	 * classify_patterns_ready. */
	const struct classify_list *builtin;
	struct classify_list user[U_COUNT];
	uint32_t user_captures;
	/* Sized for the pattern with the most groups. */
	pcre2_match_data *match;
	/* A decision's hay in ASCII lower case, for the alternatives' literals
	 * (ERRTEXT_MAX bytes; made at a decision's first row, see the memo). */
	char *lower;
};

/* Compiles the settings lists of `retry` (borrowed; NULL, or a missing
 * list, is empty) into p. On a list that is not an array of strings or a
 * pattern that does not compile, returns -1 with err naming it: "retry.
 * retryablePatterns[2] \"(oops\": missing closing parenthesis at offset 5".
 * Either way p is to be finished with classify_patterns_fini. */
int classify_patterns_init(struct classify_patterns *p, const json_t *retry, char *err,
			   size_t errlen);
/* Frees p's own lists and block; the last one frees the built-in set. */
void classify_patterns_fini(struct classify_patterns *p);

/* Compiles the built-in set (the first call of the process) and p's match
 * block (p's first call). -1 when memory ran out, or a row of the table is
 * out of its sequence (the unit tests run it). */
int classify_patterns_ready(struct classify_patterns *p);

/* Matching is on the hot path of every decision (some 60 patterns), so
 * these are inline. */

/* pcre2_match of code on hay[0..len) from start, into p's block: the
 * number of groups set, < 0 no match. hay must be valid UTF-8 (errtext
 * makes it so). rc 0 (ovector too small) cannot happen: the block fits
 * every pattern. Any error, e.g. a user pattern hitting the match limit,
 * counts as no match. */
static inline int classify_patterns_match(const struct classify_patterns *p,
					  const pcre2_code *code, const char *hay, size_t len,
					  size_t start)
{
	return pcre2_match(code, (PCRE2_SPTR)hay, len, start, PCRE2_NO_UTF_CHECK, p->match, NULL);
}

/* One byte per built-in wording for a decision's memo (a table grown past
 * it is matched without one); a memo is CLASSIFY_MEMO_SIZE bytes, its last
 * one saying whether p->lower holds the hay yet. */
#define CLASSIFY_MEMO_MAX 512
#define CLASSIFY_MEMO_SIZE (CLASSIFY_MEMO_MAX + 1)

/* Whether row i of list matches anywhere in hay[0..len). The decision
 * steps ask some lists more than once (with other masks), and a row costs
 * microseconds on a long body: for a built-in list the answer is kept in
 * memo (CLASSIFY_MEMO_SIZE bytes, zeroed for each hay; by the row's place in
 * classify_wordings: 0 not asked, 1 no, 2 yes), so a decision asks each row
 * once. A settings list (no rows) is matched every time. */
bool classify_patterns_row(const struct classify_patterns *p, const struct classify_list *list,
			   size_t i, const char *hay, size_t len, unsigned char *memo);
/* The index of the first row of list that matches hay, or -1 (memo as above). */
int classify_patterns_first(const struct classify_patterns *p, const struct classify_list *list,
			    const char *hay, size_t len, unsigned char *memo);

/* Where the search for the next match starts after the last one of p's
 * block on hay[0..len) (finditer's rule): on a character boundary even
 * after an empty match. */
static inline size_t classify_patterns_next(const struct classify_patterns *p, const char *hay,
					    size_t len)
{
	const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(p->match);
	size_t k = ov[1];

	if (ov[1] > ov[0])
		return k;
	for (k++; k < len && ((unsigned char)hay[k] & 0xc0) == 0x80; k++)
		;
	return k;
}

#endif

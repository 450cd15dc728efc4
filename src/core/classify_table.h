/* classify_table — the classifier's built-in rules (core/classify_rules.def)
 * as C data: the typed values, apart by where they are read, and the
 * wordings with their list, number and flags. Constant data and pure
 * lookups; core/classify_patterns compiles the wordings, core/classify
 * consults both in the order of its decision table.
 *
 * The rule names are built with the rows (string literals of the .def's
 * columns), so a decision copies its rule and formats nothing. */
#ifndef RETRYD_CLASSIFY_TABLE_H
#define RETRYD_CLASSIFY_TABLE_H

#include <stdbool.h>
#include <stddef.h>

/* The wording lists, by the names their rules give them
 * ("text:<list>[<index>]"); classify_rules.def says what each is for. */
enum classify_list_id {
	LIST_statusPatterns,
	LIST_typedPatterns,
	LIST_contextOverflowPatterns,
	LIST_limitZeroPatterns,
	LIST_usageLimitPatterns,
	LIST_perMinutePatterns,
	LIST_quotaWordPatterns,
	LIST_nonRetryablePatterns,
	LIST_transportPatterns,
	LIST_rateLimitPatterns,
	LIST_gatewayPatterns,
	LIST_transientPatterns,
	LIST_overloadPatterns,
	LIST_badRequestPatterns,
	LIST_genericNeverPatterns,
	LIST_noRetryPatterns,
	LIST_COUNT,
};

/* What a typed value means (the .def's class column). */
enum rule_class {
	RULE_OVERFLOW,
	RULE_USAGE,
	RULE_NEVER,
	RULE_BAD,	/* a generic invalid request: decides only at the end */
	RULE_RETRY,
	RULE_OVERLOAD,	/* retried, and the overload flag */
	RULE_CLASSES,
};

/* The .def's flags column. */
enum {
	RULE_NONE = 0,
	/* gives way: a never-retried wording to typed retry evidence or the
	 * transport, a bare transient word to a permanent clause, a plan word
	 * (noRetryPatterns) decides only against a transient word */
	RULE_WEAK = 1u << 0,
	RULE_WINDOW = 1u << 1,	/* a rate or quota window, not a broken server */
	RULE_NAME = 1u << 2,	/* a library's exception name: no match for WEAK wordings */
	RULE_NAME_WINDOW = RULE_NAME | RULE_WINDOW,
};

/* The rule names are kept in the rows, not pointed at: a pointer in a
 * constant table is one more relocation for the loader at every start. */
#define CLASSIFY_WORDING_RULE_MAX 40
#define CLASSIFY_TYPED_RULE_MAX 64

struct classify_wording {
	enum classify_list_id list;
	unsigned index;		/* its number in the list */
	unsigned flags;
	const char *pattern;
	char rule[CLASSIFY_WORDING_RULE_MAX];	/* "text:<list>[<index>]" */
};

struct classify_typed {
	char rule[CLASSIFY_TYPED_RULE_MAX];	/* "<family>:<value>" */
	unsigned char value_at;	/* where <value> starts in rule */
	unsigned char cls;	/* enum rule_class */
	unsigned char flags;
};

/* The value of a typed row (borrowed, in the row). */
static inline const char *classify_typed_value(const struct classify_typed *t)
{
	return t->rule + t->value_at;
}

/* Every WORDING row, in the .def's order. */
extern const struct classify_wording classify_wordings[];
extern const size_t classify_wording_count;

/* "contextOverflowPatterns", ... */
const char *classify_list_name(enum classify_list_id list);

/* The TEXT row whose value is value[0..n) (ASCII, without regard to case),
 * or NULL. */
const struct classify_typed *classify_typed_find(const char *value, size_t n);
/* The GOOGLE_REASON / GOOGLE_STATUS row of exactly s, or NULL. */
const struct classify_typed *classify_google_reason(const char *s);
const struct classify_typed *classify_google_status(const char *s);

/* Where a typed value is read (the .def's step column): each is a list of
 * its own, looked up first row first. */
enum classify_typed_step {
	CLASSIFY_TYPED_TEXT,
	CLASSIFY_TYPED_GOOGLE_REASON,
	CLASSIFY_TYPED_GOOGLE_STATUS,
	CLASSIFY_TYPED_STEPS,
};

/* Every row of one step, in the .def's order; *n gets their number. For
 * the table's own checks (a value defined twice would leave a dead row). */
const struct classify_typed *classify_typed_rows(enum classify_typed_step step, size_t *n);

/* a[0..n) equals the NUL-terminated b, ASCII letters without regard to case. */
bool classify_ascii_ieq(const char *a, size_t n, const char *b);

#endif

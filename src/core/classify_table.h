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
	RULE_WEAK = 1u << 0,	/* gives way to typed retry evidence or the transport */
	RULE_WINDOW = 1u << 1,	/* a rate or quota window, not a broken server */
};

struct classify_wording {
	enum classify_list_id list;
	unsigned index;		/* its number in the list */
	unsigned flags;
	const char *pattern;
	const char *rule;	/* "text:<list>[<index>]" */
};

struct classify_typed {
	const char *value;
	const char *rule;	/* "<family>:<value>" */
	enum rule_class cls;
	unsigned flags;
};

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

/* a[0..n) equals the NUL-terminated b, ASCII letters without regard to case. */
bool classify_ascii_ieq(const char *a, size_t n, const char *b);

#endif

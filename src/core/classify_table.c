#include "core/classify_table.h"

#include <string.h>

/* Each inclusion of the .def keeps one kind of row: the row macros paste
 * the class and flags columns into RULE_ names, and TYPED hands a row to
 * TYPED_<step>, which keeps it or drops it. */

#define TYPED(step, family, value, class, flags, source)
#define WORDING(list, index, flags, source, pattern) \
	{ LIST_##list, index, RULE_##flags, pattern, "text:" #list "[" #index "]" },
const struct classify_wording classify_wordings[] = {
#include "core/classify_rules.def"
};
#undef WORDING
#undef TYPED

const size_t classify_wording_count = sizeof(classify_wordings) / sizeof(classify_wordings[0]);

#define WORDING(list, index, flags, source, pattern)
#define TYPED(step, family, value, class, flags, source) \
	TYPED_##step(family, value, RULE_##class, RULE_##flags)
#define TYPED_ROW(family, value, cls, flags) { family ":" value, sizeof(family), cls, flags },

#define TYPED_TEXT TYPED_ROW
#define TYPED_GOOGLE_REASON(family, value, cls, flags)
#define TYPED_GOOGLE_STATUS(family, value, cls, flags)
static const struct classify_typed text_rows[] = {
#include "core/classify_rules.def"
};
#undef TYPED_TEXT
#undef TYPED_GOOGLE_REASON

#define TYPED_TEXT(family, value, cls, flags)
#define TYPED_GOOGLE_REASON TYPED_ROW
static const struct classify_typed reason_rows[] = {
#include "core/classify_rules.def"
};
#undef TYPED_GOOGLE_REASON
#undef TYPED_GOOGLE_STATUS

#define TYPED_GOOGLE_REASON(family, value, cls, flags)
#define TYPED_GOOGLE_STATUS TYPED_ROW
static const struct classify_typed status_rows[] = {
#include "core/classify_rules.def"
};
#undef TYPED_TEXT
#undef TYPED_GOOGLE_REASON
#undef TYPED_GOOGLE_STATUS
#undef TYPED_ROW
#undef TYPED
#undef WORDING

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Names kept in the array, not pointed at: no relocation at start. */
static const char list_names[LIST_COUNT][24] = {
	[LIST_statusPatterns] = "statusPatterns",
	[LIST_typedPatterns] = "typedPatterns",
	[LIST_contextOverflowPatterns] = "contextOverflowPatterns",
	[LIST_limitZeroPatterns] = "limitZeroPatterns",
	[LIST_usageLimitPatterns] = "usageLimitPatterns",
	[LIST_perMinutePatterns] = "perMinutePatterns",
	[LIST_quotaWordPatterns] = "quotaWordPatterns",
	[LIST_nonRetryablePatterns] = "nonRetryablePatterns",
	[LIST_transportPatterns] = "transportPatterns",
	[LIST_rateLimitPatterns] = "rateLimitPatterns",
	[LIST_gatewayPatterns] = "gatewayPatterns",
	[LIST_transientPatterns] = "transientPatterns",
	[LIST_overloadPatterns] = "overloadPatterns",
	[LIST_badRequestPatterns] = "badRequestPatterns",
	[LIST_genericNeverPatterns] = "genericNeverPatterns",
	[LIST_noRetryPatterns] = "noRetryPatterns",
};

const char *classify_list_name(enum classify_list_id list)
{
	return (unsigned)list < LIST_COUNT ? list_names[list] : "?";
}

bool classify_ascii_ieq(const char *a, size_t n, const char *b)
{
	size_t k = 0;

	for (; k < n && b[k] != '\0'; k++) {
		int x = (unsigned char)a[k], y = (unsigned char)b[k];

		if (x >= 'A' && x <= 'Z')
			x += 'a' - 'A';
		if (y >= 'A' && y <= 'Z')
			y += 'a' - 'A';
		if (x != y)
			return false;
	}
	return k == n && b[k] == '\0';
}

const struct classify_typed *classify_typed_find(const char *value, size_t n)
{
	for (size_t t = 0; t < COUNT(text_rows); t++)
		if (classify_ascii_ieq(value, n, classify_typed_value(&text_rows[t])))
			return &text_rows[t];
	return NULL;
}

static const struct classify_typed *find_exact(const struct classify_typed *rows, size_t n,
					       const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, classify_typed_value(&rows[i])) == 0)
			return &rows[i];
	return NULL;
}

const struct classify_typed *classify_google_reason(const char *s)
{
	return find_exact(reason_rows, COUNT(reason_rows), s);
}

const struct classify_typed *classify_google_status(const char *s)
{
	return find_exact(status_rows, COUNT(status_rows), s);
}

const struct classify_typed *classify_typed_rows(enum classify_typed_step step, size_t *n)
{
	switch (step) {
	case CLASSIFY_TYPED_TEXT:
		*n = COUNT(text_rows);
		return text_rows;
	case CLASSIFY_TYPED_GOOGLE_REASON:
		*n = COUNT(reason_rows);
		return reason_rows;
	case CLASSIFY_TYPED_GOOGLE_STATUS:
		*n = COUNT(status_rows);
		return status_rows;
	default:
		*n = 0;
		return NULL;
	}
}

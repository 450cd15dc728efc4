/* settings_table — the table of known keys: one row per key with its type,
 * range and default; the checks of a value, or of a whole layer, against
 * the rows; and the row nearest to a name that is none ("did you mean").
 * Private to the settings module (core/settings*.c): everyone else asks
 * through core/settings.h (settings_check, settings_known, settings_suggest,
 * settings_check_file, settings_default_*), which the settings object
 * answers from here. Pure but for settings_table_check_file, which reads
 * through core/settings_file.h.
 *
 * Every sentence a check leaves in err names the key and quotes what it
 * got: "retry.maxRetries must be an integer from 0 to 1000 (got \"x\")",
 * "unknown setting \"retry.jiter\" (did you mean retry.jitter?)". */
#ifndef RETRYD_SETTINGS_TABLE_H
#define RETRYD_SETTINGS_TABLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum settings_rule_kind {
	SETTINGS_RULE_OBJECT,
	SETTINGS_RULE_BOOL,
	SETTINGS_RULE_INT,          /* an integer from min to max */
	SETTINGS_RULE_ARRAY,
	SETTINGS_RULE_STRINGS,      /* an array of strings */
	SETTINGS_RULE_SOME_STRINGS, /* a non-empty array of strings */
	SETTINGS_RULE_CHOICE,       /* one of the '|'-separated strings in `choices` */
	SETTINGS_RULE_DELAYS,       /* an array of integers from min to max */
	SETTINGS_RULE_BUDGET,       /* null, or {"maxTokens": (0, max], "tokenRatio": (0, max]} */
	SETTINGS_RULE_TEXT,         /* a non-empty string */
};

/* One known key: its type, range and default. The default is `number` for
 * BOOL and INT (none when `unset`), the string `text` for CHOICE and TEXT, and
 * the JSON text `text` for the others; a NULL text means no default (the
 * built-in layer may bring one). */
struct settings_rule {
	const char *key;
	enum settings_rule_kind kind;
	json_int_t min, max;
	const char *choices;
	bool unset;
	bool open;         /* SETTINGS_RULE_OBJECT whose members are names, not table keys */
	json_int_t number;
	const char *text;
};

/* The rows, in the table's order: a section's own row comes before its
 * members, and the defaults' keys keep this order. Static data. */
extern const struct settings_rule *const settings_table_rules;
extern const size_t settings_table_count;

/* Other agents' names for keys (pi 1.6's "retry.maxAgentDelayMs" for
 * "retry.maxDelayMs", oh-my-pi's "retry.waitForUsageReset" for
 * "retry.usageLimitWait"), for a value set by its name (--set, set
 * commands): *key becomes the key's name and *value (owned, replaced) its
 * value — a flag alias's boolean (oh-my-pi's true) the key's word
 * ("wait"). Returns 0, or -1 with err (*value untouched) when a flag alias
 * is not a boolean. */
int settings_table_unalias_value(const char **key, json_t **value, char *err, size_t errlen);
/* Renames every alias in layer (borrowed, changed) to its key, a flag's
 * value to the key's word. Returns 0, or -1 with err when an alias and its
 * key are both set, differently, or a flag alias is not a boolean. */
int settings_table_unalias(json_t *layer, char *err, size_t errlen);

/* The row of `key` (borrowed), or NULL when it is no row. */
const struct settings_rule *settings_table_find(const char *key);
/* Whether row `r` has a default of its own (else the built-in layer may
 * bring one). */
bool settings_table_has_default(const struct settings_rule *r);
/* The default of a row that has one, as a new reference (NULL: out of
 * memory). */
json_t *settings_table_default(const struct settings_rule *r);

/* Checks `value` (borrowed), found at dotted `key` ("" for a whole layer),
 * against every row for that key or beneath it; unknown names pass. Returns
 * 0, or -1 with the first problem in err. */
int settings_table_check_at(const char *key, const json_t *value, char *err, size_t errlen);

/* A whole layer (borrowed, an object): every name must be a row (or lie in
 * an open section), then each row's value is checked. Returns 0, or -1 with
 * the first problem in err. */
int settings_table_check_whole(const json_t *layer, char *err, size_t errlen);

/* What core/settings.h says of settings_suggest: a static string, or NULL. */
const char *settings_table_suggest(const char *key);

/* What core/settings.h says of settings_check_file: every problem of the
 * file at `path` (borrowed), a new reference (NULL when out of memory). */
json_t *settings_table_check_file(const char *path);

#endif

/* settings — JSON settings in layers: the table's defaults < the built-in
 * layer the caller hands in (pattern lists, provider entries) < the settings
 * file < --set overrides (this process only). Keys are dotted paths into
 * nested objects: "retry.maxRetries" is {"retry":{"maxRetries":...}}.
 *
 * Every known key is one row of the table in settings.c: its type, range and
 * default. Loading, --set, the error sentences and the defaults all come from
 * that row. Unknown keys are kept as they are, so a newer settings file still
 * loads. */
#ifndef RETRYD_SETTINGS_H
#define RETRYD_SETTINGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct settings {
	json_t *defaults;  /* owned: the table's defaults merged with the built-in layer */
	json_t *file;      /* owned: exactly what the file holds (an object) */
	json_t *overrides; /* owned: --set values */
	json_t *effective; /* owned: the merged view, rebuilt on every change */
	char *path;        /* owned: where the file is read from and saved to; may be NULL */
};

/* Loads the table's defaults, then `builtins` (borrowed, may be NULL: an
 * object of defaults the table leaves to other modules, see core/builtins.h),
 * then the file at `path` (borrowed), or when NULL the default path
 * $XDG_CONFIG_HOME/retryd/settings.json, else ~/.config/retryd/settings.json.
 * A missing file means defaults. Returns 0, or -1 with err naming the file and
 * why: "settings file /x/s.json: line 3 column 5: ..." or
 * "settings file /x/s.json: retry.maxRetries must be an integer from 0 to 1000 (got \"x\")".
 * On failure *self holds nothing that needs releasing. */
int settings_load(struct settings *self, const json_t *builtins, const char *path,
		  char *err, size_t errlen);
/* settings_load() without a built-in layer: the table's defaults only. */
int settings_init(struct settings *self, const char *path, char *err, size_t errlen);
void settings_release(struct settings *self);

/* One --set KEY=VALUE (borrowed). VALUE is parsed as JSON, else taken as a
 * string. Returns -1 with err naming the key: "--set retry.maxRetries=x: ...". */
int settings_override(struct settings *self, const char *assignment, char *err, size_t errlen);

/* Sets one override from a JSON value (value: takes ownership, also on error). */
int settings_override_value(struct settings *self, const char *key, json_t *value,
			    char *err, size_t errlen);

/* Checks one value (borrowed) found at `key` ("" for a whole layer) against
 * every row for that key or beneath it; unknown keys pass. err gets
 * "<key> must be ... (got ...)". */
int settings_check(const char *key, const json_t *value, char *err, size_t errlen);

/* Whether `key` (borrowed, e.g. "retry.maxRetries") is a row of the table. */
bool settings_known(const char *key);

/* The table's default of `key` (borrowed), which must be a row of that type
 * with a default (a programmer error otherwise): an integer, a boolean, or a
 * choice/text (a static string). */
int64_t settings_default_int(const char *key);
bool settings_default_bool(const char *key);
const char *settings_default_string(const char *key);

/* Effective values. Borrowed; NULL when the key is absent. */
json_t *settings_get(const struct settings *self, const char *key);
/* Typed getters for any key; `fallback` when absent or of another type. */
int64_t settings_int(const struct settings *self, const char *key, int64_t fallback);
bool settings_bool(const struct settings *self, const char *key, bool fallback);
const char *settings_string(const struct settings *self, const char *key, const char *fallback);
/* Typed getters for keys of the table with a default: the effective value,
 * which the table guarantees is of the key's type (else the default).
 * The string is borrowed from the settings. */
int64_t settings_get_int(const struct settings *self, const char *key);
bool settings_get_bool(const struct settings *self, const char *key);
const char *settings_get_string(const struct settings *self, const char *key);

/* Sets `key` to `value` (takes ownership, also on error) in the file layer,
 * drops any override of that key, rebuilds the effective view, and writes the
 * file atomically (temp file in the same directory + rename; parent
 * directories created; every other key kept as it was in the file). On a
 * write failure the new value still applies in memory; returns -1 with err
 * saying what could not be written and why. */
int settings_persist(struct settings *self, const char *key, json_t *value, char *err, size_t errlen);

#endif

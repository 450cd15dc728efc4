/* settings — JSON settings in three layers: built-in defaults < the settings
 * file < --set overrides (this process only). Keys are dotted paths into
 * nested objects: "retry.maxRetries" is {"retry":{"maxRetries":...}}.
 *
 * Known keys are type- and range-checked (table in settings.c); unknown keys
 * are kept as they are, so a newer settings file still loads. */
#ifndef RETRYD_SETTINGS_H
#define RETRYD_SETTINGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct settings {
	json_t *defaults;  /* owned */
	json_t *file;      /* owned: exactly what the file holds (an object) */
	json_t *overrides; /* owned: --set values */
	json_t *effective; /* owned: the merged view, rebuilt on every change */
	char *path;        /* owned: where the file is read from and saved to; may be NULL */
};

/* Loads defaults and the file at `path` (borrowed), or when NULL the default
 * path $XDG_CONFIG_HOME/retryd/settings.json, else ~/.config/retryd/settings.json.
 * A missing file means defaults. Returns 0, or -1 with err naming the file and
 * why: "settings file /x/s.json: line 3 column 5: ..." or
 * "settings file /x/s.json: retry.maxRetries must be an integer >= 0 (got \"x\")".
 * On failure *self holds nothing that needs releasing. */
int settings_init(struct settings *self, const char *path, char *err, size_t errlen);
void settings_release(struct settings *self);

/* One --set KEY=VALUE (borrowed). VALUE is parsed as JSON, else taken as a
 * string. Returns -1 with err naming the key: "--set retry.maxRetries=x: ...". */
int settings_override(struct settings *self, const char *assignment, char *err, size_t errlen);

/* Sets one override from a JSON value (value: stolen, also on error). */
int settings_override_value(struct settings *self, const char *key, json_t *value,
			    char *err, size_t errlen);

/* Checks one known key's value (borrowed); unknown keys pass. err gets
 * "<key> must be ... (got ...)". */
int settings_check(const char *key, const json_t *value, char *err, size_t errlen);

/* Effective values. Borrowed; NULL when the key is absent. */
json_t *settings_get(const struct settings *self, const char *key);
/* Typed getters for keys the table guarantees; `fallback` when absent. */
int64_t settings_int(const struct settings *self, const char *key, int64_t fallback);
bool settings_bool(const struct settings *self, const char *key, bool fallback);
const char *settings_string(const struct settings *self, const char *key, const char *fallback);

/* Sets `key` to `value` (stolen, also on error) in the file layer, drops any
 * override of that key, rebuilds the effective view, and writes the file
 * atomically (temp file in the same directory + rename; parent directories
 * created; every other key kept as it was in the file). On a write failure
 * the new value still applies in memory; returns -1 with err saying what
 * could not be written and why. */
int settings_persist(struct settings *self, const char *key, json_t *value, char *err, size_t errlen);

#endif

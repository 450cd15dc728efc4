/* settings — JSON settings in layers: the table's defaults < the built-in
 * layer the caller hands in (pattern lists, provider entries) < the settings
 * file < --set overrides (this process only). Keys are dotted paths into
 * nested objects: "retry.maxRetries" is {"retry":{"maxRetries":...}}.
 *
 * Every known key is one row of the table in core/settings_table.c: its
 * type, range and default. Loading, --set, the error sentences and the
 * defaults all come from that row. A name that is no row is an error
 * ("unknown setting \"retry.jiter\" (did you mean retry.jitter?)"), so a
 * typo never passes silently; only the open sections hold names of their
 * own: "providers" (provider entries, checked when one is chosen) and
 * "fleet.providerScopes" (provider name -> scope).
 *
 * This header is the whole module's face. Behind it, private to
 * core/settings*.c: settings_table.h (the rows and the checks),
 * settings_key.h (dotted keys in nested objects) and settings_file.h (the
 * file read whole and written atomically). */
#ifndef RETRYD_SETTINGS_H
#define RETRYD_SETTINGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct settings {
	json_t *defaults;  /* owned: the table's defaults merged with the built-in layer
			    * (sharing its subtrees; neither is changed once loaded) */
	json_t *builtins;  /* a reference: the built-in layer alone, or NULL */
	json_t *file;      /* owned: exactly what the file holds (an object) */
	json_t *overrides; /* owned: --set values */
	json_t *effective; /* owned: the merged view, rebuilt on every change */
	char *path;        /* owned: where the file is read from and saved to; may be NULL */
};

/* Loads the table's defaults, then `builtins` (a reference is kept, and the
 * caller must not change it after; may be NULL: an object of defaults the
 * table leaves to other modules, see core/builtins.h),
 * then the file at `path` (borrowed), or when NULL the default path
 * $XDG_CONFIG_HOME/retryd/settings.json, else ~/.config/retryd/settings.json.
 * A missing file means defaults. Returns 0, or -1 with err naming the file and
 * why: "settings file /x/s.json: line 3 column 5: ...",
 * "settings file /x/s.json: retry.maxRetries must be an integer from 0 to 1000 (got \"x\")"
 * or "settings file /x/s.json: unknown setting \"retry.jiter\" (did you mean retry.jitter?)".
 * On failure *self holds nothing that needs releasing. */
int settings_load(struct settings *self, const json_t *builtins, const char *path,
		  char *err, size_t errlen);
/* settings_load() without a built-in layer: the table's defaults only. */
int settings_init(struct settings *self, const char *path, char *err, size_t errlen);
void settings_release(struct settings *self);

/* One --set KEY=VALUE (borrowed). VALUE is parsed as JSON, else taken as a
 * string. Returns -1 with err naming the key: "--set retry.maxRetries=x: ...",
 * "--set retry.baseDelayMS=5: unknown setting ... (did you mean retry.baseDelayMs?)". */
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

/* The row nearest to `key` (borrowed), an unknown dotted key, for "did you
 * mean": a row equal but for case, else the row fewest edits away
 * (insert, delete, replace, swap two neighbours; case ignored) when that is
 * at most 2 or a third of the key's length; a section the key lies in is
 * not offered. A static string, or NULL when none is near. */
const char *settings_suggest(const char *key);

/* Every problem of the settings file at `path` (borrowed), none left out:
 * the file missing or unreadable, not JSON, not an object, then each
 * unknown name and each wrong value, one sentence each naming the key (no
 * file name). A new reference: an array of strings, empty when the file is
 * fine; NULL when out of memory. */
json_t *settings_check_file(const char *path);

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

/* Where a value comes from: the highest layer that holds the key (or, for
 * a section, anything in it). SETTINGS_ORIGIN_FILE includes what a command
 * persisted (set_auto_retry, set_retry_policy), which the file cannot tell
 * apart; SETTINGS_ORIGIN_OVERRIDE is --set and every for-this-process change
 * (--sim-plan, persist:false). */
enum settings_origin {
	SETTINGS_ORIGIN_NONE,
	SETTINGS_ORIGIN_DEFAULT,
	SETTINGS_ORIGIN_BUILTIN,
	SETTINGS_ORIGIN_FILE,
	SETTINGS_ORIGIN_OVERRIDE,
};

enum settings_origin settings_origin(const struct settings *self, const char *key);
/* "default", "built-in", "file", "--set" (or "unset"): a static string. */
const char *settings_origin_name(enum settings_origin origin);

/* key and value: borrowed for the call. */
typedef void (*settings_visit_cb)(void *ctx, const char *key, const json_t *value,
				  enum settings_origin origin);

/* Calls cb for each leaf row that has a value, in the table's order, and
 * for each member of an open section ("providers.openai"), by name, in the
 * section's place. Returns 0, or -1 when memory ran out part-way. */
int settings_foreach(const struct settings *self, settings_visit_cb cb, void *ctx);

#endif

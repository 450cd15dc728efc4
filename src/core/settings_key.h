/* settings_key — a dotted key as a path into nested JSON objects:
 * "retry.maxRetries" is {"retry":{"maxRetries":...}}. Private to the
 * settings module (core/settings*.c): the table finds the values it checks
 * this way, and the settings object reads and writes its layers this way.
 * Pure: no I/O. */
#ifndef RETRYD_SETTINGS_KEY_H
#define RETRYD_SETTINGS_KEY_H

#include <jansson.h>
#include <stdbool.h>

/* Whether `key` (borrowed) is a dotted key: non-empty names separated by
 * single dots. */
bool settings_key_valid(const char *key);

/* The value at dotted `key` under `root` (both borrowed); borrowed from
 * root, NULL when absent, when the key is not valid, when the path runs
 * through something that is not an object, or when out of memory. */
json_t *settings_key_get(const json_t *root, const char *key);

/* Sets dotted `key` (borrowed, valid) under the object `root`, replacing
 * whatever non-object lies on the way. value: takes ownership, also on
 * error. Returns 0, or -1 when out of memory. */
int settings_key_set(json_t *root, const char *key, json_t *value);

/* Removes dotted `key` (borrowed) from `root`; nothing when it is absent or
 * the path runs through something that is not an object. */
void settings_key_del(json_t *root, const char *key);

#endif

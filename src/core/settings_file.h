/* settings_file — the settings file on disk: where it is by default, reading
 * it whole into a JSON object, writing one atomically. Private to the
 * settings module (core/settings*.c). It knows no key: what a file holds is
 * checked against the table by the caller (core/settings_table.h). */
#ifndef RETRYD_SETTINGS_FILE_H
#define RETRYD_SETTINGS_FILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* $XDG_CONFIG_HOME/retryd/settings.json (only an absolute XDG_CONFIG_HOME
 * counts, as the XDG spec says), else ~/.config/retryd/settings.json: a new
 * string the caller frees; NULL when neither is set (or out of memory). */
char *settings_file_default_path(void);

/* The object the settings file at `path` (borrowed) holds, as a new
 * reference: {} for a blank file, and for a missing one when missing_ok.
 * NULL with err saying why, without the file's name: "line 3 column 5: ...",
 * "must hold a JSON object", or strerror's sentence. */
json_t *settings_file_read(const char *path, bool missing_ok, char *err, size_t errlen);

/* Writes `root` (borrowed) as pretty JSON to `path` (borrowed): a temp file
 * in the same directory, fsync, rename; missing parent directories are made
 * with mode 0700. Leaves no temp file behind. Returns 0, or -1 with errno
 * set. */
int settings_file_write(const char *path, const json_t *root);

#endif

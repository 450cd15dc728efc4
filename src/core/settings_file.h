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

/* The most a settings file may hold: it is read whole at every start and
 * every persist. */
#define SETTINGS_FILE_MAX_BYTES (16u << 20)
#define SETTINGS_FILE_MAX_TEXT "16 MiB"
/* How many 10 ms waits settings_file_update gives another writer's lock. */
#define SETTINGS_LOCK_TRIES 100

/* The file `path` (borrowed) names, symbolic links resolved (also a link
 * to a file not made yet): a new string, NULL when memory ran out. */
char *settings_file_target(const char *path);

/* The object the settings file at `path` (borrowed; a link is followed)
 * holds, as a new reference: {} for a blank file, and for a missing one
 * when missing_ok. Only a regular file of at most SETTINGS_FILE_MAX_BYTES
 * is read. NULL with err saying why, without the file's name: "line 3
 * column 5: ...", "must hold a JSON object", "not a regular file", "larger
 * than 16 MiB ...", or strerror's sentence. */
json_t *settings_file_read(const char *path, bool missing_ok, char *err, size_t errlen);

/* Writes `root` (borrowed) as pretty JSON to the target of `path`
 * (borrowed; a symbolic link stays a link): a temp file in the target's
 * directory, fsync, rename; the file keeps its mode; missing parent
 * directories are made with mode 0700. Leaves no temp file behind.
 * Returns 0, or -1 with errno set. */
int settings_file_write(const char *path, const json_t *root);

/* Changes root (borrowed: the file as it is now) in place; 0, or -1 with
 * err saying why nothing may be written. */
typedef int (*settings_file_change_fn)(json_t *root, void *ctx, char *err, size_t errlen);

/* Read, change, write, under the lock of a sibling lock file (".<name>.lock"
 * beside the target, kept): the file is read again as it is now, so edits
 * made since the start stay, change() changes it, and settings_file_write
 * writes it. A file that cannot be read, is no longer JSON, or that
 * change() refuses is left as it is. Returns 0, or -1 with err saying why
 * (the caller names the file). */
int settings_file_update(const char *path, settings_file_change_fn change, void *ctx, char *err,
			 size_t errlen);

#endif

/* cli_dir — the daemon's own directory for an agent CLI ({retrydDir} in a
 * profile): private (0700), under $XDG_RUNTIME_DIR (else /tmp), with the
 * files of the profile's ownRetriesOff written into it, and removed whole
 * when the provider goes (the CLI may keep its own state there: a CLI home
 * holds the conversation). */
#ifndef RETRYD_CLI_DIR_H
#define RETRYD_CLI_DIR_H

#include <jansson.h>
#include <stddef.h>

/* Makes retryd-NAME-XXXXXX and writes files ({relative name: text},
 * borrowed; may be NULL) into it, making the folders between. Returns the
 * path, a new string, or NULL with err (nothing is left behind). */
char *cli_dir_make(const char *name, const json_t *files, char *err, size_t errlen);

/* Removes path and everything in it; links are removed, never followed. */
void cli_dir_remove(const char *path);

#endif

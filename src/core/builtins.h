/* builtins — the settings layer that other modules define: the classifier's
 * pattern lists and the built-in provider entries (HTTP APIs and agent CLIs).
 * The caller (main.c, tests) hands it to settings_load(), so settings itself
 * knows no classifier or provider. */
#ifndef RETRYD_BUILTINS_H
#define RETRYD_BUILTINS_H

#include <jansson.h>

/* {"retry": {"retryablePatterns": [...], ...},
 *  "providers": {"openai": {...}, ..., "claude": {...}, ...}}
 * as a new reference, or NULL when out of memory. */
json_t *builtins_settings(void);

#endif

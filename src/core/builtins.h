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

/* builtins_settings() as this process's environment makes it: the built-in
 * HTTP providers' baseUrl from the variables their SDKs read
 * (provider/http/base_url.h), for the daemon and `retryd config`; tests
 * and checks of a file use builtins_settings(). */
json_t *builtins_settings_env(void);

#endif

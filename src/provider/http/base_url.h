/* base_url — where an HTTP provider's requests go: the check of a baseUrl,
 * and the base-URL environment variables the providers' own SDKs read
 * (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL,
 * OLLAMA_HOST, AZURE_OPENAI_ENDPOINT), which the built-in entries take in
 * place of their default (Azure's has none: the resource is the user's).
 *
 * Precedence, lowest first: the built-in default < the variable < a
 * providers.NAME.baseUrl in the settings file or --set. The variable is
 * applied to the built-in settings layer, so every layer above it still
 * wins. A variable that is set but malformed is kept as the entry's baseUrl,
 * so choosing that provider fails with a sentence that names the variable,
 * never sending a key to the default host instead. */
#ifndef RETRYD_BASE_URL_H
#define RETRYD_BASE_URL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Sets providers.NAME.baseUrl (providers: borrowed, changed in place; the
 * built-in entries as provider_http_builtins() makes them) from each
 * variable that is set and not empty, in the form the provider's SDK gives
 * it meaning: Gemini's gets "/v1beta" unless it names a version, Ollama's
 * "host[:port]" becomes "http://host:port/v1". Returns 0, or -1 when out of
 * memory. */
int base_url_apply_env(json_t *providers);

/* The variable that made `url` (borrowed) the baseUrl of the built-in
 * `name`: a static string, or NULL when no variable of that provider is set
 * or it makes another URL. */
const char *base_url_env_of(const char *name, const char *url);

/* The variable of the built-in `name` (a static string), or NULL. */
const char *base_url_env_name(const char *name);

/* Whether `url` is an http:// or https:// URL with a host and no blank or
 * control character. */
bool base_url_valid(const char *url);

#endif

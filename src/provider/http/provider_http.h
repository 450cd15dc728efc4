/* provider_http — LLM services over HTTP: OpenAI-compatible chat completions
 * and Anthropic messages, streamed over SSE through the http module.
 *
 * Configured in pi's models.json shape, inside settings:
 *   providers: {NAME: {api: "openai-completions"|"anthropic-messages",
 *                      baseUrl, apiKey?, apiKeyEnv?, headers?, models: [...]}}
 * apiKey and apiKeyEnv may each be one value or a list; several keys feed
 * the credential switch. Built in: openai, anthropic, openrouter, ollama.
 * Keys never leave this module: credentials are known to the rest of the
 * daemon by name only (the environment variable, or "NAME.apiKey[i]"). */
#ifndef RETRYD_PROVIDER_HTTP_H
#define RETRYD_PROVIDER_HTTP_H

#include <stddef.h>

#include "base/clock.h"
#include "io/http.h"
#include "provider/provider.h"
#include "core/settings.h"

/* The built-in providers, as a new reference, for the settings defaults. */
json_t *provider_http_builtins(void);

/* Checks providers.NAME (borrowed) and builds the provider. http, clock,
 * settings: borrowed, must outlive it. Returns NULL with err naming the key,
 * e.g. "providers.local.api must be \"openai-completions\" or
 * \"anthropic-messages\"". */
struct provider *provider_http_new(struct http_client *http, struct clock *clock,
				   const struct settings *settings, const char *name,
				   char *err, size_t errlen);

#endif

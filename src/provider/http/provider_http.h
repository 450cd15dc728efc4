/* provider_http — LLM services over HTTP: OpenAI-compatible chat completions
 * and Anthropic messages, streamed over SSE through the http module.
 *
 * Configured in pi's models.json shape, one entry of the settings' providers
 * (the caller looks it up and hands it in):
 *   providers: {NAME: {api: "openai-completions"|"anthropic-messages",
 *                      baseUrl, apiKey?, apiKeyEnv?, headers?, models: [...]}}
 * apiKey and apiKeyEnv may each be one value or a list; several keys feed
 * the credential switch. Built in: openai, anthropic, google, openrouter,
 * ollama, azure (base URLs from the SDKs' variables: base_url.h).
 * Keys never leave this module: credentials are known to the rest of the
 * daemon by name only (the environment variable, or "NAME.apiKey[i]"). */
#ifndef RETRYD_PROVIDER_HTTP_H
#define RETRYD_PROVIDER_HTTP_H

#include <stddef.h>

#include "base/clock.h"
#include "io/http.h"
#include "provider/provider.h"

/* What the caller reads from the settings for one provider. */
struct provider_http_config {
	const char *name;          /* borrowed: NAME of providers.NAME */
	const json_t *entry;       /* borrowed: providers.NAME */
	long connect_timeout_ms;   /* http.connectTimeoutMs */
	long idle_timeout_ms;      /* http.idleTimeoutMs */
};

/* The built-in providers, as a new reference, for the built-in settings
 * layer (core/builtins.c). */
json_t *provider_http_builtins(void);

/* Checks config->entry and builds the provider. config: borrowed for the
 * call (the provider copies what it keeps). http, clock: borrowed, must
 * outlive it. Returns NULL with err naming the key, e.g.
 * "providers.local.api must be \"openai-completions\" or \"anthropic-messages\"". */
struct provider *provider_http_new(struct http_client *http, struct clock *clock,
				   const struct provider_http_config *cfg, char *err, size_t errlen);

#endif

#include "core/builtins.h"

#include <stdbool.h>

#include "core/classify.h"
#include "provider/cli/cli_profile.h"
#include "provider/http/base_url.h"
#include "provider/http/provider_http.h"

static json_t *settings_layer(bool env)
{
	json_t *patterns = classify_defaults();
	json_t *http = provider_http_builtins();
	json_t *clis = cli_profile_builtins();
	json_t *layer = NULL;

	if (patterns == NULL || http == NULL || clis == NULL || json_object_update(http, clis) < 0)
		goto out;
	if (env && base_url_apply_env(http) != 0)
		goto out;
	layer = json_pack("{s:O, s:O}", "retry", patterns, "providers", http);
out:
	json_decref(patterns);
	json_decref(http);
	json_decref(clis);
	return layer;
}

json_t *builtins_settings(void)
{
	return settings_layer(false);
}

json_t *builtins_settings_env(void)
{
	return settings_layer(true);
}

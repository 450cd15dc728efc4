#include "core/builtins.h"

#include "core/classify.h"
#include "provider/cli/cli_profile.h"
#include "provider/http/provider_http.h"

json_t *builtins_settings(void)
{
	json_t *patterns = classify_defaults();
	json_t *http = provider_http_builtins();
	json_t *clis = cli_profile_builtins();
	json_t *layer = NULL;

	if (patterns == NULL || http == NULL || clis == NULL || json_object_update(http, clis) < 0)
		goto out;
	layer = json_pack("{s:O, s:O}", "retry", patterns, "providers", http);
out:
	json_decref(patterns);
	json_decref(http);
	json_decref(clis);
	return layer;
}

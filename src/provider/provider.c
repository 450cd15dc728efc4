#include "provider/provider.h"

#include <string.h>

json_t *provider_model(const struct provider *self, const char *id)
{
	size_t i;
	json_t *m;

	json_array_foreach(self->models, i, m) {
		const char *mid = json_string_value(json_object_get(m, "id"));

		if (mid != NULL && strcmp(mid, id) == 0)
			return m;
	}
	return NULL;
}

json_t *provider_models_from(const json_t *list)
{
	json_t *out = json_array();
	size_t i;
	json_t *m;

	json_array_foreach(list, i, m) {
		if (json_is_string(m))
			json_array_append_new(out, json_pack("{s:O}", "id", m));
		else if (json_is_object(m) && json_is_string(json_object_get(m, "id")))
			json_array_append_new(out, json_deep_copy(m));
	}
	return out;
}

const char *stop_reason_name(enum stop_reason reason)
{
	switch (reason) {
	case STOP_STOP: return "stop";
	case STOP_LENGTH: return "length";
	case STOP_TOOL_USE: return "toolUse";
	case STOP_ERROR: return "error";
	case STOP_ABORTED: return "aborted";
	}
	return "error";
}

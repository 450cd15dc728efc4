#include "core/thinking.h"

#include <string.h>

const char *const thinking_levels[THINKING_LEVEL_COUNT + 1] = {
	"off", "minimal", "low", "medium", "high", "xhigh", NULL,
};

static int level_index(const char *level)
{
	for (int i = 0; level != NULL && i < THINKING_LEVEL_COUNT; i++)
		if (strcmp(thinking_levels[i], level) == 0)
			return i;
	return -1;
}

const char *thinking_level_name(const char *level)
{
	int i = level_index(level);

	return i < 0 ? NULL : thinking_levels[i];
}

bool thinking_model_reasons(const json_t *model)
{
	return json_is_true(json_object_get(model, "reasoning"));
}

bool thinking_allowed(const json_t *model, const char *level)
{
	int i = level_index(level);
	const json_t *mapped;

	if (i < 0)
		return false;
	if (!thinking_model_reasons(model))
		return i == 0;
	mapped = json_object_get(json_object_get(model, "thinkingLevelMap"), thinking_levels[i]);
	if (json_is_null(mapped))
		return false;
	/* xhigh is opt-in: a model says what it maps to. */
	return strcmp(thinking_levels[i], "xhigh") != 0 || mapped != NULL;
}

static const char *first_allowed(const json_t *model)
{
	for (int i = 0; i < THINKING_LEVEL_COUNT; i++)
		if (thinking_allowed(model, thinking_levels[i]))
			return thinking_levels[i];
	return "off";
}

const char *thinking_clamp(const json_t *model, const char *level)
{
	int want = level_index(level);

	if (want < 0)
		return first_allowed(model);
	for (int i = want; i < THINKING_LEVEL_COUNT; i++)
		if (thinking_allowed(model, thinking_levels[i]))
			return thinking_levels[i];
	for (int i = want - 1; i >= 0; i--)
		if (thinking_allowed(model, thinking_levels[i]))
			return thinking_levels[i];
	return "off";
}

const char *thinking_next(const json_t *model, const char *level)
{
	int at = level_index(level);

	if (!thinking_model_reasons(model))
		return NULL;
	for (int step = 1; step <= THINKING_LEVEL_COUNT; step++) {
		int i = ((at < 0 ? -1 : at) + step) % THINKING_LEVEL_COUNT;

		if (i < 0)
			i += THINKING_LEVEL_COUNT;
		if (thinking_allowed(model, thinking_levels[i]))
			return thinking_levels[i];
	}
	return "off";
}

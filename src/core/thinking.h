/* thinking — pi's thinking levels and what a model allows of them.
 *
 * The levels, in order: "off", "minimal", "low", "medium", "high", "xhigh".
 * A model (a providers.<name>.models[] entry, as in pi's models.json)
 * allows only "off" unless it declares "reasoning": true; then every level
 * but "xhigh", minus those its "thinkingLevelMap" maps to null, and "xhigh"
 * only when that map names it (pi's getSupportedThinkingLevels). Pure: the
 * answers are static strings. */
#ifndef RETRYD_THINKING_H
#define RETRYD_THINKING_H

#include <jansson.h>
#include <stdbool.h>

#define THINKING_LEVEL_COUNT 6

/* The levels in order, NULL-terminated. */
extern const char *const thinking_levels[THINKING_LEVEL_COUNT + 1];

/* The static name equal to level (borrowed), or NULL when it is not one. */
const char *thinking_level_name(const char *level);

/* model: borrowed; NULL (a model nobody described) reasons not. */
bool thinking_model_reasons(const json_t *model);
bool thinking_allowed(const json_t *model, const char *level);

/* The level itself when the model allows it, else the nearest allowed one
 * above it, else below it (pi's clampThinkingLevel); "off" for a model
 * without reasoning. level: borrowed (NULL or unknown: the lowest allowed). */
const char *thinking_clamp(const json_t *model, const char *level);

/* cycle_thinking_level: the allowed level after `level`, round to the
 * first; NULL when the model does not reason (pi answers null then). */
const char *thinking_next(const json_t *model, const char *level);

#endif

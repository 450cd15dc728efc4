/* api_formats — the wire formats retryd speaks, by pi's api name. The one
 * place that lists them: adding a format is a table (see api.h) and a line
 * here. */
#ifndef RETRYD_API_FORMATS_H
#define RETRYD_API_FORMATS_H

#include "provider/http/api.h"

/* The format called name ("openai-completions", "anthropic-messages"), a
 * constant table, or NULL for any other name (also for NULL). */
const struct api_format *api_formats_find(const char *name);

#endif

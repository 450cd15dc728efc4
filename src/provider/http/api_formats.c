#include "provider/http/api_formats.h"

#include <string.h>

#include "provider/http/api_anthropic.h"
#include "provider/http/api_gemini.h"
#include "provider/http/api_openai.h"
#include "provider/http/api_responses.h"

static const struct api_format *const formats[] = {
	&api_openai_format,
	&api_anthropic_format,
	&api_gemini_format,
	&api_responses_format,
	&api_azure_responses_format,
};

const struct api_format *api_formats_find(const char *name)
{
	if (name == NULL)
		return NULL;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (strcmp(formats[i]->name, name) == 0)
			return formats[i];
	return NULL;
}

/* message — reading pi message objects. */
#include <stdlib.h>
#include <string.h>

#include "retryd/client.h"

char *retryd_message_text(const json_t *message)
{
	json_t *content, *block;
	size_t i, total = 0;
	char *out;

	if (!json_is_object(message))
		return NULL;
	content = json_object_get(message, "content");
	if (json_is_string(content))
		return strdup(json_string_value(content));
	json_array_foreach(content, i, block) {
		const char *type = json_string_value(json_object_get(block, "type"));

		if (type != NULL && strcmp(type, "text") == 0)
			total += json_string_length(json_object_get(block, "text"));
	}
	out = malloc(total + 1);
	if (out == NULL)
		return NULL;
	total = 0;
	json_array_foreach(content, i, block) {
		const char *type = json_string_value(json_object_get(block, "type"));
		json_t *text = json_object_get(block, "text");

		if (type != NULL && strcmp(type, "text") == 0 && json_is_string(text)) {
			memcpy(out + total, json_string_value(text), json_string_length(text));
			total += json_string_length(text);
		}
	}
	out[total] = '\0';
	return out;
}

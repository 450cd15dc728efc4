/* api_openai — OpenAI chat completions, pi's api "openai-completions"
 * (also OpenRouter, Ollama and other compatible servers): the format's
 * table and the pure functions behind it (see api.h). */
#ifndef RETRYD_API_OPENAI_H
#define RETRYD_API_OPENAI_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "provider/http/api.h"

/* The format: POST <baseUrl>/chat/completions with "Authorization: Bearer
 * <key>"; the answer succeeds at a choice with a finish_reason or at
 * `data: [DONE]`. */
extern const struct api_format api_openai_format;

/* The request body, a new reference (NULL when messages is not an array,
 * model is NULL or memory runs out): {model, messages (api_messages()),
 * stream:true, stream_options:{include_usage:true}, max_completion_tokens
 * (only when max_tokens > 0)}; an image becomes {type:"image_url",
 * image_url:{url:"data:<mimeType>;base64,<data>"}}. messages: borrowed. */
json_t *api_openai_request(const json_t *messages, const char *model, int64_t max_tokens);

/* The everyday chunk read in place, without jansson (see jsonscan.h):
 * {"choices":[{"index":0,"delta":{"content":"..."},"finish_reason":null}]}
 * plus any other members, with "usage" and "error" absent or null and one
 * choice at most. Returns 1 and fills q (content: the first choice's text;
 * reason: its finish_reason) when data is such a chunk, 0 when it is
 * anything else (valid or not), which the decoder gives to jansson. data:
 * borrowed. Pure. */
int api_openai_quick(const char *data, size_t len, struct api_quick *q);

#endif

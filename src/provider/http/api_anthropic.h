/* api_anthropic — Anthropic messages, pi's api "anthropic-messages": the
 * format's table and the pure functions behind it (see api.h). */
#ifndef RETRYD_API_ANTHROPIC_H
#define RETRYD_API_ANTHROPIC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "provider/http/api.h"

/* The format: POST <baseUrl>/messages with "x-api-key: <key>" and
 * "anthropic-version: 2023-06-01"; the answer succeeds at message_stop. */
extern const struct api_format api_anthropic_format;

/* The API requires max_tokens: this is sent when the model names none. */
#define API_ANTHROPIC_DEFAULT_MAX_TOKENS 8192

/* The request body, a new reference (NULL when messages is not an array,
 * model is NULL or memory runs out): {model, max_tokens, messages
 * (api_messages()), stream:true}; max_tokens <= 0 sends
 * API_ANTHROPIC_DEFAULT_MAX_TOKENS; an image becomes {type:"image",
 * source:{type:"base64", media_type, data}}. messages: borrowed. */
json_t *api_anthropic_request(const json_t *messages, const char *model, int64_t max_tokens);

/* content_block_delta read in place, without jansson (see jsonscan.h):
 * {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"..."}}
 * plus any other members. Returns 1 and fills q (q->content is the text
 * when the delta's type is text_delta, else NULL; q->reason is not used)
 * when data is such an event, 0 when it is anything else (valid or not),
 * which the decoder gives to jansson. data: borrowed. Pure. */
int api_anthropic_quick(const char *data, size_t len, struct api_quick *q);

#endif

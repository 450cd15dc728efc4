/* api_anthropic — Anthropic messages, pi's api "anthropic-messages": the
 * format's table and the pure functions behind it (see api.h). */
#ifndef RETRYD_API_ANTHROPIC_H
#define RETRYD_API_ANTHROPIC_H

#include <jansson.h>
#include <stdbool.h>
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
 * (api_messages_thinking()), stream:true}; max_tokens <= 0 sends
 * API_ANTHROPIC_DEFAULT_MAX_TOKENS; an image becomes {type:"image",
 * source:{type:"base64", media_type, data}}; an earlier thinking block goes
 * back as {type:"thinking", thinking, signature}, a redacted one as
 * {type:"redacted_thinking", data}, one without a signature as text (pi's
 * rules). For a model with reasoning, as pi: thinking level "off" (or NULL)
 * sends thinking:{type:"disabled"}; another level on an adaptive model
 * (api_anthropic_adaptive) thinking:{type:"adaptive", display:"summarized"}
 * and output_config:{effort}; else thinking:{type:"enabled", budget_tokens:
 * api_anthropic_budget(level), display:"summarized"} with max_tokens
 * raised to hold the budget (pi's adjustMaxTokensForThinking: the model's
 * maxTokens capped at 32000, plus the budget, within maxTokens; the budget
 * shrinks to leave 1024 for the answer). req: borrowed. */
json_t *api_anthropic_request_for(const struct api_request *req);
/* The same without thinking (a model without reasoning). */
json_t *api_anthropic_request(const json_t *messages, const char *model, int64_t max_tokens);

/* pi's thinking budget for a level: minimal 1024, low 2048, medium 8192,
 * high and xhigh 16384; 0 for "off", NULL or anything else. */
int64_t api_anthropic_budget(const char *level);
/* Whether the model id names a model pi gives adaptive thinking (Opus and
 * Sonnet 4.6, Opus 4.7). */
bool api_anthropic_adaptive(const char *model);

/* content_block_delta read in place, without jansson (see jsonscan.h):
 * {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"..."}}
 * plus any other members. Returns 1 and fills q (q->content is the text;
 * q->reason is not used) when data is such an event, 0 when it is anything
 * else (valid or not; a thinking_delta or signature_delta included), which
 * the decoder gives to jansson. data: borrowed. Pure. */
int api_anthropic_quick(const char *data, size_t len, struct api_quick *q);

#endif

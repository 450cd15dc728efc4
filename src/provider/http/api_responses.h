/* api_responses — OpenAI Responses, pi's api "openai-responses", and the
 * same format behind Azure's URL, "azure-openai-responses": the format
 * tables and the pure functions behind them (see api.h).
 *
 * The request, as pi builds it (openai-responses.js, azure-openai-
 * responses.js): {model, input, stream:true, store:false (not for Azure),
 * max_output_tokens (when the model has maxTokens), reasoning and include
 * (reasoning models only, see api_responses_effort)}. input holds, in
 * order:
 *   - a user message: {role:"user", content:[{type:"input_text",text} |
 *     {type:"input_image",detail:"auto",image_url:"data:<mime>;base64,<data>"}]};
 *   - an earlier assistant message (not one that ended in "error" or
 *     "aborted"), block by block: a thinking block of this model and api
 *     whose thinkingSignature is a JSON object (the reasoning item it came
 *     from) as that item; a thinking block of another model as text; a
 *     text block as {type:"message", role:"assistant", content:
 *     [{type:"output_text",text,annotations:[]}], status:"completed",
 *     id:"msg_<n>"} (n counts the messages sent before it).
 * Empty texts are left out, and a message left with nothing is skipped.
 *
 * The stream: response.output_text.delta and response.refusal.delta are
 * text; response.reasoning_summary_text.delta and
 * response.reasoning_text.delta are thinking (a reasoning item opens the
 * block when it is added, its summary parts are joined by "\n\n", and the
 * item's response.output_item.done closes it with the item, as compact
 * JSON, for its signature). The answer succeeds at response.completed
 * (status "completed": stop, or toolUse when the output holds a
 * function_call; "incomplete": length) or response.incomplete (length;
 * reason content_filter: an error). response.failed fails with
 * "<error.code>: <error.message>" (pi's text), an `error` event with
 * "<code>: <message>", a chunk with a top-level "error" object with
 * "<type or code>: <message>" — the code first, so the classifier reads it
 * as a typed failure. `data: [DONE]` ends the stream (truncated unless a
 * terminal event came first). Usage, from the terminal event, as pi counts
 * it: input = response.usage.input_tokens - input_tokens_details.
 * cached_tokens, cacheRead = cached_tokens, output = output_tokens
 * (reasoning included), total = total_tokens. */
#ifndef RETRYD_API_RESPONSES_H
#define RETRYD_API_RESPONSES_H

#include <jansson.h>
#include <stddef.h>

#include "provider/http/api.h"

/* "openai-responses": POST <baseUrl>/responses with "Authorization: Bearer
 * <key>". */
extern const struct api_format api_responses_format;

/* "azure-openai-responses": POST <baseUrl>/responses?api-version=<v> with
 * "api-key: <key>"; v is the provider entry's "apiVersion", else "v1"
 * (pi's default). As pi, a base URL on an Azure host (*.openai.azure.com,
 * *.cognitiveservices.azure.com) with no path or "/openai" gets
 * "/openai/v1". The body has no "store". */
extern const struct api_format api_azure_responses_format;

/* The reasoning effort a request sends, as pi maps it, or NULL when it
 * sends no "reasoning" (the model does not declare reasoning: true, or its
 * thinkingLevelMap maps "off" to null). pi's level ("off" ... "xhigh";
 * NULL: "off") is first clamped to the levels the model supports — all but
 * xhigh, less those its thinkingLevelMap maps to null; xhigh only when the
 * map names it — going up, then down; then mapped through the map ("off"
 * with no entry: "none"). *summary is set when the level is not "off": the
 * body then carries reasoning.summary "auto" and include
 * ["reasoning.encrypted_content"]. The model's entry is found by id in
 * req->options' "models". Borrowed from req or static. */
const char *api_responses_effort(const struct api_request *req, bool *summary);

/* The everyday chunk read in place, without jansson (see jsonscan.h):
 * {"type":"response.output_text.delta", ..., "delta":"..."} with any other
 * members, "error" absent or null. Returns 1 and fills q (content: the
 * delta when it is a string; never a reason) when data is such a chunk, 0
 * when it is anything else (valid or not), which the decoder gives to
 * jansson. data: borrowed. Pure. */
int api_responses_quick(const char *data, size_t len, struct api_quick *q);

#endif

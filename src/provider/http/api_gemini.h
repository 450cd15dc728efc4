/* api_gemini — Google's Gemini API, pi's api "google-generative-ai": the
 * format's table and the pure functions behind it (see api.h).
 *
 * The request is what pi's google.js builds through @google/genai; the
 * stream is one GenerateContentResponse per SSE data line. */
#ifndef RETRYD_API_GEMINI_H
#define RETRYD_API_GEMINI_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "provider/http/api.h"

/* The format: POST <baseUrl>/models/<model>:streamGenerateContent?alt=sse
 * with "x-goog-api-key: <key>" (api_gemini_url). The answer succeeds at a
 * candidate with a finishReason: STOP → stop, MAX_TOKENS → length, any
 * other (SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII,
 * MALFORMED_FUNCTION_CALL, OTHER, ...) → an error the classifier never
 * retries ("Gemini stopped the answer (finish reason: SAFETY): ..."); a
 * promptFeedback.blockReason ends it the same way. A stream that ends
 * without a finishReason is truncated (API_TRUNCATED, retried).
 *
 * Parts: {text} is text, {text, thought:true} thinking; a thought part's
 * thoughtSignature closes its thinking block with that signature (Gemini
 * signs the part it belongs to; a signature on a text part has no place in
 * the sink and is dropped). Usage is read from the chunk that carries the
 * finishReason, or from one with no candidates (Gemini repeats its running
 * counts in every chunk; the last holds the totals), as pi counts it:
 * input = promptTokenCount - cachedContentTokenCount, output =
 * candidatesTokenCount + thoughtsTokenCount. An {"error": google.rpc.Status}
 * data line fails the attempt with "<code> <STATUS>: <message>" and sets
 * error_object, so the provider hands the Status to the classifier. */
extern const struct api_format api_gemini_format;

/* The base URL pi's built-in google provider uses. */
#define API_GEMINI_BASE_URL "https://generativelanguage.googleapis.com/v1beta"
/* pi caps the output tokens it asks for at this (buildBaseOptions). */
#define API_GEMINI_MAX_OUTPUT_TOKENS 32000

/* The request body, a new reference (NULL when messages is not an array,
 * model is NULL or memory runs out):
 *   {contents: [{role: "user"|"model", parts: [...]}],
 *    generationConfig?: {maxOutputTokens?, thinkingConfig?}}
 * User parts are {text} and {inlineData:{mimeType, data}}; assistant parts
 * {text} and, for a thinking block of the same model and api, {thought:true,
 * text, thoughtSignature?} (a signature only when it is base64, as pi checks;
 * a thinking block of another model goes as plain text). Empty texts are
 * left out, a message left with no parts is skipped, assistant turns that
 * ended in "error" or "aborted" are not sent (pi's rules). maxOutputTokens
 * is min(max_tokens, API_GEMINI_MAX_OUTPUT_TOKENS) when max_tokens > 0.
 * thinkingConfig only for a reasoning model (api_gemini_thinking). req:
 * borrowed. */
json_t *api_gemini_request(const struct api_request *req);

/* The thinkingConfig pi sends for this model and thinking level (NULL:
 * "off"), a new reference, or NULL when none is sent (not a reasoning
 * model). As pi's google.js maps it: "xhigh" is "high"; Gemini 3 Pro/Flash
 * and Gemma 4 take {includeThoughts:true, thinkingLevel: "MINIMAL"|"LOW"|
 * "MEDIUM"|"HIGH"}; others {includeThoughts:true, thinkingBudget} with the
 * 2.5 Pro / Flash / Flash-Lite budgets (minimal, low, medium, high: 128 /
 * 512, 2048, 8192, 32768 / 24576), -1 (dynamic) for other models. Level
 * "off" turns thinking down as far as the model allows: {thinkingBudget:0},
 * Gemini 3 Pro {thinkingLevel:"LOW"}, Gemini 3 Flash and Gemma 4
 * {thinkingLevel:"MINIMAL"}. model: borrowed. */
json_t *api_gemini_thinking(const char *model, const char *level, bool reasoning);

/* The request URL: <base_url>/models/<model>:streamGenerateContent?alt=sse,
 * the model id percent-escaped (a leading "models/" or "tunedModels/" is
 * kept as the resource name, as @google/genai does). Returns 0, or -1 when
 * it does not fit outlen or model is NULL. */
int api_gemini_url(const struct api_request *req, const char *base_url, char *out, size_t outlen);

/* The everyday chunk read in place, without jansson (see jsonscan.h):
 * {"candidates":[{"content":{"parts":[{"text":"..."}],"role":"model"},
 * "index":0}], "usageMetadata":{...}, "modelVersion":..., "responseId":...}
 * with one candidate holding one plain text part (no thought, no
 * thoughtSignature), no finishReason, no promptFeedback and no error.
 * Returns 1 and fills q->content, 0 for anything else (valid or not),
 * which the decoder gives to jansson. data: borrowed. Pure. */
int api_gemini_quick(const char *data, size_t len, struct api_quick *q);

#endif

/* OpenAI chat completions ("openai-completions"): request bodies and
 * stream events (see api_openai.h). */
#include "provider/http/api_openai.h"

#include <string.h>

#include "base/errbuf.h"
#include "base/number.h"

/* ---- events -------------------------------------------------------------- */

static bool data_is_done(const struct sse_event *ev)
{
	const char *d = ev->data;
	size_t n = ev->data_len;

	while (n > 0 && (d[n - 1] == ' ' || d[n - 1] == '\t' || d[n - 1] == '\r'))
		n--;
	return n == 6 && memcmp(d, "[DONE]", 6) == 0;
}

static void finish_reason(struct api_stream *self, const char *reason)
{
	if (strcmp(reason, "stop") == 0) {
		self->stop = STOP_STOP;
	} else if (strcmp(reason, "length") == 0) {
		self->stop = STOP_LENGTH;
	} else if (strcmp(reason, "tool_calls") == 0 || strcmp(reason, "function_call") == 0) {
		self->stop = STOP_TOOL_USE;
	} else if (strcmp(reason, "content_filter") == 0) {
		self->stop = STOP_ERROR;
		errbuf_set(self->error, sizeof(self->error),
			   "content_filter: the provider's content filter stopped the answer");
	} else {
		char r[64];

		self->stop = STOP_ERROR;
		api_clean_text(reason, strlen(reason), r, sizeof(r));
		errbuf_set(self->error, sizeof(self->error), "Unhandled stop reason: %s", r);
	}
	self->complete = true;
}

/* pi's counts: prompt_tokens includes the cached prompt (cached_tokens, or
 * DeepSeek's prompt_cache_hit_tokens) and the part written to the cache
 * (cache_write_tokens), which some proxies count in cached_tokens too; the
 * input is what is left. completion_tokens includes reasoning. A count the
 * report leaves out or gets wrong keeps its earlier value and counts 0 in
 * the differences. */
static void take_usage(struct api_stream *self, const json_t *usage)
{
	const json_t *details = json_object_get(usage, "prompt_tokens_details");
	const json_t *cached = json_object_get(details, "cached_tokens");
	int64_t prompt, read = 0, write = 0;
	bool has_read, has_write;

	if (cached == NULL || json_is_null(cached))
		cached = json_object_get(usage, "prompt_cache_hit_tokens");
	has_read = api_stream_count(self, cached, &read);
	has_write = api_stream_count(self, json_object_get(details, "cache_write_tokens"), &write);
	if (write > 0)
		read = read > write ? read - write : 0;
	if (has_read)
		self->cache_read_tokens = read;
	if (has_write)
		self->cache_write_tokens = write;
	if (api_stream_count(self, json_object_get(usage, "prompt_tokens"), &prompt))
		self->input_tokens = number_clamp(prompt - read - write);
	api_stream_count(self, json_object_get(usage, "completion_tokens"), &self->output_tokens);
}

/* An in-stream error: {"error": {"message": ...}} (OpenAI, OpenRouter) or
 * {"error": "..."} (some compatible servers), as "<type or code>: <message>":
 * the type ("server_error", "rate_limit_exceeded") is what the classifier
 * can read. */
static int stream_error(struct api_stream *self, const json_t *err)
{
	char text[API_TEXT_MAX + 1], kind[64] = "";
	const json_t *m = json_is_object(err) ? json_object_get(err, "message") : err;
	const json_t *t = json_is_object(err) ? json_object_get(err, "type") : NULL;

	if (!json_is_string(t) && json_is_object(err))
		t = json_object_get(err, "code");
	if (json_is_string(t))
		api_clean_text(json_string_value(t), json_string_length(t), kind, sizeof(kind));
	if (m == NULL || json_is_null(m)) {
		m = err;
		kind[0] = '\0'; /* the JSON shown already holds it */
	}
	api_json_text(m, text, sizeof(text));
	if (kind[0] != '\0')
		return api_stream_failf(self, "%s: %s", kind, text[0] ? text : "unknown error");
	return api_stream_failf(self, "%s", text[0] ? text : "unknown error");
}

/* The choice with index 0 (we never ask for n > 1), or NULL. */
static json_t *first_choice(json_t *choices)
{
	json_t *c;
	size_t i;

	json_array_foreach(choices, i, c) {
		json_t *index = json_object_get(c, "index");

		if (json_is_object(c) && (index == NULL || json_integer_value(index) == 0))
			return c;
	}
	return NULL;
}

/* Where compatible servers put the reasoning, in pi's order of preference:
 * reasoning_content (DeepSeek, llama.cpp), reasoning (OpenRouter, vLLM),
 * reasoning_text. pi keeps the field's name as the block's signature. */
static const char *const reasoning_fields[] = { "reasoning_content", "reasoning",
						"reasoning_text" };

static bool reasoning_key(const char *key, size_t klen)
{
	for (size_t i = 0; i < sizeof(reasoning_fields) / sizeof(reasoning_fields[0]); i++)
		if (klen == strlen(reasoning_fields[i]) && memcmp(key, reasoning_fields[i], klen) == 0)
			return true;
	return false;
}

/* The first non-empty reasoning field of a delta, as pi reads it. */
static void take_reasoning(struct api_stream *self, const json_t *delta)
{
	for (size_t i = 0; i < sizeof(reasoning_fields) / sizeof(reasoning_fields[0]); i++) {
		const json_t *r = json_object_get(delta, reasoning_fields[i]);

		if (json_is_string(r) && json_string_length(r) > 0) {
			api_stream_thinking(self, json_string_value(r), json_string_length(r));
			if (self->thinking_open)
				self->thinking_signature = reasoning_fields[i];
			return;
		}
	}
}

/* The choice of a chunk, read in place: index 0 (or none), "delta" with
 * its "content", "finish_reason". Returns 0 or JSONSCAN_BAIL. */
static int quick_choice(struct jsonscan *js, struct api_quick *q)
{
	bool seen_index = false, seen_delta = false, seen_reason = false;
	const char *key;
	size_t klen;
	int rc;

	if (jsonscan_object(js) != 0)
		return JSONSCAN_BAIL;
	while ((rc = jsonscan_key(js, &key, &klen)) == 1) {
		if (JSONSCAN_IS(key, klen, "index")) {
			int64_t index;

			if (seen_index || jsonscan_int(js, &index) != 0 || index != 0)
				return JSONSCAN_BAIL;
			seen_index = true;
		} else if (JSONSCAN_IS(key, klen, "delta")) {
			if (seen_delta)
				return JSONSCAN_BAIL;
			seen_delta = true;
			if (jsonscan_null(js))
				continue;
			if (jsonscan_object(js) != 0)
				return JSONSCAN_BAIL;
			while ((rc = jsonscan_key(js, &key, &klen)) == 1) {
				if (JSONSCAN_IS(key, klen, "tool_calls") ||
				    JSONSCAN_IS(key, klen, "function_call")) {
					/* A tool call's piece: jansson's, which marks it. */
					if (!jsonscan_null(js))
						return JSONSCAN_BAIL;
				} else if (reasoning_key(key, klen)) {
					/* Reasoning text is jansson's; a null one
					 * (DeepSeek's content chunks) is nothing. */
					if (!jsonscan_null(js))
						return JSONSCAN_BAIL;
				} else if (!JSONSCAN_IS(key, klen, "content")) {
					if (jsonscan_skip(js) != 0)
						return JSONSCAN_BAIL;
				} else if (q->content != NULL ||
					   jsonscan_string_or_skip(js, &q->content, &q->content_len) != 0) {
					/* A second "content" is unusual: jansson decides. */
					return JSONSCAN_BAIL;
				}
			}
			if (rc != 0)
				return JSONSCAN_BAIL;
		} else if (JSONSCAN_IS(key, klen, "finish_reason")) {
			if (seen_reason)
				return JSONSCAN_BAIL;
			seen_reason = true;
			if (jsonscan_string_or_skip(js, &q->reason, &q->reason_len) != 0 ||
			    (q->reason != NULL && (q->reason_len >= sizeof(q->reason_buf) ||
						   memchr(q->reason, '\0', q->reason_len) != NULL)))
				return JSONSCAN_BAIL;
		} else if (jsonscan_skip(js) != 0) {
			return JSONSCAN_BAIL;
		}
	}
	return rc;
}

int api_openai_quick(const char *data, size_t len, struct api_quick *q)
{
	struct jsonscan js;
	bool seen_choices = false, seen_usage = false, seen_error = false;
	const char *key;
	size_t klen;
	int rc;

	if (api_quick_open(&js, data, len, q) != 0)
		return 0;
	while ((rc = jsonscan_key(&js, &key, &klen)) == 1) {
		if (JSONSCAN_IS(key, klen, "choices")) {
			if (seen_choices || jsonscan_array(&js) != 0)
				return 0;
			seen_choices = true;
			if ((rc = jsonscan_more(&js)) == 1) {
				/* One choice, as we ask for; more is for jansson. */
				if (quick_choice(&js, q) != 0 || jsonscan_more(&js) != 0)
					return 0;
			} else if (rc != 0) {
				return 0;
			}
		} else if (JSONSCAN_IS(key, klen, "usage") || JSONSCAN_IS(key, klen, "error")) {
			bool *seen = key[0] == 'u' ? &seen_usage : &seen_error;

			/* Present and not null: read by the full decoder. */
			if (*seen || !jsonscan_null(&js))
				return 0;
			*seen = true;
		} else if (jsonscan_skip(&js) != 0) {
			return 0;
		}
	}
	return api_quick_close(&js, rc, q);
}

static int event_tree(struct api_stream *self, const struct sse_event *ev)
{
	json_t *root, *choice, *delta, *calls, *content, *reason, *usage, *err;
	int rc = 0;

	if (data_is_done(ev)) {
		api_stream_begin(self);
		self->complete = true;
		self->done = true;
		return 0;
	}
	root = api_stream_parse(self, ev);
	if (root == NULL)
		return -1;
	api_stream_begin(self);
	err = json_object_get(root, "error");
	if (err != NULL && !json_is_null(err)) {
		rc = stream_error(self, err);
		goto out;
	}
	usage = json_object_get(root, "usage");
	if (json_is_object(usage))
		take_usage(self, usage);
	choice = first_choice(json_object_get(root, "choices"));
	if (choice == NULL)
		goto out;
	delta = json_object_get(choice, "delta");
	content = json_object_get(delta, "content");
	if (json_is_string(content) && !self->complete)
		api_stream_text(self, json_string_value(content), json_string_length(content));
	if (!self->complete)
		take_reasoning(self, delta);
	calls = json_object_get(delta, "tool_calls");
	if (json_array_size(calls) > 0 || json_is_object(json_object_get(delta, "function_call")))
		self->tool_call_begun = true;
	reason = json_object_get(choice, "finish_reason");
	if (json_is_string(reason) && !self->complete)
		finish_reason(self, json_string_value(reason));
out:
	json_decref(root);
	return rc;
}

/* ---- requests -------------------------------------------------------------- */

static json_t *image_part(const json_t *mime, const json_t *data)
{
	json_t *url = json_sprintf("data:%s;base64,%s", json_string_value(mime), json_string_value(data));

	if (url == NULL)
		return NULL;
	return json_pack("{s:s, s:{s:o}}", "type", "image_url", "image_url", "url", url);
}

json_t *api_openai_request(const json_t *messages, const char *model, int64_t max_tokens)
{
	json_t *out, *body;

	if (model == NULL)
		return NULL;
	out = api_messages(messages, image_part);
	if (out == NULL)
		return NULL;
	body = json_pack("{s:s, s:o, s:b, s:{s:b}}", "model", model, "messages", out, "stream", 1,
			 "stream_options", "include_usage", 1);
	if (body != NULL && max_tokens > 0 &&
	    json_object_set_new(body, "max_completion_tokens", json_integer(max_tokens)) != 0) {
		json_decref(body);
		return NULL;
	}
	return body;
}

/* ---- the table --------------------------------------------------------------- */

/* pi's reasoning knob for chat completions, on a model that declares
 * reasoning: the level (already clamped by the session) through the model's
 * thinkingLevelMap, as `reasoning_effort` (OpenAI's style) or OpenRouter's
 * `reasoning: {effort}`; "off" sends the map's "off" value when it names
 * one (OpenRouter: "none" unless the map says null). */
static int add_reasoning(json_t *body, const struct api_request *req)
{
	const json_t *map = json_object_get(api_model_entry(req), "thinkingLevelMap");
	const char *level = req->thinking_level ? req->thinking_level : "off";
	const json_t *mapped = json_object_get(map, level);
	const char *base = json_string_value(json_object_get(req->options, "baseUrl"));
	bool openrouter = base != NULL && strstr(base, "openrouter.ai") != NULL;
	const char *effort;

	if (!req->reasoning)
		return 0;
	if (strcmp(level, "off") == 0) {
		if (json_is_null(mapped) && openrouter)
			return 0;
		effort = json_is_string(mapped) ? json_string_value(mapped) : openrouter ? "none" : NULL;
		if (effort == NULL)
			return 0;
	} else {
		effort = json_is_string(mapped) ? json_string_value(mapped) : level;
	}
	if (openrouter)
		return json_object_set_new(body, "reasoning", json_pack("{s:s}", "effort", effort));
	return json_object_set_new(body, "reasoning_effort", json_string(effort));
}

static json_t *request(const struct api_request *req)
{
	json_t *body = api_openai_request(req->messages, req->model, req->max_tokens);

	if (body != NULL && add_reasoning(body, req) != 0) {
		json_decref(body);
		return NULL;
	}
	return body;
}

static int quick(const struct sse_event *ev, struct api_quick *q)
{
	return api_openai_quick(ev->data, ev->data_len, q);
}

const struct api_format api_openai_format = {
	.name = "openai-completions",
	.path = "/chat/completions",
	.key_header = "Authorization",
	.key_prefix = "Bearer ",
	.fixed_header = NULL,
	.request = request,
	.quick = quick,
	.event_tree = event_tree,
	.finish = finish_reason,
};

/* OpenAI Responses ("openai-responses", "azure-openai-responses"): request
 * bodies, Azure's URL and stream events (see api_responses.h). */
#include "provider/http/api_responses.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/number.h"

/* api_stream.format_flags. */
enum {
	/* A reasoning summary part ended: the next part's text starts with
	 * "\n\n" (pi joins the parts so). */
	SEPARATOR_OWED = 1u << 0,
};

/* v is a string equal to s, NUL bytes counted (a C comparison would take
 * "response.completed\u0000x" for the real thing; the quick reader does not). */
static bool str_is(const json_t *v, const char *s)
{
	return json_is_string(v) && json_string_length(v) == strlen(s) &&
	       memcmp(json_string_value(v), s, json_string_length(v)) == 0;
}

/* ---- events -------------------------------------------------------------- */

static void take_usage(struct api_stream *self, const json_t *response)
{
	const json_t *usage = json_object_get(response, "usage");

	const json_t *cached = json_object_get(json_object_get(usage, "input_tokens_details"),
					       "cached_tokens");
	int64_t input, read = 0;

	if (!json_is_object(usage))
		return;
	/* pi's counts: input_tokens includes the cached prompt; output_tokens
	 * includes reasoning; the total is the reported one. */
	if (api_stream_count(self, cached, &read))
		self->cache_read_tokens = read;
	if (api_stream_count(self, json_object_get(usage, "input_tokens"), &input))
		self->input_tokens = number_clamp(input - read);
	api_stream_count(self, json_object_get(usage, "output_tokens"), &self->output_tokens);
	api_stream_count(self, json_object_get(usage, "total_tokens"), &self->total_tokens);
}

/* "<code>: <message>", the code first so the classifier reads it as a
 * typed failure ("server_error: ...", "rate_limit_exceeded: ..."). Without
 * a code: "<no_code>: <message>", or the message alone when no_code is
 * NULL; with neither, the JSON of whole. */
static int fail_coded(struct api_stream *self, const json_t *code, const json_t *message,
		      const json_t *whole, const char *no_code, const char *no_message)
{
	char c[64] = "", m[API_TEXT_MAX + 1] = "";

	/* A number is a code too ("429: ..."): the classifier reads it as a status. */
	if (json_is_string(code) || json_is_integer(code))
		api_json_text(code, c, sizeof(c));
	if (message != NULL && !json_is_null(message))
		api_json_text(message, m, sizeof(m));
	if (c[0] == '\0' && m[0] == '\0') {
		if (whole != NULL)
			api_json_text(whole, m, sizeof(m));
		return api_stream_failf(self, "%s", m[0] ? m : "unknown error");
	}
	if (c[0] == '\0' && no_code == NULL)
		return api_stream_failf(self, "%s", m);
	return api_stream_failf(self, "%s: %s", c[0] ? c : no_code, m[0] ? m : no_message);
}

/* response.failed, worded as pi words it. */
static int failed(struct api_stream *self, const json_t *response)
{
	const json_t *err = json_object_get(response, "error");
	const json_t *reason = json_object_get(json_object_get(response, "incomplete_details"), "reason");

	take_usage(self, response);
	if (json_is_object(err))
		return fail_coded(self, json_object_get(err, "code"), json_object_get(err, "message"), NULL,
				  "unknown", "no message");
	if (json_is_string(reason)) {
		char r[64];

		api_json_text(reason, r, sizeof(r));
		return api_stream_failf(self, "incomplete: %s", r);
	}
	return api_stream_failf(self, "Unknown error (no error details in response)");
}

static void set_error(struct api_stream *self, const char *prefix, const json_t *v)
{
	char r[64];

	self->stop = STOP_ERROR;
	api_json_text(v, r, sizeof(r));
	errbuf_set(self->error, sizeof(self->error), "%s%s", prefix, r);
}

/* response.completed: pi maps its status. */
static void completed(struct api_stream *self, const json_t *response)
{
	const json_t *status = json_object_get(response, "status");
	const json_t *item;
	size_t i;

	take_usage(self, response);
	if (status == NULL || json_is_null(status) || str_is(status, "completed") ||
	    str_is(status, "in_progress") || str_is(status, "queued")) {
		self->stop = STOP_STOP;
	} else if (str_is(status, "incomplete")) {
		self->stop = STOP_LENGTH;
	} else if (str_is(status, "failed") || str_is(status, "cancelled")) {
		/* pi's words for it. */
		self->stop = STOP_ERROR;
		errbuf_set(self->error, sizeof(self->error), "An unknown error occurred");
	} else {
		set_error(self, "Unhandled stop reason: ", status);
	}
	json_array_foreach(json_object_get(response, "output"), i, item) {
		if (self->stop == STOP_STOP && str_is(json_object_get(item, "type"), "function_call"))
			self->stop = STOP_TOOL_USE;
	}
	self->complete = true;
	self->done = true;
}

/* response.incomplete: the answer is whole but cut short. */
static void incomplete(struct api_stream *self, const json_t *response)
{
	const json_t *reason = json_object_get(json_object_get(response, "incomplete_details"), "reason");

	take_usage(self, response);
	if (str_is(reason, "content_filter")) {
		self->stop = STOP_ERROR;
		errbuf_set(self->error, sizeof(self->error),
			   "content_filter: the provider's content filter stopped the answer");
	} else {
		self->stop = STOP_LENGTH;
	}
	self->complete = true;
	self->done = true;
}

static void reasoning_done(struct api_stream *self, const json_t *item)
{
	char *sig;

	self->format_flags &= ~(unsigned)SEPARATOR_OWED;
	if (!self->thinking_open)
		return;
	/* pi keeps the whole item as the block's signature and sends it back
	 * as an input item. */
	sig = json_dumps(item, JSON_COMPACT);
	api_stream_thinking_end(self, sig, sig != NULL ? strlen(sig) : 0, false);
	free(sig);
}

static void thinking_delta(struct api_stream *self, const json_t *delta, bool summary)
{
	if (!json_is_string(delta) || json_string_length(delta) == 0)
		return;
	if (summary && (self->format_flags & SEPARATOR_OWED) && self->thinking_open)
		api_stream_thinking(self, "\n\n", 2);
	if (summary)
		self->format_flags &= ~(unsigned)SEPARATOR_OWED;
	api_stream_thinking(self, json_string_value(delta), json_string_length(delta));
}

/* A chunk with a truthy top-level "error" (the OpenAI SDK throws on it):
 * OpenAI's {"message","type","code"} or a string. */
static bool truthy(const json_t *v)
{
	return v != NULL && !json_is_null(v) && !json_is_false(v);
}

static int chunk_error(struct api_stream *self, const json_t *err)
{
	const json_t *kind = json_object_get(err, "type");

	if (!json_is_string(kind))
		kind = json_object_get(err, "code");
	if (!json_is_object(err))
		return fail_coded(self, NULL, err, err, NULL, NULL);
	return fail_coded(self, kind, json_object_get(err, "message"), err, NULL, "unknown error");
}

/* `data: [DONE]`, which the OpenAI SDK takes for the end of any stream. */
static bool data_is_done(const struct sse_event *ev)
{
	const char *d = ev->data;
	size_t n = ev->data_len;

	while (n > 0 && (d[n - 1] == ' ' || d[n - 1] == '\t' || d[n - 1] == '\r'))
		n--;
	return n == 6 && memcmp(d, "[DONE]", 6) == 0;
}

static int event_tree(struct api_stream *self, const struct sse_event *ev)
{
	json_t *root;
	const json_t *type, *response, *err, *item;
	int rc = 0;

	/* The end of the body, as far as the sender is concerned: without
	 * response.completed before it the answer is truncated. */
	if (data_is_done(ev)) {
		api_stream_begin(self);
		self->done = true;
		return 0;
	}
	root = api_stream_parse(self, ev);
	if (root == NULL)
		return -1;
	api_stream_begin(self);
	err = json_object_get(root, "error");
	type = json_object_get(root, "type");
	response = json_object_get(root, "response");
	/* Where a resume of this response would start. */
	if (json_is_integer(json_object_get(root, "sequence_number")))
		self->last_seq = json_integer_value(json_object_get(root, "sequence_number"));
	if (json_is_string(json_object_get(response, "id")) &&
	    json_string_length(json_object_get(response, "id")) < sizeof(self->response_id))
		snprintf(self->response_id, sizeof(self->response_id), "%s",
			 json_string_value(json_object_get(response, "id")));
	item = json_object_get(root, "item");
	if (truthy(err)) {
		rc = chunk_error(self, err);
	} else if (str_is(type, "response.output_text.delta") || str_is(type, "response.refusal.delta")) {
		const json_t *delta = json_object_get(root, "delta");

		if (json_is_string(delta))
			api_stream_text(self, json_string_value(delta), json_string_length(delta));
	} else if (str_is(type, "response.reasoning_summary_text.delta")) {
		thinking_delta(self, json_object_get(root, "delta"), true);
	} else if (str_is(type, "response.reasoning_text.delta")) {
		thinking_delta(self, json_object_get(root, "delta"), false);
	} else if (str_is(type, "response.reasoning_summary_part.done")) {
		self->format_flags |= SEPARATOR_OWED;
	} else if (str_is(type, "response.output_item.added")) {
		const json_t *kind = json_object_get(item, "type");

		if (str_is(kind, "reasoning")) {
			self->format_flags &= ~(unsigned)SEPARATOR_OWED;
			api_stream_thinking_start(self);
		} else if (str_is(kind, "function_call") || str_is(kind, "custom_tool_call")) {
			self->tool_call_begun = true;
		}
	} else if (str_is(type, "response.output_item.done")) {
		if (str_is(json_object_get(item, "type"), "reasoning"))
			reasoning_done(self, item);
	} else if (str_is(type, "response.completed")) {
		completed(self, response);
	} else if (str_is(type, "response.incomplete")) {
		incomplete(self, response);
	} else if (str_is(type, "response.failed")) {
		rc = failed(self, response);
	} else if (str_is(type, "error")) {
		rc = fail_coded(self, json_object_get(root, "code"), json_object_get(root, "message"), root,
				NULL, "unknown error");
	}
	/* response.created, in_progress, content_part.*, *.done texts, function
	 * call arguments and unknown types change nothing. */
	json_decref(root);
	return rc;
}

int api_responses_quick(const char *data, size_t len, struct api_quick *q)
{
	struct jsonscan js;
	bool seen_type = false, seen_delta = false, seen_error = false;
	const char *key, *type;
	size_t klen, tlen;
	int rc;

	if (api_quick_open(&js, data, len, q) != 0)
		return 0;
	while ((rc = jsonscan_key(&js, &key, &klen)) == 1) {
		if (JSONSCAN_IS(key, klen, "type")) {
			/* Only the text delta is read here. */
			if (seen_type || jsonscan_peek(&js) != JSONSCAN_STRING ||
			    jsonscan_string(&js, &type, &tlen) != 0 ||
			    !JSONSCAN_IS(type, tlen, "response.output_text.delta"))
				return 0;
			seen_type = true;
		} else if (JSONSCAN_IS(key, klen, "delta")) {
			if (seen_delta || jsonscan_string_or_skip(&js, &q->content, &q->content_len) != 0)
				return 0;
			seen_delta = true;
		} else if (JSONSCAN_IS(key, klen, "sequence_number")) {
			if (q->has_seq || jsonscan_int(&js, &q->seq) != 0)
				return 0;
			q->has_seq = true;
		} else if (JSONSCAN_IS(key, klen, "error")) {
			/* Present and not null: read by the full decoder. */
			if (seen_error || !jsonscan_null(&js))
				return 0;
			seen_error = true;
		} else if (jsonscan_skip(&js) != 0) {
			return 0;
		}
	}
	if (!seen_type)
		return 0;
	return api_quick_close(&js, rc, q);
}

/* ---- requests -------------------------------------------------------------- */

static const char *const levels[] = { "off", "minimal", "low", "medium", "high", "xhigh" };
#define NLEVELS (sizeof(levels) / sizeof(levels[0]))

static bool supported(const json_t *map, size_t level)
{
	const json_t *mapped = json_object_get(map, levels[level]);

	if (json_is_null(mapped))
		return false;
	return strcmp(levels[level], "xhigh") != 0 || mapped != NULL;
}

/* pi's clampThinkingLevel: the level itself, else the next supported one
 * up, else down; an unknown name takes the first supported one. */
static size_t clamp_level(const json_t *map, const char *level)
{
	size_t want = NLEVELS;

	for (size_t i = 0; i < NLEVELS; i++)
		if (strcmp(levels[i], level) == 0)
			want = i;
	if (want == NLEVELS) {
		for (size_t i = 0; i < NLEVELS; i++)
			if (supported(map, i))
				return i;
		return 0;
	}
	for (size_t i = want; i < NLEVELS; i++)
		if (supported(map, i))
			return i;
	for (size_t i = want; i-- > 0;)
		if (supported(map, i))
			return i;
	return 0;
}

const char *api_responses_effort(const struct api_request *req, bool *summary)
{
	const json_t *map = json_object_get(api_model_entry(req), "thinkingLevelMap");
	const json_t *mapped;
	size_t level;

	*summary = false;
	if (!req->reasoning)
		return NULL;
	/* pi clamps only a level that asks for thinking. */
	level = req->thinking_level == NULL || strcmp(req->thinking_level, "off") == 0
			? 0 : clamp_level(map, req->thinking_level);
	mapped = json_object_get(map, levels[level]);
	if (level == 0) {
		if (json_is_null(mapped))
			return NULL;
		return json_is_string(mapped) ? json_string_value(mapped) : "none";
	}
	*summary = true;
	return json_is_string(mapped) ? json_string_value(mapped) : levels[level];
}

static bool nonempty_string(const json_t *v)
{
	return json_is_string(v) && json_string_length(v) > 0;
}

static int add_input_text(json_t *parts, const json_t *text)
{
	return json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "input_text", "text", text));
}

/* A user message's parts, a new reference (NULL: out of memory). */
static json_t *user_parts(const json_t *content)
{
	json_t *parts = json_array();
	const json_t *part;
	size_t i;

	if (parts == NULL)
		return NULL;
	if (nonempty_string(content) && add_input_text(parts, content) != 0)
		goto fail;
	json_array_foreach(content, i, part) {
		const json_t *type = json_object_get(part, "type");
		const json_t *text = json_object_get(part, "text");
		const json_t *data = json_object_get(part, "data");
		const json_t *mime = json_object_get(part, "mimeType");

		if (str_is(type, "text") && nonempty_string(text)) {
			if (add_input_text(parts, text) != 0)
				goto fail;
		} else if (str_is(type, "image") && nonempty_string(data) && nonempty_string(mime)) {
			json_t *url = json_sprintf("data:%s;base64,%s", json_string_value(mime),
						   json_string_value(data));

			if (url == NULL || json_array_append_new(parts, json_pack("{s:s, s:s, s:o}", "type",
										"input_image", "detail", "auto",
										"image_url", url)) != 0)
				goto fail;
		}
	}
	return parts;
fail:
	json_decref(parts);
	return NULL;
}

static int add_output_text(json_t *input, const json_t *text, size_t index)
{
	char id[32];

	snprintf(id, sizeof(id), "msg_%zu", index);
	return json_array_append_new(input, json_pack("{s:s, s:s, s:[{s:s, s:O, s:[]}], s:s, s:s}",
						      "type", "message", "role", "assistant", "content",
						      "type", "output_text", "text", text, "annotations",
						      "status", "completed", "id", id));
}

/* Only whitespace, or nothing: pi drops such a thinking block of another
 * model. */
static bool blank(const json_t *text)
{
	const char *s = json_string_value(text);

	for (size_t i = 0; s != NULL && i < json_string_length(text); i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			return false;
	return true;
}

/* An assistant message's blocks appended to input. Returns the number of
 * items added, or -1 when memory runs out. */
static int assistant_items(json_t *input, const json_t *msg, const struct api_request *req,
			   const char *api, size_t index)
{
	bool same = str_is(json_object_get(msg, "api"), api) && req->model != NULL &&
		    str_is(json_object_get(msg, "model"), req->model);
	size_t before = json_array_size(input), i;
	const json_t *block;

	json_array_foreach(json_object_get(msg, "content"), i, block) {
		const json_t *type = json_object_get(block, "type");
		const json_t *text = json_object_get(block, "text");

		if (str_is(type, "thinking")) {
			const json_t *sig = json_object_get(block, "thinkingSignature");
			const json_t *thinking = json_object_get(block, "thinking");

			if (same && nonempty_string(sig)) {
				/* The reasoning item as it came; a signature of another
				 * format's shape is not one. */
				json_t *item = json_loadb(json_string_value(sig), json_string_length(sig), 0, NULL);

				if (json_is_object(item)) {
					if (json_array_append_new(input, item) != 0)
						return -1;
				} else {
					json_decref(item);
				}
			} else if (!same && !json_is_true(json_object_get(block, "redacted")) &&
				   json_is_string(thinking) && !blank(thinking) &&
				   add_output_text(input, thinking, index) != 0) {
				return -1;
			}
		} else if (str_is(type, "text") && nonempty_string(text) &&
			   add_output_text(input, text, index) != 0) {
			return -1;
		}
	}
	return (int)(json_array_size(input) - before);
}

static json_t *input_items(const struct api_request *req, const char *api)
{
	json_t *input = json_array();
	const json_t *msg;
	size_t i, index = 0;

	if (input == NULL)
		return NULL;
	json_array_foreach(req->messages, i, msg) {
		const json_t *role = json_object_get(msg, "role");

		if (str_is(role, "user")) {
			json_t *parts = user_parts(json_object_get(msg, "content"));

			if (parts == NULL)
				goto fail;
			if (json_array_size(parts) == 0) {
				json_decref(parts);
				continue;
			}
			if (json_array_append_new(input, json_pack("{s:s, s:o}", "role", "user", "content",
								   parts)) != 0)
				goto fail;
			index++;
		} else if (str_is(role, "assistant") && !api_assistant_failed(msg)) {
			int n = assistant_items(input, msg, req, api, index);

			if (n < 0)
				goto fail;
			if (n > 0)
				index++;
		}
	}
	return input;
fail:
	json_decref(input);
	return NULL;
}

static json_t *build(const struct api_request *req, const char *api, bool store)
{
	json_t *input, *body;
	const char *effort;
	bool summary;
	int rc = 0;

	if (req->model == NULL || !json_is_array(req->messages))
		return NULL;
	input = input_items(req, api);
	if (input == NULL)
		return NULL;
	body = json_pack("{s:s, s:o, s:b}", "model", req->model, "input", input, "stream", 1);
	if (body == NULL)
		return NULL;
	/* Background mode keeps the response (store), so it can be resumed. */
	if (req->background)
		rc |= json_object_set_new(body, "background", json_true()) |
		      json_object_set_new(body, "store", json_true());
	else if (store)
		rc |= json_object_set_new(body, "store", json_false());
	/* pi asks for the model's maxTokens, at most 32000 (buildBaseOptions). */
	if (req->max_tokens > 0)
		rc |= json_object_set_new(body, "max_output_tokens",
					  json_integer(req->max_tokens < 32000 ? req->max_tokens : 32000));
	effort = api_responses_effort(req, &summary);
	if (effort != NULL && summary) {
		rc |= json_object_set_new(body, "reasoning", json_pack("{s:s, s:s}", "effort", effort,
								       "summary", "auto"));
		rc |= json_object_set_new(body, "include", json_pack("[s]", "reasoning.encrypted_content"));
	} else if (effort != NULL) {
		rc |= json_object_set_new(body, "reasoning", json_pack("{s:s}", "effort", effort));
	}
	if (rc != 0) {
		json_decref(body);
		return NULL;
	}
	return body;
}

/* ---- Azure's URL ------------------------------------------------------------- */

static bool ends_with(const char *s, size_t n, const char *tail)
{
	size_t t = strlen(tail);

	return n >= t && memcmp(s + n - t, tail, t) == 0;
}

static int azure_url(const struct api_request *req, const char *base_url, char *out, size_t outlen)
{
	const char *version = json_string_value(json_object_get(req->options, "apiVersion"));
	const char *host = strstr(base_url, "://");
	const char *path, *port;
	size_t host_len;
	int n;

	if (version == NULL || version[0] == '\0')
		version = "v1";
	host = host != NULL ? host + 3 : base_url;
	path = host + strcspn(host, "/?#");
	port = memchr(host, ':', (size_t)(path - host));
	host_len = (size_t)((port != NULL ? port : path) - host);
	/* pi gives an Azure resource's bare URL the v1 path. */
	if ((ends_with(host, host_len, ".openai.azure.com") ||
	     ends_with(host, host_len, ".cognitiveservices.azure.com")) &&
	    (path[0] == '\0' || strcmp(path, "/openai") == 0))
		n = snprintf(out, outlen, "%.*s/openai/v1/responses?api-version=%s",
			     (int)(path - base_url), base_url, version);
	else
		n = snprintf(out, outlen, "%s/responses?api-version=%s", base_url, version);
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* ---- the tables ---------------------------------------------------------------- */

static json_t *request(const struct api_request *req)
{
	return build(req, "openai-responses", true);
}

static json_t *azure_request(const struct api_request *req)
{
	return build(req, "azure-openai-responses", false);
}

static int quick(const struct sse_event *ev, struct api_quick *q)
{
	return api_responses_quick(ev->data, ev->data_len, q);
}

const struct api_format api_responses_format = {
	.name = "openai-responses",
	.path = "/responses",
	.key_header = "Authorization",
	.key_prefix = "Bearer ",
	.fixed_header = NULL,
	.request = request,
	.url = NULL,
	.quick = quick,
	.event_tree = event_tree,
	.finish = NULL,  /* quick reads no stop reason: the terminal events go to jansson */
};

const struct api_format api_azure_responses_format = {
	.name = "azure-openai-responses",
	.path = "/responses",
	.key_header = "api-key",
	.key_prefix = "",
	.fixed_header = NULL,
	.request = azure_request,
	.url = azure_url,
	.quick = quick,
	.event_tree = event_tree,
	.finish = NULL,
};

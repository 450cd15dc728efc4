/* Anthropic messages ("anthropic-messages"): request bodies and stream
 * events (see api_anthropic.h). */
#include "provider/http/api_anthropic.h"

#include <string.h>

#include "base/errbuf.h"

/* ---- events ---------------------------------------------------------------- */

static bool named_error(const struct sse_event *ev)
{
	return ev->event_len == 5 && memcmp(ev->event, "error", 5) == 0;
}

static bool str_eq(const json_t *v, const char *s)
{
	return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

/* pi's counts: input_tokens already leaves out the cached prompt; a count a
 * report leaves out keeps its earlier value (message_delta may repeat only
 * output_tokens). */
static void take_usage(struct api_stream *self, const json_t *usage)
{
	api_stream_usage(self, json_object_get(usage, "input_tokens"),
			 json_object_get(usage, "output_tokens"));
	api_stream_count(self, json_object_get(usage, "cache_read_input_tokens"),
			 &self->cache_read_tokens);
	api_stream_count(self, json_object_get(usage, "cache_creation_input_tokens"),
			 &self->cache_write_tokens);
}

/* pi's mapping, including its texts for the stop reasons that are errors. */
static void stop_reason(struct api_stream *self, const char *reason, const json_t *details)
{
	if (strcmp(reason, "end_turn") == 0 || strcmp(reason, "stop_sequence") == 0 ||
	    strcmp(reason, "pause_turn") == 0) {
		self->stop = STOP_STOP;
	} else if (strcmp(reason, "max_tokens") == 0) {
		self->stop = STOP_LENGTH;
	} else if (strcmp(reason, "tool_use") == 0) {
		self->stop = STOP_TOOL_USE;
	} else if (strcmp(reason, "refusal") == 0) {
		const json_t *why = json_object_get(details, "explanation");

		self->stop = STOP_ERROR;
		if (json_is_string(why) && json_string_length(why) > 0)
			api_json_text(why, self->error, sizeof(self->error));
		else
			errbuf_set(self->error, sizeof(self->error), "The model refused to complete the request");
	} else if (strcmp(reason, "sensitive") == 0) {
		self->stop = STOP_ERROR;
		errbuf_set(self->error, sizeof(self->error), "The response was flagged by safety filters");
	} else {
		char r[64];

		self->stop = STOP_ERROR;
		api_clean_text(reason, strlen(reason), r, sizeof(r));
		errbuf_set(self->error, sizeof(self->error), "Unhandled stop reason: %s", r);
	}
}

/* {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}
 * → "overloaded_error: Overloaded". root may be NULL (data not JSON). */
static int stream_error(struct api_stream *self, const json_t *root, const struct sse_event *ev)
{
	const json_t *err = json_object_get(root, "error");
	const json_t *type = json_object_get(err, "type");
	const json_t *msg = json_object_get(err, "message");
	char t[64] = "", m[API_TEXT_MAX + 1] = "";

	if (json_is_string(type))
		api_json_text(type, t, sizeof(t));
	if (msg != NULL && !json_is_null(msg))
		api_json_text(msg, m, sizeof(m));
	else if (err != NULL)
		api_json_text(err, m, sizeof(m));
	else
		api_clean_text(ev->data, ev->data_len, m, sizeof(m));
	if (t[0] != '\0' && m[0] != '\0')
		return api_stream_failf(self, "%s: %s", t, m);
	return api_stream_failf(self, "%s", t[0] ? t : m[0] ? m : "unknown error");
}

/* The delta object of a content_block_delta: its type and text. */
static int quick_delta(struct jsonscan *js, bool *text_delta, struct api_quick *q)
{
	const char *key, *type = NULL;
	size_t klen, tlen = 0;
	int rc;

	if (jsonscan_object(js) != 0)
		return JSONSCAN_BAIL;
	while ((rc = jsonscan_key(js, &key, &klen)) == 1) {
		if (JSONSCAN_IS(key, klen, "type")) {
			/* A NUL in it: the jansson path compares it as a C string. */
			if (type != NULL || jsonscan_peek(js) != JSONSCAN_STRING ||
			    jsonscan_string(js, &type, &tlen) != 0 || memchr(type, '\0', tlen) != NULL)
				return JSONSCAN_BAIL;
		} else if (JSONSCAN_IS(key, klen, "text")) {
			/* A second "text" is unusual: jansson decides. */
			if (q->content != NULL ||
			    jsonscan_string_or_skip(js, &q->content, &q->content_len) != 0)
				return JSONSCAN_BAIL;
		} else if (jsonscan_skip(js) != 0) {
			return JSONSCAN_BAIL;
		}
	}
	*text_delta = type != NULL && JSONSCAN_IS(type, tlen, "text_delta");
	return rc;
}

int api_anthropic_quick(const char *data, size_t len, struct api_quick *q)
{
	struct jsonscan js;
	const char *key, *type;
	size_t klen, tlen;
	bool seen_type = false, seen_delta = false, text_delta = false;
	int rc;

	if (api_quick_open(&js, data, len, q) != 0)
		return 0;
	while ((rc = jsonscan_key(&js, &key, &klen)) == 1) {
		if (JSONSCAN_IS(key, klen, "type")) {
			/* Only this one event type is read here. */
			if (seen_type || jsonscan_peek(&js) != JSONSCAN_STRING ||
			    jsonscan_string(&js, &type, &tlen) != 0 ||
			    !JSONSCAN_IS(type, tlen, "content_block_delta"))
				return 0;
			seen_type = true;
		} else if (JSONSCAN_IS(key, klen, "delta")) {
			if (seen_delta || quick_delta(&js, &text_delta, q) != 0)
				return 0;
			seen_delta = true;
		} else if (jsonscan_skip(&js) != 0) {
			return 0;
		}
	}
	/* Only a text delta is taken here: a thinking_delta or signature_delta
	 * (or anything new) goes to jansson, which knows it. */
	if (!seen_type || !text_delta)
		return 0;
	return api_quick_close(&js, rc, q);
}

static void block_start(struct api_stream *self, const json_t *block)
{
	const json_t *type = json_object_get(block, "type");
	const json_t *text = json_object_get(block, "text");
	const json_t *thinking = json_object_get(block, "thinking");
	const json_t *data = json_object_get(block, "data");

	if (str_eq(type, "text") && json_is_string(text)) {
		api_stream_text(self, json_string_value(text), json_string_length(text));
	} else if (str_eq(type, "thinking")) {
		if (json_is_string(thinking))
			api_stream_thinking(self, json_string_value(thinking),
					    json_string_length(thinking));
		self->thinking_signature = "";
	} else if (str_eq(type, "redacted_thinking") && json_is_string(data)) {
		/* Only the encrypted data, which goes back as it came. */
		api_stream_thinking_end(self, json_string_value(data), json_string_length(data),
					true);
	} else if (str_eq(type, "tool_use") || str_eq(type, "server_tool_use")) {
		self->tool_call_begun = true;
	}
}

static void block_delta(struct api_stream *self, const json_t *delta)
{
	const json_t *type = json_object_get(delta, "type");
	const json_t *text = json_object_get(delta, "text");
	const json_t *thinking = json_object_get(delta, "thinking");
	const json_t *sig = json_object_get(delta, "signature");

	if (str_eq(type, "text_delta") && json_is_string(text)) {
		api_stream_text(self, json_string_value(text), json_string_length(text));
	} else if (str_eq(type, "thinking_delta") && json_is_string(thinking)) {
		api_stream_thinking(self, json_string_value(thinking), json_string_length(thinking));
	} else if (str_eq(type, "signature_delta") && json_is_string(sig) && self->thinking_open) {
		/* The signature comes whole, once, right before the block's
		 * content_block_stop: the block ends with it. */
		api_stream_thinking_end(self, json_string_value(sig), json_string_length(sig), false);
	}
}

static int event_tree(struct api_stream *self, const struct sse_event *ev)
{
	json_t *root;
	const json_t *type;
	int rc = 0;

	if (named_error(ev)) {
		/* An error event whose data is not JSON still fails the attempt,
		 * with its text. */
		root = json_loadb(ev->data, ev->data_len, JSON_ALLOW_NUL, NULL);
		rc = stream_error(self, json_is_object(root) ? root : NULL, ev);
		json_decref(root);
		return rc;
	}
	root = api_stream_parse(self, ev);
	if (root == NULL)
		return -1;
	api_stream_begin(self);
	type = json_object_get(root, "type");
	if (str_eq(type, "error")) {
		rc = stream_error(self, root, ev);
	} else if (str_eq(type, "message_start")) {
		take_usage(self, json_object_get(json_object_get(root, "message"), "usage"));
	} else if (str_eq(type, "content_block_start")) {
		block_start(self, json_object_get(root, "content_block"));
	} else if (str_eq(type, "content_block_delta")) {
		block_delta(self, json_object_get(root, "delta"));
	} else if (str_eq(type, "content_block_stop")) {
		/* A thinking block whose signature never came ends with pi's
		 * empty one. */
		if (self->thinking_open)
			api_stream_thinking_end(self, self->thinking_signature,
						strlen(self->thinking_signature), false);
	} else if (str_eq(type, "message_delta")) {
		const json_t *reason = json_object_get(json_object_get(root, "delta"), "stop_reason");

		if (json_is_string(reason))
			stop_reason(self, json_string_value(reason),
				    json_object_get(json_object_get(root, "delta"), "stop_details"));
		take_usage(self, json_object_get(root, "usage"));
	} else if (str_eq(type, "message_stop")) {
		self->complete = true;
		self->done = true;
	}
	/* ping and unknown types change nothing. */
	json_decref(root);
	return rc;
}

/* ---- requests -------------------------------------------------------------- */

static json_t *image_block(const json_t *mime, const json_t *data)
{
	return json_pack("{s:s, s:{s:s, s:O, s:O}}", "type", "image", "source", "type", "base64",
			 "media_type", mime, "data", data);
}

/* pi's convertMessages: a redacted block goes back as its encrypted data,
 * a signed one as itself, one without a signature (an aborted stream) as
 * plain text, an empty one not at all. A block from another model or API
 * (pi's transformMessages) carries a signature Anthropic would refuse with
 * a 400: its text goes as plain text, a redacted one not at all. */
static int thinking_part(json_t *parts, const json_t *block, bool same)
{
	const json_t *text = json_object_get(block, "thinking");
	const json_t *sig = json_object_get(block, "thinkingSignature");
	const char *t = json_string_value(text), *p;
	bool signed_ = same && json_is_string(sig) && json_string_length(sig) > 0;

	if (json_is_true(json_object_get(block, "redacted")))
		return signed_ ? json_array_append_new(parts, json_pack("{s:s, s:O}", "type",
						       "redacted_thinking", "data", sig))
			       : 0;
	for (p = t; p != NULL && *p != '\0' && strchr(" \t\r\n", *p) != NULL; p++)
		;
	if (p == NULL || *p == '\0')
		return 0;
	if (!signed_)
		return json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "text", "text",
							      text));
	return json_array_append_new(parts, json_pack("{s:s, s:O, s:O}", "type", "thinking",
						      "thinking", text, "signature", sig));
}

bool api_anthropic_adaptive(const char *model)
{
	static const char *const ids[] = { "opus-4-6", "opus-4.6", "opus-4-7", "opus-4.7",
					   "sonnet-4-6", "sonnet-4.6" };

	for (size_t i = 0; model != NULL && i < sizeof(ids) / sizeof(ids[0]); i++)
		if (strstr(model, ids[i]) != NULL)
			return true;
	return false;
}

int64_t api_anthropic_budget(const char *level)
{
	if (level == NULL)
		return 0;
	if (strcmp(level, "minimal") == 0)
		return 1024;
	if (strcmp(level, "low") == 0)
		return 2048;
	if (strcmp(level, "medium") == 0)
		return 8192;
	if (strcmp(level, "high") == 0 || strcmp(level, "xhigh") == 0)
		return 16384;
	return 0;
}

/* pi's effort for a level on an adaptive model. */
static const char *effort(const char *level)
{
	if (strcmp(level, "minimal") == 0 || strcmp(level, "low") == 0)
		return "low";
	if (strcmp(level, "medium") == 0)
		return "medium";
	return "high";
}

/* The thinking members of body, as pi sets them; max_tokens may grow. */
static int add_thinking(json_t *body, const struct api_request *req)
{
	const char *level = req->thinking_level;
	int64_t budget = api_anthropic_budget(level), base, top, max;

	if (!req->reasoning)
		return 0;
	if (budget == 0)
		return json_object_set_new(body, "thinking", json_pack("{s:s}", "type", "disabled"));
	if (api_anthropic_adaptive(req->model))
		return json_object_set_new(body, "thinking", json_pack("{s:s, s:s}", "type",
						"adaptive", "display", "summarized")) ||
		       json_object_set_new(body, "output_config",
					   json_pack("{s:s}", "effort", effort(level)));
	/* pi's adjustMaxTokensForThinking: the answer's room plus the budget,
	 * within the model's limit, and 1024 tokens left for the answer. */
	base = req->max_tokens > 0 ? (req->max_tokens < 32000 ? req->max_tokens : 32000)
				   : API_ANTHROPIC_DEFAULT_MAX_TOKENS;
	top = req->max_tokens > 0 ? req->max_tokens : base + budget;
	max = base + budget < top ? base + budget : top;
	if (max <= budget)
		budget = max - 1024 > 0 ? max - 1024 : 0;
	return json_object_set_new(body, "max_tokens", json_integer(max)) ||
	       json_object_set_new(body, "thinking", json_pack("{s:s, s:I, s:s}", "type", "enabled",
				       "budget_tokens", (json_int_t)(budget > 0 ? budget : 1024),
				       "display", "summarized"));
}

json_t *api_anthropic_request_for(const struct api_request *req)
{
	json_t *out, *body;

	if (req->model == NULL)
		return NULL;
	out = api_messages_thinking(req->messages, image_block, thinking_part,
				    api_anthropic_format.name, req->model);
	if (out == NULL)
		return NULL;
	body = json_pack("{s:s, s:I, s:o, s:b}", "model", req->model, "max_tokens",
			 (json_int_t)(req->max_tokens > 0 ? req->max_tokens
							  : API_ANTHROPIC_DEFAULT_MAX_TOKENS),
			 "messages", out, "stream", 1);
	if (body != NULL && add_thinking(body, req) != 0) {
		json_decref(body);
		return NULL;
	}
	return body;
}

json_t *api_anthropic_request(const json_t *messages, const char *model, int64_t max_tokens)
{
	struct api_request req = { .messages = messages, .model = model, .max_tokens = max_tokens };

	return api_anthropic_request_for(&req);
}

/* ---- the table --------------------------------------------------------------- */

static json_t *request(const struct api_request *req)
{
	return api_anthropic_request_for(req);
}

/* A named error event always goes to event_tree: its data need not be JSON. */
static int quick(const struct sse_event *ev, struct api_quick *q)
{
	if (named_error(ev))
		return 0;
	return api_anthropic_quick(ev->data, ev->data_len, q);
}

/* pi hands baseUrl to Anthropic's SDK, which adds "/v1/messages"
 * (pi's models.json: "https://api.anthropic.com"); retryd's own entries
 * have always named the "/v1" folder. Both work: "/messages" after a base
 * that ends in "/v1", "/v1/messages" after any other. */
static int url(const struct api_request *req, const char *base_url, char *out, size_t outlen)
{
	size_t n = strlen(base_url);
	bool v1 = n >= 3 && strcmp(base_url + n - 3, "/v1") == 0;
	int len = snprintf(out, outlen, "%s%s", base_url, v1 ? "/messages" : "/v1/messages");

	(void)req;
	return len < 0 || (size_t)len >= outlen ? -1 : 0;
}

const struct api_format api_anthropic_format = {
	.name = "anthropic-messages",
	.path = "/messages",
	.key_header = "x-api-key",
	.key_prefix = "",
	.fixed_header = "anthropic-version: 2023-06-01",
	.request = request,
	.url = url,
	.quick = quick,
	.event_tree = event_tree,
	.finish = NULL,  /* quick reads no stop reason: message_delta goes to jansson */
};

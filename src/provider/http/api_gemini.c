/* Google's Gemini API ("google-generative-ai"): request bodies, the URL
 * and stream events (see api_gemini.h). */
#include "provider/http/api_gemini.h"

#include <stdio.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/number.h"

/* ---- events ---------------------------------------------------------------- */

static bool str_is(const json_t *v, const char *s)
{
	return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

/* What a finish or block reason means, in words a person and the
 * classifier read (its typed Gemini values make them never retried). */
static const char *reason_words(const char *reason)
{
	static const struct {
		const char *reason, *words;
	} known[] = {
		{ "SAFETY", "the response was blocked by Gemini's safety filters" },
		{ "IMAGE_SAFETY", "the image was blocked by Gemini's safety filters" },
		{ "RECITATION", "the response was blocked for reciting its training data" },
		{ "IMAGE_RECITATION", "the image was blocked for reciting its training data" },
		{ "BLOCKLIST", "the response holds terms on a blocklist" },
		{ "PROHIBITED_CONTENT", "the response was blocked for prohibited content" },
		{ "IMAGE_PROHIBITED_CONTENT", "the image was blocked for prohibited content" },
		{ "SPII", "the response was blocked for sensitive personal information" },
		{ "MALFORMED_FUNCTION_CALL", "the model produced a malformed function call" },
		{ "UNEXPECTED_TOOL_CALL", "the model called a tool that was not offered" },
		{ "LANGUAGE", "the response is in a language Gemini does not support" },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(reason, known[i].reason) == 0)
			return known[i].words;
	return "the answer is not usable";
}

/* A finishReason: STOP and MAX_TOKENS end a good answer; every other one
 * is an error, as pi's mapStopReason has it. */
static void finish_reason(struct api_stream *self, const char *reason)
{
	if (strcmp(reason, "STOP") == 0) {
		self->stop = STOP_STOP;
	} else if (strcmp(reason, "MAX_TOKENS") == 0) {
		self->stop = STOP_LENGTH;
	} else {
		char r[64];

		self->stop = STOP_ERROR;
		api_clean_text(reason, strlen(reason), r, sizeof(r));
		errbuf_set(self->error, sizeof(self->error),
			   "Gemini stopped the answer (finish reason: %s): %s", r, reason_words(reason));
	}
	self->complete = true;
}

static void block_reason(struct api_stream *self, const json_t *reason, const json_t *message)
{
	char r[64], m[API_TEXT_MAX + 1] = "";

	api_json_text(reason, r, sizeof(r));
	if (json_is_string(message))
		api_json_text(message, m, sizeof(m));
	self->stop = STOP_ERROR;
	errbuf_set(self->error, sizeof(self->error),
		   "Gemini blocked the prompt (block reason: %s): %s", r,
		   m[0] != '\0' ? m : reason_words(json_string_value(reason)));
	self->complete = true;
}

/* pi's counts: the cached part of the prompt is not input but cacheRead,
 * thoughts are output, the total is the reported one. A count the report
 * leaves out or gets wrong counts 0 in the sums and differences; input and
 * output keep their earlier values when all their counts are. */
static void take_usage(struct api_stream *self, const json_t *usage)
{
	int64_t prompt, read = 0, candidates = 0, thoughts = 0;
	bool has_out;

	if (api_stream_count(self, json_object_get(usage, "cachedContentTokenCount"), &read))
		self->cache_read_tokens = read;
	if (api_stream_count(self, json_object_get(usage, "promptTokenCount"), &prompt))
		self->input_tokens = number_clamp(prompt - read);
	has_out = api_stream_count(self, json_object_get(usage, "candidatesTokenCount"), &candidates);
	has_out |= api_stream_count(self, json_object_get(usage, "thoughtsTokenCount"), &thoughts);
	if (has_out)
		self->output_tokens = number_add(candidates, thoughts);
	api_stream_count(self, json_object_get(usage, "totalTokenCount"), &self->total_tokens);
}

/* {"error": {"code": 429, "message": "...", "status": "RESOURCE_EXHAUSTED",
 * "details": [...]}} → "429 RESOURCE_EXHAUSTED: ...": the code and status
 * lead as in an HTTP error; the details stay in the event data, which the
 * classifier reads as the typed body (error_object). */
static int stream_error(struct api_stream *self, const json_t *err)
{
	char m[API_TEXT_MAX + 1] = "", st[64] = "";
	const json_t *msg = json_is_object(err) ? json_object_get(err, "message") : err;
	const json_t *status = json_object_get(err, "status");
	int64_t code = 0;

	if (msg != NULL && !json_is_null(msg))
		api_json_text(msg, m, sizeof(m));
	else
		api_json_text(err, m, sizeof(m));
	if (json_is_string(status))
		api_json_text(status, st, sizeof(st));
	if (number_from_json(json_object_get(err, "code"), &code) <= 0 || code > 999)
		code = 0;
	if (m[0] == '\0')
		snprintf(m, sizeof(m), "unknown error");
	if (!self->failed && !self->complete)
		self->error_object = true;
	if (code > 0 && st[0] != '\0')
		return api_stream_failf(self, "%lld %s: %s", (long long)code, st, m);
	if (code > 0)
		return api_stream_failf(self, "%lld %s", (long long)code, m);
	if (st[0] != '\0')
		return api_stream_failf(self, "%s: %s", st, m);
	return api_stream_failf(self, "%s", m);
}

/* A thoughtSignature worth keeping: a non-empty string. */
static const json_t *signature_of(const json_t *part)
{
	const json_t *sig = json_object_get(part, "thoughtSignature");

	return json_is_string(sig) && json_string_length(sig) > 0 ? sig : NULL;
}

static void take_part(struct api_stream *self, const json_t *part)
{
	const json_t *text = json_object_get(part, "text");
	const json_t *sig = signature_of(part);

	/* As pi reads parts: one with no text is no content; thoughts are one
	 * block until a text part or the end closes it, and keep the latest
	 * signature any of their parts carried (pi's retainThoughtSignature:
	 * some backends sign only the first delta). A text part's signature
	 * (pi's textSignature) has nowhere to go in retryd's blocks. A
	 * functionCall part (retryd offers no tools, but a model may send one)
	 * is only marked: its block is not kept. */
	if (json_is_object(json_object_get(part, "functionCall")))
		self->tool_call_begun = true;
	if (!json_is_string(text))
		return;
	if (json_is_true(json_object_get(part, "thought"))) {
		api_stream_thinking(self, json_string_value(text), json_string_length(text));
		if (sig != NULL)
			api_stream_thinking_sign(self, json_string_value(sig), json_string_length(sig));
	} else {
		api_stream_text(self, json_string_value(text), json_string_length(text));
	}
}

static int event_tree(struct api_stream *self, const struct sse_event *ev)
{
	json_t *root, *err, *candidates, *cand, *parts, *part, *reason, *feedback, *usage;
	size_t i;
	int rc = 0;

	root = api_stream_parse(self, ev);
	if (root == NULL)
		return -1;
	api_stream_begin(self);
	err = json_object_get(root, "error");
	if (err != NULL && !json_is_null(err)) {
		rc = stream_error(self, err);
		goto out;
	}
	candidates = json_object_get(root, "candidates");
	cand = json_array_get(candidates, 0);
	parts = json_object_get(json_object_get(cand, "content"), "parts");
	json_array_foreach(parts, i, part) {
		if (self->complete)
			break;
		if (json_is_object(part))
			take_part(self, part);
	}
	reason = json_object_get(cand, "finishReason");
	usage = json_object_get(root, "usageMetadata");
	/* Every chunk repeats the running counts; the last holds the totals. */
	if (json_is_object(usage) && (json_is_string(reason) || json_array_size(candidates) == 0))
		take_usage(self, usage);
	feedback = json_object_get(json_object_get(root, "promptFeedback"), "blockReason");
	if (self->complete)
		goto out;
	if (json_is_string(reason))
		finish_reason(self, json_string_value(reason));
	else if (json_is_string(feedback))
		block_reason(self, feedback,
			     json_object_get(json_object_get(root, "promptFeedback"), "blockReasonMessage"));
out:
	json_decref(root);
	return rc;
}

/* ---- the quick reader ------------------------------------------------------ */

/* The one part: {"text": "..."} and nothing that makes it more than text. */
static int quick_part(struct jsonscan *js, struct api_quick *q)
{
	const char *key;
	size_t klen;
	int rc;

	if (jsonscan_object(js) != 0)
		return JSONSCAN_BAIL;
	while ((rc = jsonscan_key(js, &key, &klen)) == 1) {
		if (JSONSCAN_IS(key, klen, "text")) {
			if (q->content != NULL || jsonscan_peek(js) != JSONSCAN_STRING ||
			    jsonscan_string(js, &q->content, &q->content_len) != 0)
				return JSONSCAN_BAIL;
		} else if (JSONSCAN_IS(key, klen, "thought") || JSONSCAN_IS(key, klen, "thoughtSignature") ||
			   JSONSCAN_IS(key, klen, "functionCall")) {
			return JSONSCAN_BAIL;
		} else if (jsonscan_skip(js) != 0) {
			return JSONSCAN_BAIL;
		}
	}
	return rc == 0 && q->content != NULL ? 0 : JSONSCAN_BAIL;
}

/* "content": {"parts": [one part], "role": ...}. */
static int quick_content(struct jsonscan *js, struct api_quick *q)
{
	bool seen_parts = false;
	const char *key;
	size_t klen;
	int rc;

	if (jsonscan_object(js) != 0)
		return JSONSCAN_BAIL;
	while ((rc = jsonscan_key(js, &key, &klen)) == 1) {
		if (JSONSCAN_IS(key, klen, "parts")) {
			if (seen_parts || jsonscan_array(js) != 0 || jsonscan_more(js) != 1 ||
			    quick_part(js, q) != 0 || jsonscan_more(js) != 0)
				return JSONSCAN_BAIL;
			seen_parts = true;
		} else if (jsonscan_skip(js) != 0) {
			return JSONSCAN_BAIL;
		}
	}
	return rc == 0 && seen_parts ? 0 : JSONSCAN_BAIL;
}

/* The one candidate: its content, no finishReason (null is none). */
static int quick_candidate(struct jsonscan *js, struct api_quick *q)
{
	bool seen_content = false;
	const char *key;
	size_t klen;
	int rc;

	if (jsonscan_object(js) != 0)
		return JSONSCAN_BAIL;
	while ((rc = jsonscan_key(js, &key, &klen)) == 1) {
		if (JSONSCAN_IS(key, klen, "content")) {
			if (seen_content || quick_content(js, q) != 0)
				return JSONSCAN_BAIL;
			seen_content = true;
		} else if (JSONSCAN_IS(key, klen, "finishReason")) {
			if (!jsonscan_null(js))
				return JSONSCAN_BAIL;
		} else if (jsonscan_skip(js) != 0) {
			return JSONSCAN_BAIL;
		}
	}
	return rc == 0 && seen_content ? 0 : JSONSCAN_BAIL;
}

int api_gemini_quick(const char *data, size_t len, struct api_quick *q)
{
	struct jsonscan js;
	bool seen_candidates = false;
	const char *key;
	size_t klen;
	int rc;

	if (api_quick_open(&js, data, len, q) != 0)
		return 0;
	while ((rc = jsonscan_key(&js, &key, &klen)) == 1) {
		if (JSONSCAN_IS(key, klen, "candidates")) {
			if (seen_candidates || jsonscan_array(&js) != 0 || jsonscan_more(&js) != 1 ||
			    quick_candidate(&js, q) != 0 || jsonscan_more(&js) != 0)
				return 0;
			seen_candidates = true;
		} else if (JSONSCAN_IS(key, klen, "error") || JSONSCAN_IS(key, klen, "promptFeedback")) {
			/* Present and not null: read by the full decoder. */
			if (!jsonscan_null(&js))
				return 0;
		} else if (jsonscan_skip(&js) != 0) {
			/* usageMetadata too: only the finishing chunk's counts count. */
			return 0;
		}
	}
	if (!seen_candidates)
		return 0;
	return api_quick_close(&js, rc, q);
}

/* ---- requests -------------------------------------------------------------- */

static bool nonempty_string(const json_t *v)
{
	return json_is_string(v) && json_string_length(v) > 0;
}

/* pi skips assistant texts and thoughts that are only white space. */
static bool has_words(const json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);

	for (size_t i = 0; s != NULL && i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' && s[i] != '\f' &&
		    s[i] != '\v')
			return true;
	return false;
}

/* Google refuses a signature that is not base64 (TYPE_BYTES); pi drops it. */
static bool is_base64(const json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v), pad = 0;

	if (s == NULL || n == 0 || n % 4 != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '=') {
			pad++;
			continue;
		}
		if (pad > 0 || !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
				 (c >= '0' && c <= '9') || c == '+' || c == '/'))
			return false;
	}
	return pad <= 2;
}

static int add_text(json_t *parts, const json_t *text)
{
	return json_array_append_new(parts, json_pack("{s:O}", "text", text));
}

static json_t *user_parts(const json_t *content)
{
	json_t *parts = json_array();
	const json_t *item;
	size_t i;

	if (parts == NULL)
		return NULL;
	if (nonempty_string(content) && add_text(parts, content) != 0)
		goto fail;
	json_array_foreach(content, i, item) {
		const char *type = json_string_value(json_object_get(item, "type"));
		const json_t *text = json_object_get(item, "text");
		const json_t *data = json_object_get(item, "data");
		const json_t *mime = json_object_get(item, "mimeType");
		int rc = 0;

		if (type == NULL)
			continue;
		if (strcmp(type, "text") == 0 && nonempty_string(text))
			rc = add_text(parts, text);
		else if (strcmp(type, "image") == 0 && nonempty_string(data) && nonempty_string(mime))
			rc = json_array_append_new(parts, json_pack("{s:{s:O, s:O}}", "inlineData",
								    "mimeType", mime, "data", data));
		if (rc != 0)
			goto fail;
	}
	return parts;
fail:
	json_decref(parts);
	return NULL;
}

/* Whether an assistant message came from this model over this API: only
 * then do its thoughts go back as thoughts (pi's isSameProviderAndModel;
 * the provider's name is not known here, its api and the model are). */
static bool same_model(const json_t *msg, const char *model)
{
	const json_t *api = json_object_get(msg, "api");

	return str_is(json_object_get(msg, "model"), model) &&
	       (api == NULL || str_is(api, api_gemini_format.name));
}

static json_t *model_parts(const json_t *msg, const char *model)
{
	json_t *parts = json_array();
	const json_t *block;
	bool same = same_model(msg, model);
	size_t i;

	if (parts == NULL)
		return NULL;
	json_array_foreach(json_object_get(msg, "content"), i, block) {
		const char *type = json_string_value(json_object_get(block, "type"));
		int rc = 0;

		if (type == NULL)
			continue;
		if (strcmp(type, "text") == 0) {
			const json_t *text = json_object_get(block, "text");

			if (has_words(text))
				rc = add_text(parts, text);
		} else if (strcmp(type, "thinking") == 0) {
			const json_t *text = json_object_get(block, "thinking");
			const json_t *sig = json_object_get(block, "thinkingSignature");
			json_t *part;

			/* Another provider's encrypted block means nothing here. */
			if (!has_words(text) || json_is_true(json_object_get(block, "redacted")))
				continue;
			if (!same) {
				rc = add_text(parts, text);
			} else {
				part = json_pack("{s:b, s:O}", "thought", 1, "text", text);
				if (part != NULL && is_base64(sig))
					json_object_set(part, "thoughtSignature", (json_t *)sig);
				rc = json_array_append_new(parts, part);
			}
		}
		if (rc != 0)
			goto fail;
	}
	return parts;
fail:
	json_decref(parts);
	return NULL;
}

static json_t *message_parts(const json_t *msg, bool user, void *model)
{
	return user ? user_parts(json_object_get(msg, "content")) : model_parts(msg, model);
}

/* The conversation as contents: the assistant's turns are the "model"'s. */
static json_t *contents(const json_t *messages, const char *model)
{
	return api_messages_map(messages, "model", "parts", message_parts, (void *)model);
}

/* Case-insensitive search for needle (lower case) in s. */
static const char *find_lower(const char *s, const char *needle)
{
	size_t n = strlen(needle);

	for (; *s != '\0'; s++) {
		size_t k = 0;

		while (k < n && s[k] != '\0' &&
		       (s[k] >= 'A' && s[k] <= 'Z' ? s[k] - 'A' + 'a' : s[k]) == needle[k])
			k++;
		if (k == n)
			return s;
	}
	return NULL;
}

/* pi's /gemini-3(?:\.\d+)?-<kind>/ on the lower-cased id. */
static bool is_gemini3(const char *model, const char *kind)
{
	for (const char *p = model; (p = find_lower(p, "gemini-3")) != NULL; p++) {
		const char *q = p + 8;

		if (*q == '.' && q[1] >= '0' && q[1] <= '9')
			for (q++; *q >= '0' && *q <= '9'; q++)
				;
		if (*q == '-' && find_lower(q + 1, kind) == q + 1)
			return true;
	}
	return false;
}

/* pi's /gemma-?4/. */
static bool is_gemma4(const char *model)
{
	return find_lower(model, "gemma4") != NULL || find_lower(model, "gemma-4") != NULL;
}

static int effort_index(const char *level)
{
	static const char *const efforts[] = { "minimal", "low", "medium", "high" };

	if (strcmp(level, "xhigh") == 0)  /* no Gemini model maps xhigh: pi clamps it */
		return 3;
	for (int i = 0; i < 4; i++)
		if (strcmp(level, efforts[i]) == 0)
			return i;
	return -1;
}

static int64_t thinking_budget(const char *model, int effort)
{
	static const int64_t pro[] = { 128, 2048, 8192, 32768 };
	static const int64_t lite[] = { 512, 2048, 8192, 24576 };
	static const int64_t flash[] = { 128, 2048, 8192, 24576 };

	/* pi's includes() here is case-sensitive. */
	if (strstr(model, "2.5-pro") != NULL)
		return pro[effort];
	if (strstr(model, "2.5-flash-lite") != NULL)
		return lite[effort];
	if (strstr(model, "2.5-flash") != NULL)
		return flash[effort];
	return -1;
}

json_t *api_gemini_thinking(const char *model, const char *level, bool reasoning)
{
	static const char *const levels[] = { "MINIMAL", "LOW", "MEDIUM", "HIGH" };
	bool pro3 = is_gemini3(model, "pro"), flash3 = is_gemini3(model, "flash");
	bool gemma4 = is_gemma4(model);
	int effort;

	if (!reasoning)
		return NULL;
	effort = level != NULL ? effort_index(level) : -1;
	if (effort < 0) {
		/* "off": as low as the model goes, without thoughts shown. */
		if (pro3)
			return json_pack("{s:s}", "thinkingLevel", "LOW");
		if (flash3 || gemma4)
			return json_pack("{s:s}", "thinkingLevel", "MINIMAL");
		return json_pack("{s:i}", "thinkingBudget", 0);
	}
	if (pro3 || gemma4) {
		/* Two levels only: minimal/low → the low one, medium/high → HIGH. */
		const char *low = pro3 ? "LOW" : "MINIMAL";

		return json_pack("{s:b, s:s}", "includeThoughts", 1, "thinkingLevel",
				 effort <= 1 ? low : "HIGH");
	}
	if (flash3)
		return json_pack("{s:b, s:s}", "includeThoughts", 1, "thinkingLevel", levels[effort]);
	return json_pack("{s:b, s:I}", "includeThoughts", 1, "thinkingBudget",
			 (json_int_t)thinking_budget(model, effort));
}

json_t *api_gemini_request(const struct api_request *req)
{
	json_t *body, *config, *thinking;

	if (req->model == NULL)
		return NULL;
	body = json_object();
	config = json_object();
	if (body == NULL || config == NULL ||
	    json_object_set_new(body, "contents", contents(req->messages, req->model)) != 0)
		goto fail;
	if (req->max_tokens > 0 &&
	    json_object_set_new(config, "maxOutputTokens",
				json_integer(req->max_tokens < API_GEMINI_MAX_OUTPUT_TOKENS
					     ? req->max_tokens : API_GEMINI_MAX_OUTPUT_TOKENS)) != 0)
		goto fail;
	thinking = api_gemini_thinking(req->model, req->thinking_level, req->reasoning);
	if (thinking != NULL && json_object_set_new(config, "thinkingConfig", thinking) != 0)
		goto fail;
	if (json_object_size(config) == 0) {
		json_decref(config);
		return body;
	}
	/* set_new takes config even when it fails. */
	if (json_object_set_new(body, "generationConfig", config) != 0) {
		json_decref(body);
		return NULL;
	}
	return body;
fail:
	json_decref(config);
	json_decref(body);
	return NULL;
}

/* ---- the URL --------------------------------------------------------------- */

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

int api_gemini_url(const struct api_request *req, const char *base_url, char *out, size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	const char *model = req->model, *resource = "models/";
	size_t o;
	int n;

	if (model == NULL || outlen == 0)
		return -1;
	if (strncmp(model, "models/", 7) == 0) {
		model += 7;
	} else if (strncmp(model, "tunedModels/", 12) == 0) {
		resource = "tunedModels/";
		model += 12;
	}
	n = snprintf(out, outlen, "%s/%s", base_url, resource);
	if (n < 0 || (size_t)n >= outlen)
		return -1;
	o = (size_t)n;
	for (const unsigned char *p = (const unsigned char *)model; *p != '\0'; p++) {
		if (o + 4 > outlen)
			return -1;
		if (unreserved(*p)) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	out[o] = '\0';
	n = snprintf(out + o, outlen - o, ":streamGenerateContent?alt=sse");
	return n < 0 || (size_t)n >= outlen - o ? -1 : 0;
}

/* ---- the table --------------------------------------------------------------- */

static int quick(const struct sse_event *ev, struct api_quick *q)
{
	return api_gemini_quick(ev->data, ev->data_len, q);
}

const struct api_format api_gemini_format = {
	.name = "google-generative-ai",
	.path = "/models/{model}:streamGenerateContent?alt=sse",
	.key_header = "x-goog-api-key",
	.key_prefix = "",
	.fixed_header = NULL,
	.request = api_gemini_request,
	.url = api_gemini_url,
	.quick = quick,
	.event_tree = event_tree,
	.finish = NULL,  /* quick reads no finish reason: that chunk goes to jansson */
};

/* OpenAI chat completions, plus what both wire formats share: the stream
 * decoder's life cycle and the error texts (see api.h). */
#include "provider/http/api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

int api_kind_from_name(const char *name, enum api_kind *out)
{
	if (name != NULL && strcmp(name, "openai-completions") == 0) {
		*out = API_OPENAI;
		return 0;
	}
	if (name != NULL && strcmp(name, "anthropic-messages") == 0) {
		*out = API_ANTHROPIC;
		return 0;
	}
	return -1;
}

/* ---- error text ---------------------------------------------------------- */

static bool is_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '*';
}

/* A word that may be a credential: "sk-..." (OpenAI, Anthropic,
 * OpenRouter), or one with a long piece mixing letters and digits (hex or
 * base64 tokens). Model names ("claude-sonnet-4-5-20250929") have short
 * pieces; masking a request id by mistake costs nothing. */
static bool looks_like_key(const char *w, size_t n)
{
	size_t i = 0;

	if (n >= 8 && (strncmp(w, "sk-", 3) == 0 || strncmp(w, "sk_", 3) == 0))
		return true;
	while (i < n) {
		bool digit = false, alpha = false;
		size_t start = i;

		for (; i < n && w[i] != '-' && w[i] != '_' && w[i] != '*'; i++) {
			digit |= w[i] >= '0' && w[i] <= '9';
			alpha |= (w[i] >= 'a' && w[i] <= 'z') || (w[i] >= 'A' && w[i] <= 'Z');
		}
		if (i - start >= 20 && digit && alpha)
			return true;
		i++;
	}
	return false;
}

size_t api_clean_text(const char *s, size_t len, char *out, size_t outlen)
{
	size_t limit, o = 0, i = 0;

	if (outlen == 0)
		return 0;
	limit = outlen - 1 < API_TEXT_MAX ? outlen - 1 : API_TEXT_MAX;
	while (i < len && (s[i] == ' ' || (unsigned char)s[i] < 0x20 || s[i] == 0x7F))
		i++;
	while (i < len && o < limit) {
		unsigned char c = (unsigned char)s[i];

		if (is_word_char((char)c)) {
			size_t j = i;
			const char *w;
			size_t n;

			while (j < len && is_word_char(s[j]))
				j++;
			w = s + i;
			n = j - i;
			if (looks_like_key(w, n)) {
				w = "***";
				n = 3;
			}
			if (n > limit - o)
				n = limit - o;
			memcpy(out + o, w, n);
			o += n;
			i = j;
		} else if (c < 0x20 || c == 0x7F) {
			if (o > 0 && out[o - 1] != ' ')
				out[o++] = ' ';
			i++;
		} else {
			size_t n = utf8_seq((const unsigned char *)s + i, len - i);

			if (n == 0) {
				out[o++] = '?';
				i++;
			} else if (n > limit - o) {
				break;  /* never cut a character in half */
			} else {
				memcpy(out + o, s + i, n);
				o += n;
				i += n;
			}
		}
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
	return o;
}

void api_json_text(const json_t *v, char *out, size_t outlen)
{
	char *dump;

	if (json_is_string(v)) {
		api_clean_text(json_string_value(v), json_string_length(v), out, outlen);
		return;
	}
	dump = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (dump == NULL) {
		if (outlen > 0)
			out[0] = '\0';
		return;
	}
	api_clean_text(dump, strlen(dump), out, outlen);
	free(dump);
}

static const char *reason_phrase(long status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 402: return "Payment Required";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Entity";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 529: return "Overloaded";  /* Anthropic's own */
	}
	return "HTTP error";
}

/* The message a JSON error body carries, or NULL. Borrowed from root. */
static const json_t *body_message(const json_t *root)
{
	const json_t *err = json_object_get(root, "error");
	const json_t *m;

	if (json_is_object(err)) {
		m = json_object_get(err, "message");
		if (m != NULL && !json_is_null(m))
			return m;
	} else if (json_is_string(err)) {
		return err;
	}
	m = json_object_get(root, "message");
	if (json_is_string(m))
		return m;
	m = json_object_get(root, "detail");  /* FastAPI-based servers (vLLM) */
	if (json_is_string(m))
		return m;
	return NULL;
}

/* A body worth quoting when it is not JSON: text, not an HTML page. */
static bool is_plain_text(const char *body, size_t len)
{
	size_t i = 0;

	while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
		i++;
	if (i == len || body[i] == '<' || body[i] == '{' || body[i] == '[')
		return false;
	/* Sequences are checked against the whole body, so one that crosses
	 * the window's end is judged by its real bytes. */
	for (size_t k = i; k < len && k < i + API_TEXT_MAX; ) {
		unsigned char c = (unsigned char)body[k];
		size_t n;

		if (c < 0x20 && c != '\t' && c != '\r' && c != '\n')
			return false;
		n = utf8_seq((const unsigned char *)body + k, len - k);
		if (n == 0)
			return false;
		k += n;
	}
	return true;
}

const char *api_http_error(long status, const char *body, size_t len, char *out, size_t outlen)
{
	char text[API_TEXT_MAX + 1] = "";
	json_t *root = NULL;

	if (outlen == 0)
		return out;
	if (body != NULL && len > 0) {
		root = json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (json_is_object(root)) {
			const json_t *m = body_message(root);

			if (m != NULL)
				api_json_text(m, text, sizeof(text));
		} else if (root == NULL && is_plain_text(body, len)) {
			api_clean_text(body, len, text, sizeof(text));
		}
		json_decref(root);
	}
	if (text[0] != '\0')
		snprintf(out, outlen, "%ld %s", status, text);
	else
		snprintf(out, outlen, "%ld %s", status, reason_phrase(status));
	return out;
}

/* ---- the stream decoder ---------------------------------------------------- */

void api_stream_init(struct api_stream *self, enum api_kind kind, const struct provider_sink *sink)
{
	memset(self, 0, sizeof(*self));
	self->kind = kind;
	self->sink = *sink;
	self->stop = STOP_STOP;
}

int api_stream_failf(struct api_stream *self, const char *fmt, ...)
{
	va_list ap;

	if (self->failed || self->complete)
		return -1;
	self->failed = true;
	va_start(ap, fmt);
	vsnprintf(self->error, sizeof(self->error), fmt, ap);
	va_end(ap);
	return -1;
}

void api_stream_fail(struct api_stream *self, const char *message)
{
	api_stream_failf(self, "%s", message);
}

void api_stream_begin(struct api_stream *self)
{
	if (self->started)
		return;
	self->started = true;
	self->sink.start(self->sink.ctx);
}

void api_stream_text(struct api_stream *self, const char *text, size_t len)
{
	if (len == 0)
		return;
	api_stream_begin(self);
	if (!self->text_open) {
		self->text_open = true;
		self->sink.text_start(self->sink.ctx);
	}
	self->sink.text_delta(self->sink.ctx, text, len);
}

json_t *api_stream_parse(struct api_stream *self, const struct sse_event *ev)
{
	json_error_t jerr;
	json_t *root = json_loadb(ev->data, ev->data_len, JSON_ALLOW_NUL, &jerr);

	if (root == NULL) {
		char why[sizeof(jerr.text)];

		api_clean_text(jerr.text, strlen(jerr.text), why, sizeof(why));
		api_stream_failf(self, "malformed stream: %s", why);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		api_stream_failf(self, "malformed stream: expected a JSON object");
		return NULL;
	}
	return root;
}

int api_stream_event(struct api_stream *self, const struct sse_event *ev)
{
	if (self->failed)
		return -1;
	if (self->done)
		return 0;
	/* The decoders' own results only say "stop here"; a failure recorded
	 * after the terminal marker is ignored, so self->failed decides. */
	if (self->kind == API_ANTHROPIC)
		api_anthropic_event(self, ev);
	else
		api_openai_event(self, ev);
	return self->failed ? -1 : 0;
}

int api_stream_sse_cb(void *ctx, const struct sse_event *ev)
{
	return api_stream_event(ctx, ev) != 0 ? 1 : 0;
}

bool api_stream_done(const struct api_stream *self)
{
	return self->done || self->failed;
}

void api_stream_end(struct api_stream *self, struct provider_result *out)
{
	if (self->text_open) {
		self->text_open = false;
		self->sink.text_end(self->sink.ctx);
	}
	if (!self->complete)
		api_stream_fail(self, API_TRUNCATED);
	memset(out, 0, sizeof(*out));
	out->hint_ms = -1;
	out->input_tokens = self->input_tokens;
	out->output_tokens = self->output_tokens;
	if (self->failed) {
		out->stop = STOP_ERROR;
		out->error_message = self->error;
	} else {
		out->stop = self->stop;
		out->error_message = self->stop == STOP_ERROR ? self->error : NULL;
	}
}

/* ---- OpenAI events --------------------------------------------------------- */

static bool data_is_done(const struct sse_event *ev)
{
	const char *d = ev->data;
	size_t n = ev->data_len;

	while (n > 0 && (d[n - 1] == ' ' || d[n - 1] == '\t' || d[n - 1] == '\r'))
		n--;
	return n == 6 && memcmp(d, "[DONE]", 6) == 0;
}

static void openai_finish(struct api_stream *self, const char *reason)
{
	if (strcmp(reason, "stop") == 0) {
		self->stop = STOP_STOP;
	} else if (strcmp(reason, "length") == 0) {
		self->stop = STOP_LENGTH;
	} else if (strcmp(reason, "tool_calls") == 0 || strcmp(reason, "function_call") == 0) {
		self->stop = STOP_TOOL_USE;
	} else if (strcmp(reason, "content_filter") == 0) {
		self->stop = STOP_ERROR;
		snprintf(self->error, sizeof(self->error),
			 "content_filter: the provider's content filter stopped the answer");
	} else {
		char r[64];

		self->stop = STOP_ERROR;
		api_clean_text(reason, strlen(reason), r, sizeof(r));
		snprintf(self->error, sizeof(self->error), "Unhandled stop reason: %s", r);
	}
	self->complete = true;
}

static void openai_usage(struct api_stream *self, const json_t *usage)
{
	const json_t *in = json_object_get(usage, "prompt_tokens");
	const json_t *out = json_object_get(usage, "completion_tokens");

	if (json_is_integer(in))
		self->input_tokens = json_integer_value(in);
	if (json_is_integer(out))
		self->output_tokens = json_integer_value(out);
}

/* An in-stream error: {"error": {"message": ...}} (OpenAI, OpenRouter) or
 * {"error": "..."} (some compatible servers). */
/* "<type or code>: <message>", like the Anthropic form: the type
 * ("server_error", "rate_limit_exceeded") is what the classifier can read. */
static int openai_error(struct api_stream *self, const json_t *err)
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

int api_quick_keep(const struct jsonscan *js, struct api_quick *q)
{
	if (q->content != NULL && jsonscan_in_scratch(js, q->content)) {
		if (q->content_len > sizeof(q->content_buf))
			return 0;
		memcpy(q->content_buf, q->content, q->content_len);
		q->content = q->content_buf;
	}
	if (q->reason != NULL) {
		memcpy(q->reason_buf, q->reason, q->reason_len);
		q->reason_buf[q->reason_len] = '\0';
		q->reason = q->reason_buf;
	}
	return 1;
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
				if (!JSONSCAN_IS(key, klen, "content")) {
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

	q->content = q->reason = NULL;
	q->content_len = q->reason_len = 0;
	jsonscan_init(&js, data, len);
	if (jsonscan_object(&js) != 0)
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
	if (rc != 0 || !jsonscan_end(&js))
		return 0;
	return api_quick_keep(&js, q);
}

int api_openai_event(struct api_stream *self, const struct sse_event *ev)
{
	struct api_quick q;

	if (data_is_done(ev)) {
		api_stream_begin(self);
		self->complete = true;
		self->done = true;
		return 0;
	}
	if (!api_openai_quick(ev->data, ev->data_len, &q))
		return api_openai_event_tree(self, ev);
	api_stream_begin(self);
	if (q.content != NULL && !self->complete)
		api_stream_text(self, q.content, q.content_len);
	if (q.reason != NULL && !self->complete)
		openai_finish(self, q.reason);
	return 0;
}

int api_openai_event_tree(struct api_stream *self, const struct sse_event *ev)
{
	json_t *root, *choice, *delta, *content, *reason, *usage, *err;
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
		rc = openai_error(self, err);
		goto out;
	}
	usage = json_object_get(root, "usage");
	if (json_is_object(usage))
		openai_usage(self, usage);
	choice = first_choice(json_object_get(root, "choices"));
	if (choice == NULL)
		goto out;
	delta = json_object_get(choice, "delta");
	content = json_object_get(delta, "content");
	if (json_is_string(content) && !self->complete)
		api_stream_text(self, json_string_value(content), json_string_length(content));
	reason = json_object_get(choice, "finish_reason");
	if (json_is_string(reason) && !self->complete)
		openai_finish(self, json_string_value(reason));
out:
	json_decref(root);
	return rc;
}

/* ---- OpenAI requests ------------------------------------------------------- */

static bool is_role(const json_t *msg, const char *role)
{
	const char *r = json_string_value(json_object_get(msg, "role"));

	return r != NULL && strcmp(r, role) == 0;
}

static bool nonempty_string(const json_t *v)
{
	return json_is_string(v) && json_string_length(v) > 0;
}

/* content parts of a user message (string or array), or NULL. */
static json_t *openai_user_content(const json_t *content)
{
	json_t *parts = json_array();
	const json_t *part;
	size_t i;

	if (parts == NULL)
		return NULL;
	if (nonempty_string(content))
		json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "text", "text", content));
	json_array_foreach(content, i, part) {
		const char *type = json_string_value(json_object_get(part, "type"));
		const json_t *text = json_object_get(part, "text");
		const json_t *data = json_object_get(part, "data");
		const json_t *mime = json_object_get(part, "mimeType");

		if (type == NULL)
			continue;
		if (strcmp(type, "text") == 0 && nonempty_string(text)) {
			json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "text", "text", text));
		} else if (strcmp(type, "image") == 0 && nonempty_string(data) && nonempty_string(mime)) {
			json_t *url = json_sprintf("data:%s;base64,%s", json_string_value(mime),
						   json_string_value(data));

			if (url == NULL)
				goto fail;
			json_array_append_new(parts, json_pack("{s:s, s:{s:o}}", "type", "image_url",
							       "image_url", "url", url));
		}
	}
	return parts;
fail:
	json_decref(parts);
	return NULL;
}

static json_t *openai_assistant_content(const json_t *content)
{
	json_t *parts = json_array();
	const json_t *part;
	size_t i;

	if (parts == NULL)
		return NULL;
	if (nonempty_string(content))
		json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "text", "text", content));
	json_array_foreach(content, i, part) {
		const char *type = json_string_value(json_object_get(part, "type"));
		const json_t *text = json_object_get(part, "text");

		if (type != NULL && strcmp(type, "text") == 0 && nonempty_string(text))
			json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "text", "text", text));
	}
	return parts;
}

bool api_assistant_failed(const json_t *msg)
{
	const char *stop = json_string_value(json_object_get(msg, "stopReason"));

	return stop != NULL && (strcmp(stop, "error") == 0 || strcmp(stop, "aborted") == 0);
}

json_t *api_openai_request(const json_t *messages, const char *model, int64_t max_tokens)
{
	json_t *out, *body;
	const json_t *msg;
	size_t i;

	if (!json_is_array(messages) || model == NULL)
		return NULL;
	out = json_array();
	if (out == NULL)
		return NULL;
	json_array_foreach(messages, i, msg) {
		const json_t *content = json_object_get(msg, "content");
		const char *role;
		json_t *parts;

		if (is_role(msg, "user")) {
			role = "user";
			parts = openai_user_content(content);
		} else if (is_role(msg, "assistant") && !api_assistant_failed(msg)) {
			role = "assistant";
			parts = openai_assistant_content(content);
		} else {
			continue;
		}
		if (parts == NULL)
			goto fail;
		if (json_array_size(parts) == 0) {
			json_decref(parts);
			continue;
		}
		if (json_array_append_new(out, json_pack("{s:s, s:o}", "role", role, "content", parts)) != 0)
			goto fail;
	}
	body = json_pack("{s:s, s:o, s:b, s:{s:b}}", "model", model, "messages", out, "stream", 1,
			 "stream_options", "include_usage", 1);
	if (body != NULL && max_tokens > 0 &&
	    json_object_set_new(body, "max_completion_tokens", json_integer(max_tokens)) != 0) {
		json_decref(body);
		return NULL;
	}
	return body;
fail:
	json_decref(out);
	return NULL;
}

json_t *api_request(enum api_kind kind, const json_t *messages, const char *model, int64_t max_tokens)
{
	return kind == API_ANTHROPIC ? api_anthropic_request(messages, model, max_tokens)
				     : api_openai_request(messages, model, max_tokens);
}

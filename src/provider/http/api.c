/* What the wire formats share: error texts, the stream decoder's life cycle
 * and its dispatch through the format's table, the message list of a
 * request (see api.h). */
#include "provider/http/api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/number.h"
#include "base/utf8.h"

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

void api_stream_init(struct api_stream *self, const struct api_format *format,
		     const struct provider_sink *sink)
{
	memset(self, 0, sizeof(*self));
	self->format = format;
	self->sink = *sink;
	self->stop = STOP_STOP;
	self->last_seq = -1;
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

static bool has_thinking(const struct api_stream *self)
{
	return self->sink.thinking_start != NULL && self->sink.thinking_delta != NULL &&
	       self->sink.thinking_end != NULL;
}

static void close_text(struct api_stream *self)
{
	if (self->text_open) {
		self->text_open = false;
		self->sink.text_end(self->sink.ctx);
	}
}

void api_stream_thinking(struct api_stream *self, const char *text, size_t len)
{
	if (len == 0 || !has_thinking(self))
		return;
	api_stream_begin(self);
	close_text(self);
	if (!self->thinking_open) {
		self->thinking_open = true;
		self->sink.thinking_start(self->sink.ctx);
	}
	self->sink.thinking_delta(self->sink.ctx, text, len);
}

void api_stream_thinking_start(struct api_stream *self)
{
	if (!has_thinking(self) || self->thinking_open)
		return;
	api_stream_begin(self);
	close_text(self);
	self->thinking_open = true;
	self->sink.thinking_start(self->sink.ctx);
}

void api_stream_thinking_end(struct api_stream *self, const char *signature, size_t len,
			     bool redacted)
{
	if (!has_thinking(self))
		return;
	if (!self->thinking_open) {
		if (!redacted)
			return;
		api_stream_begin(self);
		close_text(self);
		self->sink.thinking_start(self->sink.ctx);
	}
	self->thinking_open = false;
	self->thinking_signature = NULL;
	self->sink.thinking_end(self->sink.ctx, signature, signature != NULL ? len : 0, redacted);
}

void api_stream_thinking_sign(struct api_stream *self, const char *sig, size_t len)
{
	if (!self->thinking_open || len == 0)
		return;
	if (len >= sizeof(self->held_signature)) {
		LOG_DEBUG("dropped a thinking signature of %zu bytes (at most %zu are kept)", len,
			  sizeof(self->held_signature) - 1);
		return;
	}
	memcpy(self->held_signature, sig, len);
	self->held_signature[len] = '\0';
	self->thinking_signature = self->held_signature;
}

/* A thinking block closed by what comes after it. */
static void close_thinking(struct api_stream *self)
{
	const char *sig = self->thinking_signature;

	api_stream_thinking_end(self, sig, sig != NULL ? strlen(sig) : 0, false);
}

void api_stream_text(struct api_stream *self, const char *text, size_t len)
{
	if (len == 0)
		return;
	api_stream_begin(self);
	if (self->thinking_open)
		close_thinking(self);
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
	struct api_quick q;

	if (self->failed)
		return -1;
	if (self->done)
		return 0;
	/* The everyday text delta is read in place (no tree, no allocation);
	 * the rest goes to jansson. The decoders' own results only say "stop
	 * here"; a failure recorded after the terminal marker is ignored, so
	 * self->failed decides. */
	if (self->format->quick(ev, &q)) {
		api_stream_begin(self);
		if (q.has_seq)
			self->last_seq = q.seq;
		if (q.content != NULL && !self->complete)
			api_stream_text(self, q.content, q.content_len);
		if (q.reason != NULL && !self->complete)
			self->format->finish(self, q.reason);
	} else {
		self->format->event_tree(self, ev);
	}
	return self->failed ? -1 : 0;
}

int api_stream_sse_cb(void *ctx, const struct sse_event *ev)
{
	return api_stream_event(ctx, ev) != 0 ? 1 : 0;
}

bool api_stream_count(struct api_stream *self, const json_t *v, int64_t *count)
{
	int64_t n;
	enum number_read r = number_from_json(v, &n);

	if (r > 0) {
		*count = n;
		return true;
	}
	if (r == NUMBER_REJECTED && !self->bad_usage_logged) {
		self->bad_usage_logged = true;
		LOG_DEBUG("ignored a token count of the provider's: not a whole number >= 0");
	}
	return false;
}

void api_stream_usage(struct api_stream *self, const json_t *input, const json_t *output)
{
	api_stream_count(self, input, &self->input_tokens);
	api_stream_count(self, output, &self->output_tokens);
}

bool api_stream_done(const struct api_stream *self)
{
	return self->done || self->failed;
}

void api_stream_end(struct api_stream *self, struct provider_result *out)
{
	if (self->thinking_open)
		close_thinking(self);
	close_text(self);
	if (!self->complete)
		api_stream_fail(self, API_TRUNCATED);
	memset(out, 0, sizeof(*out));
	out->hint_ms = -1;
	out->input_tokens = self->input_tokens;
	out->output_tokens = self->output_tokens;
	out->cache_read_tokens = self->cache_read_tokens;
	out->cache_write_tokens = self->cache_write_tokens;
	out->total_tokens = self->total_tokens;
	out->tool_call_begun = self->tool_call_begun;
	if (self->failed) {
		out->stop = STOP_ERROR;
		out->error_message = self->error;
	} else {
		out->stop = self->stop;
		out->error_message = self->stop == STOP_ERROR ? self->error : NULL;
	}
}


int api_quick_open(struct jsonscan *js, const char *data, size_t len, struct api_quick *q)
{
	q->content = q->reason = NULL;
	q->content_len = q->reason_len = 0;
	q->has_seq = false;
	jsonscan_init(js, data, len);
	return jsonscan_object(js) != 0 ? JSONSCAN_BAIL : 0;
}

int api_quick_close(struct jsonscan *js, int rc, struct api_quick *q)
{
	if (rc != 0 || !jsonscan_end(js))
		return 0;
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

/* ---- requests -------------------------------------------------------------- */

static bool is_role(const json_t *msg, const char *role)
{
	const char *r = json_string_value(json_object_get(msg, "role"));

	return r != NULL && strcmp(r, role) == 0;
}

static bool nonempty_string(const json_t *v)
{
	return json_is_string(v) && json_string_length(v) > 0;
}

bool api_assistant_failed(const json_t *msg)
{
	const char *stop = json_string_value(json_object_get(msg, "stopReason"));

	return stop != NULL && (strcmp(stop, "error") == 0 || strcmp(stop, "aborted") == 0);
}

static int add_text(json_t *parts, const json_t *text)
{
	return json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "text", "text", text));
}

/* The parts of a message (content: string or array): its texts, and its
 * images when image is not NULL. Formats refuse empty text parts, so they
 * are left out. */
const json_t *api_model_entry(const struct api_request *req)
{
	const json_t *m;
	size_t i;

	if (req->model == NULL)
		return NULL;
	json_array_foreach(json_object_get(req->options, "models"), i, m) {
		const char *id = json_string_value(json_object_get(m, "id"));

		if (id != NULL && strcmp(id, req->model) == 0)
			return m;
	}
	return NULL;
}

bool api_same_model(const json_t *msg, const char *api, const char *model)
{
	const char *a = json_string_value(json_object_get(msg, "api"));
	const char *m = json_string_value(json_object_get(msg, "model"));

	return a != NULL && m != NULL && api != NULL && model != NULL && strcmp(a, api) == 0 &&
	       strcmp(m, model) == 0;
}

static json_t *content_parts(const json_t *content, api_image_fn image, api_thinking_fn thinking,
			     bool same)
{
	json_t *parts = json_array();
	const json_t *part;
	size_t i;

	if (parts == NULL)
		return NULL;
	if (nonempty_string(content) && add_text(parts, content) != 0)
		goto fail;
	json_array_foreach(content, i, part) {
		const char *type = json_string_value(json_object_get(part, "type"));
		const json_t *text = json_object_get(part, "text");
		const json_t *data = json_object_get(part, "data");
		const json_t *mime = json_object_get(part, "mimeType");

		if (type == NULL)
			continue;
		if (strcmp(type, "text") == 0 && nonempty_string(text)) {
			if (add_text(parts, text) != 0)
				goto fail;
		} else if (image != NULL && strcmp(type, "image") == 0 && nonempty_string(data) &&
			   nonempty_string(mime)) {
			if (json_array_append_new(parts, image(mime, data)) != 0)
				goto fail;
		} else if (thinking != NULL && strcmp(type, "thinking") == 0) {
			if (thinking(parts, part, same) != 0)
				goto fail;
		}
	}
	return parts;
fail:
	json_decref(parts);
	return NULL;
}

json_t *api_messages(const json_t *messages, api_image_fn image)
{
	return api_messages_thinking(messages, image, NULL, NULL, NULL);
}

json_t *api_messages_map(const json_t *messages, const char *assistant_role,
			 const char *parts_key, api_parts_fn parts, void *ctx)
{
	json_t *out;
	const json_t *msg;
	size_t i;

	if (!json_is_array(messages))
		return NULL;
	out = json_array();
	if (out == NULL)
		return NULL;
	json_array_foreach(messages, i, msg) {
		bool user = is_role(msg, "user");
		json_t *p;

		if (!user && !(is_role(msg, "assistant") && !api_assistant_failed(msg)))
			continue;
		p = parts(msg, user, ctx);
		if (p == NULL)
			goto fail;
		if (json_array_size(p) == 0) {
			json_decref(p);
			continue;
		}
		if (json_array_append_new(out, json_pack("{s:s, s:o}", "role",
							 user ? "user" : assistant_role,
							 parts_key, p)) != 0)
			goto fail;
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}

struct content_fns {
	api_image_fn image;
	api_thinking_fn thinking;
	const char *api, *model;  /* the request's, for api_thinking_fn's `same` */
};

static json_t *message_parts(const json_t *msg, bool user, void *ctx)
{
	const struct content_fns *fns = ctx;

	return content_parts(json_object_get(msg, "content"), user ? fns->image : NULL,
			     user ? NULL : fns->thinking,
			     !user && api_same_model(msg, fns->api, fns->model));
}

json_t *api_messages_thinking(const json_t *messages, api_image_fn image,
			      api_thinking_fn thinking, const char *api, const char *model)
{
	struct content_fns fns = { image, thinking, api, model };

	return api_messages_map(messages, "assistant", "content", message_parts, &fns);
}

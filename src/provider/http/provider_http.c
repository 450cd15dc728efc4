#include "provider/http/provider_http.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "provider/http/api.h"
#include "provider/http/api_formats.h"
#include "provider/http/api_gemini.h"
#include "provider/http/base_url.h"
#include "base/errbuf.h"
#include "base/log.h"
#include "base/secret.h"
#include "provider/http/sse.h"

/* An error response's body is read up to this much, for its message. */
#define ERROR_BODY_MAX (64u * 1024u)
/* One SSE event may not grow past this (a huge chunk is fine; endless data
 * without a blank line is not). */
#define SSE_EVENT_MAX (16u * 1024u * 1024u)

struct key {
	char *name;   /* what the daemon calls it */
	char *secret; /* NULL when the environment variable is unset */
	char *hint;   /* how to set it, for the error */
};

#define PREFILL_REFUSED_MAX 8
/* How long the end of a whole answer's body is waited for, to keep its
 * connection (http_request_drain). */
#define DRAIN_MS 2000

struct http_provider {
	struct provider base;
	struct http_client *http;
	struct clock *clock;
	long connect_timeout_ms, idle_timeout_ms;
	char *name, *api_name, *base_url;
	const struct api_format *format; /* a constant table */
	json_t *headers;       /* owned: extra "Name": "value" */
	json_t *options;       /* owned: the provider's settings entry, without its keys */
	struct key *keys;
	size_t nkeys;

	/* The running attempt. */
	struct http_request *req;
	struct provider_sink sink;
	/* What the decoder writes to: sink, with every text delta passing
	 * through `masker` first (ctx: this provider). */
	struct provider_sink masked_sink;
	struct secret_stream masker;
	struct sse_parser sse;
	struct api_stream stream;
	char *body;            /* owned: the request JSON */
	char **header_lines;   /* owned: NULL-terminated */
	long status;
	bool is_error;
	char *err_body;        /* masked as it arrives (err_masker), then cut */
	size_t err_len;
	struct secret_stream err_masker;
	/* The failure text decoded again from a masked copy of the event that
	 * failed the stream ("" when masking changed nothing there). */
	char stream_error[API_ERROR_MAX];
	json_t *resp_headers;  /* owned: the response's headers, lower-case name -> value */
	struct provider_result result;
	/* Owned: the typed failure the last result borrows (body, headers). */
	char *result_body;
	json_t *result_headers;
	char result_error[API_ERROR_MAX];
	struct clock_timer finish_timer;
	bool finishing;
	/* A cut Responses stream in background mode: its id and the last
	 * sequence number read ("" / -1: nothing to resume). */
	char resume_id[96];
	int64_t resume_seq;
	/* The model the running attempt prefills for ("": none), and the
	 * models that refused a prefill here: asked again, they get a
	 * continuation turn or a replay, not a second refused request. */
	char prefill_model[128];
	char refused_prefill[PREFILL_REFUSED_MAX][128];
	size_t nrefused;
};

/* The built-in providers (pi's names and URLs) ... */
static const struct builtin_provider {
	const char *name, *api, *base_url, *key_env;
} builtin_providers[] = {
	{ "openai", "openai-responses", "https://api.openai.com/v1", "OPENAI_API_KEY" },
	{ "anthropic", "anthropic-messages", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY" },
	{ "google", "google-generative-ai", API_GEMINI_BASE_URL, "GEMINI_API_KEY" },
	{ "openrouter", "openai-completions", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY" },
	{ "ollama", "openai-completions", "http://127.0.0.1:11434/v1", NULL },
	/* No default: a resource is the user's own (AZURE_OPENAI_ENDPOINT). */
	{ "azure", "azure-openai-responses", NULL, "AZURE_OPENAI_API_KEY" },
};

/* ... and their models, first the default, with the limits and the
 * reasoning flag as pi's model list declares them: a model that reasons
 * gets set_thinking_level's knob (Anthropic's budget, OpenAI's effort,
 * Gemini's thinking config). 0 leaves a limit to the API. */
static const struct builtin_model {
	const char *provider, *id;
	bool reasoning;
	json_int_t context_window, max_tokens;
} builtin_models[] = {
	{ "openai", "gpt-4.1-mini", false, 1047576, 32768 },
	{ "openai", "gpt-4.1", false, 1047576, 32768 },
	{ "openai", "gpt-4o-mini", false, 128000, 16384 },
	{ "openai", "gpt-5", true, 400000, 128000 },
	{ "openai", "gpt-5-mini", true, 400000, 128000 },
	{ "openai", "o4-mini", true, 200000, 100000 },
	{ "anthropic", "claude-sonnet-4-5", true, 200000, 64000 },
	{ "anthropic", "claude-haiku-4-5", true, 200000, 64000 },
	{ "anthropic", "claude-opus-4-1", true, 200000, 32000 },
	{ "google", "gemini-2.5-flash", true, 1048576, 65536 },
	{ "google", "gemini-2.5-pro", true, 1048576, 65536 },
	{ "google", "gemini-2.5-flash-lite", true, 1048576, 65536 },
	{ "openrouter", "openai/gpt-4.1-mini", false, 0, 0 },
	{ "openrouter", "anthropic/claude-sonnet-4.5", false, 0, 0 },
	{ "ollama", "llama3.2", false, 0, 0 },
	{ "ollama", "qwen2.5-coder", false, 0, 0 },
	/* Deployment names; Azure's are the user's, these are the usual ones. */
	{ "azure", "gpt-4.1-mini", false, 1047576, 32768 },
	{ "azure", "gpt-4.1", false, 1047576, 32768 },
	{ "azure", "o4-mini", true, 200000, 100000 },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* One model entry: its id alone when the table says nothing more. */
static json_t *builtin_model_json(const struct builtin_model *m)
{
	json_t *o;

	if (!m->reasoning && m->context_window == 0)
		return json_string(m->id);
	o = json_pack("{s:s, s:b}", "id", m->id, "reasoning", m->reasoning);
	if (o != NULL && m->context_window > 0)
		json_object_set_new(o, "contextWindow", json_integer(m->context_window));
	if (o != NULL && m->max_tokens > 0)
		json_object_set_new(o, "maxTokens", json_integer(m->max_tokens));
	return o;
}

json_t *provider_http_builtins(void)
{
	json_t *all = json_object();

	for (size_t i = 0; all != NULL && i < COUNT(builtin_providers); i++) {
		const struct builtin_provider *p = &builtin_providers[i];
		json_t *models = json_array();
		json_t *entry = json_pack("{s:s}", "api", p->api);

		for (size_t j = 0; models != NULL && j < COUNT(builtin_models); j++)
			if (strcmp(builtin_models[j].provider, p->name) == 0 &&
			    json_array_append_new(models, builtin_model_json(&builtin_models[j])) != 0) {
				json_decref(models);
				models = NULL;
			}
		if (entry != NULL && p->base_url != NULL &&
		    json_object_set_new(entry, "baseUrl", json_string(p->base_url)) != 0) {
			json_decref(entry);
			entry = NULL;
		}
		if (entry != NULL && p->key_env != NULL &&
		    json_object_set_new(entry, "apiKeyEnv", json_string(p->key_env)) != 0) {
			json_decref(entry);
			entry = NULL;
		}
		if (models == NULL || entry == NULL) {
			json_decref(models);
			json_decref(entry);
			goto fail;
		}
		/* Both steal their value, also on failure. */
		if (json_object_set_new(entry, "models", models) != 0) {
			json_decref(entry);
			goto fail;
		}
		if (json_object_set_new(all, p->name, entry) != 0)
			goto fail;
	}
	return all;
fail:
	json_decref(all);
	return NULL;
}

/* A string or an array of strings, as a new array; NULL (with err) otherwise. */
static json_t *one_or_many(const json_t *v, const char *name, const char *field,
			   char *err, size_t errlen)
{
	size_t i;
	json_t *item;

	if (v == NULL)
		return json_array();
	if (json_is_string(v))
		return json_pack("[O]", v);
	if (json_is_array(v)) {
		json_array_foreach(v, i, item) {
			if (!json_is_string(item) || json_string_length(item) == 0) {
				errbuf_set(err, errlen, "providers.%s.%s[%zu] must be a non-empty string", name,
				           field, i);
				return NULL;
			}
		}
		return json_copy((json_t *)v);
	}
	errbuf_set(err, errlen, "providers.%s.%s must be a string or a list of strings", name, field);
	return NULL;
}

static int add_key(struct http_provider *self, const char *label, const char *secret,
		   const char *hint)
{
	struct key *k = realloc(self->keys, (self->nkeys + 1) * sizeof(*k));

	if (k == NULL)
		return -1;
	self->keys = k;
	k = &self->keys[self->nkeys++];
	k->name = strdup(label);
	k->secret = secret && secret[0] ? strdup(secret) : NULL;
	k->hint = strdup(hint);
	if (k->secret != NULL && secret_register(k->secret) != 0)
		return -1;
	return k->name && k->hint ? 0 : -1;
}

static int load_keys(struct http_provider *self, const json_t *cfg, char *err, size_t errlen)
{
	json_t *literal = one_or_many(json_object_get(cfg, "apiKey"), self->name, "apiKey", err, errlen);
	json_t *env = one_or_many(json_object_get(cfg, "apiKeyEnv"), self->name, "apiKeyEnv", err, errlen);
	size_t i;
	json_t *v;
	int rc = 0;
	char label[160], hint[200];

	if (literal == NULL || env == NULL) {
		rc = -1;
		goto out;
	}
	json_array_foreach(literal, i, v) {
		snprintf(label, sizeof(label), "%s.apiKey[%zu]", self->name, i);
		snprintf(hint, sizeof(hint), "providers.%s.apiKey", self->name);
		rc |= add_key(self, label, json_string_value(v), hint);
	}
	json_array_foreach(env, i, v) {
		snprintf(hint, sizeof(hint), "set %s", json_string_value(v));
		rc |= add_key(self, json_string_value(v), getenv(json_string_value(v)), hint);
	}
	/* The keys that are set take turns; when none is, the first one's name
	 * makes the "No API key" error say what to set. */
	self->base.credentials = json_array();
	for (i = 0; i < self->nkeys && self->base.credentials; i++)
		if (self->keys[i].secret != NULL)
			json_array_append_new(self->base.credentials, json_string(self->keys[i].name));
	for (i = 0; i < self->nkeys && self->base.credentials &&
		    json_array_size(self->base.credentials) == 0; i++)
		json_array_append_new(self->base.credentials, json_string(self->keys[i].name));
	/* The fleet names each key by a hash of its secret, so daemons that
	 * call one key by different names share what is known of it. */
	self->base.fingerprints = json_object();
	for (i = 0; i < self->nkeys && self->base.fingerprints; i++) {
		char fp[17];

		if (self->keys[i].secret == NULL)
			continue;
		secret_fingerprint(self->keys[i].secret, fp);
		json_object_set_new(self->base.fingerprints, self->keys[i].name, json_string(fp));
	}
	if (self->base.fingerprints == NULL)
		rc = -1;
	if (rc != 0)
		errbuf_set(err, errlen, "out of memory");
out:
	json_decref(literal);
	json_decref(env);
	return rc;
}

/* Header values that carry a credential ("Authorization", "X-Api-Key",
 * ...) are masked like keys; "Bearer <token>" also by its token alone. */
static int register_headers(struct http_provider *self)
{
	const char *name, *value, *sp;
	json_t *v;
	int rc = 0;

	json_object_foreach(self->headers, name, v) {
		if (!secret_name(name, strlen(name)) && strncasecmp(name, "authorization", 13) != 0 &&
		    strncasecmp(name, "proxy-authorization", 19) != 0)
			continue;
		value = json_string_value(v);
		rc |= secret_register(value);
		sp = strchr(value, ' ');
		if (sp != NULL)
			rc |= secret_register(sp + 1);
	}
	return rc;
}

static int check_config(const char *name, const json_t *cfg, char *err, size_t errlen)
{
	const json_t *v;
	const char *key;

	if (!json_is_object(cfg))
		return errbuf_set(err, errlen, "providers.%s must be an object", name);
	v = json_object_get(cfg, "api");
	if (!json_is_string(v) || api_formats_find(json_string_value(v)) == NULL)
		return errbuf_set(err, errlen, "providers.%s.api must be \"openai-completions\", "
			          "\"openai-responses\", \"azure-openai-responses\", \"anthropic-messages\" or "
			          "\"google-generative-ai\"", name);
	/* Azure's api-version goes into the URL's query as it is. */
	v = json_object_get(cfg, "apiVersion");
	if (v != NULL && (!json_is_string(v) || json_string_length(v) == 0 ||
			  strspn(json_string_value(v), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				 "0123456789.-_") != json_string_length(v)))
		return errbuf_set(err, errlen, "providers.%s.apiVersion must be a version such as "
			          "\"v1\" or \"2025-04-01-preview\"", name);
	v = json_object_get(cfg, "baseUrl");
	if (!json_is_string(v) || !base_url_valid(json_string_value(v))) {
		const char *var = base_url_env_of(name, json_string_value(v));

		/* The key is meant for that variable's host: no default instead. */
		if (var != NULL)
			return errbuf_set(err, errlen, "%s is not an http:// or https:// URL with a host, "
				          "so nothing was sent (a key goes only where you point it): fix or "
				          "unset %s, or set providers.%s.baseUrl, which takes precedence",
				          var, var, name);
		var = base_url_env_name(name);
		if (v == NULL && var != NULL)
			return errbuf_set(err, errlen, "providers.%s.baseUrl is not set: set %s (your "
				          "resource, https://NAME.openai.azure.com) or providers.%s.baseUrl",
				          name, var, name);
		return errbuf_set(err, errlen, "providers.%s.baseUrl must be an http:// or https:// URL "
			          "with a host", name);
	}
	v = json_object_get(cfg, "headers");
	if (v != NULL && !json_is_object(v))
		return errbuf_set(err, errlen, "providers.%s.headers must be an object of strings", name);
	json_object_foreach((json_t *)v, key, v) {
		if (!json_is_string(v) || strpbrk(json_string_value(v), "\r\n") != NULL ||
		    strpbrk(key, ":\r\n ") != NULL)
			return errbuf_set(err, errlen, "providers.%s.headers.%.40s must be a one-line string",
				          name, key);
	}
	v = json_object_get(cfg, "models");
	if (!json_is_array(v) || json_array_size(v) == 0)
		return errbuf_set(err, errlen, "providers.%s.models must be a non-empty list of model ids",
			          name);
	for (size_t i = 0; i < json_array_size(v); i++) {
		const json_t *m = json_array_get(v, i), *n;

		if (json_is_string(m) && json_string_length(m) > 0)
			continue;
		if (!json_is_object(m) || !json_is_string(json_object_get(m, "id")))
			return errbuf_set(err, errlen, "providers.%s.models[%zu] must be a model id or "
				          "{\"id\": ..., \"contextWindow\"?: N, \"maxTokens\"?: N}", name, i);
		n = json_object_get(m, "contextWindow");
		if (n != NULL && (!json_is_integer(n) || json_integer_value(n) <= 0))
			return errbuf_set(err, errlen, "providers.%s.models[%zu].contextWindow must be a "
				          "positive integer", name, i);
		n = json_object_get(m, "maxTokens");
		if (n != NULL && (!json_is_integer(n) || json_integer_value(n) <= 0))
			return errbuf_set(err, errlen, "providers.%s.models[%zu].maxTokens must be a "
				          "positive integer", name, i);
		n = json_object_get(m, "reasoning");
		if (n != NULL && !json_is_boolean(n))
			return errbuf_set(err, errlen, "providers.%s.models[%zu].reasoning must be true "
				          "or false", name, i);
		n = json_object_get(m, "prefill");
		if (n != NULL && !json_is_boolean(n))
			return errbuf_set(err, errlen, "providers.%s.models[%zu].prefill must be true "
				          "or false", name, i);
	}
	v = json_object_get(cfg, "continueCutAnswers");
	if (v != NULL && (!json_is_string(v) || (strcmp(json_string_value(v), "lossless") != 0 &&
						 strcmp(json_string_value(v), "always") != 0 &&
						 strcmp(json_string_value(v), "off") != 0)))
		return errbuf_set(err, errlen, "providers.%s.continueCutAnswers must be \"lossless\", "
			          "\"always\" or \"off\"", name);
	return 0;
}

/* Continuing a cut answer. Anthropic's models from Claude 4.6 on refuse an
 * assistant prefill ("This model does not support assistant message
 * prefill"); the older ones, like every Claude model before, take it. A
 * model entry's "prefill" says otherwise. */
static const char *const no_prefill_models[] = {
	"opus-4-6", "sonnet-4-6", "haiku-4-6", "opus-4-7", "sonnet-4-7", "haiku-4-7",
	"opus-5", "sonnet-5", "haiku-5", "claude-5", NULL,
};

static bool prefill_by_default(const char *model)
{
	for (size_t i = 0; no_prefill_models[i] != NULL; i++)
		if (strstr(model, no_prefill_models[i]) != NULL)
			return false;
	return true;
}

/* Responses in background mode, so that a cut can be resumed: whenever
 * continuing cut answers is on (the provider's own setting first). */
static bool background_mode(struct http_provider *self, const char *setting)
{
	const json_t *own = json_object_get(self->options, "continueCutAnswers");

	if (strcmp(self->format->name, "openai-responses") != 0)
		return false;
	if (json_is_string(own))
		setting = json_string_value(own);
	return setting == NULL || strcmp(setting, "off") != 0;
}

static enum provider_continue http_continuation(struct provider *base, const char *model,
						const char *setting, const char **why)
{
	struct http_provider *self = (struct http_provider *)base;
	const json_t *own = json_object_get(self->options, "continueCutAnswers");
	const json_t *prefill = json_object_get(provider_model(base, model), "prefill");
	bool can_prefill = strcmp(self->format->name, "anthropic-messages") == 0 && model != NULL;

	(void)why;
	if (json_is_string(own))
		setting = json_string_value(own);
	if (setting == NULL || strcmp(setting, "off") == 0)
		return PROVIDER_CONTINUE_NONE;
	if (self->resume_id[0] != '\0' && self->resume_seq >= 0)
		return PROVIDER_CONTINUE_RESUME;
	if (can_prefill)
		can_prefill = json_is_boolean(prefill) ? json_is_true(prefill)
						       : prefill_by_default(model);
	for (size_t i = 0; can_prefill && i < self->nrefused; i++)
		can_prefill = strcmp(self->refused_prefill[i], model) != 0;
	if (can_prefill)
		return PROVIDER_CONTINUE_PREFILL;
	/* A continuation turn is the model's own retelling, not lossless. */
	return strcmp(setting, "always") == 0 ? PROVIDER_CONTINUE_TURN : PROVIDER_CONTINUE_NONE;
}

/* Finishing. The result goes to the session from a 0 ms timer, never from
 * inside a curl callback, so the session may start the next request. */

static void on_finish(struct clock_timer *t, void *ctx)
{
	struct http_provider *self = ctx;
	struct provider_sink sink = self->sink;

	(void)t;
	self->finishing = false;
	sink.finish(sink.ctx, &self->result);
}

static void discard(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	(void)text;
	(void)len;
}

static void release_attempt(struct http_provider *self)
{
	if (self->req != NULL)
		http_request_cancel(self->req);
	self->req = NULL;
	sse_release(&self->sse);
	free(self->body);
	self->body = NULL;
	if (self->header_lines != NULL) {
		for (char **h = self->header_lines; *h != NULL; h++)
			free(*h);
		free(self->header_lines);
		self->header_lines = NULL;
	}
	free(self->err_body);
	self->err_body = NULL;
	self->err_len = 0;
	/* What an ended attempt held back never reaches the next one. */
	secret_stream_end(&self->err_masker, discard, NULL);
	secret_stream_end(&self->masker, discard, NULL);
	json_decref(self->resp_headers);
	self->resp_headers = NULL;
}

/* The typed failure outlives the attempt until the result is delivered. */
static void release_result(struct http_provider *self)
{
	free(self->result_body);
	self->result_body = NULL;
	json_decref(self->result_headers);
	self->result_headers = NULL;
}

static bool body_says(const char *body, size_t len, const char *word)
{
	size_t n = strlen(word);

	for (size_t i = 0; body != NULL && i + n <= len; i++)
		if (strncasecmp(body + i, word, n) == 0)
			return true;
	return false;
}

/* A prefill answered with Anthropic's 400 that names it: that model is not
 * prefilled again by this provider (the oldest learned one goes first when
 * the list is full). */
static void learn_prefill(struct http_provider *self, const struct provider_result *r)
{
	const char *m = r->error_message;

	if (self->prefill_model[0] == '\0' || r->stop != STOP_ERROR || r->http_status != 400 ||
	    !(body_says(m, m ? strlen(m) : 0, "prefill") ||
	      body_says(r->error_body, r->error_body_len, "prefill")))
		return;
	if (self->nrefused == PREFILL_REFUSED_MAX) {
		memmove(self->refused_prefill[0], self->refused_prefill[1],
			sizeof(self->refused_prefill[0]) * (PREFILL_REFUSED_MAX - 1));
		self->nrefused--;
	}
	memcpy(self->refused_prefill[self->nrefused++], self->prefill_model,
	       sizeof(self->prefill_model));
	LOG_INFO("provider %s: %s refused an assistant prefill; its cut answers continue "
		 "otherwise from now on", self->name, self->prefill_model);
}

static void finish_with(struct http_provider *self, const struct provider_result *r)
{
	learn_prefill(self, r);
	self->prefill_model[0] = '\0';
	release_result(self);
	self->result = *r;
	if (r->error_body != NULL && r->error_body == self->err_body) {
		self->result_body = self->err_body;
		self->err_body = NULL;
	}
	if (r->headers != NULL && r->headers == self->resp_headers) {
		self->result_headers = self->resp_headers;
		self->resp_headers = NULL;
	}
	if (r->error_message != NULL) {
		/* Masked before it is cut, so a cut cannot leave a piece of a key. */
		if (r->error_message != self->result_error)
			secret_copy(self->result_error, sizeof(self->result_error), r->error_message,
				    strlen(r->error_message));
		else
			secret_mask_str(self->result_error);
		self->result.error_message = self->result_error;
	}
	release_attempt(self);
	self->finishing = true;
	clock_timer_start(self->clock, &self->finish_timer, 0, on_finish, self);
}

static void finish_stream(struct http_provider *self)
{
	struct provider_result r;

	api_stream_end(&self->stream, &r);
	r.hint_ms = -1;
	if (r.stop == STOP_ERROR && self->stream_error[0] != '\0')
		r.error_message = self->stream_error;
	/* A background response whose stream was cut (not one the server
	 * failed) can be resumed after what was read; so can one whose resume
	 * found no server (status 0: a dead pooled connection, say). */
	self->resume_id[0] = '\0';
	self->resume_seq = -1;
	if (r.stop == STOP_ERROR && (self->status == 200 || self->status == 0) &&
	    self->stream.response_id[0] != '\0' &&
	    self->stream.last_seq >= 0 && r.error_message != NULL &&
	    strncmp(r.error_message, "connection error", 16) == 0) {
		snprintf(self->resume_id, sizeof(self->resume_id), "%s", self->stream.response_id);
		self->resume_seq = self->stream.last_seq;
	}
	if (r.stop == STOP_ERROR && self->err_body != NULL) {
		r.error_body = self->err_body;
		r.error_body_len = self->err_len;
	}
	/* A failure inside a 200 stream has no status of its own; the headers
	 * (a retry-after, the rate-limit state) still count — and on a success
	 * the fleet reads the rate-limit state from them. */
	r.headers = self->resp_headers;
	finish_with(self, &r);
}

/* HTTP callbacks. */

static void on_response(void *ctx, long status, const char *const *headers, size_t n)
{
	struct http_provider *self = ctx;

	self->status = status;
	self->is_error = status < 200 || status >= 300;
	json_decref(self->resp_headers);
	self->resp_headers = json_object();
	/* The classifier reads the waits in them (base/hint.h), against the
	 * response's own Date header. */
	for (size_t i = 0; i < n; i++) {
		/* A value that is not UTF-8 is left out (jansson refuses it). */
		if (self->resp_headers != NULL)
			json_object_set_new(self->resp_headers, headers[2 * i],
					    json_string(headers[2 * i + 1]));
	}
}

/* The error body, masked (a server may echo the key back: "Incorrect API
 * key provided: ..."), is kept up to ERROR_BODY_MAX: the cut comes after
 * the mask. */
static void append_err(void *ctx, const char *bytes, size_t len)
{
	struct http_provider *self = ctx;
	size_t take = self->err_len + len > ERROR_BODY_MAX ? ERROR_BODY_MAX - self->err_len : len;
	char *p;

	if (take == 0)
		return;
	p = realloc(self->err_body, self->err_len + take + 1);
	if (p == NULL)
		return;
	self->err_body = p;
	memcpy(p + self->err_len, bytes, take);
	self->err_len += take;
}

static void none(void *ctx)
{
	(void)ctx;
}

static void none_delta(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	(void)text;
	(void)len;
}

static void none_finish(void *ctx, const struct provider_result *result)
{
	(void)ctx;
	(void)result;
}

/* The event that failed the stream: the decoder cut its error text from
 * the event's data (api_json_text) before any mask could see a key whole.
 * Decoded again from a masked copy, on a scratch decoder, for the text.
 * Only failures pay for this; the everyday text delta is masked at the
 * sink (masked_text_delta). */
static void remask_failure(struct http_provider *self, const struct sse_event *ev)
{
	static const struct provider_sink quiet = { .start = none, .text_start = none,
						    .text_delta = none_delta, .text_end = none,
						    .finish = none_finish };
	struct api_stream scratch;
	struct sse_event masked = *ev;
	size_t n = ev->data_len;
	char *copy = malloc(n + 1);

	self->stream_error[0] = '\0';
	if (copy == NULL)
		return;
	memcpy(copy, ev->data, n);
	if (secret_mask(copy, &n)) {
		copy[n] = '\0';
		masked.data = copy;
		masked.data_len = n;
		api_stream_init(&scratch, self->format, &quiet);
		api_stream_event(&scratch, &masked);
		if (scratch.failed)
			snprintf(self->stream_error, sizeof(self->stream_error), "%s", scratch.error);
		else
			snprintf(self->stream_error, sizeof(self->stream_error), "%s", SECRET_MASK);
	}
	/* A typed error object in the stream is the failure's body, masked,
	 * for the classifier (it reads the same fields as in an HTTP error). */
	if (self->stream.error_object && self->err_body == NULL) {
		copy[n < ERROR_BODY_MAX ? n : ERROR_BODY_MAX] = '\0';
		self->err_body = copy;
		self->err_len = n < ERROR_BODY_MAX ? n : ERROR_BODY_MAX;
		return;
	}
	free(copy);
}

static int on_sse_event(void *ctx, const struct sse_event *ev)
{
	struct http_provider *self = ctx;
	int rc = api_stream_sse_cb(&self->stream, ev);

	if (rc != 0)
		remask_failure(self, ev);
	return rc;
}

static void on_data(void *ctx, const char *bytes, size_t len)
{
	struct http_provider *self = ctx;
	int rc;

	if (self->finishing)
		return;
	if (self->is_error) {
		if (self->err_len < ERROR_BODY_MAX)
			secret_stream_feed(&self->err_masker, bytes, len, append_err, self);
		return;
	}
	rc = sse_feed(&self->sse, bytes, len, on_sse_event, self);
	if (rc == -1)
		api_stream_fail(&self->stream, self->sse.error);
	if (rc == 0 && api_stream_done(&self->stream) && self->req != NULL) {
		/* The answer is whole: the rest of the body (its last chunk, as a
		 * rule) is read in the background, so the connection serves the
		 * next request instead of a new TLS handshake. */
		http_request_drain(self->req, DRAIN_MS, self->body);
		self->req = NULL;
		self->body = NULL;
	}
	if (rc != 0 || api_stream_done(&self->stream))
		finish_stream(self);
}

static void on_done(void *ctx, int err, const char *message)
{
	struct http_provider *self = ctx;
	char text[API_ERROR_MAX];
	struct provider_result r = { .stop = STOP_ERROR, .hint_ms = -1 };

	self->req = NULL; /* the http module frees it after this call */
	if (self->finishing)
		return;
	if (self->is_error) {
		secret_stream_end(&self->err_masker, append_err, self);
		api_http_error(self->status, self->err_body ? self->err_body : "", self->err_len,
			       text, sizeof(text));
		r.error_message = text;
		r.http_status = (int)self->status;
		r.error_body = self->err_body;
		r.error_body_len = self->err_len;
		r.headers = self->resp_headers;
		finish_with(self, &r);
		return;
	}
	if (err != 0) {
		snprintf(text, sizeof(text), "connection error: %s", message ? message : "transfer failed");
		api_stream_fail(&self->stream, text);
	}
	finish_stream(self);
}

/* The decoder's sink: text deltas pass the streaming masker, so a key
 * split across two deltas is masked whole; the held tail goes out at the
 * text's end. */

static void masked_start(void *ctx)
{
	struct http_provider *self = ctx;

	self->sink.start(self->sink.ctx);
}

static void masked_text_start(void *ctx)
{
	struct http_provider *self = ctx;

	self->sink.text_start(self->sink.ctx);
}

static void emit_text(void *ctx, const char *text, size_t len)
{
	struct http_provider *self = ctx;

	self->sink.text_delta(self->sink.ctx, text, len);
}

static void masked_text_delta(void *ctx, const char *text, size_t len)
{
	struct http_provider *self = ctx;

	secret_stream_feed(&self->masker, text, len, emit_text, self);
}

static void masked_text_end(void *ctx)
{
	struct http_provider *self = ctx;

	secret_stream_end(&self->masker, emit_text, self);
	self->sink.text_end(self->sink.ctx);
}

/* Thinking passes the same masker: a thinking block and a text block are
 * never open together. The signature is the provider's opaque blob, sent
 * back as it came. */
static void masked_thinking_start(void *ctx)
{
	struct http_provider *self = ctx;

	self->sink.thinking_start(self->sink.ctx);
}

static void emit_thinking(void *ctx, const char *text, size_t len)
{
	struct http_provider *self = ctx;

	self->sink.thinking_delta(self->sink.ctx, text, len);
}

static void masked_thinking_delta(void *ctx, const char *text, size_t len)
{
	struct http_provider *self = ctx;

	secret_stream_feed(&self->masker, text, len, emit_thinking, self);
}

static void masked_thinking_end(void *ctx, const char *signature, size_t signature_len,
				bool redacted)
{
	struct http_provider *self = ctx;

	secret_stream_end(&self->masker, emit_thinking, self);
	self->sink.thinking_end(self->sink.ctx, signature, signature_len, redacted);
}

static void masked_finish(void *ctx, const struct provider_result *result)
{
	struct http_provider *self = ctx;

	self->sink.finish(self->sink.ctx, result);
}

static void masked_event(void *ctx, json_t *event)
{
	struct http_provider *self = ctx;

	secret_mask_json(event);
	self->sink.event(self->sink.ctx, event);
}

/* The attempt. */

static const struct key *pick_key(struct http_provider *self, const char *credential)
{
	for (size_t i = 0; i < self->nkeys; i++)
		if (credential == NULL || strcmp(self->keys[i].name, credential) == 0)
			return &self->keys[i];
	return NULL;
}

static char *header_line(const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 3;
	char *line = malloc(n);

	if (line != NULL)
		snprintf(line, n, "%s: %s", name, value);
	return line;
}

static int build_headers(struct http_provider *self, const struct key *key)
{
	size_t n = 0, cap = 7 + json_object_size(self->headers);
	char **h = calloc(cap + 1, sizeof(*h));
	const char *name;
	json_t *v;

	if (h == NULL)
		return -1;
	h[n++] = header_line("Content-Type", "application/json");
	h[n++] = header_line("Accept", "text/event-stream");
	/* curl would otherwise wait for "100 Continue" before a large body. */
	h[n++] = strdup("Expect:");
	if (key != NULL && key->secret != NULL) {
		size_t len = strlen(self->format->key_header) + strlen(self->format->key_prefix) +
			     strlen(key->secret) + 3;

		h[n] = malloc(len);
		if (h[n] != NULL)
			snprintf(h[n], len, "%s: %s%s", self->format->key_header, self->format->key_prefix,
				 key->secret);
		n++;
	}
	if (self->format->fixed_header != NULL)
		h[n++] = strdup(self->format->fixed_header);
	json_object_foreach(self->headers, name, v)
		h[n++] = header_line(name, json_string_value(v));
	self->header_lines = h;
	for (size_t i = 0; i < n; i++)
		if (h[i] == NULL)
			return -1;
	return 0;
}

static int http_start(struct provider *base, const struct attempt_ctx *ctx,
		      const struct provider_sink *sink, char *err, size_t errlen)
{
	struct http_provider *self = (struct http_provider *)base;
	const struct key *key = pick_key(self, ctx->credential);
	json_t *model = provider_model(base, ctx->model);
	json_t *body;
	struct api_request req;
	struct http_options opts = { 0 };
	struct http_callbacks cbs = { on_response, on_data, on_done, self };
	char url[2048];
	bool resume;

	release_attempt(self);
	if (self->nkeys > 0 && (key == NULL || key->secret == NULL))
		return errbuf_set(err, errlen, "No API key for provider %s: %s", self->name,
			          key ? key->hint : "configure apiKey or apiKeyEnv");
	req = (struct api_request){
		.messages = ctx->messages,
		.model = ctx->model,
		.max_tokens = json_integer_value(json_object_get(model, "maxTokens")),
		.thinking_level = ctx->thinking_level,
		.reasoning = json_is_true(json_object_get(model, "reasoning")),
		.options = self->options,
		.background = background_mode(self, ctx->continue_setting),
	};
	resume = ctx->continuation == PROVIDER_CONTINUE_RESUME && self->resume_id[0] != '\0';
	snprintf(self->prefill_model, sizeof(self->prefill_model), "%s",
		 ctx->continuation == PROVIDER_CONTINUE_PREFILL && ctx->model ? ctx->model : "");
	body = resume ? NULL : self->format->request(&req);
	self->body = body ? json_dumps(body, JSON_COMPACT) : resume ? strdup("") : NULL;
	json_decref(body);
	if (self->body == NULL || build_headers(self, key) != 0) {
		release_attempt(self);
		return errbuf_set(err, errlen, "out of memory building the request");
	}
	if (resume) {
		/* The cut response, streamed again after the last event read. */
		snprintf(url, sizeof(url), "%s/responses/%s?stream=true&starting_after=%lld",
			 self->base_url, self->resume_id, (long long)self->resume_seq);
	} else if (self->format->url != NULL) {
		if (self->format->url(&req, self->base_url, url, sizeof(url)) != 0) {
			release_attempt(self);
			return errbuf_set(err, errlen, "the request URL for %s is too long", self->name);
		}
	} else {
		snprintf(url, sizeof(url), "%s%s", self->base_url, self->format->path);
	}
	opts.method = resume ? "GET" : "POST";
	opts.url = url;
	opts.headers = (const char *const *)self->header_lines;
	opts.body = resume ? NULL : self->body;
	opts.body_len = resume ? 0 : strlen(self->body);
	opts.connect_timeout_ms = self->connect_timeout_ms;
	opts.idle_timeout_ms = self->idle_timeout_ms;
	self->sink = *sink;
	self->masked_sink = (struct provider_sink){
		.start = masked_start,
		.text_start = masked_text_start,
		.text_delta = masked_text_delta,
		.text_end = masked_text_end,
		.finish = masked_finish,
		.ctx = self,
		.event = sink->event ? masked_event : NULL,
	};
	if (sink->thinking_start != NULL && sink->thinking_delta != NULL &&
	    sink->thinking_end != NULL) {
		self->masked_sink.thinking_start = masked_thinking_start;
		self->masked_sink.thinking_delta = masked_thinking_delta;
		self->masked_sink.thinking_end = masked_thinking_end;
	}
	self->status = 0;
	self->stream_error[0] = '\0';
	self->is_error = false;
	self->finishing = false;
	sse_init(&self->sse, SSE_EVENT_MAX);
	api_stream_init(&self->stream, self->format, &self->masked_sink);
	if (resume) {
		/* The resumed events do not say the id again. */
		memcpy(self->stream.response_id, self->resume_id, sizeof(self->resume_id));
		self->stream.last_seq = self->resume_seq;
	}
	/* Resumable again only if this attempt is cut too. */
	self->resume_id[0] = '\0';
	self->resume_seq = -1;
	self->req = http_request_start(self->http, &opts, &cbs, err, errlen);
	if (self->req == NULL) {
		/* Report it like any transport failure, so it is retried. */
		char text[512];

		/* curl's text may quote the URL (a key in its query): masked first. */
		secret_mask_str(err);
		snprintf(text, sizeof(text), "connection error: %s", err);
		errbuf_set(err, errlen, "%s", text);
		release_attempt(self);
		return -1;
	}
	return 0;
}

static void http_abort(struct provider *base)
{
	struct http_provider *self = (struct http_provider *)base;

	clock_timer_stop(self->clock, &self->finish_timer);
	self->finishing = false;
	release_attempt(self);
}

static void http_pause(struct provider *base, bool paused)
{
	struct http_provider *self = (struct http_provider *)base;

	if (self->req != NULL)
		http_request_pause(self->req, paused);
}

static void http_free(struct provider *base)
{
	struct http_provider *self = (struct http_provider *)base;

	http_abort(base);
	release_result(self);
	secret_stream_release(&self->masker);
	secret_stream_release(&self->err_masker);
	for (size_t i = 0; i < self->nkeys; i++) {
		if (self->keys[i].secret != NULL)
			memset(self->keys[i].secret, 0, strlen(self->keys[i].secret));
		free(self->keys[i].secret);
		free(self->keys[i].name);
		free(self->keys[i].hint);
	}
	free(self->keys);
	json_decref(self->headers);
	json_decref(self->options);
	json_decref(self->base.models);
	json_decref(self->base.credentials);
	json_decref(self->base.fingerprints);
	free(self->name);
	free(self->api_name);
	free(self->base_url);
	free(self);
}

static const struct provider_ops http_ops = {
	.start = http_start,
	.abort = http_abort,
	.pause = http_pause,
	.free = http_free,
	.continuation = http_continuation,
};

struct provider *provider_http_new(struct http_client *http, struct clock *clock,
				   const struct provider_http_config *config, char *err, size_t errlen)
{
	const char *name = config->name;
	const json_t *cfg = config->entry;
	struct http_provider *self;
	size_t n;

	err[0] = '\0';
	if (check_config(name, cfg, err, errlen) != 0)
		return NULL;
	self = calloc(1, sizeof(*self));
	if (self == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	self->http = http;
	self->clock = clock;
	self->connect_timeout_ms = config->connect_timeout_ms;
	self->idle_timeout_ms = config->idle_timeout_ms;
	self->name = strdup(name);
	self->api_name = strdup(json_string_value(json_object_get(cfg, "api")));
	self->base_url = strdup(json_string_value(json_object_get(cfg, "baseUrl")));
	/* "https://host/v1/" and "https://host/v1" are the same base. */
	n = self->base_url ? strlen(self->base_url) : 0;
	while (n > 0 && self->base_url[n - 1] == '/')
		self->base_url[--n] = '\0';
	/* check_config() took only known names. */
	self->format = api_formats_find(self->api_name);
	self->headers = json_object_get(cfg, "headers") ? json_deep_copy(json_object_get(cfg, "headers"))
						       : json_object();
	/* The format's request builder may read its own settings (an
	 * api-version); it never needs the keys. */
	self->options = json_deep_copy(cfg);
	if (self->options != NULL) {
		json_object_del(self->options, "apiKey");
		json_object_del(self->options, "apiKeys");
	}
	self->base.ops = &http_ops;
	self->base.name = self->name;
	self->base.api = self->api_name;
	self->base.base_url = self->base_url;
	self->base.models = provider_models_from(json_object_get(cfg, "models"));
	sse_init(&self->sse, SSE_EVENT_MAX);
	secret_stream_init(&self->masker);
	secret_stream_init(&self->err_masker);
	if (self->name == NULL || self->api_name == NULL || self->base_url == NULL ||
	    self->base.models == NULL || self->headers == NULL || self->options == NULL || load_keys(self, cfg, err, errlen) != 0 ||
	    self->base.credentials == NULL || register_headers(self) != 0) {
		if (err[0] == '\0')
			errbuf_set(err, errlen, "out of memory");
		http_free(&self->base);
		return NULL;
	}
	return &self->base;
}

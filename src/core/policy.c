#include "core/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/hint.h"
#include "base/log.h"
#include "base/utf8.h"

static const char *const pattern_keys[] = {
	"retryablePatterns", "nonRetryablePatterns", "contextOverflowPatterns",
	"usageLimitPatterns", "overloadPatterns", NULL,
};

/* A key of the retry object, as the settings table knows it ("retry.<key>"). */
static bool retry_key(const char *key, char *full, size_t size)
{
	int n = snprintf(full, size, "retry.%s", key);

	return n > 0 && (size_t)n < size;
}

static bool known(const char *key)
{
	char full[96];

	return retry_key(key, full, sizeof(full)) && settings_known(full);
}

/* Whether the user, not the defaults, chose maxRetries. */
static bool max_explicit(const struct settings *s, const json_t *override)
{
	return json_object_get(json_object_get(s->file, "retry"), "maxRetries") != NULL ||
	       json_object_get(json_object_get(s->overrides, "retry"), "maxRetries") != NULL ||
	       json_object_get(override, "maxRetries") != NULL;
}

static bool patterns_differ(const json_t *a, const json_t *b)
{
	for (size_t i = 0; pattern_keys[i] != NULL; i++)
		if (!json_equal(json_object_get(a, pattern_keys[i]), json_object_get(b, pattern_keys[i])))
			return true;
	return false;
}

json_t *policy_resolve(const struct settings *settings, const json_t *override,
		       char *err, size_t errlen)
{
	json_t *base = settings_get(settings, "retry");
	json_t *out = json_object();
	json_t *schedule, *v;
	const char *key;
	struct classify *c;

	if (out == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	/* Only what retryd knows: a newer settings file's extra keys stay in the
	 * file but are no part of a policy. */
	json_object_foreach(base, key, v)
		if (known(key))
			json_object_set_new(out, key, json_deep_copy(v));
	if (override != NULL && !json_is_object(override)) {
		errbuf_set(err, errlen, "retry must be an object of retry settings");
		goto fail;
	}
	json_object_foreach((json_t *)override, key, v) {
		if (!known(key)) {
			errbuf_set(err, errlen, "retry.%.60s is not a retry setting", key);
			goto fail;
		}
		json_object_set_new(out, key, json_deep_copy(v));
	}
	if (settings_check("retry", out, err, errlen) != 0)
		goto fail;
	schedule = json_object_get(out, "schedule");
	if (json_array_size(schedule) > 0 && !max_explicit(settings, override))
		json_object_set_new(out, "maxRetries", json_integer((json_int_t)json_array_size(schedule)));
	if (patterns_differ(out, base)) {
		c = classify_new(out, err, errlen);
		if (c == NULL)
			goto fail;
		classify_free(c);
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}

int policy_load(struct policy *self, json_t *resolved, const json_t *daemon_retry,
		struct classify *daemon_classify, char *err, size_t errlen)
{
	memset(self, 0, sizeof(*self));
	if (retry_policy_from_json(&self->retry, resolved, true, err, errlen) != 0)
		return -1;
	/* The chain keeps the classifier it starts with, even if the daemon's
	 * is replaced by set_retry_policy meanwhile. */
	if (patterns_differ(resolved, daemon_retry))
		self->classify = classify_new(resolved, err, errlen);
	else
		self->classify = classify_ref(daemon_classify);
	if (self->classify == NULL)
		return -1;
	self->json = json_incref(resolved);
	return 0;
}

void policy_release(struct policy *self)
{
	classify_free(self->classify);
	json_decref(self->json);
	memset(self, 0, sizeof(*self));
}

int policy_check_prompt_override(const json_t *override, char *err, size_t errlen)
{
	if (json_object_get(override, "budget") != NULL)
		return errbuf_set(err, errlen, "retry.budget is shared by every prompt of the daemon; "
				  "set it with set_retry_policy, not per prompt");
	return 0;
}

struct classify *policy_classifier(const struct policy *self, struct classify *fallback)
{
	return self->classify ? self->classify : fallback;
}

json_t *policy_for_prompt(const struct settings *settings, const json_t *override,
			  char *err, size_t errlen)
{
	json_t *resolved = policy_resolve(settings, override, err, errlen);

	if (resolved != NULL && policy_check_prompt_override(override, err, errlen) != 0) {
		json_decref(resolved);
		return NULL;
	}
	return resolved;
}

void policy_adopt(struct policy *self, json_t *resolved, unsigned auto_retry_gen,
		  const struct settings *settings, struct classify *daemon_classify)
{
	char err[512];

	policy_release(self);
	if (policy_load(self, resolved, settings_get(settings, "retry"), daemon_classify, err,
			sizeof(err)) != 0) {
		LOG_ERROR("retry policy: %s", err);
		retry_policy_default(&self->retry);
	}
	self->auto_retry_gen = auto_retry_gen;
}

struct retry_policy policy_current(const struct policy *self, unsigned auto_retry_gen,
				   const struct settings *settings)
{
	struct retry_policy p = self->retry;

	if (auto_retry_gen != self->auto_retry_gen)
		p.enabled = settings_get_bool(settings, "retry.enabled");
	return p;
}

void policy_verdict_stop(struct policy_verdict *v, const char *why)
{
	size_t n = strlen(v->error) + strlen(why) + 4;
	char *text = malloc(n);

	v->retryable = false;
	if (text == NULL)
		return;
	snprintf(text, n, "%s (%s)", v->error, why);
	free(v->owned);
	v->owned = text;
	v->error = text;
}

void policy_verdict_stop_usage(struct policy_verdict *v)
{
	char why[96], wait[32];

	if (v->hint_ms > 0)
		errbuf_set(why, sizeof(why), "usage limit: resets in %s",
			   hint_format(v->hint_ms, wait, sizeof(wait)));
	else
		errbuf_set(why, sizeof(why), "usage limit: no other credential or model to switch to");
	policy_verdict_stop(v, why);
}

void policy_judge(const struct policy *self, struct classify *daemon_classify,
		  const struct provider_result *r, bool enabled, int64_t now_ms,
		  struct policy_verdict *v)
{
	const char *error = r->stop == STOP_ERROR ? r->error_message : NULL;
	struct classify_input in = {
		.text = error, .len = error ? strlen(error) : 0, .status = r->http_status,
		.body = r->error_body, .body_len = r->error_body ? r->error_body_len : 0,
		.headers = r->headers, .now_ms = now_ms,
	};
	struct classify_result cr;
	char why[256];

	memset(v, 0, sizeof(*v));
	v->error = error;
	v->hint_ms = -1;
	if (error == NULL)
		return;
	classify_decide(policy_classifier(self, daemon_classify), &in, &cr);
	v->failed = true;
	v->verdict = cr.verdict;
	memcpy(v->rule, cr.rule, sizeof(v->rule));
	v->hint_ms = r->hint_ms >= 0 ? r->hint_ms : cr.hint_ms;
	if (r->hint_ms >= 0) {
		v->hint_source = "provider";
	} else if (cr.hint_ms >= 0) {
		int64_t h;

		/* The classifier prefers the headers' wait (buckets count unless
		 * the quota is spent); the same question tells which one it took. */
		v->hint_source = hint_in_headers(r->headers, now_ms,
						 cr.verdict != CLASSIFY_USAGE_LIMIT, &h) &&
				 h == cr.hint_ms ? "header" : "text";
	}
	v->usage_limit = cr.verdict == CLASSIFY_USAGE_LIMIT;
	v->overload = cr.overload;
	v->retryable = cr.verdict == CLASSIFY_RETRYABLE || v->usage_limit;
	if (v->retryable && r->next == PROVIDER_NEXT_CANNOT && enabled) {
		/* Never a blind replay: the failure is final, and says why. */
		errbuf_set(why, sizeof(why), "not retried: %s",
			   r->next_why ? r->next_why : "the provider cannot go on");
		policy_verdict_stop(v, why);
	}
}

void policy_verdict_release(struct policy_verdict *v)
{
	free(v->owned);
	v->owned = NULL;
}

int64_t policy_int(const struct policy *self, const char *key)
{
	json_t *v = json_object_get(self->json, key);
	char full[96];

	if (json_is_integer(v))
		return json_integer_value(v);
	return retry_key(key, full, sizeof(full)) ? settings_default_int(full) : 0;
}

const char *policy_string(const struct policy *self, const char *key)
{
	return json_string_value(json_object_get(self->json, key));
}

struct classify *policy_apply(struct settings *settings, const json_t *changes, bool persist,
			      json_t **data, char *err, size_t errlen)
{
	json_t *resolved, *v;
	struct classify *c;
	const char *key;
	char name[128], warn[512] = "", perr[256];
	bool saved = true;

	*data = NULL;
	if (!json_is_object(changes)) {
		errbuf_set(err, errlen, "set_retry_policy: field \"policy\" must be an object of "
			   "retry settings");
		return NULL;
	}
	resolved = policy_resolve(settings, changes, err, errlen);
	if (resolved == NULL)
		return NULL;
	c = classify_new(resolved, err, errlen);
	json_decref(resolved);
	if (c == NULL)
		return NULL;
	json_object_foreach((json_t *)changes, key, v) {
		snprintf(name, sizeof(name), "retry.%s", key);
		if (!persist)
			settings_override_value(settings, name, json_deep_copy(v), warn, sizeof(warn));
		else if (settings_persist(settings, name, json_deep_copy(v), warn, sizeof(warn)) != 0)
			saved = false;
	}
	*data = json_pack("{s:o, s:b}", "policy", policy_resolve(settings, NULL, perr, sizeof(perr)),
			  "persisted", persist && saved);
	if (!saved) {
		LOG_WARN("%s", warn);
		json_object_set_new(*data, "warning", json_string(utf8_repair(warn)));
	}
	return c;
}

json_t *policy_set_enabled(struct settings *settings, bool enabled, bool persist, char *err,
			   size_t errlen)
{
	if (!persist) {
		if (settings_override_value(settings, "retry.enabled", json_boolean(enabled), err,
					    errlen) != 0)
			LOG_WARN("%s", err); /* only memory can fail here */
		return json_pack("{s:b}", "persisted", 0);
	}
	if (settings_persist(settings, "retry.enabled", json_boolean(enabled), err, errlen) == 0)
		return NULL;
	LOG_WARN("%s", err);
	return json_pack("{s:b, s:s}", "persisted", 0, "warning", utf8_repair(err));
}

#include "core/policy.h"

#include <stdio.h>
#include <string.h>

static const char *const known_keys[] = {
	"enabled", "maxRetries", "baseDelayMs", "maxDelayMs", "respectServerHints", "jitter",
	"jitterSeed", "schedule", "budget", "idleTimeoutMs", "fallbackModels",
	"fallbackAfterConsecutive", "fallbackCooldownMs", "usageLimitCooldownMs",
	"retryablePatterns", "nonRetryablePatterns", "contextOverflowPatterns",
	"usageLimitPatterns", "overloadPatterns", "continuationPrompt", NULL,
};

static const char *const pattern_keys[] = {
	"retryablePatterns", "nonRetryablePatterns", "contextOverflowPatterns",
	"usageLimitPatterns", "overloadPatterns", NULL,
};

static bool known(const char *key)
{
	for (size_t i = 0; known_keys[i] != NULL; i++)
		if (strcmp(known_keys[i], key) == 0)
			return true;
	return false;
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
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* Only what retryd knows: a newer settings file's extra keys stay in the
	 * file but are no part of a policy. */
	json_object_foreach(base, key, v)
		if (known(key))
			json_object_set_new(out, key, json_deep_copy(v));
	if (override != NULL && !json_is_object(override)) {
		snprintf(err, errlen, "retry must be an object of retry settings");
		goto fail;
	}
	json_object_foreach((json_t *)override, key, v) {
		if (!known(key)) {
			snprintf(err, errlen, "retry.%.60s is not a retry setting", key);
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
	if (json_object_get(override, "budget") != NULL) {
		snprintf(err, errlen, "retry.budget is shared by every prompt of the daemon; "
			 "set it with set_retry_policy, not per prompt");
		return -1;
	}
	return 0;
}

struct classify *policy_classifier(const struct policy *self, struct classify *fallback)
{
	return self->classify ? self->classify : fallback;
}

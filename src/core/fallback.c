#include "core/fallback.h"

#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/secret.h"
#include "proto/event.h"

/* The policy's defaults, for a chain that runs without a snapshot. */

int fallback_init(struct fallback *self, const json_t *credentials, const char *model)
{
	memset(self, 0, sizeof(*self));
	if (authstore_init(&self->auth, credentials) != 0)
		return -1;
	self->model = strdup(model);
	self->primary = strdup(model);
	self->cooldown = json_object();
	if (self->model == NULL || self->primary == NULL || self->cooldown == NULL) {
		fallback_release(self);
		return -1;
	}
	return 0;
}

void fallback_release(struct fallback *self)
{
	authstore_release(&self->auth);
	free(self->model);
	free(self->primary);
	json_decref(self->cooldown);
	json_decref(self->model_json);
	memset(self, 0, sizeof(*self));
}

const char *fallback_credential(const struct fallback *self)
{
	return authstore_current(&self->auth);
}

int fallback_set_primary(struct fallback *self, const char *model)
{
	char *a = strdup(model), *b = strdup(model);

	if (a == NULL || b == NULL) {
		free(a);
		free(b);
		return -1;
	}
	free(self->model);
	free(self->primary);
	self->model = a;
	self->primary = b;
	self->overloads = 0;
	json_object_clear(self->cooldown);
	return 0;
}

static bool rested(const struct fallback *self, const char *model, int64_t now)
{
	json_t *until = json_object_get(self->cooldown, model);

	return until == NULL || json_integer_value(until) <= now;
}

/* Switches to model (borrowed, copied); false when memory ran out. */
static bool use_model(struct fallback *self, const char *model, const char *reason,
		      json_t **event)
{
	json_t *ev = event_fallback_applied("model", self->model, model, reason);
	char *copy = strdup(model);

	if (copy == NULL) {
		json_decref(ev);
		return false;
	}
	free(self->model);
	self->model = copy;
	self->overloads = 0;
	*event = ev;
	return true;
}

bool fallback_revert_if_rested(struct fallback *self, int64_t now_ms, json_t **event)
{
	if (strcmp(self->model, self->primary) == 0 || !rested(self, self->primary, now_ms))
		return false;
	return use_model(self, self->primary, "cooldown-expired", event);
}

/* The first model of [primary, fallbackModels...] other than the current
 * one that is not resting, or NULL (also when there is no fallback list). */
static const char *next_model(const struct fallback *self, const json_t *list, int64_t now)
{
	size_t i;
	json_t *id;

	if (json_array_size(list) == 0)
		return NULL;
	if (strcmp(self->primary, self->model) != 0 && rested(self, self->primary, now))
		return self->primary;
	json_array_foreach(list, i, id) {
		const char *m = json_string_value(id);

		if (m != NULL && strcmp(m, self->model) != 0 && rested(self, m, now))
			return m;
	}
	return NULL;
}

void fallback_plan(struct fallback *self, const struct policy *policy, bool usage_limit,
		   bool overload, int64_t hint_ms, int64_t now_ms, struct fallback_plan *plan)
{
	int64_t usage_rest = hint_ms >= 0 ? hint_ms
					  : policy_int(policy, "usageLimitCooldownMs");

	memset(plan, 0, sizeof(*plan));
	plan->kind = RETRY_SWITCH_NONE;
	plan->credential = -1;
	if (usage_limit) {
		authstore_mark_exhausted(&self->auth, now_ms + usage_rest);
		plan->credential = authstore_next_available(&self->auth, now_ms);
		if (plan->credential >= 0) {
			plan->kind = RETRY_SWITCH_CREDENTIAL;
			return;
		}
	}
	self->overloads = overload ? self->overloads + 1 : 0;
	if (!usage_limit && self->overloads < policy->retry.fallback_after_consecutive)
		return;
	plan->model = next_model(self, json_object_get(policy->json, "fallbackModels"), now_ms);
	if (plan->model == NULL)
		return;
	json_object_set_new(self->cooldown, self->model,
			    json_integer(now_ms + (usage_limit ? usage_rest
						   : policy_int(policy, "fallbackCooldownMs"))));
	plan->reason = usage_limit ? "usage-limit" : "overloaded";
	plan->kind = RETRY_SWITCH_MODEL;
}

bool fallback_apply(struct fallback *self, const struct fallback_plan *plan, json_t **event)
{
	const char *from;

	switch (plan->kind) {
	case RETRY_SWITCH_CREDENTIAL:
		from = authstore_current(&self->auth);
		/* A credential is only ever switched for a spent quota. */
		*event = event_fallback_applied("credential", from ? from : "",
						self->auth.names[plan->credential],
						plan->reason != NULL ? plan->reason : "usage-limit");
		authstore_use(&self->auth, (size_t)plan->credential);
		return true;
	case RETRY_SWITCH_MODEL:
		return use_model(self, plan->model, plan->reason, event);
	case RETRY_SWITCH_NONE:
		break;
	}
	return false;
}

void fallback_succeeded(struct fallback *self)
{
	self->overloads = 0;
}

int fallback_select(struct fallback *self, const struct provider *provider,
		    const char *provider_name, const char *model, char *err, size_t errlen)
{
	if (strcmp(provider_name, provider->name) != 0)
		return errbuf_set(err, errlen, "Model not found: %.100s/%.100s (provider is \"%s\")",
				  provider_name, model, provider->name);
	if (provider_model(provider, model) == NULL && strcmp(model, self->model) != 0)
		return errbuf_set(err, errlen, "Model not found: %.100s/%.100s", provider_name, model);
	if (fallback_set_primary(self, model) != 0)
		return errbuf_set(err, errlen, "out of memory");
	return 0;
}

/* A user:password@ in the base URL is a secret: never in an event. */
static json_t *model_object(const struct provider *provider, const char *id)
{
	json_t *m = provider_model(provider, id);
	json_t *cw = json_object_get(m, "contextWindow"), *mt = json_object_get(m, "maxTokens");
	char *url = secret_url_shown(provider->base_url);
	json_t *v;

	v = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:[s], s:{s:f, s:f, s:f, s:f}, s:I, s:I}",
			 "id", id, "name", id, "api", provider->api, "provider", provider->name,
			 "baseUrl", url != NULL ? url : provider->base_url,
			 "reasoning", json_is_true(json_object_get(m, "reasoning")), "input", "text",
			 "cost", "input", 0.0, "output", 0.0, "cacheRead", 0.0, "cacheWrite", 0.0,
			 "contextWindow", json_is_integer(cw) ? json_integer_value(cw) : (json_int_t)128000,
			 "maxTokens", json_is_integer(mt) ? json_integer_value(mt) : (json_int_t)8192);
	free(url);
	return v;
}

json_t *fallback_model_json(struct fallback *self, const struct provider *provider)
{
	const char *id = json_string_value(json_object_get(self->model_json, "id"));

	/* get_state carries it: built once per model, not per call. */
	if (id == NULL || strcmp(id, self->model) != 0) {
		json_decref(self->model_json);
		self->model_json = model_object(provider, self->model);
	}
	return json_incref(self->model_json);
}

json_t *fallback_models(struct fallback *self, const struct provider *provider)
{
	json_t *models = json_array();
	size_t i;
	json_t *entry;
	bool listed = false;

	json_array_foreach(provider->models, i, entry) {
		const char *id = json_string_value(json_object_get(entry, "id"));

		json_array_append_new(models, model_object(provider, id));
		listed |= strcmp(id, self->model) == 0;
	}
	if (!listed)
		json_array_insert_new(models, 0, fallback_model_json(self, provider));
	return json_pack("{s:o}", "models", models);
}

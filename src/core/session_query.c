/* session_query — what a session answers about itself: state, model,
 * messages, stats, the fleet's view (session.h). */
#include "core/session.h"

#include "core/assistant.h"
#include "core/thinking.h"
#include "proto/message.h"
#include "proto/state.h"

json_t *session_model(struct session *self)
{
	return fallback_model_json(&self->chain.fallback, self->cfg.provider);
}

json_t *session_state(struct session *self)
{
	struct state_view v = {
		.model = session_model(self),
		.streaming = self->busy,
		.steer_all = self->steer_all,
		.follow_up_all = self->follow_up_all,
		.session_id = self->id,
		.message_count = json_array_size(self->messages),
		.pending_count = json_array_size(self->steering) + json_array_size(self->follow_ups),
		.auto_retry_enabled = settings_get_bool(self->cfg.settings, "retry.enabled"),
		.retrying = self->chain.phase == CHAIN_BACKOFF,
		.retry_attempt = self->chain.retry.attempt,
		.session_file = self->file,
		.session_name = self->name,
		.retry_policy = self->busy ? self->chain.policy.json : NULL,
		.retry_budget = retry_budget_json(&self->chain.budget),
		.thinking_level = self->thinking_level,
	};
	json_t *state = state_json(&v);

	if (state != NULL && self->chain.park.parked)
		json_object_set_new(state, "usageReset", chain_usage_reset(&self->chain));
	if (state != NULL && self->cfg.fleet != NULL)
		json_object_set_new(state, "fleet", chain_fleet_state(&self->chain));

	return state;
}

json_t *session_fleet_clear(struct session *self)
{
	return chain_fleet_clear(&self->chain);
}

json_t *session_messages(struct session *self)
{
	return json_pack("{s:O}", "messages", self->messages);
}

json_t *session_last_assistant_text(struct session *self)
{
	return assistant_last_text(self->messages);
}

json_t *session_stats(struct session *self)
{
	json_t *st = message_stats(self->messages, self->id, self->file);

	if (st != NULL)
		json_object_set_new(st, "retry", chain_stats_json(&self->chain));
	return st;
}

json_t *session_models(struct session *self)
{
	return fallback_models(&self->chain.fallback, self->cfg.provider);
}

json_t *session_thinking_levels(struct session *self)
{
	const json_t *model = provider_model(self->cfg.provider, self->chain.fallback.model);
	json_t *levels = json_array();

	for (size_t i = 0; thinking_levels[i] != NULL; i++)
		if (thinking_allowed(model, thinking_levels[i]))
			json_array_append_new(levels, json_string(thinking_levels[i]));
	return json_pack("{s:o}", "levels", levels);
}

bool session_parked(const struct session *self)
{
	return self->busy && self->chain.park.parked;
}

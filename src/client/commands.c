/* commands — the typed commands, each a JSON object handed to
 * retryd_client_send. */
#include <string.h>

#include "retryd/client.h"

/* A command with no fields but its type. */
static int send_bare(struct retryd_client *c, const char *type, retryd_response_cb cb, void *ctx)
{
	return retryd_client_send(c, json_pack("{s:s}", "type", type), cb, ctx);
}

static int send_message(struct retryd_client *c, const char *type, const char *message,
			retryd_response_cb cb, void *ctx)
{
	if (message == NULL)
		return retryd_client_send(c, NULL, cb, ctx);
	return retryd_client_send(c, json_pack("{s:s, s:s}", "type", type, "message", message),
				  cb, ctx);
}

int retryd_client_prompt(struct retryd_client *c, const char *message,
			 const struct retryd_prompt_options *opts, retryd_response_cb cb, void *ctx)
{
	json_t *cmd;

	if (message == NULL)
		return retryd_client_send(c, NULL, cb, ctx);
	cmd = json_pack("{s:s, s:s}", "type", "prompt", "message", message);
	if (cmd != NULL && opts != NULL) {
		if (opts->streaming_behavior != NULL)
			json_object_set_new(cmd, "streamingBehavior",
					    json_string(opts->streaming_behavior));
		if (opts->images != NULL)
			json_object_set(cmd, "images", opts->images);
		if (opts->retry != NULL)
			json_object_set(cmd, "retry", opts->retry);
	}
	return retryd_client_send(c, cmd, cb, ctx);
}

int retryd_client_steer(struct retryd_client *c, const char *message, retryd_response_cb cb,
			void *ctx)
{
	return send_message(c, "steer", message, cb, ctx);
}

int retryd_client_follow_up(struct retryd_client *c, const char *message,
			    retryd_response_cb cb, void *ctx)
{
	return send_message(c, "follow_up", message, cb, ctx);
}

int retryd_client_abort(struct retryd_client *c, retryd_response_cb cb, void *ctx)
{
	return send_bare(c, "abort", cb, ctx);
}

int retryd_client_abort_retry(struct retryd_client *c, retryd_response_cb cb, void *ctx)
{
	return send_bare(c, "abort_retry", cb, ctx);
}

int retryd_client_set_auto_retry(struct retryd_client *c, bool enabled, retryd_response_cb cb,
				 void *ctx)
{
	return retryd_client_send(c, json_pack("{s:s, s:b}", "type", "set_auto_retry",
					       "enabled", enabled), cb, ctx);
}

int retryd_client_get_state(struct retryd_client *c, retryd_response_cb cb, void *ctx)
{
	return send_bare(c, "get_state", cb, ctx);
}

int retryd_client_get_messages(struct retryd_client *c, retryd_response_cb cb, void *ctx)
{
	return send_bare(c, "get_messages", cb, ctx);
}

int retryd_client_get_last_assistant_text(struct retryd_client *c, retryd_response_cb cb,
					  void *ctx)
{
	return send_bare(c, "get_last_assistant_text", cb, ctx);
}

int retryd_client_get_retry_policy(struct retryd_client *c, retryd_response_cb cb, void *ctx)
{
	return send_bare(c, "get_retry_policy", cb, ctx);
}

int retryd_client_set_retry_policy(struct retryd_client *c, json_t *policy, bool persist,
				   retryd_response_cb cb, void *ctx)
{
	if (policy == NULL)
		return retryd_client_send(c, NULL, cb, ctx);
	return retryd_client_send(c, json_pack("{s:s, s:O, s:b}", "type", "set_retry_policy",
					       "policy", policy, "persist", persist), cb, ctx);
}

int retryd_client_new_session(struct retryd_client *c, retryd_response_cb cb, void *ctx)
{
	return send_bare(c, "new_session", cb, ctx);
}

int retryd_client_set_model(struct retryd_client *c, const char *provider, const char *model_id,
			    retryd_response_cb cb, void *ctx)
{
	if (provider == NULL || model_id == NULL)
		return retryd_client_send(c, NULL, cb, ctx);
	return retryd_client_send(c, json_pack("{s:s, s:s, s:s}", "type", "set_model",
					       "provider", provider, "modelId", model_id), cb, ctx);
}

int retryd_client_get_available_models(struct retryd_client *c, retryd_response_cb cb,
				       void *ctx)
{
	return send_bare(c, "get_available_models", cb, ctx);
}

#include "proto/state.h"

/* The members every state has; sessionFile and sessionName may come on top. */
#define STATE_MEMBERS 17

json_t *state_json(struct state_view *v)
{
	/* Built member by member: json_pack parses its format on every call,
	 * and get_state is the command a client polls. */
	json_t *st = json_object();

	if (st == NULL) {
		json_decref(v->model);
		json_decref(v->retry_budget);
		return NULL;
	}
	json_object_set_new_nocheck(st, "model", v->model);
	json_object_set_new_nocheck(st, "thinkingLevel", json_string_nocheck(v->thinking_level != NULL
									       ? v->thinking_level : "off"));
	json_object_set_new_nocheck(st, "isStreaming", json_boolean(v->streaming));
	json_object_set_new_nocheck(st, "isCompacting", json_false());
	json_object_set_new_nocheck(st, "steeringMode",
				    json_string_nocheck(v->steer_all ? "all" : "one-at-a-time"));
	json_object_set_new_nocheck(st, "followUpMode",
				    json_string_nocheck(v->follow_up_all ? "all" : "one-at-a-time"));
	json_object_set_new_nocheck(st, "sessionId", json_string(v->session_id));
	json_object_set_new_nocheck(st, "autoCompactionEnabled", json_false());
	json_object_set_new_nocheck(st, "messageCount", json_integer((json_int_t)v->message_count));
	json_object_set_new_nocheck(st, "pendingMessageCount",
				    json_integer((json_int_t)v->pending_count));
	json_object_set_new_nocheck(st, "autoRetryEnabled", json_boolean(v->auto_retry_enabled));
	json_object_set_new_nocheck(st, "isRetrying", json_boolean(v->retrying));
	json_object_set_new_nocheck(st, "retryAttempt", json_integer(v->retry_attempt));
	/* oh-my-pi's: idle with nothing queued; retryd runs no background
	 * work that could wake a session. */
	json_object_set_new_nocheck(st, "isSettled", json_boolean(!v->streaming && v->pending_count == 0));
	json_object_set_new_nocheck(st, "hasPendingAsyncWork", json_false());
	/* Optional: a path that is not UTF-8 is left out rather than failing. */
	if (v->session_file != NULL)
		json_object_set_new_nocheck(st, "sessionFile", json_string(v->session_file));
	if (v->session_name != NULL)
		json_object_set_new_nocheck(st, "sessionName", json_string(v->session_name));
	/* The snapshot the running chain uses; null when idle. */
	json_object_set_new_nocheck(st, "retryPolicy", v->retry_policy != NULL
						       ? json_deep_copy(v->retry_policy) : json_null());
	json_object_set_new_nocheck(st, "retryBudget", v->retry_budget);
	/* A member whose value could not be made is missing: say so, once. */
	if (json_object_size(st) < STATE_MEMBERS) {
		json_decref(st);
		return NULL;
	}
	return st;
}

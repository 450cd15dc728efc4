#include "proto/event.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto/command.h"

json_t *event_agent_start(void)
{
	return json_pack("{s:s}", "type", "agent_start");
}

json_t *event_turn_start(void)
{
	return json_pack("{s:s}", "type", "turn_start");
}

json_t *event_agent_end(json_t *messages)
{
	/* A run ends once its chain and its queue have: no retry and no
	 * queued message follows an agent_end, so it is terminal and the agent
	 * yielded (oh-my-pi's isTerminal, yielded); nothing runs in the
	 * background, so awaitingAsyncWork, sent only when true, never is. */
	return json_pack("{s:s, s:o, s:b, s:b, s:b}", "type", "agent_end", "messages", messages,
			 "willRetry", 0, "isTerminal", 1, "yielded", 1);
}

json_t *event_agent_settled(bool aborted)
{
	return json_pack("{s:s, s:b}", "type", "agent_settled", "aborted", aborted);
}

json_t *event_session_settled(void)
{
	return json_pack("{s:s}", "type", "session_settled");
}

json_t *event_prompt_result(const char *id, const char *status, json_t *error, bool settled)
{
	json_t *ev = json_pack("{s:s, s:b, s:s, s:b}", "type", "prompt_result", "agentInvoked", 1,
			       "status", status, "sessionSettled", settled);

	if (ev != NULL && id != NULL)
		json_object_set_new(ev, "id", command_id_value(id));
	if (ev != NULL && error != NULL)
		json_object_set_new(ev, "error", error);
	else
		json_decref(error);
	return ev;
}

json_t *event_message_start(json_t *message)
{
	return json_pack("{s:s, s:O}", "type", "message_start", "message", message);
}

json_t *event_message_end(json_t *message)
{
	return json_pack("{s:s, s:O}", "type", "message_end", "message", message);
}

json_t *event_text_start(size_t index)
{
	return json_pack("{s:s, s:i}", "type", "text_start", "contentIndex", (int)index);
}

json_t *event_text_delta(size_t index, const char *delta, size_t len)
{
	return json_pack("{s:s, s:i, s:s%}", "type", "text_delta", "contentIndex", (int)index,
			 "delta", delta, len);
}

json_t *event_text_end(size_t index, json_t *content)
{
	return json_pack("{s:s, s:i, s:o}", "type", "text_end", "contentIndex", (int)index,
			 "content", content);
}

json_t *event_thinking_start(size_t index)
{
	return json_pack("{s:s, s:i}", "type", "thinking_start", "contentIndex", (int)index);
}

json_t *event_thinking_delta(size_t index, const char *delta, size_t len)
{
	return json_pack("{s:s, s:i, s:s%}", "type", "thinking_delta", "contentIndex", (int)index,
			 "delta", delta, len);
}

json_t *event_thinking_end(size_t index, json_t *content)
{
	return json_pack("{s:s, s:i, s:o}", "type", "thinking_end", "contentIndex", (int)index,
			 "content", content);
}

json_t *event_message_update(json_t *ame, json_t *partial)
{
	if (partial == NULL)
		return json_pack("{s:s, s:o}", "type", "message_update", "assistantMessageEvent", ame);
	json_object_set(ame, "partial", partial);
	return json_pack("{s:s, s:O, s:o}", "type", "message_update", "message", partial,
			 "assistantMessageEvent", ame);
}

int event_delta_line(struct jsontext_buf *b, size_t index, const char *delta, size_t len)
{
	return jsontext_delta_append(b, index, delta, len);
}

#define THINKING_HEAD "{\"type\":\"message_update\",\"assistantMessageEvent\":" \
	"{\"type\":\"thinking_delta\",\"contentIndex\":"
#define THINKING_MID ",\"delta\":\""
#define THINKING_TAIL "\"}}\n"

int event_thinking_delta_line(struct jsontext_buf *b, size_t index, const char *delta,
			      size_t len)
{
	/* The text delta's line with another type; jsontext escapes as
	 * jansson does, so the bytes match a dump of the tree. */
	char num[24];
	int numlen = snprintf(num, sizeof(num), "%zu", index);
	size_t esc;
	char *o;

	if (len > (SIZE_MAX - 256) / 6 ||
	    jsontext_reserve(b, sizeof(THINKING_HEAD) + (size_t)numlen + sizeof(THINKING_MID) +
				    JSONTEXT_ESCAPED_MAX(len) + sizeof(THINKING_TAIL)) != 0)
		return -1;
	o = b->data + b->len;
	memcpy(o, THINKING_HEAD, sizeof(THINKING_HEAD) - 1);
	o += sizeof(THINKING_HEAD) - 1;
	memcpy(o, num, (size_t)numlen);
	o += numlen;
	memcpy(o, THINKING_MID, sizeof(THINKING_MID) - 1);
	o += sizeof(THINKING_MID) - 1;
	esc = jsontext_escape(o, delta, len);
	if (esc == JSONTEXT_NOT_UTF8)
		return -2;
	o += esc;
	memcpy(o, THINKING_TAIL, sizeof(THINKING_TAIL) - 1);
	o += sizeof(THINKING_TAIL) - 1;
	b->len = (size_t)(o - b->data);
	return 0;
}

json_t *event_thinking_level_changed(const char *level)
{
	return json_pack("{s:s, s:s}", "type", "thinking_level_changed", "level", level);
}

json_t *event_turn_end(json_t *message)
{
	return json_pack("{s:s, s:O, s:[]}", "type", "turn_end", "message", message, "toolResults");
}

/* The classifier's word on the failure, when there is one. */
static void set_why(json_t *ev, const struct event_why *why)
{
	if (ev == NULL || why == NULL || why->error_class == NULL)
		return;
	json_object_set_new(ev, "errorClass", json_string(why->error_class));
	json_object_set_new(ev, "rule", json_string(why->rule));
}

json_t *event_auto_retry_start(int attempt, int max_attempts, int64_t delay_ms,
			       const char *error_message, const char *reason, int64_t hint_ms,
			       const struct event_why *why)
{
	json_t *ev = json_pack("{s:s, s:i, s:i, s:I, s:s, s:s}", "type", "auto_retry_start",
			       "attempt", attempt, "maxAttempts", max_attempts,
			       "delayMs", (json_int_t)delay_ms, "errorMessage", error_message,
			       "reason", reason);

	if (ev != NULL && hint_ms >= 0)
		json_object_set_new(ev, "hintMs", json_integer(hint_ms));
	set_why(ev, why);
	if (ev != NULL && why != NULL && why->error_class != NULL)
		json_object_set_new(ev, "overload", json_boolean(why->overload));
	return ev;
}

json_t *event_auto_retry_end(bool success, int attempt, const char *final_error,
			     const struct event_why *why)
{
	json_t *ev = json_pack("{s:s, s:b, s:i}", "type", "auto_retry_end", "success", success,
			       "attempt", attempt);

	if (ev != NULL && final_error != NULL)
		json_object_set_new(ev, "finalError", json_string(final_error));
	if (!success)
		set_why(ev, why);
	return ev;
}

json_t *event_fallback_applied(const char *kind, const char *from, const char *to,
			       const char *reason)
{
	json_t *ev = json_pack("{s:s, s:s, s:s, s:s}", "type", "retry_fallback_applied",
			       "kind", kind, "from", from, "to", to);

	if (ev != NULL && reason != NULL)
		json_object_set_new(ev, "reason", json_string(reason));
	return ev;
}

json_t *event_fleet_wait(const struct event_hold *h)
{
	json_t *o = json_pack("{s:s, s:I, s:s, s:s, s:s}", "type", "fleet_wait", "delayMs",
			      (json_int_t)h->delay_ms, "reason", h->reason, "scope", h->scope,
			      "cause", h->cause);

	if (o == NULL)
		return NULL;
	if (h->hint != NULL)
		json_object_set_new(o, "hint", json_string(h->hint));
	if (h->age_ms >= 0)
		json_object_set_new(o, "ageMs", json_integer((json_int_t)h->age_ms));
	if (h->by_this >= 0)
		json_object_set_new(o, "byThisRetryd", json_boolean(h->by_this));
	return o;
}

json_t *event_usage_wait(int64_t remaining_ms, const char *reset_at)
{
	return json_pack("{s:s, s:I, s:s}", "type", "usage_wait", "remainingMs",
			 (json_int_t)remaining_ms, "resetAt", reset_at);
}

json_t *event_notice(const char *level, const char *source, const char *message)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "type", "notice", "level", level,
			 "source", source, "message", message);
}

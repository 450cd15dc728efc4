/* event — every event object the session emits, and the delta line.
 *
 * Pure: values in, a json_t (or one line of JSON text) out; no session type.
 * The shapes are pi's (protocol/README.md section 6, events.schema.json):
 * key order is part of the output, so each builder fixes it. Every builder
 * returns a new reference, or NULL when memory ran out (or a string was not
 * UTF-8, which jansson refuses). */
#ifndef RETRYD_EVENT_H
#define RETRYD_EVENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/jsontext.h"

/* {"type":"agent_start"} and {"type":"turn_start"}. */
json_t *event_agent_start(void);
json_t *event_turn_start(void);
/* {"type":"agent_end","messages":[...]}; messages: takes ownership. */
json_t *event_agent_end(json_t *messages);
/* {"type":"agent_settled","aborted":B}: pi 1.6's "nothing more will run
 * by itself" (no retry, no queued message), after the last agent_end. */
json_t *event_agent_settled(bool aborted);
/* {"type":"session_settled"}: oh-my-pi's name for the same moment. */
json_t *event_session_settled(void);
/* oh-my-pi's {"type":"prompt_result","id"?,"agentInvoked":true,"status":
 * "completed"|"aborted"|"error","error"?,"sessionSettled":B}, once per
 * accepted prompt after its run's agent_end. id: borrowed, may be NULL;
 * error: takes ownership, may be NULL. */
json_t *event_prompt_result(const char *id, const char *status, json_t *error, bool settled);

/* {"type":"message_start"|"message_end","message":{...}}; message: borrowed
 * (a reference is kept, so later changes to it show). */
json_t *event_message_start(json_t *message);
json_t *event_message_end(json_t *message);

/* The assistantMessageEvents of a streamed text block. */
json_t *event_text_start(size_t index);
/* delta: borrowed, len bytes. */
json_t *event_text_delta(size_t index, const char *delta, size_t len);
/* content: takes ownership (the block's whole text). */
json_t *event_text_end(size_t index, json_t *content);

/* The assistantMessageEvents of a streamed thinking block (pi's shapes,
 * the same fields as the text ones). */
json_t *event_thinking_start(size_t index);
/* delta: borrowed, len bytes. */
json_t *event_thinking_delta(size_t index, const char *delta, size_t len);
/* content: takes ownership (the block's whole thinking text). */
json_t *event_thinking_end(size_t index, json_t *content);

/* {"type":"message_update",["message":partial,]"assistantMessageEvent":ame}.
 * ame: takes ownership. partial: borrowed, or NULL for rpc.messageUpdates
 * "delta" (pi repeats the partial twice, as "message" and inside ame, so
 * full updates grow with the square of the answer). */
json_t *event_message_update(json_t *ame, json_t *partial);

/* The delta-mode text_delta message_update as one line of JSON text,
 * newline included, appended to b (borrowed): the bytes jansson would write
 * for event_message_update(event_text_delta(...), NULL). Returns 0, -1 when
 * memory ran out, -2 when delta is not UTF-8; b->len is unchanged unless 0. */
int event_delta_line(struct jsontext_buf *b, size_t index, const char *delta, size_t len);

/* event_delta_line() for a thinking_delta: the bytes jansson would write for
 * event_message_update(event_thinking_delta(...), NULL). Same returns. */
int event_thinking_delta_line(struct jsontext_buf *b, size_t index, const char *delta,
			      size_t len);

/* {"type":"thinking_level_changed","level":level}: pi's event when
 * set_thinking_level or cycle_thinking_level changes the level. level:
 * borrowed. */
json_t *event_thinking_level_changed(const char *level);

/* {"type":"turn_end","message":message,"toolResults":[]}; message: borrowed. */
json_t *event_turn_end(json_t *message);

/* Why a failure was judged as it was (classify.h): errorClass is
 * "retryable" | "non_retryable" | "context_overflow" | "usage_limit", rule
 * names the typed or text rule that decided. Both borrowed; error_class
 * NULL: no failure was judged (cancelled, disabled). */
struct event_why {
	const char *error_class;
	const char *rule;
	bool overload;  /* the model or a shared pool is saturated (a 529, ...) */
};

/* {"type":"auto_retry_start","attempt","maxAttempts","delayMs","errorMessage",
 * "reason"[,"hintMs"][,"errorClass","rule","overload"]}: hint_ms < 0 leaves
 * hintMs out, why NULL the last three. Strings: borrowed. */
json_t *event_auto_retry_start(int attempt, int max_attempts, int64_t delay_ms,
			       const char *error_message, const char *reason, int64_t hint_ms,
			       const struct event_why *why);
/* {"type":"auto_retry_end","success","attempt"[,"finalError"][,"errorClass",
 * "rule"]}: final_error (borrowed) NULL leaves it out; why only on a failure. */
json_t *event_auto_retry_end(bool success, int attempt, const char *final_error,
			     const struct event_why *why);

/* {"type":"retry_fallback_applied","kind","from","to"[,"reason"]}: kind
 * "credential" or "model"; reason NULL leaves it out. Strings: borrowed. */
json_t *event_fallback_applied(const char *kind, const char *from, const char *to,
			       const char *reason);

/* One fleet hold, as fleet_wait tells it. Strings: borrowed. */
struct event_hold {
	int64_t delay_ms;     /* how long this hold lasts, exactly */
	const char *reason;   /* "server-block", "probe", "pacing", "budget", "concurrency" */
	const char *scope;
	const char *cause;    /* who or what holds it, in words */
	const char *hint;     /* server-block: the word, "429 retry-after 8s"; NULL: unknown */
	int64_t age_ms;       /* server-block: how long ago it was said; < 0: unknown */
	int by_this;          /* server-block: 1 said to this daemon, 0 another; < 0: unknown */
};

/* {"type":"fleet_wait","delayMs","reason","scope","cause"[,"hint"][,"ageMs"]
 * [,"byThisRetryd"]}: the fleet holds an attempt before it is sent. */
json_t *event_fleet_wait(const struct event_hold *h);

/* {"type":"usage_wait","remainingMs","resetAt"}: a prompt parked until a
 * usage limit resets is still waiting. reset_at: borrowed, ISO-8601. */
json_t *event_usage_wait(int64_t remaining_ms, const char *reset_at);

/* {"type":"notice","level","source","message"}. Strings: borrowed. */
json_t *event_notice(const char *level, const char *source, const char *message);

#endif

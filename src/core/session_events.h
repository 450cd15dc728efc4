/* session_events — the last step of every event a session sends: the
 * messageId oh-my-pi 18.3 stamps on message_start/update/end, and the
 * client's set_event_filter selection.
 *
 * Every event of the session, its chain and its streamed assistant message
 * passes through here; responses and the ready line do not (rpc.c sends
 * them), so a filter never hides an answer. Ids are minted whether or not
 * the event passes the filter, so a filter changed in the middle of a
 * message never gives one message two ids (oh-my-pi's rule). */
#ifndef RETRYD_SESSION_EVENTS_H
#define RETRYD_SESSION_EVENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/assistant.h"

#define SESSION_EVENTS_OPEN_MAX 8

struct session_events {
	struct assistant_output next; /* where events go on (copied) */
	uint64_t filter;              /* bit per filterable type; 0 with !filtering */
	bool filtering;               /* a filter is set (null: everything goes) */
	uint64_t minted;              /* message ids handed out */
	/* Ids of started, unfinished messages (a user message never nests,
	 * but an external record may: a stack, as oh-my-pi keeps). */
	uint64_t open[SESSION_EVENTS_OPEN_MAX];
	size_t open_count;
	size_t line_mark;             /* where the fast line being written began */
	struct jsontext_buf *line;    /* that line's buffer (borrowed), or NULL */
};

/* next: borrowed (copied). */
void session_events_init(struct session_events *self, const struct assistant_output *next);
void session_events_release(struct session_events *self);

/* The output the session hands its chain: every call goes through self. */
struct assistant_output session_events_output(struct session_events *self);

/* event: takes ownership. Stamped, then dropped when the filter leaves it out. */
void session_events_emit(struct session_events *self, json_t *event);

/* set_event_filter: events is JSON null (everything) or an array of event
 * type names (borrowed). A name retryd does not know, or a selection that
 * keeps one half of a pair a lifecycle guarantee joins (agent_start and
 * agent_end, turn_start and turn_end, message_start and message_end,
 * auto_retry_start and auto_retry_end, tool_execution_start and
 * tool_execution_end) is refused: -1 with err, and the filter in force
 * stays. On 0, *active (new reference) is the selection
 * now in force, null for none. prompt_result, agent_settled,
 * session_settled, response and ready may be named but are never filtered. */
int session_events_set_filter(struct session_events *self, const json_t *events,
			      json_t **active, char *err, size_t errlen);

#endif

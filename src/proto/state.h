/* state — get_state's data object: pi's fields plus retryd's retry fields
 * (protocol/README.md, get_state; state.schema.json).
 *
 * Pure: a view of the session's values in, a json_t out. */
#ifndef RETRYD_PROTO_STATE_H
#define RETRYD_PROTO_STATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct state_view {
	json_t *model;              /* takes ownership (the model object) */
	bool streaming;
	bool steer_all;
	bool follow_up_all;
	const char *session_id;     /* borrowed */
	size_t message_count;
	size_t pending_count;
	bool auto_retry_enabled;
	bool retrying;
	int retry_attempt;
	const char *session_file;   /* borrowed; NULL: none */
	const char *session_name;   /* borrowed; NULL: none */
	const json_t *retry_policy; /* borrowed; NULL: idle (null in the object) */
	json_t *retry_budget;       /* takes ownership */
	const char *thinking_level; /* borrowed; NULL: "off" */
};

/* New reference, or NULL when a member could not be made (out of memory, a
 * string not UTF-8); the view's owned members are released either way. */
json_t *state_json(struct state_view *view);

#endif

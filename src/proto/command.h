/* command — one protocol line parsed into a typed command, or an error.
 *
 * Pure: no I/O. Every failure yields the `command` name and message for the
 * error response: "parse" with "Failed to parse command: ..." for a line
 * that is not JSON (or not UTF-8), "parse" for a non-object or one without a
 * string "type", "Unknown command: <type>" for an unknown type (whatever
 * the id), and a sentence naming the field for a missing or mistyped one.
 * The order of the checks is protocol/README.md section 4's table. */
#ifndef RETRYD_COMMAND_H
#define RETRYD_COMMAND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum command_type {
	CMD_PROMPT,
	CMD_STEER,
	CMD_FOLLOW_UP,
	CMD_ABORT,
	CMD_SET_AUTO_RETRY,
	CMD_ABORT_RETRY,
	CMD_GET_STATE,
	CMD_GET_MESSAGES,
	CMD_GET_LAST_ASSISTANT_TEXT,
	CMD_NEW_SESSION,
	CMD_SET_MODEL,
	CMD_GET_AVAILABLE_MODELS,
	CMD_SET_THINKING_LEVEL,
	CMD_CYCLE_THINKING_LEVEL,
	CMD_SET_STEERING_MODE,
	CMD_SET_FOLLOW_UP_MODE,
	CMD_SET_SESSION_NAME,
	CMD_GET_SESSION_STATS,
	CMD_GET_COMMANDS,
	CMD_GET_RETRY_POLICY,
	CMD_SET_RETRY_POLICY,
	CMD_CLASSIFY_ERROR,
	CMD_FLEET_CLEAR,
	CMD_ABORT_AND_PROMPT,      /* oh-my-pi's */
	CMD_GET_AVAILABLE_COMMANDS, /* oh-my-pi's */
	CMD_SET_EVENT_FILTER,      /* oh-my-pi's */
	CMD_OPEN_SESSION,          /* oh-my-pi's */
	CMD_CLEAR_QUEUE,           /* pi 1.6's */
	CMD_GET_AVAILABLE_THINKING_LEVELS, /* pi 1.6's */
	CMD_GET_ENTRIES,           /* pi 1.6's */
	CMD_UNSUPPORTED, /* a pi command that has no meaning here */
};

enum streaming_behavior {
	BEHAVIOR_NONE,
	BEHAVIOR_STEER,
	BEHAVIOR_FOLLOW_UP,
};

struct command {
	json_t *root;          /* owned; NULL when the line was not JSON */
	enum command_type type;
	const char *name;      /* borrowed (root or static): the type, or "parse" */
	/* The command's id, any JSON scalar, in the form command_id_value()
	 * turns back into that value: a string id is its text (borrowed from
	 * root), any other one is COMMAND_ID_MARK + its compact JSON (owned,
	 * id_text). NULL when absent. Code that only carries the id along
	 * (queues, prompt_result) keeps it as the string it is. */
	const char *id;
	char *id_text;         /* owned: what id points to when it is not root's */

	/* Fields, borrowed from root; set for the commands that take them. */
	const char *message;   /* prompt, steer, follow_up, abort_and_prompt */
	json_t *images;        /* prompt, steer, follow_up, abort_and_prompt; NULL when absent */
	enum streaming_behavior behavior; /* prompt */
	json_t *retry;         /* prompt, abort_and_prompt: its own retry settings; NULL when absent */
	json_t *policy;        /* set_retry_policy */
	bool persist;          /* set_retry_policy (default false), set_auto_retry (default true) */
	bool enabled;          /* set_auto_retry */
	const char *provider;  /* set_model */
	const char *model_id;  /* set_model */
	const char *mode;      /* set_steering_mode, set_follow_up_mode */
	const char *level;     /* set_thinking_level: one of pi's levels (static) */
	const char *text;      /* set_session_name: name; new_session: parentSession;
				* open_session: sessionDir; get_entries: since (or NULL) */
	json_t *events;        /* set_event_filter: null or an array (checked by the session) */
	int status;            /* classify_error: the HTTP status, 0 when absent */
	const char *body;      /* classify_error: the response body, body_len bytes, or NULL */
	size_t body_len;
	json_t *headers;       /* classify_error: an object of strings, or NULL */

	char error[512];       /* set when command_parse returns -1 */
};

/* Parses `len` bytes of `line` (borrowed, need not be NUL-terminated).
 * Returns 0, or -1 with out->error, out->name and (when the line had one)
 * out->id set. Either way, release with command_release(). */
int command_parse(const char *line, size_t len, struct command *out);
void command_release(struct command *cmd);

/* Parses the first `len` bytes of a line too long to keep (borrowed; may
 * end anywhere) for its id alone: the members are read from the start while
 * they are complete, and an "id" among them is taken. Fills out as
 * command_parse() does for a failure (name "parse", id when found) with
 * error "Failed to parse command: line longer than rpc.maxLineBytes (<max>
 * bytes); the rest of it was discarded". Release with command_release(). */
void command_parse_oversize(const char *head, size_t len, size_t max, struct command *out);

/* Marks an id that is not a string; no string id starts with it unmarked
 * (one that does is marked too). */
#define COMMAND_ID_MARK '\x1f'

/* The JSON value of an id as struct command holds it (borrowed), as a new
 * reference: the same string, number (an integer exactly, any other number
 * as the equal double), true, false or null. */
json_t *command_id_value(const char *id);

/* Names of the commands retryd answers, for get_commands and docs. */
extern const char *const command_names[];

#endif

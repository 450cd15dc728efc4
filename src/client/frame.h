/* frame — what one stdout line of the daemon is.
 *
 * Pure: a line in, a parsed object and its kind out. The client dispatches on
 * the kind: the ready line, a response (matched to its command by id), or an
 * event for on_event. */
#ifndef RETRYD_CLIENT_FRAME_H
#define RETRYD_CLIENT_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

enum retryd_frame_kind {
	RETRYD_FRAME_INVALID,   /* not a JSON object with a string "type" */
	RETRYD_FRAME_READY,     /* {"type":"ready"} */
	RETRYD_FRAME_RESPONSE,  /* {"type":"response", ...} */
	RETRYD_FRAME_EVENT,     /* anything else with a string type */
};

/* Every pointer borrows from the object the frame was made from. */
struct retryd_frame {
	enum retryd_frame_kind kind;
	const char *type;
	const char *id;       /* a response's string id, else NULL */
	const char *command;  /* a response's command, else NULL */
	bool success;         /* a response's success (true only for JSON true) */
	json_t *data;         /* a response's data, else NULL */
	const char *error;    /* a response's error string, else NULL */
};

/* Parses one line: the object (new reference) with frame filled in, or NULL
 * with the reason in err (frame->kind is then RETRYD_FRAME_INVALID). */
json_t *retryd_frame_parse(const char *line, size_t len, struct retryd_frame *frame,
			   char *err, size_t errlen);

#endif

/* cli_parser — one agent CLI run's JSON lines, read through its profile.
 *
 * Pure (hiredis' reader): a line in, typed outcomes out through a callback,
 * no I/O. Lines that are not JSON objects, or that no rule selects, are
 * skipped. The parser keeps what spans lines: whether a text or thinking
 * block is open (a delta opens one; anything else, or the end, closes it;
 * the two are never open at once) and the thinking block's signature, the
 * open tool calls (so an end has a name and a start), the newest session id, the
 * last terminal line — a later terminal line replaces an earlier one, and
 * only the last one decides how the run ended ("settled" says whether any
 * text, tool call or notice came after it: pi's message_end is followed by
 * more turns, Claude's result by nothing). */
#ifndef RETRYD_CLI_PARSER_H
#define RETRYD_CLI_PARSER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider/cli/cli_profile.h"

enum cli_parser_outcome_kind {
	CLI_OUT_SESSION,    /* text: the session/thread id (newest wins) */
	CLI_OUT_TEXT_START, /* an assistant text block opens */
	CLI_OUT_TEXT_DELTA, /* text/len: more of it */
	CLI_OUT_TEXT_END,
	CLI_OUT_THINKING_START, /* a thinking block (the model's reasoning) opens */
	CLI_OUT_THINKING_DELTA, /* text/len: more of it */
	CLI_OUT_THINKING_END,   /* text/len: its signature, or NULL */
	CLI_OUT_EVENT,      /* event: tool_execution_start/end or provider_retry, pi-shaped */
	CLI_OUT_TERMINAL,   /* failed; text: the error when failed */
};

struct cli_parser_outcome {
	enum cli_parser_outcome_kind kind;
	const char *text;   /* borrowed for the call; NUL-terminated */
	size_t len;
	json_t *event;      /* borrowed for the call (incref to keep) */
	bool failed;
};

typedef void (*cli_parser_cb)(void *ctx, const struct cli_parser_outcome *outcome);

struct cli_parser {
	const struct cli_profile *profile; /* borrowed */
	bool text_open;
	bool thinking_open;
	char *thinking_sig;  /* owned: the open thinking block's signature, or NULL */
	json_t *tools;       /* owned: open tool calls, id -> name */
	unsigned tool_seq;   /* for tool calls without an id */
	char *session_id;    /* owned: the newest, or NULL */

	bool terminal;       /* a terminal line was seen */
	bool settled;        /* ... and nothing but session ids came after it */
	bool failed;
	char *error;         /* owned: the last terminal line's error, or NULL */
	/* Its typed facts, for the classifier as a status and a body would be:
	 * the HTTP status the CLI reports (Claude's api_error_status; 0 none)
	 * and the error's type (Gemini's error.type; owned, or NULL). */
	int status;
	char *error_type;
	/* The last terminal line's counts (pi's usage.input, output, cacheRead,
	 * cacheWrite), in [0, NUMBER_MAX]; 0 when absent or rejected. */
	int64_t input_tokens, output_tokens, cache_read_tokens, cache_write_tokens;
	bool bad_number_logged;              /* a rejected number was logged (debug) */

	size_t skipped;       /* lines that were not JSON or of no known type */
};

void cli_parser_init(struct cli_parser *self, const struct cli_profile *profile);
void cli_parser_release(struct cli_parser *self);

/* One line (borrowed, without its LF; need not be NUL-terminated). Calls cb
 * for each outcome, in order. Returns how many there were (0: skipped). */
size_t cli_parser_feed(struct cli_parser *self, const char *line, size_t len, cli_parser_cb cb,
		       void *ctx);
/* End of the stream: closes an open text block, and ends the tool calls
 * still open as errors ("the agent exited before the tool call finished"). */
void cli_parser_finish(struct cli_parser *self, cli_parser_cb cb, void *ctx);

#endif

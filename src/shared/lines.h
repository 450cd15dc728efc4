/* lines — newline-delimited framing, of the daemon's stdin and agent-CLI
 * output and of the client's view of the daemon's stdout.
 *
 * Pure: bytes in, lines out. A line ends at LF only; one trailing CR is
 * stripped; blank lines are skipped. A line longer than the limit is reported
 * once as oversize, and the rest of it is discarded without being kept. */
#ifndef RETRYD_SHARED_LINES_H
#define RETRYD_SHARED_LINES_H

#include <stdbool.h>
#include <stddef.h>

enum retryd_lines_kind {
	RETRYD_LINES_LINE,     /* line/len: the line without LF and trailing CR */
	RETRYD_LINES_OVERSIZE, /* line/len: the line's first bytes (at most the limit), to
				* read an id from; NULL/0 when none was kept */
};

/* line: borrowed for the call; not NUL-terminated. Return false to stop
 * delivering (the rest of the fed data is dropped). */
typedef bool (*retryd_lines_cb)(void *ctx, enum retryd_lines_kind kind, const char *line,
				size_t len);

struct retryd_lines {
	char *buf;        /* owned: the unfinished line */
	size_t len;
	size_t cap;
	size_t max_line;
	bool discarding;  /* inside an oversize line */
};

void retryd_lines_init(struct retryd_lines *self, size_t max_line);
void retryd_lines_release(struct retryd_lines *self);
/* Calls cb for each complete line in data. 0, or -ENOMEM when the pending
 * line could not be kept (it is then reported as oversize). */
int retryd_lines_feed(struct retryd_lines *self, const char *data, size_t len,
		      retryd_lines_cb cb, void *ctx);
/* End of input: a last line without LF is delivered too. */
void retryd_lines_finish(struct retryd_lines *self, retryd_lines_cb cb, void *ctx);

#endif

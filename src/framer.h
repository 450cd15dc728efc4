/* framer — newline-delimited framing of the command stream.
 *
 * Pure: bytes in, lines out. Lines end at LF only (U+2028/U+2029 inside JSON
 * strings are ordinary bytes); one trailing CR is stripped; blank lines
 * (empty, or spaces and tabs only) are skipped. A line longer than the limit
 * is reported once as oversize and the rest of it, up to the next LF, is
 * discarded without being kept in memory. */
#ifndef RETRYD_FRAMER_H
#define RETRYD_FRAMER_H

#include <stdbool.h>
#include <stddef.h>

enum framer_kind {
	FRAMER_LINE,     /* line/len: the line, without LF or trailing CR */
	FRAMER_OVERSIZE, /* line/len: NULL/0; the line passed max_line bytes */
};

/* line: borrowed for the duration of the call; not NUL-terminated. */
typedef void (*framer_cb)(void *ctx, enum framer_kind kind, const char *line, size_t len);

struct framer {
	char *buf;       /* owned: the unfinished line */
	size_t len;
	size_t cap;
	size_t max_line;
	bool discarding; /* inside an oversize line */
};

void framer_init(struct framer *self, size_t max_line);
void framer_release(struct framer *self);

/* Calls cb for each complete line in data. Returns 0, or -1 when memory for
 * the pending line could not be had (the line is then reported as oversize). */
int framer_feed(struct framer *self, const char *data, size_t len, framer_cb cb, void *ctx);
/* End of input: a last line without LF is still delivered. */
void framer_finish(struct framer *self, framer_cb cb, void *ctx);

#endif

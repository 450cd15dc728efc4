/* sse — Server-Sent Events framing (the text/event-stream format).
 *
 * Pure: bytes in, events out, split anywhere. Lines end at LF, CRLF or CR;
 * a leading UTF-8 BOM is skipped; ":" lines are comments; "data:" lines
 * accumulate joined by LF; "event:" and "id:" set the event's name and id;
 * a blank line dispatches the event (one with no data is dropped, as the
 * spec says); one space after the colon is removed. */
#ifndef RETRYD_SSE_H
#define RETRYD_SSE_H

#include <stdbool.h>
#include <stddef.h>

struct sse_event {
	const char *event;   /* borrowed for the callback; "message" when unnamed */
	size_t event_len;
	const char *data;    /* borrowed; not NUL-terminated-guaranteed: use data_len */
	size_t data_len;
};

/* Returns 0 to go on, non-zero to stop feeding (sse_feed returns it). */
typedef int (*sse_cb)(void *ctx, const struct sse_event *ev);

struct sse_parser {
	char *line;          /* owned: the unfinished line */
	size_t line_len, line_cap;
	char *data;          /* owned: the event's data so far */
	size_t data_len, data_cap;
	char event[64];      /* the event name (longer names are cut) */
	size_t event_len;
	size_t max_event;    /* data + line bytes allowed for one event */
	bool started;        /* BOM check done */
	bool last_cr;        /* the previous chunk ended in CR (a CRLF may be split) */
	char error[128];     /* set when sse_feed returns -1 */
};

void sse_init(struct sse_parser *self, size_t max_event);
void sse_release(struct sse_parser *self);

/* Feeds `len` bytes. Returns 0; the callback's non-zero result; or -1 when an
 * event grows past max_event (self->error says so; the parser must not be fed
 * again). */
int sse_feed(struct sse_parser *self, const char *bytes, size_t len, sse_cb cb, void *ctx);

#endif

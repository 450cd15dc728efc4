#include "shared/lines.h"

#include <stdlib.h>
#include <string.h>
#include <errno.h>

/* After a large line, give the memory back rather than keep the peak. */
#define LINES_KEEP_CAP (64u * 1024u)

void retryd_lines_init(struct retryd_lines *self, size_t max_line)
{
	memset(self, 0, sizeof(*self));
	self->max_line = max_line;
}

void retryd_lines_release(struct retryd_lines *self)
{
	free(self->buf);
	memset(self, 0, sizeof(*self));
}

static bool is_blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return false;
	return true;
}

static bool deliver(const char *line, size_t len, retryd_lines_cb cb, void *ctx)
{
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (is_blank(line, len))
		return true;
	return cb(ctx, RETRYD_LINES_LINE, line, len);
}

static void shrink(struct retryd_lines *self)
{
	self->len = 0;
	if (self->cap > LINES_KEEP_CAP) {
		free(self->buf);
		self->buf = NULL;
		self->cap = 0;
	}
}

static int append(struct retryd_lines *self, const char *data, size_t len);

/* Reports the oversize line with its start, for an id: head/len is this
 * feed's part of it; when a part is held already, that part with what fits
 * of head is the start. */
static bool start_discarding(struct retryd_lines *self, const char *head, size_t len,
			     retryd_lines_cb cb, void *ctx)
{
	bool go;

	self->discarding = true;
	if (self->len > 0) {
		/* The held start plus what fits of this feed (best effort). */
		if (self->len < self->max_line && len > 0)
			(void)append(self, head, len < self->max_line - self->len ? len
						   : self->max_line - self->len);
		head = self->buf;
		len = self->len;
	}
	if (len > self->max_line)
		len = self->max_line;
	go = cb(ctx, RETRYD_LINES_OVERSIZE, len > 0 ? head : NULL, len);
	shrink(self);
	return go;
}

static int append(struct retryd_lines *self, const char *data, size_t len)
{
	if (self->len + len > self->cap) {
		size_t cap = self->cap ? self->cap : 4096;
		char *p;

		while (cap < self->len + len)
			cap *= 2;
		if (cap > self->max_line + 1)
			cap = self->max_line + 1;
		p = realloc(self->buf, cap);
		if (p == NULL)
			return -ENOMEM;
		self->buf = p;
		self->cap = cap;
	}
	memcpy(self->buf + self->len, data, len);
	self->len += len;
	return 0;
}

int retryd_lines_feed(struct retryd_lines *self, const char *data, size_t len,
		      retryd_lines_cb cb, void *ctx)
{
	int rc = 0;
	bool go = true;

	while (len > 0 && go) {
		const char *nl = memchr(data, '\n', len);
		size_t part = nl ? (size_t)(nl - data) : len;

		if (self->discarding) {
			/* skip up to the LF */
		} else if (self->len + part > self->max_line) {
			go = start_discarding(self, data, part, cb, ctx);
		} else if (nl != NULL && self->len == 0) {
			/* A whole line in this chunk: no copy. */
			go = deliver(data, part, cb, ctx);
		} else if ((rc = append(self, data, part)) != 0) {
			go = start_discarding(self, data, part, cb, ctx);
		} else if (nl != NULL) {
			go = deliver(self->buf, self->len, cb, ctx);
			shrink(self);
		}
		if (nl == NULL)
			break;
		self->discarding = false;
		data = nl + 1;
		len -= part + 1;
	}
	return rc;
}

void retryd_lines_finish(struct retryd_lines *self, retryd_lines_cb cb, void *ctx)
{
	if (!self->discarding && self->len > 0)
		deliver(self->buf, self->len, cb, ctx);
	self->discarding = false;
	shrink(self);
}

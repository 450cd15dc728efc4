#include "framer.h"

#include <stdlib.h>
#include <string.h>

/* After a large line, give the memory back rather than keep the peak. */
#define FRAMER_KEEP_CAP (64u * 1024u)

void framer_init(struct framer *self, size_t max_line)
{
	memset(self, 0, sizeof(*self));
	self->max_line = max_line;
}

void framer_release(struct framer *self)
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

static void deliver(const char *line, size_t len, framer_cb cb, void *ctx)
{
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (is_blank(line, len))
		return;
	cb(ctx, FRAMER_LINE, line, len);
}

static void shrink(struct framer *self)
{
	self->len = 0;
	if (self->cap > FRAMER_KEEP_CAP) {
		free(self->buf);
		self->buf = NULL;
		self->cap = 0;
	}
}

static void start_discarding(struct framer *self, framer_cb cb, void *ctx)
{
	self->discarding = true;
	shrink(self);
	cb(ctx, FRAMER_OVERSIZE, NULL, 0);
}

static int append(struct framer *self, const char *data, size_t len)
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
			return -1;
		self->buf = p;
		self->cap = cap;
	}
	memcpy(self->buf + self->len, data, len);
	self->len += len;
	return 0;
}

int framer_feed(struct framer *self, const char *data, size_t len, framer_cb cb, void *ctx)
{
	int rc = 0;

	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t part = nl ? (size_t)(nl - data) : len;

		if (self->discarding) {
			/* skip */
		} else if (self->len + part > self->max_line) {
			start_discarding(self, cb, ctx);
		} else if (nl != NULL && self->len == 0) {
			/* Whole line in this chunk: no copy. */
			deliver(data, part, cb, ctx);
		} else if (append(self, data, part) != 0) {
			rc = -1;
			start_discarding(self, cb, ctx);
		} else if (nl != NULL) {
			deliver(self->buf, self->len, cb, ctx);
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

void framer_finish(struct framer *self, framer_cb cb, void *ctx)
{
	if (!self->discarding && self->len > 0)
		deliver(self->buf, self->len, cb, ctx);
	self->discarding = false;
	shrink(self);
}

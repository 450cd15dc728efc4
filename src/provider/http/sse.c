#include "provider/http/sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char bom[3] = { '\xEF', '\xBB', '\xBF' };

void sse_init(struct sse_parser *self, size_t max_event)
{
	memset(self, 0, sizeof(*self));
	self->max_event = max_event;
}

void sse_release(struct sse_parser *self)
{
	free(self->line);
	free(self->data);
	memset(self, 0, sizeof(*self));
}

static int fail(struct sse_parser *self, const char *why)
{
	snprintf(self->error, sizeof(self->error), "%s", why);
	return -1;
}

static int too_big(struct sse_parser *self)
{
	snprintf(self->error, sizeof(self->error), "SSE event larger than %zu bytes", self->max_event);
	return -1;
}

/* Grows *buf to hold `need` bytes, never past max_event + 1 (room for a NUL),
 * so one event's memory stays bounded whatever the peer sends. */
static int reserve(struct sse_parser *self, char **buf, size_t *cap, size_t need)
{
	size_t limit = self->max_event + 1;
	size_t n;
	char *p;

	if (need <= *cap)
		return 0;
	n = *cap ? *cap : 256;
	while (n < need)
		n *= 2;
	if (n > limit)
		n = limit;
	if (n < need)
		n = need;
	p = realloc(*buf, n);
	if (p == NULL)
		return fail(self, "out of memory");
	*buf = p;
	*cap = n;
	return 0;
}

static void reset_event(struct sse_parser *self)
{
	self->data_len = 0;
	self->event_len = 0;
	self->event[0] = '\0';
}

static int dispatch(struct sse_parser *self, sse_cb cb, void *ctx)
{
	struct sse_event ev;
	int rc;

	/* No data line since the last dispatch: nothing to deliver. */
	if (self->data_len == 0) {
		reset_event(self);
		return 0;
	}
	/* The buffer ends in the LF of the last data line; it becomes a NUL. */
	self->data[self->data_len - 1] = '\0';
	ev.event = self->event_len > 0 ? self->event : "message";
	ev.event_len = self->event_len > 0 ? self->event_len : strlen("message");
	ev.data = self->data;
	ev.data_len = self->data_len - 1;
	rc = cb(ctx, &ev);
	reset_event(self);
	return rc;
}

static bool field_is(const char *name, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* One complete line, without its terminator. */
static int process_line(struct sse_parser *self, const char *line, size_t len, sse_cb cb, void *ctx)
{
	const char *colon, *value;
	size_t name_len, value_len;

	if (self->data_len + len > self->max_event)
		return too_big(self);
	if (len == 0)
		return dispatch(self, cb, ctx);
	if (line[0] == ':')
		return 0;
	colon = memchr(line, ':', len);
	if (colon != NULL) {
		name_len = (size_t)(colon - line);
		value = colon + 1;
		value_len = len - name_len - 1;
		if (value_len > 0 && value[0] == ' ') {
			value++;
			value_len--;
		}
	} else {
		name_len = len;
		value = line + len;
		value_len = 0;
	}
	if (field_is(line, name_len, "data")) {
		/* data_len + value_len + 1 <= data_len + len <= max_event. */
		if (reserve(self, &self->data, &self->data_cap, self->data_len + value_len + 1) != 0)
			return -1;
		memcpy(self->data + self->data_len, value, value_len);
		self->data_len += value_len;
		self->data[self->data_len++] = '\n';
	} else if (field_is(line, name_len, "event")) {
		if (value_len > sizeof(self->event) - 1)
			value_len = sizeof(self->event) - 1;
		memcpy(self->event, value, value_len);
		self->event[value_len] = '\0';
		self->event_len = value_len;
	}
	/* "id", "retry" and unknown fields change nothing we report. */
	return 0;
}

/* Drops a UTF-8 BOM at the very start of the stream, once enough bytes are
 * in the line buffer to tell (the BOM itself may be split across feeds). */
static void check_bom(struct sse_parser *self, bool line_done)
{
	size_t n = self->line_len < sizeof(bom) ? self->line_len : sizeof(bom);

	if (n == 0) {
		self->started = line_done;
		return;
	}
	if (memcmp(self->line, bom, n) != 0) {
		self->started = true;
		return;
	}
	if (n == sizeof(bom)) {
		memmove(self->line, self->line + n, self->line_len - n);
		self->line_len -= n;
		self->started = true;
		return;
	}
	/* A proper prefix of the BOM: wait for more, unless the line ended. */
	if (line_done)
		self->started = true;
}

static int append_line(struct sse_parser *self, const char *bytes, size_t len)
{
	if (len == 0)
		return 0;
	if (self->data_len + self->line_len + len > self->max_event + (self->started ? 0 : sizeof(bom)))
		return too_big(self);
	if (reserve(self, &self->line, &self->line_cap, self->line_len + len) != 0)
		return -1;
	memcpy(self->line + self->line_len, bytes, len);
	self->line_len += len;
	return 0;
}

/* The first CR or LF in [p, end), or NULL. Lines end in LF nearly always:
 * find it with memchr, then look for a CR only before it. */
static const char *find_eol(const char *p, const char *end)
{
	const char *lf = memchr(p, '\n', (size_t)(end - p));
	const char *cr = memchr(p, '\r', (size_t)((lf ? lf : end) - p));

	return cr ? cr : lf;
}

int sse_feed(struct sse_parser *self, const char *bytes, size_t len, sse_cb cb, void *ctx)
{
	const char *p, *end;
	int rc;

	if (self->error[0] != '\0')
		return -1;
	if (len == 0)
		return 0;
	p = bytes;
	end = bytes + len;
	while (p < end) {
		const char *eol;

		if (self->last_cr) {
			self->last_cr = false;
			if (*p == '\n') {
				p++;
				continue;
			}
		}
		eol = find_eol(p, end);
		if (eol == NULL) {
			if (append_line(self, p, (size_t)(end - p)) != 0)
				return -1;
			if (!self->started)
				check_bom(self, false);
			if (self->started && self->data_len + self->line_len > self->max_event)
				return too_big(self);
			return 0;
		}
		if (self->line_len == 0 && self->started) {
			/* The common case: the whole line is in this chunk. */
			rc = process_line(self, p, (size_t)(eol - p), cb, ctx);
		} else {
			if (append_line(self, p, (size_t)(eol - p)) != 0)
				return -1;
			if (!self->started)
				check_bom(self, true);
			rc = process_line(self, self->line, self->line_len, cb, ctx);
			self->line_len = 0;
		}
		self->last_cr = *eol == '\r';
		p = eol + 1;
		if (rc != 0)
			return rc;
	}
	return 0;
}

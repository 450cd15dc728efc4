#include "io/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsontext.h"
#include "base/log.h"

/* Buffers up to this size are kept between writes when the output is
 * quiet. A congested stream cycles through buffers of about the high-water
 * mark: those are kept (twice the mark, see keep_cap) until a drain that is
 * not the end of a congestion, so a long answer to a slow reader does not
 * allocate, fault in and grow by copying a fresh megabyte per cycle. */
#define WRITER_KEEP_CAP (256u * 1024u)

/* A file (or /dev/null) is written with plain blocking writes, once per loop
 * turn, or at once when this much is queued: not a write per line. */
#define WRITER_FILE_BATCH (64u * 1024u)

struct writer {
	void (*closed)(void *ctx);  /* writer_close's done callback, may be NULL */
	void *closed_ctx;
	uv_handle_type kind;
	int fd;
	union {
		uv_handle_t handle;
		uv_stream_t stream;
		uv_pipe_t pipe;
		uv_tty_t tty;
		uv_prepare_t prepare; /* UV_FILE: writes what a loop turn queued */
	} h;
	uv_write_t req;
	struct jsontext_buf pending;  /* being appended to */
	struct jsontext_buf inflight; /* being written */
	bool writing;
	size_t high, low;
	size_t keep_cap;              /* larger buffers are freed once written */
	bool congested;
	bool failed;
	struct writer_callbacks cbs;
	void (*flush_done)(void *ctx);
	void *flush_ctx;
};

static void buf_free(struct jsontext_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->cap = 0;
	b->len = 0;
}

static void buf_reset(struct jsontext_buf *b, size_t keep)
{
	b->len = 0;
	if (b->cap > keep)
		buf_free(b);
}

static int append(struct jsontext_buf *b, const char *s, size_t n)
{
	if (jsontext_reserve(b, n) != 0)
		return -1;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	return 0;
}

size_t writer_queued(const struct writer *self)
{
	return self->pending.len + self->inflight.len;
}

/* Returns whether a congestion ended. */
static bool update_congestion(struct writer *self)
{
	size_t q = writer_queued(self);

	if (!self->congested && q > self->high) {
		self->congested = true;
		if (self->cbs.congestion)
			self->cbs.congestion(self->cbs.ctx, true);
	} else if (self->congested && q <= self->low) {
		self->congested = false;
		if (self->cbs.congestion)
			self->cbs.congestion(self->cbs.ctx, false);
		return true;
	}
	return false;
}

static void maybe_flushed(struct writer *self)
{
	void (*done)(void *) = self->flush_done;

	if (done == NULL || (writer_queued(self) > 0 && !self->failed))
		return;
	self->flush_done = NULL;
	done(self->flush_ctx);
}

static void fail(struct writer *self, int err)
{
	if (self->failed)
		return;
	self->failed = true;
	self->pending.len = 0;
	self->inflight.len = 0;
	if (err != UV_EPIPE)
		LOG_ERROR("cannot write to stdout: %s", uv_strerror(err));
	if (self->cbs.failed)
		self->cbs.failed(self->cbs.ctx, err);
	update_congestion(self);
	maybe_flushed(self);
}

static void kick(struct writer *self);

static void on_written(uv_write_t *req, int status)
{
	struct writer *self = req->data;

	self->writing = false;
	buf_reset(&self->inflight, self->keep_cap);
	if (status < 0) {
		fail(self, status);
		return;
	}
	if (!update_congestion(self) && self->pending.len == 0) {
		/* Quiet again: what a burst grew goes back. */
		buf_reset(&self->inflight, WRITER_KEEP_CAP);
		buf_reset(&self->pending, WRITER_KEEP_CAP);
	}
	kick(self);
	maybe_flushed(self);
}

/* Regular files and /dev/null: a plain blocking write is fine and safe. */
static void write_file(struct writer *self)
{
	size_t off = 0;

	while (off < self->inflight.len) {
		ssize_t n = write(self->fd, self->inflight.data + off, self->inflight.len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail(self, uv_translate_sys_error(errno));
			return;
		}
		off += (size_t)n;
	}
	buf_reset(&self->inflight, WRITER_KEEP_CAP);
}

/* UV_FILE: everything queued goes out now. */
static void flush_file(struct writer *self)
{
	struct jsontext_buf tmp;

	if (self->failed || self->pending.len == 0)
		return;
	tmp = self->inflight;
	self->inflight = self->pending;
	self->pending = tmp;
	write_file(self);
	update_congestion(self);
}

/* Before the loop waits: what this turn queued for a file. */
static void on_prepare(uv_prepare_t *handle)
{
	struct writer *self = handle->data;

	uv_prepare_stop(handle);
	flush_file(self);
	maybe_flushed(self);
}

static void kick(struct writer *self)
{
	struct jsontext_buf tmp;
	uv_buf_t ub;
	int rc;

	if (self->writing || self->failed || self->pending.len == 0)
		return;
	if (self->kind == UV_FILE) {
		if (self->pending.len >= WRITER_FILE_BATCH)
			flush_file(self);
		else
			uv_prepare_start(&self->h.prepare, on_prepare);
		return;
	}
	tmp = self->inflight;
	self->inflight = self->pending;
	self->pending = tmp;
	ub = uv_buf_init(self->inflight.data, (unsigned int)self->inflight.len);
	self->req.data = self;
	rc = uv_write(&self->req, &self->h.stream, &ub, 1, on_written);
	if (rc < 0) {
		fail(self, rc);
		return;
	}
	self->writing = true;
}

/* Linux's F_SETPIPE_SZ (<fcntl.h> has it only with _GNU_SOURCE). */
#if defined(__linux__) && !defined(F_SETPIPE_SZ)
#define F_SETPIPE_SZ 1031
#endif

/* A pipe holds 64 KiB by default: a long answer then goes out in many small
 * writes, each waking the reader. Ask for the high-water mark (at most
 * /proc/sys/fs/pipe-max-size, 1 MiB by default); a refusal changes nothing. */
static void grow_pipe(int fd, size_t high)
{
#ifdef F_SETPIPE_SZ
	int size = high > (1u << 20) ? 1 << 20 : (int)high;

	(void)fcntl(fd, F_SETPIPE_SZ, size);
#else
	(void)fd;
	(void)high;
#endif
}

struct writer *writer_new(uv_loop_t *loop, int fd, size_t high, const struct writer_callbacks *cbs)
{
	struct writer *self = calloc(1, sizeof(*self));
	int rc = 0;

	if (self == NULL)
		return NULL;
	self->fd = fd;
	self->high = high;
	self->low = high / 2;
	self->keep_cap = WRITER_KEEP_CAP;
	while (self->keep_cap < high && self->keep_cap <= (size_t)-1 / 4)
		self->keep_cap *= 2;
	self->keep_cap *= 2;
	if (cbs)
		self->cbs = *cbs;
	self->kind = uv_guess_handle(fd);
	switch (self->kind) {
	case UV_NAMED_PIPE:
	case UV_TCP:
		grow_pipe(fd, high);
		self->kind = UV_NAMED_PIPE;
		rc = uv_pipe_init(loop, &self->h.pipe, 0);
		if (rc == 0)
			rc = uv_pipe_open(&self->h.pipe, fd);
		break;
	case UV_TTY:
		/* A TTY libuv cannot take is still a file descriptor. */
		if (uv_tty_init(loop, &self->h.tty, fd, 0) != 0)
			self->kind = UV_FILE;
		break;
	default:
		self->kind = UV_FILE;
		break;
	}
	if (self->kind == UV_FILE)
		rc = uv_prepare_init(loop, &self->h.prepare);
	self->h.handle.data = self;
	if (rc != 0) {
		LOG_ERROR("cannot use fd %d for output: %s", fd, uv_strerror(rc));
		writer_close(self, NULL, NULL);
		return NULL;
	}
	return self;
}

int writer_send(struct writer *self, const json_t *obj)
{
	size_t mark = self->pending.len;

	if (self->failed)
		return UV_EPIPE;
	/* jsontext_dump writes what jansson's compact dump would, faster. */
	if (jsontext_dump(obj, &self->pending) != 0 || append(&self->pending, "\n", 1) != 0) {
		self->pending.len = mark;
		LOG_ERROR("out of memory while queueing output");
		return UV_ENOMEM;
	}
	update_congestion(self);
	kick(self);
	return 0;
}

struct jsontext_buf *writer_line_buffer(struct writer *self)
{
	return self->failed ? NULL : &self->pending;
}

void writer_line_done(struct writer *self)
{
	update_congestion(self);
	kick(self);
}

void writer_flush(struct writer *self, void (*done)(void *ctx), void *ctx)
{
	self->flush_done = done;
	self->flush_ctx = ctx;
	if (self->kind == UV_FILE)
		flush_file(self);
	kick(self);
	maybe_flushed(self);
}

static void on_closed(uv_handle_t *handle)
{
	struct writer *self = handle->data;
	void (*closed)(void *ctx) = self->closed;
	void *ctx = self->closed_ctx;

	free(self->pending.data);
	free(self->inflight.data);
	free(self);
	if (closed != NULL)
		closed(ctx);
}

void writer_close(struct writer *self, void (*done)(void *ctx), void *ctx)
{
	self->closed = done;
	self->closed_ctx = ctx;
	if (self->kind == UV_FILE)
		flush_file(self);
	uv_close(&self->h.handle, on_closed);
}

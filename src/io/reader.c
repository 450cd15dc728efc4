#include "io/reader.h"

#include <stdbool.h>
#include <stdlib.h>

#include "base/log.h"

#define READER_CHUNK (64u * 1024u)

struct reader {
	uv_loop_t *loop;
	uv_handle_type kind;
	int fd;
	union {
		uv_handle_t handle;
		uv_stream_t stream;
		uv_pipe_t pipe;
		uv_tty_t tty;
	} h;
	uv_fs_t fsreq;
	bool fs_busy;      /* a uv_fs_read is in flight */
	bool want;         /* started and not paused */
	bool done;         /* EOF delivered */
	bool closing;
	void (*closed)(void *ctx);  /* reader_close's done callback, may be NULL */
	void *closed_ctx;
	struct reader_callbacks cbs;
	char buf[READER_CHUNK];
};

/* The last thing a closing reader does: free itself, then say so. */
static void release(struct reader *self)
{
	void (*closed)(void *ctx) = self->closed;
	void *ctx = self->closed_ctx;

	free(self);
	if (closed != NULL)
		closed(ctx);
}

static void deliver_eof(struct reader *self)
{
	if (self->done)
		return;
	self->done = true;
	if (self->cbs.eof)
		self->cbs.eof(self->cbs.ctx);
}

static void alloc_cb(uv_handle_t *handle, size_t suggested, uv_buf_t *out)
{
	struct reader *self = handle->data;

	(void)suggested;
	*out = uv_buf_init(self->buf, sizeof(self->buf));
}

static void read_cb(uv_stream_t *stream, ssize_t n, const uv_buf_t *b)
{
	struct reader *self = stream->data;

	(void)b;
	if (n > 0) {
		self->cbs.data(self->cbs.ctx, self->buf, (size_t)n);
		return;
	}
	if (n == 0)
		return;
	if (n != UV_EOF)
		LOG_WARN("reading stdin: %s", uv_strerror((int)n));
	uv_read_stop(stream);
	deliver_eof(self);
}

static void fs_read_next(struct reader *self);

static void fs_read_cb(uv_fs_t *req)
{
	struct reader *self = req->data;
	ssize_t n = req->result;

	uv_fs_req_cleanup(req);
	self->fs_busy = false;
	if (self->closing) {
		release(self);
		return;
	}
	if (n > 0) {
		self->cbs.data(self->cbs.ctx, self->buf, (size_t)n);
		fs_read_next(self);
		return;
	}
	if (n < 0)
		LOG_WARN("reading stdin: %s", uv_strerror((int)n));
	deliver_eof(self);
}

static void fs_read_next(struct reader *self)
{
	uv_buf_t b;
	int rc;

	if (!self->want || self->fs_busy || self->done || self->closing)
		return;
	b = uv_buf_init(self->buf, sizeof(self->buf));
	self->fsreq.data = self;
	rc = uv_fs_read(self->loop, &self->fsreq, self->fd, &b, 1, -1, fs_read_cb);
	if (rc < 0) {
		LOG_WARN("reading stdin: %s", uv_strerror(rc));
		deliver_eof(self);
		return;
	}
	self->fs_busy = true;
}

struct reader *reader_new(uv_loop_t *loop, int fd, const struct reader_callbacks *cbs)
{
	struct reader *self = calloc(1, sizeof(*self));

	if (self == NULL)
		return NULL;
	self->loop = loop;
	self->fd = fd;
	self->cbs = *cbs;
	self->kind = uv_guess_handle(fd);
	switch (self->kind) {
	case UV_NAMED_PIPE:
	case UV_TCP:
		self->kind = UV_NAMED_PIPE;
		if (uv_pipe_init(loop, &self->h.pipe, 0) != 0)
			goto fail;
		self->h.handle.data = self;
		if (uv_pipe_open(&self->h.pipe, fd) != 0) {
			reader_close(self, NULL, NULL);
			return NULL;
		}
		break;
	case UV_TTY:
		if (uv_tty_init(loop, &self->h.tty, fd, 0) == 0)
			break;
		self->kind = UV_FILE;
		break;
	default:
		self->kind = UV_FILE;
		break;
	}
	if (self->kind != UV_FILE)
		self->h.handle.data = self;
	return self;
fail:
	free(self);
	return NULL;
}

int reader_start(struct reader *self)
{
	int rc = 0;

	if (self->want || self->done)
		return 0;
	self->want = true;
	if (self->kind == UV_FILE)
		fs_read_next(self);
	else
		rc = uv_read_start(&self->h.stream, alloc_cb, read_cb);
	return rc;
}

void reader_pause(struct reader *self)
{
	if (!self->want)
		return;
	self->want = false;
	if (self->kind != UV_FILE && !self->done)
		uv_read_stop(&self->h.stream);
}

static void on_closed(uv_handle_t *handle)
{
	release(handle->data);
}

void reader_close(struct reader *self, void (*done)(void *ctx), void *ctx)
{
	self->closing = true;
	self->closed = done;
	self->closed_ctx = ctx;
	self->want = false;
	if (self->kind != UV_FILE) {
		uv_close(&self->h.handle, on_closed);
		return;
	}
	if (self->fs_busy) {
		/* fs_read_cb frees, whether the read was cancelled or ran out. */
		uv_cancel((uv_req_t *)&self->fsreq);
		return;
	}
	release(self);
}

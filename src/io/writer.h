/* writer — the protocol's output: one compact JSON object per line on an fd.
 *
 * Objects are serialized straight into an in-memory queue, in order, and
 * never dropped. The queue is written with libuv (a TTY), plain blocking
 * writes (a regular file or /dev/null, where uv_pipe_open would abort), or
 * plain non-blocking writes (a pipe or socket) of whole lines only as far as
 * the kernel's buffer surely takes them (measured on Linux pipes and Unix
 * sockets), so that a reader who stopped reading finds whole lines up to the
 * last complete one when the writer is closed with output still queued.
 * Backpressure: when the queued bytes pass the high-water mark the writer
 * reports congestion, and again when they fall below the low-water mark, so
 * the producers can pause rather than grow the queue without bound. */
#ifndef RETRYD_WRITER_H
#define RETRYD_WRITER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

struct writer;

struct writer_callbacks {
	/* Congestion started (true) or ended (false). */
	void (*congestion)(void *ctx, bool congested);
	/* A write failed (e.g. UV_EPIPE: the reader went away). Output stops;
	 * later sends are discarded. Called once. */
	void (*failed)(void *ctx, int err);
	void *ctx;
};

/* Returns NULL on failure. `high` must be > 0; the low-water mark is high/2. */
struct writer *writer_new(uv_loop_t *loop, int fd, size_t high,
			  const struct writer_callbacks *cbs);
/* Queues `obj` (borrowed) as one line. Returns 0, or a negative error after
 * a write failure. */
int writer_send(struct writer *self, const json_t *obj);
/* The hot path for text deltas: the queue's own buffer (borrowed; NULL
 * after a write failure), to append whole lines to in place (compact JSON
 * ending in LF, as the caller guarantees: jsontext_delta_append), then
 * writer_line_done() to send them. */
struct jsontext_buf *writer_line_buffer(struct writer *self);
void writer_line_done(struct writer *self);
size_t writer_queued(const struct writer *self);
/* Calls done(ctx) once everything queued so far is written (or failed). */
void writer_flush(struct writer *self, void (*done)(void *ctx), void *ctx);
/* Writes what still fits whole (a file: everything), drops the rest, closes
 * the handles and frees the writer once libuv is done with them, then calls
 * done(ctx) (done may be NULL). No callback of writer_callbacks comes after
 * this call. */
void writer_close(struct writer *self, void (*done)(void *ctx), void *ctx);

#endif

/* reader — the protocol's input: bytes from an fd, by handle type (pipe,
 * TTY, or a regular file / /dev/null read with uv_fs_read), until EOF. */
#ifndef RETRYD_READER_H
#define RETRYD_READER_H

#include <stddef.h>
#include <uv.h>

struct reader;

struct reader_callbacks {
	/* data: borrowed for the call. */
	void (*data)(void *ctx, const char *data, size_t len);
	/* End of input (or a read error, logged). Called once. */
	void (*eof)(void *ctx);
	void *ctx;
};

struct reader *reader_new(uv_loop_t *loop, int fd, const struct reader_callbacks *cbs);
int reader_start(struct reader *self);
/* Stops delivering data until reader_start(); used for backpressure. */
void reader_pause(struct reader *self);
/* Closes the handle and frees the reader once libuv is done with it, then
 * calls done(ctx) (done may be NULL). */
void reader_close(struct reader *self, void (*done)(void *ctx), void *ctx);

#endif

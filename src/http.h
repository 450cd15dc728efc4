/* http — HTTP requests on the daemon's libuv loop through libcurl's
 * multi-socket API: curl_multi_socket_action, one uv_poll_t per socket,
 * one uv_timer_t for curl's timeout. No threads, no blocking call.
 *
 * A request streams: status and headers first, then body bytes as they
 * come, then exactly one done() — unless it is cancelled, after which no
 * callback runs. TLS peers are verified against the system CA store. */
#ifndef RETRYD_HTTP_H
#define RETRYD_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

struct http_client;
struct http_request;

struct http_callbacks {
	/* Once, when the response's status line and headers are in. name/value
	 * pairs: `headers` holds `nheaders` * 2 strings (borrowed for the call),
	 * names lower-cased. */
	void (*response)(void *ctx, long status, const char *const *headers, size_t nheaders);
	/* Body bytes, borrowed for the call. */
	void (*data)(void *ctx, const char *bytes, size_t len);
	/* The end: err 0 for a complete response, else a negative code and a
	 * sentence for people (e.g. "Connection refused", "Operation timed out
	 * after 10000 milliseconds with 0 bytes received"). */
	void (*done)(void *ctx, int err, const char *message);
	void *ctx;
};

struct http_options {
	const char *method;          /* "POST" (default when body != NULL) or "GET" */
	const char *url;
	const char *const *headers;  /* "Name: value" strings, NULL-terminated; borrowed */
	const char *body;            /* borrowed until done/cancel; may be NULL */
	size_t body_len;
	long connect_timeout_ms;     /* 0: curl's default */
	long idle_timeout_ms;        /* no bytes for this long: done() with an error; 0: off */
	long total_timeout_ms;       /* 0: none */
};

/* Returns NULL on failure. */
struct http_client *http_client_new(uv_loop_t *loop);
/* Cancels every request and frees the client once its handles are closed;
 * done(ctx) then runs (may be NULL). */
void http_client_close(struct http_client *self, void (*done)(void *ctx), void *ctx);

/* Starts a request. Returns NULL (and no callback runs) when it cannot be
 * started; err says why. */
struct http_request *http_request_start(struct http_client *client, const struct http_options *opts,
					const struct http_callbacks *cbs, char *err, size_t errlen);
/* Stops the transfer at once; no callback runs afterwards; frees it. */
void http_request_cancel(struct http_request *req);
/* Backpressure: stop (true) or resume (false) receiving. */
void http_request_pause(struct http_request *req, bool paused);

#endif

/* http — HTTP requests on the daemon's libuv loop through libcurl's
 * multi-socket API: curl_multi_socket_action, one uv_poll_t per socket,
 * one uv_timer_t for curl's timeout. No threads, no blocking call.
 *
 * A request streams: status and headers first, then body bytes as they
 * come, then exactly one done() — unless it is cancelled, after which no
 * callback runs. TLS peers are verified against the system CA store.
 *
 * Only http and https URLs; HTTP/1.1; redirects are not followed (a 3xx is
 * the response: following one would send the request's key headers to
 * another host). The callbacks may call any function here, for any request
 * or the client, also http_request_cancel on their own request and
 * http_client_close; what curl cannot take from inside its callbacks
 * (removing or adding a transfer) then waits until curl has returned. */
#ifndef RETRYD_HTTP_H
#define RETRYD_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

struct http_client;
struct http_request;

struct http_callbacks {
	/* Once, when the response's status line and headers are in (delivered
	 * with the first body byte, or at the end for an empty body). name/value
	 * pairs: `headers` holds `nheaders` * 2 strings (borrowed for the call),
	 * names lower-cased, values trimmed; only the final response's headers
	 * (interim 1xx ones are dropped). Not called when the transfer fails
	 * before a final status line and its headers came. */
	void (*response)(void *ctx, long status, const char *const *headers, size_t nheaders);
	/* Body bytes, borrowed for the call. May run inside
	 * http_request_pause(req, false) with bytes curl held back. */
	void (*data)(void *ctx, const char *bytes, size_t len);
	/* The end: err 0 for a complete response, else a negative code and a
	 * sentence for people (e.g. "Connection refused", "Operation timed out
	 * after 10000 milliseconds with 0 bytes received"). Codes: UV_ETIMEDOUT
	 * (connect, total or idle timeout), UV_ECONNREFUSED and other socket
	 * errors, UV_EOF (closed before the response was complete), UV_EPROTO
	 * (TLS or HTTP protocol), UV_EAI_NONAME, UV_ENOMEM, UV_EIO. */
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
	long idle_timeout_ms;        /* no bytes for this long: done() with an error; 0: off.
				      * Counted from the start, restarted by every byte
				      * received (headers or body); stopped while paused. */
	long total_timeout_ms;       /* 0: none; keeps running while paused */
};

/* Loads libcurl if no client has yet (see curlsym.h). Returns NULL on
 * failure, with err (may be NULL) saying why, libcurl's load error in the
 * loader's words ("cannot load libcurl: libcurl.so.4: cannot open shared
 * object file: No such file or directory"). */
struct http_client *http_client_new(uv_loop_t *loop, char *err, size_t errlen);
/* Cancels every request (no callback of theirs runs) and frees the client
 * once its handles are closed; done(ctx) then runs, always from the loop,
 * never from inside this call (done may be NULL). */
void http_client_close(struct http_client *self, void (*done)(void *ctx), void *ctx);

/* Starts a request. Returns NULL (and no callback runs) when it cannot be
 * started (a bad URL or scheme, method or header line, a closing client);
 * err says why, never echoing the URL or headers. */
struct http_request *http_request_start(struct http_client *client, const struct http_options *opts,
					const struct http_callbacks *cbs, char *err, size_t errlen);
/* Stops the transfer at once; no callback runs afterwards; frees it (the
 * memory goes once its timer is closed). Safe inside the request's own
 * callbacks. */
void http_request_cancel(struct http_request *req);
/* The caller has what it wanted from the response (an event stream's
 * terminal event came): no callback runs afterwards, but the transfer goes
 * on reading to the body's end for at most deadline_ms, so that its
 * connection is kept for the next request (HTTP/1.1 keep-alive) instead of
 * closed by a cancel; then it is freed as by http_request_cancel. owned
 * (may be NULL; the request's body, which curl may still point at) is
 * freed with it. A paused or finished request is cancelled at once. Safe
 * inside the request's own callbacks. */
void http_request_drain(struct http_request *req, long deadline_ms, void *owned);

/* Backpressure: stop (true) or resume (false) receiving. While paused no
 * response()/data() runs; curl holds what it already read and stops reading
 * the socket. Resuming may deliver held bytes before it returns. */
void http_request_pause(struct http_request *req, bool paused);

#endif

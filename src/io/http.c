/* http — see http.h. How it hangs together:
 *
 * curl tells us which sockets to watch (on_curl_socket: one uv_poll_t each,
 * closed through uv_close when curl says CURL_POLL_REMOVE) and when to call
 * it back (on_curl_timer: one uv_timer_t); the poll and timer callbacks call
 * curl_multi_socket_action and then deliver finished transfers from
 * curl_multi_info_read.
 *
 * curl refuses to add or remove a transfer from inside its callbacks, and
 * our data callbacks run inside them (and inside curl_easy_pause when it
 * hands back held bytes). So `depth` counts our calls into curl; a cancel,
 * start or client close asked for meanwhile only marks the request (the
 * write callback then returns 0, which makes curl abort that transfer) and
 * client_after_curl does the rest once curl has returned.
 *
 * Pausing sets a flag the write callback honours (CURL_WRITEFUNC_PAUSE:
 * curl keeps the bytes) and calls curl_easy_pause, which also stops curl
 * reading the socket; it fails before a connection exists, when the flag
 * alone does it. The idle timeout is our own timer per request, restarted
 * on every byte, so it is exact to the millisecond. Nothing is logged that
 * could hold a secret: no header, no body, and of the URL only the scheme,
 * host, port and path (no user:password@, no query, no fragment). */
#include "io/http.h"

#include "base/clock.h"
#include "base/errbuf.h"
#include "base/log.h"
#include "io/curlsym.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libcurl, loaded by the first http_client_new() (see curlsym.h): every
 * other function here runs only after one succeeded. */
static const struct curlsym *curl;

#define HTTP_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct http_sock {
	uv_poll_t poll;
	struct http_client *client;
	curl_socket_t fd;
	int events;       /* what curl wants watched (UV_READABLE | UV_WRITABLE) */
	bool failed;      /* the last poll reported an error */
	struct http_sock *prev, *next;
};

struct http_request {
	struct http_client *client;
	CURL *easy;
	struct curl_slist *headers;
	struct http_callbacks cbs;
	uv_timer_t idle;
	long idle_ms;
	char **hv;              /* name, value, name, value ...: the final response's headers */
	size_t nhv, hv_cap;     /* in strings */
	bool linked;            /* in client->reqs */
	bool added;             /* in the curl multi */
	bool headers_done;      /* the blank line after the headers came */
	bool responded;         /* response() ran */
	bool paused;
	bool cancelled;         /* no callback any more; released once curl is not on the stack */
	bool finishing;         /* done() is being delivered */
	bool oom;
	bool draining;          /* http_request_drain: read to the end, tell no one */
	void *drain_owned;      /* what drain took over (the body): freed with the request */
	struct http_request *prev, *next;
	char errbuf[CURL_ERROR_SIZE];
	/* For the debug line at the end; log_url is NULL below debug. */
	char *log_url;          /* owned */
	char method[16];
	uint64_t start_us, first_byte_us; /* first_byte_us 0: none yet */
	uint64_t received;      /* body bytes */
};

struct http_client {
	uv_loop_t *loop;
	CURLM *multi;
	uv_timer_t timer;
	struct http_request *reqs;
	struct http_sock *socks;
	/* Nesting of our calls into curl that can run our callbacks. While it is
	 * non-zero no easy handle may be added or removed (curl refuses it from
	 * inside its callbacks), so cancel, start and close are deferred. */
	unsigned depth;
	unsigned pending;       /* handles whose close callback has not run yet */
	bool closing, close_started;
	void (*close_done)(void *ctx);
	void *close_ctx;
};

static void client_after_curl(struct http_client *c, bool drain);

/* --- lists --- */

static void request_link(struct http_request *req)
{
	struct http_client *c = req->client;

	req->prev = NULL;
	req->next = c->reqs;
	if (c->reqs != NULL)
		c->reqs->prev = req;
	c->reqs = req;
	req->linked = true;
}

static void request_unlink(struct http_request *req)
{
	if (!req->linked)
		return;
	if (req->prev != NULL)
		req->prev->next = req->next;
	else
		req->client->reqs = req->next;
	if (req->next != NULL)
		req->next->prev = req->prev;
	req->prev = req->next = NULL;
	req->linked = false;
}

/* --- closing and freeing --- */

static void client_maybe_free(struct http_client *c)
{
	void (*done)(void *ctx);
	void *ctx;

	if (!c->close_started || c->pending > 0)
		return;
	done = c->close_done;
	ctx = c->close_ctx;
	free(c);
	curl->global_cleanup();
	if (done != NULL)
		done(ctx);
}

static void on_sock_closed(uv_handle_t *h)
{
	struct http_sock *s = HTTP_CONTAINER_OF(h, struct http_sock, poll);
	struct http_client *c = s->client;

	free(s);
	c->pending--;
	client_maybe_free(c);
}

static void sock_close(struct http_sock *s)
{
	struct http_client *c = s->client;

	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		c->socks = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	c->pending++;
	uv_close((uv_handle_t *)&s->poll, on_sock_closed);
}

static void headers_clear(struct http_request *req)
{
	for (size_t i = 0; i < req->nhv; i++)
		free(req->hv[i]);
	req->nhv = 0;
}

static void on_request_closed(uv_handle_t *h)
{
	struct http_request *req = HTTP_CONTAINER_OF(h, struct http_request, idle);
	struct http_client *c = req->client;

	free(req);
	c->pending--;
	client_maybe_free(c);
}

/* Frees everything but the struct, which goes when its timer is closed.
 * Only with curl off the stack. */
static void request_release(struct http_request *req)
{
	struct http_client *c = req->client;

	assert(c->depth == 0);
	request_unlink(req);
	if (req->added && c->multi != NULL)
		curl->multi_remove_handle(c->multi, req->easy);
	req->added = false;
	curl->easy_cleanup(req->easy);
	req->easy = NULL;
	curl->slist_free_all(req->headers);
	req->headers = NULL;
	headers_clear(req);
	free(req->hv);
	req->hv = NULL;
	free(req->log_url);
	req->log_url = NULL;
	free(req->drain_owned);
	req->drain_owned = NULL;
	c->pending++;
	uv_close((uv_handle_t *)&req->idle, on_request_closed);
}

static void on_client_timer_closed(uv_handle_t *h)
{
	struct http_client *c = HTTP_CONTAINER_OF(h, struct http_client, timer);

	c->pending--;
	client_maybe_free(c);
}

static void client_close_start(struct http_client *c)
{
	c->close_started = true;
	while (c->reqs != NULL)
		request_release(c->reqs);
	/* After the cleanup curl calls nothing of ours any more; sockets it still
	 * watched were handed back through CURL_POLL_REMOVE. */
	curl->multi_cleanup(c->multi);
	c->multi = NULL;
	while (c->socks != NULL)
		sock_close(c->socks);
	c->pending++;
	uv_close((uv_handle_t *)&c->timer, on_client_timer_closed);
}

/* --- results --- */

static int http_err_from_curl(CURLcode rc, long os_errno)
{
	switch (rc) {
	case CURLE_OK:
		return 0;
	case CURLE_OPERATION_TIMEDOUT:
		return UV_ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return UV_EAI_NONAME;
	case CURLE_OUT_OF_MEMORY:
		return UV_ENOMEM;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return UV_EINVAL;
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
		return UV_EOF;
	case CURLE_COULDNT_CONNECT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		if (os_errno > 0)
			return uv_translate_sys_error((int)os_errno);
		return rc == CURLE_COULDNT_CONNECT ? UV_ECONNREFUSED : UV_ECONNRESET;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_WEIRD_SERVER_REPLY:
		return UV_EPROTO;
	default:
		return UV_EIO;
	}
}

static void idle_restart(struct http_request *req)
{
	if (req->idle_ms > 0 && !req->paused && !req->draining)
		uv_timer_again(&req->idle);
}

/* Delivers response() once. */
static void request_respond(struct http_request *req)
{
	long status = 0;

	req->responded = true;
	curl->easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &status);
	if (req->cbs.response != NULL)
		req->cbs.response(req->cbs.ctx, status, (const char *const *)req->hv, req->nhv / 2);
	headers_clear(req);
}

/* The request's debug line, at its end: status (0: none came), time to
 * the first response byte, body bytes, total time; `how` says how it ended:
 * "ok", "closed" (cancelled by its owner, as a stream is after its last
 * event) or the error. */
static void request_log_end(struct http_request *req, const char *how)
{
	uint64_t now = clock_precise_us();
	long status = 0;
	char ttfb[32] = "-";

	if (req->log_url == NULL || log_level < LOG_LEVEL_DEBUG)
		return;
	if (req->easy != NULL)
		curl->easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &status);
	if (req->first_byte_us != 0)
		snprintf(ttfb, sizeof(ttfb), "%llu",
			 (unsigned long long)((req->first_byte_us - req->start_us) / 1000));
	LOG_DEBUG("http: %s %s status=%ld ttfb_ms=%s bytes=%llu total_ms=%llu end=%s", req->method,
		  req->log_url, status, ttfb, (unsigned long long)req->received,
		  (unsigned long long)((now - req->start_us) / 1000), how);
}

/* The URL as it may be logged: scheme://host[:port]/path, with "?***"
 * when a query was dropped. NULL when memory ran out (or curl could not
 * take the URL apart). */
static char *log_url_new(const char *url)
{
	CURLU *u = curl->url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL, *out = NULL;
	size_t n;

	if (u == NULL)
		return NULL;
	if (curl->url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl->url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl->url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
		goto out;
	curl->url_get(u, CURLUPART_PORT, &port, 0);
	curl->url_get(u, CURLUPART_PATH, &path, 0);
	curl->url_get(u, CURLUPART_QUERY, &query, 0);
	n = strlen(scheme) + strlen(host) + (port ? strlen(port) : 0) + (path ? strlen(path) : 0) + 16;
	out = malloc(n);
	if (out != NULL)
		snprintf(out, n, "%s://%s%s%s%s%s", scheme, host, port ? ":" : "", port ? port : "",
			 path ? path : "", query ? "?***" : "");
out:
	curl->free(scheme);
	curl->free(host);
	curl->free(port);
	curl->free(path);
	curl->free(query);
	curl->url_cleanup(u);
	return out;
}

/* Ends a request that is not cancelled: response() if due, done(), free.
 * Only with curl off the stack. */
static void request_finish(struct http_request *req, int err, const char *message)
{
	struct http_client *c = req->client;

	assert(c->depth == 0);
	request_unlink(req);
	if (req->added)
		curl->multi_remove_handle(c->multi, req->easy);
	req->added = false;
	uv_timer_stop(&req->idle);
	req->finishing = true;
	if (!req->responded && req->headers_done) {
		long status = 0;

		/* A status line with its headers came but no body byte. */
		curl->easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200)
			request_respond(req);
	}
	if (!req->cancelled && !c->closing)
		request_log_end(req, err == 0 ? "ok" : message);
	if (!req->cancelled && !c->closing && req->cbs.done != NULL)
		req->cbs.done(req->cbs.ctx, err, message);
	request_release(req);
}

static void request_finish_curl(struct http_request *req, CURLcode rc)
{
	long os_errno = 0;
	size_t n;

	if (rc == CURLE_OK) {
		request_finish(req, 0, "OK");
		return;
	}
	if (req->oom) {
		request_finish(req, UV_ENOMEM, "out of memory");
		return;
	}
	curl->easy_getinfo(req->easy, CURLINFO_OS_ERRNO, &os_errno);
	n = strlen(req->errbuf);
	while (n > 0 && (req->errbuf[n - 1] == '\n' || req->errbuf[n - 1] == '\r'))
		req->errbuf[--n] = '\0';
	request_finish(req, http_err_from_curl(rc, os_errno), n > 0 ? req->errbuf : curl->easy_strerror(rc));
}

static void on_idle(uv_timer_t *t)
{
	struct http_request *req = HTTP_CONTAINER_OF(t, struct http_request, idle);
	char message[96];

	snprintf(message, sizeof message, "Idle timeout: no data received for %ld milliseconds", req->idle_ms);
	request_finish(req, UV_ETIMEDOUT, message);
}

/* --- curl's data callbacks --- */

static bool is_ows(char ch)
{
	return ch == ' ' || ch == '\t';
}

static int headers_push(struct http_request *req, const char *name, size_t name_len, const char *value,
			size_t value_len)
{
	char *n, *v;

	if (req->nhv + 2 > req->hv_cap) {
		size_t cap = req->hv_cap ? req->hv_cap * 2 : 32;
		char **hv = realloc(req->hv, cap * sizeof *hv);

		if (hv == NULL)
			return UV_ENOMEM;
		req->hv = hv;
		req->hv_cap = cap;
	}
	n = malloc(name_len + 1);
	v = malloc(value_len + 1);
	if (n == NULL || v == NULL) {
		free(n);
		free(v);
		return UV_ENOMEM;
	}
	for (size_t i = 0; i < name_len; i++)
		n[i] = (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] - 'A' + 'a') : name[i];
	n[name_len] = '\0';
	memcpy(v, value, value_len);
	v[value_len] = '\0';
	req->hv[req->nhv++] = n;
	req->hv[req->nhv++] = v;
	return 0;
}

/* An obsolete folded line continues the previous value. */
static int headers_fold(struct http_request *req, const char *more, size_t more_len)
{
	char **last;
	size_t len;
	char *v;

	if (req->nhv == 0 || more_len == 0)
		return 0;
	last = &req->hv[req->nhv - 1];
	len = strlen(*last);
	v = realloc(*last, len + 1 + more_len + 1);
	if (v == NULL)
		return UV_ENOMEM;
	v[len] = ' ';
	memcpy(v + len + 1, more, more_len);
	v[len + 1 + more_len] = '\0';
	*last = v;
	return 0;
}

/* Every header line of every response comes here (interim 1xx ones too);
 * a status line starts the list afresh, so the final response's remain. */
static size_t on_curl_header(char *buf, size_t size, size_t nitems, void *userdata)
{
	struct http_request *req = userdata;
	size_t total = size * nitems, len = total;
	const char *colon, *v, *end;
	int rc;

	if (req->cancelled)
		return 0;
	idle_restart(req);
	if (req->first_byte_us == 0)
		req->first_byte_us = clock_precise_us();
	if (req->responded)
		return total; /* trailers */
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
		headers_clear(req);
		req->headers_done = false;
		return total;
	}
	if (len == 0) {
		req->headers_done = true;
		return total;
	}
	if (req->headers_done)
		return total; /* trailers before any body byte */
	end = buf + len;
	while (end > buf && is_ows(end[-1]))
		end--;
	if (is_ows(buf[0])) {
		v = buf;
		while (v < end && is_ows(*v))
			v++;
		rc = headers_fold(req, v, (size_t)(end - v));
	} else {
		colon = memchr(buf, ':', len);
		if (colon == NULL || colon == buf)
			return total;
		v = colon + 1;
		while (v < end && is_ows(*v))
			v++;
		rc = headers_push(req, buf, (size_t)(colon - buf), v, end > v ? (size_t)(end - v) : 0);
	}
	if (rc != 0) {
		req->oom = true;
		return 0;
	}
	return total;
}

static size_t on_curl_write(char *buf, size_t size, size_t nmemb, void *userdata)
{
	struct http_request *req = userdata;
	size_t len = size * nmemb;

	if (req->cancelled)
		return 0;
	/* curl keeps the bytes and hands them over again after CURLPAUSE_CONT. */
	if (req->paused)
		return CURL_WRITEFUNC_PAUSE;
	idle_restart(req);
	if (!req->responded) {
		request_respond(req);
		if (req->cancelled)
			return 0;
		if (req->paused)
			return CURL_WRITEFUNC_PAUSE;
	}
	req->received += len;
	if (req->cbs.data != NULL)
		req->cbs.data(req->cbs.ctx, buf, len);
	return req->cancelled ? 0 : len;
}

/* --- curl's loop callbacks --- */

static void client_socket_action(struct http_client *c, curl_socket_t fd, int flags)
{
	int running;
	CURLMcode mc;

	c->depth++;
	mc = curl->multi_socket_action(c->multi, fd, flags, &running);
	c->depth--;
	if (mc != CURLM_OK)
		LOG_WARN("http: curl_multi_socket_action: %s", curl->multi_strerror(mc));
	client_after_curl(c, true);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct http_sock *s = HTTP_CONTAINER_OF(p, struct http_sock, poll);
	int flags = 0;

	if (status < 0 && !s->failed) {
		/* POLLERR (a reset, often of a kept-alive connection the server
		 * dropped as curl reused it): libuv has stopped the handle. curl
		 * is let read and write, so that it sees the error itself and
		 * tries a reused connection that died before answering once more
		 * on a new one; CURL_CSELECT_ERR would fail the transfer at once
		 * ("select/poll returned error"). A second error in a row is
		 * passed on as one. */
		s->failed = true;
		client_socket_action(s->client, s->fd, CURL_CSELECT_IN | CURL_CSELECT_OUT);
		/* Still curl's and nothing changed its watch: watched again. */
		if (!uv_is_closing((uv_handle_t *)&s->poll) && s->events != 0 &&
		    !uv_is_active((uv_handle_t *)&s->poll))
			uv_poll_start(&s->poll, s->events, on_poll);
		return;
	}
	if (status < 0)
		flags = CURL_CSELECT_ERR;
	else
		s->failed = false;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	client_socket_action(s->client, s->fd, flags);
}

static void on_timer(uv_timer_t *t)
{
	struct http_client *c = HTTP_CONTAINER_OF(t, struct http_client, timer);

	client_socket_action(c, CURL_SOCKET_TIMEOUT, 0);
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct http_client *c = userp;
	struct http_sock *s = socketp;
	int events = 0, rc;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (s != NULL)
			sock_close(s);
		return 0;
	}
	if (s == NULL) {
		s = calloc(1, sizeof *s);
		if (s == NULL) {
			LOG_ERROR("http: out of memory watching a socket");
			return -1;
		}
		rc = uv_poll_init_socket(c->loop, &s->poll, fd);
		if (rc != 0) {
			LOG_ERROR("http: cannot watch socket %d: %s", (int)fd, uv_strerror(rc));
			free(s);
			return -1;
		}
		s->client = c;
		s->fd = fd;
		s->next = c->socks;
		if (c->socks != NULL)
			c->socks->prev = s;
		c->socks = s;
		curl->multi_assign(c->multi, fd, s);
	}
	if (what & CURL_POLL_IN)
		events |= UV_READABLE;
	if (what & CURL_POLL_OUT)
		events |= UV_WRITABLE;
	s->events = events;
	if (events != 0)
		rc = uv_poll_start(&s->poll, events, on_poll);
	else
		rc = uv_poll_stop(&s->poll);
	if (rc != 0)
		LOG_ERROR("http: cannot poll socket %d: %s", (int)fd, uv_strerror(rc));
	return 0;
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct http_client *c = userp;

	(void)multi;
	if (c->close_started)
		return 0;
	if (timeout_ms < 0)
		uv_timer_stop(&c->timer);
	else
		uv_timer_start(&c->timer, on_timer, (uint64_t)timeout_ms, 0);
	return 0;
}

/* --- the work deferred while curl was on the stack --- */

static int request_add(struct http_request *req)
{
	CURLMcode mc = curl->multi_add_handle(req->client->multi, req->easy);

	if (mc != CURLM_OK)
		return mc == CURLM_OUT_OF_MEMORY ? UV_ENOMEM : UV_EIO;
	req->added = true;
	return 0;
}

/* Runs once our outermost call into curl has returned: releases cancelled
 * requests, adds those started from callbacks, closes a client whose close
 * was asked for from a callback, and (when drain) delivers finished
 * transfers. Callbacks it runs may change the list, hence the rescans. */
static void client_after_curl(struct http_client *c, bool drain)
{
	struct http_request *req;
	CURLMsg *msg;
	int left, rc;

	if (c->depth > 0 || c->close_started)
		return;
	if (c->closing) {
		client_close_start(c);
		return;
	}
again:
	for (req = c->reqs; req != NULL; req = req->next) {
		if (req->cancelled) {
			request_release(req);
			goto again;
		}
		if (!req->added && (rc = request_add(req)) != 0) {
			request_finish(req, rc, "cannot start the transfer");
			if (c->close_started)
				return;
			goto again;
		}
	}
	if (!drain)
		return;
	while (!c->closing && (msg = curl->multi_info_read(c->multi, &left)) != NULL) {
		CURL *easy = msg->easy_handle;
		CURLcode result = msg->data.result;
		char *priv = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl->easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
		req = (struct http_request *)(void *)priv;
		if (req->cancelled)
			request_release(req);
		else
			request_finish_curl(req, result);
	}
}

/* --- the API --- */

struct http_client *http_client_new(uv_loop_t *loop, char *err, size_t errlen)
{
	struct http_client *self = calloc(1, sizeof *self);

	if (self == NULL) {
		errbuf_set(err, errlen, "cannot start libcurl: out of memory");
		return NULL;
	}
	curl = curlsym_load(err, errlen);
	if (curl == NULL) {
		free(self);
		return NULL;
	}
	if (curl->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		errbuf_set(err, errlen, "cannot start libcurl: curl_global_init failed");
		free(self);
		return NULL;
	}
	self->multi = curl->multi_init();
	if (self->multi == NULL) {
		errbuf_set(err, errlen, "cannot start libcurl: curl_multi_init failed");
		curl->global_cleanup();
		free(self);
		return NULL;
	}
	self->loop = loop;
	curl->multi_setopt(self->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
	curl->multi_setopt(self->multi, CURLMOPT_SOCKETDATA, self);
	curl->multi_setopt(self->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
	curl->multi_setopt(self->multi, CURLMOPT_TIMERDATA, self);
	uv_timer_init(loop, &self->timer);
	return self;
}

void http_client_close(struct http_client *self, void (*done)(void *ctx), void *ctx)
{
	if (self->closing)
		return;
	self->closing = true;
	self->close_done = done;
	self->close_ctx = ctx;
	for (struct http_request *req = self->reqs; req != NULL; req = req->next) {
		req->cancelled = true;
		uv_timer_stop(&req->idle);
	}
	if (self->depth == 0)
		client_close_start(self);
}

static bool is_token(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++) {
		char ch = *s;

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		      strchr("!#$%&'*+-.^_`|~", ch) != NULL))
			return false;
	}
	return true;
}

/* Only http and https: other schemes curl knows (file, ftp, ...) would
 * block or surprise. The URL itself is never echoed: it may hold a key. */
static const char *check_url(const char *url)
{
	CURLU *u = curl->url();
	char *scheme = NULL;
	const char *why = NULL;
	CURLUcode uc;

	if (u == NULL)
		return "out of memory";
	uc = curl->url_set(u, CURLUPART_URL, url, 0);
	if (uc != CURLUE_OK)
		why = curl->url_strerror(uc);
	else if (curl->url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
		 (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0))
		why = "only http and https URLs are supported";
	curl->free(scheme);
	curl->url_cleanup(u);
	return why;
}

struct http_request *http_request_start(struct http_client *client, const struct http_options *opts,
					const struct http_callbacks *cbs, char *err, size_t errlen)
{
	struct http_request *req = NULL;
	const char *body = opts->body;
	size_t body_len = opts->body_len;
	const char *method = opts->method != NULL ? opts->method : body != NULL ? "POST" : "GET";
	const char *why = NULL, *bad_url;
	CURLcode rc = CURLE_OK;

	if (errlen > 0)
		err[0] = '\0';
	if (client->closing) {
		why = "the HTTP client is closing";
		goto fail;
	}
	if (opts->url == NULL) {
		why = "no URL";
		goto fail;
	}
	bad_url = check_url(opts->url);
	if (bad_url != NULL) {
		errbuf_set(err, errlen, "bad URL: %s", bad_url);
		return NULL;
	}
	if (!is_token(method)) {
		why = "bad HTTP method";
		goto fail;
	}
	if (strcmp(method, "HEAD") == 0 && body != NULL) {
		why = "a HEAD request has no body";
		goto fail;
	}
	if (body == NULL && strcmp(method, "POST") == 0) {
		body = "";
		body_len = 0;
	}
	req = calloc(1, sizeof *req);
	if (req == NULL) {
		why = "out of memory";
		goto fail;
	}
	req->client = client;
	req->cbs = *cbs;
	req->start_us = clock_precise_us();
	snprintf(req->method, sizeof(req->method), "%s", method);
	if (log_level >= LOG_LEVEL_DEBUG)
		req->log_url = log_url_new(opts->url);
	req->idle_ms = opts->idle_timeout_ms > 0 ? opts->idle_timeout_ms : 0;
	for (const char *const *h = opts->headers; h != NULL && *h != NULL; h++) {
		struct curl_slist *l;

		if (strpbrk(*h, "\r\n") != NULL) {
			why = "a request header contains a line break";
			goto fail;
		}
		l = curl->slist_append(req->headers, *h);
		if (l == NULL) {
			why = "out of memory";
			goto fail;
		}
		req->headers = l;
	}
	req->easy = curl->easy_init();
	if (req->easy == NULL) {
		why = "out of memory";
		goto fail;
	}

#define SETOPT(opt, val) \
	do { if (rc == CURLE_OK) rc = curl->easy_setopt(req->easy, opt, val); } while (0)
	SETOPT(CURLOPT_URL, opts->url);
	SETOPT(CURLOPT_PRIVATE, (void *)req);
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_ERRORBUFFER, req->errbuf);
#if LIBCURL_VERSION_NUM >= 0x075500
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
#else
	SETOPT(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	/* One request per connection at a time: pausing is plain TCP backpressure. */
	SETOPT(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	SETOPT(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
	SETOPT(CURLOPT_USERAGENT, "retryd");
	SETOPT(CURLOPT_HEADERFUNCTION, on_curl_header);
	SETOPT(CURLOPT_HEADERDATA, (void *)req);
	SETOPT(CURLOPT_WRITEFUNCTION, on_curl_write);
	SETOPT(CURLOPT_WRITEDATA, (void *)req);
	if (req->headers != NULL)
		SETOPT(CURLOPT_HTTPHEADER, req->headers);
	/* Always POSTFIELDS for a body (also an empty POST one): without it curl
	 * would read the body from stdin. */
	if (body != NULL) {
		SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
		SETOPT(CURLOPT_POSTFIELDS, body);
	}
	if (strcmp(method, "HEAD") == 0)
		SETOPT(CURLOPT_NOBODY, 1L);
	else if (strcmp(method, body != NULL ? "POST" : "GET") != 0)
		SETOPT(CURLOPT_CUSTOMREQUEST, method);
	if (opts->connect_timeout_ms > 0)
		SETOPT(CURLOPT_CONNECTTIMEOUT_MS, opts->connect_timeout_ms);
	if (opts->total_timeout_ms > 0)
		SETOPT(CURLOPT_TIMEOUT_MS, opts->total_timeout_ms);
#undef SETOPT
	if (rc != CURLE_OK) {
		why = curl->easy_strerror(rc);
		goto fail;
	}

	/* From inside a curl callback the handle is added once curl returns. */
	if (client->depth == 0) {
		int e = request_add(req);

		if (e != 0) {
			why = e == UV_ENOMEM ? "out of memory" : "cannot add the transfer";
			goto fail;
		}
	}
	uv_timer_init(client->loop, &req->idle);
	/* The loop's cached time may be stale here; the idle clock starts now. */
	uv_update_time(client->loop);
	if (req->idle_ms > 0)
		uv_timer_start(&req->idle, on_idle, (uint64_t)req->idle_ms, (uint64_t)req->idle_ms);
	request_link(req);
	return req;

fail:
	errbuf_set(err, errlen, "%s", why);
	if (req != NULL) {
		curl->easy_cleanup(req->easy);
		curl->slist_free_all(req->headers);
		free(req->log_url);
		free(req);
	}
	return NULL;
}

void http_request_cancel(struct http_request *req)
{
	if (req == NULL || req->cancelled)
		return;
	if (!req->finishing)
		request_log_end(req, "closed");
	req->cancelled = true;
	uv_timer_stop(&req->idle);
	/* Inside one of curl's callbacks (or while done() is being delivered) the
	 * request is released once that code path is back. */
	if (req->finishing || req->client->depth > 0)
		return;
	request_release(req);
}

static void on_drain_deadline(uv_timer_t *t)
{
	http_request_cancel(HTTP_CONTAINER_OF(t, struct http_request, idle));
}

void http_request_drain(struct http_request *req, long deadline_ms, void *owned)
{
	if (req == NULL || req->cancelled || req->finishing || req->paused) {
		http_request_cancel(req);
		free(owned);
		return;
	}
	/* The exchange its caller had ends here; what follows is the
	 * connection's, logged no more. */
	request_log_end(req, "ok");
	free(req->log_url);
	req->log_url = NULL;
	memset(&req->cbs, 0, sizeof(req->cbs));
	req->draining = true;
	req->drain_owned = owned;
	req->idle_ms = 0;
	uv_timer_start(&req->idle, on_drain_deadline, (uint64_t)(deadline_ms > 0 ? deadline_ms : 1),
		       0);
}

void http_request_pause(struct http_request *req, bool paused)
{
	struct http_client *c = req->client;

	if (req->cancelled || req->finishing || req->paused == paused)
		return;
	req->paused = paused;
	if (paused) {
		uv_timer_stop(&req->idle);
		/* Fails before there is a connection; the write callback then
		 * pauses the transfer when the first byte comes. */
		curl->easy_pause(req->easy, CURLPAUSE_RECV);
		return;
	}
	if (req->idle_ms > 0)
		uv_timer_start(&req->idle, on_idle, (uint64_t)req->idle_ms, (uint64_t)req->idle_ms);
	/* Bytes curl held back may be delivered before this returns. */
	c->depth++;
	curl->easy_pause(req->easy, CURLPAUSE_CONT);
	c->depth--;
	client_after_curl(c, false);
}

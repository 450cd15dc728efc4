/* http against a real HTTP server on 127.0.0.1: a tiny libuv TCP server in
 * the test process, on the test's own loop, answering scripted raw HTTP by
 * request path. Every uv handle belongs to the heap fixture and is closed at
 * teardown; a guard timer bounds every run. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "io/curlsym.h"
#include "io/http.h"

Suite *http_suite(void);

/* make check-valgrind sets RETRYD_VALGRIND: a TLS handshake under memcheck
 * takes seconds. */
#define GUARD_MS (getenv("RETRYD_VALGRIND") ? 60000 : 5000)
#define MAX_RECS 64

struct buf {
	char *p;
	size_t len, cap;
};

struct fx;

/* One request as the client saw it, plus what the test makes it do. */
struct rec {
	struct fx *fx;
	struct http_request *req;
	bool live;              /* started and neither done nor cancelled */
	int responses, datas, dones, late;
	long status;
	struct buf headers;     /* "\nname: value" per header */
	struct buf body;
	int err;
	char msg[256];
	uint64_t t0, t_done;    /* ms */
	/* behaviour */
	int cancel_at_data;     /* cancel inside the n-th data(); 0: never */
	int drain_at_data;      /* drain inside the n-th data(); 0: never */
	long drain_ms;
	bool cancel_in_response;
	int close_client_at_data;  /* close the client inside the n-th data(); 0: never */
	int pause_every;        /* pause inside every n-th data(), resume from a timer */
	uint64_t resume_ms;
	bool paused;
	int pauses, data_while_paused;
	const char *start_in_data;   /* path to start from inside the first data() */
	const char *start_in_done;   /* path to start from inside done() */
	uv_timer_t resume;
	bool resume_inited;
};

/* One accepted server connection. */
struct conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	struct fx *fx;
	struct conn *next;
	int open_handles;
	bool closing, busy;
	char in[65536];
	size_t inlen;
	/* the request being answered */
	char path[128];
	char raw[8192];
	size_t rawlen;
	int n, delay, step;
	enum { END_CHUNKED, END_CLOSE, END_STALL } end;
};

struct fx {
	uv_loop_t loop;
	uv_tcp_t server;
	uv_tcp_t spare;         /* bound, never listening: connecting is refused */
	uv_timer_t guard;
	uv_timer_t aux;         /* a test's own timed action */
	int port, spare_port;
	struct http_client *client;
	bool client_closed, timed_out;
	struct conn *conns;
	int accepted, server_eofs;
	int outstanding;        /* recs still live */
	int want_eofs;          /* run() also waits for this many client hang-ups */
	struct rec recs[MAX_RECS];
	int nrecs;
	void (*aux_cb)(struct fx *fx);
	bool aux_checked;
	int aux_responses, aux_datas;
};

static struct fx *fx;

static uint64_t now_ms(void)
{
	return uv_hrtime() / 1000000u;
}

static void buf_add(struct buf *b, const char *p, size_t len)
{
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + len + 1)
			cap *= 2;
		b->p = realloc(b->p, cap);
		ck_assert_ptr_nonnull(b->p);
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, len);
	b->len += len;
	b->p[b->len] = '\0';
}

static const char *buf_str(const struct buf *b)
{
	return b->p != NULL ? b->p : "";
}

/* --- the scripted server --- */

static void event_text(int k, char *out, size_t outlen)
{
	snprintf(out, outlen, "data: {\"k\":%d}\n\n", k);
}

/* What /sse?n=N answers as a body. */
static void expected_events(int n, struct buf *b)
{
	char ev[64];

	for (int k = 0; k < n; k++) {
		event_text(k, ev, sizeof ev);
		buf_add(b, ev, strlen(ev));
	}
}

static char big_byte(size_t i)
{
	return (char)('a' + (i * 7 + i / 251) % 26);
}

struct wreq {
	uv_write_t w;
	struct conn *c;
	bool close_after;
	char data[];
};

static void conn_try_request(struct conn *c);

static void on_conn_handle_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	if (--c->open_handles > 0)
		return;
	for (struct conn **pp = &c->fx->conns; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	free(c);
}

static void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
	uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
}

static void on_written(uv_write_t *w, int status)
{
	struct wreq *r = (struct wreq *)w;

	(void)status;
	if (r->close_after)
		conn_close(r->c);
	free(r);
}

static void srv_write(struct conn *c, const char *data, size_t len, bool close_after)
{
	struct wreq *r;
	uv_buf_t b;

	if (c->closing)
		return;
	r = malloc(sizeof *r + len);
	ck_assert_ptr_nonnull(r);
	r->c = c;
	r->close_after = close_after;
	memcpy(r->data, data, len);
	b = uv_buf_init(r->data, (unsigned)len);
	ck_assert_int_eq(uv_write(&r->w, (uv_stream_t *)&c->tcp, &b, 1, on_written), 0);
}

static void srv_writes(struct conn *c, const char *s)
{
	srv_write(c, s, strlen(s), false);
}

static void conn_response_done(struct conn *c)
{
	c->busy = false;
	conn_try_request(c);
}

static void on_step(uv_timer_t *t)
{
	struct conn *c = t->data;
	char ev[64], chunk[96];

	if (c->n < 0 || c->step < c->n) {
		event_text(c->step++, ev, sizeof ev);
		snprintf(chunk, sizeof chunk, "%zx\r\n%s\r\n", strlen(ev), ev);
		srv_write(c, chunk, strlen(chunk), c->end == END_CLOSE && c->step == c->n);
		if (c->n < 0 || c->step < c->n)
			uv_timer_start(&c->timer, on_step, (uint64_t)c->delay, 0);
		else if (c->end == END_CHUNKED)
			uv_timer_start(&c->timer, on_step, (uint64_t)c->delay, 0);
		return;
	}
	if (c->end == END_CHUNKED) {
		srv_writes(c, "0\r\n\r\n");
		conn_response_done(c);
	}
}

static int query_int(const char *path, const char *key, int dflt)
{
	const char *q = strchr(path, '?');
	size_t kl = strlen(key);

	while (q != NULL) {
		q++;
		if (strncmp(q, key, kl) == 0 && q[kl] == '=')
			return atoi(q + kl + 1);
		q = strchr(q, '&');
	}
	return dflt;
}

static bool path_is(const char *path, const char *name)
{
	size_t n = strlen(name);

	return strncmp(path, name, n) == 0 && (path[n] == '\0' || path[n] == '?');
}

static const char sse_head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
			       "X-Test: Yes\r\nTransfer-Encoding: chunked\r\n\r\n";

static void conn_answer(struct conn *c)
{
	char head[512];
	const char *p = c->path;

	if (path_is(p, "/sse") || path_is(p, "/drop") || path_is(p, "/stall") || path_is(p, "/forever")) {
		c->n = path_is(p, "/forever") ? -1 : query_int(p, "n", 3);
		c->delay = query_int(p, "d", 10);
		c->step = 0;
		c->end = path_is(p, "/drop") ? END_CLOSE : path_is(p, "/stall") ? END_STALL : END_CHUNKED;
		srv_write(c, sse_head, sizeof sse_head - 1, c->end == END_CLOSE && c->n == 0);
		uv_timer_start(&c->timer, on_step, (uint64_t)c->delay, 0);
	} else if (path_is(p, "/burst")) {
		/* every event and the end in one write: one read on the client */
		struct buf all = { 0 };
		char ev[64], chunk[96];

		buf_add(&all, sse_head, sizeof sse_head - 1);
		for (int k = 0; k < query_int(p, "n", 3); k++) {
			event_text(k, ev, sizeof ev);
			snprintf(chunk, sizeof chunk, "%zx\r\n%s\r\n", strlen(ev), ev);
			buf_add(&all, chunk, strlen(chunk));
		}
		buf_add(&all, "0\r\n\r\n", 5);
		srv_write(c, all.p, all.len, false);
		free(all.p);
		conn_response_done(c);
	} else if (path_is(p, "/503")) {
		const char *body = "{\"error\":{\"message\":\"Service Unavailable\",\"type\":\"overloaded\"}}";

		snprintf(head, sizeof head,
			 "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
			 "Retry-After: 7\r\nContent-Length: %zu\r\n\r\n",
			 strlen(body));
		srv_writes(c, head);
		srv_writes(c, body);
		conn_response_done(c);
	} else if (path_is(p, "/interim")) {
		srv_writes(c, "HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n"
			      "HTTP/1.1 200 OK\r\nX-Final: 2\r\nX-Folded: a\r\n  b\r\nContent-Length: 2\r\n\r\nok");
		conn_response_done(c);
	} else if (path_is(p, "/echo")) {
		snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", c->rawlen);
		srv_writes(c, head);
		srv_write(c, c->raw, c->rawlen, false);
		conn_response_done(c);
	} else if (path_is(p, "/empty")) {
		srv_writes(c, "HTTP/1.1 204 No Content\r\nX-Empty: 1\r\n\r\n");
		conn_response_done(c);
	} else if (path_is(p, "/big")) {
		size_t n = (size_t)query_int(p, "n", 1 << 20);
		char *body = malloc(n);

		ck_assert_ptr_nonnull(body);
		for (size_t i = 0; i < n; i++)
			body[i] = big_byte(i);
		snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", n);
		srv_writes(c, head);
		srv_write(c, body, n, false);
		free(body);
		conn_response_done(c);
	} else if (path_is(p, "/hang")) {
		/* never answers */
	} else {
		srv_writes(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
		conn_response_done(c);
	}
}

/* Takes one whole request (headers and Content-Length body) off the input
 * and answers it; keep-alive: the next one waits until this is answered. */
static void conn_try_request(struct conn *c)
{
	char *end, *cl;
	size_t head, total, body = 0;

	if (c->busy || c->closing || c->inlen == 0)
		return;
	if ((unsigned char)c->in[0] == 0x16) { /* a TLS ClientHello */
		static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";

		srv_write(c, bad, sizeof bad - 1, true);
		c->busy = true;
		return;
	}
	c->in[c->inlen < sizeof c->in ? c->inlen : sizeof c->in - 1] = '\0';
	end = strstr(c->in, "\r\n\r\n");
	if (end == NULL)
		return;
	head = (size_t)(end - c->in) + 4;
	cl = strstr(c->in, "\r\nContent-Length:");
	if (cl != NULL && cl < end)
		body = (size_t)strtoul(cl + 17, NULL, 10);
	total = head + body;
	if (c->inlen < total)
		return;
	ck_assert_uint_lt(total, sizeof c->raw);
	memcpy(c->raw, c->in, total);
	c->rawlen = total;
	ck_assert_int_eq(sscanf(c->in, "%*s %127s", c->path), 1);
	memmove(c->in, c->in + total, c->inlen - total);
	c->inlen -= total;
	c->busy = true;
	conn_answer(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	struct conn *c = h->data;

	(void)suggested;
	*b = uv_buf_init(c->in + c->inlen, (unsigned)(sizeof c->in - 1 - c->inlen));
}

static void maybe_stop(struct fx *f)
{
	if (f->outstanding == 0 && f->server_eofs >= f->want_eofs)
		uv_stop(&f->loop);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
	struct conn *c = s->data;

	(void)b;
	if (nread < 0) {
		c->fx->server_eofs++;
		conn_close(c);
		maybe_stop(c->fx);
		return;
	}
	c->inlen += (size_t)nread;
	if (c->inlen >= sizeof c->in - 1) {
		conn_close(c);
		return;
	}
	conn_try_request(c);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct fx *f = server->data;
	struct conn *c;

	ck_assert_int_eq(status, 0);
	c = calloc(1, sizeof *c);
	ck_assert_ptr_nonnull(c);
	c->fx = f;
	ck_assert_int_eq(uv_tcp_init(&f->loop, &c->tcp), 0);
	ck_assert_int_eq(uv_timer_init(&f->loop, &c->timer), 0);
	c->tcp.data = c;
	c->timer.data = c;
	c->open_handles = 2;
	c->next = f->conns;
	f->conns = c;
	f->accepted++;
	ck_assert_int_eq(uv_accept(server, (uv_stream_t *)&c->tcp), 0);
	ck_assert_int_eq(uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read), 0);
}

static int bound_port(uv_tcp_t *t)
{
	struct sockaddr_storage ss;
	int len = sizeof ss;

	ck_assert_int_eq(uv_tcp_getsockname(t, (struct sockaddr *)&ss, &len), 0);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* --- fixture --- */

static void on_guard(uv_timer_t *t)
{
	struct fx *f = t->data;

	f->timed_out = true;
	uv_stop(&f->loop);
}

static void setup(void)
{
	struct sockaddr_in addr;
	char err[512] = "";

	fx = calloc(1, sizeof *fx);
	ck_assert_ptr_nonnull(fx);
	ck_assert_int_eq(uv_loop_init(&fx->loop), 0);
	ck_assert_int_eq(uv_ip4_addr("127.0.0.1", 0, &addr), 0);
	ck_assert_int_eq(uv_tcp_init(&fx->loop, &fx->server), 0);
	fx->server.data = fx;
	ck_assert_int_eq(uv_tcp_bind(&fx->server, (const struct sockaddr *)&addr, 0), 0);
	ck_assert_int_eq(uv_listen((uv_stream_t *)&fx->server, 128, on_connection), 0);
	fx->port = bound_port(&fx->server);
	ck_assert_int_eq(uv_tcp_init(&fx->loop, &fx->spare), 0);
	ck_assert_int_eq(uv_tcp_bind(&fx->spare, (const struct sockaddr *)&addr, 0), 0);
	fx->spare_port = bound_port(&fx->spare);
	ck_assert_int_eq(uv_timer_init(&fx->loop, &fx->guard), 0);
	fx->guard.data = fx;
	ck_assert_int_eq(uv_timer_init(&fx->loop, &fx->aux), 0);
	fx->aux.data = fx;
	fx->client = http_client_new(&fx->loop, err, sizeof(err));
	ck_assert_msg(fx->client != NULL, "%s", err);
}

static void on_client_closed(void *ctx)
{
	struct fx *f = ctx;

	f->client_closed = true;
}

static void teardown(void)
{
	if (fx->client != NULL) {
		http_client_close(fx->client, on_client_closed, fx);
		fx->client = NULL;
	}
	uv_close((uv_handle_t *)&fx->server, NULL);
	uv_close((uv_handle_t *)&fx->spare, NULL);
	uv_close((uv_handle_t *)&fx->guard, NULL);
	uv_close((uv_handle_t *)&fx->aux, NULL);
	for (int i = 0; i < fx->nrecs; i++)
		if (fx->recs[i].resume_inited)
			uv_close((uv_handle_t *)&fx->recs[i].resume, NULL);
	for (struct conn *c = fx->conns; c != NULL; c = c->next)
		conn_close(c);
	ck_assert_int_eq(uv_run(&fx->loop, UV_RUN_DEFAULT), 0);
	ck_assert(fx->client_closed);
	ck_assert_ptr_null(fx->conns);
	ck_assert_int_eq(uv_loop_close(&fx->loop), 0);
	for (int i = 0; i < fx->nrecs; i++) {
		free(fx->recs[i].headers.p);
		free(fx->recs[i].body.p);
	}
	free(fx);
	fx = NULL;
}

/* Runs the loop until every request ended (and want_eofs hang-ups came);
 * fails the test when the guard fires first. */
static void run(void)
{
	ck_assert_int_eq(uv_timer_start(&fx->guard, on_guard, GUARD_MS, 0), 0);
	uv_run(&fx->loop, UV_RUN_DEFAULT);
	uv_timer_stop(&fx->guard);
	ck_assert_msg(!fx->timed_out, "the test's guard timer fired");
}

static void on_settled(uv_timer_t *t)
{
	uv_stop(t->loop);
}

/* Lets the loop run a while longer, to catch any late callback. */
static void settle(uint64_t ms)
{
	ck_assert_int_eq(uv_timer_start(&fx->aux, on_settled, ms, 0), 0);
	uv_run(&fx->loop, UV_RUN_DEFAULT);
}

/* --- the client's side --- */

static void rec_end(struct rec *r)
{
	if (r->live) {
		r->live = false;
		r->fx->outstanding--;
		maybe_stop(r->fx);
	}
}

static void rec_cancel(struct rec *r)
{
	http_request_cancel(r->req);
	rec_end(r);
}

static struct rec *start_opts(const char *path, struct http_options *o);

static struct rec *start(const char *path)
{
	struct http_options o = { 0 };

	return start_opts(path, &o);
}

static void on_resume(uv_timer_t *t)
{
	struct rec *r = t->data;

	r->paused = false;
	http_request_pause(r->req, false);
}

static void on_response(void *ctx, long status, const char *const *headers, size_t n)
{
	struct rec *r = ctx;

	if (!r->live)
		r->late++;
	r->responses++;
	r->status = status;
	for (size_t i = 0; i < n; i++) {
		buf_add(&r->headers, "\n", 1);
		buf_add(&r->headers, headers[2 * i], strlen(headers[2 * i]));
		buf_add(&r->headers, ": ", 2);
		buf_add(&r->headers, headers[2 * i + 1], strlen(headers[2 * i + 1]));
	}
	if (r->cancel_in_response)
		rec_cancel(r);
}

static void on_data(void *ctx, const char *bytes, size_t len)
{
	struct rec *r = ctx;
	struct fx *f = r->fx;

	if (!r->live)
		r->late++;
	if (r->paused)
		r->data_while_paused++;
	ck_assert_int_eq(r->responses, 1);
	r->datas++;
	buf_add(&r->body, bytes, len);
	if (r->start_in_data != NULL && r->datas == 1)
		start(r->start_in_data);
	if (r->cancel_at_data == r->datas)
		rec_cancel(r);
	if (r->drain_at_data == r->datas) {
		http_request_drain(r->req, r->drain_ms, malloc(16)); /* owned: freed with it */
		rec_end(r);
	}
	if (r->close_client_at_data == r->datas && f->client != NULL) {
		http_client_close(f->client, on_client_closed, f);
		f->client = NULL;
		for (int i = 0; i < f->nrecs; i++)
			rec_end(&f->recs[i]);
	}
	if (r->pause_every > 0 && r->datas % r->pause_every == 0 && r->live) {
		r->paused = true;
		r->pauses++;
		http_request_pause(r->req, true);
		ck_assert_int_eq(uv_timer_start(&r->resume, on_resume, r->resume_ms, 0), 0);
	}
}

static void on_done(void *ctx, int err, const char *message)
{
	struct rec *r = ctx;

	if (!r->live)
		r->late++;
	r->dones++;
	r->err = err;
	snprintf(r->msg, sizeof r->msg, "%s", message);
	r->t_done = now_ms();
	if (r->start_in_done != NULL)
		start(r->start_in_done);
	rec_end(r);
}

static struct rec *start_opts(const char *path, struct http_options *o)
{
	static const struct http_callbacks tmpl = { on_response, on_data, on_done, NULL };
	struct http_callbacks cbs = tmpl;
	char url[256], err[256];
	struct rec *r;

	ck_assert_int_lt(fx->nrecs, MAX_RECS);
	r = &fx->recs[fx->nrecs++];
	r->fx = fx;
	ck_assert_int_eq(uv_timer_init(&fx->loop, &r->resume), 0);
	r->resume.data = r;
	r->resume_inited = true;
	if (o->url == NULL) {
		snprintf(url, sizeof url, "http://127.0.0.1:%d%s", fx->port, path);
		o->url = url;
	}
	cbs.ctx = r;
	r->t0 = now_ms();
	r->req = http_request_start(fx->client, o, &cbs, err, sizeof err);
	ck_assert_msg(r->req != NULL, "http_request_start: %s", err);
	r->live = true;
	fx->outstanding++;
	return r;
}

/* Starts a request expected to be refused at once. */
static void expect_rejected(struct http_options *o, const char *why)
{
	static const struct http_callbacks cbs = { on_response, on_data, on_done, NULL };
	char err[256] = "untouched";

	ck_assert_ptr_null(http_request_start(fx->client, o, &cbs, err, sizeof err));
	ck_assert_msg(strstr(err, why) != NULL, "error \"%s\" lacks \"%s\"", err, why);
}

static void assert_events_body(const struct rec *r, int n)
{
	struct buf want = { 0 };

	expected_events(n, &want);
	ck_assert_uint_eq(r->body.len, want.len);
	ck_assert_str_eq(buf_str(&r->body), buf_str(&want));
	free(want.p);
}

static void assert_clean_success(const struct rec *r)
{
	ck_assert_msg(r->err == 0, "err %d: %s", r->err, r->msg);
	ck_assert_int_eq(r->dones, 1);
	ck_assert_int_eq(r->responses, 1);
	ck_assert_int_eq(r->late, 0);
}

/* --- tests --- */

START_TEST(test_sse_stream_arrives_in_order_with_lowercased_headers)
{
	struct rec *r = start("/sse?n=5&d=20");

	run();
	assert_clean_success(r);
	ck_assert_int_eq(r->status, 200);
	ck_assert_ptr_nonnull(strstr(buf_str(&r->headers), "\ncontent-type: text/event-stream"));
	ck_assert_ptr_nonnull(strstr(buf_str(&r->headers), "\nx-test: Yes"));
	ck_assert_ptr_null(strstr(buf_str(&r->headers), "Content-Type"));
	assert_events_body(r, 5);
	ck_assert_int_ge(r->datas, 2); /* streamed, not buffered to the end */
}
END_TEST

START_TEST(test_503_delivers_status_json_body_and_retry_after)
{
	struct rec *r = start("/503");

	run();
	assert_clean_success(r);
	ck_assert_int_eq(r->status, 503);
	ck_assert_ptr_nonnull(strstr(buf_str(&r->headers), "\nretry-after: 7"));
	ck_assert_ptr_nonnull(strstr(buf_str(&r->headers), "\ncontent-type: application/json"));
	ck_assert_str_eq(buf_str(&r->body),
			 "{\"error\":{\"message\":\"Service Unavailable\",\"type\":\"overloaded\"}}");
}
END_TEST

START_TEST(test_connection_closed_mid_body_is_an_error_after_the_bytes)
{
	struct rec *r = start("/drop?n=2&d=10");

	run();
	ck_assert_int_eq(r->responses, 1);
	ck_assert_int_eq(r->status, 200);
	assert_events_body(r, 2);
	ck_assert_int_eq(r->dones, 1);
	ck_assert_int_eq(r->err, UV_EOF);
	ck_assert_msg(strstr(r->msg, "closed") != NULL, "message: %s", r->msg);
}
END_TEST

START_TEST(test_server_that_never_answers_hits_the_idle_timeout)
{
	struct http_options o = { .idle_timeout_ms = 200 };
	struct rec *r = start_opts("/hang", &o);

	run();
	ck_assert_int_eq(r->dones, 1);
	ck_assert_int_eq(r->responses, 0);
	ck_assert_int_eq(r->err, UV_ETIMEDOUT);
	ck_assert_str_eq(r->msg, "Idle timeout: no data received for 200 milliseconds");
	ck_assert_uint_ge(r->t_done - r->t0, 190);
	ck_assert_uint_lt(r->t_done - r->t0, 2000);
}
END_TEST

START_TEST(test_stream_that_stalls_after_data_hits_the_idle_timeout)
{
	struct http_options o = { .idle_timeout_ms = 200 };
	struct rec *r = start_opts("/stall?n=2&d=10", &o);

	run();
	ck_assert_int_eq(r->responses, 1);
	assert_events_body(r, 2);
	ck_assert_int_eq(r->dones, 1);
	ck_assert_int_eq(r->err, UV_ETIMEDOUT);
	ck_assert_ptr_nonnull(strstr(r->msg, "Idle timeout"));
}
END_TEST

START_TEST(test_idle_timer_restarts_on_every_byte)
{
	struct http_options o = { .idle_timeout_ms = 250 };
	struct rec *r = start_opts("/sse?n=6&d=100", &o);

	run();
	assert_clean_success(r);
	assert_events_body(r, 6);
	ck_assert_uint_ge(r->t_done - r->t0, 500); /* twice the idle timeout */
}
END_TEST

START_TEST(test_total_timeout_ends_a_hung_request)
{
	struct http_options o = { .total_timeout_ms = 300 };
	struct rec *r = start_opts("/hang", &o);

	run();
	ck_assert_int_eq(r->dones, 1);
	ck_assert_int_eq(r->err, UV_ETIMEDOUT);
	ck_assert_msg(strstr(r->msg, "timed out") != NULL, "message: %s", r->msg);
	ck_assert_uint_ge(r->t_done - r->t0, 290);
	ck_assert_uint_lt(r->t_done - r->t0, 2000);
}
END_TEST

START_TEST(test_connection_refused_is_reported_without_a_response)
{
	struct http_options o = { .connect_timeout_ms = 1000 };
	char url[128];
	struct rec *r;

	snprintf(url, sizeof url, "http://127.0.0.1:%d/sse", fx->spare_port);
	o.url = url;
	r = start_opts(NULL, &o);
	run();
	ck_assert_int_eq(r->dones, 1);
	ck_assert_int_eq(r->responses, 0);
	ck_assert_int_eq(r->datas, 0);
	ck_assert_int_eq(r->err, UV_ECONNREFUSED);
	ck_assert_msg(strlen(r->msg) > 0, "empty message");
}
END_TEST

START_TEST(test_https_to_a_plain_server_fails_the_tls_handshake)
{
	struct http_options o = { 0 };
	char url[128];
	struct rec *r;

	snprintf(url, sizeof url, "https://127.0.0.1:%d/sse", fx->port);
	o.url = url;
	r = start_opts(NULL, &o);
	run();
	ck_assert_int_eq(r->dones, 1);
	ck_assert_int_eq(r->responses, 0);
	ck_assert_int_eq(r->err, UV_EPROTO);
}
END_TEST

START_TEST(test_cancel_inside_data_stops_all_callbacks)
{
	struct rec *r = start("/forever?d=10");

	r->cancel_at_data = 2;
	fx->want_eofs = 1; /* the server sees the connection go */
	run();
	settle(100);
	ck_assert_int_eq(r->responses, 1);
	ck_assert_int_eq(r->datas, 2);
	ck_assert_int_eq(r->dones, 0);
	ck_assert_int_eq(r->late, 0);
}
END_TEST

START_TEST(test_cancel_inside_response_stops_all_callbacks)
{
	struct rec *r = start("/sse?n=3&d=10");

	r->cancel_in_response = true;
	fx->want_eofs = 1;
	run();
	settle(100);
	ck_assert_int_eq(r->responses, 1);
	ck_assert_int_eq(r->datas, 0);
	ck_assert_int_eq(r->dones, 0);
	ck_assert_int_eq(r->late, 0);
}
END_TEST

START_TEST(test_cancel_inside_data_with_more_bytes_in_the_same_read)
{
	struct rec *r = start("/burst?n=50");

	r->cancel_at_data = 1;
	fx->want_eofs = 1;
	run();
	settle(50);
	ck_assert_int_eq(r->datas, 1);
	ck_assert_int_eq(r->dones, 0);
	ck_assert_int_eq(r->late, 0);
}
END_TEST

static void cancel_first(struct fx *f)
{
	f->aux_datas = f->recs[0].datas;
	rec_cancel(&f->recs[0]);
}

static void on_aux(uv_timer_t *t)
{
	struct fx *f = t->data;

	f->aux_cb(f);
}

START_TEST(test_cancel_from_a_timer_mid_stream)
{
	struct rec *r = start("/forever?d=10");

	fx->aux_cb = cancel_first;
	ck_assert_int_eq(uv_timer_start(&fx->aux, on_aux, 80, 0), 0);
	fx->want_eofs = 1;
	run();
	settle(100);
	ck_assert_int_gt(fx->aux_datas, 0);
	ck_assert_int_eq(r->datas, fx->aux_datas);
	ck_assert_int_eq(r->dones, 0);
	ck_assert_int_eq(r->late, 0);
}
END_TEST

START_TEST(test_cancel_while_paused)
{
	struct rec *r = start("/forever?d=5");

	r->pause_every = 1;
	r->resume_ms = 100000; /* never: the cancel comes first */
	fx->aux_cb = cancel_first;
	ck_assert_int_eq(uv_timer_start(&fx->aux, on_aux, 100, 0), 0);
	fx->want_eofs = 1;
	run();
	uv_timer_stop(&r->resume);
	settle(50);
	ck_assert_int_eq(r->datas, 1);
	ck_assert_int_eq(r->data_while_paused, 0);
	ck_assert_int_eq(r->dones, 0);
	ck_assert_int_eq(r->late, 0);
}
END_TEST

START_TEST(test_pause_inside_data_and_resume_keeps_every_byte_in_order)
{
	struct rec *r = start("/sse?n=20&d=5");

	r->pause_every = 2;
	r->resume_ms = 25;
	run();
	assert_clean_success(r);
	assert_events_body(r, 20);
	ck_assert_int_gt(r->pauses, 2);
	ck_assert_int_eq(r->data_while_paused, 0);
}
END_TEST

START_TEST(test_pause_on_every_read_of_a_large_body)
{
	struct rec *r = start("/big?n=1048576");

	r->pause_every = 1;
	r->resume_ms = 0;
	run();
	assert_clean_success(r);
	ck_assert_uint_eq(r->body.len, 1048576);
	for (size_t i = 0; i < r->body.len; i++)
		if (r->body.p[i] != big_byte(i))
			ck_abort_msg("byte %zu differs", i);
	ck_assert_int_gt(r->pauses, 10);
	ck_assert_int_eq(r->data_while_paused, 0);
}
END_TEST

START_TEST(test_pause_inside_data_holds_the_rest_of_the_same_read)
{
	struct rec *r = start("/burst?n=50");

	r->pause_every = 1;
	r->resume_ms = 1;
	run();
	assert_clean_success(r);
	assert_events_body(r, 50);
	ck_assert_int_ge(r->pauses, 2); /* curl hands back what it held in one piece */
	ck_assert_int_eq(r->data_while_paused, 0);
}
END_TEST

START_TEST(test_close_client_inside_data_with_more_bytes_in_the_same_read)
{
	struct rec *a = start("/burst?n=50");
	struct rec *b = start("/forever?d=10");

	a->close_client_at_data = 1;
	run();
	settle(50);
	ck_assert(fx->client_closed);
	ck_assert_int_eq(a->datas, 1);
	ck_assert_int_eq(a->dones + b->dones, 0);
	ck_assert_int_eq(a->late + b->late, 0);
}
END_TEST

static void check_then_resume(struct fx *f)
{
	struct rec *r = &f->recs[0];

	f->aux_checked = true;
	f->aux_responses = r->responses;
	f->aux_datas = r->datas;
	r->paused = false;
	http_request_pause(r->req, false);
}

START_TEST(test_pause_before_the_response_holds_it_until_resumed)
{
	struct rec *r = start("/sse?n=3&d=0");

	r->paused = true;
	http_request_pause(r->req, true); /* no connection yet */
	fx->aux_cb = check_then_resume;
	ck_assert_int_eq(uv_timer_start(&fx->aux, on_aux, 150, 0), 0);
	run();
	ck_assert(fx->aux_checked);
	ck_assert_int_eq(fx->aux_responses, 0);
	ck_assert_int_eq(fx->aux_datas, 0);
	assert_clean_success(r);
	assert_events_body(r, 3);
	ck_assert_int_eq(r->data_while_paused, 0);
}
END_TEST

START_TEST(test_fifty_concurrent_streams_all_complete)
{
	struct rec *rs[50];

	for (int i = 0; i < 50; i++)
		rs[i] = start("/sse?n=5&d=10");
	run();
	for (int i = 0; i < 50; i++) {
		assert_clean_success(rs[i]);
		ck_assert_int_eq(rs[i]->status, 200);
		assert_events_body(rs[i], 5);
	}
	ck_assert_int_ge(fx->accepted, 2); /* not one after the other on one connection */
}
END_TEST

START_TEST(test_interim_100_headers_are_dropped_and_folds_joined)
{
	struct rec *r = start("/interim");

	run();
	assert_clean_success(r);
	ck_assert_int_eq(r->status, 200);
	ck_assert_ptr_null(strstr(buf_str(&r->headers), "x-interim"));
	ck_assert_ptr_nonnull(strstr(buf_str(&r->headers), "\nx-final: 2"));
	ck_assert_ptr_nonnull(strstr(buf_str(&r->headers), "\nx-folded: a b\n"));
	ck_assert_str_eq(buf_str(&r->body), "ok");
}
END_TEST

START_TEST(test_method_headers_and_body_reach_the_server)
{
	static const char *const headers[] = { "Content-Type: application/json", "X-Key: abc", NULL };
	static const char body[] = "{\"a\":1}";
	struct http_options post = { .headers = headers, .body = body, .body_len = sizeof body - 1 };
	struct http_options put = { .method = "PUT", .body = "x", .body_len = 1 };
	struct http_options get = { 0 };
	struct http_options empty_post = { .method = "POST" };
	struct rec *rp = start_opts("/echo?p", &post);
	struct rec *ru = start_opts("/echo?u", &put);
	struct rec *rg = start_opts("/echo?g", &get);
	struct rec *re = start_opts("/echo?e", &empty_post);
	const char *s;

	run();
	assert_clean_success(rp);
	s = buf_str(&rp->body);
	ck_assert_msg(strncmp(s, "POST /echo?p HTTP/1.1\r\n", 23) == 0, "%s", s);
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Key: abc\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nContent-Type: application/json\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nContent-Length: 7\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\n\r\n{\"a\":1}"));
	assert_clean_success(ru);
	ck_assert_msg(strncmp(buf_str(&ru->body), "PUT /echo?u HTTP/1.1\r\n", 22) == 0, "%s", buf_str(&ru->body));
	assert_clean_success(rg);
	ck_assert_msg(strncmp(buf_str(&rg->body), "GET /echo?g HTTP/1.1\r\n", 22) == 0, "%s", buf_str(&rg->body));
	assert_clean_success(re);
	ck_assert_msg(strncmp(buf_str(&re->body), "POST /echo?e HTTP/1.1\r\n", 23) == 0, "%s", buf_str(&re->body));
	ck_assert_ptr_nonnull(strstr(buf_str(&re->body), "\r\nContent-Length: 0\r\n"));
}
END_TEST

START_TEST(test_empty_body_response_is_delivered_at_the_end)
{
	struct rec *r = start("/empty");

	run();
	assert_clean_success(r);
	ck_assert_int_eq(r->status, 204);
	ck_assert_int_eq(r->datas, 0);
	ck_assert_ptr_nonnull(strstr(buf_str(&r->headers), "\nx-empty: 1"));
}
END_TEST

START_TEST(test_bad_requests_are_refused_at_start_without_callbacks)
{
	static const char *const crlf[] = { "X-Evil: a\r\nX-Injected: b", NULL };
	struct http_options o = { .url = "not a url" };
	char url[128];

	expect_rejected(&o, "bad URL");
	o.url = "ftp://127.0.0.1/x";
	expect_rejected(&o, "only http and https");
	o.url = "file:///etc/passwd";
	expect_rejected(&o, "only http and https");
	snprintf(url, sizeof url, "http://127.0.0.1:%d/sse", fx->port);
	o.url = url;
	o.method = "GE T";
	expect_rejected(&o, "method");
	o.method = NULL;
	o.headers = crlf;
	expect_rejected(&o, "line break");
	o.headers = NULL;
	o.url = NULL;
	expect_rejected(&o, "no URL");
	settle(20);
	ck_assert_int_eq(fx->accepted, 0);
}
END_TEST

START_TEST(test_close_client_inside_data_ends_everything_quietly)
{
	struct rec *a = start("/forever?d=10");
	struct rec *b = start("/forever?d=10");
	struct rec *c = start("/sse?n=100&d=10");

	a->close_client_at_data = 2;
	fx->want_eofs = 3;
	run();
	settle(100);
	ck_assert(fx->client_closed);
	ck_assert_int_eq(a->datas, 2);
	ck_assert_int_eq(a->dones + b->dones + c->dones, 0);
	ck_assert_int_eq(a->late + b->late + c->late, 0);
}
END_TEST

START_TEST(test_requests_started_inside_data_and_done_run)
{
	struct rec *r = start("/sse?n=3&d=10");

	r->start_in_data = "/sse?n=2&d=10";
	r->start_in_done = "/503";
	run();
	ck_assert_int_eq(fx->nrecs, 3);
	assert_clean_success(r);
	assert_events_body(r, 3);
	assert_clean_success(&fx->recs[1]);
	assert_events_body(&fx->recs[1], 2);
	assert_clean_success(&fx->recs[2]);
	ck_assert_int_eq(fx->recs[2].status, 503);
}
END_TEST

START_TEST(test_a_drained_request_reads_to_its_end_quietly_and_keeps_its_connection)
{
	struct rec *r = start("/sse?n=3&d=5");

	r->drain_at_data = 1;
	r->drain_ms = 2000;
	run();
	settle(100);   /* the rest of the body is read; no callback tells of it */
	ck_assert_int_eq(r->datas, 1);
	ck_assert_int_eq(r->dones, 0);
	ck_assert_int_eq(r->late, 0);
	r = start("/sse?n=2&d=5");
	run();
	assert_clean_success(r);
	ck_assert_int_eq(fx->accepted, 1);   /* the drained one's connection, again */
}
END_TEST

START_TEST(test_a_drained_request_whose_body_never_ends_is_closed_at_its_deadline)
{
	struct rec *r = start("/forever?d=10");

	r->drain_at_data = 1;
	r->drain_ms = 60;
	fx->want_eofs = 1; /* the server sees the connection go */
	run();
	ck_assert_int_eq(r->datas, 1);
	ck_assert_int_eq(r->dones, 0);
	ck_assert_int_eq(r->late, 0);
}
END_TEST

START_TEST(test_sequential_requests_reuse_the_connection)
{
	struct rec *r = start("/sse?n=2&d=5");

	r->start_in_done = "/sse?n=2&d=5";
	run();
	assert_clean_success(r);
	assert_clean_success(&fx->recs[1]);
	assert_events_body(&fx->recs[1], 2);
	ck_assert_int_eq(fx->accepted, 1);
}
END_TEST

/* ---- loading libcurl (curlsym) --------------------------------------------- */

/* What the user sees when libcurl is missing: the loader's own words, not
 * only "cannot start libcurl". */
START_TEST(test_curlsym_names_the_loaders_reason_for_a_missing_library)
{
	static const char *const names[] = { "libretryd-no-such-curl.so.0", NULL };
	struct curlsym t;
	char err[512] = "";

	ck_assert_int_eq(curlsym_open(&t, names, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, "cannot load libcurl: ", 21) == 0, "%s", err);
	ck_assert_msg(strstr(err, "libretryd-no-such-curl.so.0") != NULL, "%s", err);
}
END_TEST

START_TEST(test_curlsym_names_the_missing_symbol_of_a_library_that_is_not_libcurl)
{
	static const char *const names[] = { "libc.so.6", NULL };
	struct curlsym t;
	char err[512] = "";

	ck_assert_int_eq(curlsym_open(&t, names, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, "cannot load libcurl: ", 21) == 0, "%s", err);
	ck_assert_msg(strstr(err, "curl_global_init") != NULL, "%s", err);
}
END_TEST

START_TEST(test_curlsym_takes_the_first_name_that_loads)
{
	static const char *const names[] = { "libretryd-no-such-curl.so.0", "libcurl.so.4", NULL };
	struct curlsym t;
	char err[512] = "";

	ck_assert_msg(curlsym_open(&t, names, err, sizeof(err)) == 0, "%s", err);
	ck_assert(t.free != NULL);
	ck_assert_str_eq(err, "");
}
END_TEST

Suite *http_suite(void)
{
	Suite *s = suite_create("http");
	TCase *tc = tcase_create("loopback");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_sse_stream_arrives_in_order_with_lowercased_headers);
	tcase_add_test(tc, test_503_delivers_status_json_body_and_retry_after);
	tcase_add_test(tc, test_connection_closed_mid_body_is_an_error_after_the_bytes);
	tcase_add_test(tc, test_server_that_never_answers_hits_the_idle_timeout);
	tcase_add_test(tc, test_stream_that_stalls_after_data_hits_the_idle_timeout);
	tcase_add_test(tc, test_idle_timer_restarts_on_every_byte);
	tcase_add_test(tc, test_total_timeout_ends_a_hung_request);
	tcase_add_test(tc, test_connection_refused_is_reported_without_a_response);
	tcase_add_test(tc, test_https_to_a_plain_server_fails_the_tls_handshake);
	tcase_add_test(tc, test_cancel_inside_data_stops_all_callbacks);
	tcase_add_test(tc, test_cancel_inside_response_stops_all_callbacks);
	tcase_add_test(tc, test_cancel_inside_data_with_more_bytes_in_the_same_read);
	tcase_add_test(tc, test_cancel_from_a_timer_mid_stream);
	tcase_add_test(tc, test_cancel_while_paused);
	tcase_add_test(tc, test_pause_inside_data_and_resume_keeps_every_byte_in_order);
	tcase_add_test(tc, test_pause_inside_data_holds_the_rest_of_the_same_read);
	tcase_add_test(tc, test_pause_on_every_read_of_a_large_body);
	tcase_add_test(tc, test_pause_before_the_response_holds_it_until_resumed);
	tcase_add_test(tc, test_fifty_concurrent_streams_all_complete);
	tcase_add_test(tc, test_interim_100_headers_are_dropped_and_folds_joined);
	tcase_add_test(tc, test_method_headers_and_body_reach_the_server);
	tcase_add_test(tc, test_empty_body_response_is_delivered_at_the_end);
	tcase_add_test(tc, test_bad_requests_are_refused_at_start_without_callbacks);
	tcase_add_test(tc, test_close_client_inside_data_ends_everything_quietly);
	tcase_add_test(tc, test_close_client_inside_data_with_more_bytes_in_the_same_read);
	tcase_add_test(tc, test_requests_started_inside_data_and_done_run);
	tcase_add_test(tc, test_sequential_requests_reuse_the_connection);
	tcase_add_test(tc, test_a_drained_request_reads_to_its_end_quietly_and_keeps_its_connection);
	tcase_add_test(tc, test_a_drained_request_whose_body_never_ends_is_closed_at_its_deadline);
	suite_add_tcase(s, tc);
	tc = tcase_create("libcurl loading");
	tcase_add_test(tc, test_curlsym_names_the_loaders_reason_for_a_missing_library);
	tcase_add_test(tc, test_curlsym_names_the_missing_symbol_of_a_library_that_is_not_libcurl);
	tcase_add_test(tc, test_curlsym_takes_the_first_name_that_loads);
	suite_add_tcase(s, tc);
	return s;
}

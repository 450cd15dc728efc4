/* redis — see redis.h. How it hangs together:
 *
 * One connection at a time. The states: IDLE (never tried), RESOLVING
 * (uv_getaddrinfo on the loop's thread pool), CONNECTING (hiredis connects,
 * then the handshake: AUTH, SELECT, PING), READY, BACKOFF (waiting to try
 * again). `timer` is the connect's deadline while resolving or connecting
 * and the backoff wait after a failure; the next attempt starts from it, so
 * a client that lost its server reconnects on its own, at most once per
 * backoff step and never in a busy loop.
 *
 * A call is handed to hiredis with itself as privdata, and hiredis calls
 * reply_cb for it exactly once: with the reply, or with NULL when the
 * context is freed (a broken connection, redisAsyncFree). That may be long
 * after the caller was answered (deadline, cancel, close), so a call counts
 * two references, hiredis's and its deadline timer's, and is freed when both
 * are gone; `pending` says whether its callback is still owed.
 *
 * hiredis/adapters/libuv.h attaches the context to the loop (one uv_poll_t),
 * but its hooks are replaced: see poll_cb and cleanup_hook.
 *
 * hiredis frees a context from inside its own functions, and a callback of
 * ours may run in the middle of that, so: `ac_dying` marks a context hiredis
 * is already freeing (a NULL reply says so), which must not be freed again
 * or given a command; the adapter's cleanup hook is replaced by ours, which
 * closes the uv_poll_t itself and counts it, so done() runs only after
 * hiredis's handle is closed too; redisAsyncFree is never called from the
 * connect callback (hiredis goes on using the context after it returns).
 *
 * io/redis.h comes first: hiredis.h #defines REDIS_OK, our enum's name for
 * the same 0. */
#include "io/redis.h"

#include "base/errbuf.h"
#include "base/log.h"
#include "base/random.h"
#include "base/secret.h"
#include "base/sha1.h"

#include <hiredis/async.h>
#include <hiredis/adapters/libuv.h>

#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#define REDIS_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

enum { DEFAULT_TIMEOUT_MS = 50, DEFAULT_PORT = 6379, BACKOFF_MIN_MS = 100, BACKOFF_MAX_MS = 5000 };

enum conn_state { ST_IDLE, ST_RESOLVING, ST_CONNECTING, ST_READY, ST_BACKOFF };

struct redis_call {
	struct redis *r;
	redis_cb cb;
	void *ctx;
	uv_timer_t timer;            /* the deadline */
	struct redis_call *prev, *next;  /* in r->calls while pending */
	unsigned refs;               /* hiredis holding it + the timer not yet closed */
	bool pending;                /* the callback is still owed */
	bool fell_back;              /* EVAL was sent after NOSCRIPT */
	/* redis_eval only, for the fallback: EVALSHA's argv, packed in one block */
	int argc;
	const char **argv;
	size_t *lens;
	char *script;
};

struct redis {
	uv_loop_t *loop;
	uv_timer_t timer;            /* connect deadline, or backoff wait */
	int timeout_ms;
	struct redis_reply_guard guard;    /* of the connection's reader */
	/* where, from the URL */
	char *host;                  /* TCP: name or address, without brackets */
	int port;
	char *path;                  /* unix socket, or NULL */
	char *user, *password;       /* NULL: none */
	int db;
	char where[160];             /* "host:port" or the socket path, for messages */
	/* the connection */
	enum conn_state state;
	redisAsyncContext *ac;
	bool ac_dying;               /* hiredis is freeing ac (or will, right after a callback) */
	uv_getaddrinfo_t *gai;       /* the resolve in flight for this attempt, or NULL */
	const char *handshake[3];    /* what was sent: "AUTH", "SELECT", "PING" */
	int handshake_left, handshake_step;
	char conn_error[256];        /* a failure found where ac cannot be freed */
	unsigned failures;           /* in a row, for the backoff */
	uint64_t failed_at;
	char error[256];
	struct redis_call *calls;    /* pending, oldest first */
	struct redis_call *calls_tail;
	unsigned refs;               /* timer + calls + resolves + hiredis's poll handle */
	bool closing;
	void (*done)(void *ctx);
	void *done_ctx;
};

static void timer_cb(uv_timer_t *t);
static void reply_cb(redisAsyncContext *ac, void *reply, void *privdata);

/* --- the URL ------------------------------------------------------------- */

#define URL_ERR "fleet.redis.url: "

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* s[0..len) with %XX decoded, new; NULL on a bad escape or no memory
 * (*bad says which). */
static char *pct_decode(const char *s, size_t len, bool *bad)
{
	char *out = malloc(len + 1);
	size_t o = 0;

	*bad = false;
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '%') {
			out[o++] = s[i];
			continue;
		}
		if (len - i < 3 || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0 ||
		    (hexval(s[i + 1]) == 0 && hexval(s[i + 2]) == 0)) {
			free(out);
			*bad = true;
			return NULL;
		}
		out[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
		i += 2;
	}
	out[o] = '\0';
	return out;
}

/* A decimal number in s[0..len) within [lo, hi]; -1 when it is not. */
static long parse_num(const char *s, size_t len, long lo, long hi)
{
	long v = 0;

	if (len == 0 || len > 10)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v >= lo && v <= hi ? v : -1;
}

static int set_secret_field(char **field, const char *s, size_t len, const char *what, char *err,
			    size_t errlen)
{
	bool bad;

	free(*field);
	*field = pct_decode(s, len, &bad);
	if (*field == NULL)
		return errbuf_set(err, errlen, URL_ERR "%s", bad ? what : "out of memory");
	return 0;
}

/* "user:password" or ":password" before the '@'. Nothing of it is ever
 * quoted in an error: it may be the password. */
static int parse_userinfo(struct redis *r, const char *s, size_t len, char *err, size_t errlen)
{
	const char *colon = memchr(s, ':', len);

	if (colon == NULL)
		return errbuf_set(err, errlen, URL_ERR "the part before '@' must be ':password' or "
				  "'user:password'");
	if (colon > s &&
	    set_secret_field(&r->user, s, (size_t)(colon - s), "bad %-escape in the user name", err,
			     errlen) != 0)
		return -1;
	if (set_secret_field(&r->password, colon + 1, len - (size_t)(colon - s) - 1,
			     "bad %-escape in the password", err, errlen) != 0)
		return -1;
	return 0;
}

static int parse_tcp(struct redis *r, const char *rest, char *err, size_t errlen)
{
	const char *at = strrchr(rest, '@');
	const char *hp = rest, *end, *host, *host_end, *p;

	if (at != NULL) {
		if (parse_userinfo(r, rest, (size_t)(at - rest), err, errlen) != 0)
			return -1;
		hp = at + 1;
	}
	end = hp + strcspn(hp, "/");
	if (hp[0] == '[') {
		host = hp + 1;
		host_end = memchr(host, ']', (size_t)(end - host));
		if (host_end == NULL)
			return errbuf_set(err, errlen, URL_ERR "an IPv6 address needs its closing ']'");
		p = host_end + 1;
	} else {
		host = hp;
		host_end = memchr(hp, ':', (size_t)(end - hp));
		if (host_end == NULL)
			host_end = end;
		p = host_end;
	}
	if (host_end == host)
		return errbuf_set(err, errlen, URL_ERR "no host (redis://host[:port][/db])");
	if (p < end) {
		long port;

		if (*p != ':')
			return errbuf_set(err, errlen, URL_ERR "unexpected text after the host");
		port = parse_num(p + 1, (size_t)(end - p - 1), 1, 65535);
		if (port < 0)
			return errbuf_set(err, errlen, URL_ERR "the port must be a number from 1 to 65535");
		r->port = (int)port;
	}
	if (*end == '/' && end[1] != '\0') {
		long db = parse_num(end + 1, strlen(end + 1), 0, INT_MAX);

		if (db < 0)
			return errbuf_set(err, errlen,
					  URL_ERR "the database after '/' must be a number >= 0");
		r->db = (int)db;
	}
	r->host = strndup(host, (size_t)(host_end - host));
	if (r->host == NULL)
		return errbuf_set(err, errlen, URL_ERR "out of memory");
	if (strchr(r->host, '[') != NULL || strchr(r->host, ']') != NULL)
		return errbuf_set(err, errlen, URL_ERR "a bracket in the host name");
	snprintf(r->where, sizeof(r->where), hp[0] == '[' ? "[%s]:%d" : "%s:%d", r->host, r->port);
	return 0;
}

/* unix:///path.sock[?db=N&password=P&user=U] */
static int parse_unix(struct redis *r, const char *rest, char *err, size_t errlen)
{
	size_t plen = strcspn(rest, "?");
	const char *q = rest + plen;

	if (rest[0] != '/')
		return errbuf_set(err, errlen, URL_ERR "unix:// needs an absolute socket path "
				  "(unix:///path/to.sock)");
	if (plen >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return errbuf_set(err, errlen, URL_ERR "the socket path is longer than %zu bytes",
				  sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	r->path = strndup(rest, plen);
	if (r->path == NULL)
		return errbuf_set(err, errlen, URL_ERR "out of memory");
	snprintf(r->where, sizeof(r->where), "%s", r->path);
	if (*q == '\0')
		return 0;
	q++;
	while (*q != '\0') {
		size_t n = strcspn(q, "&");
		const char *eq = memchr(q, '=', n);
		size_t klen = eq != NULL ? (size_t)(eq - q) : n;
		const char *v = eq != NULL ? eq + 1 : q + n;
		size_t vlen = (size_t)(q + n - v);

		if (klen == 2 && memcmp(q, "db", 2) == 0) {
			long db = parse_num(v, vlen, 0, INT_MAX);

			if (db < 0)
				return errbuf_set(err, errlen, URL_ERR "db= must be a number >= 0");
			r->db = (int)db;
		} else if (klen == 8 && memcmp(q, "password", 8) == 0) {
			if (set_secret_field(&r->password, v, vlen, "bad %-escape in the password",
					     err, errlen) != 0)
				return -1;
		} else if (klen == 4 && memcmp(q, "user", 4) == 0) {
			if (set_secret_field(&r->user, v, vlen, "bad %-escape in the user name", err,
					     errlen) != 0)
				return -1;
		} else if (klen > 0) {
			return errbuf_set(err, errlen,
					  URL_ERR "unknown parameter \"%.*s\" (db, password, user)",
					  (int)(klen > 32 ? 32 : klen), q);
		}
		q += n;
		if (*q == '&')
			q++;
	}
	return 0;
}

static int parse_url(struct redis *r, const char *url, char *err, size_t errlen)
{
	if (url == NULL || url[0] == '\0')
		return errbuf_set(err, errlen, URL_ERR "missing (redis://host[:port][/db] or "
				  "unix:///path/to.sock)");
	if (strncmp(url, "rediss://", 9) == 0)
		return errbuf_set(err, errlen, URL_ERR "rediss:// (TLS) is not supported: the hiredis "
				  "0.14 this daemon is built with has no TLS; use redis:// on a "
				  "trusted network or unix://");
	if (strncmp(url, "redis://", 8) == 0)
		return parse_tcp(r, url + 8, err, errlen);
	if (strncmp(url, "unix://", 7) == 0)
		return parse_unix(r, url + 7, err, errlen);
	return errbuf_set(err, errlen, URL_ERR "must start with redis:// or unix://");
}

/* --- the client's own lifetime --------------------------------------------- */

static void wipe(char *s)
{
	if (s == NULL)
		return;
	for (volatile char *p = s; *p != '\0'; p++)
		*p = '\0';
}

static void client_free(struct redis *r)
{
	free(r->host);
	free(r->path);
	wipe(r->user);
	free(r->user);
	wipe(r->password);
	free(r->password);
	free(r);
}

/* Drops one reference; the last one, once closing, ends the client. */
static void client_unref(struct redis *r)
{
	if (--r->refs > 0 || !r->closing)
		return;
	void (*done)(void *ctx) = r->done;
	void *ctx = r->done_ctx;

	client_free(r);
	if (done != NULL)
		done(ctx);
}

struct redis *redis_new(uv_loop_t *loop, const struct redis_options *opt, char *err, size_t errlen)
{
	struct redis *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		errbuf_set(err, errlen, "fleet.redis: out of memory");
		return NULL;
	}
	r->loop = loop;
	r->port = DEFAULT_PORT;
	r->timeout_ms = opt->timeout_ms > 0 ? opt->timeout_ms : DEFAULT_TIMEOUT_MS;
	r->guard.max = opt->max_reply_bytes > 0 ? opt->max_reply_bytes : REDIS_MAX_REPLY;
	r->guard.ac = &r->ac;
	if (parse_url(r, opt->url, err, errlen) != 0)
		goto fail;
	if (opt->password != NULL) {
		wipe(r->password);
		free(r->password);
		r->password = strdup(opt->password);
		if (r->password == NULL) {
			errbuf_set(err, errlen, "fleet.redis: out of memory");
			goto fail;
		}
	}
	if (r->password != NULL && r->password[0] == '\0') {
		free(r->password);
		r->password = NULL;
	}
	if (r->user != NULL && r->password == NULL) {
		errbuf_set(err, errlen, URL_ERR "a user name needs a password (user:password@)");
		goto fail;
	}
	/* Masked in every log line and error from here on. */
	if (r->password != NULL)
		secret_register(r->password);
	if (uv_timer_init(loop, &r->timer) != 0) {
		errbuf_set(err, errlen, "fleet.redis: cannot make a timer");
		goto fail;
	}
	r->timer.data = r;
	r->refs = 1;
	return r;
fail:
	client_free(r);
	return NULL;
}

/* --- calls ----------------------------------------------------------------- */

static void call_unlink(struct redis_call *c)
{
	struct redis *r = c->r;

	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		r->calls = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	else
		r->calls_tail = c->prev;
	c->prev = c->next = NULL;
}

static void call_unref(struct redis_call *c)
{
	struct redis *r = c->r;

	if (--c->refs > 0)
		return;
	free(c->argv);
	free(c->script);
	free(c);
	client_unref(r);
}

static void call_timer_closed(uv_handle_t *h)
{
	call_unref(REDIS_CONTAINER_OF(h, struct redis_call, timer));
}

/* No callback is owed any more: out of the list, the deadline closed (the
 * struct lives at least until that close callback, so past any callback
 * run from here). */
static void call_retire(struct redis_call *c)
{
	c->pending = false;
	call_unlink(c);
	uv_close((uv_handle_t *)&c->timer, call_timer_closed);
}

static void call_finish(struct redis_call *c, enum redis_status st, const struct redis_value *v)
{
	call_retire(c);
	c->cb(c->ctx, st, v);
}

static void call_timeout(uv_timer_t *t)
{
	struct redis_call *c = REDIS_CONTAINER_OF(t, struct redis_call, timer);

	if (c->pending)
		call_finish(c, REDIS_TIMEOUT, NULL);
}

static struct redis_call *call_new(struct redis *r, redis_cb cb, void *ctx)
{
	struct redis_call *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	if (uv_timer_init(r->loop, &c->timer) != 0) {
		free(c);
		return NULL;
	}
	c->r = r;
	c->cb = cb;
	c->ctx = ctx;
	c->refs = 1;
	c->pending = true;
	c->prev = r->calls_tail;
	if (r->calls_tail != NULL)
		r->calls_tail->next = c;
	else
		r->calls = c;
	r->calls_tail = c;
	r->refs++;
	return c;
}

/* Hands argv to hiredis for c; 0, or -1 when hiredis refused it. */
static int call_send(struct redis_call *c, redisAsyncContext *ac, int argc, const char **argv,
		     const size_t *lens)
{
	if (redisAsyncCommandArgv(ac, reply_cb, c, argc, argv, lens) != 0)
		return -1;
	c->refs++;
	return 0;
}

/* --- replies --------------------------------------------------------------- */

enum { SMALL_ARRAY = 16 };

static void call_deliver_reply(struct redis_call *c, const redisReply *rep)
{
	call_retire(c);
	redis_reply_convert(rep, c->cb, c->ctx);
}

static bool is_noscript(const redisReply *rep)
{
	return rep->type == REDIS_REPLY_ERROR && rep->len >= 8 && memcmp(rep->str, "NOSCRIPT", 8) == 0;
}

static void reply_cb(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct redis_call *c = privdata;
	const redisReply *rep = reply;

	if (rep == NULL)  /* only ever from inside hiredis's free of ac */
		c->r->ac_dying = true;
	if (c->pending) {
		if (rep == NULL) {
			call_finish(c, REDIS_DOWN, NULL);
		} else if (is_noscript(rep) && c->script != NULL && !c->fell_back) {
			/* Same call, same deadline: the script's text this time. */
			c->fell_back = true;
			c->argv[0] = "EVAL";
			c->lens[0] = 4;
			c->argv[1] = c->script;
			c->lens[1] = strlen(c->script);
			if (call_send(c, ac, c->argc, c->argv, c->lens) != 0)
				call_finish(c, REDIS_DOWN, NULL);
		} else {
			call_deliver_reply(c, rep);
		}
	}
	call_unref(c);    /* hiredis's reference, held until here */
}

/* --- connecting ------------------------------------------------------------ */

static void set_error(struct redis *r, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

static void set_error(struct redis *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	/* A server's words may echo what it was sent. (A password of a few
	 * characters would mask every such run in any text: not worth it.) */
	secret_mask_str(r->error);
	if (r->password != NULL && strlen(r->password) >= 4) {
		char *p;

		while ((p = strstr(r->error, r->password)) != NULL) {
			size_t pl = strlen(r->password);

			memmove(p + 3, p + pl, strlen(p + pl) + 1);
			memcpy(p, "***", 3);
		}
	}
	r->failed_at = uv_now(r->loop);
	LOG_DEBUG("%s", r->error);
}

static uint64_t backoff_ms(struct redis *r)
{
	unsigned n = r->failures > 0 ? r->failures - 1 : 0;
	uint64_t base = BACKOFF_MIN_MS;
	uint16_t rnd;

	while (n-- > 0 && base < BACKOFF_MAX_MS)
		base *= 2;
	if (base > BACKOFF_MAX_MS)
		base = BACKOFF_MAX_MS;
	/* 50-100 % of the step: daemons that lost the server together do not
	 * all come back in the same millisecond. */
	random_bytes(&rnd, sizeof(rnd));
	return base / 2 + base * rnd / 65535 / 2;
}

/* This attempt or the connection failed (set_error said why): let go of
 * everything of it and wait for the next. */
static void conn_fail(struct redis *r)
{
	if (r->closing)
		return;
	r->failures++;
	r->state = ST_BACKOFF;
	r->gai = NULL;    /* a resolve still in flight finds itself stale */
	uv_timer_start(&r->timer, timer_cb, backoff_ms(r), 0);
	/* Last: freeing runs the pending calls' callbacks (REDIS_DOWN), and
	 * those may close the client. */
	if (r->ac != NULL && !r->ac_dying) {
		r->ac_dying = true;
		redisAsyncFree(r->ac);
	}
}

static void conn_ready(struct redis *r)
{
	r->state = ST_READY;
	r->failures = 0;
	uv_timer_stop(&r->timer);
	LOG_DEBUG("fleet.redis: connected to %s", r->where);
}

static void handshake_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct redis *r = privdata;
	const redisReply *rep = reply;

	if (rep == NULL) {   /* ac is being freed: cleanup_hook takes it from here */
		r->ac_dying = true;
		return;
	}
	if (r->closing || r->state != ST_CONNECTING || ac != r->ac || r->ac_dying)
		return;
	const char *name = r->handshake[r->handshake_step++];

	if (rep->type == REDIS_REPLY_ERROR) {
		set_error(r, "fleet.redis: %s: the server refused %s: %.*s", r->where, name,
			  (int)(rep->len > 160 ? 160 : rep->len), rep->str);
		conn_fail(r);
		return;
	}
	if (--r->handshake_left == 0)
		conn_ready(r);
}

static void on_connect(const redisAsyncContext *cac, int status)
{
	struct redis *r = cac->data;
	redisAsyncContext *ac = r->ac;   /* cac, without the const */
	const char *argv[3];
	size_t lens[3];
	char db[16];
	int argc = 0, failed = 0;

	if (status != REDIS_OK) {
		/* hiredis frees ac as soon as this returns. */
		r->ac_dying = true;
		set_error(r, "fleet.redis: cannot connect to %s: %s", r->where,
			  cac->errstr != NULL ? cac->errstr : "error");
		conn_fail(r);
		return;
	}
	/* Pipelined; the connect deadline still runs until PING answers. */
	r->handshake_left = 0;
	r->handshake_step = 0;
	if (r->password != NULL) {
		argv[argc] = "AUTH";
		lens[argc++] = 4;
		if (r->user != NULL) {
			argv[argc] = r->user;
			lens[argc++] = strlen(r->user);
		}
		argv[argc] = r->password;
		lens[argc++] = strlen(r->password);
		failed |= redisAsyncCommandArgv(ac, handshake_reply, r, argc, argv, lens);
		r->handshake[r->handshake_left++] = "AUTH";
	}
	if (r->db != 0) {
		snprintf(db, sizeof(db), "%d", r->db);
		argv[0] = "SELECT";
		lens[0] = 6;
		argv[1] = db;
		lens[1] = strlen(db);
		failed |= redisAsyncCommandArgv(ac, handshake_reply, r, 2, argv, lens);
		r->handshake[r->handshake_left++] = "SELECT";
	}
	/* Proves the server answers, and that it needs no password we lack. */
	argv[0] = "PING";
	lens[0] = 4;
	failed |= redisAsyncCommandArgv(ac, handshake_reply, r, 1, argv, lens);
	r->handshake[r->handshake_left++] = "PING";
	if (failed != 0) {
		/* ac must not be freed from here: the deadline timer does it now. */
		snprintf(r->conn_error, sizeof(r->conn_error),
			 "fleet.redis: %s: cannot send the handshake (out of memory)", r->where);
		uv_timer_start(&r->timer, timer_cb, 0, 0);
	}
}

/* The adapter's hooks, but for one thing: libuv reports a socket error
 * (POLLERR: a refused connect, a reset) as a poll status, which the 0.14
 * adapter drops, so hiredis would never learn of it (a refused connect ran
 * into the deadline; a reset connection stayed, every call timing out).
 * On an error hiredis gets to read and write what it waits for, and finds
 * the error itself. */
static void poll_cb(uv_poll_t *h, int status, int events)
{
	redisLibuvEvents *p = h->data;

	if (status != 0)
		events = p->events;
	if (p->context != NULL && (events & UV_READABLE)) {
		redisAsyncHandleRead(p->context);
		if (p->context != NULL) {
			struct redis *r = p->context->data;

			if (redis_reply_buffered(p->context->c.reader) > r->guard.max &&
			    !r->ac_dying && p->context == r->ac) {
				/* A reply announced larger than the bound is not
				 * buffered to its end: the connection goes. */
				LOG_WARN("fleet.redis: %s sent a reply larger than "
					 "fleet.redis.maxReplyBytes (%zu); dropping the "
					 "connection", r->where, r->guard.max);
				set_error(r, "fleet.redis: %s: a reply larger than "
					  "fleet.redis.maxReplyBytes", r->where);
				conn_fail(r);
				return;
			}
		}
	}
	if (p->context != NULL && (events & UV_WRITABLE))
		redisAsyncHandleWrite(p->context);
}

static void poll_set(redisLibuvEvents *p, int events)
{
	p->events = events;
	if (events != 0)
		uv_poll_start(&p->handle, events, poll_cb);
	else
		uv_poll_stop(&p->handle);
}

static void hook_add_read(void *privdata)
{
	redisLibuvEvents *p = privdata;

	poll_set(p, p->events | UV_READABLE);
}

static void hook_del_read(void *privdata)
{
	redisLibuvEvents *p = privdata;

	poll_set(p, p->events & ~UV_READABLE);
}

static void hook_add_write(void *privdata)
{
	redisLibuvEvents *p = privdata;

	poll_set(p, p->events | UV_WRITABLE);
}

static void hook_del_write(void *privdata)
{
	redisLibuvEvents *p = privdata;

	poll_set(p, p->events & ~UV_WRITABLE);
}

static void poll_closed(uv_handle_t *h)
{
	redisLibuvEvents *p = REDIS_CONTAINER_OF(h, redisLibuvEvents, handle);
	struct redis *r = h->data;

	free(p);
	client_unref(r);
}

/* In place of the adapter's cleanup: the same, and the client learns that
 * ac is gone and waits for its poll handle to close. hiredis calls it on
 * every free of an attached context, after the pending callbacks ran. */
static void cleanup_hook(void *privdata)
{
	redisLibuvEvents *p = privdata;
	redisAsyncContext *ac = p->context;
	struct redis *r = ac->data;

	p->context = NULL;
	p->handle.data = r;      /* the adapter's poll callback cannot run any more */
	uv_close((uv_handle_t *)&p->handle, poll_closed);
	if (r->ac == ac) {
		r->ac = NULL;
		r->ac_dying = false;
	}
	if (r->closing || r->state == ST_BACKOFF)
		return;
	if (r->guard.refused != NULL) {
		/* The reader refused a reply: the stream cannot be trusted past
		 * it, so the connection goes and comes back clean. */
		LOG_WARN("fleet.redis: %s sent %s; dropped it and the connection (reconnecting)",
			 r->where, r->guard.refused);
		set_error(r, "fleet.redis: %s sent %s", r->where, r->guard.refused);
		r->guard.refused = NULL;
		conn_fail(r);
		return;
	}
	/* The server went away (or the connection broke) on its own. */
	set_error(r, "fleet.redis: connection to %s lost: %s", r->where,
		  ac->c.err != 0 ? ac->c.errstr : "closed");
	conn_fail(r);
}

static void connect_to(struct redis *r, const char *ip)
{
	redisAsyncContext *ac = r->path != NULL ? redisAsyncConnectUnix(r->path)
						: redisAsyncConnect(ip, r->port);

	r->state = ST_CONNECTING;
	if (ac == NULL) {
		set_error(r, "fleet.redis: cannot connect to %s: out of memory", r->where);
		conn_fail(r);
		return;
	}
	if (ac->err != 0) {
		set_error(r, "fleet.redis: cannot connect to %s: %s", r->where, ac->errstr);
		redisAsyncFree(ac);
		conn_fail(r);
		return;
	}
	/* hiredis 0.14 makes its socket without SOCK_CLOEXEC: an agent CLI
	 * spawned while connected would inherit the fleet's Redis link. */
	if (ac->c.fd >= 0)
		(void)fcntl(ac->c.fd, F_SETFD, FD_CLOEXEC);
	ac->data = r;
	if (redisLibuvAttach(ac, r->loop) != 0) {
		/* Nothing attached that cleanup could undo. */
		memset(&ac->ev, 0, sizeof(ac->ev));
		redisAsyncFree(ac);
		set_error(r, "fleet.redis: cannot connect to %s: cannot watch its socket", r->where);
		conn_fail(r);
		return;
	}
	ac->ev.addRead = hook_add_read;
	ac->ev.delRead = hook_del_read;
	ac->ev.addWrite = hook_add_write;
	ac->ev.delWrite = hook_del_write;
	ac->ev.cleanup = cleanup_hook;
	r->refs++;               /* the poll handle, until poll_closed */
	redis_reply_guard_attach(ac->c.reader, &r->guard);
	r->ac = ac;
	r->ac_dying = false;
	r->conn_error[0] = '\0';
	redisAsyncSetConnectCallback(ac, on_connect);
}

static void resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct redis *r = req->data;
	char ip[64] = "";

	if (req == r->gai) {
		r->gai = NULL;
		if (status == 0) {
			const struct addrinfo *pick = NULL;

			/* IPv4 first: hiredis 0.14 looks the address up as IPv4 before IPv6. */
			for (const struct addrinfo *a = res; a != NULL && pick == NULL; a = a->ai_next)
				if (a->ai_family == AF_INET)
					pick = a;
			for (const struct addrinfo *a = res; a != NULL && pick == NULL; a = a->ai_next)
				if (a->ai_family == AF_INET6)
					pick = a;
			if (pick == NULL)
				status = UV_EAI_ADDRFAMILY;
			else if (pick->ai_family == AF_INET)
				uv_ip4_name((const struct sockaddr_in *)(const void *)pick->ai_addr, ip,
					    sizeof(ip));
			else
				uv_ip6_name((const struct sockaddr_in6 *)(const void *)pick->ai_addr, ip,
					    sizeof(ip));
		}
		if (status != 0) {
			set_error(r, "fleet.redis: cannot resolve %s: %s", r->host, uv_strerror(status));
			conn_fail(r);
		} else {
			connect_to(r, ip);
		}
	}
	uv_freeaddrinfo(res);
	free(req);
	client_unref(r);
}

static void conn_start(struct redis *r)
{
	struct addrinfo hints;
	uv_getaddrinfo_t *req;
	int rc;

	uv_timer_start(&r->timer, timer_cb, (uint64_t)r->timeout_ms, 0);
	if (r->path != NULL) {
		connect_to(r, NULL);
		return;
	}
	r->state = ST_RESOLVING;
	req = malloc(sizeof(*req));
	if (req == NULL) {
		set_error(r, "fleet.redis: cannot resolve %s: out of memory", r->host);
		conn_fail(r);
		return;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	req->data = r;
	rc = uv_getaddrinfo(r->loop, req, resolved, r->host, NULL, &hints);
	if (rc != 0) {
		free(req);
		set_error(r, "fleet.redis: cannot resolve %s: %s", r->host, uv_strerror(rc));
		conn_fail(r);
		return;
	}
	r->gai = req;
	r->refs++;
}

static void timer_cb(uv_timer_t *t)
{
	struct redis *r = t->data;

	switch (r->state) {
	case ST_BACKOFF:
		conn_start(r);
		break;
	case ST_RESOLVING:
	case ST_CONNECTING:
		if (r->conn_error[0] != '\0')
			set_error(r, "%s", r->conn_error);
		else
			set_error(r, "fleet.redis: connecting to %s timed out after %d ms", r->where,
				  r->timeout_ms);
		if (r->gai != NULL)
			uv_cancel((uv_req_t *)r->gai);
		conn_fail(r);
		break;
	default:
		break;
	}
}

/* --- the API ----------------------------------------------------------------- */

/* Whether a call can go out now; otherwise cb got its answer (and a first
 * call started the connect). */
static bool ready_or_answer(struct redis *r, redis_cb cb, void *ctx)
{
	if (r->closing) {
		cb(ctx, REDIS_CLOSED, NULL);
		return false;
	}
	if (r->state == ST_READY && !r->ac_dying)
		return true;
	if (r->state == ST_IDLE)
		conn_start(r);
	cb(ctx, REDIS_DOWN, NULL);
	return false;
}

struct redis_call *redis_command(struct redis *r, size_t argc, const char *const *argv,
				 redis_cb cb, void *ctx)
{
	size_t small[SMALL_ARRAY], *lens = small;
	struct redis_call *c;

	assert(argc > 0);
	if (!ready_or_answer(r, cb, ctx))
		return NULL;
	if (argc > INT_MAX)
		goto nomem;
	if (argc > SMALL_ARRAY && (lens = malloc(argc * sizeof(*lens))) == NULL)
		goto nomem;
	for (size_t i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	c = call_new(r, cb, ctx);
	if (c == NULL) {
		if (lens != small)
			free(lens);
		goto nomem;
	}
	if (call_send(c, r->ac, (int)argc, (const char **)argv, lens) != 0) {
		if (lens != small)
			free(lens);
		call_finish(c, REDIS_DOWN, NULL);
		return NULL;
	}
	if (lens != small)
		free(lens);
	uv_timer_start(&c->timer, call_timeout, (uint64_t)r->timeout_ms, 0);
	return c;
nomem:
	cb(ctx, REDIS_NOMEM, NULL);
	return NULL;
}

/* EVALSHA sha nkeys keys... args...: the argv, the lengths and the bytes
 * in one block, kept for the NOSCRIPT fallback. */
static int call_pack_eval(struct redis_call *c, const char *sha1, size_t nkeys,
			  const char *const *keys, size_t nargs, const char *const *args)
{
	char nk[24];
	size_t argc = 3 + nkeys + nargs, bytes = 0;
	char *p;

	if (nkeys > INT_MAX || nargs > INT_MAX || argc > INT_MAX)
		return -1;
	snprintf(nk, sizeof(nk), "%zu", nkeys);
	for (size_t i = 0; i < nkeys; i++)
		bytes += strlen(keys[i]) + 1;
	for (size_t i = 0; i < nargs; i++)
		bytes += strlen(args[i]) + 1;
	bytes += strlen(sha1) + 1 + strlen(nk) + 1;
	c->argv = malloc(argc * (sizeof(char *) + sizeof(size_t)) + bytes);
	if (c->argv == NULL)
		return -1;
	c->lens = (size_t *)(void *)(c->argv + argc);
	p = (char *)(c->lens + argc);
	c->argc = (int)argc;
	for (size_t i = 0; i < argc; i++) {
		const char *s = i == 0 ? "EVALSHA" : i == 1 ? sha1 : i == 2 ? nk
			: i < 3 + nkeys ? keys[i - 3] : args[i - 3 - nkeys];
		size_t n = strlen(s);

		if (i == 0) {
			c->argv[0] = s;
		} else {
			memcpy(p, s, n + 1);
			c->argv[i] = p;
			p += n + 1;
		}
		c->lens[i] = n;
	}
	return 0;
}

struct redis_call *redis_eval(struct redis *r, const char *sha1, const char *script,
			      size_t nkeys, const char *const *keys, size_t nargs,
			      const char *const *args, redis_cb cb, void *ctx)
{
	char own[41];
	struct redis_call *c;

	assert(sha1 != NULL || script != NULL);
	if (!ready_or_answer(r, cb, ctx))
		return NULL;
	if (sha1 == NULL) {
		redis_script_sha1(script, own);
		sha1 = own;
	}
	c = call_new(r, cb, ctx);
	if (c == NULL) {
		cb(ctx, REDIS_NOMEM, NULL);
		return NULL;
	}
	if (call_pack_eval(c, sha1, nkeys, keys, nargs, args) != 0 ||
	    (script != NULL && (c->script = strdup(script)) == NULL)) {
		call_finish(c, REDIS_NOMEM, NULL);
		return NULL;
	}
	if (call_send(c, r->ac, c->argc, c->argv, c->lens) != 0) {
		call_finish(c, REDIS_DOWN, NULL);
		return NULL;
	}
	uv_timer_start(&c->timer, call_timeout, (uint64_t)r->timeout_ms, 0);
	return c;
}

void redis_cancel(struct redis *r, struct redis_call *call)
{
	(void)r;
	if (call != NULL && call->pending)
		call_retire(call);
}

bool redis_connected(const struct redis *r)
{
	return r->state == ST_READY && !r->ac_dying && !r->closing;
}

uint64_t redis_failed_at(const struct redis *r)
{
	return r->failed_at;
}

const char *redis_last_error(const struct redis *r)
{
	return r->error;
}

void redis_script_sha1(const char *text, char out[41])
{
	sha1_hex(text, strlen(text), out);
}

static void client_timer_closed(uv_handle_t *h)
{
	client_unref(h->data);
}

void redis_close(struct redis *r, void (*done)(void *ctx), void *ctx)
{
	if (r->closing)
		return;
	r->closing = true;
	r->done = done;
	r->done_ctx = ctx;
	/* A callback run here may cancel other calls or start new ones (those
	 * get REDIS_CLOSED at once), so take the head each time. */
	while (r->calls != NULL)
		call_finish(r->calls, REDIS_CLOSED, NULL);
	uv_close((uv_handle_t *)&r->timer, client_timer_closed);
	if (r->gai != NULL) {
		uv_cancel((uv_req_t *)r->gai);
		r->gai = NULL;
	}
	/* From inside a reply callback hiredis frees ac once it returns; the
	 * calls it still holds then get NULL replies, which find them retired. */
	if (r->ac != NULL && !r->ac_dying) {
		r->ac_dying = true;
		redisAsyncFree(r->ac);
	}
}

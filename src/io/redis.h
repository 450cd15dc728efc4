/* redis — a Redis client on the daemon's libuv loop: hiredis's async API
 * with its libuv adapter. No threads, no blocking call: the host is
 * resolved with uv_getaddrinfo, and since hiredis 0.14 has no async
 * timeouts every call has its own uv_timer deadline.
 *
 * The client runs Lua scripts (EVALSHA, falling back to EVAL when the
 * server answers NOSCRIPT, e.g. after SCRIPT FLUSH or a restart) and plain
 * commands. It connects lazily: the first call starts the connect (resolve,
 * connect, then AUTH when there is a password, SELECT when db != 0, and a
 * PING, all within one deadline) and itself fails with REDIS_DOWN. After a
 * failed attempt or a lost connection it tries again on its own, from a
 * timer, after a jittered backoff (100 ms doubling to 5 s, each wait 50-100 %
 * of the step; reset by a connection that works). Whenever it is not
 * connected (connecting, backing off) a call fails at once with
 * REDIS_DOWN: no call waits for a connection, none blocks the loop. Calls
 * pending when the connection breaks get REDIS_DOWN.
 *
 * Ownership: the client owns its hiredis context, timers and requests. A
 * call's callback runs exactly once (also when the client closes: then with
 * REDIS_CLOSED), unless the call was cancelled; after redis_cancel() or a
 * deadline no callback for that call runs again, whatever hiredis does with
 * the reply later. Replies are converted before the callback: nothing of
 * hiredis reaches the caller.
 *
 * What the server sends is not believed either: a reply no call is waiting
 * for (hiredis would abort the process on it), a reply past
 * max_reply_bytes, or bytes that are not the protocol end the connection
 * (logged; the pending calls get REDIS_DOWN, the client reconnects as after
 * any lost connection). A reply of the wrong shape is the caller's to
 * refuse. */
#ifndef RETRYD_REDIS_H
#define RETRYD_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "io/redis_reply.h"

struct redis;
struct redis_call;


struct redis_options {
	const char *url;        /* redis://[:password@]host[:port][/db],
				 * redis://user:password@host... (ACL: AUTH user password),
				 * unix:///path/to.sock[?db=N&password=P&user=U]; %XX escapes
				 * in user and password; host may be [IPv6]; port 6379 by
				 * default. rediss:// (TLS) is refused. */
	const char *password;   /* overrides the URL's; NULL: the URL's, if any */
	int timeout_ms;         /* every call's deadline, and the connect's (default 50) */
	size_t max_reply_bytes; /* a reply larger than this (a string's bytes, an
				 * array's elements, or what is buffered of one
				 * reply) drops the connection: 0 = REDIS_MAX_REPLY */
};



/* Parses the URL (nothing connects yet); opt and its strings are borrowed
 * (copied). Returns a new client, or NULL with err saying what is wrong
 * ("fleet.redis.url: ..."); the password never appears in err, and it is
 * registered with base/secret's masker. */
struct redis *redis_new(uv_loop_t *loop, const struct redis_options *opt, char *err,
			size_t errlen);

/* Runs a Lua script: sha1, script, keys and args are borrowed for the call
 * (copied). sha1: the script's SHA-1 in hex (40 chars), computed by the
 * caller or with redis_script_sha1() (NULL: computed here). script: sent
 * with EVAL when the server answers EVALSHA with NOSCRIPT, within the same
 * deadline (NULL: no fallback). Returns the call (to cancel), or NULL when
 * the callback already ran (REDIS_DOWN / REDIS_NOMEM / REDIS_CLOSED: from
 * inside this call). The call is valid until its callback has returned. */
struct redis_call *redis_eval(struct redis *r, const char *sha1, const char *script,
			      size_t nkeys, const char *const *keys, size_t nargs,
			      const char *const *args, redis_cb cb, void *ctx);
/* A plain command (argv borrowed for the call), e.g. {"PING"}. Same rules. */
struct redis_call *redis_command(struct redis *r, size_t argc, const char *const *argv,
				 redis_cb cb, void *ctx);
/* No callback runs for call after this. call may be NULL, or one whose
 * callback is running (then nothing happens); not one whose callback has
 * returned. Safe from inside any callback. */
void redis_cancel(struct redis *r, struct redis_call *call);

/* Whether a connection is up now (handshake done); the time of the last
 * failure (uv_now ms, 0: none); the last failure in words ("" when none;
 * never a password), e.g. "fleet.redis: cannot connect to
 * 127.0.0.1:6379: Connection refused". */
bool redis_connected(const struct redis *r);
uint64_t redis_failed_at(const struct redis *r);
const char *redis_last_error(const struct redis *r);

/* The SHA-1 of text in lower-case hex (41 bytes with the NUL). */
void redis_script_sha1(const char *text, char out[41]);

/* Pending calls get REDIS_CLOSED, the connection closes, and done(ctx)
 * runs once every handle is closed (never from inside this function); r
 * is freed then. Safe from inside a callback; a second call does nothing.
 * Calls made between this and done() get REDIS_CLOSED at once. */
void redis_close(struct redis *r, void (*done)(void *ctx), void *ctx);

#endif

/* redis_reply — what a Redis server sends, judged before it is believed,
 * and converted: io/redis's reader goes through this guard, and so does a
 * parse of bytes with no connection (tests, the fuzz target).
 *
 * The guard sits between hiredis's reader and hiredis's own reply
 * functions: a top-level reply no call is waiting for (hiredis asserts on
 * one, in a context not subscribed), a string past the bound or an array
 * of more elements than the bound allows is refused, which makes the reader
 * fail and hiredis drop the connection; `refused` says why. A reply still
 * being read is bounded by io/redis after each read (redis_reply_buffered).
 * The reply types of io/redis are here too. A .c file includes this (or
 * io/redis.h) before hiredis: hiredis.h #defines REDIS_OK, our enum's name
 * for the same 0. */
#ifndef RETRYD_REDIS_REPLY_H
#define RETRYD_REDIS_REPLY_H

#include <stddef.h>
#include <stdint.h>

/* hiredis's, by tag: this header includes no hiredis (io/redis.h, which
 * core/ includes, includes it). */
struct redisAsyncContext;
struct redisReader;
struct redisReply;
struct redisReplyObjectFunctions;

/* The bound on one reply when none is set (fleet.redis.maxReplyBytes). */
#define REDIS_MAX_REPLY ((size_t)1 << 20)

enum redis_status {
	REDIS_OK = 0,       /* a reply (it may still be a Redis error: see value) */
	REDIS_TIMEOUT,      /* the deadline passed (the connection is kept) */
	REDIS_DOWN,         /* not connected, connecting, or the connection broke */
	REDIS_CLOSED,       /* redis_close() while the call was pending */
	REDIS_NOMEM,
};

enum redis_type { REDIS_V_NIL, REDIS_V_INT, REDIS_V_STR, REDIS_V_ERR, REDIS_V_ARRAY };

/* A reply, converted; borrowed for the callback. Arrays are one level
 * deep (nested arrays become REDIS_V_NIL elements). */
struct redis_value {
	enum redis_type type;
	int64_t i;           /* REDIS_V_INT */
	const char *s;       /* REDIS_V_STR / REDIS_V_ERR: NUL-terminated, len bytes */
	size_t len;
	const struct redis_value *elems;  /* REDIS_V_ARRAY: n elements */
	size_t n;
};

/* value: NULL unless status is REDIS_OK. */
typedef void (*redis_cb)(void *ctx, enum redis_status status, const struct redis_value *value);

struct redis_reply_guard {
	struct redisReplyObjectFunctions *orig; /* hiredis's (static storage); set by attach */
	size_t max;                             /* bytes of a string; array elements x 3 */
	struct redisAsyncContext *const *ac;    /* borrowed: the connection whose pending
						 * calls a reply answers; NULL: none */
	const char *refused;                    /* why the last part was refused; static */
};

/* Puts g (borrowed; it must outlive reader) between reader and hiredis's
 * functions. Attaching twice is harmless. */
void redis_reply_guard_attach(struct redisReader *reader, struct redis_reply_guard *g);

/* What reader holds of a reply not yet whole, in bytes. */
size_t redis_reply_buffered(const struct redisReader *reader);

/* rep (borrowed) converted into a struct redis_value (nothing of hiredis
 * reaches cb), then cb(ctx, REDIS_OK, value), or REDIS_NOMEM. */
void redis_reply_convert(const struct redisReply *rep, redis_cb cb, void *ctx);

/* The replies in bytes[0..len), read as a connection's are (the same
 * guard, the same conversion), each given to cb(ctx, REDIS_OK, value) in
 * order. Returns how many replies were whole, or -1 with err when the bytes
 * are not the protocol or a reply is past max_bytes (0: REDIS_MAX_REPLY).
 * Pure: no I/O. */
long redis_reply_parse(const char *bytes, size_t len, size_t max_bytes, redis_cb cb, void *ctx,
		       char *err, size_t errlen);

#endif

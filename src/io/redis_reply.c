/* redis_reply — see redis_reply.h. */
#include "io/redis_reply.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "base/errbuf.h"

/* A part of a reply is made only when it may be: a top-level reply needs a
 * call waiting for it (hiredis asserts on one nobody asked for, in a
 * context not subscribed), and nothing is larger than the bound. NULL makes
 * the reader fail, and hiredis drops the connection (io/redis reconnects). */
static bool guard_allows(const redisReadTask *task, size_t size)
{
	struct redis_reply_guard *g = task->privdata;

	if (size > g->max) {
		g->refused = "a reply larger than fleet.redis.maxReplyBytes";
		return false;
	}
	if (task->parent == NULL && g->ac != NULL && *g->ac != NULL &&
	    (*g->ac)->replies.head == NULL) {
		g->refused = "a reply no call was waiting for";
		return false;
	}
	return true;
}

static void *guard_string(const redisReadTask *task, char *str, size_t len)
{
	struct redis_reply_guard *g = task->privdata;

	return guard_allows(task, len) ? g->orig->createString(task, str, len) : NULL;
}

static void *guard_array(const redisReadTask *task, int elements)
{
	struct redis_reply_guard *g = task->privdata;

	/* Each element takes at least 3 bytes on the wire (":0\r\n" is 4). */
	return guard_allows(task, elements > 0 ? (size_t)elements * 3 : 0)
		       ? g->orig->createArray(task, elements)
		       : NULL;
}

static void *guard_integer(const redisReadTask *task, long long value)
{
	struct redis_reply_guard *g = task->privdata;

	return guard_allows(task, 0) ? g->orig->createInteger(task, value) : NULL;
}

static void *guard_nil(const redisReadTask *task)
{
	struct redis_reply_guard *g = task->privdata;

	return guard_allows(task, 0) ? g->orig->createNil(task) : NULL;
}

static void guard_free(void *obj)
{
	freeReplyObject(obj);
}

static redisReplyObjectFunctions guard_fns = { guard_string, guard_array, guard_integer,
					       guard_nil, guard_free };

void redis_reply_guard_attach(redisReader *reader, struct redis_reply_guard *g)
{
	if (reader->fn != &guard_fns)
		g->orig = reader->fn;
	g->refused = NULL;
	reader->fn = &guard_fns;
	reader->privdata = g;
}

size_t redis_reply_buffered(const redisReader *reader)
{
	return reader->len > reader->pos ? reader->len - reader->pos : 0;
}

enum { SMALL_ARRAY = 16 };

static void value_scalar(const redisReply *rep, struct redis_value *v)
{
	memset(v, 0, sizeof(*v));
	switch (rep->type) {
	case REDIS_REPLY_INTEGER:
		v->type = REDIS_V_INT;
		v->i = rep->integer;
		break;
	case REDIS_REPLY_STRING:
	case REDIS_REPLY_STATUS:
		v->type = REDIS_V_STR;
		v->s = rep->str;
		v->len = rep->len;
		break;
	case REDIS_REPLY_ERROR:
		v->type = REDIS_V_ERR;
		v->s = rep->str;
		v->len = rep->len;
		break;
	default:              /* nil, and arrays below the first level */
		v->type = REDIS_V_NIL;
		break;
	}
}

void redis_reply_convert(const redisReply *rep, redis_cb cb, void *ctx)
{
	struct redis_value v, small[SMALL_ARRAY];
	struct redis_value *elems = small;

	if (rep->type != REDIS_REPLY_ARRAY) {
		value_scalar(rep, &v);
		cb(ctx, REDIS_OK, &v);
		return;
	}
	if (rep->elements > SMALL_ARRAY) {
		elems = calloc(rep->elements, sizeof(*elems));
		if (elems == NULL) {
			cb(ctx, REDIS_NOMEM, NULL);
			return;
		}
	}
	for (size_t i = 0; i < rep->elements; i++)
		value_scalar(rep->element[i], &elems[i]);
	memset(&v, 0, sizeof(v));
	v.type = REDIS_V_ARRAY;
	v.elems = rep->elements > 0 ? elems : NULL;
	v.n = rep->elements;
	cb(ctx, REDIS_OK, &v);
	if (elems != small)
		free(elems);
}

long redis_reply_parse(const char *bytes, size_t len, size_t max_bytes, redis_cb cb,
			 void *ctx, char *err, size_t errlen)
{
	struct redis_reply_guard g = { .max = max_bytes > 0 ? max_bytes : REDIS_MAX_REPLY };
	redisReader *reader = redisReaderCreate();
	long n = 0;
	void *reply;

	if (reader == NULL)
		return errbuf_set(err, errlen, "out of memory");
	redis_reply_guard_attach(reader, &g);
	if (redisReaderFeed(reader, bytes, len) != REDIS_OK)
		goto bad;
	for (;;) {
		if (redisReaderGetReply(reader, &reply) != REDIS_OK)
			goto bad;
		if (reply == NULL)
			break;
		redis_reply_convert(reply, cb, ctx);
		freeReplyObject(reply);
		n++;
	}
	if (redis_reply_buffered(reader) > g.max) {
		g.refused = "a reply larger than the bound";
		goto bad;
	}
	redisReaderFree(reader);
	return n;
bad:
	errbuf_set(err, errlen, "%s", g.refused != NULL ? g.refused : reader->errstr);
	redisReaderFree(reader);
	return -1;
}

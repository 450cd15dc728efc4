/* Fuzz target "redis_reply": what a Redis server (or something posing as
 * one) sends, read as the client reads a connection (io/redis:
 * redis_reply_parse, hiredis's reader behind the size bound), and each
 * reply judged as the answer to an ask (core/fleet_rules:
 * fleet_reply_check), as core/fleet_redis.c does.
 *
 * Input: byte 0 picks how many credentials (0..3) and models (1..4) the ask
 * named and whether the bound is small (256 bytes) or the default; the
 * rest is the byte stream.
 * Invariants: no reply is past the bound (a string's length, an array's
 * elements); strings are NUL-terminated at their length; an answer the
 * check takes has every field in range (a wait within the bound, a known
 * reason, indexes of what was asked, times at most now + FLEET_SKEW_MS +
 * max_block_ms). */
#include <string.h>

#include "core/fleet_rules.h"
#include "fuzz.h"
#include "io/redis.h"
#include "io/redis_reply.h"

struct ctx {
	size_t max, ncreds, nmodels;
	struct fleet_params p;
	int64_t now;
	long replies;
};

static void check_value(const struct redis_value *v, size_t max)
{
	if (v->type == REDIS_V_STR || v->type == REDIS_V_ERR) {
		FUZZ_CHECK(v->s != NULL && v->len <= max, "a string of %zu bytes", v->len);
		FUZZ_CHECK(v->s[v->len] == '\0', "a string not NUL-terminated at its length");
	}
}

static void on_reply(void *vctx, enum redis_status st, const struct redis_value *v)
{
	struct ctx *c = vctx;
	struct fleet_reply rep;
	struct fleet_refusal why;
	int64_t ints[16];
	size_t n;
	int64_t wait_max = fleet_rules_slot_bound(&c->p);
	int64_t far = c->now + FLEET_SKEW_MS + c->p.max_block_ms;

	c->replies++;
	if (st != REDIS_OK)
		return;
	check_value(v, c->max);
	if (v->type != REDIS_V_ARRAY)
		return;
	FUZZ_CHECK(v->n * 3 <= c->max, "an array of %zu elements", v->n);
	n = v->n < 16 ? v->n : 16;
	for (size_t i = 0; i < v->n; i++)
		check_value(&v->elems[i], c->max);
	for (size_t i = 0; i < n; i++) {
		if (v->elems[i].type != REDIS_V_INT)
			return; /* fleet_redis refuses the shape before */
		ints[i] = v->elems[i].i;
	}
	if (fleet_reply_check(ints, n, c->ncreds, c->nmodels, &c->p, c->now, wait_max, &rep,
			      &why) != 0) {
		FUZZ_CHECK(why.field != NULL, "a refusal without a field");
		return;
	}
	FUZZ_CHECK(rep.wait_ms >= 0 && rep.wait_ms <= wait_max, "wait %lld",
		   (long long)rep.wait_ms);
	FUZZ_CHECK(rep.reason >= FLEET_GO && rep.reason <= FLEET_PROBE, "reason %d", rep.reason);
	FUZZ_CHECK(rep.cred >= -1 && rep.cred < (int)c->ncreds + (c->ncreds == 0),
		   "cred %d of %zu", rep.cred, c->ncreds);
	FUZZ_CHECK(rep.model >= 0 && rep.model < (int)c->nmodels, "model %d of %zu", rep.model,
		   c->nmodels);
	FUZZ_CHECK(rep.cred_until >= 0 && rep.cred_until <= far,
		   "cred_until %lld", (long long)rep.cred_until);
	FUZZ_CHECK(rep.block_until >= 0 && rep.block_until <= far,
		   "block_until %lld", (long long)rep.block_until);
	FUZZ_CHECK(rep.members >= 1 && rep.members <= FLEET_MEMBERS_MAX, "members %lld",
		   (long long)rep.members);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx c = { .now = 1764633600000 };
	char err[256];
	long n;

	if (size < 1)
		return 0;
	fleet_params_default(&c.p);
	c.ncreds = data[0] % 4;
	c.nmodels = 1 + (data[0] >> 2) % 4;
	c.max = data[0] & 0x80 ? 256 : REDIS_MAX_REPLY;
	err[0] = '\0';
	n = redis_reply_parse((const char *)data + 1, size - 1, c.max, on_reply, &c, err,
				sizeof(err));
	if (n < 0)
		FUZZ_CHECK(err[0] != '\0', "a refusal without a reason");
	else
		FUZZ_CHECK(n == c.replies, "%ld replies, %ld callbacks", n, c.replies);
	return 0;
}

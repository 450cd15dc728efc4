/* fleet — what this daemon shares with the others that use the same
 * accounts: the server's word (blocks), exhausted credentials, model
 * cooldowns, pacing, the retry budget, the half-open circuit and leases.
 *
 * One algorithm (core/fleet_rules), three stores, chosen by fleet.mode:
 *   "process"  records in this daemon only;
 *   "user"     record files in fleet.dir, each read-modify-write under
 *              flock (io/lockfile); a lock busy past a few ms means "decide
 *              locally this time" — never a blocked loop;
 *   "redis"    a redis-server shared by many machines (io/redis, on the
 *              loop), the rules run there as Lua (core/fleet.lua). When it
 *              is slow or down the daemon decides on its local records,
 *              dividing the shared rate by the last fleet size it saw, and
 *              reconnects in the background: Redis never fails a prompt.
 * The local records are kept warm in every mode (each answer and report
 * updates them), so a fall back to them starts from what was last known.
 *
 * One session asks at a time: fleet_ask() before each attempt, then
 * fleet_tell() with its outcome. A key never leaves the process: scopes
 * name credentials by a fingerprint (secret_fingerprint). */
#ifndef RETRYD_FLEET_H
#define RETRYD_FLEET_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "core/fleet_rules.h"

struct redis;
struct settings;

enum fleet_mode { FLEET_MODE_PROCESS, FLEET_MODE_USER, FLEET_MODE_REDIS };
enum fleet_scope_kind { FLEET_SCOPE_MODEL, FLEET_SCOPE_CREDENTIAL, FLEET_SCOPE_PROVIDER };

struct fleet_config {
	enum fleet_mode mode;
	enum fleet_scope_kind scope;
	const char *dir;          /* user mode: the records' directory (checked); borrowed */
	const char *ns;           /* fleet.namespace; borrowed */
	struct fleet_params params;
	int concurrency;          /* leases per scope; 0: off */
	int64_t lease_ttl_ms;     /* redis mode: a lease not renewed for this long is freed */
	int lock_wait_ms;         /* user mode: how long a busy lock is tried */
	struct redis *redis;      /* redis mode: takes ownership (closed by fleet_close) */
	struct clock *clock;      /* borrowed: wall time and timers */
	int64_t member;           /* this daemon's id in the fleet (> 0, random) */
};

/* Reads the fleet.* settings into *cfg (strings borrowed from settings);
 * provider (borrowed): the daemon's, whose fleet.providerScopes entry, if
 * any, overrides fleet.scope. Returns 0, or -1 with err. The redis client
 * is not made here. */
int fleet_config_from_settings(struct fleet_config *cfg, struct settings *settings,
			       const char *provider, char *err, size_t errlen);
/* "process" | "user" | "redis". */
const char *fleet_mode_name(enum fleet_mode m);

/* Checks (user mode: creates, mode 0700) the directory. Returns NULL with
 * err when the fleet cannot run as configured. */
struct fleet *fleet_new(const struct fleet_config *cfg, char *err, size_t errlen);
/* Cancels a pending ask (no callback), releases a lease, closes the redis
 * client; done(ctx) runs once everything is closed. */
void fleet_close(struct fleet *f, void (*done)(void *ctx), void *ctx);

/* Before an attempt. Everything borrowed for the call. */
struct fleet_ask {
	const char *provider;
	const char *const *creds;   /* fingerprints, the one in use first */
	size_t ncreds;              /* 0: the provider has none */
	const char *const *models;  /* the model in use first, then the fallbacks */
	size_t nmodels;             /* >= 1 */
	bool retry;                 /* the attempt is a retry (the budget applies) */
	bool held;                  /* its reserved wait is over: with the same credential
				     * and model it goes without taking a second slot */
};

/* A scope's name: the provider's id, a credential's fingerprint and a model. */
#define FLEET_SCOPE_MAX 384
struct fleet_answer {
	int64_t wait_ms;            /* 0: send now */
	enum fleet_reason reason;
	bool probe;
	int cred;                   /* the credential to use; -1: every one is exhausted */
	int64_t cred_until;         /* cred -1: when the first comes back (wall ms) */
	bool cred_probing;          /* cred -1: that one is out on another daemon's probe
				     * (cred_until: its claim's end) */
	int model;                  /* the model to use (index into models) */
	bool lease;                 /* a lease is held: fleet_done() releases it */
	bool reserved;              /* the wait is a reserved slot: go when it is over,
				     * without asking again */
	bool local;                 /* decided on local records (store busy or down) */
	char scope[FLEET_SCOPE_MAX]; /* the scope decided on, for fleet_wait */
	/* The scope's block as its record names it (0s: none, or a record
	 * older than these fields): when it was seen (wall ms), by which
	 * member, the answer's HTTP status, the wait the server asked. */
	int64_t block_seen, block_member, block_status, block_asked;
	bool block_mine;            /* block_member is this daemon */
};

typedef void (*fleet_answer_fn)(void *ctx, const struct fleet_answer *a);

/* Returns 1 with *a filled when the answer is known at once (process and
 * user mode, Redis down), else 0: cb(ctx, answer) follows from the loop
 * (within fleet.redis.timeoutMs), unless fleet_cancel() comes first. */
int fleet_ask(struct fleet *f, const struct fleet_ask *q, struct fleet_answer *a,
	      fleet_answer_fn cb, void *ctx);
void fleet_cancel(struct fleet *f);

/* Who a provider is to the fleet: its name, and where it is when it has a
 * base URL ("local@127.0.0.1:8000", "openai@api.openai.com"): two servers
 * a user calls by one name (a "local" of each project, each on its own
 * port) are two, and share no block. The host and port only, lowercased,
 * the scheme's own port dropped, any user:password@ left out (a secret);
 * a long host is cut and a hash of it kept (FLEET_PROVIDER_ID_MAX holds
 * any with a name of up to 80 bytes). Returns out. */
#define FLEET_PROVIDER_ID_MAX 160
const char *fleet_provider_id(const char *name, const char *base_url, char *out, size_t cap);

/* After an attempt (borrowed for the call). */
struct fleet_tell {
	const char *provider, *cred, *model;  /* cred: fingerprint or NULL */
	struct fleet_outcome out;   /* its member is filled in here */
	int64_t usage_reset_ms;     /* >= 0: a usage limit exhausted the credential for this long */
	bool overload;              /* the model is saturated (for model cooldowns) */
	int64_t fallback_after;     /* retry.fallbackAfterConsecutive */
	int64_t cooldown_ms;        /* retry.fallbackCooldownMs */
};
void fleet_tell(struct fleet *f, const struct fleet_tell *t);
/* The attempt ended with no answer to tell (aborted, or the daemon stops):
 * a credential probe it claimed is given back at once, so that the next
 * daemon probes without waiting out the claim (FLEET_PROBE_HOLD_MS).
 * Borrowed for the call. */
void fleet_abandon(struct fleet *f, const char *provider, const char *cred);
/* The attempt is over: a lease it held is released. */
void fleet_done(struct fleet *f);

/* The scope's block as last known here (wall ms; 0: none), without asking
 * the store. who (may be NULL) gets the scope's name and the block_* fields
 * of an answer. */
int64_t fleet_known_block(struct fleet *f, const char *provider, const char *cred,
			  const char *model, struct fleet_answer *who);

/* fleet_clear: forgets the scope's block, circuit and budget debt, and its
 * credential's and model's records, in the store and here. Returns how many
 * records were reset here, with the scope's name in scope; the store's
 * answer is logged. */
int fleet_clear(struct fleet *f, const char *provider, const char *cred, const char *model,
		char *scope, size_t scope_cap);
enum fleet_mode fleet_config_mode(const struct fleet *f);

/* get_state.fleet: {mode, scope, connected, degraded, blockedUntil?, open,
 * rpm?, members?, concurrency?} for the scope. New reference. */
json_t *fleet_state(struct fleet *f, const char *provider, const char *cred, const char *model);

#endif

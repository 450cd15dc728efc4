/* fleet_store — what core/fleet.c shares with the stores of fleet.mode:
 * core/fleet_user.c (record files under flock) and core/fleet_redis.c (the
 * script on a redis-server). Private to those three files.
 *
 * fleet.c runs the one algorithm (core/fleet_rules) on its local records,
 * which it keeps warm in every mode; a store is a table of hooks fleet.c
 * calls around that. A hook left NULL means the store has nothing of its
 * own there: the local records decide. The process store is the table with
 * no hook at all (in fleet.c). Stores call back only into the fleet_*
 * functions below, never into each other.
 *
 * core/fleet.c includes this header, so this header cannot include
 * core/fleet.h (the layer check refuses the circle): fleet.h's types are
 * reached through pointers here, which is why cfg is one, and the store
 * files include core/fleet.h themselves. */
#ifndef RETRYD_FLEET_STORE_H
#define RETRYD_FLEET_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/fleet_rules.h"

struct fleet_answer;
struct fleet_ask;
struct fleet_config;
struct fleet_local_rec;
struct fleet_store_ops;
struct fleet_tell;

#define FLEET_LAT_N 512
#define FLEET_HIST_N 11

/* One fleet. fleet.c allocates it, fills it and frees it; a store reads
 * cfg and ns, keeps its own state behind store, and writes only the fields
 * marked "(stores too)". */
struct fleet {
	struct fleet_config *cfg;   /* owned: fleet_new's copy; cfg->ns is ns, cfg->dir NULL */
	char *ns;                   /* owned */
	const struct fleet_store_ops *ops;  /* the store of cfg->mode; static storage */
	void *store;                /* owned by ops (open sets it, close frees it); NULL: none */

	struct fleet_local_rec *recs;  /* owned */
	size_t nrecs;
	uint64_t rng;
	int64_t fleet_size;         /* the last size of the fleet seen (>= 1) (stores too) */
	int64_t rpm_prior;          /* the last request rate the provider announced */
	uint64_t local_decisions;   /* records decided on the local copy (stores too) */
	bool store_busy;            /* the last scope job found its record locked (stores) */

	void (*close_done)(void *ctx);
	void *close_ctx;

	/* How long asks took (µs), the last FLEET_LAT_N of them, for get_state. */
	uint32_t lat[FLEET_LAT_N];
	uint64_t asks;
	uint64_t hist[FLEET_HIST_N + 1];  /* asks by latency bucket */
	uint64_t ask_started;
	uint64_t state_read_at;     /* clock_now() + 1 of get_state's last file read; 0: never */
	/* The credential record ("provider|fingerprint") whose probe this
	 * daemon claimed, until its answer is told; "" none. */
	char probing[512];
};

/* What is done to a scope's record. */
enum fleet_rec_op { FLEET_OP_ACQUIRE, FLEET_OP_REPORT, FLEET_OP_CLEAR, FLEET_OP_READ };

/* One operation on a scope's record, wherever it is kept. Pointers are
 * borrowed for the call. */
struct fleet_scope_job {
	enum fleet_rec_op op;
	struct fleet *f;
	int64_t now;
	bool retry;
	int64_t rand_milli;
	const struct fleet_outcome *out;
	struct fleet_verdict *v;
	int64_t rpm_prior;
	struct fleet_scope result;  /* the record as the job left it */
};

/* The same for a credential's or a model's record. */
struct fleet_int_job {
	char kind;          /* 'c': a credential's until, 'm': a model's record */
	int op;             /* 0 read, 1 exhaust / model report, 2 clear, 3 read and
			     * claim a credential's probe (fleet_rules_claim), 4 a
			     * credential answered well: no longer spent, 5 a claimed
			     * probe given back unanswered (fleet_rules_unclaim) */
	bool claimed;       /* ops 3 to 5: the record changed (3: this ask claimed
			     * the probe; 4: a spent credential is back; 5: the
			     * claim was given back) */
	bool held;          /* op 3: the ask's reserved wait is over: no second turn */
	bool turned;        /* op 3: a slot of the train was taken (the record changed) */
	int64_t turn, turn_end; /* a credential's train (fleet_rules_turn) */
	int64_t turn_gap;   /* the train's gap as its record keeps it (0: none kept) */
	int64_t rpm_learned; /* op 4: the scope's learned rate, the train's pace */
	bool turn_unsure;   /* op 3: a train runs, but the store could not take its slot */
	int64_t member;     /* op 3: who asks (a claim names it the prober) */
	int64_t prober;     /* op 3: whose claimed probe holds the credential (0: none) */
	int64_t turn_wait;  /* op 3: the wait until this ask's slot (0: none) */
	const struct fleet_params *p;
	int64_t now, reset_ms;
	bool overload, success;
	int64_t after, cooldown_ms;
	int64_t until;
	struct fleet_model m;
};

/* get_state's word on the store's link. */
struct fleet_store_state {
	bool connected;
	bool degraded;      /* the last call failed: deciding on the local records */
	int64_t members;    /* the fleet's size as last seen; 0: not known to the store */
};

struct fleet_store_ops {
	/* fleet_new: sets up f->store. f->cfg->dir is the caller's, valid for
	 * this call only. Returns 0, or -1 with err (and nothing left set up). */
	int (*open)(struct fleet *f, char *err, size_t errlen);
	/* Runs j on the scope's record where the store keeps it: 0 when it
	 * was done there (j->result is the record), -1 when it is to be
	 * decided on the local copy this time (the store counts it in
	 * local_decisions). */
	int (*run_scope)(struct fleet *f, const char *key, struct fleet_scope_job *j);
	/* The same for a credential's or a model's record (j->until, j->m). */
	int (*run_int)(struct fleet *f, const char *key, struct fleet_int_job *j);
	/* After a decision on the records: takes a lease of the scope when a
	 * goes now, or turns a into a wait when every lease is held. */
	void (*lease)(struct fleet *f, const char *scope, struct fleet_answer *a);
	/* fleet_ask (borrowed for the call): 1 with *a filled, 0 when cb(ctx,
	 * answer) follows from the loop, -1 when this ask is to be decided
	 * on the records here instead. */
	int (*ask)(struct fleet *f, const struct fleet_ask *q, struct fleet_answer *a,
		   void (*cb)(void *ctx, const struct fleet_answer *a), void *ctx);
	/* fleet_cancel: forgets a pending ask (no callback). */
	void (*cancel)(struct fleet *f);
	/* fleet_tell, once the records here took the report (borrowed). */
	void (*tell)(struct fleet *f, const struct fleet_tell *t);
	/* fleet_done: releases the lease held, if any. */
	void (*done)(struct fleet *f);
	/* fleet_clear, once the records here are cleared (borrowed). */
	void (*clear)(struct fleet *f, const char *provider, const char *cred, const char *model);
	/* fleet_state: fills *out (which starts connected, not degraded). */
	void (*state)(struct fleet *f, struct fleet_store_state *out);
	/* fleet_close, after cancel and done: stops the store's timers and
	 * frees f->store; closed(f) follows once that is over, at once or
	 * from the loop. */
	void (*close)(struct fleet *f, void (*closed)(struct fleet *f));
};

extern const struct fleet_store_ops fleet_user_ops;
extern const struct fleet_store_ops fleet_redis_ops;

/* What the stores call back in core/fleet.c. */

/* Runs the job on the record s (the store's or the local copy). */
void fleet_apply_scope(struct fleet_scope_job *j, struct fleet_scope *s);
/* Runs the job on j->until or j->m. */
void fleet_apply_int(struct fleet_int_job *j);
/* The local copy of the scope's record, made the first time; NULL when
 * memory ran out. Owned by f, valid until the next record is made. */
struct fleet_scope *fleet_local_scope(struct fleet *f, const char *key);
/* xorshift64*: only for jitter and the throttle's draw. */
uint64_t fleet_rand(struct fleet *f);
/* The scope's name: coarser kinds drop the model, then the credential. */
void fleet_scope_name(const struct fleet *f, const char *provider, const char *cred,
		      const char *model, char *out, size_t cap);
/* "model" | "credential" | "provider": f's scope kind. Static storage. */
const char *fleet_scope_kind_name(const struct fleet *f);
/* The ask decided on the records here (the store's files, else the local
 * copy), *a filled; q borrowed for the call. */
void fleet_ask_local(struct fleet *f, const struct fleet_ask *q, struct fleet_answer *a);
/* Shortens a wait that is not a reserved slot (see fleet.c). */
void fleet_poll_sooner(struct fleet *f, struct fleet_answer *a);
/* An ask is answered: counts its latency since fleet_ask, marks whether
 * the block it names is this daemon's own (block_mine), and logs it. */
void fleet_answered(struct fleet *f, struct fleet_answer *a);

#endif

/* fleet_rules — what a fleet of daemons decides together, as pure functions
 * of shared records, the time and one input. No I/O: the time (wall-clock
 * ms, the same on every machine of the fleet — Redis's TIME there) and any
 * randomness are passed in.
 *
 * Three kinds of record, all integers:
 *   - a scope's (provider | credential fingerprint | model, or coarser):
 *     the server's block, the pacing schedule, the retry budget, the
 *     fleet-wide requests/accepts and the half-open circuit;
 *   - a credential's: exhausted until when (a usage limit's reset);
 *   - a model's: overloads in a row fleet-wide, cooling down until when.
 *
 * The process store keeps records in memory, the user store in files
 * rewritten under flock, and src/core/fleet.lua mirrors these functions
 * for Redis. tests/fixtures/fleet/vectors.json runs through both (C unit
 * test, and the scripts on a real redis-server) and both must agree.
 *
 * The fleet-wide throttles (the half-open circuit, the retry budget, the
 * adaptive throttle) act only on failures seen by two daemons or more: a
 * daemon alone keeps its own retry policy, as it had before the fleet. The
 * server's word (blocks) and pacing apply to everyone, alone or not. */
#ifndef RETRYD_FLEET_RULES_H
#define RETRYD_FLEET_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fleet_reason {
	FLEET_GO = 0,
	FLEET_SERVER_BLOCK,  /* the server said when (Retry-After, a reset with nothing left) */
	FLEET_PACING,        /* the next free slot at the known request rate */
	FLEET_BUDGET,        /* a retry while the fleet's retry budget is spent */
	FLEET_CONCURRENCY,   /* every lease is held */
	FLEET_PROBE,         /* the provider fails for everyone: one probe at a time */
};

/* "server-block", "pacing", ... ("go" for FLEET_GO). */
const char *fleet_reason_name(enum fleet_reason r);

struct fleet_params {
	int64_t min_block_ms;      /* a server's wait shorter than this stays local */
	int64_t max_block_ms;      /* a shared block never reaches further than this */
	int64_t rpm;               /* the request rate, per minute: 0 = the learned one */
	int64_t probe_interval_ms; /* while failing for everyone: one probe per this */
	int64_t open_after;        /* server failures in a row fleet-wide that open the circuit */
	int64_t window_ms;         /* how far back requests and accepts are counted */
	int64_t k_milli;           /* SRE's K, in thousandths (2000: K = 2) */
	int64_t throttle_min;      /* requests in the window before the throttle may act */
	int64_t budget_max;        /* retry budget in thousandths of a token; 0 = off */
	int64_t budget_ratio;      /* thousandths of a token a success brings back */
	int64_t divide;            /* >= 1: shared limits are divided by this (the last
				    * fleet size seen, when deciding alone) */
};

/* The defaults of the fleet.* settings (the settings table has them too). */
void fleet_params_default(struct fleet_params *p);

/* One scope. A new record is all zeros except tokens = -1 (full). */
struct fleet_scope {
	int64_t block_until;   /* no request before this */
	int64_t pace_tat;      /* the next free slot at the pacing rate */
	int64_t rpm_learned;   /* from x-ratelimit-limit-requests & co; 0 = unknown */
	int64_t tokens;        /* retry budget, thousandths; -1 = full */
	int64_t win_start;     /* the current half of the counting window began */
	int64_t req_cur, acc_cur, req_prev, acc_prev;
	int64_t fail_streak;   /* server failures in a row, fleet-wide */
	int64_t fail_member;   /* the daemon that reported the last of them */
	int64_t shared;        /* 1: they came from two daemons or more */
	int64_t open;          /* 1: failing for everyone */
	int64_t probe_until;   /* while open: when the next probe may go */
	int64_t probe_gap;     /* while open: the probe interval now (0: the base); it
				* doubles with each failure, up to 4 times the base */
};

void fleet_scope_init(struct fleet_scope *s);

struct fleet_verdict {
	int64_t wait_ms;          /* 0: send now */
	enum fleet_reason reason; /* why the wait (FLEET_GO when none) */
	bool probe;               /* this attempt is the one probe */
};

/* Before sending. retry: the attempt is a retry (the budget applies);
 * rand_milli: a uniform 0..999 for the adaptive throttle. A verdict with a
 * wait reserves a pacing slot when it names a definite time (block,
 * pacing); a probe wait does not: ask again when it is over. */
void fleet_rules_acquire(struct fleet_scope *s, const struct fleet_params *p, int64_t now,
			 bool retry, int64_t rand_milli, struct fleet_verdict *v);

enum fleet_outcome_kind {
	FLEET_OUT_SUCCESS,   /* a good answer */
	FLEET_OUT_ANSWERED,  /* a failure the provider answered (not its fault: 4xx) */
	FLEET_OUT_SERVER,    /* rate limit, overload, 5xx: the provider's state */
	FLEET_OUT_LOCAL,     /* connection error, timeout: this daemon's, not shared */
};

struct fleet_outcome {
	enum fleet_outcome_kind kind;
	int64_t block_ms;    /* the server's wait from now (any kind), or -1 */
	int64_t rpm_limit;   /* a request limit per minute the answer announced, or 0 */
	int64_t member;      /* the reporting daemon's id (> 0) */
};

void fleet_rules_report(struct fleet_scope *s, const struct fleet_params *p, int64_t now,
			const struct fleet_outcome *o);

/* fleet_clear: forgets the block, the circuit and the budget's debt. */
void fleet_rules_clear(struct fleet_scope *s);

/* Requests per minute the scope is paced at now (0: none). */
int64_t fleet_rules_rpm(const struct fleet_scope *s, const struct fleet_params *p);

/* A credential: exhausted until (0: available). A usage limit's reset
 * moves it later, never earlier; clamped to max_block_ms from now. */
void fleet_rules_exhaust(int64_t *until, const struct fleet_params *p, int64_t now,
			 int64_t reset_ms);

/* A model: overloads in a row fleet-wide; after `after` of them it cools
 * down for cooldown_ms (everyone moves to a fallback); a success ends the
 * streak. */
struct fleet_model {
	int64_t streak;
	int64_t cool_until;
};
void fleet_rules_model_report(struct fleet_model *m, int64_t now, bool overload, bool success,
			      int64_t after, int64_t cooldown_ms);

/* Records as text for the user store's files: "k=v ...\n", one line; what
 * follows the first newline is not read.
 * Unknown keys are skipped, missing ones keep the init value; returns -1
 * when the text is not a record at all (it is then started over). */
size_t fleet_scope_format(const struct fleet_scope *s, char *out, size_t cap);
int fleet_scope_parse(struct fleet_scope *s, const char *text, size_t len);

#endif

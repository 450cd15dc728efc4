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
	/* Who set block_until, for the waiters' words (all 0 in a record
	 * written before these fields, or after a clear): */
	int64_t block_seen;    /* when the server said it (wall ms) */
	int64_t block_member;  /* the daemon it said it to */
	int64_t block_status;  /* the answer's HTTP status; 0: none or unknown */
	int64_t block_asked;   /* the wait the server asked for (ms), before the clamp */
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
	int64_t status;      /* the answer's HTTP status, or 0 */
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

/* A spent credential's reset has passed (0 < *until <= now) and no answer
 * has confirmed it since: the first daemon to ask probes. It claims the
 * credential for hold_ms, so that the others see it spent until the probe
 * has answered (and then leave one by one, not in the same second).
 * Returns whether this ask claimed it. src/core/fleet.lua mirrors it. */
bool fleet_rules_claim(int64_t *until, int64_t now, int64_t hold_ms);
/* A claimed probe went unanswered (aborted, the daemon stopped): a claim's
 * hold that still stands (until within hold_ms of now) ends now, the reset
 * passed and unconfirmed, so that the next ask claims it. A longer block
 * (a usage limit told since) stays. */
void fleet_rules_unclaim(int64_t *until, int64_t now, int64_t hold_ms);
/* How long a claim holds the others back: a refusal comes back in well
 * under it; an answer that streams longer has shown the quota is back. */
#define FLEET_PROBE_HOLD_MS INT64_C(5000)

/* The probe answered well: the daemons that waited for it leave in turn,
 * one every fleet_rules_turn_gap, not in the same second: the configured
 * rate's interval; else the rate the provider announced (the scope's
 * rpm_learned, as the prober saw it at the answer), but never more than
 * one every FLEET_TURN_GAP_MIN_MS, for an account's whole rate is not its
 * reset's; else FLEET_TURN_GAP_MS. The gap is the train's: kept in the
 * credential's record beside the slots, so every waiter leaves at the rate
 * the prober learned, whatever it learned itself. A train starts at the answer
 * (*turn: the next free slot, one gap on; *turn_end: the window's end) and
 * gives a slot to every ask that comes within FLEET_TURN_WINDOW_MS of it;
 * after that asks go as ever, so a busy fleet is not paced for good.
 * fleet_rules_turn takes the next slot: the wait until it (0: go now); an
 * ask whose reserved wait is over does not take a second one. A usage
 * limit again ends the train (fleet_rules_exhaust's caller zeroes it, gap and all).
 * src/core/fleet.lua mirrors them. */
#define FLEET_TURN_GAP_MS INT64_C(500)
#define FLEET_TURN_GAP_MIN_MS INT64_C(100)
#define FLEET_TURN_GAP_MAX_MS INT64_C(60000) /* one a minute, the slowest rate */
#define FLEET_TURN_WINDOW_MS INT64_C(30000)
int64_t fleet_rules_turn_gap(const struct fleet_params *p, int64_t rpm_learned);
void fleet_rules_turn_start(int64_t *turn, int64_t *turn_end, int64_t now, int64_t gap);
int64_t fleet_rules_turn(int64_t *turn, int64_t turn_end, int64_t now, int64_t gap,
			 const struct fleet_params *p);
/* The latest slot a train gives: its window's end and one slot bound
 * (fleet_rules_slot_bound) more; slots past it are that slot. */
int64_t fleet_rules_turn_bound(int64_t turn_end, const struct fleet_params *p);

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
/* Records read from outside (a record file, a Redis reply) believed only
 * within their documented ranges. Each check brings what was read into
 * range: a field out of it is refused, set to its init value (a block of
 * the year 9999 is no block, a negative count 0), and is never written back
 * as it was. Returns how many fields were refused (0: the record is as
 * read); *why (may be NULL) names the first of them for the caller's one
 * log line. The ranges, now being the reader's wall clock, give clocks
 * FLEET_SKEW_MS of slack (a clock stepped back, another machine's):
 *   blocks, exhausted-until: 0 .. now + max_block_ms
 *   pacing slots, probe times: 0 .. now + fleet_rules_slot_bound() (a
 *     schedule further out than a shared block may reach is no schedule)
 *   counts, streaks: 0 .. FLEET_COUNT_MAX; flags 0 or 1; tokens -1 .. count
 *   the block's teller: seen 0 .. now, a member id, an HTTP status
 *     0 .. 999, the wait asked 0 .. FLEET_ASKED_MAX_MS
 *   a learned rate: 0 .. FLEET_RPM_MAX; win_start: 0 .. now + window_ms */
#define FLEET_COUNT_MAX INT64_C(1000000000000)
#define FLEET_SKEW_MS INT64_C(60000)
#define FLEET_RPM_MAX INT64_C(100000000)
/* A model's cooldown reaches at most this far (retry.fallbackCooldownMs's
 * largest value). */
#define FLEET_COOL_MAX_MS (INT64_C(30) * 24 * 3600 * 1000)
/* The longest wait a server's word may be recorded as having asked for. */
#define FLEET_ASKED_MAX_MS (INT64_C(366) * 24 * 3600 * 1000)

struct fleet_refusal {
	const char *field;   /* static storage */
	int64_t value;       /* as read */
};

/* How far past now a pacing slot or a probe may lie: a shared block, one
 * pacing interval at one request a minute (times divide) and the longest
 * probe gap. Saturated, never negative. */
int64_t fleet_rules_slot_bound(const struct fleet_params *p);

unsigned fleet_scope_check(struct fleet_scope *s, const struct fleet_params *p, int64_t now,
			   struct fleet_refusal *why);
/* A credential's exhausted-until: 0 .. now + max_block_ms. */
unsigned fleet_until_check(int64_t *until, const struct fleet_params *p, int64_t now,
			   struct fleet_refusal *why);
/* A credential's train: turn_end 0 .. now + FLEET_TURN_WINDOW_MS, turn
 * 0 .. fleet_rules_turn_bound of that (slots given in the window may run
 * past it), gap 0 (none kept: the waiter's own) or 1 .. FLEET_TURN_GAP_MAX_MS.
 * refused: what the caller refused before (why is named only for the
 * first); returns it plus this one's. */
unsigned fleet_turn_check(int64_t *turn, int64_t *turn_end, int64_t *gap,
			  const struct fleet_params *p, int64_t now, struct fleet_refusal *why,
			  unsigned refused);
/* A model's record: streak a count, cool_until 0 .. now + cool_max_ms. */
unsigned fleet_model_check(struct fleet_model *m, int64_t now, int64_t cool_max_ms,
			   struct fleet_refusal *why);
/* A reason code as read: 0 with *out, or -1 when it is none of enum
 * fleet_reason's (an unknown code is refused, never taken for "go"). */
int fleet_reason_from_code(int64_t code, enum fleet_reason *out);

/* The Redis script's answer to an ask (fleet.lua, "ask"), checked. */
#define FLEET_MEMBERS_MAX INT64_C(1000000)
struct fleet_reply {
	int64_t wait_ms;
	enum fleet_reason reason;
	bool probe;
	int cred;             /* -1 .. ncreds - 1 */
	int64_t cred_until;
	int model;            /* 0 .. nmodels - 1 */
	int64_t members;      /* >= 1 */
	int64_t block_until;
	bool lease;
	/* Who set the block (elements 10..13; 0 when the script is older). */
	int64_t block_seen, block_member, block_status, block_asked;
	bool cred_probing;    /* element 14: the soonest credential is another's probe */
};

/* v[0..n): the answer's elements (every one an integer: the caller refuses
 * another shape before); the four of the block's teller when n >= 14, in
 * the ranges of fleet_scope_check. The whole answer is refused (-1, *why naming the
 * first element out of range, the caller decides on its own records) when
 * it is shorter than 10, a wait is negative or past wait_max_ms, the
 * reason is not a known code, a flag is not 0 or 1, an index names no
 * credential or model asked about, a time is past now + max_block_ms or
 * the fleet size past FLEET_MEMBERS_MAX. 0 with *out filled otherwise. */
int fleet_reply_check(const int64_t *v, size_t n, size_t ncreds, size_t nmodels,
		      const struct fleet_params *p, int64_t now, int64_t wait_max_ms,
		      struct fleet_reply *out, struct fleet_refusal *why);

size_t fleet_scope_format(const struct fleet_scope *s, char *out, size_t cap);

/* What a daemon that could not take a record's lock learned from a look at
 * it (seen, checked) joins its own copy: the later block with its teller,
 * the circuit when seen open, the later pacing slot, a learned rate when
 * it knew none. Its own news (a report still waiting for the lock) is
 * kept: nothing moves earlier. */
void fleet_scope_merge(struct fleet_scope *mine, const struct fleet_scope *seen);
int fleet_scope_parse(struct fleet_scope *s, const char *text, size_t len);
/* A credential's ("until\n", or "until turn turn_end gap\n" during a train)
 * or a model's ("streak cool_until\n") record text: up to n numbers into
 * v[0..n) (0 when absent; numbers past the n-th, a newer daemon's, are
 * not read); all 0 and -1 when it is not such a record (one of the n does
 * not fit int64_t, or is no number). */
int fleet_ints_parse(const char *text, size_t len, int64_t *v, size_t n);
int fleet_pair_parse(const char *text, size_t len, int64_t *a, int64_t *b);

#endif

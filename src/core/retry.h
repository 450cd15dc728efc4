/* retry — the retry policy as a pure state machine.
 *
 * retry_decide() takes the policy, the chain's state, the daemon's retry
 * budget, one attempt's outcome and the time, and says what happens next:
 * done, wait N ms and try again, or stop — and which lifecycle events the
 * caller must emit. No I/O, no timers: the session owns the backoff timer
 * (through the clock seam). Randomness (jitter) comes from a generator kept
 * in the chain and seeded from the policy, so a seeded policy replays. */
#ifndef RETRYD_RETRY_H
#define RETRYD_RETRY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RETRY_SCHEDULE_MAX 64

enum retry_jitter {
	RETRY_JITTER_NONE,
	RETRY_JITTER_FULL,         /* U(0, d) */
	RETRY_JITTER_EQUAL,        /* d/2 + U(0, d/2) */
	RETRY_JITTER_DECORRELATED, /* min(cap, U(base, previous * 3)) */
};

struct retry_policy {
	bool enabled;
	int max_retries;
	int unknown_retries;         /* of those, for an error no rule knows */
	int64_t base_delay_ms;
	int64_t max_delay_ms;        /* <= 0: no cap */
	bool respect_hints;          /* delay = max(backoff, server hint) */
	enum retry_jitter jitter;
	bool seeded;                 /* retry.jitterSeed was given */
	uint64_t jitter_seed;
	size_t schedule_len;         /* 0: the exponential formula */
	int64_t schedule[RETRY_SCHEDULE_MAX];
	int64_t idle_timeout_ms;     /* 0: off */
	int fallback_after_consecutive;
};

/* The seed policy: the settings table's retry.* defaults (core/settings.c). */
void retry_policy_default(struct retry_policy *policy);

/* Reads a merged "retry" settings object (borrowed, may be NULL) whose values
 * have passed settings_check; a knob it lacks takes the table's default.
 * max_explicit: whether maxRetries was set by the user rather than by the
 * defaults (a schedule otherwise sets it to its length).
 * Returns 0, or -1 with err. */
int retry_policy_from_json(struct retry_policy *policy, const json_t *retry, bool max_explicit,
			   char *err, size_t errlen);

/* The retry budget (gRPC A6 throttling), shared by every prompt. */
struct retry_budget {
	bool enabled;
	double max_tokens;
	double tokens;
	double ratio;
};

/* Reads retry.budget ({maxTokens, tokenRatio} or null/absent = off). Keeps
 * the tokens when the limits are unchanged; otherwise starts full. */
void retry_budget_configure(struct retry_budget *budget, const json_t *config);
json_t *retry_budget_json(const struct retry_budget *budget); /* new reference, null when off */

/* One chain: the attempts made for one user turn. attempt counts the
 * retries started so far (0 = first attempt; the chain is "open" while
 * attempt > 0). */
struct retry_chain {
	int attempt;
	int64_t prev_delay_ms; /* decorrelated jitter's memory */
	uint64_t rng;          /* 0 = not seeded yet */
};

enum retry_failure {
	RETRY_OK,           /* the attempt succeeded */
	RETRY_TRANSIENT,    /* failed; the classifier says retryable */
	RETRY_PERMANENT,    /* failed; not retryable (incl. context overflow) */
};

enum retry_switch {
	RETRY_SWITCH_NONE,
	RETRY_SWITCH_CREDENTIAL, /* a fresh credential is ready: retry at once */
	RETRY_SWITCH_MODEL,      /* a fallback model is ready: retry at once */
};

struct retry_outcome {
	enum retry_failure failure;
	const char *error_message;    /* borrowed; NULL on success */
	int64_t hint_ms;              /* a server-requested wait, or -1 */
	enum retry_switch switched;
};

enum retry_action {
	RETRY_ACT_DONE,  /* success: the chain is over */
	RETRY_ACT_WAIT,  /* emit auto_retry_start, wait delay_ms, attempt again */
	RETRY_ACT_STOP,  /* failure that ends the chain */
};

enum retry_reason {
	RETRY_REASON_BACKOFF,
	RETRY_REASON_SERVER_HINT,
	RETRY_REASON_CREDENTIAL_SWITCH,
	RETRY_REASON_MODEL_FALLBACK,
	RETRY_REASON_USAGE_RESET,  /* parked until a usage limit resets (core/park) */
};

struct retry_decision {
	enum retry_action action;

	/* RETRY_ACT_WAIT: the auto_retry_start fields. */
	int attempt;
	int max_attempts;
	int64_t delay_ms;
	enum retry_reason reason;
	int64_t hint_ms;   /* the hint that was used, or -1 */

	/* Whether to emit auto_retry_end, and its fields. final_error is
	 * borrowed from the outcome, static, or points at `owned`. */
	bool end;
	bool end_success;
	int end_attempt;
	const char *final_error;
	char *owned;       /* release with retry_decision_release() */
};

/* Decides and updates *chain and *budget (budget may be NULL).
 * now_ms: the caller's monotonic clock. */
void retry_decide(const struct retry_policy *policy, struct retry_chain *chain,
		  struct retry_budget *budget, const struct retry_outcome *outcome,
		  uint64_t now_ms, struct retry_decision *out);
void retry_decision_release(struct retry_decision *d);

/* A usage limit with nothing to switch to parks the chain for delay_ms
 * (core/park decided that it may): a wait that opens the chain (its first
 * retry when none was made) but costs no retry of retry.maxRetries after
 * that, so a plan's reset is no backoff step. */
void retry_park(const struct retry_policy *policy, struct retry_chain *chain, int64_t delay_ms,
		struct retry_decision *out);

/* Cancels an open chain (abort, abort_retry, shutdown). `end` says whether an
 * auto_retry_end{success:false, finalError:"Retry cancelled"} is owed (only
 * when the chain is open). */
void retry_cancel(struct retry_chain *chain, struct retry_decision *out);

/* The nominal delay of retry `attempt` (>= 1) before jitter and cap:
 * the schedule's entry, or baseDelayMs * 2^(attempt-1), saturating. */
int64_t retry_backoff_ms(const struct retry_policy *policy, int attempt);

const char *retry_reason_name(enum retry_reason reason);

#define RETRY_CANCELLED "Retry cancelled"

#endif

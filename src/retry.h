/* retry — the retry policy as a pure state machine.
 *
 * retry_decide() takes the policy, the chain's state, one attempt's outcome
 * and the time, and says what happens next: done, wait N ms and try again,
 * or stop. It also says which lifecycle events the caller must emit. No I/O,
 * no timers: the session owns the backoff timer (through the clock seam). */
#ifndef RETRYD_RETRY_H
#define RETRYD_RETRY_H

#include <stdbool.h>
#include <stdint.h>

struct retry_policy {
	bool enabled;
	int max_retries;
	int64_t base_delay_ms;
};

/* One chain: the attempts made for one user turn. attempt counts the
 * retries started so far (0 = first attempt; an auto_retry_start was emitted
 * for every attempt > 0, so the chain is "open" while attempt > 0). */
struct retry_chain {
	int attempt;
};

enum retry_failure {
	RETRY_OK,           /* the attempt succeeded */
	RETRY_TRANSIENT,    /* failed; the classifier says retryable */
	RETRY_PERMANENT,    /* failed; not retryable (incl. context overflow) */
};

struct retry_outcome {
	enum retry_failure failure;
	const char *error_message;    /* borrowed; NULL on success */
	bool switched_credential;     /* a fresh credential is ready: retry at once */
};

enum retry_action {
	RETRY_ACT_DONE,  /* success: the chain is over */
	RETRY_ACT_WAIT,  /* emit auto_retry_start, wait delay_ms, attempt again */
	RETRY_ACT_STOP,  /* failure that ends the chain */
};

struct retry_decision {
	enum retry_action action;

	/* RETRY_ACT_WAIT: the auto_retry_start fields. */
	int attempt;
	int max_attempts;
	int64_t delay_ms;

	/* Whether to emit auto_retry_end, and its fields. final_error is
	 * borrowed from the outcome (or a static string); NULL on success. */
	bool end;
	bool end_success;
	int end_attempt;
	const char *final_error;
};

/* Decides and updates *chain. now_ms is the caller's clock (unused by the
 * seed policy; kept so policies that need time stay pure). */
struct retry_decision retry_decide(const struct retry_policy *policy, struct retry_chain *chain,
				   const struct retry_outcome *outcome, uint64_t now_ms);

/* Cancels an open chain (abort, abort_retry, shutdown). Returns a STOP
 * decision whose `end` says whether an auto_retry_end{success:false,
 * finalError:"Retry cancelled"} is owed (only when the chain is open). */
struct retry_decision retry_cancel(struct retry_chain *chain);

/* baseDelayMs * 2^(attempt-1), saturating; attempt >= 1. */
int64_t retry_backoff_ms(const struct retry_policy *policy, int attempt);

#define RETRY_CANCELLED "Retry cancelled"

#endif

/* chain — the coordinator of one prompt's attempts: where a retry is
 * decided and carried out.
 *
 * One turn runs through it in this order, each step a function of chain.c:
 *
 *   chain_turn      turn_start, the delivered user messages, then
 *   ask_fleet       may the attempt go, with which credential and model?
 *                   (a hold: fleet_wait, the wait timer, ask again)
 *   send_attempt    the provider's start(), with the context the owner hands
 *   sink_*          the streamed assistant message (message_start/update)
 *   sink_finish     the provider's outcome: judged once (policy_judge reads
 *                   the typed failure, then the words), told to the fleet,
 *                   the message closed, retry_decide (core/retry, pure)
 *   report          turn_end; done or stopped: auto_retry_end and the owner's
 *                   turn_over; a retry: the fallback switch, auto_retry_start,
 *                   the failed message out of the context, the wait timer
 *   on_wait_over    the owner's retry_turn, which calls chain_turn again
 *
 * A provider answers only what the chain cannot know: how its attempt ended
 * (provider_result: the typed failure and the text) and how a next attempt
 * can go on from there (provider_result.next). Everything else of the loop —
 * counting, backoff, holds, switching, the lifecycle events — is here.
 *
 * The chain knows no session: it reaches the conversation only through the
 * chain_ops its owner hands it, so it runs under the fake clock with a
 * recording ops table in unit tests. */
#ifndef RETRYD_CHAIN_H
#define RETRYD_CHAIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "core/assistant.h"
#include "core/classify.h"
#include "core/continuation.h"
#include "core/fallback.h"
#include "core/fleet.h"
#include "core/park.h"
#include "core/policy.h"
#include "core/retry.h"
#include "core/settings.h"
#include "provider/provider.h"

enum chain_phase {
	CHAIN_IDLE,
	CHAIN_ATTEMPT,  /* a provider attempt is running (or reporting that it could not start) */
	CHAIN_BACKOFF,  /* waiting to retry */
	CHAIN_HOLD,     /* inside a turn: the fleet holds the attempt (fleet_wait) */
};

/* What the next attempt sends, as the owner holds it. */
struct chain_context {
	const json_t *messages;      /* borrowed: the conversation so far */
	const char *thinking_level;  /* borrowed (static): the level the owner set */
};

/* The owner's side. Every callback is required. */
struct chain_ops {
	/* event: takes ownership (never NULL). */
	void (*emit)(void *ctx, json_t *event);
	/* A message joins the context and the run's messages (borrowed: the
	 * owner takes its own reference); the file is journal's business. */
	void (*append)(void *ctx, json_t *message);
	/* A message (borrowed) goes to the session file; retried: a failed
	 * attempt that a retry drops from the context, kept in the file. */
	void (*journal)(void *ctx, const json_t *message, bool retried);
	/* The last message of the context goes (a failure that is retried). */
	void (*drop_last)(void *ctx);
	/* The context for the attempt about to start (*out filled in). */
	void (*context)(void *ctx, struct chain_context *out);
	/* The turn is over without a retry (done, stopped, or its hold
	 * cancelled from inside a callback): the owner delivers what is
	 * queued (chain_turn again) or ends the run. */
	void (*turn_over)(void *ctx);
	/* A backoff is over: the owner calls chain_turn(self, NULL, 0, msgs)
	 * with what was steered meanwhile (msgs may be empty). */
	void (*retry_turn)(void *ctx);
	/* Optional (NULL: none): a park began (record, borrowed: what
	 * park_record_json makes, for the session file) or was cancelled
	 * (NULL). */
	void (*parked)(void *ctx, const json_t *record);
	void *ctx;
};

/* get_session_stats' "retry": what the retries did, counted as it happens. */
struct chain_stats {
	int64_t attempts;        /* provider attempts started, retries included */
	int64_t retries;         /* auto_retry_start events */
	int64_t succeeded, failed, cancelled; /* chains (auto_retry_end) by outcome */
	int64_t waited_ms;       /* finished backoffs and fleet holds */
	int64_t errors[CLASSIFY_NCLASSES]; /* failed attempts by enum classify_verdict */
	char last_unknown[256];  /* the newest "unknown" error's text, cut; "" none */
	bool waiting;            /* a backoff or hold is running since wait_since */
	uint64_t wait_since;     /* clock_now() */
};

struct chain_config {
	struct settings *settings;   /* borrowed */
	struct classify *classify;   /* takes ownership: the daemon's classifier */
	struct clock *clock;         /* borrowed */
	struct provider *provider;   /* borrowed */
	struct fleet *fleet;         /* borrowed; NULL: the daemon shares nothing */
	const char *model;           /* borrowed (copied): the primary model */
	struct assistant_output out; /* the streamed message's output (copied) */
	struct chain_ops ops;        /* copied */
};

struct chain {
	struct chain_config cfg;
	enum chain_phase phase;
	struct retry_chain retry;       /* the retry state machine's state */
	struct policy policy;           /* the running chain's snapshot (json NULL when none yet) */
	unsigned auto_retry_gen;        /* bumped by set_auto_retry (chain_retry_toggled) */
	struct retry_budget budget;     /* shared by every prompt of the daemon */
	struct chain_stats stats;
	struct fallback fallback;       /* the model and credential in use */
	struct assistant reply;         /* the assistant message being streamed */
	struct continuation cont;       /* how the attempt after a cut answer goes on */
	bool output_paused;

	/* One timer for every wait: a backoff (CHAIN_BACKOFF) or a hold. */
	struct clock_timer wait_timer;
	struct clock_timer idle_timer;  /* retry.idleTimeoutMs: no data for that long */
	/* A failure the chain reports itself — a provider that could not
	 * start, every credential spent, a retry notice of a final failure —
	 * is reported from here, on the next loop turn (with deferred_error),
	 * so a queue of prompts never recurses. */
	struct clock_timer start_failed_timer;
	char deferred_error[512];
	bool attempt_sent;              /* the provider took the attempt (not a start failure) */

	/* A usage limit waited out (retry.usageLimitWait): the park on the
	 * wait timer, its heartbeat, its probes. */
	struct park park;
	bool keep_park;  /* the daemon stops: a cancelled park stays in the file */
	bool fleet_spent; /* the failure is the fleet's word that every credential is spent */

	struct fleet_answer fleet_ans;  /* the last answer: its scope and lease; probe
					 * cleared once the fleet heard its answer begin */
	const char *fleet_cred;         /* the fingerprint the attempt runs with, or NULL */
	/* fleet_provider_id of the provider, made at each use (set_model may switch it) */
	char fleet_provider[FLEET_PROVIDER_ID_MAX];
	char fleet_fp[17];
	enum fleet_reason hold_reason;  /* the attempt's last fleet_wait reason (GO: none yet) */
	/* The last attempt's answer to "how can the next one go on?". */
	enum provider_next next;
	/* The backend's own retries in this chain (provider.counts_notices). */
	int notices;
	bool start_failed;     /* sink_finish is reporting a provider that could not start */
	/* How a deferred failure (deferred_error) goes on: CANNOT for one the
	 * chain itself ended (a shared block too long to wait for). */
	enum provider_next deferred_next;
	char deferred_why[96];
	int unknown_retried;   /* retries of this prompt's chain for "unknown" errors */
	/* The last judged failure: its verdict and HTTP status (0 none), for
	 * a prompt's result; last_failed false when the last attempt was fine. */
	bool last_failed;
	enum classify_verdict last_verdict;
	int last_status;
};

int chain_init(struct chain *self, const struct chain_config *cfg);
void chain_release(struct chain *self);

/* One turn: turn_start, each of messages (borrowed array of user messages:
 * message_start, ops.append, ops.journal, message_end), then an attempt.
 * policy (borrowed, a reference is kept; NULL inside a chain, after a
 * backoff) starts a new chain on that snapshot, taken when the
 * set_auto_retry count was policy_gen; a new chain may bring the primary
 * model back. */
void chain_turn(struct chain *self, const json_t *policy, unsigned policy_gen,
		const json_t *messages);
/* abort_retry: cancels a backoff or a hold (the open chain ends cancelled;
 * a hold's attempt ends as an aborted message inside its turn). Returns
 * true when one was cancelled (the owner then moves on: turn_over is not
 * called), false when there was none (nothing emitted). */
bool chain_abort_retry(struct chain *self);
/* abort: cancels what is in flight (attempt, backoff or hold), its events
 * emitted; the owner then ends the run. */
void chain_abort(struct chain *self);
/* The daemon is stopping (a signal, stdout gone): the abort that follows
 * leaves a park recorded, so that --continue resumes it. */
void chain_keep_park(struct chain *self);
/* --continue of a session whose last prompt was parked: a new chain on
 * policy (borrowed, a resolved snapshot; a reference is kept) that waits
 * the rest of the park (record: borrowed, the session file's park line),
 * then probes; at once when the reset has passed. Returns false, with
 * nothing emitted, when the record is not a park's. */
bool chain_resume_park(struct chain *self, const json_t *policy, unsigned policy_gen,
		       const json_t *record);
/* set_auto_retry happened: a running chain reads retry.enabled again at its
 * next failure. */
void chain_retry_toggled(struct chain *self);
/* The daemon's classifier changed (set_retry_policy): takes ownership of c;
 * the budget is configured again from the settings. */
void chain_set_classify(struct chain *self, struct classify *c);
/* Output is congested (true) or drained (false). */
void chain_set_output_paused(struct chain *self, bool paused);
/* A new conversation: the counts and the retry state start over. */
void chain_reset(struct chain *self);
/* get_session_stats' "retry" object (new reference). */
/* oh-my-pi's prompt_result for prompt id (borrowed, may be NULL) of a run
 * that added messages (borrowed): completed, aborted (aborted: the run was
 * taken down) or error, the last assistant message's stop. New reference. */
json_t *chain_prompt_result(const struct chain *self, const json_t *messages, const char *id,
			    bool aborted);
/* oh-my-pi's prompt_result error: {"message", "provider"?, "model"?,
 * "httpStatus"?, "retryable"} of the chain's last failure (message,
 * provider, model: borrowed from the failed message). New reference. */
json_t *chain_failure_json(const struct chain *self, const json_t *message,
			   const json_t *provider, const json_t *model);
json_t *chain_stats_json(const struct chain *self);
/* get_state's "usageReset" (park_state_json; new reference), or NULL when
 * the prompt is not parked. */
json_t *chain_usage_reset(const struct chain *self);
/* get_state's "fleet" (new reference); the chain must have a fleet. */
json_t *chain_fleet_state(struct chain *self);
/* fleet_clear: forgets what the fleet holds against the credential and
 * model in use. {"cleared", "scope", "mode"}; {"cleared":0} without a
 * fleet. New reference. */
json_t *chain_fleet_clear(struct chain *self);
/* The fleet's name for the credential in use (out: 17 bytes), or NULL
 * when the provider has none. */
const char *chain_credential_fingerprint(struct chain *self, char out[17]);

#endif

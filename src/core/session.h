/* session — one conversation and the lifecycle of its prompts.
 *
 * It owns the in-memory context, the queues of steering and follow-up
 * messages, the session file and the thinking level; each turn it hands to
 * its chain (core/chain.h), which runs the attempts and the retries. Everything it has to say goes out through `emit` as
 * pi-shaped events, in order. It never touches stdin/stdout itself, so the
 * whole lifecycle runs under the fake clock in unit tests.
 *
 * Lifecycle of one run (one per accepted prompt; queued steering and
 * follow-up messages continue the same run, so agent_end means idle):
 *   agent_start
 *     turn_start, [user message_start/end], assistant message_start …
 *     message_end, [auto_retry_end{success:true}], turn_end,
 *     [auto_retry_start → backoff → next turn]
 *   [auto_retry_end{success:false}]
 *   agent_end{messages}
 */
#ifndef RETRYD_SESSION_H
#define RETRYD_SESSION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/jsontext.h"
#include "core/chain.h"
#include "core/classify.h"
#include "core/fleet.h"
#include "core/journal.h"
#include "core/session_events.h"
#include "core/settings.h"
#include "provider/provider.h"

/* event: takes ownership. */
typedef void (*session_emit_fn)(void *ctx, json_t *event);
/* The buffer the next output line is appended to (borrowed, valid until
 * line_done; NULL when the output is gone), and the call that sends what
 * was appended. */
typedef struct jsontext_buf *(*session_line_buf_fn)(void *ctx);
typedef void (*session_line_done_fn)(void *ctx);

struct session_config {
	struct settings *settings;   /* borrowed */
	struct classify *classify;   /* takes ownership: compiled from the settings */
	struct clock *clock;         /* borrowed */
	struct provider *provider;   /* borrowed */
	struct fleet *fleet;         /* borrowed; NULL: the daemon shares nothing */
	const char *model;           /* borrowed (copied) */
	const char *session_file;    /* borrowed (copied); NULL = a new file in session_dir */
	const char *session_dir;     /* borrowed (copied); NULL with session_file NULL = no file */
	/* A resumed session (--continue, --resume): its file, appended to
	 * without a new header, the id from that header, and the messages
	 * journal_load() read (borrowed; copied into the context). NULL: a new
	 * session. new_session then starts a new file in session_dir. */
	const char *resume_file;
	const char *resume_id;
	const json_t *resume_messages;
	session_emit_fn emit;
	/* Optional (both or neither): when set, delta-mode text_delta events,
	 * the per-chunk hot path, are written by jsontext (the same bytes
	 * jansson would write) straight into the output buffer instead of
	 * going through emit as a json_t. */
	session_line_buf_fn line_buf;
	session_line_done_fn line_done;
	void *emit_ctx;
};

struct session {
	struct session_config cfg;
	char *fixed_file;      /* owned: --session FILE, or NULL */
	char *session_dir;     /* owned, or NULL */

	char id[40];
	char *file;            /* owned: this session's file, or NULL */
	char *name;            /* owned, or NULL */
	struct journal journal;

	json_t *messages;      /* owned: the in-memory context */
	json_t *run_messages;  /* owned: messages this run added to the context */
	json_t *run_prompts;   /* owned: ids of the prompts this run delivered (prompt_result) */
	json_t *dropped_prompts; /* owned: ids of prompts clear_queue dropped (aborted) */
	json_t *retried_last;  /* owned: the failed attempt a retry last dropped this run, or NULL */
	json_t *steering;      /* owned: queued user messages */
	json_t *follow_ups;    /* owned: queued user messages */
	bool steer_all;        /* steeringMode "all" (else one-at-a-time) */
	bool follow_up_all;

	bool busy;             /* from prompt acceptance to agent_end */
	/* The coordinator of the run's attempts: the retry loop, the policy,
	 * the model and credential in use, the streamed assistant message. */
	struct chain chain;
	/* pi's thinking level (a static string of core/thinking.h), clamped to
	 * what the model in use allows when it is set; an attempt on another
	 * model (a fallback) is clamped again. */
	const char *thinking_level;

	struct session_events events; /* messageId, set_event_filter */

	void (*idle_cb)(void *ctx); /* once, when the daemon may exit (drain) */
	void *idle_ctx;
};

int session_init(struct session *self, const struct session_config *cfg);
void session_release(struct session *self);
/* For session_init: a new session, or the one cfg resumes, and its
 * thinking level (core/session_file.c). Returns 0, or -1 out of memory. */
int session_file_start(struct session *self);

/* Answers of the commands. Each returns 0, or -1 with err for the failed
 * response; `data` (when non-NULL) receives a new reference or NULL. */
/* Whether a prompt can be accepted now: not busy unless queued by
 * `behavior`, and its own retry settings (borrowed, may be NULL) valid.
 * Returns 0 with *policy (new reference: the snapshot), or -1 with err. */
int session_accept(struct session *self, int behavior, const json_t *retry, json_t **policy,
		   char *err, size_t errlen);
/* Called once a message is safely queued or about to run, before the run's
 * first event: where the caller answers its command (rpc.c), so that an
 * answer never goes out for a message that is then lost. disposition (pi
 * 1.6's data.disposition): "started" when the message begins a run,
 * "queued" when it waits behind one. */
typedef void (*session_taken_fn)(void *ctx, const char *disposition);

/* Runs (or queues) an accepted prompt; policy: takes ownership, from
 * session_accept(). taken (may be NULL) is called before anything is
 * emitted; on -1 (out of memory) it was not called and nothing was queued.
 * id (borrowed, may be NULL): the command's, for its prompt_result (sent
 * once its run is over, after agent_end). */
int session_prompt(struct session *self, const char *text, const json_t *images,
		   int behavior, json_t *policy, const char *id, session_taken_fn taken,
		   void *ctx);
int session_steer(struct session *self, const char *text, const json_t *images,
		  session_taken_fn taken, void *ctx);
int session_follow_up(struct session *self, const char *text, const json_t *images,
		      session_taken_fn taken, void *ctx);
/* classify_error: how the daemon's classifier, with the current settings,
 * judges this failure (in: borrowed; its now_ms is filled in). New reference. */
json_t *session_classify(struct session *self, struct classify_input *in);
/* Cancels everything in flight; *data (may be NULL) lists the queued
 * messages it dropped. A parked prompt's park ends. */
void session_abort(struct session *self, json_t **data);
/* The daemon stops (a signal, stdout closed, stdin closed while parked):
 * everything in flight is cancelled as session_abort does, but a parked
 * prompt (or its probe) stays parked in the session file, so that a
 * --continue resumes it. */
void session_stop(struct session *self);
/* Whether a prompt waits out a usage limit or its probe is out. */
bool session_parked(const struct session *self);
/* After ready, for --continue/--resume: the session file ended with a park
 * (record: borrowed, journal_load_park's; NULL: nothing to do), so its
 * prompt goes on waiting for the rest of it in a run of its own, then
 * probes, the context as the file left it. */
void session_resume_park(struct session *self, const json_t *record);
/* abort_and_prompt: the prompt's own retry settings (borrowed, may be
 * NULL) are checked first, so a refused command changes nothing (-1 with
 * err, *data NULL). Then everything in flight is cancelled as session_abort
 * does, its events first, and *data (new reference) lists the dropped
 * messages; then the prompt starts a run of its own, as on an idle session:
 * taken (may be NULL) is called, with *data already set, before the run's
 * first event. -1 after the abort (out of memory): err says so, nothing
 * runs. */
int session_abort_and_prompt(struct session *self, const char *text, const json_t *images,
			     const json_t *retry, const char *id, json_t **data,
			     session_taken_fn taken, void *ctx, char *err, size_t errlen);
/* Cancels a pending backoff (no event when there is none). */
void session_abort_retry(struct session *self);
/* set_auto_retry: persist writes the settings file, else this process
 * only; *data as policy_set_enabled() says. */
int session_set_auto_retry(struct session *self, bool enabled, bool persist, json_t **data,
			   char *err, size_t errlen);
json_t *session_state(struct session *self);          /* new reference */
/* The policy a prompt accepted now would run on (new reference). */
json_t *session_retry_policy(struct session *self);
/* Validates policy (borrowed) as a whole, then applies it to later chains:
 * persisted to the settings file, or for this process only. */
int session_set_retry_policy(struct session *self, const json_t *policy, bool persist,
			     json_t **data, char *err, size_t errlen);
json_t *session_messages(struct session *self);       /* new reference */
json_t *session_last_assistant_text(struct session *self); /* new reference */
json_t *session_stats(struct session *self);          /* new reference */
json_t *session_models(struct session *self);         /* new reference */
/* fleet_clear: forgets what the fleet holds against the credential and
 * model in use (a wrong block). {"cleared", "scope", "mode"}; {"cleared":0}
 * without a fleet. New reference. */
json_t *session_fleet_clear(struct session *self);
/* New reference to a shared object: callers must not change it. */
json_t *session_model(struct session *self);
int session_set_model(struct session *self, const char *provider, const char *model_id,
		      char *err, size_t errlen);
/* set_thinking_level: level (borrowed) is one of pi's levels; it is
 * clamped to what the model allows and, when that changes the level, the
 * change is written to the session file, persisted as defaultThinkingLevel
 * (unless the model does not reason and the level is "off", as pi does)
 * and announced with thinking_level_changed. */
void session_set_thinking_level(struct session *self, const char *level);
/* cycle_thinking_level: *data {"level": the next level}, or NULL when the
 * model does not reason (nothing changes then). */
void session_cycle_thinking_level(struct session *self, json_t **data);
void session_new(struct session *self);
/* open_session (oh-my-pi's): where (borrowed) is a directory, whose newest
 * session goes on as --continue does (a directory without one: a new
 * session there), or a session file, resumed as --resume does. Refused
 * (-1 with err) while busy, without a session file (--no-session), and
 * when the file is not a retryd session. *data (new reference):
 * {"cancelled":false, "resumed", "sessionId", "sessionFile"}. */
int session_open(struct session *self, const char *where, json_t **data, char *err,
		 size_t errlen);
/* get_entries (pi 1.6's): {"entries", "leafId"} of the session file
 * (journal_entries()), those after entry `since` (borrowed, may be NULL)
 * only. -1 with err: the file cannot be read, or since names no entry. */
int session_entries(struct session *self, const char *since, json_t **data, char *err,
		    size_t errlen);
/* clear_queue (pi 1.6's): drops the queued steering and follow-up
 * messages; {"steering":[texts], "followUp":[texts]} (new reference). A
 * dropped prompt's prompt_result (aborted) follows the run's agent_end. */
json_t *session_clear_queue(struct session *self);
/* get_available_thinking_levels (pi 1.6's): {"levels"} the model in use
 * allows (new reference). */
json_t *session_thinking_levels(struct session *self);
void session_set_steering_mode(struct session *self, bool all);
void session_set_follow_up_mode(struct session *self, bool all);
int session_set_name(struct session *self, const char *name);

/* Output is congested (true) or drained (false). */
void session_set_output_paused(struct session *self, bool paused);
/* Calls cb once nothing is running or queued (now, if idle already). */
void session_when_idle(struct session *self, void (*cb)(void *ctx), void *ctx);

#endif

/* continuation — how the attempt after a cut answer goes on from the text
 * already streamed, instead of saying it again.
 *
 * After a retryable failure that left streamed text, the chain asks the
 * provider what it offers (provider_ops.continuation) and plans here: the
 * kept text (the cut message's text blocks joined; thinking is dropped), the
 * mode, and for a replay the reason. The next attempt's request carries the
 * kept text (continuation_messages): as the last assistant turn (prefill),
 * or as an assistant turn followed by a short user instruction (turn). What
 * comes back may begin by repeating the end of the kept text; the overlap
 * filter (continuation_feed / continuation_flush) drops that repeat before
 * it reaches a delta, and nothing else (after a prefill, only the
 * whitespace the prefill had to leave off, or all of the kept text said
 * again): it matches the end of the kept text
 * (the last CONTINUATION_WINDOW bytes) against the start of the new text,
 * whitespace runs matching any whitespace run.
 *
 * Pure: no I/O, no clock. */
#ifndef RETRYD_CONTINUATION_H
#define RETRYD_CONTINUATION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/assistant.h"
#include "provider/provider.h"

/* How much of the kept text's end the overlap is looked for in. A repeat
 * longer than this is not recognised (and is shown). */
#define CONTINUATION_WINDOW 2000

/* A matched repeat counts when it is two words or more of at least
 * CONTINUATION_MIN_REPEAT non-space bytes, one run of at least
 * CONTINUATION_MIN_RUN (a long word, a sentence of a script without
 * spaces), all of the kept text (a replay), or the word the cut split
 * restarted; otherwise a short coincidence ("that" after "I knew that") is
 * kept, since dropping text that was not a repeat is the worse mistake. */
#define CONTINUATION_MIN_REPEAT 8
#define CONTINUATION_MIN_RUN 16

/* What the user is told in a continuation turn. */
#define CONTINUATION_INSTRUCTION \
	"Your previous answer was cut off. Continue exactly where it stopped, " \
	"without repeating anything and without any preamble."

enum continuation_mode {
	CONTINUATION_NONE,    /* not continued, nothing said: today's replay */
	CONTINUATION_REPLAY,  /* could have been continued but is not: `reason` says why */
	CONTINUATION_TURN,
	CONTINUATION_PREFILL,
	CONTINUATION_RESUME,
};

struct continuation {
	enum continuation_mode mode; /* the plan for the next attempt */
	const char *reason;          /* static: with REPLAY, why; else NULL */
	char *kept;                  /* owned: the kept text, kept_len bytes (NUL-terminated) */
	size_t kept_len;
	size_t kept_chars;           /* its length in code points */
	/* The running attempt continues the kept text (set by
	 * continuation_begin, cleared by continuation_end). */
	bool active;
	bool seeded;                 /* the kept text went into the new message */
	bool decided;                /* the overlap is known: new text passes */
	char *pending;               /* owned: new text held while undecided */
	size_t pending_len, pending_cap;
	size_t dropped;              /* bytes of repeat dropped in this attempt */
	/* The plan's kept text outlives an attempt that opened no message
	 * (it failed before a byte), for the plan after it. */
	bool carry;
	const char *refusal;         /* static: why the last attempt would not continue, or NULL */
	bool tool_cut;               /* the last attempt had begun a tool call (provider_result) */
	/* Owned, or NULL: with RESUME, the cut message's thinking blocks. The
	 * resumed stream goes on after them, so they are put back, whole, at
	 * the front of the resumed message as it closes (streamed in no event:
	 * they were shown with the cut attempt). */
	json_t *kept_thinking;
	json_t *messages;            /* owned: the context the running attempt was sent, or NULL */
	char setting[16];            /* retry.continueCutAnswers of the running attempt */
};

/* The pieces of new text the filter lets through (borrowed for the call). */
typedef void (*continuation_emit_fn)(void *ctx, const char *text, size_t len);

void continuation_init(struct continuation *self);
void continuation_release(struct continuation *self);

/* "none", "replay", "turn", "prefill", "resume". */
const char *continuation_mode_name(enum continuation_mode mode);

/* Plans the attempt after the failed message cut (borrowed). offered: what
 * the provider can do for the next attempt's model (PROVIDER_CONTINUE_NONE:
 * the setting is off, or the provider has no way; then nothing changes).
 * Returns the planned mode: the offered one when the cut left text, else
 * CONTINUATION_REPLAY with a reason. Out of memory: NONE. */
enum continuation_mode continuation_plan(struct continuation *self, const json_t *cut,
					 enum provider_continue offered);

/* Whether the running attempt's outcome r (borrowed) is the provider
 * refusing to continue: a prefill refused (a 400 that says so, as
 * Anthropic's newer models answer), a resume id gone (a 4xx). Returns the
 * reason (static), or NULL; the next attempt then replays. */
const char *continuation_refusal(const struct continuation *self,
				 const struct provider_result *r);

/* The plan becomes a replay for `reason` (static): the provider refused. */
void continuation_refused(struct continuation *self, const char *reason);
/* Plans the attempt after cut (borrowed) when the provider cannot continue
 * it for why (static): a replay that says why, or, when the cut itself
 * rules a continuation out (no text, a tool call), that reason. */
enum continuation_mode continuation_declined(struct continuation *self, const json_t *cut,
					     const char *why);

/* auto_retry_start's "continuation" for the plan: {mode, keptChars,
 * reason?}, a new reference; NULL when the plan is NONE. */
json_t *continuation_json(const struct continuation *self);

/* The next attempt's context: messages (borrowed) with the kept text added
 * as an assistant turn (prefill, turn) and, for a turn, the instruction as
 * a user turn after it. A new reference; NULL when nothing is added (or
 * out of memory): send messages as they are. */
json_t *continuation_messages(const struct continuation *self, const json_t *messages);

/* The attempt the plan was for starts (turn, prefill: the filter runs) or
 * not (anything else: the plan is dropped). */
void continuation_begin(struct continuation *self);
/* The attempt ended: the plan and the filter are dropped. */
void continuation_end(struct continuation *self);

/* New text of the running attempt: passed to emit once the overlap is known
 * (held until then). */
void continuation_feed(struct continuation *self, const char *text, size_t len,
		       continuation_emit_fn emit, void *ctx);
/* The new text ended (its block closed): what is held is decided now. */
void continuation_flush(struct continuation *self, continuation_emit_fn emit, void *ctx);

/* ---- the chain's hooks (core/chain): one call each ---------------------------- */

/* send_attempt: the context the attempt goes with (messages, borrowed, or
 * the one with the kept text, owned by self), and actx->continuation and
 * continue_setting filled in. A chain's first attempt (actx->attempt 0)
 * continues nothing: a plan left by an abandoned chain is dropped. setting:
 * retry.continueCutAnswers (borrowed, copied). */
const json_t *continuation_attempt(struct continuation *self, struct attempt_ctx *actx,
				   const json_t *messages, const char *setting);
/* The streamed reply's text block opens (assistant_text_start), a
 * continued answer's first one with the kept text in it; its deltas pass
 * the filter; it closes (what is held decided, then assistant_text_end).
 * reply: borrowed. */
void continuation_text_start(struct continuation *self, struct assistant *reply);
void continuation_text_delta(struct continuation *self, struct assistant *reply,
			     const char *text, size_t len);
void continuation_text_end(struct continuation *self, struct assistant *reply);
/* sink_finish, before the message closes: what is held goes into the reply,
 * an open reply that streamed no text gets the kept text, and the running
 * attempt is over. Returns true when r (borrowed) is the provider refusing
 * to continue (continuation_refusal): the failure is then retried, as a
 * replay. */
bool continuation_finish(struct continuation *self, struct assistant *reply,
			 const struct provider_result *r);
/* report, before a retry: plans the next attempt from the failed message
 * msg (borrowed) with what provider p (borrowed) offers for model (or, when
 * it declines with a reason, a replay that says it: continuation_declined), and adds
 * "continuation" to auto_retry_start ev (borrowed; NULL: nothing). */
void continuation_announce(struct continuation *self, json_t *ev, struct provider *p,
			   const char *model, const json_t *msg);

/* The overlap itself, for the filter and for tests: how many bytes at the
 * start of next (len next_len) repeat the end of kept. final: next is all
 * there will be. Returns the count, or -1 when next is too short to tell
 * yet (only when !final). */
long continuation_overlap(const char *kept, size_t kept_len, const char *next, size_t next_len,
			  bool final);

#endif

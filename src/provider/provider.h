/* provider — the backend behind one attempt, as a vtable.
 *
 * A provider streams one assistant message per attempt through the sink and
 * ends it with exactly one finish(). It answers only the two questions the
 * retry coordinator (core/chain) cannot: how did the attempt end (stop
 * reason, error text, the typed failure, an optional server hint), and how
 * can a next attempt go on from there (provider_result.next). Backoff,
 * counting and events live in the chain. */
#ifndef RETRYD_PROVIDER_H
#define RETRYD_PROVIDER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum stop_reason {
	STOP_STOP,
	STOP_LENGTH,
	STOP_TOOL_USE,
	STOP_ERROR,
	STOP_ABORTED,
};

/* "stop", "length", "toolUse", "error", "aborted". */
const char *stop_reason_name(enum stop_reason reason);

/* How a next attempt can go on after a failed one, as true of the backend
 * after the failure. */
enum provider_next {
	/* The backend's context holds the prompt: the next attempt continues
	 * it (retry.continuationPrompt where the backend keeps the context). */
	PROVIDER_NEXT_CONTINUE,
	/* The backend's context lost the failed turn: resend the prompt in it. */
	PROVIDER_NEXT_RESEND,
	/* No resumable context exists yet: start fresh and send the prompt. */
	PROVIDER_NEXT_FRESH,
	/* No next attempt can work (next_why says why): a retryable failure
	 * is final. */
	PROVIDER_NEXT_CANNOT,
};

/* How the attempt after a cut answer can go on from the text already
 * streamed (core/continuation), as a provider offers it for a model. */
enum provider_continue {
	PROVIDER_CONTINUE_NONE,    /* it cannot, or the setting is off: replay */
	PROVIDER_CONTINUE_TURN,    /* the text as an assistant turn, then "continue" */
	PROVIDER_CONTINUE_PREFILL, /* the text as the last assistant turn's start */
	PROVIDER_CONTINUE_RESUME,  /* the API resumes the cut response itself */
};

struct provider_result {
	enum stop_reason stop;
	const char *error_message; /* borrowed for the call; NULL unless stop is error */
	int64_t hint_ms;           /* a server-requested wait, or -1 */
	/* Token counts as pi counts them (its usage.input, output, cacheRead,
	 * cacheWrite, totalTokens), each in [0, NUMBER_MAX]; 0 when the
	 * provider reports none: */
	int64_t input_tokens;       /* prompt tokens neither read from nor written to a cache */
	int64_t output_tokens;      /* reasoning tokens included */
	int64_t cache_read_tokens;  /* prompt tokens read from the provider's cache */
	int64_t cache_write_tokens; /* prompt tokens written to it */
	/* The total as the provider reported it, where pi takes it as is
	 * (Responses' total_tokens, Gemini's totalTokenCount); 0: the sum of
	 * the four counts above. */
	int64_t total_tokens;
	/* How a next attempt can go on (CONTINUE unless the provider says
	 * otherwise), and with CANNOT why not (e.g. "the agent reported no
	 * session id to resume"; borrowed for the call): a retryable failure
	 * is then final, and its error says why. */
	enum provider_next next;
	const char *next_why;
	/* The stream had begun a tool call, which the provider does not keep
	 * as a block: the answer so far is not its text alone, so a next
	 * attempt must not continue it (core/continuation). */
	bool tool_call_begun;
	/* The typed failure, as far as the provider knows it; the classifier
	 * reads these before the text (core/classify.h). All borrowed for the
	 * call, all optional: */
	int http_status;            /* the response's status, 0 when none */
	const char *error_body;     /* the raw error body, error_body_len bytes, or NULL */
	size_t error_body_len;
	const json_t *headers;      /* the response headers: lower-case name -> string, or NULL
				     * (on a success too: the fleet reads the rate-limit state) */
};

/* Callbacks from provider to session; every string is borrowed for the call.
 * None is called from inside start(): a provider always reports later, from
 * the loop, so the caller's state is settled by then. */
struct provider_sink {
	void (*start)(void *ctx);
	void (*text_start)(void *ctx);
	void (*text_delta)(void *ctx, const char *text, size_t len);
	void (*text_end)(void *ctx);
	void (*finish)(void *ctx, const struct provider_result *result);
	void *ctx;
	/* Optional (NULL: none; last, so positional initializers stay valid): an
	 * event the session emits as is, between message_start and message_end
	 * (tool_execution_start/end, provider_retry). Stolen. */
	void (*event)(void *ctx, json_t *event);
	/* Optional (all three or none; NULL: the provider's thinking is
	 * dropped): a thinking block, the model's reasoning as it streams.
	 * A text block is never open at the same time. thinking_end's
	 * signature (borrowed, signature_len bytes; NULL when none) is what the
	 * provider needs sent back with the block in the next request (pi's
	 * thinkingSignature); redacted: the provider sent only an encrypted
	 * block (its text is a placeholder). */
	void (*thinking_start)(void *ctx);
	void (*thinking_delta)(void *ctx, const char *text, size_t len);
	void (*thinking_end)(void *ctx, const char *signature, size_t signature_len, bool redacted);
};

struct attempt_ctx {
	const json_t *messages;  /* borrowed: the conversation so far */
	const char *model;       /* borrowed */
	const char *credential;  /* borrowed; NULL when the provider has none */
	int attempt;             /* 0: a chain's first attempt; k: its k-th retry */
	/* With attempt > 0: the failed attempt's answer, how this one goes on
	 * (CONTINUE on a first attempt). */
	enum provider_next next;
	int64_t idle_timeout_ms; /* the chain's retry.idleTimeoutMs (0: off) */
	const char *continuation_prompt; /* borrowed: retry.continuationPrompt */
	/* borrowed: pi's thinking level, "off" | "minimal" | "low" | "medium" |
	 * "high" | "xhigh"; NULL means "off". */
	const char *thinking_level;
	/* How this attempt continues a cut answer (NONE: it does not; TURN and
	 * PREFILL are in messages already), and retry.continueCutAnswers
	 * (borrowed; NULL: "lossless"), which a provider may prepare for
	 * (Responses: background mode, so a cut can be resumed). */
	enum provider_continue continuation;
	const char *continue_setting;
};

struct provider;

struct provider_ops {
	/* Starts an attempt. Returns 0, or -1 with err (the attempt then fails
	 * with that text without the provider calling the sink). */
	int (*start)(struct provider *self, const struct attempt_ctx *ctx,
		     const struct provider_sink *sink, char *err, size_t errlen);
	/* Ends the running attempt at once; the sink is not called again. */
	void (*abort)(struct provider *self);
	/* Output is congested (true) or drained (false): stop or go on producing. */
	void (*pause)(struct provider *self, bool paused);
	void (*free)(struct provider *self);
	/* Optional (NULL: never): how the attempt after a cut answer of model
	 * (borrowed) may continue it, given retry.continueCutAnswers (setting,
	 * borrowed: "lossless", "always" or "off"), which the provider's own
	 * setting overrides. With PROVIDER_CONTINUE_NONE for a reason other
	 * than the setting, *why may be set to it (static): the next attempt
	 * then replays and says why; left NULL, nothing is said. */
	enum provider_continue (*continuation)(struct provider *self, const char *model,
					       const char *setting, const char **why);
};

struct provider {
	const struct provider_ops *ops;
	const char *name;      /* "sim", "openai", ... */
	const char *api;       /* pi's api field */
	const char *base_url;  /* "" when there is none */
	json_t *models;        /* owned by the provider: [{"id", "contextWindow"?, "maxTokens"?}] */
	json_t *credentials;   /* owned by the provider: credential names, never secrets */
	/* Owned by the provider, or NULL: credential name -> the fleet's name
	 * for its secret (base/secret.h secret_fingerprint), so daemons that
	 * call one key by different names share its state. */
	json_t *fingerprints;
	/* The provider enforces attempt_ctx.idle_timeout_ms itself (it must
	 * take a process down first); the session then runs no stall timer. */
	bool owns_idle_timeout;
	/* The backend may retry by itself inside an attempt (an agent CLI that
	 * could not be turned down fully): each of its retry notices
	 * (provider_retry) counts as one of the chain's retries. */
	bool counts_notices;
};

/* The entry of `models` with this id (borrowed), or NULL. */
json_t *provider_model(const struct provider *self, const char *id);
/* Model ids as the configuration lists them: a string or {"id", ...}; turns
 * either form into a new array of objects. */
json_t *provider_models_from(const json_t *list);

#endif

/* classify — what a failed attempt's error means for the retry: retry it,
 * stop, shrink the context, or switch credential or model.
 *
 * Pure: compiled PCRE2 patterns and the typed facts a provider knows (HTTP
 * status, the error body, the response headers) in, a verdict with the rule
 * that decided it out. The decision table, first rule that holds wins; a
 * step's typed evidence (a status, a typed value) comes before its wordings,
 * because a provider's typed answer says what it means where words only
 * suggest it, and the steps run from the verdicts a retry cannot mend
 * (overflow, a spent quota, a refusal) to the one it can:
 *   1. context overflow: status 413; a typed overflow value
 *      (`context_length_exceeded`, `request_too_large`, ...); the overflow
 *      wordings;
 *  1b. Google's typed body (the body is a google.rpc.Status: {"error":
 *      {"code","message","status","details":[...]}}), unless a settings
 *      list of steps 2-4 matches: an ErrorInfo.reason that refuses the key,
 *      project or account (API_KEY_INVALID, SERVICE_DISABLED, ...) is never
 *      retried, BILLING_DISABLED a usage limit ("google-reason:<R>"); a
 *      QuotaFailure violation with quotaValue 0 or a per-day / per-month
 *      quotaId or quotaMetric is a usage limit, else a per-minute / per-second
 *      one a rate limit, retried as step 4 ("google-quota:<id>",
 *      "google-quota-zero:<id>"). RetryInfo.retryDelay ("37s", "1.250s") is
 *      the text's stated wait;
 *   2. usage limit: status 402; a typed usage value (`insufficient_quota`,
 *      `billing_error`, ...); a zero quota; credit/billing/daily/plan
 *      wordings; quota wordings unless a per-minute window is named;
 *  2b. the Google body's error.status ("google-status:<S>"): INVALID_ARGUMENT,
 *      FAILED_PRECONDITION, PERMISSION_DENIED, UNAUTHENTICATED, NOT_FOUND, ...
 *      never retried; RESOURCE_EXHAUSTED (a rate window), UNAVAILABLE,
 *      INTERNAL, DEADLINE_EXCEEDED, ABORTED retried as step 4;
 *   3. never retried: status 401 403 404 405 407 410; typed auth/permission/
 *      not-found/content-policy values (also Gemini's finish and block
 *      reasons, "google-finish:SAFETY"); the wordings of those;
 *   4. retried: status 408 409 425 429 or 5xx but 501 505; typed rate-limit/
 *      server/overload values; rate-limit and capacity wordings; transient
 *      wordings (5xx, transport, stall, agent-CLI notices) unless the error is
 *      a generic bad request; the overload wordings. A stated wait of 15 min
 *      or more makes it a usage limit instead (rule "long-wait>=900000ms:<rule>").
 *      A permanent clause mutes words, never evidence: a server's "retrying
 *      will not help" (noRetryPatterns, nine languages) mutes the transient
 *      and overload wordings, a plan, tier, region or permission word only the
 *      bare generic ones ("unavailable", "busy", "retry": WEAK rows);
 *   5. otherwise: the bad-request evidence is final (not retried), and so is
 *      a "retrying will not help", a plan word that muted a transient word,
 *      and a generic permanent word ("not found", "unsupported", "invalid", in
 *      nine languages: genericNeverPatterns); with none,
 *      CLASSIFY_UNKNOWN (rule "default"), which the chain retries
 *      retry.unknownRetries times: a transient error nobody wrote a rule
 *      for gets one more chance, a permanent one costs one request.
 * A status is a status only where it stands as one ("HTTP 400", "status code
 * 429", "400 Bad Request", a leading "503 ...", "code": 429), never a number
 * followed by a unit ("400ms", "500 tokens", "port 5003"). `overload` is set on
 * a retryable verdict when the model or a shared pool is saturated (529, a
 * typed overload, the overload wordings); 503 alone is not.
 *
 * The typed values and wordings are built in, one row each in
 * core/classify_rules.def (which says how to add one); this module keeps the
 * order the steps read them in. The five `retry` settings lists extend them:
 * each is checked first within its step, its rule "settings:<list>[i]":
 * contextOverflowPatterns (step 1), usageLimitPatterns (2),
 * nonRetryablePatterns (3), retryablePatterns and then overloadPatterns (4;
 * an overload pattern also sets `overload`). All are compiled caseless and
 * UTF, JIT where available: the settings lists by classify_new (which
 * refuses a bad one), the built-ins once per process, at the first decision.
 *
 * Only the first ERRTEXT_MAX (64 KiB) bytes of message + body are read
 * (base/errtext.h). The classifier keeps one match block and one text buffer:
 * a classifier is for one thread. */
#ifndef RETRYD_CLASSIFY_H
#define RETRYD_CLASSIFY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum classify_verdict {
	CLASSIFY_RETRYABLE,
	CLASSIFY_NOT_RETRYABLE,
	CLASSIFY_CONTEXT_OVERFLOW,
	/* Spent credit, billing, a daily or plan quota, or a wait of 15 min or
	 * more: switch credential or model, else stop. */
	CLASSIFY_USAGE_LIMIT,
	/* No rule holds (rule "default"): neither known transient nor known
	 * final. The chain retries it retry.unknownRetries times. */
	CLASSIFY_UNKNOWN,
};

#define CLASSIFY_NCLASSES 5

struct classify;

/* What is known about one failure. Everything is borrowed. */
struct classify_input {
	const char *text;	/* the error message, `len` bytes; NULL only with 0 */
	size_t len;
	int status;		/* HTTP status, 0 when unknown */
	const char *body;	/* the raw response body, `body_len` bytes, or NULL */
	size_t body_len;
	const json_t *headers;	/* object: header name (any case) → string, or NULL */
	int64_t now_ms;		/* epoch ms, 0 when unknown */
};

struct classify_result {
	enum classify_verdict verdict;
	bool overload;		/* only on CLASSIFY_RETRYABLE */
	int64_t hint_ms;	/* the server's stated wait (any verdict), -1 none */
	/* The rule that decided: "http-status:429", "anthropic-type:overloaded_error",
	 * "text:usageLimitPatterns[4]", "settings:retryablePatterns[0]",
	 * "long-wait>=900000ms:http-status:429", "default", ... */
	char rule[96];
};

/* The five settings lists, empty, as a new reference:
 * {"retryablePatterns":[], "nonRetryablePatterns":[],
 *  "contextOverflowPatterns":[], "usageLimitPatterns":[], "overloadPatterns":[]}.
 * The built-in patterns are not settings; these lists only extend them.
 * core/builtins.c hands this object to settings as the built-in "retry"
 * layer. */
json_t *classify_defaults(void);

/* Compiles the built-in patterns and the five lists of `retry` (borrowed;
 * the settings' "retry" object, may be NULL; a missing list is empty).
 * Returns NULL and fills err with e.g.
 * "retry.retryablePatterns[2] \"(oops\": missing closing parenthesis at offset 5"
 * when a pattern does not compile or a list is not an array of strings. */
struct classify *classify_new(const json_t *retry, char *err, size_t errlen);
/* Classifiers are shared by reference (a running chain keeps the one its
 * prompt was accepted with): classify_ref adds one, classify_free drops one
 * and frees with the last. */
struct classify *classify_ref(struct classify *self);
void classify_free(struct classify *self);

/* Decides `in` into `out` (the table above). The first decision of the
 * process compiles the built-in patterns (shared by every classifier, freed
 * with the last one) and this classifier's match block; after that it
 * allocates only to parse a body that is a JSON object (step 1b). Not
 * reentrant: a classifier is for one thread. */
void classify_decide(struct classify *self, const struct classify_input *in,
		     struct classify_result *out);

/* The verdict of classify_decide for a message alone (borrowed, `len` bytes,
 * need not be NUL-terminated). */
enum classify_verdict classify_error(struct classify *self, const char *message, size_t len);
/* classify_error(...) == CLASSIFY_USAGE_LIMIT. */
bool classify_is_usage_limit(struct classify *self, const char *message, size_t len);
/* The model is overloaded (what retry.fallbackAfterConsecutive counts): the
 * `overload` of classify_decide for the message alone. */
bool classify_is_overload(struct classify *self, const char *message, size_t len);

/* classify_error's answer and `retryd --classify`'s output, as a new
 * reference: {"errorClass", "overload", "hintMs": int|null, "rule"}. */
json_t *classify_result_json(const struct classify_result *r);

/* "retryable", "not-retryable", "context-overflow", "usage-limit", "unknown". */
const char *classify_verdict_name(enum classify_verdict verdict);
/* The protocol's errorClass: "retryable", "non_retryable",
 * "context_overflow", "usage_limit". */
const char *classify_class_name(enum classify_verdict verdict);

#endif

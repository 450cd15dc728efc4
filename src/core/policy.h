/* policy — the retry policy a prompt runs on, snapshotted at acceptance.
 *
 * A snapshot is the daemon's "retry" settings with the prompt's own "retry"
 * object merged over them, resolved (a schedule without an explicit
 * maxRetries sets it to the schedule's length) and checked (types, ranges,
 * and that every pattern compiles). Later settings changes do not reach a
 * running chain; set_auto_retry is the one exception, handled by the session. */
#ifndef RETRYD_POLICY_H
#define RETRYD_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/classify.h"
#include "provider/provider.h"
#include "core/retry.h"
#include "core/settings.h"

struct policy {
	json_t *json;              /* owned: the resolved retry settings */
	struct retry_policy retry;
	struct classify *classify; /* owned when the patterns differ from the daemon's, else NULL */
	unsigned auto_retry_gen;   /* the session's set_auto_retry count when it was accepted */
};

/* The resolved policy for settings (borrowed) plus override (borrowed, may
 * be NULL): a new reference, or NULL with err naming the key and why —
 * "retry.foo is not a retry setting", "retry.maxRetries must be ...",
 * "retry.retryablePatterns[0] \"(x\": missing closing parenthesis at offset 2". */
json_t *policy_resolve(const struct settings *settings, const json_t *override,
		       char *err, size_t errlen);

/* Loads a resolved policy (borrowed; a reference is kept). `daemon_retry`
 * (borrowed) is the settings' retry object: when the pattern lists equal
 * its own, the daemon's classifier (borrowed) is shared rather than compiled
 * again. Returns 0, or -1 with err. */
int policy_load(struct policy *self, json_t *resolved, const json_t *daemon_retry,
		struct classify *daemon_classify, char *err, size_t errlen);
void policy_release(struct policy *self);

/* A prompt's own retry object may not carry daemon-wide keys (budget). */
int policy_check_prompt_override(const json_t *override, char *err, size_t errlen);

/* The classifier to use: the snapshot's, else `fallback` (both borrowed). */
struct classify *policy_classifier(const struct policy *self, struct classify *fallback);

/* What a prompt accepted now runs on: policy_resolve() of its own retry
 * object (borrowed, may be NULL), which may not carry daemon-wide keys. A
 * new reference, or NULL with err. */
json_t *policy_for_prompt(const struct settings *settings, const json_t *override,
			  char *err, size_t errlen);

/* A new chain adopts the snapshot its prompt was accepted with (resolved:
 * borrowed, a reference is kept), taken when the session's set_auto_retry
 * count was `auto_retry_gen`. The snapshot was checked at acceptance, so only
 * memory can fail here: the chain then runs on the default policy. */
void policy_adopt(struct policy *self, json_t *resolved, unsigned auto_retry_gen,
		  const struct settings *settings, struct classify *daemon_classify);

/* The chain's retry policy: the snapshot, except that a set_auto_retry
 * after it was taken (the count differs from `auto_retry_gen`) still turns
 * retrying off (or on) at the next failure. */
struct retry_policy policy_current(const struct policy *self, unsigned auto_retry_gen,
				   const struct settings *settings);

/* What a failed attempt's error means under a chain's policy, decided once. */
struct policy_verdict {
	const char *error;  /* the message's errorMessage: the error, or `owned` */
	bool failed;        /* the attempt ended with an error to classify */
	enum classify_verdict verdict; /* when failed */
	char rule[96];      /* when failed: the rule that decided (classify.h) */
	bool retryable;     /* worth a retry (or a switch), before retry_decide's limits */
	bool usage_limit;   /* a spent quota: switch credential or model, else stop */
	bool overload;      /* the model or a shared pool is saturated */
	int64_t hint_ms;    /* the server's wait, or -1 */
	const char *hint_source; /* where hint_ms came from, for the log: "header",
				  * "text" (the message or body), "provider"; or NULL */
	char *owned;        /* owned: the error saying why it is not retried, or NULL */
};

/* Classifies the attempt's failure (r, borrowed: its error text and the
 * typed facts: status, body, headers) with the snapshot's classifier, else
 * daemon_classify (borrowed). r->next CANNOT (r->next_why says why) means
 * no next attempt could go on: with retrying on, a retryable error is then
 * final and its text says why. The wait is the provider's r->hint_ms, else
 * the classifier's (dates against now_ms). Release with
 * policy_verdict_release(). */
void policy_judge(const struct policy *self, struct classify *daemon_classify,
		  const struct provider_result *r, bool enabled, int64_t now_ms,
		  struct policy_verdict *v);
/* The verdict becomes final: not retried, and the error says why ("<error>
 * (<why>)"). */
void policy_verdict_stop(struct policy_verdict *v, const char *why);
/* A spent quota with nothing to switch to: final, and the error says when
 * the quota comes back if the server said ("(usage limit: resets in 4h12m)"). */
void policy_verdict_stop_usage(struct policy_verdict *v);
void policy_verdict_release(struct policy_verdict *v);

/* A number of the snapshot; `fallback` when absent. */
int64_t policy_int(const struct policy *self, const char *key);
/* A string of the snapshot (borrowed), or NULL. */
const char *policy_string(const struct policy *self, const char *key);

/* set_retry_policy: checks `changes` (borrowed; retry keys without the
 * "retry." prefix) as a whole against the settings before anything changes,
 * then writes each key: to the settings file (persist) or as an override
 * for this process. Returns the daemon's new classifier (new reference) and
 * *data (new reference: {"policy": the policy now, "persisted"[, "warning":
 * why a key could not be saved; it applies all the same]}), or NULL with err. */
struct classify *policy_apply(struct settings *settings, const json_t *changes, bool persist,
			      json_t **data, char *err, size_t errlen);

/* set_auto_retry: saves retry.enabled (persist), or sets it for this
 * process only, like a --set (!persist); it applies to this process even
 * when the file cannot be written. Returns NULL when saved, {"persisted":
 * false} for this process only, or {"persisted":false, "warning"} when the
 * file could not be written (new reference; err holds the warning too). */
json_t *policy_set_enabled(struct settings *settings, bool enabled, bool persist, char *err,
			   size_t errlen);

#endif

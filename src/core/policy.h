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
#include <stddef.h>

#include "core/classify.h"
#include "core/retry.h"
#include "core/settings.h"

struct policy {
	json_t *json;              /* owned: the resolved retry settings */
	struct retry_policy retry;
	struct classify *classify; /* owned when the patterns differ from the daemon's, else NULL */
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

/* The classifier to use: the snapshot's, else `fallback`. */
struct classify *policy_classifier(const struct policy *self, struct classify *fallback);

#endif

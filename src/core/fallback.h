/* fallback — which credential and which model the next attempt uses.
 *
 * After a transient failure it plans a switch: a usage limit marks the
 * credential exhausted (until the server's hint, else usageLimitCooldownMs)
 * and readies the next available one; failing that, or after
 * retry.fallbackAfterConsecutive overloads in a row, it readies the first
 * model of [primary, fallbackModels...] that is not the current one and not
 * resting, and rests the current one (fallbackCooldownMs, or the usage
 * limit's wait). The switch is made only if the retry happens. The primary
 * model comes back when a chain starts after its rest is over, so one chain
 * never flips between models. Pure: times are passed in; each switch made is
 * answered with its retry_fallback_applied event.
 *
 * It also describes the models to clients (pi's Model objects, for
 * get_state, set_model and get_available_models): the provider's list, and
 * the model in use even when the list does not name it. */
#ifndef RETRYD_FALLBACK_H
#define RETRYD_FALLBACK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/authstore.h"
#include "core/policy.h"
#include "core/retry.h"
#include "provider/provider.h"

struct fallback {
	struct authstore auth;
	char *model;       /* owned: the model attempts use */
	char *primary;     /* owned: the model chosen by --model / set_model */
	json_t *cooldown;  /* owned: model id -> wall ms until it may be used again */
	int overloads;     /* consecutive overload errors on the current model */
	json_t *model_json; /* owned: fallback_model_json()'s answer, or NULL */
};

struct fallback_plan {
	enum retry_switch kind;
	int credential;      /* RETRY_SWITCH_CREDENTIAL: its index */
	const char *model;   /* RETRY_SWITCH_MODEL: borrowed from the policy or self */
	const char *reason;  /* "usage-limit" or "overloaded"; NULL for a credential: "usage-limit" */
};

/* credentials: borrowed array of names (may be NULL); model: borrowed
 * (copied), the primary. Returns 0, or -1 when memory ran out. */
int fallback_init(struct fallback *self, const json_t *credentials, const char *model);
void fallback_release(struct fallback *self);

/* The credential in use (borrowed), or NULL when the provider has none. */
const char *fallback_credential(const struct fallback *self);

/* set_model: model (borrowed, copied) is the new primary and in use; the
 * rests and the overload count start over. Returns 0, or -1 when memory ran
 * out (then nothing changed). */
int fallback_set_primary(struct fallback *self, const char *model);
/* set_model as asked for: the model must be provider's (borrowed) and
 * listed by it, or be the one in use. Returns 0, or -1 with err ("Model not
 * found: p/m ..."; nothing changed then). */
int fallback_select(struct fallback *self, const struct provider *provider,
		    const char *provider_name, const char *model, char *err, size_t errlen);

/* The Model object of the model in use (a new reference to an object kept
 * until the model changes: callers must not change it). provider: borrowed. */
json_t *fallback_model_json(struct fallback *self, const struct provider *provider);
/* {"models":[...]}: the provider's models, led by the one in use when the
 * list does not name it. New reference. */
json_t *fallback_models(struct fallback *self, const struct provider *provider);

/* At a chain's start: the primary model comes back once its rest is over.
 * Returns whether it did; *event is then its event (new reference; NULL
 * when memory ran out). */
bool fallback_revert_if_rested(struct fallback *self, int64_t now_ms, json_t **event);

/* After a transient failure while retrying is on (policy: borrowed, the
 * chain's; usage_limit / overload: the error's classification; hint_ms: the
 * server's wait or -1). Fills *plan; nothing is switched yet. */
void fallback_plan(struct fallback *self, const struct policy *policy, bool usage_limit,
		   bool overload, int64_t hint_ms, int64_t now_ms, struct fallback_plan *plan);

/* Makes the planned switch. Returns whether one was made; *event is then
 * its event (new reference; NULL when memory ran out). */
bool fallback_apply(struct fallback *self, const struct fallback_plan *plan, json_t **event);

/* An attempt succeeded: the overload count starts over. */
void fallback_succeeded(struct fallback *self);

#endif

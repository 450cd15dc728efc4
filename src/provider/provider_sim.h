/* provider_sim — the built-in scripted provider (no network, no keys).
 *
 * A plan is an array of steps, each used by the next attempt, across
 * prompts: {"text": T} streams T and stops; {"error": E} fails at once with
 * E; {"text": T, "error": E} streams T then fails; {"hang": true} never
 * finishes until aborted; "delayMs" waits before the step; "retryAfterMs"
 * reports a structured server hint with an error. With the plan used up an
 * attempt succeeds, echoing the last user message's text. Text streams one
 * word per text_delta, the whitespace leading the following word. */
#ifndef RETRYD_PROVIDER_SIM_H
#define RETRYD_PROVIDER_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "provider/provider.h"

/* Checks a plan (borrowed). Returns 0, or -1 with err naming the step and
 * key: "sim.plan[1]: \"error\" must be a string". */
int provider_sim_check_plan(const json_t *plan, char *err, size_t errlen);

/* plan: borrowed (copied); must have passed the check. clock: borrowed.
 * models, credentials: borrowed (copied): sim.models and sim.credentials. */
struct provider *provider_sim_new(struct clock *clock, const json_t *plan, int64_t chunk_delay_ms,
				  const json_t *models, const json_t *credentials);

#endif

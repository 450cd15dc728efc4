/* fleet_hold — a fleet hold in words: the fleet_wait event that announces
 * each hold (how long, why, who caused it), and the sentence that ends a
 * prompt when a shared server block is longer than the waiter's own
 * retry.maxDelayMs. Pure: the answer and the time in, words out. */
#ifndef RETRYD_FLEET_HOLD_H
#define RETRYD_FLEET_HOLD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/fleet.h"

/* fleet_wait for the answer a (borrowed), whose wait_ms > 0; alone: the
 * daemon shares nothing (fleet.mode "process"), so any block is its own;
 * now: wall ms. New reference (NULL: out of memory). */
json_t *fleet_hold_event(const struct fleet_answer *a, bool alone, int64_t now);

/* "the provider asked another retryd of yours to wait 600 s (fleet: <scope>,
 * seen 14 s ago); exceeds retry.maxDelayMs 1000; retryctl fleet clear drops
 * it" into out. left: what remains of the block (named when the record does
 * not know what the server asked). */
void fleet_hold_refusal(const struct fleet_answer *a, bool alone, int64_t left,
			int64_t max_delay, int64_t now, char *out, size_t cap);

/* Why a prompt is not sent when the fleet knows every credential of
 * provider (borrowed) spent (a->cred -1): "Usage limit reached for every
 * credential of P (shared by the fleet; resets in 4h12m)", or, while the
 * soonest is out on another daemon's probe, that the fleet waits for its
 * answer. Into out; now: wall ms. */
void fleet_hold_spent(const struct fleet_answer *a, const char *provider, int64_t now,
		      char *out, size_t cap);

#endif

/* fleet_hold — a hold in words; see fleet_hold.h. */
#include "core/fleet_hold.h"

#include <stdio.h>

#include "base/hint.h"
#include "base/number.h"
#include "proto/event.h"

/* Who the server told to wait, in the waiter's words. */
static const char *teller(const struct fleet_answer *a, bool alone)
{
	if (a->block_mine || alone)
		return "this retryd";
	/* A record written before it named its teller. */
	return a->block_member != 0 ? "another retryd of yours" : "a retryd of yours";
}

/* What the server said, "429 retry-after 8s"; NULL when the record does
 * not know. */
static const char *hint_text(const struct fleet_answer *a, char *out, size_t cap)
{
	char wait[32];

	if (a->block_asked <= 0)
		return NULL;
	hint_format(a->block_asked, wait, sizeof(wait));
	if (a->block_status > 0)
		snprintf(out, cap, "%lld retry-after %s", (long long)a->block_status, wait);
	else
		snprintf(out, cap, "retry-after %s", wait);
	return out;
}

/* What holds an attempt, by reason, when no server said it. */
static const struct {
	enum fleet_reason reason;
	const char *cause;
} causes[] = {
	{ FLEET_PACING, "the fleet paces its requests at the provider's rate" },
	{ FLEET_BUDGET, "the fleet's retry budget is spent: one retry at a time" },
	{ FLEET_CONCURRENCY, "every fleet.concurrency slot is taken" },
	{ FLEET_PROBE, "the provider fails for every retryd of yours: one probe at a time" },
};

json_t *fleet_hold_event(const struct fleet_answer *a, bool alone, int64_t now)
{
	char hint[64], cause[160];
	struct event_hold h = { .delay_ms = a->wait_ms, .reason = fleet_reason_name(a->reason),
				.scope = a->scope, .cause = "the fleet holds it", .age_ms = -1,
				.by_this = -1 };

	for (size_t i = 0; i < sizeof(causes) / sizeof(causes[0]); i++)
		if (causes[i].reason == a->reason)
			h.cause = causes[i].cause;
	if (a->reason == FLEET_SERVER_BLOCK) {
		h.hint = hint_text(a, hint, sizeof(hint));
		if (a->block_seen > 0)
			h.age_ms = now > a->block_seen ? now - a->block_seen : 0;
		if (a->block_member != 0 || alone)
			h.by_this = a->block_mine || alone;
		snprintf(cause, sizeof(cause), "%s %s%s", teller(a, alone),
			 h.hint != NULL ? "got " : "was asked to wait", h.hint != NULL ? h.hint : "");
		h.cause = cause;
	}
	return event_fleet_wait(&h);
}

void fleet_hold_refusal(const struct fleet_answer *a, bool alone, int64_t left,
			int64_t max_delay, int64_t now, char *out, size_t cap)
{
	/* Read from another daemon's record: bounded before any sum. */
	int64_t asked = number_clamp(a->block_asked > 0 ? a->block_asked : left), age = 0;
	char wait[32], seen[48] = "";

	if (a->block_seen > 0 && a->block_seen <= now)
		age = now - a->block_seen;

	/* Whole seconds, as a Retry-After says them; tenths under ten. */
	if (asked % 1000 == 0 || asked >= 10000)
		snprintf(wait, sizeof(wait), "%lld s", (long long)((asked + 999) / 1000));
	else
		snprintf(wait, sizeof(wait), "%lld.%lld s", (long long)(asked / 1000),
			 (long long)(asked % 1000 / 100));
	if (a->block_seen > 0 && age < 1000)
		snprintf(seen, sizeof(seen), ", seen %lld ms ago", (long long)(age > 0 ? age : 0));
	else if (a->block_seen > 0)
		snprintf(seen, sizeof(seen), ", seen %lld s ago", (long long)(age / 1000));
	snprintf(out, cap,
		 "the provider asked %s to wait %s (fleet: %s%s); exceeds retry.maxDelayMs %lld; "
		 "retryctl fleet clear drops it", teller(a, alone), wait, a->scope, seen,
		 (long long)max_delay);
}

void fleet_hold_spent(const struct fleet_answer *a, const char *provider, int64_t now,
		      char *out, size_t cap)
{
	char left[64];

	hint_format(a->cred_until - now, left, sizeof(left));
	if (a->cred_probing)
		snprintf(out, cap,
			 "Usage limit reached for every credential of %s (shared by the fleet); "
			 "another retryd of yours is checking whether its reset has come (its "
			 "answer within %s)",
			 provider, left);
	else
		snprintf(out, cap,
			 "Usage limit reached for every credential of %s (shared by the fleet; "
			 "resets in %s)",
			 provider, left);
}

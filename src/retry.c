#include "retry.h"

#include <stddef.h>

int64_t retry_backoff_ms(const struct retry_policy *policy, int attempt)
{
	int64_t d = policy->base_delay_ms;

	for (int i = 1; i < attempt; i++) {
		if (d > INT64_MAX / 2)
			return INT64_MAX;
		d *= 2;
	}
	return d;
}

static struct retry_decision stop(struct retry_chain *chain, int end_attempt, const char *error)
{
	struct retry_decision d = { .action = RETRY_ACT_STOP };

	if (chain->attempt > 0) {
		d.end = true;
		d.end_success = false;
		d.end_attempt = end_attempt;
		d.final_error = error;
	}
	chain->attempt = 0;
	return d;
}

struct retry_decision retry_decide(const struct retry_policy *policy, struct retry_chain *chain,
				   const struct retry_outcome *outcome, uint64_t now_ms)
{
	struct retry_decision d = { .action = RETRY_ACT_DONE };

	(void)now_ms;
	if (outcome->failure == RETRY_OK) {
		if (chain->attempt > 0) {
			d.end = true;
			d.end_success = true;
			d.end_attempt = chain->attempt;
		}
		chain->attempt = 0;
		return d;
	}
	if (outcome->failure == RETRY_PERMANENT || !policy->enabled)
		return stop(chain, chain->attempt, outcome->error_message);

	if (chain->attempt + 1 > policy->max_retries) {
		/* The end event names the last retry made, not the refused one;
		 * with maxRetries 0 no chain was opened, so none is closed. */
		return stop(chain, chain->attempt, outcome->error_message);
	}
	chain->attempt++;
	d.action = RETRY_ACT_WAIT;
	d.attempt = chain->attempt;
	d.max_attempts = policy->max_retries;
	d.delay_ms = outcome->switched_credential ? 0 : retry_backoff_ms(policy, chain->attempt);
	return d;
}

struct retry_decision retry_cancel(struct retry_chain *chain)
{
	return stop(chain, chain->attempt, RETRY_CANCELLED);
}

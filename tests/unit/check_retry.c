#include <check.h>
#include <string.h>

#include "core/retry.h"
#include "core/settings.h"

Suite *retry_suite(void);

static struct retry_policy seed;

static void setup(void)
{
	retry_policy_default(&seed);
}

static struct retry_outcome transient(const char *msg)
{
	struct retry_outcome o = { .failure = RETRY_TRANSIENT, .error_message = msg, .hint_ms = -1 };
	return o;
}

static const struct retry_outcome ok = { .failure = RETRY_OK, .hint_ms = -1 };

/* retry_decide without a budget, returning the decision (messages here are
 * never owned, except where a test releases them). */
static struct retry_decision decide(const struct retry_policy *p, struct retry_chain *c,
				    const struct retry_outcome *o, uint64_t now)
{
	struct retry_decision d;

	retry_decide(p, c, NULL, o, now, &d);
	return d;
}

static struct retry_decision cancel(struct retry_chain *c)
{
	struct retry_decision d;

	retry_cancel(c, &d);
	return d;
}

START_TEST(test_delays_double_from_base_2000_4000_8000)
{
	struct retry_chain c = { 0 };
	struct retry_outcome o = transient("503 Service Unavailable");
	int64_t want[] = { 2000, 4000, 8000 };

	for (int i = 0; i < 3; i++) {
		struct retry_decision d = decide(&seed, &c, &o, 0);

		ck_assert_int_eq(d.action, RETRY_ACT_WAIT);
		ck_assert_int_eq(d.attempt, i + 1);
		ck_assert_int_eq(d.max_attempts, 3);
		ck_assert_int_eq(d.delay_ms, want[i]);
		ck_assert(!d.end);
	}
}
END_TEST

START_TEST(test_a_park_opens_the_chain_once_and_costs_no_retry_after)
{
	struct retry_chain c = { 0 };
	struct retry_outcome o = transient("503 Service Unavailable");
	struct retry_decision d;

	retry_park(&seed, &c, 3600000, &d);
	ck_assert_int_eq(d.action, RETRY_ACT_WAIT);
	ck_assert_int_eq(d.reason, RETRY_REASON_USAGE_RESET);
	ck_assert_str_eq(retry_reason_name(d.reason), "usage-reset");
	ck_assert_int_eq(d.delay_ms, 3600000);
	ck_assert_int_eq(d.attempt, 1);
	retry_park(&seed, &c, 60000, &d);
	ck_assert_int_eq(d.attempt, 1);
	/* The retries left are the policy's less the one the park opened. */
	ck_assert_int_eq(decide(&seed, &c, &o, 0).attempt, 2);
	ck_assert_int_eq(decide(&seed, &c, &o, 0).attempt, 3);
	ck_assert_int_eq(decide(&seed, &c, &o, 0).action, RETRY_ACT_STOP);
}
END_TEST

START_TEST(test_max_exceeded_ends_with_last_retry_number_and_resets)
{
	struct retry_chain c = { 0 };
	struct retry_outcome o = transient("503 Service Unavailable");
	struct retry_decision d;

	for (int i = 0; i < 3; i++)
		decide(&seed, &c, &o, 0);
	d = decide(&seed, &c, &o, 0);
	ck_assert_int_eq(d.action, RETRY_ACT_STOP);
	ck_assert(d.end);
	ck_assert(!d.end_success);
	ck_assert_int_eq(d.end_attempt, 3);
	ck_assert_str_eq(d.final_error, "503 Service Unavailable");
	ck_assert_int_eq(c.attempt, 0);
}
END_TEST

START_TEST(test_success_after_retries_ends_chain_with_success)
{
	struct retry_chain c = { 0 };
	struct retry_outcome o = transient("overloaded");
	struct retry_decision d;

	decide(&seed, &c, &o, 0);
	decide(&seed, &c, &o, 0);
	d = decide(&seed, &c, &ok, 0);
	ck_assert_int_eq(d.action, RETRY_ACT_DONE);
	ck_assert(d.end);
	ck_assert(d.end_success);
	ck_assert_int_eq(d.end_attempt, 2);
	ck_assert_ptr_null(d.final_error);
	ck_assert_int_eq(c.attempt, 0);
}
END_TEST

START_TEST(test_first_try_success_emits_no_retry_end)
{
	struct retry_chain c = { 0 };
	struct retry_decision d = decide(&seed, &c, &ok, 0);

	ck_assert_int_eq(d.action, RETRY_ACT_DONE);
	ck_assert(!d.end);
}
END_TEST

START_TEST(test_permanent_failure_without_chain_emits_nothing)
{
	struct retry_chain c = { 0 };
	struct retry_outcome o = { .failure = RETRY_PERMANENT, .error_message = "401 Invalid API key", .hint_ms = -1 };
	struct retry_decision d = decide(&seed, &c, &o, 0);

	ck_assert_int_eq(d.action, RETRY_ACT_STOP);
	ck_assert(!d.end);
}
END_TEST

START_TEST(test_permanent_failure_in_open_chain_closes_it_once)
{
	struct retry_chain c = { 0 };
	struct retry_outcome t = transient("503");
	struct retry_outcome p = { .failure = RETRY_PERMANENT, .error_message = "prompt is too long", .hint_ms = -1 };
	struct retry_decision d;

	decide(&seed, &c, &t, 0);
	d = decide(&seed, &c, &p, 0);
	ck_assert_int_eq(d.action, RETRY_ACT_STOP);
	ck_assert(d.end);
	ck_assert_int_eq(d.end_attempt, 1);
	ck_assert_str_eq(d.final_error, "prompt is too long");
	ck_assert_int_eq(c.attempt, 0);
}
END_TEST

START_TEST(test_disabled_mid_chain_closes_chain_at_next_failure)
{
	struct retry_chain c = { 0 };
	struct retry_policy off = seed;
	struct retry_outcome t = transient("503");
	struct retry_decision d;

	decide(&seed, &c, &t, 0);
	decide(&seed, &c, &t, 0);
	off.enabled = false;
	d = decide(&off, &c, &t, 0);
	ck_assert_int_eq(d.action, RETRY_ACT_STOP);
	ck_assert(d.end);
	ck_assert(!d.end_success);
	ck_assert_int_eq(d.end_attempt, 2);
}
END_TEST

START_TEST(test_disabled_without_chain_just_stops)
{
	struct retry_chain c = { 0 };
	struct retry_policy off = seed;
	struct retry_outcome t = transient("503");
	struct retry_decision d;

	off.enabled = false;
	d = decide(&off, &c, &t, 0);
	ck_assert_int_eq(d.action, RETRY_ACT_STOP);
	ck_assert(!d.end);
}
END_TEST

START_TEST(test_zero_max_retries_never_opens_a_chain)
{
	struct retry_chain c = { 0 };
	struct retry_policy none = seed;
	struct retry_outcome t = transient("503");
	struct retry_decision d;

	none.max_retries = 0;
	d = decide(&none, &c, &t, 0);
	ck_assert_int_eq(d.action, RETRY_ACT_STOP);
	ck_assert(!d.end);
}
END_TEST

START_TEST(test_cancel_open_chain_says_retry_cancelled)
{
	struct retry_chain c = { 0 };
	struct retry_outcome t = transient("503");
	struct retry_decision d;

	decide(&seed, &c, &t, 0);
	d = cancel(&c);
	ck_assert(d.end);
	ck_assert(!d.end_success);
	ck_assert_int_eq(d.end_attempt, 1);
	ck_assert_str_eq(d.final_error, "Retry cancelled");
	ck_assert_int_eq(c.attempt, 0);
	d = cancel(&c);
	ck_assert(!d.end);
}
END_TEST

START_TEST(test_credential_switch_retries_without_delay)
{
	struct retry_chain c = { 0 };
	struct retry_outcome t = transient("usage limit reached");
	struct retry_decision d;

	t.switched = RETRY_SWITCH_CREDENTIAL;
	d = decide(&seed, &c, &t, 0);
	ck_assert_int_eq(d.action, RETRY_ACT_WAIT);
	ck_assert_int_eq(d.delay_ms, 0);
	ck_assert_int_eq(d.attempt, 1);
}
END_TEST

START_TEST(test_backoff_saturates_instead_of_overflowing)
{
	struct retry_policy big = seed;

	big.base_delay_ms = 86400000;

	ck_assert_int_eq(retry_backoff_ms(&big, 1), 86400000);
	ck_assert_int_eq(retry_backoff_ms(&big, 2), 172800000);
	ck_assert_int_eq(retry_backoff_ms(&big, 200), INT64_MAX);
}
END_TEST

static struct retry_outcome hinted(const char *msg, int64_t hint)
{
	struct retry_outcome o = transient(msg);

	o.hint_ms = hint;
	return o;
}

START_TEST(test_server_hint_longer_than_backoff_sets_the_delay)
{
	struct retry_chain c = { 0 };
	struct retry_outcome o = hinted("429 Rate limit reached", 5000);
	struct retry_decision d = decide(&seed, &c, &o, 0);

	ck_assert_int_eq(d.action, RETRY_ACT_WAIT);
	ck_assert_int_eq(d.delay_ms, 5000);
	ck_assert_int_eq(d.reason, RETRY_REASON_SERVER_HINT);
	ck_assert_int_eq(d.hint_ms, 5000);
	ck_assert_str_eq(retry_reason_name(d.reason), "server-hint");
}
END_TEST

START_TEST(test_server_hint_shorter_than_backoff_keeps_backoff)
{
	struct retry_chain c = { 0 };
	struct retry_outcome o = hinted("429", 500);
	struct retry_decision d = decide(&seed, &c, &o, 0);

	ck_assert_int_eq(d.delay_ms, 2000);
	ck_assert_int_eq(d.reason, RETRY_REASON_BACKOFF);
	ck_assert_int_eq(d.hint_ms, -1);
}
END_TEST

START_TEST(test_hints_ignored_when_respect_server_hints_is_off)
{
	struct retry_chain c = { 0 };
	struct retry_policy p = seed;
	struct retry_outcome o = hinted("429", 9000000);
	struct retry_decision d;

	p.respect_hints = false;
	d = decide(&p, &c, &o, 0);
	ck_assert_int_eq(d.action, RETRY_ACT_WAIT);
	ck_assert_int_eq(d.delay_ms, 2000);
}
END_TEST

START_TEST(test_hint_above_cap_fails_fast_without_start)
{
	struct retry_chain c = { 0 };
	struct retry_policy p = seed;
	struct retry_outcome o = hinted("429 slow down", 11180000);
	struct retry_decision d;

	p.max_delay_ms = 100;
	retry_decide(&p, &c, NULL, &o, 0, &d);
	ck_assert_int_eq(d.action, RETRY_ACT_STOP);
	ck_assert(d.end);
	ck_assert(!d.end_success);
	ck_assert_int_eq(d.end_attempt, 1);
	ck_assert_str_eq(d.final_error, "Provider requested 11180000ms wait, exceeds retry.maxDelayMs "
			 "(100ms). Original error: 429 slow down");
	ck_assert_int_eq(c.attempt, 0);
	retry_decision_release(&d);
}
END_TEST

START_TEST(test_computed_delay_is_capped_not_failed)
{
	struct retry_chain c = { 0 };
	struct retry_policy p = seed;
	struct retry_outcome o = transient("503");
	struct retry_decision d;

	p.max_retries = 10;
	p.max_delay_ms = 5000;
	for (int i = 0; i < 6; i++)
		d = decide(&p, &c, &o, 0);
	ck_assert_int_eq(d.action, RETRY_ACT_WAIT);
	ck_assert_int_eq(d.delay_ms, 5000);
	p.max_delay_ms = 0; /* no cap */
	d = decide(&p, &c, &o, 0);
	ck_assert_int_eq(d.delay_ms, 2000LL << 6);
}
END_TEST

static void draw_chain(const struct retry_policy *p, int64_t *out, int n)
{
	struct retry_chain c = { 0 };
	struct retry_outcome o = transient("503");

	for (int i = 0; i < n; i++) {
		struct retry_decision d = decide(p, &c, &o, 12345);

		ck_assert_int_eq(d.action, RETRY_ACT_WAIT);
		out[i] = d.delay_ms;
	}
}

START_TEST(test_full_jitter_stays_within_zero_and_nominal)
{
	struct retry_policy p = seed;
	int64_t lo = INT64_MAX, hi = 0;

	p.jitter = RETRY_JITTER_FULL;
	p.max_retries = 3;
	for (uint64_t seed_i = 1; seed_i <= 2000; seed_i++) {
		int64_t got[3];

		p.seeded = true;
		p.jitter_seed = seed_i;
		draw_chain(&p, got, 3);
		for (int k = 0; k < 3; k++) {
			ck_assert_int_ge(got[k], 0);
			ck_assert_int_le(got[k], 2000LL << k);
		}
		lo = got[0] < lo ? got[0] : lo;
		hi = got[0] > hi ? got[0] : hi;
	}
	/* Spread over the range, not stuck at one end. */
	ck_assert_int_lt(lo, 200);
	ck_assert_int_gt(hi, 1800);
}
END_TEST

START_TEST(test_equal_jitter_stays_within_half_and_nominal)
{
	struct retry_policy p = seed;

	p.jitter = RETRY_JITTER_EQUAL;
	for (uint64_t seed_i = 1; seed_i <= 2000; seed_i++) {
		int64_t got[3];

		p.seeded = true;
		p.jitter_seed = seed_i;
		draw_chain(&p, got, 3);
		for (int k = 0; k < 3; k++) {
			ck_assert_int_ge(got[k], (2000LL << k) / 2);
			ck_assert_int_le(got[k], 2000LL << k);
		}
	}
}
END_TEST

START_TEST(test_decorrelated_jitter_stays_within_base_and_three_times_previous)
{
	struct retry_policy p = seed;

	p.jitter = RETRY_JITTER_DECORRELATED;
	p.max_retries = 6;
	p.max_delay_ms = 30000;
	for (uint64_t seed_i = 1; seed_i <= 2000; seed_i++) {
		int64_t got[6], prev = p.base_delay_ms;

		p.seeded = true;
		p.jitter_seed = seed_i;
		draw_chain(&p, got, 6);
		for (int k = 0; k < 6; k++) {
			ck_assert_int_ge(got[k], p.base_delay_ms);
			ck_assert_int_le(got[k], prev * 3 < 30000 ? prev * 3 : 30000);
			prev = got[k];
		}
	}
}
END_TEST

START_TEST(test_seeded_jitter_replays_the_same_delays)
{
	struct retry_policy p = seed;
	int64_t a[3], b[3], other[3];

	p.jitter = RETRY_JITTER_FULL;
	p.seeded = true;
	p.jitter_seed = 42;
	draw_chain(&p, a, 3);
	draw_chain(&p, b, 3);
	ck_assert_mem_eq(a, b, sizeof(a));
	p.jitter_seed = 43;
	draw_chain(&p, other, 3);
	ck_assert(memcmp(a, other, sizeof(a)) != 0);
}
END_TEST

START_TEST(test_schedule_replaces_formula_and_sets_max_retries)
{
	struct retry_policy p;
	struct retry_chain c = { 0 };
	struct retry_outcome o = transient("503");
	struct retry_decision d;
	char err[128];
	json_t *j = json_pack("{s:[i,i,i]}", "schedule", 10000, 20000, 60000);
	int64_t want[] = { 10000, 20000, 60000 };

	ck_assert_int_eq(retry_policy_from_json(&p, j, false, err, sizeof(err)), 0);
	ck_assert_int_eq(p.max_retries, 3);
	p.max_delay_ms = 0;
	for (int i = 0; i < 3; i++) {
		d = decide(&p, &c, &o, 0);
		ck_assert_int_eq(d.delay_ms, want[i]);
	}
	d = decide(&p, &c, &o, 0);
	ck_assert_int_eq(d.action, RETRY_ACT_STOP);
	ck_assert_int_eq(d.end_attempt, 3);
	/* An explicit maxRetries beyond the list repeats its last entry. */
	json_object_set_new(j, "maxRetries", json_integer(5));
	ck_assert_int_eq(retry_policy_from_json(&p, j, true, err, sizeof(err)), 0);
	ck_assert_int_eq(p.max_retries, 5);
	ck_assert_int_eq(retry_backoff_ms(&p, 5), 60000);
	json_decref(j);
}
END_TEST

START_TEST(test_budget_costs_one_per_failure_refunds_ratio_and_throttles_at_half)
{
	struct retry_budget b = { 0 };
	struct retry_chain c = { 0 };
	struct retry_policy p = seed;
	struct retry_outcome o = transient("503 down");
	struct retry_decision d;
	json_t *cfg = json_pack("{s:i, s:f}", "maxTokens", 4, "tokenRatio", 0.5);

	p.max_retries = 100;
	retry_budget_configure(&b, cfg);
	ck_assert(b.enabled);
	ck_assert(b.tokens == 4.0);
	retry_decide(&p, &c, &b, &o, 0, &d);      /* 3 left: retry */
	ck_assert_int_eq(d.action, RETRY_ACT_WAIT);
	ck_assert(b.tokens == 3.0);
	retry_decide(&p, &c, &b, &o, 0, &d);      /* 2 left = max/2: throttled */
	ck_assert_int_eq(d.action, RETRY_ACT_STOP);
	ck_assert(d.end);
	ck_assert_int_eq(d.end_attempt, 1);
	ck_assert_ptr_nonnull(strstr(d.final_error, "Retry budget exhausted"));
	ck_assert(strncmp(d.final_error, "Retry budget exhausted", 22) == 0);
	ck_assert_ptr_nonnull(strstr(d.final_error, "503 down"));
	retry_decision_release(&d);
	ck_assert(b.tokens == 2.0);
	/* Successes refund tokenRatio each, up to the maximum. */
	for (int i = 0; i < 10; i++)
		retry_decide(&p, &c, &b, &ok, 0, &d);
	ck_assert(b.tokens == 4.0);
	/* Same limits again: the tokens are kept; new limits start full. */
	b.tokens = 3.0;
	retry_budget_configure(&b, cfg);
	ck_assert(b.tokens == 3.0);
	json_decref(cfg);
	cfg = json_pack("{s:i, s:f}", "maxTokens", 10, "tokenRatio", 0.1);
	retry_budget_configure(&b, cfg);
	ck_assert(b.tokens == 10.0);
	json_decref(cfg);
	retry_budget_configure(&b, NULL);
	ck_assert(!b.enabled);
}
END_TEST

START_TEST(test_model_switch_retries_without_delay_and_names_reason)
{
	struct retry_chain c = { 0 };
	struct retry_outcome o = transient("overloaded");
	struct retry_decision d;

	o.switched = RETRY_SWITCH_MODEL;
	d = decide(&seed, &c, &o, 0);
	ck_assert_int_eq(d.delay_ms, 0);
	ck_assert_str_eq(retry_reason_name(d.reason), "model-fallback");
}
END_TEST

START_TEST(test_policy_default_is_the_settings_table)
{
	struct retry_policy p;

	retry_policy_default(&p);
	ck_assert(p.enabled == settings_default_bool("retry.enabled"));
	ck_assert_int_eq(p.max_retries, settings_default_int("retry.maxRetries"));
	ck_assert_int_eq(p.base_delay_ms, settings_default_int("retry.baseDelayMs"));
	ck_assert_int_eq(p.max_delay_ms, settings_default_int("retry.maxDelayMs"));
	ck_assert(p.respect_hints == settings_default_bool("retry.respectServerHints"));
	ck_assert_int_eq(p.jitter, RETRY_JITTER_NONE);
	ck_assert(!p.seeded);
	ck_assert_int_eq(p.schedule_len, 0);
	ck_assert_int_eq(p.idle_timeout_ms, settings_default_int("retry.idleTimeoutMs"));
	ck_assert_int_eq(p.fallback_after_consecutive,
			 settings_default_int("retry.fallbackAfterConsecutive"));
	/* The values users were promised. */
	ck_assert(p.enabled && p.respect_hints);
	ck_assert_int_eq(p.max_retries, 3);
	ck_assert_int_eq(p.base_delay_ms, 2000);
	ck_assert_int_eq(p.max_delay_ms, 60000);
	ck_assert_int_eq(p.fallback_after_consecutive, 3);
}
END_TEST

START_TEST(test_policy_from_partial_json_takes_the_rest_from_the_table)
{
	struct retry_policy p, want;
	char err[128];
	json_t *j = json_pack("{s:i}", "baseDelayMs", 10);

	ck_assert_int_eq(retry_policy_from_json(&p, j, false, err, sizeof(err)), 0);
	retry_policy_default(&want);
	want.base_delay_ms = 10;
	ck_assert(memcmp(&p, &want, sizeof(p)) == 0);
	json_decref(j);
}
END_TEST

START_TEST(test_every_jitter_the_settings_accept_is_a_policy)
{
	static const char *const names[] = { "none", "full", "equal", "decorrelated" };
	struct retry_policy p;
	char err[160];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		json_t *j = json_pack("{s:s}", "jitter", names[i]);

		ck_assert_int_eq(settings_check("retry", j, err, sizeof(err)), 0);
		ck_assert_int_eq(retry_policy_from_json(&p, j, true, err, sizeof(err)), 0);
		ck_assert_int_eq(p.jitter, (int)i);
		json_decref(j);
	}
}
END_TEST

START_TEST(test_policy_from_json_that_is_not_an_object_is_an_error)
{
	struct retry_policy p;
	char err[128];
	json_t *j = json_integer(3);

	ck_assert_int_eq(retry_policy_from_json(&p, j, true, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "retry must be an object");
	ck_assert_int_eq(p.max_retries, 3);
	json_decref(j);
}
END_TEST

START_TEST(test_policy_from_json_reads_every_knob)
{
	struct retry_policy p;
	char err[128];
	json_t *j = json_pack("{s:b, s:i, s:i, s:i, s:b, s:s, s:i, s:i, s:i}", "enabled", 0,
			      "maxRetries", 7, "baseDelayMs", 10, "maxDelayMs", -1,
			      "respectServerHints", 0, "jitter", "equal", "jitterSeed", 9,
			      "idleTimeoutMs", 1500, "fallbackAfterConsecutive", 2);

	ck_assert_int_eq(retry_policy_from_json(&p, j, true, err, sizeof(err)), 0);
	ck_assert(!p.enabled);
	ck_assert_int_eq(p.max_retries, 7);
	ck_assert_int_eq(p.base_delay_ms, 10);
	ck_assert_int_eq(p.max_delay_ms, -1);
	ck_assert(!p.respect_hints);
	ck_assert_int_eq(p.jitter, RETRY_JITTER_EQUAL);
	ck_assert(p.seeded);
	ck_assert_int_eq(p.jitter_seed, 9);
	ck_assert_int_eq(p.idle_timeout_ms, 1500);
	ck_assert_int_eq(p.fallback_after_consecutive, 2);
	json_decref(j);
}
END_TEST

START_TEST(test_jitter_is_drawn_within_the_capped_delay)
{
	struct retry_policy p = seed;
	int64_t lo = INT64_MAX;

	p.jitter = RETRY_JITTER_FULL;
	p.base_delay_ms = 1000;
	p.max_delay_ms = 100;
	for (uint64_t seed_i = 1; seed_i <= 500; seed_i++) {
		int64_t got[3];

		p.seeded = true;
		p.jitter_seed = seed_i;
		draw_chain(&p, got, 3);
		for (int k = 0; k < 3; k++) {
			ck_assert_int_le(got[k], 100);
			lo = got[k] < lo ? got[k] : lo;
		}
	}
	/* Still spread, not pinned at the cap. */
	ck_assert_int_lt(lo, 20);
}
END_TEST

Suite *retry_suite(void)
{
	Suite *s = suite_create("retry");
	TCase *tc = tcase_create("policy");

	tcase_add_checked_fixture(tc, setup, NULL);

	tcase_add_test(tc, test_delays_double_from_base_2000_4000_8000);
	tcase_add_test(tc, test_max_exceeded_ends_with_last_retry_number_and_resets);
	tcase_add_test(tc, test_success_after_retries_ends_chain_with_success);
	tcase_add_test(tc, test_first_try_success_emits_no_retry_end);
	tcase_add_test(tc, test_permanent_failure_without_chain_emits_nothing);
	tcase_add_test(tc, test_permanent_failure_in_open_chain_closes_it_once);
	tcase_add_test(tc, test_disabled_mid_chain_closes_chain_at_next_failure);
	tcase_add_test(tc, test_disabled_without_chain_just_stops);
	tcase_add_test(tc, test_zero_max_retries_never_opens_a_chain);
	tcase_add_test(tc, test_cancel_open_chain_says_retry_cancelled);
	tcase_add_test(tc, test_credential_switch_retries_without_delay);
	tcase_add_test(tc, test_backoff_saturates_instead_of_overflowing);
	tcase_add_test(tc, test_server_hint_longer_than_backoff_sets_the_delay);
	tcase_add_test(tc, test_server_hint_shorter_than_backoff_keeps_backoff);
	tcase_add_test(tc, test_hints_ignored_when_respect_server_hints_is_off);
	tcase_add_test(tc, test_hint_above_cap_fails_fast_without_start);
	tcase_add_test(tc, test_computed_delay_is_capped_not_failed);
	tcase_add_test(tc, test_full_jitter_stays_within_zero_and_nominal);
	tcase_add_test(tc, test_equal_jitter_stays_within_half_and_nominal);
	tcase_add_test(tc, test_decorrelated_jitter_stays_within_base_and_three_times_previous);
	tcase_add_test(tc, test_seeded_jitter_replays_the_same_delays);
	tcase_add_test(tc, test_schedule_replaces_formula_and_sets_max_retries);
	tcase_add_test(tc, test_budget_costs_one_per_failure_refunds_ratio_and_throttles_at_half);
	tcase_add_test(tc, test_model_switch_retries_without_delay_and_names_reason);
	tcase_add_test(tc, test_policy_from_json_reads_every_knob);
	tcase_add_test(tc, test_policy_default_is_the_settings_table);
	tcase_add_test(tc, test_policy_from_partial_json_takes_the_rest_from_the_table);
	tcase_add_test(tc, test_every_jitter_the_settings_accept_is_a_policy);
	tcase_add_test(tc, test_policy_from_json_that_is_not_an_object_is_an_error);
	tcase_add_test(tc, test_jitter_is_drawn_within_the_capped_delay);
	tcase_add_test(tc, test_a_park_opens_the_chain_once_and_costs_no_retry_after);
	suite_add_tcase(s, tc);
	return s;
}

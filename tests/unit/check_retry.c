#include <check.h>
#include <string.h>

#include "retry.h"

Suite *retry_suite(void);

static const struct retry_policy seed = { .enabled = true, .max_retries = 3, .base_delay_ms = 2000 };

static struct retry_outcome transient(const char *msg)
{
	struct retry_outcome o = { .failure = RETRY_TRANSIENT, .error_message = msg };
	return o;
}

static const struct retry_outcome ok = { .failure = RETRY_OK };

START_TEST(test_delays_double_from_base_2000_4000_8000)
{
	struct retry_chain c = { 0 };
	struct retry_outcome o = transient("503 Service Unavailable");
	int64_t want[] = { 2000, 4000, 8000 };

	for (int i = 0; i < 3; i++) {
		struct retry_decision d = retry_decide(&seed, &c, &o, 0);

		ck_assert_int_eq(d.action, RETRY_ACT_WAIT);
		ck_assert_int_eq(d.attempt, i + 1);
		ck_assert_int_eq(d.max_attempts, 3);
		ck_assert_int_eq(d.delay_ms, want[i]);
		ck_assert(!d.end);
	}
}
END_TEST

START_TEST(test_max_exceeded_ends_with_last_retry_number_and_resets)
{
	struct retry_chain c = { 0 };
	struct retry_outcome o = transient("503 Service Unavailable");
	struct retry_decision d;

	for (int i = 0; i < 3; i++)
		retry_decide(&seed, &c, &o, 0);
	d = retry_decide(&seed, &c, &o, 0);
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

	retry_decide(&seed, &c, &o, 0);
	retry_decide(&seed, &c, &o, 0);
	d = retry_decide(&seed, &c, &ok, 0);
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
	struct retry_decision d = retry_decide(&seed, &c, &ok, 0);

	ck_assert_int_eq(d.action, RETRY_ACT_DONE);
	ck_assert(!d.end);
}
END_TEST

START_TEST(test_permanent_failure_without_chain_emits_nothing)
{
	struct retry_chain c = { 0 };
	struct retry_outcome o = { .failure = RETRY_PERMANENT, .error_message = "401 Invalid API key" };
	struct retry_decision d = retry_decide(&seed, &c, &o, 0);

	ck_assert_int_eq(d.action, RETRY_ACT_STOP);
	ck_assert(!d.end);
}
END_TEST

START_TEST(test_permanent_failure_in_open_chain_closes_it_once)
{
	struct retry_chain c = { 0 };
	struct retry_outcome t = transient("503");
	struct retry_outcome p = { .failure = RETRY_PERMANENT, .error_message = "prompt is too long" };
	struct retry_decision d;

	retry_decide(&seed, &c, &t, 0);
	d = retry_decide(&seed, &c, &p, 0);
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

	retry_decide(&seed, &c, &t, 0);
	retry_decide(&seed, &c, &t, 0);
	off.enabled = false;
	d = retry_decide(&off, &c, &t, 0);
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
	d = retry_decide(&off, &c, &t, 0);
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
	d = retry_decide(&none, &c, &t, 0);
	ck_assert_int_eq(d.action, RETRY_ACT_STOP);
	ck_assert(!d.end);
}
END_TEST

START_TEST(test_cancel_open_chain_says_retry_cancelled)
{
	struct retry_chain c = { 0 };
	struct retry_outcome t = transient("503");
	struct retry_decision d;

	retry_decide(&seed, &c, &t, 0);
	d = retry_cancel(&c);
	ck_assert(d.end);
	ck_assert(!d.end_success);
	ck_assert_int_eq(d.end_attempt, 1);
	ck_assert_str_eq(d.final_error, "Retry cancelled");
	ck_assert_int_eq(c.attempt, 0);
	d = retry_cancel(&c);
	ck_assert(!d.end);
}
END_TEST

START_TEST(test_credential_switch_retries_without_delay)
{
	struct retry_chain c = { 0 };
	struct retry_outcome t = transient("usage limit reached");
	struct retry_decision d;

	t.switched_credential = true;
	d = retry_decide(&seed, &c, &t, 0);
	ck_assert_int_eq(d.action, RETRY_ACT_WAIT);
	ck_assert_int_eq(d.delay_ms, 0);
	ck_assert_int_eq(d.attempt, 1);
}
END_TEST

START_TEST(test_backoff_saturates_instead_of_overflowing)
{
	struct retry_policy big = { .enabled = true, .max_retries = 1000, .base_delay_ms = 86400000 };

	ck_assert_int_eq(retry_backoff_ms(&big, 1), 86400000);
	ck_assert_int_eq(retry_backoff_ms(&big, 2), 172800000);
	ck_assert_int_eq(retry_backoff_ms(&big, 200), INT64_MAX);
}
END_TEST

Suite *retry_suite(void)
{
	Suite *s = suite_create("retry");
	TCase *tc = tcase_create("policy");

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
	suite_add_tcase(s, tc);
	return s;
}

/* proto/state: get_state's object, key order included (clients diff it). */
#include <check.h>
#include <stdlib.h>

#include "proto/state.h"

Suite *state_suite(void);

START_TEST(test_state_has_pis_fields_then_retryds_in_a_fixed_order)
{
	json_t *policy = json_pack("{s:i}", "maxRetries", 3);
	struct state_view v = {
		.model = json_pack("{s:s}", "id", "sim-1"),
		.streaming = true,
		.steer_all = true,
		.session_id = "sid",
		.message_count = 4,
		.pending_count = 2,
		.auto_retry_enabled = true,
		.retrying = true,
		.retry_attempt = 2,
		.session_file = "/tmp/s.jsonl",
		.retry_policy = policy,
		.retry_budget = json_null(),
	};
	json_t *st = state_json(&v);
	char *s = json_dumps(st, JSON_COMPACT | JSON_PRESERVE_ORDER);

	ck_assert_str_eq(s, "{\"model\":{\"id\":\"sim-1\"},\"thinkingLevel\":\"off\","
			    "\"isStreaming\":true,\"isCompacting\":false,\"steeringMode\":\"all\","
			    "\"followUpMode\":\"one-at-a-time\",\"sessionId\":\"sid\","
			    "\"autoCompactionEnabled\":false,\"messageCount\":4,"
			    "\"pendingMessageCount\":2,\"autoRetryEnabled\":true,\"isRetrying\":true,"
			    "\"retryAttempt\":2,\"isSettled\":false,\"hasPendingAsyncWork\":false,"
			     "\"sessionFile\":\"/tmp/s.jsonl\","
			    "\"retryPolicy\":{\"maxRetries\":3},\"retryBudget\":null}");
	free(s);
	json_decref(st);
	json_decref(policy);
}
END_TEST

START_TEST(test_idle_state_has_a_null_policy_and_no_file_or_name)
{
	struct state_view v = {
		.model = json_object(),
		.session_id = "sid",
		.retry_budget = json_null(),
	};
	json_t *st = state_json(&v);

	ck_assert_ptr_nonnull(st);
	ck_assert(json_is_null(json_object_get(st, "retryPolicy")));
	ck_assert_ptr_null(json_object_get(st, "sessionFile"));
	ck_assert_ptr_null(json_object_get(st, "sessionName"));
	ck_assert(json_is_false(json_object_get(st, "isStreaming")));
	json_decref(st);
}
END_TEST

START_TEST(test_a_member_that_cannot_be_made_fails_the_whole_state)
{
	/* A session id that is not UTF-8: jansson refuses the string. */
	struct state_view v = {
		.model = json_object(),
		.session_id = "\xff",
		.retry_budget = json_null(),
	};

	ck_assert_ptr_null(state_json(&v));
}
END_TEST

Suite *state_suite(void)
{
	Suite *s = suite_create("state");
	TCase *tc = tcase_create("get_state");

	tcase_add_test(tc, test_state_has_pis_fields_then_retryds_in_a_fixed_order);
	tcase_add_test(tc, test_idle_state_has_a_null_policy_and_no_file_or_name);
	tcase_add_test(tc, test_a_member_that_cannot_be_made_fails_the_whole_state);
	suite_add_tcase(s, tc);
	return s;
}

/* Following one prompt's run through its events (src/client/run.c): what
 * retryd_client_prompt_and_wait waits for and returns. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "client/run.h"

Suite *client_run_suite(void);

#define OK_MSG(text) "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"" text \
	"\"}],\"stopReason\":\"stop\"}"
#define ERR_MSG(err) "{\"role\":\"assistant\",\"content\":[],\"stopReason\":\"error\"," \
	"\"errorMessage\":\"" err "\"}"
#define ABORTED_MSG "{\"role\":\"assistant\",\"content\":[],\"stopReason\":\"aborted\"," \
	"\"errorMessage\":\"Request was aborted\"}"
#define USER_MSG "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}"

/* Feeds lines (events) in order; returns the index of the event that ended
 * the run, or -1. */
static int feed(struct retryd_run *run, const char *const *events, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_error_t e;
		json_t *ev = json_loads(events[i], 0, &e);
		bool done;

		ck_assert_msg(ev != NULL, "bad test event %s: %s", events[i], e.text);
		done = retryd_run_feed(run, json_string_value(json_object_get(ev, "type")), ev);
		json_decref(ev);
		if (done)
			return (int)i;
	}
	return -1;
}

START_TEST(test_run_ends_only_at_agent_end_after_the_retry_chain)
{
	static const char *const ev[] = {
		"{\"type\":\"agent_start\"}",
		"{\"type\":\"turn_start\"}",
		"{\"type\":\"message_end\",\"message\":" USER_MSG "}",
		"{\"type\":\"message_end\",\"message\":" ERR_MSG("503") "}",
		"{\"type\":\"turn_end\"}",
		"{\"type\":\"auto_retry_start\",\"attempt\":1,\"maxAttempts\":3,\"delayMs\":10}",
		"{\"type\":\"turn_start\"}",
		"{\"type\":\"message_end\",\"message\":" ERR_MSG("overloaded") "}",
		"{\"type\":\"turn_end\"}",
		"{\"type\":\"auto_retry_start\",\"attempt\":2,\"maxAttempts\":3,\"delayMs\":20}",
		"{\"type\":\"turn_start\"}",
		"{\"type\":\"message_end\",\"message\":" OK_MSG("final") "}",
		"{\"type\":\"auto_retry_end\",\"success\":true,\"attempt\":2}",
		"{\"type\":\"turn_end\"}",
		"{\"type\":\"agent_end\",\"messages\":[" USER_MSG "," OK_MSG("final") "]}",
	};
	struct retryd_run run;
	struct retryd_run_result r;

	retryd_run_init(&run);
	retryd_run_accept(&run);
	ck_assert_int_eq(feed(&run, ev, sizeof(ev) / sizeof(ev[0])), 14);
	retryd_run_result(&run, &r);
	ck_assert(r.answered);
	ck_assert(!r.cancelled);
	ck_assert_str_eq(r.text, "final");
	ck_assert_str_eq(r.stop_reason, "stop");
	ck_assert_ptr_null(r.error);
	ck_assert_int_eq(r.retries, 2);
	ck_assert_ptr_nonnull(r.agent_end);
	retryd_run_result_release(&r);
	retryd_run_release(&run);
}
END_TEST

START_TEST(test_events_before_acceptance_belong_to_an_earlier_run)
{
	static const char *const ev[] = {
		"{\"type\":\"agent_end\",\"messages\":[" OK_MSG("old") "]}",
	};
	struct retryd_run run;

	retryd_run_init(&run);
	ck_assert_int_eq(feed(&run, ev, 1), -1);
	retryd_run_accept(&run);
	ck_assert_int_eq(feed(&run, ev, 1), 0);
	retryd_run_release(&run);
}
END_TEST

START_TEST(test_exhausted_chain_reports_final_error_and_attempts)
{
	static const char *const ev[] = {
		"{\"type\":\"agent_start\"}",
		"{\"type\":\"message_end\",\"message\":" ERR_MSG("503") "}",
		"{\"type\":\"auto_retry_start\",\"attempt\":1,\"maxAttempts\":1,\"delayMs\":10}",
		"{\"type\":\"message_end\",\"message\":" ERR_MSG("503 again") "}",
		"{\"type\":\"auto_retry_end\",\"success\":false,\"attempt\":1,\"finalError\":\"503 again\"}",
		"{\"type\":\"agent_end\",\"messages\":[" USER_MSG "," ERR_MSG("503 again") "]}",
	};
	struct retryd_run run;
	struct retryd_run_result r;

	retryd_run_init(&run);
	retryd_run_accept(&run);
	ck_assert_int_eq(feed(&run, ev, sizeof(ev) / sizeof(ev[0])), 5);
	retryd_run_result(&run, &r);
	ck_assert(!r.answered);
	ck_assert(!r.cancelled);
	ck_assert_str_eq(r.error, "503 again");
	ck_assert_str_eq(r.stop_reason, "error");
	ck_assert_int_eq(r.retries, 1);
	retryd_run_result_release(&r);
	retryd_run_release(&run);
}
END_TEST

START_TEST(test_cancelled_backoff_is_cancelled)
{
	static const char *const ev[] = {
		"{\"type\":\"message_end\",\"message\":" ERR_MSG("503") "}",
		"{\"type\":\"auto_retry_start\",\"attempt\":1,\"maxAttempts\":3,\"delayMs\":60000}",
		"{\"type\":\"auto_retry_end\",\"success\":false,\"attempt\":1,\"finalError\":\"Retry cancelled\"}",
		"{\"type\":\"agent_end\",\"messages\":[" ERR_MSG("503") "]}",
	};
	struct retryd_run run;
	struct retryd_run_result r;

	retryd_run_init(&run);
	retryd_run_accept(&run);
	feed(&run, ev, sizeof(ev) / sizeof(ev[0]));
	retryd_run_result(&run, &r);
	ck_assert(!r.answered);
	ck_assert(r.cancelled);
	ck_assert_str_eq(r.error, "Retry cancelled");
	retryd_run_result_release(&r);
	retryd_run_release(&run);
}
END_TEST

START_TEST(test_aborted_stream_is_cancelled)
{
	static const char *const ev[] = {
		"{\"type\":\"message_end\",\"message\":" ABORTED_MSG "}",
		"{\"type\":\"agent_end\",\"messages\":[" ABORTED_MSG "]}",
	};
	struct retryd_run run;
	struct retryd_run_result r;

	retryd_run_init(&run);
	retryd_run_accept(&run);
	feed(&run, ev, 2);
	retryd_run_result(&run, &r);
	ck_assert(r.cancelled);
	ck_assert_str_eq(r.error, "Request was aborted");
	retryd_run_result_release(&r);
	retryd_run_release(&run);
}
END_TEST

START_TEST(test_non_retryable_failure_without_chain_keeps_its_message)
{
	static const char *const ev[] = {
		"{\"type\":\"message_end\",\"message\":" ERR_MSG("401 unauthorized") "}",
		"{\"type\":\"agent_end\",\"messages\":[" ERR_MSG("401 unauthorized") "]}",
	};
	struct retryd_run run;
	struct retryd_run_result r;

	retryd_run_init(&run);
	retryd_run_accept(&run);
	feed(&run, ev, 2);
	retryd_run_result(&run, &r);
	ck_assert(!r.answered);
	ck_assert_int_eq(r.retries, 0);
	ck_assert_str_eq(r.error, "401 unauthorized");
	retryd_run_result_release(&r);
	retryd_run_release(&run);
}
END_TEST

START_TEST(test_unfinished_run_is_not_answered)
{
	static const char *const ev[] = {
		"{\"type\":\"message_end\",\"message\":" OK_MSG("half") "}",
	};
	struct retryd_run run;
	struct retryd_run_result r;

	retryd_run_init(&run);
	retryd_run_accept(&run);
	ck_assert_int_eq(feed(&run, ev, 1), -1);
	retryd_run_result(&run, &r);
	ck_assert(!r.answered);
	ck_assert_ptr_null(r.agent_end);
	retryd_run_result_release(&r);
	retryd_run_release(&run);
}
END_TEST

Suite *client_run_suite(void)
{
	Suite *s = suite_create("client_run");
	TCase *tc = tcase_create("run");

	tcase_add_test(tc, test_run_ends_only_at_agent_end_after_the_retry_chain);
	tcase_add_test(tc, test_events_before_acceptance_belong_to_an_earlier_run);
	tcase_add_test(tc, test_exhausted_chain_reports_final_error_and_attempts);
	tcase_add_test(tc, test_cancelled_backoff_is_cancelled);
	tcase_add_test(tc, test_aborted_stream_is_cancelled);
	tcase_add_test(tc, test_non_retryable_failure_without_chain_keeps_its_message);
	tcase_add_test(tc, test_unfinished_run_is_not_answered);
	suite_add_tcase(s, tc);
	return s;
}

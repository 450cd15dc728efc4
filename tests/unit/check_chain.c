/* The retry coordinator on its own: a chain driven on the fake clock by a
 * stub provider, its owner played by a recording ops table — no session,
 * no loop, no sleeping. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/builtins.h"
#include "core/chain.h"
#include "core/classify.h"
#include "core/settings.h"
#include "proto/message.h"

Suite *chain_suite(void);

/* A provider that reports only when the test says, and remembers what the
 * chain handed its last start(). */
struct stub {
	struct provider base;
	struct provider_sink sink;
	int starts, aborts;
	int attempt;
	enum provider_next next;
	const json_t *messages;
	char thinking_level[16];
};

static int stub_start(struct provider *base, const struct attempt_ctx *ctx,
		      const struct provider_sink *sink, char *err, size_t errlen)
{
	struct stub *st = (struct stub *)base;

	(void)err;
	(void)errlen;
	st->sink = *sink;
	st->starts++;
	st->attempt = ctx->attempt;
	st->next = ctx->next;
	st->messages = ctx->messages;
	snprintf(st->thinking_level, sizeof(st->thinking_level), "%s",
		 ctx->thinking_level ? ctx->thinking_level : "(null)");
	return 0;
}

static void stub_abort(struct provider *base)
{
	((struct stub *)base)->aborts++;
}

static const struct provider_ops stub_ops = { stub_start, stub_abort, NULL, NULL };

/* The owner: every call the chain makes, in order, as text. */
struct fx {
	char dir[64];
	char path[128];
	struct settings settings;
	struct clock clock;
	struct stub stub;
	struct chain c;
	json_t *context;       /* what append/drop_last made of the conversation */
	char log[8192];
	int turn_overs, retry_turns, retried_journals;
	bool steer_on_retry;   /* retry_turn delivers one steered message */
};

static void note(struct fx *f, const char *what)
{
	size_t n = strlen(f->log);

	snprintf(f->log + n, sizeof(f->log) - n, "%s%s", n > 0 ? "," : "", what);
}

static void ops_emit(void *ctx, json_t *event)
{
	note(ctx, json_string_value(json_object_get(event, "type")));
	json_decref(event);
}

static void ops_append(void *ctx, json_t *message)
{
	struct fx *f = ctx;

	json_array_append(f->context, message);
	note(f, "append");
}

static void ops_journal(void *ctx, const json_t *message, bool retried)
{
	struct fx *f = ctx;

	(void)message;
	f->retried_journals += retried;
	note(f, retried ? "journal(retried)" : "journal");
}

static void ops_drop_last(void *ctx)
{
	struct fx *f = ctx;

	json_array_remove(f->context, json_array_size(f->context) - 1);
	note(f, "drop_last");
}

static void ops_context(void *ctx, struct chain_context *out)
{
	struct fx *f = ctx;

	out->messages = f->context;
	out->thinking_level = "high";
}

static void ops_turn_over(void *ctx)
{
	struct fx *f = ctx;

	f->turn_overs++;
	note(f, "turn_over");
}

static void ops_retry_turn(void *ctx)
{
	struct fx *f = ctx;
	json_t *msgs = json_array();

	f->retry_turns++;
	note(f, "retry_turn");
	if (f->steer_on_retry)
		json_array_append_new(msgs, message_user("steered", NULL, 0));
	chain_turn(&f->c, NULL, 0, msgs);
	json_decref(msgs);
}

static void fx_init(struct fx *f, const char *const *sets)
{
	char err[512];
	json_t *builtins = builtins_settings();
	struct chain_config cfg;

	memset(f, 0, sizeof(*f));
	strcpy(f->dir, "/tmp/retryd-chain-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/settings.json", f->dir);
	ck_assert_int_eq(settings_load(&f->settings, builtins, f->path, err, sizeof(err)), 0);
	json_decref(builtins);
	for (; sets && *sets; sets++)
		ck_assert_msg(settings_override(&f->settings, *sets, err, sizeof(err)) == 0, "%s", err);
	clock_fake_init(&f->clock, 0);
	f->stub.base.ops = &stub_ops;
	f->stub.base.name = "stub";
	f->stub.base.api = "agent-cli";
	f->stub.base.base_url = "";
	f->stub.base.models = json_pack("[{s:s}]", "id", "m1");
	f->stub.base.credentials = json_array();
	f->context = json_array();
	cfg = (struct chain_config){
		.settings = &f->settings,
		.classify = classify_new(settings_get(&f->settings, "retry"), err, sizeof(err)),
		.clock = &f->clock, .provider = &f->stub.base, .model = "m1",
		.out = { .emit = ops_emit, .ctx = f },
		.ops = { .emit = ops_emit, .append = ops_append, .journal = ops_journal,
			 .drop_last = ops_drop_last, .context = ops_context,
			 .turn_over = ops_turn_over, .retry_turn = ops_retry_turn, .ctx = f },
	};
	ck_assert_ptr_nonnull(cfg.classify);
	ck_assert_int_eq(chain_init(&f->c, &cfg), 0);
}

static void fx_release(struct fx *f)
{
	chain_release(&f->c);
	json_decref(f->stub.base.models);
	json_decref(f->stub.base.credentials);
	json_decref(f->context);
	settings_release(&f->settings);
	unlink(f->path);
	rmdir(f->dir);
}

/* The log since the last call; clears it. */
static const char *taken(struct fx *f)
{
	static char out[8192];

	snprintf(out, sizeof(out), "%s", f->log);
	f->log[0] = '\0';
	return out;
}

/* A new chain for one user message, on the daemon's current policy. */
static void turn(struct fx *f, const char *text)
{
	char err[512];
	json_t *policy = policy_for_prompt(&f->settings, NULL, err, sizeof(err));
	json_t *msgs = json_pack("[o]", message_user(text, NULL, 0));

	ck_assert_ptr_nonnull(policy);
	chain_turn(&f->c, policy, 0, msgs);
	json_decref(msgs);
	json_decref(policy);
}

static void provider_fails(struct fx *f, const char *error, enum provider_next next, const char *why)
{
	struct provider_result r = { .stop = STOP_ERROR, .error_message = error, .hint_ms = -1,
				     .next = next, .next_why = why };

	f->stub.sink.finish(f->stub.sink.ctx, &r);
}

static void answer(struct fx *f, const char *text)
{
	struct provider_result r = { .stop = STOP_STOP, .hint_ms = -1 };

	f->stub.sink.text_start(f->stub.sink.ctx);
	f->stub.sink.text_delta(f->stub.sink.ctx, text, strlen(text));
	f->stub.sink.text_end(f->stub.sink.ctx);
	f->stub.sink.finish(f->stub.sink.ctx, &r);
}

START_TEST(test_a_retryable_failure_is_retried_after_the_backoff_and_the_owner_sees_each_step)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=100", NULL };

	fx_init(&f, sets);
	turn(&f, "hi");
	ck_assert_str_eq(taken(&f), "turn_start,message_start,journal,append,message_end");
	ck_assert_int_eq(f.stub.starts, 1);
	ck_assert_int_eq(f.stub.attempt, 0);
	ck_assert_int_eq(f.c.phase, CHAIN_ATTEMPT);

	provider_fails(&f, "503 Service Unavailable", PROVIDER_NEXT_CONTINUE, NULL);
	/* The failed message is written marked retried, then leaves the context. */
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal(retried),turn_end,"
			 "auto_retry_start,drop_last");
	ck_assert_int_eq(f.c.phase, CHAIN_BACKOFF);
	ck_assert_int_eq(json_array_size(f.context), 1);
	ck_assert_int_eq(clock_fake_next_in(&f.clock), 100);
	clock_fake_advance(&f.clock, 99);
	ck_assert_str_eq(taken(&f), "");
	clock_fake_advance(&f.clock, 1);
	ck_assert_str_eq(taken(&f), "retry_turn,turn_start");
	ck_assert_int_eq(f.stub.starts, 2);
	ck_assert_int_eq(f.stub.attempt, 1);

	answer(&f, "ok");
	ck_assert_str_eq(taken(&f), "message_start,message_update,message_update,message_update,"
			 "message_end,append,journal,auto_retry_end,turn_end,turn_over");
	ck_assert_int_eq(f.turn_overs, 1);
	ck_assert_int_eq(f.c.stats.attempts, 2);
	ck_assert_int_eq(f.c.stats.retries, 1);
	ck_assert_int_eq(f.c.stats.succeeded, 1);
	ck_assert_int_eq(f.c.stats.waited_ms, 100);
	fx_release(&f);
}
END_TEST

START_TEST(test_a_final_failure_ends_the_turn_without_a_retry_or_a_chain_end)
{
	struct fx f;

	fx_init(&f, NULL);
	turn(&f, "hi");
	taken(&f);
	provider_fails(&f, "401 Unauthorized: invalid api key", PROVIDER_NEXT_CONTINUE, NULL);
	/* No retry was made, so no chain was opened: no auto_retry_end. */
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal,turn_end,turn_over");
	ck_assert_int_eq(f.retried_journals, 0);
	ck_assert_int_eq(f.c.stats.errors[CLASSIFY_NOT_RETRYABLE], 1);
	ck_assert_int_eq(json_array_size(f.context), 2);
	fx_release(&f);
}
END_TEST

START_TEST(test_the_attempt_gets_the_owners_context_and_the_last_answer_on_how_to_go_on)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };

	fx_init(&f, sets);
	turn(&f, "hi");
	ck_assert_ptr_eq(f.stub.messages, f.context);
	ck_assert_str_eq(f.stub.thinking_level, "off"); /* "high", clamped: m1 does not reason */
	ck_assert_int_eq(f.stub.next, PROVIDER_NEXT_CONTINUE);
	provider_fails(&f, "503 Service Unavailable", PROVIDER_NEXT_RESEND, NULL);
	clock_fake_advance(&f.clock, 10);
	ck_assert_int_eq(f.stub.starts, 2);
	ck_assert_int_eq(f.stub.next, PROVIDER_NEXT_RESEND);
	answer(&f, "ok");
	fx_release(&f);
}
END_TEST

START_TEST(test_a_provider_that_cannot_go_on_makes_a_retryable_failure_final_with_its_reason)
{
	struct fx f;

	fx_init(&f, NULL);
	turn(&f, "hi");
	taken(&f);
	provider_fails(&f, "503 Service Unavailable", PROVIDER_NEXT_CANNOT, "no session to resume");
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal,turn_end,turn_over");
	ck_assert_int_eq(f.stub.starts, 1);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(
		json_array_get(f.context, 1), "errorMessage")), "not retried: no session to resume"));
	fx_release(&f);
}
END_TEST

START_TEST(test_abort_retry_cancels_the_backoff_once_and_says_whether_there_was_one)
{
	struct fx f;

	fx_init(&f, NULL);
	ck_assert(!chain_abort_retry(&f.c));
	turn(&f, "hi");
	ck_assert(!chain_abort_retry(&f.c)); /* an attempt is no backoff */
	provider_fails(&f, "503 Service Unavailable", PROVIDER_NEXT_CONTINUE, NULL);
	taken(&f);
	ck_assert(chain_abort_retry(&f.c));
	ck_assert_str_eq(taken(&f), "auto_retry_end");
	ck_assert_int_eq(f.c.phase, CHAIN_IDLE);
	ck_assert_int_eq(clock_fake_next_in(&f.clock), -1);
	ck_assert_int_eq(f.c.stats.cancelled, 1);
	ck_assert_int_eq(f.turn_overs, 0); /* the owner moves on itself */
	fx_release(&f);
}
END_TEST

START_TEST(test_abort_during_an_attempt_stops_the_provider_and_closes_the_message_aborted)
{
	struct fx f;

	fx_init(&f, NULL);
	turn(&f, "hi");
	taken(&f);
	chain_abort(&f.c);
	ck_assert_int_eq(f.stub.aborts, 1);
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal,turn_end");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(f.context, 1),
							   "stopReason")), "aborted");
	ck_assert_int_eq(f.c.phase, CHAIN_IDLE);
	fx_release(&f);
}
END_TEST

START_TEST(test_a_stalled_attempt_is_ended_by_the_idle_timer_and_retried)
{
	struct fx f;
	const char *const sets[] = { "retry.idleTimeoutMs=500", "retry.baseDelayMs=10", NULL };

	fx_init(&f, sets);
	turn(&f, "hi");
	taken(&f);
	clock_fake_advance(&f.clock, 499);
	ck_assert_str_eq(taken(&f), "");
	clock_fake_advance(&f.clock, 1);
	ck_assert_int_eq(f.stub.aborts, 1);
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal(retried),turn_end,"
			 "auto_retry_start,drop_last");
	clock_fake_advance(&f.clock, 10);
	ck_assert_int_eq(f.stub.starts, 2);
	answer(&f, "ok");
	ck_assert_int_eq(f.turn_overs, 1);
	fx_release(&f);
}
END_TEST

START_TEST(test_steering_delivered_by_the_owner_after_a_backoff_joins_the_retry_turn)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };

	fx_init(&f, sets);
	f.steer_on_retry = true;
	turn(&f, "hi");
	provider_fails(&f, "503 Service Unavailable", PROVIDER_NEXT_CONTINUE, NULL);
	taken(&f);
	clock_fake_advance(&f.clock, 10);
	ck_assert_str_eq(taken(&f), "retry_turn,turn_start,message_start,journal,append,message_end");
	ck_assert_int_eq(json_array_size(f.context), 2);
	ck_assert_int_eq(f.stub.starts, 2);
	answer(&f, "ok");
	fx_release(&f);
}
END_TEST

static void notice(struct fx *f, const char *text)
{
	f->stub.sink.event(f->stub.sink.ctx, json_pack("{s:s, s:s}", "type", "provider_retry",
							"errorMessage", text));
}

START_TEST(test_a_retry_notice_of_a_final_failure_ends_the_attempt_at_once_with_its_class)
{
	struct fx f;
	const json_t *last;

	fx_init(&f, NULL);
	turn(&f, "hi");
	taken(&f);
	notice(&f, "401 Invalid API key");
	ck_assert_int_eq(f.stub.aborts, 1);
	ck_assert_str_eq(taken(&f), "message_start,provider_retry");
	clock_fake_advance(&f.clock, 0);
	ck_assert_str_eq(taken(&f), "message_end,append,journal,turn_end,turn_over");
	last = json_array_get(f.context, 1);
	ck_assert_str_eq(json_string_value(json_object_get(last, "errorMessage")),
			 "401 Invalid API key");
	ck_assert_int_eq(f.c.stats.errors[CLASSIFY_NOT_RETRYABLE], 1);
	ck_assert_int_eq(f.stub.starts, 1);
	fx_release(&f);
}
END_TEST

START_TEST(test_a_retry_notice_of_a_transient_or_unknown_failure_leaves_the_backend_retrying)
{
	struct fx f;

	fx_init(&f, NULL);
	turn(&f, "hi");
	taken(&f);
	notice(&f, "529 overloaded");
	notice(&f, "retrying");
	ck_assert_int_eq(f.stub.aborts, 0);
	ck_assert_int_eq(clock_fake_next_in(&f.clock), -1);
	ck_assert_str_eq(taken(&f), "message_start,provider_retry,provider_retry");
	answer(&f, "ok");
	ck_assert_int_eq(f.turn_overs, 1);
	fx_release(&f);
}
END_TEST

START_TEST(test_text_streamed_before_the_backends_own_retry_is_closed_and_not_kept_twice)
{
	struct fx f;
	const json_t *content;

	fx_init(&f, NULL);
	turn(&f, "hi");
	taken(&f);
	f.stub.sink.text_start(f.stub.sink.ctx);
	f.stub.sink.text_delta(f.stub.sink.ctx, "ANSWER-OK: this is", 18);
	notice(&f, "terminated");
	/* The failed try ends as a message of its own (as a stall would end
	 * it: no text_end), then the notice. */
	ck_assert_str_eq(taken(&f), "message_start,message_update,message_update,"
			 "message_end,message_start,provider_retry");
	answer(&f, "ANSWER-OK: this is the complete answer");
	content = json_object_get(json_array_get(f.context, 1), "content");
	ck_assert_int_eq(json_array_size(content), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(content, 0), "text")),
			 "ANSWER-OK: this is the complete answer");
	ck_assert_int_eq(json_array_size(f.context), 2);
	fx_release(&f);
}
END_TEST

START_TEST(test_a_backends_own_retries_count_against_max_retries)
{
	struct fx f;
	const char *const sets[] = { "retry.maxRetries=2", "retry.baseDelayMs=10", NULL };

	fx_init(&f, sets);
	f.stub.base.counts_notices = true;
	turn(&f, "hi");
	notice(&f, "529 overloaded");
	notice(&f, "529 overloaded");
	ck_assert_int_eq(f.stub.aborts, 0); /* two of its own: the two retries allowed */
	notice(&f, "529 overloaded");
	ck_assert_int_eq(f.stub.aborts, 1); /* a third would be one too many */
	taken(&f);
	clock_fake_advance(&f.clock, 0);
	ck_assert_str_eq(taken(&f), "message_end,append,journal,turn_end,turn_over");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(
		json_array_get(f.context, 1), "errorMessage")),
		"the agent's own retries used up retry.maxRetries (2)"));
	/* A new chain starts counting afresh; a failure after its own two
	 * retries is the last. */
	turn(&f, "again");
	notice(&f, "529 overloaded");
	notice(&f, "529 overloaded");
	provider_fails(&f, "529 overloaded", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_int_eq(f.stub.starts, 2);
	ck_assert_int_eq(f.turn_overs, 2);
	fx_release(&f);
}
END_TEST

START_TEST(test_an_unknown_failure_is_retried_unknown_retries_times_then_ends_saying_so)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };
	json_t *stats;

	fx_init(&f, sets);
	turn(&f, "hi");
	taken(&f);
	provider_fails(&f, "the gizmo went sideways", PROVIDER_NEXT_CONTINUE, NULL);
	/* One more chance (retry.unknownRetries 1), though maxRetries has 3. */
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal(retried),turn_end,"
			 "auto_retry_start,drop_last");
	clock_fake_advance(&f.clock, 10);
	taken(&f);
	provider_fails(&f, "the gizmo went sideways", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal,turn_end,"
			 "auto_retry_end,turn_over");
	ck_assert_int_eq(f.c.stats.errors[CLASSIFY_UNKNOWN], 2);
	ck_assert_int_eq(f.c.stats.retries, 1);
	stats = chain_stats_json(&f.c);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(stats, "errorsByClass"),
							    "unknown")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(stats, "lastUnknownError")),
			 "the gizmo went sideways");
	json_decref(stats);
	/* The next prompt gets its own unknown retry. */
	turn(&f, "again");
	taken(&f);
	provider_fails(&f, "the gizmo went sideways", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_ptr_nonnull(strstr(taken(&f), "auto_retry_start"));
	fx_release(&f);
}
END_TEST

START_TEST(test_unknown_retries_zero_makes_an_unknown_failure_final)
{
	struct fx f;
	const char *const sets[] = { "retry.unknownRetries=0", NULL };

	fx_init(&f, sets);
	turn(&f, "hi");
	taken(&f);
	provider_fails(&f, "the gizmo went sideways", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal,turn_end,turn_over");
	ck_assert_int_eq(f.c.stats.errors[CLASSIFY_UNKNOWN], 1);
	fx_release(&f);
}
END_TEST

START_TEST(test_retries_exhausted_end_the_chain_after_the_last_turn)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", "retry.maxRetries=1", NULL };

	fx_init(&f, sets);
	turn(&f, "hi");
	provider_fails(&f, "503 Service Unavailable", PROVIDER_NEXT_CONTINUE, NULL);
	clock_fake_advance(&f.clock, 10);
	taken(&f);
	provider_fails(&f, "503 again", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal,turn_end,"
			 "auto_retry_end,turn_over");
	ck_assert_int_eq(f.c.stats.failed, 1);
	ck_assert_int_eq(f.c.retry.attempt, 0);
	fx_release(&f);
}
END_TEST

Suite *chain_suite(void)
{
	Suite *s = suite_create("chain");
	TCase *tc = tcase_create("coordinator");

	tcase_add_test(tc, test_a_retryable_failure_is_retried_after_the_backoff_and_the_owner_sees_each_step);
	tcase_add_test(tc, test_a_final_failure_ends_the_turn_without_a_retry_or_a_chain_end);
	tcase_add_test(tc, test_the_attempt_gets_the_owners_context_and_the_last_answer_on_how_to_go_on);
	tcase_add_test(tc, test_a_provider_that_cannot_go_on_makes_a_retryable_failure_final_with_its_reason);
	tcase_add_test(tc, test_abort_retry_cancels_the_backoff_once_and_says_whether_there_was_one);
	tcase_add_test(tc, test_abort_during_an_attempt_stops_the_provider_and_closes_the_message_aborted);
	tcase_add_test(tc, test_a_stalled_attempt_is_ended_by_the_idle_timer_and_retried);
	tcase_add_test(tc, test_steering_delivered_by_the_owner_after_a_backoff_joins_the_retry_turn);
	tcase_add_test(tc, test_retries_exhausted_end_the_chain_after_the_last_turn);
	tcase_add_test(tc, test_an_unknown_failure_is_retried_unknown_retries_times_then_ends_saying_so);
	tcase_add_test(tc, test_unknown_retries_zero_makes_an_unknown_failure_final);
	tcase_add_test(tc, test_a_retry_notice_of_a_final_failure_ends_the_attempt_at_once_with_its_class);
	tcase_add_test(tc, test_a_retry_notice_of_a_transient_or_unknown_failure_leaves_the_backend_retrying);
	tcase_add_test(tc, test_text_streamed_before_the_backends_own_retry_is_closed_and_not_kept_twice);
	tcase_add_test(tc, test_a_backends_own_retries_count_against_max_retries);
	suite_add_tcase(s, tc);
	return s;
}

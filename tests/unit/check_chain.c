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

static const struct provider_ops stub_ops = { stub_start, stub_abort, NULL, NULL, NULL };

/* A backend that offers continuation turns unless the setting is off. */
static enum provider_continue stub_continuation(struct provider *base, const char *model,
						const char *setting, const char **why)
{
	(void)base;
	(void)model;
	(void)why;
	return strcmp(setting, "off") == 0 ? PROVIDER_CONTINUE_NONE : PROVIDER_CONTINUE_TURN;
}

static const struct provider_ops stub_continue_ops = {
	.start = stub_start, .abort = stub_abort, .continuation = stub_continuation,
};

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
	/* The fleet tests: every fleet_wait, the last one whole, and the
	 * errors the chain ended with. */
	struct fleet *fleet, *other;
	int holds;
	int64_t held_ms;       /* the announced delays, summed */
	json_t *last_hold;
	char last_error[512], final_error[512];
	json_t *last_start;    /* the last auto_retry_start */
	json_t *last_end;      /* the last auto_retry_end */
	json_t *last_wait;     /* the last usage_wait */
	json_t *park_rec;      /* the last park record (ops.parked), or NULL after a cancel */
	int park_records;
	int usage_waits;
	uint64_t end_at;       /* the fake clock when auto_retry_end came */
	char continuation[256]; /* the last auto_retry_start's continuation, as JSON ("" none) */
	char shown[256];        /* the text deltas emitted, joined */
};

static void note(struct fx *f, const char *what)
{
	size_t n = strlen(f->log);

	snprintf(f->log + n, sizeof(f->log) - n, "%s%s", n > 0 ? "," : "", what);
}

static void keep(json_t **slot, json_t *event)
{
	json_decref(*slot);
	*slot = json_incref(event);
}

static void ops_emit(void *ctx, json_t *event)
{
	struct fx *f = ctx;
	const char *type = json_string_value(json_object_get(event, "type"));
	const char *e;
	json_t *ame = json_object_get(event, "assistantMessageEvent");

	note(f, type);
	if (strcmp(type, "fleet_wait") == 0) {
		f->holds++;
		f->held_ms += json_integer_value(json_object_get(event, "delayMs"));
		json_decref(f->last_hold);
		f->last_hold = json_incref(event);
	}
	e = json_string_value(json_object_get(json_object_get(event, "message"), "errorMessage"));
	if (strcmp(type, "turn_end") == 0 && e != NULL)
		snprintf(f->last_error, sizeof(f->last_error), "%s", e);
	e = json_string_value(json_object_get(event, "finalError"));
	if (strcmp(type, "auto_retry_end") == 0 && e != NULL)
		snprintf(f->final_error, sizeof(f->final_error), "%s", e);
	if (strcmp(type, "auto_retry_start") == 0) {
		keep(&f->last_start, event);
	} else if (strcmp(type, "auto_retry_end") == 0) {
		keep(&f->last_end, event);
		f->end_at = clock_now(&f->clock);
	} else if (strcmp(type, "usage_wait") == 0) {
		keep(&f->last_wait, event);
		f->usage_waits++;
	}
	if (strcmp(type, "auto_retry_start") == 0) {
		char *c = json_object_get(event, "continuation")
				  ? json_dumps(json_object_get(event, "continuation"),
					       JSON_COMPACT | JSON_SORT_KEYS)
				  : NULL;

		snprintf(f->continuation, sizeof(f->continuation), "%s", c ? c : "");
		free(c);
	}
	if (json_is_string(json_object_get(ame, "delta")) &&
	    strcmp(json_string_value(json_object_get(ame, "type")), "text_delta") == 0)
		snprintf(f->shown + strlen(f->shown), sizeof(f->shown) - strlen(f->shown), "%s",
			 json_string_value(json_object_get(ame, "delta")));
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

static void ops_parked(void *ctx, const json_t *record)
{
	struct fx *f = ctx;

	json_decref(f->park_rec);
	f->park_rec = record ? json_deep_copy(record) : NULL;
	f->park_records++;
	note(f, record ? "parked" : "park_end");
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
			 .turn_over = ops_turn_over, .retry_turn = ops_retry_turn,
			 .parked = ops_parked, .ctx = f },
	};
	ck_assert_ptr_nonnull(cfg.classify);
	ck_assert_int_eq(chain_init(&f->c, &cfg), 0);
}

static void fx_release(struct fx *f)
{
	chain_release(&f->c);
	if (f->fleet != NULL) {
		char cmd[160];

		fleet_close(f->fleet, NULL, NULL);
		fleet_close(f->other, NULL, NULL);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s/fleet'", f->dir);
		ck_assert_int_eq(system(cmd), 0);
	}
	json_decref(f->last_hold);
	json_decref(f->stub.base.models);
	json_decref(f->stub.base.credentials);
	json_decref(f->context);
	json_decref(f->last_start);
	json_decref(f->last_end);
	json_decref(f->last_wait);
	json_decref(f->park_rec);
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

static void stream_text(struct fx *f, const char *text)
{
	f->stub.sink.text_start(f->stub.sink.ctx);
	f->stub.sink.text_delta(f->stub.sink.ctx, text, strlen(text));
	f->stub.sink.text_end(f->stub.sink.ctx);
}

START_TEST(test_a_cut_answer_is_continued_by_a_turn_and_its_repeat_is_not_shown_again)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };
	const json_t *last, *sent;

	fx_init(&f, sets);
	f.stub.base.ops = &stub_continue_ops;
	turn(&f, "hi");
	stream_text(&f, "Rivers carve deep valleys over");
	provider_fails(&f, "connection error: stream ended before completion",
		       PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_str_eq(f.continuation, "{\"keptChars\":30,\"mode\":\"turn\"}");
	clock_fake_advance(&f.clock, 10);
	ck_assert_int_eq(f.stub.starts, 2);
	/* Sent: the prompt, the partial answer, the request to go on. */
	sent = f.stub.messages;
	ck_assert_int_eq(json_array_size(sent), 3);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(sent, 1), "role")),
			 "assistant");
	ck_assert_int_eq(json_array_size(f.context), 1);
	f.shown[0] = '\0';
	stream_text(&f, "deep valleys over millions of years.");
	ck_assert_str_eq(f.shown, " millions of years.");
	{
		struct provider_result r = { .stop = STOP_STOP, .hint_ms = -1 };

		f.stub.sink.finish(f.stub.sink.ctx, &r);
	}
	last = json_array_get(f.context, json_array_size(f.context) - 1);
	ck_assert_str_eq(json_string_value(json_object_get(
		json_array_get(json_object_get(last, "content"), 0), "text")),
		"Rivers carve deep valleys over millions of years.");
	fx_release(&f);
}
END_TEST

START_TEST(test_continuation_off_replays_the_cut_answer_as_before)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", "retry.continueCutAnswers=off", NULL };

	fx_init(&f, sets);
	f.stub.base.ops = &stub_continue_ops;
	turn(&f, "hi");
	stream_text(&f, "Rivers carve");
	provider_fails(&f, "connection error: stream ended before completion",
		       PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_str_eq(f.continuation, "");
	clock_fake_advance(&f.clock, 10);
	ck_assert_ptr_eq(f.stub.messages, f.context);
	f.shown[0] = '\0';
	answer(&f, "Rivers carve valleys.");
	ck_assert_str_eq(f.shown, "Rivers carve valleys.");
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

/* The chain's daemon (member 1) and another (member 2) share record files
 * in the fixture's folder (fleet.mode "user"), on the fixture's clock. */
static struct fleet *fx_member(struct fx *f, int64_t member, int64_t rpm)
{
	struct fleet_config cfg;
	char dir[128], err[256];
	struct fleet *fl;

	snprintf(dir, sizeof(dir), "%s/fleet", f->dir);
	memset(&cfg, 0, sizeof(cfg));
	fleet_params_default(&cfg.params);
	cfg.params.rpm = rpm;
	cfg.mode = FLEET_MODE_USER;
	cfg.scope = FLEET_SCOPE_MODEL;
	cfg.dir = dir;
	cfg.ns = "t";
	cfg.clock = &f->clock;
	cfg.member = member;
	cfg.lock_wait_ms = 2;
	cfg.lease_ttl_ms = 30000;
	fl = fleet_new(&cfg, err, sizeof(err));
	ck_assert_msg(fl != NULL, "%s", err);
	return fl;
}

static void fx_fleet(struct fx *f, int64_t rpm)
{
	f->fleet = fx_member(f, 1, rpm);
	f->other = fx_member(f, 2, rpm);
	f->c.cfg.fleet = f->fleet;
}

/* A daemon of the fleet reports an answer of the stub provider. */
static void fleet_hears(struct fleet *fl, enum fleet_outcome_kind kind, int64_t block_ms,
			int64_t status)
{
	struct fleet_tell t = { .provider = "stub", .model = "m1",
				.out = { .kind = kind, .block_ms = block_ms, .status = status },
				.usage_reset_ms = -1, .fallback_after = 3, .cooldown_ms = 60000 };

	fleet_tell(fl, &t);
}

/* Runs the clock to each timer until the stub is started; the time it took. */
static int64_t run_until_sent(struct fx *f)
{
	int64_t waited = 0;

	for (int i = 0; i < 100 && f->stub.starts == 0; i++) {
		int64_t next = clock_fake_next_in(&f->clock);

		ck_assert_int_ge(next, 0);
		clock_fake_advance(&f->clock, (uint64_t)next);
		waited += next;
	}
	ck_assert_int_eq(f->stub.starts, 1);
	return waited;
}

START_TEST(test_every_probe_re_hold_is_announced_and_the_announced_waits_add_up_to_the_hold)
{
	struct fx f;

	fx_init(&f, NULL);
	fx_fleet(&f, 0);
	/* Two daemons see the provider fail three times in a row: the circuit
	 * opens, one probe per interval, and a waiter looks again every few
	 * hundred ms (each look a hold of its own). */
	fleet_hears(f.fleet, FLEET_OUT_SERVER, -1, 503);
	fleet_hears(f.other, FLEET_OUT_SERVER, -1, 503);
	fleet_hears(f.other, FLEET_OUT_SERVER, -1, 503);
	fleet_hears(f.fleet, FLEET_OUT_SERVER, -1, 503);
	fleet_hears(f.other, FLEET_OUT_SERVER, -1, 503);
	turn(&f, "hi");
	ck_assert_int_eq(f.c.phase, CHAIN_HOLD);
	ck_assert_int_eq(f.holds, 1);
	ck_assert_str_eq(json_string_value(json_object_get(f.last_hold, "reason")), "probe");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(f.last_hold, "cause")),
				     "one probe at a time"));
	ck_assert_int_eq(run_until_sent(&f), f.held_ms);
	ck_assert_int_ge(f.holds, 3);
	ck_assert_int_eq(f.c.stats.waited_ms, f.held_ms);
	fx_release(&f);
}
END_TEST

START_TEST(test_a_block_that_comes_during_a_pacing_hold_is_a_new_hold_naming_its_hint_and_age)
{
	struct fx f;
	json_t *w;

	fx_init(&f, NULL);
	fx_fleet(&f, 60);
	turn(&f, "first");
	ck_assert_int_eq(f.stub.starts, 1);
	answer(&f, "ok");
	f.stub.starts = 0;
	taken(&f);
	turn(&f, "second");     /* the next slot at 60 rpm (5 % under): 1050 ms */
	ck_assert_int_eq(f.holds, 1);
	ck_assert_int_eq(f.held_ms, 1050);
	ck_assert_str_eq(json_string_value(json_object_get(f.last_hold, "reason")), "pacing");
	clock_fake_advance(&f.clock, 500);
	fleet_hears(f.other, FLEET_OUT_SERVER, 8000, 429);
	ck_assert_int_eq(run_until_sent(&f) + 500, f.held_ms);
	ck_assert_int_eq(f.holds, 2);
	w = f.last_hold;
	ck_assert_str_eq(json_string_value(json_object_get(w, "reason")), "server-block");
	ck_assert_int_eq(json_integer_value(json_object_get(w, "delayMs")), 7450);
	ck_assert_str_eq(json_string_value(json_object_get(w, "hint")), "429 retry-after 8s");
	ck_assert_int_eq(json_integer_value(json_object_get(w, "ageMs")), 550);
	ck_assert(json_is_false(json_object_get(w, "byThisRetryd")));
	ck_assert_str_eq(json_string_value(json_object_get(w, "cause")),
			 "another retryd of yours got 429 retry-after 8s");
	fx_release(&f);
}
END_TEST

START_TEST(test_a_shared_block_beyond_max_delay_ends_the_prompt_naming_the_fleet_and_its_age)
{
	struct fx f;
	const char *const sets[] = { "retry.maxDelayMs=1000", NULL };

	fx_init(&f, sets);
	fx_fleet(&f, 0);
	fleet_hears(f.other, FLEET_OUT_SERVER, 600000, 429);
	clock_fake_advance(&f.clock, 14000);
	turn(&f, "hi");
	clock_fake_advance(&f.clock, 0);
	ck_assert_int_eq(f.stub.starts, 0);
	ck_assert_int_eq(f.holds, 0);
	ck_assert_str_eq(f.last_error,
			 "the provider asked another retryd of yours to wait 600 s (fleet: "
			 "stub|-|m1, seen 14 s ago); exceeds retry.maxDelayMs 1000; retryctl fleet "
			 "clear drops it (not retried: a shared block longer than retry.maxDelayMs)");
	fx_release(&f);
}
END_TEST

START_TEST(test_a_shared_block_found_after_a_failure_ends_the_chain_at_once_not_after_a_backoff)
{
	struct fx f;
	const char *const sets[] = { "retry.maxDelayMs=1000", NULL };

	fx_init(&f, sets);
	fx_fleet(&f, 0);
	turn(&f, "hi");
	ck_assert_int_eq(f.stub.starts, 1);
	/* While the attempt is out, another daemon is told to wait 10 min. */
	fleet_hears(f.other, FLEET_OUT_SERVER, 600000, 429);
	clock_fake_advance(&f.clock, 2000);
	taken(&f);
	provider_fails(&f, "503 Service Unavailable", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal,turn_end,"
			 "auto_retry_end,turn_over");
	ck_assert_str_eq(f.final_error,
			 "the provider asked another retryd of yours to wait 600 s (fleet: "
			 "stub|-|m1, seen 2 s ago); exceeds retry.maxDelayMs 1000; retryctl fleet "
			 "clear drops it");
	ck_assert_int_eq(f.c.retry.attempt, 0);
	ck_assert_int_eq(clock_fake_next_in(&f.clock), -1);
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

/* A usage limit waited out (retry.usageLimitWait "wait"). */

static const char *str_of(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : "(none)";
}

static const char *last_error(struct fx *f)
{
	return str_of(json_array_get(f->context, json_array_size(f->context) - 1), "errorMessage");
}

START_TEST(test_a_usage_limit_with_a_stated_reset_parks_beats_probes_once_and_completes)
{
	struct fx f;
	const char *const sets[] = { "retry.usageLimitWait=wait", NULL };
	json_t *st;

	fx_init(&f, sets);
	turn(&f, "hi");
	taken(&f);
	provider_fails(&f, "usage limit reached, resets in 5m", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal(retried),turn_end,"
			 "auto_retry_start,parked,drop_last");
	ck_assert_str_eq(str_of(f.last_start, "reason"), "usage-reset");
	ck_assert_int_eq(json_integer_value(json_object_get(f.last_start, "delayMs")), 301000);
	/* The fake wall clock starts at 2026-01-01T00:00:00Z. */
	ck_assert_str_eq(str_of(f.last_start, "resetAt"), "2026-01-01T00:05:01Z");
	ck_assert_str_eq(str_of(f.last_start, "resetSource"), "text");
	ck_assert_int_eq(f.c.phase, CHAIN_BACKOFF);
	clock_fake_advance(&f.clock, 1000);
	st = chain_usage_reset(&f.c);
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "delayMs")), 300000);
	ck_assert_str_eq(str_of(st, "resetAt"), "2026-01-01T00:05:01Z");
	json_decref(st);
	/* A heartbeat a minute while parked, and no attempt before the reset. */
	clock_fake_advance(&f.clock, 299999);
	ck_assert_int_eq(f.usage_waits, 5);
	ck_assert_int_eq(json_integer_value(json_object_get(f.last_wait, "remainingMs")), 1000);
	ck_assert_str_eq(str_of(f.last_wait, "resetAt"), "2026-01-01T00:05:01Z");
	ck_assert_int_eq(f.stub.starts, 1);
	taken(&f);
	clock_fake_advance(&f.clock, 1);
	ck_assert_str_eq(taken(&f), "retry_turn,turn_start");
	ck_assert_int_eq(f.stub.starts, 2);
	ck_assert_ptr_null(chain_usage_reset(&f.c));
	answer(&f, "ok");
	ck_assert_ptr_nonnull(strstr(taken(&f), "auto_retry_end,turn_end,turn_over"));
	ck_assert(json_is_true(json_object_get(f.last_end, "success")));
	ck_assert_int_eq(f.usage_waits, 5);
	ck_assert_int_eq(clock_fake_next_in(&f.clock), -1);
	fx_release(&f);
}
END_TEST

START_TEST(test_a_probe_that_meets_the_limit_again_parks_again_then_probes_on_a_growing_schedule)
{
	struct fx f;
	const char *const sets[] = { "retry.usageLimitWait=wait", NULL };

	fx_init(&f, sets);
	turn(&f, "hi");
	provider_fails(&f, "usage limit reached, resets in 1m", PROVIDER_NEXT_CONTINUE, NULL);
	clock_fake_advance(&f.clock, 61000);
	ck_assert_int_eq(f.stub.starts, 2);
	/* The reset was late: the new one is waited for, costing no retry. */
	provider_fails(&f, "usage limit reached, resets in 2m", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(f.last_start, "delayMs")), 121000);
	ck_assert_int_eq(json_integer_value(json_object_get(f.last_start, "attempt")), 1);
	clock_fake_advance(&f.clock, 121000);
	ck_assert_int_eq(f.stub.starts, 3);
	/* No reset stated: probes a minute on, then two. */
	provider_fails(&f, "usage limit reached", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_str_eq(str_of(f.last_start, "resetSource"), "probe");
	ck_assert_int_eq(json_integer_value(json_object_get(f.last_start, "delayMs")), 60000);
	clock_fake_advance(&f.clock, 60000);
	ck_assert_int_eq(f.stub.starts, 4);
	provider_fails(&f, "usage limit reached", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(f.last_start, "delayMs")), 120000);
	clock_fake_advance(&f.clock, 120000);
	ck_assert_int_eq(f.stub.starts, 5);
	answer(&f, "ok");
	ck_assert(json_is_true(json_object_get(f.last_end, "success")));
	ck_assert_int_eq(f.c.stats.succeeded, 1);
	fx_release(&f);
}
END_TEST

START_TEST(test_abort_retry_during_a_six_hour_park_ends_it_at_once)
{
	struct fx f;
	const char *const sets[] = { "retry.usageLimitWait=wait", "retry.maxUsageWaitMs=25200000",
				     NULL };
	uint64_t before, took_us;

	fx_init(&f, sets);
	turn(&f, "hi");
	provider_fails(&f, "usage limit reached, resets in 6h", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_str_eq(str_of(f.last_start, "reason"), "usage-reset");
	clock_fake_advance(&f.clock, 3600000);
	taken(&f);
	before = clock_now(&f.clock);
	took_us = clock_precise_us();
	ck_assert(chain_abort_retry(&f.c));
	took_us = clock_precise_us() - took_us;
	ck_assert_str_eq(taken(&f), "park_end,auto_retry_end");
	ck_assert_uint_eq(f.end_at, before);
	ck_assert_msg(took_us < 1000, "abort_retry took %llu us", (unsigned long long)took_us);
	ck_assert_str_eq(str_of(f.last_end, "finalError"), "Retry cancelled");
	/* Neither the park's timer nor its heartbeat is left. */
	ck_assert_int_eq(clock_fake_next_in(&f.clock), -1);
	ck_assert_ptr_null(chain_usage_reset(&f.c));
	ck_assert_int_eq(f.stub.starts, 1);
	fx_release(&f);
}
END_TEST

START_TEST(test_a_reset_past_max_usage_wait_ends_the_prompt_saying_so)
{
	struct fx f;
	const char *const sets[] = { "retry.usageLimitWait=wait", NULL };

	fx_init(&f, sets);
	turn(&f, "hi");
	taken(&f);
	provider_fails(&f, "usage limit reached, resets in 8h", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal,turn_end,turn_over");
	ck_assert_str_eq(last_error(&f), "usage limit reached, resets in 8h (usage limit: resets in "
			 "8h, past retry.maxUsageWaitMs (6h))");
	fx_release(&f);
}
END_TEST

START_TEST(test_parks_that_add_up_to_max_usage_wait_end_the_prompt_naming_the_wait)
{
	struct fx f;
	const char *const sets[] = { "retry.usageLimitWait=wait", "retry.maxUsageWaitMs=150000",
				     NULL };

	fx_init(&f, sets);
	turn(&f, "hi");
	provider_fails(&f, "usage limit reached", PROVIDER_NEXT_CONTINUE, NULL);
	clock_fake_advance(&f.clock, 60000);
	provider_fails(&f, "usage limit reached", PROVIDER_NEXT_CONTINUE, NULL);
	/* Two minutes would pass the maximum: the rest of it. */
	ck_assert_int_eq(json_integer_value(json_object_get(f.last_start, "delayMs")), 90000);
	clock_fake_advance(&f.clock, 90000);
	taken(&f);
	provider_fails(&f, "usage limit reached", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal,turn_end,"
			 "auto_retry_end,turn_over");
	ck_assert_str_eq(last_error(&f), "usage limit reached (usage limit: no reset stated; "
			 "waited 2m30s for one (retry.maxUsageWaitMs 2m30s))");
	ck_assert(json_is_false(json_object_get(f.last_end, "success")));
	fx_release(&f);
}
END_TEST

START_TEST(test_usage_limit_wait_off_ends_the_prompt_as_before)
{
	struct fx f;

	fx_init(&f, NULL);
	turn(&f, "hi");
	taken(&f);
	provider_fails(&f, "usage limit reached, resets in 5m", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal,turn_end,turn_over");
	ck_assert_str_eq(last_error(&f), "usage limit reached, resets in 5m (usage limit: resets in "
			 "5m)");
	ck_assert_int_eq(clock_fake_next_in(&f.clock), -1);
	fx_release(&f);
}
END_TEST

/* A park read back from the session file by a daemon started again. */
START_TEST(test_a_resumed_park_waits_the_rest_then_probes_or_probes_at_once_when_past)
{
	struct fx f, g;
	const char *const sets[] = { "retry.usageLimitWait=wait", NULL };
	json_t *rec, *policy;

	fx_init(&f, sets);
	turn(&f, "hi");
	provider_fails(&f, "usage limit reached, resets in 10m", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_int_eq(f.park_records, 1);
	rec = json_incref(f.park_rec);
	ck_assert_str_eq(str_of(rec, "resetSource"), "text");
	ck_assert_str_eq(str_of(json_object_get(rec, "policy"), "usageLimitWait"), "wait");
	fx_release(&f);

	/* Four minutes later (the fake wall clock), another daemon. */
	fx_init(&g, NULL);
	clock_fake_advance(&g.clock, 240000);
	policy = park_record_policy(rec, &g.settings);
	ck_assert_ptr_nonnull(policy);
	ck_assert_str_eq(str_of(policy, "usageLimitWait"), "wait"); /* the prompt's, not g's */
	ck_assert(chain_resume_park(&g.c, policy, 0, rec));
	ck_assert_str_eq(taken(&g), "auto_retry_start,parked");
	ck_assert_int_eq(json_integer_value(json_object_get(g.last_start, "delayMs")), 361000);
	ck_assert_str_eq(str_of(g.last_start, "resetAt"), "2026-01-01T00:10:01Z");
	ck_assert_int_eq(g.stub.starts, 0);
	clock_fake_advance(&g.clock, 360999);
	ck_assert_int_eq(g.stub.starts, 0);
	clock_fake_advance(&g.clock, 1);
	ck_assert_int_eq(g.stub.starts, 1);
	answer(&g, "ok");
	ck_assert(json_is_true(json_object_get(g.last_end, "success")));

	/* Long after the reset: the probe goes at once. */
	clock_fake_advance(&g.clock, 3600000);
	taken(&g);
	ck_assert(chain_resume_park(&g.c, policy, 0, rec));
	ck_assert_int_eq(json_integer_value(json_object_get(g.last_start, "delayMs")), 0);
	clock_fake_settle(&g.clock);
	ck_assert_int_eq(g.stub.starts, 2);
	answer(&g, "ok");
	/* Not a park's record: nothing happens. */
	ck_assert(!chain_resume_park(&g.c, policy, 0, json_object_get(rec, "policy")));
	json_decref(policy);
	json_decref(rec);
	fx_release(&g);
}
END_TEST

/* The daemon stops (chain_keep_park, then chain_abort): the park stays in
 * the file; a later prompt's park is the file's to end again. */
START_TEST(test_a_park_kept_by_a_stop_does_not_keep_the_next_prompts_park)
{
	struct fx f;
	const char *const sets[] = { "retry.usageLimitWait=wait", NULL };

	fx_init(&f, sets);
	turn(&f, "hi");
	provider_fails(&f, "usage limit reached, resets in 5m", PROVIDER_NEXT_CONTINUE, NULL);
	taken(&f);
	chain_keep_park(&f.c);
	chain_abort(&f.c);
	ck_assert_str_eq(taken(&f), "auto_retry_end");
	turn(&f, "again");
	provider_fails(&f, "usage limit reached, resets in 5m", PROVIDER_NEXT_CONTINUE, NULL);
	taken(&f);
	ck_assert(chain_abort_retry(&f.c));
	ck_assert_str_eq(taken(&f), "park_end,auto_retry_end");
	/* An abort with no stop after a kept one ends its park too. */
	turn(&f, "third");
	provider_fails(&f, "usage limit reached, resets in 5m", PROVIDER_NEXT_CONTINUE, NULL);
	chain_keep_park(&f.c);
	chain_abort(&f.c);
	provider_fails(&f, "usage limit reached, resets in 5m", PROVIDER_NEXT_CONTINUE, NULL);
	fx_release(&f);
}
END_TEST

START_TEST(test_a_stop_during_the_probe_or_its_backoff_keeps_the_park_due_now)
{
	struct fx f;
	const char *const sets[] = { "retry.usageLimitWait=wait", NULL };

	fx_init(&f, sets);
	turn(&f, "hi");
	provider_fails(&f, "usage limit reached, resets in 1m", PROVIDER_NEXT_CONTINUE, NULL);
	clock_fake_advance(&f.clock, 61000);
	ck_assert_int_eq(f.stub.starts, 2);
	taken(&f);
	chain_keep_park(&f.c);
	chain_abort(&f.c);
	/* The aborted probe is no answer of the conversation, the park is last. */
	ck_assert_str_eq(taken(&f), "message_start,message_end,append,journal(retried),turn_end,"
			 "auto_retry_end,parked");
	ck_assert_int_eq(json_integer_value(json_object_get(f.park_rec, "resetAtMs")),
			 clock_wall_ms(&f.clock));
	ck_assert_int_eq(json_integer_value(json_object_get(f.park_rec, "waitedMs")), 61000);

	/* The probe met a 503 and the daemon stops during that backoff. */
	turn(&f, "again");
	provider_fails(&f, "usage limit reached, resets in 1m", PROVIDER_NEXT_CONTINUE, NULL);
	clock_fake_advance(&f.clock, 61000);
	provider_fails(&f, "503 service unavailable", PROVIDER_NEXT_CONTINUE, NULL);
	ck_assert_int_eq(f.c.phase, CHAIN_BACKOFF);
	taken(&f);
	chain_keep_park(&f.c);
	chain_abort(&f.c);
	ck_assert_str_eq(taken(&f), "auto_retry_end,parked");
	ck_assert_int_eq(json_integer_value(json_object_get(f.park_rec, "resetAtMs")),
			 clock_wall_ms(&f.clock));
	fx_release(&f);
}
END_TEST

/* A park record edited by hand, or read after a clock jump. */
START_TEST(test_a_resumed_park_beyond_max_usage_wait_ends_the_prompt_saying_so)
{
	struct fx f;
	const char *const sets[] = { "retry.usageLimitWait=wait", NULL };
	const int64_t year = INT64_C(365) * 86400000;
	const char *const keys[] = { "resetAtMs", "resetAtMs", "waitedMs" };
	json_t *rec, *policy;

	fx_init(&f, sets);
	turn(&f, "hi");
	provider_fails(&f, "usage limit reached, resets in 10m", PROVIDER_NEXT_CONTINUE, NULL);
	rec = json_deep_copy(f.park_rec);
	ck_assert(chain_abort_retry(&f.c));
	policy = park_record_policy(rec, &f.settings);
	for (int i = 0; i < 3; i++) {
		json_t *edited = json_deep_copy(rec);
		int64_t v = i == 0 ? clock_wall_ms(&f.clock) + year
			    : i == 1 ? clock_wall_ms(&f.clock) - year : year;

		json_object_set_new(edited, keys[i], json_integer(v));
		taken(&f);
		ck_assert(!chain_resume_park(&f.c, policy, 0, edited));
		ck_assert_str_eq(taken(&f), "auto_retry_end,park_end");
		ck_assert_msg(strstr(f.final_error, "past retry.maxUsageWaitMs (6h)") != NULL, "%s",
			      f.final_error);
		ck_assert_int_eq(clock_fake_next_in(&f.clock), -1);
		json_decref(edited);
	}
	/* The record as written resumes. */
	ck_assert(chain_resume_park(&f.c, policy, 0, rec));
	ck_assert(chain_abort_retry(&f.c));
	json_decref(policy);
	json_decref(rec);
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
	tcase_add_test(tc, test_every_probe_re_hold_is_announced_and_the_announced_waits_add_up_to_the_hold);
	tcase_add_test(tc, test_a_block_that_comes_during_a_pacing_hold_is_a_new_hold_naming_its_hint_and_age);
	tcase_add_test(tc, test_a_shared_block_beyond_max_delay_ends_the_prompt_naming_the_fleet_and_its_age);
	tcase_add_test(tc, test_a_shared_block_found_after_a_failure_ends_the_chain_at_once_not_after_a_backoff);
	tcase_add_test(tc, test_a_usage_limit_with_a_stated_reset_parks_beats_probes_once_and_completes);
	tcase_add_test(tc, test_a_probe_that_meets_the_limit_again_parks_again_then_probes_on_a_growing_schedule);
	tcase_add_test(tc, test_abort_retry_during_a_six_hour_park_ends_it_at_once);
	tcase_add_test(tc, test_a_reset_past_max_usage_wait_ends_the_prompt_saying_so);
	tcase_add_test(tc, test_parks_that_add_up_to_max_usage_wait_end_the_prompt_naming_the_wait);
	tcase_add_test(tc, test_usage_limit_wait_off_ends_the_prompt_as_before);
	tcase_add_test(tc, test_a_resumed_park_waits_the_rest_then_probes_or_probes_at_once_when_past);
	tcase_add_test(tc, test_a_park_kept_by_a_stop_does_not_keep_the_next_prompts_park);
	tcase_add_test(tc, test_a_stop_during_the_probe_or_its_backoff_keeps_the_park_due_now);
	tcase_add_test(tc, test_a_resumed_park_beyond_max_usage_wait_ends_the_prompt_saying_so);
	tcase_add_test(tc, test_a_cut_answer_is_continued_by_a_turn_and_its_repeat_is_not_shown_again);
	tcase_add_test(tc, test_continuation_off_replays_the_cut_answer_as_before);
	suite_add_tcase(s, tc);
	return s;
}

/* The prompt lifecycle and the retry chain, driven on the fake clock: the
 * session, the policy, the classifier and the sim provider together, with
 * no loop, no pipes and no sleeping. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/builtins.h"
#include "core/classify.h"
#include "base/clock.h"
#include "proto/command.h"
#include "provider/provider_sim.h"
#include "base/jsontext.h"
#include "core/session.h"
#include "core/settings.h"

Suite *session_suite(void);

struct fx {
	char dir[64];
	char path[128];
	struct settings settings;
	struct classify *classify;
	struct clock clock;
	struct provider *sim;
	struct session s;
	json_t *events;
};

static void collect(void *ctx, json_t *event)
{
	struct fx *f = ctx;

	json_array_append_new(f->events, event);
}

/* plan: JSON text; sets: NULL-terminated --set assignments; provider: the
 * one to use (taken), or NULL for the sim playing `plan`. */
static void fx_init_with(struct fx *f, const char *plan, const char *const *sets,
			 struct provider *provider)
{
	char err[512];
	json_t *p = json_loads(plan, 0, NULL);
	struct session_config cfg;

	memset(f, 0, sizeof(*f));
	strcpy(f->dir, "/tmp/retryd-session-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/settings.json", f->dir);
	{
		json_t *builtins = builtins_settings();

		ck_assert_int_eq(settings_load(&f->settings, builtins, f->path, err, sizeof(err)), 0);
		json_decref(builtins);
	}
	for (; sets && *sets; sets++)
		ck_assert_msg(settings_override(&f->settings, *sets, err, sizeof(err)) == 0, "%s", err);
	f->classify = classify_new(settings_get(&f->settings, "retry"), err, sizeof(err));
	ck_assert_ptr_nonnull(f->classify);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(provider_sim_check_plan(p, err, sizeof(err)), 0);
	clock_fake_init(&f->clock, 0);
	f->sim = provider ? provider
			  : provider_sim_new(&f->clock, p, 0, settings_get(&f->settings, "sim.models"),
					     settings_get(&f->settings, "sim.credentials"));
	json_decref(p);
	f->events = json_array();
	cfg = (struct session_config){
		.settings = &f->settings, .classify = f->classify, .clock = &f->clock,
		.provider = f->sim, .model = "sim-1", .emit = collect, .emit_ctx = f,
	};
	ck_assert_int_eq(session_init(&f->s, &cfg), 0);
}

static void fx_init(struct fx *f, const char *plan, const char *const *sets)
{
	fx_init_with(f, plan, sets, NULL);
}

static void fx_release(struct fx *f)
{
	session_release(&f->s);
	f->sim->ops->free(f->sim);
	/* The session owns the classifier. */
	settings_release(&f->settings);
	json_decref(f->events);
	unlink(f->path);
	rmdir(f->dir);
}

/* Event types since the last call, comma-separated; message events carry
 * their role, e.g. "message_end:assistant". Clears the log. */
static char *types(struct fx *f)
{
	static char buf[4096];
	size_t i;
	json_t *ev;

	buf[0] = '\0';
	json_array_foreach(f->events, i, ev) {
		const char *t = json_string_value(json_object_get(ev, "type"));
		const char *role = json_string_value(json_object_get(json_object_get(ev, "message"), "role"));

		if (buf[0] != '\0')
			strcat(buf, ",");
		if (strcmp(t, "message_update") == 0) {
			strcat(buf, json_string_value(json_object_get(json_object_get(ev, "assistantMessageEvent"), "type")));
			continue;
		}
		strcat(buf, t);
		if (role != NULL && strncmp(t, "message_", 8) == 0) {
			strcat(buf, ":");
			strcat(buf, role);
		}
	}
	json_array_clear(f->events);
	return buf;
}

static json_t *find(struct fx *f, const char *type)
{
	size_t i;
	json_t *ev;

	json_array_foreach(f->events, i, ev)
		if (strcmp(json_string_value(json_object_get(ev, "type")), type) == 0)
			return ev;
	return NULL;
}

/* Accept and run a prompt as rpc does; returns -1 with err when refused.
 * retry: the prompt's own retry settings as JSON text, or NULL. */
static int submit(struct fx *f, const char *text, int behavior, const char *retry,
		  char *err, size_t errlen)
{
	json_t *r = retry ? json_loads(retry, 0, NULL) : NULL;
	json_t *policy;
	int rc = session_accept(&f->s, behavior, r, &policy, err, errlen);

	json_decref(r);
	if (rc == 0)
		rc = session_prompt(&f->s, text, NULL, behavior, policy, NULL, NULL, NULL);
	return rc;
}

static void prompt(struct fx *f, const char *text)
{
	char err[256];

	ck_assert_msg(submit(f, text, BEHAVIOR_NONE, NULL, err, sizeof(err)) == 0, "%s", err);
}

#define FIRST_TURN "agent_start,turn_start,message_start:user,message_end:user"

/* rpc answers a prompt from the taken callback: it must come once, before
 * the run's first event when idle, and for a queued follow-up too. */
struct taken_log {
	struct fx *f;
	int calls;
	size_t events_then;
	const char *disposition;
};

static void taken_cb(void *ctx, const char *disposition)
{
	struct taken_log *t = ctx;

	t->calls++;
	t->events_then = json_array_size(t->f->events);
	t->disposition = disposition;
}

START_TEST(test_taken_comes_once_before_the_runs_first_event_and_for_a_queued_message)
{
	struct fx f;
	struct taken_log t = { &f, 0, 0, NULL };
	char err[256];
	json_t *policy;

	fx_init(&f, "[{\"hang\":true}]", NULL);
	ck_assert_int_eq(session_accept(&f.s, BEHAVIOR_NONE, NULL, &policy, err, sizeof(err)), 0);
	ck_assert_int_eq(session_prompt(&f.s, "hi", NULL, BEHAVIOR_NONE, policy, "p1", taken_cb, &t),
			 0);
	ck_assert_int_eq(t.calls, 1);
	ck_assert_uint_eq(t.events_then, 0);
	ck_assert_str_eq(t.disposition, "started");
	ck_assert_ptr_nonnull(find(&f, "agent_start"));
	ck_assert_int_eq(session_follow_up(&f.s, "later", NULL, taken_cb, &t), 0);
	ck_assert_int_eq(t.calls, 2);
	ck_assert_str_eq(t.disposition, "queued");
	ck_assert_uint_eq(json_array_size(f.s.follow_ups), 1);
	fx_release(&f);
}
END_TEST

START_TEST(test_two_overloads_then_answer_follow_the_contract)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=100", NULL };
	json_t *ev;

	fx_init(&f, "[{\"error\":\"overloaded_error\"},{\"error\":\"503 Service Unavailable\"},{\"text\":\"a b\"}]", sets);
	prompt(&f, "hi");
	ck_assert_str_eq(types(&f), FIRST_TURN);
	clock_fake_settle(&f.clock);
	ev = find(&f, "auto_retry_start");
	ck_assert_ptr_nonnull(ev);
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "attempt")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "maxAttempts")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "delayMs")), 100);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "errorMessage")), "overloaded_error");
	ck_assert_str_eq(types(&f), "message_start:assistant,message_end:assistant,turn_end,auto_retry_start");
	ck_assert(f.s.busy);
	ck_assert_int_eq(f.s.chain.phase, CHAIN_BACKOFF);

	/* The backoff is exactly 100 ms on the clock. */
	ck_assert_int_eq(clock_fake_next_in(&f.clock), 100);
	clock_fake_advance(&f.clock, 99);
	ck_assert_str_eq(types(&f), "");
	clock_fake_advance(&f.clock, 1);
	clock_fake_settle(&f.clock);
	ev = find(&f, "auto_retry_start");
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "attempt")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "delayMs")), 200);
	ck_assert_str_eq(types(&f), "turn_start,message_start:assistant,message_end:assistant,turn_end,auto_retry_start");

	clock_fake_advance(&f.clock, 200);
	clock_fake_settle(&f.clock);
	ev = find(&f, "auto_retry_end");
	ck_assert(json_is_true(json_object_get(ev, "success")));
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "attempt")), 2);
	ck_assert_ptr_null(json_object_get(ev, "finalError"));
	ev = find(&f, "agent_end");
	/* The failed attempts left the context: user + answer. */
	ck_assert_int_eq(json_array_size(json_object_get(ev, "messages")), 2);
	ck_assert_str_eq(types(&f), "turn_start,message_start:assistant,text_start,text_delta,text_delta,"
			 "text_end,message_end:assistant,auto_retry_end,turn_end,agent_end,agent_settled,session_settled");
	ck_assert(!f.s.busy);
	ck_assert_int_eq(json_array_size(f.s.messages), 2);
	fx_release(&f);
}
END_TEST

START_TEST(test_max_exceeded_closes_chain_after_last_turn_then_agent_end)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };
	json_t *ev;

	fx_init(&f, "[{\"error\":\"503\"},{\"error\":\"503\"},{\"error\":\"503\"},{\"error\":\"503 last\"}]", sets);
	prompt(&f, "hi");
	clock_fake_advance(&f.clock, 10 + 20 + 40);
	clock_fake_settle(&f.clock);
	ev = find(&f, "auto_retry_end");
	ck_assert_ptr_nonnull(ev);
	ck_assert(json_is_false(json_object_get(ev, "success")));
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "attempt")), 3);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "finalError")), "503 last");
	ck_assert_ptr_nonnull(strstr(types(&f), "turn_end,auto_retry_start,turn_start,message_start:assistant,"
				     "message_end:assistant,turn_end,auto_retry_end,agent_end,agent_settled,session_settled"));
	/* The last failure stays in the context, like pi. */
	ck_assert_int_eq(json_array_size(f.s.messages), 2);
	ck_assert_int_eq(f.s.chain.retry.attempt, 0);
	fx_release(&f);
}
END_TEST

START_TEST(test_non_retryable_first_failure_has_no_retry_events)
{
	struct fx f;

	fx_init(&f, "[{\"error\":\"401 Invalid API key\"}]", NULL);
	prompt(&f, "hi");
	clock_fake_advance(&f.clock, 100000);
	ck_assert_str_eq(types(&f), FIRST_TURN ",message_start:assistant,message_end:assistant,turn_end,agent_end,agent_settled,session_settled");
	fx_release(&f);
}
END_TEST

START_TEST(test_context_overflow_in_open_chain_ends_it_unretried)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };
	json_t *ev;

	fx_init(&f, "[{\"error\":\"429 Too many requests\"},{\"error\":\"429 prompt is too long\"}]", sets);
	prompt(&f, "hi");
	clock_fake_advance(&f.clock, 1000);
	ev = find(&f, "auto_retry_end");
	ck_assert_ptr_nonnull(ev);
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "attempt")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "finalError")), "429 prompt is too long");
	ck_assert_ptr_nonnull(strstr(types(&f), "turn_end,auto_retry_end,agent_end,agent_settled,session_settled"));
	fx_release(&f);
}
END_TEST

START_TEST(test_abort_retry_cancels_backoff_at_once)
{
	struct fx f;
	json_t *ev;

	fx_init(&f, "[{\"error\":\"503\"}]", NULL);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	types(&f);
	ck_assert_int_eq(f.s.chain.phase, CHAIN_BACKOFF);
	session_abort_retry(&f.s);
	ev = find(&f, "auto_retry_end");
	ck_assert_str_eq(json_string_value(json_object_get(ev, "finalError")), "Retry cancelled");
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "attempt")), 1);
	ck_assert_str_eq(types(&f), "auto_retry_end,agent_end,agent_settled,session_settled");
	ck_assert_int_eq(clock_fake_next_in(&f.clock), -1);
	ck_assert(!f.s.busy);
	/* Nothing pending now: no event. */
	session_abort_retry(&f.s);
	ck_assert_str_eq(types(&f), "");
	fx_release(&f);
}
END_TEST

START_TEST(test_a_cancelled_retrys_prompt_result_is_the_failure_it_would_have_retried)
{
	struct fx f;
	json_t *policy, *r;
	char err[256];

	fx_init(&f, "[{\"error\":\"503\"}]", NULL);
	ck_assert_int_eq(session_accept(&f.s, BEHAVIOR_NONE, NULL, &policy, err, sizeof(err)), 0);
	ck_assert_int_eq(session_prompt(&f.s, "hi", NULL, BEHAVIOR_NONE, policy, "p1", NULL, NULL), 0);
	clock_fake_settle(&f.clock);
	session_abort_retry(&f.s);
	r = find(&f, "prompt_result");
	ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "error");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "error"), "message")), "503");
	ck_assert(json_is_true(json_object_get(json_object_get(r, "error"), "retryable")));
	fx_release(&f);
}
END_TEST

START_TEST(test_clear_queue_drops_both_queues_and_owes_a_prompt_its_aborted_result)
{
	struct fx f;
	json_t *policy, *data, *r;
	char err[256];

	fx_init(&f, "[{\"hang\":true}]", NULL);
	prompt(&f, "first");
	ck_assert_int_eq(session_accept(&f.s, BEHAVIOR_FOLLOW_UP, NULL, &policy, err, sizeof(err)), 0);
	ck_assert_int_eq(session_prompt(&f.s, "later", NULL, BEHAVIOR_FOLLOW_UP, policy, "p2", NULL,
					NULL), 0);
	ck_assert_int_eq(session_steer(&f.s, "now", NULL, NULL, NULL), 0);
	data = session_clear_queue(&f.s);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(data, "steering"), 0)), "now");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(data, "followUp"), 0)), "later");
	json_decref(data);
	types(&f);
	session_abort(&f.s, &data);
	ck_assert_uint_eq(json_array_size(json_object_get(data, "discardedMessages")), 0);
	json_decref(data);
	r = find(&f, "prompt_result");
	ck_assert_str_eq(json_string_value(json_object_get(r, "id")), "p2");
	ck_assert_str_eq(json_string_value(json_object_get(r, "status")), "aborted");
	fx_release(&f);
}
END_TEST

static int64_t retry_stat(struct fx *f, const char *path1, const char *path2)
{
	json_t *st = session_stats(&f->s);
	json_t *v = json_object_get(json_object_get(st, "retry"), path1);
	int64_t n;

	if (path2 != NULL)
		v = json_object_get(v, path2);
	ck_assert_msg(json_is_integer(v), "retry.%s%s%s", path1, path2 ? "." : "", path2 ? path2 : "");
	n = json_integer_value(v);
	json_decref(st);
	return n;
}

START_TEST(test_stats_count_attempts_chains_error_classes_and_time_waited_on_the_clock)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=100", NULL };

	fx_init(&f, "[{\"error\":\"overloaded_error\"},{\"error\":\"503\"},{\"text\":\"a\"},"
		"{\"error\":\"400 Bad Request: invalid model\"},{\"error\":\"503\"}]", sets);
	prompt(&f, "one");
	clock_fake_settle(&f.clock);
	clock_fake_advance(&f.clock, 60);
	/* The running backoff counts as it goes. */
	ck_assert_int_eq(retry_stat(&f, "waitedMs", NULL), 60);
	clock_fake_advance(&f.clock, 40);
	clock_fake_settle(&f.clock);
	clock_fake_advance(&f.clock, 200);
	clock_fake_settle(&f.clock);
	ck_assert(!f.s.busy);
	ck_assert_int_eq(retry_stat(&f, "attempts", NULL), 3);
	ck_assert_int_eq(retry_stat(&f, "retries", NULL), 2);
	ck_assert_int_eq(retry_stat(&f, "chains", "succeeded"), 1);
	ck_assert_int_eq(retry_stat(&f, "waitedMs", NULL), 300);
	ck_assert_int_eq(retry_stat(&f, "errorsByClass", "retryable"), 2);

	prompt(&f, "two");
	clock_fake_settle(&f.clock);
	ck_assert(!f.s.busy);
	ck_assert_int_eq(retry_stat(&f, "errorsByClass", "non_retryable"), 1);
	ck_assert_int_eq(retry_stat(&f, "chains", "failed"), 0);

	prompt(&f, "three");
	clock_fake_settle(&f.clock);
	ck_assert_int_eq(f.s.chain.phase, CHAIN_BACKOFF);
	clock_fake_advance(&f.clock, 50);
	session_abort_retry(&f.s);
	clock_fake_advance(&f.clock, 1000);
	ck_assert_int_eq(retry_stat(&f, "waitedMs", NULL), 350);
	ck_assert_int_eq(retry_stat(&f, "chains", "cancelled"), 1);
	ck_assert_int_eq(retry_stat(&f, "attempts", NULL), 5);
	ck_assert_int_eq(retry_stat(&f, "retries", NULL), 3);
	ck_assert_int_eq(retry_stat(&f, "errorsByClass", "retryable"), 3);
	ck_assert_int_eq(retry_stat(&f, "errorsByClass", "context_overflow"), 0);
	ck_assert_int_eq(retry_stat(&f, "errorsByClass", "usage_limit"), 0);

	session_new(&f.s);
	ck_assert_int_eq(retry_stat(&f, "attempts", NULL), 0);
	ck_assert_int_eq(retry_stat(&f, "waitedMs", NULL), 0);
	fx_release(&f);
}
END_TEST

START_TEST(test_abort_during_hang_ends_message_as_aborted)
{
	struct fx f;
	json_t *data = NULL;
	json_t *ev;
	char err[128];

	fx_init(&f, "[{\"text\":\"partial words\",\"hang\":true}]", NULL);
	prompt(&f, "hi");
	clock_fake_advance(&f.clock, 10);
	ck_assert_int_eq(submit(&f, "later", BEHAVIOR_FOLLOW_UP, NULL, err, sizeof(err)), 0);
	types(&f);
	session_abort(&f.s, &data);
	ev = find(&f, "message_end");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev, "message"), "stopReason")), "aborted");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev, "message"), "errorMessage")),
			 "Request was aborted");
	ck_assert_str_eq(types(&f), "message_end:assistant,turn_end,agent_end,agent_settled,session_settled");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(data, "discardedMessages"), 0)), "later");
	json_decref(data);
	clock_fake_advance(&f.clock, 100000);
	ck_assert_str_eq(types(&f), "");
	fx_release(&f);
}
END_TEST

START_TEST(test_abort_in_retried_attempt_closes_chain_once)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };
	json_t *ev;

	fx_init(&f, "[{\"error\":\"503\"},{\"hang\":true}]", sets);
	prompt(&f, "hi");
	clock_fake_advance(&f.clock, 10);
	clock_fake_settle(&f.clock);
	types(&f);
	session_abort(&f.s, NULL);
	ev = find(&f, "auto_retry_end");
	ck_assert_str_eq(json_string_value(json_object_get(ev, "finalError")), "Retry cancelled");
	ck_assert_str_eq(types(&f), "message_end:assistant,turn_end,auto_retry_end,agent_end,agent_settled,session_settled");
	fx_release(&f);
}
END_TEST

START_TEST(test_busy_prompt_is_refused_mentioning_streaming_behavior)
{
	struct fx f;
	char err[256];

	fx_init(&f, "[{\"error\":\"503\"}]", NULL);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	ck_assert_int_eq(f.s.chain.phase, CHAIN_BACKOFF);
	ck_assert_int_eq(submit(&f, "again", BEHAVIOR_NONE, NULL, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "streamingBehavior"));
	fx_release(&f);
}
END_TEST

START_TEST(test_follow_up_runs_after_chain_in_same_run)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };
	char err[128];
	json_t *ev;

	fx_init(&f, "[{\"error\":\"503\"},{\"text\":\"one\"},{\"text\":\"two\"}]", sets);
	prompt(&f, "first");
	clock_fake_settle(&f.clock);
	ck_assert_int_eq(submit(&f, "second", BEHAVIOR_FOLLOW_UP, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(json_array_size(f.s.follow_ups), 1);
	types(&f);
	clock_fake_advance(&f.clock, 10);
	clock_fake_advance(&f.clock, 0);
	clock_fake_settle(&f.clock);
	clock_fake_settle(&f.clock);
	ev = find(&f, "agent_end");
	ck_assert_ptr_nonnull(ev);
	ck_assert_int_eq(json_array_size(json_object_get(ev, "messages")), 4);
	ck_assert_str_eq(types(&f), "turn_start,message_start:assistant,text_start,text_delta,text_end,"
			 "message_end:assistant,auto_retry_end,turn_end,"
			 "turn_start,message_start:user,message_end:user,message_start:assistant,text_start,"
			 "text_delta,text_end,message_end:assistant,turn_end,agent_end,agent_settled,session_settled");
	fx_release(&f);
}
END_TEST

START_TEST(test_steer_during_backoff_goes_before_next_attempt)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };
	json_t *ctx;

	fx_init(&f, "[{\"error\":\"503\"}]", sets);
	prompt(&f, "first");
	clock_fake_settle(&f.clock);
	ck_assert_int_eq(session_steer(&f.s, "mind the tests", NULL, NULL, NULL), 0);
	types(&f);
	clock_fake_advance(&f.clock, 10);
	ck_assert_ptr_nonnull(strstr(types(&f), "turn_start,message_start:user,message_end:user,message_start:assistant"));
	clock_fake_settle(&f.clock);
	/* The echo answers the steering message, the last user message. */
	ctx = json_array_get(f.s.messages, 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(ctx, "content"), 0), "text")),
			 "mind the tests");
	fx_release(&f);
}
END_TEST

START_TEST(test_disabling_mid_chain_still_closes_chain_once)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };
	json_t *data = NULL;
	char err[256];
	json_t *ev;

	fx_init(&f, "[{\"error\":\"503\"},{\"error\":\"503\"}]", sets);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	ck_assert_int_eq(session_set_auto_retry(&f.s, false, true, &data, err, sizeof(err)), 0);
	ck_assert_ptr_null(data);
	types(&f);
	clock_fake_advance(&f.clock, 10);
	clock_fake_settle(&f.clock);
	ev = find(&f, "auto_retry_end");
	ck_assert(json_is_false(json_object_get(ev, "success")));
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "attempt")), 1);
	ck_assert_str_eq(types(&f), "turn_start,message_start:assistant,message_end:assistant,turn_end,"
			 "auto_retry_end,agent_end,agent_settled,session_settled");
	/* Persisted to the settings file. */
	ck_assert_int_eq(access(f.path, F_OK), 0);
	fx_release(&f);
}
END_TEST

/* The last message_end of an assistant message. */
static json_t *last_assistant_end(struct fx *f)
{
	json_t *ev, *found = NULL;
	size_t i;

	json_array_foreach(f->events, i, ev)
		if (strcmp(json_string_value(json_object_get(ev, "type")), "message_end") == 0 &&
		    strcmp(json_string_value(json_object_get(json_object_get(ev, "message"), "role")),
			   "assistant") == 0)
			found = ev;
	return found;
}

START_TEST(test_retryable_failure_with_retries_off_says_retry_skipped)
{
	struct fx f;
	const char *const off[] = { "retry.enabled=false", NULL };
	json_t *ev;
	size_t i;

	fx_init(&f, "[{\"error\":\"503\"}]", off);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	ck_assert_str_eq(json_string_value(json_object_get(last_assistant_end(&f), "retrySkipped")),
			 "disabled");
	ck_assert_ptr_null(find(&f, "auto_retry_end"));
	fx_release(&f);
	/* Not retryable anyway: nothing was skipped. */
	fx_init(&f, "[{\"error\":\"401 invalid api key\"}]", off);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	ck_assert_ptr_nonnull(last_assistant_end(&f));
	ck_assert_ptr_null(json_object_get(last_assistant_end(&f), "retrySkipped"));
	fx_release(&f);
	/* Retries on: a retried failure carries nothing either. */
	fx_init(&f, "[{\"error\":\"503\"},{\"text\":\"ok\"}]", NULL);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	clock_fake_advance(&f.clock, 2000);
	clock_fake_settle(&f.clock);
	ck_assert_ptr_nonnull(find(&f, "auto_retry_end"));
	json_array_foreach(f.events, i, ev)
		ck_assert_ptr_null(json_object_get(ev, "retrySkipped"));
	fx_release(&f);
}
END_TEST

START_TEST(test_usage_limit_switches_credential_with_zero_delay)
{
	struct fx f;
	const char *const sets[] = { "sim.credentials=[\"a\",\"b\"]", NULL };
	json_t *ev;

	fx_init(&f, "[{\"error\":\"usage limit reached, try again in 2 hours\"}]", sets);
	prompt(&f, "hi");
	types(&f);
	clock_run_due(&f.clock); /* the attempt only; the 0 ms retry waits for the next pass */
	ev = find(&f, "retry_fallback_applied");
	ck_assert_ptr_nonnull(ev);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "kind")), "credential");
	ck_assert_str_eq(json_string_value(json_object_get(ev, "from")), "a");
	ck_assert_str_eq(json_string_value(json_object_get(ev, "to")), "b");
	ck_assert_int_eq(json_integer_value(json_object_get(find(&f, "auto_retry_start"), "delayMs")), 0);
	ck_assert_str_eq(types(&f), "message_start:assistant,message_end:assistant,turn_end,"
			 "retry_fallback_applied,auto_retry_start");
	/* "a" stays exhausted until the hint (2 h) runs out. */
	ck_assert_int_eq(f.s.chain.fallback.auth.exhausted_until[0], clock_wall_ms(&f.clock) + 2 * 3600 * 1000);
	clock_fake_settle(&f.clock);
	ck_assert_str_eq(authstore_current(&f.s.chain.fallback.auth), "b");
	fx_release(&f);
}
END_TEST

START_TEST(test_usage_limit_with_nowhere_to_switch_ends_at_once_with_the_reset_time)
{
	struct fx f;
	json_t *end;

	fx_init(&f, "[{\"error\":\"usage limit reached\"}]", NULL);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	/* Not retried every 2 s: no chain, no wait, the message says why. */
	ck_assert_ptr_null(find(&f, "auto_retry_start"));
	end = find(&f, "turn_end");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(end, "message"),
							   "errorMessage")),
			 "usage limit reached (usage limit: no other credential or model to switch to)");
	ck_assert_ptr_nonnull(find(&f, "agent_end"));
	fx_release(&f);

	/* Inside an open chain: auto_retry_end closes it, naming the class and
	 * rule, and the reset time the server stated. */
	fx_init(&f, "[{\"error\":\"503\"},{\"error\":\"usage limit reached, resets in 4h12m\"}]",
		NULL);
	prompt(&f, "hi");
	clock_fake_advance(&f.clock, 10000);
	end = find(&f, "auto_retry_end");
	ck_assert_ptr_nonnull(end);
	ck_assert(json_is_false(json_object_get(end, "success")));
	ck_assert_str_eq(json_string_value(json_object_get(end, "finalError")),
			 "usage limit reached, resets in 4h12m (usage limit: resets in 4h12m)");
	ck_assert_str_eq(json_string_value(json_object_get(end, "errorClass")), "usage_limit");
	ck_assert_ptr_nonnull(json_object_get(end, "rule"));
	fx_release(&f);
}
END_TEST

START_TEST(test_state_reports_retry_fields_during_backoff)
{
	struct fx f;
	json_t *st;

	fx_init(&f, "[{\"error\":\"503\"}]", NULL);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	st = session_state(&f.s);
	ck_assert(json_is_true(json_object_get(st, "isStreaming")));
	ck_assert(json_is_true(json_object_get(st, "isRetrying")));
	ck_assert(json_is_true(json_object_get(st, "autoRetryEnabled")));
	ck_assert_int_eq(json_integer_value(json_object_get(st, "retryAttempt")), 1);
	/* The failed message was dropped: only the user message remains. */
	ck_assert_int_eq(json_integer_value(json_object_get(st, "messageCount")), 1);
	json_decref(st);
	fx_release(&f);
}
END_TEST

START_TEST(test_output_pause_stops_streaming_until_resumed)
{
	struct fx f;
	size_t before;

	fx_init(&f, "[{\"text\":\"w1 w2 w3 w4 w5 w6 w7 w8 w9 w10\"}]", NULL);
	prompt(&f, "hi");
	session_set_output_paused(&f.s, true);
	clock_fake_advance(&f.clock, 1000);
	before = json_array_size(f.events);
	clock_fake_advance(&f.clock, 1000);
	ck_assert_uint_eq(json_array_size(f.events), before);
	ck_assert(f.s.busy);
	session_set_output_paused(&f.s, false);
	clock_fake_advance(&f.clock, 10);
	ck_assert(!f.s.busy);
	ck_assert_ptr_nonnull(strstr(types(&f), "text_end,message_end:assistant,turn_end,agent_end,agent_settled,session_settled"));
	fx_release(&f);
}
END_TEST

START_TEST(test_delta_updates_carry_no_partial_but_final_message_is_whole)
{
	struct fx f;
	const char *const sets[] = { "rpc.messageUpdates=delta", NULL };
	size_t i;
	json_t *ev, *end = NULL;
	int deltas = 0;

	fx_init(&f, "[{\"text\":\"one two three\"}]", sets);
	prompt(&f, "hi");
	clock_fake_advance(&f.clock, 10);
	json_array_foreach(f.events, i, ev) {
		const char *t = json_string_value(json_object_get(ev, "type"));

		if (strcmp(t, "message_update") == 0) {
			ck_assert_ptr_null(json_object_get(ev, "message"));
			ck_assert_ptr_null(json_object_get(json_object_get(ev, "assistantMessageEvent"), "partial"));
			deltas++;
		}
		if (strcmp(t, "message_end") == 0)
			end = json_object_get(ev, "message");
	}
	ck_assert_int_eq(deltas, 5); /* text_start, 3 deltas, text_end */
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(end, "content"), 0), "text")),
			 "one two three");
	fx_release(&f);
}
END_TEST

static json_t *ev_field(struct fx *f, const char *type, const char *field)
{
	return json_object_get(find(f, type), field);
}

START_TEST(test_prompt_snapshot_survives_later_policy_changes)
{
	struct fx f;
	char err[512];
	json_t *data = NULL, *pol, *st;

	fx_init(&f, "[{\"error\":\"503\"},{\"error\":\"503\"},{\"error\":\"503\"}]", NULL);
	ck_assert_msg(submit(&f, "hi", BEHAVIOR_NONE, "{\"baseDelayMs\":50,\"maxRetries\":1}", err,
			     sizeof(err)) == 0, "%s", err);
	clock_fake_settle(&f.clock);
	ck_assert_int_eq(json_integer_value(ev_field(&f, "auto_retry_start", "delayMs")), 50);
	st = session_state(&f.s);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(st, "retryPolicy"), "baseDelayMs")), 50);
	json_decref(st);
	/* A new policy mid-chain reaches the next chain only. */
	pol = json_pack("{s:i, s:i}", "baseDelayMs", 7000, "maxRetries", 9);
	ck_assert_msg(session_set_retry_policy(&f.s, pol, false, &data, err, sizeof(err)) == 0, "%s", err);
	json_decref(pol);
	json_decref(data);
	types(&f);
	clock_fake_advance(&f.clock, 50);
	clock_fake_settle(&f.clock);
	/* maxRetries 1 from the snapshot: the second failure ends the chain. */
	ck_assert_int_eq(json_integer_value(ev_field(&f, "auto_retry_end", "attempt")), 1);
	ck_assert_ptr_null(find(&f, "auto_retry_start"));
	types(&f);
	prompt(&f, "again");
	clock_fake_settle(&f.clock);
	st = session_state(&f.s);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(st, "retryPolicy"), "baseDelayMs")), 7000);
	json_decref(st);
	fx_release(&f);
}
END_TEST

START_TEST(test_set_auto_retry_off_still_stops_a_snapshot_chain)
{
	struct fx f;
	char err[256];
	json_t *data = NULL;

	fx_init(&f, "[{\"error\":\"503\"},{\"error\":\"503\"}]", NULL);
	ck_assert(submit(&f, "hi", BEHAVIOR_NONE, "{\"enabled\":true,\"baseDelayMs\":10}", err,
			 sizeof(err)) == 0);
	clock_fake_settle(&f.clock);
	session_set_auto_retry(&f.s, false, true, &data, err, sizeof(err));
	types(&f);
	clock_fake_advance(&f.clock, 10);
	clock_fake_settle(&f.clock);
	ck_assert_str_eq(types(&f), "turn_start,message_start:assistant,message_end:assistant,turn_end,"
			 "auto_retry_end,agent_end,agent_settled,session_settled");
	fx_release(&f);
}
END_TEST

START_TEST(test_prompt_with_invalid_retry_settings_is_refused_naming_key)
{
	struct fx f;
	char err[512];

	fx_init(&f, "[]", NULL);
	ck_assert_int_eq(submit(&f, "hi", BEHAVIOR_NONE, "{\"maxRetries\":\"many\"}", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "retry.maxRetries must be an integer"));
	ck_assert_int_eq(submit(&f, "hi", BEHAVIOR_NONE, "{\"bogus\":1}", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "retry.bogus is not a retry setting");
	ck_assert_int_eq(submit(&f, "hi", BEHAVIOR_NONE, "{\"retryablePatterns\":[\"(oops\"]}", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "retry.retryablePatterns[0] \"(oops\""));
	ck_assert_ptr_nonnull(strstr(err, "offset"));
	ck_assert(!f.s.busy);
	fx_release(&f);
}
END_TEST

START_TEST(test_hint_in_error_text_lengthens_the_backoff)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=100", NULL };
	json_t *ev;

	fx_init(&f, "[{\"error\":\"429 Too Many Requests. Please retry in 1.5s\"}]", sets);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	ev = find(&f, "auto_retry_start");
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "delayMs")), 1500);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "reason")), "server-hint");
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "hintMs")), 1500);
	ck_assert_int_eq(clock_fake_next_in(&f.clock), 1500);
	fx_release(&f);
}
END_TEST

START_TEST(test_structured_hint_above_cap_fails_fast)
{
	struct fx f;
	const char *const sets[] = { "retry.maxDelayMs=100", NULL };
	json_t *ev;

	fx_init(&f, "[{\"error\":\"503 busy\",\"retryAfterMs\":11180000}]", sets);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	ck_assert_ptr_null(find(&f, "auto_retry_start"));
	ev = find(&f, "auto_retry_end");
	ck_assert_ptr_nonnull(ev);
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "attempt")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "finalError")),
			 "Provider requested 11180000ms wait, exceeds retry.maxDelayMs (100ms). "
			 "Original error: 503 busy");
	ck_assert_str_eq(types(&f), FIRST_TURN ",message_start:assistant,message_end:assistant,turn_end,"
			 "auto_retry_end,agent_end,agent_settled,session_settled");
	fx_release(&f);
}
END_TEST

START_TEST(test_stalled_stream_is_aborted_and_retried)
{
	struct fx f;
	const char *const sets[] = { "retry.idleTimeoutMs=500", "retry.baseDelayMs=10", NULL };
	json_t *ev;

	fx_init(&f, "[{\"text\":\"half\",\"hang\":true},{\"text\":\"whole\"}]", sets);
	prompt(&f, "hi");
	clock_fake_advance(&f.clock, 499);
	ck_assert_ptr_null(find(&f, "auto_retry_start"));
	clock_fake_advance(&f.clock, 1);
	ev = find(&f, "auto_retry_start");
	ck_assert_ptr_nonnull(ev);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "errorMessage")),
			 "stream stall: no data for 500 ms");
	types(&f);
	clock_fake_advance(&f.clock, 10);
	clock_fake_settle(&f.clock);
	ck_assert(json_is_true(ev_field(&f, "auto_retry_end", "success")));
	ck_assert_int_eq(clock_fake_next_in(&f.clock), -1);
	fx_release(&f);
}
END_TEST

START_TEST(test_consecutive_overloads_fall_back_to_next_model_then_revert)
{
	struct fx f;
	const char *const sets[] = { "retry.fallbackModels=[\"sim-2\"]", "retry.fallbackAfterConsecutive=2",
				     "retry.baseDelayMs=10", "retry.fallbackCooldownMs=1000", NULL };
	json_t *ev;

	fx_init(&f, "[{\"error\":\"overloaded_error\"},{\"error\":\"529 overloaded\"},{\"text\":\"ok\"}]", sets);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	ck_assert_ptr_null(find(&f, "retry_fallback_applied"));
	types(&f);
	clock_fake_advance(&f.clock, 10);
	clock_fake_settle(&f.clock);
	ev = find(&f, "retry_fallback_applied");
	ck_assert_ptr_nonnull(ev);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "kind")), "model");
	ck_assert_str_eq(json_string_value(json_object_get(ev, "from")), "sim-1");
	ck_assert_str_eq(json_string_value(json_object_get(ev, "to")), "sim-2");
	ck_assert_str_eq(json_string_value(ev_field(&f, "auto_retry_start", "reason")), "model-fallback");
	ck_assert_int_eq(json_integer_value(ev_field(&f, "auto_retry_start", "delayMs")), 0);
	/* The answer came from the fallback model (before turn_end, agent_end and the settled pair). */
	ev = json_array_get(f.events, json_array_size(f.events) - 6);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "message_end");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev, "message"), "model")), "sim-2");
	types(&f);
	/* Before the cooldown the next prompt stays on the fallback ... */
	prompt(&f, "two");
	clock_fake_settle(&f.clock);
	ck_assert_ptr_null(find(&f, "retry_fallback_applied"));
	types(&f);
	/* ... after it, the primary comes back. */
	clock_fake_advance(&f.clock, 1000);
	prompt(&f, "three");
	ev = find(&f, "retry_fallback_applied");
	ck_assert_ptr_nonnull(ev);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "to")), "sim-1");
	ck_assert_str_eq(json_string_value(json_object_get(ev, "reason")), "cooldown-expired");
	fx_release(&f);
}
END_TEST

START_TEST(test_usage_limit_without_spare_credential_falls_back_to_model)
{
	struct fx f;
	const char *const sets[] = { "retry.fallbackModels=[\"sim-2\"]", NULL };
	json_t *ev;

	fx_init(&f, "[{\"error\":\"usage limit reached\"}]", sets);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	ev = find(&f, "retry_fallback_applied");
	ck_assert_ptr_nonnull(ev);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "reason")), "usage-limit");
	ck_assert_int_eq(json_integer_value(ev_field(&f, "auto_retry_start", "delayMs")), 0);
	fx_release(&f);
}
END_TEST

START_TEST(test_budget_is_shared_across_prompts)
{
	struct fx f;
	const char *const sets[] = { "retry.budget={\"maxTokens\":6,\"tokenRatio\":1}", "retry.baseDelayMs=10",
				     "retry.maxRetries=1", NULL };
	json_t *st, *ev;

	/* Each prompt: a failure (-1) and a retried success (+1) — then failures only. */
	fx_init(&f, "[{\"error\":\"503\"},{\"error\":\"503\"},{\"error\":\"503\"},{\"error\":\"503\"},"
		    "{\"error\":\"503\"}]", sets);
	prompt(&f, "one");
	clock_fake_advance(&f.clock, 100);   /* 503, 503: 6 -> 4, chain over (max 1) */
	st = session_state(&f.s);
	ck_assert(json_real_value(json_object_get(json_object_get(st, "retryBudget"), "tokens")) == 4.0);
	json_decref(st);
	types(&f);
	prompt(&f, "two");
	clock_fake_advance(&f.clock, 100);   /* 503: 4 -> 3 = half: throttled */
	ev = find(&f, "auto_retry_end");
	ck_assert_ptr_nonnull(ev);
	ck_assert_ptr_null(find(&f, "auto_retry_start"));
	ck_assert(strncmp(json_string_value(json_object_get(ev, "finalError")), "Retry budget exhausted", 22) == 0);
	fx_release(&f);
}
END_TEST

START_TEST(test_set_retry_policy_validates_everything_before_applying)
{
	struct fx f;
	char err[512];
	json_t *data = NULL, *pol;

	fx_init(&f, "[]", NULL);
	pol = json_pack("{s:i, s:[s]}", "baseDelayMs", 5, "nonRetryablePatterns", "a[b");
	ck_assert_int_eq(session_set_retry_policy(&f.s, pol, false, &data, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "retry.nonRetryablePatterns[0] \"a[b\""));
	json_decref(pol);
	/* Nothing changed: not even the valid key. */
	ck_assert_int_eq(settings_int(&f.settings, "retry.baseDelayMs", -1), 2000);
	pol = json_pack("{s:s}", "jitter", "sometimes");
	ck_assert_int_eq(session_set_retry_policy(&f.s, pol, false, &data, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "retry.jitter must be one of none|full|equal|decorrelated"));
	json_decref(pol);
	pol = json_pack("{s:i, s:s}", "baseDelayMs", 5, "jitter", "full");
	ck_assert_int_eq(session_set_retry_policy(&f.s, pol, true, &data, err, sizeof(err)), 0);
	ck_assert(json_is_true(json_object_get(data, "persisted")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(data, "policy"), "baseDelayMs")), 5);
	ck_assert_int_eq(access(f.path, F_OK), 0);
	json_decref(pol);
	json_decref(data);
	fx_release(&f);
}
END_TEST

START_TEST(test_running_chain_keeps_its_patterns_when_policy_changes)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };
	char err[512];
	json_t *data = NULL, *pol;

	fx_init(&f, "[{\"error\":\"503\"},{\"error\":\"503\"},{\"text\":\"ok\"}]", sets);
	prompt(&f, "hi");
	clock_fake_settle(&f.clock);
	/* From now on nothing would be retryable — for later chains only. */
	pol = json_pack("{s:[s]}", "retryablePatterns", "never-matches-anything");
	ck_assert_msg(session_set_retry_policy(&f.s, pol, false, &data, err, sizeof(err)) == 0, "%s", err);
	json_decref(pol);
	json_decref(data);
	types(&f);
	clock_fake_advance(&f.clock, 100);
	ck_assert_int_eq(json_integer_value(ev_field(&f, "auto_retry_start", "attempt")), 2);
	ck_assert(json_is_true(ev_field(&f, "auto_retry_end", "success")));
	fx_release(&f);
}
END_TEST

START_TEST(test_set_auto_retry_off_reaches_follow_ups_queued_before_it)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };
	char err[256];
	json_t *data = NULL;

	fx_init(&f, "[{\"text\":\"one\",\"delayMs\":5},{\"error\":\"503\"}]", sets);
	prompt(&f, "first");
	ck_assert_int_eq(submit(&f, "second", BEHAVIOR_FOLLOW_UP, NULL, err, sizeof(err)), 0);
	session_set_auto_retry(&f.s, false, true, &data, err, sizeof(err));
	clock_fake_advance(&f.clock, 100);
	ck_assert_ptr_null(find(&f, "auto_retry_start"));
	ck_assert(!f.s.busy);
	fx_release(&f);
}
END_TEST

START_TEST(test_budget_in_a_prompt_is_refused_as_daemon_wide)
{
	struct fx f;
	char err[256];

	fx_init(&f, "[]", NULL);
	ck_assert_int_eq(submit(&f, "hi", BEHAVIOR_NONE, "{\"budget\":{\"maxTokens\":5,\"tokenRatio\":1}}",
				err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "retry.budget is shared by every prompt"));
	fx_release(&f);
}
END_TEST

/* A provider driven by hand, the way an agent CLI's child process drives
 * provider_cli: it records what each start() was given. */
struct stub {
	struct provider base;
	struct provider_sink sink;
	int starts, aborts;
	bool fail_start;         /* start() refuses, as a provider that cannot run does */
	int attempt;
	int64_t idle_timeout_ms;
	char continuation[256];
	char thinking_level[16];
};

static int stub_start(struct provider *base, const struct attempt_ctx *ctx,
		      const struct provider_sink *sink, char *err, size_t errlen)
{
	struct stub *st = (struct stub *)base;

	st->starts++;
	if (st->fail_start) {
		snprintf(err, errlen, "stub: cannot start (not retryable)");
		return -1;
	}
	st->sink = *sink;
	st->attempt = ctx->attempt;
	st->idle_timeout_ms = ctx->idle_timeout_ms;
	snprintf(st->continuation, sizeof(st->continuation), "%s",
		 ctx->continuation_prompt ? ctx->continuation_prompt : "(null)");
	snprintf(st->thinking_level, sizeof(st->thinking_level), "%s",
		 ctx->thinking_level ? ctx->thinking_level : "(null)");
	return 0;
}

static void stub_abort(struct provider *base)
{
	((struct stub *)base)->aborts++;
}

static void stub_free(struct provider *base)
{
	json_decref(base->models);
	json_decref(base->credentials);
	free(base);
}

static const struct provider_ops stub_ops = { stub_start, stub_abort, NULL, stub_free, NULL };

static struct stub *stub_new(bool owns_idle_timeout)
{
	struct stub *st = calloc(1, sizeof(*st));

	ck_assert_ptr_nonnull(st);
	st->base.ops = &stub_ops;
	st->base.name = "stub";
	st->base.api = "agent-cli";
	st->base.base_url = "";
	st->base.models = json_pack("[{s:s}]", "id", "default");
	st->base.credentials = json_array();
	st->base.owns_idle_timeout = owns_idle_timeout;
	return st;
}

static void stub_fail(struct stub *st, const char *error, const char *no_resume)
{
	struct provider_result r = { .stop = STOP_ERROR, .error_message = error, .hint_ms = -1,
				     .next = no_resume ? PROVIDER_NEXT_CANNOT : PROVIDER_NEXT_CONTINUE,
				     .next_why = no_resume };

	st->sink.finish(st->sink.ctx, &r);
}

static void stub_succeed(struct stub *st)
{
	struct provider_result r = { .stop = STOP_STOP, .hint_ms = -1 };

	st->sink.finish(st->sink.ctx, &r);
}

START_TEST(test_provider_events_are_emitted_as_is_inside_the_message)
{
	struct fx f;
	struct stub *st = stub_new(false);
	json_t *ev;

	fx_init_with(&f, "[]", NULL, &st->base);
	prompt(&f, "hi");
	types(&f);
	st->sink.event(st->sink.ctx, json_pack("{s:s, s:s, s:i}", "type", "provider_retry",
					       "errorMessage", "529 overloaded", "attempt", 1));
	st->sink.text_start(st->sink.ctx);
	st->sink.text_delta(st->sink.ctx, "ok", 2);
	st->sink.text_end(st->sink.ctx);
	st->sink.event(st->sink.ctx, json_pack("{s:s, s:s, s:s, s:{}}", "type", "tool_execution_start",
					       "toolCallId", "t1", "toolName", "Bash", "args"));
	ev = json_incref(json_array_get(f.events, 1));
	stub_succeed(st);
	ck_assert_str_eq(types(&f), "message_start:assistant,provider_retry,text_start,text_delta,"
			 "text_end,tool_execution_start,message_end:assistant,turn_end,agent_end,agent_settled,session_settled");
	ck_assert_str_eq(json_string_value(json_object_get(ev, "errorMessage")), "529 overloaded");
	ck_assert_int_eq(json_object_size(ev), 3);
	json_decref(ev);
	fx_release(&f);
}
END_TEST

START_TEST(test_retryable_failure_without_a_context_to_resume_is_final_and_says_why)
{
	struct fx f;
	struct stub *st = stub_new(true);
	json_t *ev;

	fx_init_with(&f, "[]", NULL, &st->base);
	prompt(&f, "hi");
	types(&f);
	stub_fail(st, "503 Service Unavailable", "the agent reported no session id to resume");
	ev = find(&f, "message_end");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev, "message"), "errorMessage")),
			 "503 Service Unavailable (not retried: the agent reported no session id to resume)");
	ck_assert_str_eq(types(&f), "message_start:assistant,message_end:assistant,turn_end,agent_end,agent_settled,session_settled");
	ck_assert_int_eq(st->starts, 1);
	ck_assert_int_eq(clock_fake_next_in(&f.clock), -1);
	/* A failure that is not retryable anyway keeps its own text. */
	prompt(&f, "again");
	types(&f);
	stub_fail(st, "401 Unauthorized", "the agent reported no session id to resume");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(find(&f, "message_end"),
									   "message"), "errorMessage")),
			 "401 Unauthorized");
	fx_release(&f);
}
END_TEST

START_TEST(test_no_resume_in_an_open_chain_ends_it_with_the_reason)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", NULL };
	struct stub *st = stub_new(true);
	json_t *ev;

	fx_init_with(&f, "[]", sets, &st->base);
	prompt(&f, "hi");
	stub_fail(st, "503 Service Unavailable", NULL);
	ck_assert_ptr_nonnull(find(&f, "auto_retry_start"));
	types(&f);
	clock_fake_advance(&f.clock, 10);
	ck_assert_int_eq(st->starts, 2);
	stub_fail(st, "overloaded", "gone");
	ev = find(&f, "auto_retry_end");
	ck_assert(json_is_false(json_object_get(ev, "success")));
	ck_assert_str_eq(json_string_value(json_object_get(ev, "finalError")),
			 "overloaded (not retried: gone)");
	fx_release(&f);
}
END_TEST

START_TEST(test_attempt_number_idle_timeout_and_continuation_prompt_reach_the_provider)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", "retry.idleTimeoutMs=500", NULL };
	struct stub *st = stub_new(true);
	char err[256];

	fx_init_with(&f, "[]", sets, &st->base);
	prompt(&f, "hi");
	ck_assert_int_eq(st->attempt, 0);
	ck_assert_int_eq(st->idle_timeout_ms, 500);
	ck_assert_str_eq(st->continuation, "Continue from where you left off. Do not repeat work that "
			 "is already done.");
	/* The provider keeps the stall clock: the session runs none. */
	ck_assert_int_eq(clock_fake_next_in(&f.clock), -1);
	stub_fail(st, "503 Service Unavailable", NULL);
	clock_fake_advance(&f.clock, 10);
	ck_assert_int_eq(st->starts, 2);
	ck_assert_int_eq(st->attempt, 1);
	stub_succeed(st);
	/* A prompt's own policy carries its own continuation prompt. */
	ck_assert_msg(submit(&f, "two", BEHAVIOR_NONE, "{\"continuationPrompt\":\"go on\"}", err,
			     sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(st->attempt, 0);
	ck_assert_str_eq(st->continuation, "go on");
	stub_succeed(st);
	ck_assert_int_eq(submit(&f, "three", BEHAVIOR_NONE, "{\"continuationPrompt\":\"\"}", err,
				sizeof(err)), -1);
	ck_assert_str_eq(err, "retry.continuationPrompt must be a non-empty string (got \"\")");
	fx_release(&f);
}
END_TEST

/* A model reasoning for longer than retry.idleTimeoutMs is not stalled while
 * its thinking streams; silence after it still is. The level reaches the
 * provider, clamped to the model. */
START_TEST(test_thinking_deltas_keep_the_stall_clock_alive_and_the_level_reaches_the_provider)
{
	struct fx f;
	const char *const sets[] = { "retry.baseDelayMs=10", "retry.idleTimeoutMs=500", NULL };
	struct stub *st = stub_new(false);
	json_t *ev;

	json_decref(st->base.models);
	st->base.models = json_pack("[{s:s, s:b}]", "id", "sim-1", "reasoning", 1);
	fx_init_with(&f, "[]", sets, &st->base);
	prompt(&f, "hi");
	ck_assert_str_eq(st->thinking_level, "medium");
	st->sink.thinking_start(st->sink.ctx);
	for (int i = 0; i < 5; i++) {
		clock_fake_advance(&f.clock, 400);
		st->sink.thinking_delta(st->sink.ctx, "hmm ", 4);
	}
	ck_assert_ptr_null(find(&f, "auto_retry_start"));
	st->sink.thinking_end(st->sink.ctx, "sig", 3, false);
	clock_fake_advance(&f.clock, 499);
	ck_assert_ptr_null(find(&f, "auto_retry_start"));
	clock_fake_advance(&f.clock, 1);
	ev = find(&f, "auto_retry_start");
	ck_assert_ptr_nonnull(ev);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "errorMessage")),
			 "stream stall: no data for 500 ms");
	session_set_thinking_level(&f.s, "xhigh");
	clock_fake_advance(&f.clock, 10);
	ck_assert_int_eq(st->starts, 2);
	ck_assert_str_eq(st->thinking_level, "high");
	stub_succeed(st);
	fx_release(&f);
}
END_TEST

START_TEST(test_every_text_block_keeps_its_text_with_delta_updates)
{
	struct fx f;
	const char *const sets[] = { "rpc.messageUpdates=\"delta\"", NULL };
	struct stub *st = stub_new(true);
	json_t *content;

	fx_init_with(&f, "[]", sets, &st->base);
	prompt(&f, "hi");
	for (int b = 0; b < 2; b++) {
		st->sink.text_start(st->sink.ctx);
		st->sink.text_delta(st->sink.ctx, b ? "second " : "first ", b ? 7 : 6);
		st->sink.text_delta(st->sink.ctx, "block", 5);
		st->sink.text_end(st->sink.ctx);
	}
	stub_succeed(st);
	/* The assistant answer, as agent_end lists it after the prompt. */
	content = json_object_get(json_array_get(json_object_get(find(&f, "agent_end"), "messages"), 1),
				  "content");
	ck_assert_uint_eq(json_array_size(content), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(content, 0), "text")),
			 "first block");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(content, 1), "text")),
			 "second block");
	fx_release(&f);
}
END_TEST

START_TEST(test_session_stall_timer_still_runs_for_providers_that_do_not_keep_one)
{
	struct fx f;
	const char *const sets[] = { "retry.idleTimeoutMs=500", NULL };
	struct stub *st = stub_new(false);

	fx_init_with(&f, "[]", sets, &st->base);
	prompt(&f, "hi");
	ck_assert_int_eq(clock_fake_next_in(&f.clock), 500);
	clock_fake_advance(&f.clock, 500);
	ck_assert_int_eq(st->aborts, 1);
	ck_assert_str_eq(json_string_value(json_object_get(find(&f, "auto_retry_start"), "errorMessage")),
			 "stream stall: no data for 500 ms");
	fx_release(&f);
}
END_TEST

/* Counts the events of one type and clears the log. */
static size_t count(struct fx *f, const char *type)
{
	size_t i, n = 0;
	json_t *ev;

	json_array_foreach(f->events, i, ev)
		n += strcmp(json_string_value(json_object_get(ev, "type")), type) == 0;
	json_array_clear(f->events);
	return n;
}

START_TEST(test_provider_failing_at_start_is_reported_on_the_next_loop_turn)
{
	struct fx f;
	struct stub *st = stub_new(true);
	char err[256];

	fx_init_with(&f, "[]", NULL, &st->base);
	st->fail_start = true;
	prompt(&f, "hi");
	/* Nothing reported from inside the prompt call. */
	ck_assert_str_eq(types(&f), FIRST_TURN);
	ck_assert(f.s.busy);
	/* A command in between sees the run still going, and may queue. */
	ck_assert_int_eq(submit(&f, "next", BEHAVIOR_FOLLOW_UP, NULL, err, sizeof(err)), 0);
	clock_run_due(&f.clock);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(find(&f, "message_end"),
									   "message"), "errorMessage")),
			 "stub: cannot start (not retryable)");
	ck_assert_str_eq(types(&f), "message_start:assistant,message_end:assistant,turn_end,"
			 "turn_start,message_start:user,message_end:user");
	clock_fake_settle(&f.clock);
	ck_assert_str_eq(types(&f), "message_start:assistant,message_end:assistant,turn_end,agent_end,agent_settled,session_settled");
	ck_assert_int_eq(st->starts, 2);
	/* An abort while the failure is pending ends the message once. */
	prompt(&f, "again");
	types(&f);
	session_abort(&f.s, NULL);
	ck_assert_int_eq(st->aborts, 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(find(&f, "message_end"),
									   "message"), "errorMessage")),
			 "Request was aborted");
	ck_assert_int_eq(clock_fake_next_in(&f.clock), -1);
	fx_release(&f);
}
END_TEST

START_TEST(test_many_follow_ups_with_a_provider_failing_at_start_do_not_recurse)
{
	enum { FOLLOW_UPS = 10000 };
	struct fx f;
	struct stub *st = stub_new(true);
	char err[256];

	fx_init_with(&f, "[]", NULL, &st->base);
	prompt(&f, "first");
	for (int i = 0; i < FOLLOW_UPS; i++)
		ck_assert_int_eq(submit(&f, "more", BEHAVIOR_FOLLOW_UP, NULL, err, sizeof(err)), 0);
	json_array_clear(f.events);
	st->fail_start = true;
	stub_succeed(st);
	/* One follow-up started (and failed); its report waits for the loop. */
	ck_assert_int_eq(st->starts, 2);
	ck_assert_uint_eq(count(&f, "turn_start"), 1);
	/* Each loop turn reports one failure and starts the next follow-up. */
	clock_run_due(&f.clock);
	ck_assert_int_eq(st->starts, 3);
	ck_assert_uint_eq(json_array_size(f.s.follow_ups), FOLLOW_UPS - 2);
	ck_assert_uint_eq(count(&f, "turn_end"), 1);
	clock_fake_settle(&f.clock);
	ck_assert_int_eq(st->starts, FOLLOW_UPS + 1);
	ck_assert_uint_eq(count(&f, "agent_end"), 1);
	ck_assert(!f.s.busy);
	fx_release(&f);
}
END_TEST

/* The fast path of delta-mode text deltas (line_buf/line_done, jsontext)
 * writes the bytes the json path writes: the same run, once each way. */
static struct jsontext_buf fast_lines;

static struct jsontext_buf *line_buf(void *ctx)
{
	(void)ctx;
	return &fast_lines;
}

static void line_done(void *ctx)
{
	struct fx *f = ctx;

	/* Kept in order among the events, as a string to tell it apart. */
	json_array_append_new(f->events, json_stringn(fast_lines.data, fast_lines.len));
	fast_lines.len = 0;
}

static char *run_output(bool fast)
{
	const char *const sets[] = { "rpc.messageUpdates=\"delta\"", "retry.baseDelayMs=10", NULL };
	struct fx f;
	size_t i, len = 0;
	json_t *ev;
	char *out = NULL;

	fx_init(&f, "[{\"error\":\"503\"},{\"text\":\"plain \\\"quoted\\\" back\\\\slash "
		"\\u0001\\u001f\\t tab \\u00e9 \\u2028 \\ud83d\\ude42 </end>\"}]", sets);
	if (fast) {
		/* Behind session_events, which stamps each line's messageId. */
		f.s.events.next.line_buf = line_buf;
		f.s.events.next.line_done = line_done;
		f.s.chain.reply.out = session_events_output(&f.s.events);
	}
	prompt(&f, "go");
	clock_fake_advance(&f.clock, 10);
	clock_fake_settle(&f.clock);
	json_array_foreach(f.events, i, ev) {
		char *text = json_is_string(ev) ? strdup(json_string_value(ev))
						: json_dumps(ev, JSON_COMPACT);
		size_t n = strlen(text);

		out = realloc(out, len + n + 2);
		memcpy(out + len, text, n);
		len += n;
		if (!json_is_string(ev))
			out[len++] = '\n';
		out[len] = '\0';
		free(text);
	}
	ck_assert_ptr_nonnull(strstr(out, "{\"type\":\"agent_end\""));
	ck_assert_uint_eq(fast_lines.len, 0);
	fx_release(&f);
	free(fast_lines.data);
	memset(&fast_lines, 0, sizeof(fast_lines));
	return out;
}

START_TEST(test_delta_fast_path_writes_the_same_bytes_as_the_json_path)
{
	char *slow = run_output(false);
	char *fast = run_output(true);

	ck_assert_ptr_nonnull(strstr(slow, "\"delta\":\" \\\"quoted\\\"\""));
	ck_assert_str_eq(fast, slow);
	free(slow);
	free(fast);
}
END_TEST

Suite *session_suite(void)
{
	Suite *s = suite_create("session");
	TCase *tc = tcase_create("lifecycle");

	tcase_add_test(tc, test_two_overloads_then_answer_follow_the_contract);
	tcase_add_test(tc, test_taken_comes_once_before_the_runs_first_event_and_for_a_queued_message);
	tcase_add_test(tc, test_delta_fast_path_writes_the_same_bytes_as_the_json_path);
	tcase_add_test(tc, test_max_exceeded_closes_chain_after_last_turn_then_agent_end);
	tcase_add_test(tc, test_non_retryable_first_failure_has_no_retry_events);
	tcase_add_test(tc, test_context_overflow_in_open_chain_ends_it_unretried);
	tcase_add_test(tc, test_abort_retry_cancels_backoff_at_once);
	tcase_add_test(tc, test_a_cancelled_retrys_prompt_result_is_the_failure_it_would_have_retried);
	tcase_add_test(tc, test_clear_queue_drops_both_queues_and_owes_a_prompt_its_aborted_result);
	tcase_add_test(tc, test_stats_count_attempts_chains_error_classes_and_time_waited_on_the_clock);
	tcase_add_test(tc, test_abort_during_hang_ends_message_as_aborted);
	tcase_add_test(tc, test_abort_in_retried_attempt_closes_chain_once);
	tcase_add_test(tc, test_busy_prompt_is_refused_mentioning_streaming_behavior);
	tcase_add_test(tc, test_follow_up_runs_after_chain_in_same_run);
	tcase_add_test(tc, test_steer_during_backoff_goes_before_next_attempt);
	tcase_add_test(tc, test_disabling_mid_chain_still_closes_chain_once);
	tcase_add_test(tc, test_retryable_failure_with_retries_off_says_retry_skipped);
	tcase_add_test(tc, test_usage_limit_switches_credential_with_zero_delay);
	tcase_add_test(tc, test_usage_limit_with_nowhere_to_switch_ends_at_once_with_the_reset_time);
	tcase_add_test(tc, test_state_reports_retry_fields_during_backoff);
	tcase_add_test(tc, test_output_pause_stops_streaming_until_resumed);
	tcase_add_test(tc, test_delta_updates_carry_no_partial_but_final_message_is_whole);
	tcase_add_test(tc, test_prompt_snapshot_survives_later_policy_changes);
	tcase_add_test(tc, test_set_auto_retry_off_still_stops_a_snapshot_chain);
	tcase_add_test(tc, test_prompt_with_invalid_retry_settings_is_refused_naming_key);
	tcase_add_test(tc, test_hint_in_error_text_lengthens_the_backoff);
	tcase_add_test(tc, test_structured_hint_above_cap_fails_fast);
	tcase_add_test(tc, test_stalled_stream_is_aborted_and_retried);
	tcase_add_test(tc, test_consecutive_overloads_fall_back_to_next_model_then_revert);
	tcase_add_test(tc, test_usage_limit_without_spare_credential_falls_back_to_model);
	tcase_add_test(tc, test_budget_is_shared_across_prompts);
	tcase_add_test(tc, test_set_retry_policy_validates_everything_before_applying);
	tcase_add_test(tc, test_running_chain_keeps_its_patterns_when_policy_changes);
	tcase_add_test(tc, test_set_auto_retry_off_reaches_follow_ups_queued_before_it);
	tcase_add_test(tc, test_budget_in_a_prompt_is_refused_as_daemon_wide);
	tcase_add_test(tc, test_provider_events_are_emitted_as_is_inside_the_message);
	tcase_add_test(tc, test_retryable_failure_without_a_context_to_resume_is_final_and_says_why);
	tcase_add_test(tc, test_no_resume_in_an_open_chain_ends_it_with_the_reason);
	tcase_add_test(tc, test_attempt_number_idle_timeout_and_continuation_prompt_reach_the_provider);
	tcase_add_test(tc, test_thinking_deltas_keep_the_stall_clock_alive_and_the_level_reaches_the_provider);
	tcase_add_test(tc, test_session_stall_timer_still_runs_for_providers_that_do_not_keep_one);
	tcase_add_test(tc, test_every_text_block_keeps_its_text_with_delta_updates);
	tcase_add_test(tc, test_provider_failing_at_start_is_reported_on_the_next_loop_turn);
	suite_add_tcase(s, tc);
	/* Ten thousand turns take seconds under ASan on a busy machine: the
	 * 4 s default timed this out in CI beside a fuzz run. */
	tc = tcase_create("depth");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_many_follow_ups_with_a_provider_failing_at_start_do_not_recurse);
	suite_add_tcase(s, tc);
	return s;
}

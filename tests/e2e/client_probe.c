/* client_probe — the client library against a real daemon, one scenario per
 * run, for tests/e2e/test_client.py.
 *
 *   RETRYD=build/retryd FAKE_RETRYD=tests/fixtures/fake_retryd.py \
 *       build/client_probe SCENARIO
 *
 * Prints "ok SCENARIO" and exits 0, or names the first failed check and
 * exits 1. Every scenario is bounded by a guard timer. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "retryd/client.h"

#define GUARD_MS 30000

static const char *scenario;

#define CHECK(cond, ...) \
	do { if (!(cond)) fail(__LINE__, #cond, __VA_ARGS__); } while (0)

static void fail(int line, const char *what, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL %s (client_probe.c:%d): %s: ", scenario, line, what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ---- what one client saw ------------------------------------------------ */

#define MAX_SEEN 64

struct seen_result {
	int status;
	bool success;
	char id[64];
	char command[64];
	char error[256];
	char echo[64];       /* data.echo (fake daemon) */
	char resp_id[64];    /* the id in the response line */
};

struct probe {
	uv_loop_t loop;
	uv_timer_t guard;
	struct retryd_client *c;
	bool timed_out;

	int ready_status;
	bool ready_called;
	char ready_error[256];
	bool exited;
	int64_t exit_status;
	int term_signal;
	int results_before_exit;
	bool closed;

	struct seen_result results[MAX_SEEN];
	int nresults;
	char events[256][32];
	int nevents;
	int errors[MAX_SEEN];
	int nerrors;
	size_t longest_line;
	bool agent_end_seen;
	bool abort_retry_on_backoff;
};

static struct probe P;

static const char *or_empty(const char *s)
{
	return s != NULL ? s : "";
}

static void on_result(struct retryd_client *c, const struct retryd_result *r, void *ctx)
{
	struct seen_result *s = &P.results[P.nresults < MAX_SEEN ? P.nresults++ : MAX_SEEN - 1];

	(void)c;
	(void)ctx;
	memset(s, 0, sizeof(*s));
	s->status = r->status;
	s->success = r->success;
	snprintf(s->id, sizeof(s->id), "%s", r->id ? r->id : "");
	snprintf(s->command, sizeof(s->command), "%s", r->command ? r->command : "");
	snprintf(s->error, sizeof(s->error), "%s", r->error ? r->error : "");
	snprintf(s->echo, sizeof(s->echo), "%s",
		 or_empty(json_string_value(json_object_get(r->data, "echo"))));
	snprintf(s->resp_id, sizeof(s->resp_id), "%s",
		 or_empty(json_string_value(json_object_get(r->response, "id"))));
}

static void on_event(struct retryd_client *c, const char *type, json_t *ev, void *ctx)
{
	(void)ev;
	(void)ctx;
	if (P.nevents < 256)
		snprintf(P.events[P.nevents++], 32, "%s", type);
	if (strcmp(type, "agent_end") == 0)
		P.agent_end_seen = true;
	if (strcmp(type, "auto_retry_start") == 0 && P.abort_retry_on_backoff)
		retryd_client_abort_retry(c, on_result, NULL);
}

static void on_ready(struct retryd_client *c, int status, const char *error, void *ctx)
{
	(void)c;
	(void)ctx;
	CHECK(!P.ready_called, "on_ready called twice");
	P.ready_called = true;
	P.ready_status = status;
	snprintf(P.ready_error, sizeof(P.ready_error), "%s", error ? error : "");
}

static void on_exit_cb(struct retryd_client *c, int64_t status, int sig, void *ctx)
{
	(void)c;
	(void)ctx;
	CHECK(!P.exited, "on_exit called twice");
	P.exited = true;
	P.exit_status = status;
	P.term_signal = sig;
	P.results_before_exit = P.nresults;
}

static void on_line(struct retryd_client *c, const char *line, size_t len, void *ctx)
{
	(void)c;
	(void)line;
	(void)ctx;
	if (len > P.longest_line)
		P.longest_line = len;
}

static void on_error(struct retryd_client *c, int err, const char *msg, void *ctx)
{
	(void)c;
	(void)ctx;
	fprintf(stderr, "probe: on_error %s: %s\n", uv_err_name(err), msg);
	if (P.nerrors < MAX_SEEN)
		P.errors[P.nerrors++] = err;
}

static void on_closed(struct retryd_client *c, void *ctx)
{
	(void)c;
	(void)ctx;
	P.closed = true;
}

static void guard_cb(uv_timer_t *t)
{
	(void)t;
	P.timed_out = true;
}

/* Runs the loop until *flag (or a count) holds; fails on the guard. */
static void run_until(const bool *flag, const char *what)
{
	while (!*flag) {
		CHECK(!P.timed_out, "timed out waiting for %s", what);
		uv_run(&P.loop, UV_RUN_ONCE);
	}
}

static void run_until_results(int n)
{
	while (P.nresults < n) {
		CHECK(!P.timed_out, "timed out waiting for %d results (have %d)", n, P.nresults);
		uv_run(&P.loop, UV_RUN_ONCE);
	}
}

static void setup(const char *path, const char *const *args, struct retryd_client_options *extra)
{
	struct retryd_client_options o = { 0 };

	if (extra != NULL)
		o = *extra;
	o.path = path;
	o.args = args;
	o.on_event = on_event;
	o.on_ready = on_ready;
	o.on_exit = on_exit_cb;
	o.on_line = on_line;
	o.on_error = on_error;
	uv_loop_init(&P.loop);
	uv_timer_init(&P.loop, &P.guard);
	uv_timer_start(&P.guard, guard_cb, GUARD_MS, 0);
	uv_unref((uv_handle_t *)&P.guard);
	P.c = retryd_client_new(&P.loop, &o);
	CHECK(P.c != NULL, "retryd_client_new");
}

static void start_ok(void)
{
	int rc = retryd_client_start(P.c);

	CHECK(rc == 0, "start: %s: %s", uv_err_name(rc), retryd_client_last_error(P.c));
}

static void teardown(void)
{
	if (!P.closed) {
		retryd_client_close(P.c, on_closed, NULL);
		run_until(&P.closed, "the close callback");
	}
	uv_close((uv_handle_t *)&P.guard, NULL);
	uv_run(&P.loop, UV_RUN_DEFAULT);
	CHECK(uv_loop_close(&P.loop) == 0, "every handle closed");
}

static const char *daemon_path(void)
{
	const char *p = getenv("RETRYD");

	return p ? p : "build/retryd";
}

static const char *fake_path(void)
{
	const char *p = getenv("FAKE_RETRYD");

	return p ? p : "tests/fixtures/fake_retryd.py";
}

/* ---- scenarios ---------------------------------------------------------- */

static void scenario_ids(void)
{
	static const char *const args[] = { "--no-session", NULL };
	int rc;

	setup(NULL, args, NULL);  /* found through $RETRYD */
	start_ok();
	run_until(&P.ready_called, "ready");
	CHECK(P.ready_status == 0, "ready status %d", P.ready_status);
	CHECK(retryd_client_is_ready(P.c), "is_ready");
	CHECK(retryd_client_get_state(P.c, on_result, NULL) == 0, "get_state");
	CHECK(retryd_client_send(P.c, json_pack("{s:s, s:s}", "type", "get_state", "id", "mine"),
				 on_result, NULL) == 0, "send with own id");
	rc = retryd_client_send(P.c, json_pack("{s:s, s:s}", "type", "abort", "id", "mine"),
				on_result, NULL);
	CHECK(rc == UV_EEXIST, "duplicate pending id refused, got %d", rc);
	CHECK(retryd_client_send(P.c, json_pack("{s:s}", "type", "frob"), on_result, NULL) == 0,
	      "unknown command sent");
	CHECK(retryd_client_send(P.c, json_pack("[i]", 1), on_result, NULL) == UV_EINVAL,
	      "array refused");
	CHECK(retryd_client_send(P.c, json_pack("{s:s, s:i}", "type", "get_state", "id", 5),
				 on_result, NULL) == UV_EINVAL, "numeric id refused");
	CHECK(retryd_client_get_retry_policy(P.c, on_result, NULL) == 0, "get_retry_policy");
	run_until_results(4);
	CHECK(P.nresults == 4, "exactly 4 results, got %d", P.nresults);
	CHECK(strcmp(P.results[0].id, "req_1") == 0, "generated id %s", P.results[0].id);
	CHECK(strcmp(P.results[1].id, "mine") == 0, "own id %s", P.results[1].id);
	for (int i = 0; i < 4; i++) {
		CHECK(P.results[i].status == 0, "result %d status %d", i, P.results[i].status);
		CHECK(strcmp(P.results[i].id, P.results[i].resp_id) == 0, "result %d: id %s vs %s", i,
		      P.results[i].id, P.results[i].resp_id);
	}
	CHECK(!P.results[2].success, "frob fails");
	CHECK(strcmp(P.results[2].command, "frob") == 0, "frob command");
	CHECK(strcmp(P.results[2].error, "Unknown command: frob") == 0, "frob error %s",
	      P.results[2].error);
	CHECK(P.results[3].success && strcmp(P.results[3].command, "get_retry_policy") == 0,
	      "get_retry_policy answered");
	for (int i = 0; i < P.nevents; i++)
		CHECK(strcmp(P.events[i], "ready") != 0 && strcmp(P.events[i], "response") != 0,
		      "no ready/matched response among events: %s", P.events[i]);
	teardown();
}

static void scenario_out_of_order(void)
{
	static const char *const args[] = { "--fake", "reverse", NULL };
	static const char *const types[] = { "alpha", "beta", "gamma" };

	setup(fake_path(), args, NULL);
	start_ok();
	for (int i = 0; i < 3; i++)
		CHECK(retryd_client_send(P.c, json_pack("{s:s}", "type", types[i]), on_result,
					 NULL) == 0, "send %s", types[i]);
	run_until_results(3);
	/* The fake answers last first; each answer still reaches its command. */
	CHECK(strcmp(P.results[0].command, "gamma") == 0, "first answer is gamma's: %s",
	      P.results[0].command);
	CHECK(strcmp(P.results[2].command, "alpha") == 0, "last answer is alpha's");
	for (int i = 0; i < 3; i++)
		CHECK(strcmp(P.results[i].command, P.results[i].echo) == 0,
		      "answer %d: command %s got the response for %s", i, P.results[i].command,
		      P.results[i].echo);
	CHECK(P.nevents == 2, "the events between answers arrive too (%d)", P.nevents);
	teardown();
}

static void scenario_crash(void)
{
	static const char *const args[] = { "--no-session", "--sim-plan", "[{\"hang\":true}]", NULL };
	int rc;

	setup(daemon_path(), args, NULL);
	start_ok();
	run_until(&P.ready_called, "ready");
	/* Stopped, it cannot answer: the two commands stay pending. */
	CHECK(retryd_client_kill(P.c, SIGSTOP) == 0, "SIGSTOP");
	CHECK(retryd_client_get_state(P.c, on_result, NULL) == 0, "get_state");
	CHECK(retryd_client_get_messages(P.c, on_result, NULL) == 0, "get_messages");
	for (int i = 0; i < 5; i++)
		uv_run(&P.loop, UV_RUN_NOWAIT);
	CHECK(P.nresults == 0, "nothing answered yet");
	CHECK(retryd_client_kill(P.c, SIGKILL) == 0, "SIGKILL");
	run_until(&P.exited, "exit");
	CHECK(P.term_signal == SIGKILL, "term signal %d", P.term_signal);
	CHECK(P.results_before_exit == 2, "pending failed before on_exit (%d)", P.results_before_exit);
	for (int i = 0; i < 2; i++) {
		CHECK(P.results[i].status == UV_EOF, "status %d", P.results[i].status);
		CHECK(strstr(P.results[i].error, "killed by signal 9") != NULL, "error: %s",
		      P.results[i].error);
		CHECK(strstr(P.results[i].error, P.results[i].command) != NULL,
		      "error names the command: %s", P.results[i].error);
	}
	CHECK(strcmp(P.results[0].command, "get_state") == 0, "oldest first");
	rc = retryd_client_get_state(P.c, on_result, NULL);
	CHECK(rc == UV_EPIPE, "send after exit: %d", rc);
	CHECK(!retryd_client_is_running(P.c), "not running");
	teardown();
}

static void scenario_crash_exit(void)
{
	static const char *const args[] = { "--fake", "exit3", NULL };

	setup(fake_path(), args, NULL);
	start_ok();
	CHECK(retryd_client_get_state(P.c, on_result, NULL) == 0, "get_state");
	run_until(&P.exited, "exit");
	CHECK(P.exit_status == 3 && P.term_signal == 0, "exit %d signal %d", (int)P.exit_status,
	      P.term_signal);
	CHECK(P.nresults == 1 && P.results[0].status == UV_EOF, "pending failed");
	CHECK(strcmp(P.results[0].error, "retryd exited with status 3 before answering get_state") == 0,
	      "error: %s", P.results[0].error);
	teardown();
}

static void scenario_large(void)
{
	static const char *const args[] = { "--no-session", NULL };
	size_t word = 1024u * 1024u, n = 3 * word + 2;
	char *msg = malloc(n + 1);
	struct retryd_run_result r;
	int rc;

	/* Three 1 MiB words: the sim echoes them back, word by word, in pi's
	 * full update shape (each update repeats the text so far, twice). */
	memset(msg, 'a', word);
	msg[word] = ' ';
	memset(msg + word + 1, 'b', word);
	msg[2 * word + 1] = ' ';
	memset(msg + 2 * word + 2, 'c', word);
	msg[n] = '\0';
	setup(daemon_path(), args, NULL);
	start_ok();
	rc = retryd_client_prompt_and_wait(P.c, msg, NULL, 60000, &r);
	CHECK(rc == 0, "wait: %s (%s)", retryd_strerror(rc), r.error ? r.error : "");
	CHECK(r.answered, "answered");
	CHECK(r.text != NULL && strlen(r.text) == n, "answer length %zu", r.text ? strlen(r.text) : 0);
	CHECK(strcmp(r.text, msg) == 0, "answer is the whole text");
	CHECK(P.longest_line > 6 * word, "a line of %zu bytes went through", P.longest_line);
	retryd_run_result_release(&r);
	free(msg);
	teardown();
}

static void scenario_wait_chain(void)
{
	static const char *const args[] = {
		"--no-session", "--set", "retry.baseDelayMs=20", "--sim-plan",
		"[{\"error\":\"503 Service Unavailable\"},{\"error\":\"overloaded\"},"
		"{\"text\":\"final answer\"}]", NULL,
	};
	struct retryd_run_result r;
	int rc, starts = 0, end_at = -1, retry_end_at = -1;

	setup(daemon_path(), args, NULL);
	start_ok();
	rc = retryd_client_prompt_and_wait(P.c, "hi", NULL, 20000, &r);
	CHECK(rc == 0, "wait: %s", retryd_strerror(rc));
	CHECK(P.agent_end_seen, "returned only after agent_end");
	for (int i = 0; i < P.nevents; i++) {
		if (strcmp(P.events[i], "auto_retry_start") == 0)
			starts++;
		if (strcmp(P.events[i], "auto_retry_end") == 0)
			retry_end_at = i;
		if (strcmp(P.events[i], "agent_end") == 0) {
			CHECK(end_at < 0, "one agent_end");
			end_at = i;
		}
	}
	CHECK(starts == 2, "two retries, saw %d", starts);
	CHECK(retry_end_at >= 0 && retry_end_at < end_at, "auto_retry_end before agent_end");
	/* After it only what pi 1.6 and oh-my-pi read as the run's end. */
	for (int i = end_at + 1; i < P.nevents; i++)
		CHECK(strcmp(P.events[i], "prompt_result") == 0 ||
		      strcmp(P.events[i], "agent_settled") == 0 ||
		      strcmp(P.events[i], "session_settled") == 0,
		      "after agent_end only the settled lines, saw %s", P.events[i]);
	CHECK(r.answered && strcmp(r.text, "final answer") == 0, "text %s", r.text ? r.text : "(null)");
	CHECK(r.retries == 2, "retries %d", r.retries);
	CHECK(r.error == NULL && r.agent_end != NULL, "no error, agent_end kept");
	retryd_run_result_release(&r);
	teardown();
}

static void scenario_wait_fail(void)
{
	static const char *const args[] = {
		"--no-session", "--set", "retry.baseDelayMs=5", "--sim-plan",
		"[{\"error\":\"503\"},{\"error\":\"503\"},{\"error\":\"503\"},{\"error\":\"503\"}]", NULL,
	};
	struct retryd_run_result r;
	int rc;

	setup(daemon_path(), args, NULL);
	start_ok();
	rc = retryd_client_prompt_and_wait(P.c, "hi", NULL, 20000, &r);
	CHECK(rc == 0, "wait: %s", retryd_strerror(rc));
	CHECK(!r.answered && !r.cancelled, "failed, not cancelled");
	CHECK(r.retries == 3, "retries %d", r.retries);
	CHECK(r.error && strcmp(r.error, "503") == 0, "error %s", r.error ? r.error : "(null)");
	CHECK(r.stop_reason && strcmp(r.stop_reason, "error") == 0, "stopReason");
	retryd_run_result_release(&r);
	teardown();
}

static void scenario_wait_refused(void)
{
	static const char *const args[] = { "--no-session", NULL };
	struct retryd_prompt_options po = { 0 };
	struct retryd_run_result r;
	int rc;

	setup(daemon_path(), args, NULL);
	start_ok();
	po.retry = json_pack("{s:b}", "nope", 1);
	rc = retryd_client_prompt_and_wait(P.c, "hi", &po, 20000, &r);
	CHECK(rc == RETRYD_EREFUSED, "refused: %d", rc);
	CHECK(r.error && strcmp(r.error, "retry.nope is not a retry setting") == 0, "error %s",
	      r.error ? r.error : "(null)");
	retryd_run_result_release(&r);
	json_decref(po.retry);
	/* The per-prompt policy that is valid is used. */
	po.retry = json_pack("{s:i}", "maxRetries", 0);
	po.streaming_behavior = "followUp";
	rc = retryd_client_prompt_and_wait(P.c, "hello", &po, 20000, &r);
	CHECK(rc == 0 && r.answered && strcmp(r.text, "hello") == 0, "echo answer");
	retryd_run_result_release(&r);
	json_decref(po.retry);
	teardown();
}

static void scenario_abort_retry(void)
{
	static const char *const args[] = {
		"--no-session", "--set", "retry.baseDelayMs=60000", "--sim-plan",
		"[{\"error\":\"503\"},{\"text\":\"never\"}]", NULL,
	};
	struct retryd_run_result r;
	uint64_t t0;
	int rc;

	setup(daemon_path(), args, NULL);
	start_ok();
	P.abort_retry_on_backoff = true;
	t0 = uv_hrtime();
	rc = retryd_client_prompt_and_wait(P.c, "hi", NULL, 20000, &r);
	CHECK(rc == 0, "wait: %s", retryd_strerror(rc));
	CHECK((uv_hrtime() - t0) / 1000000 < 10000, "did not wait out the backoff");
	CHECK(!r.answered && r.cancelled, "cancelled");
	CHECK(r.error && strcmp(r.error, "Retry cancelled") == 0, "error %s", r.error ? r.error : "");
	CHECK(P.nresults == 1 && P.results[0].success, "abort_retry answered");
	retryd_run_result_release(&r);
	teardown();
}

static void scenario_ready_fail(void)
{
	static const char *const args[] = { "--bogus", NULL };

	setup(daemon_path(), args, NULL);
	start_ok();
	run_until(&P.exited, "exit");
	CHECK(P.ready_called && P.ready_status == UV_EOF, "ready failed: %d", P.ready_status);
	CHECK(strstr(P.ready_error, "exited with status 2 before it was ready") != NULL, "error %s",
	      P.ready_error);
	CHECK(P.exit_status == 2, "exit status %d", (int)P.exit_status);
	teardown();
}

static void scenario_ready_timeout(void)
{
	static const char *const args[] = { "--fake", "noready", NULL };
	struct retryd_client_options o = { 0 };

	o.ready_timeout_ms = 300;
	setup(fake_path(), args, &o);
	start_ok();
	run_until(&P.exited, "exit");
	CHECK(P.ready_status == UV_ETIMEDOUT, "ready status %d", P.ready_status);
	CHECK(strcmp(P.ready_error, "retryd wrote no ready line within 300 ms") == 0, "error %s",
	      P.ready_error);
	CHECK(P.term_signal == SIGTERM, "sent SIGTERM: %d", P.term_signal);
	teardown();
}

static void scenario_not_found(void)
{
	int rc;

	setup("/nonexistent/retryd", NULL, NULL);
	rc = retryd_client_start(P.c);
	CHECK(rc == UV_ENOENT, "start: %d", rc);
	CHECK(strstr(retryd_client_last_error(P.c), "/nonexistent/retryd") != NULL, "message: %s",
	      retryd_client_last_error(P.c));
	CHECK(retryd_client_get_state(P.c, on_result, NULL) == UV_EPIPE, "no sends");
	teardown();
	CHECK(!P.exited && !P.ready_called, "no exit or ready for a daemon never started");
}

static void scenario_line_limit(void)
{
	static const char *const args[] = { "--no-session", NULL };
	struct retryd_client_options o = { 0 };
	struct retryd_run_result r;
	char word[5001];
	int rc;

	o.max_line_bytes = 2000;
	setup(daemon_path(), args, &o);
	start_ok();
	memset(word, 'w', 5000);
	word[5000] = '\0';
	/* Every line of the answer is over the limit, agent_end included. */
	rc = retryd_client_prompt_and_wait(P.c, word, NULL, 1500, &r);
	CHECK(rc == UV_ETIMEDOUT, "the run's end was too long to see: %d", rc);
	retryd_run_result_release(&r);
	CHECK(P.nerrors > 0 && P.errors[0] == UV_E2BIG, "oversize reported");
	CHECK(P.longest_line <= 2000, "no line over the limit delivered (%zu)", P.longest_line);
	/* And the client goes on. */
	CHECK(retryd_client_get_state(P.c, on_result, NULL) == 0, "send");
	run_until_results(1);
	CHECK(P.results[0].status == 0 && P.results[0].success, "answered after oversize lines");
	teardown();
}

static void scenario_request_timeout(void)
{
	static const char *const args[] = { "--fake", "silent", NULL };
	struct retryd_client_options o = { 0 };

	o.request_timeout_ms = 200;
	setup(fake_path(), args, &o);
	start_ok();
	CHECK(retryd_client_get_state(P.c, on_result, NULL) == 0, "send");
	run_until_results(1);
	CHECK(P.results[0].status == UV_ETIMEDOUT, "timed out: %d", P.results[0].status);
	CHECK(strcmp(P.results[0].error, "no response to get_state within 200 ms") == 0, "error %s",
	      P.results[0].error);
	teardown();
}

static void scenario_close_pending(void)
{
	static const char *const args[] = { "--no-session", NULL };

	setup(daemon_path(), args, NULL);
	start_ok();
	run_until(&P.ready_called, "ready");
	CHECK(retryd_client_kill(P.c, SIGSTOP) == 0, "SIGSTOP");
	CHECK(retryd_client_get_state(P.c, on_result, NULL) == 0, "send");
	retryd_client_close(P.c, on_closed, NULL);
	CHECK(P.nresults == 1 && P.results[0].status == UV_ECANCELED, "pending cancelled at once");
	/* A stopped daemon ignores SIGTERM until it goes on; SIGKILL follows. */
	run_until(&P.closed, "close");
	CHECK(P.exited, "exit reported while closing");
	teardown();
}

static void scenario_end_input(void)
{
	static const char *const args[] = { "--no-session", NULL };
	struct retryd_run_result r;

	setup(daemon_path(), args, NULL);
	start_ok();
	CHECK(retryd_client_prompt_and_wait(P.c, "bye", NULL, 20000, &r) == 0 && r.answered, "answer");
	retryd_run_result_release(&r);
	CHECK(retryd_client_end_input(P.c) == 0, "end_input");
	CHECK(retryd_client_get_state(P.c, on_result, NULL) == UV_EPIPE, "no sends after end");
	run_until(&P.exited, "exit");
	CHECK(P.exit_status == 0 && P.term_signal == 0, "clean exit %d/%d", (int)P.exit_status,
	      P.term_signal);
	teardown();
}

static void scenario_env(void)
{
	static const char *const args[] = { "--no-session", NULL };
	struct retryd_client_options o = { 0 };
	char dir[] = "/tmp/retryd-probe-XXXXXX", envbuf[300], file[400];
	const char *env[3];
	struct stat st;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(envbuf, sizeof(envbuf), "XDG_CONFIG_HOME=%s", dir);
	env[0] = envbuf;
	env[1] = "RETRYD_LOG";  /* removed from the daemon's environment */
	env[2] = NULL;
	o.env = env;
	setup(daemon_path(), args, &o);
	start_ok();
	CHECK(retryd_client_set_auto_retry(P.c, false, on_result, NULL) == 0, "set_auto_retry");
	run_until_results(1);
	CHECK(P.results[0].success, "saved");
	snprintf(file, sizeof(file), "%s/retryd/settings.json", dir);
	CHECK(stat(file, &st) == 0, "the daemon saw XDG_CONFIG_HOME: %s", file);
	unlink(file);
	snprintf(file, sizeof(file), "%s/retryd", dir);
	rmdir(file);
	rmdir(dir);
	teardown();
}

static const struct {
	const char *name;
	void (*fn)(void);
} scenarios[] = {
	{ "ids", scenario_ids },
	{ "out_of_order", scenario_out_of_order },
	{ "crash", scenario_crash },
	{ "crash_exit", scenario_crash_exit },
	{ "large", scenario_large },
	{ "wait_chain", scenario_wait_chain },
	{ "wait_fail", scenario_wait_fail },
	{ "wait_refused", scenario_wait_refused },
	{ "abort_retry", scenario_abort_retry },
	{ "ready_fail", scenario_ready_fail },
	{ "ready_timeout", scenario_ready_timeout },
	{ "not_found", scenario_not_found },
	{ "line_limit", scenario_line_limit },
	{ "request_timeout", scenario_request_timeout },
	{ "close_pending", scenario_close_pending },
	{ "end_input", scenario_end_input },
	{ "env", scenario_env },
};

int main(int argc, char **argv)
{
	size_t n = sizeof(scenarios) / sizeof(scenarios[0]);

	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < n; i++)
			puts(scenarios[i].name);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: client_probe SCENARIO | --list\n");
		return 2;
	}
	scenario = argv[1];
	for (size_t i = 0; i < n; i++) {
		if (strcmp(scenarios[i].name, scenario) == 0) {
			scenarios[i].fn();
			printf("ok %s\n", scenario);
			return 0;
		}
	}
	fprintf(stderr, "client_probe: no scenario '%s'\n", scenario);
	return 2;
}

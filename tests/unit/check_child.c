/* shared/child with real child processes (/bin/sh -c ...). The fixture owns
 * the loop and every handle on it; a test runs the loop until the callback
 * it waits for, never sleeps. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/child.h"

Suite *child_suite(void);

struct fx {
	uv_loop_t loop;
	uv_timer_t timer;      /* a test's own clock: run the loop for a while */
	bool timer_fired;
	struct retryd_child *child;
	char out[4096], err[4096];
	size_t out_len, err_len;
	int out_end, err_end, in_end; /* 0: not ended */
	bool ends_before_done;
	int done_calls;
	bool close_in_done;
	bool closed;
	struct retryd_child_exit exit;
};

static struct fx *F;

static void setup(void)
{
	F = calloc(1, sizeof(*F));
	ck_assert_ptr_nonnull(F);
	ck_assert_int_eq(uv_loop_init(&F->loop), 0);
	uv_timer_init(&F->loop, &F->timer);
	F->timer.data = F;
}

static void on_closed(struct retryd_child *child, const struct retryd_child_exit *exit, void *ctx)
{
	struct fx *f = ctx;

	(void)child;
	f->closed = true;
	f->exit = *exit;
}

static void teardown(void)
{
	if (F->child != NULL && !F->closed) {
		retryd_child_kill(F->child, SIGKILL);
		retryd_child_close(F->child, on_closed, F);
	}
	uv_close((uv_handle_t *)&F->timer, NULL);
	uv_run(&F->loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&F->loop), 0);
	free(F);
	F = NULL;
}

/* Runs the loop until *flag; fails when the loop runs dry first. */
static void run_until(bool *flag)
{
	while (!*flag)
		ck_assert_msg(uv_run(&F->loop, UV_RUN_ONCE) != 0 || *flag,
			      "the loop ran dry before the callback");
}

static void on_timer(uv_timer_t *t)
{
	struct fx *f = t->data;

	f->timer_fired = true;
}

/* Lets the loop run for ms (other callbacks included). */
static void run_for(uint64_t ms)
{
	F->timer_fired = false;
	uv_timer_start(&F->timer, on_timer, ms, 0);
	run_until(&F->timer_fired);
}

static void on_data(struct retryd_child *child, int fd, const char *data, size_t len, void *ctx)
{
	struct fx *f = ctx;
	char *buf = fd == 1 ? f->out : f->err;
	size_t *n = fd == 1 ? &f->out_len : &f->err_len;

	(void)child;
	ck_assert_int_eq(f->done_calls, 0);
	ck_assert_uint_lt(*n + len, sizeof(f->out));
	memcpy(buf + *n, data, len);
	*n += len;
	buf[*n] = '\0';
}

static void on_end(struct retryd_child *child, int fd, int status, void *ctx)
{
	struct fx *f = ctx;

	(void)child;
	if (fd == 0)
		f->in_end = status;
	else if (fd == 1)
		f->out_end = status;
	else
		f->err_end = status;
}

static void on_done(struct retryd_child *child, const struct retryd_child_exit *exit, void *ctx)
{
	struct fx *f = ctx;

	f->done_calls++;
	f->exit = *exit;
	f->ends_before_done = f->out_end != 0 && f->err_end != 0;
	if (f->close_in_done)
		retryd_child_close(child, on_closed, f);
}

static bool done(void)
{
	return F->done_calls > 0;
}

static struct retryd_child_options opts(char **argv)
{
	struct retryd_child_options o;

	memset(&o, 0, sizeof(o));
	o.argv = argv;
	o.stdio[0] = RETRYD_CHILD_IGNORE;
	o.stdio[1] = RETRYD_CHILD_PIPE;
	o.stdio[2] = RETRYD_CHILD_PIPE;
	o.drain_ms = 10000;
	o.on_data = on_data;
	o.on_end = on_end;
	o.on_done = on_done;
	o.ctx = F;
	return o;
}

static void spawn_sh(const char *script, struct retryd_child_options *o)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };

	o->argv = argv;
	ck_assert_int_eq(retryd_child_spawn(&F->loop, o, &F->child), 0);
	ck_assert_ptr_nonnull(F->child);
	ck_assert_int_gt(retryd_child_pid(F->child), 0);
}

static void run_until_done(void)
{
	while (!done())
		ck_assert_msg(uv_run(&F->loop, UV_RUN_ONCE) != 0 || done(),
			      "the loop ran dry before done");
}

START_TEST(test_output_and_exit_status_come_before_done)
{
	struct retryd_child_options o = opts(NULL);

	F->close_in_done = true;
	spawn_sh("echo out; echo err >&2; exit 3", &o);
	run_until(&F->closed);
	ck_assert_int_eq(F->done_calls, 1);
	ck_assert_str_eq(F->out, "out\n");
	ck_assert_str_eq(F->err, "err\n");
	ck_assert(F->ends_before_done);
	ck_assert_int_eq(F->out_end, UV_EOF);
	ck_assert_int_eq(F->err_end, UV_EOF);
	ck_assert_int_eq(F->exit.status, 3);
	ck_assert_int_eq(F->exit.term_signal, 0);
	ck_assert(!F->exit.forced);
	ck_assert(!F->exit.drained);
}
END_TEST

START_TEST(test_what_is_written_to_stdin_reaches_the_child_and_ends_with_eof)
{
	struct retryd_child_options o = opts(NULL);
	char *text = strdup("hello\n");

	o.stdio[0] = RETRYD_CHILD_PIPE;
	spawn_sh("cat; echo end", &o);
	ck_assert_int_eq(retryd_child_write(F->child, text, strlen(text)), 0);
	ck_assert_int_eq(retryd_child_end_input(F->child), 0);
	ck_assert_int_eq(retryd_child_write(F->child, strdup("late"), 4), UV_EPIPE);
	run_until_done();
	ck_assert_str_eq(F->out, "hello\nend\n");
	ck_assert_int_eq(F->exit.status, 0);
	ck_assert_int_eq(F->in_end, 0);
}
END_TEST

START_TEST(test_stdin_not_a_pipe_takes_no_writes)
{
	struct retryd_child_options o = opts(NULL);

	spawn_sh("exit 0", &o);
	ck_assert_int_eq(retryd_child_write(F->child, strdup("x"), 1), UV_EPIPE);
	ck_assert_int_eq(retryd_child_end_input(F->child), UV_EPIPE);
	run_until_done();
}
END_TEST

START_TEST(test_env_and_cwd_are_the_given_ones)
{
	struct retryd_child_options o = opts(NULL);
	char *env[] = { "RETRYD_CHILD_TEST=value", NULL };

	o.env = env;
	o.cwd = "/";
	spawn_sh("echo \"$RETRYD_CHILD_TEST\"; pwd", &o);
	run_until_done();
	ck_assert_str_eq(F->out, "value\n/\n");
}
END_TEST

START_TEST(test_the_child_runs_in_a_process_group_of_its_own)
{
	struct retryd_child_options o = opts(NULL);

	/* Field 5 of /proc/PID/stat is the process group. */
	spawn_sh("cut -d' ' -f5 /proc/$$/stat", &o);
	run_until_done();
	ck_assert_int_eq(atoi(F->out), retryd_child_pid(F->child));
	ck_assert_int_ne(atoi(F->out), (int)getpgrp());
}
END_TEST

START_TEST(test_terminate_ends_the_whole_group_with_sigterm)
{
	struct retryd_child_options o = opts(NULL);

	/* The background sleep holds stdout: EOF comes only when it is gone too. */
	spawn_sh("sleep 60 & echo up; wait", &o);
	while (F->out_len == 0)
		uv_run(&F->loop, UV_RUN_ONCE);
	retryd_child_terminate(F->child, 10000);
	run_until_done();
	ck_assert_int_eq(F->exit.term_signal, SIGTERM);
	ck_assert(!F->exit.forced);
	ck_assert(!F->exit.drained);
	ck_assert_int_eq(F->out_end, UV_EOF);
}
END_TEST

START_TEST(test_a_group_that_ignores_sigterm_gets_sigkill_after_the_grace)
{
	struct retryd_child_options o = opts(NULL);

	spawn_sh("trap '' TERM; echo up; while :; do sleep 1; done", &o);
	while (F->out_len == 0)
		uv_run(&F->loop, UV_RUN_ONCE);
	retryd_child_terminate(F->child, 50);
	run_until_done();
	ck_assert_int_eq(F->exit.term_signal, SIGKILL);
	ck_assert(F->exit.forced);
}
END_TEST

START_TEST(test_terminate_without_grace_kills_at_once)
{
	struct retryd_child_options o = opts(NULL);

	spawn_sh("trap '' TERM; echo up; while :; do sleep 1; done", &o);
	while (F->out_len == 0)
		uv_run(&F->loop, UV_RUN_ONCE);
	retryd_child_terminate(F->child, 0);
	run_until_done();
	ck_assert_int_eq(F->exit.term_signal, SIGKILL);
	ck_assert(!F->exit.forced);
}
END_TEST

START_TEST(test_pipes_held_after_the_exit_are_given_up_after_the_drain_time)
{
	struct retryd_child_options o = opts(NULL);

	o.drain_ms = 50;
	spawn_sh("sleep 60 & exit 4", &o);
	run_until_done();
	ck_assert_int_eq(F->exit.status, 4);
	ck_assert(F->exit.drained);
	/* Given up, not ended: no end callback for the held pipes. */
	ck_assert_int_eq(F->out_end, 0);
}
END_TEST

START_TEST(test_a_paused_reader_stops_the_drain_clock_and_loses_nothing)
{
	struct retryd_child_options o = opts(NULL);

	o.drain_ms = 20;
	spawn_sh("read x; echo last", &o);
	retryd_child_pause(F->child, true);
	/* stdin is /dev/null: read returns at once, and the child exits. */
	while (!retryd_child_exited(F->child))
		ck_assert(uv_run(&F->loop, UV_RUN_ONCE) != 0 || retryd_child_exited(F->child));
	run_for(100);
	ck_assert_int_eq(F->done_calls, 0);
	ck_assert_uint_eq(F->out_len, 0);
	retryd_child_pause(F->child, false);
	run_until_done();
	ck_assert_str_eq(F->out, "last\n");
	ck_assert(!F->exit.drained);
}
END_TEST

START_TEST(test_close_before_the_exit_waits_for_the_reaping_and_calls_no_done)
{
	struct retryd_child_options o = opts(NULL);

	spawn_sh("exec sleep 60", &o);
	ck_assert_int_eq(retryd_child_kill(F->child, SIGKILL), 0);
	retryd_child_close(F->child, on_closed, F);
	run_until(&F->closed);
	ck_assert_int_eq(F->exit.term_signal, SIGKILL);
	ck_assert_int_eq(F->done_calls, 0);
	ck_assert_int_eq(F->out_end, 0);
}
END_TEST

START_TEST(test_close_while_terminating_lets_the_grace_run_out)
{
	struct retryd_child_options o = opts(NULL);

	spawn_sh("trap '' TERM; echo up; while :; do sleep 1; done", &o);
	while (F->out_len == 0)
		uv_run(&F->loop, UV_RUN_ONCE);
	retryd_child_terminate(F->child, 50);
	retryd_child_close(F->child, on_closed, F);
	run_until(&F->closed);
	ck_assert_int_eq(F->exit.term_signal, SIGKILL);
	ck_assert(F->exit.forced);
	ck_assert_int_eq(F->done_calls, 0);
}
END_TEST

/* Whether pid runs (a killed process not yet reaped by its new parent is
 * a zombie, which kill(pid, 0) still finds). */
static bool alive(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p != NULL && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* After the reaping, with both pipes ended, nothing is known to hold the
 * group id: it may be another group's already, so close signals nothing
 * (here a member that ignores TERM and holds no pipe is still there). */
START_TEST(test_a_close_after_the_reaping_with_the_pipes_ended_signals_no_group)
{
	struct retryd_child_options o = opts(NULL);
	long pid;

	spawn_sh("trap '' TERM; sleep 60 </dev/null >/dev/null 2>&1 & echo $!", &o);
	run_until_done();
	ck_assert_int_eq(F->out_end, UV_EOF);
	pid = strtol(F->out, NULL, 10);
	ck_assert_int_gt(pid, 0);
	retryd_child_close(F->child, on_closed, F);
	run_until(&F->closed);
	ck_assert_msg(alive((pid_t)pid), "close signalled a group after the reaping");
	kill((pid_t)pid, SIGKILL);
}
END_TEST

START_TEST(test_a_missing_program_fails_to_spawn_and_frees_itself)
{
	struct retryd_child_options o = opts(NULL);
	char *argv[] = { "/nonexistent/retryd-child-test", NULL };
	struct retryd_child *c = (struct retryd_child *)1;

	o.argv = argv;
	ck_assert_int_eq(retryd_child_spawn(&F->loop, &o, &c), UV_ENOENT);
	ck_assert_ptr_null(c);
	ck_assert_str_eq(retryd_child_strerror(UV_ENOENT), uv_strerror(UV_ENOENT));
	/* Its handles close on the loop, with no callback; teardown checks the
	 * loop closes. */
	uv_run(&F->loop, UV_RUN_NOWAIT);
	ck_assert_int_eq(F->done_calls, 0);
}
END_TEST

Suite *child_suite(void)
{
	Suite *s = suite_create("child");
	TCase *tc = tcase_create("child");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_output_and_exit_status_come_before_done);
	tcase_add_test(tc, test_what_is_written_to_stdin_reaches_the_child_and_ends_with_eof);
	tcase_add_test(tc, test_stdin_not_a_pipe_takes_no_writes);
	tcase_add_test(tc, test_env_and_cwd_are_the_given_ones);
	tcase_add_test(tc, test_the_child_runs_in_a_process_group_of_its_own);
	tcase_add_test(tc, test_terminate_ends_the_whole_group_with_sigterm);
	tcase_add_test(tc, test_a_group_that_ignores_sigterm_gets_sigkill_after_the_grace);
	tcase_add_test(tc, test_terminate_without_grace_kills_at_once);
	tcase_add_test(tc, test_pipes_held_after_the_exit_are_given_up_after_the_drain_time);
	tcase_add_test(tc, test_a_paused_reader_stops_the_drain_clock_and_loses_nothing);
	tcase_add_test(tc, test_close_before_the_exit_waits_for_the_reaping_and_calls_no_done);
	tcase_add_test(tc, test_close_while_terminating_lets_the_grace_run_out);
	tcase_add_test(tc, test_a_close_after_the_reaping_with_the_pipes_ended_signals_no_group);
	tcase_add_test(tc, test_a_missing_program_fails_to_spawn_and_frees_itself);
	suite_add_tcase(s, tc);
	return s;
}

/* bench_fleet_driver — N retryd daemons in agent-like loops, from one process
 * on one libuv loop, through the C client library. Built and run by
 * `make bench-fleet` (scripts/bench_fleet.py); not part of `make all`.
 *
 *   build/bench_fleet_driver --retryd PATH --n N --log FILE
 *       [--arg DAEMON_ARG]... [--cwd DIR] [--duration-ms 15000]
 *       [--think-ms 300] [--grace-ms 5000] [--seed 1] [--ready-timeout-ms 60000]
 *
 * Every daemon is started with the --arg list (its settings file, provider,
 * model, --set ...). Once all are ready (or failed) the driver prints
 * "ready R F" and waits for a line on stdin when stdin is a pipe (the bench
 * script first starts the provider's scenario clock), else starts at once;
 * it then prints "go T" (T: CLOCK_MONOTONIC ms, the clock of uv_hrtime() and
 * Python's time.monotonic()). Each daemon waits a random part of one think
 * time, then loops: prompt ("bench d=D p=P: answer ok", which the fake
 * provider reads back) -> agent_end -> think (uniform 0.5..1.5 x think-ms) ->
 * next prompt, until duration-ms after go. Runs still going then get
 * grace-ms to end, then an abort (logged "cut"). Then get_state goes to every
 * daemon (its "fleet" object is logged), every daemon is closed, and the
 * driver prints "done PROMPTS OK FAILED CUT" and exits 0.
 *
 * The log has one JSON object per line, times in CLOCK_MONOTONIC ms:
 *   {"type":"prompt","d","p","t0","t1","ok","stopReason","error","cut",
 *    "attempts":[turn_start times],"attemptErrors":[per failed attempt, its
 *    errorMessage cut to 120 bytes],"retries","retryDelays","retryReasons",
 *    "fleetWaits","fleetWaitMs","fleetWaitReasons":{reason: count},
 *    "fleetWaitTimes":[arrival times],"switches":["credential:A->B"]}
 *   {"type":"daemon","d","pid","ready","readyMs","fleet":get_state.data.fleet}
 * Times are when the driver read the line, not when the daemon wrote it. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "retryd/client.h"

#define MAX_ARGS 128
#define MAX_ATTEMPTS 64
#define ERR_CUT 120

enum phase { STARTING, WAITING_GO, THINKING, PROMPTING, IDLE, FAILED, STATE, CLOSING, CLOSED };

struct driver;

struct daemon {
	struct driver *drv;
	int idx;
	struct retryd_client *c;
	uv_timer_t think;
	bool think_open;
	enum phase phase;
	double ready_ms;
	uint64_t rng;
	int prompt_no;

	/* The prompt in progress. */
	double t0;
	double attempts[MAX_ATTEMPTS];
	int nattempts;
	json_t *attempt_errors;
	json_t *retry_delays;
	json_t *retry_reasons;
	int fleet_waits;
	double fleet_wait_ms;
	json_t *fleet_reasons;
	json_t *fleet_times;
	json_t *switches;
	bool cut;
	json_t *fleet_state;
};

struct driver {
	uv_loop_t loop;
	uv_pipe_t in;
	bool in_open;
	uv_timer_t end_timer;
	uv_timer_t grace_timer;
	char inbuf[256];

	const char *retryd;
	const char *args[MAX_ARGS + 1];
	int nargs;
	const char *cwd;
	int n;
	uint64_t duration_ms, think_ms, grace_ms, ready_timeout_ms;
	uint64_t seed;
	FILE *log;

	struct daemon *d;
	int n_settled;      /* ready or failed */
	int n_ready;
	bool went;
	bool window_over;
	int n_busy;         /* PROMPTING or waiting for get_state */
	bool state_phase;   /* get_state sent to every idle daemon */
	bool closing;
	int n_open;         /* clients not yet closed */
	long prompts, ok, failed, cut;
};

static double now_ms(void)
{
	return (double)uv_hrtime() / 1e6;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("bench_fleet_driver: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* xorshift64*: think times need no more than this. */
static double rand01(struct daemon *dm)
{
	dm->rng ^= dm->rng >> 12;
	dm->rng ^= dm->rng << 25;
	dm->rng ^= dm->rng >> 27;
	return (double)((dm->rng * UINT64_C(2685821657736338717)) >> 11) / 9007199254740992.0;
}

static void log_obj(struct driver *drv, json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT);

	if (s != NULL) {
		fputs(s, drv->log);
		fputc('\n', drv->log);
		free(s);
	}
	json_decref(obj);
}

static void prompt_reset(struct daemon *dm)
{
	json_decref(dm->attempt_errors);
	json_decref(dm->retry_delays);
	json_decref(dm->retry_reasons);
	json_decref(dm->fleet_reasons);
	json_decref(dm->fleet_times);
	json_decref(dm->switches);
	dm->attempt_errors = json_array();
	dm->retry_delays = json_array();
	dm->retry_reasons = json_array();
	dm->fleet_reasons = json_object();
	dm->fleet_times = json_array();
	dm->switches = json_array();
	dm->nattempts = 0;
	dm->fleet_waits = 0;
	dm->fleet_wait_ms = 0;
	dm->cut = false;
}

static void maybe_finish(struct driver *drv);
static void start_state_phase(struct driver *drv);

/* ---- the agent loop ------------------------------------------------------- */

static void prompt_cb(struct retryd_client *c, const struct retryd_result *r, void *ctx)
{
	struct daemon *dm = ctx;

	(void)c;
	if (r->status != 0 || !r->success)
		fprintf(stderr, "bench_fleet_driver: daemon %d: prompt refused: %s\n", dm->idx,
			r->error ? r->error : "?");
}

static void think_cb(uv_timer_t *t)
{
	struct daemon *dm = t->data;
	struct driver *drv = dm->drv;
	char msg[64];

	if (drv->window_over || dm->phase != THINKING) {
		if (dm->phase == THINKING)
			dm->phase = IDLE;
		maybe_finish(drv);
		return;
	}
	prompt_reset(dm);
	dm->prompt_no++;
	snprintf(msg, sizeof(msg), "bench d=%d p=%d: answer ok", dm->idx, dm->prompt_no);
	dm->t0 = now_ms();
	if (retryd_client_prompt(dm->c, msg, NULL, prompt_cb, dm) != 0) {
		fprintf(stderr, "bench_fleet_driver: daemon %d: %s\n", dm->idx,
			retryd_client_last_error(dm->c));
		dm->phase = FAILED;
		maybe_finish(drv);
		return;
	}
	dm->phase = PROMPTING;
	drv->n_busy++;
}

static void think(struct daemon *dm, double factor)
{
	uint64_t ms = (uint64_t)((double)dm->drv->think_ms * factor);

	dm->phase = THINKING;
	uv_timer_start(&dm->think, think_cb, ms, 0);
}

static const char *str_of(json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : "";
}

static json_t *cut_string(const char *s)
{
	size_t n = strlen(s);

	if (n > ERR_CUT) {
		/* Back off to a UTF-8 boundary so jansson takes it. */
		n = ERR_CUT;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	return json_stringn(s, n);
}

static void prompt_over(struct daemon *dm, json_t *agent_end)
{
	struct driver *drv = dm->drv;
	double t1 = now_ms();
	json_t *msgs = json_object_get(agent_end, "messages");
	json_t *last = NULL, *m, *attempts = json_array(), *rec;
	const char *stop, *err;
	size_t i;
	bool ok;

	json_array_foreach(msgs, i, m) {
		if (strcmp(str_of(m, "role"), "assistant") == 0)
			last = m;
	}
	stop = last ? str_of(last, "stopReason") : "";
	err = last ? str_of(last, "errorMessage") : "no assistant message";
	ok = strcmp(stop, "stop") == 0 || strcmp(stop, "length") == 0 ||
	     strcmp(stop, "toolUse") == 0;
	for (int k = 0; k < dm->nattempts; k++)
		json_array_append_new(attempts, json_real(dm->attempts[k]));
	rec = json_pack("{s:s, s:i, s:i, s:f, s:f, s:b, s:s, s:o, s:b, s:o, s:O, s:i, s:O, s:O,"
			" s:i, s:f, s:O, s:O, s:O}",
			"type", "prompt", "d", dm->idx, "p", dm->prompt_no, "t0", dm->t0, "t1", t1,
			"ok", ok, "stopReason", stop,
			"error", ok || !*err ? json_null() : cut_string(err), "cut", dm->cut,
			"attempts", attempts, "attemptErrors", dm->attempt_errors,
			"retries", (int)json_array_size(dm->retry_delays),
			"retryDelays", dm->retry_delays, "retryReasons", dm->retry_reasons,
			"fleetWaits", dm->fleet_waits, "fleetWaitMs", dm->fleet_wait_ms,
			"fleetWaitReasons", dm->fleet_reasons, "fleetWaitTimes", dm->fleet_times,
			"switches", dm->switches);
	if (rec == NULL)
		die("json_pack failed");
	log_obj(drv, rec);
	drv->prompts++;
	if (dm->cut)
		drv->cut++;
	else if (ok)
		drv->ok++;
	else
		drv->failed++;
	drv->n_busy--;
	if (drv->window_over) {
		dm->phase = IDLE;
		maybe_finish(drv);
	} else {
		think(dm, 0.5 + rand01(dm));
	}
}

static void on_event(struct retryd_client *c, const char *type, json_t *ev, void *ctx)
{
	struct daemon *dm = ctx;
	double t = now_ms();

	(void)c;
	if (dm->phase != PROMPTING)
		return;
	if (strcmp(type, "turn_start") == 0) {
		if (dm->nattempts < MAX_ATTEMPTS)
			dm->attempts[dm->nattempts++] = t;
	} else if (strcmp(type, "message_end") == 0) {
		json_t *m = json_object_get(ev, "message");

		if (strcmp(str_of(m, "role"), "assistant") == 0 &&
		    strcmp(str_of(m, "stopReason"), "error") == 0)
			json_array_append_new(dm->attempt_errors,
					      cut_string(str_of(m, "errorMessage")));
	} else if (strcmp(type, "auto_retry_start") == 0) {
		json_array_append_new(dm->retry_delays,
				      json_integer(json_integer_value(json_object_get(ev, "delayMs"))));
		json_array_append_new(dm->retry_reasons, json_string(str_of(ev, "reason")));
	} else if (strcmp(type, "fleet_wait") == 0) {
		json_t *r = json_object_get(ev, "reason");
		const char *reason = json_is_string(r) ? json_string_value(r) : "?";
		json_t *cnt = json_object_get(dm->fleet_reasons, reason);

		dm->fleet_waits++;
		dm->fleet_wait_ms += json_number_value(json_object_get(ev, "delayMs"));
		json_object_set_new(dm->fleet_reasons, reason,
				    json_integer(json_integer_value(cnt) + 1));
		json_array_append_new(dm->fleet_times, json_real(t));
	} else if (strcmp(type, "retry_fallback_applied") == 0) {
		char buf[160];

		snprintf(buf, sizeof(buf), "%s:%s->%s", str_of(ev, "kind"), str_of(ev, "from"),
			 str_of(ev, "to"));
		json_array_append_new(dm->switches, json_string(buf));
	} else if (strcmp(type, "agent_end") == 0) {
		prompt_over(dm, ev);
	}
}

/* ---- start and go --------------------------------------------------------- */

static void go(struct driver *drv);

static void settled(struct driver *drv)
{
	if (++drv->n_settled < drv->n)
		return;
	printf("ready %d %d\n", drv->n_ready, drv->n - drv->n_ready);
	fflush(stdout);
	if (!drv->in_open)
		go(drv);
}

static void on_ready(struct retryd_client *c, int status, const char *error, void *ctx)
{
	struct daemon *dm = ctx;

	(void)c;
	if (status == 0) {
		dm->phase = WAITING_GO;
		dm->ready_ms = now_ms();
		dm->drv->n_ready++;
	} else {
		fprintf(stderr, "bench_fleet_driver: daemon %d did not start: %s\n", dm->idx,
			error ? error : "?");
		dm->phase = FAILED;
	}
	settled(dm->drv);
}

static void on_exit_cb(struct retryd_client *c, int64_t status, int sig, void *ctx)
{
	struct daemon *dm = ctx;

	(void)c;
	if (dm->phase < STATE && dm->phase != FAILED) {
		fprintf(stderr, "bench_fleet_driver: daemon %d exited (status %" PRId64
			", signal %d)\n", dm->idx, status, sig);
		if (dm->phase == PROMPTING)
			dm->drv->n_busy--;
		if (dm->phase == STARTING) {
			dm->phase = FAILED;
			return; /* on_ready reports it */
		}
		dm->phase = FAILED;
		maybe_finish(dm->drv);
	}
}

static void end_cb(uv_timer_t *t);

static void go(struct driver *drv)
{
	if (drv->went)
		return;
	drv->went = true;
	printf("go %.3f\n", now_ms());
	fflush(stdout);
	uv_timer_start(&drv->end_timer, end_cb, drv->duration_ms, 0);
	for (int i = 0; i < drv->n; i++) {
		struct daemon *dm = &drv->d[i];

		if (dm->phase == WAITING_GO)
			think(dm, rand01(dm));
	}
}

static void alloc_cb(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
	struct driver *drv = h->data;

	(void)size;
	buf->base = drv->inbuf;
	buf->len = sizeof(drv->inbuf);
}

static void in_closed_cb(uv_handle_t *h)
{
	(void)h;
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct driver *drv = s->data;

	(void)buf;
	if (n == 0)
		return;
	/* Any line, or EOF, is the go. */
	uv_read_stop(s);
	uv_close((uv_handle_t *)s, in_closed_cb);
	drv->in_open = false;
	if (drv->n_settled == drv->n)
		go(drv);
}

/* ---- the end -------------------------------------------------------------- */

static void grace_cb(uv_timer_t *t)
{
	struct driver *drv = t->data;

	for (int i = 0; i < drv->n; i++) {
		struct daemon *dm = &drv->d[i];

		if (dm->phase == PROMPTING) {
			dm->cut = true;
			retryd_client_abort(dm->c, NULL, NULL);
		}
	}
}

static void end_cb(uv_timer_t *t)
{
	struct driver *drv = t->data;

	drv->window_over = true;
	for (int i = 0; i < drv->n; i++) {
		struct daemon *dm = &drv->d[i];

		if (dm->phase == THINKING) {
			uv_timer_stop(&dm->think);
			dm->phase = IDLE;
		}
	}
	uv_timer_start(&drv->grace_timer, grace_cb, drv->grace_ms, 0);
	maybe_finish(drv);
}

static void closed_cb(struct retryd_client *c, void *ctx)
{
	struct daemon *dm = ctx;

	(void)c;
	dm->phase = CLOSED;
	dm->c = NULL;
	dm->drv->n_open--;
}

static void think_closed_cb(uv_handle_t *h)
{
	(void)h;
}

static void close_all(struct driver *drv)
{
	if (drv->closing)
		return;
	drv->closing = true;
	uv_timer_stop(&drv->grace_timer);
	for (int i = 0; i < drv->n; i++) {
		struct daemon *dm = &drv->d[i];
		json_t *rec = json_pack("{s:s, s:i, s:i, s:b, s:f, s:O?}", "type", "daemon",
					"d", i, "pid", dm->c ? retryd_client_pid(dm->c) : 0,
					"ready", dm->ready_ms > 0, "readyMs", dm->ready_ms,
					"fleet", dm->fleet_state);

		if (rec != NULL)
			log_obj(drv, rec);
		if (dm->think_open) {
			uv_close((uv_handle_t *)&dm->think, think_closed_cb);
			dm->think_open = false;
		}
		if (dm->c != NULL) {
			dm->phase = CLOSING;
			retryd_client_close(dm->c, closed_cb, dm);
		}
	}
	uv_close((uv_handle_t *)&drv->end_timer, NULL);
	uv_close((uv_handle_t *)&drv->grace_timer, NULL);
	if (drv->in_open) {
		uv_read_stop((uv_stream_t *)&drv->in);
		uv_close((uv_handle_t *)&drv->in, in_closed_cb);
		drv->in_open = false;
	}
}

static void state_cb(struct retryd_client *c, const struct retryd_result *r, void *ctx)
{
	struct daemon *dm = ctx;
	struct driver *drv = dm->drv;

	(void)c;
	if (r->status == 0 && r->success) {
		json_t *f = json_object_get(r->data, "fleet");

		if (f != NULL)
			dm->fleet_state = json_incref(f);
	}
	if (dm->phase == STATE) {
		dm->phase = IDLE;
		drv->n_busy--;
	}
	if (drv->n_busy == 0)
		close_all(drv);
}

static void start_state_phase(struct driver *drv)
{
	for (int i = 0; i < drv->n; i++) {
		struct daemon *dm = &drv->d[i];

		if (dm->phase == IDLE && retryd_client_get_state(dm->c, state_cb, dm) == 0) {
			dm->phase = STATE;
			drv->n_busy++;
		}
	}
	if (drv->n_busy == 0)
		close_all(drv);
}

/* After the window: once no run is left, ask every daemon for its state,
 * then close them all. */
static void maybe_finish(struct driver *drv)
{
	if (!drv->window_over || drv->n_busy > 0 || drv->state_phase)
		return;
	drv->state_phase = true;
	start_state_phase(drv);
}

/* ---- main ----------------------------------------------------------------- */

static uint64_t num_arg(const char *name, const char *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno != 0 || *end != '\0' || end == v)
		die("%s: not a number: %s", name, v);
	return (uint64_t)x;
}

static void parse_args(struct driver *drv, int argc, char **argv)
{
	drv->retryd = getenv("RETRYD");
	drv->duration_ms = 15000;
	drv->think_ms = 300;
	drv->grace_ms = 5000;
	drv->ready_timeout_ms = 60000;
	drv->seed = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL)
			die("%s needs a value", a);
		i++;
		if (strcmp(a, "--retryd") == 0)
			drv->retryd = v;
		else if (strcmp(a, "--n") == 0)
			drv->n = (int)num_arg(a, v);
		else if (strcmp(a, "--log") == 0) {
			drv->log = fopen(v, "w");
			if (drv->log == NULL)
				die("%s: %s", v, strerror(errno));
		} else if (strcmp(a, "--arg") == 0) {
			if (drv->nargs == MAX_ARGS)
				die("more than %d --arg", MAX_ARGS);
			drv->args[drv->nargs++] = v;
		} else if (strcmp(a, "--cwd") == 0)
			drv->cwd = v;
		else if (strcmp(a, "--duration-ms") == 0)
			drv->duration_ms = num_arg(a, v);
		else if (strcmp(a, "--think-ms") == 0)
			drv->think_ms = num_arg(a, v);
		else if (strcmp(a, "--grace-ms") == 0)
			drv->grace_ms = num_arg(a, v);
		else if (strcmp(a, "--ready-timeout-ms") == 0)
			drv->ready_timeout_ms = num_arg(a, v);
		else if (strcmp(a, "--seed") == 0)
			drv->seed = num_arg(a, v);
		else
			die("unknown option %s", a);
	}
	if (drv->n <= 0 || drv->log == NULL)
		die("usage: bench_fleet_driver --n N --log FILE [--retryd PATH] [--arg A]... "
		    "[--cwd DIR] [--duration-ms MS] [--think-ms MS] [--grace-ms MS] [--seed S]");
	drv->args[drv->nargs] = NULL;
}

int main(int argc, char **argv)
{
	static struct driver drv;
	int rc;

	parse_args(&drv, argc, argv);
	if (uv_loop_init(&drv.loop) != 0)
		die("uv_loop_init failed");
	uv_timer_init(&drv.loop, &drv.end_timer);
	uv_timer_init(&drv.loop, &drv.grace_timer);
	drv.end_timer.data = &drv;
	drv.grace_timer.data = &drv;
	if (uv_guess_handle(0) == UV_NAMED_PIPE) {
		uv_pipe_init(&drv.loop, &drv.in, 0);
		drv.in.data = &drv;
		if (uv_pipe_open(&drv.in, 0) == 0 &&
		    uv_read_start((uv_stream_t *)&drv.in, alloc_cb, read_cb) == 0)
			drv.in_open = true;
		else
			uv_close((uv_handle_t *)&drv.in, in_closed_cb);
	}

	drv.d = calloc((size_t)drv.n, sizeof(*drv.d));
	if (drv.d == NULL)
		die("out of memory");
	drv.n_open = drv.n;
	for (int i = 0; i < drv.n; i++) {
		struct daemon *dm = &drv.d[i];
		struct retryd_client_options o = {
			.path = drv.retryd, .args = drv.args, .cwd = drv.cwd, .ignore_stderr = true,
			.ready_timeout_ms = drv.ready_timeout_ms, .request_timeout_ms = 30000,
			.on_event = on_event, .on_ready = on_ready, .on_exit = on_exit_cb, .ctx = dm,
		};

		dm->drv = &drv;
		dm->idx = i;
		dm->rng = (drv.seed * UINT64_C(0x9E3779B97F4A7C15)) ^ (uint64_t)(i + 1) *
			  UINT64_C(0xBF58476D1CE4E5B9);
		if (dm->rng == 0)
			dm->rng = 1;
		uv_timer_init(&drv.loop, &dm->think);
		dm->think.data = dm;
		dm->think_open = true;
		prompt_reset(dm);
		dm->c = retryd_client_new(&drv.loop, &o);
		if (dm->c == NULL)
			die("out of memory");
		if (retryd_client_start(dm->c) != 0) {
			fprintf(stderr, "bench_fleet_driver: daemon %d: %s\n", i,
				retryd_client_last_error(dm->c));
			dm->phase = FAILED;
			retryd_client_close(dm->c, closed_cb, dm);
			settled(&drv);
		}
	}
	uv_run(&drv.loop, UV_RUN_DEFAULT);
	rc = uv_loop_close(&drv.loop);
	if (rc != 0)
		fprintf(stderr, "bench_fleet_driver: uv_loop_close: %s\n", uv_strerror(rc));
	printf("done %ld %ld %ld %ld\n", drv.prompts, drv.ok, drv.failed, drv.cut);
	for (int i = 0; i < drv.n; i++) {
		struct daemon *dm = &drv.d[i];

		json_decref(dm->fleet_state);
		dm->fleet_state = NULL;
		prompt_reset(dm);
		json_decref(dm->attempt_errors);
		json_decref(dm->retry_delays);
		json_decref(dm->retry_reasons);
		json_decref(dm->fleet_reasons);
		json_decref(dm->fleet_times);
		json_decref(dm->switches);
	}
	free(drv.d);
	fclose(drv.log);
	return rc == 0 ? 0 : 1;
}

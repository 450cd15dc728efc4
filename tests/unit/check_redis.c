/* redis against a real redis-server (tests/support/redisd: a child on a
 * free 127.0.0.1 port and a unix socket, no persistence, killed by PID),
 * on the test's own uv loop. Nothing sleeps: run_until() drives the loop
 * until a condition holds, bounded by a guard timer. Every handle belongs
 * to the heap fixture; teardown closes the clients and requires
 * uv_loop_close() == 0. When redis-server is missing these tests fail. */
#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "io/redis.h"
#include "support/redisd.h"

Suite *redis_suite(void);

/* make check-valgrind sets RETRYD_VALGRIND: everything takes longer. */
#define SCALE (getenv("RETRYD_VALGRIND") ? 10 : 1)
#define MAX_CLIENTS 4
#define MAX_RECS 64
#define PASSWORD "s3cret-pass-123"

struct rec {
	int calls;
	enum redis_status st;
	enum redis_type type;
	int64_t i;
	char s[256];
	size_t n;
	struct {
		enum redis_type type;
		int64_t i;
		char s[64];
	} e[64];
	uint64_t at;             /* uv_now at the callback */
	/* behaviour */
	bool close_in_cb;
	struct redis_call *cancel_in_cb;
	bool call_in_cb;         /* a redis_command from inside the callback */
	int inner_calls;
	enum redis_status inner_st;
};

struct fx {
	uv_loop_t loop;
	uv_timer_t guard, tick;
	bool guard_fired;
	void (*tick_fn)(void);
	bool server;
	struct redisd srv;
	struct redis *clients[MAX_CLIENTS];
	bool closed[MAX_CLIENTS];
	int dones[MAX_CLIENTS];
	char url[512];
	struct rec recs[MAX_RECS];
	int nrecs;
};

static struct fx *fx;

/* --- the loop ----------------------------------------------------------- */

static void guard_cb(uv_timer_t *t)
{
	(void)t;
	fx->guard_fired = true;
}

static void tick_cb(uv_timer_t *t)
{
	(void)t;
	if (fx->tick_fn != NULL)
		fx->tick_fn();
}

static bool (*cond_fn)(const void *arg);
static const void *cond_arg;

/* Runs the loop until cond(arg) holds or ms pass; returns cond(arg). */
static bool run_until(bool (*cond)(const void *), const void *arg, uint64_t ms)
{
	cond_fn = cond;
	cond_arg = arg;
	fx->guard_fired = false;
	uv_timer_start(&fx->guard, guard_cb, ms * SCALE, 0);
	while (!cond(arg) && !fx->guard_fired)
		uv_run(&fx->loop, UV_RUN_ONCE);
	uv_timer_stop(&fx->guard);
	return cond(arg);
}

static bool rec_called(const void *arg)
{
	return ((const struct rec *)arg)->calls > 0;
}

static bool connected(const void *arg)
{
	return redis_connected(arg);
}

static bool failed(const void *arg)
{
	return redis_failed_at(arg) > 0;
}

static bool client_done(const void *arg)
{
	int k = (int)(intptr_t)arg;

	return fx->dones[k] > 0;
}

static uint64_t now(void)
{
	uv_update_time(&fx->loop);
	return uv_now(&fx->loop);
}

/* --- callbacks that record ----------------------------------------------- */

static struct rec *rec_new(void)
{
	ck_assert_int_lt(fx->nrecs, MAX_RECS);
	return &fx->recs[fx->nrecs++];
}

static int client_index(struct redis *r)
{
	for (int k = 0; k < MAX_CLIENTS; k++)
		if (fx->clients[k] == r)
			return k;
	return -1;
}

static void on_done(void *ctx)
{
	fx->dones[(int)(intptr_t)ctx]++;
}

static void close_client(int k)
{
	if (fx->clients[k] != NULL && !fx->closed[k]) {
		fx->closed[k] = true;
		redis_close(fx->clients[k], on_done, (void *)(intptr_t)k);
	}
}

static void inner_cb(void *ctx, enum redis_status st, const struct redis_value *v)
{
	struct rec *rc = ctx;

	(void)v;
	rc->inner_calls++;
	rc->inner_st = st;
}

static struct redis *the_client(void);

static void record(void *ctx, enum redis_status st, const struct redis_value *v)
{
	struct rec *rc = ctx;

	rc->calls++;
	rc->st = st;
	rc->at = uv_now(&fx->loop);
	if (v != NULL) {
		rc->type = v->type;
		rc->i = v->i;
		if (v->s != NULL)
			snprintf(rc->s, sizeof(rc->s), "%.*s", (int)v->len, v->s);
		rc->n = v->n;
		for (size_t k = 0; k < v->n && k < 64; k++) {
			rc->e[k].type = v->elems[k].type;
			rc->e[k].i = v->elems[k].i;
			if (v->elems[k].s != NULL)
				snprintf(rc->e[k].s, sizeof(rc->e[k].s), "%.*s", (int)v->elems[k].len,
					 v->elems[k].s);
		}
	}
	if (rc->cancel_in_cb != NULL)
		redis_cancel(the_client(), rc->cancel_in_cb);
	if (rc->close_in_cb)
		close_client(0);
	if (rc->call_in_cb) {
		const char *ping[] = { "PING" };

		/* Only ever asked after a close: answered at once. */
		ck_assert_ptr_null(redis_command(the_client(), 1, ping, inner_cb, rc));
	}
}

/* --- fixtures -------------------------------------------------------------- */

static void setup_loop(void)
{
	/* hiredis writes with write(2); the daemon ignores SIGPIPE (main.c). */
	signal(SIGPIPE, SIG_IGN);
	fx = calloc(1, sizeof(*fx));
	ck_assert_ptr_nonnull(fx);
	ck_assert_int_eq(uv_loop_init(&fx->loop), 0);
	uv_timer_init(&fx->loop, &fx->guard);
	uv_timer_init(&fx->loop, &fx->tick);
}

static void setup_server_with(const char *a0, const char *a1)
{
	char err[4096];

	setup_loop();
	fx->srv.extra[0] = a0;
	fx->srv.extra[1] = a1;
	fx->server = true;
	if (redisd_start(&fx->srv, err, sizeof(err)) != 0)
		ck_abort_msg("%s", err);
}

static void setup_server(void)
{
	setup_server_with(NULL, NULL);
}

static void setup_server_password(void)
{
	setup_server_with("--requirepass", PASSWORD);
}

static void teardown(void)
{
	for (int k = 0; k < MAX_CLIENTS; k++) {
		close_client(k);
		if (fx->clients[k] != NULL)
			ck_assert(run_until(client_done, (void *)(intptr_t)k, 5000));
		ck_assert_int_le(fx->dones[k], 1);
	}
	uv_close((uv_handle_t *)&fx->guard, NULL);
	uv_close((uv_handle_t *)&fx->tick, NULL);
	uv_run(&fx->loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&fx->loop), 0);
	if (fx->server)
		redisd_stop(&fx->srv);
	free(fx);
	fx = NULL;
}

/* --- helpers --------------------------------------------------------------- */

static struct redis *client_new(const char *url, const char *password, int timeout_ms, char *err,
				size_t errlen)
{
	struct redis_options o = { .url = url, .password = password, .timeout_ms = timeout_ms };
	struct redis *r = redis_new(&fx->loop, &o, err, errlen);
	int k;

	if (r == NULL)
		return NULL;
	for (k = 0; k < MAX_CLIENTS && fx->clients[k] != NULL; k++)
		;
	ck_assert_int_lt(k, MAX_CLIENTS);
	fx->clients[k] = r;
	return r;
}

static struct redis *the_client(void)
{
	return fx->clients[0];
}

static const char *tcp_url(const char *fmt)
{
	snprintf(fx->url, sizeof(fx->url), fmt, fx->srv.port);
	return fx->url;
}

static struct rec *command(struct redis *r, size_t argc, const char *const *argv,
			   struct redis_call **call)
{
	struct rec *rc = rec_new();
	struct redis_call *c = redis_command(r, argc, argv, record, rc);

	if (call != NULL)
		*call = c;
	return rc;
}

static struct rec *ping(struct redis *r, struct redis_call **call)
{
	static const char *const argv[] = { "PING" };

	return command(r, 1, argv, call);
}

/* The first call fails (it starts the connect); then it is up. */
static struct redis *connected_client(const char *url, const char *password, int timeout_ms)
{
	char err[256] = "";
	struct redis *r = client_new(url, password, timeout_ms, err, sizeof(err));
	struct rec *first;

	ck_assert_msg(r != NULL, "%s", err);
	first = ping(r, NULL);
	ck_assert_int_eq(first->calls, 1);
	ck_assert_int_eq(first->st, REDIS_DOWN);
	ck_assert_msg(run_until(connected, r, 5000), "not connected: %s", redis_last_error(r));
	return r;
}

static struct rec *call_and_wait(struct redis *r, size_t argc, const char *const *argv)
{
	struct rec *rc = command(r, argc, argv, NULL);

	ck_assert(run_until(rec_called, rc, 5000));
	ck_assert_int_eq(rc->calls, 1);
	return rc;
}

static struct rec *eval_and_wait(struct redis *r, const char *script, size_t nkeys,
				 const char *const *keys, size_t nargs, const char *const *args)
{
	struct rec *rc = rec_new();

	redis_eval(r, NULL, script, nkeys, keys, nargs, args, record, rc);
	ck_assert(run_until(rec_called, rc, 5000));
	ck_assert_int_eq(rc->calls, 1);
	ck_assert_int_eq(rc->st, REDIS_OK);
	return rc;
}

static void server_says5(const char *want, const char *a0, const char *a1, const char *a2,
			 const char *a3)
{
	char out[4096];

	ck_assert_int_eq(redisd_command(&fx->srv, out, sizeof(out), a0, a1, a2, a3, (const char *)NULL),
			 0);
	ck_assert_msg(strstr(out, want) != NULL, "%s %s: %s", a0, a1 ? a1 : "", out);
}

static void server_says(const char *want, const char *a0, const char *a1, const char *a2)
{
	server_says5(want, a0, a1, a2, NULL);
}

/* --- URL ------------------------------------------------------------------- */

static void url_refused(const char *url, const char *want, const char *secret)
{
	char err[256] = "";
	struct redis *r = client_new(url, NULL, 0, err, sizeof(err));

	ck_assert_msg(r == NULL, "accepted: %s", url);
	ck_assert_msg(strncmp(err, "fleet.redis.url: ", 17) == 0, "%s: %s", url, err);
	ck_assert_msg(strstr(err, want) != NULL, "%s: %s", url, err);
	if (secret != NULL)
		ck_assert_msg(strstr(err, secret) == NULL, "%s: %s", url, err);
}

START_TEST(test_url_errors_say_what_is_wrong_and_never_the_password)
{
	url_refused(NULL, "missing", NULL);
	url_refused("", "missing", NULL);
	url_refused("http://127.0.0.1:6379", "must start with redis:// or unix://", NULL);
	url_refused("rediss://:hunter2-secret@h:6380", "TLS", "hunter2-secret");
	url_refused("redis://", "no host", NULL);
	url_refused("redis://:hunter2-secret@", "no host", "hunter2-secret");
	url_refused("redis://:hunter2-secret@h:0", "port", "hunter2-secret");
	url_refused("redis://h:65536", "port", NULL);
	url_refused("redis://h:63x9", "port", NULL);
	url_refused("redis://h:", "port", NULL);
	url_refused("redis://h/db1", "database", NULL);
	url_refused("redis://h/-1", "database", NULL);
	url_refused("redis://[::1:6379", "']'", NULL);
	url_refused("redis://[::1]x", "unexpected text", NULL);
	url_refused("redis://hunter2-secret@h", "':password' or 'user:password'", "hunter2-secret");
	url_refused("redis://hunter2-user:@h", "needs a password", "hunter2-user");
	url_refused("redis://:hunter2%zzsecret@h", "%-escape", "hunter2");
	url_refused("redis://:hunter2%00secret@h", "%-escape", "hunter2");
	url_refused("unix://relative.sock", "absolute", NULL);
	url_refused("unix:///tmp/x.sock?db=x", "db=", NULL);
	url_refused("unix:///tmp/x.sock?password=hunter2-secret&colour=blue", "unknown parameter \"colour\"",
		    "hunter2-secret");
	url_refused("unix:///tmp/x.sock?password=hunter2%g1", "%-escape", "hunter2");
	url_refused("unix:///tmp/0123456789012345678901234567890123456789012345678901234567890123456"
		    "789012345678901234567890123456789.sock", "longer than", NULL);
}
END_TEST

START_TEST(test_url_forms_that_parse)
{
	static const char *const ok[] = {
		"redis://127.0.0.1",
		"redis://localhost:6380",
		"redis://localhost:6380/",
		"redis://:pw@h:1/2",
		"redis://user:p%40ss@h/15",
		"redis://u:p@ss@h",           /* the last '@' ends the user info */
		"redis://[::1]:6380/0",
		"redis://[::1]",
		"unix:///tmp/x.sock",
		"unix:///tmp/x.sock?db=2&password=p&user=u",
	};
	char err[256];

	for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++) {
		struct redis *r = client_new(ok[k], NULL, 0, err, sizeof(err));

		ck_assert_msg(r != NULL, "%s: %s", ok[k], err);
		ck_assert(!redis_connected(r));
		ck_assert_str_eq(redis_last_error(r), "");
		close_client(client_index(r));
		ck_assert(run_until(client_done, (void *)(intptr_t)client_index(r), 1000));
		fx->clients[client_index(r)] = NULL;
		memset(fx->closed, 0, sizeof(fx->closed));
		memset(fx->dones, 0, sizeof(fx->dones));
	}
}
END_TEST

START_TEST(test_script_sha1_matches_what_redis_names_it)
{
	char sha[41];

	redis_script_sha1("return 1", sha);
	ck_assert_str_eq(sha, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}
END_TEST

START_TEST(test_close_before_any_call_ends_without_a_connection)
{
	char err[256];

	ck_assert_ptr_nonnull(client_new("redis://127.0.0.1:1", NULL, 0, err, sizeof(err)));
	close_client(0);
	/* done() never runs from inside redis_close(). */
	ck_assert_int_eq(fx->dones[0], 0);
	ck_assert(run_until(client_done, (void *)(intptr_t)0, 1000));
}
END_TEST

/* --- against the server ------------------------------------------------------ */

START_TEST(test_first_call_is_down_and_starts_the_connect_then_ping_answers_pong)
{
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, 2000);
	struct rec *rc = ping(r, NULL);

	ck_assert(run_until(rec_called, rc, 5000));
	ck_assert_int_eq(rc->st, REDIS_OK);
	ck_assert_int_eq(rc->type, REDIS_V_STR);
	ck_assert_str_eq(rc->s, "PONG");
	ck_assert_str_eq(redis_last_error(r), "");
	ck_assert_uint_eq(redis_failed_at(r), 0);
}
END_TEST

START_TEST(test_host_name_is_resolved_on_the_loop)
{
	struct redis *r = connected_client(tcp_url("redis://localhost:%d"), NULL, 2000);
	struct rec *rc = ping(r, NULL);

	ck_assert(run_until(rec_called, rc, 5000));
	ck_assert_str_eq(rc->s, "PONG");
}
END_TEST

START_TEST(test_eval_returns_ints_strings_nil_arrays_and_errors)
{
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, 2000);
	static const char *const keys[] = { "{t}k1" };
	static const char *const args[] = { "a1", "a two" };
	struct rec *rc;

	rc = eval_and_wait(r, "return 42", 0, NULL, 0, NULL);
	ck_assert_int_eq(rc->type, REDIS_V_INT);
	ck_assert_int_eq(rc->i, 42);
	rc = eval_and_wait(r, "return -9007199254740993", 0, NULL, 0, NULL);
	ck_assert_int_eq(rc->type, REDIS_V_INT);
	rc = eval_and_wait(r, "return 'hi there'", 0, NULL, 0, NULL);
	ck_assert_int_eq(rc->type, REDIS_V_STR);
	ck_assert_str_eq(rc->s, "hi there");
	rc = eval_and_wait(r, "return redis.status_reply('FINE')", 0, NULL, 0, NULL);
	ck_assert_int_eq(rc->type, REDIS_V_STR);
	ck_assert_str_eq(rc->s, "FINE");
	rc = eval_and_wait(r, "return false", 0, NULL, 0, NULL);
	ck_assert_int_eq(rc->type, REDIS_V_NIL);
	rc = eval_and_wait(r, "return redis.error_reply('boom here')", 0, NULL, 0, NULL);
	ck_assert_int_eq(rc->type, REDIS_V_ERR);
	ck_assert_str_eq(rc->s, "boom here");
	rc = eval_and_wait(r, "return {KEYS[1], ARGV[1], ARGV[2], #KEYS, #ARGV}", 1, keys, 2, args);
	ck_assert_int_eq(rc->type, REDIS_V_ARRAY);
	ck_assert_uint_eq(rc->n, 5);
	ck_assert_str_eq(rc->e[0].s, "{t}k1");
	ck_assert_str_eq(rc->e[1].s, "a1");
	ck_assert_str_eq(rc->e[2].s, "a two");
	ck_assert_int_eq(rc->e[3].i, 1);
	ck_assert_int_eq(rc->e[4].i, 2);
	/* false in an array is nil; a nested array becomes nil too */
	rc = eval_and_wait(r, "return {1, 'x', false, {2, 3}, redis.error_reply('inner')}", 0, NULL,
			   0, NULL);
	ck_assert_uint_eq(rc->n, 5);
	ck_assert_int_eq(rc->e[0].type, REDIS_V_INT);
	ck_assert_int_eq(rc->e[1].type, REDIS_V_STR);
	ck_assert_int_eq(rc->e[2].type, REDIS_V_NIL);
	ck_assert_int_eq(rc->e[3].type, REDIS_V_NIL);
	ck_assert_int_eq(rc->e[4].type, REDIS_V_ERR);
	ck_assert_ptr_nonnull(strstr(rc->e[4].s, "inner"));
	rc = eval_and_wait(r, "return {1, {2, 3}, 'x'}", 0, NULL, 0, NULL);
	ck_assert_uint_eq(rc->n, 3);
	ck_assert_int_eq(rc->e[1].type, REDIS_V_NIL);
	ck_assert_str_eq(rc->e[2].s, "x");
	rc = eval_and_wait(r, "return {}", 0, NULL, 0, NULL);
	ck_assert_int_eq(rc->type, REDIS_V_ARRAY);
	ck_assert_uint_eq(rc->n, 0);
	/* more elements than fit on the stack */
	rc = eval_and_wait(r, "local t = {} for i = 1, 40 do t[i] = i * 2 end return t", 0, NULL, 0,
			   NULL);
	ck_assert_uint_eq(rc->n, 40);
	ck_assert_int_eq(rc->e[39].i, 80);
	/* a script error is a reply, not a failure */
	rc = eval_and_wait(r, "return this is not lua", 0, NULL, 0, NULL);
	ck_assert_int_eq(rc->type, REDIS_V_ERR);
}
END_TEST

START_TEST(test_evalsha_after_script_flush_falls_back_to_eval)
{
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, 2000);
	const char *script = "return 'from-script'";
	char sha[41];
	struct rec *rc;

	redis_script_sha1(script, sha);
	/* Never loaded: NOSCRIPT, then EVAL loads it. */
	server_says("*1 :0", "SCRIPT", "EXISTS", sha);
	rc = eval_and_wait(r, script, 0, NULL, 0, NULL);
	ck_assert_str_eq(rc->s, "from-script");
	server_says("*1 :1", "SCRIPT", "EXISTS", sha);
	/* Loaded: EVALSHA alone. */
	rc = eval_and_wait(r, script, 0, NULL, 0, NULL);
	ck_assert_str_eq(rc->s, "from-script");
	server_says("+OK", "SCRIPT", "FLUSH", NULL);
	server_says("*1 :0", "SCRIPT", "EXISTS", sha);
	rc = rec_new();
	redis_eval(r, sha, script, 0, NULL, 0, NULL, record, rc);
	ck_assert(run_until(rec_called, rc, 5000));
	ck_assert_int_eq(rc->calls, 1);
	ck_assert_str_eq(rc->s, "from-script");
	server_says("*1 :1", "SCRIPT", "EXISTS", sha);
	/* EVALSHA each time, EVAL only after NOSCRIPT */
	server_says("cmdstat_evalsha:calls=3,", "INFO", "commandstats", NULL);
	server_says("cmdstat_eval:calls=2,", "INFO", "commandstats", NULL);
	/* Without the text there is no fallback: NOSCRIPT is the reply. */
	server_says("+OK", "SCRIPT", "FLUSH", NULL);
	rc = rec_new();
	redis_eval(r, sha, NULL, 0, NULL, 0, NULL, record, rc);
	ck_assert(run_until(rec_called, rc, 5000));
	ck_assert_int_eq(rc->st, REDIS_OK);
	ck_assert_int_eq(rc->type, REDIS_V_ERR);
	ck_assert_msg(strncmp(rc->s, "NOSCRIPT", 8) == 0, "%s", rc->s);
}
END_TEST

static struct rec *tick_rec;
static struct redis *tick_client;

/* Sends a PING whenever the last one has been answered without success. */
static void tick_ping(void)
{
	if (tick_rec == NULL || (tick_rec->calls > 0 && tick_rec->st != REDIS_OK))
		tick_rec = ping(tick_client, NULL);
}

static bool tick_ok(const void *arg)
{
	(void)arg;
	return tick_rec != NULL && tick_rec->calls > 0 && tick_rec->st == REDIS_OK;
}

START_TEST(test_deadline_under_client_pause_times_out_and_ignores_the_late_reply)
{
	int timeout = 100 * SCALE;
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, timeout);
	struct rec *a;
	uint64_t t0;
	char pause[16];

	snprintf(pause, sizeof(pause), "%d", 3 * timeout);
	server_says("+OK", "CLIENT", "PAUSE", pause);
	t0 = now();
	a = ping(r, NULL);
	ck_assert(run_until(rec_called, a, 5000));
	ck_assert_int_eq(a->st, REDIS_TIMEOUT);
	ck_assert_uint_ge(a->at - t0, (uint64_t)timeout);
	ck_assert_uint_lt(a->at - t0, (uint64_t)timeout + 150u * SCALE);
	/* The connection is kept; once the pause ends the late reply arrives
	 * and is dropped, then a PING is answered. */
	ck_assert(redis_connected(r));
	tick_rec = NULL;
	tick_client = r;
	fx->tick_fn = tick_ping;
	uv_timer_start(&fx->tick, tick_cb, 0, 30);
	ck_assert(run_until(tick_ok, NULL, 5000));
	uv_timer_stop(&fx->tick);
	for (int k = 0; k < fx->nrecs; k++)
		ck_assert_int_eq(fx->recs[k].calls, 1);
	ck_assert_int_eq(a->st, REDIS_TIMEOUT);
}
END_TEST

START_TEST(test_killed_server_fails_pending_calls_with_down)
{
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, 3000);
	struct rec *a, *b, *c;

	server_says("+OK", "CLIENT", "PAUSE", "5000");
	a = ping(r, NULL);
	b = ping(r, NULL);
	redisd_kill(&fx->srv);
	ck_assert(run_until(rec_called, b, 5000));
	ck_assert_int_eq(a->calls, 1);
	ck_assert_int_eq(a->st, REDIS_DOWN);
	ck_assert_int_eq(b->st, REDIS_DOWN);
	ck_assert(!redis_connected(r));
	ck_assert_msg(strstr(redis_last_error(r), "lost") != NULL, "%s", redis_last_error(r));
	ck_assert(redis_failed_at(r) > 0);
	c = ping(r, NULL);
	ck_assert_int_eq(c->calls, 1);
	ck_assert_int_eq(c->st, REDIS_DOWN);
}
END_TEST

START_TEST(test_restarted_server_on_the_same_port_is_reconnected_after_backoff)
{
	char err[4096];
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, 1000);
	struct rec *a;

	redisd_kill(&fx->srv);
	a = ping(r, NULL);
	/* Either refused at once (the break was already seen) or DOWN when it is. */
	ck_assert(run_until(rec_called, a, 5000));
	ck_assert_int_eq(a->st, REDIS_DOWN);
	ck_assert(run_until(failed, r, 5000));
	if (redisd_restart(&fx->srv, err, sizeof(err)) != 0)
		ck_abort_msg("%s", err);
	tick_rec = NULL;
	tick_client = r;
	fx->tick_fn = tick_ping;
	uv_timer_start(&fx->tick, tick_cb, 0, 20);
	ck_assert_msg(run_until(tick_ok, NULL, 10000), "%s", redis_last_error(r));
	uv_timer_stop(&fx->tick);
	ck_assert(redis_connected(r));
	ck_assert_str_eq(tick_rec->s, "PONG");
}
END_TEST

START_TEST(test_connection_killed_by_the_server_is_noticed_and_reconnected)
{
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, 2000);

	server_says5(":1", "CLIENT", "KILL", "TYPE", "normal");
	ck_assert(run_until(failed, r, 5000));
	ck_assert(!redis_connected(r));
	ck_assert_msg(strstr(redis_last_error(r), "lost") != NULL, "%s", redis_last_error(r));
	tick_rec = NULL;
	tick_client = r;
	fx->tick_fn = tick_ping;
	uv_timer_start(&fx->tick, tick_cb, 0, 20);
	ck_assert_msg(run_until(tick_ok, NULL, 5000), "%s", redis_last_error(r));
	uv_timer_stop(&fx->tick);
}
END_TEST

START_TEST(test_connection_refused_is_down_with_the_reason)
{
	char err[256];
	int port = fx->srv.port;
	struct redis *r;
	struct rec *a;

	redisd_stop(&fx->srv);
	fx->server = false;
	snprintf(fx->url, sizeof(fx->url), "redis://127.0.0.1:%d", port);
	r = client_new(fx->url, NULL, 1000, err, sizeof(err));
	ck_assert_ptr_nonnull(r);
	a = ping(r, NULL);
	ck_assert_int_eq(a->st, REDIS_DOWN);
	ck_assert(run_until(failed, r, 5000));
	ck_assert_msg(strstr(redis_last_error(r), "cannot connect to 127.0.0.1:") != NULL, "%s",
		      redis_last_error(r));
	ck_assert_msg(strstr(redis_last_error(r), "refused") != NULL, "%s", redis_last_error(r));
	ck_assert(!redis_connected(r));
}
END_TEST

START_TEST(test_password_from_url_or_option_authenticates)
{
	struct redis *r = connected_client(tcp_url("redis://:" PASSWORD "@127.0.0.1:%d"), NULL, 2000);
	struct rec *rc = ping(r, NULL);

	ck_assert(run_until(rec_called, rc, 5000));
	ck_assert_str_eq(rc->s, "PONG");
	/* the option overrides the URL's */
	r = connected_client(tcp_url("redis://:not-this-one@127.0.0.1:%d"), PASSWORD, 2000);
	/* ACL form: AUTH user password */
	r = connected_client(tcp_url("redis://default:" PASSWORD "@127.0.0.1:%d"), NULL, 2000);
	(void)r;
}
END_TEST

static void refused_with(const char *url, const char *want)
{
	char err[256];
	struct redis *r = client_new(url, NULL, 2000, err, sizeof(err));
	const char *e;

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(ping(r, NULL)->st, REDIS_DOWN);
	ck_assert(run_until(failed, r, 5000));
	e = redis_last_error(r);
	ck_assert_msg(strstr(e, want) != NULL, "%s", e);
	ck_assert_msg(strstr(e, "wrong-pass-456") == NULL, "%s", e);
	ck_assert_msg(strstr(e, PASSWORD) == NULL, "%s", e);
	ck_assert(!redis_connected(r));
}

START_TEST(test_wrong_or_missing_password_is_a_clear_error_without_the_password)
{
	refused_with(tcp_url("redis://:wrong-pass-456@127.0.0.1:%d"), "refused AUTH: WRONGPASS");
	refused_with(tcp_url("redis://127.0.0.1:%d"), "refused PING: NOAUTH");
}
END_TEST

START_TEST(test_unix_socket_url_with_db_and_password)
{
	char url[256];
	struct redis *r;
	struct rec *rc;
	static const char *const info[] = { "CLIENT", "INFO" };

	snprintf(url, sizeof(url), "unix://%s?db=2&password=%s", fx->srv.sock, PASSWORD);
	r = connected_client(url, NULL, 2000);
	rc = call_and_wait(r, 2, info);
	ck_assert_int_eq(rc->st, REDIS_OK);
	ck_assert_msg(strstr(rc->s, " db=2 ") != NULL, "%s", rc->s);
	ck_assert_msg(strstr(rc->s, "addr=/") != NULL || strstr(rc->s, "laddr=/") != NULL ||
		      strstr(rc->s, "unix") != NULL || strstr(rc->s, "fd=") != NULL, "%s", rc->s);
}
END_TEST

START_TEST(test_missing_unix_socket_is_down_with_the_reason)
{
	char url[256], err[256];
	struct redis *r;

	snprintf(url, sizeof(url), "unix://%s/none.sock", fx->srv.dir);
	r = client_new(url, NULL, 2000, err, sizeof(err));
	ck_assert_int_eq(ping(r, NULL)->st, REDIS_DOWN);
	ck_assert(run_until(failed, r, 5000));
	ck_assert_msg(strstr(redis_last_error(r), "none.sock") != NULL, "%s", redis_last_error(r));
}
END_TEST

START_TEST(test_select_db_from_the_url_and_a_db_out_of_range)
{
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d/3"), NULL, 2000);
	static const char *const info[] = { "CLIENT", "INFO" };
	struct rec *rc = call_and_wait(r, 2, info);

	ck_assert_msg(strstr(rc->s, " db=3 ") != NULL, "%s", rc->s);
	refused_with(tcp_url("redis://127.0.0.1:%d/99999"), "refused SELECT: ERR DB index");
}
END_TEST

START_TEST(test_cancel_before_the_reply_runs_no_callback)
{
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, 2000);
	struct redis_call *ca, *cb;
	struct rec *a = ping(r, &ca), *b, *c, *d;

	ck_assert_ptr_nonnull(ca);
	redis_cancel(r, ca);
	redis_cancel(r, NULL);
	/* b cancels c from inside its callback; d then cancels itself (nothing). */
	b = ping(r, NULL);
	c = ping(r, &cb);
	b->cancel_in_cb = cb;
	d = ping(r, NULL);
	ck_assert(run_until(rec_called, d, 5000));
	ck_assert_int_eq(a->calls, 0);
	ck_assert_int_eq(b->calls, 1);
	ck_assert_int_eq(c->calls, 0);
	ck_assert_int_eq(d->calls, 1);
	/* Still fine afterwards. */
	a = ping(r, NULL);
	ck_assert(run_until(rec_called, a, 5000));
	ck_assert_str_eq(a->s, "PONG");
}
END_TEST

START_TEST(test_cancel_of_a_call_waiting_on_a_paused_server)
{
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, 2000);
	struct redis_call *ca;
	struct rec *a, *b;

	server_says("+OK", "CLIENT", "PAUSE", "200");
	a = ping(r, &ca);
	b = ping(r, NULL);
	redis_cancel(r, ca);
	ck_assert(run_until(rec_called, b, 5000));
	ck_assert_int_eq(a->calls, 0);
	ck_assert_int_eq(b->st, REDIS_OK);
}
END_TEST

START_TEST(test_close_with_pending_calls_answers_each_closed_once)
{
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, 2000);
	struct rec *a, *b, *c;

	server_says("+OK", "CLIENT", "PAUSE", "500");
	a = ping(r, NULL);
	b = ping(r, NULL);
	c = ping(r, NULL);
	close_client(0);
	ck_assert_int_eq(a->calls, 1);
	ck_assert_int_eq(a->st, REDIS_CLOSED);
	ck_assert_int_eq(b->st, REDIS_CLOSED);
	ck_assert_int_eq(c->st, REDIS_CLOSED);
	ck_assert_int_eq(fx->dones[0], 0);
	ck_assert(run_until(client_done, (void *)(intptr_t)0, 5000));
	ck_assert_int_eq(a->calls + b->calls + c->calls, 3);
}
END_TEST

START_TEST(test_close_from_inside_a_reply_callback)
{
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, 2000);
	struct rec *a = ping(r, NULL), *b = ping(r, NULL);

	a->close_in_cb = true;
	a->call_in_cb = true;   /* after the close: REDIS_CLOSED at once */
	ck_assert(run_until(client_done, (void *)(intptr_t)0, 5000));
	ck_assert_int_eq(a->calls, 1);
	ck_assert_int_eq(a->st, REDIS_OK);
	ck_assert_int_eq(a->inner_calls, 1);
	ck_assert_int_eq(a->inner_st, REDIS_CLOSED);
	ck_assert_int_eq(b->calls, 1);
	ck_assert_int_eq(b->st, REDIS_CLOSED);
}
END_TEST

START_TEST(test_close_from_inside_a_timeout_callback)
{
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, 100 * SCALE);
	struct rec *a, *b;
	char pause[16];

	snprintf(pause, sizeof(pause), "%d", 300 * SCALE);
	server_says("+OK", "CLIENT", "PAUSE", pause);
	a = ping(r, NULL);
	b = ping(r, NULL);
	a->close_in_cb = true;
	ck_assert(run_until(client_done, (void *)(intptr_t)0, 5000));
	ck_assert_int_eq(a->calls, 1);
	ck_assert_int_eq(a->st, REDIS_TIMEOUT);
	ck_assert_int_eq(b->calls, 1);
	ck_assert_msg(b->st == REDIS_CLOSED || b->st == REDIS_TIMEOUT, "%d", b->st);
}
END_TEST

START_TEST(test_close_from_inside_a_down_callback_while_hiredis_frees)
{
	struct redis *r = connected_client(tcp_url("redis://127.0.0.1:%d"), NULL, 3000);
	struct rec *a, *b, *c;

	server_says("+OK", "CLIENT", "PAUSE", "5000");
	a = ping(r, NULL);
	b = ping(r, NULL);
	c = ping(r, NULL);
	a->close_in_cb = true;
	b->call_in_cb = true;
	redisd_kill(&fx->srv);
	ck_assert(run_until(client_done, (void *)(intptr_t)0, 5000));
	ck_assert_int_eq(a->calls, 1);
	ck_assert_int_eq(a->st, REDIS_DOWN);
	ck_assert_int_eq(b->calls, 1);
	ck_assert_int_eq(b->st, REDIS_CLOSED);
	ck_assert_int_eq(b->inner_calls, 1);
	ck_assert_int_eq(b->inner_st, REDIS_CLOSED);
	ck_assert_int_eq(c->calls, 1);
	ck_assert_int_eq(c->st, REDIS_CLOSED);
}
END_TEST

START_TEST(test_close_while_connecting)
{
	char err[256];
	struct redis *r = client_new(tcp_url("redis://localhost:%d"), NULL, 2000, err, sizeof(err));

	ck_assert_int_eq(ping(r, NULL)->st, REDIS_DOWN);
	close_client(0);
	ck_assert(run_until(client_done, (void *)(intptr_t)0, 5000));
}
END_TEST

Suite *redis_suite(void)
{
	Suite *s = suite_create("redis");
	TCase *url = tcase_create("url");
	TCase *srv = tcase_create("server");
	TCase *pw = tcase_create("password");

	tcase_add_checked_fixture(url, setup_loop, teardown);
	tcase_add_test(url, test_url_errors_say_what_is_wrong_and_never_the_password);
	tcase_add_test(url, test_url_forms_that_parse);
	tcase_add_test(url, test_script_sha1_matches_what_redis_names_it);
	tcase_add_test(url, test_close_before_any_call_ends_without_a_connection);
	suite_add_tcase(s, url);

	tcase_add_checked_fixture(srv, setup_server, teardown);
	tcase_set_timeout(srv, 30);
	tcase_add_test(srv, test_first_call_is_down_and_starts_the_connect_then_ping_answers_pong);
	tcase_add_test(srv, test_host_name_is_resolved_on_the_loop);
	tcase_add_test(srv, test_eval_returns_ints_strings_nil_arrays_and_errors);
	tcase_add_test(srv, test_evalsha_after_script_flush_falls_back_to_eval);
	tcase_add_test(srv, test_deadline_under_client_pause_times_out_and_ignores_the_late_reply);
	tcase_add_test(srv, test_killed_server_fails_pending_calls_with_down);
	tcase_add_test(srv, test_restarted_server_on_the_same_port_is_reconnected_after_backoff);
	tcase_add_test(srv, test_connection_killed_by_the_server_is_noticed_and_reconnected);
	tcase_add_test(srv, test_connection_refused_is_down_with_the_reason);
	tcase_add_test(srv, test_missing_unix_socket_is_down_with_the_reason);
	tcase_add_test(srv, test_select_db_from_the_url_and_a_db_out_of_range);
	tcase_add_test(srv, test_cancel_before_the_reply_runs_no_callback);
	tcase_add_test(srv, test_cancel_of_a_call_waiting_on_a_paused_server);
	tcase_add_test(srv, test_close_with_pending_calls_answers_each_closed_once);
	tcase_add_test(srv, test_close_from_inside_a_reply_callback);
	tcase_add_test(srv, test_close_from_inside_a_timeout_callback);
	tcase_add_test(srv, test_close_from_inside_a_down_callback_while_hiredis_frees);
	tcase_add_test(srv, test_close_while_connecting);
	suite_add_tcase(s, srv);

	tcase_add_checked_fixture(pw, setup_server_password, teardown);
	tcase_set_timeout(pw, 30);
	tcase_add_test(pw, test_password_from_url_or_option_authenticates);
	tcase_add_test(pw, test_wrong_or_missing_password_is_a_clear_error_without_the_password);
	tcase_add_test(pw, test_unix_socket_url_with_db_and_password);
	suite_add_tcase(s, pw);
	return s;
}

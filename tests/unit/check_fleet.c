/* fleet (src/core/fleet.c) in process and user mode, on the fake clock:
 * what two daemons' fleet objects share through real record files under
 * flock, what stays local, and what a busy lock does. Redis mode runs on a
 * real redis-server in tests/e2e/test_fleet_redis.py. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fleet.h"
#include "core/fleet_hold.h"

Suite *fleet_suite(void);

static char dir[256];
static struct clock clk;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/retryd-check-fleet-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	clock_fake_init(&clk, 1000);
	clk.fake_wall = 1800000000000LL;
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static struct fleet *new_fleet(enum fleet_mode mode, int64_t member)
{
	struct fleet_config cfg;
	char err[256];
	struct fleet *f;

	memset(&cfg, 0, sizeof(cfg));
	fleet_params_default(&cfg.params);
	cfg.mode = mode;
	cfg.scope = FLEET_SCOPE_MODEL;
	cfg.dir = dir;
	cfg.ns = "t";
	cfg.clock = &clk;
	cfg.member = member;
	cfg.lock_wait_ms = 2;
	cfg.lease_ttl_ms = 30000;
	f = fleet_new(&cfg, err, sizeof(err));
	ck_assert_msg(f != NULL, "%s", err);
	return f;
}

static const char *const creds[] = { "fpA", "fpB" };
static const char *const models[] = { "m1", "m2" };

static void ask(struct fleet *f, size_t ncreds, bool retry, struct fleet_answer *a)
{
	struct fleet_ask q = { .provider = "p", .creds = creds, .ncreds = ncreds,
			       .models = models, .nmodels = 2, .retry = retry };

	ck_assert_int_eq(fleet_ask(f, &q, a, NULL, NULL), 1);
}

static void tell(struct fleet *f, const char *cred, enum fleet_outcome_kind kind, int64_t block,
		 int64_t usage, bool overload)
{
	struct fleet_tell t = { .provider = "p", .cred = cred, .model = "m1",
				.out = { .kind = kind, .block_ms = block },
				.usage_reset_ms = usage, .overload = overload,
				.fallback_after = 2, .cooldown_ms = 60000 };

	fleet_tell(f, &t);
}

START_TEST(test_a_provider_is_known_to_the_fleet_by_its_name_and_where_it_is)
{
	char id[FLEET_PROVIDER_ID_MAX];
	const struct { const char *url, *want; } cases[] = {
		{ "http://127.0.0.1:8000/v1", "local@127.0.0.1:8000" },
		{ "http://127.0.0.1:8001/v1", "local@127.0.0.1:8001" },
		{ "https://API.OpenAI.com:443/v1?x=1", "local@api.openai.com" },
		{ "http://localhost:80", "local@localhost" },
		{ "https://localhost:80", "local@localhost:80" },
		{ "https://user:sk-secret@proxy.example/v1", "local@proxy.example" },
		{ "http://[::1]:11434", "local@[::1]:11434" },
		{ "", "local" },
		{ NULL, "local" },
		{ "not a url", "local" },
		{ "http://", "local" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fleet_provider_id("local", cases[i].url, id, sizeof(id));
		ck_assert_str_eq(id, cases[i].want);
	}
	/* A long host keeps its start and a hash of the whole: two differ. */
	{
		char a[FLEET_PROVIDER_ID_MAX], b[FLEET_PROVIDER_ID_MAX], host[200], url[300];

		memset(host, 'h', sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		snprintf(url, sizeof(url), "https://%s.a/v1", host);
		fleet_provider_id("p", url, a, sizeof(a));
		snprintf(url, sizeof(url), "https://%s.b/v1", host);
		fleet_provider_id("p", url, b, sizeof(b));
		ck_assert_str_ne(a, b);
		ck_assert_uint_lt(strlen(a), 80);
	}
}
END_TEST

START_TEST(test_user_mode_a_block_told_by_one_holds_the_other)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	struct fleet_answer ans;

	tell(a, "fpA", FLEET_OUT_SERVER, 5000, -1, false);
	ask(b, 1, false, &ans);
	ck_assert_int_eq(ans.wait_ms, 5000);
	ck_assert_int_eq(ans.reason, FLEET_SERVER_BLOCK);
	ck_assert(ans.reserved);
	ck_assert(!ans.local);
	ck_assert_str_eq(ans.scope, "p|fpA|m1");
	clk.fake_wall += 5000;
	ask(b, 1, false, &ans);
	ck_assert_int_eq(ans.wait_ms, 0);
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
}
END_TEST

START_TEST(test_process_mode_shares_nothing_between_two)
{
	struct fleet *a = new_fleet(FLEET_MODE_PROCESS, 1), *b = new_fleet(FLEET_MODE_PROCESS, 2);
	struct fleet_answer ans;

	tell(a, "fpA", FLEET_OUT_SERVER, 5000, -1, false);
	ask(b, 1, false, &ans);
	ck_assert_int_eq(ans.wait_ms, 0);
	/* ... but a daemon keeps its own: */
	ask(a, 1, false, &ans);
	ck_assert_int_eq(ans.wait_ms, 5000);
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
}
END_TEST

START_TEST(test_an_exhausted_credential_is_skipped_by_everyone_until_its_reset)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	struct fleet_answer ans;

	tell(a, "fpA", FLEET_OUT_ANSWERED, -1, 3600000, false);
	ask(b, 2, false, &ans);
	ck_assert_int_eq(ans.cred, 1);
	ck_assert_str_eq(ans.scope, "p|fpB|m1");
	/* Only A listed: none is left, and the answer says when A comes back. */
	ask(b, 1, false, &ans);
	ck_assert_int_eq(ans.cred, -1);
	ck_assert_int_eq(ans.cred_until, clock_wall_ms(&clk) + 3600000);
	clk.fake_wall += 3600000;
	ask(b, 1, false, &ans);
	ck_assert_int_eq(ans.cred, 0);
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
}
END_TEST

START_TEST(test_after_the_probe_answers_well_the_waiters_leave_in_turn_not_at_once)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	struct fleet *c = new_fleet(FLEET_MODE_USER, 3);
	struct fleet_ask held = { .provider = "p", .creds = creds, .ncreds = 1, .models = models,
				  .nmodels = 2, .held = true };
	struct fleet_answer ans;

	tell(a, "fpA", FLEET_OUT_ANSWERED, -1, 1000, false);
	clk.fake_wall += 1000;
	ask(b, 1, false, &ans);       /* the reset has passed: b probes */
	ck_assert_int_eq(ans.cred, 0);
	ask(c, 1, false, &ans);       /* c waits for b's answer, and knows it */
	ck_assert_int_eq(ans.cred, -1);
	ck_assert(ans.cred_probing);
	tell(b, "fpA", FLEET_OUT_SUCCESS, -1, -1, false);
	ask(c, 1, false, &ans);
	ck_assert_int_eq(ans.cred, 0);
	ck_assert_int_eq(ans.wait_ms, FLEET_TURN_GAP_MS);
	ck_assert_int_eq(ans.reason, FLEET_PACING);
	ck_assert(ans.reserved);
	ask(a, 1, false, &ans);
	ck_assert_int_eq(ans.wait_ms, 2 * FLEET_TURN_GAP_MS);
	clk.fake_wall += FLEET_TURN_GAP_MS;
	ck_assert_int_eq(fleet_ask(c, &held, &ans, NULL, NULL), 1);
	ck_assert_int_eq(ans.wait_ms, 0);   /* its turn: no second slot */
	ck_assert(!ans.cred_probing);
	/* After the window, asks go as ever. */
	clk.fake_wall += FLEET_TURN_WINDOW_MS;
	ask(b, 1, false, &ans);
	ck_assert_int_eq(ans.wait_ms, 0);
	ask(c, 1, false, &ans);
	ck_assert_int_eq(ans.wait_ms, 0);
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
	fleet_close(c, NULL, NULL);
}
END_TEST

/* A spent key's probe (b) answers well announcing rpm_limit requests a
 * minute; c, then a (who learned nothing themselves), ask: their waits. */
static void train_after_probe(int64_t rpm_limit, int64_t waits[2])
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	struct fleet *c = new_fleet(FLEET_MODE_USER, 3);
	struct fleet_tell good = { .provider = "p", .cred = "fpA", .model = "m1",
				   .out = { .kind = FLEET_OUT_SUCCESS, .block_ms = -1,
					    .rpm_limit = rpm_limit },
				   .usage_reset_ms = -1 };
	struct fleet_answer ans;

	tell(a, "fpA", FLEET_OUT_ANSWERED, -1, 1000, false);
	clk.fake_wall += 1000;
	ask(b, 1, false, &ans);       /* b probes */
	ck_assert_int_eq(ans.cred, 0);
	fleet_tell(b, &good);
	ask(c, 1, false, &ans);
	ck_assert_int_eq(ans.cred, 0);
	ck_assert(ans.reserved);
	waits[0] = ans.wait_ms;
	ask(a, 1, false, &ans);
	waits[1] = ans.wait_ms;
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
	fleet_close(c, NULL, NULL);
}

/* The prober's answer announced 300 requests a minute: the waiters leave
 * one every 200 ms, faster than the 500 ms a train keeps when no rate is
 * known, for the rate is kept in the credential's record, not in the
 * waiter's own head; a slow one (20 a minute) spaces them 3 s apart. */
START_TEST(test_after_the_probe_the_waiters_leave_at_the_rate_the_probes_answer_announced)
{
	int64_t w[2];

	train_after_probe(300, w);
	ck_assert_int_eq(w[0], 200);
	ck_assert_int_eq(w[1], 400);
	train_after_probe(20, w);
	ck_assert_int_eq(w[0], 3000);
	ck_assert_int_eq(w[1], 6000);
}
END_TEST

START_TEST(test_a_spent_key_is_told_as_a_reset_not_a_probe_unless_one_is_out)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	struct fleet_answer ans;

	tell(a, "fpA", FLEET_OUT_ANSWERED, -1, 60000, false);
	ask(b, 1, false, &ans);
	ck_assert_int_eq(ans.cred, -1);
	ck_assert(!ans.cred_probing);      /* a reset's wait */
	clk.fake_wall += 60000;
	ask(a, 1, false, &ans);            /* a probes */
	ck_assert_int_eq(ans.cred, 0);
	ask(b, 1, false, &ans);
	ck_assert(ans.cred_probing);
	/* A later reset told meanwhile (another daemon's own 429) replaces
	 * the claim: a reset again, not a probe. */
	tell(b, "fpA", FLEET_OUT_ANSWERED, -1, 3600000, false);
	ask(b, 1, false, &ans);
	ck_assert_int_eq(ans.cred, -1);
	ck_assert(!ans.cred_probing);
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
}
END_TEST

/* A daemon aborted or stopped with its probe out: the claim goes back, so
 * the next daemon probes now, not after FLEET_PROBE_HOLD_MS. */
START_TEST(test_a_probe_abandoned_or_closed_unanswered_lets_the_next_daemon_probe_at_once)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	struct fleet *c = new_fleet(FLEET_MODE_USER, 3);
	struct fleet_answer ans;

	tell(a, "fpA", FLEET_OUT_ANSWERED, -1, 1000, false);
	clk.fake_wall += 1000;
	ask(b, 1, false, &ans);            /* b probes */
	ck_assert_int_eq(ans.cred, 0);
	ask(c, 1, false, &ans);
	ck_assert(ans.cred_probing);
	fleet_abandon(b, "p", "fpB");      /* not the one it probes: nothing */
	ask(c, 1, false, &ans);
	ck_assert(ans.cred_probing);
	fleet_abandon(b, "p", "fpA");      /* its prompt was aborted */
	ask(c, 1, false, &ans);            /* c probes now */
	ck_assert_int_eq(ans.cred, 0);
	ck_assert(!ans.cred_probing);
	ask(a, 1, false, &ans);
	ck_assert(ans.cred_probing);
	fleet_close(c, NULL, NULL);        /* c stops with its probe out */
	ask(a, 1, false, &ans);
	ck_assert_int_eq(ans.cred, 0);
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
}
END_TEST

START_TEST(test_overloads_from_two_daemons_cool_the_model_for_all)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	struct fleet *c = new_fleet(FLEET_MODE_USER, 3);
	struct fleet_answer ans;

	tell(a, "fpA", FLEET_OUT_SERVER, -1, -1, true);
	ask(c, 1, false, &ans);
	ck_assert_int_eq(ans.model, 0);
	tell(b, "fpA", FLEET_OUT_SERVER, -1, -1, true);
	ask(c, 1, false, &ans);
	ck_assert_int_eq(ans.model, 1);
	ck_assert_str_eq(ans.scope, "p|fpA|m2");
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
	fleet_close(c, NULL, NULL);
}
END_TEST

/* Every record file of the fleet, flocked by this process through its own
 * open file descriptions (which conflict with the fleet's). */
static int lock_all(int *fds, int max)
{
	char sub[300], path[600];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(sub, sizeof(sub), "%s/t", dir);
	d = opendir(sub);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL && n < max) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", sub, e->d_name);
		fds[n] = open(path, O_RDWR);
		ck_assert_int_ge(fds[n], 0);
		ck_assert_int_eq(flock(fds[n], LOCK_EX | LOCK_NB), 0);
		n++;
	}
	closedir(d);
	return n;
}

START_TEST(test_a_train_whose_record_is_locked_gives_a_gap_asked_again_not_a_slot)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	struct fleet *c = new_fleet(FLEET_MODE_USER, 3);
	struct fleet_answer ans;
	int fds[16], n;

	tell(a, "fpA", FLEET_OUT_ANSWERED, -1, 1000, false);
	clk.fake_wall += 1000;
	ask(b, 1, false, &ans);       /* b probes */
	tell(b, "fpA", FLEET_OUT_SUCCESS, -1, -1, false);
	n = lock_all(fds, 16);
	ck_assert_int_ge(n, 1);
	ask(c, 1, false, &ans);
	ck_assert_int_eq(ans.wait_ms, FLEET_TURN_GAP_MS);
	ck_assert_int_eq(ans.reason, FLEET_PACING);
	ck_assert(!ans.reserved);     /* no slot was taken: it asks again */
	for (int i = 0; i < n; i++)
		close(fds[i]);
	ask(a, 1, false, &ans);       /* the train's first slot is still free */
	ck_assert_int_eq(ans.wait_ms, FLEET_TURN_GAP_MS);
	ck_assert(ans.reserved);
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
	fleet_close(c, NULL, NULL);
}
END_TEST

START_TEST(test_a_paced_scope_whose_record_is_locked_asks_again_soon_not_at_once)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1);
	struct fleet_tell t = { .provider = "p", .cred = "fpA", .model = "m1",
				.out = { .kind = FLEET_OUT_SUCCESS, .rpm_limit = 60 },
				.usage_reset_ms = -1, .fallback_after = 2, .cooldown_ms = 60000 };
	struct fleet_answer ans;
	int fds[16], n;

	fleet_tell(a, &t);            /* the provider's rate: 60 a minute */
	n = lock_all(fds, 16);
	ck_assert_int_ge(n, 1);
	ask(a, 1, false, &ans);
	ck_assert(ans.local);
	ck_assert_int_ge(ans.wait_ms, 5);
	ck_assert_int_lt(ans.wait_ms, 10);
	ck_assert_int_eq(ans.reason, FLEET_PACING);
	ck_assert(!ans.reserved);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	ask(a, 1, false, &ans);       /* the lock free: a real slot */
	ck_assert(!ans.local);
	fleet_close(a, NULL, NULL);
}
END_TEST

START_TEST(test_a_busy_lock_means_deciding_locally_this_time)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	struct fleet_answer ans;
	int fds[16], n;

	tell(a, "fpA", FLEET_OUT_SERVER, 5000, -1, false);
	ask(b, 1, false, &ans);      /* b learns the block: its local copy has it */
	n = lock_all(fds, 16);
	ck_assert_int_ge(n, 1);
	clk.fake_wall += 1000;
	ask(b, 1, false, &ans);
	ck_assert(ans.local);
	ck_assert_int_eq(ans.wait_ms, 4000);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	ask(b, 1, false, &ans);
	ck_assert(!ans.local);
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
}
END_TEST

START_TEST(test_a_busy_lock_still_holds_a_daemon_that_never_read_the_block)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	struct fleet_answer ans;
	int fds[16], n;

	tell(a, "fpA", FLEET_OUT_SERVER, 5000, -1, false);
	n = lock_all(fds, 16);   /* b's first ask finds every record locked */
	ck_assert_int_ge(n, 1);
	ask(b, 1, false, &ans);
	ck_assert(ans.local);
	ck_assert_int_eq(ans.wait_ms, 5000);
	ck_assert_int_eq(ans.reason, FLEET_SERVER_BLOCK);
	ck_assert_int_eq(ans.block_member, 1);
	/* Decided on a copy while the record was locked: no slot of its own
	 * after the block; it asks again then. */
	ck_assert(!ans.reserved);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
}
END_TEST

START_TEST(test_leases_bound_the_attempts_in_flight_and_come_back_when_done)
{
	struct fleet_config cfg;
	struct fleet *a, *b;
	struct fleet_answer ans;
	char err[256];

	memset(&cfg, 0, sizeof(cfg));
	fleet_params_default(&cfg.params);
	cfg.mode = FLEET_MODE_USER;
	cfg.dir = dir;
	cfg.ns = "t";
	cfg.clock = &clk;
	cfg.concurrency = 1;
	cfg.lock_wait_ms = 2;
	cfg.member = 1;
	a = fleet_new(&cfg, err, sizeof(err));
	cfg.member = 2;
	b = fleet_new(&cfg, err, sizeof(err));
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ask(a, 1, false, &ans);
	ck_assert(ans.lease);
	ck_assert_int_eq(ans.wait_ms, 0);
	ask(b, 1, false, &ans);
	ck_assert_int_eq(ans.reason, FLEET_CONCURRENCY);
	ck_assert_int_ge(ans.wait_ms, 50);
	ck_assert(!ans.reserved);
	fleet_done(a);
	ask(b, 1, false, &ans);
	ck_assert(ans.lease);
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
}
END_TEST

START_TEST(test_state_shows_the_block_and_clear_removes_it_for_all)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	json_t *st;
	char scope[160];

	tell(a, "fpA", FLEET_OUT_SERVER, 5000, 60000, true);
	st = fleet_state(b, "p", "fpA", "m1");
	ck_assert_str_eq(json_string_value(json_object_get(st, "mode")), "user");
	ck_assert_int_eq(json_integer_value(json_object_get(st, "blockedForMs")), 5000);
	json_decref(st);
	ck_assert_int_eq(fleet_clear(b, "p", "fpA", "m1", scope, sizeof(scope)), 3);
	ck_assert_str_eq(scope, "p|fpA|m1");
	st = fleet_state(a, "p", "fpA", "m1");
	ck_assert_ptr_null(json_object_get(st, "blockedUntil"));
	json_decref(st);
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
}
END_TEST

START_TEST(test_a_fleet_dir_open_to_others_is_refused)
{
	struct fleet_config cfg;
	char err[256];

	ck_assert_int_eq(chmod(dir, 0755), 0);
	memset(&cfg, 0, sizeof(cfg));
	fleet_params_default(&cfg.params);
	cfg.mode = FLEET_MODE_USER;
	cfg.dir = dir;
	cfg.ns = "t";
	cfg.clock = &clk;
	cfg.member = 1;
	ck_assert_ptr_null(fleet_new(&cfg, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "0700"));
}
END_TEST

START_TEST(test_a_reserved_slot_is_kept_unless_the_credential_was_spent_meanwhile)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	struct fleet_answer ans;
	struct fleet_ask q = { .provider = "p", .creds = creds, .ncreds = 2, .models = models,
			       .nmodels = 2 };

	{
		struct fleet_tell t = { .provider = "p", .cred = "fpA", .model = "m1",
					.out = { .kind = FLEET_OUT_SUCCESS, .block_ms = -1,
						 .rpm_limit = 60 },
					.usage_reset_ms = -1 };

		fleet_tell(a, &t);
	}
	ck_assert_int_eq(fleet_ask(b, &q, &ans, NULL, NULL), 1);
	ck_assert_int_eq(ans.wait_ms, 0);
	ck_assert_int_eq(fleet_ask(b, &q, &ans, NULL, NULL), 1);
	ck_assert_int_eq(ans.reason, FLEET_PACING);
	ck_assert(ans.reserved);
	clk.fake_wall += ans.wait_ms;
	q.held = true;
	ck_assert_int_eq(fleet_ask(b, &q, &ans, NULL, NULL), 1);
	ck_assert_int_eq(ans.wait_ms, 0);     /* its own slot: no second one */
	ck_assert_int_eq(ans.cred, 0);
	/* Failing for everyone while b waited for its slot: b waits for the
	 * probe instead of going. */
	q.held = false;
	ck_assert_int_eq(fleet_ask(b, &q, &ans, NULL, NULL), 1);
	ck_assert_int_eq(ans.reason, FLEET_PACING);
	tell(a, "fpA", FLEET_OUT_SERVER, -1, -1, false);
	tell(b, "fpA", FLEET_OUT_SERVER, -1, -1, false);
	tell(a, "fpA", FLEET_OUT_SERVER, -1, -1, false);
	clk.fake_wall += ans.wait_ms;
	q.held = true;
	ck_assert_int_eq(fleet_ask(b, &q, &ans, NULL, NULL), 1);
	ck_assert_int_ne(ans.wait_ms, 0);
	ck_assert_int_eq(ans.reason, FLEET_PROBE);
	{
		struct fleet_tell ok = { .provider = "p", .cred = "fpA", .model = "m1",
					 .out = { .kind = FLEET_OUT_SUCCESS, .block_ms = -1 },
					 .usage_reset_ms = -1 };

		fleet_tell(a, &ok);
	}
	/* Spent while b waited for its slot: b moves to the next key. */
	tell(a, "fpA", FLEET_OUT_ANSWERED, -1, 600000, false);
	ck_assert_int_eq(fleet_ask(b, &q, &ans, NULL, NULL), 1);
	ck_assert_int_eq(ans.cred, 1);
	ck_assert_str_eq(ans.scope, "p|fpB|m1");
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
}
END_TEST

START_TEST(test_a_key_switched_to_is_paced_at_the_rate_learned_for_the_other)
{
	struct fleet *a = new_fleet(FLEET_MODE_USER, 1), *b = new_fleet(FLEET_MODE_USER, 2);
	struct fleet_answer ans;
	struct fleet_tell t = { .provider = "p", .cred = "fpA", .model = "m1",
				.out = { .kind = FLEET_OUT_SUCCESS, .block_ms = -1, .rpm_limit = 60 },
				.usage_reset_ms = -1 };

	fleet_tell(a, &t);
	tell(a, "fpA", FLEET_OUT_ANSWERED, -1, 600000, false);
	/* b never saw a rate itself: the fleet's for fpA paces fpB. */
	ask(b, 2, false, &ans);
	ck_assert_int_eq(ans.cred, 1);
	ck_assert_int_eq(ans.wait_ms, 0);
	ask(b, 2, false, &ans);
	ck_assert_int_eq(ans.reason, FLEET_PACING);
	ck_assert_int_eq(ans.wait_ms, 1050);
	fleet_close(a, NULL, NULL);
	fleet_close(b, NULL, NULL);
}
END_TEST

/* The words of a hold, from answers as the stores fill them. */
START_TEST(test_a_block_from_a_record_without_its_teller_is_still_named_plainly)
{
	struct fleet_answer a = { .wait_ms = 586000, .reason = FLEET_SERVER_BLOCK };
	char out[400];
	json_t *ev;

	snprintf(a.scope, sizeof(a.scope), "p|-|m1");
	fleet_hold_refusal(&a, false, a.wait_ms, 1000, 1800000000000LL, out, sizeof(out));
	ck_assert_str_eq(out, "the provider asked a retryd of yours to wait 586 s (fleet: p|-|m1); "
			      "exceeds retry.maxDelayMs 1000; retryctl fleet clear drops it");
	ev = fleet_hold_event(&a, false, 1800000000000LL);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "cause")),
			 "a retryd of yours was asked to wait");
	ck_assert_ptr_null(json_object_get(ev, "hint"));
	ck_assert_ptr_null(json_object_get(ev, "ageMs"));
	ck_assert_ptr_null(json_object_get(ev, "byThisRetryd"));
	json_decref(ev);
}
END_TEST

START_TEST(test_a_block_this_daemon_was_told_is_its_own_in_the_words)
{
	struct fleet_answer a = { .wait_ms = 1500, .reason = FLEET_SERVER_BLOCK,
				  .block_seen = 1000, .block_member = 5, .block_mine = true,
				  .block_status = 503, .block_asked = 2500 };
	char out[400];
	json_t *ev;

	snprintf(a.scope, sizeof(a.scope), "p");
	fleet_hold_refusal(&a, false, a.wait_ms, 1000, 1300, out, sizeof(out));
	ck_assert_str_eq(out, "the provider asked this retryd to wait 2.5 s (fleet: p, seen 300 ms "
			      "ago); exceeds retry.maxDelayMs 1000; retryctl fleet clear drops it");
	ev = fleet_hold_event(&a, false, 1300);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "cause")),
			 "this retryd got 503 retry-after 2s");
	ck_assert(json_is_true(json_object_get(ev, "byThisRetryd")));
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "ageMs")), 300);
	json_decref(ev);
}
END_TEST

Suite *fleet_suite(void)
{
	Suite *s = suite_create("fleet");
	TCase *tc = tcase_create("stores");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_user_mode_a_block_told_by_one_holds_the_other);
	tcase_add_test(tc, test_process_mode_shares_nothing_between_two);
	tcase_add_test(tc, test_an_exhausted_credential_is_skipped_by_everyone_until_its_reset);
	tcase_add_test(tc, test_a_provider_is_known_to_the_fleet_by_its_name_and_where_it_is);
	tcase_add_test(tc, test_after_the_probe_answers_well_the_waiters_leave_in_turn_not_at_once);
	tcase_add_test(tc, test_after_the_probe_the_waiters_leave_at_the_rate_the_probes_answer_announced);
	tcase_add_test(tc, test_a_spent_key_is_told_as_a_reset_not_a_probe_unless_one_is_out);
	tcase_add_test(tc, test_a_probe_abandoned_or_closed_unanswered_lets_the_next_daemon_probe_at_once);
	tcase_add_test(tc, test_a_train_whose_record_is_locked_gives_a_gap_asked_again_not_a_slot);
	tcase_add_test(tc, test_overloads_from_two_daemons_cool_the_model_for_all);
	tcase_add_test(tc, test_a_busy_lock_means_deciding_locally_this_time);
	tcase_add_test(tc, test_a_paced_scope_whose_record_is_locked_asks_again_soon_not_at_once);
	tcase_add_test(tc, test_a_busy_lock_still_holds_a_daemon_that_never_read_the_block);
	tcase_add_test(tc, test_leases_bound_the_attempts_in_flight_and_come_back_when_done);
	tcase_add_test(tc, test_state_shows_the_block_and_clear_removes_it_for_all);
	tcase_add_test(tc, test_a_fleet_dir_open_to_others_is_refused);
	tcase_add_test(tc, test_a_reserved_slot_is_kept_unless_the_credential_was_spent_meanwhile);
	tcase_add_test(tc, test_a_key_switched_to_is_paced_at_the_rate_learned_for_the_other);
	tcase_add_test(tc, test_a_block_from_a_record_without_its_teller_is_still_named_plainly);
	tcase_add_test(tc, test_a_block_this_daemon_was_told_is_its_own_in_the_words);
	suite_add_tcase(s, tc);
	return s;
}

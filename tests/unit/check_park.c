/* A usage limit waited out (src/core/park.c): how long a park is, where
 * its reset came from, the maximum over every park of a prompt, the
 * heartbeat on the fake clock, and a prompt's own override of the mode. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/builtins.h"
#include "core/park.h"

Suite *park_suite(void);

static char dir[64], path[128];
static struct settings settings;
static struct clock clk;
static struct park park;
static json_t *events;
static struct classify *daemon_classify;

static void record(void *ctx, json_t *ev)
{
	(void)ctx;
	json_array_append_new(events, ev);
}

static void setup(void)
{
	char err[256];
	json_t *builtins = builtins_settings();

	strcpy(dir, "/tmp/retryd-park-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/settings.json", dir);
	ck_assert_int_eq(settings_load(&settings, builtins, path, err, sizeof(err)), 0);
	json_decref(builtins);
	daemon_classify = classify_new(settings_get(&settings, "retry"), err, sizeof(err));
	ck_assert_ptr_nonnull(daemon_classify);
	clock_fake_init(&clk, 0);
	events = json_array();
	park_init(&park, &clk, record, NULL);
}

static void teardown(void)
{
	park_forget(&park);
	json_decref(events);
	classify_free(daemon_classify);
	settings_release(&settings);
	unlink(path);
	rmdir(dir);
}

/* The policy a prompt with this retry object (JSON, or NULL) runs on. */
static void adopt(struct policy *p, const char *override)
{
	char err[256];
	json_t *o = override ? json_loads(override, 0, NULL) : NULL;
	json_t *resolved = policy_for_prompt(&settings, o, err, sizeof(err));

	ck_assert_msg(resolved != NULL, "%s", err);
	memset(p, 0, sizeof(*p));
	policy_adopt(p, resolved, 0, &settings, daemon_classify);
	json_decref(resolved);
	json_decref(o);
}

START_TEST(test_the_mode_is_off_by_default_and_a_prompt_may_turn_it_on)
{
	struct policy p;
	char err[256];
	json_t *bad = json_pack("{s:s}", "usageLimitWait", "yes");

	adopt(&p, NULL);
	ck_assert(!park_enabled(&p));
	policy_release(&p);
	adopt(&p, "{\"usageLimitWait\":\"wait\",\"maxUsageWaitMs\":60000}");
	ck_assert(park_enabled(&p));
	ck_assert_int_eq(policy_int(&p, "maxUsageWaitMs"), 60000);
	policy_release(&p);
	/* A bad value in a prompt's own object is refused, naming the key. */
	ck_assert_ptr_null(policy_for_prompt(&settings, bad, err, sizeof(err)));
	ck_assert_msg(strstr(err, "retry.usageLimitWait") != NULL, "%s", err);
	json_decref(bad);
}
END_TEST

START_TEST(test_a_stated_reset_is_waited_for_with_a_margin_and_keeps_its_source)
{
	struct policy p;
	struct park_plan plan;

	adopt(&p, "{\"usageLimitWait\":\"wait\"}");
	park_plan(&park, &p, 4 * 3600000 + 12 * 60000, PARK_SOURCE_HEADER, 1767225600000, &plan);
	ck_assert(plan.park);
	ck_assert_int_eq(plan.delay_ms, 4 * 3600000 + 12 * 60000 + PARK_MARGIN_MS);
	ck_assert_int_eq(plan.source, PARK_SOURCE_HEADER);
	ck_assert_int_eq(plan.reset_at, 1767225600000 + plan.delay_ms);
	policy_release(&p);
}
END_TEST

START_TEST(test_an_unstated_reset_probes_after_a_minute_doubling_to_a_cap)
{
	struct policy p;
	struct park_plan plan;
	int64_t want = PARK_PROBE_FIRST_MS;

	adopt(&p, "{\"usageLimitWait\":\"wait\",\"maxUsageWaitMs\":2592000000}");
	for (int i = 0; i < 8; i++) {
		park_plan(&park, &p, -1, PARK_SOURCE_TEXT, 0, &plan);
		ck_assert(plan.park);
		ck_assert_int_eq(plan.source, PARK_SOURCE_PROBE);
		ck_assert_int_eq(plan.delay_ms, want);
		park_begin(&park, &plan, 60000, 0);
		park_wake(&park, 0);
		want = want * 2 > PARK_PROBE_MAX_MS ? PARK_PROBE_MAX_MS : want * 2;
	}
	ck_assert_int_eq(plan.delay_ms, PARK_PROBE_MAX_MS);
	/* A probe told of a reset already past follows the schedule too. */
	park_plan(&park, &p, 0, PARK_SOURCE_BODY, 0, &plan);
	ck_assert_int_eq(plan.source, PARK_SOURCE_PROBE);
	policy_release(&p);
}
END_TEST

START_TEST(test_the_maximum_counts_every_park_of_the_prompt)
{
	struct policy p;
	struct park_plan plan;

	adopt(&p, "{\"usageLimitWait\":\"wait\",\"maxUsageWaitMs\":3600000}");
	park_plan(&park, &p, 1800000, PARK_SOURCE_BODY, 0, &plan);
	ck_assert(plan.park);
	park_begin(&park, &plan, 60000, 0);
	park_wake(&park, plan.delay_ms);
	park_plan(&park, &p, 1800000, PARK_SOURCE_BODY, plan.delay_ms, &plan);
	ck_assert(!plan.park);
	ck_assert_str_eq(plan.why, "usage limit: resets in 30m; waited 30m1s for it already, "
			 "retry.maxUsageWaitMs is 1h");
	policy_release(&p);
}
END_TEST

START_TEST(test_the_heartbeat_says_what_is_left_until_the_reset)
{
	struct policy p;
	struct park_plan plan;
	json_t *st;

	adopt(&p, "{\"usageLimitWait\":\"wait\"}");
	park_plan(&park, &p, 2500, PARK_SOURCE_TEXT, clock_wall_ms(&clk), &plan);
	park_begin(&park, &plan, 1000, clock_wall_ms(&clk));
	clock_fake_advance(&clk, 3000);
	ck_assert_int_eq(json_array_size(events), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(events, 0),
							    "remainingMs")), 2500);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(events, 2),
							    "remainingMs")), 500);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(events, 2), "resetAt")),
			 "2026-01-01T00:00:03Z");
	st = park_state_json(&park, clock_wall_ms(&clk));
	ck_assert_int_eq(json_integer_value(json_object_get(st, "delayMs")), 500);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "waitedMs")), 3000);
	json_decref(st);
	/* Woken: no beat more, no state. */
	park_wake(&park, clock_wall_ms(&clk));
	clock_fake_advance(&clk, 5000);
	ck_assert_int_eq(json_array_size(events), 3);
	ck_assert_ptr_null(park_state_json(&park, clock_wall_ms(&clk)));
	policy_release(&p);
}
END_TEST

START_TEST(test_iso8601_is_utc_to_the_second)
{
	char out[32];

	ck_assert_str_eq(park_iso8601(1767225600000 + 4 * 3600000 + 12 * 60000 + 999, out,
				      sizeof(out)), "2026-01-01T04:12:00Z");
	ck_assert_str_eq(park_iso8601(0, out, sizeof(out)), "1970-01-01T00:00:00Z");
}
END_TEST

Suite *park_suite(void)
{
	Suite *s = suite_create("park");
	TCase *tc = tcase_create("plan");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_the_mode_is_off_by_default_and_a_prompt_may_turn_it_on);
	tcase_add_test(tc, test_a_stated_reset_is_waited_for_with_a_margin_and_keeps_its_source);
	tcase_add_test(tc, test_an_unstated_reset_probes_after_a_minute_doubling_to_a_cap);
	tcase_add_test(tc, test_the_maximum_counts_every_park_of_the_prompt);
	tcase_add_test(tc, test_the_heartbeat_says_what_is_left_until_the_reset);
	tcase_add_test(tc, test_iso8601_is_utc_to_the_second);
	suite_add_tcase(s, tc);
	return s;
}

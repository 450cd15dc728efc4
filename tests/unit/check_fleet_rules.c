/* fleet_rules: the shared decisions, driven by the vectors that
 * src/core/fleet.lua must also pass on a real redis-server
 * (tests/fixtures/fleet/vectors.json; tests/e2e/test_fleet_lua.py). */
#include <check.h>
#include <jansson.h>
#include <string.h>

#include "core/fleet_rules.h"

Suite *fleet_rules_suite(void);

#define VECTORS "tests/fixtures/fleet/vectors.json"

static int64_t num(const json_t *o, const char *k, int64_t dflt)
{
	const json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static bool flag(const json_t *o, const char *k)
{
	return json_is_true(json_object_get(o, k));
}

static void params_from(struct fleet_params *p, const json_t *o)
{
	fleet_params_default(p);
	p->min_block_ms = num(o, "minBlockMs", p->min_block_ms);
	p->max_block_ms = num(o, "maxBlockMs", p->max_block_ms);
	p->rpm = num(o, "rpm", p->rpm);
	p->probe_interval_ms = num(o, "probeIntervalMs", p->probe_interval_ms);
	p->open_after = num(o, "openAfter", p->open_after);
	p->window_ms = num(o, "windowMs", p->window_ms);
	p->k_milli = num(o, "kMilli", p->k_milli);
	p->throttle_min = num(o, "throttleMin", p->throttle_min);
	p->budget_max = num(o, "budgetMax", p->budget_max);
	p->budget_ratio = num(o, "budgetRatio", p->budget_ratio);
	p->divide = num(o, "divide", p->divide);
}

static enum fleet_outcome_kind kind_from(const char *k)
{
	if (strcmp(k, "success") == 0)
		return FLEET_OUT_SUCCESS;
	if (strcmp(k, "answered") == 0)
		return FLEET_OUT_ANSWERED;
	if (strcmp(k, "server") == 0)
		return FLEET_OUT_SERVER;
	ck_assert_str_eq(k, "local");
	return FLEET_OUT_LOCAL;
}

static int64_t field(const struct fleet_scope *s, const char *name)
{
	char text[512], key[40];
	const char *at;
	size_t n = fleet_scope_format(s, text, sizeof(text));

	ck_assert_uint_gt(n, 0);
	snprintf(key, sizeof(key), "%s=", name);
	at = strstr(text, key);
	while (at != NULL && at != text && at[-1] != ' ')
		at = strstr(at + 1, key);
	ck_assert_msg(at != NULL, "no field %s in the record", name);
	return strtoll(at + strlen(key), NULL, 10);
}

static void run_case(const json_t *c)
{
	const char *name = json_string_value(json_object_get(c, "name"));
	struct fleet_params p;
	struct fleet_scope s;
	struct fleet_model m = { 0, 0 };
	int64_t until = 0;
	size_t i;
	json_t *step;

	params_from(&p, json_object_get(c, "params"));
	fleet_scope_init(&s);
	json_array_foreach(json_object_get(c, "steps"), i, step) {
		const char *op = json_string_value(json_object_get(step, "op"));
		const json_t *want = json_object_get(step, "expect");
		int64_t now = num(step, "now", 0);

		if (strcmp(op, "acquire") == 0) {
			struct fleet_verdict v;

			fleet_rules_acquire(&s, &p, now, flag(step, "retry"), num(step, "rand", 999),
					    &v);
			ck_assert_msg(v.wait_ms == num(want, "wait", -1),
				      "%s, step %zu: wait %lld", name, i, (long long)v.wait_ms);
			ck_assert_msg(strcmp(fleet_reason_name(v.reason),
					     json_string_value(json_object_get(want, "reason"))) == 0,
				      "%s, step %zu: reason %s", name, i, fleet_reason_name(v.reason));
			if (json_object_get(want, "probe") != NULL)
				ck_assert_msg(v.probe == flag(want, "probe"), "%s, step %zu: probe %d",
					      name, i, v.probe);
		} else if (strcmp(op, "report") == 0) {
			struct fleet_outcome o = {
				.kind = kind_from(json_string_value(json_object_get(step, "kind"))),
				.block_ms = num(step, "blockMs", -1),
				.rpm_limit = num(step, "rpmLimit", 0),
				.member = num(step, "member", 1),
			};

			fleet_rules_report(&s, &p, now, &o);
		} else if (strcmp(op, "clear") == 0) {
			fleet_rules_clear(&s);
		} else if (strcmp(op, "record") == 0) {
			const char *k;
			json_t *v;

			json_object_foreach((json_t *)want, k, v)
				ck_assert_msg(field(&s, k) == json_integer_value(v),
					      "%s, step %zu: %s = %lld, want %lld", name, i, k,
					      (long long)field(&s, k), (long long)json_integer_value(v));
		} else if (strcmp(op, "exhaust") == 0) {
			fleet_rules_exhaust(&until, &p, now, num(step, "resetMs", 0));
			ck_assert_msg(until == num(want, "until", -1), "%s, step %zu: until %lld",
				      name, i, (long long)until);
		} else {
			ck_assert_str_eq(op, "model");
			fleet_rules_model_report(&m, now, flag(step, "overload"), flag(step, "success"),
						 num(step, "after", 3), num(step, "cooldownMs", 0));
			ck_assert_msg(m.streak == num(want, "streak", -1) &&
					      m.cool_until == num(want, "coolUntil", -1),
				      "%s, step %zu: streak %lld cool %lld", name, i,
				      (long long)m.streak, (long long)m.cool_until);
		}
	}
}

START_TEST(test_every_vector_decides_as_written)
{
	json_error_t err;
	json_t *root = json_load_file(VECTORS, 0, &err), *c;
	size_t i;

	ck_assert_msg(root != NULL, "%s: %s", VECTORS, err.text);
	ck_assert_uint_ge(json_array_size(json_object_get(root, "cases")), 15);
	json_array_foreach(json_object_get(root, "cases"), i, c)
		run_case(c);
	json_decref(root);
}
END_TEST

START_TEST(test_a_record_survives_its_text_form)
{
	struct fleet_scope a, b;
	char text[512];
	size_t n;

	fleet_scope_init(&a);
	a.block_until = 1764547200123LL;
	a.tokens = 4500;
	a.open = 1;
	a.fail_member = 281474976710655LL;
	n = fleet_scope_format(&a, text, sizeof(text));
	ck_assert_uint_gt(n, 0);
	ck_assert_int_eq(fleet_scope_parse(&b, text, n), 0);
	ck_assert_mem_eq(&a, &b, sizeof(a));
}
END_TEST

START_TEST(test_a_broken_record_is_refused_and_unknown_fields_skipped)
{
	struct fleet_scope s;

	ck_assert_int_eq(fleet_scope_parse(&s, "garbage", 7), -1);
	ck_assert_int_eq(fleet_scope_parse(&s, "open=x", 6), -1);
	ck_assert_int_eq(fleet_scope_parse(&s, "", 0), -1);
	ck_assert_int_eq(fleet_scope_parse(&s, "future=3 open=1", 15), 0);
	ck_assert_int_eq(s.open, 1);
	ck_assert_int_eq(s.tokens, -1);
}
END_TEST

START_TEST(test_an_older_tail_after_the_newline_is_not_read)
{
	struct fleet_scope s;
	const char text[] = "open=1 tokens=5\n00 tokens=77 fail_streak=9";

	ck_assert_int_eq(fleet_scope_parse(&s, text, sizeof(text) - 1), 0);
	ck_assert_int_eq(s.open, 1);
	ck_assert_int_eq(s.tokens, 5);
	ck_assert_int_eq(s.fail_streak, 0);
}
END_TEST

START_TEST(test_a_record_that_does_not_fit_formats_to_nothing)
{
	struct fleet_scope s;
	char small[16];

	fleet_scope_init(&s);
	ck_assert_uint_eq(fleet_scope_format(&s, small, sizeof(small)), 0);
}
END_TEST

Suite *fleet_rules_suite(void)
{
	Suite *s = suite_create("fleet_rules");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_every_vector_decides_as_written);
	tcase_add_test(tc, test_a_record_survives_its_text_form);
	tcase_add_test(tc, test_a_broken_record_is_refused_and_unknown_fields_skipped);
	tcase_add_test(tc, test_a_record_that_does_not_fit_formats_to_nothing);
	tcase_add_test(tc, test_an_older_tail_after_the_newline_is_not_read);
	suite_add_tcase(s, tc);
	return s;
}

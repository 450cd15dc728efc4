/* fleet_rules: the shared decisions, driven by the vectors that
 * src/core/fleet.lua must also pass on a real redis-server
 * (tests/fixtures/fleet/vectors.json; tests/e2e/test_fleet_lua.py). */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "base/number.h"
#include "core/fleet_rules.h"

START_TEST(test_a_glanced_record_adds_its_later_block_but_never_moves_ours_earlier)
{
	struct fleet_scope mine, seen;

	fleet_scope_init(&mine);
	fleet_scope_init(&seen);
	seen.block_until = 9000;
	seen.block_member = 7;
	seen.block_status = 429;
	seen.pace_tat = 500;
	seen.rpm_learned = 60;
	fleet_scope_merge(&mine, &seen);
	ck_assert_int_eq(mine.block_until, 9000);
	ck_assert_int_eq(mine.block_member, 7);
	ck_assert_int_eq(mine.block_status, 429);
	ck_assert_int_eq(mine.pace_tat, 500);
	ck_assert_int_eq(mine.rpm_learned, 60);
	/* Our own later block (a report still waiting for the lock) stays. */
	mine.block_until = 20000;
	mine.block_member = 1;
	seen.rpm_learned = 120;
	fleet_scope_merge(&mine, &seen);
	ck_assert_int_eq(mine.block_until, 20000);
	ck_assert_int_eq(mine.block_member, 1);
	ck_assert_int_eq(mine.rpm_learned, 60);
	/* A circuit seen open is open here too. */
	seen.open = 1;
	seen.shared = 1;
	seen.probe_until = 3000;
	fleet_scope_merge(&mine, &seen);
	ck_assert_int_eq(mine.open, 1);
	ck_assert_int_eq(mine.probe_until, 3000);
}
END_TEST

START_TEST(test_a_train_gives_slots_one_gap_apart_up_to_its_bound_then_ends)
{
	struct fleet_params p;
	int64_t turn, end, bound, w = 0;

	fleet_params_default(&p);
	p.max_block_ms = 1000;
	ck_assert_int_eq(fleet_rules_turn_gap(&p, 0), FLEET_TURN_GAP_MS);
	fleet_rules_turn_start(&turn, &end, 2600, fleet_rules_turn_gap(&p, 0));
	bound = fleet_rules_turn_bound(end, &p);
	ck_assert_int_eq(bound, 2600 + 30000 + 1000 + 63000 + 4 * 2000);
	ck_assert_int_eq(fleet_rules_turn(&turn, end, 2600, 500, &p), 500);
	ck_assert_int_eq(fleet_rules_turn(&turn, end, 2600, 500, &p), 1000);
	for (int i = 0; i < 300; i++)
		w = fleet_rules_turn(&turn, end, 2600, 500, &p);
	ck_assert_int_eq(w, bound - 2600);   /* never past the bound */
	ck_assert_int_le(turn, bound);
	ck_assert_int_eq(fleet_rules_turn(&turn, end, end, 500, &p), 0); /* the window is over */
	p.rpm = 30;
	ck_assert_int_eq(fleet_rules_turn_gap(&p, 0), 2000);
	p.rpm = 1000000;
	ck_assert_int_eq(fleet_rules_turn_gap(&p, 0), 1);
}
END_TEST

START_TEST(test_a_train_leaves_at_the_learned_rate_unless_one_is_set_never_ten_a_second)
{
	struct fleet_params p;

	fleet_params_default(&p);
	ck_assert_int_eq(fleet_rules_turn_gap(&p, 20), 3000);     /* slower than the default */
	ck_assert_int_eq(fleet_rules_turn_gap(&p, 300), 200);     /* faster */
	ck_assert_int_eq(fleet_rules_turn_gap(&p, 60000), FLEET_TURN_GAP_MIN_MS);
	ck_assert_int_eq(fleet_rules_turn_gap(&p, FLEET_RPM_MAX), FLEET_TURN_GAP_MIN_MS);
	p.rpm = 30;                                                /* the user's word first */
	ck_assert_int_eq(fleet_rules_turn_gap(&p, 300), 2000);
}
END_TEST

START_TEST(test_a_trains_kept_gap_is_refused_outside_one_a_minute)
{
	struct fleet_params p;
	struct fleet_refusal why = { 0 };
	int64_t now = 1000000, turn = now + 500, end = now + 1000, gap;

	fleet_params_default(&p);
	gap = 3000;
	ck_assert_uint_eq(fleet_turn_check(&turn, &end, &gap, &p, now, &why, 0), 0);
	ck_assert_int_eq(gap, 3000);
	gap = FLEET_TURN_GAP_MAX_MS + 1;
	ck_assert_uint_eq(fleet_turn_check(&turn, &end, &gap, &p, now, &why, 0), 1);
	ck_assert_int_eq(gap, 0);
	ck_assert_str_eq(why.field, "gap");
	gap = -5;
	ck_assert_uint_eq(fleet_turn_check(&turn, &end, &gap, &p, now, &why, 0), 1);
	ck_assert_int_eq(gap, 0);
}
END_TEST

START_TEST(test_a_credential_record_with_newer_fields_is_read_for_the_ones_it_knows)
{
	int64_t v[3];

	ck_assert_int_eq(fleet_ints_parse("5 6 7 8 9\n", 10, v, 3), 0);
	ck_assert_int_eq(v[0], 5);
	ck_assert_int_eq(v[2], 7);
	ck_assert_int_eq(fleet_ints_parse("5\n", 2, v, 3), 0);
	ck_assert_int_eq(v[1], 0);
	ck_assert_int_eq(fleet_ints_parse("5 x 7\n", 6, v, 3), -1);
	ck_assert_int_eq(v[0], 0);
}
END_TEST

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
				.status = num(step, "status", 0),
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

START_TEST(test_the_first_ask_after_a_reset_claims_the_probe_once)
{
	int64_t until = 0;

	/* Never spent: nothing to claim. */
	ck_assert(!fleet_rules_claim(&until, 1000, 5000));
	ck_assert_int_eq(until, 0);
	until = 3000;
	ck_assert(!fleet_rules_claim(&until, 2999, 5000)); /* still spent */
	ck_assert(fleet_rules_claim(&until, 3000, 5000));
	ck_assert_int_eq(until, 8000);
	ck_assert(!fleet_rules_claim(&until, 3001, 5000)); /* claimed: the others wait */
	ck_assert(fleet_rules_claim(&until, 8000, 5000));  /* no answer came: again */
}
END_TEST

START_TEST(test_a_probe_given_back_unanswered_is_claimed_again_at_once_not_a_longer_block)
{
	int64_t until = 3000;

	ck_assert(fleet_rules_claim(&until, 3000, 5000));
	fleet_rules_unclaim(&until, 3500, 5000);
	ck_assert_int_eq(until, 3500);
	ck_assert(fleet_rules_claim(&until, 3500, 5000));  /* the next ask probes */
	/* A usage limit told after the claim is a reset, not the claim. */
	until = 3500 + 3600000;
	fleet_rules_unclaim(&until, 3600, 5000);
	ck_assert_int_eq(until, 3500 + 3600000);
	/* Nothing spent: nothing to give back. */
	until = 0;
	fleet_rules_unclaim(&until, 3600, 5000);
	ck_assert_int_eq(until, 0);
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

START_TEST(test_a_record_written_before_the_block_teller_fields_still_blocks)
{
	struct fleet_scope s;
	const char text[] = "block_until=9000 pace_tat=0 rpm_learned=0 tokens=-1 win_start=0 "
			    "req_cur=1 acc_cur=0 req_prev=0 acc_prev=0 fail_streak=1 "
			    "fail_member=7 shared=0 open=0 probe_until=0 probe_gap=0\n";
	struct fleet_params p;
	struct fleet_verdict v;

	ck_assert_int_eq(fleet_scope_parse(&s, text, sizeof(text) - 1), 0);
	ck_assert_int_eq(s.block_until, 9000);
	ck_assert_int_eq(s.block_seen, 0);
	ck_assert_int_eq(s.block_member, 0);
	fleet_params_default(&p);
	fleet_rules_acquire(&s, &p, 4000, false, 999, &v);
	ck_assert_int_eq(v.wait_ms, 5000);
	ck_assert_int_eq(v.reason, FLEET_SERVER_BLOCK);
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


#define NOW INT64_C(1764633600000)
#define YEAR_9999 INT64_C(253402300799000)

START_TEST(test_a_scope_read_with_a_block_of_the_year_9999_is_refused_to_no_block)
{
	struct fleet_params p;
	struct fleet_scope s;
	struct fleet_refusal why;
	char text[256];

	fleet_params_default(&p);
	snprintf(text, sizeof(text), "block_until=%lld open=1 shared=1\n", (long long)YEAR_9999);
	ck_assert_int_eq(fleet_scope_parse(&s, text, strlen(text)), 0);
	ck_assert_uint_eq(fleet_scope_check(&s, &p, NOW, &why), 1);
	ck_assert_str_eq(why.field, "block_until");
	ck_assert_int_eq(why.value, YEAR_9999);
	ck_assert_int_eq(s.block_until, 0);
	ck_assert_int_eq(s.open, 1);
	ck_assert_uint_eq(fleet_scope_check(&s, &p, NOW, NULL), 0);
}
END_TEST

START_TEST(test_a_block_within_max_shared_block_ms_and_the_skew_is_kept)
{
	struct fleet_params p;
	struct fleet_scope s;

	fleet_params_default(&p);
	fleet_scope_init(&s);
	s.block_until = NOW + p.max_block_ms + FLEET_SKEW_MS;
	ck_assert_uint_eq(fleet_scope_check(&s, &p, NOW, NULL), 0);
	ck_assert_int_eq(s.block_until, NOW + p.max_block_ms + FLEET_SKEW_MS);
	s.block_until++;
	ck_assert_uint_eq(fleet_scope_check(&s, &p, NOW, NULL), 1);
	ck_assert_int_eq(s.block_until, 0);
}
END_TEST

START_TEST(test_int64_extremes_and_negative_counts_are_each_refused_to_their_init)
{
	struct fleet_params p;
	struct fleet_scope s;
	struct fleet_verdict v;
	struct fleet_outcome o = { .kind = FLEET_OUT_SERVER, .block_ms = 5000, .member = 2 };

	fleet_params_default(&p);
	p.rpm = 60;
	fleet_scope_init(&s);
	s.block_until = INT64_MIN;
	s.pace_tat = INT64_MAX;
	s.rpm_learned = INT64_MAX;
	s.tokens = INT64_MIN;
	s.win_start = INT64_MIN;
	s.req_cur = -1;
	s.acc_prev = INT64_MAX;
	s.shared = 7;
	s.open = -1;
	s.probe_until = INT64_MAX;
	s.probe_gap = INT64_MAX;
	ck_assert_uint_eq(fleet_scope_check(&s, &p, NOW, NULL), 11);
	ck_assert_int_eq(s.tokens, -1);
	ck_assert_int_eq(s.pace_tat, 0);
	ck_assert_int_eq(s.acc_prev, 0);
	fleet_rules_acquire(&s, &p, NOW, true, 0, &v);
	ck_assert_int_le(v.wait_ms, fleet_rules_slot_bound(&p));
	fleet_rules_report(&s, &p, NOW, &o);
	ck_assert_int_eq(s.block_until, NOW + 5000);
}
END_TEST

START_TEST(test_the_rules_saturate_on_a_record_no_check_has_seen)
{
	struct fleet_params p;
	struct fleet_scope s;
	struct fleet_verdict v;
	struct fleet_outcome o = { .kind = FLEET_OUT_SERVER, .block_ms = 5000, .member = 2 };

	/* Under UBSan (make unit SANITIZE=1) each of these sums overflowed. */
	fleet_params_default(&p);
	p.rpm = 60;
	p.budget_max = 10000;
	fleet_scope_init(&s);
	s.win_start = INT64_MIN;
	s.pace_tat = INT64_MAX;
	s.block_until = INT64_MAX;
	s.tokens = INT64_MAX;
	s.probe_gap = INT64_MAX;
	s.open = s.shared = 1;
	fleet_rules_acquire(&s, &p, NOW, true, 500, &v);
	ck_assert_int_ge(v.wait_ms, 0);
	fleet_rules_report(&s, &p, NOW, &o);
	o.kind = FLEET_OUT_SUCCESS;
	fleet_rules_report(&s, &p, NOW, &o);
	fleet_rules_acquire(&s, &p, NOW, false, 999, &v);
	ck_assert_int_ge(v.wait_ms, 0);
}
END_TEST

START_TEST(test_credential_and_model_records_are_read_within_their_ranges)
{
	struct fleet_params p;
	struct fleet_model m = { -5, YEAR_9999 };
	struct fleet_refusal why;
	int64_t until = YEAR_9999, a, b;

	fleet_params_default(&p);
	ck_assert_uint_eq(fleet_until_check(&until, &p, NOW, &why), 1);
	ck_assert_str_eq(why.field, "until");
	ck_assert_int_eq(until, 0);
	until = NOW + 1000;
	ck_assert_uint_eq(fleet_until_check(&until, &p, NOW, NULL), 0);
	ck_assert_uint_eq(fleet_model_check(&m, NOW, FLEET_COOL_MAX_MS, &why), 2);
	ck_assert_str_eq(why.field, "streak");
	ck_assert_int_eq(m.streak, 0);
	ck_assert_int_eq(m.cool_until, 0);
	ck_assert_int_eq(fleet_pair_parse("12 34\n", 6, &a, &b), 0);
	ck_assert_int_eq(a, 12);
	ck_assert_int_eq(b, 34);
	ck_assert_int_eq(fleet_pair_parse("-9223372036854775808\n", 21, &a, &b), 0);
	ck_assert_int_eq(a, INT64_MIN);
	ck_assert_int_eq(fleet_pair_parse("9223372036854775808", 19, &a, &b), -1);
	ck_assert_int_eq(fleet_pair_parse("nan", 3, &a, &b), -1);
	ck_assert_int_eq(fleet_pair_parse("1e308", 5, &a, &b), -1);
	ck_assert_int_eq(a, 0);
}
END_TEST

START_TEST(test_a_record_number_that_does_not_fit_int64_is_a_broken_record)
{
	struct fleet_scope s;
	const char *huge = "block_until=99999999999999999999 open=1";

	ck_assert_int_eq(fleet_scope_parse(&s, huge, strlen(huge)), -1);
	ck_assert_int_eq(fleet_scope_parse(&s, "open=+1", 7), -1);
	ck_assert_int_eq(fleet_scope_parse(&s, "open=-", 6), -1);
}
END_TEST

START_TEST(test_an_unknown_reason_code_is_refused_not_taken_for_go)
{
	enum fleet_reason r = FLEET_PROBE;

	ck_assert_int_eq(fleet_reason_from_code(0, &r), 0);
	ck_assert_int_eq(r, FLEET_GO);
	ck_assert_int_eq(fleet_reason_from_code(5, &r), 0);
	ck_assert_int_eq(r, FLEET_PROBE);
	ck_assert_int_eq(fleet_reason_from_code(6, &r), -1);
	ck_assert_int_eq(fleet_reason_from_code(-1, &r), -1);
	ck_assert_int_eq(fleet_reason_from_code(INT64_MIN, &r), -1);
}
END_TEST

START_TEST(test_a_redis_answer_out_of_range_is_refused_whole_and_names_the_element)
{
	struct fleet_params p;
	struct fleet_reply rep;
	struct fleet_refusal why;
	int64_t v[10] = { 5000, 1, 0, 0, 0, 1, 3, NOW + 5000, 0, NOW };

	fleet_params_default(&p);
	ck_assert_int_eq(fleet_reply_check(v, 10, 1, 2, &p, NOW, 60000, &rep, &why), 0);
	ck_assert_int_eq(rep.wait_ms, 5000);
	ck_assert_int_eq(rep.reason, FLEET_SERVER_BLOCK);
	ck_assert_int_eq(rep.model, 1);
	ck_assert_int_eq(rep.members, 3);
	v[1] = 9;
	ck_assert_int_eq(fleet_reply_check(v, 10, 1, 2, &p, NOW, 60000, &rep, &why), -1);
	ck_assert_str_eq(why.field, "reason");
	v[1] = 1;
	v[7] = YEAR_9999;
	ck_assert_int_eq(fleet_reply_check(v, 10, 1, 2, &p, NOW, 60000, &rep, &why), -1);
	ck_assert_str_eq(why.field, "block_until");
	v[7] = 0;
	v[0] = 60001;
	ck_assert_int_eq(fleet_reply_check(v, 10, 1, 2, &p, NOW, 60000, &rep, &why), -1);
	ck_assert_str_eq(why.field, "wait_ms");
	v[0] = 0;
	v[5] = 2;  /* two models asked: 0 and 1 */
	ck_assert_int_eq(fleet_reply_check(v, 10, 1, 2, &p, NOW, 60000, &rep, &why), -1);
	ck_assert_str_eq(why.field, "model_index");
	v[5] = 0;
	v[3] = 0;  /* no credential asked: the script says -1 */
	ck_assert_int_eq(fleet_reply_check(v, 10, 0, 2, &p, NOW, 60000, &rep, &why), -1);
	ck_assert_str_eq(why.field, "cred_index");
	ck_assert_int_eq(fleet_reply_check(v, 9, 1, 2, &p, NOW, 60000, &rep, &why), -1);
	ck_assert_str_eq(why.field, "length");
}
END_TEST

START_TEST(test_saturating_sums_stop_at_the_int64_ends)
{
	int64_t v = 0;

	ck_assert_int_eq(number_sat_add(INT64_MAX, 1), INT64_MAX);
	ck_assert_int_eq(number_sat_add(INT64_MIN, -1), INT64_MIN);
	ck_assert_int_eq(number_sat_sub(NOW, INT64_MIN), INT64_MAX);
	ck_assert_int_eq(number_sat_sub(INT64_MIN, 1), INT64_MIN);
	ck_assert_int_eq(number_sat_mul(INT64_MAX, 2), INT64_MAX);
	ck_assert_int_eq(number_sat_mul(INT64_MIN, 2), INT64_MIN);
	ck_assert_int_eq(number_sat_mul(-3, INT64_MAX), INT64_MIN);
	ck_assert_int_eq(number_sat_add(2, 3), 5);
	ck_assert_int_eq(number_within(-4, 0, 9), 0);
	ck_assert_int_eq(number_parse_int64("9223372036854775807", 19, &v), 0);
	ck_assert_int_eq(v, INT64_MAX);
	ck_assert_int_eq(number_parse_int64("-9223372036854775809", 20, &v), -1);
	ck_assert_int_eq(number_parse_int64("", 0, &v), -1);
	ck_assert_int_eq(number_parse_int64("12x", 3, &v), -1);
}
END_TEST

Suite *fleet_rules_suite(void)
{
	Suite *s = suite_create("fleet_rules");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_every_vector_decides_as_written);
	tcase_add_test(tc, test_a_record_survives_its_text_form);
	tcase_add_test(tc, test_the_first_ask_after_a_reset_claims_the_probe_once);
	tcase_add_test(tc, test_a_probe_given_back_unanswered_is_claimed_again_at_once_not_a_longer_block);
	tcase_add_test(tc, test_a_broken_record_is_refused_and_unknown_fields_skipped);
	tcase_add_test(tc, test_a_record_that_does_not_fit_formats_to_nothing);
	tcase_add_test(tc, test_a_record_written_before_the_block_teller_fields_still_blocks);
	tcase_add_test(tc, test_an_older_tail_after_the_newline_is_not_read);
	tcase_add_test(tc, test_a_scope_read_with_a_block_of_the_year_9999_is_refused_to_no_block);
	tcase_add_test(tc, test_a_block_within_max_shared_block_ms_and_the_skew_is_kept);
	tcase_add_test(tc, test_int64_extremes_and_negative_counts_are_each_refused_to_their_init);
	tcase_add_test(tc, test_the_rules_saturate_on_a_record_no_check_has_seen);
	tcase_add_test(tc, test_credential_and_model_records_are_read_within_their_ranges);
	tcase_add_test(tc, test_a_record_number_that_does_not_fit_int64_is_a_broken_record);
	tcase_add_test(tc, test_an_unknown_reason_code_is_refused_not_taken_for_go);
	tcase_add_test(tc, test_a_redis_answer_out_of_range_is_refused_whole_and_names_the_element);
	tcase_add_test(tc, test_saturating_sums_stop_at_the_int64_ends);
	tcase_add_test(tc, test_a_train_gives_slots_one_gap_apart_up_to_its_bound_then_ends);
	tcase_add_test(tc, test_a_train_leaves_at_the_learned_rate_unless_one_is_set_never_ten_a_second);
	tcase_add_test(tc, test_a_trains_kept_gap_is_refused_outside_one_a_minute);
	tcase_add_test(tc, test_a_credential_record_with_newer_fields_is_read_for_the_ones_it_knows);
	tcase_add_test(tc, test_a_glanced_record_adds_its_later_block_but_never_moves_ours_earlier);
	suite_add_tcase(s, tc);
	return s;
}

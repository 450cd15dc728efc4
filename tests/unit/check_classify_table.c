/* The classifier's rule table (core/classify_rules.def) as data: every
 * wording compiles and is numbered in its list's sequence, the rule names
 * are the ones events carry, the typed values are found as the decision
 * looks them up. A bad row fails here by name, before any decision
 * would. */
#define PCRE2_CODE_UNIT_WIDTH 8

#include "core/classify_patterns.h"
#include "core/classify_table.h"

#include <check.h>
#include <pcre2.h>
#include <stdio.h>
#include <string.h>

Suite *classify_table_suite(void);

START_TEST(test_every_wording_compiles_in_sequence)
{
	size_t next[LIST_COUNT] = { 0 };

	ck_assert_uint_gt(classify_wording_count, 50);
	for (size_t r = 0; r < classify_wording_count; r++) {
		const struct classify_wording *w = &classify_wordings[r];
		char want[96];
		PCRE2_UCHAR msg[256] = "";
		PCRE2_SIZE off;
		pcre2_code *code;
		int errcode;

		ck_assert_int_lt(w->list, LIST_COUNT);
		ck_assert_msg(w->index == next[w->list], "%s: row %zu of %s (number it so)", w->rule,
			      next[w->list], classify_list_name(w->list));
		snprintf(want, sizeof(want), "text:%s[%u]", classify_list_name(w->list), w->index);
		ck_assert_str_eq(w->rule, want);
		next[w->list]++;
		code = pcre2_compile((PCRE2_SPTR)w->pattern, PCRE2_ZERO_TERMINATED,
				     PCRE2_CASELESS | PCRE2_UTF, &errcode, &off, NULL);
		if (code == NULL)
			pcre2_get_error_message(errcode, msg, sizeof(msg));
		ck_assert_msg(code != NULL, "%s does not compile: %s at offset %zu", w->rule,
			      (const char *)msg, (size_t)off);
		pcre2_code_free(code);
	}
	for (size_t l = 0; l < LIST_COUNT; l++)
		ck_assert_msg(next[l] > 0, "%s has no row", classify_list_name((enum classify_list_id)l));
}
END_TEST

START_TEST(test_wire_rule_names_are_kept)
{
	static const char *const rules[] = {
		"text:contextOverflowPatterns[0]", "text:usageLimitPatterns[4]",
		"text:quotaWordPatterns[0]", "text:nonRetryablePatterns[8]",
		"text:rateLimitPatterns[3]", "text:transientPatterns[5]",
		"text:gatewayPatterns[1]", "text:badRequestPatterns[0]",
	};

	for (size_t k = 0; k < sizeof(rules) / sizeof(rules[0]); k++) {
		bool found = false;

		for (size_t r = 0; r < classify_wording_count && !found; r++)
			found = strcmp(classify_wordings[r].rule, rules[k]) == 0;
		ck_assert_msg(found, "%s is gone", rules[k]);
	}
}
END_TEST

START_TEST(test_typed_values_are_found_without_regard_to_case)
{
	const struct classify_typed *t = classify_typed_find("Overloaded_Error", 16);

	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t->rule, "anthropic-type:overloaded_error");
	ck_assert_int_eq(t->cls, RULE_OVERLOAD);
	t = classify_typed_find("throttlingexception", 19);
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t->rule, "bedrock:ThrottlingException");
	ck_assert(t->flags & RULE_WINDOW);
	/* The length is honoured: a prefix is not the value. */
	ck_assert_ptr_null(classify_typed_find("rate_limit_errorX", 10));
	ck_assert_ptr_null(classify_typed_find("no_such_value", 13));
}
END_TEST

START_TEST(test_google_body_values_are_compared_exactly)
{
	const struct classify_typed *t = classify_google_reason("BILLING_DISABLED");

	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t->rule, "google-reason:BILLING_DISABLED");
	ck_assert_int_eq(t->cls, RULE_USAGE);
	ck_assert_ptr_null(classify_google_reason("billing_disabled"));
	t = classify_google_status("RESOURCE_EXHAUSTED");
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->cls, RULE_RETRY);
	ck_assert(t->flags & RULE_WINDOW);
	t = classify_google_status("UNAVAILABLE");
	ck_assert_ptr_nonnull(t);
	ck_assert(!(t->flags & RULE_WINDOW));
	ck_assert_int_eq(classify_google_status("OUT_OF_RANGE")->cls, RULE_NEVER);
	/* Text values are not body values: the body's lists are their own. */
	ck_assert_ptr_null(classify_google_status("SAFETY"));
	ck_assert_ptr_null(classify_google_reason("RESOURCE_EXHAUSTED"));
}
END_TEST

/* The rule names live in fixed arrays in the rows: each must end inside its
 * array (C accepts a string that fills an array exactly, without its NUL). */
START_TEST(test_every_rule_name_fits_its_row)
{
	for (size_t r = 0; r < classify_wording_count; r++)
		ck_assert_uint_lt(strnlen(classify_wordings[r].rule, CLASSIFY_WORDING_RULE_MAX),
				  CLASSIFY_WORDING_RULE_MAX);
	for (int step = 0; step < CLASSIFY_TYPED_STEPS; step++) {
		size_t n = 0;
		const struct classify_typed *rows =
			classify_typed_rows((enum classify_typed_step)step, &n);

		for (size_t i = 0; i < n; i++) {
			ck_assert_uint_lt(strnlen(rows[i].rule, CLASSIFY_TYPED_RULE_MAX),
					  CLASSIFY_TYPED_RULE_MAX);
			ck_assert_msg(rows[i].value_at > 0 && rows[i].rule[rows[i].value_at - 1] == ':',
				      "%s: the value does not follow the family", rows[i].rule);
		}
	}
}
END_TEST

/* A decision keeps each wording's answer in a memo of CLASSIFY_MEMO_MAX
 * bytes; a table grown past it would be matched again at every ask, a cost
 * nothing else would show. */
START_TEST(test_every_wording_has_a_place_in_a_decision_s_memo)
{
	ck_assert_uint_le(classify_wording_count, CLASSIFY_MEMO_MAX);
}
END_TEST

/* The first row of a value wins, so a second row of the same value in the
 * same step is dead: its verdict, flags and rule never reach a decision. */
START_TEST(test_no_typed_value_is_defined_twice_in_one_step)
{
	for (int step = 0; step < CLASSIFY_TYPED_STEPS; step++) {
		size_t n = 0;
		const struct classify_typed *rows =
			classify_typed_rows((enum classify_typed_step)step, &n);

		ck_assert_uint_gt(n, 0);
		for (size_t i = 0; i < n; i++)
			for (size_t j = i + 1; j < n; j++) {
				const char *a = classify_typed_value(&rows[i]);
				const char *b = classify_typed_value(&rows[j]);
				bool same = step == CLASSIFY_TYPED_TEXT
						    ? classify_ascii_ieq(a, strlen(a), b)
						    : strcmp(a, b) == 0;

				ck_assert_msg(!same, "%s is defined again as %s (a dead row)",
					      rows[i].rule, rows[j].rule);
			}
	}
}
END_TEST

Suite *classify_table_suite(void)
{
	Suite *s = suite_create("classify_table");
	TCase *tc = tcase_create("classify_table");

	tcase_add_test(tc, test_every_wording_compiles_in_sequence);
	tcase_add_test(tc, test_wire_rule_names_are_kept);
	tcase_add_test(tc, test_typed_values_are_found_without_regard_to_case);
	tcase_add_test(tc, test_google_body_values_are_compared_exactly);
	tcase_add_test(tc, test_no_typed_value_is_defined_twice_in_one_step);
	tcase_add_test(tc, test_every_rule_name_fits_its_row);
	tcase_add_test(tc, test_every_wording_has_a_place_in_a_decision_s_memo);
	suite_add_tcase(s, tc);
	return s;
}

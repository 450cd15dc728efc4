/* pi's thinking levels against what a model allows (src/core/thinking.c):
 * the clamp set_thinking_level applies and cycle_thinking_level's order. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/thinking.h"

Suite *thinking_suite(void);

static json_t *model(const char *text)
{
	json_t *m = json_loads(text, 0, NULL);

	ck_assert_ptr_nonnull(m);
	return m;
}

START_TEST(test_a_model_without_reasoning_allows_only_off_and_does_not_cycle)
{
	json_t *plain = model("{\"id\":\"m\"}");
	json_t *no = model("{\"id\":\"m\",\"reasoning\":false}");

	ck_assert_str_eq(thinking_clamp(plain, "high"), "off");
	ck_assert_str_eq(thinking_clamp(NULL, "medium"), "off");
	ck_assert_str_eq(thinking_clamp(no, "off"), "off");
	ck_assert_ptr_null(thinking_next(plain, "off"));
	ck_assert_ptr_null(thinking_next(NULL, "off"));
	ck_assert(thinking_allowed(plain, "off"));
	ck_assert(!thinking_allowed(plain, "low"));
	json_decref(plain);
	json_decref(no);
}
END_TEST

START_TEST(test_a_reasoning_model_cycles_off_to_high_and_skips_xhigh_unless_mapped)
{
	json_t *m = model("{\"id\":\"m\",\"reasoning\":true}");
	json_t *x = model("{\"id\":\"m\",\"reasoning\":true,\"thinkingLevelMap\":{\"xhigh\":\"max\"}}");
	const char *order[] = { "off", "minimal", "low", "medium", "high", "off" };
	const char *level = "off";

	for (size_t i = 1; i < sizeof(order) / sizeof(order[0]); i++) {
		level = thinking_next(m, level);
		ck_assert_str_eq(level, order[i]);
	}
	ck_assert_str_eq(thinking_next(x, "high"), "xhigh");
	ck_assert_str_eq(thinking_next(x, "xhigh"), "off");
	/* xhigh on a model that does not name it: the nearest below. */
	ck_assert_str_eq(thinking_clamp(m, "xhigh"), "high");
	ck_assert_str_eq(thinking_clamp(x, "xhigh"), "xhigh");
	ck_assert_str_eq(thinking_clamp(m, "medium"), "medium");
	ck_assert_str_eq(thinking_clamp(m, "bogus"), "off");
	json_decref(m);
	json_decref(x);
}
END_TEST

START_TEST(test_levels_mapped_to_null_are_skipped_upward_first)
{
	json_t *m = model("{\"id\":\"m\",\"reasoning\":true,"
			  "\"thinkingLevelMap\":{\"minimal\":null,\"low\":null,\"high\":null}}");

	/* pi looks up first, then down. */
	ck_assert_str_eq(thinking_clamp(m, "minimal"), "medium");
	ck_assert_str_eq(thinking_clamp(m, "high"), "medium");
	ck_assert_str_eq(thinking_next(m, "off"), "medium");
	ck_assert_str_eq(thinking_next(m, "medium"), "off");
	ck_assert_str_eq(thinking_level_name("low"), "low");
	ck_assert_ptr_null(thinking_level_name("LOW"));
	json_decref(m);
}
END_TEST

Suite *thinking_suite(void)
{
	Suite *s = suite_create("thinking");
	TCase *tc = tcase_create("thinking");

	tcase_add_test(tc, test_a_model_without_reasoning_allows_only_off_and_does_not_cycle);
	tcase_add_test(tc, test_a_reasoning_model_cycles_off_to_high_and_skips_xhigh_unless_mapped);
	tcase_add_test(tc, test_levels_mapped_to_null_are_skipped_upward_first);
	suite_add_tcase(s, tc);
	return s;
}

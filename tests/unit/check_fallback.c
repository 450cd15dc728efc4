/* Credential and model fallback (src/core/fallback.c), with times passed
 * in: what a failure readies, what a retry switches, when the primary model
 * comes back, and the model objects clients see. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/fallback.h"

Suite *fallback_suite(void);

/* A chain's policy: fallbackModels and the cooldowns as JSON text, and
 * fallbackAfterConsecutive. */
static struct policy policy_of(const char *json, int after)
{
	struct policy p;

	memset(&p, 0, sizeof(p));
	p.json = json_loads(json, 0, NULL);
	ck_assert_ptr_nonnull(p.json);
	p.retry.fallback_after_consecutive = after;
	return p;
}

static void fb_init(struct fallback *fb, const char *credentials, const char *model)
{
	json_t *c = credentials ? json_loads(credentials, 0, NULL) : NULL;

	ck_assert_int_eq(fallback_init(fb, c, model), 0);
	json_decref(c);
}

static void expect_event(json_t *ev, const char *want)
{
	char *got = json_dumps(ev, JSON_COMPACT);

	ck_assert_str_eq(got, want);
	free(got);
	json_decref(ev);
}

START_TEST(test_usage_limit_readies_the_next_credential_and_rests_this_one)
{
	struct fallback fb;
	struct policy p = policy_of("{\"usageLimitCooldownMs\":1000}", 3);
	struct fallback_plan plan;
	json_t *ev = NULL;

	fb_init(&fb, "[\"a\",\"b\"]", "m");
	ck_assert_str_eq(fallback_credential(&fb), "a");
	fallback_plan(&fb, &p, true, false, -1, 100, &plan);
	ck_assert_int_eq(plan.kind, RETRY_SWITCH_CREDENTIAL);
	ck_assert_int_eq(plan.credential, 1);
	ck_assert_int_eq(fb.auth.exhausted_until[0], 1100);
	/* Nothing switched until the retry happens. */
	ck_assert_str_eq(fallback_credential(&fb), "a");
	ck_assert(fallback_apply(&fb, &plan, &ev));
	expect_event(ev, "{\"type\":\"retry_fallback_applied\",\"kind\":\"credential\","
		     "\"from\":\"a\",\"to\":\"b\",\"reason\":\"usage-limit\"}");
	ck_assert_str_eq(fallback_credential(&fb), "b");
	/* b is limited too, with a server hint; a rests until 1100. */
	fallback_plan(&fb, &p, true, false, 5000, 200, &plan);
	ck_assert_int_eq(plan.kind, RETRY_SWITCH_NONE);
	ck_assert_int_eq(fb.auth.exhausted_until[1], 5200);
	ck_assert(!fallback_apply(&fb, &plan, &ev));
	json_decref(p.json);
	fallback_release(&fb);
}
END_TEST

START_TEST(test_overloads_in_a_row_fall_back_to_the_next_model_then_revert)
{
	struct fallback fb;
	struct policy p = policy_of("{\"fallbackModels\":[\"m\",\"b\"],\"fallbackCooldownMs\":500}", 2);
	struct fallback_plan plan;
	json_t *ev = NULL;

	fb_init(&fb, NULL, "m");
	ck_assert_ptr_null(fallback_credential(&fb));
	fallback_plan(&fb, &p, false, true, -1, 0, &plan);
	ck_assert_int_eq(plan.kind, RETRY_SWITCH_NONE);
	/* Another kind of error breaks the row. */
	fallback_plan(&fb, &p, false, false, -1, 0, &plan);
	fallback_plan(&fb, &p, false, true, -1, 0, &plan);
	ck_assert_int_eq(plan.kind, RETRY_SWITCH_NONE);
	fallback_plan(&fb, &p, false, true, -1, 10, &plan);
	ck_assert_int_eq(plan.kind, RETRY_SWITCH_MODEL);
	ck_assert_str_eq(plan.model, "b");
	ck_assert_str_eq(plan.reason, "overloaded");
	ck_assert(fallback_apply(&fb, &plan, &ev));
	expect_event(ev, "{\"type\":\"retry_fallback_applied\",\"kind\":\"model\",\"from\":\"m\","
		     "\"to\":\"b\",\"reason\":\"overloaded\"}");
	ck_assert_str_eq(fb.model, "b");
	ck_assert_int_eq(fb.overloads, 0);
	/* The primary rests until 510. */
	ck_assert(!fallback_revert_if_rested(&fb, 509, &ev));
	ck_assert(fallback_revert_if_rested(&fb, 510, &ev));
	expect_event(ev, "{\"type\":\"retry_fallback_applied\",\"kind\":\"model\",\"from\":\"b\","
		     "\"to\":\"m\",\"reason\":\"cooldown-expired\"}");
	ck_assert_str_eq(fb.model, "m");
	ck_assert(!fallback_revert_if_rested(&fb, 600, &ev));
	json_decref(p.json);
	fallback_release(&fb);
}
END_TEST

START_TEST(test_usage_limit_without_a_spare_credential_falls_back_to_a_model)
{
	struct fallback fb;
	struct policy p = policy_of("{\"fallbackModels\":[\"b\"]}", 3);
	struct fallback_plan plan;

	fb_init(&fb, "[\"only\"]", "m");
	fallback_plan(&fb, &p, true, false, 3000, 100, &plan);
	ck_assert_int_eq(plan.kind, RETRY_SWITCH_MODEL);
	ck_assert_str_eq(plan.model, "b");
	ck_assert_str_eq(plan.reason, "usage-limit");
	/* The model rests as long as the server asked. */
	ck_assert_int_eq(json_integer_value(json_object_get(fb.cooldown, "m")), 3100);
	json_decref(p.json);
	fallback_release(&fb);
}
END_TEST

START_TEST(test_no_fallback_list_means_no_model_switch)
{
	struct fallback fb;
	struct policy p = policy_of("{}", 1);
	struct fallback_plan plan;

	fb_init(&fb, NULL, "m");
	fallback_plan(&fb, &p, false, true, -1, 0, &plan);
	ck_assert_int_eq(plan.kind, RETRY_SWITCH_NONE);
	ck_assert_int_eq(fb.overloads, 1);
	fallback_succeeded(&fb);
	ck_assert_int_eq(fb.overloads, 0);
	json_decref(p.json);
	fallback_release(&fb);
}
END_TEST

/* models: borrowed. */
static struct provider test_provider(json_t *models)
{
	struct provider p = { .name = "sim", .api = "sim-api", .base_url = "", .models = models };

	return p;
}

START_TEST(test_select_checks_provider_and_model_and_starts_fallbacks_over)
{
	struct fallback fb;
	json_t *models = json_loads("[{\"id\":\"m\"},{\"id\":\"n\",\"contextWindow\":1000}]", 0, NULL);
	struct provider prov = test_provider(models);
	char err[256];

	fb_init(&fb, NULL, "m");
	json_object_set_new(fb.cooldown, "m", json_integer(99));
	fb.overloads = 2;
	ck_assert_int_eq(fallback_select(&fb, &prov, "openai", "m", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "Model not found: openai/m (provider is \"sim\")");
	ck_assert_int_eq(fallback_select(&fb, &prov, "sim", "zzz", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "Model not found: sim/zzz");
	ck_assert_int_eq(fallback_select(&fb, &prov, "sim", "n", err, sizeof(err)), 0);
	ck_assert_str_eq(fb.model, "n");
	ck_assert_str_eq(fb.primary, "n");
	ck_assert_int_eq(fb.overloads, 0);
	ck_assert_uint_eq(json_object_size(fb.cooldown), 0);
	/* The model in use may be picked even when the list does not name it. */
	ck_assert_int_eq(fallback_set_primary(&fb, "custom"), 0);
	ck_assert_int_eq(fallback_select(&fb, &prov, "sim", "custom", err, sizeof(err)), 0);
	fallback_release(&fb);
	json_decref(models);
}
END_TEST

START_TEST(test_model_objects_describe_the_list_and_the_model_in_use)
{
	struct fallback fb;
	json_t *models = json_loads("[{\"id\":\"m\"},{\"id\":\"n\",\"contextWindow\":1000,\"maxTokens\":10}]",
				    0, NULL);
	struct provider prov = test_provider(models);
	json_t *one, *again, *list;

	fb_init(&fb, NULL, "n");
	one = fallback_model_json(&fb, &prov);
	ck_assert_str_eq(json_string_value(json_object_get(one, "id")), "n");
	ck_assert_str_eq(json_string_value(json_object_get(one, "api")), "sim-api");
	ck_assert_int_eq(json_integer_value(json_object_get(one, "contextWindow")), 1000);
	ck_assert_int_eq(json_integer_value(json_object_get(one, "maxTokens")), 10);
	/* Built once per model. */
	again = fallback_model_json(&fb, &prov);
	ck_assert_ptr_eq(one, again);
	json_decref(again);
	json_decref(one);
	one = fallback_models(&fb, &prov);
	ck_assert_uint_eq(json_array_size(json_object_get(one, "models")), 2);
	json_decref(one);
	/* A model the list does not name leads it. */
	ck_assert_int_eq(fallback_set_primary(&fb, "custom"), 0);
	one = fallback_models(&fb, &prov);
	list = json_object_get(one, "models");
	ck_assert_uint_eq(json_array_size(list), 3);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "id")), "custom");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(list, 0), "contextWindow")),
			 128000);
	json_decref(one);
	fallback_release(&fb);
	json_decref(models);
}
END_TEST

Suite *fallback_suite(void)
{
	Suite *s = suite_create("fallback");
	TCase *tc = tcase_create("fallback");

	tcase_add_test(tc, test_usage_limit_readies_the_next_credential_and_rests_this_one);
	tcase_add_test(tc, test_overloads_in_a_row_fall_back_to_the_next_model_then_revert);
	tcase_add_test(tc, test_usage_limit_without_a_spare_credential_falls_back_to_a_model);
	tcase_add_test(tc, test_no_fallback_list_means_no_model_switch);
	tcase_add_test(tc, test_select_checks_provider_and_model_and_starts_fallbacks_over);
	tcase_add_test(tc, test_model_objects_describe_the_list_and_the_model_in_use);
	suite_add_tcase(s, tc);
	return s;
}

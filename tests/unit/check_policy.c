/* The retry policy a prompt runs on (src/core/policy.c): resolving and
 * checking it, adopting a snapshot for a chain, judging an error under it,
 * and applying set_retry_policy / set_auto_retry to the settings. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "core/builtins.h"
#include "core/policy.h"

Suite *policy_suite(void);

static char dir[64], path[128];
static struct settings settings;
static struct classify *daemon_classify;

static void setup(void)
{
	char err[256];

	strcpy(dir, "/tmp/retryd-policy-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/settings.json", dir);
	{
		json_t *builtins = builtins_settings();

		ck_assert_int_eq(settings_load(&settings, builtins, path, err, sizeof(err)), 0);
		json_decref(builtins);
	}
	daemon_classify = classify_new(settings_get(&settings, "retry"), err, sizeof(err));
	ck_assert_ptr_nonnull(daemon_classify);
}

static void teardown(void)
{
	classify_free(daemon_classify);
	settings_release(&settings);
	unlink(path);
	rmdir(dir);
}

static json_t *for_prompt(const char *override, char *err, size_t errlen)
{
	json_t *o = override ? json_loads(override, 0, NULL) : NULL;
	json_t *p = policy_for_prompt(&settings, o, err, errlen);

	json_decref(o);
	return p;
}

START_TEST(test_prompt_policy_is_checked_and_names_the_key)
{
	char err[256];
	json_t *p;

	ck_assert_ptr_null(for_prompt("{\"foo\":1}", err, sizeof(err)));
	ck_assert_str_eq(err, "retry.foo is not a retry setting");
	ck_assert_ptr_null(for_prompt("[]", err, sizeof(err)));
	ck_assert_str_eq(err, "retry must be an object of retry settings");
	ck_assert_ptr_null(for_prompt("{\"budget\":{\"maxTokens\":5,\"tokenRatio\":1}}", err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "retry.budget is shared by every prompt"));
	/* A schedule without maxRetries sets it to its length. */
	p = for_prompt("{\"schedule\":[10,20]}", err, sizeof(err));
	ck_assert_msg(p != NULL, "%s", err);
	ck_assert_int_eq(json_integer_value(json_object_get(p, "maxRetries")), 2);
	json_decref(p);
}
END_TEST

START_TEST(test_adopted_snapshot_holds_until_set_auto_retry_changes_it)
{
	char err[256];
	json_t *resolved = for_prompt("{\"maxRetries\":7,\"continuationPrompt\":\"go\"}", err,
				      sizeof(err));
	struct policy p;
	struct retry_policy now;

	memset(&p, 0, sizeof(p));
	ck_assert_ptr_nonnull(resolved);
	policy_adopt(&p, resolved, 3, &settings, daemon_classify);
	json_decref(resolved);
	ck_assert_int_eq(p.retry.max_retries, 7);
	ck_assert_int_eq(policy_int(&p, "maxRetries"), 7);
	/* Absent from the snapshot: the settings table's default. */
	ck_assert_int_eq(policy_int(&p, "fallbackCooldownMs"),
			 settings_default_int("retry.fallbackCooldownMs"));
	ck_assert_str_eq(policy_string(&p, "continuationPrompt"), "go");
	/* The patterns are the daemon's: its classifier is shared. */
	ck_assert_ptr_eq(policy_classifier(&p, NULL), daemon_classify);
	ck_assert_int_eq(settings_override(&settings, "retry.enabled=false", err, sizeof(err)), 0);
	now = policy_current(&p, 3, &settings);
	ck_assert(now.enabled);
	now = policy_current(&p, 4, &settings);
	ck_assert(!now.enabled);
	ck_assert_int_eq(now.max_retries, 7);
	policy_release(&p);
}
END_TEST

/* A failed attempt as a provider reports it. */
static struct provider_result failed(const char *error, const char *no_resume, int64_t hint_ms)
{
	struct provider_result r = { .stop = STOP_ERROR, .error_message = error,
				     .next = no_resume ? PROVIDER_NEXT_CANNOT : PROVIDER_NEXT_CONTINUE,
				     .next_why = no_resume, .hint_ms = hint_ms };

	return r;
}

START_TEST(test_judge_classifies_once_and_says_why_a_retry_cannot_resume)
{
	struct policy p;
	struct policy_verdict v;
	struct provider_result ok = { .stop = STOP_STOP, .hint_ms = -1 }, r;

	memset(&p, 0, sizeof(p));
	policy_judge(&p, daemon_classify, &ok, true, 0, &v);
	ck_assert(!v.retryable);
	ck_assert(!v.failed);
	ck_assert_ptr_null(v.error);
	policy_verdict_release(&v);

	r = failed("401 Unauthorized", "gone", -1);
	policy_judge(&p, daemon_classify, &r, true, 0, &v);
	ck_assert(!v.retryable);
	ck_assert_int_eq(v.verdict, CLASSIFY_NOT_RETRYABLE);
	ck_assert_str_eq(v.rule, "http-status:401");
	ck_assert_str_eq(v.error, "401 Unauthorized");
	policy_verdict_release(&v);

	r = failed("529 overloaded, try again in 5 seconds", NULL, -1);
	policy_judge(&p, daemon_classify, &r, true, 0, &v);
	ck_assert(v.retryable);
	ck_assert(v.overload);
	ck_assert(!v.usage_limit);
	ck_assert_int_eq(v.hint_ms, 5000);
	policy_verdict_release(&v);

	/* A spent quota is worth a switch; the provider's own hint wins over the text. */
	r = failed("usage limit reached, try again in 5 seconds", NULL, 42);
	policy_judge(&p, daemon_classify, &r, true, 0, &v);
	ck_assert(v.usage_limit);
	ck_assert(v.retryable);
	ck_assert_int_eq(v.verdict, CLASSIFY_USAGE_LIMIT);
	ck_assert_int_eq(v.hint_ms, 42);
	policy_verdict_release(&v);

	r = failed("503 Service Unavailable", "no session id", -1);
	policy_judge(&p, daemon_classify, &r, true, 0, &v);
	ck_assert(!v.retryable);
	ck_assert_str_eq(v.error, "503 Service Unavailable (not retried: no session id)");
	policy_verdict_release(&v);
	ck_assert_ptr_null(v.owned);

	/* With retrying off the error keeps its text (it is final anyway). */
	policy_judge(&p, daemon_classify, &r, false, 0, &v);
	ck_assert(v.retryable);
	ck_assert_str_eq(v.error, "503 Service Unavailable");
	ck_assert(!v.overload);
	policy_verdict_release(&v);
}
END_TEST

START_TEST(test_judge_reads_the_typed_failure_before_the_text)
{
	struct policy p;
	struct policy_verdict v;
	json_t *headers = json_pack("{s:s}", "retry-after", "7");
	struct provider_result r = failed("request failed", NULL, -1);
	static const char body[] = "{\"error\":{\"code\":\"context_length_exceeded\","
				   "\"message\":\"bad\"}}";

	memset(&p, 0, sizeof(p));
	r.http_status = 429;
	r.headers = headers;
	policy_judge(&p, daemon_classify, &r, true, 0, &v);
	ck_assert_int_eq(v.verdict, CLASSIFY_RETRYABLE);
	ck_assert_str_eq(v.rule, "http-status:429");
	ck_assert_int_eq(v.hint_ms, 7000);
	policy_verdict_release(&v);

	r.http_status = 400;
	r.headers = NULL;
	r.error_body = body;
	r.error_body_len = sizeof(body) - 1;
	policy_judge(&p, daemon_classify, &r, true, 0, &v);
	ck_assert_int_eq(v.verdict, CLASSIFY_CONTEXT_OVERFLOW);
	ck_assert_str_eq(v.rule, "openai-code:context_length_exceeded");
	policy_verdict_release(&v);
	json_decref(headers);
}
END_TEST

START_TEST(test_verdict_stop_makes_it_final_and_says_why)
{
	struct policy p;
	struct policy_verdict v;
	struct provider_result r = failed("Your credit balance is too low", NULL, -1);

	memset(&p, 0, sizeof(p));
	policy_judge(&p, daemon_classify, &r, true, 0, &v);
	ck_assert(v.usage_limit);
	policy_verdict_stop(&v, "usage limit: resets in 4h12m");
	ck_assert(!v.retryable);
	ck_assert_str_eq(v.error, "Your credit balance is too low (usage limit: resets in 4h12m)");
	policy_verdict_release(&v);
}
END_TEST

START_TEST(test_apply_checks_everything_before_changing_anything)
{
	char err[256];
	json_t *bad = json_loads("{\"maxRetries\":9,\"retryablePatterns\":[\"(x\"]}", 0, NULL);
	json_t *good = json_loads("{\"maxRetries\":9,\"retryablePatterns\":[\"boom\"]}", 0, NULL);
	json_t *data = NULL, *not_object = json_string("x");
	struct classify *c;

	ck_assert_ptr_null(policy_apply(&settings, not_object, false, &data, err, sizeof(err)));
	json_decref(not_object);
	ck_assert_str_eq(err, "set_retry_policy: field \"policy\" must be an object of retry settings");
	ck_assert_ptr_null(policy_apply(&settings, bad, false, &data, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "retry.retryablePatterns[0]"));
	ck_assert_ptr_null(data);
	ck_assert_int_eq(settings_int(&settings, "retry.maxRetries", -1), 3);
	c = policy_apply(&settings, good, false, &data, err, sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert_int_eq(settings_int(&settings, "retry.maxRetries", -1), 9);
	ck_assert(classify_error(c, "boom", 4) == CLASSIFY_RETRYABLE);
	ck_assert(json_is_false(json_object_get(data, "persisted")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(data, "policy"),
							    "maxRetries")), 9);
	/* Not persisted: the file was never written. */
	ck_assert_int_ne(access(path, F_OK), 0);
	classify_free(c);
	json_decref(data);
	json_decref(bad);
	json_decref(good);
}
END_TEST

START_TEST(test_set_enabled_saves_or_says_why_not)
{
	char err[512];
	struct settings unwritable;
	enum log_level level = log_level;
	json_t *data;

	ck_assert_ptr_null(policy_set_enabled(&settings, false, true, err, sizeof(err)));
	ck_assert(!settings_bool(&settings, "retry.enabled", true));
	ck_assert_int_eq(access(path, F_OK), 0);

	ck_assert_int_eq(settings_init(&unwritable, "/proc/retryd-no/settings.json", err,
				       sizeof(err)), 0);
	log_level = LOG_LEVEL_NONE; /* the expected warning */
	data = policy_set_enabled(&unwritable, false, true, err, sizeof(err));
	log_level = level;
	ck_assert_ptr_nonnull(data);
	ck_assert(json_is_false(json_object_get(data, "persisted")));
	ck_assert_str_eq(json_string_value(json_object_get(data, "warning")), err);
	/* Applied all the same. */
	ck_assert(!settings_bool(&unwritable, "retry.enabled", true));
	json_decref(data);
	settings_release(&unwritable);
}
END_TEST

START_TEST(test_set_enabled_without_persist_leaves_the_file_alone)
{
	char err[512];
	json_t *data = policy_set_enabled(&settings, false, false, err, sizeof(err));

	ck_assert_ptr_nonnull(data);
	ck_assert(json_is_false(json_object_get(data, "persisted")));
	ck_assert_ptr_null(json_object_get(data, "warning"));
	ck_assert(!settings_bool(&settings, "retry.enabled", true));
	ck_assert_int_eq(settings_origin(&settings, "retry.enabled"), SETTINGS_ORIGIN_OVERRIDE);
	ck_assert_int_ne(access(path, F_OK), 0);
	json_decref(data);
	/* A persisting one afterwards replaces it, in the file. */
	ck_assert_ptr_null(policy_set_enabled(&settings, true, true, err, sizeof(err)));
	ck_assert(settings_bool(&settings, "retry.enabled", false));
	ck_assert_int_eq(settings_origin(&settings, "retry.enabled"), SETTINGS_ORIGIN_FILE);
}
END_TEST

Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("policy");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_prompt_policy_is_checked_and_names_the_key);
	tcase_add_test(tc, test_set_enabled_without_persist_leaves_the_file_alone);
	tcase_add_test(tc, test_adopted_snapshot_holds_until_set_auto_retry_changes_it);
	tcase_add_test(tc, test_judge_classifies_once_and_says_why_a_retry_cannot_resume);
	tcase_add_test(tc, test_judge_reads_the_typed_failure_before_the_text);
	tcase_add_test(tc, test_verdict_stop_makes_it_final_and_says_why);
	tcase_add_test(tc, test_apply_checks_everything_before_changing_anything);
	tcase_add_test(tc, test_set_enabled_saves_or_says_why_not);
	suite_add_tcase(s, tc);
	return s;
}

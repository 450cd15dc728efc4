#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "provider/http/base_url.h"

Suite *base_url_suite(void);

static const char *const vars[] = { "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
				    "GOOGLE_GEMINI_BASE_URL", "OLLAMA_HOST",
				    "AZURE_OPENAI_ENDPOINT" };

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

/* The baseUrl `var`=`value` gives the built-in `name`; "" when none. */
static void assert_made(const char *name, const char *var, const char *value, const char *want)
{
	json_t *providers = json_pack("{s:{s:s}}", name, "baseUrl", "https://default.example/v1");
	const char *got;

	clear_env();
	setenv(var, value, 1);
	ck_assert_int_eq(base_url_apply_env(providers), 0);
	got = json_string_value(json_object_get(json_object_get(providers, name), "baseUrl"));
	ck_assert_str_eq(got, want);
	ck_assert_str_eq(base_url_env_of(name, got), var);
	json_decref(providers);
	clear_env();
}

START_TEST(test_each_sdk_variable_makes_the_form_its_sdk_means)
{
	assert_made("openai", "OPENAI_BASE_URL", "http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1");
	assert_made("anthropic", "ANTHROPIC_BASE_URL", "https://gw.example", "https://gw.example");
	assert_made("google", "GOOGLE_GEMINI_BASE_URL", "https://gw.example/", "https://gw.example/v1beta");
	assert_made("google", "GOOGLE_GEMINI_BASE_URL", "https://gw.example/v1", "https://gw.example/v1");
	/* A host that starts like a version is no version segment. */
	assert_made("google", "GOOGLE_GEMINI_BASE_URL", "https://v1.example", "https://v1.example/v1beta");
	assert_made("ollama", "OLLAMA_HOST", "gpu-box", "http://gpu-box:11434/v1");
	assert_made("ollama", "OLLAMA_HOST", "0.0.0.0:9999", "http://0.0.0.0:9999/v1");
	assert_made("ollama", "OLLAMA_HOST", "[::1]", "http://[::1]:11434/v1");
	assert_made("ollama", "OLLAMA_HOST", "https://ollama.example", "https://ollama.example/v1");
	assert_made("azure", "AZURE_OPENAI_ENDPOINT", "https://r.openai.azure.com/",
		    "https://r.openai.azure.com");
}
END_TEST

START_TEST(test_an_unset_or_empty_variable_leaves_the_default_and_names_no_origin)
{
	json_t *providers = json_pack("{s:{s:s}}", "openai", "baseUrl", "https://api.openai.com/v1");

	clear_env();
	setenv("OPENAI_BASE_URL", "", 1);
	ck_assert_int_eq(base_url_apply_env(providers), 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(providers, "openai"),
							   "baseUrl")), "https://api.openai.com/v1");
	ck_assert_ptr_null(base_url_env_of("openai", "https://api.openai.com/v1"));
	/* Set, but a settings file's other URL is not the variable's. */
	setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1", 1);
	ck_assert_ptr_null(base_url_env_of("openai", "https://api.openai.com/v1"));
	/* A variable counts for its own provider only. */
	ck_assert_ptr_null(base_url_env_of("openrouter", "http://127.0.0.1:1/v1"));
	json_decref(providers);
	clear_env();
}
END_TEST

START_TEST(test_a_malformed_value_is_kept_recognisable_not_repaired)
{
	json_t *providers = json_pack("{s:{s:s}}", "openai", "baseUrl", "https://api.openai.com/v1");
	const char *got;

	clear_env();
	setenv("OPENAI_BASE_URL", "api.openai.com/v1", 1);
	ck_assert_int_eq(base_url_apply_env(providers), 0);
	got = json_string_value(json_object_get(json_object_get(providers, "openai"), "baseUrl"));
	ck_assert(!base_url_valid(got));
	ck_assert_str_eq(base_url_env_of("openai", got), "OPENAI_BASE_URL");
	json_decref(providers);
	clear_env();
}
END_TEST

START_TEST(test_valid_urls_are_http_or_https_with_a_host_and_no_blank)
{
	ck_assert(base_url_valid("http://127.0.0.1:8080/v1"));
	ck_assert(base_url_valid("https://user:pw@gw.example/v1"));
	ck_assert(!base_url_valid("https://"));
	ck_assert(!base_url_valid("https:///v1"));
	ck_assert(!base_url_valid("https://@gw.example"));
	ck_assert(!base_url_valid("ftp://gw.example"));
	ck_assert(!base_url_valid("https://gw.example/v 1"));
	ck_assert(!base_url_valid("https://gw.example/v1\n"));
	ck_assert(!base_url_valid("gw.example"));
}
END_TEST

Suite *base_url_suite(void)
{
	Suite *s = suite_create("base_url");
	TCase *tc = tcase_create("base_url");

	tcase_add_test(tc, test_each_sdk_variable_makes_the_form_its_sdk_means);
	tcase_add_test(tc, test_an_unset_or_empty_variable_leaves_the_default_and_names_no_origin);
	tcase_add_test(tc, test_a_malformed_value_is_kept_recognisable_not_repaired);
	tcase_add_test(tc, test_valid_urls_are_http_or_https_with_a_host_and_no_blank);
	suite_add_tcase(s, tc);
	return s;
}

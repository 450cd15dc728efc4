#include "core/classify.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

Suite *classify_suite(void);

static struct classify *cls;

static void setup(void)
{
	char err[256] = "";

	cls = classify_new(NULL, err, sizeof(err));
	ck_assert_msg(cls != NULL, "%s", err);
}

static void teardown(void)
{
	classify_free(cls);
	cls = NULL;
}

static enum classify_verdict verdict_of(const struct classify *c, const char *message)
{
	return classify_error(c, message, strlen(message));
}

static enum classify_verdict verdict(const char *message)
{
	return verdict_of(cls, message);
}

static bool is_usage(const struct classify *c, const char *message)
{
	return classify_is_usage_limit(c, message, strlen(message));
}

/* A classifier from a JSON text, which must compile. */
static struct classify *classify_from(const char *json)
{
	json_error_t jerr;
	json_t *retry = json_loads(json, 0, &jerr);
	struct classify *c;
	char err[256] = "";

	ck_assert_msg(retry != NULL, "%s", jerr.text);
	c = classify_new(retry, err, sizeof(err));
	json_decref(retry);
	ck_assert_msg(c != NULL, "%s", err);
	return c;
}

/* The error classify_new gives for a JSON text, which must not compile. */
static void expect_new_error(const char *json, const char *expected)
{
	json_error_t jerr;
	json_t *retry = json_loads(json, JSON_DECODE_ANY, &jerr);
	char err[256] = "";
	struct classify *c;

	ck_assert_msg(retry != NULL, "%s", jerr.text);
	c = classify_new(retry, err, sizeof(err));
	json_decref(retry);
	ck_assert_ptr_null(c);
	ck_assert_str_eq(err, expected);
}

/* Does `pattern`, alone in list `key` (every other list emptied), match? */
static bool pattern_matches(const char *key, const char *pattern, const char *sample)
{
	json_t *retry = json_pack("{s:[], s:[], s:[], s:[], s:[]}", "retryablePatterns",
				  "nonRetryablePatterns", "contextOverflowPatterns",
				  "usageLimitPatterns", "overloadPatterns");
	bool non_retryable = strcmp(key, "nonRetryablePatterns") == 0;
	char err[256] = "";
	struct classify *c;
	bool matched;

	json_array_append_new(json_object_get(retry, key), json_string(pattern));
	/* Alone, a non-retryable match looks like no match at all; a
	 * catch-all retryable list tells the two apart. */
	if (non_retryable)
		json_array_append_new(json_object_get(retry, "retryablePatterns"), json_string(""));
	c = classify_new(retry, err, sizeof(err));
	json_decref(retry);
	ck_assert_msg(c != NULL, "%s", err);
	if (strcmp(key, "usageLimitPatterns") == 0)
		matched = classify_is_usage_limit(c, sample, strlen(sample));
	else if (strcmp(key, "overloadPatterns") == 0)
		matched = classify_is_overload(c, sample, strlen(sample));
	else if (non_retryable)
		matched = classify_error(c, sample, strlen(sample)) == CLASSIFY_NOT_RETRYABLE;
	else
		matched = classify_error(c, sample, strlen(sample)) != CLASSIFY_NOT_RETRYABLE;
	classify_free(c);
	return matched;
}

/* Each default pattern of `key` must match its own sample, and the full
 * defaults must give `expected` for it (or see a usage limit). Samples
 * follow the defaults' order and must be as many, so a new default needs
 * a sample. */
static void check_each_default(const char *key, const char *const *samples, size_t nsamples,
			       enum classify_verdict expected)
{
	json_t *defaults = classify_defaults();
	json_t *list = json_object_get(defaults, key);
	bool usage = strcmp(key, "usageLimitPatterns") == 0;

	ck_assert_ptr_nonnull(list);
	ck_assert_uint_eq(json_array_size(list), nsamples);
	for (size_t i = 0; i < nsamples; i++) {
		const char *pattern = json_string_value(json_array_get(list, i));

		ck_assert_msg(pattern_matches(key, pattern, samples[i]),
			      "%s /%s/ does not match \"%s\"", key, pattern, samples[i]);
		if (usage)
			ck_assert_msg(is_usage(cls, samples[i]), "\"%s\" is not a usage limit",
				      samples[i]);
		else
			ck_assert_msg(verdict(samples[i]) == expected, "\"%s\" is %s, not %s",
				      samples[i], classify_verdict_name(verdict(samples[i])),
				      classify_verdict_name(expected));
	}
	json_decref(defaults);
}

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

START_TEST(test_every_default_retryable_pattern_matches_a_real_message)
{
	static const char *const samples[] = {
		"overloaded_error: Overloaded",
		"rate_limit_error: Rate limit exceeded, slow down",
		"You have reached your usage limit for this period",
		"Too Many Requests",
		"429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\"}}",
		"503 Service Unavailable",
		"api_error: Internal server error",
		"internal_error: something went wrong on our side",
		"Connection error.",
		"Connection refused (os error 111)",
		"SocketError: other side closed",
		"TypeError: fetch failed",
		"upstream connect error or disconnect/reset before headers. reset reason: overflow",
		"disconnect/reset before headers",
		"NetworkError when attempting to fetch resource.",
		"Error: socket hang up",
		"Request timed out.",
		"Request timeout after 600000ms",
		"terminated",
		"Server requested a retry delay of 18000s, above the cap",
		"stream stall: no data for 60s",
		"stream disconnected before completion: error sending request for url",
		"We're currently experiencing high demand, which may cause temporary errors.",
		"Selected model is at capacity. Please try a different model.",
		"read ECONNRESET",
		"agent exited without a result (exit 1): Segmentation fault",
	};

	check_each_default("retryablePatterns", samples, NELEMS(samples), CLASSIFY_RETRYABLE);
}
END_TEST

START_TEST(test_every_default_non_retryable_pattern_matches_a_real_message)
{
	static const char *const samples[] = {
		"401 {\"type\":\"error\"}",
		"Incorrect API key provided: invalid_api_key",
		"Unauthorized",
		"Forbidden",
		"Permission denied for this model",
		"authentication_error: invalid x-api-key",
		"invalid_request_error: max_tokens: 9999999 > 64000",
		"Bad Request",
	};

	check_each_default("nonRetryablePatterns", samples, NELEMS(samples),
			   CLASSIFY_NOT_RETRYABLE);
}
END_TEST

START_TEST(test_every_default_context_overflow_pattern_matches_a_real_message)
{
	static const char *const samples[] = {
		"prompt is too long: 213462 tokens > 200000 maximum",
		"Your input exceeds the context window of this model",
		"This model's maximum context length is 128000 tokens.",
		"context_length_exceeded",
		"Request contains too many tokens",
		"Input is too long for requested model.",
		"Please reduce the length of the messages or completion.",
		"Request too large for model",
		"Payload Too Large",
		"HTTP 413",
		"400 status code (no body)",
	};

	check_each_default("contextOverflowPatterns", samples, NELEMS(samples),
			   CLASSIFY_CONTEXT_OVERFLOW);
}
END_TEST

START_TEST(test_every_default_overload_pattern_matches_and_is_retryable)
{
	static const char *const samples[] = {
		"overloaded_error: Overloaded",
		"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}",
		"The service is temporarily unavailable (Service Unavailable)",
		"The server is currently over capacity",
		"Model capacity exceeded for gemini-2.5-pro",
	};
	json_t *defaults = classify_defaults();
	json_t *list = json_object_get(defaults, "overloadPatterns");
	size_t i;

	ck_assert_uint_eq(json_array_size(list), NELEMS(samples));
	for (i = 0; i < NELEMS(samples); i++) {
		const char *pattern = json_string_value(json_array_get(list, i));

		ck_assert_msg(pattern_matches("overloadPatterns", pattern, samples[i]),
			      "/%s/ does not match \"%s\"", pattern, samples[i]);
		ck_assert(classify_is_overload(cls, samples[i], strlen(samples[i])));
	}
	/* A rate limit is not an overload of the model. */
	ck_assert(!classify_is_overload(cls, "429 Rate limit reached", 22));
	json_decref(defaults);
}
END_TEST

START_TEST(test_every_default_usage_limit_pattern_matches_a_real_message)
{
	static const char *const samples[] = {
		"You've hit your usage limit. Upgrade to Pro",
		"{\"error\":{\"type\":\"usage_limit_reached\"}}",
		"error code: limit_reached",
		"Quota exceeded for quota metric 'Generate Content requests'",
		"Monthly quota reached",
		"RESOURCE_EXHAUSTED",
		"You have exhausted your capacity on this model",
		"Your quota will reset after 18h31m10s",
		"429 You exceeded your current quota, please check your plan and billing details.",
		"{\"error\":{\"code\":\"insufficient_quota\"}}",
	};

	check_each_default("usageLimitPatterns", samples, NELEMS(samples), CLASSIFY_RETRYABLE);
}
END_TEST

START_TEST(test_status_5xx_and_429_match_only_as_whole_numbers)
{
	static const char *const retryable[] = {
		"429", "500", "502", "503", "504", "HTTP 500", "status=502,", "(504)",
		"error 503: try later",
	};
	static const char *const not_retryable[] = {
		"max_tokens must be <= 1500", "port 5003", "id 15029", "req_4290",
		"5000 tokens", "1429", "501 Not Implemented", "tokens 50400",
	};

	for (size_t i = 0; i < NELEMS(retryable); i++)
		ck_assert_msg(verdict(retryable[i]) == CLASSIFY_RETRYABLE, "\"%s\"", retryable[i]);
	for (size_t i = 0; i < NELEMS(not_retryable); i++)
		ck_assert_msg(verdict(not_retryable[i]) == CLASSIFY_NOT_RETRYABLE, "\"%s\"",
			      not_retryable[i]);
}
END_TEST

START_TEST(test_status_4xx_is_non_retryable_only_as_whole_number)
{
	ck_assert_int_eq(verdict("401 timeout"), CLASSIFY_NOT_RETRYABLE);
	ck_assert_int_eq(verdict("request 4010 timeout"), CLASSIFY_RETRYABLE);
	ck_assert_int_eq(verdict("timeout after 14000ms"), CLASSIFY_RETRYABLE);
	ck_assert_int_eq(verdict("timeout, retry 4040"), CLASSIFY_RETRYABLE);
}
END_TEST

START_TEST(test_context_overflow_beats_retryable)
{
	ck_assert_int_eq(verdict("429 Too Many Requests: prompt is too long"),
			 CLASSIFY_CONTEXT_OVERFLOW);
	ck_assert_int_eq(verdict("503 payload too large"), CLASSIFY_CONTEXT_OVERFLOW);
}
END_TEST

START_TEST(test_context_overflow_beats_non_retryable)
{
	ck_assert_int_eq(verdict("400 invalid_request_error: prompt is too long: 210000 tokens"),
			 CLASSIFY_CONTEXT_OVERFLOW);
}
END_TEST

START_TEST(test_non_retryable_beats_retryable)
{
	ck_assert_int_eq(verdict("401 Unauthorized: request timeout"), CLASSIFY_NOT_RETRYABLE);
	ck_assert_int_eq(verdict("overloaded, but your invalid_api_key"), CLASSIFY_NOT_RETRYABLE);
	ck_assert_int_eq(verdict("403 Forbidden (upstream 503)"), CLASSIFY_NOT_RETRYABLE);
}
END_TEST

START_TEST(test_no_body_overflow_is_anchored_at_start)
{
	ck_assert_int_eq(verdict("413 status code (no body)"), CLASSIFY_CONTEXT_OVERFLOW);
	ck_assert_int_eq(verdict("400  (no body)"), CLASSIFY_CONTEXT_OVERFLOW);
	/* 400 elsewhere in the text is only a bad request. */
	ck_assert_int_eq(verdict("proxy: 400 status code (no body)"), CLASSIFY_NOT_RETRYABLE);
}
END_TEST

START_TEST(test_unknown_or_empty_message_is_not_retryable)
{
	ck_assert_int_eq(verdict("the model produced something odd"), CLASSIFY_NOT_RETRYABLE);
	ck_assert_int_eq(classify_error(cls, "", 0), CLASSIFY_NOT_RETRYABLE);
	ck_assert_int_eq(classify_error(cls, NULL, 0), CLASSIFY_NOT_RETRYABLE);
	ck_assert(!classify_is_usage_limit(cls, NULL, 0));
}
END_TEST

START_TEST(test_matching_ignores_case)
{
	ck_assert_int_eq(verdict("SERVICE UNAVAILABLE"), CLASSIFY_RETRYABLE);
	ck_assert_int_eq(verdict("Fetch Failed"), CLASSIFY_RETRYABLE);
	ck_assert_int_eq(verdict("PROMPT IS TOO LONG"), CLASSIFY_CONTEXT_OVERFLOW);
	ck_assert(is_usage(cls, "QUOTA_EXCEEDED"));
}
END_TEST

START_TEST(test_usage_limit_is_separate_from_transient_errors)
{
	ck_assert(!is_usage(cls, "503 Service Unavailable"));
	ck_assert(!is_usage(cls, "429 Rate limit reached"));
	ck_assert(is_usage(cls, "429 usage_limit_reached"));
}
END_TEST

START_TEST(test_custom_list_replaces_only_its_default)
{
	struct classify *c = classify_from("{\"retryablePatterns\": [\"banana\", \"k(iw)+i\"]}");

	ck_assert_int_eq(verdict_of(c, "banana split"), CLASSIFY_RETRYABLE);
	ck_assert_int_eq(verdict_of(c, "KIWIWI"), CLASSIFY_RETRYABLE);
	ck_assert_int_eq(verdict_of(c, "503 Service Unavailable"), CLASSIFY_NOT_RETRYABLE);
	/* The other lists keep their defaults. */
	ck_assert_int_eq(verdict_of(c, "401 banana"), CLASSIFY_NOT_RETRYABLE);
	ck_assert_int_eq(verdict_of(c, "banana prompt is too long"),
			 CLASSIFY_CONTEXT_OVERFLOW);
	ck_assert(is_usage(c, "quota exceeded"));
	classify_free(c);
}
END_TEST

START_TEST(test_empty_non_retryable_list_lets_retryable_win)
{
	struct classify *c = classify_from("{\"nonRetryablePatterns\": []}");

	ck_assert_int_eq(verdict_of(c, "401 request timeout"), CLASSIFY_RETRYABLE);
	classify_free(c);
}
END_TEST

START_TEST(test_all_lists_from_settings_object)
{
	struct classify *c = classify_from("{\"retryablePatterns\":[\"flaky\"],"
					   "\"nonRetryablePatterns\":[\"fatal\"],"
					   "\"contextOverflowPatterns\":[\"too big\"],"
					   "\"usageLimitPatterns\":[\"broke\"],"
					   "\"maxRetries\": 3}");

	ck_assert_int_eq(verdict_of(c, "flaky"), CLASSIFY_RETRYABLE);
	ck_assert_int_eq(verdict_of(c, "flaky fatal"), CLASSIFY_NOT_RETRYABLE);
	ck_assert_int_eq(verdict_of(c, "flaky fatal too big"), CLASSIFY_CONTEXT_OVERFLOW);
	ck_assert_int_eq(verdict_of(c, "prompt is too long"), CLASSIFY_NOT_RETRYABLE);
	ck_assert(is_usage(c, "broke"));
	ck_assert(!is_usage(c, "usage limit"));
	classify_free(c);
}
END_TEST

START_TEST(test_bad_pattern_error_names_key_index_pattern_and_offset)
{
	expect_new_error("{\"retryablePatterns\": [\"ok\", \"fine\", \"(oops\"]}",
			 "retry.retryablePatterns[2] \"(oops\": missing closing parenthesis at offset 5");
	expect_new_error("{\"usageLimitPatterns\": [\"a[b\"]}",
			 "retry.usageLimitPatterns[0] \"a[b\": missing terminating ] for character "
			 "class at offset 3");
	expect_new_error("{\"contextOverflowPatterns\": [\"x\", \"a{2,1}\"]}",
			 "retry.contextOverflowPatterns[1] \"a{2,1}\": numbers out of order in {} "
			 "quantifier at offset 5");
}
END_TEST

START_TEST(test_list_that_is_not_an_array_is_rejected)
{
	expect_new_error("{\"retryablePatterns\": \"overloaded\"}",
			 "retry.retryablePatterns must be an array of strings");
	expect_new_error("{\"nonRetryablePatterns\": {}}",
			 "retry.nonRetryablePatterns must be an array of strings");
	expect_new_error("{\"usageLimitPatterns\": null}",
			 "retry.usageLimitPatterns must be an array of strings");
}
END_TEST

START_TEST(test_list_item_that_is_not_a_string_is_rejected)
{
	expect_new_error("{\"retryablePatterns\": [\"a\", 5]}",
			 "retry.retryablePatterns[1] must be a string");
	expect_new_error("{\"contextOverflowPatterns\": [null]}",
			 "retry.contextOverflowPatterns[0] must be a string");
}
END_TEST

START_TEST(test_retry_settings_that_are_not_an_object_are_rejected)
{
	expect_new_error("[\"overloaded\"]", "retry must be an object");
	expect_new_error("\"x\"", "retry must be an object");
}
END_TEST

START_TEST(test_error_text_is_truncated_to_the_buffer)
{
	json_t *retry = json_pack("{s:[s]}", "retryablePatterns", "(oops");
	char err[12];

	memset(err, 'x', sizeof(err));
	ck_assert_ptr_null(classify_new(retry, err, sizeof(err)));
	ck_assert_str_eq(err, "retry.retry");
	/* No buffer at all is allowed too. */
	ck_assert_ptr_null(classify_new(retry, NULL, 0));
	json_decref(retry);
}
END_TEST

START_TEST(test_message_length_is_honoured_without_nul)
{
	static const char text[] = "HTTP 5031 terminated";
	char *buf;

	/* "HTTP 503" — the lookahead sees the end, not the '1'. */
	ck_assert_int_eq(classify_error(cls, text, 8), CLASSIFY_RETRYABLE);
	/* "HTTP 5031 term" */
	ck_assert_int_eq(classify_error(cls, text, 14), CLASSIFY_NOT_RETRYABLE);
	ck_assert_int_eq(classify_error(cls, text, 0), CLASSIFY_NOT_RETRYABLE);

	/* An exact-size heap copy: ASan catches any read past the end. */
	buf = malloc(10);
	ck_assert_ptr_nonnull(buf);
	memcpy(buf, "terminated", 10);
	ck_assert_int_eq(classify_error(cls, buf, 10), CLASSIFY_RETRYABLE);
	ck_assert_int_eq(classify_error(cls, buf, 9), CLASSIFY_NOT_RETRYABLE);
	memcpy(buf, "usage_limi", 10);
	ck_assert(!classify_is_usage_limit(cls, buf, 10));
	free(buf);
}
END_TEST

START_TEST(test_embedded_nul_does_not_end_the_message)
{
	static const char after_nul[] = "error\0\0503 Service Unavailable";
	static const char split[] = "fetch\0failed";

	ck_assert_int_eq(classify_error(cls, after_nul, sizeof(after_nul) - 1),
			 CLASSIFY_RETRYABLE);
	/* A NUL is a character, not a space. */
	ck_assert_int_eq(classify_error(cls, split, sizeof(split) - 1), CLASSIFY_NOT_RETRYABLE);
}
END_TEST

START_TEST(test_invalid_utf8_message_is_still_classified)
{
	static const char bad[] = "\xff\xfe\xc3 503 Service Unavailable \xe2\x82";

	ck_assert_int_eq(classify_error(cls, bad, sizeof(bad) - 1), CLASSIFY_RETRYABLE);
	ck_assert_int_eq(verdict("Überlastet — overloaded"), CLASSIFY_RETRYABLE);
}
END_TEST

START_TEST(test_defaults_are_a_fresh_object_of_five_string_arrays)
{
	static const char *const keys[] = {
		"retryablePatterns", "nonRetryablePatterns", "contextOverflowPatterns",
		"usageLimitPatterns", "overloadPatterns",
	};
	json_t *a = classify_defaults();
	json_t *b = classify_defaults();

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_ne(a, b);
	ck_assert_uint_eq(json_object_size(a), NELEMS(keys));
	for (size_t k = 0; k < NELEMS(keys); k++) {
		json_t *list = json_object_get(a, keys[k]);
		size_t i;
		json_t *item;

		ck_assert_msg(json_is_array(list) && json_array_size(list) > 0, "%s", keys[k]);
		json_array_foreach(list, i, item)
			ck_assert(json_is_string(item));
	}
	ck_assert(json_equal(a, b));
	json_decref(a);
	json_decref(b);
}
END_TEST

START_TEST(test_defaults_passed_back_in_behave_as_defaults)
{
	json_t *defaults = classify_defaults();
	char err[256] = "";
	struct classify *c = classify_new(defaults, err, sizeof(err));

	json_decref(defaults);
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert_int_eq(verdict_of(c, "503 Service Unavailable"), CLASSIFY_RETRYABLE);
	ck_assert_int_eq(verdict_of(c, "port 5003"), CLASSIFY_NOT_RETRYABLE);
	classify_free(c);
}
END_TEST

START_TEST(test_free_null_is_a_no_op)
{
	classify_free(NULL);
}
END_TEST

START_TEST(test_verdict_names)
{
	ck_assert_str_eq(classify_verdict_name(CLASSIFY_RETRYABLE), "retryable");
	ck_assert_str_eq(classify_verdict_name(CLASSIFY_NOT_RETRYABLE), "not-retryable");
	ck_assert_str_eq(classify_verdict_name(CLASSIFY_CONTEXT_OVERFLOW), "context-overflow");
}
END_TEST

Suite *classify_suite(void)
{
	Suite *s = suite_create("classify");
	TCase *tc = tcase_create("classify");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_every_default_retryable_pattern_matches_a_real_message);
	tcase_add_test(tc, test_every_default_non_retryable_pattern_matches_a_real_message);
	tcase_add_test(tc, test_every_default_context_overflow_pattern_matches_a_real_message);
	tcase_add_test(tc, test_every_default_usage_limit_pattern_matches_a_real_message);
	tcase_add_test(tc, test_every_default_overload_pattern_matches_and_is_retryable);
	tcase_add_test(tc, test_status_5xx_and_429_match_only_as_whole_numbers);
	tcase_add_test(tc, test_status_4xx_is_non_retryable_only_as_whole_number);
	tcase_add_test(tc, test_context_overflow_beats_retryable);
	tcase_add_test(tc, test_context_overflow_beats_non_retryable);
	tcase_add_test(tc, test_non_retryable_beats_retryable);
	tcase_add_test(tc, test_no_body_overflow_is_anchored_at_start);
	tcase_add_test(tc, test_unknown_or_empty_message_is_not_retryable);
	tcase_add_test(tc, test_matching_ignores_case);
	tcase_add_test(tc, test_usage_limit_is_separate_from_transient_errors);
	tcase_add_test(tc, test_custom_list_replaces_only_its_default);
	tcase_add_test(tc, test_empty_non_retryable_list_lets_retryable_win);
	tcase_add_test(tc, test_all_lists_from_settings_object);
	tcase_add_test(tc, test_bad_pattern_error_names_key_index_pattern_and_offset);
	tcase_add_test(tc, test_list_that_is_not_an_array_is_rejected);
	tcase_add_test(tc, test_list_item_that_is_not_a_string_is_rejected);
	tcase_add_test(tc, test_retry_settings_that_are_not_an_object_are_rejected);
	tcase_add_test(tc, test_error_text_is_truncated_to_the_buffer);
	tcase_add_test(tc, test_message_length_is_honoured_without_nul);
	tcase_add_test(tc, test_embedded_nul_does_not_end_the_message);
	tcase_add_test(tc, test_invalid_utf8_message_is_still_classified);
	tcase_add_test(tc, test_defaults_are_a_fresh_object_of_five_string_arrays);
	tcase_add_test(tc, test_defaults_passed_back_in_behave_as_defaults);
	tcase_add_test(tc, test_free_null_is_a_no_op);
	tcase_add_test(tc, test_verdict_names);
	suite_add_tcase(s, tc);
	return s;
}

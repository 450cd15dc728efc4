/* The classifier's Google typed-body steps (classify.h, steps 1b and 2b):
 * a google.rpc.Status body's ErrorInfo reason, QuotaFailure window,
 * RetryInfo delay and error.status, and the Gemini finish and block
 * reasons as the decoder words them. */
#include "core/classify.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Suite *classify_google_suite(void);

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

#define RETRY_INFO(d) "{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":" d "}"
#define QUOTA(id) \
	"{\"@type\":\"type.googleapis.com/google.rpc.QuotaFailure\",\"violations\":[{\"quotaMetric\":" \
	"\"generativelanguage.googleapis.com/generate_content_free_tier_requests\",\"quotaId\":\"" id "\"}]}"
#define ERROR_INFO(r) \
	"{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"" r "\",\"domain\":" \
	"\"googleapis.com\",\"metadata\":{\"service\":\"generativelanguage.googleapis.com\"}}"
#define STATUS(code, msg, st, details) \
	"{\"error\":{\"code\":" #code ",\"message\":\"" msg "\",\"status\":\"" st "\",\"details\":[" \
	details "]}}"

#define DAY "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
#define MINUTE "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
#define QUOTA_WORDS \
	"You exceeded your current quota, please check your plan and billing details."

struct row {
	const char *name;
	const char *text;
	int status;
	const char *body;
	enum classify_verdict verdict;
	bool overload;
	int64_t hint;
	const char *rule;
};

static const struct row rows[] = {
	{
		.name = "a daily quota is a usage limit, its retryDelay kept as the hint",
		.text = "429 " QUOTA_WORDS,
		.status = 429,
		.body = STATUS(429, QUOTA_WORDS, "RESOURCE_EXHAUSTED", QUOTA(DAY) "," RETRY_INFO("\"37s\"")),
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = 37000,
		.rule = "google-quota:" DAY,
	},
	{
		.name = "a per-minute quota is a rate limit despite the quota words",
		.text = "429 " QUOTA_WORDS,
		.status = 429,
		.body = STATUS(429, QUOTA_WORDS, "RESOURCE_EXHAUSTED", QUOTA(MINUTE)),
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "google-quota:" MINUTE,
	},
	{
		.name = "a per-minute quota waits the retryDelay",
		.text = "429 " QUOTA_WORDS,
		.status = 429,
		.body = STATUS(429, QUOTA_WORDS " Please retry in 37.5s.", "RESOURCE_EXHAUSTED",
			       QUOTA(MINUTE) "," RETRY_INFO("\"37s\"")),
		.verdict = CLASSIFY_RETRYABLE,
		.hint = 37000,
		.rule = "google-quota:" MINUTE,
	},
	{
		.name = "a daily quota among per-minute ones wins",
		.text = "429 Quota exceeded.",
		.status = 429,
		.body = STATUS(429, "Quota exceeded.", "RESOURCE_EXHAUSTED",
			       QUOTA(MINUTE) "," QUOTA(DAY) "," RETRY_INFO("\"47s\"")),
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = 47000,
		.rule = "google-quota:" DAY,
	},
	{
		.name = "a per-project-per-month quota is a usage limit",
		.text = "429 Quota exceeded.",
		.status = 429,
		.body = STATUS(429, "Quota exceeded.", "RESOURCE_EXHAUSTED",
			       QUOTA("GenerateContentRequestsPerProjectPerMonth")),
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "google-quota:GenerateContentRequestsPerProjectPerMonth",
	},
	{
		.name = "a quota metric names the window when the id does not",
		.text = "429 Quota exceeded.",
		.status = 429,
		.body = "{\"error\":{\"code\":429,\"message\":\"Quota exceeded.\",\"status\":\"RESOURCE_"
			"EXHAUSTED\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.QuotaFailure\","
			"\"violations\":[{\"quotaMetric\":\"aiplatform.googleapis.com/generate_content_"
			"requests_per_minute_per_project_per_base_model\"}]}]}}",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		/* cut to fit the rule */
		.rule = "google-quota:aiplatform.googleapis.com/generate_content_requests_per_minute_per_pro",
	},
	{
		.name = "a quota of zero is a usage limit",
		.text = "429 Quota exceeded.",
		.status = 429,
		.body = "{\"error\":{\"code\":429,\"message\":\"Quota exceeded.\",\"status\":\"RESOURCE_"
			"EXHAUSTED\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.QuotaFailure\","
			"\"violations\":[{\"quotaId\":\"" MINUTE "\",\"quotaValue\":\"0\"}]}]}}",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "google-quota-zero:" MINUTE,
	},
	{
		.name = "a per-minute window stating 20 min is a spent quota",
		.text = "429 Quota exceeded.",
		.status = 429,
		.body = STATUS(429, "Quota exceeded.", "RESOURCE_EXHAUSTED",
			       QUOTA(MINUTE) "," RETRY_INFO("\"1200s\"")),
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = 1200000,
		.rule = "long-wait>=900000ms:google-quota:" MINUTE,
	},
	{
		.name = "retryDelay with a fraction",
		.text = "429 Resource has been exhausted (e.g. check quota).",
		.status = 429,
		.body = STATUS(429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED",
			       RETRY_INFO("\"1.250s\"")),
		.verdict = CLASSIFY_RETRYABLE,
		.hint = 1250,
		.rule = "google-status:RESOURCE_EXHAUSTED",
	},
	{
		.name = "retryDelay under a second",
		.text = "429 Resource has been exhausted (e.g. check quota).",
		.status = 429,
		.body = STATUS(429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED",
			       RETRY_INFO("\"0.5s\"")),
		.verdict = CLASSIFY_RETRYABLE,
		.hint = 500,
		.rule = "google-status:RESOURCE_EXHAUSTED",
	},
	{
		.name = "retryDelay as seconds and nanos",
		.text = "429 Resource has been exhausted (e.g. check quota).",
		.status = 429,
		.body = STATUS(429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED",
			       RETRY_INFO("{\"seconds\":2,\"nanos\":500000000}")),
		.verdict = CLASSIFY_RETRYABLE,
		.hint = 2500,
		.rule = "google-status:RESOURCE_EXHAUSTED",
	},
	{
		.name = "the quota words without details or a wait are a usage limit",
		.text = "429 " QUOTA_WORDS,
		.status = 429,
		.body = STATUS(429, QUOTA_WORDS, "RESOURCE_EXHAUSTED", ""),
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "text:quotaWordPatterns[0]",
	},
	{
		.name = "API_KEY_INVALID is an auth failure",
		.text = "400 API key not valid. Please pass a valid API key.",
		.status = 400,
		.body = STATUS(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT",
			       ERROR_INFO("API_KEY_INVALID")),
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "google-reason:API_KEY_INVALID",
	},
	{
		.name = "a disabled service is not retried",
		.text = "403 Generative Language API has not been used in project 1 before or it is disabled.",
		.status = 403,
		.body = STATUS(403, "Generative Language API has not been used in project 1 before or it is "
			       "disabled.", "PERMISSION_DENIED", ERROR_INFO("SERVICE_DISABLED")),
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "google-reason:SERVICE_DISABLED",
	},
	{
		.name = "disabled billing is a usage limit",
		.text = "403 This API method requires billing to be enabled.",
		.status = 403,
		.body = STATUS(403, "This API method requires billing to be enabled.", "PERMISSION_DENIED",
			       ERROR_INFO("BILLING_DISABLED")),
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "google-reason:BILLING_DISABLED",
	},
	{
		.name = "RATE_LIMIT_EXCEEDED leaves it to the quota's window",
		.text = "429 Quota exceeded.",
		.status = 429,
		.body = STATUS(429, "Quota exceeded.", "RESOURCE_EXHAUSTED",
			       ERROR_INFO("RATE_LIMIT_EXCEEDED") "," QUOTA(DAY)),
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "google-quota:" DAY,
	},
	{
		.name = "UNAVAILABLE is retried, an overloaded model an overload",
		.text = "503 The model is overloaded. Please try again later.",
		.status = 503,
		.body = STATUS(503, "The model is overloaded. Please try again later.", "UNAVAILABLE", ""),
		.verdict = CLASSIFY_RETRYABLE,
		.overload = true,
		.hint = -1,
		.rule = "google-status:UNAVAILABLE",
	},
	{
		.name = "INTERNAL is retried",
		.text = "500 An internal error has occurred.",
		.status = 500,
		.body = STATUS(500, "An internal error has occurred.", "INTERNAL", ""),
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "google-status:INTERNAL",
	},
	{
		.name = "DEADLINE_EXCEEDED is retried",
		.text = "504 Deadline expired before operation could complete.",
		.status = 504,
		.body = STATUS(504, "Deadline expired before operation could complete.", "DEADLINE_EXCEEDED",
			       ""),
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "google-status:DEADLINE_EXCEEDED",
	},
	{
		.name = "INVALID_ARGUMENT is not retried",
		.text = "400 Invalid JSON payload received.",
		.status = 400,
		.body = STATUS(400, "Invalid JSON payload received.", "INVALID_ARGUMENT", ""),
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "google-status:INVALID_ARGUMENT",
	},
	{
		.name = "FAILED_PRECONDITION (the user's location) is not retried",
		.text = "400 User location is not supported for the API use.",
		.status = 400,
		.body = STATUS(400, "User location is not supported for the API use.", "FAILED_PRECONDITION",
			       ""),
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "google-status:FAILED_PRECONDITION",
	},
	{
		.name = "UNAUTHENTICATED is not retried",
		.text = "401 Request had invalid authentication credentials.",
		.status = 401,
		.body = STATUS(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED", ""),
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "google-status:UNAUTHENTICATED",
	},
	{
		.name = "an INVALID_ARGUMENT that is too much input overflows first",
		.text = "400 The input token count (1200293) exceeds the maximum number of tokens allowed "
			"(1048576).",
		.status = 400,
		.body = STATUS(400, "The input token count (1200293) exceeds the maximum number of tokens "
			       "allowed (1048576).", "INVALID_ARGUMENT", ""),
		.verdict = CLASSIFY_CONTEXT_OVERFLOW,
		.hint = -1,
		.rule = "text:contextOverflowPatterns[7]",
	},
	{
		.name = "an in-stream daily quota (no status of its own) is a usage limit",
		.text = "429 RESOURCE_EXHAUSTED: Quota exceeded.",
		.body = STATUS(429, "Quota exceeded.", "RESOURCE_EXHAUSTED", QUOTA(DAY)),
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "google-quota:" DAY,
	},
	{
		.name = "an in-stream error object waits its retryDelay",
		.text = "429 RESOURCE_EXHAUSTED: Resource exhausted.",
		.body = STATUS(429, "Resource exhausted.", "RESOURCE_EXHAUSTED", RETRY_INFO("\"0.4s\"")),
		.verdict = CLASSIFY_RETRYABLE,
		.hint = 400,
		.rule = "google-status:RESOURCE_EXHAUSTED",
	},
	{
		.name = "a SAFETY finish is never retried",
		.text = "Gemini stopped the answer (finish reason: SAFETY): the response was blocked by "
			"Gemini's safety filters",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "google-finish:SAFETY",
	},
	{
		.name = "a RECITATION finish is never retried",
		.text = "Gemini stopped the answer (finish reason: RECITATION): the response was blocked "
			"for reciting its training data",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "google-finish:RECITATION",
	},
	{
		.name = "a malformed function call is never retried",
		.text = "Gemini stopped the answer (finish reason: MALFORMED_FUNCTION_CALL): the model "
			"produced a malformed function call",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "google-finish:MALFORMED_FUNCTION_CALL",
	},
	{
		.name = "a blocked prompt is never retried",
		.text = "Gemini blocked the prompt (block reason: PROHIBITED_CONTENT): the response was "
			"blocked for prohibited content",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "google-finish:PROHIBITED_CONTENT",
	},
	{
		.name = "an OTHER finish is not known either way",
		.text = "Gemini stopped the answer (finish reason: OTHER): the answer is not usable",
		.verdict = CLASSIFY_UNKNOWN,
		.hint = -1,
		.rule = "default",
	},
	{
		.name = "a body that is not a Status changes nothing",
		.text = "503 Service Unavailable",
		.status = 503,
		.body = "{\"error\":{\"message\":\"busy\",\"type\":\"server_error\"}}",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "http-status:503",
	},
};

static void check_row(struct classify *c, const struct row *r)
{
	struct classify_input in = {
		.text = r->text,
		.len = strlen(r->text),
		.status = r->status,
		.body = r->body,
		.body_len = r->body != NULL ? strlen(r->body) : 0,
	};
	struct classify_result out;

	classify_decide(c, &in, &out);
	ck_assert_msg(out.verdict == r->verdict, "%s: %s, not %s (rule %s)", r->name,
		      classify_class_name(out.verdict), classify_class_name(r->verdict), out.rule);
	ck_assert_msg(strncmp(out.rule, r->rule, sizeof(out.rule) - 1) == 0, "%s: rule %s, not %s",
		      r->name, out.rule, r->rule);
	ck_assert_msg(out.overload == r->overload, "%s: overload %d", r->name, out.overload);
	ck_assert_msg(out.hint_ms == r->hint, "%s: hint %lld, not %lld", r->name,
		      (long long)out.hint_ms, (long long)r->hint);
}

START_TEST(test_google_status_body_decides_by_reason_quota_window_and_status)
{
	char err[256] = "";
	struct classify *c = classify_new(NULL, err, sizeof(err));

	ck_assert_msg(c != NULL, "%s", err);
	check_row(c, &rows[_i]);
	classify_free(c);
}
END_TEST

START_TEST(test_a_users_pattern_speaks_before_the_typed_body)
{
	json_t *retry = json_pack("{s:[s]}", "usageLimitPatterns", "PerMinutePerProject");
	char err[256] = "";
	struct classify *c = classify_new(retry, err, sizeof(err));
	const char *body = STATUS(429, "Quota exceeded.", "RESOURCE_EXHAUSTED", QUOTA(MINUTE));
	struct classify_input in = { .text = "429 Quota exceeded.", .len = 19, .status = 429,
				     .body = body, .body_len = strlen(body) };
	struct classify_result out;

	ck_assert_msg(c != NULL, "%s", err);
	classify_decide(c, &in, &out);
	ck_assert_int_eq(out.verdict, CLASSIFY_USAGE_LIMIT);
	ck_assert_str_eq(out.rule, "settings:usageLimitPatterns[0]");
	classify_free(c);
	json_decref(retry);
}
END_TEST

START_TEST(test_a_bad_or_cut_body_is_read_as_words_only)
{
	static const char *const bodies[] = {
		"{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"@type\"",
		"{\"error\":\"RESOURCE_EXHAUSTED\"}",
		"{\"error\":{\"status\":42,\"details\":{}}}",
		"[{\"error\":{\"status\":\"UNAVAILABLE\"}}]",
		"{\"error\":{\"status\":\"lower case\",\"details\":[1,{\"@type\":7},{\"@type\":\"x.ErrorInfo\","
		"\"reason\":[]},{\"@type\":\"x.RetryInfo\",\"retryDelay\":\"soon\"},{\"@type\":\"x.QuotaFailure\","
		"\"violations\":[1,{\"quotaId\":5}]}]}}",
	};
	char err[256] = "";
	struct classify *c = classify_new(NULL, err, sizeof(err));

	ck_assert_msg(c != NULL, "%s", err);
	for (size_t i = 0; i < NELEMS(bodies); i++) {
		struct classify_input in = { .text = "429 Too Many Requests", .len = 21, .status = 429,
					     .body = bodies[i], .body_len = strlen(bodies[i]) };
		struct classify_result out;

		classify_decide(c, &in, &out);
		ck_assert_msg(out.verdict == CLASSIFY_RETRYABLE, "body %zu: %s", i, out.rule);
		ck_assert_msg(out.hint_ms == -1, "body %zu: hint %lld", i, (long long)out.hint_ms);
	}
	classify_free(c);
}
END_TEST

Suite *classify_google_suite(void)
{
	Suite *s = suite_create("classify_google");
	TCase *tc = tcase_create("google");

	tcase_add_loop_test(tc, test_google_status_body_decides_by_reason_quota_window_and_status, 0,
			    NELEMS(rows));
	tcase_add_test(tc, test_a_users_pattern_speaks_before_the_typed_body);
	tcase_add_test(tc, test_a_bad_or_cut_body_is_read_as_words_only);
	suite_add_tcase(s, tc);
	return s;
}

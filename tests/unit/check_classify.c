#include "core/classify.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

Suite *classify_suite(void);

/* Wed, 21 Oct 2015 07:28:00 GMT */
#define NOW_MS INT64_C(1445412480000)

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

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

/* One failure as a provider reports it, and the decision it must get (the
 * one tests/fixtures/errors/corpus.jsonl records for it). */
struct row {
	const char *name;
	const char *text;
	int status;
	const char *body;
	const char *headers;	/* a JSON object text */
	int64_t now;
	enum classify_verdict verdict;
	bool overload;
	int64_t hint;
	const char *rule;
};

static void decide_row(struct classify *c, const struct row *r, struct classify_result *out)
{
	json_error_t jerr;
	json_t *headers = NULL;
	struct classify_input in = {
		.text = r->text,
		.len = strlen(r->text),
		.status = r->status,
		.body = r->body,
		.body_len = r->body != NULL ? strlen(r->body) : 0,
		.now_ms = r->now,
	};

	if (r->headers != NULL) {
		headers = json_loads(r->headers, 0, &jerr);
		ck_assert_msg(headers != NULL, "%s: %s", r->name, jerr.text);
	}
	in.headers = headers;
	memset(out, 0x5a, sizeof(*out));
	classify_decide(c, &in, out);
	json_decref(headers);
}

static void check_row(struct classify *c, const struct row *r)
{
	struct classify_result out;

	decide_row(c, r, &out);
	ck_assert_msg(out.verdict == r->verdict, "%s: %s, not %s (rule %s)", r->name,
		      classify_class_name(out.verdict), classify_class_name(r->verdict), out.rule);
	ck_assert_msg(strcmp(out.rule, r->rule) == 0, "%s: rule %s, not %s", r->name, out.rule,
		      r->rule);
	ck_assert_msg(out.overload == r->overload, "%s: overload %d", r->name, out.overload);
	ck_assert_msg(out.hint_ms == r->hint, "%s: hint %lld, not %lld", r->name,
		      (long long)out.hint_ms, (long long)r->hint);
}

static const struct row step1_overflow[] = {
	{
		.name = "overflow status 413",
		.text = "Request Entity Too Large",
		.status = 413,
		.verdict = CLASSIFY_CONTEXT_OVERFLOW,
		.hint = -1,
		.rule = "http-status:413",
	},
	{
		.name = "overflow status 413 in text",
		.text = "HTTP 413: upload refused",
		.verdict = CLASSIFY_CONTEXT_OVERFLOW,
		.hint = -1,
		.rule = "http-status:413",
	},
	{
		.name = "overflow typed openai",
		.text = "Error code: 400",
		.status = 400,
		.body = "{\"error\":{\"message\":\"too many\",\"type\":\"invalid_request_error"
		  "\",\"code\":\"context_length_exceeded\"}}",
		.verdict = CLASSIFY_CONTEXT_OVERFLOW,
		.hint = -1,
		.rule = "openai-code:context_length_exceeded",
	},
	{
		.name = "overflow typed anthropic",
		.text = "request failed",
		.body = "{\"type\":\"error\",\"error\":{\"type\":\"request_too_large\",\"messag"
		  "e\":\"Request exceeds the maximum size\"}}",
		.verdict = CLASSIFY_CONTEXT_OVERFLOW,
		.hint = -1,
		.rule = "anthropic-type:request_too_large",
	},
	{
		.name = "overflow text anthropic",
		.text = "prompt is too long: 213462 tokens > 200000 maximum",
		.verdict = CLASSIFY_CONTEXT_OVERFLOW,
		.hint = -1,
		.rule = "text:contextOverflowPatterns[0]",
	},
	{
		.name = "overflow llama.cpp as 500",
		.text = "500 the request exceeds the available context size, try increasing it",
		.status = 500,
		.verdict = CLASSIFY_CONTEXT_OVERFLOW,
		.hint = -1,
		.rule = "text:contextOverflowPatterns[3]",
	},
	{
		.name = "overflow gemini token count",
		.text = "The input token count (1196265) exceeds the maximum number of tokens a"
		  "llowed (1048575).",
		.status = 400,
		.verdict = CLASSIFY_CONTEXT_OVERFLOW,
		.hint = -1,
		.rule = "text:contextOverflowPatterns[7]",
	},
	{
		.name = "overflow xai prompt length",
		.text = "This model's maximum prompt length is 131072 but the request contains "
		  "132000 tokens.",
		.status = 400,
		.verdict = CLASSIFY_CONTEXT_OVERFLOW,
		.hint = -1,
		.rule = "text:contextOverflowPatterns[6]",
	},
	{
		.name = "overflow codex out of room",
		.text = "Codex ran out of room in the model's context window. Start a new threa"
		  "d.",
		.verdict = CLASSIFY_CONTEXT_OVERFLOW,
		.hint = -1,
		.rule = "text:contextOverflowPatterns[3]",
	},
	{
		.name = "overflow per-minute limit smaller than request",
		.text = "Request too large for gpt-4 in organization org-x on tokens per min (T"
		  "PM): Limit 10000, Requested 12000.",
		.status = 429,
		.verdict = CLASSIFY_CONTEXT_OVERFLOW,
		.hint = -1,
		.rule = "rate-window:requested-over-limit",
	},
	{
		.name = "overflow: the window's numbers alone, requested above the limit, through a 429",
		.text = "Rate limit reached for model `llama3-70b-8192` on tokens per minute (TPM): "
			"Limit 7000, Used 0, Requested ~12,903. Please try again in 50.597s.",
		.status = 429,
		.verdict = CLASSIFY_CONTEXT_OVERFLOW,
		.hint = 50597,
		.rule = "rate-window:requested-over-limit",
	},
	{
		.name = "a request within its window is a rate limit, not an overflow",
		.text = "Rate limit reached on tokens per minute (TPM): Limit 6000, Used 5034, "
			"Requested 1443. Please try again in 4.77s.",
		.status = 429,
		.verdict = CLASSIFY_RETRYABLE,
		.hint = 4770,
		.rule = "http-status:429",
	},
};

static const struct row step2_usage[] = {
	{
		.name = "a gateway's own key allowance (New API) is spent, though it came as 403",
		.text = "{\"error\":{\"message\":\"token quota is not enough, token remain quota: $0.25, need quota: $5.5\",\"type\":\"new_api_error\",\"code\":\"pre_consume_token_quota_failed\"}}",
		.status = 403,
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "oneapi-code:pre_consume_token_quota_failed",
	},
	{
		.name = "a gateway's pre-consumed quota check failing is a usage limit",
		.text = "chat pre-consumed quota failed, user quota: 13810, need quota: 15000",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "text:usageLimitPatterns[16]",
	},
	{
		.name = "usage status 402",
		.text = "Payment Required",
		.status = 402,
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "http-status:402",
	},
	{
		.name = "usage typed insufficient_quota",
		.text = "429 You exceeded your current quota",
		.status = 429,
		.body = "{\"error\":{\"type\":\"insufficient_quota\",\"code\":\"insufficient_qu"
		  "ota\"}}",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "openai-code:insufficient_quota",
	},
	{
		.name = "usage typed billing_error",
		.text = "400",
		.body = "{\"type\":\"error\",\"error\":{\"type\":\"billing_error\",\"message\":"
		  "\"x\"}}",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "anthropic-type:billing_error",
	},
	{
		.name = "usage limit zero",
		.text = "429 RESOURCE_EXHAUSTED Quota exceeded for metric: generate_content_fre"
		  "e_tier_requests, limit: 0",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "text:limitZeroPatterns[0]",
	},
	{
		.name = "usage credit balance",
		.text = "Your credit balance is too low to access the Anthropic API.",
		.status = 400,
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "text:usageLimitPatterns[0]",
	},
	{
		.name = "usage limit wording",
		.text = "Claude AI usage limit reached|1755615600",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "text:usageLimitPatterns[1]",
	},
	{
		.name = "usage limit epoch with now",
		.text = "Claude AI usage limit reached|1755615600",
		.now = INT64_C(1755600000000),
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = 15600000,
		.rule = "text:usageLimitPatterns[1]",
	},
	{
		.name = "usage daily quota",
		.text = "You have exceeded your daily quota of requests",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "text:usageLimitPatterns[2]",
	},
	{
		.name = "usage per day",
		.text = "429 Quota exceeded for metric generativelanguage.googleapis.com/genera"
		  "te_requests_per_model_per_day",
		.status = 429,
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "text:usageLimitPatterns[3]",
	},
	{
		.name = "usage plan window",
		.text = "You've reached your 5-hour limit.",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "text:usageLimitPatterns[4]",
	},
	{
		.name = "usage billing state",
		.text = "Your billing account is not active",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "text:usageLimitPatterns[5]",
	},
	{
		.name = "usage quota words",
		.text = "You exceeded your current quota, please check your plan and billing de"
		  "tails.",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "text:quotaWordPatterns[0]",
	},
	{
		.name = "usage upgrade",
		.text = "Please upgrade to a paid plan to continue.",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "text:quotaWordPatterns[1]",
	},
};

static const struct row quota_windows[] = {
	{
		.name = "per-minute gemini quota",
		.text = "429 RESOURCE_EXHAUSTED. {\"error\":{\"code\":429,\"message\":\"You exc"
		  "eeded your current quota. Quota exceeded for metric: generate_content_"
		  "free_tier_requests, limit: 15, model: gemini-2.0-flash. Please retry i"
		  "n 37.5s.\",\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"@type\":"
		  "\"type.googleapis.com/google.rpc.QuotaFailure\",\"violations\":[{\"quo"
		  "taId\":\"GenerateRequestsPerMinutePerProjectPerModel-FreeTier\"}]},{\""
		  "@type\":\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":\""
		  "37s\"}]}}",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = 37000,
		.rule = "http-status:429",
	},
	{
		.name = "per-day gemini quota",
		.text = "429 RESOURCE_EXHAUSTED. {\"error\":{\"code\":429,\"message\":\"You exc"
		  "eeded your current quota.\",\"status\":\"RESOURCE_EXHAUSTED\",\"detail"
		  "s\":[{\"@type\":\"type.googleapis.com/google.rpc.QuotaFailure\",\"viol"
		  "ations\":[{\"quotaId\":\"GenerateRequestsPerDayPerProjectPerModel-Free"
		  "Tier\"}]}]}}",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "text:usageLimitPatterns[3]",
	},
	{
		.name = "per-minute quota words",
		.text = "You exceeded your current quota of requests per minute.",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:rateLimitPatterns[2]",
	},
};

static const struct row step3_never[] = {
	{
		.name = "never status 401",
		.text = "Unauthorized",
		.status = 401,
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "http-status:401",
	},
	{
		.name = "never first status in order",
		.text = "HTTP 404 from proxy after HTTP 403",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "http-status:404",
	},
	{
		.name = "never typed anthropic auth",
		.text = "error",
		.body = "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"mes"
		  "sage\":\"invalid x-api-key\"}}",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "anthropic-type:authentication_error",
	},
	{
		.name = "never typed google",
		.text = "Error",
		.body = "{\"error\":{\"message\":\"denied\",\"status\":\"PERMISSION_DENIED\"}}",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "google-status:PERMISSION_DENIED",
	},
	{
		.name = "never typed bedrock header",
		.text = "request failed",
		.headers = "{\"x-amzn-ErrorType\": \"AccessDeniedException:http://internal.amazon."
		  "com/coral/\"}",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "bedrock:AccessDeniedException",
	},
	{
		.name = "never invalid key",
		.text = "Incorrect API key provided: sk-xxx.",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "text:nonRetryablePatterns[1]",
	},
	{
		.name = "never content policy",
		.text = "Your request was rejected as a result of our safety system.",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "text:nonRetryablePatterns[6]",
	},
	{
		.name = "never tls",
		.text = "unable to get local issuer certificate",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "text:nonRetryablePatterns[7]",
	},
	{
		.name = "never beats retryable",
		.text = "401 Unauthorized: request timeout",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "http-status:401",
	},
};

static const struct row step4_retry[] = {
	{
		.name = "tokens over a per-minute rate limit are a rate window, not an overflow",
		.text = "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of request tokens has exceeded your per-minute rate limit; please reduce the prompt length or the maximum tokens requested, or try again later.\"}}",
		.status = 429,
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "http-status:429",
	},
	{
		.name = "vLLM's engine loop that died is retried",
		.text = "RuntimeError: Engine loop has died",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:transientPatterns[11]",
	},
	{
		.name = "Workers AI capacity temporarily exceeded is an overload",
		.text = "3040: Capacity temporarily exceeded, please try again.",
		.verdict = CLASSIFY_RETRYABLE,
		.overload = true,
		.hint = -1,
		.rule = "text:rateLimitPatterns[3]",
	},
	{
		.name = "a busy One API group (load saturated) is an overload",
		.text = "当前分组上游负载已饱和，请稍后再试",
		.verdict = CLASSIFY_RETRYABLE,
		.overload = true,
		.hint = -1,
		.rule = "text:transientPatterns[7]",
	},
	{
		.name = "retry status 429",
		.text = "Too Many Requests",
		.status = 429,
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "http-status:429",
	},
	{
		.name = "retry status 529 overload",
		.text = "API Error: 529 Overloaded",
		.verdict = CLASSIFY_RETRYABLE,
		.overload = true,
		.hint = -1,
		.rule = "http-status:529",
	},
	{
		.name = "retry 503 alone is no overload",
		.text = "503 Service Unavailable",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "http-status:503",
	},
	{
		.name = "retry cloudflare 524",
		.text = "error code: 524",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "http-status:524",
	},
	{
		.name = "retry html 502",
		.text = "502 <html><head><title>502 Bad Gateway</title></head></html>",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "http-status:502",
	},
	{
		.name = "retry typed rate_limit_error",
		.text = "error",
		.body = "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message"
		  "\":\"x\"}}",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "anthropic-type:rate_limit_error",
	},
	{
		.name = "retry typed overloaded_error",
		.text = "error",
		.body = "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message"
		  "\":\"Overloaded\"}}",
		.verdict = CLASSIFY_RETRYABLE,
		.overload = true,
		.hint = -1,
		.rule = "anthropic-type:overloaded_error",
	},
	{
		.name = "retry typed bedrock throttle header",
		.text = "request failed",
		.headers = "{\"x-amzn-ErrorType\": \"ThrottlingException:http://internal.amazon.co"
		  "m/coral/\"}",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "bedrock:ThrottlingException",
	},
	{
		.name = "retry typed google unavailable",
		.text = "error",
		.body = "{\"error\":{\"message\":\"The model is overloaded.\",\"status\":\"UNAV"
		  "AILABLE\"}}",
		.verdict = CLASSIFY_RETRYABLE,
		.overload = true,
		.hint = -1,
		.rule = "google-status:UNAVAILABLE",
	},
	{
		.name = "retry typed in python repr",
		.text = "litellm.RateLimitError: {'error': {'code': 'rate_limit_exceeded'}}",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "openai-code:rate_limit_exceeded",
	},
	{
		.name = "retry rate limit words",
		.text = "Rate limit reached for requests",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:rateLimitPatterns[0]",
	},
	{
		.name = "retry bedrock too many tokens",
		.text = "Too many tokens, please wait before trying again.",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:rateLimitPatterns[1]",
	},
	{
		.name = "retry capacity",
		.text = "Selected model is at capacity. Please try a different model.",
		.verdict = CLASSIFY_RETRYABLE,
		.overload = true,
		.hint = -1,
		.rule = "text:rateLimitPatterns[3]",
	},
	{
		.name = "retry 400 next to 429 words",
		.text = "400 invalid_request_error: model capacity exceeded",
		.verdict = CLASSIFY_RETRYABLE,
		.overload = true,
		.hint = -1,
		.rule = "text:rateLimitPatterns[3]",
	},
	{
		.name = "retry 400 next to a 429 status",
		.text = "Error: 400 {\"error\":{\"type\":\"invalid_request_error\"}} then HTTP "
		  "429 Too Many Requests",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "http-status:429",
	},
	{
		.name = "retry internal error words",
		.text = "An internal server error occurred.",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:transientPatterns[0]",
	},
	{
		.name = "retry asks",
		.text = "Please try again later.",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:transientPatterns[1]",
	},
	{
		.name = "retry timeout",
		.text = "Request timed out.",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:transientPatterns[2]",
	},
	{
		.name = "retry etimedout",
		.text = "connect ETIMEDOUT 104.18.6.192:443",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:transientPatterns[3]",
	},
	{
		.name = "retry actively refused",
		.text = "No connection could be made because the target machine actively refuse"
		  "d it.",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:transientPatterns[3]",
	},
	{
		.name = "retry socket closed",
		.text = "The socket connection was closed unexpectedly.",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:transientPatterns[4]",
	},
	{
		.name = "retry claude code connection lost",
		.text = "API Error: Connection to the API was lost (StreamTruncated)",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:transientPatterns[3]",
	},
	{
		.name = "retry gemini cli terminated",
		.text = "[API Error: terminated]",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:transientPatterns[4]",
	},
	{
		.name = "retry stream ended without its end",
		.text = "Error: Stream ended without finish_reason",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:transientPatterns[6]",
	},
	{
		.name = "retry codex reconnecting",
		.text = "Reconnecting... 2/5",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:transientPatterns[5]",
	},
	{
		.name = "retry no unit status",
		.text = "Rate limited: try again in 400ms",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = 400,
		.rule = "text:rateLimitPatterns[0]",
	},
	{
		.name = "retry port is no status",
		.text = "connect ECONNREFUSED 127.0.0.1 port 5003",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:transientPatterns[3]",
	},
	{
		.name = "retry tokens is no status",
		.text = "Too many requests: 500 tokens over the window",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = -1,
		.rule = "text:rateLimitPatterns[1]",
	},
	{
		.name = "retry client countdown",
		.text = "529 Overloaded · Retrying in 4s · attempt 6/10",
		.verdict = CLASSIFY_RETRYABLE,
		.overload = true,
		.hint = -1,
		.rule = "http-status:529",
	},
	{
		.name = "retry short wait",
		.text = "429 Too Many Requests: try again in 14m",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = 840000,
		.rule = "http-status:429",
	},
};

static const struct row long_waits[] = {
	{
		.name = "long wait usage",
		.text = "429 Too Many Requests: try again in 4h12m",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = 15120000,
		.rule = "long-wait>=900000ms:http-status:429",
	},
	{
		.name = "long wait threshold",
		.text = "429 Too Many Requests: try again in 15m",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = 900000,
		.rule = "long-wait>=900000ms:http-status:429",
	},
	{
		.name = "long wait from header",
		.text = "Too Many Requests",
		.status = 429,
		.headers = "{\"retry-after\": \"86400\"}",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = 86400000,
		.rule = "long-wait>=900000ms:http-status:429",
	},
	{
		.name = "a stated short wait alone is retried",
		.text = "Please try again in 20s.",
		.verdict = CLASSIFY_RETRYABLE,
		.hint = 20000,
		.rule = "stated-wait",
	},
	{
		.name = "a stated wait of days alone is a usage limit",
		.text = "You can try again in 4 days 3 hours.",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = 356400000,
		.rule = "long-wait>=900000ms:stated-wait",
	},
	{
		.name = "a client countdown alone is no stated wait",
		.text = "Something broke. Retrying in 4 seconds (attempt 2/10)",
		.verdict = CLASSIFY_UNKNOWN,
		.hint = -1,
		.rule = "default",
	},
};

/* Cases where typed facts, transport failures and the kind of wait meet the
 * wordings (a review of the decision table against provider error shapes). */
static const struct row crossings[] = {
	{ .name = "a 429 beats a weak never-retried word", .verdict = CLASSIFY_RETRYABLE, .hint = -1,
	  .text = "HTTP 429: Too many requests. Your IP address has been temporarily blocked.",
	  .rule = "http-status:429" },
	{ .name = "a transport failure beats a weak never-retried word", .verdict = CLASSIFY_RETRYABLE,
	  .hint = -1, .text = "Failed to refresh token: connect ETIMEDOUT 10.0.0.1:443",
	  .rule = "text:transientPatterns[3]" },
	{ .name = "authentication is never beaten by a 5xx", .verdict = CLASSIFY_NOT_RETRYABLE,
	  .hint = -1, .text = "502 Bad Gateway: invalid api key", .rule = "text:nonRetryablePatterns[1]" },
	{ .name = "a library class name is no transport failure", .verdict = CLASSIFY_NOT_RETRYABLE,
	  .hint = -1, .text = "APIConnectionError: Access denied for this model",
	  .rule = "text:nonRetryablePatterns[2]" },
	{ .name = "the Gemini quota sentence with a short wait is a rate limit",
	  .verdict = CLASSIFY_RETRYABLE, .hint = 37500,
	  .text = "You exceeded your current quota, please check your plan and billing details. "
		  "Please retry in 37.5s.", .rule = "text:rateLimitPatterns[2]" },
	{ .name = "an in-stream error's type decides", .verdict = CLASSIFY_USAGE_LIMIT, .hint = -1,
	  .text = "billing_error: Your account has run out of funds.",
	  .rule = "anthropic-type:billing_error" },
	{ .name = "a 2xx status from the caller leaves the text's", .status = 200,
	  .verdict = CLASSIFY_RETRYABLE, .hint = -1, .text = "upstream said HTTP 429",
	  .rule = "http-status:429" },
	{ .name = "a long maintenance wait on a 503 stays retryable", .status = 503,
	  .headers = "{\"retry-after\": \"3600\"}", .verdict = CLASSIFY_RETRYABLE,
	  .hint = 3600000, .text = "Service Unavailable", .rule = "http-status:503" },
	{ .name = "a bare count in brackets is no status (no 5xx retry), a too-small setting is final",
	  .verdict = CLASSIFY_NOT_RETRYABLE, .hint = -1, .text = "n_batch (512) is too small",
	  .rule = "text:genericNeverPatterns[4]" },
	{ .name = "a status in brackets after error", .verdict = CLASSIFY_RETRYABLE, .hint = -1,
	  .text = "request error (429): slow", .rule = "http-status:429" },
	{ .name = "google-api-core's exception name before the status",
	  .verdict = CLASSIFY_RETRYABLE, .hint = -1,
	  .text = "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for quota metric",
	  .rule = "http-status:429" },
	{ .name = "an HTML page where JSON was expected", .verdict = CLASSIFY_RETRYABLE, .hint = -1,
	  .text = "SyntaxError: Unexpected token '<', \"<!DOCTYPE \"... is not valid JSON",
	  .rule = "text:gatewayPatterns[0]" },
	{ .name = "an empty body where JSON was expected", .verdict = CLASSIFY_RETRYABLE, .hint = -1,
	  .text = "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
	  .rule = "text:gatewayPatterns[0]" },
	{ .name = "an account terminated is not a stream terminated",
	  .verdict = CLASSIFY_NOT_RETRYABLE, .hint = -1,
	  .text = "Your account has been terminated for violating our policies.", .rule = "text:nonRetryablePatterns[9]" },
	{ .name = "undici's bare terminated", .verdict = CLASSIFY_RETRYABLE, .hint = -1,
	  .text = "TypeError: terminated", .rule = "text:transientPatterns[4]" },
	{ .name = "AWS Rate exceeded", .verdict = CLASSIFY_RETRYABLE, .hint = -1,
	  .text = "ThrottledError: Rate exceeded.", .rule = "text:rateLimitPatterns[1]" },
	{ .name = "HTTP/2 GOAWAY", .verdict = CLASSIFY_RETRYABLE, .hint = -1,
	  .text = "http2: server sent GOAWAY and closed the connection",
	  .rule = "text:transientPatterns[4]" },
	{ .name = "a model still loading, with its estimated time", .verdict = CLASSIFY_RETRYABLE,
	  .hint = 20000, .text = "{\"error\":\"Model x/y is currently loading\",\"estimated_time\":20.0}",
	  .rule = "text:transientPatterns[0]" },
	{ .name = "a spent quota's wait ignores the per-minute bucket", .status = 429,
	  .body = "{\"error\":{\"code\":\"insufficient_quota\",\"message\":\"x\"}}",
	  .headers = "{\"x-ratelimit-remaining-requests\": \"0\", \"x-ratelimit-reset-requests\": \"8s\"}",
	  .verdict = CLASSIFY_USAGE_LIMIT, .hint = -1, .text = "Too Many Requests",
	  .rule = "openai-code:insufficient_quota" },
	{ .name = "rate-limit state headers alone are no stated wait", .verdict = CLASSIFY_UNKNOWN,
	  .headers = "{\"x-ratelimit-remaining-tokens\": \"10\", \"x-ratelimit-reset-tokens\": \"6m0s\"}",
	  .hint = -1, .text = "Unhandled stop reason: foo", .rule = "default" },
};

static const struct row step5_else[] = {
	{
		.name = "bad mutes timeout",
		.text = "400 Bad Request: read timeout in field",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "http-status:400",
	},
	{
		.name = "else status 400",
		.text = "Bad Request",
		.status = 400,
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "http-status:400",
	},
	{
		.name = "else typed invalid_request",
		.text = "error",
		.body = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"me"
		  "ssage\":\"max_tokens: too big\"}}",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "anthropic-type:invalid_request_error",
	},
	{
		.name = "else text bad request",
		.text = "malformed JSON in request",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "text:badRequestPatterns[0]",
	},
	{
		.name = "else 501",
		.text = "501 Not Implemented",
		.verdict = CLASSIFY_NOT_RETRYABLE,
		.hint = -1,
		.rule = "http-status:501",
	},
	{
		.name = "else default",
		.text = "the model produced something odd",
		.verdict = CLASSIFY_UNKNOWN,
		.hint = -1,
		.rule = "default",
	},
	{
		.name = "else empty",
		.text = "",
		.verdict = CLASSIFY_UNKNOWN,
		.hint = -1,
		.rule = "default",
	},
};

START_TEST(test_step1_context_overflow_decides_first)
{
	check_row(cls, &step1_overflow[_i]);
}
END_TEST

START_TEST(test_step2_spent_quota_credit_or_billing_is_a_usage_limit)
{
	check_row(cls, &step2_usage[_i]);
}
END_TEST

START_TEST(test_per_minute_quota_is_a_rate_limit_per_day_a_usage_limit)
{
	check_row(cls, &quota_windows[_i]);
}
END_TEST

START_TEST(test_step3_auth_permission_policy_are_never_retried)
{
	check_row(cls, &step3_never[_i]);
}
END_TEST

START_TEST(test_step4_rate_limit_overload_5xx_transport_are_retried)
{
	check_row(cls, &step4_retry[_i]);
}
END_TEST

START_TEST(test_a_stated_wait_of_15_minutes_or_more_is_a_usage_limit)
{
	check_row(cls, &long_waits[_i]);
}
END_TEST

START_TEST(test_typed_facts_transport_and_wait_kinds_meet_the_wordings)
{
	check_row(cls, &crossings[_i]);
}
END_TEST

START_TEST(test_step5_anything_else_is_not_retried_and_named)
{
	check_row(cls, &step5_else[_i]);
}
END_TEST

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

static void check_text(struct classify *c, const char *text, enum classify_verdict verdict,
		       bool overload, const char *rule)
{
	const struct row r = { .name = text, .text = text, .verdict = verdict,
			       .overload = overload, .hint = -1, .rule = rule };

	check_row(c, &r);
}

START_TEST(test_settings_lists_extend_their_step_and_are_checked_first)
{
	struct classify *c = classify_from("{\"retryablePatterns\":[\"flaky\", \"k(iw)+i\"],"
					   "\"nonRetryablePatterns\":[\"fatal\"],"
					   "\"contextOverflowPatterns\":[\"too big\"],"
					   "\"usageLimitPatterns\":[\"broke\"],"
					   "\"overloadPatterns\":[\"swamped\"],"
					   "\"maxRetries\": 3}");

	check_text(c, "flaky", CLASSIFY_RETRYABLE, false, "settings:retryablePatterns[0]");
	check_text(c, "KIWIWI", CLASSIFY_RETRYABLE, false, "settings:retryablePatterns[1]");
	/* Before the built-in rules of the step, even a status. */
	check_text(c, "HTTP 429 flaky", CLASSIFY_RETRYABLE, false, "settings:retryablePatterns[0]");
	/* A settings list does not lift its text out of an earlier step. */
	check_text(c, "flaky fatal", CLASSIFY_NOT_RETRYABLE, false, "settings:nonRetryablePatterns[0]");
	check_text(c, "401 fatal", CLASSIFY_NOT_RETRYABLE, false, "settings:nonRetryablePatterns[0]");
	check_text(c, "flaky fatal too big", CLASSIFY_CONTEXT_OVERFLOW, false,
		   "settings:contextOverflowPatterns[0]");
	check_text(c, "broke, try again later", CLASSIFY_USAGE_LIMIT, false,
		   "settings:usageLimitPatterns[0]");
	/* An overload pattern is retried and counts as overload. */
	check_text(c, "swamped", CLASSIFY_RETRYABLE, true, "settings:overloadPatterns[0]");
	check_text(c, "HTTP 429: swamped", CLASSIFY_RETRYABLE, true, "settings:overloadPatterns[0]");
	/* A settings retryable pattern is not muted by a bad request. */
	check_text(c, "400 Bad Request: flaky", CLASSIFY_RETRYABLE, false,
		   "settings:retryablePatterns[0]");
	/* The built-in patterns stay. */
	check_text(c, "prompt is too long", CLASSIFY_CONTEXT_OVERFLOW, false,
		   "text:contextOverflowPatterns[0]");
	check_text(c, "503 Service Unavailable", CLASSIFY_RETRYABLE, false, "http-status:503");
	classify_free(c);
}
END_TEST

START_TEST(test_defaults_are_five_empty_settings_lists)
{
	static const char *const keys[] = {
		"retryablePatterns", "nonRetryablePatterns", "contextOverflowPatterns",
		"usageLimitPatterns", "overloadPatterns",
	};
	json_t *a = classify_defaults();
	json_t *b = classify_defaults();
	char err[256] = "";
	struct classify *c;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_ne(a, b);
	ck_assert_uint_eq(json_object_size(a), NELEMS(keys));
	for (size_t k = 0; k < NELEMS(keys); k++) {
		json_t *list = json_object_get(a, keys[k]);

		ck_assert_msg(json_is_array(list) && json_array_size(list) == 0, "%s", keys[k]);
	}
	ck_assert(json_equal(a, b));
	/* Passed back in, they behave as no settings at all. */
	c = classify_new(a, err, sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	check_text(c, "503 Service Unavailable", CLASSIFY_RETRYABLE, false, "http-status:503");
	check_text(c, "port 5003", CLASSIFY_UNKNOWN, false, "default");
	classify_free(c);
	json_decref(a);
	json_decref(b);
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
	expect_new_error("{\"overloadPatterns\": [\"(\"]}",
			 "retry.overloadPatterns[0] \"(\": missing closing parenthesis at offset 1");
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

/* The old entry points, for the text alone. */
START_TEST(test_old_entry_points_wrap_the_decision)
{
	static const char usage[] = "You've hit your usage limit. Upgrade to Pro";

	ck_assert_int_eq(classify_error(cls, "503 Service Unavailable", 23), CLASSIFY_RETRYABLE);
	ck_assert_int_eq(classify_error(cls, "401 Unauthorized", 16), CLASSIFY_NOT_RETRYABLE);
	ck_assert_int_eq(classify_error(cls, "prompt is too long", 18), CLASSIFY_CONTEXT_OVERFLOW);
	/* A usage limit is not retryable as such: it switches or stops. */
	ck_assert_int_eq(classify_error(cls, usage, strlen(usage)), CLASSIFY_USAGE_LIMIT);
	ck_assert(classify_is_usage_limit(cls, usage, strlen(usage)));
	ck_assert(!classify_is_usage_limit(cls, "429 Rate limit reached", 22));
	ck_assert(classify_is_overload(cls, "overloaded_error: Overloaded", 28));
	ck_assert(classify_is_overload(cls, "529 {\"type\":\"error\"}", 20));
	/* A rate limit is not an overload of the model, nor is 503 alone. */
	ck_assert(!classify_is_overload(cls, "429 Rate limit reached", 22));
	ck_assert(!classify_is_overload(cls, "503 Service Unavailable", 23));
	/* Overload only on a retryable verdict. */
	ck_assert(!classify_is_overload(cls, "overloaded, but your invalid_api_key", 36));
}
END_TEST

/* The generic words of eight languages and the Chinese providers' own
 * (docs/errors/local.md, china.md): balance, rate and concurrency, too
 * long, network, a refused key. Caseless beyond ASCII (Cyrillic capitals). */
START_TEST(test_other_languages_are_judged_by_their_own_words)
{
	static const struct { const char *lang, *text; enum classify_verdict verdict; } rows[] = {
		{ "zh", "您的账户已欠费，请充值后重试", CLASSIFY_USAGE_LIMIT },
		{ "zh", "您当前使用该 API 的并发数过高，请降低并发", CLASSIFY_RETRYABLE },
		{ "zh", "上下文长度超出模型限制", CLASSIFY_CONTEXT_OVERFLOW },
		{ "zh", "网络连接超时，请稍后再试", CLASSIFY_RETRYABLE },
		{ "zh", "API Key 无效，鉴权失败", CLASSIFY_NOT_RETRYABLE },
		{ "ja", "クレジット残高が不足しています", CLASSIFY_USAGE_LIMIT },
		{ "ja", "リクエストが多すぎます。しばらくしてから再試行してください", CLASSIFY_RETRYABLE },
		{ "ja", "入力がコンテキスト長を超えています", CLASSIFY_CONTEXT_OVERFLOW },
		{ "ja", "ネットワーク接続がタイムアウトしました", CLASSIFY_RETRYABLE },
		{ "ja", "APIキーが無効です", CLASSIFY_NOT_RETRYABLE },
		{ "ko", "계정 잔액이 부족합니다", CLASSIFY_USAGE_LIMIT },
		{ "ko", "요청이 너무 많습니다. 잠시 후 다시 시도해 주세요", CLASSIFY_RETRYABLE },
		{ "ko", "컨텍스트 길이가 모델의 제한을 초과했습니다", CLASSIFY_CONTEXT_OVERFLOW },
		{ "ko", "네트워크 연결 오류", CLASSIFY_RETRYABLE },
		{ "ko", "API 키가 유효하지 않습니다", CLASSIFY_NOT_RETRYABLE },
		{ "ru", "Недостаточно средств на балансе аккаунта", CLASSIFY_USAGE_LIMIT },
		{ "ru", "Слишком много запросов, повторите попытку позже", CLASSIFY_RETRYABLE },
		{ "ru", "Запрос превышает допустимую длину модели", CLASSIFY_CONTEXT_OVERFLOW },
		{ "ru", "Ошибка сетевого подключения", CLASSIFY_RETRYABLE },
		{ "ru", "Неверный API-ключ", CLASSIFY_NOT_RETRYABLE },
		{ "es", "Saldo insuficiente en su cuenta", CLASSIFY_USAGE_LIMIT },
		{ "es", "Demasiadas solicitudes. Inténtelo de nuevo más tarde", CLASSIFY_RETRYABLE },
		{ "es", "El mensaje excede el límite del modelo de longitud", CLASSIFY_CONTEXT_OVERFLOW },
		{ "es", "Error de conexión de red", CLASSIFY_RETRYABLE },
		{ "es", "Clave de API no válida", CLASSIFY_NOT_RETRYABLE },
		{ "pt", "Saldo da conta insuficiente", CLASSIFY_USAGE_LIMIT },
		{ "pt", "Muitas requisições, tente novamente mais tarde", CLASSIFY_RETRYABLE },
		{ "pt", "A mensagem excede o comprimento que o modelo pode processar", CLASSIFY_CONTEXT_OVERFLOW },
		{ "pt", "Falha na conexão de rede", CLASSIFY_RETRYABLE },
		{ "pt", "Chave de API inválida", CLASSIFY_NOT_RETRYABLE },
		{ "de", "Ihr Guthaben reicht nicht aus", CLASSIFY_USAGE_LIMIT },
		{ "de", "Zu viele Anfragen, versuchen Sie es später erneut", CLASSIFY_RETRYABLE },
		{ "de", "Die Eingabe überschreitet die von dem Modell verarbeitbare Länge", CLASSIFY_CONTEXT_OVERFLOW },
		{ "de", "Zeitüberschreitung der Netzwerkverbindung", CLASSIFY_RETRYABLE },
		{ "de", "Ungültiger API-Schlüssel", CLASSIFY_NOT_RETRYABLE },
		{ "fr", "Le solde de votre compte est insuffisant", CLASSIFY_USAGE_LIMIT },
		{ "fr", "Trop de requêtes, veuillez réessayer plus tard", CLASSIFY_RETRYABLE },
		{ "fr", "Le message dépasse la longueur que le modèle peut traiter", CLASSIFY_CONTEXT_OVERFLOW },
		{ "fr", "Erreur de connexion réseau", CLASSIFY_RETRYABLE },
		{ "fr", "Clé API invalide", CLASSIFY_NOT_RETRYABLE },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct classify_input in = { .text = rows[i].text, .len = strlen(rows[i].text) };
		struct classify_result out;

		classify_decide(cls, &in, &out);
		ck_assert_msg(out.verdict == rows[i].verdict, "%s: %s: %s, not %s (rule %s)",
			      rows[i].lang, rows[i].text, classify_class_name(out.verdict),
			      classify_class_name(rows[i].verdict), out.rule);
	}
}
END_TEST

/* Non-ASCII words in a JSON body come escaped; a business code in a body
 * beats the status it came with. */
START_TEST(test_escaped_words_and_business_codes_decide_over_the_status)
{
	struct classify_input in = { .text = "429 Too Many Requests", .len = 21, .status = 429 };
	struct classify_result out;
	static const char zhipu[] = "{\"error\":{\"code\":\"1113\",\"message\":"
				    "\"\\u4f59\\u989d\\u4e0d\\u8db3\"}}";
	static const char minimax[] = "{\"base_resp\":{\"status_code\":1008,"
				      "\"status_msg\":\"insufficient balance\"}}";

	in.body = zhipu;
	in.body_len = strlen(zhipu);
	classify_decide(cls, &in, &out);
	ck_assert_str_eq(classify_class_name(out.verdict), "usage_limit");
	in.text = "Internal Server Error";
	in.len = strlen(in.text);
	in.status = 500;
	in.body = minimax;
	in.body_len = strlen(minimax);
	classify_decide(cls, &in, &out);
	ck_assert_str_eq(classify_class_name(out.verdict), "usage_limit");
	/* The escaped Chinese alone, without the code, is read as words. */
	{
		static const char escaped[] = "{\"message\":\"\\u5e76\\u53d1\\u6570\\u8fc7\\u9ad8\"}";

		ck_assert_int_eq(classify_error(cls, escaped, strlen(escaped)), CLASSIFY_RETRYABLE);
	}
}
END_TEST


START_TEST(test_a_message_no_rule_knows_or_an_empty_one_is_unknown)
{
	ck_assert_int_eq(classify_error(cls, "the model produced something odd", 32),
			 CLASSIFY_UNKNOWN);
	ck_assert_int_eq(classify_error(cls, "", 0), CLASSIFY_UNKNOWN);
	ck_assert_int_eq(classify_error(cls, NULL, 0), CLASSIFY_UNKNOWN);
	ck_assert(!classify_is_usage_limit(cls, NULL, 0));
	ck_assert(!classify_is_overload(cls, NULL, 0));
}
END_TEST

START_TEST(test_matching_ignores_case)
{
	check_text(cls, "SERVICE UNAVAILABLE", CLASSIFY_RETRYABLE, false, "text:transientPatterns[0]");
	check_text(cls, "Fetch Failed", CLASSIFY_RETRYABLE, false, "text:transientPatterns[3]");
	check_text(cls, "PROMPT IS TOO LONG", CLASSIFY_CONTEXT_OVERFLOW, false,
		   "text:contextOverflowPatterns[0]");
	check_text(cls, "QUOTA_EXCEEDED", CLASSIFY_USAGE_LIMIT, false, "copilot-code:quota_exceeded");
	check_text(cls, "{\"TYPE\": \"OVERLOADED_ERROR\"}", CLASSIFY_RETRYABLE, true,
		   "anthropic-type:overloaded_error");
}
END_TEST

START_TEST(test_caller_status_is_the_only_status)
{
	const struct row with = { .name = "status 503 given", .text = "HTTP 401", .status = 503,
				  .verdict = CLASSIFY_RETRYABLE, .hint = -1,
				  .rule = "http-status:503" };
	/* Outside 100-599 it is no status: the text's count. */
	const struct row bogus = { .name = "status 600 given", .text = "HTTP 401", .status = 600,
				   .verdict = CLASSIFY_NOT_RETRYABLE, .hint = -1,
				   .rule = "http-status:401" };

	check_row(cls, &with);
	check_row(cls, &bogus);
}
END_TEST

START_TEST(test_json_escaped_in_json_is_read_as_json)
{
	check_text(cls, "Error: {\\\"error\\\":{\\\"type\\\":\\\"overloaded_error\\\"}}",
		   CLASSIFY_RETRYABLE, true, "anthropic-type:overloaded_error");
	check_text(cls, "line one\\nHTTP 503\\tx", CLASSIFY_RETRYABLE, false, "http-status:503");
}
END_TEST

START_TEST(test_message_length_is_honoured_without_nul)
{
	static const char text[] = "HTTP 5031 terminated";
	char *buf;

	/* "HTTP 503" — the lookahead sees the end, not the '1'. */
	ck_assert_int_eq(classify_error(cls, text, 8), CLASSIFY_RETRYABLE);
	/* "HTTP 5031 term" */
	ck_assert_int_eq(classify_error(cls, text, 14), CLASSIFY_UNKNOWN);
	ck_assert_int_eq(classify_error(cls, text, 0), CLASSIFY_UNKNOWN);

	/* An exact-size heap copy: ASan catches any read past the end. */
	buf = malloc(10);
	ck_assert_ptr_nonnull(buf);
	memcpy(buf, "terminated", 10);
	ck_assert_int_eq(classify_error(cls, buf, 10), CLASSIFY_RETRYABLE);
	ck_assert_int_eq(classify_error(cls, buf, 9), CLASSIFY_UNKNOWN);
	memcpy(buf, "usage_limi", 10);
	ck_assert(!classify_is_usage_limit(cls, buf, 10));
	free(buf);
}
END_TEST

START_TEST(test_body_is_read_after_the_message)
{
	const struct row r = {
		.name = "body only",
		.text = "request failed",
		.body = "{\"error\":{\"code\":\"insufficient_quota\"}}",
		.verdict = CLASSIFY_USAGE_LIMIT,
		.hint = -1,
		.rule = "openai-code:insufficient_quota",
	};
	struct classify_input in = { .text = "Service", .len = 7, .body = "Unavailable",
				     .body_len = 11 };
	struct classify_result out;

	check_row(cls, &r);
	/* Message and body are separate words. */
	classify_decide(cls, &in, &out);
	ck_assert_str_eq(out.rule, "text:transientPatterns[0]");
	in.text = "Service Un";
	in.len = 10;
	in.body = "available";
	in.body_len = 9;
	classify_decide(cls, &in, &out);
	ck_assert_str_eq(out.rule, "default");
}
END_TEST

START_TEST(test_embedded_nul_does_not_end_the_message)
{
	static const char after_nul[] = "error\0\0503 Service Unavailable";
	static const char split[] = "fetch\0failed";

	ck_assert_int_eq(classify_error(cls, after_nul, sizeof(after_nul) - 1),
			 CLASSIFY_RETRYABLE);
	/* A NUL is a character, not a space. */
	ck_assert_int_eq(classify_error(cls, split, sizeof(split) - 1), CLASSIFY_UNKNOWN);
}
END_TEST

START_TEST(test_invalid_utf8_message_is_still_classified)
{
	static const char bad[] = "\xff\xfe\xc3 503 Service Unavailable \xe2\x82";

	ck_assert_int_eq(classify_error(cls, bad, sizeof(bad) - 1), CLASSIFY_RETRYABLE);
	check_text(cls, "Überlastet — overloaded", CLASSIFY_RETRYABLE, true,
		   "text:rateLimitPatterns[3]");
	/* A leading status after a multi-byte sign (PCRE2 10.42's JIT missed
	 * it in invalid-UTF mode). */
	check_text(cls, "✻ 529 Overloade", CLASSIFY_RETRYABLE, true, "http-status:529");
}
END_TEST

START_TEST(test_only_the_first_64_kib_are_read)
{
	size_t n = 70 * 1024;
	char *big = malloc(n);
	struct classify_input in = { .text = big, .len = n };
	struct classify_result out;

	ck_assert_ptr_nonnull(big);
	memset(big, 'x', n);
	memcpy(big, "HTTP 503 ", 9);
	memcpy(big + n - 19, " prompt is too long", 19);
	classify_decide(cls, &in, &out);
	ck_assert_str_eq(out.rule, "http-status:503");
	/* A body past the cap is not read either. */
	in.text = "ok";
	in.len = 2;
	in.body = big;
	in.body_len = n;
	classify_decide(cls, &in, &out);
	ck_assert_str_eq(out.rule, "http-status:503");
	free(big);
}
END_TEST

START_TEST(test_free_null_is_a_no_op)
{
	classify_free(NULL);
}
END_TEST

START_TEST(test_verdict_and_class_names)
{
	ck_assert_str_eq(classify_verdict_name(CLASSIFY_RETRYABLE), "retryable");
	ck_assert_str_eq(classify_verdict_name(CLASSIFY_NOT_RETRYABLE), "not-retryable");
	ck_assert_str_eq(classify_verdict_name(CLASSIFY_CONTEXT_OVERFLOW), "context-overflow");
	ck_assert_str_eq(classify_verdict_name(CLASSIFY_USAGE_LIMIT), "usage-limit");
	ck_assert_str_eq(classify_class_name(CLASSIFY_RETRYABLE), "retryable");
	ck_assert_str_eq(classify_class_name(CLASSIFY_NOT_RETRYABLE), "non_retryable");
	ck_assert_str_eq(classify_class_name(CLASSIFY_CONTEXT_OVERFLOW), "context_overflow");
	ck_assert_str_eq(classify_class_name(CLASSIFY_USAGE_LIMIT), "usage_limit");
}
END_TEST

/* A generic word that also names a setting, a document or a window does not
 * decide as that word alone: a load balancer is no balance, a link to the
 * usage-limits page next to a 429 is no spent plan, a token limit of this
 * minute is no overflow, a network or connection setting that is invalid
 * and a feature withheld from free accounts are final, and a wait too long
 * is a slow server. */
START_TEST(test_a_generic_word_naming_a_setting_or_a_window_does_not_decide_alone)
{
	static const struct { const char *text; enum classify_verdict verdict; } rows[] = {
		{ "Ошибка балансировщика нагрузки, повторите позже", CLASSIFY_RETRYABLE },
		{ "429 Too Many Requests: you exceeded the rate limit, see our usage limits documentation",
		  CLASSIFY_RETRYABLE },
		{ "Request exceeds the token limit for this minute", CLASSIFY_RETRYABLE },
		{ "This feature is unavailable for free accounts", CLASSIFY_NOT_RETRYABLE },
		{ "Invalid network configuration: proxy URL must use http or https", CLASSIFY_NOT_RETRYABLE },
		{ "The connection string is invalid", CLASSIFY_NOT_RETRYABLE },
		{ "Gateway rejected the request: unknown route /v2/chat", CLASSIFY_NOT_RETRYABLE },
		{ "El tiempo de respuesta fue demasiado largo", CLASSIFY_RETRYABLE },
		{ "Die Wartezeit war zu lang", CLASSIFY_RETRYABLE },
		{ "Le temps d'attente est trop long", CLASSIFY_RETRYABLE },
		{ "The response was too long to parse, connection reset", CLASSIFY_RETRYABLE },
		{ "This request exceeds the model's token limit of 8192", CLASSIFY_CONTEXT_OVERFLOW },
		{ "You have reached your daily token limit", CLASSIFY_USAGE_LIMIT },
		{ "Bad gateway from the upstream connection", CLASSIFY_RETRYABLE },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		enum classify_verdict got = classify_error(cls, rows[i].text, strlen(rows[i].text));

		ck_assert_msg(got == rows[i].verdict, "%s: %s, not %s", rows[i].text,
			      classify_class_name(got), classify_class_name(rows[i].verdict));
	}
}
END_TEST

/* A server's "retrying will not help" decides by itself, and a plan word
 * decides only against a bare transient word it muted; each names its rule.
 * A typed 503 and "temporarily" still win: the clause mutes words, not
 * evidence. */
START_TEST(test_a_permanent_clause_outweighs_a_bare_transient_word_and_names_its_rule)
{
	check_text(cls, "Do not retry this request.", CLASSIFY_NOT_RETRYABLE, false,
		   "text:noRetryPatterns[0]");
	check_text(cls, "Service unavailable; retrying won't help", CLASSIFY_NOT_RETRYABLE, false,
		   "text:noRetryPatterns[0]");
	check_text(cls, "Server busy, no point in retrying: the model was retired", CLASSIFY_NOT_RETRYABLE,
		   false, "text:noRetryPatterns[0]");
	check_text(cls, "Gateway busy: this model is not included in your plan", CLASSIFY_NOT_RETRYABLE,
		   false, "text:noRetryPatterns[2]");
	check_text(cls, "该模型在您的套餐中不可用，请勿重试", CLASSIFY_NOT_RETRYABLE, false,
		   "text:noRetryPatterns[1]");
	check_text(cls, "Service temporarily down for maintenance on your plan's cluster",
		   CLASSIFY_RETRYABLE, false, "text:transientPatterns[18]");
	check_text(cls, "Your current plan: network unavailable temporarily", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[24]");
	check_text(cls, "HTTP 503: Service unavailable on your plan", CLASSIFY_RETRYABLE, false,
		   "http-status:503");
	check_text(cls, "Service unavailable", CLASSIFY_RETRYABLE, false, "text:transientPatterns[0]");
	check_text(cls, "Network unreachable? Your plan: Pro", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[24]");
	check_text(cls, "Your plan: Pro", CLASSIFY_UNKNOWN, false, "default");
}
END_TEST

/* Documented values no row read before, and one status two providers read
 * two ways (498: Groq's flex tier at capacity, Cohere's unsafe request, so
 * its words decide), Together's context rule sent as a 403, Cohere's
 * token excess and its trial key's monthly and per-minute caps, OpenRouter's
 * "no available model provider", Gemini's NOT_FOUND and DEADLINE_EXCEEDED
 * descriptions, DeepSeek's "Authentication Fails", undici's header overflow. */
START_TEST(test_documented_codes_of_the_provider_references_get_their_documented_verdict)
{
	check_text(cls, "Error code: 498 - {'error': {'message': 'Flex tier capacity exceeded', "
		   "'code': 'capacity_exceeded'}}", CLASSIFY_RETRYABLE, true, "openai-code:capacity_exceeded");
	check_text(cls, "498 Unsafe Request: the request was blocked", CLASSIFY_NOT_RETRYABLE, false,
		   "text:nonRetryablePatterns[6]");
	check_text(cls, "Input token count + max_tokens parameter must be less than the context length "
		   "of the model being queried.", CLASSIFY_CONTEXT_OVERFLOW, false,
		   "text:contextOverflowPatterns[22]");
	check_text(cls, "too many tokens: size limit exceeded by 1216 tokens. Try using a shorter or "
		   "smaller input", CLASSIFY_CONTEXT_OVERFLOW, false, "text:contextOverflowPatterns[22]");
	check_text(cls, "Trial key limited to 1000 API calls / month", CLASSIFY_USAGE_LIMIT, false,
		   "text:usageLimitPatterns[19]");
	check_text(cls, "Trial key limited to 20 requests / minute", CLASSIFY_RETRYABLE, false,
		   "text:rateLimitPatterns[13]");
	check_text(cls, "There is no available model provider that meets your routing requirements",
		   CLASSIFY_RETRYABLE, false, "text:gatewayPatterns[4]");
	check_text(cls, "The requested resource wasn't found.", CLASSIFY_NOT_RETRYABLE, false,
		   "text:genericNeverPatterns[6]");
	check_text(cls, "Your prompt (or context) is too large to be processed in time.",
		   CLASSIFY_RETRYABLE, false, "text:transientPatterns[26]");
	check_text(cls, "Authentication Fails", CLASSIFY_NOT_RETRYABLE, false,
		   "text:nonRetryablePatterns[1]");
	check_text(cls, "UND_ERR_HEADERS_OVERFLOW", CLASSIFY_NOT_RETRYABLE, false,
		   "text:nonRetryablePatterns[13]");
	check_text(cls, "UND_ERR_SOCKET: other side closed", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[3]");
	check_text(cls, "{\"type\":\"error\",\"error\":{\"type\":\"conflict_error\"}}",
		   CLASSIFY_RETRYABLE, false, "anthropic-type:conflict_error");
	check_text(cls, "{\"error\":\"Incomplete generation\",\"error_type\":\"incomplete_generation\"}",
		   CLASSIFY_RETRYABLE, false, "tgi-type:incomplete_generation");
	check_text(cls, "{\"error\":{\"message\":\"Loading model\",\"type\":\"unavailable_error\"}}",
		   CLASSIFY_RETRYABLE, false, "llamacpp-type:unavailable_error");
	check_text(cls, "{\"code\":\"InputImageSensitiveContentDetected\"}", CLASSIFY_NOT_RETRYABLE,
		   false, "volcengine-code:InputImageSensitiveContentDetected");
	check_text(cls, "{\"code\":\"unknown_model\"}", CLASSIFY_NOT_RETRYABLE, false,
		   "mistral-code:unknown_model");
	check_text(cls, "reason: backendError", CLASSIFY_RETRYABLE, false,
		   "google-reason-text:backendError");
}
END_TEST

/* Shapes any provider may word this way: a conversation out of order, no
 * endpoint for what was asked, a validator's missing field and a Go TLS
 * certificate error are final; a deadline in words and a model that
 * produced an invalid answer are retried. */
START_TEST(test_an_out_of_order_turn_or_a_missing_field_is_final_a_deadline_in_words_is_not)
{
	check_text(cls, "Please ensure that multiturn requests alternate between user and model.",
		   CLASSIFY_NOT_RETRYABLE, false, "text:genericNeverPatterns[7]");
	check_text(cls, "No endpoints found that support tool use.", CLASSIFY_NOT_RETRYABLE, false,
		   "text:genericNeverPatterns[7]");
	check_text(cls, "{\"detail\":[{\"type\":\"missing\",\"msg\":\"Field required\"}]}",
		   CLASSIFY_NOT_RETRYABLE, false, "text:genericNeverPatterns[7]");
	check_text(cls, "x509: certificate signed by unknown authority", CLASSIFY_NOT_RETRYABLE, false,
		   "text:nonRetryablePatterns[7]");
	check_text(cls, "Operation could not be completed within the specified time.", CLASSIFY_RETRYABLE,
		   false, "text:transientPatterns[26]");
	check_text(cls, "The model produced invalid content. Consider modifying your prompt.",
		   CLASSIFY_RETRYABLE, false, "text:transientPatterns[26]");
	check_text(cls, "model 'llama3' is loading", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[27]");
	check_text(cls, "error loading model: unknown model architecture", CLASSIFY_NOT_RETRYABLE, false,
		   "text:nonRetryablePatterns[4]");
	check_text(cls, "You didn't provide an API key.", CLASSIFY_NOT_RETRYABLE, false,
		   "text:nonRetryablePatterns[15]");
	check_text(cls, "Please set your OPENAI_API_KEY environment variable", CLASSIFY_NOT_RETRYABLE,
		   false, "text:nonRetryablePatterns[15]");
	check_text(cls, "You have reached your request limit for the hour", CLASSIFY_USAGE_LIMIT, false,
		   "text:usageLimitPatterns[20]");
	check_text(cls, "429 Too many requests: email ops@example.io to continue using the API",
		   CLASSIFY_USAGE_LIMIT, false, "text:usageLimitPatterns[20]");
	check_text(cls, "Rate limit of 60 requests per minute exceeded, contact support to continue",
		   CLASSIFY_RETRYABLE, false, "text:rateLimitPatterns[0]");
	check_text(cls, "You have exceeded your monthly included premium requests.", CLASSIFY_USAGE_LIMIT,
		   false, "text:usageLimitPatterns[20]");
	check_text(cls, "The API deployment for this resource does not exist. If you created the "
		   "deployment within the last 5 minutes, please wait a moment and try again.",
		   CLASSIFY_NOT_RETRYABLE, false, "text:nonRetryablePatterns[21]");
	check_text(cls, "Unable to find the model 'gpt-7'", CLASSIFY_NOT_RETRYABLE, false,
		   "text:nonRetryablePatterns[21]");
	check_text(cls, "HTTP 503: Unable to access the model endpoint, please try again later",
		   CLASSIFY_RETRYABLE, false, "http-status:503");
	check_text(cls, "Error: model's context window is 4096 tokens, but the prompt has 5000 tokens",
		   CLASSIFY_CONTEXT_OVERFLOW, false, "text:contextOverflowPatterns[23]");
	check_text(cls, "500 {\"error\":\"input tokens (140000) exceed model limit (131072)\"}",
		   CLASSIFY_CONTEXT_OVERFLOW, false, "text:contextOverflowPatterns[23]");
	check_text(cls, "Sequence length 9000 is longer than the specified maximum sequence length",
		   CLASSIFY_CONTEXT_OVERFLOW, false, "text:contextOverflowPatterns[23]");
	check_text(cls, "Request exceeds the maximum number of tokens allowed per minute",
		   CLASSIFY_RETRYABLE, false, "text:rateLimitPatterns[12]");
	check_text(cls, "The model's response ended abruptly", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[28]");
	check_text(cls, "No content returned by the model", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[28]");
	check_text(cls, "Empty message content is not allowed", CLASSIFY_NOT_RETRYABLE, false,
		   "text:genericNeverPatterns[0]");
	check_text(cls, "Your credits have run out", CLASSIFY_USAGE_LIMIT, false,
		   "text:usageLimitPatterns[21]");
	check_text(cls, "Your organization has reached its usage cap", CLASSIFY_USAGE_LIMIT, false,
		   "text:usageLimitPatterns[21]");
	/* no signal at all stays unknown */
	check_text(cls, "An error occurred", CLASSIFY_UNKNOWN, false, "default");
	check_text(cls, "[object Object]", CLASSIFY_UNKNOWN, false, "default");
}
END_TEST

/* A local server that unloaded or evicted the model (LM Studio's idle TTL and
 * Auto-Evict) loads it again on the next request; a server with no model loaded
 * at all, or one that cannot load it, is not mended by a retry. */
START_TEST(test_a_model_unloaded_under_the_request_is_retried_none_loaded_is_final)
{
	check_text(cls, "Error in RPC handler: Error: Model is unloaded.", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[27]");
	check_text(cls, "the model was evicted to make room for another", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[27]");
	check_text(cls, "No models loaded. Please load a model in the developer page.",
		   CLASSIFY_NOT_RETRYABLE, false, "text:genericNeverPatterns[4]");
	check_text(cls, "This model is unloaded on your plan; retrying won't help",
		   CLASSIFY_NOT_RETRYABLE, false, "text:noRetryPatterns[0]");
}
END_TEST

/* A max-tokens setting above the model's output cap (Bedrock's and Anthropic's
 * documented wordings) fails the same way on every retry; a prompt and its
 * max_tokens over the context window is still an overflow, and a 429 still wins. */
START_TEST(test_a_max_tokens_setting_above_the_output_cap_is_final_not_an_overflow)
{
	check_text(cls, "The maximum tokens you requested exceeds the model limit of 4096. Try again "
		   "with a maximum tokens value lower than 4096.", CLASSIFY_NOT_RETRYABLE, false,
		   "text:nonRetryablePatterns[5]");
	check_text(cls, "max_tokens: 100000 > 64000, which is the maximum allowed number of output "
		   "tokens for claude-opus-4", CLASSIFY_NOT_RETRYABLE, false,
		   "text:nonRetryablePatterns[5]");
	check_text(cls, "input length and max_tokens exceed context limit: 90402 + 116650 > 204648",
		   CLASSIFY_CONTEXT_OVERFLOW, false, "text:contextOverflowPatterns[3]");
	check_text(cls, "429 The maximum tokens you requested exceeds the model limit of 4096",
		   CLASSIFY_RETRYABLE, false, "http-status:429");
}
END_TEST

/* One verdict per fact: a provider's snake-case code decides the same way
 * bare, after a status, in a sentence or as a key/value; a per-minute window
 * named beside a quota code still keeps it a rate limit, and a snake-case
 * word that is a parameter or a path (max_tokens, docs#insufficient_quota
 * links) is no code. */
START_TEST(test_a_bare_provider_code_gets_the_verdict_of_its_key_value)
{
	check_text(cls, "insufficient_quota", CLASSIFY_USAGE_LIMIT, false,
		   "openai-code:insufficient_quota");
	check_text(cls, "429 insufficient_quota", CLASSIFY_USAGE_LIMIT, false,
		   "openai-code:insufficient_quota");
	check_text(cls, "{\"code\":\"insufficient_quota\"}", CLASSIFY_USAGE_LIMIT, false,
		   "openai-code:insufficient_quota");
	check_text(cls, "Error 429: insufficient_quota (per-minute token limit)", CLASSIFY_RETRYABLE, false,
		   "http-status:429");
	check_text(cls, "context_length_exceeded", CLASSIFY_CONTEXT_OVERFLOW, false,
		   "openai-code:context_length_exceeded");
	check_text(cls, "failed: rate_limit_exceeded", CLASSIFY_RETRYABLE, false,
		   "openai-code:rate_limit_exceeded");
	check_text(cls, "see https://example.com/errors#insufficient_quota", CLASSIFY_UNKNOWN, false,
		   "default");
	check_text(cls, "max_tokens was 4096", CLASSIFY_UNKNOWN, false, "default");
}
END_TEST

/* The fourth pass's wordings do not reach texts that share only a word with
 * them: a cap that is named but not reached, a cap or a quota of a minute, a
 * context size in a timeout, a rollout's "does not exist yet", a model's
 * runner, a tool's empty result, a response schema, a temporary outage in a
 * region, "retrying won't help until" the network is back, and the English
 * word "permission" in a busy server or an HTML page (the French row's word). */
START_TEST(test_a_word_shared_with_another_error_does_not_borrow_its_verdict)
{
	check_text(cls, "Your credit cap was updated successfully", CLASSIFY_UNKNOWN, false, "default");
	check_text(cls, "Usage cap for this minute reached, try again shortly", CLASSIFY_RETRYABLE,
		   false, "text:transientPatterns[12]");
	check_text(cls, "insufficient quota: you exceeded 60 requests per minute", CLASSIFY_RETRYABLE,
		   false, "text:rateLimitPatterns[13]");
	check_text(cls, "Trial ended abruptly: connection reset by peer", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[3]");
	check_text(cls, "Request timed out: the context window is 128000 tokens but the server did not "
		   "respond within 600s", CLASSIFY_RETRYABLE, false, "text:transientPatterns[2]");
	check_text(cls, "Context length of 8192 tokens but the server returned 502 Bad Gateway",
		   CLASSIFY_RETRYABLE, false, "http-status:502");
	check_text(cls, "Unable to find the model runner process; it crashed, restarting",
		   CLASSIFY_RETRYABLE, false, "text:transientPatterns[17]");
	check_text(cls, "Error: the tool result content was empty; returned no content for tool_use id "
		   "toolu_01", CLASSIFY_UNKNOWN, false, "default");
	check_text(cls, "The request body did not return a valid response schema: 'response_format' "
		   "must be one of json_object, text", CLASSIFY_NOT_RETRYABLE, false,
		   "text:genericNeverPatterns[3]");
	check_text(cls, "The service is currently unavailable in your region due to a temporary outage. "
		   "Please retry later.", CLASSIFY_RETRYABLE, false, "text:transientPatterns[1]");
	check_text(cls, "Service temporarily unavailable for your plan's region, please try again in a "
		   "few seconds", CLASSIFY_RETRYABLE, false, "text:transientPatterns[0]");
	check_text(cls, "Connection reset by peer. Retrying won't help until the network is back; wait "
		   "a moment and try again.", CLASSIFY_RETRYABLE, false, "text:transientPatterns[3]");
	check_text(cls, "Server busy: permission check timed out, please retry", CLASSIFY_RETRYABLE,
		   true, "text:transientPatterns[1]");
	check_text(cls, "<!DOCTYPE html><html><body><h1>Service Unavailable</h1><p>Permission to access "
		   "the upstream is temporarily unavailable. Please try again.</p></body></html>",
		   CLASSIFY_RETRYABLE, false, "text:gatewayPatterns[0]");
	check_text(cls, "max input characters is 20000 per request per minute", CLASSIFY_UNKNOWN, false,
		   "default");
	check_text(cls, "the max input characters is 20000", CLASSIFY_CONTEXT_OVERFLOW, false,
		   "text:contextOverflowPatterns[23]");
	check_text(cls, "Service temporarily disabled for maintenance", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[14]");
	check_text(cls, "API key cache closed unexpectedly, retrying", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[17]");
	/* the wordings themselves still decide; a key disabled "temporarily" is
	 * lifted by support, not by time */
	check_text(cls, "The API key has been temporarily disabled; contact support",
		   CLASSIFY_NOT_RETRYABLE, false, "text:nonRetryablePatterns[9]");
	check_text(cls, "Vous n'avez pas la permission d'accéder à ce service.", CLASSIFY_NOT_RETRYABLE,
		   false, "text:nonRetryablePatterns[16]");
	check_text(cls, "You have hit your monthly spending cap", CLASSIFY_USAGE_LIMIT, false,
		   "text:usageLimitPatterns[21]");
	check_text(cls, "This model is not available in your region", CLASSIFY_NOT_RETRYABLE, false,
		   "text:nonRetryablePatterns[3]");
}
END_TEST

/* Shapes of the same facts the lists did not have: a free tier or a plan's
 * allowance used up, "you've hit your limit" (but a per-minute limit stays a
 * rate), a cap of tokens per request, too many or too large images, a key
 * reported as leaked, a concurrency maximum, a JSON.parse of what the server
 * sent (V8's "... is not valid JSON", not a request body that is not JSON),
 * a response with no message or choices, and the transport words of browsers, curl,
 * OpenSSL, Go's TLS and HTTP/2, OkHttp and anyio; a plan that does not include a
 * model (final) or a feature that needs a plan (usage), credits exhausted, too
 * much traffic (an overload) and Cloudflare's origin down. */
START_TEST(test_plan_allowances_per_request_caps_images_leaked_keys_and_runtime_cuts)
{
	check_text(cls, "Free tier limit reached for this model", CLASSIFY_USAGE_LIMIT, false,
		   "text:usageLimitPatterns[4]");
	check_text(cls, "Your monthly token allowance has been used", CLASSIFY_USAGE_LIMIT, false,
		   "text:usageLimitPatterns[15]");
	check_text(cls, "You have exceeded your plan's included usage", CLASSIFY_USAGE_LIMIT, false,
		   "text:usageLimitPatterns[15]");
	check_text(cls, "You have reached your limit of 60 requests per minute", CLASSIFY_RETRYABLE,
		   false, "text:rateLimitPatterns[13]");
	check_text(cls, "Requested 250000 tokens, max 128000 tokens per request",
		   CLASSIFY_CONTEXT_OVERFLOW, false, "text:contextOverflowPatterns[19]");
	check_text(cls, "Prompt contains too many images (max 20)", CLASSIFY_NOT_RETRYABLE, false,
		   "text:badRequestPatterns[0]");
	check_text(cls, "Image exceeds 5 MB maximum", CLASSIFY_NOT_RETRYABLE, false,
		   "text:badRequestPatterns[0]");
	check_text(cls, "Your API key was reported as leaked. Please use another API key.",
		   CLASSIFY_NOT_RETRYABLE, false, "text:nonRetryablePatterns[1]");
	check_text(cls, "Maximum concurrent connections exceeded", CLASSIFY_RETRYABLE, false,
		   "text:rateLimitPatterns[1]");
	check_text(cls, "SyntaxError: Unexpected token 'd', \"data: {\"id\"... is not valid JSON",
		   CLASSIFY_RETRYABLE, false, "text:gatewayPatterns[0]");
	check_text(cls, "Request body is not valid JSON", CLASSIFY_NOT_RETRYABLE, false,
		   "text:badRequestPatterns[0]");
	check_text(cls, "No assistant message in response", CLASSIFY_RETRYABLE, false,
		   "text:gatewayPatterns[3]");
	check_text(cls, "NetworkError when attempting to fetch resource.", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[4]");
	check_text(cls, "TypeError: Load failed", CLASSIFY_RETRYABLE, false, "text:transientPatterns[4]");
	check_text(cls, "Error: aborted", CLASSIFY_RETRYABLE, false, "text:transientPatterns[4]");
	check_text(cls, "curl: (35) OpenSSL SSL_connect: SSL_ERROR_SYSCALL", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[4]");
	check_text(cls, "remote error: tls: bad record MAC", CLASSIFY_RETRYABLE, false,
		   "text:transientPatterns[4]");
	check_text(cls, "okhttp3.internal.http2.StreamResetException: stream was reset: CANCEL",
		   CLASSIFY_RETRYABLE, false, "sdk-exception:StreamResetException");
	check_text(cls, "anyio.EndOfStream", CLASSIFY_RETRYABLE, false, "text:transientPatterns[4]");
	check_text(cls, "{\"level\":\"error\",\"error\":\"http2: response body closed\"}",
		   CLASSIFY_RETRYABLE, false, "text:gatewayPatterns[3]");
	check_text(cls, "failed to read chat completion stream", CLASSIFY_RETRYABLE, false,
		   "text:gatewayPatterns[3]");
	check_text(cls, "could not load model - all backends returned error", CLASSIFY_NOT_RETRYABLE,
		   false, "text:nonRetryablePatterns[12]");
	check_text(cls, "ProviderModelNotFoundError: ProviderModelNotFoundError", CLASSIFY_NOT_RETRYABLE,
		   false, "sdk-exception:ProviderModelNotFoundError");
	check_text(cls, "Your plan does not include access to this model", CLASSIFY_NOT_RETRYABLE, false,
		   "text:nonRetryablePatterns[3]");
	check_text(cls, "This feature requires a Pro subscription", CLASSIFY_USAGE_LIMIT, false,
		   "text:usageLimitPatterns[10]");
	check_text(cls, "Credits exhausted", CLASSIFY_USAGE_LIMIT, false, "text:usageLimitPatterns[11]");
	check_text(cls, "Too much traffic", CLASSIFY_RETRYABLE, true, "text:rateLimitPatterns[3]");
	check_text(cls, "Web server is down", CLASSIFY_RETRYABLE, false, "text:gatewayPatterns[1]");
}
END_TEST

/* New API's own error codes (a relay's upstream request, its channel pick or
 * the upstream's answer failed: retried; the request, the prompt or the
 * gateway's setup of the model is wrong: final), and the gateway's quota
 * sentence with its numbers between the words. */
START_TEST(test_a_gateway_s_own_codes_say_whether_its_relay_or_the_request_failed)
{
	check_text(cls, "{\"error\":{\"message\":\"请求上游服务失败，请稍后重试\",\"type\":"
		   "\"new_api_error\",\"code\":\"do_request_failed\"}}", CLASSIFY_RETRYABLE, false,
		   "oneapi-code:do_request_failed");
	check_text(cls, "{\"error\":{\"message\":\"当前无可用渠道，请稍后重试\",\"code\":"
		   "\"get_channel_failed\"}}", CLASSIFY_RETRYABLE, false, "oneapi-code:get_channel_failed");
	check_text(cls, "{\"error\":{\"code\":\"empty_response\"}}", CLASSIFY_RETRYABLE, false,
		   "oneapi-code:empty_response");
	check_text(cls, "{\"error\":{\"message\":\"sensitive words detected\",\"code\":"
		   "\"sensitive_words_detected\"}}", CLASSIFY_NOT_RETRYABLE, false,
		   "oneapi-code:sensitive_words_detected");
	check_text(cls, "{\"error\":{\"code\":\"model_price_error\"}}", CLASSIFY_NOT_RETRYABLE, false,
		   "oneapi-code:model_price_error");
	check_text(cls, "user [7] quota [500] preConsumedQuota [1500] is not enough", CLASSIFY_USAGE_LIMIT,
		   false, "text:usageLimitPatterns[16]");
	check_text(cls, "请求被拒绝", CLASSIFY_NOT_RETRYABLE, false, "text:nonRetryablePatterns[10]");
	check_text(cls, "参数校验失败", CLASSIFY_NOT_RETRYABLE, false, "text:badRequestPatterns[1]");
}
END_TEST

/* An alternative whose required literal a text lacks is not run at all; the literal is ASCII in
 * lower case, while PCRE2's caseless UTF matching lets 's' and 'k' match the long s and the Kelvin
 * sign: such a text is matched as before. Characters made optional (?, *, {0) or repeated (+)
 * are not part of a literal: each form of the wording still decides. */
START_TEST(test_a_wording_s_literal_skips_only_texts_that_cannot_match_it)
{
	check_text(cls, "Too many requests", CLASSIFY_RETRYABLE, false, "text:rateLimitPatterns[1]");
	check_text(cls, "Please reduce your reque\xc5\xbft rate", CLASSIFY_RETRYABLE, false,
		   "text:rateLimitPatterns[1]");
	check_text(cls, "TOO MANY REQUESTS", CLASSIFY_RETRYABLE, false, "text:rateLimitPatterns[1]");
	check_text(cls, "Request too large", CLASSIFY_CONTEXT_OVERFLOW, false,
		   "text:contextOverflowPatterns[9]");
	check_text(cls, "Request entity is too large", CLASSIFY_CONTEXT_OVERFLOW, false,
		   "text:contextOverflowPatterns[9]");
	check_text(cls, "payload too large", CLASSIFY_CONTEXT_OVERFLOW, false,
		   "text:contextOverflowPatterns[9]");
}
END_TEST

Suite *classify_suite(void)
{
	Suite *s = suite_create("classify");
	TCase *table = tcase_create("table");
	TCase *tc = tcase_create("classify");

	tcase_add_checked_fixture(table, setup, teardown);
	tcase_add_loop_test(table, test_step1_context_overflow_decides_first, 0,
			    NELEMS(step1_overflow));
	tcase_add_loop_test(table, test_step2_spent_quota_credit_or_billing_is_a_usage_limit, 0,
			    NELEMS(step2_usage));
	tcase_add_loop_test(table, test_per_minute_quota_is_a_rate_limit_per_day_a_usage_limit, 0,
			    NELEMS(quota_windows));
	tcase_add_loop_test(table, test_step3_auth_permission_policy_are_never_retried, 0,
			    NELEMS(step3_never));
	tcase_add_loop_test(table, test_step4_rate_limit_overload_5xx_transport_are_retried, 0,
			    NELEMS(step4_retry));
	tcase_add_loop_test(table, test_a_stated_wait_of_15_minutes_or_more_is_a_usage_limit, 0,
			    NELEMS(long_waits));
	tcase_add_loop_test(table, test_step5_anything_else_is_not_retried_and_named, 0,
			    NELEMS(step5_else));
	tcase_add_loop_test(table, test_typed_facts_transport_and_wait_kinds_meet_the_wordings, 0,
			    NELEMS(crossings));
	suite_add_tcase(s, table);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_settings_lists_extend_their_step_and_are_checked_first);
	tcase_add_test(tc, test_defaults_are_five_empty_settings_lists);
	tcase_add_test(tc, test_bad_pattern_error_names_key_index_pattern_and_offset);
	tcase_add_test(tc, test_list_that_is_not_an_array_is_rejected);
	tcase_add_test(tc, test_list_item_that_is_not_a_string_is_rejected);
	tcase_add_test(tc, test_retry_settings_that_are_not_an_object_are_rejected);
	tcase_add_test(tc, test_error_text_is_truncated_to_the_buffer);
	tcase_add_test(tc, test_old_entry_points_wrap_the_decision);
	tcase_add_test(tc, test_a_message_no_rule_knows_or_an_empty_one_is_unknown);
	tcase_add_test(tc, test_other_languages_are_judged_by_their_own_words);
	tcase_add_test(tc, test_escaped_words_and_business_codes_decide_over_the_status);
	tcase_add_test(tc, test_matching_ignores_case);
	tcase_add_test(tc, test_caller_status_is_the_only_status);
	tcase_add_test(tc, test_json_escaped_in_json_is_read_as_json);
	tcase_add_test(tc, test_message_length_is_honoured_without_nul);
	tcase_add_test(tc, test_body_is_read_after_the_message);
	tcase_add_test(tc, test_embedded_nul_does_not_end_the_message);
	tcase_add_test(tc, test_invalid_utf8_message_is_still_classified);
	tcase_add_test(tc, test_only_the_first_64_kib_are_read);
	tcase_add_test(tc, test_free_null_is_a_no_op);
	tcase_add_test(tc, test_verdict_and_class_names);
	tcase_add_test(tc, test_a_generic_word_naming_a_setting_or_a_window_does_not_decide_alone);
	tcase_add_test(tc, test_a_permanent_clause_outweighs_a_bare_transient_word_and_names_its_rule);
	tcase_add_test(tc, test_documented_codes_of_the_provider_references_get_their_documented_verdict);
	tcase_add_test(tc, test_an_out_of_order_turn_or_a_missing_field_is_final_a_deadline_in_words_is_not);
	tcase_add_test(tc, test_a_bare_provider_code_gets_the_verdict_of_its_key_value);
	tcase_add_test(tc, test_a_word_shared_with_another_error_does_not_borrow_its_verdict);
	tcase_add_test(tc, test_a_model_unloaded_under_the_request_is_retried_none_loaded_is_final);
	tcase_add_test(tc, test_a_max_tokens_setting_above_the_output_cap_is_final_not_an_overflow);
	tcase_add_test(tc, test_plan_allowances_per_request_caps_images_leaked_keys_and_runtime_cuts);
	tcase_add_test(tc, test_a_gateway_s_own_codes_say_whether_its_relay_or_the_request_failed);
	tcase_add_test(tc, test_a_wording_s_literal_skips_only_texts_that_cannot_match_it);
	suite_add_tcase(s, tc);
	return s;
}

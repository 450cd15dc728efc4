#define PCRE2_CODE_UNIT_WIDTH 8

#include "core/classify.h"

#include <assert.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/errtext.h"
#include "base/hint.h"

/* PCRE2's JIT code reads the subject a vector at a time, past its end but
 * inside the page, and memcheck cannot see through generated code: it
 * reports hundreds of uninitialised reads that are not bugs. Under valgrind
 * the patterns run in PCRE2's interpreter instead (same results), so
 * `make check-valgrind` reports only real errors. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#define CLASSIFY_COMPILE_OPTIONS (PCRE2_CASELESS | PCRE2_UTF)

/* A stated wait this long is an hourly, daily or plan window, not a rate
 * limit: per-minute windows state at most 60 s, and a token bucket's time to
 * full refill reads a few minutes (OpenAI's documented
 * x-ratelimit-reset-tokens: 6m0s). */
#define LONG_WAIT_MS INT64_C(900000)

/* --- the built-in patterns (the reference classifier's, verbatim) --- */

/* A status must not run on into more digits or a unit: "400ms", "500 tokens". */
#define NOT_UNIT                                                                            \
	"(?![0-9])(?!\\.[0-9])(?!\\s*(?:ms|s|sec|secs|seconds?|minutes?|mins?|m|hours?|hrs?|h|" \
	"days?|tokens?|bytes?|[kmg]i?b|%|requests?|chars?|characters?|words?|items?|lines?)\\b)"
#define ST "([1-5][0-9]{2})" NOT_UNIT

/* Group 1 is the status. */
static const char *const status_patterns[] = {
	/* 0 HTTP 400, HTTP/2 429, HTTP code 502, HTTP status 503 */
	"\\bHTTP(?:/[0-9.]+)?\\s*(?:status\\s*)?(?:code\\s*)?[:=]?\\s*\\(?" ST,
	/* 1 status 429, status code 429, status: 429, StatusCode: 400, status_code=400,
	 * "status":429, got status 429 */
	"status(?:[ _-]?code)?[\\\"']?\\s*(?:[:=]|is|of|was)?\\s*\\(?[\\\"']?" ST,
	/* 2 Error code: 429, error 429, Error:500:, error_code=429, OpenAI error 429 */
	"\\berror(?:[ _-]?code)?[\\\"']?\\s*[:=]?\\s*\\(?[\\\"']?" ST,
	/* 3 JSON "code": 429 / 'code': '429' / httpStatusCode / raw_status_code */
	"[\\\"']?\\b(?:code|httpStatusCode|statusCode)[\\\"']?\\s*[:=]\\s*[\\\"']?" ST,
	/* 4 API Error: 529, API error (400), API Error (529 {, OpenAI API 402: */
	"\\bAPI(?:\\s+error)?\\s*[:(]?\\s*\\(?" ST,
	/* 5 400 Bad Request, 502: Bad gateway, 503 UNAVAILABLE, 520 status code */
	"\\b" ST "\\s*[:-]?\\s*(?:Bad Request|Unauthorized|Payment Required|Forbidden|Not Found|"
	"Method Not Allowed|Request Timeout|Conflict|Precondition Failed|Payload Too Large|"
	"Request Entity Too Large|Unprocessable|Too Many Requests|Internal Server Error|"
	"Not Implemented|Bad Gateway|Service Unavailable|Gateway Time-?out|Overloaded|UNAVAILABLE|"
	"RESOURCE_EXHAUSTED|INVALID_ARGUMENT|PERMISSION_DENIED|UNAUTHENTICATED|FAILED_PRECONDITION|"
	"NOT_FOUND|INTERNAL\\b|DEADLINE_EXCEEDED|status code)",
	/* 6 a number right before a JSON or HTML body: 429 {..., Error: 502 <html> */
	"\\b" ST "\\s*[-:]?\\s*(?:\\{|\\[\\s*\\{|<(?:!doctype|html))",
	/* 7 Error (429), status [500], [429:insufficient_quota] — a bare "(512)" is a
	 * count ("n_batch (512) is too small"), not a status */
	"\\b(?:error|status|code|http|failed|failure|api|response)\\W{0,3}[(\\[]" ST "[)\\]:]|"
	"[(\\[]" ST ":",
	/* 8 a leading status: "503 ...", "Error: 400 ...", "InternalServerError: 529 ...",
	 * google-api-core's "google.api_core.exceptions.ResourceExhausted: 429 ..." */
	"^\\W{0,4}(?:[A-Za-z_.]*(?:error|exception|exhausted|argument|unavailable|exceeded|denied|"
	"unauthenticated|notfound|toomanyrequests|badrequest|forbidden|internal)\\W{1,3})?" ST,
	NULL,
};

static const char *const context_overflow_patterns[] = {
	/* 0 Anthropic / Claude Code */
	"\\bprompt (?:is )?too long",
	/* 1 Bedrock, vLLM, ChatGPT: "Input is too long", "Input prompt (N tokens) is too long" */
	"\\b(?:input|prompt|messages?|conversation|request|context)(?:\\s+\\([^)]*\\))?\\s+(?:is\\s+|"
	"was\\s+|are\\s+)?too\\s+long\\b",
	/* 2 OpenAI-compatible servers (OpenAI, vLLM, DeepSeek, Groq, Mistral ...) */
	"\\bmaximum context length\\b",
	/* 3 "exceeds the context window", "larger than the context window", "ran out of room in
	 * the model's context window", "exceeds the available context size", "exceed context
	 * limit" */
	"(?:exceed\\w*|overflow\\w*|larger than|out of room in|"
	"reached)\\b[^.\\n]{0,40}\\bcontext[ _-]?(?:length|window|size|limit)",
	/* 4 "context size exceeded", "Context size has been exceeded", "context length of only N
	 * tokens" */
	"\\bcontext[ _-]?(?:length|window|size|limit)\\b[^.\\n]{0,20}\\b(?:exceed\\w*|overflow\\w*|"
	"of only)",
	/* 5 identifiers: context_length_exceeded, ContextWindowExceededError, exceed_context_size */
	"context_?length_?exceeded|context_?window_?exceeded|exceed_context_size|context overflow",
	/* 6 xAI "maximum prompt length is N", "maximum input length" */
	"\\bmaximum (?:prompt|input) length\\b",
	/* 7 Gemini "The input token count (N) exceeds the maximum number of tokens allowed" */
	"\\b(?:input )?token count\\b[^.\\n]{0,40}\\bexceeds?\\b",
	/* 8 TGI "`inputs` tokens + `max_new_tokens` must be <= N" */
	"\\btokens\\W{1,4}\\+\\W{1,4}\\W?max_(?:new_)?tokens\\W{0,3}must be\\s*<=",
	/* 9 413 wording: request too large / entity too large / payload too large / exceeds
	 * maximum size */
	"\\brequest(?: body| entity| payload)? (?:is )?too large|\\bpayload too large|"
	"\\brequest (?:size )?exceeds the maximum (?:size|allowed size)|"
	"\\b(?:request|payload) size exceeds\\b",
	/* 10 AWS length constraints: "expected maxLength: N, actual: M", "Member must have length
	 * less than or equal to" */
	"\\bexpected maxLength:\\s*[0-9]+,\\s*actual:\\s*[0-9]+|"
	"failed to satisfy constraint:\\s*member must have length less than or equal",
	/* 11 aider "has hit a token limit", "number of tokens ... exceeds/cannot exceed" */
	"\\bhit (?:a|the) token limit\\b|\\bnumber of (?:input |"
	"prompt )?tokens\\b[^.\\n]{0,40}\\b(?:exceeds?|cannot exceed|is greater than)",
	NULL,
};

static const char *const limit_zero_patterns[] = {
	/* 0 */
	"\\blimit:\\s*0(?![0-9.])|quota_limit_value\\W{1,4}(?:value\\W{1,4})?0[\\\"']|"
	"quotaValue\\W{1,4}0[\\\"']",
	NULL,
};

static const char *const usage_limit_patterns[] = {
	/* 0 credits / balance */
	"\\bcredit balance\\b|\\binsufficient (?:account )?(?:credits?|balance|funds)\\b|"
	"\\b(?:requires|need|purchase|buy|add) (?:more )?credits\\b|\\bout of credits\\b|"
	"\\bbalance (?:is )?(?:too low|insufficient|exhausted)",
	/* 1 usage limit reached / hit your usage limit / usage_limit_reached / API usage limits */
	"\\busage[ _-]?limits?\\b",
	/* 2 daily / weekly / monthly quotas and spend limits */
	"\\b(?:daily|weekly|monthly)\\b[^.\\n]{0,25}\\b(?:quota|limits?)\\b|"
	"\\bspend(?:ing)? limit\\b|\\bbudget (?:has been )?exceeded\\b|\\bexceeded (?:the |"
	"your )?budget\\b",
	/* 3 per-day windows: "per day", PerDay quota ids, TPD/RPD, free-models-per-day */
	"per[ _-]?day|\\bT[PR]D\\b|\\b(?:try again|retry|come back) tomorrow\\b|\\b(?:requests?|"
	"tokens?) today\\b",
	/* 4 plan windows: "5-hour limit", "session limit", "plan limit", free trial used up */
	"\\b[0-9]+[ -]?(?:h|hour) limit\\b|\\bsession limit\\b|\\bplan limit\\b|\\bfree[ -]trial\\b",
	/* 5 billing / payment state */
	"\\bpayment required\\b|\\bfailure to pay\\b|\\bbilling (?:account|hard limit|not active)\\b|"
	"\\bregain access\\b",
	NULL,
};

static const char *const quota_word_patterns[] = {
	/* 0 OpenAI insufficient_quota sentence, Gemini generic quota sentence */
	"\\bexceeded your current quota\\b",
	/* 1 "check your plan and billing details", "Plans & Billing", "upgrade to a paid account",
	 * "Upgrade to Pro" */
	"\\bplans? (?:and|&) billing\\b|\\bbilling details\\b|\\bupgrade (?:to|"
	"your)\\b[^.\\n]{0,20}\\b(?:pro|plus|paid|plan|tier|account|max)\\b",
	NULL,
};

static const char *const per_minute_patterns[] = {
	/* 0 */
	"per[ _-]?(?:min|minute|second)\\b|PerMinute|PerSecond|\\bT[PR]M\\b|/\\s*min\\b|"
	"\\bper-minute\\b|\\bminute\\b",
	NULL,
};

static const char *const non_retryable_patterns[] = {
	/* 0 a client or proxy already judged it: "non-retryable error", "not retryable" */
	"\\bnon-?retryable\\b|\\bnot retryable\\b",
	/* 1 authentication */
	"\\b(?:invalid|incorrect|missing|no)[ _-]?(?:x-)?api[ _-]?key\\b|"
	"\\bapi[ _-]?key\\b[^.\\n]{0,20}\\b(?:invalid|not valid|not found|missing|expired|revoked)|"
	"\\binvalid (?:oauth |access |bearer |auth(?:entication)? )?token\\b|"
	"\\btoken (?:has )?(?:expired|revoked)\\b|\\bunauthori[sz]ed\\b|"
	"\\bunauthenticated\\b|authentication[ _]?(?:error|failed|failure|required)|"
	"\\bplease run /login\\b|\\bnot logged in\\b",
	/* 2 permission / access */
	"\\bpermission[ _]?denied\\b|\\bpermission_error\\b|\\baccess[ _]?denied\\b|\\b(?:don'?t|"
	"do not|does not) have (?:access|permission)\\b|\\bnot (?:allowed|authorized|"
	"permitted) to\\b|\\bforbidden\\b|\\brequest not allowed\\b|\\bpermission '[^']*' denied",
	/* 3 region */
	"\\b(?:country|region|territory|location)\\b[^.\\n]{0,20}\\bnot supported\\b|"
	"unsupported_country",
	/* 4 unknown / unsupported model */
	"\\bmodel\\b[^.\\n]{0,60}\\b(?:not found|does not exist|is invalid|unsupported|"
	"not supported)\\b|\\b(?:unknown|invalid|unsupported) model\\b|model_not_found|"
	"\\bmodel identifier is invalid\\b|\\btry pulling it first\\b|\\bno such model\\b|"
	"\\bnot_found_error\\b",
	/* 5 unsupported parameter / feature */
	"\\b(?:is|are)(?: not|n[’']t) supported\\b",
	/* 6 content policy / safety */
	"\\bcontent[ _]?(?:filter|policy|management policy)|contentpolicyviolation|\\bsafety\\b|"
	"\\bblocked\\b|\\brecitation\\b|\\bharm_category|\\bflagged\\b",
	/* 7 TLS certificate problems (a proxy or a missing CA: retrying cannot help) */
	"certificate verify failed|self[ -]signed certificate|unable to (?:get|"
	"verify) (?:the )?(?:local )?(?:issuer|first) certificate|SELF_SIGNED_CERT|UNABLE_TO_(?:GET|"
	"VERIFY)_\\w*(?:CERT|ISSUER)|CERT_(?:HAS_EXPIRED|NOT_YET_VALID|UNTRUSTED|REVOKED|REJECTED|"
	"SIGNATURE_FAILURE)|certificate (?:has )?expired|ERR_TLS_CERT",
	/* 8 a failed token refresh (weak: after a network failure it may pass) */
	"\\brefresh token\\b|\\btoken refresh\\b",
	NULL,
};

/* The nonRetryablePatterns that give way to typed retry evidence (a 429 or
 * 5xx status, a rate-limit or server-error type) or a transport failure:
 * "HTTP 429 ... temporarily blocked", "503 ... safety system overloaded",
 * "Failed to refresh token: connect ETIMEDOUT". Authentication, a client's
 * own verdict and certificate failures (0, 1, 7) do not. */
#define WEAK_NEVER ((1u << 2) | (1u << 3) | (1u << 4) | (1u << 5) | (1u << 6) | (1u << 8))

static const char *const rate_limit_patterns[] = {
	/* 0 rate limit in any spelling: rate limit, rate_limit, Ratelimit, rate-limited,
	 * RateLimitError */
	"rate[ _-]?limit",
	/* 1 too many requests / tokens, throttling, AWS "Rate exceeded" / SlowDown, "sending
	 * requests too quickly" */
	"\\btoo many (?:requests|tokens|concurrent)\\b|\\bthrottl(?:ed|ing)\\b|\\brate exceeded\\b|"
	"\\bslow ?down\\b|\\breduce your request rate\\b|\\brequests? too (?:quickly|fast|frequently)\\b|"
	"\\bmaximum number of requests\\b",
	/* 2 Google / Vertex quota exhaustion (per-minute: usage limits were decided before) */
	"resource[ _]?(?:has been )?exhausted|\\bquota exceeded\\b|"
	"\\bexceeded\\b[^.\\n]{0,30}\\bquota\\b|\\bexhausted your capacity\\b",
	/* 3 overload and capacity */
	"overloaded|\\bhigh demand\\b|\\b(?:no|insufficient|out of|over|at) capacity\\b|"
	"\\bcapacity (?:limits?|constraints?|exceeded)\\b|\\btoo busy\\b",
	NULL,
};

static const char *const transient_patterns[] = {
	/* 0 server-side errors */
	"\\binternal (?:server )?error\\b|\\bserver[ _]error\\b|\\bservice[ _]?unavailable\\b|"
	"\\bbad gateway\\b|\\bgateway time-?out\\b|\\bunexpected error\\b|\\berror occurred (?:in|"
	"while|during)\\b|\\bunable to process (?:your|the) request\\b|\\bserver had an error\\b|"
	"\\btemporarily unavailable\\b|\\bupstream\\b|\\bcurrently loading\\b",
	/* 1 server asks for a retry */
	"\\b(?:you can|please) retry\\b|\\btry your request again\\b|\\btry again later\\b|"
	"\\bretry shortly\\b",
	/* 2 timeouts */
	"\\btimed? ?out\\b|timeout|\\bdeadline\\b",
	/* 3 connection failures (Node, Python, Go, curl) */
	"\\bE(?:TIMEDOUT|CONNRESET|CONNREFUSED|CONNABORTED|PIPE|NOTFOUND|AI_AGAIN|HOSTUNREACH|"
	"NETUNREACH|NETDOWN)\\b|\\bUND_ERR_|\\bconnection (?:error|refused|reset|closed|aborted|lost|"
	"failed|broken|failure)\\b|connect(?:ion)?error|connection_broken|\\bactively refused\\b|"
	"\\bno route to host\\b|\\bno such host\\b|getaddrinfo|name resolution|\\bnetwork (?:error|"
	"is unreachable)\\b|\\bfailed to establish a new connection\\b|\\b(?:unable|"
	"failed) to connect\\b|\\bcannot connect\\b|\\bcould not connect\\b|\\bfetch failed\\b|"
	"\\bfailed to fetch\\b|\\berror sending request\\b|\\brequest to \\S+ failed\\b|"
	"\\bProvider returned error\\b",
	/* 4 stream and socket cut */
	"\\bsocket hang up\\b|\\bsocket\\b[^.\\n]{0,25}\\bclosed\\b|\\bother side closed\\b|"
	"\\bpremature close\\b|\\bpeer closed connection\\b|\\bincomplete chunked read\\b|"
	"\\bserver disconnected\\b|\\bremote ?(?:end|host) closed\\b|remotedisconnected|"
	"\\bdisconnected\\b|\\bclosed mid-response\\b|\\bstream (?:closed|terminated|interrupted|"
	"error|stall\\w*)|(?:^|TypeError:\\s*)terminated\\b|\\b(?:connection|socket|request|process|"
	"worker|response|body) (?:was |has been )?terminated\\b|\\bGOAWAY\\b|\\breset before headers\\b|"
	"before (?:secure )?TLS connection|\\bEOF occurred\\b|\\bunexpected EOF\\b|"
	"\\bcould not parse HTTP response\\b|\\bstall(?:ed)?\\b",
	/* 5 agent-CLI retry and fallback notices */
	"\\breconnecting\\b|\\bswitch(?:ed|ing) (?:from|to)\\b|\\bcontinue with the [\\w. -]{1,30} model\\b|"
	"\\bagent exited without a result\\b",
	NULL,
};

static const char *const gateway_patterns[] = {
	/* 0 an HTML page or an empty body where JSON was expected: a gateway or proxy
	 * answered instead of the API (Node, Go, Python parsers' words) */
	"\\bUnexpected token '?<|\\binvalid character '<' looking for beginning of value\\b|"
	"\\bExpecting value: line 1 column 1 \\(char 0\\)|\\bUnexpected end of JSON input\\b|"
	"<!DOCTYPE html|\\bis not valid JSON\\W{0,4}<|\\berror decoding response body\\b",
	/* 1 a proxy with nowhere to send the request */
	"\\bno healthy upstream\\b|\\bupstream connect error\\b",
	NULL,
};

/* Not a rule, only evidence: the network failed (socket-level codes and
 * words, not a library's class name such as APIConnectionError). It lets a
 * transport failure beat the weaker never-retried wordings. */
static const char *const transport_patterns[] = {
	"\\bE(?:TIMEDOUT|CONNRESET|CONNREFUSED|CONNABORTED|PIPE|AI_AGAIN|HOSTUNREACH|NETUNREACH|"
	"NETDOWN)\\b|\\bsocket hang up\\b|\\bconnection (?:refused|reset|timed out)\\b|"
	"\\bfetch failed\\b|\\bactively refused\\b|\\bnetwork is unreachable\\b",
	NULL,
};

static const char *const bad_request_patterns[] = {
	/* 0 */
	"\\bbad[ _]?request\\b|\\binvalid[ _]request\\b|\\binvalid[ _]argument\\b|"
	"\\bvalidation[ _]?(?:error|exception)\\b|\\bmalformed\\b|\\binvalid (?:value|parameter|"
	"param|json)\\b|\\bnot valid JSON\\b|ERR_BAD_REQUEST|\\bunprocessable\\b|"
	"\\bmust be (?:at least|at most|non-empty|<=|>=|less|greater)",
	NULL,
};

static const char *const overload_patterns[] = {
	/* 0 */
	"overloaded|\\bhigh demand\\b|\\b(?:no|insufficient|out of|over|at) capacity\\b|\\b(?:system|"
	"server|model) capacity\\b|\\bcapacity (?:limits?|constraints?|exceeded)\\b|"
	"\\brate-limited upstream\\b|\\bshared[ _]pool\\b|\\btoo busy\\b",
	NULL,
};

static const char *const typed_patterns[] = {
	/* 0 key/value: "type": "overloaded_error", code='insufficient_quota', ... */
	"[\\\"']?\\b(?:type|code|status|reason|error_?type|errorType|__type|error_code|"
	"exception-type)[\\\"']?\\s*[:=]\\s*[\\\"']?([A-Za-z][A-Za-z0-9_.-]*)",
	/* 1 AWS exception names */
	"\\b([A-Za-z]+Exception)\\b",
	/* 2 an in-stream error as the HTTP provider words it: "<type>: <message>" */
	"^\\W{0,4}([a-z]+(?:_[a-z]+)+)\\s*:",
	NULL,
};

enum builtin_id {
	B_STATUS,
	B_CONTEXT_OVERFLOW,
	B_LIMIT_ZERO,
	B_USAGE_LIMIT,
	B_QUOTA_WORD,
	B_PER_MINUTE,
	B_NON_RETRYABLE,
	B_RATE_LIMIT,
	B_TRANSIENT,
	B_GATEWAY,
	B_TRANSPORT,
	B_BAD_REQUEST,
	B_OVERLOAD,
	B_TYPED,
	B_COUNT,
};

/* Names as rules give them: "text:<name>[<index>]". */
static const struct {
	const char *name;
	const char *const *patterns;
} builtins[B_COUNT] = {
	[B_STATUS] = { "statusPatterns", status_patterns },
	[B_CONTEXT_OVERFLOW] = { "contextOverflowPatterns", context_overflow_patterns },
	[B_LIMIT_ZERO] = { "limitZeroPatterns", limit_zero_patterns },
	[B_USAGE_LIMIT] = { "usageLimitPatterns", usage_limit_patterns },
	[B_QUOTA_WORD] = { "quotaWordPatterns", quota_word_patterns },
	[B_PER_MINUTE] = { "perMinutePatterns", per_minute_patterns },
	[B_NON_RETRYABLE] = { "nonRetryablePatterns", non_retryable_patterns },
	[B_RATE_LIMIT] = { "rateLimitPatterns", rate_limit_patterns },
	[B_TRANSIENT] = { "transientPatterns", transient_patterns },
	[B_GATEWAY] = { "gatewayPatterns", gateway_patterns },
	[B_TRANSPORT] = { "transportPatterns", transport_patterns },
	[B_BAD_REQUEST] = { "badRequestPatterns", bad_request_patterns },
	[B_OVERLOAD] = { "overloadPatterns", overload_patterns },
	[B_TYPED] = { "typedPatterns", typed_patterns },
};

/* --- typed provider values --- */

enum typed_cat {
	TYPED_OVERFLOW,
	TYPED_USAGE,
	TYPED_NON,
	TYPED_BAD,	/* a generic invalid request: decides only at the end */
	TYPED_RETRY,
	TYPED_OVERLOAD,	/* retried, and the overload flag */
	TYPED_COUNT,
};

/* Compared case-insensitively; the rule is "<family>:<value>". */
static const struct {
	const char *value;
	enum typed_cat cat;
	const char *family;
} typed_values[] = {
	/* Anthropic error.type */
	{ "request_too_large", TYPED_OVERFLOW, "anthropic-type" },
	{ "billing_error", TYPED_USAGE, "anthropic-type" },
	{ "authentication_error", TYPED_NON, "anthropic-type" },
	{ "permission_error", TYPED_NON, "anthropic-type" },
	{ "not_found_error", TYPED_NON, "anthropic-type" },
	{ "invalid_request_error", TYPED_BAD, "anthropic-type" },
	{ "rate_limit_error", TYPED_RETRY, "anthropic-type" },
	{ "api_error", TYPED_RETRY, "anthropic-type" },
	{ "overloaded_error", TYPED_OVERLOAD, "anthropic-type" },
	{ "timeout_error", TYPED_RETRY, "anthropic-type" },
	/* OpenAI-compatible error.code / error.type */
	{ "context_length_exceeded", TYPED_OVERFLOW, "openai-code" },
	{ "string_above_max_length", TYPED_OVERFLOW, "openai-code" },
	{ "exceed_context_size_error", TYPED_OVERFLOW, "openai-code" },	/* llama.cpp */
	{ "model_context_window_exceeded", TYPED_OVERFLOW, "openai-code" },
	{ "insufficient_quota", TYPED_USAGE, "openai-code" },
	{ "billing_hard_limit_reached", TYPED_USAGE, "openai-code" },
	{ "billing_not_active", TYPED_USAGE, "openai-code" },
	{ "usage_limit_reached", TYPED_USAGE, "openai-code" },	/* Codex / ChatGPT */
	{ "insufficient_balance", TYPED_USAGE, "openai-code" },
	{ "insufficient_credits", TYPED_USAGE, "openai-code" },
	{ "invalid_api_key", TYPED_NON, "openai-code" },
	{ "account_deactivated", TYPED_NON, "openai-code" },
	{ "model_not_found", TYPED_NON, "openai-code" },
	{ "unsupported_country_region_territory", TYPED_NON, "openai-code" },
	{ "content_filter", TYPED_NON, "openai-code" },
	{ "content_policy_violation", TYPED_NON, "openai-code" },
	{ "rate_limit_exceeded", TYPED_RETRY, "openai-code" },
	{ "rate_limited", TYPED_RETRY, "openai-code" },
	{ "throttling_error", TYPED_RETRY, "openai-code" },
	{ "server_error", TYPED_RETRY, "openai-code" },
	{ "service_unavailable_error", TYPED_RETRY, "openai-code" },
	{ "cf_bad_gateway", TYPED_RETRY, "openai-code" },
	{ "stream_terminated", TYPED_RETRY, "openai-code" },
	{ "engine_overloaded_error", TYPED_OVERLOAD, "openai-code" },
	{ "server_is_overloaded", TYPED_OVERLOAD, "openai-code" },
	{ "upstream_provider_shared_pool", TYPED_OVERLOAD, "openai-code" },	/* OpenRouter */
	{ "badrequesterror", TYPED_BAD, "openai-code" },
	{ "validation_error", TYPED_BAD, "openai-code" },
	/* Google error.status */
	{ "RESOURCE_EXHAUSTED", TYPED_RETRY, "google-status" },
	{ "UNAVAILABLE", TYPED_RETRY, "google-status" },
	{ "INTERNAL", TYPED_RETRY, "google-status" },
	{ "DEADLINE_EXCEEDED", TYPED_RETRY, "google-status" },
	{ "PERMISSION_DENIED", TYPED_NON, "google-status" },
	{ "UNAUTHENTICATED", TYPED_NON, "google-status" },
	{ "NOT_FOUND", TYPED_NON, "google-status" },
	{ "API_KEY_INVALID", TYPED_NON, "google-status" },
	{ "INVALID_ARGUMENT", TYPED_BAD, "google-status" },
	{ "FAILED_PRECONDITION", TYPED_BAD, "google-status" },
	/* Gemini finishReason / promptFeedback.blockReason, as the decoder
	 * words them ("finish reason: SAFETY"): the answer was refused, the
	 * same request gets the same refusal. */
	{ "SAFETY", TYPED_NON, "google-finish" },
	{ "IMAGE_SAFETY", TYPED_NON, "google-finish" },
	{ "RECITATION", TYPED_NON, "google-finish" },
	{ "IMAGE_RECITATION", TYPED_NON, "google-finish" },
	{ "BLOCKLIST", TYPED_NON, "google-finish" },
	{ "PROHIBITED_CONTENT", TYPED_NON, "google-finish" },
	{ "IMAGE_PROHIBITED_CONTENT", TYPED_NON, "google-finish" },
	{ "SPII", TYPED_NON, "google-finish" },
	{ "MALFORMED_FUNCTION_CALL", TYPED_NON, "google-finish" },
	{ "UNEXPECTED_TOOL_CALL", TYPED_NON, "google-finish" },
	/* AWS Bedrock exceptions (x-amzn-ErrorType, :exception-type, SDK names) */
	{ "ThrottlingException", TYPED_RETRY, "bedrock" },
	{ "ServiceUnavailableException", TYPED_RETRY, "bedrock" },
	{ "ModelStreamErrorException", TYPED_RETRY, "bedrock" },
	{ "InternalServerException", TYPED_RETRY, "bedrock" },
	{ "ModelTimeoutException", TYPED_RETRY, "bedrock" },
	{ "ModelNotReadyException", TYPED_RETRY, "bedrock" },
	{ "ModelErrorException", TYPED_RETRY, "bedrock" },
	/* AWS: "You have exceeded the service quota ... You can resubmit later". */
	{ "ServiceQuotaExceededException", TYPED_RETRY, "bedrock" },
	{ "AccessDeniedException", TYPED_NON, "bedrock" },
	{ "ResourceNotFoundException", TYPED_NON, "bedrock" },
	{ "UnrecognizedClientException", TYPED_NON, "bedrock" },
	{ "ExpiredTokenException", TYPED_NON, "bedrock" },
	{ "ValidationException", TYPED_BAD, "bedrock" },
};

/* Headers whose value (up to the first ':') is an exception name. */
static const char *const typed_headers[] = { "x-amzn-errortype", ":exception-type", "x-error-type" };

/* --- statuses --- */

static bool is_retry_status(int s)
{
	return s == 408 || s == 409 || s == 425 || s == 429 ||
	       (s >= 500 && s <= 599 && s != 501 && s != 505);
}

static bool is_never_status(int s)
{
	return s == 401 || s == 403 || s == 404 || s == 405 || s == 407 || s == 410;
}

static bool is_bad_status(int s)
{
	return s == 400 || s == 406 || (s >= 411 && s <= 412) || (s >= 415 && s <= 417) ||
	       s == 421 || s == 422 || s == 428 || s == 431;
}

/* --- the classifier --- */

/* The settings lists, in the order classify_defaults() gives them. */
enum user_id {
	U_RETRYABLE,
	U_NON_RETRYABLE,
	U_CONTEXT_OVERFLOW,
	U_USAGE_LIMIT,
	U_OVERLOAD,
	U_COUNT,
};

static const char *const user_keys[U_COUNT] = {
	[U_RETRYABLE] = "retryablePatterns",
	[U_NON_RETRYABLE] = "nonRetryablePatterns",
	[U_CONTEXT_OVERFLOW] = "contextOverflowPatterns",
	[U_USAGE_LIMIT] = "usageLimitPatterns",
	[U_OVERLOAD] = "overloadPatterns",
};

struct classify_list {
	pcre2_code **codes;
	size_t count;
};

/* The built-in patterns, compiled once for the whole process at the first
 * decision (not at start: ~2.5 ms of PCRE2 JIT that a daemon which never
 * sees a failure never needs), shared by every classifier, freed with the
 * last one. The daemon is single-threaded. */
static struct {
	struct classify_list lists[B_COUNT];
	uint32_t max_captures;
	int users;	/* live classifiers */
	bool ready;
} shared;

struct classify {
	int refs;
	const struct classify_list *builtin;	/* shared.lists once ready, else NULL */
	struct classify_list user[U_COUNT];
	uint32_t user_captures;
	/* One block shared by every pattern, sized for the one with the most
	 * groups, and one buffer for the normalised text: the daemon
	 * classifies on a single thread. */
	pcre2_match_data *match;
	char *text;
};

json_t *classify_defaults(void)
{
	json_t *obj = json_object();

	if (obj == NULL)
		return NULL;
	for (size_t l = 0; l < U_COUNT; l++)
		if (json_object_set_new(obj, user_keys[l], json_array()) != 0)
			goto fail;
	return obj;
fail:
	json_decref(obj);
	return NULL;
}

/* Compiles one pattern into list (which has room). "what" names it in err. */
static int compile_one(struct classify_list *list, const char *pattern, size_t len,
		       uint32_t *max_captures, const char *what, size_t index, char *err,
		       size_t errlen)
{
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE erroffset;
	uint32_t captures;
	pcre2_code *code;
	int errcode;

	code = pcre2_compile((PCRE2_SPTR)pattern, len, CLASSIFY_COMPILE_OPTIONS, &errcode,
			     &erroffset, NULL);
	if (code == NULL) {
		if (pcre2_get_error_message(errcode, msg, sizeof(msg)) < 0)
			snprintf((char *)msg, sizeof(msg), "error %d", errcode);
		return errbuf_set(err, errlen, "%s[%zu] \"%s\": %s at offset %zu", what, index,
				  pattern, (const char *)msg, (size_t)erroffset);
	}
	list->codes[list->count++] = code;
	/* Where JIT is unavailable the interpreter is used; that is fine. */
	if (!RUNNING_ON_VALGRIND)
		(void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
	if (pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &captures) == 0 &&
	    captures > *max_captures)
		*max_captures = captures;
	return 0;
}

static int alloc_list(struct classify_list *list, size_t n, char *err, size_t errlen)
{
	/* calloc(0) may return NULL; an empty list is legitimate. */
	list->codes = calloc(n > 0 ? n : 1, sizeof(*list->codes));
	if (list->codes == NULL)
		return errbuf_set(err, errlen, "retry: out of memory");
	return 0;
}

static int compile_builtin(struct classify_list *list, const char *name,
			   const char *const *patterns, uint32_t *max_captures, char *err,
			   size_t errlen)
{
	size_t n = 0;
	char what[64];

	while (patterns[n] != NULL)
		n++;
	if (alloc_list(list, n, err, errlen) != 0)
		return -1;
	snprintf(what, sizeof(what), "classify: built-in %s", name);
	for (size_t i = 0; i < n; i++)
		if (compile_one(list, patterns[i], PCRE2_ZERO_TERMINATED, max_captures, what, i,
				err, errlen) != 0)
			return -1;
	return 0;
}

/* array: the settings list, NULL when there is none (empty). */
static int compile_user(struct classify_list *list, const char *key, const json_t *array,
			uint32_t *max_captures, char *err, size_t errlen)
{
	size_t n;
	char what[64];

	if (array != NULL && !json_is_array(array))
		return errbuf_set(err, errlen, "retry.%s must be an array of strings", key);
	n = json_array_size(array);
	if (alloc_list(list, n, err, errlen) != 0)
		return -1;
	snprintf(what, sizeof(what), "retry.%s", key);
	for (size_t i = 0; i < n; i++) {
		const json_t *item = json_array_get(array, i);

		if (!json_is_string(item))
			return errbuf_set(err, errlen, "retry.%s[%zu] must be a string", key, i);
		if (compile_one(list, json_string_value(item), json_string_length(item),
				max_captures, what, i, err, errlen) != 0)
			return -1;
	}
	return 0;
}

struct classify *classify_new(const json_t *retry, char *err, size_t errlen)
{
	struct classify *self = NULL;
	uint32_t max_captures = 0;

	if (retry != NULL && !json_is_object(retry)) {
		errbuf_set(err, errlen, "retry must be an object");
		return NULL;
	}
	self = calloc(1, sizeof(*self));
	if (self == NULL) {
		errbuf_set(err, errlen, "retry: out of memory");
		return NULL;
	}
	self->refs = 1;
	shared.users++;
	for (size_t u = 0; u < U_COUNT; u++)
		if (compile_user(&self->user[u], user_keys[u],
				 retry != NULL ? json_object_get(retry, user_keys[u]) : NULL,
				 &max_captures, err, errlen) != 0)
			goto fail;
	self->user_captures = max_captures;
	self->text = malloc(ERRTEXT_MAX);
	if (self->text == NULL) {
		errbuf_set(err, errlen, "retry: out of memory");
		goto fail;
	}
	return self;
fail:
	classify_free(self);
	return NULL;
}

struct classify *classify_ref(struct classify *self)
{
	if (self != NULL)
		self->refs++;
	return self;
}

static void release_list(struct classify_list *list)
{
	for (size_t i = 0; i < list->count; i++)
		pcre2_code_free(list->codes[i]);
	free(list->codes);
}

void classify_free(struct classify *self)
{
	if (self == NULL || --self->refs > 0)
		return;
	for (size_t u = 0; u < U_COUNT; u++)
		release_list(&self->user[u]);
	pcre2_match_data_free(self->match);
	free(self->text);
	free(self);
	if (--shared.users == 0 && shared.ready) {
		for (size_t b = 0; b < B_COUNT; b++)
			release_list(&shared.lists[b]);
		memset(&shared, 0, sizeof(shared));
	}
}

/* Compiles the built-in patterns (once per process) and makes this
 * classifier's match block. -1 only when memory ran out. */
static int make_ready(struct classify *self)
{
	char err[256];

	if (self->builtin != NULL)
		return 0;
	if (!shared.ready) {
		uint32_t max = 0;

		for (size_t b = 0; b < B_COUNT; b++) {
			if (compile_builtin(&shared.lists[b], builtins[b].name, builtins[b].patterns,
					    &max, err, sizeof(err)) != 0) {
				for (size_t k = 0; k <= b; k++)
					release_list(&shared.lists[k]);
				memset(shared.lists, 0, sizeof(shared.lists));
				return -1;
			}
		}
		shared.max_captures = max;
		shared.ready = true;
	}
	self->match = pcre2_match_data_create((shared.max_captures > self->user_captures
					       ? shared.max_captures : self->user_captures) + 1, NULL);
	if (self->match == NULL)
		return -1;
	self->builtin = shared.lists;
	return 0;
}

/* --- Google's typed error body (google.rpc.Status) --- */

/* What a quota violation's id or metric says about its window. */
enum google_scope {
	GOOGLE_SCOPE_NONE,
	GOOGLE_SCOPE_MINUTE,	/* PerMinute, PerSecond: a rate limit */
	GOOGLE_SCOPE_DAY,	/* PerDay, PerMonth: a spent quota */
	GOOGLE_SCOPE_ZERO,	/* quotaValue 0: the tier has none at all */
};

/* The fields of {"error":{"code","message","status","details":[RetryInfo,
 * QuotaFailure, ErrorInfo]}} the decision reads. */
struct google_status {
	bool found;		/* the body is a google.rpc.Status */
	char status[32];	/* error.status ("RESOURCE_EXHAUSTED"), "" none */
	char reason[64];	/* ErrorInfo.reason, "" none */
	enum google_scope scope;	/* the widest window among the violations */
	char quota[72];		/* the quotaId (else quotaMetric) of that window */
	int64_t retry_ms;	/* RetryInfo.retryDelay, -1 none */
};

/* ErrorInfo reasons (google.api.ErrorReason) that no retry mends: the key,
 * the project or the account is refused. */
static const char *const google_never_reasons[] = {
	"API_KEY_INVALID", "API_KEY_EXPIRED", "SERVICE_DISABLED", "API_KEY_SERVICE_BLOCKED",
	"API_KEY_HTTP_REFERRER_BLOCKED", "API_KEY_IP_ADDRESS_BLOCKED", "API_KEY_ANDROID_APP_BLOCKED",
	"API_KEY_IOS_APP_BLOCKED", "CONSUMER_INVALID", "CONSUMER_SUSPENDED", "ACCESS_TOKEN_EXPIRED",
	"ACCESS_TOKEN_SCOPE_INSUFFICIENT", "ACCESS_TOKEN_TYPE_UNSUPPORTED", "USER_BLOCKED_BY_ADMIN",
	"RESOURCE_PROJECT_INVALID", "GCP_SUSPENDED", "LOCATION_POLICY_VIOLATED",
	"ORG_RESTRICTION_VIOLATION", "SERVICE_NOT_VISIBLE", "IAM_PERMISSION_DENIED",
};

/* ... and those that mean the account must pay first. */
static const char *const google_usage_reasons[] = { "BILLING_DISABLED", "ACCOUNT_STATE_INVALID" };

/* error.status values: never retried, and retried (RESOURCE_EXHAUSTED is a
 * rate or quota window, the rest a busy or broken server). */
static const char *const google_never_statuses[] = {
	"INVALID_ARGUMENT", "FAILED_PRECONDITION", "PERMISSION_DENIED", "UNAUTHENTICATED",
	"NOT_FOUND", "OUT_OF_RANGE", "UNIMPLEMENTED", "ALREADY_EXISTS",
};
static const char *const google_retry_statuses[] = {
	"RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED", "ABORTED",
};

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

#define IN_LIST(s, list) in_list((s), (list), sizeof(list) / sizeof((list)[0]))

/* An upper-case identifier (a status or reason), copied into out. */
static bool take_name(const json_t *v, char *out, size_t size)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);

	if (s == NULL || n == 0 || n >= size)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	memcpy(out, s, n + 1);
	return true;
}

/* "PerDay", "per_day", "per-day-per-project" ...: the letters of s, lower
 * case, without separators, hold word. */
static bool names_window(const char *s, const char *word)
{
	char flat[256];
	size_t n = 0;

	for (; *s != '\0' && n + 1 < sizeof(flat); s++) {
		if (*s == '_' || *s == '-' || *s == ' ')
			continue;
		flat[n++] = (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);
	}
	flat[n] = '\0';
	return strstr(flat, word) != NULL;
}

/* quotaValue "0" or 0. */
static bool str_is_zero(const json_t *v)
{
	return (json_is_string(v) && strcmp(json_string_value(v), "0") == 0) ||
	       (json_is_integer(v) && json_integer_value(v) == 0);
}

static enum google_scope violation_scope(const json_t *v)
{
	const json_t *value = json_object_get(v, "quotaValue");
	const char *id = json_string_value(json_object_get(v, "quotaId"));
	const char *metric = json_string_value(json_object_get(v, "quotaMetric"));

	if (str_is_zero(value))
		return GOOGLE_SCOPE_ZERO;
	for (int k = 0; k < 2; k++) {
		const char *s = k == 0 ? id : metric;

		if (s == NULL)
			continue;
		if (names_window(s, "perday") || names_window(s, "permonth"))
			return GOOGLE_SCOPE_DAY;
		if (names_window(s, "perminute") || names_window(s, "persecond"))
			return GOOGLE_SCOPE_MINUTE;
	}
	return GOOGLE_SCOPE_NONE;
}

static void take_quota(const json_t *detail, struct google_status *g)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(detail, "violations"), i, v) {
		enum google_scope scope = violation_scope(v);
		const json_t *name = json_object_get(v, "quotaId");

		if (scope <= g->scope)
			continue;
		g->scope = scope;
		if (!json_is_string(name))
			name = json_object_get(v, "quotaMetric");
		snprintf(g->quota, sizeof(g->quota), "%s",
			 json_is_string(name) ? json_string_value(name) : "quota");
	}
}

/* "37s", "0.5s", "1.250s" (a protobuf Duration in JSON), or {"seconds": 37,
 * "nanos": 5e8} as some clients print it. */
static void take_delay(const json_t *delay, struct google_status *g)
{
	int64_t ms;

	if (json_is_string(delay)) {
		if (hint_duration(json_string_value(delay), json_string_length(delay), &ms))
			g->retry_ms = ms;
	} else if (json_is_object(delay)) {
		json_int_t sec = json_integer_value(json_object_get(delay, "seconds"));
		json_int_t nanos = json_integer_value(json_object_get(delay, "nanos"));

		if (sec >= 0 && sec < HINT_MAX_MS / 1000 && nanos >= 0 && nanos < 1000000000)
			g->retry_ms = (int64_t)sec * 1000 + (int64_t)(nanos + 500000) / 1000000;
	}
}

/* The body as a google.rpc.Status, into g (found false when it is none). */
static void google_read(const char *body, size_t len, struct google_status *g)
{
	const json_t *err, *detail, *status;
	json_t *root;
	size_t i = 0;

	memset(g, 0, sizeof(*g));
	g->retry_ms = -1;
	while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
		i++;
	/* Only a JSON object is parsed (the one allocation of a decision). */
	if (body == NULL || i == len || body[i] != '{')
		return;
	root = json_loadb(body + i, len - i, 0, NULL);
	err = json_object_get(root, "error");
	status = json_object_get(err, "status");
	if (json_is_object(err) && (json_is_string(status) || json_is_array(json_object_get(err, "details")))) {
		g->found = true;
		take_name(status, g->status, sizeof(g->status));
		json_array_foreach(json_object_get(err, "details"), i, detail) {
			const char *type = json_string_value(json_object_get(detail, "@type"));
			const char *dot = type != NULL ? strrchr(type, '.') : NULL;

			if (dot == NULL)
				continue;
			if (strcmp(dot, ".RetryInfo") == 0)
				take_delay(json_object_get(detail, "retryDelay"), g);
			else if (strcmp(dot, ".QuotaFailure") == 0)
				take_quota(detail, g);
			else if (strcmp(dot, ".ErrorInfo") == 0 && g->reason[0] == '\0')
				take_name(json_object_get(detail, "reason"), g->reason, sizeof(g->reason));
		}
	}
	json_decref(root);
}

/* --- one decision --- */

/* What the text, status and headers say, gathered before the table runs. */
struct facts {
	const char *hay;
	size_t len;
	/* Distinct statuses 400-599 in the order found, or the caller's. */
	int statuses[200];
	size_t nstatus;
	/* The first typed value of each category, -1 none, and when it came. */
	int typed[TYPED_COUNT];
	size_t typed_seq[TYPED_COUNT];
	size_t seq;
	int64_t hint;		/* the headers' wait, else the text's */
	int64_t text_hint;	/* the text's (and body's) own, -1 none */
	struct google_status google;	/* the body as a google.rpc.Status */
};

static int match_at(const struct classify *self, const pcre2_code *code, const struct facts *f,
		    size_t start)
{
	/* errtext made the text valid UTF-8. rc 0 (ovector too small) cannot
	 * happen: the block fits every pattern. Any error, e.g. a user pattern
	 * hitting the match limit, counts as no match. */
	return pcre2_match(code, (PCRE2_SPTR)f->hay, f->len, start, PCRE2_NO_UTF_CHECK, self->match,
			   NULL);
}

/* The index of the first pattern of list that matches, or -1. */
static int first_match(const struct classify *self, const struct classify_list *list,
		       const struct facts *f)
{
	for (size_t i = 0; i < list->count; i++)
		if (match_at(self, list->codes[i], f, 0) >= 0)
			return (int)i;
	return -1;
}

/* Where the next search starts after a match (finditer's rule), on a
 * character boundary even after an empty match. */
static size_t next_start(const struct facts *f, const PCRE2_SIZE *ov)
{
	size_t k = ov[1];

	if (ov[1] > ov[0])
		return k;
	for (k++; k < f->len && ((unsigned char)f->hay[k] & 0xc0) == 0x80; k++)
		;
	return k;
}

static void add_status(struct facts *f, int s)
{
	for (size_t k = 0; k < f->nstatus; k++)
		if (f->statuses[k] == s)
			return;
	if (f->nstatus < sizeof(f->statuses) / sizeof(f->statuses[0]))
		f->statuses[f->nstatus++] = s;
}

static void find_statuses(const struct classify *self, int status, struct facts *f)
{
	const struct classify_list *list = &self->builtin[B_STATUS];
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(self->match);

	/* A caller's failure status is the status; a 2xx (an error inside a
	 * stream) says nothing, so the text is read. */
	if (status >= 400 && status <= 599) {
		f->statuses[f->nstatus++] = status;
		return;
	}
	for (size_t i = 0; i < list->count; i++) {
		size_t start = 0;

		int groups;

		while (start <= f->len && (groups = match_at(self, list->codes[i], f, start)) >= 0) {
			/* The status is the first group that took part: a pattern
			 * with alternatives has one group per alternative. */
			for (int g = 1; g < groups; g++) {
				const char *d = f->hay + ov[2 * g];
				int v;

				if (ov[2 * g] == PCRE2_UNSET || ov[2 * g + 1] - ov[2 * g] != 3)
					continue;
				v = (d[0] - '0') * 100 + (d[1] - '0') * 10 + (d[2] - '0');
				if (v >= 400 && v <= 599)
					add_status(f, v);
				break;
			}
			start = next_start(f, ov);
		}
	}
}

static bool has_status(const struct facts *f, int s)
{
	for (size_t k = 0; k < f->nstatus; k++)
		if (f->statuses[k] == s)
			return true;
	return false;
}

static bool ascii_ieq(const char *a, size_t n, const char *b)
{
	size_t k = 0;

	for (; k < n && b[k] != '\0'; k++) {
		int x = (unsigned char)a[k], y = (unsigned char)b[k];

		if (x >= 'A' && x <= 'Z')
			x += 'a' - 'A';
		if (y >= 'A' && y <= 'Z')
			y += 'a' - 'A';
		if (x != y)
			return false;
	}
	return k == n && b[k] == '\0';
}

static void add_typed(struct facts *f, const char *value, size_t n)
{
	for (size_t t = 0; t < sizeof(typed_values) / sizeof(typed_values[0]); t++) {
		if (!ascii_ieq(value, n, typed_values[t].value))
			continue;
		if (f->typed[typed_values[t].cat] < 0) {
			f->typed[typed_values[t].cat] = (int)t;
			f->typed_seq[typed_values[t].cat] = f->seq;
		}
		f->seq++;
		return;
	}
}

/* Header values first, then every key/value, then every exception name. */
static void find_typed(const struct classify *self, const json_t *headers, struct facts *f)
{
	const struct classify_list *list = &self->builtin[B_TYPED];
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(self->match);
	const char *key;
	json_t *v;

	for (size_t c = 0; c < TYPED_COUNT; c++)
		f->typed[c] = -1;
	if (json_is_object(headers)) {
		json_object_foreach((json_t *)headers, key, v) {
			const char *s = json_string_value(v);
			size_t n;

			if (s == NULL)
				continue;
			for (size_t h = 0; h < sizeof(typed_headers) / sizeof(typed_headers[0]); h++) {
				if (!ascii_ieq(key, strlen(key), typed_headers[h]))
					continue;
				for (n = 0; n < json_string_length(v) && s[n] != ':'; n++)
					;
				add_typed(f, s, n);
			}
		}
	}
	for (size_t i = 0; i < list->count; i++) {
		size_t start = 0;

		while (start <= f->len && match_at(self, list->codes[i], f, start) >= 0) {
			add_typed(f, f->hay + ov[2], ov[3] - ov[2]);
			start = next_start(f, ov);
		}
	}
}

/* The first match of settings list u: rule "settings:<key>[i]". */
static bool user_rule(const struct classify *self, const struct facts *f, enum user_id u,
		      char *rule, size_t size)
{
	int i = first_match(self, &self->user[u], f);

	if (i >= 0)
		snprintf(rule, size, "settings:%s[%d]", user_keys[u], i);
	return i >= 0;
}

/* The first match of built-in list b: rule "text:<name>[i]". */
static bool text_rule(const struct classify *self, const struct facts *f, enum builtin_id b,
		      char *rule, size_t size)
{
	int i = first_match(self, &self->builtin[b], f);

	if (i >= 0)
		snprintf(rule, size, "text:%s[%d]", builtins[b].name, i);
	return i >= 0;
}

/* The first status that pred holds for: rule "http-status:<n>". */
static bool status_rule(const struct facts *f, bool (*pred)(int), char *rule, size_t size)
{
	for (size_t k = 0; k < f->nstatus; k++) {
		if (pred(f->statuses[k])) {
			snprintf(rule, size, "http-status:%d", f->statuses[k]);
			return true;
		}
	}
	return false;
}

static bool is_413(int s)
{
	return s == 413;
}

static bool is_402(int s)
{
	return s == 402;
}

/* The first typed value of category a or b: rule "<family>:<value>". */
static bool typed_rule(const struct facts *f, enum typed_cat a, enum typed_cat b, char *rule,
		       size_t size)
{
	int ta = f->typed[a], tb = f->typed[b], t;

	t = ta < 0 || (tb >= 0 && f->typed_seq[b] < f->typed_seq[a]) ? tb : ta;
	if (t >= 0)
		snprintf(rule, size, "%s:%s", typed_values[t].family, typed_values[t].value);
	return t >= 0;
}

/* The decision table (classify.h). Fills out->verdict, ->overload, ->rule. */
/* The server said when to come back, and nothing else speaks against it:
 * "Please try again in 20s" alone is worth the wait (a client's own
 * countdown is no hint, so it does not count). */
static bool stated_wait(const struct facts *f, char *rule, size_t size)
{
	/* The text's own wait: rate-limit headers come with every response. */
	if (f->text_hint < 0)
		return false;
	snprintf(rule, size, "stated-wait");
	return true;
}

/* The first match of built-in list b among the indices in `mask`. */
static bool text_rule_masked(const struct classify *self, const struct facts *f,
			     enum builtin_id b, unsigned mask, char *rule, size_t size)
{
	const struct classify_list *list = &self->builtin[b];

	for (size_t i = 0; i < list->count; i++) {
		if ((mask & (1u << i)) && match_at(self, list->codes[i], f, 0) >= 0) {
			snprintf(rule, size, "text:%s[%zu]", builtins[b].name, i);
			return true;
		}
	}
	return false;
}

/* The typed values that mean a rate or quota window, not a broken server. */
static bool typed_is_rate_limit(const struct facts *f)
{
	static const char *const limits[] = {
		"rate_limit_error", "rate_limit_exceeded", "rate_limited", "throttling_error",
		"RESOURCE_EXHAUSTED", "ThrottlingException", "ServiceQuotaExceededException",
	};
	int t = f->typed[TYPED_RETRY];

	for (size_t k = 0; t >= 0 && k < sizeof(limits) / sizeof(limits[0]); k++)
		if (strcmp(typed_values[t].value, limits[k]) == 0)
			return true;
	return false;
}

/* Where step 4's evidence came from. */
enum retry_evidence {
	EV_NONE,
	EV_LIMIT,	/* a rate or quota window: a user's list, 429, a rate-limit type or
			 * wording, a stated wait */
	EV_SERVER,	/* a broken or busy server, a gateway, the transport */
};

/* The model or a shared pool is saturated (classify.h: `overload`). */
static bool overloaded(const struct classify *self, const struct facts *f)
{
	return has_status(f, 529) || f->typed[TYPED_OVERLOAD] >= 0 ||
	       first_match(self, &self->builtin[B_OVERLOAD], f) >= 0 ||
	       first_match(self, &self->user[U_OVERLOAD], f) >= 0;
}

/* Step 4's verdict from its evidence and rule: retried, unless a rate or
 * quota window states a wait of 15 min or more (a spent quota; a server
 * down for maintenance is not, its long wait meets retry.maxDelayMs
 * instead). */
static void retry_verdict(const struct facts *f, enum retry_evidence ev, bool overload,
			  const char *retry, struct classify_result *out)
{
	if (ev == EV_LIMIT && f->hint >= LONG_WAIT_MS) {
		out->verdict = CLASSIFY_USAGE_LIMIT;
		out->overload = false;
		snprintf(out->rule, sizeof(out->rule), "long-wait>=%lldms:%.70s", (long long)LONG_WAIT_MS,
			 retry);
		return;
	}
	out->verdict = CLASSIFY_RETRYABLE;
	out->overload = overload;
	snprintf(out->rule, sizeof(out->rule), "%s", retry);
}

/* A user's list of steps 2-4 matches: the settings speak before the typed
 * body does. */
static bool user_speaks(const struct classify *self, const struct facts *f)
{
	static const enum user_id lists[] = { U_USAGE_LIMIT, U_NON_RETRYABLE, U_RETRYABLE,
					      U_OVERLOAD };

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		if (first_match(self, &self->user[lists[i]], f) >= 0)
			return true;
	return false;
}

/* Step 1b (classify.h): a google.rpc.Status body's ErrorInfo reason, then
 * its QuotaFailure's window. */
static bool google_limits(const struct classify *self, const struct facts *f,
			  struct classify_result *out)
{
	const struct google_status *g = &f->google;
	char rule[sizeof(out->rule)];

	if (!g->found || user_speaks(self, f))
		return false;
	if (g->reason[0] != '\0' && (IN_LIST(g->reason, google_never_reasons) ||
				     IN_LIST(g->reason, google_usage_reasons))) {
		out->verdict = IN_LIST(g->reason, google_never_reasons) ? CLASSIFY_NOT_RETRYABLE
									 : CLASSIFY_USAGE_LIMIT;
		snprintf(out->rule, sizeof(out->rule), "google-reason:%s", g->reason);
		return true;
	}
	switch (g->scope) {
	case GOOGLE_SCOPE_ZERO:
	case GOOGLE_SCOPE_DAY:
		out->verdict = CLASSIFY_USAGE_LIMIT;
		snprintf(out->rule, sizeof(out->rule), "google-quota%s:%.70s",
			 g->scope == GOOGLE_SCOPE_ZERO ? "-zero" : "", g->quota);
		return true;
	case GOOGLE_SCOPE_MINUTE:
		/* "limit: 0" in the words: the tier has none (step 2). */
		if (first_match(self, &self->builtin[B_LIMIT_ZERO], f) >= 0)
			return false;
		snprintf(rule, sizeof(rule), "google-quota:%.70s", g->quota);
		retry_verdict(f, EV_LIMIT, false, rule, out);
		return true;
	case GOOGLE_SCOPE_NONE:
		break;
	}
	return false;
}

/* Step 2b: the body's error.status, once a spent quota's words have had
 * their say. */
static bool google_status_rule(const struct classify *self, const struct facts *f,
			       struct classify_result *out)
{
	const struct google_status *g = &f->google;
	char rule[sizeof(out->rule)];

	if (!g->found || g->status[0] == '\0' || user_speaks(self, f))
		return false;
	snprintf(rule, sizeof(rule), "google-status:%s", g->status);
	if (IN_LIST(g->status, google_never_statuses)) {
		out->verdict = CLASSIFY_NOT_RETRYABLE;
		memcpy(out->rule, rule, sizeof(rule));
		return true;
	}
	if (!IN_LIST(g->status, google_retry_statuses))
		return false;
	retry_verdict(f, strcmp(g->status, "RESOURCE_EXHAUSTED") == 0 ? EV_LIMIT : EV_SERVER,
		      overloaded(self, f), rule, out);
	return true;
}

static void decide(const struct classify *self, const struct facts *f,
		   struct classify_result *out)
{
	char *rule = out->rule;
	const size_t size = sizeof(out->rule);
	char bad[sizeof(out->rule)] = "", retry[sizeof(out->rule)] = "";
	enum retry_evidence ev = EV_NONE;
	bool overload, typed_retry, transport;

	out->overload = false;
	/* 1. context overflow */
	out->verdict = CLASSIFY_CONTEXT_OVERFLOW;
	if (user_rule(self, f, U_CONTEXT_OVERFLOW, rule, size) || status_rule(f, is_413, rule, size) ||
	    typed_rule(f, TYPED_OVERFLOW, TYPED_OVERFLOW, rule, size) ||
	    text_rule(self, f, B_CONTEXT_OVERFLOW, rule, size))
		return;
	/* 1b. Google's typed body: the key refused, the quota's window */
	if (google_limits(self, f, out))
		return;
	/* 2. spent quota, credit, billing */
	out->verdict = CLASSIFY_USAGE_LIMIT;
	if (user_rule(self, f, U_USAGE_LIMIT, rule, size) || status_rule(f, is_402, rule, size) ||
	    typed_rule(f, TYPED_USAGE, TYPED_USAGE, rule, size) ||
	    text_rule(self, f, B_LIMIT_ZERO, rule, size) ||
	    text_rule(self, f, B_USAGE_LIMIT, rule, size))
		return;
	/* Gemini sends the same quota sentence for per-minute and per-day: it is
	 * a spent quota unless a minute window is named or the server asks for a
	 * short wait ("Please retry in 37.5s"). */
	if (first_match(self, &self->builtin[B_PER_MINUTE], f) < 0 &&
	    !(f->text_hint >= 0 && f->text_hint < LONG_WAIT_MS) &&
	    text_rule(self, f, B_QUOTA_WORD, rule, size))
		return;
	/* 2b. Google's typed body: error.status */
	if (google_status_rule(self, f, out))
		return;
	/* 3. never retried. Typed retry evidence or a transport failure beats the
	 * weaker wordings (WEAK_NEVER), not authentication or certificates. */
	out->verdict = CLASSIFY_NOT_RETRYABLE;
	typed_retry = status_rule(f, is_retry_status, retry, sizeof(retry)) ||
		      f->typed[TYPED_RETRY] >= 0 || f->typed[TYPED_OVERLOAD] >= 0;
	transport = first_match(self, &self->builtin[B_TRANSPORT], f) >= 0;
	if (user_rule(self, f, U_NON_RETRYABLE, rule, size) ||
	    status_rule(f, is_never_status, rule, size) ||
	    typed_rule(f, TYPED_NON, TYPED_NON, rule, size) ||
	    text_rule_masked(self, f, B_NON_RETRYABLE,
			     typed_retry || transport ? ~WEAK_NEVER : ~0u, rule, size))
		return;
	/* 4. retried. A generic bad request does not beat a 429 or "capacity"
	 * next to it; it only mutes the weak transient wordings. */
	retry[0] = '\0';
	if (!status_rule(f, is_bad_status, bad, sizeof(bad)) &&
	    !typed_rule(f, TYPED_BAD, TYPED_BAD, bad, sizeof(bad)))
		(void)text_rule(self, f, B_BAD_REQUEST, bad, sizeof(bad));
	overload = overloaded(self, f);
	if (user_rule(self, f, U_RETRYABLE, retry, sizeof(retry)) ||
	    user_rule(self, f, U_OVERLOAD, retry, sizeof(retry)))
		ev = EV_LIMIT;
	else if (status_rule(f, is_retry_status, retry, sizeof(retry)))
		ev = has_status(f, 429) ? EV_LIMIT : EV_SERVER;
	else if (typed_rule(f, TYPED_RETRY, TYPED_OVERLOAD, retry, sizeof(retry)))
		ev = typed_is_rate_limit(f) ? EV_LIMIT : EV_SERVER;
	else if (text_rule_masked(self, f, B_RATE_LIMIT, 0x7, retry, sizeof(retry)))
		ev = EV_LIMIT;
	else if (text_rule(self, f, B_RATE_LIMIT, retry, sizeof(retry)) ||
		 text_rule(self, f, B_GATEWAY, retry, sizeof(retry)) ||
		 (bad[0] == '\0' && text_rule(self, f, B_TRANSIENT, retry, sizeof(retry))))
		ev = EV_SERVER;
	else if (bad[0] == '\0' && stated_wait(f, retry, sizeof(retry)))
		ev = EV_LIMIT;
	if (ev != EV_NONE) {
		retry_verdict(f, ev, overload, retry, out);
		return;
	}
	/* 5. anything else */
	out->verdict = CLASSIFY_NOT_RETRYABLE;
	snprintf(rule, size, "%s", bad[0] != '\0' ? bad : "default");
}

void classify_decide(struct classify *self, const struct classify_input *in,
		     struct classify_result *out)
{
	struct facts f = { 0 };
	int64_t hint;

	assert(self != NULL && in != NULL && out != NULL);
	if (make_ready(self) != 0) {
		out->verdict = CLASSIFY_NOT_RETRYABLE;
		out->overload = false;
		out->hint_ms = -1;
		snprintf(out->rule, sizeof(out->rule), "out-of-memory");
		return;
	}
	f.hay = self->text;
	f.len = errtext_normalize(self->text, in->text, in->text != NULL ? in->len : 0, in->body,
				  in->body != NULL ? in->body_len : 0);
	find_statuses(self, in->status, &f);
	find_typed(self, in->headers, &f);
	f.text_hint = hint_in_text(f.hay, f.len, in->now_ms, &hint) ? hint : -1;
	google_read(in->body, in->body != NULL ? in->body_len : 0, &f.google);
	/* RetryInfo is the server's own typed word on the wait. */
	if (f.google.retry_ms >= 0)
		f.text_hint = f.google.retry_ms;
	f.hint = hint_in_headers(in->headers, in->now_ms, true, &hint) ? hint : f.text_hint;
	decide(self, &f, out);
	out->hint_ms = f.hint;
	/* A spent quota does not come back when a per-minute bucket refills:
	 * only the server's word on this refusal counts (retry-after, the text). */
	if (out->verdict == CLASSIFY_USAGE_LIMIT)
		out->hint_ms = hint_in_headers(in->headers, in->now_ms, false, &hint) ? hint
											: f.text_hint;
}

static void decide_text(struct classify *self, const char *message, size_t len,
			struct classify_result *out)
{
	struct classify_input in = { .text = message, .len = message != NULL ? len : 0 };

	classify_decide(self, &in, out);
}

enum classify_verdict classify_error(struct classify *self, const char *message, size_t len)
{
	struct classify_result r;

	decide_text(self, message, len, &r);
	return r.verdict;
}

bool classify_is_usage_limit(struct classify *self, const char *message, size_t len)
{
	return classify_error(self, message, len) == CLASSIFY_USAGE_LIMIT;
}

bool classify_is_overload(struct classify *self, const char *message, size_t len)
{
	struct classify_result r;

	decide_text(self, message, len, &r);
	return r.overload;
}

const char *classify_verdict_name(enum classify_verdict verdict)
{
	switch (verdict) {
	case CLASSIFY_RETRYABLE:
		return "retryable";
	case CLASSIFY_NOT_RETRYABLE:
		return "not-retryable";
	case CLASSIFY_CONTEXT_OVERFLOW:
		return "context-overflow";
	case CLASSIFY_USAGE_LIMIT:
		return "usage-limit";
	}
	return "unknown";
}

const char *classify_class_name(enum classify_verdict verdict)
{
	switch (verdict) {
	case CLASSIFY_RETRYABLE:
		return "retryable";
	case CLASSIFY_NOT_RETRYABLE:
		return "non_retryable";
	case CLASSIFY_CONTEXT_OVERFLOW:
		return "context_overflow";
	case CLASSIFY_USAGE_LIMIT:
		return "usage_limit";
	}
	return "unknown";
}

json_t *classify_result_json(const struct classify_result *r)
{
	return json_pack("{s:s, s:b, s:o, s:s}", "errorClass", classify_class_name(r->verdict),
			 "overload", r->overload,
			 "hintMs", r->hint_ms >= 0 ? json_integer(r->hint_ms) : json_null(),
			 "rule", r->rule);
}

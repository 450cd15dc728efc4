#include "base/hint.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

Suite *hint_suite(void);

/* Wed, 21 Oct 2015 07:28:00 GMT */
#define NOW_MS INT64_C(1445412480000)
/* 2025-08-19T10:40:00Z: 15 600 s before the epoch in the Claude texts. */
#define LATER_MS INT64_C(1755600000000)

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* The hint in `text` at `now`, or -1 for none. The text is copied to an
 * exact-size heap buffer, so ASan reports any read past its end. */
static int64_t hint_at(const char *text, int64_t now)
{
	size_t len = strlen(text);
	char *buf = malloc(len > 0 ? len : 1);
	int64_t ms = -12345;
	bool found;

	ck_assert_ptr_nonnull(buf);
	memcpy(buf, text, len);
	found = hint_parse(buf, len, now, &ms);
	free(buf);
	if (!found) {
		ck_assert_int_eq(ms, -12345);
		return -1;
	}
	ck_assert_int_ge(ms, 0);
	ck_assert_int_le(ms, HINT_MAX_MS);
	return ms;
}

static int64_t hint(const char *text)
{
	return hint_at(text, 0);
}

/* Text forms, each with the reference classifier's answer (stated_wait of
 * tests/fixtures/errors' prototype); now 0 is no clock. */
struct text_case {
	const char *text;
	int64_t now;
	int64_t ms;
};

static const struct text_case text_cases[] = {
	{ "Rate limited. Retry after: 45", 0, 45000 },
	{ "retry_delay { seconds: 37 }", 0, 37000 },
	{ "{\"error\":\"Model x is currently loading\",\"estimated_time\":20.0}", 0, 20000 },
	{ "please retry after 3 attempts", 0, -1 },
	{ "retry-after-ms: 1500", 0, 1500 },
	{ "retry_after_ms=250", 0, 250 },
	{ "'retry-after-ms', '98497'", 0, 98497 },
	{ "Retry-After-Ms : 7.5", 0, 8 },
	{ "\"retryDelay\": \"37s\"", 0, 37000 },
	{ "'retryDelay': '1.5s'", 0, 1500 },
	{ "\"retryDelay\": \"3\"", 0, -1 },
	{ "\"retryDelay\": 3s", 0, -1 },
	{ "\"resets_in_seconds\": 3600", 0, 3600000 },
	{ "reset_in_seconds=>42", 0, 42000 },
	{ "resets_in_seconds, [\"12\"]", 0, 12000 },
	{ "retry-after: 5", 0, 5000 },
	{ "Retry-After: 1.5, more", 0, 1500 },
	{ "retry_after=20", 0, 20000 },
	{ "retry-after: 5s", 0, -1 },
	{ "retry-after: 5 seconds", 0, -1 },
	{ "retry-after: 5.", 0, -1 },
	{ "retry-after: 12abc", 0, -1 },
	{ "x-ratelimit-reset-tokens: 6m0s", 0, 360000 },
	{ "x-ratelimit-reset-requests => [\"20ms\"]", 0, 20 },
	{ "x-ratelimit-reset-tokens: 17", 0, -1 },
	{ "x-ratelimit-reset-requests: 1s x-ratelimit-reset-tokens: 9s", 0, 1000 },
	{ "Please try again in 20s.", 0, 20000 },
	{ "try again after 6 seconds", 0, 6000 },
	{ "Please retry in 37.5s", 0, 37500 },
	{ "Please retry after 6 seconds", 0, 6000 },
	{ "retry in about 10 sec", 0, 10000 },
	{ "try again in ~ 3 mins", 0, 180000 },
	{ "retry in approximately 2 hours", 0, 7200000 },
	{ "try again in 9m38.016s", 0, 578016 },
	{ "reset after 12h34m16s", 0, 45256000 },
	{ "Your quota resets in 5 days 22 hours", 0, 511200000 },
	{ "resets after 2 days 17 hours 14 minutes", 0, 234840000 },
	{ "Please wait 30 seconds", 0, 30000 },
	{ "wait for about 2 minutes", 0, 120000 },
	{ "please wait for 5.237548564s", 0, 5238 },
	{ "wait a minute", 0, -1 },
	{ "We will retry in 5s", 0, -1 },
	{ "you'll retry after 3s", 0, -1 },
	{ "Retrying in 4 seconds", 0, -1 },
	{ "Retry 10/15 after 3s", 0, -1 },
	{ "waiting 121673ms", 0, -1 },
	{ "try again in 5 days", 0, 432000000 },
	{ "try again in 2 days, 3 hours and 4 minutes", 0, 183840000 },
	{ "try again in 1.5 h", 0, 5400000 },
	{ "try again in 5mo", 0, -1 },
	{ "try again in 5 sx", 0, -1 },
	{ "try again in 20ms", 0, 20 },
	{ "try again at Jul 5th", 0, -1 },
	{ "resets at 5pm", 0, -1 },
	{ "try again in a moment, or try again in 3s", 0, 3000 },
	{ "reset after 2s; try again in 9s", 0, 2000 },
	{ "try again in 9s; reset after 2s", 0, 9000 },
	{ "try again in 9s; \"retryDelay\": \"4s\"", 0, 4000 },
	{ "retry-after: x; retry-after: 4", 0, 4000 },
	{ "retry-after-ms: soon; retry-after-ms: 40", 0, 40 },
	{ "x-ratelimit-reset-tokens: abc, try again in 2s", 0, 2000 },
	{ "x-ratelimit-reset-tokens: 5, x-ratelimit-reset-tokens: 6s, wait 1s", 0, 1000 },
	{ "usage limit reached|1755615600", 0, -1 },
	{ "usage limit reached|1755615600", LATER_MS, 15600000 },
	{ "usage limit reached|17556156001", 0, -1 },
	{ "|1755615600x", 0, -1 },
	{ "|1755615600.", 0, -1 },
	{ "|1755615600.", LATER_MS, 15600000 },
	{ "try again in 0.0004s", 0, 0 },
	{ "try again in 0.0005s", 0, 1 },
	{ "try again in 1.0005s", 0, 1001 },
	{ "try again in 2.5ms", 0, 3 },
	{ "try again in 5é", 0, -1 },
	{ "try again in 5sé", 0, -1 },
};

START_TEST(test_text_forms_as_the_reference_reads_them)
{
	const struct text_case *c = &text_cases[_i];

	ck_assert_msg(hint_at(c->text, c->now) == c->ms, "\"%s\" (now %lld): %lld, not %lld",
		      c->text, (long long)c->now, (long long)hint_at(c->text, c->now),
		      (long long)c->ms);
}
END_TEST

struct header_case {
	const char *name;
	const char *json;
	int64_t now;
	int64_t ms;
};

static const struct header_case header_cases[] = {
	{ "a bucket with requests left is not what blocks",
	  "{\"x-ratelimit-remaining-tokens\": \"9000\", \"x-ratelimit-reset-tokens\": \"6m0s\","
	  " \"x-ratelimit-remaining-requests\": \"0\", \"x-ratelimit-reset-requests\": \"1s\"}",
	  0, 1000 },
	{ "x-ratelimit-reset-ms as a delay",
	  "{\"x-ratelimit-reset-ms\": \"300\"}",
	  0, 300 },
	{ "x-ratelimit-reset-ms as an epoch",
	  "{\"x-ratelimit-reset-ms\": \"1445412510000\"}",
	  INT64_C(1445412480000), 30000 },
	{ "x-ratelimit-reset-ms as an epoch past int64 is the longest wait",
	  "{\"x-ratelimit-reset-ms\": \"85000085000088888888888888888888888\"}",
	  NOW_MS, HINT_MAX_MS },
	{ "x-ratelimit-reset as an epoch past int64 is the longest wait",
	  "{\"x-ratelimit-reset\": \"85000085000088888888888888888888888\"}",
	  NOW_MS, HINT_MAX_MS },
	{ "x-ratelimit-reset in seconds",
	  "{\"x-ratelimit-reset\": \"0.4\"}",
	  0, 400 },
	{ "retry-after seconds",
	  "{\"retry-after\": \"20\"}",
	  0, 20000 },
	{ "retry-after fraction, any case",
	  "{\"Retry-After\": \" 1.5 \"}",
	  0, 1500 },
	{ "retry-after integer value",
	  "{\"retry-after\": 20}",
	  0, 20000 },
	{ "retry-after HTTP-date with now",
	  "{\"retry-after\": \"Wed, 21 Oct 2015 07:28:30 GMT\"}",
	  NOW_MS, 30000 },
	{ "retry-after HTTP-date with the Date header",
	  "{\"Retry-After\": \"Wed, 21 Oct 2015 07:28:30 GMT\","
	  " \"Date\": \"Wed, 21 Oct 2015 07:28:00 GMT\"}",
	  0, 30000 },
	{ "the Date header beats now (the server's clock)",
	  "{\"retry-after\": \"Wed, 21 Oct 2015 07:28:30 GMT\","
	  " \"date\": \"Wed, 21 Oct 2015 07:28:00 GMT\"}",
	  NOW_MS + 10000, 30000 },
	{ "retry-after HTTP-date without a clock",
	  "{\"retry-after\": \"Wed, 21 Oct 2015 07:28:30 GMT\"}",
	  0, -1 },
	{ "retry-after date in the past",
	  "{\"retry-after\": \"Wed, 21 Oct 2015 07:27:00 GMT\"}",
	  NOW_MS, 0 },
	{ "retry-after garbage",
	  "{\"retry-after\": \"soon\"}",
	  0, -1 },
	{ "retry-after-ms beats retry-after",
	  "{\"retry-after\": \"5\", \"retry-after-ms\": \"200\"}",
	  0, 200 },
	{ "retry-after-ms rounded",
	  "{\"retry-after-ms\": \"1500.5\"}",
	  0, 1501 },
	{ "retry-after-ms garbage falls through",
	  "{\"retry-after-ms\": \"soon\", \"retry-after\": \"5\"}",
	  0, 5000 },
	{ "x-ratelimit-reset the longer",
	  "{\"x-ratelimit-reset-requests\": \"1s\", \"x-ratelimit-reset-tokens\": \"6m0s\"}",
	  0, 360000 },
	{ "x-ratelimit-reset the exhausted",
	  "{\"x-ratelimit-reset-requests\": \"1s\", \"x-ratelimit-remaining-requests\": \"0\","
	  " \"x-ratelimit-reset-tokens\": \"6m0s\", \"x-ratelimit-remaining-tokens\": \"12\"}",
	  0, 1000 },
	{ "x-ratelimit-reset ms",
	  "{\"x-ratelimit-reset-tokens\": \"20ms\"}",
	  0, 20 },
	{ "x-ratelimit-reset minutes and seconds",
	  "{\"x-ratelimit-reset-tokens\": \"0m0.6s\"}",
	  0, 600 },
	{ "x-ratelimit-reset garbage",
	  "{\"x-ratelimit-reset-tokens\": \"soon\"}",
	  0, -1 },
	{ "anthropic reset with the Date header",
	  "{\"anthropic-ratelimit-tokens-reset\": \"2015-10-21T07:29:00Z\","
	  " \"anthropic-ratelimit-tokens-remaining\": \"0\","
	  " \"date\": \"Wed, 21 Oct 2015 07:28:00 GMT\"}",
	  0, 60000 },
	{ "anthropic reset not exhausted",
	  "{\"anthropic-ratelimit-tokens-reset\": \"2015-10-21T07:29:00Z\","
	  " \"anthropic-ratelimit-tokens-remaining\": \"10\","
	  " \"date\": \"Wed, 21 Oct 2015 07:28:00 GMT\"}",
	  0, -1 },
	{ "anthropic reset the latest exhausted",
	  "{\"anthropic-ratelimit-input-tokens-reset\": \"2015-10-21T09:29:00+02:00\","
	  " \"anthropic-ratelimit-input-tokens-remaining\": \"0\","
	  " \"anthropic-ratelimit-output-tokens-reset\": \"2015-10-21T07:28:10.5Z\","
	  " \"anthropic-ratelimit-output-tokens-remaining\": \"0\","
	  " \"anthropic-ratelimit-requests-reset\": \"2015-10-21T07:38:00Z\","
	  " \"anthropic-ratelimit-requests-remaining\": \"3\","
	  " \"Date\": \"Wed, 21 Oct 2015 07:28:00 GMT\"}",
	  0, 60000 },
	{ "anthropic reset without a clock",
	  "{\"anthropic-ratelimit-tokens-reset\": \"2015-10-21T07:29:00Z\","
	  " \"anthropic-ratelimit-tokens-remaining\": \"0\"}",
	  0, -1 },
	{ "anthropic reset with now",
	  "{\"Anthropic-RateLimit-Tokens-Reset\": \"2015-10-21T07:29:00z\","
	  " \"anthropic-ratelimit-tokens-remaining\": \"0\"}",
	  NOW_MS, 60000 },
	{ "anthropic reset in the past",
	  "{\"anthropic-ratelimit-tokens-reset\": \"2015-10-21T07:27:00Z\","
	  " \"anthropic-ratelimit-tokens-remaining\": \"0\"}",
	  NOW_MS, 0 },
	{ "no wait header",
	  "{\"content-type\": \"application/json\"}",
	  0, -1 },
};

START_TEST(test_header_forms_as_the_reference_reads_them)
{
	const struct header_case *c = &header_cases[_i];
	json_error_t jerr;
	json_t *headers = json_loads(c->json, 0, &jerr);
	int64_t ms = -12345;
	bool found;

	ck_assert_msg(headers != NULL, "%s: %s", c->name, jerr.text);
	found = hint_in_headers(headers, c->now, true, &ms);
	json_decref(headers);
	ck_assert_msg(found == (c->ms >= 0), "%s: found %d", c->name, found);
	ck_assert_msg(!found || ms == c->ms, "%s: %lld, not %lld", c->name, (long long)ms,
		      (long long)c->ms);
}
END_TEST

START_TEST(test_headers_that_are_not_an_object_give_no_hint)
{
	json_t *array = json_pack("[s]", "retry-after");
	int64_t ms = -1;

	ck_assert(!hint_in_headers(NULL, NOW_MS, true, &ms));
	ck_assert(!hint_in_headers(array, NOW_MS, true, &ms));
	ck_assert_int_eq(ms, -1);
	json_decref(array);
}
END_TEST

START_TEST(test_an_impossible_date_gives_no_hint)
{
	json_t *h = json_pack("{s:s, s:s}", "retry-after", "Wed, 31 Feb 2015 07:28:30 GMT",
			      "anthropic-ratelimit-tokens-reset", "2015-13-21T07:29:00Z");
	int64_t ms = -1;

	json_object_set_new(h, "anthropic-ratelimit-tokens-remaining", json_string("0"));
	ck_assert(!hint_in_headers(h, NOW_MS, true, &ms));
	json_decref(h);
}
END_TEST

/* RFC 9110 makes a recipient accept the two obsolete HTTP-date forms too. */
START_TEST(test_retry_after_in_rfc850_and_asctime_dates_is_read)
{
	static const struct {
		const char *value;
		int64_t ms;
	} cases[] = {
		{ "Wednesday, 21-Oct-15 07:28:30 GMT", 30000 },
		{ "Wednesday, 21-Oct-15 07:28:30 GMT ", 30000 },
		{ "Wednesday, 21-Oct-15 07:28:30 GMT", 30000 },
		{ "wednesday, 21-oct-15 07:29:00 gmt", 60000 },
		{ "Wed, 21-Oct-15 07:28:10 GMT", 10000 },
		{ "Wed Oct 21 07:28:30 2015", 30000 },
		{ "Wed Oct 21 07:28:30 2015 ", 30000 },
		{ "Thu Oct 22 07:28:00 2015", 86400000 },
		{ "Sun Nov  6 08:49:37 1994", 0 },
		{ "Sunday, 06-Nov-94 08:49:37 GMT", 0 },
		/* 2069, not 1969: years below 70 are this century's. */
		{ "Monday, 21-Oct-69 07:28:00 GMT", INT64_C(3149566080000) - NOW_MS },
		{ "Wednesday, 31-Feb-15 07:28:30 GMT", -1 },
		{ "Wednesday, 21-Oct-2015 07:28:30 GMT", -1 },
		{ "Wed Oct 21 07:28:30", -1 },
		{ "Wed Oct 21 07:28:30 2015 GMT", -1 },
		{ "Wed Oct 32 07:28:30 2015", -1 },
		{ "Wednesdays, 21-Oct-15 07:28:30 GMT", -1 },
	};

	for (size_t k = 0; k < NELEMS(cases); k++) {
		json_t *h = json_pack("{s:s}", "retry-after", cases[k].value);
		int64_t ms = -1;
		bool got = hint_in_headers(h, NOW_MS, false, &ms);

		json_decref(h);
		ck_assert_msg(got == (cases[k].ms >= 0) && (!got || ms == cases[k].ms),
			      "%s: got %d %lld, want %lld", cases[k].value, got, (long long)ms,
			      (long long)cases[k].ms);
	}
}
END_TEST

/* The server's Date header may be in an obsolete form too. */
START_TEST(test_date_header_in_an_obsolete_form_is_the_servers_clock)
{
	json_t *h = json_pack("{s:s, s:s}", "retry-after", "Wed, 21 Oct 2015 07:28:30 GMT",
			      "date", "Wed Oct 21 07:28:00 2015");
	int64_t ms = -1;

	ck_assert(hint_in_headers(h, 0, false, &ms));
	ck_assert_int_eq(ms, 30000);
	json_decref(h);
	ck_assert(hint_parse("retry-after: Wednesday, 21-Oct-15 07:28:45 GMT",
			     strlen("retry-after: Wednesday, 21-Oct-15 07:28:45 GMT"), NOW_MS, &ms));
	ck_assert_int_eq(ms, 45000);
}
END_TEST

START_TEST(test_duration_grammar)
{
	static const struct {
		const char *text;
		int64_t ms;
	} cases[] = {
		{ "9m38.016s", 578016 },
		{ "12h34m16s", 45256000 },
		{ "5 days 22 hours", 511200000 },
		{ "2 days 17 hours 14 minutes", 234840000 },
		{ "2 days, 3 hours and 4 minutes", 183840000 },
		{ "20ms", 20 },
		{ "5.237548564s", 5238 },
		{ "6m0s", 360000 },
		{ "1 millisecond", 1 },
		{ "3 secs", 3000 },
		{ "1hr 2mins", 3720000 },
		{ "2d", 172800000 },
		/* The parts read up to the first that is not one. */
		{ "5s and then", 5000 },
		{ "1h 2x", 3600000 },
	};
	static const char *const none[] = { "", "s", "5", "5 mo", "5sx", "five seconds", ".5s",
					    " 5s" };
	int64_t ms;

	for (size_t i = 0; i < NELEMS(cases); i++) {
		ck_assert_msg(hint_duration(cases[i].text, strlen(cases[i].text), &ms),
			      "\"%s\"", cases[i].text);
		ck_assert_msg(ms == cases[i].ms, "\"%s\": %lld", cases[i].text, (long long)ms);
	}
	for (size_t i = 0; i < NELEMS(none); i++)
		ck_assert_msg(!hint_duration(none[i], strlen(none[i]), &ms), "\"%s\"", none[i]);
	ck_assert(!hint_duration(NULL, 0, &ms));
	/* The length bounds the unit: "5se" cut to "5s". */
	ck_assert(hint_duration("5se", 2, &ms));
	ck_assert_int_eq(ms, 5000);
}
END_TEST

START_TEST(test_a_client_countdown_is_no_hint)
{
	ck_assert_int_eq(hint("529 Overloaded · Retrying in 4s · attempt 6/10"), -1);
	ck_assert_int_eq(hint("Request failed, will retry in 5s (attempt 2/5)"), -1);
	ck_assert_int_eq(hint("We'll retry after 3s"), -1);
	ck_assert_int_eq(hint("Retry 10/15 after 3s"), -1);
	ck_assert_int_eq(hint("waiting 121673ms before the next attempt"), -1);
	/* The server's wait in the same line still counts. */
	ck_assert_int_eq(hint("Retrying in 4s: Please retry in 37s"), 37000);
}
END_TEST

START_TEST(test_header_lines_of_the_http_provider)
{
	ck_assert_int_eq(hint_at("retry-after: Wed, 21 Oct 2015 07:28:30 GMT", NOW_MS), 30000);
	ck_assert_int_eq(hint_at("Retry-After: Wed, 21 Oct 2015 07:27:00 GMT", NOW_MS), 0);
	ck_assert_int_eq(hint("retry-after: Wed, 21 Oct 2015 07:28:30 GMT"), -1);
	ck_assert_int_eq(hint("x-ratelimit-reset-ms: 300"), 300);
	ck_assert_int_eq(hint_at("x-ratelimit-reset-ms: 1445412482500", NOW_MS), 2500);
	ck_assert_int_eq(hint("x-ratelimit-reset-ms: 1445412482500"), -1);
	ck_assert_int_eq(hint("x-ratelimit-reset: 0.4"), 400);
	ck_assert_int_eq(hint_at("x-ratelimit-reset: 1445412485", NOW_MS), 5000);
	/* Only as the whole text. */
	ck_assert_int_eq(hint("error x-ratelimit-reset: 30"), -1);
	ck_assert_int_eq(hint("x-ratelimit-reset: 30s"), -1);
}
END_TEST

START_TEST(test_huge_numbers_clamp_instead_of_overflowing)
{
	ck_assert_int_eq(hint("retry-after-ms: 99999999999999999999999999999999"), HINT_MAX_MS);
	ck_assert_int_eq(hint("retry-after: 99999999999999999999"), HINT_MAX_MS);
	/* 2^64 + 1: wrapping instead of saturating would give 1 ms. */
	ck_assert_int_eq(hint("retry-after-ms: 18446744073709551617"), HINT_MAX_MS);
	ck_assert_int_eq(hint("retry-after: 9223372036854775807.9"), HINT_MAX_MS);
	ck_assert_int_eq(hint("try again in 99999999999999999999 hours"), HINT_MAX_MS);
	ck_assert_int_eq(hint("try again in 1" "000000000000000000000000000000000000000000000000000"
			      "00000000000000000000000000000000000000000000000000000000000000000000"
			      "00000000000000000000000000000000000000000000000000000000000000000000"
			      "00000000000000000000000000000000000000000000000000000000000000000000"
			      "00000000000000000000000000000000000000000000000000000000000000000000"
			      "000000000000000000000000000000000000000000000000000000000000 days"),
			 HINT_MAX_MS);
	ck_assert_int_eq(hint("reset after 99999999999999999999h99999999999999999999m9s"),
			 HINT_MAX_MS);
	ck_assert_int_eq(hint("try again in 0.000000000000000000000000000000000000000001s"), 0);
	ck_assert_int_eq(hint("x-ratelimit-reset: 999999999999999999999999"), -1);
	ck_assert_int_eq(hint_at("x-ratelimit-reset: 999999999999999999999999", INT64_MIN),
			 HINT_MAX_MS);
	ck_assert_int_eq(hint_at("x-ratelimit-reset: 1000000001", INT64_MAX), 0);
	ck_assert_int_eq(hint_at("retry-after: Wed, 21 Oct 2015 07:28:30 GMT", INT64_MIN),
			 HINT_MAX_MS);
	ck_assert_int_eq(hint_at("usage limit reached|9999999999", INT64_MIN), HINT_MAX_MS);
	ck_assert_int_eq(hint_at("usage limit reached|0000000001", INT64_MAX), 0);
}
END_TEST

START_TEST(test_length_bounds_the_text)
{
	static const char text[] = "retry-after: 12";
	int64_t ms = 0;

	ck_assert(!hint_parse(text, 0, NOW_MS, &ms));
	ck_assert(!hint_parse(NULL, 0, NOW_MS, &ms));
	/* Cut to "retry-after: 1". */
	ck_assert(hint_parse(text, sizeof(text) - 2, NOW_MS, &ms));
	ck_assert_int_eq(ms, 1000);
	ck_assert_int_eq(hint("retry-after-m"), -1);
	ck_assert_int_eq(hint("retry-after-ms:"), -1);
	ck_assert_int_eq(hint("Please retry in 5"), -1);
	ck_assert_int_eq(hint("\"retryDelay\": \"3"), -1);
	ck_assert_int_eq(hint_at("retry-after: Wed, 21 Oct 2015 07:28:3", NOW_MS), -1);
}
END_TEST

START_TEST(test_every_prefix_of_every_form_stays_in_bounds)
{
	static const char *const forms[] = {
		"retry-after-ms: 1500",
		"retry_after: 1.5",
		"\"retryDelay\": \"37s\"",
		"\"resets_in_seconds\": 3600",
		"x-ratelimit-reset-tokens: 6m0s",
		"try again in ~ 2.5 minutes",
		"Please retry after 6 seconds",
		"reset after 12h34m16s",
		"resets in 5 days 22 hours",
		"wait for about 30s",
		"usage limit reached|1755615600",
		"retry-after: Wed, 21 Oct 2015 07:28:30 GMT",
		"x-ratelimit-reset-ms: 1445412482500",
		"x-ratelimit-reset: 1445412485",
	};

	/* hint_at copies each prefix into an exact-size buffer. */
	for (size_t f = 0; f < NELEMS(forms); f++) {
		char prefix[64];
		size_t n = strlen(forms[f]);

		ck_assert_uint_lt(n, sizeof(prefix));
		for (size_t len = 0; len <= n; len++) {
			memcpy(prefix, forms[f], len);
			prefix[len] = '\0';
			(void)hint_at(prefix, NOW_MS);
		}
		ck_assert_msg(hint_at(forms[f], LATER_MS) >= 0, "\"%s\" gave no hint", forms[f]);
	}
}
END_TEST

START_TEST(test_embedded_nul_is_just_a_character)
{
	static const char text[] = "error\0body: retry-after: 3";
	int64_t ms = 0;

	ck_assert(hint_parse(text, sizeof(text) - 1, NOW_MS, &ms));
	ck_assert_int_eq(ms, 3000);
	/* A NUL is neither a digit, a space nor a letter: the number ends. */
	ck_assert(hint_parse("retry-after: 3\0s", 16, NOW_MS, &ms));
	ck_assert_int_eq(ms, 3000);
	ck_assert(!hint_parse("try again in 3\0s", 16, NOW_MS, &ms));
}
END_TEST

START_TEST(test_escaped_json_and_wrapped_lines_are_read)
{
	ck_assert_int_eq(hint("{\\\"retryDelay\\\": \\\"37s\\\"}"), 37000);
	ck_assert_int_eq(hint("Please try\nagain in\\n20s"), 20000);
	ck_assert_int_eq(hint("try again\xc2\xa0in 3s"), 3000);
}
END_TEST

Suite *hint_suite(void)
{
	Suite *s = suite_create("hint");
	TCase *tc = tcase_create("hint");

	tcase_add_loop_test(tc, test_text_forms_as_the_reference_reads_them, 0, NELEMS(text_cases));
	tcase_add_loop_test(tc, test_header_forms_as_the_reference_reads_them, 0,
			    NELEMS(header_cases));
	tcase_add_test(tc, test_headers_that_are_not_an_object_give_no_hint);
	tcase_add_test(tc, test_an_impossible_date_gives_no_hint);
	tcase_add_test(tc, test_retry_after_in_rfc850_and_asctime_dates_is_read);
	tcase_add_test(tc, test_date_header_in_an_obsolete_form_is_the_servers_clock);
	tcase_add_test(tc, test_duration_grammar);
	tcase_add_test(tc, test_a_client_countdown_is_no_hint);
	tcase_add_test(tc, test_header_lines_of_the_http_provider);
	tcase_add_test(tc, test_huge_numbers_clamp_instead_of_overflowing);
	tcase_add_test(tc, test_length_bounds_the_text);
	tcase_add_test(tc, test_every_prefix_of_every_form_stays_in_bounds);
	tcase_add_test(tc, test_embedded_nul_is_just_a_character);
	tcase_add_test(tc, test_escaped_json_and_wrapped_lines_are_read);
	suite_add_tcase(s, tc);
	return s;
}

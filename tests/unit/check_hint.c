#include "base/hint.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

Suite *hint_suite(void);

/* Wed, 21 Oct 2015 07:28:00 GMT */
#define NOW_MS INT64_C(1445412480000)
/* The clamp for absurd hints, ~31 700 years. */
#define MAX_MS INT64_C(1000000000000000)

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
	if (!found)
		return -1;
	ck_assert_int_ge(ms, 0);
	ck_assert_int_le(ms, MAX_MS);
	return ms;
}

static int64_t hint(const char *text)
{
	return hint_at(text, NOW_MS);
}

START_TEST(test_retry_after_ms_with_colon_or_equals)
{
	ck_assert_int_eq(hint("retry-after-ms: 1500"), 1500);
	ck_assert_int_eq(hint("retry-after-ms=250"), 250);
	ck_assert_int_eq(hint("Retry-After-Ms : 7"), 7);
	ck_assert_int_eq(hint("headers: {retry-after-ms=98497000}"), 98497000);
	ck_assert_int_eq(hint("retry-after-ms: 0"), 0);
}
END_TEST

START_TEST(test_retry_after_seconds_may_be_fractional)
{
	ck_assert_int_eq(hint("Retry-After: 30"), 30000);
	ck_assert_int_eq(hint("retry-after=1.5"), 1500);
	ck_assert_int_eq(hint("retry-after: .25"), 250);
	ck_assert_int_eq(hint("retry-after: 0"), 0);
	ck_assert_int_eq(hint("retry-after:\t2, then more"), 2000);
	ck_assert_int_eq(hint("retry-after: 2; x"), 2000);
	ck_assert_int_eq(hint("retry-after: 120 seconds"), 120000);
}
END_TEST

START_TEST(test_fractions_round_up_to_whole_ms)
{
	ck_assert_int_eq(hint("retry-after: 0.0001"), 1);
	ck_assert_int_eq(hint("retry-after: 1.0001"), 1001);
	ck_assert_int_eq(hint("retry-after-ms: 0.2"), 1);
	ck_assert_int_eq(hint("Please retry in 34.074824224s"), 34075);
	ck_assert_int_eq(hint("Please retry in 0.0005s"), 1);
	/* Beyond the kept precision a non-zero digit still rounds up. */
	ck_assert_int_eq(hint("retry-after: 1.0000000000000000000001"), 1001);
	ck_assert_int_eq(hint("retry-after: 1.0000000000000000000000"), 1000);
	ck_assert_int_eq(hint("retry-after: 0.999999999999999999999"), 1000);
}
END_TEST

START_TEST(test_retry_after_imf_fixdate_future_and_past)
{
	ck_assert_int_eq(hint("Retry-After: Wed, 21 Oct 2015 07:28:30 GMT"), 30000);
	ck_assert_int_eq(hint_at("Retry-After: Wed, 21 Oct 2015 07:28:00 GMT", NOW_MS - 250),
			 250);
	ck_assert_int_eq(hint("retry-after: wed, 21 oct 2015 08:28:00 gmt"), 3600000);
	/* A date in the past means "now". */
	ck_assert_int_eq(hint("Retry-After: Wed, 21 Oct 2015 07:27:00 GMT"), 0);
	ck_assert_int_eq(hint("Retry-After: Thu, 01 Jan 1970 00:00:00 GMT"), 0);
	/* Leap day, and a date beyond 2038. */
	ck_assert_int_eq(hint_at("Retry-After: Thu, 29 Feb 2024 00:00:01 GMT",
				 INT64_C(1709164800000)), 1000);
	ck_assert_int_eq(hint_at("Retry-After: Sat, 06 Nov 2069 08:49:38 GMT",
				 INT64_C(3150953377000)), 1000);
}
END_TEST

START_TEST(test_retry_after_rfc850_and_asctime_dates)
{
	ck_assert_int_eq(hint("Retry-After: Wednesday, 21-Oct-15 07:28:30 GMT"), 30000);
	ck_assert_int_eq(hint_at("Retry-After: Sunday, 06-Nov-94 08:49:38 GMT",
				 INT64_C(784111777000)), 1000);
	ck_assert_int_eq(hint("Retry-After: Wed Oct 21 07:28:30 2015"), 30000);
	ck_assert_int_eq(hint_at("Retry-After: Sun Nov  6 08:49:38 1994",
				 INT64_C(784111777000)), 1000);
}
END_TEST

START_TEST(test_retry_after_garbage_gives_no_hint)
{
	static const char *const garbage[] = {
		"retry-after: soon",
		"retry-after: 5s",
		"retry-after: -5",
		"retry-after: 1e3",
		"retry-after:",
		"retry-after:   ",
		"retry-after 5",
		"Retry-After: Wed, 31 Feb 2015 07:28:00 GMT",
		"Retry-After: Wed, 21 Foo 2015 07:28:00 GMT",
		"Retry-After: Wed, 21 Oct 2015 24:00:00 GMT",
		"Retry-After: Wed, 21 Oct 2015 07:28:00",
		"Retry-After: Wed, 21 Oct 20155 07:28:00 GMT",
		"Retry-After: Wed Oct 21 07:28:30",
		"retry-after-ms: soon",
		"x-ratelimit-reset-requests: 1s",
		"503 Service Unavailable",
		"",
	};

	for (size_t i = 0; i < NELEMS(garbage); i++)
		ck_assert_msg(hint(garbage[i]) == -1, "\"%s\" gave a hint", garbage[i]);
}
END_TEST

START_TEST(test_reset_after_hours_minutes_seconds)
{
	ck_assert_int_eq(hint("Your quota will reset after 18h31m10s."), 66670000);
	ck_assert_int_eq(hint("reset after 10m15s"), 615000);
	ck_assert_int_eq(hint("Reset After 39s"), 39000);
	ck_assert_int_eq(hint("reset after 1.25s"), 1250);
	ck_assert_int_eq(hint("reset after 2h0.5s"), 7200500);
	ck_assert_int_eq(hint("reset after 0s"), 0);
	/* Seconds are required. */
	ck_assert_int_eq(hint("reset after 1h5m"), -1);
	ck_assert_int_eq(hint("reset after 500ms"), -1);
	ck_assert_int_eq(hint("reset after 1h2ms"), -1);
}
END_TEST

START_TEST(test_please_retry_in_seconds_or_ms)
{
	ck_assert_int_eq(hint("Please retry in 1.5s."), 1500);
	ck_assert_int_eq(hint("please retry in 500ms"), 500);
	ck_assert_int_eq(hint("Please retry in 12s"), 12000);
	ck_assert_int_eq(hint("Please retry in 5 minutes"), -1);
	ck_assert_int_eq(hint("Please retry in a bit"), -1);
}
END_TEST

START_TEST(test_retry_delay_json_field)
{
	ck_assert_int_eq(hint("{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\","
			      "\"retryDelay\": \"3s\"}"), 3000);
	ck_assert_int_eq(hint("\"retryDelay\":\"250ms\""), 250);
	ck_assert_int_eq(hint("\"RETRYDELAY\":  \"34.5s\""), 34500);
	ck_assert_int_eq(hint("\"retryDelay\": \"3s"), -1);
	ck_assert_int_eq(hint("\"retryDelay\": 3"), -1);
}
END_TEST

START_TEST(test_try_again_in_every_unit)
{
	static const struct {
		const char *text;
		int64_t ms;
	} cases[] = {
		{ "try again in 250ms", 250 },
		{ "Please try again in 20s.", 20000 },
		{ "try again in 12sec", 12000 },
		{ "try again in 3 secs", 3000 },
		{ "try again in 1 second", 1000 },
		{ "try again in 3 seconds", 3000 },
		{ "try again in 5m", 300000 },
		{ "try again in 1 min", 60000 },
		{ "try again in ~158 min.", 9480000 },
		{ "try again in 2 mins", 120000 },
		{ "try again in 1 minute", 60000 },
		{ "try again in 90 minutes", 5400000 },
		{ "try again in 2h", 7200000 },
		{ "try again in 1hr", 3600000 },
		{ "try again in 5 hrs", 18000000 },
		{ "try again in 1 hour", 3600000 },
		{ "Try Again In ~ 1.5 Hours", 5400000 },
		{ "try again in\n2s", 2000 },
	};

	for (size_t i = 0; i < NELEMS(cases); i++)
		ck_assert_msg(hint(cases[i].text) == cases[i].ms, "\"%s\": %lld, not %lld",
			      cases[i].text, (long long)hint(cases[i].text),
			      (long long)cases[i].ms);
}
END_TEST

START_TEST(test_try_again_in_needs_a_known_whole_unit)
{
	ck_assert_int_eq(hint("try again in 5 days"), -1);
	ck_assert_int_eq(hint("try again in 5sx"), -1);
	ck_assert_int_eq(hint("try again in 5s2"), -1);
	ck_assert_int_eq(hint("try again in 5s_"), -1);
	ck_assert_int_eq(hint("try again in a moment"), -1);
	ck_assert_int_eq(hint("try again in5s"), -1);
	ck_assert_int_eq(hint("try again in 5"), -1);
	ck_assert_int_eq(hint("try again in 5 s"), 5000);
}
END_TEST

START_TEST(test_ratelimit_reset_ms_epoch_vs_delay)
{
	ck_assert_int_eq(hint("x-ratelimit-reset-ms: 1500"), 1500);
	ck_assert_int_eq(hint_at("x-ratelimit-reset-ms: 1700000002500", INT64_C(1700000000000)),
			 2500);
	ck_assert_int_eq(hint_at("x-ratelimit-reset-ms: 1699999999000", INT64_C(1700000000000)),
			 0);
	/* 1e12 itself is still a delay; just above it is an epoch. */
	ck_assert_int_eq(hint_at("x-ratelimit-reset-ms=1000000000000", INT64_C(1000000000000)),
			 INT64_C(1000000000000));
	ck_assert_int_eq(hint_at("x-ratelimit-reset-ms=1000000000001", INT64_C(1000000000000)),
			 1);
}
END_TEST

START_TEST(test_ratelimit_reset_seconds_epoch_vs_delay)
{
	ck_assert_int_eq(hint("X-RateLimit-Reset: 30"), 30000);
	ck_assert_int_eq(hint_at("x-ratelimit-reset: 1700000005", INT64_C(1700000000000)), 5000);
	ck_assert_int_eq(hint_at("x-ratelimit-reset: 1699999000", INT64_C(1700000000000)), 0);
	ck_assert_int_eq(hint_at("x-ratelimit-reset: 1000000000", INT64_C(1000000000000)),
			 INT64_C(1000000000000));
	ck_assert_int_eq(hint_at("x-ratelimit-reset: 1000000001", INT64_C(1000000000000)), 1000);
}
END_TEST

START_TEST(test_forms_are_tried_in_documented_order)
{
	/* The earlier form wins even when it comes later in the text. */
	ck_assert_int_eq(hint("retry-after: 10, retry-after-ms: 20"), 20);
	ck_assert_int_eq(hint("Please retry in 5s. retry-after: 1"), 1000);
	ck_assert_int_eq(hint("try again in 9s; reset after 2s"), 2000);
	ck_assert_int_eq(hint("try again in 9s; Please retry in 3s"), 3000);
	ck_assert_int_eq(hint("try again in 9s; \"retryDelay\": \"4s\""), 4000);
	ck_assert_int_eq(hint("x-ratelimit-reset-ms: 5, try again in 2s"), 2000);
	ck_assert_int_eq(hint("x-ratelimit-reset: 9, x-ratelimit-reset-ms: 5"), 5);
}
END_TEST

START_TEST(test_a_form_is_found_past_an_occurrence_that_does_not_parse)
{
	ck_assert_int_eq(hint("retry-after-ms: soon; retry-after-ms: 40"), 40);
	ck_assert_int_eq(hint("retry-after: soon, retry-after: 3"), 3000);
	ck_assert_int_eq(hint("try again in a bit or try again in 2s"), 2000);
	/* "retry-after-ms" does not hide a plain retry-after. */
	ck_assert_int_eq(hint("retry-after-ms: x retry-after: 4"), 4000);
}
END_TEST

START_TEST(test_huge_numbers_clamp_instead_of_overflowing)
{
	ck_assert_int_eq(hint("retry-after-ms: 99999999999999999999999999999999"), MAX_MS);
	ck_assert_int_eq(hint("retry-after: 99999999999999999999"), MAX_MS);
	/* 2^64 + 1: wrapping instead of saturating would give 1 ms. */
	ck_assert_int_eq(hint("retry-after-ms: 18446744073709551617"), MAX_MS);
	ck_assert_int_eq(hint("retry-after: 9223372036854775807.9"), MAX_MS);
	ck_assert_int_eq(hint("try again in 99999999999999999999 hours"), MAX_MS);
	ck_assert_int_eq(hint("reset after 99999999999999999999h99999999999999999999m9s"),
			 MAX_MS);
	ck_assert_int_eq(hint("x-ratelimit-reset-ms: 999999999999999999999999"), MAX_MS);
	ck_assert_int_eq(hint("x-ratelimit-reset: 999999999999999999999999"), MAX_MS);
	ck_assert_int_eq(hint_at("x-ratelimit-reset: 999999999999999999999999", INT64_MIN),
			 MAX_MS);
	ck_assert_int_eq(hint_at("x-ratelimit-reset: 1000000001", INT64_MAX), 0);
	ck_assert_int_eq(hint_at("Retry-After: Wed, 21 Oct 2015 07:28:30 GMT", INT64_MIN),
			 MAX_MS);
	ck_assert_int_eq(hint_at("Retry-After: Fri, 31 Dec 9999 23:59:59 GMT", 0),
			 INT64_C(253402300799000));
}
END_TEST

START_TEST(test_length_bounds_the_text)
{
	static const char text[] = "retry-after: 12";

	ck_assert(!hint_parse(text, 0, NOW_MS, &(int64_t){ 0 }));
	ck_assert(!hint_parse(NULL, 0, NOW_MS, &(int64_t){ 0 }));
	/* Cut to "retry-after: 1". */
	{
		int64_t ms = 0;

		ck_assert(hint_parse(text, sizeof(text) - 2, NOW_MS, &ms));
		ck_assert_int_eq(ms, 1000);
	}
	/* Cut inside the keyword. */
	ck_assert_int_eq(hint("retry-after-m"), -1);
	ck_assert_int_eq(hint("retry-after-ms:"), -1);
	ck_assert_int_eq(hint("Please retry in 5"), -1);
	ck_assert_int_eq(hint("\"retryDelay\": \"3"), -1);
	ck_assert_int_eq(hint("Retry-After: Wed, 21 Oct 2015 07:28:3"), -1);
}
END_TEST

START_TEST(test_every_prefix_of_every_form_stays_in_bounds)
{
	static const char *const forms[] = {
		"retry-after-ms: 1500",
		"retry-after: 1.5",
		"Retry-After: Wed, 21 Oct 2015 07:28:30 GMT",
		"Retry-After: Wednesday, 21-Oct-15 07:28:30 GMT",
		"Retry-After: Wed Oct 21 07:28:30 2015",
		"reset after 1h2m3.5s",
		"Please retry in 1.5s",
		"\"retryDelay\": \"250ms\"",
		"try again in ~ 2.5 minutes",
		"x-ratelimit-reset-ms: 1700000002500",
		"x-ratelimit-reset: 1700000005",
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
		ck_assert_msg(hint(forms[f]) >= 0, "\"%s\" gave no hint", forms[f]);
	}
}
END_TEST

START_TEST(test_embedded_nul_is_just_a_character)
{
	static const char text[] = "error\0body: retry-after: 3";
	int64_t ms = 0;

	ck_assert(hint_parse(text, sizeof(text) - 1, NOW_MS, &ms));
	ck_assert_int_eq(ms, 3000);
	/* A NUL ends the number token no more than any other non-digit. */
	ck_assert(!hint_parse("retry-after: 3\0s", 16, NOW_MS, &ms));
}
END_TEST

Suite *hint_suite(void)
{
	Suite *s = suite_create("hint");
	TCase *tc = tcase_create("hint");

	tcase_add_test(tc, test_retry_after_ms_with_colon_or_equals);
	tcase_add_test(tc, test_retry_after_seconds_may_be_fractional);
	tcase_add_test(tc, test_fractions_round_up_to_whole_ms);
	tcase_add_test(tc, test_retry_after_imf_fixdate_future_and_past);
	tcase_add_test(tc, test_retry_after_rfc850_and_asctime_dates);
	tcase_add_test(tc, test_retry_after_garbage_gives_no_hint);
	tcase_add_test(tc, test_reset_after_hours_minutes_seconds);
	tcase_add_test(tc, test_please_retry_in_seconds_or_ms);
	tcase_add_test(tc, test_retry_delay_json_field);
	tcase_add_test(tc, test_try_again_in_every_unit);
	tcase_add_test(tc, test_try_again_in_needs_a_known_whole_unit);
	tcase_add_test(tc, test_ratelimit_reset_ms_epoch_vs_delay);
	tcase_add_test(tc, test_ratelimit_reset_seconds_epoch_vs_delay);
	tcase_add_test(tc, test_forms_are_tried_in_documented_order);
	tcase_add_test(tc, test_a_form_is_found_past_an_occurrence_that_does_not_parse);
	tcase_add_test(tc, test_huge_numbers_clamp_instead_of_overflowing);
	tcase_add_test(tc, test_length_bounds_the_text);
	tcase_add_test(tc, test_every_prefix_of_every_form_stays_in_bounds);
	tcase_add_test(tc, test_embedded_nul_is_just_a_character);
	suite_add_tcase(s, tc);
	return s;
}

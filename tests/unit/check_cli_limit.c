/* An agent CLI's usage-limit terminal line (src/provider/cli/cli_limit.c):
 * the CLIs' wordings for a spent plan, their resets, and the rate limits
 * and quotas that are no spent plan. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "provider/cli/cli_limit.h"

Suite *cli_limit_suite(void);

#define NOW INT64_C(1767225600000) /* 2026-01-01T00:00:00Z */
#define HOUR INT64_C(3600000)

START_TEST(test_the_clis_limit_lines_are_read_with_their_resets)
{
	int64_t wait = 0;

	setenv("TZ", "UTC", 1);
	ck_assert(cli_limit_read("You\xe2\x80\x99ve hit your usage limit. Upgrade to Pro "
				 "(https://chatgpt.com/explore/pro), visit https://chatgpt.com/"
				 "settings/usage to purchase more credits or try again at 10:00 PM.",
				 NOW, &wait));
	ck_assert_int_eq(wait, 22 * HOUR);
	ck_assert(cli_limit_read("You've hit your limit \xc2\xb7 resets 11pm (America/Anchorage)", NOW,
				 &wait));
	ck_assert_int_eq(wait, 8 * HOUR);
	ck_assert(cli_limit_read("Claude AI usage limit reached|1767229200", NOW, &wait));
	ck_assert_int_eq(wait, HOUR);
	ck_assert(cli_limit_read("You've hit your usage limit. Try again in 2 hours 13 minutes.", NOW,
				 &wait));
	ck_assert_int_eq(wait, 2 * HOUR + 13 * 60000);
	ck_assert(cli_limit_read("Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit "
				 "'Gemini 2.5 Pro Requests per day per user per tier'", NOW, &wait));
	ck_assert_int_eq(wait, 8 * HOUR); /* midnight Pacific */
	/* A limit line without a reset: a wait not stated. */
	ck_assert(cli_limit_read("You've hit your limit", NOW, &wait));
	ck_assert_int_eq(wait, -1);
	unsetenv("TZ");
}
END_TEST

START_TEST(test_rate_limits_and_other_failures_are_no_spent_plan)
{
	int64_t wait = 7;

	ck_assert(!cli_limit_read("API Error: Request rejected (429) · This request would exceed the "
				  "rate limit for your organization of 50 requests per minute.", NOW,
				  &wait));
	ck_assert(!cli_limit_read("Quota exceeded for quota metric 'Generate Content API requests per "
				  "minute'. Please retry in 37.5s.", NOW, &wait));
	ck_assert(!cli_limit_read("stream disconnected before completion", NOW, &wait));
	ck_assert(!cli_limit_read(NULL, NOW, &wait));
	ck_assert_int_eq(wait, 7);
}
END_TEST

Suite *cli_limit_suite(void)
{
	Suite *s = suite_create("cli_limit");
	TCase *tc = tcase_create("lines");

	tcase_add_test(tc, test_the_clis_limit_lines_are_read_with_their_resets);
	tcase_add_test(tc, test_rate_limits_and_other_failures_are_no_spent_plan);
	suite_add_tcase(s, tc);
	return s;
}

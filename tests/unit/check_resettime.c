/* When a usage limit comes back, from the words agent CLIs print
 * (src/base/resettime.c): epochs, durations, clock times in IANA zones
 * (12 and 24 h, today or the next day, tomorrow, dates, DST), Gemini's
 * daily quota, and the texts that state no reset. "now" is fixed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/resettime.h"

Suite *resettime_suite(void);

#define NOW INT64_C(1767225600000)     /* 2026-01-01T00:00:00Z */
#define SUMMER INT64_C(1782864000000)  /* 2026-07-01T00:00:00Z */
#define HOUR INT64_C(3600000)

static int64_t at(const char *text, int64_t now, const char *zone)
{
	int64_t out = -1;

	ck_assert_msg(resettime_parse(text, strlen(text), now, zone, &out), "no reset in: %s", text);
	return out;
}

static void none(const char *text, const char *zone)
{
	int64_t out = -1;

	ck_assert_msg(!resettime_parse(text, strlen(text), NOW, zone, &out), "a reset (%lld) in: %s",
		      (long long)out, text);
}

START_TEST(test_claude_code_limit_line_in_its_named_zone)
{
	/* 00:00Z is 15:00 in Anchorage (AKST, -9): 11pm is 08:00Z. */
	ck_assert_int_eq(at("You\xe2\x80\x99ve hit your limit \xc2\xb7 resets 11pm (America/Anchorage)",
			    NOW, "Europe/Berlin"), NOW + 8 * HOUR);
	/* In summer Anchorage is -8 (AKDT). */
	ck_assert_int_eq(at("You've hit your limit · resets 11pm (America/Anchorage)", SUMMER, NULL),
			 SUMMER + 7 * HOUR);
	ck_assert_int_eq(at("Claude AI usage limit reached|1767240000", NOW, NULL),
			 INT64_C(1767240000000));
}
END_TEST

START_TEST(test_a_time_a_change_of_offset_skips_or_repeats_is_read_as_mktime_reads_it)
{
	const int64_t spring = INT64_C(1772928000000); /* 2026-03-08T00:00Z */
	const int64_t fall = INT64_C(1793491200000);   /* 2026-11-01T00:00Z */

	/* 2:30 does not exist in New York that night: 3:30 EDT, 07:30Z. */
	ck_assert_int_eq(at("resets 2:30am (America/New_York)", spring, NULL),
			 spring + 7 * HOUR + 30 * 60000);
	/* 1:30 comes twice on the night back: the first, in EDT, 05:30Z. */
	ck_assert_int_eq(at("resets 1:30am (America/New_York)", fall, NULL),
			 fall + 5 * HOUR + 30 * 60000);
	/* Berlin's 2:30 on its spring night (from 00:00 CET): 3:30 CEST, 01:30Z. */
	ck_assert_int_eq(at("resets 2:30am (Europe/Berlin)", INT64_C(1774738800000), NULL),
			 INT64_C(1774738800000) + 2 * HOUR + HOUR / 2);
}
END_TEST

START_TEST(test_codex_durations_and_clock_times_in_the_local_zone)
{
	ck_assert_int_eq(at("You've hit your usage limit. Try again in 2 hours 13 minutes.", NOW, NULL),
			 NOW + 2 * HOUR + 13 * 60000);
	/* 00:00Z is 19:00 in New York: 3:45 PM has passed today, so tomorrow's. */
	ck_assert_int_eq(at("You\xe2\x80\x99ve hit your usage limit. Upgrade to Pro or try again at "
			    "3:45 PM.", NOW, "America/New_York"), NOW + 20 * HOUR + 45 * 60000);
	ck_assert_int_eq(at("try again at 10:00 PM", NOW, "America/New_York"), NOW + 3 * HOUR);
	ck_assert_int_eq(at("usage limit: resets at 15:45 UTC", NOW, "Asia/Tokyo"),
			 NOW + 15 * HOUR + 45 * 60000);
	ck_assert_int_eq(at("limit reached, try again at 9:30:15 p.m.", NOW, "UTC"),
			 NOW + 21 * HOUR + 30 * 60000 + 15000);
}
END_TEST

START_TEST(test_tomorrow_dates_and_midnight)
{
	/* 01:00 in Berlin: tomorrow 9am is the 2nd, 08:00Z. */
	ck_assert_int_eq(at("resets tomorrow at 9am", NOW, "Europe/Berlin"), NOW + 24 * HOUR + 8 * HOUR);
	ck_assert_int_eq(at("Your limit resets Dec 5, 2026 at 10:00 AM (UTC)", NOW, NULL),
			 INT64_C(1796464800000));
	ck_assert_int_eq(at("resets on 2026-01-03 at 12pm", NOW, "UTC"), NOW + 60 * HOUR);
	/* A date without a year: the next one; a day late is still this one. */
	ck_assert_int_eq(at("resets December 30th at 11pm", NOW, "UTC"), INT64_C(1798671600000));
	ck_assert_int_eq(at("resets December 31st at 11pm", NOW, "UTC"), NOW - HOUR);
	/* Now is midnight exactly: "12am" is the next one. */
	ck_assert_int_eq(at("resets 12am (UTC)", NOW, NULL), NOW + 24 * HOUR);
	/* A date whose year is cut by the text's end: nothing read past it
	 * (fuzz_resettime's find, under ASan). */
	ck_assert_int_eq(at("resets dec 5 2", NOW, "UTC"), INT64_C(1796428800000));
}
END_TEST

START_TEST(test_iso_times_with_z_or_an_offset_keep_their_time_of_day)
{
	/* Z is UTC whatever the caller's zone: not local midnight. */
	ck_assert_int_eq(at("usage limit, resets at 2026-01-02T15:00:00Z", NOW, "America/New_York"),
			 NOW + 39 * HOUR);
	ck_assert_int_eq(at("resets at 2026-01-02T15:00:00.250Z", NOW, "Asia/Tokyo"), NOW + 39 * HOUR);
	/* +02:00 is two hours ahead of UTC, -0500 five behind. */
	ck_assert_int_eq(at("resets at 2026-01-02T15:00:00+02:00", NOW, "UTC"), NOW + 37 * HOUR);
	ck_assert_int_eq(at("resets at 2026-01-02T15:00:00-0500", NOW, "Europe/Berlin"),
			 NOW + 44 * HOUR);
	ck_assert_int_eq(at("resets at 2026-01-01T10:30+0530", NOW, NULL), NOW + 5 * HOUR);
	/* A clock time with Z and no date: the next one to come, in UTC. */
	ck_assert_int_eq(at("try again at 15:00Z", NOW, "America/Anchorage"), NOW + 15 * HOUR);
}
END_TEST

START_TEST(test_gemini_retry_delay_and_daily_quota)
{
	ck_assert_int_eq(at("Quota exceeded for quota metric 'Generate Content API requests per minute'. "
			    "Please retry in 37.5s.", NOW, NULL), NOW + 37500);
	/* Daily quotas reset at midnight Pacific: 00:00 PST is 08:00Z. */
	ck_assert_int_eq(at("Quota exceeded for quota metric 'Generate Content API requests per day' "
			    "and limit 'GenerateRequestsPerDayPerProjectPerModel'", NOW, NULL),
			 NOW + 8 * HOUR);
}
END_TEST

START_TEST(test_texts_that_state_no_reset_read_none)
{
	none("You've hit your limit", NULL);
	none("429 Too Many Requests", NULL);
	none("resets 25pm", "UTC");
	none("try again at 13 pm", "UTC");
	none("retry at 1500", "UTC");       /* a bare number is no time */
	/* An Area/City the zoneinfo lacks: no time rather than a wrong one. */
	none("resets 11pm (Mars/Olympus_Mons)", NULL);
	/* The caller's zone must be a real one too. */
	none("try again at 3pm", "Nowhere/Atlantis");
	none("try again at 3pm", "../../etc/passwd");
	ck_assert(!resettime_parse(NULL, 0, NOW, NULL, NULL));
}
END_TEST

START_TEST(test_the_callers_tz_is_left_as_it_was)
{
	const char *before;

	setenv("TZ", "Asia/Kolkata", 1);
	before = getenv("TZ");
	ck_assert_int_eq(at("resets 11pm (America/Anchorage)", NOW, NULL), NOW + 8 * HOUR);
	/* Not even set again: a named zone is read from its file, so a thread
	 * reading the environment meanwhile is never raced. */
	ck_assert_ptr_eq(getenv("TZ"), before);
	ck_assert_str_eq(getenv("TZ"), "Asia/Kolkata");
	/* The local zone is TZ's: 05:30 in Kolkata, 6am is 00:30Z. */
	ck_assert_int_eq(at("try again at 6am", NOW, NULL), NOW + 30 * 60000);
	unsetenv("TZ");
	at("try again at 6am", NOW, "America/Chicago");
	ck_assert_ptr_null(getenv("TZ"));
}
END_TEST

/* A TZif version 1 file of one type and no transitions: off_s always. */
static void write_zone(const char *path, int32_t off_s)
{
	unsigned char b[44 + 6 + 4] = { 'T', 'Z', 'i', 'f' };
	FILE *f;

	b[20 + 4 * 4 + 3] = 1;           /* typecnt */
	b[20 + 5 * 4 + 3] = 4;           /* charcnt */
	for (int i = 0; i < 4; i++)
		b[44 + i] = (unsigned char)((uint32_t)off_s >> (24 - 8 * i));
	memcpy(b + 50, "TST", 4);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(b, 1, sizeof(b), f), sizeof(b));
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_zone_files_are_read_from_tzdir_as_the_c_library_reads_them)
{
	char dir[] = "/tmp/retryd-check-tzdir-XXXXXX", sub[64], path[96];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/America", dir);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	snprintf(path, sizeof(path), "%s/Los_Angeles", sub);
	write_zone(path, -3 * 3600);     /* Pacific moved to -3 h */
	setenv("TZDIR", dir, 1);
	/* Midnight at -3 h is 03:00Z; an Anchorage the folder lacks is no zone. */
	ck_assert_int_eq(at("Quota exceeded for quota metric 'Generate Content API requests per day'",
			    NOW, NULL), NOW + 3 * HOUR);
	none("resets 11pm (America/Anchorage)", NULL);
	/* A relative TZDIR is not a folder the C library would use either. */
	setenv("TZDIR", "zoneinfo", 1);
	ck_assert_int_eq(at("resets 11pm (America/Anchorage)", NOW, NULL), NOW + 8 * HOUR);
	unsetenv("TZDIR");
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(sub), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

Suite *resettime_suite(void)
{
	Suite *s = suite_create("resettime");
	TCase *tc = tcase_create("forms");

	tcase_add_test(tc, test_claude_code_limit_line_in_its_named_zone);
	tcase_add_test(tc, test_zone_files_are_read_from_tzdir_as_the_c_library_reads_them);
	tcase_add_test(tc, test_codex_durations_and_clock_times_in_the_local_zone);
	tcase_add_test(tc, test_a_time_a_change_of_offset_skips_or_repeats_is_read_as_mktime_reads_it);
	tcase_add_test(tc, test_tomorrow_dates_and_midnight);
	tcase_add_test(tc, test_iso_times_with_z_or_an_offset_keep_their_time_of_day);
	tcase_add_test(tc, test_gemini_retry_delay_and_daily_quota);
	tcase_add_test(tc, test_texts_that_state_no_reset_read_none);
	tcase_add_test(tc, test_the_callers_tz_is_left_as_it_was);
	suite_add_tcase(s, tc);
	return s;
}

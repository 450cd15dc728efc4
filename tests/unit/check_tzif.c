/* Zone offsets from TZif files and POSIX TZ rules (src/base/tzif.c),
 * checked against the C library's own reading of the same zones. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/tzif.h"

Suite *tzif_suite(void);

static unsigned char *load(const char *zone, size_t *len)
{
	char path[256];
	unsigned char *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", zone);
	f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* What the C library says in the zone TZ names (switched by the caller,
 * in a test of one thread). */
static long libc_offset(time_t t)
{
	struct tm tm;

	localtime_r(&t, &tm);
	return (long)(tzif_civil_days(tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday) * 86400 +
		      tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec - (int64_t)t);
}

/* Zones with DST north and south, negative DST (Dublin), half and
 * quarter hours, a zone that gave up DST, one that moved across the date
 * line, and one with a two-hour DST (Troll). */
static const char *const zones[] = {
	"America/Anchorage", "Europe/Berlin",    "Australia/Sydney", "Asia/Kolkata",
	"America/St_Johns",  "Pacific/Chatham",  "Asia/Tehran",      "America/Sao_Paulo",
	"Europe/Dublin",     "Pacific/Apia",     "Antarctica/Troll", "America/New_York",
	"Asia/Kathmandu",    "Australia/Lord_Howe", "America/Santiago", "UTC",
};

START_TEST(test_every_zone_agrees_with_the_c_library_from_1990_to_2060)
{
	const time_t from = 631152000, to = 2871763200; /* 1990 .. 2061 */
	size_t checked = 0;

	for (size_t z = 0; z < sizeof(zones) / sizeof(zones[0]); z++) {
		size_t len;
		unsigned char *data = load(zones[z], &len);

		if (data == NULL)
			continue; /* not every machine has every zone */
		setenv("TZ", zones[z], 1);
		tzset();
		/* Every 21.9 hours (a step that walks through the hours of the day):
		 * both sides of every change of offset. */
		for (time_t t = from; t < to; t += 78839) {
			int32_t off;

			ck_assert_msg(tzif_offset(data, len, t, &off), "%s at %lld", zones[z],
				      (long long)t);
			ck_assert_msg(off == libc_offset(t), "%s at %lld: %d, libc %ld", zones[z],
				      (long long)t, off, libc_offset(t));
			checked++;
		}
		free(data);
	}
	unsetenv("TZ");
	tzset();
	ck_assert_uint_gt(checked, 100000);
}
END_TEST

static int32_t rule_at(const char *rule, time_t t)
{
	int32_t off = 12345;

	ck_assert_msg(tzif_rule_offset(rule, strlen(rule), t, &off), "%s", rule);
	return off;
}

START_TEST(test_a_posix_rule_changes_at_its_local_times_north_and_south)
{
	const char *ak = "AKST9AKDT,M3.2.0,M11.1.0";
	const char *syd = "AEST-10AEDT,M10.1.0,M4.1.0/3";

	/* 2026-03-08 02:00 AKST is 11:00Z; 2026-11-01 02:00 AKDT is 10:00Z. */
	ck_assert_int_eq(rule_at(ak, 1772967599), -9 * 3600);
	ck_assert_int_eq(rule_at(ak, 1772967600), -8 * 3600);
	ck_assert_int_eq(rule_at(ak, 1793527199), -8 * 3600);
	ck_assert_int_eq(rule_at(ak, 1793527200), -9 * 3600);
	/* Sydney: daylight time across the new year. */
	ck_assert_int_eq(rule_at(syd, 1798761600), 11 * 3600); /* 2027-01-01 */
	ck_assert_int_eq(rule_at(syd, 1782864000), 10 * 3600); /* 2026-07-01 */
	/* No DST, an angle-bracket name and minutes. */
	ck_assert_int_eq(rule_at("<+0545>-5:45", 0), 5 * 3600 + 45 * 60);
	ck_assert_int_eq(rule_at("<-03>3", 0), -3 * 3600);
	/* Julian days: J60 is March 1st in every year; 59 is Feb 29 or Mar 1. */
	ck_assert_int_eq(rule_at("XST0XDT,J60/0,J300/0", 1772323200), 3600);  /* 2026-03-01 */
	ck_assert_int_eq(rule_at("XST0XDT,J60/0,J300/0", 1772236800), 0);     /* 2026-02-28 */
	ck_assert_int_eq(rule_at("XST0XDT,59/0,300/0", 1772323200), 3600);
	/* A negative time of day (RFC 8536's extension) and hours past 24. */
	ck_assert_int_eq(rule_at("XST0XDT,M3.5.0/-1,M10.5.0/25", 1774740600), 3600); /* 03-28 23:30Z */
	ck_assert_int_eq(rule_at("XST0XDT,M3.5.0,M10.5.0", 1774740600), 0);
}
END_TEST

START_TEST(test_a_rule_it_cannot_read_is_no_offset)
{
	static const char *const bad[] = {
		"", "A9", "AKST", "AKST9AKDT", "AKST9AKDT,M3.2.0", "AKST9AKDT,M13.2.0,M11.1.0",
		"AKST9AKDT,M3.6.0,M11.1.0", "AKST9AKDT,M3.2.7,M11.1.0", "AKST99", "<AKST9",
		"AKST9AKDT,J0,J300", "AKST9AKDT,M3.2.0/200,M11.1.0", "AKST9AKDT,M3.2.0,M11.1.0x",
	};
	int32_t off;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!tzif_rule_offset(bad[i], strlen(bad[i]), 0, &off), "%s", bad[i]);
}
END_TEST

START_TEST(test_a_damaged_zone_file_is_no_offset_not_a_guess)
{
	size_t len;
	unsigned char *data = load("Europe/Berlin", &len), *copy;
	int32_t off;

	ck_assert_ptr_nonnull(data);
	ck_assert(tzif_offset(data, len, 0, &off));
	/* Cut anywhere: never read past the end, never an answer from half. */
	for (size_t cut = 0; cut < len; cut += 7)
		(void)tzif_offset(data, cut, 1800000000, &off);
	ck_assert(!tzif_offset(data, 43, 0, &off));
	ck_assert(!tzif_offset(data, len - 1, 1800000000, &off)); /* the footer's end */
	copy = malloc(len);
	ck_assert_ptr_nonnull(copy);
	memcpy(copy, data, len);
	copy[0] = 'X';
	ck_assert(!tzif_offset(copy, len, 0, &off));
	memcpy(copy, data, len);
	memset(copy + 20, 0xff, 24); /* counts past any zone's */
	ck_assert(!tzif_offset(copy, len, 0, &off));
	free(copy);
	free(data);
	ck_assert(!tzif_offset((const unsigned char *)"TZif", 4, 0, &off));
}
END_TEST

START_TEST(test_days_count_from_the_epoch_across_leap_years_and_month_ends)
{
	ck_assert_int_eq(tzif_civil_days(1970, 1, 1), 0);
	ck_assert_int_eq(tzif_civil_days(2000, 3, 1), 11017);
	ck_assert_int_eq(tzif_civil_days(2026, 12, 2), 20789);
	ck_assert_int_eq(tzif_civil_days(2026, 2, 29), tzif_civil_days(2026, 3, 1));
	ck_assert_int_eq(tzif_civil_days(1969, 12, 31), -1);
}
END_TEST

/* Rules repeat yearly, so a moment past some 35,000 years reads as the
 * moment at that bound; before, the sums of a far moment overflowed int64
 * (UBSan) and the year was found one step a day-366th at a time. */
START_TEST(test_a_rule_read_at_the_ends_of_time_answers_as_at_its_bound)
{
	const char *ak = "AKST9AKDT,M3.2.0,M11.1.0";
	const int64_t bound = INT64_C(1) << 40;
	size_t n;
	unsigned char *zone = load("America/Anchorage", &n);
	int32_t off;

	ck_assert_int_eq(rule_at(ak, INT64_MAX), rule_at(ak, bound));
	ck_assert_int_eq(rule_at(ak, INT64_MIN), rule_at(ak, -bound));
	ck_assert_int_eq(rule_at(ak, INT64_MAX - 1), rule_at(ak, bound));
	ck_assert(rule_at(ak, bound) == -9 * 3600 || rule_at(ak, bound) == -8 * 3600);
	/* A year 17,000 summer day is summer time like any other. */
	ck_assert_int_eq(rule_at(ak, tzif_civil_days(17000, 7, 1) * 86400), -8 * 3600);
	ck_assert_int_eq(rule_at(ak, tzif_civil_days(17000, 1, 1) * 86400), -9 * 3600);
	if (zone != NULL) {
		ck_assert(tzif_offset(zone, n, INT64_MAX, &off));
		ck_assert(off == -9 * 3600 || off == -8 * 3600);
		free(zone);
	}
}
END_TEST

Suite *tzif_suite(void)
{
	Suite *s = suite_create("tzif");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_every_zone_agrees_with_the_c_library_from_1990_to_2060);
	tcase_add_test(tc, test_a_posix_rule_changes_at_its_local_times_north_and_south);
	tcase_add_test(tc, test_a_rule_it_cannot_read_is_no_offset);
	tcase_add_test(tc, test_a_damaged_zone_file_is_no_offset_not_a_guess);
	tcase_add_test(tc, test_days_count_from_the_epoch_across_leap_years_and_month_ends);
	tcase_add_test(tc, test_a_rule_read_at_the_ends_of_time_answers_as_at_its_bound);
	suite_add_tcase(s, tc);
	return s;
}

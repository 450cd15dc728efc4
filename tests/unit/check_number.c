#include "base/number.h"

#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

Suite *number_suite(void);

#define TWO_53 INT64_C(9007199254740992)

/* number_from_json() of the JSON text doc. */
static enum number_read read_json(const char *doc, bool rounded, int64_t *out)
{
	json_error_t jerr;
	json_t *v = json_loads(doc, JSON_DECODE_ANY, &jerr);
	enum number_read r;

	ck_assert_msg(v != NULL, "%s: %s", doc, jerr.text);
	*out = -12345;
	r = rounded ? number_from_json_rounded(v, out) : number_from_json(v, out);
	json_decref(v);
	return r;
}

static void json_is(const char *doc, enum number_read want, int64_t value)
{
	int64_t n;
	enum number_read r = read_json(doc, false, &n);

	ck_assert_msg(r == want, "%s: read %d, want %d", doc, (int)r, (int)want);
	ck_assert_msg(n == value, "%s: %lld, want %lld", doc, (long long)n, (long long)value);
}

static void rounded_is(const char *doc, enum number_read want, int64_t value)
{
	int64_t n;
	enum number_read r = read_json(doc, true, &n);

	ck_assert_msg(r == want, "%s: read %d, want %d", doc, (int)r, (int)want);
	ck_assert_msg(n == value, "%s: %lld, want %lld", doc, (long long)n, (long long)value);
}

static void digits_are(const char *s, enum number_read want, int64_t value)
{
	int64_t n = -12345;
	/* An exact-size copy: ASan sees a read past the end. */
	size_t len = strlen(s);
	char *buf = malloc(len > 0 ? len : 1);
	enum number_read r;

	ck_assert_ptr_nonnull(buf);
	memcpy(buf, s, len);
	r = number_from_digits(buf, len, &n);
	free(buf);
	ck_assert_msg(r == want, "\"%s\": read %d, want %d", s, (int)r, (int)want);
	ck_assert_msg(n == value, "\"%s\": %lld, want %lld", s, (long long)n, (long long)value);
}

START_TEST(json_count_in_range_is_kept_exactly)
{
	json_is("0", NUMBER_EXACT, 0);
	json_is("1", NUMBER_EXACT, 1);
	json_is("9007199254740991", NUMBER_EXACT, NUMBER_MAX);
	json_is("12.0", NUMBER_EXACT, 12);
	json_is("-0.0", NUMBER_EXACT, 0);
}
END_TEST

START_TEST(json_count_above_the_maximum_saturates)
{
	json_is("9007199254740992", NUMBER_SATURATED, NUMBER_MAX);
	json_is("9223372036854775807", NUMBER_SATURATED, NUMBER_MAX);
	json_is("9007199254740992.0", NUMBER_SATURATED, NUMBER_MAX);
	json_is("1e300", NUMBER_SATURATED, NUMBER_MAX);
	json_is("1.7976931348623157e308", NUMBER_SATURATED, NUMBER_MAX);
}
END_TEST

START_TEST(json_negative_fraction_or_non_number_is_rejected_as_zero)
{
	json_is("-1", NUMBER_REJECTED, 0);
	json_is("-9223372036854775808", NUMBER_REJECTED, 0);
	json_is("-1e300", NUMBER_REJECTED, 0);
	json_is("-0.5", NUMBER_REJECTED, 0);
	json_is("3.5", NUMBER_REJECTED, 0);
	json_is("0.1", NUMBER_REJECTED, 0);
	json_is("\"12\"", NUMBER_REJECTED, 0);
	json_is("\"12abc\"", NUMBER_REJECTED, 0);
	json_is("true", NUMBER_REJECTED, 0);
	json_is("{}", NUMBER_REJECTED, 0);
	json_is("[1]", NUMBER_REJECTED, 0);
}
END_TEST

START_TEST(json_null_or_missing_is_absent)
{
	int64_t n = 7;

	json_is("null", NUMBER_ABSENT, 0);
	ck_assert_int_eq(number_from_json(NULL, &n), NUMBER_ABSENT);
	ck_assert_int_eq(n, 0);
	n = 7;
	ck_assert_int_eq(number_from_json_rounded(NULL, &n), NUMBER_ABSENT);
	ck_assert_int_eq(n, 0);
}
END_TEST

START_TEST(json_rounded_rounds_half_up_and_still_rejects_negatives)
{
	rounded_is("35073.757", NUMBER_EXACT, 35074);
	rounded_is("3.5", NUMBER_EXACT, 4);
	rounded_is("3.49", NUMBER_EXACT, 3);
	/* The classic x + 0.5 trap: this is below one half. */
	rounded_is("0.49999999999999994", NUMBER_EXACT, 0);
	rounded_is("7", NUMBER_EXACT, 7);
	rounded_is("4503599627370495.5", NUMBER_EXACT, INT64_C(4503599627370496));
	rounded_is("1e300", NUMBER_SATURATED, NUMBER_MAX);
	rounded_is("9223372036854775807", NUMBER_SATURATED, NUMBER_MAX);
	rounded_is("-0.3", NUMBER_REJECTED, 0);
	rounded_is("-1", NUMBER_REJECTED, 0);
	rounded_is("\"5\"", NUMBER_REJECTED, 0);
}
END_TEST

START_TEST(digits_only_whole_strings_of_digits_are_read)
{
	digits_are("0", NUMBER_EXACT, 0);
	digits_are("007", NUMBER_EXACT, 7);
	digits_are("9007199254740991", NUMBER_EXACT, NUMBER_MAX);
	digits_are("9007199254740992", NUMBER_SATURATED, NUMBER_MAX);
	digits_are("9223372036854775807", NUMBER_SATURATED, NUMBER_MAX);
	digits_are("99999999999999999999999999999999999999999", NUMBER_SATURATED, NUMBER_MAX);
	digits_are("", NUMBER_REJECTED, 0);
	digits_are("12abc", NUMBER_REJECTED, 0);
	digits_are("-1", NUMBER_REJECTED, 0);
	digits_are("+1", NUMBER_REJECTED, 0);
	digits_are(" 1", NUMBER_REJECTED, 0);
	digits_are("3.5", NUMBER_REJECTED, 0);
	digits_are("1e300", NUMBER_REJECTED, 0);
	digits_are("99999999999999999999x", NUMBER_REJECTED, 0);
}
END_TEST

START_TEST(digits_do_not_read_past_len)
{
	int64_t n;

	ck_assert_int_eq(number_from_digits("12abc", 2, &n), NUMBER_EXACT);
	ck_assert_int_eq(n, 12);
}
END_TEST

START_TEST(clamp_keeps_values_within_zero_and_the_maximum)
{
	ck_assert_int_eq(number_clamp(-1), 0);
	ck_assert_int_eq(number_clamp(INT64_MIN), 0);
	ck_assert_int_eq(number_clamp(0), 0);
	ck_assert_int_eq(number_clamp(42), 42);
	ck_assert_int_eq(number_clamp(NUMBER_MAX), NUMBER_MAX);
	ck_assert_int_eq(number_clamp(TWO_53), NUMBER_MAX);
	ck_assert_int_eq(number_clamp(INT64_MAX), NUMBER_MAX);
}
END_TEST

START_TEST(add_saturates_and_never_wraps)
{
	ck_assert_int_eq(number_add(2, 3), 5);
	ck_assert_int_eq(number_add(0, 0), 0);
	ck_assert_int_eq(number_add(NUMBER_MAX, 0), NUMBER_MAX);
	ck_assert_int_eq(number_add(NUMBER_MAX, 1), NUMBER_MAX);
	ck_assert_int_eq(number_add(NUMBER_MAX - 1, 1), NUMBER_MAX);
	ck_assert_int_eq(number_add(NUMBER_MAX, NUMBER_MAX), NUMBER_MAX);
	/* The reported defect: 2^63-1 + 2^63-1 gave -2. */
	ck_assert_int_eq(number_add(INT64_MAX, INT64_MAX), NUMBER_MAX);
	ck_assert_int_eq(number_add(INT64_MIN, INT64_MIN), 0);
	ck_assert_int_eq(number_add(-5, 7), 7);
}
END_TEST

Suite *number_suite(void)
{
	Suite *s = suite_create("number");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, json_count_in_range_is_kept_exactly);
	tcase_add_test(tc, json_count_above_the_maximum_saturates);
	tcase_add_test(tc, json_negative_fraction_or_non_number_is_rejected_as_zero);
	tcase_add_test(tc, json_null_or_missing_is_absent);
	tcase_add_test(tc, json_rounded_rounds_half_up_and_still_rejects_negatives);
	tcase_add_test(tc, digits_only_whole_strings_of_digits_are_read);
	tcase_add_test(tc, digits_do_not_read_past_len);
	tcase_add_test(tc, clamp_keeps_values_within_zero_and_the_maximum);
	tcase_add_test(tc, add_saturates_and_never_wraps);
	suite_add_tcase(s, tc);
	return s;
}

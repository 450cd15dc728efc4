/* Random bytes and UUIDv7 session ids (src/base/random.c). */
#include <check.h>
#include <string.h>

#include "base/random.h"

Suite *random_suite(void);

START_TEST(test_bytes_fill_the_whole_buffer_and_differ_between_calls)
{
	unsigned char a[64], b[64], zero[64] = { 0 };

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	random_bytes(a, sizeof(a));
	random_bytes(b, sizeof(b));
	ck_assert(memcmp(a, zero, sizeof(a)) != 0);
	ck_assert(memcmp(a, b, sizeof(a)) != 0);
	random_bytes(a, 0);
}
END_TEST

START_TEST(test_uuid_v7_carries_the_time_version_and_variant)
{
	char id[37], other[37];

	/* 1767225600000 ms (2026-01-01T00:00:00Z) is 0x019b76daa800. */
	random_uuid_v7(id, 1767225600000);
	ck_assert_uint_eq(strlen(id), 36);
	ck_assert_int_eq(strncmp(id, "019b76da-a800-7", 15), 0);
	ck_assert_int_eq(id[8], '-');
	ck_assert_int_eq(id[13], '-');
	ck_assert_int_eq(id[18], '-');
	ck_assert_int_eq(id[23], '-');
	ck_assert_ptr_nonnull(strchr("89ab", id[19]));
	random_uuid_v7(other, 1767225600000);
	ck_assert_str_ne(id, other);
}
END_TEST

Suite *random_suite(void)
{
	Suite *s = suite_create("random");
	TCase *tc = tcase_create("random");

	tcase_add_test(tc, test_bytes_fill_the_whole_buffer_and_differ_between_calls);
	tcase_add_test(tc, test_uuid_v7_carries_the_time_version_and_variant);
	suite_add_tcase(s, tc);
	return s;
}

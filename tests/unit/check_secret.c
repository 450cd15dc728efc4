/* Masking secrets in place (src/base/secret.c). */
#include <check.h>
#include <string.h>

#include "base/secret.h"

Suite *secret_suite(void);

START_TEST(test_every_occurrence_becomes_stars_and_the_text_shrinks)
{
	char text[] = "sk-12345678 then sk-12345678sk-12345678 end sk-12345678";
	size_t len = strlen(text);

	ck_assert(secret_mask(text, &len, "sk-12345678"));
	text[len] = '\0';
	ck_assert_str_eq(text, "*** then ****** end ***");
	ck_assert_uint_eq(len, strlen("*** then ****** end ***"));
}
END_TEST

START_TEST(test_text_with_a_nul_byte_is_masked_past_it)
{
	char text[] = "a\0b sk-abcdefgh c";
	size_t len = sizeof(text) - 1;

	ck_assert(secret_found(text, len, "sk-abcdefgh"));
	ck_assert(secret_mask(text, &len, "sk-abcdefgh"));
	ck_assert_uint_eq(len, 9);
	ck_assert_int_eq(memcmp(text, "a\0b *** c", 9), 0);
}
END_TEST

START_TEST(test_no_occurrence_or_a_too_short_secret_changes_nothing)
{
	char text[] = "nothing secret here";
	size_t len = strlen(text);

	ck_assert(!secret_mask(text, &len, "sk-zzzzzzzz"));
	ck_assert(!secret_mask(text, &len, "re"));
	ck_assert(!secret_found(text, len, "re"));
	ck_assert(!secret_found(text, 3, "nothing"));
	ck_assert_uint_eq(len, strlen("nothing secret here"));
	ck_assert_str_eq(text, "nothing secret here");
}
END_TEST

Suite *secret_suite(void)
{
	Suite *s = suite_create("secret");
	TCase *tc = tcase_create("mask");

	tcase_add_test(tc, test_every_occurrence_becomes_stars_and_the_text_shrinks);
	tcase_add_test(tc, test_text_with_a_nul_byte_is_masked_past_it);
	tcase_add_test(tc, test_no_occurrence_or_a_too_short_secret_changes_nothing);
	suite_add_tcase(s, tc);
	return s;
}

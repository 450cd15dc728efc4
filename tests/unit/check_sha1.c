/* SHA-1 against the FIPS 180 / RFC 3174 vectors and sha1sum, whole and fed
 * in pieces (src/base/sha1.c). */
#include <check.h>
#include <string.h>

#include "base/sha1.h"

Suite *sha1_suite(void);

START_TEST(test_known_vectors_match)
{
	char hex[41];

	sha1_hex("", 0, hex);
	ck_assert_str_eq(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	sha1_hex("abc", 3, hex);
	ck_assert_str_eq(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
	const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

	sha1_hex(m448, strlen(m448), hex);
	ck_assert_str_eq(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
	/* Redis's own example: SCRIPT LOAD "return 1" answers this sha. */
	sha1_hex("return 1", 8, hex);
	ck_assert_str_eq(hex, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}
END_TEST

START_TEST(test_a_million_a_fed_in_odd_pieces_matches_the_whole)
{
	static char a[1000000];
	struct sha1 s;
	unsigned char d[20];
	char hex[41];
	size_t off = 0, step = 1;

	memset(a, 'a', sizeof(a));
	sha1_hex(a, sizeof(a), hex);
	ck_assert_str_eq(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	sha1_init(&s);
	while (off < sizeof(a)) {
		size_t n = step < sizeof(a) - off ? step : sizeof(a) - off;

		sha1_update(&s, a + off, n);
		off += n;
		step = step % 127 + 1;
	}
	sha1_final(&s, d);
	ck_assert_uint_eq(d[0], 0x34);
	ck_assert_uint_eq(d[19], 0x6f);
}
END_TEST

START_TEST(test_lengths_around_the_padding_boundary)
{
	/* 55, 56, 63, 64 and 65 bytes put the length field in the same block
	 * or force a second one (values from sha1sum). */
	static const struct {
		size_t len;
		const char *hex;
	} v[] = {
		{ 55, "c1c8bbdc22796e28c0e15163d20899b65621d65a" },
		{ 56, "c2db330f6083854c99d4b5bfb6e8f29f201be699" },
		{ 63, "03f09f5b158a7a8cdad920bddc29b81c18a551f5" },
		{ 64, "0098ba824b5c16427bd7a1122a5a442a25ec644d" },
		{ 65, "11655326c708d70319be2610e8a57d9a5b959d3b" },
	};
	char buf[65], hex[41];

	memset(buf, 'a', sizeof(buf));
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sha1_hex(buf, v[i].len, hex);
		ck_assert_str_eq(hex, v[i].hex);
	}
}
END_TEST

Suite *sha1_suite(void)
{
	Suite *s = suite_create("sha1");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_known_vectors_match);
	tcase_add_test(tc, test_a_million_a_fed_in_odd_pieces_matches_the_whole);
	tcase_add_test(tc, test_lengths_around_the_padding_boundary);
	suite_add_tcase(s, tc);
	return s;
}

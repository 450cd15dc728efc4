/* jsontext writes, byte for byte, what jansson's JSON_COMPACT dump writes
 * for the delta-mode text_delta event: the fast path changes no output. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/jsontext.h"
#include "base/utf8.h"

Suite *jsontext_suite(void);

/* What the json path (session.c's update_event + writer) writes. */
static char *jansson_line(size_t index, const char *s, size_t n)
{
	json_t *ev = json_pack("{s:s, s:{s:s, s:i, s:s%}}", "type", "message_update",
			       "assistantMessageEvent", "type", "text_delta", "contentIndex",
			       (int)index, "delta", s, n);
	char *dump, *line;

	ck_assert_ptr_nonnull(ev);
	dump = json_dumps(ev, JSON_COMPACT);
	ck_assert_ptr_nonnull(dump);
	line = malloc(strlen(dump) + 2);
	strcpy(line, dump);
	strcat(line, "\n");
	free(dump);
	json_decref(ev);
	return line;
}

static void same(size_t index, const char *s, size_t n)
{
	char *want = jansson_line(index, s, n);
	struct jsontext_buf b = { 0 };

	ck_assert_int_eq(jsontext_delta_append(&b, index, s, n), 0);
	ck_assert_uint_eq(b.len, strlen(want));
	ck_assert_msg(memcmp(b.data, want, b.len) == 0, "fast: %.*s\njansson: %s", (int)b.len, b.data,
		      want);
	free(b.data);
	free(want);
}

START_TEST(test_every_ascii_byte_is_escaped_as_jansson_does)
{
	for (int c = 0; c < 0x80; c++) {
		char s[3] = { 'x', (char)c, 'y' };

		same(0, s, 3);
	}
}
END_TEST

START_TEST(test_quotes_backslashes_controls_and_unicode)
{
	static const char *const cases[] = {
		"", "hello", " world", "\"", "\\", "\\\"", "a\"b\\c/d", "\b\f\n\r\t",
		"\x1b[31mred\x1b[0m", "\x7f", "h\xC3\xA9llo", "\xE2\x80\xA8\xE2\x80\xA9",
		"\xF0\x9F\x99\x82", "\xEF\xBB\xBF", "\xF4\x8F\xBF\xBF", "</script>",
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		same(0, cases[i], strlen(cases[i]));
	same(0, "a\0b", 3);
	same(1, "x", 1);
	same(1234567, "x", 1);
}
END_TEST

/* A small deterministic generator of well-formed UTF-8 with every kind of
 * character, many of them escapes. */
static uint64_t rng = 0x9E3779B97F4A7C15u;

static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

START_TEST(test_random_text_matches_jansson)
{
	char s[4 * 64];

	for (int round = 0; round < 20000; round++) {
		size_t n = 0, chars = next() % 64;

		for (size_t k = 0; k < chars; k++) {
			uint32_t cp;

			switch (next() % 4) {
			case 0: cp = next() % 0x80; break;
			case 1: cp = 0x80 + next() % (0x800 - 0x80); break;
			case 2: cp = 0x800 + next() % (0x10000 - 0x800); break;
			default: cp = 0x10000 + next() % (0x110000 - 0x10000); break;
			}
			if (cp >= 0xD800 && cp <= 0xDFFF)
				cp = '"';
			n += utf8_encode(s + n, cp);
		}
		ck_assert(utf8_valid(s, n));
		same(next() % 3, s, n);
	}
}
END_TEST

START_TEST(test_long_text_grows_the_buffer)
{
	size_t n = 100000;
	char *s = malloc(n);

	for (size_t i = 0; i < n; i++)
		s[i] = (char)(i % 7 == 0 ? '\n' : 'a' + i % 26);
	same(0, s, n);
	free(s);
}
END_TEST

/* jsontext_dump against jansson's compact dump. */
static void same_dump(const json_t *doc)
{
	char *want = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
	struct jsontext_buf b = { 0 };

	ck_assert_ptr_nonnull(want);
	ck_assert_int_eq(jsontext_dump(doc, &b), 0);
	ck_assert_msg(b.len == strlen(want) && memcmp(b.data, want, b.len) == 0,
		      "jsontext: %.*s\njansson:  %s", (int)b.len, b.data, want);
	free(b.data);
	free(want);
}

static void same_dump_text(const char *text)
{
	json_error_t e;
	json_t *doc = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);

	ck_assert_msg(doc != NULL, "%s: %s", text, e.text);
	same_dump(doc);
	json_decref(doc);
}

START_TEST(test_dump_scalars_and_reals_like_jansson)
{
	static const char *const docs[] = {
		"null", "true", "false", "0", "-1", "9223372036854775807", "-9223372036854775808",
		"0.0", "-0.0", "1.0", "0.1", "1.5e-7", "1e300", "-2.5E+10", "123456789012345678.0",
		"3.141592653589793", "1e-320", "5e-324", "1.7976931348623157e308", "100000000000000000000.0",
		"\"\"", "\"a\\u0000b\"", "\"\\u001f\\\"/\\\\\"", "\"\\ud83d\\ude42 \\u2028\"",
		"[]", "{}", "[1,[2,[3,{}]],{\"a\":[]}]",
		"{\"b\":1,\"a\":2,\"\\u001fk\":3,\"q\\\"\":{\"x\":null}}",
	};

	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		same_dump_text(docs[i]);
}
END_TEST

START_TEST(test_dump_built_events_like_jansson)
{
	json_t *doc = json_pack("{s:s, s:{s:s, s:[], s:s, s:{s:i, s:{s:f, s:f}}, s:I}}", "type",
				"message_end", "message", "role", "assistant", "content", "stopReason",
				"stop", "usage", "input", 3, "cost", "input", 0.0, "total", 0.25,
				"timestamp", (json_int_t)1767225600000);

	same_dump(doc);
	json_decref(doc);
}
END_TEST

/* Random trees of every kind of value, keys and strings with escapes. */
static json_t *random_tree(int depth)
{
	char s[4 * 16];
	size_t n = 0, chars = next() % 16;
	json_t *v;

	for (size_t k = 0; k < chars; k++) {
		uint32_t cp = next() % 4 == 0 ? next() % 0x80 : 0x20 + next() % 0x2000;

		if (cp >= 0xD800 && cp <= 0xDFFF)
			cp = '\\';
		n += utf8_encode(s + n, cp);
	}
	switch (depth > 4 ? next() % 6 : next() % 8) {
	case 0: return json_null();
	case 1: return json_boolean(next() % 2);
	case 2: return json_integer((json_int_t)(((uint64_t)next() << 32) | next()));
	case 3: {
		union { uint64_t u; double d; } bits;

		bits.u = ((uint64_t)next() << 32) | next();
		if (bits.d != bits.d || bits.d - bits.d != 0)  /* NaN or infinite */
			bits.d = (double)next() / 7.0;
		return json_real(next() % 2 ? bits.d : (double)(next() % 1000) / 8.0);
	}
	case 4:
	case 5: return json_stringn(s, n);
	case 6:
		v = json_array();
		for (uint32_t k = next() % 5; k > 0; k--)
			json_array_append_new(v, random_tree(depth + 1));
		return v;
	default:
		v = json_object();
		for (uint32_t k = next() % 5; k > 0; k--)
			json_object_setn_new(v, s, n > k ? n - k : n, random_tree(depth + 1));
		return v;
	}
}

START_TEST(test_dump_random_trees_like_jansson)
{
	for (int round = 0; round < 5000; round++) {
		json_t *doc = random_tree(0);

		ck_assert_ptr_nonnull(doc);
		same_dump(doc);
		json_decref(doc);
	}
}
END_TEST

Suite *jsontext_suite(void)
{
	Suite *s = suite_create("jsontext");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_every_ascii_byte_is_escaped_as_jansson_does);
	tcase_add_test(tc, test_quotes_backslashes_controls_and_unicode);
	tcase_add_test(tc, test_random_text_matches_jansson);
	tcase_add_test(tc, test_long_text_grows_the_buffer);
	tcase_add_test(tc, test_dump_scalars_and_reals_like_jansson);
	tcase_add_test(tc, test_dump_built_events_like_jansson);
	tcase_add_test(tc, test_dump_random_trees_like_jansson);
	suite_add_tcase(s, tc);
	return s;
}

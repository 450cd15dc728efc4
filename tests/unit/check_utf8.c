/* utf8: well-formedness, and the repair of cut or foreign text before it
 * becomes a JSON string; rpc: error responses that quote long non-ASCII
 * input keep their error text (found by the rpc fuzz target's invariant). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "rpc.h"
#include "base/utf8.h"

Suite *utf8_suite(void);

static char *repaired(const char *s)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%s", s);
	return utf8_repair(buf);
}

START_TEST(test_valid_accepts_well_formed_text_and_nul)
{
	ck_assert(utf8_valid("", 0));
	ck_assert(utf8_valid("a\0b", 3));
	ck_assert(utf8_valid("h\xC3\xA9llo \xE2\x80\xA8 \xF0\x9F\x99\x82", 15));
	ck_assert(utf8_valid("\xEF\xBF\xBF\xF4\x8F\xBF\xBF", 7)); /* U+FFFF, U+10FFFF */
}
END_TEST

START_TEST(test_valid_rejects_cut_overlong_surrogate_and_out_of_range)
{
	ck_assert(!utf8_valid("\xC3", 1));
	ck_assert(!utf8_valid("\xE2\x80", 2));
	ck_assert(!utf8_valid("\xC0\xAF", 2));          /* overlong '/' */
	ck_assert(!utf8_valid("\xE0\x80\xAF", 3));      /* overlong */
	ck_assert(!utf8_valid("\xED\xA0\x80", 3));      /* U+D800 */
	ck_assert(!utf8_valid("\xF4\x90\x80\x80", 4));  /* U+110000 */
	ck_assert(!utf8_valid("\xFF", 1));
	ck_assert(!utf8_valid("\x80", 1));
}
END_TEST

START_TEST(test_repair_drops_a_character_cut_at_the_end)
{
	ck_assert_str_eq(repaired("ab\xC3"), "ab");
	ck_assert_str_eq(repaired("ab\xE2\x80"), "ab");
	ck_assert_str_eq(repaired("ab\xF0\x9F\x99"), "ab");
	ck_assert_str_eq(repaired("\xC3\xA9\xC3"), "\xC3\xA9");
}
END_TEST

START_TEST(test_repair_marks_other_bad_bytes_and_keeps_good_text)
{
	ck_assert_str_eq(repaired("a\xFF" "b"), "a?b");
	ck_assert_str_eq(repaired("\xC3(x"), "?(x");
	ck_assert_str_eq(repaired("\xED\xA0\x80!"), "?" "?" "?!"); /* no trigraph */
	ck_assert_str_eq(repaired("/tmp/\xFE\xC3\xA9/s"), "/tmp/?\xC3\xA9/s");
	/* A lone byte at the end that can never start a sequence is not a cut. */
	ck_assert_str_eq(repaired("x\x80"), "x?");
	ck_assert_str_eq(repaired("x\xE0\x80"), "x??");
	ck_assert_str_eq(repaired("\xF0\x9F\x99\x82 ok"), "\xF0\x9F\x99\x82 ok");
}
END_TEST

static void keep(void *ctx, json_t *event)
{
	json_t **out = ctx;

	json_decref(*out);
	*out = event;
}

/* An unknown type is quoted up to 200 bytes: 'a' + 150 'é' is cut after
 * 99.5 of them. The error text must survive, whole characters only. */
START_TEST(test_unknown_command_error_survives_a_cut_in_a_character)
{
	char line[600] = "{\"id\":\"u\",\"type\":\"a";
	struct rpc rpc;
	json_t *ev = NULL;
	const char *error;

	for (int i = 0; i < 150; i++)
		strcat(line, "\xC3\xA9");
	strcat(line, "\"}");
	rpc_init(&rpc, NULL, keep, &ev, 1024);
	rpc_handle_line(&rpc, line, strlen(line));
	ck_assert_ptr_nonnull(ev);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "id")), "u");
	error = json_string_value(json_object_get(ev, "error"));
	ck_assert_msg(error != NULL, "the error text was lost");
	ck_assert_int_eq(strncmp(error, "Unknown command: a\xC3\xA9", 20), 0);
	ck_assert(utf8_valid(error, strlen(error)));
	/* 'a', 99 whole characters, the cut one's first byte marked, the ellipsis. */
	ck_assert_uint_eq(strlen(error), strlen("Unknown command: ") + 1 + 99 * 2 + 1 + 3);
	ck_assert_str_eq(error + strlen(error) - 4, "?...");
	json_decref(ev);
}
END_TEST

Suite *utf8_suite(void)
{
	Suite *s = suite_create("utf8");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_valid_accepts_well_formed_text_and_nul);
	tcase_add_test(tc, test_valid_rejects_cut_overlong_surrogate_and_out_of_range);
	tcase_add_test(tc, test_repair_drops_a_character_cut_at_the_end);
	tcase_add_test(tc, test_repair_marks_other_bad_bytes_and_keeps_good_text);
	tcase_add_test(tc, test_unknown_command_error_survives_a_cut_in_a_character);
	suite_add_tcase(s, tc);
	return s;
}

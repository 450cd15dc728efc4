/* fleet_script: the string the daemon sends to Redis is src/core/fleet.lua,
 * byte for byte (the Makefile regenerates it when the file changes). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fleet_script.h"

Suite *fleet_script_suite(void);

#define SCRIPT "src/core/fleet.lua"

START_TEST(test_the_embedded_script_is_the_lua_file)
{
	FILE *f = fopen(SCRIPT, "rb");
	char *text;
	long n;

	ck_assert_msg(f != NULL, "cannot open %s", SCRIPT);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_gt(n, 0);
	rewind(f);
	text = malloc((size_t)n);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	ck_assert_uint_eq(strlen(fleet_script_text), (size_t)n);
	ck_assert_mem_eq(fleet_script_text, text, (size_t)n);
	free(text);
}
END_TEST

START_TEST(test_the_script_dispatches_every_op_the_store_calls)
{
	static const char *const ops[] = { "ops.acquire", "ops.report", "ops.record", "ops.exhaust",
					   "ops.model", "ops.ask", "ops.tell", "ops.release",
					   "ops.renew", "ops.clear", "ops.state" };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		ck_assert_msg(strstr(fleet_script_text, ops[i]) != NULL, "no %s", ops[i]);
}
END_TEST

Suite *fleet_script_suite(void)
{
	Suite *s = suite_create("fleet_script");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_the_embedded_script_is_the_lua_file);
	tcase_add_test(tc, test_the_script_dispatches_every_op_the_store_calls);
	suite_add_tcase(s, tc);
	return s;
}

/* Matching responses to commands by id (src/client/pending.c). */
#include <check.h>
#include <string.h>

#include "client/pending.h"

Suite *client_pending_suite(void);

START_TEST(test_generated_ids_count_up_and_skip_pending_ones)
{
	struct retryd_pending p;
	char id[32];

	retryd_pending_init(&p);
	retryd_pending_next_id(&p, id, sizeof(id));
	ck_assert_str_eq(id, "req_1");
	ck_assert_int_eq(retryd_pending_add(&p, "req_2", "get_state", NULL, NULL, 0), 0);
	retryd_pending_next_id(&p, id, sizeof(id));
	ck_assert_str_eq(id, "req_3");
	retryd_pending_release(&p);
}
END_TEST

START_TEST(test_duplicate_id_is_refused)
{
	struct retryd_pending p;

	retryd_pending_init(&p);
	ck_assert_int_eq(retryd_pending_add(&p, "x", "get_state", NULL, NULL, 0), 0);
	ck_assert_int_eq(retryd_pending_add(&p, "x", "abort", NULL, NULL, 0), UV_EEXIST);
	ck_assert_uint_eq(retryd_pending_count(&p), 1);
	retryd_pending_release(&p);
}
END_TEST

START_TEST(test_responses_in_any_order_find_their_command)
{
	struct retryd_pending p;
	struct retryd_pending_entry e;
	int a, b, c;

	retryd_pending_init(&p);
	retryd_pending_add(&p, "1", "prompt", NULL, &a, 0);
	retryd_pending_add(&p, "2", "get_state", NULL, &b, 0);
	retryd_pending_add(&p, "3", "abort", NULL, &c, 0);

	ck_assert(retryd_pending_take(&p, "3", &e));
	ck_assert_str_eq(e.command, "abort");
	ck_assert_ptr_eq(e.ctx, &c);
	retryd_pending_entry_release(&e);
	ck_assert(retryd_pending_take(&p, "1", &e));
	ck_assert_str_eq(e.command, "prompt");
	ck_assert_ptr_eq(e.ctx, &a);
	retryd_pending_entry_release(&e);
	ck_assert(!retryd_pending_take(&p, "1", &e));
	ck_assert(!retryd_pending_take(&p, "nope", &e));
	ck_assert(retryd_pending_take(&p, "2", &e));
	ck_assert_ptr_eq(e.ctx, &b);
	retryd_pending_entry_release(&e);
	ck_assert_uint_eq(retryd_pending_count(&p), 0);
	retryd_pending_release(&p);
}
END_TEST

START_TEST(test_oldest_first_when_failing_everything)
{
	struct retryd_pending p;
	struct retryd_pending_entry e;

	retryd_pending_init(&p);
	retryd_pending_add(&p, "b", "one", NULL, NULL, 0);
	retryd_pending_add(&p, "a", "two", NULL, NULL, 0);
	ck_assert(retryd_pending_take_oldest(&p, &e));
	ck_assert_str_eq(e.id, "b");
	retryd_pending_entry_release(&e);
	/* A command sent from a failure callback joins at the end. */
	retryd_pending_add(&p, "c", "three", NULL, NULL, 0);
	ck_assert(retryd_pending_take_oldest(&p, &e));
	ck_assert_str_eq(e.id, "a");
	retryd_pending_entry_release(&e);
	ck_assert(retryd_pending_take_oldest(&p, &e));
	ck_assert_str_eq(e.id, "c");
	retryd_pending_entry_release(&e);
	ck_assert(!retryd_pending_take_oldest(&p, &e));
	retryd_pending_release(&p);
}
END_TEST

START_TEST(test_deadlines_expire_in_order_on_a_given_clock)
{
	struct retryd_pending p;
	struct retryd_pending_entry e;

	retryd_pending_init(&p);
	retryd_pending_add(&p, "1", "a", NULL, NULL, 300);
	retryd_pending_add(&p, "2", "b", NULL, NULL, 0);
	retryd_pending_add(&p, "3", "c", NULL, NULL, 100);
	ck_assert_uint_eq(retryd_pending_earliest(&p), 100);
	ck_assert(!retryd_pending_take_expired(&p, 99, &e));
	ck_assert(retryd_pending_take_expired(&p, 100, &e));
	ck_assert_str_eq(e.id, "3");
	retryd_pending_entry_release(&e);
	ck_assert_uint_eq(retryd_pending_earliest(&p), 300);
	ck_assert(retryd_pending_take_expired(&p, 1000, &e));
	ck_assert_str_eq(e.id, "1");
	retryd_pending_entry_release(&e);
	/* No deadline: never expires. */
	ck_assert(!retryd_pending_take_expired(&p, UINT64_MAX, &e));
	ck_assert_uint_eq(retryd_pending_earliest(&p), 0);
	retryd_pending_release(&p);
}
END_TEST

START_TEST(test_many_pending_commands_grow_the_table)
{
	struct retryd_pending p;
	struct retryd_pending_entry e;
	char id[32];

	retryd_pending_init(&p);
	for (int i = 0; i < 1000; i++) {
		retryd_pending_next_id(&p, id, sizeof(id));
		ck_assert_int_eq(retryd_pending_add(&p, id, "get_state", NULL, NULL, 0), 0);
	}
	ck_assert(retryd_pending_take(&p, "req_500", &e));
	retryd_pending_entry_release(&e);
	ck_assert_uint_eq(retryd_pending_count(&p), 999);
	retryd_pending_release(&p);
}
END_TEST

Suite *client_pending_suite(void)
{
	Suite *s = suite_create("client_pending");
	TCase *tc = tcase_create("pending");

	tcase_add_test(tc, test_generated_ids_count_up_and_skip_pending_ones);
	tcase_add_test(tc, test_duplicate_id_is_refused);
	tcase_add_test(tc, test_responses_in_any_order_find_their_command);
	tcase_add_test(tc, test_oldest_first_when_failing_everything);
	tcase_add_test(tc, test_deadlines_expire_in_order_on_a_given_clock);
	tcase_add_test(tc, test_many_pending_commands_grow_the_table);
	suite_add_tcase(s, tc);
	return s;
}

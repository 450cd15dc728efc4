/* core/queue: the steering and follow-up queues' items. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/queue.h"

Suite *queue_suite(void);

static json_t *queue_of(int n)
{
	json_t *q = json_array();
	char text[16];

	for (int i = 0; i < n; i++) {
		snprintf(text, sizeof(text), "m%d", i);
		json_array_append_new(q, queue_item_new(text, NULL, 1000 + i, json_object(), 7));
	}
	return q;
}

START_TEST(test_an_item_holds_the_user_message_its_policy_and_the_auto_retry_count)
{
	json_t *item = queue_item_new("hi", NULL, 1234, json_pack("{s:i}", "maxRetries", 2), 5);
	json_t *m = json_object_get(item, "message");

	ck_assert_str_eq(json_string_value(json_object_get(m, "role")), "user");
	ck_assert_int_eq(json_integer_value(json_object_get(m, "timestamp")), 1234);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(item, "policy"), "maxRetries")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(item, "autoRetryGen")), 5);
	json_decref(item);
}
END_TEST

START_TEST(test_take_one_at_a_time_or_all_in_order)
{
	json_t *q = queue_of(3);
	json_t *one = queue_take(q, false), *rest;

	ck_assert_uint_eq(json_array_size(one), 1);
	ck_assert_uint_eq(json_array_size(q), 2);
	rest = queue_take(q, true);
	ck_assert_uint_eq(json_array_size(rest), 2);
	ck_assert_uint_eq(json_array_size(q), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(json_array_get(rest, 1),
							"message"), "timestamp")), 1002);
	json_decref(one);
	json_decref(rest);
	json_decref(q);
}
END_TEST

START_TEST(test_dropping_reports_each_text_and_empties_the_queue)
{
	json_t *q = queue_of(2), *out = json_array();

	queue_drop_texts(q, out);
	ck_assert_uint_eq(json_array_size(q), 0);
	ck_assert_uint_eq(json_array_size(out), 2);
	ck_assert_str_eq(json_string_value(json_array_get(out, 1)), "m1");
	json_decref(q);
	json_decref(out);
}
END_TEST

Suite *queue_suite(void)
{
	Suite *s = suite_create("queue");
	TCase *tc = tcase_create("items");

	tcase_add_test(tc, test_an_item_holds_the_user_message_its_policy_and_the_auto_retry_count);
	tcase_add_test(tc, test_take_one_at_a_time_or_all_in_order);
	tcase_add_test(tc, test_dropping_reports_each_text_and_empties_the_queue);
	suite_add_tcase(s, tc);
	return s;
}

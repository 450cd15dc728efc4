/* proto/message: pi's user message and the stats of a conversation; and the
 * session file name core/journal gives a session. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/number.h"
#include "core/journal.h"
#include "proto/message.h"

Suite *message_suite(void);

static char *dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

START_TEST(test_user_message_has_pis_shape_with_images_after_the_text)
{
	json_t *images = json_loads("[{\"type\":\"image\",\"data\":\"AA==\",\"mimeType\":\"image/png\"}]",
				    0, NULL);
	json_t *m = message_user("hi", images, 1700000000123);
	char *s = dump(m);

	ck_assert_str_eq(s, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"},"
			    "{\"type\":\"image\",\"data\":\"AA==\",\"mimeType\":\"image/png\"}],"
			    "\"timestamp\":1700000000123}");
	free(s);
	json_decref(m);
	json_decref(images);
}
END_TEST

START_TEST(test_stats_count_roles_and_sum_usage)
{
	json_t *msgs = json_loads("[{\"role\":\"user\"},"
				  "{\"role\":\"assistant\",\"usage\":{\"input\":10,\"output\":3}},"
				  "{\"role\":\"user\"},"
				  "{\"role\":\"assistant\",\"usage\":{\"input\":20,\"output\":4}}]", 0, NULL);
	json_t *st = message_stats(msgs, "abc", "/tmp/x.jsonl");
	json_t *tokens = json_object_get(st, "tokens");

	ck_assert_int_eq(json_integer_value(json_object_get(st, "userMessages")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "assistantMessages")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "totalMessages")), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "input")), 30);
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "output")), 7);
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "total")), 37);
	ck_assert_str_eq(json_string_value(json_object_get(st, "sessionId")), "abc");
	ck_assert_str_eq(json_string_value(json_object_get(st, "sessionFile")), "/tmp/x.jsonl");
	json_decref(st);
	st = message_stats(msgs, "abc", NULL);
	ck_assert_ptr_null(json_object_get(st, "sessionFile"));
	json_decref(st);
	json_decref(msgs);
}
END_TEST

START_TEST(test_stats_sums_saturate_and_bad_counts_count_zero)
{
	json_t *msgs = json_loads("[{\"role\":\"assistant\",\"usage\":{\"input\":9223372036854775807,"
				  "\"output\":9223372036854775807}},"
				  "{\"role\":\"assistant\",\"usage\":{\"input\":9007199254740991,"
				  "\"output\":1}},"
				  "{\"role\":\"assistant\",\"usage\":{\"input\":-5,\"output\":2.5}},"
				  "{\"role\":\"assistant\",\"usage\":{\"input\":\"7\",\"output\":null}}]",
				  0, NULL);
	json_t *st, *tokens;

	ck_assert_ptr_nonnull(msgs);
	st = message_stats(msgs, "abc", NULL);
	tokens = json_object_get(st, "tokens");
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "input")), NUMBER_MAX);
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "output")), NUMBER_MAX);
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "total")), NUMBER_MAX);
	json_decref(st);
	/* Only the bad ones: nothing negative is relayed. */
	json_array_remove(msgs, 0);
	json_array_remove(msgs, 0);
	st = message_stats(msgs, "abc", NULL);
	tokens = json_object_get(st, "tokens");
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "input")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "output")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "total")), 0);
	json_decref(st);
	json_decref(msgs);
}
END_TEST

START_TEST(test_stats_sum_cache_counts_and_total_them_as_pi_does)
{
	/* pi: tokens.total = input + output + cacheRead + cacheWrite of the
	 * assistant messages, whatever their totalTokens say. */
	json_t *msgs = json_loads("[{\"role\":\"user\"},"
				  "{\"role\":\"assistant\",\"usage\":{\"input\":10,\"output\":3,"
				  "\"cacheRead\":100,\"cacheWrite\":7,\"totalTokens\":1}},"
				  "{\"role\":\"assistant\",\"usage\":{\"input\":1,\"output\":1,"
				  "\"cacheRead\":-5,\"cacheWrite\":2.5}}]", 0, NULL);
	json_t *st, *tokens;

	ck_assert_ptr_nonnull(msgs);
	st = message_stats(msgs, "abc", NULL);
	tokens = json_object_get(st, "tokens");
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "input")), 11);
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "output")), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "cacheRead")), 100);
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "cacheWrite")), 7);
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "total")), 122);
	json_decref(st);
	json_decref(msgs);
	msgs = json_loads("[{\"role\":\"assistant\",\"usage\":{\"input\":0,\"output\":0,"
			  "\"cacheRead\":9223372036854775807,\"cacheWrite\":20}}]", 0, NULL);
	st = message_stats(msgs, "abc", NULL);
	tokens = json_object_get(st, "tokens");
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "cacheRead")), NUMBER_MAX);
	ck_assert_int_eq(json_integer_value(json_object_get(tokens, "total")), NUMBER_MAX);
	json_decref(st);
	json_decref(msgs);
}
END_TEST

START_TEST(test_session_file_is_named_by_utc_start_time_and_id)
{
	char *p = journal_path("/d", "0190-id", 1700000000123);

	ck_assert_str_eq(p, "/d/2023-11-14T22-13-20Z_0190-id.jsonl");
	free(p);
	ck_assert_ptr_null(journal_path(NULL, "id", 0));
}
END_TEST

Suite *message_suite(void)
{
	Suite *s = suite_create("message");
	TCase *tc = tcase_create("shapes");

	tcase_add_test(tc, test_user_message_has_pis_shape_with_images_after_the_text);
	tcase_add_test(tc, test_stats_count_roles_and_sum_usage);
	tcase_add_test(tc, test_stats_sums_saturate_and_bad_counts_count_zero);
	tcase_add_test(tc, test_stats_sum_cache_counts_and_total_them_as_pi_does);
	tcase_add_test(tc, test_session_file_is_named_by_utc_start_time_and_id);
	suite_add_tcase(s, tc);
	return s;
}

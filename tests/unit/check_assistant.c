/* The streaming assistant message (src/core/assistant.c): the events of
 * one attempt's message, with full and delta updates. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/number.h"
#include "core/assistant.h"

Suite *assistant_suite(void);

static json_t *events;
static struct jsontext_buf lines;
static int lines_sent;

static void record(void *ctx, json_t *event)
{
	(void)ctx;
	json_array_append_new(events, event);
}

static struct jsontext_buf *line_buf(void *ctx)
{
	(void)ctx;
	return &lines;
}

static void line_done(void *ctx)
{
	(void)ctx;
	lines_sent++;
}

static void setup(void)
{
	events = json_array();
	memset(&lines, 0, sizeof(lines));
	lines_sent = 0;
}

static void teardown(void)
{
	json_decref(events);
	free(lines.data);
}

/* Input and output only, as most tests need. */
#define COUNTS(in, out) (&(struct assistant_usage){ (in), (out), 0, 0, 0 })

static void init(struct assistant *a, bool with_lines)
{
	struct assistant_output out = { .emit = record, .ctx = NULL };

	if (with_lines) {
		out.line_buf = line_buf;
		out.line_done = line_done;
	}
	assistant_init(a, &out);
}

/* v is want, as compact JSON. */
static void assert_json(const json_t *v, const char *want)
{
	char *got = json_dumps(v, JSON_COMPACT);

	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(got);
}

static json_t *event(size_t i)
{
	return json_array_get(events, i);
}

static const char *type_of(size_t i)
{
	json_t *ev = event(i);
	json_t *ame = json_object_get(ev, "assistantMessageEvent");

	return json_string_value(json_object_get(ame ? ame : ev, "type"));
}

START_TEST(test_open_says_message_start_once_with_the_identity)
{
	struct assistant a;
	json_t *msg;

	init(&a, false);
	ck_assert(!assistant_is_open(&a));
	assistant_open(&a, "openai-completions", "openai", "gpt-x", 1234);
	assistant_open(&a, "other", "other", "other", 9);
	ck_assert(assistant_is_open(&a));
	ck_assert_uint_eq(json_array_size(events), 1);
	ck_assert_str_eq(type_of(0), "message_start");
	msg = json_object_get(event(0), "message");
	ck_assert_str_eq(json_string_value(json_object_get(msg, "role")), "assistant");
	ck_assert_str_eq(json_string_value(json_object_get(msg, "api")), "openai-completions");
	ck_assert_str_eq(json_string_value(json_object_get(msg, "provider")), "openai");
	ck_assert_str_eq(json_string_value(json_object_get(msg, "model")), "gpt-x");
	ck_assert_int_eq(json_integer_value(json_object_get(msg, "timestamp")), 1234);
	assistant_release(&a);
}
END_TEST

START_TEST(test_full_updates_carry_the_text_so_far)
{
	struct assistant a;
	json_t *partial;

	init(&a, true);
	assistant_open(&a, "x", "sim", "sim-1", 0);
	assistant_text_start(&a);
	assistant_text_delta(&a, "hel", 3);
	assistant_text_delta(&a, "lo", 2);
	assistant_text_end(&a);
	/* Full updates never take the line fast path. */
	ck_assert_int_eq(lines_sent, 0);
	ck_assert_str_eq(type_of(1), "text_start");
	ck_assert_str_eq(type_of(3), "text_delta");
	partial = json_object_get(event(3), "message");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
				 json_object_get(partial, "content"), 0), "text")), "hello");
	ck_assert_str_eq(type_of(4), "text_end");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(event(4),
				 "assistantMessageEvent"), "content")), "hello");
	assistant_release(&a);
}
END_TEST

START_TEST(test_delta_updates_write_lines_and_close_keeps_every_block)
{
	struct assistant a;
	json_t *msg, *content;

	init(&a, true);
	a.delta_updates = true;
	assistant_open(&a, "x", "sim", "sim-1", 0);
	for (int b = 0; b < 2; b++) {
		assistant_text_start(&a);
		assistant_text_delta(&a, b ? "two" : "one", 3);
		assistant_text_delta(&a, "!", 1);
		assistant_text_end(&a);
	}
	ck_assert_int_eq(lines_sent, 4);
	ck_assert_ptr_nonnull(strstr(lines.data, "\"contentIndex\":1,\"delta\":\"two\""));
	/* No partial in delta updates. */
	ck_assert_ptr_null(json_object_get(event(1), "message"));
	msg = assistant_close(&a, "stop", NULL, COUNTS(7, 5), NULL);
	ck_assert(!assistant_is_open(&a));
	content = json_object_get(msg, "content");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(content, 0), "text")), "one!");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(content, 1), "text")), "two!");
	ck_assert_str_eq(type_of(json_array_size(events) - 1), "message_end");
	json_decref(msg);
	assistant_release(&a);
}
END_TEST

START_TEST(test_text_that_is_not_utf8_is_refused_like_jansson_does)
{
	struct assistant a;
	enum log_level level = log_level;
	size_t before;

	log_level = LOG_LEVEL_NONE; /* the expected "cannot build" error */
	init(&a, true);
	a.delta_updates = true;
	assistant_open(&a, "x", "sim", "sim-1", 0);
	assistant_text_start(&a);
	before = json_array_size(events);
	assistant_text_delta(&a, "\xff", 1);
	/* No line, and the json path could not build the event either. */
	ck_assert_int_eq(lines_sent, 0);
	ck_assert_uint_eq(lines.len, 0);
	ck_assert_uint_eq(json_array_size(events), before);
	assistant_release(&a);
	log_level = level;
}
END_TEST

static json_t *block(const json_t *msg, size_t i)
{
	return json_array_get(json_object_get(msg, "content"), i);
}

START_TEST(test_thinking_then_text_blocks_stream_in_order_with_full_updates)
{
	struct assistant a;
	json_t *partial, *msg, *ame;

	init(&a, true);
	assistant_open(&a, "x", "p", "m", 0);
	assistant_thinking_start(&a);
	assistant_thinking_delta(&a, "Let me", 6);
	assistant_thinking_delta(&a, " see", 4);
	assistant_thinking_end(&a, "sig==", 5, false);
	assistant_text_start(&a);
	assistant_text_delta(&a, "Hi", 2);
	assistant_text_end(&a);
	ck_assert_int_eq(lines_sent, 0);
	ck_assert_str_eq(type_of(1), "thinking_start");
	ck_assert_str_eq(type_of(3), "thinking_delta");
	partial = json_object_get(event(3), "message");
	ck_assert_str_eq(json_string_value(json_object_get(block(partial, 0), "thinking")), "Let me see");
	ck_assert_ptr_null(json_object_get(block(partial, 0), "text"));
	ame = json_object_get(event(4), "assistantMessageEvent");
	ck_assert_str_eq(type_of(4), "thinking_end");
	ck_assert_str_eq(json_string_value(json_object_get(ame, "content")), "Let me see");
	ck_assert_int_eq(json_integer_value(json_object_get(ame, "contentIndex")), 0);
	ck_assert_ptr_eq(json_object_get(ame, "partial"), json_object_get(event(4), "message"));
	ck_assert_str_eq(type_of(5), "text_start");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(event(5),
				"assistantMessageEvent"), "contentIndex")), 1);
	msg = assistant_close(&a, "stop", NULL, COUNTS(1, 2), NULL);
	assert_json(block(msg, 0),
			 "{\"type\":\"thinking\",\"thinking\":\"Let me see\",\"thinkingSignature\":\"sig==\"}");
	assert_json(block(msg, 1), "{\"type\":\"text\",\"text\":\"Hi\"}");
	json_decref(msg);
	assistant_release(&a);
}
END_TEST

START_TEST(test_thinking_deltas_are_lines_in_delta_mode_and_blocks_interleave)
{
	struct assistant a;
	json_t *msg;

	init(&a, true);
	a.delta_updates = true;
	assistant_open(&a, "x", "p", "m", 0);
	assistant_thinking_start(&a);
	assistant_thinking_delta(&a, "a\"b", 3);
	assistant_thinking_end(&a, NULL, 0, false);
	assistant_text_start(&a);
	assistant_text_delta(&a, "x", 1);
	assistant_text_end(&a);
	assistant_thinking_start(&a);
	assistant_thinking_delta(&a, "c", 1);
	/* Closed without thinking_end (the attempt failed): still kept. */
	msg = assistant_close(&a, "error", "boom", COUNTS(0, 0), NULL);
	ck_assert_int_eq(lines_sent, 3);
	ck_assert_ptr_nonnull(strstr(lines.data, "{\"type\":\"message_update\",\"assistantMessageEvent\":"
				     "{\"type\":\"thinking_delta\",\"contentIndex\":0,\"delta\":\"a\\\"b\"}}\n"));
	ck_assert_ptr_nonnull(strstr(lines.data, "\"type\":\"thinking_delta\",\"contentIndex\":2,"));
	ck_assert_ptr_null(json_object_get(event(1), "message"));
	assert_json(json_object_get(msg, "content"),
			 "[{\"type\":\"thinking\",\"thinking\":\"a\\\"b\"},{\"type\":\"text\",\"text\":\"x\"},"
			 "{\"type\":\"thinking\",\"thinking\":\"c\"}]");
	json_decref(msg);
	assistant_release(&a);
}
END_TEST

START_TEST(test_redacted_thinking_shows_pi_placeholder_and_keeps_its_data)
{
	struct assistant a;
	json_t *msg, *ame;

	init(&a, false);
	assistant_open(&a, "x", "p", "m", 0);
	assistant_thinking_start(&a);
	assistant_thinking_end(&a, "EmwK", 4, true);
	ame = json_object_get(event(2), "assistantMessageEvent");
	ck_assert_str_eq(json_string_value(json_object_get(ame, "content")), "[Reasoning redacted]");
	msg = assistant_close(&a, "stop", NULL, COUNTS(0, 0), NULL);
	assert_json(block(msg, 0),
			 "{\"type\":\"thinking\",\"thinking\":\"[Reasoning redacted]\","
			 "\"thinkingSignature\":\"EmwK\",\"redacted\":true}");
	json_decref(msg);
	assistant_release(&a);
}
END_TEST

START_TEST(test_close_records_stop_reason_error_and_usage)
{
	struct assistant a;
	json_t *msg, *usage;

	init(&a, false);
	assistant_text_delta(&a, "ignored", 7); /* nothing open */
	assistant_text_end(&a);
	ck_assert_uint_eq(json_array_size(events), 0);
	assistant_open(&a, "x", "sim", "sim-1", 0);
	msg = assistant_close(&a, "error", "503 Service Unavailable", COUNTS(10, 4), NULL);
	ck_assert_str_eq(json_string_value(json_object_get(msg, "stopReason")), "error");
	ck_assert_str_eq(json_string_value(json_object_get(msg, "errorMessage")),
			 "503 Service Unavailable");
	usage = json_object_get(msg, "usage");
	ck_assert_int_eq(json_integer_value(json_object_get(usage, "input")), 10);
	ck_assert_int_eq(json_integer_value(json_object_get(usage, "output")), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(usage, "totalTokens")), 14);
	ck_assert_ptr_eq(json_object_get(event(1), "message"), msg);
	json_decref(msg);
	assistant_release(&a);
}
END_TEST

START_TEST(test_close_saturates_huge_counts_and_their_sum_and_drops_negatives)
{
	struct assistant a;
	json_t *msg, *usage;

	init(&a, false);
	assistant_open(&a, "x", "sim", "sim-1", 0);
	/* The reported defect: these two gave totalTokens -2 (and UB). */
	msg = assistant_close(&a, "stop", NULL, COUNTS(INT64_MAX, INT64_MAX), NULL);
	usage = json_object_get(msg, "usage");
	ck_assert_int_eq(json_integer_value(json_object_get(usage, "input")), NUMBER_MAX);
	ck_assert_int_eq(json_integer_value(json_object_get(usage, "output")), NUMBER_MAX);
	ck_assert_int_eq(json_integer_value(json_object_get(usage, "totalTokens")), NUMBER_MAX);
	json_decref(msg);
	assistant_open(&a, "x", "sim", "sim-1", 0);
	msg = assistant_close(&a, "stop", NULL, COUNTS(-1, INT64_MIN), NULL);
	usage = json_object_get(msg, "usage");
	ck_assert_int_eq(json_integer_value(json_object_get(usage, "input")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(usage, "output")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(usage, "totalTokens")), 0);
	json_decref(msg);
	assistant_release(&a);
}
END_TEST

static int64_t usage_count(const json_t *msg, const char *key)
{
	return json_integer_value(json_object_get(json_object_get(msg, "usage"), key));
}

START_TEST(test_close_keeps_cache_counts_and_totals_all_four_unless_a_total_is_given)
{
	struct assistant a;
	json_t *msg;

	init(&a, false);
	assistant_open(&a, "x", "sim", "sim-1", 0);
	msg = assistant_close(&a, "stop", NULL, &(struct assistant_usage){ 70, 20, 30, 5, 0 }, NULL);
	ck_assert_int_eq(usage_count(msg, "input"), 70);
	ck_assert_int_eq(usage_count(msg, "output"), 20);
	ck_assert_int_eq(usage_count(msg, "cacheRead"), 30);
	ck_assert_int_eq(usage_count(msg, "cacheWrite"), 5);
	ck_assert_int_eq(usage_count(msg, "totalTokens"), 125);
	json_decref(msg);
	/* A provider's own total (Responses, Gemini) is pi's totalTokens. */
	assistant_open(&a, "x", "sim", "sim-1", 0);
	msg = assistant_close(&a, "stop", NULL, &(struct assistant_usage){ 7, 2, 3, 0, 99 }, NULL);
	ck_assert_int_eq(usage_count(msg, "totalTokens"), 99);
	json_decref(msg);
	/* Hostile counts: clamped, the sum saturates. */
	assistant_open(&a, "x", "sim", "sim-1", 0);
	msg = assistant_close(&a, "stop", NULL,
			      &(struct assistant_usage){ 1, 1, INT64_MAX, -4, INT64_MIN }, NULL);
	ck_assert_int_eq(usage_count(msg, "cacheRead"), NUMBER_MAX);
	ck_assert_int_eq(usage_count(msg, "cacheWrite"), 0);
	ck_assert_int_eq(usage_count(msg, "totalTokens"), NUMBER_MAX);
	json_decref(msg);
	/* No counts at all (an abort). */
	assistant_open(&a, "x", "sim", "sim-1", 0);
	msg = assistant_close(&a, "aborted", "Operation aborted", NULL, NULL);
	ck_assert_int_eq(usage_count(msg, "input"), 0);
	ck_assert_int_eq(usage_count(msg, "cacheRead"), 0);
	ck_assert_int_eq(usage_count(msg, "totalTokens"), 0);
	json_decref(msg);
	assistant_release(&a);
}
END_TEST

START_TEST(test_last_text_joins_the_blocks_of_the_last_assistant_message)
{
	json_t *messages = json_loads("[{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"old\"}]},"
				      "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
				      "{\"type\":\"image\"},{\"type\":\"text\",\"text\":\"b\"}]},"
				      "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"q\"}]}]",
				      0, NULL);
	json_t *empty = json_array();
	json_t *out = assistant_last_text(messages);

	ck_assert_str_eq(json_string_value(json_object_get(out, "text")), "ab");
	json_decref(out);
	out = assistant_last_text(empty);
	ck_assert(json_is_null(json_object_get(out, "text")));
	json_decref(out);
	json_decref(empty);
	json_decref(messages);
}
END_TEST

Suite *assistant_suite(void)
{
	Suite *s = suite_create("assistant");
	TCase *tc = tcase_create("assistant");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_open_says_message_start_once_with_the_identity);
	tcase_add_test(tc, test_full_updates_carry_the_text_so_far);
	tcase_add_test(tc, test_delta_updates_write_lines_and_close_keeps_every_block);
	tcase_add_test(tc, test_text_that_is_not_utf8_is_refused_like_jansson_does);
	tcase_add_test(tc, test_thinking_then_text_blocks_stream_in_order_with_full_updates);
	tcase_add_test(tc, test_thinking_deltas_are_lines_in_delta_mode_and_blocks_interleave);
	tcase_add_test(tc, test_redacted_thinking_shows_pi_placeholder_and_keeps_its_data);
	tcase_add_test(tc, test_close_records_stop_reason_error_and_usage);
	tcase_add_test(tc, test_close_saturates_huge_counts_and_their_sum_and_drops_negatives);
	tcase_add_test(tc, test_close_keeps_cache_counts_and_totals_all_four_unless_a_total_is_given);
	tcase_add_test(tc, test_last_text_joins_the_blocks_of_the_last_assistant_message);
	suite_add_tcase(s, tc);
	return s;
}

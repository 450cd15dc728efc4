#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider/http/sse.h"

Suite *sse_suite(void);

/* Every event as "<name>|<data>\n", data with LF shown as "\\n". */
struct seen {
	char *log;
	size_t len, cap;
	int count;
	int stop_after; /* return 7 from the callback after this many; 0: never */
};

static void put(struct seen *s, const char *p, size_t n)
{
	if (s->len + n + 1 > s->cap) {
		s->cap = (s->len + n + 1) * 2;
		s->log = realloc(s->log, s->cap);
		ck_assert_ptr_nonnull(s->log);
	}
	memcpy(s->log + s->len, p, n);
	s->len += n;
	s->log[s->len] = '\0';
}

static int collect(void *ctx, const struct sse_event *ev)
{
	struct seen *s = ctx;

	put(s, ev->event, ev->event_len);
	put(s, "|", 1);
	for (size_t i = 0; i < ev->data_len; i++) {
		if (ev->data[i] == '\n')
			put(s, "\\n", 2);
		else
			put(s, ev->data + i, 1);
	}
	put(s, "\n", 1);
	s->count++;
	return s->stop_after > 0 && s->count >= s->stop_after ? 7 : 0;
}

static const char *logged(struct seen *s)
{
	return s->log ? s->log : "";
}

/* Feeds a copy in a buffer of exactly len bytes, so ASan sees an overread. */
static int feed(struct sse_parser *p, const char *bytes, size_t len, struct seen *s)
{
	char *copy = malloc(len ? len : 1);
	int rc;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, bytes, len);
	rc = sse_feed(p, copy, len, collect, s);
	free(copy);
	return rc;
}

static int feed_str(struct sse_parser *p, const char *str, struct seen *s)
{
	return feed(p, str, strlen(str), s);
}

/* Parses `in` in one piece with a generous limit; returns the log (owned). */
static char *parse_whole(const char *in, size_t len)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1 << 20);
	ck_assert_int_eq(feed(&p, in, len, &s), 0);
	sse_release(&p);
	return s.log ? s.log : strdup("");
}

/* CRLF endings, a ping comment, an unnamed event, multi-byte UTF-8 (é, 🙂)
 * and a two-line data field. */
static const char real_stream[] =
	"event: message_start\r\n"
	"data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\r\n"
	"\r\n"
	": keep-alive\r\n"
	"event: ping\r\n"
	"data: {\"type\": \"ping\"}\r\n"
	"\r\n"
	"event: content_block_delta\r\n"
	"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"caf\xC3\xA9 \xF0\x9F\x99\x82\"}}\r\n"
	"\r\n"
	"data: line one\r\n"
	"data: line two\r\n"
	"\r\n"
	"event: message_stop\r\n"
	"data: {\"type\":\"message_stop\"}\r\n"
	"\r\n";

START_TEST(test_lf_crlf_and_cr_each_end_a_line)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n\r\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|a\nmessage|b\nmessage|c\nmessage|d\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_crlf_split_across_feeds_is_one_line_end)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	/* If the LF after a feed-ending CR counted as a blank line, "a" would
	 * be dispatched alone. */
	ck_assert_int_eq(feed_str(&p, "data: a\r", &s), 0);
	ck_assert_int_eq(feed_str(&p, "\ndata: b\r", &s), 0);
	ck_assert_int_eq(feed_str(&p, "\n\r", &s), 0);
	ck_assert_int_eq(s.count, 1);
	ck_assert_int_eq(feed_str(&p, "\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|a\\nb\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_data_lines_are_joined_with_lf)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "data: a\ndata:\ndata: b\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|a\\n\\nb\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_only_one_space_after_the_colon_is_removed)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "data:x\n\ndata:  y\n\ndata:\tz\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|x\nmessage| y\nmessage|\tz\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_comment_lines_are_ignored)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, ": ping\n\n:\n\n: OPENROUTER PROCESSING\ndata: y\n: between\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|y\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_event_without_data_is_dropped_and_its_name_forgotten)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "event: lonely\n\ndata: z\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|z\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_event_name_applies_to_one_event_only)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "event: message_start\ndata: {}\n\ndata: 2\n\nevent:error\ndata: e\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message_start|{}\nmessage|2\nerror|e\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_empty_data_field_dispatches_empty_data)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "data\n\ndata:\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|\nmessage|\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_id_retry_and_unknown_fields_are_ignored)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "id: 7\nretry: 100\nfoo: bar\nnocolon\ndata: q\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|q\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_colons_after_the_first_belong_to_the_value)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "data: {\"a\": \"b:c\"}\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|{\"a\": \"b:c\"}\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_leading_bom_is_skipped_even_when_split)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "\xEF", &s), 0);
	ck_assert_int_eq(feed_str(&p, "\xBB", &s), 0);
	ck_assert_int_eq(feed_str(&p, "\xBF" "data: a\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|a\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_bom_later_in_the_stream_is_not_skipped)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	/* The second "data" field is named "\xEF\xBB\xBF" "data": unknown. */
	ck_assert_int_eq(feed_str(&p, "data: a\n\n\xEF\xBB\xBF" "data: b\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|a\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_partial_bom_then_line_end_is_kept_as_text)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "\xEF\xBB\ndata: a\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|a\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_unterminated_event_at_end_is_not_dispatched)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "data: a\n\ndata: partial\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|a\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_real_stream_split_at_every_byte_position_gives_the_same_events)
{
	size_t n = sizeof(real_stream) - 1;
	char *whole = parse_whole(real_stream, n);

	ck_assert_str_eq(whole,
			 "message_start|{\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n"
			 "ping|{\"type\": \"ping\"}\n"
			 "content_block_delta|{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"caf\xC3\xA9 \xF0\x9F\x99\x82\"}}\n"
			 "message|line one\\nline two\n"
			 "message_stop|{\"type\":\"message_stop\"}\n");
	for (size_t i = 0; i <= n; i++) {
		struct sse_parser p;
		struct seen s = { 0 };

		sse_init(&p, 1 << 20);
		ck_assert_int_eq(feed(&p, real_stream, i, &s), 0);
		ck_assert_int_eq(feed(&p, real_stream + i, n - i, &s), 0);
		ck_assert_msg(strcmp(logged(&s), whole) == 0, "split at %zu differs", i);
		sse_release(&p);
		free(s.log);
	}
	free(whole);
}
END_TEST

START_TEST(test_real_stream_split_at_every_pair_of_positions_gives_the_same_events)
{
	/* Three pieces: the LF-only variant of a shorter stream. */
	static const char in[] = "\xEF\xBB\xBF" "event: a\ndata: x\xC3\xA9\r\n\r\n: c\rdata: 1\rdata: 2\r\r";
	size_t n = sizeof(in) - 1;
	char *whole = parse_whole(in, n);

	ck_assert_str_eq(whole, "a|x\xC3\xA9\nmessage|1\\n2\n");
	for (size_t i = 0; i <= n; i++) {
		for (size_t j = i; j <= n; j++) {
			struct sse_parser p;
			struct seen s = { 0 };

			sse_init(&p, 1024);
			ck_assert_int_eq(feed(&p, in, i, &s), 0);
			ck_assert_int_eq(feed(&p, in + i, j - i, &s), 0);
			ck_assert_int_eq(feed(&p, in + j, n - j, &s), 0);
			ck_assert_msg(strcmp(logged(&s), whole) == 0, "split at %zu,%zu differs", i, j);
			sse_release(&p);
			free(s.log);
		}
	}
	free(whole);
}
END_TEST

START_TEST(test_one_byte_at_a_time_gives_the_same_events)
{
	size_t n = sizeof(real_stream) - 1;
	char *whole = parse_whole(real_stream, n);
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1 << 20);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(feed(&p, real_stream + i, 1, &s), 0);
	ck_assert_str_eq(logged(&s), whole);
	sse_release(&p);
	free(s.log);
	free(whole);
}
END_TEST

START_TEST(test_empty_feed_changes_nothing)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "data: a\r", &s), 0);
	ck_assert_int_eq(sse_feed(&p, NULL, 0, collect, &s), 0);
	ck_assert_int_eq(feed_str(&p, "\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|a\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_event_over_max_event_fails_and_stays_failed)
{
	struct sse_parser p;
	struct seen s = { 0 };
	char line[40];

	sse_init(&p, 64);
	memset(line, 'x', sizeof(line));
	ck_assert_int_eq(feed_str(&p, "data: ", &s), 0);
	ck_assert_int_eq(feed(&p, line, sizeof(line), &s), 0);
	ck_assert_int_eq(feed_str(&p, "\ndata: ", &s), 0);
	ck_assert_int_eq(feed(&p, line, sizeof(line), &s), -1);
	ck_assert_str_eq(p.error, "SSE event larger than 64 bytes");
	ck_assert_int_eq(feed_str(&p, "\n\ndata: ok\n\n", &s), -1);
	ck_assert_int_eq(s.count, 0);
	/* Memory stayed within the bound. */
	ck_assert_uint_le(p.line_cap, 64 + 1 + 3);
	ck_assert_uint_le(p.data_cap, 64 + 1);
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_oversize_line_fails_whether_whole_or_split)
{
	char big[200];

	memset(big, 'y', sizeof(big));
	memcpy(big, ": ", 2);
	big[sizeof(big) - 1] = '\n';
	for (int split = 0; split < 2; split++) {
		struct sse_parser p;
		struct seen s = { 0 };
		int rc = 0;

		sse_init(&p, 100);
		/* Not the first line, so the whole-line fast path is taken too. */
		ck_assert_int_eq(feed_str(&p, "data: a\n\n", &s), 0);
		if (split) {
			for (size_t i = 0; i < sizeof(big) && rc == 0; i++)
				rc = feed(&p, big + i, 1, &s);
		} else {
			rc = feed(&p, big, sizeof(big), &s);
		}
		ck_assert_int_eq(rc, -1);
		ck_assert_str_eq(p.error, "SSE event larger than 100 bytes");
		ck_assert_uint_le(p.line_cap, 100 + 1 + 3);
		ck_assert_str_eq(logged(&s), "message|a\n");
		sse_release(&p);
		free(s.log);
	}
}
END_TEST

START_TEST(test_data_lines_over_max_event_in_one_feed_fail)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 32);
	ck_assert_int_eq(feed_str(&p, "data: 0123456789\ndata: 0123456789\ndata: 0123456789\n\n", &s), -1);
	ck_assert_str_eq(p.error, "SSE event larger than 32 bytes");
	ck_assert_int_eq(s.count, 0);
	ck_assert_uint_le(p.data_cap, 32 + 1);
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_event_exactly_at_max_event_is_delivered)
{
	struct sse_parser p;
	struct seen s = { 0 };

	/* "data: 0123456789" is 16 bytes; the stored data is 10 + LF. */
	sse_init(&p, 16);
	ck_assert_int_eq(feed_str(&p, "data: 0123456789\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|0123456789\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_limit_applies_per_event_not_per_stream)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 32);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(feed_str(&p, "data: 0123456789\n\n", &s), 0);
	ck_assert_int_eq(s.count, 100);
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_callback_result_stops_the_feed_and_is_returned)
{
	struct sse_parser p;
	struct seen s = { .stop_after = 1 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "data: a\n\ndata: b\n\n", &s), 7);
	ck_assert_str_eq(logged(&s), "message|a\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_long_event_name_is_cut_not_overflowed)
{
	struct sse_parser p;
	struct seen s = { 0 };
	char in[256];

	snprintf(in, sizeof(in), "event: %0100d\ndata: x\n\n", 0);
	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, in, &s), 0);
	ck_assert_int_eq(s.count, 1);
	ck_assert_uint_eq(strlen(logged(&s)), 63 + strlen("|x\n"));
	sse_release(&p);
	free(s.log);
}
END_TEST

START_TEST(test_release_then_init_reuses_the_parser)
{
	struct sse_parser p;
	struct seen s = { 0 };

	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "data: half", &s), 0);
	sse_release(&p);
	sse_init(&p, 1024);
	ck_assert_int_eq(feed_str(&p, "data: new\n\n", &s), 0);
	ck_assert_str_eq(logged(&s), "message|new\n");
	sse_release(&p);
	free(s.log);
}
END_TEST

Suite *sse_suite(void)
{
	Suite *s = suite_create("sse");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_lf_crlf_and_cr_each_end_a_line);
	tcase_add_test(tc, test_crlf_split_across_feeds_is_one_line_end);
	tcase_add_test(tc, test_data_lines_are_joined_with_lf);
	tcase_add_test(tc, test_only_one_space_after_the_colon_is_removed);
	tcase_add_test(tc, test_comment_lines_are_ignored);
	tcase_add_test(tc, test_event_without_data_is_dropped_and_its_name_forgotten);
	tcase_add_test(tc, test_event_name_applies_to_one_event_only);
	tcase_add_test(tc, test_empty_data_field_dispatches_empty_data);
	tcase_add_test(tc, test_id_retry_and_unknown_fields_are_ignored);
	tcase_add_test(tc, test_colons_after_the_first_belong_to_the_value);
	tcase_add_test(tc, test_leading_bom_is_skipped_even_when_split);
	tcase_add_test(tc, test_bom_later_in_the_stream_is_not_skipped);
	tcase_add_test(tc, test_partial_bom_then_line_end_is_kept_as_text);
	tcase_add_test(tc, test_unterminated_event_at_end_is_not_dispatched);
	tcase_add_test(tc, test_real_stream_split_at_every_byte_position_gives_the_same_events);
	tcase_add_test(tc, test_real_stream_split_at_every_pair_of_positions_gives_the_same_events);
	tcase_add_test(tc, test_one_byte_at_a_time_gives_the_same_events);
	tcase_add_test(tc, test_empty_feed_changes_nothing);
	tcase_add_test(tc, test_event_over_max_event_fails_and_stays_failed);
	tcase_add_test(tc, test_oversize_line_fails_whether_whole_or_split);
	tcase_add_test(tc, test_data_lines_over_max_event_in_one_feed_fail);
	tcase_add_test(tc, test_event_exactly_at_max_event_is_delivered);
	tcase_add_test(tc, test_limit_applies_per_event_not_per_stream);
	tcase_add_test(tc, test_callback_result_stops_the_feed_and_is_returned);
	tcase_add_test(tc, test_long_event_name_is_cut_not_overflowed);
	tcase_add_test(tc, test_release_then_init_reuses_the_parser);
	suite_add_tcase(s, tc);
	return s;
}

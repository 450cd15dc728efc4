/* The in-place chunk readers (provider/http/jsonscan.c, each format's quick
 * reader: api_openai_quick, api_anthropic_quick) against the jansson decoders they stand in for: every
 * payload goes through both paths of the stream decoder, which must end in
 * the same sink calls and state; and each payload is expected to be read in
 * place, or given to jansson. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider/http/api.h"
#include "provider/http/api_anthropic.h"
#include "provider/http/api_openai.h"
#include "provider/http/jsonscan.h"
#include "support/recsink.h"

Suite *jsonscan_suite(void);

/* Runs the payloads, one SSE event each, through one path (the decoder,
 * which tries the format's quick reader first, or the format's jansson
 * reader alone); the log (l: initialised here) ends with the decoder's
 * state. */
static void run(const struct api_format *format, bool tree, const char *event,
		const char *const *data, size_t n, struct recsink *l)
{
	struct provider_sink sink = recsink_sink(l);
	struct api_stream st;
	char state[API_ERROR_MAX + 128];
	int len;

	recsink_init(l);
	api_stream_init(&st, format, &sink);
	for (size_t i = 0; i < n && !api_stream_done(&st); i++) {
		struct sse_event ev = { event, strlen(event), data[i], strlen(data[i]) };

		if (tree)
			format->event_tree(&st, &ev);
		else
			api_stream_event(&st, &ev);
	}
	ck_assert_msg(l->finishes == 0, "the decoder called finish()");
	len = snprintf(state, sizeof(state), "complete=%d done=%d failed=%d stop=%d in=%lld out=%lld error=%s",
		       st.complete, st.done, st.failed, (int)st.stop, (long long)st.input_tokens,
		       (long long)st.output_tokens, st.failed || st.stop == STOP_ERROR ? st.error : "");
	recsink_note(l, state, (size_t)len);
}

/* Both paths agree on the sequence (NUL bytes included); returns the log
 * in quick (the caller releases it). */
static void same(const struct api_format *format, const char *event, const char *const *data,
		 size_t n, struct recsink *quick)
{
	struct recsink tree;

	run(format, false, event, data, n, quick);
	run(format, true, event, data, n, &tree);
	ck_assert_msg(quick->len == tree.len && memcmp(quick->log, tree.log, quick->len) == 0,
		      "in place and jansson differ:\n%s\n%s", quick->log, tree.log);
	recsink_release(&tree);
}

/* One payload: both paths agree, and it is read in place or not, as said. */
static void one(const struct api_format *format, const char *data, bool in_place)
{
	struct api_quick q;
	struct recsink l;
	struct sse_event ev = { "message", 7, data, strlen(data) };
	int got = format->quick(&ev, &q);

	ck_assert_msg(got == in_place, "%s: read in place %d, expected %d", data, got, in_place);
	same(format, "message", &data, 1, &l);
	recsink_release(&l);
}

#define CHUNK(choice) \
	"{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1795998688," \
	"\"model\":\"m\",\"system_fingerprint\":\"fp\",\"choices\":[" choice "]}"

START_TEST(test_openai_everyday_chunks_are_read_in_place_to_the_same_result)
{
	static const char *const seq[] = {
		CHUNK("{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},"
		      "\"logprobs\":null,\"finish_reason\":null}"),
		CHUNK("{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"logprobs\":null,\"finish_reason\":null}"),
		CHUNK("{\"index\":0,\"delta\":{\"content\":\"lo \\\"w\\u00e9\\ud83d\\ude00\\n\\t\\/\\\\\"},"
		      "\"finish_reason\":null}"),
		CHUNK("{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}"),
		"{\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}",
		"[DONE]",
	};
	struct recsink l;

	for (size_t i = 0; i < 4; i++)
		one(&api_openai_format, seq[i], true);
	one(&api_openai_format, seq[4], false);
	same(&api_openai_format, "message", seq, 6, &l);
	ck_assert_ptr_nonnull(strstr(l.log, "delta(Hel);delta(lo \"w\xC3\xA9\xF0\x9F\x98\x80\n\t/\\);"));
	ck_assert_ptr_nonnull(strstr(l.log, "complete=1 done=1 failed=0 stop=0 in=3 out=5"));
	recsink_release(&l);
}
END_TEST

START_TEST(test_openai_finish_reasons_map_the_same_both_ways)
{
	static const char *const reasons[] = { "stop", "length", "tool_calls", "function_call",
					       "content_filter", "something_new", "" };

	for (size_t i = 0; i < sizeof(reasons) / sizeof(*reasons); i++) {
		char data[512];

		snprintf(data, sizeof(data),
			 CHUNK("{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"%s\"}"),
			 reasons[i]);
		one(&api_openai_format, data, true);
	}
}
END_TEST

/* Each of these is valid JSON the quick reader leaves to jansson, or JSON
 * jansson refuses: the two paths must still agree (a failure included). */
START_TEST(test_openai_unusual_or_broken_chunks_go_to_jansson)
{
	static const char *const cases[] = {
		CHUNK("{\"index\":0,\"delta\":{\"content\":\"a\"}},{\"index\":1,\"delta\":{\"content\":\"b\"}}"),
		CHUNK("{\"index\":1,\"delta\":{\"content\":\"b\"}}"),
		CHUNK("{\"index\":\"0\",\"delta\":{\"content\":\"b\"}}"),
		CHUNK("{\"index\":0,\"delta\":{\"content\":\"a\",\"content\":\"b\"}}"),
		CHUNK("{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"st\\u0000op\"}"),
		CHUNK("{\"index\":0,\"delta\":\"text\"}"),
		"{\"error\":{\"message\":\"Overloaded\",\"type\":\"server_error\"}}",
		"{\"error\":\"boom\",\"choices\":[]}",
		"{\"usage\":{\"prompt_tokens\":1},\"choices\":[]}",
		"{\"choices\":[],\"choices\":[]}",
		"{\"cho\\u0069ces\":[{\"delta\":{\"content\":\"k\"}}]}",
		"{\"n\":1e5,\"choices\":[{\"delta\":{\"content\":\"e\"}}]}",
		"{\"n\":12345678901234567,\"choices\":[{\"delta\":{\"content\":\"e\"}}]}",
		/* Found by fuzzing: the digits once overflowed before the length check. */
		"{\"n\":-99999999999999999999999999,\"choices\":[{\"delta\":{\"content\":\"e\"}}]}",
		"{\"n\":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]],\"choices\":[]}",
		/* Refused by jansson too. */
		"{\"choices\":[{\"delta\":{\"content\":\"lone \\ud83d\"}}]}",
		"{\"choices\":[{\"delta\":{\"content\":\"bad \xC3\x28\"}}]}",
		"{\"choices\":[{\"delta\":{\"content\":\"raw \x01 control\"}}]}",
		"{\"choices\":[{\"delta\":{\"content\":\"x\"}}]} trailing",
		"{\"choices\":[{\"delta\":{\"content\":\"x\"}},]}",
		"{\"choices\":[{\"delta\":{\"content\":\"x\"},}]}",
		"{\"n\":01,\"choices\":[]}",
		"{\"n\":1.,\"choices\":[]}",
		"{\"n\":-,\"choices\":[]}",
		"{\"n\":nul,\"choices\":[]}",
		"{\"n\":\"\\x\",\"choices\":[]}",
		"{\"choices\":[{\"delta\":{\"content\":\"x\"}}]",
		"[1,2]",
		"",
		"   ",
		/* A tool call's piece: jansson's, which marks it begun. */
		"{\"choices\":[{\"index\":-0,\"delta\":{\"content\":null,\"tool_calls\":[{\"id\":\"t\"}]}}]}",
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		one(&api_openai_format, cases[i], false);
}
END_TEST

START_TEST(test_openai_whitespace_nesting_and_literals_are_read_in_place)
{
	static const char *const cases[] = {
		" { \"choices\" : [ { \"delta\" : { \"content\" : \"a b\" } , \"finish_reason\" : null } ] } \r\n",
		"{\"x\":{\"y\":[true,false,null,-0,1.25,\"s\",{}],\"z\":[]},\"choices\":[{\"delta\":null}]}",
		"{\"choices\":[{\"index\":-0,\"delta\":{\"content\":null,\"tool_calls\":null}}]}",
		"{\"usage\":null,\"error\":null,\"choices\":[{\"delta\":{\"content\":\"\\u0000nul\"}}]}",
		"{\"choices\":[{\"delta\":{\"content\":5,\"content\":\"late\"}}]}",
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		one(&api_openai_format, cases[i], true);
}
END_TEST

/* A chunk whose content is `plain` bytes of 'p' and then `newlines` "\n". */
static char *long_chunk(size_t plain, size_t newlines)
{
	char *data = malloc(plain + 2 * newlines + 64);
	size_t at;

	ck_assert_ptr_nonnull(data);
	at = (size_t)sprintf(data, "{\"choices\":[{\"delta\":{\"content\":\"");
	memset(data + at, 'p', plain);
	at += plain;
	for (size_t i = 0; i < newlines; i++) {
		data[at++] = '\\';
		data[at++] = 'n';
	}
	strcpy(data + at, "\"}}]}");
	return data;
}

START_TEST(test_openai_long_text_is_read_in_place_unless_its_escapes_overflow_scratch)
{
	static const struct {
		size_t plain, newlines;
		bool in_place;
	} cases[] = {
		{ 3 * JSONSCAN_SCRATCH, 0, true },         /* no escape: read where it is */
		{ JSONSCAN_SCRATCH - 1, 1, true },         /* decoded, exactly fills scratch */
		{ JSONSCAN_SCRATCH, 1, false },            /* one byte more */
		{ 0, JSONSCAN_SCRATCH, true },
		{ 0, JSONSCAN_SCRATCH + 1, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *data = long_chunk(cases[i].plain, cases[i].newlines);

		one(&api_openai_format, data, cases[i].in_place);
		free(data);
	}
}
END_TEST

START_TEST(test_every_byte_in_a_string_reads_as_jansson_reads_it)
{
	for (int c = 1; c < 256; c++) {
		char data[128];

		snprintf(data, sizeof(data), "{\"choices\":[{\"delta\":{\"content\":\"a%cb\"}}]}", c);
		/* Printable ASCII is read in place ('\\' makes "\\b", an escape);
		 * the rest (controls, a '"' that ends the string early, a lone
		 * byte >= 0x80) is refused by both. */
		one(&api_openai_format, data, c >= 0x20 && c < 0x80 && c != '"');
	}
}
END_TEST

START_TEST(test_anthropic_text_deltas_are_read_in_place_other_events_by_jansson)
{
	static const char *const in_place[] = {
		"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi \\\"there\\\"\"}}",
		"{\"delta\":{\"text\":\"order\",\"type\":\"text_delta\"},\"index\":0,\"type\":\"content_block_delta\"}",
	};
	static const char *const by_jansson[] = {
		/* Deltas of other types: thinking is streamed, the rest ignored. */
		"{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}",
		"{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}",
		"{\"type\":\"content_block_delta\",\"index\":0}",
		"{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}",
		"{\"type\":\"ping\"}",
		"{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}",
		"{\"type\":\"content_block_delta\",\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}",
		"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\",\"text\":\"y\"}}",
		"{\"type\":\"content_block_delta\",\"delta\":\"x\"}",
		"{\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"no type\"}}",
		"{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
		"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"\\udc00\"}}",
		/* Found in review: jansson's path reads the type up to the NUL. */
		"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\\u0000\",\"text\":\"x\"}}",
		"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\\u0000junk\",\"text\":\"x\"}}",
		"{\"type\":\"message_stop\"}",
	};

	for (size_t i = 0; i < sizeof(in_place) / sizeof(*in_place); i++)
		one(&api_anthropic_format, in_place[i], true);
	for (size_t i = 0; i < sizeof(by_jansson) / sizeof(*by_jansson); i++)
		one(&api_anthropic_format, by_jansson[i], false);
}
END_TEST

/* A thinking stream: the quick reader takes only the text deltas, never a
 * thinking or signature delta (not even one that carries a "text" member),
 * and both paths make the same thinking block. */
START_TEST(test_anthropic_thinking_deltas_are_never_read_as_text_in_place)
{
	static const char *const seq[] = {
		"{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}",
		"{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}",
		"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me\"}}",
		"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\" see\",\"text\":\"trap\"}}",
		"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"text\":\"trap\",\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}",
		"{\"type\":\"content_block_stop\",\"index\":0}",
		"{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwK\"}}",
		"{\"type\":\"content_block_stop\",\"index\":1}",
		"{\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}",
		"{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\",\"thinking\":\"x\"}}",
		"{\"type\":\"content_block_stop\",\"index\":2}",
		"{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}",
		"{\"type\":\"message_stop\"}",
	};
	struct recsink l;

	for (size_t i = 2; i < 5; i++)
		one(&api_anthropic_format, seq[i], false);
	one(&api_anthropic_format, seq[9], true);
	same(&api_anthropic_format, "message", seq, sizeof(seq) / sizeof(*seq), &l);
	ck_assert_ptr_nonnull(strstr(l.log, "start;thinking_start;thinking_delta:Let me;"
				     "thinking_delta: see;thinking_end:EqQB;thinking_start;"
				     "thinking_end:EmwK|redacted;text_start;delta(Hi);complete="));
	ck_assert_ptr_null(strstr(l.log, "trap"));
	ck_assert_ptr_nonnull(strstr(l.log, "complete=1 done=1 failed=0 stop=0 in=9 out=4"));
	recsink_release(&l);
}
END_TEST

/* OpenAI-compatible reasoning (reasoning_content, reasoning): never taken
 * by the quick reader, which still reads a content chunk whose reasoning
 * is null. */
START_TEST(test_openai_reasoning_chunks_go_to_jansson_and_agree)
{
	static const char *const seq[] = {
		CHUNK("{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"Think\"},\"finish_reason\":null}"),
		CHUNK("{\"index\":0,\"delta\":{\"content\":null,\"reasoning_content\":\"ing\"},\"finish_reason\":null}"),
		CHUNK("{\"index\":0,\"delta\":{\"content\":\"Hi\",\"reasoning_content\":null},\"finish_reason\":null}"),
		CHUNK("{\"index\":0,\"delta\":{\"reasoning\":\"more\"},\"finish_reason\":null}"),
		CHUNK("{\"index\":0,\"delta\":{\"content\":\"!\"},\"finish_reason\":\"stop\"}"),
		"[DONE]",
	};
	struct recsink l;

	one(&api_openai_format, seq[0], false);
	one(&api_openai_format, seq[1], false);
	one(&api_openai_format, seq[2], true);
	one(&api_openai_format, seq[3], false);
	same(&api_openai_format, "message", seq, sizeof(seq) / sizeof(*seq), &l);
	ck_assert_ptr_nonnull(strstr(l.log, "start;thinking_start;thinking_delta:Think;"
				     "thinking_delta:ing;thinking_end:reasoning_content;text_start;"
				     "delta(Hi);text_end;thinking_start;thinking_delta:more;"
				     "thinking_end:reasoning;text_start;delta(!);complete="));
	recsink_release(&l);
}
END_TEST

START_TEST(test_anthropic_named_error_event_is_never_read_in_place)
{
	static const char *const data[] = {
		"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}",
	};
	struct recsink l;

	same(&api_anthropic_format, "error", data, 1, &l);
	ck_assert_ptr_nonnull(strstr(l.log, "failed=1"));
	recsink_release(&l);
}
END_TEST

START_TEST(test_scanner_skips_and_refuses_like_a_json_parser)
{
	static const struct {
		const char *text;
		bool ok;
	} cases[] = {
		{ "{}", true }, { "[]", true }, { "[1,2,[3,{\"a\":\"b\"}]]", true },
		{ "{\"a\":1,}", false }, { "[1,]", false }, { "[,1]", false }, { "{,}", false },
		{ "{\"a\" 1}", false }, { "{\"a\":}", false }, { "{1:2}", false },
		{ "[tru]", false }, { "[true false]", false }, { "\"unterminated", false },
		{ "[\"\\u12\"]", false }, { "[\"\\uD800\\u0041\"]", false }, { "[-01]", false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct jsonscan js;
		bool ok;

		jsonscan_init(&js, cases[i].text, strlen(cases[i].text));
		ok = jsonscan_skip(&js) == 0 && jsonscan_end(&js);
		ck_assert_msg(ok == cases[i].ok, "%s: %d", cases[i].text, ok);
	}
}
END_TEST

Suite *jsonscan_suite(void)
{
	Suite *s = suite_create("jsonscan");
	TCase *openai = tcase_create("openai"), *anthropic = tcase_create("anthropic");
	TCase *scan = tcase_create("scan");

	tcase_add_test(openai, test_openai_everyday_chunks_are_read_in_place_to_the_same_result);
	tcase_add_test(openai, test_openai_finish_reasons_map_the_same_both_ways);
	tcase_add_test(openai, test_openai_unusual_or_broken_chunks_go_to_jansson);
	tcase_add_test(openai, test_openai_whitespace_nesting_and_literals_are_read_in_place);
	tcase_add_test(openai, test_openai_long_text_is_read_in_place_unless_its_escapes_overflow_scratch);
	tcase_add_test(openai, test_every_byte_in_a_string_reads_as_jansson_reads_it);
	tcase_add_test(anthropic, test_anthropic_text_deltas_are_read_in_place_other_events_by_jansson);
	tcase_add_test(anthropic, test_anthropic_named_error_event_is_never_read_in_place);
	tcase_add_test(anthropic, test_anthropic_thinking_deltas_are_never_read_as_text_in_place);
	tcase_add_test(openai, test_openai_reasoning_chunks_go_to_jansson_and_agree);
	tcase_add_test(scan, test_scanner_skips_and_refuses_like_a_json_parser);
	suite_add_tcase(s, openai);
	suite_add_tcase(s, anthropic);
	suite_add_tcase(s, scan);
	return s;
}

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/number.h"
#include "provider/http/api.h"
#include "provider/http/api_anthropic.h"
#include "provider/http/api_formats.h"
#include "provider/http/api_openai.h"
#include "support/decoded.h"
#include "support/recsink.h"

Suite *api_suite(void);

/* ---- a decoding harness -------------------------------------------------- */

/* The shared harness (support/decoded.h), with the sink's order checked. */
static struct decoded decode_split(const struct api_format *format, const char *body, size_t len,
				   size_t split, size_t chunk)
{
	struct decoded o = decoded_run(format, body, len, split, chunk, true);

	ck_assert_msg(o.finishes == 0, "the decoder must leave finish() to the provider");
	ck_assert_msg(o.misorder == NULL, "%s", o.misorder);
	return o;
}

static struct decoded decode_n(const struct api_format *format, const char *body, size_t len, size_t chunk)
{
	return decode_split(format, body, len, 0, chunk);
}

static struct decoded decode(const struct api_format *format, const char *body)
{
	return decode_n(format, body, strlen(body), 0);
}

/* ---- wire examples (shapes as the services send them) --------------------- */

#define OAI_HEAD "{\"id\":\"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG\",\"object\":\"chat.completion.chunk\"," \
		 "\"created\":1741570283,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_f9f4fb6dbf\","
#define OAI_CHUNK(delta, finish) "data: " OAI_HEAD "\"choices\":[{\"index\":0,\"delta\":" delta \
		 ",\"logprobs\":null,\"finish_reason\":" finish "}],\"usage\":null}\n\n"
#define OAI_USAGE "data: " OAI_HEAD "\"choices\":[],\"usage\":{\"prompt_tokens\":19,\"completion_tokens\":10," \
		  "\"total_tokens\":29,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n"
#define OAI_DONE "data: [DONE]\n\n"

#define OAI_TEXT                                                                            \
	OAI_CHUNK("{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}", "null")     \
	OAI_CHUNK("{\"content\":\"Hello\"}", "null")                                         \
	OAI_CHUNK("{\"content\":\" w\xC3\xB6rld \xF0\x9F\x99\x82\"}", "null")
#define OAI_FINISH OAI_CHUNK("{}", "\"stop\"")

static const char oai_full[] = OAI_TEXT OAI_FINISH OAI_USAGE OAI_DONE;

#define ANT_START "event: message_start\n" \
	"data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"type\":\"message\"," \
	"\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5-20250929\",\"stop_reason\":null," \
	"\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n"
#define ANT_BLOCK "event: content_block_start\n" \
	"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
#define ANT_PING "event: ping\ndata: {\"type\": \"ping\"}\n\n"
#define ANT_DELTA(text) "event: content_block_delta\n" \
	"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" text "\"}}\n\n"
#define ANT_BLOCK_STOP "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
#define ANT_MSG_DELTA(reason) "event: message_delta\n" \
	"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"" reason "\",\"stop_sequence\":null}," \
	"\"usage\":{\"output_tokens\":15}}\n\n"
#define ANT_STOP "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
#define ANT_OVERLOADED "event: error\n" \
	"data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"

#define ANT_TEXT ANT_START ANT_BLOCK ANT_PING ANT_DELTA("Hello") ANT_DELTA(" w\xC3\xB6rld \xF0\x9F\x99\x82")
static const char ant_full[] = ANT_TEXT ANT_BLOCK_STOP ANT_MSG_DELTA("end_turn") ANT_STOP;

static const char expected_log[] =
	"start;text_start;delta(Hello);delta( w\xC3\xB6rld \xF0\x9F\x99\x82);text_end;";

/* ---- OpenAI streams --------------------------------------------------------- */

START_TEST(test_openai_complete_stream_gives_text_usage_and_stop)
{
	struct decoded o = decode(&api_openai_format, oai_full);

	ck_assert_str_eq(o.log, expected_log);
	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert(!o.has_error);
	ck_assert_int_eq(o.input_tokens, 19);
	ck_assert_int_eq(o.output_tokens, 10);
	ck_assert_int_eq(o.hint_ms, -1);
	ck_assert_int_eq(o.feed_rc, 0);
	free(o.log);
}
END_TEST

START_TEST(test_openai_stream_split_at_every_byte_gives_the_same_result)
{
	size_t n = sizeof(oai_full) - 1;

	for (size_t i = 0; i <= n + 1; i++) {
		/* i == n + 1: one byte at a time. */
		struct decoded o = i <= n ? decode_split(&api_openai_format, oai_full, n, i, 0) : decode_n(&api_openai_format, oai_full, n, 1);

		ck_assert_msg(strcmp(o.log, expected_log) == 0, "split %zu: %s", i, o.log);
		ck_assert_int_eq(o.stop, STOP_STOP);
		ck_assert(!o.has_error);
		ck_assert_int_eq(o.output_tokens, 10);
		free(o.log);
	}
}
END_TEST

START_TEST(test_openai_stream_cut_anywhere_before_finish_fails_as_truncated)
{
	size_t finish_end = strlen(OAI_TEXT OAI_FINISH);
	size_t n = sizeof(oai_full) - 1;

	for (size_t cut = 0; cut <= n; cut++) {
		struct decoded o = decode_n(&api_openai_format, oai_full, cut, 0);

		if (cut < finish_end) {
			ck_assert_msg(o.stop == STOP_ERROR, "cut at %zu", cut);
			ck_assert_str_eq(o.error, "connection error: stream ended before completion");
		} else {
			ck_assert_msg(o.stop == STOP_STOP && !o.has_error, "cut at %zu", cut);
		}
		free(o.log);
	}
}
END_TEST

START_TEST(test_openai_truncated_stream_keeps_text_and_closes_it)
{
	struct decoded o = decode(&api_openai_format, OAI_TEXT);

	ck_assert_str_eq(o.log, expected_log);
	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, API_TRUNCATED);
	ck_assert_str_eq(o.error, "connection error: stream ended before completion");
	free(o.log);
}
END_TEST

START_TEST(test_openai_empty_body_is_truncated_without_start)
{
	struct decoded o = decode(&api_openai_format, "");

	ck_assert_str_eq(o.log, "");
	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, API_TRUNCATED);
	free(o.log);
}
END_TEST

START_TEST(test_openai_done_alone_completes_the_stream)
{
	struct decoded o = decode(&api_openai_format, OAI_TEXT OAI_DONE);

	ck_assert_str_eq(o.log, expected_log);
	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert(!o.has_error);
	free(o.log);
}
END_TEST

START_TEST(test_openai_finish_without_done_completes_the_stream)
{
	struct decoded o = decode(&api_openai_format, OAI_TEXT OAI_FINISH OAI_USAGE);

	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert(!o.has_error);
	ck_assert_int_eq(o.input_tokens, 19);
	free(o.log);
}
END_TEST

START_TEST(test_openai_text_and_finish_in_one_chunk_keeps_the_text)
{
	struct decoded o = decode(&api_openai_format, OAI_CHUNK("{\"content\":\"Hi\"}", "\"length\"") OAI_DONE);

	ck_assert_str_eq(o.log, "start;text_start;delta(Hi);text_end;");
	ck_assert_int_eq(o.stop, STOP_LENGTH);
	free(o.log);
}
END_TEST

START_TEST(test_openai_finish_reasons_map_to_stop_reasons)
{
	static const struct {
		const char *chunk;
		enum stop_reason stop;
		const char *error;
	} cases[] = {
		{ OAI_CHUNK("{}", "\"stop\""), STOP_STOP, NULL },
		{ OAI_CHUNK("{}", "\"length\""), STOP_LENGTH, NULL },
		{ OAI_CHUNK("{}", "\"tool_calls\""), STOP_TOOL_USE, NULL },
		{ OAI_CHUNK("{}", "\"function_call\""), STOP_TOOL_USE, NULL },
		{ OAI_CHUNK("{}", "\"content_filter\""), STOP_ERROR,
		  "content_filter: the provider's content filter stopped the answer" },
		{ OAI_CHUNK("{}", "\"weird\""), STOP_ERROR, "Unhandled stop reason: weird" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct decoded o = decode(&api_openai_format, cases[i].chunk);

		ck_assert_msg(o.stop == cases[i].stop, "case %zu", i);
		if (cases[i].error)
			ck_assert_str_eq(o.error, cases[i].error);
		else
			ck_assert(!o.has_error);
		free(o.log);
	}
}
END_TEST

START_TEST(test_openai_only_choice_index_0_is_read)
{
	struct decoded o = decode(&api_openai_format,
				  "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"other\"},\"finish_reason\":\"length\"}]}\n\n"
				  "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"mine\"},\"finish_reason\":null}]}\n\n"
				  "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");

	ck_assert_str_eq(o.log, "start;text_start;delta(mine);text_end;");
	ck_assert_int_eq(o.stop, STOP_STOP);
	free(o.log);
}
END_TEST

START_TEST(test_openai_tool_call_deltas_carry_no_text)
{
	struct decoded o = decode(&api_openai_format,
				  OAI_CHUNK("{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_1\","
					    "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}", "null")
				  OAI_CHUNK("{}", "\"tool_calls\"") OAI_DONE);

	ck_assert_str_eq(o.log, "start;");
	ck_assert_int_eq(o.stop, STOP_TOOL_USE);
	ck_assert(o.tool_call_begun);
	free(o.log);
}
END_TEST

/* A stream cut after a tool call began says so (the call is not kept as a
 * block: a next attempt must not continue the text alone); a text-only
 * stream cut the same way does not. */
START_TEST(test_a_stream_cut_inside_a_tool_call_says_a_tool_call_began)
{
	static const char oai_cut[] =
		OAI_CHUNK("{\"role\":\"assistant\",\"content\":\"Let me look.\"}", "null")
		OAI_CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\","
			  "\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"pa\"}}]}", "null");
	static const char ant_cut[] =
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
		"\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\","
		"\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n"
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
		"\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
		"\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me look.\"}}\n\n"
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
		"\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read\","
		"\"input\":{}}}\n\n";
	struct decoded o = decode(&api_openai_format, oai_cut);

	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert(o.tool_call_begun);
	free(o.log);
	o = decode(&api_anthropic_format, ant_cut);
	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert(o.tool_call_begun);
	free(o.log);
	/* The same texts without the call: nothing begun. */
	o = decode(&api_openai_format, OAI_TEXT);
	ck_assert(!o.tool_call_begun);
	free(o.log);
}
END_TEST

START_TEST(test_openai_error_object_in_stream_fails_with_type_and_message)
{
	struct decoded o = decode(&api_openai_format,
				  OAI_TEXT "data: {\"error\":{\"message\":\"Rate limit reached for gpt-4o\",\"type\":\"requests\","
				  "\"param\":null,\"code\":\"rate_limit_exceeded\"}}\n\n" OAI_FINISH OAI_DONE);

	ck_assert_str_eq(o.log, expected_log);
	ck_assert_int_eq(o.stop, STOP_ERROR);
	/* The type leads, as in the Anthropic form, so the classifier sees it. */
	ck_assert_str_eq(o.error, "requests: Rate limit reached for gpt-4o");
	ck_assert_int_eq(o.feed_rc, 1);
	free(o.log);
}
END_TEST

START_TEST(test_openai_openrouter_error_chunk_with_finish_error_fails_with_message)
{
	struct decoded o = decode(&api_openai_format,
				  "data: {\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"error\":{\"code\":502,"
				  "\"message\":\"Provider returned error\"},\"choices\":[{\"index\":0,\"delta\":"
				  "{\"content\":\"\"},\"finish_reason\":\"error\"}]}\n\n" OAI_DONE);

	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, "Provider returned error");
	free(o.log);
}
END_TEST

START_TEST(test_openai_error_without_message_shows_the_error_json)
{
	struct decoded o = decode(&api_openai_format, "data: {\"error\":{\"code\":\"server_error\"}}\n\n");

	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, "{\"code\":\"server_error\"}");
	free(o.log);
}
END_TEST

START_TEST(test_openai_malformed_json_fails_with_jansson_text)
{
	static const char bad[] = "{\"choices\":[{\"delta\":{\"content\":\"Hel";
	json_error_t jerr;
	char want[256];
	struct decoded o = decode(&api_openai_format, OAI_TEXT "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\n\n" OAI_DONE);

	ck_assert_ptr_null(json_loadb(bad, strlen(bad), 0, &jerr));
	snprintf(want, sizeof(want), "malformed stream: %s", jerr.text);
	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, want);
	ck_assert_int_eq(o.feed_rc, 1);
	/* The text already streamed is closed, not lost. */
	ck_assert_str_eq(o.log, expected_log);
	free(o.log);
}
END_TEST

START_TEST(test_openai_json_that_is_not_an_object_is_malformed)
{
	struct decoded o = decode(&api_openai_format, "data: [1,2]\n\n" OAI_DONE);

	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, "malformed stream: expected a JSON object");
	free(o.log);
}
END_TEST

START_TEST(test_openai_events_after_done_are_ignored)
{
	struct decoded o = decode(&api_openai_format, OAI_TEXT OAI_DONE "data: {not json\n\n" OAI_CHUNK("{\"content\":\"late\"}", "null"));

	ck_assert_str_eq(o.log, expected_log);
	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert_int_eq(o.feed_rc, 0);
	free(o.log);
}
END_TEST

/* A usage chunk with the given counts (JSON texts). */
#define OAI_USAGE_OF(in, out) "data: " OAI_HEAD "\"choices\":[],\"usage\":{\"prompt_tokens\":" in \
		  ",\"completion_tokens\":" out "}}\n\n"

START_TEST(test_openai_huge_usage_saturates_at_number_max)
{
	struct decoded o = decode(&api_openai_format, OAI_TEXT OAI_FINISH
				  OAI_USAGE_OF("9223372036854775807", "1e300") OAI_DONE);

	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert_int_eq(o.input_tokens, NUMBER_MAX);
	ck_assert_int_eq(o.output_tokens, NUMBER_MAX);
	free(o.log);
}
END_TEST

START_TEST(test_openai_negative_or_fractional_usage_is_ignored)
{
	struct decoded o = decode(&api_openai_format, OAI_TEXT OAI_FINISH
				  OAI_USAGE_OF("-1", "3.5") OAI_DONE);

	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert_int_eq(o.input_tokens, 0);
	ck_assert_int_eq(o.output_tokens, 0);
	free(o.log);
	/* A bad count in a later report leaves the earlier one. */
	o = decode(&api_openai_format, OAI_TEXT OAI_FINISH OAI_USAGE_OF("7", "8")
		   OAI_USAGE_OF("-9223372036854775808", "\"9\"") OAI_DONE);
	ck_assert_int_eq(o.input_tokens, 7);
	ck_assert_int_eq(o.output_tokens, 8);
	free(o.log);
}
END_TEST

/* A usage chunk with the given members (JSON text). */
#define OAI_USAGE_RAW(members) "data: " OAI_HEAD "\"choices\":[],\"usage\":{" members "}}\n\n"

START_TEST(test_openai_usage_counts_the_cached_prompt_as_cache_read_as_pi_does)
{
	/* pi: cacheRead = cached_tokens, input = prompt_tokens - cacheRead,
	 * output = completion_tokens (reasoning included). */
	struct decoded o = decode(&api_openai_format, OAI_TEXT OAI_FINISH OAI_USAGE_RAW(
		"\"prompt_tokens\":100,\"completion_tokens\":20,\"total_tokens\":120,"
		"\"prompt_tokens_details\":{\"cached_tokens\":30},"
		"\"completion_tokens_details\":{\"reasoning_tokens\":12}") OAI_DONE);

	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert_int_eq(o.input_tokens, 70);
	ck_assert_int_eq(o.output_tokens, 20);
	ck_assert_int_eq(o.cache_read_tokens, 30);
	ck_assert_int_eq(o.cache_write_tokens, 0);
	ck_assert_int_eq(o.total_tokens, 0); /* the sum of the four */
	free(o.log);
	/* cache_write_tokens (OpenRouter): written, not read, and counted in
	 * cached_tokens too. */
	o = decode(&api_openai_format, OAI_TEXT OAI_FINISH OAI_USAGE_RAW(
		"\"prompt_tokens\":100,\"completion_tokens\":5,"
		"\"prompt_tokens_details\":{\"cached_tokens\":50,\"cache_write_tokens\":20}") OAI_DONE);
	ck_assert_int_eq(o.input_tokens, 50);
	ck_assert_int_eq(o.cache_read_tokens, 30);
	ck_assert_int_eq(o.cache_write_tokens, 20);
	free(o.log);
	/* DeepSeek's prompt_cache_hit_tokens when cached_tokens is absent. */
	o = decode(&api_openai_format, OAI_TEXT OAI_FINISH OAI_USAGE_RAW(
		"\"prompt_tokens\":10,\"completion_tokens\":2,\"prompt_cache_hit_tokens\":4,"
		"\"prompt_cache_miss_tokens\":6") OAI_DONE);
	ck_assert_int_eq(o.input_tokens, 6);
	ck_assert_int_eq(o.cache_read_tokens, 4);
	free(o.log);
}
END_TEST

START_TEST(test_openai_hostile_cache_counts_are_ignored_or_saturated)
{
	struct decoded o = decode(&api_openai_format, OAI_TEXT OAI_FINISH OAI_USAGE_RAW(
		"\"prompt_tokens\":10,\"completion_tokens\":2,"
		"\"prompt_tokens_details\":{\"cached_tokens\":-3,\"cache_write_tokens\":1.5}") OAI_DONE);

	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert_int_eq(o.input_tokens, 10);
	ck_assert_int_eq(o.cache_read_tokens, 0);
	ck_assert_int_eq(o.cache_write_tokens, 0);
	free(o.log);
	/* More cached than prompted: the input is 0, never negative. */
	o = decode(&api_openai_format, OAI_TEXT OAI_FINISH OAI_USAGE_RAW(
		"\"prompt_tokens\":10,\"completion_tokens\":2,"
		"\"prompt_tokens_details\":{\"cached_tokens\":1e300,\"cache_write_tokens\":\"5\"}") OAI_DONE);
	ck_assert_int_eq(o.input_tokens, 0);
	ck_assert_int_eq(o.cache_read_tokens, NUMBER_MAX);
	ck_assert_int_eq(o.cache_write_tokens, 0);
	free(o.log);
}
END_TEST

START_TEST(test_openai_stream_without_usage_reports_zero_tokens)
{
	struct decoded o = decode(&api_openai_format, OAI_TEXT OAI_FINISH OAI_DONE);

	ck_assert_int_eq(o.input_tokens, 0);
	ck_assert_int_eq(o.output_tokens, 0);
	ck_assert_int_eq(o.cache_read_tokens, 0);
	ck_assert_int_eq(o.cache_write_tokens, 0);
	free(o.log);
}
END_TEST

START_TEST(test_openai_comments_and_keepalives_are_ignored)
{
	struct decoded o = decode(&api_openai_format, ": OPENROUTER PROCESSING\n\n" OAI_TEXT ": ping\n\n" OAI_FINISH OAI_DONE);

	ck_assert_str_eq(o.log, expected_log);
	ck_assert_int_eq(o.stop, STOP_STOP);
	free(o.log);
}
END_TEST

/* ---- Anthropic streams ------------------------------------------------------ */

START_TEST(test_anthropic_complete_stream_gives_text_usage_and_stop)
{
	struct decoded o = decode(&api_anthropic_format, ant_full);

	ck_assert_str_eq(o.log, expected_log);
	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert(!o.has_error);
	ck_assert_int_eq(o.input_tokens, 25);
	ck_assert_int_eq(o.output_tokens, 15);
	ck_assert_int_eq(o.hint_ms, -1);
	free(o.log);
}
END_TEST

#define ANT_START_USAGE(in, out) "event: message_start\n" \
	"data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\"," \
	"\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":" in \
	",\"output_tokens\":" out "}}}\n\n"
#define ANT_MSG_DELTA_USAGE(out) "event: message_delta\n" \
	"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}," \
	"\"usage\":{\"output_tokens\":" out "}}\n\n"

#define ANT_START_RAW(usage) "event: message_start\n" \
	"data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\"," \
	"\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{" usage "}}}\n\n"
#define ANT_MSG_DELTA_RAW(usage) "event: message_delta\n" \
	"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}," \
	"\"usage\":{" usage "}}\n\n"

START_TEST(test_anthropic_usage_takes_cache_read_and_creation_as_pi_does)
{
	/* pi: input_tokens as is (the cache is not in it), cacheRead =
	 * cache_read_input_tokens, cacheWrite = cache_creation_input_tokens;
	 * message_delta replaces the counts it holds. */
	struct decoded o = decode(&api_anthropic_format,
		ANT_START_RAW("\"input_tokens\":5,\"cache_creation_input_tokens\":50,"
			      "\"cache_read_input_tokens\":100,\"output_tokens\":1")
		ANT_BLOCK ANT_DELTA("x") ANT_BLOCK_STOP
		ANT_MSG_DELTA_RAW("\"output_tokens\":15,\"cache_read_input_tokens\":120") ANT_STOP);

	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert_int_eq(o.input_tokens, 5);
	ck_assert_int_eq(o.output_tokens, 15);
	ck_assert_int_eq(o.cache_read_tokens, 120);
	ck_assert_int_eq(o.cache_write_tokens, 50);
	ck_assert_int_eq(o.total_tokens, 0); /* the sum of the four */
	free(o.log);
	/* A null count (a proxy) keeps the earlier one, as in pi. */
	o = decode(&api_anthropic_format,
		   ANT_START_RAW("\"input_tokens\":5,\"cache_read_input_tokens\":9,\"output_tokens\":1")
		   ANT_BLOCK ANT_DELTA("x") ANT_BLOCK_STOP
		   ANT_MSG_DELTA_RAW("\"output_tokens\":3,\"cache_read_input_tokens\":null") ANT_STOP);
	ck_assert_int_eq(o.cache_read_tokens, 9);
	free(o.log);
}
END_TEST

START_TEST(test_anthropic_hostile_cache_counts_are_ignored_or_saturated)
{
	struct decoded o = decode(&api_anthropic_format,
		ANT_START_RAW("\"input_tokens\":5,\"cache_creation_input_tokens\":7,"
			      "\"cache_read_input_tokens\":8,\"output_tokens\":1")
		ANT_BLOCK ANT_DELTA("x") ANT_BLOCK_STOP
		ANT_MSG_DELTA_RAW("\"output_tokens\":3,\"cache_read_input_tokens\":-1,"
				  "\"cache_creation_input_tokens\":2.5") ANT_STOP);

	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert_int_eq(o.cache_read_tokens, 8);
	ck_assert_int_eq(o.cache_write_tokens, 7);
	free(o.log);
	o = decode(&api_anthropic_format,
		   ANT_START_RAW("\"input_tokens\":5,\"cache_read_input_tokens\":1e300,"
				 "\"cache_creation_input_tokens\":9223372036854775807,\"output_tokens\":1")
		   ANT_BLOCK ANT_DELTA("x") ANT_BLOCK_STOP ANT_MSG_DELTA_USAGE("2") ANT_STOP);
	ck_assert_int_eq(o.cache_read_tokens, NUMBER_MAX);
	ck_assert_int_eq(o.cache_write_tokens, NUMBER_MAX);
	free(o.log);
}
END_TEST

START_TEST(test_anthropic_huge_usage_saturates_and_negative_usage_is_ignored)
{
	struct decoded o = decode(&api_anthropic_format,
				  ANT_START_USAGE("9223372036854775807", "1") ANT_BLOCK ANT_DELTA("x")
				  ANT_BLOCK_STOP ANT_MSG_DELTA_USAGE("9223372036854775807") ANT_STOP);

	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert_int_eq(o.input_tokens, NUMBER_MAX);
	ck_assert_int_eq(o.output_tokens, NUMBER_MAX);
	free(o.log);
	o = decode(&api_anthropic_format,
		   ANT_START_USAGE("-5", "2") ANT_BLOCK ANT_DELTA("x") ANT_BLOCK_STOP
		   ANT_MSG_DELTA_USAGE("-9223372036854775808") ANT_STOP);
	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert_int_eq(o.input_tokens, 0);
	ck_assert_int_eq(o.output_tokens, 2);
	free(o.log);
}
END_TEST

START_TEST(test_anthropic_stream_split_at_every_byte_gives_the_same_result)
{
	size_t n = sizeof(ant_full) - 1;

	for (size_t i = 0; i <= n + 1; i++) {
		/* i == n + 1: one byte at a time. */
		struct decoded o = i <= n ? decode_split(&api_anthropic_format, ant_full, n, i, 0) : decode_n(&api_anthropic_format, ant_full, n, 1);

		ck_assert_msg(strcmp(o.log, expected_log) == 0, "split %zu: %s", i, o.log);
		ck_assert_int_eq(o.stop, STOP_STOP);
		ck_assert(!o.has_error);
		ck_assert_int_eq(o.output_tokens, 15);
		free(o.log);
	}
}
END_TEST

START_TEST(test_anthropic_stream_cut_anywhere_before_message_stop_fails_as_truncated)
{
	size_t n = sizeof(ant_full) - 1;

	for (size_t cut = 0; cut <= n; cut++) {
		struct decoded o = decode_n(&api_anthropic_format, ant_full, cut, 0);

		if (cut < n) {
			ck_assert_msg(o.stop == STOP_ERROR, "cut at %zu", cut);
			ck_assert_str_eq(o.error, "connection error: stream ended before completion");
		} else {
			ck_assert_msg(o.stop == STOP_STOP && !o.has_error, "cut at %zu", cut);
		}
		free(o.log);
	}
}
END_TEST

START_TEST(test_anthropic_message_delta_without_message_stop_is_truncated)
{
	struct decoded o = decode(&api_anthropic_format, ANT_TEXT ANT_BLOCK_STOP ANT_MSG_DELTA("end_turn"));

	ck_assert_str_eq(o.log, expected_log);
	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, API_TRUNCATED);
	ck_assert_int_eq(o.output_tokens, 15);
	free(o.log);
}
END_TEST

START_TEST(test_anthropic_stop_reasons_map_to_stop_reasons)
{
	static const struct {
		const char *reason;
		enum stop_reason stop;
		const char *error;
	} cases[] = {
		{ "end_turn", STOP_STOP, NULL },
		{ "stop_sequence", STOP_STOP, NULL },
		{ "pause_turn", STOP_STOP, NULL },
		{ "max_tokens", STOP_LENGTH, NULL },
		{ "tool_use", STOP_TOOL_USE, NULL },
		{ "refusal", STOP_ERROR, "The model refused to complete the request" },
		{ "mystery", STOP_ERROR, "Unhandled stop reason: mystery" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char body[1024];
		struct decoded o;

		snprintf(body, sizeof(body),
			 ANT_START "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":"
			 "{\"stop_reason\":\"%s\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n" ANT_STOP,
			 cases[i].reason);
		o = decode(&api_anthropic_format, body);
		ck_assert_msg(o.stop == cases[i].stop, "case %s", cases[i].reason);
		if (cases[i].error)
			ck_assert_str_eq(o.error, cases[i].error);
		else
			ck_assert(!o.has_error);
		ck_assert_int_eq(o.output_tokens, 3);
		free(o.log);
	}
}
END_TEST

START_TEST(test_anthropic_error_event_fails_like_pi)
{
	struct decoded o = decode(&api_anthropic_format, ANT_START ANT_OVERLOADED);

	ck_assert_str_eq(o.log, "start;");
	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, "overloaded_error: Overloaded");
	ck_assert_int_eq(o.feed_rc, 1);
	free(o.log);
}
END_TEST

START_TEST(test_anthropic_error_event_mid_text_closes_the_text_and_fails)
{
	struct decoded o = decode(&api_anthropic_format, ANT_TEXT ANT_OVERLOADED ANT_BLOCK_STOP ANT_MSG_DELTA("end_turn") ANT_STOP);

	ck_assert_str_eq(o.log, expected_log);
	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, "overloaded_error: Overloaded");
	free(o.log);
}
END_TEST

START_TEST(test_anthropic_error_event_with_non_json_data_fails_with_the_text)
{
	struct decoded o = decode(&api_anthropic_format, ANT_START "event: error\ndata: upstream went away\n\n");

	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, "upstream went away");
	free(o.log);
}
END_TEST

START_TEST(test_anthropic_unnamed_error_data_fails_too)
{
	struct decoded o = decode(&api_anthropic_format,
				  "data: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}\n\n");

	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, "api_error: Internal server error");
	free(o.log);
}
END_TEST

START_TEST(test_anthropic_malformed_json_fails_with_jansson_text)
{
	static const char bad[] = "{\"type\":\"content_block_delta\",";
	json_error_t jerr;
	char want[256];
	struct decoded o = decode(&api_anthropic_format, ANT_TEXT "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\n\n" ANT_STOP);

	ck_assert_ptr_null(json_loadb(bad, strlen(bad), 0, &jerr));
	snprintf(want, sizeof(want), "malformed stream: %s", jerr.text);
	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, want);
	ck_assert_str_eq(o.log, expected_log);
	free(o.log);
}
END_TEST

START_TEST(test_anthropic_ping_and_unknown_events_are_ignored_and_thinking_streams)
{
	struct decoded o = decode(&api_anthropic_format,
				  ANT_START ANT_PING
				  "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
				  "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n"
				  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
				  "\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n"
				  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
				  "\"delta\":{\"type\":\"signature_delta\",\"signature\":\"abc\"}}\n\n"
				  "event: future_event\ndata: {\"type\":\"future_event\",\"x\":1}\n\n"
				  ANT_DELTA("ok") ANT_MSG_DELTA("end_turn") ANT_PING ANT_STOP);

	ck_assert_str_eq(o.log, "start;thinking_start;thinking_delta:hmm;thinking_end:abc;"
				"text_start;delta(ok);text_end;");
	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert(!o.has_error);
	free(o.log);
}
END_TEST

START_TEST(test_anthropic_two_text_blocks_stream_as_one_text)
{
	struct decoded o = decode(&api_anthropic_format,
				  ANT_START ANT_BLOCK ANT_DELTA("a") ANT_BLOCK_STOP
				  "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
				  "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
				  ANT_DELTA("b") ANT_BLOCK_STOP ANT_MSG_DELTA("end_turn") ANT_STOP);

	ck_assert_str_eq(o.log, "start;text_start;delta(a);delta(b);text_end;");
	free(o.log);
}
END_TEST

START_TEST(test_anthropic_events_after_message_stop_are_ignored)
{
	struct decoded o = decode(&api_anthropic_format, ANT_TEXT ANT_BLOCK_STOP ANT_MSG_DELTA("end_turn") ANT_STOP ANT_OVERLOADED "data: {broken\n\n");

	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert(!o.has_error);
	ck_assert_int_eq(o.feed_rc, 0);
	free(o.log);
}
END_TEST

/* ---- the decoder's contract ------------------------------------------------- */

START_TEST(test_external_failure_wins_over_truncation_and_first_failure_wins)
{
	struct recsink r;
	struct provider_sink sink = recsink_sink(&r);
	struct api_stream st;
	struct provider_result res;

	recsink_init(&r);
	api_stream_init(&st, &api_openai_format, &sink);
	api_stream_fail(&st, "connection error: Connection reset by peer");
	api_stream_fail(&st, "second");
	ck_assert(api_stream_done(&st));
	api_stream_end(&st, &res);
	ck_assert_int_eq(res.stop, STOP_ERROR);
	ck_assert_str_eq(res.error_message, "connection error: Connection reset by peer");
	recsink_release(&r);
}
END_TEST

START_TEST(test_failure_after_the_terminal_marker_is_ignored)
{
	struct recsink r;
	struct provider_sink sink = recsink_sink(&r);
	struct api_stream st;
	struct provider_result res;
	struct sse_event done = { "message", 7, "[DONE]", 6 };

	recsink_init(&r);
	api_stream_init(&st, &api_openai_format, &sink);
	ck_assert_int_eq(api_stream_event(&st, &done), 0);
	ck_assert(api_stream_done(&st));
	api_stream_fail(&st, "connection error: reset");
	api_stream_end(&st, &res);
	ck_assert_int_eq(res.stop, STOP_STOP);
	ck_assert_ptr_null(res.error_message);
	recsink_release(&r);
}
END_TEST

START_TEST(test_api_format_names_are_pis)
{
	ck_assert_ptr_eq(api_formats_find("openai-completions"), &api_openai_format);
	ck_assert_ptr_eq(api_formats_find("anthropic-messages"), &api_anthropic_format);
	ck_assert_ptr_null(api_formats_find("openai-codex-responses"));
	ck_assert_ptr_null(api_formats_find(NULL));
}
END_TEST

/* What provider_http sends besides the body: the path after the base URL
 * and the headers that carry the key and the API version. */
START_TEST(test_api_format_tables_give_path_and_key_headers)
{
	ck_assert_str_eq(api_openai_format.path, "/chat/completions");
	ck_assert_str_eq(api_openai_format.key_header, "Authorization");
	ck_assert_str_eq(api_openai_format.key_prefix, "Bearer ");
	ck_assert_ptr_null(api_openai_format.fixed_header);
	ck_assert_str_eq(api_anthropic_format.path, "/messages");
	ck_assert_str_eq(api_anthropic_format.key_header, "x-api-key");
	ck_assert_str_eq(api_anthropic_format.key_prefix, "");
	ck_assert_str_eq(api_anthropic_format.fixed_header, "anthropic-version: 2023-06-01");
}
END_TEST

/* ---- HTTP error bodies ------------------------------------------------------ */

/* The body in a buffer of exactly its size: no NUL after it. */
static const char *http_error(long status, const char *body, char *out, size_t outlen)
{
	size_t n = strlen(body);
	char *copy = malloc(n ? n : 1);

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, body, n);
	api_http_error(status, copy, n, out, outlen);
	free(copy);
	return out;
}

START_TEST(test_http_error_openai_body_gives_status_and_message)
{
	char out[512];

	http_error(429, "{\n    \"error\": {\n        \"message\": \"Rate limit reached\",\n        \"type\": \"requests\",\n"
		   "        \"param\": null,\n        \"code\": \"rate_limit_exceeded\"\n    }\n}\n", out, sizeof(out));
	ck_assert_str_eq(out, "429 Rate limit reached");
}
END_TEST

START_TEST(test_http_error_anthropic_body_gives_status_and_message)
{
	char out[512];

	http_error(529, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"},"
		   "\"request_id\":\"req_011CSHoEeqs5C35K2UUqR7Fy\"}", out, sizeof(out));
	ck_assert_str_eq(out, "529 Overloaded");
	http_error(401, "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}",
		   out, sizeof(out));
	ck_assert_str_eq(out, "401 invalid x-api-key");
}
END_TEST

START_TEST(test_http_error_other_compatible_shapes_give_their_message)
{
	char out[512];

	http_error(404, "{\"error\":\"model \\\"llama9\\\" not found, try pulling it first\"}", out, sizeof(out));
	ck_assert_str_eq(out, "404 model \"llama9\" not found, try pulling it first");
	http_error(400, "{\"object\":\"error\",\"message\":\"max_tokens is too large\",\"code\":400}", out, sizeof(out));
	ck_assert_str_eq(out, "400 max_tokens is too large");
	http_error(404, "{\"detail\":\"Not Found\"}", out, sizeof(out));
	ck_assert_str_eq(out, "404 Not Found");
}
END_TEST

START_TEST(test_http_error_without_message_uses_the_reason_phrase)
{
	char out[512];

	ck_assert_str_eq(http_error(503, "", out, sizeof(out)), "503 Service Unavailable");
	ck_assert_str_eq(http_error(429, "{}", out, sizeof(out)), "429 Too Many Requests");
	ck_assert_str_eq(http_error(500, "{\"error\":{\"message\":\"\"}}", out, sizeof(out)), "500 Internal Server Error");
	ck_assert_str_eq(http_error(502, "[1,2,3]", out, sizeof(out)), "502 Bad Gateway");
	ck_assert_str_eq(http_error(504, "null", out, sizeof(out)), "504 Gateway Timeout");
	ck_assert_str_eq(http_error(418, "", out, sizeof(out)), "418 HTTP error");
	api_http_error(503, NULL, 0, out, sizeof(out));
	ck_assert_str_eq(out, "503 Service Unavailable");
}
END_TEST

START_TEST(test_http_error_garbage_or_html_body_uses_the_reason_phrase)
{
	char out[512];

	ck_assert_str_eq(http_error(502, "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
				    out, sizeof(out)), "502 Bad Gateway");
	ck_assert_str_eq(http_error(503, "\x01\x02\xff\xfe binary", out, sizeof(out)), "503 Service Unavailable");
	ck_assert_str_eq(http_error(500, "{\"error\": {\"message\": \"unterminated", out, sizeof(out)),
			 "500 Internal Server Error");
}
END_TEST

START_TEST(test_http_error_plain_text_body_is_quoted)
{
	char out[512];

	ck_assert_str_eq(http_error(503, "upstream connect error or disconnect/reset before headers\r\n", out, sizeof(out)),
			 "503 upstream connect error or disconnect/reset before headers");
}
END_TEST

START_TEST(test_http_error_masks_anything_shaped_like_an_api_key)
{
	char out[512];

	http_error(401, "{\"error\":{\"message\":\"Incorrect API key provided: sk-proj-abc1***********************wxyz. "
		   "You can find your API key at https://platform.openai.com/account/api-keys.\",\"type\":"
		   "\"invalid_request_error\",\"param\":null,\"code\":\"invalid_api_key\"}}", out, sizeof(out));
	ck_assert_str_eq(out, "401 Incorrect API key provided: ***. You can find your API key at "
			 "https://platform.openai.com/account/api-keys.");
	http_error(401, "bad key sk-ant-api03-AbCdEf0123456789", out, sizeof(out));
	ck_assert_str_eq(out, "401 bad key ***");
	http_error(403, "{\"message\":\"token 9f8e7d6c5b4a39281706f5e4d3c2b1a0 revoked\"}", out, sizeof(out));
	ck_assert_str_eq(out, "403 token *** revoked");
	/* Model names and URLs are not keys. */
	http_error(404, "{\"error\":{\"message\":\"The model `claude-sonnet-4-5-20250929` does not exist\"}}",
		   out, sizeof(out));
	ck_assert_str_eq(out, "404 The model `claude-sonnet-4-5-20250929` does not exist");
}
END_TEST

START_TEST(test_http_error_message_is_cut_at_300_bytes_on_a_character_boundary)
{
	char body[2048], out[1024];
	size_t n = 0;

	n += (size_t)snprintf(body, sizeof(body), "{\"error\":{\"message\":\"a");
	for (int i = 0; i < 400; i++)
		n += (size_t)snprintf(body + n, sizeof(body) - n, "\xC3\xA9");
	snprintf(body + n, sizeof(body) - n, "\"}}");
	http_error(500, body, out, sizeof(out));
	/* "500 " + "a" + 149 two-byte characters = 299 bytes of message. */
	ck_assert_uint_eq(strlen(out), 4 + 1 + 149 * 2);
	ck_assert_int_eq(strncmp(out, "500 a\xC3\xA9", 7), 0);
	ck_assert_str_eq(out + strlen(out) - 2, "\xC3\xA9");
}
END_TEST

START_TEST(test_http_error_control_characters_become_spaces)
{
	char out[512];

	http_error(400, "{\"error\":{\"message\":\"line one\\nline two\\u0000\\ttab\"}}", out, sizeof(out));
	ck_assert_str_eq(out, "400 line one line two tab");
}
END_TEST

START_TEST(test_http_error_fits_a_small_buffer)
{
	char out[8];

	http_error(429, "{\"error\":{\"message\":\"Rate limit reached\"}}", out, sizeof(out));
	ck_assert_str_eq(out, "429 Rat");
}
END_TEST

/* ---- request bodies --------------------------------------------------------- */

/* A conversation whose second answer failed and was retried: the failed
 * assistant message (and an aborted one) must not be sent. */
static const char conversation[] =
	"[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hello\"}],\"timestamp\":1},"
	" {\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Hi! How can I help?\"}],"
	"  \"api\":\"openai-completions\",\"provider\":\"openai\",\"model\":\"gpt-4o\",\"usage\":{\"input\":3,\"output\":6},"
	"  \"stopReason\":\"stop\",\"timestamp\":2},"
	" {\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is in this picture?\"},"
	"  {\"type\":\"image\",\"data\":\"iVBORw0KGgo=\",\"mimeType\":\"image/png\"}],\"timestamp\":3},"
	" {\"role\":\"assistant\",\"content\":[],\"stopReason\":\"error\",\"errorMessage\":\"503 Service Unavailable\",\"timestamp\":4},"
	" {\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"It shows\"}],\"stopReason\":\"aborted\",\"timestamp\":5},"
	" {\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"\"}],\"stopReason\":\"stop\",\"timestamp\":6},"
	" {\"role\":\"toolResult\",\"content\":[{\"type\":\"text\",\"text\":\"ignored\"}],\"timestamp\":7}]";

static json_t *load(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);

	ck_assert_msg(v != NULL, "test JSON: %s", jerr.text);
	return v;
}

static void assert_json_eq(json_t *got, const char *want_text)
{
	json_t *want = load(want_text);
	char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
	char *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);

	ck_assert_str_eq(g, w);
	free(g);
	free(w);
	json_decref(want);
}

START_TEST(test_openai_request_skips_failed_turns_and_maps_images)
{
	json_t *messages = load(conversation);
	json_t *body = api_openai_request(messages, "gpt-4o", 1024);

	ck_assert_ptr_nonnull(body);
	assert_json_eq(body,
		       "{\"model\":\"gpt-4o\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
		       "\"max_completion_tokens\":1024,\"messages\":["
		       "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hello\"}]},"
		       "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Hi! How can I help?\"}]},"
		       "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is in this picture?\"},"
		       "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,iVBORw0KGgo=\"}}]}]}");
	json_decref(body);
	json_decref(messages);
}
END_TEST

START_TEST(test_anthropic_request_skips_failed_turns_and_maps_images)
{
	json_t *messages = load(conversation);
	json_t *body = api_anthropic_request(messages, "claude-sonnet-4-5", 2048);

	ck_assert_ptr_nonnull(body);
	assert_json_eq(body,
		       "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":2048,\"stream\":true,\"messages\":["
		       "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hello\"}]},"
		       "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Hi! How can I help?\"}]},"
		       "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is in this picture?\"},"
		       "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\","
		       "\"data\":\"iVBORw0KGgo=\"}}]}]}");
	json_decref(body);
	json_decref(messages);
}
END_TEST

START_TEST(test_request_max_tokens_defaults)
{
	json_t *messages = load("[{\"role\":\"user\",\"content\":\"plain string content\"}]");
	struct api_request req = { .messages = messages, .model = "m" };
	json_t *o = api_openai_format.request(&req);
	json_t *a = api_anthropic_format.request(&req);

	assert_json_eq(o, "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
			  "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"plain string content\"}]}]}");
	assert_json_eq(a, "{\"model\":\"m\",\"max_tokens\":8192,\"stream\":true,"
			  "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"plain string content\"}]}]}");
	json_decref(o);
	json_decref(a);
	json_decref(messages);
}
END_TEST

START_TEST(test_request_drops_malformed_parts_and_empty_messages)
{
	json_t *messages = load("[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"data\":\"x\"},{\"type\":\"text\"},"
				"{\"text\":\"no type\"},42]},"
				"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"kept\"}]},"
				"{\"content\":\"no role\"}, \"not an object\"]");
	json_t *o = api_openai_request(messages, "m", 0);
	json_t *a = api_anthropic_request(messages, "m", 100);

	assert_json_eq(json_object_get(o, "messages"),
		       "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"kept\"}]}]");
	assert_json_eq(json_object_get(a, "messages"),
		       "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"kept\"}]}]");
	json_decref(o);
	json_decref(a);
	json_decref(messages);
}
END_TEST

/* pi's anthropic.js: the thinking a level asks for, max_tokens made room
 * for the budget, and the blocks of earlier answers sent back. */
static json_t *thinking_request(const char *model, int64_t max_tokens, const char *level,
				bool reasoning)
{
	json_t *messages = load("[{\"role\":\"user\",\"content\":\"q\"}]");
	struct api_request req = { .messages = messages, .model = model, .max_tokens = max_tokens,
				   .thinking_level = level, .reasoning = reasoning };
	json_t *body = api_anthropic_format.request(&req);

	json_decref(messages);
	ck_assert_ptr_nonnull(body);
	return body;
}

START_TEST(test_anthropic_thinking_budget_and_max_tokens_follow_the_level_as_pi_maps_them)
{
	static const struct { const char *level; int64_t max_in, max_out, budget; } cases[] = {
		{ "minimal", 64000, 33024, 1024 },
		{ "low", 64000, 34048, 2048 },
		{ "medium", 64000, 40192, 8192 },
		{ "high", 64000, 48384, 16384 },
		{ "xhigh", 64000, 48384, 16384 },   /* pi clamps xhigh to high here */
		{ "medium", 0, 16384, 8192 },        /* no maxTokens: the default plus the budget */
		{ "high", 10000, 10000, 8976 },        /* within the model: 1024 left */
		{ "high", 1000, 1000, 1024 },        /* nothing left: pi's floor of 1024 */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *body = thinking_request("claude-sonnet-4-5", cases[i].max_in, cases[i].level, true);
		json_t *t = json_object_get(body, "thinking");

		ck_assert_int_eq(json_integer_value(json_object_get(body, "max_tokens")), cases[i].max_out);
		ck_assert_str_eq(json_string_value(json_object_get(t, "type")), "enabled");
		ck_assert_int_eq(json_integer_value(json_object_get(t, "budget_tokens")), cases[i].budget);
		ck_assert_str_eq(json_string_value(json_object_get(t, "display")), "summarized");
		json_decref(body);
	}
}
END_TEST

START_TEST(test_anthropic_thinking_off_disabled_adaptive_and_no_reasoning)
{
	json_t *body = thinking_request("claude-sonnet-4-5", 2000, "off", true);

	assert_json_eq(json_object_get(body, "thinking"), "{\"type\":\"disabled\"}");
	ck_assert_int_eq(json_integer_value(json_object_get(body, "max_tokens")), 2000);
	json_decref(body);
	body = thinking_request("claude-sonnet-4-5", 2000, NULL, true);
	assert_json_eq(json_object_get(body, "thinking"), "{\"type\":\"disabled\"}");
	json_decref(body);
	/* A model without reasoning: no thinking member, whatever the level. */
	body = thinking_request("claude-sonnet-4-5", 2000, "high", false);
	ck_assert_ptr_null(json_object_get(body, "thinking"));
	json_decref(body);
	/* Opus/Sonnet 4.6 and Opus 4.7: adaptive, with pi's effort. */
	body = thinking_request("claude-opus-4-6", 2000, "minimal", true);
	assert_json_eq(json_object_get(body, "thinking"),
		       "{\"type\":\"adaptive\",\"display\":\"summarized\"}");
	assert_json_eq(json_object_get(body, "output_config"), "{\"effort\":\"low\"}");
	ck_assert_int_eq(json_integer_value(json_object_get(body, "max_tokens")), 2000);
	json_decref(body);
	body = thinking_request("claude-sonnet-4.6", 0, "xhigh", true);
	assert_json_eq(json_object_get(body, "output_config"), "{\"effort\":\"high\"}");
	json_decref(body);
	ck_assert(!api_anthropic_adaptive("claude-sonnet-4-5"));
	ck_assert(api_anthropic_adaptive("claude-opus-4-7-20260101"));
}
END_TEST

/* pi's reasoning knob for chat completions: reasoning_effort from the
 * level through the model's thinkingLevelMap, OpenRouter's reasoning
 * object, nothing on a model without reasoning. */
static json_t *openai_body(const char *options, const char *level, bool reasoning)
{
	json_t *messages = load("[{\"role\":\"user\",\"content\":\"q\"}]");
	json_t *opts = load(options);
	struct api_request req = { .messages = messages, .model = "m", .thinking_level = level,
				   .reasoning = reasoning, .options = opts };
	json_t *body = api_openai_format.request(&req);

	json_decref(messages);
	json_decref(opts);
	return body;
}

START_TEST(test_openai_request_maps_the_thinking_level_as_pi_does)
{
	static const char plain[] = "{\"baseUrl\":\"http://127.0.0.1/v1\",\"models\":[\"m\"]}";
	static const char mapped[] = "{\"baseUrl\":\"http://127.0.0.1/v1\",\"models\":[{\"id\":\"m\","
				     "\"thinkingLevelMap\":{\"high\":\"max\",\"off\":\"minimal\"}}]}";
	static const char router[] = "{\"baseUrl\":\"https://openrouter.ai/api/v1\",\"models\":[\"m\"]}";
	json_t *b;

	b = openai_body(plain, "high", true);
	ck_assert_str_eq(json_string_value(json_object_get(b, "reasoning_effort")), "high");
	json_decref(b);
	b = openai_body(plain, "off", true);
	ck_assert_ptr_null(json_object_get(b, "reasoning_effort"));
	json_decref(b);
	b = openai_body(plain, "high", false);
	ck_assert_ptr_null(json_object_get(b, "reasoning_effort"));
	ck_assert_ptr_null(json_object_get(b, "reasoning"));
	json_decref(b);
	b = openai_body(mapped, "high", true);
	ck_assert_str_eq(json_string_value(json_object_get(b, "reasoning_effort")), "max");
	json_decref(b);
	b = openai_body(mapped, "off", true);
	ck_assert_str_eq(json_string_value(json_object_get(b, "reasoning_effort")), "minimal");
	json_decref(b);
	b = openai_body(router, "low", true);
	assert_json_eq(json_object_get(b, "reasoning"), "{\"effort\":\"low\"}");
	ck_assert_ptr_null(json_object_get(b, "reasoning_effort"));
	json_decref(b);
	b = openai_body(router, "off", true);
	assert_json_eq(json_object_get(b, "reasoning"), "{\"effort\":\"none\"}");
	json_decref(b);
}
END_TEST

/* A signature means something only to the model and API that made it:
 * Anthropic refuses a foreign one with a 400 (pi's transformMessages). */
START_TEST(test_anthropic_request_sends_another_models_thinking_as_text_only)
{
	static const char *const from[] = { "\"api\":\"anthropic-messages\",\"model\":\"other\"",
					    "\"api\":\"google-generative-ai\",\"model\":\"m\"", "" };

	for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++) {
		char text[1024];
		json_t *messages, *a;

		snprintf(text, sizeof(text),
			 "[{\"role\":\"user\",\"content\":\"q\"},"
			 "{\"role\":\"assistant\",\"stopReason\":\"stop\",%s%s\"content\":["
			 "{\"type\":\"thinking\",\"thinking\":\"signed\",\"thinkingSignature\":\"SIG\"},"
			 "{\"type\":\"thinking\",\"thinking\":\"x\",\"thinkingSignature\":\"D\",\"redacted\":true},"
			 "{\"type\":\"text\",\"text\":\"answer\"}]},"
			 "{\"role\":\"user\",\"content\":\"next\"}]", from[i], from[i][0] ? "," : "");
		messages = load(text);
		a = api_anthropic_request(messages, "m", 100);
		assert_json_eq(json_array_get(json_object_get(a, "messages"), 1),
			       "{\"role\":\"assistant\",\"content\":["
			       "{\"type\":\"text\",\"text\":\"signed\"},"
			       "{\"type\":\"text\",\"text\":\"answer\"}]}");
		json_decref(a);
		json_decref(messages);
	}
}
END_TEST

START_TEST(test_anthropic_request_sends_earlier_thinking_back_as_pi_does)
{
	json_t *messages = load(
		"[{\"role\":\"user\",\"content\":\"q\"},"
		"{\"role\":\"assistant\",\"stopReason\":\"stop\",\"api\":\"anthropic-messages\","
		"\"model\":\"m\",\"content\":["
		"{\"type\":\"thinking\",\"thinking\":\"signed\",\"thinkingSignature\":\"SIG\"},"
		"{\"type\":\"thinking\",\"thinking\":\"[Reasoning redacted]\",\"thinkingSignature\":\"DATA\",\"redacted\":true},"
		"{\"type\":\"thinking\",\"thinking\":\"unsigned\"},"
		"{\"type\":\"thinking\",\"thinking\":\"empty sig\",\"thinkingSignature\":\"\"},"
		"{\"type\":\"thinking\",\"thinking\":\" \\n \",\"thinkingSignature\":\"S2\"},"
		"{\"type\":\"text\",\"text\":\"answer\"}]},"
		"{\"role\":\"user\",\"content\":\"next\"}]");
	json_t *a = api_anthropic_request(messages, "m", 100);
	json_t *o = api_openai_request(messages, "m", 0);

	assert_json_eq(json_array_get(json_object_get(a, "messages"), 1),
		       "{\"role\":\"assistant\",\"content\":["
		       "{\"type\":\"thinking\",\"thinking\":\"signed\",\"signature\":\"SIG\"},"
		       "{\"type\":\"redacted_thinking\",\"data\":\"DATA\"},"
		       "{\"type\":\"text\",\"text\":\"unsigned\"},"
		       "{\"type\":\"text\",\"text\":\"empty sig\"},"
		       "{\"type\":\"text\",\"text\":\"answer\"}]}");
	/* openai-completions keeps dropping thinking blocks. */
	assert_json_eq(json_array_get(json_object_get(o, "messages"), 1),
		       "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"answer\"}]}");
	json_decref(a);
	json_decref(o);
	json_decref(messages);
}
END_TEST

START_TEST(test_request_refuses_a_non_array_context)
{
	json_t *obj = json_object();

	ck_assert_ptr_null(api_openai_request(obj, "m", 0));
	ck_assert_ptr_null(api_anthropic_request(obj, "m", 0));
	ck_assert_ptr_null(api_openai_request(NULL, "m", 0));
	json_decref(obj);
}
END_TEST

Suite *api_suite(void)
{
	Suite *s = suite_create("api");
	TCase *oai = tcase_create("openai stream");
	TCase *ant = tcase_create("anthropic stream");
	TCase *misc = tcase_create("contract, errors, requests");

	tcase_set_timeout(oai, 60);
	tcase_set_timeout(ant, 60);
	tcase_add_test(oai, test_openai_complete_stream_gives_text_usage_and_stop);
	tcase_add_test(oai, test_openai_stream_split_at_every_byte_gives_the_same_result);
	tcase_add_test(oai, test_openai_stream_cut_anywhere_before_finish_fails_as_truncated);
	tcase_add_test(oai, test_openai_truncated_stream_keeps_text_and_closes_it);
	tcase_add_test(oai, test_openai_empty_body_is_truncated_without_start);
	tcase_add_test(oai, test_openai_done_alone_completes_the_stream);
	tcase_add_test(oai, test_openai_finish_without_done_completes_the_stream);
	tcase_add_test(oai, test_openai_text_and_finish_in_one_chunk_keeps_the_text);
	tcase_add_test(oai, test_openai_finish_reasons_map_to_stop_reasons);
	tcase_add_test(oai, test_openai_only_choice_index_0_is_read);
	tcase_add_test(oai, test_openai_tool_call_deltas_carry_no_text);
	tcase_add_test(oai, test_a_stream_cut_inside_a_tool_call_says_a_tool_call_began);
	tcase_add_test(oai, test_openai_error_object_in_stream_fails_with_type_and_message);
	tcase_add_test(oai, test_openai_openrouter_error_chunk_with_finish_error_fails_with_message);
	tcase_add_test(oai, test_openai_error_without_message_shows_the_error_json);
	tcase_add_test(oai, test_openai_malformed_json_fails_with_jansson_text);
	tcase_add_test(oai, test_openai_json_that_is_not_an_object_is_malformed);
	tcase_add_test(oai, test_openai_events_after_done_are_ignored);
	tcase_add_test(oai, test_openai_stream_without_usage_reports_zero_tokens);
	tcase_add_test(oai, test_openai_huge_usage_saturates_at_number_max);
	tcase_add_test(oai, test_openai_negative_or_fractional_usage_is_ignored);
	tcase_add_test(oai, test_openai_usage_counts_the_cached_prompt_as_cache_read_as_pi_does);
	tcase_add_test(oai, test_openai_hostile_cache_counts_are_ignored_or_saturated);
	tcase_add_test(oai, test_openai_comments_and_keepalives_are_ignored);
	tcase_add_test(ant, test_anthropic_complete_stream_gives_text_usage_and_stop);
	tcase_add_test(ant, test_anthropic_stream_split_at_every_byte_gives_the_same_result);
	tcase_add_test(ant, test_anthropic_huge_usage_saturates_and_negative_usage_is_ignored);
	tcase_add_test(ant, test_anthropic_usage_takes_cache_read_and_creation_as_pi_does);
	tcase_add_test(ant, test_anthropic_hostile_cache_counts_are_ignored_or_saturated);
	tcase_add_test(ant, test_anthropic_stream_cut_anywhere_before_message_stop_fails_as_truncated);
	tcase_add_test(ant, test_anthropic_message_delta_without_message_stop_is_truncated);
	tcase_add_test(ant, test_anthropic_stop_reasons_map_to_stop_reasons);
	tcase_add_test(ant, test_anthropic_error_event_fails_like_pi);
	tcase_add_test(ant, test_anthropic_error_event_mid_text_closes_the_text_and_fails);
	tcase_add_test(ant, test_anthropic_error_event_with_non_json_data_fails_with_the_text);
	tcase_add_test(ant, test_anthropic_unnamed_error_data_fails_too);
	tcase_add_test(ant, test_anthropic_malformed_json_fails_with_jansson_text);
	tcase_add_test(ant, test_anthropic_ping_and_unknown_events_are_ignored_and_thinking_streams);
	tcase_add_test(ant, test_anthropic_two_text_blocks_stream_as_one_text);
	tcase_add_test(ant, test_anthropic_events_after_message_stop_are_ignored);
	tcase_add_test(misc, test_external_failure_wins_over_truncation_and_first_failure_wins);
	tcase_add_test(misc, test_failure_after_the_terminal_marker_is_ignored);
	tcase_add_test(misc, test_api_format_names_are_pis);
	tcase_add_test(misc, test_api_format_tables_give_path_and_key_headers);
	tcase_add_test(misc, test_http_error_openai_body_gives_status_and_message);
	tcase_add_test(misc, test_http_error_anthropic_body_gives_status_and_message);
	tcase_add_test(misc, test_http_error_other_compatible_shapes_give_their_message);
	tcase_add_test(misc, test_http_error_without_message_uses_the_reason_phrase);
	tcase_add_test(misc, test_http_error_garbage_or_html_body_uses_the_reason_phrase);
	tcase_add_test(misc, test_http_error_plain_text_body_is_quoted);
	tcase_add_test(misc, test_http_error_masks_anything_shaped_like_an_api_key);
	tcase_add_test(misc, test_http_error_message_is_cut_at_300_bytes_on_a_character_boundary);
	tcase_add_test(misc, test_http_error_control_characters_become_spaces);
	tcase_add_test(misc, test_http_error_fits_a_small_buffer);
	tcase_add_test(misc, test_openai_request_skips_failed_turns_and_maps_images);
	tcase_add_test(misc, test_anthropic_request_skips_failed_turns_and_maps_images);
	tcase_add_test(misc, test_request_max_tokens_defaults);
	tcase_add_test(misc, test_request_drops_malformed_parts_and_empty_messages);
	tcase_add_test(misc, test_request_refuses_a_non_array_context);
	tcase_add_test(misc, test_anthropic_thinking_budget_and_max_tokens_follow_the_level_as_pi_maps_them);
	tcase_add_test(misc, test_anthropic_thinking_off_disabled_adaptive_and_no_reasoning);
	tcase_add_test(misc, test_anthropic_request_sends_earlier_thinking_back_as_pi_does);
	tcase_add_test(misc, test_anthropic_request_sends_another_models_thinking_as_text_only);
	tcase_add_test(misc, test_openai_request_maps_the_thinking_level_as_pi_does);
	suite_add_tcase(s, oai);
	suite_add_tcase(s, ant);
	suite_add_tcase(s, misc);
	return s;
}

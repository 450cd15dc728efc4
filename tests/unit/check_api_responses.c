/* OpenAI Responses ("openai-responses", "azure-openai-responses"): the
 * request bodies (thinking levels, reasoning sent back), Azure's URL, every
 * stream event, and the in-place reader against jansson. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/number.h"
#include "provider/http/api.h"
#include "provider/http/api_formats.h"
#include "provider/http/api_responses.h"
#include "provider/http/sse.h"
#include "support/decoded.h"
#include "support/recsink.h"

Suite *api_responses_suite(void);

/* ---- a decoding harness ---------------------------------------------------- */

/* The shared harness (support/decoded.h), with the sink's order checked. */
static struct decoded decode_n(const char *body, size_t len, size_t chunk, bool thinking)
{
	struct decoded o = decoded_run(&api_responses_format, body, len, 0, chunk, thinking);

	ck_assert_msg(o.finishes == 0, "the decoder must leave finish() to the provider");
	ck_assert_msg(o.misorder == NULL, "%s", o.misorder);
	return o;
}

static struct decoded decode(const char *body)
{
	return decode_n(body, strlen(body), 0, true);
}

/* ---- wire examples (the shapes OpenAI's API reference shows) --------------- */

#define EV(type, rest) "event: " type "\ndata: {\"type\":\"" type "\"," rest "}\n\n"
#define RESP(status, more) "\"response\":{\"id\":\"resp_67c9fdcecf\",\"object\":\"response\"," \
	"\"created_at\":1741290958,\"status\":\"" status "\",\"error\":null,\"incomplete_details\":null," \
	"\"model\":\"gpt-5-mini-2025-08-07\"" more "}"
#define CREATED EV("response.created", "\"sequence_number\":0," RESP("in_progress", ",\"output\":[],\"usage\":null")) \
	EV("response.in_progress", "\"sequence_number\":1," RESP("in_progress", ",\"output\":[],\"usage\":null"))
#define MSG_ADDED EV("response.output_item.added", "\"sequence_number\":2,\"output_index\":0," \
	"\"item\":{\"id\":\"msg_67c9fdcf\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}") \
	EV("response.content_part.added", "\"sequence_number\":3,\"item_id\":\"msg_67c9fdcf\",\"output_index\":0," \
	   "\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],\"text\":\"\"}")
#define DELTA(seq, text) EV("response.output_text.delta", "\"sequence_number\":" #seq ",\"item_id\":\"msg_67c9fdcf\"," \
	"\"output_index\":0,\"content_index\":0,\"delta\":\"" text "\",\"logprobs\":[]")
#define MSG_DONE EV("response.output_text.done", "\"sequence_number\":6,\"item_id\":\"msg_67c9fdcf\",\"output_index\":0," \
	"\"content_index\":0,\"text\":\"Hello w\xC3\xB6rld\",\"logprobs\":[]") \
	EV("response.output_item.done", "\"sequence_number\":7,\"output_index\":0,\"item\":{\"id\":\"msg_67c9fdcf\"," \
	   "\"type\":\"message\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"annotations\":[]," \
	   "\"text\":\"Hello w\xC3\xB6rld\"}],\"role\":\"assistant\"}")
#define USAGE ",\"usage\":{\"input_tokens\":37,\"input_tokens_details\":{\"cached_tokens\":12}," \
	"\"output_tokens\":11,\"output_tokens_details\":{\"reasoning_tokens\":4},\"total_tokens\":48}"
#define COMPLETED(status) EV("response.completed", "\"sequence_number\":8," RESP(status, ",\"output\":[]" USAGE))
#define TEXT CREATED MSG_ADDED DELTA(4, "Hello") DELTA(5, " w\xC3\xB6rld")

static const char full[] = TEXT MSG_DONE COMPLETED("completed");

/* ---- the stream ---------------------------------------------------------------- */

/* A function_call item is not kept, but a cut after it began says so. */
START_TEST(test_a_cut_after_a_function_call_item_began_says_a_tool_call_began)
{
	struct decoded o = decode(TEXT EV("response.output_item.added", "\"sequence_number\":6,"
					  "\"output_index\":1,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\","
					  "\"status\":\"in_progress\",\"arguments\":\"\",\"call_id\":\"call_1\","
					  "\"name\":\"read\"}"));

	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert(o.tool_call_begun);
	free(o.log);
	o = decode(TEXT);
	ck_assert(!o.tool_call_begun);
	free(o.log);
}
END_TEST

START_TEST(test_responses_stream_gives_text_usage_and_stop)
{
	struct decoded o = decode(full);

	ck_assert_str_eq(o.log, "start;text_start;delta(Hello);delta( w\xC3\xB6rld);text_end;");
	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert(!o.has_error);
	/* pi's counts: input = input_tokens - cached_tokens, cacheRead =
	 * cached_tokens, output with reasoning, the total as reported. */
	ck_assert_int_eq(o.input_tokens, 25);
	ck_assert_int_eq(o.output_tokens, 11);
	ck_assert_int_eq(o.cache_read_tokens, 12);
	ck_assert_int_eq(o.cache_write_tokens, 0);
	ck_assert_int_eq(o.total_tokens, 48);
	free(o.log);
}
END_TEST

/* A completed response with the given usage members (JSON text). */
#define COMPLETED_USAGE(members) EV("response.completed", RESP("completed", ",\"usage\":{" members "}"))

START_TEST(test_responses_hostile_usage_counts_are_ignored_or_saturated)
{
	struct decoded o = decode(TEXT COMPLETED_USAGE(
		"\"input_tokens\":37,\"input_tokens_details\":{\"cached_tokens\":-12},"
		"\"output_tokens\":2.5,\"total_tokens\":\"48\""));

	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert_int_eq(o.input_tokens, 37);
	ck_assert_int_eq(o.output_tokens, 0);
	ck_assert_int_eq(o.cache_read_tokens, 0);
	ck_assert_int_eq(o.total_tokens, 0);
	free(o.log);
	/* More cached than input: the input is 0, never negative. */
	o = decode(TEXT COMPLETED_USAGE(
		"\"input_tokens\":3,\"input_tokens_details\":{\"cached_tokens\":1e300},"
		"\"output_tokens\":9223372036854775807,\"total_tokens\":1e300"));
	ck_assert_int_eq(o.input_tokens, 0);
	ck_assert_int_eq(o.cache_read_tokens, NUMBER_MAX);
	ck_assert_int_eq(o.output_tokens, NUMBER_MAX);
	ck_assert_int_eq(o.total_tokens, NUMBER_MAX);
	free(o.log);
}
END_TEST

START_TEST(test_responses_stream_split_at_every_byte_gives_the_same_result)
{
	for (size_t chunk = 1; chunk <= 64; chunk++) {
		struct decoded o = decode_n(full, sizeof(full) - 1, chunk, true);

		ck_assert_msg(strcmp(o.log, "start;text_start;delta(Hello);delta( w\xC3\xB6rld);text_end;") == 0,
			      "chunk %zu: %s", chunk, o.log);
		ck_assert_int_eq(o.stop, STOP_STOP);
		ck_assert_int_eq(o.output_tokens, 11);
		free(o.log);
	}
}
END_TEST

START_TEST(test_responses_stream_cut_anywhere_before_completed_is_truncated)
{
	size_t end = strlen(TEXT MSG_DONE COMPLETED("completed"));

	for (size_t cut = 0; cut < end; cut++) {
		struct decoded o = decode_n(full, cut, 0, true);

		ck_assert_msg(o.stop == STOP_ERROR, "cut at %zu", cut);
		ck_assert_str_eq(o.error, API_TRUNCATED);
		free(o.log);
	}
}
END_TEST

START_TEST(test_responses_completed_status_maps_like_pi)
{
	static const struct {
		const char *status;
		enum stop_reason stop;
		const char *error;
	} cases[] = {
		{ "completed", STOP_STOP, NULL },
		{ "incomplete", STOP_LENGTH, NULL },
		{ "in_progress", STOP_STOP, NULL },
		{ "queued", STOP_STOP, NULL },
		{ "failed", STOP_ERROR, "An unknown error occurred" },
		{ "cancelled", STOP_ERROR, "An unknown error occurred" },
		{ "paused", STOP_ERROR, "Unhandled stop reason: paused" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char body[2048];
		struct decoded o;

		snprintf(body, sizeof(body), "%sdata: {\"type\":\"response.completed\",\"response\":"
			 "{\"status\":\"%s\",\"output\":[]}}\n\n", TEXT, cases[i].status);
		o = decode(body);
		ck_assert_msg(o.stop == cases[i].stop, "%s: %d", cases[i].status, (int)o.stop);
		if (cases[i].error != NULL)
			ck_assert_str_eq(o.error, cases[i].error);
		else
			ck_assert(!o.has_error);
		free(o.log);
	}
}
END_TEST

START_TEST(test_responses_function_call_in_the_output_is_tool_use)
{
	struct decoded o = decode(CREATED EV("response.completed", RESP("completed",
		",\"output\":[{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"ls\","
		"\"arguments\":\"{}\",\"status\":\"completed\"}]")));

	ck_assert_int_eq(o.stop, STOP_TOOL_USE);
	ck_assert_str_eq(o.log, "start;");
	free(o.log);
}
END_TEST

START_TEST(test_responses_incomplete_for_max_output_tokens_is_length)
{
	struct decoded o = decode(TEXT EV("response.incomplete", RESP("incomplete",
		",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"output\":[]" USAGE)));

	ck_assert_int_eq(o.stop, STOP_LENGTH);
	ck_assert(!o.has_error);
	ck_assert_int_eq(o.output_tokens, 11);
	ck_assert_str_eq(o.log, "start;text_start;delta(Hello);delta( w\xC3\xB6rld);text_end;");
	free(o.log);
}
END_TEST

START_TEST(test_responses_incomplete_for_content_filter_is_a_content_filter_error)
{
	struct decoded o = decode(TEXT EV("response.incomplete", RESP("incomplete",
		",\"incomplete_details\":{\"reason\":\"content_filter\"},\"output\":[]")));

	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, "content_filter: the provider's content filter stopped the answer");
	free(o.log);
}
END_TEST

START_TEST(test_responses_failed_carries_the_error_code_first)
{
	static const struct {
		const char *error;
		const char *want;
	} cases[] = {
		{ "{\"code\":\"server_error\",\"message\":\"The server had an error processing your request.\"}",
		  "server_error: The server had an error processing your request." },
		{ "{\"code\":\"rate_limit_exceeded\",\"message\":\"Rate limit reached. Please try again in 20s.\"}",
		  "rate_limit_exceeded: Rate limit reached. Please try again in 20s." },
		{ "{\"code\":\"insufficient_quota\",\"message\":\"You exceeded your current quota.\"}",
		  "insufficient_quota: You exceeded your current quota." },
		{ "{\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window.\"}",
		  "context_length_exceeded: Your input exceeds the context window." },
		{ "{\"code\":null,\"message\":\"odd\"}", "unknown: odd" },
		{ "{\"code\":\"server_error\"}", "server_error: no message" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char body[2048];
		struct decoded o;

		snprintf(body, sizeof(body), "%sdata: {\"type\":\"response.failed\",\"response\":"
			 "{\"status\":\"failed\",\"error\":%s,\"output\":[]}}\n\ndata: {\"type\":"
			 "\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n", TEXT, cases[i].error);
		o = decode(body);
		ck_assert_int_eq(o.stop, STOP_ERROR);
		ck_assert_str_eq(o.error, cases[i].want);
		ck_assert_str_eq(o.log, "start;text_start;delta(Hello);delta( w\xC3\xB6rld);text_end;");
		free(o.log);
	}
}
END_TEST

START_TEST(test_responses_failed_without_error_is_worded_like_pi)
{
	struct decoded a = decode("data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\","
				  "\"incomplete_details\":{\"reason\":\"max_output_tokens\"}}}\n\n");
	struct decoded b = decode("data: {\"type\":\"response.failed\",\"response\":{}}\n\n");

	ck_assert_str_eq(a.error, "incomplete: max_output_tokens");
	ck_assert_str_eq(b.error, "Unknown error (no error details in response)");
	ck_assert_str_eq(a.log, "start;");
	free(a.log);
	free(b.log);
}
END_TEST

START_TEST(test_responses_error_event_fails_with_code_and_message)
{
	struct decoded a = decode(TEXT "event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\","
				  "\"message\":\"Rate limit reached\",\"param\":null,\"sequence_number\":6}\n\n");
	struct decoded b = decode("data: {\"type\":\"error\",\"code\":null,\"message\":\"boom\",\"param\":null}\n\n");
	struct decoded c = decode("data: {\"type\":\"error\"}\n\n");

	ck_assert_str_eq(a.error, "rate_limit_exceeded: Rate limit reached");
	ck_assert_str_eq(a.log, "start;text_start;delta(Hello);delta( w\xC3\xB6rld);text_end;");
	ck_assert_str_eq(b.error, "boom");
	ck_assert_str_eq(c.error, "{\"type\":\"error\"}");
	free(a.log);
	free(b.log);
	free(c.log);
}
END_TEST

/* The OpenAI SDK throws on any chunk with a top-level "error". */
START_TEST(test_responses_chunk_with_an_error_object_fails)
{
	struct decoded a = decode("data: {\"error\":{\"message\":\"Overloaded\",\"type\":\"server_error\","
				  "\"code\":null}}\n\n");
	struct decoded b = decode("data: {\"type\":\"response.output_text.delta\",\"delta\":\"x\","
				  "\"error\":\"gone\"}\n\n");

	ck_assert_str_eq(a.error, "server_error: Overloaded");
	ck_assert_str_eq(b.error, "gone");
	ck_assert_str_eq(b.log, "start;");
	free(a.log);
	free(b.log);
}
END_TEST

START_TEST(test_responses_malformed_data_fails_as_malformed)
{
	struct decoded o = decode(TEXT "data: {\"type\":\"response.output_text.delta\",\"delta\":\n\n");

	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_msg(strncmp(o.error, "malformed stream: ", 18) == 0, "%s", o.error);
	free(o.log);
}
END_TEST

START_TEST(test_responses_events_after_completed_are_ignored)
{
	struct decoded o = decode(TEXT MSG_DONE COMPLETED("completed") DELTA(9, "late") "data: {\"type\":\"error\",\"message\":\"x\"}\n\n");

	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert(!o.has_error);
	ck_assert_ptr_null(strstr(o.log, "late"));
	free(o.log);
}
END_TEST

START_TEST(test_responses_done_marker_ends_the_stream_truncated_unless_completed)
{
	struct decoded a = decode(TEXT "data: [DONE]\n\n" DELTA(9, "late"));
	struct decoded b = decode(TEXT MSG_DONE COMPLETED("completed") "data: [DONE]\n\n");

	ck_assert_str_eq(a.error, API_TRUNCATED);
	ck_assert_ptr_null(strstr(a.log, "late"));
	ck_assert_int_eq(b.stop, STOP_STOP);
	ck_assert(!b.has_error);
	free(a.log);
	free(b.log);
}
END_TEST

START_TEST(test_responses_a_numeric_error_code_leads_the_text)
{
	struct decoded o = decode("data: {\"type\":\"error\",\"code\":429,\"message\":\"Too many\"}\n\n");

	ck_assert_str_eq(o.error, "429: Too many");
	free(o.log);
}
END_TEST

START_TEST(test_responses_refusal_delta_is_text)
{
	struct decoded o = decode(CREATED EV("response.refusal.delta", "\"delta\":\"I can't\"") COMPLETED("completed"));

	ck_assert_str_eq(o.log, "start;text_start;delta(I can't);text_end;");
	free(o.log);
}
END_TEST

/* ---- thinking ------------------------------------------------------------------- */

#define RS_ITEM_ADDED EV("response.output_item.added", "\"output_index\":0,\"item\":{\"id\":\"rs_1\"," \
	"\"type\":\"reasoning\",\"summary\":[]}")
#define RS_PART_ADDED(i) EV("response.reasoning_summary_part.added", "\"item_id\":\"rs_1\",\"output_index\":0," \
	"\"summary_index\":" #i ",\"part\":{\"type\":\"summary_text\",\"text\":\"\"}")
#define RS_DELTA(i, text) EV("response.reasoning_summary_text.delta", "\"item_id\":\"rs_1\",\"output_index\":0," \
	"\"summary_index\":" #i ",\"delta\":\"" text "\"")
#define RS_PART_DONE(i, text) EV("response.reasoning_summary_text.done", "\"item_id\":\"rs_1\",\"output_index\":0," \
	"\"summary_index\":" #i ",\"text\":\"" text "\"") \
	EV("response.reasoning_summary_part.done", "\"item_id\":\"rs_1\",\"output_index\":0," \
	   "\"summary_index\":" #i ",\"part\":{\"type\":\"summary_text\",\"text\":\"" text "\"}")
#define RS_ITEM "{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"Plan\"}," \
	"{\"type\":\"summary_text\",\"text\":\"Check it\"}],\"encrypted_content\":\"gAAAAABo\"}"
#define RS_ITEM_DONE EV("response.output_item.done", "\"output_index\":0,\"item\":" RS_ITEM)

static const char thinking[] = "data: {\"type\":\"response.created\"}\n\n" RS_ITEM_ADDED RS_PART_ADDED(0) RS_DELTA(0, "Pl") RS_DELTA(0, "an")
	RS_PART_DONE(0, "Plan") RS_PART_ADDED(1) RS_DELTA(1, "Check it") RS_PART_DONE(1, "Check it")
	RS_ITEM_DONE MSG_ADDED DELTA(4, "Hello") "data: {\"type\":\"response.completed\",\"response\":{}}\n\n";

/* The summary parts joined by "\n\n" as pi joins them; the block closed
 * with the reasoning item as its signature, as pi keeps it. */
START_TEST(test_responses_reasoning_summary_streams_as_a_thinking_block)
{
	struct decoded o = decode(thinking);

	ck_assert_str_eq(o.log, "start;thinking_start;thinking_delta:Pl;thinking_delta:an;thinking_delta:\n\n;"
				"thinking_delta:Check it;thinking_end:" RS_ITEM ";text_start;delta(Hello);text_end;");
	ck_assert_int_eq(o.stop, STOP_STOP);
	free(o.log);
}
END_TEST

START_TEST(test_responses_reasoning_without_summary_is_an_empty_signed_block)
{
	struct decoded o = decode(CREATED RS_ITEM_ADDED EV("response.output_item.done", "\"item\":{\"id\":\"rs_2\","
		"\"type\":\"reasoning\",\"summary\":[],\"encrypted_content\":\"gAAA\"}") COMPLETED("completed"));

	ck_assert_str_eq(o.log, "start;thinking_start;thinking_end:{\"id\":\"rs_2\",\"type\":\"reasoning\","
				"\"summary\":[],\"encrypted_content\":\"gAAA\"};");
	free(o.log);
}
END_TEST

START_TEST(test_responses_reasoning_text_deltas_are_thinking_too)
{
	struct decoded o = decode(CREATED RS_ITEM_ADDED EV("response.reasoning_text.delta", "\"delta\":\"raw\"")
		EV("response.reasoning_text.delta", "\"delta\":\" cot\"") COMPLETED("completed"));

	ck_assert_str_eq(o.log, "start;thinking_start;thinking_delta:raw;thinking_delta: cot;thinking_end:;");
	free(o.log);
}
END_TEST

START_TEST(test_responses_thinking_is_dropped_for_a_sink_without_it)
{
	struct decoded o = decode_n(thinking, sizeof(thinking) - 1, 0, false);

	ck_assert_str_eq(o.log, "start;text_start;delta(Hello);text_end;");
	free(o.log);
}
END_TEST

START_TEST(test_responses_truncated_reasoning_closes_the_block_unsigned)
{
	struct decoded o = decode(CREATED RS_ITEM_ADDED RS_PART_ADDED(0) RS_DELTA(0, "Pl"));

	ck_assert_str_eq(o.log, "start;thinking_start;thinking_delta:Pl;thinking_end:;");
	ck_assert_str_eq(o.error, API_TRUNCATED);
	free(o.log);
}
END_TEST

/* ---- in place and jansson agree --------------------------------------------------- */

/* Each payload through the decoder (quick reader first) and through the
 * jansson reader alone: the same sink calls and end state. */
static char *run(const char *const *data, size_t n, bool tree)
{
	struct recsink l;
	struct provider_sink sink = recsink_sink(&l);
	struct api_stream st;
	char state[API_ERROR_MAX + 128];
	int len;

	recsink_init(&l);
	api_stream_init(&st, &api_responses_format, &sink);
	for (size_t i = 0; i < n && !api_stream_done(&st); i++) {
		struct sse_event ev = { "message", 7, data[i], strlen(data[i]) };

		if (tree)
			api_responses_format.event_tree(&st, &ev);
		else
			api_stream_event(&st, &ev);
	}
	len = snprintf(state, sizeof(state), "complete=%d done=%d failed=%d stop=%d in=%lld out=%lld error=%s",
		       st.complete, st.done, st.failed, (int)st.stop, (long long)st.input_tokens,
		       (long long)st.output_tokens, st.failed || st.stop == STOP_ERROR ? st.error : "");
	recsink_note(&l, state, (size_t)len);
	return recsink_take_log(&l);
}

static void same(const char *data, int in_place)
{
	struct api_quick q;
	struct sse_event ev = { "message", 7, data, strlen(data) };
	char *a = run(&data, 1, false), *b = run(&data, 1, true);

	ck_assert_msg(api_responses_format.quick(&ev, &q) == in_place, "%s: in place %d", data, !in_place);
	ck_assert_msg(strcmp(a, b) == 0, "in place and jansson differ:\n%s\n%s", a, b);
	free(a);
	free(b);
}

START_TEST(test_responses_text_delta_is_read_in_place_to_the_same_result)
{
	static const char *const seq[] = {
		"{\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"status\":\"in_progress\"}}",
		"{\"type\":\"response.output_text.delta\",\"sequence_number\":4,\"item_id\":\"msg_1\",\"output_index\":0,"
		"\"content_index\":0,\"delta\":\"Hel\",\"logprobs\":[]}",
		"{\"delta\":\"lo \\\"w\\u00e9\\ud83d\\ude00\\n\",\"type\":\"response.output_text.delta\",\"error\":null}",
		"{\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":3,"
		"\"output_tokens\":5}}}",
	};
	struct api_quick q;
	char *a, *b;

	for (size_t i = 0; i < 4; i++)
		same(seq[i], i == 1 || i == 2);
	a = run(seq, 4, false);
	b = run(seq, 4, true);
	ck_assert_str_eq(a, b);
	ck_assert_ptr_nonnull(strstr(a, "delta(Hel);delta(lo \"w\xC3\xA9\xF0\x9F\x98\x80\n);"));
	ck_assert_ptr_nonnull(strstr(a, "complete=1 done=1 failed=0 stop=0 in=3 out=5"));
	ck_assert_int_eq(api_responses_quick(seq[1], strlen(seq[1]), &q), 1);
	ck_assert_uint_eq(q.content_len, 3);
	ck_assert_ptr_null(q.reason);
	free(a);
	free(b);
}
END_TEST

/* Valid JSON the quick reader leaves to jansson, or JSON jansson refuses:
 * the paths still agree. */
START_TEST(test_responses_anything_else_goes_to_jansson_with_the_same_result)
{
	static const char *const cases[] = {
		"{\"type\":\"response.output_text.delta\",\"delta\":\"x\",\"error\":{\"message\":\"m\"}}",
		"{\"type\":\"response.output_text.delta\",\"type\":\"response.output_text.delta\",\"delta\":\"x\"}",
		"{\"type\":\"response.output_text.delta\",\"delta\":\"x\",\"delta\":\"y\"}",
		"{\"type\":\"response.output_text.delta\\u0000x\",\"delta\":\"x\"}",
		"{\"type\":\"response.refusal.delta\",\"delta\":\"x\"}",
		"{\"type\":7,\"delta\":\"x\"}",
		"{\"delta\":\"x\"}",
		"{\"type\":\"response.output_text.delta\",\"delta\":\"x\"} trailing",
		"{\"type\":\"response.output_text.delta\",\"delta\":\"x\"",
		"[1]",
		"",
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		same(cases[i], 0);
	/* Read in place: a delta that is not a string is no text either way. */
	same("{\"type\":\"response.output_text.delta\",\"delta\":null}", 1);
	same("{\"type\":\"response.output_text.delta\",\"delta\":\"\\u0000nul\"}", 1);
}
END_TEST

/* ---- requests ------------------------------------------------------------------------- */

static json_t *load(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);

	ck_assert_msg(v != NULL, "test JSON: %s", jerr.text);
	return v;
}

static void assert_json_eq(const json_t *got, const char *want_text)
{
	json_t *want = load(want_text);
	char *g = json_dumps(got, JSON_COMPACT);
	char *w = json_dumps(want, JSON_COMPACT);

	ck_assert_str_eq(g, w);
	free(g);
	free(w);
	json_decref(want);
}

/* A conversation with a picture, a retried failure, an aborted turn, and a
 * reasoning item of this model to send back. */
static const char conversation[] =
	"[{\"role\":\"user\",\"content\":\"Hello\",\"timestamp\":1},"
	" {\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"Greet\","
	"   \"thinkingSignature\":\"{\\\"id\\\":\\\"rs_1\\\",\\\"type\\\":\\\"reasoning\\\",\\\"summary\\\":[],"
	"\\\"encrypted_content\\\":\\\"gAAA\\\"}\"},"
	"   {\"type\":\"text\",\"text\":\"Hi!\"}],"
	"  \"api\":\"openai-responses\",\"provider\":\"openai\",\"model\":\"gpt-5\",\"stopReason\":\"stop\"},"
	" {\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is this?\"},"
	"  {\"type\":\"image\",\"data\":\"iVBORw0KGgo=\",\"mimeType\":\"image/png\"}]},"
	" {\"role\":\"assistant\",\"content\":[],\"stopReason\":\"error\",\"errorMessage\":\"503\"},"
	" {\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"It is\"}],\"stopReason\":\"aborted\"},"
	" {\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"Other model's idea\","
	"   \"thinkingSignature\":\"EqQBCkYIBxgCKkBsig\"},{\"type\":\"thinking\",\"thinking\":\"  \"},"
	"   {\"type\":\"thinking\",\"thinking\":\"secret\",\"redacted\":true,\"thinkingSignature\":\"x\"},"
	"   {\"type\":\"text\",\"text\":\"A logo.\"}],"
	"  \"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":\"claude\",\"stopReason\":\"stop\"},"
	" {\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"\","
	"   \"thinkingSignature\":\"not json\"},{\"type\":\"text\",\"text\":\"\"}],"
	"  \"api\":\"openai-responses\",\"model\":\"gpt-5\",\"stopReason\":\"stop\"}]";

static const char input_items[] =
	"[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"Hello\"}]},"
	"{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[],\"encrypted_content\":\"gAAA\"},"
	"{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi!\","
	"\"annotations\":[]}],\"status\":\"completed\",\"id\":\"msg_1\"},"
	"{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"What is this?\"},"
	"{\"type\":\"input_image\",\"detail\":\"auto\",\"image_url\":\"data:image/png;base64,iVBORw0KGgo=\"}]},"
	"{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
	"\"text\":\"Other model's idea\",\"annotations\":[]}],\"status\":\"completed\",\"id\":\"msg_3\"},"
	"{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"A logo.\","
	"\"annotations\":[]}],\"status\":\"completed\",\"id\":\"msg_3\"}]";

/* pi asks for min(maxTokens, 32000). */
START_TEST(test_responses_request_caps_max_output_tokens_at_32000_like_pi)
{
	json_t *messages = load("[{\"role\":\"user\",\"content\":\"q\"}]");
	struct api_request req = { .messages = messages, .model = "gpt-5", .max_tokens = 128000 };
	json_t *body = api_responses_format.request(&req);

	ck_assert_int_eq(json_integer_value(json_object_get(body, "max_output_tokens")), 32000);
	json_decref(body);
	json_decref(messages);
}
END_TEST

START_TEST(test_responses_request_sends_the_conversation_as_input_items_like_pi)
{
	json_t *messages = load(conversation);
	struct api_request req = { .messages = messages, .model = "gpt-5", .max_tokens = 4096 };
	json_t *body = api_responses_format.request(&req);
	char *text;

	ck_assert_ptr_nonnull(body);
	assert_json_eq(json_object_get(body, "input"), input_items);
	json_object_del(body, "input");
	assert_json_eq(body, "{\"model\":\"gpt-5\",\"stream\":true,\"store\":false,\"max_output_tokens\":4096}");
	/* pi's key order. */
	json_object_set_new(body, "input", json_array());
	text = json_dumps(body, JSON_COMPACT);
	ck_assert_str_eq(text, "{\"model\":\"gpt-5\",\"stream\":true,\"store\":false,\"max_output_tokens\":4096,"
			       "\"input\":[]}");
	free(text);
	json_decref(body);
	json_decref(messages);
}
END_TEST

START_TEST(test_responses_request_refuses_no_model_or_a_non_array_context)
{
	json_t *obj = json_object();
	struct api_request a = { .messages = obj, .model = "m" };
	struct api_request b = { .messages = NULL, .model = "m" };
	struct api_request c = { .messages = obj, .model = NULL };

	ck_assert_ptr_null(api_responses_format.request(&a));
	ck_assert_ptr_null(api_responses_format.request(&b));
	ck_assert_ptr_null(api_azure_responses_format.request(&c));
	json_decref(obj);
}
END_TEST

/* The reasoning part of the body for a level and a model entry. */
static void assert_reasoning(const char *level, bool reasoning, const char *options, const char *want)
{
	json_t *messages = load("[{\"role\":\"user\",\"content\":\"q\"}]");
	json_t *opts = options != NULL ? load(options) : NULL;
	struct api_request req = { .messages = messages, .model = "gpt-5", .thinking_level = level,
				   .reasoning = reasoning, .options = opts };
	json_t *body = api_responses_format.request(&req);
	json_t *got = json_object();

	ck_assert_ptr_nonnull(body);
	if (json_object_get(body, "reasoning") != NULL)
		json_object_set(got, "reasoning", json_object_get(body, "reasoning"));
	if (json_object_get(body, "include") != NULL)
		json_object_set(got, "include", json_object_get(body, "include"));
	assert_json_eq(got, want);
	json_decref(got);
	json_decref(body);
	json_decref(opts);
	json_decref(messages);
}

#define SUMMARY(effort) "{\"reasoning\":{\"effort\":\"" effort "\",\"summary\":\"auto\"}," \
	"\"include\":[\"reasoning.encrypted_content\"]}"

START_TEST(test_responses_thinking_levels_map_to_effort_like_pi)
{
	assert_reasoning("minimal", true, NULL, SUMMARY("minimal"));
	assert_reasoning("low", true, NULL, SUMMARY("low"));
	assert_reasoning("medium", true, NULL, SUMMARY("medium"));
	assert_reasoning("high", true, NULL, SUMMARY("high"));
	/* xhigh only where the model's map names it; else the next level down. */
	assert_reasoning("xhigh", true, NULL, SUMMARY("high"));
	assert_reasoning("xhigh", true, "{\"models\":[{\"id\":\"gpt-5\",\"thinkingLevelMap\":{\"xhigh\":\"xhigh\"}}]}",
			 SUMMARY("xhigh"));
	/* Off: a reasoning model is told "none"; no summary, nothing included. */
	assert_reasoning("off", true, NULL, "{\"reasoning\":{\"effort\":\"none\"}}");
	assert_reasoning(NULL, true, NULL, "{\"reasoning\":{\"effort\":\"none\"}}");
	/* Not a reasoning model: no reasoning at all, whatever the level. */
	assert_reasoning("high", false, NULL, "{}");
}
END_TEST

START_TEST(test_responses_thinking_level_map_of_the_model_entry_is_used)
{
	const char *map = "{\"models\":[\"other\",{\"id\":\"gpt-5\",\"thinkingLevelMap\":"
			  "{\"off\":\"minimal\",\"minimal\":null,\"low\":\"lo\",\"xhigh\":\"max\"}}]}";

	assert_reasoning("off", true, map, "{\"reasoning\":{\"effort\":\"minimal\"}}");
	/* minimal is not supported: up to low, mapped. */
	assert_reasoning("minimal", true, map, SUMMARY("lo"));
	assert_reasoning("xhigh", true, map, SUMMARY("max"));
	assert_reasoning("medium", true, map, SUMMARY("medium"));
	/* "off" mapped to null: no reasoning sent when off. */
	assert_reasoning("off", true, "{\"models\":[{\"id\":\"gpt-5\",\"thinkingLevelMap\":{\"off\":null}}]}", "{}");
	/* Only off and xhigh unsupported above high: xhigh clamps down to high. */
	assert_reasoning("xhigh", true, "{\"models\":[{\"id\":\"gpt-5\",\"thinkingLevelMap\":{\"xhigh\":null}}]}",
			 SUMMARY("high"));
	/* An unknown level takes the first supported one. */
	assert_reasoning("turbo", true, NULL, "{\"reasoning\":{\"effort\":\"none\"}}");
}
END_TEST

START_TEST(test_azure_request_has_no_store_and_sends_its_own_reasoning_back)
{
	json_t *messages = load("[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":"
				"[{\"type\":\"thinking\",\"thinking\":\"t\",\"thinkingSignature\":\"{\\\"id\\\":\\\"rs_9\\\","
				"\\\"type\\\":\\\"reasoning\\\"}\"}],\"api\":\"azure-openai-responses\",\"model\":\"dep\","
				"\"stopReason\":\"stop\"}]");
	struct api_request req = { .messages = messages, .model = "dep", .thinking_level = "low", .reasoning = true };
	json_t *body = api_azure_responses_format.request(&req);

	assert_json_eq(body, "{\"model\":\"dep\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
			     "\"text\":\"q\"}]},{\"id\":\"rs_9\",\"type\":\"reasoning\"}],\"stream\":true,"
			     "\"reasoning\":{\"effort\":\"low\",\"summary\":\"auto\"},"
			     "\"include\":[\"reasoning.encrypted_content\"]}");
	json_decref(body);
	json_decref(messages);
}
END_TEST

static void assert_azure_url(const char *base, const char *options, const char *want)
{
	json_t *opts = options != NULL ? load(options) : NULL;
	struct api_request req = { .model = "m", .options = opts };
	char out[512];

	ck_assert_int_eq(api_azure_responses_format.url(&req, base, out, sizeof(out)), 0);
	ck_assert_str_eq(out, want);
	json_decref(opts);
}

START_TEST(test_azure_url_has_the_api_version_and_pis_base_path)
{
	assert_azure_url("https://res.openai.azure.com/openai/v1", NULL,
			 "https://res.openai.azure.com/openai/v1/responses?api-version=v1");
	assert_azure_url("https://res.openai.azure.com", NULL,
			 "https://res.openai.azure.com/openai/v1/responses?api-version=v1");
	assert_azure_url("https://res.cognitiveservices.azure.com/openai", "{\"apiVersion\":\"2025-04-01-preview\"}",
			 "https://res.cognitiveservices.azure.com/openai/v1/responses?api-version=2025-04-01-preview");
	assert_azure_url("http://127.0.0.1:8080/openai/v1", "{\"apiVersion\":\"preview\"}",
			 "http://127.0.0.1:8080/openai/v1/responses?api-version=preview");
	assert_azure_url("http://proxy.example/azure", NULL, "http://proxy.example/azure/responses?api-version=v1");
}
END_TEST

START_TEST(test_azure_url_that_does_not_fit_is_refused)
{
	struct api_request req = { .model = "m" };
	char out[40];

	ck_assert_int_eq(api_azure_responses_format.url(&req, "https://res.openai.azure.com/openai/v1", out,
							sizeof(out)), -1);
}
END_TEST

START_TEST(test_responses_format_tables_give_names_paths_and_key_headers)
{
	ck_assert_ptr_eq(api_formats_find("openai-responses"), &api_responses_format);
	ck_assert_ptr_eq(api_formats_find("azure-openai-responses"), &api_azure_responses_format);
	ck_assert_str_eq(api_responses_format.path, "/responses");
	ck_assert_str_eq(api_responses_format.key_header, "Authorization");
	ck_assert_str_eq(api_responses_format.key_prefix, "Bearer ");
	ck_assert(api_responses_format.url == NULL);
	ck_assert_str_eq(api_azure_responses_format.key_header, "api-key");
	ck_assert_str_eq(api_azure_responses_format.key_prefix, "");
	ck_assert(api_azure_responses_format.url != NULL);
}
END_TEST

/* HTTP error bodies are OpenAI's shape. */
START_TEST(test_responses_http_error_body_gives_status_and_message)
{
	char out[512];
	const char body[] = "{\"error\":{\"message\":\"You exceeded your current quota, please check your plan "
			    "and billing details.\",\"type\":\"insufficient_quota\",\"param\":null,"
			    "\"code\":\"insufficient_quota\"}}";

	api_http_error(429, body, sizeof(body) - 1, out, sizeof(out));
	ck_assert_str_eq(out, "429 You exceeded your current quota, please check your plan and billing details.");
}
END_TEST

Suite *api_responses_suite(void)
{
	Suite *s = suite_create("api_responses");
	TCase *stream = tcase_create("stream");
	TCase *think = tcase_create("thinking");
	TCase *quick = tcase_create("in place");
	TCase *req = tcase_create("requests");

	tcase_set_timeout(stream, 60);
	tcase_add_test(stream, test_responses_stream_gives_text_usage_and_stop);
	tcase_add_test(stream, test_a_cut_after_a_function_call_item_began_says_a_tool_call_began);
	tcase_add_test(stream, test_responses_hostile_usage_counts_are_ignored_or_saturated);
	tcase_add_test(stream, test_responses_stream_split_at_every_byte_gives_the_same_result);
	tcase_add_test(stream, test_responses_stream_cut_anywhere_before_completed_is_truncated);
	tcase_add_test(stream, test_responses_completed_status_maps_like_pi);
	tcase_add_test(stream, test_responses_function_call_in_the_output_is_tool_use);
	tcase_add_test(stream, test_responses_incomplete_for_max_output_tokens_is_length);
	tcase_add_test(stream, test_responses_incomplete_for_content_filter_is_a_content_filter_error);
	tcase_add_test(stream, test_responses_failed_carries_the_error_code_first);
	tcase_add_test(stream, test_responses_failed_without_error_is_worded_like_pi);
	tcase_add_test(stream, test_responses_error_event_fails_with_code_and_message);
	tcase_add_test(stream, test_responses_chunk_with_an_error_object_fails);
	tcase_add_test(stream, test_responses_malformed_data_fails_as_malformed);
	tcase_add_test(stream, test_responses_events_after_completed_are_ignored);
	tcase_add_test(stream, test_responses_refusal_delta_is_text);
	tcase_add_test(stream, test_responses_done_marker_ends_the_stream_truncated_unless_completed);
	tcase_add_test(stream, test_responses_a_numeric_error_code_leads_the_text);
	tcase_add_test(stream, test_responses_http_error_body_gives_status_and_message);
	suite_add_tcase(s, stream);
	tcase_add_test(think, test_responses_reasoning_summary_streams_as_a_thinking_block);
	tcase_add_test(think, test_responses_reasoning_without_summary_is_an_empty_signed_block);
	tcase_add_test(think, test_responses_reasoning_text_deltas_are_thinking_too);
	tcase_add_test(think, test_responses_thinking_is_dropped_for_a_sink_without_it);
	tcase_add_test(think, test_responses_truncated_reasoning_closes_the_block_unsigned);
	suite_add_tcase(s, think);
	tcase_add_test(quick, test_responses_text_delta_is_read_in_place_to_the_same_result);
	tcase_add_test(quick, test_responses_anything_else_goes_to_jansson_with_the_same_result);
	suite_add_tcase(s, quick);
	tcase_add_test(req, test_responses_request_sends_the_conversation_as_input_items_like_pi);
	tcase_add_test(req, test_responses_request_caps_max_output_tokens_at_32000_like_pi);
	tcase_add_test(req, test_responses_request_refuses_no_model_or_a_non_array_context);
	tcase_add_test(req, test_responses_thinking_levels_map_to_effort_like_pi);
	tcase_add_test(req, test_responses_thinking_level_map_of_the_model_entry_is_used);
	tcase_add_test(req, test_azure_request_has_no_store_and_sends_its_own_reasoning_back);
	tcase_add_test(req, test_azure_url_has_the_api_version_and_pis_base_path);
	tcase_add_test(req, test_azure_url_that_does_not_fit_is_refused);
	tcase_add_test(req, test_responses_format_tables_give_names_paths_and_key_headers);
	suite_add_tcase(s, req);
	return s;
}

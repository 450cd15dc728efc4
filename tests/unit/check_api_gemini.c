/* The Gemini format (provider/http/api_gemini.c): requests as pi builds
 * them, the URL, the stream decoder and its quick reader. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/number.h"
#include "provider/http/api.h"
#include "provider/http/api_formats.h"
#include "provider/http/api_gemini.h"
#include "support/decoded.h"
#include "support/recsink.h"

Suite *api_gemini_suite(void);

/* ---- helpers --------------------------------------------------------------- */

static json_t *load(const char *text)
{
	json_error_t err;
	json_t *v = json_loads(text, 0, &err);

	ck_assert_msg(v != NULL, "bad test JSON: %s", err.text);
	return v;
}

/* v (stolen) equals the JSON text want. */
static void assert_json_eq(json_t *v, const char *want)
{
	json_t *w = load(want);
	char *got = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);

	ck_assert_msg(json_equal(v, w), "got %s\nwant %s", got ? got : "NULL", want);
	free(got);
	json_decref(w);
	json_decref(v);
}

/* The shared harness (support/decoded.h), with the sink's order checked. */
static struct decoded decode_n(const char *body, size_t chunk)
{
	struct decoded o = decoded_run(&api_gemini_format, body, strlen(body), 0, chunk, true);

	ck_assert_msg(o.finishes == 0, "the decoder must leave finish() to the provider");
	ck_assert_msg(o.misorder == NULL, "%s", o.misorder);
	return o;
}

static struct decoded decode(const char *body)
{
	return decode_n(body, 0);
}

#define CHUNK(parts) \
	"data: {\"candidates\":[{\"content\":{\"parts\":[" parts "],\"role\":\"model\"},\"index\":0}]," \
	"\"usageMetadata\":{\"promptTokenCount\":9,\"totalTokenCount\":9},\"modelVersion\":" \
	"\"gemini-2.5-flash\",\"responseId\":\"r1\"}\r\n\r\n"
#define FINISH(reason, usage) \
	"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"}," \
	"\"finishReason\":\"" reason "\",\"index\":0}],\"usageMetadata\":" usage "}\r\n\r\n"
#define USAGE "{\"promptTokenCount\":40,\"candidatesTokenCount\":6,\"totalTokenCount\":51," \
	"\"thoughtsTokenCount\":5,\"cachedContentTokenCount\":10}"

/* ---- the stream -------------------------------------------------------------- */

START_TEST(test_text_chunks_stream_as_one_text_block_with_pi_s_usage)
{
	static const char body[] = CHUNK("{\"text\":\"Hel\"}") CHUNK("{\"text\":\"lo\"}") FINISH("STOP", USAGE);
	struct decoded o = decode(body);

	ck_assert_str_eq(o.log, "start;text_start;delta(Hel);delta(lo);text_end;");
	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert_str_eq(o.error, "");
	/* input = prompt - cached, output = candidates + thoughts, cacheRead =
	 * cached, the total as reported */
	ck_assert_int_eq(o.input_tokens, 30);
	ck_assert_int_eq(o.output_tokens, 11);
	ck_assert_int_eq(o.cache_read_tokens, 10);
	ck_assert_int_eq(o.cache_write_tokens, 0);
	ck_assert_int_eq(o.total_tokens, 51);
	free(o.log);
}
END_TEST

START_TEST(test_hostile_usage_counts_are_ignored_or_saturated)
{
	struct decoded o = decode(CHUNK("{\"text\":\"x\"}") FINISH("STOP",
		"{\"promptTokenCount\":40,\"cachedContentTokenCount\":-10,\"candidatesTokenCount\":6,"
		"\"thoughtsTokenCount\":2.5,\"totalTokenCount\":\"51\"}"));

	ck_assert_int_eq(o.stop, STOP_STOP);
	ck_assert_int_eq(o.input_tokens, 40);
	ck_assert_int_eq(o.output_tokens, 6);
	ck_assert_int_eq(o.cache_read_tokens, 0);
	ck_assert_int_eq(o.total_tokens, 0);
	free(o.log);
	/* More cached than prompted: the input is 0; sums saturate. */
	o = decode(CHUNK("{\"text\":\"x\"}") FINISH("STOP",
		"{\"promptTokenCount\":4,\"cachedContentTokenCount\":1e300,"
		"\"candidatesTokenCount\":9223372036854775807,\"thoughtsTokenCount\":9007199254740991,"
		"\"totalTokenCount\":1e300}"));
	ck_assert_int_eq(o.input_tokens, 0);
	ck_assert_int_eq(o.cache_read_tokens, NUMBER_MAX);
	ck_assert_int_eq(o.output_tokens, NUMBER_MAX);
	ck_assert_int_eq(o.total_tokens, NUMBER_MAX);
	free(o.log);
}
END_TEST

START_TEST(test_the_stream_split_at_every_size_decodes_the_same)
{
	static const char body[] = CHUNK("{\"text\":\"a\"}") CHUNK("{\"text\":\"\\u00e9 b\"}")
		FINISH("STOP", USAGE);

	for (size_t n = 1; n < 40; n++) {
		struct decoded o = decode_n(body, n);

		ck_assert_msg(strcmp(o.log, "start;text_start;delta(a);delta(\xc3\xa9 b);text_end;") == 0,
			      "split %zu: %s", n, o.log);
		ck_assert_int_eq(o.stop, STOP_STOP);
		free(o.log);
	}
}
END_TEST

START_TEST(test_a_stream_without_finish_reason_is_truncated)
{
	struct decoded o = decode(CHUNK("{\"text\":\"partial\"}"));

	ck_assert_str_eq(o.log, "start;text_start;delta(partial);text_end;");
	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, API_TRUNCATED);
	/* the running counts of an unfinished answer are not its usage */
	ck_assert_int_eq(o.input_tokens, 0);
	free(o.log);
}
END_TEST

/* A functionCall part is not kept, but a cut after it says a call began. */
START_TEST(test_a_cut_after_a_function_call_part_says_a_tool_call_began)
{
	struct decoded o = decode(CHUNK("{\"text\":\"Let me look.\"}")
				  CHUNK("{\"functionCall\":{\"name\":\"read\",\"args\":{\"path\":\"a\"}}}"));

	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert(o.tool_call_begun);
	free(o.log);
	o = decode(CHUNK("{\"text\":\"partial\"}"));
	ck_assert(!o.tool_call_begun);
	free(o.log);
}
END_TEST

START_TEST(test_max_tokens_is_length_and_other_reasons_are_errors)
{
	static const struct {
		const char *reason;
		enum stop_reason stop;
		const char *error;
	} cases[] = {
		{ "MAX_TOKENS", STOP_LENGTH, "" },
		{ "SAFETY", STOP_ERROR, "Gemini stopped the answer (finish reason: SAFETY): the response "
					"was blocked by Gemini's safety filters" },
		{ "RECITATION", STOP_ERROR, "Gemini stopped the answer (finish reason: RECITATION): the "
					    "response was blocked for reciting its training data" },
		{ "OTHER", STOP_ERROR, "Gemini stopped the answer (finish reason: OTHER): the answer is "
				       "not usable" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char body[512];
		struct decoded o;

		snprintf(body, sizeof(body), "%s"
			 "data: {\"candidates\":[{\"content\":{\"parts\":[]},\"finishReason\":\"%s\"}]}\n\n",
			 CHUNK("{\"text\":\"x\"}"), cases[i].reason);
		o = decode(body);
		ck_assert_msg(o.stop == cases[i].stop, "%s: stop %d", cases[i].reason, (int)o.stop);
		ck_assert_str_eq(o.error, cases[i].error);
		free(o.log);
	}
}
END_TEST

START_TEST(test_a_blocked_prompt_ends_the_answer_as_an_error)
{
	struct decoded o = decode("data: {\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"},"
				  "\"usageMetadata\":{\"promptTokenCount\":7,\"totalTokenCount\":7}}\n\n");

	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, "Gemini blocked the prompt (block reason: PROHIBITED_CONTENT): the "
				  "response was blocked for prohibited content");
	ck_assert_int_eq(o.input_tokens, 7);
	free(o.log);
}
END_TEST

START_TEST(test_thought_parts_are_a_thinking_block_closed_by_their_signature)
{
	static const char body[] =
		CHUNK("{\"text\":\"let me \",\"thought\":true}")
		CHUNK("{\"text\":\"see\",\"thought\":true,\"thoughtSignature\":\"c2ln\"}")
		CHUNK("{\"text\":\"Answer\"}") FINISH("STOP", USAGE);
	struct decoded o = decode(body);

	ck_assert_str_eq(o.log, "start;thinking_start;thinking_delta:let me ;thinking_delta:see;"
				"thinking_end:c2ln;text_start;delta(Answer);text_end;");
	ck_assert_int_eq(o.stop, STOP_STOP);
	free(o.log);
}
END_TEST

START_TEST(test_unsigned_thoughts_close_at_the_text_and_a_text_signature_is_dropped)
{
	static const char body[] =
		CHUNK("{\"text\":\"hmm\",\"thought\":true},{\"text\":\"A\",\"thoughtSignature\":\"c2ln\"}")
		FINISH("STOP", USAGE);
	struct decoded o = decode(body);

	ck_assert_str_eq(o.log, "start;thinking_start;thinking_delta:hmm;thinking_end:;"
				"text_start;delta(A);text_end;");
	free(o.log);
}
END_TEST

/* pi reads a part with no text as no content, its signature too. */
START_TEST(test_a_signature_only_part_is_no_content)
{
	static const char body[] = CHUNK("{\"text\":\"hmm\",\"thought\":true}")
		CHUNK("{\"thoughtSignature\":\"c2ln\"}") FINISH("STOP", USAGE);
	struct decoded o = decode(body);

	ck_assert_str_eq(o.log, "start;thinking_start;thinking_delta:hmm;thinking_end:;");
	free(o.log);
}
END_TEST

/* Some backends sign only the first thought delta: the block stays one,
 * and keeps the signature (pi's retainThoughtSignature); a later one
 * replaces it. */
START_TEST(test_thoughts_stay_one_block_keeping_the_latest_signature)
{
	static const char body[] =
		CHUNK("{\"text\":\"a\",\"thought\":true,\"thoughtSignature\":\"czE=\"}")
		CHUNK("{\"text\":\"b\",\"thought\":true}")
		CHUNK("{\"text\":\"c\",\"thought\":true,\"thoughtSignature\":\"czI=\"}")
		CHUNK("{\"text\":\"Answer\"}") FINISH("STOP", USAGE);
	struct decoded o = decode(body);

	ck_assert_str_eq(o.log, "start;thinking_start;thinking_delta:a;thinking_delta:b;"
				"thinking_delta:c;thinking_end:czI=;text_start;delta(Answer);text_end;");
	free(o.log);
}
END_TEST

START_TEST(test_an_error_object_fails_with_code_status_and_message)
{
	struct decoded o = decode(CHUNK("{\"text\":\"a\"}")
		"data: {\"error\":{\"code\":429,\"message\":\"Resource exhausted.\",\"status\":"
		"\"RESOURCE_EXHAUSTED\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc."
		"RetryInfo\",\"retryDelay\":\"3s\"}]}}\n\n" CHUNK("{\"text\":\"never\"}"));

	ck_assert_str_eq(o.log, "start;text_start;delta(a);text_end;");
	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_str_eq(o.error, "429 RESOURCE_EXHAUSTED: Resource exhausted.");
	ck_assert(o.error_object);
	free(o.log);
}
END_TEST

START_TEST(test_error_objects_without_a_code_or_status_still_fail)
{
	static const struct {
		const char *data, *error;
	} cases[] = {
		{ "{\"error\":{\"code\":500,\"message\":\"boom\"}}", "500 boom" },
		{ "{\"error\":{\"status\":\"INTERNAL\",\"message\":\"boom\"}}", "INTERNAL: boom" },
		{ "{\"error\":{\"status\":\"INTERNAL\"}}", "INTERNAL: {\"status\":\"INTERNAL\"}" },
		{ "{\"error\":\"plain\"}", "plain" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char body[256];
		struct decoded o;

		snprintf(body, sizeof(body), "data: %s\n\n", cases[i].data);
		o = decode(body);
		ck_assert_int_eq(o.stop, STOP_ERROR);
		ck_assert_str_eq(o.error, cases[i].error);
		ck_assert(o.error_object);
		free(o.log);
	}
}
END_TEST

START_TEST(test_malformed_data_fails_and_is_no_error_object)
{
	struct decoded o = decode("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\n\n");

	ck_assert_int_eq(o.stop, STOP_ERROR);
	ck_assert_msg(strncmp(o.error, "malformed stream: ", 18) == 0, "%s", o.error);
	ck_assert(!o.error_object);
	free(o.log);
}
END_TEST

START_TEST(test_parts_after_the_finish_are_ignored)
{
	struct decoded o = decode(CHUNK("{\"text\":\"a\"}") FINISH("STOP", USAGE) CHUNK("{\"text\":\"late\"}"));

	ck_assert_str_eq(o.log, "start;text_start;delta(a);text_end;");
	ck_assert_int_eq(o.stop, STOP_STOP);
	free(o.log);
}
END_TEST

/* ---- the quick reader ---------------------------------------------------------- */

START_TEST(test_quick_reads_the_everyday_text_chunk_in_place)
{
	static const char chunk[] =
		"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi \\\"x\\\"\"}],\"role\":\"model\"},"
		"\"index\":0,\"finishReason\":null}],\"usageMetadata\":{\"promptTokenCount\":9},"
		"\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"r\"}";
	struct api_quick q;

	ck_assert_int_eq(api_gemini_quick(chunk, strlen(chunk), &q), 1);
	ck_assert_uint_eq(q.content_len, 6);
	ck_assert(memcmp(q.content, "hi \"x\"", 6) == 0);
	ck_assert_ptr_null(q.reason);
}
END_TEST

START_TEST(test_quick_leaves_everything_else_to_jansson)
{
	static const char *const chunks[] = {
		/* a finish, with its usage */
		"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]},\"finishReason\":\"STOP\"}]}",
		/* thoughts, signatures, two parts, two candidates, no parts */
		"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\",\"thought\":true}]}}]}",
		"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\",\"thoughtSignature\":\"s\"}]}}]}",
		"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"},{\"text\":\"b\"}]}}]}",
		"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}},{\"content\":{}}]}",
		"{\"candidates\":[{\"content\":{\"parts\":[]}}]}",
		"{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{}}]}}]}",
		/* errors, a blocked prompt, usage alone, no candidates */
		"{\"error\":{\"code\":500}}",
		"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}],\"promptFeedback\":{}}",
		"{\"usageMetadata\":{\"promptTokenCount\":1}}",
		/* duplicates and a text that is no string */
		"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\",\"text\":\"b\"}]}}]}",
		"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":1}]}}]}",
		"[1]",
	};

	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		struct api_quick q;

		ck_assert_msg(api_gemini_quick(chunks[i], strlen(chunks[i]), &q) == 0, "chunk %zu", i);
	}
}
END_TEST

/* ---- requests ---------------------------------------------------------------------- */

START_TEST(test_request_has_contents_with_role_model_and_inline_images)
{
	json_t *messages = load(
		"[{\"role\":\"user\",\"content\":\"hi\"},"
		" {\"role\":\"assistant\",\"api\":\"google-generative-ai\",\"model\":\"m\","
		"  \"content\":[{\"type\":\"text\",\"text\":\"  \"},{\"type\":\"text\",\"text\":\"yo\"}],"
		"  \"stopReason\":\"stop\"},"
		" {\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"cut\"}],"
		"  \"stopReason\":\"error\"},"
		" {\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"see\"},"
		"  {\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"},"
		"  {\"type\":\"text\",\"text\":\"\"}]}]");
	struct api_request req = { .messages = messages, .model = "m", .max_tokens = 100 };

	assert_json_eq(api_gemini_request(&req),
		       "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]},"
		       "{\"role\":\"model\",\"parts\":[{\"text\":\"yo\"}]},"
		       "{\"role\":\"user\",\"parts\":[{\"text\":\"see\"},"
		       "{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"AAAA\"}}]}],"
		       "\"generationConfig\":{\"maxOutputTokens\":100}}");
	json_decref(messages);
}
END_TEST

START_TEST(test_thinking_blocks_go_back_as_thoughts_only_to_the_same_model)
{
	json_t *messages = load(
		"[{\"role\":\"user\",\"content\":\"q\"},"
		" {\"role\":\"assistant\",\"api\":\"google-generative-ai\",\"model\":\"gemini-2.5-pro\","
		"  \"content\":[{\"type\":\"thinking\",\"thinking\":\"hm\",\"thinkingSignature\":\"c2ln\"},"
		"   {\"type\":\"thinking\",\"thinking\":\"bad sig\",\"thinkingSignature\":\"not base64!\"},"
		"   {\"type\":\"thinking\",\"thinking\":\"RW5jcnlwdGVk\",\"redacted\":true},"
		"   {\"type\":\"text\",\"text\":\"a\"}],\"stopReason\":\"stop\"},"
		" {\"role\":\"assistant\",\"api\":\"google-generative-ai\",\"model\":\"other\","
		"  \"content\":[{\"type\":\"thinking\",\"thinking\":\"theirs\",\"thinkingSignature\":\"c2ln\"}],"
		"  \"stopReason\":\"stop\"}]");
	struct api_request req = { .messages = messages, .model = "gemini-2.5-pro" };

	assert_json_eq(api_gemini_request(&req),
		       "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"q\"}]},"
		       "{\"role\":\"model\",\"parts\":[{\"thought\":true,\"text\":\"hm\",\"thoughtSignature\":\"c2ln\"},"
		       "{\"thought\":true,\"text\":\"bad sig\"},{\"text\":\"a\"}]},"
		       "{\"role\":\"model\",\"parts\":[{\"text\":\"theirs\"}]}]}");
	json_decref(messages);
}
END_TEST

START_TEST(test_max_output_tokens_is_capped_as_pi_caps_it)
{
	json_t *messages = load("[{\"role\":\"user\",\"content\":\"q\"}]");
	struct api_request req = { .messages = messages, .model = "m", .max_tokens = 65536 };

	assert_json_eq(api_gemini_request(&req),
		       "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"q\"}]}],"
		       "\"generationConfig\":{\"maxOutputTokens\":32000}}");
	req.model = NULL;
	ck_assert_ptr_null(api_gemini_request(&req));
	json_decref(messages);
}
END_TEST

START_TEST(test_thinking_config_maps_levels_as_pi_does)
{
	static const struct {
		const char *model, *level;
		bool reasoning;
		const char *want; /* NULL: none */
	} cases[] = {
		{ "gemini-2.5-flash", "off", false, NULL },
		{ "gemini-2.5-flash", "high", false, NULL },
		{ "gemini-2.5-flash", NULL, true, "{\"thinkingBudget\":0}" },
		{ "gemini-2.5-flash", "off", true, "{\"thinkingBudget\":0}" },
		{ "gemini-2.5-flash", "minimal", true, "{\"includeThoughts\":true,\"thinkingBudget\":128}" },
		{ "gemini-2.5-flash", "high", true, "{\"includeThoughts\":true,\"thinkingBudget\":24576}" },
		{ "gemini-2.5-flash", "xhigh", true, "{\"includeThoughts\":true,\"thinkingBudget\":24576}" },
		{ "gemini-2.5-flash-lite", "minimal", true, "{\"includeThoughts\":true,\"thinkingBudget\":512}" },
		{ "gemini-2.5-pro", "medium", true, "{\"includeThoughts\":true,\"thinkingBudget\":8192}" },
		{ "gemini-2.5-pro", "high", true, "{\"includeThoughts\":true,\"thinkingBudget\":32768}" },
		{ "gemini-2.0-flash-thinking", "low", true, "{\"includeThoughts\":true,\"thinkingBudget\":-1}" },
		{ "gemini-3-pro-preview", "low", true, "{\"includeThoughts\":true,\"thinkingLevel\":\"LOW\"}" },
		{ "gemini-3.1-pro-preview", "medium", true,
		  "{\"includeThoughts\":true,\"thinkingLevel\":\"HIGH\"}" },
		{ "gemini-3-pro-preview", "off", true, "{\"thinkingLevel\":\"LOW\"}" },
		{ "gemini-3-flash-preview", "medium", true,
		  "{\"includeThoughts\":true,\"thinkingLevel\":\"MEDIUM\"}" },
		{ "Gemini-3-Flash", "off", true, "{\"thinkingLevel\":\"MINIMAL\"}" },
		{ "gemma-4-27b", "low", true, "{\"includeThoughts\":true,\"thinkingLevel\":\"MINIMAL\"}" },
		{ "gemma4", "high", true, "{\"includeThoughts\":true,\"thinkingLevel\":\"HIGH\"}" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *got = api_gemini_thinking(cases[i].model, cases[i].level, cases[i].reasoning);

		if (cases[i].want == NULL) {
			ck_assert_msg(got == NULL, "case %zu", i);
			continue;
		}
		ck_assert_msg(got != NULL, "case %zu", i);
		assert_json_eq(got, cases[i].want);
	}
}
END_TEST

START_TEST(test_the_url_holds_the_escaped_model)
{
	char url[256];
	struct api_request req = { .model = "gemini-2.5-flash" };

	ck_assert_int_eq(api_gemini_url(&req, "https://h/v1beta", url, sizeof(url)), 0);
	ck_assert_str_eq(url, "https://h/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
	req.model = "a b/c?d";
	ck_assert_int_eq(api_gemini_url(&req, "https://h", url, sizeof(url)), 0);
	ck_assert_str_eq(url, "https://h/models/a%20b%2Fc%3Fd:streamGenerateContent?alt=sse");
	req.model = "tunedModels/my-model";
	ck_assert_int_eq(api_gemini_url(&req, "https://h", url, sizeof(url)), 0);
	ck_assert_str_eq(url, "https://h/tunedModels/my-model:streamGenerateContent?alt=sse");
	req.model = "gemini-2.5-flash";
	ck_assert_int_eq(api_gemini_url(&req, "https://h", url, 40), -1);
	ck_assert_int_eq(api_gemini_url(&req, "https://h", url, 50), -1);
	req.model = NULL;
	ck_assert_int_eq(api_gemini_url(&req, "https://h", url, sizeof(url)), -1);
}
END_TEST

START_TEST(test_the_format_is_found_by_pi_s_name_with_its_key_header)
{
	const struct api_format *f = api_formats_find("google-generative-ai");

	ck_assert_ptr_eq(f, &api_gemini_format);
	ck_assert_str_eq(f->key_header, "x-goog-api-key");
	ck_assert_str_eq(f->key_prefix, "");
	ck_assert(f->url != NULL);
}
END_TEST

Suite *api_gemini_suite(void)
{
	Suite *s = suite_create("api_gemini");
	TCase *tc = tcase_create("stream");

	tcase_add_test(tc, test_text_chunks_stream_as_one_text_block_with_pi_s_usage);
	tcase_add_test(tc, test_the_stream_split_at_every_size_decodes_the_same);
	tcase_add_test(tc, test_a_stream_without_finish_reason_is_truncated);
	tcase_add_test(tc, test_a_cut_after_a_function_call_part_says_a_tool_call_began);
	tcase_add_test(tc, test_max_tokens_is_length_and_other_reasons_are_errors);
	tcase_add_test(tc, test_a_blocked_prompt_ends_the_answer_as_an_error);
	tcase_add_test(tc, test_hostile_usage_counts_are_ignored_or_saturated);
	tcase_add_test(tc, test_thought_parts_are_a_thinking_block_closed_by_their_signature);
	tcase_add_test(tc, test_unsigned_thoughts_close_at_the_text_and_a_text_signature_is_dropped);
	tcase_add_test(tc, test_a_signature_only_part_is_no_content);
	tcase_add_test(tc, test_thoughts_stay_one_block_keeping_the_latest_signature);
	tcase_add_test(tc, test_an_error_object_fails_with_code_status_and_message);
	tcase_add_test(tc, test_error_objects_without_a_code_or_status_still_fail);
	tcase_add_test(tc, test_malformed_data_fails_and_is_no_error_object);
	tcase_add_test(tc, test_parts_after_the_finish_are_ignored);
	tcase_add_test(tc, test_quick_reads_the_everyday_text_chunk_in_place);
	tcase_add_test(tc, test_quick_leaves_everything_else_to_jansson);
	suite_add_tcase(s, tc);
	tc = tcase_create("request");
	tcase_add_test(tc, test_request_has_contents_with_role_model_and_inline_images);
	tcase_add_test(tc, test_thinking_blocks_go_back_as_thoughts_only_to_the_same_model);
	tcase_add_test(tc, test_max_output_tokens_is_capped_as_pi_caps_it);
	tcase_add_test(tc, test_thinking_config_maps_levels_as_pi_does);
	tcase_add_test(tc, test_the_url_holds_the_escaped_model);
	tcase_add_test(tc, test_the_format_is_found_by_pi_s_name_with_its_key_header);
	suite_add_tcase(s, tc);
	return s;
}

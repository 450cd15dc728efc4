#include "core/continuation.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

Suite *continuation_suite(void);

/* What the filter shows of next after kept, fed in chunks of `step` bytes
 * (0: all at once). */
struct shown {
	char text[16384];
	size_t len;
	int calls;
};

static void collect(void *ctx, const char *s, size_t n)
{
	struct shown *out = ctx;

	ck_assert(out->len + n < sizeof(out->text));
	memcpy(out->text + out->len, s, n);
	out->len += n;
	out->text[out->len] = '\0';
	out->calls++;
}

static json_t *cut_message(const char *text)
{
	return json_pack("{s:s, s:[{s:s, s:s}], s:s}", "role", "assistant", "content", "type",
			 "text", "text", text, "stopReason", "error");
}

static void shown_after(const char *kept, const char *next, size_t step, struct shown *out)
{
	struct continuation c;
	json_t *cut = cut_message(kept);
	size_t n = strlen(next);

	memset(out, 0, sizeof(*out));
	continuation_init(&c);
	ck_assert_int_eq(continuation_plan(&c, cut, PROVIDER_CONTINUE_TURN), CONTINUATION_TURN);
	continuation_begin(&c);
	if (step == 0)
		step = n ? n : 1;
	for (size_t i = 0; i < n; i += step)
		continuation_feed(&c, next + i, i + step > n ? n - i : step, collect, out);
	continuation_flush(&c, collect, out);
	continuation_end(&c);
	continuation_release(&c);
	json_decref(cut);
}

static void shows(const char *kept, const char *next, const char *want)
{
	static const size_t steps[] = { 0, 1, 3, 7 };

	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct shown out;

		shown_after(kept, next, steps[k], &out);
		ck_assert_msg(strcmp(out.text, want) == 0, "kept \"%s\", next \"%s\" (chunks of %zu): "
			      "shown \"%s\", want \"%s\"", kept, next, steps[k], out.text, want);
	}
}

START_TEST(overlap_an_exact_repeat_of_the_last_sentence_is_dropped)
{
	shows("The sky is blue. Grass is green because of chlorophyll",
	      "Grass is green because of chlorophyll, which absorbs red light.",
	      ", which absorbs red light.");
}
END_TEST

START_TEST(overlap_a_repeat_of_the_whole_kept_text_is_dropped)
{
	shows("Hello world, this is", "Hello world, this is a test.", " a test.");
}
END_TEST

START_TEST(overlap_whitespace_differences_still_match)
{
	shows("one two\nthree four", "three  \t four five", " five");
	shows("alpha beta  gamma", "\n beta gamma delta", " delta");
}
END_TEST

START_TEST(overlap_a_restarted_partial_word_is_dropped)
{
	shows("The quick bro", "brown fox jumps", "wn fox jumps");
	shows("The quick bro", "The quick brown fox", "wn fox");
}
END_TEST

START_TEST(overlap_a_repeated_word_after_a_word_boundary_cut_is_kept)
{
	/* The cut fell after "the"; " the river" opens with a space, so it is
	 * not the model restarting a split word ("that that" is English). */
	shows("and then the", " the river", " the river");
	shows("I knew that", " that was it", " that was it");
}
END_TEST

START_TEST(overlap_none_keeps_every_byte)
{
	shows("The quick brown", " fox jumps over", " fox jumps over");
	shows("First part.", "Second part.", "Second part.");
}
END_TEST

START_TEST(overlap_a_short_coincidental_word_after_a_space_is_kept)
{
	/* "the" could be a repeat, or the start of "the end": kept. */
	shows("we went to the ", "the end", "the end");
}
END_TEST

START_TEST(overlap_the_whitespace_already_shown_is_not_shown_twice)
{
	shows("Hello world. ", " Next sentence.", "Next sentence.");
	shows("Hello world.", " Next sentence.", " Next sentence.");
}
END_TEST

START_TEST(overlap_a_repeat_that_diverges_is_not_dropped)
{
	/* It starts like the kept sentence, then says something else: the
	 * shorter word-aligned repeats do not match either, all is shown. */
	shows("It rains in Spain", "It rains in Paris too.", "It rains in Paris too.");
}
END_TEST

START_TEST(overlap_longer_than_the_window_is_shown)
{
	char kept[CONTINUATION_WINDOW * 2 + 64], next[sizeof(kept) + 8];
	struct shown out;
	size_t n = 0;

	while (n + 6 < CONTINUATION_WINDOW + 500) {
		memcpy(kept + n, "word ", 5);
		n += 5;
	}
	memcpy(kept + n, "end", 4);
	/* next repeats all of kept (longer than the window) and goes on: the
	 * repeat begins before the window, so only a suffix inside it could
	 * match, and none does at the start of next. */
	snprintf(next, sizeof(next), "%s tail", kept);
	kept[0] = 'W';
	next[0] = 'W';
	shown_after(kept, next, 0, &out);
	ck_assert_uint_gt(out.len, 0);
	ck_assert_str_eq(out.text + out.len - 5, " tail");
}
END_TEST

START_TEST(overlap_inside_the_window_of_a_long_answer_is_dropped)
{
	char kept[8192], next[4096];
	size_t n = 0;

	while (n + 16 < 6000) {
		memcpy(kept + n, "filler text ", 12);
		n += 12;
	}
	strcpy(kept + n, "The final sentence here is being cut");
	strcpy(next, "The final sentence here is being cut short. Done.");
	shows(kept, next, " short. Done.");
}
END_TEST

START_TEST(overlap_unicode_repeats_are_dropped_on_character_boundaries)
{
	shows("Straße über Köln — 東京は日本の首都で", "東京は日本の首都で、大きい都市です。",
	      "、大きい都市です。");
	shows("Emoji 🎉 party ti", "ti 🎉me", " 🎉me");
	shows("Привет мир как", "мир как дела", " дела");
}
END_TEST

START_TEST(overlap_a_repeat_ending_in_the_space_the_kept_text_ends_with_shows_one_space)
{
	/* A CLI says the last words again with the space after them: the
	 * kept text shows that space already. */
	shows("could not find libfoo, which the ", "find libfoo, which the Makefile names",
	      "Makefile names");
	/* Text that is not a repeat keeps its own spacing. */
	shows("which the ", "  Makefile", "Makefile");
}
END_TEST

START_TEST(overlap_waits_for_enough_text_then_decides)
{
	/* "Gra" could be the start of a repeat: nothing shown yet. */
	ck_assert_int_eq(continuation_overlap("Grass is green", 14, "Gra", 3, false), -1);
	/* At the end it is decided: no whole repeat, nothing dropped. */
	ck_assert_int_eq(continuation_overlap("Grass is green", 14, "Gra", 3, true), 0);
	ck_assert_int_eq(continuation_overlap("Grass is green", 14, "Grass is green!", 15, false),
			 14);
}
END_TEST

START_TEST(plan_a_cut_before_any_text_is_a_replay_with_a_reason)
{
	struct continuation c;
	json_t *cut = json_pack("{s:s, s:[], s:s}", "role", "assistant", "content",
				"stopReason", "error");
	json_t *j;

	continuation_init(&c);
	ck_assert_int_eq(continuation_plan(&c, cut, PROVIDER_CONTINUE_PREFILL), CONTINUATION_REPLAY);
	j = continuation_json(&c);
	ck_assert_str_eq(json_string_value(json_object_get(j, "mode")), "replay");
	ck_assert_str_eq(json_string_value(json_object_get(j, "reason")),
			 "the cut came before any text");
	{
		json_t *ctx = json_array();

		ck_assert_ptr_null(continuation_messages(&c, ctx));
		json_decref(ctx);
	}
	json_decref(j);
	json_decref(cut);
	continuation_release(&c);
}
END_TEST

START_TEST(plan_a_resume_keeps_the_thinking_a_turn_does_not)
{
	struct continuation c;
	json_t *cut = json_pack("{s:s, s:[{s:s, s:s, s:s}, {s:s, s:s}]}", "role", "assistant",
				"content", "type", "thinking", "thinking", "Think.",
				"thinkingSignature", "{\"id\":\"rs_1\"}", "type", "text", "text",
				"Rivers carve");

	continuation_init(&c);
	ck_assert_int_eq(continuation_plan(&c, cut, PROVIDER_CONTINUE_RESUME), CONTINUATION_RESUME);
	ck_assert_uint_eq(json_array_size(c.kept_thinking), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c.kept_thinking, 0),
							   "thinkingSignature")), "{\"id\":\"rs_1\"}");
	ck_assert_str_eq(c.kept, "Rivers carve");
	ck_assert_int_eq(continuation_plan(&c, cut, PROVIDER_CONTINUE_TURN), CONTINUATION_TURN);
	ck_assert_ptr_null(c.kept_thinking);
	json_decref(cut);
	continuation_release(&c);
}
END_TEST

START_TEST(plan_a_half_streamed_tool_call_is_a_replay_with_a_reason)
{
	struct continuation c;
	json_t *cut = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}]}", "role", "assistant",
				"content", "type", "text", "text", "Let me look.", "type",
				"toolCall", "name", "read");
	json_t *j;

	continuation_init(&c);
	ck_assert_int_eq(continuation_plan(&c, cut, PROVIDER_CONTINUE_TURN), CONTINUATION_REPLAY);
	j = continuation_json(&c);
	ck_assert_str_eq(json_string_value(json_object_get(j, "reason")), "a tool call was cut");
	json_decref(j);
	json_decref(cut);
	continuation_release(&c);
}
END_TEST

START_TEST(plan_declined_by_the_provider_is_a_replay_with_its_reason_and_adds_nothing)
{
	static const char why[] = "the CLI's resumed session does not go on from the cut text";
	struct continuation c;
	json_t *cut = cut_message("partial answer"), *empty = cut_message(""), *msgs = json_array();
	json_t *j;

	continuation_init(&c);
	ck_assert_int_eq(continuation_declined(&c, cut, why), CONTINUATION_REPLAY);
	j = continuation_json(&c);
	ck_assert_str_eq(json_string_value(json_object_get(j, "mode")), "replay");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "keptChars")), 0);
	ck_assert_str_eq(json_string_value(json_object_get(j, "reason")), why);
	json_decref(j);
	ck_assert_ptr_null(continuation_messages(&c, msgs));
	/* The cut's own reason comes first. */
	ck_assert_int_eq(continuation_declined(&c, empty, why), CONTINUATION_REPLAY);
	ck_assert_str_eq(c.reason, "the cut came before any text");
	json_decref(cut);
	json_decref(empty);
	json_decref(msgs);
	continuation_release(&c);
}
END_TEST

START_TEST(plan_off_says_nothing_and_adds_nothing)
{
	struct continuation c;
	json_t *cut = cut_message("partial");

	continuation_init(&c);
	ck_assert_int_eq(continuation_plan(&c, cut, PROVIDER_CONTINUE_NONE), CONTINUATION_NONE);
	ck_assert_ptr_null(continuation_json(&c));
	json_decref(cut);
	continuation_release(&c);
}
END_TEST

START_TEST(plan_counts_kept_characters_and_drops_thinking)
{
	struct continuation c;
	json_t *cut = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}]}", "role", "assistant",
				"content", "type", "thinking", "thinking", "hmm", "type", "text",
				"text", "héllo");
	json_t *j;

	continuation_init(&c);
	ck_assert_int_eq(continuation_plan(&c, cut, PROVIDER_CONTINUE_TURN), CONTINUATION_TURN);
	ck_assert_str_eq(c.kept, "héllo");
	j = continuation_json(&c);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "keptChars")), 5);
	ck_assert_ptr_null(json_object_get(j, "reason"));
	json_decref(j);
	json_decref(cut);
	continuation_release(&c);
}
END_TEST

START_TEST(messages_a_turn_adds_the_partial_answer_and_the_instruction)
{
	struct continuation c;
	json_t *cut = cut_message("The answer is ");
	json_t *ctx = json_pack("[{s:s, s:s}]", "role", "user", "content", "q");
	json_t *m;

	continuation_init(&c);
	continuation_plan(&c, cut, PROVIDER_CONTINUE_TURN);
	m = continuation_messages(&c, ctx);
	ck_assert_uint_eq(json_array_size(m), 3);
	ck_assert_uint_eq(json_array_size(ctx), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(m, 1), "role")),
			 "assistant");
	ck_assert_str_eq(json_string_value(json_object_get(
		json_array_get(json_object_get(json_array_get(m, 1), "content"), 0), "text")),
		"The answer is ");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(m, 2), "content")),
			 CONTINUATION_INSTRUCTION);
	json_decref(m);
	json_decref(ctx);
	json_decref(cut);
	continuation_release(&c);
}
END_TEST

START_TEST(messages_a_prefill_ends_with_the_partial_answer_without_trailing_space)
{
	struct continuation c;
	json_t *cut = cut_message("The answer is \n");
	json_t *ctx = json_pack("[{s:s, s:s}]", "role", "user", "content", "q");
	json_t *m, *last;

	continuation_init(&c);
	continuation_plan(&c, cut, PROVIDER_CONTINUE_PREFILL);
	m = continuation_messages(&c, ctx);
	ck_assert_uint_eq(json_array_size(m), 2);
	last = json_array_get(m, 1);
	ck_assert_str_eq(json_string_value(json_object_get(last, "role")), "assistant");
	ck_assert_str_eq(json_string_value(json_object_get(
		json_array_get(json_object_get(last, "content"), 0), "text")), "The answer is");
	json_decref(m);
	json_decref(ctx);
	json_decref(cut);
	continuation_release(&c);
}
END_TEST

static const char *refusal_of(enum provider_continue offered, int status, const char *error)
{
	struct continuation c;
	json_t *cut = cut_message("partial");
	struct provider_result r = { .stop = STOP_ERROR, .error_message = error, .hint_ms = -1,
				     .http_status = status };
	const char *why;

	continuation_init(&c);
	continuation_plan(&c, cut, offered);
	continuation_begin(&c);
	why = continuation_refusal(&c, &r);
	continuation_release(&c);
	json_decref(cut);
	return why;
}

START_TEST(refusal_a_prefill_400_that_says_prefill_is_a_refusal)
{
	ck_assert_str_eq(refusal_of(PROVIDER_CONTINUE_PREFILL, 400,
				    "400 This model does not support assistant message prefill."),
			 "the provider refused the prefill");
	/* Another 400 is the request's own problem, judged as ever. */
	ck_assert_ptr_null(refusal_of(PROVIDER_CONTINUE_PREFILL, 400, "400 max_tokens too large"));
	ck_assert_ptr_null(refusal_of(PROVIDER_CONTINUE_TURN, 400, "400 prefill"));
}
END_TEST

START_TEST(refusal_a_resume_4xx_is_an_expired_id_but_a_429_is_not)
{
	ck_assert_str_eq(refusal_of(PROVIDER_CONTINUE_RESUME, 404, "404 Response not found"),
			 "the resume id expired");
	ck_assert_ptr_null(refusal_of(PROVIDER_CONTINUE_RESUME, 429, "429 Rate limit reached"));
	ck_assert_ptr_null(refusal_of(PROVIDER_CONTINUE_RESUME, 503, "503 Service Unavailable"));
}
END_TEST

START_TEST(filter_a_resume_passes_new_text_as_it_comes)
{
	struct continuation c;
	json_t *cut = cut_message("Hello wor");
	struct shown out = { .len = 0 };

	continuation_init(&c);
	ck_assert_int_eq(continuation_plan(&c, cut, PROVIDER_CONTINUE_RESUME), CONTINUATION_RESUME);
	{
		json_t *ctx = json_array();

		ck_assert_ptr_null(continuation_messages(&c, ctx));
		json_decref(ctx);
	}
	continuation_begin(&c);
	ck_assert(c.active);
	continuation_feed(&c, "wor", 3, collect, &out);
	ck_assert_str_eq(out.text, "wor");
	continuation_release(&c);
	json_decref(cut);
}
END_TEST

START_TEST(filter_after_a_prefill_drops_only_the_whitespace_already_shown)
{
	struct continuation c;
	json_t *cut = cut_message("Water carves the ");
	struct shown out = { .len = 0 };

	continuation_init(&c);
	continuation_plan(&c, cut, PROVIDER_CONTINUE_PREFILL);
	continuation_begin(&c);
	continuation_feed(&c, " the", 4, collect, &out);
	continuation_feed(&c, " valley", 7, collect, &out);
	continuation_flush(&c, collect, &out);
	ck_assert_str_eq(out.text, "the valley");
	continuation_release(&c);
	json_decref(cut);
}
END_TEST

START_TEST(filter_after_a_prefill_drops_a_replay_of_the_whole_kept_text)
{
	struct continuation c;
	json_t *cut = cut_message("one two");
	struct shown out = { .len = 0 };

	continuation_init(&c);
	continuation_plan(&c, cut, PROVIDER_CONTINUE_PREFILL);
	continuation_begin(&c);
	continuation_feed(&c, "one", 3, collect, &out);
	continuation_feed(&c, " two three", 10, collect, &out);
	continuation_flush(&c, collect, &out);
	ck_assert_str_eq(out.text, " three");
	continuation_release(&c);
	json_decref(cut);
}
END_TEST

static void drop_event(void *ctx, json_t *event)
{
	(void)ctx;
	json_decref(event);
}

START_TEST(plan_a_continuation_that_failed_before_a_byte_keeps_the_answer_so_far)
{
	struct continuation c;
	struct assistant reply;
	struct assistant_output out = { .emit = drop_event };
	json_t *cut = cut_message("Rivers carve");
	json_t *empty = json_pack("{s:s, s:[]}", "role", "assistant", "content");
	json_t *ctx = json_pack("[{s:s, s:s}]", "role", "user", "content", "q");
	struct attempt_ctx actx = { .attempt = 1 };
	struct provider_result r = { .stop = STOP_ERROR, .error_message = "503", .hint_ms = -1,
				     .http_status = 503 };
	const json_t *sent;

	continuation_init(&c);
	assistant_init(&reply, &out);
	continuation_plan(&c, cut, PROVIDER_CONTINUE_TURN);
	sent = continuation_attempt(&c, &actx, ctx, "always");
	ck_assert_int_eq(actx.continuation, PROVIDER_CONTINUE_TURN);
	ck_assert_str_eq(actx.continue_setting, "always");
	ck_assert_uint_eq(json_array_size(sent), 3);
	/* No message was opened: nothing to seed, and nothing refused. */
	ck_assert(!continuation_finish(&c, &reply, &r));
	ck_assert_int_eq(continuation_plan(&c, empty, PROVIDER_CONTINUE_TURN), CONTINUATION_TURN);
	ck_assert_str_eq(c.kept, "Rivers carve");
	/* A new chain's first attempt continues nothing. */
	actx.attempt = 0;
	ck_assert_ptr_eq(continuation_attempt(&c, &actx, ctx, "always"), ctx);
	ck_assert_int_eq(actx.continuation, PROVIDER_CONTINUE_NONE);
	assistant_release(&reply);
	continuation_release(&c);
	json_decref(ctx);
	json_decref(empty);
	json_decref(cut);
}
END_TEST

START_TEST(filter_passes_everything_when_no_plan_runs)
{
	struct continuation c;
	struct shown out = { .len = 0 };

	continuation_init(&c);
	continuation_begin(&c);
	continuation_feed(&c, "abc", 3, collect, &out);
	continuation_flush(&c, collect, &out);
	ck_assert_str_eq(out.text, "abc");
	continuation_release(&c);
}
END_TEST

Suite *continuation_suite(void)
{
	Suite *s = suite_create("continuation");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, overlap_an_exact_repeat_of_the_last_sentence_is_dropped);
	tcase_add_test(tc, overlap_a_repeat_of_the_whole_kept_text_is_dropped);
	tcase_add_test(tc, overlap_whitespace_differences_still_match);
	tcase_add_test(tc, overlap_a_repeat_ending_in_the_space_the_kept_text_ends_with_shows_one_space);
	tcase_add_test(tc, overlap_a_restarted_partial_word_is_dropped);
	tcase_add_test(tc, overlap_a_repeated_word_after_a_word_boundary_cut_is_kept);
	tcase_add_test(tc, overlap_none_keeps_every_byte);
	tcase_add_test(tc, overlap_a_short_coincidental_word_after_a_space_is_kept);
	tcase_add_test(tc, overlap_the_whitespace_already_shown_is_not_shown_twice);
	tcase_add_test(tc, overlap_a_repeat_that_diverges_is_not_dropped);
	tcase_add_test(tc, overlap_longer_than_the_window_is_shown);
	tcase_add_test(tc, overlap_inside_the_window_of_a_long_answer_is_dropped);
	tcase_add_test(tc, overlap_unicode_repeats_are_dropped_on_character_boundaries);
	tcase_add_test(tc, overlap_waits_for_enough_text_then_decides);
	tcase_add_test(tc, plan_a_cut_before_any_text_is_a_replay_with_a_reason);
	tcase_add_test(tc, plan_a_half_streamed_tool_call_is_a_replay_with_a_reason);
	tcase_add_test(tc, plan_a_resume_keeps_the_thinking_a_turn_does_not);
	tcase_add_test(tc, plan_off_says_nothing_and_adds_nothing);
	tcase_add_test(tc, plan_declined_by_the_provider_is_a_replay_with_its_reason_and_adds_nothing);
	tcase_add_test(tc, plan_counts_kept_characters_and_drops_thinking);
	tcase_add_test(tc, messages_a_turn_adds_the_partial_answer_and_the_instruction);
	tcase_add_test(tc, messages_a_prefill_ends_with_the_partial_answer_without_trailing_space);
	tcase_add_test(tc, refusal_a_prefill_400_that_says_prefill_is_a_refusal);
	tcase_add_test(tc, refusal_a_resume_4xx_is_an_expired_id_but_a_429_is_not);
	tcase_add_test(tc, filter_a_resume_passes_new_text_as_it_comes);
	tcase_add_test(tc, filter_after_a_prefill_drops_only_the_whitespace_already_shown);
	tcase_add_test(tc, filter_after_a_prefill_drops_a_replay_of_the_whole_kept_text);
	tcase_add_test(tc, plan_a_continuation_that_failed_before_a_byte_keeps_the_answer_so_far);
	tcase_add_test(tc, filter_passes_everything_when_no_plan_runs);
	suite_add_tcase(s, tc);
	return s;
}

/* The agent-CLI line parser, per built-in profile, fed the documented
 * fixture lines (tests/fixtures/cli, shared with the fake CLIs) and small
 * inline lines. No process, no loop. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/number.h"
#include "provider/cli/cli_parser.h"
#include "provider/cli/cli_profile.h"

Suite *cli_parser_suite(void);

#define FIXTURES "tests/fixtures/cli/"

struct trace {
	char text[16384];
	json_t *events; /* every CLI_OUT_EVENT, in order */
};

static void add(struct trace *t, const char *s)
{
	size_t n = strlen(t->text);

	snprintf(t->text + n, sizeof(t->text) - n, "%s%s", n ? "|" : "", s);
}

static void collect(void *ctx, const struct cli_parser_outcome *o)
{
	struct trace *t = ctx;
	char buf[1200];

	switch (o->kind) {
	case CLI_OUT_SESSION:
		snprintf(buf, sizeof(buf), "session:%s", o->text);
		break;
	case CLI_OUT_TEXT_START:
		snprintf(buf, sizeof(buf), "start");
		break;
	case CLI_OUT_TEXT_DELTA:
		ck_assert_uint_eq(strlen(o->text), o->len);
		snprintf(buf, sizeof(buf), "delta:%.*s", (int)o->len, o->text);
		break;
	case CLI_OUT_TEXT_END:
		snprintf(buf, sizeof(buf), "end");
		break;
	case CLI_OUT_THINKING_START:
		snprintf(buf, sizeof(buf), "thinking");
		break;
	case CLI_OUT_THINKING_DELTA:
		ck_assert_uint_eq(strlen(o->text), o->len);
		snprintf(buf, sizeof(buf), "think:%.*s", (int)o->len, o->text);
		break;
	case CLI_OUT_THINKING_END:
		ck_assert_uint_eq(o->text ? strlen(o->text) : 0, o->len);
		snprintf(buf, sizeof(buf), "thought:%s", o->text ? o->text : "(unsigned)");
		break;
	case CLI_OUT_EVENT:
		snprintf(buf, sizeof(buf), "%s",
			 json_string_value(json_object_get(o->event, "type")));
		json_array_append(t->events, o->event);
		break;
	case CLI_OUT_TERMINAL:
		if (o->failed)
			snprintf(buf, sizeof(buf), "fail:%s", o->text);
		else
			snprintf(buf, sizeof(buf), "ok");
		break;
	}
	add(t, buf);
}

struct fx {
	struct cli_profile *profile;
	struct cli_parser parser;
	struct trace t;
};

static void fx_init(struct fx *f, const char *name)
{
	json_t *all = cli_profile_builtins();
	char err[512];

	memset(f, 0, sizeof(*f));
	ck_assert_ptr_nonnull(all);
	f->profile = cli_profile_new(name, json_object_get(all, name), err, sizeof(err));
	ck_assert_msg(f->profile != NULL, "%s", err);
	json_decref(all);
	cli_parser_init(&f->parser, f->profile);
	f->t.events = json_array();
}

static void fx_release(struct fx *f)
{
	cli_parser_release(&f->parser);
	cli_profile_free(f->profile);
	json_decref(f->t.events);
}

static size_t feed(struct fx *f, const char *line)
{
	return cli_parser_feed(&f->parser, line, strlen(line), collect, &f->t);
}

/* Feeds a fixture file line by line, then ends the stream. */
static void feed_file(struct fx *f, const char *name)
{
	char path[256], *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *fp;

	snprintf(path, sizeof(path), FIXTURES "%s", name);
	fp = fopen(path, "r");
	ck_assert_msg(fp != NULL, "cannot open %s (run from the repository root)", path);
	while ((n = getline(&line, &cap, fp)) > 0) {
		if (line[n - 1] == '\n')
			n--;
		cli_parser_feed(&f->parser, line, (size_t)n, collect, &f->t);
	}
	free(line);
	fclose(fp);
	cli_parser_finish(&f->parser, collect, &f->t);
}

static json_t *event(struct fx *f, size_t i)
{
	return json_array_get(f->t.events, i);
}

static const char *str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

static json_int_t num(json_t *obj, const char *key)
{
	ck_assert_msg(json_is_integer(json_object_get(obj, key)), "%s is not an integer", key);
	return json_integer_value(json_object_get(obj, key));
}

/* Claude Code. */

START_TEST(test_claude_success_streams_tool_call_then_text_and_ends_well)
{
	struct fx f;
	json_t *ev;

	fx_init(&f, "claude");
	feed_file(&f, "claude-success.jsonl");
	ck_assert_str_eq(f.t.text, "session:f470391b-60d9-4dc5-8aed-9904549aafcb|"
			 "tool_execution_start|tool_execution_end|start|delta:Done.|end|ok");
	ev = event(&f, 0);
	ck_assert_str_eq(str(ev, "toolCallId"), "toolu_01JaqnRjsyk493n79eA4tUQ1");
	ck_assert_str_eq(str(ev, "toolName"), "Bash");
	ck_assert_str_eq(str(json_object_get(ev, "args"), "command"), "ls");
	ev = event(&f, 1);
	ck_assert_str_eq(str(ev, "toolCallId"), "toolu_01JaqnRjsyk493n79eA4tUQ1");
	/* The result line has no name: it comes from the start. */
	ck_assert_str_eq(str(ev, "toolName"), "Bash");
	ck_assert(json_is_false(json_object_get(ev, "isError")));
	ck_assert_str_eq(str(json_array_get(json_object_get(json_object_get(ev, "result"), "content"), 0),
			     "text"), "README.md");
	ck_assert(f.parser.terminal && !f.parser.failed);
	ck_assert_ptr_null(f.parser.error);
	ck_assert_int_eq(f.parser.input_tokens, 8);
	ck_assert_int_eq(f.parser.output_tokens, 43);
	/* Claude Code's result counts the cache apart, as the Messages API does. */
	ck_assert_int_eq(f.parser.cache_read_tokens, 12000);
	ck_assert_int_eq(f.parser.cache_write_tokens, 4995);
	fx_release(&f);
}
END_TEST

START_TEST(test_claude_thinking_block_comes_whole_with_its_signature_before_the_text)
{
	struct fx f;

	fx_init(&f, "claude");
	feed_file(&f, "claude-thinking.jsonl");
	ck_assert_str_eq(f.t.text, "session:f470391b-60d9-4dc5-8aed-9904549aafcb|thinking|"
			 "think:The user wants the files. A listing answers it.|"
			 "thought:EqQBCkYIBxgCKkBx7mN3QzVp0c2lnbmVkLXRoaW5raW5n|start|delta:Done.|end|ok");
	fx_release(&f);
}
END_TEST

/* One line with thinking, text and a tool call: reasoning first, and no two
 * blocks open at once; a thinking block without text is skipped. */
START_TEST(test_claude_thinking_text_and_tool_in_one_line_keep_blocks_apart)
{
	struct fx f;

	fx_init(&f, "claude");
	feed(&f, "{\"type\":\"assistant\",\"message\":{\"content\":["
		 "{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"s0\"},"
		 "{\"type\":\"thinking\",\"thinking\":\"a\",\"signature\":\"s1\"},"
		 "{\"type\":\"thinking\",\"thinking\":\"b\"},"
		 "{\"type\":\"text\",\"text\":\"t\"},"
		 "{\"type\":\"tool_use\",\"id\":\"u1\",\"name\":\"Bash\",\"input\":{}}]}}");
	ck_assert_str_eq(f.t.text, "thinking|think:a|thought:s1|thinking|think:b|thought:(unsigned)|"
			 "start|delta:t|end|tool_execution_start");
	fx_release(&f);
}
END_TEST

/* A delta profile: thinking stays open across lines until text, a tool call
 * or the end of the stream closes it; a later signature replaces an earlier. */
START_TEST(test_thinking_deltas_close_on_text_tool_call_or_the_end)
{
	struct fx f;
	const char *think = "{\"type\":\"message_update\",\"assistantMessageEvent\":"
			    "{\"type\":\"thinking_delta\",\"delta\":\"x\"}}";

	fx_init(&f, "pi");
	feed(&f, think);
	feed(&f, think);
	feed(&f, "{\"type\":\"tool_execution_start\",\"toolCallId\":\"c\",\"toolName\":\"b\"}");
	feed(&f, think);
	feed(&f, "{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"thinking_end\"},"
		 "\"message\":{\"content\":[{\"type\":\"thinking\",\"thinkingSignature\":\"old\"},"
		 "{\"type\":\"thinking\",\"thinkingSignature\":\"new\"}]}}");
	cli_parser_finish(&f.parser, collect, &f.t);
	ck_assert_str_eq(f.t.text, "thinking|think:x|think:x|thought:(unsigned)|tool_execution_start|"
			 "thinking|think:x|thought:new|tool_execution_end");
	fx_release(&f);
}
END_TEST

START_TEST(test_claude_api_retry_lines_are_notices_and_is_error_success_is_a_failure)
{
	struct fx f;
	json_t *ev;

	fx_init(&f, "claude");
	feed_file(&f, "claude-overloaded.jsonl");
	/* No text: the synthetic assistant line only repeats the error. */
	ck_assert_str_eq(f.t.text, "session:S1|provider_retry|provider_retry|"
			 "fail:API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
			 "\"message\":\"Overloaded\"}}");
	ev = event(&f, 0);
	ck_assert_int_eq(num(ev, "attempt"), 1);
	ck_assert_int_eq(num(ev, "maxAttempts"), 10);
	ck_assert_int_eq(num(ev, "delayMs"), 567);
	ck_assert_str_eq(str(ev, "errorMessage"), "529 overloaded");
	/* A float delay is rounded. */
	ck_assert_int_eq(num(event(&f, 1), "delayMs"), 35074);
	ck_assert(f.parser.terminal && f.parser.failed);
	fx_release(&f);
}
END_TEST

START_TEST(test_claude_auth_failure_keeps_its_status_typed)
{
	struct fx f;

	fx_init(&f, "claude");
	feed_file(&f, "claude-auth.jsonl");
	ck_assert_str_eq(f.t.text, "session:S2|provider_retry|"
			 "fail:Invalid API key · Fix external API key");
	ck_assert_int_eq(f.parser.status, 401);
	ck_assert_str_eq(str(event(&f, 0), "errorMessage"), "401 authentication_failed");
	ck_assert_str_eq(f.parser.session_id, "S2");
	fx_release(&f);
}
END_TEST

START_TEST(test_claude_error_subtypes_without_text_fail_with_subtype_or_errors)
{
	struct fx f;

	fx_init(&f, "claude");
	feed(&f, "{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":true,\"num_turns\":30,"
		 "\"session_id\":\"S3\",\"errors\":[],\"terminal_reason\":\"max_turns\"}");
	feed(&f, "{\"type\":\"result\",\"subtype\":\"error_during_execution\",\"is_error\":true,"
		 "\"errors\":[\"tool crashed\",\"\",\"again\"]}");
	feed(&f, "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,"
		 "\"api_error_status\":null,\"result\":\"Not logged in · Please run /login\"}");
	ck_assert_str_eq(f.t.text, "session:S3|fail:error_max_turns|fail:tool crashed; again|"
			 "fail:Not logged in · Please run /login");
	fx_release(&f);
}
END_TEST

START_TEST(test_claude_session_id_newest_wins_and_repeats_are_quiet)
{
	struct fx f;

	fx_init(&f, "claude");
	feed(&f, "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"A\"}");
	feed(&f, "{\"type\":\"rate_limit_event\",\"session_id\":\"A\"}");
	feed(&f, "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"B\"}");
	ck_assert_str_eq(f.t.text, "session:A|session:B");
	ck_assert_str_eq(f.parser.session_id, "B");
	ck_assert(!f.parser.terminal);
	fx_release(&f);
}
END_TEST

/* Codex. */

START_TEST(test_codex_success_maps_command_items_to_tool_events)
{
	struct fx f;
	json_t *ev;

	fx_init(&f, "codex");
	feed_file(&f, "codex-success.jsonl");
	ck_assert_str_eq(f.t.text, "session:0199a213-81c0-7800-8aa1-bbab2a035a53|"
			 "thinking|think:**Searching for README files**|thought:(unsigned)|"
			 "tool_execution_start|tool_execution_end|"
			 "start|delta:Yes — there's a README.md in the repository root.|end|ok");
	ev = event(&f, 0);
	ck_assert_str_eq(str(ev, "toolCallId"), "item_1");
	ck_assert_str_eq(str(ev, "toolName"), "command_execution");
	ck_assert_str_eq(str(json_object_get(ev, "args"), "command"), "bash -lc ls");
	ev = event(&f, 1);
	ck_assert(json_is_false(json_object_get(ev, "isError")));
	ck_assert_str_eq(str(json_array_get(json_object_get(json_object_get(ev, "result"), "content"), 0),
			     "text"), "README.md\n");
	ck_assert_int_eq(f.parser.input_tokens, 24763);
	ck_assert_int_eq(f.parser.output_tokens, 122);
	fx_release(&f);
}
END_TEST

START_TEST(test_codex_reconnecting_errors_are_notices_and_turn_failed_decides)
{
	struct fx f;

	fx_init(&f, "codex");
	feed_file(&f, "codex-reconnect-failed.jsonl");
	ck_assert_str_eq(f.t.text, "session:019e49d4-05e3-7111-9bef-5f4f48c36e88|"
			 "provider_retry|provider_retry|"
			 "fail:stream disconnected before completion: error sending request for url "
			 "(https://api.openai.com/v1/responses)");
	ck_assert_int_eq(num(event(&f, 0), "attempt"), 1);
	ck_assert_int_eq(num(event(&f, 0), "maxAttempts"), 5);
	ck_assert_int_eq(num(event(&f, 1), "attempt"), 5);
	ck_assert_ptr_nonnull(strstr(str(event(&f, 1), "errorMessage"), "Reconnecting... 5/5"));
	/* The plain error line before turn.failed is skipped, not fatal. */
	ck_assert_uint_eq(f.parser.skipped, 2);
	fx_release(&f);
}
END_TEST

START_TEST(test_codex_run_that_recovers_after_reconnects_is_a_success)
{
	struct fx f;

	fx_init(&f, "codex");
	feed_file(&f, "codex-recovers.jsonl");
	ck_assert_ptr_nonnull(strstr(f.t.text, "provider_retry|provider_retry|"));
	ck_assert_ptr_nonnull(strstr(f.t.text, "|ok"));
	ck_assert(f.parser.terminal && !f.parser.failed);
	fx_release(&f);
}
END_TEST

START_TEST(test_codex_auth_failure_keeps_its_401)
{
	struct fx f;

	fx_init(&f, "codex");
	feed_file(&f, "codex-auth.jsonl");
	ck_assert(f.parser.failed);
	ck_assert_ptr_nonnull(strstr(f.parser.error, "unexpected status 401 Unauthorized"));
	ck_assert_str_eq(f.parser.session_id, "019e9586-39cb-7013-af5a-e32c871e7619");
	fx_release(&f);
}
END_TEST

START_TEST(test_codex_reconnect_without_counts_is_still_a_notice)
{
	struct fx f;

	fx_init(&f, "codex");
	feed(&f, "{\"type\":\"error\",\"message\":\"Reconnecting... waiting for network\"}");
	feed(&f, "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_9\",\"type\":\"error\","
		 "\"message\":\"Model metadata not found\"}}");
	ck_assert_str_eq(f.t.text, "provider_retry");
	ck_assert_ptr_null(json_object_get(event(&f, 0), "attempt"));
	ck_assert(!f.parser.terminal);
	fx_release(&f);
}
END_TEST

/* Gemini CLI. */

START_TEST(test_gemini_success_tool_then_delta_text)
{
	struct fx f;
	json_t *ev;

	fx_init(&f, "gemini");
	feed_file(&f, "gemini-success.jsonl");
	/* The user message line is not assistant text. */
	ck_assert_str_eq(f.t.text, "session:7bffa130-8c69-4cf8-ac8a-0d36b2d99f53|"
			 "tool_execution_start|tool_execution_end|"
			 "start|delta:There is one file: README.md.|end|ok");
	ev = event(&f, 1);
	ck_assert_str_eq(str(ev, "toolName"), "run_shell_command");
	ck_assert(json_is_false(json_object_get(ev, "isError")));
	ck_assert_int_eq(f.parser.input_tokens, 11598);
	ck_assert_int_eq(f.parser.output_tokens, 69);
	fx_release(&f);
}
END_TEST

START_TEST(test_gemini_delta_chunks_share_one_text_block)
{
	struct fx f;

	fx_init(&f, "gemini");
	feed(&f, "{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"Hel\",\"delta\":true}");
	feed(&f, "{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"lo\",\"delta\":true}");
	feed(&f, "{\"type\":\"tool_use\",\"tool_name\":\"read_file\",\"tool_id\":\"t1\",\"parameters\":{}}");
	feed(&f, "{\"type\":\"tool_result\",\"tool_id\":\"t1\",\"status\":\"error\","
		 "\"error\":{\"type\":\"x\",\"message\":\"no such file\"}}");
	feed(&f, "{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"!\",\"delta\":true}");
	cli_parser_finish(&f.parser, collect, &f.t);
	ck_assert_str_eq(f.t.text, "start|delta:Hel|delta:lo|end|tool_execution_start|"
			 "tool_execution_end|start|delta:!|end");
	ck_assert(json_is_true(json_object_get(event(&f, 1), "isError")));
	ck_assert_str_eq(str(json_array_get(json_object_get(json_object_get(event(&f, 1), "result"),
							    "content"), 0), "text"), "no such file");
	ck_assert(!f.parser.terminal);
	fx_release(&f);
}
END_TEST

START_TEST(test_gemini_overload_and_auth_results_fail_with_their_message)
{
	struct fx f;

	fx_init(&f, "gemini");
	feed_file(&f, "gemini-overloaded.jsonl");
	ck_assert_str_eq(f.parser.error, "[API Error: The model is overloaded. Please try again "
			 "later. (Status: UNAVAILABLE)]");
	fx_release(&f);
	fx_init(&f, "gemini");
	feed_file(&f, "gemini-auth.jsonl");
	ck_assert(f.parser.failed);
	ck_assert_ptr_nonnull(strstr(f.parser.error, "API key not valid"));
	fx_release(&f);
}
END_TEST

/* pi. */

START_TEST(test_pi_success_session_header_deltas_and_last_message_end)
{
	struct fx f;

	fx_init(&f, "pi");
	feed_file(&f, "pi-success.jsonl");
	/* The user message_end is not a terminal line. */
	ck_assert_str_eq(f.t.text, "session:1f9d2a6e-3c1b-4e8a-9d5e-7a2b1c0d9e8f|start|delta:Done|"
			 "end|ok");
	ck_assert_int_eq(f.parser.input_tokens, 1200);
	ck_assert_int_eq(f.parser.output_tokens, 45);
	fx_release(&f);
}
END_TEST

START_TEST(test_pi_thinking_deltas_are_one_block_signed_at_thinking_end_before_the_text)
{
	struct fx f;

	fx_init(&f, "pi");
	feed_file(&f, "pi-thinking.jsonl");
	ck_assert_str_eq(f.t.text, "session:1f9d2a6e-3c1b-4e8a-9d5e-7a2b1c0d9e8f|thinking|"
			 "think:The user wants the files.|think: A listing answers it.|"
			 "thought:ErUBCkYIBxgCKkCpaXNpZ25hdHVyZQ|start|delta:Done|end|ok");
	fx_release(&f);
}
END_TEST

START_TEST(test_pi_exit_zero_failure_is_read_from_stop_reason)
{
	struct fx f;

	fx_init(&f, "pi");
	feed_file(&f, "pi-overloaded.jsonl");
	ck_assert_str_eq(f.t.text, "session:7d1c0e52-88a1-4f5e-b0c4-2f5e9a6b3c10|"
			 "fail:529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
			 "\"message\":\"Overloaded\"}}|provider_retry");
	ck_assert_int_eq(num(event(&f, 0), "delayMs"), 2000);
	ck_assert(f.parser.terminal && f.parser.failed);
	fx_release(&f);
	fx_init(&f, "pi");
	feed_file(&f, "pi-auth.jsonl");
	ck_assert_ptr_nonnull(strstr(f.parser.error, "401"));
	fx_release(&f);
}
END_TEST

START_TEST(test_pi_later_message_end_replaces_an_earlier_failure)
{
	struct fx f;

	fx_init(&f, "pi");
	feed(&f, "{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"content\":[],"
		 "\"stopReason\":\"error\",\"errorMessage\":\"503 Service Unavailable\"}}");
	feed(&f, "{\"type\":\"tool_execution_start\",\"toolCallId\":\"c1\",\"toolName\":\"bash\","
		 "\"args\":{\"command\":\"ls\"}}");
	feed(&f, "{\"type\":\"tool_execution_end\",\"toolCallId\":\"c1\",\"toolName\":\"bash\","
		 "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"}]},\"isError\":false}");
	feed(&f, "{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"content\":[],"
		 "\"stopReason\":\"stop\",\"usage\":{\"input\":3,\"output\":4}}}");
	ck_assert_str_eq(f.t.text, "fail:503 Service Unavailable|tool_execution_start|"
			 "tool_execution_end|ok");
	ck_assert(f.parser.terminal && !f.parser.failed);
	ck_assert_ptr_null(f.parser.error);
	ck_assert_int_eq(f.parser.output_tokens, 4);
	/* pi's own result object passes through as is. */
	ck_assert_str_eq(str(json_array_get(json_object_get(json_object_get(event(&f, 1), "result"),
							    "content"), 0), "text"), "a");
	fx_release(&f);
}
END_TEST

/* Every profile. */

START_TEST(test_non_json_and_unknown_lines_are_skipped_not_fatal)
{
	static const char *const names[] = { "claude", "codex", "gemini", "pi" };
	static const char *const junk[] = {
		"", "not json at all", "Loaded cached credentials.", "[1,2,3]", "\"a string\"",
		"{\"type\":\"mystery\",\"x\":1}", "{\"type\":", "{\"no_type\":true}", "\xff\xfe",
	};

	for (size_t k = 0; k < 4; k++) {
		struct fx f;

		fx_init(&f, names[k]);
		for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
			ck_assert_uint_eq(feed(&f, junk[i]), 0);
		ck_assert_uint_eq(f.parser.skipped, sizeof(junk) / sizeof(junk[0]));
		ck_assert_str_eq(f.t.text, "");
		ck_assert(!f.parser.terminal);
		fx_release(&f);
	}
}
END_TEST

START_TEST(test_tool_end_without_start_gets_one_and_finish_ends_open_calls)
{
	struct fx f;

	fx_init(&f, "claude");
	feed(&f, "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\","
		 "\"tool_use_id\":\"t9\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}],"
		 "\"is_error\":true}]}}");
	feed(&f, "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
		 "{\"type\":\"tool_use\",\"id\":\"t10\",\"name\":\"Read\",\"input\":{\"p\":1}}]}}");
	cli_parser_finish(&f.parser, collect, &f.t);
	ck_assert_str_eq(f.t.text, "tool_execution_start|tool_execution_end|start|delta:a|end|"
			 "tool_execution_start|tool_execution_end");
	ck_assert_str_eq(str(event(&f, 0), "toolName"), "tool");
	ck_assert(json_is_true(json_object_get(event(&f, 1), "isError")));
	ck_assert_str_eq(str(json_array_get(json_object_get(json_object_get(event(&f, 1), "result"),
							    "content"), 0), "text"), "x");
	ck_assert_str_eq(str(event(&f, 3), "toolCallId"), "t10");
	ck_assert_str_eq(str(event(&f, 3), "toolName"), "Read");
	ck_assert(json_is_true(json_object_get(event(&f, 3), "isError")));
	ck_assert_uint_eq(json_object_size(f.parser.tools), 0);
	fx_release(&f);
}
END_TEST

START_TEST(test_repeated_tool_use_line_starts_the_call_once_and_ends_it_once)
{
	struct fx f;
	const char *use = "{\"type\":\"tool_use\",\"tool_name\":\"read_file\","
			  "\"tool_id\":\"t1\",\"parameters\":{}}";

	fx_init(&f, "gemini");
	feed(&f, use);
	feed(&f, use);
	ck_assert_uint_eq(json_object_size(f.parser.tools), 1);
	cli_parser_finish(&f.parser, collect, &f.t);
	ck_assert_str_eq(f.t.text, "tool_execution_start|tool_execution_end");
	ck_assert_str_eq(str(event(&f, 1), "toolCallId"), "t1");
	ck_assert_uint_eq(json_object_size(f.parser.tools), 0);
	fx_release(&f);
}
END_TEST

START_TEST(test_no_terminal_line_leaves_the_outcome_open)
{
	struct fx f;

	fx_init(&f, "claude");
	feed(&f, "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"S1\"}");
	feed(&f, "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"half\"}]}}");
	cli_parser_finish(&f.parser, collect, &f.t);
	ck_assert(!f.parser.terminal);
	ck_assert_str_eq(f.parser.session_id, "S1");
	fx_release(&f);
}
END_TEST

START_TEST(test_terminal_line_is_settled_until_something_follows_it)
{
	struct fx f;

	fx_init(&f, "pi");
	feed(&f, "{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"content\":[],"
		 "\"stopReason\":\"toolUse\"}}");
	ck_assert(f.parser.terminal && f.parser.settled);
	feed(&f, "{\"type\":\"agent_end\",\"messages\":[]}");
	ck_assert(f.parser.settled);
	feed(&f, "{\"type\":\"tool_execution_start\",\"toolCallId\":\"c\",\"toolName\":\"bash\"}");
	ck_assert(f.parser.terminal && !f.parser.settled);
	fx_release(&f);
	fx_init(&f, "claude");
	feed_file(&f, "claude-success.jsonl");
	ck_assert(f.parser.settled);
	fx_release(&f);
}
END_TEST

/* Numbers from a hostile CLI. */

START_TEST(test_huge_counts_and_delays_saturate_and_negative_ones_are_dropped)
{
	struct fx f;
	json_t *ev;

	fx_init(&f, "claude");
	feed_file(&f, "claude-hostile-numbers.jsonl");
	ck_assert_str_eq(f.t.text, "session:S-num|provider_retry|start|delta:Counted.|end|ok");
	ck_assert_int_eq(f.parser.input_tokens, NUMBER_MAX);
	ck_assert_int_eq(f.parser.output_tokens, NUMBER_MAX);
	ev = event(&f, 0);
	ck_assert_ptr_null(json_object_get(ev, "attempt"));
	ck_assert_int_eq(num(ev, "maxAttempts"), NUMBER_MAX);
	ck_assert_int_eq(num(ev, "delayMs"), NUMBER_MAX);
	/* error_status -529 is no status to put first. */
	ck_assert_str_eq(str(ev, "errorMessage"), "overloaded");
	fx_release(&f);
}
END_TEST

START_TEST(test_negative_and_fractional_counts_are_treated_as_absent)
{
	struct fx f;
	json_t *ev;

	fx_init(&f, "claude");
	feed_file(&f, "claude-negative-usage.jsonl");
	ck_assert_str_eq(f.t.text, "session:S-neg|provider_retry|start|delta:Negative.|end|ok");
	ck_assert_int_eq(f.parser.input_tokens, 0);
	ck_assert_int_eq(f.parser.output_tokens, 0);
	ev = event(&f, 0);
	ck_assert_ptr_null(json_object_get(ev, "attempt"));
	ck_assert_ptr_null(json_object_get(ev, "maxAttempts"));
	ck_assert_ptr_null(json_object_get(ev, "delayMs"));
	ck_assert_str_eq(str(ev, "errorMessage"), "529 overloaded");
	fx_release(&f);
}
END_TEST

START_TEST(test_captured_counts_too_long_for_an_integer_saturate)
{
	struct fx f;

	fx_init(&f, "codex");
	feed(&f, "{\"type\":\"error\",\"message\":\"Reconnecting... 99999999999999999999/5\"}");
	ck_assert_str_eq(f.t.text, "provider_retry");
	ck_assert_int_eq(num(event(&f, 0), "attempt"), NUMBER_MAX);
	ck_assert_int_eq(num(event(&f, 0), "maxAttempts"), 5);
	fx_release(&f);
}
END_TEST

Suite *cli_parser_suite(void)
{
	Suite *s = suite_create("cli_parser");
	TCase *claude = tcase_create("claude");
	TCase *codex = tcase_create("codex");
	TCase *gemini = tcase_create("gemini");
	TCase *pi = tcase_create("pi");
	TCase *any = tcase_create("any");

	tcase_add_test(claude, test_claude_success_streams_tool_call_then_text_and_ends_well);
	tcase_add_test(claude, test_claude_thinking_block_comes_whole_with_its_signature_before_the_text);
	tcase_add_test(claude, test_claude_thinking_text_and_tool_in_one_line_keep_blocks_apart);
	tcase_add_test(claude, test_claude_api_retry_lines_are_notices_and_is_error_success_is_a_failure);
	tcase_add_test(claude, test_claude_auth_failure_keeps_its_status_typed);
	tcase_add_test(claude, test_claude_error_subtypes_without_text_fail_with_subtype_or_errors);
	tcase_add_test(claude, test_claude_session_id_newest_wins_and_repeats_are_quiet);
	tcase_add_test(codex, test_codex_success_maps_command_items_to_tool_events);
	tcase_add_test(codex, test_codex_reconnecting_errors_are_notices_and_turn_failed_decides);
	tcase_add_test(codex, test_codex_run_that_recovers_after_reconnects_is_a_success);
	tcase_add_test(codex, test_codex_auth_failure_keeps_its_401);
	tcase_add_test(codex, test_codex_reconnect_without_counts_is_still_a_notice);
	tcase_add_test(gemini, test_gemini_success_tool_then_delta_text);
	tcase_add_test(gemini, test_gemini_delta_chunks_share_one_text_block);
	tcase_add_test(gemini, test_gemini_overload_and_auth_results_fail_with_their_message);
	tcase_add_test(pi, test_pi_success_session_header_deltas_and_last_message_end);
	tcase_add_test(pi, test_pi_thinking_deltas_are_one_block_signed_at_thinking_end_before_the_text);
	tcase_add_test(pi, test_thinking_deltas_close_on_text_tool_call_or_the_end);
	tcase_add_test(pi, test_pi_exit_zero_failure_is_read_from_stop_reason);
	tcase_add_test(pi, test_pi_later_message_end_replaces_an_earlier_failure);
	tcase_add_test(any, test_non_json_and_unknown_lines_are_skipped_not_fatal);
	tcase_add_test(any, test_tool_end_without_start_gets_one_and_finish_ends_open_calls);
	tcase_add_test(any, test_repeated_tool_use_line_starts_the_call_once_and_ends_it_once);
	tcase_add_test(any, test_no_terminal_line_leaves_the_outcome_open);
	tcase_add_test(any, test_terminal_line_is_settled_until_something_follows_it);
	tcase_add_test(any, test_huge_counts_and_delays_saturate_and_negative_ones_are_dropped);
	tcase_add_test(any, test_negative_and_fractional_counts_are_treated_as_absent);
	tcase_add_test(any, test_captured_counts_too_long_for_an_integer_saturate);
	suite_add_tcase(s, claude);
	suite_add_tcase(s, codex);
	suite_add_tcase(s, gemini);
	suite_add_tcase(s, pi);
	suite_add_tcase(s, any);
	return s;
}

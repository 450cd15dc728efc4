#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/command.h"

Suite *command_suite(void);

static int parse(const char *line, struct command *cmd)
{
	return command_parse(line, strlen(line), cmd);
}

START_TEST(test_prompt_parses_message_id_and_behavior)
{
	struct command c;

	ck_assert_int_eq(parse("{\"id\":\"r1\",\"type\":\"prompt\",\"message\":\"hi\","
			       "\"streamingBehavior\":\"followUp\"}", &c), 0);
	ck_assert_int_eq(c.type, CMD_PROMPT);
	ck_assert_str_eq(c.id, "r1");
	ck_assert_str_eq(c.name, "prompt");
	ck_assert_str_eq(c.message, "hi");
	ck_assert_int_eq(c.behavior, BEHAVIOR_FOLLOW_UP);
	ck_assert_ptr_null(c.images);
	command_release(&c);
}
END_TEST

START_TEST(test_thinking_level_commands_parse_and_refuse_a_level_pi_does_not_have)
{
	struct command c;

	ck_assert_int_eq(parse("{\"type\":\"set_thinking_level\",\"level\":\"xhigh\"}", &c), 0);
	ck_assert_int_eq(c.type, CMD_SET_THINKING_LEVEL);
	ck_assert_str_eq(c.level, "xhigh");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"cycle_thinking_level\"}", &c), 0);
	ck_assert_int_eq(c.type, CMD_CYCLE_THINKING_LEVEL);
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"set_thinking_level\",\"level\":\"max\"}", &c), -1);
	ck_assert_str_eq(c.error, "set_thinking_level: field \"level\" must be one of \"off\", "
			 "\"minimal\", \"low\", \"medium\", \"high\", \"xhigh\"");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"set_thinking_level\"}", &c), -1);
	ck_assert_ptr_nonnull(strstr(c.error, "\"level\""));
	command_release(&c);
}
END_TEST

START_TEST(test_not_json_is_parse_error_without_id)
{
	struct command c;

	ck_assert_int_eq(parse("{nope", &c), -1);
	ck_assert_str_eq(c.name, "parse");
	ck_assert_ptr_null(c.id);
	ck_assert_msg(strncmp(c.error, "Failed to parse command: ", 25) == 0, "%s", c.error);
	command_release(&c);
}
END_TEST

START_TEST(test_invalid_utf8_is_parse_error)
{
	struct command c;

	ck_assert_int_eq(parse("{\"type\":\"prompt\",\"message\":\"\xff\xfe\"}", &c), -1);
	ck_assert_str_eq(c.name, "parse");
	ck_assert_msg(strncmp(c.error, "Failed to parse command: ", 25) == 0, "%s", c.error);
	command_release(&c);
}
END_TEST

START_TEST(test_non_object_is_parse_error)
{
	struct command c;

	ck_assert_int_eq(parse("[1,2]", &c), -1);
	ck_assert_str_eq(c.name, "parse");
	ck_assert_ptr_nonnull(strstr(c.error, "expected a JSON object"));
	command_release(&c);
}
END_TEST

START_TEST(test_missing_or_non_string_type_is_parse_error_keeping_id)
{
	struct command c;

	ck_assert_int_eq(parse("{\"id\":\"x\"}", &c), -1);
	ck_assert_str_eq(c.name, "parse");
	ck_assert_str_eq(c.id, "x");
	ck_assert_ptr_nonnull(strstr(c.error, "missing \"type\""));
	command_release(&c);
	ck_assert_int_eq(parse("{\"id\":\"y\",\"type\":7}", &c), -1);
	ck_assert_str_eq(c.name, "parse");
	ck_assert_ptr_nonnull(strstr(c.error, "\"type\" must be a string, not a number"));
	command_release(&c);
}
END_TEST

START_TEST(test_unknown_command_names_type_and_keeps_id)
{
	struct command c;

	ck_assert_int_eq(parse("{\"id\":\"u\",\"type\":\"frobnicate\"}", &c), -1);
	ck_assert_str_eq(c.name, "frobnicate");
	ck_assert_str_eq(c.id, "u");
	ck_assert_str_eq(c.error, "Unknown command: frobnicate");
	command_release(&c);
}
END_TEST

START_TEST(test_type_is_judged_before_a_bad_id)
{
	struct command c;

	ck_assert_int_eq(parse("{\"id\":{\"n\":7},\"type\":\"frobnicate\"}", &c), -1);
	ck_assert_str_eq(c.name, "frobnicate");
	ck_assert_ptr_null(c.id);
	ck_assert_str_eq(c.error, "Unknown command: frobnicate");
	command_release(&c);
	ck_assert_int_eq(parse("{\"id\":[1],\"type\":\"bash\"}", &c), -1);
	ck_assert_int_eq(c.type, CMD_UNSUPPORTED);
	ck_assert_str_eq(c.error, "bash is not supported: retryd runs no shell commands");
	command_release(&c);
	/* A command we run still gets the id error, before its fields are read. */
	ck_assert_int_eq(parse("{\"id\":[true],\"type\":\"prompt\"}", &c), -1);
	ck_assert_str_eq(c.error, "prompt: field \"id\" must be a string, a number, true, false "
			 "or null, not an array");
	command_release(&c);
}
END_TEST

/* The id's value as a response would carry it, compact. */
static void assert_id_echo(const char *line, const char *want)
{
	struct command c;
	json_t *v;
	char *text;

	command_parse(line, strlen(line), &c);
	ck_assert_ptr_nonnull(c.id);
	v = command_id_value(c.id);
	text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	ck_assert_str_eq(text, want);
	free(text);
	json_decref(v);
	command_release(&c);
}

START_TEST(test_every_scalar_id_comes_back_as_the_same_json_value)
{
	assert_id_echo("{\"id\":\"r1\",\"type\":\"get_state\"}", "\"r1\"");
	assert_id_echo("{\"id\":1,\"type\":\"get_state\"}", "1");
	assert_id_echo("{\"id\":-9007199254740993,\"type\":\"get_state\"}", "-9007199254740993");
	assert_id_echo("{\"id\":2.5,\"type\":\"get_state\"}", "2.5");
	assert_id_echo("{\"id\":1e3,\"type\":\"get_state\"}", "1000.0");
	assert_id_echo("{\"id\":true,\"type\":\"get_state\"}", "true");
	/* A string that starts with the mark is still that string. */
	assert_id_echo("{\"id\":\"\\u001f7\",\"type\":\"get_state\"}", "\"\\u001F7\"");
	/* Unknown commands and parse errors keep a number id too. */
	assert_id_echo("{\"id\":7,\"type\":\"frobnicate\"}", "7");
	assert_id_echo("{\"id\":8}", "8");
}
END_TEST

static void oversize(const char *head, struct command *c)
{
	command_parse_oversize(head, strlen(head), 1024, c);
	ck_assert_str_eq(c->name, "parse");
	ck_assert_str_eq(c->error, "Failed to parse command: line longer than rpc.maxLineBytes "
			 "(1024 bytes); the rest of it was discarded");
}

START_TEST(test_an_oversize_line_keeps_the_id_its_start_holds_complete)
{
	struct command c;
	json_t *v;

	oversize("{\"type\":\"prompt\",\"images\":[{\"a\":\"}]\"}],\"id\":42,\"message\":\"xxx", &c);
	ck_assert_ptr_nonnull(c.id);
	v = command_id_value(c.id);
	ck_assert_int_eq(json_integer_value(v), 42);
	json_decref(v);
	command_release(&c);
	oversize(" { \"id\" : \"s1\" , \"message\":\"xx", &c);
	ck_assert_str_eq(c.id, "s1");
	command_release(&c);
	/* Cut inside the id, behind the cut, or not an object: no id. */
	const char *none[] = { "{\"id\":12", "{\"id\":\"ab", "{\"message\":\"xx\",\"i",
			       "{\"message\":\"xxx", "[{\"id\":1}", "{\"id\":[1,2],\"m\":1", "" };

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		oversize(none[i], &c);
		ck_assert_msg(c.id == NULL, "%s", none[i]);
		command_release(&c);
	}
}
END_TEST

START_TEST(test_precedence_follows_the_documented_table)
{
	/* Each line breaks two rows of protocol/README.md section 4; the earlier row answers. */
	static const struct {
		const char *line;
		const char *name;
		const char *id;
		const char *error;
	} cases[] = {
		{ "[{\"type\":5}]", "parse", NULL,
		  "Failed to parse command: expected a JSON object, got an array" },
		{ "{\"id\":\"a\",\"message\":5}", "parse", "a",
		  "Failed to parse command: missing \"type\" (a string naming the command)" },
		{ "{\"id\":1,\"type\":null}", "parse", "\x1f" "1",
		  "Failed to parse command: \"type\" must be a string, not null" },
		{ "{\"id\":\"b\",\"type\":\"nope\",\"message\":5}", "nope", "b",
		  "Unknown command: nope" },
		{ "{\"id\":{},\"type\":\"compact\"}", "compact", NULL,
		  "compact is not supported: retryd does not compact conversations" },
		{ "{\"id\":[2],\"type\":\"prompt\",\"message\":5}", "prompt", NULL,
		  "prompt: field \"id\" must be a string, a number, true, false or null, not an array" },
		{ "{\"id\":null,\"type\":\"steer\"}", "steer", NULL,
		  "steer: missing required field \"message\" (a string)" },
		{ "{\"id\":\"c\",\"type\":\"prompt\",\"images\":5}", "prompt", "c",
		  "prompt: missing required field \"message\" (a string)" },
		/* Within a command, fields are checked in their documented order. */
		{ "{\"id\":\"d\",\"type\":\"prompt\",\"message\":\"m\",\"streamingBehavior\":\"x\","
		  "\"images\":[1]}", "prompt", "d", "prompt: images[0] must be an object" },
		{ "{\"id\":\"e\",\"type\":\"prompt\",\"message\":\"m\",\"retry\":1,"
		  "\"streamingBehavior\":\"x\"}", "prompt", "e",
		  "prompt: field \"streamingBehavior\" must be \"steer\" or \"followUp\"" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct command c;

		ck_assert_int_eq(parse(cases[i].line, &c), -1);
		ck_assert_str_eq(c.name, cases[i].name);
		if (cases[i].id == NULL)
			ck_assert_ptr_null(c.id);
		else
			ck_assert_str_eq(c.id, cases[i].id);
		ck_assert_str_eq(c.error, cases[i].error);
		command_release(&c);
	}
}
END_TEST

START_TEST(test_pi_command_without_meaning_is_refused_with_reason)
{
	struct command c;

	ck_assert_int_eq(parse("{\"type\":\"bash\",\"command\":\"ls\"}", &c), -1);
	ck_assert_int_eq(c.type, CMD_UNSUPPORTED);
	ck_assert_str_eq(c.error, "bash is not supported: retryd runs no shell commands");
	command_release(&c);
}
END_TEST

START_TEST(test_abort_and_prompt_parses_message_images_and_retry)
{
	struct command c;

	ck_assert_int_eq(parse("{\"id\":\"r\",\"type\":\"abort_and_prompt\",\"message\":\"new\","
			       "\"images\":[{\"type\":\"image\",\"data\":\"aGk=\",\"mimeType\":\"image/png\"}],"
			       "\"retry\":{\"maxRetries\":1}}", &c), 0);
	ck_assert_int_eq(c.type, CMD_ABORT_AND_PROMPT);
	ck_assert_str_eq(c.message, "new");
	ck_assert_int_eq(json_array_size(c.images), 1);
	ck_assert_ptr_nonnull(c.retry);
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"abort_and_prompt\"}", &c), -1);
	ck_assert_str_eq(c.error, "abort_and_prompt: missing required field \"message\" (a string)");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"abort_and_prompt\",\"message\":\"m\",\"retry\":3}", &c), -1);
	ck_assert_str_eq(c.error, "abort_and_prompt: field \"retry\" must be an object of retry "
			 "settings, not a number");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"abort_and_prompt\",\"message\":\"m\","
			       "\"images\":[{\"type\":\"image\",\"data\":\"a b=\",\"mimeType\":\"image/png\"}]}",
			       &c), -1);
	ck_assert_ptr_nonnull(strstr(c.error, "abort_and_prompt: images[0].data must be base64"));
	command_release(&c);
}
END_TEST

START_TEST(test_the_pi_1_6_and_oh_my_pi_18_3_commands_parse_their_fields)
{
	struct command c;

	ck_assert_int_eq(parse("{\"type\":\"set_event_filter\",\"events\":null}", &c), 0);
	ck_assert_int_eq(c.type, CMD_SET_EVENT_FILTER);
	ck_assert(json_is_null(c.events));
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"set_event_filter\"}", &c), -1);
	ck_assert_str_eq(c.error, "set_event_filter: missing required field \"events\" (null, or "
			 "an array of event type names)");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"open_session\",\"sessionDir\":\"/s\"}", &c), 0);
	ck_assert_int_eq(c.type, CMD_OPEN_SESSION);
	ck_assert_str_eq(c.text, "/s");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"open_session\",\"sessionDir\":3}", &c), -1);
	ck_assert_str_eq(c.error, "open_session: field \"sessionDir\" must be a string, not a number");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"get_entries\",\"since\":\"0000000a\"}", &c), 0);
	ck_assert_int_eq(c.type, CMD_GET_ENTRIES);
	ck_assert_str_eq(c.text, "0000000a");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"get_entries\"}", &c), 0);
	ck_assert_ptr_null(c.text);
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"clear_queue\"}", &c), 0);
	ck_assert_int_eq(c.type, CMD_CLEAR_QUEUE);
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"get_available_thinking_levels\"}", &c), 0);
	ck_assert_int_eq(c.type, CMD_GET_AVAILABLE_THINKING_LEVELS);
	command_release(&c);
	ck_assert_int_eq(parse("{\"id\":\"t\",\"type\":\"get_tree\"}", &c), -1);
	ck_assert_int_eq(c.type, CMD_UNSUPPORTED);
	ck_assert_str_eq(c.id, "t");
	ck_assert_ptr_nonnull(strstr(c.error, "get_tree is not supported: a retryd session is one line"));
	command_release(&c);
}
END_TEST

START_TEST(test_get_available_commands_is_a_command_retryd_runs)
{
	struct command c;
	bool listed = false;

	ck_assert_int_eq(parse("{\"id\":\"g\",\"type\":\"get_available_commands\"}", &c), 0);
	ck_assert_int_eq(c.type, CMD_GET_AVAILABLE_COMMANDS);
	command_release(&c);
	for (size_t i = 0; command_names[i] != NULL; i++)
		listed = listed || strcmp(command_names[i], "get_available_commands") == 0;
	ck_assert(listed);
}
END_TEST

START_TEST(test_missing_field_error_names_the_field)
{
	struct command c;

	ck_assert_int_eq(parse("{\"type\":\"prompt\"}", &c), -1);
	ck_assert_str_eq(c.name, "prompt");
	ck_assert_str_eq(c.error, "prompt: missing required field \"message\" (a string)");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"set_auto_retry\"}", &c), -1);
	ck_assert_ptr_nonnull(strstr(c.error, "\"enabled\""));
	command_release(&c);
}
END_TEST

START_TEST(test_mistyped_field_error_names_field_and_kind)
{
	struct command c;

	ck_assert_int_eq(parse("{\"type\":\"prompt\",\"message\":42}", &c), -1);
	ck_assert_str_eq(c.error, "prompt: field \"message\" must be a string, not a number");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"set_auto_retry\",\"enabled\":\"yes\"}", &c), -1);
	ck_assert_str_eq(c.error,
			 "set_auto_retry: field \"enabled\" must be true or false, not a string");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"prompt\",\"message\":\"m\",\"streamingBehavior\":\"later\"}", &c), -1);
	ck_assert_ptr_nonnull(strstr(c.error, "\"streamingBehavior\" must be \"steer\" or \"followUp\""));
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"get_state\",\"id\":{}}", &c), -1);
	ck_assert_str_eq(c.error, "get_state: field \"id\" must be a string, a number, true, "
			 "false or null, not an object");
	command_release(&c);
}
END_TEST

START_TEST(test_set_auto_retry_persists_unless_told_not_to)
{
	struct command c;

	ck_assert_int_eq(parse("{\"type\":\"set_auto_retry\",\"enabled\":false}", &c), 0);
	ck_assert(c.persist);
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"set_auto_retry\",\"enabled\":false,\"persist\":null}", &c), 0);
	ck_assert(c.persist);
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"set_auto_retry\",\"enabled\":false,\"persist\":false}", &c), 0);
	ck_assert(!c.persist);
	ck_assert(!c.enabled);
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"set_auto_retry\",\"enabled\":true,\"persist\":\"no\"}", &c), -1);
	ck_assert_str_eq(c.error, "set_auto_retry: field \"persist\" must be true or false, not a string");
	command_release(&c);
}
END_TEST

START_TEST(test_images_are_checked_item_by_item)
{
	struct command c;

	ck_assert_int_eq(parse("{\"type\":\"prompt\",\"message\":\"m\",\"images\":"
			       "[{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"}]}", &c), 0);
	ck_assert_ptr_nonnull(c.images);
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"prompt\",\"message\":\"m\",\"images\":"
			       "[{\"type\":\"image\",\"mimeType\":\"image/png\"}]}", &c), -1);
	ck_assert_str_eq(c.error, "prompt: images[0].data must be a base64 string");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"prompt\",\"message\":\"m\",\"images\":{}}", &c), -1);
	ck_assert_ptr_nonnull(strstr(c.error, "\"images\" must be an array"));
	command_release(&c);
}
END_TEST

/* The error for a prompt whose only image has this data and mimeType, or "" when accepted. */
static const char *image_verdict(const char *data, const char *mime, struct command *c)
{
	char line[512];

	snprintf(line, sizeof(line), "{\"type\":\"prompt\",\"message\":\"m\",\"images\":"
		 "[{\"type\":\"image\",\"data\":\"%s\",\"mimeType\":\"%s\"}]}", data, mime);
	if (parse(line, c) == 0)
		strcpy(c->error, "");
	command_release(c);
	return c->error;
}

START_TEST(test_image_data_must_be_padded_standard_base64)
{
	static const char *const good[] = {
		"aGk=", "AAAA", "AA==", "AAA=", "iVBORw0KGgo=", "+/+/", "aGVsbG8gd29ybGQ=",
	};
	static const struct {
		const char *data;
		const char *error;
	} bad[] = {
		{ "", "prompt: images[0].data must be base64 (it is empty)" },
		{ "A", "prompt: images[0].data must be base64 "
		       "(its length 1 is not a multiple of 4; is the '=' padding missing?)" },
		{ "aGk", "prompt: images[0].data must be base64 "
			 "(its length 3 is not a multiple of 4; is the '=' padding missing?)" },
		{ "aGVsbG8", "prompt: images[0].data must be base64 "
			     "(its length 7 is not a multiple of 4; is the '=' padding missing?)" },
		{ "aGk==", "prompt: images[0].data must be base64 "
			   "(its length 5 is not a multiple of 4; is the '=' padding missing?)" },
		{ "A===", "prompt: images[0].data must be base64 "
			  "('=' at byte 1: padding is one or two '=' at the end only)" },
		{ "====", "prompt: images[0].data must be base64 "
			  "('=' at byte 0: padding is one or two '=' at the end only)" },
		{ "AA=A", "prompt: images[0].data must be base64 "
			  "('=' at byte 2: padding is one or two '=' at the end only)" },
		{ "aGk=aGk=", "prompt: images[0].data must be base64 "
			      "('=' at byte 3: padding is one or two '=' at the end only)" },
		{ "aGVs\\nbG8=", "prompt: images[0].data must be base64 "
				 "(a newline at byte 4; whitespace and line breaks are not accepted)" },
		{ "aGVs bG8=", "prompt: images[0].data must be base64 "
			       "(a space at byte 4; whitespace and line breaks are not accepted)" },
		{ "AA==\\n", "prompt: images[0].data must be base64 "
			    "(a newline at byte 4; whitespace and line breaks are not accepted)" },
		{ "aGk=\\r\\n", "prompt: images[0].data must be base64 "
				"(a carriage return at byte 4; whitespace and line breaks are not accepted)" },
		{ "ab-_", "prompt: images[0].data must be base64 "
			  "('-' at byte 2 is URL-safe base64; use the standard alphabet with '+' and '/')" },
		{ "abc_", "prompt: images[0].data must be base64 "
			  "('_' at byte 3 is URL-safe base64; use the standard alphabet with '+' and '/')" },
		{ "ab.c", "prompt: images[0].data must be base64 "
			  "('.' at byte 2 is not in the base64 alphabet)" },
		{ "ab\xc3\xa9", "prompt: images[0].data must be base64 "
				"(byte 2 is 0xc3, not in the base64 alphabet)" },
		{ "\\u0001AAA", "prompt: images[0].data must be base64 "
				"(byte 0 is 0x01, not in the base64 alphabet)" },
		{ "data:image/png;base64,aGk=", "prompt: images[0].data must be base64 "
						"(':' at byte 4 is not in the base64 alphabet)" },
	};
	struct command c;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(strcmp(image_verdict(good[i], "image/png", &c), "") == 0, "%s: %s",
			      good[i], c.error);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_str_eq(image_verdict(bad[i].data, "image/png", &c), bad[i].error);
}
END_TEST

START_TEST(test_image_error_names_the_failing_index_and_command)
{
	struct command c;

	ck_assert_int_eq(parse("{\"type\":\"follow_up\",\"message\":\"m\",\"images\":["
			       "{\"type\":\"image\",\"data\":\"aGk=\",\"mimeType\":\"image/png\"},"
			       "{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/jpeg\"},"
			       "{\"type\":\"image\",\"data\":\"aGk\",\"mimeType\":\"image/png\"}]}", &c), -1);
	ck_assert_str_eq(c.error, "follow_up: images[2].data must be base64 "
				  "(its length 3 is not a multiple of 4; is the '=' padding missing?)");
	command_release(&c);
	/* data is judged before mimeType. */
	ck_assert_int_eq(parse("{\"type\":\"steer\",\"message\":\"m\",\"images\":["
			       "{\"type\":\"image\",\"data\":\"a-k=\",\"mimeType\":5}]}", &c), -1);
	ck_assert_ptr_nonnull(strstr(c.error, "steer: images[0].data must be base64 ('-' at byte 1"));
	command_release(&c);
}
END_TEST

START_TEST(test_image_mime_type_must_be_a_bare_media_type)
{
	static const char *const good[] = { "image/png", "image/jpeg", "image/svg+xml", "x/y" };
	static const char *const bad[] = {
		"", "png", "image/", "/png", "image png", "image/png; q=1", "image/png,x", "image/a/b",
		"image/p\\u00e9ng",
	};
	struct command c;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(strcmp(image_verdict("aGk=", good[i], &c), "") == 0, "%s: %s", good[i],
			      c.error);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_str_eq(image_verdict("aGk=", bad[i], &c),
				 "prompt: images[0].mimeType must be a media type such as \"image/png\"");
	ck_assert_int_eq(parse("{\"type\":\"prompt\",\"message\":\"m\",\"images\":"
			       "[{\"type\":\"image\",\"data\":\"aGk=\"}]}", &c), -1);
	ck_assert_str_eq(c.error, "prompt: images[0].mimeType must be a string");
	command_release(&c);
}
END_TEST

START_TEST(test_set_model_and_modes_parse_their_fields)
{
	struct command c;

	ck_assert_int_eq(parse("{\"type\":\"set_model\",\"provider\":\"sim\",\"modelId\":\"m2\"}", &c), 0);
	ck_assert_str_eq(c.provider, "sim");
	ck_assert_str_eq(c.model_id, "m2");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"set_steering_mode\",\"mode\":\"all\"}", &c), 0);
	ck_assert_str_eq(c.mode, "all");
	command_release(&c);
	ck_assert_int_eq(parse("{\"type\":\"set_follow_up_mode\",\"mode\":\"some\"}", &c), -1);
	command_release(&c);
}
END_TEST

START_TEST(test_huge_unknown_type_is_truncated_in_error)
{
	char line[2048];
	struct command c;

	memset(line, 0, sizeof(line));
	strcpy(line, "{\"type\":\"");
	memset(line + strlen(line), 'z', 1000);
	strcat(line, "\"}");
	ck_assert_int_eq(parse(line, &c), -1);
	ck_assert_uint_lt(strlen(c.error), sizeof(c.error));
	ck_assert_ptr_nonnull(strstr(c.error, "..."));
	command_release(&c);
}
END_TEST

Suite *command_suite(void)
{
	Suite *s = suite_create("command");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_prompt_parses_message_id_and_behavior);
	tcase_add_test(tc, test_thinking_level_commands_parse_and_refuse_a_level_pi_does_not_have);
	tcase_add_test(tc, test_set_auto_retry_persists_unless_told_not_to);
	tcase_add_test(tc, test_not_json_is_parse_error_without_id);
	tcase_add_test(tc, test_invalid_utf8_is_parse_error);
	tcase_add_test(tc, test_non_object_is_parse_error);
	tcase_add_test(tc, test_missing_or_non_string_type_is_parse_error_keeping_id);
	tcase_add_test(tc, test_unknown_command_names_type_and_keeps_id);
	tcase_add_test(tc, test_type_is_judged_before_a_bad_id);
	tcase_add_test(tc, test_precedence_follows_the_documented_table);
	tcase_add_test(tc, test_pi_command_without_meaning_is_refused_with_reason);
	tcase_add_test(tc, test_abort_and_prompt_parses_message_images_and_retry);
	tcase_add_test(tc, test_get_available_commands_is_a_command_retryd_runs);
	tcase_add_test(tc, test_the_pi_1_6_and_oh_my_pi_18_3_commands_parse_their_fields);
	tcase_add_test(tc, test_missing_field_error_names_the_field);
	tcase_add_test(tc, test_mistyped_field_error_names_field_and_kind);
	tcase_add_test(tc, test_images_are_checked_item_by_item);
	tcase_add_test(tc, test_image_data_must_be_padded_standard_base64);
	tcase_add_test(tc, test_image_error_names_the_failing_index_and_command);
	tcase_add_test(tc, test_image_mime_type_must_be_a_bare_media_type);
	tcase_add_test(tc, test_set_model_and_modes_parse_their_fields);
	tcase_add_test(tc, test_huge_unknown_type_is_truncated_in_error);
	tcase_add_test(tc, test_every_scalar_id_comes_back_as_the_same_json_value);
	tcase_add_test(tc, test_an_oversize_line_keeps_the_id_its_start_holds_complete);
	suite_add_tcase(s, tc);
	return s;
}

/* Fuzz target "cli": an agent CLI's stdout through its profile's line parser
 * (src/provider/cli/cli_profile.c, src/provider/cli/cli_parser.c). Input: byte 0 picks the built-in
 * profile (claude, codex, gemini, pi), the rest is the CLI's stdout, split at
 * LF as provider_cli splits it.
 *
 * Invariants besides ASan/UBSan: text deltas only inside an open text block,
 * blocks never nested, every block closed by the end; every text and error is
 * NUL-terminated UTF-8 of the length it claims; every tool_execution_end has
 * a start with its toolCallId and every start one end by the end; every event
 * serializes; a terminal outcome that failed carries an error text. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "provider/cli/cli_parser.h"
#include "provider/cli/cli_profile.h"
#include "fuzz.h"

static const char *const profiles[] = { "claude", "codex", "gemini", "pi" };

struct trace {
	bool text_open;
	bool thinking_open;
	json_t *open_tools; /* toolCallId -> true */
};

static void check_text(const char *text, size_t len)
{
	FUZZ_CHECK(text != NULL, "outcome without text");
	FUZZ_CHECK(text[len] == '\0', "text not NUL-terminated at its length %zu", len);
	FUZZ_CHECK(fuzz_utf8_valid(text, len), "text is not UTF-8");
}

static void on_outcome(void *ctx, const struct cli_parser_outcome *o)
{
	struct trace *t = ctx;
	const char *type, *id;
	char *dump;

	switch (o->kind) {
	case CLI_OUT_SESSION:
		check_text(o->text, strlen(o->text));
		break;
	case CLI_OUT_TEXT_START:
		FUZZ_CHECK(!t->text_open && !t->thinking_open, "text_start inside an open block");
		t->text_open = true;
		break;
	case CLI_OUT_TEXT_DELTA:
		FUZZ_CHECK(t->text_open, "text_delta outside a text block");
		check_text(o->text, o->len);
		break;
	case CLI_OUT_TEXT_END:
		FUZZ_CHECK(t->text_open, "text_end without text_start");
		t->text_open = false;
		break;
	case CLI_OUT_THINKING_START:
		FUZZ_CHECK(!t->text_open && !t->thinking_open, "thinking_start inside an open block");
		t->thinking_open = true;
		break;
	case CLI_OUT_THINKING_DELTA:
		FUZZ_CHECK(t->thinking_open, "thinking_delta outside a thinking block");
		check_text(o->text, o->len);
		break;
	case CLI_OUT_THINKING_END:
		FUZZ_CHECK(t->thinking_open, "thinking_end without thinking_start");
		t->thinking_open = false;
		break;
	case CLI_OUT_EVENT:
		FUZZ_CHECK(o->event != NULL, "event outcome without an event");
		dump = json_dumps(o->event, JSON_COMPACT);
		FUZZ_CHECK(dump != NULL, "event does not serialize");
		free(dump);
		type = json_string_value(json_object_get(o->event, "type"));
		FUZZ_CHECK(type != NULL, "event without a type");
		id = json_string_value(json_object_get(o->event, "toolCallId"));
		if (strcmp(type, "tool_execution_start") == 0) {
			FUZZ_CHECK(id != NULL, "tool start without toolCallId");
			FUZZ_CHECK(json_object_get(t->open_tools, id) == NULL, "tool %s started twice", id);
			json_object_set_new(t->open_tools, id, json_true());
		} else if (strcmp(type, "tool_execution_end") == 0) {
			FUZZ_CHECK(id != NULL, "tool end without toolCallId");
			FUZZ_CHECK(json_object_get(t->open_tools, id) != NULL, "tool %s ended unstarted", id);
			json_object_del(t->open_tools, id);
		}
		break;
	case CLI_OUT_TERMINAL:
		if (o->failed) {
			FUZZ_CHECK(o->text != NULL && o->text[0] != '\0', "failed terminal without error");
			check_text(o->text, strlen(o->text));
		}
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_t *builtins;
	static struct cli_profile *profile[4];
	struct cli_parser p;
	struct trace t = { 0 };
	const char *s, *end, *nl;
	char err[512];
	size_t k;

	if (size < 1)
		return 0;
	if (builtins == NULL) {
		builtins = cli_profile_builtins();
		for (k = 0; k < 4; k++) {
			profile[k] = cli_profile_new(profiles[k], json_object_get(builtins, profiles[k]),
						     err, sizeof(err));
			FUZZ_CHECK(profile[k] != NULL, "built-in profile %s refused: %s", profiles[k], err);
		}
	}
	t.open_tools = json_object();
	cli_parser_init(&p, profile[data[0] % 4]);
	s = (const char *)data + 1;
	end = (const char *)data + size;
	while (s < end) {
		nl = memchr(s, '\n', (size_t)(end - s));
		if (nl == NULL)
			nl = end;
		cli_parser_feed(&p, s, (size_t)(nl - s), on_outcome, &t);
		s = nl + 1;
	}
	cli_parser_finish(&p, on_outcome, &t);
	FUZZ_CHECK(!t.text_open, "text block still open after the end");
	FUZZ_CHECK(json_object_size(t.open_tools) == 0, "%zu tool calls never ended",
		   json_object_size(t.open_tools));
	cli_parser_release(&p);
	json_decref(t.open_tools);
	return 0;
}

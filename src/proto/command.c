#include "proto/command.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"

struct command_spec {
	const char *name;
	enum command_type type;
};

static const struct command_spec specs[] = {
	{ "prompt", CMD_PROMPT },
	{ "steer", CMD_STEER },
	{ "follow_up", CMD_FOLLOW_UP },
	{ "abort", CMD_ABORT },
	{ "set_auto_retry", CMD_SET_AUTO_RETRY },
	{ "abort_retry", CMD_ABORT_RETRY },
	{ "get_state", CMD_GET_STATE },
	{ "get_messages", CMD_GET_MESSAGES },
	{ "get_last_assistant_text", CMD_GET_LAST_ASSISTANT_TEXT },
	{ "new_session", CMD_NEW_SESSION },
	{ "set_model", CMD_SET_MODEL },
	{ "get_available_models", CMD_GET_AVAILABLE_MODELS },
	{ "set_thinking_level", CMD_SET_THINKING_LEVEL },
	{ "cycle_thinking_level", CMD_CYCLE_THINKING_LEVEL },
	{ "set_steering_mode", CMD_SET_STEERING_MODE },
	{ "set_follow_up_mode", CMD_SET_FOLLOW_UP_MODE },
	{ "set_session_name", CMD_SET_SESSION_NAME },
	{ "get_session_stats", CMD_GET_SESSION_STATS },
	{ "get_commands", CMD_GET_COMMANDS },
	{ "get_retry_policy", CMD_GET_RETRY_POLICY },
	{ "set_retry_policy", CMD_SET_RETRY_POLICY },
	{ "classify_error", CMD_CLASSIFY_ERROR },
	{ "fleet_clear", CMD_FLEET_CLEAR },
	{ "abort_and_prompt", CMD_ABORT_AND_PROMPT },
	{ "get_available_commands", CMD_GET_AVAILABLE_COMMANDS },
	{ "set_event_filter", CMD_SET_EVENT_FILTER },
	{ "open_session", CMD_OPEN_SESSION },
	{ "clear_queue", CMD_CLEAR_QUEUE },
	{ "get_available_thinking_levels", CMD_GET_AVAILABLE_THINKING_LEVELS },
	{ "get_entries", CMD_GET_ENTRIES },
};

const char *const command_names[] = {
	"prompt", "steer", "follow_up", "abort", "set_auto_retry", "abort_retry",
	"get_state", "get_messages", "get_last_assistant_text", "new_session",
	"set_model", "get_available_models", "set_thinking_level", "cycle_thinking_level",
	"set_steering_mode", "set_follow_up_mode",
	"set_session_name", "get_session_stats", "get_commands", "get_retry_policy",
	"set_retry_policy", "classify_error", "fleet_clear", "abort_and_prompt",
	"get_available_commands", "set_event_filter", "open_session", "clear_queue",
	"get_available_thinking_levels", "get_entries", NULL,
};

/* pi commands with no meaning in retryd, and why. */
static const struct {
	const char *name;
	const char *why;
} unsupported[] = {
	{ "bash", "retryd runs no shell commands" },
	{ "abort_bash", "retryd runs no shell commands" },
	{ "compact", "retryd does not compact conversations" },
	{ "set_auto_compaction", "retryd does not compact conversations" },
	{ "export_html", "retryd does not export HTML" },
	{ "switch_session", "send open_session {\"sessionDir\": FILE} to switch, or start retryd "
			    "with --resume FILE (or --continue for the newest)" },
	{ "fork", "retryd does not fork sessions" },
	{ "get_fork_messages", "retryd does not fork sessions" },
	{ "branch", "retryd does not fork sessions" },
	{ "get_branch_messages", "retryd does not fork sessions" },
	{ "cycle_model", "use get_available_models and set_model" },
	{ "extension_ui_response", "retryd has no extensions" },
	{ "handoff", "retryd does not hand off sessions" },
	{ "get_tree", "a retryd session is one line of messages, not a tree of branches; "
		      "get_entries lists them" },
};

/* Sets cmd->error; `return fail(...)` answers -1. */
#define fail(cmd, ...) errbuf_set((cmd)->error, sizeof((cmd)->error), __VA_ARGS__)

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER:
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "a value";
}

/* A required string field. */
static int need_string(struct command *cmd, const char *field, const char **out)
{
	json_t *v = json_object_get(cmd->root, field);

	if (v == NULL)
		return fail(cmd, "%s: missing required field \"%s\" (a string)", cmd->name, field);
	if (!json_is_string(v))
		return fail(cmd, "%s: field \"%s\" must be a string, not %s", cmd->name, field,
			    json_kind(v));
	*out = json_string_value(v);
	return 0;
}

static int opt_string(struct command *cmd, const char *field, const char **out)
{
	json_t *v = json_object_get(cmd->root, field);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	return need_string(cmd, field, out);
}

static bool is_base64_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

static const char *whitespace_name(unsigned char c)
{
	switch (c) {
	case ' ': return "a space";
	case '\t': return "a tab";
	case '\n': return "a newline";
	case '\r': return "a carriage return";
	case '\f': return "a form feed";
	case '\v': return "a vertical tab";
	}
	return NULL;
}

/* 0 when s[0..len) is standard base64 (RFC 4648 section 4) as pi's clients
 * send it: the alphabet A-Z a-z 0-9 + /, padded with '=' to a multiple of 4,
 * and nothing else. Otherwise -1 and why[] says where it goes wrong. The
 * providers pass the data on unchanged, so this is the only place a bad one
 * is caught before it costs a request. Bits that padding discards are not
 * checked, as common decoders do not check them either. */
static int base64_problem(const char *s, size_t len, char *why, size_t whylen)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *ws = whitespace_name(c);

		if (is_base64_char(c))
			continue;
		if (c == '=') {
			size_t end = i;

			while (end < len && s[end] == '=')
				end++;
			/* Padding followed by a stray byte: name the byte (a trailing
			 * newline is the usual one), not the padding. */
			if (end - i <= 2 && (end == len || !is_base64_char((unsigned char)s[end]))) {
				i = end - 1;
				continue;
			}
			return errbuf_set(why, whylen, "'=' at byte %zu: padding is one "
					  "or two '=' at the end only", i);
		}
		if (ws != NULL)
			return errbuf_set(why, whylen, "%s at byte %zu; whitespace and line "
					  "breaks are not accepted", ws, i);
		if (c == '-' || c == '_')
			return errbuf_set(why, whylen, "'%c' at byte %zu is URL-safe base64; "
					  "use the standard alphabet with '+' and '/'", c, i);
		if (c > 0x20 && c < 0x7f)
			return errbuf_set(why, whylen, "'%c' at byte %zu is not in the base64 alphabet", c, i);
		return errbuf_set(why, whylen, "byte %zu is 0x%02x, not in the base64 alphabet", i,
				  (unsigned)c);
	}
	if (len == 0)
		return errbuf_set(why, whylen, "it is empty");
	if (len % 4 != 0)
		return errbuf_set(why, whylen, "its length %zu is not a multiple of 4; "
				  "is the '=' padding missing?", len);
	return 0;
}

/* "type/subtype" of RFC 2045 token characters, without parameters: the
 * Anthropic API takes it as media_type and the OpenAI one inside a data: URL
 * ("data:<mimeType>;base64,..."), where a ';' or ',' would break the URL. */
static bool is_media_type(const char *s)
{
	const char *slash = strchr(s, '/');
	size_t n;

	if (slash == NULL || slash == s || slash[1] == '\0')
		return false;
	for (n = 0; s[n] != '\0'; n++) {
		unsigned char c = (unsigned char)s[n];

		if (s + n == slash)
			continue;
		if (c <= 0x20 || c >= 0x7f || strchr("()<>@,;:\\\"/[]?=", c) != NULL)
			return false;
	}
	return true;
}

static int parse_images(struct command *cmd)
{
	json_t *images = json_object_get(cmd->root, "images");
	size_t i;
	json_t *img;

	if (images == NULL || json_is_null(images))
		return 0;
	if (!json_is_array(images))
		return fail(cmd, "%s: field \"images\" must be an array, not %s", cmd->name,
			    json_kind(images));
	json_array_foreach(images, i, img) {
		json_t *type = json_object_get(img, "type");
		json_t *data = json_object_get(img, "data");
		json_t *mime = json_object_get(img, "mimeType");
		char why[160];

		if (!json_is_object(img))
			return fail(cmd, "%s: images[%zu] must be an object", cmd->name, i);
		if (!json_is_string(type) || strcmp(json_string_value(type), "image") != 0)
			return fail(cmd, "%s: images[%zu].type must be \"image\"", cmd->name, i);
		if (!json_is_string(data))
			return fail(cmd, "%s: images[%zu].data must be a base64 string", cmd->name, i);
		if (base64_problem(json_string_value(data), json_string_length(data), why,
				   sizeof(why)) != 0)
			return fail(cmd, "%s: images[%zu].data must be base64 (%s)", cmd->name, i, why);
		if (!json_is_string(mime))
			return fail(cmd, "%s: images[%zu].mimeType must be a string", cmd->name, i);
		if (!is_media_type(json_string_value(mime)))
			return fail(cmd, "%s: images[%zu].mimeType must be a media type such "
				    "as \"image/png\"", cmd->name, i);
	}
	cmd->images = images;
	return 0;
}

static int parse_message(struct command *cmd)
{
	if (need_string(cmd, "message", &cmd->message) != 0)
		return -1;
	return parse_images(cmd);
}

static int parse_behavior(struct command *cmd)
{
	const char *b;

	if (opt_string(cmd, "streamingBehavior", &b) != 0)
		return -1;
	if (b == NULL)
		cmd->behavior = BEHAVIOR_NONE;
	else if (strcmp(b, "steer") == 0)
		cmd->behavior = BEHAVIOR_STEER;
	else if (strcmp(b, "followUp") == 0)
		cmd->behavior = BEHAVIOR_FOLLOW_UP;
	else
		return fail(cmd, "%s: field \"streamingBehavior\" must be \"steer\" or \"followUp\"",
			    cmd->name);
	return 0;
}

/* pi's levels; anything else is refused rather than taken as "off". */
static int parse_level(struct command *cmd)
{
	static const char *const levels[] = { "off", "minimal", "low", "medium", "high", "xhigh" };
	const char *level;

	if (need_string(cmd, "level", &level) != 0)
		return -1;
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		if (strcmp(level, levels[i]) == 0) {
			cmd->level = levels[i];
			return 0;
		}
	}
	return fail(cmd, "%s: field \"level\" must be one of \"off\", \"minimal\", \"low\", "
		    "\"medium\", \"high\", \"xhigh\"", cmd->name);
}

static int parse_mode(struct command *cmd)
{
	if (need_string(cmd, "mode", &cmd->mode) != 0)
		return -1;
	if (strcmp(cmd->mode, "all") != 0 && strcmp(cmd->mode, "one-at-a-time") != 0)
		return fail(cmd, "%s: field \"mode\" must be \"all\" or \"one-at-a-time\"", cmd->name);
	return 0;
}

/* classify_error: the failure as a provider would report it. */
static int parse_classify(struct command *cmd)
{
	json_t *v;
	const char *key;
	json_t *h;

	if (need_string(cmd, "message", &cmd->message) != 0)
		return -1;
	v = json_object_get(cmd->root, "status");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 100 || json_integer_value(v) > 599)
			return fail(cmd, "%s: field \"status\" must be an HTTP status from 100 to 599",
				    cmd->name);
		cmd->status = (int)json_integer_value(v);
	}
	v = json_object_get(cmd->root, "body");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_string(v))
			return fail(cmd, "%s: field \"body\" must be a string (the raw response body), not %s",
				    cmd->name, json_kind(v));
		cmd->body = json_string_value(v);
		cmd->body_len = json_string_length(v);
	}
	v = json_object_get(cmd->root, "headers");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_object(v))
			return fail(cmd, "%s: field \"headers\" must be an object of header names to strings, not %s",
				    cmd->name, json_kind(v));
		json_object_foreach(v, key, h) {
			if (!json_is_string(h))
				return fail(cmd, "%s: headers.%.60s must be a string, not %s", cmd->name,
					    key, json_kind(h));
		}
		cmd->headers = v;
	}
	return 0;
}

/* A prompt's own retry settings: an object, or absent. */
static int parse_retry(struct command *cmd)
{
	json_t *v = json_object_get(cmd->root, "retry");

	if (v != NULL && !json_is_null(v) && !json_is_object(v))
		return fail(cmd, "%s: field \"retry\" must be an object of retry settings, not %s",
			    cmd->name, json_kind(v));
	cmd->retry = json_is_object(v) ? v : NULL;
	return 0;
}

static int parse_fields(struct command *cmd)
{
	json_t *v;

	switch (cmd->type) {
	case CMD_PROMPT:
		if (parse_message(cmd) != 0 || parse_behavior(cmd) != 0)
			return -1;
		return parse_retry(cmd);
	case CMD_ABORT_AND_PROMPT:
		/* A prompt that replaces the run: no streamingBehavior to give. */
		if (parse_message(cmd) != 0)
			return -1;
		return parse_retry(cmd);
	case CMD_SET_RETRY_POLICY:
		v = json_object_get(cmd->root, "policy");
		if (v == NULL)
			return fail(cmd, "%s: missing required field \"policy\" (an object of retry settings)",
				    cmd->name);
		if (!json_is_object(v))
			return fail(cmd, "%s: field \"policy\" must be an object, not %s", cmd->name,
				    json_kind(v));
		cmd->policy = v;
		v = json_object_get(cmd->root, "persist");
		if (v != NULL && !json_is_null(v) && !json_is_boolean(v))
			return fail(cmd, "%s: field \"persist\" must be true or false, not %s",
				    cmd->name, json_kind(v));
		cmd->persist = json_is_true(v);
		return 0;
	case CMD_STEER:
	case CMD_FOLLOW_UP:
		return parse_message(cmd);
	case CMD_SET_AUTO_RETRY:
		v = json_object_get(cmd->root, "enabled");
		if (v == NULL)
			return fail(cmd, "%s: missing required field \"enabled\" (true or false)",
				    cmd->name);
		if (!json_is_boolean(v))
			return fail(cmd, "%s: field \"enabled\" must be true or false, not %s",
				    cmd->name, json_kind(v));
		cmd->enabled = json_is_true(v);
		/* pi's set_auto_retry always persists; persist:false keeps the
		 * change to this process. */
		v = json_object_get(cmd->root, "persist");
		if (v != NULL && !json_is_null(v) && !json_is_boolean(v))
			return fail(cmd, "%s: field \"persist\" must be true or false, not %s",
				    cmd->name, json_kind(v));
		cmd->persist = !json_is_false(v);
		return 0;
	case CMD_SET_MODEL:
		if (need_string(cmd, "provider", &cmd->provider) != 0)
			return -1;
		return need_string(cmd, "modelId", &cmd->model_id);
	case CMD_SET_STEERING_MODE:
	case CMD_SET_FOLLOW_UP_MODE:
		return parse_mode(cmd);
	case CMD_SET_THINKING_LEVEL:
		return parse_level(cmd);
	case CMD_SET_SESSION_NAME:
		return need_string(cmd, "name", &cmd->text);
	case CMD_NEW_SESSION:
		return opt_string(cmd, "parentSession", &cmd->text);
	case CMD_CLASSIFY_ERROR:
		return parse_classify(cmd);
	case CMD_SET_EVENT_FILTER:
		cmd->events = json_object_get(cmd->root, "events");
		if (cmd->events == NULL)
			return fail(cmd, "%s: missing required field \"events\" (null, or an array of "
				    "event type names)", cmd->name);
		return 0;
	case CMD_OPEN_SESSION:
		if (need_string(cmd, "sessionDir", &cmd->text) != 0)
			return -1;
		if (cmd->text[0] == '\0')
			return fail(cmd, "%s: field \"sessionDir\" must not be empty", cmd->name);
		return 0;
	case CMD_GET_ENTRIES:
		return opt_string(cmd, "since", &cmd->text);
	default:
		return 0;
	}
}

static int lookup(struct command *cmd, const char *type)
{
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		if (strcmp(specs[i].name, type) == 0) {
			cmd->type = specs[i].type;
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		if (strcmp(unsupported[i].name, type) == 0) {
			cmd->type = CMD_UNSUPPORTED;
			return fail(cmd, "%s is not supported: %s", type, unsupported[i].why);
		}
	}
	return fail(cmd, "Unknown command: %.200s%s", type, strlen(type) > 200 ? "..." : "");
}

/* Sets cmd->id from a scalar `id` (borrowed from cmd->root). A string that
 * can stand for itself is borrowed; anything else is marked and written as
 * JSON, so a string holding NUL or starting with the mark survives too. */
static int keep_id(struct command *cmd, const json_t *id)
{
	const char *s = json_string_value(id);
	char *text;
	size_t n;

	if (s != NULL && s[0] != COMMAND_ID_MARK && strlen(s) == json_string_length(id)) {
		cmd->id = s;
		return 0;
	}
	text = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
	if (text == NULL)
		return -1;
	n = strlen(text);
	cmd->id_text = malloc(n + 2);
	if (cmd->id_text != NULL) {
		cmd->id_text[0] = COMMAND_ID_MARK;
		memcpy(cmd->id_text + 1, text, n + 1);
		cmd->id = cmd->id_text;
	}
	free(text);
	return cmd->id_text != NULL ? 0 : -1;
}

int command_parse(const char *line, size_t len, struct command *cmd)
{
	json_error_t jerr;
	json_t *type, *id;

	memset(cmd, 0, sizeof(*cmd));
	cmd->name = "parse";
	cmd->type = CMD_UNSUPPORTED;
	cmd->root = json_loadb(line, len, 0, &jerr);
	if (cmd->root == NULL)
		return fail(cmd, "Failed to parse command: %s (at byte %d)", jerr.text,
			    jerr.position);
	if (!json_is_object(cmd->root))
		return fail(cmd, "Failed to parse command: expected a JSON object, got %s",
			    json_kind(cmd->root));
	id = json_object_get(cmd->root, "id");
	/* null counts as absent, as for every optional field (and pi's own
	 * RpcClient takes a response only with a string id or none). */
	if (id != NULL && !json_is_object(id) && !json_is_array(id) && !json_is_null(id) &&
	    keep_id(cmd, id) != 0)
		return fail(cmd, "out of memory");
	type = json_object_get(cmd->root, "type");
	if (type == NULL)
		return fail(cmd, "Failed to parse command: missing \"type\" (a string naming the command)");
	if (!json_is_string(type))
		return fail(cmd, "Failed to parse command: \"type\" must be a string, not %s",
			    json_kind(type));
	cmd->name = json_string_value(type);
	/* The type decides first: an unknown or unsupported command is named as
	 * such whatever its id; only a command we run gets the id error. */
	if (lookup(cmd, cmd->name) != 0)
		return -1;
	if (json_is_object(id) || json_is_array(id))
		return fail(cmd, "%s: field \"id\" must be a string, a number, true, false or null, "
			    "not %s", cmd->name, json_kind(id));
	return parse_fields(cmd);
}

void command_release(struct command *cmd)
{
	json_decref(cmd->root);
	cmd->root = NULL;
	free(cmd->id_text);
	cmd->id_text = NULL;
}

/* The oversize line's head: a scanner of complete values only, so a value
 * cut by the limit is never taken for the whole. Each returns the end of
 * what it read, or NULL when the head ends first or it is not JSON. */

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\') {
			if (++p == end)
				return NULL;
		} else if (*p == '"') {
			return p + 1;
		}
	}
	return NULL;
}

static const char *skip_value(const char *p, const char *end)
{
	int depth = 0;

	while (p < end) {
		if (*p == '"') {
			p = skip_string(p, end);
			if (p == NULL || depth == 0)
				return p;
			continue;
		}
		if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			if (depth == 0)
				return p;
			if (--depth == 0)
				return p + 1;
		} else if (depth == 0 && *p != '\0' && strchr(", \t\r\n", *p) != NULL) {
			return p;
		}
		p++;
	}
	/* The head ended inside the value: a number may have been cut. */
	return NULL;
}

void command_parse_oversize(const char *head, size_t len, size_t max, struct command *cmd)
{
	const char *p = head, *end = head + len, *key, *key_end, *value;

	memset(cmd, 0, sizeof(*cmd));
	cmd->name = "parse";
	cmd->type = CMD_UNSUPPORTED;
	fail(cmd, "Failed to parse command: line longer than rpc.maxLineBytes (%zu bytes); the "
	     "rest of it was discarded", max);
	p = skip_ws(p, end);
	if (p >= end || *p != '{')
		return;
	for (p = skip_ws(p + 1, end); p < end && *p == '"'; p = skip_ws(p + 1, end)) {
		key = p;
		key_end = skip_string(p, end);
		if (key_end == NULL)
			return;
		p = skip_ws(key_end, end);
		if (p >= end || *p != ':')
			return;
		value = skip_ws(p + 1, end);
		p = skip_value(value, end);
		if (p == NULL)
			return;
		if (key_end - key == 4 && memcmp(key, "\"id\"", 4) == 0) {
			json_t *id = json_loadb(value, (size_t)(p - value), JSON_DECODE_ANY, NULL);

			if (id != NULL && !json_is_object(id) && !json_is_array(id) && !json_is_null(id)) {
				cmd->root = json_pack("{s:O}", "id", id);
				if (cmd->root != NULL && keep_id(cmd, json_object_get(cmd->root, "id")) != 0)
					cmd->id = NULL;
			}
			json_decref(id);
			return;
		}
		p = skip_ws(p, end);
		if (p >= end || *p != ',')
			return;
	}
}

json_t *command_id_value(const char *id)
{
	if (id[0] != COMMAND_ID_MARK)
		return json_string(id);
	return json_loads(id + 1, JSON_DECODE_ANY, NULL);
}

#include "provider/cli/cli_parser.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/number.h"

#define UNFINISHED_TOOL "the agent exited before the tool call finished"

void cli_parser_init(struct cli_parser *self, const struct cli_profile *profile)
{
	memset(self, 0, sizeof(*self));
	self->profile = profile;
	self->tools = json_object();
}

void cli_parser_release(struct cli_parser *self)
{
	json_decref(self->tools);
	free(self->thinking_sig);
	free(self->session_id);
	free(self->error);
	free(self->error_type);
	memset(self, 0, sizeof(*self));
}

static void out_simple(enum cli_parser_outcome_kind kind, const char *text, size_t len,
		       cli_parser_cb cb, void *ctx)
{
	struct cli_parser_outcome o = { .kind = kind, .text = text, .len = len };

	cb(ctx, &o);
}

static void close_text(struct cli_parser *self, cli_parser_cb cb, void *ctx, size_t *n)
{
	if (!self->text_open)
		return;
	self->text_open = false;
	out_simple(CLI_OUT_TEXT_END, NULL, 0, cb, ctx);
	(*n)++;
}

/* Ends the thinking block with the signature it was given. */
static void close_thinking(struct cli_parser *self, cli_parser_cb cb, void *ctx, size_t *n)
{
	char *sig = self->thinking_sig;

	if (!self->thinking_open)
		return;
	self->thinking_open = false;
	self->thinking_sig = NULL;
	out_simple(CLI_OUT_THINKING_END, sig, sig ? strlen(sig) : 0, cb, ctx);
	free(sig);
	(*n)++;
}

/* Whatever block is open ends: a tool call, a notice or the end follows. */
static void close_blocks(struct cli_parser *self, cli_parser_cb cb, void *ctx, size_t *n)
{
	close_text(self, cb, ctx, n);
	close_thinking(self, cb, ctx, n);
}

/* event: stolen. */
static void out_event(struct cli_parser *self, json_t *event, cli_parser_cb cb, void *ctx,
		      size_t *n)
{
	struct cli_parser_outcome o = { .kind = CLI_OUT_EVENT, .event = event };

	if (event == NULL)
		return;
	close_blocks(self, cb, ctx, n);
	cb(ctx, &o);
	json_decref(event);
	(*n)++;
}

/* A readable text at the first of `paths` that has one: a non-empty string,
 * or the non-empty strings of an array joined by "; " (claude's errors[]).
 * New string, or NULL. */
static char *text_at(const json_t *root, const json_t *paths)
{
	size_t np = json_is_array(paths) ? json_array_size(paths) : 1;

	for (size_t i = 0; i < np; i++) {
		const json_t *p = json_is_array(paths) ? json_array_get(paths, i) : paths;
		json_t *v = cli_profile_get(root, p);
		size_t k, len = 0;
		json_t *item;
		char *out = NULL;

		if (json_is_string(v) && json_string_length(v) > 0)
			return strdup(json_string_value(v));
		json_array_foreach(v, k, item) {
			const char *s = json_string_value(item);
			size_t n = s ? strlen(s) : 0;
			char *bigger;

			if (n == 0)
				continue;
			bigger = realloc(out, len + n + 3);
			if (bigger == NULL)
				break;
			out = bigger;
			if (len > 0) {
				memcpy(out + len, "; ", 2);
				len += 2;
			}
			memcpy(out + len, s, n + 1);
			len += n;
		}
		if (out != NULL)
			return out;
	}
	return NULL;
}

/* "<status> <message>" unless the message already names the status. New. */
static char *with_status(char *message, const json_t *status)
{
	char num[32], *out;
	int64_t code;
	size_t n;

	if (message == NULL || number_from_json(status, &code) <= 0)
		return message;
	snprintf(num, sizeof(num), "%" PRId64, code);
	if (strstr(message, num) != NULL)
		return message;
	n = strlen(num) + strlen(message) + 2;
	out = malloc(n);
	if (out == NULL)
		return message;
	snprintf(out, n, "%s %s", num, message);
	free(message);
	return out;
}

static json_t *spec(const struct cli_profile_rule *rule, const char *key)
{
	return json_object_get(rule->spec, key);
}

/* r from reading field key: a rejection is logged at debug, once a run. */
static bool number_kept(struct cli_parser *self, enum number_read r, const char *key)
{
	if (r == NUMBER_REJECTED && !self->bad_number_logged) {
		self->bad_number_logged = true;
		LOG_DEBUG("cli: ignored %s: not a whole number >= 0", key);
	}
	return r > 0;
}

/* The number at a rule field, in [0, NUMBER_MAX]: true with *out set;
 * false when absent or rejected (number_from_json). delayMs is rounded:
 * Claude's retry_delay_ms has been seen as 35073.757... */
static bool number_at(struct cli_parser *self, const json_t *root,
		      const struct cli_profile_rule *rule, const char *key, int64_t *out)
{
	json_t *paths = spec(rule, key);
	json_t *v = paths ? cli_profile_get(root, paths) : NULL;

	return number_kept(self, strcmp(key, "delayMs") == 0 ? number_from_json_rounded(v, out)
							     : number_from_json(v, out),
			   key);
}

/* A token count: 0 when absent or rejected. */
static int64_t tokens_at(struct cli_parser *self, const json_t *line,
			 const struct cli_profile_rule *rule, const char *key)
{
	int64_t n;

	return number_at(self, line, rule, key, &n) ? n : 0;
}

static bool flag(const json_t *item, const json_t *how)
{
	if (how == NULL)
		return false;
	if (json_is_boolean(how))
		return json_is_true(how);
	if (json_is_object(how))
		return cli_profile_holds(how, item);
	return json_is_true(cli_profile_get(item, how));
}

/* The items a rule reads from: the line itself, or the selected elements of
 * its "each" array. New array (of borrowed-then-increfed items). */
static json_t *items_of(const struct cli_profile_rule *rule, const json_t *line)
{
	json_t *out = json_array();
	json_t *list, *item;
	size_t i;

	if (rule->each == NULL) {
		json_array_append(out, (json_t *)line);
		return out;
	}
	list = cli_profile_get(line, spec(rule, "each"));
	json_array_foreach(list, i, item)
		if (rule->where == NULL || cli_profile_holds(rule->where, item))
			json_array_append(out, item);
	return out;
}

/* The first rule of a kind that selects the line, or NULL. */
static const struct cli_profile_rule *select_rule(const struct cli_parser *self,
						  enum cli_profile_rule_kind kind,
						  const json_t *line, json_t *captures)
{
	for (size_t i = 0; i < self->profile->nrules[kind]; i++) {
		const struct cli_profile_rule *r = &self->profile->rules[kind][i];

		if (cli_profile_selects(r, line, captures))
			return r;
	}
	return NULL;
}

static void on_session(struct cli_parser *self, const json_t *line, cli_parser_cb cb, void *ctx,
		       size_t *n)
{
	const struct cli_profile_rule *r = select_rule(self, CLI_RULE_SESSION, line, NULL);
	json_t *v = r ? cli_profile_get(line, spec(r, "field")) : NULL;
	char *id;

	if (!json_is_string(v) || json_string_length(v) == 0)
		return;
	if (self->session_id != NULL && strcmp(self->session_id, json_string_value(v)) == 0)
		return;
	id = strdup(json_string_value(v));
	if (id == NULL)
		return;
	free(self->session_id);
	self->session_id = id;
	out_simple(CLI_OUT_SESSION, id, strlen(id), cb, ctx);
	(*n)++;
}

static void on_retry(struct cli_parser *self, const json_t *line, cli_parser_cb cb, void *ctx,
		     size_t *n)
{
	static const char *const numbers[] = { "attempt", "maxAttempts", "delayMs" };
	json_t *captures, *ev;
	const struct cli_profile_rule *r;
	char *msg;

	/* Most profiles' lines are not retry notices: no object for them. */
	if (self->profile->nrules[CLI_RULE_RETRY] == 0)
		return;
	captures = json_object();
	r = select_rule(self, CLI_RULE_RETRY, line, captures);
	if (r == NULL) {
		json_decref(captures);
		return;
	}
	ev = json_pack("{s:s}", "type", "provider_retry");
	for (size_t i = 0; ev != NULL && i < 3; i++) {
		json_t *c = json_object_get(captures, numbers[i]);
		int64_t v;
		bool found = number_at(self, line, r, numbers[i], &v);

		/* A capture is digits: an integer, or a string when too long for one. */
		if (!found && json_is_string(c))
			found = number_kept(self, number_from_digits(json_string_value(c),
								      json_string_length(c), &v),
					    numbers[i]);
		else if (!found && c != NULL)
			found = number_kept(self, number_from_json(c, &v), numbers[i]);
		if (found)
			json_object_set_new(ev, numbers[i], json_integer((json_int_t)v));
	}
	msg = spec(r, "message") ? text_at(line, spec(r, "message")) : NULL;
	msg = with_status(msg, spec(r, "status") ? cli_profile_get(line, spec(r, "status")) : NULL);
	if (msg == NULL && spec(r, "status") != NULL)
		msg = with_status(strdup("error"), cli_profile_get(line, spec(r, "status")));
	json_object_set_new(ev, "errorMessage", json_string(msg ? msg : "retrying"));
	free(msg);
	json_decref(captures);
	out_event(self, ev, cb, ctx, n);
}

/* The two kinds of streamed block, read by the same rules. */
struct block_kind {
	enum cli_profile_rule_kind rule;
	enum cli_parser_outcome_kind start, delta;
};

static const struct block_kind text_block = { CLI_RULE_TEXT, CLI_OUT_TEXT_START,
					      CLI_OUT_TEXT_DELTA };
static const struct block_kind thinking_block = { CLI_RULE_THINKING, CLI_OUT_THINKING_START,
						  CLI_OUT_THINKING_DELTA };

static void close_block(struct cli_parser *self, const struct block_kind *k, cli_parser_cb cb,
			void *ctx, size_t *n)
{
	if (k->rule == CLI_RULE_THINKING)
		close_thinking(self, cb, ctx, n);
	else
		close_text(self, cb, ctx, n);
}

/* A signature for the thinking block open now (the newest wins). */
static void keep_signature(struct cli_parser *self, const json_t *v)
{
	char *sig;

	if (!self->thinking_open || !json_is_string(v) || json_string_length(v) == 0)
		return;
	sig = strdup(json_string_value(v));
	if (sig == NULL)
		return;
	free(self->thinking_sig);
	self->thinking_sig = sig;
}

/* A text or thinking rule: each item's "field" is a whole block, or with
 * "delta" more of the open one. Opening one kind closes the other. */
static void on_block(struct cli_parser *self, const struct block_kind *k, const json_t *line,
		     cli_parser_cb cb, void *ctx, size_t *n)
{
	const struct cli_profile_rule *r;
	bool thinking = k->rule == CLI_RULE_THINKING;
	bool *open = thinking ? &self->thinking_open : &self->text_open;
	bool delta;
	json_t *items, *item;
	size_t i;

	if (self->profile->nrules[k->rule] == 0)
		return;
	r = select_rule(self, k->rule, line, NULL);
	if (r == NULL)
		return;
	delta = json_is_true(spec(r, "delta"));
	items = items_of(r, line);
	json_array_foreach(items, i, item) {
		json_t *v = spec(r, "field") ? cli_profile_get(item, spec(r, "field")) : NULL;
		json_t *sig = thinking && spec(r, "signature")
				      ? cli_profile_get(item, spec(r, "signature")) : NULL;

		if (!json_is_string(v) || json_string_length(v) == 0) {
			keep_signature(self, sig);
			continue;
		}
		if (!delta)
			close_block(self, k, cb, ctx, n);
		if (!*open) {
			close_block(self, thinking ? &text_block : &thinking_block, cb, ctx, n);
			*open = true;
			out_simple(k->start, NULL, 0, cb, ctx);
			(*n)++;
		}
		out_simple(k->delta, json_string_value(v), json_string_length(v), cb, ctx);
		(*n)++;
		keep_signature(self, sig);
		if (!delta)
			close_block(self, k, cb, ctx, n);
	}
	json_decref(items);
}

/* A tool call id as a string (numbers are accepted); new. */
static char *tool_id(struct cli_parser *self, const json_t *item, const struct cli_profile_rule *r)
{
	json_t *v = cli_profile_get(item, spec(r, "id"));
	char buf[40];

	if (json_is_string(v))
		return strdup(json_string_value(v));
	if (json_is_integer(v))
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else
		snprintf(buf, sizeof(buf), "tool-%u", ++self->tool_seq);
	return strdup(buf);
}

/* args: borrowed, may be NULL ({}). */
static json_t *start_event(const char *id, const char *name, json_t *args)
{
	return json_pack("{s:s, s:s, s:s, s:o}", "type", "tool_execution_start", "toolCallId", id,
			 "toolName", name, "args", args ? json_incref(args) : json_object());
}

static void on_tool_start(struct cli_parser *self, const json_t *line, cli_parser_cb cb,
			  void *ctx, size_t *n)
{
	const struct cli_profile_rule *r = select_rule(self, CLI_RULE_TOOL_START, line, NULL);
	json_t *items, *item;
	size_t i;

	if (r == NULL)
		return;
	items = items_of(r, line);
	json_array_foreach(items, i, item) {
		char *id = tool_id(self, item, r);
		json_t *name = cli_profile_get(item, spec(r, "name"));
		const char *nm = json_is_string(name) ? json_string_value(name) : "tool";
		json_t *args = spec(r, "args") ? cli_profile_get(item, spec(r, "args")) : NULL;

		/* A call already open is not started again (a CLI that repeats its
		 * tool_use line): every start keeps exactly one end. */
		if (id == NULL || json_object_get(self->tools, id) != NULL) {
			free(id);
			continue;
		}
		json_object_set_new(self->tools, id, json_string(nm));
		out_event(self, start_event(id, nm, args), cb, ctx, n);
		free(id);
	}
	json_decref(items);
}

/* pi's result shape: {"content": [{"type": "text", "text": ...}]}. */
static json_t *tool_result(json_t *v)
{
	if (json_is_string(v))
		return json_pack("{s:[{s:s, s:O}]}", "content", "type", "text", "text", v);
	if (json_is_array(v))
		return json_pack("{s:O}", "content", v);
	if (json_is_object(v))
		return json_incref(v);
	if (v != NULL) {
		char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		json_t *out = json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text",
					text ? text : "");

		free(text);
		return out;
	}
	return json_pack("{s:[]}", "content");
}

static void end_tool(struct cli_parser *self, const char *id, const char *name, json_t *result,
		     bool is_error, cli_parser_cb cb, void *ctx, size_t *n)
{
	out_event(self, json_pack("{s:s, s:s, s:s, s:o, s:b}", "type", "tool_execution_end",
				  "toolCallId", id, "toolName", name, "result", result,
				  "isError", is_error), cb, ctx, n);
	json_object_del(self->tools, id);
}

static void on_tool_end(struct cli_parser *self, const json_t *line, cli_parser_cb cb, void *ctx,
			size_t *n)
{
	const struct cli_profile_rule *r = select_rule(self, CLI_RULE_TOOL_END, line, NULL);
	json_t *items, *item;
	size_t i;

	if (r == NULL)
		return;
	items = items_of(r, line);
	json_array_foreach(items, i, item) {
		char *id = tool_id(self, item, r);
		json_t *name = spec(r, "name") ? cli_profile_get(item, spec(r, "name")) : NULL;
		json_t *open;
		char *nm;

		if (id == NULL)
			continue;
		open = json_object_get(self->tools, id);
		nm = strdup(json_is_string(name) ? json_string_value(name)
			    : json_is_string(open) ? json_string_value(open) : "tool");
		if (nm != NULL) {
			/* Every end has its start, even when the CLI showed none. */
			if (open == NULL)
				out_event(self, start_event(id, nm, NULL), cb, ctx, n);
			end_tool(self, id, nm,
				 tool_result(spec(r, "result") ? cli_profile_get(item, spec(r, "result"))
							       : NULL),
				 flag(item, spec(r, "isError")), cb, ctx, n);
		}
		free(nm);
		free(id);
	}
	json_decref(items);
}

static void on_terminal(struct cli_parser *self, const json_t *line, cli_parser_cb cb, void *ctx,
			size_t *n)
{
	const struct cli_profile_rule *r = select_rule(self, CLI_RULE_TERMINAL, line, NULL);
	struct cli_parser_outcome o = { .kind = CLI_OUT_TERMINAL };
	char *error = NULL;

	if (r == NULL)
		return;
	close_blocks(self, cb, ctx, n);
	o.failed = flag(line, spec(r, "failed"));
	free(self->error_type);
	self->error_type = NULL;
	self->status = 0;
	if (o.failed) {
		int64_t code;

		error = spec(r, "message") ? text_at(line, spec(r, "message")) : NULL;
		if (error == NULL)
			error = strdup("the agent reported a failure");
		/* Typed, not folded into the text: the classifier reads a status
		 * as a status wherever the provider found it. */
		if (spec(r, "status") != NULL &&
		    number_from_json(cli_profile_get(line, spec(r, "status")), &code) > 0 &&
		    code >= 100 && code <= 599)
			self->status = (int)code;
		if (spec(r, "errorType") != NULL)
			self->error_type = text_at(line, spec(r, "errorType"));
	}
	free(self->error);
	self->error = error;
	self->terminal = true;
	self->settled = true;
	self->failed = o.failed;
	self->input_tokens = tokens_at(self, line, r, "inputTokens");
	self->output_tokens = tokens_at(self, line, r, "outputTokens");
	self->cache_read_tokens = tokens_at(self, line, r, "cacheReadTokens");
	self->cache_write_tokens = tokens_at(self, line, r, "cacheWriteTokens");
	o.text = error;
	o.len = error ? strlen(error) : 0;
	cb(ctx, &o);
	(*n)++;
}

size_t cli_parser_feed(struct cli_parser *self, const char *line, size_t len, cli_parser_cb cb,
		       void *ctx)
{
	json_t *obj;
	size_t n = 0, before;

	obj = json_loadb(line, len, 0, NULL);
	if (!json_is_object(obj)) {
		json_decref(obj);
		self->skipped++;
		return 0;
	}
	on_session(self, obj, cb, ctx, &n);
	before = n;
	on_retry(self, obj, cb, ctx, &n);
	/* Reasoning comes before the answer it leads to. */
	on_block(self, &thinking_block, obj, cb, ctx, &n);
	on_block(self, &text_block, obj, cb, ctx, &n);
	on_tool_start(self, obj, cb, ctx, &n);
	on_tool_end(self, obj, cb, ctx, &n);
	if (n > before)
		self->settled = false;
	on_terminal(self, obj, cb, ctx, &n);
	json_decref(obj);
	if (n == 0)
		self->skipped++;
	return n;
}

void cli_parser_finish(struct cli_parser *self, cli_parser_cb cb, void *ctx)
{
	size_t n = 0;
	json_t *open = json_copy(self->tools);
	const char *id;
	json_t *name;

	close_blocks(self, cb, ctx, &n);
	json_object_foreach(open, id, name)
		end_tool(self, id, json_string_value(name),
			 json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text",
				   UNFINISHED_TOOL), true, cb, ctx, &n);
	json_decref(open);
}

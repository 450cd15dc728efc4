#include "rpc.h"

#include <stdio.h>
#include <string.h>

#include "proto/command.h"
#include "base/errbuf.h"
#include "base/utf8.h"

void rpc_init(struct rpc *self, struct session *session, session_emit_fn emit, void *emit_ctx,
	      size_t max_line)
{
	self->session = session;
	self->emit = emit;
	self->emit_ctx = emit_ctx;
	self->max_line = max_line;
}

static json_t *response(const char *id, const char *command, bool success)
{
	json_t *r = json_object();

	if (r == NULL)
		return NULL;
	if (id != NULL)
		json_object_set_new(r, "id", command_id_value(id));
	json_object_set_new(r, "type", json_string("response"));
	json_object_set_new(r, "command", json_string(command));
	json_object_set_new(r, "success", json_boolean(success));
	return r;
}

/* data: stolen, may be NULL. */
static void respond_ok(struct rpc *self, const struct command *cmd, json_t *data)
{
	json_t *r = response(cmd->id, cmd->name, true);

	if (r != NULL && data != NULL)
		json_object_set(r, "data", data);
	json_decref(data);
	self->emit(self->emit_ctx, r);
}

static void respond_error(struct rpc *self, const char *id, const char *command, const char *error)
{
	json_t *r = response(id, command, false);
	char text[1024];

	/* Error texts quote the input and are cut to fit: never in half a
	 * character, or jansson would refuse the string. */
	snprintf(text, sizeof(text), "%s", error);
	if (r != NULL)
		json_object_set_new(r, "error", json_string(utf8_repair(text)));
	self->emit(self->emit_ctx, r);
}

static json_t *command_list(void)
{
	json_t *list = json_array();

	for (size_t i = 0; command_names[i] != NULL; i++)
		json_array_append_new(list, json_string(command_names[i]));
	/* pi's get_commands lists slash commands; retryd has none. */
	return json_pack("{s:[], s:o}", "commands", "rpcCommands", list);
}

struct taken {
	struct rpc *rpc;
	const struct command *cmd;
	json_t *data;  /* owned: the success response's data, or NULL */
};

/* The message is safely queued or about to run: answer now, before its
 * run's first event. */
static void taken_cb(void *ctx, const char *disposition)
{
	struct taken *t = ctx;

	/* pi 1.6 reads what became of the message (data.disposition), oh-my-pi
	 * whether an agent run follows (data.agentInvoked). */
	if (t->data == NULL)
		t->data = json_object();
	if (t->data != NULL) {
		json_object_set_new(t->data, "disposition", json_string(disposition));
		json_object_set_new(t->data, "agentInvoked", json_true());
	}
	respond_ok(t->rpc, t->cmd, t->data);
	t->data = NULL;
}

/* get_available_commands (oh-my-pi): the slash commands a prompt's text
 * may start with. retryd sends every prompt to the model as it is, so it
 * has none; its RPC commands are get_commands' rpcCommands. */
static json_t *available_commands(void)
{
	return json_pack("{s:[]}", "commands");
}

static void dispatch(struct rpc *self, struct command *cmd)
{
	struct session *s = self->session;
	char err[512] = "";
	json_t *data = NULL;
	struct taken taken = { self, cmd, NULL };

	switch (cmd->type) {
	case CMD_PROMPT:
		if (session_accept(s, cmd->behavior, cmd->retry, &data, err, sizeof(err)) != 0) {
			respond_error(self, cmd->id, cmd->name, err);
			return;
		}
		/* One answer per command: success from taken_cb, or this error. */
		if (session_prompt(s, cmd->message, cmd->images, cmd->behavior, data, cmd->id,
				   taken_cb, &taken) != 0)
			respond_error(self, cmd->id, cmd->name, "out of memory");
		return;
	case CMD_STEER:
	case CMD_FOLLOW_UP:
		if ((cmd->type == CMD_STEER ? session_steer : session_follow_up)(
			    s, cmd->message, cmd->images, taken_cb, &taken) != 0)
			respond_error(self, cmd->id, cmd->name, "out of memory");
		return;
	case CMD_ABORT_AND_PROMPT:
		/* One answer: success (with what abort dropped) from taken_cb,
		 * once the abort's events are out and the prompt will run; or
		 * this error. */
		if (session_abort_and_prompt(s, cmd->message, cmd->images, cmd->retry, cmd->id,
					     &taken.data, taken_cb, &taken, err, sizeof(err)) != 0) {
			json_decref(taken.data);
			respond_error(self, cmd->id, cmd->name, err);
		}
		return;
	case CMD_ABORT:
		session_abort(s, &data);
		respond_ok(self, cmd, data);
		return;
	case CMD_ABORT_RETRY:
		session_abort_retry(s);
		respond_ok(self, cmd, NULL);
		return;
	case CMD_SET_AUTO_RETRY:
		session_set_auto_retry(s, cmd->enabled, cmd->persist, &data, err, sizeof(err));
		respond_ok(self, cmd, data);
		return;
	case CMD_GET_RETRY_POLICY:
		respond_ok(self, cmd, json_pack("{s:o}", "policy", session_retry_policy(s)));
		return;
	case CMD_SET_RETRY_POLICY:
		if (session_set_retry_policy(s, cmd->policy, cmd->persist, &data, err, sizeof(err)) != 0)
			respond_error(self, cmd->id, cmd->name, err);
		else
			respond_ok(self, cmd, data);
		return;
	case CMD_GET_STATE:
		respond_ok(self, cmd, session_state(s));
		return;
	case CMD_GET_MESSAGES:
		respond_ok(self, cmd, session_messages(s));
		return;
	case CMD_GET_LAST_ASSISTANT_TEXT:
		respond_ok(self, cmd, session_last_assistant_text(s));
		return;
	case CMD_GET_SESSION_STATS:
		respond_ok(self, cmd, session_stats(s));
		return;
	case CMD_NEW_SESSION:
		session_new(s);
		respond_ok(self, cmd, json_pack("{s:b}", "cancelled", 0));
		return;
	case CMD_SET_MODEL:
		if (session_set_model(s, cmd->provider, cmd->model_id, err, sizeof(err)) != 0)
			respond_error(self, cmd->id, cmd->name, err);
		else
			respond_ok(self, cmd, session_model(s));
		return;
	case CMD_GET_AVAILABLE_MODELS:
		respond_ok(self, cmd, session_models(s));
		return;
	case CMD_SET_THINKING_LEVEL:
		session_set_thinking_level(s, cmd->level);
		respond_ok(self, cmd, NULL);
		return;
	case CMD_CYCLE_THINKING_LEVEL:
		session_cycle_thinking_level(s, &data);
		respond_ok(self, cmd, data != NULL ? data : json_null());
		return;
	case CMD_SET_STEERING_MODE:
		session_set_steering_mode(s, strcmp(cmd->mode, "all") == 0);
		respond_ok(self, cmd, NULL);
		return;
	case CMD_SET_FOLLOW_UP_MODE:
		session_set_follow_up_mode(s, strcmp(cmd->mode, "all") == 0);
		respond_ok(self, cmd, NULL);
		return;
	case CMD_SET_SESSION_NAME:
		if (session_set_name(s, cmd->text) != 0)
			respond_error(self, cmd->id, cmd->name, "out of memory");
		else
			respond_ok(self, cmd, NULL);
		return;
	case CMD_GET_COMMANDS:
		respond_ok(self, cmd, command_list());
		return;
	case CMD_GET_AVAILABLE_COMMANDS:
		respond_ok(self, cmd, available_commands());
		return;
	case CMD_CLASSIFY_ERROR: {
		struct classify_input in = {
			.text = cmd->message,
			/* The whole text, past any NUL it holds. */
			.len = json_string_length(json_object_get(cmd->root, "message")),
			.status = cmd->status,
			.body = cmd->body, .body_len = cmd->body_len, .headers = cmd->headers,
		};

		respond_ok(self, cmd, session_classify(s, &in));
		return;
	}
	case CMD_FLEET_CLEAR:
		respond_ok(self, cmd, session_fleet_clear(s));
		return;
	case CMD_SET_EVENT_FILTER:
		if (session_events_set_filter(&s->events, cmd->events, &data, err, sizeof(err)) != 0)
			respond_error(self, cmd->id, cmd->name, err);
		else
			respond_ok(self, cmd, json_pack("{s:o}", "events", data));
		return;
	case CMD_OPEN_SESSION:
		if (session_open(s, cmd->text, &data, err, sizeof(err)) != 0)
			respond_error(self, cmd->id, cmd->name, err);
		else
			respond_ok(self, cmd, data);
		return;
	case CMD_CLEAR_QUEUE:
		respond_ok(self, cmd, session_clear_queue(s));
		return;
	case CMD_GET_AVAILABLE_THINKING_LEVELS:
		respond_ok(self, cmd, session_thinking_levels(s));
		return;
	case CMD_GET_ENTRIES:
		if (session_entries(s, cmd->text, &data, err, sizeof(err)) != 0)
			respond_error(self, cmd->id, cmd->name, err);
		else
			respond_ok(self, cmd, data);
		return;
	case CMD_UNSUPPORTED:
		break;
	}
	respond_error(self, cmd->id, cmd->name, "not supported");
}

void rpc_handle_line(struct rpc *self, const char *line, size_t len)
{
	struct command cmd;

	if (command_parse(line, len, &cmd) != 0)
		respond_error(self, cmd.id, cmd.name, cmd.error);
	else
		dispatch(self, &cmd);
	command_release(&cmd);
}

void rpc_handle_oversize(struct rpc *self, const char *head, size_t len)
{
	struct command cmd;

	command_parse_oversize(head, len, self->max_line, &cmd);
	respond_error(self, cmd.id, cmd.name, cmd.error);
	command_release(&cmd);
}

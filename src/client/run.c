#include "client/run.h"

#include <stdlib.h>
#include <string.h>

void retryd_run_init(struct retryd_run *self)
{
	memset(self, 0, sizeof(*self));
}

void retryd_run_release(struct retryd_run *self)
{
	free(self->chain_error);
	json_decref(self->final);
	json_decref(self->agent_end);
	memset(self, 0, sizeof(*self));
}

void retryd_run_accept(struct retryd_run *self)
{
	self->accepted = true;
}

static bool is_assistant(json_t *message)
{
	const char *role = json_string_value(json_object_get(message, "role"));

	return role != NULL && strcmp(role, "assistant") == 0;
}

static void set_final(struct retryd_run *self, json_t *message)
{
	json_incref(message);
	json_decref(self->final);
	self->final = message;
}

static void on_retry_end(struct retryd_run *self, json_t *event)
{
	json_t *attempt = json_object_get(event, "attempt");
	const char *err = json_string_value(json_object_get(event, "finalError"));

	if (json_is_integer(attempt))
		self->retries = (int)json_integer_value(attempt);
	self->chain_failed = !json_is_true(json_object_get(event, "success"));
	free(self->chain_error);
	self->chain_error = self->chain_failed && err != NULL ? strdup(err) : NULL;
}

bool retryd_run_feed(struct retryd_run *self, const char *type, json_t *event)
{
	if (!self->accepted || self->done)
		return self->done;
	if (strcmp(type, "agent_start") == 0) {
		/* A run's chain state starts fresh. */
		self->retries = 0;
		self->chain_failed = false;
	} else if (strcmp(type, "message_end") == 0) {
		json_t *m = json_object_get(event, "message");

		if (is_assistant(m))
			set_final(self, m);
	} else if (strcmp(type, "auto_retry_start") == 0) {
		json_t *attempt = json_object_get(event, "attempt");

		if (json_is_integer(attempt))
			self->retries = (int)json_integer_value(attempt);
		self->chain_failed = false;
	} else if (strcmp(type, "auto_retry_end") == 0) {
		on_retry_end(self, event);
	} else if (strcmp(type, "agent_end") == 0) {
		json_t *messages = json_object_get(event, "messages");

		/* agent_end's own list is the authority on the final answer. */
		for (size_t i = json_array_size(messages); i-- > 0;) {
			json_t *m = json_array_get(messages, i);

			if (is_assistant(m)) {
				set_final(self, m);
				break;
			}
		}
		json_incref(event);
		self->agent_end = event;
		self->done = true;
	}
	return self->done;
}

static char *dup_or_null(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

void retryd_run_result(const struct retryd_run *self, struct retryd_run_result *out)
{
	const char *stop = json_string_value(json_object_get(self->final, "stopReason"));
	const char *msg_err = json_string_value(json_object_get(self->final, "errorMessage"));
	bool good = stop != NULL && strcmp(stop, "error") != 0 && strcmp(stop, "aborted") != 0;

	memset(out, 0, sizeof(*out));
	out->answered = self->done && good;
	out->retries = self->retries;
	out->text = self->final != NULL ? retryd_message_text(self->final) : NULL;
	out->stop_reason = dup_or_null(stop);
	out->cancelled = (stop != NULL && strcmp(stop, "aborted") == 0) ||
			 (self->chain_failed && self->chain_error != NULL &&
			  strcmp(self->chain_error, "Retry cancelled") == 0);
	if (!out->answered) {
		if (self->chain_failed && self->chain_error != NULL)
			out->error = strdup(self->chain_error);
		else if (msg_err != NULL)
			out->error = strdup(msg_err);
		else if (stop != NULL && strcmp(stop, "aborted") == 0)
			out->error = strdup("Aborted");
		else if (self->done)
			out->error = strdup("the run ended without an answer");
	}
	if (self->agent_end != NULL)
		out->agent_end = json_incref(self->agent_end);
}

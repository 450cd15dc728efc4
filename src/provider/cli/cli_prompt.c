#include "provider/cli/cli_prompt.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_prompt_append(char **out, const char *text)
{
	size_t a = *out ? strlen(*out) : 0, b = strlen(text);
	char *p;

	if (b == 0)
		return;
	p = realloc(*out, a + b + 3);
	if (p == NULL)
		return;
	if (a > 0)
		memcpy(p + a, "\n\n", 2), a += 2;
	memcpy(p + a, text, b + 1);
	*out = p;
}

/* The text parts of one message of `role` ("text" blocks of any type
 * when type is NULL), joined into *out. */
static void message_text(const json_t *m, const char *type, char **out)
{
	size_t k;
	json_t *part;

	json_array_foreach(json_object_get(m, "content"), k, part) {
		const char *t = json_string_value(json_object_get(part, "type"));

		if (json_is_string(json_object_get(part, "text")) &&
		    (type == NULL || (t != NULL && strcmp(t, type) == 0)))
			cli_prompt_append(out, json_string_value(json_object_get(part, "text")));
	}
}

static bool has_role(const json_t *m, const char *role)
{
	const char *r = json_string_value(json_object_get(m, "role"));

	return r != NULL && strcmp(r, role) == 0;
}

/* The text of the user messages from index `from` on, joined; new or NULL. */
char *cli_prompt_user_text(const json_t *messages, size_t from)
{
	char *out = NULL;

	for (size_t i = from; i < json_array_size(messages); i++)
		if (has_role(json_array_get(messages, i), "user"))
			message_text(json_array_get(messages, i), NULL, &out);
	return out;
}

/* Index just past the last assistant message (0 when there is none). */
size_t cli_prompt_turn_start(const json_t *messages)
{
	size_t i = json_array_size(messages);

	while (i-- > 0) {
		const char *role = json_string_value(json_object_get(json_array_get(messages, i), "role"));

		if (role != NULL && strcmp(role, "assistant") == 0)
			return i + 1;
	}
	return 0;
}

/* The conversation before index `upto`, as text a fresh run can read, or
 * NULL when there is none: what a CLI whose session is gone still needs. */
static char *replay(const json_t *messages, size_t upto)
{
	char *out = NULL, *head;

	for (size_t i = 0; i < upto; i++) {
		json_t *m = json_array_get(messages, i);
		bool user = has_role(m, "user");
		char *body = NULL, *line;
		size_t n;

		if (!user && !has_role(m, "assistant"))
			continue;
		message_text(m, user ? NULL : "text", &body);
		if (body == NULL)
			continue;
		n = strlen(body) + sizeof("Assistant: ");
		line = malloc(n);
		if (line != NULL) {
			snprintf(line, n, "%s: %s", user ? "User" : "Assistant", body);
			cli_prompt_append(&out, line);
		}
		free(line);
		free(body);
	}
	if (out == NULL)
		return NULL;
	head = strdup("The conversation so far (replayed: the agent's own session could not be "
		      "continued):");
	cli_prompt_append(&head, out);
	cli_prompt_append(&head, "---");
	free(out);
	return head;
}

/* A fresh run's prompt for the turn that starts at `from`: the earlier
 * turns replayed, then the turn's own text. New string, or NULL. */
char *cli_prompt_fresh(const json_t *messages, size_t from)
{
	char *prompt = replay(messages, from), *turn = cli_prompt_user_text(messages, from);

	if (turn != NULL)
		cli_prompt_append(&prompt, turn);
	free(turn);
	return prompt;
}


/* cli_prompt — what one run of an agent CLI is sent, from the
 * conversation: the text of the turn being answered, and, for a fresh run
 * of a CLI whose own session is gone, the earlier turns replayed as text
 * (a CLI takes one prompt, so that is where the context can go). Pure. */
#ifndef RETRYD_CLI_PROMPT_H
#define RETRYD_CLI_PROMPT_H

#include <jansson.h>
#include <stddef.h>

/* Appends text to *out (a new or NULL string), a blank line between. */
void cli_prompt_append(char **out, const char *text);
/* The text of the user messages (borrowed) from index `from` on, joined;
 * a new string, or NULL when there is none. */
char *cli_prompt_user_text(const json_t *messages, size_t from);
/* Where the turn being answered starts: just past the last assistant
 * message (0 when there is none). */
size_t cli_prompt_turn_start(const json_t *messages);
/* A fresh run's prompt for the turn that starts at `from`: the turns before
 * it replayed ("User: …", "Assistant: …", under a line saying why), then
 * the turn's own text. A new string, or NULL. */
char *cli_prompt_fresh(const json_t *messages, size_t from);

#endif

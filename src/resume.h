/* resume — the session --continue or --resume goes on with: which file,
 * and what it holds, read before anything starts (core/journal reads it). */
#ifndef RETRYD_RESUME_H
#define RETRYD_RESUME_H

#include <jansson.h>
#include <stdbool.h>

/* Zeroed by its owner before resume_load; owns path and messages. */
struct resume {
	char *path;         /* the file, or NULL: a new session */
	json_t *messages;   /* its last session's messages (journal_load) */
	char id[40];        /* that session's id */
	json_t *park;       /* the park its last prompt was in (journal_load_park), or NULL */
};

/* file: --resume's (borrowed), else NULL; newest: --continue, the newest
 * session file in dir (borrowed; NULL: no session directory is known);
 * session_file: --session's (borrowed), else NULL. The file is claimed
 * (core/journal's lock) before it is read: one that another daemon holds
 * is an error for --resume and --session, and for --continue a new
 * session (a warning says so). A torn last line is left out, with a
 * warning. None of the three: nothing to resume, 0. Returns 0, or 1 having
 * said why on stderr. self holds what was read either way:
 * resume_release() it. */
int resume_load(struct resume *self, const char *file, bool newest, const char *dir,
		const char *session_file);
/* Frees path, messages and park and lets go of a claim no journal took;
 * self may be loaded again. */
void resume_release(struct resume *self);

#endif

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
};

/* file: --resume's (borrowed), else NULL; newest: --continue, the newest
 * session file in dir (borrowed; NULL: no session directory is known).
 * Neither: nothing to resume, 0. Returns 0, or 1 having said why on stderr.
 * self holds what was read either way: resume_release() it. */
int resume_load(struct resume *self, const char *file, bool newest, const char *dir);
/* Frees path and messages; self may be loaded again. */
void resume_release(struct resume *self);

#endif

/* resume — the session --continue or --resume goes on with (resume.h). */
#include "resume.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/journal.h"

int resume_load(struct resume *self, const char *file, bool newest, const char *dir,
		const char *session_file)
{
	char err[1024], note[256];
	int rc;

	if (file != NULL) {
		self->path = strdup(file);
	} else if (newest) {
		if (dir == NULL) {
			fprintf(stderr, "retryd: --continue: no session directory (neither "
				"XDG_STATE_HOME nor HOME is set; name one with --session-dir)\n");
			return 1;
		}
		self->path = journal_newest(dir, err, sizeof(err));
		if (self->path == NULL) {
			fprintf(stderr, "retryd: --continue: %s\n", err);
			return 1;
		}
	} else if (session_file != NULL) {
		/* --session FILE: a second daemon on it is refused now, not at
		 * its first message. */
		if (journal_claim(session_file, err, sizeof(err)) != 0) {
			fprintf(stderr, "retryd: %s\n", err);
			return 1;
		}
		return 0;
	} else {
		return 0;
	}
	if (self->path == NULL) {
		fprintf(stderr, "retryd: out of memory\n");
		return 1;
	}
	rc = journal_claim(self->path, err, sizeof(err));
	if (rc == -EAGAIN && file == NULL) {
		/* The newest session is another daemon's now: this one is a new
		 * session in a new file, not a second writer of that one. */
		LOG_WARN("--continue: %s; starting a new session", err);
		free(self->path);
		self->path = NULL;
		return 0;
	}
	if (rc != 0) {
		fprintf(stderr, "retryd: %s\n", err);
		return 1;
	}
	if (journal_load(self->path, self->id, &self->messages, note, sizeof(note), err,
			 sizeof(err)) != 0) {
		fprintf(stderr, "retryd: %s\n", err);
		return 1;
	}
	if (note[0] != '\0')
		LOG_WARN("resuming session file %s: %s", self->path, note);
	self->park = journal_load_park(self->path);
	LOG_INFO("resuming session %s from %s (%zu messages%s%s%s)", self->id, self->path,
		 json_array_size(self->messages), self->park ? ", its last prompt parked" : "",
		 note[0] != '\0' ? "; " : "", note);
	return 0;
}

void resume_release(struct resume *self)
{
	free(self->path);
	json_decref(self->messages);
	json_decref(self->park);
	self->park = NULL;
	self->path = NULL;
	self->messages = NULL;
	journal_unclaim();
}

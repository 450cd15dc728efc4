/* resume — the session --continue or --resume goes on with (resume.h). */
#include "resume.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/journal.h"

int resume_load(struct resume *self, const char *file, bool newest, const char *dir)
{
	char err[1024];

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
	} else {
		return 0;
	}
	if (self->path == NULL) {
		fprintf(stderr, "retryd: out of memory\n");
		return 1;
	}
	if (journal_load(self->path, self->id, &self->messages, err,
			 sizeof(err)) != 0) {
		fprintf(stderr, "retryd: %s\n", err);
		return 1;
	}
	LOG_INFO("resuming session %s from %s (%zu messages)", self->id, self->path,
		 json_array_size(self->messages));
	return 0;
}

void resume_release(struct resume *self)
{
	free(self->path);
	json_decref(self->messages);
	self->path = NULL;
	self->messages = NULL;
}

/* session_file — which conversation a session holds and its file: a new
 * one, a resumed one (--continue, --resume, open_session) and the file's
 * entries (session.h). */
#include "core/session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "base/errbuf.h"
#include "base/log.h"
#include "base/random.h"
#include "core/thinking.h"

static void start_new_session(struct session *self)
{
	int64_t now = clock_wall_ms(self->cfg.clock);

	random_uuid_v7(self->id, now);
	free(self->file);
	self->file = self->fixed_file != NULL ? strdup(self->fixed_file)
		   : journal_path(self->session_dir, self->id, now);
	journal_release(&self->journal);
	journal_init(&self->journal, self->file, self->id, now);
	json_array_clear(self->messages);
	free(self->name);
	self->name = NULL;
	chain_reset(&self->chain);
}

/* The session continues a file: its id, its messages (borrowed, copied),
 * appended to without a new header. new_session leaves it for a new file
 * in the directory. */
static int resume_session(struct session *self, const char *file, const char *id,
			  const json_t *messages)
{
	json_t *copy = json_deep_copy(messages);
	char *path = strdup(file);
	struct journal j;

	/* Everything that can fail comes first: a failed open leaves the
	 * session it was asked to leave as it was. */
	if (copy == NULL || path == NULL ||
	    journal_init(&j, path, id, clock_wall_ms(self->cfg.clock)) != 0) {
		json_decref(copy);
		free(path);
		return -1;
	}
	json_array_clear(self->messages);
	if (json_array_extend(self->messages, copy) != 0) {
		json_decref(copy);
		free(path);
		journal_release(&j);
		return -1;
	}
	json_decref(copy);
	snprintf(self->id, sizeof(self->id), "%s", id);
	free(self->file);
	self->file = path;
	free(self->name);
	self->name = NULL;
	chain_reset(&self->chain);
	journal_release(&self->journal);
	self->journal = j;
	journal_continue(&self->journal);
	return 0;
}

/* pi's start: the level a resumed file last changed to, else the setting
 * defaultThinkingLevel, clamped to the model. */
static void load_thinking_level(struct session *self, const char *file)
{
	char *saved = file != NULL ? journal_load_thinking_level(file) : NULL;
	const char *want = saved != NULL
		? saved : settings_get_string(self->cfg.settings, "defaultThinkingLevel");

	self->thinking_level = thinking_clamp(provider_model(self->cfg.provider,
							     self->chain.fallback.model), want);
	free(saved);
}

int session_file_start(struct session *self)
{
	const struct session_config *cfg = &self->cfg;

	start_new_session(self);
	if (cfg->resume_file != NULL &&
	    resume_session(self, cfg->resume_file, cfg->resume_id, cfg->resume_messages) != 0)
		return -1;
	load_thinking_level(self, cfg->resume_file);
	return 0;
}

void session_new(struct session *self)
{
	session_abort(self, NULL);
	start_new_session(self);
	/* A file opened but not yet written to is held (its lock) until its
	 * journal takes it over; the session left it, so let it go. */
	journal_unclaim_other(self->file);
#ifdef __GLIBC__
	/* The old conversation was thousands of small blocks; glibc keeps
	 * freed ones for reuse unless told to give them back, so a long
	 * conversation's memory would stay with the process. */
	malloc_trim(0);
#endif
}

static json_t *opened(struct session *self, bool resumed)
{
	return json_pack("{s:b, s:b, s:s, s:s?}", "cancelled", 0, "resumed", resumed, "sessionId",
			 self->id, "sessionFile", self->file);
}

/* A directory with no session in it: a new session there (oh-my-pi's
 * "start a fresh one there"). */
static int open_fresh(struct session *self, const char *dir, json_t **data, char *err,
		      size_t errlen)
{
	char *copy = strdup(dir);

	if (copy == NULL)
		return errbuf_set(err, errlen, "open_session: out of memory");
	free(self->session_dir);
	self->session_dir = copy;
	free(self->fixed_file);
	self->fixed_file = NULL;
	start_new_session(self);
	journal_unclaim_other(self->file);
	load_thinking_level(self, NULL);
	*data = opened(self, false);
	return 0;
}

/* The same file however it is named (dir/, ./, a symlink): oh-my-pi
 * compares resolved paths. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (a == NULL || b == NULL)
		return false;
	if (strcmp(a, b) == 0)
		return true;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int session_open(struct session *self, const char *where, json_t **data, char *err,
		 size_t errlen)
{
	struct stat st;
	char *file, id[40], why[512], note[256];
	json_t *messages = NULL;
	int rc;

	*data = NULL;
	if (self->busy)
		return errbuf_set(err, errlen, "open_session: a run is in progress (a prompt, its "
				  "retries or queued messages); wait for session_settled or abort it first");
	if (self->file == NULL)
		return errbuf_set(err, errlen, "open_session: this daemon keeps no session file "
				  "(started with --no-session)");
	if (stat(where, &st) != 0)
		return errbuf_set(err, errlen, "open_session: %.300s: %s", where, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		file = journal_newest(where, why, sizeof(why));
		if (file == NULL && strstr(why, "no *.jsonl") != NULL)
			return open_fresh(self, where, data, err, errlen);
		if (file == NULL)
			return errbuf_set(err, errlen, "open_session: %s", why);
	} else if (!S_ISREG(st.st_mode)) {
		return errbuf_set(err, errlen, "open_session: %.300s is not a regular file (a "
				  "session file or its directory)", where);
	} else {
		file = strdup(where);
		if (file == NULL)
			return errbuf_set(err, errlen, "open_session: out of memory");
	}
	if (same_file(file, self->file)) {
		/* Reopening the session in use changes nothing (oh-my-pi's rule). */
		free(file);
		*data = opened(self, true);
		return 0;
	}
	/* One writer per file (core/journal): a file another daemon writes is
	 * refused, not shared. */
	if (journal_claim(file, why, sizeof(why)) != 0) {
		rc = errbuf_set(err, errlen, "open_session: %s", why);
	} else if (journal_load(file, id, &messages, note, sizeof(note), why, sizeof(why)) != 0) {
		journal_unclaim();
		rc = errbuf_set(err, errlen, "open_session: %s", why);
	} else if (resume_session(self, file, id, messages) != 0) {
		journal_unclaim();
		rc = errbuf_set(err, errlen, "open_session: out of memory");
	} else {
		if (note[0] != '\0')
			LOG_WARN("open_session: session file %s: %s", file, note);
		load_thinking_level(self, file);
		*data = opened(self, true);
		rc = 0;
	}
	json_decref(messages);
	free(file);
	return rc;
}

int session_entries(struct session *self, const char *since, json_t **data, char *err,
		    size_t errlen)
{
	json_t *entries, *e, *leaf;
	size_t i, from = 0;

	*data = NULL;
	if (journal_entries(self->file, &entries, err, errlen) != 0)
		return -1;
	if (since != NULL) {
		json_array_foreach(entries, i, e) {
			const char *id = json_string_value(json_object_get(e, "id"));

			if (id != NULL && strcmp(id, since) == 0)
				break;
		}
		if (i == json_array_size(entries)) {
			json_decref(entries);
			/* pi's sentence. */
			return errbuf_set(err, errlen, "Entry not found: %.200s", since);
		}
		from = i + 1;
	}
	/* The leaf is the session's, whatever the slice: a client polling
	 * with since=leafId gets an empty list and the same leaf back. */
	e = json_array_get(entries, json_array_size(entries) - 1);
	leaf = e != NULL ? json_incref(json_object_get(e, "id")) : json_null();
	while (from-- > 0)
		json_array_remove(entries, 0);
	*data = json_pack("{s:o, s:o}", "entries", entries, "leafId", leaf);
	return *data != NULL ? 0 : errbuf_set(err, errlen, "get_entries: out of memory");
}

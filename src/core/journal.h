/* journal — the session file: JSONL, appended as things happen.
 *
 * First line {"type":"session","version":1,"id","timestamp","cwd"}, then one
 * {"type":"message","message":{...}} per message and, as pi writes it, a
 * {"type":"thinking_level_change","timestamp","thinkingLevel"} line when the
 * thinking level changes, the failed attempts that a
 * retry drops from the in-memory context included: their lines carry
 * "retried":true, so a resume leaves them out. Each line passes
 * base/secret's masker before it is written. The file and its
 * directories are created at the first message, so an unused session leaves
 * nothing behind. */
#ifndef RETRYD_JOURNAL_H
#define RETRYD_JOURNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

struct journal {
	char *path;       /* owned; NULL when disabled */
	FILE *fp;         /* open once the header is written */
	char id[40];
	int64_t started_ms;
	bool failed;      /* a write failed; reported once, then retried at the next message */
	bool has_header;  /* the file already holds this session's header (a resume) */
	const char *pending_level; /* static: a level change not written yet, or NULL */
	int64_t pending_ms;
};

/* path: borrowed (copied); NULL disables the journal. */
int journal_init(struct journal *self, const char *path, const char *id, int64_t wall_ms);
void journal_release(struct journal *self);

/* The file already holds this session's header: messages are appended to
 * it without a new one (a resumed session). */
void journal_continue(struct journal *self);

/* Appends message (borrowed); retried: a failed attempt that a retry drops
 * from the in-memory context. Returns 0, or -1 with err saying which file
 * and why (e.g. "cannot write session file /x: Permission denied"). */
int journal_append(struct journal *self, const json_t *message, bool retried, char *err,
		   size_t errlen);

/* A thinking level change (level: a static string, kept) at wall_ms: written
 * now when the file is open, else before the next message (an unused
 * session still leaves no file). Returns 0, or -1 with err as
 * journal_append's. */
int journal_thinking_level(struct journal *self, const char *level, int64_t wall_ms, char *err,
			   size_t errlen);

/* The thinking level the last session in the file at path (borrowed) last
 * changed to, as a new string, or NULL when it has none (or the file cannot
 * be read: journal_load says why). */
char *journal_load_thinking_level(const char *path);

/* Reads the session file at path for a resume: the last session in it (a
 * file named by --session holds one per new_session), its id into id and
 * its messages, without the lines marked "retried", as *messages (new
 * reference). Lines of other types are skipped. Returns 0, or -1 with err
 * naming the file and why (missing, unreadable, not a session file, a line
 * that is not JSON). */
int journal_load(const char *path, char id[40], json_t **messages, char *err, size_t errlen);
/* The newest "*.jsonl" regular file in dir by modification time, as a new
 * string; NULL with err saying why (none there, dir unreadable). */
char *journal_newest(const char *dir, char *err, size_t errlen);

/* $XDG_STATE_HOME/retryd/sessions, else ~/.local/state/retryd/sessions; a
 * new string, or NULL when neither variable is set. */
char *journal_default_dir(void);
/* "<dir>/<UTC time>_<id>.jsonl" for a session started at wall_ms, as a new
 * string (the caller frees it); NULL when dir is NULL or memory ran out. */
char *journal_path(const char *dir, const char *id, int64_t wall_ms);

#endif

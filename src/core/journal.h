/* journal — the session file: JSONL, appended as things happen.
 *
 * First line {"type":"session","version":1,"id","timestamp","cwd"}, then one
 * {"type":"message","message":{...}} per message and, as pi writes it, a
 * {"type":"thinking_level_change","timestamp","thinkingLevel"} line when the
 * thinking level changes, the failed attempts that a
 * retry drops from the in-memory context included: their lines carry
 * "retried":true, so a resume leaves them out. Each line passes
 * base/secret's masker before it is written, whole: a failed or short
 * write is cut back, so the file always ends with its last whole line. The
 * file (0600) and its folders (0700) are created at the first message, so
 * an unused session leaves nothing behind; from then on this process holds
 * the file's lock (flock), so a second daemon cannot write it too. Files
 * are opened without following a symbolic link and must be regular. */
#ifndef RETRYD_JOURNAL_H
#define RETRYD_JOURNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

/* What a resume reads, at most: a line, and the whole file. */
#define JOURNAL_MAX_LINE_BYTES (64 << 20)
#define JOURNAL_MAX_FILE_BYTES (1024 << 20)

struct journal {
	char *path;       /* owned; NULL when disabled */
	int fd;           /* open (and locked) from the first write, when open */
	bool open;        /* a zeroed journal has no fd */
	bool torn;        /* a failed write could not be cut back: repaired before the next */
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

/* A prompt parked until a usage limit resets (record: borrowed, the
 * park's {"resetAtMs", ...} as core/park makes it), written as a
 * {"type":"park","timestamp",...record} line; NULL writes
 * {"type":"park_end","timestamp"}: the park was cancelled. A session whose
 * last line is a park line was parked when its daemon stopped. Returns 0,
 * or -1 with err as journal_append's. */
int journal_park(struct journal *self, const json_t *record, int64_t wall_ms, char *err,
		 size_t errlen);
/* The park line that ends the last session in the file at path (borrowed),
 * as a new reference, or NULL when that session's last line is none (or the
 * file cannot be read: journal_load says why). */
json_t *journal_load_park(const char *path);

/* The thinking level the last session in the file at path (borrowed) last
 * changed to, as a new string, or NULL when it has none (or the file cannot
 * be read: journal_load says why). */
char *journal_load_thinking_level(const char *path);

/* Opens the session file at path, when there is one, and takes its lock
 * for this process now: the journal that writes path later uses this
 * descriptor. Returns 0 (claimed, or no file there yet), -EAGAIN when
 * another process holds the lock, or another negative errno (a symbolic
 * link, not a regular file, unreadable); err says which file and why. */
int journal_claim(const char *path, char *err, size_t errlen);
/* Lets go of a claimed file that no journal took over. */
void journal_unclaim(void);
/* The same unless the claim is for keep (NULL: none is kept): a session
 * that moves to another file before writing lets the old one go. */
void journal_unclaim_other(const char *keep);

/* Reads the session file at path for a resume: the last session in it (a
 * file named by --session holds one per new_session), its id into id and
 * its messages, without the lines marked "retried", as *messages (new
 * reference). Lines of other types are skipped. A last line with no LF
 * after it that is not a JSON object was torn by a kill or a full disk: it
 * is left out and note (may be NULL) says so; note is "" otherwise.
 * Returns 0, or -1 with err naming the file and why (missing, unreadable,
 * a symbolic link, not a regular file, over the bounds, not a session
 * file, a line that is not JSON). */
int journal_load(const char *path, char id[40], json_t **messages, char *note, size_t notelen,
		 char *err, size_t errlen);
/* get_entries: the lines of the last session in the file at path, its
 * header left out, in pi 1.6's entry shape: "type", an "id" (its line
 * number, 8 hex digits), a "parentId" (the line before it; null for the
 * first), a message line's "timestamp" (ISO 8601, from its message's), then
 * the line's own members. Lines that are not JSON objects with a "type"
 * are skipped. No file yet (or path NULL): no entries. *entries: new
 * reference. Returns 0, or -1 with err when the file cannot be read. */
int journal_entries(const char *path, json_t **entries, char *err, size_t errlen);
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

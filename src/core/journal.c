#include "core/journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/errbuf.h"
#include "base/fsutil.h"
#include "base/secret.h"
#include "base/utf8.h"

/* The session file a resume or a --session FILE claimed at the start:
 * opened and locked before anything else runs, so that a second daemon is
 * refused at once, and handed to the journal that writes it (one process
 * claims at most one file). */
static struct {
	char *path;
	int fd;
} claimed = { NULL, -1 };

int journal_init(struct journal *self, const char *path, const char *id, int64_t wall_ms)
{
	memset(self, 0, sizeof(*self));
	snprintf(self->id, sizeof(self->id), "%s", id);
	self->started_ms = wall_ms;
	if (path == NULL)
		return 0;
	self->path = strdup(path);
	return self->path ? 0 : -1;
}

void journal_release(struct journal *self)
{
	if (self->open)
		close(self->fd);
	free(self->path);
	memset(self, 0, sizeof(*self));
}

/* mkdir -p of path's parent directory; the folders it makes are 0700
 * whatever the umask. 0, or -1 with errno set by the step that failed. */
static int make_parents(const char *path)
{
	char *dir = strdup(path);
	char *p;
	int rc = 0, saved = 0;

	if (dir == NULL)
		return -1;
	p = strrchr(dir, '/');
	if (p == NULL || p == dir) {
		free(dir);
		return 0;
	}
	*p = '\0';
	for (p = dir + 1; rc == 0; p++) {
		bool last = *p == '\0';

		if (!last && *p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) == 0) {
			(void)chmod(dir, 0700);
		} else if (errno != EEXIST) {
			saved = errno;
			rc = -1;
		}
		if (last)
			break;
		*p = '/';
	}
	free(dir);
	errno = saved;
	return rc;
}

/* fd (open on path) is a regular file of this user's (fsutil_judge_own_file),
 * and this process now holds its lock. 0, or a negative errno with err
 * saying why. */
static int check_and_lock(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;
	char why[160];

	if (fstat(fd, &st) != 0)
		return errbuf_set(err, errlen, "cannot use session file %s: %s", path,
				  strerror(errno)), -EIO;
	if (fsutil_judge_own_file(&st, false, why, sizeof(why)) != 0)
		return errbuf_set(err, errlen, "cannot use session file %s: it %s", path, why),
		       -EINVAL;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK)
			return errbuf_set(err, errlen, "session file %s is in use by another retryd "
					  "(it holds the file's lock)", path), -EAGAIN;
		return errbuf_set(err, errlen, "cannot lock session file %s: %s", path,
				  strerror(errno)), -EIO;
	}
	return 0;
}

/* Opens an existing session file for reading and appending: never through
 * a symbolic link (O_NOFOLLOW), never blocking on a FIFO (O_NONBLOCK; it is
 * refused by check_and_lock). -ENOENT when there is none. */
static int open_existing(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int rc;

	if (fd < 0) {
		rc = -errno;
		if (rc == -ELOOP)
			errbuf_set(err, errlen, "cannot use session file %s: it is a symbolic link "
				   "(name the file itself)", path);
		else
			errbuf_set(err, errlen, "cannot open session file %s: %s", path, strerror(-rc));
		return rc;
	}
	rc = check_and_lock(fd, path, err, errlen);
	if (rc != 0) {
		close(fd);
		return rc;
	}
	return fd;
}

int journal_claim(const char *path, char *err, size_t errlen)
{
	int fd;

	if (claimed.path != NULL && strcmp(claimed.path, path) == 0)
		return 0;
	journal_unclaim();
	fd = open_existing(path, err, errlen);
	/* Not there (yet): the first write makes it, or says why it cannot. */
	if (fd == -ENOENT || fd == -ENOTDIR)
		return 0;
	if (fd < 0)
		return fd;
	claimed.path = strdup(path);
	if (claimed.path == NULL) {
		close(fd);
		return errbuf_set(err, errlen, "out of memory"), -ENOMEM;
	}
	claimed.fd = fd;
	return 0;
}

void journal_unclaim(void)
{
	if (claimed.fd >= 0)
		close(claimed.fd);
	free(claimed.path);
	claimed.path = NULL;
	claimed.fd = -1;
}

void journal_unclaim_other(const char *keep)
{
	if (claimed.path != NULL && (keep == NULL || strcmp(claimed.path, keep) != 0))
		journal_unclaim();
}

static void iso_time(int64_t ms, char *out, size_t len)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* Writes buf[0..len) at the end of the file whole, or not at all: a failed
 * or short write (a full disk, a file size limit) is cut back to where the
 * file ended, so the file always ends with a whole line. 0, or -1 with
 * errno. */
static int append_whole(struct journal *self, const char *buf, size_t len)
{
	off_t end = lseek(self->fd, 0, SEEK_END);
	size_t done = 0;
	int saved;

	if (end < 0)
		return -1;
	while (done < len) {
		ssize_t n = write(self->fd, buf + done, len - done);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		saved = n < 0 ? errno : EIO;
		/* Else the torn line stays, and repair_tail cuts it before
		 * the next write. */
		self->torn = ftruncate(self->fd, end) != 0;
		errno = saved;
		return -1;
	}
	return 0;
}

/* Every line passes the masker: what a message quotes (a user's prompt, a
 * server's text) holds no key in the file. A mask only replaces bytes
 * inside a JSON string with "***", so the line stays valid JSON. */
static int write_line(struct journal *self, json_t *obj)
{
	char *line = json_dumps(obj, JSON_COMPACT);
	size_t len;
	int rc;

	if (line == NULL) {
		errno = ENOMEM;
		return -1;
	}
	len = strlen(line);
	secret_mask_json_text(line, &len);
	line[len++] = '\n';
	rc = append_whole(self, line, len);
	free(line);
	return rc;
}

/* Where the last line of the file starts (the byte after its last LF, 0
 * when it has none), read backwards a chunk at a time. -1 with errno. */
static off_t last_line_start(int fd, off_t size)
{
	char buf[4096];
	off_t pos = size;

	while (pos > 0) {
		size_t n = pos > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)pos;

		if (pread(fd, buf, n, pos - (off_t)n) != (ssize_t)n)
			return -1;
		for (size_t k = n; k > 0; k--)
			if (buf[k - 1] == '\n')
				return pos - (off_t)n + (off_t)k;
		pos -= (off_t)n;
	}
	return 0;
}

/* A file that does not end with a line end (a kill or a full disk in the
 * middle of a line, or another writer) is cut back to its last whole line,
 * so the next line starts clean; a last line that is a whole JSON object
 * and only lost its LF gets it back instead (the loader kept it too). */
static int repair_tail(struct journal *self)
{
	off_t size = lseek(self->fd, 0, SEEK_END), start;
	char c, *tail = NULL;
	json_t *obj = NULL;

	if (size <= 0)
		return size < 0 ? -1 : 0;
	if (pread(self->fd, &c, 1, size - 1) != 1)
		return -1;
	if (c == '\n')
		return 0;
	start = last_line_start(self->fd, size);
	if (start < 0)
		return -1;
	/* A tail that could not be read is not known to be torn: the write
	 * fails rather than cut what may be a whole line. A tail longer than
	 * any line the loader takes is cut unread. */
	if (size - start <= JOURNAL_MAX_LINE_BYTES) {
		ssize_t got;

		tail = malloc((size_t)(size - start) + 1);
		if (tail == NULL) {
			errno = ENOMEM;
			return -1;
		}
		got = pread(self->fd, tail, (size_t)(size - start), start);
		if (got != size - start) {
			if (got >= 0)
				errno = EIO;
			free(tail);
			return -1;
		}
		tail[size - start] = '\0';
		obj = json_loads(tail, JSON_REJECT_DUPLICATES, NULL);
		free(tail);
	}
	if (json_is_object(obj)) {
		json_decref(obj);
		return append_whole(self, "\n", 1);
	}
	json_decref(obj);
	return ftruncate(self->fd, start);
}

static int open_file(struct journal *self, char *err, size_t errlen)
{
	char cwd[4096], when[64];
	json_t *header;
	int rc, fd;
	bool created = false;

	if (claimed.path != NULL && strcmp(claimed.path, self->path) == 0) {
		fd = claimed.fd;
		claimed.fd = -1;
		journal_unclaim();
	} else {
		if (make_parents(self->path) != 0)
			return errbuf_set(err, errlen, "cannot write session file %s: cannot make its "
					  "folder: %s", self->path, strerror(errno));
		/* Created 0600 whatever the umask: a conversation is private.
		 * Close-on-exec: an agent CLI child must not inherit it. */
		fd = open(self->path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK |
			  O_CLOEXEC, 0600);
		if (fd >= 0) {
			created = true;
			(void)fchmod(fd, 0600);
			if ((rc = check_and_lock(fd, self->path, err, errlen)) != 0) {
				close(fd);
				return -1;
			}
		} else if (errno == EEXIST) {
			fd = open_existing(self->path, err, errlen);
			/* A second writer and a refused file (check_and_lock) have
			 * sentences of their own. */
			if (fd < 0 && fd != -EAGAIN && fd != -EINVAL)
				errbuf_set(err, errlen, "cannot write session file %s: %s", self->path,
					   fd == -ELOOP ? "it is a symbolic link" : strerror(-fd));
			if (fd < 0)
				return -1;
		} else {
			return errbuf_set(err, errlen, "cannot write session file %s: %s", self->path,
					  strerror(errno));
		}
	}
	self->fd = fd;
	self->open = true;
	if (!created && repair_tail(self) != 0)
		return errbuf_set(err, errlen, "cannot write session file %s: %s", self->path,
				  strerror(errno));
	if (self->has_header)
		return 0;
	/* The working folder's name is bytes: one that is not UTF-8 is written
	 * repaired, rather than no header at all. */
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		cwd[0] = '\0';
	utf8_repair(cwd);
	iso_time(self->started_ms, when, sizeof(when));
	header = json_pack("{s:s, s:i, s:s, s:s, s:s}", "type", "session", "version", 1,
			   "id", self->id, "timestamp", when, "cwd", cwd);
	rc = header ? write_line(self, header) : -1;
	if (header == NULL)
		errno = ENOMEM;
	json_decref(header);
	if (rc != 0)
		return errbuf_set(err, errlen, "cannot write session file %s: %s", self->path,
				  strerror(errno));
	self->has_header = true;
	return 0;
}

void journal_continue(struct journal *self)
{
	self->has_header = true;
}

static int write_level(struct journal *self)
{
	char when[64];
	json_t *line;
	int rc;

	iso_time(self->pending_ms, when, sizeof(when));
	line = json_pack("{s:s, s:s, s:s}", "type", "thinking_level_change", "timestamp", when,
			 "thinkingLevel", self->pending_level);
	rc = line ? write_line(self, line) : -1;
	json_decref(line);
	if (rc == 0)
		self->pending_level = NULL;
	return rc;
}

/* err already says why, or errno does. The file stays open (and locked)
 * for the next message. */
static int fail_write(struct journal *self, bool said, char *err, size_t errlen)
{
	if (!said)
		errbuf_set(err, errlen, "cannot write session file %s: %s", self->path,
			   strerror(errno ? errno : EIO));
	self->failed = true;
	return -1;
}

int journal_thinking_level(struct journal *self, const char *level, int64_t wall_ms, char *err,
			   size_t errlen)
{
	if (self->path == NULL)
		return 0;
	self->pending_level = level;
	self->pending_ms = wall_ms;
	if (!self->open)
		return 0;
	errno = 0;
	if (self->torn && repair_tail(self) != 0)
		return fail_write(self, false, err, errlen);
	self->torn = false;
	return write_level(self) == 0 ? 0 : fail_write(self, false, err, errlen);
}

/* The file open and ending in a whole line, before a line is added. */
static int ready_to_write(struct journal *self, char *err, size_t errlen)
{
	errno = 0;
	if (!self->open && open_file(self, err, errlen) != 0)
		return fail_write(self, true, err, errlen);
	if (self->torn && repair_tail(self) != 0)
		return fail_write(self, false, err, errlen);
	self->torn = false;
	return 0;
}

int journal_append(struct journal *self, const json_t *message, bool retried, char *err,
		   size_t errlen)
{
	json_t *line;
	int rc;

	if (self->path == NULL)
		return 0;
	if (ready_to_write(self, err, errlen) != 0)
		return -1;
	if (self->pending_level != NULL && write_level(self) != 0)
		return fail_write(self, false, err, errlen);
	line = json_pack("{s:s, s:O}", "type", "message", "message", message);
	if (line != NULL && retried)
		json_object_set_new(line, "retried", json_true());
	rc = line ? write_line(self, line) : -1;
	if (line == NULL)
		errno = ENOMEM;
	json_decref(line);
	if (rc != 0)
		return fail_write(self, false, err, errlen);
	self->failed = false;
	return 0;
}

int journal_park(struct journal *self, const json_t *record, int64_t wall_ms, char *err,
		 size_t errlen)
{
	char when[64];
	json_t *line;
	int rc;

	if (self->path == NULL)
		return 0;
	if (ready_to_write(self, err, errlen) != 0)
		return -1;
	iso_time(wall_ms, when, sizeof(when));
	line = json_pack("{s:s, s:s}", "type", record ? "park" : "park_end", "timestamp", when);
	if (line != NULL && record != NULL)
		json_object_update_missing(line, (json_t *)record);
	rc = line ? write_line(self, line) : -1;
	if (line == NULL)
		errno = ENOMEM;
	json_decref(line);
	if (rc != 0)
		return fail_write(self, false, err, errlen);
	return 0;
}

char *journal_default_dir(void)
{
	return fsutil_xdg_path("XDG_STATE_HOME", ".local/state", "/retryd/sessions");
}

char *journal_path(const char *dir, const char *id, int64_t wall_ms)
{
	char stamp[32], *path;
	time_t secs = (time_t)(wall_ms / 1000);
	struct tm tm;
	size_t n;

	if (dir == NULL)
		return NULL;
	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H-%M-%SZ", &tm);
	n = strlen(dir) + strlen(stamp) + strlen(id) + 10;
	path = malloc(n);
	if (path != NULL)
		snprintf(path, n, "%s/%s_%s.jsonl", dir, stamp, id);
	return path;
}

/* Opens a session file to read it: as open_existing, read-only when it
 * was not claimed. The descriptor, or -1 with err saying why (and errno
 * the open's when the open failed). */
static int open_to_read(const char *path, bool *owned, char *err, size_t errlen)
{
	struct stat st;
	char why[160];
	int fd;

	*owned = false;
	if (claimed.path != NULL && strcmp(claimed.path, path) == 0)
		return claimed.fd;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int saved = errno;

		if (saved == ELOOP)
			errbuf_set(err, errlen, "it is a symbolic link (name the file itself)");
		else
			errbuf_set(err, errlen, "%s", strerror(saved));
		errno = saved; /* the caller tells ENOENT apart */
		return -1;
	}
	*owned = true;
	if (fstat(fd, &st) != 0)
		errbuf_set(err, errlen, "%s", strerror(errno));
	else if (fsutil_judge_own_file(&st, false, why, sizeof(why)) != 0)
		errbuf_set(err, errlen, "it %s", why);
	else
		return fd;
	close(fd);
	*owned = false;
	return -1;
}

/* Called with each whole line (NUL-terminated, LF and a trailing CR cut);
 * last: it is the end of the file with no LF after it. 0 to go on, or -1
 * with why in err. */
typedef int (*line_fn)(void *ctx, char *line, size_t len, size_t lineno, bool last, char *err,
		       size_t errlen);

/* Reads every line of fd with pread, within the bounds: no line above
 * JOURNAL_MAX_LINE_BYTES, no file above JOURNAL_MAX_FILE_BYTES. 0, or -1
 * with why in err. */
static int read_lines(int fd, line_fn fn, void *ctx, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0, cap = 0, lineno = 0;
	off_t pos = 0;
	int rc = 0;

	if (fstat(fd, &st) == 0 && st.st_size > JOURNAL_MAX_FILE_BYTES)
		return errbuf_set(err, errlen, "it is larger than %d MiB, the bound on a session "
				  "file", JOURNAL_MAX_FILE_BYTES >> 20);
	for (;;) {
		ssize_t n;
		size_t from = 0;

		if (cap - len < 65536) {
			size_t ncap = cap == 0 ? 131072 : cap * 2;
			char *nbuf = realloc(buf, ncap);

			if (nbuf == NULL) {
				rc = errbuf_set(err, errlen, "out of memory");
				break;
			}
			buf = nbuf;
			cap = ncap;
		}
		n = pread(fd, buf + len, cap - len - 1, pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = errbuf_set(err, errlen, "%s", strerror(errno));
			break;
		}
		if (pos + n > JOURNAL_MAX_FILE_BYTES) {
			rc = errbuf_set(err, errlen, "it is larger than %d MiB, the bound on a session "
					"file", JOURNAL_MAX_FILE_BYTES >> 20);
			break;
		}
		pos += n;
		len += (size_t)n;
		for (size_t i = 0; rc == 0 && i < len; i++) {
			size_t end = i;

			if (buf[i] != '\n')
				continue;
			lineno++;
			buf[i] = '\0';
			if (end > from && buf[end - 1] == '\r')
				buf[--end] = '\0';
			rc = fn(ctx, buf + from, end - from, lineno, false, err, errlen);
			from = i + 1;
		}
		if (rc != 0)
			break;
		memmove(buf, buf + from, len - from);
		len -= from;
		if (len > JOURNAL_MAX_LINE_BYTES) {
			rc = errbuf_set(err, errlen, "line %zu is longer than %d MiB, the bound on a line",
					lineno + 1, JOURNAL_MAX_LINE_BYTES >> 20);
			break;
		}
		if (n == 0) {
			if (len > 0) {
				buf[len] = '\0';
				rc = fn(ctx, buf, len, lineno + 1, true, err, errlen);
			}
			break;
		}
	}
	free(buf);
	return rc;
}

struct loading {
	bool seen_header;
	char *id;
	json_t *messages;
	char *note;
	size_t notelen;
};

/* One line of a session file into id/messages; 0, or -1 with why in err. */
static int load_line(void *ctx, char *line, size_t len, size_t lineno, bool last, char *err,
		     size_t errlen)
{
	struct loading *l = ctx;
	json_error_t jerr;
	json_t *obj;
	const char *type;
	const json_t *msg;
	int rc = 0;

	if (len == 0)
		return 0;
	if (len != strlen(line))
		return errbuf_set(err, errlen, "line %zu holds a NUL byte", lineno);
	obj = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
	if (last && !json_is_object(obj)) {
		/* Torn by a kill or a full disk: every line before it is whole. */
		json_decref(obj);
		errbuf_set(l->note, l->notelen, "its last line (line %zu, %zu bytes) was cut off "
			   "before its end and was left out", lineno, len);
		return 0;
	}
	type = json_string_value(json_object_get(obj, "type"));
	msg = json_object_get(obj, "message");
	if (!json_is_object(obj)) {
		rc = errbuf_set(err, errlen, "line %zu is not a JSON object", lineno);
	} else if (type != NULL && strcmp(type, "session") == 0) {
		const char *sid = json_string_value(json_object_get(obj, "id"));

		if (sid == NULL || sid[0] == '\0' || strlen(sid) >= 40) {
			rc = errbuf_set(err, errlen, "line %zu: the session header has no usable \"id\"",
					lineno);
		} else {
			/* A later header starts a new session in the same file. */
			snprintf(l->id, 40, "%s", sid);
			json_array_clear(l->messages);
			l->seen_header = true;
		}
	} else if (!l->seen_header) {
		rc = errbuf_set(err, errlen, "not a session file (line %zu comes before any "
				"{\"type\":\"session\"} header)", lineno);
	} else if (type != NULL && strcmp(type, "message") == 0) {
		if (!json_is_object(msg) || !json_is_string(json_object_get(msg, "role")))
			rc = errbuf_set(err, errlen, "line %zu: a message line without a message "
					"object and its \"role\"", lineno);
		else if (!json_is_true(json_object_get(obj, "retried")))
			json_array_append(l->messages, (json_t *)msg);
	}
	json_decref(obj);
	return rc;
}

int journal_load(const char *path, char id[40], json_t **messages, char *note, size_t notelen,
		 char *err, size_t errlen)
{
	struct loading l = { .id = id, .messages = json_array(), .note = note, .notelen = notelen };
	char why[256];
	bool owned;
	int fd, rc = 0;

	*messages = NULL;
	id[0] = '\0';
	if (note != NULL && notelen > 0)
		note[0] = '\0';
	fd = open_to_read(path, &owned, why, sizeof(why));
	if (fd < 0 || l.messages == NULL)
		rc = fd < 0 ? -1 : errbuf_set(why, sizeof(why), "out of memory");
	else
		rc = read_lines(fd, load_line, &l, why, sizeof(why));
	if (rc == 0 && !l.seen_header)
		rc = errbuf_set(why, sizeof(why), "not a session file (no {\"type\":\"session\"} "
				"header)");
	if (rc != 0)
		errbuf_set(err, errlen, "cannot resume session file %s: %s", path, why);
	else
		*messages = json_incref(l.messages);
	if (owned)
		close(fd);
	json_decref(l.messages);
	return rc;
}

/* Only the few lines that can matter are parsed. */
static int level_line(void *ctx, char *line, size_t len, size_t lineno, bool last, char *err,
		      size_t errlen)
{
	char **level = ctx;
	json_t *obj;
	const char *type, *lv;

	(void)len;
	(void)lineno;
	(void)last;
	(void)err;
	(void)errlen;
	if (strstr(line, "\"session\"") == NULL && strstr(line, "thinking_level_change") == NULL)
		return 0;
	obj = json_loads(line, 0, NULL);
	type = json_string_value(json_object_get(obj, "type"));
	lv = json_string_value(json_object_get(obj, "thinkingLevel"));
	if (type != NULL && strcmp(type, "session") == 0) {
		/* A later header starts a new session in the same file. */
		free(*level);
		*level = NULL;
	} else if (type != NULL && strcmp(type, "thinking_level_change") == 0 && lv != NULL) {
		free(*level);
		*level = strdup(lv);
	}
	json_decref(obj);
	return 0;
}

/* Every line of the file at path through fn, for a reader that only
 * wants what the lines hold (a failure is no answer, not a sentence). */
static int read_path_lines(const char *path, line_fn fn, void *ctx)
{
	char why[256];
	bool owned;
	int fd = open_to_read(path, &owned, why, sizeof(why)), rc;

	if (fd < 0)
		return -1;
	rc = read_lines(fd, fn, ctx, why, sizeof(why));
	if (owned)
		close(fd);
	return rc;
}

char *journal_load_thinking_level(const char *path)
{
	char *level = NULL;

	if (read_path_lines(path, level_line, &level) != 0) {
		free(level);
		level = NULL;
	}
	return level;
}

/* The last line, when it is a park (json_t ** ctx); a torn last line is
 * not a line (the loader leaves it out too). */
static int park_line(void *ctx, char *line, size_t len, size_t lineno, bool last_line,
		     char *err, size_t errlen)
{
	json_t **last = ctx, *obj;
	const char *type;

	(void)lineno;
	(void)err;
	(void)errlen;
	if (len == 0)
		return 0;
	obj = json_loads(line, 0, NULL);
	if (last_line && !json_is_object(obj)) {
		json_decref(obj);
		return 0;
	}
	type = json_string_value(json_object_get(obj, "type"));
	json_decref(*last);
	*last = NULL;
	/* Only a park line that nothing follows counts. */
	if (type != NULL && strcmp(type, "park") == 0)
		*last = json_incref(obj);
	json_decref(obj);
	return 0;
}

json_t *journal_load_park(const char *path)
{
	json_t *last = NULL;

	if (read_path_lines(path, park_line, &last) != 0) {
		json_decref(last);
		last = NULL;
	}
	return last;
}

char *journal_newest(const char *dir, char *err, size_t errlen)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	struct timespec best = { 0, 0 };
	char *found = NULL;

	if (dp == NULL) {
		if (errno == ENOENT)
			errbuf_set(err, errlen, "no session to continue: %s does not exist", dir);
		else
			errbuf_set(err, errlen, "cannot read session directory %s: %s", dir,
				   strerror(errno));
		return NULL;
	}
	while ((e = readdir(dp)) != NULL) {
		size_t len = strlen(e->d_name);
		struct stat st;
		char *p;

		if (len <= 6 || strcmp(e->d_name + len - 6, ".jsonl") != 0)
			continue;
		p = malloc(strlen(dir) + len + 2);
		if (p == NULL)
			break;
		sprintf(p, "%s/%s", dir, e->d_name);
		/* Ties (one second's resolution on some file systems) go to the
		 * greater name: names start with the UTC start time. */
		/* An empty file is no session (a crash before its header); a
		 * link is not followed (nor resumed: see open_existing), and
		 * another user's file is not ours to continue. */
		if (lstat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
		    st.st_uid == geteuid() &&
		    (found == NULL || st.st_mtim.tv_sec > best.tv_sec ||
		     (st.st_mtim.tv_sec == best.tv_sec && (st.st_mtim.tv_nsec > best.tv_nsec ||
		      (st.st_mtim.tv_nsec == best.tv_nsec && strcmp(p, found) > 0))))) {
			free(found);
			found = p;
			best = st.st_mtim;
		} else {
			free(p);
		}
	}
	closedir(dp);
	if (found == NULL)
		errbuf_set(err, errlen, "no session to continue: no *.jsonl file in %s", dir);
	return found;
}

/* A line as pi 1.6's entry (new reference): pi's entries are a tree joined
 * by 8-hex-digit ids, retryd's lines a list, so each line is named by its
 * number in the file and hangs off the one before it; pi's keys come
 * first, in pi's order, with a message line's time as pi writes it. */
static json_t *entry_of(json_t *line, size_t lineno, const char *parent)
{
	json_t *msg_ts = json_object_get(json_object_get(line, "message"), "timestamp");
	char id[24], when[40];
	json_t *e;

	snprintf(id, sizeof(id), "%08zx", lineno);
	e = json_pack("{s:O, s:s, s:o}", "type", json_object_get(line, "type"), "id", id,
		      "parentId", parent ? json_string(parent) : json_null());
	if (e == NULL)
		return NULL;
	if (json_object_get(line, "timestamp") == NULL && json_is_integer(msg_ts)) {
		iso_time(json_integer_value(msg_ts), when, sizeof(when));
		json_object_set_new(e, "timestamp", json_string(when));
	}
	json_object_update_missing(e, line);
	return e;
}

/* One line into the entries (json array ctx): skipped when it is not a JSON
 * object with a "type" (a torn last line among them). */
static int entry_line(void *ctx, char *line, size_t len, size_t lineno, bool last_line,
		      char *err, size_t errlen)
{
	json_t *list = ctx, *obj, *last;
	const char *type;

	(void)len;
	(void)last_line;
	(void)err;
	(void)errlen;
	obj = json_loads(line, 0, NULL);
	type = json_string_value(json_object_get(obj, "type"));
	if (!json_is_object(obj) || type == NULL) {
		json_decref(obj);
		return 0;
	}
	if (strcmp(type, "session") == 0) {
		/* A later header starts a new session in the same file. */
		json_array_clear(list);
		json_decref(obj);
		return 0;
	}
	last = json_array_get(list, json_array_size(list) - 1);
	json_array_append_new(list, entry_of(obj, lineno,
					     json_string_value(json_object_get(last, "id"))));
	json_decref(obj);
	return 0;
}

int journal_entries(const char *path, json_t **entries, char *err, size_t errlen)
{
	json_t *list = json_array();
	char why[256];
	bool owned = false;
	int fd = -1, rc = 0;

	*entries = NULL;
	if (list == NULL)
		return errbuf_set(err, errlen, "get_entries: out of memory");
	if (path != NULL)
		fd = open_to_read(path, &owned, why, sizeof(why));
	if (fd < 0 && (path == NULL || errno == ENOENT)) {
		/* No file yet (it is made at the first message), or none at all. */
		*entries = list;
		return 0;
	}
	if (fd < 0 || read_lines(fd, entry_line, list, why, sizeof(why)) != 0)
		rc = errbuf_set(err, errlen, "get_entries: cannot read session file %s: %s", path,
				why);
	if (owned)
		close(fd);
	if (rc != 0) {
		json_decref(list);
		return -1;
	}
	*entries = list;
	return 0;
}

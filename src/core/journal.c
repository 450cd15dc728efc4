#include "core/journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/errbuf.h"
#include "base/fsutil.h"
#include "base/secret.h"

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
	if (self->fp != NULL)
		fclose(self->fp);
	free(self->path);
	memset(self, 0, sizeof(*self));
}

/* mkdir -p of path's parent directory. */
static int make_parents(const char *path)
{
	char *dir = strdup(path);
	char *p;
	int rc = 0;

	if (dir == NULL)
		return -1;
	p = strrchr(dir, '/');
	if (p == NULL || p == dir) {
		free(dir);
		return 0;
	}
	*p = '\0';
	for (p = dir + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			rc = -1;
		*p = '/';
	}
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		rc = -1;
	free(dir);
	return rc;
}

static void iso_time(int64_t ms, char *out, size_t len)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* Every line passes the masker: what a message quotes (a user's prompt, a
 * server's text) holds no key in the file. A mask only replaces bytes
 * inside a JSON string with "***", so the line stays valid JSON. */
static int write_line(FILE *fp, json_t *obj)
{
	char *line = json_dumps(obj, JSON_COMPACT);
	size_t len;
	int rc = -1;

	if (line == NULL)
		return -1;
	len = strlen(line);
	secret_mask(line, &len);
	line[len++] = '\n';
	if (fwrite(line, 1, len, fp) == len && fflush(fp) == 0)
		rc = 0;
	free(line);
	return rc;
}

static int open_file(struct journal *self)
{
	char cwd[4096], when[64];
	json_t *header;
	int rc, fd;

	make_parents(self->path);
	if (self->has_header) {
		fd = open(self->path, O_WRONLY | O_APPEND | O_CLOEXEC);
		self->fp = fd >= 0 ? fdopen(fd, "a") : NULL;
		if (self->fp == NULL && fd >= 0)
			close(fd);
		return self->fp ? 0 : -1;
	}
	/* Close-on-exec: an agent CLI child must not inherit the session file. */
	fd = open(self->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
	self->fp = fd >= 0 ? fdopen(fd, "a") : NULL;
	if (self->fp == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		cwd[0] = '\0';
	iso_time(self->started_ms, when, sizeof(when));
	header = json_pack("{s:s, s:i, s:s, s:s, s:s}", "type", "session", "version", 1,
			   "id", self->id, "timestamp", when, "cwd", cwd);
	rc = header ? write_line(self->fp, header) : -1;
	json_decref(header);
	if (rc != 0) {
		fclose(self->fp);
		self->fp = NULL;
	}
	return rc;
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
	rc = line ? write_line(self->fp, line) : -1;
	json_decref(line);
	if (rc == 0)
		self->pending_level = NULL;
	return rc;
}

static int fail_write(struct journal *self, char *err, size_t errlen)
{
	errbuf_set(err, errlen, "cannot write session file %s: %s", self->path,
		   errno ? strerror(errno) : "write failed");
	if (self->fp != NULL) {
		fclose(self->fp);
		self->fp = NULL;
	}
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
	if (self->fp == NULL)
		return 0;
	errno = 0;
	return write_level(self) == 0 ? 0 : fail_write(self, err, errlen);
}

int journal_append(struct journal *self, const json_t *message, bool retried, char *err,
		   size_t errlen)
{
	json_t *line;
	int rc;

	if (self->path == NULL)
		return 0;
	errno = 0;
	if (self->fp == NULL && open_file(self) != 0)
		goto fail;
	if (self->pending_level != NULL && write_level(self) != 0)
		goto fail;
	line = json_pack("{s:s, s:O}", "type", "message", "message", message);
	if (line != NULL && retried)
		json_object_set_new(line, "retried", json_true());
	rc = line ? write_line(self->fp, line) : -1;
	json_decref(line);
	if (rc != 0)
		goto fail;
	self->failed = false;
	return 0;
fail:
	return fail_write(self, err, errlen);
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

/* One line of a session file into id/messages; 0, or -1 with why in err. */
static int load_line(const char *line, size_t lineno, bool *seen_header, char id[40],
		     json_t *messages, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *obj = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
	const char *type = json_string_value(json_object_get(obj, "type"));
	const json_t *msg = json_object_get(obj, "message");
	int rc = 0;

	if (!json_is_object(obj)) {
		rc = errbuf_set(err, errlen, "line %zu is not a JSON object", lineno);
	} else if (type != NULL && strcmp(type, "session") == 0) {
		const char *sid = json_string_value(json_object_get(obj, "id"));

		if (sid == NULL || sid[0] == '\0' || strlen(sid) >= 40) {
			rc = errbuf_set(err, errlen, "line %zu: the session header has no usable \"id\"",
					lineno);
		} else {
			/* A later header starts a new session in the same file. */
			snprintf(id, 40, "%s", sid);
			json_array_clear(messages);
			*seen_header = true;
		}
	} else if (!*seen_header) {
		rc = errbuf_set(err, errlen, "not a session file (line %zu comes before any "
				"{\"type\":\"session\"} header)", lineno);
	} else if (type != NULL && strcmp(type, "message") == 0) {
		if (!json_is_object(msg) || !json_is_string(json_object_get(msg, "role")))
			rc = errbuf_set(err, errlen, "line %zu: a message line without a message "
					"object and its \"role\"", lineno);
		else if (!json_is_true(json_object_get(obj, "retried")))
			json_array_append(messages, (json_t *)msg);
	}
	json_decref(obj);
	return rc;
}

int journal_load(const char *path, char id[40], json_t **messages, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	FILE *fp = fd >= 0 ? fdopen(fd, "r") : NULL;
	char *line = NULL, why[256];
	size_t cap = 0, lineno = 0;
	ssize_t n;
	bool seen_header = false;
	json_t *loaded = json_array();
	int rc = 0;

	*messages = NULL;
	id[0] = '\0';
	if (fp == NULL || loaded == NULL) {
		errbuf_set(err, errlen, "cannot resume session file %s: %s", path,
			   fp == NULL ? strerror(errno) : "out of memory");
		if (fp == NULL && fd >= 0)
			close(fd);
		rc = -1;
		goto out;
	}
	while ((n = getline(&line, &cap, fp)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0)
			continue;
		if ((size_t)n != strlen(line)) {
			rc = errbuf_set(why, sizeof(why), "line %zu holds a NUL byte", lineno);
			break;
		}
		rc = load_line(line, lineno, &seen_header, id, loaded, why, sizeof(why));
		if (rc != 0)
			break;
	}
	if (rc == 0 && ferror(fp))
		rc = errbuf_set(why, sizeof(why), "%s", strerror(errno ? errno : EIO));
	else if (rc == 0 && !seen_header)
		rc = errbuf_set(why, sizeof(why), "not a session file (no {\"type\":\"session\"} "
				"header)");
	if (rc != 0)
		errbuf_set(err, errlen, "cannot resume session file %s: %s", path, why);
	else
		*messages = json_incref(loaded);
out:
	free(line);
	if (fp != NULL)
		fclose(fp);
	json_decref(loaded);
	return rc;
}

char *journal_load_thinking_level(const char *path)
{
	FILE *fp = fopen(path, "re");
	char *line = NULL, *level = NULL;
	size_t cap = 0;

	if (fp == NULL)
		return NULL;
	while (getline(&line, &cap, fp) >= 0) {
		json_t *obj;
		const char *type, *lv;

		/* Only the few lines that can matter are parsed. */
		if (strstr(line, "\"session\"") == NULL && strstr(line, "thinking_level_change") == NULL)
			continue;
		obj = json_loads(line, 0, NULL);
		type = json_string_value(json_object_get(obj, "type"));
		lv = json_string_value(json_object_get(obj, "thinkingLevel"));
		if (type != NULL && strcmp(type, "session") == 0) {
			/* A later header starts a new session in the same file. */
			free(level);
			level = NULL;
		} else if (type != NULL && strcmp(type, "thinking_level_change") == 0 && lv != NULL) {
			free(level);
			level = strdup(lv);
		}
		json_decref(obj);
	}
	free(line);
	fclose(fp);
	return level;
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
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode) &&
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

#include "core/journal.h"

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

int journal_append(struct journal *self, const json_t *message, char *err, size_t errlen)
{
	json_t *line;
	int rc;

	if (self->path == NULL)
		return 0;
	errno = 0;
	if (self->fp == NULL && open_file(self) != 0)
		goto fail;
	line = json_pack("{s:s, s:O}", "type", "message", "message", message);
	rc = line ? write_line(self->fp, line) : -1;
	json_decref(line);
	if (rc != 0)
		goto fail;
	self->failed = false;
	return 0;
fail:
	errbuf_set(err, errlen, "cannot write session file %s: %s", self->path,
		   errno ? strerror(errno) : "write failed");
	if (self->fp != NULL) {
		fclose(self->fp);
		self->fp = NULL;
	}
	self->failed = true;
	return -1;
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

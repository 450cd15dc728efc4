#include "core/settings_file.h"

#include "base/errbuf.h"
#include "base/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *settings_file_default_path(void)
{
	return fsutil_xdg_path("XDG_CONFIG_HOME", ".config", "/retryd/settings.json");
}

/* Reads the whole file into a new NUL-terminated buffer. -1 with errno set. */
static int read_all(const char *path, char **out, size_t *outlen)
{
	char *buf = NULL, *bigger;
	size_t len = 0, cap = 0;
	int fd, saved;
	ssize_t n;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			bigger = realloc(buf, cap);
			if (bigger == NULL) {
				errno = ENOMEM;
				goto fail;
			}
			buf = bigger;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
fail:
	saved = errno;
	close(fd);
	free(buf);
	errno = saved;
	return -1;
}

json_t *settings_file_read(const char *path, bool missing_ok, char *err, size_t errlen)
{
	json_t *root = NULL;
	json_error_t jerr;
	char *text = NULL;
	size_t len = 0;

	if (read_all(path, &text, &len) < 0) {
		if (errno == ENOENT && missing_ok)
			return json_object();
		errbuf_set(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	if (strspn(text, " \t\r\n") == len) {
		free(text);
		return json_object();
	}
	root = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (root == NULL) {
		if (jerr.line > 0)
			errbuf_set(err, errlen, "line %d column %d: %s", jerr.line, jerr.column,
				   jerr.text);
		else
			errbuf_set(err, errlen, "%s", jerr.text);
		return NULL;
	}
	if (!json_is_object(root)) {
		errbuf_set(err, errlen, "must hold a JSON object");
		json_decref(root);
		return NULL;
	}
	return root;
}

/* mkdir -p with mode 0700 for what it creates. -1 with errno set. */
static int make_dirs(const char *dir)
{
	char *dup = strdup(dir), *p, saved;
	int rc = 0;

	if (dup == NULL) {
		errno = ENOMEM;
		return -1;
	}
	for (p = dup + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		saved = *p;
		*p = '\0';
		/* An existing non-directory shows up as ENOTDIR one step later. */
		if (mkdir(dup, 0700) < 0 && errno != EEXIST) {
			rc = -1;
			break;
		}
		*p = saved;
		if (saved == '\0')
			break;
	}
	free(dup);
	return rc;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int settings_file_write(const char *path, const json_t *root)
{
	const char *slash = strrchr(path, '/');
	char *dir = NULL, *tmp = NULL, *text = NULL;
	const char *base;
	size_t len;
	int fd = -1, rc, saved, dfd;
	bool made = false;

	if (slash == NULL) {
		dir = strdup(".");
		base = path;
	} else {
		dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
		base = slash + 1;
	}
	if (dir == NULL)
		goto oom;
	if (*base == '\0') {
		errno = EISDIR;
		goto fail;
	}
	if (make_dirs(dir) < 0)
		goto fail;
	len = strlen(dir) + strlen(base) + sizeof("/..XXXXXX");
	tmp = malloc(len);
	if (tmp == NULL)
		goto oom;
	snprintf(tmp, len, "%s/.%s.XXXXXX", dir, base);
	fd = mkstemp(tmp);
	if (fd < 0)
		goto fail;
	made = true;
	text = json_dumps(root, JSON_INDENT(2));
	if (text == NULL)
		goto oom;
	if (write_all(fd, text, strlen(text)) < 0 || write_all(fd, "\n", 1) < 0 ||
	    fsync(fd) < 0)
		goto fail;
	rc = close(fd);
	fd = -1;
	if (rc < 0 || rename(tmp, path) < 0)
		goto fail;
	/* Make the rename itself durable; the data is already safe. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	free(text);
	free(tmp);
	free(dir);
	return 0;
oom:
	errno = ENOMEM;
fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	if (made)
		unlink(tmp);
	free(text);
	free(tmp);
	free(dir);
	errno = saved;
	return -1;
}

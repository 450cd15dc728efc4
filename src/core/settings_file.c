#include "core/settings_file.h"

#include "base/errbuf.h"
#include "base/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *settings_file_default_path(void)
{
	return fsutil_xdg_path("XDG_CONFIG_HOME", ".config", "/retryd/settings.json");
}

/* Reads the whole file into a new NUL-terminated buffer: a regular file
 * of this user's or root's only (fsutil_judge_own_file: a FIFO, a device
 * or another user's file is refused, never read; O_NONBLOCK keeps the
 * open itself from waiting for a FIFO's writer), opened without following
 * a link (the caller resolved the path), at most SETTINGS_FILE_MAX_BYTES.
 * -1 with errno set (EPERM: refused, why[] says why; EISDIR; EFBIG: too
 * large). */
static int read_all(const char *path, char **out, size_t *outlen, char *why, size_t whylen)
{
	char *buf = NULL, *bigger;
	size_t len = 0, cap = 0;
	struct stat st;
	int fd, saved;
	ssize_t n;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (fsutil_judge_own_file(&st, true, why, whylen) != 0) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EPERM;
		goto fail;
	}
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
		if (len > SETTINGS_FILE_MAX_BYTES) {
			errno = EFBIG;
			goto fail;
		}
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

/* What read_all's errno means, as a sentence. */
static const char *read_error(int err)
{
	if (err == EFBIG)
		return "larger than " SETTINGS_FILE_MAX_TEXT ", the bound on a settings file";
	return strerror(err);
}

/* The target of the link at path (borrowed), relative to the link's
 * folder: a new string, or NULL (errno). */
static char *link_target(const char *path)
{
	char link[4096], *out;
	const char *slash = strrchr(path, '/');
	ssize_t n = readlink(path, link, sizeof(link) - 1);
	size_t dirlen;

	if (n <= 0)
		return NULL;
	link[n] = '\0';
	if (link[0] == '/' || slash == NULL)
		return strdup(link);
	dirlen = (size_t)(slash - path) + 1;
	out = malloc(dirlen + (size_t)n + 1);
	if (out != NULL) {
		memcpy(out, path, dirlen);
		memcpy(out + dirlen, link, (size_t)n + 1);
	}
	return out;
}

char *settings_file_target(const char *path)
{
	char *cur = strdup(path);
	struct stat st;

	/* As the kernel does, at most 40 links deep. */
	for (int hops = 0; cur != NULL && hops < 40; hops++) {
		char *next;

		if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
			break;
		next = link_target(cur);
		if (next == NULL)
			break;
		free(cur);
		cur = next;
	}
	return cur;
}

json_t *settings_file_read(const char *path, bool missing_ok, char *err, size_t errlen)
{
	json_t *root = NULL;
	json_error_t jerr;
	char *text = NULL, why[160];
	size_t len = 0;

	char *target = settings_file_target(path);
	int rc = target != NULL ? read_all(target, &text, &len, why, sizeof(why))
				: (errno = ENOMEM, -1);

	free(target);
	if (rc < 0) {
		if (errno == ENOENT && missing_ok)
			return json_object();
		if (errno == EPERM)
			errbuf_set(err, errlen, "%s; refusing to read it", why);
		else
			errbuf_set(err, errlen, "%s", read_error(errno));
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

static int write_file(const char *path, const json_t *root)
{
	const char *slash = strrchr(path, '/');
	char *dir = NULL, *tmp = NULL, *text = NULL;
	const char *base;
	size_t len;
	int fd = -1, rc, saved, dfd;
	struct stat st;
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
	/* The file keeps its mode (mkstemp makes 0600). */
	if (stat(path, &st) == 0)
		(void)fchmod(fd, st.st_mode & 07777);
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

/* "<dir>/.<name>.lock" beside target: every writer of one file, through
 * whichever link, takes the same lock. The lock file stays (removing it
 * would let two writers lock two files). */
static int lock_sibling(const char *target, char *err, size_t errlen)
{
	const char *slash = strrchr(target, '/');
	size_t dirlen = slash != NULL ? (size_t)(slash - target) + 1 : 0;
	size_t len = strlen(target) + sizeof("/..lock");
	char *lock = malloc(len);
	int fd, tries;

	if (lock == NULL)
		return errbuf_set(err, errlen, "out of memory");
	snprintf(lock, len, "%.*s.%s.lock", (int)dirlen, target, target + dirlen);
	if (slash != NULL) {
		char *dir = strndup(target, slash == target ? 1 : (size_t)(slash - target));

		if (dir == NULL || make_dirs(dir) < 0) {
			errbuf_set(err, errlen, "cannot make the folder of %s: %s", target,
				   strerror(dir == NULL ? ENOMEM : errno));
			free(dir);
			free(lock);
			return -1;
		}
		free(dir);
	}
	fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0) {
		errbuf_set(err, errlen, "cannot open the lock file %s: %s", lock, strerror(errno));
		free(lock);
		return -1;
	}
	/* Another daemon holds it for one read and one write: a short wait. */
	for (tries = 0; flock(fd, LOCK_EX | LOCK_NB) != 0; tries++) {
		struct timespec pause = { 0, 10 * 1000 * 1000 };

		if ((errno != EWOULDBLOCK && errno != EINTR) || tries >= SETTINGS_LOCK_TRIES) {
			errbuf_set(err, errlen, "the lock file %s %s", lock, errno == EWOULDBLOCK
				   ? "stayed locked by another process" : strerror(errno));
			close(fd);
			free(lock);
			return -1;
		}
		nanosleep(&pause, NULL);
	}
	free(lock);
	return fd;
}

int settings_file_update(const char *path, settings_file_change_fn change, void *ctx, char *err,
			 size_t errlen)
{
	char *target = settings_file_target(path), why[512];
	json_t *root = NULL;
	int lock = -1, rc = -1;

	if (target == NULL)
		return errbuf_set(err, errlen, "out of memory");
	lock = lock_sibling(target, why, sizeof(why));
	if (lock < 0) {
		errbuf_set(err, errlen, "%s", why);
		goto out;
	}
	/* What is on disk now, with the edits made since the start. */
	root = settings_file_read(target, true, why, sizeof(why));
	if (root == NULL) {
		errbuf_set(err, errlen, "%s; the file was left as it is", why);
		goto out;
	}
	if (change(root, ctx, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "%s; the file was left as it is", why);
		goto out;
	}
	if (write_file(target, root) < 0) {
		errbuf_set(err, errlen, "%s", strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (lock >= 0)
		close(lock);
	json_decref(root);
	free(target);
	return rc;
}

int settings_file_write(const char *path, const json_t *root)
{
	char *target = settings_file_target(path);
	int rc;

	if (target == NULL) {
		errno = ENOMEM;
		return -1;
	}
	rc = write_file(target, root);
	free(target);
	return rc;
}

#include "base/fsutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

char *fsutil_xdg_path(const char *xdg_var, const char *home_dir, const char *tail)
{
	const char *xdg = getenv(xdg_var);
	const char *home = getenv("HOME");
	char *out;
	size_t n;

	if (xdg != NULL && xdg[0] == '/') {
		n = strlen(xdg) + strlen(tail) + 1;
		if ((out = malloc(n)) != NULL)
			snprintf(out, n, "%s%s", xdg, tail);
		return out;
	}
	if (home == NULL || home[0] == '\0')
		return NULL;
	n = strlen(home) + strlen(home_dir) + strlen(tail) + 2;
	if ((out = malloc(n)) != NULL)
		snprintf(out, n, "%s/%s%s", home, home_dir, tail);
	return out;
}

int fsutil_format(char *out, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (cap == 0)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}

size_t fsutil_read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* What kind of file st is, for a sentence. */
static const char *file_kind(const struct stat *st)
{
	if (S_ISFIFO(st->st_mode))
		return "a FIFO";
	if (S_ISDIR(st->st_mode))
		return "a directory";
	if (S_ISSOCK(st->st_mode))
		return "a socket";
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		return "a device";
	return "a special file";
}

int fsutil_judge_own_file(const struct stat *st, bool root_ok, char *why, size_t cap)
{
	uid_t me = geteuid();

	if (!S_ISREG(st->st_mode)) {
		snprintf(why, cap, "is %s, not a regular file", file_kind(st));
		return -1;
	}
	if (st->st_uid != me && !(root_ok && st->st_uid == 0)) {
		snprintf(why, cap, "belongs to uid %lu, not to you (uid %lu)",
			 (unsigned long)st->st_uid, (unsigned long)me);
		return -1;
	}
	return 0;
}

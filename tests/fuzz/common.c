/* Helpers shared by every fuzz target, and the log module's replacement:
 * nothing is printed (fuzzing millions of bad inputs would flood stderr),
 * but a dropped event is counted so the targets can treat it as a bug. */
#define _XOPEN_SOURCE 700
#include "fuzz.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

enum log_level log_level = LOG_LEVEL_ERROR;
unsigned fuzz_dropped_events;

void log_init_from_env(void)
{
}

void log_write(const char *level, const char *fmt, ...)
{
	(void)level;
	if (strcmp(fmt, "out of memory building an event") == 0)
		fuzz_dropped_events++;
}

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: invariant broken: %s: ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

bool fuzz_utf8_valid(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i];
		size_t n;
		unsigned cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			n = 1;
			cp = c & 0x1F;
		} else if (c >= 0xE0 && c <= 0xEF) {
			n = 2;
			cp = c & 0x0F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (i + n >= len)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += n + 1;
	}
	return true;
}

static char tmpdir[64];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_tmpdir(void)
{
	if (tmpdir[0] != '\0')
		nftw(tmpdir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_tmpdir(void)
{
	if (tmpdir[0] == '\0') {
		strcpy(tmpdir, "/tmp/retryd-fuzz-XXXXXX");
		if (mkdtemp(tmpdir) == NULL) {
			perror("fuzz: mkdtemp");
			abort();
		}
		atexit(remove_tmpdir);
	}
	return tmpdir;
}

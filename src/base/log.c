#include "base/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/jsontext.h"
#include "base/secret.h"
#include "base/utf8.h"

enum log_level log_level = LOG_LEVEL_WARN;
static bool log_json;

void log_init_from_env(void)
{
	static const char *names[] = { "none", "error", "warn", "info", "debug" };
	static bool warned;
	const char *v = getenv("RETRYD_LOG");
	const char *f = getenv("RETRYD_LOG_FORMAT");

	for (size_t i = 0; v != NULL && i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(v, names[i]) == 0)
			log_level = (enum log_level)i;
	log_json = false;
	if (f == NULL || f[0] == '\0' || strcmp(f, "text") == 0)
		return;
	if (strcmp(f, "json") == 0) {
		log_json = true;
		return;
	}
	if (!warned) {
		warned = true;
		/* The value is the user's own word, but it may still be pasted
		 * from anywhere: through the masker like every other line. */
		LOG_WARN("RETRYD_LOG_FORMAT=%.40s is not text or json; logging as text", f);
	}
}

static int append(struct jsontext_buf *out, const char *s, size_t n)
{
	if (jsontext_reserve(out, n) != 0)
		return -1;
	memcpy(out->data + out->len, s, n);
	out->len += n;
	return 0;
}

/* Appends s[0..n) escaped, in quotes; bad UTF-8 repaired on a copy. */
static int append_string(struct jsontext_buf *out, const char *s, size_t n)
{
	char *copy = NULL;
	size_t w;

	if (!utf8_valid(s, n)) {
		copy = malloc(n + 1);
		if (copy == NULL)
			return -1;
		memcpy(copy, s, n);
		copy[n] = '\0';
		/* A NUL inside would end the repair early: no NUL is wanted anyway. */
		for (size_t i = 0; i < n; i++)
			if (copy[i] == '\0')
				copy[i] = '?';
		utf8_repair(copy);
		s = copy;
		n = strlen(copy);
	}
	if (jsontext_reserve(out, JSONTEXT_ESCAPED_MAX(n) + 2) != 0) {
		free(copy);
		return -1;
	}
	out->data[out->len] = '"';
	w = jsontext_escape(out->data + out->len + 1, s, n);
	free(copy);
	if (w == JSONTEXT_NOT_UTF8)
		return -1;
	out->data[out->len + 1 + w] = '"';
	out->len += w + 2;
	return 0;
}

int log_json_line(struct jsontext_buf *out, int64_t epoch_ms, const char *level,
		  const char *msg, size_t len)
{
	size_t start = out->len;
	time_t secs = (time_t)(epoch_ms / 1000);
	struct tm tm;
	char ts[64];
	int n;

	if (gmtime_r(&secs, &tm) == NULL)
		memset(&tm, 0, sizeof(tm));
	n = snprintf(ts, sizeof(ts), "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\",\"level\":",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     (int)(epoch_ms % 1000));
	if (n < 0 || (size_t)n >= sizeof(ts) || append(out, ts, (size_t)n) != 0 ||
	    append_string(out, level, strlen(level)) != 0 || append(out, ",\"msg\":", 7) != 0 ||
	    append_string(out, msg, len) != 0 || append(out, "}\n", 2) != 0) {
		out->len = start;
		return -1;
	}
	return 0;
}

static void write_json(const char *level, const char *msg, size_t len)
{
	struct jsontext_buf out = { NULL, 0, 0 };
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	if (log_json_line(&out, (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000, level, msg,
			  len) != 0) {
		fprintf(stderr, "{\"level\":\"%s\",\"msg\":\"(a %zu-byte line lost: out of memory)\"}\n",
			level, len);
	} else {
		fwrite(out.data, 1, out.len, stderr);
	}
	free(out.data);
}

void log_write(const char *level, const char *fmt, ...)
{
	char small[1024], *line = small;
	va_list ap;
	size_t len;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	len = (size_t)n;
	if (len >= sizeof(small)) {
		line = malloc(len + 1);
		if (line != NULL) {
			va_start(ap, fmt);
			vsnprintf(line, len + 1, fmt, ap);
			va_end(ap);
		} else {
			/* Cutting before masking could leave a piece of a key. */
			fprintf(stderr, "retryd: %s: (a %zu-byte line lost: out of memory)\n", level, len);
			return;
		}
	}
	/* Whatever a line quotes (a CLI's stderr, a server's text), no key
	 * reaches the log; masked whole before any cut. */
	secret_mask(line, &len);
	if (log_json)
		write_json(level, line, len);
	else
		fprintf(stderr, "retryd: %s: %.*s\n", level, (int)len, line);
	if (line != small)
		free(line);
}

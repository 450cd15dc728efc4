#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/secret.h"

enum log_level log_level = LOG_LEVEL_WARN;

void log_init_from_env(void)
{
	static const char *names[] = { "none", "error", "warn", "info", "debug" };
	const char *v = getenv("RETRYD_LOG");

	if (v == NULL)
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(v, names[i]) == 0)
			log_level = (enum log_level)i;
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
	fprintf(stderr, "retryd: %s: %.*s\n", level, (int)len, line);
	if (line != small)
		free(line);
}

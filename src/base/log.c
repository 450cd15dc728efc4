#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	va_list ap;

	fprintf(stderr, "retryd: %s: ", level);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#include "base/fsutil.h"

#include <stdio.h>
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

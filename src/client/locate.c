/* locate — finding the retryd executable. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "retryd/client.h"

#define DAEMON_NAME "retryd"

static char *if_executable(const char *path)
{
	return access(path, X_OK) == 0 ? strdup(path) : NULL;
}

/* name has no '/': each PATH entry in turn ("" means the current directory). */
static char *search_path(const char *name)
{
	const char *path = getenv("PATH");
	const char *p;

	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p++) {
		const char *end = strchr(p, ':');
		size_t dirlen = end ? (size_t)(end - p) : strlen(p);
		size_t size = dirlen + strlen(name) + 2;
		char *cand = malloc(size);

		if (cand == NULL)
			return NULL;
		if (dirlen == 0)
			snprintf(cand, size, "%s", name);
		else
			snprintf(cand, size, "%.*s/%s", (int)dirlen, p, name);
		if (access(cand, X_OK) == 0)
			return cand;
		free(cand);
		if (end == NULL)
			return NULL;
		p = end;
	}
}

static char *resolve(const char *given)
{
	return strchr(given, '/') != NULL ? if_executable(given) : search_path(given);
}

static char *next_to_exe(void)
{
	char exe[PATH_MAX];
	size_t size = sizeof(exe);
	char *slash;

	if (uv_exepath(exe, &size) != 0)
		return NULL;
	slash = strrchr(exe, '/');
	if (slash == NULL || (size_t)(slash - exe) + sizeof("/" DAEMON_NAME) > sizeof(exe))
		return NULL;
	memcpy(slash, "/" DAEMON_NAME, sizeof("/" DAEMON_NAME));
	return if_executable(exe);
}

char *retryd_client_find_daemon(const char *path)
{
	const char *env = getenv("RETRYD");
	char *found;

	if (path != NULL && path[0] != '\0')
		return resolve(path);
	if (env != NULL && env[0] != '\0')
		return resolve(env);
	found = next_to_exe();
	return found != NULL ? found : search_path(DAEMON_NAME);
}

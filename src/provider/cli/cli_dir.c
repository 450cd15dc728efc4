#include "provider/cli/cli_dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errbuf.h"

/* Writes text into dir/name, making the folders between (0700). */
static int write_file(const char *dir, const char *name, const char *text, char *err,
		      size_t errlen)
{
	char path[4096];
	FILE *f;
	size_t n = strlen(text);

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return errbuf_set(err, errlen, "%s/%s: the path is too long", dir, name);
	for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (mkdir(path, 0700) != 0 && errno != EEXIST)
			return errbuf_set(err, errlen, "cannot make %s: %s", path, strerror(errno));
		*p = '/';
	}
	f = fopen(path, "wx");
	if (f == NULL)
		return errbuf_set(err, errlen, "cannot write %s: %s", path, strerror(errno));
	if (fwrite(text, 1, n, f) != n || fclose(f) != 0)
		return errbuf_set(err, errlen, "cannot write %s: %s", path, strerror(errno));
	return 0;
}

static void remove_tree(const char *path, int depth)
{
	struct stat st;
	DIR *d;
	struct dirent *e;

	if (lstat(path, &st) != 0)
		return;
	if (!S_ISDIR(st.st_mode) || depth > 32) {
		unlink(path);
		return;
	}
	d = opendir(path);
	while (d != NULL && (e = readdir(d)) != NULL) {
		char child[4096];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(child, sizeof(child), "%s/%s", path, e->d_name) < sizeof(child))
			remove_tree(child, depth + 1);
	}
	if (d != NULL)
		closedir(d);
	rmdir(path);
}

void cli_dir_remove(const char *path)
{
	if (path != NULL)
		remove_tree(path, 0);
}

char *cli_dir_make(const char *name, const json_t *files, char *err, size_t errlen)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	char tmpl[4096];
	const char *file;
	json_t *v;
	char *dir;

	if (base == NULL || base[0] != '/')
		base = "/tmp";
	snprintf(tmpl, sizeof(tmpl), "%s/retryd-%s-XXXXXX", base, name);
	if (mkdtemp(tmpl) == NULL) {
		errbuf_set(err, errlen, "providers.%s: cannot make a directory in %s: %s", name,
			   base, strerror(errno));
		return NULL;
	}
	dir = strdup(tmpl);
	if (dir == NULL) {
		rmdir(tmpl);
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	json_object_foreach((json_t *)files, file, v)
		if (write_file(dir, file, json_string_value(v), err, errlen) != 0) {
			remove_tree(dir, 0);
			free(dir);
			return NULL;
		}
	return dir;
}

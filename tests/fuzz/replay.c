/* replay — runs a fuzz target's entry point over files, without libFuzzer.
 *
 *   replay-TARGET PATH...
 *
 * Each PATH is a file or a directory (its regular files, in name order; a
 * missing directory counts as empty). Every input is fed once to
 * LLVMFuzzerTestOneInput(); a crash or a broken invariant aborts with the
 * file's name on stderr. `make check` runs this over
 * tests/fuzz/regressions/TARGET/ (inputs that once crashed) and
 * tests/fuzz/corpus/TARGET/ (the seeds). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* The sanitizers' hook, present only in sanitized builds. */
extern void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

static const char *current;

static void name_the_input(void)
{
	if (current != NULL)
		fprintf(stderr, "replay: the failing input is %s\n", current);
}

static void on_fatal(int sig)
{
	name_the_input();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (f == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	do {
		if (len + 65536 > cap) {
			uint8_t *p;

			cap = cap ? cap * 2 : 65536;
			p = realloc(buf, cap);
			if (p == NULL) {
				fclose(f);
				free(buf);
				fprintf(stderr, "replay: %s: out of memory\n", path);
				return -1;
			}
			buf = p;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	current = path;
	/* An exact-size copy, so ASan sees any read past the end. */
	{
		uint8_t *exact = malloc(len ? len : 1);

		if (exact == NULL) {
			free(buf);
			return -1;
		}
		memcpy(exact, buf, len);
		free(buf);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
		current = NULL;
	}
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *path, size_t *count)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (d == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **p = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*names));

			if (p == NULL) {
				rc = -1;
				break;
			}
			names = p;
		}
		names[n] = malloc(strlen(path) + strlen(e->d_name) + 2);
		if (names[n] == NULL) {
			rc = -1;
			break;
		}
		sprintf(names[n], "%s/%s", path, e->d_name);
		n++;
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
			rc = run_file(names[i]);
			(*count)++;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	size_t count = 0;

	signal(SIGABRT, on_fatal);
	signal(SIGSEGV, on_fatal);
	signal(SIGBUS, on_fatal);
	signal(SIGFPE, on_fatal);
	if (__sanitizer_set_death_callback != NULL)
		__sanitizer_set_death_callback(name_the_input);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		int rc;

		if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode)) {
			rc = run_file(argv[i]);
			count++;
		} else {
			rc = run_dir(argv[i], &count);
		}
		if (rc != 0) {
			fprintf(stderr, "replay: cannot read %s\n", argv[i]);
			return 2;
		}
	}
	printf("%s: %zu inputs, no crash\n", argc > 0 ? argv[0] : "replay", count);
	return 0;
}

/* options — the command line, argv to struct options: `retryd ...` and
 * `retryd config ...`, their --help texts and their usage errors. It reads
 * argv alone (no file, no setting, no loop), so every sentence a
 * wrong command line gets is decided here. */
#ifndef RETRYD_OPTIONS_H
#define RETRYD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

/* Every string points into argv (borrowed). */
struct options {
	const char *provider;
	const char *model;
	const char *settings_path;
	const char *session_file;
	const char *session_dir;   /* --session-dir */
	const char *resume_file;   /* --resume */
	bool continue_newest;      /* --continue */
	bool no_session;
	const char *sim_plan;
	const char *classify_text; /* --classify: judge this text and exit */
	const char *check_file;    /* config --check: check this file and exit */
	const char **sets;         /* caller-owned, room for argc entries */
	size_t nsets;
};

/* `retryd ...` (argv[0] the program). Returns -1 to go on, else an exit
 * status: 0 after --help or --version (printed on stdout), 2 after a usage
 * error (said on stderr). */
int options_parse(int argc, char **argv, struct options *o);
/* `retryd config ...` (argv[0] is "config"): --settings, --set, --check,
 * --help; the same return as options_parse. */
int options_parse_config(int argc, char **argv, struct options *o);

#endif

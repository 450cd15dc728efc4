/* ownRetriesOff.configArgs of a CLI profile: arguments that name what the
 * CLI's own configuration chose, read from its config file and from the
 * profile's args at each run (Codex takes retry counts per provider id
 * only). A list of rules, or one rule:
 *
 *   {"files": [PATH...], "match": REGEX with (?<value>...), "skip"?: REGEX,
 *    "unless"?: REGEX, "args": [ARG...], "otherwise"?: [ARG...]}
 *
 * Each rule reads two texts: the profile's args (one per line; they come
 * last on the CLI's command line, so they win) and the first of files that
 * exists ({home}, {env:NAME} in a PATH). A rule whose "unless" matches
 * either text adds nothing. Else the first text where "match" matches
 * gives {value}: args go along with {value} replaced, unless "skip" matches
 * the value; when "match" matches neither text, "otherwise" goes along
 * (nothing when there is none).
 *
 * Reads files; no other I/O. */
#ifndef RETRYD_CLI_CONFIG_H
#define RETRYD_CLI_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "provider/cli/cli_pattern.h"

struct cli_config_rule {
	const json_t *files, *args, *otherwise; /* borrowed from the profile's config */
	struct cli_pattern match, skip, unless; /* re NULL when none */
};

struct cli_config {
	struct cli_config_rule *rules; /* owned */
	size_t n;
};

/* Reads configArgs c (borrowed, must outlive self; NULL: no rules). where
 * names it in errors. Returns 0, or -1 with err. */
int cli_config_init(struct cli_config *self, const char *where, const json_t *c, char *err,
		    size_t errlen);
void cli_config_release(struct cli_config *self);

/* Whether v is a list of strings (with one at least when nonempty): the
 * shape of every argv-like key of a CLI profile. */
bool cli_config_strings(const json_t *v, bool nonempty);

/* What the rules add to a run whose profile args are user_args (a list of
 * strings, borrowed, may be NULL): a new NULL-terminated array of new
 * strings (free each and the array), or NULL when they add nothing. */
char **cli_config_args(const struct cli_config *self, const json_t *user_args);

#endif

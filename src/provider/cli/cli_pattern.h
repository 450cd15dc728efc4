/* A regular expression of a CLI profile, compiled once with its match data
 * (PCRE2, UTF). Pure. */
#ifndef RETRYD_CLI_PATTERN_H
#define RETRYD_CLI_PATTERN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct cli_pattern {
	void *re;         /* owned: pcre2_code; NULL when none */
	void *md;         /* owned: pcre2_match_data, made once */
	const char *why;  /* borrowed from the profile's config, or NULL */
};

/* Compiles re (a JSON string) into p. Returns 0, or -1 with err naming
 * where ("providers.x.setupErrors[1].match: missing ) at offset 4"). */
int cli_pattern_compile(struct cli_pattern *p, const json_t *re, const char *where, char *err,
			size_t errlen);
/* Whether p matches text (len bytes); p->md then holds the match. */
bool cli_pattern_matches(const struct cli_pattern *p, const char *text, size_t len);
void cli_pattern_release(struct cli_pattern *p);

#endif

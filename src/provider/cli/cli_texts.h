/* cli_texts — what an agent CLI says outside its JSON lines, and how to
 * quiet its own retries: the parts of a profile that are not line rules.
 *
 *   "setupErrors":   [{"match": REGEX, "why": SENTENCE}, ...]
 *       A run that ends without a result and whose stderr (or stdout that
 *       is not JSON) matches is a setup error of the CLI itself (not a git
 *       repository, an untrusted folder, a wrong auth method, an unknown
 *       flag): the prompt ends at once with SENTENCE, which names the cause
 *       and the fix. Never retried.
 *   "resumeFailed":  REGEX or [REGEX...]
 *       The words of a resume that cannot work (the session is gone or was
 *       never saved): the next attempt starts fresh and sends the prompt.
 *   "lostTurnOnError": true
 *       After an API error the CLI's saved session no longer holds the
 *       failed user turn: a retry resends the prompt instead of a
 *       continuation.
 *   "resumeContinuesCutText": true
 *       A resumed session holds the text a cut run streamed, and the CLI
 *       goes on from it, streaming what it says again at the start: a cut
 *       answer is then continued (core/continuation: the repeat dropped,
 *       the final message whole). Without it (none of the four built-ins:
 *       their resumed sessions do not send a cut message's text, and Codex
 *       and Claude Code show only finished messages) the CLI's new answer
 *       is shown as it comes, a replay that says why.
 *   "ownRetriesOff": {"env": {NAME: VALUE or null}, "args": [ARG...],
 *                     "files": {NAME: TEXT}}
 *       What turns the CLI's own retries down, applied to every run unless
 *       "keepOwnRetries" is true: env over the daemon's environment, args
 *       after the profile's args, files written into a directory of this
 *       daemon's own ({retrydDir} in env values, args and argv templates).
 *       "configArgs": rules that name what the CLI's own configuration
 *       chose (cli_config.h).
 *   "retryNotice" rules with "stream": "stderr" and "match": REGEX
 *       A stderr line matching REGEX is the CLI's retry notice; the named
 *       groups attempt, maxAttempts, delayMs, status and message feed the
 *       provider_retry event (message: the whole line when there is none).
 *
 * Pure: compiles patterns, matches text; no I/O. */
#ifndef RETRYD_CLI_TEXTS_H
#define RETRYD_CLI_TEXTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "provider/cli/cli_config.h"
#include "provider/cli/cli_pattern.h"

struct cli_texts {
	struct cli_pattern *setup;
	size_t nsetup;
	struct cli_pattern *resume_failed;
	size_t nresume;
	struct cli_pattern *notices;   /* stderr retry notices */
	size_t nnotices;
	bool lost_turn_on_error;
	bool resume_continues_cut_text;
	bool keep_own_retries;
	/* Borrowed from the profile's config; all NULL with keepOwnRetries. */
	const json_t *quiet_env;    /* {NAME: string, or null: unset} */
	const json_t *quiet_args;   /* [string] */
	const json_t *quiet_files;  /* {NAME: string} */
	struct cli_config config;   /* ownRetriesOff.configArgs; no rules when kept */
};

/* Reads providers.NAME (cfg: borrowed, must outlive self). Returns 0, or
 * -1 with err naming the key ("providers.x.setupErrors[1].why must be a
 * sentence"). */
int cli_texts_init(struct cli_texts *self, const char *name, const json_t *cfg, char *err,
		   size_t errlen);
void cli_texts_release(struct cli_texts *self);

/* The named groups of a successful match of re (a pcre2_code) over
 * subject, into captures: digits as integers, the rest as strings. */
void cli_texts_captures(const void *re, void *md, const char *subject, json_t *captures);

/* Whether a retryNotice rule (borrowed) is one of ours (stream stderr). */
bool cli_texts_is_stderr_rule(const json_t *rule);

/* The sentence of the first setup error that text (len bytes) matches, or
 * NULL (borrowed from the config). */
const char *cli_texts_setup_error(const struct cli_texts *self, const char *text, size_t len);
/* Whether text (len bytes) says a resume is impossible. */
bool cli_texts_resume_failed(const struct cli_texts *self, const char *text, size_t len);
/* A stderr line (len bytes) as a provider_retry event (new reference), or
 * NULL when no stderr notice matches. */
json_t *cli_texts_notice(const struct cli_texts *self, const char *line, size_t len);

#endif

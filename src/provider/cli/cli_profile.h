/* cli_profile — how one agent CLI is run and how its JSON lines read.
 *
 * A profile is data: providers.NAME with type "exec" in the settings. It says
 * which argv starts a fresh run and which one resumes a session, how the
 * prompt is passed, and, as rules over the CLI's JSON lines, where the
 * session id, the assistant text, tool calls, the CLI's own retry notices and
 * the terminal line are. The four built-ins (claude, codex, gemini, pi) are
 * such profiles (the table in cli_builtin.c; cli_profile_builtins). Pure:
 * no I/O; cli_parser applies the rules to lines.
 *
 *   {"type": "exec",
 *    "argv":       ["mycli", "run", "{prompt}", "{args}"],
 *    "resumeArgv": ["mycli", "run", "--resume", "{sessionId}", "{prompt}", "{args}"],
 *    "promptVia":  "argv" | "stdin",
 *    "sessionId":  RULE + {"field"},
 *    "text":       RULE + {"field", "delta"?},
 *    "thinking":   RULE + {"field"?, "delta"?, "signature"?}  (one of field, signature),
 *    "toolStart":  RULE + {"id", "name", "args"?},
 *    "toolEnd":    RULE + {"id", "name"?, "result"?, "isError"?},
 *    "retryNotice": RULE + {"message"?, "status"?, "attempt"?, "maxAttempts"?, "delayMs"?},
 *    "terminal":   RULE + {"failed"?, "message"?, "status"?, "inputTokens"?, "outputTokens"?,
 *                  "cacheReadTokens"?, "cacheWriteTokens"?},
 *    "command"?, "args"?, "env"?, "secretEnv"?, "models"?, "modelArgs"?, "timeoutMs"?,
 *    "startupMs"?, "killGraceMs"?, "maxLineBytes"?,
 *    "setupErrors"?, "resumeFailed"?, "lostTurnOnError"?, "resumeContinuesCutText"?,
 *    "ownRetriesOff"?, "keepOwnRetries"?,   (these six: see cli_texts.h)
 *    "serverEnv"?}
 *
 * Each rule key takes one RULE object or a list of them (the first whose
 * selector matches a line is used). A RULE selects lines:
 *   "type":  a string or list: the line's "type" must be one of them;
 *   "when":  {PATH: VALUE or [VALUE...]}: every PATH must equal (one of) its
 *            values; null matches an absent field too;
 *   "match": {PATH: REGEX}: every PATH must be a string matching the PCRE2
 *            pattern; named groups attempt/maxAttempts/delayMs feed the
 *            retry notice;
 *   "each":  PATH of an array: the rule applies to every element of it that
 *            satisfies "where" (same form as "when"), and the rule's own
 *            paths are read from the element.
 * "thinking" reads like "text" (the model's reasoning); an item with a
 * "signature" but no text signs the thinking block that is open.
 * A PATH is dotted ("message.content", "item.0.text"); where a rule reads a
 * value, a list of PATHs means the first one present. "failed" and
 * "isError" are true, false, or a condition in the form of "when";
 * "isError" may also be a PATH to a boolean.
 *
 * argv templates: "{prompt}", "{sessionId}", "{model}" and "{retrydDir}"
 * (the daemon's own directory for this CLI: cli_texts.h) are replaced
 * inside elements (once, left to right: a value is never expanded again;
 * "{{" is a literal "{"); an element that is exactly "{args}" becomes
 * modelArgs (when the model is not "default") followed by args, then the
 * args of ownRetriesOff (unless keepOwnRetries), with {retrydDir} expanded. */
#ifndef RETRYD_CLI_PROFILE_H
#define RETRYD_CLI_PROFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider/cli/cli_texts.h"

enum cli_profile_rule_kind {
	CLI_RULE_SESSION,
	CLI_RULE_RETRY,
	CLI_RULE_TEXT,
	CLI_RULE_THINKING,
	CLI_RULE_TOOL_START,
	CLI_RULE_TOOL_END,
	CLI_RULE_TERMINAL,
	CLI_RULE_KINDS,
};

struct cli_profile_match;

/* One compiled rule. Every json_t is borrowed from the profile's config. */
struct cli_profile_rule {
	const json_t *spec;  /* the rule object: where its field paths are */
	const json_t *types; /* NULL (any line), a string or an array of strings */
	const json_t *when;  /* NULL or an object */
	const char *each;    /* NULL or a path */
	const json_t *where; /* NULL or an object */
	struct cli_profile_match *match;
	size_t nmatch;
};

struct cli_profile {
	char *name;
	json_t *cfg;                /* owned: a copy of providers.NAME */
	const json_t *argv;         /* borrowed from cfg: templates */
	const json_t *resume_argv;  /* borrowed from cfg; NULL: runs are never resumed */
	const json_t *model_args;   /* borrowed from cfg; may be NULL */
	const json_t *args;         /* borrowed from cfg: extra arguments (array) */
	const json_t *env;          /* borrowed from cfg: {NAME: value or null}; may be NULL */
	const json_t *secret_env;   /* borrowed from cfg: [NAME...] whose values are secrets
				     * whatever their names say; may be NULL */
	const json_t *server_env;   /* borrowed from cfg: [NAME...] that say where the CLI
				     * sends its requests (ANTHROPIC_BASE_URL): the first
				     * one set to a URL in its environment names the
				     * server in the fleet's provider id; may be NULL */
	json_t *models;             /* owned: [{"id"}...] */
	const char *command;        /* borrowed from cfg: replaces argv[0]; may be NULL */
	bool prompt_stdin;
	int64_t timeout_ms;         /* wall clock per attempt; 0: none */
	int64_t startup_ms;         /* the stall clock's least window before the first
				     * stdout output: a CLI's start-up (node, auth, a
				     * session loaded) is not a stall */
	int64_t kill_grace_ms;      /* SIGTERM to SIGKILL */
	int64_t max_line_bytes;
	struct cli_profile_rule *rules[CLI_RULE_KINDS];
	size_t nrules[CLI_RULE_KINDS];
	struct cli_texts texts;     /* setup errors, resume failures, stderr notices, own retries */
};

/* The built-in profiles claude, codex, gemini and pi, as a new reference, for
 * the settings defaults (so `--set providers.claude.command=...` works). */
json_t *cli_profile_builtins(void);

/* Whether providers.NAME (borrowed) asks for this module ("type": "exec"). */
bool cli_profile_is_exec(const json_t *cfg);

/* Checks and compiles providers.NAME (cfg: borrowed, copied). Returns NULL
 * with err naming the key and why, e.g. "providers.x.terminal[0].faild is
 * not a terminal key (failed, message, status, inputTokens, outputTokens,
 * cacheReadTokens, cacheWriteTokens, type, when, match, each, where)". */
struct cli_profile *cli_profile_new(const char *name, const json_t *cfg, char *err, size_t errlen);
void cli_profile_free(struct cli_profile *self);

struct cli_profile_vars {
	const char *prompt;     /* borrowed */
	const char *session_id; /* borrowed; NULL: a fresh run, else resumeArgv */
	const char *model;      /* borrowed; NULL or "default": no modelArgs */
	const char *retryd_dir; /* borrowed: the daemon's own directory for this CLI, or NULL */
	char **extra_args;      /* borrowed, NULL-terminated: after the others at {args}, or NULL */
};

/* The argv of one run, a new NULL-terminated array of new strings (free with
 * cli_profile_argv_free), or NULL with err. */
char **cli_profile_argv(const struct cli_profile *self, const struct cli_profile_vars *vars,
			char *err, size_t errlen);
void cli_profile_argv_free(char **argv);
/* One template element with its placeholders replaced: a new string, or
 * NULL with err (an unknown placeholder, or memory). */
char *cli_profile_expand(const char *tmpl, const struct cli_profile_vars *vars, char *err,
			 size_t errlen);

/* The value at a dotted path under root (borrowed), or NULL. A list of paths
 * gives the first one that is present and not null. */
json_t *cli_profile_get(const json_t *root, const json_t *paths);

/* Whether `rule` selects `line` (both borrowed) by type, when and match.
 * captures (may be NULL) receives the named groups of the match patterns
 * as integers where they are digits, else strings. */
bool cli_profile_selects(const struct cli_profile_rule *rule, const json_t *line, json_t *captures);
/* Whether `value` satisfies a condition object (PATH: VALUE or [VALUE...]). */
bool cli_profile_holds(const json_t *cond, const json_t *value);

#endif

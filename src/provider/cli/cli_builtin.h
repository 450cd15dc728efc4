/* cli_builtin — the built-in agent-CLI profiles (claude, codex, gemini, pi)
 * as a table of settings texts; cli_profile_builtins() makes the settings
 * defaults of them. Pure data. */
#ifndef RETRYD_CLI_BUILTIN_H
#define RETRYD_CLI_BUILTIN_H

struct cli_builtin {
	const char *name; /* the provider's name */
	const char *json; /* providers.NAME as JSON text */
	const char *own_retries_off; /* its "ownRetriesOff" as JSON text, or NULL */
};

/* Ends with { NULL, NULL, NULL }. */
extern const struct cli_builtin cli_builtin_table[];

#endif

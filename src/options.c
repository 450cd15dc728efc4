/* options — argv to struct options (options.h says what the results mean). */
#include "options.h"

#include <stdio.h>
#include <string.h>

#include "retryd/protocol.h"

static const char usage_text[] =
	"usage: retryd [--mode rpc] [--provider NAME] [--model ID] [--settings FILE]\n"
	"              [--set KEY=VALUE]... [--session FILE | --no-session]\n"
	"              [--session-dir DIR] [--continue | --resume FILE]\n"
	"              [--sim-plan JSON] [--help] [--version]\n"
	"       retryd [--settings FILE] [--set KEY=VALUE]... --classify TEXT\n"
	"       retryd config [--settings FILE] [--set KEY=VALUE]...\n"
	"       retryd config --check FILE\n"
	"\n"
	"Speaks the pi RPC protocol (one JSON object per line) on stdin/stdout and\n"
	"retries failed attempts with backoff, reporting auto_retry_start/end events.\n"
	"\n"
	"  --mode rpc         accepted for pi clients; rpc is the only mode\n"
	"  --provider NAME    the backend: sim (built in, scripted), an HTTP API (openai,\n"
	"                     anthropic, google, openrouter, ollama, azure) or an agent CLI\n"
	"                     (claude, codex, gemini, pi), or any providers.NAME in the\n"
	"                     settings\n"
	"  --model ID         the model to use\n"
	"  --settings FILE    settings JSON (default $XDG_CONFIG_HOME/retryd/settings.json,\n"
	"                     which may be absent; a FILE named here must exist)\n"
	"  --set KEY=VALUE    override one setting for this process, e.g. retry.baseDelayMs=50;\n"
	"                     an unknown KEY, here or in the file, is an error\n"
	"  --session FILE     append the session to FILE (JSONL)\n"
	"  --no-session       keep no session file\n"
	"  --session-dir DIR  where session files go (default $XDG_STATE_HOME/retryd/sessions,\n"
	"                     else ~/.local/state/retryd/sessions)\n"
	"  --continue         resume the newest session file in the session directory\n"
	"  --resume FILE      resume the session in FILE: its messages are the context,\n"
	"                     and the session goes on in that file\n"
	"  --sim-plan JSON    the sim provider's steps, e.g. '[{\"error\":\"503\"},{\"text\":\"hi\"}]'\n"
	"  --classify TEXT    print how the retry classifier, with these settings, judges an\n"
	"                     error text ({\"errorClass\",\"overload\",\"hintMs\",\"rule\"}) and exit\n"
	"  config             print the effective settings, one per line, as\n"
	"                     ORIGIN<TAB>KEY=JSON; ORIGIN is default, built-in, env VAR\n"
	"                     (a built-in's baseUrl from OPENAI_BASE_URL and the like),\n"
	"                     file:PATH (by hand or persisted by set_auto_retry or\n"
	"                     set_retry_policy) or --set; the retry keys first\n"
	"  config --check FILE  check a settings file: \"FILE: ok\" (exit 0), else every\n"
	"                     unknown key and wrong value, one per line (exit 1)\n"
	"\n"
	"Logs go to stderr; RETRYD_LOG=error|warn|info|debug sets how much.\n"
	"The built-in HTTP providers read their SDKs' base-URL variables:\n"
	"OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL, OLLAMA_HOST,\n"
	"AZURE_OPENAI_ENDPOINT (a providers.NAME.baseUrl setting wins).\n";

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "retryd: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'retryd --help'.\n");
	return 2;
}

int options_parse(int argc, char **argv, struct options *o)
{
	static const char *const with_value[] = {
		"--mode", "--provider", "--model", "--settings", "--set", "--session", "--sim-plan",
		"--classify", "--session-dir", "--resume", NULL,
	};

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = NULL, *eq;
		char name[32];
		size_t k;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (strcmp(arg, "--version") == 0) {
			printf("retryd %s\n", RETRYD_VERSION);
			return 0;
		}
		if (strcmp(arg, "--no-session") == 0) {
			o->no_session = true;
			continue;
		}
		if (strcmp(arg, "--continue") == 0) {
			o->continue_newest = true;
			continue;
		}
		eq = strchr(arg, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		for (k = 0; with_value[k] != NULL && strcmp(with_value[k], name) != 0; k++)
			;
		if (with_value[k] == NULL)
			return usage_error("unknown option '%s'", arg);
		if (eq != NULL)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			return usage_error("option '%s' needs a value", arg);

		if (strcmp(name, "--mode") == 0) {
			if (strcmp(val, "rpc") != 0)
				return usage_error("unsupported mode '%s' (only rpc)", val);
		} else if (strcmp(name, "--provider") == 0) {
			o->provider = val;
		} else if (strcmp(name, "--model") == 0) {
			o->model = val;
		} else if (strcmp(name, "--settings") == 0) {
			o->settings_path = val;
		} else if (strcmp(name, "--session") == 0) {
			o->session_file = val;
		} else if (strcmp(name, "--session-dir") == 0) {
			o->session_dir = val;
		} else if (strcmp(name, "--resume") == 0) {
			o->resume_file = val;
		} else if (strcmp(name, "--sim-plan") == 0) {
			o->sim_plan = val;
		} else if (strcmp(name, "--classify") == 0) {
			o->classify_text = val;
		} else {
			o->sets[o->nsets++] = val;
		}
	}
	if (o->session_file != NULL && o->no_session)
		return usage_error("%s", "--session and --no-session exclude each other");
	if (o->continue_newest && o->resume_file != NULL)
		return usage_error("%s", "--continue and --resume exclude each other");
	if ((o->continue_newest || o->resume_file != NULL) &&
	    (o->session_file != NULL || o->no_session))
		return usage_error("%s", o->continue_newest
				   ? "--continue goes on in the resumed file: it excludes --session "
				     "and --no-session"
				   : "--resume goes on in the resumed file: it excludes --session "
				     "and --no-session");
	if (o->session_dir != NULL && (o->session_file != NULL || o->no_session))
		return usage_error("%s", "--session-dir is for new session files: it excludes "
				   "--session and --no-session");
	return -1;
}

static const char config_usage[] =
	"usage: retryd config [--settings FILE] [--set KEY=VALUE]...\n"
	"       retryd config --check FILE\n"
	"\n"
	"Prints the effective settings, one leaf key per line in the order of the\n"
	"settings table, as ORIGIN<TAB>KEY=JSON, ORIGIN being default, built-in,\n"
	"file:PATH (written by hand or persisted by set_auto_retry/set_retry_policy;\n"
	"the file cannot tell which) or --set. Secrets show as ***.\n"
	"--check checks a settings file: \"FILE: ok\" on stdout and exit 0, else each\n"
	"unknown key and wrong value on stderr, one per line, and exit 1.\n";

int options_parse_config(int argc, char **argv, struct options *o)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *val;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			fputs(config_usage, stdout);
			return 0;
		}
		if (strcmp(arg, "--settings") != 0 && strcmp(arg, "--set") != 0 &&
		    strcmp(arg, "--check") != 0)
			return usage_error("config: unknown option '%s'", arg);
		if (i + 1 >= argc)
			return usage_error("config: option '%s' needs a value", arg);
		val = argv[++i];
		if (strcmp(arg, "--settings") == 0)
			o->settings_path = val;
		else if (strcmp(arg, "--check") == 0)
			o->check_file = val;
		else
			o->sets[o->nsets++] = val;
	}
	return -1;
}

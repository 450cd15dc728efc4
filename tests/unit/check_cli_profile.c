/* Agent-CLI profiles: the built-ins compile, argv templates expand exactly
 * (values copied byte for byte, never expanded again), and a mistake in a
 * profile is refused naming its key. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider/cli/cli_profile.h"

Suite *cli_profile_suite(void);

static struct cli_profile *builtin(const char *name)
{
	json_t *all = cli_profile_builtins();
	char err[512];
	struct cli_profile *p;

	ck_assert_ptr_nonnull(all);
	p = cli_profile_new(name, json_object_get(all, name), err, sizeof(err));
	ck_assert_msg(p != NULL, "%s: %s", name, err);
	json_decref(all);
	return p;
}

/* The argv joined with '|' (the program first). */
static void joined(char **argv, char *out, size_t outlen)
{
	out[0] = '\0';
	for (char **a = argv; *a != NULL; a++) {
		size_t n = strlen(out);

		snprintf(out + n, outlen - n, "%s%s", a == argv ? "" : "|", *a);
	}
}

static void check_argv(const struct cli_profile *p, const char *prompt, const char *session,
		       const char *model, const char *want)
{
	struct cli_profile_vars vars = { prompt, session, model, NULL, NULL };
	char err[256], got[2048];
	char **argv = cli_profile_argv(p, &vars, err, sizeof(err));

	ck_assert_msg(argv != NULL, "%s", err);
	joined(argv, got, sizeof(got));
	ck_assert_str_eq(got, want);
	cli_profile_argv_free(argv);
}

START_TEST(test_builtins_compile_and_run_their_documented_argv)
{
	struct cli_profile *p;

	p = builtin("claude");
	check_argv(p, "hi", NULL, "default", "claude|-p|hi|--output-format|stream-json|--verbose");
	check_argv(p, "go on", "S1", "default",
		   "claude|-p|--resume|S1|go on|--output-format|stream-json|--verbose");
	cli_profile_free(p);
	p = builtin("codex");
	/* The prompt on stdin ("-"): codex reads a leading "-" in argv as a flag. */
	check_argv(p, "hi", NULL, NULL, "codex|exec|--json|--skip-git-repo-check|-c|"
		   "features.unbounded_connection_retries=false|-");
	check_argv(p, "go on", "T1", NULL, "codex|exec|--json|resume|--skip-git-repo-check|-c|"
		   "features.unbounded_connection_retries=false|--|T1|-");
	cli_profile_free(p);
	p = builtin("gemini");
	/* --prompt=: a prompt starting with "-" stays the prompt. */
	check_argv(p, "hi", NULL, NULL, "gemini|--prompt=hi|--output-format|stream-json|--skip-trust");
	check_argv(p, "go on", "G1", NULL,
		   "gemini|--resume|G1|--prompt=go on|--output-format|stream-json|--skip-trust");
	cli_profile_free(p);
	p = builtin("pi");
	/* The prompt on stdin (pi reads a leading "-" or "@" in argv as a flag
	 * or a file); its own retries off by an extension in {retrydDir}
	 * (empty here: no directory in this test). */
	check_argv(p, "hi", NULL, NULL, "pi|-p|--mode|json|-e|/pi-no-retry.mjs");
	check_argv(p, "go on", "P1", NULL, "pi|-p|--mode|json|--session|P1|-e|/pi-no-retry.mjs");
	ck_assert_int_eq(p->kill_grace_ms, 2000);
	ck_assert_int_eq(p->timeout_ms, 0);
	ck_assert_int_eq(p->startup_ms, 30000);
	ck_assert(p->prompt_stdin);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(p->models, 0), "id")),
			 "default");
	cli_profile_free(p);
}
END_TEST

START_TEST(test_prompt_is_copied_byte_for_byte_and_never_expanded_again)
{
	struct cli_profile *p = builtin("claude");

	check_argv(p, "\"$(rm -rf /)\"; ' \\` & | {sessionId} {{ $HOME", NULL, NULL,
		   "claude|-p|\"$(rm -rf /)\"; ' \\` & | {sessionId} {{ $HOME|--output-format|"
		   "stream-json|--verbose");
	check_argv(p, "", NULL, NULL, "claude|-p||--output-format|stream-json|--verbose");
	cli_profile_free(p);
}
END_TEST

START_TEST(test_command_args_model_args_and_literal_braces)
{
	json_t *cfg = json_loads("{\"type\":\"exec\",\"command\":\"/opt/x\","
				 "\"argv\":[\"x\",\"--p={prompt}\",\"{{literal}\",\"{args}\"],"
				 "\"resumeArgv\":[\"x\",\"--r={sessionId}:{model}\",\"{prompt}\"],"
				 "\"modelArgs\":[\"-m\",\"{model}\"],\"args\":[\"-v\",\"{prompt}\"],"
				 "\"terminal\":{\"type\":\"done\"}}", 0, NULL);
	char err[256];
	struct cli_profile *p = cli_profile_new("x", cfg, err, sizeof(err));

	ck_assert_msg(p != NULL, "%s", err);
	/* args are literal; modelArgs only for a chosen model; command is argv[0]. */
	check_argv(p, "P", NULL, "big", "/opt/x|--p=P|{literal}|-m|big|-v|{prompt}");
	check_argv(p, "P", NULL, "default", "/opt/x|--p=P|{literal}|-v|{prompt}");
	check_argv(p, "P", NULL, NULL, "/opt/x|--p=P|{literal}|-v|{prompt}");
	check_argv(p, "P", "S", "m1", "/opt/x|--r=S:m1|P");
	cli_profile_free(p);
	json_decref(cfg);
}
END_TEST

START_TEST(test_stdin_profile_needs_no_prompt_placeholder)
{
	json_t *cfg = json_loads("{\"type\":\"exec\",\"argv\":[\"x\",\"-\"],\"promptVia\":\"stdin\","
				 "\"terminal\":{\"type\":\"done\"}}", 0, NULL);
	char err[256];
	struct cli_profile *p = cli_profile_new("x", cfg, err, sizeof(err));

	ck_assert_msg(p != NULL, "%s", err);
	ck_assert(p->prompt_stdin);
	ck_assert_ptr_null(p->resume_argv);
	check_argv(p, "ignored", NULL, NULL, "x|-");
	cli_profile_free(p);
	json_decref(cfg);
}
END_TEST

/* Each case: a change to a valid profile, and what the error must say. */
START_TEST(test_mistakes_are_refused_naming_the_key)
{
	static const struct {
		const char *change;
		const char *want;
	} cases[] = {
		{ "{\"argv\":[]}", "providers.t.argv must be a non-empty list of strings" },
		{ "{\"argv\":[\"\",\"{prompt}\"]}", "providers.t.argv must be a non-empty list" },
		{ "{\"argv\":[\"x\"]}", "providers.t.argv has no \"{prompt}\"" },
		{ "{\"argv\":[\"x\",\"{promt}\"]}", "providers.t.argv[1]: unknown placeholder {promt}" },
		/* Found in review: "{{prompt}" is the literal text, not the prompt. */
		{ "{\"argv\":[\"x\",\"{{prompt}\"]}", "providers.t.argv has no \"{prompt}\"" },
		/* Found in review: a second "{args}" overflowed the argv array. */
		{ "{\"argv\":[\"x\",\"{prompt}\",\"{args}\",\"{args}\"],\"args\":[\"a\",\"b\",\"c\",\"d\"]}",
		  "providers.t.argv has \"{args}\" more than once" },
		{ "{\"resumeArgv\":[\"x\",\"{prompt}\"]}", "providers.t.resumeArgv has no \"{sessionId}\"" },
		{ "{\"promptVia\":\"pipe\"}", "providers.t.promptVia must be \"argv\" or \"stdin\"" },
		{ "{\"bogus\":1}", "providers.t.bogus is not a key of an exec provider" },
		{ "{\"terminal\":null}", "providers.t.terminal must be an object" },
		{ "{\"terminal\":[]}", "providers.t.terminal must be a rule or a non-empty list" },
		{ "{\"terminal\":{\"faild\":true}}",
		  "providers.t.terminal.faild is not a terminal key (failed, message, status, errorType, "
		  "inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, type, when, match, "
		  "each, where)" },
		{ "{\"terminal\":[{\"type\":\"a\"},{\"failed\":\"yes\"}]}",
		  "providers.t.terminal[1].failed must be true, false or a condition" },
		{ "{\"text\":{\"type\":\"m\"}}", "providers.t.text needs \"field\"" },
		{ "{\"text\":{\"field\":\"\"}}", "providers.t.text.field must be a PATH" },
		{ "{\"text\":{\"field\":\"x\",\"delta\":1}}", "providers.t.text.delta must be true or false" },
		{ "{\"text\":{\"field\":\"x\",\"where\":{}}}", "providers.t.text.where needs \"each\"" },
		{ "{\"text\":{\"field\":\"x\",\"when\":[1]}}", "providers.t.text.when must be an object" },
		{ "{\"text\":{\"field\":\"x\",\"type\":[1]}}", "providers.t.text.type must be a string or a list" },
		{ "{\"thinking\":{\"type\":\"m\"}}",
		  "providers.t.thinking needs \"field\" or \"signature\"" },
		{ "{\"thinking\":{\"field\":\"x\",\"signture\":\"s\"}}",
		  "providers.t.thinking.signture is not a thinking key (field, delta, signature, type," },
		{ "{\"thinking\":{\"signature\":7}}", "providers.t.thinking.signature must be a PATH" },
		{ "{\"thinking\":{\"field\":\"x\",\"delta\":\"yes\"}}",
		  "providers.t.thinking.delta must be true or false" },
		{ "{\"retryNotice\":{\"match\":{\"m\":\"(oops\"}}}",
		  "providers.t.retryNotice.match.m: missing closing parenthesis at offset 5" },
		{ "{\"toolStart\":{\"id\":\"i\"}}", "providers.t.toolStart needs \"name\"" },
		{ "{\"toolEnd\":{\"id\":\"i\",\"isError\":3}}", "providers.t.toolEnd.isError must be" },
		{ "{\"env\":{\"A=B\":\"x\"}}", "providers.t.env.A=B must be a string or null" },
		{ "{\"env\":{\"A\":1}}", "providers.t.env.A must be a string or null" },
		{ "{\"timeoutMs\":-1}", "providers.t.timeoutMs must be an integer from 0 to" },
		{ "{\"killGraceMs\":\"2s\"}", "providers.t.killGraceMs must be an integer" },
		{ "{\"startupMs\":-5}", "providers.t.startupMs must be an integer from 0 to" },
		{ "{\"maxLineBytes\":10}", "providers.t.maxLineBytes must be an integer from 1024" },
		{ "{\"models\":[]}", "providers.t.models must be a non-empty list of model ids" },
		{ "{\"command\":\"\"}", "providers.t.command must be a non-empty string" },
		{ "{\"args\":\"-v\"}", "providers.t.args must be a list of strings" },
		{ "{\"modelArgs\":[\"{mdl}\"]}", "providers.t.modelArgs[0]: unknown placeholder {mdl}" },
		{ "{\"secretEnv\":\"TOKEN\"}", "providers.t.secretEnv must be a list of environment" },
		{ "{\"serverEnv\":\"ANTHROPIC_BASE_URL\"}",
		  "providers.t.serverEnv must be a list of environment variable names" },
		{ "{\"serverEnv\":[\"OK\",\"1BAD\"]}",
		  "providers.t.serverEnv[1] must be an environment variable name" },
	};
	const char *base = "{\"type\":\"exec\",\"argv\":[\"x\",\"{prompt}\"],"
			   "\"resumeArgv\":[\"x\",\"{sessionId}\",\"{prompt}\"],"
			   "\"terminal\":{\"type\":\"done\"}}";

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *cfg = json_loads(base, 0, NULL);
		json_t *change = json_loads(cases[i].change, 0, NULL);
		char err[512] = "";
		struct cli_profile *p;

		ck_assert_msg(change != NULL, "case %zu is not JSON", i);
		json_object_update(cfg, change);
		p = cli_profile_new("t", cfg, err, sizeof(err));
		ck_assert_msg(p == NULL, "case %zu (%s) was accepted", i, cases[i].change);
		ck_assert_msg(strstr(err, cases[i].want) != NULL, "case %zu: \"%s\" lacks \"%s\"", i, err,
			      cases[i].want);
		json_decref(change);
		json_decref(cfg);
	}
}
END_TEST

START_TEST(test_profile_without_terminal_is_refused)
{
	json_t *cfg = json_loads("{\"type\":\"exec\",\"argv\":[\"x\",\"{prompt}\"]}", 0, NULL);
	char err[256];

	ck_assert_ptr_null(cli_profile_new("t", cfg, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "providers.t.terminal is missing"));
	ck_assert(cli_profile_is_exec(cfg));
	json_decref(cfg);
	cfg = json_loads("{\"api\":\"openai-completions\"}", 0, NULL);
	ck_assert(!cli_profile_is_exec(cfg));
	json_decref(cfg);
}
END_TEST

START_TEST(test_paths_conditions_and_named_groups)
{
	json_t *line = json_loads("{\"type\":\"e\",\"a\":{\"b\":[{\"c\":\"x\"}],\"n\":1.0,\"z\":null},"
				  "\"msg\":\"Reconnecting... 2/5 (x)\"}", 0, NULL);
	json_t *paths = json_loads("[\"a.q\",\"a.z\",\"a.b.0.c\"]", 0, NULL);
	json_t *cond, *caps = json_object();
	json_t *cfg = json_loads("{\"type\":\"exec\",\"argv\":[\"x\",\"{prompt}\"],"
				 "\"terminal\":{\"type\":\"done\"},"
				 "\"retryNotice\":{\"type\":[\"d\",\"e\"],\"when\":{\"a.n\":1},"
				 "\"match\":{\"msg\":\"^Reconnecting\\\\.\\\\.\\\\. (?<attempt>\\\\d+)/"
				 "(?<maxAttempts>\\\\d+) \\\\((?<why>.*)\\\\)\"}}}", 0, NULL);
	char err[256];
	struct cli_profile *p = cli_profile_new("t", cfg, err, sizeof(err));

	ck_assert_msg(p != NULL, "%s", err);
	/* The first path present and not null. */
	ck_assert_str_eq(json_string_value(cli_profile_get(line, paths)), "x");
	/* null counts as absent. */
	cond = json_string("a.z");
	ck_assert_ptr_null(cli_profile_get(line, cond));
	json_decref(cond);
	cond = json_loads("{\"a.n\":1,\"a.z\":null,\"a.missing\":null,\"type\":[\"d\",\"e\"]}", 0, NULL);
	ck_assert(cli_profile_holds(cond, line));
	json_decref(cond);
	cond = json_loads("{\"a.n\":2}", 0, NULL);
	ck_assert(!cli_profile_holds(cond, line));
	json_decref(cond);
	ck_assert(cli_profile_selects(&p->rules[CLI_RULE_RETRY][0], line, caps));
	ck_assert_int_eq(json_integer_value(json_object_get(caps, "attempt")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(caps, "maxAttempts")), 5);
	ck_assert_str_eq(json_string_value(json_object_get(caps, "why")), "x");
	json_object_set_new(line, "msg", json_string("other"));
	ck_assert(!cli_profile_selects(&p->rules[CLI_RULE_RETRY][0], line, NULL));
	cli_profile_free(p);
	json_decref(cfg);
	json_decref(caps);
	json_decref(paths);
	json_decref(line);
}
END_TEST

Suite *cli_profile_suite(void)
{
	Suite *s = suite_create("cli_profile");
	TCase *tc = tcase_create("profile");

	tcase_add_test(tc, test_builtins_compile_and_run_their_documented_argv);
	tcase_add_test(tc, test_prompt_is_copied_byte_for_byte_and_never_expanded_again);
	tcase_add_test(tc, test_command_args_model_args_and_literal_braces);
	tcase_add_test(tc, test_stdin_profile_needs_no_prompt_placeholder);
	tcase_add_test(tc, test_mistakes_are_refused_naming_the_key);
	tcase_add_test(tc, test_profile_without_terminal_is_refused);
	tcase_add_test(tc, test_paths_conditions_and_named_groups);
	suite_add_tcase(s, tc);
	return s;
}

/* What an agent CLI says outside its JSON lines, and how its own retries
 * are quieted: setup errors with their sentence, a resume that cannot
 * work, retry notices on stderr, ownRetriesOff at {args} with {retrydDir},
 * and each mistake refused naming its key. Also the prompt a fresh run gets
 * when the CLI's own session is gone (cli_prompt). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "provider/cli/cli_profile.h"
#include "provider/cli/cli_prompt.h"
#include "provider/cli/cli_texts.h"

Suite *cli_texts_suite(void);

#define BASE "\"type\":\"exec\",\"argv\":[\"x\",\"{prompt}\",\"{args}\"]," \
	     "\"resumeArgv\":[\"x\",\"-r\",\"{sessionId}\",\"{prompt}\",\"{args}\"]," \
	     "\"terminal\":{\"type\":\"result\"}"

static struct cli_profile *profile(const char *extra, char *err, size_t errlen)
{
	char text[4096];
	json_t *cfg;
	struct cli_profile *p;

	snprintf(text, sizeof(text), "{" BASE "%s%s}", extra[0] ? "," : "", extra);
	cfg = json_loads(text, 0, NULL);
	ck_assert_msg(cfg != NULL, "bad test JSON: %s", text);
	p = cli_profile_new("x", cfg, err, errlen);
	json_decref(cfg);
	return p;
}

static struct cli_profile *ok(const char *extra)
{
	char err[512];
	struct cli_profile *p = profile(extra, err, sizeof(err));

	ck_assert_msg(p != NULL, "%s", err);
	return p;
}

START_TEST(test_a_setup_error_is_found_anywhere_in_what_the_cli_said_and_names_the_fix)
{
	struct cli_profile *p = ok("\"setupErrors\":[{\"match\":\"Not inside a trusted directory\","
				   "\"why\":\"x needs a git repository: run it in one, or pass "
				   "--skip-git-repo-check\"},{\"match\":\"(?i)auth method\",\"why\":\"B\"}]");
	const char *said = "warming up\nNot inside a trusted directory and --skip-git-repo-check "
			   "was not specified.\n";

	ck_assert_str_eq(cli_texts_setup_error(&p->texts, said, strlen(said)),
			 "x needs a git repository: run it in one, or pass --skip-git-repo-check");
	ck_assert_str_eq(cli_texts_setup_error(&p->texts, "Please set an AUTH METHOD", 25), "B");
	ck_assert_ptr_null(cli_texts_setup_error(&p->texts, "503 Service Unavailable", 23));
	cli_profile_free(p);
}
END_TEST

START_TEST(test_resume_failed_takes_one_pattern_or_a_list)
{
	struct cli_profile *one = ok("\"resumeFailed\":\"No previous sessions found\"");
	struct cli_profile *many = ok("\"resumeFailed\":[\"No session found matching\","
				      "\"(?i)could not resume\"]");

	ck_assert(cli_texts_resume_failed(&one->texts, "Error: No previous sessions found.", 34));
	ck_assert(!cli_texts_resume_failed(&one->texts, "rate limited", 12));
	ck_assert(cli_texts_resume_failed(&many->texts, "No session found matching 'S1'", 31));
	ck_assert(cli_texts_resume_failed(&many->texts, "COULD NOT RESUME", 16));
	cli_profile_free(one);
	cli_profile_free(many);
}
END_TEST

START_TEST(test_a_stderr_notice_becomes_provider_retry_and_json_rules_stay_rules)
{
	struct cli_profile *p = ok(
		"\"retryNotice\":[{\"type\":\"system\",\"message\":\"error\"},"
		"{\"stream\":\"stderr\",\"match\":\"^Attempt (?<attempt>\\\\d+) failed with status "
		"(?<status>\\\\d+)\\\\. Retrying with backoff\\\\.\\\\.\\\\. (?<message>.*)$\"},"
		"{\"stream\":\"stderr\",\"match\":\"Retrying after (?<delayMs>\\\\d+)ms\"}]");
	const char *line = "Attempt 2 failed with status 429. Retrying with backoff... quota";
	json_t *ev = cli_texts_notice(&p->texts, line, strlen(line));

	ck_assert_uint_eq(p->nrules[CLI_RULE_RETRY], 1); /* the JSON rule */
	ck_assert_ptr_nonnull(ev);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "provider_retry");
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "attempt")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(ev, "errorMessage")), "429 quota");
	json_decref(ev);
	ev = cli_texts_notice(&p->texts, "Retrying after 1500ms", 21);
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "delayMs")), 1500);
	/* No message group: the whole line is the message. */
	ck_assert_str_eq(json_string_value(json_object_get(ev, "errorMessage")),
			 "Retrying after 1500ms");
	json_decref(ev);
	ck_assert_ptr_null(cli_texts_notice(&p->texts, "all good", 8));
	cli_profile_free(p);
}
END_TEST

static void joined(char **argv, char *out, size_t outlen)
{
	out[0] = '\0';
	for (char **a = argv; *a != NULL; a++) {
		size_t n = strlen(out);

		snprintf(out + n, outlen - n, "%s%s", a == argv ? "" : "|", *a);
	}
}

START_TEST(test_own_retries_off_goes_after_the_args_unless_the_user_keeps_them)
{
	const char *quiet = "\"args\":[\"--keep\"],\"ownRetriesOff\":{\"env\":{\"R\":\"0\"},"
			    "\"args\":[\"-c\",\"dir={retrydDir}/s.json\"],\"files\":{\"a/s.json\":\"{}\"}}";
	char extra[512], err[256], got[512];
	struct cli_profile *p, *kept;
	struct cli_profile_vars vars = { "hi", NULL, NULL, "/run/d", NULL };
	char **argv;

	p = ok(quiet);
	argv = cli_profile_argv(p, &vars, err, sizeof(err));
	ck_assert_ptr_nonnull(argv);
	joined(argv, got, sizeof(got));
	ck_assert_str_eq(got, "x|hi|--keep|-c|dir=/run/d/s.json");
	cli_profile_argv_free(argv);
	ck_assert_str_eq(json_string_value(json_object_get(p->texts.quiet_env, "R")), "0");
	ck_assert_ptr_nonnull(json_object_get(p->texts.quiet_files, "a/s.json"));
	cli_profile_free(p);

	snprintf(extra, sizeof(extra), "%s,\"keepOwnRetries\":true", quiet);
	kept = ok(extra);
	argv = cli_profile_argv(kept, &vars, err, sizeof(err));
	joined(argv, got, sizeof(got));
	ck_assert_str_eq(got, "x|hi|--keep");
	ck_assert_ptr_null(kept->texts.quiet_env);
	ck_assert_ptr_null(kept->texts.quiet_files);
	cli_profile_argv_free(argv);
	cli_profile_free(kept);
}
END_TEST

START_TEST(test_mistakes_in_the_new_keys_are_refused_naming_the_key)
{
	static const struct { const char *extra, *want; } cases[] = {
		{ "\"setupErrors\":{\"match\":\"x\"}", "providers.x.setupErrors must be a list" },
		{ "\"setupErrors\":[{\"match\":\"x\"}]",
		  "providers.x.setupErrors[0].why must be a sentence" },
		{ "\"setupErrors\":[{\"match\":\"(x\",\"why\":\"w\"}]",
		  "providers.x.setupErrors[0].match: missing closing parenthesis" },
		{ "\"setupErrors\":[{\"match\":\"x\",\"why\":\"w\",\"fix\":1}]",
		  "providers.x.setupErrors[0].fix is not a setupErrors key (match, why)" },
		{ "\"resumeFailed\":3", "providers.x.resumeFailed must be a regular expression" },
		{ "\"lostTurnOnError\":\"yes\"", "providers.x.lostTurnOnError must be true or false" },
		{ "\"resumeContinuesCutText\":1",
		  "providers.x.resumeContinuesCutText must be true or false" },
		{ "\"keepOwnRetries\":1", "providers.x.keepOwnRetries must be true or false" },
		{ "\"ownRetriesOff\":{\"envs\":{}}",
		  "providers.x.ownRetriesOff.envs is not a key (env, args, files, configArgs)" },
		{ "\"ownRetriesOff\":{\"configArgs\":{\"files\":[\"a\"],\"match\":\"x\","
		  "\"args\":[\"b\"]}}",
		  "providers.x.ownRetriesOff.configArgs.match needs a group (?<value>...)" },
		{ "\"ownRetriesOff\":{\"configArgs\":{\"files\":[],\"match\":\"(?<value>x)\","
		  "\"args\":[\"b\"]}}",
		  "providers.x.ownRetriesOff.configArgs needs \"files\" and \"args\"" },
		{ "\"ownRetriesOff\":{\"configArgs\":{\"file\":[\"a\"]}}",
		  "providers.x.ownRetriesOff.configArgs.file is not a key (files, match, skip, unless, args, otherwise)" },
		{ "\"ownRetriesOff\":{\"env\":{\"A\":1}}",
		  "providers.x.ownRetriesOff.env must be an object {NAME: string or null}" },
		{ "\"ownRetriesOff\":{\"files\":{\"../etc/x\":\"\"}}",
		  "providers.x.ownRetriesOff.files.../etc/x: a file name must be relative" },
		{ "\"ownRetriesOff\":{\"files\":{\"/abs\":\"\"}}",
		  "providers.x.ownRetriesOff.files./abs: a file name must be relative" },
		{ "\"ownRetriesOff\":{\"args\":[\"{retryDir}\"]}",
		  "providers.x.ownRetriesOff.args[0]: unknown placeholder {retryDir}" },
		{ "\"retryNotice\":{\"stream\":\"stderr\",\"match\":\"(\"}",
		  "providers.x.retryNotice.match: missing closing parenthesis" },
		{ "\"retryNotice\":{\"stream\":\"stderr\",\"match\":\"x\",\"message\":\"m\"}",
		  "providers.x.retryNotice.message is not a key of a stderr notice" },
		{ "\"retryNotice\":{\"stream\":\"err\",\"type\":\"x\"}",
		  "providers.x.retryNotice.stream must be \"stdout\" or \"stderr\"" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512] = "";
		struct cli_profile *p = profile(cases[i].extra, err, sizeof(err));

		ck_assert_msg(p == NULL, "accepted: %s", cases[i].extra);
		ck_assert_msg(strstr(err, cases[i].want) != NULL, "%s: got \"%s\", want \"%s\"",
			      cases[i].extra, err, cases[i].want);
	}
}
END_TEST

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(test_config_args_name_what_the_clis_own_configuration_chose)
{
	char dir[] = "/tmp/retryd-texts-XXXXXX", path[128], home[160];
	const char *old_home = getenv("HOME");
	struct cli_profile *p;
	char **args;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/config.toml", dir);
	snprintf(home, sizeof(home), "%s", old_home ? old_home : "/");
	setenv("CFG_DIR", dir, 1);
	p = ok("\"ownRetriesOff\":{\"configArgs\":{\"files\":[\"{env:CFG_DIR}/config.toml\","
	       "\"{home}/none.toml\"],\"match\":\"(?m)^model_provider\\\\s*=\\\\s*\\\"(?<value>[\\\\w-]+)\\\"\","
	       "\"skip\":\"^openai$\",\"args\":[\"-c\",\"model_providers.{value}.retries=0\"]}}");
	/* No file: nothing added. */
	ck_assert_ptr_null(cli_config_args(&p->texts.config, NULL));
	write_text(path, "model = \"m\"\nmodel_provider = \"gw\"\n[model_providers.gw]\n");
	args = cli_config_args(&p->texts.config, NULL);
	ck_assert_ptr_nonnull(args);
	ck_assert_str_eq(args[0], "-c");
	ck_assert_str_eq(args[1], "model_providers.gw.retries=0");
	ck_assert_ptr_null(args[2]);
	for (char **a = args; *a; a++)
		free(*a);
	free(args);
	/* A value the CLI refuses such settings for is skipped. */
	write_text(path, "model_provider = \"openai\"\n");
	ck_assert_ptr_null(cli_config_args(&p->texts.config, NULL));
	/* An unset variable leaves its path out; the next one is tried. */
	unsetenv("CFG_DIR");
	ck_assert_ptr_null(cli_config_args(&p->texts.config, NULL));
	cli_profile_free(p);
	unlink(path);
	rmdir(dir);
}
END_TEST

static void free_args(char **args)
{
	for (char **a = args; a && *a; a++)
		free(*a);
	free(args);
}

START_TEST(test_config_rules_read_the_args_first_skip_on_unless_and_fall_back_to_otherwise)
{
	char dir[] = "/tmp/retryd-texts-XXXXXX", path[128];
	struct cli_profile *p;
	json_t *user;
	char **args;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/config.toml", dir);
	setenv("CFG_DIR", dir, 1);
	p = ok("\"ownRetriesOff\":{\"configArgs\":[{\"files\":[\"{env:CFG_DIR}/config.toml\"],"
	       "\"unless\":\"(?m)^model_provider\","
	       "\"match\":\"(?m)^base_url\\\\s*=\\\\s*\\\"?(?<value>[^\\\"\\\\s]+)\","
	       "\"args\":[\"url={value}\"],\"otherwise\":[\"url=default\"]}]}");
	/* No file, no args: the rule's otherwise. */
	args = cli_config_args(&p->texts.config, NULL);
	ck_assert_ptr_nonnull(args);
	ck_assert_str_eq(args[0], "url=default");
	ck_assert_ptr_null(args[1]);
	free_args(args);
	/* The file's value. */
	write_text(path, "base_url = \"http://file\"\n");
	args = cli_config_args(&p->texts.config, NULL);
	ck_assert_str_eq(args[0], "url=http://file");
	free_args(args);
	/* The args come last on the CLI's command line: their value wins. */
	user = json_pack("[ss]", "-c", "base_url=http://arg");
	args = cli_config_args(&p->texts.config, user);
	ck_assert_str_eq(args[0], "url=http://arg");
	free_args(args);
	json_decref(user);
	/* unless, in the file or in the args: nothing at all. */
	user = json_pack("[ss]", "-c", "model_provider=mine");
	ck_assert_ptr_null(cli_config_args(&p->texts.config, user));
	json_decref(user);
	write_text(path, "model_provider = \"mine\"\nbase_url = \"http://file\"\n");
	ck_assert_ptr_null(cli_config_args(&p->texts.config, NULL));
	cli_profile_free(p);
	unsetenv("CFG_DIR");
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_a_fresh_prompt_replays_the_earlier_turns_then_the_turn_itself)
{
	json_t *m = json_loads(
		"[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is 2+2?\"}]},"
		" {\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hm\"},"
		"  {\"type\":\"text\",\"text\":\"4\"}]},"
		" {\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"And 3+3?\"}]}]", 0, NULL);
	json_t *first = json_loads("[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
				   "\"text\":\"hi\"}]}]", 0, NULL);
	char *p;

	ck_assert_uint_eq(cli_prompt_turn_start(m), 2);
	p = cli_prompt_fresh(m, 2);
	ck_assert_str_eq(p, "The conversation so far (replayed: the agent's own session could not "
			 "be continued):\n\nUser: What is 2+2?\n\nAssistant: 4\n\n---\n\nAnd 3+3?");
	free(p);
	/* A first turn has nothing to replay: the prompt as it is. */
	p = cli_prompt_fresh(first, 0);
	ck_assert_str_eq(p, "hi");
	free(p);
	json_decref(m);
	json_decref(first);
}
END_TEST

Suite *cli_texts_suite(void)
{
	Suite *s = suite_create("cli_texts");
	TCase *tc = tcase_create("texts");

	tcase_add_test(tc, test_a_setup_error_is_found_anywhere_in_what_the_cli_said_and_names_the_fix);
	tcase_add_test(tc, test_resume_failed_takes_one_pattern_or_a_list);
	tcase_add_test(tc, test_a_stderr_notice_becomes_provider_retry_and_json_rules_stay_rules);
	tcase_add_test(tc, test_own_retries_off_goes_after_the_args_unless_the_user_keeps_them);
	tcase_add_test(tc, test_mistakes_in_the_new_keys_are_refused_naming_the_key);
	tcase_add_test(tc, test_a_fresh_prompt_replays_the_earlier_turns_then_the_turn_itself);
	tcase_add_test(tc, test_config_args_name_what_the_clis_own_configuration_chose);
	tcase_add_test(tc, test_config_rules_read_the_args_first_skip_on_unless_and_fall_back_to_otherwise);
	suite_add_tcase(s, tc);
	return s;
}

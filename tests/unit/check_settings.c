#include "core/settings.h"

#include "core/builtins.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* For the generated runner; declared here for -Wmissing-prototypes. */
Suite *settings_suite(void);

static char tmpdir[64];
static char *saved_home, *saved_xdg;

static char *dup_env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL ? strdup(v) : NULL;
}

static void restore_env(const char *name, const char *value)
{
	if (value != NULL)
		setenv(name, value, 1);
	else
		unsetenv(name);
}

static void rm_rf(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;

	if (lstat(path, &st) < 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		d = opendir(path);
		while (d != NULL && (e = readdir(d)) != NULL) {
			char child[4096];

			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
			rm_rf(child);
		}
		if (d != NULL)
			closedir(d);
		rmdir(path);
	} else {
		unlink(path);
	}
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check-settings-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	saved_home = dup_env("HOME");
	saved_xdg = dup_env("XDG_CONFIG_HOME");
}

static void teardown(void)
{
	rm_rf(tmpdir);
	restore_env("HOME", saved_home);
	restore_env("XDG_CONFIG_HOME", saved_xdg);
	free(saved_home);
	free(saved_xdg);
	saved_home = saved_xdg = NULL;
}

/* A path under the test's directory; the result lives until the next call
 * with the same `buf`. */
static const char *in_tmp(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
	return buf;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* The file's contents, malloc'd. */
static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	ck_assert_ptr_nonnull(f);
	buf = calloc(1, 65536);
	ck_assert_ptr_nonnull(buf);
	n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static json_t *read_json(const char *path)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, 0, &jerr);

	ck_assert_msg(root != NULL, "%s: %s", path, jerr.text);
	return root;
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	/* The persist's lock file stays by design: not a leftover. */
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    strcmp(e->d_name, ".settings.json.lock") != 0)
			n++;
	closedir(d);
	return n;
}

/* Loads settings as the daemon does (with its built-in layer) from a file
 * holding `text` (NULL: no file). */
static void load(struct settings *s, const char *text)
{
	char path[128], err[512] = "";
	json_t *builtins = builtins_settings();

	ck_assert_ptr_nonnull(builtins);
	in_tmp(path, sizeof(path), "settings.json");
	if (text != NULL)
		write_text(path, text);
	ck_assert_msg(settings_load(s, builtins, path, err, sizeof(err)) == 0, "%s", err);
	json_decref(builtins);
}

/* settings_init must fail with exactly `want` after the path prefix. */
static void expect_load_error(const char *text, const char *want)
{
	struct settings s;
	char path[128], err[512] = "", full[768];

	in_tmp(path, sizeof(path), "settings.json");
	write_text(path, text);
	ck_assert_int_eq(settings_init(&s, path, err, sizeof(err)), -1);
	snprintf(full, sizeof(full), "settings file %s: %s", path, want);
	ck_assert_str_eq(err, full);
	ck_assert_ptr_null(s.effective);
	ck_assert_ptr_null(s.path);
}

static void expect_set_error(const char *assignment, const char *want)
{
	struct settings s;
	char err[512] = "";
	json_t *before;

	load(&s, NULL);
	before = json_deep_copy(s.effective);
	ck_assert_int_eq(settings_override(&s, assignment, err, sizeof(err)), -1);
	ck_assert_str_eq(err, want);
	ck_assert_msg(json_equal(before, s.effective), "a failed --set changed the settings");
	json_decref(before);
	settings_release(&s);
}

START_TEST(test_missing_file_means_defaults)
{
	struct settings s;
	json_t *v;

	load(&s, NULL);
	ck_assert(settings_bool(&s, "retry.enabled", false));
	ck_assert_int_eq(settings_int(&s, "retry.maxRetries", -1), 3);
	ck_assert_int_eq(settings_int(&s, "retry.baseDelayMs", -1), 2000);
	ck_assert_int_eq(settings_int(&s, "retry.usageLimitCooldownMs", -1), 1800000);
	ck_assert_int_eq(settings_int(&s, "rpc.maxLineBytes", -1), 67108864);
	ck_assert_int_eq(settings_int(&s, "rpc.outputHighWaterBytes", -1), 1048576);
	ck_assert_int_eq(settings_int(&s, "sim.chunkDelayMs", -1), 0);
	v = settings_get(&s, "sim.plan");
	ck_assert(json_is_array(v) && json_array_size(v) == 0);
	v = settings_get(&s, "sim.credentials");
	ck_assert(json_is_array(v) && json_array_size(v) == 0);
	v = settings_get(&s, "sim.models");
	ck_assert_int_eq(json_array_size(v), 1);
	ck_assert_str_eq(json_string_value(json_array_get(v, 0)), "sim-1");
	ck_assert_int_eq(json_object_size(s.file), 0);
	settings_release(&s);
}
END_TEST

START_TEST(test_defaults_include_classify_pattern_lists)
{
	static const char *lists[] = {
		"retry.retryablePatterns", "retry.nonRetryablePatterns",
		"retry.contextOverflowPatterns", "retry.usageLimitPatterns",
		"retry.overloadPatterns",
	};
	struct settings s;
	char err[256];

	load(&s, NULL);
	/* Empty: the built-in patterns are the classifier's own, not settings;
	 * a list given here only extends its step of the decision table (checked
	 * first), so the default adds nothing. */
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		json_t *v = settings_get(&s, lists[i]);

		ck_assert_msg(json_is_array(v) && json_array_size(v) == 0, "%s", lists[i]);
	}
	/* The defaults pass their own checks. */
	ck_assert_int_eq(settings_check("", s.defaults, err, sizeof(err)), 0);
	settings_release(&s);
}
END_TEST

START_TEST(test_blank_file_means_defaults)
{
	struct settings s;

	load(&s, " \n\t\n");
	ck_assert_int_eq(settings_int(&s, "retry.maxRetries", -1), 3);
	settings_release(&s);
}
END_TEST

START_TEST(test_file_merges_over_defaults_keeping_sibling_defaults)
{
	struct settings s;

	load(&s, "{\"retry\": {\"maxRetries\": 5}, \"sim\": {\"chunkDelayMs\": 10}}");
	ck_assert_int_eq(settings_int(&s, "retry.maxRetries", -1), 5);
	ck_assert_int_eq(settings_int(&s, "retry.baseDelayMs", -1), 2000);
	ck_assert(settings_bool(&s, "retry.enabled", false));
	ck_assert(json_is_array(settings_get(&s, "retry.retryablePatterns")));
	ck_assert_int_eq(settings_int(&s, "sim.chunkDelayMs", -1), 10);
	ck_assert_int_eq(json_array_size(settings_get(&s, "sim.models")), 1);
	settings_release(&s);
}
END_TEST

START_TEST(test_file_array_replaces_default_array)
{
	struct settings s;
	json_t *v;

	load(&s, "{\"retry\": {\"retryablePatterns\": [\"boom\"]}}");
	v = settings_get(&s, "retry.retryablePatterns");
	ck_assert_int_eq(json_array_size(v), 1);
	ck_assert_str_eq(json_string_value(json_array_get(v, 0)), "boom");
	settings_release(&s);
}
END_TEST

START_TEST(test_override_beats_file)
{
	struct settings s;
	char err[512] = "";

	load(&s, "{\"retry\": {\"maxRetries\": 5, \"baseDelayMs\": 100}}");
	ck_assert_msg(settings_override(&s, "retry.maxRetries=7", err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(settings_int(&s, "retry.maxRetries", -1), 7);
	ck_assert_int_eq(settings_int(&s, "retry.baseDelayMs", -1), 100);
	/* The file layer is untouched. */
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(s.file, "retry"),
							   "maxRetries")), 5);
	settings_release(&s);
}
END_TEST

START_TEST(test_set_value_is_parsed_as_json)
{
	struct settings s;
	char err[512] = "";
	json_t *v;

	load(&s, NULL);
	ck_assert_int_eq(settings_override(&s, "retry.enabled=false", err, sizeof(err)), 0);
	ck_assert(json_is_false(settings_get(&s, "retry.enabled")));
	ck_assert_int_eq(settings_override(&s, "sim.models=[\"a\",\"b\"]", err, sizeof(err)), 0);
	v = settings_get(&s, "sim.models");
	ck_assert_int_eq(json_array_size(v), 2);
	ck_assert_int_eq(settings_override(&s, "providers.extra.quoted=\"42\"", err, sizeof(err)), 0);
	ck_assert_str_eq(settings_string(&s, "providers.extra.quoted", "?"), "42");
	ck_assert_int_eq(settings_override(&s, "providers.extra.number=42", err, sizeof(err)), 0);
	ck_assert_int_eq(settings_int(&s, "providers.extra.number", -1), 42);
	settings_release(&s);
}
END_TEST

START_TEST(test_set_value_that_is_not_json_is_a_string)
{
	struct settings s;
	char err[512] = "";

	load(&s, NULL);
	ck_assert_int_eq(settings_override(&s, "providers.extra.name=hello world", err, sizeof(err)), 0);
	ck_assert_str_eq(settings_string(&s, "providers.extra.name", "?"), "hello world");
	ck_assert_int_eq(settings_override(&s, "providers.extra.eq=a=b", err, sizeof(err)), 0);
	ck_assert_str_eq(settings_string(&s, "providers.extra.eq", "?"), "a=b");
	ck_assert_int_eq(settings_override(&s, "providers.extra.empty=", err, sizeof(err)), 0);
	ck_assert_str_eq(settings_string(&s, "providers.extra.empty", "?"), "");
	settings_release(&s);
}
END_TEST

START_TEST(test_set_dotted_key_creates_nested_objects)
{
	struct settings s;
	char err[512] = "";

	load(&s, NULL);
	ck_assert_int_eq(settings_override(&s, "providers.a.b.c=1", err, sizeof(err)), 0);
	ck_assert(json_is_object(settings_get(&s, "providers.a")));
	ck_assert(json_is_object(settings_get(&s, "providers.a.b")));
	ck_assert_int_eq(settings_int(&s, "providers.a.b.c", -1), 1);
	ck_assert_int_eq(settings_override(&s, "providers.a.b.d=2", err, sizeof(err)), 0);
	ck_assert_int_eq(settings_int(&s, "providers.a.b.c", -1), 1);
	ck_assert_int_eq(settings_int(&s, "providers.a.b.d", -1), 2);
	settings_release(&s);
}
END_TEST

START_TEST(test_set_whole_section_merges_and_is_checked)
{
	struct settings s;
	char err[512] = "";

	load(&s, NULL);
	ck_assert_int_eq(settings_override(&s, "retry={\"maxRetries\":9}", err, sizeof(err)), 0);
	ck_assert_int_eq(settings_int(&s, "retry.maxRetries", -1), 9);
	ck_assert_int_eq(settings_int(&s, "retry.baseDelayMs", -1), 2000);
	settings_release(&s);
	expect_set_error("retry={\"maxRetries\":-1}",
			 "--set retry={\"maxRetries\":-1}: "
			 "retry.maxRetries must be an integer from 0 to 1000 (got -1)");
}
END_TEST

START_TEST(test_set_without_equals_is_an_error)
{
	expect_set_error("retry.maxRetries", "--set retry.maxRetries: expected KEY=VALUE");
	expect_set_error("=5", "--set =5: expected KEY=VALUE");
}
END_TEST

START_TEST(test_set_key_with_empty_name_is_an_error)
{
	expect_set_error("retry..maxRetries=1",
			 "--set retry..maxRetries=1: \"retry..maxRetries\" is not a valid key "
			 "(names separated by single dots)");
	expect_set_error(".x=1",
			 "--set .x=1: \".x\" is not a valid key (names separated by single dots)");
}
END_TEST

START_TEST(test_set_wrong_type_is_an_error)
{
	expect_set_error("retry.maxRetries=x",
			 "--set retry.maxRetries=x: "
			 "retry.maxRetries must be an integer from 0 to 1000 (got \"x\")");
	expect_set_error("retry.maxRetries=2.5",
			 "--set retry.maxRetries=2.5: "
			 "retry.maxRetries must be an integer from 0 to 1000 (got 2.5)");
	expect_set_error("retry.enabled=1",
			 "--set retry.enabled=1: retry.enabled must be true or false (got 1)");
	expect_set_error("sim.plan={}", "--set sim.plan={}: sim.plan must be an array (got {})");
	expect_set_error("sim.credentials=[\"k\",3]",
			 "--set sim.credentials=[\"k\",3]: sim.credentials[1] must be a string (got 3)");
	expect_set_error("retry.retryablePatterns=oops",
			 "--set retry.retryablePatterns=oops: "
			 "retry.retryablePatterns must be an array of strings (got \"oops\")");
}
END_TEST

START_TEST(test_set_out_of_range_is_an_error)
{
	expect_set_error("retry.maxRetries=1001",
			 "--set retry.maxRetries=1001: "
			 "retry.maxRetries must be an integer from 0 to 1000 (got 1001)");
	expect_set_error("rpc.outputHighWaterBytes=1023",
			 "--set rpc.outputHighWaterBytes=1023: rpc.outputHighWaterBytes must be "
			 "an integer from 1024 to 1073741824 (got 1023)");
	expect_set_error("rpc.maxLineBytes=0",
			 "--set rpc.maxLineBytes=0: "
			 "rpc.maxLineBytes must be an integer from 1 to 1073741824 (got 0)");
	expect_set_error("retry.usageLimitCooldownMs=2592000001",
			 "--set retry.usageLimitCooldownMs=2592000001: retry.usageLimitCooldownMs "
			 "must be an integer from 0 to 2592000000 (got 2592000001)");
	expect_set_error("sim.chunkDelayMs=3600001",
			 "--set sim.chunkDelayMs=3600001: "
			 "sim.chunkDelayMs must be an integer from 0 to 3600000 (got 3600001)");
	expect_set_error("sim.models=[]",
			 "--set sim.models=[]: sim.models must be a non-empty array of strings (got [])");
}
END_TEST

START_TEST(test_set_section_to_non_object_is_an_error)
{
	expect_set_error("retry=5", "--set retry=5: retry must be an object (got 5)");
	expect_set_error("rpc=[]", "--set rpc=[]: rpc must be an object (got [])");
	expect_set_error("retry.maxRetries.x=1",
			 "--set retry.maxRetries.x=1: "
			 "retry.maxRetries must be an integer from 0 to 1000 (got {\"x\":1})");
}
END_TEST

START_TEST(test_error_quotes_long_values_shortened)
{
	char arg[300], want[512];

	snprintf(arg, sizeof(arg), "retry.enabled=%0200d", 0);
	snprintf(want, sizeof(want), "--set %s: retry.enabled must be true or false (got \"%.59s...)",
		 arg, arg + strlen("retry.enabled="));
	expect_set_error(arg, want);
}
END_TEST

START_TEST(test_syntax_error_names_line_and_column)
{
	expect_load_error("{\n  \"retry\": {\n    \"maxRetries\": 3,\n  }\n}\n",
			  "line 4 column 3: string or '}' expected near '}'");
}
END_TEST

START_TEST(test_duplicate_key_in_file_is_an_error)
{
	expect_load_error("{\"a\": 1, \"a\": 2}",
			  "line 1 column 12: duplicate object key near '\"a\"'");
}
END_TEST

START_TEST(test_file_that_is_not_an_object_is_an_error)
{
	expect_load_error("[1, 2]\n", "must hold a JSON object");
	expect_load_error("5\n", "must hold a JSON object");
	expect_load_error("\"text\"\n", "must hold a JSON object");
}
END_TEST

START_TEST(test_wrong_type_in_file_is_an_error)
{
	expect_load_error("{\"retry\": {\"enabled\": \"yes\"}}",
			  "retry.enabled must be true or false (got \"yes\")");
	expect_load_error("{\"retry\": true}", "retry must be an object (got true)");
	expect_load_error("{\"retry\": {\"usageLimitPatterns\": [\"a\", null]}}",
			  "retry.usageLimitPatterns[1] must be a string (got null)");
}
END_TEST

START_TEST(test_out_of_range_in_file_is_an_error)
{
	expect_load_error("{\"retry\": {\"baseDelayMs\": -1}}",
			  "retry.baseDelayMs must be an integer from 0 to 86400000 (got -1)");
	expect_load_error("{\"sim\": {\"models\": []}}",
			  "sim.models must be a non-empty array of strings (got [])");
}
END_TEST

START_TEST(test_directory_as_path_is_an_error)
{
	struct settings s;
	char err[512] = "", want[512];

	ck_assert_int_eq(settings_init(&s, tmpdir, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "settings file %s: %s", tmpdir, strerror(EISDIR));
	ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_path_through_a_file_is_an_error)
{
	struct settings s;
	char path[128], file[128], err[512] = "", want[512];

	write_text(in_tmp(file, sizeof(file), "plain"), "x");
	in_tmp(path, sizeof(path), "plain/settings.json");
	ck_assert_int_eq(settings_init(&s, path, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "settings file %s: %s", path, strerror(ENOTDIR));
	ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_unknown_keys_are_refused_naming_the_nearest)
{
	expect_load_error("{\"retry\": {\"jiter\": \"full\"}}",
			  "unknown setting \"retry.jiter\" (did you mean retry.jitter?)");
	expect_load_error("{\"future\": {\"x\": [1, 2]}}",
			  "unknown setting \"future\" (retryd config lists the known ones)");
	expect_load_error("{\"retyr\": {\"maxRetries\": 2}}",
			  "unknown setting \"retyr.maxRetries\" (did you mean retry.maxRetries?)");
	expect_load_error("{\"fleet\": {\"redis\": {\"URL\": \"redis://x\"}}}",
			  "unknown setting \"fleet.redis.URL\" (did you mean fleet.redis.url?)");
}
END_TEST

START_TEST(test_set_of_an_unknown_key_is_refused)
{
	struct settings s;
	char err[512] = "";

	load(&s, NULL);
	ck_assert_int_eq(settings_override(&s, "retry.baseDelayMS=5", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "--set retry.baseDelayMS=5: unknown setting \"retry.baseDelayMS\" "
			 "(did you mean retry.baseDelayMs?)");
	ck_assert_int_eq(settings_override(&s, "Retry.MaxRetries=5", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "--set Retry.MaxRetries=5: unknown setting \"Retry.MaxRetries\" "
			 "(did you mean retry.maxRetries?)");
	/* Nothing of a refused --set stays. */
	ck_assert_int_eq(settings_get_int(&s, "retry.baseDelayMs"), 2000);
	settings_release(&s);
}
END_TEST

START_TEST(test_open_sections_and_leaves_keep_their_own_members)
{
	struct settings s;
	char err[512] = "", path[128];
	json_t *saved;

	load(&s, "{\"providers\": {\"mine\": {\"anything\": {\"goes\": 1}}},"
		 " \"fleet\": {\"providerScopes\": {\"openai\": \"credential\"},"
		 " \"retryBudget\": {\"maxTokens\": 5, \"tokenRatio\": 0.5}},"
		 " \"sim\": {\"plan\": [{\"a\": 1}]}}");
	ck_assert_int_eq(settings_int(&s, "providers.mine.anything.goes", -1), 1);
	ck_assert_str_eq(settings_string(&s, "fleet.providerScopes.openai", "?"), "credential");
	ck_assert_int_eq(json_array_size(settings_get(&s, "sim.plan")), 1);
	ck_assert_int_eq(settings_override(&s, "providers.other.x=1", err, sizeof(err)), 0);
	ck_assert_msg(settings_persist(&s, "retry.enabled", json_false(), err, sizeof(err)) == 0,
		      "%s", err);
	saved = read_json(in_tmp(path, sizeof(path), "settings.json"));
	ck_assert_ptr_nonnull(json_object_get(json_object_get(saved, "providers"), "mine"));
	json_decref(saved);
	/* A budget object is closed: its own check names the stray key. */
	ck_assert_int_eq(settings_override(&s, "fleet.retryBudget={\"maxTokens\":1,\"tokenRatio\":1,"
					   "\"x\":1}", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "fleet.retryBudget has no key \"x\"") != NULL, "%s", err);
	settings_release(&s);
}
END_TEST

START_TEST(test_suggest_finds_the_nearest_key)
{
	ck_assert_str_eq(settings_suggest("retry.baseDelayMS"), "retry.baseDelayMs");
	ck_assert_str_eq(settings_suggest("RETRY.MAXRETRIES"), "retry.maxRetries");
	ck_assert_str_eq(settings_suggest("retry.jiter"), "retry.jitter");
	ck_assert_str_eq(settings_suggest("retry.jtiter"), "retry.jitter"); /* a swap is one edit */
	ck_assert_str_eq(settings_suggest("retry.maxRetry"), "retry.maxRetries");
	ck_assert_str_eq(settings_suggest("retry.baseDelay"), "retry.baseDelayMs");
	ck_assert_str_eq(settings_suggest("rpc.baseDelayMs"), "retry.baseDelayMs");
	ck_assert_str_eq(settings_suggest("retyr"), "retry");
	/* Too far from everything, or only its own section near. */
	ck_assert_ptr_null(settings_suggest("foo"));
	ck_assert_ptr_null(settings_suggest("fleet.x"));
	ck_assert_ptr_null(settings_suggest("completely.unrelated.name"));
	ck_assert_ptr_null(settings_suggest(""));
}
END_TEST

START_TEST(test_check_file_lists_every_problem)
{
	char path[128];
	json_t *problems;

	in_tmp(path, sizeof(path), "check.json");
	write_text(path, "{\"retry\": {\"jiter\": \"full\", \"maxRetries\": \"x\"}, \"sim\": {\"oops\": 1},"
		   " \"providers\": {\"p\": {\"q\": 1}}}");
	problems = settings_check_file(path);
	ck_assert_int_eq(json_array_size(problems), 3);
	ck_assert_str_eq(json_string_value(json_array_get(problems, 0)),
			 "unknown setting \"retry.jiter\" (did you mean retry.jitter?)");
	ck_assert_str_eq(json_string_value(json_array_get(problems, 1)),
			 "unknown setting \"sim.oops\" (retryd config lists the known ones)");
	ck_assert_str_eq(json_string_value(json_array_get(problems, 2)),
			 "retry.maxRetries must be an integer from 0 to 1000 (got \"x\")");
	json_decref(problems);
	write_text(path, "{\"retry\": {\"maxRetries\": 2}}");
	problems = settings_check_file(path);
	ck_assert_int_eq(json_array_size(problems), 0);
	json_decref(problems);
	write_text(path, "[1]");
	problems = settings_check_file(path);
	ck_assert_str_eq(json_string_value(json_array_get(problems, 0)), "must hold a JSON object");
	json_decref(problems);
	in_tmp(path, sizeof(path), "absent.json");
	problems = settings_check_file(path);
	ck_assert_str_eq(json_string_value(json_array_get(problems, 0)), strerror(ENOENT));
	json_decref(problems);
}
END_TEST

struct visit {
	char lines[4096];
	size_t len;
};

static void visit_cb(void *ctx, const char *key, const json_t *value, enum settings_origin origin)
{
	struct visit *v = ctx;
	char *text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);

	if (strncmp(key, "retry.", 6) == 0 && strstr(key, "Patterns") == NULL)
		v->len += (size_t)snprintf(v->lines + v->len, sizeof(v->lines) - v->len, "%s %s=%s\n",
					   settings_origin_name(origin), key, text);
	else if (strcmp(key, "providers.openai") == 0)
		v->len += (size_t)snprintf(v->lines + v->len, sizeof(v->lines) - v->len, "%s %s\n",
					   settings_origin_name(origin), key);
	else if (strcmp(key, "retry.overloadPatterns") == 0)
		v->len += (size_t)snprintf(v->lines + v->len, sizeof(v->lines) - v->len, "%s %s\n",
					   settings_origin_name(origin), key);
	free(text);
}

START_TEST(test_origin_says_which_layer_a_value_comes_from)
{
	struct settings s;
	char err[512] = "";
	struct visit v = { "", 0 };

	load(&s, "{\"retry\": {\"maxRetries\": 5}}");
	ck_assert_int_eq(settings_override(&s, "retry.baseDelayMs=7", err, sizeof(err)), 0);
	ck_assert_int_eq(settings_origin(&s, "retry.maxRetries"), SETTINGS_ORIGIN_FILE);
	ck_assert_int_eq(settings_origin(&s, "retry.baseDelayMs"), SETTINGS_ORIGIN_OVERRIDE);
	ck_assert_int_eq(settings_origin(&s, "retry.enabled"), SETTINGS_ORIGIN_DEFAULT);
	ck_assert_int_eq(settings_origin(&s, "retry.overloadPatterns"), SETTINGS_ORIGIN_BUILTIN);
	ck_assert_int_eq(settings_origin(&s, "providers.openai"), SETTINGS_ORIGIN_BUILTIN);
	ck_assert_int_eq(settings_origin(&s, "retry.jitterSeed"), SETTINGS_ORIGIN_NONE);
	ck_assert_int_eq(settings_foreach(&s, visit_cb, &v), 0);
	ck_assert_msg(strstr(v.lines, "providers.openai\n") < strstr(v.lines, "default retry.enabled=true\n"),
		      "%s", v.lines);
	ck_assert_msg(strstr(v.lines, "default retry.enabled=true\nfile retry.maxRetries=5\n"
			     "--set retry.baseDelayMs=7\n") != NULL, "%s", v.lines);
	ck_assert_msg(strstr(v.lines, "built-in retry.overloadPatterns\n") != NULL, "%s", v.lines);
	ck_assert_msg(strstr(v.lines, "retry.jitterSeed") == NULL, "%s", v.lines);
	settings_release(&s);
}
END_TEST

START_TEST(test_check_reports_known_keys_and_passes_unknown)
{
	char err[512] = "";
	json_t *v = json_string("x");

	ck_assert_int_eq(settings_check("retry.maxRetries", v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "retry.maxRetries must be an integer from 0 to 1000 (got \"x\")");
	ck_assert_int_eq(settings_check("no.such.key", v, err, sizeof(err)), 0);
	json_decref(v);
}
END_TEST

START_TEST(test_usage_wait_keys_refuse_bad_values_with_a_sentence)
{
	char err[512] = "";
	json_t *v = json_string("forever");
	json_t *n = json_integer(10);

	ck_assert_int_eq(settings_check("retry.usageLimitWait", v, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "retry.usageLimitWait") != NULL && strstr(err, "off") != NULL &&
		      strstr(err, "wait") != NULL && strstr(err, "forever") != NULL, "%s", err);
	ck_assert_int_eq(settings_check("retry.usageWaitHeartbeatMs", n, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "retry.usageWaitHeartbeatMs must be an integer from 1000") != NULL,
		      "%s", err);
	json_decref(v);
	json_decref(n);
}
END_TEST

START_TEST(test_typed_getters_fall_back)
{
	struct settings s;

	load(&s, NULL);
	ck_assert_int_eq(settings_int(&s, "no.such", 42), 42);
	ck_assert_int_eq(settings_int(&s, "retry.enabled", 42), 42);
	ck_assert(settings_bool(&s, "retry.maxRetries", true));
	ck_assert_str_eq(settings_string(&s, "retry.maxRetries", "fb"), "fb");
	ck_assert_ptr_null(settings_get(&s, "retry.maxRetries.deeper"));
	ck_assert_ptr_null(settings_get(&s, "retry..maxRetries"));
	ck_assert_ptr_null(settings_get(&s, ""));
	settings_release(&s);
}
END_TEST

START_TEST(test_persist_writes_file_keeping_other_keys)
{
	struct settings s;
	char err[512] = "", path[128], *text;
	json_t *saved;
	const char *first;
	void *iter;

	load(&s, "{\"sim\": {\"chunkDelayMs\": 1}, \"retry\": {\"maxRetries\": 5}}");
	ck_assert_msg(settings_persist(&s, "retry.enabled", json_false(), err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert(!settings_bool(&s, "retry.enabled", true));
	in_tmp(path, sizeof(path), "settings.json");
	saved = read_json(path);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(saved, "sim"),
							    "chunkDelayMs")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(saved, "retry"),
							    "maxRetries")), 5);
	ck_assert(json_is_false(json_object_get(json_object_get(saved, "retry"), "enabled")));
	/* Only the file layer is written, in its own order. */
	ck_assert_int_eq(json_object_size(saved), 2);
	ck_assert_int_eq(json_object_size(json_object_get(saved, "retry")), 2);
	iter = json_object_iter(saved);
	first = json_object_iter_key(iter);
	ck_assert_str_eq(first, "sim");
	json_decref(saved);
	text = read_text(path);
	ck_assert_msg(strstr(text, "\n  \"retry\": {\n    \"maxRetries\": 5,") != NULL, "%s", text);
	ck_assert_int_eq(text[strlen(text) - 1], '\n');
	ck_assert_int_ne(text[strlen(text) - 2], '\n');
	free(text);
	settings_release(&s);
}
END_TEST

START_TEST(test_persisted_value_is_read_back)
{
	struct settings s;
	char err[512] = "";

	load(&s, NULL);
	ck_assert_int_eq(settings_persist(&s, "retry.maxRetries", json_integer(8), err,
					  sizeof(err)), 0);
	settings_release(&s);
	load(&s, NULL);
	ck_assert_int_eq(settings_int(&s, "retry.maxRetries", -1), 8);
	ck_assert_int_eq(settings_int(&s, "retry.baseDelayMs", -1), 2000);
	settings_release(&s);
}
END_TEST

START_TEST(test_persist_creates_directories)
{
	struct settings s;
	char err[512] = "", path[128], dir[128];
	struct stat st;
	json_t *saved;

	in_tmp(path, sizeof(path), "a/b/settings.json");
	ck_assert_int_eq(settings_init(&s, path, err, sizeof(err)), 0);
	ck_assert_msg(settings_persist(&s, "retry.enabled", json_false(), err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(stat(in_tmp(dir, sizeof(dir), "a/b"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	saved = read_json(path);
	ck_assert(json_equal(saved, s.file));
	json_decref(saved);
	settings_release(&s);
}
END_TEST

START_TEST(test_persist_leaves_no_temp_file)
{
	struct settings s;
	char err[512] = "";

	load(&s, "{}");
	ck_assert_int_eq(settings_persist(&s, "retry.enabled", json_false(), err, sizeof(err)), 0);
	ck_assert_int_eq(settings_persist(&s, "retry.maxRetries", json_integer(1), err,
					  sizeof(err)), 0);
	ck_assert_int_eq(count_entries(tmpdir), 1);
	settings_release(&s);
}
END_TEST

START_TEST(test_persist_drops_the_override_of_that_key)
{
	struct settings s;
	char err[512] = "";

	load(&s, NULL);
	ck_assert_int_eq(settings_override(&s, "retry.enabled=false", err, sizeof(err)), 0);
	ck_assert_int_eq(settings_override(&s, "retry.maxRetries=9", err, sizeof(err)), 0);
	ck_assert_int_eq(settings_persist(&s, "retry.enabled", json_true(), err, sizeof(err)), 0);
	ck_assert(settings_bool(&s, "retry.enabled", false));
	/* Other overrides stay. */
	ck_assert_int_eq(settings_int(&s, "retry.maxRetries", -1), 9);
	ck_assert_ptr_null(json_object_get(json_object_get(s.overrides, "retry"), "enabled"));
	settings_release(&s);
}
END_TEST

START_TEST(test_persist_under_a_file_fails_but_keeps_the_value)
{
	struct settings s;
	char err[512] = "", path[128], file[128], want[512];

	/* As root, a read-only directory would not stop the write; a path
	 * through a regular file does (ENOTDIR). */
	in_tmp(path, sizeof(path), "plain/settings.json");
	ck_assert_int_eq(settings_init(&s, path, err, sizeof(err)), 0);
	write_text(in_tmp(file, sizeof(file), "plain"), "x");
	ck_assert_int_eq(settings_persist(&s, "retry.maxRetries", json_integer(4), err,
					  sizeof(err)), -1);
	snprintf(want, sizeof(want), "could not save settings to %s: cannot open the lock file "
		 "%s/.settings.json.lock: %s", path, file, strerror(ENOTDIR));
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(settings_int(&s, "retry.maxRetries", -1), 4);
	ck_assert_int_eq(count_entries(tmpdir), 1);
	settings_release(&s);
}
END_TEST

START_TEST(test_failed_rename_leaves_no_temp_file)
{
	struct settings s;
	char err[512] = "", path[128], want[512];

	load(&s, NULL);
	/* The target turns into a directory: the temp file is written, the
	 * rename fails. */
	ck_assert_int_eq(mkdir(in_tmp(path, sizeof(path), "settings.json"), 0700), 0);
	ck_assert_int_eq(settings_persist(&s, "retry.enabled", json_false(), err, sizeof(err)), -1);
	/* Read again before it is written: a directory is not read. */
	snprintf(want, sizeof(want), "could not save settings to %s: %s; the file was left as it "
		 "is", path, strerror(EISDIR));
	ck_assert_str_eq(err, want);
	ck_assert(!settings_bool(&s, "retry.enabled", true));
	ck_assert_int_eq(count_entries(tmpdir), 1);
	settings_release(&s);
}
END_TEST

START_TEST(test_persist_rejects_a_bad_value_and_writes_nothing)
{
	struct settings s;
	char err[512] = "";

	load(&s, NULL);
	ck_assert_int_eq(settings_persist(&s, "retry.enabled", json_integer(1), err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "retry.enabled must be true or false (got 1)");
	ck_assert(settings_bool(&s, "retry.enabled", false));
	ck_assert_int_eq(count_entries(tmpdir), 0);
	settings_release(&s);
}
END_TEST

START_TEST(test_persist_without_a_path_fails_clearly)
{
	struct settings s;
	char err[512] = "";

	unsetenv("XDG_CONFIG_HOME");
	unsetenv("HOME");
	ck_assert_int_eq(settings_init(&s, NULL, err, sizeof(err)), 0);
	ck_assert_ptr_null(s.path);
	ck_assert_int_eq(settings_persist(&s, "retry.enabled", json_false(), err, sizeof(err)), -1);
	ck_assert_str_eq(err, "could not save settings: no settings file path "
			 "(neither XDG_CONFIG_HOME nor HOME is set)");
	ck_assert(!settings_bool(&s, "retry.enabled", true));
	settings_release(&s);
}
END_TEST

START_TEST(test_xdg_config_home_selects_the_path)
{
	struct settings s;
	char err[512] = "", want[256];

	setenv("XDG_CONFIG_HOME", tmpdir, 1);
	setenv("HOME", "/nonexistent-home", 1);
	ck_assert_int_eq(settings_init(&s, NULL, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s/retryd/settings.json", tmpdir);
	ck_assert_str_eq(s.path, want);
	ck_assert_int_eq(settings_persist(&s, "retry.maxRetries", json_integer(2), err,
					  sizeof(err)), 0);
	ck_assert_int_eq(access(want, R_OK), 0);
	settings_release(&s);
}
END_TEST

START_TEST(test_relative_or_empty_xdg_falls_back_to_home)
{
	static const char *ignored[] = { "", "relative/dir" };
	struct settings s;
	char err[512] = "", want[256];

	setenv("HOME", tmpdir, 1);
	snprintf(want, sizeof(want), "%s/.config/retryd/settings.json", tmpdir);
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
		setenv("XDG_CONFIG_HOME", ignored[i], 1);
		ck_assert_int_eq(settings_init(&s, NULL, err, sizeof(err)), 0);
		ck_assert_str_eq(s.path, want);
		settings_release(&s);
	}
	unsetenv("XDG_CONFIG_HOME");
	ck_assert_int_eq(settings_init(&s, NULL, err, sizeof(err)), 0);
	ck_assert_str_eq(s.path, want);
	settings_release(&s);
}
END_TEST

START_TEST(test_table_defaults_alone_pass_their_own_checks)
{
	struct settings s;
	char path[128], err[512] = "";

	in_tmp(path, sizeof(path), "settings.json");
	ck_assert_msg(settings_init(&s, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(settings_check("", s.defaults, err, sizeof(err)), 0);
	/* What other modules define is left to the built-in layer. */
	ck_assert_ptr_null(settings_get(&s, "retry.retryablePatterns"));
	ck_assert_int_eq(json_object_size(settings_get(&s, "providers")), 0);
	/* A key without a default stays absent. */
	ck_assert_ptr_null(settings_get(&s, "retry.jitterSeed"));
	ck_assert_int_eq(settings_get_int(&s, "retry.maxRetries"), 3);
	settings_release(&s);
}
END_TEST

START_TEST(test_builtin_layer_sits_between_table_and_file)
{
	struct settings s;
	char path[128], err[512] = "";
	json_t *builtins = json_pack("{s:{s:i, s:i}, s:{s:{s:s}}}", "retry", "maxRetries", 4,
				     "baseDelayMs", 10, "providers", "mine", "api", "x");

	in_tmp(path, sizeof(path), "settings.json");
	write_text(path, "{\"retry\": {\"baseDelayMs\": 20}}");
	ck_assert_msg(settings_load(&s, builtins, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(settings_get_int(&s, "retry.maxRetries"), 4);
	ck_assert_int_eq(settings_get_int(&s, "retry.baseDelayMs"), 20);
	ck_assert_int_eq(settings_get_int(&s, "retry.maxDelayMs"), 60000);
	ck_assert_str_eq(settings_string(&s, "providers.mine.api", "?"), "x");
	/* The file layer holds only the file. */
	ck_assert_ptr_null(json_object_get(json_object_get(s.file, "retry"), "maxRetries"));
	settings_release(&s);
	json_decref(builtins);
}
END_TEST

START_TEST(test_builtin_layer_is_checked_against_the_table)
{
	struct settings s;
	char path[128], err[512] = "";
	json_t *builtins = json_pack("{s:{s:s}}", "retry", "maxRetries", "x");

	in_tmp(path, sizeof(path), "settings.json");
	ck_assert_int_eq(settings_load(&s, builtins, path, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "settings: built-in layer: retry.maxRetries must be an integer "
		"from 0 to 1000 (got \"x\")");
	ck_assert_ptr_null(s.effective);
	json_decref(builtins);
}
END_TEST

START_TEST(test_defaults_keep_the_order_get_retry_policy_shows)
{
	static const char want[] = "{\"enabled\":true,\"maxRetries\":3,\"baseDelayMs\":2000,"
		"\"usageLimitCooldownMs\":1800000,\"maxDelayMs\":60000,\"respectServerHints\":true,"
		"\"jitter\":\"none\",\"schedule\":[],\"budget\":null,\"idleTimeoutMs\":0,"
		"\"fallbackModels\":[],\"fallbackAfterConsecutive\":3,\"fallbackCooldownMs\":60000,"
		"\"continuationPrompt\":\"Continue from where you left off. Do not repeat work that "
		"is already done.\",\"continueCutAnswers\":\"lossless\",\"unknownRetries\":1,\"usageLimitWait\":\"off\","
		"\"maxUsageWaitMs\":21600000,\"usageWaitHeartbeatMs\":60000,\"retryablePatterns\":[";
	struct settings s;
	char *text;

	load(&s, NULL);
	text = json_dumps(settings_get(&s, "retry"), JSON_COMPACT);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strncmp(text, want, sizeof(want) - 1) == 0, "%s", text);
	free(text);
	text = json_dumps(s.defaults, JSON_COMPACT);
	ck_assert_ptr_nonnull(strstr(text, "},\"rpc\":{\"maxLineBytes\":67108864,"
		"\"outputHighWaterBytes\":1048576,\"messageUpdates\":\"full\"},\"sim\":{\"plan\":[],"
		"\"chunkDelayMs\":0,\"shareFleet\":false,\"credentials\":[],\"models\":[\"sim-1\"]},"
			     "\"http\":{"
		"\"connectTimeoutMs\":30000,\"idleTimeoutMs\":300000},\"providers\":{\"openai\":"));
	free(text);
	settings_release(&s);
}
END_TEST

START_TEST(test_table_answers_known_keys_and_defaults)
{
	ck_assert(settings_known("retry.maxRetries"));
	ck_assert(settings_known("retry.jitterSeed"));
	ck_assert(settings_known("retry.usageLimitPatterns"));
	ck_assert(settings_known("retry"));
	ck_assert(!settings_known("retry.newKnob"));
	ck_assert(!settings_known("providers.openai"));
	ck_assert_int_eq(settings_default_int("retry.maxRetries"), 3);
	ck_assert_int_eq(settings_default_int("retry.usageLimitCooldownMs"), 1800000);
	ck_assert_int_eq(settings_default_int("http.idleTimeoutMs"), 300000);
	ck_assert(settings_default_bool("retry.respectServerHints"));
	ck_assert_str_eq(settings_default_string("retry.jitter"), "none");
	ck_assert_str_eq(settings_default_string("rpc.messageUpdates"), "full");
}
END_TEST

START_TEST(test_table_getters_read_the_effective_value)
{
	struct settings s;

	load(&s, "{\"rpc\": {\"messageUpdates\": \"delta\"}, \"retry\": {\"enabled\": false}}");
	ck_assert_str_eq(settings_get_string(&s, "rpc.messageUpdates"), "delta");
	ck_assert(!settings_get_bool(&s, "retry.enabled"));
	ck_assert_int_eq(settings_get_int(&s, "rpc.maxLineBytes"), 64 << 20);
	settings_release(&s);
}
END_TEST

Suite *settings_suite(void)
{
	Suite *s = suite_create("settings");
	TCase *load_tc = tcase_create("load");
	TCase *set_tc = tcase_create("override");
	TCase *persist_tc = tcase_create("persist");
	TCase *path_tc = tcase_create("path");

	tcase_add_checked_fixture(load_tc, setup, teardown);
	tcase_add_test(load_tc, test_missing_file_means_defaults);
	tcase_add_test(load_tc, test_defaults_include_classify_pattern_lists);
	tcase_add_test(load_tc, test_blank_file_means_defaults);
	tcase_add_test(load_tc, test_file_merges_over_defaults_keeping_sibling_defaults);
	tcase_add_test(load_tc, test_file_array_replaces_default_array);
	tcase_add_test(load_tc, test_syntax_error_names_line_and_column);
	tcase_add_test(load_tc, test_duplicate_key_in_file_is_an_error);
	tcase_add_test(load_tc, test_file_that_is_not_an_object_is_an_error);
	tcase_add_test(load_tc, test_wrong_type_in_file_is_an_error);
	tcase_add_test(load_tc, test_out_of_range_in_file_is_an_error);
	tcase_add_test(load_tc, test_directory_as_path_is_an_error);
	tcase_add_test(load_tc, test_path_through_a_file_is_an_error);
	tcase_add_test(load_tc, test_unknown_keys_are_refused_naming_the_nearest);
	tcase_add_test(load_tc, test_set_of_an_unknown_key_is_refused);
	tcase_add_test(load_tc, test_open_sections_and_leaves_keep_their_own_members);
	tcase_add_test(load_tc, test_suggest_finds_the_nearest_key);
	tcase_add_test(load_tc, test_check_file_lists_every_problem);
	tcase_add_test(load_tc, test_origin_says_which_layer_a_value_comes_from);
	tcase_add_test(load_tc, test_check_reports_known_keys_and_passes_unknown);
	tcase_add_test(load_tc, test_typed_getters_fall_back);
	tcase_add_test(load_tc, test_table_defaults_alone_pass_their_own_checks);
	tcase_add_test(load_tc, test_builtin_layer_sits_between_table_and_file);
	tcase_add_test(load_tc, test_builtin_layer_is_checked_against_the_table);
	tcase_add_test(load_tc, test_defaults_keep_the_order_get_retry_policy_shows);
	tcase_add_test(load_tc, test_table_answers_known_keys_and_defaults);
	tcase_add_test(load_tc, test_table_getters_read_the_effective_value);
	suite_add_tcase(s, load_tc);

	tcase_add_checked_fixture(set_tc, setup, teardown);
	tcase_add_test(set_tc, test_override_beats_file);
	tcase_add_test(set_tc, test_set_value_is_parsed_as_json);
	tcase_add_test(set_tc, test_set_value_that_is_not_json_is_a_string);
	tcase_add_test(set_tc, test_set_dotted_key_creates_nested_objects);
	tcase_add_test(set_tc, test_set_whole_section_merges_and_is_checked);
	tcase_add_test(set_tc, test_set_without_equals_is_an_error);
	tcase_add_test(set_tc, test_set_key_with_empty_name_is_an_error);
	tcase_add_test(set_tc, test_set_wrong_type_is_an_error);
	tcase_add_test(set_tc, test_set_out_of_range_is_an_error);
	tcase_add_test(set_tc, test_set_section_to_non_object_is_an_error);
	tcase_add_test(set_tc, test_error_quotes_long_values_shortened);
	suite_add_tcase(s, set_tc);

	tcase_add_checked_fixture(persist_tc, setup, teardown);
	tcase_add_test(persist_tc, test_persist_writes_file_keeping_other_keys);
	tcase_add_test(persist_tc, test_persisted_value_is_read_back);
	tcase_add_test(persist_tc, test_persist_creates_directories);
	tcase_add_test(persist_tc, test_persist_leaves_no_temp_file);
	tcase_add_test(persist_tc, test_persist_drops_the_override_of_that_key);
	tcase_add_test(persist_tc, test_persist_under_a_file_fails_but_keeps_the_value);
	tcase_add_test(persist_tc, test_failed_rename_leaves_no_temp_file);
	tcase_add_test(persist_tc, test_persist_rejects_a_bad_value_and_writes_nothing);
	suite_add_tcase(s, persist_tc);

	tcase_add_checked_fixture(path_tc, setup, teardown);
	tcase_add_test(path_tc, test_persist_without_a_path_fails_clearly);
	tcase_add_test(path_tc, test_usage_wait_keys_refuse_bad_values_with_a_sentence);
	tcase_add_test(path_tc, test_xdg_config_home_selects_the_path);
	tcase_add_test(path_tc, test_relative_or_empty_xdg_falls_back_to_home);
	suite_add_tcase(s, path_tc);

	return s;
}

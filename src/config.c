/* config — the settings a command line makes (config.h says what each
 * function owns). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "base/log.h"
#include "base/secret.h"
#include "core/builtins.h"
#include "core/classify.h"
#include "core/settings.h"
#include "provider/http/base_url.h"
#include "provider/provider_sim.h"

/* An explicit --settings must name a file (a typo there would otherwise
 * run on the defaults and persist into a new file); the default path may be
 * absent. Returns 0, or 1 having said why. */
static int check_settings_path(const char *path)
{
	struct stat st;

	if (path == NULL || stat(path, &st) == 0 || errno != ENOENT)
		return 0;
	fprintf(stderr, "retryd: settings file %s: no such file (--settings names a file that "
		"must exist; leave --settings out to use the default path)\n", path);
	return 1;
}

int config_load(struct settings *settings, struct classify **classify, const char *path,
		const char *const *sets, size_t nsets, const char *sim_plan)
{
	char err[1024];
	json_t *builtins;
	int rc;

	if (check_settings_path(path) != 0)
		return 1;
	builtins = builtins_settings_env();
	if (builtins == NULL) {
		fprintf(stderr, "retryd: settings: out of memory\n");
		return 1;
	}
	rc = settings_load(settings, builtins, path, err, sizeof(err));
	json_decref(builtins);
	if (rc != 0) {
		fprintf(stderr, "retryd: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < nsets; i++) {
		if (settings_override(settings, sets[i], err, sizeof(err)) != 0) {
			fprintf(stderr, "retryd: %s\n", err);
			return 1;
		}
	}
	if (sim_plan != NULL) {
		json_error_t jerr;
		json_t *plan = json_loads(sim_plan, 0, &jerr);

		if (plan == NULL) {
			fprintf(stderr, "retryd: --sim-plan: not valid JSON: %s (at character %d)\n",
				jerr.text, jerr.position);
			return 1;
		}
		if (settings_override_value(settings, "sim.plan", plan, err, sizeof(err)) != 0) {
			fprintf(stderr, "retryd: --sim-plan: %s\n", err);
			return 1;
		}
	}
	if (provider_sim_check_plan(settings_get(settings, "sim.plan"), err, sizeof(err)) != 0) {
		fprintf(stderr, "retryd: %s\n", err);
		return 1;
	}
	*classify = classify_new(settings_get(settings, "retry"), err, sizeof(err));
	if (*classify == NULL) {
		fprintf(stderr, "retryd: %s\n", err);
		return 1;
	}
	return 0;
}

int config_classify(struct classify *classify, const char *text)
{
	struct timespec ts;
	struct classify_input in = { .text = text, .len = strlen(text) };
	struct classify_result r;
	json_t *out;
	char *line;

	clock_gettime(CLOCK_REALTIME, &ts);
	in.now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	classify_decide(classify, &in, &r);
	out = classify_result_json(&r);
	line = out ? json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(out);
	if (line == NULL) {
		fprintf(stderr, "retryd: --classify: out of memory\n");
		return 1;
	}
	puts(line);
	free(line);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* Retries that are off say so at the start: a set_auto_retry false persists
 * in the shared settings file and would otherwise silently stop every later
 * daemon on the machine from retrying. */
void config_warn_if_retries_off(const struct settings *s)
{
	if (settings_get_bool(s, "retry.enabled"))
		return;
	if (settings_origin(s, "retry.enabled") == SETTINGS_ORIGIN_OVERRIDE)
		LOG_WARN("retries are off: --set retry.enabled=false; leave that --set out to turn "
			 "them back on");
	else
		LOG_WARN("retries are off: retry.enabled is false in %s (written by set_auto_retry "
			 "or by hand); turn them back on with {\"type\":\"set_auto_retry\","
			 "\"enabled\":true}, --set retry.enabled=true, or by removing the key from that "
			 "file", s->path);
}

/* `retryd config`: whether a member named `name` holds a secret string:
 * apiKey, a password, or an environment variable or header with a secret's
 * name (OPENAI_API_KEY, X-Api-Key). A camelCase field path such as
 * inputTokens or apiKeyEnv names where a value is, not a secret. */
static bool secret_key(const char *name)
{
	size_t n = strlen(name);
	bool lower = false;

	if (strcasecmp(name, "apiKey") == 0 || strcasecmp(name, "password") == 0)
		return true;
	for (size_t i = 0; i < n; i++)
		lower = lower || (name[i] >= 'a' && name[i] <= 'z');
	return secret_name(name, n) && (strpbrk(name, "_-") != NULL || !lower);
}

/* "scheme://user:password@host" loses what stands before the '@'. */
static void mask_userinfo(json_t *v)
{
	char *shown = secret_url_shown(json_string_value(v));

	if (shown != NULL)
		json_string_set(v, shown);
	free(shown);
}

/* Masks, in place, every string that a secret's name holds (name: the
 * member's own name, or NULL) and every key-shaped token. */
static void mask_config_value(json_t *v, const char *name)
{
	const char *member;
	json_t *child;
	size_t i;

	if (json_is_string(v)) {
		if (name != NULL && secret_key(name))
			json_string_set(v, SECRET_MASK);
		else
			mask_userinfo(v);
	} else if (json_is_object(v)) {
		json_object_foreach(v, member, child)
			mask_config_value(child, member);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, child)
			mask_config_value(child, name);
	}
}

/* What `retryd config` prints in one pass: the provider entries are long,
 * so the keys people look for (retry.*) come first. */
struct config_pass {
	const struct settings *settings;
	bool providers;
};

static bool is_provider_key(const char *key)
{
	return strncmp(key, "providers.", 10) == 0;
}

/* origin, then path (NULL: none), make the line's first column. */
static void print_line(const char *origin, const char *path, const char *key, const json_t *value)
{
	const char *dot = strrchr(key, '.');
	json_t *copy = json_deep_copy(value);
	char *text;

	if (copy == NULL)
		return;
	mask_config_value(copy, dot != NULL ? dot + 1 : key);
	secret_mask_json(copy);
	text = json_dumps(copy, JSON_ENCODE_ANY | JSON_COMPACT | JSON_PRESERVE_ORDER |
			  JSON_REAL_PRECISION(15));
	json_decref(copy);
	if (text != NULL)
		printf("%s%s\t%s=%s\n", origin, path != NULL ? path : "", key, text);
	free(text);
}

/* Whether a layer (borrowed, may be NULL) holds providers.NAME.baseUrl. */
static bool layer_sets_base_url(const json_t *layer, const char *name)
{
	return json_object_get(json_object_get(json_object_get(layer, "providers"), name),
			       "baseUrl") != NULL;
}

/* A built-in provider's baseUrl that an SDK's environment variable set gets
 * a line of its own, naming the variable: "env OPENAI_BASE_URL". */
static void print_env_base_url(const struct settings *s, const char *key, const json_t *entry)
{
	const char *name = key + 10, *var;
	const json_t *url = json_object_get(entry, "baseUrl");
	char origin[80], line_key[200];

	if (!json_is_string(url) || layer_sets_base_url(s->file, name) ||
	    layer_sets_base_url(s->overrides, name))
		return;
	var = base_url_env_of(name, json_string_value(url));
	if (var == NULL)
		return;
	snprintf(origin, sizeof(origin), "env %s", var);
	snprintf(line_key, sizeof(line_key), "%s.baseUrl", key);
	print_line(origin, NULL, line_key, url);
}

/* One line of `retryd config`: ORIGIN<TAB>KEY=JSON. */
static void print_setting(void *ctx, const char *key, const json_t *value,
			  enum settings_origin origin)
{
	const struct config_pass *pass = ctx;
	const struct settings *s = pass->settings;

	if (is_provider_key(key) != pass->providers)
		return;
	if (origin == SETTINGS_ORIGIN_FILE)
		print_line("file:", s->path, key, value);
	else
		print_line(settings_origin_name(origin), NULL, key, value);
	if (pass->providers)
		print_env_base_url(s, key, value);
}

int config_check(const char *path)
{
	json_t *problems = settings_check_file(path), *builtins, *p;
	struct settings s;
	char err[1024];
	size_t i;

	if (problems == NULL) {
		fprintf(stderr, "retryd: out of memory\n");
		return 1;
	}
	/* What the table cannot say: the plan's steps, the patterns compile. */
	builtins = json_array_size(problems) == 0 ? builtins_settings() : NULL;
	if (builtins != NULL && settings_load(&s, builtins, path, err, sizeof(err)) == 0) {
		struct classify *c;

		if (provider_sim_check_plan(settings_get(&s, "sim.plan"), err, sizeof(err)) != 0)
			json_array_append_new(problems, json_string(err));
		c = classify_new(settings_get(&s, "retry"), err, sizeof(err));
		if (c == NULL)
			json_array_append_new(problems, json_string(err));
		classify_free(c);
		settings_release(&s);
	}
	json_decref(builtins);
	if (json_array_size(problems) == 0)
		printf("%s: ok\n", path);
	json_array_foreach(problems, i, p)
		fprintf(stderr, "%s: %s\n", path, json_string_value(p));
	i = json_array_size(problems);
	json_decref(problems);
	return i == 0 && fflush(stdout) == 0 ? 0 : 1;
}

int config_print(const char *path, const char *const *sets, size_t nsets)
{
	struct settings s;
	json_t *builtins;
	char err[1024];
	int rc = 0;

	if (check_settings_path(path) != 0)
		return 1;
	builtins = builtins_settings_env();
	if (builtins == NULL || settings_load(&s, builtins, path, err, sizeof(err)) != 0) {
		fprintf(stderr, "retryd: %s\n", builtins != NULL ? err : "out of memory");
		json_decref(builtins);
		return 1;
	}
	json_decref(builtins);
	for (size_t i = 0; i < nsets && rc == 0; i++) {
		if (settings_override(&s, sets[i], err, sizeof(err)) != 0) {
			fprintf(stderr, "retryd: %s\n", err);
			rc = 1;
		}
	}
	if (rc == 0 && (settings_foreach(&s, print_setting, &(struct config_pass){ &s, false }) != 0 ||
			settings_foreach(&s, print_setting, &(struct config_pass){ &s, true }) != 0)) {
		fprintf(stderr, "retryd: out of memory\n");
		rc = 1;
	}
	settings_release(&s);
	if (rc == 0 && fflush(stdout) != 0)
		rc = 1;
	return rc;
}

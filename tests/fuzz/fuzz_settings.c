/* Fuzz target "settings": the settings loader (src/core/settings.c, with the
 * daemon's built-in layer) on a real file, --set overrides, and what the
 * daemon compiles from the result at start-up: the sim plan check, the
 * classifier's pattern lists (src/core/classify_patterns.c), the resolved retry policy
 * (src/core/policy.c) and every configured HTTP provider's entry
 * (provider_http_new builds it without touching the network).
 *
 * Input: the settings file's bytes up to the first NUL; each later
 * NUL-separated piece is one --set KEY=VALUE (at most 8).
 *
 * Invariants: error texts are NUL-terminated; a file that loads can be
 * written back (settings_persist) and loads again to the same file layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/builtins.h"
#include "core/classify.h"
#include "core/policy.h"
#include "core/settings.h"
#include "fuzz.h"
#include "provider/http/provider_http.h"
#include "provider/provider_sim.h"

#define MAX_SETS 8
#define MAX_PROVIDERS 8

static void check_err(const char *err, size_t cap)
{
	FUZZ_CHECK(strnlen(err, cap) < cap, "error text not NUL-terminated");
}

static int write_file(const char *path, const uint8_t *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int rc;

	if (f == NULL)
		return -1;
	rc = fwrite(data, 1, len, f) == len ? 0 : -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* What main.c and the session build from the settings. */
static void compile_all(struct settings *s)
{
	char err[1024];
	struct classify *c;
	json_t *policy, *providers, *v;
	struct clock clock;
	const char *name;
	size_t n = 0;

	if (provider_sim_check_plan(settings_get(s, "sim.plan"), err, sizeof(err)) != 0)
		check_err(err, sizeof(err));
	c = classify_new(settings_get(s, "retry"), err, sizeof(err));
	if (c == NULL)
		check_err(err, sizeof(err));
	classify_free(c);
	policy = policy_resolve(s, NULL, err, sizeof(err));
	if (policy == NULL)
		check_err(err, sizeof(err));
	json_decref(policy);
	(void)settings_get_int(s, "rpc.maxLineBytes");
	(void)settings_get_int(s, "rpc.outputHighWaterBytes");
	(void)settings_get_string(s, "rpc.messageUpdates");
	(void)settings_get_bool(s, "retry.enabled");

	clock_fake_init(&clock, 0);
	providers = settings_get(s, "providers");
	json_object_foreach(providers, name, v) {
		struct provider_http_config cfg = {
			.name = name,
			.entry = v,
			.connect_timeout_ms = (long)settings_get_int(s, "http.connectTimeoutMs"),
			.idle_timeout_ms = (long)settings_get_int(s, "http.idleTimeoutMs"),
		};
		struct provider *p;

		if (n++ == MAX_PROVIDERS)
			break;
		p = provider_http_new(NULL, &clock, &cfg, err, sizeof(err));
		if (p == NULL) {
			check_err(err, sizeof(err));
			continue;
		}
		FUZZ_CHECK(json_is_array(p->models), "provider %s without a model list", name);
		p->ops->free(p);
	}
}

/* Built once, as the daemon builds it once; kept for the process. */
static json_t *builtins;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[256], err[1024];
	const uint8_t *nul = memchr(data, '\0', size);
	size_t file_len = nul ? (size_t)(nul - data) : size;
	struct settings s, again;
	json_t *file;

	snprintf(path, sizeof(path), "%s/settings.json", fuzz_tmpdir());
	if (write_file(path, data, file_len) != 0)
		return 0;
	if (builtins == NULL)
		builtins = builtins_settings();
	FUZZ_CHECK(builtins != NULL, "no built-in settings layer");
	if (settings_load(&s, builtins, path, err, sizeof(err)) != 0) {
		check_err(err, sizeof(err));
		unlink(path);
		return 0;
	}
	/* The --set pieces. */
	if (nul != NULL) {
		const uint8_t *p = nul + 1, *end = data + size;

		for (int i = 0; i < MAX_SETS && p < end; i++) {
			const uint8_t *q = memchr(p, '\0', (size_t)(end - p));
			size_t n = q ? (size_t)(q - p) : (size_t)(end - p);
			char *assignment = strndup((const char *)p, n);

			if (assignment == NULL)
				break;
			if (settings_override(&s, assignment, err, sizeof(err)) != 0)
				check_err(err, sizeof(err));
			free(assignment);
			p += n + 1;
		}
	}
	compile_all(&s);

	/* What set_auto_retry does: the file is rewritten and must load back. */
	if (settings_persist(&s, "retry.enabled", json_false(), err, sizeof(err)) == 0) {
		file = json_deep_copy(s.file);
		FUZZ_CHECK(settings_load(&again, builtins, path, err, sizeof(err)) == 0,
			   "a settings file retryd wrote does not load: %s", err);
		FUZZ_CHECK(json_equal(again.file, file), "the file layer changed on the way back");
		settings_release(&again);
		json_decref(file);
	} else {
		check_err(err, sizeof(err));
	}
	settings_release(&s);
	unlink(path);
	return 0;
}

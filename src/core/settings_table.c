#include "core/settings_table.h"

#include "base/errbuf.h"
#include "base/utf8.h"
#include "core/settings_file.h"
#include "core/settings_key.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DAY_MS (24LL * 60 * 60 * 1000)
#define GIB (1024LL * 1024 * 1024)

/* How much of an offending value an error message quotes. */
#define GOT_MAX 60

#define SECTION(k)          { .key = k, .kind = SETTINGS_RULE_OBJECT, .text = "{}" }
#define OPEN_SECTION(k)     { .key = k, .kind = SETTINGS_RULE_OBJECT, .open = true, .text = "{}" }
#define BOOL(k, d)          { .key = k, .kind = SETTINGS_RULE_BOOL, .number = (d) }
#define INT(k, lo, hi, d)   { .key = k, .kind = SETTINGS_RULE_INT, .min = (lo), .max = (hi), \
			      .number = (d) }
#define INT_UNSET(k, lo, hi) { .key = k, .kind = SETTINGS_RULE_INT, .min = (lo), .max = (hi), \
			      .unset = true }
#define CHOICE(k, c, d)     { .key = k, .kind = SETTINGS_RULE_CHOICE, .choices = c, .text = d }
#define TEXT(k, d)          { .key = k, .kind = SETTINGS_RULE_TEXT, .text = d }
#define JSON(k, kind_, d)   { .key = k, .kind = kind_, .text = d }
#define DELAYS(k, hi, d)    { .key = k, .kind = SETTINGS_RULE_DELAYS, .max = (hi), .text = d }
#define BUDGET(k, hi, d)    { .key = k, .kind = SETTINGS_RULE_BUDGET, .max = (hi), .text = d }

/* One row per known key. A section's own row comes before its members, so a
 * "retry" that is not an object is reported as such, and the defaults' keys
 * keep this order (get_retry_policy shows it). Under a section every name
 * must be a row, except under an open one, whose members are names of its
 * own (providers, scopes). */
static const struct settings_rule rules[] = {
	SECTION("retry"),
	SECTION("rpc"),
	SECTION("sim"),
	SECTION("http"),
	/* Entries are checked when one is chosen (provider_http.c, cli_profile.c);
	 * the built-in ones come with the built-in layer. */
	OPEN_SECTION("providers"),
	SECTION("fleet"),
	SECTION("fleet.redis"),
	/* provider name -> "model" | "credential" | "provider"; checked by
	 * fleet_config_from_settings. */
	OPEN_SECTION("fleet.providerScopes"),
	INT("http.connectTimeoutMs",         0, DAY_MS, 30000),
	INT("http.idleTimeoutMs",            0, DAY_MS, 300000),
	BOOL("retry.enabled",                true),
	INT("retry.maxRetries",              0, 1000, 3),
	INT("retry.baseDelayMs",             0, DAY_MS, 2000),
	INT("retry.usageLimitCooldownMs",    0, 30 * DAY_MS, 1800000),
	INT("retry.maxDelayMs",              -30 * DAY_MS, 30 * DAY_MS, 60000),
	BOOL("retry.respectServerHints",     true),
	CHOICE("retry.jitter",               "none|full|equal|decorrelated", "none"),
	/* Absent: each chain seeds itself. */
	INT_UNSET("retry.jitterSeed",        0, 9007199254740991LL),
	DELAYS("retry.schedule",             30 * DAY_MS, "[]"),
	BUDGET("retry.budget",               1000, "null"),
	INT("retry.idleTimeoutMs",           0, DAY_MS, 0),
	JSON("retry.fallbackModels",         SETTINGS_RULE_STRINGS, "[]"),
	INT("retry.fallbackAfterConsecutive", 1, 1000, 3),
	INT("retry.fallbackCooldownMs",      0, 30 * DAY_MS, 60000),
	/* What a resumed agent CLI is told. */
	TEXT("retry.continuationPrompt",
	     "Continue from where you left off. Do not repeat work that is already done."),
	/* A cut answer's next attempt continues it (core/continuation):
	 * "lossless" where the API resumes or the model takes a prefill,
	 * "always" also by a continuation turn, "off" replays it. */
	CHOICE("retry.continueCutAnswers",   "lossless|always|off", "lossless"),
	/* The lists are classify's (its defaults, its pattern syntax). */
	JSON("retry.overloadPatterns",       SETTINGS_RULE_STRINGS, NULL),
	JSON("retry.retryablePatterns",      SETTINGS_RULE_STRINGS, NULL),
	JSON("retry.nonRetryablePatterns",   SETTINGS_RULE_STRINGS, NULL),
	JSON("retry.contextOverflowPatterns", SETTINGS_RULE_STRINGS, NULL),
	JSON("retry.usageLimitPatterns",     SETTINGS_RULE_STRINGS, NULL),
	/* A failure no rule knows: one more try (within maxRetries). */
	INT("retry.unknownRetries",          0, 1000, 1),
	/* A spent quota with nothing to switch to: end the prompt (off) or
	 * park it until the reset (wait), for unattended runs. */
	CHOICE("retry.usageLimitWait",       "off|wait", "off"),
	INT("retry.maxUsageWaitMs",          0, 30 * DAY_MS, 6LL * 60 * 60 * 1000),
	INT("retry.usageWaitHeartbeatMs",    1000, DAY_MS, 60000),
	INT("rpc.maxLineBytes",              1, GIB, 64LL << 20),
	INT("rpc.outputHighWaterBytes",      1024, GIB, 1LL << 20),
	CHOICE("rpc.messageUpdates",         "full|delta", "full"),
	JSON("sim.plan",                     SETTINGS_RULE_ARRAY, "[]"),
	INT("sim.chunkDelayMs",              0, 3600000, 0),
	/* The fleet (fleet.mode user or redis) hears a sim plan's failures only
	 * when this is true (a test of the fleet may set it). */
	BOOL("sim.shareFleet",               false),
	/* What many daemons share (core/fleet.h, docs/fleet.md). */
	CHOICE("fleet.mode",                 "process|user|redis", "user"),
	CHOICE("fleet.scope",                "model|credential|provider", "model"),
	TEXT("fleet.namespace",              "default"),
	TEXT("fleet.dir",                    NULL),
	TEXT("fleet.redis.url",              "redis://127.0.0.1:6379/0"),
	TEXT("fleet.redis.password",         NULL),
	INT("fleet.redis.timeoutMs",         1, 60000, 50),
	/* A reply past this drops the connection (io/redis.h). */
	INT("fleet.redis.maxReplyBytes",     1024, GIB, 1LL << 20),
	INT("fleet.rpm",                     0, 100000000, 0),
	INT("fleet.probeIntervalMs",         1, DAY_MS, 2000),
	INT("fleet.openAfter",               0, 1000, 3),
	INT("fleet.minSharedBlockMs",        0, 30 * DAY_MS, 1000),
	INT("fleet.maxSharedBlockMs",        0, 30 * DAY_MS, 6 * 3600 * 1000),
	BUDGET("fleet.retryBudget",          1000, "{\"maxTokens\": 10, \"tokenRatio\": 0.1}"),
	INT("fleet.concurrency",             0, 100000, 0),
	INT("fleet.leaseTtlMs",              100, DAY_MS, 30000),
	/* pi's setting: the thinking level a session starts at (clamped to
	 * what the model allows); set_thinking_level persists it. */
	CHOICE("defaultThinkingLevel",       "off|minimal|low|medium|high|xhigh", "medium"),
	JSON("sim.credentials",              SETTINGS_RULE_STRINGS, "[]"),
	JSON("sim.models",                   SETTINGS_RULE_SOME_STRINGS, "[\"sim-1\"]"),
};

#define NRULES (sizeof(rules) / sizeof(rules[0]))

const struct settings_rule *const settings_table_rules = rules;
const size_t settings_table_count = NRULES;

/* Other agents' names for a key, read as the key itself. A flag alias
 * (if_true set) is another agent's boolean for one of the key's words. */
static const struct alias {
	const char *alias;
	const char *key;
	const char *whose;
	const char *if_true, *if_false;
} aliases[] = {
	{ "retry.maxAgentDelayMs", "retry.maxDelayMs", "pi 1.6's", NULL, NULL },
	{ "retry.waitForUsageReset", "retry.usageLimitWait", "oh-my-pi's", "wait", "off" },
};

#define NALIASES (sizeof(aliases) / sizeof(aliases[0]))

static const struct alias *alias_of(const char *key)
{
	for (size_t i = 0; i < NALIASES; i++)
		if (strcmp(aliases[i].alias, key) == 0)
			return &aliases[i];
	return NULL;
}

/* v (borrowed) as a value of the alias's key: a new reference, or NULL
 * with err when a flag alias is not a boolean. */
static json_t *alias_value(const struct alias *a, json_t *v, char *err, size_t errlen)
{
	if (a->if_true == NULL)
		return json_incref(v);
	if (!json_is_boolean(v)) {
		errbuf_set(err, errlen, "%s (%s name for %s) must be true or false", a->alias,
			   a->whose, a->key);
		return NULL;
	}
	return json_string(json_is_true(v) ? a->if_true : a->if_false);
}

int settings_table_unalias_value(const char **key, json_t **value, char *err, size_t errlen)
{
	const struct alias *a = alias_of(*key);
	json_t *v;

	if (a == NULL)
		return 0;
	v = alias_value(a, *value, err, errlen);
	if (v == NULL)
		return -1;
	json_decref(*value);
	*value = v;
	*key = a->key;
	return 0;
}

int settings_table_unalias(json_t *layer, char *err, size_t errlen)
{
	for (size_t i = 0; i < NALIASES; i++) {
		json_t *v = settings_key_get(layer, aliases[i].alias);
		json_t *own = settings_key_get(layer, aliases[i].key);
		json_t *as_key;

		if (v == NULL)
			continue;
		as_key = alias_value(&aliases[i], v, err, errlen);
		if (as_key == NULL)
			return -1;
		if (own != NULL && !json_equal(own, as_key)) {
			json_decref(as_key);
			return errbuf_set(err, errlen, "%s is %s name for %s, and both are set to "
					  "different values; keep one", aliases[i].alias,
					  aliases[i].whose, aliases[i].key);
		}
		if (settings_key_set(layer, aliases[i].key, as_key) < 0)
			return errbuf_set(err, errlen, "out of memory");
		settings_key_del(layer, aliases[i].alias);
	}
	return 0;
}

const struct settings_rule *settings_table_find(const char *key)
{
	for (size_t i = 0; i < NRULES; i++)
		if (strcmp(rules[i].key, key) == 0)
			return &rules[i];
	return NULL;
}

bool settings_table_has_default(const struct settings_rule *r)
{
	switch (r->kind) {
	case SETTINGS_RULE_BOOL:
		return true;
	case SETTINGS_RULE_INT:
		return !r->unset;
	default:
		return r->text != NULL;
	}
}

json_t *settings_table_default(const struct settings_rule *r)
{
	switch (r->kind) {
	case SETTINGS_RULE_BOOL:
		return json_boolean(r->number != 0);
	case SETTINGS_RULE_INT:
		return json_integer(r->number);
	case SETTINGS_RULE_CHOICE:
	case SETTINGS_RULE_TEXT:
		return json_string(r->text);
	default:
		return json_loads(r->text, JSON_DECODE_ANY, NULL);
	}
}

/* Compact JSON of `value`, cut at GOT_MAX bytes on a UTF-8 boundary. */
static void describe(const json_t *value, char *out, size_t outlen)
{
	char *text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
	size_t len;

	if (text == NULL) {
		snprintf(out, outlen, "?");
		return;
	}
	len = strlen(text);
	if (len > GOT_MAX) {
		len = GOT_MAX;
		while (len > 0 && ((unsigned char)text[len] & 0xC0) == 0x80)
			len--;
		snprintf(out, outlen, "%.*s...", (int)len, text);
	} else {
		snprintf(out, outlen, "%s", text);
	}
	free(text);
}

static bool is_string_array(const json_t *value, size_t *bad)
{
	for (size_t i = 0; i < json_array_size(value); i++) {
		if (!json_is_string(json_array_get(value, i))) {
			*bad = i;
			return false;
		}
	}
	return true;
}

static int check_budget(const struct settings_rule *r, const json_t *value, char *err, size_t errlen)
{
	static const char *const fields[] = { "maxTokens", "tokenRatio" };
	char got[GOT_MAX + 8];
	const char *name;
	json_t *v;

	if (json_is_null(value))
		return 0;
	if (!json_is_object(value)) {
		describe(value, got, sizeof(got));
		errbuf_set(err, errlen, "%s must be null or {\"maxTokens\": N, \"tokenRatio\": R} (got %s)",
			r->key, got);
		return -1;
	}
	for (size_t i = 0; i < 2; i++) {
		v = json_object_get(value, fields[i]);
		if (json_is_number(v) && json_number_value(v) > 0 &&
		    json_number_value(v) <= (double)r->max)
			continue;
		describe(v ? v : json_null(), got, sizeof(got));
		errbuf_set(err, errlen, "%s.%s must be a number above 0 and at most %" JSON_INTEGER_FORMAT
			" (got %s)", r->key, fields[i], r->max, got);
		return -1;
	}
	json_object_foreach((json_t *)value, name, v) {
		if (strcmp(name, "maxTokens") != 0 && strcmp(name, "tokenRatio") != 0) {
			errbuf_set(err, errlen, "%s has no key \"%.40s\" (only maxTokens and tokenRatio)",
				r->key, name);
			return -1;
		}
	}
	return 0;
}

static int check_rule(const struct settings_rule *r, const json_t *value, char *err, size_t errlen)
{
	char got[GOT_MAX + 8];
	size_t bad = 0;

	switch (r->kind) {
	case SETTINGS_RULE_OBJECT:
		if (json_is_object(value))
			return 0;
		describe(value, got, sizeof(got));
		errbuf_set(err, errlen, "%s must be an object (got %s)", r->key, got);
		return -1;
	case SETTINGS_RULE_BOOL:
		if (json_is_boolean(value))
			return 0;
		describe(value, got, sizeof(got));
		errbuf_set(err, errlen, "%s must be true or false (got %s)", r->key, got);
		return -1;
	case SETTINGS_RULE_INT:
		if (json_is_integer(value) && json_integer_value(value) >= r->min &&
		    json_integer_value(value) <= r->max)
			return 0;
		describe(value, got, sizeof(got));
		errbuf_set(err, errlen,
			"%s must be an integer from %" JSON_INTEGER_FORMAT " to %" JSON_INTEGER_FORMAT
			" (got %s)", r->key, r->min, r->max, got);
		return -1;
	case SETTINGS_RULE_ARRAY:
		if (json_is_array(value))
			return 0;
		describe(value, got, sizeof(got));
		errbuf_set(err, errlen, "%s must be an array (got %s)", r->key, got);
		return -1;
	case SETTINGS_RULE_CHOICE:
		if (json_is_string(value)) {
			const char *v = json_string_value(value), *c = r->choices;
			size_t n = strlen(v);

			for (; c != NULL; c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL)
				if (strncmp(c, v, n) == 0 && (c[n] == '|' || c[n] == '\0'))
					return 0;
		}
		describe(value, got, sizeof(got));
		errbuf_set(err, errlen, "%s must be one of %s (got %s)", r->key, r->choices, got);
		return -1;
	case SETTINGS_RULE_DELAYS:
		if (!json_is_array(value) || json_array_size(value) > 64) {
			describe(value, got, sizeof(got));
			errbuf_set(err, errlen, "%s must be an array of at most 64 delays in ms (got %s)",
				r->key, got);
			return -1;
		}
		for (size_t i = 0; i < json_array_size(value); i++) {
			const json_t *d = json_array_get(value, i);

			if (json_is_integer(d) && json_integer_value(d) >= r->min &&
			    json_integer_value(d) <= r->max)
				continue;
			describe(d, got, sizeof(got));
			errbuf_set(err, errlen,
				"%s[%zu] must be an integer from %" JSON_INTEGER_FORMAT " to %"
				JSON_INTEGER_FORMAT " (got %s)", r->key, i, r->min, r->max, got);
			return -1;
		}
		return 0;
	case SETTINGS_RULE_BUDGET:
		return check_budget(r, value, err, errlen);
	case SETTINGS_RULE_TEXT:
		if (json_is_string(value) && json_string_length(value) > 0)
			return 0;
		describe(value, got, sizeof(got));
		errbuf_set(err, errlen, "%s must be a non-empty string (got %s)", r->key, got);
		return -1;
	case SETTINGS_RULE_STRINGS:
	case SETTINGS_RULE_SOME_STRINGS:
		if (!json_is_array(value) ||
		    (r->kind == SETTINGS_RULE_SOME_STRINGS && json_array_size(value) == 0)) {
			describe(value, got, sizeof(got));
			errbuf_set(err, errlen, "%s must be %s (got %s)", r->key,
				r->kind == SETTINGS_RULE_SOME_STRINGS ?
					"a non-empty array of strings" : "an array of strings",
				got);
			return -1;
		}
		if (is_string_array(value, &bad))
			return 0;
		describe(json_array_get(value, bad), got, sizeof(got));
		errbuf_set(err, errlen, "%s[%zu] must be a string (got %s)", r->key, bad, got);
		return -1;
	}
	return 0;
}

int settings_table_check_at(const char *key, const json_t *value, char *err, size_t errlen)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i < NRULES; i++) {
		const struct settings_rule *r = &rules[i];
		const json_t *v;

		if (klen == 0)
			v = settings_key_get(value, r->key);
		else if (strcmp(r->key, key) == 0)
			v = value;
		else if (strncmp(r->key, key, klen) == 0 && r->key[klen] == '.')
			v = settings_key_get(value, r->key + klen + 1);
		else
			continue;
		if (v != NULL && check_rule(r, v, err, errlen) < 0)
			return -1;
	}
	return 0;
}

/* Longer names are not compared (and are no typo of a table key). */
#define SUGGEST_MAX_LEN 96

/* Insertions, deletions, substitutions and swaps of two neighbours that
 * turn a into b, ignoring ASCII case (the optimal string alignment
 * distance); SIZE_MAX when either is longer than SUGGEST_MAX_LEN. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t rows[3][SUGGEST_MAX_LEN + 1];

	if (la > SUGGEST_MAX_LEN || lb > SUGGEST_MAX_LEN)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		rows[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *cur = rows[i % 3], *prev = rows[(i - 1) % 3], *prev2 = rows[(i + 1) % 3];
		int ca = tolower((unsigned char)a[i - 1]);

		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			int cb = tolower((unsigned char)b[j - 1]);
			size_t best = prev[j - 1] + (ca != cb);

			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && prev2[j - 2] + 1 < best)
				best = prev2[j - 2] + 1;
			cur[j] = best;
		}
	}
	return rows[la % 3][lb];
}

/* Whether row `r` is a section above `key` ("retry" for "retry.x"). */
static bool is_parent(const char *r, const char *key)
{
	size_t n = strlen(r);

	return strncmp(r, key, n) == 0 && key[n] == '.';
}

const char *settings_table_suggest(const char *key)
{
	size_t len = strlen(key), limit = len / 3 > 2 ? len / 3 : 2, best = SIZE_MAX, d;
	const char *found = NULL;

	for (size_t i = 0; i < NRULES; i++)
		if (strcasecmp(rules[i].key, key) == 0)
			return rules[i].key;
	for (size_t i = 0; i < NRULES; i++) {
		/* The section the unknown key sits in exists already. */
		if (is_parent(rules[i].key, key))
			continue;
		d = distance(key, rules[i].key);
		if (d < best) {
			best = d;
			found = rules[i].key;
		}
	}
	return best <= limit ? found : NULL;
}

/* Where a check's problems go: the first into err, where checking stops
 * (list NULL), or each one appended to list as a sentence (err is then the
 * scratch buffer). */
struct problems {
	json_t *list;
	char *err;
	size_t errlen;
	int count;
};

/* Records the problem now in p->err; returns whether checking stops. */
static bool problem_found(struct problems *p)
{
	p->count++;
	if (p->list == NULL)
		return true;
	json_array_append_new(p->list, json_string(utf8_repair(p->err)));
	return false;
}

/* The problem of an unknown `key` whose value is v: when v leads down one
 * path only ({"Retry": {"MaxRetries": 1}}, what a --set makes), the whole
 * path is named if a row is near it. */
static void unknown_name(const char *key, const json_t *v, struct problems *p)
{
	char path[SUGGEST_MAX_LEN + 1];
	const char *hint = NULL, *name;
	size_t n = (size_t)snprintf(path, sizeof(path), "%s", key);

	while (n < sizeof(path) && json_is_object(v) && json_object_size(v) == 1) {
		void *it = json_object_iter((json_t *)v);

		name = json_object_iter_key(it);
		v = json_object_iter_value(it);
		n += (size_t)snprintf(path + n, sizeof(path) - n, ".%s", name);
	}
	if (n < sizeof(path) && strcmp(path, key) != 0)
		hint = settings_table_suggest(path);
	if (hint == NULL)
		hint = settings_table_suggest(key);
	else
		key = path;
	if (hint != NULL)
		errbuf_set(p->err, p->errlen, "unknown setting \"%.100s\" (did you mean %s?)", key, hint);
	else
		errbuf_set(p->err, p->errlen, "unknown setting \"%.100s\" (retryd config lists the "
			   "known ones)", key);
}

/* Every member of `obj`, the object at dotted `prefix` ("" at the top), must
 * be a row of the table; a leaf's value and an open section's members are
 * not looked into here. Returns whether checking stops. */
static bool check_names(const char *prefix, const json_t *obj, struct problems *p)
{
	const char *name;
	json_t *v;

	json_object_foreach((json_t *)obj, name, v) {
		const struct settings_rule *r;
		size_t n = strlen(prefix) + strlen(name) + 2;
		char *key = malloc(n);
		bool stop = false;

		if (key == NULL) {
			errbuf_set(p->err, p->errlen, "out of memory");
			return problem_found(p);
		}
		snprintf(key, n, "%s%s%s", prefix, *prefix != '\0' ? "." : "", name);
		r = settings_table_find(key);
		if (r == NULL) {
			unknown_name(key, v, p);
			stop = problem_found(p);
		} else if (r->kind == SETTINGS_RULE_OBJECT && !r->open && json_is_object(v)) {
			stop = check_names(key, v, p);
		}
		free(key);
		if (stop)
			return true;
	}
	return false;
}

/* A whole layer (an object): unknown names, then each row's value. Returns
 * -1 when anything was wrong. */
static int check_layer(const json_t *layer, struct problems *p)
{
	if (check_names("", layer, p))
		return -1;
	for (size_t i = 0; i < NRULES; i++) {
		const json_t *v = settings_key_get(layer, rules[i].key);

		if (v != NULL && check_rule(&rules[i], v, p->err, p->errlen) < 0 && problem_found(p))
			return -1;
	}
	return p->count > 0 ? -1 : 0;
}

int settings_table_check_whole(const json_t *layer, char *err, size_t errlen)
{
	struct problems p = { NULL, err, errlen, 0 };

	return check_layer(layer, &p);
}

json_t *settings_table_check_file(const char *path)
{
	json_t *list = json_array(), *root;
	char err[1024] = "";
	struct problems p = { list, err, sizeof(err), 0 };

	if (list == NULL)
		return NULL;
	root = settings_file_read(path, false, err, sizeof(err));
	if (root == NULL || settings_table_unalias(root, err, sizeof(err)) != 0) {
		problem_found(&p);
		json_decref(root);
		return list;
	}
	check_layer(root, &p);
	json_decref(root);
	return list;
}

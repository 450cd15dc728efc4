#include "core/settings.h"

#include "base/errbuf.h"
#include "base/fsutil.h"
#include "base/utf8.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define DAY_MS (24LL * 60 * 60 * 1000)
#define GIB (1024LL * 1024 * 1024)

/* How much of an offending value an error message quotes. */
#define GOT_MAX 60

enum rule_kind {
	RULE_OBJECT,
	RULE_BOOL,
	RULE_INT,          /* an integer from min to max */
	RULE_ARRAY,
	RULE_STRINGS,      /* an array of strings */
	RULE_SOME_STRINGS, /* a non-empty array of strings */
	RULE_CHOICE,       /* one of the '|'-separated strings in `choices` */
	RULE_DELAYS,       /* an array of integers from min to max */
	RULE_BUDGET,       /* null, or {"maxTokens": (0, max], "tokenRatio": (0, max]} */
	RULE_TEXT,         /* a non-empty string */
};

/* One known key: its type, range and default. The default is `number` for
 * BOOL and INT (none when `unset`), the string `text` for CHOICE and TEXT, and
 * the JSON text `text` for the others; a NULL text means no default (the
 * built-in layer may bring one). */
struct rule {
	const char *key;
	enum rule_kind kind;
	json_int_t min, max;
	const char *choices;
	bool unset;
	bool open;         /* RULE_OBJECT whose members are names, not table keys */
	json_int_t number;
	const char *text;
};

#define SECTION(k)          { .key = k, .kind = RULE_OBJECT, .text = "{}" }
#define OPEN_SECTION(k)     { .key = k, .kind = RULE_OBJECT, .open = true, .text = "{}" }
#define BOOL(k, d)          { .key = k, .kind = RULE_BOOL, .number = (d) }
#define INT(k, lo, hi, d)   { .key = k, .kind = RULE_INT, .min = (lo), .max = (hi), .number = (d) }
#define INT_UNSET(k, lo, hi) { .key = k, .kind = RULE_INT, .min = (lo), .max = (hi), .unset = true }
#define CHOICE(k, c, d)     { .key = k, .kind = RULE_CHOICE, .choices = c, .text = d }
#define TEXT(k, d)          { .key = k, .kind = RULE_TEXT, .text = d }
#define JSON(k, kind_, d)   { .key = k, .kind = kind_, .text = d }
#define DELAYS(k, hi, d)    { .key = k, .kind = RULE_DELAYS, .max = (hi), .text = d }
#define BUDGET(k, hi, d)    { .key = k, .kind = RULE_BUDGET, .max = (hi), .text = d }

/* One row per known key. A section's own row comes before its members, so a
 * "retry" that is not an object is reported as such, and the defaults' keys
 * keep this order (get_retry_policy shows it). Under a section every name
 * must be a row, except under an open one, whose members are names of its
 * own (providers, scopes). */
static const struct rule rules[] = {
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
	JSON("retry.fallbackModels",         RULE_STRINGS, "[]"),
	INT("retry.fallbackAfterConsecutive", 1, 1000, 3),
	INT("retry.fallbackCooldownMs",      0, 30 * DAY_MS, 60000),
	/* What a resumed agent CLI is told. */
	TEXT("retry.continuationPrompt",
	     "Continue from where you left off. Do not repeat work that is already done."),
	/* The lists are classify's (its defaults, its pattern syntax). */
	JSON("retry.overloadPatterns",       RULE_STRINGS, NULL),
	JSON("retry.retryablePatterns",      RULE_STRINGS, NULL),
	JSON("retry.nonRetryablePatterns",   RULE_STRINGS, NULL),
	JSON("retry.contextOverflowPatterns", RULE_STRINGS, NULL),
	JSON("retry.usageLimitPatterns",     RULE_STRINGS, NULL),
	INT("rpc.maxLineBytes",              1, GIB, 64LL << 20),
	INT("rpc.outputHighWaterBytes",      1024, GIB, 1LL << 20),
	CHOICE("rpc.messageUpdates",         "full|delta", "full"),
	JSON("sim.plan",                     RULE_ARRAY, "[]"),
	INT("sim.chunkDelayMs",              0, 3600000, 0),
	/* What many daemons share (core/fleet.h, docs/fleet.md). */
	CHOICE("fleet.mode",                 "process|user|redis", "user"),
	CHOICE("fleet.scope",                "model|credential|provider", "model"),
	TEXT("fleet.namespace",              "default"),
	TEXT("fleet.dir",                    NULL),
	TEXT("fleet.redis.url",              "redis://127.0.0.1:6379/0"),
	TEXT("fleet.redis.password",         NULL),
	INT("fleet.redis.timeoutMs",         1, 60000, 50),
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
	JSON("sim.credentials",              RULE_STRINGS, "[]"),
	JSON("sim.models",                   RULE_SOME_STRINGS, "[\"sim-1\"]"),
};

#define NRULES (sizeof(rules) / sizeof(rules[0]))

static const struct rule *find_rule(const char *key)
{
	for (size_t i = 0; i < NRULES; i++)
		if (strcmp(rules[i].key, key) == 0)
			return &rules[i];
	return NULL;
}

static bool has_default(const struct rule *r)
{
	switch (r->kind) {
	case RULE_BOOL:
		return true;
	case RULE_INT:
		return !r->unset;
	default:
		return r->text != NULL;
	}
}

bool settings_known(const char *key)
{
	return find_rule(key) != NULL;
}

int64_t settings_default_int(const char *key)
{
	const struct rule *r = find_rule(key);

	assert(r != NULL && r->kind == RULE_INT && has_default(r));
	return r != NULL ? (int64_t)r->number : 0;
}

bool settings_default_bool(const char *key)
{
	const struct rule *r = find_rule(key);

	assert(r != NULL && r->kind == RULE_BOOL);
	return r != NULL && r->number != 0;
}

const char *settings_default_string(const char *key)
{
	const struct rule *r = find_rule(key);

	assert(r != NULL && (r->kind == RULE_CHOICE || r->kind == RULE_TEXT) && has_default(r));
	return r != NULL ? r->text : NULL;
}

/* Prepends `prefix` to the message already in err. */
static void prefix_err(char *err, size_t errlen, const char *prefix, const char *what)
{
	char *msg;

	if (err == NULL || errlen == 0)
		return;
	msg = strdup(err);
	if (msg == NULL)
		return;
	errbuf_set(err, errlen, "%s%s: %s", prefix, what, msg);
	free(msg);
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

static int check_budget(const struct rule *r, const json_t *value, char *err, size_t errlen)
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

static int check_rule(const struct rule *r, const json_t *value, char *err, size_t errlen)
{
	char got[GOT_MAX + 8];
	size_t bad = 0;

	switch (r->kind) {
	case RULE_OBJECT:
		if (json_is_object(value))
			return 0;
		describe(value, got, sizeof(got));
		errbuf_set(err, errlen, "%s must be an object (got %s)", r->key, got);
		return -1;
	case RULE_BOOL:
		if (json_is_boolean(value))
			return 0;
		describe(value, got, sizeof(got));
		errbuf_set(err, errlen, "%s must be true or false (got %s)", r->key, got);
		return -1;
	case RULE_INT:
		if (json_is_integer(value) && json_integer_value(value) >= r->min &&
		    json_integer_value(value) <= r->max)
			return 0;
		describe(value, got, sizeof(got));
		errbuf_set(err, errlen,
			"%s must be an integer from %" JSON_INTEGER_FORMAT " to %" JSON_INTEGER_FORMAT
			" (got %s)", r->key, r->min, r->max, got);
		return -1;
	case RULE_ARRAY:
		if (json_is_array(value))
			return 0;
		describe(value, got, sizeof(got));
		errbuf_set(err, errlen, "%s must be an array (got %s)", r->key, got);
		return -1;
	case RULE_CHOICE:
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
	case RULE_DELAYS:
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
	case RULE_BUDGET:
		return check_budget(r, value, err, errlen);
	case RULE_TEXT:
		if (json_is_string(value) && json_string_length(value) > 0)
			return 0;
		describe(value, got, sizeof(got));
		errbuf_set(err, errlen, "%s must be a non-empty string (got %s)", r->key, got);
		return -1;
	case RULE_STRINGS:
	case RULE_SOME_STRINGS:
		if (!json_is_array(value) ||
		    (r->kind == RULE_SOME_STRINGS && json_array_size(value) == 0)) {
			describe(value, got, sizeof(got));
			errbuf_set(err, errlen, "%s must be %s (got %s)", r->key,
				r->kind == RULE_SOME_STRINGS ? "a non-empty array of strings" :
							          "an array of strings",
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

/* Dotted keys: non-empty names separated by single dots. */
static bool key_valid(const char *key)
{
	const char *p = key;

	if (*p == '\0')
		return false;
	for (;;) {
		const char *dot = strchr(p, '.');

		if (dot == p || (dot == NULL && *p == '\0'))
			return false;
		if (dot == NULL)
			return true;
		p = dot + 1;
	}
}

/* The value at dotted `key` under `root`; borrowed, NULL when absent or when
 * the path runs through something that is not an object. */
static json_t *path_get(const json_t *root, const char *key)
{
	char *dup, *name, *dot;
	json_t *node = (json_t *)root;

	if (!key_valid(key))
		return NULL;
	dup = strdup(key);
	if (dup == NULL)
		return NULL;
	for (name = dup; node != NULL; name = dot + 1) {
		dot = strchr(name, '.');
		if (dot != NULL)
			*dot = '\0';
		node = json_is_object(node) ? json_object_get(node, name) : NULL;
		if (dot == NULL)
			break;
	}
	free(dup);
	return node;
}

/* Sets dotted `key` (valid) under the object `root`, replacing whatever
 * non-object lies on the way. value: stolen. */
static int path_set(json_t *root, const char *key, json_t *value)
{
	char *dup = strdup(key), *name, *dot;
	json_t *node = root, *child;

	if (dup == NULL)
		goto fail;
	for (name = dup; (dot = strchr(name, '.')) != NULL; name = dot + 1) {
		*dot = '\0';
		child = json_object_get(node, name);
		if (!json_is_object(child)) {
			child = json_object();
			if (json_object_set_new(node, name, child) < 0)
				goto fail;
		}
		node = child;
	}
	if (json_object_set_new(node, name, value) < 0) {
		value = NULL; /* already released by jansson */
		goto fail;
	}
	free(dup);
	return 0;
fail:
	json_decref(value);
	free(dup);
	return -1;
}

static void path_del(json_t *root, const char *key)
{
	char *dup = strdup(key), *name, *dot;
	json_t *node = root;

	if (dup == NULL)
		return;
	for (name = dup; (dot = strchr(name, '.')) != NULL; name = dot + 1) {
		*dot = '\0';
		node = json_object_get(node, name);
		if (!json_is_object(node))
			goto out;
	}
	json_object_del(node, name);
out:
	free(dup);
}

/* Checks `value`, found at dotted `key` ("" for a whole layer), against every
 * rule for that key or beneath it. */
static int check_at(const char *key, const json_t *value, char *err, size_t errlen)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i < NRULES; i++) {
		const struct rule *r = &rules[i];
		const json_t *v;

		if (klen == 0)
			v = path_get(value, r->key);
		else if (strcmp(r->key, key) == 0)
			v = value;
		else if (strncmp(r->key, key, klen) == 0 && r->key[klen] == '.')
			v = path_get(value, r->key + klen + 1);
		else
			continue;
		if (v != NULL && check_rule(r, v, err, errlen) < 0)
			return -1;
	}
	return 0;
}

int settings_check(const char *key, const json_t *value, char *err, size_t errlen)
{
	return check_at(key, value, err, errlen);
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

const char *settings_suggest(const char *key)
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
		hint = settings_suggest(path);
	if (hint == NULL)
		hint = settings_suggest(key);
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
		const struct rule *r;
		size_t n = strlen(prefix) + strlen(name) + 2;
		char *key = malloc(n);
		bool stop = false;

		if (key == NULL) {
			errbuf_set(p->err, p->errlen, "out of memory");
			return problem_found(p);
		}
		snprintf(key, n, "%s%s%s", prefix, *prefix != '\0' ? "." : "", name);
		r = find_rule(key);
		if (r == NULL) {
			unknown_name(key, v, p);
			stop = problem_found(p);
		} else if (r->kind == RULE_OBJECT && !r->open && json_is_object(v)) {
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
		const json_t *v = path_get(layer, rules[i].key);

		if (v != NULL && check_rule(&rules[i], v, p->err, p->errlen) < 0 && problem_found(p))
			return -1;
	}
	return p->count > 0 ? -1 : 0;
}

/* check_layer() that stops at the first problem, left in err. */
static int check_whole(const json_t *layer, char *err, size_t errlen)
{
	struct problems p = { NULL, err, errlen, 0 };

	return check_layer(layer, &p);
}

/* Objects merge recursively; everything else in `src` replaces. */
static int merge_into(json_t *dst, json_t *src)
{
	const char *name;
	json_t *v;

	json_object_foreach(src, name, v) {
		json_t *d = json_object_get(dst, name);

		if (json_is_object(d) && json_is_object(v)) {
			if (merge_into(d, v) < 0)
				return -1;
		} else if (json_object_set_new(dst, name, json_deep_copy(v)) < 0) {
			return -1;
		}
	}
	return 0;
}

/* New reference, or NULL when out of memory. */
static json_t *build_effective(const json_t *defaults, json_t *file, json_t *overrides)
{
	json_t *eff = json_deep_copy(defaults);

	if (eff == NULL || merge_into(eff, file) < 0 || merge_into(eff, overrides) < 0) {
		json_decref(eff);
		return NULL;
	}
	return eff;
}

/* The default of a row that has one, as a new reference (NULL: out of memory). */
static json_t *rule_default(const struct rule *r)
{
	switch (r->kind) {
	case RULE_BOOL:
		return json_boolean(r->number != 0);
	case RULE_INT:
		return json_integer(r->number);
	case RULE_CHOICE:
	case RULE_TEXT:
		return json_string(r->text);
	default:
		return json_loads(r->text, JSON_DECODE_ANY, NULL);
	}
}

/* The table's defaults, then the built-in layer (borrowed, may be NULL) over
 * them. New reference; NULL with err. */
static json_t *build_defaults(const json_t *builtins, char *err, size_t errlen)
{
	json_t *defaults = json_object();

	if (defaults == NULL)
		goto oom;
	for (size_t i = 0; i < NRULES; i++) {
		json_t *v;

		if (!has_default(&rules[i]))
			continue;
		v = rule_default(&rules[i]);
		if (v == NULL || path_set(defaults, rules[i].key, v) < 0)
			goto oom;
	}
	if (builtins == NULL)
		return defaults;
	if (!json_is_object(builtins)) {
		errbuf_set(err, errlen, "settings: the built-in layer must be an object");
		goto fail;
	}
	if (check_whole(builtins, err, errlen) < 0) {
		prefix_err(err, errlen, "settings: ", "built-in layer");
		goto fail;
	}
	if (merge_into(defaults, (json_t *)builtins) < 0)
		goto oom;
	return defaults;
oom:
	errbuf_set(err, errlen, "settings: out of memory");
fail:
	json_decref(defaults);
	return NULL;
}

/* $XDG_CONFIG_HOME/retryd/settings.json (only an absolute XDG_CONFIG_HOME
 * counts, as the XDG spec says), else ~/.config/retryd/settings.json, else NULL. */
static char *default_path(void)
{
	return fsutil_xdg_path("XDG_CONFIG_HOME", ".config", "/retryd/settings.json");
}

/* Reads the whole file into a new NUL-terminated buffer. -1 with errno set. */
static int read_all(const char *path, char **out, size_t *outlen)
{
	char *buf = NULL, *bigger;
	size_t len = 0, cap = 0;
	int fd, saved;
	ssize_t n;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			bigger = realloc(buf, cap);
			if (bigger == NULL) {
				errno = ENOMEM;
				goto fail;
			}
			buf = bigger;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
fail:
	saved = errno;
	close(fd);
	free(buf);
	errno = saved;
	return -1;
}

/* The object a settings file holds (new reference): {} for a blank file, and
 * for a missing one when missing_ok. NULL with err saying why, without the
 * file's name: "line 3 column 5: ...". */
static json_t *load_json_file(const char *path, bool missing_ok, char *err, size_t errlen)
{
	json_t *root = NULL;
	json_error_t jerr;
	char *text = NULL;
	size_t len = 0;

	if (read_all(path, &text, &len) < 0) {
		if (errno == ENOENT && missing_ok)
			return json_object();
		errbuf_set(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	if (strspn(text, " \t\r\n") == len) {
		free(text);
		return json_object();
	}
	root = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (root == NULL) {
		if (jerr.line > 0)
			errbuf_set(err, errlen, "line %d column %d: %s", jerr.line, jerr.column,
				   jerr.text);
		else
			errbuf_set(err, errlen, "%s", jerr.text);
		return NULL;
	}
	if (!json_is_object(root)) {
		errbuf_set(err, errlen, "must hold a JSON object");
		json_decref(root);
		return NULL;
	}
	return root;
}

/* The file layer: a new object, {} for a missing or blank file. */
static json_t *load_file(const char *path, char *err, size_t errlen)
{
	json_t *root = load_json_file(path, true, err, errlen);

	if (root == NULL || check_whole(root, err, errlen) < 0) {
		json_decref(root);
		prefix_err(err, errlen, "settings file ", path);
		return NULL;
	}
	return root;
}

int settings_load(struct settings *self, const json_t *builtins, const char *path,
		  char *err, size_t errlen)
{
	memset(self, 0, sizeof(*self));
	self->path = path != NULL ? strdup(path) : default_path();
	if (path != NULL && self->path == NULL)
		goto oom;
	self->defaults = build_defaults(builtins, err, errlen);
	if (self->defaults == NULL)
		goto fail;
	if (builtins != NULL) {
		self->builtins = json_deep_copy(builtins);
		if (self->builtins == NULL)
			goto oom;
	}
	self->overrides = json_object();
	if (self->overrides == NULL)
		goto oom;
	if (self->path != NULL) {
		self->file = load_file(self->path, err, errlen);
		if (self->file == NULL)
			goto fail;
	} else {
		self->file = json_object();
		if (self->file == NULL)
			goto oom;
	}
	self->effective = build_effective(self->defaults, self->file, self->overrides);
	if (self->effective == NULL)
		goto oom;
	return 0;
oom:
	errbuf_set(err, errlen, "settings: out of memory");
fail:
	settings_release(self);
	return -1;
}

int settings_init(struct settings *self, const char *path, char *err, size_t errlen)
{
	return settings_load(self, NULL, path, err, errlen);
}

void settings_release(struct settings *self)
{
	json_decref(self->defaults);
	json_decref(self->builtins);
	json_decref(self->file);
	json_decref(self->overrides);
	json_decref(self->effective);
	free(self->path);
	memset(self, 0, sizeof(*self));
}

int settings_override_value(struct settings *self, const char *key, json_t *value,
			    char *err, size_t errlen)
{
	json_t *overrides = NULL, *eff = NULL;

	if (!key_valid(key)) {
		errbuf_set(err, errlen, "\"%s\" is not a valid key (names separated by single dots)",
			key);
		goto fail;
	}
	overrides = json_deep_copy(self->overrides);
	if (overrides == NULL)
		goto oom;
	if (path_set(overrides, key, value) < 0) {
		value = NULL;
		goto oom;
	}
	value = NULL; /* owned by overrides now */
	/* The whole layer, so a value that makes a known key's parent a
	 * non-object ("retry.maxRetries.x") is caught too. */
	if (check_whole(overrides, err, errlen) < 0)
		goto fail;
	eff = build_effective(self->defaults, self->file, overrides);
	if (eff == NULL)
		goto oom;
	json_decref(self->overrides);
	json_decref(self->effective);
	self->overrides = overrides;
	self->effective = eff;
	return 0;
oom:
	errbuf_set(err, errlen, "settings: out of memory");
fail:
	json_decref(value);
	json_decref(overrides);
	return -1;
}

int settings_override(struct settings *self, const char *assignment, char *err, size_t errlen)
{
	const char *eq = strchr(assignment, '=');
	json_t *value;
	char *key;
	int rc;

	if (eq == NULL || eq == assignment) {
		errbuf_set(err, errlen, "--set %s: expected KEY=VALUE", assignment);
		return -1;
	}
	key = strndup(assignment, (size_t)(eq - assignment));
	if (key == NULL) {
		errbuf_set(err, errlen, "--set %s: out of memory", assignment);
		return -1;
	}
	value = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
	if (value == NULL)
		value = json_string(eq + 1);
	if (value == NULL) {
		/* not valid UTF-8, or out of memory */
		errbuf_set(err, errlen, "--set %s: the value is neither JSON nor a UTF-8 string",
			assignment);
		free(key);
		return -1;
	}
	rc = settings_override_value(self, key, value, err, errlen);
	if (rc < 0)
		prefix_err(err, errlen, "--set ", assignment);
	free(key);
	return rc;
}

json_t *settings_get(const struct settings *self, const char *key)
{
	return path_get(self->effective, key);
}

int64_t settings_int(const struct settings *self, const char *key, int64_t fallback)
{
	json_t *v = settings_get(self, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : fallback;
}

bool settings_bool(const struct settings *self, const char *key, bool fallback)
{
	json_t *v = settings_get(self, key);

	return json_is_boolean(v) ? json_is_true(v) : fallback;
}

const char *settings_string(const struct settings *self, const char *key, const char *fallback)
{
	json_t *v = settings_get(self, key);

	return json_is_string(v) ? json_string_value(v) : fallback;
}

int64_t settings_get_int(const struct settings *self, const char *key)
{
	return settings_int(self, key, settings_default_int(key));
}

bool settings_get_bool(const struct settings *self, const char *key)
{
	return settings_bool(self, key, settings_default_bool(key));
}

const char *settings_get_string(const struct settings *self, const char *key)
{
	return settings_string(self, key, settings_default_string(key));
}

/* mkdir -p with mode 0700 for what it creates. -1 with errno set. */
static int make_dirs(const char *dir)
{
	char *dup = strdup(dir), *p, saved;
	int rc = 0;

	if (dup == NULL) {
		errno = ENOMEM;
		return -1;
	}
	for (p = dup + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		saved = *p;
		*p = '\0';
		/* An existing non-directory shows up as ENOTDIR one step later. */
		if (mkdir(dup, 0700) < 0 && errno != EEXIST) {
			rc = -1;
			break;
		}
		*p = saved;
		if (saved == '\0')
			break;
	}
	free(dup);
	return rc;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes `root` as pretty JSON to `path`: a temp file in the same directory,
 * fsync, rename. Leaves no temp file behind. -1 with errno set. */
static int write_atomic(const char *path, const json_t *root)
{
	const char *slash = strrchr(path, '/');
	char *dir = NULL, *tmp = NULL, *text = NULL;
	const char *base;
	size_t len;
	int fd = -1, rc, saved, dfd;
	bool made = false;

	if (slash == NULL) {
		dir = strdup(".");
		base = path;
	} else {
		dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
		base = slash + 1;
	}
	if (dir == NULL)
		goto oom;
	if (*base == '\0') {
		errno = EISDIR;
		goto fail;
	}
	if (make_dirs(dir) < 0)
		goto fail;
	len = strlen(dir) + strlen(base) + sizeof("/..XXXXXX");
	tmp = malloc(len);
	if (tmp == NULL)
		goto oom;
	snprintf(tmp, len, "%s/.%s.XXXXXX", dir, base);
	fd = mkstemp(tmp);
	if (fd < 0)
		goto fail;
	made = true;
	text = json_dumps(root, JSON_INDENT(2));
	if (text == NULL)
		goto oom;
	if (write_all(fd, text, strlen(text)) < 0 || write_all(fd, "\n", 1) < 0 ||
	    fsync(fd) < 0)
		goto fail;
	rc = close(fd);
	fd = -1;
	if (rc < 0 || rename(tmp, path) < 0)
		goto fail;
	/* Make the rename itself durable; the data is already safe. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	free(text);
	free(tmp);
	free(dir);
	return 0;
oom:
	errno = ENOMEM;
fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	if (made)
		unlink(tmp);
	free(text);
	free(tmp);
	free(dir);
	errno = saved;
	return -1;
}

int settings_persist(struct settings *self, const char *key, json_t *value, char *err, size_t errlen)
{
	json_t *file = NULL, *overrides = NULL, *eff = NULL;

	if (!key_valid(key)) {
		errbuf_set(err, errlen, "\"%s\" is not a valid key (names separated by single dots)",
			key);
		goto fail;
	}
	file = json_deep_copy(self->file);
	overrides = json_deep_copy(self->overrides);
	if (file == NULL || overrides == NULL)
		goto oom;
	if (path_set(file, key, value) < 0) {
		value = NULL;
		goto oom;
	}
	value = NULL; /* owned by file now */
	if (check_whole(file, err, errlen) < 0)
		goto fail;
	path_del(overrides, key);
	eff = build_effective(self->defaults, file, overrides);
	if (eff == NULL)
		goto oom;
	json_decref(self->file);
	json_decref(self->overrides);
	json_decref(self->effective);
	self->file = file;
	self->overrides = overrides;
	self->effective = eff;

	if (self->path == NULL) {
		errbuf_set(err, errlen, "could not save settings: no settings file path "
			"(neither XDG_CONFIG_HOME nor HOME is set)");
		return -1;
	}
	if (write_atomic(self->path, self->file) < 0) {
		errbuf_set(err, errlen, "could not save settings to %s: %s", self->path,
			strerror(errno));
		return -1;
	}
	return 0;
oom:
	errbuf_set(err, errlen, "settings: out of memory");
fail:
	json_decref(value);
	json_decref(file);
	json_decref(overrides);
	return -1;
}

enum settings_origin settings_origin(const struct settings *self, const char *key)
{
	if (path_get(self->overrides, key) != NULL)
		return SETTINGS_ORIGIN_OVERRIDE;
	if (path_get(self->file, key) != NULL)
		return SETTINGS_ORIGIN_FILE;
	if (path_get(self->builtins, key) != NULL)
		return SETTINGS_ORIGIN_BUILTIN;
	if (path_get(self->defaults, key) != NULL)
		return SETTINGS_ORIGIN_DEFAULT;
	return SETTINGS_ORIGIN_NONE;
}

const char *settings_origin_name(enum settings_origin origin)
{
	switch (origin) {
	case SETTINGS_ORIGIN_DEFAULT:
		return "default";
	case SETTINGS_ORIGIN_BUILTIN:
		return "built-in";
	case SETTINGS_ORIGIN_FILE:
		return "file";
	case SETTINGS_ORIGIN_OVERRIDE:
		return "--set";
	default:
		return "unset";
	}
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* An open section's members, by name. */
static int visit_open(const struct settings *self, const struct rule *r, const json_t *section,
		      settings_visit_cb cb, void *ctx)
{
	size_t n = json_object_size(section), i = 0;
	const char **names = calloc(n > 0 ? n : 1, sizeof(*names));
	const char *name;
	json_t *v;

	if (names == NULL)
		return -1;
	json_object_foreach((json_t *)section, name, v)
		names[i++] = name;
	qsort(names, n, sizeof(*names), compare_names);
	for (i = 0; i < n; i++) {
		size_t len = strlen(r->key) + strlen(names[i]) + 2;
		char *key = malloc(len);

		if (key == NULL) {
			free(names);
			return -1;
		}
		snprintf(key, len, "%s.%s", r->key, names[i]);
		cb(ctx, key, json_object_get(section, names[i]), settings_origin(self, key));
		free(key);
	}
	free(names);
	return 0;
}

int settings_foreach(const struct settings *self, settings_visit_cb cb, void *ctx)
{
	for (size_t i = 0; i < NRULES; i++) {
		const struct rule *r = &rules[i];
		const json_t *v = settings_get(self, r->key);

		if (v == NULL || (r->kind == RULE_OBJECT && !r->open))
			continue;
		if (r->open) {
			if (visit_open(self, r, v, cb, ctx) < 0)
				return -1;
			continue;
		}
		cb(ctx, r->key, v, settings_origin(self, r->key));
	}
	return 0;
}

json_t *settings_check_file(const char *path)
{
	json_t *list = json_array(), *root;
	char err[1024] = "";
	struct problems p = { list, err, sizeof(err), 0 };

	if (list == NULL)
		return NULL;
	root = load_json_file(path, false, err, sizeof(err));
	if (root == NULL) {
		problem_found(&p);
		return list;
	}
	check_layer(root, &p);
	json_decref(root);
	return list;
}

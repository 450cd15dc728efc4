#include "core/settings.h"

#include "base/errbuf.h"
#include "core/settings_file.h"
#include "core/settings_key.h"
#include "core/settings_table.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

bool settings_known(const char *key)
{
	return settings_table_find(key) != NULL;
}

int64_t settings_default_int(const char *key)
{
	const struct settings_rule *r = settings_table_find(key);

	assert(r != NULL && r->kind == SETTINGS_RULE_INT && settings_table_has_default(r));
	return r != NULL ? (int64_t)r->number : 0;
}

bool settings_default_bool(const char *key)
{
	const struct settings_rule *r = settings_table_find(key);

	assert(r != NULL && r->kind == SETTINGS_RULE_BOOL);
	return r != NULL && r->number != 0;
}

const char *settings_default_string(const char *key)
{
	const struct settings_rule *r = settings_table_find(key);

	assert(r != NULL && (r->kind == SETTINGS_RULE_CHOICE || r->kind == SETTINGS_RULE_TEXT) &&
	       settings_table_has_default(r));
	return r != NULL ? r->text : NULL;
}

int settings_check(const char *key, const json_t *value, char *err, size_t errlen)
{
	return settings_table_check_at(key, value, err, errlen);
}

const char *settings_suggest(const char *key)
{
	return settings_table_suggest(key);
}

json_t *settings_check_file(const char *path)
{
	return settings_table_check_file(path);
}

/* Objects merge recursively; everything else in `src` replaces.
 * shared: for layers never changed once built (the defaults, the built-in
 * layer), what dst lacks is shared, not copied. Otherwise dst is a view
 * over shared layers: an object on the way to a change is copied (one
 * level), so the shared ones underneath stay as they are, and what src
 * adds is copied whole. */
static int merge(json_t *dst, json_t *src, bool shared)
{
	const char *name;
	json_t *v;

	json_object_foreach(src, name, v) {
		json_t *d = json_object_get(dst, name);

		if (json_is_object(d) && json_is_object(v)) {
			if (!shared) {
				json_t *own = json_copy(d);

				if (own == NULL || json_object_set_new(dst, name, own) < 0)
					return -1;
				d = own;
			}
			if (merge(d, v, shared) < 0)
				return -1;
		} else if ((shared ? json_object_set(dst, name, v)
				   : json_object_set_new(dst, name, json_deep_copy(v))) < 0) {
			return -1;
		}
	}
	return 0;
}

/* New reference, or NULL when out of memory. It shares what the file and
 * the overrides leave alone with the defaults (nobody changes either). */
static json_t *build_effective(const json_t *defaults, json_t *file, json_t *overrides)
{
	json_t *eff = json_copy((json_t *)defaults);

	if (eff == NULL || merge(eff, file, false) < 0 || merge(eff, overrides, false) < 0) {
		json_decref(eff);
		return NULL;
	}
	return eff;
}

/* The table's defaults, then the built-in layer (borrowed, may be NULL) over
 * them. New reference; NULL with err. */
static json_t *build_defaults(const json_t *builtins, char *err, size_t errlen)
{
	json_t *defaults = json_object();

	if (defaults == NULL)
		goto oom;
	for (size_t i = 0; i < settings_table_count; i++) {
		json_t *v;

		if (!settings_table_has_default(&settings_table_rules[i]))
			continue;
		v = settings_table_default(&settings_table_rules[i]);
		if (v == NULL || settings_key_set(defaults, settings_table_rules[i].key, v) < 0)
			goto oom;
	}
	if (builtins == NULL)
		return defaults;
	if (!json_is_object(builtins)) {
		errbuf_set(err, errlen, "settings: the built-in layer must be an object");
		goto fail;
	}
	if (settings_table_check_whole(builtins, err, errlen) < 0) {
		prefix_err(err, errlen, "settings: ", "built-in layer");
		goto fail;
	}
	/* The built-in profiles are large JSON: shared with the caller's
	 * layer, as neither changes (copied once, into effective). */
	if (merge(defaults, (json_t *)builtins, true) < 0)
		goto oom;
	return defaults;
oom:
	errbuf_set(err, errlen, "settings: out of memory");
fail:
	json_decref(defaults);
	return NULL;
}

/* The file layer: a new object, {} for a missing or blank file. */
static json_t *load_file(const char *path, char *err, size_t errlen)
{
	json_t *root = settings_file_read(path, true, err, errlen);

	if (root == NULL || settings_table_unalias(root, err, errlen) < 0 ||
	    settings_table_check_whole(root, err, errlen) < 0) {
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
	self->path = path != NULL ? strdup(path) : settings_file_default_path();
	if (path != NULL && self->path == NULL)
		goto oom;
	self->defaults = build_defaults(builtins, err, errlen);
	if (self->defaults == NULL)
		goto fail;
	if (builtins != NULL) {
		self->builtins = json_incref((json_t *)builtins);
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

	if (settings_table_unalias_value(&key, &value, err, errlen) < 0)
		goto fail;
	if (!settings_key_valid(key)) {
		errbuf_set(err, errlen, "\"%s\" is not a valid key (names separated by single dots)",
			key);
		goto fail;
	}
	overrides = json_deep_copy(self->overrides);
	if (overrides == NULL)
		goto oom;
	if (settings_key_set(overrides, key, value) < 0) {
		value = NULL;
		goto oom;
	}
	value = NULL; /* owned by overrides now */
	/* The whole layer, so a value that makes a known key's parent a
	 * non-object ("retry.maxRetries.x") is caught too. */
	if (settings_table_check_whole(overrides, err, errlen) < 0)
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
	return settings_key_get(self->effective, key);
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

struct persisting {
	const char *key;
	const json_t *value; /* borrowed */
};

/* The file as it is on disk now gets this one key; anything else in it
 * stays as the user left it, but only a file that is valid as a whole is
 * written back. */
static int persist_key(json_t *root, void *ctx, char *err, size_t errlen)
{
	const struct persisting *p = ctx;
	char why[400];

	if (settings_key_set(root, p->key, json_deep_copy(p->value)) < 0)
		return errbuf_set(err, errlen, "out of memory");
	if (settings_table_check_whole(root, why, sizeof(why)) < 0)
		return errbuf_set(err, errlen, "it holds an invalid setting now: %s", why);
	return 0;
}

int settings_persist(struct settings *self, const char *key, json_t *value, char *err, size_t errlen)
{
	json_t *file = NULL, *overrides = NULL, *eff = NULL;
	struct persisting p = { key, NULL };
	char why[768];

	if (!settings_key_valid(key)) {
		errbuf_set(err, errlen, "\"%s\" is not a valid key (names separated by single dots)",
			key);
		goto fail;
	}
	file = json_deep_copy(self->file);
	overrides = json_deep_copy(self->overrides);
	if (file == NULL || overrides == NULL)
		goto oom;
	if (settings_key_set(file, key, value) < 0) {
		value = NULL;
		goto oom;
	}
	value = NULL; /* owned by file now */
	if (settings_table_check_whole(file, err, errlen) < 0)
		goto fail;
	settings_key_del(overrides, key);
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
	p.value = settings_key_get(self->file, key);
	if (settings_file_update(self->path, persist_key, &p, why, sizeof(why)) < 0) {
		errbuf_set(err, errlen, "could not save settings to %s: %s", self->path, why);
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
	if (settings_key_get(self->overrides, key) != NULL)
		return SETTINGS_ORIGIN_OVERRIDE;
	if (settings_key_get(self->file, key) != NULL)
		return SETTINGS_ORIGIN_FILE;
	if (settings_key_get(self->builtins, key) != NULL)
		return SETTINGS_ORIGIN_BUILTIN;
	if (settings_key_get(self->defaults, key) != NULL)
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
static int visit_open(const struct settings *self, const struct settings_rule *r,
		      const json_t *section, settings_visit_cb cb, void *ctx)
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
	for (size_t i = 0; i < settings_table_count; i++) {
		const struct settings_rule *r = &settings_table_rules[i];
		const json_t *v = settings_get(self, r->key);

		if (v == NULL || (r->kind == SETTINGS_RULE_OBJECT && !r->open))
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

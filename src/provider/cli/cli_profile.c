#define PCRE2_CODE_UNIT_WIDTH 8

#include "provider/cli/cli_profile.h"

#include <ctype.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/jsontext.h"
#include "provider/cli/cli_builtin.h"
#include "provider/cli/cli_texts.h"
#include "provider/provider.h"

#define DAY_MS (24LL * 60 * 60 * 1000)

struct cli_profile_match {
	const char *path; /* borrowed from the profile's config */
	pcre2_code *re;
	pcre2_match_data *md; /* made once: lines are matched one at a time */
};

json_t *cli_profile_builtins(void)
{
	json_t *all = json_object();

	if (all == NULL)
		return NULL;
	for (const struct cli_builtin *b = cli_builtin_table; b->name != NULL; b++) {
		json_t *one = json_loads(b->json, 0, NULL);

		if (one != NULL && b->own_retries_off != NULL &&
		    json_object_set_new(one, "ownRetriesOff", json_loads(b->own_retries_off, 0, NULL)) < 0)
			json_decref(one), one = NULL;
		if (json_object_set_new(all, b->name, one) < 0) {
			json_decref(all);
			return NULL;
		}
	}
	return all;
}

bool cli_profile_is_exec(const json_t *cfg)
{
	const char *type = json_string_value(json_object_get(cfg, "type"));

	return type != NULL && strcmp(type, "exec") == 0;
}

/* Paths. */

static json_t *path_get1(const json_t *root, const char *path)
{
	const json_t *node = root;
	const char *p = path;

	while (node != NULL) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);

		if (json_is_object(node)) {
			node = json_object_getn(node, p, n);
		} else if (json_is_array(node) && n > 0 && strspn(p, "0123456789") >= n) {
			node = json_array_get(node, strtoul(p, NULL, 10));
		} else {
			return NULL;
		}
		if (dot == NULL)
			break;
		p = dot + 1;
	}
	return (json_t *)node;
}

json_t *cli_profile_get(const json_t *root, const json_t *paths)
{
	size_t i;
	json_t *p, *v;

	if (json_is_string(paths)) {
		v = path_get1(root, json_string_value(paths));
		return json_is_null(v) ? NULL : v;
	}
	json_array_foreach(paths, i, p) {
		v = path_get1(root, json_string_value(p));
		if (v != NULL && !json_is_null(v))
			return v;
	}
	return NULL;
}

/* Conditions. */

static bool same(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	return json_equal((json_t *)a, (json_t *)b);
}

static bool one_holds(const json_t *expected, const json_t *v)
{
	if (json_is_null(expected))
		return v == NULL || json_is_null(v);
	return v != NULL && same(expected, v);
}

bool cli_profile_holds(const json_t *cond, const json_t *value)
{
	const char *path;
	json_t *expected;

	json_object_foreach((json_t *)cond, path, expected) {
		json_t *v = path_get1(value, path);
		bool ok = false;
		size_t i;
		json_t *alt;

		if (json_is_array(expected)) {
			json_array_foreach(expected, i, alt)
				ok = ok || one_holds(alt, v);
		} else {
			ok = one_holds(expected, v);
		}
		if (!ok)
			return false;
	}
	return true;
}

static bool type_selected(const json_t *types, const json_t *line)
{
	const char *type = json_string_value(json_object_get(line, "type"));
	size_t i;
	json_t *t;

	if (types == NULL)
		return true;
	if (type == NULL)
		return false;
	if (json_is_string(types))
		return strcmp(json_string_value(types), type) == 0;
	json_array_foreach(types, i, t)
		if (strcmp(json_string_value(t), type) == 0)
			return true;
	return false;
}

bool cli_profile_selects(const struct cli_profile_rule *rule, const json_t *line, json_t *captures)
{
	if (!type_selected(rule->types, line))
		return false;
	if (rule->when != NULL && !cli_profile_holds(rule->when, line))
		return false;
	for (size_t i = 0; i < rule->nmatch; i++) {
		const struct cli_profile_match *m = &rule->match[i];
		json_t *v = path_get1(line, m->path);
		int rc;

		if (!json_is_string(v))
			return false;
		rc = pcre2_match(m->re, (PCRE2_SPTR)json_string_value(v), json_string_length(v), 0, 0,
				 m->md, NULL);
		if (rc < 0)
			return false;
		if (captures != NULL)
			cli_texts_captures(m->re, m->md, json_string_value(v), captures);
	}
	return true;
}

/* argv templates. */

struct buf {
	struct jsontext_buf b;
	bool oom;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->oom || jsontext_reserve(&b->b, n + 1) != 0) {
		b->oom = true;
		return;
	}
	memcpy(b->b.data + b->b.len, s, n);
	b->b.len += n;
	b->b.data[b->b.len] = '\0';
}

/* Expands one template element into a new string, or NULL with err (an
 * unknown placeholder, or memory). Values are copied as they are. */
char *cli_profile_expand(const char *tmpl, const struct cli_profile_vars *vars, char *err,
			 size_t errlen)
{
	static const char *const names[] = { "{prompt}", "{sessionId}", "{model}", "{retrydDir}" };
	struct buf b = { 0 };
	const char *p = tmpl;

	buf_add(&b, "", 0);
	while (*p != '\0') {
		const char *open = strchr(p, '{');
		size_t k;

		if (open == NULL) {
			buf_add(&b, p, strlen(p));
			break;
		}
		buf_add(&b, p, (size_t)(open - p));
		if (open[1] == '{') {
			buf_add(&b, "{", 1);
			p = open + 2;
			continue;
		}
		for (k = 0; k < 4 && strncmp(open, names[k], strlen(names[k])) != 0; k++)
			;
		if (k == 4) {
			const char *close = strchr(open, '}');

			errbuf_set(err, errlen, "unknown placeholder %.*s (known: {prompt}, {sessionId}, "
			           "{model}, {retrydDir}, {args}; \"{{\" is a literal \"{\")",
			           close ? (int)(close - open + 1) : (int)strlen(open), open);
			free(b.b.data);
			return NULL;
		}
		{
			const char *v = k == 0 ? vars->prompt : k == 1 ? vars->session_id
				      : k == 2 ? vars->model : vars->retryd_dir;

			if (v != NULL)
				buf_add(&b, v, strlen(v));
		}
		p = open + strlen(names[k]);
	}
	if (b.oom) {
		free(b.b.data);
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	return b.b.data;
}

void cli_profile_argv_free(char **argv)
{
	if (argv == NULL)
		return;
	for (char **a = argv; *a != NULL; a++)
		free(*a);
	free(argv);
}

char **cli_profile_argv(const struct cli_profile *self, const struct cli_profile_vars *vars,
			char *err, size_t errlen)
{
	const json_t *tmpl = vars->session_id ? self->resume_argv : self->argv;
	bool with_model = vars->model != NULL && vars->model[0] != '\0' &&
			  strcmp(vars->model, "default") != 0 && self->model_args != NULL;
	size_t extra = 0, cap;
	char **argv;

	for (char **e = vars->extra_args; e != NULL && *e != NULL; e++)
		extra++;
	cap = json_array_size(tmpl) + json_array_size(self->args) + extra +
	      json_array_size(self->texts.quiet_args) +
	      (with_model ? json_array_size(self->model_args) : 0) + 1;
	argv = calloc(cap, sizeof(*argv));
	size_t n = 0, i, k;
	json_t *t, *a;

	if (tmpl == NULL) {
		free(argv);
		errbuf_set(err, errlen, "providers.%s has no resumeArgv", self->name);
		return NULL;
	}
	if (argv == NULL)
		goto oom;
	json_array_foreach(tmpl, i, t) {
		if (strcmp(json_string_value(t), "{args}") != 0) {
			if ((argv[n++] = cli_profile_expand(json_string_value(t), vars, err, errlen)) == NULL)
				goto fail;
			continue;
		}
		if (with_model) {
			json_array_foreach(self->model_args, k, a)
				if ((argv[n++] = cli_profile_expand(json_string_value(a), vars, err, errlen)) == NULL)
					goto fail;
		}
		json_array_foreach(self->args, k, a)
			if ((argv[n++] = strdup(json_string_value(a))) == NULL)
				goto oom;
		json_array_foreach(self->texts.quiet_args, k, a)
			if ((argv[n++] = cli_profile_expand(json_string_value(a), vars, err,
							    errlen)) == NULL)
				goto fail;
		for (char **e = vars->extra_args; e != NULL && *e != NULL; e++)
			if ((argv[n++] = strdup(*e)) == NULL)
				goto oom;
	}
	if (self->command != NULL && n > 0) {
		free(argv[0]);
		if ((argv[0] = strdup(self->command)) == NULL)
			goto oom;
	}
	return argv;
oom:
	errbuf_set(err, errlen, "out of memory");
fail:
	cli_profile_argv_free(argv);
	return NULL;
}

/* Checking and compiling. */

static const char *const selector_keys[] = { "type", "when", "match", "each", "where", NULL };

struct kind_info {
	const char *key;
	const char *const fields[12]; /* NULL-terminated: at most 11 */
	const char *required[3];
};

static const struct kind_info kinds[CLI_RULE_KINDS] = {
	[CLI_RULE_SESSION] = { "sessionId", { "field" }, { "field" } },
	[CLI_RULE_RETRY] = { "retryNotice",
			     { "message", "status", "attempt", "maxAttempts", "delayMs" }, { NULL } },
	[CLI_RULE_TEXT] = { "text", { "field", "delta" }, { "field" } },
	/* Neither is required alone: pi signs its thinking on a later line. */
	[CLI_RULE_THINKING] = { "thinking", { "field", "delta", "signature" }, { NULL } },
	[CLI_RULE_TOOL_START] = { "toolStart", { "id", "name", "args" }, { "id", "name" } },
	[CLI_RULE_TOOL_END] = { "toolEnd", { "id", "name", "result", "isError" }, { "id" } },
	[CLI_RULE_TERMINAL] = { "terminal",
				{ "failed", "message", "status", "errorType", "inputTokens", "outputTokens",
				  "cacheReadTokens", "cacheWriteTokens" },
				{ NULL } },
};

static const char *const top_keys[] = {
	"type", "argv", "resumeArgv", "promptVia", "sessionId", "text", "thinking", "toolStart",
	"toolEnd", "retryNotice", "terminal", "command", "args", "env", "secretEnv", "models",
	"modelArgs", "timeoutMs", "startupMs", "killGraceMs", "maxLineBytes", "setupErrors",
	"resumeFailed", "lostTurnOnError", "resumeContinuesCutText", "ownRetriesOff",
	"keepOwnRetries", "serverEnv", NULL,
};

/* An environment variable's name as a shell writes one: [A-Za-z_][A-Za-z0-9_]*. */
static bool env_name(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return false;
	for (s++; *s != '\0'; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return false;
	return true;
}

/* A list of environment variable names at providers.NAME.KEY (secretEnv,
 * serverEnv): stored in *out (borrowed), NULL when absent. */
static int check_env_names(struct cli_profile *self, const json_t *cfg, const char *key,
			   const json_t **out, char *err, size_t errlen)
{
	const json_t *v = json_object_get(cfg, key);
	size_t i;
	json_t *name;

	*out = v;
	if (v == NULL)
		return 0;
	if (!json_is_array(v))
		return errbuf_set(err, errlen, "providers.%s.%s must be a list of environment "
				  "variable names", self->name, key);
	json_array_foreach(v, i, name)
		if (!json_is_string(name) || !env_name(json_string_value(name)))
			return errbuf_set(err, errlen, "providers.%s.%s[%zu] must be an environment "
					  "variable name (letters, digits and '_', not starting with "
					  "a digit)", self->name, key, i);
	return 0;
}

static bool listed(const char *const *list, const char *key)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, key) == 0)
			return true;
	return false;
}

static bool is_path(const json_t *v)
{
	size_t i;
	json_t *p;

	if (json_is_string(v))
		return json_string_length(v) > 0;
	if (!json_is_array(v) || json_array_size(v) == 0)
		return false;
	json_array_foreach(v, i, p)
		if (!json_is_string(p) || json_string_length(p) == 0)
			return false;
	return true;
}

static int check_field(const char *where, const char *key, const json_t *v, char *err,
		       size_t errlen)
{
	if (strcmp(key, "delta") == 0) {
		if (!json_is_boolean(v))
			return errbuf_set(err, errlen, "%s.delta must be true or false", where);
	} else if (strcmp(key, "failed") == 0) {
		if (!json_is_boolean(v) && !json_is_object(v))
			return errbuf_set(err, errlen, "%s.failed must be true, false or a condition "
				          "{PATH: VALUE}", where);
	} else if (strcmp(key, "isError") == 0) {
		if (!json_is_boolean(v) && !json_is_object(v) && !is_path(v))
			return errbuf_set(err, errlen, "%s.isError must be true, false, a condition "
				          "{PATH: VALUE} or a PATH", where);
	} else if (!is_path(v)) {
		return errbuf_set(err, errlen, "%s.%s must be a PATH (a dotted name, or a list of them)",
			          where, key);
	}
	return 0;
}

static int compile_rule(enum cli_profile_rule_kind kind, const json_t *spec, const char *where,
			struct cli_profile_rule *rule, char *err, size_t errlen)
{
	const struct kind_info *info = &kinds[kind];
	const char *key;
	json_t *v, *re;

	memset(rule, 0, sizeof(*rule));
	rule->spec = spec;
	if (!json_is_object(spec))
		return errbuf_set(err, errlen, "%s must be an object", where);
	json_object_foreach((json_t *)spec, key, v) {
		if (listed(selector_keys, key) || listed(info->fields, key))
			continue;
		if (kind == CLI_RULE_RETRY && strcmp(key, "stream") == 0) {
			if (json_is_string(v) && strcmp(json_string_value(v), "stdout") == 0)
				continue;
			return errbuf_set(err, errlen, "%s.stream must be \"stdout\" or \"stderr\"",
					  where);
		}
		{
			char known[200] = "";

			for (size_t i = 0; info->fields[i] != NULL; i++) {
				strcat(known, info->fields[i]);
				strcat(known, ", ");
			}
			return errbuf_set(err, errlen, "%s.%.40s is not a %s key (%stype, when, match, "
				          "each, where)", where, key, info->key, known);
		}
	}
	for (size_t i = 0; info->required[i] != NULL; i++)
		if (json_object_get(spec, info->required[i]) == NULL)
			return errbuf_set(err, errlen, "%s needs \"%s\"", where, info->required[i]);
	if (kind == CLI_RULE_THINKING && json_object_get(spec, "field") == NULL &&
	    json_object_get(spec, "signature") == NULL)
		return errbuf_set(err, errlen, "%s needs \"field\" or \"signature\"", where);
	for (size_t i = 0; info->fields[i] != NULL; i++) {
		v = json_object_get(spec, info->fields[i]);
		if (v != NULL && check_field(where, info->fields[i], v, err, errlen) != 0)
			return -1;
	}
	rule->types = json_object_get(spec, "type");
	if (rule->types != NULL && !json_is_string(rule->types) && !cli_config_strings(rule->types, true))
		return errbuf_set(err, errlen, "%s.type must be a string or a list of strings", where);
	rule->when = json_object_get(spec, "when");
	rule->where = json_object_get(spec, "where");
	if ((rule->when != NULL && !json_is_object(rule->when)) ||
	    (rule->where != NULL && !json_is_object(rule->where)))
		return errbuf_set(err, errlen, "%s.%s must be an object {PATH: VALUE or [VALUE...]}", where,
			          rule->when != NULL && !json_is_object(rule->when) ? "when" : "where");
	v = json_object_get(spec, "each");
	if (v != NULL && (!json_is_string(v) || json_string_length(v) == 0))
		return errbuf_set(err, errlen, "%s.each must be a PATH", where);
	rule->each = json_string_value(v);
	if (rule->where != NULL && rule->each == NULL)
		return errbuf_set(err, errlen, "%s.where needs \"each\"", where);
	v = json_object_get(spec, "match");
	if (v != NULL && !json_is_object(v))
		return errbuf_set(err, errlen, "%s.match must be an object {PATH: REGEX}", where);
	rule->match = calloc(json_object_size(v) + 1, sizeof(*rule->match));
	if (rule->match == NULL)
		return errbuf_set(err, errlen, "out of memory");
	json_object_foreach((json_t *)v, key, re) {
		struct cli_profile_match *m = &rule->match[rule->nmatch];
		int code;
		PCRE2_SIZE off;

		if (!json_is_string(re))
			return errbuf_set(err, errlen, "%s.match.%.40s must be a regular expression", where,
				          key);
		m->path = key;
		m->re = pcre2_compile((PCRE2_SPTR)json_string_value(re), json_string_length(re),
				      PCRE2_UTF, &code, &off, NULL);
		if (m->re == NULL) {
			PCRE2_UCHAR msg[160];

			pcre2_get_error_message(code, msg, sizeof(msg));
			return errbuf_set(err, errlen, "%s.match.%.40s: %s at offset %zu", where, key,
				          (const char *)msg, (size_t)off);
		}
		m->md = pcre2_match_data_create_from_pattern(m->re, NULL);
		rule->nmatch++;
		if (m->md == NULL)
			return errbuf_set(err, errlen, "out of memory");
	}
	return 0;
}

static int compile_kind(struct cli_profile *self, enum cli_profile_rule_kind kind, char *err,
			size_t errlen)
{
	const char *key = kinds[kind].key;
	json_t *v = json_object_get(self->cfg, key);
	size_t n = json_is_array(v) ? json_array_size(v) : v != NULL;
	char where[160];

	if (v == NULL)
		return 0;
	if (json_is_array(v) && n == 0)
		return errbuf_set(err, errlen, "providers.%s.%s must be a rule or a non-empty list of rules",
			          self->name, key);
	self->rules[kind] = calloc(n, sizeof(struct cli_profile_rule));
	if (self->rules[kind] == NULL)
		return errbuf_set(err, errlen, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *spec = json_is_array(v) ? json_array_get(v, i) : v;

		/* A notice on stderr is a line of text: cli_texts reads it. */
		if (kind == CLI_RULE_RETRY && cli_texts_is_stderr_rule(spec))
			continue;
		if (json_is_array(v))
			snprintf(where, sizeof(where), "providers.%s.%s[%zu]", self->name, key, i);
		else
			snprintf(where, sizeof(where), "providers.%s.%s", self->name, key);
		if (compile_rule(kind, spec, where, &self->rules[kind][self->nrules[kind]++], err,
				 errlen) != 0)
			return -1;
	}
	return 0;
}

/* Every placeholder of a template list is known. */
static int check_placeholders(struct cli_profile *self, const char *key, const json_t *t,
			      char *err, size_t errlen)
{
	struct cli_profile_vars probe = { "", "", "", "", NULL };
	size_t i;
	json_t *s;

	json_array_foreach(t, i, s) {
		char *x;
		char why[256];

		if (strcmp(json_string_value(s), "{args}") == 0)
			continue;
		x = cli_profile_expand(json_string_value(s), &probe, why, sizeof(why));
		if (x == NULL)
			return errbuf_set(err, errlen, "providers.%s.%s[%zu]: %s", self->name, key, i, why);
		free(x);
	}
	return 0;
}

/* Whether an element uses the placeholder: read as expand() reads it, so
 * an escaped "{{prompt}" (the literal text "{prompt}") does not count. */
static bool mentions(const json_t *t, const char *placeholder)
{
	size_t i, n = strlen(placeholder);
	json_t *s;

	json_array_foreach(t, i, s) {
		const char *p = json_string_value(s);

		while ((p = strchr(p, '{')) != NULL) {
			if (p[1] == '{')
				p += 2;
			else if (strncmp(p, placeholder, n) == 0)
				return true;
			else
				p++;
		}
	}
	return false;
}

/* How many elements are "{args}" (each expands to the args list). */
static size_t args_slots(const json_t *t)
{
	size_t i, count = 0;
	json_t *s;

	json_array_foreach(t, i, s)
		count += strcmp(json_string_value(s), "{args}") == 0;
	return count;
}

static int check_template(struct cli_profile *self, const char *key, const json_t *t,
			  bool needs_session, char *err, size_t errlen)
{
	if (!cli_config_strings(t, true) || json_string_length(json_array_get(t, 0)) == 0)
		return errbuf_set(err, errlen, "providers.%s.%s must be a non-empty list of strings, the "
			          "program first", self->name, key);
	if (check_placeholders(self, key, t, err, errlen) != 0)
		return -1;
	if (args_slots(t) > 1)
		return errbuf_set(err, errlen, "providers.%s.%s has \"{args}\" more than once", self->name,
				  key);
	if (!self->prompt_stdin && !mentions(t, "{prompt}"))
		return errbuf_set(err, errlen, "providers.%s.%s has no \"{prompt}\" (promptVia is \"argv\")",
			          self->name, key);
	if (needs_session && !mentions(t, "{sessionId}"))
		return errbuf_set(err, errlen, "providers.%s.%s has no \"{sessionId}\"", self->name, key);
	return 0;
}

static int get_ms(struct cli_profile *self, const char *key, int64_t min, int64_t max,
		  int64_t fallback, int64_t *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(self->cfg, key);

	*out = fallback;
	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return errbuf_set(err, errlen, "providers.%s.%s must be an integer from %lld to %lld",
			          self->name, key, (long long)min, (long long)max);
	*out = json_integer_value(v);
	return 0;
}

static int check_top(struct cli_profile *self, char *err, size_t errlen)
{
	const json_t *cfg = self->cfg;
	const char *key;
	json_t *v;
	const char *via;

	json_object_foreach((json_t *)cfg, key, v)
		if (!listed(top_keys, key))
			return errbuf_set(err, errlen, "providers.%s.%.40s is not a key of an exec provider",
				          self->name, key);
	via = json_string_value(json_object_get(cfg, "promptVia"));
	if (json_object_get(cfg, "promptVia") != NULL &&
	    (via == NULL || (strcmp(via, "argv") != 0 && strcmp(via, "stdin") != 0)))
		return errbuf_set(err, errlen, "providers.%s.promptVia must be \"argv\" or \"stdin\"",
			          self->name);
	self->prompt_stdin = via != NULL && strcmp(via, "stdin") == 0;
	self->argv = json_object_get(cfg, "argv");
	if (check_template(self, "argv", self->argv, false, err, errlen) != 0)
		return -1;
	self->resume_argv = json_object_get(cfg, "resumeArgv");
	if (self->resume_argv != NULL &&
	    check_template(self, "resumeArgv", self->resume_argv, true, err, errlen) != 0)
		return -1;
	self->model_args = json_object_get(cfg, "modelArgs");
	if (self->model_args != NULL && !cli_config_strings(self->model_args, false))
		return errbuf_set(err, errlen, "providers.%s.modelArgs must be a list of strings", self->name);
	if (self->model_args != NULL &&
	    check_placeholders(self, "modelArgs", self->model_args, err, errlen) != 0)
		return -1;
	self->args = json_object_get(cfg, "args");
	if (self->args != NULL && !cli_config_strings(self->args, false))
		return errbuf_set(err, errlen, "providers.%s.args must be a list of strings", self->name);
	v = json_object_get(cfg, "command");
	if (v != NULL && (!json_is_string(v) || json_string_length(v) == 0))
		return errbuf_set(err, errlen, "providers.%s.command must be a non-empty string (the "
			          "program to run)", self->name);
	self->command = json_string_value(v);
	self->env = json_object_get(cfg, "env");
	if (self->env != NULL && !json_is_object(self->env))
		return errbuf_set(err, errlen, "providers.%s.env must be an object {NAME: value or null}",
			          self->name);
	json_object_foreach((json_t *)self->env, key, v)
		if (key[0] == '\0' || strchr(key, '=') != NULL || (!json_is_string(v) && !json_is_null(v)))
			return errbuf_set(err, errlen, "providers.%s.env.%.40s must be a string or null "
				          "(and the name may not contain '=')", self->name, key);
	if (check_env_names(self, cfg, "secretEnv", &self->secret_env, err, errlen) != 0 ||
	    check_env_names(self, cfg, "serverEnv", &self->server_env, err, errlen) != 0)
		return -1;
	v = json_object_get(cfg, "models");
	if (v != NULL && !cli_config_strings(v, true))
		return errbuf_set(err, errlen, "providers.%s.models must be a non-empty list of model ids",
			          self->name);
	if (get_ms(self, "timeoutMs", 0, 30 * DAY_MS, 0, &self->timeout_ms, err, errlen) != 0 ||
	    get_ms(self, "startupMs", 0, DAY_MS, 30000, &self->startup_ms, err, errlen) != 0 ||
	    get_ms(self, "killGraceMs", 0, 600000, 2000, &self->kill_grace_ms, err, errlen) != 0 ||
	    get_ms(self, "maxLineBytes", 1024, 1LL << 30, 16LL << 20, &self->max_line_bytes, err,
		   errlen) != 0)
		return -1;
	if (json_object_get(cfg, "terminal") == NULL)
		return errbuf_set(err, errlen, "providers.%s.terminal is missing: without it no run can "
			          "end well", self->name);
	return 0;
}

struct cli_profile *cli_profile_new(const char *name, const json_t *cfg, char *err, size_t errlen)
{
	struct cli_profile *self = calloc(1, sizeof(*self));
	json_t *models;

	if (self == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	self->name = strdup(name);
	self->cfg = json_deep_copy(cfg);
	if (self->name == NULL || self->cfg == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto fail;
	}
	if (!json_is_object(cfg)) {
		errbuf_set(err, errlen, "providers.%s must be an object", name);
		goto fail;
	}
	if (check_top(self, err, errlen) != 0 ||
	    cli_texts_init(&self->texts, self->name, self->cfg, err, errlen) != 0 ||
	    (self->texts.quiet_args != NULL &&
	     check_placeholders(self, "ownRetriesOff.args", self->texts.quiet_args, err,
				errlen) != 0))
		goto fail;
	for (int k = 0; k < CLI_RULE_KINDS; k++)
		if (compile_kind(self, (enum cli_profile_rule_kind)k, err, errlen) != 0)
			goto fail;
	models = json_object_get(self->cfg, "models");
	if (models == NULL) {
		json_t *dflt = json_pack("[s]", "default");

		self->models = provider_models_from(dflt);
		json_decref(dflt);
	} else {
		self->models = provider_models_from(models);
	}
	if (self->models == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto fail;
	}
	return self;
fail:
	cli_profile_free(self);
	return NULL;
}

void cli_profile_free(struct cli_profile *self)
{
	if (self == NULL)
		return;
	for (int k = 0; k < CLI_RULE_KINDS; k++) {
		for (size_t i = 0; i < self->nrules[k]; i++) {
			struct cli_profile_rule *r = &self->rules[k][i];

			for (size_t m = 0; m < r->nmatch; m++) {
				pcre2_match_data_free(r->match[m].md);
				pcre2_code_free(r->match[m].re);
			}
			free(r->match);
		}
		free(self->rules[k]);
	}
	cli_texts_release(&self->texts);
	json_decref(self->models);
	json_decref(self->cfg);
	free(self->name);
	free(self);
}

#define PCRE2_CODE_UNIT_WIDTH 8

#include "provider/cli/cli_config.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"

bool cli_config_strings(const json_t *v, bool nonempty)
{
	size_t i;
	json_t *x;

	if (!json_is_array(v) || (nonempty && json_array_size(v) == 0))
		return false;
	json_array_foreach(v, i, x)
		if (!json_is_string(x))
			return false;
	return true;
}

static int read_rule(struct cli_config_rule *r, const char *where, const json_t *c, char *err,
		     size_t errlen)
{
	static const char *const keys[] = {"files", "match", "skip", "unless", "args", "otherwise"};
	static const char *const patterns[] = {"match", "skip", "unless"};
	struct cli_pattern *pat[] = {&r->match, &r->skip, &r->unless};
	char at[200];
	const char *key;
	json_t *x;

	if (!json_is_object(c))
		return errbuf_set(err, errlen, "%s must be {\"files\", \"match\", \"args\", ...}", where);
	json_object_foreach((json_t *)c, key, x) {
		size_t k = 0;

		while (k < sizeof(keys) / sizeof(keys[0]) && strcmp(key, keys[k]) != 0)
			k++;
		if (k == sizeof(keys) / sizeof(keys[0]))
			return errbuf_set(err, errlen, "%s.%.40s is not a key (files, match, skip, "
					  "unless, args, otherwise)", where, key);
	}
	if (!cli_config_strings(json_object_get(c, "files"), true) ||
	    !cli_config_strings(json_object_get(c, "args"), true))
		return errbuf_set(err, errlen, "%s needs \"files\" and \"args\", non-empty lists of "
				  "strings", where);
	if (json_object_get(c, "otherwise") != NULL && !cli_config_strings(json_object_get(c, "otherwise"), false))
		return errbuf_set(err, errlen, "%s.otherwise must be a list of strings", where);
	r->files = json_object_get(c, "files");
	r->args = json_object_get(c, "args");
	r->otherwise = json_object_get(c, "otherwise");
	for (size_t k = 0; k < 3; k++) {
		const json_t *re = json_object_get(c, patterns[k]);

		snprintf(at, sizeof(at), "%s.%s", where, patterns[k]);
		if ((re != NULL || k == 0) && cli_pattern_compile(pat[k], re, at, err, errlen) != 0)
			return -1;
	}
	if (pcre2_substring_number_from_name(r->match.re, (PCRE2_SPTR)"value") < 0)
		return errbuf_set(err, errlen, "%s.match needs a group (?<value>...)", where);
	return 0;
}

int cli_config_init(struct cli_config *self, const char *where, const json_t *c, char *err,
		    size_t errlen)
{
	size_t n = json_is_array(c) ? json_array_size(c) : c != NULL;

	memset(self, 0, sizeof(*self));
	if (n == 0)
		return 0;
	if ((self->rules = calloc(n, sizeof(*self->rules))) == NULL)
		return errbuf_set(err, errlen, "out of memory");
	self->n = n;
	for (size_t i = 0; i < n; i++) {
		char at[180];

		if (json_is_array(c))
			snprintf(at, sizeof(at), "%s[%zu]", where, i);
		else
			snprintf(at, sizeof(at), "%s", where);
		if (read_rule(&self->rules[i], at, json_is_array(c) ? json_array_get(c, i) : c, err,
			      errlen) != 0) {
			cli_config_release(self);
			return -1;
		}
	}
	return 0;
}

void cli_config_release(struct cli_config *self)
{
	for (size_t i = 0; i < self->n; i++) {
		cli_pattern_release(&self->rules[i].match);
		cli_pattern_release(&self->rules[i].skip);
		cli_pattern_release(&self->rules[i].unless);
	}
	free(self->rules);
	memset(self, 0, sizeof(*self));
}

/* A configArgs PATH with {home} and {env:NAME} replaced: new, or NULL when
 * a variable it names is unset. */
static char *config_path(const char *tmpl)
{
	char out[4096];
	size_t n = 0;
	const char *p = tmpl;

	while (*p != '\0' && n + 1 < sizeof(out)) {
		const char *v = NULL;
		size_t skip = 0;

		if (strncmp(p, "{home}", 6) == 0) {
			v = getenv("HOME");
			skip = 6;
		} else if (strncmp(p, "{env:", 5) == 0 && strchr(p, '}') != NULL) {
			char name[128];
			size_t k = (size_t)(strchr(p, '}') - (p + 5));

			if (k == 0 || k >= sizeof(name))
				return NULL;
			memcpy(name, p + 5, k);
			name[k] = '\0';
			v = getenv(name);
			skip = k + 6;
		}
		if (skip == 0) {
			out[n++] = *p++;
			continue;
		}
		if (v == NULL || v[0] == '\0')
			return NULL;
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s", v);
		if (n >= sizeof(out))
			return NULL;
		p += skip;
	}
	out[n < sizeof(out) ? n : sizeof(out) - 1] = '\0';
	return strdup(out);
}

/* The first of files that can be read, whole (at most 1 MiB): new, or NULL. */
static char *read_config(const json_t *files)
{
	size_t i;
	json_t *f;

	json_array_foreach(files, i, f) {
		char *path = config_path(json_string_value(f)), *text;
		FILE *in = path ? fopen(path, "r") : NULL;
		size_t n;

		free(path);
		if (in == NULL)
			continue;
		/* A config file is small: read at most 1 MiB of it, sized first. */
		n = fseek(in, 0, SEEK_END) == 0 && ftell(in) > 0 ? (size_t)ftell(in) : 0;
		if (n > (1 << 20))
			n = 1 << 20;
		rewind(in);
		text = malloc(n + 1);
		n = text ? fread(text, 1, n, in) : 0;
		fclose(in);
		if (text == NULL)
			return NULL;
		text[n] = '\0';
		return text;
	}
	return NULL;
}

/* The profile's args as text, one per line: new. */
static char *args_text(const json_t *args)
{
	size_t n = 1, i;
	json_t *a;
	char *out, *p;

	json_array_foreach(args, i, a)
		n += json_string_length(a) + 1;
	if ((out = p = malloc(n)) == NULL)
		return NULL;
	json_array_foreach(args, i, a) {
		memcpy(p, json_string_value(a), json_string_length(a));
		p += json_string_length(a);
		*p++ = '\n';
	}
	*p = '\0';
	return out;
}

/* Appends list's strings to *out (n of them so far), {value} replaced by
 * value. Returns 0, or -1 out of memory. */
static int append(char ***out, size_t *n, const json_t *list, const char *value)
{
	size_t i;
	json_t *a;
	char **grown = realloc(*out, (*n + json_array_size(list) + 1) * sizeof(**out));

	if (grown == NULL)
		return -1;
	*out = grown;
	json_array_foreach(list, i, a) {
		const char *t = json_string_value(a), *at = strstr(t, "{value}");
		size_t len = strlen(t) + (at && value ? strlen(value) : 0) + 1;

		if ((grown[*n] = malloc(len)) == NULL)
			return -1;
		if (at != NULL && value != NULL)
			snprintf(grown[*n], len, "%.*s%s%s", (int)(at - t), t, value, at + 7);
		else
			snprintf(grown[*n], len, "%s", t);
		grown[++*n] = NULL;
	}
	return 0;
}

/* One rule over the two texts (either may be NULL): what it adds to *out. */
static int apply(const struct cli_config_rule *r, const char *texts[2], char ***out, size_t *n)
{
	char value[256];

	for (int t = 0; t < 2; t++)
		if (texts[t] != NULL && r->unless.re != NULL &&
		    cli_pattern_matches(&r->unless, texts[t], strlen(texts[t])))
			return 0;
	for (int t = 0; t < 2; t++) {
		PCRE2_SIZE vlen = sizeof(value);

		if (texts[t] == NULL ||
		    !cli_pattern_matches(&r->match, texts[t], strlen(texts[t])) ||
		    pcre2_substring_copy_byname(r->match.md, (PCRE2_SPTR)"value",
						(PCRE2_UCHAR *)value, &vlen) != 0)
			continue;
		if (r->skip.re != NULL && cli_pattern_matches(&r->skip, value, vlen))
			return 0;
		return append(out, n, r->args, value);
	}
	return r->otherwise != NULL ? append(out, n, r->otherwise, NULL) : 0;
}

char **cli_config_args(const struct cli_config *self, const json_t *user_args)
{
	/* The profile's args as one text, the same for every rule. */
	char *args = self->n > 0 && cli_config_strings(user_args, false) ? args_text(user_args)
									  : NULL;
	char **out = NULL;
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < self->n && rc == 0; i++) {
		char *file = read_config(self->rules[i].files);
		const char *texts[2] = {args, file};

		rc = apply(&self->rules[i], texts, &out, &n);
		free(file);
	}
	free(args);
	if (rc != 0) {
		for (size_t i = 0; i < n; i++)
			free(out[i]);
		free(out);
		return NULL;
	}
	return out;
}

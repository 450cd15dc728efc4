#define PCRE2_CODE_UNIT_WIDTH 8

#include "provider/cli/cli_texts.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/utf8.h"

void cli_texts_captures(const void *re, void *md, const char *subject, json_t *captures)
{
	uint32_t count = 0, size = 0;
	PCRE2_SPTR table;
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);

	pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &count);
	pcre2_pattern_info(re, PCRE2_INFO_NAMEENTRYSIZE, &size);
	pcre2_pattern_info(re, PCRE2_INFO_NAMETABLE, &table);
	for (uint32_t i = 0; i < count; i++, table += size) {
		unsigned group = (unsigned)(table[0] << 8 | table[1]);
		const char *name = (const char *)table + 2;
		PCRE2_SIZE from = ov[2 * group], to = ov[2 * group + 1];
		size_t n;

		if (from == PCRE2_UNSET || to < from)
			continue;
		n = to - from;
		if (n > 0 && n < 16 && strspn(subject + from, "0123456789") >= n)
			json_object_set_new(captures, name,
					    json_integer((json_int_t)strtoll(subject + from, NULL, 10)));
		else
			json_object_set_new(captures, name, json_stringn(subject + from, n));
	}
}

static int read_setup(struct cli_texts *self, const char *name, const json_t *v, char *err,
		      size_t errlen)
{
	char where[160];
	size_t i;
	json_t *e;

	if (v == NULL)
		return 0;
	if (!json_is_array(v))
		return errbuf_set(err, errlen, "providers.%s.setupErrors must be a list of "
				  "{\"match\": REGEX, \"why\": SENTENCE}", name);
	self->setup = calloc(json_array_size(v) + 1, sizeof(*self->setup));
	if (self->setup == NULL)
		return errbuf_set(err, errlen, "out of memory");
	json_array_foreach(v, i, e) {
		const char *key;
		json_t *x;

		snprintf(where, sizeof(where), "providers.%s.setupErrors[%zu]", name, i);
		if (!json_is_object(e))
			return errbuf_set(err, errlen, "%s must be {\"match\": REGEX, \"why\": SENTENCE}",
					  where);
		json_object_foreach(e, key, x)
			if (strcmp(key, "match") != 0 && strcmp(key, "why") != 0)
				return errbuf_set(err, errlen, "%s.%.40s is not a setupErrors key "
						  "(match, why)", where, key);
		x = json_object_get(e, "why");
		if (!json_is_string(x) || json_string_length(x) == 0)
			return errbuf_set(err, errlen, "%s.why must be a sentence saying the cause "
					  "and the fix", where);
		self->setup[i].why = json_string_value(x);
		self->nsetup++;
		strcat(where, ".match");
		if (cli_pattern_compile(&self->setup[i], json_object_get(e, "match"), where, err, errlen) != 0)
			return -1;
	}
	return 0;
}

static int read_resume(struct cli_texts *self, const char *name, const json_t *v, char *err,
		       size_t errlen)
{
	char where[160];
	size_t n = json_is_array(v) ? json_array_size(v) : v != NULL;

	if (v == NULL)
		return 0;
	self->resume_failed = calloc(n + 1, sizeof(*self->resume_failed));
	if (self->resume_failed == NULL)
		return errbuf_set(err, errlen, "out of memory");
	for (size_t i = 0; i < n; i++) {
		snprintf(where, sizeof(where), json_is_array(v) ? "providers.%s.resumeFailed[%zu]"
				: "providers.%s.resumeFailed", name, i);
		self->nresume++;
		if (cli_pattern_compile(&self->resume_failed[i], json_is_array(v) ? json_array_get(v, i) : v,
			    where, err, errlen) != 0)
			return -1;
	}
	return 0;
}

bool cli_texts_is_stderr_rule(const json_t *rule)
{
	const char *s = json_string_value(json_object_get(rule, "stream"));

	return s != NULL && strcmp(s, "stderr") == 0;
}

/* The retryNotice rules that read stderr; the line rules are cli_profile's. */
static int read_notices(struct cli_texts *self, const char *name, const json_t *v, char *err,
			size_t errlen)
{
	static const char *const keys[] = { "stream", "match", NULL };
	size_t n = json_is_array(v) ? json_array_size(v) : v != NULL;
	char where[160];

	self->notices = calloc(n + 1, sizeof(*self->notices));
	if (self->notices == NULL)
		return errbuf_set(err, errlen, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_is_array(v) ? json_array_get(v, i) : v;
		const char *key;
		json_t *x;

		if (!cli_texts_is_stderr_rule(r))
			continue;
		snprintf(where, sizeof(where), json_is_array(v) ? "providers.%s.retryNotice[%zu]"
				: "providers.%s.retryNotice", name, i);
		json_object_foreach((json_t *)r, key, x) {
			size_t k;

			for (k = 0; keys[k] != NULL && strcmp(keys[k], key) != 0; k++)
				;
			if (keys[k] == NULL)
				return errbuf_set(err, errlen, "%s.%.40s is not a key of a stderr notice "
						  "(stream, match: named groups attempt, maxAttempts, "
						  "delayMs, status, message)", where, key);
		}
		strcat(where, ".match");
		if (cli_pattern_compile(&self->notices[self->nnotices], json_object_get(r, "match"), where, err,
			    errlen) != 0) {
			self->nnotices++;
			return -1;
		}
		self->nnotices++;
	}
	return 0;
}

/* {NAME: string} (null too, with nulls) */
static bool is_string_map(const json_t *v, bool nulls)
{
	const char *key;
	json_t *x;

	if (!json_is_object(v))
		return false;
	json_object_foreach((json_t *)v, key, x)
		if (key[0] == '\0' || !(json_is_string(x) || (nulls && json_is_null(x))))
			return false;
	return true;
}

/* A file name under the daemon's directory: relative, no "..", no empty part. */
static bool safe_name(const char *name)
{
	const char *p = name;

	if (name[0] == '/' || name[0] == '\0')
		return false;
	while (*p != '\0') {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 2 && strncmp(p, "..", 2) == 0) || (n == 1 && p[0] == '.'))
			return false;
		p += n;
		if (*p == '/')
			p++;
	}
	return p[-1] != '/';
}

static int read_quiet(struct cli_texts *self, const char *name, const json_t *cfg, char *err,
		      size_t errlen)
{
	const json_t *keep = json_object_get(cfg, "keepOwnRetries");
	const json_t *q = json_object_get(cfg, "ownRetriesOff");
	char where[160];
	const char *key;
	json_t *x;

	if (keep != NULL && !json_is_boolean(keep))
		return errbuf_set(err, errlen, "providers.%s.keepOwnRetries must be true or false", name);
	self->keep_own_retries = json_is_true(keep);
	if (q == NULL)
		return 0;
	if (!json_is_object(q))
		return errbuf_set(err, errlen, "providers.%s.ownRetriesOff must be an object {\"env\", "
				  "\"args\", \"files\"}", name);
	json_object_foreach((json_t *)q, key, x)
		if (strcmp(key, "env") != 0 && strcmp(key, "args") != 0 && strcmp(key, "files") != 0 &&
		    strcmp(key, "configArgs") != 0)
			return errbuf_set(err, errlen, "providers.%s.ownRetriesOff.%.40s is not a key "
					  "(env, args, files, configArgs)", name, key);
	snprintf(where, sizeof(where), "providers.%s.ownRetriesOff.configArgs", name);
	if (cli_config_init(&self->config, where, json_object_get(q, "configArgs"), err, errlen) != 0)
		return -1;
	x = json_object_get(q, "env");
	if (x != NULL && !is_string_map(x, true))
		return errbuf_set(err, errlen, "providers.%s.ownRetriesOff.env must be an object "
				  "{NAME: string or null}", name);
	json_object_foreach(x, key, x)
		if (strchr(key, '=') != NULL)
			return errbuf_set(err, errlen, "providers.%s.ownRetriesOff.env.%.40s: a name "
					  "may not contain '='", name, key);
	x = json_object_get(q, "args");
	if (x != NULL) {
		size_t i;
		json_t *a;

		if (!json_is_array(x))
			return errbuf_set(err, errlen, "providers.%s.ownRetriesOff.args must be a list of "
					  "strings", name);
		json_array_foreach(x, i, a)
			if (!json_is_string(a))
				return errbuf_set(err, errlen, "providers.%s.ownRetriesOff.args must be a "
						  "list of strings", name);
	}
	x = json_object_get(q, "files");
	if (x != NULL && !is_string_map(x, false))
		return errbuf_set(err, errlen, "providers.%s.ownRetriesOff.files must be an object "
				  "{NAME: text}", name);
	json_object_foreach(x, key, x)
		if (!safe_name(key))
			return errbuf_set(err, errlen, "providers.%s.ownRetriesOff.files.%.40s: a file "
					  "name must be relative, without \"..\"", name, key);
	if (self->keep_own_retries) {
		cli_config_release(&self->config);
		return 0;
	}
	self->quiet_env = json_object_get(q, "env");
	self->quiet_args = json_object_get(q, "args");
	self->quiet_files = json_object_get(q, "files");
	return 0;
}

int cli_texts_init(struct cli_texts *self, const char *name, const json_t *cfg, char *err,
		   size_t errlen)
{
	const json_t *lost = json_object_get(cfg, "lostTurnOnError");
	const json_t *cut = json_object_get(cfg, "resumeContinuesCutText");

	memset(self, 0, sizeof(*self));
	if (lost != NULL && !json_is_boolean(lost))
		return errbuf_set(err, errlen, "providers.%s.lostTurnOnError must be true or false",
				  name);
	if (cut != NULL && !json_is_boolean(cut))
		return errbuf_set(err, errlen,
				  "providers.%s.resumeContinuesCutText must be true or false", name);
	self->lost_turn_on_error = json_is_true(lost);
	self->resume_continues_cut_text = json_is_true(cut);
	if (read_setup(self, name, json_object_get(cfg, "setupErrors"), err, errlen) != 0 ||
	    read_resume(self, name, json_object_get(cfg, "resumeFailed"), err, errlen) != 0 ||
	    read_notices(self, name, json_object_get(cfg, "retryNotice"), err, errlen) != 0 ||
	    read_quiet(self, name, cfg, err, errlen) != 0)
		return -1;
	return 0;
}

static void release_list(struct cli_pattern *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cli_pattern_release(&list[i]);
	free(list);
}

void cli_texts_release(struct cli_texts *self)
{
	cli_config_release(&self->config);
	release_list(self->setup, self->nsetup);
	release_list(self->resume_failed, self->nresume);
	release_list(self->notices, self->nnotices);
	memset(self, 0, sizeof(*self));
}

const char *cli_texts_setup_error(const struct cli_texts *self, const char *text, size_t len)
{
	for (size_t i = 0; i < self->nsetup; i++)
		if (cli_pattern_matches(&self->setup[i], text, len))
			return self->setup[i].why;
	return NULL;
}

bool cli_texts_resume_failed(const struct cli_texts *self, const char *text, size_t len)
{
	for (size_t i = 0; i < self->nresume; i++)
		if (cli_pattern_matches(&self->resume_failed[i], text, len))
			return true;
	return false;
}

json_t *cli_texts_notice(const struct cli_texts *self, const char *line, size_t len)
{
	static const char *const numbers[] = { "attempt", "maxAttempts", "delayMs" };

	for (size_t i = 0; i < self->nnotices; i++) {
		json_t *captures, *ev, *msg, *status;
		char *subject;

		if (!cli_pattern_matches(&self->notices[i], line, len))
			continue;
		subject = strndup(line, len);
		captures = json_object();
		ev = json_pack("{s:s}", "type", "provider_retry");
		if (subject == NULL || captures == NULL || ev == NULL) {
			free(subject);
			json_decref(captures);
			json_decref(ev);
			return NULL;
		}
		cli_texts_captures(self->notices[i].re, self->notices[i].md, subject, captures);
		utf8_repair(subject);
		for (size_t k = 0; k < sizeof(numbers) / sizeof(numbers[0]); k++)
			if (json_is_integer(json_object_get(captures, numbers[k])))
				json_object_set(ev, numbers[k], json_object_get(captures, numbers[k]));
		msg = json_object_get(captures, "message");
		status = json_object_get(captures, "status");
		if (json_is_integer(status)) {
			char text[600];

			snprintf(text, sizeof(text), "%lld %s", (long long)json_integer_value(status),
				 json_is_string(msg) ? json_string_value(msg) : subject);
			json_object_set_new(ev, "errorMessage", json_string(text));
		} else {
			json_object_set_new(ev, "errorMessage",
					    json_string(json_is_string(msg) ? json_string_value(msg)
									    : subject));
		}
		json_decref(captures);
		free(subject);
		return ev;
	}
	return NULL;
}


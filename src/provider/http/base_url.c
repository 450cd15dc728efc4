#include "provider/http/base_url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How a variable's value becomes a baseUrl. */
enum base_url_form {
	FORM_AS_IS,   /* the SDK's base already holds the path (".../v1") */
	FORM_GEMINI,  /* google-genai appends its api version to the base */
	FORM_OLLAMA,  /* ollama's clients take host[:port], scheme optional */
};

static const struct base_url_env {
	const char *provider, *var;
	enum base_url_form form;
} base_url_envs[] = {
	{ "openai", "OPENAI_BASE_URL", FORM_AS_IS },
	{ "anthropic", "ANTHROPIC_BASE_URL", FORM_AS_IS },
	{ "google", "GOOGLE_GEMINI_BASE_URL", FORM_GEMINI },
	{ "ollama", "OLLAMA_HOST", FORM_OLLAMA },
	{ "azure", "AZURE_OPENAI_ENDPOINT", FORM_AS_IS },
};

#define OLLAMA_PORT "11434"
#define GEMINI_VERSION "v1beta"

bool base_url_valid(const char *url)
{
	const char *host;

	if (strncmp(url, "http://", 7) == 0)
		host = url + 7;
	else if (strncmp(url, "https://", 8) == 0)
		host = url + 8;
	else
		return false;
	for (const unsigned char *p = (const unsigned char *)url; *p != '\0'; p++)
		if (*p <= ' ' || *p == 0x7f)
			return false;
	return host[0] != '\0' && strchr("/?#@", host[0]) == NULL;
}

/* Whether the last path segment of url (its length n) is an API version
 * ("v1", "v1beta"); a host such as "v1.example" is not a path segment. */
static bool ends_with_version(const char *url, size_t n)
{
	size_t i = n;

	while (i > 0 && url[i - 1] != '/')
		i--;
	return i >= 2 && url[i - 2] != '/' && i + 1 < n && url[i] == 'v' && url[i + 1] >= '0' &&
	       url[i + 1] <= '9';
}

/* Whether an authority "host", "host:port" or "[v6]:port" names a port. */
static bool has_port(const char *auth, size_t n)
{
	const char *p = auth;

	if (n > 0 && auth[0] == '[') {
		p = memchr(auth, ']', n);
		if (p == NULL)
			return false;
	}
	return memchr(p, ':', n - (size_t)(p - auth)) != NULL;
}

/* The baseUrl a variable's value makes; a new string, or NULL when out of
 * memory. A malformed value stays recognisable (base_url_valid() rejects
 * it) rather than being repaired into some other host. */
static char *url_of(const struct base_url_env *e, const char *value)
{
	size_t n = strlen(value), cap = n + 32;
	char *out = malloc(cap);
	size_t auth;

	if (out == NULL)
		return NULL;
	while (n > 0 && value[n - 1] == '/')
		n--;
	switch (e->form) {
	case FORM_AS_IS:
		snprintf(out, cap, "%.*s", (int)n, value);
		break;
	case FORM_GEMINI:
		snprintf(out, cap, "%.*s%s", (int)n, value,
			 ends_with_version(value, n) ? "" : "/" GEMINI_VERSION);
		break;
	case FORM_OLLAMA:
		if (strstr(value, "://") != NULL) {
			snprintf(out, cap, "%.*s/v1", (int)n, value);
			break;
		}
		auth = strcspn(value, "/");
		if (auth > n)
			auth = n;
		snprintf(out, cap, "http://%.*s%s%.*s/v1", (int)auth, value,
			 has_port(value, auth) ? "" : ":" OLLAMA_PORT, (int)(n - auth), value + auth);
		break;
	}
	return out;
}

int base_url_apply_env(json_t *providers)
{
	for (size_t i = 0; i < sizeof(base_url_envs) / sizeof(base_url_envs[0]); i++) {
		const struct base_url_env *e = &base_url_envs[i];
		const char *value = getenv(e->var);
		json_t *entry = json_object_get(providers, e->provider);
		char *url;
		int rc;

		if (value == NULL || value[0] == '\0' || !json_is_object(entry))
			continue;
		url = url_of(e, value);
		rc = url != NULL ? json_object_set_new(entry, "baseUrl", json_string(url)) : -1;
		free(url);
		if (rc != 0)
			return -1;
	}
	return 0;
}

const char *base_url_env_of(const char *name, const char *url)
{
	for (size_t i = 0; i < sizeof(base_url_envs) / sizeof(base_url_envs[0]); i++) {
		const struct base_url_env *e = &base_url_envs[i];
		const char *value = getenv(e->var);
		char *made;
		bool same;

		if (strcmp(e->provider, name) != 0 || value == NULL || value[0] == '\0' || url == NULL)
			continue;
		made = url_of(e, value);
		same = made != NULL && strcmp(made, url) == 0;
		free(made);
		if (same)
			return e->var;
	}
	return NULL;
}

const char *base_url_env_name(const char *name)
{
	for (size_t i = 0; i < sizeof(base_url_envs) / sizeof(base_url_envs[0]); i++)
		if (strcmp(base_url_envs[i].provider, name) == 0)
			return base_url_envs[i].var;
	return NULL;
}

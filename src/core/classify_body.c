#include "core/classify_body.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "base/hint.h"

/* An upper-case identifier (a status or reason), copied into out. */
static bool take_name(const json_t *v, char *out, size_t size)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);

	if (s == NULL || n == 0 || n >= size)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	memcpy(out, s, n + 1);
	return true;
}

/* "PerDay", "per_day", "per-day-per-project" ...: the letters of s, lower
 * case, without separators, hold word. */
static bool names_window(const char *s, const char *word)
{
	char flat[256];
	size_t n = 0;

	for (; *s != '\0' && n + 1 < sizeof(flat); s++) {
		if (*s == '_' || *s == '-' || *s == ' ')
			continue;
		flat[n++] = (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);
	}
	flat[n] = '\0';
	return strstr(flat, word) != NULL;
}

/* quotaValue "0" or 0. */
static bool str_is_zero(const json_t *v)
{
	return (json_is_string(v) && strcmp(json_string_value(v), "0") == 0) ||
	       (json_is_integer(v) && json_integer_value(v) == 0);
}

static enum google_scope violation_scope(const json_t *v)
{
	const json_t *value = json_object_get(v, "quotaValue");
	const char *id = json_string_value(json_object_get(v, "quotaId"));
	const char *metric = json_string_value(json_object_get(v, "quotaMetric"));

	if (str_is_zero(value))
		return GOOGLE_SCOPE_ZERO;
	for (int k = 0; k < 2; k++) {
		const char *s = k == 0 ? id : metric;

		if (s == NULL)
			continue;
		if (names_window(s, "perday") || names_window(s, "permonth"))
			return GOOGLE_SCOPE_DAY;
		if (names_window(s, "perminute") || names_window(s, "persecond"))
			return GOOGLE_SCOPE_MINUTE;
	}
	return GOOGLE_SCOPE_NONE;
}

static void take_quota(const json_t *detail, struct google_status *g)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(detail, "violations"), i, v) {
		enum google_scope scope = violation_scope(v);
		const json_t *name = json_object_get(v, "quotaId");

		if (scope <= g->scope)
			continue;
		g->scope = scope;
		if (!json_is_string(name))
			name = json_object_get(v, "quotaMetric");
		snprintf(g->quota, sizeof(g->quota), "%s",
			 json_is_string(name) ? json_string_value(name) : "quota");
	}
}

/* "37s", "0.5s", "1.250s" (a protobuf Duration in JSON), or {"seconds": 37,
 * "nanos": 5e8} as some clients print it. */
static void take_delay(const json_t *delay, struct google_status *g)
{
	int64_t ms;

	if (json_is_string(delay)) {
		if (hint_duration(json_string_value(delay), json_string_length(delay), &ms))
			g->retry_ms = ms;
	} else if (json_is_object(delay)) {
		json_int_t sec = json_integer_value(json_object_get(delay, "seconds"));
		json_int_t nanos = json_integer_value(json_object_get(delay, "nanos"));

		if (sec >= 0 && sec < HINT_MAX_MS / 1000 && nanos >= 0 && nanos < 1000000000)
			g->retry_ms = (int64_t)sec * 1000 + (int64_t)(nanos + 500000) / 1000000;
	}
}

void classify_body_google(const char *body, size_t len, struct google_status *g)
{
	const json_t *err, *detail, *status;
	json_t *root;
	size_t i = 0;

	memset(g, 0, sizeof(*g));
	g->retry_ms = -1;
	while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
		i++;
	/* Only a JSON object is parsed (the one allocation of a decision). */
	if (body == NULL || i == len || body[i] != '{')
		return;
	root = json_loadb(body + i, len - i, 0, NULL);
	err = json_object_get(root, "error");
	status = json_object_get(err, "status");
	if (json_is_object(err) && (json_is_string(status) || json_is_array(json_object_get(err, "details")))) {
		g->found = true;
		take_name(status, g->status, sizeof(g->status));
		json_array_foreach(json_object_get(err, "details"), i, detail) {
			const char *type = json_string_value(json_object_get(detail, "@type"));
			const char *dot = type != NULL ? strrchr(type, '.') : NULL;

			if (dot == NULL)
				continue;
			if (strcmp(dot, ".RetryInfo") == 0)
				take_delay(json_object_get(detail, "retryDelay"), g);
			else if (strcmp(dot, ".QuotaFailure") == 0)
				take_quota(detail, g);
			else if (strcmp(dot, ".ErrorInfo") == 0 && g->reason[0] == '\0')
				take_name(json_object_get(detail, "reason"), g->reason, sizeof(g->reason));
		}
	}
	json_decref(root);
}

/* The number at text[*at] (digits with ',' between them, after an optional
 * ':', spaces and '~'), -1 none; *at moves past it. */
static long long read_count(const char *text, size_t len, size_t *at)
{
	long long v = -1;
	size_t i = *at;

	while (i < len && (text[i] == ':' || text[i] == ' ' || text[i] == '~'))
		i++;
	for (; i < len && ((text[i] >= '0' && text[i] <= '9') || (text[i] == ',' && v >= 0)); i++)
		if (text[i] != ',' && v < INT64_C(1) << 50)
			v = (v < 0 ? 0 : v * 10) + (text[i] - '0');
	*at = i;
	return v;
}

/* Whether text[at..] starts with the lower-case ASCII word w, in any case. */
static bool word_at(const char *text, size_t len, size_t at, const char *w)
{
	size_t n = strlen(w);

	if (at + n > len)
		return false;
	for (size_t k = 0; k < n; k++)
		if ((text[at + k] | 0x20) != w[k])
			return false;
	return true;
}

bool classify_body_over_limit(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		size_t at = i + 5, end;
		long long limit;

		if (!word_at(text, len, i, "limit") || (i > 0 && ((text[i - 1] | 0x20) >= 'a' &&
							       (text[i - 1] | 0x20) <= 'z')))
			continue;
		limit = read_count(text, len, &at);
		if (limit <= 0)
			continue;
		/* "Requested" within the same clause list: "Limit N, Used U, Requested R". */
		for (end = at + 40 < len ? at + 40 : len; at < end; at++) {
			if (word_at(text, len, at, "requested")) {
				size_t r = at + 9;

				return read_count(text, len, &r) > limit;
			}
		}
	}
	return false;
}

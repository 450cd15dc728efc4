#include "base/hint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errtext.h"
#include "base/number.h"

#define MS_PER_S 1000.0
#define MS_PER_MIN 60000.0
#define MS_PER_H 3600000.0
#define MS_PER_DAY 86400000.0

/* Significant digits a decimal keeps: below 2^53, so that digits / 10^k is
 * one correctly rounded division, the value strtod would give (without its
 * locale). Longer numbers lose only far-off digits. */
#define SIG_DIGITS_MAX 15

/* --- characters (ASCII, as PCRE2 reads \s, \b and caseless letters) --- */

static int to_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(int c)
{
	c = to_lower(c);
	return c >= 'a' && c <= 'z';
}

static bool is_word(int c)
{
	return is_alpha(c) || is_digit(c) || c == '_';
}

static bool is_space(int c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static bool is_quote(int c)
{
	return c == '"' || c == '\'';
}

/* s[i], or -1 past the end. */
static int at(const char *s, size_t n, size_t i)
{
	return i < n ? (unsigned char)s[i] : -1;
}

/* Consumes lit (case-insensitive) at *i, only if all of it is there. */
static bool eat(const char *s, size_t n, size_t *i, const char *lit)
{
	size_t len = strlen(lit);

	if (*i > n || n - *i < len)
		return false;
	for (size_t k = 0; k < len; k++)
		if (to_lower((unsigned char)s[*i + k]) != lit[k])
			return false;
	*i += len;
	return true;
}

static void skip_spaces(const char *s, size_t n, size_t *i)
{
	while (is_space(at(s, n, *i)))
		(*i)++;
}

/* `\s+` */
static bool skip_spaces1(const char *s, size_t n, size_t *i)
{
	if (!is_space(at(s, n, *i)))
		return false;
	skip_spaces(s, n, i);
	return true;
}

/* Whether a letter starts at s[i] — what "a unit must not be followed by a
 * letter" means: ASCII letters, and the letters of the common scripts
 * (Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic, kana, CJK, Hangul,
 * fullwidth Latin) as the reference's str.isalpha() sees them. */
static bool letter_at(const char *s, size_t n, size_t i)
{
	const unsigned char *u = (const unsigned char *)s + i;
	uint32_t cp;

	if (i >= n)
		return false;
	if (u[0] < 0x80)
		return is_alpha(u[0]);
	if (u[0] >= 0xc2 && u[0] < 0xe0 && n - i >= 2 && (u[1] & 0xc0) == 0x80)
		cp = (uint32_t)(u[0] & 0x1f) << 6 | (u[1] & 0x3f);
	else if (u[0] >= 0xe0 && u[0] < 0xf0 && n - i >= 3 && (u[1] & 0xc0) == 0x80 &&
		 (u[2] & 0xc0) == 0x80)
		cp = (uint32_t)(u[0] & 0x0f) << 12 | (uint32_t)(u[1] & 0x3f) << 6 | (u[2] & 0x3f);
	else
		return false;
	return cp == 0xaa || cp == 0xb5 || cp == 0xba ||
	       (cp >= 0xc0 && cp <= 0x2c1 && cp != 0xd7 && cp != 0xf7) ||
	       (cp >= 0x370 && cp <= 0x3ff && cp != 0x37e && cp != 0x387) ||
	       (cp >= 0x400 && cp <= 0x52f && (cp < 0x482 || cp > 0x489)) ||
	       (cp >= 0x531 && cp <= 0x587) || (cp >= 0x5d0 && cp <= 0x5f2) ||
	       (cp >= 0x620 && cp <= 0x64a) || (cp >= 0x3041 && cp <= 0x30fa) ||
	       (cp >= 0x3400 && cp <= 0x4dbf) || (cp >= 0x4e00 && cp <= 0x9fff) ||
	       (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xff21 && cp <= 0xff3a) ||
	       (cp >= 0xff41 && cp <= 0xff5a);
}

/* --- numbers --- */

/* `[0-9]+(?:\.[0-9]+)?` at i: its end, or i when there is none. */
static size_t scan_number(const char *s, size_t n, size_t i)
{
	size_t k = i;

	while (is_digit(at(s, n, k)))
		k++;
	if (k == i)
		return i;
	if (at(s, n, k) == '.' && is_digit(at(s, n, k + 1))) {
		k++;
		while (is_digit(at(s, n, k)))
			k++;
	}
	return k;
}

/* The value of the decimal s[a..b) that scan_number found. */
static double number_value(const char *s, size_t a, size_t b)
{
	uint64_t digits = 0;
	int sig = 0, exp10 = 0;
	bool frac = false;
	double v, p = 1.0;

	for (size_t k = a; k < b; k++) {
		if (s[k] == '.') {
			frac = true;
			continue;
		}
		if (sig < SIG_DIGITS_MAX) {
			digits = digits * 10 + (uint64_t)(s[k] - '0');
			if (digits > 0)
				sig++;
			if (frac)
				exp10--;
		} else if (!frac && exp10 < 400) {
			exp10++;
		}
	}
	for (int k = 0; k < (exp10 < 0 ? -exp10 : exp10); k++)
		p *= 10.0;
	v = (double)digits;
	return exp10 < 0 ? v / p : v * p;
}

/* A non-negative count of ms, rounded as the reference does (int(x + 0.5)),
 * clamped at HINT_MAX_MS. */
static int64_t round_ms(double x)
{
	x += 0.5;
	if (!(x < (double)HINT_MAX_MS))
		return HINT_MAX_MS;
	return x < 1.0 ? 0 : (int64_t)x;
}

static int64_t clamp_ms(int64_t ms)
{
	return ms < 0 ? 0 : ms > HINT_MAX_MS ? HINT_MAX_MS : ms;
}

/* An epoch in ms read as a double, saturated: a time past int64 is the far
 * future, which clamp_ms makes HINT_MAX_MS (the cast alone is undefined). */
static int64_t epoch_ms(double x)
{
	return x < 9e18 ? (int64_t)x : INT64_MAX;
}

/* target − now, saturated (both are epoch ms from the parsers below, or a
 * caller's clock). */
static int64_t until(int64_t target, int64_t now)
{
	if (now < 0 && target > INT64_MAX + now)
		return INT64_MAX;
	if (now > 0 && target < INT64_MIN + now)
		return INT64_MIN;
	return target - now;
}

/* --- durations --- */

static const struct {
	const char *name;
	double ms;
} units[] = {
	/* Longest first: "ms" before "m", "minutes" before "min". */
	{ "milliseconds", 1 }, { "millisecond", 1 }, { "ms", 1 },
	{ "seconds", MS_PER_S }, { "second", MS_PER_S }, { "secs", MS_PER_S },
	{ "sec", MS_PER_S }, { "s", MS_PER_S },
	{ "minutes", MS_PER_MIN }, { "minute", MS_PER_MIN }, { "mins", MS_PER_MIN },
	{ "min", MS_PER_MIN }, { "m", MS_PER_MIN },
	{ "hours", MS_PER_H }, { "hour", MS_PER_H }, { "hrs", MS_PER_H }, { "hr", MS_PER_H },
	{ "h", MS_PER_H },
	{ "days", MS_PER_DAY }, { "day", MS_PER_DAY }, { "d", MS_PER_DAY },
};

/* The duration starting at s[i] (the reference's parse_duration). */
static bool duration_at(const char *s, size_t n, size_t i, int64_t *ms)
{
	double total = 0.0;
	int parts = 0;

	for (;;) {
		size_t j = i, end, k;
		double unit = 0.0;

		if (parts > 0) {
			while (at(s, n, j) == ' ' || at(s, n, j) == ',' || at(s, n, j) == '\t')
				j++;
			(void)eat(s, n, &j, "and ");
		}
		end = scan_number(s, n, j);
		if (end == j)
			break;
		k = end;
		while (at(s, n, k) == ' ')
			k++;
		for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
			size_t e = k;

			if (eat(s, n, &e, units[u].name) && !letter_at(s, n, e)) {
				unit = units[u].ms;
				k = e;
				break;
			}
		}
		if (unit == 0.0)
			break;
		total += number_value(s, j, end) * unit;
		parts++;
		i = k;
	}
	if (parts == 0)
		return false;
	*ms = round_ms(total);
	return true;
}

bool hint_duration(const char *s, size_t len, int64_t *out_ms)
{
	return s != NULL && duration_at(s, len, 0, out_ms);
}

/* --- dates --- */

static const char *const month_names[12] = {
	"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
};

/* Exactly `count` digits at *i. */
static bool digits(const char *s, size_t n, size_t *i, int count, int *out)
{
	int v = 0;

	for (int k = 0; k < count; k++) {
		if (!is_digit(at(s, n, *i)))
			return false;
		v = v * 10 + (s[*i] - '0');
		(*i)++;
	}
	*out = v;
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil), so no timegm(), which is neither C11 nor POSIX. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* A calendar time as the reference's datetime() accepts it, in epoch ms. */
static bool civil_ms(int y, int mo, int d, int h, int mi, int sec, int64_t *out)
{
	static const int mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap) ||
	    h > 23 || mi > 59 || sec > 59)
		return false;
	*out = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * INT64_C(60000) +
	       sec * INT64_C(1000);
	return true;
}

/* `HH:MM:SS` */
static bool clock_time(const char *s, size_t n, size_t *i, int *h, int *mi, int *sec)
{
	return digits(s, n, i, 2, h) && eat(s, n, i, ":") && digits(s, n, i, 2, mi) &&
	       eat(s, n, i, ":") && digits(s, n, i, 2, sec);
}

/* The month name at *i ("Nov"), 1..12, or 0. */
static int month_at(const char *s, size_t n, size_t *i)
{
	for (int k = 0; k < 12; k++)
		if (eat(s, n, i, month_names[k]))
			return k + 1;
	return 0;
}

/* A day of the month at *i: one or two digits. */
static bool day_at(const char *s, size_t n, size_t *i, int *day)
{
	if (!digits(s, n, i, 1, day))
		return false;
	if (is_digit(at(s, n, *i)))
		*day = *day * 10 + (s[(*i)++] - '0');
	return true;
}

/* IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT", from after the comma. */
static bool imf_fixdate(const char *s, size_t n, size_t i, int64_t *out)
{
	int day, month, year, h, mi, sec;

	skip_spaces(s, n, &i);
	if (!day_at(s, n, &i, &day) || !skip_spaces1(s, n, &i))
		return false;
	month = month_at(s, n, &i);
	if (month == 0 || !skip_spaces1(s, n, &i) || !digits(s, n, &i, 4, &year) ||
	    !skip_spaces1(s, n, &i) || !clock_time(s, n, &i, &h, &mi, &sec))
		return false;
	skip_spaces(s, n, &i);
	return eat(s, n, &i, "gmt") && i == n && civil_ms(year, month, day, h, mi, sec, out);
}

/* RFC 850, "Sunday, 06-Nov-94 08:49:37 GMT", from after the comma. The
 * two-digit year is read as RFC 6265 reads it (70..99: 19xx, else 20xx), so
 * the parse stays a pure function of the text. */
static bool rfc850_date(const char *s, size_t n, size_t i, int64_t *out)
{
	int day, month, year, h, mi, sec;

	skip_spaces(s, n, &i);
	if (!digits(s, n, &i, 2, &day) || !eat(s, n, &i, "-"))
		return false;
	month = month_at(s, n, &i);
	if (month == 0 || !eat(s, n, &i, "-") || !digits(s, n, &i, 2, &year) ||
	    !skip_spaces1(s, n, &i) || !clock_time(s, n, &i, &h, &mi, &sec))
		return false;
	year += year >= 70 ? 1900 : 2000;
	skip_spaces(s, n, &i);
	return eat(s, n, &i, "gmt") && i == n && civil_ms(year, month, day, h, mi, sec, out);
}

/* asctime, "Sun Nov  6 08:49:37 1994" (GMT by definition), from after the
 * day name. */
static bool asctime_date(const char *s, size_t n, size_t i, int64_t *out)
{
	int day, month, year, h, mi, sec;

	if (!skip_spaces1(s, n, &i))
		return false;
	month = month_at(s, n, &i);
	if (month == 0 || !skip_spaces1(s, n, &i) || !day_at(s, n, &i, &day) ||
	    !skip_spaces1(s, n, &i) || !clock_time(s, n, &i, &h, &mi, &sec) ||
	    !skip_spaces1(s, n, &i) || !digits(s, n, &i, 4, &year))
		return false;
	skip_spaces(s, n, &i);
	return i == n && civil_ms(year, month, day, h, mi, sec, out);
}

/* The whole of s[0..n) is an HTTP-date (RFC 9110 5.6.7): the IMF-fixdate
 * servers send, or one of the two obsolete forms a recipient must still
 * accept. Any letters for the day name (three, or a whole name before the
 * RFC 850 form's comma). */
static bool parse_http_date(const char *s, size_t n, int64_t *out)
{
	size_t i = 0;

	while (i < 9 && is_alpha(at(s, n, i)))
		i++;
	if (i < 3)
		return false;
	if (!eat(s, n, &i, ","))
		return i == 3 && asctime_date(s, n, i, out);
	return (i == 4 && imf_fixdate(s, n, i, out)) || rfc850_date(s, n, i, out);
}

/* The whole of s[0..n) is an RFC 3339 time, "2025-06-01T12:00:30Z",
 * fractions of a second ignored. */
static bool parse_rfc3339(const char *s, size_t n, int64_t *out)
{
	size_t i = 0;
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 1;
	int64_t ms;

	if (!digits(s, n, &i, 4, &y) || !eat(s, n, &i, "-") || !digits(s, n, &i, 2, &mo) ||
	    !eat(s, n, &i, "-") || !digits(s, n, &i, 2, &d))
		return false;
	if (!eat(s, n, &i, "t") && !eat(s, n, &i, " "))
		return false;
	if (!clock_time(s, n, &i, &h, &mi, &sec))
		return false;
	if (at(s, n, i) == '.' && is_digit(at(s, n, i + 1))) {
		i++;
		while (is_digit(at(s, n, i)))
			i++;
	}
	if (!eat(s, n, &i, "z")) {
		if (at(s, n, i) != '+' && at(s, n, i) != '-')
			return false;
		sign = s[i++] == '-' ? -1 : 1;
		if (!digits(s, n, &i, 2, &oh))
			return false;
		(void)eat(s, n, &i, ":");
		if (!digits(s, n, &i, 2, &om))
			return false;
	}
	if (i != n || !civil_ms(y, mo, d, h, mi, sec, &ms))
		return false;
	*out = ms - sign * (int64_t)(oh * 60 + om) * 60000;
	return true;
}

/* --- headers --- */

/* A header value, stripped; an integer value is written out. */
struct hval {
	const char *s;
	size_t n;
	char num[24];
};

static void strip(struct hval *v)
{
	while (v->n > 0 && is_space((unsigned char)v->s[0])) {
		v->s++;
		v->n--;
	}
	while (v->n > 0 && is_space((unsigned char)v->s[v->n - 1]))
		v->n--;
}

static bool name_is(const char *key, const char *lname)
{
	size_t k = 0;

	for (; key[k] != '\0' && lname[k] != '\0'; k++)
		if (to_lower((unsigned char)key[k]) != lname[k])
			return false;
	return key[k] == lname[k];
}

/* The value of header lname (lower case; names compare case-insensitively,
 * a later duplicate wins), stripped. */
static bool header_get(const json_t *headers, const char *lname, struct hval *out)
{
	const char *key;
	json_t *v;
	bool found = false;

	json_object_foreach((json_t *)headers, key, v) {
		if (!name_is(key, lname))
			continue;
		if (json_is_string(v)) {
			out->s = json_string_value(v);
			out->n = json_string_length(v);
		} else if (json_is_integer(v)) {
			int len = snprintf(out->num, sizeof(out->num), "%lld",
					   (long long)json_integer_value(v));

			out->s = out->num;
			out->n = len > 0 ? (size_t)len : 0;
		} else {
			continue;
		}
		found = true;
	}
	if (found)
		strip(out);
	return found;
}

int64_t hint_announced_rpm(const json_t *headers)
{
	static const char *const names[] = { "x-ratelimit-limit-requests",
					     "anthropic-ratelimit-requests-limit" };
	struct hval v;
	int64_t n;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (header_get(headers, names[i], &v) &&
		    number_from_digits(v.s, v.n, &n) == NUMBER_EXACT && n > 0)
			return n;
	return 0;
}

static bool header_is_zero(const json_t *headers, const char *lname)
{
	struct hval v;

	return header_get(headers, lname, &v) && v.n == 1 && v.s[0] == '0';
}

/* The whole value is a decimal. */
static bool whole_number(const struct hval *v, double *out)
{
	if (v->n == 0 || scan_number(v->s, v->n, 0) != v->n)
		return false;
	*out = number_value(v->s, 0, v->n);
	return true;
}

/* x-ratelimit-reset-requests / -tokens: when a bucket refills. OpenAI sends
 * them on every response, so a bucket counts only when it is exhausted (its
 * x-ratelimit-remaining-* is "0") or its remaining count is not sent at all;
 * the exhausted one wins, else the longer. */
static bool ratelimit_reset(const json_t *headers, int64_t *out)
{
	static const char *const kinds[2][2] = {
		{ "x-ratelimit-reset-requests", "x-ratelimit-remaining-requests" },
		{ "x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens" },
	};
	bool found = false, best_zero = false;
	int64_t best = 0;

	for (size_t k = 0; k < 2; k++) {
		struct hval v;
		int64_t ms;
		bool zero;

		if (!header_get(headers, kinds[k][0], &v) || !duration_at(v.s, v.n, 0, &ms))
			continue;
		zero = header_is_zero(headers, kinds[k][1]);
		if (!zero && header_get(headers, kinds[k][1], &v))
			continue;	/* requests or tokens left: not what blocks */
		if (!found || (zero && !best_zero) || (zero == best_zero && ms > best)) {
			best = ms;
			best_zero = zero;
			found = true;
		}
	}
	if (found)
		*out = best;
	return found;
}

/* anthropic-ratelimit-<kind>-reset whose -remaining is "0": the latest. */
static bool anthropic_reset(const json_t *headers, int64_t now, int64_t *out)
{
	static const char prefix[] = "anthropic-ratelimit-";
	static const char suffix[] = "-reset";
	const size_t pn = sizeof(prefix) - 1, sn = sizeof(suffix) - 1;
	const char *key;
	json_t *v;
	bool found = false;
	int64_t best = 0;

	json_object_foreach((json_t *)headers, key, v) {
		char name[128];
		size_t kn = strlen(key);
		struct hval val;
		int64_t t;
		bool ok = kn > pn + sn && kn < sizeof(name) - 16;

		(void)v;
		for (size_t k = 0; ok && k < kn; k++) {
			name[k] = (char)to_lower((unsigned char)key[k]);
			if (k >= pn && k < kn - sn && !(is_alpha(name[k]) || name[k] == '-'))
				ok = false;
		}
		if (!ok || memcmp(name, prefix, pn) != 0 || memcmp(name + kn - sn, suffix, sn) != 0)
			continue;
		name[kn] = '\0';
		/* The first of the names that differ only in case stands for all. */
		{
			const char *k2;
			json_t *v2;
			bool earlier = false;

			json_object_foreach((json_t *)headers, k2, v2) {
				(void)v2;
				if (k2 == key)
					break;
				earlier = earlier || name_is(k2, name);
			}
			if (earlier)
				continue;
		}
		if (!header_get(headers, name, &val) || !parse_rfc3339(val.s, val.n, &t))
			continue;
		memcpy(name + kn - sn, "-remaining", sizeof("-remaining"));
		if (!header_is_zero(headers, name))
			continue;
		if (!found || until(t, now) > best) {
			best = until(t, now);
			found = true;
		}
	}
	if (found)
		*out = best;
	return found;
}

/* x-ratelimit-reset-ms: N (an epoch in ms above 1e12, else a delay in ms) and
 * x-ratelimit-reset: N (epoch seconds above 1e9, else seconds), as Groq and
 * OpenAI-compatible gateways send them. */
static bool ratelimit_reset_plain(const json_t *headers, int64_t now, int64_t *out)
{
	struct hval v;
	double x;

	if (header_get(headers, "x-ratelimit-reset-ms", &v) && whole_number(&v, &x)) {
		if (x > 1e12 && now == 0)
			return false;
		*out = x > 1e12 ? clamp_ms(until(epoch_ms(x), now)) : round_ms(x);
		return true;
	}
	if (header_get(headers, "x-ratelimit-reset", &v) && whole_number(&v, &x)) {
		if (x > 1e9 && now == 0)
			return false;
		*out = x > 1e9 ? clamp_ms(until(epoch_ms(x * MS_PER_S), now)) : round_ms(x * MS_PER_S);
		return true;
	}
	return false;
}

bool hint_in_headers(const json_t *headers, int64_t now_ms, bool buckets, int64_t *out_ms)
{
	struct hval v;
	double x;
	int64_t t, ms, now = now_ms;

	if (!json_is_object(headers))
		return false;
	/* Absolute times in the headers are measured against the response's own
	 * Date (the server's clock), so a skewed local clock does not matter;
	 * without one, against now_ms. */
	if (header_get(headers, "date", &v) && !parse_http_date(v.s, v.n, &now))
		now = now_ms;
	if (header_get(headers, "retry-after-ms", &v) && whole_number(&v, &x)) {
		*out_ms = round_ms(x);
		return true;
	}
	if (header_get(headers, "retry-after", &v)) {
		if (whole_number(&v, &x)) {
			*out_ms = round_ms(x * MS_PER_S);
			return true;
		}
		if (parse_http_date(v.s, v.n, &t) && now != 0) {
			*out_ms = clamp_ms(until(t, now));
			return true;
		}
	}
	if (!buckets)
		return false;
	if (ratelimit_reset_plain(headers, now, &ms) || ratelimit_reset(headers, &ms)) {
		*out_ms = ms;
		return true;
	}
	if (now != 0 && anthropic_reset(headers, now, &ms)) {
		*out_ms = clamp_ms(ms);
		return true;
	}
	return false;
}

/* --- text: typed fields --- */

/* `["']?\s*(?:[:=]>?|,)\s*\[?\s*["']?` — each optional part taken when
 * there, which is the regex's only way to reach a number after it. */
static bool separator(const char *s, size_t n, size_t *i)
{
	size_t k = *i;

	if (is_quote(at(s, n, k)))
		k++;
	skip_spaces(s, n, &k);
	if (at(s, n, k) == ':' || at(s, n, k) == '=') {
		k++;
		if (at(s, n, k) == '>')
			k++;
	} else if (at(s, n, k) == ',') {
		k++;
	} else {
		return false;
	}
	skip_spaces(s, n, &k);
	if (at(s, n, k) == '[')
		k++;
	skip_spaces(s, n, &k);
	if (is_quote(at(s, n, k)))
		k++;
	*i = k;
	return true;
}

/* `[_-]?` */
static void opt_dash(const char *s, size_t n, size_t *i)
{
	if (at(s, n, *i) == '_' || at(s, n, *i) == '-')
		(*i)++;
}

/* The value of a typed field starting at p, as [*a, *b). */
typedef bool field_fn(const char *s, size_t n, size_t p, size_t *a, size_t *b);

/* SEP N after the name that ends at i: the number as [*a, *b). */
static bool sep_number(const char *s, size_t n, size_t i, size_t *a, size_t *b)
{
	if (!separator(s, n, &i))
		return false;
	*a = i;
	*b = scan_number(s, n, i);
	return *b > i;
}

/* retry[_-]?after[_-]?ms SEP N */
static bool field_retry_after_ms(const char *s, size_t n, size_t p, size_t *a, size_t *b)
{
	size_t i = p;

	if (!eat(s, n, &i, "retry"))
		return false;
	opt_dash(s, n, &i);
	if (!eat(s, n, &i, "after"))
		return false;
	opt_dash(s, n, &i);
	return eat(s, n, &i, "ms") && sep_number(s, n, i, a, b);
}

/* retryDelay["']?\s*[:=]\s*["']N s["'] */
static bool field_retry_delay(const char *s, size_t n, size_t p, size_t *a, size_t *b)
{
	size_t i = p;

	if (!eat(s, n, &i, "retrydelay"))
		return false;
	if (is_quote(at(s, n, i)))
		i++;
	skip_spaces(s, n, &i);
	if (at(s, n, i) != ':' && at(s, n, i) != '=')
		return false;
	i++;
	skip_spaces(s, n, &i);
	if (!is_quote(at(s, n, i)))
		return false;
	*a = ++i;
	*b = scan_number(s, n, i);
	i = *b;
	return *b > *a && eat(s, n, &i, "s") && is_quote(at(s, n, i));
}

/* google-api-core's protobuf text: retry_delay { seconds: 37 } */
static bool field_retry_delay_proto(const char *s, size_t n, size_t p, size_t *a, size_t *b)
{
	size_t i = p;

	if (!eat(s, n, &i, "retry_delay"))
		return false;
	skip_spaces(s, n, &i);
	if (!eat(s, n, &i, "{"))
		return false;
	skip_spaces(s, n, &i);
	if (!eat(s, n, &i, "seconds"))
		return false;
	skip_spaces(s, n, &i);
	if (!eat(s, n, &i, ":"))
		return false;
	skip_spaces(s, n, &i);
	*a = i;
	*b = scan_number(s, n, i);
	return *b > i;
}

/* Hugging Face's model-loading answer: "estimated_time": 20.0 (seconds) */
static bool field_estimated_time(const char *s, size_t n, size_t p, size_t *a, size_t *b)
{
	size_t i = p;

	return eat(s, n, &i, "estimated_time") && sep_number(s, n, i, a, b);
}

/* resets?_in_seconds SEP N */
static bool field_resets_in_seconds(const char *s, size_t n, size_t p, size_t *a, size_t *b)
{
	size_t i = p;

	if (!eat(s, n, &i, "reset"))
		return false;
	(void)eat(s, n, &i, "s");
	return eat(s, n, &i, "_in_seconds") && sep_number(s, n, i, a, b);
}

/* retry[ _-]?after SEP N(?![0-9.]|\s*[a-z]) — a bare number of seconds
 * ("retry_after": 30, Retry-After: 20, "Rate limited. Retry after: 45"). */
static bool field_retry_after(const char *s, size_t n, size_t p, size_t *a, size_t *b)
{
	size_t i = p, k;

	if (!eat(s, n, &i, "retry"))
		return false;
	if (at(s, n, i) == ' ')
		i++;
	else
		opt_dash(s, n, &i);
	if (!eat(s, n, &i, "after") || !separator(s, n, &i))
		return false;
	*a = i;
	*b = scan_number(s, n, i);
	if (*b == i || is_digit(at(s, n, *b)) || at(s, n, *b) == '.')
		return false;
	k = *b;
	skip_spaces(s, n, &k);
	return !is_alpha(at(s, n, k));
}

/* x-ratelimit-reset-(?:requests|tokens) SEP ([0-9][0-9.hms]*) */
static bool field_ratelimit_reset(const char *s, size_t n, size_t p, size_t *a, size_t *b)
{
	size_t i = p;
	int c;

	if (!eat(s, n, &i, "x-ratelimit-reset-"))
		return false;
	if (!eat(s, n, &i, "requests") && !eat(s, n, &i, "tokens"))
		return false;
	if (!separator(s, n, &i) || !is_digit(at(s, n, i)))
		return false;
	*a = i;
	while ((c = to_lower(at(s, n, i))) != -1 &&
	       (is_digit(c) || c == '.' || c == 'h' || c == 'm' || c == 's'))
		i++;
	*b = i;
	return true;
}

static const struct {
	field_fn *match;
	double unit_ms;		/* 0: the value is a duration */
} fields[] = {
	{ field_retry_after_ms, 1 },
	{ field_retry_delay, MS_PER_S },
	{ field_retry_delay_proto, MS_PER_S },
	{ field_resets_in_seconds, MS_PER_S },
	{ field_estimated_time, MS_PER_S },
	{ field_retry_after, MS_PER_S },
	{ field_ratelimit_reset, 0 },
};

/* --- text: phrases --- */

/* A phrase starting at p (after `\b`), ending where the duration must be. */
typedef bool phrase_fn(const char *s, size_t n, size_t p, size_t *end);

/* (?<!will )(?<!'ll )\b(?:try\s+again|retry)\s+(?:in|after)\s+
 * (?:~\s*|about\s+|approximately\s+)? */
static bool phrase_try_again(const char *s, size_t n, size_t p, size_t *end)
{
	size_t i = p, k;

	if (p >= 5) {
		k = p - 5;
		if (eat(s, n, &k, "will "))
			return false;
	}
	if (p >= 4) {
		k = p - 4;
		if (eat(s, n, &k, "'ll "))
			return false;
	}
	if (!(eat(s, n, &i, "try") && skip_spaces1(s, n, &i) && eat(s, n, &i, "again"))) {
		i = p;
		if (!eat(s, n, &i, "retry"))
			return false;
	}
	if (!skip_spaces1(s, n, &i))
		return false;
	k = i;
	if (!(eat(s, n, &k, "in") && skip_spaces1(s, n, &k))) {
		k = i;
		if (!(eat(s, n, &k, "after") && skip_spaces1(s, n, &k)))
			return false;
	}
	/* The optional (?:~\s*|about\s+|approximately\s+), taken when there. */
	i = k;
	if (eat(s, n, &k, "~")) {
		skip_spaces(s, n, &k);
		i = k;
	} else if (eat(s, n, &k, "about") && skip_spaces1(s, n, &k)) {
		i = k;
	} else {
		k = i;
		if (eat(s, n, &k, "approximately") && skip_spaces1(s, n, &k))
			i = k;
	}
	*end = i;
	return true;
}

/* \bresets?\s+(?:in|after)\s+ */
static bool phrase_reset(const char *s, size_t n, size_t p, size_t *end)
{
	size_t i = p, k;

	if (!eat(s, n, &i, "reset"))
		return false;
	(void)eat(s, n, &i, "s");
	if (!skip_spaces1(s, n, &i))
		return false;
	k = i;
	if (!(eat(s, n, &k, "in") && skip_spaces1(s, n, &k))) {
		k = i;
		if (!(eat(s, n, &k, "after") && skip_spaces1(s, n, &k)))
			return false;
	}
	*end = k;
	return true;
}

/* \bwait\s+(?:for\s+)?(?:about\s+)?(?=[0-9]) */
static bool phrase_wait(const char *s, size_t n, size_t p, size_t *end)
{
	size_t i = p, k;

	if (!eat(s, n, &i, "wait") || !skip_spaces1(s, n, &i))
		return false;
	k = i;
	if (eat(s, n, &k, "for") && skip_spaces1(s, n, &k))
		i = k;
	k = i;
	if (eat(s, n, &k, "about") && skip_spaces1(s, n, &k))
		i = k;
	if (!is_digit(at(s, n, i)))
		return false;
	*end = i;
	return true;
}

static phrase_fn *const phrases[] = { phrase_try_again, phrase_reset, phrase_wait };

/* The first match of phrase f at or after `from` (where `\b` holds). */
static bool find_phrase(phrase_fn *f, const char *s, size_t n, size_t from, size_t *start,
			size_t *end)
{
	for (size_t p = from; p < n; p++) {
		if (p > 0 && is_word((unsigned char)s[p - 1]))
			continue;
		if (f(s, n, p, end)) {
			*start = p;
			return true;
		}
	}
	return false;
}

/* "|1755615600": ten digits after a bar, then no word character. */
static bool epoch_after_bar(const char *s, size_t n, int64_t *epoch_s)
{
	for (size_t p = 0; p + 11 <= n; p++) {
		int64_t v = 0;
		size_t k;

		if (s[p] != '|')
			continue;
		for (k = p + 1; k < p + 11 && is_digit((unsigned char)s[k]); k++)
			v = v * 10 + (s[k] - '0');
		if (k == p + 11 && !is_word(at(s, n, k))) {
			*epoch_s = v;
			return true;
		}
	}
	return false;
}

bool hint_in_text(const char *text, size_t len, int64_t now_ms, int64_t *out_ms)
{
	bool found = false;
	size_t best_start = 0;
	int64_t best = 0, epoch_s;

	if (text == NULL)
		return false;
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
		for (size_t p = 0; p < len; p++) {
			size_t a, b;
			int64_t ms;

			if (!fields[f].match(text, len, p, &a, &b))
				continue;
			/* Only the field's first occurrence counts. */
			if (fields[f].unit_ms == 0) {
				if (!duration_at(text, b, a, &ms))
					break;
			} else {
				ms = round_ms(number_value(text, a, b) * fields[f].unit_ms);
			}
			*out_ms = ms;
			return true;
		}
	}
	for (size_t k = 0; k < sizeof(phrases) / sizeof(phrases[0]); k++) {
		size_t from = 0, start, end;
		int64_t ms;

		while (find_phrase(phrases[k], text, len, from, &start, &end)) {
			if (duration_at(text, len, end, &ms)) {
				if (!found || start < best_start) {
					best_start = start;
					best = ms;
					found = true;
				}
				break;
			}
			from = end;
		}
	}
	if (found) {
		*out_ms = best;
		return true;
	}
	if (now_ms != 0 && epoch_after_bar(text, len, &epoch_s)) {
		*out_ms = clamp_ms(until(epoch_s * 1000, now_ms));
		return true;
	}
	return false;
}

/* --- raw text --- */

/* "name: value" as the HTTP provider writes one header: the value after the
 * colon, stripped, or false when the text is not that header. */
static bool header_line(const char *s, size_t n, const char *lname, struct hval *v)
{
	size_t i = 0;

	if (!eat(s, n, &i, lname))
		return false;
	skip_spaces(s, n, &i);
	if (at(s, n, i) != ':')
		return false;
	v->s = s + i + 1;
	v->n = n - i - 1;
	strip(v);
	return true;
}

/* The forms the HTTP provider's header lines need beyond hint_in_text. */
static bool header_line_hint(const char *s, size_t n, int64_t now, int64_t *out)
{
	struct hval v;
	double x;
	int64_t t;

	if (header_line(s, n, "retry-after", &v) && parse_http_date(v.s, v.n, &t) && now != 0) {
		*out = clamp_ms(until(t, now));
		return true;
	}
	if (header_line(s, n, "x-ratelimit-reset-ms", &v) && whole_number(&v, &x)) {
		t = round_ms(x);
		*out = t > INT64_C(1000000000000) ? (now != 0 ? clamp_ms(until(t, now)) : -1) : t;
		return *out >= 0;
	}
	if (header_line(s, n, "x-ratelimit-reset", &v) && whole_number(&v, &x)) {
		t = round_ms(x * MS_PER_S);
		*out = t > INT64_C(1000000000000) ? (now != 0 ? clamp_ms(until(t, now)) : -1) : t;
		return *out >= 0;
	}
	return false;
}

bool hint_parse(const char *text, size_t len, int64_t now_epoch_ms, int64_t *out_ms)
{
	size_t cap = len < ERRTEXT_MAX ? len : ERRTEXT_MAX;
	char *buf;
	size_t n;
	bool found;
	int64_t ms = 0;

	if (text == NULL || len == 0)
		return false;
	buf = malloc(cap);
	if (buf == NULL)
		return false;
	n = errtext_normalize(buf, text, len, NULL, 0);
	found = hint_in_text(buf, n, now_epoch_ms, &ms) ||
		header_line_hint(buf, n, now_epoch_ms, &ms);
	free(buf);
	if (found)
		*out_ms = ms;
	return found;
}

char *hint_format(int64_t ms, char *out, size_t n)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} steps[] = { { "d", 86400000 }, { "h", 3600000 }, { "m", 60000 }, { "s", 1000 } };
	size_t used = 0;
	int parts = 0;

	if (n == 0)
		return out;
	out[0] = '\0';
	if (ms < 1000) {
		snprintf(out, n, "%lldms", (long long)(ms > 0 ? ms : 0));
		return out;
	}
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && parts < 2; i++) {
		int64_t k = ms / steps[i].ms;
		int w;

		if (k == 0) {
			if (parts > 0)
				break;	/* "1h" rather than "1h0m" */
			continue;
		}
		ms -= k * steps[i].ms;
		w = snprintf(out + used, n - used, "%lld%s", (long long)k, steps[i].unit);
		if (w < 0 || (size_t)w >= n - used)
			break;
		used += (size_t)w;
		parts++;
	}
	return out;
}

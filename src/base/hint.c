#include "base/hint.h"

#include <string.h>

/* The largest hint returned (~31 700 years): far beyond any wait a caller
 * would honour, yet far from INT64_MAX. */
#define HINT_MAX_MS INT64_C(1000000000000000)
/* Intermediate values saturate here, leaving room to subtract `now`. */
#define SAT_MS INT64_C(1000000000000000000)
/* Fraction digits kept; later non-zero digits round the kept ones up. */
#define FRAC_DIGITS_MAX 12

#define MS_PER_S INT64_C(1000)
#define MS_PER_MIN INT64_C(60000)
#define MS_PER_H INT64_C(3600000)

struct cursor {
	const char *s;
	size_t len;
	size_t i;
};

/* A non-negative decimal, exact enough to round up to whole ms. */
struct decimal {
	uint64_t ip;		/* integer part, saturated */
	uint64_t frac;		/* first fdigits fraction digits */
	unsigned fdigits;
};

/* ASCII only: error text is not locale text, and <ctype.h> is undefined
 * for negative chars. */
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

static bool is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* -1 at the end of the buffer. */
static int peek(const struct cursor *c)
{
	return c->i < c->len ? (unsigned char)c->s[c->i] : -1;
}

/* Consumes `lit` (case-insensitive) only if all of it is there. */
static bool eat(struct cursor *c, const char *lit)
{
	size_t n = strlen(lit);

	if (c->len - c->i < n)
		return false;
	for (size_t k = 0; k < n; k++)
		if (to_lower((unsigned char)c->s[c->i + k]) != to_lower((unsigned char)lit[k]))
			return false;
	c->i += n;
	return true;
}

static void skip_spaces(struct cursor *c)
{
	while (is_space(peek(c)))
		c->i++;
}

static bool skip_spaces1(struct cursor *c)
{
	if (!is_space(peek(c)))
		return false;
	skip_spaces(c);
	return true;
}

/* `\s*[:=]\s*` */
static bool eat_separator(struct cursor *c)
{
	skip_spaces(c);
	if (peek(c) != ':' && peek(c) != '=')
		return false;
	c->i++;
	skip_spaces(c);
	return true;
}

static void eat_digits(struct cursor *c, uint64_t *ip)
{
	while (is_digit(peek(c))) {
		unsigned d = (unsigned)(peek(c) - '0');

		*ip = *ip > (UINT64_MAX - 9) / 10 ? UINT64_MAX : *ip * 10 + d;
		c->i++;
	}
}

/* `\d+` */
static bool parse_uint(struct cursor *c, struct decimal *d)
{
	*d = (struct decimal){ 0 };
	if (!is_digit(peek(c)))
		return false;
	eat_digits(c, &d->ip);
	return true;
}

/* `\d+(\.\d*)?|\.\d+`; nothing is consumed on failure. */
static bool parse_decimal(struct cursor *c, struct decimal *d)
{
	size_t start = c->i;
	bool any = false;
	bool sticky = false;

	*d = (struct decimal){ 0 };
	if (is_digit(peek(c))) {
		eat_digits(c, &d->ip);
		any = true;
	}
	if (peek(c) == '.') {
		c->i++;
		while (is_digit(peek(c))) {
			unsigned digit = (unsigned)(peek(c) - '0');

			if (d->fdigits < FRAC_DIGITS_MAX) {
				d->frac = d->frac * 10 + digit;
				d->fdigits++;
			} else if (digit != 0) {
				sticky = true;
			}
			c->i++;
			any = true;
		}
	}
	if (!any) {
		c->i = start;
		return false;
	}
	if (sticky)
		d->frac++;	/* may reach 10^fdigits: still exact below */
	return true;
}

/* ceil(d * unit_ms), saturated at SAT_MS. */
static int64_t decimal_to_ms(const struct decimal *d, int64_t unit_ms)
{
	uint64_t unit = (uint64_t)unit_ms;
	uint64_t ms;

	if (d->ip > (uint64_t)SAT_MS / unit)
		return SAT_MS;
	ms = d->ip * unit;
	if (d->fdigits > 0) {
		uint64_t pow10 = 1;

		for (unsigned k = 0; k < d->fdigits; k++)
			pow10 *= 10;
		/* frac <= 10^12 and unit <= 3.6e6: the product fits. */
		ms += (d->frac * unit + pow10 - 1) / pow10;
	}
	return ms > (uint64_t)SAT_MS ? SAT_MS : (int64_t)ms;
}

static int64_t add_sat(int64_t a, int64_t b)
{
	/* Both in [0, SAT_MS]: the sum cannot overflow. */
	return a + b > SAT_MS ? SAT_MS : a + b;
}

/* target - now, for a target within ±SAT_MS and any now. */
static int64_t until(int64_t target, int64_t now)
{
	if (now < 0 && target > INT64_MAX + now)
		return INT64_MAX;
	if (now > 0 && target < INT64_MIN + now)
		return INT64_MIN;
	return target - now;
}

/* --- HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, RFC 850, asctime --- */

static const char *const month_names[12] = {
	"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
};

/* Long names first: "Monday" must not stop after "Mon". */
static const char *const weekday_names[14] = {
	"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
	"mon", "tue", "wed", "thu", "fri", "sat", "sun",
};

static bool parse_weekday(struct cursor *c)
{
	for (size_t k = 0; k < sizeof(weekday_names) / sizeof(weekday_names[0]); k++)
		if (eat(c, weekday_names[k]))
			return true;
	return false;
}

static bool parse_month(struct cursor *c, int *month)
{
	for (int k = 0; k < 12; k++) {
		if (eat(c, month_names[k])) {
			*month = k + 1;
			return true;
		}
	}
	return false;
}

/* Between min and max digits, and no digit right after them. */
static bool parse_digits(struct cursor *c, size_t min, size_t max, int *out)
{
	size_t n = 0;
	int v = 0;

	while (n < max && is_digit(peek(c))) {
		v = v * 10 + (peek(c) - '0');
		c->i++;
		n++;
	}
	if (n < min || is_digit(peek(c)))
		return false;
	*out = v;
	return true;
}

static bool parse_time(struct cursor *c, int *hour, int *min, int *sec)
{
	return parse_digits(c, 2, 2, hour) && eat(c, ":") &&
	       parse_digits(c, 2, 2, min) && eat(c, ":") &&
	       parse_digits(c, 2, 2, sec);
}

static bool is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
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

static bool parse_http_date(struct cursor *c, int64_t *epoch_ms)
{
	static const int mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int year, month, day, hour, min, sec;

	if (!parse_weekday(c))
		return false;
	if (eat(c, ",")) {
		skip_spaces(c);
		if (!parse_digits(c, 1, 2, &day))
			return false;
		if (eat(c, "-")) {
			/* RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT". A fixed
			 * pivot instead of "50 years ahead" is good until 2070. */
			if (!parse_month(c, &month) || !eat(c, "-") ||
			    !parse_digits(c, 2, 2, &year))
				return false;
			year += year < 70 ? 2000 : 1900;
		} else {
			/* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
			if (!skip_spaces1(c) || !parse_month(c, &month) ||
			    !skip_spaces1(c) || !parse_digits(c, 4, 4, &year))
				return false;
		}
		if (!skip_spaces1(c) || !parse_time(c, &hour, &min, &sec) ||
		    !skip_spaces1(c) || !eat(c, "GMT"))
			return false;
	} else {
		/* asctime: "Sun Nov  6 08:49:37 1994" */
		if (!skip_spaces1(c) || !parse_month(c, &month) || !skip_spaces1(c) ||
		    !parse_digits(c, 1, 2, &day) || !skip_spaces1(c) ||
		    !parse_time(c, &hour, &min, &sec) || !skip_spaces1(c) ||
		    !parse_digits(c, 4, 4, &year))
			return false;
	}
	if (day < 1 || day > mdays[month - 1] + (month == 2 && is_leap(year)) ||
	    hour > 23 || min > 59 || sec > 60)
		return false;
	*epoch_ms = ((days_from_civil(year, month, day) * 24 + hour) * 60 + min) * 60 * MS_PER_S +
		    sec * MS_PER_S;
	return true;
}

/* --- the rules, each parsing what follows its keyword --- */

/* retry-after-ms: N */
static bool rule_retry_after_ms(struct cursor *c, int64_t now, int64_t *ms)
{
	struct decimal d;

	(void)now;
	if (!eat_separator(c) || !parse_decimal(c, &d))
		return false;
	*ms = decimal_to_ms(&d, 1);
	return true;
}

/* retry-after: N | <HTTP-date>. The number must be the whole token
 * (`[^\s,;]+`), so "5s" or "soon" is no hint. */
static bool rule_retry_after(struct cursor *c, int64_t now, int64_t *ms)
{
	struct decimal d;
	size_t value;
	int64_t date_ms;
	int next;

	if (!eat_separator(c))
		return false;
	value = c->i;
	if (parse_decimal(c, &d)) {
		next = peek(c);
		if (next == -1 || is_space(next) || next == ',' || next == ';') {
			*ms = decimal_to_ms(&d, MS_PER_S);
			return true;
		}
		c->i = value;
	}
	if (!parse_http_date(c, &date_ms))
		return false;
	*ms = until(date_ms, now);
	return true;
}

/* reset after 1h2m3.5s — h and m optional, s required. Taking h and m
 * greedily gives the regex's answer: backtracking over them cannot help,
 * since their digits are followed by a letter that is not 's'. */
static bool rule_reset_after(struct cursor *c, int64_t now, int64_t *ms)
{
	struct decimal h = { 0 }, m = { 0 }, s;
	size_t mark = c->i;

	(void)now;
	if (parse_uint(c, &h) && eat(c, "h")) {
		mark = c->i;
	} else {
		h = (struct decimal){ 0 };
		c->i = mark;
	}
	if (parse_uint(c, &m) && eat(c, "m")) {
		mark = c->i;
	} else {
		m = (struct decimal){ 0 };
		c->i = mark;
	}
	if (!parse_decimal(c, &s) || !eat(c, "s"))
		return false;
	*ms = add_sat(add_sat(decimal_to_ms(&h, MS_PER_H), decimal_to_ms(&m, MS_PER_MIN)),
		      decimal_to_ms(&s, MS_PER_S));
	return true;
}

/* N immediately followed by "ms" or "s" (no word boundary, as upstream). */
static bool parse_ms_or_s(struct cursor *c, int64_t *ms)
{
	struct decimal d;

	if (!parse_decimal(c, &d))
		return false;
	if (eat(c, "ms"))
		*ms = decimal_to_ms(&d, 1);
	else if (eat(c, "s"))
		*ms = decimal_to_ms(&d, MS_PER_S);
	else
		return false;
	return true;
}

/* Please retry in 1.5s | 500ms */
static bool rule_please_retry(struct cursor *c, int64_t now, int64_t *ms)
{
	(void)now;
	return parse_ms_or_s(c, ms);
}

/* "retryDelay": "3s" */
static bool rule_retry_delay(struct cursor *c, int64_t now, int64_t *ms)
{
	(void)now;
	skip_spaces(c);
	return eat(c, "\"") && parse_ms_or_s(c, ms) && eat(c, "\"");
}

/* try again in ~N unit, the unit a whole word. */
static bool rule_try_again(struct cursor *c, int64_t now, int64_t *ms)
{
	static const struct {
		const char *name;
		int64_t ms;
	} units[] = {
		{ "ms", 1 },
		{ "s", MS_PER_S }, { "sec", MS_PER_S }, { "secs", MS_PER_S },
		{ "second", MS_PER_S }, { "seconds", MS_PER_S },
		{ "m", MS_PER_MIN }, { "min", MS_PER_MIN }, { "mins", MS_PER_MIN },
		{ "minute", MS_PER_MIN }, { "minutes", MS_PER_MIN },
		{ "h", MS_PER_H }, { "hr", MS_PER_H }, { "hrs", MS_PER_H },
		{ "hour", MS_PER_H }, { "hours", MS_PER_H },
	};
	struct decimal d;
	size_t word, wlen;
	int next;

	(void)now;
	if (!skip_spaces1(c))
		return false;
	eat(c, "~");
	skip_spaces(c);
	if (!parse_decimal(c, &d))
		return false;
	skip_spaces(c);
	word = c->i;
	while (is_alpha(peek(c)))
		c->i++;
	wlen = c->i - word;
	next = peek(c);
	if (wlen == 0 || is_digit(next) || next == '_')
		return false;
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
		struct cursor u = { c->s, word + wlen, word };

		if (strlen(units[k].name) == wlen && eat(&u, units[k].name)) {
			*ms = decimal_to_ms(&d, units[k].ms);
			return true;
		}
	}
	return false;
}

/* x-ratelimit-reset-ms: N — an epoch in ms above 1e12, else a delay. */
static bool rule_ratelimit_reset_ms(struct cursor *c, int64_t now, int64_t *ms)
{
	struct decimal d;
	int64_t v;

	if (!eat_separator(c) || !parse_decimal(c, &d))
		return false;
	/* ceil(N) > 1e12 exactly when N > 1e12. */
	v = decimal_to_ms(&d, 1);
	*ms = v > INT64_C(1000000000000) ? until(v, now) : v;
	return true;
}

/* x-ratelimit-reset: N — epoch seconds above 1e9, else a delay in s. */
static bool rule_ratelimit_reset(struct cursor *c, int64_t now, int64_t *ms)
{
	struct decimal d;
	int64_t v;

	if (!eat_separator(c) || !parse_decimal(c, &d))
		return false;
	v = decimal_to_ms(&d, MS_PER_S);
	*ms = v > INT64_C(1000000000000) ? until(v, now) : v;
	return true;
}

static const struct {
	const char *keyword;
	bool (*parse)(struct cursor *c, int64_t now, int64_t *ms);
} rules[] = {
	{ "retry-after-ms", rule_retry_after_ms },
	{ "retry-after", rule_retry_after },
	{ "reset after ", rule_reset_after },
	{ "please retry in ", rule_please_retry },
	{ "\"retryDelay\":", rule_retry_delay },
	{ "try again in", rule_try_again },
	{ "x-ratelimit-reset-ms", rule_ratelimit_reset_ms },
	{ "x-ratelimit-reset", rule_ratelimit_reset },
};

bool hint_parse(const char *text, size_t len, int64_t now_epoch_ms, int64_t *out_ms)
{
	if (text == NULL)
		return false;
	/* A rule holds at the first occurrence of its keyword whose value
	 * parses; a later rule is tried only when an earlier one holds
	 * nowhere. */
	for (size_t r = 0; r < sizeof(rules) / sizeof(rules[0]); r++) {
		for (size_t at = 0; at < len; at++) {
			struct cursor c = { text, len, at };
			int64_t ms;

			if (!eat(&c, rules[r].keyword) || !rules[r].parse(&c, now_epoch_ms, &ms))
				continue;
			*out_ms = ms < 0 ? 0 : ms > HINT_MAX_MS ? HINT_MAX_MS : ms;
			return true;
		}
	}
	return false;
}

/* tzif — zone offsets from TZif bytes and POSIX TZ rules; see tzif.h. */
#include "base/tzif.h"

#include <ctype.h>
#include <string.h>

#define DAY_S 86400
/* Offsets beyond a day and a bit are no zone's: a damaged file. */
#define OFF_MAX (26 * 3600)
/* Counts past these are no real zone's; they also keep sizes from
 * overflowing. */
#define COUNT_MAX 100000
/* 2^40 s, some 35,000 years either side of 1970. */
#define T_BOUND (INT64_C(1) << 40)

int64_t tzif_civil_days(int64_t y, int m, int64_t d)
{
	int64_t era, yoe, doy;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5;
	return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468 + d - 1;
}

static bool leap_year(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* The year day number days falls in. The first guess uses the mean
 * Gregorian year (146097 days a 400 years), so the loops below step at
 * most a year: a guess of days / 366 was hundreds of millions of steps off
 * for a moment far from now (found by fuzz_tzif). */
static int64_t year_of(int64_t days)
{
	int64_t y = 1970 + days * 400 / 146097;

	while (tzif_civil_days(y + 1, 1, 1) <= days)
		y++;
	while (tzif_civil_days(y, 1, 1) > days)
		y--;
	return y;
}

static int weekday(int64_t days)
{
	return (int)(((days % 7) + 7 + 4) % 7); /* 1970-01-01 was a Thursday */
}

/* ---- POSIX TZ rules --------------------------------------------------------- */

/* A day of the year in a rule: Mm.w.d, Jn (no Feb 29) or n (from 0). */
struct rule_date {
	char kind; /* 'M', 'J' or 'n' */
	int m, w, d, n;
	int32_t time; /* seconds after local midnight: -167h .. 167h */
};

struct rule {
	int32_t std_off, dst_off; /* seconds east of UTC */
	bool has_dst;
	struct rule_date start, end;
};

struct cursor {
	const char *p, *end;
};

static bool at(const struct cursor *c, char ch)
{
	return c->p < c->end && *c->p == ch;
}

static int digits(struct cursor *c, int max_digits, int max)
{
	int v = 0, n = 0;

	while (c->p < c->end && n < max_digits && isdigit((unsigned char)*c->p)) {
		v = v * 10 + (*c->p++ - '0');
		n++;
	}
	return n == 0 || v > max ? -1 : v;
}

static bool name(struct cursor *c)
{
	const char *start = c->p;

	if (at(c, '<')) {
		while (c->p < c->end && *c->p != '>')
			c->p++;
		if (!at(c, '>'))
			return false;
		c->p++;
		return c->p - start > 2;
	}
	while (c->p < c->end && isalpha((unsigned char)*c->p))
		c->p++;
	return c->p - start >= 3;
}

/* [+-]hh[:mm[:ss]], hours up to max_h: seconds, sign applied; false if bad. */
static bool clock_value(struct cursor *c, int max_h, int32_t *out)
{
	int sign = 1, h, m = 0, s = 0;

	if (at(c, '+') || at(c, '-'))
		sign = *c->p++ == '-' ? -1 : 1;
	h = digits(c, 3, max_h);
	if (h < 0)
		return false;
	if (at(c, ':')) {
		c->p++;
		if ((m = digits(c, 2, 59)) < 0)
			return false;
		if (at(c, ':')) {
			c->p++;
			if ((s = digits(c, 2, 59)) < 0)
				return false;
		}
	}
	*out = sign * (h * 3600 + m * 60 + s);
	return true;
}

static bool rule_date(struct cursor *c, struct rule_date *d)
{
	memset(d, 0, sizeof(*d));
	d->time = 7200;
	if (at(c, 'M')) {
		c->p++;
		d->kind = 'M';
		if ((d->m = digits(c, 2, 12)) < 1 || !at(c, '.'))
			return false;
		c->p++;
		if ((d->w = digits(c, 1, 5)) < 1 || !at(c, '.'))
			return false;
		c->p++;
		if ((d->d = digits(c, 1, 6)) < 0)
			return false;
	} else if (at(c, 'J')) {
		c->p++;
		d->kind = 'J';
		if ((d->n = digits(c, 3, 365)) < 1)
			return false;
	} else {
		d->kind = 'n';
		if ((d->n = digits(c, 3, 365)) < 0)
			return false;
	}
	if (at(c, '/')) {
		c->p++;
		return clock_value(c, 167, &d->time);
	}
	return true;
}

static bool rule_parse(const char *text, size_t len, struct rule *r)
{
	struct cursor c = { text, text + len };
	int32_t v;

	memset(r, 0, sizeof(*r));
	if (!name(&c) || !clock_value(&c, 24, &v))
		return false;
	r->std_off = -v; /* POSIX counts west of UTC */
	if (c.p == c.end)
		return true;
	if (!name(&c))
		return false;
	r->has_dst = true;
	r->dst_off = r->std_off + 3600;
	if (c.p < c.end && *c.p != ',') {
		if (!clock_value(&c, 24, &v))
			return false;
		r->dst_off = -v;
	}
	/* No rule after the DST name: the C library's guess; none here. */
	if (!at(&c, ','))
		return false;
	c.p++;
	if (!rule_date(&c, &r->start) || !at(&c, ','))
		return false;
	c.p++;
	return rule_date(&c, &r->end) && c.p == c.end;
}

/* The day (days since the epoch) a rule date falls on in year y. */
static int64_t rule_day(const struct rule_date *d, int64_t y)
{
	int64_t first, next, day;

	if (d->kind == 'J')
		return tzif_civil_days(y, 1, 1) + d->n - 1 + (leap_year(y) && d->n >= 60);
	if (d->kind == 'n')
		return tzif_civil_days(y, 1, 1) + d->n;
	first = tzif_civil_days(y, d->m, 1);
	next = d->m == 12 ? tzif_civil_days(y + 1, 1, 1) : tzif_civil_days(y, d->m + 1, 1);
	day = first + (d->d - weekday(first) + 7) % 7 + (int64_t)(d->w - 1) * 7;
	while (day >= next)
		day -= 7; /* week 5: the last such day of the month */
	return day;
}

static int32_t rule_offset_at(const struct rule *r, int64_t t)
{
	int64_t y, start, end;
	bool dst;

	if (!r->has_dst)
		return r->std_off;
	/* Rules repeat yearly: a moment some 35,000 years out is read as the
	 * bound, which keeps every sum below within int64 whatever t is. */
	t = t < -T_BOUND ? -T_BOUND : t > T_BOUND ? T_BOUND : t;
	y = year_of((t + r->std_off) / DAY_S - ((t + r->std_off) % DAY_S < 0));
	/* Start is told in standard time, end in daylight time. */
	start = rule_day(&r->start, y) * DAY_S + r->start.time - r->std_off;
	end = rule_day(&r->end, y) * DAY_S + r->end.time - r->dst_off;
	if (start < end)
		dst = start <= t && t < end;
	else /* the southern hemisphere: daylight time across the new year */
		dst = !(end <= t && t < start);
	return dst ? r->dst_off : r->std_off;
}

bool tzif_rule_offset(const char *rule, size_t len, int64_t t, int32_t *off_s)
{
	struct rule r;

	if (!rule_parse(rule, len, &r) || r.std_off < -OFF_MAX || r.std_off > OFF_MAX ||
	    r.dst_off < -OFF_MAX || r.dst_off > OFF_MAX)
		return false;
	*off_s = rule_offset_at(&r, t);
	return true;
}

/* ---- TZif files --------------------------------------------------------------- */

struct counts {
	uint32_t isut, isstd, leap, time, type, chars;
};

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be_time(const unsigned char *p, size_t size)
{
	uint64_t v = 0;

	for (size_t i = 0; i < size; i++)
		v = v << 8 | p[i];
	if (size == 4)
		return (int32_t)(uint32_t)v;
	return (int64_t)v;
}

/* The header at p (44 bytes): its counts, or false. */
static bool header(const unsigned char *p, size_t len, struct counts *c, char *version)
{
	uint32_t *f[] = { &c->isut, &c->isstd, &c->leap, &c->time, &c->type, &c->chars };

	if (len < 44 || memcmp(p, "TZif", 4) != 0)
		return false;
	*version = (char)p[4];
	for (size_t i = 0; i < 6; i++) {
		*f[i] = be32(p + 20 + 4 * i);
		if (*f[i] > COUNT_MAX)
			return false;
	}
	return c->type >= 1 && (c->isut == 0 || c->isut == c->type) &&
	       (c->isstd == 0 || c->isstd == c->type);
}

static size_t block_size(const struct counts *c, size_t tsize)
{
	return c->time * tsize + c->time + c->type * 6 + c->chars + c->leap * (tsize + 4) +
	       c->isstd + c->isut;
}

bool tzif_offset(const unsigned char *data, size_t len, int64_t t, int32_t *off_s)
{
	const unsigned char *p = data, *times, *idx, *types, *foot = NULL;
	size_t tsize = 4, foot_len = 0, lo, hi;
	struct counts c;
	char version;
	int32_t off;
	uint8_t type;

	if (!header(p, len, &c, &version) || block_size(&c, 4) > len - 44)
		return false;
	if (version >= '2') {
		size_t skip = 44 + block_size(&c, 4);

		p += skip;
		len -= skip;
		tsize = 8;
		if (!header(p, len, &c, &version) || block_size(&c, 8) > len - 44)
			return false;
		foot = p + 44 + block_size(&c, 8);
		foot_len = len - 44 - block_size(&c, 8);
		/* "\n<rule>\n", the rule possibly empty */
		if (foot_len < 2 || foot[0] != '\n')
			return false;
		const unsigned char *nl = memchr(foot + 1, '\n', foot_len - 1);

		if (nl == NULL)
			return false;
		foot++;
		foot_len = (size_t)(nl - foot);
	}
	times = p + 44;
	idx = times + c.time * tsize;
	types = idx + c.time;
	/* The last transition at or before t. */
	lo = 0;
	hi = c.time;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (be_time(times + mid * tsize, tsize) <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == c.time && foot_len > 0)
		return tzif_rule_offset((const char *)foot, foot_len, t, off_s);
	type = lo == 0 ? 0 : idx[lo - 1];
	if (type >= c.type)
		return false;
	off = (int32_t)be32(types + 6 * (size_t)type);
	if (off < -OFF_MAX || off > OFF_MAX)
		return false;
	*off_s = off;
	return true;
}

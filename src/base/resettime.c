#include "base/resettime.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/hint.h"
#include "base/tzif.h"

/* The longest text read: a CLI's limit line is one sentence. */
#define TEXT_MAX 2048
#define DAY_S 86400

static const char *const months[] = { "jan", "feb", "mar", "apr", "may", "jun",
				      "jul", "aug", "sep", "oct", "nov", "dec" };

/* Words after which a clock time or date says when. */
static const char *const at_words[] = { "try again at ", "retry at ", "reset at ", "resets at ",
					"available again at ", "resets on ", "resets ", "until " };
/* Words after which a duration says how long. */
static const char *const in_words[] = { "try again in ", "retry in ", "resets in ", "reset in " };

static bool zone_offset(const char *zone, int64_t t, int32_t *off);

bool resettime_zone_known(const char *zone)
{
	int32_t off;

	if (zone == NULL || zone[0] == '\0' || strlen(zone) > 64 || zone[0] == '/' ||
	    strstr(zone, "..") != NULL)
		return false;
	if (strcmp(zone, "UTC") == 0 || strcmp(zone, "GMT") == 0)
		return true;
	for (const char *p = zone; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '/' && *p != '_' && *p != '-' && *p != '+')
			return false;
	/* Readable and a zone file: asked for its offset now. */
	return zone_offset(zone, (int64_t)time(NULL), &off);
}

/* A named zone's offset at t, read from its zoneinfo file (base/tzif) at
 * each use: no TZ switched, so nothing here touches the environment a
 * thread beside may be reading. UTC and GMT need no file. The files are
 * where the C library looks: TZDIR when it names an absolute folder
 * (a system with zoneinfo elsewhere, a user's own zone files), else
 * /usr/share/zoneinfo. */
#define ZONE_FILE_MAX (256 * 1024)

static const char *zone_dir(void)
{
	const char *dir = getenv("TZDIR");

	return dir != NULL && dir[0] == '/' ? dir : "/usr/share/zoneinfo";
}

static bool zone_offset(const char *zone, int64_t t, int32_t *off)
{
	char path[4400];
	unsigned char *buf;
	struct stat st;
	size_t got = 0;
	bool ok = false;
	int fd;

	if (strcmp(zone, "UTC") == 0 || strcmp(zone, "GMT") == 0) {
		*off = 0;
		return true;
	}
	if (zone[0] == '/' || strstr(zone, "..") != NULL ||
	    snprintf(path, sizeof(path), "%s/%s", zone_dir(), zone) >= (int)sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > ZONE_FILE_MAX ||
	    (buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return false;
	}
	got = fsutil_read_full(fd, buf, (size_t)st.st_size);
	close(fd);
	ok = got == (size_t)st.st_size && tzif_offset(buf, got, t, off);
	free(buf);
	return ok;
}

/* The wall clock at t in zone (NULL: the local one, TZ else
 * /etc/localtime, as the C library reads it). */
static int32_t offset_at(const char *zone, time_t t);

static void local_tm(time_t t, const char *zone, struct tm *out)
{
	time_t shifted;

	if (zone == NULL) {
		localtime_r(&t, out);
		return;
	}
	shifted = t + offset_at(zone, t);
	gmtime_r(&shifted, out);
}

static time_t fixed_make(const struct tm *tm, int off_s);

static int32_t offset_at(const char *zone, time_t t)
{
	int32_t off = 0;

	zone_offset(zone, (int64_t)t, &off); /* checked readable by read_zone */
	return off;
}

/* The moment the wall clock tm shows in zone. In a named zone: the offset
 * at a first guess, then at the moment that gives; a wall time a change
 * of offset skips (2:30 on a spring-forward night) is read with the
 * offset before the change, as mktime does: 3:30 in daylight time. */
static time_t local_make(struct tm *tm, const char *zone)
{
	int32_t o1, o2;
	time_t wall, t1, t2;

	if (zone == NULL) {
		tm->tm_isdst = -1;
		return mktime(tm);
	}
	wall = fixed_make(tm, 0);
	o1 = offset_at(zone, wall);
	t1 = wall - o1;
	o2 = offset_at(zone, t1);
	if (o2 == o1)
		return t1;
	t2 = wall - o2;
	if (offset_at(zone, t2) == o2)
		return t2;
	return wall - (o1 < o2 ? o1 : o2);
}

static const char *skip_spaces(const char *p)
{
	while (*p == ' ' || *p == ',' || *p == '\t')
		p++;
	return p;
}

static bool starts(const char *p, const char *word)
{
	return strncmp(p, word, strlen(word)) == 0;
}

/* Digits at *p (at most max), advancing; -1 when none. */
static int number(const char **p, int max)
{
	int v = 0, n = 0;

	while (n < max && isdigit((unsigned char)**p)) {
		v = v * 10 + (**p - '0');
		(*p)++;
		n++;
	}
	return n > 0 ? v : -1;
}

/* What the words after an anchor say. */
struct when {
	int year, mon, mday;  /* -1: not stated */
	bool tomorrow;
	int hour, min, sec;   /* hour -1: not stated */
	char zone[65];        /* "": not stated */
	bool fixed;           /* "z", "+02:00", "-0500": an offset, no zone */
	int off_s;            /* east of UTC, when fixed */
};

/* A time of day with a stated offset needs no zoneinfo: plain arithmetic. */
static time_t fixed_make(const struct tm *tm, int off_s)
{
	int64_t y = tm->tm_year + 1900, m = tm->tm_mon;

	y += m / 12;
	m %= 12;
	if (m < 0) {
		m += 12;
		y--;
	}
	return (time_t)(tzif_civil_days(y, (int)m + 1, tm->tm_mday) * DAY_S + tm->tm_hour * 3600 +
			tm->tm_min * 60 + tm->tm_sec - off_s);
}

/* "dec 5", "december 5th, 2026", "2026-12-05". */
static const char *read_date(const char *p, struct when *w)
{
	const char *q = p;
	int y, m, d;

	for (int i = 0; i < 12; i++) {
		if (!starts(q, months[i]))
			continue;
		q += 3;
		while (isalpha((unsigned char)*q))
			q++;
		q = skip_spaces(q);
		if ((d = number(&q, 2)) < 1 || d > 31)
			return p;
		while (isalpha((unsigned char)*q))
			q++; /* st, nd, rd, th */
		w->mon = i;
		w->mday = d;
		p = q;
		q = skip_spaces(q);
		/* A year: four digits, each looked at only once the one before
		 * is there (the text may end after any of them). */
		if (isdigit((unsigned char)q[0]) && isdigit((unsigned char)q[1]) &&
		    isdigit((unsigned char)q[2]) && isdigit((unsigned char)q[3]) &&
		    !isdigit((unsigned char)q[4]) && (y = number(&q, 4)) >= 1970) {
			w->year = y;
			p = q;
		}
		return p;
	}
	if ((y = number(&q, 4)) >= 1970 && *q == '-' && (q++, (m = number(&q, 2)) >= 1) && m <= 12 &&
	    *q == '-' && (q++, (d = number(&q, 2)) >= 1) && d <= 31) {
		w->year = y;
		w->mon = m - 1;
		w->mday = d;
		if (*q == 't')
			q++;
		return q;
	}
	return p;
}

/* "11pm", "11 p.m.", "3:45 pm", "15:45", "15:45:30". */
static const char *read_clock(const char *p, struct when *w)
{
	const char *q = p;
	int h = number(&q, 2), m = 0, s = 0;
	bool colon = false, fixed = false;
	int off_s = 0;

	if (h < 0)
		return p;
	if (*q == ':' && isdigit((unsigned char)q[1])) {
		q++;
		m = number(&q, 2);
		colon = true;
		if (*q == ':' && isdigit((unsigned char)q[1])) {
			q++;
			s = number(&q, 2);
		}
	}
	if (colon && *q == '.' && isdigit((unsigned char)q[1]))
		for (q++; isdigit((unsigned char)*q);)
			q++; /* ISO 8601's fraction of a second */
	if (colon && *q == 'z' && !isalnum((unsigned char)q[1])) {
		fixed = true;
		q++;
	} else if (colon && (*q == '+' || *q == '-') && isdigit((unsigned char)q[1]) &&
		   isdigit((unsigned char)q[2])) {
		const char *o = q + 1;
		int oh = number(&o, 2), om = 0;

		if (*o == ':')
			o++;
		if (isdigit((unsigned char)*o) && (om = number(&o, 2)) < 0)
			om = 0;
		if (oh > 14 || om > 59 || isalnum((unsigned char)*o))
			return p;
		fixed = true;
		off_s = (*q == '-' ? -1 : 1) * (oh * 3600 + om * 60);
		q = o;
	}
	if (isalpha((unsigned char)*q) && *q != 'a' && *q != 'p')
		return p;
	q = skip_spaces(q);
	if (!fixed && (q[0] == 'a' || q[0] == 'p') &&
	    (q[1] == 'm' || (q[1] == '.' && q[2] == 'm'))) {
		bool pm = q[0] == 'p';

		if (h < 1 || h > 12)
			return p;
		q += q[1] == 'm' ? 2 : 3;
		if (*q == '.')
			q++;
		h = h % 12 + (pm ? 12 : 0);
		if (isalnum((unsigned char)*q))
			return p;
	} else if (!colon || h > 23) {
		return p; /* a bare number is no time */
	}
	if (m > 59 || s > 60)
		return p;
	w->hour = h;
	w->min = m;
	w->sec = s;
	w->fixed = fixed;
	w->off_s = off_s;
	return q;
}

/* "(america/anchorage)", "america/anchorage", "utc": the name as the
 * zoneinfo spells it, from the original text at the same offset. False
 * for an Area/City name the zoneinfo does not hold. */
static bool read_zone(const char *p, const char *orig, const char *lower, struct when *w)
{
	const char *q = skip_spaces(p);
	size_t n = 0;

	if (*q == '(')
		q = skip_spaces(q + 1);
	while (isalnum((unsigned char)q[n]) || q[n] == '/' || q[n] == '_' || q[n] == '-' ||
	       q[n] == '+')
		n++;
	if (n == 0 || n >= sizeof(w->zone))
		return true;
	memcpy(w->zone, orig + (q - lower), n);
	w->zone[n] = '\0';
	if (strcmp(w->zone, "utc") == 0 || strcmp(w->zone, "UTC") == 0 ||
	    strcmp(w->zone, "gmt") == 0 || strcmp(w->zone, "GMT") == 0) {
		snprintf(w->zone, sizeof(w->zone), "UTC");
		return true;
	}
	if (strchr(w->zone, '/') != NULL && !resettime_zone_known(w->zone))
		return false;
	if (strchr(w->zone, '/') == NULL)
		w->zone[0] = '\0'; /* a word after the time, no zone */
	return true;
}

/* The words after an anchor: true when they name a time or a date. */
static bool read_when(const char *p, const char *orig, const char *lower, struct when *w)
{
	const char *q;

	memset(w, 0, sizeof(*w));
	w->year = w->mon = w->mday = w->hour = -1;
	p = skip_spaces(p);
	if (starts(p, "tomorrow")) {
		w->tomorrow = true;
		p = skip_spaces(p + 8);
	} else if (starts(p, "today")) {
		p = skip_spaces(p + 5);
	}
	if (starts(p, "on "))
		p = skip_spaces(p + 3);
	p = read_date(p, w);
	p = skip_spaces(p);
	if (starts(p, "at "))
		p = skip_spaces(p + 3);
	q = read_clock(p, w);
	if (q != p)
		p = q;
	if (w->hour < 0 && w->mon < 0)
		return false;
	return read_zone(p, orig, lower, w);
}

/* The wall clock at t where w says (its offset, else zone). */
static void when_tm(const struct when *w, time_t t, const char *zone, struct tm *out)
{
	time_t shifted = t + (w->fixed ? w->off_s : 0);

	if (w->fixed)
		gmtime_r(&shifted, out);
	else
		local_tm(t, zone, out);
}

static time_t when_make(const struct when *w, struct tm *tm, const char *zone)
{
	return w->fixed ? fixed_make(tm, w->off_s) : local_make(tm, zone);
}

static int64_t when_ms(const struct when *w, int64_t now_ms, const char *zone)
{
	time_t now = (time_t)(now_ms / 1000), t;
	const char *z = w->zone[0] ? w->zone : zone;
	struct tm tm;

	when_tm(w, now, z, &tm);
	if (w->year >= 0)
		tm.tm_year = w->year - 1900;
	if (w->mon >= 0) {
		tm.tm_mon = w->mon;
		tm.tm_mday = w->mday;
	}
	if (w->tomorrow)
		tm.tm_mday++;
	tm.tm_hour = w->hour >= 0 ? w->hour : 0;
	tm.tm_min = w->hour >= 0 ? w->min : 0;
	tm.tm_sec = w->hour >= 0 ? w->sec : 0;
	if (w->mon >= 0 && w->year < 0) {
		struct tm first = tm;

		/* A date without a year: the first from a day ago on (the
		 * 31st of December, read on New Year's night, was last night). */
		first.tm_year--;
		t = when_make(w, &first, z);
		for (int i = 0; i < 2 && t + DAY_S <= now; i++) {
			first = tm;
			first.tm_year += i;
			t = when_make(w, &first, z);
		}
		return (int64_t)t * 1000;
	}
	t = when_make(w, &tm, z);
	if (t <= now && w->mon < 0 && !w->tomorrow) {
		tm.tm_mday++; /* the next one to come; mktime normalises */
		t = when_make(w, &tm, z);
	}
	return (int64_t)t * 1000;
}

static bool daily_quota(const char *lower)
{
	return strstr(lower, "quota") != NULL &&
	       (strstr(lower, "per day") != NULL || strstr(lower, "perday") != NULL ||
		strstr(lower, "daily") != NULL);
}

static bool next_midnight(int64_t now_ms, const char *zone, int64_t *out_ms)
{
	struct when w;

	if (!resettime_zone_known(zone))
		return false;
	memset(&w, 0, sizeof(w));
	w.year = w.mon = w.mday = -1;
	w.tomorrow = true;
	w.hour = 0;
	snprintf(w.zone, sizeof(w.zone), "%s", zone);
	*out_ms = when_ms(&w, now_ms, zone);
	return true;
}

bool resettime_parse(const char *text, size_t len, int64_t now_ms, const char *zone,
		     int64_t *out_ms)
{
	char orig[TEXT_MAX], lower[TEXT_MAX];
	const char *bar, *p;
	struct when w;
	size_t i;

	if (text == NULL)
		return false;
	if (zone != NULL && !resettime_zone_known(zone))
		return false;
	if (len >= sizeof(orig))
		len = sizeof(orig) - 1;
	for (i = 0; i < len; i++) {
		/* Claude's middle dot and Codex's curly quote are no words. */
		unsigned char c = (unsigned char)text[i];

		orig[i] = c >= 0x80 || c == '\0' ? ' ' : (char)c;
		lower[i] = (char)tolower((unsigned char)orig[i]);
	}
	orig[len] = lower[len] = '\0';
	if ((bar = strchr(lower, '|')) != NULL) {
		const char *q = bar + 1;
		int64_t v = 0;
		int n = 0;

		while (isdigit((unsigned char)*q) && n < 14) {
			v = v * 10 + (*q++ - '0');
			n++;
		}
		if ((n == 10 || n == 13) && !isdigit((unsigned char)*q)) {
			*out_ms = n == 10 ? v * 1000 : v;
			return true;
		}
	}
	for (i = 0; i < sizeof(in_words) / sizeof(in_words[0]); i++) {
		int64_t d;

		if ((p = strstr(lower, in_words[i])) == NULL)
			continue;
		p += strlen(in_words[i]);
		if (hint_duration(p, strlen(p), &d)) {
			*out_ms = now_ms + d;
			return true;
		}
	}
	for (i = 0; i < sizeof(at_words) / sizeof(at_words[0]); i++) {
		for (p = strstr(lower, at_words[i]); p != NULL;
		     p = strstr(p + 1, at_words[i])) {
			if (read_when(p + strlen(at_words[i]), orig, lower, &w)) {
				*out_ms = when_ms(&w, now_ms, zone);
				return true;
			}
		}
	}
	if (daily_quota(lower))
		return next_midnight(now_ms, "America/Los_Angeles", out_ms);
	return false;
}

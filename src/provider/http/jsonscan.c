#include "provider/http/jsonscan.h"

#include <string.h>

#include "base/jsontext.h"
#include "base/utf8.h"

#define BAIL JSONSCAN_BAIL

/* Bytes a string holds as they are: not a control, '"', '\\' or non-ASCII. */
static const unsigned char plain[256] = {
#define R16 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
	[0x00] = 0, /* 0x00-0x1F: controls */
	[0x20] = 1, 1, 0 /* '"' */, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	[0x30] = R16,
	[0x40] = R16,
	[0x50] = 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0 /* '\\' */, 1, 1, 1,
	[0x60] = R16, R16,
#undef R16
};

/* Whether the object or array at each depth has had a member yet. */
static uint32_t first_mask(int depth)
{
	return (uint32_t)1 << depth;
}

void jsonscan_init(struct jsonscan *s, const char *text, size_t len)
{
	s->p = text;
	s->end = text + len;
	s->depth = 0;
	s->first = 0;
	s->used = 0;
}

static void ws(struct jsonscan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
		s->p++;
}

enum jsonscan_kind jsonscan_peek(struct jsonscan *s)
{
	ws(s);
	if (s->p == s->end)
		return BAIL;
	switch (*s->p) {
	case '{': return JSONSCAN_OBJECT;
	case '[': return JSONSCAN_ARRAY;
	case '"': return JSONSCAN_STRING;
	case 't': case 'f': case 'n': return JSONSCAN_LITERAL;
	default:
		return (*s->p == '-' || (*s->p >= '0' && *s->p <= '9')) ? JSONSCAN_NUMBER : BAIL;
	}
}

static int open(struct jsonscan *s, char c)
{
	ws(s);
	if (s->p == s->end || *s->p != c || s->depth + 1 >= JSONSCAN_MAX_DEPTH)
		return BAIL;
	s->p++;
	s->depth++;
	s->first |= first_mask(s->depth);
	return 0;
}

int jsonscan_object(struct jsonscan *s)
{
	return open(s, '{');
}

int jsonscan_array(struct jsonscan *s)
{
	return open(s, '[');
}

/* Before a member: the ',' unless it is the first; 0 at the closing byte,
 * 1 when a member follows, BAIL otherwise. */
static int next_member(struct jsonscan *s, char close)
{
	uint32_t bit = first_mask(s->depth);

	ws(s);
	if (s->p == s->end || s->depth == 0)
		return BAIL;
	if (s->first & bit) {
		if (*s->p == close) {
			s->p++;
			s->depth--;
			return 0;
		}
		s->first &= ~bit;
		return 1;
	}
	if (*s->p == close) {
		s->p++;
		s->depth--;
		return 0;
	}
	if (*s->p != ',')
		return BAIL;
	s->p++;
	return 1;
}

/* Four hex digits at p. Returns the value, or -1. */
static long hex4(const char *p)
{
	long v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* One escape after the backslash at s->p; writes its bytes to o. Returns
 * how many, or 0 for anything jansson would refuse. */
static size_t unescape(struct jsonscan *s, char *o)
{
	long cp, lo;

	if (s->end - s->p < 2)
		return 0;
	s->p += 2;
	switch (s->p[-1]) {
	case '"': *o = '"'; return 1;
	case '\\': *o = '\\'; return 1;
	case '/': *o = '/'; return 1;
	case 'b': *o = '\b'; return 1;
	case 'f': *o = '\f'; return 1;
	case 'n': *o = '\n'; return 1;
	case 'r': *o = '\r'; return 1;
	case 't': *o = '\t'; return 1;
	case 'u': break;
	default: return 0;
	}
	if (s->end - s->p < 4 || (cp = hex4(s->p)) < 0)
		return 0;
	s->p += 4;
	if (cp >= 0xDC00 && cp <= 0xDFFF)
		return 0;
	if (cp >= 0xD800 && cp <= 0xDBFF) {
		if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' ||
		    (lo = hex4(s->p + 2)) < 0xDC00 || lo > 0xDFFF)
			return 0;
		s->p += 6;
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
	}
	return utf8_encode(o, (uint32_t)cp);
}

/* Scans a string at s->p ('"'). Unless keep, it is only checked; *escaped
 * (when not NULL) says whether it had an escape. */
static int string(struct jsonscan *s, const char **out, size_t *len, bool keep, bool *escaped)
{
	const char *start;
	char *o = NULL;

	ws(s);
	if (s->p == s->end || *s->p != '"')
		return BAIL;
	start = ++s->p;
	for (;;) {
		const char *run = s->p;
		unsigned char c;

		while (s->end - s->p >= 8) {
			uint64_t w;

			memcpy(&w, s->p, 8);
			if (jsontext_special8(w))
				break;
			s->p += 8;
		}
		while (s->p < s->end && plain[(unsigned char)*s->p])
			s->p++;
		if (o != NULL) {
			if ((size_t)(s->p - run) > (size_t)(s->scratch + JSONSCAN_SCRATCH - o))
				return BAIL;
			memcpy(o, run, (size_t)(s->p - run));
			o += s->p - run;
		}
		if (s->p == s->end)
			return BAIL;
		c = (unsigned char)*s->p;
		if (c == '"') {
			if (keep && o == NULL) {
				*out = start;
				*len = (size_t)(s->p - start);
			} else if (keep) {
				*out = s->scratch + s->used;
				*len = (size_t)(o - *out);
				s->used += *len;
			}
			s->p++;
			return 0;
		}
		if (c < 0x20)
			return BAIL;
		if (c >= 0x80) {
			size_t n = utf8_seq((const unsigned char *)s->p, (size_t)(s->end - s->p));

			if (n == 0)
				return BAIL;
			if (o != NULL) {
				if (n > (size_t)(s->scratch + JSONSCAN_SCRATCH - o))
					return BAIL;
				memcpy(o, s->p, n);
				o += n;
			}
			s->p += n;
			continue;
		}
		/* A backslash: from here on the string is built in scratch. */
		if (escaped != NULL)
			*escaped = true;
		if (keep && o == NULL) {
			size_t done = (size_t)(s->p - start);

			if (done > JSONSCAN_SCRATCH - s->used)
				return BAIL;
			o = s->scratch + s->used;
			memcpy(o, start, done);
			o += done;
		}
		{
			char tmp[4];
			size_t n = unescape(s, tmp);

			if (n == 0)
				return BAIL;
			if (o != NULL) {
				if (n > (size_t)(s->scratch + JSONSCAN_SCRATCH - o))
					return BAIL;
				memcpy(o, tmp, n);
				o += n;
			}
		}
	}
}

int jsonscan_key(struct jsonscan *s, const char **key, size_t *len)
{
	bool escaped = false;
	int rc = next_member(s, '}');

	if (rc != 1)
		return rc;
	ws(s);
	if (s->p == s->end || *s->p != '"')
		return BAIL;
	/* Keys are plain in every chunk we read; one with an escape is unusual. */
	*key = s->p + 1;
	if (string(s, NULL, NULL, false, &escaped) != 0 || escaped)
		return BAIL;
	*len = (size_t)(s->p - 1 - *key);
	ws(s);
	if (s->p == s->end || *s->p != ':')
		return BAIL;
	s->p++;
	return 1;
}

int jsonscan_more(struct jsonscan *s)
{
	return next_member(s, ']');
}

int jsonscan_string(struct jsonscan *s, const char **out, size_t *len)
{
	return string(s, out, len, true, NULL);
}

int jsonscan_string_or_skip(struct jsonscan *s, const char **out, size_t *len)
{
	if (jsonscan_peek(s) == JSONSCAN_STRING)
		return string(s, out, len, true, NULL);
	*out = NULL;
	*len = 0;
	return jsonscan_skip(s);
}

/* A number: checked against JSON's grammar, at most 15 characters. */
static int number(struct jsonscan *s, int64_t *out)
{
	const char *p, *start;
	bool whole = true;
	int64_t v = 0;

	ws(s);
	start = p = s->p;
	if (p < s->end && *p == '-')
		p++;
	if (p == s->end || *p < '0' || *p > '9')
		return BAIL;
	if (*p == '0') {
		p++;
	} else {
		while (p < s->end && *p >= '0' && *p <= '9') {
			if (p - start >= 15)
				return BAIL;
			v = v * 10 + (*p++ - '0');
		}
	}
	if (p < s->end && *p == '.') {
		whole = false;
		if (++p == s->end || *p < '0' || *p > '9')
			return BAIL;
		while (p < s->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < s->end && (*p == 'e' || *p == 'E'))
		return BAIL;
	if (p - start > 15 || (out != NULL && !whole))
		return BAIL;
	if (out != NULL)
		*out = *start == '-' ? -v : v;
	s->p = p;
	return 0;
}

int jsonscan_int(struct jsonscan *s, int64_t *out)
{
	return number(s, out);
}

static bool literal(struct jsonscan *s, const char *word, size_t n)
{
	ws(s);
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
		return false;
	s->p += n;
	return true;
}

#define LITERAL(s, word) literal(s, word, sizeof(word) - 1)

bool jsonscan_in_scratch(const struct jsonscan *s, const char *p)
{
	uintptr_t a = (uintptr_t)p, lo = (uintptr_t)s->scratch;

	return a >= lo && a < lo + sizeof(s->scratch);
}

bool jsonscan_null(struct jsonscan *s)
{
	return LITERAL(s, "null");
}

int jsonscan_skip(struct jsonscan *s)
{
	const char *key;
	size_t len;
	int rc;

	switch (jsonscan_peek(s)) {
	case JSONSCAN_OBJECT:
		if (jsonscan_object(s) != 0)
			return BAIL;
		while ((rc = jsonscan_key(s, &key, &len)) == 1) {
			if (jsonscan_skip(s) != 0)
				return BAIL;
		}
		return rc;
	case JSONSCAN_ARRAY:
		if (jsonscan_array(s) != 0)
			return BAIL;
		while ((rc = jsonscan_more(s)) == 1) {
			if (jsonscan_skip(s) != 0)
				return BAIL;
		}
		return rc;
	case JSONSCAN_STRING:
		return string(s, NULL, NULL, false, NULL);
	case JSONSCAN_NUMBER:
		return number(s, NULL);
	case JSONSCAN_LITERAL:
		return LITERAL(s, "true") || LITERAL(s, "false") || LITERAL(s, "null") ? 0 : BAIL;
	default:
		return BAIL;
	}
}

bool jsonscan_end(struct jsonscan *s)
{
	ws(s);
	return s->p == s->end && s->depth == 0;
}


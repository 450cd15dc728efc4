#include "base/errtext.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/utf8.h"

/* The bytes of a whitespace character at s (n > 0 available), or 0. The set
 * is what `\s` means in the reference classifier (Python's str.isspace). */
static size_t space_len(const unsigned char *s, size_t n)
{
	if (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r') || (s[0] >= 0x1c && s[0] <= 0x1f))
		return 1;
	if (s[0] == 0xc2 && n >= 2 && (s[1] == 0x85 || s[1] == 0xa0))
		return 2;
	if (n < 3)
		return 0;
	if (s[0] == 0xe1 && s[1] == 0x9a && s[2] == 0x80)
		return 3;
	if (s[0] == 0xe2 && s[1] == 0x80 &&
	    ((s[2] >= 0x80 && s[2] <= 0x8a) || s[2] == 0xa8 || s[2] == 0xa9 || s[2] == 0xaf))
		return 3;
	if (s[0] == 0xe2 && s[1] == 0x81 && s[2] == 0x9f)
		return 3;
	if (s[0] == 0xe3 && s[1] == 0x80 && s[2] == 0x80)
		return 3;
	return 0;
}

/* Copies at most `room` bytes of src to dst, never ending inside a UTF-8
 * sequence that the cut would split. Returns the bytes copied. */
static size_t copy_cut(char *dst, const char *src, size_t n, size_t room)
{
	if (n > room) {
		n = room;
		/* src[n] is the first byte left out: back up to its lead byte. */
		for (size_t k = 0; k < 3 && n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80; k++)
			n--;
	}
	if (n > 0)
		memcpy(dst, src, n);
	return n;
}

static int hex4(const unsigned char *s, uint32_t *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned c = s[i];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			*v |= (c | 0x20) - 'a' + 10;
		else
			return -1;
	}
	return 0;
}

/* A JSON escape \uXXXX (or a surrogate pair of them) at s, e the index after
 * its run of backslashes: the bytes read (from s), its UTF-8 in utf, or 0
 * when there is none. A lone surrogate or U+0000 is left as it is. */
static size_t unicode_escape(const unsigned char *s, size_t n, size_t e, char utf[4],
			     size_t *utf_len)
{
	uint32_t cp, lo;

	if (e + 5 > n || s[e] != 'u' || hex4(s + e + 1, &cp) != 0 || cp == 0)
		return 0;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return 0;
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (e + 11 > n || s[e + 5] != '\\' || s[e + 6] != 'u' || hex4(s + e + 7, &lo) != 0 ||
		    lo < 0xdc00 || lo > 0xdfff)
			return 0;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		*utf_len = utf8_encode(utf, cp);
		return e + 11;
	}
	*utf_len = utf8_encode(utf, cp);
	return e + 5;
}

/* One space for a whitespace run, none at the start. */
static size_t put_space(char *buf, size_t w)
{
	if (w > 0 && buf[w - 1] != ' ')
		buf[w++] = ' ';
	return w;
}

size_t errtext_normalize(char *out, const char *text, size_t len, const char *body,
			 size_t body_len)
{
	unsigned char *buf = (unsigned char *)out;
	size_t n = copy_cut(out, text, len, ERRTEXT_MAX);
	size_t r = 0, w = 0;

	if (body_len > 0 && n < ERRTEXT_MAX) {
		out[n++] = '\n';
		n += copy_cut(out + n, body, body_len, ERRTEXT_MAX - n);
	}
	/* In place: every step writes no more than it reads. */
	while (r < n) {
		size_t sp;

		if (buf[r] == '\\') {
			size_t e = r, used, ulen = 0;
			char utf[4];

			while (e < n && buf[e] == '\\')
				e++;
			/* Non-ASCII words in a JSON body come escaped: "\u4f59\u989d"
			 * is read as the words it stands for (never longer). */
			if ((used = unicode_escape(buf + r, n - r, e - r, utf, &ulen)) > 0) {
				if (ulen == 1 && utf[0] == '\n') {
					w = put_space(out, w);
				} else {
					memcpy(buf + w, utf, ulen);
					w += ulen;
				}
				r += used;
				continue;
			}
			if (e < n && (buf[e] == '"' || buf[e] == '\'')) {
				r = e;
			} else if (e < n && (buf[e] == 'n' || buf[e] == 't' || buf[e] == 'r')) {
				w = put_space(out, w);
				r = e + 1;
			} else {
				while (r < e)
					buf[w++] = buf[r++];
			}
			continue;
		}
		sp = space_len(buf + r, n - r);
		if (sp > 0) {
			w = put_space(out, w);
			r += sp;
			continue;
		}
		buf[w++] = buf[r++];
	}
	if (w > 0 && buf[w - 1] == ' ')
		w--;
	/* Matching may then skip PCRE2's UTF check (and its invalid-UTF mode,
	 * whose JIT in PCRE2 10.42 misses `^\W{0,4}` before a multi-byte
	 * character). */
	for (size_t i = 0; i < w;) {
		size_t seq = utf8_seq(buf + i, w - i);

		if (seq == 0) {
			buf[i++] = '?';
			continue;
		}
		i += seq;
	}
	return w;
}

#include "base/errtext.h"

#include <stdbool.h>
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
			size_t e = r;

			while (e < n && buf[e] == '\\')
				e++;
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

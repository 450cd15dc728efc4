#include "base/utf8.h"

#include <stdint.h>
#include <string.h>

size_t utf8_seq(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		len = 2;
		cp = s[0] & 0x1F;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		len = 3;
		cp = s[0] & 0x0F;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

size_t utf8_encode(char out[4], uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

bool utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		size_t n;

		/* ASCII, eight bytes at a time. */
		while (len - i >= 8) {
			uint64_t w;

			memcpy(&w, p + i, 8);
			if (w & UINT64_C(0x8080808080808080))
				break;
			i += 8;
		}
		if (i == len)
			break;
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		n = utf8_seq(p + i, len - i);
		if (n == 0)
			return false;
		i += n;
	}
	return true;
}

/* Whether s[0..n) could be the start of a well-formed sequence that the end
 * of the string cut short. */
static bool is_cut_sequence(const unsigned char *s, size_t n)
{
	unsigned char pad[4];

	if (n == 0 || n >= 4 || s[0] < 0xC2 || s[0] > 0xF4)
		return false;
	/* Complete it with the smallest continuation bytes that keep it
	 * well-formed after s[0] and s[1], then ask utf8_seq. */
	memcpy(pad, s, n);
	for (size_t i = n; i < 4; i++)
		pad[i] = 0x80;
	if (n == 1 && s[0] == 0xE0)
		pad[1] = 0xA0;
	if (n == 1 && s[0] == 0xF0)
		pad[1] = 0x90;
	return utf8_seq(pad, 4) > n;
}

char *utf8_repair(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t len = strlen(s), i = 0;

	while (i < len) {
		size_t n = utf8_seq(p + i, len - i);

		if (n > 0) {
			i += n;
		} else if (is_cut_sequence(p + i, len - i)) {
			p[i] = '\0';
			break;
		} else {
			p[i++] = '?';
		}
	}
	return s;
}

#include "jsontext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t jsontext_escape(char *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	char *o = out;
	size_t i = 0;

	while (i < len) {
		/* Copy the run of bytes that need no escape in one go. */
		size_t run = i;
		unsigned char c;

		while (run < len) {
			c = (unsigned char)s[run];
			if (c < 0x20 || c == '"' || c == '\\')
				break;
			run++;
		}
		memcpy(o, s + i, run - i);
		o += run - i;
		i = run;
		if (i == len)
			break;
		c = (unsigned char)s[i++];
		*o++ = '\\';
		switch (c) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '\b': *o++ = 'b'; break;
		case '\f': *o++ = 'f'; break;
		case '\n': *o++ = 'n'; break;
		case '\r': *o++ = 'r'; break;
		case '\t': *o++ = 't'; break;
		default:
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 0xF];
			break;
		}
	}
	return (size_t)(o - out);
}

#define DELTA_HEAD "{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"text_delta\",\"contentIndex\":"
#define DELTA_MID ",\"delta\":\""
#define DELTA_TAIL "\"}}\n"

size_t jsontext_delta_line(char **buf, size_t *cap, size_t index, const char *delta, size_t len)
{
	char num[24];
	int numlen = snprintf(num, sizeof(num), "%zu", index);
	size_t need, n = 0;

	if (len > ((size_t)-1 - 256) / 6)
		return 0;
	need = sizeof(DELTA_HEAD) + (size_t)numlen + sizeof(DELTA_MID) + JSONTEXT_ESCAPED_MAX(len) +
	       sizeof(DELTA_TAIL);
	if (need > *cap) {
		size_t c = *cap ? *cap : 256;
		char *p;

		while (c < need)
			c *= 2;
		p = realloc(*buf, c);
		if (p == NULL)
			return 0;
		*buf = p;
		*cap = c;
	}
	memcpy(*buf, DELTA_HEAD, sizeof(DELTA_HEAD) - 1);
	n = sizeof(DELTA_HEAD) - 1;
	memcpy(*buf + n, num, (size_t)numlen);
	n += (size_t)numlen;
	memcpy(*buf + n, DELTA_MID, sizeof(DELTA_MID) - 1);
	n += sizeof(DELTA_MID) - 1;
	n += jsontext_escape(*buf + n, delta, len);
	memcpy(*buf + n, DELTA_TAIL, sizeof(DELTA_TAIL) - 1);
	return n + sizeof(DELTA_TAIL) - 1;
}

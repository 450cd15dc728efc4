#include "base/jsontext.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

static char *format_u64(char buf[24], uint64_t v);

/* The bytes jansson escapes: controls, the quote and the backslash. */
static const unsigned char needs_escape[256] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	['"'] = 1, ['\\'] = 1,
};

size_t jsontext_escape(char *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s;
	char *o = out;
	size_t i = 0;

	while (i < len) {
		/* Copy the bytes that need neither an escape nor a UTF-8 check,
		 * eight at a time while there are eight (fixed-size copies, no
		 * call: most deltas are a few bytes), then one by one. */
		size_t seq;
		unsigned char c;

		while (len - i >= 8) {
			uint64_t w;

			memcpy(&w, p + i, 8);
			if (jsontext_special8(w))
				break;
			memcpy(o, &w, 8);
			o += 8;
			i += 8;
		}
		while (i < len && p[i] < 0x80 && !needs_escape[p[i]])
			*o++ = (char)p[i++];
		if (i == len)
			break;
		c = p[i];
		if (c >= 0x80) {
			seq = utf8_seq(p + i, len - i);
			if (seq == 0)
				return JSONTEXT_NOT_UTF8;
			while (seq-- > 0)
				*o++ = (char)p[i++];
			continue;
		}
		i++;
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

int jsontext_delta_append(struct jsontext_buf *b, size_t index, const char *delta, size_t len)
{
	char digits[24];
	const char *num = format_u64(digits, index);
	size_t numlen = (size_t)(digits + 24 - num);
	size_t esc;
	char *o;

	if (len > ((size_t)-1 - 256) / 6 ||
	    jsontext_reserve(b, sizeof(DELTA_HEAD) + numlen + sizeof(DELTA_MID) +
				    JSONTEXT_ESCAPED_MAX(len) + sizeof(DELTA_TAIL)) != 0)
		return -1;
	o = b->data + b->len;
	memcpy(o, DELTA_HEAD, sizeof(DELTA_HEAD) - 1);
	o += sizeof(DELTA_HEAD) - 1;
	memcpy(o, num, numlen);
	o += numlen;
	memcpy(o, DELTA_MID, sizeof(DELTA_MID) - 1);
	o += sizeof(DELTA_MID) - 1;
	esc = jsontext_escape(o, delta, len);
	if (esc == JSONTEXT_NOT_UTF8)
		return -2;
	o += esc;
	memcpy(o, DELTA_TAIL, sizeof(DELTA_TAIL) - 1);
	o += sizeof(DELTA_TAIL) - 1;
	b->len = (size_t)(o - b->data);
	return 0;
}

int jsontext_reserve(struct jsontext_buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->len + more <= b->cap)
		return 0;
	if (more > (size_t)-1 / 2 - b->len)
		return -1;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->data, cap);
	if (p == NULL)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

static inline int room(struct jsontext_buf *b, size_t n)
{
	return b->cap - b->len >= n ? 0 : jsontext_reserve(b, n);
}

static int put(struct jsontext_buf *b, const char *s, size_t n)
{
	if (room(b, n) != 0)
		return -1;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	return 0;
}

static int put_string(struct jsontext_buf *b, const char *s, size_t n)
{
	size_t esc;

	if (n > ((size_t)-1 - 2) / 6 || room(b, JSONTEXT_ESCAPED_MAX(n) + 2) != 0)
		return -1;
	esc = jsontext_escape(b->data + b->len + 1, s, n);
	if (esc == JSONTEXT_NOT_UTF8)
		return -1;
	b->data[b->len] = '"';
	b->len += esc + 1;
	b->data[b->len++] = '"';
	return 0;
}

/* Digits of v, right-aligned in buf[0..24); returns where they start. */
static char *format_u64(char buf[24], uint64_t v)
{
	char *p = buf + 24;

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	return p;
}

static int put_integer(struct jsontext_buf *b, json_int_t v)
{
	char buf[24], *p;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	p = format_u64(buf, u);
	if (v < 0)
		*--p = '-';
	return put(b, p, (size_t)(buf + 24 - p));
}

/* jansson's jsonp_dtostr() with its default precision (17). */
static int put_real(struct jsontext_buf *b, double value)
{
	char buf[64];
	int n;
	size_t len;
	char *start, *end;

	/* Whole numbers well inside 17 digits (the zeros of every cost and
	 * usage block) print as %.17g prints them, plus ".0": skip printf. */
	if (value > -1e15 && value < 1e15 && value == (double)(int64_t)value &&
	    !(value == 0 && signbit(value))) {
		char *p = format_u64(buf, (uint64_t)(value < 0 ? -value : value));

		if (value < 0)
			*--p = '-';
		len = (size_t)(buf + 24 - p);
		memcpy(buf + 24, ".0", 2);
		return put(b, p, len + 2);
	}
	n = snprintf(buf, sizeof(buf), "%.17g", value);
	if (n < 0 || (size_t)n >= sizeof(buf) - 3)
		return -1;
	len = (size_t)n;
	if (strchr(buf, '.') == NULL && strchr(buf, 'e') == NULL) {
		buf[len++] = '.';
		buf[len++] = '0';
		buf[len] = '\0';
	}
	start = strchr(buf, 'e');
	if (start != NULL) {
		start++;
		end = start + 1;
		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start) {
			memmove(start, end, len - (size_t)(end - buf) + 1);
			len -= (size_t)(end - start);
		}
	}
	return put(b, buf, len);
}

static int dump(const json_t *json, struct jsontext_buf *b, int depth)
{
	const char *key;
	size_t key_len;
	json_t *v;
	size_t i;
	bool first = true;

	/* jansson refuses cycles; trees here are shallow, so a depth this
	 * large can only be one. */
	if (depth > 2048)
		return -1;
	switch (json_typeof(json)) {
	case JSON_NULL:
		return put(b, "null", 4);
	case JSON_TRUE:
		return put(b, "true", 4);
	case JSON_FALSE:
		return put(b, "false", 5);
	case JSON_INTEGER:
		return put_integer(b, json_integer_value(json));
	case JSON_REAL:
		return put_real(b, json_real_value(json));
	case JSON_STRING:
		return put_string(b, json_string_value(json), json_string_length(json));
	case JSON_ARRAY:
		if (put(b, "[", 1) != 0)
			return -1;
		json_array_foreach(json, i, v) {
			if ((i > 0 && put(b, ",", 1) != 0) || dump(v, b, depth + 1) != 0)
				return -1;
		}
		return put(b, "]", 1);
	case JSON_OBJECT:
		if (put(b, "{", 1) != 0)
			return -1;
		json_object_keylen_foreach((json_t *)json, key, key_len, v) {
			/* The comma, the key and the colon: room for all at once. */
			if (key_len > ((size_t)-1 - 4) / 6 || room(b, JSONTEXT_ESCAPED_MAX(key_len) + 4) != 0)
				return -1;
			if (!first)
				b->data[b->len++] = ',';
			if (put_string(b, key, key_len) != 0)
				return -1;
			b->data[b->len++] = ':';
			if (dump(v, b, depth + 1) != 0)
				return -1;
			first = false;
		}
		return put(b, "}", 1);
	}
	return -1;
}

int jsontext_dump(const json_t *json, struct jsontext_buf *b)
{
	size_t mark = b->len;

	if (json == NULL || dump(json, b, 0) != 0) {
		b->len = mark;
		return -1;
	}
	return 0;
}

/* jsontext — JSON text written by hand, for the one line that is sent once
 * per streamed chunk.
 *
 * A delta-mode message_update is the hot path of a long answer: building it
 * with json_pack and serializing it with jansson costs several allocations
 * and a walk over a small tree per chunk. This module writes the same bytes
 * jansson's JSON_COMPACT dump writes, straight into a buffer: the quotes,
 * backslashes and control characters escaped as jansson escapes them
 * (\b \f \n \r \t, other controls as \u00XX with upper-case hex, nothing else
 * escaped; UTF-8 copied as it is). Tests compare it with jansson byte for
 * byte. Pure. */
#ifndef RETRYD_JSONTEXT_H
#define RETRYD_JSONTEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most bytes jsontext_escape() can write for `len` input bytes. */
#define JSONTEXT_ESCAPED_MAX(len) ((len) * 6)

/* Whether one of the eight bytes of w (read from memory in any byte order)
 * is not plain JSON string text: a control, '"', '\\' or a byte >= 0x80.
 * The classic exact tests "some byte < n" and "some byte == 0" (of w ^ c),
 * plus the high bits; scanners use it to skip plain text eight bytes at a
 * time. */
static inline bool jsontext_special8(uint64_t w)
{
	const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
	uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');

	return ((((w - ones * 0x20) | (q - ones) | (b - ones)) & ~w) | w) & highs;
}

/* jsontext_escape()'s answer for text that is not well-formed UTF-8. */
#define JSONTEXT_NOT_UTF8 ((size_t)-1)

/* Writes s[0..len) escaped as the inside of a JSON string (no quotes) to
 * out, which has room for JSONTEXT_ESCAPED_MAX(len) bytes, checking in the
 * same pass that s is well-formed UTF-8 (jansson refuses anything else).
 * Returns the bytes written, or JSONTEXT_NOT_UTF8 (out then holds a part). */
size_t jsontext_escape(char *out, const char *s, size_t len);

/* A growable output buffer (the caller owns data). */
struct jsontext_buf {
	char *data;
	size_t len;
	size_t cap;
};

/* Makes room for `more` bytes after len. Returns 0, or -1 when memory ran out. */
int jsontext_reserve(struct jsontext_buf *b, size_t more);

/* Appends the delta-mode text_delta event as one line, newline included,
 * exactly as jansson dumps {"type":"message_update","assistantMessageEvent":
 * {"type":"text_delta","contentIndex":index,"delta":delta}} with
 * JSON_COMPACT. Returns 0, -1 when memory ran out, -2 when delta is not
 * well-formed UTF-8 (jansson would refuse it too); b->len is unchanged
 * unless it returns 0. */
int jsontext_delta_append(struct jsontext_buf *b, size_t index, const char *delta, size_t len);

/* Appends `json` (borrowed) as compact JSON, the bytes
 * json_dumps(json, JSON_COMPACT | JSON_ENCODE_ANY) returns: keys in
 * insertion order, integers as %lld, reals as jansson prints them (%.17g,
 * ".0" added when there is neither a dot nor an exponent, the exponent
 * without '+' and leading zeros), strings escaped as above. It is the
 * writer's serializer: jansson's own dump walks a hash table per container
 * to detect cycles and calls back per token, which made it most of the cost
 * of a response. Returns 0, or -1 (b->len unchanged) when memory ran out or
 * a string is not well-formed UTF-8 (which jansson refuses to dump too). */
int jsontext_dump(const json_t *json, struct jsontext_buf *b);

#endif

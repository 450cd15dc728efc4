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

#include <stddef.h>

/* The most bytes jsontext_escape() can write for `len` input bytes. */
#define JSONTEXT_ESCAPED_MAX(len) ((len) * 6)

/* Writes s[0..len) escaped as the inside of a JSON string (no quotes) to
 * out, which has room for JSONTEXT_ESCAPED_MAX(len) bytes. s must be
 * well-formed UTF-8 (jansson refuses anything else; check first). Returns
 * the bytes written. */
size_t jsontext_escape(char *out, const char *s, size_t len);

/* The delta-mode text_delta event as one line, newline included, exactly as
 * jansson dumps {"type":"message_update","assistantMessageEvent":{"type":
 * "text_delta","contentIndex":index,"delta":delta}} with JSON_COMPACT.
 * buf, cap: a growable buffer (realloc'd as needed, owned by the caller).
 * Returns the line's length, or 0 when memory ran out. */
size_t jsontext_delta_line(char **buf, size_t *cap, size_t index, const char *delta, size_t len);

#endif

/* utf8 — byte strings on their way into JSON strings.
 *
 * jansson refuses a string that is not well-formed UTF-8 (json_string()
 * returns NULL, and a json_pack() with it fails as a whole), so text that
 * snprintf may have cut in the middle of a character, or that quotes bytes
 * from outside (a file path), is repaired here before it goes on the wire.
 * Pure. */
#ifndef RETRYD_UTF8_H
#define RETRYD_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The length of the well-formed sequence at s (at most n bytes available):
 * 1 to 4, or 0 when s does not start one (overlong forms, surrogates and
 * code points past U+10FFFF are not well-formed). n must be > 0. */
size_t utf8_seq(const unsigned char *s, size_t n);

/* Writes code point cp (at most U+10FFFF, not a surrogate) to out as UTF-8.
 * Returns the bytes written, 1 to 4. */
size_t utf8_encode(char out[4], uint32_t cp);

/* Whether s[0..len) is well-formed UTF-8 (NUL bytes included). */
bool utf8_valid(const char *s, size_t len);

/* Makes the NUL-terminated s well-formed, in place: an incomplete sequence
 * at the very end (what a cut leaves) is dropped, and every other byte that
 * does not start a well-formed sequence becomes '?'. Returns s. */
char *utf8_repair(char *s);

#endif

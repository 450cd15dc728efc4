/* jsonscan — reading one small, ordinary JSON object without building a tree.
 *
 * A provider streams one JSON object per chunk, and nearly all of them have
 * the same shape: a text delta a few bytes long. Parsing each into a jansson
 * tree was most of the cost of an HTTP relay (about 10 us a chunk, with a
 * dozen allocations). This scanner walks the text in place, checking it as
 * it goes, so a decoder can pick out the two or three values it reads.
 *
 * It is deliberately narrow. Anything unusual — a number that is long or has
 * an exponent, a key with an escape, nesting deeper than JSONSCAN_MAX_DEPTH,
 * a string that does not fit the scratch buffer, bytes that are not
 * well-formed UTF-8, a control character, a lone surrogate, trailing bytes —
 * makes a call return JSONSCAN_BAIL, and the caller parses the same bytes with
 * jansson instead, which then accepts or rejects them with its own message.
 * So whatever the scanner accepts is valid JSON that jansson reads to the
 * same values (tests/unit/check_jsonscan.c and the sse fuzz target compare
 * the two). Pure; no allocation. */
#ifndef RETRYD_JSONSCAN_H
#define RETRYD_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define JSONSCAN_MAX_DEPTH 16
#define JSONSCAN_SCRATCH 4096

/* What the next value is (jsonscan_peek), or that the scanner gave up. */
enum jsonscan_kind {
	JSONSCAN_BAIL = -1,
	JSONSCAN_OBJECT = '{',
	JSONSCAN_ARRAY = '[',
	JSONSCAN_STRING = '"',
	JSONSCAN_NUMBER = '0',
	JSONSCAN_LITERAL = 't', /* true, false or null */
};

struct jsonscan {
	const char *p, *end;          /* borrowed: the text */
	int depth;
	uint32_t first;               /* bit d: nothing read yet in the container at depth d */
	size_t used;                  /* bytes of scratch handed out */
	char scratch[JSONSCAN_SCRATCH]; /* decoded strings that had escapes */
};

/* Starts on text[0..len) (borrowed for the scanner's life). */
void jsonscan_init(struct jsonscan *s, const char *text, size_t len);

/* The kind of the next value, after whitespace; nothing is consumed. */
enum jsonscan_kind jsonscan_peek(struct jsonscan *s);

/* Consumes '{'. Returns 0 or JSONSCAN_BAIL. */
int jsonscan_object(struct jsonscan *s);

/* Consumes '['. Returns 0 or JSONSCAN_BAIL. */
int jsonscan_array(struct jsonscan *s);

/* The next key of the object being read, and its ':'. Returns 1 with *key
 * (not NUL-terminated, pointing into the text), 0 at the object's end (its
 * '}' consumed), or JSONSCAN_BAIL. */
int jsonscan_key(struct jsonscan *s, const char **key, size_t *len);

/* Whether another element of the array being read follows. Returns 1 (the
 * element is next), 0 at the array's end (its ']' consumed), or
 * JSONSCAN_BAIL. */
int jsonscan_more(struct jsonscan *s);

/* A string value, decoded: *out points into the text, or into the scratch
 * buffer when it had escapes (valid until the scanner is dropped). It may
 * hold NUL bytes (\u0000). Returns 0 or JSONSCAN_BAIL. */
int jsonscan_string(struct jsonscan *s, const char **out, size_t *len);

/* A string value as jsonscan_string(), or any other value checked and
 * skipped with *out = NULL. Returns 0 or JSONSCAN_BAIL. */
int jsonscan_string_or_skip(struct jsonscan *s, const char **out, size_t *len);

/* A whole number of at most 15 digits. Returns 0 or JSONSCAN_BAIL. */
int jsonscan_int(struct jsonscan *s, int64_t *out);

/* Whether p (from jsonscan_string) points into s's scratch buffer. */
bool jsonscan_in_scratch(const struct jsonscan *s, const char *p);

/* Whether the next value is null; consumes it if so. */
bool jsonscan_null(struct jsonscan *s);

/* Checks and skips any value. Returns 0 or JSONSCAN_BAIL. */
int jsonscan_skip(struct jsonscan *s);

/* Whether only whitespace is left. */
bool jsonscan_end(struct jsonscan *s);

/* Whether key[0..len) is the string literal name. */
#define JSONSCAN_IS(key, len, name) \
	((len) == sizeof(name) - 1 && memcmp((key), (name), sizeof(name) - 1) == 0)

#endif

/* errtext — an error text as the classifier and the hint parser read it.
 *
 * Providers hand over JSON re-encoded inside JSON, pasted texts wrap lines,
 * and a body may come apart from its message. Both readers work on one
 * normal form: the message, "\n" and the body (when there is one), with
 *   1. a run of backslashes before `"` or `'` dropped (`\"code\"` → `"code"`),
 *   2. a run of backslashes before `n`, `t` or `r` turned into a space, and
 *      a JSON escape `\uXXXX` (a surrogate pair of them too) into the
 *      character's UTF-8 (a run of backslashes before it dropped),
 *   3. every whitespace run (ASCII, and the Unicode spaces U+0085, U+00A0,
 *      U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) made one
 *      space, and the ends trimmed,
 *   4. every byte that does not start a well-formed UTF-8 sequence made '?',
 *      so the result is valid UTF-8 (NUL bytes stay).
 * Only the first ERRTEXT_MAX bytes of the input are read (cut at a character
 * boundary): a longer text says nothing more about its class. Pure. */
#ifndef RETRYD_ERRTEXT_H
#define RETRYD_ERRTEXT_H

#include <stddef.h>

#define ERRTEXT_MAX ((size_t)64 * 1024)

/* Writes the normal form of text (+ "\n" + body when body_len > 0) into
 * out, which must hold min(len + 1 + body_len, ERRTEXT_MAX) bytes, or
 * min(len, ERRTEXT_MAX) without a body. No NUL is added (the text may hold
 * NUL bytes). text and body: borrowed, need not be NUL-terminated, NULL only
 * with length 0. Returns the length written. */
size_t errtext_normalize(char *out, const char *text, size_t len, const char *body,
			 size_t body_len);

#endif

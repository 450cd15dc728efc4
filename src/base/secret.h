/* secret — API keys and tokens kept out of what retryd writes.
 *
 * A provider knows its secrets (an API key read from the environment or the
 * settings, an agent CLI's token variables) and masks them in every error
 * text, notice and streamed text before it goes out: each occurrence becomes
 * "***". Pure. */
#ifndef RETRYD_SECRET_H
#define RETRYD_SECRET_H

#include <stdbool.h>
#include <stddef.h>

/* Whether `secret` (at least 3 bytes) stands in text[0..len). */
bool secret_found(const char *text, size_t len, const char *secret);

/* Replaces every occurrence of `secret` (NUL-terminated, at least 3 bytes,
 * so the text only shrinks) in text[0..*len) with "***", in place, and
 * updates *len; the bytes after the new length are left as they are.
 * Returns whether anything was replaced. */
bool secret_mask(char *text, size_t *len, const char *secret);

#endif

/* random — unpredictable bytes, for identifiers (not for keys).
 *
 * The kernel's getrandom(2), else /dev/urandom, else rand(): a session id
 * must be unique, not secret, so the last resort is good enough. Pure but
 * for the system call; no daemon type. */
#ifndef RETRYD_RANDOM_H
#define RETRYD_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* Fills buf[0..len) (borrowed). */
void random_bytes(void *buf, size_t len);

/* Writes an RFC 9562 UUID version 7 for the wall-clock time ms (48 bits of
 * epoch milliseconds, then random bits) to out as 36 lowercase hex-and-dash
 * characters and a NUL, e.g. "019b76da-a800-7d4f-9a1e-2b3c4d5e6f70". */
void random_uuid_v7(char out[37], int64_t ms);

#endif

/* sha1 — the SHA-1 digest (FIPS 180-4), for naming things by their
 * contents: Redis names a Lua script by the SHA-1 of its text (EVALSHA).
 * Not for anything that needs collision resistance. Pure. */
#ifndef RETRYD_SHA1_H
#define RETRYD_SHA1_H

#include <stddef.h>
#include <stdint.h>

struct sha1 {
	uint32_t h[5];
	uint64_t bytes;          /* message length so far */
	unsigned char block[64];
	size_t fill;             /* bytes waiting in block */
};

void sha1_init(struct sha1 *self);
/* Adds data[0..len) (borrowed) to the message. */
void sha1_update(struct sha1 *self, const void *data, size_t len);
/* The 20-byte digest; self must be re-initialised before it is used again. */
void sha1_final(struct sha1 *self, unsigned char out[20]);

/* The digest of data[0..len) in lower-case hex, NUL-terminated. */
void sha1_hex(const void *data, size_t len, char out[41]);

#endif

/* sha1 — see sha1.h. Written from the FIPS 180-4 description: 512-bit
 * blocks, an 80-word message schedule, big-endian lengths and words. */
#include "base/sha1.h"

#include <string.h>

static uint32_t rol(uint32_t x, unsigned n)
{
	return (x << n) | (x >> (32u - n));
}

static uint32_t load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void store_be32(unsigned char *p, uint32_t x)
{
	p[0] = (unsigned char)(x >> 24);
	p[1] = (unsigned char)(x >> 16);
	p[2] = (unsigned char)(x >> 8);
	p[3] = (unsigned char)x;
}

static void compress(uint32_t h[5], const unsigned char block[64])
{
	uint32_t w[80];
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

	for (unsigned t = 0; t < 16; t++)
		w[t] = load_be32(block + 4 * t);
	for (unsigned t = 16; t < 80; t++)
		w[t] = rol(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
	for (unsigned t = 0; t < 80; t++) {
		uint32_t f, k;

		if (t < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999u;
		} else if (t < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1u;
		} else if (t < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdcu;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6u;
		}
		uint32_t tmp = rol(a, 5) + f + e + k + w[t];

		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = tmp;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void sha1_init(struct sha1 *self)
{
	self->h[0] = 0x67452301u;
	self->h[1] = 0xefcdab89u;
	self->h[2] = 0x98badcfeu;
	self->h[3] = 0x10325476u;
	self->h[4] = 0xc3d2e1f0u;
	self->bytes = 0;
	self->fill = 0;
}

void sha1_update(struct sha1 *self, const void *data, size_t len)
{
	const unsigned char *p = data;

	self->bytes += len;
	while (len > 0) {
		size_t n = sizeof(self->block) - self->fill;

		if (n > len)
			n = len;
		memcpy(self->block + self->fill, p, n);
		self->fill += n;
		p += n;
		len -= n;
		if (self->fill == sizeof(self->block)) {
			compress(self->h, self->block);
			self->fill = 0;
		}
	}
}

void sha1_final(struct sha1 *self, unsigned char out[20])
{
	uint64_t bits = self->bytes * 8u;

	/* 0x80, zeros up to 56 mod 64, then the length in bits (64-bit big-endian). */
	self->block[self->fill++] = 0x80;
	if (self->fill > 56) {
		memset(self->block + self->fill, 0, sizeof(self->block) - self->fill);
		compress(self->h, self->block);
		self->fill = 0;
	}
	memset(self->block + self->fill, 0, 56 - self->fill);
	store_be32(self->block + 56, (uint32_t)(bits >> 32));
	store_be32(self->block + 60, (uint32_t)bits);
	compress(self->h, self->block);
	for (unsigned i = 0; i < 5; i++)
		store_be32(out + 4 * i, self->h[i]);
}

void sha1_hex(const void *data, size_t len, char out[41])
{
	static const char digits[] = "0123456789abcdef";
	struct sha1 s;
	unsigned char d[20];

	sha1_init(&s);
	sha1_update(&s, data, len);
	sha1_final(&s, d);
	for (unsigned i = 0; i < 20; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[40] = '\0';
}

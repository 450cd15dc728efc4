#include "base/secret.h"

#include <stddef.h>
#include <string.h>

/* Where needle[0..nn) first stands in hay[0..hn), or -1. */
static ptrdiff_t find(const char *hay, size_t hn, const char *needle, size_t nn)
{
	const char *p = hay, *end = hay + hn;

	while (nn > 0 && (size_t)(end - p) >= nn) {
		p = memchr(p, needle[0], (size_t)(end - p) - nn + 1);
		if (p == NULL)
			return -1;
		if (memcmp(p, needle, nn) == 0)
			return p - hay;
		p++;
	}
	return -1;
}

bool secret_found(const char *text, size_t len, const char *secret)
{
	size_t n = strlen(secret);

	return n >= 3 && find(text, len, secret, n) >= 0;
}

bool secret_mask(char *text, size_t *len, const char *secret)
{
	size_t n = strlen(secret);
	char *p = text, *hit;
	ptrdiff_t at;
	bool any = false;

	if (n < 3)
		return false;
	while ((at = find(p, (size_t)(text + *len - p), secret, n)) >= 0) {
		hit = p + at;
		memcpy(hit, "***", 3);
		memmove(hit + 3, hit + n, (size_t)(text + *len - (hit + n)));
		*len -= n - 3;
		p = hit + 3;
		any = true;
	}
	return any;
}

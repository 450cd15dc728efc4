#include "base/random.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/random.h>
#endif

#include "base/fsutil.h"

/* How many of len bytes a source filled (reads can be short). */
static size_t from_kernel(unsigned char *buf, size_t len)
{
	size_t got = 0;

#if defined(__linux__)
	while (got < len) {
		ssize_t n = getrandom(buf + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
#else
	(void)buf;
	(void)len;
#endif
	return got;
}

static size_t from_device(unsigned char *buf, size_t len)
{
	size_t got = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	got = fsutil_read_full(fd, buf, len);
	close(fd);
	return got;
}

void random_bytes(void *buf, size_t len)
{
	unsigned char *b = buf;
	size_t got = from_kernel(b, len);

	if (got < len)
		got += from_device(b + got, len - got);
	for (; got < len; got++)
		b[got] = (unsigned char)rand();
}

void random_uuid_v7(char out[37], int64_t ms)
{
	unsigned char b[16];

	random_bytes(b, sizeof(b));
	for (int i = 0; i < 6; i++)
		b[i] = (unsigned char)((uint64_t)ms >> (8 * (5 - i)));
	b[6] = (unsigned char)(0x70 | (b[6] & 0x0f)); /* version 7 */
	b[8] = (unsigned char)(0x80 | (b[8] & 0x3f)); /* variant 10 */
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		 b[12], b[13], b[14], b[15]);
}

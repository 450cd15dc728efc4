/* Fuzz target "tzif": a zone file's bytes as base/tzif reads them (the
 * TZif header, both data blocks, the footer's POSIX rule), and the same
 * bytes as a rule alone.
 *
 * Input: bytes 0..7 (host order) are the moment t, any int64; the rest is
 * the file. Invariants: an offset read is within a day and two hours either
 * side of UTC (RFC 8536's bound, which tzif checks); the same question
 * gets the same answer; the day count of a civil date is monotonic. */
#include <string.h>

#include "base/tzif.h"
#include "fuzz.h"

#define OFF_BOUND (26 * 3600)

static void check_offset(bool ok, int32_t off, const char *what)
{
	if (ok)
		FUZZ_CHECK(off >= -OFF_BOUND && off <= OFF_BOUND, "%s: offset %ld", what,
			   (long)off);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int64_t t = 0;
	int32_t off = 0, again = 0;
	bool ok;

	if (size < sizeof(t))
		return 0;
	memcpy(&t, data, sizeof(t));
	data += sizeof(t);
	size -= sizeof(t);

	ok = tzif_offset(data, size, t, &off);
	check_offset(ok, off, "file");
	FUZZ_CHECK(tzif_offset(data, size, t, &again) == ok && (!ok || again == off),
		   "the file answered twice differently");

	ok = tzif_rule_offset((const char *)data, size, t, &off);
	check_offset(ok, off, "rule");
	FUZZ_CHECK(tzif_rule_offset((const char *)data, size, t, &again) == ok &&
			   (!ok || again == off),
		   "the rule answered twice differently");

	if (size >= 4) {
		int64_t y = (int16_t)(data[0] | data[1] << 8);
		int m = data[2] % 12 + 1, d = data[3] % 31 + 1;

		FUZZ_CHECK(tzif_civil_days(y, m, d) < tzif_civil_days(y, m, d + 1),
			   "days not counting on at %lld-%d-%d", (long long)y, m, d);
	}
	return 0;
}

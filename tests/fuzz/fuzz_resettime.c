/* Fuzz target "resettime": the words an agent CLI prints about a usage
 * limit, as base/resettime reads the time it comes back (epochs after a
 * bar, durations, clock times with dates and zones, daily quotas).
 *
 * Input: byte 0 picks the zone a time without one is in (the local one,
 * UTC, zones with daylight saving either side of the equator, a half-hour
 * one, an unknown name) and one of two moments "now"; the rest is the text.
 * Invariants: the same text gets the same answer; a reset read is a real
 * moment: no earlier than the year 0 (a date's year has four digits, and a
 * zone may put it a day earlier in UTC) and no later than a duration can
 * say (base/hint's HINT_MAX_MS from now). How far is too far
 * to wait is the park's to say (retry.maxUsageWaitMs), not the reader's. */
#include <string.h>

#include "base/hint.h"
#include "base/resettime.h"
#include "fuzz.h"

/* 0000-01-01T00:00:00Z less two days. */
#define YEAR_0_MS (INT64_C(-62167219200000) - INT64_C(172800000))

static const char *const zones[] = { NULL, "UTC", "America/Anchorage", "Australia/Sydney",
				     "Asia/Kolkata", "Nowhere/Atlantis" };

/* 2025-12-02T12:00:00Z, and 2026-03-08T10:30:00Z (a daylight-saving day). */
static const int64_t nows[] = { INT64_C(1764676800000), INT64_C(1772965800000) };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *zone, *text;
	int64_t now, out = -1, again = -1;
	bool ok;

	if (size < 1)
		return 0;
	zone = zones[data[0] % (sizeof(zones) / sizeof(zones[0]))];
	now = nows[(data[0] >> 4) & 1];
	text = (const char *)data + 1;
	size--;

	ok = resettime_parse(text, size, now, zone, &out);
	FUZZ_CHECK(resettime_parse(text, size, now, zone, &again) == ok && (!ok || again == out),
		   "the text answered twice differently");
	if (!ok)
		return 0;
	FUZZ_CHECK(out >= YEAR_0_MS && out <= now + HINT_MAX_MS, "a reset at %lld ms", (long long)out);
	return 0;
}

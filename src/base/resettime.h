/* resettime — when a usage limit comes back, read from the words an agent
 * CLI prints about it, as an absolute time.
 *
 * The forms read (ASCII case-insensitive; the first that yields wins):
 *   - an epoch after a bar, "Claude AI usage limit reached|1767240000"
 *     (seconds; milliseconds when 13 digits);
 *   - a duration after "try again in", "retry in", "resets in", "reset in"
 *     ("2 hours 13 minutes", "37.5s": base/hint's duration grammar);
 *   - a clock time after "resets", "reset at", "try again at", "retry at",
 *     "available again at" or "until": optional "today"/"tomorrow", an
 *     optional date ("Dec 5", "December 5th, 2026", "2026-12-05"), then
 *     "11pm", "11 PM", "3:45 p.m.", "15:45" or "15:45:30", then an optional
 *     zone: "(America/Anchorage)", "America/Anchorage", "UTC", "GMT". A time
 *     without a date is the next one to come (today, else tomorrow); a date
 *     without a year the next one too;
 *   - a daily quota with no time stated ("... per day", "PerDay", "daily
 *     limit" beside "quota"): the next midnight in America/Los_Angeles
 *     (when Google's daily quotas reset).
 * A zone is an IANA name whose file in the system's zoneinfo (/usr/share/
 * zoneinfo) is read by base/tzif, TZ untouched (safe beside threads): an
 * unknown or unreadable name reads no time at all rather than a wrong one.
 * zone NULL: the local zone (TZ, else /etc/localtime), as the C library
 * reads it. */
#ifndef RETRYD_RESETTIME_H
#define RETRYD_RESETTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* text: borrowed, len bytes (need not be NUL-terminated); now_ms: epoch
 * ms; zone: the zone a time without one is in (borrowed), NULL for the
 * local one. Returns true with *out_ms (epoch ms, possibly <= now_ms for
 * an epoch or date in the past) when a reset is stated. */
bool resettime_parse(const char *text, size_t len, int64_t now_ms, const char *zone,
		     int64_t *out_ms);

/* The zone name is one the system's zoneinfo holds ("UTC" always is). */
bool resettime_zone_known(const char *zone);

#endif

/* tzif — the offset from UTC of an IANA time zone at a moment, read from
 * the bytes of the zone's TZif file (RFC 8536: versions 1 to 4) and, past
 * its last transition (or in a "slim" file with none), from the POSIX TZ
 * rule of its footer ("AKST9AKDT,M3.2.0,M11.1.0"). Pure: the caller reads
 * the file. Unlike switching TZ around localtime, safe beside threads. */
#ifndef RETRYD_TZIF_H
#define RETRYD_TZIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The offset (seconds east of UTC) in force at t (seconds since the
 * epoch, UTC) in the zone whose file is data[0..len): true with *off_s, or
 * false when data is not a TZif file or is damaged (nothing is guessed). */
bool tzif_offset(const unsigned char *data, size_t len, int64_t t, int32_t *off_s);

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian, m 1..12); d may
 * run past the month's end, the count goes on. */
int64_t tzif_civil_days(int64_t y, int m, int64_t d);

/* The same from a POSIX TZ rule alone (rule[0..len), no leading ':'). */
bool tzif_rule_offset(const char *rule, size_t len, int64_t t, int32_t *off_s);

#endif

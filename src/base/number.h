/* number — counts, delays and sizes that come from outside (an HTTP
 * provider's usage report, an agent CLI's lines, a user's plan) made safe to
 * keep, add and relay.
 *
 * Such a number is read once, here, into [0, NUMBER_MAX]: a negative value,
 * a fraction (where a whole number is expected), NaN, or anything that is
 * not a number is rejected, and the caller treats the field as absent (a
 * token count stays 0). A value above NUMBER_MAX is saturated to it, so a
 * sum of a few of them fits int64_t and every result is one a JSON client
 * reads exactly. Sums go through number_add(), which saturates as well.
 * Pure; no allocation, no logging (callers log a rejection at debug). */
#ifndef RETRYD_NUMBER_H
#define RETRYD_NUMBER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* 2^53 - 1: the largest integer a JavaScript (double) client reads exactly. */
#define NUMBER_MAX INT64_C(9007199254740991)

/* What a read found. Greater than 0: *out holds a value in [0, NUMBER_MAX]. */
enum number_read {
	NUMBER_REJECTED = -1, /* present, but negative, a fraction, NaN or no number */
	NUMBER_ABSENT = 0,    /* NULL or JSON null */
	NUMBER_EXACT = 1,     /* the value as given */
	NUMBER_SATURATED = 2, /* larger than NUMBER_MAX: NUMBER_MAX */
};

/* v: borrowed, may be NULL. A JSON integer, or a real with no fractional
 * part (12.0, 1e300), as a count. *out is 0 unless the result is > 0. */
enum number_read number_from_json(const json_t *v, int64_t *out);

/* As number_from_json(), but a real is rounded half up to the nearest whole
 * number (a CLI's retry_delay_ms of 35073.757 is 35074); a negative value is
 * still rejected. */
enum number_read number_from_json_rounded(const json_t *v, int64_t *out);

/* s[0..len) (borrowed, need not be NUL-terminated): one or more ASCII
 * digits and nothing else ("12abc", "+1", " 1", "" are rejected; len 0 is
 * rejected, not absent). Leading zeros are allowed. */
enum number_read number_from_digits(const char *s, size_t len, int64_t *out);

/* v brought into [0, NUMBER_MAX]: for values computed from outside input. */
int64_t number_clamp(int64_t v);

/* a + b, both first clamped as number_clamp() does, saturated at NUMBER_MAX:
 * never wraps, never negative. */
int64_t number_add(int64_t a, int64_t b);

/* Sums, differences and products over the whole int64_t range, saturated
 * at INT64_MIN and INT64_MAX instead of wrapping (signed overflow is
 * undefined): for arithmetic on values a record or a reply held, which a
 * check has not yet bounded or which may be hostile. */
int64_t number_sat_add(int64_t a, int64_t b);
int64_t number_sat_sub(int64_t a, int64_t b);
int64_t number_sat_mul(int64_t a, int64_t b);

/* v within [lo, hi] (lo <= hi). */
int64_t number_within(int64_t v, int64_t lo, int64_t hi);

/* The decimal integer s[0..len) (an optional '-', then 1 to 19 digits, and
 * nothing else) in *out: 0, or -1 when it is not one or does not fit
 * int64_t (*out untouched). For record text, where a value out of range is
 * a damaged record, never a saturated one. */
int number_parse_int64(const char *s, size_t len, int64_t *out);

#endif

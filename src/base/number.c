#include "base/number.h"

#include <stdbool.h>

/* 2^53: from here on every double is a whole number, and above NUMBER_MAX. */
#define TWO_53 9007199254740992.0

static enum number_read give(int64_t v, int64_t *out)
{
	if (v > NUMBER_MAX) {
		*out = NUMBER_MAX;
		return NUMBER_SATURATED;
	}
	*out = v;
	return NUMBER_EXACT;
}

static enum number_read from_json(const json_t *v, bool round, int64_t *out)
{
	double x;
	int64_t n;

	*out = 0;
	if (v == NULL || json_is_null(v))
		return NUMBER_ABSENT;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		return i < 0 ? NUMBER_REJECTED : give((int64_t)i, out);
	}
	if (!json_is_real(v))
		return NUMBER_REJECTED;
	x = json_real_value(v);
	/* The negated test also catches NaN. */
	if (!(x >= 0.0))
		return NUMBER_REJECTED;
	if (x >= TWO_53)
		return give(INT64_MAX, out);
	/* Below 2^53 the conversion and the subtraction are exact. */
	n = (int64_t)x;
	if (x - (double)n != 0.0) {
		if (!round)
			return NUMBER_REJECTED;
		if (x - (double)n >= 0.5)
			n++;
	}
	return give(n, out);
}

enum number_read number_from_json(const json_t *v, int64_t *out)
{
	return from_json(v, false, out);
}

enum number_read number_from_json_rounded(const json_t *v, int64_t *out)
{
	return from_json(v, true, out);
}

enum number_read number_from_digits(const char *s, size_t len, int64_t *out)
{
	int64_t n = 0;

	*out = 0;
	if (len == 0)
		return NUMBER_REJECTED;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return NUMBER_REJECTED;
		/* Past NUMBER_MAX the value no longer matters, only the syntax. */
		if (n <= NUMBER_MAX)
			n = n * 10 + (s[i] - '0');
	}
	return give(n, out);
}

int64_t number_clamp(int64_t v)
{
	return v < 0 ? 0 : v > NUMBER_MAX ? NUMBER_MAX : v;
}

int64_t number_add(int64_t a, int64_t b)
{
	/* Both at most 2^53 - 1: the sum cannot overflow int64_t. */
	return number_clamp(number_clamp(a) + number_clamp(b));
}

int64_t number_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

int64_t number_sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

int64_t number_sat_mul(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
	return r;
}

int64_t number_within(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

int number_parse_int64(const char *s, size_t len, int64_t *out)
{
	bool neg = len > 0 && s[0] == '-';
	size_t i = neg ? 1 : 0;
	uint64_t n = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;

	if (i == len || len - i > 19)
		return -1;
	for (; i < len; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -1;
		d = (unsigned)(s[i] - '0');
		if (n > (lim - d) / 10)
			return -1;
		n = n * 10 + d;
	}
	*out = neg ? (n == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)n) : (int64_t)n;
	return 0;
}

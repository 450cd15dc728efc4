/* Fuzz target "number": numbers from outside (src/base/number.c) and the
 * sums built from them — the HTTP decoders' usage reader
 * (api_stream_usage) and get_session_stats (message_stats).
 *
 * Input, read three ways at once:
 *  - the bytes as a digit string (number_from_digits);
 *  - the bytes as a JSON document (any value): every number, string and
 *    literal in it through number_from_json and number_from_json_rounded;
 *    an object's "input" and "output" as a usage report; an array as a
 *    conversation for message_stats;
 *  - the first 16 bytes as two int64 (host order) for number_clamp and
 *    number_add.
 * Invariants: every result is in [0, NUMBER_MAX]; a rejection or absence
 * gives 0; in-range whole numbers are kept exactly, larger ones saturate,
 * negatives and fractions are rejected (rounded: within half of the value);
 * a sum never wraps and is the saturated sum of its clamped operands. */
#include <jansson.h>
#include <string.h>

#include "base/number.h"
#include "fuzz.h"
#include "proto/message.h"
#include "provider/http/api.h"
#include "provider/http/api_openai.h"

#define TWO_53 9007199254740992.0
#define MAX_DEPTH 32

static void check_read(enum number_read r, int64_t out, const char *what)
{
	FUZZ_CHECK(r == NUMBER_REJECTED || r == NUMBER_ABSENT || r == NUMBER_EXACT ||
		   r == NUMBER_SATURATED, "%s: result %d", what, (int)r);
	if (r <= 0)
		FUZZ_CHECK(out == 0, "%s: %lld without a value", what, (long long)out);
	else
		FUZZ_CHECK(out >= 0 && out <= NUMBER_MAX, "%s: %lld out of range", what,
			   (long long)out);
	if (r == NUMBER_SATURATED)
		FUZZ_CHECK(out == NUMBER_MAX, "%s: saturated to %lld", what, (long long)out);
}

static void check_json_number(const json_t *v)
{
	int64_t n = -7, m = -7;
	enum number_read r = number_from_json(v, &n);
	enum number_read rr = number_from_json_rounded(v, &m);

	check_read(r, n, "json");
	check_read(rr, m, "json rounded");
	if (json_is_null(v)) {
		FUZZ_CHECK(r == NUMBER_ABSENT && rr == NUMBER_ABSENT, "null not absent");
	} else if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0)
			FUZZ_CHECK(r == NUMBER_REJECTED, "negative %lld accepted", (long long)i);
		else if (i <= NUMBER_MAX)
			FUZZ_CHECK(r == NUMBER_EXACT && n == i, "%lld read as %lld", (long long)i,
				   (long long)n);
		else
			FUZZ_CHECK(r == NUMBER_SATURATED, "%lld not saturated", (long long)i);
		FUZZ_CHECK(rr == r && m == n, "rounding changed the integer %lld", (long long)i);
	} else if (json_is_real(v)) {
		double x = json_real_value(v);

		if (x < 0.0) {
			FUZZ_CHECK(r == NUMBER_REJECTED && rr == NUMBER_REJECTED, "negative %g accepted", x);
		} else if (x >= TWO_53) {
			FUZZ_CHECK(r == NUMBER_SATURATED && rr == NUMBER_SATURATED, "%g not saturated", x);
		} else {
			double d = (double)m - x;

			FUZZ_CHECK(rr > 0 && d > -0.5 && d <= 0.5, "%g rounded to %lld", x, (long long)m);
			if (r > 0)
				FUZZ_CHECK((double)n == x && m == n, "%g read as %lld", x, (long long)n);
			else
				FUZZ_CHECK(r == NUMBER_REJECTED && (double)m != x, "whole %g rejected", x);
		}
	} else {
		FUZZ_CHECK(r == NUMBER_REJECTED && rr == NUMBER_REJECTED, "a non-number accepted");
	}
}

static void walk(const json_t *v, int depth)
{
	const char *key;
	json_t *x;
	size_t i;

	check_json_number(v);
	if (depth >= MAX_DEPTH)
		return;
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, x)
			walk(x, depth + 1);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			walk(x, depth + 1);
	}
}

/* An object's "input"/"output" as a provider's usage report. */
static void check_usage(const json_t *obj)
{
	static const struct provider_sink none;
	const json_t *in = json_object_get(obj, "input"), *out = json_object_get(obj, "output");
	struct api_stream st;
	int64_t n;

	api_stream_init(&st, &api_openai_format, &none);
	api_stream_usage(&st, in, out);
	api_stream_usage(&st, out, in);
	FUZZ_CHECK(st.input_tokens >= 0 && st.input_tokens <= NUMBER_MAX, "input %lld",
		   (long long)st.input_tokens);
	FUZZ_CHECK(st.output_tokens >= 0 && st.output_tokens <= NUMBER_MAX, "output %lld",
		   (long long)st.output_tokens);
	/* The second report wins where it holds a count. */
	if (number_from_json(out, &n) > 0)
		FUZZ_CHECK(st.input_tokens == n, "a later count did not replace the earlier one");
}

/* An array as a conversation. */
static void check_stats(const json_t *messages)
{
	json_t *st = message_stats(messages, "s", NULL);
	json_t *tokens = json_object_get(st, "tokens");
	json_int_t in, out, total;

	if (st == NULL)
		return; /* out of memory */
	in = json_integer_value(json_object_get(tokens, "input"));
	out = json_integer_value(json_object_get(tokens, "output"));
	total = json_integer_value(json_object_get(tokens, "total"));
	FUZZ_CHECK(in >= 0 && in <= NUMBER_MAX && out >= 0 && out <= NUMBER_MAX,
		   "stats tokens %lld/%lld out of range", (long long)in, (long long)out);
	FUZZ_CHECK(total == number_add(in, out) && total >= in && total >= out,
		   "stats total %lld for %lld + %lld", (long long)total, (long long)in,
		   (long long)out);
	json_decref(st);
}

static void check_digits(const char *s, size_t len)
{
	int64_t n = -7, want = 0;
	enum number_read r = number_from_digits(s, len, &n);
	size_t lead = 0, k;
	bool digits = len > 0;

	check_read(r, n, "digits");
	for (size_t i = 0; i < len; i++)
		digits &= s[i] >= '0' && s[i] <= '9';
	FUZZ_CHECK(digits == (r > 0), "digit string %s", digits ? "rejected" : "accepted");
	if (!digits)
		return;
	while (lead < len && s[lead] == '0')
		lead++;
	k = len - lead;
	if (k <= 15) {
		for (size_t i = lead; i < len; i++)
			want = want * 10 + (s[i] - '0');
		FUZZ_CHECK(r == NUMBER_EXACT && n == want, "%lld read as %lld", (long long)want,
			   (long long)n);
	} else {
		bool above = k > 16 || memcmp(s + lead, "9007199254740991", 16) > 0;

		FUZZ_CHECK(above == (r == NUMBER_SATURATED), "%zu-digit value misread", k);
	}
}

static void check_add(int64_t a, int64_t b)
{
	int64_t ca = number_clamp(a), cb = number_clamp(b), s = number_add(a, b);

	FUZZ_CHECK(ca >= 0 && ca <= NUMBER_MAX && number_clamp(ca) == ca, "clamp %lld -> %lld",
		   (long long)a, (long long)ca);
	FUZZ_CHECK((a >= 0 && a <= NUMBER_MAX) == (ca == a), "clamp moved %lld", (long long)a);
	FUZZ_CHECK(s >= 0 && s <= NUMBER_MAX, "add gave %lld", (long long)s);
	FUZZ_CHECK(s >= ca && s >= cb, "add wrapped: %lld", (long long)s);
	FUZZ_CHECK(s == (ca + cb > NUMBER_MAX ? NUMBER_MAX : ca + cb), "add %lld + %lld = %lld",
		   (long long)ca, (long long)cb, (long long)s);
	FUZZ_CHECK(s == number_add(b, a), "add not commutative");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc;

	check_digits((const char *)data, size);
	if (size >= 16) {
		int64_t a, b;

		memcpy(&a, data, sizeof(a));
		memcpy(&b, data + 8, sizeof(b));
		check_add(a, b);
	}
	doc = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (doc == NULL)
		return 0;
	walk(doc, 0);
	if (json_is_object(doc))
		check_usage(doc);
	else if (json_is_array(doc))
		check_stats(doc);
	json_decref(doc);
	return 0;
}

/* hint — the wait a server stated, in its headers or in its error text.
 *
 * Pure. Only the forms below are read: the ones servers and their SDKs
 * write when they state a wait, so that a number that is no wait (a count,
 * a port, a client's own countdown) never holds a retry back. All names and
 * words are matched case-insensitively (ASCII).
 *
 * Headers (hint_in_headers), first that yields wins:
 *   1. retry-after-ms: N                          → N ms
 *   2. retry-after: N (decimal seconds) | <HTTP-date> (date − now): the
 *      IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", or the obsolete RFC 850
 *      "Sunday, 06-Nov-94 08:49:37 GMT" (years 70..99 are 19xx, else 20xx)
 *      and asctime "Sun Nov  6 08:49:37 1994" forms
 *   3. x-ratelimit-reset-ms: N (epoch ms above 1e12, else ms) and
 *      x-ratelimit-reset: N (epoch s above 1e9, else s); then
 *      x-ratelimit-reset-requests / -tokens: a duration ("6m0s", "1s",
 *      "20ms") of a bucket whose x-ratelimit-remaining-* is "0" (or not
 *      sent); the exhausted one, else the longer
 *   4. anthropic-ratelimit-<kind>-reset: RFC 3339, for the kinds whose
 *      anthropic-ratelimit-<kind>-remaining is "0": the latest − now
 *   "now" is the response's own Date header (the server's clock, so local
 *   skew does not matter), else now_ms; neither: 2 and 4 skip.
 * Text (hint_in_text), first that yields wins:
 *   1. typed fields, in this order, each at its first occurrence:
 *      retry-after-ms (ms), "retryDelay": "37s", retry_delay { seconds: 37 },
 *      resets_in_seconds (s), "estimated_time": 20.0 (s, Hugging Face),
 *      retry-after: N (s, a bare number), x-ratelimit-reset-requests|tokens
 *      (duration); separators `:` `=` `=>` `,`, an optional `[` and quotes
 *   2. the earliest phrase followed by a duration: "try again in|after",
 *      "retry in|after" (not after "will " or "'ll "), "reset(s) in|after",
 *      "wait (for) (about) N…". A client's own countdown ("Retrying in 4s")
 *      is no hint.
 *   3. "|<10-digit epoch>" → epoch − now, only when now_ms is known.
 * A duration is one or more <decimal><spaces?><unit> parts separated by
 * spaces, commas or "and" ("9m38.016s", "2 days 17 hours 14 minutes"),
 * units ms, s, sec(s), second(s), m, min(s), minute(s), h, hr(s), hour(s),
 * d, day(s), millisecond(s); a unit followed by a letter is none. The sum is
 * rounded to the nearest ms. Results are >= 0 (a time in the past gives 0)
 * and clamped at HINT_MAX_MS.
 *
 * now_ms is epoch milliseconds, 0 when unknown. */
#ifndef RETRYD_HINT_H
#define RETRYD_HINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ~31 700 years: far beyond any wait a caller would honour. */
#define HINT_MAX_MS INT64_C(1000000000000000)

/* headers: borrowed object, header name (any case) → string value; NULL or
 * not an object gives no hint. buckets false reads only what the server said
 * about this refusal (retry-after-ms, retry-after), not the rate-limit state
 * (x-ratelimit-*, anthropic-ratelimit-*): a spent quota does not come back
 * when the per-minute bucket refills. Returns true and sets *out_ms on a
 * hint. */
bool hint_in_headers(const json_t *headers, int64_t now_ms, bool buckets, int64_t *out_ms);

/* The requests per minute an answer's headers (borrowed, as for
 * hint_in_headers) announce: OpenAI's x-ratelimit-limit-requests,
 * Anthropic's anthropic-ratelimit-requests-limit; 0 when none. */
int64_t hint_announced_rpm(const json_t *headers);

/* text: borrowed, `len` bytes, already in errtext's normal form (see
 * base/errtext.h). Returns true and sets *out_ms on a hint. */
bool hint_in_text(const char *text, size_t len, int64_t now_ms, int64_t *out_ms);

/* A wait stated in a raw error text (borrowed, `len` bytes, need not be
 * NUL-terminated): normalised as errtext does, then hint_in_text. A text
 * that none of those forms matches may still be a header line as the HTTP
 * provider writes it: "retry-after: <HTTP-date>", "x-ratelimit-reset-ms: N"
 * (epoch ms above 1e12, else a delay), "x-ratelimit-reset: N" (epoch seconds
 * above 1e9, else seconds). Returns true and sets *out_ms on a hint. */
bool hint_parse(const char *text, size_t len, int64_t now_epoch_ms, int64_t *out_ms);

/* The duration at s[0..len) (leading text not skipped), in ms, rounded;
 * false when s does not start with one. */
bool hint_duration(const char *s, size_t len, int64_t *out_ms);

/* A wait as a person reads it, in the duration grammar above: the two
 * largest units that are not zero ("4h12m", "2d3h", "37s", "450ms").
 * Writes at most n bytes (NUL included) to out; returns out. */
char *hint_format(int64_t ms, char *out, size_t n);

#endif

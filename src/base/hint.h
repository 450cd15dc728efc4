/* hint — the wait a server asked for, parsed from an error's text.
 *
 * Pure. Recognised, first match wins, in this order (case-insensitive):
 *   retry-after-ms: N | retry-after-ms=N                     → N ms
 *   retry-after: N (seconds, may be fractional) | retry-after: <HTTP-date>
 *   reset after 1h2m3s (each of h and m optional; s may be fractional)
 *   Please retry in 1.5s | Please retry in 500ms
 *   "retryDelay": "3s" | "retryDelay": "250ms"
 *   try again in ~N ms|s|sec|secs|seconds|m|min|mins|minutes|h|hr|hrs|hours
 *   x-ratelimit-reset-ms: N  (an epoch in ms when N > 1e12, else a delay in ms)
 *   x-ratelimit-reset: N     (epoch seconds when N > 1e9, else a delay in s)
 * An epoch or HTTP-date in the past gives 0. */
#ifndef RETRYD_HINT_H
#define RETRYD_HINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* text: borrowed, `len` bytes, need not be NUL-terminated.
 * now_epoch_ms: wall-clock time, for dates and epochs.
 * Returns true and sets *out_ms (>= 0, rounded up to whole ms) on a hint. */
bool hint_parse(const char *text, size_t len, int64_t now_epoch_ms, int64_t *out_ms);

#endif

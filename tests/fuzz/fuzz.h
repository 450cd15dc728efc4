/* Shared by the fuzz targets (tests/fuzz/fuzz_*.c).
 *
 * Each target defines LLVMFuzzerTestOneInput(). It is linked twice: with
 * libFuzzer (`make fuzz`, clang) and with replay.c, a plain main() that feeds
 * it files (`make check` replays tests/fuzz/regressions/ and the seed corpora
 * with the ordinary compiler, and under SANITIZE=1 with ASan+UBSan). */
#ifndef RETRYD_FUZZ_H
#define RETRYD_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant is a crash: libFuzzer keeps the input, replay fails. */
#define FUZZ_CHECK(cond, ...)                                   \
	do {                                                    \
		if (!(cond))                                    \
			fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((noreturn, format(printf, 4, 5)))
#endif
	;

/* True when s[0..len) is well-formed UTF-8 (what jansson accepts). */
bool fuzz_utf8_valid(const char *s, size_t len);

/* A private temporary directory, made once per process and removed at exit. */
const char *fuzz_tmpdir(void);

/* How many times the code under test logged "out of memory building an
 * event" (an event silently dropped); the targets' own log replaces log.c. */
extern unsigned fuzz_dropped_events;

#endif

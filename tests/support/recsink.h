/* recsink — a provider_sink that records what it is told, for the unit
 * tests and fuzz targets that drive a decoder or a provider (one of these
 * rather than one per test file).
 *
 * Every call is appended to a log as text — "start;", "text_start;",
 * "delta(<the bytes>);", "text_end;", "finish(<stop>);", "event(<type>);",
 * and for a thinking block "thinking_start;", "thinking_delta:<the bytes>;",
 * "thinking_end:<signature>;" or "thinking_end:<signature>|redacted;" —
 * and counted; the first call out of order (text before start, a second
 * start, a delta outside a text block, ...) is named in `misorder`, so a
 * test asserts the protocol after the run instead of inside the callbacks.
 * Out of memory aborts. */
#ifndef RETRYD_TEST_RECSINK_H
#define RETRYD_TEST_RECSINK_H

#include <stdbool.h>
#include <stddef.h>

#include "provider/provider.h"

struct recsink {
	char *log;               /* owned; NUL-terminated (NULL until the first call), and
				  * holds a delta's NUL bytes as they are: len counts them */
	size_t len, cap;
	unsigned starts, text_starts, text_ends, deltas, finishes, events;
	unsigned thinking_starts, thinking_deltas, thinking_ends, redacted;
	unsigned bad_deltas;     /* empty, or refused by check_delta */
	const char *misorder;    /* static text, or NULL */
	/* Optional, set after init: a delta's bytes must pass it (e.g. a UTF-8
	 * check). */
	bool (*check_delta)(const char *text, size_t len);
	/* The last finish(): its stop reason, hint and tokens; error_message
	 * points into error_text (or is NULL). */
	struct provider_result result;
	char error_text[1024];
};

void recsink_init(struct recsink *self);
/* Frees the log. */
void recsink_release(struct recsink *self);

/* The sink that records into self (ctx = self; event set too). */
struct provider_sink recsink_sink(struct recsink *self);

/* Appends text[0..len) to the log as it is (a test's own notes, such as a
 * decoder's end state). */
void recsink_note(struct recsink *self, const char *text, size_t len);

/* The log, new (the caller frees it; "" when nothing was recorded); self's
 * log is empty afterwards. */
char *recsink_take_log(struct recsink *self);

#endif

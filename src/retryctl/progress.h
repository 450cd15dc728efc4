/* progress — the text retryctl shows on stderr while a prompt runs, and
 * whether it may redraw it in place.
 *
 * Pure: numbers and environment values in, text out, so the wording, the
 * tenths and the cut to the terminal's width are tested without a terminal. */
#ifndef RETRYCTL_PROGRESS_H
#define RETRYCTL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum progress_mode {
	PROGRESS_PLAIN, /* one line per event: no escape codes, no \r, no spinner */
	PROGRESS_LIVE,  /* a line redrawn in place: the countdown, the spinner */
};

/* What an auto_retry_start says; the strings are borrowed and may be NULL. */
struct progress_retry {
	int attempt, max_attempts;
	const char *error;       /* errorMessage */
	const char *error_class; /* errorClass */
};

/* Live only on a terminal that asked for nothing plainer: plain when stderr
 * is not a TTY, when NO_COLOR is set to a non-empty value (no-color.org),
 * or when TERM is unset, empty or "dumb". no_color and term are the
 * environment's values, NULL when unset (borrowed). */
enum progress_mode progress_mode_pick(const char *no_color, const char *term, bool stderr_tty);
/* The terminal's width in columns: tty_cols (from TIOCGWINSZ; 0 when
 * unknown), else the number in COLUMNS (NULL when unset), else 80. */
int progress_width(int tty_cols, const char *columns);
/* A wait as the countdown shows it, rounded up so a pending wait never reads
 * zero: "1.6s", "0.1s", "59.9s" in tenths under a minute; "1m05s" in whole
 * seconds under an hour; "1h05m" in whole minutes above. 0 ms is "0.0s". */
void progress_delay_text(char *buf, size_t size, uint64_t ms);
/* Columns the UTF-8 text takes: one per code point (wide characters are
 * counted as one). */
size_t progress_columns(const char *s);
/* Cuts s in place to at most cols columns, at a code point boundary.
 * Returns true when it cut. */
bool progress_cut(char *s, size_t cols);
/* Replaces the bytes a terminal would act on (C0 controls, DEL, the C1
 * controls U+0080..U+009F) with spaces, so an error text cannot move the
 * cursor or start an escape sequence. In place; the length may shrink. */
void progress_clean(char *s);
/* "Retrying (1/3) in 1.6s — 529 overloaded (retryable)" for a wait of
 * remaining_ms; without " — error" when r->error is NULL or empty, without
 * " (class)" when r->error_class is. The error is cleaned; width > 0 fits
 * the line into width - 1 columns (the last column is left free, where some
 * terminals wrap), cutting the error first and marking the cut with "…";
 * width 0 never cuts. */
void progress_retry_line(char *buf, size_t size, const struct progress_retry *r,
			 uint64_t remaining_ms, int width);
/* "held 7.7s — another retryd of yours got 429 retry-after 8s": a fleet
 * hold of remaining_ms and what holds it (fleet_wait's cause; NULL or empty:
 * "held 7.7s" alone). Cleaned, fitted and cut as progress_retry_line. */
void progress_hold_line(char *buf, size_t size, const char *cause, uint64_t remaining_ms,
			int width);
/* A prompt parked until a usage limit resets: "Usage limit: waiting 4h12m
 * for the reset at 23:00 AKST" (remaining_ms as progress_delay_text writes
 * it: hours and minutes from an hour on); reset_local (borrowed, the
 * reset's local time as the caller formats it) NULL or "" leaves " at ..."
 * out. width as progress_retry_line's. */
void progress_park_line(char *buf, size_t size, uint64_t remaining_ms, const char *reset_local,
			int width);
/* The spinner's frame for tick n (one tick a 100 ms): "⠋ Waiting for the
 * model…" and so on, a braille dot going round. */
void progress_spinner_line(char *buf, size_t size, unsigned n);
/* "Retry failed after 3 attempts: <error>" (1 attempt: singular), the error
 * cleaned. */
void progress_failed_line(char *buf, size_t size, int attempts, const char *error);

#endif

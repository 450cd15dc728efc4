#include "retryctl/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ELLIPSIS "\xe2\x80\xa6"
#define EM_DASH  "\xe2\x80\x94"

enum progress_mode progress_mode_pick(const char *no_color, const char *term, bool stderr_tty)
{
	if (!stderr_tty)
		return PROGRESS_PLAIN;
	if (no_color != NULL && no_color[0] != '\0')
		return PROGRESS_PLAIN;
	/* No TERM (cron, some IDE consoles) says as little as "dumb". */
	if (term == NULL || term[0] == '\0' || strcmp(term, "dumb") == 0)
		return PROGRESS_PLAIN;
	return PROGRESS_LIVE;
}

int progress_width(int tty_cols, const char *columns)
{
	if (tty_cols > 0)
		return tty_cols;
	if (columns != NULL && columns[0] != '\0') {
		char *end;
		long n = strtol(columns, &end, 10);

		if (*end == '\0' && n > 0 && n <= 10000)
			return (int)n;
	}
	return 80;
}

void progress_delay_text(char *buf, size_t size, uint64_t ms)
{
	uint64_t tenths = ms / 100 + (ms % 100 != 0);
	uint64_t secs = ms / 1000 + (ms % 1000 != 0);
	uint64_t mins = ms / 60000 + (ms % 60000 != 0);

	if (tenths < 600)
		snprintf(buf, size, "%u.%us", (unsigned)(tenths / 10), (unsigned)(tenths % 10));
	else if (secs < 3600)
		snprintf(buf, size, "%um%02us", (unsigned)(secs / 60), (unsigned)(secs % 60));
	else
		snprintf(buf, size, "%lluh%02um", (unsigned long long)(mins / 60), (unsigned)(mins % 60));
}

static bool is_continuation(unsigned char c)
{
	return (c & 0xC0) == 0x80;
}

size_t progress_columns(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		n += !is_continuation((unsigned char)*s);
	return n;
}

bool progress_cut(char *s, size_t cols)
{
	size_t n = 0;

	for (char *p = s; *p != '\0'; p++) {
		if (is_continuation((unsigned char)*p))
			continue;
		if (n == cols) {
			*p = '\0';
			return true;
		}
		n++;
	}
	return false;
}

void progress_clean(char *s)
{
	char *w = s;

	for (const unsigned char *r = (const unsigned char *)s; *r != '\0'; r++) {
		if (*r < 0x20 || *r == 0x7f) {
			*w++ = ' ';
		} else if (*r == 0xC2 && r[1] >= 0x80 && r[1] <= 0x9F) {
			*w++ = ' ';
			r++;
		} else {
			*w++ = (char)*r;
		}
	}
	*w = '\0';
}

/* snprintf may have cut a code point in two: drop its first half. */
static void trim_partial(char *s)
{
	size_t len = strlen(s), i = len, need;
	unsigned char lead;

	while (i > 0 && is_continuation((unsigned char)s[i - 1]))
		i--;
	if (i == 0)
		return;
	lead = (unsigned char)s[i - 1];
	need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
	if (len - (i - 1) < need)
		s[i - 1] = '\0';
}

void progress_retry_line(char *buf, size_t size, const struct progress_retry *r,
			 uint64_t remaining_ms, int width)
{
	char delay[32], head[96], tail[96];
	char *error = NULL;
	size_t fixed;

	if (size == 0)
		return;
	progress_delay_text(delay, sizeof(delay), remaining_ms);
	snprintf(head, sizeof(head), "Retrying (%d/%d) in %s", r->attempt, r->max_attempts, delay);
	tail[0] = '\0';
	if (r->error_class != NULL && r->error_class[0] != '\0') {
		snprintf(tail, sizeof(tail), " (%s)", r->error_class);
		progress_clean(tail);
	}
	if (r->error != NULL && r->error[0] != '\0') {
		/* Room for the whole error plus the ellipsis a cut adds. */
		error = malloc(strlen(r->error) + sizeof(ELLIPSIS));
		if (error != NULL) {
			strcpy(error, r->error);
			progress_clean(error);
		}
	}
	fixed = progress_columns(head) + progress_columns(tail);
	if (error != NULL && width > 0) {
		size_t room = (size_t)width - 1;
		size_t sep = progress_columns(" " EM_DASH " ");

		/* The error gives way first; below two columns it goes. */
		if (fixed + sep + 2 > room) {
			error[0] = '\0';
		} else if (progress_columns(error) > room - fixed - sep) {
			progress_cut(error, room - fixed - sep - 1);
			strcat(error, ELLIPSIS);
		}
	}
	if (error != NULL && error[0] != '\0')
		snprintf(buf, size, "%s " EM_DASH " %s%s", head, error, tail);
	else
		snprintf(buf, size, "%s%s", head, tail);
	free(error);
	trim_partial(buf);
	/* A terminal narrower than the fixed parts. */
	if (width > 0)
		progress_cut(buf, (size_t)width - 1);
}

void progress_hold_line(char *buf, size_t size, const char *cause, uint64_t remaining_ms,
			int width)
{
	char delay[32], head[64];
	char *text = NULL;

	if (size == 0)
		return;
	progress_delay_text(delay, sizeof(delay), remaining_ms);
	snprintf(head, sizeof(head), "held %s", delay);
	if (cause != NULL && cause[0] != '\0') {
		text = malloc(strlen(cause) + sizeof(ELLIPSIS));
		if (text != NULL) {
			strcpy(text, cause);
			progress_clean(text);
		}
	}
	if (text != NULL && width > 0) {
		size_t room = (size_t)width - 1, fixed = progress_columns(head);
		size_t sep = progress_columns(" " EM_DASH " ");

		/* The cause gives way first, as a retry line's error does. */
		if (fixed + sep + 2 > room) {
			text[0] = '\0';
		} else if (progress_columns(text) > room - fixed - sep) {
			progress_cut(text, room - fixed - sep - 1);
			strcat(text, ELLIPSIS);
		}
	}
	if (text != NULL && text[0] != '\0')
		snprintf(buf, size, "%s " EM_DASH " %s", head, text);
	else
		snprintf(buf, size, "%s", head);
	free(text);
	trim_partial(buf);
	if (width > 0)
		progress_cut(buf, (size_t)width - 1);
}

void progress_park_line(char *buf, size_t size, uint64_t remaining_ms, const char *reset_local,
			int width)
{
	char left[32];

	if (size == 0)
		return;
	progress_delay_text(left, sizeof(left), remaining_ms);
	if (reset_local != NULL && reset_local[0] != '\0')
		snprintf(buf, size, "Usage limit: waiting %s for the reset at %s", left, reset_local);
	else
		snprintf(buf, size, "Usage limit: waiting %s for the reset", left);
	progress_clean(buf);
	if (width > 0)
		progress_cut(buf, (size_t)width - 1);
}

void progress_spinner_line(char *buf, size_t size, unsigned n)
{
	static const char *const frames[] = {
		"\xe2\xa0\x8b", "\xe2\xa0\x99", "\xe2\xa0\xb9", "\xe2\xa0\xb8", "\xe2\xa0\xbc",
		"\xe2\xa0\xb4", "\xe2\xa0\xa6", "\xe2\xa0\xa7", "\xe2\xa0\x87", "\xe2\xa0\x8f",
	};

	snprintf(buf, size, "%s Waiting for the model" ELLIPSIS,
		 frames[n % (sizeof(frames) / sizeof(frames[0]))]);
}

void progress_failed_line(char *buf, size_t size, int attempts, const char *error)
{
	snprintf(buf, size, "Retry failed after %d attempt%s: %s", attempts, attempts == 1 ? "" : "s",
		 error != NULL ? error : "Unknown error");
	progress_clean(buf);
}

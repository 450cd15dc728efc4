/* progress — the text retryctl shows while a prompt runs.
 *
 * Pure: numbers in, text out, so the wording is tested without a terminal. */
#ifndef RETRYCTL_PROGRESS_H
#define RETRYCTL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whole seconds to show for a wait of ms: rounded up, so a pending wait never
 * reads "0s" before it is over. */
int progress_seconds(uint64_t ms);
/* The live line on a terminal: "Retrying (1/3) in 2s… (Ctrl-C to cancel)". */
void progress_live_line(char *buf, size_t size, int attempt, int max_attempts, uint64_t remaining_ms);
/* The one line per retry when stderr is not a terminal:
 * "Retrying (1/3) in 2s… (503 Service Unavailable)"; error may be NULL. */
void progress_plain_line(char *buf, size_t size, int attempt, int max_attempts, uint64_t delay_ms,
			 const char *error);
/* "Retry failed after 3 attempts: <error>" (1 attempt: singular). */
void progress_failed_line(char *buf, size_t size, int attempts, const char *error);

#endif

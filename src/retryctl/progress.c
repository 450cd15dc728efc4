#include "retryctl/progress.h"

#include <stdio.h>

int progress_seconds(uint64_t ms)
{
	uint64_t s = ms / 1000 + (ms % 1000 != 0);

	return s > 999999 ? 999999 : (int)s;
}

void progress_live_line(char *buf, size_t size, int attempt, int max_attempts, uint64_t remaining_ms)
{
	snprintf(buf, size, "Retrying (%d/%d) in %ds\u2026 (Ctrl-C to cancel)", attempt, max_attempts,
		 progress_seconds(remaining_ms));
}

void progress_plain_line(char *buf, size_t size, int attempt, int max_attempts, uint64_t delay_ms,
			 const char *error)
{
	if (error != NULL && error[0] != '\0')
		snprintf(buf, size, "Retrying (%d/%d) in %ds\u2026 (%s)", attempt, max_attempts,
			 progress_seconds(delay_ms), error);
	else
		snprintf(buf, size, "Retrying (%d/%d) in %ds\u2026", attempt, max_attempts,
			 progress_seconds(delay_ms));
}

void progress_failed_line(char *buf, size_t size, int attempts, const char *error)
{
	snprintf(buf, size, "Retry failed after %d attempt%s: %s", attempts, attempts == 1 ? "" : "s",
		 error != NULL ? error : "Unknown error");
}

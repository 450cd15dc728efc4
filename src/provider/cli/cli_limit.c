#include "provider/cli/cli_limit.h"

#include <ctype.h>
#include <string.h>

#include "base/resettime.h"

/* Lowercase; a spent plan's words, not a per-minute rate limit's. */
static const char *const limit_words[] = {
	"hit your limit", "hit your usage limit", "usage limit reached",
	"usage limit has been reached", "reached your usage limit", "exhausted your daily quota",
};

/* Gemini's quota sentence names its window: only a day's is a spent plan. */
static bool daily_quota(const char *lower)
{
	return strstr(lower, "quota exceeded") != NULL &&
	       (strstr(lower, "per day") != NULL || strstr(lower, "perday") != NULL);
}

bool cli_limit_read(const char *text, int64_t now_ms, int64_t *wait_ms)
{
	char lower[1024];
	size_t i, n = text ? strlen(text) : 0;
	bool limit = false;
	int64_t at;

	if (n >= sizeof(lower))
		n = sizeof(lower) - 1;
	for (i = 0; i < n; i++)
		lower[i] = (char)tolower((unsigned char)text[i]);
	lower[n] = '\0';
	for (i = 0; i < sizeof(limit_words) / sizeof(limit_words[0]) && !limit; i++)
		limit = strstr(lower, limit_words[i]) != NULL;
	if (!limit && !daily_quota(lower))
		return false;
	*wait_ms = -1;
	if (resettime_parse(text, strlen(text), now_ms, NULL, &at))
		*wait_ms = at > now_ms ? at - now_ms : 0;
	return true;
}

/* cli_limit — an agent CLI's usage-limit terminal state: the wordings the
 * CLIs print when a plan's window or daily quota is spent (Claude Code's
 * "You've hit your limit · resets 11pm (America/Anchorage)" and "Claude AI
 * usage limit reached|<epoch>", Codex's "You've hit your usage limit ...
 * try again at 3:45 PM", Gemini CLI's daily "Quota exceeded ... per day"),
 * and when it comes back (base/resettime, in the local zone unless the
 * line names one). The provider hands both over as typed facts, as an HTTP
 * provider hands over a usage-limit body and its reset. */
#ifndef RETRYD_CLI_LIMIT_H
#define RETRYD_CLI_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

/* text: borrowed (NUL-terminated), the CLI's terminal error; now_ms: epoch
 * ms. True when it is a usage-limit line, with *wait_ms the time until its
 * reset (0 when that has passed) or -1 when it states none. */
bool cli_limit_read(const char *text, int64_t now_ms, int64_t *wait_ms);

#endif

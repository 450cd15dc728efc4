/* provider_cli — agent CLIs (Claude Code, Codex, Gemini CLI, pi, or any
 * "exec" profile) as providers: one child process per attempt.
 *
 * Each attempt is a shared/child: spawned from argv (never a shell) in its
 * own process group, with the daemon's cwd and environment plus the
 * profile's env; stdin is /dev/null, or the prompt when promptVia is
 * "stdin". Its stdout is framed into lines (maxLineBytes) and read through
 * cli_parser as it streams: text and tool calls go to the sink as they come,
 * the session id is kept (the newest), and once the process has exited and
 * both pipes have reached EOF the last terminal line decides the outcome —
 * none means "agent exited without a result (exit N): <last stderr line>".
 *
 * Continuing in the same context: a retry (attempt_ctx.attempt > 0) runs
 * resumeArgv with the kept session id and retry.continuationPrompt (plus the
 * text of any steering delivered during the backoff); a later prompt of the
 * same conversation resumes it with its own text. A failed attempt with no
 * session id to resume answers provider_result.next CANNOT, so it is
 * never replayed blindly.
 *
 * Time: attempt_ctx.idle_timeout_ms without any output (stdout or stderr)
 * and the profile's timeoutMs (wall clock) end the attempt as a retryable
 * failure: SIGTERM to the whole group, SIGKILL killGraceMs (2 s) later —
 * unless the terminal line came already and nothing after it (a CLI that
 * answered but hangs on its way out keeps its answer).
 * abort() sends SIGKILL to the group at once and reports nothing more. A
 * process that exited while something else holds its pipes gets killGraceMs
 * to let go, then its group is killed and the pipes closed. Handles are
 * closed asynchronously; an attempt's memory is freed after its last close
 * callback, also when it was aborted (so the loop ends only after the child
 * is reaped: no zombies).
 *
 * Secrets: the values of the profile's env, and of inherited variables whose
 * names say KEY, TOKEN, SECRET or PASSWORD (8 characters or more), are
 * replaced by "***" in every text, event and log line this module emits. */
#ifndef RETRYD_PROVIDER_CLI_H
#define RETRYD_PROVIDER_CLI_H

#include <stddef.h>
#include <uv.h>

#include "base/clock.h"
#include "provider/provider.h"

/* cfg: providers.NAME (borrowed), an exec profile. loop, clock: borrowed,
 * must outlive the provider. Returns NULL with err naming the key. */
struct provider *provider_cli_new(uv_loop_t *loop, struct clock *clock, const char *name,
				  const json_t *cfg, char *err, size_t errlen);

#endif

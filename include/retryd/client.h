/* retryd client library — start a retryd daemon and drive it from C, on your
 * libuv loop.
 *
 *   struct retryd_client_options o = { .args = args, .on_event = on_event };
 *   struct retryd_client *c = retryd_client_new(loop, &o);
 *   if (c == NULL || retryd_client_start(c) != 0) ...
 *   retryd_client_get_state(c, on_state, NULL);    // answered through on_state
 *   uv_run(loop, UV_RUN_DEFAULT);
 *
 * The daemon speaks the pi RPC protocol (protocol/README.md): one JSON object
 * per line on its stdin and stdout. The client frames the lines, gives every
 * command an id ("req_<n>" unless it has one), matches each response to its
 * command by id (in whatever order responses come), delivers events through
 * callbacks and reports the daemon's exit.
 *
 * Threading: one loop, one thread. Call every function on the loop's thread;
 * every callback runs from that loop. Callbacks may call any function here,
 * retryd_client_close() included.
 *
 * Errors are 0 or a negative libuv error code (uv_strerror() names it), or
 * RETRYD_EREFUSED. Functions that return a pointer return NULL on failure.
 *
 * Ownership is given per function: "borrowed" (valid for the call, or as
 * said), "new reference" / "new string" (the caller releases it: json_decref,
 * free), "takes ownership" (the function releases it, also on failure).
 *
 * Signals: the daemon is started in its own process group, so a terminal's
 * Ctrl-C reaches your program only. retryd_client_start() sets SIGPIPE to
 * SIG_IGN when it is at its default action (a write to a daemon that died
 * would otherwise kill the program); a handler of yours is left alone. */
#ifndef RETRYD_CLIENT_H
#define RETRYD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(RETRYD_CLIENT_STATIC)
#define RETRYD_API __attribute__((visibility("default")))
#else
#define RETRYD_API
#endif

#define RETRYD_CLIENT_VERSION "0.1.0"

/* The daemon answered the command with success:false (the error says why). */
#define RETRYD_EREFUSED (-30001)

/* Defaults for the options left at 0. */
#define RETRYD_CLIENT_DEFAULT_MAX_LINE   (64u * 1024u * 1024u)
#define RETRYD_CLIENT_DEFAULT_READY_MS   10000u
#define RETRYD_CLIENT_DEFAULT_KILL_MS    2000u

struct retryd_client;

/* What became of one command. Everything in it is borrowed for the duration
 * of the callback (json_incref what you keep). */
struct retryd_result {
	/* 0: the daemon answered (see success). < 0: no answer will come:
	 * UV_EOF the daemon exited first, UV_ETIMEDOUT request_timeout_ms passed,
	 * UV_ECANCELED the client was closed. */
	int status;
	bool success;         /* the response's "success"; false when status < 0 */
	const char *id;       /* the command's id */
	const char *command;  /* the command's type */
	json_t *response;     /* the whole response line; NULL when status < 0 */
	json_t *data;         /* response.data, or NULL */
	/* NULL on success; else response.error, or why no response came, e.g.
	 * "retryd was killed by signal 9 (SIGKILL) before answering get_state" */
	const char *error;
};

/* A command's outcome. Called exactly once per command that was sent
 * (retryd_client_send returned 0), never from inside the sending call. */
typedef void (*retryd_response_cb)(struct retryd_client *client,
				   const struct retryd_result *result, void *ctx);
/* Every frame that is not the ready line and not a response to a pending
 * command: events (agent_start, message_update, auto_retry_start, ...) and
 * responses that match nothing (no id, unknown id, answered after a timeout;
 * type "response"). type and event: borrowed for the call. */
typedef void (*retryd_event_cb)(struct retryd_client *client, const char *type,
				json_t *event, void *ctx);
/* Once per start: status 0 when {"type":"ready"} arrived; UV_ETIMEDOUT when it
 * did not come within ready_timeout_ms (the daemon is then sent SIGTERM);
 * UV_EOF when the daemon exited first (on_exit follows). error: borrowed,
 * NULL when status is 0. */
typedef void (*retryd_ready_cb)(struct retryd_client *client, int status,
				const char *error, void *ctx);
/* The daemon is gone: it exited and its stdout was read to the end. Pending
 * commands have already been failed (UV_EOF). term_signal is 0 unless a signal
 * ended it. Called once per start, also while closing. */
typedef void (*retryd_exit_cb)(struct retryd_client *client, int64_t exit_status,
			       int term_signal, void *ctx);
/* Each stdout line as received, before it is parsed (no LF, no trailing CR).
 * line: borrowed, not NUL-terminated. For tracing, or to pass lines on. */
typedef void (*retryd_line_cb)(struct retryd_client *client, const char *line,
			       size_t len, void *ctx);
/* A problem that does not stop the client: a stdout line that is not a JSON
 * object (UV_EPROTO), a line over max_line_bytes (UV_E2BIG; it is discarded,
 * and a response lost this way fails only by request_timeout_ms).
 * message: borrowed. */
typedef void (*retryd_error_cb)(struct retryd_client *client, int err,
				const char *message, void *ctx);
typedef void (*retryd_close_cb)(struct retryd_client *client, void *ctx);

struct retryd_client_options {
	/* The daemon: a path, or a bare name looked up on PATH. NULL: see
	 * retryd_client_find_daemon(). */
	const char *path;
	/* Arguments after the program name, NULL-terminated (NULL: none), e.g.
	 * { "--no-session", "--sim-plan", "[{\"text\":\"hi\"}]", NULL }. */
	const char *const *args;
	/* "NAME=VALUE" entries laid over this process's environment, and
	 * "NAME" entries removed from it; NULL-terminated (NULL: inherit as is). */
	const char *const *env;
	const char *cwd;              /* NULL: this process's */
	bool ignore_stderr;           /* false: the daemon's stderr is ours */
	size_t max_line_bytes;        /* longest stdout line kept; 0: 64 MiB */
	uint64_t ready_timeout_ms;    /* 0: 10000 */
	uint64_t request_timeout_ms;  /* per command; 0: none */
	uint64_t kill_timeout_ms;     /* close: SIGTERM, then SIGKILL after; 0: 2000 */
	retryd_event_cb on_event;     /* each may be NULL */
	retryd_ready_cb on_ready;
	retryd_exit_cb on_exit;
	retryd_line_cb on_line;
	retryd_error_cb on_error;
	void *ctx;                    /* passed to the callbacks above */
};

/* ---- lifecycle ---------------------------------------------------------- */

/* A client on loop (borrowed; it must outlive the client). opts is copied
 * (strings included), so it may be freed after the call. Nothing is started
 * yet. NULL when out of memory. */
RETRYD_API struct retryd_client *retryd_client_new(uv_loop_t *loop,
						 const struct retryd_client_options *opts);
/* Spawns the daemon. 0, or: UV_ENOENT the daemon was not found, another
 * uv_spawn error, UV_EALREADY started before. retryd_client_last_error()
 * then says what happened. Commands may be sent right away; the daemon
 * reads them once it is ready. */
RETRYD_API int retryd_client_start(struct retryd_client *client);
/* Closes the daemon's stdin: the daemon finishes what is in flight, then
 * exits 0 (on_exit). Commands can no longer be sent (UV_EPIPE). */
RETRYD_API int retryd_client_end_input(struct retryd_client *client);
/* Sends signum to the daemon (to its process group, which is the daemon's
 * own). 0, UV_ESRCH when it is not running. */
RETRYD_API int retryd_client_kill(struct retryd_client *client, int signum);
/* Stops everything and frees the client: pending commands and a waiting
 * retryd_client_prompt_and_wait fail with UV_ECANCELED, a running daemon is
 * sent SIGTERM (SIGKILL after kill_timeout_ms) and waited for (on_exit is
 * still called), every handle is closed, then done(client, ctx) is called
 * (done may be NULL) and the client is freed. Keep running the loop until
 * then. No callback but on_exit and done follows this call. */
RETRYD_API void retryd_client_close(struct retryd_client *client, retryd_close_cb done,
				    void *ctx);

/* Borrowed: the reason the last call failed, or "" (valid until the next
 * call on this client). */
RETRYD_API const char *retryd_client_last_error(const struct retryd_client *client);
RETRYD_API bool retryd_client_is_ready(const struct retryd_client *client);
/* Running: started, not yet reported by on_exit. */
RETRYD_API bool retryd_client_is_running(const struct retryd_client *client);
/* The daemon's process id, 0 when it is not running. */
RETRYD_API int retryd_client_pid(const struct retryd_client *client);
RETRYD_API uv_loop_t *retryd_client_loop(const struct retryd_client *client);
RETRYD_API void *retryd_client_ctx(const struct retryd_client *client);

/* ---- commands ----------------------------------------------------------- */

/* Sends any command. command: takes ownership (a JSON object with a string
 * "type"; an "id" string is kept, else "req_<n>" is set). cb (may be NULL)
 * gets the outcome later. 0, or: UV_EINVAL not an object with a string type
 * or an id that is not a string, UV_EEXIST the id is pending already,
 * UV_EPIPE the daemon is not running or its stdin was closed, UV_ENOMEM. */
RETRYD_API int retryd_client_send(struct retryd_client *client, json_t *command,
				  retryd_response_cb cb, void *ctx);

struct retryd_prompt_options {
	const char *streaming_behavior; /* NULL, "steer" or "followUp"; borrowed */
	json_t *images;                 /* NULL or an array of ImageContent; borrowed */
	json_t *retry;                  /* NULL or retry settings for this prompt; borrowed */
};

/* The typed commands below take borrowed arguments, build the command and
 * send it as retryd_client_send does (same return codes). */

/* opts may be NULL. The response comes when the prompt is accepted; the run's
 * events follow through on_event, ending with agent_end after the whole
 * retry chain. */
RETRYD_API int retryd_client_prompt(struct retryd_client *client, const char *message,
				    const struct retryd_prompt_options *opts,
				    retryd_response_cb cb, void *ctx);
RETRYD_API int retryd_client_steer(struct retryd_client *client, const char *message,
				   retryd_response_cb cb, void *ctx);
RETRYD_API int retryd_client_follow_up(struct retryd_client *client, const char *message,
				       retryd_response_cb cb, void *ctx);
/* Cancels a pending backoff or the running attempt and drops the queues;
 * data: {"discardedMessages":[...]}. */
RETRYD_API int retryd_client_abort(struct retryd_client *client, retryd_response_cb cb,
				   void *ctx);
/* Cancels a pending backoff (auto_retry_end "Retry cancelled"); no effect
 * otherwise. */
RETRYD_API int retryd_client_abort_retry(struct retryd_client *client,
					 retryd_response_cb cb, void *ctx);
RETRYD_API int retryd_client_set_auto_retry(struct retryd_client *client, bool enabled,
					    retryd_response_cb cb, void *ctx);
RETRYD_API int retryd_client_get_state(struct retryd_client *client, retryd_response_cb cb,
				       void *ctx);
RETRYD_API int retryd_client_get_messages(struct retryd_client *client,
					  retryd_response_cb cb, void *ctx);
RETRYD_API int retryd_client_get_last_assistant_text(struct retryd_client *client,
						     retryd_response_cb cb, void *ctx);
RETRYD_API int retryd_client_get_retry_policy(struct retryd_client *client,
					      retryd_response_cb cb, void *ctx);
/* policy: borrowed, an object of retry settings (without the "retry."
 * prefix). persist: also write them to the daemon's settings file. */
RETRYD_API int retryd_client_set_retry_policy(struct retryd_client *client, json_t *policy,
					      bool persist, retryd_response_cb cb, void *ctx);
RETRYD_API int retryd_client_new_session(struct retryd_client *client,
					 retryd_response_cb cb, void *ctx);
RETRYD_API int retryd_client_set_model(struct retryd_client *client, const char *provider,
				       const char *model_id, retryd_response_cb cb, void *ctx);
RETRYD_API int retryd_client_get_available_models(struct retryd_client *client,
						  retryd_response_cb cb, void *ctx);

/* ---- blocking convenience ---------------------------------------------- */

/* How one prompt's run ended. */
struct retryd_run_result {
	/* true: the final assistant message ended well (stopReason stop, length
	 * or toolUse) */
	bool answered;
	/* the run was cancelled: the final message was aborted, or the retry
	 * chain ended with "Retry cancelled" */
	bool cancelled;
	int retries;        /* retries made in the last chain (auto_retry attempt), 0: none */
	char *text;         /* new string: the final assistant message's text, or NULL */
	char *stop_reason;  /* new string: its stopReason, or NULL */
	/* new string, or NULL when answered: the chain's finalError, else the
	 * final message's errorMessage, else why the run did not finish */
	char *error;
	json_t *agent_end;  /* new reference: the agent_end event, or NULL */
};

/* Sends a prompt and runs the client's loop (uv_run, UV_RUN_ONCE at a time)
 * until that prompt's run is over: its agent_end, which retryd sends once,
 * after the whole retry chain. Events still reach on_event meanwhile, and
 * other handles of the loop keep working. opts may be NULL; timeout_ms 0
 * waits without limit. Not from inside a callback of this loop (libuv's
 * uv_run is not reentrant); one wait per client at a time.
 *
 * Returns 0 when the run ended (out->answered says how), else: RETRYD_EREFUSED
 * the prompt was refused (out->error has the daemon's reason), UV_EOF the
 * daemon exited first, UV_ETIMEDOUT (the run goes on in the daemon; send
 * abort to stop it), UV_ECANCELED the client was closed, UV_EBUSY a wait is
 * already running, or a send error. out is always filled: release it with
 * retryd_run_result_release(). */
RETRYD_API int retryd_client_prompt_and_wait(struct retryd_client *client, const char *message,
					     const struct retryd_prompt_options *opts,
					     uint64_t timeout_ms, struct retryd_run_result *out);
RETRYD_API void retryd_run_result_release(struct retryd_run_result *result);

/* ---- helpers ------------------------------------------------------------ */

/* New string (free()): the daemon to start, or NULL when none is found.
 * path, when not NULL, is taken as given if it has a '/', else looked up on
 * PATH. Without it: $RETRYD (the same way), then "retryd" next to this
 * program's executable, then "retryd" on PATH. */
RETRYD_API char *retryd_client_find_daemon(const char *path);
/* New string (free()): the text blocks of a pi message joined, "" when it has
 * none; NULL when message is not a message object. message: borrowed. */
RETRYD_API char *retryd_message_text(const json_t *message);
/* Borrowed, static: a description of an error code of this library. */
RETRYD_API const char *retryd_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif

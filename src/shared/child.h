/* child — one child process on a libuv loop, for the agent CLIs the daemon
 * runs per attempt and for the daemon that libretryd-client runs.
 *
 * The program is spawned from argv (never through a shell), detached into a
 * process group of its own (so a terminal's Ctrl-C is not its, and a kill
 * reaches what it spawned too). Its stdin, stdout and stderr are each a pipe
 * to us, ignored (/dev/null) or our own descriptor; the child's ends of the
 * pipes are closed in this process right after the spawn, so EOF comes when
 * the child's group lets go of them.
 *
 * The end is reported once, through on_done, after both the exit (the
 * process is reaped) and EOF on every pipe read from — or, when something
 * else in the group still holds a pipe drain_ms after the exit, after the
 * rest of the group was sent SIGKILL (exit->drained). Whatever is left in
 * the group at the end is sent SIGTERM then, and SIGKILL at the close. The
 * drain clock runs only while output is read: a paused reader is the
 * caller's doing, and the pipe keeps what the child wrote.
 *
 * Every handle is owned here, and the uv_process_t is closed only after the
 * child was reaped (never a zombie); retryd_child_close() ends it all
 * asynchronously and frees the child after its last close callback. */
#ifndef RETRYD_SHARED_CHILD_H
#define RETRYD_SHARED_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct retryd_child;

enum retryd_child_stdio {
	RETRYD_CHILD_IGNORE,  /* /dev/null */
	RETRYD_CHILD_PIPE,    /* a pipe to this process */
	RETRYD_CHILD_INHERIT, /* this process's own descriptor of that number */
};

struct retryd_child_exit {
	int64_t status;       /* the exit status; 0 when a signal ended it */
	int term_signal;      /* the signal that ended it, or 0 */
	bool forced;          /* the grace after retryd_child_terminate ran out: SIGKILL went */
	bool drained;         /* a pipe stayed open drain_ms after the exit: the group
			       * was sent SIGKILL and its EOF not awaited */
};

/* Output on fd 1 or 2. data: borrowed for the call; len > 0. */
typedef void (*retryd_child_data_cb)(struct retryd_child *child, int fd, const char *data,
				     size_t len, void *ctx);
/* fd 1 or 2 ended: status UV_EOF, or a read error (nothing more is read from
 * it). fd 0: a write failed with status. */
typedef void (*retryd_child_end_cb)(struct retryd_child *child, int fd, int status, void *ctx);
/* The child exited and its pipes ended (see above). exit: borrowed. Once;
 * never after retryd_child_close(). */
typedef void (*retryd_child_done_cb)(struct retryd_child *child,
				     const struct retryd_child_exit *exit, void *ctx);
/* Every handle is closed; the child is freed when this returns. exit:
 * borrowed, how the child ended (it was reaped before this). */
typedef void (*retryd_child_close_cb)(struct retryd_child *child,
				      const struct retryd_child_exit *exit, void *ctx);

struct retryd_child_options {
	const char *file;             /* borrowed: the program; NULL: argv[0] */
	char **argv;                  /* borrowed: NULL-terminated, argv[0] its name */
	char **env;                   /* borrowed: "NAME=value", NULL-terminated; NULL: ours */
	const char *cwd;              /* borrowed; NULL: ours */
	enum retryd_child_stdio stdio[3];
	uint64_t drain_ms;            /* after the exit, how long a pipe may stay open
				       * (0: the next loop turn) */
	retryd_child_data_cb on_data; /* each may be NULL */
	retryd_child_end_cb on_end;
	retryd_child_done_cb on_done;
	void *ctx;                    /* passed to the callbacks above */
	bool own_fds_only;            /* every other descriptor of this process is
				       * marked close-on-exec first: the child gets
				       * its three and nothing of ours (a library a
				       * host loads leaves this false: the host's
				       * descriptors are the host's business) */
};

/* Spawns o->argv on loop (borrowed; it must outlive the child); o and what
 * it points to are borrowed for the call. Returns 0 with *out set, or a
 * negative libuv error code with *out NULL: what was set up is then closed
 * and freed on the loop's next turns, with no callback. */
int retryd_child_spawn(uv_loop_t *loop, const struct retryd_child_options *o,
		       struct retryd_child **out);

/* The process id (also after the exit, for logs). */
int retryd_child_pid(const struct retryd_child *child);
/* Whether the process has exited (been reaped). */
bool retryd_child_exited(const struct retryd_child *child);

/* Queues buf[0..len) for the child's stdin; takes ownership of buf (freed
 * once written, or at once on failure). 0, UV_EPIPE when stdin is not a pipe
 * or was ended, or another libuv error code. */
int retryd_child_write(struct retryd_child *child, char *buf, size_t len);
/* EOF on the child's stdin once the queued writes are out. 0 or UV_EPIPE. */
int retryd_child_end_input(struct retryd_child *child);

/* Stops (paused) or resumes reading stdout, and the drain clock with it;
 * stderr is read on. */
void retryd_child_pause(struct retryd_child *child, bool paused);

/* Sends signum to the child's process group. 0, or a negative errno
 * (UV_ESRCH when the group is gone). */
int retryd_child_kill(struct retryd_child *child, int signum);
/* SIGTERM to the group, then SIGKILL grace_ms later unless the child is
 * done by then; grace_ms 0 sends SIGKILL at once. A second call while one is
 * under way does nothing. */
void retryd_child_terminate(struct retryd_child *child, uint64_t grace_ms);

/* Stops every callback but done (given here; may be NULL) and closes the
 * pipes now; the process handle is closed once the child is reaped (a
 * retryd_child_terminate under way goes on; nothing else is sent: kill the
 * child first if it must end), then done(child, exit, ctx) is called and the
 * child freed. Once per child. */
void retryd_child_close(struct retryd_child *child, retryd_child_close_cb done, void *ctx);

/* Borrowed, static: what a libuv error code this module returned means. */
const char *retryd_child_strerror(int err);

#endif

#include "shared/child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define READ_CHUNK (64u * 1024u)

struct retryd_child {
	uv_loop_t *loop;
	uv_process_t proc;
	uv_pipe_t pipe[3];
	uv_timer_t kill_timer, drain_timer;
	uv_shutdown_t shutdown_req;
	int handles;          /* initialized and not yet closed */
	bool open[3];         /* pipe[i] initialized and not yet closing */
	bool reading[3];      /* pipe[1], pipe[2]: read from, not yet ended */
	bool input_ended;     /* no more writes */
	bool proc_init;       /* proc was handed to uv_spawn (and needs closing) */
	bool spawned, exited, done, closing, paused, terminating;
	struct retryd_child_exit exit;
	uint64_t drain_ms;
	retryd_child_data_cb on_data;
	retryd_child_end_cb on_end;
	retryd_child_done_cb on_done;
	void *ctx;
	retryd_child_close_cb close_cb;
	void *close_ctx;
	/* One buffer for both pipes: each read is delivered before the next. */
	char buf[READ_CHUNK];
};

struct write_req {
	uv_write_t req;
	char *buf; /* owned */
};

/* Handles. */

static void on_closed(uv_handle_t *h)
{
	struct retryd_child *c = h->data;
	retryd_child_close_cb cb;

	if (--c->handles > 0 || !c->closing)
		return;
	cb = c->close_cb;
	if (cb != NULL)
		cb(c, &c->exit, c->close_ctx);
	free(c);
}

static void close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, on_closed);
}

static void close_pipe(struct retryd_child *c, int fd)
{
	if (!c->open[fd])
		return;
	c->open[fd] = false;
	c->reading[fd] = false;
	close_handle((uv_handle_t *)&c->pipe[fd]);
}

/* The process handle waits for the reaping (closing it before would leave
 * a zombie), and the SIGKILL timer with it. */
static void close_proc(struct retryd_child *c)
{
	uv_timer_stop(&c->kill_timer);
	close_handle((uv_handle_t *)&c->kill_timer);
	if (c->proc_init)
		close_handle((uv_handle_t *)&c->proc);
}

/* Whether the group id still names the child's group: the leader is not
 * yet reaped (its pid, so the group id, is not free), or a pipe is still
 * held open by someone, a member of the group that outlived the leader
 * (an id is not reused while any process of the group lives). After the
 * reaping with both pipes ended, the id may already be another group's. */
static bool group_held(const struct retryd_child *c)
{
	return !c->exited || c->reading[1] || c->reading[2];
}

static void close_all(struct retryd_child *c)
{
	/* What the child left in its group (a `cmd &` of its script) ends
	 * with it: TERM went at the end, KILL now, but only while the id is
	 * known to be the group's still; a close long after the reaping
	 * with the pipes ended could reach a group that took the id over. */
	if (c->exited && group_held(c))
		retryd_child_kill(c, SIGKILL);
	c->closing = true;
	c->input_ended = true;
	uv_timer_stop(&c->drain_timer);
	close_handle((uv_handle_t *)&c->drain_timer);
	for (int fd = 0; fd < 3; fd++)
		close_pipe(c, fd);
	if (c->exited || !c->spawned)
		close_proc(c);
}

/* The end. */

static void maybe_done(struct retryd_child *c)
{
	if (c->done || c->closing || !c->exited || c->reading[1] || c->reading[2])
		return;
	c->done = true;
	uv_timer_stop(&c->kill_timer);
	uv_timer_stop(&c->drain_timer);
	c->input_ended = true;
	close_pipe(c, 0);
	retryd_child_kill(c, SIGTERM);
	if (c->on_done != NULL)
		c->on_done(c, &c->exit, c->ctx);
}

static void on_drain_timer(uv_timer_t *t)
{
	struct retryd_child *c = t->data;

	/* Exited, but something else in its group holds a pipe. */
	retryd_child_kill(c, SIGKILL);
	c->exit.drained = true;
	for (int fd = 1; fd < 3; fd++) {
		if (c->reading[fd]) {
			uv_read_stop((uv_stream_t *)&c->pipe[fd]);
			c->reading[fd] = false;
		}
	}
	maybe_done(c);
}

static void start_drain(struct retryd_child *c)
{
	if (c->exited && !c->done && !c->closing && !c->paused && (c->reading[1] || c->reading[2]))
		uv_timer_start(&c->drain_timer, on_drain_timer, c->drain_ms, 0);
}

static void on_process_exit(uv_process_t *proc, int64_t status, int term_signal)
{
	struct retryd_child *c = proc->data;

	c->exited = true;
	c->exit.status = status;
	c->exit.term_signal = term_signal;
	if (c->closing) {
		close_proc(c);
		return;
	}
	start_drain(c);
	maybe_done(c);
}

static void on_kill_timer(uv_timer_t *t)
{
	struct retryd_child *c = t->data;

	c->exit.forced = true;
	retryd_child_kill(c, SIGKILL);
}

/* Reading. */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *out)
{
	struct retryd_child *c = h->data;

	(void)suggested;
	*out = uv_buf_init(c->buf, sizeof(c->buf));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct retryd_child *c = s->data;
	int fd = s == (uv_stream_t *)&c->pipe[1] ? 1 : 2;

	(void)b;
	if (c->closing || n == 0)
		return;
	if (n > 0) {
		if (c->on_data != NULL)
			c->on_data(c, fd, c->buf, (size_t)n, c->ctx);
		return;
	}
	uv_read_stop(s);
	c->reading[fd] = false;
	if (c->on_end != NULL)
		c->on_end(c, fd, (int)n, c->ctx);
	maybe_done(c);
}

/* Writing. */

static void on_written(uv_write_t *req, int status)
{
	struct write_req *w = (struct write_req *)req;
	struct retryd_child *c = req->data;

	free(w->buf);
	free(w);
	if (status == 0 || status == UV_ECANCELED || c->closing)
		return;
	if (c->on_end != NULL)
		c->on_end(c, 0, status, c->ctx);
}

int retryd_child_write(struct retryd_child *c, char *buf, size_t len)
{
	struct write_req *w;
	uv_buf_t b;
	int rc;

	if (c->closing || c->input_ended || !c->open[0]) {
		free(buf);
		return UV_EPIPE;
	}
	w = malloc(sizeof(*w));
	if (w == NULL) {
		free(buf);
		return UV_ENOMEM;
	}
	w->buf = buf;
	w->req.data = c;
	b = uv_buf_init(buf, (unsigned int)len);
	rc = uv_write(&w->req, (uv_stream_t *)&c->pipe[0], &b, 1, on_written);
	if (rc != 0) {
		free(buf);
		free(w);
	}
	return rc;
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct retryd_child *c = req->data;

	(void)status;
	close_pipe(c, 0);
}

int retryd_child_end_input(struct retryd_child *c)
{
	if (c->closing || !c->open[0])
		return UV_EPIPE;
	c->input_ended = true;
	if (c->shutdown_req.data == c)
		return 0; /* under way */
	c->shutdown_req.data = c;
	/* The shutdown waits for the queued writes; the close follows. */
	if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->pipe[0], on_shutdown) != 0)
		close_pipe(c, 0);
	return 0;
}

/* Spawning. */

static int init_pipe(struct retryd_child *c, int fd)
{
	int rc = uv_pipe_init(c->loop, &c->pipe[fd], 0);

	if (rc == 0) {
		c->pipe[fd].data = c;
		c->open[fd] = true;
		c->handles++;
	}
	return rc;
}

/* Marks every descriptor above 2 close-on-exec. Most are already (libuv's,
 * ours); this catches those a library made without the flag (curl's
 * wake-up socket pair, hiredis's socket before it is marked), so a child
 * never holds a socket or file of the daemon. */
static void cloexec_all(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long max;

	if (d != NULL) {
		while ((e = readdir(d)) != NULL) {
			char *end;
			long fd = strtol(e->d_name, &end, 10);
			int fl;

			if (*end != '\0' || end == e->d_name || fd <= 2 || fd == dirfd(d))
				continue;
			fl = fcntl((int)fd, F_GETFD);
			if (fl >= 0 && !(fl & FD_CLOEXEC))
				(void)fcntl((int)fd, F_SETFD, fl | FD_CLOEXEC);
		}
		closedir(d);
		return;
	}
	/* No /proc: every possible descriptor (bounded). */
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = 3; fd < max; fd++) {
		int fl = fcntl(fd, F_GETFD);

		if (fl >= 0 && !(fl & FD_CLOEXEC))
			(void)fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
	}
}

static void init_timer(struct retryd_child *c, uv_timer_t *t)
{
	uv_timer_init(c->loop, t);
	t->data = c;
	c->handles++;
}

int retryd_child_spawn(uv_loop_t *loop, const struct retryd_child_options *o,
		       struct retryd_child **out)
{
	struct retryd_child *c = calloc(1, sizeof(*c));
	uv_process_options_t po;
	uv_stdio_container_t stdio[3];
	int rc = 0;

	*out = NULL;
	if (c == NULL)
		return UV_ENOMEM;
	c->loop = loop;
	c->drain_ms = o->drain_ms;
	c->on_data = o->on_data;
	c->on_end = o->on_end;
	c->on_done = o->on_done;
	c->ctx = o->ctx;
	init_timer(c, &c->kill_timer);
	init_timer(c, &c->drain_timer);
	memset(&po, 0, sizeof(po));
	memset(stdio, 0, sizeof(stdio));
	for (int fd = 0; fd < 3; fd++) {
		switch (o->stdio[fd]) {
		case RETRYD_CHILD_PIPE:
			if (rc == 0)
				rc = init_pipe(c, fd);
			stdio[fd].flags = UV_CREATE_PIPE |
					  (fd == 0 ? UV_READABLE_PIPE : UV_WRITABLE_PIPE);
			stdio[fd].data.stream = (uv_stream_t *)&c->pipe[fd];
			break;
		case RETRYD_CHILD_INHERIT:
			stdio[fd].flags = UV_INHERIT_FD;
			stdio[fd].data.fd = fd;
			break;
		case RETRYD_CHILD_IGNORE:
			stdio[fd].flags = UV_IGNORE;
			break;
		}
	}
	c->input_ended = !c->open[0];
	if (rc != 0)
		goto fail;
	po.file = o->file != NULL ? o->file : o->argv[0];
	po.args = o->argv;
	po.env = o->env;
	po.cwd = o->cwd;
	po.stdio = stdio;
	po.stdio_count = 3;
	/* A group of its own: killed as one, and out of reach of a terminal's ^C. */
	po.flags = UV_PROCESS_DETACHED;
	po.exit_cb = on_process_exit;
	c->proc.data = c;
	if (o->own_fds_only)
		cloexec_all();
	rc = uv_spawn(loop, &c->proc, &po);
	/* The handle is initialized whether or not the spawn worked. */
	c->proc_init = true;
	c->handles++;
	if (rc != 0)
		goto fail;
	c->spawned = true;
	for (int fd = 1; fd < 3; fd++) {
		if (!c->open[fd])
			continue;
		rc = uv_read_start((uv_stream_t *)&c->pipe[fd], alloc_cb, on_read);
		if (rc != 0) {
			retryd_child_kill(c, SIGKILL);
			goto fail;
		}
		c->reading[fd] = true;
	}
	*out = c;
	return 0;
fail:
	close_all(c);
	return rc;
}

/* Control. */

int retryd_child_pid(const struct retryd_child *c)
{
	return c->spawned ? c->proc.pid : 0;
}

bool retryd_child_exited(const struct retryd_child *c)
{
	return c->exited;
}

void retryd_child_pause(struct retryd_child *c, bool paused)
{
	if (c->paused == paused || c->closing)
		return;
	c->paused = paused;
	if (paused) {
		uv_timer_stop(&c->drain_timer);
		if (c->reading[1])
			uv_read_stop((uv_stream_t *)&c->pipe[1]);
	} else {
		if (c->reading[1])
			uv_read_start((uv_stream_t *)&c->pipe[1], alloc_cb, on_read);
		start_drain(c);
	}
}

int retryd_child_kill(struct retryd_child *c, int signum)
{
	if (!c->spawned || c->proc.pid <= 0)
		return UV_ESRCH;
	if (kill(-c->proc.pid, signum) != 0)
		return -errno;
	return 0;
}

void retryd_child_terminate(struct retryd_child *c, uint64_t grace_ms)
{
	if (c->terminating || c->done || (c->closing && c->exited))
		return;
	c->terminating = true;
	if (grace_ms == 0) {
		retryd_child_kill(c, SIGKILL);
		return;
	}
	retryd_child_kill(c, SIGTERM);
	uv_timer_start(&c->kill_timer, on_kill_timer, grace_ms, 0);
}

void retryd_child_close(struct retryd_child *c, retryd_child_close_cb done, void *ctx)
{
	if (c->closing)
		return;
	c->close_cb = done;
	c->close_ctx = ctx;
	close_all(c);
}

const char *retryd_child_strerror(int err)
{
	return uv_strerror(err);
}

/* client — the daemon as a child process: spawn, stdin writes, stdout lines,
 * responses matched by id, events, exit, close. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/frame.h"
#include "client/pending.h"
#include "retryd/client.h"
#include "shared/child.h"
#include "shared/lines.h"

/* After the daemon exited, how long its stdout may stay open (a grandchild
 * holding it) before we stop waiting for EOF. */
#define EOF_GRACE_MS 1000u

extern char **environ;

struct retryd_client {
	uv_loop_t *loop;

	/* Copied options. */
	char *path;        /* as given, or NULL */
	char **args;       /* NULL-terminated */
	char **env;        /* NULL-terminated, or NULL */
	char *cwd;
	bool ignore_stderr;
	size_t max_line;
	uint64_t ready_ms, request_ms, kill_ms;
	retryd_event_cb on_event;
	retryd_ready_cb on_ready;
	retryd_exit_cb on_exit;
	retryd_line_cb on_line;
	retryd_error_cb on_error;
	void *ctx;

	struct retryd_child *child; /* the daemon, from the start until closed */
	uv_timer_t ready_timer, request_timer, wait_timer;
	int open_handles;  /* closing, the child counted as one */

	bool started;      /* the spawn succeeded */
	bool spawn_tried;  /* a spawn was attempted (a client starts once) */
	bool child_closing;
	bool in_closed;    /* no more writes */
	bool ready;
	bool ready_reported;
	bool gone;         /* on_exit reported */
	bool closing;
	bool handles_closing;
	int64_t exit_status;
	int term_signal;

	struct retryd_lines lines;
	struct retryd_pending pending;
	struct retryd_client_watch watch; /* watch.end NULL: none */
	uint64_t watch_gen;

	retryd_close_cb close_cb;
	void *close_ctx;
	char err[512];
};

/* ---- small helpers ------------------------------------------------------ */

static void set_error(struct retryd_client *c, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

static void set_error(struct retryd_client *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

static char **copy_list(const char *const *list)
{
	size_t n = 0;
	char **out;

	while (list != NULL && list[n] != NULL)
		n++;
	out = calloc(n + 1, sizeof(*out));
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		out[i] = strdup(list[i]);
		if (out[i] == NULL) {
			for (size_t j = 0; j < i; j++)
				free(out[j]);
			free(out);
			return NULL;
		}
	}
	return out;
}

static void free_list(char **list)
{
	for (size_t i = 0; list != NULL && list[i] != NULL; i++)
		free(list[i]);
	free(list);
}

static void report_error(struct retryd_client *c, int err, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

static void report_error(struct retryd_client *c, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (c->on_error == NULL || c->closing)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->on_error(c, err, msg, c->ctx);
}

static void report_ready(struct retryd_client *c, int status, const char *error)
{
	if (c->ready_reported || c->closing)
		return;
	c->ready_reported = true;
	uv_timer_stop(&c->ready_timer);
	if (c->on_ready)
		c->on_ready(c, status, error, c->ctx);
}

/* "exited with status 3" / "was killed by signal 9 (Killed)" */
static void describe_exit(const struct retryd_client *c, char *buf, size_t size)
{
	if (c->term_signal != 0)
		snprintf(buf, size, "was killed by signal %d (%s)", c->term_signal,
			 strsignal(c->term_signal));
	else
		snprintf(buf, size, "exited with status %" PRId64, c->exit_status);
}

/* Started, and its exit not yet seen. */
static bool alive(const struct retryd_client *c)
{
	return c->child != NULL && !retryd_child_exited(c->child);
}

/* ---- the watch (client/client.h) --------------------------------------- */

void retryd_client_unwatch(struct retryd_client *c, int status, const char *why)
{
	struct retryd_client_watch w = c->watch;

	if (w.end == NULL)
		return;
	c->watch.end = NULL;
	uv_timer_stop(&c->wait_timer);
	w.end(w.ctx, status, why);
}

static void watch_timeout_cb(uv_timer_t *t)
{
	struct retryd_client *c = t->data;

	retryd_client_unwatch(c, UV_ETIMEDOUT, c->watch.timeout_why);
}

uint64_t retryd_client_watch(struct retryd_client *c, const struct retryd_client_watch *watch,
			     uint64_t timeout_ms)
{
	if (c->watch.end != NULL)
		return 0;
	c->watch = *watch;
	if (timeout_ms > 0)
		uv_timer_start(&c->wait_timer, watch_timeout_cb, timeout_ms, 0);
	return ++c->watch_gen;
}

void *retryd_client_watching(const struct retryd_client *c, uint64_t gen)
{
	return c->watch.end != NULL && c->watch_gen == gen ? c->watch.ctx : NULL;
}

/* ---- pending commands ---------------------------------------------------- */

static void rearm_request_timer(struct retryd_client *c);

static void fail_entry(struct retryd_client *c, struct retryd_pending_entry *e, int status,
		       const char *why)
{
	struct retryd_result r = { 0 };

	r.status = status;
	r.id = e->id;
	r.command = e->command;
	r.error = why;
	if (e->cb)
		e->cb(c, &r, e->ctx);
	retryd_pending_entry_release(e);
}

static void fail_all_pending(struct retryd_client *c, int status)
{
	struct retryd_pending_entry e;
	char how[128], why[256];

	describe_exit(c, how, sizeof(how));
	while (retryd_pending_take_oldest(&c->pending, &e)) {
		if (status == UV_EOF)
			snprintf(why, sizeof(why), "retryd %s before answering %s", how, e.command);
		else
			snprintf(why, sizeof(why), "the client was closed before retryd answered %s",
				 e.command);
		fail_entry(c, &e, status, why);
	}
	uv_timer_stop(&c->request_timer);
}

static void request_timer_cb(uv_timer_t *t)
{
	struct retryd_client *c = t->data;
	struct retryd_pending_entry e;
	char why[256];

	while (!c->closing && retryd_pending_take_expired(&c->pending, uv_now(c->loop), &e)) {
		snprintf(why, sizeof(why), "no response to %s within %" PRIu64 " ms", e.command,
			 c->request_ms);
		fail_entry(c, &e, UV_ETIMEDOUT, why);
	}
	if (!c->closing)
		rearm_request_timer(c);
}

static void rearm_request_timer(struct retryd_client *c)
{
	uint64_t next = retryd_pending_earliest(&c->pending), now = uv_now(c->loop);

	if (next == 0)
		uv_timer_stop(&c->request_timer);
	else
		uv_timer_start(&c->request_timer, request_timer_cb, next > now ? next - now : 0, 0);
}

/* ---- handles and the end of the daemon ---------------------------------- */

/* The client is freed once every handle it closed (and the child) has called
 * back, and only after close_handles() started the end. */
static void unref_client(struct retryd_client *c)
{
	if (--c->open_handles > 0 || !c->handles_closing)
		return;
	if (c->close_cb)
		c->close_cb(c, c->close_ctx);
	retryd_lines_release(&c->lines);
	retryd_pending_release(&c->pending);
	free(c->path);
	free_list(c->args);
	free_list(c->env);
	free(c->cwd);
	free(c);
}

static void handle_closed_cb(uv_handle_t *h)
{
	unref_client(h->data);
}

static void close_handle(struct retryd_client *c, uv_handle_t *h)
{
	if (uv_is_closing(h))
		return;
	h->data = c;
	c->open_handles++;
	uv_close(h, handle_closed_cb);
}

static void gone(struct retryd_client *c, const struct retryd_child_exit *exit);

static void child_closed_cb(struct retryd_child *child, const struct retryd_child_exit *exit,
			    void *ctx)
{
	struct retryd_client *c = ctx;

	(void)child;
	c->child = NULL;
	gone(c, exit);
	unref_client(c);
}

static void close_child(struct retryd_client *c)
{
	if (c->child == NULL || c->child_closing)
		return;
	c->child_closing = true;
	c->open_handles++;
	retryd_child_close(c->child, child_closed_cb, c);
}

/* Every handle is closed; the client is freed in the last close callback.
 * One extra count guards against a free before all closes are started. */
static void close_handles(struct retryd_client *c)
{
	if (c->handles_closing)
		return;
	c->handles_closing = true;
	c->open_handles++;
	close_handle(c, (uv_handle_t *)&c->ready_timer);
	close_handle(c, (uv_handle_t *)&c->request_timer);
	close_handle(c, (uv_handle_t *)&c->wait_timer);
	close_child(c);
	unref_client(c);
}

/* Both the exit and stdout's EOF are in (or the client closed, and the exit
 * is): report, then (when closing) free. */
static void gone(struct retryd_client *c, const struct retryd_child_exit *exit)
{
	char how[128], msg[256];

	if (c->gone)
		return;
	c->gone = true;
	c->exit_status = exit->status;
	c->term_signal = exit->term_signal;
	uv_timer_stop(&c->ready_timer);
	c->in_closed = true;
	describe_exit(c, how, sizeof(how));
	if (!c->ready_reported) {
		snprintf(msg, sizeof(msg), "retryd %s before it was ready", how);
		report_ready(c, UV_EOF, msg);
	}
	fail_all_pending(c, UV_EOF);
	snprintf(msg, sizeof(msg), "retryd %s before the run ended", how);
	retryd_client_unwatch(c, UV_EOF, msg);
	if (c->on_exit)
		c->on_exit(c, c->exit_status, c->term_signal, c->ctx);
	if (c->closing)
		close_handles(c);
}

static void child_done_cb(struct retryd_child *child, const struct retryd_child_exit *exit,
			  void *ctx)
{
	(void)child;
	gone(ctx, exit);
}

static void ready_timer_cb(uv_timer_t *t)
{
	struct retryd_client *c = t->data;
	char msg[128];

	if (c->ready)
		return;
	snprintf(msg, sizeof(msg), "retryd wrote no ready line within %" PRIu64 " ms", c->ready_ms);
	report_ready(c, UV_ETIMEDOUT, msg);
	if (alive(c))
		retryd_child_kill(c->child, SIGTERM);
}

/* ---- reading ------------------------------------------------------------ */

static void deliver_event(struct retryd_client *c, const char *type, json_t *obj)
{
	if (c->watch.end != NULL && c->watch.event(c->watch.ctx, type, obj))
		retryd_client_unwatch(c, 0, NULL);
	if (c->on_event)
		c->on_event(c, type, obj, c->ctx);
}

static void deliver_response(struct retryd_client *c, struct retryd_pending_entry *e,
			     const struct retryd_frame *f, json_t *obj)
{
	struct retryd_result r = { 0 };

	r.status = 0;
	r.success = f->success;
	r.id = e->id;
	r.command = e->command;
	r.response = obj;
	r.data = f->data;
	if (!f->success)
		r.error = f->error != NULL ? f->error : "retryd answered success:false without an error";
	if (e->cb)
		e->cb(c, &r, e->ctx);
	retryd_pending_entry_release(e);
}

static bool line_cb(void *ctx, enum retryd_lines_kind kind, const char *line, size_t len)
{
	struct retryd_client *c = ctx;
	struct retryd_frame f;
	struct retryd_pending_entry e;
	char why[256];
	json_t *obj;

	if (c->closing)
		return false;
	if (kind == RETRYD_LINES_OVERSIZE) {
		report_error(c, UV_E2BIG, "retryd wrote a line longer than %zu bytes; it was discarded",
			     c->max_line);
		return !c->closing;
	}
	if (c->on_line) {
		c->on_line(c, line, len, c->ctx);
		if (c->closing)
			return false;
	}
	obj = retryd_frame_parse(line, len, &f, why, sizeof(why));
	if (obj == NULL) {
		report_error(c, UV_EPROTO, "retryd wrote a line that is %s: %.*s", why,
			     len > 80 ? 80 : (int)len, line);
		return !c->closing;
	}
	switch (f.kind) {
	case RETRYD_FRAME_READY:
		if (!c->ready) {
			c->ready = true;
			report_ready(c, 0, NULL);
		}
		break;
	case RETRYD_FRAME_RESPONSE:
		if (f.id != NULL && retryd_pending_take(&c->pending, f.id, &e)) {
			deliver_response(c, &e, &f, obj);
			if (!c->closing)
				rearm_request_timer(c);
			break;
		}
		deliver_event(c, f.type, obj);
		break;
	case RETRYD_FRAME_EVENT:
		deliver_event(c, f.type, obj);
		break;
	case RETRYD_FRAME_INVALID:
		break;
	}
	json_decref(obj);
	return !c->closing;
}

static void child_data_cb(struct retryd_child *child, int fd, const char *data, size_t len,
			  void *ctx)
{
	struct retryd_client *c = ctx;

	(void)child;
	(void)fd; /* stdout: stderr is not a pipe */
	if (retryd_lines_feed(&c->lines, data, len, line_cb, c) != 0)
		report_error(c, UV_ENOMEM, "out of memory for a line from retryd");
}

/* stdout ended (EOF or an error); the exit, if not in yet, follows. */
static void child_end_cb(struct retryd_child *child, int fd, int status, void *ctx)
{
	struct retryd_client *c = ctx;

	(void)child;
	if (fd != 1)
		return; /* a failed write: the daemon is gone, and its exit fails what is pending */
	if (status != UV_EOF)
		report_error(c, status, "reading retryd's stdout: %s", uv_strerror(status));
	if (!c->closing)
		retryd_lines_finish(&c->lines, line_cb, c);
}

/* ---- writing ------------------------------------------------------------ */

/* json_dumps, with one spare byte for the LF. */
static char *serialize(json_t *obj)
{
	size_t len = json_dumpb(obj, NULL, 0, JSON_COMPACT);
	char *buf;

	if (len == 0)
		return NULL;
	buf = malloc(len + 1);
	if (buf == NULL)
		return NULL;
	if (json_dumpb(obj, buf, len, JSON_COMPACT) != len) {
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

int retryd_client_send(struct retryd_client *c, json_t *command, retryd_response_cb cb,
		       void *ctx)
{
	char idbuf[32];
	const char *type, *id;
	json_t *idv;
	char *text = NULL;
	uint64_t deadline = 0;
	size_t len;
	int rc;

	c->err[0] = '\0';
	if (command == NULL) {
		set_error(c, "no command (out of memory, or an argument was NULL)");
		return UV_EINVAL;
	}
	if (!c->started || !alive(c) || c->in_closed || c->closing) {
		set_error(c, "retryd is not running, or its input was closed");
		rc = UV_EPIPE;
		goto fail;
	}
	type = json_string_value(json_object_get(command, "type"));
	if (!json_is_object(command) || type == NULL) {
		set_error(c, "a command is a JSON object with a string \"type\"");
		rc = UV_EINVAL;
		goto fail;
	}
	idv = json_object_get(command, "id");
	if (idv == NULL || json_is_null(idv)) {
		retryd_pending_next_id(&c->pending, idbuf, sizeof(idbuf));
		if (json_object_set_new(command, "id", json_string(idbuf)) != 0) {
			rc = UV_ENOMEM;
			goto fail;
		}
		id = idbuf;
	} else if ((id = json_string_value(idv)) == NULL) {
		set_error(c, "a command's \"id\" must be a string");
		rc = UV_EINVAL;
		goto fail;
	}
	if (retryd_pending_has(&c->pending, id)) {
		set_error(c, "a command with id \"%s\" is waiting for its response already", id);
		rc = UV_EEXIST;
		goto fail;
	}
	text = serialize(command);
	if (text == NULL) {
		rc = UV_ENOMEM;
		goto fail;
	}
	if (c->request_ms > 0)
		deadline = uv_now(c->loop) + c->request_ms;
	rc = retryd_pending_add(&c->pending, id, type, cb, ctx, deadline);
	if (rc != 0)
		goto fail;
	len = strlen(text);
	text[len] = '\n';  /* serialize left room for it */
	rc = retryd_child_write(c->child, text, len + 1);
	text = NULL;
	if (rc != 0) {
		struct retryd_pending_entry e;

		if (retryd_pending_take(&c->pending, id, &e))
			retryd_pending_entry_release(&e);
		set_error(c, "writing to retryd: %s", uv_strerror(rc));
		goto fail;
	}
	if (deadline != 0)
		rearm_request_timer(c);
	json_decref(command);
	return 0;
fail:
	if (c->err[0] == '\0')
		set_error(c, "%s", uv_strerror(rc));
	free(text);
	json_decref(command);
	return rc;
}

/* ---- lifecycle ---------------------------------------------------------- */

struct retryd_client *retryd_client_new(uv_loop_t *loop, const struct retryd_client_options *o)
{
	static const struct retryd_client_options none;
	struct retryd_client *c = calloc(1, sizeof(*c));
	uv_timer_t *timers[3];

	if (c == NULL)
		return NULL;
	if (o == NULL)
		o = &none;
	c->loop = loop;
	c->path = o->path ? strdup(o->path) : NULL;
	c->args = copy_list(o->args);
	c->env = o->env ? copy_list(o->env) : NULL;
	c->cwd = o->cwd ? strdup(o->cwd) : NULL;
	if ((o->path && !c->path) || !c->args || (o->env && !c->env) || (o->cwd && !c->cwd)) {
		free(c->path);
		free_list(c->args);
		free_list(c->env);
		free(c->cwd);
		free(c);
		return NULL;
	}
	c->ignore_stderr = o->ignore_stderr;
	c->max_line = o->max_line_bytes ? o->max_line_bytes : RETRYD_CLIENT_DEFAULT_MAX_LINE;
	c->ready_ms = o->ready_timeout_ms ? o->ready_timeout_ms : RETRYD_CLIENT_DEFAULT_READY_MS;
	c->request_ms = o->request_timeout_ms;
	c->kill_ms = o->kill_timeout_ms ? o->kill_timeout_ms : RETRYD_CLIENT_DEFAULT_KILL_MS;
	c->on_event = o->on_event;
	c->on_ready = o->on_ready;
	c->on_exit = o->on_exit;
	c->on_line = o->on_line;
	c->on_error = o->on_error;
	c->ctx = o->ctx;
	retryd_lines_init(&c->lines, c->max_line);
	retryd_pending_init(&c->pending);
	timers[0] = &c->ready_timer;
	timers[1] = &c->request_timer;
	timers[2] = &c->wait_timer;
	for (size_t i = 0; i < 3; i++) {
		uv_timer_init(loop, timers[i]);
		timers[i]->data = c;
	}
	return c;
}

/* environ with the client's NAME=VALUE entries laid over it and NAME entries
 * removed. The strings are borrowed; only the array is new. */
static char **build_env(struct retryd_client *c)
{
	size_t n = 0, m = 0, k = 0;
	char **out;

	while (environ[n] != NULL)
		n++;
	while (c->env[m] != NULL)
		m++;
	out = calloc(n + m + 1, sizeof(*out));
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t nlen = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		bool replaced = false;

		for (size_t j = 0; j < m && !replaced; j++) {
			const char *e = c->env[j];
			const char *eeq = strchr(e, '=');
			size_t elen = eeq ? (size_t)(eeq - e) : strlen(e);

			replaced = elen == nlen && strncmp(e, environ[i], nlen) == 0;
		}
		if (!replaced)
			out[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++)
		if (strchr(c->env[j], '=') != NULL)
			out[k++] = c->env[j];
	out[k] = NULL;
	return out;
}

static void ignore_sigpipe_by_default(void)
{
	struct sigaction sa;

	if (sigaction(SIGPIPE, NULL, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO) &&
	    sa.sa_handler == SIG_DFL)
		signal(SIGPIPE, SIG_IGN);
}

int retryd_client_start(struct retryd_client *c)
{
	struct retryd_child_options o;
	char *file = NULL, **argv = NULL, **envp = NULL;
	size_t nargs = 0;
	int rc;

	c->err[0] = '\0';
	if (c->started || c->spawn_tried || c->closing) {
		set_error(c, "this client was started before");
		return UV_EALREADY;
	}
	file = retryd_client_find_daemon(c->path);
	if (file == NULL) {
		if (c->path != NULL)
			set_error(c, "retryd not found: %s is not an executable file%s", c->path,
				  strchr(c->path, '/') ? "" : " on PATH");
		else
			set_error(c, "retryd not found: not in $RETRYD, not next to this program, "
				  "not on PATH (install it, or set RETRYD to its path)");
		return UV_ENOENT;
	}
	while (c->args[nargs] != NULL)
		nargs++;
	argv = calloc(nargs + 2, sizeof(*argv));
	if (argv == NULL || (c->env != NULL && (envp = build_env(c)) == NULL)) {
		rc = UV_ENOMEM;
		goto done;
	}
	argv[0] = file;
	memcpy(argv + 1, c->args, nargs * sizeof(*argv));

	ignore_sigpipe_by_default();
	memset(&o, 0, sizeof(o));
	o.file = file;
	o.argv = argv;
	o.env = envp;
	o.cwd = c->cwd;
	o.stdio[0] = RETRYD_CHILD_PIPE;
	o.stdio[1] = RETRYD_CHILD_PIPE;
	o.stdio[2] = c->ignore_stderr ? RETRYD_CHILD_IGNORE : RETRYD_CHILD_INHERIT;
	o.drain_ms = EOF_GRACE_MS;
	o.on_data = child_data_cb;
	o.on_end = child_end_cb;
	o.on_done = child_done_cb;
	o.ctx = c;
	c->spawn_tried = true;
	rc = retryd_child_spawn(c->loop, &o, &c->child);
	if (rc != 0) {
		set_error(c, "cannot start %s: %s", file, uv_strerror(rc));
		c->in_closed = true;
		goto done;
	}
	c->started = true;
	uv_timer_start(&c->ready_timer, ready_timer_cb, c->ready_ms, 0);
done:
	if (rc == UV_ENOMEM)
		set_error(c, "out of memory");
	free(argv);
	free(envp);
	free(file);
	return rc;
}

int retryd_client_end_input(struct retryd_client *c)
{
	if (!c->started || c->in_closed || c->closing)
		return UV_EPIPE;
	c->in_closed = true;
	/* Waits for the queued writes; then the daemon reads EOF. */
	retryd_child_end_input(c->child);
	return 0;
}

int retryd_client_kill(struct retryd_client *c, int signum)
{
	if (!alive(c))
		return UV_ESRCH;
	return retryd_child_kill(c->child, signum);
}

void retryd_client_close(struct retryd_client *c, retryd_close_cb done, void *ctx)
{
	if (c->closing)
		return;
	c->closing = true;
	c->close_cb = done;
	c->close_ctx = ctx;
	fail_all_pending(c, UV_ECANCELED);
	retryd_client_unwatch(c, UV_ECANCELED, "the client was closed");
	uv_timer_stop(&c->ready_timer);
	if (!c->started || c->gone) {
		close_handles(c);
		return;
	}
	c->in_closed = true;
	if (alive(c))
		retryd_child_terminate(c->child, c->kill_ms);
	/* Its close callback brings the exit, then on_exit; gone() then closes
	 * the rest. */
	close_child(c);
}

const char *retryd_client_last_error(const struct retryd_client *c)
{
	return c->err;
}

bool retryd_client_is_ready(const struct retryd_client *c)
{
	return c->ready && !c->gone;
}

bool retryd_client_is_running(const struct retryd_client *c)
{
	return c->started && !c->gone;
}

int retryd_client_pid(const struct retryd_client *c)
{
	return alive(c) ? retryd_child_pid(c->child) : 0;
}

uv_loop_t *retryd_client_loop(const struct retryd_client *c)
{
	return c->loop;
}

void *retryd_client_ctx(const struct retryd_client *c)
{
	return c->ctx;
}

const char *retryd_strerror(int err)
{
	if (err == RETRYD_EREFUSED)
		return "retryd refused the command";
	return uv_strerror(err);
}

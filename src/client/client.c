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

#include "client/frame.h"
#include "shared/lines.h"
#include "client/pending.h"
#include "retryd/client.h"
#include "client/run.h"

#define READ_CHUNK (64u * 1024u)
/* After the daemon exited, how long its stdout may stay open (a grandchild
 * holding it) before we stop waiting for EOF. */
#define EOF_GRACE_MS 1000u

extern char **environ;

struct waiter {
	struct retryd_run run;
	uint64_t gen;
	bool finished;
	int status;
	char *error;       /* owned: why the wait ended early */
};

struct write_req {
	uv_write_t req;
	char *buf;         /* owned */
};

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

	uv_process_t proc;
	uv_pipe_t in, out;
	uv_shutdown_t shutdown_req;
	uv_timer_t ready_timer, request_timer, kill_timer, eof_timer, wait_timer;
	int open_handles;

	bool started;      /* uv_spawn succeeded */
	bool have_pipes;   /* in/out initialized (and need closing) */
	bool have_proc;    /* proc initialized (and needs closing) */
	bool alive;        /* started, exit not seen */
	bool out_eof;
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
	struct waiter *waiter;
	uint64_t wait_gen;

	retryd_close_cb close_cb;
	void *close_ctx;
	char err[512];
	char readbuf[READ_CHUNK];
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

/* ---- waiting (retryd_client_prompt_and_wait) ---------------------------- */

static void finish_wait(struct retryd_client *c, int status, const char *error)
{
	struct waiter *w = c->waiter;

	if (w == NULL)
		return;
	c->waiter = NULL;
	uv_timer_stop(&c->wait_timer);
	w->finished = true;
	w->status = status;
	if (error != NULL)
		w->error = strdup(error);
}

static void wait_timeout_cb(uv_timer_t *t)
{
	struct retryd_client *c = t->data;

	finish_wait(c, UV_ETIMEDOUT, "the run did not finish in time (it goes on in the daemon)");
}

static void wait_prompt_cb(struct retryd_client *c, const struct retryd_result *r, void *ctx)
{
	uint64_t gen = (uint64_t)(uintptr_t)ctx;

	if (c->waiter == NULL || c->waiter->gen != gen)
		return;
	if (r->status < 0)
		finish_wait(c, r->status, r->error);
	else if (!r->success)
		finish_wait(c, RETRYD_EREFUSED, r->error);
	else
		retryd_run_accept(&c->waiter->run);
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

/* The client is freed once every handle it closed has called back, and only
 * after close_handles() started the end (stdin may close earlier). */
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

static void close_stdin(struct retryd_client *c)
{
	c->in_closed = true;
	if (c->have_pipes)
		close_handle(c, (uv_handle_t *)&c->in);
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
	close_handle(c, (uv_handle_t *)&c->kill_timer);
	close_handle(c, (uv_handle_t *)&c->eof_timer);
	close_handle(c, (uv_handle_t *)&c->wait_timer);
	if (c->have_pipes) {
		close_handle(c, (uv_handle_t *)&c->in);
		close_handle(c, (uv_handle_t *)&c->out);
	}
	if (c->have_proc)
		close_handle(c, (uv_handle_t *)&c->proc);
	unref_client(c);
}

/* Both the exit and stdout's EOF are in: report, then (when closing) free. */
static void maybe_gone(struct retryd_client *c)
{
	char how[128], msg[256];

	if (c->alive || !c->out_eof || c->gone)
		return;
	c->gone = true;
	uv_timer_stop(&c->kill_timer);
	uv_timer_stop(&c->eof_timer);
	uv_timer_stop(&c->ready_timer);
	close_stdin(c);
	describe_exit(c, how, sizeof(how));
	if (!c->ready_reported) {
		snprintf(msg, sizeof(msg), "retryd %s before it was ready", how);
		report_ready(c, UV_EOF, msg);
	}
	fail_all_pending(c, UV_EOF);
	snprintf(msg, sizeof(msg), "retryd %s before the run ended", how);
	finish_wait(c, UV_EOF, msg);
	if (c->on_exit)
		c->on_exit(c, c->exit_status, c->term_signal, c->ctx);
	if (c->closing)
		close_handles(c);
}

static void stop_reading(struct retryd_client *c)
{
	if (c->out_eof)
		return;
	c->out_eof = true;
	uv_read_stop((uv_stream_t *)&c->out);
}

static void eof_timer_cb(uv_timer_t *t)
{
	struct retryd_client *c = t->data;

	stop_reading(c);
	maybe_gone(c);
}

static void exit_cb(uv_process_t *p, int64_t exit_status, int term_signal)
{
	struct retryd_client *c = p->data;

	c->alive = false;
	c->exit_status = exit_status;
	c->term_signal = term_signal;
	uv_timer_stop(&c->kill_timer);
	if (!c->out_eof)
		uv_timer_start(&c->eof_timer, eof_timer_cb, EOF_GRACE_MS, 0);
	maybe_gone(c);
}

static void kill_timer_cb(uv_timer_t *t)
{
	struct retryd_client *c = t->data;

	if (c->alive)
		uv_process_kill(&c->proc, SIGKILL);
}

static void ready_timer_cb(uv_timer_t *t)
{
	struct retryd_client *c = t->data;
	char msg[128];

	if (c->ready)
		return;
	snprintf(msg, sizeof(msg), "retryd wrote no ready line within %" PRIu64 " ms", c->ready_ms);
	report_ready(c, UV_ETIMEDOUT, msg);
	if (c->alive)
		uv_process_kill(&c->proc, SIGTERM);
}

/* ---- reading ------------------------------------------------------------ */

static void deliver_event(struct retryd_client *c, const char *type, json_t *obj)
{
	if (c->waiter != NULL && retryd_run_feed(&c->waiter->run, type, obj))
		finish_wait(c, 0, NULL);
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

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct retryd_client *c = h->data;

	(void)suggested;
	*buf = uv_buf_init(c->readbuf, sizeof(c->readbuf));
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct retryd_client *c = s->data;

	(void)buf;
	if (n > 0) {
		if (retryd_lines_feed(&c->lines, c->readbuf, (size_t)n, line_cb, c) != 0)
			report_error(c, UV_ENOMEM, "out of memory for a line from retryd");
		return;
	}
	if (n == 0)
		return;
	if (n != UV_EOF)
		report_error(c, (int)n, "reading retryd's stdout: %s", uv_strerror((int)n));
	if (!c->closing)
		retryd_lines_finish(&c->lines, line_cb, c);
	stop_reading(c);
	maybe_gone(c);
}

/* ---- writing ------------------------------------------------------------ */

static void write_cb(uv_write_t *req, int status)
{
	struct write_req *w = (struct write_req *)req;

	/* A failed write means the daemon is gone; its exit fails what is pending. */
	(void)status;
	free(w->buf);
	free(w);
}

static int write_line(struct retryd_client *c, char *text)
{
	struct write_req *w = malloc(sizeof(*w));
	size_t len = strlen(text);
	uv_buf_t b;
	int rc;

	if (w == NULL) {
		free(text);
		return UV_ENOMEM;
	}
	text[len] = '\n';  /* text was allocated with room for it */
	w->buf = text;
	b = uv_buf_init(text, (unsigned int)(len + 1));
	rc = uv_write(&w->req, (uv_stream_t *)&c->in, &b, 1, write_cb);
	if (rc != 0) {
		free(text);
		free(w);
	}
	return rc;
}

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
	int rc;

	c->err[0] = '\0';
	if (command == NULL) {
		set_error(c, "no command (out of memory, or an argument was NULL)");
		return UV_EINVAL;
	}
	if (!c->started || !c->alive || c->in_closed || c->closing) {
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
	rc = write_line(c, text);
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
	uv_timer_t *timers[5];

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
	timers[2] = &c->kill_timer;
	timers[3] = &c->eof_timer;
	timers[4] = &c->wait_timer;
	for (size_t i = 0; i < 5; i++) {
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
	uv_process_options_t po;
	uv_stdio_container_t stdio[3];
	char *file = NULL, **argv = NULL, **envp = NULL;
	size_t nargs = 0;
	int rc;

	c->err[0] = '\0';
	if (c->started || c->have_proc || c->closing) {
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
	uv_pipe_init(c->loop, &c->in, 0);
	uv_pipe_init(c->loop, &c->out, 0);
	c->in.data = c;
	c->out.data = c;
	c->have_pipes = true;

	memset(&po, 0, sizeof(po));
	stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
	stdio[0].data.stream = (uv_stream_t *)&c->in;
	stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	stdio[1].data.stream = (uv_stream_t *)&c->out;
	if (c->ignore_stderr) {
		stdio[2].flags = UV_IGNORE;
	} else {
		stdio[2].flags = UV_INHERIT_FD;
		stdio[2].data.fd = 2;
	}
	po.file = file;
	po.args = argv;
	po.env = envp;
	po.cwd = c->cwd;
	po.stdio = stdio;
	po.stdio_count = 3;
	/* Its own process group: a terminal's Ctrl-C is the caller's to handle. */
	po.flags = UV_PROCESS_DETACHED;
	po.exit_cb = exit_cb;
	c->proc.data = c;
	rc = uv_spawn(c->loop, &c->proc, &po);
	c->have_proc = true;  /* initialized even when uv_spawn fails */
	if (rc != 0) {
		set_error(c, "cannot start %s: %s", file, uv_strerror(rc));
		c->in_closed = true;
		c->out_eof = true;
		goto done;
	}
	c->started = true;
	c->alive = true;
	rc = uv_read_start((uv_stream_t *)&c->out, alloc_cb, read_cb);
	if (rc != 0) {
		set_error(c, "cannot read retryd's stdout: %s", uv_strerror(rc));
		uv_process_kill(&c->proc, SIGKILL);
		c->out_eof = true;
		rc = 0;  /* the exit is reported as usual */
	}
	uv_timer_start(&c->ready_timer, ready_timer_cb, c->ready_ms, 0);
done:
	if (rc == UV_ENOMEM)
		set_error(c, "out of memory");
	free(argv);
	free(envp);
	free(file);
	return rc;
}

static void shutdown_cb(uv_shutdown_t *req, int status)
{
	struct retryd_client *c = req->data;

	(void)status;
	close_handle(c, (uv_handle_t *)&c->in);
}

int retryd_client_end_input(struct retryd_client *c)
{
	int rc;

	if (!c->started || c->in_closed || c->closing)
		return UV_EPIPE;
	c->in_closed = true;
	/* Shutdown waits for the queued writes; the close follows in its callback. */
	c->shutdown_req.data = c;
	rc = uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->in, shutdown_cb);
	if (rc != 0)
		close_handle(c, (uv_handle_t *)&c->in);
	return 0;
}

int retryd_client_kill(struct retryd_client *c, int signum)
{
	if (!c->alive)
		return UV_ESRCH;
	return uv_process_kill(&c->proc, signum);
}

void retryd_client_close(struct retryd_client *c, retryd_close_cb done, void *ctx)
{
	if (c->closing)
		return;
	c->closing = true;
	c->close_cb = done;
	c->close_ctx = ctx;
	fail_all_pending(c, UV_ECANCELED);
	finish_wait(c, UV_ECANCELED, "the client was closed");
	uv_timer_stop(&c->ready_timer);
	if (!c->started || c->gone) {
		close_handles(c);
		return;
	}
	close_stdin(c);
	stop_reading(c);
	if (c->alive) {
		uv_process_kill(&c->proc, SIGTERM);
		uv_timer_start(&c->kill_timer, kill_timer_cb, c->kill_ms, 0);
	}
	/* maybe_gone() closes the handles once the exit is in. */
	maybe_gone(c);
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
	return c->alive ? c->proc.pid : 0;
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

/* ---- blocking convenience ---------------------------------------------- */

int retryd_client_prompt_and_wait(struct retryd_client *c, const char *message,
				  const struct retryd_prompt_options *opts, uint64_t timeout_ms,
				  struct retryd_run_result *out)
{
	struct waiter w;
	int rc;

	memset(out, 0, sizeof(*out));
	if (c->waiter != NULL) {
		out->error = strdup("another retryd_client_prompt_and_wait is running");
		return UV_EBUSY;
	}
	memset(&w, 0, sizeof(w));
	retryd_run_init(&w.run);
	w.gen = ++c->wait_gen;
	c->waiter = &w;
	rc = retryd_client_prompt(c, message, opts, wait_prompt_cb, (void *)(uintptr_t)w.gen);
	if (rc != 0) {
		c->waiter = NULL;
		out->error = strdup(c->err);
		retryd_run_release(&w.run);
		return rc;
	}
	if (timeout_ms > 0)
		uv_timer_start(&c->wait_timer, wait_timeout_cb, timeout_ms, 0);
	/* The client may be freed inside uv_run (closed from a callback): after
	 * the loop only the waiter, on this stack, is touched. */
	while (!w.finished) {
		if (uv_run(c->loop, UV_RUN_ONCE) == 0 && !w.finished)
			finish_wait(c, UV_EOF, "the loop has nothing left to run");
	}
	retryd_run_result(&w.run, out);
	if (w.status != 0) {
		out->answered = false;
		if (w.error != NULL) {
			free(out->error);
			out->error = w.error;
			w.error = NULL;
		}
	}
	free(w.error);
	retryd_run_release(&w.run);
	return w.status;
}

void retryd_run_result_release(struct retryd_run_result *r)
{
	free(r->text);
	free(r->stop_reason);
	free(r->error);
	json_decref(r->agent_end);
	memset(r, 0, sizeof(*r));
}

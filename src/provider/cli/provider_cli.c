#include "provider/cli/provider_cli.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider/cli/cli_dir.h"
#include "provider/cli/cli_limit.h"
#include "provider/cli/cli_parser.h"
#include "provider/cli/cli_prompt.h"
#include "provider/cli/cli_profile.h"
#include "base/errbuf.h"
#include "base/jsontext.h"
#include "base/log.h"
#include "base/secret.h"
#include "shared/child.h"
#include "shared/lines.h"

#define ERR_LINE_MAX 512
/* How much of the CLI's session id the debug log shows: enough to tell
 * sessions apart, too little to resume one. */
#define SESSION_ID_SHOWN 8

extern char **environ;

struct cli_provider;

/* One attempt: its child process, and what its output says. Lives until
 * the child is closed. */
struct cli_run {
	struct cli_provider *owner; /* NULL once aborted: the sink hears nothing more */
	struct clock *clock;
	struct provider_sink sink;
	struct retryd_child *child;
	bool closing, started, paused;
	bool spoke;                 /* something came on stdout: start-up is over */
	int64_t exit_status;
	int term_signal;
	struct retryd_lines framer;
	struct cli_parser parser;
	struct clock_timer idle, wall;
	int64_t idle_ms;
	char killed[160];           /* why we ended it; "" when we did not */
	struct secret_stream text_masker; /* the text deltas */
	struct secret_stream thinking_masker; /* the thinking deltas */
	struct secret_stream err_masker;  /* the stderr line being read */
	char err_line[ERR_LINE_MAX];      /* masked, then cut */
	size_t err_len;
	char last_err[ERR_LINE_MAX];
	/* What the CLI said outside its JSON lines (stderr, other stdout), the
	 * newest last, for its setup errors and failed resumes. */
	char said[2048];
	size_t said_len;
	/* ... and the first of it: a CLI names a bad flag first, then prints
	 * pages of help. */
	char said_first[2048];
	size_t said_first_len;
	bool resuming;              /* this run resumes a session */
	bool tools_ran;             /* a tool call ended: a fresh rerun would repeat it */
	/* A resume that turns out impossible falls back once, inside the
	 * attempt, to a fresh run of this prompt (owned), when nothing was
	 * streamed yet; NULL: no fallback. */
	char *fresh_prompt;
	char *model;                /* owned: the attempt's model, for that fresh run */
	struct provider_result result;
	char error[2048];
	char error_body[160];       /* {"error":{"type":T}}: the terminal's typed error, or "" */
};

struct cli_provider {
	struct provider base;
	uv_loop_t *loop;
	struct clock *clock;
	struct cli_profile *profile;
	char **env;           /* owned: "NAME=value", NULL-terminated */
	char *session_id;     /* owned: the newest the CLI reported, or NULL */
	char *dir;            /* owned: this daemon's directory for the CLI ({retrydDir}), or NULL */
	size_t prev_messages; /* context size when the last attempt started */
	enum provider_next last_next; /* what the last failed run said comes next */
	struct cli_run *run;  /* the running attempt, or NULL */
};

/* Secrets: the values build_env() registers with base/secret are masked
 * in every text, event, error and log line (the log masks its own). */

/* "0a1b2c3d…" for the debug log. */
static void short_id(const char *id, char *out, size_t outlen)
{
	if (strlen(id) <= SESSION_ID_SHOWN)
		snprintf(out, outlen, "%s", id);
	else
		snprintf(out, outlen, "%.*s\u2026", SESSION_ID_SHOWN, id);
}

/* How much of one argument the spawn line shows (a prompt can be long). */
#define ARG_SHOWN 80

/* Whether arg is a flag whose name says its value is a secret
 * ("--api-key", "--token=..."): the name passes secret_name(). */
static bool secret_flag(const char *arg)
{
	size_t n;

	if (arg[0] != '-')
		return false;
	n = strcspn(arg, "=");
	return secret_name(arg, n);
}

/* Appends s to b (memory failures only shorten the line). */
static void put(struct jsontext_buf *b, const char *s, size_t n)
{
	if (jsontext_reserve(b, n + 1) != 0)
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

/* The debug line for a spawn: argv with the values of secret-named flags
 * as "***", the session id shortened, each argument masked and then cut to
 * ARG_SHOWN bytes (secret_copy masks before it cuts). */
static void log_spawn(const char *name, int pid, char **argv, const char *session_id)
{
	struct jsontext_buf b = { NULL, 0, 0 };
	bool hide_next = false;

	if (log_level < LOG_LEVEL_DEBUG)
		return;
	for (char **a = argv; *a != NULL; a++) {
		char shown[ARG_SHOWN + 1 + 32], sid[3 * SESSION_ID_SHOWN + 8];
		const char *eq = strchr(*a, '=');
		size_t len = strlen(*a), n;

		if (a != argv)
			put(&b, " ", 1);
		if (hide_next) {
			put(&b, SECRET_MASK, strlen(SECRET_MASK));
			hide_next = false;
			continue;
		}
		if (secret_flag(*a)) {
			if (eq == NULL) {
				hide_next = true;
				put(&b, *a, len);
			} else {
				put(&b, *a, (size_t)(eq - *a) + 1);
				put(&b, SECRET_MASK, strlen(SECRET_MASK));
			}
			continue;
		}
		if (session_id != NULL && strcmp(*a, session_id) == 0) {
			short_id(session_id, sid, sizeof(sid));
			put(&b, sid, strlen(sid));
			continue;
		}
		n = secret_copy(shown, ARG_SHOWN + 1, *a, len);
		if (n < len)
			n += (size_t)snprintf(shown + n, sizeof(shown) - n, "…(%zu bytes)", len);
		put(&b, "'", 1);
		put(&b, shown, n);
		put(&b, "'", 1);
	}
	LOG_DEBUG("%s: pid %d spawned: %s", name, pid, b.data != NULL ? b.data : "");
	free(b.data);
}

/* Runs. */

static void stop_timers(struct cli_run *r)
{
	clock_timer_stop(r->clock, &r->idle);
	clock_timer_stop(r->clock, &r->wall);
}

static void free_run(struct cli_run *r)
{
	free(r->fresh_prompt);
	free(r->model);
	secret_stream_release(&r->text_masker);
	secret_stream_release(&r->thinking_masker);
	secret_stream_release(&r->err_masker);
	retryd_lines_release(&r->framer);
	cli_parser_release(&r->parser);
	free(r);
}

static void on_child_closed(struct retryd_child *child, const struct retryd_child_exit *exit,
			    void *ctx)
{
	struct cli_run *r = ctx;
	struct cli_provider *owner = r->owner;

	(void)child;
	(void)exit;
	if (owner != NULL) {
		struct provider_sink sink = r->sink;

		owner->run = NULL;
		r->owner = NULL;
		sink.finish(sink.ctx, &r->result);
	}
	free_run(r);
}

/* The child closes asynchronously; the run is freed (and the sink hears the
 * result) after it. */
static void close_run(struct cli_run *r)
{
	r->closing = true;
	stop_timers(r);
	retryd_child_close(r->child, on_child_closed, r);
}

static void emit_text(void *ctx, const char *text, size_t len)
{
	struct cli_run *r = ctx;

	if (r->owner != NULL)
		r->sink.text_delta(r->sink.ctx, text, len);
}

/* Thinking reaches sinks that take it (all three callbacks or none). */
static void emit_thinking(void *ctx, const char *text, size_t len)
{
	struct cli_run *r = ctx;

	if (r->owner != NULL && r->sink.thinking_delta != NULL)
		r->sink.thinking_delta(r->sink.ctx, text, len);
}

static void end_thinking(struct cli_run *r, const char *signature, size_t len)
{
	char *sig = NULL;

	secret_stream_end(&r->thinking_masker, emit_thinking, r);
	if (r->owner == NULL || r->sink.thinking_end == NULL)
		return;
	if (signature != NULL && (sig = strndup(signature, len)) != NULL)
		secret_mask_str(sig);
	r->sink.thinking_end(r->sink.ctx, sig, sig ? strlen(sig) : 0, false);
	free(sig);
}

static void deliver(void *ctx, const struct cli_parser_outcome *o)
{
	struct cli_run *r = ctx;
	struct cli_provider *self = r->owner;
	char shown[3 * SESSION_ID_SHOWN + 8];
	char *m;
	json_t *ev;

	if (self == NULL)
		return;
	if (!r->started && o->kind != CLI_OUT_SESSION && o->kind != CLI_OUT_TERMINAL) {
		r->started = true;
		r->sink.start(r->sink.ctx);
		if (r->owner == NULL)
			return;
	}
	switch (o->kind) {
	case CLI_OUT_SESSION:
		m = strdup(o->text);
		if (m == NULL)
			return;
		free(self->session_id);
		self->session_id = m;
		/* Whoever has the whole id can resume the conversation. */
		if (log_level >= LOG_LEVEL_DEBUG) {
			short_id(m, shown, sizeof(shown));
			LOG_DEBUG("%s: session %s", self->base.name, shown);
		}
		break;
	case CLI_OUT_TEXT_START:
		r->sink.text_start(r->sink.ctx);
		break;
	case CLI_OUT_TEXT_DELTA:
		/* A key split across two deltas is held back and masked whole. */
		secret_stream_feed(&r->text_masker, o->text, o->len, emit_text, r);
		break;
	case CLI_OUT_TEXT_END:
		secret_stream_end(&r->text_masker, emit_text, r);
		if (r->owner != NULL)
			r->sink.text_end(r->sink.ctx);
		break;
	case CLI_OUT_THINKING_START:
		if (r->sink.thinking_start != NULL)
			r->sink.thinking_start(r->sink.ctx);
		break;
	case CLI_OUT_THINKING_DELTA:
		secret_stream_feed(&r->thinking_masker, o->text, o->len, emit_thinking, r);
		break;
	case CLI_OUT_THINKING_END:
		end_thinking(r, o->text, o->len);
		break;
	case CLI_OUT_EVENT:
		if (r->sink.event == NULL)
			break;
		ev = json_deep_copy(o->event);
		if (ev == NULL)
			break;
		secret_mask_json(ev);
		if (strcmp(json_string_value(json_object_get(ev, "type")), "provider_retry") == 0)
			json_object_set_new(ev, "provider", json_string(self->base.name));
		else if (strcmp(json_string_value(json_object_get(ev, "type")),
				"tool_execution_end") == 0)
			r->tools_ran = true;
		r->sink.event(r->sink.ctx, ev);
		break;
	case CLI_OUT_TERMINAL:
		LOG_DEBUG("%s: terminal line: %s", self->base.name, o->failed ? "failure" : "success");
		break;
	}
}

static void remember(struct cli_run *r, const char *text, size_t n);

static bool on_line(void *ctx, enum retryd_lines_kind kind, const char *line, size_t len)
{
	struct cli_run *r = ctx;

	if (r->owner == NULL)
		return true;
	if (kind == RETRYD_LINES_OVERSIZE) {
		LOG_WARN("%s: skipped an output line over %zu bytes", r->owner->base.name,
			 r->framer.max_line);
		return true;
	}
	if (cli_parser_feed(&r->parser, line, len, deliver, r) == 0 && (len == 0 || line[0] != '{')) {
		char shown[ERR_LINE_MAX];
		size_t n = secret_copy(shown, sizeof(shown), line, len);

		remember(r, shown, n);
	}
	return true;
}

/* How a next attempt can go on after this failed run, as true of the CLI. */
static void answer_next(struct cli_provider *self, struct cli_run *r, struct provider_result *res)
{
	const struct cli_texts *t = &self->profile->texts;
	const char *setup = NULL;

	if (!r->parser.terminal || r->parser.failed) {
		setup = cli_texts_setup_error(t, r->said_first, r->said_first_len);
		if (setup == NULL)
			setup = cli_texts_setup_error(t, r->said, r->said_len);
		if (setup == NULL)
			setup = cli_texts_setup_error(t, r->error, strlen(r->error));
	}
	if (setup != NULL) {
		/* The CLI's own setup, not the request: retrying cannot help. */
		LOG_INFO("%s: setup error: %s", self->base.name, setup);
		snprintf(r->error, sizeof(r->error), "%s", setup);
		res->next = PROVIDER_NEXT_CANNOT;
		res->next_why = "the agent cannot run as set up";
	} else if (self->profile->resume_argv == NULL) {
		res->next = PROVIDER_NEXT_CANNOT;
		res->next_why = "the profile has no resumeArgv";
	} else if (r->resuming && cli_texts_resume_failed(t, r->said, r->said_len)) {
		/* A dead session id is never tried again. */
		free(self->session_id);
		self->session_id = NULL;
		res->next = PROVIDER_NEXT_FRESH;
		strncat(r->error, " (the session could not be resumed)",
			sizeof(r->error) - strlen(r->error) - 1);
	} else if (self->session_id == NULL) {
		if (r->tools_ran) {
			res->next = PROVIDER_NEXT_CANNOT;
			res->next_why = "the agent ran a tool but reported no session id: a fresh run "
					"would run it again";
		} else {
			res->next = PROVIDER_NEXT_FRESH;
		}
	} else if (t->lost_turn_on_error && r->parser.terminal && r->parser.failed &&
		   !r->tools_ran) {
		/* After a tool ran the failed send was the tool's result, and the
		 * session keeps the turn: a continuation, not the prompt again. */
		res->next = PROVIDER_NEXT_RESEND;
	}
}

/* The terminal line's status and error type, as the HTTP providers hand
 * them over: a status, and a body holding the type (the classifier reads
 * typed values there), never folded into the text. */
static void typed_facts(struct cli_run *r, struct provider_result *res)
{
	json_t *body;
	char *text;

	res->http_status = r->parser.status;
	if (r->parser.error_type == NULL || r->parser.error_type[0] == '\0')
		return;
	body = json_pack("{s:{s:s}}", "error", "type", r->parser.error_type);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (text != NULL && strlen(text) < sizeof(r->error_body)) {
		memcpy(r->error_body, text, strlen(text) + 1);
		res->error_body = r->error_body;
		res->error_body_len = strlen(r->error_body);
	}
	free(text);
}

/* A spent plan's line: typed as a usage limit (when the CLI typed it not
 * otherwise), its reset as the wait, so that the chain can wait it out and
 * resume this session after. */
static void usage_limit_facts(struct cli_run *r, struct provider_result *res)
{
	static const char typed[] = "{\"error\":{\"type\":\"usage_limit_reached\"}}";
	int64_t wait;

	if (!cli_limit_read(r->error, clock_wall_ms(r->clock), &wait))
		return;
	res->hint_ms = wait;
	if (res->error_body == NULL) {
		memcpy(r->error_body, typed, sizeof(typed));
		res->error_body = r->error_body;
		res->error_body_len = sizeof(typed) - 1;
	}
}

static void build_result(struct cli_run *r)
{
	struct cli_provider *self = r->owner;
	struct provider_result *res = &r->result;

	memset(res, 0, sizeof(*res));
	res->hint_ms = -1;
	res->input_tokens = r->parser.input_tokens;
	res->output_tokens = r->parser.output_tokens;
	res->cache_read_tokens = r->parser.cache_read_tokens;
	res->cache_write_tokens = r->parser.cache_write_tokens;
	if (r->killed[0] != '\0' && !(r->parser.terminal && r->parser.settled)) {
		res->stop = STOP_ERROR;
		snprintf(r->error, sizeof(r->error), "%s", r->killed);
	} else if (r->parser.terminal) {
		/* Killed after its last word: a hung exit does not undo an answer. */
		if (r->killed[0] != '\0')
			LOG_INFO("%s: ended after its terminal line (%s)", self->base.name, r->killed);
		res->stop = r->parser.failed ? STOP_ERROR : STOP_STOP;
		if (r->parser.error != NULL)
			secret_copy(r->error, sizeof(r->error), r->parser.error, strlen(r->parser.error));
		else
			snprintf(r->error, sizeof(r->error), "the agent reported a failure");
		typed_facts(r, res);
		if (r->parser.failed)
			usage_limit_facts(r, res);
	} else {
		char how[48];

		res->stop = STOP_ERROR;
		if (r->term_signal != 0)
			snprintf(how, sizeof(how), "signal %d", r->term_signal);
		else
			snprintf(how, sizeof(how), "exit %lld", (long long)r->exit_status);
		snprintf(r->error, sizeof(r->error), "agent exited without a result (%s)%s%s", how,
			 r->last_err[0] ? ": " : "", r->last_err);
	}
	if (res->stop != STOP_ERROR)
		return;
	secret_mask_str(r->error);
	res->error_message = r->error;
	answer_next(self, r, res);
	self->last_next = res->next;
}

static bool resume_fresh(struct cli_run *r);

/* Exit and EOF on both pipes: the outcome is known; close, then finish. */
static void on_child_done(struct retryd_child *child, const struct retryd_child_exit *exit,
			  void *ctx)
{
	struct cli_run *r = ctx;

	r->exit_status = exit->status;
	r->term_signal = exit->term_signal;
	if (exit->term_signal != 0)
		LOG_DEBUG("%s: pid %d ended by signal %d", r->owner ? r->owner->base.name : "cli",
			  retryd_child_pid(child), exit->term_signal);
	else
		LOG_DEBUG("%s: pid %d exited with status %lld", r->owner ? r->owner->base.name : "cli",
			  retryd_child_pid(child), (long long)exit->status);
	if (exit->forced)
		LOG_INFO("pid %d did not end after SIGTERM; SIGKILL went to its group",
			 retryd_child_pid(child));
	if (exit->drained)
		LOG_INFO("pid %d exited but its pipes stayed open; SIGKILL went to its group",
			 retryd_child_pid(child));
	stop_timers(r);
	retryd_lines_finish(&r->framer, on_line, r);
	if (!resume_fresh(r) && r->owner != NULL)
		cli_parser_finish(&r->parser, deliver, r);
	/* What was delivered may have aborted the run (e.g. stdout failed). */
	if (r->owner != NULL)
		build_result(r);
	if (!r->closing)
		close_run(r);
}

static void on_idle_timer(struct clock_timer *t, void *ctx);

/* The stall clock's window now: retry.idleTimeoutMs, but at least the
 * profile's startupMs until the CLI first writes to stdout (stderr warnings
 * come early in a start-up and do not end it). */
static int64_t idle_window(const struct cli_run *r)
{
	int64_t startup = r->owner ? r->owner->profile->startup_ms : 0;

	return !r->spoke && startup > r->idle_ms ? startup : r->idle_ms;
}

/* Output came (or reading resumed): the stall clock starts again. */
static void start_idle(struct cli_run *r)
{
	if (r->idle_ms > 0 && !r->paused && r->killed[0] == '\0' && !r->closing)
		clock_timer_start(r->clock, &r->idle, (uint64_t)idle_window(r), on_idle_timer, r);
}

/* Ends a run that overstayed: SIGTERM to the group, SIGKILL after the grace. */
static void terminate(struct cli_run *r, const char *why)
{
	int64_t grace = r->owner ? r->owner->profile->kill_grace_ms : 0;

	if (r->killed[0] != '\0')
		return;
	snprintf(r->killed, sizeof(r->killed), "%s", why);
	stop_timers(r);
	LOG_INFO("%s: %s; SIGTERM to process group %d", r->owner ? r->owner->base.name : "cli",
		 why, retryd_child_pid(r->child));
	retryd_child_terminate(r->child, (uint64_t)grace);
}

static void on_idle_timer(struct clock_timer *t, void *ctx)
{
	struct cli_run *r = ctx;
	int64_t window = idle_window(r);
	char why[160];

	(void)t;
	if (window != r->idle_ms) /* only with an owner: its profile gave the window */
		snprintf(why, sizeof(why), "stream stall: no output for %lld ms since the start "
			 "(providers.%s.startupMs)", (long long)window, r->owner->base.name);
	else
		snprintf(why, sizeof(why), "stream stall: no output for %lld ms", (long long)r->idle_ms);
	terminate(r, why);
}

static void on_wall_timer(struct clock_timer *t, void *ctx)
{
	struct cli_run *r = ctx;
	char why[128];

	(void)t;
	snprintf(why, sizeof(why), "timed out after %lld ms (providers.%s.timeoutMs)",
		 (long long)r->owner->profile->timeout_ms, r->owner->base.name);
	terminate(r, why);
}

/* Keeps the newest of what the CLI said outside its JSON lines (masked). */
static void remember(struct cli_run *r, const char *text, size_t n)
{
	size_t room = sizeof(r->said) - 1;

	if (r->said_first_len + 1 < sizeof(r->said_first)) {
		size_t k = sizeof(r->said_first) - 2 - r->said_first_len;

		if (k > n)
			k = n;
		memcpy(r->said_first + r->said_first_len, text, k);
		r->said_first_len += k;
		r->said_first[r->said_first_len++] = '\n';
		r->said_first[r->said_first_len] = '\0';
	}

	if (n + 1 > room) {
		text += n + 1 - room;
		n = room - 1;
	}
	if (r->said_len + n + 1 > room) {
		size_t drop = r->said_len + n + 1 - room;

		memmove(r->said, r->said + drop, r->said_len - drop);
		r->said_len -= drop;
	}
	memcpy(r->said + r->said_len, text, n);
	r->said_len += n;
	r->said[r->said_len++] = '\n';
	r->said[r->said_len] = '\0';
}

static void deliver(void *ctx, const struct cli_parser_outcome *o);

/* A stderr line is masked as it comes, and cut at ERR_LINE_MAX after. */
static void append_err(void *ctx, const char *text, size_t len)
{
	struct cli_run *r = ctx;
	size_t room = sizeof(r->err_line) - 1 - r->err_len;

	if (len > room)
		len = room;
	memcpy(r->err_line + r->err_len, text, len);
	r->err_len += len;
}

static void err_line_done(struct cli_run *r)
{
	size_t n;

	secret_stream_end(&r->err_masker, append_err, r);
	n = r->err_len;

	while (n > 0 && (r->err_line[n - 1] == '\r' || r->err_line[n - 1] == ' '))
		n--;
	r->err_line[n] = '\0';
	r->err_len = 0;
	if (n == 0)
		return;
	memcpy(r->last_err, r->err_line, sizeof(r->last_err));
	LOG_DEBUG("%s stderr: %s", r->owner ? r->owner->base.name : "cli", r->last_err);
	remember(r, r->last_err, n);
	if (r->owner != NULL) {
		json_t *ev = cli_texts_notice(&r->owner->profile->texts, r->last_err, n);

		if (ev != NULL) {
			struct cli_parser_outcome o = { .kind = CLI_OUT_EVENT, .event = ev };

			deliver(r, &o);
			json_decref(ev);
		}
	}
}

static void on_child_data(struct retryd_child *child, int fd, const char *data, size_t len,
			  void *ctx)
{
	struct cli_run *r = ctx;

	(void)child;
	if (fd == 1 && len > 0)
		r->spoke = true;
	start_idle(r);
	if (fd == 1) {
		retryd_lines_feed(&r->framer, data, len, on_line, r);
		return;
	}
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;

		secret_stream_feed(&r->err_masker, data, n, append_err, r);
		if (nl == NULL)
			break;
		err_line_done(r);
		data += n + 1;
		len -= n + 1;
	}
}

static void on_child_end(struct retryd_child *child, int fd, int status, void *ctx)
{
	struct cli_run *r = ctx;

	(void)child;
	if (fd == 0)
		LOG_WARN("writing the prompt to the agent's stdin: %s",
			 retryd_child_strerror(status));
	else if (fd == 1 && status != UV_EOF)
		LOG_WARN("reading an agent's stdout: %s", retryd_child_strerror(status));
	else if (fd == 2)
		err_line_done(r);
}

/* Spawns argv; the prompt, when it goes to stdin, is written and the pipe
 * ended (input: taken). Returns 0, or -1 with err. */
static int spawn(struct cli_run *r, struct cli_provider *self, char **argv, char *input,
		 char *err, size_t errlen)
{
	struct retryd_child_options o;
	int rc;

	memset(&o, 0, sizeof(o));
	o.argv = argv;
	o.env = self->env;
	o.stdio[0] = input != NULL ? RETRYD_CHILD_PIPE : RETRYD_CHILD_IGNORE;
	o.stdio[1] = RETRYD_CHILD_PIPE;
	o.stdio[2] = RETRYD_CHILD_PIPE;
	o.drain_ms = (uint64_t)self->profile->kill_grace_ms;
	o.on_data = on_child_data;
	o.on_end = on_child_end;
	o.on_done = on_child_done;
	o.ctx = r;
	o.own_fds_only = true;  /* an agent CLI gets nothing of the daemon's */
	rc = retryd_child_spawn(self->loop, &o, &r->child);
	if (rc != 0) {
		free(input);
		return errbuf_set(err, errlen, "cannot run %s for provider %s: %s (set providers.%s.command)",
				  argv[0], self->base.name, retryd_child_strerror(rc), self->base.name);
	}
	if (input != NULL) {
		/* EOF after it: the prompt is complete. */
		retryd_child_write(r->child, input, strlen(input));
		retryd_child_end_input(r->child);
	}
	return 0;
}

/* Prompts. */

/* The conversation, less the two turns a continuation adds (the session has them). */
static size_t conversation_size(const struct attempt_ctx *ctx)
{
	size_t n = json_array_size(ctx->messages);
	return ctx->continuation == PROVIDER_CONTINUE_TURN && n >= 2 ? n - 2 : n;
}

/* What this attempt sends, and whether it resumes. New string, or NULL with
 * err. ctx->next is how the last failed attempt said this one goes on. */
static char *attempt_prompt(struct cli_provider *self, const struct attempt_ctx *ctx,
			    bool *resume, char *err, size_t errlen)
{
	size_t n = conversation_size(ctx);
	size_t from = cli_prompt_turn_start(ctx->messages);
	bool can_resume = self->session_id != NULL && self->profile->resume_argv != NULL;
	char *prompt = NULL, *steering;

	*resume = false;
	if (ctx->attempt > 0 && ctx->next == PROVIDER_NEXT_FRESH) {
		free(self->session_id);
		self->session_id = NULL;
		prompt = cli_prompt_fresh(ctx->messages, from);
	} else if (ctx->attempt > 0 && ctx->next == PROVIDER_NEXT_RESEND && can_resume) {
		/* The session lost the failed turn: it is sent again, whole. */
		*resume = true;
		prompt = cli_prompt_user_text(ctx->messages, from);
	} else if (ctx->attempt > 0) {
		if (!can_resume) {
			errbuf_set(err, errlen, "%s: cannot continue in the same context: no session id",
				   self->base.name);
			return NULL;
		}
		*resume = true;
		cli_prompt_append(&prompt, ctx->continuation_prompt ? ctx->continuation_prompt
							 : "Continue from where you left off.");
		/* Steering delivered during the backoff comes after the continuation. */
		steering = self->prev_messages < n ? cli_prompt_user_text(ctx->messages, self->prev_messages) : NULL;
		if (steering != NULL)
			cli_prompt_append(&prompt, steering);
		free(steering);
	} else if (from > 0 && can_resume) {
		*resume = true;
		prompt = cli_prompt_user_text(ctx->messages, from);
	} else {
		/* A new conversation, or one whose CLI session is unknown: the
		 * earlier turns go along as text, so none is lost. */
		if (from > 0)
			LOG_WARN("%s: no session to resume; this prompt starts a fresh one with the "
				 "conversation replayed", self->base.name);
		free(self->session_id);
		self->session_id = NULL;
		prompt = cli_prompt_fresh(ctx->messages, from);
	}
	if (prompt == NULL)
		prompt = strdup("");
	if (prompt == NULL)
		errbuf_set(err, errlen, "out of memory");
	return prompt;
}

/* The provider. */

static void free_strings(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

/* Starts one run of the CLI: prompt (borrowed), resuming the kept session
 * or not; fresh (taken, may be NULL) is the prompt a fresh run would send
 * if the resume turns out impossible. Returns the run, or NULL with err. */
static struct cli_run *launch(struct cli_provider *self, const struct provider_sink *sink,
			      int64_t idle_ms, const char *model, const char *prompt, bool resume,
			      char *fresh, char *err, size_t errlen)
{
	/* Read at each run: the user may change the CLI's configuration. */
	char **config_args = cli_config_args(&self->profile->texts.config, self->profile->args);
	struct cli_profile_vars vars = {
		.prompt = self->profile->prompt_stdin ? "" : prompt,
		.session_id = resume ? self->session_id : NULL,
		.model = model,
		.retryd_dir = self->dir,
		.extra_args = config_args,
	};
	char **argv = cli_profile_argv(self->profile, &vars, err, errlen);

	free_strings(config_args);
	struct cli_run *r = calloc(1, sizeof(*r));
	char *input = NULL;

	if (argv == NULL || r == NULL || (self->profile->prompt_stdin &&
					  (input = strdup(prompt)) == NULL) ||
	    (model != NULL && (r->model = strdup(model)) == NULL)) {
		if (argv != NULL)
			errbuf_set(err, errlen, "out of memory");
		cli_profile_argv_free(argv);
		free(input);
		free(fresh);
		if (r != NULL)
			free(r->model);
		free(r);
		return NULL;
	}
	r->owner = self;
	r->clock = self->clock;
	secret_stream_init(&r->text_masker);
	secret_stream_init(&r->thinking_masker);
	secret_stream_init(&r->err_masker);
	r->sink = *sink;
	r->idle_ms = idle_ms;
	r->resuming = resume;
	r->fresh_prompt = resume ? fresh : (free(fresh), NULL);
	retryd_lines_init(&r->framer, (size_t)self->profile->max_line_bytes);
	cli_parser_init(&r->parser, self->profile);
	if (spawn(r, self, argv, input, err, errlen) != 0) {
		free_run(r);
		cli_profile_argv_free(argv);
		return NULL;
	}
	self->run = r;
	LOG_INFO("%s: pid %d started%s", self->base.name, retryd_child_pid(r->child),
		 resume ? ", resuming its session" : "");
	log_spawn(self->base.name, retryd_child_pid(r->child), argv,
		  resume ? self->session_id : NULL);
	if (resume && log_level >= LOG_LEVEL_DEBUG) {
		char shown[3 * SESSION_ID_SHOWN + 8];

		short_id(self->session_id, shown, sizeof(shown));
		LOG_DEBUG("%s: resuming session %s", self->base.name, shown);
	}
	start_idle(r);
	if (self->profile->timeout_ms > 0)
		clock_timer_start(r->clock, &r->wall, (uint64_t)self->profile->timeout_ms, on_wall_timer,
				  r);
	cli_profile_argv_free(argv);
	return r;
}

/* A resume that cannot work, before anything reached the sink: the
 * attempt goes on as a fresh run of the same prompt, once, and the dead
 * session id is forgotten. Returns whether it did. */
static bool resume_fresh(struct cli_run *r)
{
	struct cli_provider *self = r->owner;
	char err[512];
	char *fresh;

	if (self == NULL || !r->resuming || r->started || r->fresh_prompt == NULL ||
	    (r->parser.terminal && !r->parser.failed) ||
	    !cli_texts_resume_failed(&self->profile->texts, r->said, r->said_len))
		return false;
	LOG_INFO("%s: its session could not be resumed; starting a fresh one with this prompt",
		 self->base.name);
	free(self->session_id);
	self->session_id = NULL;
	fresh = r->fresh_prompt;
	r->fresh_prompt = NULL;
	self->run = NULL;
	if (launch(self, &r->sink, r->idle_ms, r->model, fresh, false, NULL, err,
		   sizeof(err)) == NULL) {
		LOG_WARN("%s: %s", self->base.name, err);
		free(fresh);
		self->run = r;
		return false;
	}
	free(fresh);
	/* This run closes without a word: the fresh one reports. */
	r->owner = NULL;
	return true;
}

static int cli_start(struct provider *base, const struct attempt_ctx *ctx,
		     const struct provider_sink *sink, char *err, size_t errlen)
{
	struct cli_provider *self = (struct cli_provider *)base;
	bool resume;
	char *prompt, *fresh = NULL;
	struct cli_run *r;

	if (self->run != NULL)
		base->ops->abort(base);
	self->last_next = PROVIDER_NEXT_CONTINUE;
	prompt = attempt_prompt(self, ctx, &resume, err, errlen);
	if (prompt == NULL) {
		secret_mask_str(err);
		return -1;
	}
	self->prev_messages = conversation_size(ctx);
	if (resume)
		fresh = cli_prompt_fresh(ctx->messages, cli_prompt_turn_start(ctx->messages));
	r = launch(self, sink, ctx->idle_timeout_ms, ctx->model, prompt, resume, fresh, err,
		   errlen);
	free(prompt);
	if (r == NULL) {
		secret_mask_str(err);
		return -1;
	}
	return 0;
}

static void cli_abort(struct provider *base)
{
	struct cli_provider *self = (struct cli_provider *)base;
	struct cli_run *r = self->run;

	if (r == NULL)
		return;
	self->run = NULL;
	r->owner = NULL;
	LOG_INFO("%s: aborted; SIGKILL to process group %d", base->name, retryd_child_pid(r->child));
	retryd_child_kill(r->child, SIGKILL);
	if (!r->closing)
		close_run(r);
}

static void cli_pause(struct provider *base, bool paused)
{
	struct cli_provider *self = (struct cli_provider *)base;
	struct cli_run *r = self->run;

	if (r == NULL || r->paused == paused || r->closing)
		return;
	r->paused = paused;
	if (paused)
		clock_timer_stop(r->clock, &r->idle);
	else
		start_idle(r);
	/* The drain clock pauses with the reading: what the pipe holds is ours. */
	retryd_child_pause(r->child, paused);
}

static void remove_dir(struct cli_provider *self);

static void cli_free(struct provider *base)
{
	struct cli_provider *self = (struct cli_provider *)base;

	/* The caller aborted and ran the loop dry first; a run still here
	 * belongs to the loop now and never reaches us. */
	if (self->run != NULL)
		self->run->owner = NULL;
	remove_dir(self);
	cli_profile_free(self->profile);
	free_strings(self->env);
	free(self->session_id);
	json_decref(base->credentials);
	free(self);
}

/* A cut answer goes on only in a resumed session that holds the cut text
 * and streams the CLI's repeat of it (resumeContinuesCutText); any other
 * next run tells the answer again: a replay, and why. */
static enum provider_continue cli_continuation(struct provider *base, const char *model,
					       const char *setting, const char **why)
{
	struct cli_provider *self = (struct cli_provider *)base;

	(void)model;
	if ((setting != NULL && strcmp(setting, "off") == 0) ||
	    self->last_next == PROVIDER_NEXT_CANNOT)
		*why = NULL;
	else if (self->profile->resume_argv == NULL)
		*why = "the CLI cannot resume a session";
	else if (self->session_id == NULL)
		*why = "the CLI reported no session id";
	else if (self->last_next == PROVIDER_NEXT_RESEND)
		*why = "the CLI's session lost the cut turn";
	else if (self->last_next == PROVIDER_NEXT_FRESH)
		*why = "the next run starts a fresh session";
	else if (!self->profile->texts.resume_continues_cut_text)
		*why = "the CLI's resumed session does not go on from the cut text";
	else
		return PROVIDER_CONTINUE_TURN;
	return PROVIDER_CONTINUE_NONE;
}

static const struct provider_ops cli_ops = {
	.start = cli_start,
	.abort = cli_abort,
	.pause = cli_pause,
	.free = cli_free,
	.continuation = cli_continuation,
};

/* Environment. */

static int push(char ***v, size_t *n, char *s)
{
	char **p;

	if (s == NULL)
		return -1;
	p = realloc(*v, (*n + 2) * sizeof(*p));
	if (p == NULL) {
		free(s);
		return -1;
	}
	p[(*n)++] = s;
	p[*n] = NULL;
	*v = p;
	return 0;
}

static char *env_entry(const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 2;
	char *s = malloc(n);

	if (s != NULL)
		snprintf(s, n, "%s=%s", name, value);
	return s;
}

/* Whether the variable name[0..n) holds a secret: its name says so, or the
 * profile's secretEnv lists it. Never its value's length or looks: a path
 * or a model name is no key, and masking it would change what retryd
 * prints of the user's own words. */
static bool secret_var(const struct cli_profile *profile, const char *name, size_t n)
{
	size_t i;
	json_t *v;

	if (secret_name(name, n))
		return true;
	json_array_foreach(profile->secret_env, i, v)
		if (json_string_length(v) == n && memcmp(json_string_value(v), name, n) == 0)
			return true;
	return false;
}

/* The daemon's environment, then what turns the CLI's own retries down,
 * then the profile's env over both (null removes). */
static int build_env(struct cli_provider *self)
{
	const json_t *env = self->profile->env;
	const json_t *quiet = self->profile->texts.quiet_env;
	struct cli_profile_vars vars = { .retryd_dir = self->dir };
	size_t ne = 0;
	const char *name;
	json_t *v;

	self->env = calloc(1, sizeof(char *));
	if (self->env == NULL)
		return -1;
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t n = eq ? (size_t)(eq - *e) : strlen(*e);

		if (eq == NULL || json_object_getn(env, *e, n) != NULL ||
		    json_object_getn(quiet, *e, n) != NULL)
			continue;
		if (push(&self->env, &ne, strdup(*e)) != 0)
			return -1;
		if (secret_var(self->profile, *e, n) && secret_register(eq + 1) != 0)
			return -1;
	}
	json_object_foreach((json_t *)quiet, name, v) {
		char err[256], *value;
		int rc;

		if (json_object_get(env, name) != NULL || json_is_null(v))
			continue;
		value = cli_profile_expand(json_string_value(v), &vars, err, sizeof(err));
		if (value == NULL)
			return -1;
		/* Configuration, not a secret: not registered. */
		rc = push(&self->env, &ne, env_entry(name, value));
		free(value);
		if (rc != 0)
			return -1;
	}
	json_object_foreach((json_t *)env, name, v) {
		if (!json_is_string(v))
			continue;
		if (push(&self->env, &ne, env_entry(name, json_string_value(v))) != 0)
			return -1;
		if (secret_var(self->profile, name, strlen(name)) &&
		    secret_register(json_string_value(v)) != 0)
			return -1;
	}
	return 0;
}

/* Where the CLI sends its requests, as the fleet's provider id names it
 * (fleet_provider_id): the first serverEnv variable of the CLI's
 * environment that holds a URL. Two daemons of one CLI pointed at two
 * servers (a proxy, a gateway, a test's fake) then share no record; "" (the
 * CLI's own default server) when none is set. Borrowed from self->env. */
static const char *server_url(const struct cli_provider *self)
{
	const json_t *names = self->profile->server_env;
	size_t i;
	json_t *v;

	json_array_foreach((json_t *)names, i, v) {
		const char *name = json_string_value(v);
		size_t n = strlen(name);

		for (char **e = self->env; *e != NULL; e++)
			if (strncmp(*e, name, n) == 0 && (*e)[n] == '=' && strstr(*e + n + 1, "://"))
				return *e + n + 1;
	}
	return "";
}

/* The daemon's directory goes whole (cli_dir). */
static void remove_dir(struct cli_provider *self)
{
	cli_dir_remove(self->dir);
	free(self->dir);
	self->dir = NULL;
}

/* The daemon's own directory for this CLI ({retrydDir}), made when the
 * profile uses one. */
static int make_dir(struct cli_provider *self, char *err, size_t errlen)
{
	const struct cli_texts *t = &self->profile->texts;
	char *cfg = json_dumps(self->profile->cfg, JSON_COMPACT);
	bool used = t->quiet_files != NULL || (cfg != NULL && strstr(cfg, "{retrydDir}") != NULL);

	free(cfg);
	if (!used)
		return 0;
	self->dir = cli_dir_make(self->base.name, t->quiet_files, err, errlen);
	return self->dir != NULL ? 0 : -1;
}

struct provider *provider_cli_new(uv_loop_t *loop, struct clock *clock, const char *name,
				  const json_t *cfg, char *err, size_t errlen)
{
	struct cli_provider *self = calloc(1, sizeof(*self));

	if (self == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	self->loop = loop;
	self->clock = clock;
	self->profile = cli_profile_new(name, cfg, err, errlen);
	if (self->profile == NULL)
		goto fail;
	self->base.ops = &cli_ops;
	self->base.name = self->profile->name;
	self->base.api = "agent-cli";
	self->base.base_url = "";
	self->base.models = self->profile->models;
	self->base.credentials = json_array();
	self->base.owns_idle_timeout = true;
	/* A user who keeps the CLI's own retries wants them all. */
	self->base.counts_notices = !self->profile->texts.keep_own_retries;
	if (self->base.credentials == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto fail;
	}
	if (make_dir(self, err, errlen) != 0)
		goto fail;
	if (build_env(self) != 0) {
		errbuf_set(err, errlen, "out of memory");
		goto fail;
	}
	self->base.base_url = server_url(self);
	return &self->base;
fail:
	cli_free(&self->base);
	return NULL;
}

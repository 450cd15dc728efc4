#include "provider/cli/provider_cli.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider/cli/cli_parser.h"
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
	struct provider_result result;
	char error[2048];
};

struct cli_provider {
	struct provider base;
	uv_loop_t *loop;
	struct clock *clock;
	struct cli_profile *profile;
	char **env;           /* owned: "NAME=value", NULL-terminated */
	char *session_id;     /* owned: the newest the CLI reported, or NULL */
	size_t prev_messages; /* context size when the last attempt started */
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
		r->sink.event(r->sink.ctx, ev);
		break;
	case CLI_OUT_TERMINAL:
		LOG_DEBUG("%s: terminal line: %s", self->base.name, o->failed ? "failure" : "success");
		break;
	}
}

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
	cli_parser_feed(&r->parser, line, len, deliver, r);
	return true;
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
	if (self->profile->resume_argv == NULL) {
		res->next = PROVIDER_NEXT_CANNOT;
		res->next_why = "the profile has no resumeArgv";
	} else if (self->session_id == NULL) {
		res->next = PROVIDER_NEXT_CANNOT;
		res->next_why = "the agent reported no session id to resume";
	}
}

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
	if (r->owner != NULL)
		cli_parser_finish(&r->parser, deliver, r);
	/* What was delivered may have aborted the run (e.g. stdout failed). */
	if (r->owner != NULL)
		build_result(r);
	if (!r->closing)
		close_run(r);
}

static void on_idle_timer(struct clock_timer *t, void *ctx);

/* Output came (or reading resumed): the stall clock starts again. */
static void start_idle(struct cli_run *r)
{
	if (r->idle_ms > 0 && !r->paused && r->killed[0] == '\0' && !r->closing)
		clock_timer_start(r->clock, &r->idle, (uint64_t)r->idle_ms, on_idle_timer, r);
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
	char why[96];

	(void)t;
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
}

static void on_child_data(struct retryd_child *child, int fd, const char *data, size_t len,
			  void *ctx)
{
	struct cli_run *r = ctx;

	(void)child;
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

static void append(char **out, const char *text)
{
	size_t a = *out ? strlen(*out) : 0, b = strlen(text);
	char *p;

	if (b == 0)
		return;
	p = realloc(*out, a + b + 3);
	if (p == NULL)
		return;
	if (a > 0)
		memcpy(p + a, "\n\n", 2), a += 2;
	memcpy(p + a, text, b + 1);
	*out = p;
}

/* The text of the user messages from index `from` on, joined; new or NULL. */
static char *user_text(const json_t *messages, size_t from)
{
	char *out = NULL;

	for (size_t i = from; i < json_array_size(messages); i++) {
		json_t *m = json_array_get(messages, i);
		const char *role = json_string_value(json_object_get(m, "role"));
		size_t k;
		json_t *part;

		if (role == NULL || strcmp(role, "user") != 0)
			continue;
		json_array_foreach(json_object_get(m, "content"), k, part)
			if (json_is_string(json_object_get(part, "text")))
				append(&out, json_string_value(json_object_get(part, "text")));
	}
	return out;
}

/* Index just past the last assistant message (0 when there is none). */
static size_t after_last_assistant(const json_t *messages)
{
	size_t i = json_array_size(messages);

	while (i-- > 0) {
		const char *role = json_string_value(json_object_get(json_array_get(messages, i), "role"));

		if (role != NULL && strcmp(role, "assistant") == 0)
			return i + 1;
	}
	return 0;
}

/* What this attempt sends, and whether it resumes. New string, or NULL with err. */
static char *attempt_prompt(struct cli_provider *self, const struct attempt_ctx *ctx,
			    bool *resume, char *err, size_t errlen)
{
	size_t n = json_array_size(ctx->messages);
	size_t from = after_last_assistant(ctx->messages);
	char *prompt = NULL, *steering;

	*resume = false;
	if (ctx->attempt > 0) {
		if (self->session_id == NULL || self->profile->resume_argv == NULL) {
			errbuf_set(err, errlen, "%s: cannot continue in the same context: no session id",
				   self->base.name);
			return NULL;
		}
		*resume = true;
		append(&prompt, ctx->continuation_prompt ? ctx->continuation_prompt
							 : "Continue from where you left off.");
		/* Steering delivered during the backoff comes after the continuation. */
		steering = self->prev_messages < n ? user_text(ctx->messages, self->prev_messages) : NULL;
		if (steering != NULL)
			append(&prompt, steering);
		free(steering);
	} else {
		if (from > 0 && self->session_id != NULL && self->profile->resume_argv != NULL) {
			*resume = true;
		} else {
			/* A new conversation, or one whose CLI session is unknown. */
			if (from > 0)
				LOG_WARN("%s: no session to resume; this prompt starts a fresh one",
					 self->base.name);
			free(self->session_id);
			self->session_id = NULL;
		}
		prompt = user_text(ctx->messages, from);
	}
	if (prompt == NULL)
		prompt = strdup("");
	if (prompt == NULL)
		errbuf_set(err, errlen, "out of memory");
	return prompt;
}

/* The provider. */

static int cli_start(struct provider *base, const struct attempt_ctx *ctx,
		     const struct provider_sink *sink, char *err, size_t errlen)
{
	struct cli_provider *self = (struct cli_provider *)base;
	struct cli_run *r;
	struct cli_profile_vars vars = { 0 };
	char **argv = NULL;
	bool resume;
	char *prompt, *input;
	int rc = -1;

	if (self->run != NULL)
		base->ops->abort(base);
	prompt = attempt_prompt(self, ctx, &resume, err, errlen);
	if (prompt == NULL)
		return -1;
	self->prev_messages = json_array_size(ctx->messages);
	vars.prompt = self->profile->prompt_stdin ? "" : prompt;
	vars.session_id = resume ? self->session_id : NULL;
	vars.model = ctx->model;
	argv = cli_profile_argv(self->profile, &vars, err, errlen);
	r = calloc(1, sizeof(*r));
	if (argv == NULL || r == NULL) {
		if (argv != NULL)
			errbuf_set(err, errlen, "out of memory");
		free(r);
		goto out;
	}
	r->owner = self;
	r->clock = self->clock;
	secret_stream_init(&r->text_masker);
	secret_stream_init(&r->thinking_masker);
	secret_stream_init(&r->err_masker);
	r->sink = *sink;
	r->idle_ms = ctx->idle_timeout_ms;
	retryd_lines_init(&r->framer, (size_t)self->profile->max_line_bytes);
	cli_parser_init(&r->parser, self->profile);
	input = self->profile->prompt_stdin ? prompt : NULL;
	if (input != NULL)
		prompt = NULL;
	if (spawn(r, self, argv, input, err, errlen) != 0) {
		free_run(r);
		goto out;
	}
	self->run = r;
	LOG_INFO("%s: pid %d started%s", base->name, retryd_child_pid(r->child),
		 resume ? ", resuming its session" : "");
	log_spawn(base->name, retryd_child_pid(r->child), argv, resume ? self->session_id : NULL);
	if (resume && log_level >= LOG_LEVEL_DEBUG) {
		char shown[3 * SESSION_ID_SHOWN + 8];

		short_id(self->session_id, shown, sizeof(shown));
		LOG_DEBUG("%s: resuming session %s", base->name, shown);
	}
	start_idle(r);
	if (self->profile->timeout_ms > 0)
		clock_timer_start(r->clock, &r->wall, (uint64_t)self->profile->timeout_ms, on_wall_timer,
				  r);
	rc = 0;
out:
	if (rc != 0)
		secret_mask_str(err);
	cli_profile_argv_free(argv);
	free(prompt);
	return rc;
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

static void free_strings(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

static void cli_free(struct provider *base)
{
	struct cli_provider *self = (struct cli_provider *)base;

	/* The caller aborted and ran the loop dry first; a run still here
	 * belongs to the loop now and never reaches us. */
	if (self->run != NULL)
		self->run->owner = NULL;
	cli_profile_free(self->profile);
	free_strings(self->env);
	free(self->session_id);
	json_decref(base->credentials);
	free(self);
}

static const struct provider_ops cli_ops = {
	.start = cli_start,
	.abort = cli_abort,
	.pause = cli_pause,
	.free = cli_free,
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

/* The daemon's environment with the profile's env over it (null removes). */
static int build_env(struct cli_provider *self)
{
	const json_t *env = self->profile->env;
	size_t ne = 0;
	const char *name;
	json_t *v;

	self->env = calloc(1, sizeof(char *));
	if (self->env == NULL)
		return -1;
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t n = eq ? (size_t)(eq - *e) : strlen(*e);

		if (eq == NULL || json_object_getn(env, *e, n) != NULL)
			continue;
		if (push(&self->env, &ne, strdup(*e)) != 0)
			return -1;
		if (secret_name(*e, n) && secret_register(eq + 1) != 0)
			return -1;
	}
	json_object_foreach((json_t *)env, name, v) {
		if (!json_is_string(v))
			continue;
		if (push(&self->env, &ne, env_entry(name, json_string_value(v))) != 0)
			return -1;
		/* Every value the profile sets counts as a secret. */
		if (secret_register(json_string_value(v)) != 0)
			return -1;
	}
	return 0;
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
	if (self->base.credentials == NULL || build_env(self) != 0) {
		errbuf_set(err, errlen, "out of memory");
		goto fail;
	}
	return &self->base;
fail:
	cli_free(&self->base);
	return NULL;
}

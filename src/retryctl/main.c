/* retryctl — ask retryd from a terminal or a script.
 *
 * Starts retryd (through the client library), sends each prompt, prints the
 * answer on stdout as it streams and the retry lifecycle on stderr. Ctrl-C
 * cancels: abort_retry during a backoff, abort while an attempt runs; a
 * second Ctrl-C quits. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "retryctl/progress.h"
#include "retryd/client.h"
#include "retryd/protocol.h"

#define EXIT_ANSWERED  0
#define EXIT_FAILED    1
#define EXIT_USAGE     2
#define EXIT_CANCELLED 130
#define TICK_MS        100
#define HOLD_GRACE_MS  300  /* a hold's line is kept this long after its timer */

static const char usage_text[] =
	"usage: retryctl [options] [--] [PROMPT]\n"
	"       retryctl fleet clear|status [retryd options]\n"
	"\n"
	"Starts retryd, sends PROMPT, prints the answer on stdout as it streams and\n"
	"shows retries on stderr while they wait. Without PROMPT, reads prompts from\n"
	"stdin, one per line. Ctrl-C cancels a pending retry (or the running attempt);\n"
	"a second Ctrl-C quits. On a terminal a countdown names the error and a\n"
	"spinner runs until the first token; the progress is plain text, one line per\n"
	"retry, when stderr is not a terminal, NO_COLOR is set or TERM is dumb.\n"
	"\n"
	"  --json             print retryd's raw JSON lines on stdout (for jq)\n"
	"  --stream           print every attempt's text as it streams, also when\n"
	"                     stdout is not a terminal (default there: only the text\n"
	"                     of attempts that succeed)\n"
	"  --retryd PATH      the daemon (default: $RETRYD, next to retryctl, PATH)\n"
	"  --timeout SECONDS  give up on a prompt after this long\n"
	"  -q, --quiet        no progress lines on stderr\n"
	"  -h, --help         this text\n"
	"  -V, --version      the version\n"
	"\n"
	"retryd options, passed on:\n"
	"  --provider NAME  --model ID  --settings FILE  --set KEY=VALUE\n"
	"  --session FILE  --no-session  --sim-plan JSON\n"
	"  --continue  --resume FILE    go on with the newest (or that) session; a\n"
	"                     prompt it left parked until a usage limit resets is\n"
	"                     waited for and answered first\n"
	"retryctl keeps no session file unless --session (or --continue, --resume)\n"
	"is given.\n"
	"\n"
	"fleet status prints what the daemons sharing this one's fleet know of the\n"
	"provider, credential and model in use (a server block, the circuit, the\n"
	"rate); fleet clear removes it (a wrong block).\n"
	"\n"
	"Exit status: 0 answered, 1 failed, 2 usage, 130 cancelled.\n";

enum live_kind { LIVE_NONE, LIVE_SPINNER, LIVE_COUNTDOWN };

struct ctl {
	uv_loop_t loop;
	struct retryd_client *client;
	uv_signal_t sigint, sigterm;
	uv_timer_t tick;

	/* Options. */
	bool json, quiet, stream_live;
	bool stderr_tty, stdout_tty;
	enum progress_mode mode;
	double timeout_s;

	/* The daemon. */
	bool ready_failed;
	bool exited;
	int64_t exit_status;
	int term_signal;

	/* The prompt in flight. */
	bool running;        /* inside retryd_client_prompt_and_wait */
	bool in_backoff;
	int attempt, max_attempts;
	uint64_t backoff_end;
	uint64_t delay_ms;
	char *retry_error;   /* owned: the waiting retry's errorMessage */
	char *retry_class;   /* owned: its errorClass */
	bool parked;         /* the wait is a usage limit's reset (reason usage-reset) */
	char reset_local[64]; /* the reset's local time, for the park's line */
	bool countdown_kept; /* the countdown was left on screen: no redraws */
	/* A fleet hold (fleet_wait): its re-holds continue it in place. */
	bool in_hold;
	uint64_t hold_end;   /* when the current hold's timer ends (loop ms) */
	uint64_t hold_total; /* every hold's delayMs so far */
	char *hold_cause;    /* owned: the last fleet_wait's cause */
	bool spinning;       /* waiting for an attempt's first token */
	unsigned spin_frame;
	enum live_kind live; /* what the live line shows now */
	char live_text[1024];
	bool dirty;          /* stdout's last byte of the answer was not a LF */
	bool wrote_answer;
	int interrupts;
	int quit_status;     /* non-zero: leave with this status */
	bool stdout_broken;
	/* --continue / --resume: the run the daemon resumed on its own. */
	bool resuming;
	bool state_known;    /* get_state answered: the events before it are in */
	bool resumed_run;    /* an agent_start came before any prompt of ours */
	bool resumed_over;   /* its agent_end came */
	bool last_good;      /* the last assistant message ended well */
};

static void die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "retryctl: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'retryctl --help'.\n");
	exit(EXIT_USAGE);
}

/* ---- output ------------------------------------------------------------- */

static void out_write(struct ctl *t, const char *s, size_t len)
{
	if (len == 0 || t->stdout_broken)
		return;
	if (fwrite(s, 1, len, stdout) != len || fflush(stdout) != 0) {
		t->stdout_broken = true;
		return;
	}
	t->dirty = s[len - 1] != '\n';
	t->wrote_answer = true;
}

static void end_answer_line(struct ctl *t)
{
	if (t->dirty)
		out_write(t, "\n", 1);
}

/* The live line (live mode only): the spinner or the countdown, redrawn in
 * place with "\r\033[K". */
static void clear_live_line(struct ctl *t)
{
	if (t->live == LIVE_NONE)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	t->live = LIVE_NONE;
}

static void draw_live_line(struct ctl *t, enum live_kind kind, const char *line)
{
	if (t->live == kind && strcmp(line, t->live_text) == 0)
		return;
	/* A partial answer on the same terminal ends its line first. */
	if (t->stdout_tty && t->dirty)
		end_answer_line(t);
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	snprintf(t->live_text, sizeof(t->live_text), "%s", line);
	t->live = kind;
}

static int term_width(void)
{
	struct winsize ws;

	if (ioctl(2, TIOCGWINSZ, &ws) != 0)
		ws.ws_col = 0;
	return progress_width(ws.ws_col, getenv("COLUMNS"));
}

/* The wait as a line that stays: what plain mode prints at the start. */
static void retry_line(struct ctl *t, char *buf, size_t size, uint64_t ms, int width)
{
	struct progress_retry r = {
		.attempt = t->attempt,
		.max_attempts = t->max_attempts,
		.error = t->retry_error,
		.error_class = t->retry_class,
	};

	if (t->parked)
		progress_park_line(buf, size, ms, t->reset_local, width);
	else
		progress_retry_line(buf, size, &r, ms, width);
}

/* The reset's wall time in this terminal's zone: "23:00 AKST", with the
 * day when it is not today's. */
static void reset_local_time(char *buf, size_t size, uint64_t delay_ms)
{
	time_t now = time(NULL), at = now + (time_t)((delay_ms + 999) / 1000);
	struct tm tn, ta;

	buf[0] = '\0';
	if (localtime_r(&now, &tn) == NULL || localtime_r(&at, &ta) == NULL)
		return;
	strftime(buf, size, tn.tm_yday == ta.tm_yday && tn.tm_year == ta.tm_year ? "%H:%M %Z"
			    : "%a %d %b %H:%M %Z", &ta);
}

/* The countdown stops where it is and stays on screen: a finished wait, a
 * Ctrl-C, a message below it. */
static void keep_countdown(struct ctl *t)
{
	if (t->live != LIVE_COUNTDOWN)
		return;
	fputc('\n', stderr);
	fflush(stderr);
	t->live = LIVE_NONE;
	t->countdown_kept = true;
}

static void say(struct ctl *t, const char *fmt, const char *arg)
{
	char line[4096];

	keep_countdown(t);
	clear_live_line(t);
	/* A partial answer on the same terminal ends its line first. */
	if (t->stdout_tty && t->dirty)
		end_answer_line(t);
	snprintf(line, sizeof(line), fmt, arg);
	/* Daemon text (an error message) moves no cursor. */
	progress_clean(line);
	fprintf(stderr, "%s\n", line);
	fflush(stderr);
}

static void draw_countdown(struct ctl *t)
{
	char line[1024];
	uint64_t now = uv_now(&t->loop);
	uint64_t left = t->backoff_end > now ? t->backoff_end - now : 0;

	if (t->countdown_kept)
		return;
	/* The daemon's timer may fire a little after ours: a real wait never
	 * reads "0.0s". */
	if (left == 0 && t->delay_ms > 0)
		left = 1;
	retry_line(t, line, sizeof(line), left, term_width());
	draw_live_line(t, LIVE_COUNTDOWN, line);
}

/* A hold as a line: counting down, or (kept) as long as it was in all. */
static void hold_line(struct ctl *t, char *buf, size_t size, uint64_t ms, int width)
{
	progress_hold_line(buf, size, t->hold_cause, ms, width);
}

static void draw_hold(struct ctl *t)
{
	char line[1024];
	uint64_t now = uv_now(&t->loop);

	if (t->countdown_kept)
		return;
	hold_line(t, line, sizeof(line), t->hold_end > now ? t->hold_end - now : 1, term_width());
	draw_live_line(t, LIVE_COUNTDOWN, line);
}

/* The hold is over: its line stays, saying how long it held in all. */
static void end_hold(struct ctl *t)
{
	char line[1024];

	if (!t->in_hold)
		return;
	t->in_hold = false;
	if (t->live == LIVE_COUNTDOWN) {
		hold_line(t, line, sizeof(line), t->hold_total, term_width());
		draw_live_line(t, LIVE_COUNTDOWN, line);
		keep_countdown(t);
	}
	free(t->hold_cause);
	t->hold_cause = NULL;
}

static void set_spinning(struct ctl *t, bool on);

static void tick_cb(uv_timer_t *h)
{
	struct ctl *t = h->data;
	char line[128];

	/* A hold says nothing when it ends; a re-hold comes within moments
	 * of the timer, so the line waits a little before it is kept. */
	if (t->in_hold && uv_now(&t->loop) >= t->hold_end + HOLD_GRACE_MS) {
		end_hold(t);
		set_spinning(t, true);
	}
	if (t->in_hold) {
		draw_hold(t);
	} else if (t->in_backoff) {
		draw_countdown(t);
	} else if (t->spinning) {
		progress_spinner_line(line, sizeof(line), t->spin_frame++);
		/* A wrapped line would not be erased by "\r\033[K". */
		progress_cut(line, (size_t)term_width() - 1);
		draw_live_line(t, LIVE_SPINNER, line);
	}
}

static void set_spinning(struct ctl *t, bool on)
{
	t->spinning = on && t->mode == PROGRESS_LIVE && !t->quiet && !t->json;
	if (!t->spinning && t->live == LIVE_SPINNER)
		clear_live_line(t);
}

/* ---- events ------------------------------------------------------------- */

/* The wait is over: its line stays, as it read when the wait began. */
static void end_backoff(struct ctl *t)
{
	char line[1024];

	if (!t->in_backoff)
		return;
	t->in_backoff = false;
	if (t->live == LIVE_COUNTDOWN) {
		retry_line(t, line, sizeof(line), t->delay_ms, term_width());
		draw_live_line(t, LIVE_COUNTDOWN, line);
		keep_countdown(t);
	}
	free(t->retry_error);
	free(t->retry_class);
	t->retry_error = t->retry_class = NULL;
	t->parked = false;
}

static char *dup_string(json_t *v)
{
	const char *s = json_string_value(v);

	return s != NULL ? strdup(s) : NULL;
}

static void on_retry_start(struct ctl *t, json_t *ev)
{
	uint64_t delay = (uint64_t)json_number_value(json_object_get(ev, "delayMs"));
	char line[4096];

	end_backoff(t);
	set_spinning(t, false);
	t->in_backoff = true;
	t->countdown_kept = false;
	t->attempt = (int)json_integer_value(json_object_get(ev, "attempt"));
	t->max_attempts = (int)json_integer_value(json_object_get(ev, "maxAttempts"));
	t->backoff_end = uv_now(&t->loop) + delay;
	t->delay_ms = delay;
	t->retry_error = dup_string(json_object_get(ev, "errorMessage"));
	/* "overload" says more than "retryable" about a 529. */
	t->retry_class = json_is_true(json_object_get(ev, "overload"))
				 ? strdup("overload")
				 : dup_string(json_object_get(ev, "errorClass"));
	t->parked = json_is_string(json_object_get(ev, "reason")) &&
		    strcmp(json_string_value(json_object_get(ev, "reason")), "usage-reset") == 0;
	if (t->parked)
		reset_local_time(t->reset_local, sizeof(t->reset_local), delay);
	if (t->quiet)
		return;
	if (t->mode == PROGRESS_LIVE) {
		draw_countdown(t);
	} else {
		retry_line(t, line, sizeof(line), delay, 0);
		say(t, "%s", line);
	}
}

static void on_fleet_wait(struct ctl *t, json_t *ev)
{
	uint64_t delay = (uint64_t)json_number_value(json_object_get(ev, "delayMs"));
	const char *cause = json_string_value(json_object_get(ev, "cause"));
	char line[4096];

	end_backoff(t);
	set_spinning(t, false);
	if (!t->in_hold) {
		t->in_hold = true;
		t->hold_total = 0;
		t->countdown_kept = false;
	}
	t->hold_total += delay;
	t->hold_end = uv_now(&t->loop) + delay;
	free(t->hold_cause);
	t->hold_cause = cause != NULL ? strdup(cause)
				      : dup_string(json_object_get(ev, "reason"));
	if (t->quiet)
		return;
	if (t->mode == PROGRESS_LIVE) {
		draw_hold(t);
	} else {
		/* Off a terminal every hold is a line: they add up to the wait. */
		hold_line(t, line, sizeof(line), delay, 0);
		say(t, "%s", line);
	}
}

/* A parked prompt's heartbeat: the countdown follows the daemon's clock;
 * off a terminal, one plain line per beat says what is left. */
static void on_usage_wait(struct ctl *t, json_t *ev)
{
	uint64_t left = (uint64_t)json_number_value(json_object_get(ev, "remainingMs"));
	char line[256];

	t->backoff_end = uv_now(&t->loop) + left;
	if (t->quiet || t->mode == PROGRESS_LIVE)
		return;
	retry_line(t, line, sizeof(line), left, 0);
	say(t, "%s", line);
}

static bool is_assistant(json_t *m)
{
	const char *role = json_string_value(json_object_get(m, "role"));

	return role != NULL && strcmp(role, "assistant") == 0;
}

static void on_message_end(struct ctl *t, json_t *m)
{
	const char *stop = json_string_value(json_object_get(m, "stopReason"));
	bool good = stop != NULL && strcmp(stop, "error") != 0 && strcmp(stop, "aborted") != 0;

	if (!is_assistant(m))
		return;
	t->last_good = good;
	if (!t->stream_live && good) {
		/* Buffered mode: only a good attempt's text reaches stdout. The
		 * message carries the whole text, whatever the update shape. */
		char *text = retryd_message_text(m);

		if (text != NULL)
			out_write(t, text, strlen(text));
		free(text);
	}
	/* After a failed attempt's partial text too: a retry starts on a line
	 * of its own. */
	end_answer_line(t);
}

static void on_event(struct retryd_client *c, const char *type, json_t *ev, void *ctx)
{
	struct ctl *t = ctx;

	(void)c;
	if (strcmp(type, "fleet_wait") == 0) {
		on_fleet_wait(t, ev);
		return;
	}
	if (t->in_hold && strcmp(type, "message_start") == 0) {
		/* The held attempt went: wait for its first token. */
		end_hold(t);
		set_spinning(t, true);
	} else if (strcmp(type, "turn_end") == 0 || strcmp(type, "agent_end") == 0 ||
		   strncmp(type, "auto_retry_", 11) == 0 || strcmp(type, "message_update") == 0) {
		end_hold(t);
	}
	if (strcmp(type, "auto_retry_start") == 0) {
		on_retry_start(t, ev);
		return;
	}
	if (strcmp(type, "agent_start") == 0 && t->resuming && !t->state_known)
		t->resumed_run = true;
	if (strcmp(type, "agent_end") == 0 && t->resumed_run)
		t->resumed_over = true;
	if (strcmp(type, "usage_wait") == 0 && t->in_backoff && t->parked) {
		on_usage_wait(t, ev);
		return;
	}
	if (strcmp(type, "turn_start") == 0 && t->in_backoff) {
		/* The next attempt: wait for its first token. */
		end_backoff(t);
		set_spinning(t, true);
	} else if (strcmp(type, "auto_retry_end") == 0 || strcmp(type, "agent_end") == 0) {
		end_backoff(t);
		if (strcmp(type, "agent_end") == 0)
			set_spinning(t, false);
	}
	if (t->json)
		return;
	if (strcmp(type, "message_update") == 0) {
		json_t *ame = json_object_get(ev, "assistantMessageEvent");
		const char *sub = json_string_value(json_object_get(ame, "type"));
		json_t *delta = json_object_get(ame, "delta");

		if (sub == NULL || strcmp(sub, "text_delta") != 0 || !json_is_string(delta))
			return;
		set_spinning(t, false);
		/* Buffered mode waits for message_end instead. */
		if (t->stream_live)
			out_write(t, json_string_value(delta), json_string_length(delta));
	} else if (strcmp(type, "message_end") == 0) {
		on_message_end(t, json_object_get(ev, "message"));
		/* The daemon's start warning names the file; this says why now. */
		if (json_object_get(ev, "retrySkipped") != NULL && !t->quiet)
			say(t, "%s", "retryctl: retries are off (set_auto_retry or retry.enabled)");
	}
}

static void on_line(struct retryd_client *c, const char *line, size_t len, void *ctx)
{
	struct ctl *t = ctx;

	(void)c;
	out_write(t, line, len);
	out_write(t, "\n", 1);
}

static void on_ready(struct retryd_client *c, int status, const char *error, void *ctx)
{
	struct ctl *t = ctx;

	(void)c;
	(void)error;
	if (status != 0)
		t->ready_failed = true;
}

static void on_exit_cb(struct retryd_client *c, int64_t status, int sig, void *ctx)
{
	struct ctl *t = ctx;

	(void)c;
	t->exited = true;
	t->exit_status = status;
	t->term_signal = sig;
}

static void on_error(struct retryd_client *c, int err, const char *msg, void *ctx)
{
	struct ctl *t = ctx;

	(void)c;
	(void)err;
	if (!t->quiet)
		say(t, "retryctl: %s", msg);
}

/* ---- Ctrl-C ------------------------------------------------------------- */

static void quit(struct ctl *t, int status)
{
	if (t->quit_status == 0)
		t->quit_status = status;
	end_backoff(t);
	if (t->client != NULL) {
		retryd_client_close(t->client, NULL, NULL);
		t->client = NULL;
	}
}

static void abort_retry_cb(struct retryd_client *c, const struct retryd_result *r, void *ctx)
{
	struct ctl *t = ctx;

	/* The backoff ended before abort_retry arrived: the retry is running, so
	 * stop that instead. */
	if (r->status == 0 && t->running && !t->in_backoff && !t->in_hold)
		retryd_client_abort(c, NULL, NULL);
}

static void sigint_cb(uv_signal_t *h, int signum)
{
	struct ctl *t = h->data;

	(void)signum;
	if (t->client == NULL)
		return;
	if (++t->interrupts >= 2 || !t->running) {
		say(t, "%s", "retryctl: interrupted");
		quit(t, EXIT_CANCELLED);
		return;
	}
	if (t->in_hold) {
		say(t, "%s", "retryctl: cancelling the fleet wait (Ctrl-C again to quit)");
		retryd_client_abort_retry(t->client, abort_retry_cb, t);
	} else if (t->in_backoff) {
		say(t, "%s", "retryctl: cancelling the retry (Ctrl-C again to quit)");
		retryd_client_abort_retry(t->client, abort_retry_cb, t);
	} else {
		say(t, "%s", "retryctl: aborting (Ctrl-C again to quit)");
		retryd_client_abort(t->client, NULL, NULL);
	}
}

static void sigterm_cb(uv_signal_t *h, int signum)
{
	quit(h->data, 128 + signum);
}

static void watch_signals(struct ctl *t, bool on)
{
	if (on) {
		uv_signal_start(&t->sigint, sigint_cb, SIGINT);
		uv_signal_start(&t->sigterm, sigterm_cb, SIGTERM);
	} else {
		/* Back to the default actions while retryctl waits for input. */
		uv_signal_stop(&t->sigint);
		uv_signal_stop(&t->sigterm);
	}
}

/* ---- one prompt --------------------------------------------------------- */

static int run_prompt(struct ctl *t, const char *prompt)
{
	struct retryd_run_result res;
	uint64_t timeout_ms = (uint64_t)(t->timeout_s * 1000.0);
	char line[1024];
	int rc, status;

	t->running = true;
	t->interrupts = 0;
	t->dirty = false;
	watch_signals(t, true);
	set_spinning(t, true);
	t->spin_frame = 0;
	if (t->mode == PROGRESS_LIVE && !t->quiet)
		uv_timer_start(&t->tick, tick_cb, TICK_MS, TICK_MS);
	rc = retryd_client_prompt_and_wait(t->client, prompt, NULL, timeout_ms, &res);
	t->running = false;
	uv_timer_stop(&t->tick);
	set_spinning(t, false);
	end_hold(t);
	end_backoff(t);
	if (!t->json)
		end_answer_line(t);

	if (t->quit_status != 0) {
		status = t->quit_status;
	} else if (rc == 0 && res.answered) {
		status = EXIT_ANSWERED;
	} else if (t->interrupts > 0 || (rc == 0 && res.cancelled)) {
		say(t, "retryctl: cancelled: %s", res.error ? res.error : "Aborted");
		status = EXIT_CANCELLED;
	} else if (rc == 0) {
		if (res.retries > 0) {
			progress_failed_line(line, sizeof(line), res.retries, res.error);
			say(t, "%s", line);
		} else {
			say(t, "retryctl: %s", res.error ? res.error : "no answer");
		}
		status = EXIT_FAILED;
	} else if (rc == RETRYD_EREFUSED) {
		say(t, "retryctl: retryd refused the prompt: %s", res.error);
		status = EXIT_FAILED;
	} else if (rc == UV_ETIMEDOUT) {
		snprintf(line, sizeof(line), "retryctl: no answer within %g s", t->timeout_s);
		say(t, "%s", line);
		status = EXIT_FAILED;
	} else {
		say(t, "retryctl: %s", res.error ? res.error : retryd_strerror(rc));
		/* retryd refused its command line (it said why on stderr). */
		status = t->ready_failed && t->exited && t->term_signal == 0 && t->exit_status == 2 ?
			 EXIT_USAGE : EXIT_FAILED;
	}
	retryd_run_result_release(&res);
	if (t->stdout_broken && status == EXIT_ANSWERED)
		status = EXIT_FAILED;
	return status;
}

static void on_resume_state(struct retryd_client *c, const struct retryd_result *r, void *ctx)
{
	struct ctl *t = ctx;

	(void)c;
	(void)r;
	t->state_known = true;
}

/* --continue/--resume: a session left parked is resumed by the daemon
 * itself, right after its ready line; its run is waited for (the countdown,
 * Ctrl-C as for a prompt of ours) and its answer printed before any prompt.
 * EXIT_ANSWERED when there was none to wait for. */
static int run_resumed(struct ctl *t)
{
	int status = EXIT_ANSWERED;

	if (retryd_client_get_state(t->client, on_resume_state, t) != 0)
		return EXIT_FAILED;
	while (!t->state_known && retryd_client_is_running(t->client) && t->quit_status == 0)
		uv_run(&t->loop, UV_RUN_ONCE);
	if (!t->resumed_run)
		return t->quit_status != 0 ? t->quit_status : status;
	t->running = true;
	t->interrupts = 0;
	watch_signals(t, true);
	if (t->mode == PROGRESS_LIVE && !t->quiet)
		uv_timer_start(&t->tick, tick_cb, TICK_MS, TICK_MS);
	while (!t->resumed_over && retryd_client_is_running(t->client) && t->quit_status == 0)
		uv_run(&t->loop, UV_RUN_ONCE);
	t->running = false;
	uv_timer_stop(&t->tick);
	end_backoff(t);
	if (!t->json)
		end_answer_line(t);
	if (t->quit_status != 0)
		status = t->quit_status;
	else if (!t->resumed_over || !t->last_good)
		status = t->interrupts > 0 ? EXIT_CANCELLED : EXIT_FAILED;
	if (status == EXIT_FAILED)
		say(t, "%s", "retryctl: the resumed prompt got no answer");
	return status;
}

/* Prompts from stdin, one per line; blank lines are skipped. */
static int run_stdin(struct ctl *t)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int worst = EXIT_ANSWERED;

	watch_signals(t, false);
	while ((n = getline(&line, &cap, stdin)) >= 0) {
		int status;

		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (strspn(line, " \t") == (size_t)n)
			continue;
		status = run_prompt(t, line);
		watch_signals(t, false);
		if (status == EXIT_CANCELLED || status == EXIT_USAGE || t->quit_status != 0 ||
		    t->client == NULL || !retryd_client_is_running(t->client)) {
			worst = status;
			break;
		}
		if (status != EXIT_ANSWERED)
			worst = status;
	}
	free(line);
	return worst;
}

/* ---- main --------------------------------------------------------------- */

struct args {
	const char **daemon;
	size_t n;
	const char *prompt;
	const char *retryd;
	bool has_session;
};

static void parse_args(int argc, char **argv, struct ctl *t, struct args *a)
{
	static const char *const passed[] = {
		"--provider", "--model", "--settings", "--set", "--session", "--sim-plan", "--mode",
		"--resume", NULL,
	};
	bool options_done = false;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = NULL, *eq;
		char name[32];
		size_t k;

		if (options_done || arg[0] != '-' || strcmp(arg, "-") == 0) {
			if (a->prompt != NULL)
				die_usage("%s", "one PROMPT argument at most (quote it)");
			a->prompt = arg;
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			options_done = true;
			continue;
		}
		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			fputs(usage_text, stdout);
			exit(0);
		}
		if (strcmp(arg, "-V") == 0 || strcmp(arg, "--version") == 0) {
			printf("retryctl %s\n", RETRYD_VERSION);
			exit(0);
		}
		if (strcmp(arg, "--json") == 0) {
			t->json = true;
			continue;
		}
		if (strcmp(arg, "--stream") == 0) {
			t->stream_live = true;
			continue;
		}
		if (strcmp(arg, "-q") == 0 || strcmp(arg, "--quiet") == 0) {
			t->quiet = true;
			continue;
		}
		if (strcmp(arg, "--no-session") == 0 || strcmp(arg, "--continue") == 0) {
			a->daemon[a->n++] = arg;
			a->has_session = true;
			t->resuming = t->resuming || arg[2] == 'c';
			continue;
		}
		eq = strchr(arg, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		if (eq != NULL)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[i + 1];
		if (strcmp(name, "--retryd") == 0 || strcmp(name, "--timeout") == 0) {
			char *end;

			if (val == NULL)
				die_usage("option '%s' needs a value", name);
			if (eq == NULL)
				i++;
			if (name[2] == 'r') {
				a->retryd = val;
				continue;
			}
			t->timeout_s = strtod(val, &end);
			if (*end != '\0' || end == val || !(t->timeout_s > 0))
				die_usage("--timeout wants a number of seconds above 0, not '%s'", val);
			continue;
		}
		for (k = 0; passed[k] != NULL && strcmp(passed[k], name) != 0; k++)
			;
		if (passed[k] == NULL)
			die_usage("unknown option '%s'", arg);
		if (val == NULL)
			die_usage("option '%s' needs a value", name);
		if (strcmp(name, "--session") == 0 || strcmp(name, "--resume") == 0)
			a->has_session = true;
		if (strcmp(name, "--resume") == 0)
			t->resuming = true;
		/* Passed on as given; retryd checks the values. */
		a->daemon[a->n++] = arg;
		if (eq == NULL)
			a->daemon[a->n++] = argv[++i];
	}
}

struct fleet_reply {
	bool done;
	bool ok;
	json_t *data;   /* owned */
	char error[512];
};

static void on_fleet_reply(struct retryd_client *c, const struct retryd_result *r, void *ctx)
{
	struct fleet_reply *w = ctx;

	(void)c;
	w->done = true;
	w->ok = r->success;
	if (r->success && r->data != NULL)
		w->data = json_incref(r->data);
	else
		snprintf(w->error, sizeof(w->error), "%s", r->error ? r->error : "no answer");
}

/* retryctl fleet clear|status: one command, its answer in words. */
static int run_fleet(struct ctl *t, const char *sub)
{
	struct fleet_reply w = { 0 };
	bool clear = strcmp(sub, "clear") == 0;
	json_t *cmd = json_pack("{s:s}", "type", clear ? "fleet_clear" : "get_state"), *f;

	if (cmd == NULL || retryd_client_send(t->client, cmd, on_fleet_reply, &w) != 0) {
		fprintf(stderr, "retryctl: %s\n", retryd_client_last_error(t->client));
		return EXIT_FAILED;
	}
	while (!w.done)
		uv_run(&t->loop, UV_RUN_ONCE);
	if (!w.ok) {
		fprintf(stderr, "retryctl: fleet %s: %s\n", sub, w.error);
		return EXIT_FAILED;
	}
	if (clear) {
		printf("fleet cleared: %s (%s mode, %lld record(s))\n",
		       json_string_value(json_object_get(w.data, "scope")),
		       json_string_value(json_object_get(w.data, "mode")),
		       (long long)json_integer_value(json_object_get(w.data, "cleared")));
	} else {
		f = json_object_get(w.data, "fleet");
		printf("mode %s, scope %s\n", json_string_value(json_object_get(f, "mode")),
		       json_string_value(json_object_get(f, "scope")));
		if (json_object_get(f, "blockedForMs") != NULL)
			printf("blocked for %.1f s more (the server's word)\n",
			       (double)json_integer_value(json_object_get(f, "blockedForMs")) / 1000.0);
		else
			printf("not blocked\n");
		if (json_is_true(json_object_get(f, "open")))
			printf("failing for everyone: one probe at a time\n");
		if (json_object_get(f, "rpm") != NULL)
			printf("paced at %lld requests per minute\n",
			       (long long)json_integer_value(json_object_get(f, "rpm")));
		if (json_is_true(json_object_get(f, "degraded")))
			printf("redis unreachable: deciding locally\n");
	}
	json_decref(w.data);
	return EXIT_ANSWERED;
}

static void closed_cb(struct retryd_client *c, void *ctx)
{
	(void)c;
	(void)ctx;
}

static void close_walk_cb(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* stdin, stdout or stderr closed (`retryctl hi 2>&-`): /dev/null takes its
 * place before anything opens an fd, else the next fd opened lands on 0-2 and
 * libuv aborts when it closes it. Returns -1 when that cannot be done. */
static int fill_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		int nul;

		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		nul = open("/dev/null", O_RDWR);
		if (nul < 0)
			return -1;
		/* The lowest free fd is this one unless a lower one was also
		 * closed, which the loop has filled already. */
		if (nul != fd) {
			int rc = dup2(nul, fd);

			close(nul);
			if (rc < 0)
				return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ctl t;
	struct args a = { 0 };
	struct retryd_client_options o = { 0 };
	const char **daemon_args;
	const char *fleet = NULL;
	int status;

	if (fill_std_fds() != 0) {
		/* Written only if stderr is open. */
		fprintf(stderr, "retryctl: cannot open /dev/null for a closed stdin, stdout or stderr: %s\n",
			strerror(errno));
		return EXIT_FAILED;
	}
	/* The user's arguments and at most four of our own, then NULL. */
	daemon_args = calloc((size_t)argc + 4, sizeof(*daemon_args));
	if (daemon_args == NULL) {
		fprintf(stderr, "retryctl: out of memory\n");
		return EXIT_FAILED;
	}
	memset(&t, 0, sizeof(t));
	a.daemon = daemon_args;
	if (argc >= 2 && strcmp(argv[1], "fleet") == 0) {
		if (argc < 3 || (strcmp(argv[2], "clear") != 0 && strcmp(argv[2], "status") != 0))
			die_usage("%s", "fleet wants clear or status");
		fleet = argv[2];
		/* The retryd options after the subcommand. */
		parse_args(argc - 2, argv + 2, &t, &a);
		if (a.prompt != NULL)
			die_usage("%s", "fleet takes no prompt");
	} else {
		parse_args(argc, argv, &t, &a);
	}
	if (!t.json) {
		/* Deltas only: the full shape repeats the whole answer in every update.
		 * First, so that a --set of the user's comes later and wins. */
		memmove(a.daemon + 2, a.daemon, a.n * sizeof(*a.daemon));
		a.daemon[0] = "--set";
		a.daemon[1] = "rpc.messageUpdates=delta";
		a.n += 2;
	}
	if (!a.has_session)
		a.daemon[a.n++] = "--no-session";
	a.daemon[a.n] = NULL;

	t.stderr_tty = isatty(2);
	t.stdout_tty = isatty(1);
	t.mode = progress_mode_pick(getenv("NO_COLOR"), getenv("TERM"), t.stderr_tty);
	if (t.stdout_tty)
		t.stream_live = true;
	signal(SIGPIPE, SIG_IGN);

	if (uv_loop_init(&t.loop) != 0) {
		fprintf(stderr, "retryctl: cannot start an event loop\n");
		free(daemon_args);
		return EXIT_FAILED;
	}
	uv_signal_init(&t.loop, &t.sigint);
	uv_signal_init(&t.loop, &t.sigterm);
	uv_timer_init(&t.loop, &t.tick);
	t.sigint.data = t.sigterm.data = t.tick.data = &t;

	o.path = a.retryd;
	o.args = a.daemon;
	o.on_event = on_event;
	o.on_ready = on_ready;
	o.on_exit = on_exit_cb;
	o.on_error = on_error;
	o.on_line = t.json ? on_line : NULL;
	o.ctx = &t;
	t.client = retryd_client_new(&t.loop, &o);
	if (t.client == NULL) {
		fprintf(stderr, "retryctl: out of memory\n");
		status = EXIT_FAILED;
	} else if (retryd_client_start(t.client) != 0) {
		fprintf(stderr, "retryctl: %s\n", retryd_client_last_error(t.client));
		status = EXIT_FAILED;
	} else if (fleet != NULL) {
		status = run_fleet(&t, fleet);
	} else if (t.resuming && (status = run_resumed(&t)) != EXIT_ANSWERED) {
		/* The resumed prompt failed or was cancelled: nothing more. */
	} else if (t.resumed_run && a.prompt == NULL) {
		/* Nothing more to send: the resumed prompt was the work. */
	} else if (a.prompt != NULL) {
		status = run_prompt(&t, a.prompt);
	} else {
		status = run_stdin(&t);
	}

	/* Let an idle daemon leave on its own (stdin EOF), else stop it. */
	watch_signals(&t, true);
	if (t.client != NULL && status == EXIT_ANSWERED && retryd_client_end_input(t.client) == 0) {
		while (t.client != NULL && retryd_client_is_running(t.client) && t.quit_status == 0)
			uv_run(&t.loop, UV_RUN_ONCE);
	}
	if (t.client != NULL)
		retryd_client_close(t.client, closed_cb, NULL);
	t.client = NULL;
	uv_signal_stop(&t.sigint);
	uv_signal_stop(&t.sigterm);
	uv_timer_stop(&t.tick);
	uv_run(&t.loop, UV_RUN_DEFAULT);
	uv_walk(&t.loop, close_walk_cb, NULL);
	uv_run(&t.loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&t.loop) != 0)
		fprintf(stderr, "retryctl: warning: handles left open\n");
	if (t.quit_status != 0)
		status = t.quit_status;
	free(daemon_args);
	return status;
}

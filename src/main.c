/* retryd — entry point: options, settings, the loop, and orderly shutdown. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "base/errbuf.h"
#include "base/random.h"
#include "core/fleet.h"
#include "io/redis.h"
#include "core/builtins.h"
#include "core/classify.h"
#include "provider/cli/cli_profile.h"
#include "io/clock_uv.h"
#include "shared/lines.h"
#include "core/journal.h"
#include "base/log.h"
#include "base/secret.h"
#include "io/http.h"
#include "provider/cli/provider_cli.h"
#include "provider/http/provider_http.h"
#include "provider/provider_sim.h"
#include "io/reader.h"
#include "retryd/protocol.h"
#include "rpc.h"
#include "core/session.h"
#include "core/settings.h"
#include "io/writer.h"

/* How long SIGTERM waits for output to drain before leaving anyway. */
#define SHUTDOWN_GRACE_MS 800

struct options {
	const char *provider;
	const char *model;
	const char *settings_path;
	const char *session_file;
	const char *session_dir;   /* --session-dir */
	const char *resume_file;   /* --resume */
	bool continue_newest;      /* --continue */
	bool no_session;
	const char *sim_plan;
	const char *classify_text; /* --classify: judge this text and exit */
	const char **sets;
	size_t nsets;
};

struct daemon {
	uv_loop_t *loop;
	struct settings settings;
	struct classify *classify;
	struct clock_uv clock;
	struct provider *provider;
	struct http_client *http;   /* NULL with the sim provider */
	struct fleet *fleet;        /* what this daemon shares with the others */
	char *resume_path;          /* --continue's or --resume's file, or NULL */
	json_t *resume_messages;    /* what it holds (journal_load) */
	char resume_id[40];
	struct session session;
	struct rpc rpc;
	struct retryd_lines framer;
	struct reader *reader;
	struct writer *writer;
	uv_signal_t sigterm, sigint;
	uv_timer_t grace;
	bool input_done;
	bool exiting;
	bool closed;
	bool handles_ready; /* signals and grace timer initialized */
};

static const char usage_text[] =
	"usage: retryd [--mode rpc] [--provider NAME] [--model ID] [--settings FILE]\n"
	"              [--set KEY=VALUE]... [--session FILE | --no-session]\n"
	"              [--session-dir DIR] [--continue | --resume FILE]\n"
	"              [--sim-plan JSON] [--help] [--version]\n"
	"       retryd [--settings FILE] [--set KEY=VALUE]... --classify TEXT\n"
	"       retryd config [--settings FILE] [--set KEY=VALUE]...\n"
	"       retryd config --check FILE\n"
	"\n"
	"Speaks the pi RPC protocol (one JSON object per line) on stdin/stdout and\n"
	"retries failed attempts with backoff, reporting auto_retry_start/end events.\n"
	"\n"
	"  --mode rpc         accepted for pi clients; rpc is the only mode\n"
	"  --provider NAME    the backend: sim (built in, scripted), an HTTP API (openai,\n"
	"                     anthropic, google, openrouter, ollama) or an agent CLI\n"
	"                     (claude, codex, gemini, pi), or any providers.NAME in the\n"
	"                     settings\n"
	"  --model ID         the model to use\n"
	"  --settings FILE    settings JSON (default $XDG_CONFIG_HOME/retryd/settings.json,\n"
	"                     which may be absent; a FILE named here must exist)\n"
	"  --set KEY=VALUE    override one setting for this process, e.g. retry.baseDelayMs=50;\n"
	"                     an unknown KEY, here or in the file, is an error\n"
	"  --session FILE     append the session to FILE (JSONL)\n"
	"  --no-session       keep no session file\n"
	"  --session-dir DIR  where session files go (default $XDG_STATE_HOME/retryd/sessions,\n"
	"                     else ~/.local/state/retryd/sessions)\n"
	"  --continue         resume the newest session file in the session directory\n"
	"  --resume FILE      resume the session in FILE: its messages are the context,\n"
	"                     and the session goes on in that file\n"
	"  --sim-plan JSON    the sim provider's steps, e.g. '[{\"error\":\"503\"},{\"text\":\"hi\"}]'\n"
	"  --classify TEXT    print how the retry classifier, with these settings, judges an\n"
	"                     error text ({\"errorClass\",\"overload\",\"hintMs\",\"rule\"}) and exit\n"
	"  config             print the effective settings, one per line, as\n"
	"                     ORIGIN<TAB>KEY=JSON; ORIGIN is default, built-in, file:PATH\n"
	"                     (by hand or persisted by set_auto_retry/set_retry_policy)\n"
	"                     or --set\n"
	"  config --check FILE  check a settings file: \"FILE: ok\" (exit 0), else every\n"
	"                     unknown key and wrong value, one per line (exit 1)\n"
	"\n"
	"Logs go to stderr; RETRYD_LOG=error|warn|info|debug sets how much.\n";

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "retryd: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'retryd --help'.\n");
	return 2;
}

/* Returns -1 to continue, else an exit status. */
static int parse_options(int argc, char **argv, struct options *o)
{
	static const char *const with_value[] = {
		"--mode", "--provider", "--model", "--settings", "--set", "--session", "--sim-plan",
		"--classify", "--session-dir", "--resume", NULL,
	};

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = NULL, *eq;
		char name[32];
		size_t k;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (strcmp(arg, "--version") == 0) {
			printf("retryd %s\n", RETRYD_VERSION);
			return 0;
		}
		if (strcmp(arg, "--no-session") == 0) {
			o->no_session = true;
			continue;
		}
		if (strcmp(arg, "--continue") == 0) {
			o->continue_newest = true;
			continue;
		}
		eq = strchr(arg, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		for (k = 0; with_value[k] != NULL && strcmp(with_value[k], name) != 0; k++)
			;
		if (with_value[k] == NULL)
			return usage_error("unknown option '%s'", arg);
		if (eq != NULL)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			return usage_error("option '%s' needs a value", arg);

		if (strcmp(name, "--mode") == 0) {
			if (strcmp(val, "rpc") != 0)
				return usage_error("unsupported mode '%s' (only rpc)", val);
		} else if (strcmp(name, "--provider") == 0) {
			o->provider = val;
		} else if (strcmp(name, "--model") == 0) {
			o->model = val;
		} else if (strcmp(name, "--settings") == 0) {
			o->settings_path = val;
		} else if (strcmp(name, "--session") == 0) {
			o->session_file = val;
		} else if (strcmp(name, "--session-dir") == 0) {
			o->session_dir = val;
		} else if (strcmp(name, "--resume") == 0) {
			o->resume_file = val;
		} else if (strcmp(name, "--sim-plan") == 0) {
			o->sim_plan = val;
		} else if (strcmp(name, "--classify") == 0) {
			o->classify_text = val;
		} else {
			o->sets[o->nsets++] = val;
		}
	}
	if (o->session_file != NULL && o->no_session)
		return usage_error("%s", "--session and --no-session exclude each other");
	if (o->continue_newest && o->resume_file != NULL)
		return usage_error("%s", "--continue and --resume exclude each other");
	if ((o->continue_newest || o->resume_file != NULL) &&
	    (o->session_file != NULL || o->no_session))
		return usage_error("%s", o->continue_newest
				   ? "--continue goes on in the resumed file: it excludes --session "
				     "and --no-session"
				   : "--resume goes on in the resumed file: it excludes --session "
				     "and --no-session");
	if (o->session_dir != NULL && (o->session_file != NULL || o->no_session))
		return usage_error("%s", "--session-dir is for new session files: it excludes "
				   "--session and --no-session");
	return -1;
}

/* An explicit --settings must name a file (a typo there would otherwise
 * run on the defaults and persist into a new file); the default path may be
 * absent. Returns 0, or 1 having said why. */
static int check_settings_path(const char *path)
{
	struct stat st;

	if (path == NULL || stat(path, &st) == 0 || errno != ENOENT)
		return 0;
	fprintf(stderr, "retryd: settings file %s: no such file (--settings names a file that "
		"must exist; leave --settings out to use the default path)\n", path);
	return 1;
}

/* Settings, --set, --sim-plan, and everything compiled from them. */
static int configure(struct daemon *d, const struct options *o)
{
	char err[1024];
	json_t *builtins;
	int rc;

	if (check_settings_path(o->settings_path) != 0)
		return 1;
	builtins = builtins_settings();
	if (builtins == NULL) {
		fprintf(stderr, "retryd: settings: out of memory\n");
		return 1;
	}
	rc = settings_load(&d->settings, builtins, o->settings_path, err, sizeof(err));
	json_decref(builtins);
	if (rc != 0) {
		fprintf(stderr, "retryd: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < o->nsets; i++) {
		if (settings_override(&d->settings, o->sets[i], err, sizeof(err)) != 0) {
			fprintf(stderr, "retryd: %s\n", err);
			return 1;
		}
	}
	if (o->sim_plan != NULL) {
		json_error_t jerr;
		json_t *plan = json_loads(o->sim_plan, 0, &jerr);

		if (plan == NULL) {
			fprintf(stderr, "retryd: --sim-plan: not valid JSON: %s (at character %d)\n",
				jerr.text, jerr.position);
			return 1;
		}
		if (settings_override_value(&d->settings, "sim.plan", plan, err, sizeof(err)) != 0) {
			fprintf(stderr, "retryd: --sim-plan: %s\n", err);
			return 1;
		}
	}
	if (provider_sim_check_plan(settings_get(&d->settings, "sim.plan"), err, sizeof(err)) != 0) {
		fprintf(stderr, "retryd: %s\n", err);
		return 1;
	}
	d->classify = classify_new(settings_get(&d->settings, "retry"), err, sizeof(err));
	if (d->classify == NULL) {
		fprintf(stderr, "retryd: %s\n", err);
		return 1;
	}
	return 0;
}

static void close_all(struct daemon *d);

/* --classify: the classifier's verdict on one text, as classify_error gives
 * it, on stdout. */
static int classify_and_print(struct daemon *d, const char *text)
{
	struct timespec ts;
	struct classify_input in = { .text = text, .len = strlen(text) };
	struct classify_result r;
	json_t *out;
	char *line;

	clock_gettime(CLOCK_REALTIME, &ts);
	in.now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	classify_decide(d->classify, &in, &r);
	out = classify_result_json(&r);
	line = out ? json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(out);
	if (line == NULL) {
		fprintf(stderr, "retryd: --classify: out of memory\n");
		return 1;
	}
	puts(line);
	free(line);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* `retryd config`: whether a member named `name` holds a secret string:
 * apiKey, a password, or an environment variable or header with a secret's
 * name (OPENAI_API_KEY, X-Api-Key). A camelCase field path such as
 * inputTokens or apiKeyEnv names where a value is, not a secret. */
static bool secret_key(const char *name)
{
	size_t n = strlen(name);
	bool lower = false;

	if (strcasecmp(name, "apiKey") == 0 || strcasecmp(name, "password") == 0)
		return true;
	for (size_t i = 0; i < n; i++)
		lower = lower || (name[i] >= 'a' && name[i] <= 'z');
	return secret_name(name, n) && (strpbrk(name, "_-") != NULL || !lower);
}

/* "scheme://user:password@host" loses what stands before the '@'. */
static void mask_userinfo(json_t *v)
{
	const char *s = json_string_value(v), *start, *at;
	char *masked;
	size_t n;

	start = s != NULL ? strstr(s, "://") : NULL;
	if (start == NULL)
		return;
	start += 3;
	at = strchr(start, '@');
	if (at == NULL || memchr(start, '/', (size_t)(at - start)) != NULL)
		return;
	n = (size_t)(start - s) + strlen(SECRET_MASK) + strlen(at) + 1;
	masked = malloc(n);
	if (masked == NULL)
		return;
	snprintf(masked, n, "%.*s%s%s", (int)(start - s), s, SECRET_MASK, at);
	json_string_set(v, masked);
	free(masked);
}

/* Masks, in place, every string that a secret's name holds (name: the
 * member's own name, or NULL) and every key-shaped token. */
static void mask_config_value(json_t *v, const char *name)
{
	const char *member;
	json_t *child;
	size_t i;

	if (json_is_string(v)) {
		if (name != NULL && secret_key(name))
			json_string_set(v, SECRET_MASK);
		else
			mask_userinfo(v);
	} else if (json_is_object(v)) {
		json_object_foreach(v, member, child)
			mask_config_value(child, member);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, child)
			mask_config_value(child, name);
	}
}

/* One line of `retryd config`: ORIGIN<TAB>KEY=JSON. */
static void print_setting(void *ctx, const char *key, const json_t *value,
			  enum settings_origin origin)
{
	const struct settings *s = ctx;
	const char *dot = strrchr(key, '.');
	json_t *copy = json_deep_copy(value);
	char *text;

	if (copy == NULL)
		return;
	mask_config_value(copy, dot != NULL ? dot + 1 : key);
	secret_mask_json(copy);
	text = json_dumps(copy, JSON_ENCODE_ANY | JSON_COMPACT | JSON_PRESERVE_ORDER |
			  JSON_REAL_PRECISION(15));
	json_decref(copy);
	if (text == NULL)
		return;
	if (origin == SETTINGS_ORIGIN_FILE)
		printf("file:%s\t%s=%s\n", s->path, key, text);
	else
		printf("%s\t%s=%s\n", settings_origin_name(origin), key, text);
	free(text);
}

/* `retryd config --check FILE`: every problem on stderr, one per line. */
static int config_check(const char *path)
{
	json_t *problems = settings_check_file(path), *builtins, *p;
	struct settings s;
	char err[1024];
	size_t i;

	if (problems == NULL) {
		fprintf(stderr, "retryd: out of memory\n");
		return 1;
	}
	/* What the table cannot say: the plan's steps, the patterns compile. */
	builtins = json_array_size(problems) == 0 ? builtins_settings() : NULL;
	if (builtins != NULL && settings_load(&s, builtins, path, err, sizeof(err)) == 0) {
		struct classify *c;

		if (provider_sim_check_plan(settings_get(&s, "sim.plan"), err, sizeof(err)) != 0)
			json_array_append_new(problems, json_string(err));
		c = classify_new(settings_get(&s, "retry"), err, sizeof(err));
		if (c == NULL)
			json_array_append_new(problems, json_string(err));
		classify_free(c);
		settings_release(&s);
	}
	json_decref(builtins);
	if (json_array_size(problems) == 0)
		printf("%s: ok\n", path);
	json_array_foreach(problems, i, p)
		fprintf(stderr, "%s: %s\n", path, json_string_value(p));
	i = json_array_size(problems);
	json_decref(problems);
	return i == 0 && fflush(stdout) == 0 ? 0 : 1;
}

static const char config_usage[] =
	"usage: retryd config [--settings FILE] [--set KEY=VALUE]...\n"
	"       retryd config --check FILE\n"
	"\n"
	"Prints the effective settings, one leaf key per line in the order of the\n"
	"settings table, as ORIGIN<TAB>KEY=JSON, ORIGIN being default, built-in,\n"
	"file:PATH (written by hand or persisted by set_auto_retry/set_retry_policy;\n"
	"the file cannot tell which) or --set. Secrets show as ***.\n"
	"--check checks a settings file: \"FILE: ok\" on stdout and exit 0, else each\n"
	"unknown key and wrong value on stderr, one per line, and exit 1.\n";

/* `retryd config ...` (argv[0] is "config"): an exit status. */
static int config_main(int argc, char **argv)
{
	const char *path = NULL, *check = NULL;
	struct settings s;
	json_t *builtins;
	char err[1024];
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *val;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			fputs(config_usage, stdout);
			return 0;
		}
		if (strcmp(arg, "--settings") != 0 && strcmp(arg, "--set") != 0 &&
		    strcmp(arg, "--check") != 0)
			return usage_error("config: unknown option '%s'", arg);
		if (i + 1 >= argc)
			return usage_error("config: option '%s' needs a value", arg);
		val = argv[++i];
		if (strcmp(arg, "--settings") == 0)
			path = val;
		else if (strcmp(arg, "--check") == 0)
			check = val;
	}
	if (check != NULL)
		return config_check(check);
	if (check_settings_path(path) != 0)
		return 1;
	builtins = builtins_settings();
	if (builtins == NULL || settings_load(&s, builtins, path, err, sizeof(err)) != 0) {
		fprintf(stderr, "retryd: %s\n", builtins != NULL ? err : "out of memory");
		json_decref(builtins);
		return 1;
	}
	json_decref(builtins);
	for (int i = 1; i < argc && rc == 0; i += 2) {
		if (strcmp(argv[i], "--set") == 0 &&
		    settings_override(&s, argv[i + 1], err, sizeof(err)) != 0) {
			fprintf(stderr, "retryd: %s\n", err);
			rc = 1;
		}
	}
	if (rc == 0 && settings_foreach(&s, print_setting, &s) != 0) {
		fprintf(stderr, "retryd: out of memory\n");
		rc = 1;
	}
	settings_release(&s);
	if (rc == 0 && fflush(stdout) != 0)
		rc = 1;
	return rc;
}

static void on_grace(uv_timer_t *t)
{
	struct daemon *d = t->data;

	LOG_WARN("output did not drain in time; exiting");
	close_all(d);
}

static void on_flushed(void *ctx)
{
	close_all(ctx);
}

/* Stop reading, let the output drain, then close everything. */
static void begin_exit(struct daemon *d, bool bounded)
{
	if (d->exiting) {
		if (bounded && !uv_is_active((uv_handle_t *)&d->grace))
			uv_timer_start(&d->grace, on_grace, SHUTDOWN_GRACE_MS, 0);
		return;
	}
	d->exiting = true;
	if (d->reader != NULL)
		reader_pause(d->reader);
	if (bounded)
		uv_timer_start(&d->grace, on_grace, SHUTDOWN_GRACE_MS, 0);
	writer_flush(d->writer, on_flushed, d);
}

static void on_idle_after_eof(void *ctx)
{
	begin_exit(ctx, false);
}

static void emit_cb(void *ctx, json_t *event)
{
	struct daemon *d = ctx;

	if (d->writer != NULL && !d->closed)
		writer_send(d->writer, event);
	json_decref(event);
}

static struct jsontext_buf *line_buf_cb(void *ctx)
{
	struct daemon *d = ctx;

	return d->writer != NULL && !d->closed ? writer_line_buffer(d->writer) : NULL;
}

static void line_done_cb(void *ctx)
{
	struct daemon *d = ctx;

	writer_line_done(d->writer);
}

static bool on_line(void *ctx, enum retryd_lines_kind kind, const char *line, size_t len)
{
	struct daemon *d = ctx;

	if (kind == RETRYD_LINES_OVERSIZE)
		rpc_handle_oversize(&d->rpc);
	else
		rpc_handle_line(&d->rpc, line, len);
	return true;
}

static void on_input(void *ctx, const char *data, size_t len)
{
	struct daemon *d = ctx;

	if (d->exiting)
		return;
	retryd_lines_feed(&d->framer, data, len, on_line, d);
}

static void on_input_eof(void *ctx)
{
	struct daemon *d = ctx;

	if (d->input_done)
		return;
	d->input_done = true;
	if (!d->exiting)
		retryd_lines_finish(&d->framer, on_line, d);
	/* Finish what is in flight, queued follow-ups included, then leave. */
	session_when_idle(&d->session, on_idle_after_eof, d);
}

static void on_congestion(void *ctx, bool congested)
{
	struct daemon *d = ctx;

	session_set_output_paused(&d->session, congested);
	if (d->reader == NULL)
		return;
	if (congested)
		reader_pause(d->reader);
	else if (!d->exiting && !d->input_done)
		reader_start(d->reader);
}

static void on_output_failed(void *ctx, int err)
{
	struct daemon *d = ctx;

	(void)err;
	LOG_INFO("stdout closed; stopping");
	session_abort(&d->session, NULL);
	begin_exit(d, true);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct daemon *d = h->data;

	LOG_INFO("signal %d; cancelling and exiting", signum);
	session_abort(&d->session, NULL);
	begin_exit(d, true);
}

/* Closing the last uv_signal handle of a signal puts its default action
 * back, and a SIGTERM then would kill the process while the exit finishes
 * (a second signal during shutdown ended it by the signal, not exit 0). So
 * the two are ignored from here on: blocked in this thread while libuv
 * closes the handles, then SIG_IGN, which also drops any that came
 * meanwhile. (Another thread, such as libuv's thread pool, could still take
 * one in the instant between libuv's reset and SIG_IGN.) */
static void close_signals(struct daemon *d)
{
	struct sigaction ign;
	sigset_t stop, old;

	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	uv_close((uv_handle_t *)&d->sigterm, NULL);
	uv_close((uv_handle_t *)&d->sigint, NULL);
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGTERM, &ign, NULL);
	sigaction(SIGINT, &ign, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void close_all(struct daemon *d)
{
	if (d->closed)
		return;
	d->closed = true;
	if (d->handles_ready) {
		close_signals(d);
		uv_close((uv_handle_t *)&d->grace, NULL);
	}
	if (d->reader != NULL)
		reader_close(d->reader, NULL, NULL);
	if (d->writer != NULL)
		writer_close(d->writer, NULL, NULL);
	d->reader = NULL;
	d->writer = NULL;
	/* The provider's attempt goes first (a transfer, or a child process whose
	 * group is killed and whose handles close once it is reaped). */
	if (d->provider != NULL)
		d->provider->ops->abort(d->provider);
	if (d->http != NULL) {
		http_client_close(d->http, NULL, NULL);
		d->http = NULL;
	}
	if (d->fleet != NULL) {
		/* Nothing the session does from here on reaches the fleet. */
		d->session.cfg.fleet = NULL;
		fleet_close(d->fleet, NULL, NULL);
		d->fleet = NULL;
	}
	clock_uv_close(&d->clock, NULL, NULL);
}

/* "unknown provider 'x' (available: sim, openai, ...)": every name --provider takes. */
static void unknown_provider(const json_t *providers, const char *name, char *err, size_t errlen)
{
	char list[512] = "sim";
	const char *key;
	json_t *v;
	size_t n;

	json_object_foreach((json_t *)providers, key, v) {
		n = strlen(list);
		snprintf(list + n, sizeof(list) - n, ", %s", key);
	}
	errbuf_set(err, errlen, "unknown provider '%s' (available: %s)", name, list);
}

static void on_first_ping(void *ctx, enum redis_status st, const struct redis_value *v)
{
	(void)ctx;
	(void)v;
	if (st != REDIS_OK && st != REDIS_CLOSED)
		LOG_INFO("fleet: redis not reachable yet; deciding locally until it is");
}

/* The fleet of fleet.mode; in Redis mode the connection starts now, so the
 * first prompt finds it up. Returns 0, or -1 with err. */
static int start_fleet(struct daemon *d, char *err, size_t errlen)
{
	struct fleet_config cfg;
	uint64_t member = 0;

	if (fleet_config_from_settings(&cfg, &d->settings, d->provider->name, err, errlen) != 0)
		return -1;
	random_bytes(&member, sizeof(member));
	cfg.member = (int64_t)(member >> 12) + 1; /* > 0, exact in a Lua number */
	cfg.clock = &d->clock.clock;
	if (cfg.mode == FLEET_MODE_REDIS) {
		struct redis_options ro = {
			.url = settings_get_string(&d->settings, "fleet.redis.url"),
			.password = settings_string(&d->settings, "fleet.redis.password", NULL),
			.timeout_ms = (int)settings_get_int(&d->settings, "fleet.redis.timeoutMs"),
		};
		const char *ping[] = { "PING" };

		if (ro.password != NULL)
			secret_register(ro.password);
		cfg.redis = redis_new(d->loop, &ro, err, errlen);
		if (cfg.redis == NULL)
			return -1;
		redis_command(cfg.redis, 1, ping, on_first_ping, d);
	}
	d->fleet = fleet_new(&cfg, err, errlen);
	if (d->fleet == NULL && cfg.mode == FLEET_MODE_USER &&
	    (cfg.dir == NULL || cfg.dir[0] == '\0')) {
		/* The default folder is not usable (another user owns
		 * /tmp/retryd-$UID, say): that must not stop the daemon, only its
		 * sharing. A fleet.dir given on purpose does stop it. */
		LOG_WARN("fleet: %s; this daemon shares nothing (as fleet.mode \"process\")", err);
		cfg.mode = FLEET_MODE_PROCESS;
		cfg.params.open_after = 0;
		cfg.params.budget_max = 0;
		d->fleet = fleet_new(&cfg, err, errlen);
	}
	if (d->fleet == NULL) {
		if (cfg.redis != NULL)
			redis_close(cfg.redis, NULL, NULL);
		return -1;
	}
	LOG_DEBUG("fleet: mode %s", fleet_mode_name(cfg.mode));
	return 0;
}

/* Retries that are off say so at the start: a set_auto_retry false persists
 * in the shared settings file and would otherwise silently stop every later
 * daemon on the machine from retrying. */
static void warn_if_retries_off(const struct settings *s)
{
	if (settings_get_bool(s, "retry.enabled"))
		return;
	if (settings_origin(s, "retry.enabled") == SETTINGS_ORIGIN_OVERRIDE)
		LOG_WARN("retries are off: --set retry.enabled=false; leave that --set out to turn "
			 "them back on");
	else
		LOG_WARN("retries are off: retry.enabled is false in %s (written by set_auto_retry "
			 "or by hand); turn them back on with {\"type\":\"set_auto_retry\","
			 "\"enabled\":true}, --set retry.enabled=true, or by removing the key from that "
			 "file", s->path);
}

static char *session_dir(const struct options *o)
{
	if (o->no_session || o->session_file != NULL)
		return NULL;
	return o->session_dir != NULL ? strdup(o->session_dir) : journal_default_dir();
}

/* --continue and --resume: which file, and what it holds, before anything
 * starts. Returns 0, or 1 having said why. */
static int load_resume(struct daemon *d, const struct options *o)
{
	char err[1024];
	char *dir;

	if (o->resume_file != NULL) {
		d->resume_path = strdup(o->resume_file);
	} else if (o->continue_newest) {
		dir = session_dir(o);
		if (dir == NULL) {
			fprintf(stderr, "retryd: --continue: no session directory (neither "
				"XDG_STATE_HOME nor HOME is set; name one with --session-dir)\n");
			return 1;
		}
		d->resume_path = journal_newest(dir, err, sizeof(err));
		free(dir);
		if (d->resume_path == NULL) {
			fprintf(stderr, "retryd: --continue: %s\n", err);
			return 1;
		}
	} else {
		return 0;
	}
	if (d->resume_path == NULL) {
		fprintf(stderr, "retryd: out of memory\n");
		return 1;
	}
	if (journal_load(d->resume_path, d->resume_id, &d->resume_messages, err,
			 sizeof(err)) != 0) {
		fprintf(stderr, "retryd: %s\n", err);
		return 1;
	}
	LOG_INFO("resuming session %s from %s (%zu messages)", d->resume_id, d->resume_path,
		 json_array_size(d->resume_messages));
	return 0;
}

static int run(struct daemon *d, const struct options *o)
{
	struct writer_callbacks wcb = { on_congestion, on_output_failed, d };
	struct reader_callbacks rcb = { on_input, on_input_eof, d };
	char *dir = session_dir(o);
	struct session_config scfg = {
		.settings = &d->settings,
		.classify = d->classify,
		.clock = &d->clock.clock,
		.model = o->model,
		.session_file = o->session_file,
		.session_dir = dir,
		.resume_file = d->resume_path,
		.resume_id = d->resume_id,
		.resume_messages = d->resume_messages,
		.emit = emit_cb,
		.line_buf = line_buf_cb,
		.line_done = line_done_cb,
		.emit_ctx = d,
	};

	const json_t *providers = settings_get(&d->settings, "providers");
	bool sim = o->provider == NULL || strcmp(o->provider, "sim") == 0;
	const json_t *entry = sim ? NULL : json_object_get(providers, o->provider);
	char err[512];

	/* Exit status (protocol/README.md section 2): 2 for a usage error on the
	 * command line, an unknown provider name among them; 1 for a wrong
	 * configuration (a provider entry or profile too) or a failed start. */
	if (!sim && entry == NULL) {
		unknown_provider(providers, o->provider, err, sizeof(err));
		fprintf(stderr, "retryd: %s\n", err);
		free(dir);
		return 2;
	}
	d->loop = uv_default_loop();
	clock_uv_init(&d->clock, d->loop);
	if (sim) {
		d->provider = provider_sim_new(&d->clock.clock, settings_get(&d->settings, "sim.plan"),
					       settings_get_int(&d->settings, "sim.chunkDelayMs"),
					       settings_get(&d->settings, "sim.models"),
					       settings_get(&d->settings, "sim.credentials"));
	} else if (cli_profile_is_exec(entry)) {
		d->provider = provider_cli_new(d->loop, &d->clock.clock, o->provider, entry,
					       err, sizeof(err));
		if (d->provider == NULL) {
			fprintf(stderr, "retryd: %s\n", err);
			free(dir);
			return 1;
		}
	} else {
		struct provider_http_config hcfg = {
			.name = o->provider,
			.entry = entry,
			.connect_timeout_ms = (long)settings_get_int(&d->settings, "http.connectTimeoutMs"),
			.idle_timeout_ms = (long)settings_get_int(&d->settings, "http.idleTimeoutMs"),
		};

		/* On failure err says why: libcurl did not load, or the entry is
		 * wrong. */
		d->http = http_client_new(d->loop, err, sizeof(err));
		if (d->http != NULL)
			d->provider = provider_http_new(d->http, &d->clock.clock, &hcfg, err, sizeof(err));
		if (d->provider == NULL) {
			fprintf(stderr, "retryd: %s\n", err);
			free(dir);
			return 1;
		}
	}
	if (o->model == NULL && json_array_size(d->provider->models) > 0)
		scfg.model = json_string_value(json_object_get(json_array_get(d->provider->models, 0), "id"));
	scfg.provider = d->provider;
	if (start_fleet(d, err, sizeof(err)) != 0) {
		fprintf(stderr, "retryd: %s\n", err);
		free(dir);
		return 1;
	}
	scfg.fleet = d->fleet;
	d->writer = writer_new(d->loop, 1,
			       (size_t)settings_get_int(&d->settings, "rpc.outputHighWaterBytes"),
			       &wcb);
	d->reader = reader_new(d->loop, 0, &rcb);
	/* The session owns the classifier from here on, even if it fails. */
	d->classify = NULL;
	if (d->provider == NULL || d->writer == NULL || d->reader == NULL ||
	    session_init(&d->session, &scfg) != 0) {
		fprintf(stderr, "retryd: cannot start (stdin/stdout unusable or out of memory)\n");
		free(dir);
		return 1;
	}
	free(dir);
	if (!o->no_session && o->session_file == NULL && d->session.file == NULL)
		LOG_WARN("neither XDG_STATE_HOME nor HOME is set; keeping no session file");
	retryd_lines_init(&d->framer, (size_t)settings_get_int(&d->settings, "rpc.maxLineBytes"));
	rpc_init(&d->rpc, &d->session, emit_cb, d, d->framer.max_line);

	uv_signal_init(d->loop, &d->sigterm);
	uv_signal_init(d->loop, &d->sigint);
	uv_timer_init(d->loop, &d->grace);
	d->sigterm.data = d->sigint.data = d->grace.data = d;
	uv_signal_start(&d->sigterm, on_signal, SIGTERM);
	uv_signal_start(&d->sigint, on_signal, SIGINT);
	/* The signal handles stay referenced: the loop ends only through
	 * close_all(), never because a hung attempt holds no handle. */
	d->handles_ready = true;

	warn_if_retries_off(&d->settings);
	emit_cb(d, json_pack("{s:s}", "type", "ready"));
	reader_start(d->reader);
	uv_run(d->loop, UV_RUN_DEFAULT);
	return 0;
}

/* A daemon started with stdin, stdout or stderr closed (`retryd 2>&-`, an
 * editor that closes stderr) gets /dev/null there before anything opens an
 * fd: else the next fd opened (libuv's own, a session file) lands on 0-2 and
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
	const char **sets;
	struct options o;
	struct daemon d;
	int rc;

	if (fill_std_fds() != 0) {
		/* Written only if stderr is open (else EBADF, harmlessly). */
		fprintf(stderr, "retryd: cannot open /dev/null for a closed stdin, stdout or stderr: %s\n",
			strerror(errno));
		return 1;
	}
	/* At most one --set per argument. */
	sets = calloc(argc > 0 ? (size_t)argc : 1, sizeof(*sets));
	o = (struct options){ .sets = sets };
	if (sets == NULL) {
		fprintf(stderr, "retryd: out of memory\n");
		return 1;
	}
	memset(&d, 0, sizeof(d));
	signal(SIGPIPE, SIG_IGN);
	log_init_from_env();
	if (argc > 1 && strcmp(argv[1], "config") == 0) {
		rc = config_main(argc - 1, argv + 1);
		secret_reset();
		free(sets);
		return rc;
	}
	rc = parse_options(argc, argv, &o);
	if (rc >= 0) {
		free(sets);
		return rc;
	}
	rc = configure(&d, &o);
	if (rc == 0 && o.classify_text != NULL)
		rc = classify_and_print(&d, o.classify_text);
	else if (rc == 0)
		rc = load_resume(&d, &o);
	if (rc == 0 && o.classify_text == NULL)
		rc = run(&d, &o);
	if (d.loop != NULL) {
		if (!d.closed) {
			/* Startup failed half-way: close whatever was opened. */
			close_all(&d);
		}
		uv_run(d.loop, UV_RUN_DEFAULT);
		session_release(&d.session);
		if (uv_loop_close(d.loop) != 0)
			LOG_ERROR("uv_loop_close: handles still open at exit");
	}
	if (d.provider != NULL)
		d.provider->ops->free(d.provider);
	retryd_lines_release(&d.framer);
	free(d.resume_path);
	json_decref(d.resume_messages);
	classify_free(d.classify);
	settings_release(&d.settings);
	secret_reset();	/* wipes the registered keys' copies */
	free(sets);
	return rc;
}

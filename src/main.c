/* retryd — entry point: the daemon wired from its options and settings, the
 * loop, signals and orderly shutdown. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "base/errbuf.h"
#include "core/fleet.h"
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
#include "config.h"
#include "membership.h"
#include "options.h"
#include "resume.h"
#include "rpc.h"
#include "core/session.h"
#include "core/settings.h"
#include "io/writer.h"

/* How long SIGTERM waits for output to drain before leaving anyway. */
#define SHUTDOWN_GRACE_MS 800

struct daemon {
	uv_loop_t *loop;
	struct settings settings;
	struct classify *classify;
	struct clock_uv clock;
	struct provider *provider;
	struct http_client *http;   /* NULL with the sim provider */
	struct fleet *fleet;        /* what this daemon shares with the others */
	struct resume resume;       /* --continue's or --resume's session */
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

static void close_all(struct daemon *d);

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
		rpc_handle_oversize(&d->rpc, line, len);
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
	/* A park can last hours, and nobody would read its answer. */
	if (!d->exiting && session_parked(&d->session)) {
		LOG_WARN("stdin closed while parked; the park is kept for --continue");
		session_stop(&d->session);
		begin_exit(d, true);
		return;
	}
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
	session_stop(&d->session);
	begin_exit(d, true);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct daemon *d = h->data;

	LOG_INFO("signal %d; cancelling and exiting", signum);
	session_stop(&d->session);
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

static char *session_dir(const struct options *o)
{
	if (o->no_session || o->session_file != NULL)
		return NULL;
	return o->session_dir != NULL ? strdup(o->session_dir) : journal_default_dir();
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
		.resume_file = d->resume.path,
		.resume_id = d->resume.id,
		.resume_messages = d->resume.messages,
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
	d->fleet = membership_start(d->loop, &d->settings, d->provider->name, &d->clock.clock, err,
				    sizeof(err));
	if (d->fleet == NULL) {
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

	config_warn_if_retries_off(&d->settings);
	emit_cb(d, json_pack("{s:s}", "type", "ready"));
	session_resume_park(&d->session, d->resume.park);
	reader_start(d->reader);
	uv_run(d->loop, UV_RUN_DEFAULT);
	return 0;
}

/* A daemon started with stdin, stdout or stderr closed (`retryd 2>&-`, an
 * editor that closes stderr) gets /dev/null there before anything opens an
 * fd: else the next fd opened (libuv's own, a session file) lands on 0-2 and
 * libuv aborts when it closes it. *stdout_closed: fd 1 was one of them.
 * Returns -1 when that cannot be done. */
static int fill_std_fds(bool *stdout_closed)
{
	*stdout_closed = false;
	for (int fd = 0; fd <= 2; fd++) {
		int nul;

		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		if (fd == 1)
			*stdout_closed = true;
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
	bool stdout_closed;
	int rc;

	if (fill_std_fds(&stdout_closed) != 0) {
		/* Written only if stderr is open (else EBADF, harmlessly). */
		fprintf(stderr, "retryd: cannot open /dev/null for a closed stdin, stdout or stderr: %s\n",
			strerror(errno));
		return 1;
	}
	/* Every answer of every mode goes to stdout: a caller that closed it
	 * would read a run that never happened as a success. */
	if (stdout_closed) {
		fprintf(stderr, "retryd: stdout is closed: the replies and events have nowhere to "
			"go (give retryd a pipe, a file or /dev/null)\n");
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
	/* A file size limit is a failed write (EFBIG), not a kill. */
	signal(SIGXFSZ, SIG_IGN);
	log_init_from_env();
	if (argc > 1 && strcmp(argv[1], "config") == 0) {
		rc = options_parse_config(argc - 1, argv + 1, &o);
		if (rc < 0)
			rc = o.check_file != NULL ? config_check(o.check_file)
						  : config_print(o.settings_path, o.sets, o.nsets);
		secret_reset();
		free(sets);
		return rc;
	}
	rc = options_parse(argc, argv, &o);
	if (rc >= 0) {
		free(sets);
		return rc;
	}
	rc = config_load(&d.settings, &d.classify, o.settings_path, o.sets, o.nsets, o.sim_plan);
	if (rc == 0 && o.classify_text != NULL) {
		rc = config_classify(d.classify, o.classify_text);
	} else if (rc == 0) {
		char *dir = session_dir(&o);

		rc = resume_load(&d.resume, o.resume_file, o.continue_newest, dir,
				 o.no_session ? NULL : o.session_file);
		free(dir);
	}
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
	resume_release(&d.resume);
	classify_free(d.classify);
	settings_release(&d.settings);
	secret_reset();	/* wipes the registered keys' copies */
	free(sets);
	return rc;
}

/* Fuzz target "rpc": the command stream end to end, without a loop — the
 * line framer (src/shared/lines.c), the command parser (src/proto/command.c), rpc
 * dispatch (src/rpc.c) into a session (src/core/session.c) with the sim provider
 * and the retry coordinator on the fake clock, as tests/unit/check_session.c
 * runs them.
 *
 * Input: protocol lines. A few lines starting with '#' steer the harness
 * (they are never JSON, so nothing is lost):
 *   at the top only:  #set KEY=VALUE   a --set before the session starts
 *                                      (sim.plan=[...] replaces the default plan)
 *                     #chunk N         feed the framer N bytes at a time
 *                     #max N           rpc.maxLineBytes (default 2048)
 *                     #journal         keep a session file (in a temp dir)
 *   anywhere:         #tick N          the clock moves N ms
 *                     #pause, #resume  the output congests / drains
 *                     #abort           what SIGTERM does (session_abort)
 * At the end of the input: stdin EOF (retryd_lines_finish), the clock runs until
 * the session is idle (or only a hang is left), then SIGTERM's abort.
 *
 * Invariants, checked on every event: it serializes; no event was dropped;
 * one response per line, each with a command and, when it failed, an error
 * text; agent_start/agent_end alternate; every chain that emitted
 * auto_retry_start ends with one auto_retry_end before agent_end, and only
 * such a chain ends with success; message_update only inside an open
 * assistant message. At the end the session is idle.
 * FUZZ_TRACE=1 in the environment prints every event to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/builtins.h"
#include "core/classify.h"
#include "base/clock.h"
#include "shared/lines.h"
#include "fuzz.h"
#include "provider/provider_sim.h"
#include "rpc.h"
#include "core/session.h"
#include "core/settings.h"

#define MAX_SETS 16
#define DRAIN_ROUNDS 200

static const char *const default_sets[] = {
	"sim.plan=[{\"error\":\"503 Service Unavailable\"},{\"text\":\"hello world\"},"
	"{\"error\":\"529 overloaded_error: Overloaded\",\"retryAfterMs\":50},{\"hang\":true},"
	"{\"text\":\"a b c\",\"error\":\"connection error: socket hang up\"},"
	"{\"error\":\"429 usage limit reached, try again in 2s\"},{\"error\":\"400 bad request\"},"
	"{\"text\":\"done\",\"delayMs\":30},{\"error\":\"prompt is too long\"}]",
	"retry.baseDelayMs=10",
	"sim.credentials=[\"key-a\",\"key-b\"]",
	"sim.models=[\"sim-1\",\"sim-2\"]",
	"retry.fallbackModels=[\"sim-2\"]",
	NULL,
};

struct fx {
	struct settings settings;
	struct clock clock;
	struct provider *sim;
	struct session session;
	struct rpc rpc;
	struct retryd_lines framer;
	bool session_ready;

	size_t lines, responses;
	bool in_run, chain_open, message_open;
	size_t agent_starts, agent_ends;
};

static const char *str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

static void on_event(void *ctx, json_t *ev)
{
	struct fx *f = ctx;
	const char *type = str(ev, "type");
	char *text = json_dumps(ev, JSON_COMPACT);

	FUZZ_CHECK(text != NULL, "an event does not serialize");
	if (getenv("FUZZ_TRACE") != NULL)
		fprintf(stderr, "< %.300s\n", text);
	free(text);
	FUZZ_CHECK(type != NULL, "an event without a type");
	if (strcmp(type, "response") == 0) {
		f->responses++;
		FUZZ_CHECK(str(ev, "command") != NULL, "a response without a command");
		FUZZ_CHECK(json_is_boolean(json_object_get(ev, "success")), "a response without success");
		FUZZ_CHECK(json_is_true(json_object_get(ev, "success")) || str(ev, "error") != NULL,
			   "a failed response without an error text (command %s)", str(ev, "command"));
	} else if (strcmp(type, "agent_start") == 0) {
		FUZZ_CHECK(!f->in_run, "agent_start inside a run");
		f->in_run = true;
		f->agent_starts++;
	} else if (strcmp(type, "agent_end") == 0) {
		FUZZ_CHECK(f->in_run, "agent_end outside a run");
		FUZZ_CHECK(!f->chain_open, "agent_end with a retry chain still open");
		FUZZ_CHECK(!f->message_open, "agent_end inside a message");
		f->in_run = false;
		f->agent_ends++;
	} else if (strcmp(type, "auto_retry_start") == 0) {
		FUZZ_CHECK(f->in_run, "auto_retry_start outside a run");
		f->chain_open = true;
	} else if (strcmp(type, "auto_retry_end") == 0) {
		FUZZ_CHECK(f->in_run, "auto_retry_end outside a run");
		FUZZ_CHECK(f->chain_open || json_is_false(json_object_get(ev, "success")),
			   "auto_retry_end{success:true} without auto_retry_start");
		f->chain_open = false;
	} else if (strcmp(type, "turn_start") == 0) {
		FUZZ_CHECK(f->in_run, "turn_start outside a run");
	} else if (strcmp(type, "message_start") == 0) {
		json_t *m = json_object_get(ev, "message");

		FUZZ_CHECK(f->in_run, "message_start outside a run");
		if (strcmp(str(m, "role"), "assistant") == 0) {
			FUZZ_CHECK(!f->message_open, "message_start inside a message");
			f->message_open = true;
		}
	} else if (strcmp(type, "message_update") == 0) {
		FUZZ_CHECK(f->message_open, "message_update outside a message");
	} else if (strcmp(type, "message_end") == 0) {
		json_t *m = json_object_get(ev, "message");

		if (strcmp(str(m, "role"), "assistant") == 0) {
			FUZZ_CHECK(f->message_open, "message_end without message_start");
			FUZZ_CHECK(str(m, "stopReason") != NULL, "message_end without stopReason");
			FUZZ_CHECK(strcmp(str(m, "stopReason"), "error") != 0 ||
				   str(m, "errorMessage") != NULL, "an error without errorMessage");
			f->message_open = false;
		}
	}
	json_decref(ev);
}

/* Compiling the pattern lists (PCRE2 with JIT) costs more than the rest of
 * a run: the last classifier is kept, with the settings it came from, and
 * shared by reference while they stay the same. */
static struct classify *cached;
static json_t *cached_retry;

static void drop_cache(void)
{
	classify_free(cached);
	json_decref(cached_retry);
	cached = NULL;
	cached_retry = NULL;
}

static struct classify *classifier_for(const json_t *retry)
{
	static bool registered;
	char err[1024];

	if (!registered)
		registered = atexit(drop_cache) == 0;
	if (cached == NULL || !json_equal(cached_retry, retry)) {
		drop_cache();
		cached = classify_new(retry, err, sizeof(err));
		if (cached == NULL)
			return NULL;
		cached_retry = json_deep_copy(retry);
	}
	return classify_ref(cached);
}

/* Moves time on until the session is idle or nothing is scheduled. */
static void drain(struct fx *f)
{
	for (int i = 0; i < DRAIN_ROUNDS && f->session.busy; i++) {
		int64_t next = clock_fake_next_in(&f->clock);

		if (next < 0)
			break;
		clock_fake_advance(&f->clock, (uint64_t)next);
		clock_fake_settle(&f->clock);
	}
}

static long number_after(const char *line, size_t len, size_t skip)
{
	char buf[24];
	size_t n = len - skip < sizeof(buf) - 1 ? len - skip : sizeof(buf) - 1;

	memcpy(buf, line + skip, n);
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

static bool is_directive(const char *line, size_t len, const char *name)
{
	size_t n = strlen(name);

	return len >= n && memcmp(line, name, n) == 0;
}

static bool on_line(void *ctx, enum retryd_lines_kind kind, const char *line, size_t len)
{
	struct fx *f = ctx;

	if (kind == RETRYD_LINES_OVERSIZE) {
		f->lines++;
		rpc_handle_oversize(&f->rpc, line, len);
	} else if (len > 0 && line[0] == '#') {
		if (is_directive(line, len, "#tick ")) {
			long ms = number_after(line, len, 6);

			clock_fake_advance(&f->clock, ms > 0 && ms < 100000000 ? (uint64_t)ms : 0);
		} else if (is_directive(line, len, "#pause")) {
			session_set_output_paused(&f->session, true);
		} else if (is_directive(line, len, "#resume")) {
			session_set_output_paused(&f->session, false);
		} else if (is_directive(line, len, "#abort")) {
			session_abort(&f->session, NULL);
		}
	} else {
		f->lines++;
		rpc_handle_line(&f->rpc, line, len);
	}
	clock_fake_settle(&f->clock);
	FUZZ_CHECK(f->responses == f->lines, "%zu lines but %zu responses", f->lines, f->responses);
	FUZZ_CHECK(fuzz_dropped_events == 0, "an event was dropped");
	return true;
}

/* The header lines; returns where the protocol lines start. */
static size_t read_header(const char *in, size_t size, const char **sets, size_t *nsets,
			  size_t *chunk, size_t *max_line, bool *journal, char *buf, size_t bufcap)
{
	size_t at = 0, used = 0;

	while (at < size && in[at] == '#') {
		const char *nl = memchr(in + at, '\n', size - at);
		size_t len = nl ? (size_t)(nl - (in + at)) : size - at;
		const char *line = in + at;

		if (is_directive(line, len, "#set ") && *nsets < MAX_SETS && used + len < bufcap) {
			memcpy(buf + used, line + 5, len - 5);
			buf[used + len - 5] = '\0';
			sets[(*nsets)++] = buf + used;
			used += len - 4;
		} else if (is_directive(line, len, "#chunk ")) {
			long n = number_after(line, len, 7);

			*chunk = n > 0 ? (size_t)n : 0;
		} else if (is_directive(line, len, "#max ")) {
			long n = number_after(line, len, 5);

			*max_line = n > 0 && n < (1L << 24) ? (size_t)n : *max_line;
		} else if (is_directive(line, len, "#journal")) {
			*journal = true;
		} else {
			break;  /* a body directive: the body starts here */
		}
		at += len + (nl != NULL);
	}
	return at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	const char *sets[MAX_SETS];
	char setbuf[8192], err[1024], settings_path[256], journal_path[256];
	size_t nsets = 0, chunk = 0, max_line = 2048, body;
	bool journal = false;
	struct classify *classify;
	struct session_config cfg;
	json_t *builtins;
	struct fx f;

	memset(&f, 0, sizeof(f));
	fuzz_dropped_events = 0;
	body = read_header(in, size, sets, &nsets, &chunk, &max_line, &journal, setbuf,
			   sizeof(setbuf));
	snprintf(settings_path, sizeof(settings_path), "%s/settings.json", fuzz_tmpdir());
	snprintf(journal_path, sizeof(journal_path), "%s/session.jsonl", fuzz_tmpdir());
	unlink(settings_path);
	unlink(journal_path);
	builtins = builtins_settings();
	if (settings_load(&f.settings, builtins, settings_path, err, sizeof(err)) != 0)
		FUZZ_CHECK(0, "settings_load: %s", err);
	json_decref(builtins);
	for (size_t i = 0; default_sets[i] != NULL; i++)
		FUZZ_CHECK(settings_override(&f.settings, default_sets[i], err, sizeof(err)) == 0,
			   "%s", err);
	for (size_t i = 0; i < nsets; i++)
		(void)settings_override(&f.settings, sets[i], err, sizeof(err));
	if (provider_sim_check_plan(settings_get(&f.settings, "sim.plan"), err, sizeof(err)) != 0)
		goto out;
	classify = classifier_for(settings_get(&f.settings, "retry"));
	if (classify == NULL)
		goto out;
	clock_fake_init(&f.clock, 1000);
	f.sim = provider_sim_new(&f.clock, settings_get(&f.settings, "sim.plan"),
				 settings_int(&f.settings, "sim.chunkDelayMs", 0),
				 settings_get(&f.settings, "sim.models"),
				 settings_get(&f.settings, "sim.credentials"));
	FUZZ_CHECK(f.sim != NULL, "provider_sim_new");
	cfg = (struct session_config){
		.settings = &f.settings, .classify = classify, .clock = &f.clock,
		.provider = f.sim, .model = "sim-1", .emit = on_event, .emit_ctx = &f,
		.session_file = journal ? journal_path : NULL,
	};
	FUZZ_CHECK(session_init(&f.session, &cfg) == 0, "session_init");
	f.session_ready = true;
	retryd_lines_init(&f.framer, max_line);
	rpc_init(&f.rpc, &f.session, on_event, &f, max_line);

	for (size_t at = body; at < size;) {
		size_t n = chunk == 0 || size - at < chunk ? size - at : chunk;

		retryd_lines_feed(&f.framer, in + at, n, on_line, &f);
		at += n;
	}
	retryd_lines_finish(&f.framer, on_line, &f);
	drain(&f);
	session_abort(&f.session, NULL);
	clock_fake_settle(&f.clock);
	FUZZ_CHECK(!f.session.busy && f.session.chain.phase == CHAIN_IDLE, "busy after abort");
	FUZZ_CHECK(!f.in_run && !f.chain_open, "a run or chain left open after abort");
	FUZZ_CHECK(f.agent_starts == f.agent_ends, "%zu agent_start, %zu agent_end",
		   f.agent_starts, f.agent_ends);
	FUZZ_CHECK(fuzz_dropped_events == 0, "an event was dropped");
	retryd_lines_release(&f.framer);
out:
	if (f.session_ready)
		session_release(&f.session);
	if (f.sim != NULL)
		f.sim->ops->free(f.sim);
	settings_release(&f.settings);
	unlink(settings_path);
	unlink(journal_path);
	return 0;
}

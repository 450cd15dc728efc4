/* wait — retryd_client_prompt_and_wait: a prompt sent, and the loop run
 * until its run is over, on a watch of the client (client/client.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/run.h"
#include "retryd/client.h"

/* On the caller's stack for one wait. */
struct waiter {
	struct retryd_run run;
	bool finished;
	int status;
	char *error;       /* owned: why the wait ended early */
};

static bool waiter_event(void *ctx, const char *type, json_t *event)
{
	struct waiter *w = ctx;

	return retryd_run_feed(&w->run, type, event);
}

static void waiter_end(void *ctx, int status, const char *why)
{
	struct waiter *w = ctx;

	w->finished = true;
	w->status = status;
	if (why != NULL)
		w->error = strdup(why);
}

static void prompt_cb(struct retryd_client *c, const struct retryd_result *r, void *ctx)
{
	/* A generation, not the waiter: the answer may come after its wait. */
	struct waiter *w = retryd_client_watching(c, (uint64_t)(uintptr_t)ctx);

	if (w == NULL)
		return;
	if (r->status < 0)
		retryd_client_unwatch(c, r->status, r->error);
	else if (!r->success)
		retryd_client_unwatch(c, RETRYD_EREFUSED, r->error);
	else
		retryd_run_accept(&w->run);
}

int retryd_client_prompt_and_wait(struct retryd_client *c, const char *message,
				  const struct retryd_prompt_options *opts, uint64_t timeout_ms,
				  struct retryd_run_result *out)
{
	struct retryd_client_watch watch = {
		.event = waiter_event,
		.end = waiter_end,
		.timeout_why = "the run did not finish in time (it goes on in the daemon)",
	};
	struct waiter w;
	uint64_t gen;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&w, 0, sizeof(w));
	watch.ctx = &w;
	gen = retryd_client_watch(c, &watch, timeout_ms);
	if (gen == 0) {
		out->error = strdup("another retryd_client_prompt_and_wait is running");
		return UV_EBUSY;
	}
	retryd_run_init(&w.run);
	rc = retryd_client_prompt(c, message, opts, prompt_cb, (void *)(uintptr_t)gen);
	if (rc != 0) {
		out->error = strdup(retryd_client_last_error(c));
		retryd_client_unwatch(c, rc, NULL);
		free(w.error);
		retryd_run_release(&w.run);
		return rc;
	}
	/* The client may be freed inside uv_run (closed from a callback): after
	 * the loop only the waiter, on this stack, is touched. */
	while (!w.finished) {
		if (uv_run(retryd_client_loop(c), UV_RUN_ONCE) == 0 && !w.finished)
			retryd_client_unwatch(c, UV_EOF, "the loop has nothing left to run");
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

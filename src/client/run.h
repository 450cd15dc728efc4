/* run — follows one prompt's run through its events, for
 * retryd_client_prompt_and_wait.
 *
 * Pure: events in, a verdict out. A run is over at the first agent_end after
 * its prompt was accepted (retryd sends one, after the whole retry chain);
 * events before the acceptance belong to an earlier run and are ignored. */
#ifndef RETRYD_CLIENT_RUN_H
#define RETRYD_CLIENT_RUN_H

#include <stdbool.h>

#include <jansson.h>

#include "retryd/client.h"

struct retryd_run {
	bool accepted;
	bool done;
	int retries;          /* the current chain's attempt number */
	bool chain_failed;    /* the last auto_retry_end said success:false */
	char *chain_error;    /* owned: its finalError */
	json_t *final;        /* owned: the last assistant message seen */
	json_t *agent_end;    /* owned */
};

void retryd_run_init(struct retryd_run *self);
void retryd_run_release(struct retryd_run *self);
/* The prompt's success response arrived. */
void retryd_run_accept(struct retryd_run *self);
/* event: borrowed. Returns true once the run is over. */
bool retryd_run_feed(struct retryd_run *self, const char *type, json_t *event);
/* Fills out from a finished (or unfinished) run; out's strings and reference
 * are new. */
void retryd_run_result(const struct retryd_run *self, struct retryd_run_result *out);

#endif

/* client — the library-private half of client.c: one watcher of a client's
 * events and of its end, on which retryd_client_prompt_and_wait (wait.c)
 * is built without client.c knowing of it. */
#ifndef RETRYD_CLIENT_CLIENT_H
#define RETRYD_CLIENT_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "retryd/client.h"

struct retryd_client_watch {
	/* Each event, before on_event (type, event: borrowed). Returning true
	 * ends the watch with status 0. */
	bool (*event)(void *ctx, const char *type, json_t *event);
	/* The watch ended: 0 (event said so), UV_ETIMEDOUT (its time ran out),
	 * UV_EOF (the daemon went), UV_ECANCELED (the client was closed), or
	 * what retryd_client_unwatch was given. why: borrowed, NULL with 0. */
	void (*end)(void *ctx, int status, const char *why);
	void *ctx;
	const char *timeout_why;  /* borrowed, static: why when the time runs out */
};

/* Starts watching (watch: copied), with a time limit (0: none). Returns the
 * watch's generation (> 0), or 0 when another watch is under way. */
uint64_t retryd_client_watch(struct retryd_client *client, const struct retryd_client_watch *watch,
			     uint64_t timeout_ms);
/* The ctx of the watch of generation gen (borrowed), or NULL when that watch
 * has ended. */
void *retryd_client_watching(const struct retryd_client *client, uint64_t gen);
/* Ends the current watch, if any: its end(status, why) is called (why:
 * borrowed, may be NULL). */
void retryd_client_unwatch(struct retryd_client *client, int status, const char *why);

#endif

/* pending — the commands sent and not yet answered, keyed by id.
 *
 * Pure: no I/O, no clock of its own (deadlines are numbers the caller
 * compares with its own now). Entries leave one at a time, so the caller can
 * run a callback for each while the table stays consistent, even when that
 * callback sends another command. */
#ifndef RETRYD_CLIENT_PENDING_H
#define RETRYD_CLIENT_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "retryd/client.h"

struct retryd_pending_entry {
	char *id;            /* owned */
	char *command;       /* owned: the command's type */
	retryd_response_cb cb;
	void *ctx;
	uint64_t deadline;   /* 0: none */
};

struct retryd_pending {
	struct retryd_pending_entry *v;  /* owned; in sending order */
	size_t n;
	size_t cap;
	uint64_t next_id;    /* for "req_<n>" */
};

void retryd_pending_init(struct retryd_pending *self);
/* Frees every entry without calling anything. */
void retryd_pending_release(struct retryd_pending *self);
/* Writes the next generated id, "req_<n>", skipping ids that are pending. */
void retryd_pending_next_id(struct retryd_pending *self, char *buf, size_t size);
/* id, command: borrowed (copied). 0, UV_EEXIST (id pending), UV_ENOMEM. */
int retryd_pending_add(struct retryd_pending *self, const char *id, const char *command,
		       retryd_response_cb cb, void *ctx, uint64_t deadline);
bool retryd_pending_has(const struct retryd_pending *self, const char *id);
/* Removes the entry with this id into out (which then owns its strings). */
bool retryd_pending_take(struct retryd_pending *self, const char *id,
			 struct retryd_pending_entry *out);
/* Removes the oldest entry whose deadline is set and <= now. */
bool retryd_pending_take_expired(struct retryd_pending *self, uint64_t now,
				 struct retryd_pending_entry *out);
/* Removes the oldest entry. */
bool retryd_pending_take_oldest(struct retryd_pending *self, struct retryd_pending_entry *out);
/* The earliest deadline, 0 when none is set. */
uint64_t retryd_pending_earliest(const struct retryd_pending *self);
size_t retryd_pending_count(const struct retryd_pending *self);
void retryd_pending_entry_release(struct retryd_pending_entry *entry);

#endif

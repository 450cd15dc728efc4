#include "client/pending.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void retryd_pending_init(struct retryd_pending *self)
{
	memset(self, 0, sizeof(*self));
	self->next_id = 1;
}

void retryd_pending_entry_release(struct retryd_pending_entry *entry)
{
	free(entry->id);
	free(entry->command);
	memset(entry, 0, sizeof(*entry));
}

void retryd_pending_release(struct retryd_pending *self)
{
	for (size_t i = 0; i < self->n; i++)
		retryd_pending_entry_release(&self->v[i]);
	free(self->v);
	memset(self, 0, sizeof(*self));
}

static ptrdiff_t find(const struct retryd_pending *self, const char *id)
{
	for (size_t i = 0; i < self->n; i++)
		if (strcmp(self->v[i].id, id) == 0)
			return (ptrdiff_t)i;
	return -1;
}

void retryd_pending_next_id(struct retryd_pending *self, char *buf, size_t size)
{
	do
		snprintf(buf, size, "req_%" PRIu64, self->next_id++);
	while (find(self, buf) >= 0);
}

int retryd_pending_add(struct retryd_pending *self, const char *id, const char *command,
		       retryd_response_cb cb, void *ctx, uint64_t deadline)
{
	struct retryd_pending_entry e = { 0 };

	if (find(self, id) >= 0)
		return UV_EEXIST;
	if (self->n == self->cap) {
		size_t cap = self->cap ? self->cap * 2 : 8;
		struct retryd_pending_entry *v = realloc(self->v, cap * sizeof(*v));

		if (v == NULL)
			return UV_ENOMEM;
		self->v = v;
		self->cap = cap;
	}
	e.id = strdup(id);
	e.command = strdup(command);
	if (e.id == NULL || e.command == NULL) {
		retryd_pending_entry_release(&e);
		return UV_ENOMEM;
	}
	e.cb = cb;
	e.ctx = ctx;
	e.deadline = deadline;
	self->v[self->n++] = e;
	return 0;
}

bool retryd_pending_has(const struct retryd_pending *self, const char *id)
{
	return find(self, id) >= 0;
}

/* Entries are kept in sending order: removal shifts the tail down. */
static void remove_at(struct retryd_pending *self, size_t i, struct retryd_pending_entry *out)
{
	*out = self->v[i];
	memmove(&self->v[i], &self->v[i + 1], (self->n - i - 1) * sizeof(self->v[0]));
	self->n--;
}

bool retryd_pending_take(struct retryd_pending *self, const char *id,
			 struct retryd_pending_entry *out)
{
	ptrdiff_t i = find(self, id);

	if (i < 0)
		return false;
	remove_at(self, (size_t)i, out);
	return true;
}

bool retryd_pending_take_expired(struct retryd_pending *self, uint64_t now,
				 struct retryd_pending_entry *out)
{
	for (size_t i = 0; i < self->n; i++) {
		if (self->v[i].deadline != 0 && self->v[i].deadline <= now) {
			remove_at(self, i, out);
			return true;
		}
	}
	return false;
}

bool retryd_pending_take_oldest(struct retryd_pending *self, struct retryd_pending_entry *out)
{
	if (self->n == 0)
		return false;
	remove_at(self, 0, out);
	return true;
}

uint64_t retryd_pending_earliest(const struct retryd_pending *self)
{
	uint64_t best = 0;

	for (size_t i = 0; i < self->n; i++)
		if (self->v[i].deadline != 0 && (best == 0 || self->v[i].deadline < best))
			best = self->v[i].deadline;
	return best;
}

size_t retryd_pending_count(const struct retryd_pending *self)
{
	return self->n;
}

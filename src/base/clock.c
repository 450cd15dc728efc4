#include "base/clock.h"

#include <time.h>

#include <stddef.h>

void clock_init(struct clock *self, const struct clock_backend *backend, void *backend_data)
{
	self->backend = backend;
	self->backend_data = backend_data;
	self->head = NULL;
	self->seq = 0;
	self->fake_now = 0;
	self->fake_wall = 0;
}

uint64_t clock_now(struct clock *self)
{
	return self->backend->now(self);
}

uint64_t clock_precise_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int64_t clock_wall_ms(struct clock *self)
{
	return self->backend->wall_ms(self);
}

static void rearm(struct clock *self)
{
	if (self->head != NULL)
		self->backend->rearm(self, true, self->head->deadline);
	else
		self->backend->rearm(self, false, 0);
}

static void unlink_timer(struct clock *self, struct clock_timer *timer)
{
	struct clock_timer **pp = &self->head;

	while (*pp != NULL && *pp != timer)
		pp = &(*pp)->next;
	if (*pp == timer)
		*pp = timer->next;
	timer->next = NULL;
	timer->active = false;
}

void clock_timer_start(struct clock *self, struct clock_timer *timer, uint64_t delay_ms,
		       clock_cb cb, void *ctx)
{
	struct clock_timer **pp;

	if (timer->active)
		unlink_timer(self, timer);
	timer->deadline = clock_now(self) + delay_ms;
	timer->seq = self->seq++;
	timer->cb = cb;
	timer->ctx = ctx;
	timer->active = true;
	pp = &self->head;
	while (*pp != NULL && (*pp)->deadline <= timer->deadline)
		pp = &(*pp)->next;
	timer->next = *pp;
	*pp = timer;
	if (self->head == timer)
		rearm(self);
}

void clock_timer_stop(struct clock *self, struct clock_timer *timer)
{
	bool was_head;

	if (!timer->active)
		return;
	was_head = self->head == timer;
	unlink_timer(self, timer);
	if (was_head)
		rearm(self);
}

bool clock_timer_active(const struct clock_timer *timer)
{
	return timer->active;
}

void clock_run_due(struct clock *self)
{
	uint64_t now = clock_now(self);
	/* Only timers started before this pass may fire in it. */
	uint64_t limit = self->seq;

	for (;;) {
		struct clock_timer *t = self->head;

		while (t != NULL && t->deadline <= now && t->seq >= limit)
			t = t->next;
		if (t == NULL || t->deadline > now)
			break;
		unlink_timer(self, t);
		t->cb(t, t->ctx);
	}
	rearm(self);
}

/* The fake backend. */

static uint64_t fake_now(struct clock *self)
{
	return self->fake_now;
}

static int64_t fake_wall(struct clock *self)
{
	return self->fake_wall + (int64_t)self->fake_now;
}

static void fake_rearm(struct clock *self, bool any, uint64_t deadline)
{
	(void)self;
	(void)any;
	(void)deadline;
}

static const struct clock_backend fake_backend = {
	.now = fake_now,
	.wall_ms = fake_wall,
	.rearm = fake_rearm,
};

void clock_fake_init(struct clock *self, uint64_t start_ms)
{
	clock_init(self, &fake_backend, NULL);
	self->fake_now = start_ms;
	self->fake_wall = 1767225600000; /* 2026-01-01T00:00:00Z */
}

void clock_fake_settle(struct clock *self)
{
	while (self->head != NULL && self->head->deadline <= self->fake_now)
		clock_run_due(self);
}

void clock_fake_advance(struct clock *self, uint64_t ms)
{
	uint64_t end = self->fake_now + ms;

	clock_fake_settle(self);
	while (self->head != NULL && self->head->deadline <= end) {
		if (self->head->deadline > self->fake_now)
			self->fake_now = self->head->deadline;
		clock_fake_settle(self);
	}
	self->fake_now = end;
}

int64_t clock_fake_next_in(struct clock *self)
{
	if (self->head == NULL)
		return -1;
	if (self->head->deadline <= self->fake_now)
		return 0;
	return (int64_t)(self->head->deadline - self->fake_now);
}

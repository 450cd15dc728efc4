/* clock — the one seam through which retryd sees time.
 *
 * Timers are plain structs embedded in their owner (no allocation, no async
 * close). The clock keeps them in deadline order and fires the due ones from
 * clock_run_due(). What drives it is a backend: the libuv backend (clock_uv.c)
 * keeps one uv_timer_t armed at the earliest deadline; tests use the fake
 * backend (clock_fake_*) and move time by hand, without sleeping. */
#ifndef RETRYD_CLOCK_H
#define RETRYD_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

struct clock;
struct clock_timer;

typedef void (*clock_cb)(struct clock_timer *timer, void *ctx);

struct clock_timer {
	uint64_t deadline;
	uint64_t seq;            /* tie-break: equal deadlines fire in start order */
	clock_cb cb;
	void *ctx;
	struct clock_timer *next;
	bool active;
};

struct clock_backend {
	uint64_t (*now)(struct clock *self);            /* monotonic ms */
	int64_t (*wall_ms)(struct clock *self);         /* epoch ms, for dates */
	void (*rearm)(struct clock *self, bool any, uint64_t deadline);
};

struct clock {
	const struct clock_backend *backend;
	void *backend_data;
	struct clock_timer *head; /* sorted by (deadline, seq) */
	uint64_t seq;
	uint64_t fake_now;        /* fake backend only */
	int64_t fake_wall;        /* fake backend only */
};

void clock_init(struct clock *self, const struct clock_backend *backend, void *backend_data);
uint64_t clock_now(struct clock *self);
int64_t clock_wall_ms(struct clock *self);
/* The system's monotonic clock in microseconds: for measuring how long
 * something took (the fleet's ask latency), never for deciding. */
uint64_t clock_precise_us(void);

/* (Re)starts `timer` (caller-owned; must outlive its activity) to fire once
 * after delay_ms. A running timer is restarted. */
void clock_timer_start(struct clock *self, struct clock_timer *timer, uint64_t delay_ms,
		       clock_cb cb, void *ctx);
/* Stops `timer`; harmless when it is not running. */
void clock_timer_stop(struct clock *self, struct clock_timer *timer);
bool clock_timer_active(const struct clock_timer *timer);

/* Fires every timer whose deadline is <= now, in order; timers started by the
 * callbacks with delay 0 fire in a later call, so a 0 ms timer yields. */
void clock_run_due(struct clock *self);

/* Fake backend: time stands still until clock_fake_advance(). */
void clock_fake_init(struct clock *self, uint64_t start_ms);
/* Moves time forward by ms, firing due timers at their own deadlines in order,
 * including ones that those callbacks start within the window. */
void clock_fake_advance(struct clock *self, uint64_t ms);
/* Fires the timers due now (e.g. 0 ms ones) until none is due. */
void clock_fake_settle(struct clock *self);
/* Time until the next timer, or -1 when none is running. */
int64_t clock_fake_next_in(struct clock *self);

#endif

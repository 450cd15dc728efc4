/* clock_uv — the libuv backend of the clock: one uv_timer_t armed at the
 * earliest deadline. */
#ifndef RETRYD_CLOCK_UV_H
#define RETRYD_CLOCK_UV_H

#include <uv.h>

#include "base/clock.h"

struct clock_uv {
	struct clock clock;
	uv_timer_t timer;
	void (*closed)(void *ctx);  /* clock_uv_close's done callback */
	void *closed_ctx;
};

int clock_uv_init(struct clock_uv *self, uv_loop_t *loop);
/* Closes the uv timer (running clock timers are forgotten), then calls
 * done(ctx) once libuv is done with it (done may be NULL). The struct is the
 * caller's; it must live until then. */
void clock_uv_close(struct clock_uv *self, void (*done)(void *ctx), void *ctx);

#endif

/* clock_uv — the libuv backend of the clock: one uv_timer_t armed at the
 * earliest deadline. */
#ifndef RETRYD_CLOCK_UV_H
#define RETRYD_CLOCK_UV_H

#include <uv.h>

#include "base/clock.h"

struct clock_uv {
	struct clock clock;
	uv_timer_t timer;
};

int clock_uv_init(struct clock_uv *self, uv_loop_t *loop);
/* Closes the uv timer; running clock timers are forgotten. */
void clock_uv_close(struct clock_uv *self);

#endif

#include "io/clock_uv.h"

#include <time.h>

static uint64_t clock_uv_now(struct clock *clock)
{
	struct clock_uv *self = clock->backend_data;

	return uv_now(self->timer.loop);
}

static int64_t clock_uv_wall(struct clock *clock)
{
	struct timespec ts;

	(void)clock;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_timer(uv_timer_t *timer)
{
	struct clock_uv *self = timer->data;

	clock_run_due(&self->clock);
}

static void clock_uv_rearm(struct clock *clock, bool any, uint64_t deadline)
{
	struct clock_uv *self = clock->backend_data;
	uint64_t now;

	if (!any) {
		uv_timer_stop(&self->timer);
		return;
	}
	now = uv_now(self->timer.loop);
	uv_timer_start(&self->timer, on_timer, deadline > now ? deadline - now : 0, 0);
}

static const struct clock_backend libuv_backend = {
	.now = clock_uv_now,
	.wall_ms = clock_uv_wall,
	.rearm = clock_uv_rearm,
};

int clock_uv_init(struct clock_uv *self, uv_loop_t *loop)
{
	int rc = uv_timer_init(loop, &self->timer);

	if (rc != 0)
		return rc;
	self->timer.data = self;
	clock_init(&self->clock, &libuv_backend, self);
	return 0;
}

static void on_timer_closed(uv_handle_t *handle)
{
	struct clock_uv *self = handle->data;

	if (self->closed != NULL)
		self->closed(self->closed_ctx);
}

void clock_uv_close(struct clock_uv *self, void (*done)(void *ctx), void *ctx)
{
	self->clock.head = NULL;
	self->closed = done;
	self->closed_ctx = ctx;
	if (!uv_is_closing((uv_handle_t *)&self->timer))
		uv_close((uv_handle_t *)&self->timer, on_timer_closed);
}

#include "core/park.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/errbuf.h"
#include "base/hint.h"
#include "base/log.h"
#include "proto/event.h"

/* In the order of enum park_source. */
static const char *const source_names[] = { "header", "body", "text", "probe" };

const char *park_source_name(enum park_source source)
{
	return source_names[source];
}

void park_init(struct park *self, struct clock *clock, park_emit_fn emit, void *ctx)
{
	memset(self, 0, sizeof(*self));
	self->clock = clock;
	self->emit = emit;
	self->ctx = ctx;
	self->next_probe_ms = PARK_PROBE_FIRST_MS;
}

void park_set_file(struct park *self, park_file_fn file, void *ctx)
{
	self->file = file;
	self->file_ctx = ctx;
}

void park_forget(struct park *self)
{
	if (self->clock != NULL)
		clock_timer_stop(self->clock, &self->heartbeat);
	self->parked = false;
	self->probing = false;
	self->parks = 0;
	self->spent_ms = 0;
	self->reset_at = 0;
	self->next_probe_ms = PARK_PROBE_FIRST_MS;
	json_decref(self->record);
	self->record = NULL;
}

bool park_enabled(const struct policy *policy)
{
	const char *mode = policy_string(policy, "usageLimitWait");

	return mode != NULL && strcmp(mode, "wait") == 0;
}

void park_plan(const struct park *self, const struct policy *policy, int64_t hint_ms,
	       enum park_source source, int64_t now_ms, struct park_plan *plan)
{
	int64_t max = policy_int(policy, "maxUsageWaitMs");
	char a[32], b[32], c[32];

	memset(plan, 0, sizeof(*plan));
	/* A probe that meets the limit again with no reset ahead (none
	 * stated, or one already past) follows the growing schedule: a
	 * stale reset must not make a probe a second. */
	if (hint_ms < 0 || (self->probing && hint_ms == 0)) {
		plan->source = PARK_SOURCE_PROBE;
		plan->delay_ms = self->next_probe_ms;
		if (plan->delay_ms > max - self->spent_ms)
			plan->delay_ms = max - self->spent_ms;
		if (plan->delay_ms <= 0) {
			errbuf_set(plan->why, sizeof(plan->why),
				   "usage limit: no reset stated; waited %s for one "
				   "(retry.maxUsageWaitMs %s)",
				   hint_format(self->spent_ms, a, sizeof(a)),
				   hint_format(max, b, sizeof(b)));
			return;
		}
	} else {
		plan->source = source;
		plan->delay_ms = hint_ms + PARK_MARGIN_MS;
		if (self->spent_ms + plan->delay_ms > max) {
			if (self->spent_ms > 0)
				errbuf_set(plan->why, sizeof(plan->why),
					   "usage limit: resets in %s; waited %s for it already, "
					   "retry.maxUsageWaitMs is %s",
					   hint_format(hint_ms, a, sizeof(a)),
					   hint_format(self->spent_ms, b, sizeof(b)),
					   hint_format(max, c, sizeof(c)));
			else
				errbuf_set(plan->why, sizeof(plan->why),
					   "usage limit: resets in %s, past retry.maxUsageWaitMs (%s)",
					   hint_format(hint_ms, a, sizeof(a)),
					   hint_format(max, b, sizeof(b)));
			return;
		}
	}
	plan->park = true;
	plan->reset_at = now_ms + plan->delay_ms;
}

/* Where the reset a park waits for came from: the verdict's source, the
 * body when the message itself states no wait. */
static enum park_source reset_source(const struct provider_result *r,
				     const struct policy_verdict *v, int64_t now_ms)
{
	int64_t h;

	if (v->hint_source != NULL && strcmp(v->hint_source, "header") == 0)
		return PARK_SOURCE_HEADER;
	if (v->hint_source != NULL && strcmp(v->hint_source, "text") == 0 &&
	    r->error_body != NULL && r->error_body_len > 0 &&
	    !(v->error != NULL && hint_parse(v->error, strlen(v->error), now_ms, &h)))
		return PARK_SOURCE_BODY;
	return PARK_SOURCE_TEXT;
}

bool park_consider(const struct park *self, const struct policy *policy,
		   const struct provider_result *r, struct policy_verdict *v, int64_t now_ms,
		   struct park_plan *plan)
{
	if (!park_enabled(policy)) {
		policy_verdict_stop_usage(v);
		return false;
	}
	park_plan(self, policy, v->hint_ms, reset_source(r, v, now_ms), now_ms, plan);
	if (!plan->park) {
		policy_verdict_stop(v, plan->why);
		return false;
	}
	/* The fleet learns the probe's time as the credential's reset, so
	 * that its record has ended when the probe asks. */
	if (plan->source == PARK_SOURCE_PROBE)
		v->hint_ms = plan->delay_ms > PARK_MARGIN_MS ? plan->delay_ms - PARK_MARGIN_MS : 1;
	return true;
}

void park_stagger(struct park_plan *plan, int64_t offset_ms)
{
	plan->delay_ms += offset_ms;
	plan->reset_at += offset_ms;
}

static void on_heartbeat(struct clock_timer *timer, void *ctx)
{
	struct park *self = ctx;
	int64_t left = self->reset_at - clock_wall_ms(self->clock);
	char at[32];

	(void)timer;
	if (!self->parked || left <= 0)
		return;
	self->emit(self->ctx, event_usage_wait(left, park_iso8601(self->reset_at, at, sizeof(at))));
	if (left > self->heartbeat_ms)
		clock_timer_start(self->clock, &self->heartbeat, (uint64_t)self->heartbeat_ms,
				  on_heartbeat, self);
}

void park_begin(struct park *self, const struct park_plan *plan, int64_t heartbeat_ms,
		int64_t now_ms)
{
	self->parked = true;
	self->probing = false;
	self->parks++;
	self->parked_at = now_ms;
	self->reset_at = plan->reset_at;
	self->source = plan->source;
	self->heartbeat_ms = heartbeat_ms > 0 ? heartbeat_ms : 60000;
	if (plan->source == PARK_SOURCE_PROBE)
		self->next_probe_ms = self->next_probe_ms * 2 > PARK_PROBE_MAX_MS
					      ? PARK_PROBE_MAX_MS : self->next_probe_ms * 2;
	if (plan->delay_ms > self->heartbeat_ms)
		clock_timer_start(self->clock, &self->heartbeat, (uint64_t)self->heartbeat_ms,
				  on_heartbeat, self);
}

void park_wake(struct park *self, int64_t now_ms)
{
	clock_timer_stop(self->clock, &self->heartbeat);
	if (!self->parked)
		return;
	self->parked = false;
	self->probing = true;
	if (now_ms > self->parked_at)
		self->spent_ms += now_ms - self->parked_at;
}

void park_describe(const struct park *self, json_t *ev)
{
	char at[32];

	if (ev == NULL)
		return;
	json_object_set_new(ev, "resetAt",
			    json_string(park_iso8601(self->reset_at, at, sizeof(at))));
	json_object_set_new(ev, "resetSource", json_string(park_source_name(self->source)));
}

json_t *park_state_json(const struct park *self, int64_t now_ms)
{
	int64_t left = self->reset_at - now_ms;
	char at[32];

	if (!self->parked)
		return NULL;
	return json_pack("{s:s, s:I, s:s, s:i, s:I}", "resetAt",
			 park_iso8601(self->reset_at, at, sizeof(at)), "delayMs",
			 (json_int_t)(left > 0 ? left : 0), "resetSource",
			 park_source_name(self->source), "parks", self->parks, "waitedMs",
			 (json_int_t)(self->spent_ms + (now_ms > self->parked_at
							? now_ms - self->parked_at : 0)));
}

void park_record(struct park *self, const struct policy *policy, const char *error,
		 const char *rule)
{
	char at[32];

	json_decref(self->record);
	self->record = json_pack("{s:I, s:s, s:s, s:i, s:I, s:I, s:s, s:s, s:O?}", "resetAtMs",
			 (json_int_t)self->reset_at, "resetAt",
			 park_iso8601(self->reset_at, at, sizeof(at)), "resetSource",
			 park_source_name(self->source), "parks", self->parks, "waitedMs",
			 (json_int_t)self->spent_ms, "parkedAtMs", (json_int_t)self->parked_at,
			 "errorMessage", error ? error : "usage limit", "rule", rule ? rule : "",
			 "policy", policy->json);
	if (self->record != NULL && self->file != NULL)
		self->file(self->file_ctx, self->record);
}

void park_record_end(struct park *self, bool keep)
{
	if (self->parked && !keep && self->file != NULL)
		self->file(self->file_ctx, NULL);
}

bool park_probe_out(const struct park *self)
{
	return self->probing && self->record != NULL;
}

void park_record_stopped(struct park *self, int64_t now_ms)
{
	json_t *rec = park_probe_out(self) ? self->record : NULL;
	char at[32];

	if (rec == NULL || self->file == NULL)
		return;
	json_object_set_new(rec, "resetAtMs", json_integer(now_ms));
	json_object_set_new(rec, "resetAt", json_string(park_iso8601(now_ms, at, sizeof(at))));
	json_object_set_new(rec, "parkedAtMs", json_integer(now_ms));
	json_object_set_new(rec, "waitedMs", json_integer(self->spent_ms));
	self->file(self->file_ctx, rec);
}

int park_restore(struct park *self, const struct policy *policy, const json_t *record,
		 int64_t now_ms, struct park_plan *plan)
{
	int64_t max = policy_int(policy, "maxUsageWaitMs");
	char a[32], b[32], c[32];
	const json_t *at = json_object_get(record, "resetAtMs");
	const json_t *since = json_object_get(record, "parkedAtMs");
	const char *src = json_string_value(json_object_get(record, "resetSource"));
	size_t i;

	memset(plan, 0, sizeof(*plan));
	if (!json_is_integer(at) || !json_is_integer(since) || src == NULL)
		return -1;
	park_forget(self);
	self->parks = (int)json_integer_value(json_object_get(record, "parks"));
	self->parks = self->parks > 1 ? self->parks - 1 : 0; /* park_begin counts it again */
	self->spent_ms = json_integer_value(json_object_get(record, "waitedMs"));
	if (now_ms > json_integer_value(since))
		self->spent_ms += now_ms - json_integer_value(since);
	plan->park = true;
	plan->source = PARK_SOURCE_PROBE;
	for (i = 0; i < sizeof(source_names) / sizeof(source_names[0]); i++)
		if (strcmp(src, source_names[i]) == 0)
			plan->source = (enum park_source)i;
	plan->reset_at = json_integer_value(at);
	plan->delay_ms = plan->reset_at > now_ms ? plan->reset_at - now_ms : 0;
	if (plan->delay_ms == 0)
		plan->reset_at = now_ms;
	/* A clock that jumped or a line edited by hand must not park for years. */
	if (json_integer_value(at) < now_ms - max || plan->delay_ms > max ||
	    self->spent_ms < 0 || self->spent_ms > max - plan->delay_ms) {
		plan->park = false;
		errbuf_set(plan->why, sizeof(plan->why),
			   "usage limit: the session file's park (reset %s, waited %s) is past "
			   "retry.maxUsageWaitMs (%s)",
			   park_iso8601(json_integer_value(at), a, sizeof(a)),
			   hint_format(self->spent_ms > 0 ? self->spent_ms : 0, b, sizeof(b)),
			   hint_format(max, c, sizeof(c)));
	}
	return 0;
}

json_t *park_record_policy(const json_t *record, const struct settings *settings)
{
	json_t *own = json_deep_copy(json_object_get(record, "policy"));
	json_t *policy;
	char err[512];

	if (json_is_object(own))
		json_object_del(own, "budget");
	policy = policy_for_prompt(settings, json_is_object(own) ? own : NULL, err, sizeof(err));
	if (policy == NULL) {
		LOG_WARN("the parked prompt's retry policy: %s; the daemon's is used", err);
		policy = policy_for_prompt(settings, NULL, err, sizeof(err));
	}
	json_decref(own);
	return policy;
}

char *park_iso8601(int64_t ms, char *out, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (n == 0)
		return out;
	out[0] = '\0';
	if (gmtime_r(&t, &tm) != NULL)
		strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return out;
}

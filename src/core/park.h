/* park — a prompt waiting out a usage limit (retry.usageLimitWait "wait").
 *
 * When a spent quota leaves no credential or model to switch to, the chain
 * may park the prompt until the quota resets instead of ending it: the
 * chain's one wait timer runs to the reset, then one attempt (the prompt
 * itself) probes; a usage limit again parks once more, until
 * retry.maxUsageWaitMs is spent. This module decides how long a park is
 * (park_plan, pure), says what the wait is (auto_retry_start's fields,
 * get_state's usageReset) and keeps its heartbeat (usage_wait every
 * retry.usageWaitHeartbeatMs) on the clock seam. The chain owns the wait
 * timer and the events' order. */
#ifndef RETRYD_PARK_H
#define RETRYD_PARK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "core/policy.h"

/* The first wait when the reset is not stated, doubled at each probe that
 * finds the limit again, up to the cap. */
#define PARK_PROBE_FIRST_MS INT64_C(60000)
#define PARK_PROBE_MAX_MS INT64_C(1800000)
/* The probe goes this long after a stated reset: resets are written in
 * whole seconds, and the fleet's record of the spent credential must have
 * ended by then. */
#define PARK_MARGIN_MS INT64_C(1000)

/* Where a park's reset came from. */
enum park_source {
	PARK_SOURCE_HEADER, /* a response header (retry-after, x-ratelimit-reset...) */
	PARK_SOURCE_BODY,   /* the error body's typed field or words */
	PARK_SOURCE_TEXT,   /* the error message (an agent CLI's line) */
	PARK_SOURCE_PROBE,  /* not stated: a probe schedule */
};

/* What park_plan decided. */
struct park_plan {
	bool park;              /* false: the prompt ends (why says so) */
	int64_t delay_ms;       /* park: until the probe */
	int64_t reset_at;       /* park: epoch ms of the probe */
	enum park_source source;
	char why[192];          /* !park with retry.usageLimitWait "wait": the error's tail */
};

/* Emits one event (takes ownership). */
typedef void (*park_emit_fn)(void *ctx, json_t *event);
/* Writes a park's record (borrowed) to the session file, or its end (NULL). */
typedef void (*park_file_fn)(void *ctx, const json_t *record);

struct park {
	struct clock *clock;      /* borrowed */
	park_emit_fn emit;
	void *ctx;
	bool parked;              /* the chain's wait timer runs to the reset */
	bool probing;             /* the attempt after a park is out */
	int parks;                /* parks of this prompt */
	int64_t reset_at;         /* epoch ms the current park ends */
	int64_t parked_at;        /* epoch ms it began */
	int64_t spent_ms;         /* waited in this prompt's parks before the current */
	int64_t next_probe_ms;    /* the next unstated reset's wait */
	enum park_source source;
	int64_t heartbeat_ms;
	struct clock_timer heartbeat;
	json_t *record;           /* the last one written, for park_record_stopped */
	park_file_fn file;        /* NULL: no session file */
	void *file_ctx;
};

void park_init(struct park *self, struct clock *clock, park_emit_fn emit, void *ctx);
/* Where the records go (file may be NULL). */
void park_set_file(struct park *self, park_file_fn file, void *ctx);
/* Stops the heartbeat and forgets every park: a new prompt, the end of one,
 * an abort, a release. */
void park_forget(struct park *self);

/* Whether policy (borrowed) parks a prompt that met a usage limit with no
 * switch left. off: false, *plan untouched. hint_ms: the server's wait or
 * -1; source where it came from. now_ms: epoch ms. Pure but for reading
 * self's counts. */
bool park_enabled(const struct policy *policy);
void park_plan(const struct park *self, const struct policy *policy, int64_t hint_ms,
	       enum park_source source, int64_t now_ms, struct park_plan *plan);
/* A usage limit with nothing to switch to (v: the attempt's verdict on r,
 * both borrowed): true when the prompt parks (*plan filled in; an unstated
 * reset's probe time becomes v's hint, which the fleet learns); false when
 * it ends, v made final saying why (retry.usageLimitWait off: as ever,
 * "(usage limit: resets in 4h12m)"; on: why it does not wait). */
bool park_consider(const struct park *self, const struct policy *policy,
		   const struct provider_result *r, struct policy_verdict *v, int64_t now_ms,
		   struct park_plan *plan);
/* A park learned from the fleet's word rather than from this daemon's own
 * answer wakes offset_ms later than the reset, so that the daemon whose
 * answer it was probes first and the others leave spread out. */
void park_stagger(struct park_plan *plan, int64_t offset_ms);
/* The park planned is on: the heartbeat starts (every heartbeat_ms). */
void park_begin(struct park *self, const struct park_plan *plan, int64_t heartbeat_ms,
		int64_t now_ms);
/* The park's timer is over: the probe goes; the time counts as spent. */
void park_wake(struct park *self, int64_t now_ms);

/* auto_retry_start's resetAt and resetSource, added to ev (borrowed). */
void park_describe(const struct park *self, json_t *ev);
/* get_state's usageReset: {"resetAt","delayMs","resetSource","parks",
 * "waitedMs"} (new reference), or NULL when not parked. */
json_t *park_state_json(const struct park *self, int64_t now_ms);

/* Writes what the session file keeps of the park that just began, so
 * that a daemon started again goes on waiting: {"resetAtMs","resetAt",
 * "resetSource","parks","waitedMs","parkedAtMs","errorMessage","rule",
 * "policy"} (error, rule: borrowed; policy: the chain's snapshot). Self
 * keeps a copy until park_forget. */
void park_record(struct park *self, const struct policy *policy, const char *error,
		 const char *rule);
/* A park cancelled: its end, unless keep (the daemon stops: it stays). */
void park_record_end(struct park *self, bool keep);
/* Whether the probe after a park (or the backoff after that probe) is out. */
bool park_probe_out(const struct park *self);
/* The daemon stops while park_probe_out: the park's record again, due at
 * now_ms, so that a --continue probes at once. */
void park_record_stopped(struct park *self, int64_t now_ms);
/* A park read back (record: borrowed, as park_record_json wrote it) at
 * now_ms: self takes its counts, *plan the rest of the wait (0 when the
 * reset has passed: the probe goes at once). The time the daemon was
 * down counts as waited. A file can say anything: a reset further than
 * policy's (borrowed) retry.maxUsageWaitMs from now, or a wait that with
 * the time spent passes it, is not waited: plan->park false, plan->why
 * the sentence the prompt ends with. Returns 0, or -1 when the record is
 * not one. */
int park_restore(struct park *self, const struct policy *policy, const json_t *record,
		 int64_t now_ms, struct park_plan *plan);

/* The policy a resumed park runs on: the record's snapshot (borrowed),
 * checked again against settings (borrowed) as it comes from a file, the
 * daemon-wide keys the daemon's; the daemon's policy when it fails the
 * check (logged). New reference, NULL when out of memory. */
json_t *park_record_policy(const json_t *record, const struct settings *settings);

const char *park_source_name(enum park_source source);
/* ms since the epoch as ISO-8601 UTC ("2026-01-01T04:12:00Z", whole
 * seconds; out: at least 24 bytes). Returns out. */
char *park_iso8601(int64_t ms, char *out, size_t n);

#endif

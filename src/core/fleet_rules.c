/* fleet_rules — the fleet's decisions on shared records; see fleet_rules.h.
 * src/core/fleet.lua is the same code for Redis: change both together (the
 * vectors in tests/fixtures/fleet/ catch a difference). */
#include "core/fleet_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/number.h"

const char *fleet_reason_name(enum fleet_reason r)
{
	switch (r) {
	case FLEET_SERVER_BLOCK:
		return "server-block";
	case FLEET_PACING:
		return "pacing";
	case FLEET_BUDGET:
		return "budget";
	case FLEET_CONCURRENCY:
		return "concurrency";
	case FLEET_PROBE:
		return "probe";
	default:
		return "go";
	}
}

void fleet_params_default(struct fleet_params *p)
{
	memset(p, 0, sizeof(*p));
	p->min_block_ms = 1000;
	p->max_block_ms = 6 * 3600 * 1000;
	p->probe_interval_ms = 2000;
	p->open_after = 3;
	p->window_ms = 60000;
	p->k_milli = 2000;
	p->throttle_min = 10;
	p->budget_max = 10000;
	p->budget_ratio = 100;
	p->divide = 1;
}

void fleet_scope_init(struct fleet_scope *s)
{
	memset(s, 0, sizeof(*s));
	s->tokens = -1;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* The window is two halves: counts older than half a window move to
 * "prev", older than a whole one are forgotten. */
static void roll(struct fleet_scope *s, const struct fleet_params *p, int64_t now)
{
	int64_t age = now - s->win_start;

	if (age >= p->window_ms || age < 0) {
		s->req_prev = s->acc_prev = 0;
		s->req_cur = s->acc_cur = 0;
		s->win_start = now;
	} else if (age >= p->window_ms / 2) {
		s->req_prev = s->req_cur;
		s->acc_prev = s->acc_cur;
		s->req_cur = s->acc_cur = 0;
		s->win_start = now;
	}
}

int64_t fleet_rules_rpm(const struct fleet_scope *s, const struct fleet_params *p)
{
	return p->rpm > 0 ? p->rpm : s->rpm_learned;
}

static bool budget_spent(const struct fleet_scope *s, const struct fleet_params *p)
{
	return p->budget_max > 0 && s->tokens >= 0 && s->tokens * 2 <= p->budget_max;
}

/* SRE's client-side throttle: the share of requests to hold back, in
 * thousandths: (requests - K * accepts) / (requests + 1). */
static int64_t reject_milli(const struct fleet_scope *s, const struct fleet_params *p)
{
	int64_t req = s->req_cur + s->req_prev, acc = s->acc_cur + s->acc_prev;
	int64_t over = req * 1000 - p->k_milli * acc;

	if (!s->shared || req < p->throttle_min || over <= 0)
		return 0;
	return over / (req + 1);
}

void fleet_rules_acquire(struct fleet_scope *s, const struct fleet_params *p, int64_t now,
			 bool retry, int64_t rand_milli, struct fleet_verdict *v)
{
	int64_t gate = now, rpm;
	enum fleet_reason reason = FLEET_GO;
	bool spent = retry && s->shared && budget_spent(s, p);

	memset(v, 0, sizeof(*v));
	roll(s, p, now);
	if (s->block_until > now) {
		gate = s->block_until;
		reason = FLEET_SERVER_BLOCK;
	}
	if ((s->open && s->shared) || spent) {
		/* One probe at a time: whoever finds the slot free takes it. */
		if (s->probe_until > gate) {
			v->wait_ms = s->probe_until - now;
			v->reason = s->open ? FLEET_PROBE : FLEET_BUDGET;
			return;
		}
		s->probe_until = gate + (s->probe_gap > 0 ? s->probe_gap : p->probe_interval_ms);
		v->probe = true;
	} else if (rand_milli < reject_milli(s, p)) {
		v->wait_ms = gate - now + p->probe_interval_ms;
		v->reason = FLEET_PROBE;
		return;
	}
	rpm = fleet_rules_rpm(s, p);
	if (rpm > 0) {
		/* 5 % under the rate: a window that counts one request too many
		 * refuses it, and requests do not arrive exactly as spaced. */
		int64_t interval = (63000 * max64(p->divide, 1) + rpm - 1) / rpm;
		int64_t slot = max64(s->pace_tat, gate);

		s->pace_tat = slot + interval;
		if (slot > gate && reason == FLEET_GO)
			reason = FLEET_PACING;
		gate = slot;
	}
	v->wait_ms = gate - now;
	v->reason = v->wait_ms > 0 ? reason : FLEET_GO;
}

/* The provider answers again: no streak, no circuit, no probe. */
static void end_failing(struct fleet_scope *s)
{
	s->fail_streak = 0;
	s->fail_member = 0;
	s->shared = 0;
	s->open = 0;
	s->probe_until = 0;
	s->probe_gap = 0;
}

void fleet_rules_report(struct fleet_scope *s, const struct fleet_params *p, int64_t now,
			const struct fleet_outcome *o)
{
	int64_t tokens;
	bool was_open = s->open != 0;

	if (o->kind == FLEET_OUT_LOCAL)
		return;
	roll(s, p, now);
	if (o->kind != FLEET_OUT_SERVER && s->open) {
		/* The provider is back for everyone: what the failing time
		 * counted (requests without accepts, spent tokens) would hold
		 * the recovery back. */
		s->req_cur = s->acc_cur = s->req_prev = s->acc_prev = 0;
		s->tokens = -1;
	}
	tokens = s->tokens < 0 ? p->budget_max : s->tokens;
	s->req_cur = number_add(s->req_cur, 1);
	if (o->kind == FLEET_OUT_SERVER) {
		if (s->fail_streak > 0 && s->fail_member != o->member)
			s->shared = 1;
		s->fail_streak = number_add(s->fail_streak, 1);
		s->fail_member = o->member;
		if (p->budget_max > 0)
			s->tokens = max64(tokens - 1000, 0);
		if (p->open_after > 0 && s->fail_streak >= p->open_after && s->shared)
			s->open = 1;
		if (s->open) {
			/* Probes back off while the provider stays down (each
			 * failure doubles the gap, up to 4x): a long outage sees a
			 * handful, and a recovery is still noticed within 4x. */
			int64_t base = p->probe_interval_ms, gap = s->probe_gap;

			s->probe_gap = !was_open || gap <= 0 ? base : min64(gap * 2, base * 4);
			s->probe_until = max64(s->probe_until, now + s->probe_gap);
		}
	} else {
		s->acc_cur = number_add(s->acc_cur, 1);
		end_failing(s);
		if (p->budget_max > 0) {
			tokens = min64(tokens + p->budget_ratio, p->budget_max);
			s->tokens = tokens >= p->budget_max ? -1 : tokens;
		}
	}
	if (o->block_ms > 0 && o->block_ms >= p->min_block_ms)
		s->block_until = max64(s->block_until,
				       number_add(now, min64(o->block_ms, p->max_block_ms)));
	if (o->rpm_limit > 0)
		s->rpm_learned = o->rpm_limit;
}

void fleet_rules_clear(struct fleet_scope *s)
{
	end_failing(s);
	s->block_until = 0;
	s->pace_tat = 0;
	s->tokens = -1;
	s->req_cur = s->acc_cur = s->req_prev = s->acc_prev = 0;
}

void fleet_rules_exhaust(int64_t *until, const struct fleet_params *p, int64_t now,
			 int64_t reset_ms)
{
	if (reset_ms < 0)
		reset_ms = 0;
	*until = max64(*until, number_add(now, min64(reset_ms, p->max_block_ms)));
}

void fleet_rules_model_report(struct fleet_model *m, int64_t now, bool overload, bool success,
			      int64_t after, int64_t cooldown_ms)
{
	if (success) {
		m->streak = 0;
		return;
	}
	if (!overload)
		return;
	m->streak = number_add(m->streak, 1);
	if (after > 0 && m->streak >= after) {
		m->cool_until = max64(m->cool_until, number_add(now, cooldown_ms));
		m->streak = 0;
	}
}

/* The record's fields by name, in one table for both directions. */
#define SCOPE_FIELDS(X) \
	X(block_until) X(pace_tat) X(rpm_learned) X(tokens) X(win_start) \
	X(req_cur) X(acc_cur) X(req_prev) X(acc_prev) X(fail_streak) \
	X(fail_member) X(shared) X(open) X(probe_until) X(probe_gap)

size_t fleet_scope_format(const struct fleet_scope *s, char *out, size_t cap)
{
	size_t n = 0;
	int k;

#define FMT(f)                                                                      \
	k = snprintf(out + n, n < cap ? cap - n : 0, "%s%s=%lld", n ? " " : "", #f, \
		     (long long)s->f);                                              \
	n += k > 0 ? (size_t)k : 0;
	SCOPE_FIELDS(FMT)
#undef FMT
	/* The newline ends the record: a writer killed between its write and
	 * its truncate leaves an older tail after it, which is not read. */
	k = snprintf(out + n, n < cap ? cap - n : 0, "\n");
	n += k > 0 ? (size_t)k : 0;
	return n < cap ? n : 0;
}

int fleet_scope_parse(struct fleet_scope *s, const char *text, size_t len)
{
	const char *p = text, *end = memchr(text, '\n', len);
	bool any = false;

	if (end == NULL)
		end = text + len;
	fleet_scope_init(s);
	while (p < end) {
		const char *eq, *sp;
		char name[32], num[24];
		long long v;
		char *stop;

		while (p < end && *p == ' ')
			p++;
		if (p == end)
			break;
		sp = memchr(p, ' ', (size_t)(end - p));
		if (sp == NULL)
			sp = end;
		eq = memchr(p, '=', (size_t)(sp - p));
		if (eq == NULL || (size_t)(eq - p) >= sizeof(name) ||
		    (size_t)(sp - eq - 1) >= sizeof(num) || sp - eq - 1 == 0)
			return -1;
		memcpy(name, p, (size_t)(eq - p));
		name[eq - p] = '\0';
		memcpy(num, eq + 1, (size_t)(sp - eq - 1));
		num[sp - eq - 1] = '\0';
		v = strtoll(num, &stop, 10);
		if (*stop != '\0')
			return -1;
#define PARSE(f)                         \
	if (strcmp(name, #f) == 0) {     \
		s->f = (int64_t)v;       \
		any = true;              \
	} else
		SCOPE_FIELDS(PARSE) { /* unknown: a newer daemon's field */ }
#undef PARSE
		p = sp;
	}
	return any ? 0 : -1;
}

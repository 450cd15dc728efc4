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
	int64_t age = number_sat_sub(now, s->win_start);

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
	return p->budget_max > 0 && s->tokens >= 0 && s->tokens <= p->budget_max / 2;
}

/* SRE's client-side throttle: the share of requests to hold back, in
 * thousandths: (requests - K * accepts) / (requests + 1). */
static int64_t reject_milli(const struct fleet_scope *s, const struct fleet_params *p)
{
	int64_t req = number_add(s->req_cur, s->req_prev), acc = number_add(s->acc_cur, s->acc_prev);
	int64_t over = number_sat_sub(number_sat_mul(req, 1000), number_sat_mul(p->k_milli, acc));

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
			v->wait_ms = number_sat_sub(s->probe_until, now);
			v->reason = s->open ? FLEET_PROBE : FLEET_BUDGET;
			return;
		}
		s->probe_until = number_sat_add(gate, s->probe_gap > 0 ? s->probe_gap
								      : p->probe_interval_ms);
		v->probe = true;
	} else if (rand_milli < reject_milli(s, p)) {
		v->wait_ms = number_sat_add(number_sat_sub(gate, now), p->probe_interval_ms);
		v->reason = FLEET_PROBE;
		return;
	}
	rpm = fleet_rules_rpm(s, p);
	if (rpm > 0) {
		/* 5 % under the rate: a window that counts one request too many
		 * refuses it, and requests do not arrive exactly as spaced. */
		int64_t interval =
			number_sat_add(number_sat_mul(63000, max64(p->divide, 1)), rpm - 1) / rpm;
		int64_t slot = max64(s->pace_tat, gate);

		s->pace_tat = number_sat_add(slot, interval);
		if (slot > gate && reason == FLEET_GO)
			reason = FLEET_PACING;
		gate = slot;
	}
	v->wait_ms = number_sat_sub(gate, now);
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
			s->tokens = max64(number_sat_sub(tokens, 1000), 0);
		if (p->open_after > 0 && s->fail_streak >= p->open_after && s->shared)
			s->open = 1;
		if (s->open) {
			/* Probes back off while the provider stays down (each
			 * failure doubles the gap, up to 4x): a long outage sees a
			 * handful, and a recovery is still noticed within 4x. */
			int64_t base = p->probe_interval_ms, gap = s->probe_gap;

			s->probe_gap = !was_open || gap <= 0
					       ? base
					       : min64(number_sat_mul(gap, 2), number_sat_mul(base, 4));
			s->probe_until = max64(s->probe_until, number_sat_add(now, s->probe_gap));
		}
	} else {
		s->acc_cur = number_add(s->acc_cur, 1);
		end_failing(s);
		if (p->budget_max > 0) {
			tokens = min64(number_sat_add(tokens, p->budget_ratio), p->budget_max);
			s->tokens = tokens >= p->budget_max ? -1 : tokens;
		}
	}
	if (o->block_ms > 0 && o->block_ms >= p->min_block_ms) {
		int64_t until = number_add(now, min64(o->block_ms, p->max_block_ms));

		/* The longest word wins, and its teller is the one named. */
		if (until >= s->block_until) {
			s->block_until = until;
			s->block_seen = now;
			s->block_member = o->member;
			s->block_status = o->status;
			s->block_asked = o->block_ms;
		}
	}
	if (o->rpm_limit > 0)
		s->rpm_learned = o->rpm_limit;
}

void fleet_rules_clear(struct fleet_scope *s)
{
	end_failing(s);
	s->block_until = 0;
	s->block_seen = s->block_member = s->block_status = s->block_asked = 0;
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

bool fleet_rules_claim(int64_t *until, int64_t now, int64_t hold_ms)
{
	if (*until <= 0 || *until > now)
		return false;
	*until = number_add(now, hold_ms);
	return true;
}

void fleet_rules_unclaim(int64_t *until, int64_t now, int64_t hold_ms)
{
	if (*until > now && *until <= number_add(now, hold_ms))
		*until = now;
}

int64_t fleet_rules_turn_gap(const struct fleet_params *p, int64_t rpm_learned)
{
	if (p->rpm > 0)
		return max64(60000 / p->rpm, 1);
	if (rpm_learned > 0)
		return min64(max64(60000 / rpm_learned, FLEET_TURN_GAP_MIN_MS), FLEET_TURN_GAP_MAX_MS);
	return FLEET_TURN_GAP_MS;
}

void fleet_rules_turn_start(int64_t *turn, int64_t *turn_end, int64_t now, int64_t gap)
{
	*turn = number_add(now, gap);
	*turn_end = number_add(now, FLEET_TURN_WINDOW_MS);
}

int64_t fleet_rules_turn_bound(int64_t turn_end, const struct fleet_params *p)
{
	return number_sat_add(turn_end, fleet_rules_slot_bound(p));
}

int64_t fleet_rules_turn(int64_t *turn, int64_t turn_end, int64_t now, int64_t gap,
			 const struct fleet_params *p)
{
	int64_t bound = fleet_rules_turn_bound(turn_end, p), slot;

	if (turn_end <= now)
		return 0;
	slot = min64(max64(*turn, now), bound);
	*turn = min64(number_sat_add(slot, gap), bound);
	return slot - now;
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
	X(fail_member) X(shared) X(open) X(probe_until) X(probe_gap) \
	X(block_seen) X(block_member) X(block_status) X(block_asked)

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
		char name[32];
		int64_t v;

		while (p < end && *p == ' ')
			p++;
		if (p == end)
			break;
		sp = memchr(p, ' ', (size_t)(end - p));
		if (sp == NULL)
			sp = end;
		eq = memchr(p, '=', (size_t)(sp - p));
		/* A number that does not fit int64_t is a damaged record, not
		 * a saturated value. */
		if (eq == NULL || (size_t)(eq - p) >= sizeof(name) ||
		    number_parse_int64(eq + 1, (size_t)(sp - eq - 1), &v) != 0)
			return -1;
		memcpy(name, p, (size_t)(eq - p));
		name[eq - p] = '\0';
#define PARSE(f)                         \
	if (strcmp(name, #f) == 0) {     \
		s->f = v;                \
		any = true;              \
	} else
		SCOPE_FIELDS(PARSE) { /* unknown: a newer daemon's field */ }
#undef PARSE
		p = sp;
	}
	return any ? 0 : -1;
}

void fleet_scope_merge(struct fleet_scope *mine, const struct fleet_scope *seen)
{
	if (seen->block_until > mine->block_until) {
		mine->block_until = seen->block_until;
		mine->block_seen = seen->block_seen;
		mine->block_member = seen->block_member;
		mine->block_status = seen->block_status;
		mine->block_asked = seen->block_asked;
	}
	if (seen->open && !mine->open) {
		mine->open = 1;
		mine->shared = seen->shared;
		mine->fail_streak = max64(mine->fail_streak, seen->fail_streak);
		mine->fail_member = seen->fail_member;
		mine->probe_until = seen->probe_until;
		mine->probe_gap = seen->probe_gap;
	}
	mine->pace_tat = max64(mine->pace_tat, seen->pace_tat);
	if (mine->rpm_learned == 0)
		mine->rpm_learned = seen->rpm_learned;
}

int fleet_ints_parse(const char *text, size_t len, int64_t *v, size_t n)
{
	const char *p = text, *end = memchr(text, '\n', len);
	size_t i = 0;

	memset(v, 0, n * sizeof(*v));
	if (end == NULL)
		end = text + len;
	for (;;) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));

		if (number_parse_int64(p, (size_t)((sp ? sp : end) - p), &v[i++]) != 0) {
			memset(v, 0, n * sizeof(*v));
			return -1;
		}
		/* More numbers than asked for: a newer daemon's fields, after
		 * the ones every version reads. */
		if (sp == NULL || i == n)
			return 0;
		p = sp + 1;
	}
}

int fleet_pair_parse(const char *text, size_t len, int64_t *a, int64_t *b)
{
	int64_t v[2];
	int rc = fleet_ints_parse(text, len, v, 2);

	*a = v[0];
	*b = v[1];
	return rc;
}

/* ---- records read from outside ------------------------------------------ */

int64_t fleet_rules_slot_bound(const struct fleet_params *p)
{
	int64_t b = number_sat_add(number_clamp(p->max_block_ms),
				   number_sat_mul(63000, number_within(p->divide, 1, NUMBER_MAX)));

	return number_sat_add(b, number_sat_mul(number_clamp(p->probe_interval_ms), 4));
}

/* One field: kept when within [lo, hi], else refused and set to init. */
static unsigned keep_within(int64_t *v, int64_t lo, int64_t hi, int64_t init, const char *field,
			    struct fleet_refusal *why, unsigned refused)
{
	if (*v >= lo && *v <= hi)
		return refused;
	if (why != NULL && refused == 0) {
		why->field = field;
		why->value = *v;
	}
	*v = init;
	return refused + 1;
}

unsigned fleet_scope_check(struct fleet_scope *s, const struct fleet_params *p, int64_t now,
			   struct fleet_refusal *why)
{
	int64_t later = number_sat_add(now, FLEET_SKEW_MS);
	int64_t block = number_sat_add(later, number_clamp(p->max_block_ms));
	int64_t slot = number_sat_add(later, fleet_rules_slot_bound(p));
	int64_t win = number_sat_add(later, number_clamp(p->window_ms));
	unsigned n = 0;

#define RANGE(f, lo, hi, init) n = keep_within(&s->f, lo, hi, init, #f, why, n)
	RANGE(block_until, 0, block, 0);
	RANGE(pace_tat, 0, slot, 0);
	RANGE(rpm_learned, 0, FLEET_RPM_MAX, 0);
	RANGE(tokens, -1, FLEET_COUNT_MAX, -1);
	RANGE(win_start, 0, win, 0);
	RANGE(req_cur, 0, FLEET_COUNT_MAX, 0);
	RANGE(acc_cur, 0, FLEET_COUNT_MAX, 0);
	RANGE(req_prev, 0, FLEET_COUNT_MAX, 0);
	RANGE(acc_prev, 0, FLEET_COUNT_MAX, 0);
	RANGE(fail_streak, 0, FLEET_COUNT_MAX, 0);
	RANGE(fail_member, 0, NUMBER_MAX, 0);
	RANGE(shared, 0, 1, 0);
	RANGE(open, 0, 1, 0);
	RANGE(probe_until, 0, slot, 0);
	RANGE(probe_gap, 0, number_sat_mul(number_clamp(p->probe_interval_ms), 4), 0);
	RANGE(block_seen, 0, later, 0);
	RANGE(block_member, 0, NUMBER_MAX, 0);
	RANGE(block_status, 0, 999, 0);
	RANGE(block_asked, 0, FLEET_ASKED_MAX_MS, 0);
#undef RANGE
	return n;
}

unsigned fleet_until_check(int64_t *until, const struct fleet_params *p, int64_t now,
			   struct fleet_refusal *why)
{
	int64_t later = number_sat_add(now, FLEET_SKEW_MS);

	return keep_within(until, 0, number_sat_add(later, number_clamp(p->max_block_ms)), 0,
			   "until", why, 0);
}

unsigned fleet_turn_check(int64_t *turn, int64_t *turn_end, int64_t *gap,
			  const struct fleet_params *p, int64_t now, struct fleet_refusal *why,
			  unsigned refused)
{
	int64_t later = number_sat_add(now, FLEET_SKEW_MS);
	unsigned n = keep_within(turn_end, 0, number_sat_add(later, FLEET_TURN_WINDOW_MS), 0,
				 "turn_end", why, refused);

	n = keep_within(turn, 0, fleet_rules_turn_bound(number_sat_add(later,
								       FLEET_TURN_WINDOW_MS), p),
			0, "turn", why, n);
	return keep_within(gap, 0, FLEET_TURN_GAP_MAX_MS, 0, "gap", why, n);
}

unsigned fleet_model_check(struct fleet_model *m, int64_t now, int64_t cool_max_ms,
			   struct fleet_refusal *why)
{
	unsigned n = keep_within(&m->streak, 0, FLEET_COUNT_MAX, 0, "streak", why, 0);

	int64_t later = number_sat_add(now, FLEET_SKEW_MS);

	return keep_within(&m->cool_until, 0, number_sat_add(later, number_clamp(cool_max_ms)), 0,
			   "cool_until", why, n);
}

int fleet_reason_from_code(int64_t code, enum fleet_reason *out)
{
	static const enum fleet_reason known[] = { FLEET_GO, FLEET_SERVER_BLOCK, FLEET_PACING,
						   FLEET_BUDGET, FLEET_CONCURRENCY, FLEET_PROBE };

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if ((int64_t)known[i] == code) {
			*out = known[i];
			return 0;
		}
	}
	return -1;
}

int fleet_reply_check(const int64_t *v, size_t n, size_t ncreds, size_t nmodels,
		      const struct fleet_params *p, int64_t now, int64_t wait_max_ms,
		      struct fleet_reply *out, struct fleet_refusal *why)
{
	static const char *const names[] = { "wait_ms", "reason", "probe", "cred_index",
					     "cred_until", "model_index", "fleet_size",
					     "block_until", "lease", "now", "block_seen",
					     "block_member", "block_status", "block_asked",
					     "cred_probing" };
	int64_t later = number_sat_add(now, FLEET_SKEW_MS);
	int64_t t = number_sat_add(later, number_clamp(p->max_block_ms));
	const int64_t lo[15] = { 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	const int64_t hi[15] = { number_clamp(wait_max_ms), FLEET_PROBE, 1,
				 (int64_t)ncreds - 1, t, (int64_t)nmodels - 1, FLEET_MEMBERS_MAX,
				 t, 1, INT64_MAX, later, NUMBER_MAX, 999, FLEET_ASKED_MAX_MS, 1 };
	size_t m = n >= 15 ? 15 : n >= 14 ? 14 : 10;
	enum fleet_reason reason = FLEET_GO;

	memset(out, 0, sizeof(*out));
	if (n < 10) {
		if (why != NULL) {
			why->field = "length";
			why->value = (int64_t)n;
		}
		return -1;
	}
	for (size_t i = 0; i < m; i++) {
		bool bad = v[i] < lo[i] || v[i] > hi[i];

		if (i == 1)
			bad = fleet_reason_from_code(v[i], &reason) != 0;
		if (i == 3 && ncreds == 0)
			bad = v[i] != -1;  /* no credential listed: the script says -1 */
		if (bad) {
			if (why != NULL) {
				why->field = names[i];
				why->value = v[i];
			}
			return -1;
		}
	}
	out->wait_ms = v[0];
	out->reason = reason;
	out->probe = v[2] != 0;
	out->cred = (int)v[3];
	out->cred_until = v[4];
	out->model = (int)v[5];
	out->members = v[6] > 0 ? v[6] : 1;
	out->block_until = v[7];
	out->lease = v[8] != 0;
	if (m >= 14) {
		out->block_seen = v[10];
		out->block_member = v[11];
		out->block_status = v[12];
		out->block_asked = v[13];
	}
	out->cred_probing = m >= 15 && v[14] != 0;
	return 0;
}

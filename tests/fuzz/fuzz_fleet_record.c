/* Fuzz target "fleet_record": a fleet record file's text as the user store
 * reads it (core/fleet_rules: fleet_scope_parse, fleet_pair_parse, the
 * checks), then the rules run on it.
 *
 * Input: byte 0 picks the kind (even: a scope record, odd: a credential's
 * or a model's pair); bytes 1..8 (host order) are the reader's now, brought
 * into [0, 2^50]; the rest is the record text. Both the record as parsed
 * and the record as checked go through acquire and report, so UBSan sees
 * the rules' arithmetic on any int64 a file may hold.
 * Invariants: after a check every field is in its documented range and a
 * second check refuses nothing; a checked record formats and parses back
 * to itself; the rules on a checked record never wait past the slot bound
 * and never block past now + FLEET_SKEW_MS + max_block_ms; a credential or model record
 * after exhaust / report stays in range. */
#include <string.h>

#include "base/number.h"
#include "core/fleet_rules.h"
#include "fuzz.h"

#define NOW_MAX (INT64_C(1) << 50)

static void check_scope_range(const struct fleet_scope *s, const struct fleet_params *p,
			      int64_t now)
{
	struct fleet_scope again = *s;
	struct fleet_refusal why;
	int64_t far = now + FLEET_SKEW_MS + p->max_block_ms;

	FUZZ_CHECK(fleet_scope_check(&again, p, now, &why) == 0, "checked twice: %s=%lld",
		   why.field, (long long)why.value);
	FUZZ_CHECK(memcmp(&again, s, sizeof(again)) == 0, "a second check changed the record");
	FUZZ_CHECK(s->block_until >= 0 && s->block_until <= far,
		   "block_until %lld", (long long)s->block_until);
}

static void run_rules(struct fleet_scope s, const struct fleet_params *p, int64_t now,
		      bool checked, const uint8_t *data, size_t size)
{
	struct fleet_verdict v;
	struct fleet_outcome o = { .kind = FLEET_OUT_SERVER, .block_ms = -1, .member = 7 };
	int64_t bound = fleet_rules_slot_bound(p);
	int64_t far = now + FLEET_SKEW_MS + p->max_block_ms;

	fleet_rules_acquire(&s, p, now, size > 9 && (data[9] & 1), size > 10 ? data[10] % 1000 : 0,
			    &v);
	if (checked) {
		/* The latest a checked record names: its skew, then a block, a
		 * slot or a probe; the throttle adds one probe interval. */
		int64_t most = FLEET_SKEW_MS + bound + p->probe_interval_ms;

		FUZZ_CHECK(v.wait_ms >= 0 && v.wait_ms <= most, "wait %lld past the bound %lld",
			   (long long)v.wait_ms, (long long)most);
		FUZZ_CHECK(v.reason >= FLEET_GO && v.reason <= FLEET_PROBE, "reason %d", v.reason);
	}
	if (size > 11)
		o.kind = (enum fleet_outcome_kind)(data[11] % 4);
	if (size > 19) {
		memcpy(&o.block_ms, data + 12, sizeof(o.block_ms));
		o.block_ms = o.block_ms < 0 ? -1 : o.block_ms;
	}
	fleet_rules_report(&s, p, now, &o);
	fleet_rules_acquire(&s, p, now + 1, true, 999, &v);
	if (checked) {
		struct fleet_refusal why;

		FUZZ_CHECK(s.block_until <= far, "report blocked to %lld",
			   (long long)s.block_until);
		FUZZ_CHECK(v.wait_ms >= 0, "negative wait %lld", (long long)v.wait_ms);
		(void)why;
	}
	(void)fleet_rules_rpm(&s, p);
}

static void fuzz_scope(const char *text, size_t len, const struct fleet_params *p, int64_t now,
		       const uint8_t *data, size_t size)
{
	struct fleet_scope raw, s, back;
	struct fleet_refusal why;
	char out[1024];
	size_t n;

	if (fleet_scope_parse(&raw, text, len) != 0)
		return;
	run_rules(raw, p, now, false, data, size);
	s = raw;
	(void)fleet_scope_check(&s, p, now, &why);
	check_scope_range(&s, p, now);
	n = fleet_scope_format(&s, out, sizeof(out));
	FUZZ_CHECK(n > 0, "a checked record does not format");
	FUZZ_CHECK(fleet_scope_parse(&back, out, n) == 0, "a formatted record does not parse");
	FUZZ_CHECK(memcmp(&back, &s, sizeof(s)) == 0, "format/parse changed the record");
	run_rules(s, p, now, true, data, size);
}

static void fuzz_train(const char *text, size_t len, const struct fleet_params *p, int64_t now);

static void fuzz_pair(const char *text, size_t len, const struct fleet_params *p, int64_t now,
		      const uint8_t *data, size_t size)
{
	struct fleet_model m;
	struct fleet_refusal why;
	int64_t a, b, until, reset = -1;
	int64_t far = now + FLEET_SKEW_MS + p->max_block_ms;
	int64_t cool_far = now + FLEET_SKEW_MS + FLEET_COOL_MAX_MS;

	if (fleet_pair_parse(text, len, &a, &b) != 0) {
		FUZZ_CHECK(a == 0 && b == 0, "a refused pair left %lld %lld", (long long)a,
			   (long long)b);
		return;
	}
	if (size > 19)
		memcpy(&reset, data + 12, sizeof(reset));
	/* As parsed: UBSan on the rules' arithmetic. */
	until = a;
	fleet_rules_exhaust(&until, p, now, reset);
	m.streak = a;
	m.cool_until = b;
	fleet_rules_model_report(&m, now, true, false, 1, reset);
	/* As checked. */
	until = a;
	(void)fleet_until_check(&until, p, now, &why);
	FUZZ_CHECK(until >= 0 && until <= far, "until %lld", (long long)until);
	fleet_rules_exhaust(&until, p, now, reset);
	FUZZ_CHECK(until >= 0 && until <= far, "exhausted until %lld",
		   (long long)until);
	m.streak = a;
	m.cool_until = b;
	(void)fleet_model_check(&m, now, FLEET_COOL_MAX_MS, &why);
	FUZZ_CHECK(m.streak >= 0 && m.streak <= FLEET_COUNT_MAX && m.cool_until >= 0 &&
			   m.cool_until <= cool_far,
		   "model %lld %lld", (long long)m.streak, (long long)m.cool_until);
	fleet_rules_model_report(&m, now, true, false, 1, number_within(reset, 0, FLEET_COOL_MAX_MS));
	FUZZ_CHECK(m.cool_until <= cool_far, "cooled to %lld",
		   (long long)m.cool_until);
	fuzz_train(text, len, p, now);
}

/* A credential's record with its train ("until turn turn_end gap"): once
 * checked, the gap is one a train can have, no slot lies past the train's
 * bound, and a record that is refused whole has no train left. */
static void fuzz_train(const char *text, size_t len, const struct fleet_params *p, int64_t now)
{
	struct fleet_refusal why;
	int64_t v[4], gap, bound;

	if (fleet_ints_parse(text, len, v, 4) != 0)
		return;
	(void)fleet_until_check(&v[0], p, now, &why);
	(void)fleet_turn_check(&v[1], &v[2], &v[3], p, now, &why, 0);
	FUZZ_CHECK(v[2] >= 0 && v[2] <= now + FLEET_SKEW_MS + FLEET_TURN_WINDOW_MS,
		   "turn_end %lld", (long long)v[2]);
	FUZZ_CHECK(v[3] >= 0 && v[3] <= FLEET_TURN_GAP_MAX_MS, "gap %lld", (long long)v[3]);
	gap = v[3] > 0 ? v[3] : fleet_rules_turn_gap(p, v[0]);
	FUZZ_CHECK(gap >= 1, "gap %lld", (long long)gap);
	bound = fleet_rules_turn_bound(v[2], p);
	for (int i = 0; i < 4; i++) {
		int64_t w = fleet_rules_turn(&v[1], v[2], now, gap, p);

		FUZZ_CHECK(w == 0 || (w > 0 && v[2] > now && now + w <= bound),
			   "turn wait %lld past the bound", (long long)w);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_params p;
	int64_t now = 1764633600000;
	const char *text;
	size_t len;

	if (size < 1)
		return 0;
	fleet_params_default(&p);
	if (size > 8) {
		memcpy(&now, data + 1, sizeof(now));
		now = now < 0 ? -(now + 1) : now;
		now %= NOW_MAX;
	}
	if (size > 21) {
		p.rpm = data[20] % 4 == 0 ? 0 : data[20] * 7;
		p.divide = 1 + data[21] % 50;
		p.budget_max = data[20] & 1 ? 10000 : 0;
	}
	text = (const char *)data + (size > 22 ? 22 : size);
	len = size > 22 ? size - 22 : 0;
	if (data[0] % 2 == 0)
		fuzz_scope(text, len, &p, now, data, size);
	else
		fuzz_pair(text, len, &p, now, data, size);
	return 0;
}

-- fleet.lua: the fleet's decisions inside Redis, atomically.
--
-- The same code as src/core/fleet_rules.c (read its header for what each
-- rule means); tests/fixtures/fleet/vectors.json runs through both (the C
-- unit test, and tests/e2e/test_fleet_lua.py on a real redis-server) and
-- both must agree: change them together. One script, loaded once (EVALSHA,
-- EVAL after NOSCRIPT), numkeys always 1; ARGV[1] names the op.
--
-- Numbers: Redis's Lua 5.1 has only doubles. Every value stays well under
-- 2^53, where doubles are exact integers; C's truncating division is idiv(),
-- C's saturating number_add() is add(), and a number written to Redis goes
-- through "%d" (no exponent form).
--
-- now: ms of the wall clock, an ARGV. "-1" means Redis's own TIME, the one
-- clock every machine of the fleet shares; ops that take a now return it.
--
-- PARAMS, always these 11 ARGV in this order (struct fleet_params):
--   min_block_ms max_block_ms rpm probe_interval_ms open_after window_ms
--   k_milli throttle_min budget_max budget_ratio divide
-- Booleans are "1"/"0" ("true"/"false" too). An outcome kind is 0..3 or its
-- name: success answered server local (enum fleet_outcome_kind).
-- Reason codes (enum fleet_reason): 0 go, 1 server-block, 2 pacing,
-- 3 budget, 4 concurrency, 5 probe.
--
-- Records are hashes whose fields are the C struct's; a missing field is
-- its init value (0; tokens -1). Every key written gets a PEXPIRE at least
-- 10 minutes (longer while a block, slot or cooldown reaches further), so an
-- idle fleet leaves nothing behind.
--
-- The rule ops, KEYS[1] = the record itself:
--   acquire now retry rand PARAMS              -> {wait_ms, reason, probe, now}
--   report now kind blockMs rpmLimit member PARAMS [status] -> {block_until, now}
--   clear                                      -> 1 if there was a record, else 0
--   record                                     -> {field, value, ...} (19 pairs)
--   exhaust now resetMs PARAMS   (credential)  -> {until, now}
--   model now overload success after cooldownMs (model) -> {streak, cool_until, now}
--
-- The daemon's ops, KEYS[1] = a prefix ending in "}:" ("retryd:{ns}:").
-- Every key is built from it, so all share its hash tag and one cluster
-- slot (the keys are not declared in KEYS: one slot makes that safe; a
-- prefix without a "{...}" is refused):
--   PREFIX members              ZSET member -> last seen (fleet size)
--   PREFIX s:<scope>            scope record
--   PREFIX l:<scope>            ZSET lease holder -> expiry
--   PREFIX c:<provider,cred>    credential record (until)
--   PREFIX m:<provider,model>   model record (streak, cool_until)
-- <...> is each part as "<length>:<bytes>" joined by "|", so no name (with
-- "|", "}", ":" or anything) can make two different tuples one key. A scope
-- is by kind: "provider" (provider), "credential" (provider, cred), "model"
-- (provider, cred, model). SCOPE below = kind provider cred model.
--
--   ask now member kind provider retry rand PARAMS ncreds creds... nmodels
--       models... concurrency leaseTtlMs holder [held [rpmPrior]]
--     held (optional, 0/1): the attempt's reserved wait (server-block or
--     pacing) is over; with the same credential and model picked and no
--     block nor open circuit since, it goes without a second slot (a lease
--     is still taken), else it acquires again. rpmPrior (optional): a rate learned for
--     another scope of the provider, paced at while this scope has none.
--     creds: fingerprints, the current first; models: the current, then
--     the fallbacks. Registers member (members seen in the last 30 s make
--     the fleet size); picks the first credential whose until <= now (one
--     spent before whose reset has passed is claimed: this ask probes, its
--     until moves PROBE_HOLD_MS on and 'prober' names the member)
--     (cred_until is then that one's, already past; none:
--     index -1, cred_until the soonest until, wait until then with reason
--     1 and no acquire; no credentials listed: -1 and 0, and the scope uses
--     cred ""); picks the first model whose cool_until <= now, else the
--     first; acquires on the scope; with concurrency > 0 and a go, takes or
--     refreshes holder's lease (expiry now + ttl) if fewer than concurrency
--     live leases, else waits until the earliest expiry (1 ms .. ttl,
--     reason 4; the acquire's pacing slot or probe stays taken).
--     -> {wait_ms, reason, probe, cred_index, cred_until, model_index,
--         fleet_size, block_until, lease, now, block_seen, block_member,
--         block_status, block_asked, cred_probing}   (indexes from 0; four
--         say who set the block: when, to whom, the status, the wait
--         asked; cred_probing 1: the soonest credential's until is another
--         member's claimed probe)
--   tell now member kind provider cred model outcome blockMs rpmLimit PARAMS
--       usageResetMs overload success after cooldownMs [status]
--     report on the scope; the prober's own answer (good, or a usage limit)
--     ends the credential's claim first; usageResetMs >= 0: exhaust the credential
--     (-1: not a usage limit); overload/success: the model's streak.
--     -> {block_until, cred_until, cool_until, now}
--   release SCOPE holder            -> 1 if holder had a lease, else 0
--   renew now SCOPE holder ttlMs    -> 1 if the lease was live (expiry now +
--                                      ttl), 0 if it was lost
--   clear SCOPE [more creds...]     -> how many records it reset (the
--                                      scope's, the credentials', the model's)
--   state now SCOPE rpm             -> {block_until, open, probe_until,
--       tokens, rpm, leases, fleet_size, now}   (read-only; rpm: the
--       configured one, 0 = learned; the result is the effective rate)

local NUMBER_MAX = 9007199254740991
local KEEP_MS = 600000
-- fleet_rules.h's FLEET_PROBE_HOLD_MS: a claimed probe holds the others back.
local PROBE_HOLD_MS = 5000
local MEMBER_MS = 30000

local GO, SERVER_BLOCK, PACING, BUDGET, CONCURRENCY, PROBE = 0, 1, 2, 3, 4, 5
local OUT = { success = 0, answered = 1, server = 2, ['local'] = 3 }
local OUT_SERVER, OUT_LOCAL = 2, 3

local FIELDS = { 'block_until', 'pace_tat', 'rpm_learned', 'tokens', 'win_start', 'req_cur',
	'acc_cur', 'req_prev', 'acc_prev', 'fail_streak', 'fail_member', 'shared', 'open',
	'probe_until', 'probe_gap', 'block_seen', 'block_member', 'block_status', 'block_asked' }
local PARAMS = { 'min_block_ms', 'max_block_ms', 'rpm', 'probe_interval_ms', 'open_after',
	'window_ms', 'k_milli', 'throttle_min', 'budget_max', 'budget_ratio', 'divide' }

-- ---- numbers ------------------------------------------------------------

local function int(v, what)
	local n = tonumber(v)
	if n == nil or n ~= math.floor(n) or math.abs(n) > NUMBER_MAX then
		error('fleet.lua: ' .. what .. ' is not an integer: ' .. tostring(v))
	end
	return n
end

local function flag(v)
	return v == '1' or v == 'true'
end

local function fmt(n)
	return string.format('%d', n)
end

local function max(a, b)
	if a > b then return a end
	return b
end

local function min(a, b)
	if a < b then return a end
	return b
end

-- number_clamp()
local function clamp(v)
	if v < 0 then return 0 end
	if v > NUMBER_MAX then return NUMBER_MAX end
	return v
end

-- number_add(): both clamped, the sum saturated.
local function add(a, b)
	return clamp(clamp(a) + clamp(b))
end

-- C's int64 "/": truncates toward zero. The double quotient can be off by
-- one near an integer; the remainder corrects it.
local function idiv(a, b)
	local neg = (a < 0) ~= (b < 0)
	local x, y = math.abs(a), math.abs(b)
	local q = math.floor(x / y)
	local r = x - q * y
	if r < 0 then
		q = q - 1
	elseif r >= y then
		q = q + 1
	end
	if neg then return -q end
	return q
end

local function time_now(v)
	local n = int(v, 'now')
	if n ~= -1 then return n end
	local t = redis.call('TIME')
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function outcome(v)
	local k = OUT[v]
	if k == nil then k = int(v, 'outcome kind') end
	return k
end

local function params_at(i)
	local p = {}
	for j, name in ipairs(PARAMS) do
		if ARGV[i + j - 1] == nil then
			error('fleet.lua: ' .. ARGV[1] .. ' wants the 11 params, missing ' .. name)
		end
		p[name] = int(ARGV[i + j - 1], name)
	end
	return p
end

local function expire(key, far, now)
	redis.call('PEXPIRE', key, fmt(max(far - now, KEEP_MS)))
end

-- ---- records ------------------------------------------------------------

local function scope_init()
	local s = {}
	for _, f in ipairs(FIELDS) do s[f] = 0 end
	s.tokens = -1
	return s
end

-- ---- what is read is believed only within its range ---------------------
-- (fleet_scope_check & co in fleet_rules.c): a field out of range, not an
-- integer, or NaN is taken as its init value, and scope_save then writes
-- that over it: a poisoned value never spreads.

local COUNT_MAX = 1000000000000
local RPM_MAX = 100000000
local COOL_MAX_MS = 30 * 24 * 3600 * 1000
local SKEW_MS = 60000
local ASKED_MAX_MS = 366 * 24 * 3600 * 1000
-- The params of an op that has none (state): the settings' defaults.
local DEFAULT_P = { max_block_ms = 6 * 3600 * 1000, probe_interval_ms = 2000,
	window_ms = 60000, divide = 1 }

-- v when it is an integer within [lo, hi], else init.
local function within(v, lo, hi, init)
	if type(v) ~= 'number' or v ~= v or v ~= math.floor(v) or v < lo or v > hi then
		return init
	end
	return v
end

-- The latest a block or a reset may reach: now + span, with the skew.
local function reach(now, span)
	return add(add(now, SKEW_MS), span)
end

-- fleet_rules_slot_bound()
local function slot_bound(p)
	return add(add(p.max_block_ms, 63000 * max(p.divide, 1)), 4 * p.probe_interval_ms)
end

local function scope_check(s, p, now)
	p = p or DEFAULT_P
	local later = add(now, SKEW_MS)
	local block, slot = add(later, p.max_block_ms), add(later, slot_bound(p))
	local range = {
		block_until = { 0, block, 0 }, pace_tat = { 0, slot, 0 },
		rpm_learned = { 0, RPM_MAX, 0 }, tokens = { -1, COUNT_MAX, -1 },
		win_start = { 0, add(later, p.window_ms), 0 }, req_cur = { 0, COUNT_MAX, 0 },
		acc_cur = { 0, COUNT_MAX, 0 }, req_prev = { 0, COUNT_MAX, 0 },
		acc_prev = { 0, COUNT_MAX, 0 }, fail_streak = { 0, COUNT_MAX, 0 },
		fail_member = { 0, NUMBER_MAX, 0 }, shared = { 0, 1, 0 }, open = { 0, 1, 0 },
		probe_until = { 0, slot, 0 }, probe_gap = { 0, 4 * p.probe_interval_ms, 0 },
		block_seen = { 0, later, 0 }, block_member = { 0, NUMBER_MAX, 0 },
		block_status = { 0, 999, 0 }, block_asked = { 0, ASKED_MAX_MS, 0 },
	}
	for _, f in ipairs(FIELDS) do
		local r = range[f]
		s[f] = within(s[f], r[1], r[2], r[3])
	end
end

-- The record at key, its fields checked against p (nil: DEFAULT_P) and now.
local function scope_load(key, p, now)
	local s = scope_init()
	local raw = redis.call('HGETALL', key)
	for i = 1, #raw, 2 do
		if s[raw[i]] ~= nil then s[raw[i]] = tonumber(raw[i + 1]) or s[raw[i]] end
	end
	local was = {}
	for _, f in ipairs(FIELDS) do was[f] = s[f] end
	s._was = was
	if now ~= nil then scope_check(s, p, now) end
	return s
end

-- Writes the fields that changed; a record that stays all-init is not created.
local function scope_save(key, s, p, now)
	local args = {}
	for _, f in ipairs(FIELDS) do
		if s[f] ~= s._was[f] then
			args[#args + 1] = f
			args[#args + 1] = fmt(s[f])
			s._was[f] = s[f]
		end
	end
	if #args == 0 then return end
	redis.call('HSET', key, unpack(args))
	local far = max(max(s.block_until, s.pace_tat), max(s.probe_until, s.win_start + p.window_ms))
	expire(key, far, now)
end

-- One field, an integer within [lo, hi] (else 0).
local function hget(key, field, lo, hi)
	return within(tonumber(redis.call('HGET', key, field) or '0'), lo, hi, 0)
end

-- ---- the rules (fleet_rules.c, function by function) -------------------

local function roll(s, p, now)
	local age = now - s.win_start
	if age >= p.window_ms or age < 0 then
		s.req_prev, s.acc_prev, s.req_cur, s.acc_cur = 0, 0, 0, 0
		s.win_start = now
	elseif age >= idiv(p.window_ms, 2) then
		s.req_prev = s.req_cur
		s.acc_prev = s.acc_cur
		s.req_cur, s.acc_cur = 0, 0
		s.win_start = now
	end
end

local function rules_rpm(s, p)
	if p.rpm > 0 then return p.rpm end
	return s.rpm_learned
end

local function budget_spent(s, p)
	return p.budget_max > 0 and s.tokens >= 0 and s.tokens * 2 <= p.budget_max
end

local function reject_milli(s, p)
	local req, acc = s.req_cur + s.req_prev, s.acc_cur + s.acc_prev
	local over = req * 1000 - p.k_milli * acc
	if s.shared == 0 or req < p.throttle_min or over <= 0 then return 0 end
	return idiv(over, req + 1)
end

-- -> wait_ms, reason, probe (0/1)
local function rules_acquire(s, p, now, retry, rand)
	local gate, reason = now, GO
	local spent = retry and s.shared ~= 0 and budget_spent(s, p)
	local probe = 0
	roll(s, p, now)
	if s.block_until > now then
		gate = s.block_until
		reason = SERVER_BLOCK
	end
	if (s.open ~= 0 and s.shared ~= 0) or spent then
		if s.probe_until > gate then
			if s.open ~= 0 then return s.probe_until - now, PROBE, 0 end
			return s.probe_until - now, BUDGET, 0
		end
		if s.probe_gap > 0 then
			s.probe_until = gate + s.probe_gap
		else
			s.probe_until = gate + p.probe_interval_ms
		end
		probe = 1
	elseif rand < reject_milli(s, p) then
		return gate - now + p.probe_interval_ms, PROBE, 0
	end
	local rpm = rules_rpm(s, p)
	if rpm > 0 then
		-- 5 % under the rate, as in C.
		local interval = idiv(63000 * max(p.divide, 1) + rpm - 1, rpm)
		local slot = max(s.pace_tat, gate)
		s.pace_tat = slot + interval
		if slot > gate and reason == GO then reason = PACING end
		gate = slot
	end
	local wait = gate - now
	if wait <= 0 then reason = GO end
	return wait, reason, probe
end

local function rules_report(s, p, now, kind, block_ms, rpm_limit, member, status)
	if kind == OUT_LOCAL then return end
	local was_open = s.open
	roll(s, p, now)
	if kind ~= OUT_SERVER and s.open ~= 0 then
		-- The provider is back for everyone: forget the failing time.
		s.req_cur, s.acc_cur, s.req_prev, s.acc_prev = 0, 0, 0, 0
		s.tokens = -1
	end
	local tokens = s.tokens
	if tokens < 0 then tokens = p.budget_max end
	s.req_cur = add(s.req_cur, 1)
	if kind == OUT_SERVER then
		if s.fail_streak > 0 and s.fail_member ~= member then s.shared = 1 end
		s.fail_streak = add(s.fail_streak, 1)
		s.fail_member = member
		if p.budget_max > 0 then s.tokens = max(tokens - 1000, 0) end
		if p.open_after > 0 and s.fail_streak >= p.open_after and s.shared ~= 0 then
			s.open = 1
		end
		if s.open ~= 0 then
			-- Probes back off while the provider stays down, as in C.
			local base, gap = p.probe_interval_ms, s.probe_gap
			if was_open == 0 or gap <= 0 then s.probe_gap = base
			else s.probe_gap = min(gap * 2, base * 4) end
			s.probe_until = max(s.probe_until, now + s.probe_gap)
		end
	else
		s.acc_cur = add(s.acc_cur, 1)
		s.fail_streak, s.fail_member, s.shared, s.open, s.probe_until = 0, 0, 0, 0, 0
		s.probe_gap = 0
		if p.budget_max > 0 then
			tokens = min(tokens + p.budget_ratio, p.budget_max)
			if tokens >= p.budget_max then s.tokens = -1 else s.tokens = tokens end
		end
	end
	if block_ms > 0 and block_ms >= p.min_block_ms then
		-- The longest word wins, and its teller is the one named, as in C.
		local untl = add(now, min(block_ms, p.max_block_ms))
		if untl >= s.block_until then
			s.block_until, s.block_seen, s.block_member = untl, now, member
			s.block_status, s.block_asked = status, block_ms
		end
	end
	if rpm_limit > 0 then s.rpm_learned = rpm_limit end
end

local function rules_clear(s)
	s.block_until, s.pace_tat, s.tokens = 0, 0, -1
	s.block_seen, s.block_member, s.block_status, s.block_asked = 0, 0, 0, 0
	s.fail_streak, s.fail_member, s.shared, s.open, s.probe_until = 0, 0, 0, 0, 0
	s.probe_gap = 0
	s.req_cur, s.acc_cur, s.req_prev, s.acc_prev = 0, 0, 0, 0
end

-- fleet_rules_turn_gap, fleet_rules_turn_start, fleet_rules_turn: after a
-- probe's good answer the waiters leave in turn, one a gap, within a window.
-- The gap: the configured rate's, else the rate learned (kept in the
-- credential's record as 'gap' when the train starts), 100 ms at least.
local TURN_GAP_MS, TURN_WINDOW_MS = 500, 30000
local TURN_GAP_MIN_MS, TURN_GAP_MAX_MS = 100, 60000

local function turn_gap(p, rpm_learned)
	if p.rpm > 0 then return max(idiv(60000, p.rpm), 1) end
	if rpm_learned > 0 then
		return min(max(idiv(60000, rpm_learned), TURN_GAP_MIN_MS), TURN_GAP_MAX_MS)
	end
	return TURN_GAP_MS
end

-- -> turn, turn_end
local function rules_turn_start(now, gap)
	return add(now, gap), add(now, TURN_WINDOW_MS)
end

-- fleet_rules_turn_bound: the latest slot a train gives.
local function turn_bound(turn_end, p)
	return add(turn_end, slot_bound(p))
end

-- -> wait, turn
local function rules_turn(turn, turn_end, now, gap, p)
	if turn_end <= now then return 0, turn end
	local b = turn_bound(turn_end, p)
	local slot = min(max(turn, now), b)
	return slot - now, min(add(slot, gap), b)
end

local function rules_exhaust(untl, p, now, reset_ms)
	if reset_ms < 0 then reset_ms = 0 end
	return max(untl, add(now, min(reset_ms, p.max_block_ms)))
end

-- -> streak, cool_until
local function rules_model(streak, cool, now, overload, success, after, cooldown_ms)
	if success then return 0, cool end
	if not overload then return streak, cool end
	streak = add(streak, 1)
	if after > 0 and streak >= after then
		cool = max(cool, add(now, cooldown_ms))
		streak = 0
	end
	return streak, cool
end

-- ---- records of one key (the rule ops, and the daemon's ops below) ------

local function exhaust_key(key, p, now, reset_ms)
	local old = hget(key, 'until', 0, reach(now, p.max_block_ms))
	local untl = rules_exhaust(old, p, now, reset_ms)
	-- A usage limit again ends a train; a later until is a reset's wait,
	-- no longer a claimed probe's.
	redis.call('HDEL', key, 'turn', 'turn_end', 'gap')
	if untl ~= old then redis.call('HDEL', key, 'prober') end
	if untl ~= old or tonumber(redis.call('HGET', key, 'until') or '0') ~= old then
		redis.call('HSET', key, 'until', fmt(untl))
		-- Kept past the reset: the first ask after it claims the probe.
		expire(key, untl + KEEP_MS, now)
	end
	return untl
end

-- The credential's train: the wait for this ask's slot (0: none).
local function take_turn(key, p, now)
	local te = hget(key, 'turn_end', 0, reach(now, TURN_WINDOW_MS))
	if te <= now then return 0 end
	local gap = hget(key, 'gap', 0, TURN_GAP_MAX_MS)
	if gap <= 0 then gap = turn_gap(p, 0) end
	local wait, t = rules_turn(hget(key, 'turn', 0, turn_bound(reach(now, TURN_WINDOW_MS), p)),
		te, now, gap, p)
	redis.call('HSET', key, 'turn', fmt(t))
	return wait
end

-- The prober's good answer: the credential is back, its waiters leave in
-- turn at the rate the scope learned (rpm_learned).
local function start_turns(key, p, now, rpm_learned)
	local gap = turn_gap(p, rpm_learned)
	local t, te = rules_turn_start(now, gap)
	redis.call('HSET', key, 'until', '0', 'turn', fmt(t), 'turn_end', fmt(te), 'gap', fmt(gap))
	expire(key, te, now)
end

local function model_key(key, now, overload, success, after, cooldown_ms)
	local streak = hget(key, 'streak', 0, COUNT_MAX)
	local cool = hget(key, 'cool_until', 0, reach(now, COOL_MAX_MS))
	local s2, c2 = rules_model(streak, cool, now, overload, success, after, cooldown_ms)
	if s2 ~= streak or c2 ~= cool or
			tonumber(redis.call('HGET', key, 'cool_until') or '0') ~= cool then
		redis.call('HSET', key, 'streak', fmt(s2), 'cool_until', fmt(c2))
		expire(key, c2, now)
	end
	return s2, c2
end

-- The scope record keeps rpm_learned and win_start, as fleet_rules_clear.
local function clear_key(key)
	if redis.call('EXISTS', key) == 0 then return 0 end
	local s = scope_load(key, nil, time_now('-1'))
	rules_clear(s)
	local args = {}
	for _, f in ipairs(FIELDS) do
		args[#args + 1] = f
		args[#args + 1] = fmt(s[f])
	end
	redis.call('HSET', key, unpack(args))
	redis.call('PEXPIRE', key, fmt(KEEP_MS))
	return 1
end

-- ---- keys of the daemon's ops -------------------------------------------

local function enc(parts)
	local out = {}
	for i, v in ipairs(parts) do out[i] = #v .. ':' .. v end
	return table.concat(out, '|')
end

local function scope_id(kind, provider, cred, model)
	if kind == 'provider' then return enc({ provider }) end
	if kind == 'credential' then return enc({ provider, cred }) end
	if kind == 'model' then return enc({ provider, cred, model }) end
	error('fleet.lua: scope kind must be model, credential or provider: ' .. tostring(kind))
end

-- The prefix must hold a hash tag: without one the keys would spread over
-- a cluster's slots and the script would fail there, not here.
local function prefix()
	local pre = KEYS[1]
	if pre == nil or not string.find(pre, '{[^}]+}') then
		error('fleet.lua: ' .. ARGV[1] .. ' wants KEYS[1] = a key prefix with a hash tag, ' ..
			'like "retryd:{ns}:"')
	end
	return pre
end

local function cred_key(pre, provider, cred) return pre .. 'c:' .. enc({ provider, cred }) end
local function model_key_name(pre, provider, model) return pre .. 'm:' .. enc({ provider, model }) end

-- Registers member; -> the fleet size (members seen in the last 30 s).
local function members(pre, member, now)
	local key = pre .. 'members'
	redis.call('ZADD', key, fmt(now), member)
	redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. fmt(now - MEMBER_MS))
	-- A member "seen" in the future was not: it would count for ever.
	redis.call('ZREMRANGEBYSCORE', key, '(' .. fmt(now + MEMBER_MS), '+inf')
	redis.call('PEXPIRE', key, fmt(KEEP_MS))
	return redis.call('ZCARD', key)
end

-- -> lease (0/1), wait_ms
local function lease_take(key, holder, n, ttl, now)
	redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now))
	-- A lease reaching past now + ttl was never given: it would hold a slot
	-- for ever.
	redis.call('ZREMRANGEBYSCORE', key, '(' .. fmt(now + ttl), '+inf')
	local have = redis.call('ZSCORE', key, holder)
	if have or redis.call('ZCARD', key) < n then
		redis.call('ZADD', key, fmt(now + ttl), holder)
		redis.call('PEXPIRE', key, fmt(max(ttl, KEEP_MS)))
		return 1, 0
	end
	local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
	return 0, min(max(tonumber(first[2]) - now, 1), ttl)
end

-- ---- ops ----------------------------------------------------------------

local ops = {}

local function one_key()
	if KEYS[1] == nil then error('fleet.lua: ' .. ARGV[1] .. ' wants KEYS[1] = the record') end
	return KEYS[1]
end

function ops.acquire()
	local key, now = one_key(), time_now(ARGV[2])
	local p = params_at(5)
	local s = scope_load(key, p, now)
	local wait, reason, probe = rules_acquire(s, p, now, flag(ARGV[3]), int(ARGV[4], 'rand'))
	scope_save(key, s, p, now)
	return { wait, reason, probe, now }
end

function ops.report()
	local key, now = one_key(), time_now(ARGV[2])
	local p = params_at(7)
	local s = scope_load(key, p, now)
	rules_report(s, p, now, outcome(ARGV[3]), int(ARGV[4], 'blockMs'), int(ARGV[5], 'rpmLimit'),
		int(ARGV[6], 'member'), int(ARGV[18] or '0', 'status'))
	scope_save(key, s, p, now)
	return { s.block_until, now }
end

function ops.record()
	local s = scope_load(one_key())
	local out = {}
	for _, f in ipairs(FIELDS) do
		out[#out + 1] = f
		out[#out + 1] = s[f]
	end
	return out
end

function ops.exhaust()
	local key, now = one_key(), time_now(ARGV[2])
	local p = params_at(4)
	return { exhaust_key(key, p, now, int(ARGV[3], 'resetMs')), now }
end

function ops.model()
	local key, now = one_key(), time_now(ARGV[2])
	local streak, cool = model_key(key, now, flag(ARGV[3]), flag(ARGV[4]), int(ARGV[5], 'after'),
		int(ARGV[6], 'cooldownMs'))
	return { streak, cool, now }
end

function ops.ask()
	local pre, now = prefix(), time_now(ARGV[2])
	local member, kind, provider = ARGV[3], ARGV[4], ARGV[5]
	local retry, rand = flag(ARGV[6]), int(ARGV[7], 'rand')
	local p = params_at(8)
	local i = 19
	local ncreds = int(ARGV[i], 'ncreds')
	local creds = {}
	for j = 1, ncreds do creds[j] = ARGV[i + j] end
	i = i + ncreds + 1
	local nmodels = int(ARGV[i], 'nmodels')
	local models = {}
	for j = 1, nmodels do models[j] = ARGV[i + j] end
	i = i + nmodels + 1
	local conc, ttl, holder = int(ARGV[i], 'concurrency'), int(ARGV[i + 1], 'lease ttl'), ARGV[i + 2]
	if holder == nil then error('fleet.lua: ask wants concurrency, lease ttl and holder last') end
	-- held: the attempt already holds a slot (its reserved wait is over).
	local held = ARGV[i + 3] ~= nil and flag(ARGV[i + 3])
	-- prior: a rate the daemon learned for another scope of this provider,
	-- used while this scope has none of its own (a switch to a new key).
	local prior = 0
	if ARGV[i + 4] ~= nil then prior = int(ARGV[i + 4], 'rpm prior') end

	local size = members(pre, member, now)

	local cred_index, cred_until, cred = -1, 0, ''
	local turn_wait = 0
	local probing = 0
	for j = 1, ncreds do
		local ckey = cred_key(pre, provider, creds[j])
		local u = hget(ckey, 'until', 0, reach(now, p.max_block_ms))
		if u > 0 and u <= now then
			-- fleet_rules_claim: the reset has passed, no answer has
			-- confirmed it: this ask probes, the others wait for its answer.
			u = now + PROBE_HOLD_MS
			redis.call('HSET', ckey, 'until', fmt(u), 'prober', member)
			expire(ckey, u + KEEP_MS, now)
			cred_index, cred_until, cred = j - 1, now, creds[j]
			break
		end
		if u <= now then
			cred_index, cred_until, cred = j - 1, u, creds[j]
			if not held then turn_wait = take_turn(ckey, p, now) end
			break
		end
		if cred_until == 0 or u < cred_until then
			cred_until = u
			-- Held by another member's claimed probe, not by a reset.
			local pr = redis.call('HGET', ckey, 'prober')
			probing = (pr and pr ~= member) and 1 or 0
		end
	end

	local model_index, model = -1, ''
	for j = 1, nmodels do
		if hget(model_key_name(pre, provider, models[j]), 'cool_until', 0,
				reach(now, COOL_MAX_MS)) <= now then
			model_index, model = j - 1, models[j]
			break
		end
	end
	if model_index < 0 and nmodels > 0 then model_index, model = 0, models[1] end

	local id
	if ncreds > 0 and cred_index < 0 then
		-- Every credential is exhausted: wait for the first to come back.
		id = scope_id(kind, provider, creds[1], model)
		local block = hget(pre .. 's:' .. id, 'block_until', 0, reach(now, p.max_block_ms))
		return { cred_until - now, SERVER_BLOCK, 0, -1, cred_until, model_index, size, block, 0, now,
			0, 0, 0, 0, probing }
	end
	id = scope_id(kind, provider, cred, model)
	local key = pre .. 's:' .. id
	local s = scope_load(key, p, now)
	local wait, reason, probe = 0, GO, 0
	if held and cred_index <= 0 and model_index == 0 and s.block_until <= now
			and (s.open == 0 or s.shared == 0) then
		-- Same credential and model as when the slot was reserved, and no
		-- block nor a failing time came meanwhile: go.
	else
		if rules_rpm(s, p) == 0 and prior == 0 then
			-- Nor did this daemon learn one: the rate the fleet learned for
			-- the same provider and model under another of these keys.
			for j = 1, ncreds do
				if creds[j] ~= cred then
					local other = pre .. 's:' .. scope_id(kind, provider, creds[j], model)
					local r = hget(other, 'rpm_learned', 0, RPM_MAX)
					if r > 0 then prior = r break end
				end
			end
		end
		if prior > 0 and rules_rpm(s, p) == 0 then p.rpm = prior end
		wait, reason, probe = rules_acquire(s, p, now, retry, rand)
		scope_save(key, s, p, now)
	end
	if turn_wait > wait and probe == 0 then
		-- Waited for the probe's answer: leave in turn. A wait that is
		-- asked again (budget, probe, lease) stays what it is, longer.
		if reason == GO or reason == PACING or reason == SERVER_BLOCK then
			wait, reason = turn_wait, PACING
		else
			wait = turn_wait
		end
	end

	local lease = 0
	if conc > 0 and wait == 0 then
		local w
		lease, w = lease_take(pre .. 'l:' .. id, holder, conc, ttl, now)
		if lease == 0 then wait, reason = w, CONCURRENCY end
	end
	return { wait, reason, probe, cred_index, cred_until, model_index, size, s.block_until, lease, now,
		s.block_seen, s.block_member, s.block_status, s.block_asked, 0 }
end

function ops.tell()
	local pre, now = prefix(), time_now(ARGV[2])
	local member, kind, provider, cred, model = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
	local p = params_at(11)
	local reset = int(ARGV[22], 'usageResetMs')
	local overload, success = flag(ARGV[23]), flag(ARGV[24])
	local after, cooldown = int(ARGV[25], 'after'), int(ARGV[26], 'cooldownMs')

	members(pre, member, now)
	local key = pre .. 's:' .. scope_id(kind, provider, cred, model)
	local s = scope_load(key, p, now)
	rules_report(s, p, now, outcome(ARGV[8]), int(ARGV[9], 'blockMs'), int(ARGV[10], 'rpmLimit'),
		int(member, 'member'), int(ARGV[27] or '0', 'status'))
	scope_save(key, s, p, now)

	local ckey = cred_key(pre, provider, cred)
	local cred_until
	-- The answer to this member's own probe replaces its claim's hold:
	-- good, the credential is back; a usage limit again, its new reset.
	if cred ~= '' and (outcome(ARGV[8]) == OUT.success or reset >= 0) and
		redis.call('HGET', ckey, 'prober') == member then
		redis.call('DEL', ckey)
		if reset < 0 then start_turns(ckey, p, now, s.rpm_learned) end
	end
	if reset >= 0 then
		cred_until = exhaust_key(ckey, p, now, reset)
	else
		cred_until = hget(ckey, 'until', 0, reach(now, p.max_block_ms))
	end
	local _, cool = model_key(model_key_name(pre, provider, model), now, overload, success, after,
		cooldown)
	return { s.block_until, cred_until, cool, now }
end

function ops.release()
	local pre = prefix()
	local id = scope_id(ARGV[2], ARGV[3], ARGV[4], ARGV[5])
	return redis.call('ZREM', pre .. 'l:' .. id, ARGV[6])
end

function ops.renew()
	local pre, now = prefix(), time_now(ARGV[2])
	local id = scope_id(ARGV[3], ARGV[4], ARGV[5], ARGV[6])
	local holder, ttl = ARGV[7], int(ARGV[8], 'lease ttl')
	local key = pre .. 'l:' .. id
	-- A lease past its expiry is lost, whether or not someone dropped it yet.
	redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now))
	redis.call('ZREMRANGEBYSCORE', key, '(' .. fmt(now + ttl), '+inf')
	if not redis.call('ZSCORE', key, holder) then return 0 end
	redis.call('ZADD', key, 'XX', fmt(now + ttl), holder)
	redis.call('PEXPIRE', key, fmt(max(ttl, KEEP_MS)))
	return 1
end

-- clear: with ARGV[1] alone, the rule op on the record KEYS[1]; with scope
-- args, fleet_clear on the scope, its credential(s) and its model.
function ops.clear()
	if #ARGV == 1 then return clear_key(one_key()) end
	local pre = prefix()
	local provider, cred, model = ARGV[3], ARGV[4], ARGV[5]
	local n = clear_key(pre .. 's:' .. scope_id(ARGV[2], provider, cred, model))
	local gone = { cred_key(pre, provider, cred), model_key_name(pre, provider, model) }
	for j = 6, #ARGV do gone[#gone + 1] = cred_key(pre, provider, ARGV[j]) end
	for _, k in ipairs(gone) do n = n + redis.call('DEL', k) end
	return n
end

function ops.state()
	local pre, now = prefix(), time_now(ARGV[2])
	local id = scope_id(ARGV[3], ARGV[4], ARGV[5], ARGV[6])
	local s = scope_load(pre .. 's:' .. id, nil, now)
	local rpm = int(ARGV[7] or '0', 'rpm')
	if rpm <= 0 then rpm = s.rpm_learned end
	local leases = redis.call('ZCOUNT', pre .. 'l:' .. id, '(' .. fmt(now), '+inf')
	local size = redis.call('ZCOUNT', pre .. 'members', fmt(now - MEMBER_MS), '+inf')
	return { s.block_until, s.open, s.probe_until, s.tokens, rpm, leases, size, now }
end

local op = ops[ARGV[1]]
if op == nil then error('fleet.lua: unknown op ' .. tostring(ARGV[1])) end
return op()

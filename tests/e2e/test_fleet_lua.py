"""src/core/fleet.lua on a real redis-server: the Redis store's decisions.

Every vector of tests/fixtures/fleet/vectors.json (the table the C unit test
tests/unit/check_fleet_rules.c runs through core/fleet_rules.c) runs through
the script's rule ops with the same defaults and the same assertions, so the
Lua decides exactly as the C does. Then the ops a daemon calls: ask (member,
credential, model, scope, acquire, lease in one round trip), tell, release,
renew, clear and state.

Each test starts its own redis-server on a free 127.0.0.1 port (no
persistence, a temporary dir) and kills it by PID. Standard library only: a
small RESP client over a socket.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(REPO_ROOT, "src", "core", "fleet.lua")
VECTORS = os.path.join(REPO_ROOT, "tests", "fixtures", "fleet", "vectors.json")
RULES_C = os.path.join(REPO_ROOT, "src", "core", "fleet_rules.c")
EMBED = os.path.join(REPO_ROOT, "scripts", "embed.py")
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"

REASONS = ["go", "server-block", "pacing", "budget", "concurrency", "probe"]
GO, SERVER_BLOCK, PACING, BUDGET, CONCURRENCY, PROBE = range(6)
# The ARGV order of the 11 params (the header of fleet.lua), with the names
# the vectors use for overrides.
PARAM_ORDER = [
    ("min_block_ms", "minBlockMs"), ("max_block_ms", "maxBlockMs"), ("rpm", "rpm"),
    ("probe_interval_ms", "probeIntervalMs"), ("open_after", "openAfter"),
    ("window_ms", "windowMs"), ("k_milli", "kMilli"), ("throttle_min", "throttleMin"),
    ("budget_max", "budgetMax"), ("budget_ratio", "budgetRatio"), ("divide", "divide"),
]
SCOPE_FIELDS = ["block_until", "pace_tat", "rpm_learned", "tokens", "win_start", "req_cur",
                "acc_cur", "req_prev", "acc_prev", "fail_streak", "fail_member", "shared",
                "open", "probe_until", "probe_gap", "block_seen", "block_member", "block_status",
                "block_asked"]


def c_defaults():
    """fleet_params_default() read from fleet_rules.c, so the two languages
    run the vectors with the same defaults (memset 0, then the assignments)."""
    with open(RULES_C) as f:
        text = f.read()
    body = re.search(r"void fleet_params_default\([^)]*\)\s*\{(.*?)\n\}", text, re.S).group(1)
    p = {name: 0 for name, _ in PARAM_ORDER}
    for name, expr in re.findall(r"p->(\w+)\s*=\s*([0-9 *]+);", body):
        v = 1
        for factor in expr.split("*"):
            v *= int(factor)
        p[name] = v
    return p


class RedisError(Exception):
    pass


class Resp:
    """A minimal RESP2 client: one command, one reply."""

    def __init__(self, port, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, bool):
                a = "1" if a else "0"
            if not isinstance(a, bytes):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return self._reply()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n).decode()
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RedisError("unexpected reply %r" % line)


class RedisServer:
    """A redis-server of this test's own: free port, no persistence."""

    def __init__(self):
        if not os.path.exists(REDIS_SERVER):
            raise AssertionError("redis-server not found (scripts/deps.sh installs it); "
                                 "the fleet's Lua script needs a real one to be tested")
        self.dir = tempfile.mkdtemp(prefix="retryd-redis-")
        self.proc = None
        for _ in range(5):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            self.log = open(os.path.join(self.dir, "redis.log"), "wb")
            self.proc = subprocess.Popen(
                [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", "--dir", self.dir],
                stdout=self.log, stderr=subprocess.STDOUT)
            if self._ready():
                return
            self.stop()
        raise AssertionError("redis-server did not start; its log: %s" % self._log_text())

    def _ready(self):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False  # e.g. the port was taken meanwhile
            try:
                c = Resp(self.port, timeout=1)
                try:
                    if c.call("PING") == "PONG":
                        return True
                finally:
                    c.close()
            except (OSError, RedisError):
                time.sleep(0.02)
        return False

    def _log_text(self):
        try:
            with open(os.path.join(self.dir, "redis.log"), "rb") as f:
                return f.read().decode(errors="replace")[-2000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, 15)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, 9)
                self.proc.wait(5)
        self.proc = None
        self.log.close()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class FleetLuaCase(unittest.TestCase):
    def setUp(self):
        self.server = RedisServer()
        self.addCleanup(self.server.cleanup)
        self.r = Resp(self.server.port)
        self.addCleanup(self.r.close)
        with open(SCRIPT, "rb") as f:
            self.sha = self.r.call("SCRIPT", "LOAD", f.read())

    def op(self, key, *argv):
        return self.r.call("EVALSHA", self.sha, 1, key, *argv)


def param_list(p):
    return [p[name] for name, _ in PARAM_ORDER]


class RuleVectorTests(FleetLuaCase):
    """The rule ops, one record key each, against the C's vectors."""

    def run_case(self, n, case):
        name = case["name"]
        p = c_defaults()
        for field, vec_name in PARAM_ORDER:
            if vec_name in case.get("params", {}):
                p[field] = case["params"][vec_name]
        params = param_list(p)
        scope, cred, model = "v:{%d}:scope" % n, "v:{%d}:cred" % n, "v:{%d}:model" % n
        for i, step in enumerate(case["steps"]):
            where = "%s, step %d" % (name, i)
            op, want, now = step["op"], step.get("expect", {}), step.get("now", 0)
            if op == "acquire":
                wait, reason, probe, _ = self.op(scope, "acquire", now, step.get("retry", False),
                                                 step.get("rand", 999), *params)
                self.assertEqual(wait, want["wait"], where)
                self.assertEqual(REASONS[reason], want["reason"], where)
                if "probe" in want:
                    self.assertEqual(bool(probe), want["probe"], where)
            elif op == "report":
                self.op(scope, "report", now, step["kind"], step.get("blockMs", -1),
                        step.get("rpmLimit", 0), step.get("member", 1), *params,
                        step.get("status", 0))
            elif op == "clear":
                self.op(scope, "clear")
            elif op == "record":
                flat = self.op(scope, "record")
                rec = dict(zip(flat[::2], flat[1::2]))
                self.assertEqual(list(rec), SCOPE_FIELDS)
                for k, v in want.items():
                    self.assertEqual(rec[k], v, "%s: %s" % (where, k))
            elif op == "exhaust":
                until, _ = self.op(cred, "exhaust", now, step.get("resetMs", 0), *params)
                self.assertEqual(until, want["until"], where)
            else:
                self.assertEqual(op, "model", where)
                streak, cool, _ = self.op(model, "model", now, step.get("overload", False),
                                          step.get("success", False), step.get("after", 3),
                                          step.get("cooldownMs", 0))
                self.assertEqual((streak, cool), (want["streak"], want["coolUntil"]), where)

    def test_every_vector_decides_as_the_c_does(self):
        with open(VECTORS) as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 15)
        for n, case in enumerate(cases):
            with self.subTest(case=case["name"]):
                self.run_case(n, case)

    def test_the_defaults_come_from_fleet_params_default(self):
        p = c_defaults()
        self.assertEqual(p["min_block_ms"], 1000)
        self.assertEqual(p["max_block_ms"], 6 * 3600 * 1000)
        self.assertEqual(p["divide"], 1)
        self.assertEqual(p["rpm"], 0)

    def test_a_missing_field_is_its_init_value_and_unknown_fields_are_kept_aside(self):
        self.r.call("HSET", "rec", "open", "1", "future_field", "7")
        flat = self.op("rec", "record")
        rec = dict(zip(flat[::2], flat[1::2]))
        self.assertEqual(rec["open"], 1)
        self.assertEqual(rec["tokens"], -1)
        self.assertEqual(rec["block_until"], 0)

    def test_division_truncates_toward_zero_like_c(self):
        # interval = (63000 * divide + rpm - 1) / rpm (5 % under the rate): 63000 * 3 at
        # 7 rpm: (189000 + 6) / 7 = 27000.86 -> 27000, a truncation, as C's.
        p = c_defaults()
        p["rpm"], p["divide"] = 7, 3
        self.op("pace", "acquire", 0, 0, 999, *param_list(p))
        wait, reason, _, _ = self.op("pace", "acquire", 0, 0, 999, *param_list(p))
        self.assertEqual((wait, reason), (27000, PACING))

    def test_an_unknown_op_or_a_bad_number_is_an_error_reply(self):
        with self.assertRaisesRegex(RedisError, "unknown op"):
            self.op("k", "nonsense")
        with self.assertRaisesRegex(RedisError, "not an integer"):
            self.op("k", "acquire", "soon", 0, 999, *param_list(c_defaults()))
        with self.assertRaisesRegex(RedisError, "11 params"):
            self.op("k", "acquire", 0, 0, 999, 1, 2)
        with self.assertRaisesRegex(RedisError, "hash tag"):
            self.op("retryd:ns:", "state", 0, "provider", "p", "", "", 0)
        with self.assertRaisesRegex(RedisError, "scope kind"):
            self.op(PREFIX, "state", 0, "account", "p", "", "", 0)

    def test_the_embedded_c_string_is_the_script(self):
        out = subprocess.run(["python3", EMBED, SCRIPT, "fleet_script_text", "core/fleet_script.h"],
                             capture_output=True, check=True, text=True).stdout
        body = out.split("{", 1)[1].rsplit("}", 1)[0]
        data = bytes(int(x) for x in re.findall(r"\d+", body))
        with open(SCRIPT, "rb") as f:
            self.assertEqual(data, f.read() + b"\0")


# A driver of core/fleet_rules.c for the random comparison: one op a line on
# stdin, its result on stdout.
DRIVER_C = r"""
#include <stdio.h>
#include <string.h>
#include "core/fleet_rules.h"

int main(void)
{
	struct fleet_params p;
	struct fleet_scope s;
	struct fleet_model m = { 0, 0 };
	long long a[12], until = 0;
	char op[8];

	fleet_params_default(&p);
	fleet_scope_init(&s);
	while (scanf("%7s", op) == 1) {
		if (strcmp(op, "P") == 0) {
			for (int i = 0; i < 11; i++)
				if (scanf("%lld", &a[i]) != 1)
					return 2;
			p.min_block_ms = a[0]; p.max_block_ms = a[1]; p.rpm = a[2];
			p.probe_interval_ms = a[3]; p.open_after = a[4]; p.window_ms = a[5];
			p.k_milli = a[6]; p.throttle_min = a[7]; p.budget_max = a[8];
			p.budget_ratio = a[9]; p.divide = a[10];
			fleet_scope_init(&s);
			m.streak = m.cool_until = 0;
			until = 0;
			printf("ok\n");
		} else if (strcmp(op, "A") == 0) {
			struct fleet_verdict v;

			if (scanf("%lld %lld %lld", &a[0], &a[1], &a[2]) != 3)
				return 2;
			/* As every store reads a record: checked first. */
			fleet_scope_check(&s, &p, a[0], NULL);
			fleet_rules_acquire(&s, &p, a[0], a[1] != 0, a[2], &v);
			printf("%lld %d %d\n", (long long)v.wait_ms, (int)v.reason, v.probe ? 1 : 0);
		} else if (strcmp(op, "R") == 0) {
			struct fleet_outcome o = { 0 };

			if (scanf("%lld %lld %lld %lld %lld", &a[0], &a[1], &a[2], &a[3], &a[4]) != 5)
				return 2;
			o.kind = (enum fleet_outcome_kind)a[1];
			o.block_ms = a[2];
			o.rpm_limit = a[3];
			o.member = a[4];
			fleet_scope_check(&s, &p, a[0], NULL);
			fleet_rules_report(&s, &p, a[0], &o);
			printf("%lld\n", (long long)s.block_until);
		} else if (strcmp(op, "C") == 0) {
			fleet_rules_clear(&s);
			printf("ok\n");
		} else if (strcmp(op, "S") == 0) {
			char text[512];

			fleet_scope_format(&s, text, sizeof(text));
			printf("%s", text); /* the record ends with its newline */
		} else if (strcmp(op, "E") == 0) {
			int64_t u = until;

			if (scanf("%lld %lld", &a[0], &a[1]) != 2)
				return 2;
			fleet_until_check(&u, &p, a[0], NULL);
			fleet_rules_exhaust(&u, &p, a[0], a[1]);
			until = u;
			printf("%lld\n", until);
		} else if (strcmp(op, "M") == 0) {
			if (scanf("%lld %lld %lld %lld %lld", &a[0], &a[1], &a[2], &a[3], &a[4]) != 5)
				return 2;
			fleet_model_check(&m, a[0], FLEET_COOL_MAX_MS, NULL);
			fleet_rules_model_report(&m, a[0], a[1] != 0, a[2] != 0, a[3], a[4]);
			printf("%lld %lld\n", (long long)m.streak, (long long)m.cool_until);
		} else {
			return 2;
		}
		fflush(stdout);
	}
	return 0;
}
"""


class RandomComparisonTests(FleetLuaCase):
    """Beyond the table: random params and op sequences (fixed seed) through
    core/fleet_rules.c (compiled here) and the script; every result and every
    record must be the same."""

    def build_driver(self):
        d = tempfile.mkdtemp(prefix="fleet-driver-")
        self.addCleanup(shutil.rmtree, d, True)
        src, exe = os.path.join(d, "driver.c"), os.path.join(d, "driver")
        with open(src, "w") as f:
            f.write(DRIVER_C)
        def pkg(what):
            return subprocess.run(["pkg-config", what, "jansson"], capture_output=True,
                                  text=True).stdout.split()
        cflags = pkg("--cflags")
        cc = subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-D_POSIX_C_SOURCE=200809L",
                             "-O1", "-I" + os.path.join(REPO_ROOT, "src")] + cflags +
                            [src, RULES_C, os.path.join(REPO_ROOT, "src", "base", "number.c"),
                             "-o", exe] + pkg("--libs"), capture_output=True, text=True)
        self.assertEqual(cc.returncode, 0, cc.stderr)
        proc = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(proc.wait, 5)
        self.addCleanup(proc.stdin.close)
        return proc

    def test_random_sequences_decide_alike_in_c_and_lua(self):
        import random
        rnd = random.Random(14)
        c = self.build_driver()

        def cdo(line):
            c.stdin.write(line + "\n")
            c.stdin.flush()
            out = c.stdout.readline()
            self.assertTrue(out, "the C driver stopped at: " + line)
            return out.split()

        for n in range(150):
            p = {
                "min_block_ms": rnd.choice([0, 1, 1000, rnd.randint(0, 3000)]),
                "max_block_ms": rnd.choice([1, 60000, rnd.randint(1, 100000)]),
                "rpm": rnd.choice([0, 0, 1, 7, 600, rnd.randint(1, 5000)]),
                "probe_interval_ms": rnd.choice([0, 2000, rnd.randint(0, 5000)]),
                "open_after": rnd.choice([0, 1, 3, rnd.randint(0, 5)]),
                "window_ms": rnd.choice([1, 999, 60000, rnd.randint(1, 5000)]),
                "k_milli": rnd.choice([0, 2000, rnd.randint(0, 3000)]),
                "throttle_min": rnd.choice([0, 1, 10, rnd.randint(0, 10)]),
                "budget_max": rnd.choice([0, 4000, 10000, rnd.randint(1, 9999)]),
                "budget_ratio": rnd.choice([0, 100, 1000, rnd.randint(0, 3000)]),
                "divide": rnd.choice([0, 1, 1, 4, rnd.randint(0, 9)]),
            }
            params = param_list(p)
            cdo("P " + " ".join(map(str, params)))
            scope, cred, model = "r:{%d}:s" % n, "r:{%d}:c" % n, "r:{%d}:m" % n
            now = rnd.randint(0, 10 ** 6)
            rec = {f: 0 for f in SCOPE_FIELDS}
            for i in range(40):
                where = "seq %d step %d params %r" % (n, i, p)
                now += rnd.choice([0, 0, 1, 10, 100, 1000, 30000, rnd.randint(-2000, 5000)])
                now = max(now, 0)
                what = rnd.random()
                if what < 0.35:
                    retry, r = rnd.randint(0, 1), rnd.randint(0, 999)
                    # Often right at the throttle's edge, where rounding would show.
                    req, acc = rec["req_cur"] + rec["req_prev"], rec["acc_cur"] + rec["acc_prev"]
                    over = req * 1000 - p["k_milli"] * acc
                    if over > 0 and rnd.random() < 0.5:
                        r = min(max(over // (req + 1) + rnd.randint(-1, 1), 0), 999)
                    got = self.op(scope, "acquire", now, retry, r, *params)[:3]
                    want = [int(x) for x in cdo("A %d %d %d" % (now, retry, r))]
                    self.assertEqual(got, want, where)
                elif what < 0.75:
                    kind = rnd.choice([0, 1, 2, 2, 2, 3])
                    block = rnd.choice([-1, -1, 0, 999, 1000, rnd.randint(-1, 200000)])
                    rpm = rnd.choice([0, 0, 60, rnd.randint(0, 3000)])
                    member = rnd.randint(1, 3)
                    got = self.op(scope, "report", now, kind, block, rpm, member, *params)[0]
                    want = int(cdo("R %d %d %d %d %d" % (now, kind, block, rpm, member))[0])
                    self.assertEqual(got, want, where)
                elif what < 0.8:
                    self.op(scope, "clear")
                    cdo("C")
                elif what < 0.9:
                    reset = rnd.choice([-5, 0, 1000, rnd.randint(0, 10 ** 6)])
                    got = self.op(cred, "exhaust", now, reset, *params)[0]
                    self.assertEqual(got, int(cdo("E %d %d" % (now, reset))[0]), where)
                else:
                    ov, ok = rnd.randint(0, 1), rnd.randint(0, 1)
                    after, cool = rnd.randint(0, 3), rnd.choice([0, 1000, 60000])
                    got = self.op(model, "model", now, ov, ok, after, cool)[:2]
                    want = [int(x) for x in cdo("M %d %d %d %d %d" % (now, ov, ok, after, cool))]
                    self.assertEqual(got, want, where)
                flat = self.op(scope, "record")
                rec = dict(zip(flat[::2], flat[1::2]))
                lua = " ".join("%s=%d" % (k, v) for k, v in rec.items())
                self.assertEqual(lua, " ".join(cdo("S")), where)


PREFIX = "retryd:{ns}:"


class AskTellTests(FleetLuaCase):
    """The daemon's ops under one key prefix."""

    def setUp(self):
        super().setUp()
        self.p = c_defaults()

    def ask(self, now=1000, member="1", kind="model", provider="prov", retry=False, rand=999,
            creds=("k1",), models=("m1",), concurrency=0, ttl=10000, holder="h1", p=None,
            held=None):
        tail = [] if held is None else [held]
        r = self.op(PREFIX, "ask", now, member, kind, provider, retry, rand,
                    *param_list(p or self.p), len(creds), *creds, len(models), *models,
                    concurrency, ttl, holder, *tail)
        keys = ["wait", "reason", "probe", "cred", "cred_until", "model", "size", "block",
                "lease", "now", "block_seen", "block_member", "block_status", "block_asked",
                "cred_probing"]
        self.assertEqual(len(r), len(keys))
        return dict(zip(keys, r))

    def tell(self, now=1000, member="1", kind="model", provider="prov", cred="k1", model="m1",
             outcome="server", block_ms=-1, rpm_limit=0, usage_reset=-1, overload=False,
             success=False, after=3, cooldown=60000, p=None, status=None):
        tail = [] if status is None else [status]
        r = self.op(PREFIX, "tell", now, member, kind, provider, cred, model, outcome, block_ms,
                    rpm_limit, *param_list(p or self.p), usage_reset, overload, success, after,
                    cooldown, *tail)
        return dict(zip(["block", "cred_until", "cool_until", "now"], r))

    def keys(self):
        return sorted(self.r.call("KEYS", "*"))

    def test_the_ask_names_who_set_the_block_when_and_with_which_status(self):
        self.tell(now=1000, member="7", block_ms=8000, status=429)
        a = self.ask(now=3000, member="9")
        self.assertEqual((a["wait"], a["reason"]), (6000, SERVER_BLOCK))
        self.assertEqual((a["block_seen"], a["block_member"], a["block_status"],
                          a["block_asked"]), (1000, 7, 429, 8000))
        # A tell without the status (an older daemon) still blocks, status unknown.
        self.tell(now=4000, member="8", block_ms=9000)
        a = self.ask(now=4000, member="9")
        self.assertEqual((a["block_seen"], a["block_member"], a["block_status"]), (4000, 8, 0))

    def test_the_first_ask_after_a_spent_keys_reset_claims_its_probe_and_its_answer_ends_the_claim(self):
        self.tell(now=1000, cred="k1", outcome="answered", usage_reset=2000)
        self.assertEqual(self.ask(now=2000, member="1")["cred"], -1)
        # Past the reset: member 2 asks first and probes; member 1 waits.
        self.assertEqual(self.ask(now=3500, member="2")["cred"], 0)
        held = self.ask(now=3600, member="1")
        self.assertEqual((held["cred"], held["cred_until"], held["cred_probing"]),
                         (-1, 3500 + 5000, 1))
        # The probe met the limit again: its new reset replaces the hold.
        t = self.tell(now=3700, member="2", cred="k1", outcome="answered", usage_reset=1000)
        self.assertEqual(t["cred_until"], 4700)
        self.assertEqual(self.ask(now=3800, member="1")["cred_probing"], 0)  # a reset's wait
        self.assertEqual(self.ask(now=4800, member="1")["cred"], 0)  # member 1 claims now
        self.assertEqual(self.ask(now=4900, member="2")["cred"], -1)
        # A good answer from the prober: the key is back for everyone, who
        # leave in turn, one every 500 ms (no rate known), not at once.
        self.tell(now=5000, member="1", cred="k1", outcome="success")
        a2 = self.ask(now=5001, member="2")
        a3 = self.ask(now=5002, member="3")
        self.assertEqual([(a["cred"], a["wait"], a["reason"]) for a in (a2, a3)],
                         [(0, 499, PACING), (0, 998, PACING)])
        # Its turn come, a waiter goes without a second slot.
        self.assertEqual(self.ask(now=5500, member="2", held=1)["wait"], 0)
        # Past the window asks go as ever: a busy key is not paced for good.
        self.assertEqual(self.ask(now=35000, member="4")["wait"], 0)
        self.assertEqual(self.ask(now=35000, member="5")["wait"], 0)

    def test_a_long_train_stops_at_its_bound_and_is_never_refused_as_hostile(self):
        # Blocks of at most 1 s: 220 waiters' slots, one every 500 ms,
        # outrun the window and the slot bound.
        p = dict(self.p, max_block_ms=1000)
        self.tell(now=1000, cred="k1", outcome="answered", usage_reset=1000, p=p)
        self.assertEqual(self.ask(now=2500, member="1", p=p)["cred"], 0)  # the probe
        self.tell(now=2600, member="1", cred="k1", outcome="success", p=p)
        waits = [self.ask(now=2600, member=str(10 + i), p=p)["wait"] for i in range(220)]
        bound = 30000 + 1000 + 63000 + 4 * p["probe_interval_ms"]   # window + slot bound
        self.assertEqual(waits[:3], [500, 1000, 1500])
        self.assertEqual(waits[-1], bound)
        self.assertEqual(sorted(waits), waits)

    def test_the_train_after_a_probe_follows_the_configured_rate_and_a_new_limit_ends_it(self):
        p = dict(self.p, rpm=30)
        self.tell(now=1000, cred="k1", outcome="answered", usage_reset=1000)
        self.assertEqual(self.ask(now=2500, member="1", p=p)["cred"], 0)  # the probe
        self.tell(now=2600, member="1", cred="k1", outcome="success", p=p)
        self.assertEqual(self.ask(now=2600, member="2", p=p)["wait"], 2000)
        # The limit again: no train, the key is spent for everyone.
        self.tell(now=2700, member="2", cred="k1", outcome="answered", usage_reset=9000, p=p)
        self.assertEqual(self.ask(now=2800, member="3", p=p)["cred"], -1)

    def test_the_train_after_a_probe_leaves_at_the_rate_its_answer_announced(self):
        # The prober's good answer carried 300 requests a minute: the train
        # keeps a gap of 200 ms in the key's record, and the waiters (who
        # pass no rate of their own) leave on it, faster than 500 ms.
        self.tell(now=1000, cred="k1", outcome="answered", usage_reset=1000)
        self.assertEqual(self.ask(now=2500, member="1")["cred"], 0)  # the probe
        self.tell(now=2600, member="1", cred="k1", outcome="success", rpm_limit=300)
        ckey, = [k for k in self.keys() if k.startswith(PREFIX + "c:")]
        self.assertEqual(self.r.call("HGET", ckey, "gap"), "200")
        waits = [self.ask(now=2600, member=str(2 + i))["wait"] for i in range(3)]
        self.assertEqual(waits, [200, 400, 600])
        # A gap past one a minute (a hostile record) is refused: the default.
        self.r.call("HSET", ckey, "gap", "99999999999")
        # The next slot stands (800), the one after it is the default gap on.
        self.assertEqual([self.ask(now=2600, member=m)["wait"] for m in ("8", "9")],
                         [800, 800 + 500])
        # A limit again ends the train, gap and all.
        self.tell(now=2700, member="2", cred="k1", outcome="answered", usage_reset=9000)
        self.assertIsNone(self.r.call("HGET", ckey, "gap"))

    def test_a_held_ask_goes_on_its_slot_unless_its_credential_was_spent_meanwhile(self):
        self.tell(cred="k1", outcome="success", rpm_limit=60)
        first = self.ask(now=1000, creds=("k1", "k2"))
        second = self.ask(now=1000, creds=("k1", "k2"))
        self.assertEqual((second["wait"], second["reason"]), (1050, PACING))
        # The reserved wait is over: the same credential goes, taking no new slot ...
        a = self.ask(now=2050, creds=("k1", "k2"), held=1)
        self.assertEqual((a["wait"], a["reason"], a["cred"]), (0, GO, 0))
        a = self.ask(now=2050, creds=("k1", "k2"))
        self.assertEqual((a["wait"], a["reason"]), (1050, PACING))
        # ... but a credential spent meanwhile sends it to the next one's scope.
        self.tell(now=2100, cred="k1", outcome="answered", usage_reset=60000)
        a = self.ask(now=3100, creds=("k1", "k2"), held=1)
        self.assertEqual((a["cred"], a["wait"], a["reason"]), (1, 0, GO))
        self.assertEqual(first["wait"], 0)

    def test_a_key_with_no_rate_of_its_own_is_paced_at_the_rate_learned_for_another(self):
        self.tell(cred="k1", outcome="success", rpm_limit=60)
        self.tell(cred="k1", outcome="answered", usage_reset=60000)
        a = self.ask(now=1000, creds=("k1", "k2"))
        b = self.ask(now=1000, creds=("k1", "k2"))
        self.assertEqual((a["cred"], a["wait"]), (1, 0))
        self.assertEqual((b["cred"], b["wait"], b["reason"]), (1, 1050, PACING))
        # A daemon's own prior (the last ARGV) is used first.
        c = self.op(PREFIX, "ask", 1000, "1", "model", "prov", 0, 999, *param_list(self.p),
                    2, "k1", "k3", 1, "m1", 0, 10000, "h1", 0, 600)
        d = self.op(PREFIX, "ask", 1000, "1", "model", "prov", 0, 999, *param_list(self.p),
                    2, "k1", "k3", 1, "m1", 0, 10000, "h1", 0, 600)
        self.assertEqual((c[3], c[0], d[0], d[1]), (1, 0, 105, PACING))

    def test_a_new_fleet_lets_the_first_ask_go(self):
        a = self.ask()
        self.assertEqual(a, {"wait": 0, "reason": GO, "probe": 0, "cred": 0, "cred_until": 0,
                             "model": 0, "size": 1, "block": 0, "lease": 0, "now": 1000,
                             "block_seen": 0, "block_member": 0, "block_status": 0,
                             "block_asked": 0, "cred_probing": 0})

    def test_a_block_told_by_one_member_holds_the_next_ask(self):
        t = self.tell(member="1", block_ms=5000)
        self.assertEqual(t["block"], 6000)
        a = self.ask(now=2000, member="2")
        self.assertEqual((a["wait"], a["reason"], a["block"]), (4000, SERVER_BLOCK, 6000))

    def test_an_exhausted_current_credential_moves_the_ask_to_the_next(self):
        t = self.tell(cred="k1", outcome="answered", usage_reset=50000)
        self.assertEqual(t["cred_until"], 51000)
        a = self.ask(now=2000, creds=("k1", "k2", "k3"))
        self.assertEqual((a["cred"], a["cred_until"], a["wait"]), (1, 0, 0))
        a = self.ask(now=51000, creds=("k1", "k2"))
        self.assertEqual(a["cred"], 0)

    def test_all_credentials_exhausted_waits_for_the_soonest_and_acquires_nothing(self):
        p = dict(self.p, rpm=60)
        self.tell(cred="k1", outcome="answered", usage_reset=9000)
        self.tell(cred="k2", outcome="answered", usage_reset=4000)
        before = self.op(PREFIX + "s:4:prov|2:k1|2:m1", "record")
        a = self.ask(now=2000, creds=("k1", "k2"), p=p, concurrency=1)
        self.assertEqual((a["cred"], a["cred_until"]), (-1, 5000))
        self.assertEqual((a["wait"], a["reason"], a["lease"]), (3000, SERVER_BLOCK, 0))
        # no pacing slot taken, no lease
        self.assertEqual(self.op(PREFIX + "s:4:prov|2:k1|2:m1", "record"), before)
        self.assertEqual(self.r.call("KEYS", PREFIX + "l:*"), [])

    def test_a_cooling_model_moves_the_ask_to_the_first_fallback_and_all_cooling_keeps_the_first(
            self):
        t = self.tell(model="m1", overload=True, after=1, cooldown=30000)
        self.assertEqual(t["cool_until"], 31000)
        a = self.ask(now=2000, models=("m1", "m2", "m3"))
        self.assertEqual(a["model"], 1)
        self.tell(model="m2", overload=True, after=1, cooldown=30000)
        self.tell(model="m3", overload=True, after=1, cooldown=30000)
        a = self.ask(now=2000, models=("m1", "m2", "m3"))
        self.assertEqual(a["model"], 0)
        # a success ends the streak, the cooldown stays
        t = self.tell(model="m1", outcome="success", success=True)
        self.assertEqual(t["cool_until"], 31000)

    def test_the_scope_kind_chooses_which_asks_share_a_block(self):
        def wait(**kw):
            return self.ask(now=2000, **kw)["wait"]
        self.tell(kind="model", cred="k1", model="m1", block_ms=5000)
        self.assertEqual(wait(kind="model", creds=("k1",), models=("m1",)), 4000)
        self.assertEqual(wait(kind="model", creds=("k1",), models=("m2",)), 0)
        self.assertEqual(wait(kind="credential", creds=("k1",), models=("m1",)), 0)
        self.tell(kind="credential", cred="k1", model="m1", block_ms=7000)
        self.assertEqual(wait(kind="credential", creds=("k1",), models=("m2",)), 6000)
        self.assertEqual(wait(kind="credential", creds=("k2",), models=("m1",)), 0)
        self.tell(kind="provider", cred="k1", model="m1", block_ms=9000)
        self.assertEqual(wait(kind="provider", creds=("k2",), models=("m2",)), 8000)
        self.assertEqual(wait(kind="provider", provider="other"), 0)

    def test_a_name_holding_a_bar_or_a_brace_does_not_collide(self):
        def wait(**kw):
            return self.ask(now=2000, **kw)["wait"]
        self.tell(kind="credential", provider="a|b", cred="c", block_ms=5000)
        self.assertEqual(wait(kind="credential", provider="a", creds=("b|c",)), 0)
        self.assertEqual(wait(kind="credential", provider="a|b", creds=("c",)), 4000)
        self.tell(kind="model", provider="p}", cred="1:x", model="y", block_ms=5000)
        self.assertEqual(wait(kind="model", provider="p", creds=("}1:x",), models=("y",)), 0)
        self.assertEqual(wait(kind="model", provider="p}", creds=("1:x",), models=("y",)), 4000)
        self.tell(provider="a", cred="b|c", usage_reset=5000)
        self.assertEqual(self.ask(now=2000, provider="a|b", creds=("c",))["cred"], 0)
        self.assertEqual(self.ask(now=2000, provider="a", creds=("b|c",))["cred"], -1)
        # every key keeps the prefix, so its hash tag and slot
        self.assertTrue(all(k.startswith(PREFIX) for k in self.keys()), self.keys())

    def test_concurrency_two_with_three_holders(self):
        a1 = self.ask(now=1000, holder="h1", concurrency=2, ttl=10000)
        a2 = self.ask(now=1100, holder="h2", concurrency=2, ttl=10000)
        self.assertEqual((a1["lease"], a2["lease"]), (1, 1))
        a3 = self.ask(now=1200, holder="h3", concurrency=2, ttl=10000)
        self.assertEqual((a3["lease"], a3["reason"], a3["wait"]), (0, CONCURRENCY, 9800))
        # a holder that asks again keeps (and refreshes) its lease
        a1 = self.ask(now=1300, holder="h1", concurrency=2, ttl=10000)
        self.assertEqual((a1["lease"], a1["wait"]), (1, 0))
        a3 = self.ask(now=1300, holder="h3", concurrency=2, ttl=10000)
        self.assertEqual((a3["wait"], a3["reason"]), (9800, CONCURRENCY))  # h2's, at 11100
        scope = ["model", "prov", "k1", "m1"]
        self.assertEqual(self.op(PREFIX, "release", *scope, "h1"), 1)
        self.assertEqual(self.op(PREFIX, "release", *scope, "h1"), 0)
        a3 = self.ask(now=1400, holder="h3", concurrency=2, ttl=10000)
        self.assertEqual((a3["lease"], a3["wait"], a3["reason"]), (1, 0, GO))
        # h2's lease expired at 11100: dropped, h4 gets it
        a4 = self.ask(now=11100, holder="h4", concurrency=2, ttl=10000)
        self.assertEqual(a4["lease"], 1)
        self.assertEqual(self.op(PREFIX, "state", 11100, *scope, 0)[5], 2)

    def test_the_concurrency_wait_is_at_least_a_millisecond_and_at_most_the_ttl(self):
        self.ask(now=1000, holder="h1", concurrency=1, ttl=5000)
        a = self.ask(now=5999, holder="h2", concurrency=1, ttl=5000)
        self.assertEqual((a["wait"], a["reason"]), (1, CONCURRENCY))
        # a lease reaching past now + ttl was never given: dropped, not a wait
        self.r.call("ZADD", PREFIX + "l:4:prov|2:k1|2:m1", 999999, "h1")
        a = self.ask(now=5999, holder="h2", concurrency=1, ttl=5000)
        self.assertEqual((a["lease"], a["wait"], a["reason"]), (1, 0, GO))
        self.ask(now=6000, holder="h3", concurrency=1, ttl=5000)
        a = self.ask(now=6000, holder="h3", concurrency=1, ttl=5000)
        self.assertEqual((a["wait"], a["reason"]), (4999, CONCURRENCY))

    def test_renew_extends_a_live_lease_and_says_when_it_was_lost(self):
        scope = ["model", "prov", "k1", "m1"]
        self.ask(now=1000, holder="h1", concurrency=1, ttl=5000)
        self.assertEqual(self.op(PREFIX, "renew", 4000, *scope, "h1", 5000), 1)
        self.assertEqual(self.r.call("ZSCORE", PREFIX + "l:4:prov|2:k1|2:m1", "h1"), "9000")
        # still held at 8000: h2 waits
        self.assertEqual(self.ask(now=8000, holder="h2", concurrency=1, ttl=5000)["reason"],
                         CONCURRENCY)
        self.assertEqual(self.op(PREFIX, "renew", 9000, *scope, "h1", 5000), 0)
        self.assertEqual(self.op(PREFIX, "renew", 9000, *scope, "nobody", 5000), 0)

    def test_the_fleet_size_counts_members_and_forgets_the_silent(self):
        self.assertEqual(self.ask(now=1000, member="1")["size"], 1)
        self.assertEqual(self.ask(now=1000, member="2")["size"], 2)
        self.assertEqual(self.ask(now=2000, member="2")["size"], 2)
        self.tell(now=3000, member="3", outcome="success")
        self.assertEqual(self.ask(now=31000, member="2")["size"], 3)  # 1 seen exactly 30 s ago
        self.assertEqual(self.ask(now=31001, member="2")["size"], 2)
        self.assertEqual(self.op(PREFIX, "state", 33001, "model", "prov", "k1", "m1", 0)[6], 1)

    def test_now_minus_one_is_redis_time(self):
        a = self.ask(now=-1)
        sec, usec = self.r.call("TIME")
        redis_ms = int(sec) * 1000 + int(usec) // 1000
        self.assertLessEqual(a["now"], redis_ms)
        self.assertGreater(a["now"], redis_ms - 5000)
        t = self.tell(now=-1, block_ms=60000)
        self.assertGreaterEqual(t["block"], a["now"] + 60000)
        self.assertLess(t["block"], a["now"] + 65000)

    def test_every_key_the_scripts_write_expires(self):
        p = dict(self.p, rpm=6)
        self.ask(concurrency=2, holder="h1", p=p)
        self.tell(block_ms=3 * 3600 * 1000, usage_reset=1000, overload=True, after=1, p=p)
        self.tell(kind="provider", outcome="success", p=p)
        self.op(PREFIX, "renew", 1000, "model", "prov", "k1", "m1", "h1", 10000)
        self.op("rule:{x}:s", "acquire", 1000, 0, 999, *param_list(p))
        self.op("rule:{x}:c", "exhaust", 1000, 500, *param_list(p))
        self.op("rule:{x}:m", "model", 1000, 1, 0, 1, 100)
        self.assertEqual(self.op(PREFIX, "clear", "provider", "prov", "kx", "mx"), 1)
        keys = self.keys()
        self.assertEqual(len(keys), 9, keys)
        for k in keys:
            ttl = self.r.call("PTTL", k)
            self.assertGreater(ttl, 0, k)
            self.assertLessEqual(ttl, 4 * 3600 * 1000, k)
        # the block's key lives at least as long as the block
        self.assertGreater(self.r.call("PTTL", PREFIX + "s:4:prov|2:k1|2:m1"), 3 * 3600 * 1000 - 60000)

    def test_clear_resets_the_scope_its_credentials_and_its_model(self):
        self.tell(cred="k1", block_ms=60000, rpm_limit=100, usage_reset=60000, overload=True,
                  after=1)
        self.tell(cred="k2", usage_reset=60000)
        a = self.ask(now=2000, creds=("k1", "k2"), models=("m1", "m2"))
        self.assertEqual((a["cred"], a["cred_until"]), (-1, 61000))
        self.assertEqual(self.op(PREFIX, "clear", "model", "prov", "k1", "m1", "k2"), 4)
        a = self.ask(now=2000, creds=("k1", "k2"), models=("m1", "m2"))
        self.assertEqual((a["cred"], a["model"], a["wait"], a["block"]), (0, 0, 0, 0))
        # the learned rate is kept: the next ask is paced at 100 rpm
        self.assertEqual(self.op(PREFIX, "state", 2000, "model", "prov", "k1", "m1", 0)[4], 100)
        a = self.ask(now=2000, creds=("k1", "k2"), models=("m1", "m2"))
        self.assertEqual((a["wait"], a["reason"]), (630, PACING))
        self.assertEqual(self.op(PREFIX, "clear", "model", "prov", "nope", "m9"), 0)

    def test_state_shows_the_block_circuit_rate_leases_and_size(self):
        self.tell(member="1")
        self.tell(member="2", rpm_limit=500)
        self.tell(member="3", block_ms=4000)  # open now: probe_until 3000
        st = self.op(PREFIX, "state", 1000, "model", "prov", "k1", "m1", 0)
        self.assertEqual(st, [5000, 1, 3000, 7000, 500, 0, 3, 1000])
        a = self.ask(now=5000, member="4", concurrency=3, holder="h")  # the probe, with a lease
        self.assertEqual((a["wait"], a["probe"], a["lease"]), (0, 1, 1))
        a = self.ask(now=6000, member="4", concurrency=3, holder="h2")  # waits for the probe
        self.assertEqual((a["wait"], a["reason"], a["lease"]), (1000, PROBE, 0))
        st = self.op(PREFIX, "state", 6000, "model", "prov", "k1", "m1", 0)
        self.assertEqual(st, [5000, 1, 7000, 7000, 500, 1, 4, 6000])
        st = self.op(PREFIX, "state", 6000, "model", "prov", "k1", "m1", 1200)
        self.assertEqual(st[4], 1200)
        self.assertEqual(self.op(PREFIX, "state", 6000, "provider", "none", "", "", 0),
                         [0, 0, 0, -1, 0, 0, 4, 6000])

    def test_a_local_failure_is_not_shared(self):
        t = self.tell(outcome="local", block_ms=30000)
        self.assertEqual(t["block"], 0)
        self.assertEqual(self.ask(now=1001)["wait"], 0)


if __name__ == "__main__":
    unittest.main()

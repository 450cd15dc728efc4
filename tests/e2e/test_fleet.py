"""The fleet: several real daemons sharing what the provider said, through
record files under flock (fleet.mode "user") or kept apart ("process").
Each scenario counts the requests the fake LLM server received.

Redis mode runs the same kind of scenarios in test_fleet_redis.py."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from harness import Daemon, DaemonTestCase, is_type, scaled, text_of
from harness import binary_path as harness_binary

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

PROVIDER = "fake"
KEY_A = "sk-fleet-a-1f2e3d4c5b6a79880706f5e4d3c2b1a0"
KEY_B = "sk-fleet-b-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
QUOTA = {"error": {"message": "You exceeded your current quota, please check your plan and "
                              "billing details.", "type": "insufficient_quota",
                   "param": None, "code": "insufficient_quota"}}


def key_hash(secret):
    return hashlib.sha256(("Bearer " + secret).encode()).hexdigest()[:16]


def events(msgs, t):
    return [m for m in msgs if m.get("type") == t]


class FleetCase(DaemonTestCase):
    """Daemons that share one runtime dir (so one user-mode fleet)."""

    def setUp(self):
        self.run_dir = tempfile.mkdtemp(prefix="retryd-e2e-fleet-")
        os.chmod(self.run_dir, 0o700)

    def server(self, plan):
        srv = FakeServer(plan, max_seconds=120).start()
        self.addCleanup(srv.stop)
        return srv

    def daemon(self, srv, sets=None, keys=("A",), mode="user", run_dir=None, env=None):
        cfg = {"api": "openai-completions", "baseUrl": srv.url + "/v1",
               "apiKeyEnv": ["FLEET_KEY_" + k for k in keys], "models": ["m1", "m2"]}
        all_sets = {"retry.baseDelayMs": 20, "fleet.mode": mode}
        all_sets.update(sets or {})
        all_env = {"FLEET_KEY_A": KEY_A, "FLEET_KEY_B": KEY_B,
                   "XDG_RUNTIME_DIR": run_dir or self.run_dir}
        all_env.update(env or {})
        return self.spawn(args=["--provider", PROVIDER, "--no-session"],
                          settings={"providers": {PROVIDER: cfg}}, sets=all_sets, env=all_env)

    def state(self, d):
        return d.request({"type": "get_state", "id": d.next_id()})["data"]


class ServerWordTests(FleetCase):
    def test_a_retry_after_seen_by_one_daemon_keeps_the_other_from_sending_until_it_ends(self):
        srv = self.server([{"status": 429, "headers": {"retry-after": "2"}}, {"text": "a"},
                           {"text": "b"}])
        a = self.daemon(srv)
        b = self.daemon(srv)
        a.send({"type": "prompt", "message": "one", "id": "p"})
        a.wait_type("auto_retry_start")
        t0 = time.time()
        msgs = self.run_prompt(b, "two")
        waits = events(msgs, "fleet_wait")
        self.assertEqual(len(waits), 1, msgs)
        self.assertEqual(waits[0]["reason"], "server-block")
        self.assertTrue(500 <= waits[0]["delayMs"] <= 2000, waits[0])
        self.assertIn("fake|", waits[0]["scope"])
        self.assertNotIn(KEY_A, json.dumps(waits[0]))
        # The hold comes inside the turn, before the attempt's message_start.
        kinds = [m["type"] for m in msgs]
        self.assertLess(kinds.index("turn_start"), kinds.index("fleet_wait"))
        self.assertEqual(events(msgs, "message_start")[-1]["message"]["role"], "assistant")
        self.assertLess(kinds.index("fleet_wait"),
                        max(i for i, m in enumerate(msgs) if m.get("type") == "message_start"))
        a.collect_until(is_type("agent_end"))
        reqs = srv.wait_requests(3)
        self.assertEqual(len(reqs), 3)
        # B's request went after the block the server gave A had ended.
        first = reqs[0]["time"]
        self.assertGreaterEqual(min(r["time"] for r in reqs[1:]) - first, 1.9)
        self.assertGreaterEqual(time.time() - t0, 0.5)

    def test_in_process_mode_nothing_is_shared(self):
        srv = self.server([{"status": 429, "headers": {"retry-after": "3"}}, {"text": "a"},
                           {"text": "b"}])
        a = self.daemon(srv, mode="process")
        b = self.daemon(srv, mode="process")
        a.send({"type": "prompt", "message": "one", "id": "p"})
        a.wait_type("auto_retry_start")
        msgs = self.run_prompt(b, "two")
        self.assertEqual(events(msgs, "fleet_wait"), [])
        self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "a")
        self.assertEqual(self.state(b)["fleet"]["mode"], "process")

    def test_a_wait_shorter_than_min_shared_block_stays_local(self):
        srv = self.server([{"status": 429, "headers": {"retry-after-ms": "400"}}, {"text": "a"},
                           {"text": "b"}])
        a = self.daemon(srv)
        b = self.daemon(srv)
        a.send({"type": "prompt", "message": "one", "id": "p"})
        a.wait_type("auto_retry_start")
        msgs = self.run_prompt(b, "two")
        self.assertEqual(events(msgs, "fleet_wait"), [])

    def test_a_shared_block_longer_than_my_max_delay_ends_my_prompt_at_once_saying_whose(self):
        srv = self.server({"steps": [{"status": 429, "headers": {"retry-after": "600"}}],
                           "default": {"text": "never"}})
        a = self.daemon(srv, sets={"retry.maxRetries": 0, "retry.maxDelayMs": 1000})
        self.run_prompt(a, "one")
        b = self.daemon(srv, sets={"retry.maxDelayMs": 1000})
        t0 = time.monotonic()
        msgs = self.run_prompt(b, "two")
        self.assertLess(time.monotonic() - t0, scaled(1.0))
        final = events(msgs, "message_end")[-1]["message"]
        self.assertEqual(final["stopReason"], "error")
        self.assertRegex(final["errorMessage"],
                         r"a retryd of yours \(this one or another\) to wait (?:9m5\ds|10m) "
                         r"\(fleet: fake\|")
        self.assertIn("retry.maxDelayMs (1000 ms)", final["errorMessage"])
        self.assertIn("retryctl fleet clear", final["errorMessage"])
        self.assertEqual(events(msgs, "fleet_wait"), [])
        self.assertEqual(events(msgs, "auto_retry_start"), [])
        self.assertEqual(len(srv.requests()), 1)  # a's only

    def test_get_state_shows_the_block_and_fleet_clear_removes_it(self):
        srv = self.server([{"status": 429, "headers": {"retry-after": "60"}}, {"text": "a"}])
        a = self.daemon(srv, sets={"retry.maxRetries": 0})
        b = self.daemon(srv)
        self.run_prompt(a, "one")
        fleet = self.state(b)["fleet"]
        self.assertEqual(fleet["mode"], "user")
        self.assertTrue(50000 <= fleet["blockedForMs"] <= 60000, fleet)
        self.assertIn("blockedUntil", fleet)
        r = b.request({"type": "fleet_clear", "id": "c"})
        self.assertTrue(r["success"], r)
        self.assertEqual(r["data"]["mode"], "user")
        self.assertGreaterEqual(r["data"]["cleared"], 1)
        self.assertNotIn("blockedUntil", self.state(b)["fleet"])
        self.assertNotIn("blockedUntil", self.state(a)["fleet"])
        msgs = self.run_prompt(b, "two")
        self.assertEqual(events(msgs, "fleet_wait"), [])

    def test_abort_retry_cancels_a_fleet_wait_at_once(self):
        srv = self.server([{"status": 429, "headers": {"retry-after": "60"}}, {"text": "a"}])
        a = self.daemon(srv, sets={"retry.maxRetries": 0})
        b = self.daemon(srv)
        self.run_prompt(a, "one")
        b.send({"type": "prompt", "message": "two", "id": "p"})
        w = b.wait_type("fleet_wait")
        self.assertEqual(w["reason"], "server-block")
        t0 = time.time()
        r = b.request({"type": "abort_retry", "id": "x"})
        self.assertTrue(r["success"])
        msgs = b.collect_until(is_type("agent_end"))
        self.assertLess(time.time() - t0, scaled(2))
        ends = [m for m in events(msgs, "message_end") if m["message"]["role"] == "assistant"]
        self.assertEqual(ends[-1]["message"]["stopReason"], "aborted")
        self.assertEqual(ends[-1]["message"]["errorMessage"], "Fleet wait cancelled")
        self.assertEqual(len(srv.requests()), 1)

    def test_sigterm_during_a_fleet_wait_closes_the_run_and_exits_0(self):
        srv = self.server([{"status": 429, "headers": {"retry-after": "60"}}])
        a = self.daemon(srv, sets={"retry.maxRetries": 0})
        b = self.daemon(srv)
        self.run_prompt(a, "one")
        b.send({"type": "prompt", "message": "two", "id": "p"})
        b.wait_type("fleet_wait")
        b.signal(signal.SIGTERM)
        self.assertEqual(b.wait_exit(), 0)
        rest = b.remaining()
        self.assertEqual([m["type"] for m in rest if m.get("type") == "agent_end"], ["agent_end"])
        self.assertEqual(len(srv.requests()), 1)

    def test_abort_cancels_a_fleet_wait_inside_a_retry_chain(self):
        srv = self.server([{"status": 503},
                           {"status": 429, "headers": {"retry-after": "60"}}, {"text": "a"}])
        b = self.daemon(srv, sets={"retry.baseDelayMs": 1500})
        a = self.daemon(srv, sets={"retry.maxRetries": 0})
        b.send({"type": "prompt", "message": "two", "id": "p"})
        b.wait_type("auto_retry_start")
        self.run_prompt(a, "one")   # the 429: a 60 s block for everyone
        w = b.wait_type("fleet_wait")
        self.assertEqual(w["reason"], "server-block")
        b.request({"type": "abort", "id": "x"})
        msgs = b.collect_until(is_type("agent_end"))
        end = events(msgs, "auto_retry_end")
        self.assertEqual(end[-1]["success"], False)
        self.assertEqual(end[-1]["finalError"], "Retry cancelled")


class RetryReasonTests(FleetCase):
    def test_a_retry_the_fleet_holds_longer_says_so_in_auto_retry_start(self):
        srv = self.server([{"status": 503, "delayMs": 600},
                           {"status": 429, "headers": {"retry-after": "30"}}, {"text": "b"}])
        b = self.daemon(srv)
        a = self.daemon(srv, sets={"retry.maxRetries": 0})
        b.send({"type": "prompt", "message": "slow failure", "id": "p"})
        srv.wait_requests(1, outcome=False)
        self.run_prompt(a, "the 429")              # answered while b's request is out
        start = b.wait_type("auto_retry_start")
        self.assertEqual(start["reason"], "fleet-server-block", start)
        self.assertTrue(25000 <= start["delayMs"] <= 30000, start)
        b.request({"type": "abort_retry", "id": "x"})
        b.collect_until(is_type("agent_end"))


class ProviderScopeTests(FleetCase):
    def test_a_provider_scope_override_shares_one_record_for_the_whole_provider(self):
        srv = self.server([])
        d = self.daemon(srv, sets={"fleet.providerScopes": {"fake": "provider"},
                                   "fleet.scope": "model"})
        fleet = self.state(d)["fleet"]
        self.assertEqual((fleet["scopeKind"], fleet["scope"]), ("provider", "fake"))

    def test_a_bad_provider_scope_is_refused_at_start(self):
        d = Daemon(args=["--no-session"], sets={"fleet.providerScopes": {"sim": "org"}},
                   expect_ready=False, env={"XDG_RUNTIME_DIR": self.run_dir})
        self.addCleanup(d.cleanup)
        self.assertEqual(d.wait_exit(), 1)
        self.assertIn("fleet.providerScopes.sim must be", d.stderr_text())


class RetryctlFleetTests(FleetCase):
    def retryctl(self, srv, *args):
        settings = os.path.join(self.run_dir, "ctl-settings.json")
        with open(settings, "w") as f:
            json.dump({"providers": {PROVIDER: {
                "api": "openai-completions", "baseUrl": srv.url + "/v1",
                "apiKeyEnv": ["FLEET_KEY_A"], "models": ["m1", "m2"]}}}, f)
        ctl = os.path.join(os.path.dirname(os.path.abspath(harness_binary())), "retryctl")
        env = dict(os.environ, RETRYD=harness_binary(), XDG_RUNTIME_DIR=self.run_dir,
                   FLEET_KEY_A=KEY_A, HOME=self.run_dir, XDG_CONFIG_HOME=self.run_dir)
        env.pop("RETRYD_LOG", None)
        return subprocess.run([ctl, "fleet"] + list(args) + ["--provider", PROVIDER,
                              "--settings", settings], capture_output=True, text=True,
                              env=env, timeout=scaled(20))

    def test_retryctl_fleet_status_shows_a_block_and_clear_removes_it(self):
        srv = self.server([{"status": 429, "headers": {"retry-after": "60"}}])
        a = self.daemon(srv, sets={"retry.maxRetries": 0})
        self.run_prompt(a, "the 429")
        p = self.retryctl(srv, "status")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("mode user, scope fake|", p.stdout)
        self.assertIn("blocked for", p.stdout)
        p = self.retryctl(srv, "clear")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("fleet cleared: fake|", p.stdout)
        self.assertNotIn(KEY_A, p.stdout + p.stderr)
        p = self.retryctl(srv, "status")
        self.assertIn("not blocked", p.stdout)

    def test_retryctl_fleet_wants_clear_or_status(self):
        srv = self.server([])
        p = self.retryctl(srv, "frob")
        self.assertEqual(p.returncode, 2)
        self.assertIn("fleet wants clear or status", p.stderr)


class CredentialTests(FleetCase):
    def test_a_usage_limit_on_key_a_makes_the_next_daemon_start_on_key_b(self):
        srv = self.server([{"status": 429, "body": QUOTA}, {"text": "a"}, {"text": "b"}])
        a = self.daemon(srv, keys=("A", "B"))
        msgs = self.run_prompt(a, "one")
        self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "a")
        b = self.daemon(srv, keys=("A", "B"))
        msgs = self.run_prompt(b, "two")
        switch = events(msgs, "retry_fallback_applied")
        self.assertEqual(len(switch), 1, msgs)
        self.assertEqual(switch[0]["kind"], "credential")
        kinds = [m["type"] if m.get("type") != "message_start" else
                 "message_start:" + m["message"]["role"] for m in msgs]
        self.assertLess(kinds.index("retry_fallback_applied"),
                        kinds.index("message_start:assistant"))
        reqs = srv.wait_requests(3)
        used = [r["secretHashes"].get("authorization") for r in reqs]
        self.assertEqual(used, [key_hash(KEY_A), key_hash(KEY_B), key_hash(KEY_B)])

    def test_every_key_exhausted_ends_the_prompt_without_a_request(self):
        srv = self.server([{"status": 429, "body": QUOTA}, {"text": "never"}])
        a = self.daemon(srv)
        self.run_prompt(a, "one")
        b = self.daemon(srv)
        msgs = self.run_prompt(b, "two")
        last = [m for m in events(msgs, "message_end") if m["message"]["role"] == "assistant"]
        err = last[-1]["message"]["errorMessage"]
        self.assertIn("Usage limit reached for every credential of fake", err)
        self.assertIn("shared by the fleet", err)
        self.assertEqual(len(srv.requests()), 1)


class PacingTests(FleetCase):
    def test_a_known_rate_spaces_the_fleets_requests(self):
        srv = self.server({"steps": [], "default": {"text": "ok"}})
        ds = [self.daemon(srv, sets={"fleet.rpm": 300}) for _ in range(3)]
        for i, d in enumerate(ds):
            d.send({"type": "prompt", "message": "p%d" % i, "id": "p"})
        waits = []
        for d in ds:
            msgs = d.collect_until(is_type("agent_end"))
            waits += events(msgs, "fleet_wait")
        reqs = srv.wait_requests(3)
        times = sorted(r["time"] for r in reqs)
        gaps = [b - a for a, b in zip(times, times[1:])]
        self.assertTrue(all(g >= 0.15 for g in gaps), gaps)   # 300 rpm: one per 200 ms
        self.assertGreaterEqual(len(waits), 2)
        self.assertEqual({w["reason"] for w in waits}, {"pacing"})

    def test_the_rate_is_learned_from_the_limit_header(self):
        srv = self.server({"steps": [], "default": {
            "text": "ok", "headers": {"x-ratelimit-limit-requests": "120"}}})
        a = self.daemon(srv)
        self.run_prompt(a, "one")
        self.assertEqual(self.state(a)["fleet"]["rpm"], 120)
        b = self.daemon(srv)
        self.assertEqual(self.state(b)["fleet"]["rpm"], 120)


class ReleaseTests(FleetCase):
    def test_fifty_waiters_leave_one_by_one_at_the_known_rate_when_a_block_ends(self):
        srv = self.server({"steps": [{"status": 429, "headers": {"retry-after": "4"}}],
                           "default": {"text": "ok"}})
        sets = {"fleet.rpm": 1200, "retry.maxRetries": 0}
        # The fifty start first (the slow part on a loaded machine), so the
        # prompts go out well inside the 4 s block.
        ds = [self.daemon(srv, sets=sets) for _ in range(50)]
        first = self.daemon(srv, sets=sets)
        self.run_prompt(first, "the 429")
        block_end = srv.wait_requests(1)[0]["time"] + 4
        sent = []
        for i, d in enumerate(ds):
            d.send({"type": "prompt", "message": "w%d" % i, "id": "p"})
            sent.append(time.time())
        held = 0
        for d, at in zip(ds, sent):
            msgs = d.collect_until(is_type("agent_end"), timeout=scaled(30))
            waits = events(msgs, "fleet_wait")
            was_held = bool(waits) and waits[0]["reason"] == "server-block"
            held += was_held
            if at < block_end - 1:   # asked well inside the block: it must wait
                self.assertTrue(was_held, "a prompt sent %.1f s before the block ended "
                                "was not held" % (block_end - at))
            self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "ok")
        reqs = srv.wait_requests(51)
        self.assertEqual(len(reqs), 51)
        self.assertGreaterEqual(held, 40)
        times = sorted(r["time"] for r in reqs[1:])
        gaps = [b - a for a, b in zip(times, times[1:])]
        # 1200 rpm: one every 50 ms, not 50 in the same second. (On a loaded
        # machine a lock held past 10 ms makes a daemon decide alone: a gap
        # or two may be short, never most.)
        short = [g for g in gaps if g < 0.035]
        self.assertLessEqual(len(short), 3, gaps)
        self.assertGreaterEqual(times[-1] - times[0], 45 * 0.045)


class ModelTests(FleetCase):
    def test_overloads_from_two_daemons_move_a_third_to_the_fallback_model_before_it_sends(self):
        over = {"status": 529, "message": "Overloaded"}
        srv = self.server({"steps": [over, over], "default": {"text": "ok"}})
        sets = {"retry.fallbackModels": ["m2"], "retry.fallbackAfterConsecutive": 2,
                "retry.maxRetries": 0}
        a = self.daemon(srv, sets=sets)
        b = self.daemon(srv, sets=sets)
        self.run_prompt(a, "one")
        self.run_prompt(b, "two")
        c = self.daemon(srv, sets=sets)
        msgs = self.run_prompt(c, "three")
        switch = events(msgs, "retry_fallback_applied")
        self.assertEqual([(e["kind"], e["to"]) for e in switch], [("model", "m2")], msgs)
        reqs = srv.wait_requests(3)
        self.assertEqual([r["body"]["model"] for r in reqs], ["m1", "m1", "m2"])


class CircuitTests(FleetCase):
    def test_a_provider_failing_for_everyone_gets_one_probe_per_interval_then_all_recover(self):
        down = {"status": 503, "message": "Service Unavailable"}
        srv = self.server({"steps": [], "default": down})
        sets = {"retry.maxRetries": 20, "retry.baseDelayMs": 100, "retry.maxDelayMs": 400,
                "fleet.probeIntervalMs": 1000}
        ds = [self.daemon(srv, sets=sets) for _ in range(3)]
        for d in ds:
            d.send({"type": "prompt", "message": "x", "id": "p"})
        outage = 4.0
        time.sleep(outage)   # the outage, in real time: the daemons run on their own
        during = len(srv.requests())
        srv.set_plan({"steps": [], "default": {"text": "back"}})
        waits, answers = [], []
        for d in ds:
            msgs = d.collect_until(is_type("agent_end"), timeout=scaled(15))
            waits += events(msgs, "fleet_wait")
            answers.append(text_of([m for m in events(msgs, "message_end")
                                    if m["message"]["role"] == "assistant"][-1]["message"]))
        # Alone, each daemon would retry every 100-400 ms: ~12 requests each in
        # 4 s. Shared: 3 first failures, until the circuit opens, then one
        # probe a second.
        self.assertIn("probe", {w["reason"] for w in waits})
        self.assertLessEqual(during, 3 + 2 + int(outage / 1.0) + 1, during)
        self.assertEqual(answers, ["back"] * 3)
        self.assertFalse(self.state(ds[0])["fleet"]["open"])


class ConcurrencyTests(FleetCase):
    def test_a_lease_held_by_a_killed_daemon_is_freed_by_the_kernel(self):
        srv = self.server([{"text": "slow", "hang": True}, {"text": "b"}])
        a = self.daemon(srv, sets={"fleet.concurrency": 1})
        b = self.daemon(srv, sets={"fleet.concurrency": 1})
        a.send({"type": "prompt", "message": "one", "id": "p"})
        srv.wait_requests(1, timeout=scaled(5), outcome=False)
        b.send({"type": "prompt", "message": "two", "id": "p"})
        w = b.wait_type("fleet_wait")
        self.assertEqual(w["reason"], "concurrency")
        a.proc.kill()
        msgs = b.collect_until(is_type("agent_end"), timeout=scaled(10))
        self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "b")


class SimulatorTests(FleetCase):
    """A sim plan is a script of one process: what it fails with is nobody
    else's business, unless the fleet's own tests ask (sim.shareFleet)."""

    PLAN = [{"error": "429 Too Many Requests", "status": 429, "retryAfterMs": 600000}]

    def sim(self, plan, sets=None):
        return self.spawn(args=["--no-session"], plan=plan, sets=sets or {},
                          env={"XDG_RUNTIME_DIR": self.run_dir})

    def test_a_sim_plans_failures_do_not_hold_another_daemon_of_the_user(self):
        a = self.sim(self.PLAN, {"retry.maxRetries": 0})
        a.send({"type": "prompt", "message": "q", "id": "p"})
        a.collect_until(is_type("agent_end"), timeout=scaled(10))
        self.assertEqual(a.request({"type": "get_state", "id": "s"})["data"]["fleet"]["mode"],
                         "process")
        b = self.sim([{"text": "fast"}])
        t0 = time.monotonic()
        b.send({"type": "prompt", "message": "q", "id": "p"})
        msgs = b.collect_until(is_type("agent_end"), timeout=scaled(10))
        self.assertEqual([m for m in msgs if m.get("type") == "fleet_wait"], [])
        self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "fast")
        self.assertLess(time.monotonic() - t0, scaled(2))

    def test_sim_share_fleet_lets_a_test_of_the_fleet_share_a_sim_plans_word(self):
        a = self.sim(self.PLAN, {"retry.maxRetries": 0, "sim.shareFleet": True})
        a.send({"type": "prompt", "message": "q", "id": "p"})
        a.collect_until(is_type("agent_end"), timeout=scaled(10))
        self.assertEqual(a.request({"type": "get_state", "id": "s"})["data"]["fleet"]["mode"],
                         "user")
        b = self.sim([{"text": "held"}], {"sim.shareFleet": True, "retry.maxDelayMs": 3600000})
        b.send({"type": "prompt", "message": "q", "id": "p"})
        w = b.wait_for(is_type("fleet_wait"), timeout=scaled(10))
        self.assertGreater(w["delayMs"], 500000)


class SettingsTests(FleetCase):
    # The default provider is the simulator, which shares nothing; its
    # fleet settings are checked at start all the same.
    def test_a_fleet_dir_open_to_others_is_refused_at_start(self):
        bad = os.path.join(self.run_dir, "open")
        os.makedirs(bad)
        os.chmod(bad, 0o755)
        d = Daemon(args=["--no-session"], sets={"fleet.dir": bad}, expect_ready=False,
                   env={"XDG_RUNTIME_DIR": self.run_dir})
        self.addCleanup(d.cleanup)
        status = d.wait_exit()
        self.assertEqual(status, 1)
        self.assertIn("mode 0755; it must be 0700", d.stderr_text())

    def test_an_unusable_default_fleet_dir_only_stops_the_sharing(self):
        # XDG_RUNTIME_DIR/retryd/fleet is a file, not a folder: the default
        # place cannot be used, so the daemon runs alone and says so.
        os.makedirs(os.path.join(self.run_dir, "retryd"))
        with open(os.path.join(self.run_dir, "retryd", "fleet"), "w") as f:
            f.write("not a folder")
        d = self.spawn(args=["--no-session"], env={"XDG_RUNTIME_DIR": self.run_dir})
        st = d.request({"type": "get_state", "id": "s"})["data"]["fleet"]
        self.assertEqual(st["mode"], "process")
        self.assertIn("shares nothing", d.stderr_text())

    def test_a_bad_namespace_is_refused_at_start(self):
        d = Daemon(args=["--no-session"], sets={"fleet.namespace": "a/b"}, expect_ready=False,
                   env={"XDG_RUNTIME_DIR": self.run_dir})
        self.addCleanup(d.cleanup)
        self.assertEqual(d.wait_exit(), 1)
        self.assertIn("fleet.namespace", d.stderr_text())


if __name__ == "__main__":
    unittest.main()

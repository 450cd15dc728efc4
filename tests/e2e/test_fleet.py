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

from harness import Daemon, DaemonTestCase, is_type, scaled, text_of, timing_sensitive
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


def arrivals(d, t):
    """When each line of type t arrived (time.monotonic())."""
    return [ln.t for ln in list(d.lines) if isinstance(ln.obj, dict) and ln.obj.get("type") == t]


REFUSAL = (r"^the provider asked another retryd of yours to wait 600 s \(fleet: fake@127\.0\.0\.1:\d+\|[0-9a-f]+\|m1, "
           r"seen \d+ (?:ms|s) ago\); exceeds retry\.maxDelayMs 1000; retryctl fleet clear drops it")


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
    def test_a_block_from_one_server_does_not_hold_a_daemon_of_another_server_by_the_same_name(self):
        # Two projects each call their own local server "fake", with the
        # same key and model: one server's 60 s block is not the other's.
        busy = self.server([{"status": 429, "headers": {"retry-after": "60"}}])
        other = self.server([{"text": "from the other server"}])
        a = self.daemon(busy, sets={"retry.maxRetries": 0})
        self.run_prompt(a, "the 429")
        b = self.daemon(other)
        t0 = time.time()
        msgs = self.run_prompt(b, "hi")
        self.assertEqual(events(msgs, "fleet_wait"), [])
        self.assertLess(time.time() - t0, 5)
        self.assertEqual(events(msgs, "message_end")[-1]["message"]["stopReason"], "stop")
        self.assertTrue(self.state(a)["fleet"]["scope"].startswith("fake@127.0.0.1:%d|" % busy.port))
        self.assertTrue(self.state(b)["fleet"]["scope"].startswith("fake@127.0.0.1:%d|" % other.port))
        # A second daemon of the busy server is held as ever.
        c = self.daemon(busy, sets={"retry.maxDelayMs": 1000})
        msgs = self.run_prompt(c, "again")
        self.assertIn("another retryd of yours", events(msgs, "message_end")[-1]["message"]["errorMessage"])

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
        self.assertIn("fake@127.0.0.1:%d|" % srv.port, waits[0]["scope"])
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

    def test_a_shared_block_longer_than_my_max_delay_ends_my_prompt_within_100ms_saying_whose(self):
        srv = self.server({"steps": [{"status": 429, "headers": {"retry-after": "600"}}],
                           "default": {"text": "never"}})
        a = self.daemon(srv, sets={"retry.maxRetries": 0, "retry.maxDelayMs": 1000})
        self.run_prompt(a, "one")
        b = self.daemon(srv, sets={"retry.maxDelayMs": 1000})
        self.state(b)  # b is up and answering
        t0 = time.monotonic()
        msgs = self.run_prompt(b, "two")
        took = arrivals(b, "agent_end")[-1] - t0
        self.assertLess(took, scaled(0.1), "prompt to agent_end: %.1f ms" % (took * 1000))
        final = events(msgs, "message_end")[-1]["message"]
        self.assertEqual(final["stopReason"], "error")
        self.assertRegex(final["errorMessage"], REFUSAL)
        self.assertEqual(events(msgs, "fleet_wait"), [])
        self.assertEqual(events(msgs, "auto_retry_start"), [])
        self.assertNotIn(KEY_A, json.dumps(msgs))
        self.assertEqual(len(srv.requests()), 1)  # a's only

    def test_a_block_seen_while_my_request_was_out_ends_my_retry_chain_at_once_not_after_a_backoff(self):
        srv = self.server([{"status": 503, "delayMs": 600},
                           {"status": 429, "headers": {"retry-after": "600"}}, {"text": "never"}])
        b = self.daemon(srv, sets={"retry.maxDelayMs": 1000, "retry.baseDelayMs": 500})
        a = self.daemon(srv, sets={"retry.maxRetries": 0, "retry.maxDelayMs": 1000})
        b.send({"type": "prompt", "message": "slow failure", "id": "p"})
        srv.wait_requests(1, outcome=False)
        self.run_prompt(a, "the 429")              # answered while b's request is out
        msgs = b.collect_until(is_type("agent_end"))
        self.assertEqual(events(msgs, "auto_retry_start"), [])
        end = events(msgs, "auto_retry_end")
        self.assertEqual(len(end), 1, msgs)
        self.assertFalse(end[0]["success"])
        self.assertRegex(end[0]["finalError"], REFUSAL)
        # At once: the 503's turn_end, then the end, no backoff between.
        turn_end, agent_end = arrivals(b, "turn_end")[-1], arrivals(b, "agent_end")[-1]
        self.assertLess(agent_end - turn_end, scaled(0.1))
        self.assertEqual(len(srv.requests()), 2)

    def test_a_daemon_that_gave_up_publishes_the_wait_as_the_server_said_it(self):
        srv = self.server([{"status": 429, "headers": {"retry-after": "30"}}, {"text": "b"}])
        a = self.daemon(srv, sets={"retry.maxRetries": 3, "retry.maxDelayMs": 1000})
        msgs = self.run_prompt(a, "one")
        self.assertEqual(events(msgs, "auto_retry_start"), [])  # gave up on its own hint
        blocked = self.state(a)["fleet"]["blockedForMs"]
        self.assertTrue(28000 <= blocked <= 30000, blocked)
        # b's own limit is longer: it holds, told who and what.
        b = self.daemon(srv, sets={"retry.maxDelayMs": 60000})
        b.send({"type": "prompt", "message": "two", "id": "p"})
        w = b.wait_type("fleet_wait")
        self.assertEqual(w["reason"], "server-block")
        self.assertTrue(27000 <= w["delayMs"] <= 30000, w)
        self.assertEqual(w["hint"], "429 retry-after 30s")
        self.assertEqual(w["cause"], "another retryd of yours got 429 retry-after 30s")
        self.assertFalse(w["byThisRetryd"])
        self.assertTrue(0 <= w["ageMs"] < scaled(3000), w)
        self.assertNotIn(KEY_A, json.dumps(w))
        b.request({"type": "abort_retry", "id": "x"})
        b.collect_until(is_type("agent_end"))

    def test_a_daemon_that_does_not_take_the_servers_word_shares_no_wait(self):
        srv = self.server([{"status": 429, "headers": {"retry-after": "30"}}, {"text": "a"}])
        a = self.daemon(srv, sets={"retry.respectServerHints": False, "retry.maxRetries": 0})
        self.run_prompt(a, "one")
        self.assertNotIn("blockedUntil", self.state(a)["fleet"])
        msgs = self.run_prompt(self.daemon(srv), "two")
        self.assertEqual(events(msgs, "fleet_wait"), [])
        self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "a")

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
        # The provider and where it is: the server's host and port.
        self.assertEqual((fleet["scopeKind"], fleet["scope"]),
                         ("provider", "fake@127.0.0.1:%d" % srv.port))

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
        self.assertIn("mode user, scope fake@127.0.0.1:%d|" % srv.port, p.stdout)
        self.assertIn("blocked for", p.stdout)
        p = self.retryctl(srv, "clear")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("fleet cleared: fake@127.0.0.1:%d|" % srv.port, p.stdout)
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
                                "was not held: %r" % (block_end - at, waits))
            self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "ok")
        reqs = srv.wait_requests(51)
        self.assertEqual(len(reqs), 51)
        self.assertGreaterEqual(held, 40)
        times = sorted(r["time"] for r in reqs[1:])
        gaps = [b - a for a, b in zip(times, times[1:])]
        # 1200 rpm: one every 50 ms, not 50 in the same second. Judged over
        # five requests in a row (four slots, 200 ms) rather than gap by gap:
        # on a loaded machine one request reaching the server 40 ms late
        # makes a short gap and a long one beside it although its slot was
        # right, while daemons sending together make every window short. (A
        # lock held past 10 ms makes a daemon decide alone: a window or few
        # may be short, never most.)
        spans = [times[i + 4] - times[i] for i in range(len(times) - 4)]
        short = [s for s in spans if s < 0.15]
        self.assertLessEqual(len(short), 4, gaps)
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


class TrueWaitTests(FleetCase):
    """The announced fleet_wait delays of a held prompt add up to its hold,
    measured from the first fleet_wait to its request at the server. The
    daemon that is held made one request before (libcurl loaded, the
    connection made), so the end of the hold is not a first connect."""

    def held(self, srv, b, n):
        offset = time.time() - time.monotonic()
        return srv.requests()[n]["time"] - (arrivals(b, "fleet_wait")[0] + offset)

    def test_the_announced_fleet_waits_of_a_held_prompt_add_up_to_its_measured_hold(self):
        srv = self.server([{"text": "warm"}, {"status": 429, "headers": {"retry-after": "2"}},
                           {"text": "b"}, {"text": "a"}])
        a = self.daemon(srv, sets={"retry.maxRetries": 0})
        b = self.daemon(srv)
        self.run_prompt(b, "warm up")
        self.run_prompt(a, "the 429")
        msgs = self.run_prompt(b, "two")
        waits = events(msgs, "fleet_wait")
        self.assertGreaterEqual(len(waits), 1, msgs)
        announced = sum(w["delayMs"] for w in waits) / 1000.0
        held = self.held(srv, b, 2)
        self.assertTrue(1.0 <= announced <= 2.0, waits)
        self.assertLess(abs(held - announced), scaled(0.02),
                        "announced %.3f s, held %.3f s" % (announced, held))
        stats = b.request({"type": "get_session_stats", "id": "s"})["data"]
        self.assertLess(abs(stats["retry"]["waitedMs"] / 1000.0 - announced), scaled(0.02), stats)

    def assert_hold_announced(self, msgs, srv, b, n, reason, lo, hi):
        """b's fleet_wait lines all say reason, their delays add up to lo..hi
        s, and to the hold measured up to its request n; returns them."""
        waits = events(msgs, "fleet_wait")
        self.assertGreaterEqual(len(waits), 1, msgs)
        self.assertEqual({w["reason"] for w in waits}, {reason})
        announced = sum(w["delayMs"] for w in waits) / 1000.0
        held = self.held(srv, b, n)
        self.assertTrue(lo <= announced <= hi, waits)
        self.assertLess(abs(held - announced), scaled(0.02) + 0.005 * len(waits),
                        "announced %.3f s, held %.3f s" % (announced, held))
        return waits

    def test_the_announced_pacing_waits_add_up_to_the_hold_a_known_rate_made(self):
        # 60 rpm: one request a 1,050 ms slot (5 % under the rate) for the
        # fleet; b's request after a's waits for the slot after a's.
        srv = self.server({"steps": [], "default": {"text": "ok"}})
        a = self.daemon(srv, sets={"fleet.rpm": 60})
        b = self.daemon(srv, sets={"fleet.rpm": 60})
        self.run_prompt(b, "warm up")
        self.run_prompt(a, "one")
        msgs = self.run_prompt(b, "two")
        self.assert_hold_announced(msgs, srv, b, 2, "pacing", 0.3, 1.05)

    def held_after_failures(self, failures, sets):
        """b warms up, a fails once (retry.maxRetries 0), then b's prompt
        meets the server's remaining 503s and ends well with "b"; returns
        b's messages, the server and b."""
        down = {"status": 503, "message": "Service Unavailable"}
        srv = self.server([{"text": "warm"}] + [down] * failures + [{"text": "b"}])
        a = self.daemon(srv, sets=dict(sets, **{"retry.maxRetries": 0}))
        b = self.daemon(srv, sets=sets)
        self.run_prompt(b, "warm up")
        self.run_prompt(a, "fails")
        msgs = self.run_prompt(b, "two")
        self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "b")
        return msgs, srv, b

    def test_the_announced_budget_waits_add_up_to_the_hold_of_a_spent_retry_budget(self):
        # Two daemons' failures spend half the shared budget of 4: a retry
        # then goes one at a time, one fleet.probeIntervalMs apart.
        msgs, srv, b = self.held_after_failures(
            3, {"fleet.retryBudget": {"maxTokens": 4, "tokenRatio": 0.1},
                "fleet.probeIntervalMs": 1000, "fleet.openAfter": 0})
        waits = self.assert_hold_announced(msgs, srv, b, 4, "budget", 0.5, 1.0)
        for w in waits:
            self.assertEqual(w["cause"], "the fleet's retry budget is spent: one retry at a time")

    @timing_sensitive("measures when a waiter leaves")
    def test_the_waiters_of_an_open_circuit_leave_when_the_probes_answer_begins_not_ends(self):
        # Two daemons' failures open the circuit; b's retry is the probe, and
        # its answer streams for 3.5 s. The provider is back at its first
        # chunk (0.35 s): c, held for the probe, goes then, not at the end of
        # the answer nor at the next probe's slot (3 s after this one).
        down = {"status": 503, "message": "Service Unavailable"}
        slow = {"text": "x", "chunks": 10, "repeat": True, "chunkDelayMs": 350}
        srv = self.server({"steps": [{"text": "warm"}, down, down, slow],
                           "default": {"text": "c"}})
        sets = {"fleet.openAfter": 2, "fleet.probeIntervalMs": 3000}
        a = self.daemon(srv, sets=dict(sets, **{"retry.maxRetries": 0}))
        b = self.daemon(srv, sets=sets)
        c = self.daemon(srv, sets=sets)
        self.run_prompt(b, "warm up")
        self.run_prompt(a, "fails")
        b.send({"type": "prompt", "message": "probe", "id": "p"})
        srv.wait_requests(4, timeout=scaled(10), outcome=False)
        probe_sent = time.monotonic()
        c.send({"type": "prompt", "message": "waits", "id": "p"})
        self.assertEqual(c.wait_type("fleet_wait", timeout=scaled(5))["reason"], "probe")
        srv.wait_requests(5, timeout=scaled(10), outcome=False)
        left = time.monotonic() - probe_sent
        # The first chunk, then one poll of a waiter (under a second here).
        self.assertLess(left, 2.2, "c left %.2f s after the probe went" % left)
        msgs = c.collect_until(is_type("agent_end"), timeout=scaled(10))
        self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "c")
        msgs = b.collect_until(is_type("agent_end"), timeout=scaled(10))
        self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "x" * 10)

    def test_the_announced_probe_waits_add_up_to_the_hold_of_an_open_circuit(self):
        # Two daemons' failures in a row open the circuit: the next request
        # is the fleet's one probe, fleet.probeIntervalMs after the failure.
        msgs, srv, b = self.held_after_failures(2, {"fleet.openAfter": 2,
                                                    "fleet.probeIntervalMs": 1000})
        self.assert_hold_announced(msgs, srv, b, 3, "probe", 0.5, 1.0)

    def test_every_re_hold_of_a_concurrency_wait_is_announced_and_they_add_up_to_the_hold(self):
        srv = self.server([{"text": "warm"}, {"text": "slow", "delayMs": 900}, {"text": "b"}])
        a = self.daemon(srv, sets={"fleet.concurrency": 1})
        b = self.daemon(srv, sets={"fleet.concurrency": 1})
        self.run_prompt(b, "warm up")
        a.send({"type": "prompt", "message": "one", "id": "p"})
        srv.wait_requests(2, timeout=scaled(5), outcome=False)
        msgs = self.run_prompt(b, "two")
        a.collect_until(is_type("agent_end"))
        waits = events(msgs, "fleet_wait")
        self.assertGreaterEqual(len(waits), 2, "re-holds are announced: %r" % waits)
        for w in waits:
            self.assertEqual(w["reason"], "concurrency")
            self.assertEqual(w["cause"], "every fleet.concurrency slot is taken")
        announced = sum(w["delayMs"] for w in waits) / 1000.0
        held = self.held(srv, b, 2)
        # A lease is polled every 50-150 ms: each wake-up of a loaded
        # machine's timer may come a few ms late.
        slack = scaled(0.02) + 0.005 * len(waits)
        self.assertLess(abs(held - announced), slack,
                        "%d holds: announced %.3f s, held %.3f s" % (len(waits), announced, held))


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
        self.assertIn("shares nothing", d.wait_stderr("shares nothing"))

    def test_a_bad_namespace_is_refused_at_start(self):
        d = Daemon(args=["--no-session"], sets={"fleet.namespace": "a/b"}, expect_ready=False,
                   env={"XDG_RUNTIME_DIR": self.run_dir})
        self.addCleanup(d.cleanup)
        self.assertEqual(d.wait_exit(), 1)
        self.assertIn("fleet.namespace", d.stderr_text())


if __name__ == "__main__":
    unittest.main()

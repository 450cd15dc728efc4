"""The fleet on a real redis-server (fleet.mode "redis"): daemons that share
no files share through Redis, and Redis slow, paused, killed, restarted or
flushed never fails a prompt. Each test starts its own redis-server on a
free 127.0.0.1 port (tests/e2e/redisd.py) and kills it by PID."""
import json
import os
import tempfile
import time
import unittest

from harness import is_type, scaled, text_of
from redisd import RedisServer
from test_fleet import KEY_A, QUOTA, REFUSAL, FleetCase, events, key_hash, KEY_B


class RedisCase(FleetCase):
    def setUp(self):
        super().setUp()
        self.redis = RedisServer().start()
        self.addCleanup(self.redis.stop)

    def rdaemon(self, srv, sets=None, **kw):
        """A daemon in Redis mode, with a runtime dir of its own: whatever it
        shares goes through Redis, not files."""
        all_sets = {"fleet.redis.url": self.redis.url + "/0", "fleet.redis.timeoutMs": 200}
        all_sets.update(sets or {})
        run = tempfile.mkdtemp(prefix="retryd-e2e-run-", dir=self.run_dir)
        return self.daemon(srv, sets=all_sets, mode="redis", run_dir=run, **kw)

    def scope_field(self, field):
        """The field of the one scope record in Redis (0 when absent)."""
        keys = self.redis.command("KEYS", "*:s:*")
        if not keys:
            return 0
        v = self.redis.command("HGET", keys[0], field)
        return int(v) if v else 0

    def until_told(self, field="block_until"):
        """A daemon's report goes to Redis after its events: wait for it."""
        deadline = time.time() + scaled(5)
        while not self.scope_field(field) and time.time() < deadline:
            time.sleep(0.01)
        self.assertTrue(self.scope_field(field), "no %s in Redis" % field)

    def connected(self, d, want=True):
        deadline = time.time() + scaled(5)
        while time.time() < deadline:
            if self.state(d)["fleet"]["connected"] == want:
                return
            time.sleep(0.05)
        self.fail("fleet.connected never became %s" % want)


class RedisSharingTests(RedisCase):
    def test_a_retry_after_seen_by_one_daemon_holds_the_other_through_redis(self):
        srv = self.server([{"status": 429, "headers": {"retry-after": "2"}}, {"text": "a"},
                           {"text": "b"}])
        a = self.rdaemon(srv)
        b = self.rdaemon(srv)
        self.connected(a)
        self.connected(b)
        a.send({"type": "prompt", "message": "one", "id": "p"})
        a.wait_type("auto_retry_start")
        self.until_told()
        msgs = self.run_prompt(b, "two")
        waits = events(msgs, "fleet_wait")
        self.assertEqual([w["reason"] for w in waits], ["server-block"], msgs)
        self.assertTrue(500 <= waits[0]["delayMs"] <= 2000, waits[0])
        a.collect_until(is_type("agent_end"))
        reqs = srv.wait_requests(3)
        self.assertGreaterEqual(min(r["time"] for r in reqs[1:]) - reqs[0]["time"], 1.9)
        st = self.state(b)["fleet"]
        self.assertEqual((st["mode"], st["connected"], st["degraded"]), ("redis", True, False))
        self.assertGreaterEqual(st["members"], 2)
        # Nothing in Redis names the key: only its fingerprint.
        keys = self.redis.command("KEYS", "*")
        self.assertTrue(keys, keys)
        dump = json.dumps([k.decode() if isinstance(k, bytes) else k for k in keys])
        self.assertNotIn(KEY_A, dump)
        self.assertTrue(all("{default}" in k for k in json.loads(dump)), dump)

    def test_a_block_from_redis_names_its_teller_and_beyond_my_max_delay_ends_my_prompt(self):
        srv = self.server({"steps": [{"status": 429, "headers": {"retry-after": "600"}}],
                           "default": {"text": "never"}})
        a = self.rdaemon(srv, sets={"retry.maxRetries": 0, "retry.maxDelayMs": 1000})
        self.connected(a)
        self.run_prompt(a, "one")
        self.until_told("block_seen")
        self.assertEqual(self.scope_field("block_status"), 429)
        self.assertEqual(self.scope_field("block_asked"), 600000)
        # Within its own limit a waiter holds, told who said what.
        b = self.rdaemon(srv, sets={"retry.maxDelayMs": 700000})
        self.connected(b)
        b.send({"type": "prompt", "message": "two", "id": "p"})
        w = b.wait_type("fleet_wait")
        self.assertEqual((w["reason"], w["hint"], w["byThisRetryd"]),
                         ("server-block", "429 retry-after 10m", False))
        self.assertEqual(w["cause"], "another retryd of yours got 429 retry-after 10m")
        b.request({"type": "abort_retry", "id": "x"})
        b.collect_until(is_type("agent_end"))
        # Beyond it, the prompt ends at once with the sentence.
        c = self.rdaemon(srv, sets={"retry.maxDelayMs": 1000})
        self.connected(c)
        msgs = self.run_prompt(c, "three")
        self.assertRegex(events(msgs, "message_end")[-1]["message"]["errorMessage"], REFUSAL)
        self.assertEqual(len(srv.requests()), 1)

    def test_a_usage_limit_on_key_a_makes_another_machine_start_on_key_b(self):
        srv = self.server([{"status": 429, "body": QUOTA}, {"text": "a"}, {"text": "b"}])
        a = self.rdaemon(srv, keys=("A", "B"))
        self.connected(a)
        self.run_prompt(a, "one")
        b = self.rdaemon(srv, keys=("A", "B"))
        self.connected(b)
        msgs = self.run_prompt(b, "two")
        self.assertEqual([e["kind"] for e in events(msgs, "retry_fallback_applied")],
                         ["credential"])
        used = [r["secretHashes"].get("authorization") for r in srv.wait_requests(3)]
        self.assertEqual(used, [key_hash(KEY_A), key_hash(KEY_B), key_hash(KEY_B)])

    def test_fleet_clear_reaches_every_daemon_through_redis(self):
        srv = self.server([{"status": 429, "headers": {"retry-after": "60"}}, {"text": "a"}])
        a = self.rdaemon(srv, sets={"retry.maxRetries": 0})
        b = self.rdaemon(srv)
        self.connected(a)
        self.connected(b)
        self.run_prompt(a, "one")
        self.until_told()
        r = b.request({"type": "fleet_clear", "id": "c"})
        self.assertEqual(r["data"]["mode"], "redis")
        deadline = time.time() + scaled(3)
        while self.scope_field("block_until") and time.time() < deadline:
            time.sleep(0.02)
        self.assertEqual(self.scope_field("block_until"), 0)
        msgs = self.run_prompt(b, "two")
        self.assertEqual(events(msgs, "fleet_wait"), [])

    def test_concurrency_two_with_five_daemons_and_a_killed_holder(self):
        srv = self.server({"steps": [{"hang": True}, {"hang": True}],
                           "default": {"text": "ok"}})
        sets = {"fleet.concurrency": 2, "fleet.leaseTtlMs": 1500}
        ds = [self.rdaemon(srv, sets=sets) for _ in range(5)]
        for d in ds:
            self.connected(d)
        ds[0].send({"type": "prompt", "message": "0", "id": "p"})
        ds[1].send({"type": "prompt", "message": "1", "id": "p"})
        srv.wait_requests(2, timeout=scaled(5), outcome=False)
        for d in ds[2:]:
            d.send({"type": "prompt", "message": "x", "id": "p"})
        for d in ds[2:]:
            self.assertEqual(d.wait_type("fleet_wait")["reason"], "concurrency")
        self.assertEqual(len(srv.requests()), 2)
        ds[0].proc.kill()          # its lease is not released: the TTL frees it
        ds[1].request({"type": "abort", "id": "a"})   # released at once
        for d in ds[2:]:
            msgs = d.collect_until(is_type("agent_end"), timeout=scaled(15))
            self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "ok")


class RedisFailOpenTests(RedisCase):
    def test_redis_killed_mid_run_fails_no_prompt_and_it_reconnects_after_a_restart(self):
        srv = self.server({"steps": [], "default": {"text": "ok"}})
        d = self.rdaemon(srv)
        self.connected(d)
        self.redis.kill()
        for i in range(3):
            msgs = self.run_prompt(d, "p%d" % i)
            self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "ok")
        st = self.state(d)["fleet"]
        self.assertTrue(st["degraded"] or not st["connected"], st)
        err = d.wait_stderr("deciding on local records")
        self.assertEqual(err.count("deciding on local records"), 1, err)
        self.redis.restart()
        deadline = time.time() + scaled(10)
        while time.time() < deadline:
            self.run_prompt(d, "again")
            st = self.state(d)["fleet"]
            if st["connected"] and not st["degraded"]:
                break
            time.sleep(0.2)
        self.assertTrue(st["connected"] and not st["degraded"], st)
        self.assertIn("redis is back", d.stderr_text())

    def test_client_pause_adds_at_most_the_deadline_and_fails_nothing(self):
        srv = self.server({"steps": [], "default": {"text": "ok"}})
        d = self.rdaemon(srv, sets={"fleet.redis.timeoutMs": 100})
        self.connected(d)
        self.redis.command("CLIENT", "PAUSE", "3000")
        t0 = time.time()
        msgs = self.run_prompt(d, "paused")
        took = time.time() - t0
        self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "ok")
        self.assertLess(took, scaled(2.0), took)

    def test_a_slow_redis_does_not_send_a_waiter_of_an_open_circuit_to_the_dead_provider(self):
        # Two daemons' failures open the circuit in Redis; b is held for the
        # probe. Redis then stops answering: b's local records know only its
        # own failure and would send. Redis's last word stands instead, for
        # as long as a probe gap can last (4 x fleet.probeIntervalMs).
        down = {"status": 503, "message": "Service Unavailable"}
        srv = self.server({"steps": [], "default": down})
        sets = {"fleet.openAfter": 2, "fleet.probeIntervalMs": 2000,
                "fleet.redis.timeoutMs": 100, "retry.maxRetries": 30,
                "retry.baseDelayMs": 100, "retry.maxDelayMs": 400}
        a = self.rdaemon(srv, sets=dict(sets, **{"retry.maxRetries": 0}))
        b = self.rdaemon(srv, sets=sets, env={"RETRYD_LOG": "debug"})
        self.connected(a)
        self.connected(b)
        self.run_prompt(a, "fails")
        self.until_told("fail_streak")
        b.send({"type": "prompt", "message": "held", "id": "p"})
        b.wait_type("fleet_wait", timeout=scaled(5), reason="probe")
        sent = len(srv.requests())
        self.redis.command("CLIENT", "PAUSE", "2500")
        t0 = time.time()
        self.assertIn("redis is slow and said", b.wait_stderr("redis is slow and said", timeout=3))
        while time.time() - t0 < 2.2:
            time.sleep(0.05)
        self.assertEqual(len(srv.requests()), sent, "a waiter sent while Redis was slow")
        srv.set_plan({"steps": [], "default": {"text": "back"}})
        msgs = b.collect_until(is_type("agent_end"), timeout=scaled(15))
        self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "back")
        self.assertIn("did not answer in time", b.stderr_text())

    def test_script_flush_mid_run_is_reloaded(self):
        srv = self.server({"steps": [], "default": {"text": "ok"}})
        a = self.rdaemon(srv)
        b = self.rdaemon(srv)
        self.connected(a)
        self.connected(b)
        self.run_prompt(b, "warm")            # loads the script
        self.redis.command("SCRIPT", "FLUSH")
        srv.set_plan([{"status": 429, "headers": {"retry-after": "2"}}, {"text": "a"},
                      {"text": "b"}])
        a.send({"type": "prompt", "message": "one", "id": "p"})
        a.wait_type("auto_retry_start")
        self.until_told()
        msgs = self.run_prompt(b, "two")
        self.assertEqual([w["reason"] for w in events(msgs, "fleet_wait")], ["server-block"])

    def test_an_unreadable_redis_url_stops_the_daemon_at_start(self):
        from harness import Daemon
        d = Daemon(args=["--no-session"], sets={"fleet.mode": "redis",
                                                 "fleet.redis.url": "rediss://x:6380"},
                   expect_ready=False, env={"XDG_RUNTIME_DIR": self.run_dir})
        self.addCleanup(d.cleanup)
        self.assertEqual(d.wait_exit(), 1)
        self.assertIn("fleet.redis.url", d.stderr_text())

    def test_an_unreachable_redis_does_not_stop_the_daemon(self):
        srv = self.server({"steps": [], "default": {"text": "ok"}})
        self.redis.kill()
        d = self.rdaemon(srv)
        msgs = self.run_prompt(d, "x")
        self.assertEqual(text_of(events(msgs, "message_end")[-1]["message"]), "ok")


if __name__ == "__main__":
    unittest.main()

"""The fleet believes nothing it reads: poisoned record files and Redis keys,
special files at record paths, folders of other users, and a Redis (real, or
a fake one here that lies) whose replies are unsolicited, of the wrong shape
or announced huge. Each test runs the real binary; whatever the record or the
reply says, no prompt is held past fleet.maxSharedBlockMs, none fails, the
daemon neither hangs nor dies, and a refused value is not written back.

Real parts: the fake LLM server on loopback (tests/fixtures), a real
redis-server the tests start (redisd.py), and a fake Redis (FakeRedis below,
a socket server speaking just enough RESP) for what a real one never sends.
"""
import json
import os
import socket
import tempfile
import threading
import time
import unittest

from harness import Daemon, binary_path, scaled
from redisd import RedisServer
from test_fleet import FleetCase, events

HERE = os.path.dirname(os.path.abspath(__file__))
YEAR_9999 = 253402300799000
NOBODY = 65534
HOSTILE_SCOPES = [
    "block_until=%d open=1 shared=1\n" % YEAR_9999,
    "block_until=-9223372036854775808 win_start=-9223372036854775808 "
    "pace_tat=9223372036854775807 req_cur=9223372036854775807 req_prev=9223372036854775807 "
    "tokens=-9223372036854775808 probe_until=9223372036854775807 probe_gap=9223372036854775807\n",
    "block_until=9223372036854775807 rpm_learned=9223372036854775807 fail_streak=-5 "
    "acc_cur=-1 shared=7 open=-1\n",
    "block_until=1e308 pace_tat=nan\n",
    "block_until=" + "9" * 5000 + "\n",
]


def said(d, text):
    """d's stderr once it holds text (read by a thread: it may lag a little)."""
    deadline = time.time() + scaled(5)
    while text not in d.stderr_text() and time.time() < deadline:
        time.sleep(0.02)
    return d.stderr_text()


def assert_said(test, d, text):
    test.assertIn(text, said(d, text))


def fnv64(text):
    h = 14695981039346656037
    for b in text.encode():
        h = ((h ^ b) * 1099511628211) & (2 ** 64 - 1)
    return "%016x" % h


class UserRecordCase(FleetCase):
    """User mode: the records are files in <run>/retryd/fleet/default."""

    def ns_dir(self):
        return os.path.join(self.run_dir, "retryd", "fleet", "default")

    def paths(self, d):
        """The scope's and the credential's record files of d's current key."""
        scope = self.state(d)["fleet"]["scope"]      # "fake|<fingerprint>|m1"
        provider, cred, _ = scope.split("|")
        return (os.path.join(self.ns_dir(), "s-" + fnv64(scope)),
                os.path.join(self.ns_dir(), "c-" + fnv64(provider + "|" + cred)))

    def write(self, path, text, uid=None):
        with open(path, "w") as f:
            f.write(text)
        if uid is not None:
            os.chown(path, uid, uid)

    def quick_prompt(self, d, limit=3.0):
        """A prompt that completes, with no wait held by the fleet, fast."""
        t0 = time.monotonic()
        msgs = self.run_prompt(d, "hi", timeout=scaled(10))
        took = time.monotonic() - t0
        ends = [m for m in msgs if m.get("type") == "message_end"
                and m["message"]["role"] == "assistant"]
        self.assertEqual([m["message"]["stopReason"] for m in ends][-1:], ["stop"], msgs)
        self.assertEqual(events(msgs, "fleet_wait"), [], msgs)
        self.assertLess(took, scaled(limit), msgs)
        return msgs


class PoisonedRecordFileTests(UserRecordCase):
    def test_a_scope_file_blocked_until_the_year_9999_holds_no_prompt_and_is_not_written_back(self):
        srv = self.server([{"text": "a"}, {"text": "b"}])
        d = self.daemon(srv)
        scope_path, _ = self.paths(d)
        self.write(scope_path, HOSTILE_SCOPES[0])
        self.quick_prompt(d)
        self.quick_prompt(d)
        with open(scope_path) as f:
            record = f.read()
        self.assertNotIn(str(YEAR_9999), record)
        self.assertIn("block_until=0 ", record)
        err = said(d, "out of its range")
        self.assertIn("block_until=%d, out of its range; refused" % YEAR_9999, err)
        self.assertEqual(err.count("out of its range"), 1, err)  # said once, not per read
        self.assertNotIn("blockedUntil", self.state(d)["fleet"])
        d.finish()

    def test_a_credential_file_exhausted_until_the_year_9999_does_not_fail_the_prompt(self):
        srv = self.server([{"text": "a"}, {"text": "b"}])
        d = self.daemon(srv)
        _, cred_path = self.paths(d)
        self.write(cred_path, "%d\n" % YEAR_9999)
        self.quick_prompt(d)
        self.quick_prompt(d)
        err = said(d, "credential record")
        self.assertIn("credential record", err)
        self.assertEqual(err.count("out of its range"), 1, err)
        d.finish()

    def test_a_credential_file_refused_whole_never_lets_its_train_through(self):
        # until out of range and the train at int64's end: every field is
        # checked, not only the first.
        srv = self.server([{"text": "a"}, {"text": "b"}])
        d = self.daemon(srv)
        _, cred_path = self.paths(d)
        self.write(cred_path, "99999999999999999 9223372036854775807 9223372036854775807\n")
        self.quick_prompt(d)
        self.quick_prompt(d)
        d.finish()

    def test_a_credential_file_whose_train_runs_to_the_year_9999_holds_no_prompt(self):
        srv = self.server([{"text": "a"}, {"text": "b"}])
        d = self.daemon(srv)
        _, cred_path = self.paths(d)
        self.write(cred_path, "0 %d %d\n" % (YEAR_9999, YEAR_9999))
        self.quick_prompt(d)
        self.quick_prompt(d)
        err = said(d, "credential record")
        self.assertIn("turn_end=%d, out of its range" % YEAR_9999, err)
        d.finish()

    def test_int64_extremes_negative_counts_nan_and_huge_numbers_in_a_record_are_harmless(self):
        srv = self.server([{"text": str(i)} for i in range(2 * len(HOSTILE_SCOPES))])
        d = self.daemon(srv, sets={"fleet.rpm": 600})
        scope_path, cred_path = self.paths(d)
        for text in HOSTILE_SCOPES:
            self.write(scope_path, text)
            self.write(cred_path, "-9223372036854775808 9223372036854775807\n")
            self.quick_prompt(d)
            st = self.state(d)["fleet"]
            self.assertLessEqual(st.get("blockedForMs", 0), 6 * 3600 * 1000, st)
        d.finish()   # the sanitizer build would report any overflow here

    def test_a_real_block_whose_teller_fields_are_hostile_holds_with_sane_words(self):
        srv = self.server([{"text": "a"}])
        d = self.daemon(srv)
        scope_path, _ = self.paths(d)
        now_ms = int(time.time() * 1000)
        self.write(scope_path, "block_until=%d block_seen=-9223372036854775808 "
                   "block_member=-1 block_status=99999 block_asked=9223372036854775807\n"
                   % (now_ms + 1500))
        msgs = self.run_prompt(d, timeout=scaled(10))
        # One hold, or (a slow build) the hold and a re-hold of its last
        # milliseconds, each announced: together no longer than the block.
        waits = events(msgs, "fleet_wait")
        self.assertTrue(waits, msgs)
        self.assertLessEqual(sum(w["delayMs"] for w in waits), 1500, waits)
        for w in waits:
            self.assertEqual(w["reason"], "server-block", waits)
            self.assertNotIn("ageMs", w)     # when it was said is not known: refused
            self.assertNotIn("hint", w)      # nor what was asked
        assert_said(self, d, "block_seen=-9223372036854775808, out of its range")
        d.finish()   # the sanitizer build would report an overflow of now - seen

    def test_a_fifo_at_the_scope_record_path_neither_hangs_the_daemon_nor_stops_sigterm(self):
        srv = self.server([{"text": "a"}])
        d = self.daemon(srv)
        scope_path, _ = self.paths(d)
        os.mkfifo(scope_path, 0o600)
        self.quick_prompt(d, limit=5.0)
        st = d.request({"type": "get_state", "id": "s"}, timeout=5)  # reads the record
        self.assertEqual(st["data"]["fleet"]["mode"], "user")
        assert_said(self, d, "is a FIFO, not a regular file; refusing to use it")
        d.signal()
        self.assertEqual(d.wait_exit(timeout=5), 0)

    def test_a_fifo_at_the_credential_record_path_is_refused_and_sigterm_ends_the_daemon(self):
        srv = self.server([{"text": "a"}])
        d = self.daemon(srv)
        _, cred_path = self.paths(d)
        os.mkfifo(cred_path, 0o600)
        self.quick_prompt(d, limit=5.0)
        assert_said(self, d, "is a FIFO")
        d.signal()
        self.assertEqual(d.wait_exit(timeout=5), 0)

    @unittest.skipUnless(os.geteuid() == 0, "needs root to give a file to another uid")
    def test_a_record_file_of_another_user_is_refused_and_never_read(self):
        srv = self.server([{"text": "a"}])
        d = self.daemon(srv)
        scope_path, _ = self.paths(d)
        now_ms = int(time.time() * 1000)
        # A block that would be believed (3 s, within every bound) if read.
        self.write(scope_path, "block_until=%d\n" % (now_ms + 3000), uid=NOBODY)
        self.quick_prompt(d, limit=2.0)
        assert_said(self, d, "belongs to uid %d, not to you" % NOBODY)
        d.finish()


class ForeignFolderTests(FleetCase):
    @unittest.skipUnless(os.geteuid() == 0, "needs root to give a folder to another uid")
    def test_a_runtime_dir_of_another_user_turns_sharing_off_with_a_warning(self):
        os.chown(self.run_dir, NOBODY, NOBODY)
        srv = self.server([{"text": "a"}])
        d = self.daemon(srv)
        self.assertEqual(self.state(d)["fleet"]["mode"], "process")
        err = said(d, "shares nothing")
        self.assertIn("XDG_RUNTIME_DIR: %s belongs to uid %d" % (self.run_dir, NOBODY), err)
        self.assertIn("shares nothing", err)
        self.assertFalse(os.path.exists(os.path.join(self.run_dir, "retryd")))
        self.assertEqual(events(self.run_prompt(d), "fleet_wait"), [])
        d.finish()

    def test_a_runtime_dir_others_may_write_in_turns_sharing_off_with_a_warning(self):
        os.chmod(self.run_dir, 0o777)
        srv = self.server([{"text": "a"}])
        d = self.daemon(srv)
        self.assertEqual(self.state(d)["fleet"]["mode"], "process")
        assert_said(self, d, "others may write in it")
        d.finish()

    def test_a_group_writable_folder_below_the_runtime_dir_turns_sharing_off(self):
        os.makedirs(os.path.join(self.run_dir, "retryd"), mode=0o700)
        os.chmod(os.path.join(self.run_dir, "retryd"), 0o770)
        srv = self.server([{"text": "a"}])
        d = self.daemon(srv)
        self.assertEqual(self.state(d)["fleet"]["mode"], "process")
        assert_said(self, d, "it must be 0700")
        d.finish()

    def test_a_runtime_path_too_long_for_the_fleet_folder_is_refused_not_cut(self):
        deep = self.run_dir
        while len(deep) < 4060:
            deep = os.path.join(deep, "d" * min(200, 4060 - len(deep)))
        os.makedirs(deep, mode=0o700)
        srv = self.server([{"text": "a"}])
        d = self.daemon(srv, run_dir=deep)
        self.assertEqual(self.state(d)["fleet"]["mode"], "process")
        assert_said(self, d, "is a path too long")
        d.finish()

    def test_a_namespace_of_dot_dot_or_dot_is_refused_at_start_with_a_sentence(self):
        for ns in ("..", "."):
            d = Daemon(args=["--no-session"], sets={"fleet.namespace": ns}, expect_ready=False,
                       env={"XDG_RUNTIME_DIR": self.run_dir})
            self.addCleanup(d.cleanup)
            self.assertEqual(d.wait_exit(), 1)
            assert_said(self, d, 'fleet.namespace "%s": must be a plain name' % ns)
        self.assertFalse(os.path.exists(os.path.join(self.run_dir, "retryd", "default")))


class PoisonedRedisKeyTests(FleetCase):
    def setUp(self):
        super().setUp()
        self.redis = RedisServer().start()
        self.addCleanup(self.redis.stop)

    def rdaemon(self, srv):
        run = tempfile.mkdtemp(prefix="retryd-e2e-run-", dir=self.run_dir)
        d = self.daemon(srv, mode="redis", run_dir=run,
                        sets={"fleet.redis.url": self.redis.url + "/0",
                              "fleet.redis.timeoutMs": 500})
        deadline = time.time() + scaled(5)
        while not self.state(d)["fleet"]["connected"] and time.time() < deadline:
            time.sleep(0.02)
        return d

    def cred_key(self, d):
        """The Redis key of the credential d's scope uses (after one prompt)."""
        cred = self.state(d)["fleet"]["scope"].split("|")[1]
        return self.key("s").split(":s:")[0] + ":c:%d:fake|%d:%s" % (4, len(cred), cred)

    def key(self, kind):
        deadline = time.time() + scaled(5)
        while time.time() < deadline:
            keys = self.redis.command("KEYS", "*:%s:*" % kind)
            if keys:
                return keys[0]
            time.sleep(0.02)
        self.fail("no %s: key in Redis" % kind)

    def test_a_redis_scope_key_blocked_until_the_year_9999_holds_no_prompt_and_is_overwritten(self):
        srv = self.server([{"text": "a"}, {"text": "b"}, {"text": "c"}])
        d = self.rdaemon(srv)
        self.run_prompt(d)                       # the scope's key exists from here
        key = self.key("s")
        self.redis.command("HSET", key, "block_until", str(YEAR_9999), "open", "1",
                           "shared", "1", "req_cur", "-7", "pace_tat", "nan")
        self.quick(d)
        self.quick(d)
        self.assertNotEqual(self.redis.command("HGET", key, "block_until"), str(YEAR_9999).encode())
        self.assertNotIn("blockedUntil", self.state(d)["fleet"])
        d.finish()

    def test_a_redis_credential_key_exhausted_until_the_year_9999_does_not_fail_the_prompt(self):
        srv = self.server([{"text": "a"}, {"text": "b"}])
        d = self.rdaemon(srv)
        self.run_prompt(d)
        key = self.cred_key(d)
        self.redis.command("HSET", key, "until", str(YEAR_9999))
        msgs = self.run_prompt(d, timeout=scaled(10))
        self.assertNotIn("resets in", json.dumps(msgs))
        self.assertEqual([m["message"]["stopReason"] for m in msgs
                          if m.get("type") == "message_end"
                          and m["message"]["role"] == "assistant"], ["stop"], msgs)
        self.assertNotEqual(self.redis.command("HGET", key, "until"), str(YEAR_9999).encode())
        d.finish()

    def test_a_redis_credential_key_whose_train_runs_to_the_year_9999_holds_no_prompt(self):
        srv = self.server([{"text": "a"}, {"text": "b"}])
        d = self.rdaemon(srv)
        self.run_prompt(d)
        key = self.cred_key(d)
        self.redis.command("HSET", key, "until", "0", "turn", str(YEAR_9999),
                           "turn_end", str(YEAR_9999))
        self.quick(d)
        d.finish()

    def quick(self, d):
        t0 = time.monotonic()
        msgs = self.run_prompt(d, timeout=scaled(10))
        self.assertEqual(events(msgs, "fleet_wait"), [], msgs)
        self.assertLess(time.monotonic() - t0, scaled(3))


class FakeRedis:
    """Just enough of Redis over TCP: PING, AUTH, SELECT, and EVALSHA/EVAL
    answered by `answer(conn)` (bytes to send, or a callable that writes
    itself). Counts connections and what it sent."""

    def __init__(self, on_eval, after_ping=b""):
        self.on_eval = on_eval
        self.after_ping = after_ping
        self.connections = 0
        self.sent = 0
        self.evals = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = "redis://127.0.0.1:%d/0" % self.port
        self.stopping = False
        threading.Thread(target=self.serve, daemon=True).start()

    def stop(self):
        self.stopping = True
        self.sock.close()

    def serve(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    @staticmethod
    def commands(buf):
        """Whole RESP arrays of bulk strings in buf: (list of argv, rest)."""
        out = []
        while buf.startswith(b"*") and b"\r\n" in buf:
            head, rest = buf.split(b"\r\n", 1)
            argv, ok = [], True
            for _ in range(int(head[1:])):
                if b"\r\n" not in rest:
                    ok = False
                    break
                ln, rest2 = rest.split(b"\r\n", 1)
                n = int(ln[1:])
                if len(rest2) < n + 2:
                    ok = False
                    break
                argv.append(rest2[:n])
                rest = rest2[n + 2:]
            if not ok:
                break
            out.append(argv)
            buf = rest
        return out, buf

    def send(self, conn, data):
        conn.sendall(data)
        self.sent += len(data)

    def handle(self, conn):
        buf = b""
        try:
            while not self.stopping:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                cmds, buf = self.commands(buf)
                for argv in cmds:
                    name = argv[0].upper()
                    if name == b"PING":
                        self.send(conn, b"+PONG\r\n" + self.after_ping)
                    elif name in (b"AUTH", b"SELECT"):
                        self.send(conn, b"+OK\r\n")
                    elif name in (b"EVALSHA", b"EVAL"):
                        self.evals += 1
                        self.on_eval(self, conn, argv)
                    else:
                        self.send(conn, b"-ERR unknown command\r\n")
        except OSError:
            return
        finally:
            conn.close()


def ask_answer(wait=0, reason=0, probe=0, cred=0, cred_until=0, model=0, size=1, block=0,
               lease=0):
    vals = [wait, reason, probe, cred, cred_until, model, size, block, lease,
            int(time.time() * 1000)]
    return b"*10\r\n" + b"".join(b":%d\r\n" % v for v in vals)


class LyingRedisTests(FleetCase):
    def fake(self, on_eval, after_ping=b""):
        r = FakeRedis(on_eval, after_ping)
        self.addCleanup(r.stop)
        return r

    def fdaemon(self, srv, fake, sets=None):
        run = tempfile.mkdtemp(prefix="retryd-e2e-run-", dir=self.run_dir)
        all_sets = {"fleet.redis.url": fake.url, "fleet.redis.timeoutMs": 500}
        all_sets.update(sets or {})
        return self.daemon(srv, mode="redis", run_dir=run, sets=all_sets)

    def wait_for(self, cond, what):
        deadline = time.time() + scaled(5)
        while not cond() and time.time() < deadline:
            time.sleep(0.02)
        self.assertTrue(cond(), what)

    def test_an_unsolicited_reply_from_redis_does_not_kill_the_daemon_and_prompts_complete(self):
        fake = self.fake(lambda r, c, argv: r.send(c, ask_answer()), after_ping=b":1\r\n")
        srv = self.server([{"text": "a"}, {"text": "b"}])
        d = self.fdaemon(srv, fake)
        self.wait_for(lambda: fake.connections >= 2, "the daemon never reconnected")
        for _ in range(2):
            msgs = self.run_prompt(d, timeout=scaled(10))
            self.assertEqual([m["message"]["stopReason"] for m in msgs
                              if m.get("type") == "message_end"
                              and m["message"]["role"] == "assistant"], ["stop"])
        self.assertIsNone(d.proc.poll())
        assert_said(self, d, "sent a reply no call was waiting for; dropped it and the "
                             "connection")
        self.assertEqual(d.finish(), 0)

    def test_a_resp3_push_frame_from_redis_drops_the_connection_and_prompts_complete(self):
        fake = self.fake(lambda r, c, argv: r.send(c, ask_answer()),
                         after_ping=b">2\r\n$7\r\nmessage\r\n:1\r\n")
        srv = self.server([{"text": "a"}])
        d = self.fdaemon(srv, fake)
        self.wait_for(lambda: fake.connections >= 2, "the daemon never reconnected")
        self.run_prompt(d, timeout=scaled(10))
        self.assertIsNone(d.proc.poll())
        self.assertEqual(d.finish(), 0)

    def test_an_extra_reply_after_an_answer_is_dropped_and_the_connection_reset(self):
        def twice(r, conn, argv):
            r.send(conn, ask_answer() + ask_answer())
        fake = self.fake(twice)
        srv = self.server([{"text": "a"}, {"text": "b"}])
        d = self.fdaemon(srv, fake)
        self.wait_for(lambda: fake.connections >= 1, "no connection")
        for _ in range(2):
            self.run_prompt(d, timeout=scaled(10))
        self.assertIsNone(d.proc.poll())
        assert_said(self, d, "no call was waiting for")
        self.assertEqual(d.finish(), 0)

    def test_an_unknown_reason_code_from_redis_is_refused_not_taken_for_go(self):
        fake = self.fake(lambda r, c, argv: r.send(c, ask_answer(wait=0, reason=9)))
        srv = self.server([{"text": "a"}, {"text": "b"}])
        d = self.fdaemon(srv, fake)
        self.wait_for(lambda: self.state(d)["fleet"]["connected"], "never connected")
        for _ in range(2):
            self.run_prompt(d, timeout=scaled(10))
        self.wait_for(lambda: fake.evals >= 2, "no ask reached the fake")
        err = said(d, "reason=9")
        self.assertIn("reason=9, out of its range; refused, deciding locally", err)
        self.assertEqual(err.count("out of its range"), 1, err)
        self.assertGreaterEqual(self.state(d)["fleet"]["localDecisions"], 2)
        d.finish()

    def test_a_redis_answer_holding_a_block_of_the_year_9999_holds_no_prompt(self):
        fake = self.fake(lambda r, c, argv: r.send(
            c, ask_answer(wait=YEAR_9999 - int(time.time() * 1000), reason=1, block=YEAR_9999)))
        srv = self.server([{"text": "a"}])
        d = self.fdaemon(srv, fake)
        self.wait_for(lambda: self.state(d)["fleet"]["connected"], "never connected")
        t0 = time.monotonic()
        msgs = self.run_prompt(d, timeout=scaled(10))
        self.assertLess(time.monotonic() - t0, scaled(3))
        self.assertEqual(events(msgs, "fleet_wait"), [], msgs)
        assert_said(self, d, "wait_ms=")
        self.assertNotIn("blockedUntil", self.state(d)["fleet"])
        d.finish()

    def test_a_reply_announcing_a_2_gb_bulk_string_is_not_buffered_past_max_reply_bytes(self):
        def huge(r, conn, argv):
            r.send(conn, b"$2000000000\r\n")
            chunk = b"x" * 65536
            try:
                while r.sent < (2 << 30):
                    r.send(conn, chunk)
            except OSError:
                pass
        fake = self.fake(huge)
        srv = self.server([{"text": "a"}, {"text": "b"}])
        d = self.fdaemon(srv, fake, sets={"fleet.redis.maxReplyBytes": 1 << 20})
        self.wait_for(lambda: self.state(d)["fleet"]["connected"], "never connected")
        msgs = self.run_prompt(d, timeout=scaled(15))
        self.assertEqual(events(msgs, "fleet_wait"), [])
        self.wait_for(lambda: "larger than fleet.redis.maxReplyBytes" in d.stderr_text(),
                      "no word of the bound")
        self.assertLess(fake.sent, 64 << 20)        # the connection went at ~1 MiB
        self.assertLess(d.rss_kb(), 200 * 1024)
        self.run_prompt(d, timeout=scaled(15))
        self.assertEqual(d.finish(), 0)

    def test_a_max_reply_bytes_below_its_minimum_is_refused_with_a_sentence(self):
        d = Daemon(args=["--no-session"], sets={"fleet.redis.maxReplyBytes": 10},
                   expect_ready=False)
        self.addCleanup(d.cleanup)
        self.assertEqual(d.wait_exit(), 1)
        assert_said(self, d, "fleet.redis.maxReplyBytes")


class ChildDescriptorTests(FleetCase):
    """An agent CLI child holds the daemon's fds 0-2 and nothing else of it:
    not the Redis socket, not a lease, not the session file."""

    def agent(self, runs=1):
        fake_agent = os.path.join(HERE, "..", "fixtures", "bin", "fake_agent")
        agent_dir = tempfile.mkdtemp(prefix="retryd-e2e-agent-")
        self.addCleanup(lambda: __import__("shutil").rmtree(agent_dir, ignore_errors=True))
        init = {"type": "system", "subtype": "init", "session_id": "S7", "model": "m"}
        ok = {"type": "result", "subtype": "success", "is_error": False, "result": "x",
              "session_id": "S7", "usage": {"input_tokens": 1, "output_tokens": 1}}
        with open(os.path.join(agent_dir, "plan.json"), "w") as f:
            json.dump([{"lines": [init, ok]}] * runs, f)
        return fake_agent, agent_dir

    def calls(self, agent_dir):
        with open(os.path.join(agent_dir, "calls.jsonl")) as f:
            return [json.loads(line) for line in f]

    def test_a_descriptor_the_daemon_inherited_without_cloexec_does_not_reach_a_cli_child(self):
        fake_agent, agent_dir = self.agent()
        marker = os.path.join(agent_dir, "inherited")
        with open(marker, "w"):
            pass
        wrapper = os.path.join(agent_dir, "retryd-with-fd-7")
        with open(wrapper, "w") as f:
            # A shell's "exec 7<file" is inherited (no close-on-exec): as a
            # careless parent, or a library of the daemon's, leaves one.
            f.write('#!/bin/sh\nexec 7<"%s"\nexec "%s" "$@"\n' % (marker, binary_path()))
        os.chmod(wrapper, 0o755)
        d = self.spawn(args=["--provider", "claude", "--no-session"], binary=wrapper,
                       sets={"providers.claude.command": fake_agent, "fleet.mode": "process"},
                       env={"FAKE_AGENT_DIR": agent_dir})
        self.assertIn(marker, [os.readlink("/proc/%d/fd/%s" % (d.proc.pid, fd))
                               for fd in os.listdir("/proc/%d/fd" % d.proc.pid)
                               if fd == "7"])
        self.run_prompt(d, "one", timeout=scaled(10))
        [call] = self.calls(agent_dir)
        self.assertEqual(call["fds"], [], call["fds"])
        d.finish()

    def test_an_agent_cli_child_inherits_no_descriptor_with_redis_leases_and_a_session(self):
        fake_agent = os.path.join(HERE, "..", "fixtures", "bin", "fake_agent")
        agent_dir = tempfile.mkdtemp(prefix="retryd-e2e-agent-")
        self.addCleanup(lambda: __import__("shutil").rmtree(agent_dir, ignore_errors=True))
        init = {"type": "system", "subtype": "init", "session_id": "S7", "model": "m"}
        ok = {"type": "result", "subtype": "success", "is_error": False, "result": "x",
              "session_id": "S7", "usage": {"input_tokens": 1, "output_tokens": 1}}
        with open(os.path.join(agent_dir, "plan.json"), "w") as f:
            json.dump([{"lines": [init, ok]}, {"lines": [init, ok]}], f)
        redis = RedisServer().start()
        self.addCleanup(redis.stop)
        d = self.spawn(args=["--provider", "claude"],
                       sets={"providers.claude.command": fake_agent, "fleet.mode": "redis",
                             "fleet.redis.url": redis.url + "/0", "fleet.redis.timeoutMs": 500,
                             "fleet.concurrency": 2},
                       env={"FAKE_AGENT_DIR": agent_dir, "XDG_RUNTIME_DIR": self.run_dir})
        deadline = time.time() + scaled(5)
        while not self.state(d)["fleet"]["connected"] and time.time() < deadline:
            time.sleep(0.02)
        self.assertTrue(self.state(d)["fleet"]["connected"])
        daemon_fds = os.listdir("/proc/%d/fd" % d.proc.pid)
        self.assertTrue(any("socket:" in os.readlink("/proc/%d/fd/%s" % (d.proc.pid, fd))
                            for fd in daemon_fds if os.path.exists(
                                "/proc/%d/fd/%s" % (d.proc.pid, fd))))
        self.run_prompt(d, "one", timeout=scaled(10))
        self.run_prompt(d, "two", timeout=scaled(10))
        with open(os.path.join(agent_dir, "calls.jsonl")) as f:
            calls = [json.loads(line) for line in f]
        self.assertEqual(len(calls), 2)
        for call in calls:
            self.assertEqual(call["fds"], [], call["fds"])
        d.finish()


if __name__ == "__main__":
    unittest.main()

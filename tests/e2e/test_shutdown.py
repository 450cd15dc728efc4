"""Orderly shutdown: stdin EOF, SIGTERM, and a reader that goes away."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import harness
from harness import (DaemonFailure, DaemonTestCase, binary_path, is_sanitized_build, is_type,
                     is_valgrind, role_of, sanitizer_report, scaled, signature, types,
                     valgrind_argv)
from harness import strip_settled

SLOW = {"retry.baseDelayMs": 5000}
# SIGTERM must end the process "within ~1 s"; ASan's exit-time leak scan adds a little.
SIGTERM_BOUND = 1.0 if not is_sanitized_build() else 2.0


def assistant_start(m):
    return m.get("type") == "message_start" and role_of(m) == "assistant"


class StdinEofTests(DaemonTestCase):
    def test_eof_when_idle_exits_0(self):
        d = self.spawn()
        t0 = time.monotonic()
        d.finish(timeout=2)
        self.assertLess(time.monotonic() - t0, 1.0)

    def test_eof_right_after_a_prompt_finishes_the_whole_retry_chain(self):
        d = self.spawn(plan=[{"error": "503"}, {"error": "overloaded"}, {"text": "done"}],
                       sets={"retry.baseDelayMs": 20})
        d.send({"type": "prompt", "message": "q"})
        d.close_stdin()
        d.assert_clean_exit()
        msgs = d.remaining()
        self.assertEqual(types(msgs)[-1], "agent_end")
        self.assertEqual([s["attempt"] for s in msgs if s["type"] == "auto_retry_start"], [1, 2])
        ends = [e for e in msgs if e["type"] == "auto_retry_end"]
        self.assertEqual([(e["success"], e["attempt"]) for e in ends], [(True, 2)])

    def test_eof_during_backoff_still_runs_the_retry(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "done"}], sets={"retry.baseDelayMs": 200})
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("auto_retry_start"))
        d.close_stdin()
        msgs = d.collect_until(is_type("agent_end"))
        self.assertEqual(signature(msgs)[-3:], ["auto_retry_end", "turn_end", "agent_end"])
        self.assertIs(msgs[-3]["success"], True)
        d.assert_clean_exit()
        self.assertEqual(d.remaining(), [])

    def test_eof_runs_queued_follow_ups_before_exiting(self):
        d = self.spawn(plan=[{"delayMs": 30, "text": "first"}])
        d.send(b'{"type":"prompt","message":"p1"}\n'
               b'{"type":"prompt","message":"p2","streamingBehavior":"followUp"}\n'
               b'{"type":"follow_up","message":"p3"}\n')
        d.close_stdin()
        d.assert_clean_exit()
        msgs = d.remaining()
        self.assertEqual(types(msgs).count("turn_start"), 3)
        self.assertEqual(types(msgs).count("agent_end"), 1)
        self.assertEqual(types(msgs)[-1], "agent_end")
        self.assertEqual([m["role"] for m in msgs[-1]["messages"]], ["user", "assistant"] * 3)


    def test_eof_during_a_hang_keeps_waiting_until_sigterm(self):
        d = self.spawn(plan=[{"hang": True}])
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(assistant_start)
        d.close_stdin()
        d.expect_silence(0.3)  # the in-flight attempt is not dropped silently
        self.assertIsNone(d.proc.poll(), "the daemon left with an attempt in flight")
        t0 = time.monotonic()
        d.signal(signal.SIGTERM)
        d.assert_clean_exit(timeout=5)
        self.assertLess(d.exit_time - t0, SIGTERM_BOUND)
        msgs = d.remaining()
        self.assertEqual(signature(msgs), ["message_end:assistant", "turn_end", "agent_end"])
        self.assertEqual(msgs[0]["message"]["stopReason"], "aborted")


class SigtermTests(DaemonTestCase):
    def _term(self, d):
        t0 = time.monotonic()
        d.signal(signal.SIGTERM)
        rc = d.wait_exit(timeout=5)
        elapsed = d.exit_time - t0
        d.check_output_clean()
        self.assertEqual(rc, 0)
        self.assertLess(elapsed, SIGTERM_BOUND)
        return d.remaining()

    def test_sigterm_when_idle_exits_0(self):
        d = self.spawn()
        self.assertEqual(self._term(d), [])

    def test_sigterm_during_backoff_cancels_the_chain_and_exits_0(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "never"}], sets=SLOW)
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("auto_retry_start"))
        msgs = self._term(d)
        self.assertEqual(types(msgs), ["auto_retry_end", "agent_end"])
        self.assertEqual((msgs[0]["success"], msgs[0]["attempt"], msgs[0]["finalError"]),
                         (False, 1, "Retry cancelled"))

    def test_sigterm_during_a_hang_ends_the_run_and_exits_0(self):
        d = self.spawn(plan=[{"hang": True}])
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(assistant_start)
        msgs = self._term(d)
        self.assertEqual(signature(msgs), ["message_end:assistant", "turn_end", "agent_end"])
        self.assertEqual(msgs[0]["message"]["stopReason"], "aborted")

    def test_sigterm_during_a_hang_in_an_open_chain_closes_the_chain(self):
        d = self.spawn(plan=[{"error": "503"}, {"hang": True}], sets={"retry.baseDelayMs": 1})
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("auto_retry_start"))
        d.wait_for(assistant_start)
        msgs = self._term(d)
        self.assertEqual(signature(msgs), ["message_end:assistant", "turn_end", "auto_retry_end",
                                           "agent_end"])
        self.assertEqual((msgs[2]["success"], msgs[2]["finalError"]), (False, "Retry cancelled"))

    def test_sigterm_exits_in_bounded_time_when_output_cannot_drain(self):
        words = " ".join("w%d" % i for i in range(3000))
        d = self.spawn(plan=[{"text": words}], args=["--no-session"])
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(lambda m: m.get("type") == "message_update")
        d.pause_reading()
        self.assertTrue(d.wait_quiescent(), "the daemon never blocked on its full stdout")
        t0 = time.monotonic()
        d.signal(signal.SIGTERM)
        rc = d.wait_exit(timeout=5)
        self.assertLess(d.exit_time - t0, 1.5)  # the drain grace is bounded
        self.assertEqual(rc, 0)
        d.check_no_sanitizer_report()

class SignalBurstTests(DaemonTestCase):
    """Any number of SIGTERM/SIGINT during shutdown end in exit 0 with every
    chain closed once. Before, a signal after the signal handles were closed
    (while the exit was finishing) killed the process by the signal."""

    # The race hit about 1 run in 80 before the fix, 3 in 4 under ASan
    # (where a run is slow).
    RUNS = 5 if is_valgrind() else 20 if is_sanitized_build() else 100

    def _burst_until_exit(self, d, first):
        d.signal(first)
        sigs = (signal.SIGTERM, signal.SIGINT)
        n = 0
        while d.proc.poll() is None:
            try:
                d.proc.send_signal(sigs[n % 2])
            except ProcessLookupError:
                break
            n += 1
        return d.wait_exit(timeout=5)

    def test_signal_burst_during_shutdown_of_an_open_chain_exits_0_and_closes_it_once(self):
        for i in range(self.RUNS):
            d = self.spawn(plan=[{"error": "503"}, {"text": "never"}], sets=SLOW,
                           args=["--no-session"])
            d.send({"type": "prompt", "message": "q"})
            d.wait_for(is_type("auto_retry_start"))
            rc = self._burst_until_exit(d, signal.SIGTERM if i % 2 else signal.SIGINT)
            self.assertEqual(rc, 0, "run %d: exit status %d" % (i, rc))
            d.check_output_clean()
            msgs = d.remaining()
            self.assertEqual(types(msgs), ["auto_retry_end", "agent_end"], "run %d" % i)
            self.assertEqual(msgs[0]["finalError"], "Retry cancelled")

    def test_signal_burst_during_shutdown_of_a_hung_attempt_exits_0(self):
        for i in range(self.RUNS):
            d = self.spawn(plan=[{"error": "503"}, {"hang": True}],
                           sets={"retry.baseDelayMs": 1})
            d.send({"type": "prompt", "message": "q"})
            d.wait_for(assistant_start)
            rc = self._burst_until_exit(d, signal.SIGTERM)
            self.assertEqual(rc, 0, "run %d: exit status %d" % (i, rc))
            d.check_output_clean()
            msgs = d.remaining()
            self.assertEqual((types(msgs).count("auto_retry_end"), types(msgs).count("agent_end"),
                              types(msgs)[-1]), (1, 1, "agent_end"), "run %d" % i)


class WholeLinesTests(DaemonTestCase):
    """The output is whole lines up to the last complete one, also when the
    shutdown flush limit runs out with a reader that stopped reading: the
    writer never begins a line that the kernel's buffer cannot take whole.
    Before, the last line in the pipe was cut."""

    def _stall_then_term(self, d):
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(lambda m: m.get("type") == "message_update")
        d.pause_reading()
        self.assertTrue(d.wait_quiescent(), "the daemon never blocked on its full stdout")
        t0 = time.monotonic()
        d.signal(signal.SIGTERM)
        rc = d.wait_exit(timeout=5)
        self.assertLess(d.exit_time - t0, 1.5)  # the drain grace is still bounded
        self.assertEqual(rc, 0)
        d.resume_reading()
        return d.remaining()  # fails on any line that is not a whole JSON object

    def test_sigterm_with_a_stalled_reader_leaves_only_whole_lines_full_updates(self):
        # Full updates: each line repeats the answer so far, lines of 10-60 KB.
        words = " ".join("w%d" % i for i in range(8000))
        for run in range(3):
            d = self.spawn(plan=[{"text": words}], args=["--no-session"])
            msgs = self._stall_then_term(d)
            self.assertTrue(msgs, "run %d: nothing after the stall" % run)
            d.check_no_sanitizer_report()

    def test_sigterm_with_a_stalled_reader_leaves_only_whole_lines_deltas(self):
        words = " ".join("w%d" % i for i in range(200000))
        d = self.spawn(settings={"sim": {"plan": [{"text": words}]}}, args=["--no-session"],
                       sets={"rpc.messageUpdates": "delta"})
        msgs = self._stall_then_term(d)
        self.assertTrue(msgs)
        d.check_no_sanitizer_report()

    def test_sigterm_with_a_stalled_socket_reader_leaves_only_whole_lines(self):
        """stdout a Unix socket, as libuv (and so libretryd-client) spawns it."""
        import socket
        from harness import binary_path
        words = " ".join("w%d" % i for i in range(8000))
        ours, theirs = socket.socketpair()
        self.addCleanup(ours.close)
        with tempfile.TemporaryDirectory(prefix="retryd-e2e-sock-") as tmp:
            env = dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=tmp, XDG_STATE_HOME=tmp,
                       **harness.runtime_env(tmp))
            p = subprocess.Popen([binary_path(), "--no-session", "--sim-plan",
                                  json.dumps([{"text": words}])],
                                 stdin=subprocess.PIPE, stdout=theirs.fileno(),
                                 stderr=subprocess.PIPE, env=env)
            theirs.close()
            self.addCleanup(lambda: p.poll() is None and p.kill())
            p.stdin.write(b'{"type":"prompt","message":"q"}\n')
            p.stdin.flush()
            got = ours.recv(4096)  # ready and the start of the run; then stop reading
            time.sleep(scaled(0.5))  # the daemon fills the socket and blocks
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(timeout=scaled(5)), 0)
            err = p.stderr.read().decode("utf-8", "replace")
            p.stdin.close()
            p.stderr.close()
            while True:
                chunk = ours.recv(1 << 20)
                if not chunk:
                    break
                got += chunk
        self.assertTrue(got.endswith(b"\n"), "the last line is cut: ...%r" % got[-80:])
        lines = [json.loads(line) for line in got.split(b"\n")[:-1]]
        self.assertEqual(lines[0], {"type": "ready"})
        self.assertEqual(sanitizer_report(err), "", err)


class StdoutClosedTests(DaemonTestCase):
    def test_daemon_exits_when_the_reader_closes_stdout_during_a_stream(self):
        words = " ".join("w%d" % i for i in range(2000))
        d = self.spawn(plan=[{"error": "503"}, {"text": words}],
                       sets={"sim.chunkDelayMs": 5, "retry.baseDelayMs": 1},
                       args=["--session", "{tmp}/s.jsonl"])
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(lambda m: m.get("type") == "message_update")
        d.close_stdout()
        t0 = time.monotonic()
        rc = d.wait_exit(timeout=3)  # stdin stays open: it must leave by itself
        self.assertLess(d.exit_time - t0, 2.0)
        self.assertEqual(rc, 0)
        d.check_no_sanitizer_report()
        # The run was aborted: the session file ends with the aborted attempt.
        with open(os.path.join(d.tmp, "s.jsonl")) as f:
            last = json.loads(f.read().splitlines()[-1])["message"]
        self.assertEqual((last["role"], last["stopReason"]), ("assistant", "aborted"))

    def test_daemon_exits_when_the_reader_closed_stdout_and_a_command_arrives(self):
        d = self.spawn()
        d.close_stdout()
        d.send({"type": "get_state"})
        rc = d.wait_exit(timeout=3)
        self.assertEqual(rc, 0)
        d.check_no_sanitizer_report()

    @unittest.skipUnless(os.environ.get("E2E_STRICT"),
                         "documented limitation (protocol/README.md section 13: a closed stdout is "
                         "noticed at the next write), so an idle daemon keeps running; "
                         "E2E_STRICT=1 runs it")
    def test_idle_daemon_exits_by_itself_when_the_reader_closes_stdout(self):
        d = self.spawn()
        d.close_stdout()
        rc = d.wait_exit(timeout=3)  # no input at all, stdin stays open
        self.assertEqual(rc, 0)
        d.check_no_sanitizer_report()


class FileOutputTests(unittest.TestCase):
    """stdout redirected to a regular file (retryd ... > out.jsonl). A file is
    written once per loop turn or per 64 KiB, not once per line; nothing
    queued may be lost at any exit."""

    WORDS = " ".join("w%d" % i for i in range(20000))

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="retryd-e2e-file-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def start(self, plan, sets=(), stdin=b""):
        settings = os.path.join(self.tmp, "settings.json")
        with open(settings, "w") as f:
            json.dump({"sim": {"plan": plan}}, f)
        argv = (valgrind_argv() if is_valgrind() else []) + [
            binary_path(), "--no-session", "--settings", settings]
        for kv in sets:
            argv += ["--set", kv]
        self.out_path = os.path.join(self.tmp, "out.jsonl")
        out = open(self.out_path, "wb")
        self.addCleanup(out.close)
        env = dict(os.environ, HOME=self.tmp, XDG_CONFIG_HOME=os.path.join(self.tmp, "c"),
                   XDG_STATE_HOME=os.path.join(self.tmp, "s"), **harness.runtime_env(self.tmp))
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.PIPE,
                             env=env, cwd=self.tmp)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        if stdin:
            p.stdin.write(stdin)
            p.stdin.flush()
        return p

    def finish(self, p):
        p.stdin.close()
        err = p.stderr.read().decode("utf-8", "replace")
        rc = p.wait(timeout=scaled(30))
        p.stderr.close()
        report = sanitizer_report(err)
        if report:
            raise DaemonFailure("sanitizer, valgrind or loop-close report:\n" + report[:2000])
        with open(self.out_path, "rb") as f:
            raw = f.read()
        self.assertTrue(raw.endswith(b"\n"), "the file ends inside a line")
        return rc, [json.loads(line) for line in raw.split(b"\n")[:-1]]

    def test_long_answer_to_a_file_is_complete_and_in_order_when_stdin_ends(self):
        p = self.start([{"error": "503 Service Unavailable"}, {"text": self.WORDS}],
                       sets=["rpc.messageUpdates=\"delta\"", "retry.baseDelayMs=10"],
                       stdin=b'{"id":"1","type":"prompt","message":"go"}\n'
                             b'{"id":"2","type":"get_state"}\n')
        rc, msgs = self.finish(p)
        self.assertEqual(rc, 0)
        self.assertEqual(msgs[0], {"type": "ready"})
        self.assertEqual([m.get("id") for m in msgs if m.get("type") == "response"], ["1", "2"])
        text = "".join(m["assistantMessageEvent"]["delta"] for m in msgs
                       if m.get("type") == "message_update"
                       and m["assistantMessageEvent"]["type"] == "text_delta")
        self.assertEqual(text, self.WORDS)
        self.assertEqual(types(msgs).count("auto_retry_end"), 1)
        self.assertEqual(strip_settled(msgs)[-1]["type"], "agent_end")

    def test_sigterm_with_output_to_a_file_writes_everything_queued_before_exiting(self):
        p = self.start([{"text": self.WORDS, "hang": True}],
                       sets=["rpc.messageUpdates=\"delta\""],
                       stdin=b'{"type":"prompt","message":"go"}\n')
        last = ('"delta":" w%d"' % 19999).encode()
        deadline = time.monotonic() + scaled(10)
        while True:
            with open(self.out_path, "rb") as f:
                if last in f.read():
                    break
            self.assertLess(time.monotonic(), deadline, "the streamed words never reached the file")
            time.sleep(0.02)
        p.send_signal(signal.SIGTERM)
        rc, msgs = self.finish(p)
        self.assertEqual(rc, 0)
        self.assertEqual(strip_settled(msgs)[-1]["type"], "agent_end")
        ends = [m for m in msgs if m.get("type") == "message_end" and role_of(m) == "assistant"]
        self.assertEqual([m["message"]["stopReason"] for m in ends], ["aborted"])

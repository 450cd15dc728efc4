"""The Python client package (clients/python): both clients against the real daemon.

The package is imported from the source tree (no install needed for make check); one test
also installs it with pip, offline, into a fresh venv. A few tests use a stand-in daemon
(a short Python script) for what the real one never does: write a line that is not JSON,
and echo back the command it received.
"""
import ast
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import unittest

import harness
from harness import is_valgrind, scaled, timing_sensitive
from harness import strip_settled

PKG_ROOT = os.path.join(harness.REPO_ROOT, "clients", "python")
sys.path.insert(0, PKG_ROOT)

import retryd  # noqa: E402
from retryd import _common as framing  # noqa: E402

FAST = ["--set", "retry.baseDelayMs=20"]
SLOW = ["--set", "retry.baseDelayMs=5000"]  # a backoff that never ends during a test
WAIT = scaled(10)
# The sim provider echoes the last user message once its plan is used up; one "word" (no
# spaces) of 2 MB is one text_delta, so even pi's full message_update shape stays linear.
BIG = "y" * (2 * 1024 * 1024)
SEPARATORS = "line\u2028separator and paragraph\u2029separator, also \r and \n escaped"


def plan(*steps):
    return ["--sim-plan", json.dumps(list(steps))]


class Sandbox:
    """A temporary HOME and XDG dirs: nothing a test does reaches the real settings file
    (set_auto_retry persists there) or the user's fleet."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="retryd-pyclient-")
        self.env = {"HOME": self.tmp, "XDG_CONFIG_HOME": os.path.join(self.tmp, "config"),
                    "XDG_STATE_HOME": os.path.join(self.tmp, "state"),
                    **harness.runtime_env(os.path.join(self.tmp, "run")), "RETRYD_LOG": None}

    def settings(self):
        path = os.path.join(self.env["XDG_CONFIG_HOME"], "retryd", "settings.json")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)


def daemon_args(args):
    """(path, args) for the client: the binary under test, inside valgrind when asked."""
    binary = harness.binary_path()
    if is_valgrind():
        vg = harness.valgrind_argv()
        return vg[0], vg[1:] + [binary] + list(args)
    return binary, list(args)


def fake_daemon(tmp, body):
    """A stand-in daemon: a Python script that says ready, then runs body for each line."""
    path = os.path.join(tmp, "fake-retryd")
    with open(path, "w") as f:
        f.write("#!%s\nimport json, sys\nout = sys.stdout.buffer\n"
                "out.write(b'{\"type\":\"ready\"}\\n'); out.flush()\n"
                "for raw in sys.stdin.buffer:\n    cmd = json.loads(raw)\n%s\n    out.flush()\n"
                % (sys.executable, textwrap.indent(textwrap.dedent(body), "    ")))
    os.chmod(path, 0o755)
    return path


def types(events):
    return [e.get("type") for e in events]


class ClientTestCase(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.box = Sandbox()
        self.addCleanup(shutil.rmtree, self.box.tmp, True)

    def client(self, *args, **kw):
        path, argv = daemon_args(["--no-session"] + list(args))
        kw.setdefault("ready_timeout", scaled(10))
        c = retryd.Client(path=path, args=argv, env=self.box.env, **kw)
        self.addCleanup(c.close, scaled(2))
        return c

    def assert_clean_close(self, client):
        self.assertEqual(client.close(scaled(5)), 0, client.stderr_tail())
        self.assertEqual(harness.sanitizer_report(client.stderr_tail()), "")


class SyncClientTests(ClientTestCase):
    def test_prompt_and_wait_returns_the_answer_and_success(self):
        c = self.client()
        run = c.prompt_and_wait("hello there", timeout=WAIT)
        self.assertTrue(run.success)
        self.assertEqual((run.text, run.stop_reason, run.error, run.retries),
                         ("hello there", "stop", None, 0))
        self.assertEqual(types(run.events)[0], "agent_start")
        self.assertEqual(types(run.events)[-2:], ["agent_end", "prompt_result"])
        self.assertEqual((run.status, run.prompt_result["id"]), ("completed", run.events[-1]["id"]))
        self.assertEqual([m["role"] for m in run.messages], ["user", "assistant"])
        self.assert_clean_close(c)

    def test_a_failed_runs_result_comes_from_its_prompt_result_with_the_error_fields(self):
        c = self.client(*FAST, "--set", "retry.maxRetries=1",
                        *plan({"error": "429 Too Many Requests", "status": 429},
                              {"error": "429 Too Many Requests", "status": 429}))
        run = c.prompt_and_wait("q", timeout=WAIT)
        self.assertEqual((run.success, run.status, run.error, run.retryable, run.http_status,
                          run.provider, run.model, run.retries),
                         (False, "error", "429 Too Many Requests", True, 429, "sim", "sim-1", 1))
        self.assertEqual(types(run.events)[-1], "prompt_result")
        self.assert_clean_close(c)

    def test_wait_for_settled_returns_once_the_chain_and_the_queue_are_done(self):
        c = self.client(*FAST, *plan({"error": "503"}, {"text": "first"}, {"text": "queued"}))
        c.wait_for_settled(timeout=WAIT)  # idle: at once, from get_state
        c.prompt("one")
        c.follow_up("two")
        c.wait_for_settled(timeout=WAIT)
        state = c.get_state()
        self.assertEqual((state["isSettled"], state["isStreaming"], state["pendingMessageCount"]),
                         (True, False, 0))
        seen = list(c.events(timeout=0))
        self.assertEqual(types(seen)[-1], "session_settled")
        self.assertEqual(types(seen).count("agent_end"), 1)
        self.assertEqual([retryd.message_text(m) for m in seen[-4]["messages"]
                          if m["role"] == "assistant"], ["first", "queued"])
        self.assert_clean_close(c)

    def test_wait_for_settled_times_out_while_an_attempt_hangs(self):
        c = self.client(*plan({"hang": True}))
        c.prompt("q")
        with self.assertRaises(retryd.Timeout):
            c.wait_for_settled(timeout=0.3)
        c.abort()
        c.wait_for_settled(timeout=WAIT)
        self.assertTrue(c.get_state()["isSettled"])

    def test_retried_failure_counts_auto_retry_start_and_ends_answered(self):
        c = self.client(*FAST, *plan({"error": "503 Service Unavailable"},
                                     {"error": "overloaded"}, {"text": "ok now"}))
        run = c.prompt_and_wait("q", timeout=WAIT)
        self.assertTrue(run.success, run)
        self.assertEqual((run.retries, run.text, run.error), (2, "ok now", None))
        starts = [e for e in run.events if e["type"] == "auto_retry_start"]
        self.assertEqual([(s["attempt"], s["errorMessage"]) for s in starts],
                         [(1, "503 Service Unavailable"), (2, "overloaded")])
        end = [e for e in run.events if e["type"] == "auto_retry_end"]
        self.assertEqual([(e["success"], e["attempt"]) for e in end], [(True, 2)])
        self.assert_clean_close(c)

    def test_non_retryable_failure_gives_success_false_and_the_error_message(self):
        c = self.client(*FAST, *plan({"error": "401 Unauthorized: invalid api key"}))
        run = c.prompt_and_wait("q", timeout=WAIT)
        self.assertFalse(run.success)
        self.assertFalse(run)
        self.assertEqual((run.stop_reason, run.error_message, run.error, run.retries, run.text),
                         ("error", "401 Unauthorized: invalid api key",
                          "401 Unauthorized: invalid api key", 0, ""))
        self.assertNotIn("auto_retry_start", types(run.events))
        self.assert_clean_close(c)

    def test_abort_retry_during_backoff_ends_the_run_with_retry_cancelled(self):
        c = self.client(*SLOW, *plan({"error": "503"}, {"text": "never"}))
        c.prompt("q")
        seen = []
        for ev in c.events(timeout=WAIT):
            seen.append(ev)
            if ev["type"] == "auto_retry_start":
                break
        self.assertEqual(seen[-1]["type"], "auto_retry_start", types(seen))
        self.assertTrue(c.get_state()["isRetrying"])
        self.assertIsNone(c.abort_retry())
        for ev in c.events(timeout=WAIT):
            seen.append(ev)
            if ev["type"] == "agent_end":
                break
        run = retryd.Result(seen)
        self.assertEqual(types(seen)[-2:], ["auto_retry_end", "agent_end"])
        self.assertEqual(seen[-2]["finalError"], "Retry cancelled")
        self.assertEqual((run.success, run.cancelled, run.retries, run.error),
                         (False, True, 1, "Retry cancelled"))
        self.assertFalse(c.get_state()["isStreaming"])
        self.assert_clean_close(c)

    def test_set_auto_retry_false_persist_false_stops_retrying(self):
        c = self.client(*FAST, *plan({"error": "503 Service Unavailable"}, {"text": "never"}))
        self.assertTrue(c.get_state()["autoRetryEnabled"])
        data = c.set_auto_retry(False, persist=False)
        self.assertIsInstance(data, dict)
        self.assertFalse(c.get_state()["autoRetryEnabled"])
        run = c.prompt_and_wait("q", timeout=WAIT)
        self.assertEqual((run.success, run.retries, run.error_message),
                         (False, 0, "503 Service Unavailable"))
        # Whether persist:false keeps the settings file untouched is the daemon's side
        # (test_settings_errors); the client's side, that the field is sent as given, is
        # test_set_auto_retry_sends_persist_as_given.
        self.assertTrue(c.set_auto_retry(True, persist=False) is not None)
        self.assertTrue(c.get_state()["autoRetryEnabled"])
        self.assert_clean_close(c)

    def test_get_state_reports_model_and_retry_fields_idle_and_in_backoff(self):
        c = self.client(*SLOW, *plan({"error": "503"}, {"text": "never"}))
        idle = c.get_state()
        self.assertEqual(idle["model"]["id"], "sim-1")
        self.assertEqual((idle["isStreaming"], idle["isRetrying"], idle["retryAttempt"],
                          idle["retryPolicy"], idle["autoRetryEnabled"], idle["messageCount"]),
                         (False, False, 0, None, True, 0))
        self.assertIsInstance(idle["sessionId"], str)
        c.prompt("q")
        for ev in c.events(timeout=WAIT):
            if ev["type"] == "auto_retry_start":
                break
        busy = c.get_state()
        self.assertEqual((busy["isStreaming"], busy["isRetrying"], busy["retryAttempt"]),
                         (True, True, 1))
        self.assertEqual(busy["retryPolicy"]["baseDelayMs"], 5000)
        self.assertEqual(c.abort(), [])
        self.assertEqual(c.get_state()["isRetrying"], False)
        self.assert_clean_close(c)

    def test_u2028_and_u2029_inside_a_message_stay_in_one_line(self):
        c = self.client()
        run = c.prompt_and_wait(SEPARATORS, timeout=WAIT)
        self.assertEqual(run.text, SEPARATORS)
        user = [m for m in c.get_messages() if m["role"] == "user"]
        self.assertEqual(retryd.message_text(user[0]), SEPARATORS)
        self.assertEqual(c.get_last_assistant_text(), SEPARATORS)
        self.assert_clean_close(c)

    def test_a_2mb_answer_arrives_whole(self):
        c = self.client()
        run = c.prompt_and_wait(BIG, timeout=scaled(30))
        self.assertTrue(run.success)
        self.assertEqual(len(run.text), len(BIG))
        self.assertEqual(run.text, BIG)
        self.assert_clean_close(c)

    def test_daemon_exiting_at_start_raises_daemon_exited_with_status_and_stderr(self):
        path, argv = daemon_args(["--provider", "lcoal"])
        with self.assertLogs("retryd.daemon", "WARNING") as logs:
            with self.assertRaises(retryd.DaemonExited) as cm:
                retryd.Client(path=path, args=argv, env=self.box.env,
                              ready_timeout=scaled(10))
        err = cm.exception
        self.assertEqual(err.returncode, 2)
        self.assertIn("exited with status 2 before it was ready", str(err))
        self.assertIn("unknown provider 'lcoal'", str(err))
        self.assertIn("unknown provider 'lcoal'", err.stderr)
        self.assertTrue(any("unknown provider" in m for m in logs.output), logs.output)

    def test_a_missing_daemon_raises_daemon_not_found_naming_the_path(self):
        missing = os.path.join(self.box.tmp, "no-such-retryd")
        with self.assertRaises(retryd.DaemonNotFound) as cm:
            retryd.Client(path=missing)
        self.assertIn(missing, str(cm.exception))
        self.assertIsInstance(cm.exception, FileNotFoundError)

    def test_refused_commands_raise_command_error_with_the_daemons_text(self):
        c = self.client(*plan({"hang": True}))
        with self.assertRaises(retryd.CommandError) as cm:
            c.send({"type": "no_such_command"})
        self.assertEqual(cm.exception.error, "Unknown command: no_such_command")
        self.assertEqual(cm.exception.command, "no_such_command")
        c.prompt("first")
        with self.assertRaises(retryd.CommandError) as cm:
            c.prompt_and_wait("second", timeout=WAIT)
        self.assertIn("Agent is already processing", cm.exception.error)
        self.assertEqual(c.abort(), [])
        self.assert_clean_close(c)

    def test_prompt_and_wait_leaves_earlier_events_to_the_iterator(self):
        c = self.client()
        c.prompt("first")
        self.assertTrue(harness_wait(lambda: not c.get_state()["isStreaming"]))
        run = c.prompt_and_wait("second", timeout=WAIT)
        self.assertEqual(run.text, "second")
        earlier = list(c.events(timeout=0))
        self.assertEqual(types(strip_settled(earlier))[-1], "agent_end")
        self.assertEqual(retryd.Result(earlier).text, "first")
        self.assert_clean_close(c)

    def test_a_daemon_killed_mid_run_raises_daemon_exited_naming_the_signal(self):
        c = self.client(*plan({"hang": True}))
        c.prompt("q")
        for ev in c.events(timeout=WAIT):
            if ev["type"] == "message_start" and ev["message"]["role"] == "assistant":
                break
        os.kill(c.pid, signal.SIGKILL)
        with self.assertRaises(retryd.DaemonExited) as cm:
            c.get_state()
        self.assertIn("killed by signal 9 (SIGKILL)", str(cm.exception))
        self.assertEqual(cm.exception.returncode, -9)
        list(c.events(timeout=WAIT))  # ends at EOF, after what was queued

    def test_close_ends_a_hung_attempt_with_sigterm_within_its_bounds(self):
        c = self.client(*plan({"hang": True}))
        c.prompt("q")
        # stdin EOF alone would wait for the attempt forever (protocol section 13).
        self.assertEqual(c.close(timeout=0.2), 0, c.stderr_tail())

    def test_context_manager_closes_the_daemon(self):
        path, argv = daemon_args(["--no-session"])
        with retryd.Client(path=path, args=argv, env=self.box.env,
                           ready_timeout=scaled(10)) as c:
            self.assertEqual(c.prompt_and_wait("x", timeout=WAIT).text, "x")
        self.assertEqual(c.returncode, 0)


def harness_wait(pred, timeout=None, step=0.02):
    """A bounded poll (the daemon has no event for "idle" beyond agent_end)."""
    import time
    deadline = time.monotonic() + (timeout or WAIT)
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


class FakeDaemonTests(ClientTestCase):
    """What the real daemon never does, through a stand-in."""

    def test_a_non_json_stdout_line_is_reported_not_fatal(self):
        path = fake_daemon(self.box.tmp, """
            out.write(b'this is not json\\n' + b'[1,2]\\n' + b'\\xff\\xfe\\n')
            out.write(json.dumps({"id": cmd["id"], "type": "response", "command": cmd["type"],
                                  "success": True, "data": {"ok": 1}}).encode() + b"\\n")
        """)
        bad = []
        c = retryd.Client(path=path, on_error=lambda why, line: bad.append((why, line)))
        self.addCleanup(c.close)
        self.assertEqual(c.send({"type": "get_state"})["data"], {"ok": 1})
        self.assertEqual([line for _, line in bad], [b"this is not json", b"[1,2]", b"\xff\xfe"])
        self.assertIn("not JSON", bad[0][0])
        self.assertIn("not a JSON object", bad[1][0])
        self.assertIn("not UTF-8", bad[2][0])
        with self.assertLogs("retryd", "WARNING"):
            c2 = retryd.Client(path=path)
            self.addCleanup(c2.close)
            c2.get_state()

    def test_set_auto_retry_sends_persist_as_given(self):
        path = fake_daemon(self.box.tmp, """
            out.write(json.dumps({"id": cmd["id"], "type": "response", "command": cmd["type"],
                                  "success": True, "data": {"got": cmd}}).encode() + b"\\n")
        """)
        c = retryd.Client(path=path)
        self.addCleanup(c.close)
        got = c.set_auto_retry(False, persist=False)["got"]
        self.assertEqual((got["type"], got["enabled"], got["persist"]),
                         ("set_auto_retry", False, False))
        self.assertNotIn("persist", c.set_auto_retry(True)["got"])
        self.assertIs(c.set_auto_retry(True, persist=True)["got"]["persist"], True)

    def test_a_daemon_without_prompt_result_ends_the_run_at_agent_end(self):
        path = fake_daemon(self.box.tmp, """
            out.write(json.dumps({"id": cmd["id"], "type": "response", "command": cmd["type"],
                                  "success": True}).encode() + b"\\n")
            msg = {"role": "assistant", "content": [{"type": "text", "text": "old"}],
                   "stopReason": "stop"}
            out.write(json.dumps({"type": "message_end", "message": msg}).encode() + b"\\n")
            out.write(json.dumps({"type": "agent_end", "messages": [msg]}).encode() + b"\\n")
        """)
        c = retryd.Client(path=path)
        self.addCleanup(c.close)
        run = c.prompt_and_wait("q", timeout=WAIT)
        self.assertEqual((run.success, run.text, run.status, run.prompt_result),
                         (True, "old", None, None))

    def test_crlf_lines_and_responses_out_of_order_are_matched_by_id(self):
        path = fake_daemon(self.box.tmp, """
            if cmd["type"] == "first":
                held = cmd
                continue
            for c in (cmd, held):
                out.write(json.dumps({"id": c["id"], "type": "response", "command": c["type"],
                                      "success": True, "data": {"t": c["type"]}}).encode()
                          + b"\\r\\n")
        """)
        c = retryd.Client(path=path)
        self.addCleanup(c.close)
        import threading
        box = {}
        t = threading.Thread(target=lambda: box.update(r=c.send({"type": "first"})))
        t.start()
        # "first" is held by the fake until "second" arrives, then answered after it.
        self.assertTrue(harness_wait(lambda: c._pending.waiting))
        self.assertEqual(c.send({"type": "second"})["data"], {"t": "second"})
        t.join(WAIT)
        self.assertEqual(box["r"]["data"], {"t": "first"})


class LineSplitterTests(unittest.TestCase):
    """The framing rules, on bytes (pure)."""

    def test_splits_on_lf_only_not_on_u2028_u2029_or_cr(self):
        s = framing.LineSplitter()
        data = json.dumps({"t": "a\u2028b\u2029c\rd\x85e"}, ensure_ascii=False).encode()
        self.assertEqual(s.feed(data + b"\r\n" + data + b"\n"), [data, data])

    def test_a_line_cut_across_chunks_is_joined(self):
        s = framing.LineSplitter()
        data = '{"t":"\u2028"}\n'.encode()
        out = []
        for i in range(len(data)):
            out += s.feed(data[i:i + 1])
        self.assertEqual(out, [data[:-1]])

    def test_one_trailing_cr_is_stripped_and_a_last_line_without_lf_is_kept(self):
        s = framing.LineSplitter()
        self.assertEqual(s.feed(b"a\r\r\nb"), [b"a\r"])
        self.assertEqual(s.finish(), [b"b"])

    def test_a_line_over_the_limit_is_dropped_and_reading_goes_on(self):
        s = framing.LineSplitter(max_bytes=4)
        out = s.feed(b"12345") + s.feed(b"678\nok\n")
        self.assertIsInstance(out[0], framing.TooLong)
        self.assertEqual(out[0].size, 8)
        self.assertEqual(out[1], b"ok")
        self.assertEqual(framing.parse_line(b" \t"), (None, None))


class AsyncClientTests(ClientTestCase):
    def run_async(self, coro_fn, *args, **kw):
        path, argv = daemon_args(["--no-session"] + list(args))

        async def main():
            client = retryd.AsyncClient(path=path, args=argv, env=self.box.env,
                                        ready_timeout=scaled(10), **kw)
            async with client:
                await coro_fn(client)
            self.assertEqual(client.returncode, 0, client.stderr_tail())
            self.assertEqual(harness.sanitizer_report(client.stderr_tail()), "")
        asyncio.run(main())

    def test_async_prompt_and_wait_retries_then_answers(self):
        async def body(c):
            run = await c.prompt_and_wait("q", timeout=WAIT)
            self.assertEqual((run.success, run.retries, run.text), (True, 1, "ok"))
            self.assertEqual((await c.get_state())["messageCount"], 2)
            self.assertEqual([m["role"] for m in await c.get_messages()], ["user", "assistant"])
        self.run_async(body, *FAST, *plan({"error": "503"}, {"text": "ok"}))

    def test_async_prompt_result_and_wait_for_settled(self):
        async def body(c):
            run = await c.prompt_and_wait("q", timeout=WAIT)
            self.assertEqual((run.success, run.status, run.error, run.retryable),
                             (False, "error", "401 Unauthorized: invalid api key", False))
            await c.prompt("again")
            await c.follow_up("and more")
            await c.wait_for_settled(timeout=WAIT)
            self.assertIs((await c.get_state())["isSettled"], True)
            await c.wait_for_settled(timeout=WAIT)
        self.run_async(body, *FAST, *plan({"error": "401 Unauthorized: invalid api key"},
                                          {"text": "a"}, {"text": "b"}))

    def test_async_non_retryable_failure_and_refused_command(self):
        async def body(c):
            run = await c.prompt_and_wait("q", timeout=WAIT)
            self.assertEqual((run.success, run.error_message), (False, "403 Forbidden"))
            with self.assertRaises(retryd.CommandError) as cm:
                await c.send({"type": "no_such_command"})
            self.assertEqual(cm.exception.error, "Unknown command: no_such_command")
        self.run_async(body, *plan({"error": "403 Forbidden"}))

    def test_async_abort_retry_during_backoff_through_the_event_iterator(self):
        async def body(c):
            await c.prompt("q")
            seen = []
            async for ev in c.events(timeout=WAIT):
                seen.append(ev)
                if ev["type"] == "auto_retry_start":
                    self.assertTrue((await c.get_state())["isRetrying"])
                    await c.abort_retry()
                if ev["type"] == "agent_end":
                    break
            run = retryd.Result(seen)
            self.assertEqual((run.cancelled, run.retries, run.error), (True, 1, "Retry cancelled"))
        self.run_async(body, *SLOW, *plan({"error": "503"}, {"text": "never"}))

    def test_async_set_auto_retry_false_stops_retrying(self):
        async def body(c):
            self.assertIsInstance(await c.set_auto_retry(False, persist=False), dict)
            self.assertFalse((await c.get_state())["autoRetryEnabled"])
            run = await c.prompt_and_wait("q", timeout=WAIT)
            self.assertEqual((run.success, run.retries), (False, 0))
        self.run_async(body, *FAST, *plan({"error": "503"}, {"text": "never"}))

    def test_async_2mb_answer_and_line_separators_beyond_the_streamreader_limit(self):
        async def body(c):
            run = await c.prompt_and_wait(SEPARATORS, timeout=WAIT)
            self.assertEqual(run.text, SEPARATORS)
            run = await c.prompt_and_wait(BIG, timeout=scaled(30))
            self.assertEqual(run.text, BIG)
        self.run_async(body)

    def test_async_daemon_exiting_at_start_raises_daemon_exited_with_status(self):
        path, argv = daemon_args(["--provider", "lcoal"])

        async def main():
            with self.assertLogs("retryd.daemon", "WARNING"):
                with self.assertRaises(retryd.DaemonExited) as cm:
                    await retryd.AsyncClient(path=path, args=argv, env=self.box.env,
                                             ready_timeout=scaled(10)).start()
            self.assertEqual(cm.exception.returncode, 2)
            self.assertIn("exited with status 2 before it was ready", str(cm.exception))
            self.assertIn("unknown provider 'lcoal'", str(cm.exception))
        asyncio.run(main())

    def test_async_close_ends_a_hung_attempt_with_sigterm(self):
        path, argv = daemon_args(["--no-session"] + plan({"hang": True}))

        async def main():
            c = await retryd.AsyncClient(path=path, args=argv, env=self.box.env,
                                         ready_timeout=scaled(10)).start()
            await c.prompt("q")
            self.assertEqual(await c.close(timeout=0.2), 0, c.stderr_tail())
        asyncio.run(main())


class PackagingTests(unittest.TestCase):
    def test_package_and_example_parse_as_python_3_8(self):
        files = [os.path.join(d, n) for d in (os.path.join(PKG_ROOT, "retryd"),
                                              os.path.join(PKG_ROOT, "_build"),
                                              os.path.join(PKG_ROOT, "examples"))
                 for n in sorted(os.listdir(d)) if n.endswith(".py")]
        self.assertGreaterEqual(len(files), 6)
        for path in files:
            with open(path, encoding="utf-8") as f:
                ast.parse(f.read(), path, feature_version=(3, 8))

    @timing_sensitive("spawns a venv and pip; nothing of the daemon's memory is checked")
    def test_pip_installs_the_package_offline_into_a_fresh_venv(self):
        try:
            import ensurepip  # noqa: F401
            import venv  # noqa: F401
        except ImportError as exc:
            self.skipTest("no venv/ensurepip in this Python (%s): cannot make a venv" % exc)
        tmp = tempfile.mkdtemp(prefix="retryd-pyclient-venv-")
        self.addCleanup(shutil.rmtree, tmp, True)
        env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
                   HOME=tmp, XDG_CONFIG_HOME=os.path.join(tmp, "config"),
                   XDG_STATE_HOME=os.path.join(tmp, "state"), **harness.runtime_env(tmp))
        for k in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PYTHONPATH"):
            env.pop(k, None)
        venv_dir = os.path.join(tmp, "venv")
        r = subprocess.run([sys.executable, "-m", "venv", venv_dir], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        if r.returncode != 0:
            self.skipTest("python3 -m venv failed here: %s" % r.stdout.decode()[-500:])
        py = os.path.join(venv_dir, "bin", "python")
        # Default build isolation, no index: the backend needs nothing from outside.
        r = subprocess.run([py, "-m", "pip", "install", "--no-index", PKG_ROOT], env=env,
                           cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout.decode()[-3000:])
        check = textwrap.dedent("""
            import json, sys, retryd
            assert retryd.__file__.startswith(sys.prefix), retryd.__file__
            with retryd.Client(path=sys.argv[1], args=["--no-session"]) as c:
                print(json.dumps([retryd.__version__, c.prompt_and_wait("installed", timeout=30).text]))
        """)
        r = subprocess.run([py, "-c", check, harness.binary_path()], env=env, cwd=tmp,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr.decode()[-3000:])
        self.assertEqual(json.loads(r.stdout), [retryd.__version__, "installed"])

    def test_example_script_retries_once_and_prints_the_answer(self):
        box = Sandbox()
        self.addCleanup(shutil.rmtree, box.tmp, True)
        env = dict(os.environ, RETRYD=harness.binary_path())
        env.update({k: v for k, v in box.env.items() if v is not None})
        env.pop("RETRYD_LOG", None)
        r = subprocess.run([sys.executable, os.path.join(PKG_ROOT, "examples", "ask.py"), "hi"],
                           env=env, cwd=box.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=scaled(30))
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(r.stdout.decode(), "Hello from the sim provider.\n")
        self.assertIn("retry 1/3 in 200 ms: 503 Service Unavailable", r.stderr.decode())


if __name__ == "__main__":
    unittest.main()

"""Every line retryd writes matches protocol/schemas, and every command sent
to it matches commands.schema.json, across the lifecycle scenarios the
protocol reference (protocol/README.md) describes.

Run:  RETRYD=$PWD/build/retryd python3 -m unittest tests/e2e/test_schemas.py -v

The binary comes from $RETRYD (default: build/retryd under the repo root).
Each daemon runs with its own temporary HOME, XDG_CONFIG_HOME and
XDG_STATE_HOME. Every wait is bounded by RETRYD_TEST_TIMEOUT seconds
(default 10); nothing sleeps to wait for an event.
"""

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCHEMAS = ROOT / "protocol" / "schemas"
BINARY = os.environ.get("RETRYD") or str(ROOT / "build" / "retryd")
TIMEOUT = float(os.environ.get("RETRYD_TEST_TIMEOUT", "10"))

sys.path.insert(0, str(HERE))
from jsonschema_lite import SchemaError, ValidationError, Validator  # noqa: E402
import harness
from harness import SETTLE_EVENTS  # noqa: E402

VALIDATOR = Validator(SCHEMAS)
BUSY_ERROR = ("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') "
              "to queue the message.")


def setUpModule():
    if not os.access(BINARY, os.X_OK):
        raise unittest.SkipTest("no retryd binary at %s (run make, or set RETRYD)" % BINARY)


def is_compact(line):
    """No whitespace outside JSON strings: the daemon writes compact JSON."""
    in_string = escaped = False
    for ch in line:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in " \t\r\n":
            return False
    return True


def schema_for(obj):
    return "responses.schema.json" if obj.get("type") == "response" else "events.schema.json"


def describe(obj):
    """A short token for an output object, to compare whole sequences."""
    t = obj.get("type")
    if t == "response":
        return "response:%s:%s" % (obj["command"], "ok" if obj["success"] else "fail")
    if t in ("message_start", "message_end"):
        m = obj["message"]
        if m["role"] == "user":
            return "%s:user" % t
        return "%s:assistant" % t + (":" + m["stopReason"] if t == "message_end" else "")
    if t == "message_update":
        return "message_update:" + obj["assistantMessageEvent"]["type"]
    if t == "turn_end":
        return "turn_end:" + obj["message"]["stopReason"]
    if t == "auto_retry_start":
        return "auto_retry_start:%d" % obj["attempt"]
    if t == "auto_retry_end":
        return "auto_retry_end:%s:%d" % ("ok" if obj["success"] else "fail", obj["attempt"])
    return t


class Daemon:
    """One retryd process driven over pipes. Output is read with select()
    on this thread, so every wait has a deadline and nothing races."""

    def __init__(self, test, args, env=None, plain_env=False):
        self.test = test
        self.tmp = tempfile.TemporaryDirectory(prefix="retryd-schemas-")
        base = Path(self.tmp.name)
        self.home, self.config, self.state = base / "home", base / "config", base / "state"
        for d in (self.home, self.config, self.state):
            d.mkdir()
        full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RETRYD_LOG": "warn"}
        if not plain_env:
            full_env.update(HOME=str(self.home), XDG_CONFIG_HOME=str(self.config),
                            XDG_STATE_HOME=str(self.state),
                            **harness.runtime_env(str(self.state)))
        full_env.update(env or {})
        self.stderr_path = base / "stderr.txt"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([BINARY] + list(args), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr,
                                     env=full_env, cwd=str(base))
        self.out_fd = self.proc.stdout.fileno()
        self.buf = b""
        self.eof = False
        self.lines = []      # every parsed output object, in order
        self.raw_lines = []  # the same, as text
        self.settle_lines = []
        self.keep_settled = False
        test.addCleanup(self.cleanup)

    # Input.

    def send(self, command):
        """Validates `command` against commands.schema.json, then sends it."""
        errors = VALIDATOR.errors(command, "commands.schema.json")
        self.test.assertEqual(errors, [], "the test sends a command the schema rejects: %s" % command)
        self.send_raw(json.dumps(command, separators=(",", ":")).encode() + b"\n")

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def close_stdin(self):
        self.proc.stdin.close()

    # Output.

    def _read_line(self, deadline):
        while b"\n" not in self.buf:
            if self.eof:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timed out after %.1fs waiting for output; so far:\n%s" % (
                    TIMEOUT, self.transcript()))
            ready, _, _ = select.select([self.out_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.out_fd, 65536)
            if not chunk:
                self.eof = True
                if self.buf:
                    raise AssertionError("output ends without LF: %r" % self.buf[:200])
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def next(self, timeout=TIMEOUT):
        """The next output object, checked against its schema; None at EOF.
        The lines a run's end adds for pi 1.6 and oh-my-pi (SETTLE_EVENTS)
        are checked too, then kept apart (self.settle_lines) unless
        self.keep_settled: the sequences below are the run's own."""
        deadline = time.monotonic() + timeout
        while True:
            obj = self._next_checked(max(0.0, deadline - time.monotonic()))
            if obj is None or self.keep_settled or obj.get("type") not in SETTLE_EVENTS:
                return obj
            self.settle_lines.append(obj)

    def _next_checked(self, timeout):
        raw = self._read_line(time.monotonic() + timeout)
        if raw is None:
            return None
        text = raw.decode("utf-8")
        n = len(self.lines) + 1
        self.test.assertTrue(is_compact(text), "stdout line %d is not compact JSON: %s" % (n, text))
        obj = json.loads(text)
        self.test.assertIsInstance(obj, dict, "stdout line %d is not an object: %s" % (n, text))
        schema = schema_for(obj)
        errors = VALIDATOR.errors(obj, schema)
        if errors:
            self.test.fail("stdout line %d does not match %s:\n%s\nline: %s" % (
                n, schema, "\n".join("  %s: %s" % e for e in errors), text[:2000]))
        self.lines.append(obj)
        self.raw_lines.append(text)
        return obj

    def until(self, pred, timeout=TIMEOUT):
        """Objects up to and including the first that satisfies pred."""
        deadline = time.monotonic() + timeout
        got = []
        while True:
            obj = self.next(max(0.0, deadline - time.monotonic()))
            if obj is None:
                raise AssertionError("output ended before the awaited line; so far:\n%s" % self.transcript())
            got.append(obj)
            if pred(obj):
                return got

    def until_type(self, event_type, timeout=TIMEOUT):
        return self.until(lambda o: o.get("type") == event_type, timeout)

    def response(self, rid, timeout=TIMEOUT):
        """Output up to the response with id `rid`; returns (that response, all of it)."""
        got = self.until(lambda o: o.get("type") == "response" and o.get("id") == rid, timeout)
        return got[-1], got

    def request(self, command, timeout=TIMEOUT):
        """Sends a command that carries an id and returns its response."""
        self.send(command)
        return self.response(command["id"], timeout)[0]

    def rest(self, timeout=TIMEOUT):
        """Everything until the daemon closes stdout."""
        deadline = time.monotonic() + timeout
        got = []
        while True:
            obj = self.next(max(0.0, deadline - time.monotonic()))
            if obj is None:
                return got
            got.append(obj)

    def wait_exit(self, timeout=TIMEOUT):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("retryd did not exit within %.1fs" % timeout)

    def finish(self):
        """Close stdin, read to EOF, and return the exit status."""
        if not self.proc.stdin.closed:
            self.close_stdin()
        rest = self.rest()
        return self.wait_exit(), rest

    def transcript(self):
        return "\n".join(line[:300] for line in self.raw_lines[-40:])

    def stderr(self):
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=TIMEOUT)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f is not None and not f.closed:
                    f.close()
            except OSError:
                pass
        self._stderr.close()
        self.tmp.cleanup()


class DaemonTest(unittest.TestCase):
    maxDiff = None

    def start(self, *args, plan=None, base_delay=None, env=None, plain_env=False):
        argv = list(args)
        if plan is not None:
            argv += ["--sim-plan", json.dumps(plan)]
        if base_delay is not None:
            argv += ["--set", "retry.baseDelayMs=%d" % base_delay]
        d = Daemon(self, argv, env=env, plain_env=plain_env)
        first = d.next()
        self.assertEqual(first, {"type": "ready"}, "the first line must be the ready line")
        return d

    def assertSequence(self, objs, expected):
        self.assertEqual([describe(o) for o in objs], expected)

    def session_lines(self, d):
        state = d.request({"type": "get_state", "id": "state-for-file"})
        path = state["data"]["sessionFile"]
        with open(path, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
        for i, line in enumerate(lines):
            errors = VALIDATOR.errors(line, "session.schema.json")
            self.assertEqual(errors, [], "session file line %d: %s" % (i + 1, line))
        return state["data"], lines


# Scenario tests: the daemon's real output, line by line, against the schemas.


class LifecycleSchemaTest(DaemonTest):

    def test_ready_line_comes_first_and_every_query_response_matches_its_schema(self):
        d = self.start("--set", 'sim.models=["sim-1","sim-2"]', plan=[])
        answers = {}
        for cmd in ("get_state", "get_messages", "get_last_assistant_text", "get_available_models",
                    "get_session_stats", "get_commands", "abort", "abort_retry"):
            answers[cmd] = d.request({"type": cmd, "id": "q-" + cmd})
            self.assertTrue(answers[cmd]["success"], answers[cmd])
        self.assertEqual(answers["get_messages"]["data"], {"messages": []})
        self.assertEqual(answers["get_last_assistant_text"]["data"], {"text": None})
        self.assertEqual(answers["abort"]["data"], {"discardedMessages": []})
        self.assertNotIn("data", answers["abort_retry"])
        models = answers["get_available_models"]["data"]["models"]
        self.assertEqual([m["id"] for m in models], ["sim-1", "sim-2"])
        r = d.request({"type": "set_model", "id": "m", "provider": "sim", "modelId": "sim-2"})
        self.assertEqual(r["data"]["id"], "sim-2")
        r = d.request({"type": "set_model", "id": "m2", "provider": "sim", "modelId": "nope"})
        self.assertEqual(r["error"], "Model not found: sim/nope")
        r = d.request({"type": "set_model", "id": "m3", "provider": "other", "modelId": "x"})
        self.assertEqual(r["error"], 'Model not found: other/x (provider is "sim")')
        for cmd, mode in (("set_steering_mode", "all"), ("set_follow_up_mode", "all")):
            self.assertTrue(d.request({"type": cmd, "id": cmd, "mode": mode})["success"])
        self.assertTrue(d.request({"type": "set_session_name", "id": "n", "name": "schemas"})["success"])
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertEqual((state["steeringMode"], state["followUpMode"], state["sessionName"]),
                         ("all", "all", "schemas"))
        self.assertEqual(state["model"]["id"], "sim-2")
        old_id = state["sessionId"]
        r = d.request({"type": "new_session", "id": "new"})
        self.assertEqual(r["data"], {"cancelled": False})
        state = d.request({"type": "get_state", "id": "s2"})["data"]
        self.assertNotEqual(state["sessionId"], old_id)
        self.assertNotIn("sessionName", state)
        rc, _ = d.finish()
        self.assertEqual(rc, 0)

    def test_successful_prompt_emits_one_run_in_pi_order(self):
        d = self.start(plan=[{"text": "hello there"}])
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = d.until_type("agent_end")
        self.assertSequence(got, [
            "response:prompt:ok", "agent_start", "turn_start", "message_start:user", "message_end:user",
            "message_start:assistant", "message_update:text_start", "message_update:text_delta",
            "message_update:text_delta", "message_update:text_end", "message_end:assistant:stop",
            "turn_end:stop", "agent_end"])
        self.assertEqual(got[0]["id"], "p")
        self.assertEqual([u["assistantMessageEvent"].get("delta") for u in got[7:9]], ["hello", " there"])
        end = got[-1]
        self.assertEqual([m["role"] for m in end["messages"]], ["user", "assistant"])
        self.assertEqual(end["messages"][1]["content"], [{"type": "text", "text": "hello there"}])
        r = d.request({"type": "get_last_assistant_text", "id": "t"})
        self.assertEqual(r["data"], {"text": "hello there"})
        stats = d.request({"type": "get_session_stats", "id": "st"})["data"]
        self.assertEqual((stats["userMessages"], stats["assistantMessages"], stats["totalMessages"]), (1, 1, 2))
        rc, rest = d.finish()
        self.assertEqual((rc, rest), (0, []))

    def test_prompt_with_images_carries_them_in_the_user_message(self):
        d = self.start(plan=[{"text": "seen"}])
        image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
        d.send({"type": "prompt", "id": "p", "message": "look", "images": [image]})
        got = d.until_type("agent_end")
        user = next(o for o in got if o["type"] == "message_end")["message"]
        self.assertEqual(user["content"], [{"type": "text", "text": "look"}, image])
        self.assertEqual(d.finish()[0], 0)

    def test_retried_chain_ends_with_success_before_turn_end_and_one_agent_end(self):
        d = self.start(plan=[{"error": "503 Service Unavailable"}, {"error": "overloaded_error"},
                             {"text": "done"}], base_delay=5)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = d.until_type("agent_end")
        self.assertSequence(got, [
            "response:prompt:ok", "agent_start",
            "turn_start", "message_start:user", "message_end:user",
            "message_start:assistant", "message_end:assistant:error", "turn_end:error", "auto_retry_start:1",
            "turn_start", "message_start:assistant", "message_end:assistant:error", "turn_end:error",
            "auto_retry_start:2",
            "turn_start", "message_start:assistant", "message_update:text_start", "message_update:text_delta",
            "message_update:text_end", "message_end:assistant:stop", "auto_retry_end:ok:2", "turn_end:stop",
            "agent_end"])
        starts = [o for o in got if o["type"] == "auto_retry_start"]
        self.assertEqual([(s["delayMs"], s["maxAttempts"], s["errorMessage"]) for s in starts],
                         [(5, 3, "503 Service Unavailable"), (10, 3, "overloaded_error")])
        self.assertEqual(got[-3], {"type": "auto_retry_end", "success": True, "attempt": 2})
        # The failed attempts left the context; the session file kept them.
        self.assertEqual([m["role"] for m in got[-1]["messages"]], ["user", "assistant"])
        messages = d.request({"type": "get_messages", "id": "m"})["data"]["messages"]
        self.assertEqual([m.get("stopReason") for m in messages], [None, "stop"])
        state, lines = self.session_lines(d)
        self.assertEqual(lines[0]["type"], "session")
        self.assertEqual(lines[0]["id"], state["sessionId"])
        self.assertEqual([ln["message"].get("stopReason") for ln in lines[1:]], [None, "error", "error", "stop"])
        self.assertEqual((state["retryAttempt"], state["isRetrying"], state["isStreaming"]), (0, False, False))
        self.assertEqual(d.finish()[0], 0)

    def test_max_exceeded_ends_chain_with_last_retry_number_before_agent_end(self):
        d = self.start("--set", "retry.maxRetries=2", plan=[{"error": "503"}, {"error": "502"}, {"error": "504"}],
                       base_delay=1)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = d.until_type("agent_end")
        self.assertSequence(got[-7:], [
            "auto_retry_start:2", "turn_start", "message_start:assistant", "message_end:assistant:error",
            "turn_end:error", "auto_retry_end:fail:2", "agent_end"])
        self.assertEqual(got[-2], {"type": "auto_retry_end", "success": False, "attempt": 2, "finalError": "504", "errorClass": "retryable", "rule": "http-status:504"})
        self.assertEqual(sum(o["type"] == "agent_start" for o in got), 1)
        # The last failure stays in the context.
        self.assertEqual(got[-1]["messages"][-1]["errorMessage"], "504")
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertEqual((state["retryAttempt"], state["isRetrying"]), (0, False))
        self.assertEqual(d.finish()[0], 0)

    def test_abort_retry_during_backoff_emits_cancel_end_before_its_response(self):
        d = self.start(plan=[{"error": "503"}], base_delay=60000)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        d.until_type("auto_retry_start")
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertEqual((state["isStreaming"], state["isRetrying"], state["retryAttempt"]), (True, True, 1))
        busy = d.request({"type": "prompt", "id": "busy", "message": "again"})
        self.assertEqual((busy["success"], busy["error"]), (False, BUSY_ERROR))
        d.send({"type": "abort_retry", "id": "ar"})
        _, got = d.response("ar")
        self.assertSequence(got, ["auto_retry_end:fail:1", "agent_end", "response:abort_retry:ok"])
        self.assertEqual(got[0]["finalError"], "Retry cancelled")
        self.assertEqual(got[1]["messages"][0]["role"], "user")
        self.assertEqual(len(got[1]["messages"]), 1, "the failed attempt was dropped from the context")
        state = d.request({"type": "get_state", "id": "s2"})["data"]
        self.assertEqual((state["isStreaming"], state["isRetrying"], state["retryAttempt"]), (False, False, 0))
        # With nothing pending, abort_retry is answered and nothing else happens.
        d.send({"type": "abort_retry", "id": "ar2"})
        _, got = d.response("ar2")
        self.assertSequence(got, ["response:abort_retry:ok"])
        self.assertEqual(d.finish()[0], 0)

    def test_session_stats_count_attempts_retries_chains_waits_and_error_classes(self):
        d = self.start("--no-session", plan=[{"error": "503"}, {"error": "503"}, {"text": "ok"},
                                             {"error": "400 Bad Request: invalid model"},
                                             {"error": "503"}], base_delay=20)
        stats = d.request({"type": "get_session_stats", "id": "st0"})["data"]["retry"]
        self.assertEqual(stats, {"attempts": 0, "retries": 0,
                                 "chains": {"succeeded": 0, "failed": 0, "cancelled": 0},
                                 "waitedMs": 0,
                                 "errorsByClass": {"retryable": 0, "non_retryable": 0,
                                                   "context_overflow": 0, "usage_limit": 0,
                                                   "unknown": 0},
                                 "lastUnknownError": None})
        # Two retries, then a success.
        d.send({"type": "prompt", "id": "p1", "message": "one"})
        got = d.until_type("agent_end")
        delays = [o["delayMs"] for o in got if o.get("type") == "auto_retry_start"]
        self.assertEqual(len(delays), 2)
        # A failure that is not retried: no chain, one non_retryable error.
        d.send({"type": "prompt", "id": "p2", "message": "two"})
        d.until_type("agent_end")
        # A chain cancelled by abort_retry, its backoff counted while it runs.
        d.send({"type": "prompt", "id": "p3", "message": "three", "retry": {"baseDelayMs": 60000}})
        d.until_type("auto_retry_start")
        mid = d.request({"type": "get_session_stats", "id": "st1"})["data"]["retry"]
        self.assertEqual((mid["attempts"], mid["retries"], mid["chains"]["cancelled"]), (5, 3, 0))
        d.send({"type": "abort_retry", "id": "ar"})
        d.response("ar")
        stats = d.request({"type": "get_session_stats", "id": "st2"})["data"]
        retry = stats["retry"]
        self.assertEqual((retry["attempts"], retry["retries"], retry["chains"], retry["errorsByClass"]),
                         (5, 3, {"succeeded": 1, "failed": 0, "cancelled": 1},
                          {"retryable": 3, "non_retryable": 1, "context_overflow": 0,
                           "usage_limit": 0, "unknown": 0}))
        # The two finished backoffs, and the cancelled one while it ran.
        self.assertGreaterEqual(retry["waitedMs"], sum(delays) - 2)
        self.assertGreaterEqual(retry["waitedMs"], mid["waitedMs"])
        self.assertLess(retry["waitedMs"], sum(delays) + 30000)
        # The in-memory counts are as before: the retried attempts left the context
        # (the cancelled chain's too), the answer and the final failure stay.
        self.assertEqual((stats["userMessages"], stats["assistantMessages"]), (3, 2))
        # new_session starts the figures over.
        d.request({"type": "new_session", "id": "n"})
        after = d.request({"type": "get_session_stats", "id": "st3"})["data"]["retry"]
        self.assertEqual((after["attempts"], after["retries"], after["waitedMs"]), (0, 0, 0))
        self.assertEqual(d.finish()[0], 0)

    def test_session_stats_count_a_failed_chain(self):
        d = self.start("--no-session", "--set", "retry.maxRetries=1",
                       plan=[{"error": "503"}, {"error": "503"}], base_delay=1)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        d.until_type("agent_end")
        retry = d.request({"type": "get_session_stats", "id": "st"})["data"]["retry"]
        self.assertEqual((retry["attempts"], retry["retries"], retry["chains"],
                          retry["errorsByClass"]["retryable"]),
                         (2, 1, {"succeeded": 0, "failed": 1, "cancelled": 0}, 2))
        self.assertEqual(d.finish()[0], 0)

    def test_abort_retry_with_queued_messages_continues_the_same_run(self):
        d = self.start(plan=[{"error": "503"}, {"text": "steered answer"}], base_delay=60000)
        d.send({"type": "prompt", "id": "p", "message": "first"})
        d.until_type("auto_retry_start")
        self.assertTrue(d.request({"type": "prompt", "id": "f", "message": "later",
                                   "streamingBehavior": "followUp"})["success"])
        self.assertTrue(d.request({"type": "steer", "id": "s", "message": "now"})["success"])
        self.assertEqual(d.request({"type": "get_state", "id": "st"})["data"]["pendingMessageCount"], 2)
        d.send({"type": "abort_retry", "id": "ar"})
        got = d.until_type("agent_end")
        self.assertSequence(got, [
            "auto_retry_end:fail:1",
            "turn_start", "message_start:user", "message_end:user", "response:abort_retry:ok",
            "message_start:assistant", "message_update:text_start", "message_update:text_delta",
            "message_update:text_delta", "message_update:text_end", "message_end:assistant:stop", "turn_end:stop",
            "turn_start", "message_start:user", "message_end:user",
            "message_start:assistant", "message_update:text_start", "message_update:text_delta",
            "message_update:text_end", "message_end:assistant:stop", "turn_end:stop",
            "agent_end"])
        texts = [m["content"][0]["text"] for m in got[-1]["messages"]]
        self.assertEqual(texts, ["first", "now", "steered answer", "later", "later"])
        self.assertEqual(d.finish()[0], 0)

    def test_abort_during_hanging_attempt_closes_message_then_answers(self):
        d = self.start(plan=[{"hang": True}])
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        d.until(lambda o: o["type"] == "message_start" and o["message"]["role"] == "assistant")
        self.assertTrue(d.request({"type": "follow_up", "id": "f", "message": "queued"})["success"])
        d.send({"type": "abort", "id": "a"})
        resp, got = d.response("a")
        self.assertSequence(got, ["message_end:assistant:aborted", "turn_end:aborted", "agent_end",
                                  "response:abort:ok"])
        self.assertEqual(got[0]["message"]["errorMessage"], "Request was aborted")
        self.assertEqual(resp["data"], {"discardedMessages": ["queued"]})
        self.assertEqual(d.finish()[0], 0)

    def test_abort_during_backoff_cancels_chain_and_discards_queue(self):
        d = self.start(plan=[{"error": "503"}], base_delay=60000)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        d.until_type("auto_retry_start")
        d.send({"type": "steer", "id": "s", "message": "one"})
        d.send({"type": "follow_up", "id": "f", "message": "two"})
        d.send({"type": "abort", "id": "a"})
        resp, got = d.response("a")
        self.assertSequence(got, ["response:steer:ok", "response:follow_up:ok", "auto_retry_end:fail:1",
                                  "agent_end", "response:abort:ok"])
        self.assertEqual(got[2]["finalError"], "Retry cancelled")
        self.assertEqual(resp["data"], {"discardedMessages": ["one", "two"]})
        self.assertEqual(d.finish()[0], 0)

    def test_new_session_during_backoff_cancels_chain_first(self):
        d = self.start(plan=[{"error": "503"}], base_delay=60000)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        d.until_type("auto_retry_start")
        d.send({"type": "new_session", "id": "n"})
        _, got = d.response("n")
        self.assertSequence(got, ["auto_retry_end:fail:1", "agent_end", "response:new_session:ok"])
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertEqual((state["messageCount"], state["isStreaming"], state["retryAttempt"]), (0, False, 0))
        self.assertEqual(d.finish()[0], 0)

    def test_disabling_retry_mid_chain_ends_chain_at_next_failure(self):
        # The default 2 s backoff leaves ample time to send set_auto_retry.
        d = self.start(plan=[{"error": "503"}, {"error": "503 again"}])
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        d.until_type("auto_retry_start")
        d.send({"type": "set_auto_retry", "id": "off", "enabled": False})
        got = d.until_type("agent_end")
        self.assertSequence(got, [
            "response:set_auto_retry:ok",
            "turn_start", "message_start:assistant", "message_end:assistant:error", "turn_end:error",
            "auto_retry_end:fail:1", "agent_end"])
        self.assertEqual(got[-2]["finalError"], "503 again")
        self.assertEqual(d.finish()[0], 0)

    def test_set_auto_retry_is_persisted_and_honoured_by_the_next_daemon(self):
        d = self.start(plan=[])
        r = d.request({"type": "set_auto_retry", "id": "off", "enabled": False})
        self.assertNotIn("data", r)
        settings = json.loads((d.config / "retryd" / "settings.json").read_text())
        self.assertEqual(settings, {"retry": {"enabled": False}})
        self.assertFalse(d.request({"type": "get_state", "id": "s"})["data"]["autoRetryEnabled"])
        self.assertEqual(d.finish()[0], 0)

        again = self.start("--settings", str(d.config / "retryd" / "settings.json"), plan=[{"error": "503"}])
        self.assertFalse(again.request({"type": "get_state", "id": "s"})["data"]["autoRetryEnabled"])
        again.send({"type": "prompt", "id": "p", "message": "hi"})
        got = again.until_type("agent_end")
        self.assertNotIn("auto_retry_start", [o["type"] for o in got])
        self.assertEqual(got[-2]["message"]["errorMessage"], "503")
        self.assertEqual(again.finish()[0], 0)

    def test_set_auto_retry_without_config_dir_applies_and_says_not_saved(self):
        d = self.start(plan=[], plain_env=True)
        r = d.request({"type": "set_auto_retry", "id": "off", "enabled": False})
        self.assertEqual(r["data"]["persisted"], False)
        self.assertIn("could not save settings", r["data"]["warning"])
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertFalse(state["autoRetryEnabled"])
        self.assertNotIn("sessionFile", state)
        self.assertEqual(d.finish()[0], 0)

    def test_usage_limit_switches_credential_with_fallback_event_and_zero_delay(self):
        d = self.start("--set", 'sim.credentials=["key-a","key-b"]',
                       plan=[{"error": "usage limit reached, try again in 5 minutes"}, {"text": "ok"}])
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = d.until_type("agent_end")
        at = [o["type"] for o in got].index("retry_fallback_applied")
        self.assertSequence(got[at - 1:at + 2], ["turn_end:error", "retry_fallback_applied", "auto_retry_start:1"])
        self.assertEqual(got[at], {"type": "retry_fallback_applied", "kind": "credential",
                                   "from": "key-a", "to": "key-b", "reason": "usage-limit"})
        self.assertEqual(got[at + 1]["delayMs"], 0)
        self.assertEqual(describe(got[-3]), "auto_retry_end:ok:1")
        self.assertEqual(d.finish()[0], 0)

    def test_unwritable_session_file_is_reported_once_as_notice(self):
        blocker = tempfile.NamedTemporaryFile(prefix="retryd-not-a-dir-")
        self.addCleanup(blocker.close)
        d = self.start("--session", blocker.name + "/s.jsonl", plan=[])
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = d.until_type("agent_end")
        notices = [o for o in got if o["type"] == "notice"]
        self.assertEqual(len(notices), 1)
        self.assertEqual((notices[0]["level"], notices[0]["source"]), ("error", "session"))
        self.assertIn("cannot write session file", notices[0]["message"])
        d.send({"type": "prompt", "id": "p2", "message": "again"})
        got = d.until_type("agent_end")
        self.assertNotIn("notice", [o["type"] for o in got])
        self.assertEqual(d.finish()[0], 0)


class RetryPolicySchemaTest(DaemonTest):
    """Issue 3: the retry policy knobs, through the binary (protocol/README.md section 10)."""

    DEFAULT_SCALARS = {
        "enabled": True, "maxRetries": 3, "baseDelayMs": 2000, "usageLimitCooldownMs": 1800000,
        "maxDelayMs": 60000, "respectServerHints": True, "jitter": "none", "schedule": [], "budget": None,
        "idleTimeoutMs": 0, "fallbackModels": [], "fallbackAfterConsecutive": 3, "fallbackCooldownMs": 60000,
        "continuationPrompt": "Continue from where you left off. Do not repeat work that is already done.",
        "continueCutAnswers": "lossless", "unknownRetries": 1, "usageLimitWait": "off", "maxUsageWaitMs": 21600000, "usageWaitHeartbeatMs": 60000}
    PATTERN_KEYS = ("retryablePatterns", "nonRetryablePatterns", "contextOverflowPatterns", "usageLimitPatterns",
                    "overloadPatterns")

    def retry_events(self, objs):
        return [o for o in objs if o["type"] in ("auto_retry_start", "auto_retry_end", "retry_fallback_applied")]

    def delays(self, objs):
        return [o["delayMs"] for o in objs if o["type"] == "auto_retry_start"]

    def test_get_retry_policy_answers_the_defaults_and_idle_state_has_no_snapshot(self):
        d = self.start(plan=[])
        policy = d.request({"type": "get_retry_policy", "id": "g"})["data"]["policy"]
        self.assertEqual({k: policy[k] for k in self.DEFAULT_SCALARS}, self.DEFAULT_SCALARS)
        self.assertEqual(sorted(policy), sorted(list(self.DEFAULT_SCALARS) + list(self.PATTERN_KEYS)))
        self.assertNotIn("jitterSeed", policy)
        # The built-in patterns are not settings: the five lists only extend
        # them, and are empty until a user adds to them.
        self.assertEqual({k: policy[k] for k in self.PATTERN_KEYS}, {k: [] for k in self.PATTERN_KEYS})
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertEqual((state["retryPolicy"], state["retryBudget"]), (None, None))
        self.assertEqual(d.finish()[0], 0)

    def test_set_retry_policy_applies_for_this_process_or_persists_atomically(self):
        d = self.start(plan=[])
        settings = d.config / "retryd" / "settings.json"
        r = d.request({"type": "set_retry_policy", "id": "a", "policy": {"baseDelayMs": 50, "schedule": [5, 6]}})
        self.assertEqual((r["data"]["persisted"], "warning" in r["data"]), (False, False))
        self.assertEqual((r["data"]["policy"]["baseDelayMs"], r["data"]["policy"]["schedule"],
                          r["data"]["policy"]["maxRetries"]), (50, [5, 6], 2))
        self.assertFalse(settings.exists(), "without persist nothing is written")
        self.assertEqual(d.request({"type": "get_retry_policy", "id": "g"})["data"]["policy"], r["data"]["policy"])
        r = d.request({"type": "set_retry_policy", "id": "b", "persist": True,
                       "policy": {"maxDelayMs": 30000, "jitter": "full", "jitterSeed": 7}})
        self.assertIs(r["data"]["persisted"], True)
        self.assertNotIn("warning", r["data"])
        self.assertEqual((r["data"]["policy"]["jitter"], r["data"]["policy"]["jitterSeed"],
                          r["data"]["policy"]["baseDelayMs"]), ("full", 7, 50))
        self.assertEqual(json.loads(settings.read_text()),
                         {"retry": {"maxDelayMs": 30000, "jitter": "full", "jitterSeed": 7}})
        self.assertEqual(d.finish()[0], 0)

        again = self.start("--settings", str(settings), plan=[])
        policy = again.request({"type": "get_retry_policy", "id": "g"})["data"]["policy"]
        self.assertEqual((policy["maxDelayMs"], policy["jitter"], policy["baseDelayMs"]), (30000, "full", 2000))
        self.assertEqual(again.finish()[0], 0)

    def test_set_retry_policy_without_config_dir_applies_and_says_not_saved(self):
        d = self.start(plan=[], plain_env=True)
        r = d.request({"type": "set_retry_policy", "id": "p", "persist": True, "policy": {"maxRetries": 1}})
        self.assertEqual(r["data"]["persisted"], False)
        self.assertEqual(r["data"]["warning"], "could not save settings: no settings file path "
                                               "(neither XDG_CONFIG_HOME nor HOME is set)")
        self.assertEqual(r["data"]["policy"]["maxRetries"], 1)
        self.assertEqual(d.finish()[0], 0)

    BAD_POLICIES = [
        # (policy, error, whether commands.schema.json can tell)
        ({"frob": 1}, "retry.frob is not a retry setting", True),
        ({"maxRetries": -1}, "retry.maxRetries must be an integer from 0 to 1000 (got -1)", True),
        ({"maxDelayMs": "1s"}, 'retry.maxDelayMs must be an integer from -2592000000 to 2592000000 (got "1s")', True),
        ({"jitter": "some"}, 'retry.jitter must be one of none|full|equal|decorrelated (got "some")', True),
        ({"jitterSeed": -5}, "retry.jitterSeed must be an integer from 0 to 9007199254740991 (got -5)", True),
        ({"schedule": [1, -2]}, "retry.schedule[1] must be an integer from 0 to 2592000000 (got -2)", True),
        ({"budget": 5}, 'retry.budget must be null or {"maxTokens": N, "tokenRatio": R} (got 5)', True),
        ({"budget": {"maxTokens": 10, "tokenRatio": 0.1, "x": 1}},
         'retry.budget has no key "x" (only maxTokens and tokenRatio)', True),
        ({"budget": {"maxTokens": 0, "tokenRatio": 1}},
         "retry.budget.maxTokens must be a number above 0 and at most 1000 (got 0)", False),
        ({"fallbackModels": "sim-2"}, 'retry.fallbackModels must be an array of strings (got "sim-2")', True),
        ({"fallbackAfterConsecutive": 0}, "retry.fallbackAfterConsecutive must be an integer from 1 to 1000 (got 0)",
         True),
        ({"retryablePatterns": ["ok", "(x"]},
         'retry.retryablePatterns[1] "(x": missing closing parenthesis at offset 2', False),
        ({"overloadPatterns": ["[a"]},
         'retry.overloadPatterns[0] "[a": missing terminating ] for character class at offset 2', False),
    ]

    def test_bad_policies_are_refused_naming_the_key_and_nothing_changes(self):
        d = self.start(plan=[{"error": "503"}], base_delay=1)
        before = d.request({"type": "get_retry_policy", "id": "before"})["data"]["policy"]
        for i, (policy, error, schema_tells) in enumerate(self.BAD_POLICIES):
            with self.subTest(policy=policy):
                # set_retry_policy also carries a good key: the whole object is refused, so it must not apply.
                good_too = policy if "maxRetries" in policy else dict(policy, maxRetries=0)
                for cmd in ({"type": "set_retry_policy", "id": "s%d" % i, "policy": good_too},
                            {"type": "prompt", "id": "p%d" % i, "message": "x", "retry": policy}):
                    rejected = VALIDATOR.errors(cmd, "commands.schema.json") != []
                    self.assertEqual(rejected, schema_tells, cmd)
                    d.send_raw(json.dumps(cmd).encode() + b"\n")
                    r = d.next()
                    self.assertEqual((r["id"], r["success"], r["error"]), (cmd["id"], False, error))
        self.assertEqual(d.request({"type": "get_retry_policy", "id": "after"})["data"]["policy"], before)
        # No prompt was accepted: the plan's failure is still unused, and retries with the old policy.
        d.send({"type": "prompt", "id": "ok", "message": "x"})
        got = d.until_type("agent_end")
        self.assertEqual(self.retry_events(got)[0]["maxAttempts"], 3)
        self.assertEqual(d.finish()[0], 0)

    def test_server_hint_lengthens_the_backoff_with_reason_and_hint(self):
        d = self.start("--set", "retry.maxDelayMs=1000",
                       plan=[{"error": "429 Please retry in 50ms"}, {"error": "503 retry-after-ms: 5"},
                             {"error": "503", "retryAfterMs": 60}, {"text": "ok"}], base_delay=10)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = d.until_type("agent_end")
        self.assertEqual(self.retry_events(got), [
            {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 50,
             "errorMessage": "429 Please retry in 50ms", "reason": "server-hint", "hintMs": 50, "errorClass": "retryable", "rule": "http-status:429", "overload": False},
            {"type": "auto_retry_start", "attempt": 2, "maxAttempts": 3, "delayMs": 20,
             "errorMessage": "503 retry-after-ms: 5", "reason": "backoff", "errorClass": "retryable", "rule": "http-status:503", "overload": False},
            {"type": "auto_retry_start", "attempt": 3, "maxAttempts": 3, "delayMs": 60,
             "errorMessage": "503", "reason": "server-hint", "hintMs": 60, "errorClass": "retryable", "rule": "http-status:503", "overload": False},
            {"type": "auto_retry_end", "success": True, "attempt": 3}])
        self.assertEqual(d.finish()[0], 0)

    def test_server_wait_above_the_cap_fails_fast_without_auto_retry_start(self):
        d = self.start("--set", "retry.maxDelayMs=100",
                       plan=[{"error": "503 Service Unavailable", "retryAfterMs": 9000},
                             {"error": "503"}, {"error": "429 Please retry in 1.5s"}], base_delay=1)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = d.until_type("agent_end")
        self.assertSequence(got, [
            "response:prompt:ok", "agent_start", "turn_start", "message_start:user", "message_end:user",
            "message_start:assistant", "message_end:assistant:error", "turn_end:error", "auto_retry_end:fail:1",
            "agent_end"])
        self.assertEqual(got[-2]["finalError"], "Provider requested 9000ms wait, exceeds retry.maxDelayMs (100ms). "
                                                "Original error: 503 Service Unavailable")
        # The 9 s the server asked for still stands: the next prompt is not
        # held for it either (it exceeds retry.maxDelayMs), and says so.
        d.send({"type": "prompt", "id": "p2", "message": "again"})
        got = d.until_type("agent_end")
        self.assertEqual(self.retry_events(got), [])
        self.assertIn("the provider asked this retryd to wait 9 s", got[-1]["messages"][-1]["errorMessage"])
        # Once it is dropped, after one retry, the refused retry is number 2.
        self.assertTrue(d.request({"type": "fleet_clear", "id": "fc"})["success"])
        d.send({"type": "prompt", "id": "p3", "message": "again"})
        got = self.retry_events(d.until_type("agent_end"))
        self.assertEqual([describe(o) for o in got], ["auto_retry_start:1", "auto_retry_end:fail:2"])
        self.assertEqual(got[1]["finalError"], "Provider requested 1500ms wait, exceeds retry.maxDelayMs (100ms). "
                                               "Original error: 429 Please retry in 1.5s")
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertEqual((state["retryAttempt"], state["isStreaming"]), (0, False))
        self.assertEqual(d.finish()[0], 0)

    def test_usage_limit_with_a_long_reset_and_nowhere_to_switch_fails_fast(self):
        d = self.start(plan=[{"error": "usage limit reached, try again in 5 minutes"}])
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = d.until_type("agent_end")
        # A spent quota is not a wait to sit out: no chain, and the message
        # says when it resets.
        self.assertEqual(self.retry_events(got), [])
        self.assertEqual(got[-1]["messages"][-1]["errorMessage"],
                         "usage limit reached, try again in 5 minutes (usage limit: resets in 5m)")
        self.assertEqual(d.finish()[0], 0)

    def test_ignoring_server_hints_caps_the_backoff_instead(self):
        d = self.start("--set", "retry.maxDelayMs=40", "--set", "retry.respectServerHints=false",
                       plan=[{"error": "503", "retryAfterMs": 9000}, {"text": "ok"}], base_delay=1000)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = self.retry_events(d.until_type("agent_end"))
        self.assertEqual(got[0], {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 40,
                                  "errorMessage": "503", "reason": "backoff", "errorClass": "retryable", "rule": "http-status:503", "overload": False})
        self.assertEqual(d.finish()[0], 0)

    def test_seeded_jitter_replays_in_every_chain_within_its_bounds(self):
        nominal = [20, 40, 80]
        bounds = {"full": [(0, n) for n in nominal], "equal": [(n // 2, n) for n in nominal],
                  "decorrelated": [(20, 60), (20, 180), (20, 540)]}
        for jitter, limits in bounds.items():
            with self.subTest(jitter=jitter):
                d = self.start("--set", "retry.jitter=" + jitter, "--set", "retry.jitterSeed=42",
                               plan=[{"error": "503"}] * 3 + [{"text": "ok"}] + [{"error": "503"}] * 3,
                               base_delay=20)
                chains = []
                for p in ("p1", "p2"):
                    d.send({"type": "prompt", "id": p, "message": "hi"})
                    chains.append(self.delays(d.until_type("agent_end")))
                self.assertEqual(chains[0], chains[1], "a seeded chain replays the same delays")
                for delay, (lo, hi) in zip(chains[0], limits):
                    self.assertTrue(lo <= delay <= hi, "%s: %d not in [%d, %d]" % (jitter, delay, lo, hi))
                self.assertNotEqual(chains[0], nominal)
                self.assertEqual(d.finish()[0], 0)

    def test_schedule_replaces_the_formula_and_sets_max_retries(self):
        d = self.start("--set", "retry.schedule=[5,10,15]", "--set", "retry.maxDelayMs=12",
                       plan=[{"error": "503"}] * 4, base_delay=1000)
        self.assertEqual(d.request({"type": "get_retry_policy", "id": "g"})["data"]["policy"]["maxRetries"], 3)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = self.retry_events(d.until_type("agent_end"))
        self.assertEqual([(o.get("delayMs"), o.get("maxAttempts")) for o in got[:3]], [(5, 3), (10, 3), (12, 3)])
        self.assertEqual(got[3], {"type": "auto_retry_end", "success": False, "attempt": 3, "finalError": "503", "errorClass": "retryable", "rule": "http-status:503"})
        self.assertEqual(d.finish()[0], 0)

    def test_prompt_retry_snapshot_is_kept_by_its_chain(self):
        d = self.start(plan=[{"error": "503"}] * 3 + [{"error": "503"}, {"text": "ok"}], base_delay=1)
        d.send({"type": "prompt", "id": "p", "message": "hi", "retry": {"schedule": [300, 20], "maxRetries": 2}})
        d.until_type("auto_retry_start")
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertEqual((state["isRetrying"], state["retryPolicy"]["schedule"], state["retryPolicy"]["maxRetries"],
                          state["retryPolicy"]["baseDelayMs"]), (True, [300, 20], 2, 1))
        r = d.request({"type": "set_retry_policy", "id": "sp", "policy": {"schedule": [5], "maxRetries": 5}})
        self.assertEqual(r["data"]["policy"]["maxRetries"], 5)
        got = self.retry_events(d.until_type("agent_end"))
        self.assertEqual([describe(o) for o in got], ["auto_retry_start:2", "auto_retry_end:fail:2"])
        self.assertEqual((got[0]["delayMs"], got[0]["maxAttempts"]), (20, 2))
        state = d.request({"type": "get_state", "id": "s2"})["data"]
        self.assertIsNone(state["retryPolicy"])
        # The next prompt runs on the daemon's new policy.
        d.send({"type": "prompt", "id": "p2", "message": "again"})
        got = self.retry_events(d.until_type("agent_end"))
        self.assertEqual([(o.get("delayMs"), o.get("maxAttempts")) for o in got],
                         [(5, 5), (None, None)])
        self.assertEqual(d.finish()[0], 0)

    def test_set_auto_retry_still_stops_a_snapshot_chain(self):
        d = self.start(plan=[{"error": "503"}, {"error": "503 again"}], base_delay=1)
        d.send({"type": "prompt", "id": "p", "message": "hi", "retry": {"baseDelayMs": 300, "maxRetries": 5}})
        d.until_type("auto_retry_start")
        self.assertTrue(d.request({"type": "set_auto_retry", "id": "off", "enabled": False})["success"])
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertEqual((state["autoRetryEnabled"], state["retryPolicy"]["enabled"]), (False, True))
        got = self.retry_events(d.until_type("agent_end"))
        self.assertEqual(got, [{"type": "auto_retry_end", "success": False, "attempt": 1, "finalError": "503 again", "errorClass": "retryable", "rule": "http-status:503"}])
        self.assertEqual(d.finish()[0], 0)

    def test_retry_budget_throttles_every_prompt_and_reports_its_tokens(self):
        d = self.start("--set", 'retry.budget={"maxTokens":4,"tokenRatio":0.5}',
                       plan=[{"error": "503"}] * 3 + [{"text": "ok"}], base_delay=1)
        self.assertEqual(d.request({"type": "get_state", "id": "s0"})["data"]["retryBudget"],
                         {"tokens": 4.0, "maxTokens": 4.0, "tokenRatio": 0.5, "throttled": False})
        d.send({"type": "prompt", "id": "p1", "message": "one"})
        got = self.retry_events(d.until_type("agent_end"))
        self.assertEqual([describe(o) for o in got], ["auto_retry_start:1", "auto_retry_end:fail:1"])
        self.assertEqual(got[1]["finalError"], "Retry budget exhausted (2.00 of 4.00 tokens left; retries resume "
                                               "above 2.00). Original error: 503")
        # Already throttled: the first failure is refused at once, attempt 0, no auto_retry_start.
        d.send({"type": "prompt", "id": "p2", "message": "two"})
        got = d.until_type("agent_end")
        self.assertSequence(got[-3:], ["turn_end:error", "auto_retry_end:fail:0", "agent_end"])
        self.assertTrue(got[-2]["finalError"].startswith("Retry budget exhausted (1.00 of 4.00 tokens left"))
        d.send({"type": "prompt", "id": "p3", "message": "three"})
        self.assertEqual(self.retry_events(d.until_type("agent_end")), [])
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertEqual(state["retryBudget"], {"tokens": 1.5, "maxTokens": 4.0, "tokenRatio": 0.5, "throttled": True})
        r = d.request({"type": "set_retry_policy", "id": "off", "policy": {"budget": None}})
        self.assertIsNone(r["data"]["policy"]["budget"])
        self.assertIsNone(d.request({"type": "get_state", "id": "s2"})["data"]["retryBudget"])
        self.assertEqual(d.finish()[0], 0)

    def test_stream_stall_aborts_a_silent_attempt_and_is_retried(self):
        d = self.start("--set", "retry.idleTimeoutMs=50", plan=[{"hang": True}, {"text": "ok"}], base_delay=1)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = d.until_type("agent_end")
        self.assertSequence(got, [
            "response:prompt:ok", "agent_start", "turn_start", "message_start:user", "message_end:user",
            "message_start:assistant", "message_end:assistant:error", "turn_end:error", "auto_retry_start:1",
            "turn_start", "message_start:assistant", "message_update:text_start", "message_update:text_delta",
            "message_update:text_end", "message_end:assistant:stop", "auto_retry_end:ok:1", "turn_end:stop",
            "agent_end"])
        self.assertEqual(got[6]["message"]["errorMessage"], "stream stall: no data for 50 ms")
        self.assertEqual(got[8]["reason"], "backoff")
        self.assertEqual(d.finish()[0], 0)

    def test_overloaded_model_falls_back_then_the_primary_comes_back_after_its_cooldown(self):
        d = self.start("--set", 'retry.fallbackModels=["sim-2"]', "--set", "retry.fallbackAfterConsecutive=2",
                       "--set", "retry.fallbackCooldownMs=0",
                       # 503 alone is no overload: the model must say so.
                       plan=[{"error": "503 Service Unavailable: model overloaded"},
                             {"error": "529 overloaded_error"},
                             {"text": "from fallback"}, {"text": "back"}], base_delay=1)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = d.until_type("agent_end")
        at = [o["type"] for o in got].index("retry_fallback_applied")
        self.assertSequence(got[at - 1:at + 3], ["turn_end:error", "retry_fallback_applied", "auto_retry_start:2",
                                                 "turn_start"])
        self.assertEqual(got[at], {"type": "retry_fallback_applied", "kind": "model", "from": "sim-1", "to": "sim-2",
                                   "reason": "overloaded"})
        self.assertEqual((got[at + 1]["delayMs"], got[at + 1]["reason"]), (0, "model-fallback"))
        self.assertEqual(got[-1]["messages"][-1]["model"], "sim-2")
        self.assertEqual(d.request({"type": "get_state", "id": "s"})["data"]["model"]["id"], "sim-2")
        d.send({"type": "prompt", "id": "p2", "message": "again"})
        got = d.until_type("agent_end")
        self.assertSequence(got[:4], ["response:prompt:ok", "agent_start", "retry_fallback_applied", "turn_start"])
        self.assertEqual(got[2], {"type": "retry_fallback_applied", "kind": "model", "from": "sim-2", "to": "sim-1",
                                  "reason": "cooldown-expired"})
        self.assertEqual(got[-1]["messages"][-1]["model"], "sim-1")
        self.assertEqual(d.finish()[0], 0)

    def test_usage_limit_without_credentials_falls_back_to_a_model(self):
        d = self.start("--set", 'retry.fallbackModels=["sim-2"]',
                       plan=[{"error": "usage limit reached, try again in 5 minutes"}, {"text": "ok"}])
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        got = self.retry_events(d.until_type("agent_end"))
        self.assertEqual(got, [
            {"type": "retry_fallback_applied", "kind": "model", "from": "sim-1", "to": "sim-2", "reason": "usage-limit"},
            {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 0,
             "errorMessage": "usage limit reached, try again in 5 minutes", "reason": "model-fallback",
             "errorClass": "usage_limit", "rule": "text:usageLimitPatterns[1]", "overload": False},
            {"type": "auto_retry_end", "success": True, "attempt": 1}])
        self.assertEqual(d.finish()[0], 0)


class ShutdownSchemaTest(DaemonTest):

    def test_sigterm_during_backoff_cancels_chain_then_exits_zero(self):
        d = self.start(plan=[{"error": "503"}], base_delay=60000)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        d.until_type("auto_retry_start")
        d.proc.send_signal(signal.SIGTERM)
        got = d.rest()
        self.assertSequence(got, ["auto_retry_end:fail:1", "agent_end"])
        self.assertEqual(got[0]["finalError"], "Retry cancelled")
        self.assertEqual(d.wait_exit(), 0)

    def test_sigterm_during_attempt_aborts_it_then_exits_zero(self):
        d = self.start(plan=[{"hang": True}])
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        d.until(lambda o: o["type"] == "message_start" and o["message"]["role"] == "assistant")
        d.proc.send_signal(signal.SIGTERM)
        got = d.rest()
        self.assertSequence(got, ["message_end:assistant:aborted", "turn_end:aborted", "agent_end"])
        self.assertEqual(d.wait_exit(), 0)

    def test_stdin_eof_during_backoff_finishes_the_chain_before_exit(self):
        d = self.start(plan=[{"error": "503"}], base_delay=20)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        d.until_type("auto_retry_start")
        rc, got = d.finish()
        self.assertEqual(rc, 0)
        self.assertEqual([describe(o) for o in got][-3:], ["auto_retry_end:ok:1", "turn_end:stop", "agent_end"])

    def test_stdout_closed_aborts_the_run_and_exits(self):
        d = self.start(plan=[{"hang": True}])
        state = d.request({"type": "get_state", "id": "s"})["data"]
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        d.until(lambda o: o["type"] == "message_start" and o["message"]["role"] == "assistant")
        d.proc.stdout.close()
        # The next write fails (EPIPE): the daemon aborts the run and leaves.
        d.send({"type": "get_state", "id": "s2"})
        self.assertEqual(d.wait_exit(), 0)
        with open(state["sessionFile"], encoding="utf-8") as f:
            last = json.loads(f.read().splitlines()[-1])
        self.assertEqual(last["message"]["stopReason"], "aborted")


class BadInputSchemaTest(DaemonTest):
    """Every bad-input class gets one failed response that matches the
    schema, with the exact message form and the id rule; the daemon goes on."""

    CASES = [
        # (name, line, command, error (exact, or prefix when it ends with "..."), id echoed)
        ("not JSON", b"not json", "parse", "Failed to parse command: '[' or '{' expected near 'not' (at byte 3)",
         None),
        ("JSON but not an object", b"[1,2]", "parse",
         "Failed to parse command: expected a JSON object, got an array", None),
        ("a bare string", b'"hi"', "parse", "Failed to parse command: ...", None),
        ("invalid UTF-8", b'{"type":"get_state","id":"\xff"}', "parse",
         "Failed to parse command: unable to decode byte 0xff...", None),
        ("no type", b'{"id":"a"}', "parse",
         'Failed to parse command: missing "type" (a string naming the command)', "a"),
        ("type not a string", b'{"id":"b","type":5}', "parse",
         'Failed to parse command: "type" must be a string, not a number', "b"),
        ("unknown command", b'{"id":"c","type":"frobnicate"}', "frobnicate", "Unknown command: frobnicate", "c"),
        ("unsupported pi command", b'{"id":"d","type":"bash","command":"ls"}', "bash",
         "bash is not supported: retryd runs no shell commands", "d"),
        ("missing field", b'{"id":"e","type":"prompt"}', "prompt",
         'prompt: missing required field "message" (a string)', "e"),
        ("wrong field type", b'{"id":"f","type":"prompt","message":5}', "prompt",
         'prompt: field "message" must be a string, not a number', "f"),
        ("bad boolean", b'{"id":"g","type":"set_auto_retry","enabled":"yes"}', "set_auto_retry",
         'set_auto_retry: field "enabled" must be true or false, not a string', "g"),
        ("bad enum", b'{"id":"h","type":"prompt","message":"x","streamingBehavior":"later"}', "prompt",
         'prompt: field "streamingBehavior" must be "steer" or "followUp"', "h"),
        ("bad images", b'{"id":"i","type":"steer","message":"x","images":[{"type":"img"}]}', "steer",
         'steer: images[0].type must be "image"', "i"),
        ("bad mode", b'{"id":"j","type":"set_follow_up_mode","mode":"some"}', "set_follow_up_mode",
         'set_follow_up_mode: field "mode" must be "all" or "one-at-a-time"', "j"),
        ("id not a scalar", b'{"id":{},"type":"get_state"}', "get_state",
         'get_state: field "id" must be a string, a number, true, false or null, not an object',
         None),
        ("retry not an object", b'{"id":"k","type":"prompt","message":"x","retry":5}', "prompt",
         'prompt: field "retry" must be an object of retry settings, not a number', "k"),
        ("unknown retry setting", b'{"id":"l","type":"prompt","message":"x","retry":{"nope":true}}', "prompt",
         "retry.nope is not a retry setting", "l"),
        ("policy missing", b'{"id":"m","type":"set_retry_policy"}', "set_retry_policy",
         'set_retry_policy: missing required field "policy" (an object of retry settings)', "m"),
        ("policy not an object", b'{"id":"n","type":"set_retry_policy","policy":null}', "set_retry_policy",
         'set_retry_policy: field "policy" must be an object, not null', "n"),
        ("persist not a boolean", b'{"id":"o","type":"set_retry_policy","policy":{},"persist":"yes"}',
         "set_retry_policy", 'set_retry_policy: field "persist" must be true or false, not a string', "o"),
        ("retry setting out of range", b'{"id":"q","type":"set_retry_policy","policy":{"maxRetries":-1}}',
         "set_retry_policy", "retry.maxRetries must be an integer from 0 to 1000 (got -1)", "q"),
    ]

    def check(self, resp, command, error, rid):
        self.assertEqual(resp["command"], command)
        self.assertFalse(resp["success"])
        if error.endswith("..."):
            self.assertTrue(resp["error"].startswith(error[:-3]), resp["error"])
        else:
            self.assertEqual(resp["error"], error)
        if rid is None:
            self.assertNotIn("id", resp)
        else:
            self.assertEqual(resp["id"], rid)

    def test_each_bad_input_class_gets_one_schema_valid_error_and_reading_goes_on(self):
        d = self.start(plan=[])
        for name, line, command, error, rid in self.CASES:
            with self.subTest(name):
                d.send_raw(line + b"\n")
                self.check(d.next(), command, error, rid)
        self.assertTrue(d.request({"type": "get_state", "id": "alive"})["success"])
        self.assertEqual(d.finish(), (0, []))

    def test_commands_schema_rejects_every_command_the_daemon_refuses(self):
        for name, line, *_ in self.CASES:
            with self.subTest(name):
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue  # not JSON at all: nothing for a schema to judge
                self.assertNotEqual(VALIDATOR.errors(obj, "commands.schema.json"), [], name)

    def test_daemon_ignores_unknown_fields_that_the_schema_rejects(self):
        cmd = {"type": "get_state", "id": "x", "extra": True}
        self.assertEqual(VALIDATOR.errors(cmd, "commands.schema.json"),
                         [("$.extra", "property is not allowed (allowed: id, type)")])
        d = self.start(plan=[])
        d.send_raw(json.dumps(cmd).encode() + b"\n")
        self.assertTrue(d.next()["success"])
        self.assertEqual(d.finish()[0], 0)

    def test_null_optional_fields_count_as_absent(self):
        d = self.start(plan=[])
        d.send({"type": "get_commands", "id": None})
        self.assertNotIn("id", d.next())
        d.send({"type": "prompt", "id": "p", "message": "x", "images": None, "streamingBehavior": None,
                "retry": None})
        self.assertSequence(d.until_type("agent_end")[:2], ["response:prompt:ok", "agent_start"])
        r = d.request({"type": "set_retry_policy", "id": "r", "policy": {}, "persist": None})
        self.assertEqual(r["data"]["persisted"], False)
        d.send({"type": "new_session", "id": "n", "parentSession": None})
        self.assertTrue(d.response("n")[0]["success"])
        self.assertEqual(d.finish()[0], 0)

    def test_oversize_line_is_refused_without_id_and_the_next_line_is_read(self):
        d = self.start("--set", "rpc.maxLineBytes=64", plan=[])
        d.send_raw(b'{"type":"get_state","id":"' + b"x" * 200 + b'"}\n')
        self.check(d.next(), "parse",
                   "Failed to parse command: line longer than rpc.maxLineBytes (64 bytes); "
                   "the rest of it was discarded", None)
        self.assertTrue(d.request({"type": "get_state", "id": "after"})["success"])
        self.assertEqual(d.finish(), (0, []))

    def test_crlf_is_stripped_and_blank_lines_are_skipped(self):
        d = self.start(plan=[])
        d.send_raw(b'\n   \n\t\r\n{"type":"get_commands","id":"crlf"}\r\n')
        r = d.next()
        self.assertEqual((r["id"], r["success"]), ("crlf", True))
        # The last line may lack its LF: it is still read at EOF.
        d.send_raw(b'{"type":"get_commands","id":"no-lf"}')
        rc, rest = d.finish()
        self.assertEqual((rc, [o.get("id") for o in rest]), (0, ["no-lf"]))

    def test_get_commands_lists_exactly_the_commands_in_the_schema(self):
        d = self.start(plan=[])
        listed = d.request({"type": "get_commands", "id": "c"})["data"]["rpcCommands"]
        schema = VALIDATOR.document("commands.schema.json")
        in_schema = [VALIDATOR.resolve(b["$ref"], "commands.schema.json")[1]["properties"]["type"]["const"]
                     for b in schema["oneOf"]]
        self.assertEqual(sorted(listed), sorted(in_schema))
        self.assertEqual(d.finish()[0], 0)


# The schemas and the validator themselves.


# Transcript lines in the docs that are not retryd's output, and why.
NOT_RETRYD = [
    ("docs/providers.md", '"delayMs":200,"errorMessage":"429 Rate limit reached"}',
     "pi 0.73's output against the same server"),
]


def doc_transcript_lines():
    """(page, marker, text) of every "> {...}" and "< {...}" line of a
    fenced block in README.md, protocol/README.md and docs/, in order, one
    list a block; the lines of a json block have the marker "json"."""
    pages = [ROOT / "README.md", ROOT / "protocol" / "README.md"] + sorted(
        (ROOT / "docs").rglob("*.md"))
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for lang, body in re.findall(r"```([a-z]*)\n(.*?)```", text, re.S):
            block = []
            for line in body.split("\n"):
                m = re.match(r"\s*([<>]) (\{.*)$", line)
                if m:
                    block.append((str(page.relative_to(ROOT)), m.group(1), m.group(2)))
                elif lang == "json" and line.startswith("{"):
                    block.append((str(page.relative_to(ROOT)), "json", line))
            yield block


def json_line_schema(obj):
    """The schema a json block's line is written to, by its shape; None for
    a shape the protocol does not define (a settings file, a data object)."""
    t = obj.get("type")
    if t == "response":
        return "responses.schema.json"
    if t in ("session", "message", "thinking_level_change", "park", "park_end") and (
            t != "message" or "message" in obj):
        return "session.schema.json"
    if "role" in obj and "content" in obj:
        return "messages.schema.json"
    if isinstance(t, str) and "id" in obj:
        return "commands.schema.json"
    return None


class DocTranscriptTest(unittest.TestCase):
    """The docs' transcripts are what the daemon sends and takes: a line
    shown whole (no "…") is checked against the schemas, so an example
    cannot drift from the protocol unseen."""

    def test_every_whole_line_of_a_doc_transcript_matches_the_schemas(self):
        checked, wrong = 0, []
        for block in doc_transcript_lines():
            for i, (page, marker, text) in enumerate(block):
                try:
                    obj = json.loads(text)
                except ValueError:
                    continue            # abridged (…) or a bad line on purpose
                if not isinstance(obj, dict) or any(p == page and n in text for p, n, _ in NOT_RETRYD):
                    continue
                schema = (json_line_schema(obj) if marker == "json" else
                          "commands.schema.json" if marker == ">" else schema_for(obj))
                if schema is None:
                    continue
                checked += 1
                errors = VALIDATOR.errors(obj, schema)
                if errors and schema == "commands.schema.json":
                    answer = next((t for _, mk, t in block[i + 1:] if mk != ">"
                                   and '"type":"response"' in t), "")
                    if '"success":false' in answer:
                        continue        # shown being refused
                if errors:
                    wrong.append("%s: %s\n    %s" % (page, text[:160], "; ".join(
                        "%s: %s" % e for e in errors[:3])))
        self.assertGreater(checked, 100)
        self.assertEqual(wrong, [], "transcript lines the daemon would not send or take:\n"
                         + "\n".join(wrong))


class SchemaFilesTest(unittest.TestCase):

    def test_every_ref_in_every_schema_file_resolves(self):
        files = sorted(p.name for p in SCHEMAS.glob("*.schema.json"))
        self.assertEqual(files, ["commands.schema.json", "events.schema.json", "messages.schema.json",
                                 "responses.schema.json", "session.schema.json"])

        def walk(node, doc):
            if isinstance(node, dict):
                if "$ref" in node:
                    VALIDATOR.resolve(node["$ref"], doc)
                for v in node.values():
                    walk(v, doc)
            elif isinstance(node, list):
                for v in node:
                    walk(v, doc)

        for name in files:
            with self.subTest(name):
                doc = VALIDATOR.document(name)
                self.assertEqual(doc["$schema"], "https://json-schema.org/draft/2020-12/schema")
                walk(doc, name)

    def test_events_schema_lists_every_event_type_once(self):
        doc = VALIDATOR.document("events.schema.json")
        types = []
        for branch in doc["oneOf"]:
            target = VALIDATOR.resolve(branch["$ref"], "events.schema.json")[1]
            variants = [VALIDATOR.resolve(b["$ref"], "events.schema.json")[1] for b in target.get("oneOf", [])]
            for v in variants or [target]:
                types.append(v["properties"]["type"]["const"])
        self.assertEqual(sorted(set(types)), sorted([
            "ready", "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update",
            "message_end", "auto_retry_start", "auto_retry_end", "retry_fallback_applied", "notice",
            "provider_retry", "tool_execution_start", "tool_execution_end", "fleet_wait",
            "thinking_level_changed", "agent_settled", "session_settled", "prompt_result", "usage_wait"]))


GOOD_ASSISTANT = {
    "role": "assistant", "content": [{"type": "text", "text": "hi"}], "api": "sim", "provider": "sim",
    "model": "sim-1", "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                                "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0,
                                         "total": 0.0}},
    "stopReason": "stop", "timestamp": 1795986068047}


def with_changes(obj, **changes):
    out = json.loads(json.dumps(obj))
    for key, value in changes.items():
        if value is None:
            del out[key]
        else:
            out[key] = value
    return out


class ValidatorTest(unittest.TestCase):
    """The validator must be able to fail, and say where."""

    def assertRejected(self, obj, schema, path, fragment):
        errors = VALIDATOR.errors(obj, schema)
        self.assertTrue(errors, "accepted: %s" % obj)
        self.assertIn(path, [p for p, _ in errors], errors)
        self.assertIn(fragment, " ".join(m for p, m in errors if p == path))
        with self.assertRaises(ValidationError) as cm:
            VALIDATOR.validate(obj, schema)
        self.assertIn(path + ": ", str(cm.exception))

    def test_known_good_event_is_accepted(self):
        VALIDATOR.validate({"type": "message_end", "message": GOOD_ASSISTANT}, "events.schema.json")
        VALIDATOR.validate({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000,
                            "errorMessage": "503", "reason": "backoff", "errorClass": "retryable",
                            "rule": "http-status:503", "overload": False}, "events.schema.json")

    def test_validator_requires_the_class_and_rule_on_auto_retry_start(self):
        start = {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "errorMessage": "x",
                 "reason": "backoff"}
        self.assertRejected(start, "events.schema.json", "$.errorClass", "required")
        self.assertRejected(dict(start, errorClass="maybe", rule="default"), "events.schema.json", "$.errorClass",
                            '"maybe" is not one of')

    def test_validator_rejects_hint_ms_unless_the_hint_set_the_delay(self):
        start = {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "errorMessage": "x",
                 "errorClass": "retryable", "rule": "http-status:429", "overload": False}
        VALIDATOR.validate(dict(start, reason="server-hint", hintMs=2000), "events.schema.json")
        self.assertRejected(dict(start, reason="backoff", hintMs=5), "events.schema.json", "$.hintMs", "not allowed")
        self.assertRejected(dict(start, reason="server-hint"), "events.schema.json", "$.hintMs", "required")
        self.assertRejected(dict(start, reason="model-fallback"), "events.schema.json", "$.delayMs", "expected 0")
        self.assertRejected(dict(start, delayMs=0, reason="guess"), "events.schema.json", "$.reason",
                            '"guess" is not one of')

    def test_validator_rejects_a_fallback_without_reason_and_a_credential_switch_not_for_usage(self):
        fallback = {"type": "retry_fallback_applied", "kind": "model", "from": "a", "to": "b"}
        self.assertRejected(fallback, "events.schema.json", "$.reason", "required")
        self.assertRejected(dict(fallback, kind="credential"), "events.schema.json", "$.reason", "required")
        self.assertRejected(dict(fallback, kind="credential", reason="overloaded"), "events.schema.json", "$.reason",
                            "usage-limit")

    def test_validator_holds_retry_settings_to_their_keys_and_ranges(self):
        self.assertRejected({"type": "prompt", "message": "x", "retry": {"maxDelay": 5}}, "commands.schema.json",
                            "$.retry.maxDelay", "not allowed")
        self.assertRejected({"type": "set_retry_policy", "policy": {"schedule": [1] * 65}}, "commands.schema.json",
                            "$.policy.schedule", "at most 64")
        self.assertRejected({"type": "set_retry_policy", "policy": {"budget": {"maxTokens": 1}}},
                            "commands.schema.json", "$.policy.budget.tokenRatio", "required")

    def test_validator_rejects_auto_retry_start_without_delay(self):
        self.assertRejected({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "errorMessage": "x"},
                            "events.schema.json", "$.delayMs", "required property is missing")

    def test_validator_rejects_failed_auto_retry_end_without_final_error(self):
        self.assertRejected({"type": "auto_retry_end", "success": False, "attempt": 1},
                            "events.schema.json", "$.finalError", "required")

    def test_validator_rejects_unknown_stop_reason_deep_in_an_event(self):
        bad = {"type": "turn_end", "message": with_changes(GOOD_ASSISTANT, stopReason="done"), "toolResults": []}
        self.assertRejected(bad, "events.schema.json", "$.message.stopReason", '"done" is not one of')

    def test_validator_rejects_error_message_on_a_successful_answer(self):
        bad = {"type": "message_end", "message": with_changes(GOOD_ASSISTANT, errorMessage="x")}
        self.assertRejected(bad, "events.schema.json", "$.message.errorMessage", "not allowed")

    def test_validator_rejects_negative_cost_and_boolean_counts(self):
        msg = json.loads(json.dumps(GOOD_ASSISTANT))
        msg["usage"]["cost"]["total"] = -1
        msg["usage"]["input"] = True
        errors = dict(VALIDATOR.errors({"type": "message_end", "message": msg}, "events.schema.json"))
        self.assertIn("less than the minimum 0", errors["$.message.usage.cost.total"])
        self.assertIn("expected integer, got boolean", errors["$.message.usage.input"])

    def test_validator_rejects_id_on_events_and_unknown_event_types(self):
        self.assertRejected({"type": "agent_start", "id": "1"}, "events.schema.json", "$.id", "not allowed")
        self.assertRejected({"type": "agent_finished"}, "events.schema.json", "$.type", "is not one of")

    def test_validator_rejects_data_where_a_response_has_none(self):
        self.assertRejected({"type": "response", "command": "get_commands", "success": True},
                            "responses.schema.json", "$.data", "required")
        self.assertRejected({"type": "response", "command": "get_state", "success": True},
                            "responses.schema.json", "$.data", "required")

    def test_validator_follows_refs_into_sibling_files(self):
        self.assertRejected({"type": "message_start", "message": {"role": "user", "content": [], "timestamp": 1}},
                            "events.schema.json", "$.message.content", "at least 1")
        self.assertRejected({"type": "prompt", "message": "x", "images": [{"type": "image", "data": "x"}]},
                            "commands.schema.json", "$.images[0].mimeType", "required")

    def test_validator_holds_strings_to_their_min_length(self):
        # set_event_filter's event names and open_session's sessionDir are
        # non-empty strings (commands.schema.json).
        self.assertFalse(VALIDATOR.is_valid({"type": "open_session", "sessionDir": ""},
                                            "commands.schema.json"))
        self.assertTrue(VALIDATOR.is_valid({"type": "open_session", "sessionDir": "/tmp/s"},
                                           "commands.schema.json"))
        self.assertFalse(VALIDATOR.is_valid({"type": "set_event_filter", "events": [""]},
                                            "commands.schema.json"))

    def test_validator_compares_the_json_way(self):
        self.assertTrue(VALIDATOR.is_valid(2.0, "messages.schema.json", "/$defs/Timestamp"))
        self.assertFalse(VALIDATOR.is_valid(2.5, "messages.schema.json", "/$defs/Timestamp"))
        self.assertFalse(VALIDATOR.is_valid(True, "messages.schema.json", "/$defs/Timestamp"))
        # const false must not accept 0, const 1 must not accept true.
        self.assertFalse(VALIDATOR.is_valid({"cancelled": 0}, "responses.schema.json",
                                            "/$defs/ok_new_session/properties/data"))
        self.assertFalse(VALIDATOR.is_valid({"type": "session", "version": True, "id": "", "timestamp": "",
                                             "cwd": ""}, "session.schema.json"))

    def test_validator_refuses_schemas_it_cannot_honour(self):
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "a.schema.json").write_text(json.dumps({"type": "string", "pattern": "^x"}))
            Path(tmp, "b.schema.json").write_text(json.dumps({"$ref": "#/$defs/missing"}))
            v = Validator(tmp)
            with self.assertRaises(SchemaError):
                v.errors("x", "a.schema.json")
            with self.assertRaises(SchemaError):
                v.errors("x", "b.schema.json")

    def test_one_of_that_matches_twice_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "s.schema.json").write_text(json.dumps({"oneOf": [{"type": "integer"}, {"type": "number"}]}))
            errors = Validator(tmp).errors(3, "s.schema.json")
            self.assertEqual(len(errors), 1)
            self.assertIn("matches 2 oneOf branches", errors[0][1])


if __name__ == "__main__":
    unittest.main()

"""retryctl, the command-line client, as a person and a script use it.

Under a pseudo-terminal (Python's pty module) for the live countdown line and
Ctrl-C (SIGINT sent to retryctl), over pipes for the plain progress lines,
--json and prompts from stdin. retryctl is the one next to the retryd under
test; every run is bounded in time.
"""
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import harness
from harness import strip_settled

FAKE = os.path.join(harness.REPO_ROOT, "tests", "fixtures", "fake_retryd.py")
ELLIPSIS = "\u2026"
DASH = "\u2014"
SPINNER = "\u280b\u2819\u2839\u2838\u283c\u2834\u2826\u2827\u2807\u280f"


def ctl_path():
    return os.path.join(os.path.dirname(harness.binary_path()), "retryctl")


def screen(text):
    """What a terminal shows after text: \\r, \\n and ESC[K (erase to the end
    of the line) applied, the lines that are left."""
    lines, col = [""], 0
    i = 0
    while i < len(text):
        if text.startswith("\x1b[K", i):
            lines[-1] = lines[-1][:col]
            i += 3
            continue
        ch = text[i]
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append("")
            col = 0
        else:
            cur = lines[-1]
            lines[-1] = cur[:col] + ch + cur[col + 1:]
            col += 1
        i += 1
    return [l for l in lines if l]


def plan_args(plan, **sets):
    args = ["--sim-plan", json.dumps(plan)]
    for k, v in sets.items():
        args += ["--set", "%s=%s" % (k.replace("_", "."), json.dumps(v))]
    return args


class PtyRun:
    """retryctl with stdin, stdout and stderr on one pseudo-terminal."""

    def __init__(self, args, env):
        master, slave = pty.openpty()
        self.master = master
        self.proc = subprocess.Popen([ctl_path()] + args, stdin=slave, stdout=slave,
                                     stderr=slave, env=env, close_fds=True,
                                     start_new_session=True)
        os.close(slave)
        self.buf = b""
        self.eof = False

    def _pump(self, timeout):
        if self.eof:
            time.sleep(min(timeout, 0.05))
            return
        r, _, _ = select.select([self.master], [], [], timeout)
        if not r:
            return
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            data = b""
        if data:
            self.buf += data
        else:
            self.eof = True

    @property
    def text(self):
        return self.buf.decode("utf-8", "replace")

    def wait_for(self, needle, timeout):
        deadline = time.monotonic() + harness.scaled(timeout)
        while needle not in self.text:
            if time.monotonic() > deadline or (self.eof and self.proc.poll() is not None):
                raise AssertionError("no %r in retryctl's terminal output:\n%r" % (needle, self.text))
            self._pump(0.05)

    def finish(self, timeout):
        deadline = time.monotonic() + harness.scaled(timeout)
        while self.proc.poll() is None or not self.eof:
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("retryctl did not end in %.0f s:\n%r" % (timeout, self.text))
            self._pump(0.05)
        os.close(self.master)
        return self.proc.returncode

    def kill(self, sig):
        self.proc.send_signal(sig)


class RetryctlTestCase(unittest.TestCase):
    def setUp(self):
        if not os.access(ctl_path(), os.X_OK):
            self.fail("no retryctl at %s" % ctl_path())
        self.tmp = tempfile.mkdtemp(prefix="retryctl-e2e-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.env = dict(os.environ, RETRYD=harness.binary_path(), HOME=self.tmp,
                        XDG_CONFIG_HOME=os.path.join(self.tmp, "config"),
                        XDG_STATE_HOME=os.path.join(self.tmp, "state"),
                        **harness.runtime_env(self.tmp))
        self.env.pop("RETRYD_LOG", None)
        # Live progress unless a test asks for plain: a TERM that is neither
        # unset nor dumb, no NO_COLOR.
        self.env["TERM"] = "xterm-256color"
        self.env.pop("NO_COLOR", None)

    def pty(self, args):
        run = PtyRun(args, self.env)
        self.addCleanup(lambda: run.proc.poll() is None and (run.proc.kill(), run.proc.wait()))
        return run

    def pipes(self, args, stdin=b"", timeout=20.0, env=None):
        p = subprocess.run([ctl_path()] + args, input=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=env or self.env,
                           timeout=harness.scaled(timeout))
        err = p.stderr.decode("utf-8", "replace")
        self.assertEqual(harness.sanitizer_report(err), "", err)
        return p.returncode, p.stdout.decode("utf-8", "replace"), err

    def assertClean(self, text):
        self.assertEqual(harness.sanitizer_report(text), "", text)


class TerminalTests(RetryctlTestCase):
    def test_live_countdown_counts_down_in_tenths_naming_the_error_and_its_class(self):
        run = self.pty(plan_args([{"error": "529 overloaded"}, {"text": "hello world"}],
                                 retry_baseDelayMs=1000) + ["hi"])
        run.wait_for("Retrying (1/3) in 1.0s %s 529 overloaded (overload)" % DASH, 5)
        run.wait_for("hello world", 10)
        self.assertEqual(run.finish(10), 0, run.text)
        out = run.text
        shown = re.findall(r"\r\x1b\[KRetrying \(1/3\) in (\d\.\d)s %s 529 overloaded \(overload\)"
                           % DASH, out)
        # Redrawn every 100 ms: a 1 s wait shows several tenths, counting down.
        self.assertGreaterEqual(len(set(shown)), 2, out)
        self.assertEqual(shown[0], "1.0", out)
        self.assertTrue(all(float(a) >= float(b) for a, b in zip(shown[1:-1], shown[2:-1])), shown)
        # The wait's line stays, as it read when it began; the answer follows.
        self.assertEqual(screen(out)[-2:],
                         ["Retrying (1/3) in 1.0s %s 529 overloaded (overload)" % DASH,
                          "hello world"])
        self.assertClean(out)

    def test_countdown_line_is_cut_to_the_terminal_width_on_a_code_point(self):
        error = "503 Service Unavailable " + "\u00e9" * 80
        env = dict(self.env, COLUMNS="70")  # a new pty has no size: COLUMNS counts
        run = PtyRun(plan_args([{"error": error}, {"text": "ok"}], retry_baseDelayMs=300) + ["hi"],
                     env)
        self.addCleanup(lambda: run.proc.poll() is None and (run.proc.kill(), run.proc.wait()))
        self.assertEqual(run.finish(10), 0, run.text)
        kept = screen(run.text)[-2]
        self.assertTrue(kept.startswith("Retrying (1/3) in 0.3s %s 503 Service Unavailable \u00e9"
                                        % DASH), kept)
        self.assertTrue(kept.endswith("\u00e9%s (retryable)" % ELLIPSIS), kept)
        self.assertEqual(len(kept), 69, kept)
        self.assertNotIn("\ufffd", run.text)

    def test_spinner_runs_until_the_first_token_and_is_cleared_before_it(self):
        run = self.pty(plan_args([{"text": "hello world", "delayMs": 800}]) + ["hi"])
        run.wait_for("hello world", 10)
        self.assertEqual(run.finish(10), 0, run.text)
        out = run.text
        before = out[:out.index("hello")]
        frames = set(re.findall(r"\r\x1b\[K([%s]) Waiting for the model%s" % (SPINNER, ELLIPSIS),
                                before))
        self.assertGreaterEqual(len(frames), 2, out)
        # Erased right before the first token, and not drawn again after it.
        self.assertIn("\r\x1b[Khello world\r\n", out)
        self.assertNotIn("Waiting", out[out.index("hello"):])
        self.assertEqual(screen(out), ["hello world"])
        self.assertClean(out)

    def test_spinner_comes_back_after_a_wait_until_the_retry_answers(self):
        run = self.pty(plan_args([{"error": "503"}, {"text": "second try", "delayMs": 800}],
                                 retry_baseDelayMs=100) + ["hi"])
        self.assertEqual(run.finish(10), 0, run.text)
        out = run.text
        after_wait = out[out.index("(retryable)\r\n"):out.index("second")]
        self.assertIn(" Waiting for the model%s" % ELLIPSIS, after_wait)
        self.assertEqual(screen(out), ["Retrying (1/3) in 0.1s %s 503 (retryable)" % DASH,
                                       "second try"])

    def test_ctrl_c_during_backoff_cancels_the_retry_and_exits_130(self):
        run = self.pty(plan_args([{"error": "503"}, {"text": "never"}], retry_baseDelayMs=30000) +
                       ["hi"])
        run.wait_for("Retrying (1/3) in 30.0s", 5)
        t0 = time.monotonic()
        run.kill(signal.SIGINT)
        self.assertEqual(run.finish(10), 130, run.text)
        self.assertLess(time.monotonic() - t0, harness.scaled(5))
        self.assertIn("cancelling the retry", run.text)
        self.assertIn("cancelled: Retry cancelled", run.text)
        self.assertNotIn("never", run.text)
        self.assertClean(run.text)

    def test_ctrl_c_while_streaming_aborts_and_exits_130(self):
        words = " ".join("w%d" % i for i in range(200))
        run = self.pty(plan_args([{"text": words}], sim_chunkDelayMs=50) + ["hi"])
        run.wait_for("w3", 10)
        run.kill(signal.SIGINT)
        self.assertEqual(run.finish(10), 130, run.text)
        self.assertIn("aborting", run.text)
        self.assertNotIn("w199", run.text)
        self.assertClean(run.text)

    def test_second_ctrl_c_quits_when_the_daemon_does_not_stop(self):
        log = os.path.join(self.tmp, "fake.log")
        self.env.update(FAKE_LOG=log, FAKE_MODE="stubborn")
        run = self.pty(["--retryd", FAKE, "--sim-plan", "[]", "hi"])
        run.wait_for("partial", 10)
        run.kill(signal.SIGINT)
        run.wait_for("aborting", 5)
        deadline = time.monotonic() + harness.scaled(5)
        while '"abort"' not in open(log).read():
            self.assertLess(time.monotonic(), deadline, "the fake never got the abort")
            time.sleep(0.02)
        t0 = time.monotonic()
        run.kill(signal.SIGINT)
        self.assertEqual(run.finish(10), 130, run.text)
        self.assertLess(time.monotonic() - t0, harness.scaled(4))
        self.assertIn("interrupted", run.text)
        pid = int(open(log).read().splitlines()[0].split()[1])
        # The stubborn daemon was stopped on the way out.
        with self.assertRaises(ProcessLookupError):
            for _ in range(50):
                os.kill(pid, 0)
                time.sleep(0.05)

    def test_final_failure_keeps_the_last_retry_line_and_prints_the_error_once(self):
        run = self.pty(plan_args([{"error": "503"}, {"error": "502 Bad Gateway"},
                                  {"error": "504 Gateway Timeout"}],
                                 retry_baseDelayMs=5, retry_maxRetries=2) + ["hi"])
        self.assertEqual(run.finish(10), 1, run.text)
        self.assertEqual(screen(run.text), [
            "Retrying (1/2) in 0.1s %s 503 (retryable)" % DASH,
            "Retrying (2/2) in 0.1s %s 502 Bad Gateway (retryable)" % DASH,
            "Retry failed after 2 attempts: 504 Gateway Timeout",
        ])
        self.assertEqual(run.text.count("Retry failed"), 1, run.text)
        self.assertClean(run.text)

    def _plain_terminal_run(self, env):
        run = PtyRun(plan_args([{"error": "529 overloaded"}, {"text": "hi there", "delayMs": 500}],
                               retry_baseDelayMs=400) + ["hi"], env)
        self.addCleanup(lambda: run.proc.poll() is None and (run.proc.kill(), run.proc.wait()))
        self.assertEqual(run.finish(10), 0, run.text)
        out = run.text
        self.assertNotIn("\x1b", out)
        # The terminal turns each \n into \r\n; no other \r is a redraw.
        self.assertNotIn("\r", out.replace("\r\n", ""))
        self.assertNotIn("Waiting", out)
        self.assertEqual(out, "Retrying (1/3) in 0.4s %s 529 overloaded (overload)\r\nhi there\r\n"
                         % DASH)

    def test_term_dumb_gets_plain_lines_without_escape_codes_on_a_terminal(self):
        self._plain_terminal_run(dict(self.env, TERM="dumb"))

    def test_no_color_gets_plain_lines_without_escape_codes_on_a_terminal(self):
        self._plain_terminal_run(dict(self.env, NO_COLOR="1"))

    def test_unset_term_gets_plain_lines_on_a_terminal(self):
        env = dict(self.env)
        env.pop("TERM")
        self._plain_terminal_run(env)


class ExitStatusTests(RetryctlTestCase):
    def test_answer_exits_0_with_the_text_on_stdout(self):
        rc, out, err = self.pipes(["--sim-plan", '[{"text":"forty two"}]', "q"])
        self.assertEqual((rc, out), (0, "forty two\n"), err)

    def test_non_retryable_failure_exits_1_with_the_error(self):
        rc, out, err = self.pipes(plan_args([{"error": "401 unauthorized"}]) + ["q"])
        self.assertEqual(rc, 1, err)
        self.assertEqual(out, "")
        self.assertIn("retryctl: 401 unauthorized", err)
        self.assertNotIn("Retrying", err)

    def test_exhausted_retries_exit_1_with_retry_failed_line(self):
        rc, out, err = self.pipes(plan_args([{"error": "503"}] * 3,
                                            retry_baseDelayMs=5, retry_maxRetries=2) + ["q"])
        self.assertEqual(rc, 1, err)
        self.assertIn("Retry failed after 2 attempts: 503\n", err)

    def test_bad_options_exit_2(self):
        for args in (["--frob", "q"], ["a", "b"], ["--timeout", "soon", "q"], ["--set"]):
            rc, out, err = self.pipes(args)
            self.assertEqual(rc, 2, (args, err))
            self.assertIn("Try 'retryctl --help'", err)

    def test_daemon_refusing_its_options_exits_2(self):
        rc, out, err = self.pipes(["--provider", "lcoal", "q"])
        self.assertEqual(rc, 2, err)
        self.assertIn("unknown provider 'lcoal'", err)

    def test_missing_daemon_exits_1_and_says_where_it_looked(self):
        rc, out, err = self.pipes(["--retryd", "/nonexistent/retryd", "q"])
        self.assertEqual(rc, 1, err)
        self.assertIn("/nonexistent/retryd", err)

    def test_daemon_is_found_next_to_retryctl_without_RETRYD(self):
        env = dict(self.env)
        env.pop("RETRYD")
        env["PATH"] = "/usr/bin:/bin"
        rc, out, err = self.pipes(["--sim-plan", '[{"text":"found"}]', "q"], env=env)
        self.assertEqual((rc, out), (0, "found\n"), err)

    def test_help_and_version_exit_0(self):
        rc, out, _ = self.pipes(["--help"])
        self.assertEqual(rc, 0)
        self.assertIn("Exit status: 0 answered, 1 failed, 2 usage, 130 cancelled", out)
        rc, out, _ = self.pipes(["--version"])
        self.assertEqual(rc, 0)
        self.assertTrue(out.startswith("retryctl "))

    def test_dash_V_prints_the_version_as_retryd_does(self):
        daemon = subprocess.run([harness.binary_path(), "--version"], stdout=subprocess.PIPE,
                                timeout=harness.scaled(10)).stdout.decode()
        self.assertRegex(daemon, r"^retryd \S+\n$")
        for flag in ("-V", "--version"):
            rc, out, err = self.pipes([flag])
            self.assertEqual((rc, out, err), (0, daemon.replace("retryd", "retryctl", 1), ""), flag)
        rc, out, _ = self.pipes(["--help"])
        self.assertIn("-V, --version", out)


class PipeTests(RetryctlTestCase):
    def test_one_plain_progress_line_per_retry_when_stderr_is_not_a_terminal(self):
        rc, out, err = self.pipes(plan_args([{"error": "503 Service Unavailable"},
                                             {"error": "529 overloaded"}, {"text": "ok then"}],
                                            retry_baseDelayMs=10) + ["q"])
        self.assertEqual((rc, out), (0, "ok then\n"), err)
        self.assertEqual(err.splitlines(), [
            "Retrying (1/3) in 0.1s %s 503 Service Unavailable (retryable)" % DASH,
            "Retrying (2/3) in 0.1s %s 529 overloaded (overload)" % DASH,
        ])
        self.assertNotIn("\r", err)
        self.assertNotIn("\x1b", err)

    def test_plain_lines_keep_the_whole_error_and_blank_its_escape_codes(self):
        long_error = "503 " + "x" * 300
        rc, out, err = self.pipes(plan_args([{"error": long_error}, {"error": "503 \x1b[31mred"},
                                             {"error": "503 \x1b[2Jgone"}],
                                            retry_baseDelayMs=200, retry_maxRetries=2) + ["q"])
        self.assertEqual(rc, 1, err)
        self.assertNotIn("\x1b", err)
        self.assertEqual(err.splitlines(), [
            "Retrying (1/2) in 0.2s %s %s (retryable)" % (DASH, long_error),
            "Retrying (2/2) in 0.4s %s 503  [31mred (retryable)" % DASH,
            "Retry failed after 2 attempts: 503  [2Jgone",
        ])

    def test_pipe_gets_only_the_text_of_the_attempt_that_succeeded(self):
        plan = [{"text": "half an", "error": "503"}, {"text": "whole answer"}]
        rc, out, err = self.pipes(plan_args(plan, retry_baseDelayMs=5) + ["q"])
        self.assertEqual((rc, out), (0, "whole answer\n"), err)
        # --stream shows every attempt as it comes, the failed one on its own line.
        rc, out, err = self.pipes(plan_args(plan, retry_baseDelayMs=5) + ["--stream", "q"])
        self.assertEqual((rc, out), (0, "half an\nwhole answer\n"), err)

    def test_json_lines_parse_and_carry_the_whole_lifecycle(self):
        rc, out, err = self.pipes(plan_args([{"error": "503"}, {"text": "fine"}],
                                            retry_baseDelayMs=5) + ["--json", "q"])
        self.assertEqual(rc, 0, err)
        frames = [json.loads(line) for line in out.splitlines()]
        kinds = [f["type"] for f in strip_settled(frames)]
        self.assertEqual(kinds[0], "ready")
        self.assertEqual(kinds[-1], "agent_end")
        self.assertIn("auto_retry_start", kinds)
        self.assertIn({"type": "auto_retry_end", "success": True, "attempt": 1}, frames)
        # The daemon's own shape: pi's full message_update (not retryctl's delta choice).
        upd = next(f for f in frames if f["type"] == "message_update")
        self.assertIn("partial", upd["assistantMessageEvent"])

    @unittest.skipUnless(shutil.which("jq"), "jq is not installed")
    def test_json_output_feeds_jq(self):
        cmd = "%s --json --sim-plan '[{\"text\":\"a b\"}]' q | jq -r 'select(.type==\"agent_end\") | .messages[-1].content[0].text'" % ctl_path()
        p = subprocess.run(["sh", "-c", cmd], stdout=subprocess.PIPE, env=self.env,
                           timeout=harness.scaled(20))
        self.assertEqual(p.stdout.decode(), "a b\n")

    def test_ctrl_c_in_backoff_sends_abort_retry(self):
        p = subprocess.Popen([ctl_path(), "--json"] + plan_args([{"error": "503"}],
                                                               retry_baseDelayMs=30000) + ["q"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
        seen = []
        while True:
            line = p.stdout.readline()
            self.assertTrue(line, "ended before the backoff: %r" % seen)
            seen.append(json.loads(line))
            if seen[-1]["type"] == "auto_retry_start":
                break
        p.send_signal(signal.SIGINT)
        rest, err = p.communicate(timeout=harness.scaled(10))
        frames = seen + [json.loads(l) for l in rest.decode().splitlines()]
        self.assertEqual(p.returncode, 130, err)
        cmds = [f.get("command") for f in frames if f["type"] == "response"]
        self.assertEqual(cmds, ["prompt", "abort_retry"])
        self.assertIn({"type": "auto_retry_end", "success": False, "attempt": 1,
                       "finalError": "Retry cancelled"}, frames)

    def test_ctrl_c_while_streaming_sends_abort(self):
        words = " ".join("w%d" % i for i in range(200))
        p = subprocess.Popen([ctl_path(), "--json"] + plan_args([{"text": words}],
                                                               sim_chunkDelayMs=50) + ["q"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
        seen = []
        while not any(f["type"] == "message_update" for f in seen):
            line = p.stdout.readline()
            self.assertTrue(line, "ended before streaming: %r" % seen)
            seen.append(json.loads(line))
        p.send_signal(signal.SIGINT)
        rest, err = p.communicate(timeout=harness.scaled(10))
        frames = seen + [json.loads(l) for l in rest.decode().splitlines()]
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("abort", [f.get("command") for f in frames if f["type"] == "response"])
        ends = [f["message"] for f in frames if f["type"] == "message_end"
                and f["message"]["role"] == "assistant"]
        self.assertEqual(ends[-1]["stopReason"], "aborted")

    def test_prompts_from_stdin_one_per_line(self):
        rc, out, err = self.pipes(["-q"], stdin=b"first question\n\n  \nsecond one\r\n")
        self.assertEqual((rc, out), (0, "first question\nsecond one\n"), err)

    def test_stdin_prompt_failure_is_exit_1_and_the_rest_still_run(self):
        rc, out, err = self.pipes(plan_args([{"error": "401 unauthorized"}]),
                                  stdin=b"one\ntwo\n")
        self.assertEqual(rc, 1, err)
        self.assertEqual(out, "two\n")
        self.assertIn("401 unauthorized", err)

    def test_timeout_gives_up_with_exit_1(self):
        rc, out, err = self.pipes(plan_args([{"hang": True}]) + ["--timeout", "0.3", "q"])
        self.assertEqual(rc, 1, err)
        self.assertIn("no answer within 0.3 s", err)


if __name__ == "__main__":
    unittest.main()


class FleetWaitTests(RetryctlTestCase):
    """A fleet wait shown as a backoff is: two retryctl runs share one fleet
    (the same runtime dir, sim.shareFleet); the first is told by its sim
    plan to wait 2 s and gives up, the second is held for what is left."""

    BLOCK = [{"error": "429 Too Many Requests", "status": 429, "retryAfterMs": 2000}]
    CAUSE = "another retryd of yours got 429 retry-after 2s"

    def setUp(self):
        super().setUp()
        # What the two share is counted: their own runtime dir, also in
        # shared mode (harness.shared_runtime).
        self.env["XDG_RUNTIME_DIR"] = self.tmp

    def block(self):
        rc, _, err = self.pipes(plan_args(self.BLOCK, retry_maxRetries=0, sim_shareFleet=True) +
                                ["q"])
        self.assertEqual(rc, 1, err)

    def test_a_fleet_wait_is_a_plain_line_per_hold_naming_its_cause_off_a_terminal(self):
        self.block()
        t0 = time.monotonic()
        rc, out, err = self.pipes(plan_args([{"text": "after the block"}], sim_shareFleet=True) +
                                  ["q"])
        self.assertEqual((rc, out), (0, "after the block\n"), err)
        lines = err.splitlines()
        self.assertTrue(lines, err)
        held = 0.0
        for line in lines:
            m = re.fullmatch(r"held (\d+\.\d)s %s (.*)" % DASH, line)
            self.assertIsNotNone(m, err)
            self.assertEqual(m.group(2), self.CAUSE)
            held += float(m.group(1))
        self.assertTrue(0.5 <= held <= 2.1, err)
        self.assertGreaterEqual(time.monotonic() - t0, held - 0.2)
        self.assertNotIn("\r", err)
        self.assertNotIn("\x1b", err)

    def test_a_fleet_wait_counts_down_on_a_terminal_naming_its_cause_and_its_line_stays(self):
        self.block()
        run = self.pty(plan_args([{"text": "after the block"}], sim_shareFleet=True) + ["q"])
        run.wait_for(" %s %s" % (DASH, self.CAUSE), 5)
        run.wait_for("after the block", 10)
        self.assertEqual(run.finish(10), 0, run.text)
        out = run.text
        shown = re.findall(r"\r\x1b\[Kheld (\d\.\d)s %s %s" % (DASH, re.escape(self.CAUSE)), out)
        # Redrawn every 100 ms, counting down; then kept as long as it held in all.
        self.assertGreaterEqual(len(set(shown)), 3, out)
        counting = [float(x) for x in shown[:-1]]
        self.assertTrue(all(a >= b for a, b in zip(counting, counting[1:])), shown)
        kept = screen(out)
        self.assertEqual(kept[-1], "after the block", kept)
        self.assertRegex(kept[-2], r"^held \d\.\ds %s %s$" % (DASH, re.escape(self.CAUSE)))
        self.assertGreaterEqual(float(kept[-2].split()[1][:-1]), counting[0])
        self.assertClean(out)

    def test_ctrl_c_during_a_fleet_wait_cancels_it_and_exits_130(self):
        rc, _, err = self.pipes(plan_args([{"error": "429", "status": 429,
                                            "retryAfterMs": 30000}],
                                          retry_maxRetries=0, sim_shareFleet=True) + ["q"])
        self.assertEqual(rc, 1, err)
        run = self.pty(plan_args([{"text": "never"}], sim_shareFleet=True) + ["q"])
        run.wait_for("held ", 5)
        run.kill(signal.SIGINT)
        self.assertEqual(run.finish(10), 130, run.text)
        self.assertIn("cancelling the fleet wait", run.text)
        self.assertNotIn("never", run.text)

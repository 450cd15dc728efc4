"""End-to-end harness: drive the retryd binary over pipes.

Python 3 standard library only.

    with Daemon(sets={"retry.baseDelayMs": 20}, plan=[{"error": "503"}, {"text": "ok"}]) as d:
        d.send({"type": "prompt", "message": "hi"})
        end = d.wait_for(lambda m: m.get("type") == "agent_end")
        d.close_stdin()
        d.assert_clean_exit()

Every wait is bounded; a timeout fails with the lines seen so far.

RETRYD_VALGRIND=1 (make check-valgrind) runs every daemon under valgrind's
memcheck (--leak-check=full, --error-exitcode): a memory error or a leak
makes the exit status non-zero and puts "==PID==" lines on stderr, which
every test that checks the exit or the output then reports. Timeouts are
stretched (see scaled()); tests that measure time or RSS skip themselves
(see timing_sensitive()).

In every mode, a daemon that leaves with libuv handles still open
(uv_loop_close() != 0, logged by main.c) fails the same checks.
"""
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))

DEFAULT_TIMEOUT = 5.0
SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "runtime error:",
                     "UndefinedBehaviorSanitizer",
                     # main.c: uv_loop_close() != 0, a handle left open at exit
                     "handles still open at exit")
VALGRIND_LINE = re.compile(r"^==\d+== ")
VALGRIND_ERROR_EXIT = 97
VALGRIND_SUPP = os.path.join(REPO_ROOT, "tests", "valgrind.supp")


def binary_path():
    path = os.environ.get("RETRYD") or os.path.join(REPO_ROOT, "build", "retryd")
    if not os.path.isabs(path):
        path = os.path.join(REPO_ROOT, path)
    return path


def is_sanitized_build():
    return "/san/" in binary_path()



# A developer's own provider variables (a base URL, a key) must not reach
# the daemons a test starts: a test names what it means to set.
USER_PROVIDER_ENV = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL",
                     "OLLAMA_HOST", "AZURE_OPENAI_ENDPOINT")


def clean_environ():
    """os.environ without RETRYD_LOG and the user's provider base URLs."""
    e = dict(os.environ)
    for k in ("RETRYD_LOG",) + USER_PROVIDER_ENV:
        e.pop(k, None)
    return e


def shared_runtime():
    """RETRYD_TEST_SHARED_RUNTIME=1: daemons of tests that do not test the
    fleet themselves run in the caller's own runtime dir (its XDG_RUNTIME_DIR,
    else retryd's /tmp/retryd-UID), beside whatever other daemons of the user
    run there: make check with no private runtime dir (issue 23). The fleet's
    own tests keep theirs: they count what their daemons share."""
    return os.environ.get("RETRYD_TEST_SHARED_RUNTIME") not in (None, "", "0")


def runtime_env(private):
    """The environment entry that gives a daemon the runtime dir private
    (made, 0700), or none in shared mode: the caller's stays."""
    if shared_runtime():
        return {}
    os.makedirs(private, mode=0o700, exist_ok=True)
    return {"XDG_RUNTIME_DIR": private}


def is_valgrind():
    return os.environ.get("RETRYD_VALGRIND") not in (None, "", "0")


def valgrind_argv():
    """The memcheck command line every daemon runs under with RETRYD_VALGRIND=1."""
    argv = ["valgrind", "-q", "--tool=memcheck", "--error-exitcode=%d" % VALGRIND_ERROR_EXIT,
            "--leak-check=full", "--show-leak-kinds=definite,indirect,possible",
            "--errors-for-leak-kinds=definite,indirect,possible", "--num-callers=30",
            "--track-fds=no"]
    if os.path.exists(VALGRIND_SUPP):
        argv.append("--suppressions=" + VALGRIND_SUPP)
    return argv


def scaled(seconds):
    """Timeouts stretch under ASan (several times slower) and valgrind
    (tens of times slower, and a start-up of about a second)."""
    if is_valgrind():
        return seconds * 10 + 2
    return seconds * (3 if is_sanitized_build() else 1)


def timing_sensitive(reason="measures time or memory"):
    """Skips a test under valgrind, where time and RSS mean nothing."""
    return unittest.skipIf(is_valgrind(), "timing-sensitive under valgrind: " + reason)


def sanitizer_report(stderr_text):
    """The sanitizer or valgrind lines in stderr, or '' when there are none."""
    bad = [line for line in stderr_text.splitlines()
           if any(m in line for m in SANITIZER_MARKERS) or VALGRIND_LINE.match(line)]
    return "\n".join(bad)


def has_whitespace_outside_strings(raw):
    """True when a JSON text has insignificant whitespace (not compact)."""
    in_str = esc = False
    for ch in raw:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in " \t\r\n":
            return True
    return False


def _fmt(obj, limit=300):
    text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "...(%d chars)" % len(text)


def _brief_message(m):
    if not isinstance(m, dict):
        return m
    out = {"role": m.get("role")}
    for k in ("stopReason", "errorMessage"):
        if k in m:
            out[k] = m[k]
    text = "".join(p.get("text", "") for p in m.get("content", []) if isinstance(p, dict))
    out["text"] = text if len(text) <= 40 else text[:40] + "..."
    return out


def summarize(obj):
    """An event without its bulk (partials, full messages), for failure output."""
    if not isinstance(obj, dict):
        return obj
    out = dict(obj)
    if "message" in out:
        out["message"] = _brief_message(out["message"])
    if isinstance(out.get("messages"), list):
        out["messages"] = [_brief_message(m) for m in out["messages"]]
    ame = out.get("assistantMessageEvent")
    if isinstance(ame, dict):
        out["assistantMessageEvent"] = {k: v for k, v in ame.items() if k != "partial"}
        out.pop("message", None)
    if isinstance(out.get("data"), dict) and "model" in out["data"]:
        out["data"] = dict(out["data"], model="...")
    return out


class Line:
    """One stdout line: raw text, the parsed value (or None) and arrival time."""
    __slots__ = ("raw", "obj", "t", "error")

    def __init__(self, raw, obj, t, error=None):
        self.raw, self.obj, self.t, self.error = raw, obj, t, error


# What a run's end adds for pi 1.6's and oh-my-pi's RpcClients, after
# agent_end (protocol/README.md section 5).
SETTLE_EVENTS = ("prompt_result", "agent_settled", "session_settled")


def strip_settled(msgs):
    """msgs without the lines a run's end adds after agent_end (prompt
    results, agent_settled, session_settled), which must be there, last and
    in that order, when msgs end with a run."""
    n = len(msgs)
    while n > 0 and isinstance(msgs[n - 1], dict) and msgs[n - 1].get("type") in SETTLE_EVENTS:
        n -= 1
    tail = [m.get("type") for m in msgs[n:]]
    if tail:
        assert tail[-2:] == ["agent_settled", "session_settled"], tail
    return msgs[:n]


class DaemonFailure(AssertionError):
    pass


class Daemon:
    """A retryd process with its own HOME / XDG dirs and a background reader.

    plan: the --sim-plan steps (a list); settings: an object written to the
    default settings file ($XDG_CONFIG_HOME/retryd/settings.json) before the
    start (e.g. {"sim": {"plan": [...]}} for plans too big for argv);
    sets: {key: value} or ["k=v", ...]
    (values that are not strings are JSON-encoded); args: extra CLI args;
    env: extra/overriding environment (a value of None removes the variable).
    settled: keep the lines that follow a run's agent_end for pi 1.6 and
    oh-my-pi (SETTLE_EVENTS: prompt_result, agent_settled, session_settled)
    among the lines the waits read; by default they go to self.settle_lines
    only, so that a test of something else reads the run as it ends.
    """

    def __init__(self, args=(), plan=None, sets=None, env=None, expect_ready=True, settings=None,
                 binary=None, cwd=None, timeout=DEFAULT_TIMEOUT, settled=False):
        self.settled = settled
        self.settle_lines = []
        self.binary = binary or binary_path()
        self.timeout = timeout
        self.tmp = tempfile.mkdtemp(prefix="retryd-e2e-")
        self.home = os.path.join(self.tmp, "home")
        self.config_home = os.path.join(self.tmp, "config")
        self.state_home = os.path.join(self.tmp, "state")
        for d in (self.home, self.config_home, self.state_home):
            os.makedirs(d)
        self.cwd = cwd or self.tmp
        self.settings_path = os.path.join(self.config_home, "retryd", "settings.json")
        if settings is not None:
            os.makedirs(os.path.dirname(self.settings_path))
            with open(self.settings_path, "w") as f:
                json.dump(settings, f)

        argv = (valgrind_argv() if is_valgrind() else []) + [self.binary]
        if plan is not None:
            argv += ["--sim-plan", json.dumps(plan)]
        if isinstance(sets, dict):
            for k, v in sets.items():
                argv += ["--set", "%s=%s" % (k, v if isinstance(v, str) else json.dumps(v))]
        elif sets:
            for kv in sets:
                argv += ["--set", kv]
        argv += [a.replace("{tmp}", self.tmp) for a in args]  # "{tmp}": this daemon's temp dir
        self.argv = argv

        e = clean_environ()
        # Each daemon its own runtime dir, so fleet.mode "user" (the default)
        # shares nothing between tests; fleet tests pass a common one. In
        # shared mode (shared_runtime) the caller's, None when it has none.
        renv = runtime_env(os.path.join(self.tmp, "run"))
        self.runtime_dir = renv.get("XDG_RUNTIME_DIR", os.environ.get("XDG_RUNTIME_DIR"))
        e.update(HOME=self.home, XDG_CONFIG_HOME=self.config_home,
                 XDG_STATE_HOME=self.state_home, **renv)
        for k, v in (env or {}).items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        self.env = e

        self.lines = []          # every stdout Line, in order
        self.pos = 0             # recv()/wait_for() cursor into self.lines
        self.stderr_chunks = []
        self._cond = threading.Condition()
        self._stdout_eof = False
        self._stop = False
        self._read_enabled = threading.Event()
        self._read_enabled.set()
        self._ids = 0
        self._taken = set()      # indices >= pos already returned by take()
        self.exit_time = None

        self.start_time = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=e, cwd=self.cwd)
        self._out_fd = self.proc.stdout.fileno()
        self._out_thread = threading.Thread(target=self._read_stdout, daemon=True)
        self._err_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self._out_thread.start()
        self._err_thread.start()
        self._stdout_closed = False
        if expect_ready:
            try:
                self.read_ready()
            except BaseException:
                self.cleanup()
                raise

    def read_ready(self):
        """Reads the first line, which must be {"type":"ready"}."""
        first = self.recv()
        if first != {"type": "ready"}:
            self.fail("first line was not {\"type\":\"ready\"}: %s" % _fmt(first))

    # -- background readers -------------------------------------------------

    def _read_stdout(self):
        fd = self._out_fd
        buf = bytearray()  # amortized appends: a 100 MB line is read 1 MB at a time
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        while not self._stop:
            if not self._read_enabled.is_set():
                self._read_enabled.wait(0.05)
                continue
            if not poller.poll(50):
                continue
            try:
                chunk = os.read(fd, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            if b"\n" not in chunk:
                continue
            parts = buf.split(b"\n")
            buf = parts.pop()
            now = time.monotonic()
            new = [self._parse(p, now) for p in parts]
            if not self.settled:
                self.settle_lines += [ln for ln in new if isinstance(ln.obj, dict)
                                      and ln.obj.get("type") in SETTLE_EVENTS]
                new = [ln for ln in new if not (isinstance(ln.obj, dict)
                                                and ln.obj.get("type") in SETTLE_EVENTS)]
            with self._cond:
                self.lines.extend(new)
                self._cond.notify_all()
        with self._cond:
            if buf:
                line = self._parse(bytes(buf), time.monotonic())
                line.error = (line.error or "") + " (no trailing newline)"
                self.lines.append(line)
            self._stdout_eof = True
            self._cond.notify_all()

    @staticmethod
    def _parse(raw_bytes, now):
        try:
            raw = raw_bytes.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Line(repr(raw_bytes), None, now, "stdout line is not UTF-8: %s" % exc)
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            return Line(raw, None, now, "stdout line is not JSON: %s" % exc)
        if not isinstance(obj, dict):
            return Line(raw, obj, now, "stdout line is not a JSON object")
        return Line(raw, obj, now)

    def _read_stderr(self):
        fd = self.proc.stderr.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            with self._cond:
                self.stderr_chunks.append(chunk)
                self._cond.notify_all()

    # -- input ----------------------------------------------------------------

    def send(self, msg):
        """A dict/list (sent as one compact JSON line), or raw bytes/str as is."""
        if isinstance(msg, (dict, list)):
            data = (json.dumps(msg, separators=(",", ":")) + "\n").encode()
        elif isinstance(msg, str):
            data = msg.encode()
        else:
            data = bytes(msg)
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            self.fail("cannot write to the daemon's stdin (%s)" % exc)

    def next_id(self):
        self._ids += 1
        return "e2e-%d" % self._ids

    def request(self, msg, timeout=None):
        """Sends a command with a fresh id; returns its response.

        Only the response is taken: events before it stay unread, for a later
        recv()/wait_for() to see in order."""
        msg = dict(msg)
        msg.setdefault("id", self.next_id())
        self.send(msg)
        return self.take(lambda m: m.get("type") == "response" and m.get("id") == msg["id"],
                         timeout=timeout, what="response to %s" % _fmt(msg, 120))

    def take(self, predicate, timeout=None, what=None):
        """The first unread line matching predicate, leaving the others unread."""
        timeout = scaled(self.timeout if timeout is None else timeout)
        deadline = time.monotonic() + timeout
        with self._cond:
            i = self.pos
            while True:
                while i < len(self.lines):
                    line = self.lines[i]
                    if i not in self._taken:
                        if line.error:
                            self.fail("bad stdout line: %s: %s" % (line.error, _fmt(line.raw)),
                                      self.pos)
                        if predicate(line.obj):
                            self._taken.add(i)
                            self._advance()
                            return line.obj
                    i += 1
                left = deadline - time.monotonic()
                if self._stdout_eof or left <= 0:
                    break
                self._cond.wait(left)
        self.fail("timed out after %.1fs waiting for %s%s" % (
            timeout, what or "a matching line",
            " (stdout closed)" if self._stdout_eof else ""), self.pos)

    def _advance(self):
        while self.pos in self._taken:
            self._taken.discard(self.pos)
            self.pos += 1

    def close_stdin(self):
        try:
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def signal(self, signum=signal.SIGTERM):
        self.proc.send_signal(signum)

    # -- output ---------------------------------------------------------------

    def pause_reading(self):
        """Stop reading stdout, so the pipe fills and the daemon backs up."""
        self._read_enabled.clear()

    def resume_reading(self):
        self._read_enabled.set()

    def close_stdout(self):
        """Stop reading and close our end of the daemon's stdout pipe."""
        self._stop = True
        self._read_enabled.set()
        self._out_thread.join(timeout=2)
        self._stdout_closed = True
        self.proc.stdout.close()

    def _describe(self, start=0, limit=60):
        """The stdout lines from a little before `start` (marked '>' from it on)."""
        with self._cond:
            lines = list(self.lines)
        first = max(0, start - 10, len(lines) - limit)
        out = ["--- stdout: %d lines; showing #%d.. ('>' = unread when the wait began at #%d) ---"
               % (len(lines), first, start)]
        for i in range(first, len(lines)):
            ln = lines[i]
            shown = _fmt(summarize(ln.obj)) if ln.obj is not None else _fmt(ln.raw)
            out.append("%s%4d %s%s" % (">" if i >= start else " ", i, shown,
                                       (" <-- " + ln.error) if ln.error else ""))
        err = self.stderr_text()
        if err:
            out.append("--- stderr (last 3000 chars) ---")
            out.append(err[-3000:])
        rc = self.proc.poll()
        out.append("--- process: %s ---" % ("running" if rc is None else "exited %s" % rc))
        return "\n".join(out)

    def fail(self, message, start=0):
        raise DaemonFailure("%s\n%s" % (message, self._describe(start)))

    def recv(self, timeout=None):
        """The next stdout line (parsed), waiting at most `timeout` seconds."""
        timeout = scaled(self.timeout if timeout is None else timeout)
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.pos >= len(self.lines):
                left = deadline - time.monotonic()
                if self._stdout_eof:
                    break
                if left <= 0:
                    break
                self._cond.wait(left)
            if self.pos < len(self.lines):
                line = self.lines[self.pos]
                self.pos += 1
                self._advance()
                if line.error:
                    self.fail("bad stdout line: %s: %s" % (line.error, _fmt(line.raw)))
                return line.obj
        self.fail("no line within %.1fs%s" % (timeout, " (stdout closed)" if self._stdout_eof else ""),
                  start=max(0, self.pos - 30))

    def wait_for(self, predicate, timeout=None, what=None):
        """Reads on until predicate(message) holds; returns that message.

        Lines before it are consumed too (see `collected` / `seen`)."""
        timeout = self.timeout if timeout is None else timeout
        timeout = scaled(timeout)
        start = self.pos
        collected = []
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                while self.pos < len(self.lines):
                    line = self.lines[self.pos]
                    self.pos += 1
                    if line.error:
                        self.fail("bad stdout line: %s: %s" % (line.error, _fmt(line.raw)), start)
                    collected.append(line.obj)
                    self._advance()
                    if predicate(line.obj):
                        self.last_collected = collected
                        return line.obj
                left = deadline - time.monotonic()
                if self._stdout_eof or left <= 0:
                    break
                self._cond.wait(left)
        self.fail("timed out after %.1fs waiting for %s%s" % (
            timeout, what or "a matching line",
            " (stdout closed)" if self._stdout_eof else ""), start)

    def collect_until(self, predicate, timeout=None, what=None):
        """Like wait_for, but returns every message up to and including the match."""
        self.wait_for(predicate, timeout=timeout, what=what)
        return self.last_collected

    def wait_type(self, type_, timeout=None, **fields):
        def pred(m):
            return m.get("type") == type_ and all(m.get(k) == v for k, v in fields.items())
        return self.wait_for(pred, timeout=timeout, what="%s %s" % (type_, fields or ""))

    def collect_until_type(self, type_, timeout=None):
        return self.collect_until(lambda m: m.get("type") == type_, timeout=timeout, what=type_)

    def expect_silence(self, seconds):
        """Asserts that no line arrives within `seconds`."""
        deadline = time.monotonic() + seconds
        with self._cond:
            while self.pos >= len(self.lines):
                left = deadline - time.monotonic()
                if left <= 0 or self._stdout_eof:
                    return
                self._cond.wait(left)
            self.fail("expected no output, got: %s" % _fmt(self.lines[self.pos].raw),
                      start=max(0, self.pos - 20))

    def seen(self):
        """Every message read so far (parsed)."""
        with self._cond:
            return [ln.obj for ln in self.lines]

    def remaining(self, wait_eof=True, timeout=None):
        """Every unread message; with wait_eof, after stdout closes."""
        if wait_eof:
            deadline = time.monotonic() + scaled(timeout or self.timeout)
            with self._cond:
                while not self._stdout_eof and time.monotonic() < deadline:
                    self._cond.wait(deadline - time.monotonic())
        with self._cond:
            out = [ln for i, ln in enumerate(self.lines[self.pos:], self.pos)
                   if i not in self._taken]
            self.pos = len(self.lines)
            self._taken.clear()
        for ln in out:
            if ln.error:
                self.fail("bad stdout line: %s: %s" % (ln.error, _fmt(ln.raw)))
        return [ln.obj for ln in out]

    def forget_read(self):
        """Drops the lines already read, so a test that runs thousands of
        prompts does not keep them all (seen() then starts after them)."""
        with self._cond:
            n = self.pos
            del self.lines[:n]
            self.pos = 0
            self._taken = {i - n for i in self._taken}

    def raw_lines(self):
        with self._cond:
            return [ln.raw for ln in self.lines]

    def stderr_text(self):
        with self._cond:
            return b"".join(self.stderr_chunks).decode("utf-8", "replace")

    def wait_stderr(self, needle, timeout=10):
        """Waits until the daemon's stderr holds needle and returns all of it.
        A running daemon's stderr is read by a thread of its own, so a line
        written before a response may be read after it."""
        deadline = time.monotonic() + scaled(timeout)
        with self._cond:
            while True:
                text = b"".join(self.stderr_chunks).decode("utf-8", "replace")
                left = deadline - time.monotonic()
                if needle in text or left <= 0:
                    return text
                self._cond.wait(left)

    # -- process --------------------------------------------------------------

    def wait_exit(self, timeout=None):
        """Waits for the process to end; returns its exit status."""
        timeout = scaled(self.timeout if timeout is None else timeout)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            rc = None
        if rc is None:
            self.fail("the daemon did not exit within %.1fs" % timeout,
                      start=max(0, len(self.lines) - 30))
        if self.exit_time is None:
            self.exit_time = time.monotonic()
        self._err_thread.join(timeout=2)
        if not self._stdout_closed and self._read_enabled.is_set():
            self._out_thread.join(timeout=2)  # collect the last lines
        return rc

    def rss_kb(self):
        """VmRSS of the daemon in kB (None if it is gone)."""
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def cpu_ticks(self):
        try:
            with open("/proc/%d/stat" % self.proc.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, IndexError, ValueError):
            return None

    def wait_quiescent(self, timeout=5.0, quiet=0.25, step=0.05):
        """Waits until the daemon uses no CPU for `quiet` seconds (it is blocked,
        e.g. on a full stdout pipe). Returns True, or False on timeout."""
        deadline = time.monotonic() + scaled(timeout)
        last = self.cpu_ticks()
        still_since = time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(step)
            now = self.cpu_ticks()
            if now is None:
                return False
            if now != last:
                last, still_since = now, time.monotonic()
            elif time.monotonic() - still_since >= quiet:
                return True
        return False

    def check_no_sanitizer_report(self):
        report = sanitizer_report(self.stderr_text())
        if report:
            self.fail("sanitizer report on stderr:\n" + report[:2000])

    def check_output_clean(self):
        """Nothing but compact JSON objects on stdout, no sanitizer report."""
        with self._cond:
            lines = list(self.lines)
        for ln in lines:
            if ln.error:
                self.fail("bad stdout line: %s: %s" % (ln.error, _fmt(ln.raw)))
        report = sanitizer_report(self.stderr_text())
        if report:
            self.fail("sanitizer report on stderr:\n" + report[:2000])

    def assert_clean_exit(self, timeout=None):
        """Waits for exit; asserts status 0, JSON-only stdout, no sanitizer report."""
        rc = self.wait_exit(timeout)
        self.check_output_clean()
        if rc != 0:
            self.fail("expected exit status 0, got %s" % rc)
        return rc

    def finish(self, timeout=None):
        """Closes stdin and asserts a clean exit."""
        self.close_stdin()
        return self.assert_clean_exit(timeout)

    def cleanup(self):
        """Ends the process (stdin EOF, then SIGKILL) and removes the temp dirs.

        Raises if the sanitizers reported anything, whatever the test checked."""
        if self.proc.poll() is None:
            self.close_stdin()
            try:
                self.proc.wait(scaled(1.0))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._stop = True
        self._read_enabled.set()
        self._out_thread.join(timeout=2)
        self._err_thread.join(timeout=2)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except Exception:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)
        report = sanitizer_report(self.stderr_text())
        if report:
            raise DaemonFailure("sanitizer report on stderr:\n" + report[:2000])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False


def run_cli(args, env=None, timeout=5.0, stdin_data=b""):
    """Runs retryd to completion (for option errors, --help ...).

    Returns (status, stdout text, stderr text)."""
    tmp = tempfile.mkdtemp(prefix="retryd-e2e-cli-")
    try:
        e = clean_environ()
        os.makedirs(os.path.join(tmp, "run"), mode=0o700)
        e.update(HOME=os.path.join(tmp, "home"), XDG_CONFIG_HOME=os.path.join(tmp, "config"),
                 XDG_STATE_HOME=os.path.join(tmp, "state"), XDG_RUNTIME_DIR=os.path.join(tmp, "run"))
        for k, v in (env or {}).items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        argv = (valgrind_argv() if is_valgrind() else []) + [binary_path()] + list(args)
        p = subprocess.run(argv, input=stdin_data, capture_output=True,
                           env=e, cwd=tmp, timeout=scaled(timeout))
        err = p.stderr.decode("utf-8", "replace")
        # Every exit path, start-up errors included, closes every handle and
        # leaks nothing (under the sanitizers or valgrind).
        report = sanitizer_report(err)
        if report:
            raise DaemonFailure("retryd %s: sanitizer, valgrind or loop-close report on stderr:\n%s"
                                % (list(args), report[:2000]))
        return p.returncode, p.stdout.decode("utf-8", "replace"), err
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- event helpers -----------------------------------------------------------

def types(msgs):
    return [m.get("type") for m in msgs]


def is_type(t):
    return lambda m: m.get("type") == t


def is_response(command=None, id=None):
    def pred(m):
        return (m.get("type") == "response" and (command is None or m.get("command") == command)
                and (id is None or m.get("id") == id))
    return pred


def role_of(m):
    return (m.get("message") or {}).get("role")


def deltas(msgs):
    return [m["assistantMessageEvent"]["delta"] for m in msgs
            if m.get("type") == "message_update"
            and m.get("assistantMessageEvent", {}).get("type") == "text_delta"]


def signature(msgs):
    """A compact trace: event types, with the role of messages and the
    assistantMessageEvent type of updates, e.g. 'message_start:user'."""
    out = []
    for m in msgs:
        t = m.get("type")
        if t in ("message_start", "message_end"):
            out.append("%s:%s" % (t, role_of(m)))
        elif t == "message_update":
            out.append("update:%s" % m.get("assistantMessageEvent", {}).get("type"))
        elif t == "response":
            out.append("response:%s" % m.get("command"))
        else:
            out.append(t)
    return out


def user_text(msg):
    for part in msg.get("content", []):
        if part.get("type") == "text":
            return part.get("text")
    return None


def text_of(msg):
    return "".join(p.get("text", "") for p in msg.get("content", []) if p.get("type") == "text")


class DaemonTestCase(unittest.TestCase):
    """Spawns daemons that are always cleaned up."""

    maxDiff = None

    def spawn(self, *args, **kw):
        d = Daemon(*args, **kw)
        self.addCleanup(d.cleanup)
        return d

    def run_prompt(self, d, message="hi", timeout=None, **extra):
        """Sends a prompt; returns every message up to and including agent_end."""
        cmd = {"type": "prompt", "message": message, "id": d.next_id()}
        cmd.update(extra)
        d.send(cmd)
        return d.collect_until(is_type("agent_end"), timeout=timeout, what="agent_end")

    def assertSubsequence(self, needle, haystack, msg=None):
        it = iter(haystack)
        if not all(any(x == y for y in it) for x in needle):
            self.fail(msg or "%r is not a subsequence of %r" % (needle, haystack))

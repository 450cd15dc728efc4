"""What the synchronous and the asyncio client share: line framing, finding
the daemon, errors, command building and the result of one run.

Nothing here does I/O, so both clients frame and judge lines the same way.
"""
import json
import logging
import os
import shutil
import signal

log = logging.getLogger("retryd")
daemon_log = logging.getLogger("retryd.daemon")

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
STDERR_TAIL_BYTES = 8192
READ_CHUNK = 1 << 16


class RetrydError(Exception):
    """Base class of every error this package raises."""


class DaemonNotFound(RetrydError, FileNotFoundError):
    """No retryd executable was found (path, $RETRYD, PATH)."""


class DaemonExited(RetrydError):
    """The daemon exited (or closed its stdout) before it answered.

    returncode: its exit status, -N when signal N killed it, None when it
    was still running when we gave up waiting for it. stderr: the last
    lines it wrote on stderr (at most 8 KiB).
    """

    def __init__(self, message, returncode=None, stderr=""):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


class Timeout(RetrydError, TimeoutError):
    """A bounded wait ran out (the daemon may still be working)."""


class CommandError(RetrydError):
    """The daemon answered a command with success:false.

    command: the command's type; error: the daemon's error text;
    response: the whole response object.
    """

    def __init__(self, command, error, response):
        super().__init__("%s: %s" % (command, error))
        self.command = command
        self.error = error
        self.response = response


class TooLong:
    """A stdout line longer than max_line_bytes; its bytes were dropped."""

    def __init__(self, size):
        self.size = size


class LineSplitter:
    """Splits a byte stream into lines on b"\\n" only.

    JSON strings may hold U+2028 and U+2029 raw (the daemon writes non-ASCII
    as UTF-8), so a Unicode-aware splitter such as str.splitlines() would cut
    a line in two; the split is done on bytes, before decoding. One trailing
    b"\\r" is stripped. A line over max_bytes (0: no limit) is dropped as it
    arrives, without being buffered, and reported as a TooLong.
    """

    def __init__(self, max_bytes=DEFAULT_MAX_LINE_BYTES):
        self.max_bytes = max_bytes
        self._buf = bytearray()
        self._dropped = 0  # > 0: inside an over-long line, this many bytes so far

    def feed(self, data):
        """The complete lines in data (bytes, or TooLong), in order."""
        out = []
        start = 0
        n = len(data)
        while start < n:
            nl = data.find(b"\n", start)
            end = n if nl < 0 else nl
            piece = data[start:end]
            if self._dropped:
                self._dropped += len(piece)
            else:
                self._buf += piece
                if self.max_bytes and len(self._buf) > self.max_bytes:
                    self._dropped = len(self._buf)
                    self._buf = bytearray()
            if nl < 0:
                break
            out.append(self._take())
            start = nl + 1
        return out

    def finish(self):
        """What is left at EOF: a last line without LF, or nothing."""
        if self._dropped or self._buf:
            return [self._take()]
        return []

    def _take(self):
        if self._dropped:
            line = TooLong(self._dropped)
            self._dropped = 0
            return line
        line = bytes(self._buf)
        self._buf = bytearray()
        if line.endswith(b"\r"):
            line = line[:-1]
        return line


def parse_line(line):
    """(object, None) for a JSON object line; (None, None) for a blank
    line; (None, why) for anything else."""
    if isinstance(line, TooLong):
        return None, "a stdout line of %d bytes is over max_line_bytes; dropped" % line.size
    if not line.strip(b" \t"):
        return None, None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, "a stdout line is not UTF-8 (%s): %r" % (exc, line[:200])
    try:
        obj = json.loads(text)
    except ValueError as exc:
        return None, "a stdout line is not JSON (%s): %r" % (exc, text[:200])
    if not isinstance(obj, dict):
        return None, "a stdout line is not a JSON object: %r" % text[:200]
    return obj, None


def encode_command(cmd):
    """One compact JSON line, UTF-8, ending in LF (a JSON text never holds a
    raw LF: json.dumps escapes it)."""
    return (json.dumps(cmd, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def find_daemon(path=None):
    """The retryd executable to start.

    path, when given, is used as is if it contains a "/", else looked up on
    PATH. Without it: $RETRYD (the same way), then "retryd" on PATH.
    """
    tried = []
    for origin, candidate in (("path", path), ("$RETRYD", os.environ.get("RETRYD")),
                              ("PATH", None if path else "retryd")):
        if not candidate:
            continue
        if os.sep in candidate:
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
            tried.append("%s=%s (not an executable file)" % (origin, candidate))
        else:
            found = shutil.which(candidate)
            if found:
                return found
            tried.append("%s: %r not found on PATH" % (origin, candidate))
        if origin == "path":
            break  # an explicit path is never replaced by a guess
    raise DaemonNotFound("retryd not found: " + "; ".join(tried) +
                         " (pass path=, set RETRYD, or put retryd on PATH)")


def build_env(env):
    """os.environ with env laid over it; a value of None removes the name."""
    if env is None:
        return None
    merged = dict(os.environ)
    for key, value in env.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def describe_exit(returncode):
    if returncode is None:
        return "closed its stdout but is still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "?"
        return "was killed by signal %d (%s)" % (-returncode, name)
    return "exited with status %d" % returncode


def exit_error(when, returncode, stderr_tail):
    text = stderr_tail.strip()
    msg = "retryd %s %s" % (describe_exit(returncode), when)
    msg += "; its stderr:\n" + text if text else " (nothing on stderr)"
    return DaemonExited(msg, returncode, stderr_tail)


class StderrTail:
    """Keeps the last bytes the daemon wrote on stderr, and logs each line to
    the "retryd.daemon" logger at the level the line names ("retryd: warn:
    ..." is a warning), so warnings show even when nobody reads the tail."""

    LEVELS = {"error": logging.ERROR, "warn": logging.WARNING, "warning": logging.WARNING,
              "info": logging.INFO, "debug": logging.DEBUG}

    def __init__(self):
        self._tail = bytearray()
        self._split = LineSplitter(STDERR_TAIL_BYTES)

    def feed(self, data):
        self._tail += data
        del self._tail[:-STDERR_TAIL_BYTES]
        for line in self._split.feed(data):
            self._log(line)

    def finish(self):
        for line in self._split.finish():
            self._log(line)

    def text(self):
        return self._tail.decode("utf-8", "replace")

    def _log(self, line):
        if isinstance(line, TooLong):
            return
        text = line.decode("utf-8", "replace")
        level = logging.WARNING
        parts = text.split(": ", 2)
        if len(parts) == 3 and parts[0] == "retryd":
            level = self.LEVELS.get(parts[1], logging.WARNING)
        daemon_log.log(level, "%s", text)


def prompt_command(message, opts):
    """A prompt command. opts: images=, streaming_behavior= (or
    streamingBehavior=), retry= (retry settings for this prompt), and any
    other field, passed through as given."""
    cmd = {"type": "prompt", "message": message}
    for key, value in opts.items():
        if value is None:
            continue
        cmd["streamingBehavior" if key == "streaming_behavior" else key] = value
    return cmd


def set_auto_retry_command(enabled, persist):
    cmd = {"type": "set_auto_retry", "enabled": bool(enabled)}
    if persist is not None:
        cmd["persist"] = bool(persist)  # sent as given; older daemons ignore it
    return cmd


def response_data(resp):
    data = resp.get("data")
    return data if isinstance(data, dict) else {}


class Pending:
    """Ids for commands, and the commands still waiting for a response."""

    def __init__(self):
        self._n = 0
        self.waiting = {}

    def prepare(self, cmd):
        if not isinstance(cmd, dict) or not isinstance(cmd.get("type"), str):
            raise TypeError("a command is a dict with a string \"type\"")
        cmd = dict(cmd)
        if cmd.get("id") is None:
            self._n += 1
            cmd["id"] = "req_%d" % self._n
        elif not isinstance(cmd["id"], str):
            raise TypeError("a command's \"id\" must be a string")
        if cmd["id"] in self.waiting:
            raise ValueError("a command with id %r is still waiting for its response" % cmd["id"])
        return cmd


def check_response(resp):
    """resp, or CommandError when the daemon refused the command."""
    if resp.get("success") is True:
        return resp
    raise CommandError(resp.get("command", "?"), resp.get("error", "(no error text)"), resp)


class Result:
    """How one prompt's run ended (its events from the response to its
    prompt_result, or to agent_end from a daemon that sends none).

    success: the daemon's prompt_result said "completed" (without one: the
    final assistant message ended well, stopReason "stop", "length" or
    "toolUse"). status: the prompt_result's "completed" | "aborted" | "error"
    (None without one). text: the final assistant message's text.
    stop_reason, error_message: from that message. error: None on success,
    else "Retry cancelled" for a cancelled backoff, else prompt_result's
    error.message, else the retry chain's finalError, else error_message. retryable, http_status, provider, model: from
    prompt_result's error (None when absent). retries: auto_retry_start
    events seen. fleet_waits: fleet_wait events seen. cancelled: aborted, or
    the chain ended "Retry cancelled". message: the final assistant message.
    messages: agent_end's messages. prompt_result: that frame, or None.
    events: every event of the run, in order.
    """

    GOOD = ("stop", "length", "toolUse")

    def __init__(self, events, prompt_id=None):
        self.events = events
        self.prompt_result = next((ev for ev in events if is_prompt_result(ev, prompt_id)), None)
        self.message = None
        self.retries = 0
        self.fleet_waits = 0
        final_error = None
        cancelled = False
        self.messages = []
        for ev in events:
            t = ev.get("type")
            if t == "message_end" and isinstance(ev.get("message"), dict) \
                    and ev["message"].get("role") == "assistant":
                self.message = ev["message"]
            elif t == "auto_retry_start":
                self.retries += 1
            elif t == "fleet_wait":
                self.fleet_waits += 1
            elif t == "auto_retry_end":
                if ev.get("success") is False:
                    final_error = ev.get("finalError")
                    cancelled = cancelled or final_error == "Retry cancelled"
                else:
                    final_error = None
            elif t == "agent_end" and isinstance(ev.get("messages"), list):
                self.messages = ev["messages"]
        msg = self.message or {}
        self.stop_reason = msg.get("stopReason")
        self.error_message = msg.get("errorMessage")
        self.text = message_text(msg) if self.message is not None else None
        pr = self.prompt_result or {}
        perr = pr.get("error") if isinstance(pr.get("error"), dict) else {}
        self.status = pr.get("status")
        self.retryable = perr.get("retryable")
        self.http_status = perr.get("httpStatus")
        self.provider = perr.get("provider")
        self.model = perr.get("model")
        if self.status is not None:
            self.success = self.status == "completed"
            cancelled = cancelled or self.status == "aborted"
        else:
            self.success = self.stop_reason in self.GOOD
        self.cancelled = cancelled or self.stop_reason == "aborted"
        if self.success:
            self.error = None
        else:
            # A cancelled backoff says so rather than repeating the failure before it.
            self.error = ("Retry cancelled" if final_error == "Retry cancelled" else None) or \
                (perr.get("message") or final_error or self.error_message
                 or ("aborted" if self.status == "aborted" else None)
                 or "the run ended without an answer")

    def __bool__(self):
        return self.success

    def __repr__(self):
        return "Result(success=%r, status=%r, stop_reason=%r, retries=%d, text=%r, error=%r)" % (
            self.success, self.status, self.stop_reason, self.retries,
            None if self.text is None else self.text[:60], self.error)


def is_prompt_result(ev, prompt_id):
    """ev is oh-my-pi's prompt_result frame of the prompt with prompt_id."""
    return ev.get("type") == "prompt_result" and prompt_id is not None \
        and ev.get("id") == prompt_id


def run_ended(ev, prompt_id):
    """Whether ev ends the run of the prompt with prompt_id: its own
    prompt_result; or agent_end from a daemon that sends no prompt_result
    (one that does marks its agent_end with willRetry, pi 1.6's field that
    came with them)."""
    if is_prompt_result(ev, prompt_id):
        return True
    return ev.get("type") == "agent_end" and "willRetry" not in ev


def message_text(message):
    """The text blocks of a pi message, joined ("" when there are none)."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(b.get("text", "") for b in content
                   if isinstance(b, dict) and b.get("type") == "text")


def report_bad_line(why, line, on_error):
    """A stdout line that is not a JSON object: logged, and passed to
    on_error(why, line) when given; never fatal."""
    raw = line if isinstance(line, bytes) else b""
    if on_error is not None:
        try:
            on_error(why, raw)
        except Exception:  # a broken callback must not stop the reader
            log.exception("retryd: on_error callback failed")
    else:
        log.warning("%s", why)

"""The synchronous client: a daemon on pipes, two reader threads, and
blocking calls that wait for their own response."""
import collections
import os
import signal
import subprocess
import threading
import time

from . import _common as c


class Client:
    """Starts a retryd daemon and drives it.

        with retryd.Client(args=["--no-session"]) as client:
            result = client.prompt_and_wait("hello", timeout=60)
            print(result.text if result.success else result.error)

    path: the daemon (see find_daemon: path, else $RETRYD, else "retryd" on
    PATH). args: its arguments. env: names laid over this process's
    environment (None removes one). cwd: its working directory.
    ready_timeout: seconds to wait for {"type":"ready"}. request_timeout:
    default bound on each command's response (None: wait; the daemon's exit
    always ends a wait). on_error(why, line): called for a stdout line that is
    not a JSON object (default: logged on the "retryd" logger).
    max_line_bytes: longest stdout line kept (0: no limit).

    The daemon's stderr lines go to the "retryd.daemon" logger at their own
    level (warnings show by default); the last 8 KiB are in exceptions.

    Threads: any thread may send commands; events are for one consumer at a
    time (events() or prompt_and_wait()).
    """

    def __init__(self, path=None, args=(), env=None, cwd=None, ready_timeout=10,
                 request_timeout=None, on_error=None, max_line_bytes=c.DEFAULT_MAX_LINE_BYTES,
                 kill_timeout=2.0):
        self.path = c.find_daemon(path)
        self.argv = [self.path] + list(args)
        self.request_timeout = request_timeout
        self.kill_timeout = kill_timeout
        self._on_error = on_error
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._pending = c.Pending()
        self._events = collections.deque()  # (seq, event), oldest first
        self._seq = 0
        self._settled_seq = -1  # the last session_settled line's sequence number
        self._ready = False
        self._eof = False
        self._closed = False
        self._stderr = c.StderrTail()
        self._splitter = c.LineSplitter(max_line_bytes)
        # Own session and process group, as the C library does: a terminal's
        # Ctrl-C reaches this program only, and close() decides the rest.
        self._proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, env=c.build_env(env), cwd=cwd,
                                      start_new_session=True)
        self._out_thread = threading.Thread(target=self._read_stdout, name="retryd-stdout",
                                            daemon=True)
        self._err_thread = threading.Thread(target=self._read_stderr, name="retryd-stderr",
                                            daemon=True)
        self._out_thread.start()
        self._err_thread.start()
        try:
            self._wait_ready(ready_timeout)
        except BaseException:
            self._kill_now()
            raise

    # ---- lifecycle ---------------------------------------------------------

    @property
    def pid(self):
        return self._proc.pid

    @property
    def returncode(self):
        """The daemon's exit status once it exited, else None."""
        return self._proc.poll()

    def stderr_tail(self):
        """The last 8 KiB the daemon wrote on stderr."""
        return self._stderr.text()

    def close(self, timeout=5.0):
        """Ends the daemon: EOF on its stdin (it finishes what is in flight,
        a pending backoff included), up to timeout seconds for it to exit,
        then SIGTERM (it aborts at once) and, kill_timeout later, SIGKILL.
        Returns its exit status. Safe to call twice."""
        if self._closed:
            return self._proc.returncode
        self._closed = True
        self._close_stdin()
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGTERM)
            try:
                self._proc.wait(self.kill_timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self._proc.wait()
        self._join_readers()
        return self._proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None and not getattr(self, "_closed", True):
            self._kill_now()

    # ---- commands ----------------------------------------------------------

    def send(self, cmd, timeout=None):
        """Sends a command (a dict with "type"; an "id" is added unless it
        has one) and returns its response. Raises CommandError when the
        daemon refuses it, DaemonExited, Timeout."""
        resp, _ = self._request(cmd, timeout)
        return c.check_response(resp)

    def prompt(self, message, **opts):
        """Starts a run; returns the prompt's response (the run's events
        follow through events()). opts: images=, streaming_behavior=,
        retry= (retry settings for this prompt only), other fields as is."""
        return self.send(c.prompt_command(message, opts))

    def prompt_and_wait(self, message, timeout=None, **opts):
        """Sends a prompt and waits for its own prompt_result, which the
        daemon sends once the whole retry chain and the run are over (from a
        daemon without prompt_result: for the run's agent_end). Returns a
        Result. timeout bounds the whole wait (Timeout: the run goes on in
        the daemon; abort() stops it). Events that were queued before the
        prompt stay for events()."""
        deadline = None if timeout is None else time.monotonic() + timeout
        resp, seq = self._request(c.prompt_command(message, opts), timeout, check=True)
        prompt_id = resp.get("id")
        run = []
        while True:
            ev = self._next_event(deadline, after=seq)
            if ev is None:
                raise c.Timeout("no prompt_result (nor agent_end) within %ss (%d events of the "
                                "run so far)" % (timeout, len(run)))
            run.append(ev)
            if c.run_ended(ev, prompt_id):
                return c.Result(run, prompt_id)

    def wait_for_settled(self, timeout=None):
        """Waits until the session is settled: nothing runs, waits (a
        backoff, a fleet hold) or is queued. Returns at once when get_state
        says isSettled, else at the next session_settled. Timeout when
        timeout seconds pass first. Takes no event away from events()."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            mark = self._seq  # a session_settled after this one counts
        if self.get_state().get("isSettled") is True:
            return
        with self._cond:
            ok = self._cond.wait_for(lambda: self._settled_seq > mark or self._eof,
                                     None if deadline is None
                                     else max(0.0, deadline - time.monotonic()))
            settled = self._settled_seq > mark
        if settled:
            return
        if ok:
            raise self._exit_error("before the session settled")
        raise c.Timeout("no session_settled within %ss" % timeout)

    def steer(self, message, **opts):
        return self.send(dict(opts, type="steer", message=message))

    def follow_up(self, message, **opts):
        return self.send(dict(opts, type="follow_up", message=message))

    def abort(self):
        """Cancels a backoff or the running attempt, drops the queues;
        returns the list of discarded messages."""
        return c.response_data(self.send({"type": "abort"})).get("discardedMessages", [])

    def abort_retry(self):
        """Cancels a pending backoff (auto_retry_end "Retry cancelled")."""
        self.send({"type": "abort_retry"})

    def set_auto_retry(self, enabled, persist=None):
        """Turns automatic retry on or off. persist: False for this process
        only, True to write the settings file, None for the daemon's default.
        Returns the response's data ({} or {"persisted":false,"warning":...})."""
        return c.response_data(self.send(c.set_auto_retry_command(enabled, persist)))

    def get_state(self):
        return c.response_data(self.send({"type": "get_state"}))

    def get_messages(self):
        return c.response_data(self.send({"type": "get_messages"})).get("messages", [])

    def get_last_assistant_text(self):
        return c.response_data(self.send({"type": "get_last_assistant_text"})).get("text")

    def get_retry_policy(self):
        return c.response_data(self.send({"type": "get_retry_policy"})).get("policy")

    def set_retry_policy(self, policy, persist=None):
        cmd = {"type": "set_retry_policy", "policy": policy}
        if persist is not None:
            cmd["persist"] = bool(persist)
        return c.response_data(self.send(cmd))

    def new_session(self):
        return c.response_data(self.send({"type": "new_session"}))

    # ---- events ------------------------------------------------------------

    def events(self, timeout=None):
        """Yields events (every line that is not the ready line nor a
        response to a command of ours) in order. Ends when timeout seconds
        pass without one (None: no limit) or when the daemon's stdout ends."""
        while True:
            deadline = None if timeout is None else time.monotonic() + timeout
            try:
                ev = self._next_event(deadline)
            except c.DaemonExited:
                return
            if ev is None:
                return
            yield ev

    # ---- inside ------------------------------------------------------------

    def _wait_ready(self, timeout):
        with self._cond:
            self._cond.wait_for(lambda: self._ready or self._eof, timeout)
            ready, eof = self._ready, self._eof
        if ready:
            return
        if eof:
            raise self._exit_error("before it was ready")
        self._kill_now()
        raise c.Timeout("retryd did not say {\"type\":\"ready\"} within %ss (%s); killed it; "
                        "its stderr:\n%s" % (timeout, " ".join(self.argv),
                                             self.stderr_tail().strip() or "(nothing)"))

    def _request(self, cmd, timeout, check=False):
        """(response, its line's sequence number)."""
        if timeout is None:
            timeout = self.request_timeout
        with self._cond:
            cmd = self._pending.prepare(cmd)
            slot = self._pending.waiting[cmd["id"]] = []
        try:
            self._write(c.encode_command(cmd))
            with self._cond:
                self._cond.wait_for(lambda: slot or self._eof, timeout)
                done = bool(slot)
        finally:
            with self._cond:
                self._pending.waiting.pop(cmd["id"], None)
        if not done:
            if self._eof:
                raise self._exit_error("before answering %s" % cmd["type"])
            raise c.Timeout("no response to %s (id %s) within %ss" % (cmd["type"], cmd["id"],
                                                                       timeout))
        resp, seq = slot
        if check:
            c.check_response(resp)
        return resp, seq

    def _write(self, data):
        with self._write_lock:
            try:
                self._proc.stdin.write(data)
                self._proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                self._out_thread.join(self.kill_timeout)
                raise self._exit_error("(its stdin is closed)")

    def _next_event(self, deadline, after=-1):
        """The oldest queued event with a sequence number above after; None
        at the deadline; DaemonExited when none will come."""
        with self._cond:
            while True:
                for i, (seq, ev) in enumerate(self._events):
                    if seq > after:
                        del self._events[i]
                        return ev
                if self._eof:
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cond.wait(left)
        raise self._exit_error("before the run ended")

    def _read_stdout(self):
        fd = self._proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, c.READ_CHUNK)
            except OSError:
                chunk = b""
            lines = self._splitter.feed(chunk) if chunk else self._splitter.finish()
            for line in lines:
                self._dispatch(line)
            if not chunk:
                break
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _dispatch(self, line):
        obj, why = c.parse_line(line)
        if obj is None:
            if why is not None:
                c.report_bad_line(why, line, self._on_error)
            return
        with self._cond:
            self._seq += 1
            if obj.get("type") == "session_settled":
                self._settled_seq = self._seq
            if obj.get("type") == "ready" and not self._ready:
                self._ready = True
            elif obj.get("type") == "response" and obj.get("id") in self._pending.waiting \
                    and not self._pending.waiting[obj["id"]]:
                self._pending.waiting[obj["id"]].extend((obj, self._seq))
            else:
                self._events.append((self._seq, obj))
            self._cond.notify_all()

    def _read_stderr(self):
        fd = self._proc.stderr.fileno()
        while True:
            try:
                chunk = os.read(fd, c.READ_CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                break
            self._stderr.feed(chunk)
        self._stderr.finish()

    def _exit_error(self, when):
        """DaemonExited with the exit status, once the daemon is gone (a
        daemon that closed stdout but lingers is waited for kill_timeout)."""
        try:
            self._proc.wait(self.kill_timeout)
        except subprocess.TimeoutExpired:
            pass
        self._err_thread.join(self.kill_timeout)
        return c.exit_error(when, self._proc.returncode, self.stderr_tail())

    def _close_stdin(self):
        with self._write_lock:
            try:
                self._proc.stdin.close()
            except OSError:
                pass

    def _signal(self, signum):
        try:
            os.killpg(self._proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def _kill_now(self):
        self._closed = True
        self._close_stdin()
        if self._proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self._proc.wait(self.kill_timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self._proc.wait()
        self._join_readers()

    def _join_readers(self):
        self._out_thread.join(self.kill_timeout)
        self._err_thread.join(self.kill_timeout)
        for f in (self._proc.stdout, self._proc.stderr):
            try:
                f.close()
            except OSError:
                pass

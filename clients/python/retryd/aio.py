"""The asyncio client: the same calls as Client, as coroutines.

    async with retryd.AsyncClient(args=["--no-session"]) as client:
        result = await client.prompt_and_wait("hello", timeout=60)

A reader task frames stdout itself (read() in chunks, split on b"\\n"), so a
line of any size works whatever the StreamReader limit; each command waits on
its own future, matched by id.
"""
import asyncio
import collections
import os
import signal
import time

from . import _common as c


class AsyncClient:
    """The arguments are Client's. Nothing starts until start() (or
    "async with"), which spawns the daemon and waits for its ready line."""

    def __init__(self, path=None, args=(), env=None, cwd=None, ready_timeout=10,
                 request_timeout=None, on_error=None, max_line_bytes=c.DEFAULT_MAX_LINE_BYTES,
                 kill_timeout=2.0):
        self.path = c.find_daemon(path)
        self.argv = [self.path] + list(args)
        self._env = c.build_env(env)
        self._cwd = cwd
        self.ready_timeout = ready_timeout
        self.request_timeout = request_timeout
        self.kill_timeout = kill_timeout
        self._on_error = on_error
        self._splitter = c.LineSplitter(max_line_bytes)
        self._stderr = c.StderrTail()
        self._pending = c.Pending()
        self._events = collections.deque()  # (seq, event)
        self._seq = 0
        self._settled_seq = -1  # the last session_settled line's sequence number
        self._eof = False
        self._closed = False
        self._proc = None
        self._changed = None   # asyncio.Event: set when an event or EOF arrives
        self._ready = None     # future: the ready line
        self._write_lock = None
        self._tasks = []

    async def start(self):
        loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        self._ready = loop.create_future()
        self._write_lock = asyncio.Lock()
        self._proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._env, cwd=self._cwd,
            start_new_session=True)
        self._tasks = [loop.create_task(self._read_stdout()),
                       loop.create_task(self._read_stderr())]
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), self.ready_timeout)
        except asyncio.TimeoutError:
            self._ready.cancel()  # the reader must not fail a future nobody awaits
            await self._kill_now()
            raise c.Timeout("retryd did not say {\"type\":\"ready\"} within %ss (%s); killed "
                            "it; its stderr:\n%s" % (self.ready_timeout, " ".join(self.argv),
                                                     self.stderr_tail().strip() or "(nothing)"))
        except BaseException:
            self._ready.cancel()
            await self._kill_now()
            raise
        return self

    @property
    def pid(self):
        return self._proc.pid if self._proc else None

    @property
    def returncode(self):
        return self._proc.returncode if self._proc else None

    def stderr_tail(self):
        return self._stderr.text()

    async def close(self, timeout=5.0):
        """As Client.close: stdin EOF, then SIGTERM, then SIGKILL, bounded."""
        if self._closed or self._proc is None:
            return self.returncode
        self._closed = True
        self._close_stdin()
        try:
            await asyncio.wait_for(self._proc.wait(), timeout)
        except asyncio.TimeoutError:
            await self._terminate()
        await self._join_readers()
        return self._proc.returncode

    async def __aenter__(self):
        return await self.start()

    async def __aexit__(self, *exc):
        await self.close()
        return False

    # ---- commands ----------------------------------------------------------

    async def send(self, cmd, timeout=None):
        resp, _ = await self._request(cmd, timeout)
        return c.check_response(resp)

    async def prompt(self, message, **opts):
        return await self.send(c.prompt_command(message, opts))

    async def prompt_and_wait(self, message, timeout=None, **opts):
        deadline = None if timeout is None else time.monotonic() + timeout
        resp, seq = await self._request(c.prompt_command(message, opts), timeout, check=True)
        prompt_id = resp.get("id")
        run = []
        while True:
            ev = await self._next_event(deadline, after=seq)
            if ev is None:
                raise c.Timeout("no prompt_result (nor agent_end) within %ss (%d events of the "
                                "run so far)" % (timeout, len(run)))
            run.append(ev)
            if c.run_ended(ev, prompt_id):
                return c.Result(run, prompt_id)

    async def wait_for_settled(self, timeout=None):
        """Client.wait_for_settled: at once when get_state says isSettled,
        else at the next session_settled; Timeout after timeout seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        mark = self._seq  # a session_settled after this one counts
        if (await self.get_state()).get("isSettled") is True:
            return
        while self._settled_seq <= mark:
            if self._eof:
                raise await self._exit_error("before the session settled")
            self._changed.clear()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise c.Timeout("no session_settled within %ss" % timeout)
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                raise c.Timeout("no session_settled within %ss" % timeout) from None

    async def steer(self, message, **opts):
        return await self.send(dict(opts, type="steer", message=message))

    async def follow_up(self, message, **opts):
        return await self.send(dict(opts, type="follow_up", message=message))

    async def abort(self):
        resp = await self.send({"type": "abort"})
        return c.response_data(resp).get("discardedMessages", [])

    async def abort_retry(self):
        await self.send({"type": "abort_retry"})

    async def set_auto_retry(self, enabled, persist=None):
        return c.response_data(await self.send(c.set_auto_retry_command(enabled, persist)))

    async def get_state(self):
        return c.response_data(await self.send({"type": "get_state"}))

    async def get_messages(self):
        return c.response_data(await self.send({"type": "get_messages"})).get("messages", [])

    async def get_last_assistant_text(self):
        resp = await self.send({"type": "get_last_assistant_text"})
        return c.response_data(resp).get("text")

    async def get_retry_policy(self):
        return c.response_data(await self.send({"type": "get_retry_policy"})).get("policy")

    async def set_retry_policy(self, policy, persist=None):
        cmd = {"type": "set_retry_policy", "policy": policy}
        if persist is not None:
            cmd["persist"] = bool(persist)
        return c.response_data(await self.send(cmd))

    async def new_session(self):
        return c.response_data(await self.send({"type": "new_session"}))

    # ---- events ------------------------------------------------------------

    async def events(self, timeout=None):
        """async for ev in client.events(timeout=...): as Client.events."""
        while True:
            deadline = None if timeout is None else time.monotonic() + timeout
            try:
                ev = await self._next_event(deadline)
            except c.DaemonExited:
                return
            if ev is None:
                return
            yield ev

    # ---- inside ------------------------------------------------------------

    async def _request(self, cmd, timeout, check=False):
        if self._proc is None:
            raise c.RetrydError("AsyncClient is not started (await start() or use async with)")
        if timeout is None:
            timeout = self.request_timeout
        cmd = self._pending.prepare(cmd)
        fut = asyncio.get_running_loop().create_future()
        self._pending.waiting[cmd["id"]] = fut
        try:
            if self._eof:
                raise await self._exit_error("before answering %s" % cmd["type"])
            await self._write(c.encode_command(cmd))
            try:
                resp, seq = await asyncio.wait_for(asyncio.shield(fut), timeout)
            except asyncio.TimeoutError:
                raise c.Timeout("no response to %s (id %s) within %ss"
                                % (cmd["type"], cmd["id"], timeout)) from None
        finally:
            self._pending.waiting.pop(cmd["id"], None)
        if resp is None:
            raise await self._exit_error("before answering %s" % cmd["type"])
        if check:
            c.check_response(resp)
        return resp, seq

    async def _write(self, data):
        async with self._write_lock:
            try:
                self._proc.stdin.write(data)
                await self._proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError, RuntimeError, OSError):
                raise await self._exit_error("(its stdin is closed)") from None

    async def _next_event(self, deadline, after=-1):
        while True:
            for i, (seq, ev) in enumerate(self._events):
                if seq > after:
                    del self._events[i]
                    return ev
            if self._eof:
                raise await self._exit_error("before the run ended")
            self._changed.clear()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                return None

    async def _read_stdout(self):
        try:
            while True:
                chunk = await self._proc.stdout.read(c.READ_CHUNK)
                lines = self._splitter.feed(chunk) if chunk else self._splitter.finish()
                for line in lines:
                    self._dispatch(line)
                if not chunk:
                    break
        finally:
            self._eof = True
            for fut in self._pending.waiting.values():
                if not fut.done():
                    fut.set_result((None, None))
            if not self._ready.done():
                self._ready.set_exception(await self._exit_error("before it was ready"))
            self._changed.set()

    def _dispatch(self, line):
        obj, why = c.parse_line(line)
        if obj is None:
            if why is not None:
                c.report_bad_line(why, line, self._on_error)
            return
        self._seq += 1
        t = obj.get("type")
        if t == "session_settled":
            self._settled_seq = self._seq
        fut = self._pending.waiting.get(obj.get("id")) if t == "response" else None
        if t == "ready" and not self._ready.done():
            self._ready.set_result(True)
        elif fut is not None and not fut.done():
            fut.set_result((obj, self._seq))
        else:
            self._events.append((self._seq, obj))
            self._changed.set()

    async def _read_stderr(self):
        while True:
            chunk = await self._proc.stderr.read(c.READ_CHUNK)
            if not chunk:
                break
            self._stderr.feed(chunk)
        self._stderr.finish()

    async def _exit_error(self, when):
        try:
            await asyncio.wait_for(asyncio.shield(self._proc.wait()), self.kill_timeout)
        except asyncio.TimeoutError:
            pass
        err_task = self._tasks[1] if len(self._tasks) > 1 else None
        if err_task is not None and not err_task.done():
            await asyncio.wait([err_task], timeout=self.kill_timeout)
        return c.exit_error(when, self._proc.returncode, self.stderr_tail())

    def _close_stdin(self):
        try:
            self._proc.stdin.close()
        except (OSError, RuntimeError):
            pass

    def _signal(self, signum):
        if self._proc.returncode is not None:
            return
        try:
            os.killpg(self._proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    async def _terminate(self):
        self._signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self._proc.wait(), self.kill_timeout)
        except asyncio.TimeoutError:
            self._signal(signal.SIGKILL)
            await self._proc.wait()

    async def _kill_now(self):
        self._closed = True
        self._close_stdin()
        await self._terminate()
        await self._join_readers()

    async def _join_readers(self):
        pending = [t for t in self._tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=self.kill_timeout)
        for t in self._tasks:
            if not t.done():
                t.cancel()

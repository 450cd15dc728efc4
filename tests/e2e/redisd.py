"""A real redis-server for the e2e tests: a child on a free 127.0.0.1 port
(and a unix socket) in a temporary directory, no persistence, killed by PID.

    with RedisServer() as srv:                     # started, ready
        url = srv.url                              # "redis://127.0.0.1:PORT"
        srv.command("CLIENT", "PAUSE", "300")      # on a connection of its own
        srv.kill(); srv.restart()                  # same port, socket and arguments

RedisServer(extra=["--requirepass", "pw"], password="pw") passes more server
arguments (password: sent with AUTH by command()). Ready means the server
logged "Ready to accept connections" (read from its stdout, bounded: no
sleep, no connect loop). A missing redis-server raises RuntimeError: a test
that needs one fails, it is not skipped. Python 3 standard library only.
"""
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

READY_TEXT = b"Ready to accept connections"
READY_SECONDS = 10.0


def free_port():
    """A port nobody listens on now (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, extra=(), password=None):
        self.extra = list(extra)
        self.password = password
        self.port = None
        self.proc = None
        self.dir = None
        self.sock = None
        self.log = b""
        self._reader = None

    # --- lifecycle ----------------------------------------------------------

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    @property
    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    @property
    def unix_url(self):
        return "unix://%s" % self.sock

    def start(self):
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is not installed (scripts/deps.sh installs it: "
                               "apt-get install redis-server); the Redis tests need a real one")
        self.dir = tempfile.mkdtemp(prefix="retryd-redisd-")
        self.sock = os.path.join(self.dir, "redis.sock")
        for _ in range(5):
            self.port = free_port()
            if self._spawn():
                return self
            # Someone took the port between our probe and its bind: another.
            if b"already in use" not in self.log:
                break
        raise RuntimeError("redis-server did not start: %s" % self.log.decode(errors="replace"))

    def _spawn(self):
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", self.dir,
                "--unixsocket", self.sock, "--unixsocketperm", "700",
                "--logfile", "", "--daemonize", "no"] + self.extra
        self.log = b""
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, cwd=self.dir)
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + READY_SECONDS
        while READY_TEXT not in self.log:
            left = deadline - time.monotonic()
            if left <= 0:
                self._reap()
                raise RuntimeError("redis-server not ready in %.0f s: %s"
                                   % (READY_SECONDS, self.log.decode(errors="replace")))
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                self._reap()
                return False
            self.log += chunk
        # From here on its output is only drained (it must never block on a full pipe).
        self._reader = threading.Thread(target=self._drain, args=(self.proc,), daemon=True)
        self._reader.start()
        return True

    @staticmethod
    def _drain(proc):
        try:
            while proc.stdout.read(4096):
                pass
        except (OSError, ValueError):
            pass

    def _reap(self):
        if self.proc is None:
            return
        try:
            os.kill(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None
        self.proc.stdout.close()
        self.proc = None

    def kill(self):
        """SIGKILL, reaped; the directory and port stay for restart()."""
        self._reap()

    def restart(self):
        self._reap()
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        if not self._spawn():
            raise RuntimeError("redis-server did not restart on port %d: %s"
                               % (self.port, self.log.decode(errors="replace")))
        return self

    def stop(self):
        self._reap()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- a client of its own ---------------------------------------------------

    def command(self, *args, timeout=5.0):
        """Runs one command on a new connection; returns the reply: str for a
        status or bulk string, int, None, a list, or RedisError for an error."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            f = s.makefile("rb")
            if self.password is not None:
                s.sendall(_encode(["AUTH", self.password]))
                _read(f)
            s.sendall(_encode(args))
            return _read(f)


class RedisError(Exception):
    pass


def _encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def _read(f):
    line = f.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError("redis-server closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        return RedisError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2].decode(errors="replace")
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read(f) for _ in range(n)]
    raise ConnectionError("unexpected reply: %r" % line)

"""A busy fleet beside a test: other retryd daemons of the same user, in the
same runtime dir, failing sim plans (429 and 503 with retry-after) in a loop,
sharing what they see (sim.shareFleet) as a developer's test run or another
project's demo would.

A test that runs a recipe beside it shows that the recipe does not wait for
them: the simulator is private, so their blocks must not reach it.

Python:
    fleet = BusyFleet(runtime_dir).start()   # two daemons (n=2)
    ...                                      # run the recipe
    fleet.failures()                         # failed attempts they have made so far
    fleet.stop()                             # also a context manager

Command line (scripts/busy-fleet.sh runs it in the background):
    python3 busyfleet.py [--runtime-dir DIR] [--daemons N] [--binary PATH]
Runs until SIGTERM or SIGINT; prints "BUSY <pid> <pid>" once the daemons are up.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))

# One round of the loop: a rate limit and an overload, each with the
# server's wait, then a success so the next prompt starts a new chain.
ROUND = [
    {"error": "429 Too Many Requests", "status": 429, "headers": {"retry-after": "1"}},
    {"error": "503 Service Unavailable", "status": 503, "headers": {"retry-after": "1"}},
    {"text": "busy"},
]
# A plan is read once; long enough for hours of the loop.
ROUNDS = 2000


def default_binary():
    path = os.environ.get("RETRYD") or os.path.join(REPO_ROOT, "build", "retryd")
    return path if os.path.isabs(path) else os.path.join(REPO_ROOT, path)


class BusyDaemon:
    """One daemon and the thread that prompts it again after each agent_end."""

    def __init__(self, binary, runtime_dir, index):
        self.home = tempfile.mkdtemp(prefix="retryd-busy-%d-" % index)
        config = os.path.join(self.home, "config", "retryd")
        os.makedirs(config)
        with open(os.path.join(config, "settings.json"), "w") as f:
            json.dump({"sim": {"plan": ROUND * ROUNDS, "shareFleet": True},
                       "fleet": {"mode": "user"},
                       "retry": {"baseDelayMs": 200, "maxRetries": 3}}, f)
        env = dict(os.environ, HOME=self.home, XDG_CONFIG_HOME=os.path.join(self.home, "config"),
                   XDG_STATE_HOME=os.path.join(self.home, "state"))
        # None: the user's own (the fleet's /tmp/retryd-$UID without one).
        if runtime_dir is not None:
            env["XDG_RUNTIME_DIR"] = runtime_dir
        env.pop("RETRYD_LOG", None)
        self.proc = subprocess.Popen([binary, "--no-session"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.failed = 0
        self.prompts = 0
        self.stopping = False
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _prompt(self):
        self.prompts += 1
        line = {"type": "prompt", "id": "busy-%d" % self.prompts, "message": "busy"}
        try:
            self.proc.stdin.write((json.dumps(line) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            self.stopping = True

    def _loop(self):
        for raw in self.proc.stdout:
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            kind = ev.get("type")
            if kind == "ready":
                self.ready.set()
                self._prompt()
            elif kind == "auto_retry_start":
                self.failed += 1
            elif kind == "agent_end" and not self.stopping:
                self._prompt()
        self.ready.set()

    def stop(self):
        self.stopping = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.thread.join(timeout=5)
        shutil.rmtree(self.home, ignore_errors=True)


class BusyFleet:
    def __init__(self, runtime_dir, n=2, binary=None):
        self.runtime_dir = runtime_dir
        self.n = n
        self.binary = binary or default_binary()
        self.daemons = []

    def start(self):
        if self.runtime_dir is not None:
            os.makedirs(self.runtime_dir, mode=0o700, exist_ok=True)
        self.daemons = [BusyDaemon(self.binary, self.runtime_dir, i) for i in range(self.n)]
        for d in self.daemons:
            if not d.ready.wait(10) or d.proc.poll() is not None:
                self.stop()
                raise RuntimeError("busy fleet: a daemon did not start (%s)" % self.binary)
        return self

    def wait_busy(self, failures=1, timeout=10.0):
        """Waits until the daemons have failed and retried `failures` times
        in all, so their blocks are published before the recipe runs."""
        deadline = time.monotonic() + timeout
        while self.failures() < failures:
            if time.monotonic() > deadline:
                raise RuntimeError("busy fleet: no failure within %.0fs" % timeout)
            time.sleep(0.02)
        return self

    def failures(self):
        return sum(d.failed for d in self.daemons)

    def pids(self):
        return [d.proc.pid for d in self.daemons]

    def stop(self):
        for d in self.daemons:
            d.stop()
        self.daemons = []

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runtime-dir", default=os.environ.get("XDG_RUNTIME_DIR"),
                    help="default: $XDG_RUNTIME_DIR, as the user's own daemons")
    ap.add_argument("--daemons", type=int, default=2)
    ap.add_argument("--binary", default=None)
    args = ap.parse_args()
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    fleet = BusyFleet(args.runtime_dir, args.daemons, args.binary).start()
    print("BUSY %s" % " ".join(str(p) for p in fleet.pids()), flush=True)
    try:
        while not done.wait(1.0):
            if any(d.proc.poll() is not None for d in fleet.daemons):
                print("busy fleet: a daemon exited", file=sys.stderr)
                return 1
    finally:
        fleet.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

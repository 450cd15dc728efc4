#!/usr/bin/env python3
"""retryd benchmarks: one table, one check line per target.

    RETRYD=build/retryd python3 scripts/bench.py [--case NAME]... [--runs 3]
                                                 [--quick] [--no-pi] [--json FILE]
                                                 [--baseline OLD_BINARY]

--baseline measures every case on another build of retryd too, in the same
run (the two take turns case by case, each case starting with the other one
than the last), and adds a table of the rows side by side: a refactoring
shows there that no row got slower, within this machine's noise.

Every row is measured in the same run, as the median of several runs (each
run a fresh daemon unless said otherwise), next to what it is compared with:
`pi --mode rpc` (pi 0.73.1 in build/pi and pi 1.6 in build/pi16 with its
Node 22, installed by scripts/pi-install.sh; each left out when it is not
there), `cat` replaying the very bytes retryd wrote, or the
scheduled value. Rows that depend on a size N come in a series (N, 10N, 100N)
with a growth column: "t/N x1.00" is time per unit relative to the smallest N
(1.00 = linear), "RSS x1.00" peak RSS relative to the smallest N.

Cases (--case):
  startup    spawn -> {"type":"ready"} and spawn -> the response to a
             get_state written right after spawn; idle RSS after it (VmRSS).
             With the sim provider (no libcurl: src/io/curlsym.c loads it only
             for HTTP) and with an HTTP provider configured (libcurl loaded
             before ready). pi prints no ready line; its row is spawn ->
             first response. pi 1.6 gets rows of its own beside the same
             retryd runs ("..., vs pi 1.6.0").
  get_state  N get_state lines written at once (by a writer thread), time to
             the Nth response: round trips per second, N = 1,000 / 10,000 /
             100,000. One pi process answers the same batches.
  sim-relay  the sim streams N words ("w123", one text_delta each) with
             rpc.messageUpdates=delta, from the prompt to agent_end; MB/s of
             stdout against cat of the same bytes (the first run's output,
             replayed from a file into the same reader loop), the two
             taking turns, 7 of each. N = 10,000 / 100,000 / 1,000,000. Peak RSS includes the plan itself (the
             answer's text is in the settings file).
  timer      backoff timer error: two chains of 60 retries per run, delays
             cycling 5/10/20/50 ms (retry.schedule), while a busy loop holds the
             other core; error = (turn_start arrival - auto_retry_start
             arrival) - delayMs, as the reader sees it.
  abort      abort_retry sent during a 5 s backoff -> auto_retry_end read,
             100 times in one daemon.
  http-relay the fake LLM server (tests/fixtures/fake_llm_server.py, its own
             process) streams an OpenAI chat completion of N one-byte chunks;
             time from the prompt to agent_end, the daemon's CPU, stdout
             bytes, peak RSS, the text checked. retryd delta (N = 2,000 /
             20,000 / 1,000,000), retryd full (pi's shape: every update
             repeats the partial message, so N^2 output; N <= 20,000), pi
             (full; N = 2,000 / 5,000 / 20,000, under a watchdog: RSS cap
             3 GiB, 90 s), pi 1.6 (the same, N = 2,000 / 5,000), cat of
             retryd's bytes, and curl reading the
             same delta-mode answers from the server (what the server alone
             can send: the relay cannot be faster than that). The same delta
             relay with the server speaking the Gemini format
             ("google-generative-ai") and OpenAI Responses ("openai-responses":
             bigger events, the text whole again in the closing ones), each
             against cat of its own bytes, with the same targets.

Targets (the check lines; never test failures): ready < 5 ms; idle RSS
< 4 MiB; > 100,000 get_state/s pipelined; timer error p99 < 2 ms; abort
latency < 1 ms (p50; p99 shown); delta-mode relay >= 50 % of cat; memory flat
in N (the HTTP delta relay of one-byte chunks: peak RSS may grow with the
answer, which text_end, message_end, turn_end and agent_end each carry whole
and are queued together at the end, but not with the number of chunks: at
most 10 bytes of RSS per byte of answer between the smallest and the
largest N, where keeping or queueing events would cost ~100 bytes per
chunk); a cut 2,000-token answer finished by a resume or a prefill
generates <= 1.02 times the answer's tokens, by a continuation turn <=
1.10, with the final answer whole (cut-answers; replay, today's way, is
shown beside them). A missed target says by how much.

The machine may have 2 cores shared with the fake server, the reader and
other work: expect +-10-20 % between runs; compare within one run.
"""

import argparse
import re
import shutil
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "tests", "fixtures", "fake_llm_server.py")
PI_DIR = os.environ.get("PI_PREFIX") or os.path.join(ROOT, "build", "pi")
PI_CLI = os.path.join(PI_DIR, "node_modules", "@mariozechner", "pi-coding-agent", "dist",
                      "cli.js")
# pi 1.6 (npm @earendil-works/pi-coding-agent) and the Node 22 it needs, as
# PI_VERSION=1.6.0 scripts/pi-install.sh puts them in build/pi16.
PI16_DIR = os.environ.get("PI16_PREFIX") or os.path.join(ROOT, "build", "pi16")
PI16_CLI = os.path.join(PI16_DIR, "node_modules", "@earendil-works", "pi-coding-agent", "dist",
                        "bundle", "cli.js")
PI16_NODE = os.path.join(PI16_DIR, "node_modules", ".bin", "node")
CLK_TCK = os.sysconf("SC_CLK_TCK")
MIB = 1024 * 1024
MARKER = b'{"type":"agent_end"'

T_START = 30.0            # daemon start-up
T_RUN = 120.0             # one run of one N (retryd; 1,000,000 chunks take ~10 s here)
PI_T_RUN = 90.0           # pi's cap
PI_RSS_CAP = 3 * 1024 * MIB


class RunFailed(Exception):
    pass


# --------------------------------------------------------------------------
# Helpers.

def proc_status_kb(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def proc_cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK   # utime, stime
    except (OSError, ValueError, IndexError):
        return None


class FakeServerProcess:
    """tests/fixtures/fake_llm_server.py as a child process."""

    def __init__(self, plan, max_seconds):
        self.dir = tempfile.mkdtemp(prefix="bench-srv-")
        port_file = os.path.join(self.dir, "port")
        self.proc = subprocess.Popen(
            [sys.executable, SERVER, "--plan", json.dumps(plan), "--port", "0",
             "--port-file", port_file, "--max-seconds", str(int(max_seconds))],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                with open(port_file) as f:
                    text = f.read().strip()
                if text:
                    self.port = int(text)
                    break
            except (OSError, ValueError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                self.stop()
                raise RunFailed("fake server did not start: %s" % err.strip()[-300:])
            time.sleep(0.02)
        self.url = "http://127.0.0.1:%d" % self.port

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc.stderr:
            self.proc.stderr.close()
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)


def relay_plan(n):
    # The first request is the warm-up prompt's; every later one streams N chunks.
    return {"steps": [{"text": "warm"}], "default": {"text": "x", "chunks": n}}


def base_env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PI_", "OPENAI", "ANTHROPIC", "RETRYD_"))}
    # A runtime dir of its own: the fleet records of one row (a scripted
    # failure's block, a circuit opened by two builds' failures) must not
    # hold the daemons of the next.
    run = os.path.join(home, ".run")
    os.makedirs(run, mode=0o700, exist_ok=True)
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
               XDG_STATE_HOME=os.path.join(home, ".state"), XDG_RUNTIME_DIR=run, NO_COLOR="1")
    return env


def retryd_argv(retryd, url, home, mode, api="openai-completions"):
    base = url + ("/v1beta" if api == "google-generative-ai" else "/v1")
    settings = {"providers": {"fake": {"api": api, "baseUrl": base,
                                       "apiKeyEnv": "FAKE_LLM_KEY",
                                       "models": [{"id": "m1", "contextWindow": 128000}]}}}
    path = os.path.join(home, "settings.json")
    with open(path, "w") as f:
        json.dump(settings, f)
    env = base_env(home)
    env["FAKE_LLM_KEY"] = "sk-bench"
    return ([retryd, "--settings", path, "--provider", "fake", "--model", "m1",
             "--no-session", "--set", "rpc.messageUpdates=" + mode], env)


def pi_argv(url, home, node="node", cli=PI_CLI):
    agent = os.path.join(home, "agent")
    os.makedirs(agent, exist_ok=True)
    with open(os.path.join(agent, "models.json"), "w") as f:
        json.dump({"providers": {"fake": {
            "baseUrl": url + "/v1", "api": "openai-completions", "apiKey": "sk-bench",
            "models": [{"id": "m1", "name": "m1", "contextWindow": 128000, "maxTokens": 4096,
                        "reasoning": False, "input": ["text"],
                        "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                 "cacheWrite": 0}}]}}}, f)
    with open(os.path.join(agent, "settings.json"), "w") as f:
        json.dump({"retry": {"enabled": True, "maxRetries": 3, "baseDelayMs": 2000,
                             "provider": {"maxRetries": 0}},
                   "enableInstallTelemetry": False, "quietStartup": True}, f)
    env = base_env(home)
    env.update(PI_CODING_AGENT_DIR=agent, PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1",
               PI_TELEMETRY="0")
    return ([node, cli, "--mode", "rpc", "--provider", "fake", "--model", "m1",
             "--no-session", "--no-tools", "--no-extensions", "--no-skills",
             "--no-prompt-templates", "--no-themes", "--no-context-files"], env)


def drain_stream(fd, out, deadline):
    """Reads a relay's stdout up to the end of the agent_end line; returns the
    byte count. retryd's stream and cat's replay of it go through this same
    loop (1 MiB reads; the marker looked for in the new bytes only)."""
    total, tail, seen = 0, b"", False
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise RunFailed("stdout closed")
        total += len(chunk)
        if out:
            out.write(chunk)
        seen = seen or MARKER in chunk or MARKER in tail + chunk[:len(MARKER)]
        if seen and chunk.endswith(b"\n"):
            return total
        tail = chunk[-len(MARKER):]
        if time.monotonic() > deadline:
            raise RunFailed("no agent_end in time")


def read_until(fd, needle, deadline, proc):
    """Reads until needle has been seen; returns the bytes read (small replies)."""
    buf = b""
    while needle not in buf:
        if time.monotonic() > deadline:
            raise RunFailed("no %r within the start-up limit" % needle)
        chunk = os.read(fd, 65536)
        if not chunk:
            raise RunFailed("the daemon exited during start-up (status %s)" % proc.poll())
        buf += chunk
    return buf


def measure_prompt(argv, env, home, n, limit, rss_cap=None, save_to=None):
    """One fresh daemon: start, warm up with get_state, send one prompt, read
    to agent_end. Returns a dict of measurements."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=home)
    fd = proc.stdout.fileno()
    killed = []
    done = threading.Event()

    def watchdog():
        t0 = time.monotonic()
        while not done.wait(0.05):
            rss = proc_status_kb(proc.pid, "VmRSS")
            if rss_cap and rss and rss * 1024 > rss_cap:
                killed.append("killed at RSS %d MiB (cap)" % (rss // 1024))
            elif time.monotonic() - t0 > limit + T_START:
                killed.append("killed after %.0f s (cap)" % (limit + T_START))
            if killed:
                proc.kill()
                return

    wd = threading.Thread(target=watchdog, daemon=True)
    wd.start()
    try:
        proc.stdin.write(b'{"id":"w","type":"get_state"}\n')
        proc.stdin.flush()
        read_until(fd, b'"command":"get_state"', time.monotonic() + T_START, proc)
        # A one-chunk warm-up prompt, so lazy loading (pi loads its provider code
        # at the first request) and the first connection are not timed.
        proc.stdin.write(b'{"id":"w1","type":"prompt","message":"Warm up."}\n')
        proc.stdin.flush()
        got = read_until(fd, MARKER, time.monotonic() + T_START, proc)
        while b"\n" not in got[got.find(MARKER):]:
            got += read_until(fd, b"\n", time.monotonic() + T_START, proc)
        cpu0 = proc_cpu_s(proc.pid)
        t0 = time.monotonic()
        proc.stdin.write(b'{"id":"p","type":"prompt","message":"Stream it."}\n')
        proc.stdin.flush()
        total, tail, last_line = 0, b"", None
        deadline = t0 + limit
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise RunFailed(killed[0] if killed else
                                "stdout ended before agent_end (status %s)" % proc.poll())
            total += len(chunk)
            if save_to is not None:
                save_to.write(chunk)
            hay = tail + chunk
            at = hay.find(MARKER)
            if at >= 0:
                last_line = hay[at:]
                while b"\n" not in last_line:
                    more = os.read(fd, 1 << 20)
                    if not more:
                        break
                    total += len(more)
                    if save_to is not None:
                        save_to.write(more)
                    last_line += more
                break
            tail = hay[-(len(MARKER) - 1):]
            if time.monotonic() > deadline:
                raise RunFailed("no agent_end within %.0f s" % limit)
        elapsed = time.monotonic() - t0
        cpu1 = proc_cpu_s(proc.pid)
        hwm = proc_status_kb(proc.pid, "VmHWM")
    except (OSError, RunFailed) as e:
        done.set()
        proc.kill()
        proc.wait()
        if isinstance(e, RunFailed):
            raise
        raise RunFailed(killed[0] if killed else "%s" % e)
    finally:
        done.set()
    try:
        proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    line = last_line.split(b"\n", 1)[0]
    text_ok = False
    try:
        msgs = json.loads(line).get("messages") or []
        final = msgs[-1] if msgs else {}
        text = "".join(c.get("text", "") for c in final.get("content") or []
                       if c.get("type") == "text")
        text_ok = final.get("stopReason") == "stop" and text == "x" * n
    except (ValueError, AttributeError):
        pass
    return {"time": elapsed, "cpu": (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None
            else None, "bytes": total, "rss": (hwm or 0) * 1024, "ok": text_ok}


# --------------------------------------------------------------------------
# Cases.

class Case:
    """One series of the table. measure(n) returns a dict with time, cpu,
    bytes, rss (bytes) and ok, or raises RunFailed; runs is how many times each
    N is measured (the median is shown); ns_runs can override it per N."""
    name = "?"
    label = "?"
    ns = ()
    runs = None
    ns_runs = {}
    note = ""

    def available(self):
        return True, ""

    def setup(self, ctx):
        pass

    def measure(self, ctx, n):
        raise NotImplementedError


class RetrydRelay(Case):
    def __init__(self, mode, ns, api="openai-completions"):
        self.mode = mode
        self.ns = ns
        self.api = api
        # Another format's row: the same stream shape in that format's events.
        suffix = {"google-generative-ai": "-gemini", "openai-responses": "-responses"}.get(api, "")
        self.key = mode + suffix
        self.name = "relay-retryd-" + self.key
        self.label = "retryd %s" % mode + ({"-gemini": " (Gemini format)",
                                           "-responses": " (openai-responses)"}.get(suffix, ""))

    def measure(self, ctx, n):
        srv = FakeServerProcess(relay_plan(n), T_RUN + 30)
        home = tempfile.mkdtemp(prefix="bench-rd-")
        try:
            argv, env = retryd_argv(ctx["retryd"], srv.url, home, self.mode, self.api)
            save = ctx.setdefault("captures", {})
            key = (self.key, n)
            if key not in save:
                # The first run of each N also keeps its bytes for the cat baseline.
                path = os.path.join(ctx["tmp"], "out-%s-%d" % (self.key, n))
                with open(path, "wb") as f:
                    r = measure_prompt(argv, env, home, n, T_RUN, save_to=f)
                save[key] = path
                return r
            return measure_prompt(argv, env, home, n, T_RUN)
        finally:
            srv.stop()
            shutil.rmtree(home, ignore_errors=True)


class PiRelay(Case):
    name = "relay-pi"
    label = "pi 0.x (full)"
    ns = (2000, 5000, 20000)
    ns_runs = {20000: 1}
    note = "pi: watchdog RSS cap 3 GiB, 90 s"

    def available(self):
        ok, why = pi_available()
        if not ok:
            return ok, why
        try:
            with open(os.path.join(os.path.dirname(os.path.dirname(PI_CLI)),
                                   "package.json")) as f:
                self.label = "pi %s (full)" % json.load(f).get("version", "?")
        except (OSError, ValueError):
            pass
        return True, ""

    def argv(self, url, home):
        return pi_argv(url, home)

    def measure(self, ctx, n):
        srv = FakeServerProcess(relay_plan(n), PI_T_RUN + T_START + 30)
        home = tempfile.mkdtemp(prefix="bench-pi-")
        try:
            argv, env = self.argv(srv.url, home)
            return measure_prompt(argv, env, home, n, PI_T_RUN, rss_cap=PI_RSS_CAP)
        finally:
            srv.stop()
            subprocess.run(["rm", "-rf", home])


class Pi16Relay(PiRelay):
    """pi 1.6 on its Node 22; the two smaller N only (its 20,000 would add
    ~10 s and pi 0.73's row shows the N^2 growth already)."""
    name = "relay-pi16"
    label = "pi 1.x (full)"
    ns = (2000, 5000)
    ns_runs = {}

    def available(self):
        ok, why = pi16_available()
        if ok:
            self.label = "%s (full)" % pi16_label()
        return ok, why

    def argv(self, url, home):
        return pi_argv(url, home, PI16_NODE, PI16_CLI)


class CurlBaseline(Case):
    """The fake server's stream alone: curl reads the same N-chunk answer and
    throws it away, so the row shows what the server can send."""
    name = "relay-curl"
    label = "curl (the server's stream alone)"

    def __init__(self, ns):
        self.ns = ns

    def available(self):
        ok = subprocess.run(["sh", "-c", "command -v curl"], stdout=subprocess.DEVNULL).returncode == 0
        return ok, "" if ok else "curl is not installed"

    def measure(self, ctx, n):
        srv = FakeServerProcess(relay_plan(n), T_RUN + 30)
        try:
            argv = ["curl", "-sS", "-N", "-o", "/dev/null", "-w", "%{size_download}",
                    "-H", "Content-Type: application/json", "-H", "Authorization: Bearer sk-bench",
                    "-d", json.dumps({"model": "m1", "stream": True,
                                      "messages": [{"role": "user", "content": "x"}]}),
                    srv.url + "/v1/chat/completions"]
            subprocess.run(argv, stdout=subprocess.DEVNULL, timeout=T_RUN, check=True)  # the warm-up step
            t0 = time.monotonic()
            out = subprocess.run(argv, stdout=subprocess.PIPE, timeout=T_RUN, check=True)
            elapsed = time.monotonic() - t0
        except (OSError, subprocess.SubprocessError) as e:
            raise RunFailed("curl: %s" % e)
        finally:
            srv.stop()
        return {"time": elapsed, "cpu": None, "bytes": int(out.stdout or 0), "rss": None, "ok": True}


class CatBaseline(Case):
    """The bytes retryd wrote for (mode, N), replayed through cat."""

    def __init__(self, mode, ns):
        self.mode = mode
        self.ns = ns
        self.name = "relay-cat-" + mode
        self.label = "cat (retryd %s bytes)" % mode

    def measure(self, ctx, n):
        path = ctx.get("captures", {}).get((self.mode, n))
        if path is None:
            raise RunFailed("no retryd %s output for N=%d to replay" % (self.mode, n))
        size = os.path.getsize(path)
        t0 = time.monotonic()
        # "cat FILE -": after the file cat waits on stdin, so its VmHWM can be
        # read before it exits (wait4's ru_maxrss would count the forked parent).
        proc = subprocess.Popen(["cat", path, "-"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        fd = proc.stdout.fileno()
        total = 0
        while total < size:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
        elapsed = time.monotonic() - t0
        cpu = proc_cpu_s(proc.pid)
        hwm = proc_status_kb(proc.pid, "VmHWM")
        proc.stdin.close()
        proc.stdout.close()
        proc.wait(5)
        return {"time": elapsed, "cpu": cpu, "bytes": total, "rss": (hwm or 0) * 1024,
                "ok": total == size}



RELAY_DELTA_NS = (2000, 20000, 1000000)
RELAY_FULL_NS = (2000, 5000, 20000)   # N^2 output: 20,000 is ~415 MB already


# --------------------------------------------------------------------------
# Small helpers for the new cases.

def pi_available():
    if not os.path.exists(PI_CLI):
        return False, "pi is not installed (scripts/pi-install.sh puts it in build/pi)"
    try:
        subprocess.run(["node", "--version"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return False, "node is not available"
    return True, ""


def pi16_install():
    """pi 1.6 is installed for the run when it is not there yet (pi-install.sh
    says why it could not be: offline, no npm); its rows are left out then."""
    if os.path.exists(PI16_CLI) and os.access(PI16_NODE, os.X_OK):
        return
    print("bench: installing pi 1.6 to compare with (scripts/pi-install.sh)", file=sys.stderr)
    try:
        subprocess.run([os.path.join(ROOT, "scripts", "pi-install.sh")],
                       env=dict(os.environ, PI_VERSION="1.6.0", PI16_PREFIX=PI16_DIR),
                       stdout=subprocess.DEVNULL, timeout=900)
    except (OSError, subprocess.SubprocessError) as e:
        print("bench: pi-install.sh: %s" % e, file=sys.stderr)


def pi16_available():
    if not os.path.exists(PI16_CLI) or not os.access(PI16_NODE, os.X_OK):
        return False, ("pi 1.6 is not installed (PI_VERSION=1.6.0 scripts/pi-install.sh, or a "
                       "make conformance run, puts it and its Node in build/pi16)")
    try:
        subprocess.run([PI16_NODE, "--version"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return False, "build/pi16's node does not run here"
    return True, ""


def pi16_label():
    try:
        with open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(PI16_CLI))),
                               "package.json")) as f:
            return "pi %s" % json.load(f).get("version", "?")
    except (OSError, ValueError):
        return "pi 1.x"


def pi_label():
    try:
        with open(os.path.join(os.path.dirname(os.path.dirname(PI_CLI)), "package.json")) as f:
            return "pi %s" % json.load(f).get("version", "?")
    except (OSError, ValueError):
        return "pi"


def node_version(node):
    try:
        return subprocess.run([node, "--version"], stdout=subprocess.PIPE, timeout=10,
                              check=True).stdout.decode().strip().lstrip("v")
    except (OSError, subprocess.SubprocessError):
        return "?"


def quantile(values, q):
    v = sorted(values)
    if not v:
        return None
    i = min(len(v) - 1, max(0, int(round(q * (len(v) - 1)))))
    return v[i]


def fmt_ms(ms):
    if ms is None:
        return "-"
    if ms >= 100:
        return "{:,.0f} ms".format(ms)
    return "%.2f ms" % ms if ms < 10 else "%.1f ms" % ms


def fmt_rate(r):
    return "-" if r is None else "{:,.0f}/s".format(r)


def fmt_mbs(b, t):
    return "-" if not t else "%.0f MB/s" % (b / 1e6 / t)


class Tmp:
    """A throwaway directory, removed on exit."""

    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix="bench-")
        return self.path

    def __exit__(self, *exc):
        subprocess.run(["rm", "-rf", self.path])
        return False


class Daemon:
    """A process speaking the protocol on pipes, read raw (no JSON parsing,
    so the reader costs the same for every row)."""

    def __init__(self, argv, env, cwd):
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        self.fd = self.proc.stdout.fileno()
        self.buf = b""

    def write(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def line(self, deadline=None):
        """The next line (bytes, without LF) and the time it was read."""
        while b"\n" not in self.buf:
            if deadline and time.monotonic() > deadline:
                raise RunFailed("no line in time")
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise RunFailed("stdout closed (status %s)" % self.proc.poll())
            self.buf += chunk
        t = time.perf_counter()
        line, self.buf = self.buf.split(b"\n", 1)
        return line, t

    def until(self, needle, deadline=None):
        while True:
            line, t = self.line(deadline)
            if needle in line:
                return line, t

    def rss_kb(self, key="VmRSS"):
        return proc_status_kb(self.proc.pid, key)

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def sim_env(home):
    env = base_env(home)
    return env


def http_settings(home, url):
    path = os.path.join(home, "settings.json")
    with open(path, "w") as f:
        json.dump({"providers": {"fake": {"api": "openai-completions", "baseUrl": url + "/v1",
                                          "apiKeyEnv": "FAKE_LLM_KEY",
                                          "models": [{"id": "m1", "contextWindow": 128000}]}}},
                  f)
    return path


# --------------------------------------------------------------------------
# Cut answers (retry.continueCutAnswers): a 2,000-token answer cut at a
# random point, then finished by each mode. Tokens are the fake server's
# content chunks (one word each), counted from what it was asked to send.

CUT_TOKENS = 2000
CUT_MODES = [  # label, api, model, setting
    ("replay", "openai-completions", "m1", "off"),
    ("resume", "openai-responses", "gpt-4.1", "lossless"),
    ("prefill", "anthropic-messages", "claude-sonnet-4-5", "lossless"),
    ("turn", "openai-completions", "m1", "always"),
]
CUT_GOALS = {"replay": None, "resume": 1.02, "prefill": 1.02, "turn": 1.10}


def cut_answer_text(rng):
    words = ("river", "valley", "stone", "water", "carries", "slowly", "the", "a", "sediment",
             "over", "years", "and", "downstream", "erodes", "bank", "flood", "plain", "delta")
    out = []
    for i in range(CUT_TOKENS):
        w = rng.choice(words)
        out.append(w.capitalize() if i == 0 or out[-1].endswith(".") else w)
        if rng.random() < 0.08:
            out[-1] += "."
    return " ".join(out)


def cut_generated(fls, rec, answer_pieces):
    """Content chunks the fake server generated for one recorded request."""
    if rec["method"] == "GET":
        after = int(rec["path"].rsplit("starting_after=", 1)[1])
        return max(0, answer_pieces - (after - 3))
    step = fls.continued_step(rec["step"] or {}, rec["body"])
    _, n = fls.text_pieces(step)
    return min(n, int(step["dropAfterChunks"])) if "dropAfterChunks" in step else n


def cut_answers(bench):
    """One row per mode: generated tokens per answer / answer tokens, and
    the repeated text a delta client was shown."""
    import random
    sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))
    import fake_llm_server as fls
    n_runs = 20 if bench.quick else 100
    rng = random.Random(26)
    for label, api, model, setting in CUT_MODES:
        answers = [cut_answer_text(rng) for _ in range(n_runs)]
        cuts = [rng.randint(1, CUT_TOKENS - 1) for _ in range(n_runs)]
        plan = []
        for a, k in zip(answers, cuts):
            plan.append({"text": a, "dropAfterChunks": k})
            if api != "openai-responses":
                plan.append({"text": a, "continues": True})
        srv = fls.FakeServer(plan, max_seconds=600).start()
        with Tmp() as home:
            path = os.path.join(home, "settings.json")
            with open(path, "w") as f:
                json.dump({"providers": {"fake": {"api": api, "baseUrl": srv.url + "/v1", "apiKey": "k",
                                                  "models": [model]}}}, f)
            env = base_env(home)
            argv = [bench.retryd, "--provider", "fake", "--model", model, "--settings", path,
                    "--no-session", "--set", "retry.baseDelayMs=0", "--set",
                    "retry.continueCutAnswers=" + setting, "--set", "rpc.messageUpdates=delta"]
            p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=home)
            shown_extra, with_repeat, wrong = 0, 0, 0
            try:
                for i, a in enumerate(answers):
                    p.stdin.write((json.dumps({"type": "prompt", "id": "c%d" % i, "message": "q"}) + "\n").encode())
                    p.stdin.flush()
                    shown, final = [], None
                    while True:
                        line = p.stdout.readline()
                        if not line:
                            raise RunFailed("retryd exited during the cut-answers run")
                        o = json.loads(line)
                        if o.get("type") == "message_update" and \
                                o.get("assistantMessageEvent", {}).get("type") == "text_delta":
                            shown.append(o["assistantMessageEvent"]["delta"])
                        elif o.get("type") == "agent_end":
                            final = o["messages"][-1]
                            break
                    text = "".join(shown)
                    whole = "".join(c.get("text", "") for c in final.get("content", []))
                    wrong += whole != a
                    shown_extra += max(0, len(text) - len(a))
                    with_repeat += len(text) > len(a)
            finally:
                p.stdin.close()
                p.wait(timeout=30)
        recs = srv.requests()
        srv.stop()
        pieces = CUT_TOKENS
        generated = sum(cut_generated(fls, r, pieces) for r in recs
                        if (r["method"] == "POST" and r.get("api")) or "starting_after=" in r["path"])
        ratio = generated / float(pieces * n_runs)
        total_chars = sum(len(a) for a in answers)
        bench.rows.append(Row("cut-answers", "2,000-token answer cut at random, %s: generated tokens "
                              "/ answer tokens; repeated text a delta client saw" % label,
                              "{:,}".format(n_runs), "%.3f; %.2f %% of chars, %d/%d answers" % (
                                  ratio, 100.0 * shown_extra / total_chars, with_repeat, n_runs),
                              "", "", "", "", "1"))
        bench.raw.setdefault("cut-answers", {})[label] = {
            "ratio": ratio, "repeated_chars": shown_extra, "answers_with_repeat": with_repeat,
            "wrong_final": wrong, "runs": n_runs}
        goal = CUT_GOALS[label]
        if goal is not None:
            bench.checks.append(Check("cut-answers %s <= %.2f generated/answer, final answer whole" % (label, goal),
                                      "%.3f, %d wrong" % (ratio, wrong), ratio <= goal and wrong == 0,
                                      "%.3f over" % (ratio - goal)))


# --------------------------------------------------------------------------
# The table.

class Row:
    def __init__(self, case, measure, n="", value="", vs="", ratio="", growth="", rss="", runs=""):
        self.case, self.measure, self.n, self.value = case, measure, n, value
        self.vs, self.ratio, self.growth, self.rss, self.runs = vs, ratio, growth, rss, runs


class Check:
    def __init__(self, target, measured, met, miss=""):
        self.target, self.measured, self.met, self.miss = target, measured, met, miss

    def line(self):
        if self.met is None:
            return "check %s: not measured (%s)" % (self.target, self.measured)
        return "check %s: %s -- %s" % (self.target, self.measured,
                                      "met" if self.met else "MISSED, " + self.miss)


def growth(series, key, n_key="n"):
    """t/N relative to the smallest N of the series, for each entry."""
    base = series[0]
    out = []
    for r in series:
        if r.get(key) and base.get(key):
            out.append("%s x%.2f" % ("t/N", (r[key] / r[n_key]) / (base[key] / base[n_key])))
        else:
            out.append("")
    return out


# --------------------------------------------------------------------------
# Cases.

class Bench:
    def __init__(self, retryd, runs, quick, no_pi):
        self.retryd = retryd
        self.runs = runs
        self.quick = quick
        self.pi_ok, self.pi_why = (False, "left out (--no-pi)") if no_pi else pi_available()
        self.pi = pi_label() if self.pi_ok else "pi"
        self.pi16_ok, self.pi16_why = (False, "left out (--no-pi)") if no_pi else pi16_available()
        self.pi16 = pi16_label() if self.pi16_ok else "pi 1.x"
        self.rows = []
        self.checks = []
        self.notes = []
        self.raw = {}

    def say(self, what):
        print("  " + what, file=sys.stderr, flush=True)

    def case_cut_answers(self):
        cut_answers(self)

    # -- start-up and idle RSS -------------------------------------------------

    def _spawn(self, argv, env, cwd, ready):
        d = Daemon(argv, env, cwd)
        try:
            # The command goes in at once: "first response" is spawn ->
            # answer, whatever the daemon does before reading.
            d.write(b'{"id":"s","type":"get_state"}\n')
            t_ready = None
            if ready:
                line, t = d.line(time.monotonic() + T_START)
                if line != b'{"type":"ready"}':
                    raise RunFailed("first line was not ready: %r" % line[:80])
                t_ready = (t - d.t_spawn) * 1000
            line, t = d.until(b'"command":"get_state"', time.monotonic() + T_START)
            t_first = (t - d.t_spawn) * 1000
            time.sleep(0.1)
            rss = d.rss_kb() * 1024
        finally:
            d.close()
        return t_ready, t_first, rss

    def case_startup(self):
        n_rd = 3 if self.quick else 20
        with Tmp() as home:
            env = base_env(home)
            sim = [self._spawn([self.retryd, "--no-session"], env, home, True) for _ in range(n_rd)]
            self.say("startup: retryd (sim) x%d" % n_rd)
            settings = http_settings(home, "http://127.0.0.1:9")
            env_http = dict(env, FAKE_LLM_KEY="sk-bench")
            http = [self._spawn([self.retryd, "--no-session", "--settings", settings, "--provider",
                                 "fake", "--model", "m1"], env_http, home, True)
                    for _ in range(n_rd)]
            self.say("startup: retryd (HTTP provider) x%d" % n_rd)
            pi = []
            if self.pi_ok:
                n_pi = 1 if self.quick else 3
                argv, penv = pi_argv("http://127.0.0.1:9", home)
                pi = [self._spawn(argv, penv, home, False) for _ in range(n_pi)]
                self.say("startup: %s x%d" % (self.pi, n_pi))
            p16 = []
            if self.pi16_ok:
                n_pi = 1 if self.quick else 3
                argv, penv = pi_argv("http://127.0.0.1:9", home, PI16_NODE, PI16_CLI)
                p16 = [self._spawn(argv, penv, home, False) for _ in range(n_pi)]
                self.say("startup: %s x%d" % (self.pi16, n_pi))

        def med(rs, i):
            return statistics.median(r[i] for r in rs)

        ready, first, rss = med(sim, 0), med(sim, 1), med(sim, 2)
        h_ready, h_first, h_rss = med(http, 0), med(http, 1), med(http, 2)
        p_first = med(pi, 1) if pi else None
        p_rss = med(pi, 2) if pi else None
        vs_pi = "%s: no ready line" % self.pi if pi else "-"
        self.rows.append(Row("startup", "spawn -> ready (sim provider)", "", fmt_ms(ready), vs_pi,
                             runs=len(sim)))
        self.rows.append(Row("startup", "spawn -> first response (get_state, sim)", "",
                             fmt_ms(first), "%s: %s" % (self.pi, fmt_ms(p_first)) if pi else "-",
                             "%.0fx faster" % (p_first / first) if pi else "", runs=len(sim)))
        self.rows.append(Row("startup", "spawn -> ready / first response (HTTP provider, "
                             "libcurl loaded)", "", "%s / %s" % (fmt_ms(h_ready), fmt_ms(h_first)),
                             "%s: %s" % (self.pi, fmt_ms(p_first)) if pi else "-",
                             "%.0fx faster" % (p_first / h_first) if pi else "", runs=len(http)))
        self.rows.append(Row("startup", "idle RSS (sim provider)", "", "%.1f MiB" % (rss / MIB),
                             "%s: %.0f MiB" % (self.pi, p_rss / MIB) if pi else "-",
                             "%.0fx less" % (p_rss / rss) if pi else "", runs=len(sim)))
        self.rows.append(Row("startup", "idle RSS (HTTP provider)", "", "%.1f MiB" % (h_rss / MIB),
                             "%s: %.0f MiB" % (self.pi, p_rss / MIB) if pi else "-",
                             "%.0fx less" % (p_rss / h_rss) if pi else "", runs=len(http)))
        if p16:
            # pi 1.6 beside the same retryd runs: its own rows, so the ones
            # above stay as they were.
            f16, r16 = med(p16, 1), med(p16, 2)
            vs = self.pi16 + " (node %s)" % node_version(PI16_NODE)
            for what, mine, theirs, fmt, cmp in (
                    ("spawn -> first response (get_state, sim)", first, f16, fmt_ms, "faster"),
                    ("spawn -> first response (HTTP provider)", h_first, f16, fmt_ms, "faster"),
                    ("idle RSS (sim provider)", rss, r16, lambda b: "%.1f MiB" % (b / MIB), "less"),
                    ("idle RSS (HTTP provider)", h_rss, r16, lambda b: "%.1f MiB" % (b / MIB),
                     "less")):
                self.rows.append(Row("startup", what + ", vs " + self.pi16, "", fmt(mine),
                                     "%s: %s" % (vs, fmt_ms(theirs) if fmt is fmt_ms else
                                                 "%.0f MiB" % (theirs / MIB)),
                                     "%.0fx %s" % (theirs / mine, cmp), runs=len(sim)))
        elif not self.pi16_ok:
            self.notes.append("pi 1.6 rows left out: " + self.pi16_why)
        self.checks.append(Check("ready < 5 ms", fmt_ms(ready), ready < 5,
                                 "%.1fx over (by %s)" % (ready / 5, fmt_ms(ready - 5))))
        self.checks.append(Check("idle RSS < 4 MiB", "%.1f MiB" % (rss / MIB), rss < 4 * MIB,
                                 "%.1fx over (by %.1f MiB)" % (rss / (4 * MIB), (rss - 4 * MIB) / MIB)))
        self.raw["startup"] = {"sim": sim, "http": http, "pi": pi, "pi16": p16}

    # -- get_state rate --------------------------------------------------------

    @staticmethod
    def _pipelined(d, n):
        data = b'{"id":"g","type":"get_state"}\n' * n
        done = threading.Event()

        def writer():
            try:
                d.write(data)
            except OSError:
                pass
            done.set()

        t0 = time.perf_counter()
        th = threading.Thread(target=writer, daemon=True)
        th.start()
        got = d.buf.count(b"\n")
        d.buf = b""
        deadline = time.monotonic() + T_RUN
        while got < n:
            chunk = os.read(d.fd, 1 << 20)
            if not chunk:
                raise RunFailed("stdout closed")
            got += chunk.count(b"\n")
            if time.monotonic() > deadline:
                raise RunFailed("no %d responses in time" % n)
        t = time.perf_counter() - t0
        th.join()
        return n / t

    def case_get_state(self):
        ns = (1000, 10000) if self.quick else (1000, 10000, 100000)
        runs = 1 if self.quick else self.runs
        series = []
        pi_rates = {}
        with Tmp() as home:
            env = base_env(home)
            for n in ns:
                rates = []
                for _ in range(runs):
                    d = Daemon([self.retryd, "--no-session"], env, home)
                    try:
                        d.until(b'"ready"', time.monotonic() + T_START)
                        rates.append(self._pipelined(d, n))
                    finally:
                        d.close()
                series.append({"n": n, "rate": statistics.median(rates), "time": n / statistics.median(rates), "runs": runs})
                self.say("get_state: N=%d" % n)
            if self.pi_ok:
                argv, penv = pi_argv("http://127.0.0.1:9", home)
                d = Daemon(argv, penv, home)
                try:
                    d.write(b'{"id":"w","type":"get_state"}\n')
                    d.until(b'"command":"get_state"', time.monotonic() + T_START)
                    for n in ns[:2]:
                        pi_rates[n] = statistics.median(self._pipelined(d, n) for _ in range(runs))
                        self.say("get_state: %s N=%d" % (self.pi, n))
                finally:
                    d.close()
        g = growth(series, "time")
        for r, gr in zip(series, g):
            pr = pi_rates.get(r["n"])
            self.rows.append(Row("get_state", "get_state round trips, pipelined", "{:,}".format(r["n"]),
                                 fmt_rate(r["rate"]),
                                 "%s: %s" % (self.pi, fmt_rate(pr)) if pr else "-",
                                 "%.1fx" % (r["rate"] / pr) if pr else "", gr, runs=r["runs"]))
        top = series[-1]
        self.checks.append(Check("> 100,000 get_state/s pipelined",
                                 "%s at N=%s" % (fmt_rate(top["rate"]), "{:,}".format(top["n"])),
                                 top["rate"] > 100000,
                                 "%.2fx short (by %s)" % (100000 / top["rate"], fmt_rate(100000 - top["rate"]))))
        self.raw["get_state"] = {"retryd": series, "pi": pi_rates}

    # -- sim relay vs cat ------------------------------------------------------

    def _sim_relay_once(self, home, n, capture):
        words = " ".join("w%d" % i for i in range(n))
        settings = os.path.join(home, "settings-%d.json" % n)
        if not os.path.exists(settings):
            with open(settings, "w") as f:
                json.dump({"sim": {"plan": [{"text": "warm"}, {"text": words}]}}, f)
        d = Daemon([self.retryd, "--no-session", "--settings", settings,
                    "--set", "rpc.messageUpdates=delta"], base_env(home), home)
        try:
            d.until(b'"ready"', time.monotonic() + T_START)
            d.write(b'{"type":"prompt","message":"warm up"}\n')
            d.until(MARKER, time.monotonic() + T_START)
            d.buf = b""
            out = open(capture, "wb") if capture else None
            t0 = time.perf_counter()
            d.write(b'{"type":"prompt","message":"stream it"}\n')
            total = drain_stream(d.fd, out, time.monotonic() + T_RUN)
            t = time.perf_counter() - t0
            if out:
                out.close()
            hwm = d.rss_kb("VmHWM") * 1024
        finally:
            d.close()
        return {"time": t, "bytes": total, "rss": hwm}

    @staticmethod
    def _cat(path):
        # The same reader as retryd's run, so the ratio compares the writers.
        t0 = time.perf_counter()
        proc = subprocess.Popen(["cat", path], stdout=subprocess.PIPE)
        total = drain_stream(proc.stdout.fileno(), None, time.monotonic() + T_RUN)
        t = time.perf_counter() - t0
        proc.wait()
        return {"time": t, "bytes": total}

    def case_sim_relay(self):
        ns = (10000, 100000) if self.quick else (10000, 100000, 1000000)
        runs = 1 if self.quick else max(self.runs, 7)
        series = []
        with Tmp() as home:
            for n in ns:
                cap = os.path.join(home, "out-%d" % n)
                # retryd and cat take turns, so both see the same load from
                # whatever else shares the machine; 7 pairs (short runs).
                rs, cats = [self._sim_relay_once(home, n, cap)], []
                for i in range(runs):
                    cats.append(self._cat(cap))
                    if i > 0:
                        rs.append(self._sim_relay_once(home, n, None))
                series.append({"n": n, "time": statistics.median(r["time"] for r in rs),
                               "bytes": rs[0]["bytes"], "rss": statistics.median(r["rss"] for r in rs),
                               "cat": statistics.median(c["time"] for c in cats), "runs": runs})
                os.unlink(cap)
                self.say("sim relay: N=%d" % n)
        g = growth(series, "time")
        base_rss = series[0]["rss"]
        for r, gr in zip(series, g):
            share = r["cat"] / r["time"]
            self.rows.append(Row("sim-relay", "sim stream relay, delta updates (%s stdout)"
                                 % fmt_bytes(r["bytes"]), "{:,} words".format(r["n"]),
                                 "%.3f s, %s" % (r["time"], fmt_mbs(r["bytes"], r["time"])),
                                 "cat: %.3f s, %s" % (r["cat"], fmt_mbs(r["bytes"], r["cat"])),
                                 "%.0f %% of cat" % (100 * share),
                                 "%s, RSS x%.2f" % (gr, r["rss"] / base_rss), fmt_rss(r["rss"]),
                                 r["runs"]))
        top = series[-1]
        share = top["cat"] / top["time"]
        self.checks.append(Check("delta-mode relay >= 50 % of cat (sim)",
                                 "%.0f %% at %s words (%s vs %s)" % (
                                     100 * share, "{:,}".format(top["n"]),
                                     fmt_mbs(top["bytes"], top["time"]), fmt_mbs(top["bytes"], top["cat"])),
                                 share >= 0.5, "%.1fx short (%.0f points)" % (0.5 / share, 100 * (0.5 - share))))
        self.raw["sim_relay"] = series

    # -- backoff timer error ---------------------------------------------------

    def case_timer(self):
        runs = 1 if self.quick else self.runs
        k = 40 if self.quick else 60        # retry.schedule holds at most 64 delays
        chains = 1 if self.quick else 2
        cycle = [5, 10, 20, 50]
        schedule = [cycle[i % len(cycle)] for i in range(k)]
        errors = []
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            with Tmp() as home:
                for _ in range(runs):
                    plan = ([{"error": "503 Service Unavailable"}] * k + [{"text": "done"}]) * chains
                    d = Daemon([self.retryd, "--no-session", "--sim-plan", json.dumps(plan),
                                "--set", "retry.schedule=" + json.dumps(schedule),
                                "--set", "retry.maxDelayMs=60000"], base_env(home), home)
                    try:
                        d.until(b'"ready"', time.monotonic() + T_START)
                        for _ in range(chains):
                            d.write(b'{"type":"prompt","message":"q"}\n')
                            pending = None
                            deadline = time.monotonic() + T_RUN
                            while True:
                                line, t = d.line(deadline)
                                if line.startswith(b'{"type":"auto_retry_start"'):
                                    pending = (json.loads(line)["delayMs"], t)
                                elif line.startswith(b'{"type":"turn_start"') and pending:
                                    errors.append((t - pending[1]) * 1000 - pending[0])
                                    pending = None
                                elif line.startswith(MARKER):
                                    break
                    finally:
                        d.close()
        finally:
            busy.send_signal(signal.SIGKILL)
            busy.wait()
        self.say("timer: %d samples" % len(errors))
        absolute = [abs(e) for e in errors]
        p50, p99 = quantile(errors, 0.5), quantile(absolute, 0.99)
        self.rows.append(Row("timer", "backoff timer error (5-50 ms backoffs, other core busy)",
                             "{:,} retries".format(len(errors)),
                             "p50 %+.2f ms, p99 %.2f ms (absolute), max %.2f ms" % (p50, p99, max(absolute)),
                             "the scheduled delayMs", "", "", "", runs))
        self.checks.append(Check("timer error p99 < 2 ms", "p99 %.2f ms" % p99, p99 < 2,
                                 "%.1fx over (by %.2f ms)" % (p99 / 2, p99 - 2)))
        self.raw["timer"] = errors

    # -- abort_retry latency ---------------------------------------------------

    def case_abort(self):
        k = 30 if self.quick else 100
        lat = []
        with Tmp() as home:
            plan = [{"error": "503 Service Unavailable"}] * k
            d = Daemon([self.retryd, "--no-session", "--sim-plan", json.dumps(plan),
                        "--set", "retry.baseDelayMs=5000", "--set", "rpc.messageUpdates=delta"],
                       base_env(home), home)
            try:
                d.until(b'"ready"', time.monotonic() + T_START)
                for _ in range(k):
                    deadline = time.monotonic() + T_START
                    d.write(b'{"type":"prompt","message":"q"}\n')
                    d.until(b'"type":"auto_retry_start"', deadline)
                    time.sleep(0.005)
                    t0 = time.perf_counter()
                    d.write(b'{"type":"abort_retry"}\n')
                    _, t = d.until(b'"type":"auto_retry_end"', deadline)
                    lat.append((t - t0) * 1000)
                    d.until(MARKER, deadline)
            finally:
                d.close()
        self.say("abort: %d samples" % len(lat))
        p50, p99 = quantile(lat, 0.5), quantile(lat, 0.99)
        self.rows.append(Row("abort", "abort_retry -> auto_retry_end", "{:,}".format(len(lat)),
                             "p50 %.3f ms, p99 %.3f ms" % (p50, p99), "", "", "", "", 1))
        self.checks.append(Check("abort latency < 1 ms (p50)", "p50 %.3f ms (p99 %.3f ms)" % (p50, p99),
                                 p50 < 1, "%.1fx over (by %.3f ms)" % (p50, p50 - 1)))
        self.raw["abort"] = lat

    # -- HTTP stream relay -----------------------------------------------------

    def case_http_relay(self):
        runs = 1 if self.quick else self.runs
        ctx = {"retryd": self.retryd}
        with Tmp() as tmp:
            ctx["tmp"] = tmp
            series = {}
            cases = [RetrydRelay("delta", RELAY_DELTA_NS), RetrydRelay("full", RELAY_FULL_NS)]
            if self.pi_ok:
                cases.append(PiRelay())
            if self.pi16_ok:
                cases.append(Pi16Relay())
            cases += [CatBaseline("delta", RELAY_DELTA_NS), CatBaseline("full", RELAY_FULL_NS)]
            cases += [RetrydRelay("delta", RELAY_DELTA_NS, "google-generative-ai"),
                      CatBaseline("delta-gemini", RELAY_DELTA_NS),
                      RetrydRelay("delta", RELAY_DELTA_NS, "openai-responses"),
                      CatBaseline("delta-responses", RELAY_DELTA_NS)]
            curl = CurlBaseline(RELAY_DELTA_NS)
            if curl.available()[0]:
                cases.append(curl)
            for case in cases:
                case.available()
                ns = list(case.ns)
                if self.quick and len(ns) > 1:
                    ns = ns[:-1]
                rows = []
                for n in ns:
                    k = 1 if self.quick else case.ns_runs.get(n, runs)
                    results, failure = [], None
                    for i in range(k):
                        self.say("http relay: %s N=%d run %d/%d" % (case.label, n, i + 1, k))
                        try:
                            results.append(case.measure(ctx, n))
                        except RunFailed as e:
                            failure = str(e)
                            break
                    row = {"n": n, "runs": len(results), "failure": failure,
                           "ok": bool(results) and all(r["ok"] for r in results)}
                    for key in ("time", "cpu", "bytes", "rss"):
                        vals = [r[key] for r in results if r.get(key) is not None]
                        row[key] = statistics.median(vals) if vals else None
                    rows.append(row)
                    if failure:
                        break
                series[case.name] = (case, rows)
        self.raw["http_relay"] = {k: v[1] for k, v in series.items()}
        cat = {("delta", r["n"]): r for r in series.get("relay-cat-delta", (None, []))[1] if r["time"]}
        cat.update({("full", r["n"]): r for r in series.get("relay-cat-full", (None, []))[1] if r["time"]})
        for key in ("delta-gemini", "delta-responses"):
            cat.update({(key, r["n"]): r
                        for r in series.get("relay-cat-" + key, (None, []))[1] if r["time"]})
        full = {r["n"]: r for r in series.get("relay-retryd-full", (None, []))[1] if r["time"]}
        curl = {r["n"]: r for r in series.get("relay-curl", (None, []))[1] if r["time"]}
        for name in ("relay-retryd-delta", "relay-retryd-full", "relay-pi", "relay-pi16",
                     "relay-retryd-delta-gemini",
                     "relay-retryd-delta-responses"):
            if name not in series:
                continue
            case, rows = series[name]
            ok_rows = [r for r in rows if r["time"]]
            g = growth(ok_rows, "time") if ok_rows else []
            base_rss = ok_rows[0]["rss"] if ok_rows else None
            for r in rows:
                if not r["time"]:
                    self.rows.append(Row("http-relay", "HTTP relay, " + case.label, "{:,}".format(r["n"]),
                                         "FAILED: " + (r["failure"] or "?"), runs=r["runs"]))
                    continue
                gr = g[ok_rows.index(r)]
                value = "%.3f s (cpu %.2f s), %s stdout%s" % (
                    r["time"], r["cpu"] or 0, fmt_bytes(r["bytes"]), "" if r["ok"] else ", TEXT WRONG")
                vs = ratio = ""
                if name in ("relay-pi", "relay-pi16"):
                    f = full.get(r["n"])
                    if f:
                        vs = "retryd full: %.3f s, %s" % (f["time"], fmt_rss(f["rss"]))
                        ratio = "%.0fx time, %.0fx RSS" % (r["time"] / f["time"], r["rss"] / f["rss"])
                else:
                    c = cat.get((case.key, r["n"]))
                    if c:
                        vs = "cat: %.3f s" % c["time"]
                        ratio = "%.1f %% of cat" % (100 * c["time"] / r["time"])
                    u = curl.get(r["n"]) if case.key == "delta" else None
                    if u:
                        vs += "; server to curl: %.3f s (%s)" % (u["time"], fmt_bytes(u["bytes"]))
                        ratio += ", %.0f %% of curl" % (100 * u["time"] / r["time"])
                self.rows.append(Row("http-relay", "HTTP relay, " + case.label, "{:,}".format(r["n"]),
                                     value, vs, ratio,
                                     "%s, RSS x%.2f" % (gr, r["rss"] / base_rss) if base_rss else gr,
                                     fmt_rss(r["rss"]), r["runs"]))
        for key, what in (("delta", "HTTP"), ("delta-gemini", "HTTP, Gemini format"),
                          ("delta-responses", "HTTP, openai-responses")):
            self._relay_checks(series, cat, key, what)
        if not self.pi_ok:
            self.notes.append("pi rows left out: " + self.pi_why)

    def _relay_checks(self, series, cat, key, what):
        delta = [r for r in series.get("relay-retryd-" + key, (None, []))[1] if r["time"]]
        if delta:
            top = delta[-1]
            c = cat.get((key, top["n"]))
            if c:
                share = c["time"] / top["time"]
                self.checks.append(Check("delta-mode relay >= 50 %% of cat (%s)" % what,
                                         "%.1f %% at %s chunks" % (100 * share, "{:,}".format(top["n"])),
                                         share >= 0.5, "%.0fx short" % (0.5 / share)))
            lo, hi = delta[0], delta[-1]
            if hi["n"] >= 1000000:
                per_byte = (hi["rss"] - lo["rss"]) / (hi["n"] - lo["n"])   # one byte per chunk
                self.checks.append(Check(
                    "memory flat in N (%s delta relay: <= 10 B of RSS per byte of answer, "
                    "nothing per chunk)" % what,
                    "%s -> %s from %s to %s chunks: %.1f B per byte of answer" % (
                        fmt_rss(lo["rss"]), fmt_rss(hi["rss"]), "{:,}".format(lo["n"]),
                        "{:,}".format(hi["n"]), per_byte),
                    per_byte <= 10, "%.1fx over" % (per_byte / 10)))
            else:
                self.checks.append(Check("memory flat in N (%s)" % what, "needs the 1,000,000-chunk "
                                         "run (left out by --quick)", None))


# --------------------------------------------------------------------------

def fmt_bytes(b):
    if b is None:
        return "-"
    if b >= 10 * MIB:
        return "%.0f MB" % (b / 1e6)
    if b >= 1e6:
        return "%.1f MB" % (b / 1e6)
    return "%.0f kB" % (b / 1e3)


def fmt_rss(b):
    return "-" if not b else "%.1f MiB" % (b / MIB) if b < 100 * MIB else "%.0f MiB" % (b / MIB)


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d cores (nproc), %s, Linux %s" % (platform.machine(), os.cpu_count() or 0, cpu,
                                                   platform.release())


def leading_number(text):
    m = re.match(r"\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*(\S*)", text or "")
    if not m:
        return None, ""
    return float(m.group(1).replace(",", "")), m.group(2)


def speed_ratio(this, base):
    """How much faster this build is than the baseline on one row (> 1:
    faster), from the leading number of each value: a time (ms, s) is
    better lower, a rate (/s) or a share (%) better higher; None when the
    two are not comparable."""
    a, ua = leading_number(this)
    z, uz = leading_number(base)
    if a is None or z is None or ua != uz or a == 0 or z == 0:
        return None
    if ua in ("ms", "s", "s,"):
        return z / a
    if ua.endswith("/s") or ua == "%":
        return a / z
    return None


def print_against(new, old, baseline):
    """The rows of both builds side by side, matched by case, measure and N."""
    olds = {(r.case, r.measure, r.n): r for r in old.rows}
    print()
    print("Against the baseline %s (same run, taking turns case by case; speed > 1: this "
          "build is faster, < 1: slower):" % baseline)
    print()
    print("| case | measure | N | this build | baseline | speed |")
    print("| --- | --- | ---: | --- | --- | ---: |")
    for r in new.rows:
        o = olds.get((r.case, r.measure, r.n))
        if o is None:
            continue
        sp = speed_ratio(r.value, o.value)
        print("| %s | %s | %s | %s | %s | %s |" % (r.case, r.measure, r.n, r.value, o.value,
                                                   "x%.2f" % sp if sp else "-"))


CASES = ["startup", "get_state", "sim-relay", "timer", "abort", "http-relay", "cut-answers"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", default=[], choices=CASES,
                    help="only these cases (default: all)")
    ap.add_argument("--runs", type=int, default=3, help="runs per measurement (median shown)")
    ap.add_argument("--quick", action="store_true",
                    help="1 run each, fewer samples, the largest N of each series left out")
    ap.add_argument("--no-pi", action="store_true", help="leave pi out")
    ap.add_argument("--json", metavar="FILE", help="also write the raw measurements as JSON")
    ap.add_argument("--baseline", metavar="BINARY",
                    help="also measure this retryd build, side by side in the same run")
    args = ap.parse_args()

    retryd = os.path.abspath(os.environ.get("RETRYD") or os.path.join(ROOT, "build", "retryd"))
    if not os.access(retryd, os.X_OK):
        print("bench: %s is not built (make)" % retryd, file=sys.stderr)
        return 2
    if not args.no_pi:
        pi16_install()
    b = Bench(retryd, args.runs, args.quick, args.no_pi)
    old = None
    if args.baseline:
        baseline = os.path.abspath(args.baseline)
        if not os.access(baseline, os.X_OK):
            print("bench: baseline %s is not an executable" % baseline, file=sys.stderr)
            return 2
        old = Bench(baseline, args.runs, args.quick, True)
    started = time.monotonic()
    print("bench: %s; %s; median of %d run(s)" % (retryd, machine(), 1 if args.quick else args.runs),
          file=sys.stderr)
    for i, name in enumerate(c for c in CASES if not args.case or c in args.case):
        order = [b, old] if old is None or i % 2 == 0 else [old, b]
        for each in order:
            if each is not None:
                getattr(each, "case_" + name.replace("-", "_"))()

    print("Machine: %s. %s; %s." % (machine(), "pi: " + b.pi if b.pi_ok else "pi: not measured",
                                    b.pi16 if b.pi16_ok else "pi 1.6: not measured"))
    print()
    print("| case | measure | N | retryd | compared with | ratio | growth | peak RSS | runs |")
    print("| --- | --- | ---: | --- | --- | --- | --- | ---: | ---: |")
    for r in b.rows:
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r.case, r.measure, r.n, r.value, r.vs, r.ratio, r.growth, r.rss, r.runs))
    print()
    for c in b.checks:
        print(c.line())
    for note in b.notes:
        print("Note: " + note + ".")
    if old is not None:
        print_against(b, old, args.baseline)
    print("Total %.0f s." % (time.monotonic() - started))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(b.raw, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""retryd fleet benchmark (make bench-fleet): many daemons, one account.

    RETRYD=build/retryd FLEET_DRIVER=build/bench_fleet_driver \\
        python3 scripts/bench_fleet.py [--quick] [--n 50 --n 200]
            [--mode process --mode user --mode redis] [--time-scale 10]
            [--known-rpm] [--no-redis-down] [--svg FILE] [--json FILE]
            [--fleet-set KEY=VALUE]...

One run per (fleet.mode, N), one after another against the same fake
provider (scripts/fleet_provider.py, its state reset per run) and one
redis-server of our own (free 127.0.0.1 port, no persistence, killed by PID
at the end). Each run: the driver (scripts/bench_fleet_driver.c, one process,
one libuv loop, the C client library) starts N daemons and keeps each in an
agent loop (prompt -> agent_end -> think ~3 s -> next prompt) for 150
scenario seconds. The account: RPM_PER_DAEMON * N requests per minute per key
(N=200: 600 rpm, about a quarter of what the daemons ask for), a concurrency
limit (529 above it), an outage (503) from 60 s to 120 s, and key A spent
(usage limit) after about 20 s of traffic, key B behind it. Answers take 2 s.
Time is compressed: --time-scale 10 makes every scenario second 0.1 s (the
provider's RPM window is 6 s and its headers speak real time; the daemons'
retry delays are divided by the same factor). Then one more run in redis
mode with the largest N, no outage and no usage limit, where redis-server is
killed (SIGKILL) at 40 s.

Every number below is in scenario time; the measurement windows:
  dead provider  requests arriving during the outage / prompts whose run
                 overlaps it
  429s           rate-limit 429s (and 429 concurrency answers) / all requests,
                 10 s .. 60 s (the rate is learned from the first answers'
                 x-ratelimit-limit-requests, or given with --known-rpm); usage
                 limit answers are not counted here
  goodput        answers accepted (200) per second arriving 120 s .. 135 s
                 (the 15 s after the outage) / the same, 30 s .. 60 s
  exhausted key  requests with key A arriving after the first usage-limit
                 answer / key A answers in flight at that moment
  attempt lag    per attempt: provider arrival - the turn_start the driver
                 read for it (attempts held by a fleet_wait left out), p99,
                 and that minus process mode's p99 at the same N. Both ends
                 carry the reading delay of one loop serving N daemons, so
                 only the difference means anything, and at 2 cores its noise
                 is ~1 ms. A daemon-side figure, when get_state.fleet carries
                 one (any field named *p99*), is shown next to it.
  fleet rate     all requests per minute / the RPM limit: 10 s .. 60 s (main
                 runs), 50 s .. 150 s (Redis killed at 40 s)
  failed         prompts that ended without an answer (cut: still running at
                 the end, aborted, not counted); Redis down: failed after the
                 kill, and of those how many did not fail on a provider status
                 (those are the ones Redis could have caused)

Writes build/bench-fleet.svg (requests per second to the provider over time,
one line per mode at the largest N, the outage shaded, the limit drawn) and
build/bench-fleet.json (every run's provider series, prompts and metrics).
"""

import argparse
import collections
import json
import math
import os
import platform
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROVIDER = os.path.join(ROOT, "scripts", "fleet_provider.py")

# The scenario, in scenario seconds.
T_END = 150.0
OUTAGE = (60.0, 120.0)
RECOVERY = 15.0
LATENCY_N = 4         # daemons in the quiet run that times the Redis round trip
RATE_WINDOW = (10.0, 60.0)
PRE_GOODPUT = (30.0, 60.0)
USAGE_AT = 20.0            # key A runs out after about this much traffic
REDIS_KILL_AT = 40.0
REDIS_RATE_WINDOW = (50.0, T_END)
THINK_MS = 3000.0
LATENCY_MS = 2000.0
GRACE_S = 20.0
RPM_PER_DAEMON = 3         # N=200: 600 rpm, as in the issue
CONC_PER_DAEMON = 0.3      # answers in flight the account allows, per daemon (~3x the in-flight at the RPM limit)
PROBE_INTERVAL_MS = 2000.0   # fleet.probeIntervalMs's default, compressed like the rest
KEYS = {"A": "sk-fleetbench-key-a-0123456789abcdef", "B": "sk-fleetbench-key-b-0123456789abcdef"}

MODES = ("process", "user", "redis")
COLORS = {"process": "#d1495b", "user": "#2e86ab", "redis": "#3bb273", "redis-down": "#8e6c8a"}


class BenchError(Exception):
    pass


def say(msg):
    print("bench-fleet: " + msg, file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http(port, method, path, body=None, timeout=30):
    """A tiny HTTP/1.1 client for the provider's control endpoints."""
    data = json.dumps(body).encode() if body is not None else b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(("%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                   % (method, path, len(data))).encode() + data)
        chunks = []
        while True:
            c = s.recv(1 << 20)
            if not c:
                break
            chunks.append(c)
    raw = b"".join(chunks)
    head, _, payload = raw.partition(b"\r\n\r\n")
    if b" 200 " not in head.split(b"\r\n", 1)[0] + b" ":
        raise BenchError("provider %s %s: %s" % (method, path, head[:100]))
    return json.loads(payload)


# ---------------------------------------------------------------- the helpers we run

class Provider:
    def __init__(self, tmp, scale):
        port_file = os.path.join(tmp, "provider.port")
        self.err = open(os.path.join(tmp, "provider.err"), "wb")
        argv = [sys.executable, PROVIDER, "--port", "0", "--port-file", port_file,
                "--time-scale", str(scale), "--latency-ms", str(LATENCY_MS)]
        for label, secret in KEYS.items():
            argv += ["--key", "%s=%s" % (label, secret)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.err)
        deadline = time.monotonic() + 10
        while not os.path.exists(port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise BenchError("the fake provider did not start (see %s)" % self.err.name)
            time.sleep(0.02)
        with open(port_file) as f:
            self.port = int(f.read())
        self.url = "http://127.0.0.1:%d/v1" % self.port

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()


class Redis:
    """A redis-server of our own: a free loopback port, no persistence."""

    def __init__(self, tmp):
        self.exe = shutil.which("redis-server")
        self.proc = None
        if not self.exe:
            return
        self.port = free_port()
        self.log = open(os.path.join(tmp, "redis.log"), "wb")
        self.proc = subprocess.Popen(
            [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--dir", tmp],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not self.ping():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise BenchError("redis-server did not start (see %s)" % self.log.name)
            time.sleep(0.05)
        self.url = "redis://127.0.0.1:%d/0" % self.port

    def ping(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"*1\r\n$4\r\nPING\r\n")
                return s.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def clean_env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PI_", "OPENAI", "ANTHROPIC", "RETRYD_", "FLEET_KEY"))}
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
               XDG_STATE_HOME=os.path.join(home, ".state"),
               XDG_RUNTIME_DIR=os.path.join(home, ".run"), NO_COLOR="1")
    env["FLEET_KEY_A"] = KEYS["A"]
    env["FLEET_KEY_B"] = KEYS["B"]
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
    return env


# ---------------------------------------------------------------- one run

class Run:
    def __init__(self, mode, n, label=None, redis_down=False, quiet=False):
        self.mode, self.n, self.redis_down, self.quiet = mode, n, redis_down, quiet
        self.label = label or mode
        self.name = "%s-%d%s" % (mode, n, "-redis-down" if redis_down else
                                 "-latency" if quiet else "")
        self.rpm = RPM_PER_DAEMON * n
        self.concurrency = max(2, int(math.ceil(CONC_PER_DAEMON * n)))
        # The latency run: a few daemons, no fault at all, so what is timed is
        # the Redis round trip, not 200 processes sharing 2 cores.
        faults = not (redis_down or quiet)
        if quiet:
            self.rpm *= 50   # no rate limit in the way: as many asks as answers allow
        self.usage_after = int(self.rpm * USAGE_AT / 60.0) if faults else None
        self.outage = list(OUTAGE) if faults else None
        self.metrics = {}
        self.failure = None


class Bench:
    def __init__(self, args):
        self.args = args
        self.retryd = args.retryd
        self.driver = args.driver
        self.scale = args.time_scale
        self.tmp = tempfile.mkdtemp(prefix="bench-fleet-")
        self.provider = None
        self.redis = None
        self.runs = []
        self.notes = []

    def s(self, nominal_ms):
        """A scenario duration in ms, compressed."""
        return max(1, int(round(nominal_ms / self.scale)))

    def settings(self, run, rundir):
        fleet = {"mode": run.mode, "namespace": "bench-%d-%s" % (os.getpid(), run.name),
                 "probeIntervalMs": self.s(PROBE_INTERVAL_MS),
                 "concurrency": run.concurrency,
                 "minSharedBlockMs": self.s(1000)}
        if self.args.known_rpm:
            fleet["rpm"] = int(run.rpm * self.scale)
        if run.mode == "user":
            fleet["dir"] = os.path.join(rundir, "fleet")
            os.makedirs(fleet["dir"], mode=0o700)
        if run.mode == "redis":
            fleet["redis"] = {"url": self.redis.url, "timeoutMs": 50}
        for spec in self.args.fleet_set:
            key, _, value = spec.partition("=")
            try:
                value = json.loads(value)
            except ValueError:
                pass
            node = fleet
            parts = key.split(".")
            for p in parts[:-1]:
                node = node.setdefault(p, {})
            node[parts[-1]] = value
        return {
            "providers": {"fake": {"api": "openai-completions", "baseUrl": self.provider.url,
                                   "apiKeyEnv": ["FLEET_KEY_A", "FLEET_KEY_B"],
                                   "models": [{"id": "fleet-model", "contextWindow": 128000}]}},
            "retry": {"baseDelayMs": self.s(2000), "maxDelayMs": self.s(60000),
                      "usageLimitCooldownMs": self.s(1800000),
                      "fallbackCooldownMs": self.s(60000)},
            "rpc": {"messageUpdates": "delta"},
            "fleet": fleet,
        }

    def start(self):
        self.provider = Provider(self.tmp, self.scale)
        self.redis = Redis(self.tmp)
        if not self.redis.alive():
            self.notes.append("redis-server not found: the redis rows run without a server "
                              "(scripts/deps.sh installs it)")

    def stop(self):
        if self.redis:
            self.redis.stop()
        if self.provider:
            self.provider.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, run):
        rundir = os.path.join(self.tmp, run.name)
        os.makedirs(rundir)
        home = os.path.join(rundir, "home")
        os.makedirs(home)
        if run.mode == "redis" and not self.redis.alive():
            self.redis = Redis(self.tmp)
        path = os.path.join(rundir, "settings.json")
        with open(path, "w") as f:
            json.dump(self.settings(run, rundir), f, indent=1)
        log = os.path.join(rundir, "prompts.jsonl")
        argv = [self.driver, "--retryd", self.retryd, "--n", str(run.n), "--log", log,
                "--cwd", home, "--duration-ms", str(self.s(T_END * 1000)),
                # The latency run asks as often as it can: more samples.
                "--think-ms", str(self.s(0 if run.quiet else THINK_MS)), "--grace-ms", str(self.s(GRACE_S * 1000)),
                "--seed", str(self.args.seed)]
        for a in ("--settings", path, "--provider", "fake", "--model", "fleet-model",
                  "--no-session"):
            argv += ["--arg", a]
        err = open(os.path.join(rundir, "driver.err"), "wb")
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err, env=clean_env(home), cwd=home)
        lines = queue.Queue()

        def reader():
            for line in proc.stdout:
                lines.put(line.decode().strip())
            lines.put(None)

        threading.Thread(target=reader, daemon=True).start()

        def expect(word, timeout):
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                line = None
            if line is None or not line.startswith(word + " "):
                proc.kill()
                raise BenchError("%s: the driver said %r instead of %r (see %s)"
                                 % (run.name, line, word, err.name))
            return line.split()[1:]

        killer = None
        started = time.monotonic()
        try:
            ready, failed = (int(x) for x in expect("ready", 120))
            run.ready = ready
            if not ready:
                raise BenchError("%s: no daemon started (see %s)" % (run.name, err.name))
            if failed:
                self.notes.append("%s: %d of %d daemons did not start" % (run.name, failed, run.n))
            t_ready = time.monotonic() - started
            start = http(self.provider.port, "POST", "/_start", {
                "rpm": run.rpm, "concurrency": run.concurrency, "outage": run.outage,
                "usageKey": "A" if run.usage_after is not None else None,
                "usageAfter": run.usage_after})
            run.t0 = start["t0"]
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
            run.go = float(expect("go", 30)[0]) / 1000.0
            if run.redis_down:
                def kill():
                    self.redis.kill()
                    run.redis_killed_at = (time.monotonic() - run.t0) * self.scale
                killer = threading.Timer(run.t0 + REDIS_KILL_AT / self.scale - time.monotonic(),
                                         kill)
                killer.start()
            done = expect("done", T_END / self.scale + GRACE_S / self.scale + 120)
            run.done = [int(x) for x in done]
            if proc.wait(30) != 0:
                err.flush()
                with open(err.name, errors="replace") as f:
                    tail = f.read()[-400:].strip().replace("\n", " / ")
                self.notes.append("%s: the driver exited %d: %s" % (run.name, proc.returncode, tail))
        finally:
            if killer:
                killer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            err.close()
        run.wall = time.monotonic() - started
        run.t_ready = t_ready
        run.series = http(self.provider.port, "GET", "/_series")
        run.prompts, run.daemons = [], []
        with open(log) as f:
            for line in f:
                obj = json.loads(line)
                (run.prompts if obj["type"] == "prompt" else run.daemons).append(obj)
        self.measure(run)
        say("%s: %d daemons ready in %.1f s, %d prompts (%d ok, %d failed, %d cut), "
            "%d requests, %.0f s" % (run.name, run.ready, t_ready, *run.done,
                                     len(run.series["requests"]), run.wall))

    # ------------------------------------------------------------ metrics

    def measure(self, run):
        sc = self.scale
        reqs = run.series["requests"]
        # Scenario seconds after the provider's t0.
        arr = [r[0] * sc for r in reqs]
        conc429 = run.series["config"]["concStatus"] == 429
        m = run.metrics

        def in_window(t, w):
            return w[0] <= t < w[1]

        def ptime(ms):
            return (ms / 1000.0 - run.t0) * sc

        prompts = [dict(p, s0=ptime(p["t0"]), s1=ptime(p["t1"])) for p in run.prompts]
        done = [p for p in prompts if not p["cut"]]
        m["prompts"] = len(done)
        m["failed"] = sum(1 for p in done if not p["ok"])
        m["cut"] = len(prompts) - len(done)
        m["fleet_waits"] = sum(p["fleetWaits"] for p in prompts)
        m["fleet_wait_s"] = sum(p["fleetWaitMs"] for p in prompts) / 1000.0 * sc
        m["retries"] = sum(p["retries"] for p in prompts)
        m["requests"] = len(reqs)

        # Requests to the dead provider per prompt during the outage.
        if run.outage:
            o = run.outage
            n_req = sum(1 for t in arr if in_window(t, o))
            overlapping = [p for p in prompts if p["s0"] < o[1] and p["s1"] > o[0]]
            m["outage_requests"] = n_req
            m["outage_prompts"] = len(overlapping)
            m["dead_per_prompt"] = n_req / len(overlapping) if overlapping else None
            m["outage_failed"] = sum(1 for p in overlapping if not p["ok"] and not p["cut"])

        # 429s once the rate is known.
        w = REDIS_RATE_WINDOW if run.redis_down else RATE_WINDOW
        inw = [r for r, t in zip(reqs, arr) if in_window(t, w)]
        n429 = sum(1 for r in inw if r[3] == "rate" or (conc429 and r[3] == "conc"))
        m["share429"] = 100.0 * n429 / len(inw) if inw else None
        m["requests_in_rate_window"] = len(inw)
        m["rate_vs_limit"] = (len(inw) / ((w[1] - w[0]) / 60.0)) / run.rpm
        m["conc_answers"] = sum(1 for r in reqs if r[3] == "conc")

        # Goodput after the outage.
        if run.outage:
            ok_arr = [t for r, t in zip(reqs, arr) if r[3] in ("ok", "gone")]
            pre = sum(1 for t in ok_arr if in_window(t, PRE_GOODPUT)) / (PRE_GOODPUT[1] - PRE_GOODPUT[0])
            post_w = (run.outage[1], run.outage[1] + RECOVERY)
            post = sum(1 for t in ok_arr if in_window(t, post_w)) / RECOVERY
            m["goodput_pre"] = pre
            m["goodput_post"] = post
            m["goodput_pct"] = 100.0 * post / pre if pre else None
            # When goodput is back: the end of the first 5 s window after the
            # outage whose rate reaches 90 % of the pre-outage rate (a 1 s bin
            # holds 2 or 3 answers at N=50: too few to tell a rate by).
            m["goodput_90_after_s"] = None
            span = 5
            for k in range(int(RECOVERY) - span + 1):
                b = (run.outage[1] + k, run.outage[1] + k + span)
                if sum(1 for t in ok_arr if in_window(t, b)) >= 0.9 * pre * span:
                    m["goodput_90_after_s"] = float(k + span)
                    break

        # The exhausted key.
        if run.usage_after is not None:
            usage = [(r, t) for r, t in zip(reqs, arr) if r[3] == "usage"]
            if usage:
                first_r, tu = usage[0]
                tu_real = first_r[0]
                after = sum(1 for r, t in zip(reqs, arr) if r[2] == "A" and r[0] > tu_real)
                inflight = sum(1 for r in reqs if r[2] == "A" and r[3] in ("ok", "gone")
                               and r[0] <= tu_real and (r[1] is None or r[1] > tu_real))
                m["usage_at"] = tu
                m["usage_after"] = after
                m["usage_inflight"] = inflight
            else:
                m["usage_at"] = None

        # Attempt lag: provider arrival - the turn_start the driver read.
        by_prompt = {}
        for r in reqs:
            if r[4] >= 0:
                by_prompt.setdefault((r[4], r[5]), []).append(r[0] + run.t0)
        lags, skipped = [], 0
        for p in prompts:
            got = by_prompt.get((p["d"], p["p"]), [])
            starts = [t / 1000.0 for t in p["attempts"]]
            if len(got) != len(starts):
                skipped += 1
                continue
            waits = [t / 1000.0 for t in p["fleetWaitTimes"]]
            for s0, a in zip(starts, got):
                if any(s0 <= wt <= a for wt in waits):
                    continue
                lags.append((a - s0) * 1000.0)
        m["lag_n"] = len(lags)
        m["lag_skipped_prompts"] = skipped
        m["lag_p50"] = quantile(lags, 0.5)
        m["lag_p99"] = quantile(lags, 0.99)
        # A daemon-side figure, if the fleet reports one.
        best = None
        for d in run.daemons:
            for key, val in walk(d.get("fleet")):
                if "p99" in key.lower() and isinstance(val, (int, float)):
                    # In ms; a name ending in Us or Ns says microseconds or nanoseconds.
                    ms = val / 1e3 if key.endswith("Us") else val / 1e6 if key.endswith("Ns") else val
                    if best is None or ms > best[1]:
                        best = (key, ms)
        m["daemon_p99"] = best
        # The fleet's p99 over every ask of every daemon: their histograms
        # (get_state.fleet.askLatencyUs) add up; the answer is the upper
        # bound of the bucket the 99th percentile falls in.
        hist = collections.Counter()
        for d in run.daemons:
            for le, count in ((d.get("fleet") or {}).get("askLatencyUs") or {}).items():
                hist[le] += count
        total = sum(hist.values())
        if total:
            seen = 0
            bounds = sorted((int(k) for k in hist if k != "more"))
            m["pooled_p99_ms"] = None   # in the "more" bucket
            for le in bounds:
                seen += hist[str(le)]
                if seen >= 0.99 * total:
                    m["pooled_p99_ms"] = le / 1000.0
                    break
            m["asks_timed"] = total

        # Redis down.
        if run.redis_down:
            kill_at = getattr(run, "redis_killed_at", None)
            m["redis_killed_at"] = kill_at
            after = [p for p in done if kill_at is not None and p["s1"] >= kill_at]
            failed = [p for p in after if not p["ok"]]
            m["down_prompts"] = len(after)
            m["down_failed"] = len(failed)
            m["down_failed_other"] = sum(1 for p in failed
                                         if not re.match(r"^\d{3}\b", p["error"] or ""))

    # ------------------------------------------------------------ output

    def table(self):
        out = []
        out.append("| mode | N | dead provider: requests / prompt | 429s (rate known) "
                   "| goodput 15 s after outage | exhausted key: sent after / in flight "
                   "| attempt lag p99 (vs process) | fleet rate / limit | prompts failed "
                   "| fleet_wait |")
        out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        proc_lag = {r.n: r.metrics.get("lag_p99") for r in self.runs
                    if r.mode == "process" and not r.redis_down and not r.failure}
        for r in self.runs:
            m = r.metrics
            if r.failure:
                out.append("| %s | %d | FAILED: %s |  |  |  |  |  |  |  |" % (r.label, r.n, r.failure))
                continue
            if r.redis_down:
                fail = "%d of %d after the kill (%d not a provider status)" % (
                    m["down_failed"], m["down_prompts"], m["down_failed_other"])
                out.append("| %s | %d | - | %s | - | - | %s | %.2fx (after the kill) | %s | %s |" % (
                    r.label, r.n, pct(m["share429"]), lag_cell(m, None), m["rate_vs_limit"],
                    fail, waits(m)))
                continue
            dead = ("%.2f (%d / %d)" % (m["dead_per_prompt"], m["outage_requests"],
                                        m["outage_prompts"])
                    if m.get("dead_per_prompt") is not None else "-")
            good = ("%.0f %% (%.1f / %.1f per s%s)" % (
                m["goodput_pct"], m["goodput_post"], m["goodput_pre"],
                ", 90 %% after %.0f s" % m["goodput_90_after_s"]
                if m["goodput_90_after_s"] is not None else ", never 90 %")
                if m.get("goodput_pct") is not None else "-")
            usage = ("%d / %d" % (m["usage_after"], m["usage_inflight"])
                     if m.get("usage_at") is not None else "no usage limit answer")
            base = proc_lag.get(r.n) if r.mode != "process" else None
            out.append("| %s | %d | %s | %s | %s | %s | %s | %.2fx | %d of %d (%d in the outage) | %s |"
                       % (r.label, r.n, dead, pct(m["share429"]), good, usage, lag_cell(m, base),
                          m["rate_vs_limit"], m["failed"], m["prompts"], m.get("outage_failed", 0),
                          waits(m)))
        return "\n".join(out)

    def checks(self):
        lines = []
        main = [r for r in self.runs if not r.redis_down and not r.failure and not r.quiet]
        proc = {r.n: r for r in main if r.mode == "process"}
        fleet = [r for r in main if r.mode != "process"]

        def line(target, key, ok, fmt, runs=None):
            runs = fleet if runs is None else runs
            vals = [(r, r.metrics.get(key)) for r in runs]
            vals = [(r, v) for r, v in vals if v is not None]
            if not vals:
                lines.append("check %s: not measured" % target)
                return
            met = all(ok(v) for _, v in vals)
            shown = ", ".join("%s N=%d %s" % (r.mode, r.n, fmt(v)) for r, v in vals)
            pv = ", ".join("N=%d %s" % (n, fmt(p.metrics[key])) for n, p in sorted(proc.items())
                           if p.metrics.get(key) is not None)
            lines.append("check %s: %s (process: %s) -- %s" % (
                target, shown, pv or "-", "PASS" if met else "FAIL"))

        line("dead provider requests per prompt <= 1.1", "dead_per_prompt",
             lambda v: v <= 1.1, lambda v: "%.2f" % v)
        line("429s <= 1 % of requests once the rate is known", "share429",
             lambda v: v <= 1.0, lambda v: "%.1f %%" % v)
        # "Within 15 s": the goodput is back to 90 % of the pre-outage rate
        # over a 5 s window that ends no later than 15 s after the outage (the
        # 15 s average is in the table: a backlog drains at the same limit).
        for r in main:
            if r.outage and r.metrics.get("goodput_pre"):
                back = r.metrics.get("goodput_90_after_s")
                r.metrics["goodput_back_s"] = back if back is not None else float("inf")
        line(">= 90 % of pre-outage goodput within 15 s after the outage", "goodput_back_s",
             lambda v: v <= RECOVERY, lambda v: "back after %.0f s" % v if v != float("inf")
             else "not back")
        for r in main:
            m = r.metrics
            if m.get("usage_at") is not None:
                m["usage_ok"] = (m["usage_after"], m["usage_inflight"])
        line("requests with the exhausted key after its first usage-limit answer <= those in flight",
             "usage_ok", lambda v: v[0] <= v[1], lambda v: "%d vs %d" % v)
        # Added latency: only the daemon can time its fleet decision to the
        # millisecond; the driver's differential (redis lag p99 minus
        # process lag p99 at the same N) is shown but is no 1 ms instrument.
        redis_runs = [r for r in self.runs if r.quiet and not r.failure] or \
            [r for r in main if r.mode == "redis"]
        for r in redis_runs:
            if r.metrics.get("asks_timed"):
                v = r.metrics.get("pooled_p99_ms")
                r.metrics["added_p99"] = v if v is not None else float("inf")
            elif r.metrics.get("daemon_p99"):
                r.metrics["added_p99"] = r.metrics["daemon_p99"][1]
        if any(r.metrics.get("added_p99") is not None for r in redis_runs):
            line("added latency per attempt p99 <= 1 ms with Redis on loopback (every ask of "
                 "every daemon, get_state.fleet.askLatencyUs: the p99's bucket bound)",
                 "added_p99", lambda v: v <= 1.0, lambda v: "%.3f ms" % v, redis_runs)
        else:
            diffs = ["redis N=%d %+.1f ms" % (r.n, r.metrics["lag_p99"] - proc[r.n].metrics["lag_p99"])
                     for r in redis_runs if r.n in proc and r.metrics.get("lag_p99") is not None
                     and proc[r.n].metrics.get("lag_p99") is not None]
            lines.append("check added latency per attempt p99 <= 1 ms with Redis on loopback: not "
                         "measured (needs a daemon-side figure in get_state.fleet, a field named "
                         "*p99*; the driver's attempt-lag p99 difference to process mode, %s, has "
                         "tens of ms of reading noise)" % (", ".join(diffs) or "-"))
        down = [r for r in self.runs if r.redis_down and not r.failure]
        line("with Redis down, 0 prompts fail because of it", "down_failed_other",
             lambda v: v == 0, lambda v: "%d" % v, down)
        for r in main:
            r.metrics["rate_limit_ratio"] = r.metrics["rate_vs_limit"]
        for r in down:
            r.metrics["rate_limit_ratio"] = r.metrics["rate_vs_limit"]
        line("with Redis down, the fleet's rate <= 1.5x the limit", "rate_limit_ratio",
             lambda v: v <= 1.5, lambda v: "%.2fx" % v, down)
        return lines

    def svg(self, path):
        runs = [r for r in self.runs if not r.redis_down and not r.failure]
        if not runs:
            return
        n = max(r.n for r in runs)
        runs = [r for r in runs if r.n == n]
        down = [r for r in self.runs if r.redis_down and not r.failure]
        with open(path, "w") as f:
            f.write(plot(runs + down, self.scale, n))


# ---------------------------------------------------------------- small helpers

def quantile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo = int(math.floor(k))
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def walk(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from walk(v, prefix + "." + k if prefix else k)
    else:
        yield prefix, obj


def pct(v):
    return "-" if v is None else "%.1f %%" % v


def waits(m):
    if not m["fleet_waits"]:
        return "none"
    return "%d (%.0f s)" % (m["fleet_waits"], m["fleet_wait_s"])


def lag_cell(m, base):
    if m.get("lag_p99") is None:
        return "-"
    s = "%.2f ms" % m["lag_p99"]
    if base is not None:
        s += " (%+.2f)" % (m["lag_p99"] - base)
    if m.get("daemon_p99"):
        s += "; daemon %s %.3f ms" % m["daemon_p99"]
    return s


# ---------------------------------------------------------------- the picture

def smooth(ys, k):
    out = []
    for i in range(len(ys)):
        lo, hi = max(0, i - k), min(len(ys), i + k + 1)
        out.append(sum(ys[lo:hi]) / (hi - lo))
    return out


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def nice_step(span, target=6):
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def plot(runs, scale, n):
    """Requests per second to the provider over scenario time, one line per
    run; written by hand so the bench needs no plotting library."""
    W, H = 960, 460
    L, R, T, B = 70, 190, 56, 58
    pw, ph = W - L - R, H - T - B
    lines = []
    ymax = 0.0
    for r in runs:
        bins = r.series["bins"]["kind"]
        nb = len(bins["ok"])
        total = [sum(bins[k][i] for k in bins) for i in range(nb)]
        per_s = [c / (r.series["binMs"] / 1000.0 * scale) for c in total]
        # A centred mean over ~5 scenario seconds.
        k = max(1, int(round(2.0 / (r.series["binMs"] / 1000.0 * scale))))
        ys = smooth(per_s, k)
        xs = [(i + 0.5) * r.series["binMs"] / 1000.0 * scale for i in range(nb)]
        pts = [(x, y) for x, y in zip(xs, ys) if x <= T_END - 1]
        lines.append((r, pts))
        ymax = max([ymax] + [y for _, y in pts])
    limit = runs[0].rpm / 60.0
    ymax = max(ymax, limit * 1.2)
    ystep = nice_step(ymax)
    ymax = math.ceil(ymax / ystep) * ystep
    xmax = T_END
    xstep = 30.0

    def X(x):
        return L + pw * min(x, xmax) / xmax

    def Y(y):
        return T + ph - ph * min(y, ymax) / ymax

    o = []
    o.append('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
             'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif">'
             % (W, H, W, H))
    o.append('<rect width="100%" height="100%" fill="#ffffff"/>')
    o.append('<text x="%d" y="26" font-size="17" font-weight="600" fill="#222">'
             '%d daemons, one account: requests per second to the provider</text>' % (L, n))
    o.append('<text x="%d" y="44" font-size="12" fill="#666">make bench-fleet; limit %d rpm '
             'per key, answers take %.0f s, think %.0f s; scenario time (run %g&#215; faster)'
             '</text>' % (L, runs[0].rpm, LATENCY_MS / 1000, THINK_MS / 1000, scale))
    # Outage.
    if any(r.outage for r in runs):
        o.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f4d6d6" opacity="0.6"/>'
                 % (X(OUTAGE[0]), T, X(OUTAGE[1]) - X(OUTAGE[0]), ph))
        o.append('<text x="%.1f" y="%d" font-size="12" fill="#a33" text-anchor="middle">'
                 'provider outage (503)</text>' % ((X(OUTAGE[0]) + X(OUTAGE[1])) / 2, T + 16))
        o.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#dcefdc" opacity="0.6"/>'
                 % (X(OUTAGE[1]), T, X(OUTAGE[1] + RECOVERY) - X(OUTAGE[1]), ph))
        o.append('<text x="%.1f" y="%d" font-size="11" fill="#3a7a3a" text-anchor="middle">'
                 'recovery 15 s</text>' % ((X(OUTAGE[1]) + X(OUTAGE[1] + RECOVERY)) / 2, T + 30))
    # Grid and axes.
    y = 0.0
    while y <= ymax + 1e-9:
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e6e6e6"/>'
                 % (L, L + pw, Y(y), Y(y)))
        o.append('<text x="%d" y="%.1f" font-size="11" fill="#555" text-anchor="end">%s</text>'
                 % (L - 8, Y(y) + 4, ("%g" % y)))
        y += ystep
    x = 0.0
    while x <= xmax + 1e-9:
        o.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#f0f0f0"/>'
                 % (X(x), X(x), T, T + ph))
        o.append('<text x="%.1f" y="%d" font-size="11" fill="#555" text-anchor="middle">%g</text>'
                 % (X(x), T + ph + 18, x))
        x += xstep
    o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#444"/>' % (L, L + pw, T + ph, T + ph))
    o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#444"/>' % (L, L, T, T + ph))
    o.append('<text x="%.1f" y="%d" font-size="12" fill="#333" text-anchor="middle">'
             'time (scenario seconds)</text>' % (L + pw / 2, H - 14))
    o.append('<text transform="translate(18 %.1f) rotate(-90)" font-size="12" fill="#333" '
             'text-anchor="middle">requests / s (all answers)</text>' % (T + ph / 2))
    # The limit.
    o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#222" stroke-width="1.5" '
             'stroke-dasharray="7 5"/>' % (L, L + pw, Y(limit), Y(limit)))
    o.append('<text x="%d" y="%.1f" font-size="11" fill="#222" text-anchor="end">RPM limit '
             '(%d/min)</text>' % (L + pw - 4, Y(limit) - 6, runs[0].rpm))
    # Key A spent (first run that saw it).
    for r in runs:
        tu = r.metrics.get("usage_at")
        if tu is not None:
            o.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#999" '
                     'stroke-dasharray="2 3"/>' % (X(tu), X(tu), T, T + ph))
            o.append('<text x="%.1f" y="%d" font-size="11" fill="#777">key A spent</text>'
                     % (X(tu) + 4, T + ph - 8))
            break
    # Redis killed.
    for r in runs:
        if r.redis_down and r.metrics.get("redis_killed_at") is not None:
            xk = X(r.metrics["redis_killed_at"])
            o.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" '
                     'stroke-dasharray="2 3"/>' % (xk, xk, T, T + ph, COLORS["redis-down"]))
            o.append('<text x="%.1f" y="%d" font-size="11" fill="%s">redis-server killed</text>'
                     % (xk + 4, T + ph - 22, COLORS["redis-down"]))
    # The lines.
    o.append('<clipPath id="plot"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath>'
             % (L, T, pw, ph))
    for r, pts in lines:
        color = COLORS["redis-down" if r.redis_down else r.mode]
        d = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", X(x), Y(y))
                     for i, (x, y) in enumerate(pts))
        dash = ' stroke-dasharray="5 3"' if r.redis_down else ""
        o.append('<path d="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round" '
                 'clip-path="url(#plot)"%s/>' % (d, color, dash))
    # Legend.
    ly = T + 8
    o.append('<text x="%d" y="%d" font-size="12" font-weight="600" fill="#333">fleet.mode</text>'
             % (L + pw + 20, ly + 4))
    for r, _ in lines:
        ly += 22
        color = COLORS["redis-down" if r.redis_down else r.mode]
        dash = ' stroke-dasharray="5 3"' if r.redis_down else ""
        o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"%s/>'
                 % (L + pw + 20, L + pw + 44, ly, ly, color, dash))
        label = ("redis, redis-server killed at %.0f s (no outage)" % REDIS_KILL_AT
                 if r.redis_down else r.label)
        for j, part in enumerate(wrap(label, 20)):
            o.append('<text x="%d" y="%d" font-size="12" fill="#333">%s</text>'
                     % (L + pw + 50, ly + 4 + 14 * j, esc(part)))
        ly += 14 * (len(wrap(label, 20)) - 1)
    o.append("</svg>\n")
    return "\n".join(o)


def wrap(s, width):
    words, out, cur = s.split(), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            out.append(cur)
            cur = w
        else:
            cur = (cur + " " + w).strip()
    if cur:
        out.append(cur)
    return out


def machine():
    # One description of this machine for both benches (scripts/bench.py).
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench
    return bench.machine()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="N=50 only and time compressed x20 (~1 min)")
    ap.add_argument("--n", type=int, action="append", help="daemons per run (default 50 and 200)")
    ap.add_argument("--mode", action="append", choices=MODES, help="default: all three")
    ap.add_argument("--time-scale", type=float, help="default 10 (--quick: 20)")
    ap.add_argument("--known-rpm", action="store_true",
                    help="give the daemons fleet.rpm instead of letting them learn it")
    ap.add_argument("--no-redis-down", action="store_true", help="leave out the Redis-down run")
    ap.add_argument("--fleet-set", action="append", default=[], metavar="KEY=VALUE",
                    help="one more fleet.* setting for every run (KEY without 'fleet.')")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--svg", default=os.path.join(ROOT, "build", "bench-fleet.svg"))
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench-fleet.json"))
    args = ap.parse_args()
    args.retryd = os.path.abspath(os.environ.get("RETRYD") or os.path.join(ROOT, "build", "retryd"))
    args.driver = os.path.abspath(os.environ.get("FLEET_DRIVER")
                                  or os.path.join(ROOT, "build", "bench_fleet_driver"))
    for exe, how in ((args.retryd, "make"), (args.driver, "make build/bench_fleet_driver")):
        if not os.access(exe, os.X_OK):
            print("bench-fleet: %s is not built (%s)" % (exe, how), file=sys.stderr)
            return 2
    if args.time_scale is None:
        args.time_scale = 20.0 if args.quick else 10.0
    ns = args.n or ([50] if args.quick else [50, 200])
    modes = args.mode or list(MODES)

    b = Bench(args)
    started = time.monotonic()
    say("%s; %s; time x%g" % (args.retryd, machine(), args.time_scale))
    try:
        b.start()
        plan = [Run(mode, n) for n in ns for mode in modes]
        if not args.no_redis_down and "redis" in modes:
            plan.append(Run("redis", max(ns), label="redis, server killed", redis_down=True))
        if "redis" in modes:
            plan.append(Run("redis", LATENCY_N, label="redis, latency", quiet=True))
        for run in plan:
            b.runs.append(run)
            try:
                b.run(run)
            except BenchError as e:
                run.failure = str(e)
                say(str(e))
    finally:
        b.stop()

    print("Machine: %s. Time compressed x%g; rate %s." % (
        machine(), args.time_scale,
        "given (fleet.rpm)" if args.known_rpm else "learned from x-ratelimit-limit-requests"))
    print()
    print(b.table())
    print()
    for c in b.checks():
        print(c)
    for note in b.notes:
        print("Note: " + note + ".")
    if any(r.mode != "process" and not r.failure and not r.metrics.get("fleet_waits")
           for r in b.runs):
        print("Note: a user or redis run without a single fleet_wait: that mode behaves as "
              "process mode in this build.")
    b.svg(args.svg)
    print("Plot: %s. Raw: %s. Total %.0f s." % (os.path.relpath(args.svg, ROOT),
                                               os.path.relpath(args.json, ROOT),
                                               time.monotonic() - started))
    with open(args.json, "w") as f:
        json.dump([{"name": r.name, "mode": r.mode, "n": r.n, "redisDown": r.redis_down,
                    "failure": r.failure, "metrics": r.metrics,
                    "series": getattr(r, "series", None), "prompts": getattr(r, "prompts", None),
                    "daemons": getattr(r, "daemons", None)} for r in b.runs], f)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""retryd benchmarks: one markdown table, one line of summary.

    RETRYD=build/retryd python3 scripts/bench.py [--case NAME]... [--runs 3]
                                                 [--quick] [--no-pi] [--json FILE]

The table is built from CASES, a list of Case objects; each case measures one
series (one daemon, one setting) over a list of sizes N. Later issues add
cases to the list; the table, the medians and the growth columns come for free.

Issue 4's case, the HTTP stream relay: the fake LLM server
(tests/fixtures/fake_llm_server.py, its own process so it never competes with
this script for the GIL) streams an OpenAI chat completion of N chunks, each
the delta "x" ({"text": "x", "chunks": N}), and the daemon relays it to its
stdout as message_update events. Measured per run, from writing the prompt to
reading agent_end (each run is a fresh daemon; its start-up and a one-chunk
warm-up prompt come first and are not timed):
  time     wall seconds
  cpu      the daemon's user+system CPU seconds in that window (/proc/PID/stat)
  stdout   bytes the daemon wrote for the prompt
  RSS      the daemon's peak resident set (/proc/PID/status VmHWM, read at agent_end)
and the final text is checked (agent_end must carry all N "x"s).
Each cell is the median of --runs runs (3). Growth columns compare each N with
the smallest N of the same series:
  t/N rel  (time/N) / (time/N at the smallest N): 1.0 means linear time,
           N/N0 means quadratic
  RSS rel  RSS / RSS at the smallest N: 1.0 means flat memory
Series:
  retryd delta  rpc.messageUpdates=delta, N = 2,000 / 20,000 / 1,000,000
  retryd full   pi's shape (every update repeats the whole partial message),
                N = 2,000 / 5,000 / 20,000 only: the output grows with N^2
                (~415 MB at 20,000; 1,000,000 would be ~100 TB)
  pi            real `pi --mode rpc` from build/pi (scripts/pi-install.sh), when
                installed: N = 2,000 / 5,000 (3 runs) and 20,000 (1 run), under a
                watchdog (RSS cap 3 GiB, 90 s) so it cannot take the machine down;
                the ratio column is pi / retryd full at the same N
  cat           the floor: the bytes retryd wrote for that N, replayed from a file
                through `cat` into the same reader
The first run of each retryd N also saves its bytes for the cat row (the
median absorbs that). The machine this runs on may have 2 cores shared with the fake server and this
script, so the numbers are noisy (+-10-20 %); compare within one run.
"""

import argparse
import json
import os
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
CLK_TCK = os.sysconf("SC_CLK_TCK")
MIB = 1024 * 1024
MARKER = b'{"type":"agent_end"'

T_START = 30.0            # daemon start-up
T_RUN = 120.0             # one run of one N (retryd; 1,000,000 chunks take ~15 s here)
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
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
               XDG_STATE_HOME=os.path.join(home, ".state"), NO_COLOR="1")
    return env


def retryd_argv(retryd, url, home, mode):
    settings = {"providers": {"fake": {"api": "openai-completions", "baseUrl": url + "/v1",
                                       "apiKeyEnv": "FAKE_LLM_KEY",
                                       "models": [{"id": "m1", "contextWindow": 128000}]}}}
    path = os.path.join(home, "settings.json")
    with open(path, "w") as f:
        json.dump(settings, f)
    env = base_env(home)
    env["FAKE_LLM_KEY"] = "sk-bench"
    return ([retryd, "--settings", path, "--provider", "fake", "--model", "m1",
             "--no-session", "--set", "rpc.messageUpdates=" + mode], env)


def pi_argv(url, home):
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
    return (["node", PI_CLI, "--mode", "rpc", "--provider", "fake", "--model", "m1",
             "--no-session", "--no-tools", "--no-extensions", "--no-skills",
             "--no-prompt-templates", "--no-themes", "--no-context-files"], env)


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
    def __init__(self, mode, ns):
        self.mode = mode
        self.ns = ns
        self.name = "relay-retryd-" + mode
        self.label = "retryd %s" % mode

    def measure(self, ctx, n):
        srv = FakeServerProcess(relay_plan(n), T_RUN + 30)
        home = tempfile.mkdtemp(prefix="bench-rd-")
        try:
            argv, env = retryd_argv(ctx["retryd"], srv.url, home, self.mode)
            save = ctx.setdefault("captures", {})
            key = (self.mode, n)
            if key not in save:
                # The first run of each N also keeps its bytes for the cat baseline.
                path = os.path.join(ctx["tmp"], "out-%s-%d" % (self.mode, n))
                with open(path, "wb") as f:
                    r = measure_prompt(argv, env, home, n, T_RUN, save_to=f)
                save[key] = path
                return r
            return measure_prompt(argv, env, home, n, T_RUN)
        finally:
            srv.stop()
            for name in os.listdir(home):
                os.unlink(os.path.join(home, name))
            os.rmdir(home)


class PiRelay(Case):
    name = "relay-pi"
    label = "pi 0.x (full)"
    ns = (2000, 5000, 20000)
    ns_runs = {20000: 1}
    note = "pi: watchdog RSS cap 3 GiB, 90 s"

    def available(self):
        if not os.path.exists(PI_CLI):
            return False, "pi is not installed (scripts/pi-install.sh puts it in build/pi)"
        try:
            subprocess.run(["node", "--version"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            return False, "node is not available"
        try:
            with open(os.path.join(os.path.dirname(os.path.dirname(PI_CLI)),
                                   "package.json")) as f:
                self.label = "pi %s (full)" % json.load(f).get("version", "?")
        except (OSError, ValueError):
            pass
        return True, ""

    def measure(self, ctx, n):
        srv = FakeServerProcess(relay_plan(n), PI_T_RUN + T_START + 30)
        home = tempfile.mkdtemp(prefix="bench-pi-")
        try:
            argv, env = pi_argv(srv.url, home)
            return measure_prompt(argv, env, home, n, PI_T_RUN, rss_cap=PI_RSS_CAP)
        finally:
            srv.stop()
            subprocess.run(["rm", "-rf", home])


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

CASES = [
    RetrydRelay("delta", RELAY_DELTA_NS),
    RetrydRelay("full", RELAY_FULL_NS),
    PiRelay(),
    CatBaseline("delta", RELAY_DELTA_NS),
    CatBaseline("full", RELAY_FULL_NS),
]


# --------------------------------------------------------------------------
# The table.

def fmt_n(n):
    return "{:,}".format(n)


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


def fmt_s(t):
    if t is None:
        return "-"
    return "%.3f" % t if t < 10 else "%.1f" % t


def median_of(results, key):
    vals = [r[key] for r in results if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", default=[],
                    help="only these cases: " + ", ".join(c.name for c in CASES))
    ap.add_argument("--runs", type=int, default=3, help="runs per N (median shown)")
    ap.add_argument("--quick", action="store_true",
                    help="1 run each and the largest N of each series left out")
    ap.add_argument("--no-pi", action="store_true", help="leave pi out")
    ap.add_argument("--json", metavar="FILE", help="also write every run as JSON")
    args = ap.parse_args()

    retryd = os.path.abspath(os.environ.get("RETRYD") or os.path.join(ROOT, "build", "retryd"))
    if not os.access(retryd, os.X_OK):
        print("bench: %s is not built (make)" % retryd, file=sys.stderr)
        return 2
    cases = [c for c in CASES if not args.case or c.name in args.case]
    if args.no_pi:
        cases = [c for c in cases if not isinstance(c, PiRelay)]
    # The cat rows replay what the retryd rows wrote.
    for c in list(cases):
        if isinstance(c, CatBaseline) and not any(
                isinstance(r, RetrydRelay) and r.mode == c.mode for r in cases):
            cases.remove(c)

    tmp = tempfile.mkdtemp(prefix="bench-")
    ctx = {"retryd": retryd, "tmp": tmp}
    started = time.monotonic()
    rows, notes, everything = [], [], []
    print("bench: %s, %d cores, median of %d run(s); every run is a fresh daemon"
          % (retryd, os.cpu_count() or 0, 1 if args.quick else args.runs), file=sys.stderr)
    try:
        for case in cases:
            ok, why = case.available()
            if not ok:
                notes.append("%s: skipped, %s" % (case.label, why))
                continue
            ns = list(case.ns)
            if args.quick and len(ns) > 1:
                ns = ns[:-1]
            series = []
            for n in ns:
                runs = 1 if args.quick else case.ns_runs.get(n, case.runs or args.runs)
                results, failure = [], None
                for i in range(runs):
                    print("  %-24s N=%-9s run %d/%d" % (case.label, fmt_n(n), i + 1, runs),
                          file=sys.stderr, flush=True)
                    try:
                        r = case.measure(ctx, n)
                    except RunFailed as e:
                        failure = str(e)
                        break
                    results.append(r)
                    everything.append(dict(r, case=case.name, n=n, run=i + 1))
                row = {"case": case, "n": n, "runs": len(results), "failure": failure}
                for key in ("time", "cpu", "bytes", "rss"):
                    row[key] = median_of(results, key)
                row["ok"] = bool(results) and all(r["ok"] for r in results)
                series.append(row)
                if failure:
                    everything.append({"case": case.name, "n": n, "failure": failure})
                    break       # larger N only gets worse
            base = next((r for r in series if r["time"] and not r["failure"]), None)
            for r in series:
                if base and r["time"] and r is not base:
                    r["t_rel"] = (r["time"] / r["n"]) / (base["time"] / base["n"])
                    r["rss_rel"] = r["rss"] / base["rss"] if base["rss"] and r["rss"] else None
                elif r is base:
                    r["t_rel"], r["rss_rel"] = 1.0, 1.0
            rows.extend(series)
            if case.note:
                notes.append(case.note)
    finally:
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)

    # pi / retryd full at the same N.
    full = {r["n"]: r for r in rows if isinstance(r["case"], RetrydRelay)
            and r["case"].mode == "full" and r["time"]}
    for r in rows:
        if isinstance(r["case"], PiRelay) and r["time"] and r["n"] in full:
            f = full[r["n"]]
            r["ratio"] = "%.1fx time, %.0fx RSS" % (r["time"] / f["time"], r["rss"] / f["rss"])

    sys.stderr.flush()
    print()
    print("| case | N | time s | cpu s | stdout | peak RSS | t/N rel | RSS rel | pi / retryd full"
          " | runs | text ok |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |")
    for r in rows:
        if r["failure"] and not r["time"]:
            print("| %s | %s | %s | | | | | | | %d | %s |" % (
                r["case"].label, fmt_n(r["n"]), "FAILED: " + r["failure"], r["runs"], "-"))
            continue
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |" % (
            r["case"].label, fmt_n(r["n"]), fmt_s(r["time"]), fmt_s(r["cpu"]),
            fmt_bytes(r["bytes"]), fmt_rss(r["rss"]),
            "%.2f" % r["t_rel"] if r.get("t_rel") else "",
            "%.2f" % r["rss_rel"] if r.get("rss_rel") else "",
            r.get("ratio", ""), r["runs"],
            "yes" if r["ok"] else "NO" + (" (%s)" % r["failure"] if r["failure"] else "")))
    print()
    print("t/N rel: time per chunk relative to the smallest N of the series (1.00 = linear); "
          "RSS rel: peak RSS relative to the smallest N (1.00 = flat). "
          "retryd full stops at 20,000: its output grows with N^2. "
          "Medians; 2-core machine shared with the fake server and the reader, so +-10-20 %% "
          "noise. Total %.0f s." % (time.monotonic() - started))
    for note in notes:
        print("Note: " + note + ".")

    summary = summary_line(rows)
    if summary:
        print()
        print(summary)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1)
    bad = [r for r in rows if isinstance(r["case"], (RetrydRelay, CatBaseline))
           and (r["failure"] or not r["ok"])]
    return 1 if bad else 0


def summary_line(rows):
    def find(cls, mode=None, n=None, last=False):
        rs = [r for r in rows if isinstance(r["case"], cls) and r["time"]
              and (mode is None or getattr(r["case"], "mode", None) == mode)
              and (n is None or r["n"] == n)]
        return (rs[-1] if last else rs[0]) if rs else None

    parts = []
    d = find(RetrydRelay, "delta", last=True)
    if d:
        parts.append("retryd (delta) relays %s chunks in %.2f s (%.0f k chunks/s, t/N x%.2f of "
                     "the smallest N) with %s peak RSS (x%.2f)" % (
                         fmt_n(d["n"]), d["time"], d["n"] / d["time"] / 1000,
                         d.get("t_rel") or 1, fmt_rss(d["rss"]), d.get("rss_rel") or 1))
        c = next((r for r in rows if isinstance(r["case"], CatBaseline)
                  and r["case"].mode == "delta" and r["n"] == d["n"] and r["time"]), None)
        if c:
            parts.append("cat moves the same %s in %.2f s" % (fmt_bytes(c["bytes"]), c["time"]))
    f = find(RetrydRelay, "full", last=True)
    if f:
        parts.append("full mode writes %s for %s chunks (N^2) in %.1f s at %s" % (
            fmt_bytes(f["bytes"]), fmt_n(f["n"]), f["time"], fmt_rss(f["rss"])))
    p = [r for r in rows if isinstance(r["case"], PiRelay)]
    pok = [r for r in p if r["time"]]
    if pok:
        r = pok[-1]
        parts.append("pi at %s chunks: %.1f s, %s%s" % (
            fmt_n(r["n"]), r["time"], fmt_rss(r["rss"]),
            " (%s retryd full)" % r["ratio"] if r.get("ratio") else ""))
    pfail = [r for r in p if r["failure"]]
    if pfail:
        parts.append("pi failed at %s chunks: %s" % (fmt_n(pfail[0]["n"]), pfail[0]["failure"]))
    return ("Summary: " + "; ".join(parts) + ".") if parts else ""


if __name__ == "__main__":
    sys.exit(main())

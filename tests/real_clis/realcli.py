"""What every real-CLI test shares: the installed CLI, a sandbox home, the
fake LLM server on 127.0.0.1, and retryd spawned with the CLI's built-in
profile pointed at that server.

The CLIs come from scripts/real-clis.sh (make real-clis), which installs the
pinned npm packages (the Makefile's REAL_CLIS) and exports REAL_CLIS_BIN. A
test of a CLI that is not installed is skipped, saying why. Each test gets a
private HOME, XDG dirs and runtime dir, so no CLI reads or writes the user's
own configuration and no daemon shares fleet state with another test."""
import glob
import json
import os
import shutil
import signal
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))

import harness  # noqa: E402
from fake_llm_server import FakeServer  # noqa: E402
from harness import text_of  # noqa: E402

# Every CLI is told there is no network beyond the server: no telemetry, no
# update check, no error reporting, no proxy.
OFFLINE_ENV = {
    "DO_NOT_TRACK": "1",
    "NO_UPDATE_NOTIFIER": "1",
    "NPM_CONFIG_UPDATE_NOTIFIER": "false",
    "NO_PROXY": "*",
    "http_proxy": None, "https_proxy": None, "HTTP_PROXY": None, "HTTPS_PROXY": None,
    "ALL_PROXY": None,
}


def of_type(msgs, t):
    return [m for m in msgs if m.get("type") == t]


def assistant_ends(msgs):
    return [m["message"] for m in msgs
            if m.get("type") == "message_end" and m["message"]["role"] == "assistant"]


def message_deltas(msgs):
    """The text deltas of each assistant message, in order: a list of lists."""
    out = []
    for m in msgs:
        t = m.get("type")
        if t == "message_start" and m["message"]["role"] == "assistant":
            out.append([])
        elif t == "message_update" and m["assistantMessageEvent"].get("type") == "text_delta":
            out[-1].append(m["assistantMessageEvent"]["delta"])
    return out


def cli_bin(name):
    """The installed CLI's entry point, or SkipTest saying why there is none."""
    d = os.environ.get("REAL_CLIS_BIN")
    if not d:
        raise unittest.SkipTest("REAL_CLIS_BIN is not set: run these through make real-clis")
    path = os.path.join(d, name)
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest("%s is not installed in %s" % (name, d))
    return path


def package_version(package):
    """The installed version of an npm package (from the install tree), or None."""
    d = os.environ.get("REAL_CLIS_BIN")
    if not d:
        return None
    pj = os.path.join(os.path.dirname(d), package, "package.json")
    try:
        with open(pj) as f:
            return json.load(f).get("version")
    except (OSError, ValueError):
        return None


def isolated():
    """Whether the run is in a network namespace of its own (loopback only)."""
    return os.environ.get("REAL_CLIS_NETNS") == "1"


class RealCliCase(harness.DaemonTestCase):
    """A test of one CLI. Subclasses set CLI (the profile and binary name)."""

    CLI = None

    def setUp(self):
        self.bin = cli_bin(self.CLI)
        self.tmp = tempfile.mkdtemp(prefix="retryd-real-%s-" % self.CLI)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.home = os.path.join(self.tmp, "home")
        self.work = os.path.join(self.tmp, "work")
        for d in (self.home, self.work):
            os.makedirs(d, mode=0o700)

    def fake_server(self, plan=None):
        srv = FakeServer(plan=plan or [], max_seconds=600)
        srv.start()
        self.addCleanup(srv.stop)
        return srv

    def base_env(self):
        """The environment of the daemon (and so of the CLI it spawns)."""
        env = dict(OFFLINE_ENV)
        # The daemon gets private XDG config, state and runtime dirs from
        # the e2e harness; HOME is the test's, so a test can write the
        # CLI's own configuration there before it starts.
        env.update({
            "HOME": self.home,
            "XDG_DATA_HOME": os.path.join(self.home, ".local", "share"),
            "XDG_CACHE_HOME": os.path.join(self.home, ".cache"),
            "PATH": os.path.dirname(self.bin) + os.pathsep + os.environ.get("PATH", ""),
        })
        return env

    def daemon(self, sets=None, env=None, args=()):
        """retryd with the CLI's built-in profile, run in the work dir."""
        s = {"providers.%s.command" % self.CLI: self.bin, "retry.baseDelayMs": 50}
        s.update(sets or {})
        e = self.base_env()
        e.update(env or {})
        return self.spawn(args=("--no-session", "--provider", self.CLI) + tuple(args), sets=s,
                          env=e, cwd=self.work)

    def stats(self):
        return self.d.request({"type": "get_session_stats"})["data"]["retry"]

    @staticmethod
    def classify(d, text):
        return d.request({"type": "classify_error", "message": text})["data"]["errorClass"]

    def kill_leftovers(self):
        """SIGKILL to whatever process still runs with this test's HOME (a CLI
        a test left behind)."""
        mark = ("HOME=%s" % self.home).encode()
        for env_path in glob.glob("/proc/[0-9]*/environ"):
            pid = int(env_path.split("/")[2])
            if pid == os.getpid():
                continue
            try:
                with open(env_path, "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if mark in env:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


    @staticmethod
    def of_type(msgs, t):
        return of_type(msgs, t)

    @staticmethod
    def assistant_ends(msgs):
        return assistant_ends(msgs)

    def final(self, msgs):
        return self.assistant_ends(msgs)[-1]

    def check_answer(self, msgs, text):
        """The last assistant message is text, once; no delta or message of the
        run holds it twice."""
        final = self.final(msgs)
        self.assertEqual(final["stopReason"], "stop", final.get("errorMessage"))
        self.assertEqual(text_of(final), text)
        for m in self.assistant_ends(msgs):
            self.assertLessEqual(text_of(m).count(text), 1, "doubled text: %r" % text_of(m))
        deltas = [m["assistantMessageEvent"]["delta"] for m in msgs
                  if m.get("type") == "message_update"
                  and m["assistantMessageEvent"].get("type") == "text_delta"]
        for delta in deltas:
            self.assertLessEqual(delta.count(text), 1, "doubled delta: %r" % delta)
        self.assertLessEqual("".join(deltas).count(text), 1,
                             "the answer streamed twice: %r" % deltas)

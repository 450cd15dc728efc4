#!/usr/bin/env python3
"""Side by side with pi: run the same fault plans against retryd and against the
real `pi --mode rpc` (pi 1.6.0 and 0.73.1), normalise the event streams and show
the differences.

    RETRYD=build/retryd python3 scripts/conformance.py [--plan NAME]... [--raw DIR]
                                      [--pi VERSION]... [--no-install] [--self-test]

The first pi release (1.6.0) is printed side by side with retryd; the others
(0.73.1) are judged the same way and shown in full only when they differ
beyond the documented rules. Differences from pi 1.6: protocol/README.md 17.1.

Each plan gets its own FakeServer (tests/fixtures/fake_llm_server.py) per side,
so both daemons see the same scripted responses. The same command script is
sent to both. The streams are normalised: timestamps, session ids, usage
numbers (but in the "compareUsage" plans) and durations are dropped; event order, types, roles, stopReasons,
error messages, text, the retry fields and the command responses are kept.

Then the documented differences (protocol/README.md §17, DESIGN.md §2, issue
4) are applied one rule at a time (RULES below): each rule first checks that
both streams show the documented behaviour, then rewrites one side as if that
difference did not exist. Whatever still differs afterwards is UNDOCUMENTED
and the script exits 1; so does a plan that fails to show the improvement it
is there for ("expect"), or a daemon that misses a step (every wait is
bounded). --self-test then plants differences in the recorded streams and
checks that each one is caught. The whole run takes ~90 s on a busy 2-core
machine (plus ~2 min for the first npm installs).

pi is installed by scripts/pi-install.sh (npm): 0.73.1 into build/pi, 1.6.0
with its Node 22 into build/pi16. A release that cannot be installed (the npm
registry unreachable) is left out, saying so; with none the run says
"skipped", exit 0.

How pi is pointed at the fake server (per run, in a throwaway directory):
    HOME=$TMP  PI_CODING_AGENT_DIR=$TMP/agent  PI_OFFLINE=1
    $TMP/agent/models.json    {"providers": {"fake": {"baseUrl": "<server>/v1" (Gemini plans: /v1beta),
                               "api": "openai-completions", "apiKey": "sk-fake",
                               "models": [{"id": "m1", ...}]}}}
    $TMP/agent/settings.json  {"retry": {"enabled": true, "maxRetries": 3,
                               "baseDelayMs": B, "provider": {"maxRetries": 0}}}
    node build/pi/.../dist/cli.js --mode rpc --provider fake --model m1 --no-session
         (pi 1.6: build/pi16/node_modules/.bin/node .../dist/bundle/cli.js)
         --no-tools --no-extensions --no-skills --no-prompt-templates --no-themes
         --no-context-files        (cwd $TMP, so no AGENTS.md is found)
A plan with "api" runs both sides with that provider api instead
(openai-responses: baseUrl <server>/v1; azure-openai-responses: <server>/openai/v1,
so both build /openai/v1/responses?api-version=v1); the fake server speaks the
matching dialect by path.
retry.provider.maxRetries 0 turns off the OpenAI SDK's own hidden retries
(2 by default), which would otherwise absorb the faults before pi's session
retry sees them.
"""

import argparse
import copy
import re
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

# The pi releases compared, newest first: the first gets the full side by
# side, the others their verdict and what differs (--pi, or CONFORMANCE_PI as
# "1.6.0 0.73.1"). scripts/pi-install.sh installs each (PI_VERSION) and
# prints its package directory and the node that runs it.
PI_VERSIONS = (os.environ.get("CONFORMANCE_PI") or "1.6.0 0.73.1").split()
PI_ENTRY = {"0": "dist/cli.js", "1": "dist/bundle/cli.js"}     # by major: package.json "bin"
PI = {}     # version -> {"version", "dir", "node", "cli"}, filled by install_pi
PI_FLAGS = ["--no-session", "--no-tools", "--no-extensions", "--no-skills",
            "--no-prompt-templates", "--no-themes", "--no-context-files"]
PROVIDER = "fake"
MODEL = {"id": "m1", "name": "m1", "contextWindow": 128000, "maxTokens": 4096}
API_KEY = "sk-fake-conformance"
MAX_RETRIES = 3

# Every wait is bounded by one of these (seconds).
T_START = 30.0      # process start-up (pi loads ~200 modules: 1-3 s here)
T_EVENT = 15.0      # one expected event
T_SETTLE = 0.6      # silence that counts as "nothing more is coming"
T_EXIT = 5.0        # exit after stdin EOF, before SIGKILL
T_PLAN = 40.0       # one whole plan on one side


# --------------------------------------------------------------------------
# The plans. A script is a list of steps:
#   ("send", {...command...})         write one command line
#   ("wait", PRED, "what")            until an event matches (T_EVENT)
#   ("settle",)                       until the prompt's chain is over: the last
#                                     event is agent_end or auto_retry_end and
#                                     T_SETTLE of silence followed
#   ("quiet",)                        until T_SETTLE passes without a line
#   ("sleep", seconds)
# Commands carry ids c0, c1, ... so responses line up on both sides.
# "expect" names the documented improvements the plan must show: a plan where
# retryd behaves like pi after all (a regression) fails too.

def is_type(t):
    return lambda ev: ev.get("type") == t


def is_response(cmd_id):
    return lambda ev: ev.get("type") == "response" and ev.get("id") == cmd_id


PROMPT = {"id": "c0", "type": "prompt", "message": "Say hello."}
GET_STATE = {"id": "c9", "type": "get_state"}

PLANS = [
    {
        "name": "a-503-then-ok",
        "expect": ["one agent_end per prompt"],
        "what": "503 then success",
        "plan": [{"status": 503}, {"text": "hello from the fake server"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "b-429-retry-after",
        "expect": ["Retry-After honoured", "one agent_end per prompt"],
        "what": "429 with retry-after: 1, then success",
        "plan": [{"status": 429, "headers": {"retry-after": "1"}},
                 {"text": "hello after the rate limit"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "c-max-exceeded",
        "expect": ["one agent_end per prompt"],
        "what": "503 x 4: retries exhausted",
        "plan": [{"status": 503, "times": 4}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "d-drop-mid-stream",
        "expect": ["truncated stream retried"],
        "what": "stream dropped after 3 chunks (eof, no terminal marker), then success",
        "plan": [{"text": "one two three four five six", "dropAfterChunks": 3,
                  "dropMode": "eof"},
                 {"text": "one two three four five six"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "e-401",
        "expect": [],
        "what": "401 (not retryable)",
        "plan": [{"status": 401, "message": "Invalid API key"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "f-prompt-during-backoff",
        "expect": ["busy prompt refused", "one agent_end per prompt"],
        "what": "503, then a second prompt (no streamingBehavior) during the backoff",
        "baseDelayMs": 1000,
        "plan": [{"status": 503}, {"text": "hello after the backoff"}],
        "script": [("send", PROMPT),
                   ("wait", is_type("auto_retry_start"), "auto_retry_start"),
                   ("sleep", 0.2),
                   ("send", {"id": "c2", "type": "prompt", "message": "Second prompt."}),
                   ("wait", is_response("c2"), "response to the second prompt"),
                   ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    # OpenAI Responses (api openai-responses; Azure's as pi builds its URL):
    # the same server in that dialect, pi's OpenAI SDK on one side.
    {
        "name": "h-responses-ok",
        "api": "openai-responses",
        "expect": [],
        "what": "openai-responses: a streamed answer",
        # No word ends in "s" at a delta's end: the key masker holds a possible
        # "sk-" back to the next delta, in every format.
        "plan": [{"text": "hello from the openai response api", "inputTokens": 12,
                  "outputTokens": 5}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "i-responses-failed-then-ok",
        "api": "openai-responses",
        "expect": ["one agent_end per prompt"],
        "what": "openai-responses: response.failed (server_error) mid-stream, then success",
        "plan": [{"text": "one two three", "errorAfterChunks": 2,
                  "streamError": {"code": "server_error",
                                  "message": "The server had an error processing your request."}},
                 {"text": "one two three"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "j-responses-429-then-ok",
        "api": "openai-responses",
        "expect": ["Retry-After honoured", "one agent_end per prompt"],
        "what": "openai-responses: 429 with retry-after: 1, then success",
        "plan": [{"status": 429, "headers": {"retry-after": "1"}},
                 {"text": "hello after the rate limit"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "k-responses-drop",
        "api": "openai-responses",
        "expect": ["truncated stream retried"],
        "what": "openai-responses: stream dropped after 3 chunks (no response.completed), then success",
        "plan": [{"text": "one two three four five six", "dropAfterChunks": 3, "dropMode": "eof"},
                 {"text": "one two three four five six"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "l-azure-responses-503-then-ok",
        "api": "azure-openai-responses",
        "expect": ["one agent_end per prompt"],
        "what": "azure-openai-responses: 503, then success (/openai/v1/responses?api-version=v1)",
        "plan": [{"status": 503}, {"text": "hello from azure"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "m-responses-thinking",
        "api": "openai-responses",
        "reasoning": True,
        "expect": [],
        "what": "openai-responses, a reasoning model: a reasoning summary in two parts, then text",
        "plan": [{"thinking": "Plan it\n\nCheck it", "text": "hello after thinking"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "g-abort-retry",
        "expect": ["one agent_end per prompt"],
        "what": "503, then abort_retry during the backoff",
        "baseDelayMs": 2000,
        "plan": [{"status": 503}, {"text": "never sent"}],
        "script": [("send", PROMPT),
                   ("wait", is_type("auto_retry_start"), "auto_retry_start"),
                   ("sleep", 0.3),
                   ("send", {"id": "c2", "type": "abort_retry"}),
                   ("wait", is_response("c2"), "abort_retry response"),
                   ("quiet",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
]


# The same plans with both sides speaking the Gemini API ("api":
# "google-generative-ai", pi through @google/genai): the fake server answers
# in Gemini's shapes (tests/fixtures/fake_gemini.py).
GEMINI = "google-generative-ai"
PLANS += [
    {
        "name": "n-gemini-text",
        "api": GEMINI,
        "expect": [],
        "what": "Gemini: a streamed answer",
        "plan": [{"text": "hello from the Gemini fake"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "o-gemini-503-then-ok",
        "api": GEMINI,
        "expect": ["one agent_end per prompt", "Gemini error text"],
        "what": "Gemini: 503 UNAVAILABLE (google.rpc.Status body), then success",
        "plan": [{"status": 503}, {"text": "hello after the 503"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "p-gemini-429-retry-delay",
        "api": GEMINI,
        "expect": ["Retry-After honoured", "one agent_end per prompt", "Gemini error text"],
        "what": "Gemini: 429 RESOURCE_EXHAUSTED with RetryInfo retryDelay 1s, then success",
        "plan": [{"status": 429, "retryDelay": "1s",
                  "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"},
                 {"text": "hello after the rate limit"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
    {
        "name": "q-gemini-drop-mid-stream",
        "api": GEMINI,
        "expect": ["truncated stream retried"],
        "what": "Gemini: stream ends after 3 chunks without a finishReason, then success",
        "plan": [{"text": "one two three four five six", "dropAfterChunks": 3,
                  "dropMode": "eof"},
                 {"text": "one two three four five six"}],
        "script": [("send", PROMPT), ("settle",), ("send", GET_STATE),
                   ("wait", is_response("c9"), "get_state response")],
    },
]

# Usage as pi counts it, per wire format: these plans compare the assistant
# message_end's usage counts too (input, output, cacheRead, cacheWrite,
# totalTokens) and get_session_stats' tokens, with cached prompt tokens in the
# fake server's report. (No anthropic-messages plan: pi's SDK appends
# /v1/messages to baseUrl where retryd appends /messages, so one models.json
# entry cannot serve both sides here.)
USAGE_STATS = {"id": "c8", "type": "get_session_stats"}
PLANS += [
    {
        "name": "r-usage-" + api,
        "api": api,
        "compareUsage": True,
        "expect": [],
        "what": "%s: usage with cached prompt tokens, as pi counts it" % api,
        "plan": [dict({"text": "hello with a warm cache", "inputTokens": 120,
                       "outputTokens": 9, "cachedTokens": 50}, **extra)],
        "script": [("send", PROMPT), ("settle",), ("send", USAGE_STATS),
                   ("wait", is_response("c8"), "get_session_stats response")],
    }
    for api, extra in (("openai-completions", {"cacheWriteTokens": 20}),
                       ("openai-responses", {}),
                       (GEMINI, {"thoughtsTokens": 4}),
                       ("anthropic-messages", {"cacheWriteTokens": 20}))
]


def base_url(url, api):
    """The provider entry's baseUrl: Gemini's ends in /v1beta, Azure's in
    /openai/v1, as pi's docs show them."""
    if api == GEMINI:
        return url + "/v1beta"
    if api == "anthropic-messages":
        return url   # pi's form: the SDK adds /v1/messages (retryd takes it too)
    return url + ("/openai/v1" if api == "azure-openai-responses" else "/v1")


# --------------------------------------------------------------------------
# Driving one daemon.

RUN_OVER = ("agent_end", "prompt_result", "agent_settled", "session_settled")


class StepFailed(Exception):
    pass


class Daemon:
    """A child speaking JSON lines; a reader thread timestamps every line."""

    def __init__(self, argv, env, cwd, stderr_path):
        self.stderr_file = open(stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr_file, env=env, cwd=cwd)
        self.events = []          # (t_monotonic, obj or {"type": "<non-json>", ...})
        self.cond = threading.Condition()
        self.eof = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            t = time.monotonic()
            line = raw.decode("utf-8", "replace").rstrip("\n")
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    obj = {"type": "<non-object>", "line": line[:200]}
            except ValueError:
                obj = {"type": "<non-json>", "line": line[:200]}
            with self.cond:
                self.events.append((t, obj))
                self.cond.notify_all()
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def send(self, obj):
        try:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise StepFailed("stdin closed: %s" % e)

    def wait_for(self, pred, start_index, timeout, what):
        deadline = time.monotonic() + timeout
        with self.cond:
            i = start_index
            while True:
                while i < len(self.events):
                    if pred(self.events[i][1]):
                        return i + 1
                    i += 1
                if self.eof:
                    raise StepFailed("stdout ended while waiting for %s" % what)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StepFailed("no %s within %.0f s" % (what, timeout))
                self.cond.wait(left)

    def settle(self, start_index, timeout):
        """Until the last event ends a chain (agent_end, auto_retry_end
        success:false, or what follows a run's agent_end: prompt_result,
        agent_settled, session_settled) and T_SETTLE passes without another
        line."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                n = len(self.events)
                if n > start_index:
                    last = self.events[-1][1]
                    ended = last.get("type") in RUN_OVER or (
                        last.get("type") == "auto_retry_end" and not last.get("success"))
                    if ended and time.monotonic() - self.events[-1][0] >= T_SETTLE:
                        return n
                if self.eof:
                    raise StepFailed("stdout ended before the prompt settled")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StepFailed("the prompt did not settle within %.0f s" % timeout)
                self.cond.wait(min(left, T_SETTLE / 3))

    def quiet(self, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                last = self.events[-1][0] if self.events else 0
                if time.monotonic() - last >= T_SETTLE:
                    return len(self.events)
                if self.eof:
                    return len(self.events)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StepFailed("output did not stop within %.0f s" % timeout)
                self.cond.wait(min(left, T_SETTLE / 3))

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(T_EXIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(T_EXIT)
        self.reader.join(T_EXIT)
        self.stderr_file.close()
        return self.proc.returncode


def base_env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PI_", "OPENAI", "ANTHROPIC", "RETRYD_"))}
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
               XDG_DATA_HOME=os.path.join(home, ".local", "share"),
               XDG_CACHE_HOME=os.path.join(home, ".cache"), NO_COLOR="1")
    return env


def pi_command(pi, url, base_delay, home, api="openai-completions", reasoning=False):
    """Writes pi's agent dir under home; returns (argv, env)."""
    agent = os.path.join(home, "agent")
    os.makedirs(agent, exist_ok=True)
    models = {"providers": {PROVIDER: {
        "baseUrl": base_url(url, api), "api": api, "apiKey": API_KEY,
        "models": [dict(MODEL, reasoning=reasoning, input=["text"],
                        cost={"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0})]}}}
    settings = {"retry": {"enabled": True, "maxRetries": MAX_RETRIES,
                          "baseDelayMs": base_delay, "provider": {"maxRetries": 0}},
                "enableInstallTelemetry": False, "quietStartup": True}
    with open(os.path.join(agent, "models.json"), "w") as f:
        json.dump(models, f, indent=1)
    with open(os.path.join(agent, "settings.json"), "w") as f:
        json.dump(settings, f, indent=1)
    env = base_env(home)
    env.update(PI_CODING_AGENT_DIR=agent, PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1",
               PI_TELEMETRY="0")
    argv = [pi["node"], pi["cli"], "--mode", "rpc", "--provider", PROVIDER, "--model", MODEL["id"]]
    return argv + PI_FLAGS, env


def retryd_command(url, base_delay, home, retryd, api="openai-completions", reasoning=False):
    settings = {"providers": {PROVIDER: {
        "api": api, "baseUrl": base_url(url, api), "apiKeyEnv": "FAKE_LLM_KEY",
        "models": [dict(MODEL, reasoning=reasoning)]}},
        "retry": {"enabled": True, "maxRetries": MAX_RETRIES, "baseDelayMs": base_delay}}
    path = os.path.join(home, "retryd-settings.json")
    with open(path, "w") as f:
        json.dump(settings, f, indent=1)
    env = base_env(home)
    env["FAKE_LLM_KEY"] = API_KEY
    argv = [retryd, "--mode", "rpc", "--settings", path, "--provider", PROVIDER,
            "--model", MODEL["id"], "--no-session", "--set", "rpc.messageUpdates=full"]
    return argv, env


def run_side(side, plan, retryd, keep_dir=None):
    """Runs one plan against one daemon. Returns (events, error, requests)."""
    base_delay = plan.get("baseDelayMs", 200)
    home = tempfile.mkdtemp(prefix="conf-%s-" % side)
    srv = FakeServer(plan["plan"], max_seconds=T_PLAN + 20).start()
    error = None
    events = []
    d = None
    try:
        api = plan.get("api", "openai-completions")
        reasoning = plan.get("reasoning", False)
        if side != "retryd":
            argv, env = pi_command(PI[side], srv.url, base_delay, home, api, reasoning)
        else:
            argv, env = retryd_command(srv.url, base_delay, home, retryd, api, reasoning)
        d = Daemon(argv, env, home, os.path.join(home, "stderr.txt"))
        plan_deadline = time.monotonic() + T_PLAN
        # Start-up: a warm-up get_state, so slow start-up eats no step's budget.
        d.send({"id": "w0", "type": "get_state"})
        idx = d.wait_for(is_response("w0"), 0, T_START, "start-up (warm-up get_state)")
        t0_index = idx
        for step in plan["script"]:
            if time.monotonic() > plan_deadline:
                raise StepFailed("plan took longer than %.0f s" % T_PLAN)
            kind = step[0]
            if kind == "send":
                d.send(step[1])
            elif kind == "wait":
                idx = d.wait_for(step[1], idx, T_EVENT, step[2])
            elif kind == "settle":
                idx = d.settle(idx, T_EVENT)
            elif kind == "quiet":
                idx = d.quiet(T_EVENT)
            elif kind == "sleep":
                time.sleep(step[1])
        with d.cond:
            snapshot = list(d.events)
        # Keep the ready line (if any) and what follows the warm-up response.
        events = [e for e in snapshot[:t0_index] if e[1].get("type") == "ready"]
        events += snapshot[t0_index:]
    except StepFailed as e:
        error = str(e)
        if d is not None:
            with d.cond:
                events = list(d.events)
    finally:
        if d is not None:
            status = d.close()
            if error:
                try:
                    with open(os.path.join(home, "stderr.txt"), "rb") as f:
                        tail = f.read()[-600:].decode("utf-8", "replace").strip()
                except OSError:
                    tail = ""
                error += " (exit status %s%s)" % (status, "; stderr: " + tail if tail else "")
        reqs = srv.requests()
        srv.stop()
        if keep_dir:
            os.makedirs(keep_dir, exist_ok=True)
            with open(os.path.join(keep_dir, "%s.%s.jsonl" % (plan["name"], side)), "w") as f:
                for t, ev in events:
                    f.write(json.dumps(ev) + "\n")
            shutil.copy(os.path.join(home, "stderr.txt"),
                        os.path.join(keep_dir, "%s.%s.stderr.txt" % (plan["name"], side)))
        shutil.rmtree(home, ignore_errors=True)
    return events, error, reqs


# --------------------------------------------------------------------------
# Normalising. Each event becomes a small dict; render() gives its one-line form.

PI_STATE_KEYS = ("isStreaming", "isCompacting", "thinkingLevel", "steeringMode",
                 "followUpMode", "autoCompactionEnabled", "messageCount",
                 "pendingMessageCount")


def text_of(msg):
    out = []
    for c in msg.get("content") or []:
        if isinstance(c, dict) and c.get("type") == "text":
            out.append(c.get("text", ""))
    return "".join(out)


def msg_summary(msg):
    if not isinstance(msg, dict):
        return {"role": None}
    s = {"role": msg.get("role")}
    if msg.get("role") == "assistant":
        s["stop"] = msg.get("stopReason")
        if msg.get("errorMessage") is not None:
            s["err"] = msg.get("errorMessage")
    s["text"] = text_of(msg)
    return s


USAGE_COUNTS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def normalise(ev, usage=False):
    """usage: keep the assistant message_end's usage counts and
    get_session_stats' tokens (plans with "compareUsage")."""
    t = ev.get("type")
    n = {"type": t}
    if t == "response":
        n["command"] = ev.get("command")
        n["id"] = ev.get("id")
        n["success"] = ev.get("success")
        if "error" in ev:
            n["error"] = ev.get("error")
        data = ev.get("data")
        if ev.get("command") == "get_state" and isinstance(data, dict):
            n["state"] = {k: data.get(k) for k in PI_STATE_KEYS}
            model = data.get("model") or {}
            n["state"]["model"] = "%s/%s" % (model.get("provider"), model.get("id"))
            n["extra_keys"] = sorted(k for k in data
                                     if k not in PI_STATE_KEYS + ("model", "sessionId",
                                                                  "sessionFile",
                                                                  "sessionName"))
        elif ev.get("command") == "get_session_stats" and isinstance(data, dict):
            if usage:
                n["data"] = {"tokens": data.get("tokens")}
        elif data is not None:
            n["data"] = data
    elif t in ("message_start", "message_end"):
        n.update(msg_summary(ev.get("message")))
        msg = ev.get("message") or {}
        if usage and t == "message_end" and msg.get("role") == "assistant":
            n["usage"] = {k: (msg.get("usage") or {}).get(k) for k in USAGE_COUNTS}
    elif t == "message_update":
        ame = ev.get("assistantMessageEvent") or {}
        n["event"] = ame.get("type")
        if "delta" in ame:
            n["delta"] = ame.get("delta")
        if ame.get("type") == "text_end":
            n["content"] = ame.get("content")
    elif t == "turn_end":
        n.update(msg_summary(ev.get("message")))
        n["toolResults"] = len(ev.get("toolResults") or [])
    elif t == "agent_end":
        n["messages"] = [msg_summary(m) for m in ev.get("messages") or []]
    elif t == "auto_retry_start":
        for k in ("attempt", "maxAttempts", "delayMs", "errorMessage"):
            n[k] = ev.get(k)
        extra = {k: v for k, v in ev.items()
                 if k not in ("type", "attempt", "maxAttempts", "delayMs", "errorMessage")}
        if extra:
            n["extra"] = extra
    elif t == "auto_retry_end":
        for k in ("success", "attempt", "finalError"):
            if k in ev:
                n[k] = ev.get(k)
    elif t in ("agent_start", "turn_start", "ready"):
        pass
    else:
        n["keys"] = sorted(k for k in ev if k != "type")
    return n


def short(s, n=48):
    s = repr(s)
    return s if len(s) <= n else s[:n - 4] + "...'"


def render(n):
    t = n["type"]
    if t == "response":
        s = "response %s" % n["command"]
        if n.get("id") is not None:
            s += " id=%s" % n["id"]
        s += " ok" if n.get("success") else " FAILED"
        if "error" in n:
            s += " error=%s" % short(n["error"], 80)
        if "state" in n:
            st = n["state"]
            s += " {%s}" % ", ".join("%s=%s" % (k, json.dumps(st[k])) for k in
                                     ("isStreaming", "messageCount", "pendingMessageCount",
                                      "autoCompactionEnabled", "model"))
            rest = {k: st[k] for k in st if k not in ("isStreaming", "messageCount",
                                                     "pendingMessageCount",
                                                     "autoCompactionEnabled", "model")}
            s += " %s" % json.dumps(rest, sort_keys=True, separators=(",", ":"))
            if n.get("extra_keys"):
                s += " +[%s]" % ",".join(n["extra_keys"])
        if "data" in n:
            s += " data=%s" % (json.dumps(n["data"], sort_keys=True) if n["command"] ==
                               "get_session_stats" else short(json.dumps(n["data"]), 60))
        return s
    if t in ("message_start", "message_end", "turn_end"):
        s = "%s %s" % (t, n.get("role"))
        if n.get("stop") is not None:
            s += " stop=%s" % n["stop"]
        if "err" in n:
            s += " err=%s" % short(n["err"], 70)
        if n.get("text"):
            s += " text=%s" % short(n["text"])
        if "usage" in n:
            s += " usage=%s" % json.dumps(n["usage"], separators=(",", ":"))
        return s
    if t == "message_update":
        s = "  update %s" % n.get("event")
        if "delta" in n:
            s += " %s" % short(n["delta"], 30)
        if "content" in n:
            s += " content=%s" % short(n["content"], 40)
        return s
    if t == "agent_end":
        parts = []
        for m in n["messages"]:
            p = m.get("role") or "?"
            if m.get("stop"):
                p += ":" + m["stop"]
            if m.get("err"):
                p += " " + short(m["err"], 30)
            elif m.get("text"):
                p += " " + short(m["text"], 30)
            parts.append(p)
        return "agent_end n=%d [%s]" % (len(n["messages"]), "; ".join(parts))
    if t == "auto_retry_start":
        s = "auto_retry_start attempt=%s/%s delayMs=%s err=%s" % (
            n["attempt"], n["maxAttempts"], n["delayMs"], short(n["errorMessage"], 60))
        if n.get("extra"):
            s += " +%s" % json.dumps(n["extra"], sort_keys=True, separators=(",", ":"))
        return s
    if t == "auto_retry_end":
        s = "auto_retry_end success=%s attempt=%s" % (
            json.dumps(n.get("success")), n.get("attempt"))
        if "finalError" in n:
            s += " finalError=%s" % short(n["finalError"], 60)
        return s
    if "keys" in n:
        return "%s %s" % (t, ",".join(n["keys"]))
    return t


# --------------------------------------------------------------------------
# The documented differences. Each rule checks that both sides show the
# documented behaviour and then rewrites one side into what it would have
# printed without that difference, so the rest can be compared line by line.
# A rule that finds no evidence changes nothing, and the difference stays.
# Reference: protocol/README.md section 17 ("Differences from pi --mode rpc").

TRUNCATED = "connection error: stream ended before completion"
BUSY = "Agent is already processing"
STATE_EXTRAS = {"autoRetryEnabled", "isRetrying", "retryAttempt", "retryPolicy", "retryBudget",
                "fleet", "isSettled", "hasPendingAsyncWork"}
OMP_FRAMES = ("prompt_result", "session_settled")
RETRY_START_EXTRAS = {"reason", "hintMs", "errorClass", "rule", "overload"}


def rule_message_start(pi, rd, plan):
    """message_start carries the message as it is when the event is written:
    retryd writes it when the request starts, with the placeholder stopReason
    "stop" (protocol §7); pi, for an HTTP error, only once the error is known,
    and sometimes with text already in it. message_end carries the final
    values and is compared in full."""
    for n in pi + rd:
        if n["type"] == "message_start":
            for k in ("stop", "err", "text"):
                n.pop(k, None)
    return pi, rd


def pi_major(plan):
    return int(str(plan.get("pi_version", "0")).split(".")[0])


def rule_settled_frames(pi, rd, plan):
    """After a run's agent_end retryd writes oh-my-pi 18.3's prompt_result
    and session_settled, and pi 1.6's agent_settled (§2, the lifecycles of
    pi 1.6 and oh-my-pi 18.3); pi 0.73 has none of them, pi 1.6 only
    agent_settled."""
    drop = OMP_FRAMES + (("agent_settled",) if pi_major(plan) < 1 else ())
    return pi, [n for n in rd if n["type"] not in drop]


def rule_prompt_disposition(pi, rd, plan):
    """The prompt/steer/follow_up responses carry data.disposition (pi 1.6's)
    and data.agentInvoked (oh-my-pi 18.3's); pi 0.73 sends no data."""
    keep = ("disposition",) if pi_major(plan) >= 1 else ()
    for n in rd:
        if n["type"] == "response" and n.get("command") in ("prompt", "steer", "follow_up") \
                and isinstance(n.get("data"), dict):
            n["data"] = {k: v for k, v in n["data"].items() if k in keep}
            if not n["data"]:
                del n["data"]
    return pi, rd


def rule_system_message(pi, rd, plan):
    """pi 1.6 streams its system prompt as a message (message_start/end
    role "system", first in agent_end.messages, counted in messageCount);
    retryd sends no system prompt of its own, so there is none to show."""
    if not any(n["type"] == "message_start" and n.get("role") == "system" for n in pi):
        return pi, rd
    out = []
    for n in pi:
        if n["type"] in ("message_start", "message_end") and n.get("role") == "system":
            continue
        if n["type"] == "agent_end":
            n["messages"] = [m for m in n["messages"] if m.get("role") != "system"]
        if "state" in n and isinstance(n["state"].get("messageCount"), int) and \
                n["state"]["messageCount"] > 0:
            n["state"]["messageCount"] -= 1
        out.append(n)
    return out, rd


def rule_entry_appended(pi, rd, plan):
    """pi 1.6 announces each session entry it appends (entry_appended);
    retryd's session file is its journal and is not streamed (§18)."""
    return [n for n in pi if n["type"] != "entry_appended"], rd


STATUS_BODY = re.compile(r"^(?:[^()]*\((\d{3})\)|(\d{3})): (\{.*\})$", re.S)


def status_body_text(text):
    """(status, message) of pi 1.6's HTTP error text, "<status>: <JSON body>"
    or "<Provider> API error (<status>): <JSON body>", with the body's
    message or error.message; or None."""
    m = STATUS_BODY.match(text)
    if not m:
        return None
    try:
        obj = json.loads(m.group(3))
        msg = obj.get("message") or (obj.get("error") or {}).get("message")
    except (ValueError, AttributeError):
        return None
    return (int(m.group(1) or m.group(2)), msg) if isinstance(msg, str) else None


def rule_status_body_text(pi, rd, plan):
    """An HTTP error's text: pi 1.6 writes "<status>: <the JSON body>" (the
    Responses APIs: "<Provider> API error (<status>): <the JSON body>");
    retryd "<status> <the body's message>" for every format, as pi 0.73 did
    (the details go to the classifier). pi's text is rewritten to retryd's
    where the two say the same."""
    said = set()
    for n in rd:
        for m in [n] + list(n.get("messages") or []):
            for k in ("err", "errorMessage", "finalError"):
                if isinstance(m.get(k), str):
                    said.add(m[k])
    for n in pi:
        for m in [n] + list(n.get("messages") or []):
            for k in ("err", "errorMessage", "finalError"):
                st = status_body_text(m.get(k)) if isinstance(m.get(k), str) else None
                if st and "%d %s" % st in said:
                    m[k] = "%d %s" % st
    return pi, rd


# pi 1.6's words for a stream that ended without its terminal marker, per
# wire format; retryd says TRUNCATED for every format.
PI16_TRUNCATED = ("Stream ended without finish_reason",
                  "OpenAI Responses stream ended before a terminal response event",
                  "Google stream ended without a finish reason")


def rule_truncated_text(pi, rd, plan):
    """pi 1.6 retries a stream that ends without its terminal marker, as
    retryd does (the decision is the same); its error text names the wire
    format's marker, retryd's is one text for all (TRUNCATED), which the
    classifier's transport rule reads."""
    if not any(n.get("err") == TRUNCATED or n.get("errorMessage") == TRUNCATED for n in rd):
        return pi, rd
    for n in pi:
        for m in [n] + list(n.get("messages") or []):
            for k in ("err", "errorMessage", "finalError"):
                if m.get(k) in PI16_TRUNCATED:
                    m[k] = TRUNCATED
    return pi, rd


def rule_settled_before_response(pi, rd, plan):
    """abort_retry in a backoff: retryd ends the run -- auto_retry_end,
    agent_end, then its settled frames -- before it answers the command
    (§10.6); pi 1.6 answers first and then writes agent_settled."""
    out = list(rd)
    for k in range(len(out) - 1):
        if out[k]["type"] == "agent_settled" and out[k + 1]["type"] == "response" and \
                out[k + 1].get("command") in ("abort_retry", "abort") and \
                any(n["type"] == "response" and n.get("command") == out[k + 1]["command"]
                    and k2 + 1 < len(pi) and pi[k2 + 1]["type"] == "agent_settled"
                    for k2, n in enumerate(pi)):
            out[k], out[k + 1] = out[k + 1], out[k]
    return pi, out


def rule_cache_write_usage(pi, rd, plan):
    """OpenAI chat completions with prompt_tokens_details.cache_write_tokens:
    retryd counts cached_tokens as reads plus writes, as pi 0.73 did
    (cacheRead = cached - writes); pi 1.6 takes cached_tokens as reads only
    (cacheRead = cached, input lower by the writes). Same total."""
    def usages(seq):
        out = [n["usage"] for n in seq if n.get("usage")]
        out += [n["data"]["tokens"] for n in seq if n["type"] == "response"
                and isinstance(n.get("data"), dict) and isinstance(n["data"].get("tokens"), dict)]
        return out
    a, b = usages(pi), usages(rd)
    if pi_major(plan) < 1 or len(a) != len(b):
        return pi, rd
    for x, y in zip(a, b):
        w = y.get("cacheWrite") or 0
        read = "cacheRead"
        if w and x.get(read) == y.get(read, 0) + w and x.get("input") == y.get("input", 0) - w:
            x[read], x["input"] = y[read], y["input"]
    return pi, rd


def rule_ready(pi, rd, plan):
    """retryd writes {"type":"ready"} first (§17.3)."""
    return pi, [n for n in rd if n["type"] != "ready"]


def rule_retry_after(pi, rd, plan):
    """Retry-After honoured (§17.18): retryd waits max(backoff, server hint);
    pi's session retry parses no hints and waits its fixed backoff."""
    a = [n for n in pi if n["type"] == "auto_retry_start"]
    b = [n for n in rd if n["type"] == "auto_retry_start"]
    for x, y in zip(a, b):
        extra = y.get("extra") or {}
        hint = extra.get("hintMs")
        if (extra.get("reason") == "server-hint" and isinstance(hint, (int, float))
                and x["attempt"] == y["attempt"] and y["delayMs"] != x["delayMs"]
                and y["delayMs"] == max(x["delayMs"], hint)):
            y["delayMs"] = x["delayMs"]
    return pi, rd


def rule_retry_start_extras(pi, rd, plan):
    """auto_retry_start adds reason and hintMs (§17.19), and the classifier's
    word: errorClass, rule, overload (§9.1)."""
    for n in rd:
        if n["type"] == "auto_retry_start" and n.get("extra"):
            n["extra"] = {k: v for k, v in n["extra"].items() if k not in RETRY_START_EXTRAS}
            if not n["extra"]:
                del n["extra"]
    return pi, rd


def rule_state_extras(pi, rd, plan):
    """get_state adds autoRetryEnabled, isRetrying, retryAttempt, retryPolicy,
    retryBudget (§17.11) and fleet (§21)."""
    for n in rd:
        if "extra_keys" in n:
            n["extra_keys"] = [k for k in n["extra_keys"] if k not in STATE_EXTRAS]
    return pi, rd


def rule_no_compaction(pi, rd, plan):
    """retryd has no compaction: get_state.autoCompactionEnabled is always
    false (§14, §17.13)."""
    if all(n["state"].get("autoCompactionEnabled") is False for n in rd if "state" in n):
        for n in pi + rd:
            if "state" in n:
                n["state"]["autoCompactionEnabled"] = "n/a"
    return pi, rd


def rule_text_end_on_failure(pi, rd, plan):
    """retryd closes an open text block (text_end) when an attempt fails in
    the middle of it; pi's OpenAI Responses provider sends text_end only at
    the message item's response.output_item.done, so after response.failed or
    a cut stream its text block stays open (docs/providers.md). Where pi ends
    an assistant message right after a text_delta, retryd's text_end just
    before a failed message_end goes."""
    if not any(n["type"] == "message_end" and n.get("role") == "assistant"
               and k > 0 and pi[k - 1].get("event") == "text_delta" for k, n in enumerate(pi)):
        return pi, rd
    out = []
    for k, n in enumerate(rd):
        nxt = rd[k + 1] if k + 1 < len(rd) else {}
        if (n["type"] == "message_update" and n.get("event") == "text_end"
                and nxt.get("type") == "message_end" and nxt.get("role") == "assistant"
                and "err" in nxt):
            continue
        out.append(n)
    return pi, out


def rule_summary_separator(pi, rd, plan):
    """OpenAI Responses reasoning summaries: pi sends "\n\n" as a thinking
    delta after every summary part, the last one too, and then leaves that
    last one out of the block (thinking_end's content, the message); retryd
    sends it only between parts, so the deltas add up to the block
    (docs/providers.md). pi's "\n\n" right before thinking_end goes where
    retryd's thinking_end follows a delta of text."""
    def ends_with_text(seq, k):
        return k > 0 and seq[k - 1].get("event") == "thinking_delta" and seq[k - 1].get("delta") != "\n\n"
    if not any(n.get("event") == "thinking_end" and ends_with_text(rd, k) for k, n in enumerate(rd)):
        return pi, rd
    out = []
    for k, n in enumerate(pi):
        nxt = pi[k + 1] if k + 1 < len(pi) else {}
        if n.get("event") == "thinking_delta" and n.get("delta") == "\n\n" and \
                nxt.get("event") == "thinking_end":
            continue
        out.append(n)
    return out, rd


def rule_truncated_stream(pi, rd, plan):
    """A stream that ends without its terminal marker is a failure and is
    retried; pi takes the partial answer as the whole answer.
    retryd's chain is folded back into what accepting the partial answer
    would have printed."""
    while True:
        i = next((k for k, n in enumerate(rd) if n["type"] == "message_end"
                  and n.get("role") == "assistant" and n.get("err") == TRUNCATED), None)
        if i is None:
            return pi, rd
        partial = rd[i].get("text", "")
        if not any(n["type"] == "message_end" and n.get("role") == "assistant"
                   and n.get("stop") == "stop" and n.get("text", "") == partial
                   and "err" not in n for n in pi):
            return pi, rd       # pi did not accept this partial answer: no evidence
        j = next((k for k in range(i + 1, len(rd)) if rd[k]["type"] == "turn_end"), None)
        s = next((k for k in range(i + 1, len(rd)) if rd[k]["type"] == "auto_retry_start"),
                 None)
        if j is None or s is None or s != j + 1:
            return pi, rd
        m = next((k for k in range(s + 1, len(rd)) if rd[k]["type"] == "turn_end"), None)
        if m is None:
            return pi, rd
        good = [n for n in rd[s + 1:m] if n["type"] == "message_end"
                and n.get("role") == "assistant"]
        if len(good) != 1 or good[0].get("stop") != "stop":
            return pi, rd       # the retry failed too: not folded
        full = good[0].get("text", "")
        attempt = rd[s]["attempt"]
        accepted = {"type": "message_end", "role": "assistant", "stop": "stop",
                    "text": partial}
        turn_end = dict(rd[j])
        turn_end.pop("err", None)
        turn_end["stop"] = "stop"
        fold = [accepted]
        if attempt > 1:        # an earlier failure opened the chain: it ends here
            fold.append({"type": "auto_retry_end", "success": True, "attempt": attempt - 1})
        fold.append(turn_end)
        rest = rd[m + 1:]
        for n in rest:
            if n["type"] == "agent_end":
                for msg in n["messages"]:
                    if msg.get("role") == "assistant" and msg.get("text") == full:
                        msg.clear()
                        msg.update(role="assistant", stop="stop", text=partial)
        rd = rd[:i] + fold + rest


def rule_busy_prompt(pi, rd, plan):
    """A prompt without streamingBehavior while busy -- backoff included -- is
    refused (§17.5, §17.6); pi 0.73 accepts it during the backoff and runs it
    in the middle of the retry chain. pi's run is rewritten as if it had
    refused: the response, the user message and its count go."""
    texts = {step[1].get("id"): step[1].get("message") for step in plan["script"]
             if step[0] == "send" and step[1].get("type") == "prompt"}
    for r in [n for n in rd if n["type"] == "response" and n.get("command") == "prompt"
              and n.get("success") is False and str(n.get("error", "")).startswith(BUSY)]:
        k = next((k for k, n in enumerate(pi) if n["type"] == "response"
                  and n.get("command") == "prompt" and n.get("id") == r.get("id")
                  and n.get("success") is True), None)
        text = texts.get(r.get("id"))
        if k is None or text is None:
            continue
        pi[k] = dict(r)
        out = []
        removed = False
        for idx, n in enumerate(pi):
            if n["type"] in ("message_start", "message_end") and n.get("role") == "user" \
                    and n.get("text") == text and idx > k:
                removed = True
                continue
            if n["type"] == "agent_end" and idx > k:
                n["messages"] = [m for m in n["messages"]
                                 if not (m.get("role") == "user" and m.get("text") == text)]
            if "state" in n and idx > k and removed and \
                    isinstance(n["state"].get("messageCount"), int):
                n["state"]["messageCount"] -= 1
            out.append(n)
        pi = out
    return pi, rd


def rule_one_agent_end(pi, rd, plan):
    """One agent_end per prompt, after the whole retry chain (§17.1, §17.2):
    pi ends a run per attempt (agent_end, then auto_retry_start, then a new
    agent_start). pi's runs are merged: the agent_ends before a retry go, the
    agent_start after each backoff goes, the final agent_end lists the whole
    context (the failed attempts a retry dropped are not in it) and comes
    after auto_retry_end{success:false}; a chain cancelled in its backoff gets
    its agent_end right after that auto_retry_end."""
    def next_event(i):
        return next((k for k in range(i + 1, len(pi)) if pi[k]["type"] != "response"), None)

    out, stash, skip_start, i = [], None, False, 0
    while i < len(pi):
        n = pi[i]
        if n["type"] == "agent_end":
            j = next_event(i)
            msgs = n["messages"]
            if j is not None and pi[j]["type"] == "auto_retry_start":
                if msgs and msgs[-1].get("role") == "assistant" and msgs[-1].get("stop") == "error":
                    msgs = msgs[:-1]
                stash = (stash or []) + msgs
                skip_start = True
                i += 1
                continue
            merged = dict(n, messages=(stash or []) + msgs)
            stash = None
            if j is not None and pi[j]["type"] == "auto_retry_end" and not pi[j].get("success"):
                out.extend(pi[i + 1:j + 1])
                out.append(merged)
                i = j + 1
                continue
            out.append(merged)
            i += 1
            continue
        if n["type"] == "agent_start" and skip_start:
            skip_start = False
            i += 1
            continue
        if n["type"] == "auto_retry_end" and not n.get("success") and stash is not None:
            out.append(n)
            out.append({"type": "agent_end", "messages": stash})
            stash, skip_start = None, False
            i += 1
            continue
        out.append(n)
        i += 1
    return out, rd


def gemini_status_text(text):
    """(code, message) of a google.rpc.Status body as pi shows it (the JSON
    that @google/genai's ApiError carries), or None."""
    try:
        err = json.loads(text).get("error")
        return int(err["code"]), err["message"]
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def rule_gemini_error_text(pi, rd, plan):
    """Gemini's HTTP errors (protocol/README.md, the Gemini section): pi's
    errorMessage is the google.rpc.Status body as JSON; retryd's is
    "<status> <error.message>", as for every format (the details go to the
    classifier). pi's text is rewritten to retryd's where the two say the
    same."""
    said = set()
    for n in rd:
        for m in [n] + list(n.get("messages") or []):
            for k in ("err", "errorMessage"):
                if isinstance(m.get(k), str):
                    said.add(m[k])
    for n in pi:
        for m in [n] + list(n.get("messages") or []):
            for k in ("err", "errorMessage"):
                st = gemini_status_text(m.get(k)) if isinstance(m.get(k), str) else None
                if st and "%d %s" % st in said:
                    m[k] = "%d %s" % st
    return pi, rd


def rule_no_empty_delta(pi, rd, plan):
    """retryd never sends an empty text_delta (protocol/README.md, the Gemini
    section); pi relays the empty text part of Gemini's finishing chunk."""
    return [n for n in pi if not (n["type"] == "message_update" and n.get("event") == "text_delta"
                                  and n.get("delta") == "")], rd


# Improvements over pi 0.73 that pi itself made since (from this major on):
# there the decision is the same on both sides, and the plan shows "equal".
PI_FIXED = {"truncated stream retried": 1, "busy prompt refused": 1}

RULES = [
    # (name, kind, function)
    ("Gemini error text", "documented difference", rule_gemini_error_text),
    ("pi 1.6 HTTP error text", "documented difference", rule_status_body_text),
    ("pi 1.6 system message", "documented difference", rule_system_message),
    ("pi 1.6 truncated-stream text", "documented difference", rule_truncated_text),
    ("pi 1.6 cache-write usage", "documented difference", rule_cache_write_usage),
    ("pi 1.6 entry_appended", "documented difference", rule_entry_appended),
    ("settled frames", "retryd extra", rule_settled_frames),
    ("prompt response data", "retryd extra", rule_prompt_disposition),
    ("settled before the abort_retry response", "documented difference",
     rule_settled_before_response),
    ("no empty text_delta", "documented difference", rule_no_empty_delta),
    ("ready line", "retryd extra", rule_ready),
    ("Retry-After honoured", "improvement", rule_retry_after),
    ("auto_retry_start reason/hintMs", "retryd extra", rule_retry_start_extras),
    ("get_state retry fields", "retryd extra", rule_state_extras),
    ("no compaction", "documented difference", rule_no_compaction),
    ("text_end on a failed attempt", "documented difference", rule_text_end_on_failure),
    ("reasoning summary separator", "documented difference", rule_summary_separator),
    ("truncated stream retried", "improvement", rule_truncated_stream),
    ("busy prompt refused", "improvement", rule_busy_prompt),
    ("one agent_end per prompt", "improvement", rule_one_agent_end),
    ("message_start snapshot", "documented difference", rule_message_start),
]


# --------------------------------------------------------------------------
# Showing and checking.

COL = 76


def diff_size(a, b):
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in sm.get_opcodes()
               if tag != "equal")


def cell(t, s):
    s = ("%6s " % ("" if t is None else "%d" % t)) + s
    return s if len(s) <= COL else s[:COL - 1] + "~"


def side_by_side(pi_rows, rd_rows, version):
    """rows: (ms or None, text). Left pi, right retryd; '<' only in pi,
    '>' only in retryd, '|' both but different."""
    a = [r[1] for r in pi_rows]
    b = [r[1] for r in rd_rows]
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out = ["  %-*s   %s" % (COL, "pi %s (ms since the first event)" % version, "retryd"),
           "  %s   %s" % ("-" * COL, "-" * COL)]
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            left = pi_rows[i1 + k] if i1 + k < i2 else None
            right = rd_rows[j1 + k] if j1 + k < j2 else None
            if tag == "equal":
                mark = " "
            elif left is None:
                mark = ">"
            elif right is None:
                mark = "<"
            else:
                mark = "|"
            ls = cell(*left) if left else ""
            rs = cell(*right) if right else ""
            out.append("  %-*s %s %s" % (COL, ls, mark, rs))
    return "\n".join(out)


def rows(events):
    if not events:
        return []
    t0 = events[0][0]
    return [(int((t - t0) * 1000), render(normalise(ev))) for t, ev in events]


def apply_rules(plan, pi, rd, skip=None):
    for name, kind, fn in RULES:
        if name != skip:
            pi, rd = fn(copy.deepcopy(pi), copy.deepcopy(rd), plan)
    return [render(n) for n in pi], [render(n) for n in rd]


def compare(plan, pi_events, rd_events):
    """Returns (applied rules [(name, kind, lines explained)], residual diff).
    A rule's share is what the residual would grow by without it."""
    pi = [normalise(ev, plan.get("compareUsage")) for t, ev in pi_events]
    rd = [normalise(ev, plan.get("compareUsage")) for t, ev in rd_events]
    a, b = apply_rules(plan, pi, rd)
    left = diff_size(a, b)
    applied = []
    for name, kind, fn in RULES:
        without = diff_size(*apply_rules(plan, pi, rd, skip=name))
        if without > left:
            applied.append((name, kind, without - left))
    residual = [] if a == b else list(difflib.unified_diff(
        a, b, "pi (after the documented rules)", "retryd (without its extras)", n=2,
        lineterm=""))
    return applied, residual


def install_pi(version, no_install):
    """Fills PI[version]; returns (ok, message)."""
    env = dict(os.environ, PI_VERSION=version)
    if no_install:
        prefix = os.path.join(ROOT, "build", "pi" if version.startswith("0.") else "pi16")
        name = "@mariozechner" if version.startswith("0.") else "@earendil-works"
        pkg = os.path.join(prefix, "node_modules", name, "pi-coding-agent")
        node = os.path.join(prefix, "node_modules", ".bin", "node")
        lines = [pkg, node if os.path.exists(node) else shutil.which("node") or "node"]
        if not os.path.exists(os.path.join(pkg, "package.json")):
            return False, "pi %s is not installed in %s (--no-install)" % (version, prefix)
        msg = "pi found in %s" % prefix
    else:
        r = subprocess.run([os.path.join(ROOT, "scripts", "pi-install.sh")], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
        msg = r.stderr.decode(errors="replace").strip()
        if r.returncode != 0:
            return False, "%s (pi-install.sh exit %d)" % (msg, r.returncode)
        lines = r.stdout.decode().split("\n")
    pkg, node = lines[0], lines[1]
    try:
        with open(os.path.join(pkg, "package.json")) as f:
            got = json.load(f).get("version", "?")
    except (OSError, ValueError):
        got = "?"
    if got != version:
        return False, "%s holds pi %s, not %s" % (pkg, got, version)
    PI[version] = {"version": version, "dir": pkg, "node": node,
                   "cli": os.path.join(pkg, PI_ENTRY.get(version.split(".")[0], "dist/cli.js"))}
    return True, msg


def judge(plan, pi_ev, rd_ev):
    """Returns (applied, residual, missing): the rules that explained lines,
    the unexplained diff, and the expected improvements that did not show."""
    applied, residual = compare(plan, pi_ev, rd_ev)
    names = {name for name, kind, count in applied}
    missing = [e for e in plan.get("expect", []) if e not in names and
               pi_major(plan) < PI_FIXED.get(e, 99)]
    return applied, residual, missing


def self_test(results, version):
    """Feeds the checker streams with one planted difference each and makes
    sure every one is caught: the rules must not explain away too much."""
    def mutated(name, fn):
        if name not in results:
            return None
        pi_ev, rd_ev = results[name]
        rd = [(t, copy.deepcopy(ev)) for t, ev in rd_ev]
        pi = [(t, copy.deepcopy(ev)) for t, ev in pi_ev]
        return fn(pi, rd)

    def first(evs, pred):
        return next(i for i, (t, ev) in enumerate(evs) if pred(ev))

    def longer_backoff(pi, rd):
        rd[first(rd, is_type("auto_retry_start"))][1]["delayMs"] += 100
        return pi, rd

    def agent_end_per_attempt(pi, rd):
        i = first(rd, is_type("auto_retry_start"))
        rd.insert(i, (rd[i][0], {"type": "agent_end", "messages": []}))
        return pi, rd

    def other_text(pi, rd):
        i = max(i for i, (t, ev) in enumerate(rd) if ev.get("type") == "message_end")
        rd[i][1]["message"]["content"] = [{"type": "text", "text": "something else"}]
        return pi, rd

    def no_retry_end(pi, rd):
        return pi, [(t, ev) for t, ev in rd if ev.get("type") != "auto_retry_end"]

    def hint_without_reason(pi, rd):
        i = first(rd, is_type("auto_retry_start"))
        rd[i][1]["reason"] = "backoff"
        rd[i][1].pop("hintMs", None)
        return pi, rd

    def behaves_like_pi(pi, rd):
        return pi, [(t, ev) for t, ev in rd if ev.get("type") == "ready"] + pi

    def unknown_event(pi, rd):
        rd.insert(2, (rd[2][0], {"type": "mystery_event"}))
        return pi, rd

    def extra_state_key(pi, rd):
        i = first(rd, is_response("c9"))
        rd[i][1]["data"]["surprise"] = 1
        return pi, rd

    def other_error_text(pi, rd):
        i = first(rd, lambda ev: ev.get("type") == "message_end"
                  and ev["message"].get("stopReason") == "error")
        rd[i][1]["message"]["errorMessage"] = "503 Something Else"
        return pi, rd

    def no_agent_settled(pi, rd):
        return pi, [(t, ev) for t, ev in rd if ev.get("type") != "agent_settled"]

    cases = [
        ("a-503-then-ok", "a longer backoff", longer_backoff),
        ("a-503-then-ok", "another HTTP error text", other_error_text),
        ("a-503-then-ok", "no agent_settled", no_agent_settled),
        ("a-503-then-ok", "agent_end per attempt, as pi", agent_end_per_attempt),
        ("a-503-then-ok", "a different final text", other_text),
        ("c-max-exceeded", "no auto_retry_end", no_retry_end),
        ("b-429-retry-after", "a long delay with no server hint", hint_without_reason),
        ("d-drop-mid-stream", "truncated stream accepted, as pi", behaves_like_pi),
        ("f-prompt-during-backoff", "busy prompt accepted, as pi", behaves_like_pi),
        ("e-401", "an unknown event", unknown_event),
        ("e-401", "an undocumented get_state field", extra_state_key),
    ]
    plans = {p["name"]: p for p in PLANS}
    print()
    print("self-test: planted differences must be caught")
    bad = 0
    for name, what, fn in cases:
        m = mutated(name, fn)
        if m is None:
            print("  %-26s %-40s (plan not run)" % (name, what))
            continue
        applied, residual, missing = judge(dict(plans[name], pi_version=version), *m)
        caught = bool(residual or missing)
        bad += not caught
        print("  %-26s %-40s %s" % (name, what, "caught" if caught else "MISSED"))
    return bad == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", action="append", default=[],
                    help="run only this plan (repeatable): " + ", ".join(p["name"] for p in PLANS))
    ap.add_argument("--raw", metavar="DIR", help="keep the raw streams and stderr in DIR")
    ap.add_argument("--no-install", action="store_true",
                    help="do not run scripts/pi-install.sh; use build/pi and build/pi16 as "
                         "they are")
    ap.add_argument("--pi", action="append", default=[], metavar="VERSION",
                    help="compare with this pi release (repeatable; default: %s)"
                         % " ".join(PI_VERSIONS))
    ap.add_argument("--self-test", action="store_true",
                    help="afterwards, plant differences in the recorded streams and check "
                         "that each one is caught")
    args = ap.parse_args()

    retryd = os.path.abspath(os.environ.get("RETRYD") or os.path.join(ROOT, "build", "retryd"))
    if not os.access(retryd, os.X_OK):
        print("conformance: %s is not built (make)" % retryd, file=sys.stderr)
        return 2
    plans = [p for p in PLANS if not args.plan or p["name"] in args.plan]
    if not plans:
        print("conformance: no such plan", file=sys.stderr)
        return 2

    versions = args.pi or PI_VERSIONS
    for v in versions:
        ok, msg = install_pi(v, args.no_install)
        if not ok:
            print("conformance: pi %s is not available, so it is left out:" % v)
            print("  " + msg.replace("\n", "\n  "))
    versions = [v for v in versions if v in PI]
    if not versions:
        print("conformance: skipped: no pi to compare against")
        return 0
    for v in versions:
        print("conformance: retryd %s vs pi %s (%s on %s)" % (retryd, v, PI[v]["cli"],
                                                               PI[v]["node"]))
    print("  %d plans; the daemons run each plan at the same time, each with its own fake "
          "server" % len(plans))
    print("  side by side with pi %s (left) and retryd (right); '<' only in pi, '>' only in "
          "retryd, '|' different%s" % (versions[0], "; then pi %s's verdict" %
                                       ", ".join(versions[1:]) if versions[1:] else ""))

    started = time.monotonic()
    summary = []
    recorded = {}
    for plan in plans:
        results = {}
        sides = versions + ["retryd"]

        def run(side, plan=plan, results=results):
            try:
                results[side] = run_side(side, plan, retryd, args.raw)
            except Exception as e:      # a harness bug or a daemon that cannot start
                results[side] = ([], "%s: %s" % (type(e).__name__, e), [])

        threads = [threading.Thread(target=run, args=(side,), daemon=True) for side in sides]
        for t in threads:
            t.start()
        for t in threads:
            t.join(T_PLAN + T_START + 2 * T_EXIT + 10)
        print()
        print("=" * (2 * COL + 5))
        print("plan %s: %s   (base delay %d ms, maxRetries %d)" % (
            plan["name"], plan["what"], plan.get("baseDelayMs", 200), MAX_RETRIES))
        print("  api %s; server paths: %s" % (
            plan.get("api", "openai-completions"), "; ".join(
                "%s %s" % ("retryd" if side == "retryd" else "pi " + side,
                           sorted({r.get("path") for r in results.get(side, ([], None, []))[2]}))
                for side in sides)))
        if "retryd" not in results:
            print("  ERROR: retryd did not finish")
            summary.append((plan["name"], [("ERROR", "retryd did not finish")] * len(versions)))
            continue
        rd_ev, rd_err, rd_reqs = results["retryd"]
        verdicts = []
        for k, v in enumerate(versions):
            if v not in results:
                print("  ERROR: pi %s did not finish" % v)
                verdicts.append(("ERROR", "pi %s did not finish" % v))
                continue
            pi_ev, pi_err, pi_reqs = results[v]
            if k == 0:
                recorded[plan["name"]] = (pi_ev, rd_ev)
            vplan = dict(plan, pi_version=v)
            print("  server requests: pi %s %s; retryd %s" % (
                v, [r.get("outcome") for r in pi_reqs], [r.get("outcome") for r in rd_reqs]))
            applied, residual, missing = judge(vplan, pi_ev, rd_ev)
            errors = ["%s: %s" % (side, err) for side, err in
                      (("pi " + v, pi_err), ("retryd", rd_err)) if err]
            bad = errors or residual or missing
            if k == 0 or bad:
                if k > 0:
                    print("  pi %s differs beyond its documented differences: side by side" % v)
                print(side_by_side(rows(pi_ev), rows(rd_ev), v))
            if applied:
                print("  pi %s: explained by documented differences:" % v)
                for name, kind, count in applied:
                    print("    - %-32s %-24s %2d line%s" % (name, "(%s)" % kind, count,
                                                           "" if count == 1 else "s"))
            for e in errors:
                print("  ERROR " + e)
            for m in missing:
                print("  MISSING (pi %s): the documented improvement %r does not show" % (v, m))
            if residual:
                print("  UNDOCUMENTED differences from pi %s:" % v)
                for line in residual:
                    print("    " + line)
            if bad:
                n = sum(1 for l in residual if l[:1] in "+-" and l[:3] not in ("+++", "---"))
                verdicts.append(("FAIL", "; ".join(
                    errors + ["missing: " + m for m in missing] +
                    (["%d undocumented line(s)" % n] if residual else []))))
            else:
                verdicts.append(("ok", ", ".join(
                    n for n, kd, c in applied if kd == "improvement") or "equal"))
        summary.append((plan["name"], verdicts))

    print()
    print("=" * (2 * COL + 5))
    print("summary (%.0f s): per plan and pi release, ok + the documented improvements it "
          "shows (or equal), or FAIL + why" % (time.monotonic() - started))
    for name, verdicts in summary:
        for k, (status, why) in enumerate(verdicts):
            print("  %-26s %-12s %-5s %s" % (name if k == 0 else "", "pi " + versions[k],
                                              status, why))
    print("  (every plan also differs by the retryd extras and documented differences listed "
          "under it)")
    failed = [(name, versions[k]) for name, verdicts in summary
              for k, (status, why) in enumerate(verdicts) if status != "ok"]
    rc = 0
    if args.self_test and not self_test(recorded, versions[0]):
        print("conformance: self-test FAILED: a planted difference was not caught")
        rc = 1
    if failed:
        print("conformance: FAILED: %d of %d comparisons show undocumented differences or "
              "errors" % (len(failed), len(summary) * len(versions)))
        return 1
    if rc == 0:
        print("conformance: ok: every difference is a documented one")
    return rc


if __name__ == "__main__":
    sys.exit(main())

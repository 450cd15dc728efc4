"""Agent CLIs as providers (claude, codex, gemini, pi, and an exec profile),
through the binary, against tests/fixtures/bin/fake_agent: a fake CLI that
replays the documented JSONL lines (tests/fixtures/cli) and records its argv,
stdin, process group, descriptors and environment.

Every wait is bounded; nothing sleeps to wait for an event (polls of /proc
for a process group to end have a deadline).
"""
import json
import os
import re
import signal
import tempfile
import time
import unittest

from harness import (REPO_ROOT, DaemonTestCase, is_response, is_type, scaled, signature,
                     text_of, timing_sensitive)
from jsonschema_lite import Validator

FAKE = os.path.join(REPO_ROOT, "tests", "fixtures", "bin", "fake_agent")
VALIDATOR = Validator(os.path.join(REPO_ROOT, "protocol", "schemas"))
CONTINUE = "Continue from where you left off. Do not repeat work that is already done."
NASTY = "\"$(rm -rf /)\"; ' \\` & | {sessionId} $HOME\n\ttab ünï €"
# Silence that counts as a stall. The fake is a Python script: on a loaded
# machine (sanitizers, parallel jobs) it may need a few hundred ms to say
# anything at all, which must not look like a stall.
IDLE_MS = int(scaled(1.0) * 1000)


def processes():
    """(pid, ppid, pgid, state) of every process /proc shows now."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        yield int(name), int(fields[1]), int(fields[2]), fields[0]


def group_alive(pgid):
    """Live (not zombie) processes whose process group is pgid."""
    return [pid for pid, _, group, state in processes() if group == pgid and state != "Z"]


def zombie_children(ppid):
    return [pid for pid, parent, _, state in processes() if parent == ppid and state == "Z"]


def wait_group_gone(pgid, timeout):
    deadline = time.monotonic() + scaled(timeout)
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(0.02)
    return not group_alive(pgid)


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


class CliCase(DaemonTestCase):
    """Spawns retryd with --provider CLI, the fake as its command."""

    def fake_dir(self, plan):
        d = tempfile.mkdtemp(prefix="retryd-e2e-agent-")
        self.addCleanup(lambda: __import__("shutil").rmtree(d, ignore_errors=True))
        with open(os.path.join(d, "plan.json"), "w") as f:
            json.dump(plan, f)
        return d

    def start(self, cli, plan, sets=None, env=None, settings=None, args=(), builtin_server=False,
              **kw):
        self.dir = self.fake_dir(plan)
        # Each test's fake stands for a server of its own (its plan is what
        # that server says): serverEnv names it in the fleet's provider id,
        # so that tests sharing a runtime dir share no provider record (the
        # fake never connects to it). A test that shares one passes the URL.
        # builtin_server: the built-in's own serverEnv (ANTHROPIC_BASE_URL...).
        s = {"providers.%s.command" % cli: FAKE, "retry.baseDelayMs": 10}
        if not builtin_server:
            s["providers.%s.serverEnv" % cli] = ["FAKE_AGENT_SERVER"]
        s.update(sets or {})
        e = {"FAKE_AGENT_DIR": self.dir,
             "FAKE_AGENT_SERVER": "http://%s.fake-agent.invalid" % os.path.basename(self.dir)}
        e.update(env or {})
        return self.spawn(args=["--provider", cli, "--no-session"] + list(args), sets=s, env=e,
                          settings=settings, **kw)

    def calls(self):
        path = os.path.join(self.dir, "calls.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f]

    def prompt(self, d, message="List files", timeout=None, **extra):
        msgs = self.run_prompt(d, message, timeout=timeout, **extra)
        self.check_schemas(msgs)
        return msgs

    def check_schemas(self, msgs):
        for m in msgs:
            schema = "responses.schema.json" if m.get("type") == "response" else "events.schema.json"
            errors = VALIDATOR.errors(m, schema)
            self.assertEqual(errors, [], "%s does not match %s" % (json.dumps(m)[:300], schema))

    @staticmethod
    def of_type(msgs, t):
        return [m for m in msgs if m.get("type") == t]

    def assistant_ends(self, msgs):
        return [m["message"] for m in msgs
                if m.get("type") == "message_end" and m["message"]["role"] == "assistant"]


# -- the four built-ins, one class each -----------------------------------------

# Codex's built-in "openai" provider (no model_provider in a config.toml:
# these tests' HOME has none) run as retryd's own, its retry counts 0.
CODEX_OPENAI = [x for k, v in [
    ("name", '"OpenAI"'), ("wire_api", '"responses"'), ("requires_openai_auth", "true"),
    ("env_http_headers", '{"OpenAI-Organization"="OPENAI_ORGANIZATION",'
                         '"OpenAI-Project"="OPENAI_PROJECT"}'),
    ("request_max_retries", "0"), ("stream_max_retries", "0")]
    for x in ("-c", "model_providers.retryd_openai.%s=%s" % (k, v))] + [
    "-c", 'model_provider="retryd_openai"']

CLIS = {
    "claude": {
        "ok": "claude-success.jsonl", "ok_text": "Done.", "tools": ["Bash"], "ok_tokens": (8, 43),
        "retry": "claude-overloaded.jsonl", "retry_exit": 1, "sid": "S1", "notices": 2,
        "retry_error": "API Error: 529",
        "fatal": "claude-auth.jsonl", "fatal_exit": 1,
        # Its retry notice names the 401 first: the attempt ends on it.
        "fatal_error": "401 authentication_failed",
        "fresh": lambda p: ["-p", p, "--output-format", "stream-json", "--verbose"],
        "resume": lambda sid, p: ["-p", "--resume", sid, p, "--output-format", "stream-json",
                                  "--verbose"],
    },
    "codex": {
        "ok": "codex-success.jsonl", "ok_text": "Yes — there's a README.md in the repository root.",
        "tools": ["command_execution"], "ok_tokens": (24763, 122),
        "retry": "codex-reconnect-failed.jsonl", "retry_exit": 1,
        "sid": "019e49d4-05e3-7111-9bef-5f4f48c36e88", "notices": 2,
        "retry_error": "stream disconnected before completion",
        "fatal": "codex-auth.jsonl", "fatal_exit": 1, "fatal_error": "unexpected status 401 Unauthorized",
        "fresh": lambda p: ["exec", "--json", "--skip-git-repo-check", "-c",
                            "features.unbounded_connection_retries=false"] + CODEX_OPENAI +
                           ["-", ("stdin", p)],
        "resume": lambda sid, p: ["exec", "--json", "resume", "--skip-git-repo-check", "-c",
                                  "features.unbounded_connection_retries=false"] + CODEX_OPENAI +
                                 ["--", sid, "-", ("stdin", p)],
    },
    "gemini": {
        "ok": "gemini-success.jsonl", "ok_text": "There is one file: README.md.",
        "tools": ["run_shell_command"], "ok_tokens": (11598, 69),
        "retry": "gemini-overloaded.jsonl", "retry_exit": 1,
        "sid": "0b6f1c2e-4d5a-4e8f-9a1b-2c3d4e5f6a7b", "notices": 0,
        "retry_error": "The model is overloaded",
        "fatal": "gemini-auth.jsonl", "fatal_exit": 1, "fatal_error": "API key not valid",
        # Gemini CLI drops the failed turn from its saved session (lostTurnOnError).
        "lost_turn": True,
        "fresh": lambda p: ["--prompt=" + p, "--output-format", "stream-json", "--skip-trust"],
        "resume": lambda sid, p: ["--resume", sid, "--prompt=" + p, "--output-format",
                                  "stream-json", "--skip-trust"],
    },
    "pi": {
        "ok": "pi-success.jsonl", "ok_text": "Done", "tools": [], "ok_tokens": (1200, 45),
        # pi exits 0 on failure: only the last assistant stopReason says so.
        "retry": "pi-overloaded.jsonl", "retry_exit": 0,
        "sid": "7d1c0e52-88a1-4f5e-b0c4-2f5e9a6b3c10", "notices": 1,
        "retry_error": "529 {\"type\":\"error\"",
        "fatal": "pi-auth.jsonl", "fatal_exit": 0, "fatal_error": "401 {\"type\":\"error\"",
        # The prompt goes on stdin; -e loads the extension in the daemon's
        # own directory that turns pi's own retries off.
        "fresh": lambda p: ["-p", "--mode", "json", "-e", PI_EXTENSION, ("stdin", p)],
        "resume": lambda sid, p: ["-p", "--mode", "json", "--session", sid, "-e", PI_EXTENSION,
                                  ("stdin", p)],
    },
}
PI_EXTENSION = "<retrydDir>/pi-no-retry.mjs"


def run_of(call):
    """A recorded call as the specs above write it: the extension's private
    path as <retrydDir>/..., the prompt read from stdin as ("stdin", text)."""
    argv = [re.sub(r"^/.*/retryd-pi-[^/]+/", "<retrydDir>/", a) for a in call["argv"]]
    if call.get("stdin"):
        argv.append(("stdin", call["stdin"]))
    return argv


class BuiltinCli:
    """Tests every built-in CLI runs; subclasses set `cli`."""

    cli = None

    @property
    def spec(self):
        return CLIS[self.cli]

    def test_success_streams_text_and_tool_events_and_ends_well(self):
        d = self.start(self.cli, [{"fixture": self.spec["ok"]}])
        msgs = self.prompt(d, "List files")
        [call] = self.calls()
        self.assertEqual(run_of(call), self.spec["fresh"]("List files"))
        self.assertEqual(call["argv0"], FAKE)
        starts = self.of_type(msgs, "tool_execution_start")
        ends = self.of_type(msgs, "tool_execution_end")
        self.assertEqual([s["toolName"] for s in starts], self.spec["tools"])
        self.assertEqual([(e["toolCallId"], e["isError"]) for e in ends],
                         [(s["toolCallId"], False) for s in starts])
        [final] = self.assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "stop")
        self.assertEqual(text_of(final), self.spec["ok_text"])
        self.assertEqual((final["usage"]["input"], final["usage"]["output"]), self.spec["ok_tokens"])
        self.assertEqual(final["provider"], self.cli)
        sig = signature(msgs)
        self.assertEqual(sig[:5], ["response:prompt", "agent_start", "turn_start", "message_start:user",
                                   "message_end:user"])
        self.assertEqual(sig[-3:], ["message_end:assistant", "turn_end", "agent_end"])
        self.assertNotIn("auto_retry_start", sig)
        d.finish()

    def test_retryable_failure_resumes_its_session_with_the_continuation_prompt(self):
        d = self.start(self.cli, [{"fixture": self.spec["retry"], "exit": self.spec["retry_exit"]},
                                  {"fixture": self.spec["ok"]}])
        msgs = self.prompt(d, "Fix the tests")
        first, second = self.calls()
        self.assertEqual(run_of(first), self.spec["fresh"]("Fix the tests"))
        # The exact argv of the resumed attempt: the continuation, or, for a
        # CLI whose session drops a failed turn, the prompt again.
        again = "Fix the tests" if self.spec.get("lost_turn") else CONTINUE
        self.assertEqual(run_of(second), self.spec["resume"](self.spec["sid"], again))
        notices = self.of_type(msgs, "provider_retry")
        self.assertEqual(len(notices), self.spec["notices"])
        for n in notices:
            self.assertEqual(n["provider"], self.cli)
        [start] = self.of_type(msgs, "auto_retry_start")
        self.assertIn(self.spec["retry_error"], start["errorMessage"])
        self.assertEqual(self.of_type(msgs, "auto_retry_end"),
                         [{"type": "auto_retry_end", "success": True, "attempt": 1}])
        failed, final = self.assistant_ends(msgs)
        self.assertEqual(failed["stopReason"], "error")
        self.assertEqual(final["stopReason"], "stop")
        self.assertEqual(text_of(final), self.spec["ok_text"])
        # The failed attempt left the context; one answer remains.
        end = msgs[-1]
        self.assertEqual([m["role"] for m in end["messages"]], ["user", "assistant"])
        # Its provider_retry notices came inside the failed attempt.
        sig = signature(msgs)
        if notices:
            first_notice = sig.index("provider_retry")
            self.assertLess(sig.index("message_start:assistant"), first_notice)
            self.assertLess(first_notice, sig.index("message_end:assistant"))
        d.finish()

    def test_non_retryable_failure_is_reported_and_not_retried(self):
        d = self.start(self.cli, [{"fixture": self.spec["fatal"], "exit": self.spec["fatal_exit"]},
                                  {"fixture": self.spec["ok"]}])
        msgs = self.prompt(d)
        self.assertEqual(len(self.calls()), 1)
        [final] = self.assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "error")
        self.assertIn(self.spec["fatal_error"], final["errorMessage"])
        sig = signature(msgs)
        self.assertNotIn("auto_retry_start", sig)
        self.assertNotIn("auto_retry_end", sig)
        self.assertEqual(sig[-1], "agent_end")
        d.finish()


class ClaudeTests(BuiltinCli, CliCase):
    cli = "claude"


class CodexTests(BuiltinCli, CliCase):
    cli = "codex"


class GeminiTests(BuiltinCli, CliCase):
    cli = "gemini"


class PiTests(BuiltinCli, CliCase):
    cli = "pi"


# -- thinking, as pi streams it -------------------------------------------------

THINKING = {
    # cli: (fixture, the thinking text, its signature or None, the answer)
    "claude": ("claude-thinking.jsonl", "The user wants the files. A listing answers it.",
               "EqQBCkYIBxgCKkBx7mN3QzVp0c2lnbmVkLXRoaW5raW5n", "Done."),
    "pi": ("pi-thinking.jsonl", "The user wants the files. A listing answers it.",
           "ErUBCkYIBxgCKkCpaXNpZ25hdHVyZQ", "Done"),
    "codex": ("codex-success.jsonl", "**Searching for README files**", None,
              "Yes — there's a README.md in the repository root."),
}


class ThinkingTests(CliCase):

    def updates(self, msgs):
        return [m["assistantMessageEvent"] for m in msgs if m.get("type") == "message_update"]

    def test_cli_reasoning_streams_as_thinking_events_before_the_text_in_both_update_modes(self):
        for cli, (fixture, thought, sig, answer) in THINKING.items():
            for mode in ("full", "delta"):
                with self.subTest(cli=cli, mode=mode):
                    d = self.start(cli, [{"fixture": fixture}], sets={"rpc.messageUpdates": mode})
                    msgs = self.prompt(d)
                    ups = self.updates(msgs)
                    kinds = [u["type"] for u in ups]
                    self.assertEqual(kinds[0], "thinking_start")
                    first_text = kinds.index("text_start")
                    self.assertEqual(kinds[first_text - 1], "thinking_end")
                    self.assertEqual(set(kinds[1:first_text - 1]), {"thinking_delta"})
                    self.assertEqual("".join(u["delta"] for u in ups
                                             if u["type"] == "thinking_delta"), thought)
                    [end] = [u for u in ups if u["type"] == "thinking_end"]
                    self.assertEqual(end["content"], thought)
                    full = [m for m in msgs if m.get("type") == "message_update"]
                    if mode == "full":
                        # The partial message at thinking_end holds the whole block.
                        self.assertEqual(full[first_text - 1]["message"]["content"][0]["thinking"],
                                         thought)
                    else:
                        self.assertEqual([m for m in full if "message" in m], [])
                    block = {"type": "thinking", "thinking": thought}
                    if sig is not None:
                        block["thinkingSignature"] = sig
                    [final] = self.assistant_ends(msgs)
                    self.assertEqual(final["stopReason"], "stop")
                    self.assertEqual(final["content"][0], block)
                    self.assertEqual(text_of(final), answer)
                    d.finish()

    def test_bad_thinking_key_stops_startup_naming_it(self):
        from harness import run_cli
        cases = [
            ('providers.claude.thinking={"type":"assistant","feild":"thinking"}',
             "providers.claude.thinking.feild is not a thinking key"),
            ('providers.pi.thinking={"type":"message_update"}',
             'providers.pi.thinking needs "field" or "signature"'),
            ('providers.codex.thinking={"field":"item.text","signature":3}',
             "providers.codex.thinking.signature must be a PATH"),
        ]
        for setting, want in cases:
            with self.subTest(setting=setting):
                cli = setting.split(".")[1]
                rc, out, err = run_cli(["--provider", cli, "--set", setting])
                self.assertEqual(rc, 1, err)
                self.assertEqual(out, "")
                self.assertIn(want, err)


# -- behaviour shared by every CLI, shown with claude ---------------------------

INIT = {"type": "system", "subtype": "init", "session_id": "S7", "model": "m"}


def assistant_text(text):
    return {"type": "assistant", "session_id": "S7",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}


RESULT_OK = {"type": "result", "subtype": "success", "is_error": False, "result": "x",
             "session_id": "S7", "usage": {"input_tokens": 1, "output_tokens": 2}}


class ArgvTests(CliCase):

    def test_prompt_with_shell_metacharacters_reaches_the_cli_byte_for_byte(self):
        d = self.start("claude", [{"lines": [INIT, assistant_text("ok"), RESULT_OK]}])
        msgs = self.prompt(d, NASTY)
        [call] = self.calls()
        self.assertEqual(call["argv"][1], NASTY)
        self.assertEqual(call["argv"], ["-p", NASTY, "--output-format", "stream-json", "--verbose"])
        self.assertEqual(self.assistant_ends(msgs)[0]["stopReason"], "stop")
        d.finish()

    def test_child_runs_in_its_own_process_group_in_the_daemon_cwd_with_no_extra_fds(self):
        d = self.start("claude", [{"lines": [INIT, RESULT_OK]}])
        self.prompt(d)
        [call] = self.calls()
        self.assertEqual(call["pgid"], call["pid"])
        self.assertEqual(call["sid"], call["pid"])
        self.assertNotEqual(call["pgid"], os.getpgid(d.proc.pid))
        self.assertEqual(os.path.realpath(call["cwd"]), os.path.realpath(d.cwd))
        self.assertEqual(call["fds"], [])
        self.assertEqual(call["stdin"], "")
        d.finish()

    def test_daemon_env_is_inherited_and_provider_env_is_added_or_removed(self):
        d = self.start("claude", [{"lines": [INIT, RESULT_OK]}],
                       sets={"providers.claude.env": {"FAKE_ADDED": "1", "FAKE_GONE": None}},
                       env={"FAKE_INHERITED": "yes", "FAKE_GONE": "present"})
        self.prompt(d)
        env = self.calls()[0]["env"]
        self.assertEqual(env.get("FAKE_INHERITED"), "yes")
        self.assertEqual(env.get("FAKE_ADDED"), "1")
        self.assertNotIn("FAKE_GONE", env)
        d.finish()

    def test_extra_args_and_model_args_go_where_the_argv_says(self):
        d = self.start("claude", [{"lines": [INIT, RESULT_OK]}],
                       sets={"providers.claude.args": ["--max-turns", "30"],
                             "providers.claude.models": ["default", "opus"]})
        self.prompt(d, "one")
        r = d.request({"type": "set_model", "provider": "claude", "modelId": "opus"})
        self.assertTrue(r["success"], r)
        self.prompt(d, "two")
        first, second = self.calls()
        self.assertEqual(first["argv"], ["-p", "one", "--output-format", "stream-json", "--verbose",
                                         "--max-turns", "30"])
        self.assertEqual(second["argv"], ["-p", "--resume", "S7", "two", "--output-format",
                                          "stream-json", "--verbose", "--model", "opus",
                                          "--max-turns", "30"])
        models = d.request({"type": "get_available_models"})["data"]["models"]
        self.assertEqual([m["id"] for m in models], ["default", "opus"])
        d.finish()

    def test_next_prompt_resumes_the_conversation_and_new_session_starts_fresh(self):
        d = self.start("claude", [{"lines": [INIT, assistant_text("a"), RESULT_OK]}])
        self.prompt(d, "first")
        self.prompt(d, "second")
        self.assertTrue(d.request({"type": "new_session"})["success"])
        self.prompt(d, "third")
        argvs = [c["argv"] for c in self.calls()]
        self.assertEqual(argvs, [
            ["-p", "first", "--output-format", "stream-json", "--verbose"],
            ["-p", "--resume", "S7", "second", "--output-format", "stream-json", "--verbose"],
            ["-p", "third", "--output-format", "stream-json", "--verbose"],
        ])
        d.finish()

    def test_steering_sent_during_the_backoff_follows_the_continuation_prompt(self):
        d = self.start("claude", [{"lines": [INIT, {"type": "result", "subtype": "success",
                                                    "is_error": True, "api_error_status": 503,
                                                    "result": "Service Unavailable"}]},
                                  {"lines": [INIT, RESULT_OK]}],
                       sets={"retry.baseDelayMs": IDLE_MS})
        d.send({"type": "prompt", "message": "go", "id": "p"})
        d.wait_type("auto_retry_start")
        d.send({"type": "steer", "message": "also update the docs", "id": "s"})
        d.wait_type("agent_end")
        self.assertEqual(self.calls()[1]["argv"][3], CONTINUE + "\n\nalso update the docs")
        d.finish()

    def test_unknown_command_fails_the_attempt_without_retrying(self):
        d = self.start("claude", [{"lines": []}],
                       sets={"providers.claude.command": "/nonexistent/claude-cli"})
        msgs = self.prompt(d)
        [final] = self.assistant_ends(msgs)
        self.assertEqual(final["errorMessage"], "cannot run /nonexistent/claude-cli for provider claude: "
                         "no such file or directory (set providers.claude.command)")
        self.assertNotIn("auto_retry_start", signature(msgs))
        d.finish()

    def test_bad_profile_stops_startup_naming_the_key(self):
        from harness import run_cli
        cases = [
            (["--set", "providers.claude.argv=[]"], "providers.claude.argv must be a non-empty list"),
            (["--set", 'providers.claude.resumeArgv=["claude","-p","{prompt}"]'],
             'providers.claude.resumeArgv has no "{sessionId}"'),
            (["--set", 'providers.claude.argv=["claude","{promt}"]'], "unknown placeholder {promt}"),
            (["--set", 'providers.claude.terminal={"type":"result","faild":true}'],
             "providers.claude.terminal.faild is not a terminal key"),
            (["--set", 'providers.claude.text={"field":"t","match":{"t":"(oops"}}'],
             "providers.claude.text.match.t: missing closing parenthesis"),
            (["--set", "providers.claude.timeoutMs=-1"], "providers.claude.timeoutMs must be an integer"),
            (["--set", 'providers.claude.promptVia="pipe"'], 'providers.claude.promptVia must be'),
        ]
        for extra, want in cases:
            with self.subTest(extra=extra):
                rc, out, err = run_cli(["--provider", "claude"] + extra)
                self.assertEqual(rc, 1, err)
                self.assertEqual(out, "")
                self.assertIn(want, err)


class OutcomeTests(CliCase):

    def test_a_cli_that_dies_before_its_result_opens_no_circuit_for_the_other_daemons(self):
        # Two daemons' CLIs crash four times each with no result line: their
        # processes, not the provider, so a third daemon of the same CLI in
        # the same fleet goes at once (provider failures from two daemons,
        # three in a row, open the shared circuit).
        shared = tempfile.mkdtemp(prefix="retryd-e2e-fleet-")
        self.addCleanup(__import__("shutil").rmtree, shared, True)
        crash = {"lines": [INIT], "stderr": ["fatal: out of memory"], "exit": 3}
        crashed = []
        one = {"XDG_RUNTIME_DIR": shared, "FAKE_AGENT_SERVER": "http://one.fake-agent.invalid"}
        for _ in range(2):
            d = self.start("claude", [crash] * 4, sets={"retry.maxRetries": 3}, env=one)
            self.assertEqual(len(self.of_type(self.prompt(d), "auto_retry_start")), 3)
            crashed.append(d)
        c = self.start("claude", [{"lines": [INIT, assistant_text("done"), RESULT_OK]}], env=one)
        msgs = self.prompt(c)
        self.assertEqual(self.of_type(msgs, "fleet_wait"), [])
        self.assertFalse(c.request({"type": "get_state", "id": "s"})["data"]["fleet"]["open"])
        self.assertEqual(self.assistant_ends(msgs)[-1]["stopReason"], "stop")
        for d in crashed + [c]:
            d.finish()

    def test_a_circuit_opened_through_one_base_url_holds_no_daemon_pointed_at_another(self):
        # Claude Code sends its requests where ANTHROPIC_BASE_URL says: two
        # daemons whose CLIs talk to one gateway share its record, a daemon
        # whose CLI talks to another server is not held by it.
        shared = tempfile.mkdtemp(prefix="retryd-e2e-fleet-")
        self.addCleanup(__import__("shutil").rmtree, shared, True)
        fail = {"lines": [INIT, {"type": "result", "subtype": "success", "is_error": True,
                                 "api_error_status": 503, "result": "Service Unavailable"}]}
        a = {"XDG_RUNTIME_DIR": shared, "ANTHROPIC_BASE_URL": "http://Gateway-A.invalid:8080/v1"}
        b = {"XDG_RUNTIME_DIR": shared, "ANTHROPIC_BASE_URL": "http://gateway-b.invalid:8080/v1"}
        ok = [{"lines": [INIT, assistant_text("done"), RESULT_OK]}]
        first = self.start("claude", [fail] * 3, sets={"retry.maxRetries": 2}, env=a,
                           builtin_server=True)
        self.prompt(first)
        # The second daemon through gateway A meets the first one's failures.
        same = self.start("claude", [fail] * 3, sets={"retry.maxRetries": 2}, env=a,
                          builtin_server=True)
        same.send({"type": "prompt", "id": "p", "message": "List files"})
        wait = same.wait_for(is_type("fleet_wait"), what="a hold for gateway A's failures")
        self.assertEqual(wait["scope"], "claude@gateway-a.invalid:8080|-|default")
        other = self.start("claude", ok, env=b, builtin_server=True)
        msgs = self.prompt(other)
        self.assertEqual(self.of_type(msgs, "fleet_wait"), [])
        self.assertEqual(self.assistant_ends(msgs)[-1]["stopReason"], "stop")
        self.assertEqual(other.request({"type": "get_state", "id": "s"})["data"]["fleet"]["scope"],
                         "claude@gateway-b.invalid:8080|-|default")
        same.send({"type": "abort", "id": "a"})
        same.wait_for(is_type("agent_end"), what="the held prompt aborted")
        for d in (first, same, other):
            d.finish()

    def test_a_password_in_the_cli_s_base_url_never_shows_in_its_model(self):
        d = self.start("claude", [], env={"ANTHROPIC_BASE_URL": "https://u:pw-b7x9q@gw.invalid/v1"},
                       builtin_server=True)
        model = d.request({"type": "get_state", "id": "s"})["data"]["model"]
        self.assertEqual(model["baseUrl"], "https://***@gw.invalid/v1")
        d.finish()
        self.assertNotIn("pw-b7x9q", d.stderr_text())

    def test_no_terminal_line_is_a_retryable_failure_naming_exit_and_last_stderr_line(self):
        d = self.start("claude", [{"lines": [INIT, assistant_text("half way")],
                                   "stderr": ["warming up", "fatal: connection reset by peer", ""],
                                   "exit": 3},
                                  {"lines": [INIT, assistant_text("done"), RESULT_OK]}])
        msgs = self.prompt(d)
        failed, final = self.assistant_ends(msgs)
        self.assertEqual(failed["errorMessage"],
                         "agent exited without a result (exit 3): fatal: connection reset by peer")
        # What it streamed before dying stays visible in the failed message.
        self.assertEqual(text_of(failed), "half way")
        self.assertEqual(self.calls()[1]["argv"][:4], ["-p", "--resume", "S7", CONTINUE])
        self.assertEqual(text_of(final), "done")
        d.finish()

    def test_a_first_turn_failure_without_a_session_id_starts_fresh_with_the_prompt(self):
        # Nothing to resume yet: the retry is a fresh run of the same prompt.
        d = self.start("gemini", [{"stderr": ["fetch failed: connection reset"], "exit": 1},
                                  {"fixture": "gemini-success.jsonl"}])
        msgs = self.prompt(d, "What is in the repo?")
        self.assertEqual(len(self.calls()), 2)
        self.assertEqual(self.calls()[1]["argv"][:1], ["--prompt=What is in the repo?"])
        self.assertNotIn("--resume", self.calls()[1]["argv"])
        failed, final = self.assistant_ends(msgs)
        self.assertIn("fetch failed", failed["errorMessage"])
        self.assertIsNone(final.get("errorMessage"))
        d.finish()

    def test_a_setup_error_ends_the_prompt_at_once_with_the_profiles_sentence(self):
        # Gemini without auth: no JSON at all, a message on stderr, exit 41.
        d = self.start("gemini", [{"stderr": ["Please set an Auth method in your settings.json"],
                                   "exit": 41}],
                       sets={"providers.gemini.setupErrors": [
                           {"match": "Please set an Auth method",
                            "why": "gemini has no auth method: set security.auth.selectedType"}]})
        msgs = self.prompt(d)
        self.assertEqual(len(self.calls()), 1)
        [final] = self.assistant_ends(msgs)
        self.assertEqual(final["errorMessage"],
                         "gemini has no auth method: set security.auth.selectedType")
        self.assertNotIn("auto_retry_start", signature(msgs))
        d.finish()

    def test_a_tool_run_without_a_session_id_is_final_rather_than_run_twice(self):
        d = self.start("gemini", [{"lines": [json.dumps({"type": "tool_use", "tool_name": "ls",
                                                         "tool_id": "t1", "parameters": {}}),
                                             json.dumps({"type": "tool_result", "tool_id": "t1",
                                                         "status": "success", "output": "a"})],
                                   "stderr": ["fetch failed: connection reset"], "exit": 1},
                                  {"fixture": "gemini-success.jsonl"}])
        msgs = self.prompt(d)
        self.assertEqual(len(self.calls()), 1)
        [final] = self.assistant_ends(msgs)
        self.assertIn("a fresh run would run it again", final["errorMessage"])
        d.finish()

    def test_a_clis_own_retries_count_against_retry_max_retries(self):
        # The recording retried twice by itself (two api_retry notices): with
        # maxRetries 2 those were the retries; no run of retryd's follows.
        d = self.start("claude", [{"fixture": "claude-overloaded.jsonl", "exit": 1}],
                       sets={"retry.maxRetries": 2})
        msgs = self.prompt(d)
        self.assertEqual(len(self.calls()), 1)
        [final] = self.assistant_ends(msgs)
        self.assertIn("API Error: 529", final["errorMessage"])
        self.assertIn("(the agent's own retries used up retry.maxRetries (2))",
                      final["errorMessage"])
        self.assertEqual(len(self.of_type(msgs, "provider_retry")), 2)
        d.finish()

    def test_exhausted_retries_end_the_chain_with_the_cli_error(self):
        # keepOwnRetries: the CLI's own retries are the user's, not counted.
        d = self.start("claude", [{"fixture": "claude-overloaded.jsonl", "exit": 1}],
                       sets={"retry.maxRetries": 2, "providers.claude.keepOwnRetries": True})
        msgs = self.prompt(d)
        self.assertEqual(len(self.calls()), 3)
        [end] = self.of_type(msgs, "auto_retry_end")
        self.assertFalse(end["success"])
        self.assertIn("API Error: 529", end["finalError"])
        for call in self.calls()[1:]:
            self.assertEqual(call["argv"][:4], ["-p", "--resume", "S1", CONTINUE])
        d.finish()

    def test_stderr_noise_and_non_json_lines_are_skipped(self):
        noise = ["Loaded cached credentials.", "[WARN] something deprecated"] * 50
        d = self.start("claude", [{"stderr": noise, "lines": [
            "Welcome to the agent!", INIT, "{not json", "[1,2]", {"type": "mystery"},
            "", assistant_text("Hello"), "\x1b[31mred\x1b[0m", RESULT_OK, "trailing junk"]}])
        msgs = self.prompt(d)
        [final] = self.assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "stop")
        self.assertEqual(text_of(final), "Hello")
        d.finish()

    def test_secret_env_values_never_appear_in_events_or_logs(self):
        secret = "sk-test-0123456789abcdef"
        inherited = "sk-ant-inherited-98765"
        d = self.start("claude", [{"lines": [INIT, assistant_text("your key is %s!" % secret),
                                             assistant_text("and %s" % inherited)],
                                   "stderr": ["auth failed for key %s" % secret], "exit": 1}],
                       sets={"providers.claude.env": {"FAKE_SECRET": secret}},
                       env={"RETRYD_LOG": "debug", "ANTHROPIC_API_KEY": inherited})
        msgs = self.prompt(d)
        self.assertEqual(self.calls()[0]["env"]["FAKE_SECRET"], secret)
        raw = "\n".join(d.raw_lines())
        self.assertNotIn(secret, raw)
        self.assertIn("your key is ***!", raw)
        self.assertIn("and ***", raw)
        # Retryable (no terminal line), so there are retries; the first says it.
        final = self.assistant_ends(msgs)[0]
        self.assertEqual(final["errorMessage"], "agent exited without a result (exit 1): auth failed "
                         "for key ***")
        d.finish()
        self.assertNotIn(secret, d.stderr_text())
        self.assertNotIn(inherited, raw + d.stderr_text())


class TimeTests(CliCase):

    def test_idle_timeout_kills_the_whole_group_and_resumes(self):
        d = self.start("claude", [{"lines": [INIT], "hang": True, "child": True},
                                  {"lines": [INIT, assistant_text("back"), RESULT_OK]}],
                       sets={"retry.idleTimeoutMs": IDLE_MS})
        msgs = self.prompt(d, timeout=10)
        first = self.calls()[0]
        failed, final = self.assistant_ends(msgs)
        self.assertEqual(failed["errorMessage"], "stream stall: no output for %d ms" % IDLE_MS)
        self.assertEqual(text_of(final), "back")
        self.assertEqual(self.calls()[1]["argv"][:4], ["-p", "--resume", "S7", CONTINUE])
        # The attempt was reported only after the process and its pipes were
        # done, so the whole group is gone by now, the sleeping child too.
        self.assertEqual(group_alive(first["pgid"]), [])
        self.assertEqual(zombie_children(d.proc.pid), [])
        d.finish()

    def test_a_cli_silent_while_it_starts_is_not_a_stall(self):
        # Node CLIs take seconds to start (more on a loaded machine) before
        # their first line; the stall clock gives them startupMs for it.
        d = self.start("claude", [{"lines": [INIT, assistant_text("late"), RESULT_OK],
                                   "gap": {"after": 0, "ms": 3 * IDLE_MS}}],
                       sets={"retry.idleTimeoutMs": IDLE_MS})
        msgs = self.prompt(d, timeout=10 + 3 * IDLE_MS / 1000.0)
        self.assertEqual(self.of_type(msgs, "auto_retry_start"), [])
        [final] = self.assistant_ends(msgs)
        self.assertEqual(text_of(final), "late")
        self.assertEqual(len(self.calls()), 1)
        d.finish()

    def test_a_cli_silent_past_its_startup_window_is_a_stall_naming_the_setting(self):
        d = self.start("claude", [{"lines": [], "stderr": ["Warning: no 256-color support"],
                                   "hang": True, "child": True},
                                  {"lines": [INIT, assistant_text("back"), RESULT_OK]}],
                       sets={"retry.idleTimeoutMs": IDLE_MS,
                             "providers.claude.startupMs": 2 * IDLE_MS})
        msgs = self.prompt(d, timeout=10 + 2 * IDLE_MS / 1000.0)
        failed, final = self.assistant_ends(msgs)
        self.assertEqual(failed["errorMessage"], "stream stall: no output for %d ms since the "
                         "start (providers.claude.startupMs)" % (2 * IDLE_MS))
        self.assertEqual(text_of(final), "back")
        self.assertEqual(len(self.calls()), 2)
        d.finish()

    def test_an_agent_that_answered_but_hangs_on_exit_keeps_its_answer(self):
        d = self.start("claude", [{"lines": [INIT, assistant_text("all done"), RESULT_OK],
                                   "hang": True, "child": True}],
                       sets={"retry.idleTimeoutMs": IDLE_MS, "providers.claude.killGraceMs": 200})
        msgs = self.prompt(d, timeout=10)
        [final] = self.assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "stop")
        self.assertEqual(text_of(final), "all done")
        self.assertEqual(len(self.calls()), 1)
        self.assertEqual(group_alive(self.calls()[0]["pgid"]), [])
        d.finish()

    def test_pi_stalling_in_a_tool_after_a_message_end_is_a_stall(self):
        lines = [{"type": "session", "version": 3, "id": "P9", "timestamp": "t", "cwd": "/"},
                 {"type": "message_end", "message": {"role": "assistant", "content": [],
                                                     "stopReason": "toolUse"}},
                 {"type": "tool_execution_start", "toolCallId": "c1", "toolName": "bash",
                  "args": {"command": "sleep 600"}}]
        d = self.start("pi", [{"lines": lines, "hang": True},
                              {"fixture": "pi-success.jsonl"}],
                       sets={"retry.idleTimeoutMs": IDLE_MS, "providers.pi.killGraceMs": 200})
        msgs = self.prompt(d, timeout=10)
        failed, final = self.assistant_ends(msgs)
        self.assertEqual(failed["errorMessage"], "stream stall: no output for %d ms" % IDLE_MS)
        # The tool call the kill interrupted is closed as failed.
        ends = self.of_type(msgs, "tool_execution_end")
        self.assertEqual([(e["toolCallId"], e["isError"]) for e in ends], [("c1", True)])
        self.assertEqual(run_of(self.calls()[1]), CLIS["pi"]["resume"]("P9", CONTINUE))
        self.assertEqual(final["stopReason"], "stop")
        d.finish()

    def test_a_group_that_ignores_sigterm_is_killed_after_the_grace(self):
        d = self.start("claude", [{"lines": [INIT], "hang": True, "child": True, "ignoreTerm": True},
                                  {"lines": [INIT, RESULT_OK]}],
                       sets={"retry.idleTimeoutMs": IDLE_MS, "providers.claude.killGraceMs": 300})
        t0 = time.monotonic()
        d.send({"type": "prompt", "message": "x", "id": "p"})
        start = d.wait_type("auto_retry_start", timeout=10)
        elapsed = time.monotonic() - t0
        self.assertEqual(start["errorMessage"], "stream stall: no output for %d ms" % IDLE_MS)
        # The idle time, then the grace before SIGKILL (less scheduling slack).
        self.assertGreaterEqual(elapsed, IDLE_MS / 1000.0 + 0.25)
        # SIGKILL went to the whole group when the grace ran out; a member
        # that is not our child (the hanging grandchild) may take the kernel
        # a moment to finish dying after its parent was reaped.
        self.assertTrue(wait_group_gone(self.calls()[0]["pgid"], 1.0),
                        group_alive(self.calls()[0]["pgid"]))
        d.wait_type("agent_end")
        d.finish()

    @timing_sensitive("a chatty agent's lines arrive too slowly to beat the stall timeout")
    def test_wall_clock_timeout_ends_a_chatty_run(self):
        chatter = [{"type": "system", "subtype": "status", "n": i} for i in range(200)]
        d = self.start("claude", [{"lines": [INIT] + chatter, "delayMs": 50, "hang": True},
                                  {"lines": [INIT, RESULT_OK]}],
                       sets={"retry.idleTimeoutMs": IDLE_MS,
                             "providers.claude.timeoutMs": 2 * IDLE_MS})
        msgs = self.prompt(d, timeout=20)
        failed = self.assistant_ends(msgs)[0]
        self.assertEqual(failed["errorMessage"],
                         "timed out after %d ms (providers.claude.timeoutMs)" % (2 * IDLE_MS))
        self.assertEqual(group_alive(self.calls()[0]["pgid"]), [])
        d.finish()

    def test_abort_kills_the_group_at_once(self):
        d = self.start("claude", [{"lines": [INIT, assistant_text("working")], "hang": True,
                                   "child": True, "ignoreTerm": True}])
        d.send({"type": "prompt", "message": "x", "id": "p"})
        d.wait_for(lambda m: m.get("type") == "message_update"
                   and m["assistantMessageEvent"]["type"] == "text_end")
        call = self.calls()[0]
        t0 = time.monotonic()
        r = d.request({"type": "abort"})
        self.assertTrue(r["success"])
        end = d.wait_type("message_end")
        self.assertEqual(end["message"]["stopReason"], "aborted")
        d.wait_type("agent_end")
        self.assertTrue(wait_group_gone(call["pgid"], 2.0), group_alive(call["pgid"]))
        self.assertLess(time.monotonic() - t0, scaled(1.5))
        self.assertEqual(len(self.calls()), 1)
        d.finish()

    def test_sigterm_to_the_daemon_takes_the_running_agent_down(self):
        d = self.start("claude", [{"lines": [INIT], "hang": True, "child": True}])
        d.send({"type": "prompt", "message": "x", "id": "p"})
        d.wait_type("message_start", timeout=5)
        deadline = time.monotonic() + scaled(5)
        while not self.calls() and time.monotonic() < deadline:
            time.sleep(0.01)
        call = self.calls()[0]
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait_exit(), 0)
        d.check_output_clean()
        self.assertTrue(wait_group_gone(call["pgid"], 2.0), group_alive(call["pgid"]))

    def test_stdin_eof_lets_the_running_agent_finish_then_exits(self):
        d = self.start("claude", [{"fixture": "claude-success.jsonl", "delayMs": 50}])
        d.send({"type": "prompt", "message": "x", "id": "p"})
        d.close_stdin()
        self.assertEqual(d.wait_exit(timeout=10), 0)
        d.check_output_clean()
        msgs = d.remaining()
        self.assertEqual(signature(msgs)[-3:], ["message_end:assistant", "turn_end", "agent_end"])
        self.assertEqual(self.assistant_ends(msgs)[0]["stopReason"], "stop")

    def test_exited_agent_whose_child_holds_the_pipes_is_finished_after_the_grace(self):
        d = self.start("claude", [{"lines": [INIT, assistant_text("ok"), RESULT_OK],
                                   "child": True, "orphan": True}],
                       sets={"providers.claude.killGraceMs": 300})
        msgs = self.prompt(d, timeout=10)
        [final] = self.assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "stop")
        self.assertEqual(group_alive(self.calls()[0]["pgid"]), [])
        d.finish()

    def test_output_paused_by_a_slow_client_is_not_cut_when_the_agent_exits(self):
        # ~45 KiB first: retryd's output for it fills the client's pipe and
        # pauses retryd. Then the last ~6 KiB, which stay in the agent's pipe
        # (retryd is not reading) while the agent exits.
        chunks = ["%04d:" % i + "x" * 995 for i in range(45)]
        d = self.start("claude", [{"lines": [INIT] + [assistant_text(c) for c in chunks]
                                   + [RESULT_OK], "gap": {"after": 41, "ms": int(scaled(0.5) * 1000)}}],
                       sets={"rpc.messageUpdates": "delta", "rpc.outputHighWaterBytes": 1024,
                             "providers.claude.killGraceMs": 100})
        d.pause_reading()
        d.send({"type": "prompt", "message": "x", "id": "p"})
        deadline = time.monotonic() + scaled(10)
        while not self.calls() and time.monotonic() < deadline:
            time.sleep(0.02)
        pid = self.calls()[0]["pid"]
        # The agent wrote everything and exited while retryd was not reading
        # (the client was not): it is reaped, its last output still in the pipe.
        while os.path.exists("/proc/%d" % pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertFalse(os.path.exists("/proc/%d" % pid))
        time.sleep(0.5)  # several killGraceMs: what the pipe holds must not be dropped
        d.resume_reading()
        msgs = d.collect_until(is_type("agent_end"), timeout=20)
        [final] = self.assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "stop")
        self.assertEqual(text_of(final), "".join(chunks))
        d.finish()

    def test_no_descriptor_leaks_across_attempts(self):
        fail = {"lines": [INIT, {"type": "result", "subtype": "success", "is_error": True,
                                 "api_error_status": 529, "result": "Overloaded"}], "exit": 1}
        d = self.start("claude", [fail, fail, fail, {"lines": [INIT, RESULT_OK]}] * 3,
                       sets={"retry.maxRetries": 5})
        self.prompt(d, "warm up")  # 4 attempts
        before = fd_count(d.proc.pid)
        self.prompt(d, "two")      # 4 attempts
        self.prompt(d, "three")    # 4 attempts
        after = fd_count(d.proc.pid)
        self.assertEqual(len(self.calls()), 12)
        self.assertEqual(after, before)
        for call in self.calls():
            self.assertEqual(call["fds"], [])
        self.assertEqual(zombie_children(d.proc.pid), [])
        d.finish()


class ExecProfileTests(CliCase):
    """The worked example of a custom CLI in docs/agent-clis.md, run as written there."""

    def documented_profile(self):
        with open(os.path.join(REPO_ROOT, "docs", "agent-clis.md")) as f:
            text = f.read()
        m = re.search(r"<!-- example: mycli profile.*?-->\n```json\n(.*?)```", text, re.S)
        self.assertIsNotNone(m, "docs/agent-clis.md lost its mycli example")
        return json.loads(m.group(1))

    def test_the_documented_example_runs_with_stdin_prompt_tools_notices_and_resume(self):
        settings = self.documented_profile()
        hello = {"type": "hello", "conversation": "c-42"}
        d = self.start("mycli", [
            {"lines": [hello, {"type": "warn", "text": "retrying (1/3) after 503"},
                       {"type": "done", "ok": False,
                        "error": {"status": 503, "message": "upstream unavailable"}}],
             "exit": 1},
            {"lines": [hello,
                       {"type": "call", "call": {"id": "k1", "tool": "grep",
                                                 "input": {"pattern": "TODO"}}},
                       {"type": "call_done", "call": {"id": "k1", "ok": True,
                                                      "output": "src/a.c:3: TODO"}},
                       {"type": "chunk", "text": "Found one "}, {"type": "chunk", "text": "TODO."},
                       {"type": "done", "ok": True, "tokens": {"in": 120, "out": 9}}]},
        ], settings=settings)
        msgs = self.prompt(d, NASTY)
        first, second = self.calls()
        self.assertEqual(first["argv"], ["run", "--jsonl", "-"])
        self.assertEqual(first["stdin"], NASTY)
        self.assertEqual(second["argv"], ["run", "--jsonl", "--continue", "c-42", "-"])
        self.assertEqual(second["stdin"], CONTINUE)
        self.assertEqual(first["env"].get("FAKE_AGENT_DIR"), self.dir)
        [notice] = self.of_type(msgs, "provider_retry")
        self.assertEqual(notice, {"type": "provider_retry", "attempt": 1, "maxAttempts": 3,
                                  "errorMessage": "retrying (1/3) after 503", "provider": "mycli"})
        [start] = self.of_type(msgs, "auto_retry_start")
        # The terminal's status is typed (the rule's), not folded into the text.
        self.assertEqual((start["errorMessage"], start["rule"]),
                         ("upstream unavailable", "http-status:503"))
        [ts] = self.of_type(msgs, "tool_execution_start")
        self.assertEqual(ts, {"type": "tool_execution_start", "toolCallId": "k1", "toolName": "grep",
                              "args": {"pattern": "TODO"}})
        [te] = self.of_type(msgs, "tool_execution_end")
        self.assertEqual(te["result"], {"content": [{"type": "text", "text": "src/a.c:3: TODO"}]})
        self.assertFalse(te["isError"])
        final = self.assistant_ends(msgs)[-1]
        self.assertEqual(text_of(final), "Found one TODO.")
        self.assertEqual((final["usage"]["input"], final["usage"]["output"]), (120, 9))
        d.finish()


if __name__ == "__main__":
    unittest.main()

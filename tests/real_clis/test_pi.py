"""pi (@earendil-works/pi-coding-agent 1.6.0) under retryd, on the built-in
profile, against the fake server's OpenAI chat part.

pi is pointed at the server the way a user points it at a gateway: a custom
provider in ~/.pi/agent/models.json (api "openai-completions", a fake key)
and defaultProvider/defaultModel in ~/.pi/agent/settings.json. Nothing else
is configured, so pi runs at its own defaults (its own retries on: 4 requests
and 14 s per run on a persistent 503) and retryd at its defaults
(retry.baseDelayMs small to keep the tests fast).

The tests state the targets (docs/agent-clis/pi.md): one request per retryd
attempt, every resumed request carrying the failed prompt, no doubled text,
setup errors ending at once with a sentence naming the fix, a tool run once
across a resume. docs/agent-clis/pi.md lists which ones need the C side
(ownRetriesOff, setupErrors, resumeFailed) to pass.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import realcli
from realcli import assistant_ends, message_deltas, of_type
from harness import text_of

ANSWER = "ANSWER-OK: this is the complete answer"
CONTINUE = "Continue from where you left off."
KEY = "sk-fake-pi-0123456789abcdef"
# pi's own network switches: no model catalog refresh, no pi.dev version
# request, no install telemetry or attribution headers.
PI_ENV = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0",
          "OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": None, "PI_CODING_AGENT_DIR": None,
          "PI_CODING_AGENT_SESSION_DIR": None}
PROMPT_TIMEOUT = 45
OVERFLOW = {"error": {"message": "This model's maximum context length is 128000 tokens. However, "
                      "your messages resulted in 130000 tokens. Please reduce the length of "
                      "the messages.", "type": "invalid_request_error", "param": "messages",
                      "code": "context_length_exceeded"}}
QUOTA = {"error": {"message": "You exceeded your current quota, please check your plan and "
                   "billing details. For more information on this error, read the docs: "
                   "https://platform.openai.com/docs/guides/error-codes/api-errors.",
                   "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}


def chat_requests(srv):
    return [r for r in srv.requests() if r["path"].split("?")[0].endswith("/chat/completions")]


def content_text(content):
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def user_texts(req):
    return [content_text(m.get("content")) for m in req["body"]["messages"]
            if m.get("role") == "user"]


def node_version(path):
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except OSError:
        return None
    v = out.stdout.strip().lstrip("v").split(".")
    return tuple(int(x) for x in v[:2]) if len(v) >= 2 and all(x.isdigit() for x in v[:2]) else None


class PiCase(realcli.RealCliCase):
    CLI = "pi"

    def pi_config(self, srv, api_key=KEY, settings=None):
        """The user's own pi configuration: a gateway in models.json."""
        self.agent_dir = os.path.join(self.home, ".pi", "agent")
        os.makedirs(self.agent_dir, exist_ok=True)
        provider = {"baseUrl": srv.url + "/v1", "api": "openai-completions",
                    "models": [{"id": "fake-model", "name": "Fake Model",
                                "contextWindow": 128000, "maxTokens": 4096}]}
        if api_key:
            provider["apiKey"] = api_key
        with open(os.path.join(self.agent_dir, "models.json"), "w") as f:
            json.dump({"providers": {"fake": provider}}, f)
        s = {"defaultProvider": "fake", "defaultModel": "fake-model"}
        s.update(settings or {})
        with open(os.path.join(self.agent_dir, "settings.json"), "w") as f:
            json.dump(s, f)

    def user_files(self):
        out = {}
        for name in ("models.json", "settings.json", "auth.json"):
            p = os.path.join(self.agent_dir, name)
            if os.path.exists(p):
                with open(p, "rb") as f:
                    out[name] = f.read()
        return out

    def daemon(self, sets=None, env=None, args=()):
        # realcli's daemon() sets "provider", which is a flag, not a setting.
        s = {"providers.pi.command": self.bin, "retry.baseDelayMs": 50}
        s.update(sets or {})
        e = self.base_env()
        e.update(PI_ENV)
        e.update(env or {})
        return self.spawn(args=("--no-session", "--provider", "pi") + tuple(args), sets=s, env=e,
                          cwd=self.work)

    def start(self, plan, sets=None, env=None, args=(), api_key=KEY, settings=None):
        srv = self.fake_server(plan)
        self.pi_config(srv, api_key, settings)
        self.before = self.user_files()
        return self.daemon(sets=sets, env=env, args=args), srv

    def prompt(self, d, message, timeout=PROMPT_TIMEOUT):
        t0 = time.monotonic()
        msgs = self.run_prompt(d, message, timeout=timeout)
        self.elapsed = time.monotonic() - t0
        self.ended_at = time.time()
        return msgs

    def assert_untouched(self):
        # pi itself creates an empty auth.json; the user's own files stay as they were.
        now = self.user_files()
        self.assertEqual({k: now.get(k) for k in self.before}, self.before,
                         "retryd changed the user's ~/.pi/agent")

    def assert_no_doubled_text(self, msgs, answer=ANSWER):
        for msg in assistant_ends(msgs):
            text = text_of(msg)
            self.assertLessEqual(text.count("ANSWER-OK"), 1, "doubled text: %r" % text)
        for pieces in message_deltas(msgs):
            streamed = "".join(pieces)
            self.assertLessEqual(streamed.count("ANSWER-OK"), 1, "doubled deltas: %r" % streamed)
        final = assistant_ends(msgs)[-1]
        self.assertEqual(text_of(final), answer)
        self.assertEqual("".join(message_deltas(msgs)[-1]), answer)

    def assert_carries(self, req, *texts):
        users = user_texts(req)
        for t in texts:
            self.assertTrue(any(u.startswith(t) for u in users),
                            "request #%d lost %r: its user turns are %r" % (req["seq"], t, users))

    def assert_setup_error(self, msgs, srv, fix):
        """Ends at once: no request, no retry, the profile's sentence naming the fix."""
        self.assertEqual(chat_requests(srv), [])
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        [final] = assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "error")
        self.assertIn(fix, final["errorMessage"])
        self.assertLess(self.elapsed, 10)


class PiSetupTests(PiCase):
    """How pi is started: the gateway, the prompt, the setup errors."""

    def test_a_prompt_reaches_the_gateway_verbatim_and_nothing_else(self):
        # A prompt that pi's argv parser would take for an option or an
        # @file include, and that a shell would expand.
        prompt = "-rf @notes.txt \"$HOME\" {sessionId} --model x"
        d, srv = self.start([{"text": ANSWER}])
        msgs = self.prompt(d, prompt)
        reqs = srv.requests()
        self.assertEqual([r["path"] for r in reqs], ["/v1/chat/completions"])
        req = reqs[0]
        self.assertEqual(user_texts(req), [prompt])
        self.assertIn("authorization", req["secretHashes"], "the key from models.json")
        [final] = assistant_ends(msgs)
        self.assertEqual((final["stopReason"], text_of(final)), ("stop", ANSWER))
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        self.assertEqual(of_type(msgs, "provider_retry"), [])
        self.assert_untouched()
        self.assertFalse(os.path.exists(os.path.join(self.work, ".pi")))
        d.finish()

    def test_an_unknown_model_ends_at_once_naming_the_fix(self):
        d, srv = self.start([{"text": "never"}], args=("--model", "nosuch/model-x"))
        msgs = self.prompt(d, "hi")
        # pi: 'Error: Model "nosuch/model-x" not found. Use --list-models ...', exit 1
        self.assert_setup_error(msgs, srv, "pi --list-models")
        d.finish()

    def test_a_missing_api_key_ends_at_once_naming_the_fix(self):
        d, srv = self.start([{"text": "never"}], api_key=None)
        msgs = self.prompt(d, "hi")
        # pi: the session header, then "No API key found for fake." on stderr, exit 1
        self.assert_setup_error(msgs, srv, "pi auth login")
        d.finish()

    def test_an_unknown_option_ends_at_once_naming_the_fix(self):
        d, srv = self.start([{"text": "never"}], sets={"providers.pi.args": ["--bogus-flag"]})
        msgs = self.prompt(d, "hi")
        # pi: "Error: Unknown option: --bogus-flag", exit 1
        self.assert_setup_error(msgs, srv, "providers.pi.args")
        d.finish()

    def test_an_old_node_first_on_path_ends_at_once_naming_the_fix(self):
        old = shutil.which("node", path="/usr/local/bin:/usr/bin:/bin")
        v = node_version(old) if old else None
        if v is None or v >= (22, 19):
            self.skipTest("no node older than 22.19 on this machine")
        bindir = tempfile.mkdtemp(prefix="retryd-oldnode-")
        self.addCleanup(shutil.rmtree, bindir, True)
        os.symlink(old, os.path.join(bindir, "node"))
        path = bindir + os.pathsep + self.base_env()["PATH"]
        d, srv = self.start([{"text": "never"}], env={"PATH": path})
        msgs = self.prompt(d, "hi")
        # node: "SyntaxError: ... 'enableCompileCache'" and "Node.js v20.20.2", exit 1
        self.assert_setup_error(msgs, srv, "22.19")
        d.finish()

    def test_a_vanished_session_starts_fresh_and_resends_the_prompt(self):
        d, srv = self.start([{"text": "FIRST-OK"}, {"text": ANSWER}])
        self.prompt(d, "first question")
        # The user (or a cleanup job) removed pi's sessions: --session fails
        # with "No session found matching 'ID'".
        shutil.rmtree(os.path.join(self.agent_dir, "sessions"))
        msgs = self.prompt(d, "second question")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 2, "one fresh run, no retries of the impossible resume")
        # The fresh run replays the conversation before the prompt, as text.
        last = user_texts(reqs[1])[-1]
        self.assertIn("first question", last)
        self.assertTrue(last.rstrip().endswith("second question"), last)
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), ANSWER)
        self.assertLess(self.elapsed, 15)
        d.finish()


class PiRetryTests(PiCase):
    """pi's own retries are off: retryd makes every attempt, one request each."""

    def test_a_persistent_overload_costs_one_request_per_attempt(self):
        d, srv = self.start({"steps": [], "default": {"status": 503}})
        msgs = self.prompt(d, "What is 6 times 7?")
        reqs = chat_requests(srv)
        starts = of_type(msgs, "auto_retry_start")
        self.assertEqual(len(starts), 3, "retryd's retry.maxRetries")
        self.assertEqual(len(reqs), len(starts) + 1, "one request per attempt (pi's own 4 each)")
        for r in reqs:
            self.assert_carries(r, "What is 6 times 7?")
        [end] = of_type(msgs, "auto_retry_end")
        self.assertEqual((end["success"], end.get("errorClass")), (False, "retryable"))
        self.assertEqual(of_type(msgs, "provider_retry"), [])
        self.assertLess(self.elapsed, 20)
        self.assert_untouched()
        d.finish()

    def test_an_overload_then_success_resumes_with_the_prompt(self):
        d, srv = self.start([{"status": 503}, {"text": ANSWER}])
        msgs = self.prompt(d, "What is 6 times 7?")
        first, second = chat_requests(srv)
        self.assert_carries(second, "What is 6 times 7?", CONTINUE)
        [start] = of_type(msgs, "auto_retry_start")
        self.assertEqual((start["errorClass"], start["rule"]), ("retryable", "http-status:503"))
        self.assertEqual(of_type(msgs, "auto_retry_end"),
                         [{"type": "auto_retry_end", "success": True, "attempt": 1}])
        self.assertEqual(of_type(msgs, "provider_retry"), [])
        self.assert_no_doubled_text(msgs)
        self.assertLess(self.elapsed, 10, "pi's own first backoff is 2 s")
        d.finish()

    def test_a_cut_stream_never_doubles_text(self):
        d, srv = self.start([{"text": ANSWER, "dropAfterChunks": 3, "dropMode": "close"},
                             {"text": ANSWER}])
        msgs = self.prompt(d, "Say the answer")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 2)
        self.assert_carries(reqs[1], "Say the answer", CONTINUE)
        [start] = of_type(msgs, "auto_retry_start")
        self.assertEqual(start["errorClass"], "retryable")
        self.assertIn("other side closed", start["errorMessage"])
        self.assert_no_doubled_text(msgs)
        d.finish()

    def test_a_clean_early_end_is_retried(self):
        # The body ends properly after three chunks with no finish_reason:
        # pi says "Stream ended without finish_reason".
        d, srv = self.start([{"text": ANSWER, "dropAfterChunks": 3, "dropMode": "eof"},
                             {"text": ANSWER}])
        msgs = self.prompt(d, "Say the answer")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 2)
        self.assert_carries(reqs[1], "Say the answer", CONTINUE)
        [start] = of_type(msgs, "auto_retry_start")
        self.assertIn("Stream ended without finish_reason", start["errorMessage"])
        self.assertEqual(start["errorClass"], "retryable")
        self.assert_no_doubled_text(msgs)
        d.finish()

    def test_a_cut_answer_is_told_again_by_pi_so_retryd_replays_it_saying_why(self):
        # pi leaves the failed message out of what the resumed session sends:
        # the model starts over, so the cut text is not continued.
        d, srv = self.start([{"text": ANSWER, "dropAfterChunks": 3, "dropMode": "close"},
                             {"text": ANSWER}])
        msgs = self.prompt(d, "Say the answer")
        first, second = chat_requests(srv)
        self.assertEqual([m for m in second["body"]["messages"] if m.get("role") == "assistant"],
                         [])
        [start] = of_type(msgs, "auto_retry_start")
        self.assertEqual(start["continuation"], {
            "mode": "replay", "keptChars": 0,
            "reason": "the CLI's resumed session does not go on from the cut text"})
        self.assertEqual(text_of(assistant_ends(msgs)[0]), "ANSWER-OK: this is")
        self.assert_no_doubled_text(msgs)
        d.finish()

    def test_a_rate_limit_with_retry_after_is_retried_by_retryd(self):
        d, srv = self.start([{"status": 429, "headers": {"retry-after": "1"}}, {"text": ANSWER}])
        msgs = self.prompt(d, "What is 6 times 7?")
        first, second = chat_requests(srv)
        self.assert_carries(second, "What is 6 times 7?", CONTINUE)
        starts = of_type(msgs, "auto_retry_start")
        self.assertEqual(len(starts), 1, "retryd, not pi, retries")
        start = starts[0]
        self.assertEqual((start["errorClass"], start["rule"]), ("retryable", "http-status:429"))
        self.assertEqual(of_type(msgs, "provider_retry"), [])
        self.assert_no_doubled_text(msgs)
        d.finish()

    def test_a_401_ends_at_once_non_retryable(self):
        d, srv = self.start([{"status": 401}, {"text": "never"}])
        msgs = self.prompt(d, "hi")
        [req] = chat_requests(srv)
        self.assertLess(self.ended_at - req["time"], 2.0)
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        [final] = assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "error")
        self.assertIn("Incorrect API key provided", final["errorMessage"])
        self.assertEqual(self.classify(d, final["errorMessage"]), "non_retryable")
        d.finish()

    def test_a_usage_limit_is_not_retried(self):
        d, srv = self.start([{"status": 429, "body": QUOTA}, {"text": "never"}])
        msgs = self.prompt(d, "hi")
        self.assertEqual(len(chat_requests(srv)), 1)
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        [final] = assistant_ends(msgs)
        self.assertIn("insufficient_quota", final["errorMessage"])
        self.assertEqual(self.classify(d, final["errorMessage"]), "usage_limit")
        d.finish()

    def test_a_context_overflow_is_not_retried(self):
        d, srv = self.start([{"status": 400, "body": OVERFLOW}, {"text": "never"}])
        msgs = self.prompt(d, "hi")
        self.assertEqual(len(chat_requests(srv)), 1, "neither retried nor compacted")
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        [final] = assistant_ends(msgs)
        self.assertIn("context_length_exceeded", final["errorMessage"])
        self.assertEqual(self.classify(d, final["errorMessage"]), "context_overflow")
        d.finish()

    def test_a_stall_killed_by_the_idle_timeout_resumes_with_the_prompt(self):
        d, srv = self.start([{"text": ANSWER, "hangAfterChunks": 2}, {"text": ANSWER}],
                            sets={"retry.idleTimeoutMs": 2000})
        msgs = self.prompt(d, "Say the answer")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 2)
        self.assert_carries(reqs[1], "Say the answer", CONTINUE)
        [start] = of_type(msgs, "auto_retry_start")
        self.assertEqual(start["errorClass"], "retryable")
        self.assert_no_doubled_text(msgs)
        self.assertLess(self.elapsed, 15)
        d.finish()

    def test_killed_before_its_first_answer_pi_resumes_with_the_prompt(self):
        d, srv = self.start([{"hangBeforeHeaders": True}, {"text": ANSWER}],
                            sets={"retry.idleTimeoutMs": 2000})
        msgs = self.prompt(d, "What is 6 times 7?")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 2)
        # pi 1.6 writes its session file at the user message, so the resume
        # finds the prompt there.
        self.assert_carries(reqs[1], "What is 6 times 7?", CONTINUE)
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), ANSWER)
        self.assertLess(self.elapsed, 15)
        d.finish()


class PiConversationTests(PiCase):
    """Later prompts and tool calls across a failure."""

    def test_a_failure_on_the_second_prompt_keeps_the_conversation(self):
        d, srv = self.start([{"text": "FIRST-OK"}, {"status": 503}, {"text": ANSWER}])
        self.prompt(d, "first question")
        msgs = self.prompt(d, "second question")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 3)
        self.assert_carries(reqs[1], "first question", "second question")
        self.assert_carries(reqs[2], "first question", "second question", CONTINUE)
        assistants = [content_text(m.get("content")) for m in reqs[2]["body"]["messages"]
                      if m.get("role") == "assistant"]
        self.assertIn("FIRST-OK", assistants)
        self.assertEqual(len(of_type(msgs, "auto_retry_start")), 1)
        self.assert_no_doubled_text(msgs)
        d.finish()

    def tool_then_failure(self, call, check_result):
        d, srv = self.start([{"toolCalls": [call]}, {"status": 503}, {"text": ANSWER}])
        msgs = self.prompt(d, "Use the tool")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 3)
        starts = of_type(msgs, "tool_execution_start")
        ends = of_type(msgs, "tool_execution_end")
        self.assertEqual([s["toolName"] for s in starts], [call["name"]])
        self.assertEqual([e["toolCallId"] for e in ends], [starts[0]["toolCallId"]])
        # The resumed request still holds the call and its result.
        for req in reqs[1:]:
            self.assert_carries(req, "Use the tool")
            msgs_sent = req["body"]["messages"]
            calls = [c["id"] for m in msgs_sent if m.get("role") == "assistant"
                     for c in m.get("tool_calls") or []]
            results = [m for m in msgs_sent if m.get("role") == "tool"]
            self.assertEqual(calls, [starts[0]["toolCallId"]])
            self.assertEqual([r["tool_call_id"] for r in results], calls)
            check_result(content_text(results[0]["content"]))
        self.assert_carries(reqs[2], CONTINUE)
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), ANSWER)
        return d, msgs

    def test_a_shell_command_runs_once_across_a_resume(self):
        call = {"name": "bash", "arguments": {"command": "echo TOOL-RAN >> ran.txt; wc -l < ran.txt"}}
        d, _ = self.tool_then_failure(call, lambda out: self.assertEqual(out.strip(), "1"))
        with open(os.path.join(self.work, "ran.txt")) as f:
            self.assertEqual(f.read(), "TOOL-RAN\n", "the command ran once")
        d.finish()

    def test_a_file_read_survives_a_resume(self):
        with open(os.path.join(self.work, "notes.txt"), "w") as f:
            f.write("NOTES-CONTENT-7\n")
        call = {"name": "read", "arguments": {"path": "notes.txt"}}
        d, _ = self.tool_then_failure(call, lambda out: self.assertIn("NOTES-CONTENT-7", out))
        d.finish()


class PiKeepOwnRetriesTests(PiCase):
    """keepOwnRetries: pi retries inside the attempt; retryd shows it, never glues the tries."""

    def test_pi_retrying_a_cut_stream_itself_does_not_double_text(self):
        d, srv = self.start([{"text": ANSWER, "dropAfterChunks": 3, "dropMode": "close"},
                             {"text": ANSWER}], sets={"providers.pi.keepOwnRetries": True})
        msgs = self.prompt(d, "Say the answer")
        self.assertEqual(len(chat_requests(srv)), 2)
        [notice] = of_type(msgs, "provider_retry")
        self.assertIn("other side closed", notice["errorMessage"])
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        self.assert_no_doubled_text(msgs)
        d.finish()

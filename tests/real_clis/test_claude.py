"""Claude Code (2.1.332) under retryd, at the built-in profile's defaults,
against the fake Anthropic server (tests/fixtures/fake_llm_server.py) on
127.0.0.1: faults injected at the API, what the server received and what
retryd emitted. docs/agent-clis/claude.md has the measurements behind each
test.

The tests state the targets (issue 21's "done when"): a persistent fault
costs one request per retryd attempt (CLAUDE_CODE_MAX_RETRIES=0 and no
non-streamed fallback: the profile's ownRetriesOff), a 401 ends at once as
non_retryable, every resumed request carries the failed prompt, no text is
doubled, a setup error ends the prompt at once with a sentence naming the
fix, a tool runs once whatever happens after it. Where today's retryd does
not do that yet, the test fails, saying what happened.

Every run is bounded: claude's own retries, when not turned off, take up to
190 s, so the waits here are short and a test fails rather than waits.
"""
import glob
import hashlib
import os
import signal
import time
import unittest

import realcli
from harness import text_of

PROMPT = "What is 2+2? Answer with one word."
CONTINUE = "Continue from where you left off. Do not repeat work that is already done."
FAKE_KEY = "sk-ant-api03-retryd-fake-key-not-a-real-one-0000000000"
FAKE_OAUTH = "sk-ant-oat01-retryd-fake-oauth-token-not-real-0000000000"
VERSION = "2.1.332"

# The bodies the real API sends.
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
              "request_id": "req_011CXoverloaded"}
API_ERROR = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"},
             "request_id": "req_011CXapierror"}
AUTH = {"type": "error", "error": {"type": "authentication_error",
                                   "message": "invalid x-api-key"},
        "request_id": "req_011CXauth"}
RATE = {"type": "error", "error": {"type": "rate_limit_error", "message": (
    "This request would exceed the rate limit for your organization (00000000-0000-0000-"
    "0000-000000000000) of 50 requests per minute. For details, refer to: "
    "https://docs.claude.com/en/api/rate-limits.")}, "request_id": "req_011CXrate"}
CREDIT = {"type": "error", "error": {"type": "invalid_request_error", "message": (
    "Your credit balance is too low to access the Anthropic API. Please go to Plans & "
    "Billing to upgrade or purchase credits.")}, "request_id": "req_011CXcredit"}
TOO_LONG = {"type": "error", "error": {"type": "invalid_request_error",
                                       "message": "prompt is too long: 215234 tokens > 200000 maximum"},
            "request_id": "req_011CXtoolong"}


def subscription_limit_headers():
    """A claude.ai subscription's 5-hour window, spent (resets in 2 h)."""
    reset = str(int(time.time()) + 7200)
    return {"anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-reset": reset,
            "anthropic-ratelimit-unified-representative-claim": "five_hour",
            "anthropic-ratelimit-unified-5h-status": "rejected",
            "anthropic-ratelimit-unified-5h-reset": reset}


def texts_of_user(req):
    """The user-visible text parts of every user message of a recorded request
    (Claude Code's own <system-reminder> parts left out), stripped."""
    out = []
    for m in (req.get("body") or {}).get("messages", []):
        if m.get("role") != "user":
            continue
        content = m["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for part in content:
            if part.get("type") == "text" and not part["text"].startswith("<system-reminder>"):
                out.append(part["text"].strip())
    return out


def blocks_of(req, role, kind):
    out = []
    for m in (req.get("body") or {}).get("messages", []):
        if m.get("role") == role and isinstance(m["content"], list):
            out += [p for p in m["content"] if p.get("type") == kind]
    return out


class ClaudeCase(realcli.RealCliCase):
    CLI = "claude"

    def setUp(self):
        super().setUp()
        v = realcli.package_version("@anthropic-ai/claude-code")
        if v is not None and v != VERSION:
            self.skipTest("these measurements are of Claude Code %s, not %s" % (VERSION, v))
        # Runs last: no claude of this test outlives it (a claude orphaned
        # while it retries by itself would go on for minutes).
        self.addCleanup(self.kill_leftovers)

    def start(self, plan, sets=None, env=None, args=None):
        self.srv = self.fake_server(plan)
        e = {k: None for k in os.environ if k.startswith(("CLAUDE", "ANTHROPIC"))}
        e.update({"ANTHROPIC_BASE_URL": self.srv.url, "ANTHROPIC_API_KEY": FAKE_KEY,
                  # No telemetry, no error reports, no update checks: with
                  # this one switch claude connects to nothing but the server.
                  "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                  "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
                  "DISABLE_AUTOUPDATER": "1"})
        e.update(env or {})
        s = {}
        if args:
            s["providers.claude.args"] = list(args)
        s.update(sets or {})
        self.d = self.daemon(sets=s, env=e)
        return self.d

    def ask(self, message=PROMPT, timeout=30):
        t0 = time.monotonic()
        msgs = self.run_prompt(self.d, message, timeout=timeout)
        self.elapsed = time.monotonic() - t0
        return msgs

    def api(self):
        """The recorded requests to the Messages API."""
        reqs = self.srv.requests()
        for r in reqs:
            self.assertEqual((r["method"], r["path"].split("?")[0]), ("POST", "/v1/messages"),
                             "claude asked the server for something else: %s" % r["path"])
        return reqs

    def check_carries(self, req, *prompts):
        """The request still holds each prompt (the failed one included)."""
        texts = texts_of_user(req)
        for p in prompts:
            self.assertIn(p, texts, "request #%d lost %r; its user texts: %r"
                          % (req["seq"], p, texts))

    def check_one_request_per_attempt(self, reqs):
        st = self.stats()
        self.assertEqual(len(reqs), st["attempts"],
                         "%d requests for %d retryd attempts (claude retried by itself): %s"
                         % (len(reqs), st["attempts"],
                            [(r["outcome"], r["body"].get("stream")) for r in reqs]))
        for r in reqs:
            self.assertIs(r["body"].get("stream"), True,
                          "request #%d is claude's non-streamed fallback" % r["seq"])


class Basics(ClaudeCase):
    def test_success_is_one_streamed_request_to_the_server_only(self):
        self.start([{"text": "Four."}])
        msgs = self.ask()
        self.check_answer(msgs, "Four.")
        [req] = self.api()
        self.assertIs(req["body"]["stream"], True)
        self.assertEqual(req["secretHashes"]["x-api-key"][:4],
                         hashlib.sha256(FAKE_KEY.encode()).hexdigest()[:4])
        self.check_carries(req, PROMPT)
        self.assertEqual(self.of_type(msgs, "auto_retry_start"), [])
        self.assertEqual(self.of_type(msgs, "provider_retry"), [])

    def test_second_prompt_resumes_the_conversation(self):
        self.start([{"text": "Four."}, {"text": "Six."}])
        self.ask()
        msgs = self.ask("And 3+3?")
        self.check_answer(msgs, "Six.")
        first, second = self.api()
        self.check_carries(second, PROMPT, "And 3+3?")
        self.assertEqual(blocks_of(second, "assistant", "text")[-1]["text"], "Four.")


class OwnRetries(ClaudeCase):
    """Turned down by the profile (ownRetriesOff): at most one request per
    retryd attempt. Claude Code 2.1.332 left alone: 11 requests in 190 s on
    a persistent 500 (and on a 401), 3 per run on an overloaded_error, a
    non-streamed resend after a cut stream."""

    def test_persistent_overload_costs_one_request_per_attempt(self):
        self.start({"steps": [], "default": {"status": 529, "body": OVERLOADED}},
                   sets={"retry.maxRetries": 2})
        msgs = self.ask(timeout=40)
        reqs = self.api()
        self.assertEqual(len(reqs), 3, "3 attempts, %d requests" % len(reqs))
        self.check_one_request_per_attempt(reqs)
        [end] = self.of_type(msgs, "auto_retry_end")
        self.assertIs(end["success"], False)
        self.assertEqual(end["errorClass"], "retryable")
        self.assertEqual(len(self.of_type(msgs, "auto_retry_start")), 2)
        for r in reqs:
            self.check_carries(r, PROMPT)

    def test_persistent_503_costs_one_request_per_attempt(self):
        self.start({"steps": [], "default": {"status": 503}}, sets={"retry.maxRetries": 1})
        msgs = self.ask(timeout=40)
        reqs = self.api()
        self.assertEqual(len(reqs), 2)
        self.check_one_request_per_attempt(reqs)
        self.assertIs(self.of_type(msgs, "auto_retry_end")[0]["success"], False)

    def test_the_retry_watchdog_in_the_environment_is_turned_off_too(self):
        # CLAUDE_CODE_RETRY_WATCHDOG=1 waits out a 429/529 forever, whatever
        # CLAUDE_CODE_MAX_RETRIES says (6 requests in 25 s, measured).
        self.start({"steps": [], "default": {"status": 529, "body": OVERLOADED}},
                   sets={"retry.maxRetries": 1}, env={"CLAUDE_CODE_RETRY_WATCHDOG": "1"})
        msgs = self.ask(timeout=30)
        reqs = self.api()
        self.assertEqual(len(reqs), 2)
        self.check_one_request_per_attempt(reqs)
        self.assertIs(self.of_type(msgs, "auto_retry_end")[0]["success"], False)

    def test_persistent_500_costs_one_request_per_attempt(self):
        # Left alone, claude spends 190 s and 11 requests on each attempt.
        self.start({"steps": [], "default": {"status": 500, "body": API_ERROR}},
                   sets={"retry.maxRetries": 1})
        msgs = self.ask(timeout=30)
        reqs = self.api()
        self.assertEqual(len(reqs), 2)
        self.check_one_request_per_attempt(reqs)
        self.assertLess(self.elapsed, 20)
        self.assertEqual(self.of_type(msgs, "auto_retry_end")[0]["errorClass"], "retryable")


class Faults(ClaudeCase):
    def test_overload_then_success_resumes_with_the_prompt(self):
        self.start([{"status": 529, "body": OVERLOADED}, {"text": "Four."}])
        msgs = self.ask()
        self.check_answer(msgs, "Four.")
        first, second = self.api()
        self.check_one_request_per_attempt([first, second])
        self.assertEqual(first["outcome"], "error-status")
        # The resumed session holds the failed prompt (merged with the
        # continuation into one user message) and not the error.
        self.check_carries(second, PROMPT, CONTINUE)
        self.assertEqual(blocks_of(second, "assistant", "text"), [])
        [start] = self.of_type(msgs, "auto_retry_start")
        self.assertEqual(start["errorClass"], "retryable")
        self.assertIn("529", start["errorMessage"])
        self.assertIs(self.of_type(msgs, "auto_retry_end")[0]["success"], True)

    def test_cut_stream_is_retried_by_retryd_with_the_prompt(self):
        self.start([{"text": "Fo ur and more words", "dropAfterChunks": 2, "dropMode": "close"},
                    {"text": "Four."}])
        msgs = self.ask()
        self.check_answer(msgs, "Four.")
        reqs = self.api()
        self.assertEqual(len(reqs), 2)
        self.check_one_request_per_attempt(reqs)
        self.check_carries(reqs[1], PROMPT)
        # "API Error: Connection to the API was lost (ECONNRESET)": transport.
        [start] = self.of_type(msgs, "auto_retry_start")
        self.assertEqual(start["errorClass"], "retryable", start)
        self.assertIn("Connection to the API was lost", start["errorMessage"])

    def test_clean_early_end_is_retried_by_retryd_with_the_prompt(self):
        # The body ends properly (last chunk) without message_stop:
        # "Connection to the API was lost (StreamTruncated)".
        self.start([{"text": "Fo ur and more words", "dropAfterChunks": 2, "dropMode": "eof"},
                    {"text": "Four."}])
        msgs = self.ask()
        self.check_answer(msgs, "Four.")
        reqs = self.api()
        self.assertEqual(len(reqs), 2)
        self.check_one_request_per_attempt(reqs)
        self.check_carries(reqs[1], PROMPT)
        [start] = self.of_type(msgs, "auto_retry_start")
        self.assertEqual(start["errorClass"], "retryable", start)

    def test_rate_limit_with_retry_after(self):
        # claude's result line does not carry retry-after: retryd backs off
        # on its own schedule.
        self.start([{"status": 429, "body": RATE, "headers": {"retry-after": "1"}},
                    {"text": "Four."}])
        msgs = self.ask()
        self.check_answer(msgs, "Four.")
        reqs = self.api()
        self.assertEqual(len(reqs), 2)
        self.check_one_request_per_attempt(reqs)
        self.check_carries(reqs[1], PROMPT)
        [start] = self.of_type(msgs, "auto_retry_start")
        self.assertEqual(start["errorClass"], "retryable")
        self.assertIn("429", start["errorMessage"])

    def test_401_ends_at_once_non_retryable(self):
        self.start({"steps": [], "default": {"status": 401, "body": AUTH}})
        msgs = self.ask(timeout=20)
        final = self.final(msgs)
        self.assertEqual(final["stopReason"], "error")
        self.assertIn("Invalid API key", final["errorMessage"])
        self.assertLess(self.elapsed, 5)
        self.assertEqual(len(self.api()), 1)
        self.assertEqual(self.of_type(msgs, "auto_retry_start"), [])
        self.assertEqual(self.stats()["errorsByClass"]["non_retryable"], 1)

    def test_401_retry_notice_ends_the_attempt_within_2s_when_own_retries_are_kept(self):
        # keepOwnRetries: claude retries a 401 ten times (184 s) and says so
        # in api_retry lines (error_status 401): the first one must end it.
        self.start({"steps": [], "default": {"status": 401, "body": AUTH}},
                   sets={"providers.claude.keepOwnRetries": True})
        t0 = time.monotonic()
        self.d.send({"type": "prompt", "message": PROMPT, "id": "p1"})
        notice = self.d.wait_for(lambda m: m.get("type") == "provider_retry", timeout=15,
                                 what="provider_retry")
        t_notice = time.monotonic()
        msgs = self.d.collect_until(lambda m: m.get("type") == "agent_end", timeout=10,
                                    what="agent_end")
        self.assertLess(time.monotonic() - t_notice, 2.0)
        self.assertLess(time.monotonic() - t0, 8.0)
        self.assertTrue(notice["errorMessage"].startswith("401"), notice)
        self.assertEqual(self.final(msgs)["stopReason"], "error")
        self.assertEqual(self.of_type(msgs, "auto_retry_start"), [])
        self.assertEqual(self.stats()["errorsByClass"]["non_retryable"], 1)
        self.assertLessEqual(len(self.api()), 2)

    def test_credit_balance_is_a_usage_limit(self):
        self.start({"steps": [], "default": {"status": 400, "body": CREDIT}})
        msgs = self.ask(timeout=20)
        self.assertIn("Credit balance is too low", self.final(msgs)["errorMessage"])
        self.assertEqual(len(self.api()), 1)
        self.assertEqual(self.of_type(msgs, "auto_retry_start"), [])
        self.assertEqual(self.stats()["errorsByClass"]["usage_limit"], 1)

    def test_subscription_usage_limit_is_a_usage_limit(self):
        if not realcli.isolated():
            self.skipTest("an OAuth token is only ever sent inside the network namespace")
        self.start({"steps": [], "default": {"status": 429, "headers": subscription_limit_headers(),
                                             "body": {"type": "error", "error": {
                                                 "type": "rate_limit_error", "message": "Error"}}}},
                   env={"ANTHROPIC_API_KEY": None, "CLAUDE_CODE_OAUTH_TOKEN": FAKE_OAUTH})
        msgs = self.ask(timeout=20)
        final = self.final(msgs)
        self.assertRegex(final["errorMessage"], r"You've hit your 5-hour limit · resets ")
        self.assertEqual(len(self.api()), 1)
        self.assertEqual(self.of_type(msgs, "auto_retry_start"), [])
        self.assertEqual(self.stats()["errorsByClass"]["usage_limit"], 1)

    def test_context_overflow_on_a_first_turn_is_not_retried(self):
        self.start({"steps": [], "default": {"status": 400, "body": TOO_LONG}})
        msgs = self.ask(timeout=20)
        self.assertIn("Prompt is too long", self.final(msgs)["errorMessage"])
        self.assertEqual(len(self.api()), 1)
        self.assertEqual(self.of_type(msgs, "auto_retry_start"), [])
        self.assertEqual(self.stats()["errorsByClass"]["context_overflow"], 1)

    def test_context_overflow_on_a_later_turn_is_compacted_by_claude(self):
        # Claude compacts its own session (a summary request, which it
        # makes twice when the summary lacks its tags) and sends the prompt
        # again: retryd sees one good attempt.
        self.start([{"text": "Four."}, {"status": 400, "body": TOO_LONG},
                    {"text": "<summary>The user asked 2+2.</summary>"}])
        self.ask()
        msgs = self.ask("And 3+3?", timeout=40)
        self.assertEqual(self.final(msgs)["stopReason"], "stop")
        reqs = self.api()
        self.check_carries(reqs[-1], "And 3+3?")
        self.assertEqual(self.of_type(msgs, "auto_retry_start"), [])

    def test_max_tokens_is_continued_by_claude_and_shown_once(self):
        # An answer cut by max_tokens is continued by claude itself ("Output
        # token limit hit. Resume directly ..."), a second request: not a
        # failure, and the answer is both parts, each once.
        self.start([{"text": "One two three", "finish": "max_tokens"}, {"text": " four."}])
        msgs = self.ask()
        self.check_answer(msgs, "One two three four.")
        self.assertEqual(len(self.api()), 2)
        self.assertEqual(self.of_type(msgs, "auto_retry_start"), [])

    def test_failure_on_the_second_prompt_keeps_both_prompts(self):
        self.start([{"text": "Four."}, {"status": 529, "body": OVERLOADED}, {"text": "Six."}])
        self.ask()
        msgs = self.ask("And 3+3?")
        self.check_answer(msgs, "Six.")
        reqs = self.api()
        self.assertEqual(len(reqs), 3)
        self.check_carries(reqs[2], PROMPT, "And 3+3?", CONTINUE)
        self.assertEqual([b["text"] for b in blocks_of(reqs[2], "assistant", "text")], ["Four."])

    def test_stall_killed_by_the_idle_timeout_resumes_with_the_prompt(self):
        self.start([{"text": "Fo ur and more", "hangAfterChunks": 1}, {"text": "Four."}],
                   sets={"retry.idleTimeoutMs": 3000})
        msgs = self.ask(timeout=30)
        self.check_answer(msgs, "Four.")
        first, second = self.api()
        self.assertEqual(first["outcome"], "client-closed")
        self.check_carries(second, PROMPT, CONTINUE)
        # Claude's synthetic answer to the interrupted turn is in the
        # context, never in retryd's output.
        self.assertEqual([b["text"] for b in blocks_of(second, "assistant", "text")],
                         ["No response requested."])
        for m in self.assistant_ends(msgs):
            self.assertNotIn("No response requested.", text_of(m))
        [start] = self.of_type(msgs, "auto_retry_start")
        self.assertIn("stall", start["errorMessage"])
        self.assertLess(self.elapsed, 20)


    def test_resume_of_an_interrupted_turn_is_not_rerun_by_claude_itself(self):
        # With CLAUDE_CODE_RESUME_INTERRUPTED_TURN set (the Agent SDK's
        # unattended mode), --resume first re-runs the interrupted turn with
        # its own "Continue from where you left off." and then answers
        # retryd's prompt: two requests, two answers, two result lines in
        # one run. The profile unsets it.
        self.start([{"text": "Fo ur and more", "hangAfterChunks": 1}, {"text": "Four."},
                    {"text": "Four again."}],
                   sets={"retry.idleTimeoutMs": 3000},
                   env={"CLAUDE_CODE_RESUME_INTERRUPTED_TURN": "1"})
        msgs = self.ask(timeout=30)
        self.check_answer(msgs, "Four.")
        first, second = self.api()
        self.assertNotIn("Continue from where you left off.", texts_of_user(second))
        self.check_carries(second, PROMPT, CONTINUE)


class Tools(ClaudeCase):
    """Bash, allowed with --allowedTools (claude -p asks for nothing and
    denies what is not allowed; bypassPermissions is refused as root)."""

    COUNT = "echo ran >> ran.txt; wc -l < ran.txt"

    def runs(self):
        try:
            with open(os.path.join(self.work, "ran.txt")) as f:
                return len(f.read().splitlines())
        except OSError:
            return 0

    def test_failure_after_a_tool_call_resumes_without_running_it_again(self):
        self.start([{"toolCalls": [{"name": "Bash", "id": "toolu_count1", "arguments": {
                        "command": self.COUNT, "description": "Count the runs"}}]},
                    {"status": 529, "body": OVERLOADED}, {"text": "Ran once."}],
                   args=["--allowedTools", "Bash"])
        msgs = self.ask()
        self.check_answer(msgs, "Ran once.")
        self.assertEqual(self.runs(), 1)
        reqs = self.api()
        self.assertEqual(len(reqs), 3)
        self.check_carries(reqs[2], PROMPT, CONTINUE)
        [use] = blocks_of(reqs[2], "assistant", "tool_use")
        [result] = blocks_of(reqs[2], "user", "tool_result")
        self.assertEqual((use["id"], result["tool_use_id"], result["content"]),
                         ("toolu_count1", "toolu_count1", "1"))
        self.assertEqual([s["toolCallId"] for s in self.of_type(msgs, "tool_execution_start")],
                         ["toolu_count1"])
        self.assertEqual([(e["toolCallId"], e["isError"])
                          for e in self.of_type(msgs, "tool_execution_end")],
                         [("toolu_count1", False)])

    def test_tool_killed_by_the_idle_timeout_is_not_run_again(self):
        # The command outlives retryd's idle timeout: the group is killed,
        # and the resumed session records the call as interrupted.
        self.start([{"toolCalls": [{"name": "Bash", "id": "toolu_slow1", "arguments": {
                        "command": "echo ran >> ran.txt; sleep 30",
                        "description": "Slow"}}]},
                    {"text": "Stopped."}],
                   args=["--allowedTools", "Bash"], sets={"retry.idleTimeoutMs": 3000})
        msgs = self.ask(timeout=30)
        self.check_answer(msgs, "Stopped.")
        self.assertEqual(self.runs(), 1)
        first, second = self.api()
        self.check_carries(second, PROMPT, CONTINUE)
        [result] = blocks_of(second, "user", "tool_result")
        self.assertEqual(result["tool_use_id"], "toolu_slow1")
        self.assertEqual(len(self.of_type(msgs, "tool_execution_start")), 1)


class SetupErrors(ClaudeCase):
    """Each ends the prompt at once, not retried, with the profile's sentence."""

    def check_setup_error(self, msgs, why):
        final = self.final(msgs)
        self.assertEqual(final["stopReason"], "error")
        self.assertIn(why, final["errorMessage"])
        self.assertEqual(self.of_type(msgs, "auto_retry_start"), [])
        self.assertLess(self.elapsed, 10)
        self.assertEqual(self.api(), [])

    def test_bypass_permissions_as_root(self):
        if os.getuid() != 0:
            self.skipTest("claude refuses bypassPermissions only as root")
        self.start([{"text": "never"}], args=["--permission-mode", "bypassPermissions"])
        self.check_setup_error(self.ask(timeout=20), "run retryd as another user")

    def test_unknown_option(self):
        self.start([{"text": "never"}], args=["--no-such-option"])
        self.check_setup_error(self.ask(timeout=20), "fix providers.claude.args")

    def test_missing_binary(self):
        self.start([{"text": "never"}],
                   sets={"providers.claude.command": os.path.join(self.tmp, "no-claude")})
        msgs = self.ask(timeout=20)
        self.assertIn("providers.claude.command", self.final(msgs)["errorMessage"])
        self.assertEqual(self.of_type(msgs, "auto_retry_start"), [])
        self.assertLess(self.elapsed, 10)

    def test_resume_impossible_starts_fresh_and_sends_the_prompt_once(self):
        # The session is gone by the time of the retry: claude says "No
        # conversation found with session ID: ..." (a result line, exit 1,
        # no request) and retryd starts a fresh run with the prompt itself.
        self.start([{"status": 529, "body": OVERLOADED}, {"text": "Four."}],
                   sets={"retry.baseDelayMs": 1500})
        self.d.send({"type": "prompt", "message": PROMPT, "id": "p1"})
        self.d.wait_for(lambda m: m.get("type") == "auto_retry_start", timeout=20,
                        what="auto_retry_start")
        for f in glob.glob(os.path.join(self.home, ".claude", "projects", "*", "*.jsonl")):
            os.unlink(f)
        msgs = self.d.collect_until(lambda m: m.get("type") == "agent_end", timeout=20,
                                    what="agent_end")
        self.check_answer(msgs, "Four.")
        first, second = self.api()
        self.check_carries(second, PROMPT)
        self.assertNotIn(CONTINUE, texts_of_user(second))
        self.assertEqual(texts_of_user(second).count(PROMPT), 1)


if __name__ == "__main__":
    unittest.main()

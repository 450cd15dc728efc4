"""Gemini CLI (@google/gemini-cli 0.61.0) under retryd, on the built-in
profile, against the fake server's Gemini part (tests/fixtures/fake_gemini.py).

Gemini CLI is pointed at the server the way a user points it at a gateway:
GEMINI_API_KEY (a fake key) and GOOGLE_GEMINI_BASE_URL. Nothing else is
configured: the profile's ownRetriesOff (a settings file in a private
GEMINI_CLI_HOME: general.maxAttempts 1, model "pro", the api-key auth type,
no usage statistics) is what turns its own retries down (10 requests over
about 205 s per run on a persistent 503 otherwise, plus the "auto" router's
5 of its own), and retryd runs at its defaults (retry.baseDelayMs small to
keep the tests fast).

The tests state the targets (docs/agent-clis/gemini.md): one request per
retryd attempt, every resumed or restarted request carrying the failed
prompt, no doubled text, setup errors ending at once with a sentence naming
the fix, a tool run once across a resume. docs/agent-clis/gemini.md says
which ones need C behaviour that is not there yet.
"""
import glob
import json
import os
import shutil
import time

import realcli
from realcli import assistant_ends, message_deltas, of_type
from harness import text_of

ANSWER = "ANSWER-OK: this is the complete answer"
CONTINUE = "Continue from where you left off."
KEY = "AIza-fake-gemini-0123456789abcdef"
PROMPT_TIMEOUT = 50
# Nothing of the user's or of another test may steer the CLI.
GEMINI_ENV = {"GEMINI_CLI_HOME": None, "GEMINI_CLI_SYSTEM_SETTINGS_PATH": None,
              "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": None, "GEMINI_CLI_TRUST_WORKSPACE": None,
              "GOOGLE_API_KEY": None, "GOOGLE_GENAI_USE_VERTEXAI": None,
              "GOOGLE_GENAI_USE_GCA": None, "GOOGLE_CLOUD_PROJECT": None, "GEMINI_MODEL": None,
              "GEMINI_SANDBOX": None, "GEMINI_TELEMETRY_ENABLED": "false"}
OVERFLOW = "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
DAILY_QUOTA = {"status": 429,
               "message": "You exceeded your current quota, please check your plan and billing "
                          "details. For more information on this error, head to: "
                          "https://ai.google.dev/gemini-api/docs/rate-limits.",
               "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
               "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
               "quotaValue": 50, "retryDelay": "40s"}
BAD_KEY = {"status": 400, "message": "API key not valid. Please pass a valid API key.",
           "errorReason": "API_KEY_INVALID"}
# What a user who keeps Gemini CLI's own retries writes into ~/.gemini/settings.json
# for a gateway (the base URL's own auth type is rejected by 0.61).
USER_SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}},
                 "privacy": {"usageStatisticsEnabled": False}, "model": {"name": "pro"}}


def chat_requests(srv):
    """The model requests (not the router's or other JSON-mode utility calls)."""
    return [r for r in srv.requests() if r.get("api") == "gemini" and not r.get("utility")]


def utility_requests(srv):
    return [r for r in srv.requests() if r.get("utility")]


def parts(req, role, key):
    return [p[key] for c in req["body"].get("contents", []) if c.get("role") == role
            for p in c.get("parts", []) if key in p]


def user_texts(req):
    """The user's text parts, without the CLI's own <session_context> part."""
    return [t for t in parts(req, "user", "text") if not t.startswith("<session_context>")]


class GeminiCase(realcli.RealCliCase):
    CLI = "gemini"

    def daemon(self, sets=None, env=None, args=()):
        # realcli's daemon() sets "provider", which is a flag, not a setting.
        s = {"providers.gemini.command": self.bin, "retry.baseDelayMs": 50}
        s.update(sets or {})
        e = self.base_env()
        e.update(GEMINI_ENV)
        e.update(env or {})
        return self.spawn(args=("--no-session", "--provider", "gemini") + tuple(args), sets=s,
                          env=e, cwd=self.work)

    def start(self, plan, sets=None, env=None, args=(), user_settings=None):
        srv = self.fake_server(plan)
        self.gemini_dir = os.path.join(self.home, ".gemini")
        if user_settings is not None:
            os.makedirs(self.gemini_dir, exist_ok=True)
            with open(os.path.join(self.gemini_dir, "settings.json"), "w") as f:
                json.dump(user_settings, f)
        self.before = self.user_files()
        e = {"GEMINI_API_KEY": KEY, "GOOGLE_GEMINI_BASE_URL": srv.url}
        e.update(env or {})
        return self.daemon(sets=sets, env=e, args=args), srv

    def user_files(self):
        out = {}
        for root, _, files in os.walk(os.path.join(self.home, ".gemini")):
            for name in files:
                p = os.path.join(root, name)
                with open(p, "rb") as f:
                    out[os.path.relpath(p, self.home)] = f.read()
        return out

    def prompt(self, d, message, timeout=PROMPT_TIMEOUT):
        t0 = time.monotonic()
        msgs = self.run_prompt(d, message, timeout=timeout)
        self.elapsed = time.monotonic() - t0
        self.ended_at = time.time()
        return msgs

    def retryd_dir(self, d):
        [path] = glob.glob(os.path.join(d.runtime_dir, "retryd-gemini-*"))
        return path

    def assert_untouched(self):
        self.assertEqual(self.user_files(), self.before, "retryd changed the user's ~/.gemini")
        self.assertFalse(os.path.exists(os.path.join(self.work, ".gemini")),
                         "nothing is written into the project")

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
                            "request #%d lost %r: its user texts are %r" % (req["seq"], t, users))

    def assert_once(self, req, text):
        users = user_texts(req)
        self.assertEqual(sum(u.startswith(text) for u in users), 1,
                         "request #%d: %r is not there once: %r" % (req["seq"], text, users))

    def assert_setup_error(self, msgs, srv, fix):
        """Ends at once: no request, no retry, the profile's sentence naming the fix."""
        self.assertEqual(chat_requests(srv), [])
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        [final] = assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "error")
        self.assertIn(fix, final["errorMessage"])
        self.assertLess(self.elapsed, 15)


class GeminiSetupTests(GeminiCase):
    """How Gemini CLI is started: the gateway, the prompt, the setup errors."""

    def test_a_prompt_reaches_the_gateway_verbatim_and_nothing_else(self):
        # A prompt that yargs would take for options after -p, and that a
        # shell would expand.
        prompt = "-rf --model x \"$HOME\" {sessionId} `id`"
        d, srv = self.start([{"text": ANSWER}])
        msgs = self.prompt(d, prompt)
        reqs = srv.requests()
        self.assertEqual(len(reqs), 1, "one request: no router call, nothing else")
        [req] = reqs
        self.assertTrue(req["path"].endswith(":streamGenerateContent?alt=sse"), req["path"])
        self.assertEqual(user_texts(req), [prompt])
        self.assertIn("x-goog-api-key", req["secretHashes"], "the key from GEMINI_API_KEY")
        self.assertNotIn("x-gemini-api-privileged-user-id", req["headers"],
                         "no usage statistics (their installation id)")
        [final] = assistant_ends(msgs)
        self.assertEqual((final["stopReason"], text_of(final)), ("stop", ANSWER))
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        self.assertEqual(of_type(msgs, "provider_retry"), [])
        self.assert_untouched()
        d.finish()

    def test_an_unknown_option_ends_at_once_naming_the_fix(self):
        d, srv = self.start([{"text": "never"}], sets={"providers.gemini.args": ["--bogus-flag"]})
        msgs = self.prompt(d, "hi")
        # Gemini CLI: "Unknown arguments: bogus-flag, bogusFlag", then its
        # help (about 4 KiB), exit 1
        self.assert_setup_error(msgs, srv, "providers.gemini.args")
        d.finish()

    def test_a_missing_api_key_ends_at_once_naming_the_fix(self):
        d, srv = self.start([{"text": "never"}], env={"GEMINI_API_KEY": None})
        msgs = self.prompt(d, "hi")
        # "When using Gemini API, you must specify the GEMINI_API_KEY environment
        # variable." on stderr, no stdout, exit 41
        self.assert_setup_error(msgs, srv, "GEMINI_API_KEY")
        d.finish()

    def test_a_base_url_that_is_no_url_ends_at_once_naming_the_fix(self):
        d, srv = self.start([{"text": "never"}], env={"GOOGLE_GEMINI_BASE_URL": "gateway.example"})
        msgs = self.prompt(d, "hi")
        # "Error authenticating: Error: Invalid custom base URL: gateway.example", exit 1
        # (what new URL() refuses: "gateway:8080" passes it, as scheme "gateway:")
        self.assert_setup_error(msgs, srv, "GOOGLE_GEMINI_BASE_URL")
        d.finish()

    def test_own_settings_with_a_base_url_and_no_auth_type_name_the_fix(self):
        # keepOwnRetries: the user's own ~/.gemini, which says nothing about
        # auth; the base URL makes Gemini CLI infer the "gateway" auth type,
        # which 0.61 then rejects: "Invalid auth method selected.", exit 41.
        d, srv = self.start([{"text": "never"}], sets={"providers.gemini.keepOwnRetries": True},
                            user_settings={"privacy": {"usageStatisticsEnabled": False}})
        msgs = self.prompt(d, "hi")
        self.assert_setup_error(msgs, srv, "selectedType")
        d.finish()

    def test_its_private_home_is_removed_at_exit(self):
        # GEMINI_CLI_HOME={retrydDir}: Gemini CLI writes its sessions, history
        # and projects.json there, beside retryd's settings file.
        d, srv = self.start([{"text": ANSWER}])
        self.prompt(d, "hi")
        home = self.retryd_dir(d)
        self.assertTrue(glob.glob(os.path.join(home, ".gemini", "tmp", "*", "chats", "*.jsonl")),
                        "its session is in the private home")
        self.assertEqual(os.stat(home).st_mode & 0o077, 0, "private")
        d.finish()
        self.assertFalse(os.path.exists(home), "left behind: %r" % sorted(
            os.path.relpath(os.path.join(r, f), home) for r, _, fs in os.walk(home) for f in fs))

    def test_a_vanished_session_starts_fresh_and_resends_the_prompt(self):
        d, srv = self.start([{"text": "FIRST-OK"}, {"text": ANSWER}])
        self.prompt(d, "first question")
        # Gemini CLI's sessions are gone (a cleanup, a restarted daemon's new
        # directory): --resume fails with "Error resuming session: No previous
        # sessions found for this project.", exit 42.
        shutil.rmtree(os.path.join(self.retryd_dir(d), ".gemini", "tmp"))
        msgs = self.prompt(d, "second question")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 2, "one fresh run, no retries of the impossible resume")
        # The fresh run replays the conversation before the prompt, as text.
        last = user_texts(reqs[1])[-1]
        self.assertIn("first question", last)
        self.assertIn("FIRST-OK", last)
        self.assertTrue(last.rstrip().endswith("second question"), last)
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), ANSWER)
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        self.assertLess(self.elapsed, 20)
        d.finish()


class GeminiRetryTests(GeminiCase):
    """Gemini CLI's own retries are off: retryd makes every attempt, one request each."""

    def test_a_persistent_overload_costs_one_request_per_attempt(self):
        d, srv = self.start({"steps": [], "default": {"status": 503}})
        msgs = self.prompt(d, "What is 6 times 7?")
        reqs = chat_requests(srv)
        starts = of_type(msgs, "auto_retry_start")
        self.assertEqual(len(starts), 3, "retryd's retry.maxRetries")
        self.assertEqual(len(reqs), len(starts) + 1,
                         "one request per attempt (Gemini CLI's own 10 each)")
        self.assertEqual(utility_requests(srv), [], "no router call (5 attempts of its own)")
        for r in reqs:
            self.assert_once(r, "What is 6 times 7?")
        [end] = of_type(msgs, "auto_retry_end")
        self.assertEqual((end["success"], end.get("errorClass")), (False, "retryable"))
        self.assertIn("The model is overloaded", end["finalError"])
        self.assertEqual(of_type(msgs, "provider_retry"), [])
        self.assertLess(self.elapsed, 40)
        self.assert_untouched()
        d.finish()

    def test_an_overload_then_success_restarts_with_the_prompt(self):
        # A failed first turn leaves Gemini CLI no session to resume (the turn
        # is rolled back): the retry is a fresh run with the prompt.
        d, srv = self.start([{"status": 503}, {"text": ANSWER}])
        msgs = self.prompt(d, "What is 6 times 7?")
        first, second = chat_requests(srv)
        self.assert_once(second, "What is 6 times 7?")
        [start] = of_type(msgs, "auto_retry_start")
        self.assertEqual(start["errorClass"], "retryable")
        self.assertEqual(of_type(msgs, "auto_retry_end"),
                         [{"type": "auto_retry_end", "success": True, "attempt": 1}])
        self.assert_no_doubled_text(msgs)
        self.assertLess(self.elapsed, 15, "Gemini CLI's own first backoff is 5 s")
        d.finish()

    def test_a_cut_stream_is_retried_and_never_doubles_text(self):
        # The socket closes mid-body: undici's "terminated", shown as
        # "[API Error: terminated]", exit 1.
        d, srv = self.start([{"text": ANSWER, "dropAfterChunks": 3, "dropMode": "close"},
                             {"text": ANSWER}])
        msgs = self.prompt(d, "Say the answer")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 2)
        self.assert_once(reqs[1], "Say the answer")
        [start] = of_type(msgs, "auto_retry_start")
        self.assertEqual(start["errorClass"], "retryable")
        self.assertIn("terminated", start["errorMessage"])
        self.assert_no_doubled_text(msgs)
        d.finish()

    def test_a_clean_early_end_is_retried_and_never_doubles_text(self):
        # The body ends properly after three chunks without a finishReason:
        # an error line "Model stream ended without a finish reason.", then a
        # result with status "error" and no message, exit 0.
        d, srv = self.start([{"text": ANSWER, "dropAfterChunks": 3, "dropMode": "eof"},
                             {"text": ANSWER}])
        msgs = self.prompt(d, "Say the answer")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 2)
        self.assert_once(reqs[1], "Say the answer")
        [start] = of_type(msgs, "auto_retry_start")
        self.assertEqual(start["errorClass"], "retryable")
        self.assertIn("Model stream ended without a finish reason", start["errorMessage"])
        self.assert_no_doubled_text(msgs)
        d.finish()

    def test_an_empty_answer_is_retried(self):
        # finishReason STOP and no text: an error line "The model returned an
        # empty response with no text or thoughts. This may be a transient API
        # issue; please try again." (Gemini CLI's own retry re-asks with a
        # nudge), then a result with no message, exit 0.
        d, srv = self.start([{"text": ""}, {"text": ANSWER}])
        msgs = self.prompt(d, "Say the answer")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 2)
        self.assert_once(reqs[1], "Say the answer")
        [start] = of_type(msgs, "auto_retry_start")
        self.assertEqual(start["errorClass"], "retryable")
        self.assertIn("empty response", start["errorMessage"])
        self.assert_no_doubled_text(msgs)
        d.finish()

    def test_a_rate_limit_with_retry_after_is_retried_by_retryd(self):
        d, srv = self.start([{"status": 429, "headers": {"retry-after": "1"}, "retryDelay": "1s",
                              "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"},
                             {"text": ANSWER}])
        msgs = self.prompt(d, "What is 6 times 7?")
        first, second = chat_requests(srv)
        self.assert_once(second, "What is 6 times 7?")
        starts = of_type(msgs, "auto_retry_start")
        self.assertEqual(len(starts), 1, "retryd, not Gemini CLI, retries")
        self.assertEqual(starts[0]["errorClass"], "retryable")
        self.assertGreaterEqual(second["time"] - first["time"], 0.9, "the server's 1 s is kept")
        self.assertEqual(of_type(msgs, "provider_retry"), [])
        self.assert_no_doubled_text(msgs)
        d.finish()

    def test_a_bad_key_ends_at_once_non_retryable(self):
        # Google answers a bad key with 400 INVALID_ARGUMENT / API_KEY_INVALID;
        # Gemini CLI does not retry it and exits 144 (400 & 255).
        d, srv = self.start([BAD_KEY, {"text": "never"}])
        msgs = self.prompt(d, "hi")
        [req] = chat_requests(srv)
        self.assertLess(self.ended_at - req["time"], 2.0)
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        [final] = assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "error")
        self.assertIn("API key not valid", final["errorMessage"])
        self.assertEqual(self.classify(d, final["errorMessage"]), "non_retryable")
        d.finish()

    def test_a_401_ends_at_once_non_retryable(self):
        d, srv = self.start([{"status": 401, "message": "Request had invalid authentication "
                              "credentials.", "errorReason": "ACCESS_TOKEN_TYPE_UNSUPPORTED"},
                             {"text": "never"}])
        msgs = self.prompt(d, "hi")
        [req] = chat_requests(srv)
        self.assertLess(self.ended_at - req["time"], 2.0)
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        [final] = assistant_ends(msgs)
        self.assertIn("UNAUTHENTICATED", final["errorMessage"])
        self.assertEqual(self.classify(d, final["errorMessage"]), "non_retryable")
        d.finish()

    def test_a_spent_daily_quota_is_not_retried(self):
        # Gemini CLI reads the QuotaFailure (…PerDay…) as a TerminalQuotaError:
        # "[API Error: You have exhausted your daily quota on this model.]"
        d, srv = self.start([DAILY_QUOTA, {"text": "never"}])
        msgs = self.prompt(d, "hi")
        self.assertEqual(len(chat_requests(srv)), 1)
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        [final] = assistant_ends(msgs)
        self.assertIn("daily quota", final["errorMessage"])
        self.assertEqual(self.classify(d, final["errorMessage"]), "usage_limit")
        d.finish()

    def test_a_context_overflow_is_not_retried(self):
        d, srv = self.start([{"status": 400, "message": OVERFLOW}, {"text": "never"}])
        msgs = self.prompt(d, "hi")
        self.assertEqual(len(chat_requests(srv)), 1)
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        [final] = assistant_ends(msgs)
        self.assertIn("exceeds the maximum number of tokens", final["errorMessage"])
        self.assertEqual(self.classify(d, final["errorMessage"]), "context_overflow")
        d.finish()

    def test_a_stall_killed_by_the_idle_timeout_resumes_with_the_prompt(self):
        # Killed, Gemini CLI keeps the user turn in its session (no rollback
        # runs): the resume goes on with the continuation prompt.
        d, srv = self.start([{"text": ANSWER, "hangAfterChunks": 2}, {"text": ANSWER}],
                            sets={"retry.idleTimeoutMs": 3000})
        msgs = self.prompt(d, "Say the answer")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 2)
        self.assert_once(reqs[1], "Say the answer")
        self.assert_carries(reqs[1], CONTINUE)
        [start] = of_type(msgs, "auto_retry_start")
        self.assertEqual(start["errorClass"], "retryable")
        self.assert_no_doubled_text(msgs)
        self.assertLess(self.elapsed, 20)
        d.finish()

    def test_a_cut_answer_is_replayed_saying_why_and_never_doubled(self):
        # Cut, Gemini CLI drops the failed turn from its session; stalled and
        # killed, it keeps the user turn but not the streamed text: the
        # resumed request holds no model turn either way.
        for fault, sets, reason in (
                ({"dropAfterChunks": 3, "dropMode": "close"}, {},
                 "the CLI's session lost the cut turn"),
                ({"hangAfterChunks": 2}, {"retry.idleTimeoutMs": 3000},
                 "the CLI's resumed session does not go on from the cut text")):
            with self.subTest(fault=fault):
                step = {"text": ANSWER}
                step.update(fault)
                d, srv = self.start([step, {"text": ANSWER}], sets=sets)
                msgs = self.prompt(d, "Say the answer")
                reqs = chat_requests(srv)
                self.assertEqual(len(reqs), 2)
                self.assertEqual(parts(reqs[1], "model", "text"), [])
                [start] = of_type(msgs, "auto_retry_start")
                self.assertEqual(start["continuation"],
                                 {"mode": "replay", "keptChars": 0, "reason": reason})
                self.assertTrue(text_of(assistant_ends(msgs)[0]).startswith("ANSWER-OK:"))
                self.assert_no_doubled_text(msgs)
                d.finish()

    def test_killed_before_its_first_answer_it_resumes_with_the_prompt(self):
        d, srv = self.start([{"hangBeforeHeaders": True}, {"text": ANSWER}],
                            sets={"retry.idleTimeoutMs": 3000})
        msgs = self.prompt(d, "What is 6 times 7?")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 2)
        self.assert_once(reqs[1], "What is 6 times 7?")
        self.assert_carries(reqs[1], CONTINUE)
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), ANSWER)
        self.assertLess(self.elapsed, 20)
        d.finish()


class GeminiConversationTests(GeminiCase):
    """Later prompts and tool calls across a failure."""

    def test_a_failure_on_the_second_prompt_resends_it(self):
        # Gemini CLI drops the failed user turn from its saved session: a
        # resume with the continuation prompt alone would lose the question.
        d, srv = self.start([{"text": "FIRST-OK"}, {"status": 503}, {"text": ANSWER}])
        self.prompt(d, "first question")
        msgs = self.prompt(d, "second question")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 3)
        self.assert_carries(reqs[1], "first question", "second question")
        self.assert_carries(reqs[2], "first question")
        self.assert_once(reqs[2], "second question")
        self.assertIn("FIRST-OK", parts(reqs[2], "model", "text"))
        self.assertEqual(len(of_type(msgs, "auto_retry_start")), 1)
        self.assert_no_doubled_text(msgs)
        d.finish()

    def tool_then_failure(self, call, check_result, sets=None):
        d, srv = self.start([{"toolCalls": [call]}, {"status": 503}, {"text": ANSWER}],
                            sets=sets)
        msgs = self.prompt(d, "Use the tool")
        reqs = chat_requests(srv)
        self.assertEqual(len(reqs), 3)
        starts = of_type(msgs, "tool_execution_start")
        ends = of_type(msgs, "tool_execution_end")
        self.assertEqual([s["toolName"] for s in starts], [call["name"]])
        self.assertEqual([e["toolCallId"] for e in ends], [starts[0]["toolCallId"]])
        self.assertFalse(ends[0]["isError"], ends[0])
        # After a tool ran, the saved session keeps the prompt, the call and
        # its result: the resume goes on with the continuation prompt, and
        # the prompt is not sent a second time.
        for req in reqs[1:]:
            self.assert_once(req, "Use the tool")
            self.assertEqual([c["name"] for c in parts(req, "model", "functionCall")],
                             [call["name"]])
            results = parts(req, "user", "functionResponse")
            self.assertTrue(results, "the result is sent back")
            check_result(json.dumps(results[0]["response"]))
        self.assert_carries(reqs[2], CONTINUE)
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), ANSWER)
        return d, msgs

    def test_a_shell_command_runs_once_across_a_resume(self):
        # run_shell_command is only offered in headless mode with --yolo.
        call = {"name": "run_shell_command",
                "arguments": {"command": "echo TOOL-RAN >> ran.txt; wc -l < ran.txt"}}
        d, _ = self.tool_then_failure(call, lambda out: self.assertIn("Output: 1", out),
                                      sets={"providers.gemini.args": ["--yolo"]})
        with open(os.path.join(self.work, "ran.txt")) as f:
            self.assertEqual(f.read(), "TOOL-RAN\n", "the command ran once")
        d.finish()

    def test_a_file_read_survives_a_resume(self):
        with open(os.path.join(self.work, "notes.txt"), "w") as f:
            f.write("NOTES-CONTENT-7\n")
        call = {"name": "read_file", "arguments": {"file_path": "notes.txt"}}
        d, _ = self.tool_then_failure(call, lambda out: self.assertIn("NOTES-CONTENT-7", out))
        d.finish()


class GeminiKeepOwnRetriesTests(GeminiCase):
    """keepOwnRetries: Gemini CLI retries inside the attempt; its stderr notices show it."""

    def own(self, plan, max_attempts=2):
        s = dict(USER_SETTINGS)
        s["general"] = {"maxAttempts": max_attempts}
        return self.start(plan, sets={"providers.gemini.keepOwnRetries": True}, user_settings=s)

    def test_its_own_retry_of_an_overload_is_a_provider_retry(self):
        # "Attempt 1 failed with status 503. Retrying with backoff... _ApiError: {...}"
        d, srv = self.own([{"status": 503}, {"text": ANSWER}])
        msgs = self.prompt(d, "What is 6 times 7?")
        self.assertEqual(len(chat_requests(srv)), 2)
        [notice] = of_type(msgs, "provider_retry")
        self.assertEqual(notice.get("attempt"), 1)
        self.assertIn("503", notice["errorMessage"])
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        self.assert_no_doubled_text(msgs)
        self.assertLess(self.elapsed, 20, "its own backoff is 5 s ± 30 %")
        d.finish()

    def test_its_own_retry_of_a_rate_limit_says_the_delay(self):
        # RetryableQuotaError with a RetryInfo: "Attempt 1 failed: Resource has
        # been exhausted (e.g. check quota).\nSuggested retry after 1s.. Retrying
        # after 5xxxms..." (two stderr lines)
        d, srv = self.own([{"status": 429, "retryDelay": "1s",
                            "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"},
                           {"text": ANSWER}])
        msgs = self.prompt(d, "What is 6 times 7?")
        self.assertEqual(len(chat_requests(srv)), 2)
        [notice] = of_type(msgs, "provider_retry")
        self.assertGreaterEqual(notice.get("delayMs", 0), 1000)
        self.assertEqual(of_type(msgs, "auto_retry_start"), [])
        self.assert_no_doubled_text(msgs)
        d.finish()

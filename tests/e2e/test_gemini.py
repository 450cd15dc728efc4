"""The Gemini API (pi's api "google-generative-ai") through the real binary.

A provider entry as pi's models.json has it, pointed at the in-process fake
server (tests/fixtures/fake_gemini.py): the URL with the model in it, the
key in x-goog-api-key, streaming and usage, thinking sent as pi sends it,
and every error shape — HTTP google.rpc.Status bodies and in-stream error
objects — retried or not as the classifier's decision table says, the
RetryInfo delay taken as the wait. Delays are short and every wait bounded.
"""
import hashlib
import json
import os
import secrets
import sys
import unittest

from harness import DaemonTestCase, deltas, role_of, run_cli, signature, text_of, types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

API = "google-generative-ai"
PROVIDER = "gem"
KEY_ENV = "RETRYD_E2E_GEMINI_KEY"
SECRET = "AIzaSy" + secrets.token_hex(17) + "Q"   # shaped like a Gemini key, new each run
FAST = {"retry.baseDelayMs": 20}
TRUNCATED = "connection error: stream ended before completion"
DAILY = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
MINUTE = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
QUOTA_TEXT = ("You exceeded your current quota, please check your plan and billing details. "
              "For more information on this error, head to: "
              "https://ai.google.dev/gemini-api/docs/rate-limits.")


def events(msgs, type_):
    return [m for m in msgs if m.get("type") == type_]


def assistant_ends(msgs):
    return [m["message"] for m in msgs
            if m.get("type") == "message_end" and role_of(m) == "assistant"]


def updates(msgs):
    return [m["assistantMessageEvent"]["type"] for m in msgs if m.get("type") == "message_update"]


class GeminiTests(DaemonTestCase):

    def start(self, plan=None, sets=None, models=None, base_path="/v1beta", extra=None, env=None):
        srv = FakeServer(plan if plan is not None else [], max_seconds=120).start()
        self.addCleanup(srv.stop)
        # As pi's models.json writes it.
        cfg = {"api": API, "baseUrl": srv.url + base_path, "apiKeyEnv": KEY_ENV,
               "models": models or [{"id": "gemini-2.5-flash", "reasoning": True,
                                     "contextWindow": 1048576, "maxTokens": 65536},
                                    "gemma-3-27b-it"]}
        cfg.update(extra or {})
        all_sets = dict(FAST)
        all_sets.update(sets or {})
        d = self.spawn(args=["--provider", PROVIDER, "--session", "{tmp}/session.jsonl"],
                       settings={"providers": {PROVIDER: cfg}}, sets=all_sets,
                       env=dict({KEY_ENV: SECRET}, **(env or {})))
        return d, srv

    def assertNoSecret(self, d):
        with open(os.path.join(d.tmp, "session.jsonl"), encoding="utf-8") as f:
            session = f.read()
        for where, text in (("stdout", "\n".join(d.raw_lines())), ("stderr", d.stderr_text()),
                            ("the session file", session)):
            self.assertNotIn(SECRET, text, "the key leaked into " + where)

    # -- a streamed answer ---------------------------------------------------------

    def test_a_pi_models_json_entry_streams_with_the_model_in_the_url_and_the_key_header(self):
        text = "alpha beta gamma"
        d, srv = self.start([{"text": text, "inputTokens": 40, "outputTokens": 6,
                              "cachedTokens": 10, "thoughtsTokens": 5}])
        msgs = self.run_prompt(d, "q")
        self.assertEqual(signature(msgs)[5:], [
            "message_start:assistant", "update:text_start"] + ["update:text_delta"] * 3 + [
            "update:text_end", "message_end:assistant", "turn_end", "agent_end"])
        self.assertEqual(deltas(msgs), ["alpha", " beta", " gamma"])
        final = assistant_ends(msgs)[0]
        self.assertEqual((final["api"], final["provider"], final["model"], final["stopReason"]),
                         (API, PROVIDER, "gemini-2.5-flash", "stop"))
        self.assertEqual(final["content"], [{"type": "text", "text": text}])
        # pi's counts: the cached prompt is not input, thoughts are output.
        self.assertEqual((final["usage"]["input"], final["usage"]["output"]), (30, 11))
        req = srv.requests()[0]
        self.assertEqual(req["path"], "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
        self.assertEqual(req["model"], "gemini-2.5-flash")
        self.assertEqual(req["headers"]["x-goog-api-key"], "REDACTED")
        self.assertEqual(req["secretHashes"]["x-goog-api-key"],
                         hashlib.sha256(SECRET.encode()).hexdigest()[:16])
        self.assertNotIn("authorization", req["headers"])
        self.assertEqual(req["body"]["contents"], [{"role": "user", "parts": [{"text": "q"}]}])
        # pi caps maxOutputTokens at 32000; pi's default level (medium) on 2.5 Flash: 8192
        self.assertEqual(req["body"]["generationConfig"],
                         {"maxOutputTokens": 32000,
                          "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 8192}})
        d.finish()
        self.assertNoSecret(d)

    def test_the_model_id_is_escaped_in_the_url_and_a_plain_model_sends_no_thinking(self):
        d, srv = self.start([{"text": "ok"}], models=["tuned model/v1", "gemma-3-27b-it"])
        msgs = self.run_prompt(d, "q")
        self.assertEqual(text_of(assistant_ends(msgs)[0]), "ok")
        req = srv.requests()[0]
        self.assertEqual(req["path"],
                         "/v1beta/models/tuned%20model%2Fv1:streamGenerateContent?alt=sse")
        self.assertEqual(req["model"], "tuned model/v1")
        self.assertNotIn("generationConfig", req["body"])
        d.finish()

    def test_the_second_turn_sends_the_conversation_with_role_model(self):
        d, srv = self.start([{"text": "first answer"}, {"text": "second"}])
        self.run_prompt(d, "one")
        self.run_prompt(d, "two")
        body = srv.requests()[1]["body"]
        self.assertEqual(body["contents"], [
            {"role": "user", "parts": [{"text": "one"}]},
            {"role": "model", "parts": [{"text": "first answer"}]},
            {"role": "user", "parts": [{"text": "two"}]}])
        d.finish()

    def test_thoughts_stream_as_a_signed_thinking_block_and_go_back_as_thoughts(self):
        d, srv = self.start([{"thinking": "let me see", "text": "answer",
                              "thoughtSignature": "c2lnbmVk"}, {"text": "second"}])
        msgs = self.run_prompt(d, "q")
        self.assertEqual(updates(msgs), ["thinking_start"] + ["thinking_delta"] * 3 + [
                                         "thinking_end", "text_start", "text_delta",
                                         "text_end"])
        final = assistant_ends(msgs)[0]
        self.assertEqual(final["content"], [
            {"type": "thinking", "thinking": "let me see", "thinkingSignature": "c2lnbmVk"},
            {"type": "text", "text": "answer"}])
        self.run_prompt(d, "again")
        sent = srv.requests()[1]["body"]["contents"][1]
        self.assertEqual(sent, {"role": "model", "parts": [
            {"thought": True, "text": "let me see", "thoughtSignature": "c2lnbmVk"},
            {"text": "answer"}]})
        d.finish()

    def test_thinking_levels_map_to_pi_s_budgets(self):
        d, srv = self.start()
        for level, want in (("high", {"includeThoughts": True, "thinkingBudget": 24576}),
                            ("minimal", {"includeThoughts": True, "thinkingBudget": 128}),
                            ("off", {"thinkingBudget": 0})):
            with self.subTest(level=level):
                srv.clear_requests()
                r = d.request({"type": "set_thinking_level", "level": level})
                self.assertTrue(r["success"], r)
                self.run_prompt(d, "q")
                self.assertEqual(srv.requests()[0]["body"]["generationConfig"]["thinkingConfig"],
                                 want)
        d.finish()

    def test_max_tokens_finish_is_stop_reason_length(self):
        d, srv = self.start([{"text": "cut short", "finish": "length"}])
        msgs = self.run_prompt(d, "q")
        final = assistant_ends(msgs)[0]
        self.assertEqual((final["stopReason"], text_of(final)), ("length", "cut short"))
        self.assertNotIn("auto_retry_start", types(msgs))
        d.finish()

    # -- finishes that are errors -------------------------------------------------

    def test_safety_finish_is_an_error_that_is_not_retried(self):
        d, srv = self.start([{"text": "some words", "finish": "safety"}, {"text": "never"}])
        msgs = self.run_prompt(d, "q")
        final = assistant_ends(msgs)[-1]
        self.assertEqual(final["stopReason"], "error")
        self.assertIn("finish reason: SAFETY", final["errorMessage"])
        self.assertNotIn("auto_retry_start", types(msgs))
        self.assertEqual(len(srv.requests()), 1)
        d.finish()

    def test_recitation_and_prohibited_content_finishes_are_not_retried(self):
        d, srv = self.start()
        for reason in ("recitation", "PROHIBITED_CONTENT", "MALFORMED_FUNCTION_CALL"):
            with self.subTest(reason=reason):
                srv.set_plan([{"text": "x", "finish": reason}, {"text": "never"}])
                srv.clear_requests()
                msgs = self.run_prompt(d, "q")
                self.assertNotIn("auto_retry_start", types(msgs))
                self.assertEqual(assistant_ends(msgs)[-1]["stopReason"], "error")
                self.assertEqual(len(srv.requests()), 1)
        d.finish()

    def test_a_blocked_prompt_is_an_error_that_is_not_retried(self):
        d, srv = self.start([{"blockReason": "PROHIBITED_CONTENT"}, {"text": "never"}])
        msgs = self.run_prompt(d, "q")
        final = assistant_ends(msgs)[-1]
        self.assertEqual(final["stopReason"], "error")
        self.assertIn("block reason: PROHIBITED_CONTENT", final["errorMessage"])
        self.assertNotIn("auto_retry_start", types(msgs))
        self.assertEqual(len(srv.requests()), 1)
        d.finish()

    def test_a_stream_without_a_finish_reason_is_truncated_and_retried(self):
        d, srv = self.start([{"text": "one two three", "dropAfterChunks": 2},
                             {"text": "whole again"}])
        msgs = self.run_prompt(d, "q")
        first, second = assistant_ends(msgs)
        self.assertEqual((first["stopReason"], first["errorMessage"]), ("error", TRUNCATED))
        self.assertEqual(text_of(first), "one two")
        self.assertEqual(text_of(second), "whole again")
        self.assertEqual(len(events(msgs, "auto_retry_start")), 1)
        d.finish()

    def test_malformed_data_is_not_retried_and_a_hang_is(self):
        d, srv = self.start([{"text": "a b", "malformed": True, "malformedAfterChunks": 1},
                             {"hang": True}, {"text": "fine"}], sets={"retry.idleTimeoutMs": 300})
        msgs = self.run_prompt(d, "q")
        final = assistant_ends(msgs)[-1]
        self.assertTrue(final["errorMessage"].startswith("malformed stream:"), final)
        self.assertNotIn("auto_retry_start", types(msgs))
        msgs = self.run_prompt(d, "q", timeout=10)
        self.assertEqual(len(events(msgs, "auto_retry_start")), 1)
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "fine")
        self.assertEqual(len(srv.requests()), 3)
        d.finish()

    # -- errors: google.rpc.Status ------------------------------------------------

    def test_503_unavailable_is_retried_with_the_status_message(self):
        d, srv = self.start([{"status": 503}, {"text": "back"}])
        msgs = self.run_prompt(d, "q")
        first = assistant_ends(msgs)[0]
        self.assertEqual(first["errorMessage"], "503 The model is overloaded. Please try again later.")
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "back")
        d.finish()

    def test_retry_delay_in_a_per_minute_quota_is_the_wait(self):
        d, srv = self.start([{"status": 429, "message": QUOTA_TEXT, "quotaId": MINUTE,
                              "retryDelay": "1.250s"}, {"text": "ok"}])
        msgs = self.run_prompt(d, "q", timeout=8)
        start = events(msgs, "auto_retry_start")
        self.assertEqual([(s["delayMs"], s["reason"], s.get("hintMs")) for s in start],
                         [(1250, "server-hint", 1250)])
        reqs = srv.requests()
        self.assertEqual(len(reqs), 2)
        self.assertGreaterEqual(reqs[1]["time"] - reqs[0]["time"], 1.1, "the wait was not kept")
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "ok")
        d.finish()

    def test_a_daily_quota_is_a_usage_limit_and_not_retried(self):
        d, srv = self.start([{"status": 429, "message": "Quota exceeded.", "quotaId": DAILY,
                              "retryDelay": "2s"}, {"text": "never"}])
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("auto_retry_start", types(msgs))
        final = assistant_ends(msgs)[-1]
        self.assertEqual(final["stopReason"], "error")
        self.assertIn("(usage limit: ", final["errorMessage"])
        self.assertEqual(len(srv.requests()), 1)
        body = json.dumps({"error": {"code": 429, "message": "Quota exceeded.",
                                     "status": "RESOURCE_EXHAUSTED", "details": [
                                         {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                                          "violations": [{"quotaId": DAILY}]}]}})
        c = d.request({"type": "classify_error", "message": "429 Quota exceeded.", "status": 429,
                       "body": body})["data"]
        self.assertEqual((c["errorClass"], c["rule"]), ("usage_limit", "google-quota:" + DAILY))
        d.finish()

    def test_api_key_invalid_is_not_retried(self):
        d, srv = self.start([{"status": 400, "message": "API key not valid. Please pass a valid API key.",
                              "errorReason": "API_KEY_INVALID"}, {"text": "never"}])
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("auto_retry_start", types(msgs))
        self.assertEqual(assistant_ends(msgs)[-1]["errorMessage"],
                         "400 API key not valid. Please pass a valid API key.")
        self.assertEqual(len(srv.requests()), 1)
        d.finish()

    def test_statuses_that_are_never_retried(self):
        d, srv = self.start()
        for step in ({"status": 400, "googleStatus": "FAILED_PRECONDITION",
                      "message": "User location is not supported for the API use."},
                     {"status": 403, "message": "The caller does not have permission"},
                     {"status": 401, "message": "Request had invalid authentication credentials."},
                     {"status": 400, "message": "Invalid JSON payload received."}):
            with self.subTest(step=step):
                srv.set_plan([step, {"text": "never"}])
                srv.clear_requests()
                msgs = self.run_prompt(d, "q")
                self.assertNotIn("auto_retry_start", types(msgs))
                self.assertEqual(len(srv.requests()), 1)
        d.finish()

    def test_statuses_that_are_retried(self):
        d, srv = self.start()
        for status in (500, 504, 429):
            with self.subTest(status=status):
                srv.set_plan([{"status": status}, {"text": "ok"}])
                srv.clear_requests()
                msgs = self.run_prompt(d, "q")
                self.assertEqual(len(events(msgs, "auto_retry_start")), 1)
                self.assertEqual(text_of(assistant_ends(msgs)[-1]), "ok")
        d.finish()

    # -- errors inside the stream -------------------------------------------------

    def test_an_in_stream_error_object_is_retried_with_its_retry_delay(self):
        d, srv = self.start([{"text": "part way", "errorAfterChunks": 1,
                              "streamError": {"code": 429, "message": "Resource exhausted."},
                              "retryDelay": "0.4s"},
                             {"text": "done"}])
        msgs = self.run_prompt(d, "q")
        first = assistant_ends(msgs)[0]
        self.assertEqual(first["errorMessage"], "429 RESOURCE_EXHAUSTED: Resource exhausted.")
        start = events(msgs, "auto_retry_start")
        self.assertEqual([(s["delayMs"], s.get("hintMs")) for s in start], [(400, 400)])
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "done")
        d.finish()

    def test_an_in_stream_daily_quota_is_a_usage_limit(self):
        d, srv = self.start([{"streamError": {"code": 429, "message": "Quota exceeded."},
                              "quotaId": DAILY}, {"text": "never"}])
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("auto_retry_start", types(msgs))
        self.assertEqual(assistant_ends(msgs)[-1]["errorMessage"],
                         "429 RESOURCE_EXHAUSTED: Quota exceeded. (usage limit: no other credential "
                         "or model to switch to)")
        self.assertEqual(len(srv.requests()), 1)
        d.finish()

    def test_an_in_stream_invalid_argument_is_not_retried(self):
        d, srv = self.start([{"streamError": {"code": 400, "message": "Bad thing."}},
                             {"text": "never"}])
        msgs = self.run_prompt(d, "q")
        self.assertEqual(assistant_ends(msgs)[-1]["errorMessage"], "400 INVALID_ARGUMENT: Bad thing.")
        self.assertNotIn("auto_retry_start", types(msgs))
        d.finish()

    def test_the_key_echoed_in_an_error_never_reaches_events_or_logs(self):
        d, srv = self.start([{"status": 400, "message": "API key not valid: " + SECRET,
                              "errorReason": "API_KEY_INVALID"},
                             {"streamError": {"code": 500, "message": "key " + SECRET}},
                             {"text": "ok"}], env={"RETRYD_LOG": "debug"})
        self.run_prompt(d, "q")
        self.run_prompt(d, "q")
        d.finish()
        self.assertNoSecret(d)


class GeminiBuiltinTests(DaemonTestCase):

    def test_the_google_builtin_is_pi_s_provider(self):
        status, out, err = run_cli(["config"])
        self.assertEqual(status, 0, err)
        line = [l for l in out.splitlines() if l.startswith("built-in\tproviders.google=")]
        self.assertEqual(len(line), 1, out)
        google = json.loads(line[0].split("=", 1)[1])
        self.assertEqual((google["api"], google["baseUrl"], google["apiKeyEnv"]),
                         (API, "https://generativelanguage.googleapis.com/v1beta", "GEMINI_API_KEY"))
        models = {m["id"]: m for m in google["models"]}
        self.assertTrue(models["gemini-2.5-flash"]["reasoning"])
        self.assertTrue(models["gemini-2.5-pro"]["reasoning"])

if __name__ == "__main__":
    unittest.main()

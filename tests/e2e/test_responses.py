"""OpenAI Responses through the real binary: a provider entry as pi's
models.json writes it (`api: "openai-responses"`), Azure's variant, and the
built-in `openai` provider, against the fake LLM server's Responses dialect
(tests/fixtures/fake_responses.py) on 127.0.0.1. Streaming, usage, thinking,
each error shape retried or not as the decision table says, truncation.
"""
import hashlib
import json
import os
import re
import secrets
import sys
import tempfile

from harness import DaemonTestCase, deltas, role_of, run_cli, signature, text_of, types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

KEY = "sk-e2e-resp-" + secrets.token_hex(16)  # new each run: a shared fleet keeps what a server said of a key
TRUNCATED = "connection error: stream ended before completion"
USAGE_LIMIT_END = "(usage limit: no other credential or model to switch to)"


def events(msgs, type_):
    return [m for m in msgs if m.get("type") == type_]


def assistant_ends(msgs):
    return [m["message"] for m in msgs
            if m.get("type") == "message_end" and role_of(m) == "assistant"]


def pi_model(model_id, reasoning=True, max_tokens=16384):
    """A model entry as pi's models.json has it."""
    return {"id": model_id, "name": model_id.upper(), "reasoning": reasoning,
            "input": ["text", "image"], "contextWindow": 400000, "maxTokens": max_tokens,
            "cost": {"input": 0.25, "output": 2, "cacheRead": 0.025, "cacheWrite": 0}}


def decisions(stderr):
    """(action, class, rule) of each RETRYD_LOG=debug decision line."""
    out = []
    for line in stderr.splitlines():
        m = re.search(r"decision: action=(\w+).*?class=(\S+).*?rule=(\S+)", line)
        if m:
            out.append(m.groups())
    return out


class ResponsesCase(DaemonTestCase):
    API = "openai-responses"
    PATH = "/v1/responses"

    def server(self, plan):
        srv = FakeServer(plan, max_seconds=120).start()
        self.addCleanup(srv.stop)
        return srv

    def entry(self, srv, **over):
        cfg = {"baseUrl": srv.url + "/v1", "api": self.API, "apiKey": KEY,
               "models": [pi_model("gpt-5-mini"), pi_model("gpt-4.1", reasoning=False)]}
        cfg.update(over)
        return cfg

    def start(self, plan, sets=None, entry=None, model="gpt-5-mini", args=()):
        srv = self.server(plan)
        all_sets = {"retry.baseDelayMs": 20, "retry.maxRetries": 3}
        all_sets.update(sets or {})
        d = self.spawn(args=["--provider", "fake", "--model", model, "--no-session"] + list(args),
                       settings={"providers": {"fake": self.entry(srv, **(entry or {}))}},
                       sets=all_sets, env={"RETRYD_LOG": "debug"})
        return d, srv


class ResponsesStreamTests(ResponsesCase):
    def test_a_pi_models_json_entry_streams_text_with_usage(self):
        # pi's request: no background mode (retry.continueCutAnswers would add it).
        d, srv = self.start([{"text": "alpha beta gamma", "inputTokens": 21, "outputTokens": 3,
                              "cachedTokens": 8}], sets={"retry.continueCutAnswers": "off"})
        msgs = self.run_prompt(d, "q")
        self.assertEqual(signature(msgs), [
            "response:prompt", "agent_start", "turn_start", "message_start:user",
            "message_end:user", "message_start:assistant", "update:text_start"]
            + ["update:text_delta"] * 3 + [
            "update:text_end", "message_end:assistant", "turn_end", "agent_end"])
        self.assertEqual(deltas(msgs), ["alpha", " beta", " gamma"])
        final = assistant_ends(msgs)[0]
        self.assertEqual((final["api"], final["provider"], final["model"]),
                         (self.API, "fake", "gpt-5-mini"))
        self.assertEqual(final["stopReason"], "stop")
        self.assertEqual(final["content"], [{"type": "text", "text": "alpha beta gamma"}])
        # pi's counts: input_tokens counts the cached ones too; they are cacheRead.
        self.assertEqual((final["usage"]["input"], final["usage"]["output"],
                          final["usage"]["cacheRead"]), (13, 3, 8))
        [req] = srv.requests()
        self.assertEqual(req["path"], self.PATH)
        self.assertEqual(req["api"], "responses")
        self.assertEqual(req["secretHashes"]["authorization"],
                         hashlib.sha256(("Bearer " + KEY).encode()).hexdigest()[:16])
        body = req["body"]
        self.assertEqual(body["model"], "gpt-5-mini")
        self.assertIs(body["stream"], True)
        self.assertIs(body["store"], False)
        self.assertEqual(body["max_output_tokens"], 16384)
        # A reasoning model at the default level (medium, as pi's): the effort
        # with a summary, and the encrypted reasoning to send back.
        self.assertEqual(body["reasoning"], {"effort": "medium", "summary": "auto"})
        self.assertEqual(body["include"], ["reasoning.encrypted_content"])
        self.assertEqual(body["input"], [{"role": "user", "content": [{"type": "input_text",
                                                                        "text": "q"}]}])
        self.assertNotIn(KEY, d.stderr_text())
        d.finish()

    def test_the_next_request_sends_the_answer_back_as_an_output_message(self):
        d, srv = self.start([{"text": "first answer"}, {"text": "second"}], model="gpt-4.1")
        self.run_prompt(d, "one")
        self.run_prompt(d, "two")
        body = srv.requests()[1]["body"]
        self.assertEqual(body["input"], [
            {"role": "user", "content": [{"type": "input_text", "text": "one"}]},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "first answer", "annotations": []}],
             "status": "completed", "id": "msg_1"},
            {"role": "user", "content": [{"type": "input_text", "text": "two"}]}])
        self.assertNotIn("reasoning", body)  # not a reasoning model
        d.finish()

    def test_max_output_tokens_is_a_length_stop_not_retried(self):
        d, srv = self.start([{"text": "cut short", "finish": "length"}])
        msgs = self.run_prompt(d, "q")
        final = assistant_ends(msgs)[0]
        self.assertEqual((final["stopReason"], text_of(final)), ("length", "cut short"))
        self.assertNotIn("auto_retry_start", types(msgs))
        d.finish()

    def test_function_calls_end_in_tool_use(self):
        d, srv = self.start([{"text": "let me look", "toolCalls": [{"name": "read",
                                                                    "arguments": {"path": "x"}}]}])
        final = assistant_ends(self.run_prompt(d, "q"))[0]
        self.assertEqual((final["stopReason"], text_of(final)), ("toolUse", "let me look"))
        d.finish()

    def test_thinking_does_not_disturb_the_text_and_streams_as_pi_streams_it(self):
        d, srv = self.start([{"thinking": "Plan it\n\nCheck it", "text": "done"}])
        msgs = self.run_prompt(d, "q")
        final = assistant_ends(msgs)[-1]
        self.assertEqual((final["stopReason"], deltas(msgs)), ("stop", ["done"]))
        kinds = [m["assistantMessageEvent"]["type"] for m in events(msgs, "message_update")]
        thinking = [m["assistantMessageEvent"]["delta"] for m in events(msgs, "message_update")
                    if m["assistantMessageEvent"]["type"] == "thinking_delta"]
        self.assertEqual("".join(thinking), "Plan it\n\nCheck it")
        self.assertLess(kinds.index("thinking_end"), kinds.index("text_start"))
        block = final["content"][0]
        self.assertEqual((block["type"], block["thinking"]), ("thinking", "Plan it\n\nCheck it"))
        item = json.loads(block["thinkingSignature"])
        self.assertEqual((item["type"], item["encrypted_content"][:7]), ("reasoning", "gAAAAAB"))
        # The next request sends the reasoning item back, as pi does.
        srv.set_plan([{"text": "again"}])
        self.run_prompt(d, "more")
        sent = srv.requests()[-1]["body"]["input"]
        self.assertEqual(sent[1], item)
        d.finish()

    def test_thinking_level_sets_the_effort_with_a_summary(self):
        d, srv = self.start([{"text": "ok"}, {"text": "ok"}])
        self.assertTrue(d.request({"type": "set_thinking_level", "level": "high"})["success"])
        self.run_prompt(d, "q")
        body = srv.requests()[0]["body"]
        self.assertEqual(body["reasoning"], {"effort": "high", "summary": "auto"})
        self.assertEqual(body["include"], ["reasoning.encrypted_content"])
        # Off: pi tells a reasoning model "none" and asks for nothing back.
        self.assertTrue(d.request({"type": "set_thinking_level", "level": "off"})["success"])
        self.run_prompt(d, "again")
        body = srv.requests()[1]["body"]
        self.assertEqual(body["reasoning"], {"effort": "none"})
        self.assertNotIn("include", body)
        d.finish()


class ResponsesErrorTests(ResponsesCase):
    """Each error shape, retried or not as the decision table says."""

    def first_failure(self, step, then=None, sets=None):
        d, srv = self.start([step] + ([then] if then else []), sets=sets)
        msgs = self.run_prompt(d, "q")
        d.finish()
        return msgs, srv, decisions(d.stderr_text())

    def assertRetried(self, step, error, cls, rule):
        msgs, srv, dec = self.first_failure(step, {"text": "recovered"})
        first, last = assistant_ends(msgs)[0], assistant_ends(msgs)[-1]
        self.assertEqual((first["stopReason"], first["errorMessage"]), ("error", error))
        start = events(msgs, "auto_retry_start")
        self.assertEqual([(s["attempt"], s["errorClass"], s["rule"]) for s in start],
                         [(1, cls, rule)])
        self.assertEqual((last["stopReason"], text_of(last)), ("stop", "recovered"))
        self.assertEqual(len(srv.requests()), 2)
        return start[0]

    def assertFinal(self, step, error, cls, rule):
        msgs, srv, dec = self.first_failure(step, {"text": "never"})
        self.assertNotIn("auto_retry_start", types(msgs))
        final = assistant_ends(msgs)[-1]
        self.assertEqual(final["stopReason"], "error")
        self.assertTrue(final["errorMessage"].startswith(error), final["errorMessage"])
        self.assertEqual(len(srv.requests()), 1)
        self.assertEqual([(c, r) for _, c, r in dec], [(cls, rule)])
        return final

    def test_429_with_retry_after_waits_the_hint(self):
        start = self.assertRetried({"status": 429, "headers": {"retry-after": "1"}},
                                   "429 Rate limit reached", "retryable", "http-status:429")
        self.assertEqual((start["reason"], start["hintMs"], start["delayMs"]),
                         ("server-hint", 1000, 1000))

    def test_500_and_503_are_retried(self):
        self.assertRetried({"status": 500}, "500 Internal Server Error", "retryable", "http-status:500")
        self.assertRetried({"status": 503, "message": "Slow down"}, "503 Slow down", "retryable",
                           "http-status:503")

    def test_response_failed_with_server_error_is_retried(self):
        self.assertRetried({"text": "a b", "streamError": {"code": "server_error",
                                                          "message": "The server had an error."}},
                           "server_error: The server had an error.", "retryable",
                           "openai-code:server_error")

    def test_response_failed_with_rate_limit_exceeded_is_retried_after_its_stated_wait(self):
        start = self.assertRetried(
            {"streamError": {"code": "rate_limit_exceeded",
                             "message": "Rate limit reached for gpt-5-mini. Please try again in 0.3s."}},
            "rate_limit_exceeded: Rate limit reached for gpt-5-mini. Please try again in 0.3s.",
            "retryable", "openai-code:rate_limit_exceeded")
        self.assertEqual(start.get("hintMs"), 300)

    def test_the_error_event_is_retried_by_its_code(self):
        self.assertRetried({"text": "a", "streamError": {"code": "server_error", "message": "oops"},
                            "streamErrorAs": "error"},
                           "server_error: oops", "retryable", "openai-code:server_error")

    def test_insufficient_quota_in_the_stream_is_a_usage_limit(self):
        final = self.assertFinal({"streamError": {"code": "insufficient_quota",
                                                  "message": "Request failed."}},
                                 "insufficient_quota: Request failed.", "usage_limit",
                                 "openai-code:insufficient_quota")
        self.assertTrue(final["errorMessage"].endswith(USAGE_LIMIT_END), final["errorMessage"])

    def test_insufficient_quota_as_an_http_body_is_a_usage_limit(self):
        body = {"error": {"message": "Request failed.", "type": "insufficient_quota", "param": None,
                          "code": "insufficient_quota"}}
        final = self.assertFinal({"status": 429, "body": body}, "429 Request failed.", "usage_limit",
                                 "openai-code:insufficient_quota")
        self.assertTrue(final["errorMessage"].endswith(USAGE_LIMIT_END), final["errorMessage"])

    def test_context_length_exceeded_is_an_overflow_in_the_stream_and_as_a_body(self):
        self.assertFinal({"streamError": {"code": "context_length_exceeded", "message": "Too big."}},
                         "context_length_exceeded: Too big.", "context_overflow",
                         "openai-code:context_length_exceeded")
        body = {"error": {"message": "Too big.", "type": "invalid_request_error", "param": "input",
                          "code": "context_length_exceeded"}}
        self.assertFinal({"status": 400, "body": body}, "400 Too big.", "context_overflow",
                         "openai-code:context_length_exceeded")

    def test_401_is_not_retried(self):
        self.assertFinal({"status": 401}, "401 Incorrect API key provided", "non_retryable",
                         "http-status:401")

    def test_content_filter_is_an_error_not_retried(self):
        self.assertFinal({"text": "some", "finish": "content_filter"},
                         "content_filter: the provider's content filter stopped the answer",
                         "non_retryable", "openai-code:content_filter")

    def test_a_stream_without_a_terminal_event_is_truncated_and_retried(self):
        for mode in ("eof", "reset"):
            with self.subTest(dropMode=mode):
                # A replay (test_continue resumes one).
                msgs, srv, dec = self.first_failure({"text": "one two three", "dropAfterChunks": 2,
                                                     "dropMode": mode}, {"text": "whole"},
                                                    sets={"retry.continueCutAnswers": "off"})
                first, last = assistant_ends(msgs)[0], assistant_ends(msgs)[-1]
                self.assertEqual(first["stopReason"], "error")
                if mode == "eof":
                    self.assertEqual(first["errorMessage"], TRUNCATED)
                    self.assertEqual(text_of(first), "one two")
                self.assertEqual(len(events(msgs, "auto_retry_start")), 1)
                self.assertEqual(text_of(last), "whole")

    def test_malformed_data_fails_clearly_like_the_other_formats(self):
        final = self.assertFinal({"text": "a b", "malformed": True, "malformedAfterChunks": 1},
                                 "malformed stream: ", "non_retryable", "text:badRequestPatterns[0]")
        self.assertEqual(text_of(final), "a")


class AzureResponsesTests(ResponsesCase):
    API = "azure-openai-responses"

    def entry(self, srv, **over):
        cfg = {"baseUrl": srv.url + "/openai/v1", "api": self.API, "apiKey": KEY,
               "models": [pi_model("my-deployment")]}
        cfg.update(over)
        return cfg

    def test_the_url_has_the_api_version_and_the_key_is_in_api_key(self):
        d, srv = self.start([{"text": "from azure"}], model="my-deployment",
                            entry={"apiVersion": "2025-04-01-preview"})
        msgs = self.run_prompt(d, "q")
        self.assertEqual(text_of(assistant_ends(msgs)[0]), "from azure")
        [req] = srv.requests()
        self.assertEqual(req["path"], "/openai/v1/responses?api-version=2025-04-01-preview")
        self.assertEqual(req["api"], "azure")
        self.assertEqual(req["secretHashes"], {"api-key": hashlib.sha256(KEY.encode()).hexdigest()[:16]})
        self.assertNotIn("authorization", req["headers"])
        self.assertNotIn("store", req["body"])
        self.assertEqual(assistant_ends(msgs)[0]["api"], self.API)
        d.finish()

    def test_the_api_version_defaults_to_v1_like_pi(self):
        d, srv = self.start([{"status": 503}, {"text": "ok"}], model="my-deployment")
        msgs = self.run_prompt(d, "q")
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "ok")
        self.assertEqual([r["path"] for r in srv.requests()],
                         ["/openai/v1/responses?api-version=v1"] * 2)
        d.finish()

    def test_a_bad_api_version_is_a_configuration_error(self):
        srv = self.server([])
        with tempfile.TemporaryDirectory(prefix="retryd-e2e-resp-") as tmp:
            path = os.path.join(tmp, "settings.json")
            with open(path, "w") as f:
                json.dump({"providers": {"az": self.entry(srv, apiVersion="v1&x=y")}}, f)
            rc, out, err = run_cli(["--provider", "az", "--settings", path])
        self.assertEqual((rc, out), (1, ""), err)
        self.assertIn("providers.az.apiVersion", err)


class BuiltinOpenAITests(ResponsesCase):
    def test_the_builtin_openai_provider_speaks_responses(self):
        srv = self.server([{"text": "from the builtin"}])
        d = self.spawn(args=["--provider", "openai", "--model", "gpt-4.1-mini", "--no-session"],
                       sets={"providers.openai.baseUrl": srv.url + "/v1"},
                       env={"OPENAI_API_KEY": KEY})
        msgs = self.run_prompt(d, "q")
        final = assistant_ends(msgs)[0]
        self.assertEqual((final["api"], text_of(final)), ("openai-responses", "from the builtin"))
        self.assertEqual([r["path"] for r in srv.requests()], ["/v1/responses"])
        d.finish()

    def test_the_builtin_openai_provider_can_still_be_told_chat_completions(self):
        srv = self.server([{"text": "old style"}])
        d = self.spawn(args=["--provider", "openai", "--model", "gpt-4.1-mini", "--no-session"],
                       sets={"providers.openai.baseUrl": srv.url + "/v1",
                             "providers.openai.api": "openai-completions"},
                       env={"OPENAI_API_KEY": KEY})
        msgs = self.run_prompt(d, "q")
        self.assertEqual(text_of(assistant_ends(msgs)[0]), "old style")
        self.assertEqual([r["path"] for r in srv.requests()], ["/v1/chat/completions"])
        d.finish()

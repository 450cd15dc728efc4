"""A cut answer continued instead of replayed (retry.continueCutAnswers).

The real binary against tests/fixtures/fake_llm_server.py: a stream cut after
some words, then an attempt that continues it -- by a prefill (Anthropic,
for models that take one) or a continuation turn (any HTTP format with the
setting "always"), whose repeated overlap retryd drops -- or replays it, with
auto_retry_start saying which and why. Both update modes: a delta client
sees nothing twice, a client reading messages gets the whole answer once.
"""
import json
import os
import secrets
import sys
import tempfile

from harness import DaemonTestCase, deltas, role_of, run_cli, text_of

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fixtures"))
from fake_llm_server import FakeServer, PREFILL_REFUSAL  # noqa: E402

KEY_ENV = "RETRYD_E2E_KEY"
SECRET = "sk-e2e-" + secrets.token_hex(16)  # new each run: a shared fleet keeps what a server said of a key
ANSWER = ("Rivers carve valleys over millions of years. Water picks up sediment, "
          "grinds the bed, and carries the rock downstream to the sea.")
CUT_AFTER = 9   # words streamed before the cut
MODES = ("full", "delta")


def retry_starts(msgs):
    return [m for m in msgs if m.get("type") == "auto_retry_start"]


def assistant_ends(msgs):
    return [m["message"] for m in msgs if m.get("type") == "message_end" and role_of(m) == "assistant"]


def attempt_deltas(msgs):
    """The text deltas of each attempt (split at message_start of the assistant)."""
    out, cur = [], None
    for m in msgs:
        if m.get("type") == "message_start" and role_of(m) == "assistant":
            cur = []
            out.append(cur)
        elif cur is not None:
            cur.extend(deltas([m]))
    return out


def wire_text(content):
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


class ContinueCase(DaemonTestCase):
    API = "openai-completions"
    MODEL = "m1"

    def refused(self, cfg):
        """retryd's exit status and stderr with providers.fake = cfg."""
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"providers": {"fake": cfg}}, f)
        self.addCleanup(os.unlink, f.name)
        rc, _, err = run_cli(["--provider", "fake", "--settings", f.name])
        return rc, err

    def start(self, plan, sets=None, models=None, provider=None):
        srv = FakeServer(plan, max_seconds=120).start()
        self.addCleanup(srv.stop)
        cfg = {"api": self.API, "baseUrl": srv.url + "/v1", "apiKeyEnv": KEY_ENV,
               "models": models or [self.MODEL]}
        cfg.update(provider or {})
        all_sets = {"retry.baseDelayMs": 20}
        all_sets.update(sets or {})
        d = self.spawn(args=["--provider", "fake", "--model", (models or [self.MODEL])[0]
                             if isinstance((models or [self.MODEL])[0], str)
                             else (models or [self.MODEL])[0]["id"]],
                       settings={"providers": {"fake": cfg}}, sets=all_sets, env={KEY_ENV: SECRET})
        return d, srv

    def cut_then(self, step, **kw):
        return [{"text": ANSWER, "dropAfterChunks": CUT_AFTER, "outputTokens": CUT_AFTER}, step]

    def kept(self):
        words = [w for w in ANSWER.split(" ")]
        return " ".join(words[:CUT_AFTER])

    def assert_whole_once(self, msgs, mode):
        failed, final = assistant_ends(msgs)
        self.assertEqual(failed["stopReason"], "error")
        self.assertEqual(text_of(failed), self.kept())
        self.assertEqual(final["stopReason"], "stop")
        self.assertEqual(text_of(final), ANSWER)
        first, second = attempt_deltas(msgs)
        # What a delta client shows: the answer, once.
        self.assertEqual("".join(first) + "".join(second), ANSWER, mode)
        ends = [m for m in msgs if m.get("type") == "agent_end"]
        self.assertEqual(text_of(ends[0]["messages"][-1]), ANSWER)


class ContinuationTurnTests(ContinueCase):
    """OpenAI chat completions: no prefill, so "always" continues by a turn."""

    def test_turn_drops_the_repeated_overlap_in_both_update_modes(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                d, srv = self.start(self.cut_then({"text": ANSWER, "continues": True, "outputTokens": 14}),
                                    sets={"retry.continueCutAnswers": "always",
                                          "rpc.messageUpdates": mode})
                msgs = self.run_prompt(d, "how do rivers shape land?")
                [start] = retry_starts(msgs)
                self.assertEqual(start["continuation"], {"mode": "turn", "keptChars": len(self.kept())})
                self.assert_whole_once(msgs, mode)
                req = srv.requests()[1]["body"]["messages"]
                self.assertEqual([m["role"] for m in req], ["user", "assistant", "user"])
                self.assertEqual(wire_text(req[1]["content"]), self.kept())
                self.assertIn("Continue exactly where it stopped", wire_text(req[2]["content"]))
                d.finish()

    def test_a_cut_inside_a_tool_call_replays_saying_so_even_with_always(self):
        # Five words of text, then the call's head and a piece of its
        # arguments, then the cut: the message keeps only the text, but a
        # turn would continue an answer whose call is gone.
        plan = [{"text": "Let me read the file.", "dropAfterChunks": 7,
                 "toolCalls": [{"name": "read", "arguments": {"path": "notes/today.txt"}}]},
                {"text": ANSWER}]
        for mode in MODES:
            with self.subTest(mode=mode):
                d, srv = self.start(plan, sets={"retry.continueCutAnswers": "always",
                                                "rpc.messageUpdates": mode})
                msgs = self.run_prompt(d, "read my notes")
                [start] = retry_starts(msgs)
                self.assertEqual(start["continuation"], {"mode": "replay", "keptChars": 0,
                                                         "reason": "a tool call was cut"})
                self.assertEqual([m["role"] for m in srv.requests()[1]["body"]["messages"]],
                                 ["user"])
                self.assertEqual(text_of(assistant_ends(msgs)[-1]), ANSWER)
                self.assertEqual("".join(attempt_deltas(msgs)[-1]), ANSWER)
                d.finish()

    def test_turn_usage_is_each_attempt_as_billed(self):
        d, srv = self.start(self.cut_then({"text": ANSWER, "continues": True, "inputTokens": 70,
                                           "outputTokens": 14}),
                            sets={"retry.continueCutAnswers": "always"})
        msgs = self.run_prompt(d, "q")
        failed, final = assistant_ends(msgs)
        self.assertEqual(final["usage"]["output"], 14)
        self.assertEqual(final["usage"]["input"], 70)
        # A cut stream reports no usage on the chat wire: nothing billed is invented.
        self.assertEqual(failed["usage"]["output"], 0)
        d.finish()

    def test_lossless_default_replays_a_chat_completions_cut_as_before(self):
        d, srv = self.start(self.cut_then({"text": ANSWER}))
        msgs = self.run_prompt(d, "q")
        [start] = retry_starts(msgs)
        self.assertNotIn("continuation", start)
        self.assertEqual([m["role"] for m in srv.requests()[1]["body"]["messages"]], ["user"])
        self.assertEqual(text_of(assistant_ends(msgs)[1]), ANSWER)
        d.finish()

    def test_off_replays_and_says_nothing(self):
        d, srv = self.start(self.cut_then({"text": ANSWER}), sets={"retry.continueCutAnswers": "off"})
        msgs = self.run_prompt(d, "q")
        [start] = retry_starts(msgs)
        self.assertNotIn("continuation", start)
        self.assertEqual(len(srv.requests()[1]["body"]["messages"]), 1)
        d.finish()

    def test_cut_before_any_text_replays_with_the_reason(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                d, srv = self.start([{"text": ANSWER, "dropAfterChunks": 0}, {"text": ANSWER}],
                                    sets={"retry.continueCutAnswers": "always",
                                          "rpc.messageUpdates": mode})
                msgs = self.run_prompt(d, "q")
                [start] = retry_starts(msgs)
                self.assertEqual(start["continuation"], {"mode": "replay", "keptChars": 0,
                                                         "reason": "the cut came before any text"})
                self.assertEqual(len(srv.requests()[1]["body"]["messages"]), 1)
                self.assertEqual(text_of(assistant_ends(msgs)[-1]), ANSWER)
                self.assertEqual("".join(attempt_deltas(msgs)[-1]), ANSWER)
                d.finish()

    def test_provider_setting_overrides_the_global_one(self):
        d, srv = self.start(self.cut_then({"text": ANSWER, "continues": True}),
                            provider={"continueCutAnswers": "always"})
        msgs = self.run_prompt(d, "q")
        self.assertEqual(retry_starts(msgs)[0]["continuation"]["mode"], "turn")
        self.assert_whole_once(msgs, "full")
        d.finish()

    def test_a_bad_provider_setting_is_refused_with_a_sentence(self):
        rc, err = self.refused({"api": self.API, "baseUrl": "http://127.0.0.1:9/v1", "models": ["m1"],
                                "continueCutAnswers": "yes"})
        self.assertNotEqual(rc, 0)
        self.assertIn('providers.fake.continueCutAnswers must be "lossless", "always" or "off"', err)


class GeminiTurnTests(ContinueCase):
    """Gemini generateContent: no prefill nor resume, so "always" continues by
    a turn (the kept text as a "model" content, then the user's request)."""

    API = "google-generative-ai"
    MODEL = "gemini-2.5-flash"

    def test_a_gemini_turn_drops_the_repeat_in_both_update_modes(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                d, srv = self.start(self.cut_then({"text": ANSWER, "continues": True}),
                                    sets={"retry.continueCutAnswers": "always",
                                          "rpc.messageUpdates": mode})
                msgs = self.run_prompt(d, "how do rivers shape land?")
                [start] = retry_starts(msgs)
                self.assertEqual(start["continuation"], {"mode": "turn", "keptChars": len(self.kept())})
                self.assert_whole_once(msgs, mode)
                req = srv.requests()[1]["body"]["contents"]
                self.assertEqual([c["role"] for c in req], ["user", "model", "user"])
                self.assertEqual(wire_text(req[1]["parts"]), self.kept())
                d.finish()

    def test_lossless_default_replays_a_gemini_cut_as_before(self):
        d, srv = self.start(self.cut_then({"text": ANSWER}))
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("continuation", retry_starts(msgs)[0])
        self.assertEqual([c["role"] for c in srv.requests()[1]["body"]["contents"]], ["user"])
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), ANSWER)
        d.finish()


class PrefillTests(ContinueCase):
    """Anthropic messages: the partial answer as the assistant turn's start."""

    API = "anthropic-messages"
    MODEL = "claude-sonnet-4-5"

    def test_prefill_continues_after_the_kept_text_in_both_update_modes(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                d, srv = self.start(self.cut_then({"text": ANSWER, "continues": True}),
                                    sets={"rpc.messageUpdates": mode})
                msgs = self.run_prompt(d, "q")
                [start] = retry_starts(msgs)
                self.assertEqual(start["continuation"], {"mode": "prefill", "keptChars": len(self.kept())})
                self.assert_whole_once(msgs, mode)
                req = srv.requests()[1]["body"]["messages"]
                self.assertEqual([m["role"] for m in req], ["user", "assistant"])
                self.assertEqual(wire_text(req[-1]["content"]), self.kept())
                d.finish()

    def test_refused_prefill_replays_with_the_reason(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                d, srv = self.start(self.cut_then({"text": ANSWER, "refusePrefill": True}) +
                                    [{"text": ANSWER}], sets={"rpc.messageUpdates": mode},
                                    models=[{"id": "claude-next", "prefill": True}])
                msgs = self.run_prompt(d, "q")
                first, second = retry_starts(msgs)
                self.assertEqual(first["continuation"]["mode"], "prefill")
                self.assertEqual(second["continuation"],
                                 {"mode": "replay", "keptChars": 0,
                                  "reason": "the provider refused the prefill"})
                self.assertIn(PREFILL_REFUSAL, assistant_ends(msgs)[1]["errorMessage"])
                self.assertEqual([m["role"] for m in srv.requests()[2]["body"]["messages"]],
                                 ["user"])
                self.assertEqual(text_of(assistant_ends(msgs)[-1]), ANSWER)
                self.assertEqual("".join(attempt_deltas(msgs)[-1]), ANSWER)
                d.finish()

    def test_a_model_that_refused_a_prefill_is_not_prefilled_again_on_the_next_cut(self):
        plan = (self.cut_then({"text": ANSWER, "refusePrefill": True}) + [{"text": ANSWER}]
                + self.cut_then({"text": ANSWER}))
        d, srv = self.start(plan, models=[{"id": "claude-next", "prefill": True}])
        self.run_prompt(d, "q")
        msgs = self.run_prompt(d, "again")
        # The second cut replays at once: no second refused request.
        self.assertNotIn("continuation", retry_starts(msgs)[0])
        reqs = srv.requests()
        self.assertEqual(len(reqs), 5)
        self.assertEqual(reqs[4]["body"]["messages"][-1]["role"], "user")
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), ANSWER)
        d.finish()

    def test_models_that_refuse_prefill_are_not_prefilled_by_default(self):
        d, srv = self.start(self.cut_then({"text": ANSWER}), models=["claude-opus-4-6"])
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("continuation", retry_starts(msgs)[0])
        self.assertEqual([m["role"] for m in srv.requests()[1]["body"]["messages"]], ["user"])
        d.finish()

    def test_models_that_refuse_prefill_continue_by_a_turn_when_always(self):
        d, srv = self.start(self.cut_then({"text": ANSWER, "continues": True}), models=["claude-opus-4-6"],
                            sets={"retry.continueCutAnswers": "always"})
        msgs = self.run_prompt(d, "q")
        self.assertEqual(retry_starts(msgs)[0]["continuation"]["mode"], "turn")
        self.assert_whole_once(msgs, "full")
        self.assertEqual(srv.requests()[1]["body"]["messages"][-1]["role"], "user")
        d.finish()

    def test_a_model_flag_that_is_not_a_boolean_is_refused(self):
        rc, err = self.refused({"api": self.API, "baseUrl": "http://127.0.0.1:9/v1",
                                "models": [{"id": "c", "prefill": "yes"}]})
        self.assertNotEqual(rc, 0)
        self.assertIn("providers.fake.models[0].prefill must be true or false", err)


class ResumeTests(ContinueCase):
    """OpenAI Responses: background mode, a cut resumed from its last sequence number."""

    API = "openai-responses"
    MODEL = "gpt-4.1"

    def test_a_cut_background_response_resumes_after_the_last_event_in_both_update_modes(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                d, srv = self.start([{"text": ANSWER, "dropAfterChunks": CUT_AFTER, "outputTokens": 23,
                                      "inputTokens": 40}],
                                    sets={"rpc.messageUpdates": mode})
                msgs = self.run_prompt(d, "q")
                [start] = retry_starts(msgs)
                self.assertEqual(start["continuation"], {"mode": "resume", "keptChars": len(self.kept())})
                self.assert_whole_once(msgs, mode)
                post, get = srv.requests()
                self.assertIs(post["body"]["background"], True)
                self.assertIs(post["body"]["store"], True)
                # created, in_progress, item added, part added: 0..3, then the deltas.
                self.assertEqual(get["method"], "GET")
                self.assertEqual(get["path"], "/v1/responses/resp_fake000001?stream=true&starting_after=%d"
                                 % (3 + CUT_AFTER))
                # The whole response billed once, in the resumed stream's usage.
                final = assistant_ends(msgs)[1]
                self.assertEqual(final["usage"]["output"], 23)
                self.assertEqual(assistant_ends(msgs)[0]["usage"]["output"], 0)
                d.finish()

    def test_a_resumed_answer_keeps_the_thinking_streamed_before_the_cut_once(self):
        # The reasoning item streamed whole, then the text is cut: the
        # resumed stream goes on after both, so the final message holds the
        # thinking (with its reasoning item as signature, sent back on the
        # next turn) and the whole text, and no thinking is streamed twice.
        thinking = "Rivers erode their beds. Think about sediment."
        for mode in MODES:
            with self.subTest(mode=mode):
                d, srv = self.start([{"thinking": thinking, "text": ANSWER,
                                      "dropAfterChunks": len(thinking.split()) + CUT_AFTER}],
                                    sets={"rpc.messageUpdates": mode})
                msgs = self.run_prompt(d, "q")
                [start] = retry_starts(msgs)
                self.assertEqual(start["continuation"]["mode"], "resume")
                failed, final = assistant_ends(msgs)
                self.assertEqual([b["type"] for b in final["content"]], ["thinking", "text"])
                self.assertEqual(final["content"][0]["thinking"], thinking)
                self.assertIn("encrypted_content", final["content"][0]["thinkingSignature"])
                self.assertEqual(text_of(final), ANSWER)
                streamed = [m["assistantMessageEvent"]["type"] for m in msgs
                            if m.get("type") == "message_update"]
                self.assertEqual(streamed.count("thinking_start"), 1)
                ends = [m for m in msgs if m.get("type") == "agent_end"]
                self.assertEqual(ends[0]["messages"][-1]["content"][0]["type"], "thinking")
                d.finish()

    def test_an_expired_resume_id_replays_with_the_reason(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                d, srv = self.start([{"text": ANSWER, "dropAfterChunks": CUT_AFTER, "resumeExpired": True},
                                     {"text": ANSWER}], sets={"rpc.messageUpdates": mode})
                msgs = self.run_prompt(d, "q")
                first, second = retry_starts(msgs)
                self.assertEqual(first["continuation"]["mode"], "resume")
                self.assertEqual(second["continuation"], {"mode": "replay", "keptChars": 0,
                                                          "reason": "the resume id expired"})
                reqs = srv.requests()
                self.assertEqual([r["method"] for r in reqs], ["POST", "GET", "POST"])
                self.assertEqual(text_of(assistant_ends(msgs)[-1]), ANSWER)
                self.assertEqual("".join(attempt_deltas(msgs)[-1]), ANSWER)
                d.finish()

    def test_off_sends_no_background_and_replays(self):
        d, srv = self.start([{"text": ANSWER, "dropAfterChunks": CUT_AFTER}, {"text": ANSWER}],
                            sets={"retry.continueCutAnswers": "off"})
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("continuation", retry_starts(msgs)[0])
        reqs = srv.requests()
        self.assertNotIn("background", reqs[0]["body"])
        self.assertEqual([r["method"] for r in reqs], ["POST", "POST"])
        d.finish()

    def test_a_server_failed_response_is_not_resumed(self):
        d, srv = self.start([{"text": ANSWER, "streamError": {"code": "server_error"}, "errorAfterChunks": 3},
                             {"text": ANSWER}])
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("continuation", retry_starts(msgs)[0])
        self.assertEqual([r["method"] for r in srv.requests()], ["POST", "POST"])
        d.finish()

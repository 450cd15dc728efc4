"""Thinking as pi streams it: a model's reasoning shown as thinking_start /
thinking_delta / thinking_end and kept as a {type:"thinking"} block, in both
rpc.messageUpdates modes; sent back in the next request; and pi's thinking
levels (set_thinking_level, cycle_thinking_level) mapped to the request.

The real binary against tests/fixtures/fake_llm_server.py on 127.0.0.1
(its "thinking", "thinkingSignature" and "redactedThinking" step keys).
Every wait is bounded.
"""
import json
import os
import secrets
import sys
import tempfile
import unittest
from pathlib import Path

from harness import DaemonTestCase, is_response, role_of, run_cli, scaled, signature

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402
from jsonschema_lite import Validator  # noqa: E402

VALIDATOR = Validator(HERE.parent.parent / "protocol" / "schemas")
KEY_ENV = "RETRYD_E2E_KEY"
SECRET = "sk-e2e-thinking-" + secrets.token_hex(8)  # new each run: a shared fleet keeps what a server said of a key
ANTHROPIC = "anthropic-messages"
OPENAI = "openai-completions"
# A reasoning model (budget thinking) and one without reasoning.
MODELS = [{"id": "claude-think", "reasoning": True, "maxTokens": 64000}, "plain"]
THOUGHT = "Let me think"
SIG = "EqQBsig+/=="


def updates(msgs):
    return [m for m in msgs if m.get("type") == "message_update"]


def final_message(msgs):
    return [m["message"] for m in msgs
            if m.get("type") == "message_end" and role_of(m) == "assistant"][-1]


class ThinkingCase(DaemonTestCase):
    API = ANTHROPIC

    def start(self, plan, sets=None, models=None, args=(), settings_extra=None):
        srv = FakeServer(plan, max_seconds=120).start()
        self.addCleanup(srv.stop)
        cfg = {"api": self.API, "baseUrl": srv.url + "/v1", "apiKeyEnv": KEY_ENV,
               "models": models or MODELS}
        settings = {"providers": {"fake": cfg}}
        settings.update(settings_extra or {})
        all_sets = {"retry.baseDelayMs": 20}
        all_sets.update(sets or {})
        d = self.spawn(args=["--provider", "fake"] + list(args), settings=settings,
                       sets=all_sets, env={KEY_ENV: SECRET})
        return d, srv

    def assertValid(self, msgs):
        for m in msgs:
            schema = ("responses.schema.json" if m.get("type") == "response"
                      else "events.schema.json")
            self.assertEqual(VALIDATOR.errors(m, schema), [], json.dumps(m)[:300])

    def state(self, d):
        return d.request({"type": "get_state"})["data"]

    def command(self, d, cmd):
        """Sends cmd; returns (events before its response, the response)."""
        cmd = dict(cmd, id=d.next_id())
        d.send(cmd)
        got = d.collect_until(is_response(id=cmd["id"]), what=cmd["type"])
        return got[:-1], got[-1]


class AnthropicThinking(ThinkingCase):
    def test_thinking_streams_as_pi_events_with_the_partial_in_full_mode(self):
        d, srv = self.start([{"thinking": THOUGHT, "thinkingSignature": SIG,
                              "text": "hello world"}])
        msgs = self.run_prompt(d, "q")
        self.assertValid(msgs)
        sig = signature(msgs)
        i = sig.index("message_start:assistant")
        self.assertEqual(sig[i + 1:i + 11], [
            "update:thinking_start", "update:thinking_delta", "update:thinking_delta",
            "update:thinking_delta", "update:thinking_end", "update:text_start",
            "update:text_delta", "update:text_delta", "update:text_end",
            "message_end:assistant"])
        so_far = ""
        for m in updates(msgs):
            ame = m["assistantMessageEvent"]
            self.assertEqual(ame["partial"], m["message"])
            if ame["type"].startswith("thinking"):
                self.assertEqual(ame["contentIndex"], 0)
            else:
                self.assertEqual(ame["contentIndex"], 1)
            if ame["type"] == "thinking_delta":
                so_far += ame["delta"]
                self.assertEqual(m["message"]["content"][0],
                                 {"type": "thinking", "thinking": so_far})
            if ame["type"] == "thinking_end":
                self.assertEqual(ame["content"], THOUGHT)
                self.assertEqual(m["message"]["content"][0]["thinkingSignature"], SIG)
        self.assertEqual(so_far, THOUGHT)
        self.assertEqual(final_message(msgs)["content"], [
            {"type": "thinking", "thinking": THOUGHT, "thinkingSignature": SIG},
            {"type": "text", "text": "hello world"}])
        d.finish()

    def test_thinking_streams_without_partial_in_delta_mode(self):
        d, srv = self.start([{"thinking": THOUGHT, "thinkingSignature": SIG,
                              "text": "hello world"}], sets={"rpc.messageUpdates": "delta"})
        msgs = self.run_prompt(d, "q")
        self.assertValid(msgs)
        ames = [m["assistantMessageEvent"] for m in updates(msgs)]
        for m in updates(msgs):
            self.assertEqual(set(m), {"type", "assistantMessageEvent", "messageId"})
        self.assertEqual(ames[:5], [
            {"type": "thinking_start", "contentIndex": 0},
            {"type": "thinking_delta", "contentIndex": 0, "delta": "Let"},
            {"type": "thinking_delta", "contentIndex": 0, "delta": " me"},
            {"type": "thinking_delta", "contentIndex": 0, "delta": " think"},
            {"type": "thinking_end", "contentIndex": 0, "content": THOUGHT}])
        self.assertEqual(ames[5], {"type": "text_start", "contentIndex": 1})
        self.assertEqual(ames[-1], {"type": "text_end", "contentIndex": 1,
                                    "content": "hello world"})
        # The hand-written delta lines are the bytes jansson would write.
        raw = [line for line in d.raw_lines() if '"thinking_delta"' in line]
        self.assertEqual(raw[0], '{"type":"message_update","assistantMessageEvent":'
                                 '{"type":"thinking_delta","contentIndex":0,"delta":"Let"},'
                                 '"messageId":"msg-2"}')
        self.assertEqual(final_message(msgs)["content"][0],
                         {"type": "thinking", "thinking": THOUGHT, "thinkingSignature": SIG})
        d.finish()

    def test_signed_thinking_is_sent_back_and_the_level_sets_the_budget(self):
        d, srv = self.start([{"thinking": THOUGHT, "thinkingSignature": SIG, "text": "one"},
                             {"text": "two"}])
        self.run_prompt(d, "first")
        self.run_prompt(d, "second")
        first, second = [r["body"] for r in srv.wait_requests(2)]
        # medium (the default): pi's budget, and max_tokens room for it
        # (the model's 64000 capped at 32000, plus the budget).
        self.assertEqual(first["thinking"], {"type": "enabled", "budget_tokens": 8192,
                                             "display": "summarized"})
        self.assertEqual(first["max_tokens"], 32000 + 8192)
        self.assertEqual(second["messages"][1], {"role": "assistant", "content": [
            {"type": "thinking", "thinking": THOUGHT, "signature": SIG},
            {"type": "text", "text": "one"}]})
        d.finish()

    def test_redacted_thinking_is_kept_and_sent_back_as_its_data(self):
        d, srv = self.start([{"redactedThinking": "EmwKAhgBEgy", "text": "fine"},
                             {"text": "again"}])
        msgs = self.run_prompt(d, "q")
        self.assertValid(msgs)
        ames = [m["assistantMessageEvent"] for m in updates(msgs)]
        self.assertEqual([a["type"] for a in ames[:2]], ["thinking_start", "thinking_end"])
        self.assertEqual(ames[1]["content"], "[Reasoning redacted]")
        self.assertEqual(final_message(msgs)["content"][0], {
            "type": "thinking", "thinking": "[Reasoning redacted]",
            "thinkingSignature": "EmwKAhgBEgy", "redacted": True})
        self.run_prompt(d, "more")
        body = srv.wait_requests(2)[1]["body"]
        self.assertEqual(body["messages"][1]["content"][0],
                         {"type": "redacted_thinking", "data": "EmwKAhgBEgy"})
        d.finish()

    def test_set_and_cycle_thinking_level_change_the_request_as_pi_maps_them(self):
        d, srv = self.start([], settings_extra={})
        self.assertEqual(self.state(d)["thinkingLevel"], "medium")
        self.assertTrue(self.state(d)["model"]["reasoning"])
        before, resp = self.command(d, {"type": "set_thinking_level", "level": "high"})
        self.assertEqual(before, [{"type": "thinking_level_changed", "level": "high"}])
        self.assertEqual((resp["success"], "data" in resp), (True, False))
        self.assertValid(before + [resp])
        self.assertEqual(self.state(d)["thinkingLevel"], "high")
        # The same level again: nothing to announce.
        before, resp = self.command(d, {"type": "set_thinking_level", "level": "high"})
        self.assertEqual(before, [])
        self.run_prompt(d, "a")
        body = srv.wait_requests(1)[0]["body"]
        self.assertEqual(body["thinking"]["budget_tokens"], 16384)
        self.assertEqual(body["max_tokens"], 32000 + 16384)
        # high -> off: xhigh is skipped (the model's thinkingLevelMap does not name it)
        before, resp = self.command(d, {"type": "cycle_thinking_level"})
        self.assertEqual(resp["data"], {"level": "off"})
        self.assertEqual(before, [{"type": "thinking_level_changed", "level": "off"}])
        self.assertValid([resp])
        self.run_prompt(d, "b")
        self.assertEqual(srv.wait_requests(2)[1]["body"]["thinking"], {"type": "disabled"})
        _, resp = self.command(d, {"type": "cycle_thinking_level"})
        self.assertEqual(resp["data"], {"level": "minimal"})
        with open(d.settings_path, encoding="utf-8") as f:
            self.assertEqual(json.load(f)["defaultThinkingLevel"], "minimal")
        _, resp = self.command(d, {"type": "set_thinking_level", "level": "huge"})
        self.assertFalse(resp["success"])
        self.assertIn('"level" must be one of', resp["error"])
        d.finish()

    def test_a_model_without_reasoning_is_off_and_cycles_to_null(self):
        d, srv = self.start([], models=["plain", {"id": "claude-think", "reasoning": True}])
        self.assertEqual(self.state(d)["thinkingLevel"], "off")
        self.assertFalse(self.state(d)["model"]["reasoning"])
        before, resp = self.command(d, {"type": "cycle_thinking_level"})
        self.assertEqual((before, resp["success"], resp["data"]), ([], True, None))
        self.assertValid([resp])
        # Asking for a level the model cannot think at leaves it off.
        before, resp = self.command(d, {"type": "set_thinking_level", "level": "high"})
        self.assertEqual(before, [])
        self.run_prompt(d, "q")
        self.assertNotIn("thinking", srv.wait_requests(1)[0]["body"])
        # A thinking model starts from the setting (medium), as pi does.
        before, resp = self.command(d, {"type": "set_model", "provider": "fake",
                                        "modelId": "claude-think"})
        self.assertEqual(before, [{"type": "thinking_level_changed", "level": "medium"}])
        self.assertEqual(self.state(d)["thinkingLevel"], "medium")
        d.finish()

    def test_default_thinking_level_setting_is_the_start_level(self):
        d, srv = self.start([], settings_extra={"defaultThinkingLevel": "low"})
        self.assertEqual(self.state(d)["thinkingLevel"], "low")
        self.run_prompt(d, "q")
        self.assertEqual(srv.wait_requests(1)[0]["body"]["thinking"]["budget_tokens"], 2048)
        d.finish()

    def test_a_long_thinking_stream_is_activity_but_a_silent_stall_still_fires(self):
        idle = int(scaled(0.6) * 1000)
        words = " ".join("w%d" % i for i in range(8))
        d, srv = self.start([
            # 8 pieces 0.3 idle apart: longer than the idle timeout in all.
            {"thinking": words, "chunkDelayMs": idle * 3 // 10, "text": "done"},
            {"thinking": "a b c", "hangAfterChunks": 1},
            {"text": "recovered"}], sets={"retry.idleTimeoutMs": idle})
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("auto_retry_start", [m["type"] for m in msgs])
        self.assertEqual(final_message(msgs)["content"][0]["thinking"], words)
        msgs = self.run_prompt(d, "again")
        retry = [m for m in msgs if m["type"] == "auto_retry_start"]
        self.assertEqual(len(retry), 1)
        self.assertIn("stream stall", retry[0]["errorMessage"])
        failed = [m["message"] for m in msgs if m.get("type") == "message_end"
                  and role_of(m) == "assistant"][0]
        self.assertEqual(failed["content"][0]["thinking"], "a")
        self.assertEqual(final_message(msgs)["content"], [{"type": "text", "text": "recovered"}])
        d.finish()

    def test_thinking_is_in_get_messages_and_the_session_file_and_resumes(self):
        d, srv = self.start([{"thinking": THOUGHT, "thinkingSignature": SIG, "text": "hi"}],
                            args=["--session", "{tmp}/s.jsonl"])
        self.run_prompt(d, "q")
        self.command(d, {"type": "set_thinking_level", "level": "low"})
        got = d.request({"type": "get_messages"})["data"]["messages"]
        block = {"type": "thinking", "thinking": THOUGHT, "thinkingSignature": SIG}
        self.assertEqual(got[1]["content"][0], block)
        path = os.path.join(d.tmp, "s.jsonl")
        d.finish()
        with open(path, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
        for line in lines:
            self.assertEqual(VALIDATOR.errors(line, "session.schema.json"), [], line)
        self.assertEqual(lines[2]["message"]["content"][0], block)
        self.assertEqual((lines[3]["type"], lines[3]["thinkingLevel"]),
                         ("thinking_level_change", "low"))
        # A resumed session starts at the level its file last changed to.
        d2, srv2 = self.start([{"text": "again"}], args=["--resume", path],
                              settings_extra={"defaultThinkingLevel": "high"})
        self.assertEqual(self.state(d2)["thinkingLevel"], "low")
        self.run_prompt(d2, "q2")
        body = srv2.wait_requests(1)[0]["body"]
        self.assertEqual(body["messages"][1]["content"][0],
                         {"type": "thinking", "thinking": THOUGHT, "signature": SIG})
        d2.finish()


class ModelEntries(DaemonTestCase):
    def test_reasoning_that_is_not_a_boolean_is_refused_naming_the_key(self):
        cfg = {"api": ANTHROPIC, "baseUrl": "http://127.0.0.1:9/v1",
               "models": [{"id": "x", "reasoning": "yes"}]}
        with tempfile.TemporaryDirectory(prefix="retryd-e2e-thinking-") as tmp:
            path = os.path.join(tmp, "settings.json")
            with open(path, "w") as f:
                json.dump({"providers": {"bad": cfg}}, f)
            rc, out, err = run_cli(["--provider", "bad", "--settings", path])
        self.assertEqual(rc, 1, err)
        self.assertIn("providers.bad.models[0].reasoning must be true or false", err)


class OpenAIReasoning(ThinkingCase):
    API = OPENAI

    def test_reasoning_content_streams_as_thinking_and_is_not_sent_back(self):
        d, srv = self.start([{"thinking": "hmm ok", "text": "hi"}, {"text": "two"}])
        msgs = self.run_prompt(d, "q")
        self.assertValid(msgs)
        ames = [m["assistantMessageEvent"]["type"] for m in updates(msgs)]
        self.assertEqual(ames, ["thinking_start", "thinking_delta", "thinking_delta",
                                "thinking_end", "text_start", "text_delta", "text_end"])
        # pi keeps the field the reasoning came in as the block's signature.
        self.assertEqual(final_message(msgs)["content"], [
            {"type": "thinking", "thinking": "hmm ok", "thinkingSignature": "reasoning_content"},
            {"type": "text", "text": "hi"}])
        self.run_prompt(d, "again")
        body = srv.wait_requests(2)[1]["body"]
        self.assertEqual(body["messages"][1], {"role": "assistant",
                                               "content": [{"type": "text", "text": "hi"}]})
        d.finish()

    def test_the_thinking_level_reaches_the_request_as_reasoning_effort(self):
        d, srv = self.start([{"text": "one"}, {"text": "two"}])
        _, r = self.command(d, {"type": "set_thinking_level", "level": "high"})
        self.assertTrue(r["success"], r)
        self.run_prompt(d, "q")
        self.assertEqual(srv.wait_requests(1)[0]["body"].get("reasoning_effort"), "high")
        _, r = self.command(d, {"type": "set_thinking_level", "level": "off"})
        self.assertTrue(r["success"], r)
        self.run_prompt(d, "again")
        self.assertNotIn("reasoning_effort", srv.wait_requests(2)[1]["body"])
        d.finish()


if __name__ == "__main__":
    unittest.main()

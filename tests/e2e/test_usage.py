"""Usage as pi counts it, through the real binary, for each wire format and
an agent CLI: the final message_end, get_messages, get_session_stats and the
session file hold the counts pi's own provider code would report for the
same stream (pi-ai dist/providers: openai-completions.js parseChunkUsage,
openai-responses-shared.js, anthropic.js, google.js).

The fake LLM server sends the cache counts ("cachedTokens",
"cacheWriteTokens"); "inputTokens" is the wire's input count as each API
means it. The expected numbers are written out from pi's formulas.
"""
import json
import os
import sys
import tempfile

from harness import REPO_ROOT, DaemonTestCase, role_of
from jsonschema_lite import Validator

sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

VALIDATOR = Validator(os.path.join(REPO_ROOT, "protocol", "schemas"))
FAKE_AGENT = os.path.join(REPO_ROOT, "tests", "fixtures", "bin", "fake_agent")
KEY_ENV = "RETRYD_E2E_KEY"
COUNT_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def assistant_ends(msgs):
    return [m["message"] for m in msgs
            if m.get("type") == "message_end" and role_of(m) == "assistant"]


def counts(usage):
    return {k: usage[k] for k in COUNT_KEYS}


def usage(inp, out, cache_read, cache_write, total):
    return dict(zip(COUNT_KEYS, (inp, out, cache_read, cache_write, total)))


class UsageCase(DaemonTestCase):
    API = None
    PATH = "/v1"

    def start(self, plan):
        srv = FakeServer(plan, max_seconds=60).start()
        self.addCleanup(srv.stop)
        cfg = {"api": self.API, "baseUrl": srv.url + self.PATH, "apiKeyEnv": KEY_ENV,
               "models": [{"id": "m1", "reasoning": False}]}
        return self.spawn(args=["--provider", "fake", "--session", "{tmp}/session.jsonl"],
                          settings={"providers": {"fake": cfg}},
                          sets={"retry.baseDelayMs": 20}, env={KEY_ENV: "k-e2e"})

    def check_schemas(self, msgs):
        for m in msgs:
            schema = "responses.schema.json" if m.get("type") == "response" else "events.schema.json"
            self.assertEqual(VALIDATOR.errors(m, schema), [],
                             "%s does not match %s" % (json.dumps(m)[:300], schema))

    def prompt_usage(self, d):
        """One prompt; the final message's counts, checked against the schema."""
        msgs = self.run_prompt(d, "q")
        self.check_schemas(msgs)
        [final] = assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "stop", final)
        self.assertEqual(msgs[-1]["messages"][-1], final)  # agent_end
        return counts(final["usage"])

    def assertEverywhere(self, d, expected):
        """get_messages, the session file and get_session_stats agree with
        the message_end counts (expected: one per assistant message)."""
        r = d.request({"type": "get_messages"})
        self.check_schemas([r])
        got = [counts(m["usage"]) for m in r["data"]["messages"] if m["role"] == "assistant"]
        self.assertEqual(got, expected)
        r = d.request({"type": "get_session_stats"})
        self.check_schemas([r])
        # pi: each sum over the assistant messages; total = the four sums.
        sums = {k: sum(u[k] for u in expected) for k in COUNT_KEYS[:4]}
        sums["total"] = sum(sums.values())
        self.assertEqual({k: r["data"]["tokens"][k] for k in sums}, sums)
        with open(os.path.join(d.tmp, "session.jsonl"), encoding="utf-8") as f:
            entries = [json.loads(line) for line in f if line.strip()]
        saved = [counts(e["message"]["usage"]) for e in entries
                 if e.get("type") == "message" and e["message"].get("role") == "assistant"]
        self.assertEqual(saved, expected)


class OpenAICompletionsUsageTests(UsageCase):
    API = "openai-completions"

    def test_cached_and_cache_write_tokens_leave_the_input_as_pi_counts_them(self):
        # pi: cacheWrite = cache_write_tokens; cacheRead = cached_tokens -
        # cacheWrite (OpenRouter counts the writes in cached_tokens too);
        # input = prompt_tokens - cacheRead - cacheWrite; total = the four.
        d = self.start([{"text": "alpha beta", "inputTokens": 100, "outputTokens": 20,
                         "cachedTokens": 30, "cacheWriteTokens": 10},
                        {"text": "again", "inputTokens": 50, "outputTokens": 5,
                         "cachedTokens": 40}])
        first = self.prompt_usage(d)
        self.assertEqual(first, usage(70, 20, 20, 10, 120))
        second = self.prompt_usage(d)
        self.assertEqual(second, usage(10, 5, 40, 0, 55))
        self.assertEverywhere(d, [first, second])
        d.finish()


class AnthropicMessagesUsageTests(UsageCase):
    API = "anthropic-messages"

    def test_cache_read_and_creation_tokens_are_taken_as_pi_takes_them(self):
        # pi: input_tokens as is, cacheRead = cache_read_input_tokens,
        # cacheWrite = cache_creation_input_tokens, total = the four.
        d = self.start([{"text": "alpha beta", "inputTokens": 7, "outputTokens": 15,
                         "cachedTokens": 1000, "cacheWriteTokens": 300}])
        got = self.prompt_usage(d)
        self.assertEqual(got, usage(7, 15, 1000, 300, 1322))
        self.assertEverywhere(d, [got])
        d.finish()


class ResponsesUsageTests(UsageCase):
    API = "openai-responses"

    def test_cached_input_tokens_are_cache_read_and_the_total_is_the_reported_one(self):
        # pi: input = input_tokens - cached_tokens, cacheRead = cached_tokens,
        # output = output_tokens (reasoning included), total = total_tokens
        # (the fake server: input_tokens + output_tokens).
        d = self.start([{"text": "alpha beta", "inputTokens": 21, "outputTokens": 3,
                         "cachedTokens": 8, "reasoningTokens": 2}])
        got = self.prompt_usage(d)
        self.assertEqual(got, usage(13, 3, 8, 0, 24))
        self.assertEverywhere(d, [got])
        d.finish()


class GeminiUsageTests(UsageCase):
    API = "google-generative-ai"
    PATH = "/v1beta"

    def test_cached_content_is_cache_read_and_thoughts_are_output(self):
        # pi: input = promptTokenCount - cachedContentTokenCount, output =
        # candidatesTokenCount + thoughtsTokenCount, cacheRead = cached,
        # total = totalTokenCount (the fake server: prompt + candidates +
        # thoughts).
        d = self.start([{"text": "alpha beta", "inputTokens": 40, "outputTokens": 6,
                         "thoughtsTokens": 5, "cachedTokens": 10}])
        got = self.prompt_usage(d)
        self.assertEqual(got, usage(30, 11, 10, 0, 51))
        self.assertEverywhere(d, [got])
        d.finish()


class ClaudeCliUsageTests(UsageCase):
    def test_claude_code_result_cache_counts_are_kept(self):
        # Claude Code's result line: usage.input_tokens 8, output_tokens 43,
        # cache_read_input_tokens 12000, cache_creation_input_tokens 4995
        # (tests/fixtures/cli/claude-success.jsonl), counted as the Messages
        # API counts them.
        tmp = tempfile.mkdtemp(prefix="retryd-e2e-agent-")
        self.addCleanup(lambda: __import__("shutil").rmtree(tmp, ignore_errors=True))
        with open(os.path.join(tmp, "plan.json"), "w") as f:
            json.dump([{"fixture": "claude-success.jsonl"}], f)
        d = self.spawn(args=["--provider", "claude", "--session", "{tmp}/session.jsonl"],
                       sets={"providers.claude.command": FAKE_AGENT, "retry.baseDelayMs": 10},
                       env={"FAKE_AGENT_DIR": tmp})
        got = self.prompt_usage(d)
        self.assertEqual(got, usage(8, 43, 12000, 4995, 17046))
        self.assertEverywhere(d, [got])
        d.finish()

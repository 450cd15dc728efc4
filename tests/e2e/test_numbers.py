"""Numbers from outside, through the binary: token counts, delays and waits
that a hostile HTTP server, agent CLI or sim plan sends are validated and
saturated (src/base/number.c; protocol/README.md section 7).

2^63-1 input and output tokens used to overflow the sum (totalTokens -2;
undefined behaviour that kills the SANITIZE=1 build before agent_end), and
negative counts were relayed although the schema says >= 0. Now every count
is in [0, 2^53-1] and so is every sum.
"""
import json
import os
import sys
import tempfile
import unittest

from harness import REPO_ROOT, DaemonTestCase, is_response, role_of
from jsonschema_lite import Validator

sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

NUMBER_MAX = 2 ** 53 - 1
HINT_MAX_MS = 10 ** 15
INT64_MAX = 2 ** 63 - 1
# HINT_MAX_MS as the usage-limit text writes it.
CLAMPED_WAIT = "(usage limit: resets in 11574074d1h)"
VALIDATOR = Validator(os.path.join(REPO_ROOT, "protocol", "schemas"))
FAKE_AGENT = os.path.join(REPO_ROOT, "tests", "fixtures", "bin", "fake_agent")
KEY_ENV = "RETRYD_E2E_KEY"


def assistant_ends(msgs):
    return [m["message"] for m in msgs
            if m.get("type") == "message_end" and role_of(m) == "assistant"]


class NumbersCase(DaemonTestCase):
    def check_schemas(self, msgs):
        for m in msgs:
            schema = "responses.schema.json" if m.get("type") == "response" else "events.schema.json"
            self.assertEqual(VALIDATOR.errors(m, schema), [],
                             "%s does not match %s" % (json.dumps(m)[:300], schema))

    def stats_tokens(self, d):
        r = d.request({"type": "get_session_stats"})
        self.assertTrue(r["success"], r)
        self.check_schemas([r])
        return r["data"]["tokens"]

    def assertUsage(self, message, inp, out, total):
        usage = message["usage"]
        self.assertEqual((usage["input"], usage["output"], usage["totalTokens"]),
                         (inp, out, total), usage)


class HttpNumbers:
    """Per wire format; subclasses set API."""

    API = None

    def start(self, plan):
        srv = FakeServer(plan, max_seconds=60).start()
        self.addCleanup(srv.stop)
        cfg = {"api": self.API, "baseUrl": srv.url + "/v1", "apiKeyEnv": KEY_ENV, "models": ["m1"]}
        return self.spawn(args=["--provider", "fake", "--no-session"],
                          settings={"providers": {"fake": cfg}},
                          sets={"retry.baseDelayMs": 20}, env={KEY_ENV: "k-e2e"})

    def test_huge_token_counts_saturate_in_the_message_and_the_stats(self):
        huge = self.HUGE
        d = self.start([{"text": "big", "inputTokens": huge, "outputTokens": huge},
                        {"text": "again", "inputTokens": huge, "outputTokens": 1}])
        msgs = self.run_prompt(d, "q")
        self.check_schemas(msgs)
        [final] = assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "stop")
        self.assertUsage(final, NUMBER_MAX, NUMBER_MAX, NUMBER_MAX)
        msgs = self.run_prompt(d, "q")
        self.check_schemas(msgs)
        self.assertUsage(assistant_ends(msgs)[0], NUMBER_MAX, 1, NUMBER_MAX)
        tokens = self.stats_tokens(d)
        self.assertEqual((tokens["input"], tokens["output"], tokens["total"]),
                         (NUMBER_MAX, NUMBER_MAX, NUMBER_MAX))
        d.finish()

    def test_negative_token_counts_are_not_relayed(self):
        # (total_tokens, the sum, must still fit int64 for OpenAI.)
        d = self.start([{"text": "neg", "inputTokens": -1, "outputTokens": -2 ** 62}])
        msgs = self.run_prompt(d, "q")
        self.check_schemas(msgs)
        [final] = assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "stop")
        # A rejected count is ignored: what an earlier report said stays.
        out = self.EARLIER_OUTPUT
        self.assertUsage(final, 0, out, out)
        tokens = self.stats_tokens(d)
        self.assertEqual((tokens["input"], tokens["output"], tokens["total"]), (0, out, out))
        d.finish()

    def test_a_retry_after_beyond_int64_is_read_as_a_bounded_wait(self):
        # The hint parser clamps at HINT_MAX_MS (10^15 ms): a rate limit
        # that long is a usage limit, and its text names the clamped wait.
        d = self.start([{"status": 429, "message": "busy",
                         "headers": {"retry-after": "99999999999999999999999"}}])
        msgs = self.run_prompt(d, "q")
        self.check_schemas(msgs)
        [final] = assistant_ends(msgs)
        self.assertEqual(final["errorMessage"], "429 busy " + CLAMPED_WAIT)
        d.finish()


class OpenAiNumbers(HttpNumbers, NumbersCase):
    API = "openai-completions"
    # The fake server also sends total_tokens = input + output, which must fit
    # int64 for the chunk to be JSON jansson reads at all.
    HUGE = 2 ** 62 - 1
    EARLIER_OUTPUT = 0


class AnthropicNumbers(HttpNumbers, NumbersCase):
    API = "anthropic-messages"
    HUGE = INT64_MAX
    # message_start reports output_tokens 1 before message_delta's count.
    EARLIER_OUTPUT = 1


class CliNumbers(NumbersCase):
    """Claude-shaped lines from tests/fixtures/cli, replayed by the fake CLI."""

    def start(self, fixture):
        d = tempfile.mkdtemp(prefix="retryd-e2e-agent-")
        self.addCleanup(lambda: __import__("shutil").rmtree(d, ignore_errors=True))
        with open(os.path.join(d, "plan.json"), "w") as f:
            json.dump([{"fixture": fixture}], f)
        return self.spawn(args=["--provider", "claude", "--no-session"],
                          sets={"providers.claude.command": FAKE_AGENT, "retry.baseDelayMs": 10},
                          env={"FAKE_AGENT_DIR": d})

    def test_cli_huge_usage_and_retry_numbers_saturate(self):
        d = self.start("claude-hostile-numbers.jsonl")
        msgs = self.run_prompt(d, "count")
        self.check_schemas(msgs)
        [notice] = [m for m in msgs if m.get("type") == "provider_retry"]
        self.assertNotIn("attempt", notice)  # it was -1
        self.assertEqual((notice["maxAttempts"], notice["delayMs"]), (NUMBER_MAX, NUMBER_MAX))
        self.assertEqual(notice["errorMessage"], "overloaded")  # status -529 is none
        [final] = assistant_ends(msgs)
        self.assertEqual(final["stopReason"], "stop")
        self.assertUsage(final, NUMBER_MAX, NUMBER_MAX, NUMBER_MAX)
        self.assertEqual(msgs[-1]["type"], "agent_end")
        tokens = self.stats_tokens(d)
        self.assertEqual((tokens["input"], tokens["output"], tokens["total"]),
                         (NUMBER_MAX, NUMBER_MAX, NUMBER_MAX))
        d.finish()

    def test_cli_negative_and_fractional_numbers_are_dropped(self):
        d = self.start("claude-negative-usage.jsonl")
        msgs = self.run_prompt(d, "count")
        self.check_schemas(msgs)
        [notice] = [m for m in msgs if m.get("type") == "provider_retry"]
        for key in ("attempt", "maxAttempts", "delayMs"):
            self.assertNotIn(key, notice)
        [final] = assistant_ends(msgs)
        self.assertUsage(final, 0, 0, 0)
        tokens = self.stats_tokens(d)
        self.assertEqual((tokens["input"], tokens["output"], tokens["total"]), (0, 0, 0))
        d.finish()


class SimNumbers(NumbersCase):
    def test_a_sim_retry_after_of_int64_max_is_capped_like_a_servers(self):
        # now + 2^63-1 overflowed when the usage limit marked the credential.
        d = self.spawn(plan=[{"error": "usage limit reached", "retryAfterMs": INT64_MAX},
                             {"text": "ok"}])
        msgs = self.run_prompt(d, "q")
        self.check_schemas(msgs)
        [final] = assistant_ends(msgs)
        self.assertEqual(final["errorMessage"],
                         "usage limit reached " + CLAMPED_WAIT)
        d.finish()


if __name__ == "__main__":
    unittest.main()

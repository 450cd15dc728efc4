"""Waiting out a usage limit (retry.usageLimitWait "wait"): the real binary
against the fake LLM server, whose 429 usage-limit body states a reset a
second or two away. The park, its heartbeats, the one probe at the reset,
a late reset, abort_retry, and the setting off (as before).
"""
import json
import os
import re
import secrets
import shutil
import signal
import sys
import tempfile
import time

from harness import DaemonTestCase, is_response, is_type, role_of, scaled, text_of, timing_sensitive
from jsonschema_lite import Validator

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

PROVIDER = "fake"
KEY_ENV = "RETRYD_E2E_KEY"
SECRET = "sk-e2e-" + secrets.token_hex(16)  # new each run: a shared fleet keeps what a server said of a key
SESSION_SCHEMA = Validator(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "protocol", "schemas"))
WAIT = {"retry.usageLimitWait": "wait", "retry.usageWaitHeartbeatMs": 1000}


def limit(reset_s=None):
    """The API's 429 for a spent plan (Codex's shape), its reset in the body."""
    err = {"type": "usage_limit_reached", "message": "The usage limit has been reached",
           "code": "usage_limit_reached"}
    if reset_s is not None:
        err["resets_in_seconds"] = reset_s
    return {"status": 429, "body": {"error": err}}


def events(msgs, type_):
    return [m for m in msgs if m.get("type") == type_]


def answers(msgs):
    return [m["message"] for m in msgs
            if m.get("type") == "message_end" and role_of(m) == "assistant"]


class UsageWaitCase(DaemonTestCase):
    def start(self, plan, sets=None, args=(), session=False, srv=None):
        if srv is None:
            srv = FakeServer(plan, max_seconds=120).start()
            self.addCleanup(srv.stop)
        cfg = {"api": "openai-completions", "baseUrl": srv.url + "/v1", "apiKeyEnv": KEY_ENV,
               "models": ["m1"]}
        argv = ["--provider", PROVIDER] + list(args)
        if session:
            argv += ["--session", "{tmp}/session.jsonl"]
        d = self.spawn(args=argv, settings={"providers": {PROVIDER: cfg}}, sets=sets or {},
                       env={KEY_ENV: SECRET})
        return d, srv

    @timing_sensitive("measures when requests and events come")
    def test_a_reset_in_the_body_parks_beats_and_one_probe_at_the_reset_completes(self):
        d, srv = self.start([limit(2), {"text": "after the reset"}], sets=WAIT)
        d.send({"type": "prompt", "id": "p", "message": "go on"})
        start = d.wait_for(is_type("auto_retry_start"), what="the park")
        self.assertEqual((start["reason"], start["resetSource"], start["errorClass"]),
                         ("usage-reset", "body", "usage_limit"))
        self.assertEqual(start["delayMs"], 3000)
        self.assertRegex(start["resetAt"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        parked_at = time.monotonic()
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertTrue(state["isRetrying"])
        self.assertEqual(state["usageReset"]["resetAt"], start["resetAt"])
        self.assertEqual(state["usageReset"]["resetSource"], "body")
        self.assertLessEqual(state["usageReset"]["delayMs"], 3000)
        msgs = d.collect_until(is_type("agent_end"), timeout=15, what="agent_end")
        woke = time.monotonic() - parked_at
        beats = events(msgs, "usage_wait")
        self.assertGreaterEqual(len(beats), 2, [m.get("type") for m in msgs])
        self.assertTrue(all(b["resetAt"] == start["resetAt"] for b in beats))
        self.assertEqual(sorted([b["remainingMs"] for b in beats], reverse=True),
                         [b["remainingMs"] for b in beats])
        # The probe went at the reset, not before, and it was the one request.
        self.assertGreater(woke, 2.5)
        self.assertEqual(len(srv.requests()), 2)
        self.assertEqual(text_of(answers(msgs)[-1]), "after the reset")
        end = events(msgs, "auto_retry_end")
        self.assertEqual([(e["success"], e["attempt"]) for e in end], [(True, 1)])
        self.assertNotIn("usageReset", d.request({"type": "get_state"})["data"])
        d.finish()

    @timing_sensitive("measures when the probe goes")
    def test_a_reset_in_a_response_header_parks_with_source_header_until_it(self):
        # The body says only that the plan is spent; the reset is in the
        # response's Retry-After, as OpenAI-compatible gateways send it.
        spent = dict(limit(), headers={"retry-after": "2"})
        d, srv = self.start([spent, {"text": "after the reset"}], sets=WAIT)
        d.send({"type": "prompt", "id": "p", "message": "go on"})
        start = d.wait_for(is_type("auto_retry_start"), what="the park")
        parked_at = time.monotonic()
        self.assertEqual((start["reason"], start["resetSource"], start["errorClass"]),
                         ("usage-reset", "header", "usage_limit"))
        self.assertGreaterEqual(start["delayMs"], 2000)
        self.assertLessEqual(start["delayMs"], 3000)
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertEqual(state["usageReset"]["resetSource"], "header")
        msgs = d.collect_until(is_type("agent_end"), timeout=15, what="agent_end")
        self.assertGreater(time.monotonic() - parked_at, 1.5)
        self.assertEqual(len(srv.requests()), 2)
        self.assertEqual(text_of(answers(msgs)[-1]), "after the reset")
        d.finish()

    def test_a_late_reset_parks_again_with_the_new_reset(self):
        d, srv = self.start([limit(1), limit(1), {"text": "ok"}], sets=WAIT)
        msgs = self.run_prompt(d, "go on", timeout=20)
        starts = events(msgs, "auto_retry_start")
        self.assertEqual([(s["reason"], s["delayMs"], s["attempt"]) for s in starts],
                         [("usage-reset", 2000, 1), ("usage-reset", 2000, 1)])
        self.assertEqual(len(srv.requests()), 3)
        self.assertEqual(text_of(answers(msgs)[-1]), "ok")
        d.finish()

    @timing_sensitive("measures when requests and events come")
    def test_abort_retry_ends_a_six_hour_park_at_once(self):
        d, srv = self.start([limit(6 * 3600), {"text": "never"}],
                            sets=dict(WAIT, **{"retry.maxUsageWaitMs": 7 * 3600 * 1000}))
        d.send({"type": "prompt", "id": "p", "message": "go on"})
        start = d.wait_for(is_type("auto_retry_start"), what="the park")
        self.assertEqual(start["delayMs"], 6 * 3600 * 1000 + 1000)
        sent = time.monotonic()
        d.send({"type": "abort_retry", "id": "a"})
        end = d.wait_for(is_type("auto_retry_end"), what="auto_retry_end")
        took = time.monotonic() - sent
        self.assertEqual((end["success"], end["finalError"]), (False, "Retry cancelled"))
        d.wait_for(is_type("agent_end"))
        d.wait_for(is_response("abort_retry", "a"))
        # A pipe round trip; the daemon's own part is a timer stopped.
        self.assertLess(took, scaled(0.5))
        self.assertEqual(len(srv.requests()), 1)
        d.finish()

    def test_a_reset_past_the_maximum_ends_the_prompt_saying_so(self):
        d, srv = self.start([limit(3 * 3600)], sets=dict(WAIT, **{"retry.maxUsageWaitMs": 3600000}))
        msgs = self.run_prompt(d, "go on")
        self.assertEqual(events(msgs, "auto_retry_start"), [])
        err = answers(msgs)[-1]["errorMessage"]
        self.assertTrue(err.endswith("(usage limit: resets in 3h, past retry.maxUsageWaitMs (1h))"),
                        err)
        self.assertEqual(len(srv.requests()), 1)
        d.finish()

    def test_with_the_setting_off_a_usage_limit_ends_the_prompt_as_before(self):
        d, srv = self.start([limit(2), {"text": "never"}])
        msgs = self.run_prompt(d, "go on")
        self.assertEqual(events(msgs, "auto_retry_start"), [])
        self.assertEqual(events(msgs, "usage_wait"), [])
        err = answers(msgs)[-1]["errorMessage"]
        self.assertTrue(err.endswith("(usage limit: resets in 2s)"), err)
        self.assertEqual(len(srv.requests()), 1)
        d.finish()

    def test_a_prompt_of_its_own_turns_the_wait_on(self):
        d, srv = self.start([limit(1), {"text": "ok"}])
        msgs = self.run_prompt(d, "go on", retry={"usageLimitWait": "wait"}, timeout=15)
        self.assertEqual([s["reason"] for s in events(msgs, "auto_retry_start")], ["usage-reset"])
        self.assertEqual(text_of(answers(msgs)[-1]), "ok")
        bad = d.request({"type": "prompt", "message": "x", "retry": {"usageLimitWait": "later"}})
        self.assertFalse(bad["success"])
        self.assertIn("retry.usageLimitWait", bad["error"])
        d.finish()

    def file_lines(self, path):
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    @timing_sensitive("measures when requests and events come")
    def test_killed_while_parked_continue_waits_the_rest_and_sends_no_request_twice(self):
        d, srv = self.start([limit(4), {"text": "after the restart"}], sets=WAIT,
                            args=["--session-dir", "{tmp}/sessions"])
        d.send({"type": "prompt", "id": "p", "message": "go on"})
        start = d.wait_for(is_type("auto_retry_start"), what="the park")
        self.assertEqual(start["reason"], "usage-reset")
        sdir = os.path.join(d.tmp, "sessions")
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(5)
        killed_at = time.monotonic()
        [name] = os.listdir(sdir)
        lines = self.file_lines(os.path.join(sdir, name))
        self.assertEqual(lines[-1]["type"], "park")
        self.assertEqual(lines[-1]["resetAt"], start["resetAt"])
        for line in lines:
            SESSION_SCHEMA.validate(line, "session.schema.json")
        self.assertEqual(len(srv.requests()), 1)
        # Same settings dir and session dir; the server's plan goes on.
        d2 = self.spawn(args=["--provider", PROVIDER, "--session-dir", sdir, "--continue"],
                        settings={"providers": {PROVIDER: {
                            "api": "openai-completions", "baseUrl": srv.url + "/v1",
                            "apiKeyEnv": KEY_ENV, "models": ["m1"]}}},
                        sets={"retry.usageWaitHeartbeatMs": 1000}, env={KEY_ENV: SECRET})
        msgs = d2.collect_until(is_type("agent_end"), timeout=15, what="agent_end")
        woke = time.monotonic() - killed_at
        types = [m["type"] for m in msgs]
        self.assertEqual(types[0], "agent_start")
        resumed = [m for m in msgs if m["type"] == "auto_retry_start"]
        self.assertEqual([(r["reason"], r["resetAt"]) for r in resumed],
                         [("usage-reset", start["resetAt"])])
        self.assertLessEqual(resumed[0]["delayMs"], 5000)
        # The rest of the wait, then one request: the parked prompt's.
        self.assertGreater(woke, 2.0)
        reqs = srv.requests()
        self.assertEqual(len(reqs), 2)
        self.assertEqual([m["role"] for m in reqs[1]["body"]["messages"]][-1], "user")
        self.assertEqual(text_of(answers(msgs)[-1]), "after the restart")
        self.assertEqual([(e["success"]) for e in events(msgs, "auto_retry_end")], [True])
        d2.finish()
        lines = self.file_lines(os.path.join(sdir, name))
        self.assertEqual(lines[-1]["type"], "message")
        self.assertEqual(lines[-1]["message"]["role"], "assistant")

    def test_continue_after_the_reset_has_passed_probes_at_once(self):
        d, srv = self.start([limit(1), {"text": "late but fine"}], sets=WAIT,
                            args=["--session-dir", "{tmp}/sessions"])
        d.send({"type": "prompt", "id": "p", "message": "go on"})
        d.wait_for(is_type("auto_retry_start"), what="the park")
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(5)
        time.sleep(2.5)
        sdir = os.path.join(d.tmp, "sessions")
        d2 = self.spawn(args=["--provider", PROVIDER, "--session-dir", sdir, "--continue"],
                        settings={"providers": {PROVIDER: {
                            "api": "openai-completions", "baseUrl": srv.url + "/v1",
                            "apiKeyEnv": KEY_ENV, "models": ["m1"]}}},
                        env={KEY_ENV: SECRET})
        msgs = d2.collect_until(is_type("agent_end"), timeout=5, what="agent_end")
        self.assertEqual([s["delayMs"] for s in events(msgs, "auto_retry_start")], [0])
        self.assertEqual(text_of(answers(msgs)[-1]), "late but fine")
        self.assertEqual(len(srv.requests()), 2)
        d2.finish()

    def test_abort_retry_of_a_park_is_not_resumed(self):
        d, srv = self.start([limit(60), {"text": "never"}], sets=WAIT,
                            args=["--session-dir", "{tmp}/sessions"])
        d.send({"type": "prompt", "id": "p", "message": "go on"})
        d.wait_for(is_type("auto_retry_start"), what="the park")
        d.request({"type": "abort_retry", "id": "a"})
        d.finish()
        sdir = os.path.join(d.tmp, "sessions")
        [name] = os.listdir(sdir)
        self.assertEqual(self.file_lines(os.path.join(sdir, name))[-1]["type"], "park_end")
        d2 = self.spawn(args=["--provider", PROVIDER, "--session-dir", sdir, "--continue"],
                        settings={"providers": {PROVIDER: {
                            "api": "openai-completions", "baseUrl": srv.url + "/v1",
                            "apiKeyEnv": KEY_ENV, "models": ["m1"]}}},
                        env={KEY_ENV: SECRET})
        self.assertFalse(d2.request({"type": "get_state"})["data"]["isStreaming"])
        d2.finish()
        self.assertEqual(len(srv.requests()), 1)

    def test_a_sigterm_while_parked_leaves_the_park_for_continue(self):
        d, srv = self.start([limit(60)], sets=WAIT, args=["--session-dir", "{tmp}/sessions"])
        d.send({"type": "prompt", "id": "p", "message": "go on"})
        d.wait_for(is_type("auto_retry_start"), what="the park")
        d.proc.send_signal(signal.SIGTERM)
        # The chain still ends for this client, as on every shutdown.
        d.wait_for(is_type("auto_retry_end"), what="auto_retry_end")
        self.assertEqual(d.wait_exit(), 0)
        sdir = os.path.join(d.tmp, "sessions")
        [name] = os.listdir(sdir)
        self.assertEqual(self.file_lines(os.path.join(sdir, name))[-1]["type"], "park")

    def continue_daemon(self, srv, sdir):
        return self.spawn(args=["--provider", PROVIDER, "--session-dir", sdir, "--continue"],
                          settings={"providers": {PROVIDER: {
                              "api": "openai-completions", "baseUrl": srv.url + "/v1",
                              "apiKeyEnv": KEY_ENV, "models": ["m1"]}}},
                          env={KEY_ENV: SECRET})

    def test_stdin_closed_while_parked_exits_at_once_keeping_the_park_for_continue(self):
        d, srv = self.start([limit(3600)], sets=WAIT, args=["--session-dir", "{tmp}/sessions"])
        d.send({"type": "prompt", "id": "p", "message": "go on"})
        d.wait_for(is_type("auto_retry_start"), what="the park")
        d.close_stdin()
        self.assertEqual(d.wait_exit(5), 0)
        self.assertIn("the park is kept for --continue", d.stderr_text())
        sdir = os.path.join(d.tmp, "sessions")
        [name] = os.listdir(sdir)
        self.assertEqual(self.file_lines(os.path.join(sdir, name))[-1]["type"], "park")

    def test_a_sigterm_during_the_probe_keeps_the_park_and_continue_probes_at_once(self):
        d, srv = self.start([limit(1), {"hangBeforeHeaders": True}, {"text": "probed again"}],
                            sets=WAIT, args=["--session-dir", "{tmp}/sessions"])
        d.send({"type": "prompt", "id": "p", "message": "go on"})
        d.wait_for(is_type("auto_retry_start"), what="the park")
        srv.wait_requests(2, outcome=False)
        d.proc.send_signal(signal.SIGTERM)
        self.assertEqual(d.wait_exit(), 0)
        sdir = os.path.join(d.tmp, "sessions")
        [name] = os.listdir(sdir)
        lines = self.file_lines(os.path.join(sdir, name))
        self.assertEqual(lines[-1]["type"], "park")
        self.assertLessEqual(lines[-1]["resetAtMs"], time.time() * 1000)
        for line in lines:
            SESSION_SCHEMA.validate(line, "session.schema.json")
        d2 = self.continue_daemon(srv, sdir)
        msgs = d2.collect_until(is_type("agent_end"), timeout=10, what="agent_end")
        self.assertEqual([s["delayMs"] for s in events(msgs, "auto_retry_start")], [0])
        self.assertEqual(text_of(answers(msgs)[-1]), "probed again")
        d2.finish()

    def test_a_park_edited_past_the_maximum_is_not_waited_on_continue(self):
        d, srv = self.start([limit(60), {"text": "never"}], sets=WAIT,
                            args=["--session-dir", "{tmp}/sessions"])
        d.send({"type": "prompt", "id": "p", "message": "go on"})
        d.wait_for(is_type("auto_retry_start"), what="the park")
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(5)
        sdir = os.path.join(d.tmp, "sessions")
        [name] = os.listdir(sdir)
        path = os.path.join(sdir, name)
        lines = self.file_lines(path)
        lines[-1]["resetAtMs"] += 3 * 365 * 86400000
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(line) + "\n" for line in lines))
        d2 = self.continue_daemon(srv, sdir)
        msgs = d2.collect_until(is_type("agent_end"), timeout=5, what="agent_end")
        [end] = events(msgs, "auto_retry_end")
        self.assertFalse(end["success"])
        self.assertIn("past retry.maxUsageWaitMs (6h)", end["finalError"])
        self.assertEqual(events(msgs, "auto_retry_start"), [])
        d2.finish()
        self.assertEqual(len(srv.requests()), 1)
        self.assertEqual(self.file_lines(path)[-1]["type"], "park_end")


from test_cli import CONTINUE, CliCase  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "cli")


def fixture_lines(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class CliUsageWaitTests(CliCase):
    """An agent CLI's usage-limit line parks the prompt; the same CLI session
    is resumed after the reset."""

    def claude_limit(self, text):
        init, _, result = fixture_lines("claude-2.1.332-rate-limit.jsonl")
        result = dict(result, result=text, api_error_status=None)
        result.pop("api_error_status")
        return init, result

    def test_claude_codes_limit_line_parks_and_resumes_its_session_after_the_reset(self):
        reset = int(time.time()) + 2
        init, result = self.claude_limit("Claude AI usage limit reached|%d" % reset)
        d = self.start("claude", [{"lines": [init, result], "exit": 1},
                                  {"fixture": "claude-success.jsonl"}], sets=WAIT)
        msgs = self.prompt(d, "Fix the tests", timeout=15)
        [start] = self.of_type(msgs, "auto_retry_start")
        self.assertEqual((start["reason"], start["errorClass"], start["resetSource"]),
                         ("usage-reset", "usage_limit", "text"))
        self.assertLessEqual(start["delayMs"], 3000 + 1000)
        self.assertGreaterEqual(len(self.of_type(msgs, "usage_wait")), 1)
        first, second = self.calls()
        # The same session, told to go on.
        self.assertIn("--resume", second["argv"])
        self.assertIn(init["session_id"], second["argv"])
        self.assertIn(CONTINUE, second["argv"] + [second.get("stdin", "")])
        self.assertEqual(self.assistant_ends(msgs)[-1]["stopReason"], "stop")
        d.finish()

    def test_codexs_usage_limit_with_try_again_in_parks_and_resumes_its_thread(self):
        text = ("You\u2019ve hit your usage limit. Upgrade to Pro or try again in 2 seconds.")
        lines = [{"type": "thread.started", "thread_id": "019e49d4-05e3-7111-9bef-5f4f48c36e88"},
                 {"type": "turn.started"}, {"type": "error", "message": text},
                 {"type": "turn.failed", "error": {"message": text}}]
        d = self.start("codex", [{"lines": lines, "exit": 1}, {"fixture": "codex-success.jsonl"}],
                       sets=WAIT)
        msgs = self.prompt(d, "Fix the tests", timeout=15)
        [start] = self.of_type(msgs, "auto_retry_start")
        self.assertEqual((start["reason"], start["errorClass"]), ("usage-reset", "usage_limit"))
        self.assertLessEqual(start["delayMs"], 3000)
        first, second = self.calls()
        self.assertIn("resume", second["argv"])
        self.assertIn("019e49d4-05e3-7111-9bef-5f4f48c36e88", second["argv"])
        self.assertEqual(self.assistant_ends(msgs)[-1]["stopReason"], "stop")
        d.finish()

    def test_gemini_clis_daily_quota_parks_until_midnight_pacific_and_resumes_its_session(self):
        # Midnight Pacific brought to a few seconds from now: the daemon
        # reads America/Los_Angeles from TZDIR, here a zone file whose one
        # offset puts local midnight 6 s ahead.
        import struct
        now = int(time.time())
        off = -(now + 6) % 86400
        off = off - 86400 if off > 43200 else off
        zdir = tempfile.mkdtemp(prefix="retryd-e2e-zoneinfo-")
        self.addCleanup(shutil.rmtree, zdir, True)
        os.makedirs(os.path.join(zdir, "America"))
        with open(os.path.join(zdir, "America", "Los_Angeles"), "wb") as f:
            f.write(struct.pack(">4sc15x6I", b"TZif", b"\0", 0, 0, 0, 0, 1, 4) +
                    struct.pack(">iBB", off, 0, 0) + b"TST\0")
        d = self.start("gemini", [{"fixture": "gemini-0.61.0-daily-quota.jsonl", "exit": 1},
                                  {"fixture": "gemini-success.jsonl"}],
                       sets=WAIT, env={"TZDIR": zdir})
        msgs = self.prompt(d, "Fix the tests", timeout=20)
        [start] = self.of_type(msgs, "auto_retry_start")
        self.assertEqual((start["reason"], start["resetSource"]), ("usage-reset", "text"))
        import calendar
        reset = calendar.timegm(time.strptime(start["resetAt"], "%Y-%m-%dT%H:%M:%SZ"))
        self.assertLessEqual(abs(reset - (now + 6)), 1, start["resetAt"])
        first, second = self.calls()
        # The same Gemini session, told to go on.
        self.assertIn("--resume", second["argv"])
        self.assertIn("af62a29e-9d99-4205-9ad1-392d3adbbe5a", second["argv"])
        self.assertEqual(self.assistant_ends(msgs)[-1]["stopReason"], "stop")
        [end] = self.of_type(msgs, "auto_retry_end")
        self.assertTrue(end["success"])
        d.finish()

    def test_gemini_clis_daily_quota_parks_until_midnight_pacific_and_abort_retry_ends_it(self):
        # Gemini CLI 0.61.0's own words for a spent daily quota, which state
        # no time: Google's daily quotas reset at midnight Pacific time.
        import datetime
        import zoneinfo
        d = self.start("gemini", [{"fixture": "gemini-0.61.0-daily-quota.jsonl", "exit": 1},
                                  {"fixture": "gemini-success.jsonl"}],
                       sets=dict(WAIT, **{"retry.maxUsageWaitMs": 25 * 3600 * 1000}))
        d.send({"type": "prompt", "id": "p", "message": "Fix the tests"})
        start = d.wait_for(is_type("auto_retry_start"), what="the park")
        self.assertEqual((start["reason"], start["errorClass"], start["resetSource"]),
                         ("usage-reset", "usage_limit", "text"))
        try:
            pacific = zoneinfo.ZoneInfo("America/Los_Angeles")
        except zoneinfo.ZoneInfoNotFoundError:
            self.skipTest("no zoneinfo for America/Los_Angeles here")
        now = datetime.datetime.now(pacific)
        midnight = (now + datetime.timedelta(days=1)).replace(hour=0, minute=0, second=0,
                                                               microsecond=0)
        reset = datetime.datetime.strptime(start["resetAt"], "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc)
        self.assertLessEqual(abs((reset - midnight).total_seconds()), 2, start["resetAt"])
        state = d.request({"type": "get_state", "id": "s"})["data"]
        self.assertEqual(state["usageReset"]["resetAt"], start["resetAt"])
        d.send({"type": "abort_retry", "id": "a"})
        end = d.wait_for(is_type("auto_retry_end"), what="auto_retry_end")
        self.assertEqual((end["success"], end["finalError"]), (False, "Retry cancelled"))
        d.wait_for(is_type("agent_end"))
        self.assertEqual(len(self.calls()), 1, "a parked prompt sends nothing before its reset")
        d.finish()

    def test_with_the_wait_off_claude_codes_limit_line_ends_the_prompt_saying_when(self):
        init, result = self.claude_limit("You've hit your limit · resets 11pm (America/Anchorage)")
        d = self.start("claude", [{"lines": [init, result], "exit": 1},
                                  {"fixture": "claude-success.jsonl"}])
        msgs = self.prompt(d, "Fix the tests")
        self.assertEqual(len(self.calls()), 1)
        err = self.assistant_ends(msgs)[-1]["errorMessage"]
        self.assertRegex(err, r"\(usage limit: resets in \d+[hms](\d+[ms])?\)$")
        d.finish()


class RetryctlParkTests(DaemonTestCase):
    """retryctl shows a park as a countdown in hours and minutes with the
    reset's local time; off a terminal, plain lines."""

    def test_off_a_terminal_the_park_is_plain_lines_then_the_answer(self):
        import subprocess
        import tempfile
        import harness
        tmp = tempfile.mkdtemp(prefix="retryd-e2e-ctl-")
        env = dict(os.environ, RETRYD=harness.binary_path(), HOME=tmp, TZ="UTC",
                   XDG_CONFIG_HOME=os.path.join(tmp, "c"), XDG_STATE_HOME=os.path.join(tmp, "s"),
                   XDG_RUNTIME_DIR=tmp)
        ctl = os.path.join(os.path.dirname(harness.binary_path()), "retryctl")
        plan = [{"error": "usage limit reached, resets in 2s"}, {"text": "done after the reset"}]
        p = subprocess.run([ctl, "--sim-plan", json.dumps(plan), "--set", "retry.usageLimitWait=wait",
                            "--set", "retry.usageWaitHeartbeatMs=1000", "go on"],
                           env=env, capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "done after the reset\n")
        lines = p.stderr.splitlines()
        self.assertRegex(lines[0], r"^Usage limit: waiting 3\.0s for the reset at \d\d:\d\d UTC$")
        beats = [l for l in lines[1:] if l.startswith("Usage limit: waiting ")]
        self.assertGreaterEqual(len(beats), 1, p.stderr)
        self.assertNotIn("\r", p.stderr)
        self.assertNotIn("\033", p.stderr)


    def test_on_a_terminal_the_park_is_one_line_counting_down_in_place_then_the_answer(self):
        import pty
        import select
        import subprocess
        import tempfile
        import harness
        tmp = tempfile.mkdtemp(prefix="retryd-e2e-ctl-")
        env = dict(os.environ, RETRYD=harness.binary_path(), HOME=tmp, TZ="UTC", TERM="xterm",
                   XDG_CONFIG_HOME=os.path.join(tmp, "c"), XDG_STATE_HOME=os.path.join(tmp, "s"),
                   XDG_RUNTIME_DIR=tmp)
        env.pop("NO_COLOR", None)
        ctl = os.path.join(os.path.dirname(harness.binary_path()), "retryctl")
        plan = [{"error": "usage limit reached, resets in 2s"}, {"text": "done after the reset"}]
        master, slave = pty.openpty()
        p = subprocess.Popen([ctl, "--sim-plan", json.dumps(plan), "--set",
                              "retry.usageLimitWait=wait", "--set", "retry.usageWaitHeartbeatMs=1000",
                              "go on"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=slave)
        os.close(slave)
        seen = b""
        deadline = time.monotonic() + scaled(20)
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:         # the other end closed: retryctl is gone
                    break
                if not chunk:
                    break
                seen += chunk
            elif p.poll() is not None:
                break
        out = p.stdout.read().decode()
        p.wait(scaled(5))
        os.close(master)
        self.assertEqual((p.returncode, out), (0, "done after the reset\n"), seen)
        text = seen.decode("utf-8", "replace")
        # Each redraw starts with "\r\033[K": the line is rewritten in place.
        draws = [d for d in text.split("\r\x1b[K") if d.startswith("Usage limit: waiting ")]
        self.assertGreaterEqual(len(draws), 2, repr(text))
        left = [float(re.match(r"Usage limit: waiting (\d+(?:\.\d)?)s", d).group(1)) for d in draws]
        # It counts down in place; once the wait is over the line stays,
        # saying how long the wait was in all.
        counting, kept = left[:-1], draws[-1]
        self.assertEqual(counting, sorted(counting, reverse=True), "the countdown goes down")
        self.assertLess(counting[-1], 1.0)
        self.assertTrue(kept.endswith("\r\n") or kept.endswith("\n"), repr(kept))
        self.assertEqual(left[-1], left[0], "the kept line gives the whole wait")
        self.assertFalse(any("\n" in d for d in draws[:-1]), "a countdown line of its own")

    def test_retryctl_continue_waits_out_a_park_left_by_a_killed_daemon_and_prints_its_answer(self):
        import subprocess
        import tempfile
        import harness
        tmp = tempfile.mkdtemp(prefix="retryd-e2e-ctl-")
        state = os.path.join(tmp, "s")
        env = dict(os.environ, RETRYD=harness.binary_path(), HOME=tmp, TZ="UTC",
                   XDG_CONFIG_HOME=os.path.join(tmp, "c"), XDG_STATE_HOME=state,
                   XDG_RUNTIME_DIR=tmp)
        ctl = os.path.join(os.path.dirname(harness.binary_path()), "retryctl")
        plan = [{"error": "usage limit reached, resets in 3s"}, {"text": "never"}]
        d = self.spawn(plan=plan, sets=WAIT, env={"XDG_STATE_HOME": state})
        d.send({"type": "prompt", "id": "p", "message": "go on"})
        d.wait_for(is_type("auto_retry_start"), what="the park")
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(5)
        # The resumed daemon's first attempt is the probe.
        p = subprocess.run([ctl, "--continue", "--sim-plan",
                            json.dumps([{"text": "answered after the reset"}])],
                           env=env, capture_output=True, text=True, timeout=20, cwd=tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "answered after the reset\n")
        self.assertRegex(p.stderr.splitlines()[0], r"^Usage limit: waiting \d+\.\ds for the reset at ")
        # Nothing parked is left: a second --continue has nothing to wait for.
        p = subprocess.run([ctl, "--continue", "--sim-plan", "[]"], env=env, capture_output=True,
                           text=True, timeout=20, cwd=tmp, input="")
        self.assertEqual((p.returncode, p.stdout), (0, ""), p.stderr)


from test_fleet import FleetCase  # noqa: E402


class FleetUsageWaitTests(FleetCase):
    """Two daemons on one exhausted key (user mode: one fleet folder): the
    first to wake at the reset claims the probe, the other waits for its
    answer and leaves after it, not in the same second."""

    def fleet_daemon(self, srv):
        return self.daemon(srv, sets=WAIT)

    def settle(self):
        """The fleet holds what a's answer told it (user mode: at once)."""

    @timing_sensitive("measures when requests and events come")
    def test_two_daemons_on_one_spent_key_send_one_probe_between_them_then_both_complete(self):
        srv = self.server([limit(2), limit(2), {"text": "a"}, {"text": "b"}])
        a = self.fleet_daemon(srv)
        b = self.fleet_daemon(srv)
        a.send({"type": "prompt", "id": "pa", "message": "one"})
        start_a = a.wait_for(is_type("auto_retry_start"), what="a's park")
        self.assertEqual(start_a["resetSource"], "body")
        self.settle()
        b.send({"type": "prompt", "id": "pb", "message": "two"})
        # b sends nothing: the fleet knows the key is spent, and until when.
        start_b = b.wait_for(is_type("auto_retry_start"), what="b's park")
        self.assertEqual((start_b["reason"], start_b["resetSource"]), ("usage-reset", "text"))
        self.assertEqual(len(srv.requests()), 1)
        msgs_a = a.collect_until(is_type("agent_end"), timeout=40, what="a's agent_end")
        msgs_b = b.collect_until(is_type("agent_end"), timeout=40, what="b's agent_end")
        self.assertEqual(text_of(answers(msgs_a)[-1]) + text_of(answers(msgs_b)[-1]) in ("ab", "ba"),
                         True)
        reqs = srv.requests()
        # The first, the one probe (the reset was late), then one request
        # each once the key is back: no second probe at the reset.
        self.assertEqual(len(reqs), 4, [r["time"] for r in reqs])
        times = [r["time"] for r in reqs]
        gaps = [round(y - x, 2) for x, y in zip(times[1:], times[2:])]
        # The probe at the first reset went alone: the other daemon was held
        # until its answer, not sent in the same second.
        self.assertGreaterEqual(gaps[0], 1.0, gaps)
        # Once the probe answered well, the other leaves in its turn (one
        # every 500 ms, the fleet's train), not in the same second as it.
        self.assertGreaterEqual(gaps[1], 0.3, gaps)
        a.finish()
        b.finish()


from test_fleet_redis import RedisCase  # noqa: E402


class RedisFleetUsageWaitTests(RedisCase, FleetUsageWaitTests):
    """The same through a real redis-server (fleet.mode "redis", the Lua
    script's claim)."""

    def fleet_daemon(self, srv):
        return self.rdaemon(srv, sets=WAIT)

    def settle(self):
        # a's tell reaches Redis from the loop, after its events.
        time.sleep(0.5)


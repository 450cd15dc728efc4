"""Logs worth reading, through the binary: RETRYD_LOG=debug says every retry
decision, every HTTP request and every agent CLI spawn and exit, and
RETRYD_LOG_FORMAT=json writes one JSON object per line. No secret, ever.

The HTTP runs use tests/fixtures/fake_llm_server.py on 127.0.0.1, the CLI
runs tests/fixtures/bin/fake_agent, as test_http.py and test_cli.py do.
"""
import json
import os
import re
import secrets
import sys
import tempfile
import unittest

from harness import REPO_ROOT, DaemonTestCase

sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

FAKE_AGENT = os.path.join(REPO_ROOT, "tests", "fixtures", "bin", "fake_agent")
KEY_ENV = "RETRYD_E2E_KEY"
SECRET = "sk-e2e-" + secrets.token_hex(16)  # new each run: a shared fleet keeps what a server said of a key
# Secrets that look like nothing: only where they stand can hide them.
URL_SECRET = "urlpass0f9e8d7c"
FLAG_SECRET = "flagvalue5b4a3c2d"
EQ_SECRET = "eqvalue9a8b7c6d5"
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

INIT = {"type": "system", "subtype": "init", "session_id": "S7", "model": "m"}
RESULT_OK = {"type": "result", "subtype": "success", "is_error": False, "result": "x",
             "session_id": "S7", "usage": {"input_tokens": 1, "output_tokens": 1}}


def lines_with(text, word):
    return [ln for ln in text.splitlines() if word in ln]


class HttpLogTests(DaemonTestCase):

    def start(self, plan, env=None, base_url=None, sets=None):
        srv = FakeServer(plan, max_seconds=120).start()
        self.addCleanup(srv.stop)
        cfg = {"api": "openai-completions", "baseUrl": base_url or srv.url + "/v1",
               "apiKeyEnv": KEY_ENV, "models": ["m1"]}
        all_env = {KEY_ENV: SECRET, "RETRYD_LOG": "debug"}
        all_env.update(env or {})
        all_sets = {"retry.baseDelayMs": 20, "retry.maxRetries": 3}
        all_sets.update(sets or {})
        d = self.spawn(args=["--provider", "fake", "--no-session"],
                       settings={"providers": {"fake": cfg}}, sets=all_sets, env=all_env)
        return d, srv

    def test_debug_logs_three_retry_decisions_and_four_timed_requests(self):
        d, srv = self.start([{"status": 503, "message": "busy one"},
                             {"status": 503, "message": "busy two"},
                             {"status": 503, "message": "busy three"},
                             {"text": "finally"}])
        self.run_prompt(d, "q")
        d.finish()
        err = d.stderr_text()
        retries = lines_with(err, "decision: action=retry")
        self.assertEqual(len(retries), 3, err)
        for n, line in enumerate(retries, 1):
            self.assertRegex(line, r"attempt=%d/3 delay_ms=\d+ set_by=backoff " % n)
            self.assertIn("rule=http-status:503", line)
            self.assertIn("class=", line)
        self.assertEqual(len(lines_with(err, "decision: action=done")), 1, err)
        reqs = lines_with(err, "http: POST ")
        self.assertEqual(len(reqs), 4, err)
        pat = (r"http: POST http://127\.0\.0\.1:%d/v1/chat/completions status=(\d+) "
               r"ttfb_ms=\d+ bytes=\d+ total_ms=\d+ end=(ok|closed)$" % srv.port)
        self.assertEqual([re.search(pat, ln).group(1) for ln in reqs],
                         ["503", "503", "503", "200"], err)
        # The request ends before the decision it leads to.
        self.assertLess(err.index(reqs[0]), err.index(retries[0]))

    def test_a_server_hint_names_its_source(self):
        d, srv = self.start([{"status": 429, "headers": {"retry-after-ms": "300"}},
                             {"text": "ok"}])
        self.run_prompt(d, "q")
        d.finish()
        [line] = lines_with(d.stderr_text(), "decision: action=retry")
        self.assertIn("attempt=1/3 delay_ms=300 set_by=server-hint:header", line)
        d, srv = self.start([{"status": 429, "message": "Rate limited, try again in 0.3s"},
                             {"text": "ok"}])
        self.run_prompt(d, "q")
        d.finish()
        [line] = lines_with(d.stderr_text(), "decision: action=retry")
        self.assertIn("attempt=1/3 delay_ms=300 set_by=server-hint:text", line)

    def test_a_final_failure_logs_a_stop_decision(self):
        d, srv = self.start([{"status": 400, "message": "bad request"}])
        self.run_prompt(d, "q")
        d.finish()
        [line] = lines_with(d.stderr_text(), "decision: ")
        self.assertRegex(line, r"action=stop why=not-retryable retries=0/3 .*rule=http-status:400")

    def test_credentials_in_the_url_never_reach_the_log(self):
        srv = FakeServer([{"status": 503}, {"text": "ok"}], max_seconds=120).start()
        self.addCleanup(srv.stop)
        url = "http://user:%s@127.0.0.1:%d/v1" % (URL_SECRET, srv.port)
        d, _ = self.start([], base_url=url)
        self.run_prompt(d, "q")
        d.finish()
        err = d.stderr_text()
        self.assertNotIn(URL_SECRET, err)
        self.assertNotIn(SECRET, err)
        self.assertNotIn("user:", err)
        self.assertEqual(len(lines_with(err, "http: POST http://127.0.0.1:%d/v1/chat/completions"
                                       % srv.port)), 2, err)

    def test_json_format_writes_one_object_per_line_with_ts_level_msg(self):
        d, srv = self.start([{"status": 503}, {"text": "ok"}],
                            env={"RETRYD_LOG_FORMAT": "json"})
        self.run_prompt(d, "q")
        d.finish()
        lines = d.stderr_text().splitlines()
        self.assertTrue(lines)
        objs = [json.loads(ln) for ln in lines]
        for o in objs:
            self.assertEqual(list(o), ["ts", "level", "msg"])
            self.assertRegex(o["ts"], TS)
        msgs = [o["msg"] for o in objs if o["level"] == "debug"]
        self.assertTrue(any(m.startswith("decision: action=retry") for m in msgs), msgs)
        self.assertEqual(len([m for m in msgs if m.startswith("http: POST")]), 2, msgs)
        self.assertFalse(any(SECRET in ln for ln in lines))

    def test_an_unknown_format_warns_once_and_logs_text(self):
        d, srv = self.start([{"text": "ok"}], env={"RETRYD_LOG_FORMAT": "weird"})
        self.run_prompt(d, "q")
        d.finish()
        err = d.stderr_text()
        self.assertEqual(len(lines_with(err, "RETRYD_LOG_FORMAT")), 1, err)
        self.assertIn("retryd: warn: RETRYD_LOG_FORMAT=weird is not text or json", err)
        for line in err.splitlines():
            self.assertTrue(line.startswith("retryd: "), line)


class CliLogTests(DaemonTestCase):

    def start(self, plan, sets=None):
        self.dir = tempfile.mkdtemp(prefix="retryd-e2e-agent-")
        self.addCleanup(lambda: __import__("shutil").rmtree(self.dir, ignore_errors=True))
        with open(os.path.join(self.dir, "plan.json"), "w") as f:
            json.dump(plan, f)
        s = {"providers.claude.command": FAKE_AGENT, "retry.baseDelayMs": 10}
        s.update(sets or {})
        return self.spawn(args=["--provider", "claude", "--no-session"], sets=s,
                          env={"FAKE_AGENT_DIR": self.dir, "RETRYD_LOG": "debug"})

    def test_debug_logs_each_spawn_with_masked_flags_and_its_exit(self):
        d = self.start([{"lines": [INIT, RESULT_OK]}],
                       sets={"providers.claude.args": ["--api-key", FLAG_SECRET,
                                                       "--token=" + EQ_SECRET]})
        self.run_prompt(d, "List files")
        d.finish()
        with open(os.path.join(self.dir, "calls.jsonl")) as f:
            [call] = [json.loads(ln) for ln in f]
        self.assertIn(FLAG_SECRET, call["argv"])  # the agent got it
        err = d.stderr_text()
        [spawn] = lines_with(err, " spawned: ")
        self.assertRegex(spawn, r"claude: pid (\d+) spawned: '%s' '-p' 'List files' " % FAKE_AGENT)
        self.assertIn("--api-key *** --token=***", spawn)
        pid = re.search(r"pid (\d+) spawned", spawn).group(1)
        self.assertIn("claude: pid %s exited with status 0" % pid, err)
        self.assertNotIn(FLAG_SECRET, err)
        self.assertNotIn(EQ_SECRET, err)

    def test_a_failed_agent_logs_its_exit_status(self):
        d = self.start([{"lines": [INIT], "exit": 3}], sets={"retry.enabled": False})
        self.run_prompt(d, "q")
        d.finish()
        err = d.stderr_text()
        self.assertRegex(err, r"claude: pid \d+ exited with status 3")
        self.assertIn("decision: action=stop why=", err)


if __name__ == "__main__":
    unittest.main()

"""Real HTTP backends: retryd against the fake LLM server, for both wire formats.

Every test runs once per API (OpenAI chat completions and Anthropic messages)
through the real binary, `--provider fake` pointing at an in-process
tests/fixtures/fake_llm_server.py on 127.0.0.1. Delays are short and every
wait is bounded.
"""
import email.utils
import hashlib
import json
import os
import secrets
import socket
import sys
import tempfile
import time
import unittest

from harness import (DaemonTestCase, timing_sensitive, deltas, is_response, is_type, role_of, run_cli, scaled,
                     signature, text_of, types)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

TRUNCATED = "connection error: stream ended before completion"
FAST = {"retry.baseDelayMs": 20}
PROVIDER = "fake"
KEY_ENV = "RETRYD_E2E_KEY"
SECRET = "sk-e2e-" + secrets.token_hex(16)  # new each run: a shared fleet keeps what a server said of a key
# A key that does not look like one (the example key of vLLM's documentation):
# the daemon knows its own keys, so it must keep this one out of its output too.
PLAIN_SECRET = "token-abc123"
# The keys of pi's usage block.
USAGE_KEYS = {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}


def events(msgs, type_):
    return [m for m in msgs if m.get("type") == type_]


def assistant_ends(msgs):
    return [m["message"] for m in msgs
            if m.get("type") == "message_end" and role_of(m) == "assistant"]


def closed_port():
    """A 127.0.0.1 port nobody listens on (bound, then released)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wire_text(content):
    """The text of a request message's content (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def convo(request):
    """[(role, text)] of a recorded request body."""
    return [(m["role"], wire_text(m.get("content"))) for m in request["body"]["messages"]]


def piece(size):
    """The content of one fake-server chunkBytes chunk."""
    pattern = "abcdefghijklmnopqrstuvwxyz0123456789"
    return (pattern * (size // len(pattern) + 1))[:size]


class HttpCase(DaemonTestCase):
    """The shared tests; subclasses set API. Not collected by itself."""

    API = None

    # -- setup -----------------------------------------------------------------

    def server(self, plan=None):
        srv = FakeServer(plan if plan is not None else [], max_seconds=120).start()
        self.addCleanup(srv.stop)
        return srv

    def provider_config(self, base_url, **over):
        cfg = {"api": self.API, "baseUrl": base_url, "apiKeyEnv": KEY_ENV,
               "models": ["m1", {"id": "m2", "contextWindow": 32000, "maxTokens": 77}]}
        cfg.update(over)
        return {k: v for k, v in cfg.items() if v is not None}

    def start(self, plan=None, sets=None, env=None, provider=None, args=(), base_url=None,
              session=False):
        """A fake server with `plan` and a daemon talking to it: (daemon, server)."""
        srv = self.server(plan) if base_url is None else None
        cfg = self.provider_config(base_url or srv.url + "/v1", **(provider or {}))
        all_sets = dict(FAST)
        all_sets.update(sets or {})
        all_env = {KEY_ENV: SECRET}
        all_env.update(env or {})
        argv = ["--provider", PROVIDER] + list(args)
        if session:
            argv += ["--session", "{tmp}/session.jsonl"]
        d = self.spawn(args=argv, settings={"providers": {PROVIDER: cfg}}, sets=all_sets,
                       env=all_env)
        return d, srv

    def session_text(self, d):
        path = os.path.join(d.tmp, "session.jsonl")
        with open(path, encoding="utf-8") as f:
            return f.read()

    def key_header(self):
        return "x-api-key" if self.API == "anthropic-messages" else "authorization"

    def key_hash(self, secret):
        value = secret if self.API == "anthropic-messages" else "Bearer " + secret
        return hashlib.sha256(value.encode()).hexdigest()[:16]

    def api_path(self):
        return "/v1/messages" if self.API == "anthropic-messages" else "/v1/chat/completions"

    def assertNoSecret(self, d, secret, session=True):
        """The secret is nowhere in stdout, stderr or the session file."""
        places = [("stdout", "\n".join(d.raw_lines())), ("stderr", d.stderr_text())]
        if session:
            places.append(("the session file", self.session_text(d)))
        leaks = []
        for where, text in places:
            for line in text.splitlines():
                if secret in line:
                    i = line.index(secret)
                    leaks.append("%s: ...%s..." % (where, line[max(0, i - 120):i + 60]))
                    break
        self.assertEqual(leaks, [], "the API key %r leaked" % secret)

    # -- a streamed answer -----------------------------------------------------

    def test_streamed_answer_follows_pi_event_order_with_usage_and_model_fields(self):
        text = "alpha beta gamma delta"
        d, srv = self.start([{"text": text, "inputTokens": 11, "outputTokens": 7}])
        msgs = self.run_prompt(d, "q")
        self.assertEqual(signature(msgs), [
            "response:prompt", "agent_start", "turn_start",
            "message_start:user", "message_end:user",
            "message_start:assistant", "update:text_start"] + ["update:text_delta"] * 4 + [
            "update:text_end", "message_end:assistant", "turn_end", "agent_end"])
        self.assertEqual(deltas(msgs), ["alpha", " beta", " gamma", " delta"])
        self.assertEqual("".join(deltas(msgs)), text)
        # full mode (the default): every update repeats the partial message so far
        so_far = ""
        for m in events(msgs, "message_update"):
            ame = m["assistantMessageEvent"]
            if ame["type"] == "text_delta":
                so_far += ame["delta"]
                self.assertEqual(text_of(m["message"]), so_far)
                self.assertEqual(text_of(ame["partial"]), so_far)
            if ame["type"] == "text_end":
                self.assertEqual(ame["content"], text)
        start = [m for m in msgs if m["type"] == "message_start" and role_of(m) == "assistant"][0]
        final = assistant_ends(msgs)[0]
        for msg in (start["message"], final):
            self.assertEqual((msg["api"], msg["provider"], msg["model"]), (self.API, PROVIDER, "m1"))
        self.assertEqual(final["stopReason"], "stop")
        self.assertNotIn("errorMessage", final)
        self.assertEqual(final["content"], [{"type": "text", "text": text}])
        self.assertTrue(USAGE_KEYS <= set(final["usage"]), final["usage"])
        self.assertEqual((final["usage"]["input"], final["usage"]["output"]), (11, 7))
        self.assertEqual(final["usage"]["totalTokens"], 18)
        self.assertEqual(msgs[-2]["message"], final)  # turn_end
        self.assertEqual(msgs[-1]["messages"][1], final)  # agent_end
        d.finish()

    def test_a_whole_streamed_answer_keeps_its_connection_for_the_next_prompt(self):
        # The body's last chunk is read after the terminal event: curl
        # keeps the connection, and the next prompt needs no new handshake.
        d, srv = self.start([{"text": "one"}, {"text": "two"}, {"text": "three"}])
        for q in ("a", "b", "c"):
            self.run_prompt(d, q)
            # The server's last chunk follows [DONE] from its own thread: a
            # prompt sent in the same instant finds the connection still
            # draining and opens another (correct, but not what is tested).
            time.sleep(scaled(0.3))
        ports = [r["peerPort"] for r in srv.requests()]
        self.assertEqual(len(set(ports)), 1, ports)
        d.finish()

    def test_a_cut_stream_is_not_kept_and_the_retry_gets_a_new_connection(self):
        d, srv = self.start([{"text": "one two three", "dropAfterChunks": 1, "dropMode": "close"},
                             {"text": "ok"}])
        self.run_prompt(d, "a")
        ports = [r["peerPort"] for r in srv.requests()]
        self.assertEqual(len(set(ports)), 2, ports)
        d.finish()

    def test_a_kept_alive_connection_reset_as_it_is_reused_costs_no_second_failure(self):
        # The 503's whole body leaves its connection open; the retry reuses
        # it just as the server resets it. curl tries a reused connection
        # that died before a byte came back once more on a new one: the
        # user sees the 503's retry only, not a second failed attempt.
        d, srv = self.start([{"status": 503, "message": "busy"}, {"resetBeforeHeaders": True},
                             {"text": "two"}])
        msgs = self.run_prompt(d, "q")
        starts = [m for m in msgs if m.get("type") == "auto_retry_start"]
        self.assertEqual([s["attempt"] for s in starts], [1], starts)
        self.assertEqual(text_of([m for m in msgs if m.get("type") == "message_end"][-1]["message"]),
                         "two")
        self.assertEqual(len(srv.requests()), 3)
        d.finish()

    def test_length_finish_reason_maps_to_stop_reason_length(self):
        d, srv = self.start([{"text": "cut short", "finish": "length"}])
        msgs = self.run_prompt(d, "q")
        final = assistant_ends(msgs)[0]
        self.assertEqual(final["stopReason"], "length")
        self.assertEqual(text_of(final), "cut short")
        self.assertNotIn("auto_retry_start", types(msgs))
        d.finish()

    def test_tool_call_finish_maps_to_stop_reason_tool_use(self):
        d, srv = self.start([{"text": "let me look", "toolCalls": [{"name": "read",
                                                                    "arguments": {"path": "x"}}]}])
        msgs = self.run_prompt(d, "q")
        final = assistant_ends(msgs)[0]
        self.assertEqual((final["stopReason"], text_of(final)), ("toolUse", "let me look"))
        self.assertEqual(types(msgs).count("agent_end"), 1)
        d.finish()

    # -- HTTP errors -----------------------------------------------------------

    def test_503_error_text_comes_from_the_json_body_and_is_retried(self):
        d, srv = self.start([{"status": 503, "message": "upstream busy, try later"},
                             {"text": "recovered now"}])
        msgs = self.run_prompt(d, "q")
        first, second = assistant_ends(msgs)
        self.assertEqual((first["stopReason"], first["errorMessage"]),
                         ("error", "503 upstream busy, try later"))
        self.assertEqual(first["content"], [])
        start = events(msgs, "auto_retry_start")
        self.assertEqual([(s["attempt"], s["delayMs"], s["errorMessage"], s["reason"]) for s in start],
                         [(1, 20, "503 upstream busy, try later", "backoff")])
        self.assertEqual((second["stopReason"], text_of(second)), ("stop", "recovered now"))
        self.assertEqual([(e["success"], e["attempt"]) for e in events(msgs, "auto_retry_end")],
                         [(True, 1)])
        self.assertEqual(len(srv.requests()), 2)
        d.finish()

    def test_429_retry_after_seconds_header_sets_the_delay(self):
        d, srv = self.start([{"status": 429, "headers": {"retry-after": "1"}}, {"text": "ok"}])
        msgs = self.run_prompt(d, "q", timeout=6)
        start = events(msgs, "auto_retry_start")[0]
        self.assertEqual({k: start.get(k) for k in ("attempt", "delayMs", "reason", "hintMs",
                                                     "errorMessage")},
                         {"attempt": 1, "delayMs": 1000, "reason": "server-hint", "hintMs": 1000,
                          "errorMessage": "429 Rate limit reached"})
        reqs = srv.requests()
        self.assertEqual(len(reqs), 2)
        self.assertGreaterEqual(reqs[1]["time"] - reqs[0]["time"], 0.9, "the hint was not waited for")
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "ok")
        d.finish()

    def test_retry_after_ms_header_sets_the_delay(self):
        d, srv = self.start([{"status": 429, "headers": {"retry-after-ms": "250"}}, {"text": "ok"}])
        msgs = self.run_prompt(d, "q")
        start = events(msgs, "auto_retry_start")[0]
        self.assertEqual((start["delayMs"], start["reason"], start.get("hintMs")),
                         (250, "server-hint", 250))
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "ok")
        d.finish()

    def test_most_precise_wait_header_wins_and_ratelimit_reset_is_a_hint(self):
        cases = [
            ({"retry-after": "5", "retry-after-ms": "200"}, 200),
            ({"retry-after-ms": "200", "retry-after": "5"}, 200),
            ({"x-ratelimit-reset-ms": "300"}, 300),
            ({"x-ratelimit-reset": "0.4"}, 400),
            # OpenAI's own reset headers: durations; the later of the two counts.
            ({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "350ms"}, 1000),
            ({"x-ratelimit-reset-tokens": "0m0.6s"}, 600),
        ]
        d, srv = self.start()
        for headers, want in cases:
            with self.subTest(headers=headers):
                srv.set_plan([{"status": 429, "headers": headers}, {"text": "ok"}])
                msgs = self.run_prompt(d, "q")
                start = events(msgs, "auto_retry_start")
                self.assertEqual([(s["delayMs"], s["reason"], s.get("hintMs")) for s in start],
                                 [(want, "server-hint", want)])
                self.assertEqual(text_of(assistant_ends(msgs)[-1]), "ok")
        d.finish()

    @timing_sensitive("an HTTP date has whole seconds; the slow start eats them")
    def test_retry_after_http_date_sets_the_delay(self):
        when = email.utils.formatdate(time.time() + 3, usegmt=True)
        d, srv = self.start([{"status": 503, "headers": {"retry-after": when}}, {"text": "ok"}])
        d.send({"type": "prompt", "message": "q"})
        start = d.wait_for(is_type("auto_retry_start"))
        # The date has whole seconds: the wait is a little over 2 s, at most 3 s.
        self.assertEqual(start["reason"], "server-hint", start)
        self.assertTrue(1000 <= start["delayMs"] <= 3000, start)
        self.assertEqual(start.get("hintMs"), start["delayMs"])
        d.send({"type": "abort_retry", "id": "ar"})
        msgs = d.collect_until(is_response(id="ar"))
        self.assertEqual(types(msgs)[-3:], ["auto_retry_end", "agent_end", "response"])
        self.assertEqual(msgs[-3]["finalError"], "Retry cancelled")
        self.assertEqual(len(srv.requests()), 1)
        d.finish()

    def test_retry_after_above_max_delay_fails_the_chain_at_once(self):
        d, srv = self.start([{"status": 429, "headers": {"retry-after": "2"}}, {"text": "never"}],
                            sets={"retry.maxDelayMs": 500})
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("auto_retry_start", types(msgs))
        self.assertEqual(signature(msgs)[-4:], ["message_end:assistant", "turn_end",
                                                "auto_retry_end", "agent_end"])
        end = msgs[-2]
        self.assertEqual((end["success"], end["attempt"], end["finalError"]),
                         (False, 1, "Provider requested 2000ms wait, exceeds retry.maxDelayMs "
                                    "(500ms). Original error: 429 Rate limit reached"))
        d.expect_silence(0.1)
        self.assertEqual(len(srv.requests()), 1)
        d.finish()

    def test_400_and_401_are_not_retried_and_carry_the_body_message(self):
        d, srv = self.start([{"status": 400, "message": "max_tokens: must be at most 1500"},
                             {"status": 401, "message": "invalid x-api-key"},
                             {"text": "never"}])
        for expected in ("400 max_tokens: must be at most 1500", "401 invalid x-api-key"):
            msgs = self.run_prompt(d, "q")
            self.assertNotIn("auto_retry_start", types(msgs))
            self.assertNotIn("auto_retry_end", types(msgs))
            self.assertEqual(signature(msgs)[-3:], ["message_end:assistant", "turn_end", "agent_end"])
            final = assistant_ends(msgs)[-1]
            self.assertEqual((final["stopReason"], final["errorMessage"]), ("error", expected))
        self.assertEqual(len(srv.requests()), 2)
        d.finish()

    def test_plain_text_error_body_is_quoted(self):
        d, srv = self.start([{"status": 502, "body": "upstream connect error"}, {"text": "ok"}])
        msgs = self.run_prompt(d, "q")
        first = assistant_ends(msgs)[0]
        self.assertEqual(first["errorMessage"], "502 upstream connect error")
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "ok")
        d.finish()

    def test_non_json_and_empty_error_bodies_fall_back_to_the_reason_phrase(self):
        html = "<html><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>"
        d, srv = self.start([{"status": 502, "body": html, "contentType": "text/html"},
                             {"status": 500, "body": ""},
                             {"status": 503, "message": "overloaded " * 20000},
                             {"text": "ok"}], sets={"retry.baseDelayMs": 1})
        msgs = self.run_prompt(d, "q")
        ends = assistant_ends(msgs)
        self.assertEqual([m["errorMessage"] for m in ends[:2]],
                         ["502 Bad Gateway", "500 Internal Server Error"])
        # a 200 KB error body: the text stays short
        self.assertTrue(ends[2]["errorMessage"].startswith("503 "), ends[2]["errorMessage"][:80])
        self.assertLessEqual(len(ends[2]["errorMessage"].encode()), 512)
        self.assertEqual(text_of(ends[3]), "ok")
        d.finish()

    # -- truncated streams -----------------------------------------------------

    def test_stream_dropped_mid_way_is_a_failure_and_retried_whole(self):
        text = "one two three four five"
        d, srv = self.start()
        for mode in ("eof", "close", "reset"):
            with self.subTest(dropMode=mode):
                srv.set_plan([{"text": text, "dropAfterChunks": 2, "dropMode": mode},
                              {"text": text}])
                msgs = self.run_prompt(d, "q-" + mode)
                failed, final = assistant_ends(msgs)
                self.assertEqual(failed["stopReason"], "error")
                if mode == "eof":
                    self.assertEqual(failed["errorMessage"], TRUNCATED)
                else:
                    self.assertTrue(failed["errorMessage"].startswith("connection error: "),
                                    failed["errorMessage"])
                if mode == "reset":
                    # An RST may discard what the kernel held unread: whatever
                    # did arrive is kept.
                    self.assertIn(text_of(failed), ("", "one", "one two"))
                else:
                    self.assertEqual(text_of(failed), "one two", "the partial text is kept")
                starts = events(msgs, "auto_retry_start")
                self.assertEqual([s["errorMessage"] for s in starts], [failed["errorMessage"]])
                self.assertEqual((final["stopReason"], text_of(final)), ("stop", text))
                self.assertEqual(msgs[-1]["messages"][-1], final)
        d.finish()

    # -- how the bytes arrive --------------------------------------------------

    @timing_sensitive("measures the gaps between chunks")
    def test_slow_chunks_are_relayed_in_order_as_they_arrive(self):
        words = ["w%d" % i for i in range(6)]
        text = " ".join(words)
        d, srv = self.start([{"text": text, "chunkDelayMs": 60}])
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("agent_end"))
        lines = [ln for ln in d.lines if ln.obj.get("type") == "message_update"
                 and ln.obj["assistantMessageEvent"]["type"] == "text_delta"]
        self.assertEqual("".join(ln.obj["assistantMessageEvent"]["delta"] for ln in lines), text)
        self.assertEqual(len(lines), 6)
        # Each delta went out when its chunk came in, not all at the end.
        self.assertGreaterEqual(lines[-1].t - lines[0].t, 5 * 0.06 * 0.7)
        d.finish()

    def test_events_split_across_reads_anywhere_are_reassembled(self):
        text = "héllo wörld — ✓ 日本語 🙂 done"
        d, srv = self.start([{"text": text, "writeBytes": 3, "writeDelayMs": 1,
                              "inputTokens": 3, "outputTokens": 9}])
        msgs = self.run_prompt(d, "q", timeout=15)
        self.assertEqual("".join(deltas(msgs)), text)
        final = assistant_ends(msgs)[0]
        self.assertEqual((final["stopReason"], text_of(final)), ("stop", text))
        self.assertEqual((final["usage"]["input"], final["usage"]["output"]), (3, 9))
        d.finish()

    def test_huge_chunks_are_relayed_intact_in_delta_mode(self):
        size, n = 1 << 20, 3
        d, srv = self.start([{"chunkBytes": size, "chunks": n}],
                            sets={"rpc.messageUpdates": "delta"})
        msgs = self.run_prompt(d, "q", timeout=20)
        got = deltas(msgs)
        self.assertEqual(len(got), n)
        self.assertTrue(all(g == piece(size) for g in got), [len(g) for g in got])
        for m in events(msgs, "message_update"):
            self.assertNotIn("partial", m["assistantMessageEvent"])
            self.assertNotIn("message", m)
        final = assistant_ends(msgs)[0]
        self.assertEqual(final["stopReason"], "stop")
        self.assertEqual(text_of(final), piece(size) * n)
        d.finish(timeout=10)

    # -- hangs and abort -------------------------------------------------------

    def test_hang_after_headers_is_a_stream_stall_and_retried(self):
        d, srv = self.start([{"hang": True}, {"text": "ok"}], sets={"retry.idleTimeoutMs": 300})
        msgs = self.run_prompt(d, "q")
        failed, final = assistant_ends(msgs)
        self.assertEqual(failed["errorMessage"], "stream stall: no data for 300 ms")
        self.assertEqual([s["errorMessage"] for s in events(msgs, "auto_retry_start")],
                         ["stream stall: no data for 300 ms"])
        self.assertEqual(text_of(final), "ok")
        self.assertEqual(srv.wait_requests(2, timeout=scaled(3))[0]["outcome"], "client-closed")
        d.finish()

    @timing_sensitive("a 300 ms stall timeout races the slow start")
    def test_hang_after_some_text_keeps_the_text_in_the_stalled_message(self):
        d, srv = self.start([{"text": "a b c d", "hangAfterChunks": 2}, {"text": "a b c d"}],
                            sets={"retry.idleTimeoutMs": 300})
        msgs = self.run_prompt(d, "q")
        failed, final = assistant_ends(msgs)
        self.assertEqual(failed["errorMessage"], "stream stall: no data for 300 ms")
        self.assertEqual(text_of(failed), "a b")
        self.assertEqual(text_of(final), "a b c d")
        d.finish()

    def test_hang_before_headers_is_a_stream_stall_and_retried(self):
        d, srv = self.start([{"hangBeforeHeaders": True}, {"text": "ok"}],
                            sets={"retry.idleTimeoutMs": 300})
        msgs = self.run_prompt(d, "q")
        failed, final = assistant_ends(msgs)
        self.assertEqual(failed["errorMessage"], "stream stall: no data for 300 ms")
        self.assertEqual(text_of(final), "ok")
        self.assertEqual(srv.wait_requests(2, timeout=scaled(3))[0]["outcome"], "client-closed")
        d.finish()

    def test_http_idle_timeout_setting_fails_a_silent_transfer_as_a_connection_error(self):
        d, srv = self.start([{"hang": True}, {"text": "ok"}], sets={"http.idleTimeoutMs": 300})
        msgs = self.run_prompt(d, "q")
        failed, final = assistant_ends(msgs)
        self.assertTrue(failed["errorMessage"].startswith("connection error: "), failed)
        self.assertEqual(len(events(msgs, "auto_retry_start")), 1)
        self.assertEqual(text_of(final), "ok")
        d.finish()

    def test_abort_during_a_hang_answers_at_once_and_closes_the_connection(self):
        for step in ({"hang": True}, {"hangBeforeHeaders": True},
                     {"text": "x y z", "hangAfterChunks": 1}):
            with self.subTest(step=step):
                d, srv = self.start([step])
                d.send({"type": "prompt", "message": "q"})
                srv.wait_requests(1, timeout=scaled(3), outcome=False)
                time.sleep(0.1)  # the daemon is now waiting on the hung transfer
                t0 = time.monotonic()
                d.send({"type": "abort", "id": "abort-1"})
                msgs = d.collect_until(is_response(id="abort-1"), timeout=2)
                elapsed = time.monotonic() - t0
                self.assertTrue(msgs[-1]["success"], msgs[-1])
                self.assertLess(elapsed, scaled(0.5), "abort took %.2fs" % elapsed)
                ends = assistant_ends(msgs)
                self.assertEqual([m["stopReason"] for m in ends], ["aborted"])
                # agent_end comes before abort's response
                self.assertEqual(types(msgs)[-2:], ["agent_end", "response"])
                self.assertEqual(types(msgs).count("agent_end"), 1)
                rec = srv.wait_requests(1, timeout=scaled(3))[0]
                self.assertEqual(rec["outcome"], "client-closed")
                # and the daemon goes on serving
                srv.set_plan([{"text": "after"}])
                msgs = self.run_prompt(d, "again")
                self.assertEqual(text_of(assistant_ends(msgs)[-1]), "after")
                d.finish()

    # -- stream contents that are wrong ----------------------------------------

    def test_malformed_sse_data_fails_clearly_and_the_daemon_keeps_serving(self):
        d, srv = self.start([{"text": "x y", "malformed": True, "malformedAfterChunks": 1}],
                            sets={"retry.maxRetries": 0})
        msgs = self.run_prompt(d, "q")
        failed = assistant_ends(msgs)[0]
        self.assertEqual(failed["stopReason"], "error")
        self.assertTrue(failed["errorMessage"].startswith("malformed stream:"), failed)
        self.assertEqual(text_of(failed), "x")
        srv.set_plan([{"text": "fine again"}])
        msgs = self.run_prompt(d, "q2")
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "fine again")
        d.finish()

    def test_in_stream_error_event_is_retried(self):
        # The fake server's error object: Anthropic `event: error` with
        # {"type":"overloaded_error","message":"Overloaded"}; OpenAI
        # `data: {"error":{"message":"The server had an error while processing
        # your request.","type":"server_error",...}}`.
        d, srv = self.start([{"text": "a b c", "streamError": True, "errorAfterChunks": 1},
                             {"text": "a b c"}])
        msgs = self.run_prompt(d, "q")
        ends = assistant_ends(msgs)
        self.assertEqual(ends[0]["stopReason"], "error")
        self.assertEqual(text_of(ends[0]), "a")
        self.assertEqual(len(events(msgs, "auto_retry_start")), 1,
                         "in-stream error %r was not retried" % ends[0].get("errorMessage"))
        self.assertEqual(text_of(ends[-1]), "a b c")
        d.finish()

    # -- transport failures ----------------------------------------------------

    def test_connection_refused_is_a_connection_error_retried_then_given_up(self):
        d, _ = self.start(base_url="http://127.0.0.1:%d/v1" % closed_port(),
                          sets={"retry.baseDelayMs": 10, "retry.maxRetries": 2})
        msgs = self.run_prompt(d, "q")
        ends = assistant_ends(msgs)
        self.assertEqual(len(ends), 3)
        for m in ends:
            self.assertEqual(m["stopReason"], "error")
            self.assertTrue(m["errorMessage"].startswith("connection error: "), m)
        self.assertEqual([s["attempt"] for s in events(msgs, "auto_retry_start")], [1, 2])
        end = events(msgs, "auto_retry_end")
        self.assertEqual([(e["success"], e["attempt"], e["finalError"]) for e in end],
                         [(False, 2, ends[-1]["errorMessage"])])
        self.assertEqual(signature(msgs)[-3:], ["turn_end", "auto_retry_end", "agent_end"])
        d.finish()

    def test_connect_timeout_setting_bounds_a_connect_that_never_completes(self):
        # A listener with a full accept queue: the kernel drops further SYNs,
        # so a connect hangs until the client gives up.
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(0)
        self.addCleanup(ls.close)
        port = ls.getsockname()[1]
        for _ in range(3):
            c = socket.socket()
            c.setblocking(False)
            self.addCleanup(c.close)
            try:
                c.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
        time.sleep(0.05)
        d, _ = self.start(base_url="http://127.0.0.1:%d/v1" % port,
                          sets={"http.connectTimeoutMs": 300, "retry.maxRetries": 1,
                                "retry.baseDelayMs": 10})
        t0 = time.monotonic()
        msgs = self.run_prompt(d, "q", timeout=4)
        elapsed = time.monotonic() - t0
        ends = assistant_ends(msgs)
        self.assertEqual(len(ends), 2)
        for m in ends:
            self.assertTrue(m["errorMessage"].startswith("connection error: "), m["errorMessage"])
        self.assertEqual(len(events(msgs, "auto_retry_start")), 1)
        self.assertLess(elapsed, scaled(2.0), "two 300 ms connect timeouts took %.2fs" % elapsed)
        self.assertGreaterEqual(elapsed, 0.5)
        d.finish()

    def test_sigterm_during_a_hung_transfer_exits_at_once(self):
        d, srv = self.start([{"hang": True}])
        d.send({"type": "prompt", "message": "q"})
        srv.wait_requests(1, timeout=scaled(3), outcome=False)
        time.sleep(0.1)
        t0 = time.monotonic()
        d.signal()
        rc = d.wait_exit(timeout=3)
        self.assertEqual(rc, 0)
        self.assertLess(time.monotonic() - t0, scaled(1.0))
        d.check_output_clean()
        msgs = d.remaining(wait_eof=True)
        self.assertEqual([m["stopReason"] for m in assistant_ends(msgs)], ["aborted"])
        self.assertEqual(types(msgs)[-1], "agent_end")
        self.assertEqual(srv.wait_requests(1, timeout=scaled(3))[0]["outcome"], "client-closed")

    def test_stdin_eof_during_a_stream_finishes_the_answer_then_exits(self):
        text = "one two three four"
        d, srv = self.start([{"text": text, "chunkDelayMs": 40}])
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(lambda m: m.get("assistantMessageEvent", {}).get("type") == "text_delta")
        d.close_stdin()
        d.assert_clean_exit(timeout=3)
        msgs = d.remaining(wait_eof=True)
        final = assistant_ends(msgs)[-1]
        self.assertEqual((final["stopReason"], text_of(final)), ("stop", text))
        self.assertEqual(types(msgs)[-1], "agent_end")

    # -- secrets ---------------------------------------------------------------

    def test_api_key_is_sent_but_never_appears_in_output_logs_or_session(self):
        for secret in (SECRET, PLAIN_SECRET):
            with self.subTest(secret=secret):
                d, srv = self.start(
                    [{"status": 401, "message": "Incorrect API key provided: %s. You can find "
                                                "your API key at https://example.invalid" % secret},
                     {"status": 429, "message": "Rate limit for key %s reached" % secret},
                     {"text": "fine"}],
                    env={KEY_ENV: secret, "RETRYD_LOG": "debug"}, session=True)
                msgs = self.run_prompt(d, "q")
                failed = assistant_ends(msgs)[0]
                self.assertTrue(failed["errorMessage"].startswith("401 Incorrect API key provided"),
                                failed)
                self.assertNotIn("auto_retry_start", types(msgs))
                msgs = self.run_prompt(d, "q2")  # a retried 429 whose text has the key
                self.assertEqual(len(events(msgs, "auto_retry_start")), 1)
                d.request({"type": "get_state"})
                d.request({"type": "get_messages"})
                d.request({"type": "get_available_models"})
                d.finish()
                reqs = srv.requests()
                self.assertEqual(len(reqs), 3)
                for r in reqs:
                    self.assertEqual(r["headers"].get(self.key_header()), "REDACTED")
                    self.assertEqual(r["secretHashes"].get(self.key_header()), self.key_hash(secret))
                self.assertNoSecret(d, secret)

    def test_literal_api_key_from_settings_is_sent_and_not_echoed(self):
        d, srv = self.start([{"text": "ok"}], provider={"apiKey": PLAIN_SECRET, "apiKeyEnv": None},
                            session=True)
        self.run_prompt(d, "q")
        d.request({"type": "get_state"})
        d.request({"type": "get_available_models"})
        d.finish()
        rec = srv.requests()[0]
        self.assertEqual(rec["secretHashes"].get(self.key_header()), self.key_hash(PLAIN_SECRET))
        self.assertNoSecret(d, PLAIN_SECRET)

    def test_missing_api_key_fails_the_prompt_clearly_and_the_daemon_keeps_serving(self):
        unset = "RETRYD_E2E_UNSET_KEY_VAR"
        d, srv = self.start([{"text": "never"}], provider={"apiKeyEnv": unset},
                            env={unset: None})
        for _ in range(2):
            msgs = self.run_prompt(d, "q")
            self.assertEqual(msgs[0]["success"], True)
            final = assistant_ends(msgs)[-1]
            self.assertEqual(final["stopReason"], "error")
            self.assertIn(unset, final["errorMessage"])
            self.assertNotIn("auto_retry_start", types(msgs))
            self.assertEqual(types(msgs).count("agent_end"), 1)
        self.assertTrue(d.request({"type": "get_state"})["success"])
        self.assertEqual(srv.requests(), [])
        d.finish()

    # -- what is sent ----------------------------------------------------------

    def test_requests_send_model_and_stream_and_leave_out_the_failed_attempt(self):
        d, srv = self.start([{"text": "partial words here", "dropAfterChunks": 1},
                             {"text": "whole answer"}, {"text": "second answer"}],
                            provider={"headers": {"X-E2E-Extra": "yes"}},
                            # A replay, as a prefill would send the partial text.
                            sets={"retry.continueCutAnswers": "off"})
        msgs = self.run_prompt(d, "first question")
        self.assertEqual(text_of(assistant_ends(msgs)[0]), "partial")
        self.run_prompt(d, "second question")
        reqs = srv.requests()
        self.assertEqual(len(reqs), 3)
        self.assertEqual(convo(reqs[0]), [("user", "first question")])
        self.assertEqual(convo(reqs[1]), [("user", "first question")],
                         "the retried request must not carry the failed attempt")
        self.assertEqual(convo(reqs[2]), [("user", "first question"), ("assistant", "whole answer"),
                                          ("user", "second question")])
        for r in reqs:
            self.assertEqual((r["method"], r["path"]), ("POST", self.api_path()))
            self.assertEqual(r["body"]["model"], "m1")
            self.assertIs(r["body"]["stream"], True)
            self.assertEqual(r["headers"].get("x-e2e-extra"), "yes")
            self.assertIn("application/json", r["headers"].get("content-type", ""))
            if self.API == "anthropic-messages":
                self.assertIn("anthropic-version", r["headers"])
                self.assertIsInstance(r["body"]["max_tokens"], int)
            else:
                self.assertEqual(r["body"].get("stream_options"), {"include_usage": True})
        d.finish()

    def test_models_are_listed_and_set_model_switches_the_request_model(self):
        d, srv = self.start([{"text": "from m2"}])
        data = d.request({"type": "get_available_models"})["data"]
        self.assertEqual([m["id"] for m in data["models"]], ["m1", "m2"])
        for m in data["models"]:
            self.assertEqual((m["provider"], m["api"], m["baseUrl"]),
                             (PROVIDER, self.API, srv.url + "/v1"))
        self.assertEqual((data["models"][1]["contextWindow"], data["models"][1]["maxTokens"]),
                         (32000, 77))
        self.assertEqual(d.request({"type": "get_state"})["data"]["model"]["id"], "m1")
        resp = d.request({"type": "set_model", "provider": PROVIDER, "modelId": "m2"})
        self.assertTrue(resp["success"], resp)
        self.assertEqual(resp["data"]["id"], "m2")
        msgs = self.run_prompt(d, "q")
        self.assertEqual(assistant_ends(msgs)[0]["model"], "m2")
        body = srv.requests()[0]["body"]
        self.assertEqual(body["model"], "m2")
        limit = body.get("max_tokens" if self.API == "anthropic-messages" else "max_completion_tokens")
        self.assertEqual(limit, 77)
        self.assertEqual(d.request({"type": "get_state"})["data"]["model"]["id"], "m2")
        bad = d.request({"type": "set_model", "provider": PROVIDER, "modelId": "nope"})
        self.assertEqual((bad["success"], bad["error"]), (False, "Model not found: fake/nope"))
        bad = d.request({"type": "set_model", "provider": "other", "modelId": "m1"})
        self.assertFalse(bad["success"])
        self.assertEqual(d.request({"type": "get_state"})["data"]["model"]["id"], "m2")
        d.finish()

    def test_usage_limit_switches_to_the_next_credential(self):
        k2 = "sk-e2e-second-0b8d4f2a6c1e9b7d3f5a8c2e4b6d"
        d, srv = self.start([{"status": 429, "message": "usage limit reached"}, {"text": "ok"}],
                            provider={"apiKeyEnv": ["K1_E2E", "K2_E2E"]},
                            env={"K1_E2E": SECRET, "K2_E2E": k2}, session=True)
        msgs = self.run_prompt(d, "q")
        fb = events(msgs, "retry_fallback_applied")
        self.assertEqual([{k: f.get(k) for k in ("kind", "from", "to")} for f in fb],
                         [{"kind": "credential", "from": "K1_E2E", "to": "K2_E2E"}])
        start = events(msgs, "auto_retry_start")
        self.assertEqual([(s["delayMs"], s["reason"]) for s in start], [(0, "credential-switch")])
        self.assertLess(types(msgs).index("retry_fallback_applied"),
                        types(msgs).index("auto_retry_start"))
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "ok")
        reqs = srv.requests()
        self.assertEqual([r["secretHashes"].get(self.key_header()) for r in reqs],
                         [self.key_hash(SECRET), self.key_hash(k2)])
        # the next prompt stays on the second key
        self.run_prompt(d, "q2")
        self.assertEqual(srv.requests()[2]["secretHashes"].get(self.key_header()), self.key_hash(k2))
        d.finish()
        self.assertNoSecret(d, SECRET)
        self.assertNoSecret(d, k2)


    def test_unset_first_key_env_is_skipped_for_the_one_that_is_set(self):
        d, srv = self.start([{"text": "ok"}], provider={"apiKeyEnv": ["UNSET_E2E_KEY", "SET_E2E_KEY"]},
                            env={"UNSET_E2E_KEY": None, "SET_E2E_KEY": SECRET}, session=True)
        msgs = self.run_prompt(d, "q")
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "ok")
        self.assertEqual(srv.requests()[0]["secretHashes"].get(self.key_header()),
                         self.key_hash(SECRET))
        d.finish()
        self.assertNoSecret(d, SECRET)

    def test_quota_exceeded_429_switches_credential(self):
        k2 = "sk-e2e-quota-second-4c2a9e1b7d3f5a8c0e6b2d4f"
        d, srv = self.start([{"status": 429, "message": "You exceeded your current quota, please "
                              "check your plan and billing details."}, {"text": "ok"}],
                            provider={"apiKeyEnv": ["K1_E2E", "K2_E2E"]},
                            env={"K1_E2E": SECRET, "K2_E2E": k2})
        msgs = self.run_prompt(d, "q")
        self.assertEqual([(f["kind"], f["to"]) for f in events(msgs, "retry_fallback_applied")],
                         [("credential", "K2_E2E")])
        d.finish()

    # -- typed failures: status, the API's error body, headers ------

    def quota_body(self, message):
        """The API's own error shape for a spent quota, with a neutral message."""
        if self.API == "anthropic-messages":
            return ({"type": "error", "error": {"type": "billing_error", "message": message},
                     "request_id": "req_e2e"}, "anthropic-type:billing_error")
        return ({"error": {"message": message, "type": "insufficient_quota", "param": None,
                           "code": "insufficient_quota"}}, "openai-code:insufficient_quota")

    def test_a_spent_quota_in_the_error_body_ends_the_chain_at_once(self):
        body, rule = self.quota_body("Request failed.")
        d, srv = self.start([{"status": 400, "body": body}, {"text": "never"}])
        msgs = self.run_prompt(d, "q")
        # The text says nothing; the body's type/code decides.
        self.assertEqual(events(msgs, "auto_retry_start"), [])
        self.assertEqual(len(srv.requests()), 1, "a spent quota is not tried again")
        err = assistant_ends(msgs)[-1]["errorMessage"]
        self.assertTrue(err.endswith("(usage limit: no other credential or model to switch to)"), err)
        c = d.request({"type": "classify_error", "message": "Request failed.", "status": 400,
                       "body": json.dumps(body)})["data"]
        self.assertEqual((c["errorClass"], c["rule"]), ("usage_limit", rule))
        d.finish()

    def test_a_spent_quota_in_the_body_switches_to_the_next_credential(self):
        body, rule = self.quota_body("Request failed.")
        d, srv = self.start([{"status": 429, "body": body}, {"text": "ok"}],
                            provider={"apiKeyEnv": ["K1_E2E", "K2_E2E"]},
                            env={"K1_E2E": SECRET, "K2_E2E": "sk-e2e-other-5c7a9e1b3d"})
        msgs = self.run_prompt(d, "q")
        start = events(msgs, "auto_retry_start")
        self.assertEqual([(s["reason"], s["errorClass"], s["rule"]) for s in start],
                         [("credential-switch", "usage_limit", rule)])
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "ok")
        d.finish()

    def test_the_rate_limit_reset_header_with_the_date_header_sets_the_wait(self):
        # Anthropic's form (RFC 3339), made relative with the response's own Date
        # header; any API may send it.
        reset = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 2))
        d, srv = self.start([{"status": 429, "headers": {
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": reset}}, {"text": "ok"}],
            sets={"retry.baseDelayMs": 1})
        msgs = self.run_prompt(d, "q")
        start = events(msgs, "auto_retry_start")
        self.assertEqual([(s["reason"], s["errorClass"], s["rule"]) for s in start],
                         [("server-hint", "retryable", "http-status:429")])
        self.assertTrue(0 < start[0]["hintMs"] <= 3000, start[0])
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "ok")
        d.finish()

    def test_an_overloaded_body_is_an_overload_for_model_fallback(self):
        # A neutral message and a status that alone is no overload: only the
        # body's type says the model is saturated.
        if self.API == "anthropic-messages":
            body = {"type": "error", "error": {"type": "overloaded_error", "message": "Try later."}}
            rule = "anthropic-type:overloaded_error"
        else:
            body = {"error": {"message": "Try later.", "type": "server_error", "param": None,
                              "code": "engine_overloaded_error"}}
            rule = "openai-code:server_error"  # decides; the code sets the overload flag
        d, srv = self.start([{"status": 500, "body": body}, {"text": "ok"}],
                            sets={"retry.fallbackModels": ["m2"], "retry.fallbackAfterConsecutive": 1})
        msgs = self.run_prompt(d, "q")
        fb = events(msgs, "retry_fallback_applied")
        self.assertEqual([(f["kind"], f["to"], f.get("reason")) for f in fb], [("model", "m2", "overloaded")])
        self.assertEqual(events(msgs, "auto_retry_start")[0]["rule"], "http-status:500")
        c = d.request({"type": "classify_error", "message": "Try later.", "status": 500,
                       "body": json.dumps(body)})["data"]
        self.assertEqual((c["overload"], c["rule"]), (True, "http-status:500"))
        c = d.request({"type": "classify_error", "message": "Try later.", "body": json.dumps(body)})["data"]
        self.assertEqual((c["overload"], c["rule"]), (True, rule))
        d.finish()

    def test_the_exhausted_bucket_sets_the_wait_not_the_longer_one(self):
        d, srv = self.start([{"status": 429, "headers": {
            "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "200ms",
            "x-ratelimit-remaining-tokens": "9000", "x-ratelimit-reset-tokens": "6m0s"}}, {"text": "ok"}],
            sets={"retry.baseDelayMs": 1})
        msgs = self.run_prompt(d, "q")
        start = events(msgs, "auto_retry_start")
        self.assertEqual([(s["reason"], s.get("hintMs")) for s in start], [("server-hint", 200)])
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "ok")
        d.finish()

    def test_rate_limit_state_headers_on_a_spent_quota_are_not_its_reset_time(self):
        body, rule = self.quota_body("Request failed.")
        d, srv = self.start([{"status": 429, "body": body, "headers": {
            "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "8.64s"}},
            {"text": "never"}])
        msgs = self.run_prompt(d, "q")
        err = assistant_ends(msgs)[-1]["errorMessage"]
        self.assertTrue(err.endswith("(usage limit: no other credential or model to switch to)"), err)
        self.assertEqual(len(srv.requests()), 1)
        d.finish()


class OpenAICompletionsTests(HttpCase):
    API = "openai-completions"


class AnthropicMessagesTests(HttpCase):
    API = "anthropic-messages"

    def test_a_pi_style_base_url_without_v1_reaches_v1_messages(self):
        """pi's models.json names "https://api.anthropic.com" (its SDK adds
        /v1/messages); retryd's own entries name the /v1 folder."""
        srv = self.server([{"text": "from the root"}])
        d, _ = self.start(base_url=srv.url)
        msgs = self.run_prompt(d, "hi")
        self.assertEqual(text_of([m for m in msgs if m.get("type") == "message_end"][-1]["message"]),
                         "from the root")
        self.assertEqual(srv.wait_requests(1)[0]["path"], "/v1/messages")


del HttpCase  # only the two concrete classes run


class ProviderConfigTests(DaemonTestCase):
    """--provider and providers.NAME problems stop the daemon at startup."""

    def run_with(self, providers, name):
        with tempfile.TemporaryDirectory(prefix="retryd-e2e-http-") as tmp:
            path = os.path.join(tmp, "settings.json")
            with open(path, "w") as f:
                json.dump({"providers": providers}, f)
            return run_cli(["--provider", name, "--settings", path])

    def test_unknown_provider_exits_2_listing_the_providers(self):
        rc, out, err = self.run_with({"mine": {"api": "openai-completions",
                                               "baseUrl": "http://127.0.0.1:9/v1",
                                               "models": ["x"]}}, "nope")
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertIn("nope", err)
        for name in ("sim", "openai", "anthropic", "openrouter", "ollama", "mine"):
            self.assertIn(name, err)
        self.assertNotIn("AddressSanitizer", err)

    def test_malformed_provider_entry_exits_non_zero_naming_the_key(self):
        good = {"api": "openai-completions", "baseUrl": "http://127.0.0.1:9/v1", "models": ["x"]}
        cases = [
            ({"api": "openai-chat"}, "providers.bad.api"),
            ({"api": None}, "providers.bad.api"),
            ({"baseUrl": "ftp://127.0.0.1/v1"}, "providers.bad.baseUrl"),
            ({"baseUrl": 42}, "providers.bad.baseUrl"),
            ({"models": []}, "providers.bad.models"),
            ({"apiKeyEnv": 5}, "providers.bad.apiKeyEnv"),
            ({"apiKey": ["ok", ""]}, "providers.bad.apiKey"),
            ({"headers": {"X-A": 1}}, "providers.bad.headers"),
            ({"models": [7]}, "providers.bad.models[0]"),
            ({"models": [{"id": "x", "contextWindow": -5}]}, "providers.bad.models[0].contextWindow"),
            ({"models": [{"id": "x", "maxTokens": "many"}]}, "providers.bad.models[0].maxTokens"),
        ]
        for change, key in cases:
            with self.subTest(change=change):
                cfg = dict(good)
                cfg.update(change)
                cfg = {k: v for k, v in cfg.items() if v is not None}
                rc, out, err = self.run_with({"bad": cfg}, "bad")
                self.assertEqual(rc, 1, err)  # a settings error, not a usage one
                self.assertNotIn('"ready"', out)
                self.assertIn(key, err)
                self.assertNotIn("AddressSanitizer", err)


class Trap:
    """A loopback port that counts every connection made to it: the proxy
    of every other host, so a request that leaves for anywhere but the fake
    server shows here."""

    def __init__(self):
        import threading
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.connections = 0
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def env(self):
        """Every proxy variable curl reads, pointing here; loopback exempt."""
        env = {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        for name in ("http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
            env[name] = self.url
        return env

    def close(self):
        self.sock.close()


class EnvHostCase(DaemonTestCase):
    """A fake server for the env's host and a trap for every other one."""

    def setUp(self):
        self.srv = FakeServer([{"text": "from the env host"}], max_seconds=120).start()
        self.addCleanup(self.srv.stop)
        self.trap = Trap()
        self.addCleanup(self.trap.close)


class BaseUrlEnvTests(EnvHostCase):
    """The base-URL variables of the providers' own SDKs: the built-ins use
    them below providers.* settings and above the default, and a key goes
    to that host and nowhere else."""

    def answer(self, provider, key_env, url_env, url, settings=None, args=()):
        env = dict(self.trap.env())
        env.update({key_env: SECRET, url_env: url})
        d = self.spawn(args=["--provider", provider, "--no-session"] + list(args),
                       sets=FAST, env=env, settings=settings)
        msgs = self.run_prompt(d)
        return d, msgs

    def test_openai_base_url_env_takes_the_key_to_that_host_and_nowhere_else(self):
        d, msgs = self.answer("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", self.srv.url + "/v1/")
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "from the env host")
        reqs = self.srv.wait_requests(1)
        self.assertEqual(reqs[0]["path"], "/v1/responses")
        self.assertEqual(reqs[0]["secretHashes"]["authorization"],
                         hashlib.sha256(("Bearer " + SECRET).encode()).hexdigest()[:16])
        self.assertEqual(self.trap.connections, 0)

    def test_anthropic_base_url_env_without_v1_reaches_v1_messages(self):
        self.answer("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", self.srv.url)
        reqs = self.srv.wait_requests(1)
        self.assertEqual(reqs[0]["path"], "/v1/messages")
        self.assertIn("x-api-key", reqs[0]["secretHashes"])
        self.assertEqual(self.trap.connections, 0)

    def test_google_gemini_base_url_env_gets_the_api_version_as_the_sdk_adds_it(self):
        self.answer("google", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", self.srv.url + "/")
        reqs = self.srv.wait_requests(1)
        self.assertTrue(reqs[0]["path"].startswith("/v1beta/models/gemini-2.5-flash:"),
                        reqs[0]["path"])
        self.assertEqual(self.trap.connections, 0)

    def test_azure_openai_endpoint_is_the_builtin_azure_resource_and_gets_the_api_key(self):
        self.answer("azure", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT",
                    self.srv.url + "/openai/v1/")
        reqs = self.srv.wait_requests(1)
        self.assertEqual(reqs[0]["path"], "/openai/v1/responses?api-version=v1")
        self.assertEqual(reqs[0]["secretHashes"]["api-key"],
                         hashlib.sha256(SECRET.encode()).hexdigest()[:16])
        self.assertNotIn("authorization", reqs[0]["headers"])
        self.assertEqual(self.trap.connections, 0)

    def test_the_builtin_azure_without_an_endpoint_says_what_to_set(self):
        rc, out, err = run_cli(["--provider", "azure", "--no-session"],
                               env={"AZURE_OPENAI_ENDPOINT": None, "AZURE_OPENAI_API_KEY": SECRET})
        self.assertEqual(rc, 1, err)
        self.assertIn("retryd: providers.azure.baseUrl is not set: set AZURE_OPENAI_ENDPOINT", err)
        self.assertNotIn(SECRET, out + err)

    def test_a_providers_base_url_setting_beats_the_env_variable(self):
        settings = {"providers": {"openai": {"baseUrl": self.srv.url + "/v1"}}}
        self.answer("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", self.trap.url + "/v1",
                    settings=settings)
        self.assertEqual(len(self.srv.wait_requests(1)), 1)
        self.assertEqual(self.trap.connections, 0)

    def test_a_malformed_base_url_env_is_an_error_naming_it_and_sends_nothing(self):
        for value in ("api.openai.com/v1", "https://", "https://exa mple.com/v1", "ftp://x/v1"):
            with self.subTest(value=value):
                env = dict(self.trap.env(), OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=value)
                rc, out, err = run_cli(["--provider", "openai", "--no-session"], env=env,
                                       stdin_data=b'{"type":"prompt","message":"hi"}\n')
                self.assertEqual(rc, 1, err)
                self.assertNotIn('"ready"', out)
                self.assertIn("OPENAI_BASE_URL is not an http:// or https:// URL with a host", err)
                self.assertIn("providers.openai.baseUrl", err)
                self.assertNotIn(SECRET, out + err)
        self.assertEqual(self.trap.connections, 0)
        self.assertEqual(self.srv.requests(), [])

    def test_a_malformed_base_url_env_of_another_provider_does_not_stop_the_simulator(self):
        rc, out, err = run_cli(["--no-session", "--sim-plan", '[{"text":"fine"}]'],
                               env={"OPENAI_BASE_URL": "not a url"},
                               stdin_data=b'{"type":"prompt","message":"hi"}\n')
        self.assertEqual(rc, 0, err)
        self.assertIn('"agent_end"', out)

    def test_retryd_config_names_the_env_variable_as_the_origin(self):
        env = {"OPENAI_BASE_URL": self.srv.url + "/v1", "OLLAMA_HOST": "gpu-box",
               "GOOGLE_GEMINI_BASE_URL": "https://gw.example/gemini"}
        rc, out, err = run_cli(["config"], env=env)
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertIn('env OPENAI_BASE_URL\tproviders.openai.baseUrl="%s/v1"' % self.srv.url, lines)
        self.assertIn('env OLLAMA_HOST\tproviders.ollama.baseUrl="http://gpu-box:11434/v1"', lines)
        self.assertIn('env GOOGLE_GEMINI_BASE_URL\tproviders.google.baseUrl='
                      '"https://gw.example/gemini/v1beta"', lines)
        # The keys people look for come before the long provider entries.
        first_provider = min(i for i, l in enumerate(lines) if "\tproviders." in l)
        last_retry = max(i for i, l in enumerate(lines) if "\tretry." in l)
        self.assertLess(last_retry, first_provider)


class BuiltinReasoningTests(EnvHostCase):
    """The built-in models that reason are marked so: set_thinking_level
    reaches the request of the built-in provider, as the README says."""

    def test_set_thinking_level_high_on_the_builtin_anthropic_sends_the_thinking_budget(self):
        env = dict(self.trap.env(), ANTHROPIC_API_KEY=SECRET, ANTHROPIC_BASE_URL=self.srv.url)
        d = self.spawn(args=["--provider", "anthropic", "--no-session"], sets=FAST, env=env)
        resp = d.request({"type": "set_thinking_level", "level": "high"})
        self.assertTrue(resp["success"], resp)
        self.run_prompt(d)
        body = self.srv.wait_requests(1)[0]["body"]
        self.assertEqual(body["model"], "claude-sonnet-4-5")
        self.assertEqual(body["thinking"]["type"], "enabled")
        self.assertEqual(body["thinking"]["budget_tokens"], 16384)
        self.assertEqual(body["max_tokens"], 32000 + 16384)

    def test_the_builtin_reasoning_models_say_so_in_get_available_models(self):
        expect = {"anthropic": {"claude-sonnet-4-5": True, "claude-haiku-4-5": True,
                                "claude-opus-4-1": True},
                  "openai": {"gpt-5": True, "o4-mini": True, "gpt-4.1-mini": False},
                  "google": {"gemini-2.5-pro": True}}
        for provider, models in expect.items():
            with self.subTest(provider=provider):
                d = self.spawn(args=["--provider", provider, "--no-session"], sets=FAST,
                               env={"OPENAI_API_KEY": SECRET})
                got = {m["id"]: m.get("reasoning")
                       for m in d.request({"type": "get_available_models"})["data"]["models"]}
                for model, reasoning in models.items():
                    self.assertEqual(got.get(model), reasoning, (model, got))
                d.finish()

    def test_the_builtin_openai_reasoning_model_sends_the_effort(self):
        env = dict(self.trap.env(), OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=self.srv.url + "/v1")
        d = self.spawn(args=["--provider", "openai", "--model", "gpt-5", "--no-session"],
                       sets=FAST, env=env)
        self.assertTrue(d.request({"type": "set_thinking_level", "level": "high"})["success"])
        self.run_prompt(d)
        body = self.srv.wait_requests(1)[0]["body"]
        self.assertEqual(body["reasoning"]["effort"], "high")


if __name__ == "__main__":
    unittest.main()

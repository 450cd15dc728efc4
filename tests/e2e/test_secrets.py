"""Secrets on every outbound path, through the binary.

A key of each shape (OpenAI sk-proj-, Anthropic sk-ant-, Google AIza, xAI
xai-, Groq gsk_, a bearer token) and a configured key with no shape at all
are planted (a) in an HTTP error body, also where the 300-byte cut falls
inside the key, (b) in a streamed HTTP answer split across deltas and TCP
writes, (c) in an agent CLI's stderr (across its 512-byte line cut) and
text deltas. None of them may show on stdout, in the session file or in the
log at RETRYD_LOG=debug; retryd's own ids stay as they are.
"""
import json
import os
import sys

from harness import DaemonTestCase, text_of

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_AGENT = os.path.join(os.path.dirname(HERE), "fixtures", "bin", "fake_agent")
GEMINI_FIXTURE = os.path.join(os.path.dirname(HERE), "fixtures", "cli", "gemini-success.jsonl")

KEY_ENV = "RETRYD_E2E_SECRET_KEY"
# Configured, 39 characters, and no shape: short dash-separated words, no
# digits, so only the registry can know it is a key.
PLAIN = "Quiet-Harbor-Lantern-Velvet-Orchid-Mist"
# Never configured: known by their shape only. (shape, key, what is left)
SHAPED = [
    ("openai", "sk-proj-Tq3Vx9Lm2Rn7Wb4Yc8Zd1Fg6Hj5Kp0Ms", "sk-***"),
    ("anthropic", "sk-ant-api03-Nf4Gh7Jk2Lq9Wr3Ty6Ui1Op8As5Dz0Xc-Vb", "sk-***"),
    ("google", "AIzaSyQ4wE7rT1yU9iO3pA6sD2fG8hJ5kL0zXcV", "AIza***"),
    ("xai", "xai-Pm8Nb3Vc6Xz1Lk4Jh7Gf2Ds9Aq5Wr0Ey", "xai-***"),
    ("groq", "gsk_Hy6Tr2Ew9Qa4Sd7Fg1Jk3Lz8Xc5Vb0Nm", "gsk_***"),
    ("bearer", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.Rk9PQkFSc2ln", "Bearer ***"),
]
ALL_KEYS = [PLAIN] + [k for _, k, _ in SHAPED]
FAST = {"retry.baseDelayMs": 10}


def secret_part(key):
    """What must never show of a key: all of it after its public prefix."""
    for _, k, left in SHAPED:
        if k == key:
            return key[len(left) - 3:]
    return key


def pieces(key, size=8):
    """Every size-byte piece of the secret part of a key."""
    s = secret_part(key)
    return {s[i:i + size] for i in range(len(s) - size + 1)}


def with_keys(sep=" "):
    """A sentence quoting every key, and the same sentence masked."""
    plain = "key one %s then" % PLAIN
    masked = "key one *** then"
    for name, key, left in SHAPED:
        plain += "%s%s: %s," % (sep, name, key)
        masked += "%s%s: %s," % (sep, name, left)
    return plain + " end", masked + " end"


class SecretsCase(DaemonTestCase):

    def assertNoKey(self, d, session=None, keys=ALL_KEYS):
        """No key, nor any 8-byte piece of one, on stdout, in the log or the
        session file."""
        places = [("stdout", "\n".join(d.raw_lines())), ("the log", d.stderr_text())]
        if session is not None:
            with open(session, encoding="utf-8") as f:
                places.append(("the session file", f.read()))
        leaks = []
        for where, text in places:
            for key in keys:
                for piece in sorted(pieces(key)):
                    if piece in text:
                        i = text.index(piece)
                        leaks.append("%s: %r of %r in ...%s..." % (where, piece, key,
                                                                    text[max(0, i - 60):i + 60]))
                        break
        self.assertEqual(leaks, [])

    # -- HTTP -------------------------------------------------------------------

    def http(self, plan, api="openai-completions", sets=None):
        srv = FakeServer(plan, max_seconds=120).start()
        self.addCleanup(srv.stop)
        cfg = {"api": api, "baseUrl": srv.url + "/v1", "apiKeyEnv": KEY_ENV, "models": ["m1"]}
        all_sets = dict(FAST)
        all_sets.update(sets or {})
        d = self.spawn(args=["--provider", "fake", "--session", "{tmp}/session.jsonl"],
                       settings={"providers": {"fake": cfg}}, sets=all_sets,
                       env={KEY_ENV: PLAIN, "RETRYD_LOG": "debug"})
        return d, srv, os.path.join(d.tmp, "session.jsonl")

    @staticmethod
    def assistant_ends(msgs):
        return [m["message"] for m in msgs
                if m.get("type") == "message_end" and m["message"]["role"] == "assistant"]


class HttpErrorTests(SecretsCase):

    def test_a_configured_key_cut_by_the_error_length_limit_leaves_no_piece(self):
        # The message is cut at 300 bytes; the key starts so that the cut
        # leaves 1, 8, 16, 23, 30 or 38 of its 39 characters before it.
        offsets = [299, 292, 284, 277, 270, 262]
        plan = [{"status": 401, "message": "x" * off + PLAIN + " and the rest"} for off in offsets]
        for api in ("openai-completions", "anthropic-messages"):
            with self.subTest(api=api):
                d, srv, session = self.http(plan, api=api)
                for off in offsets:
                    [end] = self.assistant_ends(self.run_prompt(d, "q"))
                    self.assertEqual(end["stopReason"], "error")
                    self.assertTrue(end["errorMessage"].startswith("401 " + "x" * off), end)
                    self.assertNotIn("Quiet", end["errorMessage"])
                d.finish()
                self.assertNoKey(d, session)

    def test_every_key_shape_in_an_error_body_is_masked_everywhere(self):
        text, _ = with_keys()
        d, srv, session = self.http([{"status": 401, "message": text},
                                     {"status": 400, "body": text, "contentType": "text/plain"},
                                     {"status": 429, "message": text}, {"text": "fine"}])
        for _ in range(2):
            [end] = self.assistant_ends(self.run_prompt(d, "q"))
            self.assertEqual(end["stopReason"], "error")
            self.assertIn("key one *** then", end["errorMessage"])
        msgs = self.run_prompt(d, "q")  # a retried 429 quoting them, then an answer
        self.assertIn("auto_retry_start", [m.get("type") for m in msgs])
        d.request({"type": "get_messages"})
        d.request({"type": "get_state"})
        d.request({"type": "get_session_stats"})
        d.finish()
        self.assertNoKey(d, session)

    def test_a_configured_key_cut_inside_a_stream_error_event_leaves_no_piece(self):
        plan = [{"streamError": {"message": "x" * off + PLAIN + " tail", "type": "server_error"},
                 "text": "partial", "errorAfterChunks": 1} for off in (260, 280, 290)]
        d, srv, session = self.http(plan, sets={"retry.maxRetries": 0})
        for _ in plan:
            [end] = self.assistant_ends(self.run_prompt(d, "q"))
            self.assertEqual(end["stopReason"], "error")
        d.finish()
        self.assertNoKey(d, session)


class HttpStreamTests(SecretsCase):

    def test_keys_split_across_streamed_deltas_are_masked_whole(self):
        text, masked = with_keys()
        counts = [len(text) // 3, len(text) // 7, len(text) // 11, len(text) // 29, len(text)]
        plan = [{"text": text, "chunks": n} for n in counts] + \
               [{"text": text, "chunks": 40, "writeBytes": 7}]
        for api in ("openai-completions", "anthropic-messages"):
            with self.subTest(api=api):
                d, srv, session = self.http(plan, api=api)
                for _ in plan:
                    msgs = self.run_prompt(d, "q")
                    [end] = self.assistant_ends(msgs)
                    self.assertEqual((end["stopReason"], text_of(end)), ("stop", masked))
                    streamed = "".join(m["assistantMessageEvent"]["delta"] for m in msgs
                                       if m.get("type") == "message_update" and
                                       m["assistantMessageEvent"]["type"] == "text_delta")
                    self.assertEqual(streamed, masked)
                d.request({"type": "get_messages"})
                d.finish()
                self.assertNoKey(d, session)

    def test_retryd_ids_stay_as_they_are_while_keys_are_masked(self):
        text, masked = with_keys()
        d, srv, session = self.http([{"text": text, "chunks": 9}])
        msgs = self.run_prompt(d, "q")
        self.assertEqual(text_of(self.assistant_ends(msgs)[0]), masked)
        state = d.request({"type": "get_state"})["data"]
        stats = d.request({"type": "get_session_stats"})["data"]
        d.finish()
        with open(session, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual(lines[0]["type"], "session")
        self.assertEqual(lines[0]["id"], state["sessionId"])
        self.assertEqual(stats["sessionId"], state["sessionId"])
        self.assertEqual(state["sessionFile"], session)
        self.assertNotIn("*", state["sessionId"])
        saved = [m["message"] for m in lines[1:] if m.get("type") == "message"]
        self.assertEqual([(m["role"], m.get("provider"), m.get("model")) for m in saved],
                         [("user", None, None), ("assistant", "fake", "m1")])
        self.assertEqual(text_of(saved[1]), masked)
        self.assertNoKey(d, session)


# -- agent CLIs -------------------------------------------------------------------

def gemini_lines(session_id, deltas):
    with open(GEMINI_FIXTURE) as f:
        result = json.loads(f.read().splitlines()[-1])
    return [{"type": "init", "session_id": session_id, "model": "gemini-2.5-pro"}] + \
        [{"type": "message", "role": "assistant", "content": t, "delta": True} for t in deltas] + \
        [result]


class PromptTests(SecretsCase):

    def test_a_key_pasted_into_a_prompt_is_masked_on_stdout_and_in_the_file_but_sent_as_written(self):
        # The user's words reach the provider as written (a masked prompt
        # asks about something else); what retryd prints and stores of
        # them is masked.
        plain, masked = with_keys()
        d, srv, session = self.http([{"text": "ok"}, {"text": "ok2"}])
        msgs = self.run_prompt(d, plain)
        user = [m["message"] for m in msgs
                if m.get("type") == "message_start" and m["message"]["role"] == "user"][0]
        self.assertEqual(text_of(user), masked)
        got = d.request({"type": "get_messages"})["data"]["messages"][0]
        self.assertEqual(text_of(got), masked)
        self.run_prompt(d, "again")
        for req in srv.requests()[:2]:
            sent = [m for m in req["body"]["messages"] if m["role"] == "user"][0]
            content = sent["content"]
            if not isinstance(content, str):
                content = "".join(p.get("text", "") for p in content)
            self.assertEqual(content, plain, "the prompt went upstream changed")
        d.finish()
        self.assertNoKey(d, session)


    def test_a_key_after_a_newline_tab_quote_or_at_the_start_of_a_prompt_is_masked(self):
        # Masking runs on serialized JSON, where a newline before a key is
        # backslash + n: the n must not read as part of the key.
        prompts = []
        for sep in ("\n", "\t", "\r\n", "\"", "\\", "\x0b"):
            plain, masked = "my keys:", "my keys:"
            for _, key, left in SHAPED:
                plain += sep + key
                masked += sep + left
            prompts.append((plain, masked))
        first = SHAPED[0][1]
        prompts.append((first + " starts the prompt", "sk-*** starts the prompt"))
        quoted = json.dumps({"tool": "read", "result": {"env": "OPENAI_API_KEY=" + first,
                                                        "k": first}})
        prompts.append((quoted, quoted.replace(first, "sk-***")))
        d, srv, session = self.http([{"text": "ok"}] * len(prompts))
        for plain, masked in prompts:
            msgs = self.run_prompt(d, plain)
            user = [m["message"] for m in msgs
                    if m.get("type") == "message_start" and m["message"]["role"] == "user"][0]
            self.assertEqual(text_of(user), masked)
        d.finish()
        self.assertNoKey(d, session)


class CliTests(SecretsCase):

    SID = "7bffa130-8c69-4cf8-ac8a-0d36b2d99f53"

    def cli(self, plan, log="debug", sets=None):
        self.dir = __import__("tempfile").mkdtemp(prefix="retryd-e2e-agent-")
        self.addCleanup(lambda: __import__("shutil").rmtree(self.dir, ignore_errors=True))
        with open(os.path.join(self.dir, "plan.json"), "w") as f:
            json.dump(plan, f)
        s = {"providers.gemini.command": FAKE_AGENT, "retry.baseDelayMs": 10,
             "providers.gemini.env": {"FAKE_TOKEN": PLAIN}}
        s.update(sets or {})
        d = self.spawn(args=["--provider", "gemini", "--session", "{tmp}/session.jsonl"], sets=s,
                       env={"FAKE_AGENT_DIR": self.dir, "RETRYD_LOG": log})
        return d, os.path.join(d.tmp, "session.jsonl")

    def test_keys_in_a_clis_text_deltas_and_stderr_are_masked_everywhere(self):
        text, masked = with_keys()
        deltas = [text[i:i + 5] for i in range(0, len(text), 5)]
        deltas2 = [text[i:i + 13] for i in range(0, len(text), 13)]
        # The stderr line is cut at 512 bytes: the key straddles the cut.
        long_line = "e" * 490 + PLAIN + " tail"
        stderr = ["auth failed: " + text, long_line]
        d, session = self.cli([{"lines": gemini_lines(self.SID, deltas), "stderr": stderr},
                               {"lines": gemini_lines(self.SID, deltas2)},
                               {"stderr": stderr, "exit": 1}],
                              sets={"retry.maxRetries": 0})
        for _ in range(2):
            [end] = self.assistant_ends(self.run_prompt(d, "q"))
            self.assertEqual((end["stopReason"], text_of(end)), ("stop", masked))
        [end] = self.assistant_ends(self.run_prompt(d, "q"))
        self.assertEqual(end["stopReason"], "error")
        self.assertTrue(end["errorMessage"].startswith("agent exited without a result (exit 1): " +
                                                       "e" * 490), end["errorMessage"])
        d.request({"type": "get_messages"})
        d.finish()
        calls = [json.loads(line) for line in open(os.path.join(self.dir, "calls.jsonl"))]
        self.assertEqual(calls[0]["env"]["FAKE_TOKEN"], PLAIN)
        self.assertNoKey(d, session)

    def test_the_clis_session_id_is_logged_only_at_debug_and_only_in_part(self):
        plan = [{"lines": gemini_lines(self.SID, ["one"])},
                {"lines": gemini_lines(self.SID, ["two"])}]
        for log in ("info", "debug"):
            with self.subTest(log=log):
                d, session = self.cli(plan, log=log)
                self.run_prompt(d, "q")
                self.run_prompt(d, "q2")  # resumes the CLI's session
                d.finish()
                calls = [json.loads(line) for line in open(os.path.join(self.dir, "calls.jsonl"))]
                self.assertIn(self.SID, calls[1]["argv"])
                log_text = d.stderr_text()
                self.assertNotIn(self.SID, log_text)
                self.assertNotIn(self.SID[:13], log_text)
                if log == "info":
                    self.assertNotIn(self.SID[:8], log_text)
                    self.assertIn("resuming its session", log_text)
                else:
                    self.assertIn("session %s\u2026" % self.SID[:8], log_text)

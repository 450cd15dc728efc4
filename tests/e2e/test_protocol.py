"""Framing, parsing, responses and errors of the RPC protocol."""
import base64
import json
import random
import re

from harness import (DaemonTestCase, has_whitespace_outside_strings, is_response, is_type,
                     run_cli, signature, text_of)

UNSUPPORTED = ["bash", "abort_bash", "compact", "set_auto_compaction", "export_html",
               "switch_session", "fork", "get_fork_messages", "cycle_model",
               "extension_ui_response"]


class StartupTests(DaemonTestCase):
    def test_first_line_is_exactly_the_ready_frame(self):
        d = self.spawn(expect_ready=False)
        first = d.recv()
        self.assertEqual(first, {"type": "ready"})
        self.assertEqual(d.raw_lines()[0], '{"type":"ready"}')
        d.finish()

    def test_idle_daemon_exits_0_on_stdin_eof_with_only_ready_written(self):
        d = self.spawn()
        d.finish()
        self.assertEqual(d.raw_lines(), ['{"type":"ready"}'])


class FramingTests(DaemonTestCase):
    def test_trailing_cr_is_stripped(self):
        d = self.spawn()
        # A CR-only line is blank once its CR is stripped: no answer for it.
        d.send(b'\r\n{"type":"get_state","id":"crlf"}\r\n\r\n')
        r = d.recv()
        self.assertEqual((r["type"], r["command"], r["id"], r["success"]),
                         ("response", "get_state", "crlf", True))
        d.send({"type": "get_state", "id": "next"})
        self.assertEqual(d.recv()["id"], "next")
        d.finish()

    def test_blank_lines_are_ignored(self):
        d = self.spawn()
        d.send(b'\n\n   \n\t\n\r\n{"type":"get_state","id":"after-blanks"}\n\n')
        r = d.recv()
        self.assertEqual(r.get("id"), "after-blanks")
        d.send({"type": "get_state", "id": "next"})
        self.assertEqual(d.recv().get("id"), "next")
        d.finish()
        self.assertEqual(len(d.seen()), 3)  # ready + two responses, nothing for blanks

    def test_line_split_across_writes_is_reassembled(self):
        d = self.spawn()
        d.send(b'{"type":"get_st')
        d.expect_silence(0.1)  # an unfinished line gets no answer
        d.send(b'ate","id":"split"}\n')
        r = d.recv()
        self.assertEqual((r["command"], r["id"], r["success"]), ("get_state", "split", True))
        d.finish()

    def test_several_commands_in_one_write_are_answered_in_order(self):
        d = self.spawn()
        d.send(b'{"type":"get_state","id":"a"}\n{"type":"get_messages","id":"b"}\n'
               b'{"type":"get_state","id":"c"}\n')
        got = [d.recv() for _ in range(3)]
        self.assertEqual([(r["id"], r["command"]) for r in got],
                         [("a", "get_state"), ("b", "get_messages"), ("c", "get_state")])
        d.finish()

    def test_final_line_without_newline_is_handled_at_eof(self):
        d = self.spawn()
        d.send(b'{"type":"get_state","id":"last"}')
        d.close_stdin()
        r = d.recv()
        self.assertEqual((r["id"], r["success"]), ("last", True))
        d.assert_clean_exit()

    def test_1000_pipelined_commands_in_one_write_are_all_answered_in_order(self):
        d = self.spawn()
        kinds = ["get_state", "get_messages", "no_such_command", "get_last_assistant_text",
                 "abort_retry"]
        lines = []
        for i in range(1000):
            lines.append(json.dumps({"type": kinds[i % len(kinds)], "id": "p%d" % i},
                                    separators=(",", ":")))
        d.send(("\n".join(lines) + "\n").encode())
        got = [d.recv(timeout=10) for _ in range(1000)]
        self.assertEqual([r.get("id") for r in got], ["p%d" % i for i in range(1000)])
        self.assertTrue(all(r["type"] == "response" for r in got))
        self.assertEqual([r["command"] for r in got], [kinds[i % len(kinds)] for i in range(1000)])
        self.assertEqual([r["success"] for r in got],
                         [kinds[i % len(kinds)] != "no_such_command" for i in range(1000)])
        for r in got:  # {"id"?, "type", "command", "success", "data"? | "error"}
            allowed = {"id", "type", "command", "success", "data" if r["success"] else "error"}
            self.assertLessEqual(set(r), allowed, r)
            if not r["success"]:
                self.assertIsInstance(r["error"], str)
        d.finish()
        self.assertEqual(len(d.seen()), 1001)


class OversizeLineTests(DaemonTestCase):
    LIMIT = 1000

    def _daemon(self):
        return self.spawn(sets={"rpc.maxLineBytes": self.LIMIT}, args=["--no-session"])

    @staticmethod
    def _line(size, id_="big"):
        """A valid get_state command of exactly `size` bytes (without the LF)."""
        head = '{"type":"get_state","id":"%s","pad":"' % id_
        tail = '"}'
        return (head + "x" * (size - len(head) - len(tail)) + tail).encode()

    def _assert_oversize_error(self, r, id=None):
        self.assertEqual(r["type"], "response")
        self.assertEqual(r["command"], "parse")
        self.assertIs(r["success"], False)
        self.assertTrue(r["error"].startswith("Failed to parse command:"), r["error"])
        if id is None:
            self.assertNotIn("id", r)
        else:
            self.assertEqual(r["id"], id)

    def test_line_over_max_line_bytes_gets_one_parse_error_and_next_line_works(self):
        d = self._daemon()
        big = json.dumps({"type": "prompt", "id": "huge", "message": "y" * 5000}).encode()
        d.send(big + b'\n{"type":"get_state","id":"after"}\n')
        self._assert_oversize_error(d.recv(), id="huge")
        r = d.recv()
        self.assertEqual((r["id"], r["command"], r["success"]), ("after", "get_state", True))
        self.assertFalse(r["data"]["isStreaming"])  # the oversize prompt never ran
        d.finish()
        self.assertEqual(len(d.seen()), 3)

    def test_oversize_line_spanning_many_reads_gives_exactly_one_error(self):
        d = self._daemon()
        # 400 kB: far more than one read of stdin; the rest of the line is discarded.
        d.send(b'{"type":"get_state","id":"huge","pad":"' + b"z" * 400000)
        d.send(b'"}\n{"type":"get_state","id":"after"}\n')
        self._assert_oversize_error(d.recv(), id="huge")
        self.assertEqual(d.recv().get("id"), "after")
        d.finish()
        self.assertEqual(len(d.seen()), 3)

    def test_an_oversize_line_keeps_its_id_only_when_its_start_holds_it_whole(self):
        d = self._daemon()
        # A numeric id after the type, the line cut far beyond it.
        d.send(b'{"type":"prompt","id":17,"message":"' + b"y" * 5000 + b'"}\n')
        self._assert_oversize_error(d.recv(), id=17)
        # The id behind the cut: no id rather than a guess.
        d.send(b'{"type":"prompt","message":"' + b"y" * 5000 + b'","id":"late"}\n')
        self._assert_oversize_error(d.recv())
        d.finish()

    def test_a_megabyte_line_is_fine_under_the_default_limit(self):
        d = self.spawn(args=["--no-session"])
        big = "x" * (1 << 20)
        msgs = self.run_prompt(d, big)
        self.assertIs(msgs[0]["success"], True)
        self.assertEqual(text_of(msgs[-1]["messages"][-1]), big)
        d.finish()

    def test_line_of_exactly_max_line_bytes_is_accepted(self):
        d = self._daemon()
        d.send(self._line(self.LIMIT, "fits") + b"\n")
        r = d.recv()
        self.assertEqual((r.get("id"), r["success"]), ("fits", True))
        d.send(self._line(self.LIMIT + 1, "over") + b"\n")
        self._assert_oversize_error(d.recv(), id="over")
        d.finish()


class ParseErrorTests(DaemonTestCase):
    def _bad(self, d, raw):
        d.send(raw)
        r = d.recv()
        self.assertEqual(r["type"], "response")
        self.assertIs(r["success"], False)
        self.assertIsInstance(r.get("error"), str)
        self.assertTrue(r["error"])
        return r

    def test_non_json_line_is_a_parse_error_and_the_daemon_goes_on(self):
        d = self.spawn()
        for raw in (b"not json\n", b"{\"type\":\"get_state\"\n", b"{]\n"):
            r = self._bad(d, raw)
            self.assertEqual(r["command"], "parse")
            self.assertTrue(r["error"].startswith("Failed to parse command:"), r["error"])
            self.assertNotIn("id", r)
        self.assertEqual(d.request({"type": "get_state"})["success"], True)
        d.finish()

    def test_invalid_utf8_is_a_parse_error(self):
        d = self.spawn()
        r = self._bad(d, b'{"type":"get_state","id":"\xff\xfe"}\n')
        self.assertEqual(r["command"], "parse")
        self.assertTrue(r["error"].startswith("Failed to parse command:"), r["error"])
        r = self._bad(d, b'{"type":"prompt","message":"caf\xc3"}\n')
        self.assertEqual(r["command"], "parse")
        self.assertTrue(r["error"].startswith("Failed to parse command:"), r["error"])
        self.assertEqual(d.request({"type": "get_state"})["success"], True)
        d.finish()

    def test_json_that_is_not_an_object_is_a_parse_error(self):
        d = self.spawn()
        for raw in (b"[1,2]\n", b'"get_state"\n', b"42\n", b"null\n", b"true\n"):
            r = self._bad(d, raw)
            self.assertEqual(r["command"], "parse", raw)
            self.assertNotIn("id", r)
        d.finish()

    def test_object_without_string_type_is_a_parse_error_with_id_echoed(self):
        d = self.spawn()
        r = self._bad(d, b'{"id":"no-type"}\n')
        self.assertEqual((r["command"], r.get("id")), ("parse", "no-type"))
        r = self._bad(d, b'{"id":"num-type","type":5}\n')
        self.assertEqual((r["command"], r.get("id")), ("parse", "num-type"))
        r = self._bad(d, b'{"type":null}\n')
        self.assertEqual(r["command"], "parse")
        d.finish()

    def test_unknown_command_names_it_and_echoes_id(self):
        d = self.spawn()
        r = self._bad(d, b'{"type":"frobnicate","id":"u1"}\n')
        self.assertEqual(r, {"id": "u1", "type": "response", "command": "frobnicate",
                             "success": False, "error": "Unknown command: frobnicate"})
        d.finish()

    def test_unknown_or_unsupported_type_is_reported_even_with_a_bad_id(self):
        d = self.spawn()
        r = self._bad(d, b'{"id":{"n":7},"type":"frobnicate"}\n')
        self.assertEqual(r, {"type": "response", "command": "frobnicate", "success": False,
                             "error": "Unknown command: frobnicate"})
        r = self._bad(d, b'{"id":[7],"type":"bash"}\n')
        self.assertEqual((r["command"], r["error"]),
                         ("bash", "bash is not supported: retryd runs no shell commands"))
        self.assertNotIn("id", r)
        # A command retryd runs still gets the id error, before its own fields.
        r = self._bad(d, b'{"id":[7],"type":"prompt"}\n')
        self.assertEqual((r["command"], r["error"]),
                         ("prompt", 'prompt: field "id" must be a string, a number, true, false '
                                    'or null, not an array'))
        self.assertNotIn("id", r)
        d.finish()

    def test_id_is_echoed_on_success_and_absent_when_not_given(self):
        d = self.spawn()
        d.send({"type": "get_state", "id": "with-id"})
        self.assertEqual(d.recv()["id"], "with-id")
        d.send({"type": "get_state"})
        r = d.recv()
        self.assertEqual(r["command"], "get_state")
        self.assertNotIn("id", r)
        d.finish()

    def test_switch_session_refusal_points_at_open_session_and_resume_rather_than_denying_it(self):
        d = self.spawn()
        r = self._bad(d, b'{"id":"w","type":"switch_session","sessionPath":"/tmp/x.jsonl"}\n')
        self.assertEqual(r["error"], 'switch_session is not supported: send open_session '
                                     '{"sessionDir": FILE} to switch, or start retryd with '
                                     '--resume FILE (or --continue for the newest)')
        d.finish()

    def test_every_scalar_id_is_echoed_as_the_same_json_value(self):
        d = self.spawn()
        for raw, want in ((b"7", "7"), (b"-3", "-3"), (b"2.5", "2.5"), (b"1.0", "1.0"),
                          (b"1e3", "1000.0"), (b"true", "true"), (b"false", "false"),
                          (b'"s"', '"s"')):
            with self.subTest(id=raw):
                d.send(b'{"type":"get_state","id":' + raw + b'}\n')
                r = d.recv()
                line = d.lines[d.pos - 1].raw
                line = line.decode() if isinstance(line, bytes) else line
                self.assertEqual(r["command"], "get_state")
                self.assertEqual(r["id"], json.loads(raw))
                self.assertEqual(type(r["id"]), type(json.loads(raw)))
                self.assertTrue(line.startswith('{"id":' + want + ','), line)
        # Unknown commands keep it too, where pi drops it.
        r = self._bad(d, b'{"id":7,"type":"frobnicate"}\n')
        self.assertEqual(r["id"], 7)
        d.finish()

    def test_a_numeric_prompt_id_is_echoed_in_the_response_and_the_prompt_result(self):
        d = self.spawn(plan=[{"text": "ok"}], settled=True)
        d.send(b'{"type":"prompt","id":41,"message":"hi"}\n')
        msgs = d.collect_until(lambda m: m.get("type") == "prompt_result", what="prompt_result")
        resp = [m for m in msgs if m.get("type") == "response"][0]
        self.assertEqual(resp["id"], 41)
        self.assertEqual(msgs[-1]["id"], 41)
        self.assertIsInstance(msgs[-1]["id"], int)
        d.finish()

    def test_missing_or_mistyped_fields_are_errors_naming_the_field(self):
        cases = [
            ({"type": "prompt"}, "message"),
            ({"type": "prompt", "message": 5}, "message"),
            ({"type": "prompt", "message": "x", "streamingBehavior": "later"}, "streamingBehavior"),
            ({"type": "prompt", "message": "x", "images": "nope"}, "images"),
            ({"type": "steer"}, "message"),
            ({"type": "follow_up", "message": ["x"]}, "message"),
            ({"type": "set_auto_retry"}, "enabled"),
            ({"type": "set_auto_retry", "enabled": "yes"}, "enabled"),
            ({"type": "set_auto_retry", "enabled": 1}, "enabled"),
            ({"type": "set_model", "provider": "sim"}, "modelId"),
            ({"type": "set_steering_mode", "mode": "sometimes"}, "mode"),
            ({"type": "set_session_name"}, "name"),
        ]
        d = self.spawn(args=["--no-session"])
        for i, (cmd, field) in enumerate(cases):
            with self.subTest(cmd=cmd):
                cmd = dict(cmd, id="f%d" % i)
                d.send(cmd)
                r = d.recv()
                self.assertEqual((r["type"], r["command"], r.get("id"), r["success"]),
                                 ("response", cmd["type"], cmd["id"], False))
                self.assertIn(field, r["error"])
        # None of them started anything.
        self.assertFalse(d.request({"type": "get_state"})["data"]["isStreaming"])
        d.finish()

    def test_pi_commands_that_do_not_apply_are_refused_as_not_supported(self):
        d = self.spawn()
        for name in UNSUPPORTED:
            with self.subTest(command=name):
                d.send({"type": name, "id": "x-" + name, "command": "ls"})
                r = d.recv()
                self.assertEqual((r["command"], r.get("id"), r["success"]),
                                 (name, "x-" + name, False))
                self.assertIn("is not supported", r["error"])
        d.finish()


def _image(data, mime="image/png"):
    return {"type": "image", "data": data, "mimeType": mime}


class ImageTests(DaemonTestCase):
    GOOD = _image("aGk=")
    NOT_BASE64 = [
        ("", "it is empty"),
        ("aGk", "its length 3 is not a multiple of 4; is the '=' padding missing?"),
        ("A===", "'=' at byte 1: padding is one or two '=' at the end only"),
        ("aGk=aGk=", "'=' at byte 3: padding is one or two '=' at the end only"),
        ("aGVs\nbG8=", "a newline at byte 4; whitespace and line breaks are not accepted"),
        ("aGk=\n", "a newline at byte 4; whitespace and line breaks are not accepted"),
        ("ab-_", "'-' at byte 2 is URL-safe base64; use the standard alphabet with '+' and '/'"),
        ("ab\u00e9c", "byte 2 is 0xc3, not in the base64 alphabet"),
    ]

    def test_image_data_that_is_not_standard_base64_is_refused_naming_command_and_index(self):
        d = self.spawn(args=["--no-session"])
        for command in ("prompt", "steer", "follow_up"):
            for i, (data, why) in enumerate(self.NOT_BASE64):
                with self.subTest(command=command, data=data):
                    rid = "%s-%d" % (command, i)
                    d.send({"type": command, "id": rid, "message": "look",
                            "images": [self.GOOD, self.GOOD, _image(data)]})
                    self.assertEqual(d.recv(), {
                        "id": rid, "type": "response", "command": command, "success": False,
                        "error": "%s: images[2].data must be base64 (%s)" % (command, why)})
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual((st["isStreaming"], st["messageCount"]), (False, 0))
        d.finish()

    def test_image_mime_type_must_be_a_media_type(self):
        d = self.spawn(args=["--no-session"])
        for command in ("prompt", "steer", "follow_up"):
            for mime in ("", "png", "image/png;base64", "image/png,x"):
                with self.subTest(command=command, mime=mime):
                    d.send({"type": command, "message": "look", "images": [_image("aGk=", mime)]})
                    r = d.recv()
                    want = '%s: images[0].mimeType must be a media type such as "image/png"'
                    self.assertEqual((r["success"], r["error"]), (False, want % command))
        self.assertFalse(d.request({"type": "get_state"})["data"]["isStreaming"])
        d.finish()

    def test_padded_standard_base64_reaches_the_user_message_unchanged(self):
        data = base64.b64encode(bytes([0xfb, 0xef, 0xff, 0x00])).decode()
        self.assertEqual(data, "++//AA==")
        for command in ("steer", "follow_up"):
            with self.subTest(command=command):
                d = self.spawn(plan=[{"text": "seen"}], args=["--no-session"])
                img = _image(data, "image/svg+xml")
                d.send({"type": command, "id": "s", "message": "look", "images": [img]})
                self.assertIs(d.recv()["success"], True)
                d.wait_for(is_type("agent_end"))
                user = d.request({"type": "get_messages"})["data"]["messages"][0]
                self.assertEqual(user["content"], [{"type": "text", "text": "look"}, img])
                d.finish()

    def test_acceptance_matches_strict_base64_for_random_strings(self):
        # The oracle: standard alphabet, then at most two '=', length a positive multiple of 4.
        strict = re.compile(r"[A-Za-z0-9+/]*={0,2}")
        rng = random.Random(13)
        samples = []
        for _ in range(400):  # valid base64, then up to two edits: near misses and some valid
            raw = bytes(rng.randrange(256) for _ in range(rng.randrange(7)))
            data = list(base64.b64encode(raw).decode())
            for _ in range(rng.randrange(3)):
                at = rng.randrange(len(data) + 1)
                edit = rng.choice(("insert", "delete", "replace"))
                if edit != "insert" and at < len(data):
                    del data[at]
                if edit != "delete":
                    data.insert(at, rng.choice("A9+/=-_ \n.\u00e9"))
            samples.append("".join(data))
        # Busy with a run that never ends, so accepted steers are only queued.
        d = self.spawn(plan=[{"hang": True}], args=["--no-session"])
        d.send({"type": "prompt", "message": "hold"})
        d.wait_for(is_type("agent_start"))
        lines = [json.dumps({"type": "steer", "id": str(i), "message": "m",
                             "images": [_image(data)]}) for i, data in enumerate(samples)]
        d.send(("\n".join(lines) + "\n").encode())
        for i, data in enumerate(samples):
            r = d.wait_for(is_response("steer", id=str(i)))
            want = bool(data) and len(data) % 4 == 0 and strict.fullmatch(data) is not None
            self.assertEqual(r["success"], want, (data, r.get("error")))
        d.send({"type": "abort"})
        d.wait_for(is_type("agent_end"))
        d.finish()


class OutputTests(DaemonTestCase):
    def test_stdout_is_only_compact_json_objects_and_events_carry_no_id(self):
        d = self.spawn(plan=[{"error": "503 Service Unavailable"}, {"text": "fine \"quoted\" words"}],
                       sets={"retry.baseDelayMs": 1}, env={"RETRYD_LOG": "debug"})
        d.send({"type": "prompt", "message": "spaces, commas: and \"quotes\"", "id": "p"})
        d.wait_for(is_type("agent_end"))
        d.request({"type": "get_state"})
        d.send(b"garbage\n")
        d.wait_for(is_response("parse"))
        d.finish()
        for raw in d.raw_lines():
            self.assertFalse(has_whitespace_outside_strings(raw), raw[:200])
        for m in d.seen() + [ln.obj for ln in d.settle_lines]:
            # oh-my-pi's prompt_result names its prompt: the one event with an id.
            if m["type"] != "response" and m["type"] != "prompt_result":
                self.assertNotIn("id", m, m["type"])

    def test_prompt_response_comes_before_the_first_event(self):
        d = self.spawn(plan=[{"text": "x"}])
        msgs = self.run_prompt(d, "hi")
        self.assertEqual(signature(msgs)[:2], ["response:prompt", "agent_start"])
        self.assertIs(msgs[0]["success"], True)
        d.finish()


class OtherCommandTests(DaemonTestCase):
    def test_get_last_assistant_text_returns_the_last_answer(self):
        d = self.spawn(plan=[{"text": "the answer"}])
        self.assertIsNone(d.request({"type": "get_last_assistant_text"})["data"]["text"])
        self.run_prompt(d, "q")
        r = d.request({"type": "get_last_assistant_text"})
        self.assertEqual(r["data"]["text"], "the answer")
        d.finish()

    def test_models_can_be_listed_and_unknown_ones_are_refused(self):
        d = self.spawn(args=["--model", "sim-x"], sets={"sim.models": ["sim-x", "sim-y"]})
        r = d.request({"type": "get_available_models"})
        self.assertEqual([m["id"] for m in r["data"]["models"]], ["sim-x", "sim-y"])
        r = d.request({"type": "set_model", "provider": "sim", "modelId": "sim-y"})
        self.assertEqual((r["success"], r["data"]["id"]), (True, "sim-y"))
        self.assertEqual(d.request({"type": "get_state"})["data"]["model"]["id"], "sim-y")
        r = d.request({"type": "set_model", "provider": "sim", "modelId": "gpt-nope"})
        self.assertIs(r["success"], False)
        self.assertIn("gpt-nope", r["error"])
        r = d.request({"type": "set_model", "provider": "openai", "modelId": "sim-y"})
        self.assertIs(r["success"], False)
        d.finish()

    def test_new_session_clears_the_context_and_changes_the_session_id(self):
        d = self.spawn(plan=[{"text": "a"}])
        self.run_prompt(d, "q")
        before = d.request({"type": "get_state"})["data"]
        self.assertEqual(before["messageCount"], 2)
        r = d.request({"type": "new_session"})
        self.assertIs(r["success"], True)
        after = d.request({"type": "get_state"})["data"]
        self.assertEqual(after["messageCount"], 0)
        self.assertNotEqual(after["sessionId"], before["sessionId"])
        self.assertEqual(d.request({"type": "get_messages"})["data"]["messages"], [])
        d.finish()


class ClassifyTests(DaemonTestCase):
    """classify_error and retryd --classify: how the daemon would judge a failure."""

    def test_classify_error_reads_status_body_and_headers_and_names_the_rule(self):
        d = self.spawn()
        ask = lambda **kw: d.request(dict({"type": "classify_error", "id": "c"}, **kw))
        r = ask(message="Rate limit reached for gpt-4o. Please try again in 400ms.")
        self.assertEqual(r["data"], {"errorClass": "retryable", "overload": False, "hintMs": 400,
                                     "rule": "text:rateLimitPatterns[0]"})
        self.assertEqual(r["id"], "c")
        r = ask(message="Too Many Requests", status=429, headers={"Retry-After": "20"})
        self.assertEqual((r["data"]["rule"], r["data"]["hintMs"]), ("http-status:429", 20000))
        r = ask(message="error", body='{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')
        self.assertEqual((r["data"]["errorClass"], r["data"]["overload"], r["data"]["rule"]),
                         ("retryable", True, "anthropic-type:overloaded_error"))
        # A number with a unit is no status.
        r = ask(message="Waited 400ms, got 500 tokens from port 5003")
        self.assertEqual(r["data"]["rule"], "default")
        d.finish()

    def test_classify_error_uses_the_settings_patterns(self):
        d = self.spawn(sets={"retry.retryablePatterns": ["flaky widget"]})
        r = d.request({"type": "classify_error", "message": "the flaky widget broke"})
        self.assertEqual((r["data"]["errorClass"], r["data"]["rule"]),
                         ("retryable", "settings:retryablePatterns[0]"))
        d.finish()

    def test_bad_classify_error_fields_are_refused_by_name(self):
        d = self.spawn()
        cases = [
            ({}, 'missing required field "message"'),
            ({"message": 3}, 'field "message" must be a string'),
            ({"message": "x", "status": 42}, 'field "status" must be an HTTP status'),
            ({"message": "x", "status": "429"}, 'field "status" must be an HTTP status'),
            ({"message": "x", "body": {"a": 1}}, 'field "body" must be a string'),
            ({"message": "x", "headers": ["retry-after"]}, 'field "headers" must be an object'),
            ({"message": "x", "headers": {"retry-after": 5}}, "headers.retry-after must be a string"),
        ]
        for fields, want in cases:
            with self.subTest(fields=fields):
                r = d.request(dict({"type": "classify_error"}, **fields))
                self.assertIs(r["success"], False)
                self.assertIn(want, r["error"])
        d.finish()

    def test_classify_option_prints_the_same_object_and_exits(self):
        status, out, err = run_cli(["--classify", "API Error: 529 {\"type\":\"error\",\"error\":"
                                                  "{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"])
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out), {"errorClass": "retryable", "overload": True, "hintMs": None,
                                           "rule": "http-status:529"})
        status, out, err = run_cli(["--set", 'retry.usageLimitPatterns=["my plan is done"]',
                                    "--classify", "sorry, my plan is done"])
        self.assertEqual(json.loads(out)["rule"], "settings:usageLimitPatterns[0]")
        status, out, err = run_cli(["--classify"])
        self.assertEqual((status, out), (2, ""))
        self.assertIn("'--classify' needs a value", err)

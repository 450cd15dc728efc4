"""The lifecycle of one prompt, and the sim provider's scripted steps."""
import time

from harness import DaemonTestCase, timing_sensitive, deltas, is_type, role_of, signature, text_of, user_text

ONE_TURN_PREFIX = ["response:prompt", "agent_start", "turn_start", "message_start:user",
                   "message_end:user", "message_start:assistant"]


class PromptLifecycleTests(DaemonTestCase):
    def test_successful_prompt_emits_the_exact_event_sequence(self):
        d = self.spawn(plan=[{"text": "a b c"}])
        msgs = self.run_prompt(d, "hello")
        self.assertEqual(signature(msgs), ONE_TURN_PREFIX + [
            "update:text_start", "update:text_delta", "update:text_delta", "update:text_delta",
            "update:text_end", "message_end:assistant", "turn_end", "agent_end"])
        self.assertEqual(deltas(msgs), ["a", " b", " c"])
        end = msgs[-3]
        self.assertEqual(end["message"]["stopReason"], "stop")
        self.assertEqual(text_of(end["message"]), "a b c")
        self.assertNotIn("errorMessage", end["message"])
        self.assertEqual(user_text(msgs[3]["message"]), "hello")
        d.expect_silence(0.05)
        d.finish()

    def test_agent_end_carries_the_runs_messages(self):
        d = self.spawn(plan=[{"text": "answer"}])
        msgs = self.run_prompt(d, "question")
        ae = msgs[-1]["messages"]
        self.assertEqual([m["role"] for m in ae], ["user", "assistant"])
        self.assertEqual(user_text(ae[0]), "question")
        self.assertEqual(text_of(ae[1]), "answer")
        d.finish()

    def test_messages_have_pi_shapes(self):
        d = self.spawn(plan=[{"text": "shaped"}], args=["--model", "sim-shape"])
        msgs = self.run_prompt(d, "q")
        user = msgs[3]["message"]
        self.assertEqual(user["role"], "user")
        self.assertEqual(user["content"], [{"type": "text", "text": "q"}])
        self.assertIsInstance(user["timestamp"], int)
        a = [m for m in msgs if m["type"] == "message_end" and role_of(m) == "assistant"][0]["message"]
        for key in ("role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp"):
            self.assertIn(key, a)
        self.assertEqual(a["model"], "sim-shape")
        self.assertEqual(a["provider"], "sim")
        for key in ("input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"):
            self.assertIn(key, a["usage"])
        ev = [m for m in msgs if m["type"] == "message_update"]
        self.assertTrue(all("assistantMessageEvent" in m and "message" in m for m in ev))
        self.assertEqual(ev[0]["assistantMessageEvent"]["contentIndex"], 0)
        self.assertEqual(ev[-1]["assistantMessageEvent"]["content"], "shaped")
        self.assertEqual(msgs[-2]["type"], "turn_end")
        self.assertEqual(msgs[-2]["message"], a)
        d.finish()

    def test_prompt_images_are_part_of_the_user_message(self):
        d = self.spawn(plan=[{"text": "seen"}])
        img = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
        msgs = self.run_prompt(d, "look", images=[img])
        self.assertEqual(msgs[3]["message"]["content"], [{"type": "text", "text": "look"}, img])
        d.finish()

    def test_get_messages_and_state_after_a_run(self):
        d = self.spawn(plan=[{"text": "x"}])
        self.run_prompt(d, "q")
        msgs = d.request({"type": "get_messages"})["data"]["messages"]
        self.assertEqual([m["role"] for m in msgs], ["user", "assistant"])
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual((st["messageCount"], st["isStreaming"], st["pendingMessageCount"]),
                         (2, False, 0))
        d.finish()

    def test_get_state_has_pi_fields_and_the_retry_fields(self):
        d = self.spawn()
        st = d.request({"type": "get_state"})["data"]
        for key in ("model", "thinkingLevel", "isStreaming", "isCompacting", "steeringMode",
                    "followUpMode", "sessionFile", "sessionId", "autoCompactionEnabled",
                    "messageCount", "pendingMessageCount", "autoRetryEnabled", "isRetrying",
                    "retryAttempt"):
            self.assertIn(key, st)
        self.assertEqual((st["isStreaming"], st["isRetrying"], st["retryAttempt"],
                          st["autoRetryEnabled"], st["messageCount"]),
                         (False, False, 0, True, 0))
        d.finish()

    def test_is_streaming_from_acceptance_to_agent_end(self):
        d = self.spawn(plan=[{"delayMs": 150, "text": "slow"}])
        # The get_state right behind the prompt, in the same write, sees it streaming.
        d.send(b'{"type":"prompt","message":"q","id":"p"}\n{"type":"get_state","id":"s"}\n')
        st = d.wait_for(lambda m: m.get("id") == "s")
        self.assertIs(st["data"]["isStreaming"], True)
        d.wait_for(is_type("agent_end"))
        self.assertIs(d.request({"type": "get_state"})["data"]["isStreaming"], False)
        d.finish()


class SimProviderTests(DaemonTestCase):
    def test_text_is_streamed_one_word_per_delta_with_whitespace_leading(self):
        text = "  lead\ttab\nnewline  two spaces end"
        d = self.spawn(plan=[{"text": "a b"}, {"text": text}])
        self.assertEqual(deltas(self.run_prompt(d, "1")), ["a", " b"])
        ds = deltas(self.run_prompt(d, "2"))
        self.assertEqual("".join(ds), text)
        self.assertEqual(ds, ["  lead", "\ttab", "\nnewline", "  two", " spaces", " end"])
        for x in ds:
            self.assertRegex(x, r"^\s*\S+$")
        d.finish()

    def test_non_ascii_text_streams_intact(self):
        text = "héllo wörld 日本語のテキスト 🎉 done"
        d = self.spawn(plan=[{"text": text}])
        msgs = self.run_prompt(d, "ünïcode prompt ✓")
        self.assertEqual(deltas(msgs), ["héllo", " wörld", " 日本語のテキスト", " 🎉", " done"])
        self.assertEqual(text_of(msgs[-1]["messages"][-1]), text)
        self.assertEqual(user_text(msgs[-1]["messages"][0]), "ünïcode prompt ✓")
        self.assertTrue(any("日本語" in raw for raw in d.raw_lines()))  # raw UTF-8, not \u escapes
        d.finish()

    def test_error_step_ends_the_message_with_stop_reason_error_and_no_content(self):
        # No rule knows the error: no unknown retry either, to see the one attempt.
        d = self.spawn(plan=[{"error": "something odd happened"}], sets={"retry.unknownRetries": 0})
        msgs = self.run_prompt(d, "q")
        self.assertEqual(signature(msgs), ONE_TURN_PREFIX + [
            "message_end:assistant", "turn_end", "agent_end"])
        m = msgs[-3]["message"]
        self.assertEqual((m["stopReason"], m["errorMessage"], m["content"]),
                         ("error", "something odd happened", []))
        self.assertNotIn("auto_retry_start", signature(msgs))
        d.finish()

    def test_text_and_error_step_streams_then_fails(self):
        d = self.spawn(plan=[{"text": "half an", "error": "stream broke oddly"}],
                       sets={"retry.unknownRetries": 0})
        msgs = self.run_prompt(d, "q")
        self.assertEqual(deltas(msgs), ["half", " an"])
        self.assertEqual(signature(msgs)[-3:], ["message_end:assistant", "turn_end", "agent_end"])
        m = msgs[-3]["message"]
        self.assertEqual((m["stopReason"], m["errorMessage"]), ("error", "stream broke oddly"))
        self.assertEqual(text_of(m), "half an")
        d.finish()

    def test_steps_are_consumed_across_prompts_then_the_last_user_text_is_echoed(self):
        d = self.spawn(plan=[{"text": "first"}, {"text": "second"}])
        out = []
        for q in ("q1", "q2", "echo me please"):
            msgs = self.run_prompt(d, q)
            out.append(text_of(msgs[-1]["messages"][-1]))
        self.assertEqual(out, ["first", "second", "echo me please"])
        d.finish()

    def test_without_a_plan_the_user_message_is_echoed(self):
        d = self.spawn()
        msgs = self.run_prompt(d, "just echo")
        self.assertEqual("".join(deltas(msgs)), "just echo")
        d.finish()

    def test_delay_ms_waits_before_the_step(self):
        d = self.spawn(plan=[{"delayMs": 200, "text": "late"}])
        t0 = time.monotonic()
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(lambda m: m.get("type") == "message_start" and role_of(m) == "assistant")
        self.assertGreaterEqual(time.monotonic() - t0, 0.19)
        d.wait_for(is_type("agent_end"))
        d.finish()

    @timing_sensitive("measures the gaps between words")
    def test_chunk_delay_spaces_the_words(self):
        d = self.spawn(plan=[{"text": "w1 w2 w3 w4 w5"}], sets={"sim.chunkDelayMs": 50})
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("agent_end"))
        arrivals = [ln.t for ln in d.lines
                    if ln.obj.get("type") == "message_update"
                    and ln.obj["assistantMessageEvent"]["type"] == "text_delta"]
        self.assertEqual(len(arrivals), 5)
        self.assertGreaterEqual(arrivals[-1] - arrivals[0], 0.18)  # four gaps of 50 ms
        d.finish()

    def test_hang_step_never_finishes_on_its_own(self):
        d = self.spawn(plan=[{"hang": True}])
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(lambda m: m.get("type") == "message_start" and role_of(m) == "assistant")
        d.expect_silence(0.3)
        st = d.request({"type": "get_state"})["data"]
        self.assertIs(st["isStreaming"], True)
        d.request({"type": "abort"})
        d.finish()

"""Busy means busy: refusing, queueing (followUp) and steering while a run is active."""
import json

from harness import DaemonTestCase, is_type, role_of, signature, text_of, types, user_text

SLOW = {"retry.baseDelayMs": 5000}
BACKOFF = {"retry.baseDelayMs": 200}  # long enough to send commands during the backoff


def lines(*cmds):
    return "".join(json.dumps(c, separators=(",", ":")) + "\n" for c in cmds).encode()


def user_texts(msgs):
    return [user_text(m["message"]) for m in msgs
            if m.get("type") == "message_start" and role_of(m) == "user"]


def assistant_texts(msgs):
    return [text_of(m["message"]) for m in msgs
            if m.get("type") == "message_end" and role_of(m) == "assistant"]


class BusyTests(DaemonTestCase):
    def test_second_prompt_while_streaming_is_refused_without_streaming_behavior(self):
        d = self.spawn(plan=[{"hang": True}])
        d.send({"type": "prompt", "message": "first", "id": "p1"})
        d.wait_for(lambda m: m.get("type") == "message_start" and role_of(m) == "assistant")
        r = d.request({"type": "prompt", "message": "second", "id": "p2"})
        self.assertEqual((r["command"], r["id"], r["success"]), ("prompt", "p2", False))
        self.assertIn("streamingBehavior", r["error"])
        d.expect_silence(0.1)  # nothing started
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual((st["isStreaming"], st["pendingMessageCount"]), (True, 0))
        d.request({"type": "abort"})
        d.finish()
        self.assertNotIn("second", [user_text(m["message"]) for m in d.seen()
                                    if m.get("type") == "message_start" and role_of(m) == "user"])

    def test_second_prompt_during_backoff_is_refused(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "ok"}], sets=SLOW)
        d.send({"type": "prompt", "message": "first"})
        d.wait_for(is_type("auto_retry_start"))
        r = d.request({"type": "prompt", "message": "second", "id": "p2"})
        self.assertEqual((r["id"], r["success"]), ("p2", False))
        self.assertIn("streamingBehavior", r["error"])
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual((st["isStreaming"], st["isRetrying"], st["pendingMessageCount"]),
                         (True, True, 0))
        d.request({"type": "abort_retry"})
        d.wait_for(is_type("agent_end"))
        d.finish()


class FollowUpTests(DaemonTestCase):
    def _check_two_turn_run(self, msgs, first, second):
        sig = signature(msgs)
        self.assertEqual(types(msgs).count("agent_start"), 1)
        self.assertEqual(types(msgs).count("agent_end"), 1)
        self.assertEqual(types(msgs)[-1], "agent_end")
        self.assertEqual(types(msgs).count("turn_start"), 2)
        self.assertEqual(user_texts(msgs), [first, second])
        # The follow-up's turn starts after the first turn ended.
        first_end = types(msgs).index("turn_end")
        second_start = [i for i, t in enumerate(types(msgs)) if t == "turn_start"][1]
        self.assertLess(first_end, second_start)
        # ... with its own user message.
        self.assertEqual(sig[second_start + 1:second_start + 3],
                         ["message_start:user", "message_end:user"])
        self.assertEqual([m["role"] for m in msgs[-1]["messages"]],
                         ["user", "assistant", "user", "assistant"])

    def test_prompt_with_follow_up_behavior_runs_after_the_current_turn_in_the_same_run(self):
        d = self.spawn(plan=[{"delayMs": 50, "text": "first answer"}])
        d.send(lines({"type": "prompt", "message": "p1", "id": "a"},
                     {"type": "prompt", "message": "p2", "id": "b", "streamingBehavior": "followUp"}))
        msgs = d.collect_until(is_type("agent_end"))
        responses = {m["id"]: m for m in msgs if m["type"] == "response"}
        self.assertEqual((responses["a"]["success"], responses["b"]["success"]), (True, True))
        self._check_two_turn_run(msgs, "p1", "p2")
        self.assertEqual(assistant_texts(msgs), ["first answer", "p2"])
        d.expect_silence(0.05)
        d.finish()

    def test_follow_up_command_while_busy_is_queued(self):
        d = self.spawn(plan=[{"delayMs": 50, "text": "first answer"}])
        d.send(lines({"type": "prompt", "message": "p1"},
                     {"type": "follow_up", "message": "f1", "id": "f"},
                     {"type": "get_state", "id": "s"}))
        msgs = d.collect_until(is_type("agent_end"))
        by_id = {m.get("id"): m for m in msgs if m["type"] == "response"}
        self.assertIs(by_id["f"]["success"], True)
        self.assertEqual(by_id["s"]["data"]["pendingMessageCount"], 1)
        self._check_two_turn_run(msgs, "p1", "f1")
        d.finish()

    def test_queued_follow_ups_run_one_turn_each_in_order(self):
        d = self.spawn(plan=[{"delayMs": 50, "text": "a"}])
        d.send(lines({"type": "prompt", "message": "p1"},
                     {"type": "follow_up", "message": "f1"},
                     {"type": "prompt", "message": "f2", "streamingBehavior": "followUp"},
                     {"type": "get_state", "id": "s"}))
        msgs = d.collect_until(is_type("agent_end"))
        st = [m for m in msgs if m.get("id") == "s"][0]
        self.assertEqual(st["data"]["pendingMessageCount"], 2)
        self.assertEqual(types(msgs).count("turn_start"), 3)
        self.assertEqual(user_texts(msgs), ["p1", "f1", "f2"])
        self.assertEqual(types(msgs).count("agent_end"), 1)
        d.finish()

    def test_follow_up_during_backoff_runs_after_the_retry_chain(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "ok"}], sets=BACKOFF)
        d.send({"type": "prompt", "message": "p1"})
        d.wait_for(is_type("auto_retry_start"))
        r = d.request({"type": "prompt", "message": "later", "streamingBehavior": "followUp"})
        self.assertIs(r["success"], True)
        msgs = d.collect_until(is_type("agent_end"))
        sig = signature(msgs)
        self.assertEqual(sig[:2], ["turn_start", "message_start:assistant"])  # the retry, no user message
        self.assertLess(sig.index("auto_retry_end"), sig.index("message_start:user"))
        self.assertEqual(user_texts(msgs), ["later"])
        self.assertEqual(assistant_texts(msgs), ["ok", "later"])
        self.assertEqual(types(d.seen()).count("agent_end"), 1)
        self.assertEqual(types(d.seen()).count("agent_start"), 1)
        d.finish()

    def test_follow_up_when_idle_starts_a_run(self):
        d = self.spawn()
        d.send({"type": "follow_up", "message": "idle follow-up", "id": "f"})
        msgs = d.collect_until(is_type("agent_end"))
        self.assertEqual(signature(msgs)[:3], ["response:follow_up", "agent_start", "turn_start"])
        self.assertIs(msgs[0]["success"], True)
        self.assertEqual(user_texts(msgs), ["idle follow-up"])
        self.assertEqual(assistant_texts(msgs), ["idle follow-up"])
        d.finish()


class SteerTests(DaemonTestCase):
    def _steer_during_backoff(self, steer_cmd):
        d = self.spawn(plan=[{"error": "503"}, {"text": "ok"}], sets=BACKOFF)
        d.send({"type": "prompt", "message": "p1"})
        d.wait_for(is_type("auto_retry_start"))
        r = d.request(steer_cmd)
        self.assertIs(r["success"], True)
        msgs = d.collect_until(is_type("agent_end"))
        self.assertEqual(signature(msgs), [
            "turn_start", "message_start:user", "message_end:user", "message_start:assistant",
            "update:text_start", "update:text_delta", "update:text_end", "message_end:assistant",
            "auto_retry_end", "turn_end", "agent_end"])
        self.assertEqual(user_texts(msgs), ["steered"])
        self.assertEqual([m["role"] for m in msgs[-1]["messages"]], ["user", "user", "assistant"])
        d.finish()

    def test_prompt_with_steer_behavior_during_backoff_is_delivered_at_the_next_attempt(self):
        self._steer_during_backoff({"type": "prompt", "message": "steered",
                                    "streamingBehavior": "steer"})

    def test_steer_command_during_backoff_is_delivered_at_the_next_attempt(self):
        self._steer_during_backoff({"type": "steer", "message": "steered"})

    def test_steering_goes_before_follow_ups(self):
        d = self.spawn(plan=[{"delayMs": 50, "text": "a"}])
        d.send(lines({"type": "prompt", "message": "p1"},
                     {"type": "follow_up", "message": "f1"},
                     {"type": "steer", "message": "s1"}))
        msgs = d.collect_until(is_type("agent_end"))
        self.assertEqual(user_texts(msgs), ["p1", "s1", "f1"])
        self.assertEqual(types(msgs).count("agent_end"), 1)
        d.finish()

    def test_steer_when_idle_starts_a_run(self):
        d = self.spawn()
        d.send({"type": "steer", "message": "idle steer", "id": "s"})
        msgs = d.collect_until(is_type("agent_end"))
        self.assertEqual(signature(msgs)[:3], ["response:steer", "agent_start", "turn_start"])
        self.assertIs(msgs[0]["success"], True)
        self.assertEqual(user_texts(msgs), ["idle steer"])
        self.assertEqual(assistant_texts(msgs), ["idle steer"])
        d.finish()

    def test_prompt_with_streaming_behavior_when_idle_just_runs(self):
        d = self.spawn()
        for behavior in ("steer", "followUp"):
            msgs = self.run_prompt(d, "idle " + behavior, streamingBehavior=behavior)
            self.assertIs(msgs[0]["success"], True)
            self.assertEqual(user_texts(msgs), ["idle " + behavior])
            self.assertEqual(types(msgs).count("turn_start"), 1)
        d.finish()

"""The prompt lifecycles of the clients people run today: pi 1.6's
(data.disposition, agent_settled after the last agent_end, agent_end
.willRetry) and oh-my-pi 18.3's (prompt_result once per accepted prompt,
session_settled, get_state.isSettled)."""

from harness import DaemonTestCase, is_response, is_type


def types(msgs):
    return [m.get("type") for m in msgs]


class SettledLifecycleTests(DaemonTestCase):
    def daemon(self, plan, sets=None):
        return self.spawn(args=["--no-session"], plan=plan,
                          sets=dict({"retry.baseDelayMs": 5}, **(sets or {})), settled=True)

    def test_a_three_attempt_chain_ends_with_the_prompts_result_then_the_settled_pair(self):
        d = self.daemon([{"error": "503 busy"}, {"error": "503 busy"}, {"text": "final answer"}])
        d.send({"type": "prompt", "id": "p1", "message": "hi"})
        msgs = d.collect_until(is_type("session_settled"))
        [resp] = [m for m in msgs if m.get("type") == "response"]
        self.assertEqual(resp["data"], {"disposition": "started", "agentInvoked": True})
        self.assertEqual(types(msgs)[-4:],
                         ["agent_end", "prompt_result", "agent_settled", "session_settled"])
        end, result, settled = msgs[-4], msgs[-3], msgs[-2]
        self.assertIs(end["willRetry"], False)
        self.assertEqual(result, {"type": "prompt_result", "id": "p1", "agentInvoked": True,
                                  "status": "completed", "sessionSettled": True})
        self.assertEqual(settled, {"type": "agent_settled", "aborted": False})
        self.assertEqual(types(msgs).count("auto_retry_start"), 2)
        d.expect_silence(0.1)

    def test_a_failed_prompts_result_says_why_whether_retryable_and_the_status(self):
        d = self.daemon([{"error": "429 Too Many Requests", "status": 429}],
                        {"retry.maxRetries": 0})
        d.send({"type": "prompt", "id": "p1", "message": "hi"})
        msgs = d.collect_until(is_type("session_settled"))
        [result] = [m for m in msgs if m.get("type") == "prompt_result"]
        self.assertEqual(result["status"], "error")
        self.assertEqual(result["error"], {"message": "429 Too Many Requests", "retryable": True,
                                           "provider": "sim", "model": "sim-1",
                                           "httpStatus": 429})
        d2 = self.daemon([{"error": "401 Unauthorized: invalid api key"}])
        d2.send({"type": "prompt", "id": "q", "message": "hi"})
        msgs = d2.collect_until(is_type("session_settled"))
        [result] = [m for m in msgs if m.get("type") == "prompt_result"]
        self.assertIs(result["error"]["retryable"], False)

    def test_a_queued_prompt_is_queued_and_gets_its_own_result_in_the_same_run(self):
        d = self.daemon([{"text": "one two three", "delayMs": 200}, {"text": "second"}])
        d.send({"type": "prompt", "id": "p1", "message": "first"})
        d.wait_for(is_type("agent_start"))
        d.send({"type": "prompt", "id": "p2", "message": "then", "streamingBehavior": "followUp"})
        r = d.wait_for(is_response("prompt", "p2"))
        self.assertEqual(r["data"]["disposition"], "queued")
        msgs = d.collect_until(is_type("session_settled"))
        self.assertEqual(types(msgs).count("agent_end"), 1)
        self.assertEqual([m["id"] for m in msgs if m.get("type") == "prompt_result"],
                         ["p1", "p2"])

    def test_abort_settles_aborted_and_owes_a_dropped_prompt_its_result(self):
        d = self.daemon([{"hang": True}])
        d.send({"type": "prompt", "id": "p1", "message": "first"})
        d.wait_for(is_type("message_start"))
        d.send({"type": "prompt", "id": "p2", "message": "later", "streamingBehavior": "followUp"})
        d.wait_for(is_response("prompt", "p2"))
        st = d.request({"type": "get_state", "id": "s1"})["data"]
        self.assertEqual((st["isSettled"], st["hasPendingAsyncWork"]), (False, False))
        d.send({"type": "abort", "id": "a"})
        msgs = d.collect_until(is_type("session_settled"))
        results = {m["id"]: m["status"] for m in msgs if m.get("type") == "prompt_result"}
        self.assertEqual(results, {"p1": "aborted", "p2": "aborted"})
        [settled] = [m for m in msgs if m.get("type") == "agent_settled"]
        self.assertIs(settled["aborted"], True)
        self.assertIs(d.request({"type": "get_state", "id": "s2"})["data"]["isSettled"], True)

    def test_steer_and_follow_up_say_their_disposition_and_have_no_prompt_result(self):
        d = self.daemon([{"text": "a"}, {"text": "b"}])
        r = d.request({"type": "follow_up", "id": "f", "message": "hi"})
        self.assertEqual(r["data"]["disposition"], "started")
        msgs = d.collect_until(is_type("session_settled"))
        self.assertEqual([m for m in msgs if m.get("type") == "prompt_result"], [])

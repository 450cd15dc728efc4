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

    def test_a_cancelled_retry_ends_the_prompt_in_the_error_it_would_have_retried(self):
        d = self.daemon([{"error": "503 busy"}, {"text": "never"}], {"retry.baseDelayMs": 30000})
        d.send({"type": "prompt", "id": "p1", "message": "hi"})
        d.wait_for(is_type("auto_retry_start"))
        d.send({"type": "abort_retry", "id": "a"})
        msgs = d.collect_until(is_type("session_settled"))
        [result] = [m for m in msgs if m.get("type") == "prompt_result"]
        self.assertEqual((result["status"], result["error"]["message"], result["error"]["retryable"]),
                         ("error", "503 busy", True))

    def test_steer_and_follow_up_say_their_disposition_and_have_no_prompt_result(self):
        d = self.daemon([{"text": "a"}, {"text": "b"}])
        r = d.request({"type": "follow_up", "id": "f", "message": "hi"})
        self.assertEqual(r["data"]["disposition"], "started")
        msgs = d.collect_until(is_type("session_settled"))
        self.assertEqual([m for m in msgs if m.get("type") == "prompt_result"], [])


class PiSixCommandTests(DaemonTestCase):
    """pi 1.6's commands: clear_queue, get_available_thinking_levels, get_entries,
    and its settings name retry.maxAgentDelayMs."""

    def daemon(self, plan, args=("--no-session",), sets=None, settings=None):
        return self.spawn(args=list(args), plan=plan, settings=settings,
                          sets=dict({"retry.baseDelayMs": 5}, **(sets or {})), settled=True)

    def test_clear_queue_answers_the_dropped_texts_and_their_prompts_end_aborted(self):
        d = self.daemon([{"text": "one two three", "delayMs": 300}, {"text": "never"}])
        d.send({"type": "prompt", "id": "p1", "message": "first"})
        d.wait_for(is_type("agent_start"))
        d.request({"type": "prompt", "id": "p2", "message": "later", "streamingBehavior": "followUp"})
        d.request({"type": "steer", "id": "s", "message": "steer me"})
        r = d.request({"type": "clear_queue", "id": "c"})
        self.assertEqual(r["data"], {"steering": ["steer me"], "followUp": ["later"]})
        self.assertEqual(d.request({"type": "get_state", "id": "st"})["data"]["pendingMessageCount"], 0)
        msgs = d.collect_until(is_type("session_settled"))
        results = {m["id"]: m["status"] for m in msgs if m.get("type") == "prompt_result"}
        self.assertEqual(results, {"p1": "completed", "p2": "aborted"})
        users = [m["message"]["content"][0]["text"] for m in msgs
                 if m.get("type") == "message_start" and m["message"]["role"] == "user"]
        self.assertNotIn("later", users)
        self.assertNotIn("steer me", users)
        self.assertEqual(d.request({"type": "clear_queue", "id": "c2"})["data"],
                         {"steering": [], "followUp": []})

    def test_thinking_levels_are_the_ones_the_model_in_use_allows(self):
        d = self.daemon([])
        self.assertEqual(d.request({"type": "get_available_thinking_levels", "id": "t"})["data"],
                         {"levels": ["off"]})
        # Nothing is sent: the port is never reached.
        models = {"providers": {"fake": {
            "api": "anthropic-messages", "baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "RETRYD_E2E_KEY",
            "models": [{"id": "thinker", "reasoning": True, "thinkingLevelMap": {"minimal": None}}]}}}
        d2 = self.spawn(args=["--no-session", "--provider", "fake", "--model", "thinker"],
                        settings=models, env={"RETRYD_E2E_KEY": "sk-e2e-levels-0123456789"})
        self.assertEqual(d2.request({"type": "get_available_thinking_levels", "id": "t"})["data"],
                         {"levels": ["off", "low", "medium", "high"]})

    def test_get_entries_lists_the_session_files_lines_in_pis_shape_and_since_pages(self):
        d = self.daemon([{"error": "503 busy"}, {"text": "answer"}],
                        args=["--session-dir", "{tmp}/sessions"])
        self.assertEqual(d.request({"type": "get_entries", "id": "e0"})["data"],
                         {"entries": [], "leafId": None})
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        d.collect_until(is_type("session_settled"))
        data = d.request({"type": "get_entries", "id": "e"})["data"]
        entries = data["entries"]
        self.assertEqual([(e["type"], e["message"]["role"]) for e in entries],
                         [("message", "user"), ("message", "assistant"), ("message", "assistant")])
        self.assertIs(entries[1].get("retried"), True)
        self.assertEqual(entries[0]["parentId"], None)
        self.assertEqual([e["parentId"] for e in entries[1:]], [e["id"] for e in entries[:-1]])
        self.assertTrue(all(len(e["id"]) == 8 for e in entries))
        self.assertEqual(list(entries[0])[:5], ["type", "id", "parentId", "timestamp", "message"])
        self.assertRegex(entries[0]["timestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertEqual(data["leafId"], entries[-1]["id"])
        later = d.request({"type": "get_entries", "id": "e2", "since": entries[0]["id"]})["data"]
        self.assertEqual(later["entries"], entries[1:])
        self.assertEqual(later["leafId"], entries[-1]["id"])
        # Polling from the leaf: nothing new, and the same leaf, as pi answers.
        last = d.request({"type": "get_entries", "id": "e5", "since": entries[-1]["id"]})["data"]
        self.assertEqual(last, {"entries": [], "leafId": entries[-1]["id"]})
        r = d.request({"type": "get_entries", "id": "e3", "since": "nope"})
        self.assertEqual((r["success"], r["error"]), (False, "Entry not found: nope"))
        r = d.request({"type": "get_entries", "id": "e4", "since": 5})
        self.assertEqual(r["error"], 'get_entries: field "since" must be a string, not a number')

    def test_max_agent_delay_ms_is_read_as_max_delay_ms_from_a_file_and_from_set(self):
        d = self.daemon([], settings={"retry": {"maxAgentDelayMs": 1234}})
        policy = d.request({"type": "get_retry_policy", "id": "g"})["data"]["policy"]
        self.assertEqual(policy["maxDelayMs"], 1234)
        self.assertNotIn("maxAgentDelayMs", policy)
        d2 = self.daemon([], sets={"retry.maxAgentDelayMs": 4321})
        self.assertEqual(d2.request({"type": "get_retry_policy", "id": "g"})["data"]["policy"]
                         ["maxDelayMs"], 4321)

    def test_max_agent_delay_ms_beside_a_different_max_delay_ms_is_refused_naming_both(self):
        d = self.spawn(args=["--no-session"], plan=[], expect_ready=False,
                       settings={"retry": {"maxAgentDelayMs": 1, "maxDelayMs": 2}})
        self.assertNotEqual(d.wait_exit(), 0)
        self.assertIn("retry.maxAgentDelayMs is pi 1.6's name for retry.maxDelayMs, and both are "
                      "set to different values; keep one", d.stderr_text())


class OmpSettingNameTests(DaemonTestCase):
    """oh-my-pi 18.3's retry.waitForUsageReset (a boolean), read as
    retry.usageLimitWait ("wait" / "off")."""

    def daemon(self, plan, sets=None, settings=None):
        return self.spawn(args=["--no-session"], plan=plan, settings=settings, sets=sets)

    def policy(self, d):
        return d.request({"type": "get_retry_policy", "id": "g"})["data"]["policy"]

    def test_wait_for_usage_reset_true_turns_the_wait_on_from_a_file_and_from_set(self):
        d = self.daemon([], settings={"retry": {"waitForUsageReset": True}})
        self.assertEqual(self.policy(d)["usageLimitWait"], "wait")
        self.assertNotIn("waitForUsageReset", self.policy(d))
        d2 = self.daemon([], sets={"retry.waitForUsageReset": False})
        self.assertEqual(self.policy(d2)["usageLimitWait"], "off")

    def test_wait_for_usage_reset_that_is_no_boolean_is_refused_with_its_meaning(self):
        d = self.spawn(args=["--no-session"], plan=[], expect_ready=False,
                       settings={"retry": {"waitForUsageReset": "yes"}})
        self.assertNotEqual(d.wait_exit(), 0)
        self.assertIn("retry.waitForUsageReset (oh-my-pi's name for retry.usageLimitWait) must be "
                      "true or false", d.stderr_text())

    def test_wait_for_usage_reset_beside_a_different_usage_limit_wait_is_refused(self):
        d = self.spawn(args=["--no-session"], plan=[], expect_ready=False,
                       settings={"retry": {"waitForUsageReset": True, "usageLimitWait": "off"}})
        self.assertNotEqual(d.wait_exit(), 0)
        self.assertIn("retry.waitForUsageReset is oh-my-pi's name for retry.usageLimitWait, and "
                      "both are set to different values; keep one", d.stderr_text())


class OmpRunShapeTests(DaemonTestCase):
    """oh-my-pi 18.3's agent_end fields and messageId."""

    def test_agent_end_is_terminal_and_yielded_without_awaiting_async_work(self):
        d = self.spawn(args=["--no-session"], plan=[{"text": "ok"}])
        end = self.run_prompt(d)[-1]
        self.assertEqual((end["willRetry"], end["isTerminal"], end["yielded"]), (False, True, True))
        self.assertNotIn("awaitingAsyncWork", end)

    def check_message_ids(self, msgs):
        ids, open_id = [], None
        for m in msgs:
            t = m.get("type")
            if t == "message_start":
                self.assertIsNone(open_id, m)
                open_id = m["messageId"]
                ids.append(open_id)
            elif t == "message_update":
                self.assertEqual(m["messageId"], open_id)
            elif t == "message_end":
                self.assertEqual(m["messageId"], open_id)
                open_id = None
        self.assertEqual(len(set(ids)), len(ids), ids)
        return ids

    def test_message_id_is_stable_across_one_messages_updates_and_new_per_message(self):
        d = self.spawn(args=["--no-session"], sets={"retry.baseDelayMs": 5},
                       plan=[{"error": "503 busy"}, {"text": "one two three"}, {"text": "again"}])
        msgs = self.run_prompt(d)
        self.assertEqual(self.check_message_ids(msgs), ["msg-1", "msg-2", "msg-3"])
        self.assertGreater(len([m for m in msgs if m.get("type") == "message_update"]), 2)
        self.assertEqual(self.check_message_ids(self.run_prompt(d)), ["msg-4", "msg-5"])

    def test_message_id_is_on_the_fast_delta_lines_too(self):
        d = self.spawn(args=["--no-session"], sets={"rpc.messageUpdates": "delta"},
                       plan=[{"text": "one two three four"}])
        msgs = self.run_prompt(d)
        deltas = [m for m in msgs if m.get("type") == "message_update"
                  and m["assistantMessageEvent"]["type"] == "text_delta"]
        self.assertGreater(len(deltas), 1)
        self.assertEqual(self.check_message_ids(msgs), ["msg-1", "msg-2"])
        self.assertEqual(list(deltas[0]), ["type", "assistantMessageEvent", "messageId"])

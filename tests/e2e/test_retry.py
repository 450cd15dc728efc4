"""The automatic-retry lifecycle: chains, backoff, classification, cancel, abort."""
import time

from harness import (DaemonTestCase, timing_sensitive, deltas, is_response, is_type, role_of, signature, text_of,
                     types, user_text)

FAST = {"retry.baseDelayMs": 20}
SLOW = {"retry.baseDelayMs": 5000}  # a backoff that never ends during a test


def events(msgs, type_):
    return [m for m in msgs if m.get("type") == type_]


def assistant_start(m):
    return m.get("type") == "message_start" and role_of(m) == "assistant"


class RetryChainTests(DaemonTestCase):
    def test_retryable_failure_then_success_emits_the_exact_sequence(self):
        d = self.spawn(plan=[{"error": "503 Service Unavailable"}, {"text": "ok"}], sets=FAST)
        msgs = self.run_prompt(d, "q")
        self.assertEqual(signature(msgs), [
            "response:prompt", "agent_start",
            "turn_start", "message_start:user", "message_end:user",
            "message_start:assistant", "message_end:assistant", "turn_end",
            "auto_retry_start",
            "turn_start", "message_start:assistant", "update:text_start", "update:text_delta",
            "update:text_end", "message_end:assistant", "auto_retry_end", "turn_end",
            "agent_end"])
        failed = msgs[6]["message"]
        self.assertEqual((failed["stopReason"], failed["errorMessage"]),
                         ("error", "503 Service Unavailable"))
        start = msgs[8]
        self.assertEqual({k: start[k] for k in ("attempt", "maxAttempts", "delayMs", "errorMessage")},
                         {"attempt": 1, "maxAttempts": 3, "delayMs": 20,
                          "errorMessage": "503 Service Unavailable"})
        end = msgs[15]
        self.assertEqual((end["success"], end["attempt"]), (True, 1))
        self.assertEqual(msgs[14]["message"]["stopReason"], "stop")
        d.expect_silence(0.1)
        d.finish()

    def test_backoff_doubles_from_base_delay(self):
        d = self.spawn(plan=[{"error": "overloaded"}] * 3 + [{"text": "finally"}], sets=FAST)
        msgs = self.run_prompt(d, "q")
        starts = events(msgs, "auto_retry_start")
        self.assertEqual([(s["attempt"], s["maxAttempts"], s["delayMs"]) for s in starts],
                         [(1, 3, 20), (2, 3, 40), (3, 3, 80)])
        ends = events(msgs, "auto_retry_end")
        self.assertEqual([(e["success"], e["attempt"]) for e in ends], [(True, 3)])
        self.assertEqual(types(msgs).count("turn_start"), 4)
        self.assertEqual(types(msgs).count("agent_start"), 1)
        self.assertEqual(types(msgs).count("agent_end"), 1)
        # The user message is delivered on the first attempt only.
        self.assertEqual(signature(msgs).count("message_start:user"), 1)
        d.finish()

    @timing_sensitive("measures the backoff from the outside")
    def test_backoff_really_waits_delay_ms(self):
        d = self.spawn(plan=[{"error": "503"}, {"error": "503"}, {"text": "ok"}],
                       sets={"retry.baseDelayMs": 100})
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("agent_end"))
        lines = [ln for ln in d.lines if ln.obj.get("type") in ("auto_retry_start", "turn_start")]
        gaps = []
        for a, b in zip(lines, lines[1:]):
            if a.obj["type"] == "auto_retry_start" and b.obj["type"] == "turn_start":
                gaps.append((a.obj["delayMs"], b.t - a.t))
        self.assertEqual([g[0] for g in gaps], [100, 200])
        for delay, gap in gaps:
            self.assertGreaterEqual(gap, delay / 1000.0 * 0.8, gaps)
        d.finish()

    def test_max_retries_exceeded_closes_the_chain_with_the_last_error(self):
        plan = [{"error": "503 one"}, {"error": "503 two"}, {"error": "503 three"},
                {"error": "503 four"}, {"error": "503 five"}, {"text": "ok"}]
        d = self.spawn(plan=plan, sets={"retry.baseDelayMs": 1})
        msgs = self.run_prompt(d, "q")
        sig = signature(msgs)
        self.assertEqual([s["attempt"] for s in events(msgs, "auto_retry_start")], [1, 2, 3])
        self.assertEqual(sig.count("turn_start"), 4)
        self.assertEqual(sig[-4:], ["message_end:assistant", "turn_end", "auto_retry_end",
                                    "agent_end"])
        end = msgs[-2]
        self.assertEqual({k: end.get(k) for k in ("success", "attempt", "finalError")},
                         {"success": False, "attempt": 3, "finalError": "503 four"})
        self.assertEqual(len(events(msgs, "auto_retry_end")), 1)
        d.expect_silence(0.1)  # no fifth attempt
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual((st["isStreaming"], st["isRetrying"], st["retryAttempt"]), (False, False, 0))
        # The counter was reset: the next chain starts at attempt 1 again.
        msgs = self.run_prompt(d, "again")
        self.assertEqual([s["attempt"] for s in events(msgs, "auto_retry_start")], [1])
        self.assertEqual([(e["success"], e["attempt"]) for e in events(msgs, "auto_retry_end")],
                         [(True, 1)])
        d.finish()

    def test_max_retries_setting_limits_the_chain(self):
        d = self.spawn(plan=[{"error": "503 a"}, {"error": "503 b"}, {"text": "never"}],
                       sets={"retry.baseDelayMs": 1, "retry.maxRetries": 1})
        msgs = self.run_prompt(d, "q")
        self.assertEqual([(s["attempt"], s["maxAttempts"]) for s in events(msgs, "auto_retry_start")],
                         [(1, 1)])
        self.assertEqual([(e["success"], e["attempt"], e["finalError"])
                          for e in events(msgs, "auto_retry_end")], [(False, 1, "503 b")])
        d.finish()

    def test_max_retries_zero_never_opens_a_chain(self):
        d = self.spawn(plan=[{"error": "503"}], sets={"retry.maxRetries": 0})
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("auto_retry_start", types(msgs))
        self.assertNotIn("auto_retry_end", types(msgs))
        self.assertEqual(msgs[-3]["message"]["stopReason"], "error")
        d.finish()

    def test_non_retryable_first_failure_has_no_retry_events(self):
        d = self.spawn(plan=[{"error": "401 Unauthorized"}, {"text": "never"}], sets=FAST)
        msgs = self.run_prompt(d, "q")
        self.assertEqual(signature(msgs)[-3:], ["message_end:assistant", "turn_end", "agent_end"])
        self.assertNotIn("auto_retry_start", types(msgs))
        self.assertNotIn("auto_retry_end", types(msgs))
        self.assertEqual(msgs[-3]["message"]["errorMessage"], "401 Unauthorized")
        d.finish()

    def test_non_retryable_failure_in_an_open_chain_closes_it(self):
        d = self.spawn(plan=[{"error": "503"}, {"error": "401 Unauthorized"}, {"text": "never"}],
                       sets=FAST)
        msgs = self.run_prompt(d, "q")
        self.assertEqual(signature(msgs)[-4:], ["message_end:assistant", "turn_end",
                                                "auto_retry_end", "agent_end"])
        end = msgs[-2]
        self.assertEqual((end["success"], end["attempt"], end["finalError"]),
                         (False, 1, "401 Unauthorized"))
        self.assertEqual(len(events(msgs, "auto_retry_start")), 1)
        d.finish()

    def test_failed_attempt_is_dropped_from_the_in_memory_context(self):
        d = self.spawn(plan=[{"error": "502 Bad Gateway"}, {"error": "overloaded"}, {"text": "good"}],
                       sets={"retry.baseDelayMs": 1})
        msgs = self.run_prompt(d, "q")
        self.assertEqual([m["role"] for m in msgs[-1]["messages"]], ["user", "assistant"])
        self.assertEqual(msgs[-1]["messages"][1]["stopReason"], "stop")
        got = d.request({"type": "get_messages"})["data"]["messages"]
        self.assertEqual([(m["role"], m.get("stopReason")) for m in got],
                         [("user", None), ("assistant", "stop")])
        self.assertEqual(text_of(got[1]), "good")
        self.assertEqual(d.request({"type": "get_state"})["data"]["messageCount"], 2)
        d.finish()

    def test_get_state_reports_the_backoff(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "ok"}], sets=SLOW)
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("auto_retry_start"))
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual((st["isStreaming"], st["isRetrying"], st["retryAttempt"],
                          st["autoRetryEnabled"]), (True, True, 1, True))
        d.request({"type": "abort_retry"})
        d.wait_for(is_type("agent_end"))
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual((st["isStreaming"], st["isRetrying"], st["retryAttempt"]), (False, False, 0))
        d.finish()


class ClassificationTests(DaemonTestCase):
    RETRYABLE = [
        "overloaded_error: Overloaded",
        "Rate limit exceeded",
        "rate_limit_error",
        "429 Too Many Requests",
        "HTTP 500",
        "502 Bad Gateway",
        "503",
        "504 Gateway Timeout",
        "Service Unavailable",
        "Internal server error",
        "internal error",
        "Connection error.",
        "TypeError: fetch failed",
        "Request timeout",
        "operation timed out",
        "terminated",
        "network error",
        "socket hang up",
    ]
    NOT_RETRYABLE = [
        "400 Bad Request",
        "401 Unauthorized",
        "403 Forbidden",
        "Invalid API key",
        "invalid_api_key",
        "max_tokens must be <= 1500",
    ]
    # No rule knows them: retry.unknownRetries (1) more try each.
    UNKNOWN = [
        "error code 5030",
        "value 4290 out of range",
        "something odd happened",
    ]
    CONTEXT_OVERFLOW = [
        "prompt is too long: 213462 tokens > 200000 maximum",
        "This model's maximum context length is 8192 tokens",
        "503 Service Unavailable: prompt is too long",
        "overloaded: maximum context length is 8192 tokens",
    ]

    def test_errors_are_classified_as_retryable_or_not(self):
        plan = []
        cases = ([(e, True) for e in self.RETRYABLE + self.UNKNOWN] +
                 [(e, False) for e in self.NOT_RETRYABLE + self.CONTEXT_OVERFLOW])
        for err, retryable in cases:
            plan.append({"error": err})
            if retryable:
                plan.append({"text": "recovered"})
        d = self.spawn(plan=plan, sets={"retry.baseDelayMs": 1}, args=["--no-session"])
        for err, retryable in cases:
            with self.subTest(error=err):
                msgs = self.run_prompt(d, "q")
                starts = events(msgs, "auto_retry_start")
                if retryable:
                    self.assertEqual([(s["attempt"], s["errorMessage"]) for s in starts],
                                     [(1, err)])
                    self.assertEqual(starts[0].get("errorClass") == "unknown",
                                     err in self.UNKNOWN, starts[0])
                    self.assertEqual(text_of(msgs[-1]["messages"][-1]), "recovered")
                else:
                    self.assertEqual(starts, [])
                    self.assertEqual(events(msgs, "auto_retry_end"), [])
                    last = msgs[-1]["messages"][-1]
                    self.assertEqual((last["stopReason"], last["errorMessage"]), ("error", err))
        d.finish()


class AbortRetryTests(DaemonTestCase):
    def test_abort_retry_during_backoff_cancels_before_its_response(self):
        d = self.spawn(plan=[{"error": "503 busy"}, {"text": "never"}], sets=SLOW)
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("auto_retry_start"))
        t0 = time.monotonic()
        d.send({"type": "abort_retry", "id": "ar"})
        msgs = d.collect_until(is_response("abort_retry", "ar"))
        if "agent_end" not in types(msgs):
            msgs += d.collect_until(is_type("agent_end"))
        sig = types(msgs)
        end = events(msgs, "auto_retry_end")
        self.assertEqual(len(end), 1, sig)
        self.assertEqual({k: end[0].get(k) for k in ("success", "attempt", "finalError")},
                         {"success": False, "attempt": 1, "finalError": "Retry cancelled"})
        self.assertLess(sig.index("auto_retry_end"), sig.index("response"))
        self.assertLess(sig.index("auto_retry_end"), sig.index("agent_end"))
        self.assertNotIn("turn_start", sig)
        self.assertIs(msgs[sig.index("response")]["success"], True)
        self.assertLess(time.monotonic() - t0, 2.0)
        d.expect_silence(0.2)  # no further attempt
        self.assertIs(d.request({"type": "get_state"})["data"]["isStreaming"], False)
        d.finish()

    def test_abort_retry_with_nothing_pending_succeeds_without_events(self):
        d = self.spawn()
        d.send({"type": "abort_retry", "id": "idle"})
        r = d.recv()
        self.assertEqual((r["type"], r["command"], r["id"], r["success"]),
                         ("response", "abort_retry", "idle", True))
        d.expect_silence(0.1)
        d.finish()

    def test_abort_retry_during_a_running_attempt_changes_nothing(self):
        d = self.spawn(plan=[{"delayMs": 150, "text": "still here"}])
        d.send(b'{"type":"prompt","message":"q"}\n{"type":"abort_retry","id":"ar"}\n')
        msgs = d.collect_until(is_type("agent_end"))
        r = [m for m in msgs if m.get("id") == "ar"][0]
        self.assertIs(r["success"], True)
        self.assertNotIn("auto_retry_end", types(msgs))
        self.assertEqual(text_of(msgs[-1]["messages"][-1]), "still here")
        d.finish()


class AbortTests(DaemonTestCase):
    def test_abort_during_backoff_ends_chain_and_run_before_its_response(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "never"}], sets=SLOW)
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("auto_retry_start"))
        d.send({"type": "abort", "id": "ab"})
        msgs = d.collect_until(is_response("abort", "ab"))
        self.assertEqual(signature(msgs), ["auto_retry_end", "agent_end", "response:abort"])
        self.assertEqual((msgs[0]["success"], msgs[0]["attempt"], msgs[0]["finalError"]),
                         (False, 1, "Retry cancelled"))
        self.assertEqual(msgs[2]["success"], True)
        self.assertEqual(msgs[2]["data"]["discardedMessages"], [])
        d.expect_silence(0.2)
        d.finish()

    def test_abort_during_a_hang_ends_the_message_as_aborted(self):
        d = self.spawn(plan=[{"hang": True}])
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(assistant_start)
        d.send({"type": "abort", "id": "ab"})
        msgs = d.collect_until(is_response("abort", "ab"))
        self.assertEqual(signature(msgs), ["message_end:assistant", "turn_end", "agent_end",
                                           "response:abort"])
        m = msgs[0]["message"]
        self.assertEqual((m["stopReason"], m["errorMessage"]), ("aborted", "Request was aborted"))
        self.assertEqual(msgs[3]["data"]["discardedMessages"], [])
        self.assertIs(d.request({"type": "get_state"})["data"]["isStreaming"], False)
        d.finish()

    def test_abort_during_a_hang_in_an_open_chain_closes_the_chain(self):
        d = self.spawn(plan=[{"error": "503"}, {"hang": True}], sets={"retry.baseDelayMs": 1})
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("auto_retry_start"))
        d.wait_for(assistant_start)
        d.send({"type": "abort", "id": "ab"})
        msgs = d.collect_until(is_response("abort", "ab"))
        self.assertEqual(signature(msgs), ["message_end:assistant", "turn_end", "auto_retry_end",
                                           "agent_end", "response:abort"])
        self.assertEqual(msgs[0]["message"]["stopReason"], "aborted")
        self.assertEqual((msgs[2]["success"], msgs[2]["attempt"], msgs[2]["finalError"]),
                         (False, 1, "Retry cancelled"))
        d.finish()

    def test_abort_during_a_stream_stops_it(self):
        words = " ".join("w%d" % i for i in range(60))
        d = self.spawn(plan=[{"text": words}], sets={"sim.chunkDelayMs": 20})
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(lambda m: m.get("type") == "message_update"
                   and m["assistantMessageEvent"]["type"] == "text_delta")
        d.send({"type": "abort", "id": "ab"})
        msgs = d.collect_until(is_response("abort", "ab"))
        sig = signature(msgs)
        self.assertEqual(sig[-4:], ["message_end:assistant", "turn_end", "agent_end",
                                    "response:abort"])
        m = msgs[-4]["message"]
        self.assertEqual(m["stopReason"], "aborted")
        streamed = "".join(deltas(d.seen()))
        self.assertTrue(words.startswith(streamed) and len(streamed) < len(words), streamed)
        d.expect_silence(0.15)  # no more deltas
        d.finish()

    def test_abort_discards_queued_messages_and_lists_them(self):
        d = self.spawn(plan=[{"hang": True}])
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(assistant_start)
        for cmd in ({"type": "follow_up", "message": "f1"},
                    {"type": "prompt", "message": "s1", "streamingBehavior": "steer"},
                    {"type": "steer", "message": "s2"},
                    {"type": "prompt", "message": "f2", "streamingBehavior": "followUp"}):
            self.assertIs(d.request(cmd)["success"], True)
        self.assertEqual(d.request({"type": "get_state"})["data"]["pendingMessageCount"], 4)
        d.send({"type": "abort", "id": "ab"})
        msgs = d.collect_until(is_response("abort", "ab"))
        self.assertEqual(sorted(msgs[-1]["data"]["discardedMessages"]), ["f1", "f2", "s1", "s2"])
        self.assertNotIn("turn_start", types(msgs))
        d.expect_silence(0.15)
        self.assertEqual(d.request({"type": "get_state"})["data"]["pendingMessageCount"], 0)
        # The next prompt runs alone.
        msgs = self.run_prompt(d, "next")
        self.assertEqual(types(msgs).count("turn_start"), 1)
        self.assertEqual([user_text(m["message"]) for m in msgs
                          if m["type"] == "message_start" and role_of(m) == "user"], ["next"])
        d.finish()

    def test_abort_before_the_assistant_message_started_still_closes_it(self):
        d = self.spawn(plan=[{"delayMs": 5000, "text": "never"}])
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(lambda m: m.get("type") == "message_end" and role_of(m) == "user")
        d.send({"type": "abort", "id": "ab"})
        msgs = d.collect_until(is_response("abort", "ab"))
        self.assertEqual(signature(msgs), ["message_start:assistant", "message_end:assistant",
                                           "turn_end", "agent_end", "response:abort"])
        self.assertEqual(msgs[1]["message"]["stopReason"], "aborted")
        d.expect_silence(0.1)
        d.finish(timeout=2)  # nothing left pending: EOF exits at once

    def test_new_session_during_backoff_cancels_the_chain_first(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "never"}], sets=SLOW)
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("auto_retry_start"))
        d.send({"type": "new_session", "id": "ns"})
        msgs = d.collect_until(is_response("new_session", "ns"))
        self.assertEqual(signature(msgs), ["auto_retry_end", "agent_end", "response:new_session"])
        self.assertEqual(msgs[0]["finalError"], "Retry cancelled")
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual((st["isStreaming"], st["isRetrying"], st["retryAttempt"], st["messageCount"]),
                         (False, False, 0, 0))
        d.finish(timeout=2)

    def test_abort_when_idle_succeeds(self):
        d = self.spawn()
        r = d.request({"type": "abort"})
        self.assertIs(r["success"], True)
        self.assertEqual(r["data"]["discardedMessages"], [])
        d.expect_silence(0.05)
        d.finish()


class SetAutoRetryTests(DaemonTestCase):
    def test_disabling_mid_chain_lets_the_pending_retry_run_then_closes_the_chain_once(self):
        d = self.spawn(plan=[{"error": "503 first"}, {"error": "503 second"}, {"text": "never"}],
                       sets={"retry.baseDelayMs": 300})
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("auto_retry_start"))
        r = d.request({"type": "set_auto_retry", "enabled": False})
        self.assertIs(r["success"], True)
        msgs = d.collect_until(is_type("agent_end"))
        sig = signature(msgs)
        self.assertEqual(sig.count("turn_start"), 1, sig)  # the pending retry still ran
        self.assertEqual(sig[-4:], ["message_end:assistant", "turn_end", "auto_retry_end",
                                    "agent_end"])
        self.assertNotIn("auto_retry_start", sig)
        end = msgs[-2]
        self.assertEqual((end["success"], end["attempt"], end["finalError"]),
                         (False, 1, "503 second"))
        self.assertEqual(types(d.seen()).count("auto_retry_end"), 1)
        self.assertEqual(types(d.seen()).count("auto_retry_start"), 1)
        self.assertIs(d.request({"type": "get_state"})["data"]["autoRetryEnabled"], False)
        d.finish()

    def test_disabling_mid_chain_still_reports_a_successful_pending_retry(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "ok"}], sets={"retry.baseDelayMs": 300})
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("auto_retry_start"))
        d.request({"type": "set_auto_retry", "enabled": False})
        msgs = d.collect_until(is_type("agent_end"))
        self.assertEqual([(e["success"], e["attempt"]) for e in events(msgs, "auto_retry_end")],
                         [(True, 1)])
        d.finish()

    def test_disabled_retry_is_not_attempted_and_can_be_enabled_again(self):
        d = self.spawn(plan=[{"error": "503 off"}, {"error": "503 on"}, {"text": "ok"}], sets=FAST)
        self.assertIs(d.request({"type": "set_auto_retry", "enabled": False})["success"], True)
        self.assertIs(d.request({"type": "get_state"})["data"]["autoRetryEnabled"], False)
        msgs = self.run_prompt(d, "q1")
        self.assertNotIn("auto_retry_start", types(msgs))
        self.assertNotIn("auto_retry_end", types(msgs))
        self.assertEqual(msgs[-3]["message"]["errorMessage"], "503 off")
        self.assertIs(d.request({"type": "set_auto_retry", "enabled": True})["success"], True)
        msgs = self.run_prompt(d, "q2")
        self.assertEqual([s["errorMessage"] for s in events(msgs, "auto_retry_start")], ["503 on"])
        self.assertEqual(text_of(msgs[-1]["messages"][-1]), "ok")
        d.finish()


class CredentialFallbackTests(DaemonTestCase):
    def test_usage_limit_switches_credential_and_retries_at_once(self):
        d = self.spawn(plan=[{"error": "usage limit reached"}, {"text": "ok"}],
                       sets={"sim.credentials": ["a", "b"], "retry.baseDelayMs": 10000})
        t0 = time.monotonic()
        msgs = self.run_prompt(d, "q")
        self.assertLess(time.monotonic() - t0, 3.0)
        sig = signature(msgs)
        i = sig.index("retry_fallback_applied")
        self.assertEqual(sig[i - 1:i + 3], ["turn_end", "retry_fallback_applied",
                                            "auto_retry_start", "turn_start"])
        fb = msgs[i]
        self.assertEqual({k: fb[k] for k in ("kind", "from", "to")},
                         {"kind": "credential", "from": "a", "to": "b"})
        st = msgs[i + 1]
        self.assertEqual((st["attempt"], st["delayMs"], st["errorMessage"]),
                         (1, 0, "usage limit reached"))
        self.assertEqual([(e["success"], e["attempt"]) for e in events(msgs, "auto_retry_end")],
                         [(True, 1)])
        d.finish()

    def test_when_every_credential_is_exhausted_the_chain_ends_at_once_saying_when_it_resets(self):
        d = self.spawn(plan=[{"error": "usage limit reached"},
                             {"error": "usage limit reached", "status": 429,
                              "headers": {"retry-after": "15120"}},
                             {"text": "ok"}],
                       sets={"sim.credentials": ["a", "b"], "retry.baseDelayMs": 20})
        msgs = self.run_prompt(d, "q")
        self.assertEqual(len(events(msgs, "retry_fallback_applied")), 1)
        self.assertEqual([(s["attempt"], s["delayMs"], s["errorClass"]) for s in events(msgs, "auto_retry_start")],
                         [(1, 0, "usage_limit")])
        end = events(msgs, "auto_retry_end")[0]
        self.assertEqual((end["success"], end["errorClass"], end["rule"]), (False, "usage_limit", "text:usageLimitPatterns[1]"))
        self.assertEqual(end["finalError"], "usage limit reached (usage limit: resets in 4h12m)")
        self.assertEqual(len(events(msgs, "turn_start")), 2, "the spent quota is not tried a third time")
        d.finish()

    def test_usage_limit_without_credentials_ends_at_once_instead_of_retrying(self):
        d = self.spawn(plan=[{"error": "usage limit reached"}, {"text": "ok"}], sets=FAST)
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("retry_fallback_applied", types(msgs))
        self.assertEqual(events(msgs, "auto_retry_start"), [])
        end = [m for m in msgs if m.get("type") == "message_end" and m["message"]["role"] == "assistant"][-1]
        self.assertEqual(end["message"]["errorMessage"],
                         "usage limit reached (usage limit: no other credential or model to switch to)")
        d.finish()

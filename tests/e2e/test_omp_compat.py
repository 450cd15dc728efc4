"""oh-my-pi's commands and busy rules: abort_and_prompt, get_available_commands,
and a prompt that cannot run answered success:false (never accepted and lost).

oh-my-pi's RpcClient resolves prompt() and abortAndPrompt() whatever the
response says, so what matters on the wire is that an accepted command runs
and a refused one says so."""
import os
import sys
import tempfile
import time
import unittest
from pathlib import Path

from harness import DaemonTestCase, is_type, role_of, scaled, signature, text_of, types, user_text

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402
from jsonschema_lite import Validator  # noqa: E402

VALIDATOR = Validator(Path(HERE).parent.parent / "protocol" / "schemas")
SLOW = {"retry.baseDelayMs": 5000}   # a backoff that outlasts the test's commands
BUSY = ("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') "
        "to queue the message.")


def user_texts(msgs):
    return [user_text(m["message"]) for m in msgs
            if m.get("type") == "message_start" and role_of(m) == "user"]


def assistant_ends(msgs):
    return [m["message"] for m in msgs
            if m.get("type") == "message_end" and role_of(m) == "assistant"]


class OmpCase(DaemonTestCase):
    def assertValidResponse(self, r):
        self.assertEqual(VALIDATOR.errors(r, "responses.schema.json"), [], r)

    def abort_and_prompt(self, d, message, **extra):
        """Sends abort_and_prompt; returns everything up to the new run's agent_end."""
        cmd = {"type": "abort_and_prompt", "message": message, "id": "ap"}
        cmd.update(extra)
        d.send(cmd)
        return d.collect_until(lambda m: m.get("type") == "agent_end" and any(
            user_text(x) == message for x in m["messages"] if x.get("role") == "user"))


class GetAvailableCommandsTests(OmpCase):
    def test_get_available_commands_answers_omps_shape_with_no_slash_commands(self):
        d = self.spawn(plan=[])
        r = d.request({"type": "get_available_commands", "id": "g"})
        self.assertEqual((r["id"], r["command"], r["success"]), ("g", "get_available_commands", True))
        self.assertEqual(r["data"], {"commands": []})
        self.assertValidResponse(r)
        listed = d.request({"type": "get_commands"})["data"]["rpcCommands"]
        self.assertIn("get_available_commands", listed)
        self.assertIn("abort_and_prompt", listed)
        d.finish()


class AbortAndPromptTests(OmpCase):
    def test_abort_and_prompt_during_backoff_cancels_the_retry_and_runs_the_new_prompt(self):
        d = self.spawn(plan=[{"error": "503 Service Unavailable"}, {"text": "replacement answer"}],
                       sets=SLOW)
        d.send({"type": "prompt", "message": "first", "id": "p"})
        d.wait_for(is_type("auto_retry_start"))
        t0 = time.monotonic()
        msgs = self.abort_and_prompt(d, "replacement")
        self.assertLess(time.monotonic() - t0, scaled(2.5), "the 5 s backoff was not cut short")
        self.assertEqual(signature(msgs), [
            "auto_retry_end", "agent_end", "response:abort_and_prompt",
            "agent_start", "turn_start", "message_start:user", "message_end:user",
            "message_start:assistant", "update:text_start", "update:text_delta",
            "update:text_delta", "update:text_end", "message_end:assistant", "turn_end",
            "agent_end"])
        end = msgs[0]
        self.assertEqual((end["success"], end["attempt"], end["finalError"]),
                         (False, 1, "Retry cancelled"))
        r = msgs[2]
        self.assertEqual((r["id"], r["success"], r["data"]),
                         ("ap", True, {"discardedMessages": [], "disposition": "started",
                                       "agentInvoked": True}))
        self.assertValidResponse(r)
        self.assertEqual(user_texts(msgs), ["replacement"])
        # The plan's second step went to the new prompt: "first" was not retried.
        self.assertEqual(text_of(assistant_ends(msgs)[0]), "replacement answer")
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual((st["isStreaming"], st["isRetrying"], st["retryAttempt"]), (False, False, 0))
        self.assertEqual(types(d.seen()).count("auto_retry_start"), 1)
        d.finish()

    def test_abort_and_prompt_while_streaming_aborts_the_attempt_and_runs_the_new_prompt(self):
        d = self.spawn(plan=[{"hang": True}, {"text": "second answer"}])
        d.send({"type": "prompt", "message": "first"})
        d.wait_for(lambda m: m.get("type") == "message_start" and role_of(m) == "assistant")
        msgs = self.abort_and_prompt(d, "second")
        sig = signature(msgs)
        self.assertEqual(sig[:6], ["message_end:assistant", "turn_end", "agent_end",
                                   "response:abort_and_prompt", "agent_start", "turn_start"])
        aborted = msgs[0]["message"]
        self.assertEqual((aborted["stopReason"], aborted["errorMessage"]),
                         ("aborted", "Request was aborted"))
        self.assertNotIn("auto_retry_end", sig)  # no chain was open
        self.assertEqual(user_texts(msgs), ["second"])
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "second answer")
        d.finish()

    def test_abort_and_prompt_during_a_retried_attempt_closes_the_chain_as_cancelled(self):
        d = self.spawn(plan=[{"error": "503"}, {"hang": True}, {"text": "fresh"}],
                       sets={"retry.baseDelayMs": 10})
        d.send({"type": "prompt", "message": "first"})
        d.wait_for(is_type("auto_retry_start"))
        d.wait_for(lambda m: m.get("type") == "message_start" and role_of(m) == "assistant")
        msgs = self.abort_and_prompt(d, "fresh start")
        self.assertEqual(signature(msgs)[:5], ["message_end:assistant", "turn_end", "auto_retry_end",
                                               "agent_end", "response:abort_and_prompt"])
        self.assertEqual((msgs[2]["success"], msgs[2]["finalError"]), (False, "Retry cancelled"))
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "fresh")
        d.finish()

    def test_abort_and_prompt_when_idle_is_just_a_prompt(self):
        d = self.spawn(plan=[{"text": "hello"}])
        msgs = self.abort_and_prompt(d, "idle")
        self.assertEqual(signature(msgs)[:3], ["response:abort_and_prompt", "agent_start", "turn_start"])
        self.assertEqual(msgs[0]["data"], {"discardedMessages": [], "disposition": "started",
                                           "agentInvoked": True})
        self.assertEqual(types(msgs).count("agent_end"), 1)
        self.assertEqual(user_texts(msgs), ["idle"])
        self.assertEqual(text_of(assistant_ends(msgs)[0]), "hello")
        d.finish()

    def test_abort_and_prompt_drops_queued_messages_and_names_them(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "only this"}], sets=SLOW)
        d.send({"type": "prompt", "message": "first"})
        d.wait_for(is_type("auto_retry_start"))
        self.assertTrue(d.request({"type": "steer", "message": "s1"})["success"])
        self.assertTrue(d.request({"type": "follow_up", "message": "f1"})["success"])
        msgs = self.abort_and_prompt(d, "instead")
        r = [m for m in msgs if m.get("type") == "response"][0]
        self.assertEqual(r["data"], {"discardedMessages": ["s1", "f1"], "disposition": "started",
                                     "agentInvoked": True})
        self.assertEqual(user_texts(d.seen()), ["first", "instead"])
        d.expect_silence(0.1)
        self.assertEqual(d.request({"type": "get_state"})["data"]["pendingMessageCount"], 0)
        d.finish()

    def test_abort_and_prompt_with_images_and_its_own_retry_settings(self):
        d = self.spawn(plan=[{"error": "503"}, {"error": "503"}, {"text": "x"}], sets=SLOW)
        image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
        msgs = self.abort_and_prompt(d, "look", images=[image], retry={"maxRetries": 0})
        user = [m["message"] for m in msgs if m.get("type") == "message_start" and role_of(m) == "user"]
        self.assertEqual(user[0]["content"], [{"type": "text", "text": "look"}, image])
        # maxRetries 0 for this prompt only: its 503 ends the run, no backoff.
        self.assertNotIn("auto_retry_start", types(msgs))
        self.assertEqual(assistant_ends(msgs)[-1]["stopReason"], "error")
        d.finish()

    def test_refused_abort_and_prompt_aborts_nothing(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "recovered"}], sets={"retry.baseDelayMs": 400})
        d.send({"type": "prompt", "message": "first"})
        d.wait_for(is_type("auto_retry_start"))
        bad = d.request({"type": "abort_and_prompt", "message": "x", "retry": {"maxRetries": -1}})
        self.assertFalse(bad["success"])
        self.assertIn("retry.maxRetries", bad["error"])
        self.assertValidResponse(bad)
        missing = d.request({"type": "abort_and_prompt"})
        self.assertEqual(missing["error"], 'abort_and_prompt: missing required field "message" (a string)')
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual((st["isStreaming"], st["isRetrying"]), (True, True))
        # The chain goes on and recovers: nothing was cancelled.
        msgs = d.collect_until(is_type("agent_end"))
        self.assertEqual([(m["type"], m["success"]) for m in msgs if m["type"] == "auto_retry_end"],
                         [("auto_retry_end", True)])
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), "recovered")
        self.assertEqual(user_texts(d.seen()), ["first"])
        d.finish()


class PromptThatCannotRunTests(OmpCase):
    """A busy prompt without streamingBehavior is refused at once, with one
    response, and leaves nothing behind; with streamingBehavior it runs."""

    def test_prompt_during_backoff_is_refused_and_never_runs(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "ok"}], sets={"retry.baseDelayMs": 300})
        d.send({"type": "prompt", "message": "first"})
        d.wait_for(is_type("auto_retry_start"))
        r = d.request({"type": "prompt", "message": "second", "id": "p2"})
        self.assertEqual((r["id"], r["success"], r["error"]), ("p2", False, BUSY))
        self.assertValidResponse(r)
        d.collect_until(is_type("agent_end"))
        d.expect_silence(0.2)
        self.assertEqual([m for m in d.seen() if m.get("id") == "p2"], [r])  # one answer only
        self.assertEqual(user_texts(d.seen()), ["first"])
        d.finish()

    def test_prompt_while_streaming_is_refused_and_never_runs(self):
        d = self.spawn(plan=[{"delayMs": 300, "text": "a b"}])
        d.send({"type": "prompt", "message": "first"})
        d.wait_for(lambda m: m.get("type") == "message_end" and role_of(m) == "user")  # attempt running
        r = d.request({"type": "prompt", "message": "second", "id": "p2"})
        self.assertEqual((r["success"], r["error"]), (False, BUSY))
        d.collect_until(is_type("agent_end"))
        d.expect_silence(0.2)
        self.assertEqual(user_texts(d.seen()), ["first"])
        d.finish()

    def test_prompt_with_streaming_behavior_during_backoff_runs_in_the_same_run(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "ok"}], sets={"retry.baseDelayMs": 200})
        d.send({"type": "prompt", "message": "first"})
        d.wait_for(is_type("auto_retry_start"))
        for behavior, text in (("steer", "s"), ("followUp", "f")):
            r = d.request({"type": "prompt", "message": text, "streamingBehavior": behavior})
            self.assertIs(r["success"], True)
        msgs = d.collect_until(is_type("agent_end"))
        self.assertEqual(user_texts(msgs), ["s", "f"])
        self.assertEqual(types(d.seen()).count("agent_start"), 1)
        d.finish()


class FleetHoldTests(OmpCase):
    """A 429 with retry-after: 60 seen by this daemon makes the fleet hold its
    next attempt (fleet.mode "user", its own runtime dir): a fleet hold."""

    def held_daemon(self):
        srv = FakeServer([{"status": 429, "headers": {"retry-after": "60"}}], max_seconds=60).start()
        self.addCleanup(srv.stop)
        run_dir = tempfile.mkdtemp(prefix="retryd-e2e-omp-")
        os.chmod(run_dir, 0o700)
        cfg = {"api": "openai-completions", "baseUrl": srv.url + "/v1", "apiKeyEnv": "OMP_KEY",
               "models": ["m1"]}
        d = self.spawn(args=["--provider", "fake", "--no-session"],
                       settings={"providers": {"fake": cfg}},
                       sets={"retry.maxRetries": 0, "fleet.mode": "user"},
                       env={"OMP_KEY": "sk-omp-0123456789abcdef0123", "XDG_RUNTIME_DIR": run_dir})
        self.run_prompt(d, "blocked")
        d.send({"type": "prompt", "message": "held", "id": "p"})
        w = d.wait_type("fleet_wait")
        self.assertEqual(w["reason"], "server-block")
        return d, srv

    def test_prompt_during_a_fleet_hold_is_refused(self):
        d, srv = self.held_daemon()
        r = d.request({"type": "prompt", "message": "again", "id": "p2"})
        self.assertEqual((r["success"], r["error"]), (False, BUSY))
        r = d.request({"type": "prompt", "message": "later", "streamingBehavior": "followUp"})
        self.assertIs(r["success"], True)
        self.assertEqual(d.request({"type": "get_state"})["data"]["pendingMessageCount"], 1)
        r = d.request({"type": "abort", "id": "a"})
        self.assertEqual(r["data"], {"discardedMessages": ["later"]})
        self.assertNotIn("again", user_texts(d.seen()))
        self.assertEqual(len(srv.requests()), 1)
        d.finish()

    def test_abort_and_prompt_during_a_fleet_hold_cancels_it_and_starts_the_new_prompt(self):
        d, srv = self.held_daemon()
        d.send({"type": "abort_and_prompt", "message": "replacement", "id": "ap"})
        msgs = d.collect_until(lambda m: m.get("type") == "message_start" and user_text(m["message"]) == "replacement")
        sig = signature(msgs)
        # The held attempt closes as an aborted message, as abort closes it.
        self.assertEqual(sig[:5], ["message_start:assistant", "message_end:assistant", "turn_end",
                                   "agent_end", "response:abort_and_prompt"])
        self.assertEqual(msgs[1]["message"]["errorMessage"], "Fleet wait cancelled")
        self.assertIs(msgs[4]["success"], True)
        # The new prompt runs; the 60 s block still holds its attempt.
        d.wait_type("fleet_wait")
        d.request({"type": "abort"})
        self.assertEqual(len(srv.requests()), 1)
        d.finish()


if __name__ == "__main__":
    unittest.main()


class EventFilterTests(OmpCase):
    """set_event_filter, oh-my-pi's shape: {events: string[] | null}."""

    def test_a_filter_forwards_only_its_types_and_never_hides_results_or_answers(self):
        d = self.spawn(args=["--no-session"], sets={"retry.baseDelayMs": 5}, settled=True,
                       plan=[{"error": "503 busy"}, {"text": "one two"}])
        r = d.request({"type": "set_event_filter", "id": "f",
                       "events": ["auto_retry_start", "auto_retry_end", "tool_execution_update"]})
        self.assertEqual(r["data"], {"events": ["auto_retry_start", "auto_retry_end",
                                                "tool_execution_update"]})
        self.assertValidResponse(r)
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        msgs = d.collect_until(lambda m: m.get("type") == "session_settled")
        self.assertEqual(types(msgs), ["response", "auto_retry_start", "auto_retry_end",
                                       "prompt_result", "agent_settled", "session_settled"])
        r = d.request({"type": "set_event_filter", "id": "f2", "events": None})
        self.assertEqual(r["data"], {"events": None})
        d.send({"type": "prompt", "id": "p2", "message": "again"})
        msgs = d.collect_until(lambda m: m.get("type") == "session_settled")
        self.assertIn("message_update", types(msgs))
        self.assertIn("agent_end", types(msgs))

    def test_message_ids_count_on_while_message_events_are_filtered_out(self):
        d = self.spawn(args=["--no-session"], plan=[{"text": "a"}, {"text": "b"}], settled=True)
        d.request({"type": "set_event_filter", "id": "f", "events": ["agent_start", "agent_end"]})
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        msgs = d.collect_until(lambda m: m.get("type") == "session_settled")
        self.assertNotIn("message_start", types(msgs))
        d.request({"type": "set_event_filter", "id": "f2", "events": None})
        msgs = self.run_prompt(d, "again")
        self.assertEqual([m["messageId"] for m in msgs if m.get("type") == "message_start"],
                         ["msg-3", "msg-4"])

    def test_a_filter_without_message_update_silences_the_fast_delta_lines(self):
        d = self.spawn(args=["--no-session"], sets={"rpc.messageUpdates": "delta"},
                       plan=[{"text": "one two three"}])
        d.request({"type": "set_event_filter", "id": "f", "events": [
            "agent_start", "agent_end", "message_start", "message_end"]})
        msgs = self.run_prompt(d)
        self.assertEqual(types(msgs), ["response", "agent_start", "message_start", "message_end",
                                       "message_start", "message_end", "agent_end"])
        self.assertEqual(text_of(msgs[-2]["message"]), "one two three")

    def test_bad_filters_are_refused_with_a_sentence_and_the_old_filter_stays(self):
        d = self.spawn(args=["--no-session"], plan=[{"text": "ok"}])
        cases = [
            ({"events": ["mesage_end"]},
             'set_event_filter: unknown event type "mesage_end" (did you mean "message_end"?)'),
            ({"events": ["agent_start"]},
             'set_event_filter: "agent_start" without "agent_end" would show a run start but '
             'never its end; name both, or the end alone'),
            ({"events": ["auto_retry_start", "message_update"]},
             'set_event_filter: "auto_retry_start" without "auto_retry_end" would show a retry '
             'chain start but never its end; name both, or the end alone'),
            ({"events": "agent_end"},
             "events must be null or an array of non-empty event type strings"),
            ({"events": [""]}, "events must be null or an array of non-empty event type strings "
                               "(events[0] is not)"),
            ({}, 'set_event_filter: missing required field "events" (null, or an array of event '
                 'type names)'),
        ]
        for extra, error in cases:
            with self.subTest(extra=extra):
                r = d.request(dict({"type": "set_event_filter", "id": "f"}, **extra))
                self.assertEqual((r["success"], r["error"]), (False, error))
        self.assertIn("message_update", types(self.run_prompt(d)))

    def test_another_programs_event_names_are_accepted_and_the_selection_comes_back_once_each(self):
        # oh-my-pi takes any name (config_warnings_changed, session_switch ...
        # are its own); only a near miss of a name retryd sends is a typo.
        d = self.spawn(args=["--no-session"], plan=[{"text": "ok"}], settled=True)
        r = d.request({"type": "set_event_filter", "id": "f", "events": [
            "agent_end", "config_warnings_changed", "agent_end", "message_update"]})
        self.assertTrue(r["success"], r)
        self.assertEqual(r["data"]["events"],
                         ["agent_end", "config_warnings_changed", "message_update"])
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        msgs = d.collect_until(lambda m: m.get("type") == "session_settled")
        self.assertEqual(sorted(set(types(msgs)) - {"response"}),
                         ["agent_end", "agent_settled", "message_update", "prompt_result",
                          "session_settled"])


class OpenSessionTests(OmpCase):
    """open_session {sessionDir}: a retryd session goes on as --continue/--resume do."""

    def first_session(self, d):
        self.run_prompt(d, "remember me")
        return d.request({"type": "get_state", "id": "s"})["data"]["sessionFile"]

    def test_open_session_of_a_directory_continues_its_newest_retryd_session(self):
        d = self.spawn(args=["--session-dir", "{tmp}/a"], plan=[{"text": "first"}])
        path = self.first_session(d)
        d.finish()
        d2 = self.spawn(args=["--session-dir", "{tmp}/b"], plan=[{"text": "second"}])
        r = d2.request({"type": "open_session", "id": "o", "sessionDir": os.path.dirname(path)})
        self.assertValidResponse(r)
        self.assertEqual(r["data"], {"cancelled": False, "resumed": True,
                                     "sessionId": Path(path).stem.split("_", 1)[1],
                                     "sessionFile": path})
        texts = [text_of(m) for m in d2.request({"type": "get_messages"})["data"]["messages"]]
        self.assertEqual(texts, ["remember me", "first"])
        self.run_prompt(d2, "more")
        lines = Path(path).read_text().splitlines()
        self.assertEqual(sum('"type":"session"' in ln for ln in lines), 1)
        self.assertIn("more", lines[-2])

    def test_open_session_of_a_file_resumes_it_and_of_an_empty_directory_starts_there(self):
        d = self.spawn(args=["--session-dir", "{tmp}/a"], plan=[{"text": "first"}])
        path = self.first_session(d)
        d.finish()
        d2 = self.spawn(args=["--session-dir", "{tmp}/b"], plan=[{"text": "x"}])
        r = d2.request({"type": "open_session", "id": "o", "sessionDir": path})
        self.assertEqual((r["data"]["resumed"], r["data"]["sessionFile"]), (True, path))
        again = d2.request({"type": "open_session", "id": "o2", "sessionDir": path})
        self.assertEqual(again["data"], r["data"])
        empty = os.path.join(d2.tmp, "empty")
        os.makedirs(empty)
        r = d2.request({"type": "open_session", "id": "o3", "sessionDir": empty})
        self.assertIs(r["data"]["resumed"], False)
        self.assertEqual(os.path.dirname(r["data"]["sessionFile"]), empty)
        self.assertEqual(d2.request({"type": "get_messages"})["data"]["messages"], [])

    def test_open_session_is_refused_when_busy_foreign_missing_or_without_a_session_file(self):
        d = self.spawn(args=["--session-dir", "{tmp}/a"], plan=[{"hang": True}])
        foreign = os.path.join(d.tmp, "omp.jsonl")
        Path(foreign).write_text('{"type":"message","message":{"role":"user"}}\n')
        r = d.request({"type": "open_session", "id": "o", "sessionDir": foreign})
        self.assertEqual(r["error"], "open_session: cannot resume session file %s: not a session "
                                     "file (line 1 comes before any {\"type\":\"session\"} header)"
                         % foreign)
        r = d.request({"type": "open_session", "id": "o", "sessionDir": d.tmp + "/nowhere"})
        self.assertEqual(r["error"], "open_session: %s/nowhere: No such file or directory" % d.tmp)
        r = d.request({"type": "open_session", "id": "o", "sessionDir": ""})
        self.assertEqual(r["error"], 'open_session: field "sessionDir" must not be empty')
        d.send({"type": "prompt", "id": "p", "message": "hi"})
        d.wait_for(lambda m: m.get("type") == "message_start")
        r = d.request({"type": "open_session", "id": "o", "sessionDir": d.tmp})
        self.assertEqual(r["error"], "open_session: a run is in progress (a prompt, its retries "
                                     "or queued messages); wait for session_settled or abort it first")
        d2 = self.spawn(args=["--no-session"], plan=[])
        r = d2.request({"type": "open_session", "id": "o", "sessionDir": d.tmp})
        self.assertEqual(r["error"], "open_session: this daemon keeps no session file "
                                     "(started with --no-session)")

    def test_open_session_takes_the_session_in_use_under_any_name_and_refuses_a_fifo(self):
        d = self.spawn(args=["--session-dir", "{tmp}/a"], plan=[{"text": "first"}])
        path = self.first_session(d)
        # The same file through a trailing-slash directory, "./" and a symlink
        # changes nothing: the conversation stays.
        link = os.path.join(d.tmp, "link.jsonl")
        os.symlink(path, link)
        for name in (os.path.dirname(path) + "/", os.path.dirname(path) + "/./" +
                     os.path.basename(path), link):
            with self.subTest(name=name):
                r = d.request({"type": "open_session", "id": "o", "sessionDir": name})
                self.assertTrue(r["success"], r)
                texts = [text_of(m) for m in
                         d.request({"type": "get_messages"})["data"]["messages"]]
                self.assertEqual(texts, ["remember me", "first"])
        fifo = os.path.join(d.tmp, "pipe.jsonl")
        os.mkfifo(fifo)
        r = d.request({"type": "open_session", "id": "o", "sessionDir": fifo}, timeout=3)
        self.assertEqual(r["error"], "open_session: %s is not a regular file (a session file or "
                                     "its directory)" % fifo)

    def test_open_session_of_a_directory_skips_an_empty_newest_file(self):
        d = self.spawn(args=["--session-dir", "{tmp}/a"], plan=[{"text": "first"}])
        path = self.first_session(d)
        d.finish()
        empty = os.path.join(os.path.dirname(path), "zzzz-crashed-before-its-header.jsonl")
        Path(empty).write_text("")
        os.utime(empty, (os.path.getmtime(path) + 10,) * 2)
        d2 = self.spawn(args=["--session-dir", "{tmp}/b"], plan=[{"text": "x"}])
        r = d2.request({"type": "open_session", "id": "o", "sessionDir": os.path.dirname(path)})
        self.assertEqual((r["success"], r["data"]["sessionFile"]), (True, path))

    def test_get_tree_is_refused_with_the_reason(self):
        d = self.spawn(args=["--no-session"], plan=[])
        r = d.request({"type": "get_tree", "id": "t"})
        self.assertEqual((r["id"], r["success"], r["error"]), (
            "t", False, "get_tree is not supported: a retryd session is one line of messages, "
                        "not a tree of branches; get_entries lists them"))

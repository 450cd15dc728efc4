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

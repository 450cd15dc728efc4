"""--continue and --resume: a session file becomes the context again and goes on."""
import json
import os
import time
from pathlib import Path

from harness import DaemonTestCase, run_cli, text_of, user_text
from jsonschema_lite import Validator

SCHEMAS = Path(__file__).resolve().parents[2] / "protocol" / "schemas"

FAST = {"retry.baseDelayMs": 1}
LONG = "x" * 400  # 100 of the sim's input tokens: shows whether the provider saw it


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def sessions_dir(d):
    return os.path.join(d.state_home, "retryd", "sessions")


def assistant_ends(msgs):
    return [m["message"] for m in msgs
            if m.get("type") == "message_end" and m["message"]["role"] == "assistant"]


class ResumeTests(DaemonTestCase):
    def first_session(self, plan, prompt=LONG, args=()):
        """A daemon that runs one prompt and exits: (its state, its file)."""
        d = self.spawn(plan=plan, sets=FAST, args=list(args))
        st = d.request({"type": "get_state"})["data"]
        self.run_prompt(d, prompt)
        d.finish()
        return d, st

    def test_resume_loads_history_without_retried_attempts_and_appends_to_the_same_file(self):
        d1, st1 = self.first_session([{"error": "503 first"}, {"text": "A1"}])
        path = st1["sessionFile"]
        lines = read_jsonl(path)
        # The retried attempt is in the file, marked; the answer is not.
        self.assertEqual([(ln["message"]["role"], ln.get("retried")) for ln in lines[1:]],
                         [("user", None), ("assistant", True), ("assistant", None)])

        d = self.spawn(plan=[{"text": "A2"}], args=["--resume", path])
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual((st["sessionFile"], st["sessionId"], st["messageCount"]),
                         (path, st1["sessionId"], 2))
        msgs = d.request({"type": "get_messages"})["data"]["messages"]
        self.assertEqual([(m["role"], m.get("stopReason")) for m in msgs],
                         [("user", None), ("assistant", "stop")])
        self.assertEqual((user_text(msgs[0]), text_of(msgs[1])), (LONG, "A1"))
        got = self.run_prompt(d, "q2")
        [end] = assistant_ends(got)
        self.assertEqual(text_of(end), "A2")
        # The provider was sent the earlier messages: 400 + 2 + 2 chars.
        self.assertEqual(end["usage"]["input"], 101)
        self.assertEqual(len(d.request({"type": "get_messages"})["data"]["messages"]), 4)
        d.finish()
        lines = read_jsonl(path)
        self.assertEqual([ln["type"] for ln in lines], ["session"] + ["message"] * 5,
                         "appended to the same file, no second header")
        self.assertEqual(user_text(lines[4]["message"]), "q2")
        self.assertEqual(text_of(lines[5]["message"]), "A2")
        self.assertEqual(os.listdir(sessions_dir(d1)), [os.path.basename(path)])
        self.assertEqual(os.listdir(sessions_dir(d)) if os.path.isdir(sessions_dir(d)) else [],
                         [], "no new file in the resuming daemon's own directory")

    def test_resume_keeps_a_final_failure_and_loads_the_last_session_of_a_file(self):
        path_arg = "{tmp}/one.jsonl"
        d1 = self.spawn(plan=[{"text": "old"}, {"error": "400 Bad Request: invalid model"}],
                        args=["--session", path_arg])
        self.run_prompt(d1, "before new_session")
        d1.request({"type": "new_session"})
        second = d1.request({"type": "get_state"})["data"]["sessionId"]
        self.run_prompt(d1, "after")
        d1.finish()
        path = os.path.join(d1.tmp, "one.jsonl")
        d = self.spawn(plan=[], args=["--resume", path])
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual(st["sessionId"], second)
        msgs = d.request({"type": "get_messages"})["data"]["messages"]
        self.assertEqual([(m["role"], m.get("stopReason")) for m in msgs],
                         [("user", None), ("assistant", "error")])
        self.assertEqual(user_text(msgs[0]), "after")
        d.finish()

    def test_continue_picks_the_newest_file_in_the_session_directory(self):
        sdir = "{tmp}/sess"
        d1 = self.spawn(plan=[{"text": "older answer"}], args=["--session-dir", sdir])
        self.run_prompt(d1, "older")
        d1.finish()
        d2 = self.spawn(plan=[{"text": "newer answer"}], args=["--session-dir", sdir])
        self.run_prompt(d2, "newer")
        newer = d2.request({"type": "get_state"})["data"]
        d2.finish()
        older_path = [os.path.join(d1.tmp, "sess", f) for f in os.listdir(os.path.join(d1.tmp, "sess"))]
        self.assertEqual(len(older_path), 1)
        # Both in one directory; the older file gets the older mtime.
        target = os.path.join(d1.tmp, "sess")
        os.rename(newer["sessionFile"], os.path.join(target, os.path.basename(newer["sessionFile"])))
        past = time.time() - 3600
        os.utime(older_path[0], (past, past))
        self.assertTrue(newer["sessionFile"].startswith(os.path.join(d2.tmp, "sess")))

        d = self.spawn(plan=[], args=["--session-dir", target, "--continue"])
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual(st["sessionId"], newer["sessionId"])
        self.assertEqual(st["sessionFile"],
                         os.path.join(target, os.path.basename(newer["sessionFile"])))
        msgs = d.request({"type": "get_messages"})["data"]["messages"]
        self.assertEqual(user_text(msgs[0]), "newer")
        d.finish()

        # Touch the older one: now it is the newest.
        os.utime(older_path[0], None)
        os.utime(st["sessionFile"], (past, past))
        d = self.spawn(plan=[], args=["--session-dir", target, "--continue"])
        msgs = d.request({"type": "get_messages"})["data"]["messages"]
        self.assertEqual(user_text(msgs[0]), "older")
        d.finish()

    def test_continue_uses_the_default_directory_and_new_session_starts_a_new_file_there(self):
        d1, st1 = self.first_session([{"text": "a"}])
        d = self.spawn(plan=[{"text": "b"}], args=["--continue"],
                       env={"XDG_STATE_HOME": d1.state_home})
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual((st["sessionFile"], st["sessionId"]), (st1["sessionFile"], st1["sessionId"]))
        d.request({"type": "new_session"})
        st2 = d.request({"type": "get_state"})["data"]
        self.assertNotEqual(st2["sessionId"], st1["sessionId"])
        self.assertEqual(os.path.dirname(st2["sessionFile"]), sessions_dir(d1))
        self.run_prompt(d, "fresh")
        d.finish()
        self.assertEqual(len(read_jsonl(st1["sessionFile"])), 3, "the resumed file is untouched")
        lines = read_jsonl(st2["sessionFile"])
        self.assertEqual((lines[0]["type"], lines[0]["id"]), ("session", st2["sessionId"]))

    def test_continue_with_no_session_file_is_an_error(self):
        rc, out, err = run_cli(["--continue"], stdin_data=b"")
        self.assertEqual(rc, 1, err)
        self.assertIn("--continue", err)
        self.assertIn("retryd/sessions", err)
        self.assertNotIn('"ready"', out)

    def test_resume_of_a_missing_file_is_an_error_naming_it(self):
        rc, out, err = run_cli(["--resume", "/nonexistent/s.jsonl"])
        self.assertEqual(rc, 1, err)
        self.assertIn("/nonexistent/s.jsonl", err)
        self.assertIn("No such file", err)
        self.assertEqual(out, "")

    def test_resume_of_a_garbage_or_headerless_file_is_an_error_naming_it(self):
        d = self.spawn(plan=[])
        d.finish()
        cases = {
            "garbage.jsonl": "this is not json\n",
            "headerless.jsonl": '{"type":"message","message":{"role":"user","content":[]}}\n',
            "empty.jsonl": "",
            "badline.jsonl": '{"type":"session","version":1,"id":"abc","timestamp":"","cwd":""}\n'
                             '{"type":"message","message":\n',
        }
        for name, body in cases.items():
            path = os.path.join(d.tmp, name)
            with open(path, "w") as f:
                f.write(body)
            rc, out, err = run_cli(["--resume", path])
            self.assertEqual(rc, 1, (name, err))
            self.assertIn(path, err)
            self.assertIn("cannot resume session file", err)
            self.assertEqual(out, "")
        rc, _, err = run_cli(["--resume", d.tmp])
        self.assertEqual(rc, 1, err)
        self.assertIn(d.tmp, err)

    def test_continue_and_resume_with_session_options_are_usage_errors(self):
        for args in (["--continue", "--no-session"], ["--continue", "--session", "x.jsonl"],
                     ["--resume", "x.jsonl", "--no-session"],
                     ["--resume", "x.jsonl", "--session", "y.jsonl"],
                     ["--continue", "--resume", "x.jsonl"],
                     ["--session-dir", "d", "--no-session"],
                     ["--session-dir", "d", "--session", "x.jsonl"]):
            rc, out, err = run_cli(args)
            self.assertEqual(rc, 2, (args, err))
            self.assertIn("exclude", err)
            self.assertEqual(out, "")

    def test_help_names_the_session_directory_and_the_resume_options(self):
        rc, out, _ = run_cli(["--help"])
        self.assertEqual(rc, 0)
        for word in ("--session-dir", "--continue", "--resume", "~/.local/state/retryd/sessions",
                     "$XDG_STATE_HOME/retryd/sessions"):
            self.assertIn(word, out)

    def test_session_dir_holds_new_session_files(self):
        d = self.spawn(plan=[{"text": "a"}], args=["--session-dir", "{tmp}/elsewhere/s"])
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual(os.path.dirname(st["sessionFile"]), os.path.join(d.tmp, "elsewhere", "s"))
        self.run_prompt(d, "q")
        d.finish()
        self.assertEqual(len(read_jsonl(st["sessionFile"])), 3)
        self.assertFalse(os.path.exists(sessions_dir(d)))

    def test_resumed_file_lines_still_match_the_session_schema(self):
        d1, st1 = self.first_session([{"error": "503"}, {"text": "A1"}])
        d = self.spawn(plan=[{"error": "503"}, {"text": "A2"}], sets=FAST,
                       args=["--resume", st1["sessionFile"]])
        got = self.run_prompt(d, "again")
        self.assertIn("auto_retry_start", [m.get("type") for m in got])
        d.finish()
        lines = read_jsonl(st1["sessionFile"])
        self.assertEqual([ln.get("retried") for ln in lines[1:]],
                         [None, True, None, None, True, None])
        self.assertEqual(sum(1 for ln in lines if ln["type"] == "session"), 1)
        validator = Validator(SCHEMAS)
        for i, line in enumerate(lines):
            self.assertEqual(validator.errors(line, "session.schema.json"), [],
                             "line %d: %s" % (i + 1, line))

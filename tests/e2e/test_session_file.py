"""The session file: a JSONL journal of every message, failed attempts included."""
import glob
import json
import os

from harness import DaemonTestCase, is_type, text_of, user_text

FAST = {"retry.baseDelayMs": 1}


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def all_files(root):
    out = []
    for dirpath, _, files in os.walk(root):
        out += [os.path.join(dirpath, f) for f in files]
    return out


class SessionFileTests(DaemonTestCase):
    def _check_header(self, header, d, session_id):
        self.assertEqual(header["type"], "session")
        self.assertEqual(header["version"], 1)
        self.assertEqual(header["id"], session_id)
        self.assertIsInstance(header["timestamp"], str)
        self.assertTrue(header["timestamp"])
        self.assertEqual(os.path.realpath(header["cwd"]), os.path.realpath(d.cwd))

    def test_session_option_writes_header_then_every_message_including_failed_attempts(self):
        d = self.spawn(plan=[{"error": "503 first"}, {"error": "overloaded"}, {"text": "good"}],
                       sets=FAST, args=["--session", "{tmp}/s/one.jsonl"])
        path = os.path.join(d.tmp, "s", "one.jsonl")
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual(st["sessionFile"], path)
        self.run_prompt(d, "question")
        d.finish()
        lines = read_jsonl(path)
        self._check_header(lines[0], d, st["sessionId"])
        body = lines[1:]
        self.assertTrue(all(ln["type"] == "message" for ln in body), body)
        msgs = [ln["message"] for ln in body]
        self.assertEqual([(m["role"], m.get("stopReason"), m.get("errorMessage")) for m in msgs],
                         [("user", None, None), ("assistant", "error", "503 first"),
                          ("assistant", "error", "overloaded"), ("assistant", "stop", None)])
        self.assertEqual(user_text(msgs[0]), "question")
        self.assertEqual(text_of(msgs[3]), "good")
        self.assertFalse(glob.glob(os.path.join(d.state_home, "**", "*.jsonl"), recursive=True))

    def test_default_session_file_is_under_xdg_state_home(self):
        d = self.spawn(plan=[{"text": "a"}])
        st = d.request({"type": "get_state"})["data"]
        self.run_prompt(d, "q")
        d.finish()
        files = glob.glob(os.path.join(d.state_home, "retryd", "sessions", "*.jsonl"))
        self.assertEqual(len(files), 1, all_files(d.tmp))
        self.assertEqual(os.path.realpath(st["sessionFile"]), os.path.realpath(files[0]))
        lines = read_jsonl(files[0])
        self._check_header(lines[0], d, st["sessionId"])
        self.assertEqual([ln["message"]["role"] for ln in lines[1:]], ["user", "assistant"])

    def test_default_session_file_falls_back_to_home_without_xdg_state_home(self):
        d = self.spawn(plan=[{"text": "a"}], env={"XDG_STATE_HOME": None})
        st = d.request({"type": "get_state"})["data"]
        self.run_prompt(d, "q")
        d.finish()
        files = glob.glob(os.path.join(d.home, ".local", "state", "retryd", "sessions", "*.jsonl"))
        self.assertEqual(len(files), 1, all_files(d.tmp))
        self.assertEqual(os.path.realpath(st["sessionFile"]), os.path.realpath(files[0]))

    def test_no_session_writes_nothing(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "a"}], sets=FAST, args=["--no-session"])
        st = d.request({"type": "get_state"})["data"]
        self.assertIsNone(st.get("sessionFile"))
        self.run_prompt(d, "q")
        d.finish()
        # The fleet's shared records (XDG_RUNTIME_DIR) are not session state.
        run = os.path.join(d.tmp, "run") + os.sep
        self.assertEqual([f for f in all_files(d.tmp) if not f.startswith(run)], [])

    def test_messages_are_in_the_file_before_the_run_ends(self):
        d = self.spawn(plan=[{"hang": True}], args=["--session", "live.jsonl"])
        d.send({"type": "prompt", "message": "in flight"})
        d.wait_for(lambda m: m.get("type") == "message_start"
                   and m["message"]["role"] == "assistant")
        path = os.path.join(d.cwd, "live.jsonl")
        lines = read_jsonl(path)
        self.assertEqual([ln["type"] for ln in lines], ["session", "message"])
        self.assertEqual(user_text(lines[1]["message"]), "in flight")
        d.request({"type": "abort"})
        d.wait_for(is_type("agent_end"))
        d.finish()

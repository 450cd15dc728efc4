"""Hardening through the binary: the session file survives a full disk, a kill
and a second writer; settings written back keep what the user edited; a CLI
profile's env is masked only when it is a secret, and the prompt reaches the
CLI as written; obsolete Retry-After dates; a CLI's leftover processes; a
closed stdout.

Every wait is bounded; polls of /proc have a deadline.
"""
import calendar
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import time

import harness
from harness import (REPO_ROOT, DaemonTestCase, binary_path, is_response, is_type, run_cli,
                     scaled, text_of, timing_sensitive, user_text)

sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

FAKE_AGENT = os.path.join(REPO_ROOT, "tests", "fixtures", "bin", "fake_agent")
FAST = {"retry.baseDelayMs": 10}
OTHER_UID = 65534       # nobody: a user other than root, who runs these as root


def gone(pid):
    """The process is no more (or a zombie nobody has reaped yet)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def wait_gone(pid, timeout):
    deadline = time.monotonic() + scaled(timeout)
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.02)
    return gone(pid)


def read_lines(path):
    with open(path, "rb") as f:
        return f.read().split(b"\n")


def gemini_plan(text="Done."):
    return [{"lines": [{"type": "init", "session_id": "S-1", "model": "gemini-2.5-pro"},
                       {"type": "message", "role": "assistant", "content": text, "delta": True},
                       {"type": "result", "status": "success",
                        "stats": {"total_tokens": 3, "input_tokens": 2, "output_tokens": 1}}]}]


class CliBase(DaemonTestCase):
    def agent_dir(self, plan):
        d = tempfile.mkdtemp(prefix="retryd-e2e-agent-")
        self.addCleanup(lambda: __import__("shutil").rmtree(d, ignore_errors=True))
        with open(os.path.join(d, "plan.json"), "w") as f:
            json.dump(plan, f)
        self.dir = d
        return d

    def calls(self):
        with open(os.path.join(self.dir, "calls.jsonl")) as f:
            return [json.loads(line) for line in f]


# -- 1. a journal that survives -------------------------------------------------

HEADER = '{"type":"session","version":1,"id":"0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000",' \
         '"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'


def message_line(role, text):
    m = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1}
    if role == "assistant":
        m.update(stopReason="stop", api="sim", provider="sim", model="sim")
    return json.dumps({"type": "message", "message": m}) + "\n"


def whole_lines(path):
    """Every line of the file parsed; the file must end with a line end."""
    with open(path, "rb") as f:
        raw = f.read()
    assert raw.endswith(b"\n"), raw[-200:]
    return [json.loads(line) for line in raw.split(b"\n") if line]


class JournalTests(DaemonTestCase):
    def tmpdir(self):
        tmp = tempfile.mkdtemp(prefix="retryd-e2e-j-")
        self.addCleanup(lambda: __import__("shutil").rmtree(tmp, ignore_errors=True))
        return tmp

    def test_session_file_is_0600_and_its_new_folders_0700_whatever_the_umask(self):
        old = os.umask(0)
        try:
            d = self.spawn(plan=[{"text": "a"}], args=["--session", "{tmp}/a/b/s.jsonl"])
        finally:
            os.umask(old)
        self.run_prompt(d, "q")
        d.finish()
        path = os.path.join(d.tmp, "a", "b", "s.jsonl")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        for folder in (os.path.join(d.tmp, "a"), os.path.join(d.tmp, "a", "b")):
            self.assertEqual(stat.S_IMODE(os.stat(folder).st_mode), 0o700, folder)
        d2 = self.spawn(plan=[{"text": "a"}])
        self.run_prompt(d2, "q")
        d2.finish()
        sessions = os.path.join(d2.state_home, "retryd", "sessions")
        [name] = os.listdir(sessions)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(sessions, name)).st_mode), 0o600)

    def full_disk(self):
        """A folder on a 64 KiB tmpfs, or None when it cannot be mounted."""
        if os.geteuid() != 0:
            return None
        mnt = tempfile.mkdtemp(prefix="retryd-e2e-full-")
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt],
                          capture_output=True).returncode != 0:
            os.rmdir(mnt)
            return None
        self.addCleanup(lambda: (subprocess.run(["umount", mnt]), os.rmdir(mnt)))
        return mnt

    def test_a_full_disk_leaves_whole_lines_and_the_next_line_starts_clean(self):
        mnt = self.full_disk()
        limit = None
        if mnt is None:
            # No tmpfs: a file size limit cuts the write the same way
            # (EFBIG; the daemon ignores SIGXFSZ).
            mnt = tempfile.mkdtemp(prefix="retryd-e2e-full-")
            self.addCleanup(lambda: __import__("shutil").rmtree(mnt, ignore_errors=True))
            limit = resource.getrlimit(resource.RLIMIT_FSIZE)
            resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, limit[1]))
        path = os.path.join(mnt, "s.jsonl")
        try:
            d = self.spawn(plan=[{"text": "one"}, {"text": "two"}, {"text": "three"}],
                           args=["--session", path])
        finally:
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        self.run_prompt(d, "small")
        # Far more than the room left: the user line fails part-way.
        msgs = self.run_prompt(d, "x" * 100000)
        notices = [m for m in msgs if m.get("type") == "notice"]
        self.assertTrue(notices, "a failed write is reported")
        self.assertIn("cannot write session file %s" % path, notices[0]["message"])
        self.assertIn("No space left on device" if limit is None else "File too large",
                      notices[0]["message"])
        self.run_prompt(d, "after")
        d.finish()
        lines = whole_lines(path)
        texts = [text_of(ln["message"]) if ln["message"]["role"] == "assistant"
                 else user_text(ln["message"]) for ln in lines[1:]]
        self.assertEqual(lines[0]["type"], "session")
        self.assertEqual(texts[:2], ["small", "one"])
        self.assertNotIn("x" * 100000, texts)
        self.assertEqual(texts[-2:], ["after", "three"])
        r = self.spawn(plan=[], args=["--resume", path])
        got = r.request({"type": "get_messages"})["data"]["messages"]
        self.assertEqual(len(got), len(texts))
        r.finish()

    def test_resume_of_a_torn_last_line_loads_every_whole_line_and_says_what_was_dropped(self):
        path = os.path.join(self.tmpdir(), "torn.jsonl")
        torn = message_line("user", "cut " * 5000)[:7000]   # SIGKILL mid-line
        with open(path, "w") as f:
            f.write(HEADER + message_line("user", "q1") + message_line("assistant", "A1") + torn)
        r = self.spawn(plan=[{"text": "A2"}], args=["--resume", path])
        got = r.request({"type": "get_messages"})["data"]["messages"]
        self.assertEqual([(m["role"]) for m in got], ["user", "assistant"])
        self.run_prompt(r, "q2")
        r.finish()
        err = r.stderr_text()
        self.assertIn("its last line (line 4, 7000 bytes) was cut off before its end and was "
                      "left out", err)
        lines = whole_lines(path)
        self.assertEqual([ln["type"] for ln in lines], ["session"] + ["message"] * 4)
        self.assertEqual(user_text(lines[3]["message"]), "q2")

    def test_a_last_line_that_only_lost_its_line_end_is_kept_and_completed(self):
        path = os.path.join(self.tmpdir(), "nolf.jsonl")
        with open(path, "w") as f:
            f.write(HEADER + message_line("user", "q1").rstrip("\n"))
        r = self.spawn(plan=[{"text": "A1"}], args=["--resume", path])
        self.assertEqual(len(r.request({"type": "get_messages"})["data"]["messages"]), 1)
        self.run_prompt(r, "q2")
        r.finish()
        self.assertEqual(len(whole_lines(path)), 4)

    def test_sigkill_during_a_long_line_loses_no_whole_line_over_rounds_of_kill_and_resume(self):
        """A real SIGKILL, not a torn file made by hand: each round resumes
        the file, journals a short turn, then is killed while it writes a
        prompt of 24 MB (the kernel stops a write to a regular file part-way
        on a fatal signal). Whatever moment the kill hits, every whole line
        stays JSON, a torn tail is cut before the next round writes, and the
        last resume loads every message line that was written whole."""
        path = os.path.join(self.tmpdir(), "killed.jsonl")
        big = "k" * (24 << 20)
        torn_rounds = 0
        for rnd in range(4):
            args = ["--session", path] if rnd == 0 else ["--resume", path]
            d = self.spawn(plan=[{"text": "A%d" % rnd}, {"text": "never"}], args=args)
            self.run_prompt(d, "q%d" % rnd)
            before = os.path.getsize(path)
            d.send({"type": "prompt", "message": big, "id": d.next_id()})
            deadline = time.monotonic() + scaled(30)
            size = before
            while size == before and time.monotonic() < deadline:
                size = os.path.getsize(path)
            d.signal(signal.SIGKILL)
            d.proc.wait(scaled(10))
            with open(path, "rb") as f:
                raw = f.read()
            torn_rounds += not raw.endswith(b"\n")
            whole, _, tail = raw.rpartition(b"\n")
            for n, ln in enumerate(whole.split(b"\n")):
                try:
                    json.loads(ln)
                except ValueError:
                    self.fail("round %d: line %d is not whole JSON (%d bytes)" % (rnd, n + 1, len(ln)))
        kept = [json.loads(ln) for ln in raw.rpartition(b"\n")[0].split(b"\n")]
        want = [ln["message"] for ln in kept if ln["type"] == "message" and not ln.get("retried")]
        r = self.spawn(plan=[], args=["--resume", path])
        got = r.request({"type": "get_messages"})["data"]["messages"]
        self.assertEqual([(m["role"], len(user_text(m) if m["role"] == "user" else text_of(m)))
                          for m in got],
                         [(m["role"], len(user_text(m) if m["role"] == "user" else text_of(m)))
                          for m in want], "torn rounds: %d of 4" % torn_rounds)
        self.assertEqual([user_text(m) for m in got if m["role"] == "user"
                          and len(user_text(m)) < 10], ["q0", "q1", "q2", "q3"])
        r.finish()
        if raw.endswith(b"\n") is False:
            self.assertIn("was cut off before its end and was left out", r.stderr_text())

    def test_a_second_daemon_on_a_session_file_in_use_is_refused_with_exit_1(self):
        d = self.spawn(plan=[{"text": "a"}], args=["--session", "{tmp}/s.jsonl"])
        self.run_prompt(d, "q")
        path = os.path.join(d.tmp, "s.jsonl")
        for args in (["--session", path], ["--resume", path]):
            with self.subTest(args=args):
                rc, out, err = run_cli(args)
                self.assertEqual(rc, 1, err)
                self.assertIn("session file %s is in use by another retryd" % path, err)
                self.assertNotIn('"ready"', out)
        d.finish()
        # Once the first is gone the file is free again.
        r = self.spawn(plan=[], args=["--resume", path])
        self.assertEqual(len(r.request({"type": "get_messages"})["data"]["messages"]), 2)
        r.finish()

    def test_a_session_file_in_use_from_the_start_is_refused_before_any_message(self):
        d = self.spawn(plan=[{"text": "a"}], args=["--session", "{tmp}/s.jsonl"])
        self.run_prompt(d, "q")
        d.finish()
        path = os.path.join(d.tmp, "s.jsonl")
        first = self.spawn(plan=[], args=["--resume", path])
        rc, _, err = run_cli(["--session", path])
        self.assertEqual(rc, 1, err)
        self.assertIn("is in use by another retryd", err)
        first.finish()

    def test_open_session_of_a_file_another_daemon_writes_is_refused_with_a_sentence(self):
        d = self.spawn(plan=[{"text": "a"}], args=["--session", "{tmp}/s.jsonl"])
        self.run_prompt(d, "q")
        path = os.path.join(d.tmp, "s.jsonl")
        other = self.spawn(plan=[])
        r = other.request({"type": "open_session", "sessionDir": path})
        self.assertFalse(r["success"], r)
        self.assertIn("session file %s is in use by another retryd" % path, r["error"])
        d.finish()
        r = other.request({"type": "open_session", "sessionDir": path})
        self.assertTrue(r["success"], r)
        other.finish()

    def test_a_file_opened_then_left_by_new_session_is_free_for_another_daemon(self):
        d = self.spawn(plan=[{"text": "a"}], args=["--session", "{tmp}/s.jsonl"])
        self.run_prompt(d, "q")
        d.finish()
        path = os.path.join(d.tmp, "s.jsonl")
        other = self.spawn(plan=[])
        self.assertTrue(other.request({"type": "open_session", "sessionDir": path})["success"])
        self.assertTrue(other.request({"type": "new_session"})["success"])
        # The file was only opened, never written to: new_session let it go.
        r = self.spawn(plan=[], args=["--resume", path])
        self.assertEqual(len(r.request({"type": "get_messages"})["data"]["messages"]), 2)
        r.finish()
        other.finish()

    def test_continue_when_the_newest_session_is_in_use_starts_a_new_session(self):
        state = self.tmpdir()
        env = {"XDG_STATE_HOME": state}
        d = self.spawn(plan=[{"text": "a"}], env=env)
        self.run_prompt(d, "q")
        busy = d.request({"type": "get_state"})["data"]["sessionFile"]
        c = self.spawn(plan=[{"text": "b"}], env=env, args=["--continue"])
        st = c.request({"type": "get_state"})["data"]
        self.assertEqual(st["messageCount"], 0)
        self.run_prompt(c, "q2")
        self.assertNotEqual(os.path.realpath(st["sessionFile"]), os.path.realpath(busy))
        c.finish()
        d.finish()
        self.assertIn("is in use by another retryd", c.stderr_text())
        self.assertIn("starting a new session", c.stderr_text())
        self.assertEqual(len(whole_lines(busy)), 3)

    def test_a_working_folder_whose_name_is_not_utf8_journals_fine(self):
        base = self.tmpdir()
        cwd = os.path.join(os.fsencode(base), b"caf\xe9-\xff")
        os.mkdir(cwd)
        d = self.spawn(plan=[{"text": "a"}], cwd=os.fsdecode(cwd))
        msgs = self.run_prompt(d, "q")
        self.assertEqual([m for m in msgs if m.get("type") == "notice"], [])
        path = d.request({"type": "get_state"})["data"]["sessionFile"]
        d.finish()
        lines = whole_lines(path)
        self.assertEqual([ln["type"] for ln in lines], ["session", "message", "message"])
        self.assertTrue(lines[0]["cwd"].startswith(base), lines[0]["cwd"])

    def foreign_session(self):
        """A whole session file (header and two messages) that belongs to
        another user, in a folder of its own; None unless this is root."""
        if os.geteuid() != 0:
            return None
        d = self.spawn(plan=[{"text": "a"}], args=["--session", "{tmp}/s/theirs.jsonl"])
        self.run_prompt(d, "q")
        d.finish()
        path = os.path.join(d.tmp, "s", "theirs.jsonl")
        os.chown(path, OTHER_UID, OTHER_UID)
        return path

    def test_another_users_session_file_is_refused_to_resume_and_to_write_and_left_as_it_was(self):
        path = self.foreign_session()
        if path is None:
            self.skipTest("making a file of another user's needs root")
        with open(path, "rb") as f:
            before = f.read()
        for args in (["--resume", path], ["--session", path]):
            with self.subTest(args=args):
                rc, out, err = run_cli(args, timeout=20)
                self.assertEqual(rc, 1, err)
                self.assertIn("%s: it belongs to uid %d, not to you (uid 0)" % (path, OTHER_UID),
                              err)
                self.assertNotIn('"ready"', out)
        other = self.spawn(plan=[])
        r = other.request({"type": "open_session", "sessionDir": path})
        self.assertFalse(r["success"], r)
        self.assertIn("belongs to uid %d" % OTHER_UID, r["error"])
        other.finish()
        with open(path, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_continue_passes_over_another_users_newer_session_file_for_the_users_own(self):
        path = self.foreign_session()
        if path is None:
            self.skipTest("making a file of another user's needs root")
        folder = os.path.dirname(path)
        d = self.spawn(plan=[{"text": "mine"}], args=["--session-dir", folder])
        self.run_prompt(d, "mine")
        mine = d.request({"type": "get_state"})["data"]["sessionFile"]
        d.finish()
        later = time.time() + 60
        os.utime(path, (later, later))       # theirs is the newest
        c = self.spawn(plan=[], args=["--session-dir", folder, "--continue"])
        st = c.request({"type": "get_state"})["data"]
        self.assertEqual(os.path.realpath(st["sessionFile"]), os.path.realpath(mine))
        self.assertEqual(st["messageCount"], 2)
        c.finish()

    def test_resume_of_a_device_a_fifo_a_link_or_an_oversized_file_is_refused_with_a_sentence(self):
        tmp = self.tmpdir()
        fifo = os.path.join(tmp, "fifo.jsonl")
        os.mkfifo(fifo)
        endless = os.path.join(tmp, "endless.jsonl")
        with open(endless, "w") as f:
            f.write(HEADER)
            f.truncate(len(HEADER) + (65 << 20))     # one 65 MiB line of NUL bytes
        huge = os.path.join(tmp, "huge.jsonl")
        with open(huge, "w") as f:
            f.truncate((1 << 30) + 1)
        real = os.path.join(tmp, "real.jsonl")
        with open(real, "w") as f:
            f.write(HEADER)
        link = os.path.join(tmp, "link.jsonl")
        os.symlink(real, link)
        cases = [("/dev/zero", "not a regular file"), (fifo, "not a regular file"),
                 (endless, "line 2 is longer than 64 MiB, the bound on a line"),
                 (huge, "larger than 1024 MiB, the bound on a session file"),
                 (link, "symbolic link")]
        for path, why in cases:
            with self.subTest(path=path):
                rc, out, err = run_cli(["--resume", path], timeout=20)
                self.assertEqual(rc, 1, err)
                self.assertIn(path, err)
                self.assertIn(why, err)
                self.assertEqual(out, "")


# -- 2. settings written back safely ---------------------------------------------

class SettingsWriteBackTests(DaemonTestCase):
    def read(self, path):
        with open(path) as f:
            return json.load(f)

    def test_a_file_edited_while_the_daemon_runs_keeps_the_edits_after_set_auto_retry(self):
        d = self.spawn(plan=[], settings={"retry": {"maxRetries": 5}})
        with open(d.settings_path, "w") as f:
            json.dump({"retry": {"maxRetries": 7, "baseDelayMs": 1234},
                       "defaultThinkingLevel": "low"}, f)
        r = d.request({"type": "set_auto_retry", "enabled": False})
        self.assertTrue(r["success"], r)
        self.assertNotIn("warning", r.get("data") or {}, r)
        d.finish()
        self.assertEqual(self.read(d.settings_path),
                         {"retry": {"maxRetries": 7, "baseDelayMs": 1234, "enabled": False},
                          "defaultThinkingLevel": "low"})

    def test_set_auto_retry_through_a_symlink_writes_the_target_and_the_link_stays(self):
        tmp = tempfile.mkdtemp(prefix="retryd-e2e-set-")
        self.addCleanup(lambda: __import__("shutil").rmtree(tmp, ignore_errors=True))
        dots = os.path.join(tmp, "dotfiles")
        os.makedirs(dots)
        target = os.path.join(dots, "retryd.json")
        with open(target, "w") as f:
            json.dump({"retry": {"maxRetries": 2}}, f)
        os.chmod(target, 0o640)
        link = os.path.join(tmp, "settings.json")
        os.symlink("dotfiles/retryd.json", link)
        d = self.spawn(plan=[], args=["--settings", link])
        r = d.request({"type": "set_auto_retry", "enabled": False})
        self.assertTrue(r["success"], r)
        d.finish()
        self.assertTrue(os.path.islink(link), "the link was replaced by a file")
        self.assertEqual(os.readlink(link), "dotfiles/retryd.json")
        self.assertEqual(self.read(target), {"retry": {"maxRetries": 2, "enabled": False}})
        self.assertEqual(stat.S_IMODE(os.stat(target).st_mode), 0o640)
        self.assertEqual(sorted(os.listdir(dots)), [".retryd.json.lock", "retryd.json"])

    def test_a_file_that_became_invalid_json_is_not_overwritten_and_the_answer_says_why(self):
        d = self.spawn(plan=[], settings={"retry": {"maxRetries": 5}})
        broken = '{"retry": {"maxRetries": 7,, }'
        with open(d.settings_path, "w") as f:
            f.write(broken)
        r = d.request({"type": "set_auto_retry", "enabled": False})
        self.assertTrue(r["success"], r)
        self.assertEqual(r["data"]["persisted"], False)
        self.assertIn("could not save settings to %s" % d.settings_path, r["data"]["warning"])
        self.assertIn("the file was left as it is", r["data"]["warning"])
        st = d.request({"type": "get_state"})["data"]
        self.assertFalse(st["autoRetryEnabled"], "the change still applies in memory")
        d.finish()
        with open(d.settings_path) as f:
            self.assertEqual(f.read(), broken)

    def test_a_thinking_level_persists_into_the_file_as_it_is_now(self):
        d = self.spawn(plan=[], settings={})
        with open(d.settings_path, "w") as f:
            json.dump({"retry": {"maxRetries": 9}}, f)
        r = d.request({"type": "set_thinking_level", "level": "high"})
        self.assertTrue(r["success"], r)
        d.finish()
        got = self.read(d.settings_path)
        self.assertEqual(got["retry"], {"maxRetries": 9})

    def test_another_users_settings_file_is_refused_and_roots_own_is_read(self):
        # A settings file names the commands retryd runs: another user's
        # would be theirs to run as you. Root's files (as in /etc) are
        # trusted, as only root could have written them.
        if os.geteuid() != 0:
            self.skipTest("making a file of another user's needs root")
        tmp = tempfile.mkdtemp(prefix="retryd-e2e-set-")
        self.addCleanup(lambda: __import__("shutil").rmtree(tmp, ignore_errors=True))
        theirs = os.path.join(tmp, "theirs.json")
        with open(theirs, "w") as f:
            json.dump({"retry": {"maxRetries": 7}}, f)
        os.chown(theirs, OTHER_UID, OTHER_UID)
        rc, out, err = run_cli(["--settings", theirs], timeout=20)
        self.assertEqual(rc, 1, err)
        self.assertIn("settings file %s: belongs to uid %d, not to you (uid 0); refusing to "
                      "read it" % (theirs, OTHER_UID), err)
        self.assertEqual(out, "")
        os.chown(theirs, 0, 0)
        d = self.spawn(plan=[], args=["--settings", theirs])
        policy = d.request({"type": "get_retry_policy", "id": "g"})["data"]["policy"]
        self.assertEqual(policy["maxRetries"], 7)
        d.finish()

    def test_settings_from_a_device_a_fifo_or_an_oversized_file_are_refused_with_a_sentence(self):
        tmp = tempfile.mkdtemp(prefix="retryd-e2e-set-")
        self.addCleanup(lambda: __import__("shutil").rmtree(tmp, ignore_errors=True))
        fifo = os.path.join(tmp, "fifo.json")
        os.mkfifo(fifo)
        big = os.path.join(tmp, "big.json")
        with open(big, "w") as f:
            f.write("{" + " " * (17 << 20) + "}")
        for path, why in (("/dev/zero", "not a regular file"), (fifo, "not a regular file"),
                          (big, "larger than 16 MiB, the bound on a settings file")):
            with self.subTest(path=path):
                rc, out, err = run_cli(["--settings", path], timeout=20)
                self.assertEqual(rc, 1, err)
                self.assertIn(path, err)
                self.assertIn(why, err)


# -- 3. masking: only secrets, and never the user's words going upstream -------

class EnvMaskingTests(CliBase):
    WORK = "/tmp/retryd-e2e-x/project"
    KEY = "Quiet-Harbor-Lantern-Velvet-Orchid-Mist"

    def start(self, env, extra=None):
        self.agent_dir(gemini_plan("Looked at it."))
        s = {"providers.gemini.command": FAKE_AGENT, "providers.gemini.env": env}
        s.update(FAST)
        s.update(extra or {})
        return self.spawn(args=["--provider", "gemini", "--session", "{tmp}/s.jsonl"], sets=s,
                          env={"FAKE_AGENT_DIR": self.dir, "RETRYD_LOG": "debug"})

    def test_a_non_secret_env_path_in_the_prompt_reaches_the_cli_and_stdout_unmasked(self):
        d = self.start({"FAKE_WORK_DIR": self.WORK})
        prompt = "What is in %s/README.md?" % self.WORK
        msgs = self.run_prompt(d, prompt)
        d.finish()
        [call] = self.calls()
        self.assertEqual(call["env"]["FAKE_WORK_DIR"], self.WORK)
        self.assertTrue(any(prompt in a for a in call["argv"]), call["argv"])
        user = [m["message"] for m in msgs
                if m.get("type") == "message_start" and m["message"]["role"] == "user"][0]
        self.assertEqual(user_text(user), prompt)
        with open(os.path.join(d.tmp, "s.jsonl")) as f:
            self.assertIn(self.WORK + "/README.md", f.read())

    def test_a_key_named_env_value_in_the_prompt_goes_to_the_cli_as_written_masked_elsewhere(self):
        d = self.start({"FAKE_API_KEY": self.KEY})
        prompt = "my key is %s, keep it" % self.KEY
        self.run_prompt(d, prompt)
        d.finish()
        [call] = self.calls()
        self.assertTrue(any(prompt in a for a in call["argv"]), call["argv"])
        places = {"stdout": "\n".join(d.raw_lines()), "log": d.stderr_text()}
        with open(os.path.join(d.tmp, "s.jsonl")) as f:
            places["session file"] = f.read()
        for where, text in places.items():
            self.assertNotIn(self.KEY, text, where)
        self.assertIn("my key is ***, keep it", places["stdout"])

    def test_secret_env_names_a_variable_whose_value_is_masked(self):
        value = "plain-looking-value-42"
        d = self.start({"FAKE_CONN": value}, {"providers.gemini.secretEnv": ["FAKE_CONN"]})
        self.run_prompt(d, "use %s" % value)
        d.finish()
        [call] = self.calls()
        self.assertTrue(any(value in a for a in call["argv"]), call["argv"])
        self.assertNotIn(value, "\n".join(d.raw_lines()))
        self.assertIn("use ***", "\n".join(d.raw_lines()))

    def test_secret_env_that_is_not_a_list_of_names_is_refused_with_a_sentence(self):
        for bad, why in (('"FAKE_CONN"', "secretEnv must be a list of environment variable names"),
                         ('["9X"]', "secretEnv[0] must be an environment variable name"),
                         ('["A=B"]', "secretEnv[0] must be an environment variable name"),
                         ('[1]', "secretEnv[0] must be an environment variable name")):
            with self.subTest(bad=bad):
                rc, out, err = run_cli(["--provider", "gemini", "--set",
                                        "providers.gemini.secretEnv=" + bad])
                self.assertEqual(rc, 1, err)
                self.assertIn("providers.gemini." + why, err)


# -- 5. a CLI's process group ends with the attempt ------------------------------

class ProcessGroupTests(CliBase):
    def test_a_process_the_cli_leaves_in_its_group_is_killed_when_the_attempt_ends(self):
        self.agent_dir(gemini_plan())
        script = os.path.join(self.dir, "agent.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n"
                    "sleep 300 </dev/null >/dev/null 2>&1 &\n"
                    "echo $! > \"$FAKE_AGENT_DIR/grandchild.pid\"\n"
                    "exec %s \"$@\"\n" % FAKE_AGENT)
        os.chmod(script, 0o755)
        d = self.spawn(args=["--provider", "gemini", "--no-session"],
                       sets=dict(FAST, **{"providers.gemini.command": script}),
                       env={"FAKE_AGENT_DIR": self.dir})
        msgs = self.run_prompt(d, "q")
        self.assertEqual(msgs[-1]["type"], "agent_end")
        with open(os.path.join(self.dir, "grandchild.pid")) as f:
            pid = int(f.read())
        try:
            self.assertTrue(wait_gone(pid, 5.0), "the backgrounded sleep outlived the attempt")
        finally:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
        d.finish()


# -- 4. Retry-After in the obsolete HTTP-date forms -----------------------------

class RetryAfterDateTests(DaemonTestCase):
    @timing_sensitive("an HTTP date has whole seconds; the slow start eats them")
    def test_retry_after_in_asctime_and_rfc850_forms_sets_the_delay(self):
        forms = {
            "asctime": lambda t: time.asctime(time.gmtime(t)),
            "rfc850": lambda t: time.strftime("%A, %d-%b-%y %H:%M:%S GMT", time.gmtime(t)),
        }
        for name, fmt in forms.items():
            with self.subTest(form=name):
                srv = FakeServer([], max_seconds=120).start()
                self.addCleanup(srv.stop)
                cfg = {"api": "openai-completions", "baseUrl": srv.url + "/v1",
                       "apiKeyEnv": "E2E_K", "models": ["m1"]}
                d = self.spawn(args=["--provider", "fake"],
                               settings={"providers": {"fake": cfg}}, sets=FAST,
                               env={"E2E_K": "k-123456789"})
                when = fmt(time.time() + 3)
                srv.set_plan([{"status": 503, "headers": {"retry-after": when}}, {"text": "ok"}])
                d.send({"type": "prompt", "message": "q"})
                start = d.wait_for(is_type("auto_retry_start"))
                self.assertEqual(start["reason"], "server-hint", (when, start))
                self.assertTrue(1000 <= start["delayMs"] <= 3000, (when, start))
                d.send({"type": "abort_retry", "id": "ar"})
                d.collect_until(is_type("agent_end"))
                d.finish()


# -- 6. stdout closed at the start ----------------------------------------------

class ClosedStdoutTests(DaemonTestCase):
    def test_a_daemon_started_with_stdout_closed_exits_1_with_a_sentence(self):
        tmp = tempfile.mkdtemp(prefix="retryd-e2e-")
        self.addCleanup(lambda: __import__("shutil").rmtree(tmp, ignore_errors=True))
        env = dict(os.environ, HOME=tmp, XDG_STATE_HOME=tmp, XDG_CONFIG_HOME=tmp,
                   **harness.runtime_env(tmp))
        env.pop("RETRYD_LOG", None)
        p = subprocess.run(["/bin/sh", "-c", 'exec "$0" --no-session >&-', binary_path()],
                           input=b"", stderr=subprocess.PIPE, env=env, cwd=tmp,
                           timeout=scaled(10))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"retryd: stdout is closed", p.stderr)

"""Command line, settings file, --set, and persisting set_auto_retry."""
import json
import os
import shutil
import tempfile

from harness import DaemonTestCase, run_cli, sanitizer_report

FAST = {"retry.baseDelayMs": 20}


class CliTests(DaemonTestCase):
    def assertExit(self, args, status, stderr_has=(), env=None):
        rc, out, err = run_cli(args, env=env)
        self.assertEqual(sanitizer_report(err), "")
        self.assertEqual(rc, status, "retryd %s -> %s\nstdout: %s\nstderr: %s" % (args, rc, out, err))
        for s in stderr_has:
            self.assertIn(s, err)
        return out, err

    def test_help_prints_usage_on_stdout_and_exits_0(self):
        out, err = self.assertExit(["--help"], 0)
        self.assertIn("usage: retryd", out)
        self.assertIn("--sim-plan", out)
        self.assertEqual(err, "")

    def test_version_prints_on_stdout_and_exits_0(self):
        out, err = self.assertExit(["--version"], 0)
        self.assertRegex(out, r"^retryd \d+\.\d+")
        self.assertEqual(err, "")

    def test_usage_errors_exit_2_with_a_message_on_stderr(self):
        cases = [
            (["--bogus"], "--bogus"),
            (["-x"], "-x"),
            (["--mode", "json"], "json"),
            (["--mode=print"], "print"),
            (["--provider", "no-such-provider"], "no-such-provider"),
            (["--model"], "--model"),
            (["--session", "/tmp/x.jsonl", "--no-session"], "--no-session"),
        ]
        for args, needle in cases:
            with self.subTest(args=args):
                out, err = self.assertExit(args, 2, [needle])
                self.assertEqual(out, "")  # nothing but JSON on stdout: here, nothing

    def test_accepted_pi_style_options_start_the_daemon(self):
        d = self.spawn(args=["--mode", "rpc", "--provider", "sim", "--mode=rpc",
                             "--set=retry.maxRetries=2"])
        st = d.request({"type": "get_state"})["data"]
        self.assertEqual(st["model"]["provider"], "sim")
        d.finish()

    def test_model_option_sets_the_model(self):
        d = self.spawn(args=["--model", "my-model"], plan=[{"text": "x"}])
        self.assertEqual(d.request({"type": "get_state"})["data"]["model"]["id"], "my-model")
        msgs = self.run_prompt(d, "q")
        self.assertEqual(msgs[-1]["messages"][-1]["model"], "my-model")
        d.finish()


class SettingsErrorTests(DaemonTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="retryd-e2e-settings-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def assertConfigError(self, args, needles, env=None):
        rc, out, err = run_cli(args, env=env)
        self.assertEqual(sanitizer_report(err), "")
        self.assertEqual(rc, 1, "retryd %s -> %s\nstderr: %s" % (args, rc, err))
        self.assertEqual(out, "")
        for s in needles:
            self.assertIn(s, err)

    def test_malformed_settings_file_exits_1_naming_the_file(self):
        path = self.write("bad.json", '{"retry": {"maxRetries": 3,,}}')
        self.assertConfigError(["--settings", path], [path])

    def test_malformed_default_settings_file_exits_1_naming_it(self):
        path = self.write("xdg/retryd/settings.json", "{not json")
        self.assertConfigError([], [path], env={"XDG_CONFIG_HOME": os.path.join(self.dir, "xdg")})

    def test_settings_file_with_a_wrong_value_exits_1_naming_file_and_key(self):
        path = self.write("typed.json", '{"retry": {"maxRetries": "three"}}')
        self.assertConfigError(["--settings", path], [path, "retry.maxRetries"])

    def test_bad_set_exits_1_naming_the_key(self):
        for assignment, key in (("retry.maxRetries=abc", "retry.maxRetries"),
                                ("retry.baseDelayMs=-5", "retry.baseDelayMs"),
                                ("retry.enabled=maybe", "retry.enabled"),
                                ("rpc.maxLineBytes=0", "rpc.maxLineBytes")):
            with self.subTest(assignment=assignment):
                self.assertConfigError(["--set", assignment], [key])

    def test_set_without_a_value_exits_1(self):
        self.assertConfigError(["--set", "retry.maxRetries"], ["retry.maxRetries"])

    def test_bad_sim_plan_exits_1_with_a_message(self):
        self.assertConfigError(["--sim-plan", "[{"], ["--sim-plan"])
        self.assertConfigError(["--sim-plan", '{"text":"x"}'], ["sim.plan"])
        self.assertConfigError(["--sim-plan", '[{"txt":"x"}]'], ["txt"])
        self.assertConfigError(["--sim-plan", '[{"text":5}]'], ["text"])
        self.assertConfigError(["--sim-plan", '[{"delayMs":5}]'], ["sim.plan[0]"])


class SettingsTests(DaemonTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="retryd-e2e-settings-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def settings_file(self, obj):
        path = os.path.join(self.dir, "settings.json")
        with open(path, "w") as f:
            json.dump(obj, f)
        return path

    def test_settings_file_values_apply(self):
        path = self.settings_file({"retry": {"baseDelayMs": 20, "maxRetries": 1}})
        d = self.spawn(args=["--settings", path], plan=[{"error": "503"}] * 2 + [{"text": "x"}])
        msgs = self.run_prompt(d, "q")
        starts = [m for m in msgs if m["type"] == "auto_retry_start"]
        self.assertEqual([(s["attempt"], s["maxAttempts"], s["delayMs"]) for s in starts],
                         [(1, 1, 20)])
        d.finish()

    def test_set_overrides_the_settings_file(self):
        path = self.settings_file({"retry": {"baseDelayMs": 20, "maxRetries": 1}})
        d = self.spawn(args=["--settings", path, "--set", "retry.maxRetries=2",
                             "--set", "retry.baseDelayMs=10"],
                       plan=[{"error": "503"}] * 3 + [{"text": "x"}])
        msgs = self.run_prompt(d, "q")
        starts = [m for m in msgs if m["type"] == "auto_retry_start"]
        self.assertEqual([(s["attempt"], s["maxAttempts"], s["delayMs"]) for s in starts],
                         [(1, 2, 10), (2, 2, 20)])
        d.finish()

    def test_retry_disabled_in_the_settings_file(self):
        path = self.settings_file({"retry": {"enabled": False}})
        d = self.spawn(args=["--settings", path], plan=[{"error": "503"}])
        self.assertIs(d.request({"type": "get_state"})["data"]["autoRetryEnabled"], False)
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("auto_retry_start", [m["type"] for m in msgs])
        d.finish()


class PersistAutoRetryTests(DaemonTestCase):
    def read(self, path):
        with open(path) as f:
            return json.load(f)

    def test_set_auto_retry_persists_to_the_default_settings_file(self):
        d = self.spawn()
        self.assertFalse(os.path.exists(d.settings_path))
        r = d.request({"type": "set_auto_retry", "enabled": False})
        self.assertIs(r["success"], True)
        self.assertEqual(self.read(d.settings_path), {"retry": {"enabled": False}})
        self.assertIs(d.request({"type": "get_state"})["data"]["autoRetryEnabled"], False)
        d.request({"type": "set_auto_retry", "enabled": True})
        self.assertEqual(self.read(d.settings_path), {"retry": {"enabled": True}})
        d.finish()
        # Nothing else (no temp files) left next to it; the lock file of
        # the writers stays by design.
        self.assertEqual(sorted(os.listdir(os.path.dirname(d.settings_path))),
                         [".settings.json.lock", "settings.json"])

    def test_set_auto_retry_keeps_the_other_keys_of_the_settings_file(self):
        tmp = tempfile.mkdtemp(prefix="retryd-e2e-persist-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "custom.json")
        original = {"retry": {"maxRetries": 2, "baseDelayMs": 20, "enabled": True},
                    "rpc": {"maxLineBytes": 100000}, "sim": {"chunkDelayMs": 0}}
        with open(path, "w") as f:
            json.dump(original, f)
        d = self.spawn(args=["--settings", path, "--set", "retry.maxRetries=1"])
        self.assertIs(d.request({"type": "set_auto_retry", "enabled": False})["success"], True)
        expected = json.loads(json.dumps(original))
        expected["retry"]["enabled"] = False
        self.assertEqual(self.read(path), expected)  # --set values are not written
        d.finish()
        self.assertFalse(os.path.exists(d.settings_path))  # the default file was not used
        # A new daemon reads it back.
        d2 = self.spawn(args=["--settings", path], plan=[{"error": "503"}])
        self.assertIs(d2.request({"type": "get_state"})["data"]["autoRetryEnabled"], False)
        msgs = self.run_prompt(d2, "q")
        self.assertNotIn("auto_retry_start", [m["type"] for m in msgs])
        d2.finish()


class ExitStatusRuleTests(DaemonTestCase):
    """One rule (protocol/README.md section 2, "Exit status"): 2 for a usage
    error on the command line, an unknown --provider name among them; 1 for
    a wrong configuration (settings file, --set, --sim-plan, the chosen
    provider's entry or agent-CLI profile) or a failed start; 0 otherwise.
    Before, a bad HTTP entry exited 1 and a bad exec profile 2."""

    HTTP_OK = {"api": "openai-completions", "baseUrl": "http://127.0.0.1:9/v1", "models": ["x"]}
    EXEC_OK = {"type": "exec", "argv": ["true", "{prompt}"], "resumeArgv": ["true", "{sessionId}"]}

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="retryd-e2e-exit-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    write = SettingsErrorTests.write

    def run_status(self, args, env=None):
        rc, out, err = run_cli(args, env=env)
        self.assertEqual(sanitizer_report(err), "")
        return rc, out, err

    def settings(self, providers):
        return self.write("s%d.json" % len(os.listdir(self.dir)),
                          json.dumps({"providers": providers}))

    def test_command_line_usage_errors_exit_2(self):
        path = self.settings({"mine": self.HTTP_OK, "tool": self.EXEC_OK})
        cases = [
            ["--bogus"], ["--model"], ["--mode", "json"], ["--classify"],
            ["--session", "/tmp/x.jsonl", "--no-session"],
            ["--provider", "lcoal"],
            ["--settings", path, "--provider", "nope"],
        ]
        for args in cases:
            with self.subTest(args=args):
                rc, out, err = self.run_status(args)
                self.assertEqual((rc, out), (2, ""), err)
                self.assertTrue(err.startswith("retryd: "), err)

    def test_configuration_errors_exit_1_for_every_kind_of_provider(self):
        http_bad = dict(self.HTTP_OK, api="openai-chat")
        exec_bad = dict(self.EXEC_OK, argv=[])
        cases = [
            (["--settings", self.write("bad.json", "{")], "bad.json"),
            (["--set", "retry.maxRetries=abc"], "retry.maxRetries"),
            (["--sim-plan", "[{"], "--sim-plan"),
            # the chosen provider's entry: HTTP, in the settings file and by --set
            (["--settings", self.settings({"bad": http_bad}), "--provider", "bad"],
             "providers.bad.api"),
            (["--set", "providers.openai.baseUrl=\"ftp://x\"", "--provider", "openai"],
             "providers.openai.baseUrl"),
            # an agent CLI's profile: a built-in one changed by --set, and one of the file
            (["--set", "providers.claude.argv=[]", "--provider", "claude"],
             "providers.claude.argv"),
            (["--settings", self.settings({"tool": exec_bad}), "--provider", "tool"],
             "providers.tool.argv"),
            # an entry that is not an object at all
            (["--set", "providers.odd=5", "--provider", "odd"], "providers.odd"),
        ]
        for args, needle in cases:
            with self.subTest(args=args):
                rc, out, err = self.run_status(args)
                self.assertEqual((rc, out), (1, ""), err)
                self.assertIn(needle, err)

    def test_help_version_and_classify_exit_0(self):
        for args in (["--help"], ["--version"], ["--classify", "503"]):
            with self.subTest(args=args):
                rc, out, err = self.run_status(args)
                self.assertEqual(rc, 0, err)

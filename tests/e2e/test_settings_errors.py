"""Settings that say no: unknown keys, a missing --settings file,
`retryd config` with origins, `config --check`, and retries that are off
saying so (the start warning, set_auto_retry persist:false, retrySkipped on
message_end, retryctl's line)."""
import json
import os
import shutil
import subprocess
import tempfile

import harness
from harness import DaemonTestCase, run_cli, sanitizer_report


def assistant_ends(msgs):
    return [m for m in msgs if m["type"] == "message_end" and m["message"]["role"] == "assistant"]


class SettingsFiles(DaemonTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="retryd-e2e-settings-no-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def write(self, name, obj):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        return path

    def cli(self, args, env=None):
        rc, out, err = run_cli(args, env=env)
        self.assertEqual(sanitizer_report(err), "")
        return rc, out, err

    def assertRefused(self, args, needles, env=None):
        rc, out, err = self.cli(args, env=env)
        self.assertEqual((rc, out), (1, ""), err)
        for s in needles:
            self.assertIn(s, err)
        return err


class UnknownKeyTests(SettingsFiles):
    def test_unknown_key_in_the_settings_file_names_key_file_and_nearest_known(self):
        path = self.write("s.json", {"retry": {"jiter": "full"}})
        err = self.assertRefused(["--settings", path], [path])
        self.assertEqual(err, 'retryd: settings file %s: unknown setting "retry.jiter" '
                              "(did you mean retry.jitter?)\n" % path)

    def test_unknown_key_in_the_default_settings_file_is_refused_too(self):
        path = self.write("xdg/retryd/settings.json", {"rpc": {"maxLineByte": 10}})
        self.assertRefused([], [path, '"rpc.maxLineByte"', "did you mean rpc.maxLineBytes?"],
                           env={"XDG_CONFIG_HOME": os.path.join(self.dir, "xdg")})

    def test_unknown_key_in_set_names_the_set_and_the_nearest_known(self):
        err = self.assertRefused(["--set", "retry.baseDelayMS=5"], [])
        self.assertEqual(err, 'retryd: --set retry.baseDelayMS=5: unknown setting '
                              '"retry.baseDelayMS" (did you mean retry.baseDelayMs?)\n')

    def test_unknown_keys_in_nested_sections_and_at_the_top_are_refused(self):
        cases = [
            ({"fleet": {"redis": {"URL": "redis://x"}}}, "fleet.redis.URL",
             "did you mean fleet.redis.url?"),
            ({"retyr": {"maxRetries": 2}}, "retyr.maxRetries", "did you mean retry.maxRetries?"),
            ({"Retry": {"MaxRetries": 2}}, "Retry.MaxRetries", "did you mean retry.maxRetries?"),
            ({"sim": {"chunkDelay": 2}}, "sim.chunkDelay", "did you mean sim.chunkDelayMs?"),
            ({"future": {"x": 1, "y": 2}}, '"future"', "retryd config lists the known ones"),
        ]
        for obj, key, hint in cases:
            with self.subTest(obj=obj):
                path = self.write("n.json", obj)
                self.assertRefused(["--settings", path], [path, key, hint])
        for assignment, key, hint in (
                ("fleet.redis.URL=redis://x", "fleet.redis.URL", "fleet.redis.url"),
                ('retry={"maxRetries":1,"jiter":"full"}', "retry.jiter", "retry.jitter"),
                ("nothing.near=1", "nothing.near", "retryd config lists the known ones")):
            with self.subTest(assignment=assignment):
                self.assertRefused(["--set", assignment], ["--set " + assignment, key, hint])

    def test_open_sections_and_object_values_are_accepted(self):
        path = self.write("open.json", {
            "providers": {"mine": {"type": "exec", "argv": ["true", "{prompt}"],
                                   "resumeArgv": ["true", "{sessionId}"]}},
            "fleet": {"mode": "process", "providerScopes": {"sim": "credential", "mine": "model"},
                      "retryBudget": {"maxTokens": 5, "tokenRatio": 0.5}},
            "retry": {"budget": {"maxTokens": 3, "tokenRatio": 0.2}, "enabled": True},
            "sim": {"plan": [{"text": "from the file"}], "models": ["a", "b"]},
        })
        d = self.spawn(args=["--settings", path, "--set", "providers.other.x=1",
                             "--set", "fleet.providerScopes.openai=provider"])
        msgs = self.run_prompt(d, "q")
        self.assertEqual(assistant_ends(msgs)[0]["message"]["content"][0]["text"], "from the file")
        d.finish()

    def test_keys_persisted_by_commands_load_again(self):
        path = self.write("p.json", {})
        d = self.spawn(args=["--settings", path])
        self.assertTrue(d.request({"type": "set_auto_retry", "enabled": True})["success"])
        r = d.request({"type": "set_retry_policy", "persist": True,
                       "policy": {"jitter": "full", "maxRetries": 2, "budget": None}})
        self.assertTrue(r["success"], r)
        d.finish()
        rc, out, err = self.cli(["config", "--check", path])
        self.assertEqual((rc, out), (0, path + ": ok\n"), err)
        d2 = self.spawn(args=["--settings", path])
        d2.finish()


class MissingSettingsFileTests(SettingsFiles):
    def test_settings_naming_a_missing_file_exits_1_naming_it(self):
        path = os.path.join(self.dir, "no-such.json")
        self.assertRefused(["--settings", path], [path, "no such file"])
        self.assertFalse(os.path.exists(path))
        self.assertRefused(["config", "--settings", path], [path, "no such file"])

    def test_the_default_path_may_be_absent(self):
        d = self.spawn()
        self.assertFalse(os.path.exists(d.settings_path))
        d.finish()


class ConfigTests(SettingsFiles):
    def lines(self, out):
        return {line.split("\t", 1)[1].split("=", 1)[0]: line for line in out.splitlines()}

    def test_config_prints_each_value_with_its_origin(self):
        path = self.write("c.json", {"retry": {"maxRetries": 5},
                                     "providers": {"mine": {"type": "exec", "argv": ["x"]}}})
        rc, out, err = self.cli(["config", "--settings", path, "--set", "retry.baseDelayMs=7"])
        self.assertEqual(rc, 0, err)
        got = self.lines(out)
        self.assertEqual(got["retry.maxRetries"], "file:%s\tretry.maxRetries=5" % path)
        self.assertEqual(got["retry.baseDelayMs"], "--set\tretry.baseDelayMs=7")
        self.assertEqual(got["retry.enabled"], "default\tretry.enabled=true")
        self.assertEqual(got["retry.jitter"], 'default\tretry.jitter="none"')
        self.assertTrue(got["providers.openai"].startswith("built-in\tproviders.openai={"))
        self.assertEqual(got["providers.mine"],
                         'file:%s\tproviders.mine={"type":"exec","argv":["x"]}' % path)
        self.assertNotIn("retry.jitterSeed", got)  # no value, no line
        # One line per leaf, in the table's order (sections come first).
        keys = [line.split("\t")[1].split("=")[0] for line in out.splitlines()]
        self.assertNotIn("retry", keys)
        self.assertLess(keys.index("retry.enabled"), keys.index("retry.maxRetries"))
        self.assertLess(keys.index("retry.maxRetries"), keys.index("rpc.maxLineBytes"))

    def test_config_shows_a_value_persisted_by_set_auto_retry_as_from_the_file(self):
        d = self.spawn()
        self.assertTrue(d.request({"type": "set_auto_retry", "enabled": False})["success"])
        d.finish()
        rc, out, err = self.cli(["config"], env={"XDG_CONFIG_HOME": d.config_home})
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.lines(out)["retry.enabled"],
                         "file:%s\tretry.enabled=false" % d.settings_path)

    def test_config_masks_secrets(self):
        path = self.write("secret.json", {
            "providers": {"x": {"api": "openai-completions", "apiKey": "abcdefgh12345678",
                                "apiKeyEnv": "MY_KEY", "env": {"MY_TOKEN": "qqqqqqqqqqqq"}}},
            "fleet": {"redis": {"password": "hunter2hunter2", "url": "redis://:pw123456@h:1/0"}}})
        rc, out, err = self.cli(["config", "--settings", path])
        self.assertEqual(rc, 0, err)
        for secret in ("abcdefgh12345678", "qqqqqqqqqqqq", "hunter2hunter2", "pw123456"):
            self.assertNotIn(secret, out)
        self.assertIn('"apiKeyEnv":"MY_KEY"', out)
        self.assertIn('fleet.redis.url="redis://***@h:1/0"', out)

    def test_config_check_says_ok_for_a_good_file(self):
        path = self.write("good.json", {"retry": {"maxRetries": 2, "jitter": "full"}})
        rc, out, err = self.cli(["config", "--check", path])
        self.assertEqual((rc, out, err), (0, path + ": ok\n", ""))

    def test_config_check_lists_every_problem_naming_each_key(self):
        path = self.write("bad.json", {"retry": {"jiter": "full", "maxRetries": "x"},
                                       "sim": {"oops": 1}})
        rc, out, err = self.cli(["config", "--check", path])
        self.assertEqual((rc, out), (1, ""), err)
        self.assertEqual(err.splitlines(), [
            path + ': unknown setting "retry.jiter" (did you mean retry.jitter?)',
            path + ': unknown setting "sim.oops" (retryd config lists the known ones)',
            path + ': retry.maxRetries must be an integer from 0 to 1000 (got "x")',
        ])
        # What the table cannot say: the plan's steps, a pattern that does not compile.
        path = self.write("bad2.json", {"retry": {"retryablePatterns": ["(x"]},
                                        "sim": {"plan": [{"txt": 1}]}})
        rc, out, err = self.cli(["config", "--check", path])
        self.assertEqual(rc, 1, err)
        self.assertEqual(len(err.splitlines()), 2, err)
        self.assertIn("sim.plan[0]", err)
        self.assertIn("retry.retryablePatterns[0]", err)
        for text, needle in (("{", "line 1"), ("[1]", "must hold a JSON object")):
            with self.subTest(text=text):
                rc, out, err = self.cli(["config", "--check", self.write("x.json", text)])
                self.assertEqual(rc, 1, err)
                self.assertIn(needle, err)
        rc, out, err = self.cli(["config", "--check", os.path.join(self.dir, "absent.json")])
        self.assertEqual(rc, 1, err)
        self.assertIn("absent.json: No such file", err)

    def test_config_usage_errors_exit_2_and_help_exits_0(self):
        rc, out, err = self.cli(["config", "--bogus"])
        self.assertEqual(rc, 2, err)
        self.assertIn("--bogus", err)
        rc, out, err = self.cli(["config", "--check"])
        self.assertEqual(rc, 2, err)
        rc, out, err = self.cli(["config", "--help"])
        self.assertEqual(rc, 0, err)
        self.assertIn("ORIGIN", out)
        rc, out, err = self.cli(["--help"])
        self.assertIn("retryd config --check FILE", out)


class RetriesOffTests(SettingsFiles):
    def test_start_warns_naming_the_file_that_turns_retries_off(self):
        path = self.write("off.json", {"retry": {"enabled": False}})
        d = self.spawn(args=["--settings", path])
        d.finish()
        err = d.stderr_text()
        self.assertIn("retries are off: retry.enabled is false in %s" % path, err)
        self.assertIn('{"type":"set_auto_retry","enabled":true}', err)

    def test_start_warns_when_set_turns_retries_off(self):
        d = self.spawn(sets=["retry.enabled=false"])
        d.finish()
        self.assertIn("retries are off: --set retry.enabled=false", d.stderr_text())

    def test_no_warning_when_retries_are_on(self):
        d = self.spawn(settings={"retry": {"enabled": True}})
        d.finish()
        self.assertNotIn("retries are off", d.stderr_text())

    def test_set_auto_retry_persist_false_leaves_the_file_alone(self):
        path = self.write("keep.json", {"retry": {"maxRetries": 2}})
        with open(path) as f:
            before = f.read()
        d = self.spawn(args=["--settings", path], plan=[{"error": "503"}, {"text": "x"}])
        r = d.request({"type": "set_auto_retry", "enabled": False, "persist": False})
        self.assertTrue(r["success"], r)
        self.assertEqual(r["data"], {"persisted": False})
        self.assertIs(d.request({"type": "get_state"})["data"]["autoRetryEnabled"], False)
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("auto_retry_start", [m["type"] for m in msgs])
        d.finish()
        with open(path) as f:
            self.assertEqual(f.read(), before)
        # Also with the default path: no file is made.
        d = self.spawn()
        r = d.request({"type": "set_auto_retry", "enabled": False, "persist": False})
        self.assertTrue(r["success"], r)
        d.finish()
        self.assertFalse(os.path.exists(d.settings_path))

    def test_set_auto_retry_persists_by_default_as_pi_does(self):
        d = self.spawn()
        r = d.request({"type": "set_auto_retry", "enabled": False})
        self.assertNotIn("data", r)
        d.finish()
        with open(d.settings_path) as f:
            self.assertEqual(json.load(f), {"retry": {"enabled": False}})

    def test_a_failure_not_retried_because_retries_are_off_says_so_on_message_end(self):
        d = self.spawn(sets=["retry.enabled=false"],
                       plan=[{"error": "503 Service Unavailable"}, {"error": "401 unauthorized"}])
        msgs = self.run_prompt(d, "q")
        ends = assistant_ends(msgs)
        self.assertEqual(ends[0]["retrySkipped"], "disabled")
        self.assertEqual(ends[0]["message"]["stopReason"], "error")
        self.assertNotIn("auto_retry_end", [m["type"] for m in msgs])
        # Not retryable anyway: nothing was skipped.
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("retrySkipped", assistant_ends(msgs)[0])
        d.finish()

    def test_retryctl_says_retries_are_off(self):
        ctl = os.path.join(os.path.dirname(harness.binary_path()), "retryctl")
        env = dict(os.environ, RETRYD=harness.binary_path(), HOME=self.dir,
                   XDG_CONFIG_HOME=os.path.join(self.dir, "config"),
                   XDG_STATE_HOME=os.path.join(self.dir, "state"), **harness.runtime_env(self.dir))
        env.pop("RETRYD_LOG", None)
        p = subprocess.run([ctl, "--set", "retry.enabled=false", "--sim-plan",
                            '[{"error":"503 Service Unavailable"}]', "q"],
                           capture_output=True, env=env, timeout=harness.scaled(20))
        err = p.stderr.decode("utf-8", "replace")
        self.assertEqual(sanitizer_report(err), "", err)
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("retryctl: retries are off (set_auto_retry or retry.enabled)", err)
        self.assertIn("retryd: warn: retries are off: --set retry.enabled=false", err)

"""The examples of README.md and docs/*.md run as written, with a busy fleet
beside them: a newcomer copies them, so they are code, and they must not wait
for other retryd daemons of the same user (busyfleet.py: two of them, in the
same runtime dir as every command here, failing sim plans with 429 and 503
and retry-after in a loop, sharing what they see).

Every fenced example (shell, JSON, a `$ ` or `> ` transcript, and the code of
other languages) is found by EXAMPLES below: each is run by the test named
there, or says why it is not. A new example that is neither fails
test_every_example_is_run_or_says_why_not. The commands run against the
binaries under test (on PATH as `retryd` and `retryctl`, as after `make
install`). Recipes that name a paid provider run against the fake server of
tests/fixtures through the provider's base-URL variable, or with the sim
provider in its place: the calls, not the account, are what the docs promise.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import harness
from busyfleet import BusyFleet

sys.path.insert(0, os.path.join(harness.REPO_ROOT, "tests", "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

README = os.path.join(harness.REPO_ROOT, "README.md")
DOCS = os.path.join(harness.REPO_ROOT, "docs")

# (page, a piece of the example, the test that runs it or "not run: why").
EXAMPLES = [
    ("README.md", "make demo     #", "test_make_demo_answers_within_two_seconds_of_event_time"),
    ("README.md", "make install PREFIX=$HOME/.local     # bin/retryd",
     "not run: test_install.py installs into a temporary PREFIX and runs what it installed"),
    ("README.md", "     0 ms  message_end", "test_make_demo_answers_within_two_seconds_of_event_time"),
    ("README.md", "printf '%s\\n' '{\"id\":\"1\"", "test_the_shell_pipe_recipe_shows_the_retry_and_the_end"),
    ("README.md", "$ retryctl --sim-plan", "test_the_retryctl_recipe_answers_after_the_overload"),
    ("README.md", "pip install ./clients/python",
     "not run: it installs into the interpreter; test_python_client.py runs the package in place"),
    ("README.md", "import { RpcClient }", "test_the_rpc_client_recipe_fails_loudly_without_a_key"),
    ("README.md", "import retryd", "test_the_python_recipe_prints_the_answer"),
    ("README.md", "#include <retryd/client.h>",
     "not run here: test_install.py builds it from the installed .pc file and runs it"),
    ("README.md", "cc hello.c $(pkg-config",
     "not run here: test_install.py compiles with the installed .pc file's flags"),
    ("docs/agent-clis.md", '{"type":"hello","conversation":"c-42"}',
     "not run: the output of an imaginary CLI, for the profile below it"),
    ("docs/agent-clis.md", '"mycli": {', "test_the_settings_examples_pass_config_check"),
    ("docs/benchmarks.md", "make bench ", "not run: make bench takes minutes and is not part of check"),
    ("docs/benchmarks.md", "check ready < 5 ms", "not run: measured output of make bench"),
    ("docs/c-client.md", "#include <retryd/client.h>",
     "not run here: test_install.py builds it from the installed .pc file and runs it"),
    ("docs/c-client.md", "cc hello.c $(pkg-config",
     "not run here: test_install.py compiles with the installed .pc file's flags"),
    ("docs/fleet.md", "fleet.redis.url=redis://10.0.0.5",
     "not run: it names a redis server on another machine; test_fleet_redis.py starts its own"),
    ("docs/gemini.md", '"gemini": {', "test_the_settings_examples_pass_config_check"),
    ("docs/hardening.md", "make fuzz FUZZ_SECONDS=60",
     "not run: fuzzing and valgrind take minutes and need clang or valgrind"),
    ("docs/install.md", "make install PREFIX=$HOME/.local     # default",
     "not run here: test_install.py installs and uninstalls into a temporary PREFIX"),
    ("docs/install.md", "npm install ~/.local/lib/node_modules/retryd",
     "not run here: test_install.py runs this step in a fresh project"),
    ("docs/install.md", "@oh-my-pi/pi-coding-agent/modes/rpc/rpc-client",
     "not run here: it needs bun and oh-my-pi (make interop installs both)"),
    ("docs/layout.md", "main.c  >  rpc.c", "not run: a diagram"),
    ("docs/providers.md", "OPENAI_API_KEY=sk-...     build/retryd",
     "test_the_builtin_provider_lines_reach_the_server_their_variables_name"),
    ("docs/providers.md", '"work": {', "test_the_settings_examples_pass_config_check"),
    ("docs/providers.md", '"openai-work": {', "test_the_settings_examples_pass_config_check"),
    ("docs/providers.md", '> {"id":"m","type":"get_available_models"}',
     "not run: abridged (…) output of a gateway entry"),
    ("docs/providers.md", "retryd: unknown provider 'lcoal'",
     "not run: error sentences, each tested by test_http.py and test_settings_errors.py"),
    ("docs/providers.md", "No API key for provider openai", "not run: abridged (…) output"),
    ("docs/providers.md", '"kind":"credential"', "not run: output of a two-key set-up (test_http.py)"),
    ("docs/providers.md", "401 Incorrect API key provided", "not run: an error text"),
    ("docs/providers.md", '"reason":"server-hint"', "not run: one event (test_http.py)"),
    ("docs/providers.md", '"delayMs":200,"errorMessage":"429 Rate limit reached"}',
     "not run: one event (test_http.py)"),
    ("docs/providers.md", '"text":"one two three"}],…,"stopReason":"stop"',
     "not run: abridged (…) output (test_http.py)"),
    ("docs/providers.md", "stream ended before completion\",\"reason\"",
     "not run: abridged (…) output (test_http.py)"),
    ("docs/providers.md", '"delta":" two"}}', "not run: one event"),
    ("docs/retryctl.md", "$ retryctl --sim-plan", "test_the_retryctl_page_transcript_runs_as_shown"),
    ("docs/retryctl.md", "retryctl [options] [--] [PROMPT]", "not run: a synopsis"),
    ("docs/retryctl.md", "retryctl --json --sim-plan", "test_the_retryctl_json_pipe_shows_the_retry"),
    ("docs/usage.md", "retryd [--mode rpc]", "not run: a synopsis"),
    ("docs/usage.md", "$ build/retryd --classify", "test_the_classify_transcript_prints_what_it_shows"),
    ("docs/usage.md", '> {"id":"c","type":"classify_error"',
     "test_the_classify_error_transcript_answers_what_it_shows"),
    # protocol/README.md (its blocks of protocol lines only are checked
    # against the schemas by test_schemas.DocTranscriptTest)
    ("protocol/README.md", "python3 -m unittest tests/e2e/test_schemas.py -v",
     "not run: make check runs test_schemas.py"),
    ("protocol/README.md", "retryd [--mode rpc] [--provider NAME]", "not run: a synopsis"),
    ("protocol/README.md", '{"sessionId":"01a2…","userMessages":1',
     "not run: get_session_stats' data, abridged (…); test_schemas.py checks the real one"),
    ("protocol/README.md", '"model":"sim-1",\n "usage":{"input":1,"output":3',
     "not run: one message of the shape messages.schema.json defines; test_schemas.py checks "
     "every real one"),
    ("protocol/README.md", "response(prompt, success:true)          ← at once",
     "not run: a diagram of the event order (test_lifecycle.py and test_schemas.py hold it)"),
    ("protocol/README.md", "429 RESOURCE_EXHAUSTED. {",
     "test_the_protocol_pages_classify_examples_print_what_they_show"),
    ("protocol/README.md", "$ retryd --classify 'API Error: 529",
     "test_the_protocol_pages_classify_examples_print_what_they_show"),
    ("protocol/README.md", "--set 'retry.schedule=[10,20,30,40,50]'",
     "not run: settings beside the events they give, abridged (…); test_retry.py runs each"),
    ("protocol/README.md", "retry-after-ms: 1500                 <",
     "not run: headers beside the events they give, abridged (…); test_http.py runs each"),
    # docs/agent-clis/
    ("docs/agent-clis/codex.md", "codex exec --json --skip-git-repo-check ARGS -",
     "not run: the command lines retryd builds (test_cli.py and make real-clis run them)"),
    ("docs/agent-clis/codex.md", '[model_providers.mygw]',
     "not run: a Codex config.toml for a gateway on another machine"),
    ("docs/agent-clis/codex.md", '"model_providers.mygw.request_max_retries=0"',
     "not run: a profile for that gateway; make real-clis runs the built-in one"),
    ("docs/agent-clis/codex.md", "check_for_update_on_startup = false",
     "not run here: tests/real_clis/test_codex.py writes this config for the real Codex"),
    ("docs/agent-clis/gemini.md", '{"general":{"maxAttempts":1,"enableAutoUpdate":false',
     "not run here: tests/real_clis/test_gemini_cli.py writes such settings for the real Gemini CLI"),
    ("docs/agent-clis/gemini.md", "Security Warning: Skipping system settings file",
     "not run: the real Gemini CLI's stderr, recorded"),
    ("docs/agent-clis/gemini.md", "GOOGLE_GEMINI_BASE_URL=https://gateway.example",
     "not run: it names a gateway on another machine"),
    ("docs/agent-clis/pi.md", "export default p=>p.on('agent_end'",
     "not run here: the built-in pi profile (cli_builtin.c) writes this extension; make "
     "real-clis runs it in the real pi"),
    ("docs/agent-clis/pi.md", '{"providers": {"mygw": {"baseUrl": "https://gateway.example/v1"',
     "not run: pi's models.json for a gateway on another machine"),
]


def pages():
    return ([README, os.path.join(harness.REPO_ROOT, "protocol", "README.md")]
            + sorted(glob.glob(os.path.join(DOCS, "*.md")))
            + sorted(glob.glob(os.path.join(DOCS, "*", "*.md"))))


def schema_checked(lang, body):
    """A block of protocol lines only ("> {...}", "< {...}", a json block's
    objects; "…" for what is left out): test_schemas.DocTranscriptTest
    checks each whole line against the schemas."""
    lines = [ln.strip() for ln in body.split("\n") if ln.strip()]
    return bool(lines) and all(re.match(r"[<>] (\{|…)", ln) or ln.startswith("…") or
                               (lang == "json" and ln.startswith("{")) for ln in lines)


def rel(page):
    return os.path.relpath(page, harness.REPO_ROOT)


def fenced(page):
    """[(lang, body)] of the page's fenced blocks."""
    with open(page, encoding="utf-8") as f:
        return re.findall(r"```([a-z]*)\n(.*?)```", f.read(), re.S)


def example(page, needle):
    """The one block of `page` (relative) holding needle."""
    found = [b for _, b in fenced(os.path.join(harness.REPO_ROOT, page)) if needle in b]
    if len(found) != 1:
        raise AssertionError("%s: %d blocks hold %r" % (page, len(found), needle))
    return found[0]


class ReadmeRecipeTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.runtime = tempfile.mkdtemp(prefix="retryd-readme-run-")
        cls.fleet = BusyFleet(cls.runtime, binary=harness.binary_path()).start()
        try:
            cls.fleet.wait_busy(failures=2, timeout=harness.scaled(15))
        except Exception:
            cls.fleet.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        busy = cls.fleet.failures()
        cls.fleet.stop()
        shutil.rmtree(cls.runtime, True)
        assert busy >= 2, "the busy fleet was not busy (%d failures)" % busy

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="retryd-readme-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        bindir = os.path.join(self.tmp, "bin")
        os.mkdir(bindir)
        for prog in ("retryd", "retryctl"):
            src = os.path.join(os.path.dirname(harness.binary_path()), prog)
            if os.path.exists(src):
                os.symlink(src, os.path.join(bindir, prog))
        # The busy fleet's runtime dir: the same user's other daemons.
        self.env = dict(os.environ, PATH=bindir + ":/usr/bin:/bin", HOME=self.tmp,
                        XDG_CONFIG_HOME=os.path.join(self.tmp, "config"),
                        XDG_STATE_HOME=os.path.join(self.tmp, "state"),
                        XDG_RUNTIME_DIR=self.runtime)
        for k in ("RETRYD", "RETRYD_LOG", "NO_COLOR"):
            self.env.pop(k, None)

    def tearDown(self):
        # Beside every example, the fleet was failing.
        self.assertTrue(all(d.proc.poll() is None for d in self.fleet.daemons),
                        "a busy-fleet daemon died")

    def run_sh(self, script, timeout=30, env=None):
        t0 = time.monotonic()
        p = subprocess.run(["sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=env or self.env, cwd=self.tmp, timeout=harness.scaled(timeout))
        self.elapsed = time.monotonic() - t0
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def assertFast(self, seconds, what):
        if not harness.is_sanitized_build() and not harness.is_valgrind():
            self.assertLess(self.elapsed, seconds, "%s took %.2f s beside a busy fleet"
                            % (what, self.elapsed))

    # -- the catalogue ---------------------------------------------------------

    def test_every_example_is_run_or_says_why_not(self):
        listed = {}
        for page, needle, how in EXAMPLES:
            example(page, needle)      # exactly one block holds it
            if not how.startswith("not run"):
                self.assertTrue(hasattr(self, how), "%s: no test %s" % (page, how))
            listed.setdefault(page, []).append(needle)
        for page in pages():
            for lang, body in fenced(page):
                if schema_checked(lang, body) and not any(n in body for n in listed.get(rel(page), [])):
                    continue
                hits = [n for n in listed.get(rel(page), []) if n in body]
                self.assertEqual(len(hits), 1, "%s: an example that no entry of EXAMPLES runs or "
                                 "explains (or more than one does):\n%s" % (rel(page), body[:300]))

    # -- README ----------------------------------------------------------------

    def test_make_demo_answers_within_two_seconds_of_event_time(self):
        """make demo's script, as README's "What it looks like" shows it."""
        rc, out, err = self.run_sh("RETRYD=%s %s" % (harness.binary_path(),
                                                     os.path.join(harness.REPO_ROOT, "scripts",
                                                                  "demo.sh")))
        self.assertEqual(rc, 0, err)
        rows = re.findall(r"^\s*(\d+) ms\s+(\S+)", out, re.M)
        kinds = [k for _, k in rows]
        shown = [k for _, k in re.findall(r"^\s*(\d+) ms\s+(\S+)",
                                          example("README.md", "     0 ms  message_end"), re.M)]
        it = iter(kinds)
        self.assertTrue(all(k in it for k in shown), "README shows %s, the demo printed %s"
                        % (shown, kinds))
        end = [int(ms) for ms, k in rows if k == "agent_end"]
        self.assertEqual(len(end), 1, out)
        self.assertLess(end[0], 2000, out)
        sys.stderr.write("[make demo beside a busy fleet: agent_end at %d ms] " % end[0])

    @unittest.skipUnless(shutil.which("jq"), "jq is not installed")
    def test_the_shell_pipe_recipe_shows_the_retry_and_the_end(self):
        rc, out, err = self.run_sh(example("README.md", "printf '%s\\n' '{\"id\":\"1\""))
        self.assertEqual(rc, 0, err)
        types = [re.search(r'"type":"([a-z_]+)"', line).group(1) for line in out.splitlines()]
        self.assertEqual(types, ["auto_retry_start", "auto_retry_end", "agent_end"], out)
        self.assertFast(2.0, "the shell pipe")

    def test_the_python_recipe_prints_the_answer(self):
        code = example("README.md", "import retryd")
        # The sim provider in place of the paid one: same calls.
        code = re.sub(r"args=\[[^\]]*\]", 'args=["--no-session", "--set", "retry.baseDelayMs=10", '
                      '"--sim-plan", \'[{"error":"503 Service Unavailable"},{"text":"one line"}]\']',
                      code, count=1)
        env = dict(self.env, PYTHONPATH=os.path.join(harness.REPO_ROOT, "clients", "python"))
        p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=env, cwd=self.tmp,
                           timeout=harness.scaled(30))
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(p.stdout.decode(), "one line\n")

    def test_the_retryctl_recipe_answers_after_the_overload(self):
        first = [line for line in example("README.md", "$ retryctl --sim-plan").splitlines()
                 if line.startswith("$ retryctl --sim-plan")][0]
        rc, out, err = self.run_sh(first[2:] + " --set retry.baseDelayMs=10 --no-session")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "hello\n")
        self.assertIn("529 overloaded", err)
        self.assertFast(2.0, "the retryctl recipe")

    def test_the_rpc_client_recipe_fails_loudly_without_a_key(self):
        """pi 1.6's RpcClient (build/pi16, as make interop installs it; or
        $PI16_PREFIX): as written it says why and exits 1 with no key; with
        the sim plan the README gives for offline use it answers.
        tests/interop/rpc_client.test.mjs runs the answering case too."""
        prefix = os.environ.get("PI16_PREFIX") or os.path.join(harness.REPO_ROOT, "build", "pi16")
        node = os.path.join(prefix, "node_modules", ".bin", "node")
        if not os.path.exists(os.path.join(prefix, "node_modules", "@earendil-works",
                                           "pi-coding-agent")) or not os.path.exists(node):
            self.skipTest("pi 1.6 is not installed (make interop installs it into build/pi16)")
        code = example("README.md", "import { RpcClient }")
        launcher = os.path.join(harness.REPO_ROOT, "clients", "js", "bin", "retryd-rpc.mjs")
        code = re.sub(r"cliPath: .*,\n", "cliPath: %s,\n" % json.dumps(launcher), code, count=1)
        offline = re.search(r"replace the `args` with\s+`(\[.*?\])`", open(README).read(), re.S)
        project = os.path.join(self.tmp, "project")
        os.mkdir(project)
        os.symlink(os.path.join(prefix, "node_modules"), os.path.join(project, "node_modules"))
        env = dict(self.env, RETRYD=harness.binary_path())
        env.pop("ANTHROPIC_API_KEY", None)
        for name, text in (("nokey.mjs", code),
                           ("offline.mjs", re.sub(r"args: \[[^\]]*\]",
                                                  "args: " + offline.group(1).replace("\n", " "),
                                                  code, count=1))):
            with open(os.path.join(project, name), "w") as f:
                f.write(text)
        p = subprocess.run([node, "nokey.mjs"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=env, cwd=project, timeout=harness.scaled(60))
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        self.assertIn("no answer: No API key for provider anthropic: set ANTHROPIC_API_KEY",
                      p.stderr.decode())
        self.assertEqual(p.stdout, b"")
        p = subprocess.run([node, "offline.mjs"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=env, cwd=project, timeout=harness.scaled(60))
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(p.stdout.decode(), "one line\n")
        self.assertIn("retry 1: 529 overloaded", p.stderr.decode())

    # -- docs ------------------------------------------------------------------

    def test_the_retryctl_page_transcript_runs_as_shown(self):
        lines = example("docs/retryctl.md", "$ retryctl --sim-plan").splitlines()
        rc, out, err = self.run_sh(lines[0][2:])
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, lines[-1] + "\n")
        # The plain progress line, as shown before its "←" note.
        self.assertEqual(err, lines[1].split("  ←")[0].rstrip() + "\n")
        self.assertFast(3.5, "the retryctl page's transcript (one 2 s backoff)")

    @unittest.skipUnless(shutil.which("jq"), "jq is not installed")
    def test_the_retryctl_json_pipe_shows_the_retry(self):
        rc, out, err = self.run_sh(example("docs/retryctl.md", "retryctl --json --sim-plan"))
        self.assertEqual(rc, 0, err)
        types = [json.loads(line)["type"] for line in out.splitlines()]
        self.assertEqual(types, ["auto_retry_start", "auto_retry_end"], out)
        self.assertFast(3.5, "the retryctl --json pipe (one 2 s backoff)")

    def test_the_classify_transcript_prints_what_it_shows(self):
        lines = example("docs/usage.md", "$ build/retryd --classify").splitlines()
        for cmd, want in zip(lines[0::2], lines[1::2]):
            with self.subTest(cmd=cmd):
                rc, out, err = self.run_sh(cmd[2:].replace("build/retryd", "retryd", 1))
                self.assertEqual(rc, 0, err)
                self.assertEqual(out, want + "\n")

    def test_the_protocol_pages_classify_examples_print_what_they_show(self):
        lines = example("protocol/README.md", "$ retryd --classify 'API Error: 529").splitlines()
        for cmd, want in zip(lines[0::2], lines[1::2]):
            with self.subTest(cmd=cmd):
                rc, out, err = self.run_sh(cmd[2:])
                self.assertEqual(rc, 0, err)
                self.assertEqual(out, want + "\n")
        text, want = example("protocol/README.md", "429 RESOURCE_EXHAUSTED. {").strip().split("\n→ ")
        rc, out, err = self.run_sh("retryd --classify \"$T\"", env=dict(self.env, T=text))
        self.assertEqual((rc, out), (0, want + "\n"), err)

    def test_the_classify_error_transcript_answers_what_it_shows(self):
        lines = example("docs/usage.md", '> {"id":"c","type":"classify_error"').splitlines()
        sent = "".join(line[2:] + "\n" for line in lines if line.startswith("> "))
        want = [json.loads(line[2:]) for line in lines if line.startswith("< ")]
        p = subprocess.run(["retryd", "--no-session"], input=sent.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=self.env, cwd=self.tmp,
                           timeout=harness.scaled(30))
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        got = [json.loads(line) for line in p.stdout.decode().splitlines()]
        self.assertEqual([g for g in got if g.get("type") == "response"], want)

    def test_the_settings_examples_pass_config_check(self):
        for page, needle, how in EXAMPLES:
            if how != "test_the_settings_examples_pass_config_check":
                continue
            with self.subTest(page=page, example=needle):
                path = os.path.join(self.tmp, "settings.json")
                with open(path, "w") as f:
                    f.write(example(page, needle))
                rc, out, err = self.run_sh("retryd config --check " + path)
                self.assertEqual((rc, err), (0, ""))
                self.assertEqual(out, path + ": ok\n")

    def test_the_builtin_provider_lines_reach_the_server_their_variables_name(self):
        """docs/providers.md's lines, each with a prompt, against the fake
        server named by the provider's SDK variable (openrouter has none: its
        baseUrl is --set), with every other host behind a closed proxy."""
        srv = FakeServer([{"text": "answered", "times": 10}], max_seconds=120).start()
        self.addCleanup(srv.stop)
        where = {"openai": ("OPENAI_BASE_URL", srv.url + "/v1"),
                 "anthropic": ("ANTHROPIC_BASE_URL", srv.url),
                 "google": ("GOOGLE_GEMINI_BASE_URL", srv.url),
                 "ollama": ("OLLAMA_HOST", srv.url)}
        closed = "http://127.0.0.1:9"
        for line in example("docs/providers.md", "OPENAI_API_KEY=sk-...     build/retryd").splitlines():
            line = line.split("#")[0].strip()
            provider = re.search(r"--provider (\S+)", line).group(1)
            with self.subTest(provider=provider):
                cmd = line.replace("build/retryd", "retryd", 1).replace("sk-...", "sk-test-readme")
                cmd = cmd.replace("=... ", "=test-readme-key ") + " --no-session"
                env = dict(self.env, https_proxy=closed, http_proxy=closed, HTTPS_PROXY=closed,
                           NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
                if provider in where:
                    env[where[provider][0]] = where[provider][1]
                else:
                    cmd += " --set providers.%s.baseUrl=%s/v1" % (provider, srv.url)
                srv.clear_requests()
                p = subprocess.run(["sh", "-c", cmd], input=b'{"type":"prompt","message":"hi"}\n',
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                   cwd=self.tmp, timeout=harness.scaled(30))
                self.assertEqual(p.returncode, 0, p.stderr.decode())
                ends = [json.loads(x) for x in p.stdout.decode().splitlines()
                        if '"agent_end"' in x]
                self.assertEqual(len(ends), 1, p.stdout.decode()[-500:])
                last = ends[0]["messages"][-1]
                self.assertEqual(last.get("stopReason"), "stop", last)
                self.assertEqual(len(srv.requests()), 1)

    def test_every_local_link_in_the_readme_and_docs_exists(self):
        for page in pages():
            with open(page, encoding="utf-8") as f:
                text = f.read()
            for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
                if re.match(r"[a-z]+:", target):
                    continue
                path = os.path.join(os.path.dirname(page), target)
                self.assertTrue(os.path.exists(path), "%s links to %s" % (page, target))

    def test_the_readme_stays_under_300_lines(self):
        with open(README, encoding="utf-8") as f:
            self.assertLess(len(f.read().splitlines()), 300)


if __name__ == "__main__":
    unittest.main()

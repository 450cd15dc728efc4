"""The README's recipes run as written: a newcomer copies them, so they are
code. Each is taken from README.md by its fence and run against the binary
under test (on PATH as `retryd`, as after `make install`). Recipes that name a
paid provider run with the sim provider in its place: the calls, not the
account, are what the README promises.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness

README = os.path.join(harness.REPO_ROOT, "README.md")


def blocks(lang):
    with open(README, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"```%s\n(.*?)```" % lang, text, re.S)


def block_with(lang, needle):
    for b in blocks(lang):
        if needle in b:
            return b
    raise AssertionError("README.md has no ```%s block with %r" % (lang, needle))


class ReadmeRecipeTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="retryd-readme-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        bindir = os.path.join(self.tmp, "bin")
        os.mkdir(bindir)
        for prog in ("retryd", "retryctl"):
            src = os.path.join(os.path.dirname(harness.binary_path()), prog)
            if os.path.exists(src):
                os.symlink(src, os.path.join(bindir, prog))
        self.env = dict(os.environ, PATH=bindir + ":/usr/bin:/bin", HOME=self.tmp,
                        XDG_CONFIG_HOME=os.path.join(self.tmp, "config"),
                        XDG_STATE_HOME=os.path.join(self.tmp, "state"),
                        XDG_RUNTIME_DIR=self.tmp)
        self.env.pop("RETRYD", None)
        self.env.pop("RETRYD_LOG", None)

    def run_sh(self, script, timeout=30):
        p = subprocess.run(["sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=self.env, cwd=self.tmp, timeout=harness.scaled(timeout))
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    @unittest.skipUnless(shutil.which("jq"), "jq is not installed")
    def test_the_shell_pipe_recipe_shows_the_retry_and_the_end(self):
        script = block_with("sh", "printf '%s\\n' '{\"id\":\"1\"")
        rc, out, err = self.run_sh(script)
        self.assertEqual(rc, 0, err)
        types = [re.search(r'"type":"([a-z_]+)"', line).group(1) for line in out.splitlines()]
        self.assertEqual(types, ["auto_retry_start", "auto_retry_end", "agent_end"], out)

    def test_the_python_recipe_prints_the_answer(self):
        code = block_with("python", "retryd.Client(")
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
        first = [line for line in block_with("sh", "$ retryctl").splitlines()
                 if line.startswith("$ retryctl --sim-plan")][0]
        rc, out, err = self.run_sh(first[2:] + " --set retry.baseDelayMs=10 --no-session")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "hello\n")
        self.assertIn("529 overloaded", err)

    def test_every_local_link_in_the_readme_and_docs_exists(self):
        docs = os.path.join(harness.REPO_ROOT, "docs")
        pages = [README] + [os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md")]
        for page in pages:
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

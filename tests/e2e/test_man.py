"""The man pages (man/retryd.1, man/retryctl.1) say what the programs do:
every option their --help lists, every command the daemon takes, every
built-in provider and every environment variable the code reads is named,
and groff formats both pages without a warning.

Run:  RETRYD=$PWD/build/retryd python3 tests/e2e/run.py test_man
"""
import glob
import json
import os
import re
import shutil
import subprocess
import unittest

import harness

ROOT = harness.REPO_ROOT
PROVIDERS = ["sim", "openai", "anthropic", "google", "openrouter", "ollama", "azure",
             "claude", "codex", "gemini", "pi"]
# Read by the code but not the user's to set: the search path, the home
# folder (named in retryd.1 with the XDG dirs), the test suite's binary.
NOT_SETTINGS = {"PATH"}


def page_text(name):
    """The page's source with troff's escapes for '-' and fonts removed."""
    with open(os.path.join(ROOT, "man", name), encoding="utf-8") as f:
        text = f.read()
    return re.sub(r"\\f[BIRP]", "", text.replace("\\-", "-"))


def help_text(prog):
    p = subprocess.run([os.path.join(os.path.dirname(harness.binary_path()), prog), "--help"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10)
    return p.stdout.decode()


def options(text):
    return sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", text)))


def schema_commands():
    with open(os.path.join(ROOT, "protocol", "schemas", "commands.schema.json")) as f:
        doc = json.load(f)
    found = set()

    def walk(node):
        if isinstance(node, dict):
            t = node.get("properties", {}).get("type")
            if isinstance(t, dict) and "const" in t:
                found.add(t["const"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(doc)
    return sorted(found)


def env_names(files):
    """Variable names the code reads: getenv("X") and the names of the
    tables it looks names up in (a quoted *_KEY, *_URL, *_HOST, *_HOME,
    *_DIR, *_ENDPOINT)."""
    names = set()
    for path in files:
        with open(path, encoding="utf-8") as f:
            src = f.read()
        names.update(re.findall(r'getenv\("([A-Z][A-Z0-9_]*)"\)', src))
        names.update(re.findall(r'"([A-Z][A-Z0-9]*_(?:[A-Z0-9]+_)*(?:KEY|URL|HOST|HOME|DIR|ENDPOINT))"',
                                src))
    return names - NOT_SETTINGS


class ManPageTests(unittest.TestCase):
    def test_retryd_1_names_every_option_of_retryd_help(self):
        man = page_text("retryd.1")
        missing = [o for o in options(help_text("retryd")) if o not in man]
        self.assertEqual(missing, [], "options in retryd --help that retryd.1 does not name")

    def test_retryctl_1_names_every_option_of_retryctl_help(self):
        man = page_text("retryctl.1")
        missing = [o for o in options(help_text("retryctl")) if o not in man]
        self.assertEqual(missing, [], "options in retryctl --help that retryctl.1 does not name")

    def test_retryd_1_names_every_command_of_the_protocol(self):
        man = page_text("retryd.1")
        section = man[man.index(".SH COMMANDS"):man.index(".SH", man.index(".SH COMMANDS") + 4)]
        commands = schema_commands()
        self.assertGreater(len(commands), 20)
        missing = [c for c in commands if not re.search(r"\b%s\b" % c, section)]
        self.assertEqual(missing, [], "commands of commands.schema.json missing from COMMANDS")

    def test_both_pages_name_every_built_in_provider(self):
        for name in ("retryd.1", "retryctl.1"):
            man = page_text(name)
            with self.subTest(page=name):
                self.assertEqual([p for p in PROVIDERS if not re.search(r"\b%s\b" % p, man)], [])

    def test_every_environment_variable_the_code_reads_is_in_a_page(self):
        daemon = [f for f in glob.glob(os.path.join(ROOT, "src", "**", "*.c"), recursive=True)
                  if "/retryctl/" not in f]
        ctl = glob.glob(os.path.join(ROOT, "src", "retryctl", "*.c"))
        for name, files in (("retryd.1", daemon), ("retryctl.1", ctl)):
            man = page_text(name)
            with self.subTest(page=name):
                names = env_names(files)
                self.assertTrue(names)
                self.assertEqual(sorted(n for n in names if not re.search(r"\b%s\b" % n, man)), [])

    def test_groff_formats_both_pages_without_a_warning(self):
        if shutil.which("groff") is None:
            self.skipTest("no groff here")
        for name in ("retryd.1", "retryctl.1"):
            p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z",
                                os.path.join(ROOT, "man", name)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
            with self.subTest(page=name):
                self.assertEqual((p.returncode, p.stderr.decode()), (0, ""))

    def test_the_classify_example_of_retryd_1_prints_what_it_shows(self):
        man = page_text("retryd.1")
        m = re.search(r"for example\n\.B \"([^\"]+)\"\ngives\n\.nf\n\.B (\{.*\})\n", man)
        self.assertIsNotNone(m, "the --classify example moved")
        p = subprocess.run([harness.binary_path(), "--classify", m.group(1)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10,
                           env=dict(os.environ, XDG_CONFIG_HOME="/nonexistent"))
        self.assertEqual(p.stdout.decode().strip(), m.group(2))


if __name__ == "__main__":
    unittest.main()

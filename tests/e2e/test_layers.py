"""scripts/check-layers.py: the layer rule of docs/layout.md holds for src/,
and the check fails on each kind of violation in a small tree of its own."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "scripts", "check-layers.py")


def run(top):
    p = subprocess.run([sys.executable, CHECK, top], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout


class LayerCheckTests(unittest.TestCase):
    def tree(self, files):
        d = tempfile.mkdtemp(prefix="layers-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", d]))
        for rel, text in files.items():
            path = os.path.join(d, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        return d

    GOOD = {
        "base/log.h": "",
        "base/log.c": '#include "base/log.h"\n',
        "io/writer.h": '#include "base/log.h"\n',
        "io/writer.c": '#include "io/writer.h"\nvoid f(void) { uv_write(0); }\n',
        "core/session.c": '#include "io/writer.h"\n#include "retryd/protocol.h"\n'
                          '/* uv_run( in a comment */ const char *s = "uv_run(";\n',
        "main.c": '#include "core/session.h"\nint main(void) { uv_run(0); }\n',
        "core/session.h": "",
    }

    def test_the_project_tree_passes(self):
        rc, out = run(os.path.join(ROOT, "src"))
        self.assertEqual(rc, 0, out)
        self.assertIn("includes point downward", out)

    def test_a_tree_that_keeps_the_rule_passes(self):
        rc, out = run(self.tree(self.GOOD))
        self.assertEqual(rc, 0, out)

    def test_an_upward_include_fails_and_names_both_layers(self):
        files = dict(self.GOOD)
        files["io/writer.c"] = '#include "core/session.h"\n'
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 1)
        self.assertIn('io/writer.c: #include "core/session.h" points io -> core', out)

    def test_io_and_proto_may_not_include_each_other(self):
        files = dict(self.GOOD)
        files["proto/event.c"] = '#include "io/writer.h"\n'
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 1)
        self.assertIn("points proto -> io", out)

    def test_an_include_without_its_layer_fails(self):
        files = dict(self.GOOD)
        files["core/session.c"] = '#include "writer.h"\n'
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 1)
        self.assertIn('#include "writer.h" names no file', out)

    def test_two_modules_of_one_layer_including_each_other_fail(self):
        files = dict(self.GOOD)
        files["core/a.h"] = ""
        files["core/b.h"] = ""
        files["core/a.c"] = '#include "core/a.h"\n#include "core/b.h"\n'
        files["core/b.c"] = '#include "core/b.h"\n#include "core/a.h"\n'
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 1)
        self.assertIn("include circle: core/a -> core/b -> core/a", out)

    def test_a_libuv_call_outside_io_fails_with_its_line(self):
        files = dict(self.GOOD)
        files["core/session.c"] = '#include "core/session.h"\n\nvoid f(void) { uv_timer_start(0); }\n'
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 1)
        self.assertIn("core/session.c:3: calls uv_timer_start() outside", out)

    def test_the_client_library_may_use_only_shared(self):
        files = dict(self.GOOD)
        files["shared/lines.h"] = ""
        files["client/client.c"] = '#include "shared/lines.h"\n#include "base/log.h"\n'
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 1)
        self.assertIn('client/client.c: #include "base/log.h" points client -> base', out)
        self.assertNotIn("shared/lines.h\" points", out)

    def test_a_room_over_its_line_limit_fails_and_names_the_limit(self):
        files = dict(self.GOOD)
        files["core/fleet.c"] = "int x;\n" * 1201
        files["core/session.c"] = '#include "io/writer.h"\n' + "int y;\n" * 600
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 1)
        self.assertIn("core/fleet.c: 1201 lines, over the 1200 a room may have", out)
        self.assertIn("core/session.c: 601 lines, over the 600 a room may have", out)
        files["core/fleet.c"] = "int x;\n" * 1200
        files["core/session.c"] = "int y;\n" * 600
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 0, out)

    def test_the_chain_including_the_session_fails_although_the_layer_allows_it(self):
        files = dict(self.GOOD)
        files["core/chain.h"] = ""
        files["core/chain.c"] = '#include "core/chain.h"\n#include "core/session.h"\n'
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 1)
        self.assertIn('core/chain.c: #include "core/session.h": core/chain sits below it', out)

    def test_a_regular_expression_in_the_classifier_code_fails_but_words_pass(self):
        files = dict(self.GOOD)
        files["core/classify.c"] = ('const char *rule = "text:retryablePatterns";\n'
                                    '/* "\\\\boverloaded\\\\b" in a comment is fine */\n')
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 0, out)
        files["core/classify.c"] += 'const char *p = "\\\\boverloaded\\\\b";\n'
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 1)
        self.assertIn("core/classify.c: the pattern", out)
        self.assertIn("belongs in the rule table", out)

    def test_a_comment_citing_an_issue_number_fails_with_its_line(self):
        files = dict(self.GOOD)
        files["base/log.c"] = '#include "base/log.h"\n\n/* as issue 12 wanted */\nint x;\n'
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 1)
        self.assertIn('base/log.c:3: a comment cites "issue 12"', out)
        files["base/log.c"] = '#include "base/log.h"\n/* pi\'s RpcClient (see its tracker) */\n'
        rc, out = run(self.tree(files))
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    unittest.main()

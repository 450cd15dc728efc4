"""make install / make uninstall into a temporary PREFIX, and a program built
against the installed library through its pkg-config file.

The build that is installed is the one under test: build/ normally,
build/san (SANITIZE=1) when RETRYD points there; the sanitized program is then
compiled with the same sanitizers.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness

HELLO_C = r"""
#include <stdio.h>
#include <retryd/client.h>

int main(void)
{
	static const char *const args[] = { "--no-session", NULL };
	struct retryd_client_options o = { .args = args };
	struct retryd_run_result r;
	struct retryd_client *c;
	uv_loop_t loop;
	int rc;

	uv_loop_init(&loop);
	c = retryd_client_new(&loop, &o);
	if (c == NULL || retryd_client_start(c) != 0) {
		fprintf(stderr, "start: %s\n", c ? retryd_client_last_error(c) : "no memory");
		return 1;
	}
	rc = retryd_client_prompt_and_wait(c, "hello from an installed library", NULL, 20000, &r);
	printf("%d %s %s\n", rc, r.answered ? "answered" : "failed", r.text ? r.text : "(null)");
	retryd_run_result_release(&r);
	retryd_client_close(c, NULL, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	return uv_loop_close(&loop) == 0 && rc == 0 ? 0 : 1;
}
"""

INSTALLED = [
    "bin/retryd", "bin/retryctl",
    "lib/libretryd-client.a", "lib/libretryd-client.so", "lib/libretryd-client.so.0",
    "lib/libretryd-client.so.0.1.0", "lib/pkgconfig/retryd-client.pc",
    "include/retryd/client.h", "include/retryd/protocol.h",
    "share/man/man1/retryd.1", "share/man/man1/retryctl.1", "share/retryd/protocol.md",
]


class InstallTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="retryd-install-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.prefix = os.path.join(self.tmp, "prefix")
        self.san = harness.is_sanitized_build()
        env = dict(os.environ)
        for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "RETRYD", "RETRYD_LOG"):
            env.pop(k, None)
        env.update(HOME=self.tmp, XDG_CONFIG_HOME=os.path.join(self.tmp, "config"),
                   XDG_STATE_HOME=os.path.join(self.tmp, "state"),
                   **harness.runtime_env(self.tmp))
        self.env = env

    def make(self, target):
        args = ["make", "--no-print-directory", "-C", harness.REPO_ROOT, target,
                "PREFIX=" + self.prefix]
        if self.san:
            args.append("SANITIZE=1")
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env,
                           timeout=harness.scaled(300))
        self.assertEqual(p.returncode, 0, p.stdout.decode("utf-8", "replace"))

    def run_ok(self, argv, env, timeout=30):
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           cwd=self.tmp, timeout=harness.scaled(timeout))
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        self.assertEqual(harness.sanitizer_report(err), "", err)
        self.assertEqual(p.returncode, 0, "%s:\n%s%s" % (argv, out, err))
        return out

    def test_install_build_against_pkg_config_run_and_uninstall(self):
        self.make("install")
        schemas = sorted(f for f in os.listdir(os.path.join(harness.REPO_ROOT, "protocol", "schemas"))
                         if f.endswith(".json"))
        self.assertTrue(schemas)
        for rel in INSTALLED + ["share/retryd/schemas/" + s for s in schemas]:
            self.assertTrue(os.path.lexists(os.path.join(self.prefix, rel)), rel)
        so = os.path.join(self.prefix, "lib", "libretryd-client.so")
        self.assertEqual(os.readlink(so), "libretryd-client.so.0.1.0")
        if shutil.which("readelf"):
            dyn = subprocess.run(["readelf", "-d", so], stdout=subprocess.PIPE).stdout.decode()
            self.assertIn("[libretryd-client.so.0]", dyn)
            # retryctl finds a library beside it; the daemon links none of ours.
            dyn = subprocess.run(["readelf", "-d", os.path.join(self.prefix, "bin", "retryctl")],
                                 stdout=subprocess.PIPE).stdout.decode()
            self.assertIn("$ORIGIN/../lib", dyn)
            dyn = subprocess.run(["readelf", "-d", os.path.join(self.prefix, "bin", "retryd")],
                                 stdout=subprocess.PIPE).stdout.decode()
            self.assertNotIn("libretryd-client", dyn)
        # The protocol reference is where the man page says.
        with open(os.path.join(self.prefix, "share", "retryd", "protocol.md")) as f:
            self.assertIn("retryd", f.read(200))
        with open(os.path.join(self.prefix, "share", "man", "man1", "retryd.1")) as f:
            self.assertIn("share/retryd/protocol.md", f.read())

        # A program compiled with nothing but the installed .pc file.
        # ... and run with no LD_LIBRARY_PATH: the .pc file's rpath finds
        # the library in any PREFIX.
        env = dict(self.env, PKG_CONFIG_PATH=os.path.join(self.prefix, "lib", "pkgconfig"),
                   PATH=os.path.join(self.prefix, "bin") + ":/usr/bin:/bin")
        env.pop("LD_LIBRARY_PATH", None)
        flags = self.run_ok(["pkg-config", "--cflags", "--libs", "retryd-client"], env).split()
        self.assertIn("-lretryd-client", flags)
        src = os.path.join(self.tmp, "hello.c")
        with open(src, "w") as f:
            f.write(HELLO_C)
        exe = os.path.join(self.tmp, "hello")
        san = ["-fsanitize=address,undefined"] if self.san else []
        # The .pc file's flags alone make strict C11 build (uv.h needs POSIX).
        self.run_ok(["cc", "-std=c11", "-Wall", "-Werror"] + san +
                    [src, "-o", exe] + flags, env, timeout=120)
        if shutil.which("ldd"):
            libs = self.run_ok(["ldd", exe], env)
            self.assertIn(os.path.join(self.prefix, "lib", "libretryd-client.so.0"), libs)
        # retryd is found on PATH (the installed one).
        out = self.run_ok([exe], env)
        self.assertEqual(out, "0 answered hello from an installed library\n")

        # The C programs of README.md and docs/c-client.md, as written: they
        # answer, and without a retryd to start they say why and exit 1.
        for doc, want in (("README.md", "hi (retries: 0)\n"),
                          (os.path.join("docs", "c-client.md"), "hello (retries: 1)\n")):
            with self.subTest(doc=doc):
                with open(os.path.join(harness.REPO_ROOT, doc), encoding="utf-8") as f:
                    code = re.search(r"```c\n(.*?)```", f.read(), re.S).group(1)
                src = os.path.join(self.tmp, "doc.c")
                with open(src, "w") as f:
                    f.write(code)
                # Not beside the runtime dir's "retryd/": the client looks
                # for the daemon next to the program first.
                os.makedirs(os.path.join(self.tmp, "docbin"), exist_ok=True)
                prog = os.path.join(self.tmp, "docbin", "doc")
                self.run_ok(["cc", "-std=c11", "-Wall", "-Werror"] + san + [src, "-o", prog] + flags,
                            env, timeout=120)
                self.assertEqual(self.run_ok([prog], env), want)
                p = subprocess.run([prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=dict(env, PATH="/nonexistent"), cwd=self.tmp,
                                   timeout=harness.scaled(30))
                err = p.stderr.decode("utf-8", "replace")
                self.assertEqual(p.returncode, 1, err)
                self.assertIn("retryd did not start: ", err)
                self.assertGreater(len(err.strip()), len("retryd did not start: "), err)

        # The installed retryctl finds the retryd installed beside it.
        out = self.run_ok([os.path.join(self.prefix, "bin", "retryctl"), "--sim-plan",
                           '[{"text":"installed"}]', "q"], dict(env, PATH="/usr/bin:/bin"))
        self.assertEqual(out, "installed\n")
        if shutil.which("man"):
            out = self.run_ok(["man", "-M", os.path.join(self.prefix, "share", "man"), "-w",
                               "retryctl"], env)
            self.assertTrue(out.strip().endswith("man1/retryctl.1"), out)

        self.make("uninstall")
        left = []
        for root, dirs, files in os.walk(self.prefix):
            left += [os.path.join(root, f) for f in files]
        self.assertEqual(left, [], "uninstall left files behind")
        for d in ("include/retryd", "share/retryd"):
            self.assertFalse(os.path.exists(os.path.join(self.prefix, d)), d)

    @unittest.skipUnless(shutil.which("node"), "node is not installed")
    def test_installed_js_launcher_runs_the_installed_retryd_in_rpc_mode(self):
        """pi's RpcClient runs `node <cliPath> --mode rpc`: the installed
        package's launcher must find the retryd installed beside it, with no
        RETRYD and no PATH to help, and so must the symlink on PATH."""
        self.make("install")
        pkg = os.path.join(self.prefix, "lib", "node_modules", "retryd")
        for rel in ("package.json", "index.mjs", "index.d.ts", "README.md", "bin/retryd-rpc.mjs"):
            self.assertTrue(os.path.isfile(os.path.join(pkg, rel)), rel)
        launcher = os.path.join(pkg, "bin", "retryd-rpc.mjs")
        link = os.path.join(self.prefix, "bin", "retryd-rpc")
        self.assertEqual(os.path.realpath(link), os.path.realpath(launcher))
        node = shutil.which("node")
        # PATH holds node (for the symlink's #! line) and no retryd.
        nodebin = os.path.join(self.tmp, "nodebin")
        os.mkdir(nodebin)
        os.symlink(node, os.path.join(nodebin, "node"))
        env = dict(self.env, PATH=nodebin)
        for argv in ([node, launcher, "--mode", "rpc", "--no-session"],
                     [link, "--mode", "rpc", "--no-session"]):
            p = subprocess.run(argv, input=b'{"id":"s1","type":"get_state"}\n',
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                               cwd=self.tmp, timeout=harness.scaled(30))
            err = p.stderr.decode("utf-8", "replace")
            self.assertEqual(harness.sanitizer_report(err), "", err)
            self.assertEqual(p.returncode, 0, "%s: %s" % (argv, err))
            lines = [json.loads(l) for l in p.stdout.decode("utf-8").splitlines()]
            self.assertEqual(lines[0], {"type": "ready"})
            self.assertEqual((lines[1]["id"], lines[1]["command"], lines[1]["success"]),
                             ("s1", "get_state", True))
        self.make("uninstall")
        self.assertFalse(os.path.lexists(link))
        self.assertFalse(os.path.exists(pkg))

    @unittest.skipUnless(shutil.which("node") and shutil.which("npm"), "node or npm is not installed")
    def test_import_retryd_works_after_install_and_the_one_documented_npm_step(self):
        """README and docs/install.md: after `make install`, one
        `npm install $PREFIX/lib/node_modules/retryd` in a project (a
        symlink, offline) makes `import { RetrydClient } from "retryd"` work,
        and the installed package finds the retryd installed beside it."""
        self.make("install")
        project = os.path.join(self.tmp, "project")
        os.mkdir(project)
        env = dict(self.env, PATH="/usr/bin:/bin", npm_config_cache=os.path.join(self.tmp, "npm"))
        p = subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund",
                            os.path.join(self.prefix, "lib", "node_modules", "retryd")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=project,
                           timeout=harness.scaled(120))
        self.assertEqual(p.returncode, 0, p.stdout.decode("utf-8", "replace"))
        code = ('import { RetrydClient } from "retryd";\n'
                'const c = new RetrydClient({ args: ["--no-session", "--set", "retry.baseDelayMs=10",'
                ' "--sim-plan", \'[{"error":"503 Service Unavailable"},{"text":"from js"}]\'] });\n'
                'await c.start();\n'
                'const run = await c.promptAndWait("hi", { timeoutMs: 30000 });\n'
                'console.log(run.success, run.text, run.retries);\n'
                'await c.stop();\n')
        with open(os.path.join(project, "t.mjs"), "w") as f:
            f.write(code)
        out = subprocess.run(["node", "t.mjs"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, cwd=project, timeout=harness.scaled(60))
        self.assertEqual(out.returncode, 0, out.stderr.decode("utf-8", "replace"))
        self.assertEqual(out.stdout.decode(), "true from js 1\n")
        self.make("uninstall")


if __name__ == "__main__":
    unittest.main()

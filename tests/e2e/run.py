#!/usr/bin/env python3
"""Runs the end-to-end suite: every tests/e2e/test_*.py, with unittest.

    RETRYD=build/retryd python3 tests/e2e/run.py [-q] [-j N] [--dir DIR] [NAME...]

RETRYD is the binary (default build/retryd, relative to the repo root).
NAME filters tests: a module (test_retry), a class or a method id
(test_retry.RetryChainTests.test_x), or any substring of a test id.
-j N runs the modules in N parallel processes (default 1). --dir DIR runs
the test_*.py of another folder with the same harness (tests/real_clis).
The last line printed is exactly "N passed, N failed" (", N skipped" when
any were skipped); the exit status is 1 when anything failed.
"""
import argparse
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402


class CountingResult(unittest.TextTestResult):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.passed = 0
        self.durations = []
        self._t0 = None

    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        self.durations.append((time.monotonic() - self._t0, test.id()))

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.passed += 1


def iter_tests(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from iter_tests(t)
        else:
            yield t


TEST_DIR = HERE


def load(names):
    loader = unittest.TestLoader()
    suite = loader.discover(TEST_DIR, pattern="test_*.py", top_level_dir=TEST_DIR)
    tests = list(iter_tests(suite))
    if names:
        tests = [t for t in tests if any(n in t.id() for n in names)]
    return tests


def summary(passed, failed, skipped):
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    return line


def run_here(names, verbosity, module=None):
    tests = load(names)
    if module:
        tests = [t for t in tests if t.id().split(".")[0] == module]
    # Import errors show up as failing _FailedTest cases: they count as failures.
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=verbosity,
                                     resultclass=CountingResult)
    result = runner.run(unittest.TestSuite(tests))
    if verbosity > 1 and result.durations:
        print("slowest:")
        for secs, name in sorted(result.durations, reverse=True)[:5]:
            print("  %6.2fs  %s" % (secs, name))
    # A test with several failing subtests counts once.
    bad = {getattr(t, "test_case", t).id() for t, _ in result.failures + result.errors}
    bad |= {t.id() for t in result.unexpectedSuccesses}
    return result.passed, len(bad), len(result.skipped)


def run_parallel(names, jobs, verbosity):
    """One child process per module, at most `jobs` at once; output in module order."""
    modules = sorted({t.id().split(".")[0] for t in load(names)})
    passed = failed = skipped = 0
    pending = list(modules)
    started = {}
    order = list(modules)
    while pending or started:
        while pending and len(started) < jobs:
            mod = pending.pop(0)
            args = [sys.executable, os.path.abspath(__file__), "-j", "1", "--dir", TEST_DIR,
                    "--module", mod,
                    "-v" if verbosity > 1 else "-q"] + list(names)
            started[mod] = subprocess.Popen(args, stdout=subprocess.PIPE,
                                            stderr=subprocess.STDOUT)
        mod = next(m for m in order if m in started)
        p = started.pop(mod)
        order.remove(mod)
        text = p.communicate()[0].decode("utf-8", "replace")
        lines = text.rstrip("\n").split("\n")
        last = lines[-1] if lines else ""
        sys.stdout.write("\n".join(lines[:-1]) + "\n")
        try:
            counts = {}
            for part in last.split(", "):
                n, what = part.split()
                counts[what] = int(n)
            passed += counts["passed"]
            failed += counts["failed"]
            skipped += counts.get("skipped", 0)
        except (ValueError, KeyError):
            sys.stdout.write("%s: runner crashed: %s\n" % (mod, last))
            failed += 1
    return passed, failed, skipped


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("-j", "--jobs", type=int, default=int(os.environ.get("E2E_JOBS", "1")))
    ap.add_argument("-q", "--quiet", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--module", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help="the folder of the test_*.py files (default: tests/e2e)")
    opts = ap.parse_args()
    if opts.dir:
        global TEST_DIR
        TEST_DIR = os.path.abspath(opts.dir)
        sys.path.insert(0, TEST_DIR)
    verbosity = 1 if opts.quiet else 2

    binary = harness.binary_path()
    start = time.monotonic()
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print("e2e: no executable at %s (build it, or set RETRYD)" % binary)
        print(summary(0, 1, 0))
        return 1
    if not opts.module:
        print("e2e: testing %s" % binary)
    sys.stdout.flush()
    if opts.jobs > 1:
        passed, failed, skipped = run_parallel(opts.names, opts.jobs, verbosity)
        print("e2e: %.1fs" % (time.monotonic() - start))
    else:
        passed, failed, skipped = run_here(opts.names, verbosity, opts.module)
    print(summary(passed, failed, skipped))
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""The C client library against the real daemon (and a scripted fake one).

Each scenario is a function of tests/e2e/client_probe.c, built by make as
client_probe next to the retryd under test; the probe makes its own checks
and prints "ok <scenario>". Here each scenario runs bounded in time, in a
private HOME, and its stderr is checked for sanitizer reports.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

import harness

FAKE = os.path.join(harness.REPO_ROOT, "tests", "fixtures", "fake_retryd.py")


def probe_path():
    return os.path.join(os.path.dirname(harness.binary_path()), "client_probe")


class ClientLibraryTests(unittest.TestCase):
    def setUp(self):
        if not os.access(probe_path(), os.X_OK):
            self.fail("no client_probe at %s (make builds it with `make e2e`)" % probe_path())
        self.tmp = tempfile.mkdtemp(prefix="retryd-client-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def probe(self, scenario, timeout=20.0):
        env = dict(os.environ, RETRYD=harness.binary_path(), FAKE_RETRYD=FAKE,
                   HOME=self.tmp, XDG_CONFIG_HOME=os.path.join(self.tmp, "config"),
                   XDG_STATE_HOME=os.path.join(self.tmp, "state"),
                   **harness.runtime_env(self.tmp))
        env.pop("RETRYD_LOG", None)
        try:
            p = subprocess.run([probe_path(), scenario], env=env, cwd=harness.REPO_ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=harness.scaled(timeout))
        except subprocess.TimeoutExpired as e:
            self.fail("client_probe %s did not finish in %.0f s; stderr:\n%s"
                      % (scenario, harness.scaled(timeout),
                         (e.stderr or b"").decode("utf-8", "replace")))
        out = p.stdout.decode("utf-8", "replace")
        err = p.stderr.decode("utf-8", "replace")
        report = harness.sanitizer_report(err)
        self.assertEqual(report, "", "sanitizer report:\n" + err)
        self.assertEqual(p.returncode, 0, "client_probe %s failed:\n%s%s" % (scenario, out, err))
        self.assertIn("ok %s" % scenario, out)

    def test_ids_are_generated_kept_and_matched_and_duplicates_refused(self):
        self.probe("ids")

    def test_out_of_order_responses_reach_their_own_commands(self):
        self.probe("out_of_order")

    def test_daemon_killed_fails_pending_commands_and_reports_the_signal(self):
        self.probe("crash")

    def test_daemon_exit_fails_pending_commands_with_its_status(self):
        self.probe("crash_exit")

    def test_multi_megabyte_answer_arrives_whole(self):
        self.probe("large", timeout=60.0)

    def test_prompt_and_wait_returns_after_the_whole_retry_chain(self):
        self.probe("wait_chain")

    def test_prompt_and_wait_reports_the_final_error_and_retries(self):
        self.probe("wait_fail")

    def test_prompt_and_wait_refused_prompt_and_per_prompt_retry_options(self):
        self.probe("wait_refused")

    def test_abort_retry_during_backoff_ends_the_wait_as_cancelled(self):
        self.probe("abort_retry")

    def test_daemon_refusing_its_command_line_is_a_failed_start(self):
        self.probe("ready_fail")

    def test_no_ready_line_in_time_is_reported_and_the_daemon_stopped(self):
        self.probe("ready_timeout")

    def test_daemon_not_found_is_a_clear_start_error(self):
        self.probe("not_found")

    def test_lines_over_the_limit_are_discarded_and_reported(self):
        self.probe("line_limit")

    def test_request_timeout_fails_an_unanswered_command(self):
        self.probe("request_timeout")

    def test_close_cancels_pending_commands_and_stops_the_daemon(self):
        self.probe("close_pending")

    def test_end_input_lets_the_daemon_exit_cleanly(self):
        self.probe("end_input")

    def test_environment_entries_reach_the_daemon(self):
        self.probe("env")

    def test_every_probe_scenario_has_a_test(self):
        names = subprocess.run([probe_path(), "--list"], stdout=subprocess.PIPE,
                               timeout=10).stdout.decode().split()
        src = open(__file__).read()
        for n in names:
            self.assertIn('self.probe("%s"' % n, src)


if __name__ == "__main__":
    unittest.main()

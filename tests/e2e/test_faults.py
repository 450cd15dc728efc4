"""Fault injection through the real binary.

A provider that crashes mid-stream, never ends or prints garbage; a reader
that closes stdout, or stops reading for 10 s in the middle of a 100 MB
answer; SIGTERM and stdin EOF at each phase of the lifecycle; 10,000 prompts
in one daemon; an unwritable settings file or session directory; 1,000
commands in one write. Every test checks the lifecycle contract on what came
out (one agent_end per run, every chain that started closed by exactly one
auto_retry_end) and that the daemon either keeps serving or exits 0 with
every libuv handle closed (the harness fails any test whose daemon logs
"handles still open at exit", and any sanitizer or valgrind report).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import harness
from harness import (DaemonTestCase, deltas, is_response, is_sanitized_build, is_type,
                     is_valgrind, role_of, scaled, signature, text_of, timing_sensitive, types)
from harness import strip_settled

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures"))
from fake_llm_server import FakeServer  # noqa: E402

SERVER_SCRIPT = os.path.join(os.path.dirname(HERE), "fixtures", "fake_llm_server.py")
APIS = ("openai-completions", "anthropic-messages")
KEY_ENV = "RETRYD_E2E_KEY"
MIB = 1024 * 1024
# SIGTERM must end the process within ~1 s; ASan's exit-time leak scan and
# valgrind's leak check add to that.
SIGTERM_BOUND = scaled(1.0) if is_valgrind() else (2.0 if is_sanitized_build() else 1.0)


def assistant_ends(msgs):
    return [m["message"] for m in msgs
            if m.get("type") == "message_end" and role_of(m) == "assistant"]


def retry_ends(msgs):
    return [(m["success"], m["attempt"], m.get("finalError"))
            for m in msgs if m.get("type") == "auto_retry_end"]


def piece(size):
    """The content of one fake-server chunkBytes chunk."""
    pattern = "abcdefghijklmnopqrstuvwxyz0123456789"
    return (pattern * (size // len(pattern) + 1))[:size]


class FaultCase(DaemonTestCase):
    def assertContract(self, msgs, runs=None):
        """The lifecycle contract on a stream of events: agent_start and
        agent_end alternate; a chain that emitted auto_retry_start is closed
        by exactly one auto_retry_end before agent_end (and only such a chain
        ends with success); nothing of a run outside agent_start..agent_end."""
        in_run = chain_open = False
        starts = ends = 0
        for i, m in enumerate(msgs):
            t = m.get("type")
            ok = True
            if t == "agent_start":
                ok = not in_run
                in_run, starts = True, starts + 1
            elif t == "agent_end":
                ok = in_run and not chain_open
                in_run, ends = False, ends + 1
            elif t == "auto_retry_start":
                ok = in_run
                chain_open = True
            elif t == "auto_retry_end":
                ok = in_run and (chain_open or m["success"] is False)
                chain_open = False
            elif t in ("turn_start", "turn_end", "message_start", "message_update",
                       "message_end"):
                ok = in_run
            if not ok:
                self.fail("lifecycle contract broken at event #%d %s: %s"
                          % (i, t, signature(msgs)[max(0, i - 12):i + 3]))
        self.assertFalse(in_run, "a run was left open: %s" % signature(msgs)[-8:])
        if runs is not None:
            self.assertEqual((starts, ends), (runs, runs))

    def server(self, plan):
        srv = FakeServer(plan, max_seconds=300).start()
        self.addCleanup(srv.stop)
        return srv

    def http_daemon(self, api, base_url, sets=None, args=()):
        cfg = {"api": api, "baseUrl": base_url, "apiKeyEnv": KEY_ENV, "models": ["m1"]}
        all_sets = {"retry.baseDelayMs": 20}
        all_sets.update(sets or {})
        return self.spawn(args=["--provider", "fake", "--no-session"] + list(args),
                          settings={"providers": {"fake": cfg}}, sets=all_sets,
                          env={KEY_ENV: "sk-faults-0123456789abcdef0123456789"})


# ---------------------------------------------------------------------------
# Providers that crash, hang, or print garbage.

class ProviderFaultTests(FaultCase):
    WORDS = "one two three four five six seven eight"

    def test_connection_dropped_mid_stream_is_retried_and_the_answer_is_kept_whole_once(self):
        for api in APIS:
            for mode in ("eof", "close", "reset"):
                with self.subTest(api=api, dropMode=mode):
                    srv = self.server([{"text": self.WORDS, "dropAfterChunks": 3, "dropMode": mode},
                                       {"text": self.WORDS}])
                    d = self.http_daemon(api, srv.url + "/v1")
                    msgs = self.run_prompt(d, "q")
                    self.assertContract(msgs, runs=1)
                    failed, final = assistant_ends(msgs)
                    self.assertEqual(failed["stopReason"], "error")
                    self.assertTrue(failed["errorMessage"].startswith("connection error: "),
                                    failed["errorMessage"])
                    if mode == "reset":
                        # An RST may discard what the kernel had not yet handed over.
                        self.assertTrue("one two three".startswith(text_of(failed)), failed)
                    else:
                        self.assertEqual(text_of(failed), "one two three")
                    self.assertEqual(text_of(final), self.WORDS)
                    self.assertEqual(retry_ends(msgs), [(True, 1, None)])
                    # The context holds the answer once, without the cut attempt.
                    got = d.request({"type": "get_messages"})["data"]["messages"]
                    self.assertEqual([(m["role"], text_of(m)) for m in got],
                                     [("user", "q"), ("assistant", self.WORDS)])
                    d.finish()

    def test_provider_process_killed_mid_stream_then_back_on_the_same_port(self):
        """A real crash: the server process is SIGKILLed in the middle of an
        answer. The attempt fails, the retries find nobody listening, the
        chain gives up; once the server is back the next prompt works."""
        for api in APIS:
            with self.subTest(api=api):
                tmp = tempfile.mkdtemp(prefix="retryd-faults-")
                self.addCleanup(lambda t=tmp: subprocess.run(["rm", "-rf", t]))

                def start_server(plan, port=0):
                    port_file = os.path.join(tmp, "port")
                    if os.path.exists(port_file):
                        os.unlink(port_file)
                    p = subprocess.Popen([sys.executable, SERVER_SCRIPT, "--plan", json.dumps(plan),
                                          "--port", str(port), "--port-file", port_file,
                                          "--max-seconds", "120"],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
                    self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
                    deadline = time.monotonic() + 10
                    while time.monotonic() < deadline:
                        try:
                            with open(port_file) as f:
                                text = f.read().strip()
                            if text:
                                return p, int(text)
                        except OSError:
                            pass
                        time.sleep(0.02)
                    self.fail("the fake server did not start")

                srv, port = start_server([{"text": self.WORDS, "hangAfterChunks": 2}])
                d = self.http_daemon(api, "http://127.0.0.1:%d/v1" % port,
                                     sets={"retry.maxRetries": 2})
                d.send({"type": "prompt", "message": "q"})
                d.wait_for(lambda m: len(deltas([m])) == 1 and m["assistantMessageEvent"]["delta"] == " two")
                srv.kill()
                srv.wait()
                msgs = d.collect_until(is_type("agent_end"), timeout=10)
                self.assertContract([{"type": "agent_start"}] + msgs)
                ends = assistant_ends(msgs)
                self.assertEqual([m["stopReason"] for m in ends], ["error"] * 3)
                self.assertEqual(text_of(ends[0]), "one two")
                self.assertTrue(all(m["errorMessage"].startswith("connection error: ") for m in ends),
                                [m["errorMessage"] for m in ends])
                self.assertEqual([s["attempt"] for s in msgs if s["type"] == "auto_retry_start"], [1, 2])
                (success, attempt, final), = retry_ends(msgs)
                self.assertEqual((success, attempt), (False, 2))
                self.assertIn("connection error", final)
                # The provider comes back on the same port: business as usual.
                start_server([{"text": "back again"}], port=port)
                msgs = self.run_prompt(d, "again")
                self.assertContract(msgs, runs=1)
                self.assertEqual(text_of(assistant_ends(msgs)[-1]), "back again")
                d.finish()

    def test_sim_attempt_that_never_ends_is_a_stream_stall_and_retried(self):
        d = self.spawn(plan=[{"hang": True}, {"hang": True}, {"text": "finally"}],
                       sets={"retry.idleTimeoutMs": 100, "retry.baseDelayMs": 10},
                       args=["--no-session"])
        msgs = self.run_prompt(d, "q")
        self.assertContract(msgs, runs=1)
        ends = assistant_ends(msgs)
        self.assertEqual([m.get("errorMessage") for m in ends],
                         ["stream stall: no data for 100 ms"] * 2 + [None])
        self.assertEqual(text_of(ends[-1]), "finally")
        self.assertEqual(retry_ends(msgs), [(True, 2, None)])
        d.finish()

    @timing_sensitive("a 200 ms stall timeout races memcheck's slow start of a transfer")
    def test_http_answer_that_never_ends_is_a_stream_stall_and_retried(self):
        for api in APIS:
            with self.subTest(api=api):
                srv = self.server([{"text": self.WORDS, "hangAfterChunks": 2}, {"hang": True},
                                   {"text": self.WORDS}])
                d = self.http_daemon(api, srv.url + "/v1", sets={"retry.idleTimeoutMs": 200})
                msgs = self.run_prompt(d, "q")
                self.assertContract(msgs, runs=1)
                ends = assistant_ends(msgs)
                self.assertEqual([m["stopReason"] for m in ends], ["error", "error", "stop"])
                self.assertEqual(text_of(ends[-1]), self.WORDS)
                self.assertEqual(retry_ends(msgs), [(True, 2, None)])
                # Both hung transfers were closed by the daemon.
                outcomes = [r["outcome"] for r in srv.wait_requests(3, timeout=scaled(5))]
                self.assertEqual(outcomes[:2], ["client-closed", "client-closed"])
                d.finish()

    def test_garbage_from_the_provider_fails_clearly_and_the_daemon_keeps_serving(self):
        garbage = "\u00ff\u00fe\x01\x02 {{{ not json ]]] \u2028 \\ud800"
        cases = [
            # a data line that is not JSON, in the middle of the stream
            ({"text": "a b c", "malformed": garbage, "malformedAfterChunks": 1},
             "malformed stream: "),
            # binary-ish junk as an error body
            ({"status": 503, "body": garbage}, "503 "),
            # an in-stream error whose fields are junk
            ({"text": "a b", "streamError": {"type": garbage, "message": garbage}}, ""),
            # a 200 that is not an event stream at all
            ({"status": 200, "body": {"not": "a stream"}}, "connection error: "),
        ]
        for api in APIS:
            for step, prefix in cases:
                with self.subTest(api=api, step=step):
                    srv = self.server([step, {"text": "after the garbage"}])
                    d = self.http_daemon(api, srv.url + "/v1", sets={"retry.maxRetries": 0})
                    msgs = self.run_prompt(d, "q")
                    self.assertContract(msgs, runs=1)
                    failed = assistant_ends(msgs)[0]
                    self.assertEqual(failed["stopReason"], "error")
                    self.assertTrue(failed["errorMessage"].startswith(prefix), failed["errorMessage"])
                    self.assertLessEqual(len(failed["errorMessage"].encode()), 512)
                    for ch in failed["errorMessage"]:
                        self.assertTrue(ch >= " " and ch != "\x7f", repr(failed["errorMessage"]))
                    msgs = self.run_prompt(d, "again")
                    self.assertEqual(text_of(assistant_ends(msgs)[-1]), "after the garbage")
                    d.finish()

    def test_control_characters_and_unicode_in_the_answer_are_relayed_exactly(self):
        text = "\x00\x07\x1b[31mred\x1b[0m \u2028\u2029 \"quoted\" back\\slash \U0001F642 \ufeff"
        for api in APIS:
            with self.subTest(api=api):
                srv = self.server([{"text": text, "chunks": 7}])
                d = self.http_daemon(api, srv.url + "/v1")
                msgs = self.run_prompt(d, "q")
                self.assertEqual("".join(deltas(msgs)), text)
                self.assertEqual(text_of(assistant_ends(msgs)[0]), text)
                d.finish()


# ---------------------------------------------------------------------------
# The reader misbehaves.

class ReaderFaultTests(FaultCase):
    def test_stdout_closed_during_backoff_aborts_the_chain_and_exits_0(self):
        d = self.spawn(plan=[{"error": "503"}, {"text": "never seen"}],
                       sets={"retry.baseDelayMs": 300},
                       args=["--session", "{tmp}/s.jsonl"])
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_type("auto_retry_start"))
        d.close_stdout()
        t0 = time.monotonic()
        rc = d.wait_exit(timeout=5)  # stdin stays open: it must leave by itself
        self.assertEqual(rc, 0)
        # It notices at its next write, when the backoff ends.
        self.assertLess(d.exit_time - t0, scaled(0.3 + 1.0))
        d.check_no_sanitizer_report()
        with open(os.path.join(d.tmp, "s.jsonl")) as f:
            msgs = [json.loads(line)["message"] for line in f.read().splitlines()[1:]]
        # The user message and the failed attempt. The retry's first write
        # fails, but that is known only when the write completes: the sim's
        # answer may be done by then, or be aborted half-way.
        self.assertEqual([(m["role"], m.get("stopReason")) for m in msgs[:2]],
                         [("user", None), ("assistant", "error")])
        self.assertLessEqual(len(msgs), 3)
        self.assertIn([m.get("stopReason") for m in msgs[2:]], ([], ["aborted"], ["stop"]))

    def test_stdout_closed_during_an_http_stream_closes_the_connection_and_exits_0(self):
        srv = self.server([{"text": " ".join("w%d" % i for i in range(400)), "chunkDelayMs": 10}])
        d = self.http_daemon(APIS[0], srv.url + "/v1")
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(lambda m: m.get("type") == "message_update")
        d.close_stdout()
        rc = d.wait_exit(timeout=5)
        self.assertEqual(rc, 0)
        d.check_no_sanitizer_report()
        self.assertEqual(srv.wait_requests(1, timeout=scaled(3))[0]["outcome"], "client-closed")

    @timing_sensitive("a 100 MB answer and RSS limits mean nothing under memcheck")
    def test_reader_pausing_10s_in_a_100mb_answer_loses_nothing_and_memory_stays_bounded(self):
        """rpc.messageUpdates=delta, the fake server streams 100,000 chunks
        of 1,000 bytes (100 MB of text). Half-way the reader stops reading
        for 10 s. While it is paused the daemon must block: it may hold the
        answer's text so far (the message, which message_end must carry
        whole) plus at most the output high-water mark and one event, and
        nothing of the part not yet relayed. A daemon that kept reading the
        provider while nobody read its stdout would queue the other 50 MB.
        Under ASan the answer is 20 MB and the pause 4 s (ASan's allocator
        keeps freed memory in quarantine, so RSS limits are not checked)."""
        asan = is_sanitized_build()
        size = 1000
        n = 20000 if asan else 100000
        pause_s = 4.0 if asan else 10.0
        hwm = MIB
        srv = self.server([{"chunkBytes": size, "chunks": n}])
        d = self.http_daemon(APIS[0], srv.url + "/v1",
                             sets={"rpc.messageUpdates": "delta",
                                   "rpc.outputHighWaterBytes": hwm})
        d.request({"type": "get_state"})
        baseline = d.rss_kb() * 1024
        d.send({"type": "prompt", "message": "a hundred megabytes, please"})
        half = n // 2
        seen = [0]

        def count_half(m):
            if m.get("type") == "message_update" and \
                    m["assistantMessageEvent"]["type"] == "text_delta":
                seen[0] += 1
            return seen[0] >= half

        d.wait_for(count_half, timeout=120, what="half of the deltas")
        d.pause_reading()
        # What the daemon can have read from the provider by now: what we
        # saw, what fits in the pipe, its queue up to the high-water mark,
        # and the event that crossed it.
        text_bound = seen[0] * size + (64 * 1024 + hwm + 2 * size)
        blocked = False
        peak = 0
        t_end = time.monotonic() + pause_s
        while time.monotonic() < t_end:
            peak = max(peak, d.rss_kb() * 1024)
            if not blocked:
                blocked = d.wait_quiescent(timeout=0.5, quiet=0.3)
            else:
                time.sleep(0.05)
        peak = max(peak, d.rss_kb() * 1024)
        d.resume_reading()
        end = d.wait_for(is_type("agent_end"), timeout=300)
        self.assertTrue(blocked, "the daemon kept running while nobody read its stdout")
        got = deltas(d.seen())
        self.assertEqual(len(got), n, "deltas lost or duplicated")
        chunk = piece(size)
        bad = [i for i, g in enumerate(got) if g != chunk]
        self.assertEqual(bad, [], "deltas changed")
        final = end["messages"][-1]
        self.assertEqual((final["stopReason"], len(text_of(final))), ("stop", n * size))
        self.assertEqual(text_of(final), chunk * n)
        sys.stderr.write("\n  %d MB answer: RSS %.1f MiB before, peak %.1f MiB while paused with "
                         "%.1f MiB of the answer relayed\n"
                         % (n * size // 1000000, baseline / MIB, peak / MIB, seen[0] * size / MIB))
        if not asan:
            slack = 16 * MIB
            limit = baseline + text_bound + hwm + slack
            self.assertLess(peak, limit,
                            "RSS %.1f MiB while paused; limit %.1f MiB (baseline %.1f MiB + the "
                            "answer so far %.1f MiB + high-water mark + slack)"
                            % (peak / MIB, limit / MIB, baseline / MIB, text_bound / MIB))
        d.finish(timeout=60)


# ---------------------------------------------------------------------------
# SIGTERM and stdin EOF at each phase of the lifecycle.

LONG = " ".join("w%d" % i for i in range(60))


def assistant_start(m):
    return m.get("type") == "message_start" and role_of(m) == "assistant"


def nth_delta(k):
    count = [0]

    def pred(m):
        if m.get("type") == "message_update" and \
                m["assistantMessageEvent"]["type"] == "text_delta":
            count[0] += 1
        return count[0] >= k
    return pred


class PhaseCase(FaultCase):
    """Each phase: how to start the daemon and the prompt, when to strike,
    and what the chain looks like (opened: whether an auto_retry_start
    chain is open at that moment)."""

    PHASES = {
        # The prompt is accepted and its attempt started, but the provider
        # has not said a word (the sim waits 500 ms before its first byte).
        "before-first-attempt": dict(plan=[{"delayMs": 500, "text": "late answer"}],
                                     sets={}, cmds=[{"type": "prompt", "message": "q"}],
                                     at=lambda m: m.get("type") == "message_end",
                                     opened=False, answer="late answer"),
        # The second attempt of a chain is streaming.
        "mid-stream": dict(plan=[{"error": "503"}, {"text": LONG}],
                           sets={"sim.chunkDelayMs": 20, "retry.baseDelayMs": 10},
                           cmds=[{"type": "prompt", "message": "q"}], at=nth_delta(3),
                           opened=True, answer=LONG),
        "during-backoff": dict(plan=[{"error": "503"}, {"text": "retried"}],
                               sets={"retry.baseDelayMs": 400},
                               cmds=[{"type": "prompt", "message": "q"}],
                               at=is_type("auto_retry_start"), opened=True, answer="retried"),
        # The first prompt was answered; its follow-up failed and waits to retry.
        "during-follow-up": dict(plan=[{"text": "first"}, {"error": "503"}, {"text": "second"}],
                                 sets={"retry.baseDelayMs": 400},
                                 cmds=[{"type": "prompt", "message": "p1"},
                                       {"type": "follow_up", "message": "p2"}],
                                 at=is_type("auto_retry_start"), opened=True, answer="second"),
    }

    def start_phase(self, name):
        ph = self.PHASES[name]
        d = self.spawn(plan=ph["plan"], sets=ph["sets"], args=["--no-session"])
        # One write: a follow-up must be queued before the first answer ends.
        d.send("".join(json.dumps(c) + "\n" for c in ph["cmds"]))
        d.wait_for(ph["at"], timeout=10)
        return d, ph


class SigtermPhaseTests(PhaseCase):
    def test_sigterm_at_each_phase_closes_every_open_chain_once_and_exits_0(self):
        for name in self.PHASES:
            with self.subTest(phase=name):
                d, ph = self.start_phase(name)
                t0 = time.monotonic()
                d.signal(signal.SIGTERM)
                rc = d.wait_exit(timeout=5)
                self.assertEqual(rc, 0)
                self.assertLess(d.exit_time - t0, SIGTERM_BOUND)
                d.check_output_clean()
                msgs = d.seen()[1:]  # after ready
                self.assertContract(msgs, runs=1)
                ends = retry_ends(msgs)
                if ph["opened"]:
                    self.assertEqual(ends[-1], (False, 1, "Retry cancelled"))
                    self.assertEqual(len(ends), 1, ends)
                else:
                    self.assertEqual(ends, [])
                self.assertEqual(types(msgs)[-1], "agent_end")
                # The answer never completed.
                self.assertNotIn(ph["answer"], [text_of(m) for m in assistant_ends(msgs)])

    def test_sigterm_mid_http_stream_in_an_open_chain_closes_it_once(self):
        srv = self.server([{"status": 503}, {"text": LONG, "chunkDelayMs": 20}])
        d = self.http_daemon(APIS[1], srv.url + "/v1", sets={"retry.baseDelayMs": 10})
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(nth_delta(3), timeout=10)
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait_exit(timeout=5), 0)
        d.check_output_clean()
        msgs = d.seen()[1:]
        self.assertContract(msgs, runs=1)
        self.assertEqual(retry_ends(msgs), [(False, 1, "Retry cancelled")])
        self.assertEqual(assistant_ends(msgs)[-1]["stopReason"], "aborted")
        self.assertEqual(srv.wait_requests(2, timeout=scaled(3))[1]["outcome"], "client-closed")


class EofPhaseTests(PhaseCase):
    def test_stdin_eof_at_each_phase_finishes_the_chain_closes_it_once_and_exits_0(self):
        for name in self.PHASES:
            with self.subTest(phase=name):
                d, ph = self.start_phase(name)
                d.close_stdin()
                d.assert_clean_exit(timeout=10)
                msgs = d.seen()[1:]
                self.assertContract(msgs, runs=1)
                ends = retry_ends(msgs)
                self.assertEqual(ends, [(True, 1, None)] if ph["opened"] else [])
                self.assertEqual(types(msgs)[-1], "agent_end")
                self.assertEqual(text_of(assistant_ends(msgs)[-1]), ph["answer"])

    def test_stdin_eof_mid_http_stream_finishes_the_answer(self):
        srv = self.server([{"status": 503}, {"text": LONG, "chunkDelayMs": 5}])
        d = self.http_daemon(APIS[0], srv.url + "/v1", sets={"retry.baseDelayMs": 10})
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(nth_delta(3), timeout=10)
        d.close_stdin()
        d.assert_clean_exit(timeout=10)
        msgs = d.seen()[1:]
        self.assertContract(msgs, runs=1)
        self.assertEqual(retry_ends(msgs), [(True, 1, None)])
        self.assertEqual(text_of(assistant_ends(msgs)[-1]), LONG)


# ---------------------------------------------------------------------------
# Volume: many prompts, many commands at once.

class VolumeTests(FaultCase):
    GROUP = 10

    def _prompts(self, d, count, start, new_session_every=None):
        """Sends `count` prompt commands, GROUP to a write: the first of a
        group starts a run, the others queue behind it
        (streamingBehavior followUp), and the group's agent_end is awaited
        before the next. Each prompt gets its own turn and answer; grouping
        only saves the round trips (a ping-pong of single prompts costs the
        machine's wake-up latency, ~2 ms here, not the daemon's time).
        new_session comes at group boundaries every so often."""
        assert count % self.GROUP == 0 and (new_session_every or self.GROUP) % self.GROUP == 0
        for g in range(start, start + count, self.GROUP):
            cmds = []
            if new_session_every and g % new_session_every == 0:
                cmds.append({"type": "new_session"})
            for i in range(g, g + self.GROUP):
                c = {"type": "prompt", "message": "prompt number %d" % i}
                if i != g:
                    c["streamingBehavior"] = "followUp"
                cmds.append(c)
            d.send("".join(json.dumps(c) + "\n" for c in cmds))
            end = d.wait_for(is_type("agent_end"), timeout=10)
            self.assertEqual(len(end["messages"]), 2 * self.GROUP)
            d.forget_read()

    @timing_sensitive("10,000 prompts and RSS figures")
    def test_ten_thousand_prompts_rss_is_flat_apart_from_the_conversation(self):
        """10,000 prompts in one daemon. Phase 1: 8,000 with new_session
        every 250, so the conversation never exceeds 500 messages: RSS after
        8,000 is within 1.5 MiB of RSS after 1,000. Phase 2: 2,000 more in
        one conversation (4,000 messages): RSS grows with it, and
        new_session gives it back, to within 1.5 MiB of where phase 2
        began. (Phase 2 is the shorter one because every attempt walks the
        whole context, as a real provider serializes it: the sim counts its
        input tokens.) Under ASan (its quarantine keeps freed memory) only
        the prompts run, 2,000 of them, without RSS checks."""
        d = self.spawn(args=["--no-session"], sets={"rpc.messageUpdates": "delta"})
        if is_sanitized_build():
            self._prompts(d, 1000, 0, new_session_every=250)
            self._prompts(d, 1000, 1000)
            d.finish(timeout=30)
            return
        self._prompts(d, 1000, 0, new_session_every=250)
        rss_1k = d.rss_kb()
        self._prompts(d, 7000, 1000, new_session_every=250)
        rss_8k = d.rss_kb()
        d.request({"type": "new_session"})
        rss_before = d.rss_kb()
        self._prompts(d, 2000, 8000)
        self.assertEqual(d.request({"type": "get_state"})["data"]["messageCount"], 4000)
        rss_conversation = d.rss_kb()
        d.request({"type": "new_session"})
        rss_after = d.rss_kb()
        self.assertEqual(d.request({"type": "get_state"})["data"]["messageCount"], 0)
        report = ("RSS kB: after 1,000 prompts %d, after 8,000 %d; one conversation: before %d, "
                  "with 4,000 messages %d, after new_session %d"
                  % (rss_1k, rss_8k, rss_before, rss_conversation, rss_after))
        sys.stderr.write("\n  " + report + "\n")
        self.assertLess(rss_8k - rss_1k, 1536, report)
        self.assertGreater(rss_conversation - rss_before, 4096, report)  # it did grow
        self.assertLess(rss_after - rss_before, 1536, report)
        d.finish(timeout=10)

    def test_a_thousand_commands_in_one_write_are_answered_in_order(self):
        d = self.spawn(args=["--no-session"], plan=[{"text": "first answer"}])
        lines, expect = [], []
        lines.append({"id": "c0", "type": "prompt", "message": "p0"})
        expect.append(("c0", "prompt"))
        follow = ["p0"]
        for i in range(1, 1000):
            k = i % 6
            cid = "c%d" % i
            if k == 0:
                lines.append({"id": cid, "type": "follow_up", "message": "f%d" % i})
                follow.append("f%d" % i)
                expect.append((cid, "follow_up"))
            elif k == 1:
                lines.append({"id": cid, "type": "get_state"})
                expect.append((cid, "get_state"))
            elif k == 2:
                lines.append("not json {{{ %d" % i)
                expect.append((None, "parse"))
            elif k == 3:
                lines.append({"id": cid, "type": "no_such_command"})
                expect.append((cid, "no_such_command"))
            elif k == 4:
                lines.append({"id": cid, "type": "abort_retry"})
                expect.append((cid, "abort_retry"))
            else:
                lines.append({"id": cid, "type": "set_session_name", "name": "n%d" % i})
                expect.append((cid, "set_session_name"))
        data = "".join((json.dumps(x, separators=(",", ":")) if isinstance(x, dict) else x) + "\n"
                       for x in lines).encode()
        self.assertEqual(data.count(b"\n"), 1000)
        d.send(data)  # one write
        d.close_stdin()
        d.assert_clean_exit(timeout=30)
        msgs = d.seen()[1:]
        got = [(m.get("id"), m["command"]) for m in msgs if m.get("type") == "response"]
        self.assertEqual(got, expect)
        ok = {c: s for (c, _), s in zip(got, [m["success"] for m in msgs
                                                if m.get("type") == "response"])}
        self.assertFalse(ok["c3"])
        self.assertTrue(ok["c1"] and ok["c0"])
        self.assertContract(msgs)
        users = [text_of(m["message"]) for m in msgs
                 if m.get("type") == "message_end" and role_of(m) == "user"]
        self.assertEqual(users, follow, "follow-ups lost or reordered")


# ---------------------------------------------------------------------------
# Files that cannot be written.

class UnwritableFileTests(FaultCase):
    def _unwritable_settings(self):
        """A settings path that reads (as missing, or as a file) but cannot
        be written, and the daemon arguments or environment that choose it:
        a file in a read-only directory, or, for root, who may write
        anywhere, the default path under XDG_CONFIG_HOME=/proc/self (an
        explicit --settings must exist; the default path may be missing)."""
        if os.geteuid() == 0:
            return "/proc/self/retryd/settings.json", {"XDG_CONFIG_HOME": "/proc/self"}
        tmp = tempfile.mkdtemp(prefix="retryd-faults-ro-")
        path = os.path.join(tmp, "settings.json")
        with open(path, "w") as f:
            json.dump({"retry": {"maxRetries": 2}}, f)
        os.chmod(tmp, 0o555)
        self.addCleanup(lambda: (os.chmod(tmp, 0o755), subprocess.run(["rm", "-rf", tmp])))
        return path, None

    def test_unwritable_settings_file_warns_in_the_response_and_applies_in_memory(self):
        path, env = self._unwritable_settings()
        d = self.spawn(args=(["--settings", path] if env is None else []) + ["--no-session"],
                       env=env, plan=[{"error": "503 Service Unavailable"}, {"text": "ok"}])
        r = d.request({"type": "set_auto_retry", "enabled": False})
        self.assertTrue(r["success"], r)
        self.assertIs(r["data"]["persisted"], False)
        self.assertTrue(r["data"]["warning"].startswith("could not save settings to " + path),
                        r["data"]["warning"])
        r = d.request({"type": "set_retry_policy", "policy": {"baseDelayMs": 5}, "persist": True})
        self.assertTrue(r["success"], r)
        self.assertIs(r["data"]["persisted"], False)
        self.assertIn("could not save settings", r["data"]["warning"])
        self.assertIs(d.request({"type": "get_state"})["data"]["autoRetryEnabled"], False)
        # Applied all the same: the 503 is not retried; the daemon goes on.
        msgs = self.run_prompt(d, "q")
        self.assertNotIn("auto_retry_start", types(msgs))
        self.assertEqual(assistant_ends(msgs)[0]["stopReason"], "error")
        msgs = self.run_prompt(d, "again")
        self.assertEqual(text_of(assistant_ends(msgs)[0]), "ok")
        d.finish()

    def test_unwritable_session_directory_gives_one_notice_and_prompts_go_on(self):
        """The state directory is below a regular file (ENOTDIR, also for
        root); its name has a byte that is not UTF-8, which the notice shows
        as '?' rather than losing the notice."""
        for how in ("default-dir", "--session"):
            with self.subTest(how=how):
                tmp = tempfile.mkdtemp(prefix="retryd-faults-")
                self.addCleanup(lambda t=tmp: subprocess.run(["rm", "-rf", t]))
                blocker = os.path.join(tmp, "a-file")
                open(blocker, "w").close()
                bad = os.fsencode(blocker) + b"/state\xff"
                env = {}
                args = []
                if how == "default-dir":
                    env["XDG_STATE_HOME"] = os.fsdecode(bad)
                else:
                    args = ["--session", os.fsdecode(bad + b"/s.jsonl")]
                d = self.spawn(args=args, env=env, plan=[{"text": "one"}, {"text": "two"}])
                msgs = self.run_prompt(d, "q")
                notices = [m for m in msgs if m.get("type") == "notice"]
                self.assertEqual(len(notices), 1, notices)
                n = notices[0]
                self.assertEqual((n["level"], n["source"]), ("error", "session"))
                self.assertTrue(n["message"].startswith("cannot write session file " + blocker
                                                        + "/state?"), n["message"])
                self.assertIn("Not a directory", n["message"])
                self.assertEqual(text_of(assistant_ends(msgs)[0]), "one")
                msgs = self.run_prompt(d, "again")
                self.assertEqual([m for m in msgs if m.get("type") == "notice"], [])
                self.assertEqual(text_of(assistant_ends(msgs)[0]), "two")
                self.assertTrue(d.request({"type": "get_state"})["success"])
                d.finish()


# ---------------------------------------------------------------------------
# Started with stdin, stdout or stderr closed (`retryd <&-`, `>&-`, `2>&-`):
# /dev/null takes the closed stream's place. Before, libuv aborted on an fd
# <= 2 it did not expect.

STREAMS = {0: "stdin", 1: "stdout", 2: "stderr"}
COMBOS = [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]


def run_with_closed(argv, closed, stdin=b"", timeout=10, extra_env=None, rlimit_nofile=None):
    """Runs argv with the fds in `closed` closed in the child (the others
    piped). Returns (exit status, stdout bytes or None, stderr text or None)."""
    import resource

    def pre():
        if rlimit_nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (rlimit_nofile, rlimit_nofile))
        for fd in closed:
            os.close(fd)

    tmp = tempfile.mkdtemp(prefix="retryd-closed-")
    env = dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=os.path.join(tmp, "c"),
               XDG_STATE_HOME=os.path.join(tmp, "s"), **harness.runtime_env(tmp))
    env.pop("RETRYD_LOG", None)
    env.update(extra_env or {})
    try:
        p = subprocess.run(argv, input=None if 0 in closed else stdin,
                           stdin=subprocess.DEVNULL if 0 in closed else None,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp,
                           preexec_fn=pre, timeout=scaled(timeout))
    finally:
        subprocess.run(["rm", "-rf", tmp])
    out = None if 1 in closed else p.stdout
    err = None if 2 in closed else p.stderr.decode("utf-8", "replace")
    return p.returncode, out, err


class ClosedStdStreamTests(unittest.TestCase):
    maxDiff = None

    def argv(self, *extra):
        from harness import binary_path, valgrind_argv
        return (valgrind_argv() if is_valgrind() else []) + [binary_path(), "--no-session"] + list(extra)

    def lines(self, out):
        self.assertTrue(out.endswith(b"\n"), out[-200:])
        return [json.loads(line) for line in out.split(b"\n")[:-1]]

    def check_stderr(self, err):
        from harness import sanitizer_report
        if err is not None:
            self.assertEqual(sanitizer_report(err), "", err)

    def test_daemon_exits_0_with_stdin_or_stderr_closed_and_1_with_stdout_closed(self):
        stdin = (b'{"id":"s","type":"get_state"}\n'
                 b'{"id":"p","type":"prompt","message":"q"}\n')
        for closed in COMBOS:
            with self.subTest(closed=[STREAMS[fd] for fd in closed]):
                if is_valgrind() and 2 in closed:
                    self.skipTest("valgrind itself exits 127 with stderr closed")
                rc, out, err = run_with_closed(
                    self.argv("--sim-plan", '[{"error":"503"},{"text":"answered"}]',
                              "--set", "retry.baseDelayMs=1"), closed, stdin)
                self.check_stderr(err)
                if 1 in closed:
                    # Every answer goes to stdout: none to give is exit 1.
                    self.assertEqual(rc, 1, err)
                    if err is not None:
                        self.assertIn("retryd: stdout is closed", err)
                    continue
                self.assertEqual(rc, 0, err)
                if out is None:
                    continue
                msgs = self.lines(out)
                self.assertEqual(msgs[0], {"type": "ready"})
                if 0 in closed:
                    # A closed stdin reads as empty: ready, EOF, exit 0.
                    self.assertEqual(msgs, [{"type": "ready"}])
                    continue
                self.assertEqual([m["id"] for m in msgs if m.get("type") == "response"],
                                 ["s", "p"])
                msgs = strip_settled(msgs)
                self.assertEqual(msgs[-1]["type"], "agent_end")
                self.assertEqual(text_of(msgs[-1]["messages"][-1]), "answered")
                self.assertEqual(types(msgs).count("auto_retry_end"), 1)

    def test_daemon_with_stdout_closed_exits_1_and_writes_no_session_file(self):
        """A caller that closed stdout would read a run that never happened
        as a success: the daemon says so and does nothing."""
        tmp = tempfile.mkdtemp(prefix="retryd-closed-session-")
        self.addCleanup(subprocess.run, ["rm", "-rf", tmp])
        session = os.path.join(tmp, "s.jsonl")
        argv = [a for a in self.argv("--session", session, "--sim-plan", '[{"text":"kept"}]')
                if a != "--no-session"]
        rc, out, err = run_with_closed(argv, (1,), b'{"type":"prompt","message":"q"}\n')
        self.assertEqual(rc, 1, err)
        self.check_stderr(err)
        self.assertIn("retryd: stdout is closed", err)
        self.assertFalse(os.path.exists(session))

    @unittest.skipIf(is_valgrind() or is_sanitized_build(),
                     "valgrind and the ASan runtime need file descriptors themselves")
    def test_daemon_exits_1_with_a_message_when_no_fd_is_left_for_dev_null(self):
        # RLIMIT_NOFILE=1: fd 0 can be opened again, fd 1 cannot.
        rc, out, err = run_with_closed(self.argv(), (0, 1), rlimit_nofile=1)
        self.assertEqual(rc, 1, err)
        self.assertIn("retryd: cannot open /dev/null for a closed stdin, stdout or stderr", err)

    def test_retryctl_runs_and_exits_0_with_any_standard_stream_closed(self):
        from harness import binary_path
        ctl = os.path.join(os.path.dirname(binary_path()), "retryctl")
        for closed in COMBOS:
            for how in ("argument", "stdin"):
                with self.subTest(closed=[STREAMS[fd] for fd in closed], prompt=how):
                    args = [ctl, "--retryd", binary_path(), "--sim-plan", '[{"text":"hello"}]']
                    if how == "argument":
                        args.append("q")
                    rc, out, err = run_with_closed(args, closed, b"q\n")
                    self.assertEqual(rc, 0, err)
                    self.check_stderr(err)
                    if out is not None and (how == "argument" or 0 not in closed):
                        self.assertEqual(out, b"hello\n")


if __name__ == "__main__":
    unittest.main()

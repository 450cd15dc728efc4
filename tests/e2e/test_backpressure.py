"""A slow reader: nothing is lost, nothing piles up in memory.

By default every message_update carries the partial message twice (like pi),
so an N-word answer makes O(N^2) output: 4,500 words are ~125 MB of JSON,
which a daemon buffering instead of pausing would hold while the reader is
paused (far past 64 MB). With rpc.messageUpdates "delta" the events are
small, so the 200,000-word answer of the brief is ~20 MB of output; there
the check is RSS growth over the daemon's own baseline.
"""
import time

from harness import DaemonTestCase, timing_sensitive, deltas, is_sanitized_build, is_type

RSS_LIMIT_KB = 64 * 1024
RSS_GROWTH_LIMIT_KB = 16 * 1024


def is_delta(m):
    return (m.get("type") == "message_update"
            and m["assistantMessageEvent"]["type"] == "text_delta")


def paused_for_a_while(d, limit=15.0):
    """Stops reading until the daemon is blocked; returns (blocked, peak RSS kB)."""
    d.pause_reading()
    deadline = time.monotonic() + limit
    peak = 0
    blocked = False
    while time.monotonic() < deadline and not blocked:
        peak = max(peak, d.rss_kb() or 0)
        blocked = d.wait_quiescent(timeout=0.5)
    peak = max(peak, d.rss_kb() or 0)
    d.resume_reading()
    return blocked, peak


class SlowReaderTests(DaemonTestCase):
    def _stream_with_pauses(self, d, words, timeout):
        """Pauses at the first delta and half-way; checks every delta arrived in order."""
        n = len(words)
        d.send({"type": "prompt", "message": "long please"})
        d.wait_for(is_delta)
        first = paused_for_a_while(d)
        d.wait_for(lambda m: is_delta(m) and m["assistantMessageEvent"]["delta"] == " " + words[n // 2],
                   timeout=timeout)
        second = paused_for_a_while(d)
        d.wait_for(is_type("agent_end"), timeout=timeout)
        got = deltas(d.seen())
        self.assertEqual(len(got), n)
        self.assertTrue(got == [words[0]] + [" " + w for w in words[1:]],
                        "deltas lost, duplicated or out of order")
        text = " ".join(words)
        self.assertEqual("".join(got), text)
        final = [m for m in d.seen() if m.get("type") == "message_end"][-1]["message"]
        self.assertEqual(final["content"][0]["text"], text)
        self.assertTrue(first[0] and second[0], "the daemon kept running while nobody read")
        return max(first[1], second[1])

    @timing_sensitive("RSS limits")
    def test_slow_reader_gets_every_delta_and_rss_stays_under_64mb_with_full_updates(self):
        n = 1500 if is_sanitized_build() else 4500
        words = ["w%d" % i for i in range(n)]
        d = self.spawn(plan=[{"text": " ".join(words)}], args=["--no-session"])
        peak = self._stream_with_pauses(d, words, timeout=60)
        if not is_sanitized_build():
            self.assertLess(peak, RSS_LIMIT_KB, "RSS reached %d kB while the reader was paused" % peak)
        d.finish(timeout=10)

    @timing_sensitive("RSS limits and 200,000 events")
    def test_slow_reader_gets_all_200000_deltas_in_order_with_delta_updates(self):
        words = ["w%d" % i for i in range(200000)]
        # Too big for argv: the plan goes in the settings file.
        d = self.spawn(settings={"sim": {"plan": [{"text": " ".join(words)}]}},
                       sets={"rpc.messageUpdates": "delta"}, args=["--no-session"])
        baseline = d.rss_kb()
        peak = self._stream_with_pauses(d, words, timeout=60)
        if not is_sanitized_build():
            self.assertLess(peak, RSS_LIMIT_KB)
            self.assertLess(peak - baseline, RSS_GROWTH_LIMIT_KB,
                            "RSS grew from %d to %d kB while the reader was paused" % (baseline, peak))
        d.finish(timeout=10)

    def test_input_sent_while_output_is_congested_is_answered_once_it_drains(self):
        words = " ".join("w%d" % i for i in range(1500))
        d = self.spawn(plan=[{"text": words}], args=["--no-session"])
        d.send({"type": "prompt", "message": "q"})
        d.wait_for(is_delta)
        d.pause_reading()
        self.assertTrue(d.wait_quiescent(), "the daemon never blocked on its full stdout")
        d.send({"type": "get_state", "id": "during"})
        d.resume_reading()
        r = d.take(lambda m: m.get("id") == "during", timeout=30)
        self.assertIs(r["success"], True)
        d.wait_for(is_type("agent_end"), timeout=30)
        self.assertEqual(len(deltas(d.seen())), 1500)
        d.finish()

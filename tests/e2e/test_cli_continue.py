"""A cut answer of an agent CLI and the run after it (retry.continueCutAnswers),
replayed by the fake CLI (tests/fixtures/bin/fake_agent).

None of the four real CLIs goes on from a cut answer when resumed: pi 1.6
leaves the failed message out of what the resumed session sends and tells
the whole answer again (pi-1.6.0-early-end-resumed.jsonl, recorded), Gemini
CLI drops the failed turn. So the next attempt is a replay that says why: a
new message holding the new answer, shown as it comes. A profile that says
its resumed session goes on from the cut text (resumeContinuesCutText) gets
a continuation: the CLI's repeat dropped, nothing shown twice, the final
message whole.
"""
import os
import unittest

from harness import REPO_ROOT, deltas, text_of
from test_cli import CONTINUE, CliCase, run_of, CLIS

ANSWER = "ANSWER-OK: this is the complete answer"
FIXTURES = os.path.join(REPO_ROOT, "tests", "fixtures", "cli")
PI_SID = "01a2336d-83e1-7315-b45b-f40999023cd8"
REAL_PI = [{"fixture": "pi-1.6.0-early-end-retries-off.jsonl"},
           {"fixture": "pi-1.6.0-early-end-resumed.jsonl"}]

# Made up: a CLI (pi's lines) whose resumed session holds the cut text.
CUT = "The build failed because the linker could not find libfoo, which the "
REST = "Makefile names but never builds. Add it to the deps target."
SID = "4b7e2c19-5d3a-4f60-8e21-9c0a7d5b3e42"
PLAN = [{"fixture": "pi-cut-mid-answer.jsonl"}, {"fixture": "pi-continue-overlap.jsonl"}]
CONTINUES = {"providers.pi.resumeContinuesCutText": True}


def message_deltas(msgs):
    """The text deltas of each assistant message, joined: one string a message."""
    out = []
    for m in msgs:
        if m.get("type") == "message_start" and m["message"]["role"] == "assistant":
            out.append("")
        elif (m.get("type") == "message_update"
              and m["assistantMessageEvent"].get("type") == "text_delta"):
            out[-1] += m["assistantMessageEvent"]["delta"]
    return out


class CutCliAnswer(CliCase):

    def run_cut(self, cli, plan, sets=None, message="Why did the build fail?"):
        d = self.start(cli, plan, sets=sets)
        msgs = self.prompt(d, message)
        d.finish()
        return msgs

    def replay_of(self, msgs, reason):
        [start] = self.of_type(msgs, "auto_retry_start")
        self.assertEqual(start["continuation"],
                         {"mode": "replay", "keptChars": 0, "reason": reason})

    def test_real_pi_told_the_answer_again_after_a_cut_is_a_replay_that_says_why(self):
        msgs = self.run_cut("pi", REAL_PI, message="Say the answer")
        first, second = self.calls()
        self.assertEqual(run_of(second), CLIS["pi"]["resume"](PI_SID, CONTINUE))
        self.replay_of(msgs, "the CLI's resumed session does not go on from the cut text")
        failed, final = self.assistant_ends(msgs)
        self.assertEqual((failed["stopReason"], text_of(failed)), ("error", "ANSWER-OK: this is"))
        # The new answer in a message of its own, whole and once; no seeded text.
        self.assertEqual((final["stopReason"], text_of(final)), ("stop", ANSWER))
        self.assertEqual(message_deltas(msgs), ["ANSWER-OK: this is", ANSWER])
        self.assertEqual(final["usage"]["output"], 6)
        self.assertEqual(text_of(msgs[-1]["messages"][-1]), ANSWER)

    def test_real_gemini_cut_that_lost_its_turn_is_a_replay_that_says_why(self):
        msgs = self.run_cut("gemini", [{"fixture": "gemini-0.61.0-cut-stream.jsonl", "exit": 1},
                                       {"fixture": "gemini-0.61.0-success.jsonl"}],
                            message="Say the answer")
        self.replay_of(msgs, "the CLI's session lost the cut turn")
        failed, final = self.assistant_ends(msgs)
        self.assertEqual(text_of(failed), "ANSWER-OK: this is")
        self.assertEqual(final["stopReason"], "stop")
        self.assertEqual(message_deltas(msgs)[-1], text_of(final))

    def test_cut_without_a_session_id_is_a_replay_that_says_why(self):
        with open(os.path.join(FIXTURES, "pi-cut-mid-answer.jsonl")) as f:
            lines = f.read().splitlines()[1:]  # no session header
        msgs = self.run_cut("pi", [{"lines": lines}, {"fixture": "pi-continue-overlap.jsonl"}],
                            sets=CONTINUES)
        self.replay_of(msgs, "the CLI reported no session id")
        self.assertEqual(text_of(self.assistant_ends(msgs)[-1]),
                         "could not find libfoo, which the " + REST)

    def test_resumed_cli_continuation_shows_nothing_twice_and_ends_whole(self):
        msgs = self.run_cut("pi", PLAN, sets=CONTINUES)
        first, second = self.calls()
        # The second run resumes the CLI's session with the continuation prompt alone.
        self.assertEqual(run_of(second), CLIS["pi"]["resume"](SID, CONTINUE))
        [start] = self.of_type(msgs, "auto_retry_start")
        self.assertEqual(start["continuation"], {"mode": "turn", "keptChars": len(CUT)})
        # The deltas of both attempts, joined: the answer once.
        self.assertEqual("".join(deltas(msgs)), CUT + REST)
        failed, final = self.assistant_ends(msgs)
        self.assertEqual(failed["stopReason"], "error")
        self.assertEqual(text_of(failed), CUT)
        self.assertEqual(final["stopReason"], "stop")
        self.assertEqual(text_of(final), CUT + REST)
        # The usage is what the CLI reported for its continued run.
        self.assertEqual(final["usage"]["output"], 30)
        self.assertEqual([m["role"] for m in msgs[-1]["messages"]], ["user", "assistant"])
        self.assertEqual(text_of(msgs[-1]["messages"][1]), CUT + REST)

    def test_cli_continuation_off_shows_the_cli_text_as_it_comes(self):
        sets = dict(CONTINUES)
        sets["retry.continueCutAnswers"] = "off"
        msgs = self.run_cut("pi", PLAN, sets=sets)
        [start] = self.of_type(msgs, "auto_retry_start")
        self.assertNotIn("continuation", start)
        again = "could not find libfoo, which the " + REST
        self.assertEqual("".join(deltas(msgs)), CUT + again)
        _, final = self.assistant_ends(msgs)
        self.assertEqual(text_of(final), again)


if __name__ == "__main__":
    unittest.main()

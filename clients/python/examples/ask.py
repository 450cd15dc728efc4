#!/usr/bin/env python3
"""Ask retryd one question and print the answer, with the retries it took.

    RETRYD=../../build/retryd python3 examples/ask.py "hello there"
    python3 examples/ask.py --provider openai --model gpt-4o-mini "hello"

With no --provider this runs the built-in sim provider, scripted here to fail
once with a 503 and then answer, so the retry shows without an API key.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import retryd  # noqa: E402  (installed, or this folder's parent)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("message")
    ap.add_argument("--provider", default="sim")
    ap.add_argument("--model")
    ap.add_argument("--timeout", type=float, default=300)
    opts = ap.parse_args()

    args = ["--no-session", "--provider", opts.provider]
    if opts.model:
        args += ["--model", opts.model]
    if opts.provider == "sim":
        plan = [{"error": "503 Service Unavailable"}, {"text": "Hello from the sim provider."}]
        args += ["--sim-plan", json.dumps(plan), "--set", "retry.baseDelayMs=200"]

    with retryd.Client(args=args) as client:
        run = client.prompt_and_wait(opts.message, timeout=opts.timeout)
        for ev in run.events:
            if ev["type"] == "auto_retry_start":
                print("retry %d/%d in %d ms: %s" % (ev["attempt"], ev["maxAttempts"],
                                                  ev["delayMs"], ev["errorMessage"]),
                      file=sys.stderr)
        if not run.success:
            print("failed: %s" % run.error, file=sys.stderr)
            return 1
        print(run.text)
        return 0


if __name__ == "__main__":
    sys.exit(main())

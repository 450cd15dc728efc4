#!/usr/bin/env python3
"""Read retryd's JSONL output on stdin; print one readable line per event,
with the milliseconds since the first response."""
import json
import sys
import time

start = time.monotonic()


def describe(ev):
    t = ev.get("type")
    msg = ev.get("message") or {}
    if t == "response":
        ok = "ok" if ev.get("success") else "FAILED: " + ev.get("error", "")
        return f"response  {ev.get('command')} (id {ev.get('id')}) {ok}"
    if t in ("message_start", "message_end"):
        role = msg.get("role")
        extra = ""
        if t == "message_end" and role == "assistant":
            extra = f" stopReason={msg.get('stopReason')}"
            if msg.get("errorMessage"):
                extra += f" error={msg['errorMessage']!r}"
        return f"{t:<14}{role}{extra}"
    if t == "message_update":
        ame = ev.get("assistantMessageEvent", {})
        if ame.get("type") == "text_delta":
            return f"  text_delta  {ame.get('delta')!r}"
        return f"  {ame.get('type')}"
    if t == "auto_retry_start":
        return (f"auto_retry_start  attempt {ev['attempt']}/{ev['maxAttempts']} "
                f"in {ev['delayMs']} ms  ({ev['errorMessage']})")
    if t == "auto_retry_end":
        s = "success" if ev["success"] else f"gave up: {ev.get('finalError')}"
        return f"auto_retry_end    attempt {ev['attempt']}  {s}"
    if t == "agent_end":
        final = [m for m in ev.get("messages", []) if m.get("role") == "assistant"]
        text = "".join(c.get("text", "") for c in (final[-1]["content"] if final else []))
        return f"agent_end  answer: {text!r}"
    return t


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    try:
        ev = json.loads(line)
    except ValueError:
        print(f"         (not JSON) {line}")
        continue
    if ev.get("type") == "ready":
        start = None
    if start is None and ev.get("type") == "response":
        start = time.monotonic()  # times count from the first response
    ms = int((time.monotonic() - start) * 1000) if start is not None else 0
    print(f"{ms:6d} ms  {describe(ev)}", flush=True)

#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora into tests/fuzz/corpus/<target>/.

    python3 tests/fuzz/seeds.py

Seeds are real inputs: protocol lines and transcripts as the docs and the e2e
suite send them, OpenAI and Anthropic SSE bodies exactly as the fake LLM
server (tests/fixtures/fake_llm_server.py) streams them, settings files as
the README shows them, and error texts with wait hints as services write
them. Each seed is named after what it is; rerunning rewrites them.
"""
import http.client
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))

import fake_llm_server  # noqa: E402

CORPUS = os.path.join(HERE, "corpus")


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def line(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n"


# -- rpc: protocol lines ------------------------------------------------------

def rpc_seeds():
    every = [
        {"id": "1", "type": "prompt", "message": "hi"},
        {"id": "2", "type": "prompt", "message": "q", "streamingBehavior": "followUp"},
        {"id": "3", "type": "prompt", "message": "s", "streamingBehavior": "steer"},
        {"id": "4", "type": "steer", "message": "also this"},
        {"id": "5", "type": "follow_up", "message": "then this"},
        {"id": "6", "type": "get_state"},
        {"id": "7", "type": "abort_retry"},
        {"id": "8", "type": "abort"},
        {"id": "9", "type": "set_auto_retry", "enabled": False},
        {"id": "10", "type": "set_auto_retry", "enabled": True},
        {"id": "11", "type": "get_messages"},
        {"id": "12", "type": "get_last_assistant_text"},
        {"id": "13", "type": "new_session"},
        {"id": "14", "type": "new_session", "parentSession": "/tmp/x.jsonl"},
        {"id": "15", "type": "set_model", "provider": "sim", "modelId": "sim-2"},
        {"id": "16", "type": "get_available_models"},
        {"id": "17", "type": "set_steering_mode", "mode": "all"},
        {"id": "18", "type": "set_follow_up_mode", "mode": "one-at-a-time"},
        {"id": "19", "type": "set_session_name", "name": "fuzz"},
        {"id": "20", "type": "get_session_stats"},
        {"id": "21", "type": "get_commands"},
        {"id": "22", "type": "get_retry_policy"},
        {"id": "23", "type": "set_retry_policy", "policy": {"baseDelayMs": 5, "maxRetries": 5}},
        {"id": "24", "type": "set_retry_policy", "policy": {"jitter": "full", "jitterSeed": 7},
         "persist": True},
        {"id": "25", "type": "compact"},
        {"id": "26", "type": "bash", "command": "ls"},
    ]
    put("rpc", "every-command", "".join(line(c) for c in every))
    put("rpc", "docs-retry-then-state",
        line({"id": "1", "type": "prompt", "message": "hi", "retry": {"baseDelayMs": 300, "maxRetries": 2}})
        + "#tick 300\n" + line({"id": "s", "type": "get_state"}) + "#tick 600\n")
    put("rpc", "docs-busy-and-queue",
        line({"id": "1", "type": "prompt", "message": "hi"})
        + line({"id": "2", "type": "prompt", "message": "again"})
        + line({"id": "3", "type": "prompt", "message": "third", "streamingBehavior": "followUp"})
        + line({"id": "s", "type": "get_state"}) + "#tick 10\n#tick 20\n#tick 40\n")
    put("rpc", "abort-retry-during-backoff",
        line({"id": "1", "type": "prompt", "message": "hi"})
        + line({"id": "3", "type": "get_state"}) + line({"id": "4", "type": "abort_retry"}))
    put("rpc", "bad-lines",
        'not json\n{"type":\n[1,2]\n"str"\n{}\n{"type":5}\n{"id":7,"type":"get_state"}\n'
        + line({"id": "a", "type": "frobnicate"}) + line({"id": "b", "type": "prompt"})
        + line({"id": "c", "type": "prompt", "message": 5})
        + line({"type": "prompt", "message": "x", "images": "no"})
        + line({"type": "prompt", "message": "x", "images": [{"type": "image"}]})
        + line({"type": "prompt", "message": "x", "streamingBehavior": "later"})
        + line({"type": "prompt", "message": "x", "retry": {"maxRetries": -1}})
        + line({"type": "prompt", "message": "x", "retry": {"budget": None}})
        + line({"type": "set_retry_policy", "policy": {"retryablePatterns": ["(oops"]}})
        + line({"type": "set_auto_retry", "enabled": "yes"})
        + line({"type": "set_steering_mode", "mode": "some"}) + "\xff\xfe\n")
    put("rpc", "framing-crlf-blank-unicode",
        '{"id":"1","type":"get_state"}\r\n\r\n   \t\n'
        '{"id":"\u2028","type":"prompt","message":"h\u00e9llo \u2029 w\u00f6rld \U0001F642"}\n'
        '{"id":"2","type":"get_state"}')
    put("rpc", "oversize-line", "#max 64\n" + line({"id": "big", "type": "prompt", "message": "x" * 200})
        + line({"id": "after", "type": "get_state"}))
    put("rpc", "split-reads", "#chunk 3\n" + line({"id": "1", "type": "prompt", "message": "a b c"})
        + "#tick 5\n" + line({"id": "2", "type": "get_messages"}))
    put("rpc", "delta-updates-paused",
        "#set rpc.messageUpdates=\"delta\"\n#set sim.plan=[{\"text\":\"one two three four\"}]\n"
        + line({"id": "1", "type": "prompt", "message": "go"}) + "#pause\n#tick 1\n#resume\n")
    put("rpc", "hang-then-abort",
        "#set sim.plan=[{\"hang\":true}]\n" + line({"id": "1", "type": "prompt", "message": "go"})
        + line({"id": "2", "type": "steer", "message": "more"}) + line({"id": "3", "type": "abort"}))
    put("rpc", "sigterm-mid-stream",
        "#set sim.chunkDelayMs=5\n#set sim.plan=[{\"text\":\"a b c d e f\"}]\n"
        + line({"id": "1", "type": "prompt", "message": "go"}) + "#tick 12\n#abort\n")
    put("rpc", "journal-new-session",
        "#journal\n" + line({"id": "1", "type": "prompt", "message": "one"}) + "#tick 100\n"
        + line({"id": "2", "type": "new_session"}) + line({"id": "3", "type": "prompt", "message": "two"}))
    put("rpc", "fallback-and-credentials",
        "#set sim.plan=[{\"error\":\"529 overloaded\"},{\"error\":\"529 overloaded\"},"
        "{\"error\":\"529 overloaded\"},{\"error\":\"usage limit reached\"},{\"text\":\"ok\"}]\n"
        "#set retry.fallbackAfterConsecutive=2\n"
        + line({"id": "1", "type": "prompt", "message": "go"}) + "#tick 100\n#tick 100\n")
    put("rpc", "idle-timeout-and-budget",
        "#set retry.idleTimeoutMs=50\n#set retry.budget={\"maxTokens\":2,\"tokenRatio\":0.5}\n"
        "#set sim.plan=[{\"hang\":true},{\"hang\":true},{\"text\":\"ok\"}]\n"
        + line({"id": "1", "type": "prompt", "message": "go"}))
    put("rpc", "schedule-jitter-hints",
        "#set retry.schedule=[5,10,20]\n#set retry.jitter=\"decorrelated\"\n#set retry.jitterSeed=3\n"
        "#set sim.plan=[{\"error\":\"503\",\"retryAfterMs\":7},"
        "{\"error\":\"429 Too Many Requests. Please retry in 1.5s\"},{\"text\":\"ok\"}]\n"
        + line({"id": "1", "type": "prompt", "message": "go"})
        + line({"id": "2", "type": "set_auto_retry", "enabled": False}))
    # Long non-ASCII fields: error texts quote them and cut them to fit.
    put("rpc", "long-unicode-fields",
        line({"id": "u", "type": "a" + "\u00e9" * 150})
        + line({"id": "m", "type": "set_model", "provider": "sim", "modelId": "b" + "\u20ac" * 70})
        + line({"id": "r", "type": "set_retry_policy", "policy": {"c" + "\u00e9" * 40: 1}})
        + line({"id": "p", "type": "set_retry_policy",
                "policy": {"retryablePatterns": ["(x" + "\U0001F642" * 150]}}))


# -- sse: real bodies from the fake server -------------------------------------

def capture(srv, api, step):
    srv.set_plan([step])
    if api == "openai":
        path, body = "/v1/chat/completions", {"model": "m1", "stream": True,
                                              "messages": [{"role": "user", "content": "hi"}]}
    elif api == "gemini":
        path, body = "/v1beta/models/m1:streamGenerateContent?alt=sse", {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    elif api in ("responses", "azure"):
        path = "/v1/responses" if api == "responses" else "/openai/v1/responses?api-version=v1"
        body = {"model": "m1", "stream": True, "store": False,
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}
    else:
        path, body = "/v1/messages", {"model": "m1", "stream": True, "max_tokens": 64,
                                      "messages": [{"role": "user", "content": "hi"}]}
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    resp = conn.getresponse()
    data = b""
    try:
        while True:
            chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
            if not chunk:
                break
            data += chunk
    except (http.client.IncompleteRead, ConnectionError) as e:
        data += getattr(e, "partial", b"") or b""
    conn.close()
    return resp.status, data


# (name, byte 0 bits, byte 1 bits) of fuzz_sse: Gemini is bit 7 of byte 0;
# the others bits 0 and 7 of byte 1 (OpenAI Responses 0x80, Azure's 0x81).
SSE_APIS = (("openai", 0, 0), ("anthropic", 0, 1), ("gemini", 0x80, 0))
RESPONSES_APIS = (("responses", 0, 0x80), ("azure", 0, 0x81))
# OpenAI Responses: the common steps and its own.
RESPONSES_STEPS = {
    "thinking": {"thinking": "Plan it\n\nCheck it", "text": "done"},
    "stream-error-event": {"text": "a b", "streamError": {"code": "rate_limit_exceeded",
                                                          "message": "slow down"},
                           "streamErrorAs": "error"},
    "failed-quota": {"streamError": {"code": "insufficient_quota", "message": "quota"}},
}


def sse_seeds(apis=SSE_APIS, extra=None):
    steps = {
        "text": {"text": "Hello w\u00f6rld \U0001F642, how are you today?"},
        "chunks": {"text": "abcdefghij", "chunks": 4, "inputTokens": 11, "outputTokens": 4},
        "length": {"text": "cut short", "finish": "length"},
        "content-filter": {"text": "nope", "finish": "content_filter"},
        "tools": {"text": "calling", "toolCalls": [{"name": "get", "arguments": {"q": 1}}]},
        "stream-error": {"text": "half", "streamError": True},
        "malformed": {"text": "a b c", "malformed": True, "malformedAfterChunks": 1},
        "dropped": {"text": "one two three four", "dropAfterChunks": 2},
        "error-status-503": {"status": 503},
        "error-status-429": {"status": 429, "headers": {"retry-after": "2"}},
        "error-status-html": {"status": 502, "body": "<html><body>Bad gateway</body></html>",
                              "contentType": "text/html"},
        "error-status-text": {"status": 500, "body": "upstream connect error or disconnect/reset"},
        "error-status-vllm": {"status": 404, "body": {"detail": "The model `m1` does not exist."}},
    }
    steps.update(extra or {})
    with fake_llm_server.FakeServer([]) as srv:
        srv.start()
        for api, b0, b1 in apis:
            for name, step in dict(steps, **(GEMINI_STEPS if api == "gemini" else {})).items():
                status, body = capture(srv, api, step)
                # byte 0: the read size (0: whole) and Gemini's bit; byte 1: API bits,
                # limit bit, status bits 2-6.
                put("sse", "%s-%s" % (api, name),
                    bytes([b0, b1 | ((status - 400) // 3 % 32) << 2]) + body)
                put("sse", "%s-%s-split7" % (api, name), bytes([b0 | 7, b1]) + body)
    if apis != SSE_APIS:
        return
    oai = ('data: {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}\n\n'
           'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    put("sse", "openai-crlf", b"\x00\x00" + oai.replace("\n", "\r\n").encode())
    put("sse", "openai-cr-only-bom-comments", b"\x03\x00\xef\xbb\xbf: keep-alive\r"
        + oai.replace("\n", "\r").encode())
    put("sse", "openai-multiline-data-id",
        b"\x00\x00id: 7\nevent: message\ndata: {\"choices\":\ndata: [{\"index\":0,\"delta\":"
        b"{\"content\":\"y\"}}]}\nretry: 100\n\ndata: [DONE]\n\n")
    put("sse", "anthropic-error-not-json", b"\x00\x01event: error\ndata: overloaded, try later\n\n")
    put("sse", "oversize-event", b"\x00\x02data: " + b"x" * 400 + b"\n\n")


# -- settings -----------------------------------------------------------------

def settings_seeds():
    put("settings", "empty", "")
    put("settings", "blank", " \n\t\n")
    put("settings", "retry", json.dumps({"retry": {
        "enabled": True, "maxRetries": 5, "baseDelayMs": 250, "maxDelayMs": 30000,
        "respectServerHints": True, "jitter": "equal", "jitterSeed": 42,
        "schedule": [100, 200, 400], "budget": {"maxTokens": 10, "tokenRatio": 0.1},
        "idleTimeoutMs": 5000, "fallbackModels": ["sim-2"], "fallbackAfterConsecutive": 2,
        "fallbackCooldownMs": 1000, "usageLimitCooldownMs": 60000,
        "retryablePatterns": ["overloaded", "\\b5\\d\\d\\b"], "nonRetryablePatterns": ["invalid"],
        "contextOverflowPatterns": ["too long"], "usageLimitPatterns": ["quota"],
        "overloadPatterns": ["529"]}}, indent=2))
    put("settings", "rpc-sim-http", json.dumps({
        "rpc": {"maxLineBytes": 1048576, "outputHighWaterBytes": 65536, "messageUpdates": "delta"},
        "sim": {"plan": [{"error": "503"}, {"text": "ok", "delayMs": 5}], "chunkDelayMs": 1,
                "credentials": ["a", "b"], "models": ["sim-1", "sim-2"]},
        "http": {"connectTimeoutMs": 300, "idleTimeoutMs": 500}}))
    put("settings", "providers-readme", json.dumps({"providers": {
        "work": {"api": "openai-completions", "baseUrl": "https://llm.example.com/v1",
                 "apiKeyEnv": ["WORK_KEY_A", "WORK_KEY_B"], "headers": {"X-Team": "retry"},
                 "models": ["m1", {"id": "m2", "contextWindow": 200000, "maxTokens": 4096}]},
        "local": {"api": "openai-completions", "baseUrl": "http://127.0.0.1:8080/v1",
                  "models": ["qwen2.5-coder"]},
        "anthropic": {"models": ["claude-haiku-4-5"]},
        "bad": {"api": "grpc", "baseUrl": "ftp://x", "models": []}}}, indent=1))
    put("settings", "with-sets", json.dumps({"retry": {"maxRetries": 1}}).encode()
        + b"\0retry.baseDelayMs=50\0rpc.messageUpdates=delta\0retry.maxRetries.x=1"
        b"\0sim.plan=[{\"hang\":true}]\0=x\0noequals\0retry.jitter=full")
    put("settings", "errors", '{"retry": {"maxRetries": "x", "maxRetries": 2}}')
    put("settings", "unknown-keys-kept", '{"future": {"x": [1, 2.5, null]}, "retry": {"newKey": true}}')


# -- hint ---------------------------------------------------------------------

def hint_seeds():
    texts = [
        "retry-after-ms: 1500", "Retry-After: 30", "retry-after: 1.5",
        "Retry-After: Wed, 21 Oct 2015 07:28:30 GMT", "Retry-After: Sunday, 06-Nov-94 08:49:38 GMT",
        "Retry-After: Sun Nov  6 08:49:38 1994", "Your quota will reset after 18h31m10s.",
        "Please retry in 34.074824224s", "Please retry in 500ms",
        '{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3s"}]}}',
        "Rate limit reached for gpt-4o. Please try again in 1.2s. Visit https://platform.openai.com",
        "try again in ~5 minutes", "x-ratelimit-reset-ms: 1700000002500", "x-ratelimit-reset: 1700000010",
        "reset after 1h2m3.5s", "429 You exceeded your current quota, please check your plan",
        "529 overloaded_error: Overloaded", "503 Service Unavailable",
        "connection error: Recv failure: Connection reset by peer",
        "400 prompt is too long: 210000 tokens > 200000 maximum",
        "401 Incorrect API key provided: ***.", "stream stall: no data for 500 ms",
        "retry-after: 1.0000000000000000000001", "retry-after-ms: 99999999999999999999999",
        # the reference classifier's grammar
        "Please try again in 9m38.016s.", "Your limit will reset after 12h34m16s",
        "Your quota resets in 5 days 22 hours 3 minutes", "Claude AI usage limit reached|1755615600",
        '{"error":{"type":"usage_limit_reached","resets_in_seconds":3600}}',
        "x-ratelimit-reset-tokens: 6m0s, x-ratelimit-remaining-tokens: 0",
        '429 RESOURCE_EXHAUSTED {"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":'
        '[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":'
        '"GenerateRequestsPerMinutePerProjectPerModel"}]},{"@type":'
        '"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}',
        "Too many tokens, please wait before trying again.",
        "API Error: 529 {\\\"type\\\":\\\"overloaded_error\\\"}",
        "\u273b 529 Overloaded \u00b7 Retrying in 4s \u00b7 attempt 6/10",
        "Error: 400 invalid_request_error: model capacity exceeded, try again in 400ms",
        "connect ECONNREFUSED 127.0.0.1 port 5003", "Please wait for about 30 seconds",
    ]
    for i, t in enumerate(texts):
        put("hint", "%02d" % i, t)
    # Response headers as a server sends them, one "name: value" a line.
    headers = [
        "Date: Sun, 01 Jun 2025 00:00:00 GMT\r\nRetry-After: Sun, 01 Jun 2025 00:00:30 GMT\r\n",
        "date: Sun, 01 Jun 2025 00:00:00 GMT\nretry-after: Sunday, 01-Jun-25 00:01:00 GMT\n",
        "date: Sun, 01 Jun 2025 00:00:00 GMT\nretry-after: Sun Jun  1 00:02:00 2025\n",
        "retry-after-ms: 250\nretry-after: 3\n",
        "x-ratelimit-limit-requests: 500\nx-ratelimit-remaining-requests: 0\n"
        "x-ratelimit-reset-requests: 1m30.5s\nx-ratelimit-remaining-tokens: 12000\n"
        "x-ratelimit-reset-tokens: 20ms\n",
        "date: Sun, 01 Jun 2025 00:00:00 GMT\nanthropic-ratelimit-requests-remaining: 0\n"
        "anthropic-ratelimit-requests-reset: 2025-06-01T00:00:42Z\n"
        "anthropic-ratelimit-tokens-remaining: 9000\n"
        "anthropic-ratelimit-tokens-reset: 2025-06-01T00:05:00Z\n",
        "x-ratelimit-reset: 1748736060\nx-ratelimit-reset-ms: 1748736000500\n",
    ]
    for i, t in enumerate(headers):
        put("hint", "headers-%02d" % i, t)


# -- jsontext: text deltas ------------------------------------------------------

def jsontext_seeds():
    seeds = {"plain": b" world", "quotes": b'a "q" b\\c /d', "controls": bytes(range(0, 32)) + b"\x7f",
             "unicode": "h\u00e9llo \u2028\u2029 \U0001F642 \ufeff".encode(),
             "cut": "\u00e9\u00e9".encode()[:-1], "overlong": b"\xc0\xaf\xe0\x80\xaf",
             "surrogate": b"\xed\xa0\x80", "toolarge": b"\xf4\x90\x80\x80", "nul": b"a\x00b"}
    for name, data in seeds.items():
        put("jsontext", name, data)


# Gemini's own shapes: thoughts with a signature, a blocked prompt, a
# google.rpc.Status in the stream and as an HTTP body.
GEMINI_STEPS = {
    "thinking": {"thinking": "let me think", "text": "answer", "thoughtsTokens": 7,
                 "cachedTokens": 2},
    "safety": {"text": "x", "finish": "safety"},
    "blocked": {"blockReason": "PROHIBITED_CONTENT"},
    "stream-error-quota": {"text": "a b", "errorAfterChunks": 1,
                           "streamError": {"code": 429}, "retryDelay": "2s",
                           "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"},
    "error-status-key": {"status": 400, "message": "API key not valid.",
                         "errorReason": "API_KEY_INVALID"},
}

# -- jsonscan: the data payloads of the sse seeds, one per line ------------------

def jsonscan_seeds():
    src = os.path.join(CORPUS, "sse")
    for name in sorted(os.listdir(src)):
        if name.endswith("-split7"):
            continue
        with open(os.path.join(src, name), "rb") as f:
            b = f.read()
        if len(b) < 2:
            continue
        body = b[2:].replace(b"\r\n", b"\n")
        datas = [l[5:].lstrip(b" ") for l in body.split(b"\n") if l.startswith(b"data:")]
        if datas:
            api = 4 if b[0] & 0x80 else b[1] & 0x81
            put("jsonscan", name, bytes([api]) + b"\n".join(datas[:64]))


# -- resettime: what agent CLIs print about a usage limit -------------------------

RESET_TEXTS = {
    "claude-epoch": "Claude AI usage limit reached|1767240000",
    "claude-epoch-ms": "Claude AI usage limit reached|1767240000123",
    "claude-clock-zone": "You\u2019ve hit your limit \u00b7 resets 11pm (America/Anchorage)",
    "claude-clock-utc": "resets 12am (UTC)",
    "claude-date": "resets December 31st at 11pm",
    "codex-duration": "You've hit your usage limit. Try again in 2 hours 13 minutes.",
    "codex-clock": "You\u2019ve hit your usage limit. Upgrade to Pro or try again at 10:00 PM.",
    "dotted-pm": "limit reached, try again at 9:30:15 p.m.",
    "date-year": "Your limit resets Dec 5, 2026 at 10:00 AM (UTC)",
    "iso-offset": "resets at 2026-01-02T15:00:00-0500",
    "iso-fraction": "resets at 2026-01-02T15:00:00.250Z",
    "iso-half-hour": "resets at 2026-01-01T10:30+0530",
    "tomorrow": "resets tomorrow at 9am",
    "iso-date-clock": "resets on 2026-01-03 at 12pm",
    "dst-gap": "resets 2:30am (America/New_York)",
    "unknown-zone": "resets 11pm (Mars/Olympus_Mons)",
    "gemini-daily": "Quota exceeded for quota metric 'Generate Content API requests per day' "
                    "and limit 'GenerateRequestsPerDayPerProjectPerModel'",
    "gemini-minute": "Quota exceeded for quota metric 'Generate Content API requests per "
                     "minute'. Please retry in 37.5s.",
    "until": "usage limited until 15:45 UTC",
}


def resettime_seeds():
    # Byte 0: the zone (low bits) and the moment (bit 4), as fuzz_resettime reads it.
    for name, text in RESET_TEXTS.items():
        for zone in (0, 1, 2, 3):
            put("resettime", "%s-z%d" % (name, zone), bytes([zone]) + text.encode("utf-8"))
    put("resettime", "claude-clock-dst-day", bytes([0x12]) + RESET_TEXTS["dst-gap"].encode())


# -- tzif: zone files as the system keeps them ----------------------------------

ZONES = ["UTC", "America/Anchorage", "America/New_York", "Europe/London", "Australia/Sydney",
         "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Chatham", "America/Sao_Paulo"]
# 2025-12-02T12:00:00Z, 2038-01-19T03:14:08Z (past 32 bits), 1900-01-01, 2200-07-01.
MOMENTS = [1764676800, 2147483648, -2208988800, 7263216000]


def tzif_seeds():
    for zone in ZONES:
        path = os.path.join("/usr/share/zoneinfo", zone)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if not data.startswith(b"TZif"):
            continue
        for i, t in enumerate(MOMENTS):
            put("tzif", "%s-%d" % (zone.replace("/", "-"), i),
                t.to_bytes(8, "little", signed=True) + data)
    for name, rule in (("rule-anchorage", "AKST9AKDT,M3.2.0,M11.1.0"),
                       ("rule-sydney", "AEST-10AEDT,M10.1.0,M4.1.0/3"),
                       ("rule-julian", "XST5XDT,J60/2,J300/2"),
                       ("rule-zero-based", "XST5XDT,59/2,299/2"),
                       ("rule-hours-past-24", "<-03>3<-02>,M3.5.0/-2,M10.5.0/-1"),
                       ("rule-fixed", "<+0545>-5:45")):
        put("tzif", name, MOMENTS[0].to_bytes(8, "little", signed=True) + rule.encode())


# -- journal: session files as the daemon writes them ------------------------

# Written by retryd (build/retryd --session FILE, sim plan: a 503, then an
# answer), then the lines other runs add: a thinking level change, a park and
# its end, a second session (new_session) in the same file.
JOURNAL_HEADER = ('{"type":"session","version":1,"id":"01a23904-189b-784b-a9f4-3b5d988d1879",'
                  '"timestamp":"2026-12-02T23:08:19.483Z","cwd":"/tmp/jseed"}\n')
JOURNAL_LINES = [
    '{"type":"message","message":{"role":"user","content":[{"type":"text","text":"hello there"}],'
    '"timestamp":1796252899483}}\n',
    '{"type":"message","message":{"role":"assistant","content":[],"api":"sim","provider":"sim",'
    '"model":"sim-1","usage":{"input":3,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":3,'
    '"cost":{"input":0.0,"output":0.0,"cacheRead":0.0,"cacheWrite":0.0,"total":0.0}},'
    '"stopReason":"error","timestamp":1796252899483,"errorMessage":"503 overloaded"},"retried":true}\n',
    '{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":'
    '"hi, how can I help?"}],"api":"sim","provider":"sim","model":"sim-1","usage":{"input":3,'
    '"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":8,"cost":{"input":0.0,"output":0.0,'
    '"cacheRead":0.0,"cacheWrite":0.0,"total":0.0}},"stopReason":"stop","timestamp":1796252899498}}\n',
]
JOURNAL_LEVEL = ('{"type":"thinking_level_change","timestamp":"2026-12-02T23:09:00.000Z",'
                 '"thinkingLevel":"high"}\n')
JOURNAL_PARK = ('{"type":"park","timestamp":"2026-12-02T23:10:00.000Z","resetAtMs":1796270400000,'
                '"resetAt":"2026-12-03T04:00:00Z","resetSource":"text","parks":1,"waitedMs":0,'
                '"parkedAtMs":1796253000000,"errorMessage":"You\'ve hit your limit \\u00b7 resets 4am (UTC)",'
                '"rule":"usage_limit","policy":{"maxRetries":3}}\n')
JOURNAL_PARK_END = '{"type":"park_end","timestamp":"2026-12-02T23:11:00.000Z"}\n'


def journal_seeds():
    whole = JOURNAL_HEADER + "".join(JOURNAL_LINES)
    put("journal", "sim-retry-then-answer", whole)
    put("journal", "header-only", JOURNAL_HEADER)
    put("journal", "empty", "")
    put("journal", "no-header", "".join(JOURNAL_LINES))
    put("journal", "thinking-level", JOURNAL_HEADER + JOURNAL_LEVEL + "".join(JOURNAL_LINES))
    put("journal", "parked", whole + JOURNAL_PARK)
    put("journal", "park-ended", whole + JOURNAL_PARK + JOURNAL_PARK_END)
    put("journal", "two-sessions", whole + JOURNAL_HEADER.replace("01a23904", "01a23905")
        + JOURNAL_LINES[0])
    put("journal", "torn-last-line", whole + JOURNAL_LINES[0][:40])
    put("journal", "torn-inside-an-escape", whole + '{"type":"message","message":{"text":"a\\u00')
    put("journal", "not-json-in-the-middle", JOURNAL_HEADER + "garbage\n" + JOURNAL_LINES[0])
    put("journal", "crlf", whole.replace("\n", "\r\n"))
    put("journal", "no-final-lf", whole.rstrip("\n"))


def main():
    journal_seeds()
    resettime_seeds()
    tzif_seeds()
    jsontext_seeds()
    rpc_seeds()
    sse_seeds()
    sse_seeds(RESPONSES_APIS, RESPONSES_STEPS)
    jsonscan_seeds()
    settings_seeds()
    hint_seeds()
    for t in sorted(os.listdir(CORPUS)):
        print("%s: %d seeds" % (t, len(os.listdir(os.path.join(CORPUS, t)))))


if __name__ == "__main__":
    main()

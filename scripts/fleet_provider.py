#!/usr/bin/env python3
"""A fast fake LLM provider for `make bench-fleet`: one account that many
daemons share, with the limits a real one has. Python standard library only
(asyncio), 127.0.0.1 only.

    python3 scripts/fleet_provider.py --port 0 --port-file F [--time-scale 10]
        [--rpm 600] [--window 10] [--concurrency 30] [--conc-status 529] [--outage 60,120]
        [--usage-key A --usage-after 200 --usage-reset 3600]
        [--latency-ms 2000 --chunks 4] [--key A=sk-... --key B=sk-...]

POST /v1/chat/completions answers in OpenAI's chat-completions streaming
format, the same chunk shapes tests/fixtures/fake_llm_server.py sends
(role chunk, content chunks, finish chunk, usage chunk when
stream_options.include_usage, [DONE]). Each request meets, in this order:

  outage        from --outage START to END (scenario seconds after /_start):
                503 {"error":{"message":"The server is overloaded or not ready
                yet.","type":"server_error",...}}
  usage limit   once --usage-key has had --usage-after answers accepted, every
                request with that key: 429 {"error":{"type":"usage_limit_reached",
                "code":"usage_limit_reached","resets_in_seconds":R,...}} (ChatGPT /
                Codex's shape; R is --usage-reset, compressed)
  RPM limit     per key, a sliding window of --window scenario seconds
                (default 10) holding at most rpm * window / 60 accepted
                requests, i.e. the per-minute limit enforced over a shorter
                period, as OpenAI says it may do (a whole-minute window lets
                the fleet spend the minute in its first seconds and then
                stand still, which measures the window, not the clients):
                429 with OpenAI's body
                ("Rate limit reached for ... on requests per min (RPM): Limit L,
                Used U, Requested 1. Please try again in 350ms. ...", type
                "requests", code "rate_limit_exceeded") and headers retry-after,
                retry-after-ms, x-ratelimit-limit-requests,
                x-ratelimit-remaining-requests, x-ratelimit-reset-requests
  concurrency   more than --concurrency answers in flight: --conc-status (529,
                or 429) with OpenAI's "That model is currently overloaded ..."
  answer        200, streamed over --latency-ms, with the x-ratelimit-* headers

TIME COMPRESSION. --time-scale S makes a scenario second last 1/S s: the RPM
window, the outage and the latency are divided by S. The headers speak real
time, so a client that paces itself by them needs no knowledge of the scale:
x-ratelimit-limit-requests is --rpm * S (the same rate, per real minute),
remaining is what is left in the window at that rate (left * 60 / window *
S), the reset durations and retry-after(-ms) are real, and so is the usage
limit's resets_in_seconds.

Control endpoints (not recorded):
  POST /_start {...}   forget everything, start the scenario clock now; the
                       object may override any option (rpm, concurrency,
                       outage [s, e] or null, usageKey, usageAfter, latencyMs,
                       ...). Answers {"t0": time.monotonic() of the start}.
  GET  /_series        {"t0", "binMs": 100, "config", "bins": {"kind": {KIND:
                       [count per 100 ms of real time]}, "key": {KEY: [...]}},
                       "requests": [[arrive, done, key, kind, d, p, inflight]]}
                       times in real seconds after t0; kind is ok | rate | conc
                       | outage | usage | gone (the client left mid-answer) |
                       bad; d, p: the daemon and prompt numbers the bench
                       driver writes into its prompt ("bench d=17 p=5"), or -1;
                       inflight: answers in flight when it arrived.
  GET  /_health        {"ok": true, "requests": N}

Prints "READY <port>" on stdout once listening; exits 0 on SIGTERM/SIGINT.
"""

import argparse
import asyncio
import collections
import json
import math
import os
import re
import signal
import sys
import time

HOST = "127.0.0.1"
TAG = re.compile(rb"bench d=(\d+) p=(\d+)")
KINDS = ("ok", "rate", "conc", "outage", "usage", "gone", "bad")


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def fmt_duration(seconds):
    """OpenAI's reset form: "350ms", "1.2s", "6m0s"."""
    if seconds < 1:
        return "%dms" % max(1, int(math.ceil(seconds * 1000)))
    if seconds < 60:
        return ("%.3f" % seconds).rstrip("0").rstrip(".") + "s"
    m, s = divmod(seconds, 60)
    return "%dm%ds" % (m, int(s))


class Config:
    FIELDS = {"timeScale": float, "rpm": int, "window": float, "concurrency": int,
              "concStatus": int,
              "outage": None, "usageKey": str, "usageAfter": int, "usageReset": float,
              "latencyMs": float, "chunks": int, "model": str}

    def __init__(self, args):
        self.timeScale = args.time_scale
        self.rpm = args.rpm
        self.window = args.window
        self.concurrency = args.concurrency
        self.concStatus = args.conc_status
        self.outage = [float(x) for x in args.outage.split(",")] if args.outage else None
        self.usageKey = args.usage_key
        self.usageAfter = args.usage_after
        self.usageReset = args.usage_reset
        self.latencyMs = args.latency_ms
        self.chunks = args.chunks
        self.model = "fleet-model"

    def update(self, obj):
        for k, v in obj.items():
            if k not in self.FIELDS:
                raise ValueError("unknown option %r" % k)
            if k == "outage":
                self.outage = None if v is None else [float(v[0]), float(v[1])]
            elif v is None:
                setattr(self, k, None)
            else:
                setattr(self, k, self.FIELDS[k](v))

    def as_dict(self):
        return {k: getattr(self, k) for k in self.FIELDS}


class Account:
    """The provider's state for one scenario run."""

    def __init__(self, cfg, keys):
        self.cfg = cfg
        self.keys = keys              # secret -> label
        self.t0 = time.monotonic()
        self.windows = collections.defaultdict(collections.deque)   # label -> accept times
        self.accepted = collections.Counter()                      # label -> accepted count
        self.inflight = 0
        self.records = []
        self.seq = 0

    def now(self):
        return time.monotonic() - self.t0

    def label(self, auth):
        secret = auth[7:] if auth.lower().startswith("bearer ") else auth
        return self.keys.get(secret, "?" if secret else "-")

    def judge(self, key):
        """(kind, status, body, headers) for a request arriving now; kind "ok"
        means: serve it (the caller counts it in flight)."""
        cfg, scale, t = self.cfg, self.cfg.timeScale, self.now()
        if cfg.outage and cfg.outage[0] / scale <= t < cfg.outage[1] / scale:
            return "outage", 503, {"error": {
                "message": "The server is overloaded or not ready yet.",
                "type": "server_error", "param": None, "code": None}}, {}
        if (cfg.usageKey and key == cfg.usageKey and cfg.usageAfter is not None
                and self.accepted[key] >= cfg.usageAfter):
            reset = cfg.usageReset / scale
            return "usage", 429, {"error": {
                "message": "The usage limit has been reached", "type": "usage_limit_reached",
                "param": None, "code": "usage_limit_reached", "plan_type": "team",
                "resets_at": int(time.time() + reset),
                "resets_in_seconds": int(math.ceil(reset))}}, {}
        headers = {}
        if cfg.rpm:
            window = cfg.window / scale
            cap = max(1, int(round(cfg.rpm * cfg.window / 60.0)))
            per_min = 60.0 / cfg.window * scale     # one request left in the window, per real minute
            q = self.windows[key]
            while q and q[0] <= t - window:
                q.popleft()
            used = len(q)
            reset = (q[0] + window - t) if q else window
            headers = {"x-ratelimit-limit-requests": str(int(cfg.rpm * scale)),
                       "x-ratelimit-remaining-requests": str(int(max(0, cap - used - 1) * per_min)),
                       "x-ratelimit-reset-requests": fmt_duration(reset)}
            if used >= cap:
                headers["x-ratelimit-remaining-requests"] = "0"
                headers["retry-after"] = str(int(math.ceil(reset)))
                headers["retry-after-ms"] = str(int(math.ceil(reset * 1000)))
                return "rate", 429, {"error": {
                    "message": ("Rate limit reached for %s in organization org-fleetbench on "
                                "requests per min (RPM): Limit %d, Used %d, Requested 1. Please "
                                "try again in %s. Visit https://platform.openai.com/account/"
                                "rate-limits to learn more." % (
                                    cfg.model, int(cfg.rpm * scale), int(used * per_min),
                                    fmt_duration(reset))),
                    "type": "requests", "param": None, "code": "rate_limit_exceeded"}}, headers
        if cfg.concurrency and self.inflight >= cfg.concurrency:
            return "conc", cfg.concStatus, {"error": {
                "message": ("That model is currently overloaded with other requests. You can "
                            "retry your request, or contact us through our help center at "
                            "help.openai.com if the error persists."),
                "type": "server_error", "param": None, "code": None}}, {}
        if cfg.rpm:
            self.windows[key].append(t)
        self.accepted[key] += 1
        return "ok", 200, None, headers

    def record(self, key, kind, d, p):
        rec = [round(self.now(), 4), None, key, kind, d, p, self.inflight]
        self.records.append(rec)
        return rec

    def done(self, rec, kind=None):
        rec[1] = round(self.now(), 4)
        if kind:
            rec[3] = kind

    def series(self, bin_ms=100):
        n = int(self.now() * 1000 // bin_ms) + 1
        kinds = {k: [0] * n for k in KINDS}
        keys = collections.defaultdict(lambda: [0] * n)
        for rec in self.records:
            i = min(n - 1, int(rec[0] * 1000 // bin_ms))
            kinds[rec[3]][i] += 1
            keys[rec[2]][i] += 1
        return {"t0": self.t0, "binMs": bin_ms, "config": self.cfg.as_dict(),
                "bins": {"kind": kinds, "key": dict(keys)}, "requests": self.records}


# ---------------------------------------------------------------- the answer

def chunk(cid, created, model, delta, finish=None, usage=False):
    obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
           "system_fingerprint": "fp_fake",
           "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    if usage:
        obj["usage"] = None
    return b"data: " + dumps(obj).encode() + b"\n\n"


def usage_chunk(cid, created, model, prompt_tokens, completion_tokens):
    obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
           "system_fingerprint": "fp_fake", "choices": [],
           "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                     "total_tokens": prompt_tokens + completion_tokens,
                     "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                     "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                   "accepted_prediction_tokens": 0,
                                                   "rejected_prediction_tokens": 0}}}
    return b"data: " + dumps(obj).encode() + b"\n\n"


def http_chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests",
           503: "Service Unavailable", 529: "Site is overloaded"}


class Server:
    def __init__(self, cfg, keys):
        self.cfg = cfg
        self.keys = keys
        self.acct = Account(cfg, keys)
        self.total = 0

    # -- HTTP plumbing

    async def read_request(self, reader):
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        return method, path, headers

    async def read_body(self, reader, writer, headers):
        if headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await reader.readline()).split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(await reader.readexactly(size))
                await reader.readline()
        n = int(headers.get("content-length") or 0)
        return await reader.readexactly(n) if n else b""

    @staticmethod
    def head(status, ctype, extra, length=None):
        out = ["HTTP/1.1 %d %s" % (status, REASONS.get(status, "Error")),
               "Content-Type: " + ctype, "Server: fleet-provider/1"]
        out.append("Content-Length: %d" % length if length is not None
                   else "Transfer-Encoding: chunked")
        out += ["%s: %s" % kv for kv in extra.items()]
        return ("\r\n".join(out) + "\r\n\r\n").encode("latin-1")

    def send_json(self, writer, status, obj, extra=None):
        data = dumps(obj).encode()
        writer.write(self.head(status, "application/json", extra or {}, len(data)) + data)

    async def handle(self, reader, writer):
        try:
            while True:
                try:
                    method, path, headers = await self.read_request(reader)
                except (asyncio.IncompleteReadError, ConnectionError, ValueError):
                    return
                body = await self.read_body(reader, writer, headers)
                path = path.split("?", 1)[0]
                if path.startswith("/_"):
                    self.control(writer, method, path, body)
                elif method == "POST" and path.rstrip("/") in ("/v1/chat/completions",
                                                               "/chat/completions"):
                    if not await self.completion(writer, headers, body):
                        return
                else:
                    self.send_json(writer, 404, {"error": {"message": "Not found: " + path,
                                                           "type": "invalid_request_error",
                                                           "param": None, "code": None}})
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def control(self, writer, method, path, body):
        if path == "/_start" and method == "POST":
            try:
                self.cfg.update(json.loads(body or b"{}"))
            except (ValueError, TypeError) as e:
                self.send_json(writer, 400, {"ok": False, "error": str(e)})
                return
            self.acct = Account(self.cfg, self.keys)
            self.send_json(writer, 200, {"t0": self.acct.t0, "config": self.cfg.as_dict()})
        elif path == "/_series":
            self.send_json(writer, 200, self.acct.series())
        elif path == "/_health":
            self.send_json(writer, 200, {"ok": True, "requests": self.total})
        else:
            self.send_json(writer, 404, {"error": "unknown control path"})

    async def completion(self, writer, headers, body):
        """Serves one API request; False when the connection is to be dropped."""
        self.total += 1
        acct = self.acct
        key = acct.label(headers.get("authorization", ""))
        tags = TAG.findall(body)
        d, p = (int(tags[-1][0]), int(tags[-1][1])) if tags else (-1, -1)
        try:
            req = json.loads(body)
        except ValueError:
            req = None
        if not isinstance(req, dict) or req.get("stream") is not True:
            rec = acct.record(key, "bad", d, p)
            acct.done(rec)
            self.send_json(writer, 400, {"error": {"message": "this fake streams only",
                                                   "type": "invalid_request_error",
                                                   "param": None, "code": None}})
            return True
        kind, status, err, extra = acct.judge(key)
        rec = acct.record(key, kind, d, p)
        seq = len(acct.records)
        extra["x-request-id"] = "req_fleet%07d" % seq
        if kind != "ok":
            acct.done(rec)
            self.send_json(writer, status, err, extra)
            return True
        acct.inflight += 1
        try:
            cfg = self.cfg
            model = req.get("model") or cfg.model
            cid, created = "chatcmpl-fleet%07d" % seq, int(time.time())
            opts = req.get("stream_options")
            with_usage = isinstance(opts, dict) and bool(opts.get("include_usage"))
            extra["Cache-Control"] = "no-cache"
            writer.write(self.head(200, "text/event-stream; charset=utf-8", extra) + http_chunk(
                chunk(cid, created, model, {"role": "assistant", "content": "", "refusal": None},
                      usage=with_usage)))
            n = max(1, cfg.chunks)
            pause = cfg.latencyMs / 1000.0 / cfg.timeScale / n
            words = ["ok"] + [" ok"] * (n - 1)
            for w in words:
                if pause > 0:
                    await asyncio.sleep(pause)
                writer.write(http_chunk(chunk(cid, created, model, {"content": w},
                                              usage=with_usage)))
                await writer.drain()
            tail = chunk(cid, created, model, {}, finish="stop", usage=with_usage)
            if with_usage:
                tail += usage_chunk(cid, created, model, max(1, len(body) // 4), n)
            tail += b"data: [DONE]\n\n"
            writer.write(http_chunk(tail) + b"0\r\n\r\n")
            await writer.drain()
            acct.done(rec)
            return True
        except (ConnectionError, asyncio.IncompleteReadError):
            acct.done(rec, "gone")
            return False
        finally:
            # The account may have been replaced by /_start meanwhile; its
            # count is its own.
            acct.inflight -= 1


async def main_async(args):
    keys = {}
    for spec in args.key:
        label, _, secret = spec.partition("=")
        keys[secret] = label
    srv = Server(Config(args), keys)
    server = await asyncio.start_server(srv.handle, HOST, args.port, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, args.port_file)
    print("READY %d" % port, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.max_seconds:
        loop.call_later(args.max_seconds, stop.set)
    async with server:
        await stop.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--time-scale", type=float, default=10.0)
    ap.add_argument("--rpm", type=int, default=600, help="per key, scenario minutes; 0: none")
    ap.add_argument("--window", type=float, default=10.0,
                    help="scenario seconds over which the RPM limit is enforced")
    ap.add_argument("--concurrency", type=int, default=0, help="answers in flight; 0: no limit")
    ap.add_argument("--conc-status", type=int, default=529, choices=(429, 529))
    ap.add_argument("--outage", help="START,END in scenario seconds after /_start")
    ap.add_argument("--usage-key", help="the key label that runs out")
    ap.add_argument("--usage-after", type=int, help="accepted requests before it does")
    ap.add_argument("--usage-reset", type=float, default=3600.0, help="scenario seconds")
    ap.add_argument("--latency-ms", type=float, default=2000.0, help="scenario ms per answer")
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--key", action="append", default=[], metavar="LABEL=SECRET")
    ap.add_argument("--max-seconds", type=float, default=0)
    args = ap.parse_args()
    try:
        asyncio.run(main_async(args))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

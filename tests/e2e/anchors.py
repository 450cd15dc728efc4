"""The anchors of tests/fixtures/errors/anchors.json: the decisions of pi 1.6
and oh-my-pi about an assistant error, written as data (their texts are
facts; their code stays theirs), applied to a corpus row. The format is the
file's own "format" key. Python 3 standard library only."""

import json
import os
import re

CLASSES = ("retryable", "non_retryable", "context_overflow", "usage_limit")
META_KEYS = {"verdict", "note", "unless", "and", "default", "value"}
ANCHORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "errors",
                       "anchors.json")


def load(path=ANCHORS):
    """Every anchor of the file, by name."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return {n: Anchor(n, doc[n]) for n in doc if n != "format"}


class Anchor:
    def __init__(self, name, spec):
        self.name = name
        self.spec = spec
        self.predicates = spec.get("predicates", {})
        self.ladders = spec.get("ladders", {})
        self.wait = spec.get("wait", {})
        self.status_spec = spec.get("fields", {}).get("status")
        self._rx = {}

    # -- regexes -------------------------------------------------------------
    def compile(self, pattern, flags):
        key = (pattern, flags)
        if key not in self._rx:
            f = re.ASCII  # JavaScript \d \w \s \b are ASCII; PCRE2 without UCP likewise
            for ch in flags or "":
                if ch == "i":
                    f |= re.IGNORECASE
                elif ch == "s":
                    f |= re.DOTALL
                else:
                    raise ValueError(f"{self.name}: unknown flag {ch!r} in {pattern!r}")
            self._rx[key] = re.compile(pattern, f)
        return self._rx[key]

    # -- fields --------------------------------------------------------------
    def status(self, row):
        if isinstance(row.get("status"), int):
            return row["status"]
        spec = self.status_spec
        if not isinstance(spec, dict):
            return None
        lo, hi = spec.get("range", [100, 599])
        text = row.get("text") or ""
        for p in spec.get("else_text", []):
            m = self.compile(p["when"], p.get("flags", "")).search(text)
            if m:
                code = int(m.group(1))
                if lo <= code <= hi:
                    return code
        return None

    def hint_ms(self, row):
        """Server-stated wait in ms read by this anchor from the text, or None."""
        rules = self.wait.get("rules", [])
        if not rules:
            return None
        units = self.wait.get("units", {})
        text = row.get("text") or ""
        longest, retry_now = None, False
        for r in rules:
            m = self.compile(r["when"], r.get("flags", "")).search(text)
            if not m:
                continue
            total, ok = 0.0, True
            for part in r["value"]:
                g = m.group(part["group"])
                if g is None:
                    continue  # optional group absent counts 0
                if r.get("numeric_only"):
                    if not re.fullmatch(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", g):
                        ok = False
                        break
                    v = float(g)
                else:
                    num = re.match(r"\d+(?:\.\d*)?|\.\d+", g)  # JavaScript parseFloat prefix
                    if not num:
                        ok = False
                        break
                    v = float(num.group(0))
                if "absolute_above" in r and v > r["absolute_above"]:
                    ok = False  # an epoch: absolute time, needs a clock
                    break
                if "unit_group" in part:
                    scale = units.get((m.group(part["unit_group"]) or "").lower())
                    if scale is None:
                        ok = False
                        break
                else:
                    scale = part["ms"]
                total += v * scale
            if not ok:
                continue
            if total > 0:
                longest = total if longest is None or total > longest else longest
            elif r.get("clamped"):
                retry_now = True
        if longest is not None:
            return int(round(longest))
        return 0 if retry_now else None

    def field(self, row, name, cache):
        if name not in cache:
            if name == "text":
                cache[name] = row.get("text")
            elif name == "status":
                cache[name] = self.status(row)
            elif name == "http_status":
                cache[name] = row["status"] if isinstance(row.get("status"), int) else None
            elif name == "provider":
                cache[name] = row.get("source")
            elif name == "hint_ms":
                cache[name] = self.hint_ms(row)
            else:
                raise ValueError(f"{self.name}: unknown field {name!r}")
        return cache[name]

    # -- conditions ----------------------------------------------------------
    def holds(self, cond, row, cache):
        if "any" in cond:
            return any(self.holds(c, row, cache) for c in cond["any"])
        if "all" in cond:
            return all(self.holds(c, row, cache) for c in cond["all"])
        if "not" in cond:
            return not self.holds(cond["not"], row, cache)
        if "ref" in cond:
            key = ("ref", cond["ref"])
            if key not in cache:
                cache[key] = self.holds(self.predicates[cond["ref"]], row, cache)
            return cache[key]
        if "ladder" in cond:
            return self.ladder(cond["ladder"], row, cache) in cond["in"]
        if "when" in cond:
            value = self.field(row, cond.get("field", "text"), cache)
            if value is None:
                return False
            for s in cond.get("strip", []):
                value = self.compile(s["when"], s.get("flags", "")).sub("", value)
            return self.compile(cond["when"], cond.get("flags", "")).search(value) is not None
        if "field" in cond:
            value = self.field(row, cond["field"], cache)
            if cond.get("absent"):
                return value is None
            if value is None:
                return False
            if "in" in cond and value not in cond["in"]:
                return False
            if "min" in cond and value < cond["min"]:
                return False
            if "max" in cond and value > cond["max"]:
                return False
            return True
        raise ValueError(f"{self.name}: condition without a test: {cond}")

    def ladder(self, name, row, cache):
        key = ("ladder", name)
        if key not in cache:
            cache[key] = None
            for st in self.ladders[name]["steps"]:
                if self.step_applies(st, row, cache):
                    cache[key] = st["value"]
                    break
        return cache[key]

    def step_applies(self, st, row, cache):
        if st.get("default"):
            return True
        cond = {k: v for k, v in st.items() if k not in META_KEYS}
        if not self.holds(cond, row, cache):
            return False
        if any(not self.holds(c, row, cache) for c in st.get("and", [])):
            return False
        if any(self.holds(c, row, cache) for c in st.get("unless", [])):
            return False
        return True

    def decide(self, row):
        """(verdict, index of the deciding step, its note, hint_ms, gives_up)"""
        cache = {}
        for i, st in enumerate(self.spec["steps"]):
            if self.step_applies(st, row, cache):
                verdict = st["verdict"]
                hint = self.field(row, "hint_ms", cache)
                gives_up = False
                maxd = self.wait.get("max_delay_ms")
                if maxd and verdict in self.wait.get("give_up_applies_to", []):
                    wait = hint
                    if wait is None and verdict == "usage_limit":
                        fb = self.wait.get("usage_limit_fallback_wait_ms", {})
                        if "rate_limit_reason" in self.ladders:
                            wait = fb.get(self.ladder("rate_limit_reason", row, cache))
                    gives_up = wait is not None and wait > maxd
                return verdict, i, st.get("note", ""), hint, gives_up
        raise ValueError(f"{self.name}: no step applied (missing default step)")

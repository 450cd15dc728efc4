#!/usr/bin/env python3
"""Splits newly gathered error texts into the tuned corpus and the held-out
part, by family, before any rule for them is written (run once per batch).

  scripts/corpus-split.py NEW.jsonl...

Each family's rows are ordered by the sha256 of their id and the first
HOLDOUT_SHARE of them (rounded up) go to corpus-holdout.jsonl, the rest to
corpus.jsonl: every family is on both sides, the choice is blind to the
texts, and the held-out part stays at least a quarter of the whole. Rows
already in either file (same text) are dropped."""

import collections
import hashlib
import json
import math
import os
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                    "errors")
TUNED = os.path.join(HERE, "corpus.jsonl")
HOLDOUT = os.path.join(HERE, "corpus-holdout.jsonl")
HOLDOUT_SHARE = 0.46


def read(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(paths):
    tuned, held = read(TUNED), read(HOLDOUT)
    seen = {r["text"] for r in tuned + held}
    ids = {r["id"] for r in tuned + held}
    by_family = collections.defaultdict(list)
    for p in paths:
        for r in read(p):
            if r["text"] in seen:
                continue
            seen.add(r["text"])
            if r["id"] in ids:
                r["id"] = "%s-%s" % (r["id"], hashlib.sha256(r["text"].encode()).hexdigest()[:6])
            ids.add(r["id"])
            r.setdefault("file", os.path.basename(p))
            by_family[r.get("family") or r["source"]].append(r)
    for family, rows in sorted(by_family.items()):
        rows.sort(key=lambda r: hashlib.sha256(r["id"].encode()).hexdigest())
        k = math.ceil(HOLDOUT_SHARE * len(rows))
        held += rows[:k]
        tuned += rows[k:]
    for path, rows in ((TUNED, tuned), (HOLDOUT, held)):
        with open(path, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    total = len(tuned) + len(held)
    print("tuned %d, held out %d (%.1f%% of %d)" % (len(tuned), len(held), 100 * len(held) / total,
                                                   total))
    return 0 if len(held) * 4 >= total else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

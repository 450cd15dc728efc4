#!/usr/bin/env python3
"""The layer rule of src/ as a check (make check runs it; docs/layout.md says why).

Folders are layers, and an include may point only downward:

    main.c > rpc.c, options.c, config.c, resume.c, membership.c > core/
           > provider/ > io/, proto/ > base/ > shared/

io/ and proto/ stand side by side and include neither each other, and so do
the modules of rpc.c's rank. client/
(libretryd-client) may include only shared/ and its own headers; retryctl/ only
its own and the public include/retryd/. Every include of a project header
names its layer ("core/session.h"); an X-macro table (.def) is included like a
header and belongs to the layer of its folder. Besides the direction:
  - no two modules include each other, and no longer circle either;
  - uv_*() is called only in io/, main.c, client/, retryctl/ and shared/child.c
    (the one child-process module, which the client library shares too);
    curl_*() and redis*() only in io/;
  - rooms stay small enough to read: no .c file over MAX_LINES lines, and the
    rooms that grew before have their own limits (LIMITS);
  - the retry coordinator sits below the session: core/chain includes no
    core/session.h, so the dependency points one way;
  - comments say why in the project's own words: none cites an issue number
    (the history is git log's);
  - the classifier's wording is data: no string literal in core/classify.c
    holds a regular expression (the patterns are rows of
    core/classify_rules.def).
Prints one line per violation and exits 1 when there is any.
Usage: check-layers.py [SRC_DIR]   (default: src)"""
import os
import re
import sys

RANK = {"shared": 0, "base": 1, "io": 2, "proto": 2, "provider": 3, "core": 4, "rpc": 5,
        "options": 5, "config": 5, "resume": 5, "membership": 5, "main": 6}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
CALL = {
    "uv": (re.compile(r"\buv_[a-z0-9_]+\s*\("), ("io", "main", "client", "retryctl")),
    "curl": (re.compile(r"\bcurl_[a-z0-9_]+\s*\("), ("io",)),
    "hiredis": (re.compile(r"\bredis[A-Z][A-Za-z]*\s*\("), ("io",)),
}


MAX_LINES = 1200
LIMITS = {"core/session.c": 600, "core/classify.c": 600, "main.c": 500}
# A module and the headers it may not include.
FORBIDDEN = {"core/chain": ("core/session.h",)}
PATTERN_FREE = ("core/classify.c",)
ISSUE_CITE = re.compile(r"\bissues?\s+#?[0-9]+\b", re.I)
# What makes a string literal a regular expression rather than a word.
REGEX_SYNTAX = re.compile(r"\\\\[bsdw]|\(\?|\.\*|\.\+|\[\^|\|")


def layer_of(rel):
    """'core/session.c' -> 'core'; 'rpc.c' -> 'rpc'; 'provider/http/api.c' -> 'provider'."""
    head = rel.split("/", 1)[0]
    if "/" not in rel:
        return os.path.splitext(head)[0]
    return head


def module_of(rel):
    return os.path.splitext(rel)[0]


def allowed(src_layer, dst_layer):
    if src_layer == dst_layer:
        return True
    if src_layer == "client":
        return dst_layer == "shared"
    if src_layer == "retryctl" or dst_layer in ("client", "retryctl"):
        return False
    if src_layer not in RANK or dst_layer not in RANK:
        return False
    return RANK[dst_layer] < RANK[src_layer]


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else "src"
    problems = []
    edges = {}
    files = []
    for root, _, names in os.walk(top):
        for n in sorted(names):
            if n.endswith((".c", ".h", ".def")):
                files.append(os.path.relpath(os.path.join(root, n), top))
    known = set(files)
    for rel in sorted(files):
        with open(os.path.join(top, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        src_layer = layer_of(rel)
        for inc in INCLUDE.findall(text):
            if inc.startswith("retryd/"):
                continue  # the public headers in include/
            if inc not in known:
                problems.append(f"{rel}: #include \"{inc}\" names no file under {top}/ "
                                "(write the layer: \"core/session.h\")")
                continue
            dst_layer = layer_of(inc)
            if not allowed(src_layer, dst_layer):
                problems.append(f"{rel}: #include \"{inc}\" points {src_layer} -> {dst_layer}, "
                                "against the layer order")
            a, b = module_of(rel), module_of(inc)
            if a != b:
                edges.setdefault(a, set()).add(b)
        lines = text.count("\n")
        limit = LIMITS.get(rel, MAX_LINES)
        if rel.endswith(".c") and lines > limit:
            problems.append(f"{rel}: {lines} lines, over the {limit} a room may have "
                            "(split it by noun)")
        for inc in INCLUDE.findall(text):
            if inc in FORBIDDEN.get(module_of(rel), ()):
                problems.append(f"{rel}: #include \"{inc}\": {module_of(rel)} sits below it "
                                "and reaches it only through its ops table")
        for m in COMMENT.finditer(text):
            c = ISSUE_CITE.search(m.group(0))
            if c:
                line = text[:m.start() + c.start()].count("\n") + 1
                problems.append(f"{rel}:{line}: a comment cites \"{c.group(0)}\": say why in "
                                "the project's words (the history is in git log)")
        if rel in PATTERN_FREE:
            for m in STRING.finditer(COMMENT.sub(" ", text)):
                if REGEX_SYNTAX.search(m.group(0)):
                    problems.append(f"{rel}: the pattern {m.group(0)[:40]} belongs in the rule "
                                    "table, not in the code")
        code = STRING.sub('""', COMMENT.sub(" ", text))
        for what, (pattern, where) in CALL.items():
            if src_layer in where or (what == "uv" and rel == "shared/child.c"):
                continue
            m = pattern.search(code)
            if m:
                line = code[:m.start()].count("\n") + 1
                problems.append(f"{rel}:{line}: calls {m.group(0).rstrip('( ')}() outside "
                                f"{', '.join(w + ('/' if w not in ('main',) else '.c') for w in where)}")
    # Circles between modules (a .c and its .h are one module).
    state = {}
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                circle = stack[stack.index(nxt):] + [nxt]
                problems.append("include circle: " + " -> ".join(circle))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    for p in problems:
        print("layers: " + p)
    if problems:
        print(f"layers: {len(problems)} violation(s); the rule is in docs/layout.md")
        return 1
    print(f"layers: {len(files)} files, includes point downward, no circles")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Whether two `kerncap evaluate` runs over the same candidates gave the same verdicts: per
index, the result, the line, the error, and the verdict document less its profile fields
(timing, phases, seconds, compare_work, restore_work, and how memory was prepared, which
depend on the order workers took candidates in). For comparing two builds of the engine
(KERNCAP_REPLAY_LIB names the library the workers load) or two pool settings.

    evaluate_identity.py A.jsonl B.jsonl [--ignore-source-lines]

--ignore-source-lines: a CUDA error's text names the engine's source line that saw it
("session.cpp:591"), which moves between two builds; compared as "session.cpp:N".

Prints one line (identical, differing, the keys that differ and how often) and the first
three differences; exit 0 when every candidate's verdict is identical, 1 otherwise.
"""
import json
import re
import sys

PROFILE = {"timing", "phases", "seconds", "compare_work", "restore_work", "memory", "loaded", "rewritten_words",
           "determinism_checked", "recovered"}


def load(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                out[r["index"]] = r
    return out


SOURCE_LINE = re.compile(r"(\.(?:cpp|hpp|cu|h)):\d+")


def normalized(x):
    if isinstance(x, str):
        return SOURCE_LINE.sub(r"\1:N", x)
    if isinstance(x, list):
        return [normalized(y) for y in x]
    if isinstance(x, dict):
        return {k: normalized(y) for k, y in x.items()}
    return x


def body(r, ignore_lines=False):
    v = r.get("verdict")
    out = {"result": r["result"], "line": r["line"], "error": r.get("error"),
           "verdict": None if v is None else {k: x for k, x in v.items() if k not in PROFILE}}
    return normalized(out) if ignore_lines else out


def compare(a, b, ignore_lines=False):
    same, keys, first = 0, {}, []
    for i in sorted(set(a) | set(b)):
        if i not in a or i not in b:
            keys["missing"] = keys.get("missing", 0) + 1
            continue
        x, y = body(a[i], ignore_lines), body(b[i], ignore_lines)
        if x == y:
            same += 1
            continue
        vx, vy = x["verdict"] or {}, y["verdict"] or {}
        differ = sorted(k for k in set(vx) | set(vy) if vx.get(k) != vy.get(k))
        for k in ["result", "line", "error"]:  # the record's own (the verdict's are above)
            if x[k] != y[k] and k not in differ:
                differ.insert(0, k)
        for k in differ:
            keys[k] = keys.get(k, 0) + 1
        if len(first) < 3:
            first.append((i, {k: (x.get(k, vx.get(k)), y.get(k, vy.get(k))) for k in differ if k != "regions"}))
    return same, len(set(a) | set(b)), keys, first


def main():
    args = [a for a in sys.argv[1:] if a != "--ignore-source-lines"]
    if len(args) != 2:
        sys.exit(__doc__)
    same, total, keys, first = compare(load(args[0]), load(args[1]), "--ignore-source-lines" in sys.argv[1:])
    print(f"identity: {same} of {total} verdicts identical; differing keys: {keys or 'none'}")
    for i, d in first:
        print(f"  index {i}: {d}")
    return 0 if same == total else 1


if __name__ == "__main__":
    sys.exit(main())

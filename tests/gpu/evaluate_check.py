#!/usr/bin/env python3
"""Checks one run of `kerncap evaluate` for tests/gpu/evaluate_e2e.sh: every candidate reported
exactly once, the expected verdicts by the candidate's number (evaluate_e2e.sh's pattern), and
the same verdicts (result and line, by index) as a reference run. Prints the verdict counts on
the first line and the problems (or nothing) on the second.

    evaluate_check.py N TIME_LIMIT RUN.jsonl [REFERENCE.jsonl]
"""
import json
import os
import sys


def kind(i):  # as evaluate_e2e.sh builds the candidates (EVAL_HANG=0: no hanging ones)
    if i % 100 == 57 and os.environ.get("EVAL_HANG", "1") == "1":
        return "hang"
    if i % 50 == 21:
        return "fault"
    if i % 10 == 3:
        return "tail"
    return "copy"


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    n, limit, path = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    recs = load(path)
    problems = []
    idx = sorted(r["index"] for r in recs)
    if idx != list(range(n)):
        problems.append(f"{len(recs)} records for {n} candidates ({len(set(idx))} distinct)")
    for r in sorted(recs, key=lambda r: r["index"]):
        i, k = r["index"], kind(r["index"])
        if k == "hang" and r["error"] is not None and r["error"].startswith("timed out"):
            if r["error"] != f"timed out after {limit:g} s" or r["result"] != "FAIL":
                problems.append(f"#{i} (hang): {r['result']} {r['error']}")
        elif k == "hang" and r["result"] == "PASS":
            problems.append(f"#{i} (hang) passed")
        elif k == "fault" and r["result"] == "PASS":
            problems.append(f"#{i} (fault) passed")
        elif k == "copy" and r["result"] != "PASS":
            problems.append(f"#{i} (a copy of the captured image): {r['line']}")
    if len(sys.argv) > 4:
        a = {r["index"]: (r["result"], r["line"]) for r in recs}
        b = {r["index"]: (r["result"], r["line"]) for r in load(sys.argv[4])}
        diff = [i for i in sorted(set(a) | set(b)) if a.get(i) != b.get(i)]
        if diff:
            problems.append(f"{len(diff)} verdicts differ from the reference, first #{diff[0]}: "
                            f"{a.get(diff[0])} vs {b.get(diff[0])}")
    counts = {}
    for r in recs:
        counts[r["result"]] = counts.get(r["result"], 0) + 1
    print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    print("; ".join(problems[:4]) + (f" (+{len(problems) - 4} more)" if len(problems) > 4 else ""))


if __name__ == "__main__":
    main()

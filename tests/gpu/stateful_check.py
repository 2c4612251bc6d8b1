#!/usr/bin/env python3
"""N consecutive launches of a captured stateful kernel in one replay session, and the last one
still validates (tests/gpu/stateful_e2e.sh).

    stateful_check.py CAPTURE [-n 100]

Opens CAPTURE once, times N-1 launches with the default restore (the bytes a launch changes,
device-side counters included, are put back before each launch), launches once more (the Nth
launch, from the state the timing leaves: restored) and compares that launch's output with the
capture's AFTER, as `kerncap validate` does. Prints "PASS ..." or "FAIL ..."; exit 0 on PASS.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from kerncap import engine  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("capture")
    ap.add_argument("-n", type=int, default=100)
    a = ap.parse_args()
    with engine.Session(a.capture) as s:
        s.restore()
        t = s.time(warmup=0, iterations=max(a.n - 1, 1))
        s.launch()
        v = s.compare()
    ok = v.get("result") == "PASS"
    print(f"{'PASS' if ok else 'FAIL'} {a.n} launches in one session (median {t['median_ms']:.4f} ms, "
          f"restore {t.get('restore')}); the last: {v.get('line', v.get('result'))}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

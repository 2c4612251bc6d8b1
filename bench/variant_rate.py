#!/usr/bin/env python3
"""Variant evaluation rate: how many images per second one open session judges
(engine.Session.evaluate: load, launch, compare with AFTER, time), beside the cost of judging
each with its own `kerncap validate --cubin` process.

    bench/variant_rate.py CAPTURE [--image PATH]... [-n 200] [--kerncap BUILD/bin/kerncap]
                          [--validate-runs 3] [--json] [--min-rate R]

The images cycle: the captured image (always), then each --image (a recompiled copy, a
tuning variant...). Rows:
  in-process, timed        evaluate(image) with timing (1 warm-up + 10 timed launches)
  in-process, untimed      evaluate(image, time=False): load, launch, compare
  in-process, reload       evaluate(image, keep_loaded=False): a module load and unload each
                           (only with --image)
  validate process         `kerncap validate CAPTURE [--cubin IMAGE]` per evaluation, as a
                           script or agent without the engine would run it (median of
                           --validate-runs; --footprint auto when the capture has one, else never)
The library is found as engine.py finds it ($KERNCAP_REPLAY_LIB or the newest build*/lib).
Exit 1 when --min-rate is given and the timed rate is below it; 77 without a GPU.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from kerncap import engine  # noqa: E402


def loop(s, images, n, **opts):
    """(evaluations/s, seconds, failures) over n evaluations cycling through images."""
    bad = 0
    t0 = time.perf_counter()
    for i in range(n):
        bad += s.evaluate(images[i % len(images)], **opts)["result"] != "PASS"
    took = time.perf_counter() - t0
    return n / took, took, bad


def validate_cost(kerncap, capture, images, runs, footprint):
    """Median seconds of one `kerncap validate` process, cycling through images."""
    times, bad = [], 0
    for i in range(runs):
        image = images[i % len(images)]
        cmd = [kerncap, "validate", capture, "--quiet", "--footprint", footprint]
        if image:
            cmd += ["--cubin", image]
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        times.append(time.perf_counter() - t0)
        bad += rc != 0
    return statistics.median(times), bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("capture")
    ap.add_argument("--image", action="append", default=[], help="a variant image (repeatable)")
    ap.add_argument("-n", type=int, default=200, help="evaluations per in-process row")
    ap.add_argument("--kerncap", help="the kerncap binary for the validate row (default: beside the library)")
    ap.add_argument("--validate-runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--min-rate", type=float, default=0)
    a = ap.parse_args()
    if not shutil.which("nvidia-smi") or subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode != 0:
        print("SKIPPED: no GPU")
        return 77
    info = engine.capture_info(a.capture)
    lib = engine.load()
    kerncap = a.kerncap or os.path.join(os.path.dirname(os.path.dirname(lib.path)), "bin", "kerncap")
    footprint = "auto" if os.path.exists(os.path.join(info["directory"], "footprint.json")) else "never"
    images = [None] + a.image
    size = sum(int(r["size"]) for r in info["regions"])
    rows = []
    with engine.Session(a.capture) as s:
        for image in images:  # first evaluations: module loads, staging, CUPTI set up
            s.evaluate(image)
        r, took, bad = loop(s, images, a.n)
        rows.append(("in-process, timed (1 + 10 launches)", a.n, took, r, bad))
        r, took, bad = loop(s, images, a.n, time=False)
        rows.append(("in-process, untimed", a.n, took, r, bad))
        if a.image:
            r, took, bad = loop(s, a.image, max(10, a.n // 4), time=False, keep_loaded=False)
            rows.append(("in-process, reload the variant each time", max(10, a.n // 4), took, r, bad))
    if os.path.exists(kerncap) and a.validate_runs > 0:
        sec, bad = validate_cost(kerncap, a.capture, images, a.validate_runs, footprint)
        rows.append((f"`kerncap validate` process (footprint {footprint})", a.validate_runs, sec * a.validate_runs,
                     1 / sec, bad))
    timed = rows[0][3]
    result = {"capture": a.capture, "kernel": info["kernel"]["demangled"], "captured_bytes": size,
              "images": ["captured"] + a.image,
              "rows": [{"mode": m, "evaluations": k, "seconds": t, "per_second": r, "failed": b}
                       for m, k, t, r, b in rows]}
    if len(rows) > 1 and rows[-1][0].startswith("`kerncap validate`"):
        result["speedup_over_validate_process"] = timed / rows[-1][3]
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"variant_rate: {info['kernel']['demangled'][:90]}")
        print(f"  {a.capture}: {len(info['regions'])} regions, {size / 2**20:.1f} MiB; images: "
              f"{', '.join(os.path.basename(x) if x else 'captured' for x in images)}")
        print()
        print("| mode | evaluations | seconds | evaluations/s | ms per evaluation | failed |")
        print("| --- | --- | --- | --- | --- | --- |")
        for m, k, t, r, b in rows:
            print(f"| {m} | {k} | {t:.2f} | {r:.1f} | {1000 / r:.2f} | {b} |")
        if "speedup_over_validate_process" in result:
            print(f"\nin-process timed evaluation is x{result['speedup_over_validate_process']:.0f} faster than a "
                  "validate process per evaluation")
    if any(row[4] for row in rows if row[0].startswith("in-process")):
        print("variant_rate: some in-process evaluations failed (see the failed column)", file=sys.stderr)
        return 1
    if a.min_rate and timed < a.min_rate:
        print(f"variant_rate: {timed:.1f} evaluations/s, below --min-rate {a.min_rate}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

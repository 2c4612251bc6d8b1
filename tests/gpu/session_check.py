#!/usr/bin/env python3
"""The evaluation loop (engine.Session.evaluate) on a real GPU (tests/gpu/session_e2e.sh).

    session_check.py CAPTURE [--same IMAGE] [--wrong IMAGE] [--other-kernel IMAGE]
                     [--fuzz-fails IMAGE] [-n 200] [--min-rate 100] [--quick]

CAPTURE is opened once; then: N evaluations of the captured image all PASS; the same image as
bytes is recognised (no module load); --same (a recompiled copy) PASSes, loaded once and kept;
--wrong (a variant computing something wrong) FAILs and the next captured evaluation PASSes
again; --other-kernel (an image without the captured kernel) is refused with exit code 2 and
the session goes on; with a footprint, --same passes fuzz trials and --fuzz-fails fails them;
keep_loaded=False loads and unloads the variant every time; device memory (cuMemGetInfo) and
host memory do not grow over the loops; the rate of timed evaluations is at least --min-rate.
Prints "PASS name: detail" / "FAIL name: detail" per check and "rate: ..." lines; exit 0 when
every check passed. --quick: fewer evaluations (a capture with module globals, a GEMM).
"""
import argparse
import ctypes
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from kerncap import engine  # noqa: E402

failures = []


def check(name, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
    if not ok:
        failures.append(name)


def device_free():
    """Free device memory in the session's context (the engine keeps it current here)."""
    cuda = ctypes.CDLL("libcuda.so.1")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    rc = cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
    if rc != 0:
        raise RuntimeError(f"cuMemGetInfo_v2: CUresult {rc}")
    return free.value


def host_rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def rss_parts():
    """Where resident memory is: anonymous, file-backed (libraries paged in), shared, and
    what glibc's malloc holds in use and free (a leak grows "in use"; an allocator that keeps
    freed memory grows "free"). Diagnostic only: no check depends on it."""
    parts = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("RssAnon", "RssFile", "RssShmem"):
                parts[key] = int(line.split()[1]) >> 10
    try:
        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = _Mallinfo2
        m = libc.mallinfo2()
        parts["malloc_in_use"] = (m.uordblks + m.hblkhd) >> 20
        parts["malloc_free"] = m.fordblks >> 20
    except (AttributeError, OSError):
        pass
    return ", ".join(f"{k} {v} MiB" for k, v in parts.items())


def rate(s, images, n, **opts):
    """Evaluations per second over n evaluations cycling through images; every result."""
    results = []
    t0 = time.perf_counter()
    for i in range(n):
        results.append(s.evaluate(images[i % len(images)], **opts))
    took = time.perf_counter() - t0
    return n / took, took, results


def summary(results):
    bad = [r for r in results if r["result"] != "PASS"]
    return f"{len(results) - len(bad)}/{len(results)} PASS" + (f"; first FAIL: {bad[0]['line'][:160]}" if bad else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("capture")
    ap.add_argument("--same", help="a recompiled copy of the captured kernel (must PASS)")
    ap.add_argument("--wrong", help="a variant that computes something wrong (must FAIL)")
    ap.add_argument("--other-kernel", help="an image without the captured kernel (must be refused)")
    ap.add_argument("--fuzz-fails", help="a variant right only on the captured inputs (fuzzing must FAIL it)")
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--min-rate", type=float, default=0)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    n = 20 if a.quick else a.n
    info = engine.capture_info(a.capture)
    with open(os.path.join(info["directory"], info["image"]["file"]), "rb") as f:
        captured_bytes = f.read()
    has_footprint = os.path.exists(os.path.join(info["directory"], "footprint.json"))
    print(f"capture {a.capture}: {info['kernel']['demangled'][:80]}; footprint: {has_footprint}", flush=True)

    with engine.Session(a.capture) as s:
        first = s.evaluate()
        check("first", first["result"] == "PASS" and first["memory"] == "full", first["line"][:160])
        t = first.get("timing") or {}
        check("timed", t.get("median_ms", 0) > 0, f"median {t.get('median_ms')} ms by {t.get('method')}")
        # Warm every path once before taking the memory baseline (modules, staging, CUPTI).
        warm = [s.evaluate(None, time=False), s.evaluate(captured_bytes, name="captured bytes")]
        if a.same:
            warm += [s.evaluate(a.same), s.evaluate(a.same, keep_loaded=False), s.evaluate(None)]
        if a.wrong:
            warm.append(s.evaluate(a.wrong))
        # The modules loaded at the baseline and at the end: the captured image and --same.
        if a.same:
            warm.append(s.evaluate(a.same))
        warm.append(s.evaluate(None))
        check("warm_up", all(w["result"] == "PASS" for w in warm if not a.wrong or w["image"] != a.wrong),
              summary([w for w in warm if not a.wrong or w["image"] != a.wrong]))
        free0, rss0 = device_free(), host_rss()
        parts0 = rss_parts()

        # In two halves, with the resident size after each: growth that stops after the first
        # half is the allocator keeping freed memory; growth in both halves is a leak.
        half = max(1, n // 2)
        r1, took1, res = rate(s, [None], half, time=False)
        rss_half = host_rss()
        parts_half = rss_parts()
        r2, took2, res2 = rate(s, [None], n - half, time=False)
        rss_full = host_rss()
        res += res2
        took = took1 + took2
        r = n / took
        trail = [f"{rss_half >> 20} MiB after {half} evaluations", f"{rss_full >> 20} MiB after {n}"]
        check("captured_x%d" % n, all(x["result"] == "PASS" for x in res), summary(res))
        check("no_growth_per_evaluation", rss_full - rss_half <= 8 << 20,
              f"resident {rss_half >> 20} MiB after {half} evaluations of the captured image, {rss_full >> 20} MiB "
              f"after {n}")
        check("reset_only", sum(x["memory"] == "written" for x in res) == n,
              f"{sum(x['memory'] == 'written' for x in res)} of {n} evaluations put back only the written bytes")
        print(f"rate: {r:.0f} evaluations/s untimed (captured image, {took:.2f} s for {n})", flush=True)

        b = s.evaluate(captured_bytes, name="captured bytes", time=False)
        trail.append(f"{host_rss() >> 20} MiB after the image given as {len(captured_bytes) >> 20} MiB of bytes")
        check("captured_bytes", b["result"] == "PASS" and b["captured_image"] and not b["loaded"],
              f"{b['result']} captured_image={b['captured_image']} loaded={b['loaded']}")

        if a.same:
            images = [None, a.same]
            r, took, res = rate(s, images, n)
            loads = sum(x["loaded"] for x in res)
            check("captured_and_recompiled_x%d" % n, all(x["result"] == "PASS" for x in res), summary(res))
            check("variant_kept_loaded", loads == 0, f"{loads} module loads in {n} evaluations")
            print(f"rate: {r:.0f} evaluations/s timed (captured image and {os.path.basename(a.same)} alternately, "
                  f"{took:.2f} s for {n})", flush=True)
            if a.min_rate:
                check("rate", r >= a.min_rate, f"{r:.0f} evaluations/s timed (target {a.min_rate:.0f})")
            m = max(10, n // 4)
            r2, took, res = rate(s, [a.same], m, time=False, keep_loaded=False)
            # The first finds the variant loaded by the loop before; every later one loads it.
            check("reload_x%d" % m, all(x["result"] == "PASS" for x in res) and all(x["loaded"] for x in res[1:]),
                  summary(res) + f"; {sum(x['loaded'] for x in res)} module loads")
            print(f"rate: {r2:.0f} evaluations/s untimed with a module load and unload each", flush=True)

        if a.wrong:
            w = s.evaluate(a.wrong)
            check("wrong_fails", w["result"] == "FAIL" and w["line"].startswith("Result: FAIL"), w["line"][:160])
            again = s.evaluate(None, time=False)
            check("pass_after_fail", again["result"] == "PASS" and again["memory"] == "full", again["line"][:120])

        if a.other_kernel:
            try:
                s.evaluate(a.other_kernel)
                check("other_kernel_refused", False, "evaluated without an error")
            except engine.EngineError as e:
                check("other_kernel_refused", e.exit_code == engine.E_INPUT and "does not contain the captured kernel"
                      in str(e), f"exit code {e.exit_code}: {str(e)[:160]}")
            try:
                s.evaluate(os.path.join(a.capture, "no_such.cubin"))
                check("missing_file_refused", False, "evaluated without an error")
            except engine.EngineError as e:
                check("missing_file_refused", e.exit_code == engine.E_INPUT and "no such file" in str(e), str(e)[:120])
            after = s.evaluate(None, time=False)
            check("pass_after_refusal", after["result"] == "PASS", after["line"][:120])

        if has_footprint and a.same:
            f = s.evaluate(a.same, fuzz=5, time=False)
            check("fuzz_same", f["result"] == "PASS" and f["fuzz"]["result"] == "PASS", f["fuzz"]["line"][:160])
        if has_footprint and a.fuzz_fails:
            f = s.evaluate(a.fuzz_fails, fuzz=20, seed=7, time=False)
            check("fuzz_fails", f["result"] == "FAIL" and "fuzz trials failed" in f["line"]
                  and f["fuzz"]["result"] == "FAIL", f["line"][:160])
            after = s.evaluate(None, time=False)
            check("pass_after_fuzz", after["result"] == "PASS" and after["memory"] == "full", after["line"][:120])

        # The same set of modules loaded as at the baseline: the captured image and --same.
        if a.same:
            s.evaluate(a.same)
        s.evaluate(None)
        free1, rss1 = device_free(), host_rss()
        print(f"resident before the loops: {parts0}; after the first half: {parts_half}; after: {rss_parts()}", flush=True)
        grew = free0 - free1
        check("device_memory_flat", grew <= 4 << 20,
              f"free device memory {free0 >> 20} MiB before the loops, {free1 >> 20} MiB after ({grew / 2**20:+.1f} MiB used)")
        # Each thread of the engine's work pool keeps one buffer for a compressed chunk (up to
        # 4 MiB, src/format/chunk_store.cpp) once it has decoded one: bounded by the cores, it
        # fills over the first evaluations (no_growth_per_evaluation is the leak check).
        pool_buffers = (os.cpu_count() or 1) * (4 << 20)
        check("host_memory_flat", rss1 - rss0 <= (64 << 20) + pool_buffers,
              f"resident {rss0 >> 20} MiB before the loops, {rss1 >> 20} MiB after, allowed 64 MiB + "
              f"{pool_buffers >> 20} MiB of chunk buffers for {os.cpu_count()} threads ({'; '.join(trail)})")
    check("closed", s.closed, "the session closed on leaving the with block")
    print(f"{'ALL PASS' if not failures else 'FAILED: ' + ' '.join(failures)}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Where the time of a `kerncap evaluate` run went, per candidate: its JSON lines and the
statistics it wrote (--stats). For bench/evaluate_rate.sh.

    evaluate_profile.py RUN.jsonl RUN.stats.json [--label L] [--json]

Everything is GPU-time per candidate, in ms: the run's seconds times its GPUs, over the
candidates. It splits into
  start-up   the workers' first open (spawn, import, context, reservation, restore, nvdisasm)
  restarts   GPUs waiting for a worker after a hang or a fault (a spare not yet open, or the
             ended worker not yet gone)
  judging    from the moment the worker began the candidate (handed out to an idle worker, or
             the verdict before it arrived: the next one waits in the worker's pipe) to its
             verdict in the parent, of which
    engine     Session.evaluate's own wall time (the verdict's "seconds"), by its phases
               ("phases": image, restore, spec, launch, compare, determinism, time...), the
               timing's CUPTI flushes shown inside "time"
    binding    the judge's call around it in the worker (ctypes, the options, JSON)
    pipe       the rest (pickling the verdict, the pipe back, the parent's loop)
  end        the workers closing their sessions after the last result
  other      the rest (the parent handing out, hung candidates until the time limit)
and, per kind of verdict (PASS, FAIL, a fault), the median engine time and its parts: the
timing's setup, SM clock reads, waits and CUPTI flushes, the comparison's device and host
work, a fault's time until it was seen; and the workers' open times (the pool's open_s) and
what the spares did (take-overs, spares added by "auto", when no new one was started because
the run would end before it opened).
"""
import argparse
import json
import statistics
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def steady_rate(stats):
    """Candidates per second once every GPU's worker had opened, to the last result (start-up
    and the end left out): the pool's steady_count over its time."""
    prof = stats.get("profile") or {}
    since, last = prof.get("steady_from_s"), stats.get("last_result_s")
    if since is None or not last or last <= since:
        return 0.0
    return prof.get("steady_count", 0) / (last - since)


def profile(recs, stats):
    n = max(1, len(recs))
    gpus = stats.get("gpus") or len(stats.get("devices") or {}) or 1
    prof = stats.get("profile") or {}
    total = stats["seconds"] * gpus
    out = {"candidates": len(recs), "gpus": gpus, "seconds": stats["seconds"],
           "rate": len(recs) / stats["seconds"] if stats["seconds"] else 0.0,
           "rate_to_last": len(recs) / stats["last_result_s"] if stats.get("last_result_s") else 0.0,
           # once every GPU judges: from the last worker open to the last result
           "steady_rate": steady_rate(stats),
           "restarts": stats.get("restarts", 0), "spare_takeovers": prof.get("spare_takeovers", 0)}
    startup = sum((prof.get("startup_s") or {}).values())
    restarts = prof.get("restart_wait_s", 0.0)
    busy = prof.get("busy_s", 0.0)
    # the workers closing their sessions after the last result
    end = max(0.0, stats["seconds"] - stats.get("last_result_s", stats["seconds"])) * gpus
    engine = binding = pipe = take = 0.0
    flushes = 0
    phases = {}
    for r in recs:
        v = r.get("verdict")
        if not v:
            continue
        es = v.get("seconds") or 0.0
        engine += es
        for k, s in (v.get("phases") or {}).items():
            phases[k] = phases.get(k, 0.0) + s
        oh = (v.get("timing") or {}).get("overhead") or {}
        take += oh.get("cupti_take_s", 0.0)
        flushes += oh.get("cupti_flushes", 0)
        js = r.get("judge_seconds")
        if js is not None:
            binding += max(0.0, js - es)
            pipe += max(0.0, r["seconds"] - js)
    ms = lambda s: 1e3 * s / n  # noqa: E731
    out["per_candidate_ms"] = {
        "total": ms(total), "startup": ms(startup), "restarts": ms(restarts), "judging": ms(busy),
        "engine": ms(engine), "phases": {k: ms(s) for k, s in phases.items()}, "cupti_flush": ms(take),
        "cupti_flushes": flushes / n, "binding": ms(binding), "pipe": ms(pipe),
        "end": ms(end), "other": ms(max(0.0, total - startup - restarts - busy - end))}
    out["kinds"] = kinds(recs)
    out["first_of_worker"] = first_of_worker(recs)
    opens = prof.get("open_s") or []
    out["open_s"] = {"workers": len(opens), "median": statistics.median(opens) if opens else None,
                     "max": max(opens) if opens else None}
    out["spares"] = {"takeovers": prof.get("spare_takeovers", 0), "grown": prof.get("spares_grown", 0),
                     "ending_s": prof.get("spares_ending_s")}
    return out


def kind_of(v):
    if v.get("fault"):
        return "fault"
    return v.get("result") or "?"


def kinds(recs):
    """Per kind of verdict: how many, and the medians (ms) of the engine's time and its parts."""
    by = {}
    for r in recs:
        v = r.get("verdict")
        if v:
            by.setdefault(kind_of(v), []).append(v)
    med = lambda xs: 1e3 * statistics.median(xs) if xs else None  # noqa: E731
    out = {}
    for k, vs in sorted(by.items()):
        t = [v.get("timing") or {} for v in vs]
        oh = [x.get("overhead") or {} for x in t]
        cw = [v.get("compare_work") or {} for v in vs]
        ph = {}
        for v in vs:
            for name, sec in (v.get("phases") or {}).items():
                ph.setdefault(name, []).append(sec)
        out[k] = {"count": len(vs), "engine_ms": med([v.get("seconds") or 0.0 for v in vs]),
                  "phases_ms": {name: med(xs) for name, xs in ph.items()},
                  "timing_setup_ms": med([o.get("setup_s", 0.0) for o in oh if o]),
                  "timing_clock_ms": med([o.get("clock_s", 0.0) for o in oh if o]),
                  "timing_take_ms": med([o.get("cupti_take_s", 0.0) for o in oh if o]),
                  "timing_waits": med([o.get("waits", 0) / 1e3 for o in oh if o]),
                  "compare_ms": med([c.get("seconds", 0.0) for c in cw if c]),
                  "compare_host_ms": med([c.get("host_s", 0.0) for c in cw if c]),
                  "compare_read_back_ms": med([c.get("read_back_s", 0.0) for c in cw if c]),
                  "on_device": sum(1 for c in cw if c.get("expected_on_device")),
                  "kernel_ms": med([x.get("median_ms", 0.0) / 1e3 for x in t if x])}
    return out


def first_of_worker(recs):
    """A worker's first candidate (a spare that just took over: its first image load, timing,
    comparison in that process) against the others, PASS verdicts only: medians of the engine's
    time (ms) and how many."""
    seen, first, rest = set(), [], []
    for r in recs:  # completion order: a worker's first record is its first candidate
        v = r.get("verdict")
        pid = r.get("worker_pid")
        if pid in seen or pid is None:
            if v and v.get("result") == "PASS" and not v.get("fault"):
                rest.append(v.get("seconds") or 0.0)
            continue
        seen.add(pid)
        if v and v.get("result") == "PASS" and not v.get("fault"):
            first.append(v.get("seconds") or 0.0)
    med = lambda xs: 1e3 * statistics.median(xs) if xs else None  # noqa: E731
    return {"first_ms": med(first), "first_count": len(first), "rest_ms": med(rest), "rest_count": len(rest),
            "first_sum_ms": 1e3 * sum(first)}


def detail(p, label):
    parts = []
    for k, d in p["kinds"].items():
        ph = ", ".join(f"{n} {v:.2f}" for n, v in d["phases_ms"].items() if v is not None and v >= 0.005)
        f = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
        parts.append(f"{k} x{d['count']}: engine {f(d['engine_ms'])} ms ({ph}); timing setup {f(d['timing_setup_ms'])}, "
                     f"clock {f(d['timing_clock_ms'])}, CUPTI take {f(d['timing_take_ms'])}, waits "
                     f"{f(d['timing_waits'])}; compare {f(d['compare_ms'])} (host {f(d['compare_host_ms'])}, read back "
                     f"{f(d['compare_read_back_ms'])}, on device {d['on_device']}); kernel {f(d['kernel_ms'])} ms")
    o = p["open_s"]
    opens = "" if not o["workers"] else f"; worker open median {o['median']:.2f} s, max {o['max']:.2f} s over {o['workers']}"
    sp = p["spares"]
    spares = (f"; spares: {sp['takeovers']} take-overs, {sp['grown']} added by auto"
              + (f", none started after {sp['ending_s']:.1f} s (the run ending)" if sp["ending_s"] is not None else ""))
    fw = p["first_of_worker"]
    first = "" if fw["first_ms"] is None else (
        f"; a worker's first PASS: {fw['first_ms']:.2f} ms median over {fw['first_count']} "
        f"(sum {fw['first_sum_ms']:.0f} ms), the others {fw['rest_ms'] or 0:.2f} ms")
    return f"{label} (medians): " + " | ".join(parts) + opens + spares + first


def line(p, label):
    c = p["per_candidate_ms"]
    ph = ", ".join(f"{k} {v:.2f}" for k, v in c["phases"].items() if v >= 0.005)
    return (f"{label}: {p['candidates']} on {p['gpus']} GPU(s), {p['rate']:.1f}/s ({p['rate_to_last']:.1f}/s to the "
            f"last result, {p['steady_rate']:.1f}/s once every GPU judges); per candidate (GPU-ms) "
            f"{c['total']:.2f} = start-up {c['startup']:.2f} + restarts {c['restarts']:.2f} "
            f"({p['restarts']} restart(s), {p['spare_takeovers']} by a spare) + judging {c['judging']:.2f} "
            f"[engine {c['engine']:.2f} ({ph}; CUPTI flushes {c['cupti_flush']:.2f} ms, "
            f"{c['cupti_flushes']:.1f} per candidate) + binding {c['binding']:.2f} + pipe {c['pipe']:.2f}] "
            f"+ end {c['end']:.2f} + other {c['other']:.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("jsonl")
    ap.add_argument("stats")
    ap.add_argument("--label", default="run")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with open(a.stats) as f:
        stats = json.load(f)
    p = profile(load(a.jsonl), stats)
    print(json.dumps(p) if a.json else line(p, a.label) + "\n" + detail(p, a.label))


if __name__ == "__main__":
    sys.exit(main())

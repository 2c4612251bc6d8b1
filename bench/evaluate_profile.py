#!/usr/bin/env python3
"""Where the time of a `kerncap evaluate` run went, per candidate: its JSON lines and the
statistics it wrote (--stats). For bench/evaluate_rate.sh.

    evaluate_profile.py RUN.jsonl RUN.stats.json [--label L] [--json]

Everything is GPU-time per candidate, in ms: the run's seconds times its GPUs, over the
candidates. It splits into
  start-up   the workers' first open (spawn, import, context, reservation, restore, nvdisasm)
  restarts   GPUs waiting for a worker after a hang or a fault (a spare not yet open, or the
             ended worker not yet gone)
  judging    from hand-out to result, of which
    engine     Session.evaluate's own wall time (the verdict's "seconds"), by its phases
               ("phases": image, restore, spec, launch, compare, determinism, time...), the
               timing's CUPTI flushes shown inside "time"
    binding    the judge's call around it in the worker (ctypes, the options, JSON)
    pipe       the rest of the round trip (pickling, the pipes, the parent's loop)
  end        the workers closing their sessions after the last result
  other      the rest (the parent handing out, hung candidates until the time limit)
"""
import argparse
import json
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
    return out


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
    print(json.dumps(p) if a.json else line(p, a.label))


if __name__ == "__main__":
    sys.exit(main())

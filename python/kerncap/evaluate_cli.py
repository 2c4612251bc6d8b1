"""`kerncap evaluate OUT --images FILE_OR_DIR...`: judges many candidate images of one capture on
every GPU of this host (kerncap.evaluate_pool) and prints one JSON line per candidate on stdout
as each finishes. The C++ `kerncap evaluate` (src/cli/cmd_evaluate.cpp) execs this module with
the interpreter it finds; `python3 -m kerncap.evaluate_cli` is the same command."""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Dict, List, Optional, Union

from . import engine
from .evaluate_pool import DEFAULT_JUDGE, evaluate_many, expand_images

EPILOG = """\
Each line: {"index", "image", "result", "line", "error", "device", "device_name", "worker_pid",
"seconds", "judge_seconds", "timed_on", "verdict"} where verdict is the one judge's document (what kerncap validate
--json and Session.evaluate return, with timing when --time). Lines come in completion order;
"index" is the candidate's position in the order the images were named (a directory: its
*.cubin, *.fatbin, *.ptx files sorted by name).

One worker process per GPU opens the capture once and judges candidates one at a time from a
shared queue (holding the next one in its pipe, so it begins it as it sends a verdict); spare
workers per GPU (--spares) open it too, from the start, and take over when the judging worker
must be replaced. A candidate still running after --time-limit seconds is reported once as
"result": "FAIL", "error": "timed out after N s" and its worker is restarted; a candidate that
kills its worker (or whose fault costs it its CUDA context) is reported once ("ERROR" with the
exit, or the judge's FAIL naming the fault) and the worker is restarted. Times and speed-ups
are measured by the judge within one worker's session: "timed_on" names that GPU.

A regime set (OUT from `kerncap extract KERNEL --regimes`): every candidate is judged on every
captured regime, one regime at a time over all the GPUs, each with its speed-up against the
captured image in that regime's session (at the application's L2 state, as `kerncap validate
OUT` does); one line per candidate, its "verdict" the set's document (`kerncap validate OUT
--cubin V --json`: per-regime verdicts, the weighted speed-up, the application's projection),
"regimes" each regime's device and seconds; --min-speedup applies to the weighted speed-up and
--time-limit to each regime.

Exit codes: 0 every candidate judged (whatever the verdicts), 2 bad input (no such capture or
image, bad option), 3 no worker could open the capture (no GPU, another architecture).
Progress and a summary go to stderr (--quiet: the summary only). See docs/evaluate.md."""


def _spares(text: str) -> Union[int, str]:
    if text == "auto":
        return text
    if text in ("0", "1", "2", "3", "4"):
        return int(text)
    raise argparse.ArgumentTypeError(f"{text!r}: auto or 0..4")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kerncap evaluate", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Judge many candidate images of one capture on every GPU of this host; "
                                            "JSON lines on stdout.")
    p.add_argument("out", metavar="OUT", help="the capture directory (OUT or OUT/capture), or a regime set "
                   "(extract --regimes: every candidate judged on every regime, one verdict per candidate)")
    p.add_argument("--images", nargs="+", required=True, metavar="FILE_OR_DIR",
                   help="candidate images: files, or directories of *.cubin/*.fatbin/*.ptx")
    p.add_argument("--gpus", default="all", help="all (default) or CUDA device numbers, comma-separated: 0,1")
    p.add_argument("--time-limit", type=float, metavar="S", help="seconds a candidate may take before its worker "
                   "is killed and it is reported FAIL (default: none)")
    p.add_argument("--spares", type=_spares, default="auto", metavar="{auto,0..4}",
                   help="workers kept open per GPU beside the judging one, to take over at once after a hang or a "
                        "fault (default auto: 3 from the start, then as many, up to 4, as take-overs come while a "
                        "worker opens, for captures up to 1 GiB, as each holds a copy on the GPU (a larger one: 1); "
                        "0: a new worker opens the capture then)")
    p.add_argument("--stats", metavar="FILE", help="write the run's statistics as JSON: counts, restarts, and where "
                   "the GPUs' time went (start-up, restarts, judging; bench/evaluate_profile.py reads it)")
    g = p.add_argument_group("judging (as kerncap validate; over OUT/kerncap.toml)")
    g.add_argument("--time", action="store_true", help="time each candidate (Session.evaluate(time=True))")
    g.add_argument("--warmup", type=int, help="warm-up launches when timing")
    g.add_argument("--iterations", type=int, help="timed launches when timing (default 10)")
    g.add_argument("--dtype", help="compare every region as this type")
    g.add_argument("--atol", type=float, help="absolute tolerance")
    g.add_argument("--rtol", type=float, help="relative tolerance")
    g.add_argument("--exact", action="store_true", help="a variant must match byte for byte")
    g.add_argument("--no-determinism-check", action="store_true",
                   help="no determinism measurement of the captured kernel after a mismatch")
    g.add_argument("--invariant", help="invariants, comma-separated: no_nan, no_inf, non_negative, must_write")
    g.add_argument("--no-invariants", action="store_true", help="check no invariant")
    g.add_argument("--tolerance", action="append", metavar="REGION:atol=A,rtol=B",
                   help="per-region tolerance (repeatable)")
    g.add_argument("--min-speedup", type=float, help="FAIL a candidate slower than this over the captured image "
                   "(measured in the same session, on the same GPU)")
    g.add_argument("--speedup", action="store_true", help="report the speed-up over the captured image")
    g.add_argument("--speedup-cache", choices=("auto", "blend", "warm", "cold"),
                   help="the L2 state timings and speed-ups are taken in (as validate's; default auto, and blend "
                        "for a regime set's weighted figure)")
    g.add_argument("--fuzz", type=int, help="fuzz trials per candidate (needs the footprint)")
    g.add_argument("--seed", type=int, help="fuzzing's seed")
    o = p.add_argument_group("opening the capture")
    o.add_argument("--footprint", choices=("auto", "never"), default="auto",
                   help="auto: strong verdicts when the capture has a footprint; never: weak")
    o.add_argument("--no-relocate", action="store_true", help="fail rather than relocate a range")
    o.add_argument("--verify", action="store_true", help="check the capture's hashes on the first restore")
    p.add_argument("--judge", default=DEFAULT_JUDGE, metavar="MODULE:CALLABLE",
                   help="the judge each worker opens (default: the engine's; tests name a fake one)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr, only the summary")
    return p


def judge_options(a: argparse.Namespace) -> Dict[str, Any]:
    opts: Dict[str, Any] = {"time": a.time, "warmup": a.warmup, "iterations": a.iterations, "dtype": a.dtype,
                            "atol": a.atol, "rtol": a.rtol, "invariants": a.invariant, "tolerance": a.tolerance,
                            "min_speedup": a.min_speedup, "fuzz": a.fuzz, "seed": a.seed}
    if a.exact:
        opts["exact"] = True
    if a.no_determinism_check:
        opts["check_determinism"] = False
    if a.no_invariants:
        opts["no_invariants"] = True
    if a.speedup:
        opts["speedup"] = True
    if a.speedup_cache:
        opts["cache"] = a.speedup_cache
    return {k: v for k, v in opts.items() if v is not None}


class Progress:
    """One stderr line per restart and at most one every 2 s for results."""

    def __init__(self, total: int, quiet: bool):
        self.total, self.quiet, self.last = total, quiet, 0.0

    def __call__(self, e: Dict[str, Any]) -> None:
        if self.quiet:
            return
        total = e.get("total", self.total)  # a regime set counts candidates x regimes
        if e["event"] == "result":
            now = time.monotonic()
            if now - self.last >= 2.0 or e["done"] == total:
                self.last = now
                rate = e["done"] / e["elapsed"] if e["elapsed"] > 0 else 0.0
                what = "evaluations judged" if "regime" in e else "judged"
                print(f"kerncap evaluate: {e['done']}/{total} {what} ({rate:.1f}/s)", file=sys.stderr, flush=True)
        elif e["event"] == "regime":
            print(f"kerncap evaluate: {e['reason']}", file=sys.stderr, flush=True)
        else:
            where = f"regime {e['regime']}, " if "regime" in e else ""
            print(f"kerncap evaluate: {where}device {e['device']}: {e['event'].replace('_', ' ')}: {e['reason']}",
                  file=sys.stderr, flush=True)


def main(argv: Optional[List[str]] = None) -> int:
    a = parser().parse_args(argv)
    try:
        images = expand_images(a.images)
        open_options = {"allow_relocate": not a.no_relocate, "verify": a.verify,
                        "strong": False if a.footprint == "never" else None}
        progress = Progress(len(images), a.quiet)
        pool = evaluate_many(a.out, images, devices=a.gpus, time_limit=a.time_limit, judge=a.judge,
                             progress=progress, open_options=open_options, spares=a.spares, **judge_options(a))
        counts: Dict[str, int] = {}
        for rec in pool:
            sys.stdout.write(json.dumps(rec) + "\n")
            sys.stdout.flush()
            counts[rec["result"]] = counts.get(rec["result"], 0) + 1
    except engine.EngineError as e:
        print(f"kerncap: error: {e}", file=sys.stderr)
        return e.exit_code if e.exit_code in (engine.E_INPUT, engine.E_DEVICE) else engine.E_INTERNAL
    except KeyboardInterrupt:
        return 130
    s = pool.stats
    if a.stats:
        with open(a.stats, "w") as f:
            json.dump({**s, "gpus": len(pool.slots)}, f, indent=1)
    secs = s["seconds"] or 1e-9
    per = ", ".join(f"GPU {d}: {v['evaluated']}" for d, v in sorted(s["devices"].items()))
    verdicts = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "nothing judged"
    regimes = f" x {s['regimes']} regimes ({s['evaluations']} evaluations, {s['evaluations'] / secs:.1f}/s)" \
        if "regimes" in s else ""
    print(f"kerncap evaluate: {s['candidates']} candidates{regimes} on {len(pool.slots)} GPU(s) in {secs:.2f} s "
          f"({s['candidates'] / secs:.1f}/s): {verdicts}; {s['restarts']} worker restart(s) ({per})",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Many candidates judged on a regime set (`kerncap extract KERNEL --regimes`, OUT/regimes.json):
every candidate on every captured regime, spread over the pool's GPUs (or a Dask cluster), then
one verdict per candidate over the set, from the engine (kc_regime_verdict: the same document
`kerncap validate OUT --cubin V --json` prints, its weighted speed-up and projection).

Rules this module keeps (docs/evaluate.md, "Regime sets"):
- One judge. Each (candidate, regime) is judged by the runner's judge (the host pool's workers,
  or the Dask tasks) in that regime's own session; the set's verdict comes from the engine.
  Nothing here compares, times or weighs.
- One regime at a time across all GPUs: a GPU times one candidate at a time (a regime's workers
  never time beside another regime's), and a worker holds one regime's capture (regimes of one
  kernel are captured at overlapping addresses, so one process cannot hold two of them).
  The regimes' passes come one after the other; the set's records stream during the last pass.
- Exactly once. The runner reports each (candidate, regime) once; a candidate's record is
  yielded once, when its last regime's arrives. A regime no worker could open is, for every
  candidate it did not judge, a FAIL of that regime naming why (the set fails, named); only when
  no regime could be opened at all does the run raise.
- As validate judges a set, by the engine's policy (kc_regime_set's "judging"): each regime with
  the speed-up measured against the captured image in the same session, at the application's L2
  state unless the caller chose a cache state; min_speedup applies to the weighted figure.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from . import engine
from .record_stream import RecordStream

# run(path, images, options, progress) -> an iterator of records (evaluate_many's), with
# optional `stats` and `close()`: how one regime's candidates are judged.
RegimeRunner = Callable[[str, List[engine.ImageArg], Dict[str, Any], Optional[Callable[[Dict[str, Any]], None]]],
                        Iterator[Dict[str, Any]]]

# Per (candidate, regime): what the set's record keeps of the runner's record (its verdict goes
# into the set's document, under its regime).
_REGIME_KEYS = ("result", "line", "error", "device", "device_name", "worker_pid", "seconds", "judge_seconds",
                "timed_on", "exit_code", "host", "dask_worker", "worker_restarts")


def is_regime_set(path: str) -> bool:
    """OUT holds a regime set (or several kernels' sets: then regime_set refuses, naming them)."""
    return engine.is_regime_set(path)


def regime_options(options: Dict[str, Any], judging: Dict[str, Any]) -> Dict[str, Any]:
    """Each regime's judging options from the caller's and the engine's policy for sets
    (kc_regime_set's "judging", replay/regime_verdict.hpp: the one `kerncap validate OUT` gives
    its children): the speed-up measured, at its cache state unless the caller chose one;
    min_speedup taken out (it applies to the weighted figure)."""
    o = dict(options)
    if judging.get("min_speedup") == "weighted":
        o.pop("min_speedup", None)
    if judging.get("speedup"):
        o["speedup"] = True
    if judging.get("cache"):
        o.setdefault("cache", judging["cache"])
    return o


class RegimeSetRun(RecordStream):
    """Iterates over one record per candidate judged on every captured regime of the set at
    `path`. Built by evaluate_many (the host pool) and kerncap.cluster.evaluate_on (Dask) with
    their own `run`; `stats` once iteration ends."""

    def __init__(self, path: str, images: Sequence[engine.ImageArg], run: RegimeRunner, options: Dict[str, Any],
                 progress: Optional[Callable[[Dict[str, Any]], None]] = None):
        self.path, self.images, self.run, self.progress = path, list(images), run, progress
        self.set = engine.regime_set(path)  # checked by the engine; raises for a damaged or multi-kernel OUT
        self.regimes = [r for r in self.set["regimes"] if r.get("captured")]
        self.min_speedup = options.get("min_speedup")
        self.options = regime_options(options, self.set.get("judging") or {})
        self.evaluations = len(self.images) * len(self.regimes)
        self.slots: List[Any] = []  # the last regime's runner's, for callers that count GPUs
        self.stats: Dict[str, Any] = {"candidates": 0, "regimes": len(self.regimes), "evaluations": 0,
                                      "devices": {}, "restarts": 0, "seconds": 0.0, "by_regime": {}}
        self._it = self._run()

    def _run(self) -> Iterator[Dict[str, Any]]:
        t0 = time.monotonic()
        from .evaluate_pool import image_label  # the pool imports this module
        labels = [image_label(im, i) for i, im in enumerate(self.images)]
        judged: Dict[int, Dict[str, Dict[str, Any]]] = {i: {} for i in range(len(self.images))}
        open_errors: List[str] = []
        done = 0
        for k, regime in enumerate(self.regimes):
            last = k == len(self.regimes) - 1
            self._event(event="regime", regime=regime["dir"], reason=f"regime {k + 1} of {len(self.regimes)}: "
                        f"{regime['dir']} ({100 * regime.get('share', 0):.1f}% of the kernel's GPU time)")
            base = done

            def forward(e: Dict[str, Any], regime: Dict[str, Any] = regime, base: int = base) -> None:
                if e.get("event") == "result":  # an evaluation, counted over the whole set
                    e = {**e, "event": "result", "done": base + e["done"], "total": self.evaluations,
                         "regime": regime["dir"], "elapsed": time.monotonic() - t0}
                else:
                    e = {**e, "regime": regime["dir"]}
                self._event(**e)

            it = self.run(regime["path"], self.images, self.options, forward)
            why = None
            try:
                for rec in it:
                    done += 1
                    self._count(rec, regime["dir"])
                    judged[rec["index"]][regime["dir"]] = rec
                    if last and len(judged[rec["index"]]) == len(self.regimes):
                        yield self._record(rec["index"], labels[rec["index"]], judged.pop(rec["index"]))
            except engine.EngineError as e:  # no worker could open this regime, or none is left
                why = f"regime {regime['dir']} could not be judged: {e}"
                open_errors.append(why)
            finally:
                stats = getattr(it, "stats", None)
                if stats is not None:
                    self.stats["by_regime"][regime["dir"]] = stats
                    self.stats["restarts"] += stats.get("restarts", 0)
                self.slots = getattr(it, "slots", self.slots)
                close = getattr(it, "close", None)
                if close is not None:
                    close()
            if why is not None:
                if len(open_errors) == len(self.regimes):
                    raise engine.EngineError("; ".join(open_errors), engine.E_DEVICE)
                for i in judged:
                    judged[i].setdefault(regime["dir"], {"index": i, "result": "ERROR", "line": f"Result: ERROR "
                                                         f"({why})", "error": why, "verdict": None})
        for i in sorted(judged):  # those the last regime's runner never reported (it could not open)
            yield self._record(i, labels[i], judged[i])
        self.stats["seconds"] = time.monotonic() - t0

    def _count(self, rec: Dict[str, Any], regime: str) -> None:
        self.stats["evaluations"] += 1
        d = self.stats["devices"].setdefault(str(rec.get("device")), {"evaluated": 0,
                                                                      "device_name": rec.get("device_name")})
        d["evaluated"] += 1

    def _record(self, index: int, label: str, by_regime: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
        outcomes, regimes = [], []
        for regime in self.regimes:
            rec = by_regime[regime["dir"]]
            outcomes.append({"dir": regime["dir"], "verdict": rec.get("verdict"),
                             "error": rec.get("error") or rec.get("line") or "no verdict"})
            regimes.append({"dir": regime["dir"], **{k: rec[k] for k in _REGIME_KEYS if k in rec}})
        doc = engine.regime_verdict(self.path, outcomes, min_speedup=self.min_speedup,
                                    variant=self.images[index] is not None)
        devices = sorted({r.get("device") for r in regimes if r.get("device") is not None})
        self.stats["candidates"] += 1
        secs = [r.get("seconds") or 0.0 for r in regimes]
        jsecs = [r.get("judge_seconds") for r in regimes]
        # No regime gave a verdict (the image was refused everywhere, its workers all died): the
        # candidate has none either, as a lone capture's record says (ERROR, the first reason).
        unjudged = all(by_regime[r["dir"]].get("verdict") is None for r in self.regimes)
        first = by_regime[self.regimes[0]["dir"]]
        result, line, error = doc["result"], doc["line"], None
        if unjudged and all(by_regime[r["dir"]].get("result") == "ERROR" for r in self.regimes):
            error = first.get("error") or "no verdict"
            result, line = "ERROR", f"Result: ERROR (no regime gave a verdict: {error})"
        rec = {"index": index, "image": label, "result": result, "line": line, "error": error,
                "device": devices[0] if len(devices) == 1 else None, "devices": devices,
                "device_name": next((r.get("device_name") for r in regimes if r.get("device_name")), None),
                "worker_pid": None, "seconds": round(sum(secs), 6),
                "judge_seconds": round(sum(j for j in jsecs if j is not None), 6) if all(j is not None for j in jsecs)
                else None,
                # Per regime: the GPU that timed it; each regime's speed-up is against the captured
                # image in that regime's session on that GPU.
                "timed_on": {r["dir"]: r.get("timed_on") for r in regimes},
                "regimes": regimes, "verdict": doc}
        if unjudged and "exit_code" in first:
            rec["exit_code"] = first["exit_code"]
        return rec

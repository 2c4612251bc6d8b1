"""The shim's records (OUT/triton/records/<pid>.jsonl) read back, and matched to a capture.

The captured code image is the cubin Triton (or Inductor's static launcher) handed to
cuModuleLoadData, so the kernel is identified by the image's sha256 and nothing else:
- a compile record with that cubin sha256, whichever process wrote it (Inductor compiles in
  worker processes); one written by triton.compile itself (a cache hit included) before one
  rebuilt on Inductor's load path ("via": "inductor load", caches warm);
- else a load record with that sha256 (Triton's kernel_load_end_hook, Inductor's static
  launcher) names the Triton compile hash, and a compile record of that hash is used.
Same-named compilations are never guessed between: when nothing binds, the error says what was
recorded and why the image cannot be placed. The one exception is a compile record that has no
image hash at all (older shims): it is used when it is the only compilation of that name and
fits the launch, with a warning.
Pure stdlib; unit tested without a GPU.
"""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import capture, out_layout as L

MAP_FORMAT = "kerncap-triton-map"
MAP_VERSION = 1
RECORD_VERSION = 1


class RecordError(Exception):
    """No usable record for the captured kernel."""


class NotATritonKernel(RecordError):
    """No record names the captured kernel at all: most likely it is not a Triton kernel (a
    cuBLAS or PyTorch kernel in a Python application)."""


@dataclass
class Records:
    compiles: List[dict] = field(default_factory=list)
    autotunes: List[dict] = field(default_factory=list)
    loads: List[dict] = field(default_factory=list)
    benches: List[dict] = field(default_factory=list)
    shim: List[dict] = field(default_factory=list)
    errors: List[dict] = field(default_factory=list)
    unreadable: int = 0


def load(triton_dir: str) -> Records:
    r = Records()
    for path in sorted(glob.glob(os.path.join(triton_dir, L.TRITON_RECORDS, "*.jsonl"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    r.unreadable += 1  # a process killed mid-write
                    continue
                if not isinstance(rec, dict) or rec.get("version", 0) > RECORD_VERSION:
                    r.unreadable += 1
                    continue
                {"compile": r.compiles, "load": r.loads, "autotune": r.autotunes, "bench": r.benches, "shim": r.shim,
                 "error": r.errors}.get(rec.get("kind"), []).append(rec)
    return r


@dataclass
class Match:
    record: dict
    how: str                 # "cubin sha256" | "load record" | "kernel name"
    warnings: List[str]


def _fits(rec: dict, m: capture.Manifest) -> bool:
    o = rec.get("options", {})
    nw, shared = o.get("num_warps"), o.get("shared")
    if nw is not None and nw * 32 != m.block[0]:
        return False
    return shared is None or shared == m.shared_mem_bytes


def _preferred(recs: List[dict]) -> dict:
    """Among records of one compilation: one written by triton.compile (the real ASTSource)
    before one rebuilt on Inductor's load path; the latest of those."""
    compiled = [c for c in recs if not c.get("via")]
    return (compiled or recs)[-1]


def match(records: Records, m: capture.Manifest, image_sha256: str) -> Match:
    exact = [c for c in records.compiles if c.get("cubin_sha256") == image_sha256]
    with_source = [c for c in exact if c.get("source_kind") == "ast"]
    if with_source:
        return Match(_preferred(with_source), "cubin sha256", [])
    if exact:
        raise RecordError(f"the captured kernel {m.mangled} was compiled from IR ({exact[-1].get('ir_path')}), not "
                          "from a @triton.jit function: there is no Python source to reproduce it from")
    loads = [ld for ld in records.loads if ld.get("cubin_sha256") == image_sha256]
    hashes = {ld.get("hash") for ld in loads if ld.get("hash")}
    by_hash = [c for c in records.compiles if c.get("hash") in hashes and c.get("source_kind") == "ast"]
    if by_hash:
        return Match(_preferred(by_hash), "load record", [])
    if not records.compiles and not records.loads:
        raise NotATritonKernel("no Triton compile or kernel load was recorded: was the application run by `kerncap "
                          "extract` with the Triton shim (KERNCAP_TRITON_OUT and PYTHONPATH set), and does it use "
                          "Triton? (python -S / -I skip sitecustomize)")
    short = image_sha256[:16]
    if loads:
        vias = sorted({ld.get("via") or "?" for ld in loads})
        raise RecordError(f"the captured image (sha256 {short}...) of {m.mangled} was loaded through "
                          f"{', '.join(vias)} as Triton compilation {', '.join(sorted(hashes)) or '(no hash)'}, but "
                          "no record of that compilation carries its source: it was compiled where the shim was not "
                          "active and loaded through a path whose compile record could not be rebuilt (see "
                          "name_map.json's shim_errors). Rerun with the caches cold (a fresh TRITON_CACHE_DIR and "
                          "TORCHINDUCTOR_CACHE_DIR, or TORCHINDUCTOR_FORCE_DISABLE_CACHES=1)")
    named = [c for c in records.compiles if c.get("name") == m.mangled]
    if not named:
        names = sorted({c.get("name") or "?" for c in records.compiles + records.loads})
        raise NotATritonKernel(f"the captured kernel {m.mangled} is not among the {len(names)} Triton kernels the "
                          f"application compiled or loaded ({', '.join(names[:12])}{' ...' if len(names) > 12 else ''}):"
                          " it is not a Triton kernel, or it was compiled and loaded by a process or through a path "
                          "the shim does not see")
    unhashed = [c for c in named if not c.get("cubin_sha256") and c.get("source_kind") == "ast"]
    if len(named) == 1 and unhashed and _fits(unhashed[0], m):
        return Match(unhashed[0], "kernel name", [
            f"the only compile record of {m.mangled} has no image hash (written by an older shim?); it fits the "
            "launch's warps and shared memory, so it is used: check the result"])
    others = sorted({(c.get("hash") or "?")[:12] for c in named})
    raise RecordError(f"{len(named)} compilation record(s) of {m.mangled} (Triton hashes {', '.join(others)}) were "
                      f"written, but none produced the captured image (sha256 {short}...) and no load of it was "
                      "recorded; kerncap does not guess among same-named compilations. The image was compiled or "
                      "loaded where the shim was not active (a process started without it, or a cache path it "
                      "does not hook)")


def autotune_for(records: Records, rec: dict) -> Optional[dict]:
    """The autotuner's choice that produced the matched kernel, if it was autotuned."""
    by_hash = [a for a in records.autotunes if a.get("kernel_hash") and a.get("kernel_hash") == rec.get("hash")]
    if by_hash:
        return by_hash[-1]
    consts = {}
    names = rec.get("arg_names", [])
    for path, v in rec.get("constants", []):
        if len(path) == 1 and path[0] < len(names):
            consts[names[path[0]]] = v
    o = rec.get("options", {})
    for a in reversed(records.autotunes):
        if a.get("name") != rec.get("name"):
            continue
        best = a.get("best", {})
        if all(consts.get(k) == v for k, v in best.get("kwargs", {}).items()) and \
                all(best.get(k) in (None, o.get(k)) for k in ("num_warps", "num_stages", "num_ctas")):
            return a
    return None


def python_path(rec: dict) -> dict:
    """Where the application found the kernel's module and its imports: the module's package
    root and sys.path when it compiled (shim records of this version; empty for older ones)."""
    return {"package_root": rec.get("fn", {}).get("package_root"), "sys_path": list(rec.get("sys_path") or [])}


def name_map(records: Records, m: capture.Manifest, image_sha256: str, found: Optional[Match],
             autotune: Optional[dict]) -> dict:
    """OUT/triton/name_map.json: every compiled kernel by name, and which one was captured."""
    kernels: Dict[str, list] = {}
    for c in records.compiles:
        o = c.get("options", {})
        kernels.setdefault(c.get("name", "?"), []).append({
            "hash": c.get("hash"), "cubin_sha256": c.get("cubin_sha256"), "pid": c.get("pid"),
            "function": c.get("fn", {}).get("qualname"), "file": c.get("fn", {}).get("file"),
            "num_warps": o.get("num_warps"), "num_stages": o.get("num_stages"), "num_ctas": o.get("num_ctas"),
            "shared": o.get("shared"), "cache_hit": c.get("cache_hit"), "via": c.get("via") or "triton.compile"})
    bench: Dict[str, dict] = {}
    for b in records.benches:
        e = bench.setdefault(b.get("name", "?"), {"benchmarks": 0, "launches": 0, "ignored_by_kerncap": True})
        e["benchmarks"] += 1
        e["launches"] += b.get("launches") or 0
        e["ignored_by_kerncap"] = e["ignored_by_kerncap"] and bool(b.get("ignored"))
    handshake = [s.get("available") for s in records.shim if s.get("event") == "ignore_handshake"]
    return {
        "format": MAP_FORMAT, "version": MAP_VERSION,
        "capture": {"kernel": m.mangled, "image": m.image_file, "image_sha256": image_sha256,
                    "grid": list(m.grid), "block": list(m.block), "shared_mem_bytes": m.shared_mem_bytes},
        "captured": None if found is None else {
            "how": found.how, "hash": found.record.get("hash"), "pid": found.record.get("pid"),
            "function": found.record.get("fn"), "warnings": found.warnings},
        "autotune": autotune,
        "python_path": None if found is None else python_path(found.record),
        "kernels": kernels,
        "loads": [{k: ld.get(k) for k in ("name", "hash", "cubin_sha256", "via", "pid")} for ld in records.loads][:200],
        "benchmarks": bench,
        "ignore_handshake": handshake[-1] if handshake else None,
        "shim_errors": [e.get("where", "") + ": " + e.get("error", "") for e in records.errors][:20],
        "unreadable_records": records.unreadable,
    }

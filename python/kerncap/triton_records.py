"""The shim's records (OUT/triton/records/<pid>.jsonl) read back, and matched to a capture.

The captured code image is the cubin Triton handed to cuModuleLoadData, so the compile record
whose cubin sha256 equals the image's is the captured kernel, whichever process compiled it
(Inductor compiles in worker processes). Without an exact match, a record of the same kernel
name whose warps and shared memory fit the launch is used, with a warning.
Pure stdlib; unit tested without a GPU.
"""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import capture

MAP_FORMAT = "kerncap-triton-map"
MAP_VERSION = 1
RECORD_VERSION = 1


class RecordError(Exception):
    """No usable record for the captured kernel."""


@dataclass
class Records:
    compiles: List[dict] = field(default_factory=list)
    autotunes: List[dict] = field(default_factory=list)
    benches: List[dict] = field(default_factory=list)
    shim: List[dict] = field(default_factory=list)
    errors: List[dict] = field(default_factory=list)
    unreadable: int = 0


def load(triton_dir: str) -> Records:
    r = Records()
    for path in sorted(glob.glob(os.path.join(triton_dir, "records", "*.jsonl"))):
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
                {"compile": r.compiles, "autotune": r.autotunes, "bench": r.benches, "shim": r.shim,
                 "error": r.errors}.get(rec.get("kind"), []).append(rec)
    return r


@dataclass
class Match:
    record: dict
    how: str                 # "cubin sha256" | "kernel name"
    warnings: List[str]


def _fits(rec: dict, m: capture.Manifest) -> bool:
    o = rec.get("options", {})
    nw, shared = o.get("num_warps"), o.get("shared")
    if nw is not None and nw * 32 != m.block[0]:
        return False
    return shared is None or shared == m.shared_mem_bytes


def match(records: Records, m: capture.Manifest, image_sha256: str) -> Match:
    exact = [c for c in records.compiles if c.get("cubin_sha256") == image_sha256]
    with_source = [c for c in exact if c.get("source_kind") == "ast"]
    if with_source:
        return Match(with_source[-1], "cubin sha256", [])
    if exact:
        raise RecordError(f"the captured kernel {m.mangled} was compiled from IR ({exact[-1].get('ir_path')}), not "
                          "from a @triton.jit function: there is no Python source to reproduce it from")
    named = [c for c in records.compiles if c.get("name") == m.mangled and c.get("source_kind") == "ast"]
    fitting = [c for c in named if _fits(c, m)]
    hashes = {c.get("hash") for c in fitting}
    if len(hashes) == 1:
        return Match(fitting[-1], "kernel name", [
            f"no compile record has the captured image's sha256 ({image_sha256[:16]}...); using the record of "
            f"{m.mangled} whose warps and shared memory fit the launch"])
    if not records.compiles:
        raise RecordError("no Triton compile was recorded: was the application run by `kerncap extract` with the "
                          "Triton shim (KERNCAP_TRITON_OUT and PYTHONPATH set), and does it use Triton? "
                          "(python -S / -I skip sitecustomize)")
    if not named:
        names = sorted({c.get("name", "?") for c in records.compiles})
        raise RecordError(f"the captured kernel {m.mangled} is not among the {len(names)} Triton kernels the "
                          f"application compiled ({', '.join(names[:12])}{' ...' if len(names) > 12 else ''}): "
                          "it is not a Triton kernel, or it was loaded from a cache without compiling "
                          "(for torch.compile set TORCHINDUCTOR_FORCE_DISABLE_CACHES=1)")
    raise RecordError(f"{len(hashes)} different compilations of {m.mangled} fit the launch and none has the "
                      "captured image's sha256; cannot tell which one was captured")


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
            "shared": o.get("shared"), "cache_hit": c.get("cache_hit")})
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
        "benchmarks": bench,
        "ignore_handshake": handshake[-1] if handshake else None,
        "shim_errors": [e.get("where", "") + ": " + e.get("error", "") for e in records.errors][:20],
        "unreadable_records": records.unreadable,
    }

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

import errno
import glob
import json
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import capture, out_layout as L
from .errors import EXIT_INPUT, KerncapInputError

MAP_FORMAT = "kerncap-triton-map"
MAP_VERSION = 1
RECORD_VERSION = 1


class RecordError(Exception):
    """No usable record for the captured kernel."""


class NotATritonKernel(RecordError):
    """No record names the captured kernel at all: most likely it is not a Triton kernel (a
    cuBLAS or PyTorch kernel in a Python application)."""


class RecordsFileError(RecordError, KerncapInputError):
    """A records file that cannot be read as one (a FIFO, a device, a link, a directory, a file
    or a line past the bounds): OUT is untrusted input (it travels with bug reports). Both a
    RecordError (the Triton generator's exit 2) and the API's KerncapInputError."""

    def __init__(self, message: str, path: str = ""):
        KerncapInputError.__init__(self, message, EXIT_INPUT, ["triton_records.load", path] if path else [])


# Bounds on what the shim writes: one JSON object per line, a few KiB each (a compile record
# with its constants and sys.path), a few thousand per process in a large Inductor run.
MAX_RECORDS_FILE_BYTES = 256 << 20
MAX_RECORD_LINE_BYTES = 4 << 20
MAX_RECORD_DEPTH = 64       # the shim's records nest a few levels (autotune configs: 4)
MAX_PROBLEMS_KEPT = 20

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def _json_depth(line: str) -> int:
    """The deepest nesting of arrays and objects in a JSON text (strings skipped): checked before
    json.loads, whose recursion a line nested 100,000 deep exhausts, and so that no later
    recursive walk (json.dump of name_map.json) meets a deep record."""
    depth = deepest = 0
    for b in _JSON_BRACKET.findall(_JSON_STRING.sub("", line)):
        if b in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_RECORD_DEPTH:
                    break
        elif depth:
            depth -= 1
    return deepest


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(e, str) for e in v)


def _constants(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(e, list) and len(e) == 2 and isinstance(e[0], list)
                                       and all(_int(i) for i in e[0]) for e in v)


# The fields this reader (and the reproducer generator after it) uses, and the types each
# accepts; None (JSON null) reads as an absent field for every one of them.
_SCALAR_STR = ("kind", "name", "hash", "cubin_sha256", "source_kind", "via", "ir_path", "kernel_hash", "event",
               "where", "error", "source")
_SCALAR_INT = ("version", "launches")  # "pid" is only shown (as text, escaped)
_OPTION_INT = ("num_warps", "num_stages", "num_ctas", "shared")


def _type_problem(rec: dict) -> Optional[str]:
    """What is wrong with a record's field types (the first thing found), or None."""
    for k in _SCALAR_STR:
        if rec.get(k) is not None and not isinstance(rec[k], str):
            return f"field '{k}' is {type(rec[k]).__name__}, expected a string"
    for k in _SCALAR_INT:
        if rec.get(k) is not None and not _int(rec[k]):
            return f"field '{k}' is {type(rec[k]).__name__}, expected an integer"
    checks: List[Tuple[str, Any, str]] = [
        ("options", lambda v: isinstance(v, dict), "an object"),
        ("fn", lambda v: isinstance(v, dict), "an object"),
        ("best", lambda v: isinstance(v, dict), "an object"),
        ("signature", lambda v: isinstance(v, dict), "an object"),
        ("arg_names", _str_list, "a list of strings"),
        ("constexpr_params", _str_list, "a list of strings"),
        ("sys_path", _str_list, "a list of strings"),
        ("constants", _constants, "a list of [path of integers, value] pairs"),
        ("attrs", lambda v: isinstance(v, list), "a list"),
    ]
    for k, ok, want in checks:
        if rec.get(k) is not None and not ok(rec[k]):
            return f"field '{k}' is not {want}"
    for k in _OPTION_INT:
        v = (rec.get("options") or {}).get(k)
        if v is not None and not _int(v):
            return f"field 'options.{k}' is {type(v).__name__}, expected an integer"
    for k in ("qualname", "file", "package_root", "module", "name"):
        v = (rec.get("fn") or {}).get(k)
        if v is not None and not isinstance(v, str):
            return f"field 'fn.{k}' is {type(v).__name__}, expected a string"
    kwargs = (rec.get("best") or {}).get("kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        return "field 'best.kwargs' is not an object"
    return None


def _normalized(rec: dict) -> dict:
    """The record with its null fields dropped, so that `.get(k, default)` reads them as absent
    (the shim writes null for what it could not learn)."""
    rec = {k: v for k, v in rec.items() if v is not None}
    if isinstance(rec.get("best"), dict) and "kwargs" in rec["best"] and rec["best"]["kwargs"] is None:
        rec["best"] = {k: v for k, v in rec["best"].items() if k != "kwargs"}
    return rec


def _open_records_file(path: str):
    """A binary reader of `path`, which must be a regular file (not a link, FIFO, device or
    directory: opened without following a link and without blocking, checked on the open
    descriptor) of at most MAX_RECORDS_FILE_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise RecordsFileError(f"Triton records file {path} is a symbolic link; refusing to follow it (the "
                                   "shim writes plain files)", path) from None
        raise RecordsFileError(f"cannot open the Triton records file {path}: {e.strerror}", path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode)
                    else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a file")
            raise RecordsFileError(f"Triton records file {path} is {what}, not a regular file", path)
        if st.st_size > MAX_RECORDS_FILE_BYTES:
            raise RecordsFileError(f"Triton records file {path} has {st.st_size} bytes, more than the "
                                   f"{MAX_RECORDS_FILE_BYTES} this reader accepts", path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@dataclass
class Records:
    compiles: List[dict] = field(default_factory=list)
    autotunes: List[dict] = field(default_factory=list)
    loads: List[dict] = field(default_factory=list)
    benches: List[dict] = field(default_factory=list)
    shim: List[dict] = field(default_factory=list)
    errors: List[dict] = field(default_factory=list)
    unreadable: int = 0
    problems: List[str] = field(default_factory=list)  # "FILE:LINE: why", the first MAX_PROBLEMS_KEPT


def _skip_rest_of_line(f) -> None:
    while True:
        chunk = f.readline(1 << 20)
        if not chunk or chunk.endswith(b"\n"):
            return


def load(triton_dir: str) -> Records:
    """Every record of OUT/triton/records/*.jsonl. A line that is not a record (cut short by a
    killed process, not JSON, nested deeper than MAX_RECORD_DEPTH, longer than
    MAX_RECORD_LINE_BYTES, a field of the wrong type, a newer version) is counted in
    `unreadable` and described in `problems`; a file that is not a regular file of bounded size
    raises RecordsFileError."""
    r = Records()

    def unreadable(path: str, lineno: int, why: str) -> None:
        r.unreadable += 1
        if len(r.problems) < MAX_PROBLEMS_KEPT:
            r.problems.append(f"{path}:{lineno}: {why}")

    records_dir = os.path.join(triton_dir, L.TRITON_RECORDS)
    for d in (triton_dir, records_dir):  # OUT/triton and its records: plain directories inside OUT
        if os.path.islink(d):
            raise RecordsFileError(f"Triton records directory {d} is a symbolic link; refusing to follow it (the "
                                   "shim writes plain directories inside OUT)", d)
    for path in sorted(glob.glob(os.path.join(records_dir, "*.jsonl"))):
        read = 0
        with _open_records_file(path) as f:
            lineno = 0
            while True:
                raw = f.readline(MAX_RECORD_LINE_BYTES + 1)
                if not raw:
                    break
                lineno += 1
                read += len(raw)
                if len(raw) > MAX_RECORD_LINE_BYTES:
                    _skip_rest_of_line(f)
                    unreadable(path, lineno, f"a line longer than {MAX_RECORD_LINE_BYTES} bytes")
                    continue
                if read > MAX_RECORDS_FILE_BYTES:  # it grew while read
                    raise RecordsFileError(f"Triton records file {path} has more than the {MAX_RECORDS_FILE_BYTES} "
                                           "bytes this reader accepts", path)
                line = raw.decode("utf-8", errors="replace")
                if _json_depth(line) > MAX_RECORD_DEPTH:
                    unreadable(path, lineno, f"nested deeper than {MAX_RECORD_DEPTH} levels")
                    continue
                try:
                    rec = json.loads(line)
                except (ValueError, RecursionError) as e:  # JSONDecodeError: a process killed mid-write
                    unreadable(path, lineno, f"not JSON ({str(e)[:100]})")
                    continue
                if not isinstance(rec, dict):
                    unreadable(path, lineno, "not a JSON object")
                    continue
                why = _type_problem(rec)
                if why is not None:
                    unreadable(path, lineno, why)
                    continue
                if (rec.get("version") or 0) > RECORD_VERSION:
                    unreadable(path, lineno, f"record version {rec['version']}, newer than this reader's "
                                             f"{RECORD_VERSION}")
                    continue
                {"compile": r.compiles, "load": r.loads, "autotune": r.autotunes, "bench": r.benches, "shim": r.shim,
                 "error": r.errors}.get(rec.get("kind") or "", []).append(_normalized(rec))
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

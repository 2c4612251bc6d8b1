"""The launch plan of a captured Triton kernel: which Python argument comes from which captured
parameter slot, how its bytes decode, which values are pinned constexprs, and which element
type each pointer argument gives the memory it points into (OUT/compare.json, read by the
replay engine's comparison).

Pure stdlib (no triton, no torch): unit tested without a GPU, and copied into each reproducer.

Triton 3.6 on NVIDIA (triton/backends/nvidia/driver.py, make_launcher): the kernel's parameters
are the leaves of the signature whose type is not "constexpr", in order (tuples flattened), then
two pointers Triton appends itself (global scratch, profile scratch). Scalars are stored as
ty_to_cpp says (fp16/bf16 as 16-bit storage, fp32 as 32-bit), pointers as 8-byte addresses.
"""
from __future__ import annotations

import json
import keyword
import math
import os
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

PLAN_FORMAT = "kerncap-triton-launch"
PLAN_VERSION = 1


class PlanError(Exception):
    """The record and the capture do not fit together (or use something not supported yet)."""


# Scalar parameter types: struct format (little endian) of the stored bytes.
_SCALAR = {
    "i1": "b", "i8": "b", "i16": "h", "i32": "i", "i64": "q",
    "u1": "B", "u8": "B", "u16": "H", "u32": "I", "u64": "Q",
    "fp16": "e", "bf16": "H", "fp32": "f", "f32": "f", "fp64": "d",
}

# Element types behind pointers: (bytes, torch dtype name, the replay engine's dtype name for
# comparison — compare::dtype_from_string; its one tolerance table decides what passes).
# Triton's AMD fp8 variants (fnuz) have no engine type: compared as bytes.
ELEMENT = {
    "fp64": (8, "float64", "fp64"), "fp32": (4, "float32", "fp32"), "f32": (4, "float32", "fp32"),
    "fp16": (2, "float16", "fp16"), "bf16": (2, "bfloat16", "bf16"),
    "fp8e4nv": (1, "float8_e4m3fn", "fp8e4m3"), "fp8e5": (1, "float8_e5m2", "fp8e5m2"),
    "fp8e4b8": (1, "float8_e4m3fnuz", "bytes"), "fp8e5b16": (1, "float8_e5m2fnuz", "bytes"),
    "i1": (1, "bool", "u8"), "i8": (1, "int8", "i8"), "i16": (2, "int16", "i16"),
    "i32": (4, "int32", "i32"), "i64": (8, "int64", "i64"),
    "u8": (1, "uint8", "u8"), "u16": (2, "uint16", "u16"), "u32": (4, "uint32", "u32"),
    "u64": (8, "uint64", "u64"),
}


def is_pointer(ty: str) -> bool:
    return isinstance(ty, str) and ty.startswith("*")


def element_of(ty: str) -> str:
    """'*fp16' -> 'fp16', '*kfp32' (const pointer) -> 'fp32'."""
    e = ty[1:]
    if e.startswith("k") and e[1:] in ELEMENT:
        e = e[1:]
    return e


def scalar_size(ty: str) -> int:
    if is_pointer(ty):
        return 8
    if ty not in _SCALAR:
        raise PlanError(f"parameter type {ty!r} is not supported by the reproducer yet "
                        "(tensor descriptors and TMA arguments are not)")
    return struct.calcsize("<" + _SCALAR[ty])


def decode_scalar(ty: str, raw: bytes) -> Any:
    """Bytes of one parameter slot -> the Python value Triton would be called with."""
    if is_pointer(ty):
        return struct.unpack("<Q", raw[:8])[0]
    fmt = _SCALAR.get(ty)
    if fmt is None:
        raise PlanError(f"parameter type {ty!r} is not supported by the reproducer yet")
    v = struct.unpack("<" + fmt, raw[:struct.calcsize("<" + fmt)])[0]
    if ty == "bf16":
        return struct.unpack("<f", struct.pack("<I", v << 16))[0]
    if ty == "u1":
        return bool(v)
    return v


# ---- values recorded by the shim (JSON) -> Python -------------------------------------------
def decode_value(v: Any, resolve=None) -> Any:
    """The shim's JSON form of a constexpr value -> Python. `resolve(kind, text)` turns
    {"dtype": "fp16"} / {"jit_function": "mod.name"} into objects (needs triton)."""
    if isinstance(v, dict):
        if "tuple" in v:
            return tuple(decode_value(x, resolve) for x in v["tuple"])
        if "float" in v:
            return float(v["float"])
        for kind in ("dtype", "jit_function"):
            if kind in v:
                if resolve is None:
                    raise PlanError(f"constexpr {v} needs triton to be rebuilt")
                return resolve(kind, v[kind])
        raise PlanError(f"constexpr value {v.get('repr', v)} cannot be rebuilt outside the application")
    return v


class UnsafeName(PlanError):
    """A name from the capture that cannot be written into generated Python as code."""


def python_identifier(name: str, what: str) -> str:
    """`name` when it is a plain Python identifier (so it can be written into kernel_variant.py
    as code); else UnsafeName: a capture is untrusted input and must not inject code."""
    if not (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)):
        raise UnsafeName(f"{what} name {name!r} in the capture is not a Python identifier; refusing to "
                         "write it into generated code")
    return name


def python_module(name: str, what: str) -> str:
    """A dotted module path whose every part is an identifier (see python_identifier)."""
    for part in str(name).split("."):
        python_identifier(part, what)
    return name


def python_literal(v: Any) -> str:
    """A decoded constexpr value as Python source for kernel_variant.py's CONFIG."""
    if isinstance(v, dict):
        if "tuple" in v:
            items = [python_literal(x) for x in v["tuple"]]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        # Strings from the capture (untrusted) become string literals; names must be identifiers.
        if "float" in v:
            return f'float({json.dumps(str(v["float"]))})'
        if "dtype" in v:
            return f'tl.dtype({json.dumps(str(v["dtype"]))})'
        if "jit_function" in v:
            return python_identifier(str(v["jit_function"]).rsplit(".", 1)[-1], "a constexpr JIT function")
        return repr(v.get("repr"))
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return f'float("{v}")'
    return repr(v)


# ---- signature ---------------------------------------------------------------------------
def leaves(sig_value: Any, path: Tuple[int, ...]) -> List[Tuple[Tuple[int, ...], str]]:
    """A signature entry (a type string, or a list for a tuple argument) -> (path, type) leaves."""
    if isinstance(sig_value, (list, tuple)):
        out = []
        for i, s in enumerate(sig_value):
            out += leaves(s, path + (i,))
        return out
    return [(path, sig_value)]


@dataclass
class Arg:
    """One leaf of the kernel's Python arguments."""
    path: Tuple[int, ...]        # (param index,) or deeper for tuple arguments
    name: str                    # the parameter's name (with [i] for tuple members)
    type: str                    # Triton type: "*fp16", "i32", "constexpr", ...
    slot: Optional[int] = None   # captured parameter slot for runtime arguments
    value: Any = None            # decoded scalar / pointer address / constexpr (JSON form)
    declared_constexpr: bool = False  # `x: tl.constexpr` in the source (else specialised by value)


@dataclass
class Plan:
    kernel: str                  # the function's name (the cubin symbol)
    arg_names: List[str]
    args: List[Arg]
    extra_slots: int             # trailing slots Triton adds (global/profile scratch)
    options: Dict[str, Any]
    programs: Tuple[int, int, int]
    num_ctas: int
    notes: List[str] = field(default_factory=list)

    def runtime(self) -> List[Arg]:
        return [a for a in self.args if a.slot is not None]

    def pointers(self) -> List[Arg]:
        return [a for a in self.args if a.slot is not None and is_pointer(a.type)]

    def constexprs(self) -> Dict[str, Any]:
        """Top-level constexpr parameters (declared or specialised) by name, JSON form."""
        return {a.name: a.value for a in self.args if a.slot is None and len(a.path) == 1}

    def to_json(self) -> dict:
        return {
            "format": PLAN_FORMAT, "version": PLAN_VERSION, "kernel": self.kernel, "arg_names": self.arg_names,
            "args": [{"path": list(a.path), "name": a.name, "type": a.type, "slot": a.slot, "value": a.value,
                      "declared_constexpr": a.declared_constexpr} for a in self.args],
            "extra_slots": self.extra_slots, "options": self.options, "programs": list(self.programs),
            "num_ctas": self.num_ctas, "notes": self.notes,
        }


def plan_from_json(j: dict) -> Plan:
    if j.get("format") != PLAN_FORMAT:
        raise PlanError("not a kerncap Triton launch plan")
    if j.get("version", 0) > PLAN_VERSION:
        raise PlanError(f"launch plan version {j.get('version')} is newer than this reproducer reads "
                        f"({PLAN_VERSION}); generate the reproducer again")
    args = [Arg(tuple(a["path"]), a["name"], a["type"], a["slot"], a["value"], a.get("declared_constexpr", False))
            for a in j["args"]]
    return Plan(j["kernel"], j["arg_names"], args, j["extra_slots"], j["options"], tuple(j["programs"]),
                j.get("num_ctas", 1), j.get("notes", []))


# Options passed back to Triton when launching the variant: the ones a launch site can set.
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
                  "launch_pdl", "debug", "sanitize_overflow", "default_dot_input_precision",
                  "max_num_imprecise_acc_default", "enable_reflect_ftz")


def build_plan(record: dict, slots: Sequence[Tuple[int, int]], params: bytes, grid: Sequence[int],
               block: Optional[Sequence[int]] = None) -> Plan:
    """record: the shim's compile record of the captured kernel; slots: (offset, size) of each
    captured parameter; params: params.bin; grid: the captured grid in CUDA blocks."""
    names = list(record["arg_names"])
    sig = record["signature"]
    declared = set(record.get("constexpr_params", []))
    consts = {tuple(p): v for p, v in record.get("constants", [])}
    args: List[Arg] = []
    for i, name in enumerate(names):
        if name not in sig:
            raise PlanError(f"the record's signature has no entry for parameter {name!r}")
        for path, ty in leaves(sig[name], (i,)):
            label = name + "".join(f"[{k}]" for k in path[1:])
            a = Arg(path, label, ty, declared_constexpr=name in declared)
            if ty == "constexpr":
                if path not in consts:
                    raise PlanError(f"constexpr {label} has no recorded value")
                a.value = consts[path]
            args.append(a)
    runtime = [a for a in args if a.type != "constexpr"]
    extra = len(slots) - len(runtime)
    if extra < 0:
        raise PlanError(f"the captured launch has {len(slots)} parameters but the recorded signature needs "
                        f"{len(runtime)}: the record does not belong to this capture")
    notes = []
    if extra not in (0, 2):
        notes.append(f"{extra} trailing parameter(s) beyond the signature (Triton 3.6 adds 2: scratch pointers)")
    for k, a in enumerate(runtime):
        off, size = slots[k]
        want = scalar_size(a.type)
        if size != want:
            raise PlanError(f"parameter {a.name} ({a.type}) should take {want} bytes but captured slot {k} has "
                            f"{size}: the record does not belong to this capture")
        a.slot = k
        a.value = decode_scalar(a.type, params[off:off + size])
    opts = record.get("options", {})
    num_ctas = int(opts.get("num_ctas", 1) or 1)
    options = {k: opts[k] for k in LAUNCH_OPTIONS if k in opts and opts[k] is not None}
    if grid[0] % num_ctas:
        notes.append(f"grid x {grid[0]} is not a multiple of num_ctas {num_ctas}")
    # Triton launches num_warps * 32 threads a block: another block means the capture's image
    # is not the compilation that was launched (or the kernel adds warps of its own).
    nw = opts.get("num_warps")
    if block is not None and isinstance(nw, int) and nw > 0:
        threads = int(block[0]) * int(block[1]) * int(block[2])
        if threads != nw * 32:
            notes.append(f"the captured launch has {threads} threads a block, but this compilation's num_warps {nw} "
                         f"makes {nw * 32}: the capture's code image may be another compilation of {record['name']} "
                         f"than the one launched (extract again; if it repeats, please report it)")
    programs = (grid[0] // num_ctas, grid[1], grid[2])
    return Plan(record["name"], names, args, extra, options, programs, num_ctas, notes)


# ---- comparison spans -----------------------------------------------------------------------
def compare_spec(plan: Plan, regions: Sequence[Tuple[int, int]]) -> dict:
    """How the engine compares the memory the kernel was given (kc_compare's spec, written to
    OUT/compare.json): inside each captured region (base, size), the bytes from one pointer
    argument's address up to the next pointer argument's address (or the region's end) take
    that argument's element type; the first argument in signature order names a shared
    address. Everything else compares as bytes. Tolerances are left to the engine's table."""
    spans = []
    for base, size in sorted(regions):
        owners: Dict[int, str] = {}
        for a in plan.pointers():
            if a.value and base <= a.value < base + size:
                owners.setdefault(a.value - base, element_of(a.type))
        cuts = sorted(owners) + [size]
        for off, end in zip(cuts, cuts[1:]):
            dtype = ELEMENT.get(owners[off], (1, "", "bytes"))[2]
            if dtype != "bytes" and end > off:
                spans.append({"base": hex(base + off), "size": end - off, "dtype": dtype})
    return {"dtype": "bytes", "spans": spans}


# ---- grid ----------------------------------------------------------------------------------
def add_app_paths(package_root: Optional[str], app_sys_path: Sequence[str], path: List[str]) -> List[str]:
    """Makes the application's modules importable here (kernel_variant.py does the same inline):
    the kernel's package root goes first (its own package wins over another installed copy);
    the application's other sys.path entries that this interpreter lacks go last (so they never
    shadow this interpreter's own torch/triton). Folders that no longer exist are skipped.
    Returns the entries added or moved."""
    added = []
    for p in app_sys_path:
        if p and p not in path and os.path.isdir(p):
            path.append(p)
            added.append(p)
    if package_root and os.path.isdir(package_root) and (not path or path[0] != package_root):
        if package_root in path:
            path.remove(package_root)
        path.insert(0, package_root)
        added.insert(0, package_root)
    return added


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def _affine(size_name: str, block_name: str) -> bool:
    """Does the size parameter plausibly go with this block constexpr? (M <-> BLOCK_SIZE_M,
    xnumel <-> XBLOCK, n_elements <-> BLOCK_SIZE)."""
    rem = _norm(re.sub(r"BLOCK|SIZE", "", block_name, flags=re.I))
    s = _norm(size_name)
    if not rem:
        return s in ("n", "nelements", "numel", "nelem", "size", "length", "len", "total")
    return s in (rem, rem + "numel", rem + "size", rem + "dim", "n" + rem, "num" + rem)


def is_block_name(name: str) -> bool:
    return "BLOCK" in name.upper()


def infer_grid(programs: Sequence[int], sizes: Dict[str, int], blocks: Dict[str, int]) -> List[Optional[Tuple]]:
    """For each grid axis, an expression that reproduces the captured program count from the
    kernel's own arguments, so that editing a BLOCK constexpr changes the grid with it:
    ("cdiv", size, block) or ("cdiv2", size1, block1, size2, block2), or None (keep the captured
    count). Only unambiguous matches are used; a count of 1 needs a name match (M <-> BLOCK_M) and
    is kept as it is on the y and z axes."""
    out: List[Optional[Tuple]] = []
    sizes = {k: v for k, v in sizes.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}
    blocks = {k: v for k, v in blocks.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}
    for axis, g in enumerate(programs):
        if axis > 0 and g == 1:  # a trailing 1 is the default of a shorter grid, not a cdiv
            out.append(None)
            continue
        single = [("cdiv", s, b) for s in sizes for b in blocks if cdiv(sizes[s], blocks[b]) == g]
        pairs = []
        if axis == 0 and g > 1:
            names = sorted(blocks)
            for i, b1 in enumerate(names):
                for b2 in names[i + 1:]:
                    for s1 in sizes:
                        for s2 in sizes:
                            if s1 != s2 and cdiv(sizes[s1], blocks[b1]) * cdiv(sizes[s2], blocks[b2]) == g:
                                pairs.append(("cdiv2", s1, b1, s2, b2))
        affine = [c for c in single if _affine(c[1], c[2])]
        affine += [c for c in pairs if _affine(c[1], c[2]) and _affine(c[3], c[4])]
        if len(affine) == 1:
            out.append(affine[0])
        elif g > 1 and not affine and len(single) + len(pairs) == 1:
            out.append((single + pairs)[0])
        else:
            out.append(None)
    return out


def grid_expr(axis: Optional[Tuple], captured: int) -> str:
    if axis is None:
        return str(captured)
    # Argument names come from the capture (untrusted): written as string literals, never raw.
    m = [json.dumps(str(a)) for a in axis[1:]]
    if axis[0] == "cdiv":
        return f'triton.cdiv(meta[{m[0]}], meta[{m[1]}])'
    return f'triton.cdiv(meta[{m[0]}], meta[{m[1]}]) * triton.cdiv(meta[{m[2]}], meta[{m[3]}])'


"""Windows of launches from Python (docs/window.md "Replacements"): a window capture
(`kerncap window extract`) opened for replay in this process, the replay's buffers, and its
validation with a contiguous run of operations replaced by a Python callable — a fused Triton
or torch computation standing in for several kernels — judged by the one C++ judge, the
verdict being `kerncap window validate --json`'s document. ctypes over include/kerncap/window.h
(libkerncap_replay.so, the engine engine.py loads); no replay or judging logic here.

    from kerncap import window
    with window.Window("iso/fuse") as w:             # before anything allocates device memory
        op = w.ops[1]                                  # fgemm: its parameters as launched
        h, W, out = (op.pointer(o).address for o in (24, 16, 40))
        def fused(win, stream):                        # called each time the window runs
            with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
                hh = win.tensor(h, torch.float32, (rows, d))
                ...                                    # enqueue only: no synchronisation
        r = w.validate(fused, ops=(1, 2), live_out="auto", dtype="fp32", atol=1e-4, rtol=1e-3)
        print(r["line"])

The callable gets the Window and the replay's CUstream (an int) and must enqueue its work on that
stream; `window.run_op(N, stream)` runs one of the operations it replaces as captured. It runs every time the window runs: in the judged replay, in the last-writer replay of a
FAIL, and in every timed iteration; its first call may allocate (a caching allocator warming up),
later ones should not.
"""
from __future__ import annotations

import ctypes
import json
import os
import struct
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from . import engine

_vp, _cp = ctypes.c_void_p, ctypes.c_char_p
_SIGNATURES = {
    "kc_window_open": (ctypes.c_int, [_cp, _cp, ctypes.POINTER(_vp)]),
    "kc_window_close": (None, [_vp]),
    "kc_window_info": (ctypes.c_int, [_vp, ctypes.POINTER(_vp)]),
    "kc_window_validate": (ctypes.c_int, [_vp, _cp, _vp, _vp, ctypes.POINTER(_vp)]),
    "kc_window_enqueue_op": (ctypes.c_int, [_vp, ctypes.c_uint64, ctypes.c_uint64]),
}

# The judge's keywords validate() passes through (the CLI's --dtype, --atol, --rtol, --exact).
_JUDGE_KEYS = {"dtype", "atol", "rtol", "exact"}


def _bind(lib: engine.Library) -> None:
    for name, (res, args) in _SIGNATURES.items():
        try:
            f = getattr(lib.lib, name)
        except AttributeError:
            raise engine.EngineError(f"{lib.path} has no {name}: a kerncap built before windows had a C ABI; "
                                     "rebuild kerncap", engine.E_INPUT) from None
        f.restype, f.argtypes = res, args


class Buffer:
    """A region of the window's capture where this replay placed it."""

    def __init__(self, d: Dict[str, Any]):
        self.id: int = d["id"]
        self.address: int = d["address"]
        self.captured_address: int = d["captured_address"]
        self.size: int = d["size"]
        self.kind: str = d["kind"]
        self.changed_bytes: int = d.get("changed_bytes", 0)

    def __repr__(self) -> str:
        return f"Buffer(id={self.id}, address={self.address:#x}, size={self.size}, kind={self.kind})"


class Pointer:
    """A word of a kernel's parameters that points into a region (as launched in this replay)."""

    def __init__(self, d: Dict[str, Any]):
        self.offset: int = d["offset"]          # byte offset in the parameter buffer
        self.address: int = d["address"]        # where it points in this replay
        self.region: int = d["region"]
        self.region_offset: int = d["region_offset"]

    def __repr__(self) -> str:
        return f"Pointer(offset={self.offset}, address={self.address:#x}, region={self.region}+{self.region_offset})"


class Op:
    """One operation of the window: a kernel (mangled name, geometry, parameter bytes as this
    replay launches them, the pointer words among them), a memset or a copy (dst/src/bytes)."""

    def __init__(self, d: Dict[str, Any]):
        self.index: int = d["index"]
        self.kind: str = d["kind"]
        self.mangled: str = d.get("mangled", "")
        self.grid = tuple(d.get("grid", ()))
        self.block = tuple(d.get("block", ()))
        self.params: bytes = bytes.fromhex(d.get("params", ""))
        self.pointers: List[Pointer] = [Pointer(p) for p in d.get("pointers", [])]
        self.dst: Optional[int] = d.get("dst")
        self.src: Optional[int] = d.get("src")
        self.bytes: Optional[int] = d.get("bytes")

    def pointer(self, offset: int) -> Pointer:
        """The pointer word at byte `offset` of the parameters (KeyError when it points nowhere)."""
        for p in self.pointers:
            if p.offset == offset:
                return p
        raise KeyError(f"op {self.index}: no pointer into a region at parameter offset {offset}")

    def scalar(self, fmt: str, offset: int) -> Any:
        """A scalar of the parameters: struct format `fmt` ("i", "f", "Q", ...) at byte `offset`."""
        return struct.unpack_from("<" + fmt, self.params, offset)[0]

    def __repr__(self) -> str:
        return f"Op({self.index}, {self.kind}{', ' + self.mangled if self.mangled else ''})"


# torch dtypes as the CUDA array interface's type strings (bf16 goes as int16, then viewed).
_TYPESTR = {"float32": "<f4", "float16": "<f2", "float64": "<f8", "int32": "<i4", "int64": "<i8", "int16": "<i2",
            "int8": "|i1", "uint8": "|u1", "bool": "|b1", "bfloat16": "<i2"}


class _DeviceArray:
    """A bare __cuda_array_interface__ (version 2: no stream synchronisation) over device memory."""

    def __init__(self, address: int, shape: Tuple[int, ...], typestr: str):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (address, False),
                                         "strides": None, "version": 2}


class Window:
    """A window capture opened for replay (its addresses reserved, BEFORE restorable). Open it
    before anything else in the process allocates device memory (importing torch is fine)."""

    def __init__(self, path: str, progress: bool = False, allow_relocate: bool = True,
                 lib: Optional[engine.Library] = None):
        self.path = path
        self._lib = lib or engine.load()
        _bind(self._lib)
        self._w = _vp()
        opts = json.dumps({"progress": progress, "allow_relocate": allow_relocate}).encode()
        self._lib.check(self._lib.lib.kc_window_open(os.fsencode(path), opts, ctypes.byref(self._w)), "kc_window_open")
        out = _vp()
        self._lib.check(self._lib.lib.kc_window_info(self._w, ctypes.byref(out)), "kc_window_info")
        info = self._lib.take_json(out)
        self.info = info
        self.stream: int = info["stream"]
        self.ops: List[Op] = [Op(o) for o in info["ops"]]
        self.regions: Dict[int, Buffer] = {r["id"]: Buffer(r) for r in info["regions"]}

    def __enter__(self) -> "Window":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._w.value:
            self._lib.lib.kc_window_close(self._w)
            self._w = _vp()

    def region_at(self, address: int) -> Buffer:
        """The region holding `address` in this replay (KeyError when none does)."""
        for b in self.regions.values():
            if b.address <= address < b.address + b.size:
                return b
        raise KeyError(f"no region of the window holds {address:#x}")

    def run_op(self, op: int, stream: int) -> None:
        """From inside the replacement callable only: operation `op` (one of those it replaces) as
        captured, enqueued on `stream` — a replacement that keeps one of them (a fused SiLU·mul
        keeps the GEMM between its two halves)."""
        self._lib.check(self._lib.lib.kc_window_enqueue_op(self._w, int(op), int(stream)), "kc_window_enqueue_op")

    def tensor(self, address: int, dtype: Any, shape: Iterable[int]) -> Any:
        """A torch tensor viewing the replay's device memory at `address` (contiguous, no copy),
        checked to lie inside one region."""
        import torch  # only when asked: the API itself needs no torch

        shape = tuple(int(n) for n in shape)
        name = str(dtype).replace("torch.", "")
        if name not in _TYPESTR:
            raise ValueError(f"tensor: dtype {dtype} is not one of {', '.join(sorted(_TYPESTR))}")
        itemsize = torch.empty((), dtype=dtype).element_size()
        n = 1
        for s in shape:
            n *= s
        b = self.region_at(address)
        if address + n * itemsize > b.address + b.size:
            raise ValueError(f"tensor: {n} x {itemsize} bytes at {address:#x} run past region {b.id} "
                             f"({b.size} bytes at {b.address:#x})")
        t = torch.as_tensor(_DeviceArray(address, shape, _TYPESTR[name]), device="cuda")
        return t.view(torch.bfloat16) if name == "bfloat16" else t

    def validate(self, replace: Optional[Callable[["Window", int], None]] = None, ops: Optional[Tuple[int, int]] = None,
                 name: Optional[str] = None, live_out: str = "all", swaps: Optional[Dict[int, str]] = None,
                 replace_file: Optional[str] = None, weak: bool = False, warmup: int = 3, iterations: int = 20,
                 text: bool = False, **judge: Any) -> Dict[str, Any]:
        """`kerncap window validate` with operations ops[0]..ops[1] (inclusive) replaced by
        replace(window, stream). live_out: "all", "auto" or "3,5"; swaps: {op: image path};
        replace_file: "FROM..TO=launches.json" instead of a callable; judge: dtype, atol, rtol,
        exact. Returns the verdict document (a FAIL is {"result": "FAIL", ...}); an exception
        the callable raises stops the validation and is raised here."""
        unknown = sorted(set(judge) - _JUDGE_KEYS)
        if unknown:
            raise engine.EngineError(f"validate: unknown option(s) {', '.join(unknown)} (judge options: "
                                     f"{', '.join(sorted(_JUDGE_KEYS))})", engine.E_INPUT)
        if (replace is None) != (ops is None):
            raise engine.EngineError("validate: replace and ops=(FROM, TO) go together", engine.E_INPUT)
        if not self._w.value:
            raise engine.EngineError("the window is closed", engine.E_INPUT)
        opts: Dict[str, Any] = {"live_out": live_out, "weak": weak, "warmup": warmup, "iterations": iterations,
                                "text": text}
        opts.update({k: v for k, v in judge.items() if v is not None})
        if swaps:
            opts["swaps"] = [{"op": int(k), "image": os.fspath(v)} for k, v in sorted(swaps.items())]
        if replace_file:
            opts["replace_file"] = replace_file
        failures: List[BaseException] = []
        cb = None
        if replace is not None:
            assert ops is not None
            label = name or f"the Python callable {getattr(replace, '__module__', '?')}.{getattr(replace, '__qualname__', '?')}"
            opts["replace"] = {"from": int(ops[0]), "to": int(ops[1]), "name": label}

            def trampoline(_user, stream):
                try:
                    replace(self, int(stream))
                    return 0
                except BaseException as e:  # never unwound through the engine's C++ frames
                    failures.append(e)
                    return 1
            cb = engine.LaunchFn(trampoline)
        out = _vp()
        rc = self._lib.lib.kc_window_validate(self._w, json.dumps(opts).encode(),
                                              ctypes.cast(cb, _vp) if cb else None, None, ctypes.byref(out))
        if failures:
            self._lib.take_json(out)
            raise failures[0]
        self._lib.check(rc, "kc_window_validate")
        return self._lib.take_json(out)


def validate(path: str, replace: Optional[Callable[[Window, int], None]] = None,
             ops: Optional[Tuple[int, int]] = None, **options: Any) -> Dict[str, Any]:
    """Opens the window at `path`, validates it (Window.validate's arguments) and closes it."""
    with Window(path) as w:
        return w.validate(replace, ops, **options)

"""What OUT/reproducer.py runs (copied into OUT/kerncap_repro/runtime.py by the generator).

1. BEFORE memory back at the captured addresses (cuda_vmm), before torch touches the GPU.
2. The launch arguments rebuilt from params.bin with the launch plan (triton_launch):
   pointers become torch tensors over the restored memory, scalars their captured values,
   constexprs and compile options come from kernel_variant.CONFIG / OPTIONS (the pinned
   configuration: no autotuning here).
3. kernel_variant.KERNEL launched with kernel_variant.grid(meta) programs; its cubin is
   written to OUT/candidate.cubin (+ candidate.json with its launch geometry).
4. Every captured region compared with the application's result (BEFORE + AFTER): bytes
   must match exactly except inside tensors the kernel was given, which compare by their
   element type with its tolerance (max abs/rel error reported).
5. Timing with CUDA events: the variant, then the captured kernel itself for reference.
Exit codes: 0 PASS, 1 FAIL, 2 bad input or a variant that does not compile/launch, 3 device error.
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import importlib
import importlib.util
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from . import capture, cuda_vmm, triton_launch as tlaunch

CHUNK = 256 << 20


class InputError(Exception):
    pass


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


class RawPointer:
    """A device address Triton accepts as a pointer argument (no tensor covers it)."""

    def __init__(self, addr: int, dtype: str):
        self.addr, self.dtype = addr, dtype

    def data_ptr(self) -> int:
        return self.addr


class _DeviceBytes:
    def __init__(self, addr: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (addr, False),
                                         "version": 3, "strides": None}


class Run:
    def __init__(self, out: str, opts):
        self.out, self.opts = out, opts
        self.say = (lambda *a: print(*a, file=sys.stderr)) if opts.json else print
        self.m = capture.load(out)
        with open(os.path.join(out, "triton", "launch.json")) as f:
            self.plan = tlaunch.plan_from_json(json.load(f))
        self.regions = [r for r in self.m.regions if r.kind != "global"]
        self.result: Dict[str, Any] = {"kernel": self.plan.kernel}

    # -- 1. memory ---------------------------------------------------------------------------
    def restore(self) -> None:
        t0 = time.time()
        self.space = cuda_vmm.AddressSpace(self.m.device_ordinal)
        self.pl = self.space.reserve([(r.base, r.end) for r in self.regions], not self.opts.no_relocate)
        self.space.map()
        self.rewritten = 0
        for r in self.regions:
            data = bytearray(self.m.before(r))
            self.rewritten += cuda_vmm.rewrite_words(data, r.base, self.pl.moves)
            self.space.write(self.addr(r.base), data)
        self.space.synchronize()
        import torch  # after the reservations: its allocator now keeps off the captured ranges
        torch.cuda.set_device(self.space.ordinal)
        total = sum(r.size for r in self.regions)
        self.say(f"  memory: {len(self.regions)} regions ({_human(total)}) restored in {time.time() - t0:.2f} s; "
                 f"{self.pl.blocks_at_hint} of {self.pl.blocks} 32 MiB blocks at their addresses, "
                 f"{len(self.pl.moves)} ranges relocated, {self.rewritten} pointer words rewritten")
        self.result.update(relocated_regions=len(self.pl.moves), rewritten_words=self.rewritten)

    def addr(self, a: int) -> int:
        return self.pl.translate(a)

    # -- 2. arguments ------------------------------------------------------------------------
    def tensor_at(self, addr: int, elem: str):
        import torch
        r = self.m.region_of(addr)
        if r is None:
            return None
        n = r.end - addr
        size, tname, _ = tlaunch.ELEMENT.get(elem, (1, "uint8", "int"))
        n -= n % size
        t = torch.as_tensor(_DeviceBytes(self.addr(addr), max(n, size)), device="cuda")
        return t.view(getattr(torch, tname)) if n else t[:0]

    def leaf_value(self, a: tlaunch.Arg, variant) -> Any:
        if a.slot is None:
            return tlaunch.decode_value(a.value, lambda kind, text: self.resolve(kind, text, variant))
        if tlaunch.is_pointer(a.type):
            elem = tlaunch.element_of(a.type)
            t = self.tensor_at(a.value, elem) if a.value else None
            if t is None:
                self.say(f"  note: pointer argument {a.name} = {a.value:#x} lies in no captured region")
                return RawPointer(self.addr(a.value), elem)
            return t
        return a.value

    @staticmethod
    def resolve(kind: str, text: str, variant):
        if kind == "dtype":
            import triton.language as tl
            return tl.dtype(text)
        mod, _, name = text.rpartition(".")
        if hasattr(variant, name):
            return getattr(variant, name)
        return getattr(importlib.import_module(mod), name)

    def arguments(self, variant, jit) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        cfg = dict(getattr(variant, "CONFIG", {}))
        cfg.update(getattr(variant, "OPTIONS", {}))
        names = list(jit.arg_names)
        values: Dict[str, Any] = {}
        for i, name in enumerate(self.plan.arg_names):
            if name not in names:
                raise InputError(f"kernel_variant.KERNEL has no parameter {name!r}; the captured launch passes it "
                                 "(keep the kernel's parameters, or edit CONFIG)")
            if name in cfg:
                values[name] = cfg[name]
                continue
            leaves = [a for a in self.plan.args if a.path[0] == i]
            if len(leaves) == 1 and len(leaves[0].path) == 1:
                values[name] = self.leaf_value(leaves[0], variant)
            else:
                values[name] = _assemble([(a.path[1:], self.leaf_value(a, variant)) for a in leaves])
        options = {k: v for k, v in cfg.items() if k not in names}
        for k, v in cfg.items():
            if k in names and k not in self.plan.arg_names:
                values[k] = v  # a constexpr parameter the edit added
        return values, options

    # -- 3. launch -----------------------------------------------------------------------------
    def launch(self, variant):
        import torch
        import triton
        from triton.runtime.jit import JITFunction

        jit = getattr(variant, "KERNEL", None)
        while jit is not None and not isinstance(jit, JITFunction):
            jit = getattr(jit, "fn", None)
        if jit is None:
            raise InputError("kernel_variant.py must set KERNEL to the @triton.jit function to launch")
        self.values, self.options = self.arguments(variant, jit)
        meta = dict(self.values)
        meta.update(getattr(variant, "CONFIG", {}))
        grid = tuple(variant.grid(meta)) if hasattr(variant, "grid") else self.plan.programs
        grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        self.grid = grid
        self._scratch_allocator(torch, triton)
        try:
            kernel = jit.run(grid=grid, warmup=False, **self.values, **self.options)
        except Exception as e:
            raise InputError(f"the variant did not compile or launch: {type(e).__name__}: {e}") from e
        torch.cuda.synchronize()
        self.kernel = kernel
        self.write_candidate(kernel)
        return kernel

    def _scratch_allocator(self, torch, triton) -> None:
        """Global scratch: hand the kernel the captured buffer (so what it writes there compares)
        when it fits, else fresh memory."""
        slots = self.m.slots
        n_rt = len(self.plan.runtime())
        captured = None
        if self.plan.extra_slots >= 1 and n_rt < len(slots):
            off = slots[n_rt].offset
            captured = int.from_bytes(self.m.params()[off:off + 8], "little") or None

        def alloc(size: int, align: int, stream):
            r = self.m.region_of(captured) if captured else None
            if r is not None and captured + size <= r.end:
                return RawPointer(self.addr(captured), "i8")
            return torch.empty(size, dtype=torch.int8, device="cuda")

        if hasattr(triton, "set_allocator"):
            triton.set_allocator(alloc)

    def write_candidate(self, kernel) -> None:
        cubin = kernel.asm.get("cubin") if hasattr(kernel, "asm") else None
        if not cubin:
            return
        path = os.path.join(self.out, "candidate.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        md = kernel.metadata
        num_ctas = getattr(md, "num_ctas", 1) or 1
        geo = {"kernel": kernel.name, "grid": [self.grid[0] * num_ctas, self.grid[1], self.grid[2]],
               "block": [32 * md.num_warps, 1, 1], "shared_mem_bytes": md.shared,
               "cluster": [num_ctas, 1, 1] if num_ctas > 1 else [0, 0, 0],
               "sha256": hashlib.sha256(cubin).hexdigest()}
        with open(os.path.join(self.out, "candidate.json"), "w") as f:
            json.dump(geo, f, indent=2)
        same_geo = (tuple(geo["grid"]) == tuple(self.m.grid) and tuple(geo["block"]) == tuple(self.m.block)
                    and geo["shared_mem_bytes"] == self.m.shared_mem_bytes)
        identical = geo["sha256"] == self.m.image_sha256()
        self.result.update(candidate=path, candidate_identical=identical, candidate_geometry=geo,
                           same_geometry=same_geo, grid=list(self.grid))
        self.say(f"  candidate.cubin: {'identical to' if identical else 'differs from'} the captured kernel; "
                 f"grid {self.grid} programs, block {geo['block'][0]}, shared {geo['shared_mem_bytes']} B"
                 + ("" if same_geo else " (launch geometry differs from the capture: see candidate.json)"))

    # -- 4. compare ----------------------------------------------------------------------------
    def owners(self, r) -> List[Tuple[int, str]]:
        """(offset in region, element type) of each pointer argument into region r, sorted."""
        seen: Dict[int, str] = {}
        for a in self.plan.pointers():
            if a.value and r.base <= a.value < r.end:
                seen.setdefault(a.value - r.base, tlaunch.element_of(a.type))
        return sorted(seen.items())

    def compare(self) -> bool:
        import torch
        torch.cuda.synchronize()
        results = []
        worst_abs = worst_rel = 0.0
        for r in self.regions:
            exp = self.m.expected(r)
            cuda_vmm.rewrite_words(exp, r.base, self.pl.moves)
            actual = torch.as_tensor(_DeviceBytes(self.addr(r.base), r.size), device="cuda")
            expected = torch.frombuffer(exp, dtype=torch.uint8).to("cuda") if r.size else actual[:0]
            res = {"id": r.id, "kind": r.kind, "base": hex(r.base), "size": r.size, "written": self.m.written(r),
                   "pass": True, "exact": True, "mismatches": 0, "max_abs_error": 0.0, "max_rel_error": 0.0}
            if not torch.equal(actual, expected):
                res["exact"] = False
                bounds = self.owners(r)
                cuts = [0] + [o for o, _ in bounds if o > 0] + [r.size]
                types = {o: t for o, t in bounds}
                for s, e in zip(cuts, cuts[1:]):
                    _compare_span(torch, actual[s:e], expected[s:e], types.get(s), s, res, self.opts)
            worst_abs = max(worst_abs, res["max_abs_error"])
            worst_rel = max(worst_rel, res["max_rel_error"])
            results.append(res)
            del expected
        self.result.update(regions=results, max_abs_error=worst_abs, max_rel_error=worst_rel)
        failing = [x for x in results if not x["pass"]]
        for x in failing:
            self.say(f"  region {x['id']} ({x['kind']} at {x['base']}, {_human(x['size'])}; launch wrote "
                     f"{_human(x['written'])}): {x['summary']}")
        self.say(f"  max abs error {worst_abs:.6g}, max rel error {worst_rel:.6g}")
        exact = sum(1 for x in results if x["exact"])
        written = sum(x["written"] for x in results)
        if failing:
            self.line = f"Result: FAIL ({len(failing)} of {len(results)} regions differ; max abs error " \
                        f"{worst_abs:.6g}, max rel error {worst_rel:.6g})"
        else:
            how = "byte-exact" if exact == len(results) else "within tolerance"
            self.line = f"Result: PASS ({how}, {exact} of {len(results)} regions identical; the launch wrote " \
                        f"{_human(written)})"
        self.result.update(result="FAIL" if failing else "PASS", line=self.line)
        return not failing

    # -- 5. timing -----------------------------------------------------------------------------
    def time_variant(self) -> None:
        import torch
        k = self.kernel
        args = self._bound_args()
        stream = torch.cuda.current_stream().cuda_stream
        gx, gy, gz = self.grid

        def launch():
            k.run(gx, gy, gz, stream, k.function, k.packed_metadata, None, None, None, *args)

        ms = _time(torch, launch, self.opts.warmup, self.opts.iterations)
        self.result.update(median_ms=_median(ms), min_ms=min(ms), max_ms=max(ms), times_ms=ms)
        self.say(f"  variant: median {_median(ms):.4f} ms, min {min(ms):.4f} ms ({len(ms)} launches after "
                 f"{self.opts.warmup} warm-up)")

    def _bound_args(self) -> List[Any]:
        """Every parameter's value in order, defaults applied (what JITFunction.run passes)."""
        from triton.runtime.driver import driver
        jit = self.kernel.src.fn
        binder = jit.device_caches[driver.active.get_current_device()][4]
        bound, _, _ = binder(**self.values, **self.options)
        return list(bound.values())

    def time_captured(self) -> None:
        """The captured cubin launched with the captured parameters, timed the same way."""
        import torch
        m = self.m
        if any(m.cluster) or self.plan.num_ctas > 1:
            self.say("  captured kernel: cluster launch, time it with `kerncap replay OUT`")
            return
        d = self.space.d
        for name, argtypes in (("cuModuleLoadData", [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]),
                               ("cuModuleGetFunction", [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                                        ctypes.c_char_p]),
                               ("cuFuncSetAttribute", [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
                               ("cuLaunchKernel", [ctypes.c_void_p] + [ctypes.c_uint] * 7 +
                                [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p])):
            d._sig(name, argtypes)
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        image = m.image()
        d.call("cuModuleLoadData", ctypes.byref(mod), image)
        d.call("cuModuleGetFunction", ctypes.byref(fn), mod, m.mangled.encode())
        if m.shared_mem_bytes > 48 * 1024:
            d.call("cuFuncSetAttribute", fn, 8, m.shared_mem_bytes)  # MAX_DYNAMIC_SHARED_SIZE_BYTES
        params = bytearray(m.params())
        cuda_vmm.rewrite_words(params, 0, self.pl.moves)
        self._params = (ctypes.c_char * len(params)).from_buffer(params)
        base = ctypes.addressof(self._params)
        ptrs = (ctypes.c_void_p * max(1, len(m.slots)))(*[base + s.offset for s in m.slots])
        stream = torch.cuda.current_stream().cuda_stream

        def launch():
            d.call("cuLaunchKernel", fn, *m.grid, *m.block, m.shared_mem_bytes, stream, ptrs, None)

        ms = _time(torch, launch, self.opts.warmup, self.opts.iterations)
        self.result.update(captured_median_ms=_median(ms), captured_min_ms=min(ms))
        self.say(f"  captured kernel: median {_median(ms):.4f} ms, min {min(ms):.4f} ms")


def _assemble(items: List[Tuple[Tuple[int, ...], Any]]) -> Any:
    """[(sub-path, value)] of one tuple argument -> the nested tuple."""
    if len(items) == 1 and items[0][0] == ():
        return items[0][1]
    groups: Dict[int, list] = {}
    for path, v in items:
        groups.setdefault(path[0], []).append((path[1:], v))
    return tuple(_assemble(groups[k]) for k in sorted(groups))


def _compare_span(torch, act, exp, elem: Optional[str], offset: int, res: dict, opts) -> None:
    if torch.equal(act, exp):
        return
    info = tlaunch.ELEMENT.get(elem or "")
    if info is None or info[2] != "float":
        diff = (act != exp)
        n = int(diff.sum())
        first = int(diff.nonzero()[0]) if n else 0
        unit = f"{elem} bytes" if elem else "bytes"
        _fail(res, n, offset + first, f"{n} {unit} differ (first at offset {offset + first})")
        return
    size, tname, _ = info
    n = act.numel() - act.numel() % size
    if n != act.numel() and not torch.equal(act[n:], exp[n:]):
        _fail(res, 1, offset + n, "trailing bytes differ")
    dt = getattr(torch, tname)
    wide = torch.float64 if tname == "float64" else torch.float32
    a = act[:n].view(dt).to(wide)
    e = exp[:n].view(dt).to(wide)
    atol, rtol = tlaunch.tolerance(elem)
    if opts.atol is not None:
        atol = opts.atol
    if opts.rtol is not None:
        rtol = opts.rtol
    both_nan = torch.isnan(a) & torch.isnan(e)
    same = (a == e) | both_nan
    err = (a - e).abs()
    finite = torch.isfinite(err)
    bad = ~same & ~(finite & (err <= atol + rtol * e.abs()))
    if finite.any():
        res["max_abs_error"] = max(res["max_abs_error"], float(err[finite].max()))
        rel = err[finite] / e[finite].abs().clamp_min(torch.finfo(wide).tiny)
        relv = rel[~same[finite]]
        if relv.numel():
            res["max_rel_error"] = max(res["max_rel_error"], float(relv.max()))
    nbad = int(bad.sum())
    if nbad:
        first = int(bad.nonzero()[0])
        _fail(res, nbad, offset + first * size,
              f"{nbad} of {a.numel()} {elem} elements beyond atol {atol:g} rtol {rtol:g} (max abs "
              f"{res['max_abs_error']:.6g}, max rel {res['max_rel_error']:.6g}, first at offset {offset + first * size})")


def _fail(res: dict, n: int, first: int, text: str) -> None:
    res["pass"] = False
    res["mismatches"] += n
    res.setdefault("first_bad_offset", first)
    res["summary"] = (res.get("summary", "") + "; " if res.get("summary") else "") + text


def _median(v: List[float]) -> float:
    s = sorted(v)
    k = len(s) // 2
    return s[k] if len(s) % 2 else (s[k - 1] + s[k]) / 2


def _time(torch, launch, warmup: int, iterations: int) -> List[float]:
    for _ in range(warmup):
        launch()
    evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iterations)]
    for s, e in evs:
        s.record()
        launch()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in evs]


def add_app_paths(out: str, say) -> None:
    """The application's sys.path (from name_map.json), so that the variant's imports of the
    application's own packages resolve as they did there."""
    try:
        with open(os.path.join(out, "triton", "name_map.json")) as f:
            pp = json.load(f).get("python_path") or {}
    except (OSError, ValueError):
        return
    added = tlaunch.add_app_paths(pp.get("package_root"), pp.get("sys_path") or [], sys.path)
    if added:
        say(f"  python path: added the application's {', '.join(added)}")


def load_variant(path: str):
    spec = importlib.util.spec_from_file_location("kernel_variant", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kernel_variant"] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        raise InputError(f"{path} does not import: {type(e).__name__}: {e}") from e
    return mod


def parse(argv):
    p = argparse.ArgumentParser(description="Launch kernel_variant.py's kernel on the captured inputs, compare with "
                                            "the application's result, time it, write candidate.cubin.")
    p.add_argument("--variant", help="the kernel module (default: kernel_variant.py next to reproducer.py)")
    p.add_argument("-n", "--iterations", type=int, default=20, help="timed launches (0: no timing)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--atol", type=float, help="absolute tolerance for floating-point outputs (default per dtype)")
    p.add_argument("--rtol", type=float, help="relative tolerance for floating-point outputs (default per dtype)")
    p.add_argument("--no-baseline", action="store_true", help="do not time the captured kernel")
    p.add_argument("--no-relocate", action="store_true", help="fail instead of moving ranges that cannot come back")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    return p.parse_args(argv)


def main(out: str, argv=None) -> int:
    opts = parse(argv)
    t0 = time.time()
    run = None
    code = 0
    try:
        run = Run(out, opts)
        run.say(f"kerncap Triton reproducer: {run.plan.kernel} ({out})")
        run.restore()
        add_app_paths(out, run.say)
        variant = load_variant(opts.variant or os.path.join(out, "kernel_variant.py"))
        run.launch(variant)
        ok = run.compare()
        if opts.iterations > 0:
            run.time_variant()
            if not opts.no_baseline:
                run.time_captured()
        run.say(run.line)
        code = 0 if ok else 1
    except (capture.CaptureError, tlaunch.PlanError, InputError, FileNotFoundError) as e:
        print(f"kerncap: error: {e}", file=sys.stderr)
        code = 2
    except cuda_vmm.CudaError as e:
        print(f"kerncap: device error: {e}", file=sys.stderr)
        code = 3
    except RuntimeError as e:
        if "CUDA" not in str(e) and "cuda" not in str(e):
            raise
        print(f"kerncap: device error: {e}", file=sys.stderr)
        code = 3
    if opts.json:
        res = dict(run.result) if run else {}
        res.setdefault("result", "ERROR")
        res.update(exit_code=code, seconds=round(time.time() - t0, 3))
        print(json.dumps(res, default=repr))
    return code

"""What OUT/reproducer.py runs (copied into OUT/kerncap_repro/runtime.py by the generator).

Everything that touches the captured state is done by kerncap's one replay engine
(libkerncap_replay.so, through engine.py), the same code as `kerncap replay/validate`:
1. The engine opens OUT (reserves and maps the captured addresses) and restores BEFORE,
   before torch touches the GPU.
2. This file builds the launch arguments with the launch plan (triton_launch): pointers are
   the captured addresses translated by the engine (kc_translate), as torch tensors over the
   restored memory; scalars are the captured values; constexprs and compile options come from
   kernel_variant.CONFIG / OPTIONS (the pinned configuration: no autotuning here).
3. kernel_variant.KERNEL is launched with kernel_variant.grid(meta) programs on the engine's
   stream; its cubin is written to OUT/candidate.cubin (+ candidate.json, its launch geometry).
4. The engine compares with the application's result, by OUT/compare.json (the element type
   of every pointer argument's memory): the verdict `kerncap validate OUT` gives.
5. The engine times the variant (launched from here, on its stream) and the captured kernel.
Exit codes: 0 PASS, 1 FAIL, 2 bad input or a variant that does not compile/launch, 3 device
error, 70 internal error.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from . import capture, engine, out_layout as L, triton_launch as tlaunch


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
        with open(os.path.join(out, L.TRITON, L.TRITON_LAUNCH_PLAN)) as f:
            self.plan = tlaunch.plan_from_json(json.load(f))
        self.result: Dict[str, Any] = {"kernel": self.plan.kernel}
        self.session: Optional[engine.Session] = None

    # -- 1. memory (the engine) -----------------------------------------------------------------
    def restore(self) -> None:
        t0 = time.time()
        self.session = engine.Session(self.out, allow_relocate=not self.opts.no_relocate)
        r = self.session.restore()
        import torch  # after the reservations: its allocator now keeps off the captured ranges
        if self.m.device_ordinal < torch.cuda.device_count():
            torch.cuda.set_device(self.m.device_ordinal)
        moved = sum(1 for x in self.m.memory() if self.session.translate(x.base) != x.base)
        words = int(r.get("rewritten_words", 0))
        self.say(f"  memory: {len(self.m.regions)} regions ({_human(r.get('bytes', 0))}) restored in "
                 f"{time.time() - t0:.2f} s; {moved} regions relocated, {words} pointer words rewritten")
        self.result.update(relocated_regions=moved, rewritten_words=words)

    def addr(self, a: int) -> int:
        return self.session.translate(a)

    # -- 2. arguments ------------------------------------------------------------------------
    def tensor_at(self, addr: int, elem: str):
        import torch
        r = self.m.region_of(addr)
        if r is None:
            return None
        n = r.end - addr
        size, tname, _ = tlaunch.ELEMENT.get(elem, (1, "uint8", "bytes"))
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
        self.stream = self.session.stream()
        try:
            with torch.cuda.stream(torch.cuda.ExternalStream(self.stream)):
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
            off = slots[n_rt][0]
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
        path = os.path.join(self.out, L.CANDIDATE_CUBIN)
        with open(path, "wb") as f:
            f.write(cubin)
        md = kernel.metadata
        num_ctas = getattr(md, "num_ctas", 1) or 1
        geo = {"kernel": kernel.name, "grid": [self.grid[0] * num_ctas, self.grid[1], self.grid[2]],
               "block": [32 * md.num_warps, 1, 1], "shared_mem_bytes": md.shared,
               "cluster": [num_ctas, 1, 1] if num_ctas > 1 else [0, 0, 0],
               "sha256": hashlib.sha256(cubin).hexdigest()}
        with open(os.path.join(self.out, L.CANDIDATE_JSON), "w") as f:
            json.dump(geo, f, indent=2)
        same_geo = (tuple(geo["grid"]) == tuple(self.m.grid) and tuple(geo["block"]) == tuple(self.m.block)
                    and geo["shared_mem_bytes"] == self.m.shared_mem_bytes)
        identical = geo["sha256"] == self.m.image_sha256()
        self.result.update(candidate=path, candidate_identical=identical, candidate_geometry=geo,
                           same_geometry=same_geo, grid=list(self.grid))
        self.say(f"  candidate.cubin: {'identical to' if identical else 'differs from'} the captured kernel; "
                 f"grid {self.grid} programs, block {geo['block'][0]}, shared {geo['shared_mem_bytes']} B"
                 + ("" if same_geo else " (launch geometry differs from the capture: see candidate.json)"))

    # -- 4. compare (the engine) ---------------------------------------------------------------
    def compare_spec(self) -> Optional[dict]:
        """None: the engine reads OUT/compare.json itself, as `kerncap validate` does. Only
        --atol/--rtol change it: the same spans with the user's tolerances."""
        if self.opts.atol is None and self.opts.rtol is None:
            return None
        try:
            with open(os.path.join(self.out, L.COMPARE_SPEC)) as f:
                spec = json.load(f)
        except FileNotFoundError:
            spec = {"dtype": "bytes", "spans": []}
        for s in spec.get("spans", []):
            s.update({k: v for k, v in (("atol", self.opts.atol), ("rtol", self.opts.rtol)) if v is not None})
        return spec

    def compare(self) -> bool:
        """The one judge (kc_evaluate_launch), as `kerncap validate` judges a variant: the
        candidate launched again on memory as restored, compared by OUT/kerncap.toml's rules
        (tolerances, invariants), its typed regions within tolerance, a nondeterministic
        captured kernel measured and allowed for."""
        k = self.kernel
        args = self._bound_args()
        gx, gy, gz = self.grid

        def launch(stream: int) -> None:
            k.run(gx, gy, gz, stream, k.function, k.packed_metadata, None, None, None, *args)

        v = self.session.evaluate_launch(launch, time=False, spec=self.compare_spec())
        regions = v.get("regions", [])
        worst_abs = max((r.get("max_abs_error", 0.0) for r in regions), default=0.0)
        worst_rel = max((r.get("max_rel_error", 0.0) for r in regions), default=0.0)
        for x in regions:
            if not x.get("pass", True):
                self.say(f"  region {x.get('id')} ({x.get('kind')} at {x.get('base')}, {_human(x.get('size', 0))}; "
                         f"launch wrote {_human(x.get('written', 0))}): {x.get('summary', '')}")
        for x in (v.get("invariants") or {}).get("violations", []):
            self.say(f"  invariant violated: {x.get('message', '')}")
        self.say(f"  max abs error {worst_abs:.6g}, max rel error {worst_rel:.6g}")
        self.line = v.get("line", f"Result: {v.get('result', 'FAIL')}")
        self.result.update({k2: x for k2, x in v.items() if k2 not in ("kernel", "timing")})
        self.result.update(max_abs_error=worst_abs, max_rel_error=worst_rel)
        return v.get("result") == "PASS"

    # -- 5. timing (the engine) ----------------------------------------------------------------
    def time_variant(self) -> None:
        k = self.kernel
        args = self._bound_args()
        gx, gy, gz = self.grid

        def launch(stream: int) -> None:
            k.run(gx, gy, gz, stream, k.function, k.packed_metadata, None, None, None, *args)

        # Timing saves the bytes a launch changes when it starts and puts them back before
        # every launch: start from the restored state, not the one the checked launch left.
        self.session.restore()
        t = self.session.time(launch, warmup=self.opts.warmup, iterations=self.opts.iterations)
        self.result.update({k2: t[k2] for k2 in ("median_ms", "min_ms", "max_ms", "mean_ms", "stddev_ms", "times_ms")
                            if k2 in t})
        self.say(f"  variant: median {t['median_ms']:.4f} ms, min {t['min_ms']:.4f} ms "
                 f"({t.get('iterations', self.opts.iterations)} launches after {t.get('warmup', self.opts.warmup)} "
                 "warm-up)")

    def _bound_args(self) -> List[Any]:
        """Every parameter's value in order, defaults applied (what JITFunction.run passes)."""
        from triton.runtime.driver import driver
        jit = self.kernel.src.fn
        binder = jit.device_caches[driver.active.get_current_device()][4]
        bound, _, _ = binder(**self.values, **self.options)
        return list(bound.values())

    def time_captured(self) -> None:
        """The captured cubin with the captured parameters, timed the same way by the engine."""
        t = self.session.time(None, warmup=self.opts.warmup, iterations=self.opts.iterations)
        self.result.update(captured_median_ms=t["median_ms"], captured_min_ms=t["min_ms"])
        self.say(f"  captured kernel: median {t['median_ms']:.4f} ms, min {t['min_ms']:.4f} ms")

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None


def _assemble(items: List[Tuple[Tuple[int, ...], Any]]) -> Any:
    """[(sub-path, value)] of one tuple argument -> the nested tuple."""
    if len(items) == 1 and items[0][0] == ():
        return items[0][1]
    groups: Dict[int, list] = {}
    for path, v in items:
        groups.setdefault(path[0], []).append((path[1:], v))
    return tuple(_assemble(groups[k]) for k in sorted(groups))


def add_app_paths(out: str, say) -> None:
    """The application's sys.path (from name_map.json), so that the variant's imports of the
    application's own packages resolve as they did there."""
    try:
        with open(os.path.join(out, L.TRITON, L.TRITON_NAME_MAP)) as f:
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
    p.add_argument("--atol", type=float, help="absolute tolerance for the typed spans of compare.json (default: the "
                                              "engine's per-dtype table, as `kerncap validate`)")
    p.add_argument("--rtol", type=float, help="relative tolerance for the typed spans of compare.json (default: the "
                                              "engine's per-dtype table, as `kerncap validate`)")
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
        variant = load_variant(opts.variant or os.path.join(out, L.KERNEL_VARIANT_PY))
        run.launch(variant)
        ok = run.compare()
        if opts.iterations > 0:
            run.time_variant()
            if not opts.no_baseline:
                run.time_captured()
        run.say(run.line)
        code = 0 if ok else 1
    except engine.EngineError as e:
        code = e.exit_code if e.exit_code in (engine.E_INPUT, engine.E_DEVICE) else engine.E_INTERNAL
        what = {engine.E_INPUT: "error", engine.E_DEVICE: "device error"}.get(code, "internal error")
        print(f"kerncap: {what}: {e}", file=sys.stderr)
    except (tlaunch.PlanError, InputError, FileNotFoundError) as e:
        print(f"kerncap: error: {e}", file=sys.stderr)
        code = 2
    except RuntimeError as e:
        if "CUDA" not in str(e) and "cuda" not in str(e):
            raise
        print(f"kerncap: device error: {e}", file=sys.stderr)
        code = 3
    finally:
        if run is not None:
            run.close()
    if opts.json:
        res = dict(run.result) if run else {}
        res.setdefault("result", "ERROR")
        res.update(exit_code=code, seconds=round(time.time() - t0, 3))
        print(json.dumps(res, default=repr))
    return code

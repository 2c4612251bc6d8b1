"""kerncap's Triton shim, running inside the application (loaded by sitecustomize.py).

Rules (this is the only kerncap Python code inside someone else's process):
- never raise into the application: every hook catches everything and records an error;
- never change what the application computes: hooks only read, except that autotuner
  benchmarks are bracketed with kerncap_ignore_begin/end (see below);
- import nothing heavy: Triton and Inductor are patched when the application imports them;
- write as we go (one O_APPEND write per record): the application may be stopped with
  _exit right after the captured launch, so nothing is left for atexit.

What it records, in $KERNCAP_TRITON_OUT/records/<pid>.jsonl (format below, version 1):
- "compile": every triton.compile (knobs.compilation.listener; user @triton.jit, autotuned
  and Inductor kernels alike, cache hits included): kernel name, cubin sha256 and size,
  function, source file, line, signature, declared constexprs, constant values, attributes,
  compile options and metadata, sys.path and the module's package root (so the reproducer
  can import what the kernel's module imports); the function's and its whole module's source text go to
  sources/<sha256>.py (Inductor's generated files live in temporary directories).
- "load": every kernel image loaded to the GPU where the shim sees it (Triton's
  kernel_load_end_hook, Inductor's static launcher loading a cubin itself): kernel name, Triton
  compile hash, cubin sha256 and size, "via". With caches warm nothing compiles, so this is
  what ties the image the driver got to its compilation.
- "compile" records rebuilt on Inductor's load path ("via": "inductor load"): when a
  CachingAutotuner has made its launchers, each compiled configuration is recorded from what
  triton.compile was (or had been, in an earlier run) given: the autotuner's JITFunction, the
  CompileResult's compile_meta (signature, constants, attributes), the Triton metadata beside
  the cubin, and Inductor's generated module source (the autotuner's file). FX graph cache and
  autotune cache hits and statically launched kernels reach the GPU this way without any
  triton.compile in this process. Readers prefer a record written by triton.compile itself.
- "autotune": the configuration @triton.autotune (or Inductor) chose, written just before the
  launch that uses it, with the benchmark timings and the compiled kernel's hash.
- "bench": per autotuner benchmark, how many launches it made and whether libkerncap was told
  to ignore them.
- "shim": start, whether libkerncap offers the ignore handshake, and which benchmarking
  functions each watched module had wrapped ("ignore_window").

Benchmark launches must not become the captured launch. libkerncap (loaded by the
CUDA driver from CUDA_INJECTION64_PATH) exports kerncap_ignore_begin()/kerncap_ignore_end();
while the count is above zero it neither counts nor captures matching launches. The shim
calls them around Autotuner._bench, Inductor's CachingAutotuner.bench and benchmark_all_configs,
triton.testing.do_bench (and do_bench_cudagraph), and every benchmark* method of the classes in
Inductor's runtime.benchmarking, select_algorithm, autotune_process, ir, scheduler,
codegen.simd, codegen.triton, codegen.subgraph, codegen.cuda_combined_scheduling and
codegen.multi_kernel (the fusion benchmarks launch the fused kernel once outside the
Benchmarker), and torch._inductor.utils.do_bench_using_profiling, through ctypes with
RTLD_NOLOAD (never loading the library itself).

Hooks on load paths only read: they run after (or, for a file that is gone afterwards, just
before) the application's own code, never change an argument, an attribute or a return value,
and a hook whose attribute is missing in this Torch/Triton is left out with one log line.
"""
from __future__ import annotations

import ctypes
import hashlib
import inspect
import json
import linecache
import math
import os
import sys
import threading
import time
import traceback

RECORD_VERSION = 1

_lock = threading.RLock()
_state = {"out": None, "fd": None, "pid": None, "sources": set(), "verbose": 0}
_tls = threading.local()
_handles = {}  # CUfunction handle -> (kernel name, compile hash), from kernel_load_end_hook


# ---- writing --------------------------------------------------------------------------------
def _log(msg: str) -> None:
    if _state["verbose"] >= 1:
        sys.stderr.write(f"kerncap[{os.getpid()}] triton shim: {msg}\n")


def write_record(rec: dict) -> None:
    rec = dict(rec, version=RECORD_VERSION, pid=os.getpid(), time=time.time())
    line = (json.dumps(rec, default=_json_default) + "\n").encode()
    with _lock:
        if _state["fd"] is None or _state["pid"] != os.getpid():  # first record, or a forked child
            path = os.path.join(_state["out"], "records", f"{os.getpid()}.jsonl")
            _state["fd"] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            _state["pid"] = os.getpid()
        os.write(_state["fd"], line)


def save_source(text: str) -> str:
    """Stores a source text once under sources/<sha256>.py; returns the hash."""
    data = text.encode()
    h = hashlib.sha256(data).hexdigest()
    with _lock:
        if h in _state["sources"]:
            return h
        path = os.path.join(_state["out"], "sources", h + ".py")
        if not os.path.exists(path):
            tmp = f"{path}.tmp-{os.getpid()}"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        _state["sources"].add(h)
    return h


def _error(where: str, e: BaseException) -> None:
    try:
        _log(f"{where} failed: {e!r}")
        write_record({"kind": "error", "where": where, "error": repr(e),
                      "trace": traceback.format_exc(limit=4)[-2000:]})
    except Exception:
        pass


def _json_default(o):
    if hasattr(o, "__dict__"):
        return {k: v for k, v in vars(o).items() if not k.startswith("_")}
    return repr(o)


# ---- encoding values ------------------------------------------------------------------------
def encode_value(v):
    """A constexpr value -> JSON (decoded by kerncap.triton_launch.decode_value)."""
    cls = type(v).__name__
    if cls == "constexpr" and hasattr(v, "value"):
        return encode_value(v.value)
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"float": repr(v)}
    if isinstance(v, (tuple, list)):
        return {"tuple": [encode_value(x) for x in v]}
    if cls in ("dtype", "pointer_type") or (hasattr(v, "is_fp16") and hasattr(v, "primitive_bitwidth")):
        return {"dtype": str(v)}
    if hasattr(v, "fn") and hasattr(v, "arg_names"):  # a JITFunction passed as a constexpr
        f = v.fn
        return {"jit_function": f"{f.__module__}.{f.__qualname__}"}
    return {"repr": repr(v)}


def _sig_json(s):
    if isinstance(s, (tuple, list)):
        return [_sig_json(x) for x in s]
    return str(s)


def _path(k, arg_names):
    if isinstance(k, str):
        return [arg_names.index(k)]
    return list(k) if isinstance(k, (tuple, list)) else [k]


def _module_text(fn_py) -> tuple:
    """(file, whole module source) of a Python function; the file may be gone later."""
    path = inspect.getsourcefile(fn_py) or fn_py.__code__.co_filename
    try:
        with open(path, encoding="utf-8") as f:
            return path, f.read()
    except OSError:
        lines = linecache.getlines(path)
        return path, "".join(lines) if lines else None


def _read_text(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def package_root(module: str, path: str):
    """The sys.path entry a module was imported from: `path` less one folder per dotted part of
    `module` (and its __init__.py), or None when they do not line up (e.g. __main__)."""
    if not module or not path or module == "__main__":
        return os.path.dirname(os.path.abspath(path)) if path else None
    d, parts = os.path.abspath(path), module.split(".")
    if os.path.basename(d) == "__init__.py":
        d = os.path.dirname(d)
    elif os.path.splitext(os.path.basename(d))[0] == parts[-1]:
        d, parts = os.path.dirname(d), parts[:-1]
    else:
        return None
    for part in reversed(parts):
        if os.path.basename(d) != part:
            return None
        d = os.path.dirname(d)
    return d


def _app_sys_path() -> list:
    """sys.path at compile time (the application may have extended it after startup), less
    the shim's own folder; the reproducer adds the entries its own interpreter lacks."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.abspath(p or ".") for p in sys.path
            if isinstance(p, str) and os.path.abspath(p or ".") != here]


def cubin_path(metadata_group):
    """The .cubin file among a Triton metadata group's files (None without one)."""
    return next((p for k, p in (metadata_group or {}).items() if str(k).endswith(".cubin")), None)


def build_compile_record(src, metadata: dict, metadata_group: dict, cache_hit: bool, save=save_source,
                         image=None, module_file=None) -> dict:
    """The 'compile' record for one triton.compile (src: ASTSource or IRSource). image: (sha256,
    size) of the cubin when it is known without metadata_group's files; module_file: the
    kernel's module file when the JITFunction has lost its Python function (Inductor drops it
    before pickling a compiled autotuner)."""
    name = metadata.get("name") or getattr(src, "name", "?")
    rec = {"kind": "compile", "name": name, "hash": metadata.get("hash"), "cache_hit": bool(cache_hit)}
    cubin = cubin_path(metadata_group)
    if image is not None:
        rec["cubin_sha256"], rec["cubin_size"] = image
    elif cubin:
        with open(cubin, "rb") as f:
            data = f.read()
        rec["cubin_sha256"] = hashlib.sha256(data).hexdigest()
        rec["cubin_size"] = len(data)
    jit = getattr(src, "fn", None)
    if jit is None or not hasattr(jit, "arg_names"):
        rec["source_kind"] = "ir"
        rec["ir_path"] = getattr(src, "path", None)
        return rec
    rec["source_kind"] = "ast"
    arg_names = list(jit.arg_names)
    rec["arg_names"] = arg_names
    params = getattr(jit, "params", None)
    if params:
        rec["constexpr_params"] = [p.name for p in params if getattr(p, "is_constexpr", False)]
    else:  # a JITFunction without its KernelParams: the declared constexprs by position
        rec["constexpr_params"] = [arg_names[i] for i in getattr(jit, "constexprs", []) if 0 <= i < len(arg_names)]
    rec["signature"] = {k: _sig_json(v) for k, v in src.signature.items()}
    rec["constants"] = [[_path(k, arg_names), encode_value(v)] for k, v in src.constants.items()]
    rec["attrs"] = [[_path(k, arg_names), v] for k, v in (src.attrs or {}).items()]
    py = getattr(jit, "fn", None)
    named = py if py is not None else jit  # a JITFunction keeps the function's names
    fn = {"name": getattr(named, "__name__", name), "qualname": getattr(named, "__qualname__", name),
          "module": getattr(named, "__module__", None), "line": getattr(jit, "starting_line_number", None)}
    raw = getattr(jit, "raw_src", None)
    if raw:
        fn["source_sha256"] = save("".join(raw))
    path = text = None
    if py is not None:
        path, text = _module_text(py)
    # Inductor's own file for the kernel (the autotuner's `filename`) when the function's file
    # is gone or is not where the function is defined (a kernel rebuilt from a cache).
    if module_file and (text is None or f"def {getattr(named, '__name__', name)}(" not in text):
        alt = _read_text(module_file)
        if alt is not None:
            path, text = module_file, alt
    if path:
        fn["file"] = path
        fn["package_root"] = package_root(fn["module"], path)
        if text is not None:
            fn["module_sha256"] = save(text)
    rec["fn"] = fn
    rec["sys_path"] = _app_sys_path()
    keep = {}
    for k, v in metadata.items():
        if k in ("hash", "name"):
            continue
        try:
            keep[k] = json.loads(json.dumps(v, default=_json_default))
        except (TypeError, ValueError):
            keep[k] = repr(v)
    rec["options"] = keep
    return rec


# ---- the ignore handshake with libkerncap ------------------------------------------------
_lib = {"fns": None, "announced": False}


def _kerncap_fns():
    if _lib["fns"] is not None:
        return _lib["fns"] or None
    path = os.environ.get("CUDA_INJECTION64_PATH")
    if not path:
        _lib["fns"] = False
        return None
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return None  # not loaded yet (CUDA not initialised): ask again next time
    try:
        fns = (lib.kerncap_ignore_begin, lib.kerncap_ignore_end)
        for f in fns:
            f.restype = ctypes.c_int
            f.argtypes = []
        _lib["fns"] = fns
    except AttributeError:
        _lib["fns"] = False
    if not _lib["announced"]:
        _lib["announced"] = True
        write_record({"kind": "shim", "event": "ignore_handshake", "available": bool(_lib["fns"])})
        if not _lib["fns"]:
            _log("this libkerncap has no kerncap_ignore_begin: autotuner benchmark launches are counted "
                 "(see the 'bench' records; pass --dispatch past them)")
    return _lib["fns"] or None


class _Benchmarking:
    """Brackets one autotuner benchmark: libkerncap ignores its launches; we count them."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.fns = _kerncap_fns()
        self.ignored = False
        if self.fns:
            self.fns[0]()
            self.ignored = True
        depth = getattr(_tls, "bench", 0)
        _tls.bench = depth + 1
        if depth == 0:
            _tls.bench_launches = 0
        return self

    def __exit__(self, *exc):
        _tls.bench -= 1
        if self.ignored:
            self.fns[1]()
        if _tls.bench == 0:
            try:
                write_record({"kind": "bench", "name": self.name, "launches": getattr(_tls, "bench_launches", None),
                              "ignored": self.ignored})
            except Exception as e:
                _error("bench record", e)
        return False


# ---- hooks ----------------------------------------------------------------------------------
def _listener(*, src, metadata, metadata_group, cache_hit=False, **_):
    try:
        write_record(build_compile_record(src, metadata, metadata_group, cache_hit))
    except Exception as e:
        _error("compile listener", e)


_loads_seen = set()  # (via, compile hash, cubin sha256) this process recorded already


def record_load(via: str, name, khash, data: bytes, **extra) -> str:
    """A 'load' record: this image (its sha256) is Triton compilation `khash` of kernel `name`,
    loaded through `via`. Once per process and image. Returns the sha256."""
    sha = hashlib.sha256(data).hexdigest()
    key = (via, khash, sha)
    if key not in _loads_seen:
        _loads_seen.add(key)
        write_record(dict(extra, kind="load", via=via, name=name, hash=khash, cubin_sha256=sha, cubin_size=len(data)))
    return sha


def _kernel_loaded(module, function, name, metadata_group, hash):
    if function is not None:
        _handles[function] = (name, hash)
    try:
        path = cubin_path(metadata_group)
        if path:
            with open(path, "rb") as f:
                record_load("triton", name, hash, f.read())
    except Exception as e:
        _error("kernel_load_end_hook", e)


def _config_json(cfg) -> dict:
    d = {"kwargs": {k: encode_value(v) for k, v in getattr(cfg, "kwargs", {}).items()}}
    for k in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        if hasattr(cfg, k):
            d[k] = getattr(cfg, k)
    return d


def _launch_enter(metadata):
    """Active only while an @triton.autotune call runs: counts benchmark launches, and records
    the chosen configuration at the first launch that is not a benchmark."""
    try:
        if getattr(_tls, "bench", 0):
            _tls.bench_launches = getattr(_tls, "bench_launches", 0) + 1
            return
        stack = getattr(_tls, "autotuners", None)
        if not stack:
            return
        tuner = stack[-1]
        md = metadata.get() if hasattr(metadata, "get") else (metadata or {})
        name, khash = _handles.get(md.get("function"), (md.get("name"), None))
        best = getattr(tuner, "best_config", None)
        seen = getattr(tuner, "_kerncap_recorded", None)
        if seen is None:
            seen = tuner._kerncap_recorded = set()
        ident = (str(best), khash)
        if best is None or ident in seen:
            return
        seen.add(ident)
        timings = getattr(tuner, "configs_timings", None) or {}
        nargs = getattr(tuner, "nargs", None) or {}
        write_record({
            "kind": "autotune", "source": "triton.autotune", "name": name, "kernel_hash": khash,
            "function": f"{tuner.base_fn.__module__}.{tuner.base_fn.__qualname__}",
            "key": {k: repr(nargs.get(k)) for k in getattr(tuner, "keys", [])},
            "best": _config_json(best),
            "configs": [_config_json(c) for c in getattr(tuner, "configs", [])],
            "timings": [[_config_json(c), list(t) if isinstance(t, (list, tuple)) else t] for c, t in timings.items()],
        })
    except Exception as e:
        _error("launch_enter_hook", e)


def _patch_triton(triton_mod) -> None:
    from triton import knobs
    from triton.runtime import autotuner as at

    prev = knobs.compilation.listener
    if prev is None:
        knobs.compilation.listener = _listener
    else:  # keep the application's listener working
        def chained(**kw):
            _listener(**kw)
            return prev(**kw)
        knobs.compilation.listener = chained
    knobs.runtime.kernel_load_end_hook.add(_kernel_loaded)

    A = at.Autotuner
    if getattr(A, "_kerncap_patched", False):
        return
    orig_bench, orig_run = A._bench, A.run

    def _bench(self, *args, **kwargs):
        with _Benchmarking(getattr(self.base_fn, "__name__", "?")):
            return orig_bench(self, *args, **kwargs)

    def run(self, *args, **kwargs):
        stack = getattr(_tls, "autotuners", None)
        if stack is None:
            stack = _tls.autotuners = []
        stack.append(self)
        if len(stack) == 1:
            knobs.runtime.launch_enter_hook.add(_launch_enter)
        try:
            return orig_run(self, *args, **kwargs)
        finally:
            stack.pop()
            if not stack:
                knobs.runtime.launch_enter_hook.remove(_launch_enter)

    A._bench, A.run, A._kerncap_patched = _bench, run, True
    write_record({"kind": "shim", "event": "triton", "triton_version": getattr(triton_mod, "__version__", None)})


def _kernel_label(autotuner) -> str:
    try:
        meta = getattr(autotuner, "inductor_meta", None) or {}
        return str(meta.get("kernel_name") or getattr(getattr(autotuner, "fn", None), "__name__", "?"))
    except Exception:
        return "?"


def _patch_inductor(mod) -> None:
    C = getattr(mod, "CachingAutotuner", None)
    if C is None or getattr(C, "_kerncap_patched", False):
        return
    orig_bench = C.bench
    orig_one = getattr(C, "autotune_to_one_config", None)

    def bench(self, *args, **kwargs):
        with _Benchmarking(_kernel_label(self)):
            return orig_bench(self, *args, **kwargs)

    def autotune_to_one_config(self, *args, **kwargs):
        r = orig_one(self, *args, **kwargs)
        try:
            best = self.launchers[0]
            write_record({"kind": "autotune", "source": "inductor", "name": _kernel_label(self),
                          "kernel_hash": getattr(best, "cache_hash", None), "best": _config_json(best.config),
                          "configs": [_config_json(c) for c in getattr(self, "configs", [])]})
        except Exception as e:
            _error("inductor autotune record", e)
        return r

    C.bench = bench
    if orig_one is not None:
        C.autotune_to_one_config = autotune_to_one_config
    # Timing every configuration also zeroes the model's buffers between runs, outside bench.
    if not _wrap_attr(C, "benchmark_all_configs", "CachingAutotuner.benchmark_all_configs"):
        _log("CachingAutotuner has no benchmark_all_configs: only its bench() is in the ignore window")
    orig_make = vars(C).get("_make_launchers")
    if inspect.isfunction(orig_make):
        def _make_launchers(self, *args, **kwargs):
            r = orig_make(self, *args, **kwargs)
            record_inductor_kernels(self)
            return r
        C._make_launchers = _make_launchers
    else:
        _log("CachingAutotuner has no _make_launchers: kernels Inductor loads from its caches are not recorded")
    C._kerncap_patched = True


# ---- Inductor's load path: kernels that were not compiled in this process ------------------
# With Inductor's caches warm (FX graph cache, autotune cache, TritonBundler's statically
# launchable autotuners) the model's kernels reach the GPU without triton.compile: a
# StaticallyLaunchedTritonKernel loads its cubin file itself (torch's C++ launcher), and the
# CachingAutotuner comes out of a pickle. Two hooks, both read-only:
#   load_kernel      reads the cubin file just before Inductor loads it (and forgets its path);
#   _make_launchers  after the launchers exist, rebuilds each configuration's compile record
#                    from what triton.compile was given (CompileResult.compile_meta).
_static_images = {}  # id(static kernel) -> (kernel, sha256, size, cubin path)
_rebuilt_seen = set()  # (compile hash, cubin sha256) rebuilt records were written for


def _static_load_kernel(orig):
    def load_kernel(self, *args, **kwargs):
        try:
            path = getattr(self, "cubin_path", None)
            if getattr(self, "function", None) is None and isinstance(path, str) and id(self) not in _static_images:
                with open(path, "rb") as f:
                    data = f.read()
                sha = record_load("inductor static launcher", getattr(self, "name", None), getattr(self, "hash", None),
                                  data, num_warps=getattr(self, "num_warps", None), shared=getattr(self, "shared", None))
                _static_images[id(self)] = (self, sha, len(data), path)
        except Exception as e:
            _error("static launcher load_kernel", e)
        return orig(self, *args, **kwargs)

    load_kernel.__wrapped__ = orig
    load_kernel._kerncap_wrapped = True
    return load_kernel


def _patch_static_launcher(mod) -> None:
    """Every class of the module that defines load_kernel (Torch 2.11: StaticallyLaunchedTritonKernel
    and its per-device subclasses; older: StaticallyLaunchedCudaKernel)."""
    wrapped = []
    for cls in list(vars(mod).values()):
        if not isinstance(cls, type) or cls.__module__ != mod.__name__:
            continue
        orig = vars(cls).get("load_kernel")
        if inspect.isfunction(orig) and not getattr(orig, "_kerncap_wrapped", False):
            cls.load_kernel = _static_load_kernel(orig)
            wrapped.append(cls.__name__)
    if not wrapped:
        _log(f"{mod.__name__} has no class with load_kernel: statically launched kernels are not recorded")
    write_record({"kind": "shim", "event": "load_hooks", "module": mod.__name__, "wrapped": wrapped})


class LoadedSource:
    """What triton.compile's ASTSource held, from an Inductor CompileResult: Inductor's
    _precompile_config builds ASTSource(fn, compile_meta["signature"], compile_meta["constants"],
    compile_meta["configs"][0]); the constexpr keys are normalised the way ASTSource does."""

    def __init__(self, fn, compile_meta: dict):
        self.fn = fn
        self.name = getattr(fn, "__name__", None)
        self.signature = dict(compile_meta.get("signature") or {})
        names = list(getattr(fn, "arg_names", []))
        self.constants = {}
        for k, v in (compile_meta.get("constants") or {}).items():
            if isinstance(k, str):
                if k not in names:
                    continue  # triton.compile would have refused it; nothing to pin
                k = (names.index(k),)
            self.constants[k] = v
        configs = compile_meta.get("configs") or [None]
        self.attrs = configs[0] if isinstance(configs[0], dict) else {}


def _metadata_of(kernel, image_path) -> dict:
    """Triton's metadata of a compiled kernel: a CompiledKernel's own, else the JSON Triton wrote
    beside the cubin (what a cache hit would have read), else the static kernel's fields."""
    md = getattr(kernel, "metadata", None)
    if hasattr(md, "_asdict"):
        return dict(md._asdict())
    if isinstance(md, dict):
        return dict(md)
    name = getattr(kernel, "name", None)
    if image_path and name:
        js = os.path.join(os.path.dirname(image_path), f"{name}.json")
        try:
            with open(js, encoding="utf-8") as f:
                out = json.load(f)
            if isinstance(out, dict):
                return out
        except (OSError, ValueError):
            pass
    return {k: getattr(kernel, k) for k in ("name", "hash", "num_warps", "shared", "num_ctas")
            if getattr(kernel, k, None) is not None}


def _image_of(kernel):
    """(sha256, size, cubin path) of a compile result's kernel, or None when unknown."""
    seen = _static_images.get(id(kernel))
    if seen is not None and seen[0] is kernel:
        return seen[1:]
    data = getattr(kernel, "kernel", None)  # CompiledKernel: the binary itself
    if not isinstance(data, (bytes, bytearray)):
        asm = getattr(kernel, "asm", None)
        data = asm.get("cubin") if isinstance(asm, dict) else None
    if isinstance(data, (bytes, bytearray)):
        return hashlib.sha256(data).hexdigest(), len(data), cubin_path(getattr(kernel, "metadata_group", None))
    return None


def record_inductor_kernels(autotuner, save=save_source) -> None:
    """A compile record ("via": "inductor load") for each configuration an Inductor autotuner
    has made a launcher for, once per (compile hash, image) and process."""
    try:
        fn = getattr(autotuner, "fn", None)
        module_file = getattr(autotuner, "filename", None)
        kname = (getattr(autotuner, "inductor_meta", None) or {}).get("kernel_name")
        for result in list(getattr(autotuner, "compile_results", None) or []):
            kernel = getattr(result, "kernel", None)
            meta = getattr(result, "compile_meta", None)
            if kernel is None or not isinstance(meta, dict) or not hasattr(fn, "arg_names"):
                continue
            image = _image_of(kernel)
            key = (getattr(kernel, "hash", None), image[0] if image else None)
            if key in _rebuilt_seen:
                continue
            _rebuilt_seen.add(key)
            md = _metadata_of(kernel, image[2] if image else None)
            for k in ("num_warps", "num_stages", "num_ctas"):
                if md.get(k) is None and meta.get(k) is not None:
                    md[k] = meta[k]
            md.setdefault("hash", getattr(kernel, "hash", None))
            md.setdefault("name", getattr(kernel, "name", None) or kname)
            rec = build_compile_record(LoadedSource(fn, meta), md, {}, True, save=save,
                                       image=image[:2] if image else None,
                                       module_file=module_file if isinstance(module_file, str) else None)
            rec["via"] = "inductor load"
            write_record(rec)
    except Exception as e:
        _error("inductor load record", e)


# ---- benchmarking paths outside the autotuners ----------------------------------------------
# Inductor also launches kernels to time them while it compiles: max-autotune's template and
# fusion choices (select_algorithm, the scheduler's fused-node benchmarks), its subprocess
# autotuning (autotune_process, which runs the same code in a child that loads this shim
# too), all through its Benchmarker or triton.testing.do_bench. Those launches are not the
# model's: each such call runs inside the ignore window.
def _ignoring(fn, label):
    if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn):
        return fn  # they would leave the window before their body runs

    def wrapper(*args, **kwargs):
        with _Benchmarking(label):
            return fn(*args, **kwargs)

    for k in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, k, getattr(fn, k))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = fn
    wrapper._kerncap_ignoring = True
    return wrapper


def _wrap_attr(owner, attr, label) -> bool:
    """Wraps owner.attr (a module's function, or a class's own method, static or class
    method included) in the ignore window; False when it is not a plain callable."""
    raw = vars(owner).get(attr)
    kind = type(raw) if isinstance(raw, (staticmethod, classmethod)) else None
    fn = raw.__func__ if kind else raw
    if not inspect.isfunction(fn):
        return False  # absent, a property, a value
    if getattr(fn, "_kerncap_ignoring", False):
        return True  # patched already
    wrapped = _ignoring(fn, label)
    if wrapped is fn:
        return False  # a generator or coroutine: left alone
    setattr(owner, attr, kind(wrapped) if kind else wrapped)
    return True


def _patch_benchmark_methods(mod) -> None:
    """Every benchmark* method of the classes the module defines."""
    wrapped = []
    for cls in list(vars(mod).values()):
        if not isinstance(cls, type) or cls.__module__ != mod.__name__:
            continue
        for attr in list(vars(cls)):
            if attr.startswith("benchmark") and _wrap_attr(cls, attr, f"{cls.__name__}.{attr}"):
                wrapped.append(f"{cls.__name__}.{attr}")
    write_record({"kind": "shim", "event": "ignore_window", "module": mod.__name__, "wrapped": wrapped})


def _patch_inductor_utils(mod) -> None:
    wrapped = [f for f in ("do_bench_using_profiling",) if _wrap_attr(mod, f, f"torch._inductor.utils.{f}")]
    write_record({"kind": "shim", "event": "ignore_window", "module": mod.__name__, "wrapped": wrapped})


def _patch_triton_testing(mod) -> None:
    wrapped = [f for f in ("do_bench", "do_bench_cudagraph") if _wrap_attr(mod, f, f"triton.testing.{f}")]
    write_record({"kind": "shim", "event": "ignore_window", "module": mod.__name__, "wrapped": wrapped})


# ---- patching modules when the application imports them ------------------------------------
_WATCH = {
    "triton": _patch_triton,
    "triton.testing": _patch_triton_testing,
    "torch._inductor.runtime.triton_heuristics": _patch_inductor,
    "torch._inductor.runtime.benchmarking": _patch_benchmark_methods,
    "torch._inductor.select_algorithm": _patch_benchmark_methods,
    "torch._inductor.autotune_process": _patch_benchmark_methods,
    # Fusion decisions run the fused kernel once outside the Benchmarker before timing it.
    "torch._inductor.scheduler": _patch_benchmark_methods,
    "torch._inductor.codegen.simd": _patch_benchmark_methods,
    "torch._inductor.codegen.triton": _patch_benchmark_methods,
    "torch._inductor.codegen.cuda_combined_scheduling": _patch_benchmark_methods,
    # A multi-kernel times its sub-kernels at its first call, then runs the fastest.
    "torch._inductor.codegen.multi_kernel": _patch_benchmark_methods,
    # max-autotune's choices (ChoiceCaller.benchmark, subgraph choices) and the profiler-based
    # timing some of them use instead of the Benchmarker.
    "torch._inductor.ir": _patch_benchmark_methods,
    "torch._inductor.codegen.subgraph": _patch_benchmark_methods,
    "torch._inductor.utils": _patch_inductor_utils,
    "torch._inductor.runtime.static_triton_launcher": _patch_static_launcher,
    "torch._inductor.runtime.static_cuda_launcher": _patch_static_launcher,
}


def _on_import(name, module):
    try:
        _WATCH[name](module)
        _log(f"hooked {name}")
    except Exception as e:
        _error(f"patching {name}", e)


class _ImportWatcher:
    """A meta path finder that lets the normal finders load a watched module, then patches it.
    Another kerncap's shim on the path (two checkouts, a reproducer's copy) installs a watcher
    of its own class: each skips every watcher, or they would ask each other forever."""

    _kerncap_import_watcher = True

    def find_spec(self, name, path=None, target=None):
        if name not in _WATCH:
            return None
        for finder in sys.meta_path:
            if getattr(finder, "_kerncap_import_watcher", False) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        inner = loader.exec_module

        def exec_module(module, _inner=inner, _name=name):
            _inner(module)
            _on_import(_name, module)

        loader.exec_module = exec_module  # on this loader instance only
        return spec


def install(out: str) -> None:
    _state["out"] = out
    try:
        _state["verbose"] = int(os.environ.get("KERNCAP_VERBOSE", "1") or 0)
    except ValueError:
        _state["verbose"] = 1
    os.makedirs(os.path.join(out, "records"), exist_ok=True)
    os.makedirs(os.path.join(out, "sources"), exist_ok=True)
    write_record({"kind": "shim", "event": "start", "argv": list(getattr(sys, "argv", []))[:8],
                  "python": sys.version.split()[0]})
    for name in _WATCH:
        if name in sys.modules:
            _on_import(name, sys.modules[name])
    sys.meta_path.insert(0, _ImportWatcher())

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
- "autotune": the configuration @triton.autotune (or Inductor) chose, written just before the
  launch that uses it, with the benchmark timings and the compiled kernel's hash.
- "bench": per autotuner benchmark, how many launches it made and whether libkerncap was told
  to ignore them.
- "shim": start, whether libkerncap offers the ignore handshake, and which benchmarking
  functions each watched module had wrapped ("ignore_window").

Benchmark launches must not become the captured launch. libkerncap (loaded by the
CUDA driver from CUDA_INJECTION64_PATH) exports kerncap_ignore_begin()/kerncap_ignore_end();
while the count is above zero it neither counts nor captures matching launches. The shim
calls them around Autotuner._bench, Inductor's CachingAutotuner.bench, triton.testing.do_bench
(and do_bench_cudagraph), and every benchmark* method of the classes in Inductor's
runtime.benchmarking, select_algorithm and autotune_process, through ctypes with RTLD_NOLOAD
(never loading the library itself).
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


def build_compile_record(src, metadata: dict, metadata_group: dict, cache_hit: bool, save=save_source) -> dict:
    """The 'compile' record for one triton.compile (src: ASTSource or IRSource)."""
    name = metadata.get("name") or getattr(src, "name", "?")
    rec = {"kind": "compile", "name": name, "hash": metadata.get("hash"), "cache_hit": bool(cache_hit)}
    cubin = next((p for k, p in metadata_group.items() if k.endswith(".cubin")), None)
    if cubin:
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
    rec["constexpr_params"] = [p.name for p in getattr(jit, "params", []) if getattr(p, "is_constexpr", False)]
    rec["signature"] = {k: _sig_json(v) for k, v in src.signature.items()}
    rec["constants"] = [[_path(k, arg_names), encode_value(v)] for k, v in src.constants.items()]
    rec["attrs"] = [[_path(k, arg_names), v] for k, v in (src.attrs or {}).items()]
    py = getattr(jit, "fn", None)
    fn = {"name": getattr(py, "__name__", name), "qualname": getattr(py, "__qualname__", name),
          "module": getattr(py, "__module__", None), "line": getattr(jit, "starting_line_number", None)}
    raw = getattr(jit, "raw_src", None)
    if raw:
        fn["source_sha256"] = save("".join(raw))
    if py is not None:
        path, text = _module_text(py)
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


def _kernel_loaded(module, function, name, metadata_group, hash):
    if function is not None:
        _handles[function] = (name, hash)


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


def _patch_inductor(mod) -> None:
    C = getattr(mod, "CachingAutotuner", None)
    if C is None or getattr(C, "_kerncap_patched", False):
        return
    orig_bench = C.bench
    orig_one = getattr(C, "autotune_to_one_config", None)

    def bench(self, *args, **kwargs):
        with _Benchmarking(self.inductor_meta.get("kernel_name", getattr(self.fn, "__name__", "?"))):
            return orig_bench(self, *args, **kwargs)

    def autotune_to_one_config(self, *args, **kwargs):
        r = orig_one(self, *args, **kwargs)
        try:
            best = self.launchers[0]
            write_record({"kind": "autotune", "source": "inductor",
                          "name": self.inductor_meta.get("kernel_name", getattr(self.fn, "__name__", None)),
                          "kernel_hash": getattr(best, "cache_hash", None), "best": _config_json(best.config),
                          "configs": [_config_json(c) for c in getattr(self, "configs", [])]})
        except Exception as e:
            _error("inductor autotune record", e)
        return r

    C.bench = bench
    if orig_one is not None:
        C.autotune_to_one_config = autotune_to_one_config
    C._kerncap_patched = True


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
}


def _on_import(name, module):
    try:
        _WATCH[name](module)
        _log(f"hooked {name}")
    except Exception as e:
        _error(f"patching {name}", e)


class _ImportWatcher:
    """A meta path finder that lets the normal finders load a watched module, then patches it."""

    def find_spec(self, name, path=None, target=None):
        if name not in _WATCH:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
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

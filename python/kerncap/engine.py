"""The replay engine from Python: ctypes over the C ABI of libkerncap_replay.so
(include/kerncap/replay.h). This module holds no replay logic of its own: reading and checking
a capture, reserving and restoring memory, relocation, launching, timing and comparing all
happen in the one C++ engine that `kerncap replay/validate` use.

    from kerncap import engine
    info = engine.capture_info("iso/k0")           # the manifest, checked, no GPU needed
    with engine.Session("iso/k0") as s:            # before anything else allocates device memory
        s.restore()
        s.launch()
        print(s.compare()["line"], s.time()["median_ms"])

    with engine.Session("iso/k0") as s:            # the evaluation loop: many images, one session
        for path in variants:
            r = s.evaluate(path)                   # or image bytes; None: the captured image
            print(r["line"], r["timing"]["median_ms"])

Standard library only: a copy of this file runs inside every Triton reproducer (OUT/kerncap_repro/).
"""
from __future__ import annotations

import ctypes
import glob
import json
import os
import socket
import subprocess
import tempfile
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Union

# The ABI this binding speaks (KC_REPLAY_ABI_VERSION in include/kerncap/replay.h), and the
# revision of calls added within it that this binding can use (KC_REPLAY_ABI_REVISION): an
# older library (lower revision) still serves every call of its own revision.
ABI_VERSION = 1
ABI_REVISION = 3
LIBRARY_NAME = "libkerncap_replay.so"
# The one environment variable this binding reads: an explicit path of the library. Checked
# against the C++ table of KERNCAP_* variables by python/tests/test_engine.py.
ENV_LIBRARY = "KERNCAP_REPLAY_LIB"

# Return codes of the C ABI (KC_OK, KC_E_*): the kerncap exit codes.
OK, E_FAIL, E_INPUT, E_DEVICE, E_INTERNAL = 0, 1, 2, 3, 70
_KIND = {E_FAIL: "fail", E_INPUT: "input", E_DEVICE: "device", E_INTERNAL: "internal"}

HERE = os.path.dirname(os.path.abspath(__file__))

# What Session.evaluate takes as an image: None (the captured one), a path, or the bytes.
ImageArg = Union[None, str, "os.PathLike[str]", bytes, bytearray, memoryview]


class EngineError(Exception):
    """A call into the engine failed: the engine's message and the kerncap exit code
    (2 bad input, 3 device error, 70 internal)."""

    def __init__(self, message: str, exit_code: int = E_INTERNAL, function: str = ""):
        super().__init__(message)
        self.exit_code, self.function = exit_code, function

    @property
    def kind(self) -> str:
        return _KIND.get(self.exit_code, "internal")


def candidates() -> List[str]:
    """Where the library is looked for, in order: $KERNCAP_REPLAY_LIB; next to this file (the copy
    in a reproducer's kerncap_repro/); the pip-installed package's own lib/ (site-packages/kerncap/lib);
    the `cmake --install` layout (PREFIX/share/kerncap/python/kerncap -> PREFIX/lib); the source
    tree's build directories (build*/lib, newest first)."""
    out = []
    explicit = os.environ.get(ENV_LIBRARY)
    if explicit:
        return [explicit]  # explicit means explicit: no silent fallback to another build
    out.append(os.path.join(HERE, LIBRARY_NAME))
    out.append(os.path.join(HERE, "lib", LIBRARY_NAME))
    out.append(os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "lib", LIBRARY_NAME)))
    repo = os.path.dirname(os.path.dirname(HERE))
    built = glob.glob(os.path.join(repo, "build*", "lib", LIBRARY_NAME))
    out += sorted(built, key=lambda p: os.path.getmtime(p), reverse=True)
    return out


def locate() -> str:
    tried = candidates()
    for p in tried:
        if os.path.isfile(p):
            return os.path.abspath(p)
    if os.environ.get(ENV_LIBRARY):
        raise EngineError(f"{ENV_LIBRARY}={tried[0]}: no such file", E_INPUT)
    raise EngineError(f"{LIBRARY_NAME} not found (looked in {', '.join(tried)}): build kerncap "
                      f"(cmake --build build) or set {ENV_LIBRARY} to the library's path", E_INPUT)


_u64, _vp, _cp = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_char_p
_SIGNATURES = {  # name: (restype, argtypes); JSON results come back as void* so that kc_free can free them
    "kc_version": (_cp, []),
    "kc_last_error": (_cp, []),
    "kc_free": (None, [_vp]),
    "kc_capture_info": (ctypes.c_int, [_cp, ctypes.POINTER(_vp)]),
    "kc_open": (ctypes.c_int, [_cp, _cp, ctypes.POINTER(_vp)]),
    "kc_close": (None, [_vp]),
    "kc_restore": (ctypes.c_int, [_vp, ctypes.POINTER(_vp)]),
    "kc_translate": (ctypes.c_int, [_vp, _u64, ctypes.POINTER(_u64)]),
    "kc_params": (ctypes.c_int, [_vp, _vp, _u64, ctypes.POINTER(_u64)]),
    "kc_stream": (ctypes.c_int, [_vp, ctypes.POINTER(_u64)]),
    "kc_launch": (ctypes.c_int, [_vp]),
    "kc_time": (ctypes.c_int, [_vp, _vp, _vp, _cp, ctypes.POINTER(_vp)]),
    "kc_compare": (ctypes.c_int, [_vp, _cp, ctypes.POINTER(_vp)]),
}
# Calls of later revisions: {revision: {name: (restype, argtypes)}}.
_REVISIONS = {
    1: {
        "kc_evaluate": (ctypes.c_int, [_vp, _cp, _cp, ctypes.POINTER(_vp)]),
        "kc_evaluate_image": (ctypes.c_int, [_vp, _cp, _u64, _cp, _cp, ctypes.POINTER(_vp)]),
    },
    2: {
        "kc_evaluate_launch": (ctypes.c_int, [_vp, _vp, _vp, _cp, ctypes.POINTER(_vp)]),
    },
    3: {
        "kc_regime_set": (ctypes.c_int, [_cp, ctypes.POINTER(_vp)]),
        "kc_regime_verdict": (ctypes.c_int, [_cp, _cp, _cp, ctypes.POINTER(_vp)]),
    },
}

# kc_launch_fn: int (*)(void* user, uint64_t stream)
LaunchFn = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _u64)


class Library:
    """A loaded libkerncap_replay.so whose ABI version matched."""

    def __init__(self, path: str):
        self.path = path
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise EngineError(f"cannot load the replay engine {path}: {e}", E_INPUT) from None
        try:
            abi = lib.kc_abi_version
        except AttributeError:
            raise EngineError(f"{path} is not kerncap's replay engine (no kc_abi_version)", E_INPUT) from None
        abi.restype, abi.argtypes = ctypes.c_int, []
        found = abi()
        if found != ABI_VERSION:
            raise EngineError(
                f"{path} implements replay ABI version {found}, this Python package speaks version {ABI_VERSION}: "
                "use the kerncap/python/kerncap of the same build (or rebuild kerncap and generate the reproducer "
                f"again; {ENV_LIBRARY} selects a library explicitly)", E_INPUT)
        try:
            rev = lib.kc_abi_revision
            rev.restype, rev.argtypes = ctypes.c_int, []
            self.revision = min(rev(), ABI_REVISION)
        except AttributeError:
            self.revision = 0  # a library from before revisions
        wanted = dict(_SIGNATURES)
        for r in range(1, self.revision + 1):
            wanted.update(_REVISIONS.get(r, {}))
        for name, (res, args) in wanted.items():
            try:
                f = getattr(lib, name)
            except AttributeError:
                raise EngineError(f"{path} lacks {name} although it says ABI version {found} revision "
                                  f"{self.revision}: a broken build", E_INTERNAL) from None
            f.restype, f.argtypes = res, args
        self.lib = lib

    def need_revision(self, revision: int, what: str) -> None:
        """Refuses a call the loaded library is too old for (EngineError, exit code 2)."""
        if self.revision < revision:
            raise EngineError(f"{what} needs replay ABI revision {revision}; {self.path} has revision "
                              f"{self.revision}: rebuild kerncap (or point {ENV_LIBRARY} at a newer build)", E_INPUT)

    def check(self, rc: int, function: str) -> None:
        if rc == OK:
            return
        msg = self.lib.kc_last_error()
        text = msg.decode("utf-8", "replace") if msg else ""
        raise EngineError(text or f"{function} failed (code {rc})", rc if rc in _KIND else E_INTERNAL, function)

    def take_json(self, p: _vp) -> Dict[str, Any]:
        """A JSON string the library returned, parsed, and freed."""
        if not p.value:
            return {}
        try:
            return json.loads(ctypes.string_at(p.value).decode("utf-8", "replace"))
        finally:
            self.lib.kc_free(p)

    def version(self) -> str:
        v = self.lib.kc_version()
        return v.decode() if v else ""


_loaded: Dict[str, Library] = {}


def load(path: Optional[str] = None) -> Library:
    """The engine library at `path`, or the one locate() finds; loaded once per path."""
    p = os.path.abspath(path) if path else locate()
    if p not in _loaded:
        _loaded[p] = Library(p)
    return _loaded[p]


def version() -> str:
    return load().version()


def capture_info(path: str, lib: Optional[Library] = None) -> Dict[str, Any]:
    """The capture's manifest as the engine reads and checks it (no GPU): manifest.json's object
    plus "directory". `path`: OUT or OUT/capture. Raises EngineError (exit code 2) when the
    capture is missing, incomplete, damaged or newer than this kerncap."""
    lib = lib or load()
    out = _vp()
    lib.check(lib.lib.kc_capture_info(os.fsencode(path), ctypes.byref(out)), "kc_capture_info")
    return lib.take_json(out)


def is_regime_set(path: str) -> bool:
    """OUT holds a regime set (extract --regimes), or several kernels' sets (then regime_set
    refuses, naming each)."""
    from .out_layout import REGIME_KERNELS_INDEX, REGIMES_INDEX  # beside this file in a reproducer too
    return any(os.path.isfile(os.path.join(path, n)) for n in (REGIMES_INDEX, REGIME_KERNELS_INDEX))


def regime_set(path: str, lib: Optional[Library] = None) -> Dict[str, Any]:
    """The regime set in OUT (`kerncap extract KERNEL --regimes`, OUT/regimes.json) as the engine
    reads and checks it (no GPU): the index, each captured regime with "path", its capture
    directory. Raises EngineError (exit code 2) for a set of several kernels (the message names
    each kernel's set), a set with no captured regime, or a damaged index."""
    lib = lib or load()
    lib.need_revision(3, "regime_set")
    out = _vp()
    lib.check(lib.lib.kc_regime_set(os.fsencode(path), ctypes.byref(out)), "kc_regime_set")
    return lib.take_json(out)


def regime_verdict(path: str, outcomes: List[Dict[str, Any]], min_speedup: Optional[float] = None,
                   variant: bool = True, lib: Optional[Library] = None) -> Dict[str, Any]:
    """The regime set's verdict (`kerncap validate OUT --json`'s document over every regime) from
    the one judge's verdict on each captured regime, wherever it was reached: outcomes
    [{"dir", "verdict": Session.evaluate's document (speedup=True for a variant) or None,
    "error": why there is none}], every captured regime once. min_speedup applies to the
    weighted speed-up (leave it out of the per-regime judging). No GPU. docs/capture.md#regimes-every-launch-shape-of-one-kernel."""
    lib = lib or load()
    lib.need_revision(3, "regime_verdict")
    out = _vp()
    opts = json.dumps({"min_speedup": min_speedup, "variant": variant}).encode()
    rc = lib.lib.kc_regime_verdict(os.fsencode(path), json.dumps(outcomes).encode(), opts, ctypes.byref(out))
    lib.check(rc, "kc_regime_verdict")
    return lib.take_json(out)


def _opts(d: Dict[str, Any]) -> Optional[bytes]:
    d = {k: v for k, v in d.items() if v is not None}
    return json.dumps(d).encode() if d else None


# Set once a candidate's fault cost this process its CUDA context: every later Session of the
# process judges in a `kerncap serve` child (kc_open could not even retain the context).
_CONTEXT_LOST: Optional[str] = None
# The footprint's file in a capture directory (src/format/footprint.hpp kFootprintJson;
# python/tests/test_judge_keys.py checks it): a child's strength is the in-process one.
FOOTPRINT_JSON = "footprint.json"


# The serve protocol's version (src/serve/protocol.hpp kServeVersion; test_judge_keys.py checks it).
SERVE_PROTOCOL = 1


class _ServeChild:
    """The judge in a `kerncap serve` child process: where a Session goes on once a candidate's
    fault left this process's CUDA context unusable (CUDA's sticky errors: a primary-context
    reset does not clear them on the H200's driver). It speaks the serve protocol
    (src/serve/protocol.hpp: one JSON line each way, one request per connection) over the
    abstract Unix socket that `kerncap serve --status --json` names; after another fault the
    server starts itself again (same pid) and the next request waits for it."""

    def __init__(self, path: str, allow_relocate: bool, strong: bool, ready_timeout: float = 300.0):
        from .cli_path import find_kerncap
        self.kc = find_kerncap()
        self.path = path
        args = [self.kc, "serve", path, "--idle-timeout", "3600", "--footprint", "require" if strong else "never"]
        if not allow_relocate:
            args.append("--no-relocate")
        self.log = tempfile.NamedTemporaryFile(prefix="kerncap-serve-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.socket = self._wait_ready(ready_timeout)

    def _log_tail(self) -> str:
        try:
            with open(self.log.name, errors="replace") as f:
                return f.read()[-1500:]
        except OSError:
            return ""

    def _wait_ready(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise EngineError(f"the kerncap serve child for {self.path} exited {self.proc.returncode}: "
                                  f"{self._log_tail()}", E_DEVICE)
            p = subprocess.run([self.kc, "serve", "--status", self.path, "--json"], capture_output=True, text=True,
                               timeout=60)
            if p.returncode == 0:
                doc = json.loads(p.stdout)
                if doc.get("pid") == self.proc.pid and doc.get("socket"):
                    return str(doc["socket"])
            time.sleep(0.2)
        raise EngineError(f"the kerncap serve child for {self.path} was not ready after {timeout:.0f} s: "
                          f"{self._log_tail()}", E_DEVICE)

    def _call(self, request: Dict[str, Any]) -> Dict[str, Any]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect("\0" + self.socket)
            s.sendall((json.dumps(request) + "\n").encode())
            buf = bytearray()
            while not buf.endswith(b"\n"):
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                buf += chunk
        try:
            resp = json.loads(bytes(buf))
        except ValueError:
            raise EngineError(f"the kerncap serve child answered no JSON ({len(buf)} bytes)", E_DEVICE) from None
        if not isinstance(resp, dict) or resp.get("kerncap_serve") != SERVE_PROTOCOL:
            raise EngineError("the kerncap serve child speaks another protocol version", E_INTERNAL)
        return resp

    def evaluate(self, cubin: Optional[str], image: Optional[str], options: Dict[str, Any]) -> Dict[str, Any]:
        request: Dict[str, Any] = {"kerncap_serve": SERVE_PROTOCOL, "op": "evaluate", "options": options}
        if cubin is not None:
            request["cubin"] = os.path.abspath(cubin)
            request["image"] = image or cubin
        try:
            resp = self._call(request)
        except (ConnectionRefusedError, FileNotFoundError):  # between its answer and its restart
            self.socket = self._wait_ready(300.0)
            resp = self._call(request)
        if not resp.get("ok"):
            err = resp.get("error") or {}
            code = {"usage": E_INPUT, "input": E_INPUT, "device": E_DEVICE, "mismatch": E_FAIL}.get(
                err.get("kind"), E_INTERNAL)
            raise EngineError(str(err.get("message", "the kerncap serve child refused the request")), code,
                              "kc_evaluate (kerncap serve child)")
        ev = resp["evaluation"]
        if ev.get("context_lost"):  # it starts itself again; the next request waits for it
            self.socket = self._wait_ready(300.0)
        return ev

    def close(self) -> None:
        try:
            subprocess.run([self.kc, "serve", "--stop", self.path], capture_output=True, timeout=60)
            self.proc.wait(timeout=30)
        except (subprocess.TimeoutExpired, OSError):
            self.proc.kill()
        finally:
            try:
                os.unlink(self.log.name)
            except OSError:
                pass


class Session:
    """One capture opened for replay: its memory reserved and mapped at the captured addresses
    (where the driver allows; relocated otherwise), the image loaded. Open it before anything
    else in the process allocates device memory (importing torch is fine, using CUDA is not);
    the engine keeps the device's primary context current on this thread, which Triton and
    torch then share."""

    # After a fault that cost this process its CUDA context: the child that judges instead.
    _child: Optional[_ServeChild] = None
    _lost = ""  # that fault

    def __init__(self, path: str, cubin: Optional[str] = None, allow_relocate: bool = True,
                 progress: bool = False, verify: bool = False, lib: Optional[Library] = None,
                 strong: Optional[bool] = None, recover: Optional[bool] = None, prepare: Optional[bool] = None):
        """cubin: a variant image instead of the captured one; allow_relocate=False fails rather
        than moving a range; progress: the engine's progress lines on stderr; verify: check
        the blobs' hashes while restoring; strong=False: no poisoning of write-only bytes even
        when the capture has a footprint (default: strong when it has one); recover=False: a
        candidate whose fault costs the process its CUDA context is not recovered here (its
        verdict says "context_lost" at once; for a caller that replaces the process, such as
        the evaluation pool); prepare=True: read the SASS's element types and load CUPTI now
        rather than in the first evaluations (no verdict changes)."""
        self.path = path
        self._lib = lib or load()
        self._s = _vp()
        self._allow_relocate = allow_relocate
        if _CONTEXT_LOST is not None:  # no CUDA in this process any more: straight to a child
            self._lost = _CONTEXT_LOST
            if cubin is not None:
                raise EngineError(f"this process's CUDA context is unusable since a candidate faulted "
                                  f"({_CONTEXT_LOST}); open the session with cubin= in a new process", E_DEVICE)
            if strong is None:
                info = capture_info(path, self._lib)
                strong = os.path.isfile(os.path.join(info["directory"], FOOTPRINT_JSON))
            self._child = _ServeChild(path, allow_relocate, bool(strong))
            return
        opts = _opts({"cubin": cubin, "allow_relocate": allow_relocate, "progress": progress, "verify": verify,
                      "strong": strong, "recover": recover, "prepare": prepare})
        self._lib.check(self._lib.lib.kc_open(os.fsencode(path), opts, ctypes.byref(self._s)), "kc_open")

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _handle(self) -> _vp:
        if self._child is not None:
            raise EngineError(f"this process's CUDA context is unusable since a candidate faulted ({self._lost}); "
                              f"only evaluate() goes on, in a kerncap serve child (pid {self._child.proc.pid})",
                              E_DEVICE)
        if not self._s.value:
            raise EngineError("the replay session is closed", E_INPUT)
        return self._s

    @property
    def closed(self) -> bool:
        return not self._s.value and self._child is None

    def close(self) -> None:
        if self._s.value:
            self._lib.lib.kc_close(self._s)
            self._s = _vp()
        if self._child is not None:
            self._child.close()
            self._child = None

    def _after(self, doc: Dict[str, Any]) -> Dict[str, Any]:
        """A verdict that cost this process its CUDA context moves the session to a child."""
        global _CONTEXT_LOST
        if doc.get("context_lost") and self._child is None:
            self._lost = str(doc.get("fault") or "a fault")
            _CONTEXT_LOST = self._lost
            strong = bool(doc.get("session_strong"))
            self._lib.lib.kc_close(self._s)
            self._s = _vp()
            self._child = _ServeChild(self.path, self._allow_relocate, strong)
        return doc

    def restore(self) -> Dict[str, Any]:
        """Every region and global back to BEFORE: {"bytes", "rewritten_words"}."""
        out = _vp()
        self._lib.check(self._lib.lib.kc_restore(self._handle(), ctypes.byref(out)), "kc_restore")
        return self._lib.take_json(out)

    def translate(self, captured_address: int) -> int:
        """Where a captured device address lives in this replay (unchanged outside every region)."""
        r = _u64()
        self._lib.check(self._lib.lib.kc_translate(self._handle(), captured_address, ctypes.byref(r)),
                        "kc_translate")
        return r.value

    def params(self) -> bytes:
        """The captured parameter bytes with pointers into moved ranges rewritten."""
        n = _u64()
        self._lib.check(self._lib.lib.kc_params(self._handle(), None, 0, ctypes.byref(n)), "kc_params")
        buf = ctypes.create_string_buffer(max(1, n.value))
        self._lib.check(self._lib.lib.kc_params(self._handle(), buf, n.value, ctypes.byref(n)), "kc_params")
        return buf.raw[:n.value]

    def stream(self) -> int:
        """The CUstream (as an integer) the engine launches and times on."""
        r = _u64()
        self._lib.check(self._lib.lib.kc_stream(self._handle(), ctypes.byref(r)), "kc_stream")
        return r.value

    def launch(self) -> None:
        """The loaded image once, with the captured parameters and geometry; waits for it."""
        self._lib.check(self._lib.lib.kc_launch(self._handle()), "kc_launch")

    def time(self, launch: Optional[Callable[[int], None]] = None, warmup: Optional[int] = None,
             iterations: Optional[int] = None, restore_each: Optional[bool] = None,
             restore: Optional[str] = None, cache: Optional[str] = None,
             timer: Optional[str] = None) -> Dict[str, Any]:
        """Times launches (kernel time only; see docs/engine.md, Timing). launch=None: the
        loaded image (kc_launch's kernel). Otherwise launch(stream) is called for every launch
        and must enqueue its kernels on `stream`; an exception it raises stops the timing and
        is raised here. restore: "written" (default: the bytes a launch changes are put back
        before each launch), "full" (= restore_each=True) or "none"; cache: "auto" (default), "warm" or "cold";
        timer: "auto", "cupti", "spin-events" or "events".
        Returns {"method", "restore", "cache", "clock", "warmup", "iterations", "median_ms",
        "min_ms", "max_ms", "mean_ms", "stddev_ms", "times_ms", ...}."""
        opts = _opts({"warmup": warmup, "iterations": iterations, "restore_each": restore_each,
                      "restore": restore, "cache": cache, "timer": timer})
        return self._with_launch(launch, lambda cb, out: self._lib.lib.kc_time(self._handle(), cb, None, opts, out),
                                 "kc_time")

    def _with_launch(self, launch: Optional[Callable[[int], None]], call: Callable[[Any, Any], int],
                     function: str) -> Dict[str, Any]:
        """call(callback, out) with `launch` as a kc_launch_fn (None: no callback); an exception
        launch raises stops the call and is raised here (never unwound through C frames)."""
        failures: List[BaseException] = []
        cb = None
        if launch is not None:
            def trampoline(_user, stream):
                try:
                    launch(int(stream))
                    return 0
                except BaseException as e:
                    failures.append(e)
                    return 1
            cb = LaunchFn(trampoline)
        out = _vp()
        rc = call(ctypes.cast(cb, _vp) if cb else None, ctypes.byref(out))
        if failures:
            self._lib.take_json(out)
            raise failures[0]
        self._lib.check(rc, function)
        return self._lib.take_json(out)

    def compare(self, spec: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Device memory vs the application's result. spec=None: the engine's own choice
        (OUT/compare.json when the reproducer has one), exactly what `kerncap validate` uses.
        Returns validate's JSON object; a FAIL is {"result": "FAIL", ...}, not an exception."""
        out = _vp()
        text = json.dumps(spec).encode() if spec is not None else None
        self._lib.check(self._lib.lib.kc_compare(self._handle(), text, ctypes.byref(out)), "kc_compare")
        return self._lib.take_json(out)

    def evaluate(self, image: ImageArg = None, time: bool = True, fuzz: int = 0, seed: Optional[int] = None,
                 spec: Optional[Dict[str, Any]] = None, keep_loaded: Optional[bool] = None,
                 warmup: Optional[int] = None, iterations: Optional[int] = None, restore: Optional[str] = None,
                 cache: Optional[str] = None, timer: Optional[str] = None,
                 name: Optional[str] = None, **judge: Any) -> Dict[str, Any]:
        """Judges one image with the one judge `kerncap validate --cubin IMAGE` uses, in this
        open session (the evaluation loop, docs/engine.md): loads it (checked like --cubin),
        launches it on memory as restored, compares with AFTER by OUT/kerncap.toml's rules
        (tolerances, invariants, min_speedup) as validate does, times it (time=True; kc_time's
        warmup/iterations/restore/cache/timer, default 1 + 10 launches) and runs `fuzz` trials
        against the captured image on random float inputs (needs a footprint).

        judge: validate's judging flags as keywords, over kerncap.toml: exact=True (a variant
        byte for byte), dtype/atol/rtol, invariants="no_nan,must_write", no_invariants=True,
        tolerance=["3:atol=1e-3"], min_speedup=1.1, check_determinism=False.

        A variant that faults (an illegal address, a trap) is {"result": "FAIL", "fault": ...}
        and the session recovers ("recovered": true): the device's context is reset and the
        capture opened again, so the next image is judged normally.

        image: None (the captured image), a path (str or os.PathLike) of a cubin, fatbin or PTX
        file, or the image's bytes (bytes, bytearray, memoryview; `name` names them in
        messages). spec: as for compare(). keep_loaded=False unloads the variant's module
        afterwards (default: kept until another variant replaces it).

        Returns validate --json's object ("result", "line", "regions", "kernel", "image",
        "device", "fuzz"...) plus "timing" (time()'s object or None), "image_hash",
        "captured_image", "loaded", "memory" ("written" or "full") and "seconds". A FAIL is
        {"result": "FAIL", ...}; an image the session cannot run (no such file, another
        kernel, another parameter layout) raises EngineError with exit code 2, and the session
        stays usable."""
        self._lib.need_revision(1, "Session.evaluate")
        unknown = sorted(set(judge) - _JUDGE_KEYS)
        if unknown:
            raise EngineError(f"evaluate: unknown option(s) {', '.join(unknown)} (judge options: "
                              f"{', '.join(sorted(_JUDGE_KEYS))})", E_INPUT)
        opts = _opts({"time": time, "fuzz": fuzz or None, "seed": seed, "spec": spec, "keep_loaded": keep_loaded,
                      "warmup": warmup, "iterations": iterations, "restore": restore, "cache": cache,
                      "timer": timer, **judge})
        if self._child is not None:
            return self._child_evaluate(image, name, json.loads(opts) if opts else {})
        out = _vp()
        if image is None or isinstance(image, (str, os.PathLike)):
            path = os.fsencode(image) if image is not None else None
            rc = self._lib.lib.kc_evaluate(self._handle(), path, opts, ctypes.byref(out))
            self._lib.check(rc, "kc_evaluate")
        elif isinstance(image, (bytes, bytearray, memoryview)):
            data = bytes(image)
            desc = (name or "image bytes").encode()
            rc = self._lib.lib.kc_evaluate_image(self._handle(), data, len(data), desc, opts, ctypes.byref(out))
            self._lib.check(rc, "kc_evaluate_image")
        else:
            raise EngineError(f"evaluate: image must be None, a path or bytes, not {type(image).__name__}", E_INPUT)
        return self._after(self._lib.take_json(out))

    def _child_evaluate(self, image: ImageArg, name: Optional[str], options: Dict[str, Any]) -> Dict[str, Any]:
        assert self._child is not None
        if image is None or isinstance(image, (str, os.PathLike)):
            path = os.fspath(image) if image is not None else None
            return self._child.evaluate(path, path, options)
        if not isinstance(image, (bytes, bytearray, memoryview)):
            raise EngineError(f"evaluate: image must be None, a path or bytes, not {type(image).__name__}", E_INPUT)
        with tempfile.NamedTemporaryFile(prefix="kerncap-image-", suffix=".bin") as f:
            f.write(bytes(image))
            f.flush()
            return self._child.evaluate(f.name, name or "image bytes", options)

    def evaluate_launch(self, launch: Callable[[int], None], time: bool = True, spec: Optional[Dict[str, Any]] = None,
                        warmup: Optional[int] = None, iterations: Optional[int] = None,
                        restore: Optional[str] = None, cache: Optional[str] = None, timer: Optional[str] = None,
                        **judge: Any) -> Dict[str, Any]:
        """The one judge for a launch this process makes itself (a Triton kernel): memory as
        restored, launch(stream) (it must enqueue on `stream`), then the comparison,
        determinism check (launch is called again), timing and min_speedup with the callback,
        as evaluate() does for a variant image (judge: its keywords). An exception launch
        raises stops the evaluation and is raised here. Returns the same verdict document,
        "image": "the caller's launch"."""
        self._lib.need_revision(2, "Session.evaluate_launch")
        unknown = sorted(set(judge) - _JUDGE_KEYS)
        if unknown:
            raise EngineError(f"evaluate_launch: unknown option(s) {', '.join(unknown)}", E_INPUT)
        opts = _opts({"time": time, "spec": spec, "warmup": warmup, "iterations": iterations, "restore": restore,
                      "cache": cache, "timer": timer, **judge})
        doc = self._with_launch(
            launch, lambda cb, out: self._lib.lib.kc_evaluate_launch(self._handle(), cb, None, opts, out),
            "kc_evaluate_launch")
        if doc.get("context_lost"):  # the caller's kernel cannot move to another process
            global _CONTEXT_LOST
            self._lost = _CONTEXT_LOST = str(doc.get("fault") or "a fault")
        return doc


# The judge's keys of kc_evaluate's options besides spec/fuzz/seed (src/replay/judge.hpp,
# JudgeOverrides; tests/unit check this list against the C++ one).
_JUDGE_KEYS = {"dtype", "atol", "rtol", "exact", "check_determinism", "invariants", "no_invariants", "tolerance",
               "min_speedup", "speedup"}


def evaluate_all(path: str, images: Iterable[ImageArg], devices: Union[None, str, int, List[int]] = None,
                 time_limit: Optional[float] = None, **options: Any) -> Iterator[Dict[str, Any]]:
    """Opens the capture once and evaluates each image in turn (Session.evaluate's options),
    yielding each result; the session is closed when the loop ends or is left early.

    With devices ("all", [0, 1]) or time_limit (seconds per candidate): the images are judged
    by kerncap.evaluate_pool instead, one worker process and Session per GPU (devices=None
    there: one worker on the default GPU), and what is yielded are its records in completion
    order (index, image, result, line, error, device, device_name, worker_pid, seconds,
    timed_on, verdict: this function's usual document). Its keywords judge=, progress=,
    open_options= and spares= pass through. A regime set (OUT/regimes.json) always goes that
    way: one record per candidate, its verdict the set's document. docs/evaluate.md."""
    if devices is not None or time_limit is not None or is_regime_set(path):
        # A regime set's regimes each need their own session (one process each): the pool's way.
        from .evaluate_pool import DEFAULT_JUDGE, _evaluate_many, resolve_devices  # not in a reproducer's copy
        pool = _evaluate_many(path, images, [None] if devices is None else resolve_devices(devices),
                              time_limit=time_limit, judge=options.pop("judge", DEFAULT_JUDGE),
                              progress=options.pop("progress", None), open_options=options.pop("open_options", None),
                              spares=options.pop("spares", "auto"), **options)
        try:
            yield from pool
        finally:
            pool.close()
        return
    with Session(path) as s:
        for image in images:
            yield s.evaluate(image, **options)

"""The Python API: a thin layer over the `kerncap` CLI's --json output.

    from kerncap import Kerncap
    kc = Kerncap()
    prof = kc.profile(["python3", "train.py"])
    ex = kc.extract(prof.kernels[0].name, ["python3", "train.py"], "iso/k0")
    print(kc.replay("iso/k0").median_ms, kc.validate("iso/k0").passed)

Exit codes of the CLI: 0 ok / PASS, 1 FAIL (validate: returned as passed=False), 2 bad input,
3 device error (both raised as KerncapError with the CLI's message).
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

Command = Union[str, Sequence[str]]
PY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
SHIM_DIR = os.path.join(PY_DIR, "kerncap", "triton_shim")


class KerncapError(Exception):
    """The CLI failed: kind is "input" (exit 2), "device" (exit 3) or "internal"."""

    def __init__(self, message: str, exit_code: int, command: List[str], stderr: str = ""):
        super().__init__(message)
        self.exit_code, self.command, self.stderr = exit_code, command, stderr
        self.kind = {2: "input", 3: "device"}.get(exit_code, "internal")


@dataclass
class KernelProfile:
    rank: int
    name: str
    demangled: str
    kind: str
    category: str
    calls: int
    total_ns: int
    avg_ns: float
    median_ns: float
    percent: float
    grid: Any
    block: Any
    raw: dict = field(repr=False, default_factory=dict)


@dataclass
class ProfileResult:
    kernels: List[KernelProfile]
    totals: dict
    application: Optional[dict]
    raw: dict = field(repr=False, default_factory=dict)


@dataclass
class ExtractResult:
    output: str
    capture: str
    kernel: str
    mangled: str
    dispatch: int
    regions: int
    before_bytes: int
    after_bytes: int
    capture_seconds: float
    application: str
    triton: Optional[dict] = None  # the Triton reproducer's summary, when the kernel is a Triton kernel
    raw: dict = field(repr=False, default_factory=dict)


@dataclass
class ReplayResult:
    kernel: str
    median_ms: float
    min_ms: float
    max_ms: float
    times_ms: List[float]
    relocated_regions: int
    rewritten_words: int
    raw: dict = field(repr=False, default_factory=dict)


@dataclass
class RegionResult:
    id: int
    kind: str
    base: str
    size: int
    written: int
    passed: bool
    exact: bool
    max_abs_error: float
    max_rel_error: float
    summary: str


@dataclass
class ValidateResult:
    passed: bool
    result: str  # "PASS" | "FAIL"
    line: str
    regions: List[RegionResult]
    relocated_regions: int
    rewritten_words: int
    raw: dict = field(repr=False, default_factory=dict)


def _argv(cmd: Command) -> List[str]:
    return shlex.split(cmd) if isinstance(cmd, str) else list(cmd)


def _last_json(text: str) -> dict:
    """The last JSON object printed (profile prints it as the last stdout line; others pretty-print)."""
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                break
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON in the output")
    return json.loads(text[start:])


def triton_env(output: str, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """Environment that activates the Triton shim for an application extracted into `output`."""
    env = dict(os.environ if base is None else base)
    paths = [SHIM_DIR] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != SHIM_DIR]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["KERNCAP_TRITON_OUT"] = os.path.join(os.path.abspath(output), "triton")
    return env


class Kerncap:
    def __init__(self, binary: Optional[str] = None, timeout: Optional[float] = None,
                 env: Optional[Dict[str, str]] = None):
        self.binary = binary or os.environ.get("KERNCAP_BIN") or shutil.which("kerncap") or self._in_tree()
        if not self.binary:
            raise KerncapError("kerncap executable not found: pass Kerncap(binary=...), set KERNCAP_BIN, or put it "
                               "on PATH", 2, [])
        self.timeout, self.env = timeout, env

    @staticmethod
    def _in_tree() -> Optional[str]:
        root = os.path.dirname(PY_DIR)
        for b in ("build", "build-release"):
            p = os.path.join(root, b, "bin", "kerncap")
            if os.access(p, os.X_OK):
                return p
        return None

    def _run(self, args: List[str], ok=(0,), env=None) -> subprocess.CompletedProcess:
        cmd = [self.binary] + args
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout,
                           env=env if env is not None else (dict(os.environ, **self.env) if self.env else None))
        if p.returncode not in ok:
            msg = next((l for l in reversed(p.stderr.splitlines()) if "error" in l), p.stderr.strip()[-500:])
            raise KerncapError(msg or f"kerncap exited with {p.returncode}", p.returncode, cmd, p.stderr)
        return p

    def profile(self, cmd: Command, top: Optional[int] = None, filter: Optional[str] = None) -> ProfileResult:
        args = ["profile", "--json"]
        if top is not None:
            args += ["--top", str(top)]
        if filter:
            args += ["--filter", filter]
        p = self._run(args + ["--"] + _argv(cmd))
        doc = _last_json(p.stdout)
        ks = [KernelProfile(k.get("rank", 0), k.get("name", ""), k.get("demangled", ""), k.get("kind", ""),
                            k.get("category", ""), k.get("calls", 0), k.get("total_ns", 0), k.get("avg_ns", 0),
                            k.get("median_ns", 0), k.get("percent", 0), k.get("grid"), k.get("block"), k)
              for k in doc.get("kernels", [])]
        return ProfileResult(ks, doc.get("totals", {}), doc.get("application"), doc)

    def extract(self, kernel: str, cmd: Command, output: str, dispatch: int = 0, regex: bool = False,
                keep_running: bool = False, force: bool = False, triton: Union[bool, str] = "auto") -> ExtractResult:
        """Captures one launch. triton="auto": the Triton shim records compile metadata and, when the
        captured kernel is a Triton kernel, kernel_variant.py and reproducer.py are written."""
        args = ["extract", kernel, "-o", output, "--dispatch", str(dispatch), "--json"]
        args += ["--regex"] * regex + ["--continue"] * keep_running + ["--force"] * force
        env = None
        if triton:
            env = triton_env(output, dict(os.environ, **(self.env or {})))
        p = self._run(args + ["--"] + _argv(cmd), env=env)
        j = _last_json(p.stdout)
        res = ExtractResult(j.get("output", output), j.get("capture", ""), j.get("kernel", ""), j.get("mangled", ""),
                            j.get("dispatch", dispatch), j.get("regions", 0), j.get("before_bytes", 0),
                            j.get("after_bytes", 0), j.get("capture_seconds", 0.0), j.get("application", ""), None, j)
        if triton:
            from . import triton_records
            if triton_records.load(os.path.join(output, "triton")).compiles:  # the application compiled Triton
                res.triton = self.triton_reproducer(output, required=triton is True)
        return res

    def triton_reproducer(self, output: str, required: bool = True) -> Optional[dict]:
        """Writes kernel_variant.py / reproducer.py for a captured Triton kernel (see triton_repro)."""
        from . import engine, triton_launch, triton_records, triton_repro
        try:
            return triton_repro.generate(output, quiet=True)
        except (triton_records.RecordError, engine.EngineError, triton_launch.PlanError) as e:
            if required:
                raise KerncapError(str(e), getattr(e, "exit_code", 2), ["triton_repro", output]) from e
            return {"error": str(e)}

    def run_reproducer(self, output: str, *args: str, python: str = sys.executable) -> dict:
        """Runs OUT/reproducer.py --json; returns its result (result, max_abs_error, median_ms, ...)."""
        p = subprocess.run([python, os.path.join(output, "reproducer.py"), "--json", *args], capture_output=True,
                           text=True, timeout=self.timeout)
        try:
            res = _last_json(p.stdout)
        except ValueError:
            raise KerncapError(p.stderr.strip()[-500:] or "reproducer printed nothing", p.returncode,
                               [python, "reproducer.py"], p.stderr) from None
        res["stderr"] = p.stderr
        return res

    def replay(self, dir: str, cubin: Optional[str] = None, iterations: int = 20, warmup: int = 3,
               restore_each: bool = False, no_restore: bool = False, cache: Optional[str] = None,
               timer: Optional[str] = None) -> ReplayResult:
        args = ["replay", dir, "--json", "--iterations", str(iterations), "--warmup", str(warmup)]
        args += (["--cubin", cubin] if cubin else []) + ["--restore-each"] * restore_each
        args += ["--no-restore"] * no_restore + (["--cache", cache] if cache else [])
        args += ["--timer", timer] if timer else []
        j = _last_json(self._run(args).stdout)
        return ReplayResult(j.get("kernel", ""), j["median_ms"], j["min_ms"], j["max_ms"], j.get("times_ms", []),
                            j.get("relocated_regions", 0), j.get("rewritten_words", 0), j)

    def validate(self, dir: str, cubin: Optional[str] = None, dtype: Optional[str] = None,
                 atol: Optional[float] = None, rtol: Optional[float] = None) -> ValidateResult:
        args = ["validate", dir, "--json"] + (["--cubin", cubin] if cubin else [])
        args += (["--dtype", dtype] if dtype else []) + (["--atol", str(atol)] if atol is not None else [])
        args += ["--rtol", str(rtol)] if rtol is not None else []
        j = _last_json(self._run(args, ok=(0, 1)).stdout)
        regs = [RegionResult(r.get("id", 0), r.get("kind", ""), r.get("base", ""), r.get("size", 0),
                             r.get("written", 0), bool(r.get("pass")), bool(r.get("exact")),
                             r.get("max_abs_error", 0.0), r.get("max_rel_error", 0.0), r.get("summary", ""))
                for r in j.get("regions", [])]
        return ValidateResult(j.get("result") == "PASS", j.get("result", ""), j.get("line", ""), regs,
                              j.get("relocated_regions", 0), j.get("rewritten_words", 0), j)

    def info(self, dir: str) -> dict:
        return _last_json(self._run(["info", dir, "--json"]).stdout)

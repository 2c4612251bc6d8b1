"""The Python API: every `kerncap` command as a typed function over the CLI's --json output.

    from kerncap import Kerncap
    kc = Kerncap()                                   # finds the CLI (cli_path.find_kerncap)
    prof = kc.profile(["python3", "train.py"])
    ex = kc.extract(prof.kernels[0].name, ["python3", "train.py"], "iso/k0")
    print(kc.replay("iso/k0").median_ms, kc.validate("iso/k0", fuzz=20).line)

The same calls exist as module functions on a default Kerncap (kerncap.validate(...)). The CLI
does all the work (replay, comparison, timing); this module builds argument lists, runs the CLI
and fills dataclasses (results.py). Exit codes: 0 ok / PASS; 1 a FAIL verdict (validate, lint,
diff --fail-on-regression, locate's not found), returned in the result; 2 bad input and 3 device
error raise KerncapInputError / KerncapDeviceError with the CLI's message (errors.py).
"""
from __future__ import annotations

import functools
import json
import os
import shlex
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Type, TypeVar, Union

if sys.version_info >= (3, 10):
    from typing import Concatenate, ParamSpec
else:  # pragma: no cover
    from typing_extensions import Concatenate, ParamSpec

from . import cli_path, runner
from .errors import KerncapError, KerncapVersionError, cli_message, error_for
from .json_fields import from_json
from .results import (BaselineResult, DiffResult, EvaluateResult, ExtractResult, FootprintResult, InfoResult, LintResult,
                      LocateResult, ProfileResult, RegimesResult, RegimeKernelsResult, RegimeValidateResult, ReplayResult, RunResult,
                      ServeStatus, ValidateResult)
from .runner import ProgressFn

if TYPE_CHECKING:  # pragma: no cover
    from .serving import Server

Command = Union[str, Sequence[str]]
PY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder holding the package
SHIM_DIR = os.path.join(PY_DIR, "kerncap", "triton_shim")
R = TypeVar("R")
P = ParamSpec("P")

# The newest version of each versioned document this package reads: (format name, version key).
KNOWN_FORMATS: Dict[str, tuple] = {
    "kerncap-profile": ("version", 1),
    "kerncap-locate": ("version", 1),
    "kerncap-baseline": ("version", 1),
    "kerncap-footprint": ("format_version", 1),
    "kerncap-capture": ("format_version", 4),
    "kerncap-serve-status": ("version", 1),
    "kerncap-verdict": ("version", 1),
    "kerncap-regimes": ("version", 1),
    "kerncap-regime-verdict": ("version", 1),
    "kerncap-regime-kernels": ("version", 1),
    "kerncap-regime-kernels-verdict": ("version", 1),
    "kerncap-run-report": ("version", 1),
}


def _argv(cmd: Command) -> List[str]:
    return shlex.split(cmd) if isinstance(cmd, str) else list(cmd)


def last_json(text: str) -> Dict[str, Any]:
    """The last JSON object on stdout: one line (profile, locate) or pretty-printed from a line
    that starts with "{" to the end (the others); whatever the application printed before it is
    skipped."""
    lines = text.rstrip().splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("{"):
            try:
                doc = json.loads("\n".join(lines[i:]))
            except json.JSONDecodeError:
                continue
            if isinstance(doc, dict):
                return doc
    raise ValueError("no JSON object in the output")


def check_version(doc: Mapping[str, Any], command: List[str]) -> None:
    """Refuses a document newer than this package reads (an older package beside a newer CLI)."""
    known = KNOWN_FORMATS.get(str(doc.get("format", "")))
    if not known:
        return
    field_name, newest = known
    v = doc.get(field_name)
    if isinstance(v, int) and v > newest:
        raise KerncapVersionError(
            f"kerncap printed a {doc['format']} document of version {v}; this Python package reads up to version "
            f"{newest}: install the kerncap package that matches the CLI ({command[0] if command else 'kerncap'})",
            2, command)


def triton_env(output: str, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """Environment that activates the Triton shim for an application extracted into `output`."""
    env = dict(os.environ if base is None else base)
    paths = [SHIM_DIR] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != SHIM_DIR]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["KERNCAP_TRITON_OUT"] = os.path.join(os.path.abspath(output), "triton")
    return env


def _opt(flag: str, value: Any) -> List[str]:
    """[flag, value] when value is given (None and "" mean: the CLI's default)."""
    return [] if value is None or value == "" else [flag, str(value)]


def _path_operand(path: str) -> str:
    """A path as an argument the CLI cannot take for an option ("-x" is "./-x")."""
    return "./" + path if path.startswith("-") else path


def _flag(flag: str, on: bool) -> List[str]:
    return [flag] if on else []


def _each(flag: str, values: Optional[Sequence[str]]) -> List[str]:
    out: List[str] = []
    for v in values or ():
        out += [flag, str(v)]
    return out


class Kerncap:
    """One kerncap executable and the settings to run it with.

    binary: the CLI (default: cli_path.find_kerncap: $KERNCAP_BIN, beside the package, PATH,
    build tree); timeout: seconds per command (None: no limit); env: variables added to the
    CLI's environment."""

    def __init__(self, binary: Optional[str] = None, timeout: Optional[float] = None,
                 env: Optional[Dict[str, str]] = None):
        self.binary = cli_path.find_kerncap(binary)
        self.timeout, self.env = timeout, env

    @property
    def version(self) -> str:
        """The CLI's version (`kerncap --version`)."""
        return cli_path.cli_version(self.binary)

    def _environ(self, env: Optional[Dict[str, str]] = None) -> Optional[Dict[str, str]]:
        if env is not None:
            return env
        return dict(os.environ, **self.env) if self.env else None

    def run(self, args: List[str], ok: Sequence[int] = (0,), env: Optional[Dict[str, str]] = None,
            progress: Optional[ProgressFn] = None) -> runner.Completed:
        """Runs `kerncap ARGS` (for commands this class does not wrap)."""
        return runner.run([self.binary] + args, ok=ok, env=self._environ(env), timeout=self.timeout,
                          on_progress=progress)

    def _doc(self, args: List[str], ok: Sequence[int] = (0,), env: Optional[Dict[str, str]] = None,
             progress: Optional[ProgressFn] = None) -> Dict[str, Any]:
        p = self.run(args, ok=ok, env=env, progress=progress)
        try:
            doc = last_json(p.stdout)
        except ValueError:
            if p.returncode:  # an exit code allowed for its JSON, but no JSON came: the error it is
                raise error_for(p.returncode, cli_message(p.stderr, p.returncode), p.argv, p.stderr) from None
            raise KerncapError(f"kerncap {args[0]} printed no JSON (stdout: {p.stdout.strip()[-300:]!r})", 70,
                               p.argv, p.stderr) from None
        check_version(doc, p.argv)
        return doc

    def _typed(self, cls: Type[R], args: List[str], **kw: Any) -> R:
        return from_json(cls, self._doc(args, **kw))

    # ---- the commands ----------------------------------------------------------------------

    def profile(self, cmd: Optional[Command] = None, top: Optional[int] = None, filter: Optional[str] = None,
                output: Optional[str] = None, trace: Optional[str] = None, records: Optional[str] = None,
                from_records: Optional[str] = None, source_repos: Sequence[str] = (), rules: Sequence[str] = (),
                sample: Optional[int] = None, progress: Optional[ProgressFn] = None) -> ProfileResult:
        """`kerncap profile --json -- CMD`: every kernel of the run, ranked by GPU time (top and
        filter shape the CLI's table only; the JSON lists them all). An application that exits
        non-zero still returns its profile (application.code says how it ended). sample=N
        (`--sample N`, the CLI's default 10): after a process's first 10000 launches only one
        window of launches in N is timed; counts and dispatch lists stay exact, such totals are
        estimates (marked "estimated" in the JSON). sample=1 times every launch."""
        args = ["profile", "--json"] + _opt("--top", top) + _opt("--filter", filter) + _opt("-o", output)
        args += _opt("--sample", sample)
        args += _opt("--trace", trace) + _opt("--records", records) + _opt("--from", from_records)
        args += _each("--source-repo", source_repos) + _each("--rules", rules)
        if cmd is not None:
            args += ["--"] + _argv(cmd)
        return self._typed(ProfileResult, args, ok=range(0, 256), progress=progress)

    def extract(self, kernel: str, cmd: Command, output: str, dispatch: int = 0, regex: bool = False,
                keep_running: bool = False, force: bool = False, triton: Union[bool, str] = "auto",
                source_dir: Optional[str] = None, compile_commands: Optional[str] = None,
                defines: Sequence[str] = (), language: Optional[str] = None, rank: Optional[int] = None,
                device: Optional[int] = None, closure: Optional[str] = None,
                progress: Optional[ProgressFn] = None) -> ExtractResult:
        """`kerncap extract KERNEL -o OUTPUT --json -- CMD`: captures one launch. KERNEL is a
        substring of the demangled (or mangled) name: a long unique one, template arguments
        included, picks the kernel you mean. triton="auto": the Triton shim records compile
        metadata and, when the captured kernel is a Triton kernel, kernel_variant.py and
        reproducer.py are written (result.triton)."""
        args = ["extract", kernel, "-o", output, "--dispatch", str(dispatch), "--json"]
        args += _flag("--regex", regex) + _flag("--continue", keep_running) + _flag("--force", force)
        args += _opt("--source-dir", source_dir) + _opt("--compile-commands", compile_commands)
        args += _each("-D", defines) + _opt("--language", language) + _opt("--rank", rank)
        args += _opt("--device", device) + _opt("--closure", closure)
        env = triton_env(output, dict(os.environ, **(self.env or {}))) if triton else None
        res = self._typed(ExtractResult, args + ["--"] + _argv(cmd), env=env, progress=progress)
        if triton:
            from . import triton_records
            if triton_records.load(os.path.join(output, "triton")).compiles:  # the application compiled Triton
                res.triton = self.triton_reproducer(output, required=triton is True)
        return res

    def extract_regimes(self, kernel: str, cmd: Command, output: str, max_regimes: Optional[int] = None,
                        regex: bool = False, force: bool = False,
                        progress: Optional[ProgressFn] = None) -> RegimesResult:
        """`kerncap extract KERNEL --regimes -o OUTPUT --json -- CMD`: one capture per launch shape
        of the kernel (a profiled run, then a capture run), each with its share of the kernel's
        GPU time; OUTPUT/regimes.json is the index. validate_regimes(OUTPUT, cubin) judges a
        candidate on all of them."""
        args = ["extract", kernel, "--regimes", "-o", output, "--json"] + _opt("--max-regimes", max_regimes)
        args += _flag("--regex", regex) + _flag("--force", force)
        return self._typed(RegimesResult, args + ["--"] + _argv(cmd), progress=progress)

    def extract_regime_kernels(self, cmd: Command, output: str, kernels: Sequence[str] = (),
                               top: Optional[int] = None, max_regimes: Optional[int] = None, regex: bool = False,
                               force: bool = False, progress: Optional[ProgressFn] = None) -> RegimeKernelsResult:
        """`kerncap extract --regimes --kernel K ... [--top N] -o OUTPUT --json -- CMD`: the regimes
        of several kernels (each pattern's, and the top N by GPU time) in one pair of runs; each
        kernel's set in OUTPUT/<dir> (validate_regimes(OUTPUT/<dir>, cubin) judges a variant of it;
        validate_regimes(OUTPUT) judges every kernel's captured image)."""
        args = ["extract", "--regimes", "-o", output, "--json"] + _each("--kernel", list(kernels))
        args += _opt("--top", top) + _opt("--max-regimes", max_regimes) + _flag("--regex", regex) + _flag("--force", force)
        return self._typed(RegimeKernelsResult, args + ["--"] + _argv(cmd), progress=progress)

    def evaluate(self, out: str, images: Sequence[str], gpus: Union[str, Sequence[int]] = "all",
                 time_limit: Optional[float] = None, time: bool = True, min_speedup: Optional[float] = None,
                 speedup: bool = False, speedup_cache: Optional[str] = None, spares: Optional[str] = None,
                 judge: Optional[str] = None, progress: Optional[ProgressFn] = None) -> EvaluateResult:
        """`kerncap evaluate OUT --images ...`: many candidate images (files, or directories of
        *.cubin/*.fatbin/*.ptx) judged on every GPU named (a process and a session per GPU; a
        regime set: every regime), one record per candidate in input order, each with the one
        judge's verdict (docs/evaluate.md). time_limit: seconds a candidate may take before it is
        reported FAIL "timed out"; judge: the workers' judge (tests)."""
        import tempfile
        gpu_list = gpus if isinstance(gpus, str) else ",".join(str(g) for g in gpus)
        with tempfile.TemporaryDirectory(prefix="kerncap-evaluate-") as tmp:
            stats_path = os.path.join(tmp, "stats.json")
            args = ["evaluate", _path_operand(out), "--images", *[_path_operand(i) for i in images], "--gpus", gpu_list,
                    "--stats", stats_path]
            args += _opt("--time-limit", time_limit) + _flag("--time", time) + _opt("--min-speedup", min_speedup)
            args += _flag("--speedup", speedup) + _opt("--speedup-cache", speedup_cache) + _opt("--spares", spares)
            args += _opt("--judge", judge)
            p = self.run(args, progress=progress)
            records = sorted((json.loads(x) for x in p.stdout.splitlines() if x.strip()), key=lambda r: r["index"])
            with open(stats_path) as f:
                stats = json.load(f)
        line = next((x[len("kerncap evaluate: "):] for x in reversed(p.stderr.splitlines())
                     if x.startswith("kerncap evaluate: ") and " candidates" in x), "")
        return EvaluateResult(records=records, stats=stats, line=line, raw={"records": records, "stats": stats})

    def validate_regimes(self, dir: str, cubin: Optional[str] = None, min_speedup: Optional[float] = None,
                         footprint: Optional[str] = None, speedup_iterations: Optional[int] = None,
                         progress: Optional[ProgressFn] = None) -> RegimeValidateResult:
        """`kerncap validate DIR --json` over a regime set: the one judge on every regime (each in
        its own process), per-regime verdicts and speed-ups, weighted_speedup and app_projection;
        min_speedup applies to the weighted figure. A FAIL returns passed=False and names the
        failing regimes (failed)."""
        args = ["validate", dir, "--json"] + _opt("--cubin", cubin) + _opt("--min-speedup", min_speedup)
        args += _opt("--footprint", footprint) + _opt("--speedup-iterations", speedup_iterations)
        return self._typed(RegimeValidateResult, args, ok=(0, 1), progress=progress)

    def run_swapped(self, swaps: Union[str, Sequence[str]], cmd: Command, repeat: int = 1,
                    check: Optional[str] = None, shadow: bool = False, every: int = 1,
                    shadow_max_bytes: Optional[int] = None, dir: Optional[str] = None, warmup: int = 0,
                    progress: Optional[ProgressFn] = None) -> RunResult:
        """`kerncap run --swap TARGET=IMAGE ... --json -- CMD`: the application with each TARGET
        kernel (a capture directory or a kernel name) served by IMAGE, `repeat` pairs of runs
        against the unmodified application; check: a shell command judging each run's results.
        warmup: pairs run first and left out of the times (still judged).
        shadow=True: the original runs, and every `every`-th launch is checked against the variant
        run on the side (the first differing launch is named). The verdict is the result's
        `verdict` (passed: "ok"); a variant refused before the run raises KerncapInputError."""
        args = ["run", "--json", "--repeat", str(repeat)]
        args += _each("--swap", [swaps] if isinstance(swaps, str) else swaps)
        args += _opt("--check", check) + _flag("--shadow", shadow) + (["--every", str(every)] if shadow else [])
        args += _opt("--shadow-max-bytes", shadow_max_bytes) + _opt("--dir", dir)
        args += ["--warmup", str(warmup)] if warmup else []
        return self._typed(RunResult, args + ["--"] + _argv(cmd), ok=(0, 1), progress=progress)

    def report(self, dir: str, verdict: Optional[str] = None, output: Optional[str] = None,
               lint: bool = True) -> str:
        """`kerncap report DIR`: one self-contained HTML page about a capture or a regime set
        (needs matplotlib: pip install 'kerncap[report]'); returns its path. verdict: a file with
        what validate/validate_regimes printed as JSON (verdicts and speed-ups on the page)."""
        from . import report as _report
        return _report.write(dir, verdict, output, lint=lint, kerncap=self.binary if lint else None)

    def info(self, dir: str, verify: bool = False) -> InfoResult:
        """`kerncap info DIR --json`: the capture's manifest (no GPU)."""
        return self._typed(InfoResult, ["info", dir, "--json"] + _flag("--verify", verify))

    def replay(self, dir: str, cubin: Optional[str] = None, iterations: int = 20, warmup: int = 3,
               restore_each: bool = False, no_restore: bool = False, cache: Optional[str] = None,
               timer: Optional[str] = None, captured: bool = False, grid: Optional[str] = None,
               block: Optional[str] = None, device: Optional[int] = None, verify: bool = False,
               progress: Optional[ProgressFn] = None) -> ReplayResult:
        """`kerncap replay DIR --json`: the launch alone at its captured addresses, timed.
        cubin: a variant image; captured: the captured image even when the reproducer has a
        fresh variant (--baseline); cache "warm"/"cold"; timer as `kerncap replay --help`."""
        args = ["replay", dir, "--json", "--iterations", str(iterations), "--warmup", str(warmup)]
        args += self._image_args(cubin, captured, grid, block, device, verify)
        args += _flag("--restore-each", restore_each) + _flag("--no-restore", no_restore)
        args += _opt("--cache", cache) + _opt("--timer", timer)
        return self._typed(ReplayResult, args, progress=progress)

    def validate(self, dir: str, cubin: Optional[str] = None, dtype: Optional[str] = None,
                 atol: Optional[float] = None, rtol: Optional[float] = None, footprint: Optional[str] = None,
                 fuzz: int = 0, seed: Optional[int] = None, invariants: Optional[Sequence[str]] = None,
                 no_invariants: bool = False, tolerances: Sequence[str] = (), min_speedup: Optional[float] = None,
                 speedup_iterations: Optional[int] = None, no_determinism_check: bool = False,
                 captured: bool = False, grid: Optional[str] = None, block: Optional[str] = None,
                 device: Optional[int] = None, verify: bool = False,
                 progress: Optional[ProgressFn] = None) -> ValidateResult:
        """`kerncap validate DIR --json`: replay and compare with what the application wrote.
        Strong validation: footprint="auto" (default: measured once if missing) or "require"
        (an input error without one); "never" is weak. fuzz=N adds N random-input trials against
        the captured kernel (needs the footprint). A FAIL returns passed=False; the verdict's
        text is `line` ("Result: ...")."""
        args = ["validate", dir, "--json"] + self._image_args(cubin, captured, grid, block, device, verify)
        args += _opt("--dtype", dtype) + _opt("--atol", atol) + _opt("--rtol", rtol)
        args += _opt("--footprint", footprint) + (["--fuzz", str(fuzz)] if fuzz else []) + _opt("--seed", seed)
        if invariants is not None:
            args += ["--invariant", ",".join(invariants)]
        args += _flag("--no-invariants", no_invariants) + _each("--tolerance", tolerances)
        args += _opt("--min-speedup", min_speedup) + _opt("--speedup-iterations", speedup_iterations)
        args += _flag("--no-determinism-check", no_determinism_check)
        return self._typed(ValidateResult, args, ok=(0, 1), progress=progress)

    def serve_status(self, dir: str) -> ServeStatus:
        """`kerncap serve DIR --status --json`: whether a `kerncap serve` answers for DIR."""
        return self._typed(ServeStatus, ["serve", dir, "--status", "--json"], ok=(0, 1))

    def serve(self, dir: str, footprint: Optional[str] = None, idle_timeout: Optional[float] = None,
              device: Optional[int] = None, no_relocate: bool = False, ready_timeout: float = 600.0) -> "Server":
        """Starts `kerncap serve DIR` in the background (or uses the one already running) and
        returns once it answers: from then on validate(DIR[, cubin]) is evaluated in its open
        session when the server would reach the same verdict (the CLI's `--server auto`; the
        result's line says so), else in its own process as before. Stop it with .stop() or a
        `with` block; it also stops after idle_timeout seconds without a request (CLI default
        1800). footprint as for validate ("auto": strong, measured once now if missing)."""
        from . import serving
        extra = _opt("--footprint", footprint) + _opt("--idle-timeout", idle_timeout) + _opt("--device", device)
        extra += _flag("--no-relocate", no_relocate)
        return serving.start(self, dir, extra, ready_timeout)

    def footprint(self, dir: str, force: bool = False, no_timing: bool = False,
                  sanitizer_lib: Optional[str] = None, max_escapes: Optional[int] = None,
                  progress: Optional[ProgressFn] = None) -> FootprintResult:
        """`kerncap footprint DIR --json`: which bytes the launch reads and writes (kept in the
        capture; measured with the Compute Sanitizer API when missing or force=True)."""
        args = ["footprint", dir, "--json"] + _flag("--force", force) + _flag("--no-timing", no_timing)
        args += _opt("--sanitizer-lib", sanitizer_lib) + _opt("--max-escapes", max_escapes)
        return self._typed(FootprintResult, args, progress=progress)

    def lint(self, dir: str, cubin: Optional[str] = None, captured: bool = False, no_sass: bool = False,
             disassembler: Optional[str] = None, max_registers: Optional[int] = None,
             max_spills: Optional[int] = None, max_local_memory: Optional[int] = None,
             require: Sequence[str] = (), forbid: Sequence[str] = ()) -> LintResult:
        """`kerncap lint DIR --json`: the compiled code checked offline (no GPU). A FAIL returns
        passed=False."""
        args = ["lint", dir, "--json"] + _opt("--cubin", cubin) + _flag("--baseline", captured)
        args += _flag("--no-sass", no_sass) + _opt("--disassembler", disassembler)
        args += _opt("--max-registers", max_registers) + _opt("--max-spills", max_spills)
        args += _opt("--max-local-memory", max_local_memory) + _each("--require", require) + _each("--forbid", forbid)
        return self._typed(LintResult, args, ok=(0, 1))

    def baseline_save(self, name: str, dir: str, cubin: Optional[str] = None, captured: bool = False,
                      iterations: Optional[int] = None, warmup: Optional[int] = None, fuzz: int = 0,
                      seed: Optional[int] = None, progress: Optional[ProgressFn] = None) -> BaselineResult:
        """`kerncap baseline save NAME DIR --json`: measure (time, resources, validation) and
        store OUT/baselines/NAME.json."""
        args = ["baseline", "save", name, dir, "--json"] + self._measure_args(cubin, captured, iterations, warmup,
                                                                              fuzz, seed)
        return self._typed(BaselineResult, args, progress=progress)

    def diff(self, dir: str, baseline: str, fail_on_regression: bool = False, cubin: Optional[str] = None,
             captured: bool = False, iterations: Optional[int] = None, warmup: Optional[int] = None,
             fuzz: int = 0, seed: Optional[int] = None, progress: Optional[ProgressFn] = None) -> DiffResult:
        """`kerncap diff DIR --baseline NAME --json`: measure now and compare with the stored
        baseline; `regression` and `line` ("Result: REGRESSION" / "Result: NO REGRESSION")."""
        args = ["diff", dir, "--baseline", baseline, "--json"] + _flag("--fail-on-regression", fail_on_regression)
        args += self._measure_args(cubin, captured, iterations, warmup, fuzz, seed)
        return self._typed(DiffResult, args, ok=(0, 1), progress=progress)

    def locate(self, names: Union[str, Sequence[str]], source_repos: Sequence[str] = (), rules: Sequence[str] = (),
               capture: Optional[str] = None, progress: Optional[ProgressFn] = None) -> LocateResult:
        """`kerncap locate NAME... --json`: where each kernel is defined and how to test it. A
        kernel not found has status "not-found" (the CLI's exit 1 is not an error here)."""
        names = [names] if isinstance(names, str) else list(names)
        args = ["locate"] + names + ["--json", "--quiet"] + _each("--source-repo", source_repos)
        args += _each("--rules", rules) + _opt("--capture", capture)
        return self._typed(LocateResult, args, ok=(0, 1), progress=progress)

    @staticmethod
    def _image_args(cubin: Optional[str], captured: bool, grid: Optional[str], block: Optional[str],
                    device: Optional[int], verify: bool) -> List[str]:
        return (_opt("--cubin", cubin) + _flag("--baseline", captured) + _opt("--grid", grid) + _opt("--block", block)
                + _opt("--device", device) + _flag("--verify", verify))

    @staticmethod
    def _measure_args(cubin: Optional[str], captured: bool, iterations: Optional[int], warmup: Optional[int],
                      fuzz: int, seed: Optional[int]) -> List[str]:
        return (_opt("--cubin", cubin) + _flag("--captured", captured) + _opt("--iterations", iterations)
                + _opt("--warmup", warmup) + (["--fuzz", str(fuzz)] if fuzz else []) + _opt("--seed", seed))

    # ---- Triton reproducers (Python-side generator) ----------------------------------------

    def triton_reproducer(self, output: str, required: bool = True) -> Optional[Dict[str, Any]]:
        """Writes kernel_variant.py / reproducer.py for a captured Triton kernel (see triton_repro)."""
        from . import engine, triton_launch, triton_records, triton_repro
        try:
            return triton_repro.generate(output, quiet=True)
        except (triton_records.RecordError, engine.EngineError, triton_launch.PlanError) as e:
            if required:
                raise error_for(getattr(e, "exit_code", 2), str(e), ["triton_repro", output], "") from e
            return {"error": str(e)}

    def run_reproducer(self, output: str, *args: str, python: str = sys.executable) -> Dict[str, Any]:
        """Runs OUT/reproducer.py --json; returns its result (result, max_abs_error, median_ms, ...)."""
        p = runner.run([python, os.path.join(output, "reproducer.py"), "--json", *args], ok=range(0, 256),
                       timeout=self.timeout)
        try:
            res = last_json(p.stdout)
        except ValueError:
            raise error_for(p.returncode or 70, p.stderr.strip()[-500:] or "reproducer printed nothing", p.argv,
                            p.stderr) from None
        res["stderr"] = p.stderr
        return res


# ---- the same calls as module functions, on a default Kerncap ------------------------------

_default: Optional[Kerncap] = None


def default_kerncap() -> Kerncap:
    """The Kerncap the module functions use (created on first use; $KERNCAP_BIN is read then)."""
    global _default
    if _default is None:
        _default = Kerncap()
    return _default


def _on_default(method: Callable[Concatenate[Kerncap, P], R]) -> Callable[P, R]:
    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return method(default_kerncap(), *args, **kwargs)
    return call


profile = _on_default(Kerncap.profile)
extract = _on_default(Kerncap.extract)
info = _on_default(Kerncap.info)
replay = _on_default(Kerncap.replay)
validate = _on_default(Kerncap.validate)
evaluate = _on_default(Kerncap.evaluate)
footprint = _on_default(Kerncap.footprint)
lint = _on_default(Kerncap.lint)
baseline_save = _on_default(Kerncap.baseline_save)
diff = _on_default(Kerncap.diff)
locate = _on_default(Kerncap.locate)
serve = _on_default(Kerncap.serve)
serve_status = _on_default(Kerncap.serve_status)
run_swapped = _on_default(Kerncap.run_swapped)

"""What each `kerncap ... --json` command prints, as dataclasses with the same field names
(src/cli/cmd_*.cpp and the to_json functions they call are the reference; docs/python-api.md
lists them). Objects the documentation describes elsewhere (the manifest's parts, footprint
regions) stay dicts. Each top-level result has `raw` (the whole document) and `line`: the CLI's
canonical "Result: ..." line for validate, lint and diff, a one-line summary for the others."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .json_fields import key


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


# ---- profile -------------------------------------------------------------------------------

@dataclass
class KernelProfile:
    """One row of `kerncap profile --json`'s "kernels" (ranked by total GPU time)."""

    rank: int = 0
    name: str = ""  # the mangled name: a pattern `extract` accepts
    demangled: str = ""
    short: str = ""
    kind: str = ""
    category: str = ""
    source_expected: bool = False
    calls: int = 0
    benchmark_calls: int = 0  # of calls, benchmark launches (autotuners): extract --dispatch skips them
    total_ns: int = 0
    avg_ns: float = 0.0
    median_ns: float = 0.0
    min_ns: float = 0.0
    max_ns: float = 0.0
    stddev_ns: float = 0.0
    percent: float = 0.0
    grid: Any = None
    block: Any = None
    registers: int = 0
    static_shared: int = 0
    dynamic_shared: int = 0
    shapes: int = 0
    in_graph: bool = False
    extract: Dict[str, Any] = field(default_factory=dict)  # pattern, match, processes (dispatch per pid)
    source: Optional[str] = None  # with --source-repo
    source_status: Optional[str] = None
    test: Optional[Dict[str, Any]] = None
    library: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = _raw()


@dataclass
class ProfileResult:
    format: str = ""
    version: int = 0
    kerncap: str = ""
    application: Optional[Dict[str, Any]] = None  # command, exited, code, description
    totals: Dict[str, Any] = field(default_factory=dict)  # launches, kernels, kernel_ns, span_ns, processes
    processes: List[Dict[str, Any]] = field(default_factory=list)
    by_rank_device: List[Dict[str, Any]] = field(default_factory=list)
    kernels: List[KernelProfile] = field(default_factory=list)
    raw: Dict[str, Any] = _raw()

    @property
    def line(self) -> str:
        t = self.totals
        return (f"profile: {t.get('kernels', len(self.kernels))} kernels, {t.get('launches', 0)} launches, "
                f"{t.get('kernel_ns', 0) / 1e6:.3f} ms of kernel time")


# ---- extract -------------------------------------------------------------------------------

@dataclass
class ExtractSource:
    """Where the kernel's source was found (or why not)."""

    status: str = ""
    classification: str = ""
    summary: str = ""
    detail: str = ""
    how: str = ""
    notes: List[str] = field(default_factory=list)
    definition: Optional[str] = None
    line: Optional[int] = None
    translation_unit: Optional[str] = None


@dataclass
class ExtractReproducer:
    dir: str = ""
    recompile_available: bool = False
    arch: str = ""
    edit_file: Optional[str] = None  # the file to edit (kernel_variant.cu or its mirror)
    reason: Optional[str] = None  # why `make recompile` is not available
    # What `make recompile` compiles: "kernel_instance.cu" (the captured kernel without the rest
    # of its unit) or "kernel_variant.cu" (the whole unit; whole_unit_reason says why).
    recompile_unit: Optional[str] = None
    whole_unit_reason: Optional[str] = None


@dataclass
class ExtractResult:
    output: str = ""
    capture: str = ""
    kernel: str = ""
    mangled: str = ""
    dispatch: int = 0
    regions: int = 0
    before_bytes: int = 0
    after_bytes: int = 0
    capture_seconds: float = 0.0
    application: str = ""
    device: int = 0
    rank: Optional[Dict[str, Any]] = None
    source: Optional[ExtractSource] = None
    reproducer: Optional[ExtractReproducer] = None
    triton: Optional[Dict[str, Any]] = None  # not the CLI's: the Triton reproducer's summary (Kerncap.extract)
    raw: Dict[str, Any] = _raw()

    @property
    def line(self) -> str:
        return (f"captured {self.kernel} (dispatch {self.dispatch}): {self.regions} regions, BEFORE {self.before_bytes} "
                f"bytes, AFTER {self.after_bytes} bytes -> {self.output}")


# ---- replay --------------------------------------------------------------------------------

@dataclass
class ReplayResult:
    kernel: str = ""
    image: str = ""
    device: int = 0
    method: str = ""
    method_note: Optional[str] = None
    timer: str = ""
    warmup: int = 0
    iterations: int = 0
    restore: str = ""
    restore_each: bool = False
    cache: str = ""
    clock: Any = None
    median_ms: float = 0.0
    min_ms: float = 0.0
    max_ms: float = 0.0
    mean_ms: float = 0.0
    stddev_ms: float = 0.0
    times_ms: List[float] = field(default_factory=list)
    kernels_per_launch: Optional[int] = None
    reset: Optional[Dict[str, Any]] = None
    l2_flush_bytes: Optional[int] = None
    restored_bytes: int = 0
    blocks: int = 0
    blocks_at_hint: int = 0
    relocated_regions: int = 0
    rewritten_words: int = 0
    in_app_median_ms: Optional[float] = None
    in_app_samples: Optional[int] = None
    in_app_launches: Optional[int] = None
    replay_in_app_ratio: Optional[float] = None
    in_app_note: Optional[str] = None
    raw: Dict[str, Any] = _raw()

    @property
    def line(self) -> str:
        return (f"replay: median {self.median_ms:.4f} ms (min {self.min_ms:.4f}, max {self.max_ms:.4f}, stddev "
                f"{self.stddev_ms:.4f}) over {self.iterations} launches, {self.method}")


# ---- validate ------------------------------------------------------------------------------

@dataclass
class PieceResult:
    """A typed span of a region, compared as its element type."""

    offset: int = 0
    size: int = 0
    dtype: str = ""
    atol: float = 0.0
    rtol: float = 0.0
    passed: bool = field(default=False, metadata=key("pass"))
    exact: bool = False
    mismatches: int = 0
    elements: int = 0
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    nan_expected: int = 0
    type_source: Optional[str] = None  # where dtype came from: signature, sass, compare.json, ... (None: bytes)
    nan_actual: int = 0
    summary: str = ""
    first_bad_offset: Optional[int] = None


@dataclass
class RegionResult:
    id: int = 0
    kind: str = ""
    base: str = ""
    size: int = 0
    written: int = 0
    passed: bool = field(default=False, metadata=key("pass"))
    exact: bool = False
    differing_bytes: int = 0
    mismatches: int = 0
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    summary: str = ""
    first_bad_offset: Optional[int] = None
    pieces: List[PieceResult] = field(default_factory=list)


@dataclass
class FuzzFailure:
    trial: int = 0
    region: int = 0
    summary: str = ""
    first_bad_offset: Optional[int] = None


@dataclass
class FuzzResult:
    result: str = ""
    seed: int = 0
    trials: int = 0
    inputs: int = 0
    input_bytes: int = 0
    failures: List[FuzzFailure] = field(default_factory=list)
    line: str = ""

    @property
    def passed(self) -> bool:
        return self.result == "PASS"


@dataclass
class SpeedupResult:
    passed: bool = field(default=False, metadata=key("pass"))
    speedup: float = 0.0
    min_speedup: float = 0.0
    captured_median_ms: float = 0.0
    captured_stddev_ms: float = 0.0
    variant_median_ms: float = 0.0
    variant_stddev_ms: float = 0.0
    cache: str = ""  # the L2 state both images were timed in, and why


@dataclass
class InvariantResult:
    passed: bool = field(default=False, metadata=key("pass"))
    checked: List[str] = field(default_factory=list)
    line: str = ""
    violations: List[Dict[str, Any]] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    regions: List[Dict[str, Any]] = field(default_factory=list)


@dataclass
class ValidateResult:
    result: str = ""  # "PASS" | "FAIL"
    line: str = ""  # the CLI's "Result: PASS (...)" / "Result: FAIL (...)"
    kernel: str = ""
    image: str = ""
    device: int = 0
    spec: str = ""
    strength: str = ""  # "strong", "weak-no-footprint", "none: ..." (nothing the comparison could prove)
    regions: List[RegionResult] = field(default_factory=list)
    omitted_regions: Any = None
    closure_gaps: Any = None
    written_bytes: int = 0
    footprint_written_bytes: int = 0
    poisoned_bytes: int = 0
    probed_poisoned_bytes: int = 0
    nondeterministic_regions: List[int] = field(default_factory=list)
    determinism_checked: bool = False
    relocated_regions: int = 0
    rewritten_words: int = 0
    # Where the time went: seconds, bytes staged/memset/poisoned by memset (restore), bytes the
    # device vouched for and bytes read back (compare).
    restore_work: Dict[str, Any] = field(default_factory=dict)
    compare_work: Dict[str, Any] = field(default_factory=dict)
    # Seconds per step of the evaluation (image, restore, spec, launch, compare, determinism,
    # time, fuzz, speedup; a fault's until_fault, after_fault): a profile, not the verdict.
    phases: Dict[str, float] = field(default_factory=dict)
    invariants: Optional[InvariantResult] = None
    fuzz: Optional[FuzzResult] = None
    speedup: Optional[SpeedupResult] = None
    kerncap_toml: Optional[str] = None
    served_by: Optional[Dict[str, Any]] = None  # {"pid": N} when a `kerncap serve` evaluated it
    # The one judge's document (src/replay/judge.hpp): its name and version, what judged it
    # (where each rule came from), the fault of a candidate that faulted, and whether that
    # fault cost the evaluating process its CUDA context.
    format: str = ""  # "kerncap-verdict"
    version: int = 0
    policy: Dict[str, Any] = field(default_factory=dict)
    fault: Optional[str] = None
    recovered: bool = False
    context_lost: bool = False
    speedup_note: Optional[str] = None  # why a kerncap.toml min_speedup was not checked
    nondeterministic_cause: Optional[str] = None  # why the kernel is nondeterministic (float atomics, replays)
    pruned: Optional[str] = None  # the note of a pruned capture
    raw: Dict[str, Any] = _raw()

    @property
    def passed(self) -> bool:
        return self.result == "PASS"


# ---- info, footprint -----------------------------------------------------------------------

@dataclass
class CaptureKernel:
    mangled: str = ""
    demangled: str = ""
    dispatch: int = 0
    launch_index: int = 0


@dataclass
class InfoResult:
    """The capture's manifest (docs/capture.md) and where it was read."""

    format: str = ""
    format_version: int = 0
    tool_version: str = ""
    capture_dir: str = ""
    config: Dict[str, Any] = field(default_factory=dict)
    process: Dict[str, Any] = field(default_factory=dict)
    device: Dict[str, Any] = field(default_factory=dict)
    kernel: CaptureKernel = field(default_factory=CaptureKernel)
    launch: Dict[str, Any] = field(default_factory=dict)
    params: Dict[str, Any] = field(default_factory=dict)
    image: Dict[str, Any] = field(default_factory=dict)
    regions: List[Dict[str, Any]] = field(default_factory=list)
    after: Dict[str, Any] = field(default_factory=dict)
    stats: Dict[str, Any] = field(default_factory=dict)
    in_app_median_ns: Optional[float] = None
    in_app_samples: Optional[int] = None
    in_app_launches: Optional[int] = None
    verified: Optional[bool] = None
    raw: Dict[str, Any] = _raw()

    @property
    def line(self) -> str:
        g, b = self.launch.get("grid", []), self.launch.get("block", [])
        dims = lambda d: "x".join(str(x) for x in d)  # noqa: E731
        return (f"capture of {self.kernel.demangled or self.kernel.mangled}: grid {dims(g)} block {dims(b)}, "
                f"{len(self.regions)} regions, on {self.device.get('name', '?')}")


@dataclass
class FootprintResult:
    format: str = ""
    format_version: int = 0
    tool_version: str = ""
    kernel: str = ""
    image_hash: str = ""
    device: str = ""
    regions: List[Dict[str, Any]] = field(default_factory=list)
    escape_count: int = 0
    escapes: List[Dict[str, Any]] = field(default_factory=list)
    accesses: int = 0
    kernel_pc: str = ""
    instrumented_ms: float = 0.0
    plain_ms: float = 0.0
    seconds: float = 0.0
    sanitizer_library: str = ""
    cached: bool = False
    files: List[str] = field(default_factory=list)
    raw: Dict[str, Any] = _raw()

    @property
    def line(self) -> str:
        return (f"footprint of {self.kernel}: {len(self.regions)} regions, {self.accesses} accesses, "
                f"{self.escape_count} outside every region{' (cached)' if self.cached else ''}")


# ---- lint, baseline, diff ------------------------------------------------------------------

@dataclass
class LintCheck:
    name: str = ""
    status: str = ""  # "info", "pass" or "fail"
    detail: str = ""


@dataclass
class LintResources:
    registers: int = 0
    local_bytes: int = 0
    shared_static_bytes: int = 0
    shared_dynamic_bytes: int = 0
    max_threads: int = 0
    code_bytes: int = 0


@dataclass
class LintResult:
    kernel: str = ""
    image: str = ""
    image_kind: str = ""
    sm: int = 0
    code_sm: int = 0
    resources: Optional[LintResources] = None
    launch: Dict[str, Any] = field(default_factory=dict)
    occupancy: Optional[Dict[str, Any]] = None
    sass: Optional[Dict[str, Any]] = None
    checks: List[LintCheck] = field(default_factory=list)
    result: str = ""
    line: str = ""  # "Result: PASS" / "Result: FAIL"
    raw: Dict[str, Any] = _raw()

    @property
    def passed(self) -> bool:
        return self.result == "PASS"


@dataclass
class BaselineTime:
    median: float = 0.0
    min: float = 0.0
    max: float = 0.0
    stddev: float = 0.0
    iterations: int = 0
    warmup: int = 0


@dataclass
class BaselineResources:
    registers: int = 0
    local_bytes: int = 0
    shared_static_bytes: int = 0
    spill_instructions: Optional[int] = None
    occupancy: Optional[float] = None


@dataclass
class BaselineValidation:
    passed: bool = field(default=False, metadata=key("pass"))
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    failing_regions: int = 0


@dataclass
class BaselineResult:
    """A stored baseline (OUT/baselines/NAME.json), as `baseline save --json` prints it."""

    format: str = ""
    version: int = 0
    name: str = ""
    created: str = ""
    tool_version: str = ""
    kernel: str = ""
    image: str = ""
    image_xxh64: str = ""
    gpu: str = ""
    sm: int = 0
    driver_version: int = 0
    time_ms: BaselineTime = field(default_factory=BaselineTime)
    resources: BaselineResources = field(default_factory=BaselineResources)
    validation: BaselineValidation = field(default_factory=BaselineValidation)
    fuzz: Optional[Dict[str, Any]] = None
    invariants: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = _raw()

    @property
    def line(self) -> str:
        return (f"baseline {self.name}: {self.time_ms.median:.4f} ms median on {self.gpu}, "
                f"{self.resources.registers} registers, validation {'PASS' if self.validation.passed else 'FAIL'}")


@dataclass
class DiffRow:
    metric: str = ""
    baseline: str = ""
    current: str = ""
    delta: str = ""
    change: str = ""


@dataclass
class DiffResult:
    rows: List[DiffRow] = field(default_factory=list)
    speedup: float = 0.0
    regression: bool = False
    line: str = ""  # "Result: REGRESSION" / "Result: NO REGRESSION"
    baseline: Optional[BaselineResult] = None
    current: Optional[BaselineResult] = None
    raw: Dict[str, Any] = _raw()


# ---- locate --------------------------------------------------------------------------------

@dataclass
class LocateEntry:
    name: str = ""
    demangled: str = ""
    kind: str = ""
    category: str = ""
    rule: str = ""
    strategy: str = ""
    status: str = ""
    sources: List[Dict[str, Any]] = field(default_factory=list)  # repo, file, path, what, line
    tests: List[Dict[str, Any]] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    source: Optional[str] = None  # the first source as PATH:LINE
    test: Optional[Dict[str, Any]] = None  # command, cwd
    library: Optional[Dict[str, Any]] = None  # closed source: name, reproduce


@dataclass
class LocateResult:
    format: str = ""
    version: int = 0
    results: List[LocateEntry] = field(default_factory=list)
    repos: List[Dict[str, Any]] = field(default_factory=list)
    raw: Dict[str, Any] = _raw()

    @property
    def line(self) -> str:
        return "; ".join(f"{r.name}: {r.status}" + (f" at {r.source}" if r.source else "") for r in self.results)


@dataclass
class ServeStatus:
    """`kerncap serve DIR --status --json`: whether a server answers for DIR (pid, and what it
    serves: device, strength, evaluations so far in server["served"]), or why one that is
    there does not answer."""
    format: str = ""
    version: int = 0
    dir: str = ""
    serving: bool = False
    pid: Optional[int] = None
    server: Dict[str, Any] = field(default_factory=dict)
    why: Optional[str] = None
    raw: Dict[str, Any] = _raw()

    @property
    def line(self) -> str:
        if self.serving:
            return f"{self.dir} is served by pid {self.pid} ({self.server.get('served', 0)} evaluations so far)"
        return f"{self.dir}: " + (f"a server is there but does not answer: {self.why}" if self.why else "not served")


@dataclass
class RegimeInfo:
    """One regime of `extract KERNEL --regimes` (OUT/regimes.json): a launch shape, the launches
    it stands for and its share of the kernel's GPU time."""
    dir: str = ""
    grid: List[int] = field(default_factory=list)
    block: List[int] = field(default_factory=list)
    cluster: List[int] = field(default_factory=list)
    dynamic_shared: int = 0
    launches: int = 0
    time_ns: int = 0
    share: float = 0.0
    dispatch: int = 0
    captured: bool = False
    why: Optional[str] = None


@dataclass
class RegimesResult:
    """`kerncap extract KERNEL --regimes --json`: the regime index (format kerncap-regimes)."""
    format: str = ""
    version: int = 0
    output: str = ""
    kernel: Dict[str, Any] = field(default_factory=dict)
    application: str = ""
    launches: int = 0
    time_ns: int = 0
    app_time_ns: int = 0
    regimes: List[RegimeInfo] = field(default_factory=list)
    raw: Dict[str, Any] = _raw()


@dataclass
class RegimeKernelSet(RegimesResult):
    """One kernel's regime set within `extract --regimes --kernel A --kernel B` / `--top N`."""
    dir: str = ""  # OUT/<dir> is the kernel's set (validate_regimes(OUT/<dir>, cubin) judges a variant)


@dataclass
class RegimeKernelsResult:
    """`kerncap extract --regimes --kernel A --kernel B --json` (or `--top N`): the regime sets of
    several kernels taken in one pair of runs; OUT/regime-kernels.json lists them."""
    output: str = ""
    kernels: List[RegimeKernelSet] = field(default_factory=list)
    raw: Dict[str, Any] = _raw()


@dataclass
class RegimeVerdict:
    dir: str = ""
    grid: List[int] = field(default_factory=list)
    block: List[int] = field(default_factory=list)
    launches: int = 0
    share: float = 0.0
    result: str = ""
    strength: Optional[str] = None
    line: str = ""
    speedup: Optional[float] = None
    verdict: Optional[Dict[str, Any]] = None  # the one judge's document for this regime

    @property
    def passed(self) -> bool:
        return self.result == "PASS"


@dataclass
class RunResult:
    """`kerncap run --swap ... --json` (format kerncap-run-report): the application run in pairs,
    unmodified and with the variant swapped in (or, with shadow, its launches checked against the
    variant); medians with 95% intervals of wall, GPU and kernel time and the paired ratios
    (summary), each run's facts (runs), and the verdict: ok, refused, not_swapped, app_failed,
    output_differs, check_failed, shadow_failed or not_checked (why says more)."""
    format: str = ""
    version: int = 0
    mode: str = ""
    verdict: str = ""
    why: str = ""
    pairs: int = 0
    dir: str = ""
    swaps: List[Dict[str, Any]] = field(default_factory=list)
    runs: List[Dict[str, Any]] = field(default_factory=list)
    summary: Dict[str, Any] = field(default_factory=dict)
    raw: Dict[str, Any] = _raw()

    @property
    def passed(self) -> bool:
        return self.verdict == "ok"

    @property
    def line(self) -> str:
        return f"Run: {self.verdict} ({self.why})"

    def ratio(self, what: str = "kernel_ns") -> Optional[float]:
        """The median paired ratio unmodified/swapped of wall_s, gpu_ns or kernel_ns."""
        r = self.summary.get(what, {}).get("ratio", {})
        return r.get("median") if r.get("n") else None


@dataclass
class RegimeValidateResult:
    """`kerncap validate OUT --json` over a regime set (format kerncap-regime-verdict): every
    regime's verdict and speed-up, the speed-up weighted by in-app time share and its Amdahl
    projection onto the application's GPU time."""
    format: str = ""
    version: int = 0
    result: str = ""
    line: str = ""
    kernel: str = ""
    regimes: List[RegimeVerdict] = field(default_factory=list)
    failed: List[str] = field(default_factory=list)
    regressed: List[str] = field(default_factory=list)
    weighted_speedup: Optional[float] = None
    app_projection: Optional[float] = None
    coverage: float = 0.0
    timed_share: float = 0.0
    min_speedup: Optional[float] = None
    raw: Dict[str, Any] = _raw()

    @property
    def passed(self) -> bool:
        return self.result == "PASS"


@dataclass
class EvaluateResult:
    """`kerncap evaluate OUT --images ...`: one record per candidate (the JSON lines, in input
    order here; docs/evaluate.md "Records"), the run's statistics (`--stats`) and `line`, the
    command's summary. A record's `verdict` is the one judge's document (a regime set's: the set's)."""
    records: List[Dict[str, Any]] = field(default_factory=list)
    stats: Dict[str, Any] = field(default_factory=dict)
    line: str = ""
    raw: Dict[str, Any] = _raw()

    def counts(self) -> Dict[str, int]:
        out: Dict[str, int] = {}
        for r in self.records:
            out[r.get("result", "?")] = out.get(r.get("result", "?"), 0) + 1
        return out

    @property
    def passed(self) -> List[int]:
        """The indices of the candidates that PASSed."""
        return [r["index"] for r in self.records if r.get("result") == "PASS"]

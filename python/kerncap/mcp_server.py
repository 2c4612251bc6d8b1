"""kerncap as an MCP server (Model Context Protocol, stdio), on the official `mcp` Python SDK.

Run it as `kerncap mcp` (or `python3 -m kerncap.mcp_server`). Each tool runs the kerncap CLI
through the Python API (api.py) and returns the CLI's --json document plus `line`: the CLI's
canonical "Result: ..." line for validate, lint and diff, a one-line summary for the others.
Long commands report MCP progress notifications (the CLI's stderr lines, and a tick every few
seconds while it is quiet). A refusal or failure is a tool error whose text is the CLI's own
message with its exit code. docs/agents.md is the playbook an agent follows with these tools.
"""
# No `from __future__ import annotations`: the SDK evaluates the tools' annotations (Context,
# Optional[...]) when it registers them.
import atexit
import os
import re
import sys
from typing import Any, Callable, Dict, List, NoReturn, Optional, TypeVar

from . import api, out_layout
from .errors import KerncapError
from .runner import Progress

R = TypeVar("R")

REQUIREMENT = "mcp>=1.30,<3"
INSTRUCTIONS = """kerncap takes one CUDA kernel launch out of an application and replays it alone.
Workflow (docs/agents.md): profile the application; pick a kernel by a long substring of its
demangled name that matches no other kernel (template arguments included); extract it with
source_dir (and compile_commands) so the reproducer has its source; edit the file extract names
(reproducer.edit_file), run `make recompile` in OUT; validate with fuzz > 0 before trusting a
variant (strong validation is the default); compare replay times (captured=true for the
original) or diff against a baseline; lint for registers and spills. Judging many variants at
once: evaluate(dir, images) (every GPU, crashes and hangs contained). Validating variants one by one
on one capture: call serve(dir) first (each validate then skips the driver start and the restore;
serve_stop(dir) when done). Every result has `line`;
validate/lint/diff's is the CLI's 'Result: ...' verdict. Errors carry the CLI's message."""


# The SDK: MCPServer (mcp 2), else FastMCP (mcp 1); without it the module still imports, and
# main() says what to install.
_SDK_ERROR: Optional[ImportError] = None
try:
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as _Server
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:
    try:
        from mcp.server.fastmcp import Context  # type: ignore
        from mcp.server.fastmcp import FastMCP as _Server  # type: ignore
        from mcp.server.fastmcp.exceptions import ToolError  # type: ignore
    except ImportError as e:
        _SDK_ERROR = e


def _missing_mcp(e: ImportError) -> NoReturn:
    print(f"kerncap: error: the MCP server needs the `mcp` Python package ({e}); install it with "
          f"pip install 'kerncap[mcp]' or pip install '{REQUIREMENT}' (interpreter: {sys.executable})",
          file=sys.stderr)
    raise SystemExit(2)


def _operand(value: Optional[str], what: str) -> Optional[str]:
    """A path or name an agent passes, checked before it becomes a CLI argument: one that starts
    with '-' would be read as an option (`dir="--help"` printed help, and the call ended as an
    internal error; issue 38's fuzzing of the MCP server). A path keeps its meaning as ./-x."""
    if value is None or not value.startswith("-"):
        return value
    if what in ("dir", "output", "cubin", "capture"):
        return "./" + value
    raise ToolError(f"kerncap usage error (exit 2): {what} '{value[:200]}' starts with '-', which the CLI would "
                    f"read as an option; pass a name that does not")


def _operands(values: Optional[List[str]], what: str) -> Optional[List[str]]:
    return None if values is None else [_operand(v, what) or "" for v in values]


def _document(res: Any) -> Dict[str, Any]:
    """The CLI's JSON document of a result, with its `line`."""
    doc = dict(res.raw)
    doc["line"] = res.line
    return doc


def _profile_rows(prof: api.ProfileResult, top: int, pattern: Optional[str]) -> Dict[str, Any]:
    """The profile for an agent: totals and the first `top` kernels (matching `pattern`), each with
    what picking and extracting it needs; the full document is what `kerncap profile -o` writes."""
    rx = re.compile(pattern) if pattern else None
    rows = [k for k in prof.kernels if not rx or rx.search(k.name) or rx.search(k.demangled)]
    keep = ("rank", "name", "demangled", "kind", "category", "calls", "benchmark_calls", "total_ns", "avg_ns", "median_ns", "percent",
            "grid", "block", "in_graph", "extract", "source", "test")
    shown = [{k: r.raw[k] for k in keep if k in r.raw} for r in rows[:top] if r.raw] if top else []
    return {"line": prof.line, "format": prof.format, "version": prof.version, "application": prof.application,
            "totals": prof.totals, "by_rank_device": prof.by_rank_device, "kernels": shown,
            "kernels_not_shown": len(rows) - len(shown)}


def build_server(kerncap: Optional[api.Kerncap] = None) -> Any:
    """The MCP server with kerncap's tools. kerncap: the CLI to run (default: found on first call,
    so listing the tools needs no executable)."""
    if _SDK_ERROR is not None:
        _missing_mcp(_SDK_ERROR)
    import anyio
    import anyio.to_thread
    import anyio.from_thread

    server = _Server("kerncap", instructions=INSTRUCTIONS)
    state: Dict[str, api.Kerncap] = {}
    servers: Dict[str, Any] = {}  # dir -> serving.Server started by this MCP server (stopped at exit)

    def stop_servers() -> None:
        for s in list(servers.values()):
            try:
                s.stop(timeout=10)
            except Exception:  # an exiting MCP server must not fail on a server already gone
                pass
    atexit.register(stop_servers)
    if kerncap is not None:
        state["kc"] = kerncap

    async def call(ctx: Any, work: Callable[[api.Kerncap, Optional[Callable[[Progress], None]]], R]) -> R:
        """Runs work(kc, progress) in a worker thread; the CLI's progress becomes notifications and
        its errors tool errors carrying its message."""
        def progress(p: Progress) -> None:
            try:
                anyio.from_thread.run(ctx.report_progress, float(p.step), None, p.message)
            except Exception:  # a client that went away must not fail the command
                pass

        def run() -> R:
            if "kc" not in state:
                state["kc"] = api.Kerncap()
            return work(state["kc"], progress)

        try:
            return await anyio.to_thread.run_sync(run)
        except KerncapError as e:
            raise ToolError(f"kerncap {e.kind} error (exit {e.exit_code}): {e.message}") from e

    @server.tool()
    async def profile(command: List[str], ctx: Context, top: int = 20, filter: Optional[str] = None,
                      source_repos: Optional[List[str]] = None) -> Dict[str, Any]:
        """Run the application (command: argv list) under kerncap's profiler and rank its kernels by
        GPU time. Returns totals and the first `top` kernels (optionally only names matching the
        regex `filter`): mangled name, demangled name, calls, time, share, and under `extract` the
        dispatch index per process. source_repos: checked-out repositories to find each kernel's
        source and tests in."""
        source_repos = _operands(source_repos, "dir")
        if filter:
            try:
                re.compile(filter)
            except re.error as e:
                raise ToolError(f"kerncap input error (exit 2): filter '{filter}' is not a valid regular expression: {e}")
        prof = await call(ctx, lambda kc, pr: kc.profile(command, source_repos=source_repos or (), progress=pr))
        return _profile_rows(prof, top, filter)

    @server.tool()
    async def extract(kernel: str, command: List[str], output: str, ctx: Context, dispatch: int = 0,
                      regex: bool = False, force: bool = False, keep_running: bool = False,
                      source_dir: Optional[str] = None, compile_commands: Optional[str] = None,
                      language: Optional[str] = None, rank: Optional[int] = None,
                      device: Optional[int] = None) -> Dict[str, Any]:
        """Capture one launch of a kernel into the directory `output` (OUT) and write a reproducer
        there. kernel: a substring of the demangled name; use a long unique one (template arguments
        included) so it matches only the kernel you mean. dispatch: which matching launch (from 0).
        source_dir / compile_commands: the application's source tree and build, so that OUT gets
        kernel_variant.cu and `make recompile`. force: replace an existing OUT."""
        kernel = _operand(kernel, "kernel")
        output = _operand(output, "output")
        source_dir = _operand(source_dir, "dir")
        compile_commands = _operand(compile_commands, "cubin")
        res = await call(ctx, lambda kc, pr: kc.extract(
            kernel, command, output, dispatch=dispatch, regex=regex, force=force, keep_running=keep_running,
            source_dir=source_dir, compile_commands=compile_commands, language=language, rank=rank,
            device=device, progress=pr))
        doc = _document(res)
        if res.triton is not None:
            doc["triton"] = res.triton
        return doc

    @server.tool()
    async def info(dir: str, ctx: Context, verify: bool = False) -> Dict[str, Any]:
        """What a capture holds (its manifest): kernel, launch geometry, parameters, regions, device.
        No GPU needed. dir: OUT or OUT/capture; verify: also check every stored file's hash."""
        dir = _operand(dir, "dir")
        return _document(await call(ctx, lambda kc, pr: kc.info(dir, verify=verify)))

    @server.tool()
    async def replay(dir: str, ctx: Context, cubin: Optional[str] = None, iterations: int = 20, warmup: int = 3,
                     cache: Optional[str] = None, timer: Optional[str] = None,
                     captured: bool = False) -> Dict[str, Any]:
        """Replay the captured launch alone and time it: median/min/max/stddev in ms over
        `iterations` launches. cubin: time this variant image instead (default: OUT's freshly
        recompiled variant when there is one); captured: time the captured image even then;
        cache: auto (default: as the application saw it), warm, or cold (flush L2 before each launch)."""
        dir = _operand(dir, "dir")
        cubin = _operand(cubin, "cubin")
        return _document(await call(ctx, lambda kc, pr: kc.replay(
            dir, cubin=cubin, iterations=iterations, warmup=warmup, cache=cache, timer=timer, captured=captured,
            progress=pr)))

    @server.tool()
    async def validate(dir: str, ctx: Context, cubin: Optional[str] = None, footprint: str = "auto", fuzz: int = 0,
                       seed: int = 1, dtype: Optional[str] = None, atol: Optional[float] = None,
                       rtol: Optional[float] = None, min_speedup: Optional[float] = None,
                       captured: bool = False) -> Dict[str, Any]:
        """Replay once and compare every byte the launch wrote with what the application's launch
        wrote. Strong validation (footprint auto/require) poisons the bytes the launch must write, so
        a variant that skips writes fails; fuzz=N adds N trials with random float inputs against the
        captured kernel (do use it for a variant). cubin / captured as in replay. Returns the verdict
        (`result` PASS/FAIL, per-region errors) and `line`, the CLI's 'Result: ...'."""
        dir = _operand(dir, "dir")
        cubin = _operand(cubin, "cubin")
        if os.path.lexists(os.path.join(dir, out_layout.REGIMES_INDEX)):  # a regime set: every regime judged
            return _document(await call(ctx, lambda kc, pr: kc.validate_regimes(
                dir, cubin=cubin, min_speedup=min_speedup, footprint=footprint, progress=pr)))
        return _document(await call(ctx, lambda kc, pr: kc.validate(
            dir, cubin=cubin, footprint=footprint, fuzz=fuzz, seed=seed, dtype=dtype, atol=atol, rtol=rtol,
            min_speedup=min_speedup, captured=captured, progress=pr)))

    @server.tool()
    async def evaluate(dir: str, images: List[str], ctx: Context, gpus: str = "all", time_limit: float = 60,
                       time: bool = True, min_speedup: Optional[float] = None,
                       speedup_cache: Optional[str] = None, details: bool = False,
                       judge: Optional[str] = None) -> Dict[str, Any]:
        """Judge many candidate images of one capture (or of a regime set: every regime) at once,
        on every GPU of this host, each by the same judge as validate: `images` are files or
        directories of *.cubin/*.fatbin/*.ptx. A candidate still running after time_limit seconds is
        a FAIL "timed out"; one that crashes its worker is an ERROR; neither stops the others.
        Returns `line` (the summary), `counts`, and per candidate (input order) index, image,
        result, line, error, device and the speed-up (a regime set's weighted figure); details=true
        adds each full verdict document. Prefer this to calling validate in a loop. judge: the
        workers' judge as `kerncap evaluate --judge` names it (leave it out: the engine's)."""
        dir = _operand(dir, "dir")
        images = _operands(images, "cubin") or []
        res = await call(ctx, lambda kc, pr: kc.evaluate(
            dir, images, gpus=gpus, time_limit=time_limit, time=time, min_speedup=min_speedup,
            speedup_cache=speedup_cache, judge=_operand(judge, "judge"), progress=pr))

        def brief(r: Dict[str, Any]) -> Dict[str, Any]:
            v = r.get("verdict") or {}
            sp = v.get("weighted_speedup") if "weighted_speedup" in v else (v.get("speedup") or {}).get("speedup")
            b = {k: r.get(k) for k in ("index", "image", "result", "line", "error", "device")}
            b["speedup"] = sp
            if details:
                b["verdict"] = v or None
            return b
        return {"line": res.line, "counts": res.counts(), "records": [brief(r) for r in res.records],
                "stats": {k: res.stats.get(k) for k in ("candidates", "regimes", "evaluations", "seconds", "restarts")
                          if k in res.stats}}

    @server.tool()
    async def extract_regimes(kernel: str, command: List[str], output: str, ctx: Context,
                              max_regimes: Optional[int] = None, regex: bool = False,
                              force: bool = False) -> Dict[str, Any]:
        """Capture one launch per launch shape (grid, block, cluster, dynamic shared memory) of a
        kernel into `output`, each with its share of the kernel's GPU time (two runs of the
        application: profiled, then captured). Then `validate` on that directory judges a variant on
        every regime and gives the speed-up weighted by in-app time (what a win on the workload is)."""
        kernel = _operand(kernel, "kernel")
        output = _operand(output, "output")
        return _document(await call(ctx, lambda kc, pr: kc.extract_regimes(
            kernel, command, output, max_regimes=max_regimes, regex=regex, force=force, progress=pr)))

    @server.tool()
    async def extract_regime_kernels(command: List[str], output: str, ctx: Context, kernels: List[str] = [],
                                     top: Optional[int] = None, max_regimes: Optional[int] = None,
                                     regex: bool = False, force: bool = False) -> Dict[str, Any]:
        """The regimes of several kernels in the same two runs of the application: each of
        `kernels` (name patterns) and the `top` kernels by GPU time. Each kernel's set goes to
        `output`/KK-<name> (its `dir` in the result); `validate` on `output` judges every kernel's
        captured image, on `output`/<dir> with a variant that kernel's variant over its regimes."""
        output = _operand(output, "output")
        kernels = _operands(kernels, "kernel") or []
        return _document(await call(ctx, lambda kc, pr: kc.extract_regime_kernels(
            command, output, kernels=kernels, top=top, max_regimes=max_regimes, regex=regex, force=force,
            progress=pr)))

    @server.tool()
    async def run_swapped(swaps: List[str], command: List[str], ctx: Context, repeat: int = 3,
                          check: Optional[str] = None, shadow: bool = False, every: int = 1,
                          warmup: int = 0) -> Dict[str, Any]:
        """The last step before claiming a win: run the application itself with the kernel served by
        the variant. swaps: ["CAPTURE_DIR=variant.cubin"] (or "KERNEL_NAME=variant.cubin"); the
        variant's parameter layout must be the captured kernel's. `repeat` pairs of runs, unmodified
        then swapped: medians with 95% intervals of wall, GPU and the kernel's own time, the paired
        ratios, whether the swapped runs printed the same, and `check` (a shell command judging each
        run's outputs; exit 0 = right). shadow=True instead runs the original and checks every
        `every`-th launch against the variant, naming the first launch (and its shape) that differs.
        warmup: pairs run first and left out of the times. Returns the run report; verdict "ok" is a
        pass."""
        swaps = [s if "=" not in s else (_operand(s.rsplit("=", 1)[0], "capture") or "") + "=" +
                 (_operand(s.rsplit("=", 1)[1], "cubin") or "") for s in swaps]
        return _document(await call(ctx, lambda kc, pr: kc.run_swapped(
            swaps, command, repeat=repeat, check=check, shadow=shadow, every=every, warmup=warmup, progress=pr)))

    @server.tool()
    async def report(dir: str, ctx: Context, verdict: Optional[str] = None,
                     output: Optional[str] = None) -> Dict[str, Any]:
        """Write one self-contained HTML page about a capture or a regime set (regime table,
        speed-up bars, kernel times, footprint map, lint) for a person to look at. verdict: a file
        holding what validate returned as JSON. Returns {"page": path}."""
        dir = _operand(dir, "dir")
        verdict = _operand(verdict, "dir")
        output = _operand(output, "output")
        return {"page": await call(ctx, lambda kc, pr: kc.report(dir, verdict=verdict, output=output))}

    @server.tool()
    async def serve(dir: str, ctx: Context, footprint: str = "auto", idle_timeout: float = 1800) -> Dict[str, Any]:
        """Keep capture `dir` open in a background `kerncap serve` (first checks that the captured
        image PASSes; measures the footprint once if strong validation needs it): later validate
        calls on dir (cubin or not) are then answered in that open session, which saves the
        driver start and the restore each time. Validations it cannot answer exactly run as
        before and say why. It stops after idle_timeout seconds without a request, at
        serve_stop(dir), or when this MCP server exits. Returns the status (`serving`, `pid`)."""
        dir = _operand(dir, "dir")
        def work(kc: api.Kerncap, pr: Any) -> Any:
            s = kc.serve(dir, footprint=footprint, idle_timeout=idle_timeout)
            if s.owned:
                servers[dir] = s
            return s.started
        return _document(await call(ctx, work))

    @server.tool()
    async def serve_stop(dir: str, ctx: Context) -> Dict[str, Any]:
        """Stop the `kerncap serve` of capture `dir` (one started by serve, or any of this user's)."""
        dir = _operand(dir, "dir")
        def work(kc: api.Kerncap, pr: Any) -> Any:
            s = servers.pop(dir, None)
            if s is not None:
                s.stop()
            else:
                kc.run(["serve", dir, "--stop"])
            return kc.serve_status(dir)
        return _document(await call(ctx, work))

    @server.tool()
    async def footprint(dir: str, ctx: Context, force: bool = False) -> Dict[str, Any]:
        """Measure which bytes the captured launch reads and writes (Compute Sanitizer; kept in the
        capture, so validate's strong mode and fuzzing can use it)."""
        dir = _operand(dir, "dir")
        return _document(await call(ctx, lambda kc, pr: kc.footprint(dir, force=force, progress=pr)))

    @server.tool()
    async def lint(dir: str, ctx: Context, cubin: Optional[str] = None, captured: bool = False,
                   max_registers: Optional[int] = None, max_spills: Optional[int] = None,
                   require: Optional[List[str]] = None, forbid: Optional[List[str]] = None,
                   no_sass: bool = False) -> Dict[str, Any]:
        """Check the kernel's compiled code offline (no GPU): registers, spills, local and shared
        memory, occupancy of the captured launch, SASS mix, required/forbidden regex patterns.
        no_sass: skip the disassembler (resources and occupancy only). Returns the checks and
        `line`, the CLI's 'Result: PASS' / 'Result: FAIL'."""
        dir = _operand(dir, "dir")
        cubin = _operand(cubin, "cubin")
        return _document(await call(ctx, lambda kc, pr: kc.lint(
            dir, cubin=cubin, captured=captured, max_registers=max_registers, max_spills=max_spills,
            require=require or (), forbid=forbid or (), no_sass=no_sass)))

    @server.tool()
    async def baseline_save(name: str, dir: str, ctx: Context, cubin: Optional[str] = None, captured: bool = False,
                            fuzz: int = 0) -> Dict[str, Any]:
        """Measure the reproducer (replay time, resources, validation) and store it as baseline
        `name` in OUT/baselines, for `diff` after an edit."""
        name = _operand(name, "name")
        dir = _operand(dir, "dir")
        cubin = _operand(cubin, "cubin")
        return _document(await call(ctx, lambda kc, pr: kc.baseline_save(
            name, dir, cubin=cubin, captured=captured, fuzz=fuzz, progress=pr)))

    @server.tool()
    async def diff(dir: str, baseline: str, ctx: Context, cubin: Optional[str] = None, captured: bool = False,
                   fuzz: int = 0) -> Dict[str, Any]:
        """Measure now and compare with a saved baseline: time (beyond noise, same GPU only),
        registers, spills, occupancy, validation. `line` is the CLI's 'Result: REGRESSION' or
        'Result: NO REGRESSION'."""
        dir = _operand(dir, "dir")
        baseline = _operand(baseline, "baseline")
        cubin = _operand(cubin, "cubin")
        return _document(await call(ctx, lambda kc, pr: kc.diff(
            dir, baseline, cubin=cubin, captured=captured, fuzz=fuzz, progress=pr)))

    @server.tool()
    async def locate(names: List[str], ctx: Context, source_repos: Optional[List[str]] = None,
                     capture: Optional[str] = None) -> Dict[str, Any]:
        """Find where kernels (mangled, demangled or plain names) are defined in checked-out
        repositories, and the command that tests them; closed-source libraries are named."""
        capture = _operand(capture, "capture")
        names = _operands(names, "name") or []
        source_repos = _operands(source_repos, "dir")
        return _document(await call(ctx, lambda kc, pr: kc.locate(
            names, source_repos=source_repos or (), capture=capture, progress=pr)))

    return server


def main() -> None:
    build_server().run()


if __name__ == "__main__":
    main()

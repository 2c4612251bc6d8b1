"""The agent playbook (docs/agents.md) through the Python API on a real GPU, then the same
validate through the MCP server when the `mcp` package is importable. Driven by
tests/gpu/agent_e2e.sh, which builds the application; prints one PASS/FAIL/SKIP line per step and
"N passed, N failed".

    python3 tests/gpu/agent_flow.py KERNCAP_BIN APP SOURCE_DIR COMPILE_COMMANDS WORK
"""
import asyncio
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from kerncap import Kerncap, KerncapError  # noqa: E402

KC_BIN, APP, SRC, DB, WORK = sys.argv[1:6]
PATTERN = "transform_kernel<float, 4"  # one of three instantiations: template arguments pick it
results = []


def step(name, fn):
    t = time.monotonic()
    try:
        note = fn() or ""
        status = "PASS"
    except SkipStep as e:
        status, note = "SKIP", str(e)
    except (AssertionError, KerncapError) as e:
        status, note = "FAIL", f"{type(e).__name__}: {e}"
    results.append(status)
    print(f"{status} {name} ({time.monotonic() - t:.1f} s): {note}"[:400], flush=True)
    return status == "PASS"


class SkipStep(Exception):
    pass


kc = Kerncap(binary=KC_BIN, timeout=600)
OUT = os.path.join(WORK, "iso", "scale")
state = {}


def profile():
    prof = kc.profile([APP])
    names = [k.demangled for k in prof.kernels]
    assert sum("transform_kernel" in n for n in names) == 3, names  # a short pattern would be ambiguous
    chosen = [n for n in names if PATTERN in n]
    assert len(chosen) == 1, f"{PATTERN!r} matches {chosen}"
    return f"{len(names)} kernels; {PATTERN!r} is unique: {chosen[0]}"


def extract():
    ex = kc.extract(PATTERN, [APP], OUT, source_dir=SRC, compile_commands=DB, force=True, triton=False)
    assert PATTERN in ex.kernel, ex.kernel
    assert ex.source is not None and ex.source.status.startswith("found"), ex.source
    assert ex.reproducer is not None and ex.reproducer.recompile_available, ex.reproducer
    state["edit"] = ex.reproducer.edit_file
    return ex.line


def info():
    i = kc.info(OUT)
    assert PATTERN in i.kernel.demangled and i.launch["block"] == [256, 1, 1]
    return i.line


def validate_captured():
    v = kc.validate(OUT, fuzz=5)
    assert v.passed and v.line.startswith("Result: PASS"), v.line
    assert v.fuzz is not None and v.fuzz.passed, v.fuzz
    return f"{v.strength}: {v.line[:120]}"


def baseline():
    r = kc.replay(OUT, iterations=20)
    assert r.median_ms > 0 and len(r.times_ms) == 20
    li = kc.lint(OUT, no_sass=True)
    assert li.resources is not None and li.resources.registers > 0
    b = kc.baseline_save("base", OUT)
    assert b.validation.passed
    return f"{r.line}; {li.line}; {b.line}"


def make_recompile():
    p = subprocess.run(["make", "-C", OUT, "recompile"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-800:] + p.stderr[-800:]
    assert os.path.isfile(os.path.join(OUT, "optimized.cubin"))


def wrong_edit():
    path = state["edit"]
    text = open(path).read()
    assert "return v * k;" in text, path
    state["original"] = text
    with open(path, "w") as f:
        f.write(text.replace("return v * k;", "return v * k + T(1);"))
    time.sleep(1.1)  # the variant must be newer than its source
    make_recompile()
    v = kc.validate(OUT)
    assert not v.passed and "regions differ" in v.line, v.line
    assert "optimized.cubin" in v.image, v.image
    return v.line[:160]


def good_edit():
    with open(state["edit"], "w") as f:
        f.write(state["original"])
    time.sleep(1.1)
    make_recompile()
    v = kc.validate(OUT, fuzz=10)
    assert v.passed and v.fuzz is not None and v.fuzz.passed, v.line
    d = kc.diff(OUT, "base")
    assert d.line in ("Result: NO REGRESSION", "Result: REGRESSION"), d.line
    return f"{v.line[:100]}; diff: {d.line}"


def refusal():
    try:
        kc.validate(OUT, cubin=os.path.join(WORK, "missing.cubin"))
    except KerncapError as e:
        assert e.kind == "input" and "no such file" in e.message, e.message
        return e.message
    raise AssertionError("a missing --cubin was accepted")


def mcp_validate():
    try:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
    except ImportError:
        raise SkipStep("the mcp package is not installed here")
    env = dict(os.environ, KERNCAP_PYTHON=sys.executable)
    env.pop("KERNCAP_BIN", None)
    progress = []

    async def run():
        async with stdio_client(StdioServerParameters(command=KC_BIN, args=["mcp"], env=env)) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                return await s.call_tool("validate", {"dir": OUT, "fuzz": 20, "captured": True},
                                         progress_callback=lambda p, t, m: progress.append(m))

    res = asyncio.run(run())
    err = getattr(res, "is_error", getattr(res, "isError", None))
    doc = getattr(res, "structured_content", None) or getattr(res, "structuredContent", None)
    doc = doc.get("result", doc)
    assert not err and doc["line"].startswith("Result: PASS"), res
    return f"{doc['line'][:100]}; {len(progress)} progress notification(s)"


os.makedirs(WORK, exist_ok=True)
if step("profile", profile) and step("extract", extract):
    step("info", info)
    if step("validate_captured_fuzz", validate_captured):
        step("replay_lint_baseline", baseline)
        if step("wrong_edit_fails", wrong_edit):
            step("good_edit_passes_fuzz_and_diff", good_edit)
        step("refusal_is_input_error", refusal)
        step("mcp_validate", mcp_validate)
passed, failed = results.count("PASS"), results.count("FAIL")
print(f"{passed} passed, {failed} failed" + (f", {results.count('SKIP')} skipped" if "SKIP" in results else ""))
sys.exit(1 if failed else 0)

"""The MCP server through the SDK's own stdio client: `kerncap mcp` starts it, the client lists
the tools and calls two of them offline on a fixture capture (info answers; validate refuses with
the CLI's message and exit code). Skipped, saying so, where the `mcp` package is not installed."""
import asyncio
import os
import sys

import pytest

pytest.importorskip("mcp", reason="the `mcp` Python package is not installed (pip install 'kerncap[mcp]'): "
                                  "the MCP server is not tested")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from conftest import write_capture  # noqa: E402

TOOLS = {"profile", "extract", "info", "replay", "validate", "footprint", "lint", "baseline_save", "diff", "locate",
         "serve", "serve_stop", "extract_regimes", "extract_regime_kernels", "report", "run_swapped", "evaluate"}


def attr(obj, snake, camel):
    """A result field by its mcp 2 (snake_case) or mcp 1 (camelCase) name."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def structured(result):
    doc = attr(result, "structured_content", "structuredContent")
    return doc.get("result", doc) if isinstance(doc, dict) else doc


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def with_server(kerncap_bin, body, **extra_env):
    env = dict(os.environ, KERNCAP_PYTHON=sys.executable, **extra_env)
    env.pop("KERNCAP_BIN", None)  # `kerncap mcp` names itself
    params = StdioServerParameters(command=kerncap_bin, args=["mcp"], env=env)

    async def run():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)

    return asyncio.run(run())


def test_lists_the_tools_and_calls_info_and_validate(kerncap_bin, tmp_path):
    out = tmp_path / "out"
    write_capture(str(out), name="_Z10add_kernelPfS_i", regions=[(0, 0x7f0000000000, b"\1" * 64)],
                  after=[(0, 0, b"\2" * 16)])
    progress = []

    async def body(s):
        listed = await s.list_tools()
        names = {t.name for t in listed.tools}
        info = await s.call_tool("info", {"dir": str(out)})
        refused = await s.call_tool("validate", {"dir": str(out), "min_speedup": 1.1},
                                    progress_callback=lambda p, t, m: progress.append(m))
        return names, listed, info, refused

    names, listed, info, refused = with_server(kerncap_bin, body)
    assert TOOLS <= names, f"missing tools: {TOOLS - names}"
    validate = next(t for t in listed.tools if t.name == "validate")
    schema = attr(validate, "input_schema", "inputSchema")
    assert {"dir", "fuzz", "footprint", "cubin"} <= set(schema["properties"])

    assert not attr(info, "is_error", "isError"), text(info)
    doc = structured(info)
    assert doc["format"] == "kerncap-capture" and doc["kernel"]["mangled"] == "_Z10add_kernelPfS_i"
    assert doc["capture_dir"].endswith(os.path.join("out", "capture")) and "grid 4x1x1" in doc["line"]

    # No variant to time against the captured image: refused before any GPU work, exit 2.
    assert attr(refused, "is_error", "isError")
    msg = text(refused)
    assert "exit 2" in msg and "--min-speedup compares a variant with the captured image" in msg, msg
    # The CLI's stderr lines reach the client as progress notifications while it runs.
    assert any("--min-speedup compares a variant" in (m or "") for m in progress), progress


def test_a_missing_capture_is_the_clis_input_error(kerncap_bin, tmp_path):
    async def body(s):
        return await s.call_tool("lint", {"dir": str(tmp_path / "nothing-here")})

    r = with_server(kerncap_bin, body)
    assert attr(r, "is_error", "isError")
    assert "kerncap input error (exit 2)" in text(r) and "nothing-here" in text(r), text(r)


def test_lint_returns_the_clis_result_line(kerncap_bin, tmp_path):
    from test_results_fields import lint_fixture
    image = lint_fixture(kerncap_bin)
    if image is None:
        pytest.skip("no fixture cubin in the build tree (tests/fixtures/cubin/lint_sm90.cubin)")
    out = tmp_path / "out"
    write_capture(str(out), name="k_spill", image=image, block=(1024, 1, 1))

    async def body(s):
        return (await s.call_tool("lint", {"dir": str(out), "max_registers": 24, "no_sass": True}),
                await s.call_tool("lint", {"dir": str(out), "no_sass": True}))

    failed, passed = with_server(kerncap_bin, body)
    assert not attr(failed, "is_error", "isError"), text(failed)  # a FAIL verdict is a result, not an error
    assert structured(failed)["line"] == "Result: FAIL" and structured(failed)["result"] == "FAIL"
    assert structured(passed)["line"] == "Result: PASS" and structured(passed)["resources"]["registers"] == 32


def test_serve_says_why_it_cannot_start_and_serve_stop_reports_none(kerncap_bin, tmp_path):
    # No GPU is needed to see the wiring: without one (or with a capture the server cannot
    # open) `serve` is a tool error carrying the CLI's message; serve_stop of a directory no
    # server answers for returns the status document saying so.
    out = tmp_path / "out"
    write_capture(str(out), name="_Z10add_kernelPfS_i", regions=[(0, 0x7f0000000000, b"\1" * 64)],
                  after=[(0, 0, b"\2" * 16)])

    async def body(s):
        return (await s.call_tool("serve", {"dir": str(tmp_path / "nothing-here")}),
                await s.call_tool("serve_stop", {"dir": str(out)}))

    refused, stopped = with_server(kerncap_bin, body)
    assert attr(refused, "is_error", "isError")
    assert "kerncap input error (exit 2)" in text(refused) and "nothing-here" in text(refused), text(refused)
    assert not attr(stopped, "is_error", "isError"), text(stopped)
    doc = structured(stopped)
    assert doc["format"] == "kerncap-serve-status" and doc["serving"] is False, doc
    assert "not served" in doc["line"]


def test_evaluate_judges_many_candidates_and_a_regime_set(kerncap_bin, tmp_path):
    from test_evaluate_cli import candidate_dir
    from test_evaluate_pool import fake_capture
    from test_evaluate_regimes import regime_set
    cap = fake_capture(str(tmp_path / "cap"))
    rset = regime_set(str(tmp_path / "set"))
    d = candidate_dir(tmp_path, ["pass x2.0", "fail", "fault", "pass fail@01-b"])
    tests = os.path.dirname(os.path.abspath(__file__))
    judge = {"judge": "fake_judge:open_fake", "gpus": "0,1", "time_limit": 5}

    async def body(s):
        one = await s.call_tool("evaluate", {"dir": cap, "images": [str(d)], **judge})
        many = await s.call_tool("evaluate", {"dir": rset, "images": [str(d / "v0.cubin"), str(d / "v3.cubin")],
                                              "details": True, **judge})
        return one, many

    one, many = with_server(kerncap_bin, body, PYTHONPATH=tests + os.pathsep + os.environ.get("PYTHONPATH", ""))
    assert not attr(one, "is_error", "isError"), text(one)
    doc = structured(one)
    # (fail@01-b fails only on a regime set's regime 01-b)
    assert [r["result"] for r in doc["records"]] == ["PASS", "FAIL", "ERROR", "PASS"]
    assert doc["counts"] == {"PASS": 2, "FAIL": 1, "ERROR": 1} and "4 candidates on 2 GPU(s)" in doc["line"]
    assert "verdict" not in doc["records"][0]
    sets = structured(many)
    assert [r["result"] for r in sets["records"]] == ["PASS", "FAIL"]
    assert sets["records"][0]["speedup"] == 2.0  # the set's weighted figure
    assert sets["records"][1]["verdict"]["failed"] == ["01-b"] and sets["stats"]["regimes"] == 2

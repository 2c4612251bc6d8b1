"""`kerncap mcp` without what it needs: a clear message and exit 2 (no `mcp` package needed)."""
import os
import subprocess
import sys


def test_help_lists_the_mcp_command(kerncap_bin):
    out = subprocess.run([kerncap_bin, "--help"], capture_output=True, text=True).stdout
    assert "kerncap mcp" in out


def test_a_missing_interpreter_is_named(kerncap_bin, tmp_path):
    p = subprocess.run([kerncap_bin, "mcp", "--python", str(tmp_path / "no-python")], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 2
    assert "cannot run" in p.stderr and "no-python" in p.stderr and "KERNCAP_PYTHON" in p.stderr


def test_a_missing_mcp_package_is_named(kerncap_bin, tmp_path):
    # A package named mcp that fails to import stands in for an interpreter without the SDK.
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("raise ImportError('no SDK here')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path), KERNCAP_PYTHON=sys.executable)
    p = subprocess.run([kerncap_bin, "mcp"], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode == 2, p.stderr
    assert "the MCP server needs the `mcp` Python package" in p.stderr and "pip install" in p.stderr

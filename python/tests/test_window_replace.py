"""kerncap.window (the window engine's ctypes binding) and kerncap.window_replace (`kerncap window
validate --replace-py`) without a GPU: the spec, loading the callable, the binding to the real
library's kc_window_* calls, and the refusals the CLI and the module make before any device work."""
import os
import subprocess
import sys

import pytest

from kerncap import engine, window, window_replace


def test_spec_is_from_to_module_function():
    assert window_replace.parse_spec("1..2=fused.py:silu_gemm") == (1, 2, "fused.py", "silu_gemm")
    assert window_replace.parse_spec("0..0=pkg.mod:Cls.method") == (0, 0, "pkg.mod", "Cls.method")
    for bad in ("1..2", "1-2=a:b", "a..2=m:f", "1..2=m", "1..2=:f"):
        with pytest.raises(engine.EngineError) as e:
            window_replace.parse_spec(bad)
        assert e.value.exit_code == 2


def test_callable_from_a_file_or_a_module(tmp_path):
    f = tmp_path / "fused.py"
    f.write_text("class K:\n    @staticmethod\n    def go(w, s):\n        return s\n\ndef run(w, s):\n    return 7\n")
    assert window_replace.load_callable(str(f), "run")(None, 0) == 7
    assert window_replace.load_callable(str(f), "K.go")(None, 5) == 5
    assert window_replace.load_callable("os.path", "basename")("/a/b") == "b"
    with pytest.raises(engine.EngineError, match="has no nothing"):
        window_replace.load_callable(str(f), "nothing")
    with pytest.raises(engine.EngineError, match="no such file"):
        window_replace.load_callable(str(tmp_path / "missing.py"), "run")


def test_the_library_has_the_window_calls(engine_lib):
    window._bind(engine_lib)  # raises when a kc_window_* call is missing
    for name in window._SIGNATURES:
        assert getattr(engine_lib.lib, name).argtypes is not None


def test_a_missing_window_is_refused_before_any_callable_is_loaded(engine_lib, tmp_path, capsys):
    marker = tmp_path / "imported"
    f = tmp_path / "fused.py"
    f.write_text(f"open({str(marker)!r}, 'w').close()\ndef run(w, s):\n    pass\n")
    rc = window_replace.main([str(tmp_path / "nowhere"), "--replace", f"0..1={f}:run"])
    assert rc == 2
    assert "no such directory" in capsys.readouterr().err
    assert not marker.exists()  # the window is opened first: the module is not imported


def test_the_cli_runs_this_module(tmp_path):
    kc = os.environ.get("KERNCAP_BIN")
    if not kc or not os.path.exists(kc):
        pytest.skip("KERNCAP_BIN not set")
    env = dict(os.environ, KERNCAP_PYTHON=sys.executable)
    r = subprocess.run([kc, "window", "validate", str(tmp_path / "nowhere"), "--replace-py", "1..2"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2
    assert "expected FROM..TO=MODULE:FUNCTION" in r.stderr
    r = subprocess.run([kc, "window", "validate", str(tmp_path), "--replace-py", "1..2=m:f", "--replace", "0..1=x"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "either --replace or --replace-py" in r.stderr


def test_run_op_is_bound(engine_lib):
    window._bind(engine_lib)
    assert engine_lib.lib.kc_window_enqueue_op.argtypes is not None
    rc = engine_lib.lib.kc_window_enqueue_op(None, 0, 0)
    assert rc == engine.E_INPUT
    assert b"no open window" in engine_lib.lib.kc_last_error()


def test_one_launch_entry_points_refuse_a_window_capture(engine_lib, kerncap_bin, tmp_path):
    """A window's directory (capture/window.json beside the first launch's manifest) judged,
    timed, footprinted or pruned as one launch would give wrong verdicts or drop bytes later
    operations read: the engine's Session and the one-launch commands refuse it, naming what to use."""
    from conftest import write_capture
    out = str(tmp_path / "win")
    write_capture(out, regions=[(0, 0x7F0000000000, b"\0" * 64)])
    with open(os.path.join(out, "capture", "window.json"), "w") as f:
        f.write("{}")
    with pytest.raises(engine.EngineError) as e:
        engine.Session(out, lib=engine_lib)
    assert e.value.exit_code == 2
    assert "holds a window of launches" in str(e.value) and "kerncap.window.Window" in str(e.value)
    for argv, instead in ((["footprint", out], "kerncap window validate"), (["prune", out], "not pruned"),
                          (["serve", out], "kerncap window validate"), (["lint", out], "kerncap window validate"),
                          (["baseline", "save", "b1", out], "kerncap window replay")):
        r = subprocess.run([kerncap_bin] + argv, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, (argv, r.stdout, r.stderr)
        assert "holds a window of launches" in r.stderr and instead in r.stderr, (argv, r.stderr)

"""Session.evaluate (the evaluation loop) as far as it goes without a GPU: the revision check,
argument refusals and the closed session. The loop itself runs in tests/gpu/session_e2e.sh."""
import ctypes
import os
import re
import shutil
import subprocess

import pytest

from kerncap import engine

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _closed(lib):
    s = engine.Session.__new__(engine.Session)
    s.path, s._lib, s._s = "nowhere", lib, engine._vp()
    return s


def test_revision_matches_the_header(engine_lib):
    with open(os.path.join(REPO, "include", "kerncap", "replay.h")) as f:
        defs = dict(re.findall(r"#define (KC_\w+) (\d+)", f.read()))
    assert int(defs["KC_REPLAY_ABI_REVISION"]) == engine.ABI_REVISION
    assert engine_lib.revision == engine.ABI_REVISION
    assert engine_lib.lib.kc_evaluate and engine_lib.lib.kc_evaluate_image


def test_a_closed_session_is_an_input_error(engine_lib):
    s = _closed(engine_lib)
    assert s.closed
    with pytest.raises(engine.EngineError, match="closed") as e:
        s.evaluate()
    assert e.value.exit_code == engine.E_INPUT
    s.close()  # closing twice is fine


def test_a_missing_image_is_named(engine_lib, tmp_path):
    """The C ABI checks the image before the session: the path is named even here."""
    out = engine._vp()
    rc = engine_lib.lib.kc_evaluate(None, os.fsencode(tmp_path / "gone.cubin"), None, ctypes.byref(out))
    assert rc == engine.E_INPUT
    assert b"gone.cubin: no such file" in engine_lib.lib.kc_last_error()


def test_an_image_of_another_type_is_refused(engine_lib):
    s = _closed(engine_lib)
    s._s = engine._vp(1)  # never dereferenced: the type is checked first
    with pytest.raises(engine.EngineError, match="path or bytes") as e:
        s.evaluate(42)
    assert e.value.exit_code == engine.E_INPUT


def test_an_older_library_serves_its_calls_and_refuses_evaluate(tmp_path, monkeypatch):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    names = ["kc_version", "kc_last_error", "kc_free", "kc_capture_info", "kc_open", "kc_close", "kc_restore",
             "kc_translate", "kc_params", "kc_stream", "kc_launch", "kc_time", "kc_compare"]
    src = tmp_path / "old.c"
    src.write_text("int kc_abi_version(void) { return 1; }\n" +
                   "".join(f"int {n}(void) {{ return 0; }}\n" for n in names))
    lib = tmp_path / "old" / engine.LIBRARY_NAME
    lib.parent.mkdir()
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    monkeypatch.setenv(engine.ENV_LIBRARY, str(lib))
    old = engine.load()
    assert old.revision == 0
    with pytest.raises(engine.EngineError, match="needs replay ABI revision 1") as e:
        _closed(old).evaluate()
    assert e.value.exit_code == engine.E_INPUT

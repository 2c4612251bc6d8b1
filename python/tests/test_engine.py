"""The ctypes binding of the replay engine (kerncap.engine) against the real
libkerncap_replay.so, and against stand-in libraries for the refusals."""
import glob
import os
import re
import shutil
import subprocess

import pytest
from conftest import write_capture

from kerncap import engine

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_loads_the_real_library_with_a_matching_abi(engine_lib):
    assert os.path.basename(engine_lib.path) == engine.LIBRARY_NAME
    assert engine_lib.lib.kc_abi_version() == engine.ABI_VERSION
    assert re.match(r"\d+\.\d+", engine.version())
    assert engine.load() is engine_lib  # loaded once


def test_versions_and_codes_match_the_header():
    with open(os.path.join(REPO, "include", "kerncap", "replay.h")) as f:
        defs = dict(re.findall(r"#define (KC_\w+) (\d+)", f.read()))
    assert int(defs["KC_REPLAY_ABI_VERSION"]) == engine.ABI_VERSION
    for name in ("OK", "E_FAIL", "E_INPUT", "E_DEVICE", "E_INTERNAL"):
        assert int(defs["KC_" + name]) == getattr(engine, name), name


def test_capture_info_needs_no_gpu(engine_lib, tmp_path):
    write_capture(str(tmp_path), name="scale_kernel", params=b"\0" * 8, slots=[(0, 8)],
                  regions=[(0, 0x7f0000000000, b"\1" * 256)], after=[(0, 0, b"\2" * 16)])
    info = engine.capture_info(str(tmp_path))
    assert info["kernel"]["mangled"] == "scale_kernel"
    assert os.path.samefile(info["directory"], tmp_path / "capture")
    assert [int(r["base"], 16) for r in info["regions"]] == [0x7f0000000000]
    assert info["after"]["runs"][0]["size"] == 16


def test_bad_capture_is_a_clean_input_error(engine_lib, tmp_path):
    with pytest.raises(engine.EngineError) as e:
        engine.capture_info(str(tmp_path / "missing"))
    assert e.value.exit_code == engine.E_INPUT and "missing" in str(e.value)
    cap = write_capture(str(tmp_path / "out"))
    with open(os.path.join(cap, "manifest.json"), "w") as f:
        f.write("{not json")
    with pytest.raises(engine.EngineError, match="JSON") as e:
        engine.capture_info(str(tmp_path / "out"))
    assert e.value.kind == "input"
    assert engine_lib.lib.kc_last_error()  # the message stays readable until the next call


def test_open_without_a_usable_device_is_an_error_not_a_crash(engine_lib, tmp_path):
    """No GPU here (CI): kc_open fails with the device code. On a GPU machine the fake cubin
    is refused instead. Either way: an EngineError with the engine's message."""
    write_capture(str(tmp_path), params=b"\0" * 8, slots=[(0, 8)], regions=[(0, 0x7f0000000000, b"\0" * 64)])
    with pytest.raises(engine.EngineError) as e:
        engine.Session(str(tmp_path))
    assert e.value.exit_code in (engine.E_INPUT, engine.E_DEVICE) and e.value.function == "kc_open"
    assert str(e.value) and "failed (code" not in str(e.value)


def _compile(tmp_path, name, source):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    src = tmp_path / (name + ".c")
    src.write_text(source)
    lib = tmp_path / name / engine.LIBRARY_NAME
    lib.parent.mkdir()
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return str(lib)


def test_abi_mismatch_is_refused_with_advice(tmp_path, monkeypatch):
    stale = _compile(tmp_path, "stale", "int kc_abi_version(void) { return 99; }\n")
    monkeypatch.setenv(engine.ENV_LIBRARY, stale)
    with pytest.raises(engine.EngineError, match=r"ABI version 99.*speaks version %d" % engine.ABI_VERSION) as e:
        engine.load()
    assert e.value.exit_code == engine.E_INPUT and stale in str(e.value)
    with pytest.raises(engine.EngineError, match="ABI version 99"):
        engine.capture_info(str(tmp_path))  # every entry point checks before calling anything else


def test_other_libraries_and_missing_paths_are_refused(tmp_path, monkeypatch):
    other = _compile(tmp_path, "other", "int something_else(void) { return 1; }\n")
    monkeypatch.setenv(engine.ENV_LIBRARY, other)
    with pytest.raises(engine.EngineError, match="not kerncap's replay engine"):
        engine.load()
    monkeypatch.setenv(engine.ENV_LIBRARY, str(tmp_path / "nope.so"))
    with pytest.raises(engine.EngineError, match="no such file") as e:
        engine.load()
    assert engine.ENV_LIBRARY in str(e.value)


def test_search_order_without_the_variable(monkeypatch):
    monkeypatch.delenv(engine.ENV_LIBRARY, raising=False)
    c = engine.candidates()
    here = os.path.dirname(os.path.abspath(engine.__file__))
    assert c[0] == os.path.join(here, engine.LIBRARY_NAME)  # a reproducer's own copy comes first
    assert all(p.endswith(os.path.join("lib", engine.LIBRARY_NAME)) for p in c[1:])
    monkeypatch.setenv(engine.ENV_LIBRARY, "/x/" + engine.LIBRARY_NAME)
    assert engine.candidates() == ["/x/" + engine.LIBRARY_NAME]  # explicit: no fallback


def test_the_variable_is_declared_in_the_cpp_table():
    """KERNCAP_* names have one definition, the C++ table in src/format; Python only reads."""
    table = glob.glob(os.path.join(REPO, "src", "format", "protocol*"))
    if not table:
        pytest.skip("src/format/protocol.* (the KERNCAP_* table) is not in this tree yet")
    text = "".join(open(p, errors="replace").read() for p in table)
    assert f'"{engine.ENV_LIBRARY}"' in text
    py = [p for p in glob.glob(os.path.join(REPO, "python", "kerncap", "**", "*.py"), recursive=True)
          if engine.ENV_LIBRARY in open(p).read()]
    assert [os.path.basename(p) for p in py] == ["engine.py"]

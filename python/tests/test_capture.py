"""The capture view (kerncap.capture): the manifest as the replay engine reads and checks it."""
import hashlib
import json
import os

import pytest
from conftest import write_capture

from kerncap import capture, engine

pytestmark = pytest.mark.usefixtures("engine_lib")
IMAGE = b"\x7fELF-fake-cubin"


def test_fields_regions_and_files(tmp_path):
    write_capture(str(tmp_path), params=b"\1" * 16, slots=[(0, 8), (8, 8)], image=IMAGE, grid=(4, 2, 1),
                  regions=[(0, 0x7f0000000000, b"\0" * 64), (1, 0x7f0000200000, b"\5" * 32),
                           (2, 0x7f0000400000, b"\7" * 8, "global", "table")],
                  after=[(0, 8, b"\xff" * 4), (0, 60, b"\x11" * 4)])
    m = capture.load(str(tmp_path))
    assert os.path.samefile(m.dir, tmp_path / "capture")
    assert m.mangled == "add_kernel" and m.grid == (4, 2, 1) and m.block == (128, 1, 1)
    assert m.slots == [(0, 8), (8, 8)] and m.params() == b"\1" * 16
    assert m.image_sha256() == hashlib.sha256(IMAGE).hexdigest()
    assert [(r.id, r.kind, r.base, r.size) for r in m.regions] == [
        (0, "device", 0x7f0000000000, 64), (1, "device", 0x7f0000200000, 32), (2, "global", 0x7f0000400000, 8)]
    assert [r.id for r in m.memory()] == [0, 1]  # module globals are not what pointer arguments point into
    assert m.region_of(0x7f0000200010).id == 1 and m.region_of(0x7f0000200020) is None
    assert m.region_of(0x7f0000400000) is None


def test_accepts_out_and_out_capture(tmp_path):
    cap = write_capture(str(tmp_path))
    assert capture.load(cap).mangled == capture.load(str(tmp_path)).mangled == "add_kernel"


def test_refusals_carry_the_engines_message_and_exit_code(tmp_path):
    with pytest.raises(engine.EngineError, match="not a kerncap capture|no such directory") as e:
        capture.load(str(tmp_path / "nothing-here"))
    assert e.value.exit_code == 2 and e.value.kind == "input" and e.value.function == "kc_capture_info"
    write_capture(str(tmp_path / "new"), version=999)
    with pytest.raises(engine.EngineError, match="newer kerncap"):
        capture.load(str(tmp_path / "new"))
    write_capture(str(tmp_path / "cut"), regions=[(0, 0x1000, b"\0" * 64)])
    os.truncate(tmp_path / "cut" / "capture" / "mem" / "0.bin", 10)
    with pytest.raises(engine.EngineError, match="mem/0.bin") as e:
        capture.load(str(tmp_path / "cut"))
    assert e.value.exit_code == 2


def test_missing_field_is_reported(tmp_path):
    cap = write_capture(str(tmp_path))
    path = os.path.join(cap, "manifest.json")
    j = json.load(open(path))
    del j["launch"]["grid"]
    json.dump(j, open(path, "w"))
    with pytest.raises(engine.EngineError, match="grid"):
        capture.load(str(tmp_path))

"""The pure-Python capture reader (kerncap.capture)."""
import json
import os

import pytest
from conftest import write_capture

from kerncap import capture


def test_reads_manifest_and_applies_after_runs(tmp_path):
    write_capture(str(tmp_path), params=b"\1" * 16, slots=[(0, 8), (8, 8)],
                  regions=[(0, 0x7f0000000000, b"\0" * 64), (1, 0x7f0000200000, b"\5" * 32)],
                  after=[(0, 8, b"\xff" * 4), (0, 60, b"\x11" * 4)])
    m = capture.load(str(tmp_path))
    assert m.mangled == "add_kernel" and m.grid == (4, 1, 1) and len(m.slots) == 2
    r0 = m.regions[0]
    exp = m.expected(r0)
    assert exp[8:12] == b"\xff" * 4 and exp[60:64] == b"\x11" * 4 and exp[:8] == b"\0" * 8
    assert m.written(r0) == 8 and m.written(m.regions[1]) == 0
    assert m.expected(m.regions[1]) == b"\5" * 32
    assert m.region_of(0x7f0000200010).id == 1 and m.region_of(0x7f0000200020) is None


def test_accepts_capture_subdir_and_refuses_newer_format(tmp_path):
    cap = write_capture(str(tmp_path), version=999)
    with pytest.raises(capture.CaptureError, match="newer kerncap"):
        capture.load(cap)


def test_missing_manifest_and_damaged_blobs(tmp_path):
    with pytest.raises(capture.CaptureError, match="no capture"):
        capture.load(str(tmp_path))
    write_capture(str(tmp_path), regions=[(0, 0x1000, b"\0" * 64)])
    os.truncate(tmp_path / "capture" / "mem" / "0.bin", 10)
    m = capture.load(str(tmp_path))
    with pytest.raises(capture.CaptureError, match="truncated"):
        m.before(m.regions[0])


def test_missing_field_is_reported(tmp_path):
    cap = write_capture(str(tmp_path))
    j = json.load(open(os.path.join(cap, "manifest.json")))
    del j["launch"]["grid"]
    with pytest.raises(capture.CaptureError, match="grid"):
        capture.parse_manifest(j)

"""The Python API over the CLI, with a stand-in `kerncap` executable that prints what the real
one prints with --json and exits with its codes."""
import json
import os
import stat
import sys

import pytest

from kerncap import Kerncap, KerncapError, triton_env

FAKE = r'''#!@PY@
import json, os, sys
a = sys.argv[1:]
open(os.environ["FAKE_LOG"], "a").write(json.dumps({"argv": a, "out": os.environ.get("KERNCAP_TRITON_OUT"),
                                                     "pp": os.environ.get("PYTHONPATH", "")}) + "\n")
cmd = a[0]
if cmd == "profile":
    print("kerncap: profiling", file=sys.stderr)
    print(json.dumps({"format": "kerncap-profile", "totals": {"launches": 3},
                      "kernels": [{"rank": 1, "name": "add_kernel", "demangled": "add_kernel", "kind": "triton",
                                   "category": "elementwise", "calls": 3, "total_ns": 3000, "avg_ns": 1000.0,
                                   "median_ns": 1000.0, "percent": 100.0, "grid": [96, 1, 1], "block": [128, 1, 1]}]}))
elif cmd == "extract":
    if a[1] == "missing":
        print("kerncap: error: no launched kernel matches 'missing'", file=sys.stderr); sys.exit(2)
    print(json.dumps({"output": a[3], "capture": a[3] + "/capture", "kernel": a[1], "mangled": a[1], "dispatch": 0,
                      "regions": 3, "before_bytes": 100, "after_bytes": 10, "capture_seconds": 0.5,
                      "application": "stopped after capture"}, indent=2))
elif cmd == "replay":
    print(json.dumps({"kernel": "k", "median_ms": 0.5, "min_ms": 0.4, "max_ms": 0.9, "times_ms": [0.5, 0.4, 0.9],
                      "relocated_regions": 0, "rewritten_words": 0}, indent=2))
elif cmd == "validate":
    if "--cubin" in a:
        print(json.dumps({"result": "FAIL", "line": "Result: FAIL (1 of 2 regions differ)", "relocated_regions": 1,
                          "rewritten_words": 4, "regions": [
                              {"id": 0, "kind": "device", "base": "0x7f00", "size": 16, "written": 16, "pass": False,
                               "exact": False, "max_abs_error": 2.0, "max_rel_error": 1.0, "summary": "4 differ"}]},
                         indent=2))
        sys.exit(1)
    print(json.dumps({"result": "PASS", "line": "Result: PASS (byte-exact)", "regions": []}, indent=2))
elif cmd == "info":
    if not os.path.isdir(a[1]):
        print("kerncap: device error: no CUDA device", file=sys.stderr); sys.exit(3)
    print(json.dumps({"format": "kerncap-capture", "kernel": {"mangled": "k"}}, indent=2))
'''


@pytest.fixture
def kc(tmp_path, monkeypatch):
    exe = tmp_path / "kerncap"
    exe.write_text(FAKE.replace("@PY@", sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "log.jsonl"))
    return Kerncap(binary=str(exe))


def calls(tmp_path):
    return [json.loads(l) for l in open(tmp_path / "log.jsonl")]


def test_profile_replay_validate_info(kc, tmp_path):
    p = kc.profile("python3 app.py --n 3", top=5)
    assert calls(tmp_path)[-1]["argv"] == ["profile", "--json", "--top", "5", "--", "python3", "app.py", "--n", "3"]
    assert p.kernels[0].name == "add_kernel" and p.kernels[0].calls == 3 and p.totals["launches"] == 3
    r = kc.replay("iso/k", iterations=3)
    assert r.median_ms == 0.5 and r.times_ms == [0.5, 0.4, 0.9]
    kc.replay("iso/k", no_restore=True, cache="cold", timer="spin-events")
    assert calls(tmp_path)[-1]["argv"][-5:] == ["--no-restore", "--cache", "cold", "--timer", "spin-events"]
    v = kc.validate("iso/k")
    assert v.passed and v.result == "PASS" and v.line.startswith("Result: PASS")
    v = kc.validate("iso/k", cubin="cand.cubin", dtype="fp16", atol=1e-3)
    assert not v.passed and v.regions[0].max_abs_error == 2.0 and v.relocated_regions == 1
    assert calls(tmp_path)[-1]["argv"][-6:] == ["--cubin", "cand.cubin", "--dtype", "fp16", "--atol", "0.001"]
    assert kc.info(str(tmp_path))["kernel"]["mangled"] == "k"


def test_errors_carry_the_cli_message_and_kind(kc, tmp_path):
    with pytest.raises(KerncapError) as e:
        kc.extract("missing", ["python3", "app.py"], str(tmp_path / "o"))
    assert e.value.kind == "input" and "no launched kernel" in str(e.value)
    with pytest.raises(KerncapError) as e:
        kc.info(str(tmp_path / "nope"))
    assert e.value.kind == "device" and e.value.exit_code == 3


def test_extract_turns_the_triton_shim_on(kc, tmp_path):
    out = str(tmp_path / "o")
    r = kc.extract("add_kernel", ["python3", "app.py"], out, dispatch=2, keep_running=True)
    c = calls(tmp_path)[-1]
    assert c["argv"][:6] == ["extract", "add_kernel", "-o", out, "--dispatch", "2"] and "--continue" in c["argv"]
    assert c["out"] == os.path.join(out, "triton") and c["pp"].split(os.pathsep)[0].endswith("triton_shim")
    assert r.regions == 3 and r.triton is None  # no Triton compile recorded: no reproducer
    assert os.path.isdir(os.path.join(out, "triton", "records"))  # the shim ran (in the fake, a Python script)
    kc.extract("add_kernel", "python3 app.py", out, triton=False)
    assert calls(tmp_path)[-1]["out"] is None


def test_triton_env_prepends_the_shim_once():
    env = triton_env("/x/out", {"PYTHONPATH": "/a:/b"})
    parts = env["PYTHONPATH"].split(os.pathsep)
    assert parts[0].endswith(os.path.join("kerncap", "triton_shim")) and parts[1:] == ["/a", "/b"]
    assert env["KERNCAP_TRITON_OUT"] == "/x/out/triton"
    assert triton_env("/x/out", env)["PYTHONPATH"] == env["PYTHONPATH"]

"""The Python API over the CLI, with a stand-in `kerncap` executable that prints what the real
one prints with --json and exits with its codes."""
import json
import os
import stat
import sys

import pytest

import kerncap
from kerncap import (Kerncap, KerncapDeviceError, KerncapError, KerncapInputError, KerncapNotFoundError,
                     KerncapVersionError, find_kerncap, triton_env)
from kerncap.api import last_json
from kerncap.errors import cli_message, error_for

FAKE = r'''#!@PY@
import json, os, sys
a = sys.argv[1:]
open(os.environ["FAKE_LOG"], "a").write(json.dumps({"argv": a, "out": os.environ.get("KERNCAP_TRITON_OUT"),
                                                     "pp": os.environ.get("PYTHONPATH", "")}) + "\n")
cmd = a[0]
if cmd == "profile" and "bad(" in a:
    print("kerncap: error: --filter 'bad(' is not a valid regular expression: mismatched", file=sys.stderr)
    sys.exit(2)
if cmd == "profile":
    print("kerncap: profiling", file=sys.stderr)
    print(json.dumps({"format": "kerncap-profile", "totals": {"launches": 3},
                      "kernels": [{"rank": 1, "name": "add_kernel", "demangled": "add_kernel", "kind": "triton",
                                   "category": "elementwise", "calls": 3, "total_ns": 3000, "avg_ns": 1000.0,
                                   "median_ns": 1000.0, "percent": 100.0, "grid": [96, 1, 1], "block": [128, 1, 1]}],
                      "application": {"code": 3 if "fails" in a else 0}}))
    sys.exit(3 if "fails" in a else 0)
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
elif cmd == "lint":
    print(json.dumps({"kernel": "k", "image": "i", "image_kind": "cubin", "sm": 90, "code_sm": 90,
                      "resources": {"registers": 40, "local_bytes": 0, "shared_static_bytes": 0,
                                    "shared_dynamic_bytes": 0, "max_threads": 1024, "code_bytes": 900},
                      "launch": {"threads_per_block": 128, "dynamic_shared": 0},
                      "checks": [{"name": "registers", "status": "fail", "detail": "40 > 32"}],
                      "result": "FAIL", "line": "Result: FAIL"}, indent=2))
    sys.exit(1)
elif cmd == "footprint":
    print("kerncap: measuring the footprint", file=sys.stderr, flush=True)
    print("kerncap: replaying with the Compute Sanitizer", file=sys.stderr, flush=True)
    print(json.dumps({"format": "kerncap-footprint", "format_version": int(os.environ.get("FAKE_FP_VERSION", "1")),
                      "kernel": "k", "regions": [{"id": 0}], "accesses": 7, "escape_count": 0, "cached": False},
                     indent=2))
elif cmd == "baseline":
    b = {"format": "kerncap-baseline", "version": 1, "name": a[2], "gpu": "H100", "time_ms": {"median": 0.5},
         "resources": {"registers": 40, "occupancy": None}, "validation": {"pass": True}, "fuzz": None}
    print(json.dumps(b, indent=2))
elif cmd == "diff":
    print(json.dumps({"rows": [{"metric": "time", "baseline": "0.5 ms", "current": "0.7 ms", "delta": "+40%",
                                "change": "worse"}], "speedup": 0.71, "regression": True,
                      "line": "Result: REGRESSION", "baseline": {"name": "b0"}, "current": {"name": "current"}},
                     indent=2))
    sys.exit(1 if "--fail-on-regression" in a else 0)
elif cmd == "locate":
    print(json.dumps({"format": "kerncap-locate", "version": 1, "repos": [],
                      "results": [{"name": a[1], "status": "not-found", "sources": [], "tests": [], "notes": [],
                                   "source": None, "test": None}]}))
    sys.exit(1)
elif cmd == "serve":
    # A server's state lives in files beside the capture dir (the real one: an abstract socket).
    d = a[1].rstrip("/")
    up, stop = d + ".fake-serving", d + ".fake-stop"
    if "--status" in a:
        doc = {"format": "kerncap-serve-status", "version": 1, "dir": d, "serving": os.path.exists(up)}
        if doc["serving"]:
            doc["pid"] = int(open(up).read())
            doc["server"] = {"served": 0, "strong": True}
        print(json.dumps(doc))
        sys.exit(0 if doc["serving"] else 1)
    if "--stop" in a:
        open(stop, "w").close()
        print("kerncap serve: stopped")
        sys.exit(0)
    if "bad" in d:
        print("kerncap serve: the captured image: Result: FAIL")
        print("kerncap: error: the captured image does not reproduce the application's result in " + d,
              file=sys.stderr)
        sys.exit(1)
    import time
    time.sleep(0.3)  # opening the capture
    open(up, "w").write(str(os.getpid()))
    print("kerncap serve: " + d + " ready", flush=True)
    while not os.path.exists(stop):
        time.sleep(0.05)
    os.remove(up)
    os.remove(stop)
    print("kerncap serve: stopped (stop requested)")
elif cmd == "run":
    shadow = "--shadow" in a
    print(json.dumps({"format": "kerncap-run-report", "version": 1, "mode": "shadow" if shadow else "swap",
                      "verdict": "shadow_failed" if shadow else "ok", "why": "launch 4 differs" if shadow else "same",
                      "pairs": int(a[a.index("--repeat") + 1]), "dir": "/tmp/r", "swaps": [], "runs": [],
                      "summary": {"kernel_ns": {"ratio": {"n": 3, "median": 1.5}}}}))
    sys.exit(1 if shadow else 0)
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
    kc.profile(["./app"], sample=10)
    assert calls(tmp_path)[-1]["argv"] == ["profile", "--json", "--sample", "10", "--", "./app"]
    r = kc.replay("iso/k", iterations=3)
    assert r.median_ms == 0.5 and r.times_ms == [0.5, 0.4, 0.9]
    kc.replay("iso/k", no_restore=True, cache="cold", timer="spin-events")
    assert calls(tmp_path)[-1]["argv"][-5:] == ["--no-restore", "--cache", "cold", "--timer", "spin-events"]
    v = kc.validate("iso/k")
    assert v.passed and v.result == "PASS" and v.line.startswith("Result: PASS")
    v = kc.validate("iso/k", cubin="cand.cubin", dtype="fp16", atol=1e-3)
    assert not v.passed and v.regions[0].max_abs_error == 2.0 and v.relocated_regions == 1
    assert calls(tmp_path)[-1]["argv"][-6:] == ["--cubin", "cand.cubin", "--dtype", "fp16", "--atol", "0.001"]
    assert kc.info(str(tmp_path)).kernel.mangled == "k"


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


def test_lint_footprint_baseline_diff_locate(kc, tmp_path):
    li = kc.lint("iso/k", max_registers=32, require=["HMMA"], no_sass=True)
    assert calls(tmp_path)[-1]["argv"] == ["lint", "iso/k", "--json", "--no-sass", "--max-registers", "32",
                                           "--require", "HMMA"]
    assert not li.passed and li.line == "Result: FAIL" and li.checks[0].status == "fail"
    assert li.resources is not None and li.resources.registers == 40
    steps = []
    fp = kc.footprint("iso/k", progress=steps.append)
    assert fp.accesses == 7 and fp.regions == [{"id": 0}] and "7 accesses" in fp.line
    assert [p.message for p in steps][:2] == ["kerncap: measuring the footprint",
                                              "kerncap: replaying with the Compute Sanitizer"]
    assert steps[1].step > steps[0].step
    b = kc.baseline_save("b0", "iso/k", iterations=10, fuzz=5)
    assert calls(tmp_path)[-1]["argv"] == ["baseline", "save", "b0", "iso/k", "--json", "--iterations", "10",
                                           "--fuzz", "5"]
    assert b.time_ms.median == 0.5 and b.validation.passed and b.resources.occupancy is None and b.fuzz is None
    d = kc.diff("iso/k", "b0", fail_on_regression=True)
    assert d.regression and d.line == "Result: REGRESSION" and d.rows[0].change == "worse"
    assert d.baseline is not None and d.baseline.name == "b0"
    loc = kc.locate("my_kernel", source_repos=["/src/a"])
    assert calls(tmp_path)[-1]["argv"] == ["locate", "my_kernel", "--json", "--quiet", "--source-repo", "/src/a"]
    assert loc.results[0].status == "not-found" and loc.line == "my_kernel: not-found"


def test_validate_strong_and_fuzz_flags(kc, tmp_path):
    kc.validate("iso/k", footprint="require", fuzz=50, seed=7, invariants=["no_nan", "must_write"],
                tolerances=["0:atol=1e-3"], captured=True)
    assert calls(tmp_path)[-1]["argv"] == ["validate", "iso/k", "--json", "--baseline", "--footprint", "require",
                                           "--fuzz", "50", "--seed", "7", "--invariant", "no_nan,must_write",
                                           "--tolerance", "0:atol=1e-3"]


def test_a_newer_document_is_refused(kc, monkeypatch):
    monkeypatch.setenv("FAKE_FP_VERSION", "9")
    with pytest.raises(KerncapVersionError) as e:
        kc.footprint("iso/k")
    assert "version 9" in str(e.value) and e.value.exit_code == 2


def test_error_classes_and_messages(kc, tmp_path):
    with pytest.raises(KerncapInputError) as e:
        kc.extract("missing", ["python3", "app.py"], str(tmp_path / "o"))
    assert e.value.message == "no launched kernel matches 'missing'" and e.value.exit_code == 2
    with pytest.raises(KerncapDeviceError):
        kc.info(str(tmp_path / "nope"))
    assert cli_message("kerncap: internal error: boom\n(please report this with the command line)\n", 70).startswith(
        "boom\n")
    assert cli_message("app noise\nkerncap: error: no launched kernel matches 'k'; closest:\n  k1\n  k2\n", 2) == (
        "no launched kernel matches 'k'; closest:\n  k1\n  k2")
    assert isinstance(error_for(109, "x", [], ""), KerncapInputError)  # the parser's refusals


def test_the_executable_lookup(tmp_path, monkeypatch):
    exe = tmp_path / "kc"
    exe.write_text("#!/bin/sh\necho kerncap 1.2.3\n")
    exe.chmod(0o755)
    monkeypatch.setenv("KERNCAP_BIN", str(exe))
    assert find_kerncap() == str(exe) and Kerncap().version == "1.2.3"
    assert find_kerncap(str(exe)) == str(exe)
    with pytest.raises(KerncapNotFoundError):
        find_kerncap(str(tmp_path / "absent"))
    monkeypatch.setenv("KERNCAP_BIN", str(tmp_path / "absent"))
    with pytest.raises(KerncapNotFoundError) as e:
        Kerncap()
    assert "KERNCAP_BIN" in str(e.value)


def test_module_functions_use_the_default_kerncap(kc, tmp_path, monkeypatch):
    import kerncap.api as api
    monkeypatch.setattr(api, "_default", kc)
    assert kerncap.replay("iso/k", iterations=3).median_ms == 0.5
    assert calls(tmp_path)[-1]["argv"][:2] == ["replay", "iso/k"]


def test_last_json_skips_what_the_application_printed():
    assert last_json('app says {"x": 1}\n{\n  "a": {\n    "b": 2\n  }\n}\n') == {"a": {"b": 2}}
    assert last_json('{"one": 1}\n') == {"one": 1}


def test_runner_ticks_while_quiet_and_kills_at_the_timeout():
    from kerncap import runner
    ticks = []
    p = runner.run([sys.executable, "-c", "import time; time.sleep(0.5); print('{}')"], tick_s=0.1,
                   on_progress=ticks.append)
    assert p.stdout.strip() == "{}" and len(ticks) >= 2 and "running" in ticks[0].message
    with pytest.raises(KerncapError) as e:
        runner.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.3)
    assert e.value.exit_code == 124 and "did not finish within 0.3 s" in str(e.value)


def test_profile_of_a_failing_application_and_a_refused_one(kc):
    p = kc.profile(["./app", "fails"])
    assert p.application == {"code": 3} and p.kernels[0].name == "add_kernel"
    with pytest.raises(KerncapInputError) as e:
        kc.profile(["./app"], filter="bad(")
    assert e.value.message.startswith("--filter 'bad(' is not a valid regular expression")


def test_serve_starts_a_server_waits_until_it_answers_and_stops_it(kc, tmp_path):
    d = str(tmp_path / "cap")
    assert not kc.serve_status(d).serving
    with kc.serve(d, footprint="auto", idle_timeout=60) as s:
        assert s.owned and s.pid == s.proc.pid
        st = s.status()
        assert st.serving and st.pid == s.pid and st.format == "kerncap-serve-status"
        assert "served by pid" in st.line
        # A second serve of the same directory uses the running server and does not own it.
        other = kc.serve(d)
        assert not other.owned and other.pid == s.pid
        other.stop()  # not its own: left running
        assert kc.serve_status(d).serving
        assert "ready" in s.log()
        log = s.log_path
    assert s.proc.returncode == 0
    assert not kc.serve_status(d).serving
    assert not os.path.exists(log) and s.log() == ""  # the log goes with the server
    argv = [c["argv"] for c in calls(tmp_path) if c["argv"][:2] == ["serve", d] and len(c["argv"]) > 2]
    assert ["serve", d, "--footprint", "auto", "--idle-timeout", "60"] in argv


def test_a_server_that_cannot_start_raises_its_error(kc, tmp_path):
    with pytest.raises(KerncapError) as e:
        kc.serve(str(tmp_path / "bad"))
    assert "does not reproduce the application's result" in e.value.message
    assert e.value.exit_code == 1


def test_a_server_that_never_answers_is_stopped(tmp_path, monkeypatch):
    exe = tmp_path / "kerncap"
    exe.write_text("#!/bin/sh\nif [ \"$3\" = --status ]; then echo '{\"format\": \"kerncap-serve-status\", "
                   "\"version\": 1, \"serving\": false}'; exit 1; fi\nexec sleep 30\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(KerncapError) as e:
        Kerncap(binary=str(exe)).serve(str(tmp_path / "cap"), ready_timeout=0.5)
    assert "did not answer within 0.5 s" in e.value.message


def test_run_swapped(kc, tmp_path):
    r = kc.run_swapped("iso/k=v.cubin", ["./app", "7"], repeat=3, check="cmp a b")
    assert r.passed and r.ratio("kernel_ns") == 1.5 and r.line == "Run: ok (same)"
    s = kc.run_swapped(["iso/k=v.cubin", "b=w.cubin"], "./app", shadow=True, every=4)
    assert not s.passed and s.verdict == "shadow_failed" and s.mode == "shadow"
    argv = [c["argv"] for c in calls(tmp_path)]
    assert argv[0] == ["run", "--json", "--repeat", "3", "--swap", "iso/k=v.cubin", "--check", "cmp a b", "--",
                       "./app", "7"]
    assert argv[1][:11] == ["run", "--json", "--repeat", "1", "--swap", "iso/k=v.cubin", "--swap", "b=w.cubin",
                            "--shadow", "--every", "4"]

"""`kerncap evaluate` (src/cli/cmd_evaluate.cpp execs python -m kerncap.evaluate_cli) with the
judge faked: JSON lines on stdout, one per candidate, the summary on stderr, exit codes."""
import json
import os
import subprocess

from test_evaluate_pool import fake_capture

TESTS = os.path.dirname(os.path.abspath(__file__))


def run(kerncap_bin, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = TESTS + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run([kerncap_bin, "evaluate", *args], capture_output=True, text=True, env=env, timeout=120)


def candidate_dir(tmp_path, kinds):
    """A directory of fake candidates v0.cubin, v1.cubin, ... (fake_judge.py's words)."""
    d = tmp_path / "cands"
    d.mkdir()
    for i, k in enumerate(kinds):
        (d / f"v{i}.cubin").write_bytes(k.encode())
    return d


def test_json_lines_per_candidate(kerncap_bin, tmp_path):
    cap = fake_capture(str(tmp_path / "cap"))
    d = candidate_dir(tmp_path, ["pass", "fail", "fault", "hang", "pass"])
    p = run(kerncap_bin, cap, "--images", str(d), "--gpus", "0,1", "--time-limit", "1", "--time",
            "--judge", "fake_judge:open_fake", "--atol", "1e-3", "--exact")
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    assert sorted((r["index"], r["result"]) for r in lines) == [
        (0, "PASS"), (1, "FAIL"), (2, "ERROR"), (3, "FAIL"), (4, "PASS")]
    by = {r["index"]: r for r in lines}
    assert by[3]["error"] == "timed out after 1 s"
    assert by[0]["verdict"]["options"] == ["atol", "exact", "time"]
    assert "5 candidates on 2 GPU(s)" in p.stderr and "2 worker restart(s)" in p.stderr


def test_stats_file_and_no_spares(kerncap_bin, tmp_path):
    cap = fake_capture(str(tmp_path / "cap"))
    d = candidate_dir(tmp_path, ["pass", "fault", "pass"])
    stats = tmp_path / "stats.json"
    for spares in ("0", "1"):
        p = run(kerncap_bin, cap, "--images", str(d), "--gpus", "0", "--spares", spares, "--stats", str(stats),
                "--judge", "fake_judge:open_fake", "--quiet")
        assert p.returncode == 0, p.stderr
        s = json.loads(stats.read_text())
        assert s["candidates"] == 3 and s["gpus"] == 1 and s["restarts"] == 1
        assert s["profile"]["spare_takeovers"] == int(spares)
        assert all(json.loads(x)["judge_seconds"] is not None or json.loads(x)["verdict"] is None
                   for x in p.stdout.splitlines())


def test_help_and_bad_input(kerncap_bin, tmp_path):
    h = run(kerncap_bin, "--help")
    assert h.returncode == 0 and "--time-limit" in h.stdout and "--gpus" in h.stdout
    missing = run(kerncap_bin, str(tmp_path), "--images", str(tmp_path / "nothing.cubin"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_a_regime_set_gives_one_line_per_candidate(kerncap_bin, tmp_path):
    from test_evaluate_regimes import regime_set
    rset = regime_set(str(tmp_path / "set"))
    d = candidate_dir(tmp_path, ["pass x2.0", "pass fail@01-b", "pass x1.1"])
    p = run(kerncap_bin, rset, "--images", str(d), "--gpus", "0,1", "--time", "--min-speedup", "1.5",
            "--judge", "fake_judge:open_fake")
    assert p.returncode == 0, p.stderr
    lines = {r["index"]: r for r in map(json.loads, p.stdout.splitlines())}
    assert sorted(lines) == [0, 1, 2]
    assert lines[0]["result"] == "PASS" and lines[0]["verdict"]["weighted_speedup"] == 2.0
    assert lines[1]["verdict"]["failed"] == ["01-b"]
    assert lines[2]["result"] == "FAIL" and "below the x1.500 required" in lines[2]["line"]
    assert "regime 1 of 2: 00-a" in p.stderr and "regime 2 of 2: 01-b" in p.stderr
    assert "3 candidates x 2 regimes (6 evaluations" in p.stderr
    assert lines[0]["verdict"]["regimes"][0]["verdict"]["cache"] == "blend"  # validate's default for a set
    warm = run(kerncap_bin, rset, "--images", str(d / "v0.cubin"), "--gpus", "0", "--time", "--speedup-cache", "warm",
               "--judge", "fake_judge:open_fake")
    assert json.loads(warm.stdout)["verdict"]["regimes"][0]["verdict"]["cache"] == "warm", warm.stderr


def test_the_workers_load_this_kerncaps_engine(kerncap_bin, tmp_path):
    """`kerncap evaluate` tells its workers to load the engine beside this binary (bin/../lib),
    not whatever the package's search finds (a staged copy's package has none beside it)."""
    cap = fake_capture(str(tmp_path / "cap"))
    (tmp_path / "v.cubin").write_bytes(b"pass")
    env = dict(os.environ)
    env.pop("KERNCAP_REPLAY_LIB", None)
    env["PYTHONPATH"] = TESTS + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run([kerncap_bin, "evaluate", cap, "--images", str(tmp_path / "v.cubin"), "--gpus", "0",
                        "--judge", "fake_judge:open_fake"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    want = os.path.realpath(os.path.join(os.path.dirname(kerncap_bin), "..", "lib", "libkerncap_replay.so"))
    assert json.loads(p.stdout.splitlines()[0])["verdict"]["replay_lib"] == want


def test_the_python_api_returns_the_records_in_input_order(kerncap_bin, tmp_path, monkeypatch):
    from kerncap import Kerncap
    from test_evaluate_regimes import regime_set
    cap = fake_capture(str(tmp_path / "cap"))
    d = candidate_dir(tmp_path, ["pass", "fail", "hang", "pass"])
    monkeypatch.setenv("PYTHONPATH", TESTS + (":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""))
    kc = Kerncap(binary=kerncap_bin)
    res = kc.evaluate(cap, [str(d)], gpus=[0, 1], time_limit=1, judge="fake_judge:open_fake")
    assert [r["index"] for r in res.records] == [0, 1, 2, 3]
    assert res.counts() == {"PASS": 2, "FAIL": 2} and res.passed == [0, 3]
    assert res.stats["candidates"] == 4 and "4 candidates on 2 GPU(s)" in res.line
    rset = regime_set(str(tmp_path / "set"))
    sres = kc.evaluate(rset, [str(d / "v0.cubin"), str(d / "v1.cubin")], gpus="0", judge="fake_judge:open_fake")
    assert [r["verdict"]["format"] for r in sres.records] == ["kerncap-regime-verdict"] * 2
    assert "2 candidates x 2 regimes" in sres.line

"""A regime set spread over the evaluation pool (kerncap.evaluate_regimes) with the judge faked
(fake_judge.py): every candidate judged on every captured regime, exactly once, one record per
candidate whose verdict is the engine's set document (kc_regime_verdict, the one `kerncap
validate OUT` prints), the same on one worker and two; faults and hangs on one regime fail the
set naming it; a regime no worker can open fails that regime, not the run."""
import json
import os
import shutil

import pytest

from kerncap import engine
from kerncap.evaluate_pool import evaluate_many
from test_evaluate_pool import FAKE, fake_capture

LIMIT = 1.0

# Two captured regimes (00-a: 60 % of the kernel's time in 10 launches, 01-b: 30 % in 5) and one
# the run did not capture; the application's GPU time is twice the kernel's.
REGIMES = [("00-a", 10, 600, 0.6, True), ("01-b", 5, 300, 0.3, True), ("02-c", 40, 100, 0.1, False)]


def regime_set(root):
    os.makedirs(root)
    entries = []
    for i, (d, launches, ns, share, captured) in enumerate(REGIMES):
        e = {"dir": d, "grid": [64 >> i, 1, 1], "block": [256, 1, 1], "cluster": [0, 0, 0], "dynamic_shared": 0,
             "launches": launches, "time_ns": ns, "share": share, "dispatch": i, "captured": captured}
        if captured:
            fake_capture(os.path.join(root, d))
            with open(os.path.join(root, d, "fake-regime"), "w") as f:  # travels with the capture (Dask)
                f.write(d)
        else:
            e["why"] = "the application never reached it"
        entries.append(e)
    index = {"format": "kerncap-regimes", "version": 1, "kernel": {"mangled": "_Z1kPf", "demangled": "k(float*)"},
             "application": "app", "pid": 1, "launches": 55, "time_ns": 1000, "app_time_ns": 2000, "uncounted": 0,
             "dropped": {"regimes": 0, "launches": 0, "time_ns": 0}, "regimes": entries}
    with open(os.path.join(root, "regimes.json"), "w") as f:
        json.dump(index, f)
    return root


@pytest.fixture
def rset(tmp_path):
    return regime_set(str(tmp_path / "set"))


CANDS = [b"pass x2.0", b"pass x0.5", b"pass fail@01-b", b"pass fault@00-a", b"pass hang@01-b", b"fail",
         b"pass x1.25", None]


def judge(rset, devices, cands=CANDS, **kw):
    events = []
    run = evaluate_many(rset, cands, devices=devices, time_limit=LIMIT, judge=FAKE, progress=events.append,
                        time=True, **kw)
    return list(run), run.stats, events


def test_every_candidate_once_with_the_engines_set_verdict(rset):
    records, stats, events = judge(rset, [0, 1])
    assert sorted(r["index"] for r in records) == list(range(len(CANDS)))
    by = {r["index"]: r for r in records}
    for r in records:
        doc = r["verdict"]
        assert doc["format"] == "kerncap-regime-verdict" and r["result"] == doc["result"] and r["line"] == doc["line"]
        assert [x["dir"] for x in doc["regimes"]] == ["00-a", "01-b"]  # the captured ones, in the set's order
        assert [x["dir"] for x in r["regimes"]] == ["00-a", "01-b"]
        assert set(r["timed_on"]) == {"00-a", "01-b"}
    # 2x on both regimes: the weighted speed-up is 2, the application's time 1/(1 - 0.9/2 ...)
    assert by[0]["result"] == "PASS" and by[0]["verdict"]["weighted_speedup"] == pytest.approx(2.0)
    assert by[0]["verdict"]["app_projection"] == pytest.approx(2000 / (2000 - 900 + 450))
    assert by[1]["result"] == "PASS" and by[1]["verdict"]["regressed"] == ["00-a", "01-b"]
    assert by[2]["result"] == "FAIL" and by[2]["verdict"]["failed"] == ["01-b"]
    assert by[3]["result"] == "FAIL" and by[3]["verdict"]["failed"] == ["00-a"]
    assert "worker process died" in by[3]["verdict"]["regimes"][0]["line"]
    assert by[4]["verdict"]["failed"] == ["01-b"] and f"timed out after {LIMIT:g} s" in by[4]["line"] + \
        by[4]["verdict"]["regimes"][1]["line"]
    assert by[5]["verdict"]["failed"] == ["00-a", "01-b"]
    assert by[7]["image"] == "captured" and by[7]["result"] == "PASS"
    assert by[7]["verdict"]["weighted_speedup"] is None  # the captured image: no variant to weigh
    # each regime judged as `kerncap validate OUT` judges it: speed-up at the application's L2 state
    opts = by[0]["verdict"]["regimes"][0]["verdict"]["options"]
    assert "speedup" in opts and "min_speedup" not in opts
    assert by[0]["verdict"]["regimes"][0]["verdict"]["cache"] == "blend"
    assert stats["candidates"] == len(CANDS) and stats["evaluations"] == 2 * len(CANDS) and stats["regimes"] == 2
    assert stats["restarts"] >= 2  # the fault and the hang
    assert [e["regime"] for e in events if e["event"] == "regime"] == ["00-a", "01-b"]
    done = [e["done"] for e in events if e["event"] == "result"]
    assert done == list(range(1, 2 * len(CANDS) + 1)) and all(e["total"] == 2 * len(CANDS)
                                                             for e in events if e["event"] == "result")


def test_one_worker_and_two_give_the_same_set_verdicts(rset):
    one, _, _ = judge(rset, [0])
    two, _, _ = judge(rset, [0, 1])

    def key(rs):
        return {r["index"]: (r["result"], r["line"], json.dumps(r["verdict"]["failed"])) for r in rs}
    assert key(one) == key(two)


def test_min_speedup_weighs_the_set_not_each_regime(rset):
    # the same speed-up on both regimes: weighted 1.25 and 1.1, each regime judged without the bar
    records, _, _ = judge(rset, [0], cands=[b"pass x1.25", b"pass x1.1"], min_speedup=1.2)
    by = {r["index"]: r for r in records}
    assert by[0]["result"] == "PASS" and by[0]["verdict"]["min_speedup"] == 1.2
    assert by[1]["result"] == "FAIL" and "below the x1.200 required" in by[1]["line"]
    assert by[1]["verdict"]["failed"] == []  # every regime passed: the weighted figure failed it


def test_a_regime_no_worker_can_open_fails_that_regime_only(rset):
    os.remove(os.path.join(rset, "01-b", "capture", "manifest.json"))
    records, _, _ = judge(rset, [0], cands=[b"pass x2.0", b"pass"], spares=0)
    assert sorted(r["index"] for r in records) == [0, 1]
    for r in records:
        assert r["result"] == "FAIL" and r["verdict"]["failed"] == ["01-b"]
        assert "regime 01-b could not be judged" in r["verdict"]["regimes"][1]["line"]
    os.remove(os.path.join(rset, "00-a", "capture", "manifest.json"))
    with pytest.raises(engine.EngineError) as e:
        judge(rset, [0], cands=[b"pass"], spares=0)
    assert "regime 00-a" in str(e.value) and "regime 01-b" in str(e.value)


def test_a_damaged_or_linked_set_is_refused_before_anything_runs(rset, tmp_path):
    shutil.rmtree(os.path.join(rset, "01-b"))
    os.symlink(os.path.join(rset, "00-a"), os.path.join(rset, "01-b"))
    with pytest.raises(engine.EngineError) as e:
        evaluate_many(rset, [b"pass"], devices=[0], judge=FAKE)
    assert e.value.exit_code == engine.E_INPUT and "01-b" in str(e.value)
    with open(os.path.join(rset, "regimes.json"), "w") as f:
        f.write("{")
    with pytest.raises(engine.EngineError) as e:
        evaluate_many(rset, [b"pass"], devices=[0], judge=FAKE)
    assert e.value.exit_code == engine.E_INPUT and "regimes.json" in str(e.value)


def test_evaluate_all_takes_a_regime_set_the_pools_way(rset):
    records = list(engine.evaluate_all(rset, [b"pass x2.0", b"pass fail@01-b"], judge=FAKE, time=True))
    by = {r["index"]: r for r in records}
    assert by[0]["result"] == "PASS" and by[0]["verdict"]["weighted_speedup"] == pytest.approx(2.0)
    assert by[1]["verdict"]["failed"] == ["01-b"]


def test_an_image_refused_on_every_regime_is_an_error_as_for_one_capture(rset):
    records, _, _ = judge(rset, [0], cands=[b"refuse", b"pass refuse@01-b"])
    by = {r["index"]: r for r in records}
    assert by[0]["result"] == "ERROR" and by[0]["exit_code"] == 2 and "not in this image" in by[0]["error"]
    assert by[0]["line"].startswith("Result: ERROR (no regime gave a verdict: ")
    assert by[0]["verdict"]["failed"] == ["00-a", "01-b"]  # the set's document stays
    # refused on one regime only: the set FAILs naming it (a verdict came from the other)
    assert by[1]["result"] == "FAIL" and by[1]["verdict"]["failed"] == ["01-b"] and by[1]["error"] is None

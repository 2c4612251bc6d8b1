"""The evaluation pool (kerncap.evaluate_pool) with the judge faked (fake_judge.py): candidates
that pass, fail, kill their worker, hang past the time limit, are refused or cost the worker
its context. Every candidate is reported exactly once, whatever happened to its worker;
workers are restarted and counted; one worker and several give the same verdicts."""
import json
import os

import pytest

from kerncap import engine
from kerncap.evaluate_pool import evaluate_many, expand_images, resolve_devices

FAKE = "fake_judge:open_fake"
LIMIT = 1.0


def fake_capture(root):
    cap = os.path.join(root, "capture")
    os.makedirs(os.path.join(cap, "chunks"), exist_ok=True)
    with open(os.path.join(cap, "manifest.json"), "w") as f:
        json.dump({"format": "kerncap-capture", "version": 3}, f)
    for name, data in (("0123456789abcdef0123456789abcdef.zst", b"chunk one"),
                       ("fedcba9876543210fedcba9876543210.raw", b"chunk two" * 100)):
        with open(os.path.join(cap, "chunks", name), "wb") as f:
            f.write(data)
    with open(os.path.join(root, "kerncap.toml"), "w") as f:
        f.write("[tolerances]\n")
    return root


MIX = (["pass"] * 6 + ["fail", "fault", "pass", "hang", "refuse", "pass", "lost", "pass", "fail", "fault"]
       + ["pass"] * 4 + ["hang"])
EXPECTED = {"pass": "PASS", "fail": "FAIL", "fault": "ERROR", "hang": "FAIL", "refuse": "ERROR", "lost": "FAIL"}


def candidates(mix=MIX):
    return [f"{k} {i}".encode() for i, k in enumerate(mix)]


def verdicts(records):
    """What must not depend on how many workers ran: index -> (result, line, error)."""
    return {r["index"]: (r["result"], r["line"], r["error"]) for r in records}


@pytest.fixture
def capture(tmp_path):
    return fake_capture(str(tmp_path / "cap"))


def run(capture, devices, mix=MIX, **kw):
    events = []
    pool = evaluate_many(capture, candidates(mix), devices=devices, time_limit=LIMIT, judge=FAKE,
                         progress=events.append, time=True, **kw)
    records = list(pool)
    return records, pool.stats, events


def check_exactly_once(records, mix=MIX):
    assert sorted(r["index"] for r in records) == list(range(len(mix)))
    for r in records:
        kind = mix[r["index"]]
        assert r["result"] == EXPECTED[kind], r
        assert r["image"] == f"image bytes #{r['index']}"
        assert isinstance(r["worker_pid"], int) and r["seconds"] >= 0
        if kind == "hang":
            assert r["error"] == f"timed out after {LIMIT:g} s" and r["verdict"] is None
        elif kind == "fault":
            assert "worker process died (exit 139)" in r["error"] and r["verdict"] is None
        elif kind == "refuse":
            assert r["exit_code"] == 2 and "not in this image" in r["error"]
        else:
            assert r["error"] is None and r["verdict"]["result"] == r["result"]
            assert r["timed_on"] == r["device"]
            assert r["device_name"] == f"Fake GPU {r['device']}"


def test_one_worker_and_two_give_the_same_verdicts_exactly_once(capture):
    one, stats1, events1 = run(capture, [0])
    two, stats2, _ = run(capture, [0, 1])
    check_exactly_once(one)
    check_exactly_once(two)
    assert verdicts(one) == verdicts(two)
    # faults, hangs and the lost context each replaced their worker
    replaced = sum(1 for k in MIX if k in ("fault", "hang", "lost"))
    assert stats1["restarts"] == replaced == stats2["restarts"]
    assert stats1["candidates"] == stats2["candidates"] == len(MIX)
    assert {r["device"] for r in two} == {0, 1}
    assert sum(d["evaluated"] for d in stats2["devices"].values()) == len(MIX)
    assert sum(1 for e in events1 if e["event"] == "restart") == replaced
    assert [e["done"] for e in events1 if e["event"] == "result"] == list(range(1, len(MIX) + 1))
    # one worker judges in order: the stream is already sorted
    assert [r["index"] for r in one] == list(range(len(MIX)))


def test_worker_pids_change_only_on_restarts(capture):
    records, stats, _ = run(capture, [0], mix=["pass", "pass", "fault", "pass", "pass"])
    pids = [r["worker_pid"] for r in sorted(records, key=lambda r: r["index"])]
    assert pids[0] == pids[1] == pids[2] != pids[3] == pids[4]
    assert stats["restarts"] == 1


def test_paths_and_the_captured_image(capture, tmp_path):
    d = tmp_path / "cands"
    d.mkdir()
    for i, k in enumerate(["pass", "fail", "pass"]):
        (d / f"v{i}.cubin").write_bytes(k.encode())
    (d / "notes.txt").write_text("not an image")
    paths = expand_images([str(d)])
    assert [os.path.basename(p) for p in paths] == ["v0.cubin", "v1.cubin", "v2.cubin"]
    records = sorted(evaluate_many(capture, paths + [None], devices=[0], judge=FAKE), key=lambda r: r["index"])
    assert [r["result"] for r in records] == ["PASS", "FAIL", "PASS", "PASS"]
    assert [r["image"] for r in records] == paths + ["captured"]
    assert records[0]["timed_on"] is None  # not timed: time=False by default here


def test_evaluate_all_keeps_its_old_form_and_spreads_with_devices(capture):
    records = list(engine.evaluate_all(capture, candidates(["pass", "fail"]), devices=[0, 1], judge=FAKE))
    assert sorted((r["index"], r["result"]) for r in records) == [(0, "PASS"), (1, "FAIL")]


def test_a_capture_no_worker_can_open_raises(tmp_path):
    with pytest.raises(engine.EngineError, match="not a capture") as e:
        list(evaluate_many(str(tmp_path / "missing"), candidates(["pass"]), devices=[0, 1], judge=FAKE))
    assert e.value.exit_code == engine.E_DEVICE


def test_leaving_early_stops_the_workers(capture):
    pool = evaluate_many(capture, candidates(["pass"] * 50), devices=[0, 1], judge=FAKE)
    first = next(pool)
    procs = [s.proc for s in pool.slots]
    pool.close()
    assert first["result"] == "PASS"
    assert all(p is None for p in (s.proc for s in pool.slots)) and all(p.exitcode is not None for p in procs)


def test_devices_are_checked(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert resolve_devices("all") == [0, 1]
    assert resolve_devices("1") == [1]
    for bad in ("x", [0, 0], [2], []):
        with pytest.raises(engine.EngineError):
            resolve_devices(bad)
    from kerncap.evaluate_pool import device_environment
    assert device_environment(1) == {"CUDA_VISIBLE_DEVICES": "5"}


# ---------------------------------------------------------------- spares (a second worker per GPU, opened ahead)

def test_the_spare_takes_over_with_the_same_verdicts_exactly_once(capture):
    with_spare, stats1, events1 = run(capture, [0], spares=1)
    without, stats0, events0 = run(capture, [0], spares=0)
    check_exactly_once(with_spare)
    check_exactly_once(without)
    assert verdicts(with_spare) == verdicts(without)
    replaced = sum(1 for k in MIX if k in ("fault", "hang", "lost"))
    assert stats1["restarts"] == stats0["restarts"] == replaced
    # every replacement was a spare taking over; without spares none was
    assert stats1["profile"]["spare_takeovers"] == replaced and stats1["profile"]["spare_failures"] == 0
    assert stats0["profile"]["spare_takeovers"] == 0
    assert sum("its spare took over" in e["reason"] for e in events1 if e["event"] == "restart") == replaced
    # a spare's worker is another process: the pids change at each replacement, as before (MIX
    # ends with a hang, whose replacement judges nothing)
    assert MIX[-1] == "hang"
    for recs in (with_spare, without):
        assert len({r["worker_pid"] for r in recs}) == replaced


def test_several_spares_take_over_in_turn_with_the_same_verdicts_exactly_once(capture):
    three, stats3, events3 = run(capture, [0], spares=3)
    one, _, _ = run(capture, [0], spares=1)
    check_exactly_once(three)
    assert verdicts(three) == verdicts(one)
    replaced = sum(1 for k in MIX if k in ("fault", "hang", "lost"))
    assert stats3["restarts"] == replaced and stats3["profile"]["spare_takeovers"] == replaced
    assert stats3["profile"]["spare_failures"] == 0
    assert len({r["worker_pid"] for r in three}) == replaced
    # every worker that opened (the first, and spares) said how long it took
    assert len(stats3["profile"]["open_s"]) >= 1 + replaced and min(stats3["profile"]["open_s"]) >= 0
    with pytest.raises(engine.EngineError, match="0 to 4"):
        evaluate_many("x", [], devices=[0], spares=5)


def test_auto_spares_grow_when_a_take_over_waits_and_only_for_small_captures(capture, monkeypatch):
    from kerncap import evaluate_pool
    mix = ["pass"] + ["fault"] * 5 + ["pass"] * 3
    slow = {"open_delay": 0.4}  # faults come faster than a worker opens
    monkeypatch.setattr(evaluate_pool, "capture_bytes", lambda path: 64 << 20)
    recs, stats, events = run(capture, [0], mix=mix, open_options=slow)  # spares="auto", the default
    check_exactly_once(recs, mix)
    # auto opened AUTO_SPARES_START spares from the start, then added some (an event each time)
    grown = stats["profile"].get("spares_grown", 0)
    assert 1 <= grown <= evaluate_pool.MAX_SPARES - evaluate_pool.AUTO_SPARES_START
    assert 1 <= sum(e["event"] == "spares" for e in events) <= grown
    assert any("spares kept open" in e["reason"] for e in events if e["event"] == "spares")
    fixed, stats1, _ = run(capture, [0], mix=mix, open_options=slow, spares=1)
    assert verdicts(fixed) == verdicts(recs) and "spares_grown" not in stats1["profile"]
    # a capture too large for more copies on the GPU (or one the parent cannot read) keeps one
    monkeypatch.setattr(evaluate_pool, "capture_bytes", lambda path: evaluate_pool.AUTO_SPARES_MAX_BYTES + 1)
    big, stats2, events2 = run(capture, [0], mix=mix, open_options=slow)
    assert verdicts(big) == verdicts(recs) and "spares_grown" not in stats2["profile"]
    assert not any(e["event"] == "spares" for e in events2)
    with pytest.raises(engine.EngineError, match="auto"):
        evaluate_many("x", [], devices=[0], spares="many")


def test_with_spares_a_lost_context_is_not_recovered_in_the_worker(capture):
    recs, _, _ = run(capture, [0], mix=["pass"], spares=1)
    assert recs[0]["verdict"]["open_options"] == {"recover": False}
    recs, _, _ = run(capture, [0], mix=["pass"], spares=0)
    assert recs[0]["verdict"]["open_options"] == {}
    # the caller's own choice stands
    recs, _, _ = run(capture, [0], mix=["pass"], spares=1, open_options={"recover": True})
    assert recs[0]["verdict"]["open_options"] == {"recover": True}


def test_a_spare_that_cannot_open_costs_nothing_but_itself(capture):
    recs, stats, events = run(capture, [0], mix=["pass", "fail", "pass"], spares=1, open_options={"max_opens": 1})
    assert sorted(r["result"] for r in recs) == ["FAIL", "PASS", "PASS"]
    assert stats["profile"]["spare_failures"] <= 1
    if stats["profile"]["spare_failures"]:  # the spare opens while the candidates are judged
        assert any(e["event"] == "spare_failed" and "opened 1 times" in e["reason"] for e in events)


def test_the_profile_says_where_the_time_went(capture):
    recs, stats, _ = run(capture, [0, 1], mix=["pass"] * 6 + ["hang"] + ["pass"] * 3, spares=1)
    prof = stats["profile"]
    assert set(prof["startup_s"]) == {0, 1} and all(v > 0 for v in prof["startup_s"].values())
    assert prof["busy_s"] > 0 and prof["restart_wait_s"] >= 0
    # the steady rate counts what finished once both GPUs had their worker open
    assert 0 <= prof["steady_count"] < len(recs) and 0 < prof["steady_from_s"] <= stats["last_result_s"]
    for r in recs:
        if r["verdict"] is not None:
            assert 0 <= r["judge_seconds"] <= r["seconds"]
        else:
            assert r["judge_seconds"] is None


def test_the_device_name_is_asked_while_the_session_opens(tmp_path, monkeypatch):
    from kerncap.evaluate_pool import _ask_device_name, _device_name
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA H200'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert _device_name(_ask_device_name()) == "NVIDIA H200"
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert _ask_device_name() is None and _device_name(None) is None


def test_only_a_worker_killed_at_the_time_limit_is_waited_for(capture):
    # a hung kernel holds its GPU until its process is gone; a lost context or a death runs nothing
    recs, stats, _ = run(capture, [0], mix=["pass", "hang", "pass", "lost", "pass", "fault", "pass"], spares=1)
    check_exactly_once(recs, mix=["pass", "hang", "pass", "lost", "pass", "fault", "pass"])
    assert stats["restarts"] == 3 and stats["profile"]["drains"] == 1


def test_a_worker_holds_the_next_candidate_only_when_it_fits_its_pipe():
    # pipelined: the worker begins the next candidate as it sends a verdict; an image too large
    # to wait in the pipe without blocking the parent goes only to an idle worker
    from kerncap.evaluate_pool import PIPELINE_DEPTH, PIPELINE_MAX_BYTES, Slot, failed
    assert PIPELINE_DEPTH == 2
    sent = []

    class Pipe:
        def send(self, msg):
            sent.append(msg)

    s = Slot(None, "cap", 0, FAKE, {}, {})
    s.conn, s.ready = Pipe(), True
    assert s.can_take(b"pass", 1) and s.assign(0, b"pass", "image bytes #0")
    assert not s.can_take("/c1.cubin", 1) and s.can_take("/c1.cubin", 2)
    assert not s.can_take(b"x" * (PIPELINE_MAX_BYTES + 1), 2) and s.can_take(b"x" * PIPELINE_MAX_BYTES, 2)
    assert s.assign(1, "/c1.cubin", "/c1.cubin") and not s.can_take("/c2.cubin", 2)
    assert [m[1] for m in sent] == [0, 1] and s.busy[0] == 0
    rec = s.record(0.5, failed("FAIL", "timed out after 1 s"))
    assert rec["index"] == 0 and s.busy[0] == 1 and s.busy[2] is not None  # its clock starts now
    # the worker is replaced: what it held behind the reported candidate goes back, never begun
    assert s.take_unbegun() == [(1, "/c1.cubin")] and s.busy is None

    class Broken:
        def send(self, msg):
            raise BrokenPipeError(32, "Broken pipe")

    s.conn = Broken()
    assert not s.assign(2, b"pass", "image bytes #2") and s.busy is None and not s.can_take(b"pass", 1)


def test_large_images_and_pipelined_ones_are_judged_exactly_once(capture):
    from kerncap.evaluate_pool import PIPELINE_MAX_BYTES
    mix = ["pass", "fault", "pass", "hang", "pass", "lost", "pass", "pass"]
    big = [f"{k} {i} ".encode() + b"x" * PIPELINE_MAX_BYTES for i, k in enumerate(mix)]
    for images in (big, candidates(mix)):
        pool = evaluate_many(capture, images, devices=[0], time_limit=LIMIT, judge=FAKE, time=True)
        recs = list(pool)
        assert sorted(r["index"] for r in recs) == list(range(len(mix)))
        assert [EXPECTED[k] for k in mix] == [r["result"] for r in sorted(recs, key=lambda r: r["index"])]
        assert pool.stats["restarts"] == 3


def test_auto_opens_its_first_spares_beside_the_first_worker(capture, monkeypatch):
    from kerncap import evaluate_pool
    monkeypatch.setattr(evaluate_pool, "capture_bytes", lambda path: 64 << 20)
    mix = ["pass", "hang", "pass"]
    pool = evaluate_many(capture, candidates(mix), devices=[0], time_limit=LIMIT, judge=FAKE, time=True)
    first = next(pool)  # the first worker opened; its spares were started with it, not after it
    assert first["result"] == "PASS" and len(pool.spare[0]) == evaluate_pool.AUTO_SPARES_START
    recs = [first] + list(pool)
    check_exactly_once(recs, mix)
    assert pool.stats["profile"]["spare_takeovers"] == 1
    # no more spares than candidates that could need them
    pool = evaluate_many(capture, candidates(["pass", "pass"]), devices=[0], judge=FAKE)
    next(pool)
    assert len(pool.spare[0]) == 2
    pool.close()
    # a capture too large for copies on the GPU opens one
    monkeypatch.setattr(evaluate_pool, "capture_bytes", lambda path: evaluate_pool.AUTO_SPARES_MAX_BYTES + 1)
    pool = evaluate_many(capture, candidates(["pass"]), devices=[0], judge=FAKE)
    next(pool)
    assert len(pool.spare[0]) == 1
    pool.close()


def test_a_spare_opening_beside_the_first_worker_does_not_ask_nvidia_smi(monkeypatch):
    from kerncap import evaluate_pool

    class Opened:
        def __init__(self, path, **options):
            self.path = path

    def never():
        raise AssertionError("a spare asked nvidia-smi")

    monkeypatch.setattr(evaluate_pool, "_PoolSession", Opened)
    monkeypatch.setattr(evaluate_pool, "_ask_device_name", never)
    monkeypatch.setattr(evaluate_pool, "_known_device_name", "")  # what _start_spare passes before the name is known
    assert evaluate_pool.EngineJudge("cap").device_name is None  # the pool keeps the first worker's on take-over
    monkeypatch.setattr(evaluate_pool, "_known_device_name", "NVIDIA H200")
    assert evaluate_pool.EngineJudge("cap").device_name == "NVIDIA H200"


def test_no_spare_is_started_that_could_not_open_before_the_last_candidate(capture):
    # 60 quick candidates, a context lost every 10th, workers that take 1 s to open: near the
    # end the spares left take over and no new one is started beside them
    mix = ["lost" if i % 10 == 5 else "pass" for i in range(60)]
    recs, stats, _ = run(capture, [0], mix=mix, open_options={"open_delay": 1.0}, spares=3)
    check_exactly_once(recs, mix)
    assert stats["restarts"] == 6 and stats["profile"]["spares_ending_s"] > 0


def test_workers_that_exit_right_after_closing_give_the_same_verdicts(capture):
    fast, stats, _ = run(capture, [0], open_options={"exit_after_close": True}, spares=1)
    check_exactly_once(fast)
    plain, _, _ = run(capture, [0], spares=1)
    assert verdicts(fast) == verdicts(plain)
    assert stats["restarts"] == sum(1 for k in MIX if k in ("fault", "hang", "lost"))


def test_a_generator_of_candidates_on_two_workers_is_judged_exactly_once(capture):
    pulled = []

    def lazily():
        for i, c in enumerate(candidates()):
            pulled.append(i)
            yield c

    pool = evaluate_many(capture, lazily(), devices=[0, 1], time_limit=LIMIT, judge=FAKE, time=True)
    recs = list(pool)
    check_exactly_once(recs)
    assert pulled == list(range(len(MIX))) and pool.stats["restarts"] == sum(
        1 for k in MIX if k in ("fault", "hang", "lost"))

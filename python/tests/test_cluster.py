"""The Dask path (kerncap.cluster) on a LocalCluster with the judge faked (fake_judge.py): the
capture shipped once per node (only missing files), candidates as bytes, hangs and dead
evaluation processes reported once, and the same verdicts as the host pool gives."""
import os

import pytest

distributed = pytest.importorskip("distributed", reason="dask[distributed] not installed (pip install 'kerncap[cluster]')")

from kerncap import cluster  # noqa: E402
from kerncap.evaluate_pool import evaluate_many  # noqa: E402

from test_evaluate_pool import EXPECTED, FAKE, LIMIT, MIX, candidates, check_exactly_once, fake_capture, verdicts  # noqa: E402,I100


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as lc:
        with distributed.Client(lc) as c:
            yield c


def test_the_capture_travels_once_and_only_what_is_missing(client, tmp_path):
    cap = fake_capture(str(tmp_path / "cap"))
    cache = str(tmp_path / "cache")
    first = cluster.ship_capture(client, cap, cache)
    assert first["files"] == 4
    (node,) = first["nodes"].values()  # both workers on this host: sent once
    assert node["files_sent"] == 4 and node["bytes_sent"] == sum(
        os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(cap) for f in fs)
    for d, _, fs in os.walk(cap):
        for f in fs:
            rel = os.path.relpath(os.path.join(d, f), cap)
            with open(os.path.join(d, f), "rb") as a, open(os.path.join(cache, first["key"], rel), "rb") as b:
                assert a.read() == b.read()
    again = cluster.ship_capture(client, cap, cache)
    assert again["key"] == first["key"] and list(again["nodes"].values())[0]["files_sent"] == 0
    # another capture with the same chunks: its chunks come from the node's chunk cache, only its
    # other files (manifest.json, the edited kerncap.toml) travel
    with open(os.path.join(cap, "kerncap.toml"), "a") as f:
        f.write("# edited\n")
    other = cluster.ship_capture(client, cap, cache)
    assert other["key"] != first["key"] and list(other["nodes"].values())[0]["files_sent"] == 2


def test_a_capture_with_an_external_store_is_refused(tmp_path):
    cap = fake_capture(str(tmp_path / "cap"))
    with open(os.path.join(cap, "capture", "manifest.json"), "w") as f:
        f.write('{"chunk_store": {"external": true}}')
    with pytest.raises(cluster.engine.EngineError, match="shared store"):
        cluster.inventory(cap)


def test_same_verdicts_as_the_host_pool_exactly_once(client, tmp_path):
    cap = fake_capture(str(tmp_path / "cap"))
    records = list(cluster.evaluate_on(client, cap, candidates(), time_limit=LIMIT, judge=FAKE,
                                       cache_dir=str(tmp_path / "cache"), time=True))
    check_exactly_once(records)
    pool = list(evaluate_many(cap, candidates(), devices=[0], time_limit=LIMIT, judge=FAKE, time=True))
    assert verdicts(records) == verdicts(pool)
    assert {r["dask_worker"] for r in records} <= set(client.scheduler_info()["workers"])
    restarts = {}
    for r in records:
        restarts[r["dask_worker"]] = max(restarts.get(r["dask_worker"], 0), r["worker_restarts"])
    assert sum(restarts.values()) == sum(1 for k in MIX if k in ("fault", "hang", "lost"))
    # a second run reuses the workers' evaluation processes and the shipped capture
    again = list(cluster.evaluate_on(client, cap, candidates(["pass", "fail"]), judge=FAKE,
                                     cache_dir=str(tmp_path / "cache"), time=True))
    assert sorted((r["index"], r["result"]) for r in again) == [(0, "PASS"), (1, "FAIL")]
    assert EXPECTED["hang"] == "FAIL"


def test_image_files_travel_as_bytes(client, tmp_path):
    cap = fake_capture(str(tmp_path / "cap"))
    paths = []
    for i, k in enumerate(["pass", "fail"]):
        p = tmp_path / f"v{i}.cubin"
        p.write_bytes(k.encode())
        paths.append(str(p))
    records = sorted(cluster.evaluate_on(client, cap, paths, judge=FAKE, cache_dir=str(tmp_path / "cache")),
                     key=lambda r: r["index"])
    assert [(r["image"], r["result"]) for r in records] == [(paths[0], "PASS"), (paths[1], "FAIL")]


def test_a_regime_set_gives_the_host_pools_set_verdicts(client, tmp_path):
    from test_evaluate_regimes import CANDS, regime_set
    rset = regime_set(str(tmp_path / "set"))
    records = list(cluster.evaluate_on(client, rset, CANDS, time_limit=LIMIT, judge=FAKE,
                                       cache_dir=str(tmp_path / "cache"), time=True))
    pool = list(evaluate_many(rset, CANDS, devices=[0], time_limit=LIMIT, judge=FAKE, time=True))
    assert sorted(r["index"] for r in records) == list(range(len(CANDS)))

    def key(rs):
        return {r["index"]: (r["result"], r["line"], tuple(r["verdict"]["failed"]), r["verdict"]["weighted_speedup"])
                for r in rs}
    assert key(records) == key(pool)
    assert key(records)[2][2] == ("01-b",)  # the regime-specific failure survived the capture's travel
    assert all(x.get("dask_worker") for r in records for x in r["regimes"])

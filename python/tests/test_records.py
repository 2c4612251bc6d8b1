"""Reading the shim's records and matching them to a capture (kerncap.triton_records)."""
import hashlib
import json

import pytest
from conftest import write_capture

from kerncap import capture, triton_records as tr

pytestmark = pytest.mark.usefixtures("engine_lib")

IMAGE = b"\x7fELF the captured cubin"


def write_records(tmp_path, recs, pid=11):
    d = tmp_path / "triton" / "records"
    d.mkdir(parents=True, exist_ok=True)
    with open(d / f"{pid}.jsonl", "a") as f:
        for r in recs:
            f.write(json.dumps(dict(r, version=1, pid=pid)) + "\n")
        f.write('{"kind": "compile", "name": "trunc')  # a process killed mid-write


def compile_rec(name="add_kernel", sha=None, h="h1", nw=4, shared=0, kind="ast", consts=()):
    return {"kind": "compile", "name": name, "hash": h, "cubin_sha256": sha, "source_kind": kind,
            "arg_names": ["x", "BLOCK"], "constants": [list(c) for c in consts],
            "options": {"num_warps": nw, "num_stages": 3, "num_ctas": 1, "shared": shared}, "fn": {"qualname": name}}


def prepare(tmp_path, recs):
    write_capture(str(tmp_path), image=IMAGE)
    write_records(tmp_path, recs)
    m = capture.load(str(tmp_path))
    return m, tr.load(str(tmp_path / "triton")), hashlib.sha256(IMAGE).hexdigest()


def test_match_by_cubin_sha_among_autotune_variants(tmp_path):
    sha = hashlib.sha256(IMAGE).hexdigest()
    m, recs, _ = prepare(tmp_path, [compile_rec(sha="0" * 64, h="a", consts=[([1], 512)]),
                                  compile_rec(sha=sha, h="b", consts=[([1], 1024)]),
                                  {"kind": "autotune", "name": "add_kernel", "kernel_hash": "b",
                                   "best": {"kwargs": {"BLOCK": 1024}, "num_warps": 4}}])
    assert recs.unreadable == 1 and len(recs.compiles) == 2
    found = tr.match(recs, m, sha)
    assert found.how == "cubin sha256" and found.record["hash"] == "b" and not found.warnings
    assert tr.autotune_for(recs, found.record)["kernel_hash"] == "b"
    nm = tr.name_map(recs, m, sha, found, None)
    assert nm["format"] == "kerncap-triton-map" and len(nm["kernels"]["add_kernel"]) == 2
    assert nm["captured"]["hash"] == "b"


def test_autotune_matched_by_config_without_hash(tmp_path):
    m, recs, sha = prepare(tmp_path, [compile_rec(sha=None, consts=[([1], 2048)]),
                                    {"kind": "autotune", "name": "add_kernel", "best": {"kwargs": {"BLOCK": 1024}}},
                                    {"kind": "autotune", "name": "add_kernel",
                                     "best": {"kwargs": {"BLOCK": 2048}, "num_warps": 4}}])
    assert tr.autotune_for(recs, recs.compiles[0])["best"]["kwargs"] == {"BLOCK": 2048}


def test_same_named_compilations_are_never_guessed_between(tmp_path):
    # Only num_warps=4 fits the capture's 128 threads, but neither produced the captured image.
    m, recs, sha = prepare(tmp_path, [compile_rec(sha="1" * 64, nw=4), compile_rec(sha="2" * 64, nw=8, h="h8")])
    with pytest.raises(tr.RecordError, match="does not guess among same-named compilations"):
        tr.match(recs, m, sha)
    m, recs, sha = prepare(tmp_path / "one", [compile_rec(sha="1" * 64, nw=4)])
    with pytest.raises(tr.RecordError, match="none produced the captured image"):
        tr.match(recs, m, sha)  # one compilation of that name, but its image is another one


def test_a_record_without_image_hash_binds_only_alone(tmp_path):
    m, recs, sha = prepare(tmp_path, [compile_rec(sha=None, nw=4)])
    found = tr.match(recs, m, sha)
    assert found.how == "kernel name" and "no image hash" in found.warnings[0]
    m, recs, sha = prepare(tmp_path / "two", [compile_rec(sha=None, nw=4), compile_rec(sha=None, nw=4, h="h2")])
    with pytest.raises(tr.RecordError, match="does not guess"):
        tr.match(recs, m, sha)
    m, recs, sha = prepare(tmp_path / "unfit", [compile_rec(sha=None, nw=8)])
    with pytest.raises(tr.RecordError):
        tr.match(recs, m, sha)


def test_a_load_record_binds_the_image_to_its_compilation_by_hash(tmp_path):
    """Warm caches: the compilation was recorded without this image's hash (another run's
    cubin, or none), the load of the image names its Triton hash."""
    sha = hashlib.sha256(IMAGE).hexdigest()
    m, recs, _ = prepare(tmp_path, [compile_rec(sha=None, h="a"), compile_rec(sha="9" * 64, h="b"),
                                  {"kind": "load", "via": "inductor static launcher", "name": "add_kernel",
                                   "hash": "b", "cubin_sha256": sha}])
    found = tr.match(recs, m, sha)
    assert found.how == "load record" and found.record["hash"] == "b"
    nm = tr.name_map(recs, m, sha, found, None)
    assert nm["loads"][0]["via"] == "inductor static launcher" and nm["captured"]["how"] == "load record"


def test_triton_compile_records_win_over_rebuilt_ones(tmp_path):
    sha = hashlib.sha256(IMAGE).hexdigest()
    compiled = compile_rec(sha=sha, h="c", consts=[([1], 256)])
    rebuilt = dict(compile_rec(sha=sha, h="c", consts=[([1], 999)]), via="inductor load")
    m, recs, _ = prepare(tmp_path, [compiled, rebuilt])
    found = tr.match(recs, m, sha)
    assert found.how == "cubin sha256" and "via" not in found.record and found.record["constants"] == [[[1], 256]]
    m, recs, _ = prepare(tmp_path / "warm", [rebuilt])
    assert tr.match(recs, m, sha).record["via"] == "inductor load"
    nm = tr.name_map(recs, m, sha, tr.match(recs, m, sha), None)
    assert nm["kernels"]["add_kernel"][0]["via"] == "inductor load"


def test_a_loaded_image_without_a_source_says_why(tmp_path):
    sha = hashlib.sha256(IMAGE).hexdigest()
    m, recs, _ = prepare(tmp_path, [{"kind": "load", "via": "triton", "name": "add_kernel", "hash": "z",
                                     "cubin_sha256": sha}])
    with pytest.raises(tr.RecordError, match="loaded through triton as Triton compilation z.*caches cold"):
        tr.match(recs, m, sha)


def test_errors_say_what_to_do(tmp_path):
    m, recs, sha = prepare(tmp_path, [compile_rec(name="other_kernel", sha="3" * 64)])
    with pytest.raises(tr.RecordError, match="other_kernel"):
        tr.match(recs, m, sha)
    m, recs, sha = prepare(tmp_path / "b", [])
    with pytest.raises(tr.RecordError, match="no Triton compile or kernel load"):
        tr.match(recs, m, sha)
    m, recs, sha = prepare(tmp_path / "c", [compile_rec(sha=hashlib.sha256(IMAGE).hexdigest(), kind="ir")])
    with pytest.raises(tr.RecordError, match="from IR"):
        tr.match(recs, m, sha)

"""The Triton shim's records (OUT/triton/records/*.jsonl) are untrusted input (issue 38, item 4):
OUT travels with bug reports. Seeded mutations of real records (wrong types, hostile strings,
huge and deeply nested lines, truncation) must leave load() counting what it cannot read and
match()/name_map() ending in a RecordError or a result, never another exception. The record
files themselves may be a FIFO, a link (to /dev/zero), a directory or huge: load() refuses them
at once with RecordsFileError (a RecordError and a KerncapInputError), naming the file.

The findings of this fuzzer in kerncap/triton_records.py (a line nested 100,000 deep raised
RecursionError, fields of the wrong type TypeError/AttributeError, a FIFO blocked load(), a
link to /dev/zero was read until memory ran out) are the cases below."""
import hashlib
import json
import os
import random
import signal

import pytest
from conftest import write_capture

from kerncap import capture, triton_records as tr
from kerncap.errors import KerncapInputError

pytestmark = pytest.mark.usefixtures("engine_lib")

IMAGE = b"\x7fELF the captured cubin"
SHA = hashlib.sha256(IMAGE).hexdigest()
ROUNDS = int(os.environ.get("KERNCAP_RECORDS_FUZZ_ROUNDS", "300"))


def seed_records():
    c = {"kind": "compile", "name": "add_kernel", "hash": "b", "cubin_sha256": SHA, "source_kind": "ast",
         "arg_names": ["x", "BLOCK"], "constants": [[[1], 1024]],
         "options": {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "shared": 0}, "fn": {"qualname": "add_kernel"}}
    return [dict(c, version=1, pid=11),
            dict(c, hash="a", cubin_sha256="0" * 64, version=1, pid=11),
            {"kind": "autotune", "name": "add_kernel", "kernel_hash": "b", "version": 1,
             "best": {"kwargs": {"BLOCK": 1024}, "num_warps": 4}},
            {"kind": "load", "hash": "b", "cubin_sha256": SHA, "via": "inductor static", "version": 1},
            {"kind": "bench", "name": "add_kernel", "launches": 3, "ignored": False, "version": 1}]


HOSTILE = [None, True, 0, -1, 2 ** 70, 1.5, float("1e308"), "", "x" * 100000, "../../etc/passwd", "\x00", [], {},
           [1, "a"], {"num_warps": "4"}, {"a": {"b": None}}]


def mutate(rec, rng):
    rec = json.loads(json.dumps(rec))
    for _ in range(rng.randint(1, 3)):
        target = rec
        if isinstance(rec.get("options"), dict) and rng.random() < 0.4:
            target = rec["options"]
        keys = list(target) + ["extra"]
        target[rng.choice(keys)] = rng.choice(HOSTILE)
    return rec


def run_reader(tmp_path, lines):
    d = tmp_path / "triton" / "records"
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "11.jsonl", "w", encoding="utf-8", errors="surrogatepass") as f:
        for line in lines:
            f.write(line + "\n")
    m = capture.load(str(tmp_path))
    recs = tr.load(str(tmp_path / "triton"))
    try:
        found = tr.match(recs, m, SHA)
    except tr.RecordError:
        found = None
    tr.name_map(recs, m, SHA, found, None)
    if found is not None:
        tr.autotune_for(recs, found.record)
    return recs


@pytest.fixture
def captured(tmp_path):
    write_capture(str(tmp_path), image=IMAGE, block=(128, 1, 1))
    return tmp_path


def test_the_seed_records_match(captured):
    recs = run_reader(captured, [json.dumps(r) for r in seed_records()])
    assert len(recs.compiles) == 2 and recs.unreadable == 0


def test_bad_lines_are_counted_not_read(captured):
    lines = ["not json", "{", "[]", "null", "7", '{"kind": "compile"', "\ud800", json.dumps("x" * 100000),
             '{"kind": "compile", "version": 99}']
    recs = run_reader(captured, lines + [json.dumps(r) for r in seed_records()])
    assert recs.unreadable == len(lines)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mutated_records_end_in_a_record_error_or_a_result(captured, seed):
    rng = random.Random(seed)
    failures = []
    for i in range(ROUNDS):
        recs = [mutate(r, rng) if rng.random() < 0.5 else r for r in seed_records()]
        try:
            run_reader(captured, [json.dumps(r) for r in recs])
        except (TypeError, AttributeError, ValueError, KeyError, RecursionError) as e:
            failures.append(f"round {i}: {type(e).__name__}: {e}: {recs}")
    assert not failures, f"{len(failures)} of {ROUNDS} mutated record sets raised: {failures[0][:300]}"


def test_a_deeply_nested_line_is_counted_not_raised(captured):
    recs = run_reader(captured, ["[" * 100000 + "]" * 100000] + [json.dumps(r) for r in seed_records()])
    assert recs.unreadable == 1
    assert "11.jsonl:1: nested deeper than" in recs.problems[0]


def test_nesting_in_strings_is_not_depth_and_a_record_within_the_bound_is_read(captured):
    rec = dict(seed_records()[0], extra="[" * 10000 + "{" * 10000, deep=json.loads("[" * 60 + "]" * 60))
    recs = run_reader(captured, [json.dumps(rec)])
    assert recs.unreadable == 0 and len(recs.compiles) == 1


def test_a_version_of_the_wrong_type_is_counted_not_raised(captured):
    recs = run_reader(captured, ['{"kind": "compile", "version": "2"}'] + [json.dumps(r) for r in seed_records()])
    assert recs.unreadable == 1
    assert recs.problems == [f"{captured}/triton/records/11.jsonl:1: field 'version' is str, expected an integer"]


@pytest.mark.parametrize("bad", [{"options": "x"}, {"options": {"num_warps": "4"}}, {"fn": []}, {"name": ["a"]},
                                 {"arg_names": [1]}, {"constants": [[1, 2]]}, {"sys_path": 7}, {"hash": {}},
                                 {"best": {"kwargs": []}}, {"launches": True}, {"where": 3}])
def test_fields_of_the_wrong_type_are_counted_and_named(captured, bad):
    rec = dict(seed_records()[0], **bad)
    recs = run_reader(captured, [json.dumps(rec)] + [json.dumps(r) for r in seed_records()[1:]])
    assert recs.unreadable == 1, recs.problems
    assert recs.problems[0].startswith(f"{captured}/triton/records/11.jsonl:1: field '")


def test_null_fields_read_as_absent(captured):
    recs = run_reader(captured, [json.dumps(dict(seed_records()[0], options=None, fn=None, via=None)),
                                 json.dumps({"kind": "error", "where": None, "error": "boom", "version": 1})])
    assert recs.unreadable == 0 and len(recs.compiles) == 1 and len(recs.errors) == 1


def test_a_line_past_the_bound_is_counted_and_skipped(captured, monkeypatch):
    monkeypatch.setattr(tr, "MAX_RECORD_LINE_BYTES", 1000)
    recs = run_reader(captured, [json.dumps({"kind": "bench", "name": "x" * 5000})] +
                      [json.dumps(r) for r in seed_records()])
    assert recs.unreadable == 1 and len(recs.compiles) == 2
    assert "11.jsonl:1: a line longer than 1000 bytes" in recs.problems[0]


def _with_alarm(seconds, body):
    def timeout(*_):
        raise TimeoutError(f"still reading after {seconds} s")
    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(seconds)
    try:
        return body()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _refused(captured, what):
    with pytest.raises(tr.RecordsFileError) as e:
        _with_alarm(3, lambda: tr.load(str(captured / "triton")))
    assert isinstance(e.value, tr.RecordError) and isinstance(e.value, KerncapInputError)
    assert e.value.exit_code == 2
    assert f"{captured}/triton/records/12.jsonl" in str(e.value) and what in str(e.value), str(e.value)


def test_a_fifo_records_file_does_not_block(captured):
    d = captured / "triton" / "records"
    d.mkdir(parents=True)
    os.mkfifo(d / "12.jsonl")
    _refused(captured, "is a FIFO, not a regular file")


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "11.jsonl"])
def test_a_linked_records_file_is_refused_without_reading(captured, target):
    d = captured / "triton" / "records"
    d.mkdir(parents=True)
    (d / "11.jsonl").write_text(json.dumps(seed_records()[0]) + "\n")
    os.mkfifo(d / "fifo")
    os.symlink(target if target.startswith("/") else d / target, d / "12.jsonl")
    _refused(captured, "is a symbolic link")


@pytest.mark.parametrize("linked", ["triton", "triton/records"])
def test_a_linked_records_directory_is_refused_without_reading(captured, tmp_path_factory, linked):
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "triton"
    (elsewhere / "records").mkdir(parents=True)
    (elsewhere / "records" / "11.jsonl").write_text(json.dumps(seed_records()[0]) + "\n")
    if linked == "triton":
        os.symlink(elsewhere, captured / "triton")
    else:
        (captured / "triton").mkdir()
        os.symlink(elsewhere / "records", captured / "triton" / "records")
    with pytest.raises(tr.RecordsFileError) as e:
        _with_alarm(3, lambda: tr.load(str(captured / "triton")))
    assert "is a symbolic link" in str(e.value) and e.value.exit_code == 2, str(e.value)


def test_a_directory_or_a_huge_records_file_is_refused(captured):
    d = captured / "triton" / "records"
    (d / "12.jsonl").mkdir(parents=True)
    _refused(captured, "is a directory")
    os.rmdir(d / "12.jsonl")
    with open(d / "12.jsonl", "wb") as f:
        f.truncate(tr.MAX_RECORDS_FILE_BYTES + 1)  # sparse
    _refused(captured, f"more than the {tr.MAX_RECORDS_FILE_BYTES} this reader accepts")

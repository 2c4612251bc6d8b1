"""The launch plan: captured parameter bytes -> Triton arguments; grid inference."""
import glob
import os
import re
import struct

import pytest
from conftest import pack_params

from kerncap import triton_launch as tl


def record(arg_names, signature, constants=(), constexpr_params=(), options=None, name="k"):
    return {"name": name, "arg_names": list(arg_names), "signature": dict(signature),
            "constants": [list(c) for c in constants], "constexpr_params": list(constexpr_params),
            "options": options or {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "debug": False}}


def test_slots_map_to_runtime_args_in_order_and_scratch_is_extra():
    rec = record(["x", "y", "n", "alpha", "h", "flag", "one", "BLOCK"],
                 {"x": "*fp32", "y": "*fp16", "n": "i32", "alpha": "fp32", "h": "bf16", "flag": "u1",
                  "one": "constexpr", "BLOCK": "constexpr"},
                 constants=[([6], 1), ([7], 1024)], constexpr_params=["BLOCK"])
    bf16_of_1_5 = struct.unpack("<I", struct.pack("<f", 1.5))[0] >> 16
    params, slots = pack_params([("Q", 0x7f0000001000), ("Q", 0x7f0000002000), ("i", 98304), ("f", 0.5),
                                 ("H", bf16_of_1_5), ("B", 1), ("Q", 0), ("Q", 0)])
    p = tl.build_plan(rec, slots, params, (96, 1, 1))
    vals = {a.name: a.value for a in p.args}
    assert vals == {"x": 0x7f0000001000, "y": 0x7f0000002000, "n": 98304, "alpha": 0.5, "h": 1.5, "flag": True,
                    "one": 1, "BLOCK": 1024}
    assert [a.slot for a in p.args] == [0, 1, 2, 3, 4, 5, None, None]
    assert p.extra_slots == 2 and p.programs == (96, 1, 1) and not p.notes
    assert p.constexprs() == {"one": 1, "BLOCK": 1024}
    assert [a.name for a in p.pointers()] == ["x", "y"]
    assert p.options == {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "debug": False}
    again = tl.plan_from_json(p.to_json())
    assert again.to_json() == p.to_json()


def test_fp16_scalar_and_tuple_arguments():
    rec = record(["t", "s"], {"t": ["*fp32", "i64"], "s": "fp16"})
    params, slots = pack_params([("Q", 0xdead0000), ("q", -5), ("e", 0.25), ("Q", 0), ("Q", 0)])
    p = tl.build_plan(rec, slots, params, (1, 1, 1))
    assert [(a.name, a.path, a.value) for a in p.args] == [("t[0]", (0, 0), 0xdead0000), ("t[1]", (0, 1), -5),
                                                            ("s", (1,), 0.25)]


def test_num_ctas_divides_grid_into_programs():
    rec = record(["x"], {"x": "*fp32"}, options={"num_warps": 4, "num_ctas": 2})
    params, slots = pack_params([("Q", 16), ("Q", 0), ("Q", 0)])
    assert tl.build_plan(rec, slots, params, (8, 3, 1)).programs == (4, 3, 1)


def test_a_block_that_is_not_num_warps_warps_is_noted():
    rec = record(["x"], {"x": "*fp32"}, options={"num_warps": 4, "num_ctas": 1})
    params, slots = pack_params([("Q", 16), ("Q", 0), ("Q", 0)])
    assert not tl.build_plan(rec, slots, params, (8, 1, 1), (128, 1, 1)).notes
    notes = tl.build_plan(rec, slots, params, (8, 1, 1), (256, 1, 1)).notes
    assert len(notes) == 1 and "256 threads" in notes[0] and "num_warps 4" in notes[0]
    assert "another compilation" in notes[0]


def test_mismatched_record_is_refused():
    rec = record(["x", "n"], {"x": "*fp32", "n": "i64"})
    params, slots = pack_params([("Q", 16), ("i", 3), ("Q", 0), ("Q", 0)])
    with pytest.raises(tl.PlanError, match="should take 8 bytes"):
        tl.build_plan(rec, slots, params, (1, 1, 1))
    params, slots = pack_params([("Q", 16)])
    with pytest.raises(tl.PlanError, match="does not belong"):
        tl.build_plan(rec, slots, params, (1, 1, 1))
    with pytest.raises(tl.PlanError, match="not supported"):
        tl.scalar_size("nvTmaDesc")


def test_values_and_literals():
    assert tl.decode_value({"tuple": [1, {"float": "inf"}]}) == (1, float("inf"))
    assert tl.python_literal({"dtype": "fp16"}) == 'tl.dtype("fp16")'
    assert tl.python_literal({"tuple": [4]}) == "(4,)"
    assert tl.python_literal({"jit_function": "pkg.mod.relu"}) == "relu"
    assert tl.decode_value({"dtype": "bf16"}, lambda k, t: (k, t)) == ("dtype", "bf16")
    with pytest.raises(tl.PlanError):
        tl.decode_value({"repr": "<object>"})
    assert tl.element_of("*kfp16") == "fp16" and tl.element_of("*fp8e4nv") == "fp8e4nv"


def test_grid_vector_kernel():
    axes = tl.infer_grid((96, 1, 1), {"n_elements": 98304}, {"BLOCK_SIZE": 1024})
    assert axes == [("cdiv", "n_elements", "BLOCK_SIZE"), None, None]
    assert tl.grid_expr(axes[0], 96) == 'triton.cdiv(meta["n_elements"], meta["BLOCK_SIZE"])'
    assert tl.grid_expr(None, 7) == "7"


def test_grid_matmul_product_of_two_tiles():
    sizes = {"M": 512, "N": 384, "K": 256, "stride_am": 256, "stride_ak": 1}
    blocks = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32}
    axes = tl.infer_grid((24, 1, 1), sizes, blocks)
    assert axes[0] == ("cdiv2", "M", "BLOCK_SIZE_M", "N", "BLOCK_SIZE_N")


def test_grid_inductor_and_liger_dyt():
    assert tl.infer_grid((64, 1, 1), {"xnumel": 65536}, {"XBLOCK": 1024})[0] == ("cdiv", "xnumel", "XBLOCK")
    # Liger's _dyt_fwd_kernel: grid (cdiv(N, BLOCK_N), M); N is a constexpr, M is no argument.
    axes = tl.infer_grid((1, 4096, 1), {"N": 1024}, {"BLOCK_N": 1024})
    assert axes == [("cdiv", "N", "BLOCK_N"), None, None]


def test_grid_ambiguous_keeps_captured_count():
    # Two unrelated sizes give the same count: no guess.
    assert tl.infer_grid((4, 1, 1), {"a": 4096, "b": 4000}, {"BLOCK": 1024}) == [None, None, None]
    # A count of 1 without a name match: no guess.
    assert tl.infer_grid((1, 1, 1), {"stride": 16}, {"BLOCK_SIZE": 1024}) == [None, None, None]


def test_add_app_paths(tmp_path):
    root, extra, gone = tmp_path / "src", tmp_path / "extra", tmp_path / "gone"
    root.mkdir()
    extra.mkdir()
    path = ["/here", str(root)]
    added = tl.add_app_paths(str(root), [str(extra), str(gone), "/here", str(root)], path)
    assert path == [str(root), "/here", str(extra)]   # package root first, the rest after ours
    assert added == [str(root), str(extra)]
    assert tl.add_app_paths(str(root), [str(extra)], path) == []  # idempotent
    assert tl.add_app_paths(None, [], path) == [] and path == [str(root), "/here", str(extra)]


def _plan(sig, values):
    """A plan whose runtime arguments have these types and captured values."""
    names = [f"a{i}" for i in range(len(sig))]
    args = [tl.Arg((i,), n, t, slot=i, value=v) for i, (n, t, v) in enumerate(zip(names, sig, values))]
    return tl.Plan("k", names, args, 2, {}, (1, 1, 1), 1)


def test_compare_spec_types_each_pointer_extent():
    base = 0x7f0000000000
    plan = _plan(["*fp32", "*kfp16", "*fp32", "i32", "*i64", "*fp8e4nv", "*bf16", "*fp8e4b8", "*fp32"],
                 [base + 0x100, base, base + 0x100, 7, base + 0x800, 0x7f0000100010, 0, 0x7f0000100000, 0x1234])
    spec = tl.compare_spec(plan, [(0x7f0000100000, 0x40), (base, 0x1000)])
    assert spec["dtype"] == "bytes"
    assert spec["spans"] == [
        # region at base: a1 (fp16) from 0, a0 (fp32; a2 shares its address) from 0x100, a4 (i64) from 0x800
        {"base": hex(base), "size": 0x100, "dtype": "fp16"},
        {"base": hex(base + 0x100), "size": 0x700, "dtype": "fp32"},
        {"base": hex(base + 0x800), "size": 0x800, "dtype": "i64"},
        # region at 0x7f0000100000: a7 (AMD fp8: bytes) owns the first 16 bytes, a5 (fp8e4nv) the rest;
        # a null pointer (a6) and one into no region (a8) type nothing
        {"base": "0x7f0000100010", "size": 0x30, "dtype": "fp8e4m3"},
    ]
    assert tl.compare_spec(plan, [])["spans"] == []


def test_engine_dtype_names_are_the_engines_spellings():
    """Every dtype compare.json names is one compare::dtype_from_string knows."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = "".join(open(p).read() for p in glob.glob(os.path.join(repo, "src", "compare", "*.cpp")))
    spellings = set(re.findall(r'Spelling\{"([^"]+)"', text))
    assert spellings, "src/compare no longer spells its dtypes as Spelling{...}: update this test"
    assert {e[2] for e in tl.ELEMENT.values()} <= spellings

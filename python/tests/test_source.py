"""Cutting the captured kernel out of its module snapshot (kerncap.triton_source)."""
import ast

from kerncap import triton_source

LIGER_LIKE = '''import operator

import torch
import triton
import triton.language as tl

from liger_kernel.ops.utils import compare_version
from liger_kernel.ops.utils import ensure_contiguous

if compare_version("triton", operator.ge, "3.0.0"):
    try:
        from triton.language.extra.libdevice import tanh
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import tanh
else:
    from triton.language.math import tanh

SCALE = 2.0
UNUSED = torch.zeros(3)


@triton.jit
def _helper(x):
    return x * SCALE


@triton.autotune(
    configs=[triton.Config({"BLOCK_N": bn}, num_warps=4) for bn in [1024, 2048]],
    key=["N"],
)
@triton.jit
def _dyt_fwd_kernel(X, Y, N: tl.constexpr, BLOCK_N: tl.constexpr):
    col = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(X + col, mask=col < N)
    tl.store(Y + col, _helper(tanh(x)), mask=col < N)


def liger_dyt_fwd(x):
    y = torch.empty_like(x)
    _dyt_fwd_kernel[(1,)](x, y, x.numel())
    return y


if __name__ == "__main__":
    liger_dyt_fwd(torch.ones(4))
'''


def test_keeps_the_kernel_and_what_it_references_only():
    t = triton_source.trim_module(LIGER_LIKE, "_dyt_fwd_kernel")
    assert not t.whole_module
    src = t.source
    ast.parse(src)
    assert "@triton.jit\ndef _dyt_fwd_kernel(" in src
    assert "triton.autotune" not in src and t.dropped_decorators and "autotune" in t.dropped_decorators[0]
    assert "def _helper" in src and "SCALE = 2.0" in src
    assert "from triton.language.extra.libdevice import tanh" in src  # the if/try block that binds tanh
    assert "import operator" in src and "compare_version" in src      # what that block's test needs
    for gone in ("liger_dyt_fwd", "__main__", "UNUSED", "ensure_contiguous", "import torch"):
        assert gone not in src, gone


def test_inductor_style_module():
    mod = '''import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(size_hints={'x': 1024}, filename=__file__, triton_meta={}, inductor_meta={})
@triton.jit
def triton_poi_fused_relu_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
    tmp0 = tl.load(in_ptr0 + xindex, xindex < xnumel)
    tl.store(out_ptr0 + xindex, triton_helpers.maximum(tmp0, 0), xindex < xnumel)
'''
    t = triton_source.trim_module(mod, "triton_poi_fused_relu_0")
    assert "triton_heuristics.pointwise" not in t.source and "pointwise" in t.dropped_decorators[0]
    assert "from torch._inductor.runtime import triton_helpers" in t.source
    assert "set_driver_to_gpu" not in t.source and "libdevice" not in t.source


def test_falls_back_to_the_whole_module():
    nested = "import triton\n\ndef make():\n    @triton.jit\n    def k(x):\n        pass\n    return k\n"
    t = triton_source.trim_module(nested, "k")
    assert t.whole_module and t.source == nested and "not a top-level function" in t.note
    broken = "def k(:\n"
    t = triton_source.trim_module(broken, "k")
    assert t.whole_module and "does not parse" in t.note


def test_function_only_source_gets_the_imports_its_decorators_need():
    # A kernel recorded without its module (an Inductor kernel rebuilt from a cache whose
    # file is gone): the variant must still define it, so the usual imports go above it.
    from kerncap.triton_repro import FUNCTION_ONLY_IMPORTS
    fn = ("@triton_heuristics.template(num_stages=3, num_warps=4)\n@triton.jit\n"
          "def triton_tem_k(in_ptr0, out_ptr0):\n    x = tl.load(in_ptr0)\n"
          "    tl.store(out_ptr0, triton_helpers.maximum(x, x))\n")
    t = triton_source.trim_module(FUNCTION_ONLY_IMPORTS + fn, "triton_tem_k")
    assert not t.whole_module
    head = t.source.split("def triton_tem_k")[0]
    assert "import triton\n" in head and "import triton.language as tl" in head
    assert "triton_helpers" in head
    assert t.dropped_decorators == ["triton_heuristics.template(num_stages=3, num_warps=4)"]

"""A window bounded by an NVTX range in PyTorch, for window_e2e.sh's nvtx_torch and nvtx_emit
cases (`kerncap window extract --range block@2`): four iterations, each a range "block" around
a GEMM, a ReLU, a scale and a residual add on the current stream.

  nvtx_torch.py [plain|emit] [ITERATIONS=4]

plain: torch.cuda.nvtx.range_push("block") / range_pop() (nvtxRangePushA / nvtxRangePop).
emit:  torch.profiler.record_function("block") under torch.autograd.profiler.emit_nvtx(): the
       record_function scope becomes an NVTX range named "block" (emit_nvtx may append ", op_id = N"
       and the like), each ATen op inside it a nested range. Without emit_nvtx, record_function
       emits no NVTX range at all (kerncap --range sees nothing)."""
import contextlib
import sys

import torch

MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
ITERATIONS = int(sys.argv[2]) if len(sys.argv) > 2 else 4

torch.manual_seed(0)
x = torch.randn(256, 512, device="cuda")
w = torch.randn(512, 512, device="cuda") / 16


def block(inp):
    h = torch.relu(inp @ w)
    return h * 0.5 + inp


# Warm up (cuBLAS handle and workspace, the caching allocator) before the ranges.
out = block(x)
torch.cuda.synchronize()

ctx = torch.autograd.profiler.emit_nvtx() if MODE == "emit" else contextlib.nullcontext()
with ctx:
    for _ in range(ITERATIONS):
        if MODE == "emit":
            with torch.profiler.record_function("block"):
                out = block(out)
        else:
            torch.cuda.nvtx.range_push("block")
            out = block(out)
            torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print("nvtx_torch %s: %d iterations, sum %.4f" % (MODE, ITERATIONS, out.sum().item()))

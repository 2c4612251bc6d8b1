#!/usr/bin/env python3
"""A PyTorch inference-style loop for the GPU suites: the same operation on the same inputs,
ITERS times, like a benchmark loop or repeated decoding steps. From the second iteration on,
each launch rewrites the bytes its output already holds, so validation that only compares
with the application's result cannot tell the kernel from a launch that does nothing.

    torch_loop.py MODE [ITERS]     MODE: softmax layer_norm gemm gemm_out mul sum index_add

KC_LOOP_TENSORS=FILE writes the operands' addresses, shapes and dtypes as JSON (for modes
whose operands are fixed: mul, gemm_out): what a hand-written replacement of the kernel needs,
since a replay runs at the application's addresses (tests/gpu/closed_candidates.py).
"""
import json
import os
import hashlib
import sys

import torch


def randn(shape, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, generator=g, device="cuda", dtype=dtype)


TENSORS = {}  # name -> tensor, for KC_LOOP_TENSORS


def make(mode):
    """Returns a function that runs the operation once and returns its result."""
    if mode == "softmax":
        x = randn((4096, 1024), torch.float32, 1)
        return lambda: torch.softmax(x, dim=-1)
    if mode == "layer_norm":
        x = randn((4096, 1024), torch.float32, 2)
        w, b = randn((1024,), torch.float32, 3), randn((1024,), torch.float32, 4)
        return lambda: torch.nn.functional.layer_norm(x, (1024,), w, b)
    if mode == "gemm":
        a, b = randn((1024, 1024), torch.float16, 5), randn((1024, 1024), torch.float16, 6)
        return lambda: a @ b
    if mode == "gemm_out":  # the same GEMM into one preallocated output (fixed addresses)
        a, b = randn((1024, 1024), torch.float16, 5), randn((1024, 1024), torch.float16, 6)
        out = torch.empty((1024, 1024), device="cuda", dtype=torch.float16)
        TENSORS.update(a=a, b=b, out=out)
        return lambda: torch.matmul(a, b, out=out)
    if mode == "mul":
        a, b = randn((1 << 22,), torch.float32, 7), randn((1 << 22,), torch.float32, 8)
        out = torch.empty_like(a)
        TENSORS.update(a=a, b=b, out=out)
        return lambda: torch.mul(a, b, out=out)
    if mode == "sum":
        x = randn((2048, 4096), torch.float32, 9)
        return lambda: x.sum(dim=1)
    if mode == "index_add":
        # Float atomics: many source rows add into few destination rows, in an order the
        # scheduler picks, so the rounding differs from run to run.
        src = randn((1 << 18, 64), torch.float32, 10)
        g = torch.Generator(device="cuda").manual_seed(11)
        idx = torch.randint(0, 256, (1 << 18,), generator=g, device="cuda")
        out = torch.zeros((256, 64), device="cuda")

        def step():
            out.zero_()
            return out.index_add_(0, idx, src)
        return step
    sys.exit(f"torch_loop.py: unknown mode {mode}")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "softmax"
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    op = make(mode)
    if os.environ.get("KC_LOOP_TENSORS"):
        with open(os.environ["KC_LOOP_TENSORS"], "w") as f:
            json.dump({"mode": mode, "tensors": {n: {"ptr": t.data_ptr(), "shape": list(t.shape),
                                                     "dtype": str(t.dtype).removeprefix("torch.")}
                                                 for n, t in TENSORS.items()}}, f)
    for _ in range(iters):
        y = op()
    torch.cuda.synchronize()
    raw = y.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes()
    print(f"checksum {mode} {hashlib.sha256(raw).hexdigest()[:16]}", flush=True)


if __name__ == "__main__":
    main()

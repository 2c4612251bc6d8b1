#!/usr/bin/env python3
"""A Triton kernel under @triton.autotune called with several keys: a scaled add over n
elements whose autotuner picks BLOCK per n (the key), called at three sizes in a loop, so one
kernel runs under several autotune keys at several grids: its regimes.

    triton_autotune.py [ROUNDS]
Prints a checksum of the results. Exit 77 when Triton is missing.
"""
import sys

import torch

try:
    import triton
    import triton.language as tl
except ImportError:
    print("SKIPPED: triton is not installed")
    sys.exit(77)


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=4),
                          triton.Config({"BLOCK": 4096}, num_warps=8)], key=["n"], cache_results=True)
@triton.jit
def scaled_add(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * alpha + y, mask=mask)


def main(argv):
    rounds = int(argv[1]) if len(argv) > 1 else 6
    g = torch.Generator(device="cuda").manual_seed(5)
    total = 0.0
    for n in (1 << 22, 1000003, 4096):
        x = torch.randn(n, generator=g, device="cuda")
        y = torch.randn(n, generator=g, device="cuda")
        out = torch.empty_like(x)
        for _ in range(rounds):
            scaled_add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, 0.5, n)
        total += float(out.sum())
    torch.cuda.synchronize()
    print(f"triton_autotune ok {total:.6g}", flush=True)


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""A decoder-style loop for the regimes suite: one prefill over 512 tokens, then 24 decode
steps over 1 token, through the same layer norm and the same GEMM (as a Llama layer runs its
norm and projections at prefill and decode shapes). The layer norm runs at two launch shapes
(512 rows, then 1 row), each with its own share of the kernel's GPU time.

    regimes_torch.py [DECODE_STEPS]
"""
import sys

import torch


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    g = torch.Generator(device="cuda").manual_seed(3)
    hidden = 2048
    ln = torch.nn.LayerNorm(hidden, device="cuda")
    w = torch.randn((hidden, hidden), generator=g, device="cuda") / hidden ** 0.5
    with torch.no_grad():
        x = torch.randn((512, hidden), generator=g, device="cuda")
        y = ln(x) @ w                      # prefill
        t = y[-1:].contiguous()
        for _ in range(steps):             # decode
            t = ln(t) @ w
        torch.cuda.synchronize()
    print(f"regimes_torch ok {float(t.sum()):.6g}", flush=True)


if __name__ == "__main__":
    main()

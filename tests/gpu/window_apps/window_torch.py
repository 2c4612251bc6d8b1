#!/usr/bin/env python3
"""A small PyTorch MLP block for tests/gpu/window_e2e.sh, ITERS times on the same input:
x -> layer_norm -> linear (cuBLAS, bf16) -> gelu -> linear -> x + ... (ATen and cuBLAS kernels on
one stream). Prints a checksum per iteration.

    window_torch.py [ITERS]
Exit 77 without torch or CUDA.
"""
import sys

try:
    import torch
except ImportError:
    print("SKIPPED: no torch")
    sys.exit(77)


def main(argv):
    iters = int(argv[1]) if len(argv) > 1 else 4
    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA")
        sys.exit(77)
    torch.manual_seed(0)
    d, h, n = 512, 1376, 256
    ln = torch.nn.LayerNorm(d).cuda().to(torch.bfloat16)
    up = torch.nn.Linear(d, h).cuda().to(torch.bfloat16)
    down = torch.nn.Linear(h, d).cuda().to(torch.bfloat16)
    x = torch.randn(n, d, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        for i in range(iters):
            x = x + down(torch.nn.functional.gelu(up(ln(x))))
            print(f"iteration {i} checksum {x.float().sum().item():.4f}", flush=True)


if __name__ == "__main__":
    main(sys.argv)

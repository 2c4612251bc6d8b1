"""Liger-Kernel's autotuned DyT forward kernel, `_dyt_fwd_kernel` (triton_e2e.sh case
triton_liger_dyt). Liger-Kernel is not part of kerncap: point KERNCAP_LIGER_SRC (or PYTHONPATH)
at the `src` directory of a checkout. Exits 77 when it cannot be imported. Prints the
configuration the autotuner chose as `BEST {json}`."""
import json
import os
import sys

src = os.environ.get("KERNCAP_LIGER_SRC")
if src:
    sys.path.insert(0, src)
try:
    import torch
    from liger_kernel.ops import dyt
except Exception as e:  # not installed / not fetched
    print(f"SKIP: liger_kernel is not importable ({type(e).__name__}: {e}); set KERNCAP_LIGER_SRC", file=sys.stderr)
    sys.exit(77)


def main():
    torch.manual_seed(0)
    M, N = 4096, 2048
    x = torch.randn(M, N, device="cuda", dtype=torch.float32)
    alpha = torch.tensor([0.7], device="cuda")
    gamma = torch.randn(N, device="cuda")
    beta = torch.randn(N, device="cuda")
    y = dyt.liger_dyt_fwd(x, alpha, gamma, beta)   # autotunes over 18 configurations, then runs the winner
    y2 = dyt.liger_dyt_fwd(x * 2, alpha, gamma, beta)
    torch.cuda.synchronize()
    ref = gamma * torch.tanh(alpha * x) + beta
    assert torch.allclose(y, ref, atol=1e-5, rtol=1e-5)
    best = dyt._dyt_fwd_kernel.best_config
    print("BEST " + json.dumps({"kwargs": best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages}))
    print(f"checksum liger_dyt {y.double().sum().item():.4f} {y2.double().sum().item():.4f}")


if __name__ == "__main__":
    main()

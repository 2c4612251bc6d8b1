#!/usr/bin/env python3
"""An Inductor-generated sequence of Triton kernels for window_e2e.sh's inductor cases: one
torch.compile'd (default mode: no CUDA graph) block in bf16,

    h = rms_norm(x) * g1          triton_per_fused_..._0   (a persistent reduction over D)
    u = h @ w1                    cuBLAS (Inductor's extern mm)
    a = gelu(u)                   triton_poi_fused_gelu_1  (pointwise, in place on u)
    y = x + a @ w2                cuBLAS (extern addmm, or mm with the add in the next kernel)
    z = layer_norm(y, weight g2)  triton_per_fused_..._2   (another reduction: a kernel of its own)

so each call launches three Triton kernels and two cuBLAS GEMMs (on the CPU, Inductor 2.15 makes
the same schedule: mm, in-place gelu, addmm between the two norms). The window from the first
Triton reduction to the second one of the same call is
`--window 'triton_(per|red)_fused@N..triton_(per|red)_fused@1' --regex`, N = 2 x the calls before
it: every call launches exactly two matching kernels.

    inductor_seq.py warm          compile and autotune only (the suite runs it first, without
                                  kerncap, into a hermetic TORCHINDUCTOR_CACHE_DIR)
    inductor_seq.py run [CALLS]   WARM calls, then CALLS calls, each inside the NVTX range
                                  "inductor_step" (for --range); prints a checksum at the end

Why counts stay exact: `kerncap window extract` counts every launch whose name matches FROM,
and an autotuner benchmarking several configurations launches the same kernel names many times
(window mode has no Triton shim to hide them, docs/triton.md). Pointwise autotuning is off here
(one configuration), a persistent inner reduction over 1024 has one configuration, and the
`warm` run leaves Inductor's compiled graph and best configurations in the cache, so the captured
run loads them and benchmarks nothing. Exit 77 without torch or CUDA.
"""
import sys

try:
    import torch
except ImportError:
    print("SKIPPED: no torch")
    sys.exit(77)

T, D, H = 1024, 1024, 4096  # tokens, model width, MLP width (D <= 1024: a persistent reduction)
EPS = 1e-6
WARM = 3                      # calls before the counted ones (the first compiles)


def rms(x, g):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * g


def block(x, g1, w1, w2, g2):
    a = torch.nn.functional.gelu(rms(x, g1) @ w1)
    y = x + a @ w2
    return torch.nn.functional.layer_norm(y, (D,), g2), y


def main(argv):
    mode = argv[1] if len(argv) > 1 else "run"
    calls = int(argv[2]) if len(argv) > 2 else 6
    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA")
        sys.exit(77)
    import torch._inductor.config as inductor_config
    inductor_config.triton.autotune_pointwise = False  # one configuration: no benchmark launches
    torch.manual_seed(0)
    bf = dict(device="cuda", dtype=torch.bfloat16)
    g1 = 1 + 0.1 * torch.randn(D, **bf)
    g2 = 1 + 0.1 * torch.randn(D, **bf)
    w1 = torch.randn(D, H, **bf) / D ** 0.5
    w2 = torch.randn(H, D, **bf) / H ** 0.5
    x = torch.randn(T, D, **bf)
    fn = torch.compile(block, dynamic=False)
    with torch.no_grad():
        for _ in range(WARM):
            z, y = fn(x, g1, w1, w2, g2)
        torch.cuda.synchronize()
        ref_z, _ = block(x, g1, w1, w2, g2)
        err = (z.float() - ref_z.float()).abs().max().item()
        if mode == "warm":
            print(f"inductor_seq warm: compiled, max |compiled - eager| {err:.4f}")
            return
        for _ in range(calls):
            torch.cuda.nvtx.range_push("inductor_step")
            z, y = fn(x, g1, w1, w2, g2)
            torch.cuda.nvtx.range_pop()
            x = z  # the next call reads this one's output
        torch.cuda.synchronize()
    print(f"inductor_seq run: {WARM} + {calls} calls, checksum {z.double().sum().item():.4f}, "
          f"y {y.double().sum().item():.4f}, max |compiled - eager| {err:.4f}")


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""Case 13 of the GPU suite: PyTorch launches kerncap must capture (ATen elementwise,
ATen reduction, the cuBLAS GEMM behind `a @ b`). Each mode runs only its own op after
creating inputs, so the first launch matching the suite's pattern is the op itself.

    torch_app.py elementwise|reduce|gemm_fp16|gemm_bf16|all   run and print checksums
    torch_app.py names [MODE]                                  list the CUDA kernels MODE launches
"""
import hashlib
import sys

import torch


def checksum(name, t):
    raw = t.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes()
    print(f"checksum {name} {hashlib.sha256(raw).hexdigest()[:16]}", flush=True)


def inputs(shape, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, generator=g, device="cuda", dtype=dtype)


def elementwise():
    a, b, c = (inputs((1 << 22,), torch.float32, s) for s in (1, 2, 3))
    checksum("elementwise", a * b + c)  # a MulFunctor kernel, then an add kernel


def reduce():
    x = inputs((2048, 4096), torch.float32, 4)
    checksum("reduce", x.sum(dim=1))  # at::native::reduce_kernel


def gemm(dtype, name):
    a = inputs((2048, 2048), dtype, 5)
    b = inputs((2048, 2048), dtype, 6)
    checksum(name, a @ b)  # cuBLAS / cuBLASLt kernel (nvjet_* or sm90_xmma_* on Hopper)


MODES = {
    "elementwise": elementwise,
    "reduce": reduce,
    "gemm_fp16": lambda: gemm(torch.float16, "gemm_fp16"),
    "gemm_bf16": lambda: gemm(torch.bfloat16, "gemm_bf16"),
}


def names(mode):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for fn in ([MODES[mode]] if mode else MODES.values()):
            fn()
        torch.cuda.synchronize()
    seen = []
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA and ev.name not in seen:
            seen.append(ev.name)
    for n in seen:
        print("kernel", n)


def main(argv):
    if not torch.cuda.is_available():
        print("torch_app: no CUDA device visible to torch", file=sys.stderr)
        return 2
    mode = argv[1] if len(argv) > 1 else "all"
    if mode == "names":
        names(argv[2] if len(argv) > 2 else None)
    elif mode == "all":
        for fn in MODES.values():
            fn()
    elif mode in MODES:
        MODES[mode]()
    else:
        print(f"torch_app: unknown mode {mode!r}; one of {', '.join(MODES)}, all, names", file=sys.stderr)
        return 2
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""A small PyTorch model for tests/gpu/multitarget_e2e.sh: LayerNorm -> Linear (cuBLAS) ->
GELU -> Linear -> softmax -> sum, run for a few iterations on fixed inputs. Five kinds of
kernel, all deterministic (no atomics), so a run under `kerncap extract --continue` must
print the same checksum as a run without it.

    multitarget_model.py [ITERATIONS]   run and print "checksum model <hex>"
    multitarget_model.py names          list the CUDA kernels one iteration launches
"""
import hashlib
import sys

import torch


def build():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.LayerNorm(512),
        torch.nn.Linear(512, 1024),
        torch.nn.GELU(),
        torch.nn.Linear(1024, 256),
    ).cuda()
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn((256, 512), generator=g, device="cuda")
    return model, x


def step(model, x):
    y = torch.softmax(model(x), dim=-1)
    return y.sum(dim=-1)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "names":
        model, x = build()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            step(model, x)
            torch.cuda.synchronize()
        for e in prof.key_averages():
            print(e.key)
        return
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    model, x = build()
    h = hashlib.sha256()
    with torch.no_grad():
        for _ in range(iterations):
            out = step(model, x)
            x = x + 0.01 * out[:, None]  # the next iteration depends on this one
            h.update(out.cpu().numpy().tobytes())
    print(f"checksum model {h.hexdigest()[:16]}", flush=True)


if __name__ == "__main__":
    main()

"""A tensor-parallel MLP step for tests/gpu/multigpu_e2e.sh, run under torchrun.

Each rank holds half of the hidden layer (column-parallel W1, row-parallel W2):
y = all_reduce(gelu(x @ W1_r) @ W2_r). With --backend nccl each rank uses GPU LOCAL_RANK;
with --backend gloo (one GPU) both ranks share GPU 0 and the reduction goes through the CPU.
Prints "rank R device D ok" when y matches the unsplit MLP computed on the rank itself.
"""
import argparse
import os

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    device = torch.device("cuda", local if args.backend == "nccl" else 0)
    torch.cuda.set_device(device)
    dist.init_process_group(args.backend)
    g = torch.Generator().manual_seed(0)  # same weights on every rank
    d, h = 256, 1024
    w1 = torch.randn(d, h, generator=g) / d**0.5
    w2 = torch.randn(h, d, generator=g) / h**0.5
    x = torch.randn(64, d, generator=g)
    part = h // world
    w1_r = w1[:, rank * part:(rank + 1) * part].to(device)
    w2_r = w2[rank * part:(rank + 1) * part, :].to(device)
    xd = x.to(device)
    for _ in range(args.steps):
        y = torch.nn.functional.gelu(xd @ w1_r) @ w2_r
        if args.backend == "nccl":
            dist.all_reduce(y)
        else:
            yc = y.cpu()
            dist.all_reduce(yc)
            y = yc.to(device)
        torch.cuda.synchronize()
    ref = torch.nn.functional.gelu(xd @ w1.to(device)) @ w2.to(device)
    ok = torch.allclose(y, ref, atol=1e-3, rtol=1e-3)
    print(f"rank {rank} device {device.index} {'ok' if ok else 'WRONG'}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

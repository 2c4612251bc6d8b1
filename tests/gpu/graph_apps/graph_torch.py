"""A torch.cuda.CUDAGraph of several ops (mul -> exp -> add -> sum), replayed 4 times with
new inputs copied into its static input. The exp kernel (ATen's exp_kernel_cuda) is in the
middle: its input comes from the mul node. Prints one line per replay (tests/gpu/graph_e2e.sh).

With the argument `mixed`, each replay sits between eager ops on the same stream: sigmoid of the
static input before it (written back with copy_) and tanh of the graph's output c after it, so a
FROM..TO window sigmoid@2..tanh holds the CUDA graph launch (tests/gpu/window_e2e.sh graph_torch_mixed)."""
import sys

import torch

x = torch.linspace(-1.0, 1.0, 1 << 16, device="cuda")
static = x.clone()


MIXED = len(sys.argv) > 1 and sys.argv[1] == "mixed"
keep = {}


def step(inp):
    a = inp * 3.0
    b = torch.exp(a)
    c = b + inp
    keep["c"] = c
    return c.sum()


side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):  # warm-up: 3 direct launches of each kernel
        step(static)
torch.cuda.current_stream().wait_stream(side)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = step(static)

for it in range(4):
    static.copy_(x * (1.0 + 0.1 * it))
    if MIXED:
        static.copy_(torch.sigmoid(static))
    g.replay()
    if MIXED:
        t = torch.tanh(keep["c"])
    torch.cuda.synchronize()
    print(f"APP replay {it} {out.item():.6f}", flush=True)

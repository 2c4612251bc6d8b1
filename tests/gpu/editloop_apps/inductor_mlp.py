"""editloop_e2e.sh's torch.compile cases: a small MLP compiled with the mode given as argv[1]
("default" or "max-autotune-no-cudagraphs"), run as a user runs a script: Inductor's and
Triton's caches stay on (the suite points TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR at a
fresh folder and runs the script twice, cold then warm).
The model's first Triton kernel reads the input directly (the x * 2 + 1 prologue, fused into a
pointwise kernel or into max-autotune's matmul template), so the suite can tell the model's
own launch from Inductor's benchmark launches: only the model's has the input's address. The
inputs of both calls exist before compiling, so no benchmark tensor can take their address."""
import sys

import torch

BATCH, IN, HIDDEN, OUT = 512, 256, 1024, 256


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(IN, HIDDEN)
        self.fc2 = torch.nn.Linear(HIDDEN, OUT)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x * 2.0 + 1.0)))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "default"
    torch.manual_seed(0)
    model = MLP().cuda()
    xs = [torch.randn(BATCH, IN, device="cuda") * (i + 1) for i in range(2)]
    for i, x in enumerate(xs):
        print(f"MODEL input {i} {x.data_ptr()}")
    fn = torch.compile(model, mode=None if mode == "default" else mode)
    with torch.no_grad():
        for i, x in enumerate(xs):
            y = fn(x)
            torch.cuda.synchronize()
            ref = model(x)
            assert torch.allclose(y, ref, atol=1e-2, rtol=1e-2), (y - ref).abs().max()
            print(f"checksum inductor_mlp {mode} {i} {y.double().sum().item():.3f}")


if __name__ == "__main__":
    main()

"""torch.compile(mode="max-autotune-no-cudagraphs") of a small MLP for triton_e2e.sh's
triton_inductor_max_autotune case. Inductor benchmarks matmul templates and fusion choices
while it compiles, launching the GELU pointwise kernel many times before the model does; those
launches must fall inside the shim's ignore window, so that --dispatch 0 captures the model's
own first call. Caches are off so that the kernels are compiled (and recorded) in this run."""
import os

os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")

import torch  # noqa: E402

BATCH, IN, HIDDEN, OUT = 512, 256, 1024, 256


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(IN, HIDDEN)
        self.fc2 = torch.nn.Linear(HIDDEN, OUT)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


def main():
    torch.manual_seed(0)
    model = MLP().cuda()
    x = torch.randn(BATCH, IN, device="cuda")
    fn = torch.compile(model, mode="max-autotune-no-cudagraphs")
    print(f"MODEL xnumel {BATCH * HIDDEN}")
    with torch.no_grad():
        for i in range(2):  # the model's calls: the pointwise kernel runs once per call
            y = fn(x * (i + 1))
            torch.cuda.synchronize()
            ref = model(x * (i + 1))
            assert torch.allclose(y, ref, atol=1e-2, rtol=1e-2), (y - ref).abs().max()
            print(f"checksum autotuned_mlp {i} {y.double().sum().item():.3f}")


if __name__ == "__main__":
    main()

"""A small model under torch.compile (triton_e2e.sh case triton_inductor): Inductor generates
Triton kernels (fused pointwise, a reduction for the layer norm) into a temporary directory.
Caches are off so that the kernels are compiled (and recorded) in this run."""
import os

os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")

import torch  # noqa: E402


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(256, 512)
        self.norm = torch.nn.LayerNorm(512)
        self.fc2 = torch.nn.Linear(512, 128)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.fc1(x))
        return self.fc2(self.norm(h) * 1.5 + 0.25)


def main():
    torch.manual_seed(0)
    model = Small().cuda()
    x = torch.randn(4096, 256, device="cuda")
    fn = torch.compile(model)
    with torch.no_grad():
        for i in range(3):
            y = fn(x * (i + 1))
            torch.cuda.synchronize()
            ref = model(x * (i + 1))
            assert torch.allclose(y, ref, atol=1e-3, rtol=1e-3), (y - ref).abs().max()
            print(f"checksum compiled_model {i} {y.double().sum().item():.4f}")


if __name__ == "__main__":
    main()

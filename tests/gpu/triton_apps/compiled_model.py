"""torch.compile'd code for the triton_e2e.sh Inductor cases: Inductor generates Triton kernels
into a temporary directory. Caches are off so that the kernels are compiled (and recorded) in
this run.
  - `pointwise`, purely elementwise (no reduction, no matmul): Inductor emits one
    triton_poi_fused_* kernel (case triton_inductor_pointwise);
  - `Small`, a small model whose GELU + LayerNorm Inductor fuses into one triton_per_fused_*
    reduction kernel (case triton_inductor_reduction; the matmuls go to cuBLAS).
The two cases therefore capture different kernels."""
import os

os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")

import torch  # noqa: E402


def pointwise(x, y):
    return x * y + torch.sin(x)


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
    a = torch.randn(4096, 1024, device="cuda")
    b = torch.randn(4096, 1024, device="cuda")
    pw = torch.compile(pointwise)
    for i in range(3):
        z = pw(a * (i + 1), b)
        torch.cuda.synchronize()
        assert torch.allclose(z, pointwise(a * (i + 1), b), atol=1e-5, rtol=1e-5)
        print(f"checksum pointwise {i} {z.double().sum().item():.4f}")

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

"""A PyTorch process that holds far more memory than the kernel it launches can touch:
ZEROS_GIB of zeros and RANDOM_GIB of random data, then one elementwise multiply over 64 MiB
(the capture target, MulFunctor). Prints a checksum so --continue runs can be compared.

    capture_cost_torch.py ZEROS_GIB RANDOM_GIB [floats|bytes]

floats (default): the random data is torch.randn (fp32 normals; zstd level 1 gets ~1.08x).
bytes: uniformly random bytes, which no compressor shrinks (the incompressible case)."""
import sys

import torch

zeros_gib, random_gib = float(sys.argv[1]), float(sys.argv[2])
kind = sys.argv[3] if len(sys.argv) > 3 else "floats"
held = []
gib = 1 << 30
for _ in range(int(zeros_gib)):
    held.append(torch.zeros(gib // 4, device="cuda"))
for _ in range(int(random_gib)):
    if kind == "bytes":
        held.append(torch.randint(0, 256, (gib,), dtype=torch.uint8, device="cuda"))
    else:
        held.append(torch.randn(gib // 4, device="cuda"))
x = torch.randn(16 << 20, device="cuda")
torch.cuda.synchronize()
y = x * 3.0
torch.cuda.synchronize()
print(f"checksum {float(y.double().sum()):.6e}")

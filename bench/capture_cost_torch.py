"""A PyTorch process that holds far more memory than the kernel it launches can touch:
ZEROS_GIB of zeros and RANDOM_GIB of random data, then one elementwise multiply over 64 MiB
(the capture target, MulFunctor). Prints a checksum so --continue runs can be compared."""
import sys

import torch

zeros_gib, random_gib = float(sys.argv[1]), float(sys.argv[2])
held = []
gib = 1 << 30
for _ in range(int(zeros_gib)):
    held.append(torch.zeros(gib // 4, device="cuda"))
for _ in range(int(random_gib)):
    held.append(torch.randn(gib // 4, device="cuda"))
x = torch.randn(16 << 20, device="cuda")
torch.cuda.synchronize()
y = x * 3.0
torch.cuda.synchronize()
print(f"checksum {float(y.double().sum()):.6e}")

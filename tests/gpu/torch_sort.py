#!/usr/bin/env python3
"""A PyTorch sort large enough that CUB runs its onesweep radix sort (DeviceRadixSortOnesweepKernel):
each onesweep pass takes its tiles from device-side counters the pass before it zeroed, so a
replay that launches it twice without putting them back faults (tests/gpu/stateful_e2e.sh)."""
import hashlib

import torch

g = torch.Generator(device="cuda").manual_seed(7)
x = torch.randint(0, 1 << 30, (1 << 22,), generator=g, device="cuda", dtype=torch.int32)
values, indices = torch.sort(x)
torch.cuda.synchronize()
raw = values.cpu().numpy().tobytes()
print(f"checksum torch_sort {hashlib.sha256(raw).hexdigest()[:16]}", flush=True)

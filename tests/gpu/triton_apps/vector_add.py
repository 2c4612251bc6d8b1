"""A user-written @triton.jit kernel (triton_e2e.sh case triton_vector).
Launches add_kernel three times on different data; prints a checksum per launch."""
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n = out.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    return out


def main():
    torch.manual_seed(0)
    n = 98304 + 37  # not a multiple of the block: the mask matters
    for i in range(3):
        x = torch.rand(n, device="cuda")
        y = torch.rand(n, device="cuda") * (i + 1)
        out = add(x, y)
        torch.cuda.synchronize()
        assert torch.allclose(out, x + y)
        print(f"checksum add_kernel {i} {out.double().sum().item():.6f}")


if __name__ == "__main__":
    main()

"""A Triton kernel whose pointer argument points at further pointers (triton_e2e.sh case
triton_ptr_table): `table` holds the device addresses of R separate row buffers; program
(i, j) loads row j's address from the table and scales BLOCK_N of its elements into out."""
import torch
import triton
import triton.language as tl


@triton.jit
def gather_rows_kernel(table_ptr, out_ptr, N, scale, BLOCK_N: tl.constexpr):
    col = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    row = tl.program_id(1)
    src = tl.load(table_ptr + row).to(tl.pointer_type(tl.float32))
    mask = col < N
    x = tl.load(src + col, mask=mask)
    tl.store(out_ptr + row * N + col, x * scale, mask=mask)


def main():
    torch.manual_seed(0)
    R, N = 16, 5000
    rows = [torch.randn(N + 17 * r, device="cuda") for r in range(R)]  # separate allocations
    table = torch.tensor([t.data_ptr() for t in rows], dtype=torch.int64, device="cuda")
    for it in range(2):
        out = torch.empty(R, N, device="cuda")
        gather_rows_kernel[(triton.cdiv(N, 256), R)](table, out, N, 0.5 + it, BLOCK_N=256)
        torch.cuda.synchronize()
        ref = torch.stack([t[:N] for t in rows]) * (0.5 + it)
        assert torch.equal(out, ref)
        print(f"checksum ptr_table {it} {out.double().sum().item():.6f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch, cuBLAS and Triton kernels for bench/replay_fidelity.sh, each launched the way a
training or inference loop launches it: the same op on the same tensors, many times.

    fidelity_torch.py MODE [--repeat R]     (R iterations, default 20; prints "MODE ok <checksum>")

MODE: add_small mul_large sum_rows softmax layer_norm gemm_fp16 gemm_bf16 conv2d sort
triton_add (Triton; needs triton). Short kernels (2-20 µs, the replay fidelity bench's
short group): ln_gpt2 softmax_small sum_small gemm_small sort_small triton_small graph_add
(a CUDA graph's kernel node), cupy_raw and cupy_elementwise (CuPy: NVRTC-compiled kernels;
need cupy). Inputs are made before the loop, so the captured op's launches are the loop's (a
pattern with --dispatch 10 takes the 11th).

The context group: short kernels between other work, as real programs launch them (their inputs
may be evicted from L2 between two launches): gpt2_mlp (12 GPT-2 MLP blocks, fp32: layer norm
and cuBLAS GEMMs whose 226 MB of weights do not fit in L2), sort_mix (a sort between writes of a
256 MiB tensor), graph_mix (an add node in a CUDA graph with a 256 MiB node after it), cupy_mix
(a CuPy raw kernel between 256 MiB CuPy kernels), nvrtc_ptx (cuda-python: NVRTC PTX loaded with
cuModuleLoadData and JIT-compiled by the driver, between 256 MiB torch kernels).
"""
import sys

import torch


def inputs(shape, dtype=torch.float32, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, generator=g, device="cuda", dtype=dtype)


try:  # Triton is optional: only triton_add needs it
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
except ImportError:
    triton = None


def triton_add(n=1 << 20):
    if triton is None:
        raise SystemExit("fidelity_torch: triton_add needs triton")
    x, y = inputs((n,), seed=1), inputs((n,), seed=2)
    out = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), 1024),)

    def run():
        add_kernel[grid](x, y, out, x.numel(), BLOCK=1024)
        return out

    return run


def graph_add():
    """a + b captured once into a CUDA graph and replayed: the kernel runs as a graph node."""
    a, b = inputs((1 << 18,), seed=1), inputs((1 << 18,), seed=2)
    out = torch.empty_like(a)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as torch.cuda.graph asks
        torch.add(a, b, out=out)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        torch.add(a, b, out=out)

    def run():
        g.replay()
        return out

    return run


def cupy_op(mode):
    """CuPy's NVRTC-compiled kernels: a RawKernel saxpy and an ElementwiseKernel."""
    try:
        import cupy
    except ImportError:
        raise SystemExit(f"fidelity_torch: {mode} needs cupy")
    n = 1 << 18
    x = cupy.arange(n, dtype=cupy.float32) / n
    y = cupy.ones(n, dtype=cupy.float32)
    if mode == "cupy_raw":
        k = cupy.RawKernel(r"""
extern "C" __global__ void cupy_saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}""", "cupy_saxpy")

        def run():
            k(((n + 255) // 256,), (256,), (cupy.int32(n), cupy.float32(0.5), x, y))
            return torch.as_tensor(y, device="cuda")
    else:
        k = cupy.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * y + 1.0f", "cupy_fma")
        z = cupy.empty_like(x)

        def run():
            k(x, y, z)
            return torch.as_tensor(z, device="cuda")
    return run


def evictor():
    """A 256 MiB in-place add: more than four times an H200's L2, so it evicts what came before."""
    big = torch.zeros(1 << 26, device="cuda")
    return lambda: big.mul_(0.5)  # not an add: the add cases' pattern must not match it


def gpt2_mlp(blocks=12, tokens=64, dim=768):
    lns = [torch.nn.LayerNorm(dim, device="cuda") for _ in range(blocks)]
    fcs = [torch.nn.Linear(dim, 4 * dim, device="cuda") for _ in range(blocks)]
    projs = [torch.nn.Linear(4 * dim, dim, device="cuda") for _ in range(blocks)]
    x0 = inputs((tokens, dim), seed=15)

    def run():
        x = x0
        for ln, fc, proj in zip(lns, fcs, projs):
            x = x + proj(torch.nn.functional.gelu(fc(ln(x))))
        return x

    return run


def nvrtc_ptx():
    """A saxpy compiled by NVRTC to PTX and loaded with cuModuleLoadData (the driver JITs it)."""
    from cuda.bindings import driver, nvrtc

    def ok(r):
        err = r[0]
        if int(err) != 0:
            raise SystemExit(f"fidelity_torch: nvrtc_ptx: {err}")
        return r[1:] if len(r) > 2 else (r[1] if len(r) == 2 else None)

    src = b"""extern "C" __global__ void nvrtc_saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}"""
    prog = ok(nvrtc.nvrtcCreateProgram(src, b"saxpy.cu", 0, [], []))
    major, minor = torch.cuda.get_device_capability()
    opts = [f"--gpu-architecture=compute_{major}{minor}".encode()]
    ok(nvrtc.nvrtcCompileProgram(prog, len(opts), opts))
    size = ok(nvrtc.nvrtcGetPTXSize(prog))
    ptx = b" " * size
    ok(nvrtc.nvrtcGetPTX(prog, ptx))
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # the primary context, current
    module = ok(driver.cuModuleLoadData(ptx))
    fn = ok(driver.cuModuleGetFunction(module, b"nvrtc_saxpy"))
    n = 1 << 18
    x, y = inputs((n,), seed=16), torch.ones(n, device="cuda")
    import ctypes

    args = (ctypes.c_int(n), ctypes.c_float(0.5), ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(y.data_ptr()))
    params = (ctypes.c_void_p * 4)(*[ctypes.addressof(a) for a in args])
    stream = torch.cuda.current_stream().cuda_stream

    def run():
        ok(driver.cuLaunchKernel(fn, (n + 255) // 256, 1, 1, 256, 1, 1, 0, driver.CUstream(stream),
                                 ctypes.addressof(params), 0))
        return y

    run.keep = (args, params, module)
    return run


def with_eviction(op):
    """op, then a 256 MiB write: the next launch of op finds its inputs evicted from L2."""
    evict = evictor()

    def run():
        out = op()
        evict()
        return out

    return run


def make(mode):
    if mode == "add_small":  # ~3 µs: elementwise on 256K floats
        a, b = inputs((1 << 18,), seed=1), inputs((1 << 18,), seed=2)
        return lambda: a + b
    if mode == "mul_large":
        a, b = inputs((1 << 25,), seed=1), inputs((1 << 25,), seed=2)
        return lambda: a * b
    if mode == "sum_rows":
        x = inputs((2048, 4096), seed=4)
        return lambda: x.sum(dim=1)
    if mode == "softmax":
        x = inputs((4096, 1024), seed=5)
        return lambda: torch.softmax(x, dim=-1)
    if mode == "layer_norm":
        x = inputs((8192, 1024), seed=6)
        ln = torch.nn.LayerNorm(1024, device="cuda")
        return lambda: ln(x)
    if mode in ("gemm_fp16", "gemm_bf16"):
        dt = torch.float16 if mode == "gemm_fp16" else torch.bfloat16
        a, b = inputs((2048, 2048), dt, 7), inputs((2048, 2048), dt, 8)
        return lambda: a @ b
    if mode == "conv2d":
        x = inputs((32, 64, 56, 56), torch.float16, 9)
        conv = torch.nn.Conv2d(64, 64, 3, padding=1, device="cuda", dtype=torch.float16)
        return lambda: conv(x)
    if mode == "sort":
        x = torch.randint(0, 1 << 30, (1 << 22,), device="cuda", dtype=torch.int32)
        return lambda: torch.sort(x)[0]
    if mode == "triton_add":
        return triton_add()
    if mode == "triton_small":
        return triton_add(1 << 18)
    if mode == "ln_gpt2":  # one GPT-2 layer norm over 64 tokens
        x = inputs((64, 768), seed=10)
        ln = torch.nn.LayerNorm(768, device="cuda")
        return lambda: ln(x)
    if mode == "softmax_small":
        x = inputs((256, 1024), seed=11)
        return lambda: torch.softmax(x, dim=-1)
    if mode == "sum_small":
        x = inputs((256, 1024), seed=12)
        return lambda: x.sum(dim=1)
    if mode == "gemm_small":
        a, b = inputs((256, 256), torch.float16, 13), inputs((256, 256), torch.float16, 14)
        return lambda: a @ b
    if mode == "sort_small":
        x = torch.randint(0, 1 << 30, (1 << 16,), device="cuda", dtype=torch.int32)
        return lambda: torch.sort(x)[0]
    if mode == "graph_add":
        return graph_add()
    if mode in ("cupy_raw", "cupy_elementwise"):
        return cupy_op(mode)
    if mode == "gpt2_mlp":
        return gpt2_mlp()
    if mode == "sort_mix":
        return with_eviction(make("sort_small"))
    if mode == "graph_mix":
        return with_eviction(graph_add())
    if mode == "cupy_mix":
        return with_eviction(cupy_op("cupy_raw"))
    if mode == "nvrtc_ptx":
        return with_eviction(nvrtc_ptx())
    raise SystemExit(f"fidelity_torch: unknown mode {mode!r}")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    mode = argv[1]
    repeat = int(argv[argv.index("--repeat") + 1]) if "--repeat" in argv else 20
    op = make(mode)
    torch.cuda.synchronize()
    with torch.no_grad():
        for _ in range(repeat):
            out = op()
    torch.cuda.synchronize()
    print(f"{mode} ok {float(out.float().sum()):.6g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

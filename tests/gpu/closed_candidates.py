#!/usr/bin/env python3
"""Writes candidates for a kernel whose source we do not have (an ATen kernel, cuBLAS's GEMM):
hand-written replacements of the operation the application ran, compiled by nvcc and given the
captured kernel's name and parameter layout (noop_variant.py's entry), so that the replay
launches them in its place exactly as it would launch an edit of the original.

A replay runs at the application's addresses, so a replacement reads and writes the operands
where torch_loop.py (KC_LOOP_TENSORS) says they were; it ignores its parameters. Each body
loops over every element with all the threads of the captured grid, whatever its shape.

    closed_candidates.py INFO.json TENSORS.json WORKDIR SM [--nvcc NVCC] [--ptxas PTXAS]

writes WORKDIR/<op>.<kind>.cubin for every kind below and OUT-style compare.json
(WORKDIR/compare.json: the output span typed, since the kernel's signature carries no types),
and prints one "kind=path:EXPECTED" per line. Kinds: correct (the operation, rounded the way a
different summation order rounds it), wrong (+1 everywhere), nan (one NaN), ulp (a relative
change inside the kerncap.toml tolerance the judge suite sets). Exit 2 with a message when
the operation is not one it knows.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from noop_variant import entry_ptx  # noqa: E402

PRELUDE = r"""
#include <cuda_fp16.h>
#include <math_constants.h>
__device__ __forceinline__ size_t kc_thread() {
  const size_t block = ((size_t)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  return block * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x +
         threadIdx.x;
}
__device__ __forceinline__ size_t kc_threads() {
  return (size_t)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z;
}
"""

# EDIT(v, i): the candidate's change to element i's value v (a float).
EDITS = {
    "correct": ("(v)", "PASS"),
    "wrong": ("((v) + 1.0f)", "FAIL"),
    "nan": ("((i) == 0 ? CUDART_NAN_F : (v))", "FAIL"),
    "ulp": ("((v) * ULP_SCALE)", "PASS"),
}

BODIES = {
    # out[i] = a[i] * b[i] (fp32): what torch.mul computes, one element per loop step.
    "mul": r"""
extern "C" __global__ void kc_body() {
  const float* a = (const float*)A_PTR; const float* b = (const float*)B_PTR; float* out = (float*)OUT_PTR;
  for (size_t i = kc_thread(); i < N_ELEMS; i += kc_threads()) { const float v = a[i] * b[i]; out[i] = EDIT(v, i); }
}
""",
    # out = a @ b, row-major fp16 operands, fp32 accumulation, one output element per step.
    "gemm": r"""
extern "C" __global__ void kc_body() {
  const __half* a = (const __half*)A_PTR; const __half* b = (const __half*)B_PTR; __half* out = (__half*)OUT_PTR;
  for (size_t i = kc_thread(); i < (size_t)M_ROWS * N_COLS; i += kc_threads()) {
    const size_t r = i / N_COLS, c = i % N_COLS;
    float v = 0.0f;
    for (size_t k = 0; k < K_DEPTH; ++k) v = fmaf(__half2float(a[r * K_DEPTH + k]), __half2float(b[k * N_COLS + c]), v);
    out[i] = __float2half_rn(EDIT(v, i));
  }
}
""",
}


def operation(tensors):
    """(op, #defines, output span dtype, ulp scale) from the operands KC_LOOP_TENSORS wrote."""
    mode, t = tensors["mode"], tensors["tensors"]
    ptrs = {f"{n.upper()}_PTR": f"0x{t[n]['ptr']:x}ull" for n in ("a", "b", "out")}
    if mode == "mul" and all(t[n]["dtype"] == "float32" for n in t):
        n = 1
        for d in t["out"]["shape"]:
            n *= d
        return "mul", {**ptrs, "N_ELEMS": f"{n}ull"}, ("fp32", 4 * n), "1.0001f"
    if mode == "gemm_out" and all(t[n]["dtype"] == "float16" for n in t):
        (m, k), (k2, n) = t["a"]["shape"], t["b"]["shape"]
        if k != k2 or t["out"]["shape"] != [m, n]:
            sys.exit(f"closed_candidates: shapes {t['a']['shape']} @ {t['b']['shape']} -> {t['out']['shape']} do not chain")
        return "gemm", {**ptrs, "M_ROWS": m, "N_COLS": n, "K_DEPTH": k}, ("fp16", 2 * m * n), "1.002f"
    print(f"closed_candidates: no replacement written for mode {mode!r} with these dtypes", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("info")
    ap.add_argument("tensors")
    ap.add_argument("work")
    ap.add_argument("sm")
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--ptxas", default="ptxas")
    a = ap.parse_args()
    info = json.load(open(a.info))
    tensors = json.load(open(a.tensors))
    op, defines, (dtype, size), ulp = operation(tensors)
    os.makedirs(a.work, exist_ok=True)
    for kind, (edit, expected) in EDITS.items():
        src, body_ptx = (os.path.join(a.work, f"{op}.{kind}.body.{ext}") for ext in ("cu", "ptx"))
        with open(src, "w") as f:
            f.writelines(f"#define {k} {v}\n" for k, v in {**defines, "EDIT(v, i)": edit, "ULP_SCALE": ulp}.items())
            f.write(PRELUDE + BODIES[op])
        subprocess.run([a.nvcc, "-ptx", f"-arch=sm_{a.sm}", src, "-o", body_ptx], check=True)
        ptx = os.path.join(a.work, f"{op}.{kind}.ptx")
        with open(ptx, "w") as f:
            f.write(entry_ptx(info, open(body_ptx).read()))
        cubin = os.path.join(a.work, f"{op}.{kind}.cubin")
        subprocess.run([a.ptxas, f"-arch=sm_{a.sm}", ptx, "-o", cubin], check=True)
        print(f"{kind}={cubin}:{expected}")
    with open(os.path.join(a.work, "compare.json"), "w") as f:
        json.dump({"dtype": "bytes", "spans": [{"base": f"0x{tensors['tensors']['out']['ptr']:x}", "size": size,
                                                "dtype": dtype}]}, f)


if __name__ == "__main__":
    main()

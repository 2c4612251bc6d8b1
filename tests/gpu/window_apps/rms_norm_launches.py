#!/usr/bin/env python3
"""Writes the launches.json of a fused RMSNorm (rms_norm_fused.cu) standing in for the eight
kernels of Hugging Face's eager LlamaRMSNorm inside a captured window (`kerncap window extract`
over a decoder layer): to float, pow, mean, + eps, rsqrt, x * rsqrt, to bf16, weight * x. The
run is found by its kernel names (the mean's reduce kernel and its neighbours); the fused
kernel's pointers are the capture's regions at the offsets the kernels' parameters point to
(each 8-byte word of a parameter buffer is looked up among the regions): x is what the "to
float" copy reads; of the weight multiply's inputs besides the bf16 copy's output, the result is
the one the next kernel of the window (a gate GEMM) reads, the weight the other; when the window
ends with the norm, they are data[0] and data[1] of the multiply's (out, weight, x).

    rms_norm_launches.py OUT CUBIN KERNEL LAUNCHES_JSON [--hidden 512] [--eps 1e-6]
Prints the --replace spec (FROM..TO=LAUNCHES_JSON) and what it found, as JSON; exits 1 naming
what it could not find.
"""
import argparse
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import window_pointers  # noqa: E402

# The eight kernels, in order, by a word of their demangled names.
SHAPE = ("direct_copy", "pow_tensor_scalar", "MeanOps", "add", "rsqrt", "MulFunctor", "bfloat16_copy", "MulFunctor")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("cubin")
    ap.add_argument("kernel")
    ap.add_argument("dest")
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--eps", type=float, default=1e-6)
    a = ap.parse_args()
    cap = os.path.join(a.out, "capture")
    ops = json.load(open(os.path.join(cap, "window.json")))["ops"]
    regions = window_pointers.regions_of(cap)

    def name(i):
        # window.json keeps the mangled name; Itanium mangling keeps the identifiers searched for.
        return (ops[i].get("name") or ops[i].get("mangled", "")) if ops[i].get("kind") == "kernel" else ""

    def pointers(i):
        return window_pointers.pointers(cap, regions, i)

    first = next((i for i in range(len(ops) - len(SHAPE) + 1)
                  if all(word in name(i + k) for k, word in enumerate(SHAPE))), None)
    if first is None:
        sys.exit("no run of the eight RMSNorm kernels (%s) in the window: %s" %
                 (", ".join(SHAPE), "; ".join(name(i)[-60:] or ops[i].get("kind", "?") for i in range(len(ops)))))
    last = first + len(SHAPE) - 1
    raw, cp = pointers(first)
    _, to16 = pointers(last - 1)
    _, mul = pointers(last)
    if len(cp) < 2 or len(to16) < 1 or len(mul) < 3:
        sys.exit("expected 2 pointers in the copy's parameters, 1 in the bf16 copy's and 3 in the multiply's: %s / %s / %s" % (cp, to16, mul))
    x = cp[1]                      # data[1]: what the copy to float reads
    y16 = to16[0][2]               # the bf16 copy's output (its data[0]), the multiply's input
    # The multiply's closure does not keep data[] first, and a pointer can appear twice: take its
    # distinct pointers. Besides the bf16 copy's output there are the weight and the result; the
    # result is what the kernel after the norm (the gate GEMM) reads, the weight is not.
    distinct = []
    for p in mul:
        if p[2] not in [q[2] for q in distinct]:
            distinct.append(p)
    others = [p for p in distinct if p[2] != y16]
    if len(others) != 2 or len(distinct) != 3:
        sys.exit("the weight multiply does not read the bf16 copy's output and two other tensors: %s (copy out %#x)" % (mul, y16))
    after = {q[2] for q in pointers(last + 1)[1]} if last + 1 < len(ops) and name(last + 1) else set()
    read_next = [p for p in others if p[2] in after]
    if len(read_next) == 1:
        m, how = read_next[0], "the one op %d reads" % (last + 1)
    else:
        # The next kernel may hold its pointers in a TMA descriptor, not as plain words: then
        # data[] as `weight * x` lays it out, (out, weight, x), read back from x's last place.
        at = max(i for i, p in enumerate(mul) if p[2] == y16)
        if at < 2 or {mul[at - 1][2], mul[at - 2][2]} != {p[2] for p in others}:
            sys.exit("cannot tell the norm's result from its weight: op %d reads %d of %s, and the multiply's "
                     "pointers %s are not laid out as (out, weight, x)" % (last + 1, len(read_next), others, mul))
        m, how = mul[at - 2], "data[0] of (out, weight, x)"
    w = [p for p in others if p[2] != m[2]][0]
    n = struct.unpack_from("<i", raw, 0)[0]
    if n <= 0 or n % a.hidden:
        sys.exit("the copy's element count %d is not a multiple of --hidden %d" % (n, a.hidden))
    rows = n // a.hidden
    launch = {"image": os.path.abspath(a.cubin), "kernel": a.kernel, "grid": [rows, 1, 1], "block": [128, 1, 1],
              "args": [{"region": x[0], "offset": x[1]}, {"region": w[0], "offset": w[1]},
                       {"region": m[0], "offset": m[1]}, {"i32": a.hidden}, {"f32": a.eps}]}
    json.dump({"launches": [launch]}, open(a.dest, "w"), indent=1)
    print(json.dumps({"replace": "%d..%d=%s" % (first, last, a.dest), "rows": rows, "hidden": a.hidden,
                      "x": x[:2], "weight": w[:2], "m": m[:2], "m_found_as": how, "replaced": last - first + 1}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the launches.json of a fused SiLU·multiply (silu_mul.cu) for a window captured from
silu to PyTorch's mul (`kerncap window extract --window 'silu@N..MulFunctor'`): the window's
first operation is silu (out t, in g), its last the mul (out m, ins t and u), and whatever ran
between (up_proj's GEMM) is kept as captured ({"op": N}). The fused kernel's pointers are the
capture's regions at the offsets the two kernels' parameters point to (each 8-byte word of the
parameter buffers is looked up among the regions); n is the silu kernel's element count (its
first parameter).

In the eager program PyTorch frees g as soon as silu has read it, and the up GEMM's output u
takes the same block: then g is gone when the fused kernel runs, and the replacement first
copies g to where t would have gone (stash_bf16; t, the intermediate, is never computed), runs
the GEMM as captured, then the fused kernel from that copy.

    silu_mul_launches.py OUT CUBIN KERNEL LAUNCHES_JSON
Prints the --replace spec (FROM..TO=LAUNCHES_JSON) and what it found, as JSON.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import window_pointers  # noqa: E402


def main(argv):
    out, cubin, kernel, dest = argv[1:5]
    cap = os.path.join(out, "capture")
    w = json.load(open(os.path.join(cap, "window.json")))
    regions = window_pointers.regions_of(cap)

    def pointers(i):
        return window_pointers.pointers(cap, regions, i)

    ops = w["ops"]
    first, last = 0, len(ops) - 1
    if "silu" not in ops[first].get("mangled", "") or "MulFunctor" not in ops[last].get("mangled", ""):
        sys.exit("the window must run from the silu kernel to the mul kernel: %s .. %s" %
                 (ops[first].get("mangled"), ops[last].get("mangled")))
    raw, sp = pointers(first)
    _, mp = pointers(last)
    if len(sp) < 2 or len(mp) < 3:
        sys.exit("expected 2 pointers in silu's parameters and 3 in mul's: %s / %s" % (sp, mp))
    t, g = sp[0], sp[1]
    mo = mp[0]
    ins = [p for p in mp[1:3] if p[2] != t[2]]
    if len(ins) != 1:
        sys.exit("the mul does not read silu's output once: %s (t %s)" % (mp, t))
    u = ins[0]
    n = struct.unpack_from("<i", raw, 0)[0]
    grid = [min((n + 255) // 256, 65535), 1, 1]
    image = os.path.abspath(cubin)
    launches = []
    src = g
    aliased = u[2] <= g[2] < u[2] + 2 * n or g[2] <= u[2] < g[2] + 2 * n
    if aliased:  # the GEMM overwrites g: keep it where t would have gone
        launches.append({"image": image, "kernel": "stash_bf16", "grid": grid, "block": [256, 1, 1],
                         "args": [{"region": g[0], "offset": g[1]}, {"region": t[0], "offset": t[1]}, {"i64": n}]})
        src = t
    launches += [{"op": i} for i in range(first + 1, last)]
    launches.append({"image": image, "kernel": kernel, "grid": grid, "block": [256, 1, 1],
                     "args": [{"region": src[0], "offset": src[1]}, {"region": u[0], "offset": u[1]},
                              {"region": mo[0], "offset": mo[1]}, {"i64": n}]})
    json.dump({"launches": launches}, open(dest, "w"), indent=1)
    print(json.dumps({"replace": "%d..%d=%s" % (first, last, dest), "n": n, "g": g[:2], "u": u[:2], "t": t[:2],
                      "m": mo[:2], "kept": [i for i in range(first + 1, last)],
                      "g_reused_by_u": aliased}))


if __name__ == "__main__":
    main(sys.argv)

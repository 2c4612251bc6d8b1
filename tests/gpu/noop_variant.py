#!/usr/bin/env python3
"""Writes the PTX of a no-op variant of a captured kernel: an entry with the captured
kernel's (mangled) name and the same parameter layout, whose body only returns.

    kerncap info --json OUT | noop_variant.py > noop.ptx && ptxas -arch=sm_90 noop.ptx -o noop.cubin
    kerncap info --json OUT | noop_variant.py --fault > fault.ptx   (thread 0 stores to address 8)

Such a variant is what a broken edit looks like to validation (it writes nothing). Any
kernel can be given one, whatever its source language (CUDA C++, cuBLAS, Triton), because
only its name and the parameter buffer's layout matter to the launch. closed_candidates.py
uses entry_ptx() to give hand-written replacements the same entry.
"""
import json
import sys


def param_decls(params):
    """One .b8 array per captured slot, aligned so that PTX places it at the captured offset.
    Exit 3 when the captured layout has a gap that no alignment explains: validate compares
    slot lists, so no no-op variant can be written for it."""
    slots = params.get("slots") or []
    if not slots:  # parameters passed as one buffer (launch `extra`): one array of that size
        slots = [{"offset": 0, "size": params["size"]}] if params.get("size") else []
    decls, end = [], 0
    for i, s in enumerate(slots):
        off, size = int(s["offset"]), int(s["size"])
        if off < end:
            sys.exit(f"noop_variant: slot {i} at offset {off} overlaps the previous one (ends at {end})")
        align = next((a for a in (1, 2, 4, 8, 16, 32, 64, 128) if off % a == 0 and (end + a - 1) // a * a == off), None)
        if align is None:  # e.g. cuDNN's runtime-generated SDPA kernel (slots at 112 after one ending at 80)
            sys.stderr.write(f"noop_variant: slot {i} at offset {off} leaves a gap after the previous end {end}: "
                             "no PTX signature has this layout\n")
            sys.exit(3)
        decls.append(f"  .param .align {align} .b8 p{i}[{max(size, 1)}]")
        end = off + size
    return decls


def header(m):
    """The PTX entry line for the captured kernel: its name, then its parameter declarations."""
    return f".visible .entry {m['kernel']['mangled']}(\n" + ",\n".join(param_decls(m["params"])) + "\n)"


def entry_ptx(m, body_ptx):
    """body_ptx (nvcc -ptx of an `extern "C" __global__ void kc_body()` that ignores its
    parameters) with its entry given the captured name and parameter layout."""
    line = ".visible .entry kc_body()"
    if body_ptx.count(line) != 1:
        sys.exit(f"noop_variant: the body PTX must hold exactly one '{line}'")
    return body_ptx.replace(line, header(m))


def main():
    m = json.load(sys.stdin)
    arch = "sm_{}{}".format(*m["device"]["cc"])
    print(".version 8.1")  # 8.1: parameter space beyond 4352 B (cuDNN, CUTLASS kernels), up to 32764 B
    print(f".target {arch}")
    print(".address_size 64")
    print(header(m))
    if "--fault" in sys.argv[1:]:  # an illegal address: what a candidate with a bad index does
        print("{\n  .reg .b64 %rd<2>;\n  .reg .b32 %r<2>;\n  .reg .pred %p<2>;\n"
              "  mov.u32 %r1, %tid.x;\n  setp.ne.u32 %p1, %r1, 0;\n  @%p1 bra DONE;\n"
              "  mov.u64 %rd1, 8;\n  st.volatile.global.u32 [%rd1], %r1;\nDONE:\n  ret;\n}")
    else:
        print("{\n  ret;\n}")


if __name__ == "__main__":
    main()

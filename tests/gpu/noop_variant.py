#!/usr/bin/env python3
"""Writes the PTX of a no-op variant of a captured kernel: an entry with the captured
kernel's (mangled) name and the same parameter layout, whose body only returns.

    kerncap info --json OUT | noop_variant.py > noop.ptx && ptxas -arch=sm_90 noop.ptx -o noop.cubin
    kerncap info --json OUT | noop_variant.py --fault > fault.ptx   (thread 0 stores to address 8)

Such a variant is what a broken edit looks like to validation (it writes nothing). Any
kernel can be given one, whatever its source language (CUDA C++, cuBLAS, Triton), because
only its name and the parameter buffer's layout matter to the launch.
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


def main():
    m = json.load(sys.stdin)
    dev = m["device"]
    name = m["kernel"]["mangled"]
    arch = "sm_{}{}".format(*dev["cc"])
    decls = param_decls(m["params"])
    print(".version 8.1")  # 8.1: parameter space beyond 4352 B (cuDNN, CUTLASS kernels), up to 32764 B
    print(f".target {arch}")
    print(".address_size 64")
    print(f".visible .entry {name}(")
    print(",\n".join(decls))
    if "--fault" in sys.argv[1:]:  # an illegal address: what a candidate with a bad index does
        print(")\n{\n  .reg .b64 %rd<2>;\n  .reg .b32 %r<2>;\n  .reg .pred %p<2>;\n"
              "  mov.u32 %r1, %tid.x;\n  setp.ne.u32 %p1, %r1, 0;\n  @%p1 bra DONE;\n"
              "  mov.u64 %rd1, 8;\n  st.volatile.global.u32 [%rd1], %r1;\nDONE:\n  ret;\n}")
    else:
        print(")\n{\n  ret;\n}")


if __name__ == "__main__":
    main()

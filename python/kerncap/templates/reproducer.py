#!/usr/bin/env python3
"""Reproducer of one captured launch of the Triton kernel @KERNEL@ (written by kerncap).

    python3 reproducer.py            restore the captured memory, launch kernel_variant.py's kernel
                                     with the pinned configuration and the captured grid, compare
                                     with the application's result, time it, write candidate.cubin
    python3 reproducer.py --json     the same, with the result as one JSON object on stdout
    python3 reproducer.py --help     all options (iterations, tolerances, ...)

Edit kernel_variant.py (the kernel, CONFIG, grid) and run it again. Exit code 0 PASS, 1 FAIL,
2 bad input or a variant that does not compile, 3 device error, 70 internal error.
Memory, comparison and timing are kerncap's replay engine (kerncap_repro/libkerncap_replay.so):
`kerncap validate @OUT@` gives the same verdict for candidate.cubin, from the same
compare.json (the element type of each pointer argument's memory); `kerncap replay @OUT@`
times the captured kernel.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from kerncap_repro import runtime  # noqa: E402  (copied next to this file by kerncap, with the engine)

if __name__ == "__main__":
    sys.exit(runtime.main(HERE, sys.argv[1:]))

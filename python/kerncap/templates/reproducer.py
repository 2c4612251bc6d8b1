#!/usr/bin/env python3
"""Reproducer of one captured launch of the Triton kernel @KERNEL@ (written by kerncap).

    python3 reproducer.py            restore the captured memory, launch kernel_variant.py's kernel
                                     with the pinned configuration and the captured grid, compare
                                     with the application's result, time it, write candidate.cubin
    python3 reproducer.py --json     the same, with the result as one JSON object on stdout
    python3 reproducer.py --help     all options (tolerances, iterations, ...)

Edit kernel_variant.py (the kernel, CONFIG, grid) and run it again. Exit code 0 PASS, 1 FAIL,
2 bad input or a variant that does not compile, 3 device error. `kerncap validate @OUT@`
validates candidate.cubin with kerncap's own replay engine; `kerncap replay @OUT@` times the
captured kernel.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from kerncap_repro import runtime  # noqa: E402  (copied next to this file by kerncap)

if __name__ == "__main__":
    sys.exit(runtime.main(HERE, sys.argv[1:]))

"""The `kerncap` and `kerncap-replay` commands of the pip-installed package.

`pip install .` puts the C++ programs inside this package (kerncap/bin, with their libraries in
kerncap/lib: each program finds libkerncap.so, libcupti, the sanitizer and the engine at
bin/../lib, as in the build tree). A wheel cannot put a program there and on PATH at once, so
the commands pip writes to the environment's bin/ exec these programs: the process is then
the C++ program itself (its /proc/self/exe, exit code and signals are the program's).
"""
from __future__ import annotations

import os
import sys
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))


def candidates(name: str) -> List[str]:
    """Where the program `name` is looked for, in order: beside this file (an installed
    package); in kerncap/bin of every sys.path entry (an editable install keeps its Python files
    in the source tree and the built programs in site-packages); the source tree's build/bin."""
    out = [os.path.join(HERE, "bin", name)]
    for entry in sys.path:
        p = os.path.join(entry or ".", "kerncap", "bin", name)
        if p not in out:
            out.append(p)
    out.append(os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "bin", name))
    return out


def program(name: str) -> Optional[str]:
    for p in candidates(name):
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.abspath(p)
    return None


def _exec(name: str) -> int:
    path = program(name)
    if path is None:
        sys.stderr.write(f"{name}: error: the {name} program is not installed (looked in "
                         f"{', '.join(candidates(name))}); reinstall the package (pip install .)\n")
        return 2
    sys.stdout.flush()
    os.execv(path, [name] + sys.argv[1:])
    return 70  # not reached: execv replaces this process or raises


def kerncap() -> int:
    return _exec("kerncap")


def kerncap_replay() -> int:
    return _exec("kerncap-replay")

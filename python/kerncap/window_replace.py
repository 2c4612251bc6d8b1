"""`kerncap window validate DIR --replace-py FROM..TO=MODULE:FUNCTION` (the CLI execs this module,
src/cli/cmd_window.cpp): operations FROM..TO of the window replaced by a Python callable
FUNCTION(window, stream) (kerncap.window), validated by the one C++ judge through the engine's C
ABI. MODULE is an importable module name or a path to a .py file. Prints what `kerncap window
validate` prints (its text, or --json's document); exit 0 PASS, 1 FAIL, the engine's codes
otherwise (2 bad input, 3 device, 70 internal)."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import re
import sys
from typing import Any, Callable, List, Optional, Tuple

from . import engine
from .window import Window


def parse_spec(spec: str) -> Tuple[int, int, str, str]:
    """FROM..TO=MODULE:FUNCTION -> (from, to, module, function)."""
    m = re.fullmatch(r"(\d+)\.\.(\d+)=(.+):([A-Za-z_][A-Za-z0-9_.]*)", spec)
    if not m:
        raise engine.EngineError(f"--replace-py '{spec}': expected FROM..TO=MODULE:FUNCTION (e.g. "
                                 "1..2=fused.py:silu_gemm)", 2)
    return int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)


def load_callable(module: str, function: str) -> Callable[..., Any]:
    """FUNCTION of MODULE (a module name, or a .py file's path)."""
    if module.endswith(".py") or os.sep in module:
        path = os.path.abspath(module)
        if not os.path.isfile(path):
            raise engine.EngineError(f"--replace-py: no such file {module}", 2)
        name = "kerncap_replacement_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    else:
        mod = importlib.import_module(module)
    obj: Any = mod
    for part in function.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise engine.EngineError(f"--replace-py: {module} has no {function}", 2)
    if not callable(obj):
        raise engine.EngineError(f"--replace-py: {module}:{function} is not callable", 2)
    return obj


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="kerncap window validate --replace-py",
                                 description="Validate a window with a run of operations replaced by a Python callable")
    ap.add_argument("dir")
    ap.add_argument("--replace", required=True, help="FROM..TO=MODULE:FUNCTION")
    ap.add_argument("--live-out", default="all")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--swap", action="append", default=[], help="INDEX=FILE")
    ap.add_argument("--dtype")
    ap.add_argument("--atol", type=float)
    ap.add_argument("--rtol", type=float)
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--weak", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    try:
        first, last, module, function = parse_spec(a.replace)
        swaps = {}
        for s in a.swap:
            k, sep, v = s.partition("=")
            if not sep or not k.isdigit() or not v:
                raise engine.EngineError(f"--swap '{s}': expected INDEX=FILE", 2)
            swaps[int(k)] = v
        # The window first: its addresses are reserved before the callable's module can allocate.
        with Window(a.dir, progress=not (a.quiet or a.json)) as w:
            fn = load_callable(module, function)
            doc = w.validate(fn, (first, last), name=f"the Python callable {module}:{function}",
                             live_out=a.live_out, swaps=swaps, weak=a.weak, warmup=a.warmup,
                             iterations=a.iterations, text=not a.json, dtype=a.dtype, atol=a.atol, rtol=a.rtol,
                             exact=a.exact or None)
    except engine.EngineError as e:
        print(f"kerncap: error: {e}", file=sys.stderr)
        return e.exit_code
    if a.json:
        print(json.dumps(doc, indent=2))
    else:
        for n in doc.get("notes", []):
            print(f"kerncap: note: {n}", file=sys.stderr)
        if doc.get("foreign_ops"):
            print(f"kerncap: warning: {doc['foreign_ops']} operation(s) ran in the application during the window but "
                  "are not part of it; what they wrote is in AFTER but no replay makes those writes", file=sys.stderr)
        sys.stdout.write(doc.get("text", doc.get("line", "") + "\n"))
    return 0 if doc.get("result") == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())

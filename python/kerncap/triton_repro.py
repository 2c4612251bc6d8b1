"""Turns a capture of a Triton kernel into an editable Python reproducer.

    python3 -m kerncap.triton_repro OUT

Reads OUT/capture (the launch) and OUT/triton/records (what the shim saw compile), finds the
record of the captured kernel (by the cubin's sha256), and writes:
  OUT/triton/name_map.json   every compiled Triton kernel by name, which one was captured, the
                             autotuner's choice and its benchmarks (format kerncap-triton-map 1)
  OUT/triton/launch.json     the launch plan: arguments <-> parameter slots, constexprs, options
  OUT/kernel_variant.py      the kernel's source (from the recorded snapshot), CONFIG, grid()
  OUT/compare.json           the element type of the memory behind each pointer argument: how
                             the replay engine compares (reproducer.py and `kerncap validate`)
  OUT/reproducer.py          launches the variant on the captured inputs; the engine compares
  OUT/kerncap_repro/         the reproducer's runtime and a copy of the replay engine
                             (libkerncap_replay.so), so OUT works without kerncap
The capture is read through the replay engine (engine.capture_info), so the library must be
built (or named by the variable engine.ENV_LIBRARY names).
Exit codes: 0 written, 2 no usable record / bad capture / no engine library.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from typing import List, Optional

from . import capture, engine, out_layout as L, triton_launch as tlaunch, triton_records, triton_source

# python/kerncap file -> its name in OUT/kerncap_repro/ (the reproducer imports kerncap_repro.runtime)
_RUNTIME_FILES = {"engine.py": "engine.py", "capture.py": "capture.py", "triton_launch.py": "triton_launch.py",
                  "out_layout.py": "out_layout.py", "repro_runtime.py": "runtime.py"}
HERE = os.path.dirname(os.path.abspath(__file__))


def docstring_text(text: str) -> str:
    """`text` (a kernel name, a path: capture data) as it may appear inside a triple-quoted
    docstring: one line, backslashes and control characters escaped, every quote escaped,
    so it cannot end the docstring and start code."""
    return str(text).encode("unicode_escape").decode("ascii").replace('"', '\\"')


def comment_text(text) -> str:
    """Capture data (a name, a path) as it may appear in a `#` comment: one line, control
    characters escaped, so a newline in it cannot start a line of code."""
    return str(text).encode("unicode_escape").decode("ascii")


def _read_source(triton_dir: str, sha: Optional[str]) -> Optional[str]:
    if not sha:
        return None
    try:
        with open(os.path.join(triton_dir, "sources", sha + ".py"), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def _config_lines(plan: tlaunch.Plan, record: dict) -> (List[str], List[str]):
    declared = set(record.get("constexpr_params", []))
    consts = plan.constexprs()
    cfg = [f"    {json.dumps(n)}: {tlaunch.python_literal(v)}," for n, v in consts.items() if n in declared]
    opts = []
    for k in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        if k in plan.options:
            cfg.append(f"    {json.dumps(k)}: {plan.options[k]!r},")
    for k, v in plan.options.items():
        if k not in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
            opts.append(f"    {json.dumps(k)}: {v!r},")
    return cfg, opts


def _jit_imports(plan: tlaunch.Plan, record: dict) -> List[str]:
    """Constexpr JIT functions from other modules (e.g. an activation passed as an argument)."""
    own = record.get("fn", {}).get("module")
    out = []
    for v in plan.constexprs().values():
        if isinstance(v, dict) and "jit_function" in v:
            mod, _, name = v["jit_function"].rpartition(".")
            if mod and mod != own:
                mod = tlaunch.python_module(mod, "a constexpr JIT function's module")
                name = tlaunch.python_identifier(name, "a constexpr JIT function")
                out.append(f"from {mod} import {name}  # noqa: E402  (passed as a constexpr)")
    return out


def _grid_section(plan: tlaunch.Plan, record: dict) -> str:
    declared = set(record.get("constexpr_params", []))
    consts = plan.constexprs()
    blocks = {n: v for n, v in consts.items() if n in declared and tlaunch.is_block_name(n)}
    sizes = {a.name: a.value for a in plan.runtime() if a.type in ("i32", "i64", "u32", "u64") and len(a.path) == 1}
    sizes.update({n: v for n, v in consts.items() if n in declared and not tlaunch.is_block_name(n)})
    axes = tlaunch.infer_grid(plan.programs, sizes, blocks)
    exprs = [tlaunch.grid_expr(ax, g) for ax, g in zip(axes, plan.programs)]
    why = []
    for name, ax, g in zip("xyz", axes, plan.programs):
        if ax is None:
            continue
        if ax[0] == "cdiv":
            why.append(docstring_text(f"{name}: cdiv({ax[1]}={sizes[ax[1]]}, {ax[2]}={blocks[ax[2]]}) = {g}, "
                                      "as captured"))
        else:
            why.append(docstring_text(f"{name}: cdiv({ax[1]}, {ax[2]}) * cdiv({ax[3]}, {ax[4]}) = {g}, as captured"))
    doc = ("Programs to launch. meta: every argument by name (pointers as tensors over the captured\n"
           "    memory, scalars as captured) and CONFIG.")
    if why:
        doc += " Derived from the arguments, so that editing a BLOCK constexpr\n    resizes the grid with it:\n    " \
               + "\n    ".join(why)
    else:
        doc += " The captured counts; if you change a constexpr that decides how many\n" \
               "    programs the kernel needs, compute them here, e.g. (triton.cdiv(meta[\"N\"], meta[\"BLOCK\"]), 1, 1)."
    return (f"# Programs per axis in the captured launch (CUDA blocks / num_ctas on x).\n"
            f"CAPTURED_GRID = {tuple(plan.programs)!r}\n\n\n"
            f"def grid(meta):\n    \"\"\"{doc}\"\"\"\n    return ({', '.join(exprs)})\n")


def _path_prelude(record: dict) -> List[str]:
    """Lines that make the application's own packages importable (same rule as
    triton_launch.add_app_paths, inline so that kernel_variant.py imports on its own)."""
    pp = triton_records.python_path(record)
    if not pp["package_root"] and not pp["sys_path"]:
        return []
    return ["# Where the application found its modules: the kernel's package root goes first, the rest of its",
            "# sys.path that this interpreter lacks goes last (folders that are gone are skipped).",
            "import os as _kc_os  # noqa: E402",
            "import sys as _kc_sys  # noqa: E402",
            "",
            f"_KC_PACKAGE_ROOT = {pp['package_root']!r}",
            f"_KC_APP_SYS_PATH = {pp['sys_path']!r}",
            "for _kc_p in _KC_APP_SYS_PATH:",
            "    if _kc_p not in _kc_sys.path and _kc_os.path.isdir(_kc_p):",
            "        _kc_sys.path.append(_kc_p)",
            "if _KC_PACKAGE_ROOT and _kc_os.path.isdir(_KC_PACKAGE_ROOT) and _kc_sys.path[:1] != [_KC_PACKAGE_ROOT]:",
            "    if _KC_PACKAGE_ROOT in _kc_sys.path:",
            "        _kc_sys.path.remove(_KC_PACKAGE_ROOT)",
            "    _kc_sys.path.insert(0, _KC_PACKAGE_ROOT)",
            ""]


# What a kernel recorded without its module needs at definition time: the imports Triton
# kernels and Inductor's generated kernel modules begin with (Inductor's only when importable).
FUNCTION_ONLY_IMPORTS = """import triton
import triton.language as tl
try:
    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
except ImportError:
    pass

"""


def variant_source(record: dict, plan: tlaunch.Plan, module_text: Optional[str], fn_text: Optional[str],
                   match: triton_records.Match, autotune: Optional[dict]) -> str:
    fn = record.get("fn", {})
    name = tlaunch.python_identifier(fn.get("name", record["name"]), "the kernel function")
    c = comment_text
    if module_text is not None:
        t = triton_source.trim_module(module_text, name)
    elif fn_text is not None:
        # The function alone: its decorators and body name triton, tl and (in Inductor's
        # kernels) Inductor's runtime helpers, which its lost module imported at the top.
        t = triton_source.trim_module(FUNCTION_ONLY_IMPORTS + fn_text, name)
        t.note = (t.note + "; " if t.note else "") + \
            "only the function's own source was recorded (the usual imports are added above it)"
    else:
        raise triton_records.RecordError(f"the record of {name} has no source snapshot (sources/ is missing)")
    head = [f"# kernel_variant.py: the Triton kernel {c(record['name'])} captured by kerncap; edit freely.",
            f"# From {c(fn.get('file'))}:{c(fn.get('line'))} (function {c(fn.get('module'))}.{c(fn.get('qualname'))}), "
            f"compiled in pid {c(record.get('pid'))}; matched to the capture by {c(match.how)}.",
            "# `python3 reproducer.py` launches KERNEL with CONFIG on the captured inputs and grid(), compares",
            "# with the application's output, times it and writes candidate.cubin.",
            "# The code below is the kernel and what it references, cut from the recorded module snapshot."]
    if t.whole_module:
        head.append(f"# NOTE: {c(t.note)}")
    elif t.note:
        head.append(f"# note: {c(t.note)}")
    if t.dropped_decorators:
        head.append("# Decorators removed (the configuration is pinned in CONFIG below, nothing is re-tuned):")
        head += ["#   @" + "\n#    ".join(c(ln) for ln in d.split("\n")) for d in t.dropped_decorators]
    cfg, opts = _config_lines(plan, record)
    tune = ""
    if autotune:
        best = autotune.get("best", {})
        tune = (f"\n# {c(autotune.get('source', 'autotune'))} chose this configuration among "
                f"{len(autotune.get('configs', []))}: {json.dumps(best)}")
        timings = sorted((t for t in autotune.get("timings", []) if isinstance(t[1], list) and t[1]),
                         key=lambda t: t[1][0])[:5]
        for cfg_tried, ms in timings:
            tune += f"\n#   {float(ms[0]):.4f} ms  {json.dumps(cfg_tried)}"
    prelude = _path_prelude(record)
    body = t.source
    if prelude:  # `from __future__` must stay the first statement
        future = [ln for ln in body.splitlines() if ln.startswith("from __future__ import")]
        if future:
            body = "\n".join(ln for ln in body.splitlines() if not ln.startswith("from __future__ import"))
            prelude = future + [""] + prelude
    parts = ["\n".join(head), "", *prelude, *([""] if prelude else []), body.strip("\n"), "", "",
             "# ---- kerncap: the captured launch " + "-" * 58,
             "import triton  # noqa: E402", "import triton.language as tl  # noqa: E402", *_jit_imports(plan, record),
             "", f"KERNEL = {name}", "",
             f"# The kernel's constexprs and launch options, as the application launched it.{tune}",
             "CONFIG = {", *cfg, "}", "# Other compile options of the captured kernel.", "OPTIONS = {", *opts, "}",
             "", _grid_section(plan, record)]
    return "\n".join(parts)


def _write_compare_spec(out: str, spec: dict) -> Optional[str]:
    """OUT/compare.json; one that says something else (the user's tolerances, or another
    capture's spans) is kept as compare.json.prev. Returns a note when it was."""
    path = os.path.join(out, L.COMPARE_SPEC)
    note = None
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        old = spec
    if old != spec:
        os.replace(path, path + ".prev")
        note = f"the previous {L.COMPARE_SPEC} differs from this capture's: kept as {L.COMPARE_SPEC}.prev"
    with open(path, "w") as f:
        json.dump(spec, f, indent=2)
    return note


def _place_engine(lib: str, dst: str) -> None:
    """The engine that read this capture goes beside the reproducer's engine.py, where it finds
    it first: a hard link when OUT shares the file system (a rebuild writes a new file, so the
    link keeps this version), else a copy."""
    if os.path.lexists(dst):
        os.remove(dst)
    try:
        os.link(lib, dst)
    except OSError:
        shutil.copy2(lib, dst)


def generate(out: str, quiet: bool = False) -> dict:
    m = capture.load(out)
    tdir = os.path.join(out, L.TRITON)
    records = triton_records.load(tdir)
    sha = m.image_sha256()
    found: Optional[triton_records.Match] = None
    err: Optional[Exception] = None
    try:
        found = triton_records.match(records, m, sha)
    except triton_records.RecordError as e:
        err = e
    autotune = triton_records.autotune_for(records, found.record) if found else None
    nm = triton_records.name_map(records, m, sha, found, autotune)
    os.makedirs(tdir, exist_ok=True)
    with open(os.path.join(tdir, L.TRITON_NAME_MAP), "w") as f:
        json.dump(nm, f, indent=2)
    if err is not None:
        raise err
    rec = found.record
    plan = tlaunch.build_plan(rec, m.slots, m.params(), m.grid, m.block)
    with open(os.path.join(tdir, L.TRITON_LAUNCH_PLAN), "w") as f:
        json.dump(plan.to_json(), f, indent=2)
    moved = _write_compare_spec(out, tlaunch.compare_spec(plan, [(r.base, r.size) for r in m.memory()]))
    fn = rec.get("fn", {})
    src = variant_source(rec, plan, _read_source(tdir, fn.get("module_sha256")),
                         _read_source(tdir, fn.get("source_sha256")), found, autotune)
    with open(os.path.join(out, L.KERNEL_VARIANT_PY), "w") as f:
        f.write(src)
    with open(os.path.join(HERE, "templates", "reproducer.py")) as f:
        tpl = f.read()
    with open(os.path.join(out, L.REPRODUCER_PY), "w") as f:
        f.write(tpl.replace("@KERNEL@", docstring_text(rec["name"])).replace("@OUT@", docstring_text(out)))
    # Private, like every file kerncap writes from a capture (docs/untrusted-input.md).
    os.chmod(os.path.join(out, L.REPRODUCER_PY), 0o700)
    rdir = os.path.join(out, L.REPRO_RUNTIME)
    os.makedirs(rdir, exist_ok=True)
    for src_name, dst in _RUNTIME_FILES.items():
        shutil.copyfile(os.path.join(HERE, src_name), os.path.join(rdir, dst))
    _place_engine(engine.load().path, os.path.join(rdir, engine.LIBRARY_NAME))
    with open(os.path.join(rdir, "__init__.py"), "w") as f:
        f.write('"""The runtime of reproducer.py, copied from kerncap\'s python/kerncap by kerncap.triton_repro."""\n')
    summary = {"kernel": rec["name"], "matched_by": found.how,
               "warnings": found.warnings + plan.notes + ([moved] if moved else []),
               "autotuned": autotune is not None, "config": {**plan.constexprs(), **plan.options},
               "programs": list(plan.programs), "kernel_variant": os.path.join(out, L.KERNEL_VARIANT_PY),
               "reproducer": os.path.join(out, L.REPRODUCER_PY), "name_map": os.path.join(tdir, L.TRITON_NAME_MAP),
               "compare": os.path.join(out, L.COMPARE_SPEC)}
    if not quiet:
        print(f"Triton kernel {rec['name']} ({fn.get('file')}:{fn.get('line')}), matched by {found.how}")
        for w in summary["warnings"]:
            print(f"  warning: {w}")
        if nm.get("ignore_handshake") is False:
            print("  warning: libkerncap has no kerncap_ignore_begin: autotuner benchmark launches were counted; "
                  "check the captured config against name_map.json's 'autotune'")
        if autotune:
            print(f"  autotuned: the configuration the application's autotuner chose is pinned: "
                  f"{json.dumps(autotune.get('best'))}")
        print(f"  -> {summary['kernel_variant']}\n  -> {summary['reproducer']}  (python3 reproducer.py)")
    return summary


# `--auto`'s exit code for "not a Triton kernel". `kerncap extract` passes its own with
# --not-triton-exit (src/extract/triton_step.cpp holds the one definition); this default is
# only for a manual run. Whatever it is, it must differ from every other code the generator
# exits with, or extract would take a failure for "not Triton" and stay quiet.
DEFAULT_NOT_TRITON_EXIT = 4
OTHER_EXITS = {engine.OK, 1, engine.E_INPUT, engine.E_DEVICE, engine.E_INTERNAL}  # 1: a Python traceback


def not_triton_exit(text: str) -> int:
    """--not-triton-exit's value: an exit status 1..125 that means nothing else here."""
    try:
        code = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if not 1 <= code <= 125 or code in OTHER_EXITS:
        raise argparse.ArgumentTypeError(
            f"{code} cannot mean 'not a Triton kernel': give 1..125 other than "
            f"{', '.join(str(c) for c in sorted(OTHER_EXITS))} (the generator's other exit codes)")
    return code


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m kerncap.triton_repro", description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="the extract output directory (holding capture/ and triton/)")
    p.add_argument("-q", "--quiet", action="store_true")
    p.add_argument("--json", action="store_true", help="print a summary as JSON")
    p.add_argument("--auto", action="store_true",
                   help="run by `kerncap extract` after every capture of a Python application: a kernel no "
                        "Triton record names gets one note and the --not-triton-exit code, not an error")
    p.add_argument("--not-triton-exit", type=not_triton_exit, default=DEFAULT_NOT_TRITON_EXIT, metavar="CODE",
                   help=f"with --auto, the exit code for a kernel no Triton record names (kerncap extract gives "
                        f"its own; default {DEFAULT_NOT_TRITON_EXIT})")
    a = p.parse_args(argv)
    try:
        s = generate(a.out, quiet=a.quiet or a.json)
    except triton_records.NotATritonKernel as e:
        if a.auto:
            print(f"kerncap: note: no Triton reproducer: the captured kernel is not one the application's Triton "
                  f"compiled or loaded ({str(e).split(':')[0]})", file=sys.stderr)
            return a.not_triton_exit
        print(f"kerncap: error: {e}", file=sys.stderr)
        return 2
    except engine.EngineError as e:
        print(f"kerncap: error: {e}", file=sys.stderr)
        return e.exit_code if e.exit_code in (engine.E_INPUT, engine.E_DEVICE) else engine.E_INTERNAL
    except (triton_records.RecordError, tlaunch.PlanError) as e:
        print(f"kerncap: error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(s, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

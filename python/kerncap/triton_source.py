"""kernel_variant.py's source: the captured kernel cut out of the module snapshot the shim recorded.

Kept from the module: the kernel's definition (its @triton.autotune / @triton.heuristics /
Inductor decorators removed: the configuration is pinned by the reproducer), the other
@triton.jit functions of the module, and, transitively, the top-level imports, assignments and
definitions those reference. Dropped: everything else (the application's own code, a
`__main__` block), so importing the variant never runs the application. When the kernel is
not a top-level function of a parseable module, the whole snapshot is used instead.
Pure stdlib (ast); unit tested without a GPU.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Set


@dataclass
class Trimmed:
    source: str
    whole_module: bool            # fell back to the full snapshot
    dropped_decorators: List[str] = field(default_factory=list)
    note: str = ""


def _is_jit_decorator(d: ast.expr) -> bool:
    """@triton.jit, @jit, @triton.jit(...), @tl.core.jit ..."""
    if isinstance(d, ast.Call):
        d = d.func
    if isinstance(d, ast.Attribute):
        return d.attr == "jit"
    return isinstance(d, ast.Name) and d.id == "jit"


def _names_loaded(nodes) -> Set[str]:
    out: Set[str] = set()
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                out.add(sub.id)
    return out


def _bound_names(stmt: ast.stmt) -> Set[str]:
    """Names a top-level statement binds (for if/try blocks: anywhere in their bodies)."""
    out: Set[str] = set()
    for sub in ast.walk(stmt):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            for a in sub.names:
                out.add((a.asname or a.name).split(".")[0])
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            out.add(sub.id)
    # A function binds its own name only; names inside it are local.
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    return out


def _is_main_guard(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.If):
        return False
    t = stmt.test
    return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__")


def trim_module(module_source: str, kernel_name: str) -> Trimmed:
    try:
        tree = ast.parse(module_source)
    except SyntaxError as e:
        return Trimmed(module_source, True, note=f"the module snapshot does not parse ({e}); kept whole")
    body = tree.body
    kernel = next((s for s in body if isinstance(s, ast.FunctionDef) and s.name == kernel_name), None)
    if kernel is None:
        return Trimmed(module_source, True,
                       note=f"{kernel_name} is not a top-level function of its module; the module is kept whole")
    lines = module_source.splitlines(keepends=True)

    def text(stmt: ast.stmt) -> str:
        start = stmt.decorator_list[0].lineno if getattr(stmt, "decorator_list", None) else stmt.lineno
        return "".join(lines[start - 1:stmt.end_lineno])

    # Which top-level statements define which names (later definitions win, as at import).
    definers: Dict[str, int] = {}
    for i, s in enumerate(body):
        if _is_main_guard(s) or isinstance(s, ast.Expr):
            continue
        for n in _bound_names(s):
            definers[n] = i

    keep: Set[int] = set()
    jit_fns = [i for i, s in enumerate(body)
               if isinstance(s, ast.FunctionDef) and any(_is_jit_decorator(d) for d in s.decorator_list)]
    dropped: List[str] = []
    kernel_idx = body.index(kernel)
    kernel_jit_decos = [d for d in kernel.decorator_list if _is_jit_decorator(d)]
    for d in kernel.decorator_list:
        if not _is_jit_decorator(d):
            dropped.append(ast.get_source_segment(module_source, d) or "?")

    work: List[int] = [kernel_idx] + [i for i in jit_fns if i != kernel_idx]
    while work:
        i = work.pop()
        if i in keep:
            continue
        keep.add(i)
        s = body[i]
        if i == kernel_idx:
            refs = _names_loaded([*kernel_jit_decos, kernel.args, *kernel.body])
        elif isinstance(s, ast.FunctionDef) and i in jit_fns:
            refs = _names_loaded([*[d for d in s.decorator_list if _is_jit_decorator(d)], s.args, *s.body])
        else:
            refs = _names_loaded([s])
        for n in refs:
            j = definers.get(n)
            if j is not None and j not in keep:
                work.append(j)

    out: List[str] = []
    imports: List[bool] = []
    for i, s in enumerate(body):
        if i not in keep:
            continue
        if i == kernel_idx:
            deco_lines = "".join("@" + (ast.get_source_segment(module_source, d) or "triton.jit") + "\n"
                                 for d in kernel_jit_decos) or "@triton.jit\n"
            out.append(deco_lines + "".join(lines[kernel.lineno - 1:kernel.end_lineno]))
        elif isinstance(s, ast.FunctionDef) and i in jit_fns:
            decos = [d for d in s.decorator_list if _is_jit_decorator(d)]
            out.append("".join("@" + (ast.get_source_segment(module_source, d) or "triton.jit") + "\n" for d in decos)
                       + "".join(lines[s.lineno - 1:s.end_lineno]))
        else:
            out.append(text(s))
        imports.append(isinstance(s, (ast.Import, ast.ImportFrom)))
    src = ""
    for k, x in enumerate(out):  # imports grouped, two blank lines around definitions
        if k:
            src += "\n" if imports[k] and imports[k - 1] else "\n\n\n"
        src += x.rstrip("\n")
    src += "\n"
    return Trimmed(src, False, dropped)

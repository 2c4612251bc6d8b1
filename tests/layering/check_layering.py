#!/usr/bin/env python3
"""kerncap's library layering (CTest layering_includes, layering_replay_symbols, layering_selftest).

  check_layering.py includes ROOT     every `#include "X/..."` (or <X/...>) in ROOT/src/<folder> and
                                      ROOT/include/kerncap names a folder that tests/layering/allowed.txt
                                      allows <folder> to use; the table itself is complete and acyclic
  check_layering.py symbols LIB.so    libkerncap_replay.so holds nothing of the source finder
                                      (nm -C --defined-only: no kerncap::source::); exit 77 (skipped)
                                      when the library is not built or nm is missing
  check_layering.py selftest          the checker catches a forbidden include, a cycle and a folder
                                      missing from the table (on a scratch tree)

Exit 0 when the layering holds, 1 with one line per problem (file:line, the include, the rule).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "allowed.txt")
SKIP = 77

# The folders that are not under src/: their path from the repository root.
OUTSIDE_SRC = {"kerncap": os.path.join("include", "kerncap")}
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cu", ".cuh", ".inc", ".in")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*(["<])([A-Za-z0-9_.+-]+)/[^">]*[">]')


def read_table(path):
    """FOLDER -> [allowed folders]; problems as strings."""
    table, problems = {}, []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            body, _, comment = line.partition("#")
            if not body.strip():
                continue
            where = f"{path}:{n}"
            if ":" not in body:
                problems.append(f"{where}: expected 'FOLDER: ALLOWED...  # responsibility', got {line.strip()!r}")
                continue
            name, _, deps = body.partition(":")
            name = name.strip()
            if not comment.strip():
                problems.append(f"{where}: {name}: say the folder's one responsibility in a '# ...' comment")
            if name in table:
                problems.append(f"{where}: {name} is listed twice")
            table[name] = deps.split()
    for name, deps in table.items():
        for d in deps:
            if d == name:
                problems.append(f"{path}: {name} lists itself")
            elif d not in table:
                problems.append(f"{path}: {name} may use '{d}', which has no line of its own")
    problems += cycles(table, path)
    return table, problems


def cycles(table, path):
    state, stack, out = {}, [], []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in table.get(n, []):
            if state.get(d) == 1:
                out.append(f"{path}: dependency cycle: {' -> '.join(stack[stack.index(d):] + [d])}")
            elif d in table and d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in table:
        if n not in state:
            visit(n)
    return out


def folder_path(root, name):
    return os.path.join(root, OUTSIDE_SRC.get(name, os.path.join("src", name)))


def check_includes(root, table_path=TABLE):
    table, problems = read_table(table_path)
    src = os.path.join(root, "src")
    present = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for d in present:
        if d not in table:
            problems.append(f"src/{d}/ has no line in {table_path}: add one with what it may include and its responsibility")
    for name in table:
        if not os.path.isdir(folder_path(root, name)):
            problems.append(f"{table_path}: {name}: no folder {os.path.relpath(folder_path(root, name), root)}")
    checked = 0
    for name, deps in sorted(table.items()):
        top = folder_path(root, name)
        if not os.path.isdir(top):
            continue
        allowed = set(deps) | {name}
        for dirpath, dirnames, files in os.walk(top):
            dirnames.sort()
            for fn in sorted(files):
                if not fn.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, root)
                checked += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE_RE.match(line)
                        if not m or m.group(2) not in table or m.group(2) in allowed:
                            continue
                        inc = line.strip()
                        problems.append(
                            f"{rel}:{n}: {inc}: {name} may not include {m.group(2)} "
                            f"(allowed: {' '.join(sorted(deps)) or 'nothing'}; "
                            f"tests/layering/allowed.txt)")
    for p in problems:
        print(p)
    if problems:
        print(f"layering: {len(problems)} problem(s) in {checked} files")
        return 1
    print(f"layering: {checked} files of {len(table)} folders include only what allowed.txt allows")
    return 0


def source_symbols(nm_output):
    return [l for l in nm_output.splitlines() if "kerncap::source::" in l]


def check_symbols(lib):
    if not os.path.isfile(lib):
        print(f"SKIPPED: {lib} is not built")
        return SKIP
    nm = shutil.which("nm")
    if not nm:
        print("SKIPPED: no nm")
        return SKIP
    out = subprocess.run([nm, "-C", "--defined-only", lib], capture_output=True, text=True)
    text = out.stdout
    if "no symbols" in out.stderr or not text.strip():  # stripped: only the dynamic table is left
        text = subprocess.run([nm, "-C", "-D", "--defined-only", lib], capture_output=True, text=True).stdout
        print(f"note: {lib} has no symbol table (stripped); checked its dynamic symbols only")
    bad = source_symbols(text)
    if bad:
        for l in bad[:20]:
            print(f"{lib}: {l.strip()}")
        print(f"{lib}: {len(bad)} symbol(s) of the source finder (kerncap::source::) inside the replay "
              f"library: replay must not link kerncap_source (tests/layering/allowed.txt)")
        return 1
    print(f"{lib}: nothing of kerncap::source:: ({len(text.splitlines())} symbols)")
    return 0


def selftest():
    failures = []
    with tempfile.TemporaryDirectory(prefix="kerncap-layering.") as root:
        def write(rel, text):
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)

        write("src/low/a.hpp", '#pragma once\n#include <vector>\n#include "low/b.hpp"\n')
        write("src/high/c.cpp", '#include "high/c.hpp"\n#include "low/a.hpp"\n// #include "top/t.hpp" in a comment\n')
        write("src/top/t.hpp", '#include "high/c.hpp"\n#include <fmt/format.h>\n')
        write("include/kerncap/api.h", "")
        good = "low:  # bottom\nhigh: low  # middle\ntop: high low kerncap  # top\nkerncap:  # public header\n"

        def run(table_text, want_rc, want):
            t = os.path.join(root, "allowed.txt")
            with open(t, "w", encoding="utf-8") as f:
                f.write(table_text)
            import contextlib
            import io
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = check_includes(root, t)
            text = buf.getvalue()
            if rc != want_rc or any(w not in text for w in want):
                failures.append(f"table {table_text!r}: rc {rc} (want {want_rc}), output:\n{text}")

        run(good, 0, ["include only what allowed.txt allows"])
        run(good.replace("high: low", "high:"), 1,
            ['src/high/c.cpp:2: #include "low/a.hpp": high may not include low'])
        run(good.replace("high: low", "high: low top"), 1, ["dependency cycle: high -> top -> high"])
        run(good.replace("top: high low kerncap  # top\n", ""), 1, ["src/top/ has no line"])
        run(good.replace("# middle", ""), 1, ["high: say the folder's one responsibility"])
        run(good + "gone: low  # not here\n", 1, ["gone: no folder src/gone"])
    nm_output = ("0000000000001000 T kc_open\n"
                 "0000000000002000 t kerncap::names::parse_kernel_name(std::basic_string_view<char>)\n"
                 "0000000000003000 t kerncap::source::split_top_level(std::basic_string_view<char>)\n")
    if len(source_symbols(nm_output)) != 1 or source_symbols(nm_output.replace("source", "names")):
        failures.append("source_symbols: wrong on a sample of nm's output")
    for f in failures:
        print(f)
    print("selftest: " + ("FAILED" if failures else "the checker catches what it should"))
    return 1 if failures else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "includes":
        return check_includes(argv[2])
    if len(argv) == 3 and argv[1] == "symbols":
        return check_symbols(argv[2])
    if len(argv) == 2 and argv[1] == "selftest":
        return selftest()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

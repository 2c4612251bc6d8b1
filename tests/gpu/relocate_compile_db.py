#!/usr/bin/env python3
"""Copy a compile_commands.json whose paths point at another checkout.

The kerncap build (and its compile_commands.json) may be made on one machine and run on
another where the repository sits elsewhere. This rewrites the recorded source root and
build directory (found from examples/multifile's main.cu entry) to the current ones.

    relocate_compile_db.py DB SOURCE_ROOT BUILD_DIR OUT
"""
import json
import os
import sys

MARK = "/examples/multifile/app/main.cu"


def main() -> int:
    db, root, build, out = sys.argv[1:5]
    entries = json.load(open(db))
    anchor = next((e for e in entries if e["file"].endswith(MARK)), None)
    if anchor is None:
        print(f"{db} has no entry for examples/multifile: build kerncap with its examples", file=sys.stderr)
        return 1
    old_root = anchor["file"][: -len(MARK)]
    old_build = anchor["directory"]
    root, build = os.path.abspath(root), os.path.abspath(build)

    def fix(s: str) -> str:
        return s.replace(old_build, "\0BUILD\0").replace(old_root, root).replace("\0BUILD\0", build)

    for e in entries:
        for k in ("directory", "file", "command", "output"):
            if k in e:
                e[k] = fix(e[k])
        if "arguments" in e:
            e["arguments"] = [fix(a) for a in e["arguments"]]
    json.dump(entries, open(out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The kerncap edit loop with the capture kept open: one engine session (kerncap.engine.Session,
the evaluation loop of docs/engine.md) restores the capture once; each iteration edits the
reproducer's copy of the kernel, runs `make recompile` and evaluates the new image in that
session, strongly (the capture's footprint: the bytes the launch writes are poisoned first),
untimed. The iteration's time is recompile + evaluation: what an agent or an editor
integration pays per edit. bench/edit_loop.sh calls it for its "session" column.

    edit_loop_session.py REPRO EDIT_FILE REPS [--edit comment|code] [MAKE_ARG...]

REPRO is the reproducer (the capture directory with its Makefile), EDIT_FILE the file each
iteration edits (relative to REPRO): a comment line appended (the default) or, with --edit code,
an unused inline __device__ function in its own #ifndef guard, as bench/edit_loop.sh does.
MAKE_ARG are passed to make (KERNCAP=...).
Prints one line per iteration, "rep N: S s (recompile R s, evaluate E s): Result: ...", then
"median S s". Exit 1 when an iteration does not PASS strongly or make fails, 2 on bad usage."""
import os
import statistics
import subprocess
import sys
import time


def main(argv):
    usage = "usage: edit_loop_session.py REPRO EDIT_FILE REPS [--edit comment|code] [MAKE_ARG...]"
    if len(argv) < 4 or not argv[3].isdigit() or int(argv[3]) < 1:
        print(usage, file=sys.stderr)
        return 2
    repro, edit, reps, make_args = argv[1], argv[2], int(argv[3]), argv[4:]
    kind = "comment"
    if make_args[:1] == ["--edit"]:
        if len(make_args) < 2 or make_args[1] not in ("comment", "code"):
            print(usage, file=sys.stderr)
            return 2
        kind, make_args = make_args[1], make_args[2:]
    if not os.path.isfile(os.path.join(repro, "Makefile")):
        print(f"{repro}: no Makefile (not a reproducer directory)", file=sys.stderr)
        return 2
    edit_path = os.path.join(repro, edit)
    if not os.path.isfile(edit_path):
        print(f"{edit_path}: no such file", file=sys.stderr)
        return 2
    from kerncap import engine  # the one C++ engine, through libkerncap_replay

    cubin = os.path.join(repro, "optimized.cubin")
    make = ["make", "--no-print-directory", "-C", repro, "recompile"] + make_args
    times = []
    with engine.Session(repro) as s:
        first = s.evaluate(None, time=False)  # the captured image: the session is sound
        if first["result"] != "PASS":
            print(f"the captured image does not PASS in the session: {first['line']}")
            return 1
        for rep in range(1, reps + 1):
            with open(edit_path, "a") as f:
                if kind == "code":
                    tag = f"KERNCAP_SESSION_EDIT_{rep}"
                    f.write(f"\n#ifndef {tag}\n#define {tag}\n__device__ inline int kerncap_session_edit_{rep}(int x) "
                            f"{{ return x + {rep}; }}\n#endif\n")
                else:
                    f.write(f"\n// session edit {rep}\n")
            t0 = time.perf_counter()
            built = subprocess.run(make, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            t1 = time.perf_counter()
            if built.returncode != 0:
                print(f"rep {rep}: make recompile failed:\n{built.stdout[-2000:]}")
                return 1
            r = s.evaluate(cubin, time=False)
            t2 = time.perf_counter()
            line = r.get("line", "")
            print(f"rep {rep}: {t2 - t0:.2f} s (recompile {t1 - t0:.2f} s, evaluate {t2 - t1:.3f} s): {line[:160]}",
                  flush=True)
            if r["result"] != "PASS" or "strong" not in line:
                print(f"rep {rep}: not a strong PASS")
                return 1
            times.append(t2 - t0)
    print(f"median {statistics.median(times):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

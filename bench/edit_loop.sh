#!/usr/bin/env bash
# Edit-loop benchmark: how long one "edit the kernel, check it" iteration takes
#   kerncap:     edit the reproducer's copy of the kernel; make recompile && make validate-variant
#   traditional: edit the kernel in the application's tree; rebuild the application (the
#                units that include the edited header, then link) and rerun it
# on examples/multifile's templated kernel mf::scale_kernel<float, 4> (defined in a header
# that two units include). The application is rebuilt in a scratch copy with the exact
# compile commands of the kerncap build's compile_commands.json (nvcc only: no CMake needed
# on the GPU machine). Prints each iteration, the medians and the ratio.
#
#   bench/edit_loop.sh BUILD_DIR [REPS]
#
# `make recompile` compiles kernel_instance.cu (the captured instantiation alone) when extract
# could write one, else the whole unit; the line "recompile unit:" says which.
#
# Environment: APP_ARGS (the application's arguments, default "--n 4194304 --work 64
# --steps 10"), KC_MAKE_FLAGS (added to the reproducer's make, e.g. WHOLE_UNIT=1 to time
# the whole-unit recompile), KEEP=1 (keep the scratch directory). Exit 77 without a GPU.
set -u -o pipefail

BUILD=${1:?usage: bench/edit_loop.sh BUILD_DIR [REPS]}
REPS=${2:-5}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
APP_ARGS=${APP_ARGS:---n 4194304 --work 64 --steps 10}

if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "SKIPPED: no GPU"
  exit 77
fi
BUILD=$(cd "$BUILD" && pwd) || exit 1
KC=$BUILD/bin/kerncap
DB=$BUILD/compile_commands.json
for f in "$KC" "$DB"; do [ -e "$f" ] || { echo "missing $f (build kerncap with examples first)"; exit 1; }; done
command -v make >/dev/null || { echo "make is not installed: the reproducer's Makefile needs it"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-editloop.XXXXXX") || exit 1
cleanup() { [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT
cp -r "$ROOT/examples/multifile" "$WORK/tree"
mkdir -p "$WORK/obj"
# The database names the checkout and build directory it was made in; this run may be elsewhere.
python3 "$ROOT/tests/gpu/relocate_compile_db.py" "$DB" "$ROOT" "$BUILD" "$WORK/build_db.json" || exit 1
DB=$WORK/build_db.json

# From the build's database: compile commands for the scratch copy (sources and objects
# moved), a database for `kerncap extract`, and build scripts: all units, or only those
# that include include/mf/scale.cuh.
python3 - "$DB" "$ROOT/examples/multifile" "$WORK" <<'PY' || exit 1
import json, os, shlex, sys
db, tree, work = sys.argv[1], sys.argv[2], sys.argv[3]
new_tree, obj = os.path.join(work, "tree"), os.path.join(work, "obj")
entries, out_db, objs = json.load(open(db)), [], []
for e in entries:
    if not e["file"].startswith(tree + "/"):
        continue
    argv = e["arguments"] if "arguments" in e else shlex.split(e["command"])
    argv = [a.replace(tree, new_tree) for a in argv]
    o = os.path.join(obj, os.path.basename(e["file"]) + ".o")
    i = argv.index("-o")
    argv[i + 1] = o
    src = e["file"].replace(tree, new_tree)
    out_db.append({"directory": obj, "arguments": argv, "file": src, "output": o})
    objs.append(o)
if len(out_db) < 4:
    sys.exit("examples/multifile is not in %s: build kerncap with examples" % db)
json.dump(out_db, open(os.path.join(work, "compile_commands.json"), "w"), indent=1)
nvcc = out_db[0]["arguments"][0]
link = " ".join(map(shlex.quote, [nvcc, "-o", os.path.join(work, "multifile_app")] + objs))
def script(name, units):
    with open(os.path.join(work, name), "w") as f:
        f.write("set -e\ncd %s\n" % shlex.quote(obj))
        for u in units:
            f.write(" ".join(map(shlex.quote, u["arguments"])) + "\n")
        f.write(link + "\n")
script("build_all.sh", out_db)
script("rebuild_scale.sh", [u for u in out_db if "mf/scale.cuh" in open(u["file"]).read()])
PY

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "building the application copy in $WORK"
bash "$WORK/build_all.sh" >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; exit 1; }
APP=$WORK/multifile_app
"$APP" $APP_ARGS >"$WORK/run.log" 2>&1 || { cat "$WORK/run.log"; exit 1; }

echo "extracting mf::scale_kernel<float, 4>"
"$KC" extract 'scale_kernel<float, 4>' --cmd "$APP $APP_ARGS" --source-dir "$WORK/tree" \
  --compile-commands "$WORK/compile_commands.json" -o "$WORK/repro" >"$WORK/extract.log" 2>&1 ||
  { cat "$WORK/extract.log"; exit 1; }
EDIT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["edit"]["file"])' "$WORK/repro/compile.json")
UNIT=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["recompile"]; print(r.get("unit", "?"), r.get("whole_unit_reason", ""))' "$WORK/repro/compile.json")
# shellcheck disable=SC2086 # KC_MAKE_FLAGS is a list of make arguments
make -C "$WORK/repro" recompile validate-variant KERNCAP="$KC" ${KC_MAKE_FLAGS:-} >"$WORK/warm.log" 2>&1 ||
  { cat "$WORK/warm.log"; exit 1; }
echo "recompile unit: $UNIT${KC_MAKE_FLAGS:+ (make flags: $KC_MAKE_FLAGS)}"

printf '%-4s %-12s %-12s\n' rep kerncap_s rebuild+rerun_s
: >"$WORK/kc.txt"
: >"$WORK/trad.txt"
for rep in $(seq 1 "$REPS"); do
  # kerncap: an edit of the reproducer's copy, recompile one unit to a cubin, validate.
  echo "// edit $rep" >>"$WORK/repro/$EDIT"
  t0=$(now)
  # shellcheck disable=SC2086
  make -C "$WORK/repro" recompile validate-variant KERNCAP="$KC" ${KC_MAKE_FLAGS:-} >"$WORK/kc-$rep.log" 2>&1 ||
    { echo "kerncap loop failed:"; tail -n 20 "$WORK/kc-$rep.log"; exit 1; }
  kc=$(since "$t0")
  grep -q '^Result: PASS' "$WORK/kc-$rep.log" || { echo "validate-variant did not PASS"; exit 1; }
  # traditional: the same edit in the application's tree, rebuild what depends on it, rerun.
  echo "// edit $rep" >>"$WORK/tree/include/mf/scale.cuh"
  t0=$(now)
  { bash "$WORK/rebuild_scale.sh" && "$APP" $APP_ARGS; } >"$WORK/trad-$rep.log" 2>&1 ||
    { echo "rebuild+rerun failed:"; tail -n 20 "$WORK/trad-$rep.log"; exit 1; }
  trad=$(since "$t0")
  echo "$kc" >>"$WORK/kc.txt"
  echo "$trad" >>"$WORK/trad.txt"
  printf '%-4s %-12s %-12s\n' "$rep" "$kc" "$trad"
done
KCM=$(median <"$WORK/kc.txt")
TRM=$(median <"$WORK/trad.txt")
units=$(grep -c . "$WORK/rebuild_scale.sh")
echo "application: multifile_app $APP_ARGS; rebuild = $((units - 3)) unit(s) + link"
echo "median: kerncap edit loop ${KCM} s (make recompile && make validate-variant), rebuild+rerun ${TRM} s"
awk -v a="$TRM" -v b="$KCM" 'BEGIN { printf "ratio: %.1fx faster with kerncap\n", a / b }'

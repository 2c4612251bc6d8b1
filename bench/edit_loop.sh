#!/usr/bin/env bash
# Edit-loop benchmark: how long one "edit the kernel, check it" iteration takes
#   kerncap:     edit the reproducer's copy of the kernel's source; make recompile validate-variant
#                (must say "Result: PASS")
#   traditional: touch the kernel's file in the application's tree; rebuild the application
#                with its own build command and rerun it
# One untimed warm-up of each loop, then REPS timed iterations of both, alternating. Prints each
# iteration, the medians and the ratio, which unit `make recompile` compiles (kernel_instance.cu:
# the captured kernel without the rest of its unit, or the whole unit; docs/reproducer.md) and, once, the time
# of the whole-unit recompile (make -B recompile WHOLE_UNIT=1) for comparison.
#
#   bench/edit_loop.sh BUILD_DIR [REPS] [--edit comment|code]
#     examples/multifile's templated kernel mf::scale_kernel<float, 4> (defined in a header that
#     two units include), rebuilt in a scratch copy with the exact compile commands of the
#     kerncap build's compile_commands.json (nvcc only: no CMake needed on the GPU machine).
#
#   bench/edit_loop.sh BUILD_DIR [REPS] --app-cmd CMD --kernel PATTERN --source-dir DIR
#       --compile-commands DB --touch FILE --rebuild-cmd CMD [--edit-file REL]
#       [--extract-arg ARG]... [--edit comment|code]
#     an external application, already built:
#     --app-cmd CMD          the application as one shell command line (run by bash, and given
#                            to `kerncap extract --cmd`)
#     --kernel PATTERN       the kernel to extract (kerncap extract's pattern)
#     --source-dir DIR       the application's source tree (extract --source-dir)
#     --compile-commands DB  its compile_commands.json (extract --compile-commands)
#     --touch FILE           the file the traditional loop touches before each rebuild (the
#                            kernel's unit or header in the application's tree)
#     --rebuild-cmd CMD      the application's incremental rebuild (a shell command line, e.g.
#                            "cmake --build B --target app")
#     --edit-file REL        the reproducer's file the kerncap loop edits, relative to the
#                            reproducer (default: compile.json's edit.file, the kernel's file)
#     --extract-arg ARG      one more argument for kerncap extract (repeat for several, e.g.
#                            --extract-arg --dispatch --extract-arg 2)
#
#   --edit comment   (default) each kerncap iteration appends a comment line ("// edit N")
#   --edit code      each appends an unused inline __device__ function in its own #ifndef
#                    guard: the preprocessed source changes (no compiler cache could serve the
#                    recompile), the kernel's result does not
#
# Then the same edits in one engine session (bench/edit_loop_session.py: the capture restored
# once, each iteration `make recompile` plus a strong evaluation in that session), its median
# and ratio (SESSION=0 skips it; it needs the repository's python/ and the build's
# lib/libkerncap_replay.so, or KERNCAP_REPLAY_LIB). Before it, the make loop again with
# `kerncap serve` running (what `make serve` in another terminal gives): its median and ratio
# (SERVE=0 skips it).
#
# Environment: APP_ARGS (multifile's arguments, default "--n 4194304 --work 64 --steps 10"),
# KC_MAKE_FLAGS (added to the reproducer's make, e.g. WHOLE_UNIT=1 to time the whole-unit
# recompile in every iteration), WHOLE=0 (skip the one whole-unit comparison), KEEP=1 (keep
# the scratch directory). Exit 0 measured, 1 a
# step failed, 2 bad options or a missing file, 77 skipped (no GPU).
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../tests/gpu/lib.sh
. "$ROOT/tests/gpu/lib.sh"
# shellcheck disable=SC2034 # read by lib.sh's since
SINCE_DECIMALS=3

usage() {
  cat <<'EOF'
usage: bench/edit_loop.sh BUILD_DIR [REPS] [--edit comment|code]          (examples/multifile)
       bench/edit_loop.sh BUILD_DIR [REPS] --app-cmd CMD --kernel PATTERN --source-dir DIR
           --compile-commands DB --touch FILE --rebuild-cmd CMD [--edit-file REL]
           [--extract-arg ARG]... [--edit comment|code]                    (an external application)
The script's header explains each option.
EOF
}
input_error() { echo "bench/edit_loop.sh: $*" >&2; exit 2; }

# ---- options
POS=() EXTRACT_ARGS=()
APP_CMD='' KERNEL='' SRC_DIR='' DB='' TOUCH='' REBUILD_CMD='' EDIT_REL='' EDIT_KIND=comment
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --app-cmd | --kernel | --source-dir | --compile-commands | --touch | --rebuild-cmd | --edit-file | --extract-arg | --edit)
      [ $# -ge 2 ] || input_error "$1 needs a value"
      case $1 in
        --app-cmd) APP_CMD=$2 ;;
        --kernel) KERNEL=$2 ;;
        --source-dir) SRC_DIR=$2 ;;
        --compile-commands) DB=$2 ;;
        --touch) TOUCH=$2 ;;
        --rebuild-cmd) REBUILD_CMD=$2 ;;
        --edit-file) EDIT_REL=$2 ;;
        --extract-arg) EXTRACT_ARGS+=("$2") ;;
        --edit) EDIT_KIND=$2 ;;
      esac
      shift 2 ;;
    -*) input_error "unknown option $1 (--help lists them)" ;;
    *) POS+=("$1"); shift ;;
  esac
done
if [ ${#POS[@]} -lt 1 ] || [ ${#POS[@]} -gt 2 ]; then usage >&2; exit 2; fi
BUILD=${POS[0]}
REPS=${POS[1]:-5}
[[ $REPS =~ ^[1-9][0-9]*$ ]] || input_error "REPS must be a positive integer, not '$REPS'"
case $EDIT_KIND in comment | code) ;; *) input_error "--edit is comment or code, not '$EDIT_KIND'" ;; esac
# Only these are the recompile's prerequisites: an edit elsewhere would recompile nothing.
case $EDIT_REL in
  '' | kernel_variant.cu | kernel_instance.cu | src/*) ;;
  *) input_error "--edit-file $EDIT_REL: make recompile follows only kernel_variant.cu, kernel_instance.cu and src/..." ;;
esac

# External mode as soon as one of its required options is given; then all of them are needed.
EXTERNAL=0
[ -n "$APP_CMD$KERNEL$SRC_DIR$DB$TOUCH$REBUILD_CMD" ] && EXTERNAL=1
if [ $EXTERNAL = 1 ]; then
  for o in "--app-cmd:$APP_CMD" "--kernel:$KERNEL" "--source-dir:$SRC_DIR" "--compile-commands:$DB" \
    "--touch:$TOUCH" "--rebuild-cmd:$REBUILD_CMD"; do
    [ -n "${o#*:}" ] || input_error "${o%%:*} is missing: an external application needs --app-cmd, --kernel, --source-dir, --compile-commands, --touch and --rebuild-cmd"
  done
  [ -d "$SRC_DIR" ] || input_error "--source-dir $SRC_DIR is not a directory"
  [ -f "$DB" ] || input_error "--compile-commands $DB does not exist"
  [ -f "$TOUCH" ] || input_error "--touch $TOUCH does not exist"
  SRC_DIR=$(cd "$SRC_DIR" && pwd)
  DB=$(cd "$(dirname "$DB")" && pwd)/$(basename "$DB")
fi

# ---- inputs (before the GPU check, so a wrong command line says so on any machine)
[ -d "$BUILD" ] || input_error "build directory $BUILD does not exist"
BUILD=$(cd "$BUILD" && pwd)
KC=$BUILD/bin/kerncap
[ -x "$KC" ] || input_error "missing $KC (build kerncap first)"
[ $EXTERNAL = 1 ] || [ -f "$BUILD/compile_commands.json" ] ||
  input_error "missing $BUILD/compile_commands.json (build kerncap with examples first)"
command -v make >/dev/null || input_error "make is not installed: the reproducer's Makefile needs it"
command -v python3 >/dev/null || input_error "python3 is not installed: reading compile.json needs it"

gpu_required

WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-editloop.XXXXXX") || exit 1
[ "${KEEP:-0}" = 1 ] && KERNCAP_GPU_KEEP=1  # cleanup (lib.sh) keeps the scratch directory
trap cleanup EXIT
REPRO=$WORK/repro

fail() { echo "$1:"; tail -n 20 "$2"; exit 1; }

# ---- examples/multifile: a scratch copy built from the kerncap build's compile commands
prepare_multifile() {
  local app_args=${APP_ARGS:---n 4194304 --work 64 --steps 10}
  cp -r "$ROOT/examples/multifile" "$WORK/tree"
  mkdir -p "$WORK/obj"
  # The database names the checkout and build directory it was made in; this run may be elsewhere.
  python3 "$ROOT/tests/gpu/relocate_compile_db.py" "$BUILD/compile_commands.json" "$ROOT" "$BUILD" \
    "$WORK/build_db.json" || exit 1
  # From the build's database: compile commands for the scratch copy (sources and objects
  # moved), a database for `kerncap extract`, and build scripts: all units, or only those
  # that include include/mf/scale.cuh.
  python3 - "$WORK/build_db.json" "$ROOT/examples/multifile" "$WORK" <<'PY' || exit 1
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
  echo "building the application copy in $WORK"
  bash "$WORK/build_all.sh" >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; exit 1; }
  APP_CMD="$WORK/multifile_app $app_args"
  KERNEL='scale_kernel<float, 4>'
  SRC_DIR=$WORK/tree
  DB=$WORK/compile_commands.json
  TOUCH=$WORK/tree/include/mf/scale.cuh
  REBUILD_CMD="bash $WORK/rebuild_scale.sh"
  local units
  units=$(grep -c . "$WORK/rebuild_scale.sh")
  APP_NOTE="multifile_app $app_args; rebuild = $((units - 3)) unit(s) + link"
}

if [ $EXTERNAL = 0 ]; then
  prepare_multifile
else
  APP_NOTE="$APP_CMD; rebuild: $REBUILD_CMD"
fi

# ---- the reproducer
echo "extracting $KERNEL"
"$KC" extract "$KERNEL" --cmd "$APP_CMD" --source-dir "$SRC_DIR" --compile-commands "$DB" -o "$REPRO" \
  ${EXTRACT_ARGS[@]+"${EXTRACT_ARGS[@]}"} >"$WORK/extract.log" 2>&1 || fail "kerncap extract failed" "$WORK/extract.log"
grep -E '^  (source|reproducer):|note:' "$WORK/extract.log"
[ -f "$REPRO/kernel_variant.cu" ] ||
  { echo "extract found no source for $KERNEL, so there is nothing to recompile:"; tail -n 20 "$WORK/extract.log"; exit 1; }
# compile.json: the file that holds the kernel, the unit `make recompile` compiles, and why the
# whole unit when it is not kernel_instance.cu.
mapfile -t INFO < <(python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
r = c.get("recompile", {})
print(c["edit"]["file"]); print(r.get("unit", "?")); print(r.get("whole_unit_reason", ""))' "$REPRO/compile.json")
[ ${#INFO[@]} = 3 ] || { echo "cannot read $REPRO/compile.json"; exit 1; }
EDIT_REL=${EDIT_REL:-${INFO[0]}} UNIT=${INFO[1]} WHY=${INFO[2]}
[ -f "$REPRO/$EDIT_REL" ] || { echo "the reproducer has no $EDIT_REL to edit (--edit-file is relative to it)"; exit 2; }

# edit_repro N: the kerncap loop's edit of the reproducer's copy.
edit_repro() {
  [ -z "$(tail -c 1 "$REPRO/$EDIT_REL")" ] || echo >>"$REPRO/$EDIT_REL"  # not onto an unfinished last line
  if [ "$EDIT_KIND" = code ]; then
    printf '#ifndef KERNCAP_EDIT_LOOP_%s\n#define KERNCAP_EDIT_LOOP_%s\n__device__ inline int kerncap_edit_loop_%s(int x) { return x + %s; }\n#endif\n' \
      "$1" "$1" "$1" "$1" >>"$REPRO/$EDIT_REL"
  else
    echo "// edit $1" >>"$REPRO/$EDIT_REL"
  fi
}
# kc_make LOG TARGET...: the reproducer's make (with KC_MAKE_FLAGS); a validate-variant that
# does not PASS, or a failed make, stops the run.
kc_make() {
  local log=$1
  shift
  # shellcheck disable=SC2086 # KC_MAKE_FLAGS is a list of make arguments
  make -C "$REPRO" "$@" KERNCAP="$KC" ${KC_MAKE_FLAGS:-} >"$log" 2>&1 || fail "kerncap loop failed (make $*)" "$log"
  case " $* " in
    *" validate-variant "*) grep -q '^Result: PASS' "$log" || fail "validate-variant did not PASS" "$log" ;;
  esac
}
# traditional_loop LOG: touch, rebuild the application, rerun it.
traditional_loop() {
  touch "$TOUCH"
  { bash -c "$REBUILD_CMD" && bash -c "$APP_CMD"; } >"$1" 2>&1 || fail "rebuild+rerun failed" "$1"
}

case $EDIT_KIND in
  code) echo "edit file: $EDIT_REL; kerncap edit per iteration: code (an unused inline __device__ function appended)" ;;
  *) echo "edit file: $EDIT_REL; kerncap edit per iteration: comment (a '// edit N' line appended)" ;;
esac
echo "traditional edit per iteration: touch $TOUCH"
echo "recompile unit: $UNIT${WHY:+ ($WHY)}${KC_MAKE_FLAGS:+ (make flags: $KC_MAKE_FLAGS)}"

# ---- warm-up (untimed for the medians), and the whole unit once for comparison
edit_repro 0
t0=$(now)
kc_make "$WORK/warm-recompile.log" recompile
t_recompile=$(since "$t0")
t0=$(now)
kc_make "$WORK/warm-validate.log" validate-variant
echo "warm-up: kerncap loop: make recompile $t_recompile s, then make validate-variant $(since "$t0") s"
t0=$(now)
traditional_loop "$WORK/warm-trad.log"
echo "warm-up: rebuild+rerun $(since "$t0") s"
if [ "${WHOLE:-1}" = 0 ]; then
  echo "for comparison: skipped (WHOLE=0)"
elif [ "$UNIT" = kernel_instance.cu ]; then
  t0=$(now)
  make -C "$REPRO" -B recompile WHOLE_UNIT=1 KERNCAP="$KC" >"$WORK/whole.log" 2>&1 ||
    fail "make -B recompile WHOLE_UNIT=1 failed" "$WORK/whole.log"
  echo "for comparison, make -B recompile WHOLE_UNIT=1 (the whole unit): $(since "$t0") s"
  touch "$REPRO/kernel_instance.cu"  # the next recompile builds the instance again
else
  echo "for comparison: make recompile already compiles the whole unit"
fi

# ---- the timed iterations
# kc_iteration LOG: one kerncap iteration after an edit, `make recompile` then `make
# validate-variant` (what `make recompile validate-variant` runs, as two makes so the split
# shows): KC_T the whole, KC_R the recompile, KC_V the validation, in seconds.
kc_iteration() {
  local t0 t1
  t0=$(now)
  kc_make "$1.recompile" recompile
  KC_R=$(since "$t0")
  t1=$(now)
  kc_make "$1" validate-variant
  KC_V=$(since "$t1")
  KC_T=$(since "$t0")
}

printf '%-4s %-12s %-12s %s\n' rep kerncap_s rebuild+rerun_s "(recompile + validate)"
: >"$WORK/kc.txt"
: >"$WORK/trad.txt"
for rep in $(seq 1 "$REPS"); do
  edit_repro "$rep"
  kc_iteration "$WORK/kc-$rep.log"
  t0=$(now)
  traditional_loop "$WORK/trad-$rep.log"
  trad=$(since "$t0")
  echo "$KC_T" >>"$WORK/kc.txt"
  echo "$trad" >>"$WORK/trad.txt"
  printf '%-4s %-12s %-12s %s\n' "$rep" "$KC_T" "$trad" "($KC_R + $KC_V)"
done
KCM=$(median <"$WORK/kc.txt" | awk '{ printf "%.3f", $1 }')
TRM=$(median <"$WORK/trad.txt" | awk '{ printf "%.3f", $1 }')
# ---- the same make loop with `kerncap serve` holding the capture open (make serve in another
# terminal): each validate-variant is answered by the server, without a process's CUDA
# start-up and restore (docs/engine.md). SERVE=0 skips it.
SVM=''
if [ "${SERVE:-1}" = 1 ]; then
  "$KC" serve "$REPRO" --idle-timeout 600 >"$WORK/serve.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 600); do
    grep -q ' ready (pid' "$WORK/serve.log" && break
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.1
  done
  grep -q ' ready (pid' "$WORK/serve.log" || { kill "$SERVER" 2>/dev/null; fail "kerncap serve did not start" "$WORK/serve.log"; }
  : >"$WORK/served.txt"
  for rep in $(seq 1 "$REPS"); do
    edit_repro "$((100 + rep))"  # its own guard names, after the timed loop's 1..REPS
    kc_iteration "$WORK/served-$rep.log"
    grep -q 'evaluated by kerncap serve' "$WORK/served-$rep.log" ||
      { kill "$SERVER" 2>/dev/null; fail "validate-variant did not go to the server" "$WORK/served-$rep.log"; }
    echo "$KC_T" >>"$WORK/served.txt"
    echo "served $rep: $KC_T s (recompile $KC_R s + validate $KC_V s)"
  done
  "$KC" serve --stop "$REPRO" >>"$WORK/serve.log" 2>&1 || kill "$SERVER" 2>/dev/null
  wait "$SERVER" 2>/dev/null
  SVM=$(median <"$WORK/served.txt" | awk '{ printf "%.3f", $1 }')
fi
# ---- the same kind of edits, each evaluated in one engine session that keeps the capture
# restored (bench/edit_loop_session.py; the evaluation loop of docs/engine.md)
SEM=''
if [ "${SESSION:-1}" = 1 ]; then
  # shellcheck disable=SC2086 # KC_MAKE_FLAGS is a list of make arguments
  PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
    KERNCAP_REPLAY_LIB=${KERNCAP_REPLAY_LIB:-$BUILD/lib/libkerncap_replay.so} \
    python3 "$HERE/edit_loop_session.py" "$REPRO" "$EDIT_REL" "$REPS" --edit "$EDIT_KIND" KERNCAP="$KC" \
    ${KC_MAKE_FLAGS:-} >"$WORK/session.log" 2>&1 || fail "the session loop failed" "$WORK/session.log"
  sed 's/^/session /' "$WORK/session.log"
  SEM=$(awk '$1 == "median" { print $2 }' "$WORK/session.log")
fi
echo "application: $APP_NOTE"
echo "median: kerncap edit loop ${KCM} s (make recompile validate-variant), rebuild+rerun ${TRM} s"
awk -v a="$TRM" -v b="$KCM" 'BEGIN { printf "ratio: %.1fx faster with kerncap\n", a / b }'
if [ -n "$SVM" ]; then
  echo "median: kerncap edit loop with kerncap serve running ${SVM} s (make recompile validate-variant, answered by the server)"
  awk -v a="$TRM" -v b="$SVM" 'BEGIN { printf "ratio (served): %.1fx faster with kerncap\n", a / b }'
fi
if [ -n "$SEM" ]; then
  echo "median: kerncap edit loop in one session ${SEM} s (make recompile, then the engine session's strong evaluation)"
  awk -v a="$TRM" -v b="$SEM" 'BEGIN { printf "ratio (session): %.1fx faster with kerncap\n", a / b }'
fi

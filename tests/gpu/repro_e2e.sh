#!/usr/bin/env bash
# shellcheck disable=SC2034  # R_*: a case's row columns, read through CASE_COLUMNS (lib.sh tsv_row)
# Reproducer end-to-end suite on our multi-file fixture project
# (examples/multifile, built by the kerncap build with its compile_commands.json):
#   for three kernels (a templated kernel in a header, a .cu kernel over three include
#   directories, an extern "C" kernel in a header included by a relative path):
#     extract --source-dir --compile-commands -> the finder says how it found the source
#     make recompile (unmodified) -> make validate-variant PASS byte-exact
#     a deliberately wrong edit   -> make validate-variant FAIL naming the region and the
#                                    first differing offset (element 1000 of the output)
#     a faster edit               -> make validate-variant PASS, make run-variant shows the
#                                    new time, lower than the captured kernel's
#   and the .cu kernel again from multifile_shared_app, whose kernels live in a shared library
#   built from three units (libmultifile_kernels.so);
#   plus: a -D given to extract reaches the recompile (define removed from the database),
#   validate picks a fresh optimized.cubin and ignores a stale one, a wrong --source-dir is
#   classified and its reproducer still validates, make sass/sanitize/ncu run, and the
#   original tree is never written to.
# Prints one table row per case and "N passed, N failed". Exit 0 all passed, 1 some failed,
# 77 skipped (no GPU).
#
#   tests/gpu/repro_e2e.sh BUILD_DIR
#
# Environment: OUT (logs in $OUT/repro-logs, work in $OUT/repro-work), KERNCAP_GPU_CASES
# (regex on case names), KERNCAP_GPU_KEEP=1 (keep the work directory),
# KERNCAP_GPU_TIMEOUT (per command, default 300 s).
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/repro_e2e.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
APP=$EX/multifile_app
DB=$BUILD/compile_commands.json
TREE=$ROOT/examples/multifile
APP_ARGS="--n 1048576 --work 64 --steps 2"
for f in "$KC" "$APP" "$DB"; do
  [ -e "$f" ] || { echo "missing $f: build kerncap with examples first (cmake --build $BUILD)"; exit 1; }
done
command -v make >/dev/null || { echo "make is not installed: the reproducer's Makefile needs it"; exit 1; }

gpu_work_dir repro apart
trap cleanup EXIT
# The database names the checkout and build directory it was made in; this run may be elsewhere.
python3 "$HERE/relocate_compile_db.py" "$DB" "$ROOT" "$BUILD" "$WORK/compile_commands.json" || exit 1
DB=$WORK/compile_commands.json

# The original tree's fingerprint: the suite must never write to it.
tree_sum() { find "$TREE" -type f -print0 | sort -z | xargs -0 md5sum | md5sum | cut -c1-32; }
TREE_SUM=$(tree_sum)

# Each case runs in its own subshell (run_case, lib.sh) with D (its directory) and LOG (its log);
# its commands go through step (lib.sh): stdout and stderr in $STEP_LOG, both logged.
median_of() { grep -oE 'median [0-9.]+ ms' "$1" | head -n1 | awk '{print $2}'; }

R_SOURCE=- R_RECOMPILE=- R_VALIDATE=- R_WRONG=- R_FAST=- R_LOOP=- R_FAIL=0 R_NOTE=""
# tsv_row (lib.sh): the row's columns after the verdict (R_TIME: the case's seconds, run_case)
CASE_COLUMNS=(R_SOURCE R_RECOMPILE R_VALIDATE R_WRONG R_FAST R_LOOP R_TIME)

# extract_into DIR PATTERN [extra extract flags]: extract + finder; sets EDIT (edit file).
extract_into() {
  local dir=$1 pattern=$2
  shift 2
  if ! step extract "$KC" extract "$pattern" --cmd "$APP $APP_ARGS" --source-dir "$TREE" -o "$dir" "$@"; then
    bad "extract failed: $(grep -m1 -i error "$STEP_LOG")"
    return 1
  fi
  R_SOURCE=$(grep -m1 -oE 'source: [a-z-]+' "$STEP_LOG" | cut -d' ' -f2)
  EDIT=$(json_get "$dir/compile.json" edit.file)
  note "how: $(grep -m1 -oE 'how: (object file symbols|the captured image|the mangled)[^;]{0,40}' "$STEP_LOG" | cut -c6-)"
  return 0
}

# validate_variant DIR WANT(pass|fail): make validate-variant; checks the exit code and verdict.
validate_variant() {
  local dir=$1 want=$2 rc
  step "validate-variant-$want" make -C "$dir" validate-variant KERNCAP="$KC"
  rc=$?
  if [ "$want" = pass ]; then
    [ $rc -eq 0 ] && grep -Eq '^Result: PASS \(.*byte-exact' "$STEP_LOG" && return 0
    bad "validate-variant: rc=$rc $(grep -m1 '^Result' "$STEP_LOG")"
    return 1
  fi
  [ $rc -ne 0 ] && grep -q '^Result: FAIL' "$STEP_LOG" && return 0
  bad "validate-variant of a wrong edit: rc=$rc $(grep -m1 '^Result' "$STEP_LOG")"
  return 1
}

# The three edits, on the file holding the kernel (kernel_variant.cu or a mirrored header).
off_by_one_edit() { sed -i 's|^\([[:space:]]*\)\(.*// kc:store\)|\1if (i == 1000) r += 1;\n\1\2|' "$1"; }
fast_edit() { sed -i 's/\(mf::\)\{0,1\}slow_load(in, i, work)\(.*kc:slow\)/in[i]\2/' "$1"; }

# kernel_case PATTERN ELEMENT_BYTES WANT_UNIT: the full loop on one kernel.
kernel_case() {
  local pattern=$1 elem=$2 unit=$3 dir=$D/repro t0 base fast off
  extract_into "$dir" "$pattern" --compile-commands "$DB" || return
  [ "$R_SOURCE" = found ] || { bad "source not found: $(grep -m1 'source:' "$STEP_LOG")"; return; }
  [ "$(basename "$(json_get "$dir/compile.json" source.translation_unit)")" = "$unit" ] ||
    bad "translation unit $(json_get "$dir/compile.json" source.translation_unit), expected $unit"
  cp "$dir/$EDIT" "$D/original-edit-file"

  t0=$(now)
  step recompile make -C "$dir" recompile KERNCAP="$KC" || { R_RECOMPILE="FAIL"; bad "recompile: $(grep -m1 -i error "$STEP_LOG")"; return; }
  R_RECOMPILE="ok $(since "$t0")s"
  validate_variant "$dir" pass && R_VALIDATE=PASS || R_VALIDATE=FAIL
  step run make -C "$dir" run KERNCAP="$KC" ITERATIONS=50
  base=$(median_of "$STEP_LOG")

  # Deliberately wrong: element 1000 of the output is off by one.
  off_by_one_edit "$dir/$EDIT"
  if ! grep -q 'if (i == 1000) r += 1;' "$dir/$EDIT"; then bad "wrong edit not applied to $EDIT"; return; fi
  step recompile-wrong make -C "$dir" recompile KERNCAP="$KC" || { bad "recompile of the wrong edit failed"; return; }
  if validate_variant "$dir" fail; then
    off=$(grep -m1 -oE '^  region [0-9]+ .*first at byte offset [0-9]+' "$STEP_LOG" | grep -oE '[0-9]+$')
    if [ -n "$off" ] && [ $((off / elem)) -eq 1000 ]; then
      R_WRONG="FAIL@$off"
    else
      R_WRONG="FAIL?"
      bad "wrong edit: expected a region line with first offset in element 1000, got '$(grep -m1 '^  region' "$STEP_LOG")'"
    fi
  else
    R_WRONG="not caught"
  fi

  # Faster: the wasteful volatile loads replaced by one load; same result.
  cp "$D/original-edit-file" "$dir/$EDIT"
  fast_edit "$dir/$EDIT"
  grep -q 'in\[i\];  // kc:slow' "$dir/$EDIT" || { bad "faster edit not applied to $EDIT"; return; }
  t0=$(now)
  if step recompile-fast make -C "$dir" recompile KERNCAP="$KC" && validate_variant "$dir" pass; then
    R_LOOP="$(since "$t0")s"
  else
    bad "faster edit did not recompile and validate"
    return
  fi
  step run-variant make -C "$dir" run-variant KERNCAP="$KC" ITERATIONS=50
  fast=$(median_of "$STEP_LOG")
  R_FAST="${base:-?} -> ${fast:-?} ms"
  if [ -z "$base" ] || [ -z "$fast" ]; then
    bad "no median in make run / run-variant output"
  elif awk -v a="$base" -v b="$fast" 'BEGIN { exit !(b < a) }'; then
    note "speed-up $(awk -v a="$base" -v b="$fast" 'BEGIN { printf "%.1fx", a / b }')"
  else
    bad "the faster edit is not faster ($base -> $fast ms)"
  fi
}

# ---- cases ---------------------------------------------------------------------------------------
case_scale_template_header() { kernel_case 'scale_kernel<float, 4>' 4 pipeline.cu; }
case_stencil_three_dirs() { kernel_case 'mf::stencil3' 4 stencil.cu; }
case_bias_extern_c() { kernel_case 'mf_bias' 4 main.cu; }
# The same kernel, its code image loaded from libmultifile_kernels.so (three units) that
# multifile_shared_app links.
case_shared_lib_stencil() {
  [ -x "$BUILD/examples/multifile_shared_app" ] || { bad "missing $BUILD/examples/multifile_shared_app"; return; }
  APP=$BUILD/examples/multifile_shared_app kernel_case 'mf::stencil3' 4 stencil.cu
}

# MF_FAST_PATH changes mf_bias; remove it from the database and give it with -D instead.
case_define_reaches_recompile() {
  local db=$D/compile_commands.json
  python3 - "$DB" "$db" <<'PY'
import json, sys
entries = json.load(open(sys.argv[1]))
for e in entries:
    if "command" in e:
        e["command"] = e["command"].replace(" -DMF_FAST_PATH", "")
    else:
        e["arguments"] = [a for a in e["arguments"] if a != "-DMF_FAST_PATH"]
json.dump(entries, open(sys.argv[2], "w"), indent=1)
PY
  extract_into "$D/with" mf_bias --compile-commands "$db" -D MF_FAST_PATH || return
  step recompile-with make -C "$D/with" recompile KERNCAP="$KC" || { bad "recompile with -D failed"; return; }
  grep -q -- '-DMF_FAST_PATH' "$STEP_LOG" || bad "-DMF_FAST_PATH not on the recompile command line"
  validate_variant "$D/with" pass && R_VALIDATE="PASS with -D"
  extract_into "$D/without" mf_bias --compile-commands "$db" || return
  step recompile-without make -C "$D/without" recompile KERNCAP="$KC" || { bad "recompile without -D failed"; return; }
  validate_variant "$D/without" fail && R_WRONG="FAIL without -D"
}

# validate without --cubin: a fresh optimized.cubin is used, a stale one is not.
case_validate_autodetect() {
  local dir=$D/repro
  extract_into "$dir" 'mf::stencil3' --compile-commands "$DB" || return
  step recompile make -C "$dir" recompile KERNCAP="$KC" || { bad "recompile failed"; return; }
  step validate-auto "$KC" validate "$dir"
  if [ $? -eq 0 ] && grep -q 'validating the variant' "$STEP_LOG"; then R_VALIDATE="auto: variant"; else bad "fresh optimized.cubin not used: $(head -c 200 "$STEP_LOG")"; fi
  sleep 1.1
  touch "$dir/kernel_variant.cu"
  step validate-stale "$KC" validate "$dir"
  if [ $? -eq 0 ] && grep -q 'older than kernel_variant.cu' "$STEP_LOG" && ! grep -q 'validating the variant' "$STEP_LOG"; then
    R_WRONG="stale: captured"
  else
    bad "stale optimized.cubin handling: $(head -c 200 "$STEP_LOG")"
  fi
  step validate-baseline "$KC" validate "$dir" --baseline
  [ $? -eq 0 ] || bad "--baseline validate failed"
}

# A wrong --source-dir is classified; the reproducer still replays and validates.
case_wrong_source_dir() {
  local dir=$D/repro
  step extract "$KC" extract 'mf::stencil3' --cmd "$APP $APP_ARGS" --source-dir "$ROOT/tests/fixtures/source/nosource" -o "$dir"
  [ $? -eq 0 ] || { bad "extract failed"; return; }
  R_SOURCE=$(grep -m1 -oE 'source: [a-z-]+' "$STEP_LOG" | cut -d' ' -f2)
  [ "$R_SOURCE" = not-in-tree ] || bad "classified as '$R_SOURCE', expected not-in-tree"
  step recompile make -C "$dir" recompile KERNCAP="$KC"
  if [ $? -ne 0 ] && grep -q 'recompile is not available' "$STEP_LOG"; then R_RECOMPILE="explained"; else bad "make recompile did not explain"; fi
  step validate make -C "$dir" validate KERNCAP="$KC"
  if [ $? -eq 0 ] && grep -q '^Result: PASS' "$STEP_LOG"; then R_VALIDATE=PASS; else bad "make validate failed"; fi
}

# The tool targets: sass (cuobjdump), sanitize (compute-sanitizer), ncu.
case_tool_targets() {
  local dir=$D/repro
  extract_into "$dir" 'scale_kernel<float, 4>' --compile-commands "$DB" || return
  step recompile make -C "$dir" recompile KERNCAP="$KC" || { bad "recompile failed"; return; }
  if step sass make -C "$dir" sass KERNCAP="$KC" && [ -s "$dir/baseline.sass" ] && [ -s "$dir/variant.sass" ]; then
    note "sass: $(grep -c . "$dir/baseline.sass") / $(grep -c . "$dir/variant.sass") lines"
  else
    bad "make sass: $(tail -n1 "$STEP_LOG")"
  fi
  if step sanitize make -C "$dir" sanitize KERNCAP="$KC"; then
    note "sanitize: $(grep -m1 -oE 'ERROR SUMMARY: [0-9]+ errors?' "$STEP_LOG")"
  else
    bad "make sanitize: $(grep -m1 -E 'ERROR|error' "$STEP_LOG")"
  fi
  if step ncu make -C "$dir" ncu KERNCAP="$KC"; then
    grep -q 'scale_kernel' "$STEP_LOG" && note "ncu: profiled" || bad "ncu printed no kernel section"
  elif grep -q 'ERR_NVGPUCTRPERM' "$STEP_LOG"; then
    note "ncu: no permission for performance counters (ERR_NVGPUCTRPERM)"
  else
    bad "make ncu: $(grep -m1 -E '==ERROR==|error' "$STEP_LOG")"
  fi
}

# ---- driver ----------------------------------------------------------------------------------
CASES=(scale_template_header stencil_three_dirs bias_extern_c shared_lib_stencil define_reaches_recompile validate_autodetect
       wrong_source_dir tool_targets)
T0=$(now)
for c in "${CASES[@]}"; do
  want -E "$c" && run_case "$c"
done

if [ "$(tree_sum)" != "$TREE_SUM" ]; then
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' original_tree_untouched FAIL - - - - - - - \
    "examples/multifile changed during the suite" >>"$ROWS"
else
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' original_tree_untouched PASS - - - - - - - \
    "md5 of examples/multifile unchanged" >>"$ROWS"
fi

printf '%-28s %-5s %-12s %-12s %-14s %-16s %-22s %-8s %-7s %s\n' case result source recompile validate-var \
  wrong-edit "faster (base->var)" loop time notes
while IFS=$'\t' read -r c res src rec val wrong fast loop t notes; do
  printf '%-28s %-5s %-12s %-12s %-14s %-16s %-22s %-8s %-7s %s\n' "$c" "$res" "$src" "$rec" "$val" "$wrong" "$fast" \
    "$loop" "$t" "$notes"
done <"$ROWS"
tsv_summary

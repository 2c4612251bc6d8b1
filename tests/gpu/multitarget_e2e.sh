#!/usr/bin/env bash
# GPU suite for several targets in one run (`kerncap extract --kernel A --kernel B ...` and
# `--top N --from profile.json`), on a small PyTorch model (tests/gpu/multitarget_model.py)
# and the graph programs of tests/gpu/graph_apps:
#   five       five kernels of the model in one run: each captured into OUT/NN-<name>/,
#              each validated (footprint first: strong where it exists, else weak)
#   top3       `kerncap profile -o profile.json`, then `extract --top 3 --from profile.json`:
#              three captures, each validated
#   never      a target never launched beside one that is: exit 2 naming the missing target,
#              the other captured and validated, targets.json says which is which
#   continue   the five targets with --continue: the model's printed checksum equals the one
#              of a run without kerncap
#   graph_never  a target only in a CUDA graph never launched, beside one that runs: exit 2,
#              the message says "never launched", the other is captured
#   graph_nested a graph launched on a stream being captured into another graph, beside a
#              target that runs: exit 2, a clear message, the application exits 0 (no crash)
# Prints one PASS/FAIL line per case, then a table (case | target | captured kernel |
# validation strength | verdict) and "N passed, N failed". Exit 0 all passed, 1 some failed,
# 77 skipped (no GPU).
#
#   tests/gpu/multitarget_e2e.sh BUILD_DIR
#
# Environment: OUT (work files under it, kept), KERNCAP_GPU_CASES (names to run), TORCH_PY
# (python with CUDA torch, default python3), KERNCAP_GPU_TIMEOUT (per command, default 300 s).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/multitarget_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${TORCH_PY:-python3}
[ -x "$KC" ] || { echo "missing $KC"; exit 1; }
gpu_work_dir multitarget
echo "multitarget suite: work in $WORK"
MODEL="$HERE/multitarget_model.py"
VERDICT_STYLE=column VERDICT_WIDTH=13  # verdict: "CASE  PASS  NOTE"
ERROR_RE='error|fail'                  # first_error

# index PARENT EXPR: a Python expression over PARENT/targets.json (t = its targets list).
index() { json_get "$1/targets.json" "(lambda t: $2)(j['targets'])"; }

# validate_dir CASE DIR: footprint (when it can be measured), then validate; adds a row.
# Sets STRENGTH (strong|weak|FAIL).
validate_dir() {
  local c=$1 dir=$2 name kname res rc
  name=$(basename "$dir")
  kname=$("$KC" info --json "$dir" 2>/dev/null | json_get - 'j["kernel"]["demangled"][:60]')
  run "$c-$name-fp" "$KC" footprint "$dir"
  local fp=$RC
  run "$c-$name-val" "$KC" validate "$dir"
  rc=$RC
  res=$(result_of)
  if [ $rc -eq 0 ] && [[ $res == *PASS* ]]; then
    if [[ $res == *strong* ]]; then STRENGTH=strong; else STRENGTH=weak; fi
    [ $fp -eq 0 ] || STRENGTH="$STRENGTH (no footprint)"
  else
    STRENGTH="FAIL: rc $rc ${res:-$(first_error)}"
  fi
  row "$c | $name | ${kname:-?} | $STRENGTH | $([[ $STRENGTH == FAIL* ]] && echo FAIL || echo PASS)"
}

# validate_all CASE PARENT: every captured target of PARENT; sets BAD to the failures.
validate_all() {
  BAD=0
  local d
  for d in $(index "$2" "' '.join(x['dir'] for x in t if x['captured'])"); do
    validate_dir "$1" "$2/$d"
    [[ $STRENGTH == FAIL* ]] && BAD=$((BAD + 1))
  done
}

# all_captured CASE N NOTE PREFIX: after `run CASE ... extract -o $WORK/CASE`: the extract
# succeeded with all N targets captured, each validated (NOTE is the PASS line's; PREFIX goes
# before a failed extract's note); adds a row when the extract failed.
all_captured() {
  local c=$1 count=$2 ok_note=$3 prefix=$4 n
  n=$(index "$WORK/$c" "sum(x['captured'] for x in t)")
  if [ "$RC" -eq 0 ] && [ "$n" = "$count" ]; then
    validate_all "$c" "$WORK/$c"
    if [ "$BAD" -eq 0 ]; then verdict "$c" PASS "$ok_note"; else verdict "$c" FAIL "$BAD of $count failed validation"; fi
  else
    verdict "$c" FAIL "${prefix}rc $RC, $n captured: $(grep -m2 -E 'NOT|error' "$WORK/$c.err" | tr '\n' ' ' | cut -c1-200)"
    row "$c | | | extract failed (rc $RC) | FAIL"
  fi
}

FIVE=(--regex --kernel 'layer_norm' --kernel 'nvjet|gemm|xmma|cutlass@1' --kernel 'Gelu'
      --kernel '[Ss]oft[Mm]ax@2' --kernel 'reduce_kernel@1')

if torch_ok; then
  run names "$PY" "$MODEL" names
  echo "the model's kernels:"; sed 's/^/  /' "$WORK/names.out" | cut -c1-150

  if want five; then
    run five "$KC" extract "${FIVE[@]}" -o "$WORK/five" -- "$PY" "$MODEL" 3
    all_captured five 5 "5 captures in one run, all validated" ""
  fi

  if want top3; then
    run profile "$KC" profile -o "$WORK/profile.json" -- "$PY" "$MODEL" 3
    run top3 "$KC" extract --top 3 --from "$WORK/profile.json" -o "$WORK/top3" -- "$PY" "$MODEL" 3
    all_captured top3 3 "the profile's top 3 captured and validated" "profile rc? extract "
  fi

  if want never; then
    run never "$KC" extract --kernel layer_norm --kernel no_such_kernel_xyz -o "$WORK/never" -- "$PY" "$MODEL" 2
    ok=1
    [ $RC -eq 2 ] || ok=0
    grep -q "01-no_such_kernel_xyz 'no_such_kernel_xyz' (dispatch 0): no launched kernel matches" "$WORK/never.err" || ok=0
    [ "$(index "$WORK/never" "[x['captured'] for x in t]")" = "[True, False]" ] || ok=0
    validate_all never "$WORK/never"
    [ $BAD -eq 0 ] || ok=0
    verdict never "$(pass_if "$ok")" "rc $RC: $(grep -m1 "01-no_such_kernel_xyz 'no_such" "$WORK/never.err" | cut -c1-150)"
  fi

  if want continue; then
    run plain "$PY" "$MODEL" 3
    run continue "$KC" extract "${FIVE[@]}" --continue -o "$WORK/continue" -- "$PY" "$MODEL" 3
    a=$(grep -h -m1 '^checksum model' "$WORK/plain.out")
    b=$(grep -h -m1 '^checksum model' "$WORK/continue.out" "$WORK/continue.err")
    n=$(index "$WORK/continue" "sum(x['captured'] for x in t)")
    ok=0
    [ $RC -eq 0 ] && [ "$n" = 5 ] && [ -n "$a" ] && [ "$a" = "$b" ] && ok=1
    verdict continue "$(pass_if "$ok")" "without kerncap: '${a:-none}', with --continue: '${b:-none}', $n captured"
    row "continue | (5 targets) | output identical: $([ -n "$a" ] && [ "$a" = "$b" ] && echo yes || echo NO) | - | $([ $ok = 1 ] && echo PASS || echo FAIL)"
  fi
else
  echo "torch cases: SKIPPED (no $PY with CUDA torch)"
  row "torch cases | | | skipped: no CUDA torch | SKIP"
fi

# The graph refusals, beside a target that runs (tests/gpu/graph_apps/graph_bad.cu).
if want graph_never || want graph_nested; then
  SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
  if "$NVCC" -O2 -arch=sm_"$SM" -o "$WORK/graph_bad" "$HERE/graph_apps/graph_bad.cu" >"$WORK/graph_bad.build.log" 2>&1; then
    for mode in never nested; do
      want graph_$mode || continue
      run graph_$mode "$KC" extract --kernel badOther --kernel "$([ $mode = never ] && echo badNever || echo badNested)" \
        --continue -o "$WORK/graph_$mode" -- "$WORK/graph_bad" "$mode"
      if [ $mode = never ]; then want_text='seen only as a node of a CUDA graph that was instantiated but never launched'
      else want_text='launched on a stream being captured into another graph'; fi
      ok=1
      [ $RC -eq 2 ] || ok=0
      grep -q "$want_text" "$WORK/graph_$mode.err" || ok=0
      grep -q 'the application exited with code 0' "$WORK/graph_$mode.out" || ok=0
      [ "$(index "$WORK/graph_$mode" "[x['captured'] for x in t]")" = "[True, False]" ] || ok=0
      validate_all graph_$mode "$WORK/graph_$mode"
      [ $BAD -eq 0 ] || ok=0
      verdict graph_$mode "$(pass_if "$ok")" "rc $RC: $(grep -m1 -o "$want_text" "$WORK/graph_$mode.err")"
    done
  else
    verdict graph_build FAIL "cannot build graph_bad: $(tail -2 "$WORK/graph_bad.build.log")"
  fi
fi

{
  table "case | target dir | captured kernel | validation | verdict"
  echo
  summary
} | tee "$WORK/summary.md"
[ "$failed" -eq 0 ]

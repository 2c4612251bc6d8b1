#!/usr/bin/env bash
# GPU suite for the reachable closure (docs/capture.md): every application of the suite is
# captured twice, with the default closure (regions no pointer of the launch reaches are
# recorded by address and size only) and with --closure all (every region stored), and both
# captures are validated with the defaults. The validation results must be identical (same
# verdict, same regions, same per-region results and strength) apart from what may differ
# between two runs of an application (addresses) and the note that the default capture
# omitted regions; neither may report a closure gap.
# Prints one PASS/FAIL line per case, a table and "N passed, N failed".
# Exit 0 all passed, 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/closure_e2e.sh BUILD_DIR
#
# Environment: OUT (work files and logs under it), KERNCAP_GPU_KEEP=1 (keep them),
# KERNCAP_GPU_TIMEOUT (per-command limit, default 180 s), KERNCAP_PYTHON (python with torch
# for the PyTorch cases, default python3; without torch they are skipped),
# KERNCAP_GPU_CASES (extended regex: only the cases whose name matches).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/closure_e2e.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
PY=${KERNCAP_PYTHON:-python3}
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-180}
[ -x "$KC" ] || { echo "missing $KC (build kerncap first)"; exit 1; }
gpu_work_dir closure
trap cleanup EXIT
unset KERNCAP_STORE
echo "closure suite: work in $WORK"

# The parts of `validate --json` that must not depend on the closure: the verdict, the
# strength, every region's id, kind, size and results (addresses and the omitted-regions
# note aside: two runs of an application may place memory elsewhere).
normalize() {
  "$PY" - "$1" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
drop_region = {"base", "summary"}
out = {k: v.get(k) for k in ("result", "strength", "written_bytes", "footprint_written_bytes", "poisoned_bytes",
                             "nondeterministic_regions", "spec", "closure_gaps")}
out["regions"] = [{k: x for k, x in r.items() if k not in drop_region} for r in v.get("regions", [])]
print(json.dumps(out, sort_keys=True, indent=1))
PY
}

# one NAME PATTERN [extract flags] -- APP...
one() {
  local name=$1 pattern=$2
  shift 2
  want -E "$name" || return
  local dir=$WORK/$name
  mkdir -p "$dir"
  local mode detail="" ok=0 stored=()
  for mode in reachable all; do
    if ! kc extract "$pattern" --closure "$mode" -o "$dir/$mode" -q "$@" >"$dir/extract-$mode.log" 2>&1; then
      verdict "$name" FAIL "extract --closure $mode failed: $(grep -m1 -iE 'error|fail' "$dir/extract-$mode.log" | cut -c1-120)"
      return
    fi
    kc validate "$dir/$mode" --json >"$dir/validate-$mode.json" 2>"$dir/validate-$mode.err"
    if ! normalize "$dir/validate-$mode.json" >"$dir/norm-$mode.json" 2>>"$dir/validate-$mode.err"; then
      verdict "$name" FAIL "validate --json ($mode) gave no result: $(tail -1 "$dir/validate-$mode.err" | cut -c1-120)"
      return
    fi
    stored+=("$(kc info "$dir/$mode" --json 2>/dev/null | chunk_stats - 2>/dev/null |
      awk '{ printf "%d regions, %d omitted, %.1f MiB of chunks", $1, $2, $4 / 2^20 }' || echo '?')")
  done
  local res_r res_a gaps
  res_r=$(json_get "$dir/norm-reachable.json" result)
  res_a=$(json_get "$dir/norm-all.json" result)
  gaps=$(json_get "$dir/norm-reachable.json" 'j["closure_gaps"] or 0')
  if ! diff -u "$dir/norm-all.json" "$dir/norm-reachable.json" >"$dir/diff.txt"; then
    ok=1
    detail="results differ: $(grep -m3 '^[-+] ' "$dir/diff.txt" | tr '\n' ' ' | cut -c1-160)"
  elif [ "$res_r" != PASS ]; then
    ok=1
    detail="both $res_r"
  elif [ "$gaps" != 0 ]; then
    ok=1
    detail="closure gap reported ($gaps)"
  fi
  [ -z "$detail" ] && detail="identical $res_r/$res_a; default: ${stored[0]}; all: ${stored[1]}"
  check "$name" "$detail" $ok
}

ex() {  # ex NAME EXAMPLE PATTERN [flags]: an example of the suite (skipped when not built)
  local name=$1 bin=$EX/$2
  shift 2
  if [ ! -x "$bin" ]; then
    want -E "$name" && verdict "$name" SKIP "$bin not built"
    return
  fi
  local pattern=$1
  shift
  one "$name" "$pattern" "$@" -- "$bin"
}

# The deterministic applications of tests/gpu/run.sh (atomic_norm is not: its two runs differ).
ex vector_add vector_add vectorAdd
ex accumulate accumulate accumulate --dispatch 4
ex batched_ptrs batched_ptrs batchedScale
ex struct_ptrs struct_ptrs stepParticles --dispatch 1
ex globals globals polyEval --dispatch 1
ex big_smem big_smem reverseTiles
ex templated templated 'transform_kernel<double'
ex dispatch dispatch iterate --dispatch 3
ex async_stream async_stream smooth3 --dispatch 1
ex managed managed refine --dispatch 1
ex mapped_host mapped_host zeroCopyScale
ex cooperative cooperative gridSum
ex driver_extra driver_extra saxpyExtra
if torch_ok; then
  one torch_elementwise MulFunctor -- "$PY" "$HERE/torch_app.py" elementwise
  one torch_reduce reduce_kernel -- "$PY" "$HERE/torch_app.py" reduce
  one torch_gemm_fp16 'nvjet|gemm|xmma|cutlass' --regex -- "$PY" "$HERE/torch_app.py" gemm_fp16
else
  verdict torch SKIP "no $PY with CUDA torch"
fi

summary -s

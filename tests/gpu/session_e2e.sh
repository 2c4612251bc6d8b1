#!/usr/bin/env bash
# GPU suite for the evaluation loop (engine.Session.evaluate, kc_evaluate): one session, many
# variant images. Per case: extract a capture, `kerncap footprint` it (strong verdicts, fuzz),
# then tests/gpu/session_check.py drives the loop in one Python process:
#   vector_add   200 evaluations of the captured image all PASS (only the written bytes put
#                back); the captured image given as bytes needs no module load; captured and a
#                recompiled copy alternately, timed, all PASS at >= 100 evaluations/s; reloads
#                with keep_loaded=False; the no-op variant FAILs and the next evaluation PASSes;
#                an image without vectorAdd is refused (exit code 2) and the session goes on;
#                fuzz: the recompiled copy passes, the clamping variant fails; device memory
#                (cuMemGetInfo) and host memory flat over the loops
#   globals      module globals: the captured image and a recompiled copy (its own globals)
#                alternately, each switch a full restore, all PASS
#   torch_gemm   a cuBLAS GEMM (when torch with CUDA is there): the captured image, rate shown
# Then bench/variant_rate.py prints evaluations/s beside a `kerncap validate` process per
# evaluation. Prints one table row per case and "N passed, N failed". Exit 0 all passed,
# 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/session_e2e.sh BUILD_DIR
#
# Environment: OUT (work files under it), KERNCAP_GPU_CASES (names to run), TORCH_PY
# (python with CUDA torch, default python3), KERNCAP_GPU_TIMEOUT (per command, default 300 s),
# SESSION_MIN_RATE (default 100).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/session_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PY=${TORCH_PY:-python3}
MIN_RATE=${SESSION_MIN_RATE:-100}
export KERNCAP_REPLAY_LIB=$BUILD/lib/libkerncap_replay.so
for f in "$KC" "$KERNCAP_REPLAY_LIB" "$EX/vector_add" "$EX/vector_add.cubin" "$EX/vector_add_noop.cubin"; do
  [ -e "$f" ] || { echo "missing $f (build first: cmake --build $BUILD)"; exit 1; }
done
gpu_work_dir session
LOG=$WORK/log.txt LOG_TAIL=40  # run (lib.sh): each command and the last 40 lines of its output there
echo "evaluation loop suite: work in $WORK"

rates() { grep -h '^rate:' "$D/$1.out" | sed 's/^rate: //; s/ evaluations\/s/\/s/' | cut -d'(' -f1 | paste -sd';' | cut -c1-120; }

# capture NAME PATTERN [extract flags] -- APP ARGS: extract and footprint into $D/cap.
capture() {
  local name=$1 pattern=$2
  shift 2
  D=$WORK/$name
  mkdir -p "$D"
  CAP=$D/cap
  PROBLEMS=""
  if ! run extract "$KC" extract "$pattern" -o "$CAP" "$@"; then
    case_row "$name" extract "extract failed: $(first_error extract) | "
    return 1
  fi
  "$KC" info --json "$CAP" >"$D/info.json" 2>>"$LOG"
  KNAME=$(info 'm["kernel"]["demangled"][:48]')
  ARCH=$(info '"sm_{}{}".format(*m["device"]["cc"])')
  run footprint "$KC" footprint "$CAP" || echo "  note: no footprint for $name (weak verdicts, no fuzz): $(first_error footprint)"
}

# session_check STEP ARGS...: session_check.py on $CAP; failing checks become problems.
session_check() {
  local step=$1 rc
  shift
  run "$step" "$PY" "$HERE/session_check.py" "$CAP" "$@"
  rc=$?
  grep -h '^\(PASS\|FAIL\|rate:\)' "$D/$step.out"
  if [ $rc -ne 0 ]; then
    local which
    which=$(grep -h '^FAIL' "$D/$step.out" | cut -d: -f1 | cut -c6- | paste -sd, -)
    PROBLEMS+="$step rc $rc ${which:-$(first_error "$step")}; "
  fi
}

if want vector_add && capture vector_add vectorAdd -- "$EX/vector_add" 100000; then
  # An image that lacks vectorAdd: driver_extra's kernel (a cubin built with the examples).
  session_check loop --same "$EX/vector_add.cubin" --wrong "$EX/vector_add_noop.cubin" \
    --other-kernel "$EX/driver_extra_kernel.cubin" --fuzz-fails "$EX/vector_add_clamp.cubin" -n 200 --min-rate "$MIN_RATE"
  run bench "$PY" "$REPO/bench/variant_rate.py" "$CAP" --image "$EX/vector_add.cubin" -n 200 --kerncap "$KC" ||
    PROBLEMS+="variant_rate.py: $(first_error bench); "
  sed -n '/^|/p' "$D/bench.out"
  case_row vector_add "$PROBLEMS" "$KNAME | $(rates loop)"
fi

if want globals && capture globals polyEval --dispatch 1 -- "$EX/globals"; then
  # A recompiled copy of the module: its own __constant__/__device__ globals.
  if timeout "$TIMEOUT" "$NVCC" -cubin -arch="$ARCH" -O3 -I"$REPO/examples" "$REPO/examples/globals.cu" \
      -o "$D/globals.cubin" 2>>"$LOG"; then
    session_check loop --same "$D/globals.cubin" -n 40
  else
    PROBLEMS+="nvcc could not build globals.cubin; "
  fi
  case_row globals "$PROBLEMS" "$KNAME | $(rates loop)"
fi

if want torch_gemm; then
  if torch_ok; then
    if capture torch_gemm 'nvjet|gemm|xmma|cutlass' --regex --dispatch 3 -- "$PY" "$HERE/torch_loop.py" gemm 5; then
      session_check loop -n 50
      run bench "$PY" "$REPO/bench/variant_rate.py" "$CAP" -n 100 --kerncap "$KC" ||
        PROBLEMS+="variant_rate.py: $(first_error bench); "
      sed -n '/^|/p' "$D/bench.out"
      case_row torch_gemm "$PROBLEMS" "$KNAME | $(rates loop)"
    fi
  else
    row "torch_gemm | skipped: no $PY with CUDA torch | | SKIP"
  fi
fi

{
  table "case | kernel | evaluations/s | verdict"
  echo
  summary
} | tee -a "$LOG"
[ "$failed" -eq 0 ]

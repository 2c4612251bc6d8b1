#!/usr/bin/env bash
# Stateful kernels replay safely: before every launch, timing puts back the bytes a launch
# changes (device-side counters included), so launch N sees the memory launch 1 saw.
#   work_queue       examples/work_queue.cu takes tiles from a global counter and traps on a
#                    stale one: 100 consecutive `kerncap replay -n 100` complete, validate
#                    PASSes after, and `--no-restore` faults (the case is not vacuous)
#   cub_reduce       examples/cub_reduce.cu (a CUB kernel with a __device__ block counter):
#                    100 consecutive replays, validate PASSes after
#   cub_onesweep     CUB's onesweep radix sort (cub::DeviceRadixSort, built here with nvcc from
#                    tests/gpu/stateful_apps/onesweep.cu: no torch needed), same checks
#   torch_onesweep   CUB's onesweep radix sort inside torch.sort (python3 with CUDA torch;
#                    SKIP without it or when this torch does not launch a onesweep kernel)
# Every case also runs tests/gpu/stateful_check.py: 100 launches in ONE replay session, the
# last of them compared with the capture's AFTER (it must PASS: the state put back before
# each launch is the captured one, not what 99 launches left).
# Prints one row per case and "N passed, N failed". Exit 0 all passed, 1 some failed,
# 77 skipped (no GPU).
#
#   tests/gpu/stateful_e2e.sh BUILD_DIR
#
# Environment: OUT (logs in $OUT/stateful-logs), KERNCAP_GPU_KEEP=1 (keep the work directory),
# KERNCAP_GPU_CASES (case names to run, default all), KERNCAP_GPU_TIMEOUT (per command,
# default 300 s), KERNCAP_STATEFUL_REPLAYS (default 100),
# KERNCAP_PYTHON (python with torch, default python3), NVCC (default: nvcc on PATH, else
# /usr/local/cuda/bin/nvcc).
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/stateful_e2e.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
REPLAYS=${KERNCAP_STATEFUL_REPLAYS:-100}
TORCH_PY=${KERNCAP_PYTHON:-python3}
export KERNCAP_REPLAY_LIB=$BUILD/lib/libkerncap_replay.so
for f in "$KC" "$EX/work_queue" "$EX/cub_reduce" "$KERNCAP_REPLAY_LIB"; do
  [ -e "$f" ] || { echo "missing $f: build kerncap with examples first (cmake --build $BUILD)"; exit 1; }
done

gpu_work_dir stateful in-work
trap cleanup EXIT

VERDICT_STYLE=row VERDICT_WIDTH=16  # verdict: one table row per case, at once
ERROR_RE=error                      # first_error

# replays NAME DIR: REPLAYS consecutive `kerncap replay -n 100`; the note on stdout. Returns 1
# at the first failure.
replays() {
  local name=$1 dir=$2 k
  for ((k = 1; k <= REPLAYS; k++)); do
    if ! step "$name-replay" "$KC" replay "$dir" -n 100 --json; then
      echo "replay $k of $REPLAYS failed: $(grep -m1 -iE 'error|fault' "$STEP_LOG" | cut -c1-160)"
      return 1
    fi
  done
  local summary
  summary=$(json_get "$STEP_LOG" '"{} {} {:.4f} ms".format(j["method"], j["restore"], j["median_ms"])')
  echo "$REPLAYS x replay -n 100 ok (last: ${summary:-?})"
}

validates() {  # validates NAME DIR
  step "$1-validate" "$KC" validate "$2" && grep -q '^Result: PASS' "$STEP_LOG"
}

# in_session NAME DIR: REPLAYS launches in one session, the last one validated.
in_session() {
  step "$1-session" python3 "$HERE/stateful_check.py" "$2" -n "$REPLAYS" && grep -q '^PASS' "$STEP_LOG"
}
# checks NAME DIR: replays, validate, in_session; sets ok (0 on a failure) and note.
checks() {
  ok=1
  note=$(replays "$1" "$2") || ok=0
  if validates "$1" "$2"; then note="$note; validate PASS"; else ok=0; note="$note; validate: $(grep -m1 -E '^Result|error' "$STEP_LOG")"; fi
  if in_session "$1" "$2"; then
    note="$note; $REPLAYS launches in one session, the last PASSes"
  else
    ok=0
    note="$note; in one session: $(grep -m1 -E '^(PASS|FAIL)|rror' "$STEP_LOG" | cut -c1-160)"
  fi
}

# extract_checked CASE TAG DIR PATTERN APP...: extract PATTERN from APP into DIR (step
# TAG-extract), then `checks TAG DIR`; false, with the case's FAIL row, when the extract fails.
extract_checked() {
  local name=$1 tag=$2 dir=$3 pattern=$4
  shift 4
  if ! step "$tag-extract" "$KC" extract "$pattern" -o "$dir" -- "$@"; then
    verdict "$name" FAIL "extract failed: $(first_error)"
    return 1
  fi
  checks "$tag" "$dir"
}

echo "| case             | res  | notes |"
echo "|------------------|------|-------|"

# ---- work_queue ---------------------------------------------------------------------------
DIR=$WORK/work_queue
if want work_queue && extract_checked work_queue wq "$DIR" take_tiles "$EX/work_queue"; then
  if step wq-no-restore "$KC" replay "$DIR" --no-restore -n 2 --warmup 0; then
    ok=0; note="$note; --no-restore did not fault (the counter is not stateful?)"
  else
    note="$note; --no-restore faults as expected"
  fi
  verdict work_queue "$(pass_if "$ok")" "$note"
fi

# ---- cub_reduce ---------------------------------------------------------------------------
if want cub_reduce && extract_checked cub_reduce cub "$WORK/cub_reduce" block_sums "$EX/cub_reduce"; then
  verdict cub_reduce "$(pass_if "$ok")" "$note"
fi

# ---- cub onesweep (our own program) ---------------------------------------------------------
SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
if ! want cub_onesweep; then :
elif ! step cubsort-build "$NVCC" -O2 -arch=sm_"$SM" -o "$WORK/onesweep_app" "$HERE/stateful_apps/onesweep.cu"; then
  verdict cub_onesweep FAIL "cannot build tests/gpu/stateful_apps/onesweep.cu: $(first_error | cut -c1-120)"
elif extract_checked cub_onesweep cubsort "$WORK/cub_onesweep" Onesweep "$WORK/onesweep_app"; then
  verdict cub_onesweep "$(pass_if "$ok")" "$note"
fi

# ---- torch onesweep -----------------------------------------------------------------------
if ! want torch_onesweep; then :
elif ! torch_ok "$TORCH_PY"; then
  verdict torch_onesweep SKIP "no $TORCH_PY with CUDA torch"
else
  DIR=$WORK/torch_onesweep
  if ! step os-extract "$KC" extract Onesweep -o "$DIR" -- "$TORCH_PY" "$HERE/torch_sort.py"; then
    # Only a torch that sorts without onesweep is a reason to skip; any other error fails.
    if grep -qi "no launched kernel matches" "$STEP_LOG"; then
      verdict torch_onesweep SKIP "this torch launches no onesweep kernel"
    else
      verdict torch_onesweep FAIL "extract failed: $(first_error)"
    fi
  else
    checks os "$DIR"
    verdict torch_onesweep "$(pass_if "$ok")" "$note"
  fi
fi

echo "logs: $LOGS"
summary

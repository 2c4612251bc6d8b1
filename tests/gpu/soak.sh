#!/usr/bin/env bash
# Issue 38's soak on the GPU (tests/gpu/soak.py): fault_app's fm_step captured (BEFORE 4 MiB,
# AFTER 1 MiB), four candidates compiled here (correct, wrong, nan, fault), then soak.py for
# SECONDS (default 150): one Session in process, the same Session through faults, `kerncap
# serve` with CLIENTS (default 16) concurrent validate clients, `evaluate_all` through the
# evaluation pool; a target of 10,000 candidates over the phases (--target) unless OPTIONS
# say otherwise. Prints soak.py's tables; exit 0 when every verdict equalled the one-shot
# validate's, 1 otherwise, 77 without a GPU.
#
#   tests/gpu/soak.sh BUILD_DIR [SECONDS] [CLIENTS] [soak.py OPTIONS: --split, --mix, --target N,
#                     --time-every N, --seed S]
#
# Environment: OUT (work files under it), KERNCAP_GPU_KEEP=1, KERNCAP_PYTHON (default python3),
# KERNCAP_PYTHONPATH (the kerncap package to use, default this checkout's python/).
set -u -o pipefail
BUILD=${1:?usage: tests/gpu/soak.sh BUILD_DIR [SECONDS] [CLIENTS] [soak.py OPTIONS]}
SECONDS_BUDGET=${2:-150}
CLIENTS=${3:-16}
shift $(($# < 3 ? $# : 3))
SOAK_OPTIONS=("$@")
[[ " ${SOAK_OPTIONS[*]} " == *" --target "* ]] || SOAK_OPTIONS+=(--target 10000)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
gpu_build "$BUILD"
gpu_work_dir soak
trap cleanup EXIT
unset KERNCAP_STORE
C=$WORK/cands
mkdir -p "$C"
"$NVCC" -O2 -arch=native -o "$WORK/fault_app" "$HERE/fault_apps/fault_app.cu" >"$WORK/nvcc.log" 2>&1 &
k=0
for kind in correct wrong nan fault; do
  "$NVCC" -cubin -O3 -arch=native -DKIND=$k -o "$C/$kind.cubin" "$HERE/fault_apps/candidate.cu" >>"$WORK/nvcc.log" 2>&1 &
  k=$((k + 1))
done
wait
for f in "$WORK/fault_app" "$C"/{correct,wrong,nan,fault}.cubin; do
  [ -s "$f" ] || { echo "FAIL build: $f missing"; tail -5 "$WORK/nvcc.log"; exit 1; }
done
if ! "$KC" extract fm_step --dispatch 1 -o "$WORK/cap" -q -- "$WORK/fault_app" ok 4 1 >"$WORK/extract.log" 2>&1; then
  echo "FAIL extract: $(tail -3 "$WORK/extract.log")"
  exit 1
fi
export KERNCAP_BIN=$KC KERNCAP_REPLAY_LIB=${KERNCAP_REPLAY_LIB:-$BUILD/lib/libkerncap_replay.so} PYTHONUNBUFFERED=1
"${KERNCAP_PYTHON:-python3}" "$HERE/soak.py" "$WORK/cap" --cands "$C" --seconds "$SECONDS_BUDGET" \
  --clients "$CLIENTS" --kerncap "$KC" "${SOAK_OPTIONS[@]}"

#!/usr/bin/env bash
# Runs every GPU suite against one build and gathers their summaries: tests/gpu/all.sh BUILD
# With OUT set (the device tool's output folder), each suite's log and table land under it and
# $OUT/gpu-summary.md holds one line per suite plus every table. Exit 0 only when all passed;
# 77 (skipped) without a GPU.
#
# The suites are found here, not listed: run.sh and every tests/gpu/*_e2e.sh (each takes
# BUILD_DIR, prints "N passed, N failed" last, exits 0, 1 or 77), except a suite whose header
# has the line
#   # kerncap-gpu-suite: alone
# (a timing suite that must have the machine to itself: run it by hand, alone). repro_public.sh
# runs on public code fetched by hand, so it joins only when HECBENCH_SRC or CUDA_SAMPLES is
# set. Benchmarks (bench/*.sh) are not suites: run them alone.
#
# KERNCAP_GPU_SUITES="a.sh b.sh" picks suites instead (any of them, alone ones too).
# KERNCAP_GPU_LANES=N (default 1) runs the single-GPU suites in N parallel lanes, one GPU each
# (CUDA_VISIBLE_DEVICES), on a machine with N GPUs or more; suites that need several GPUs
# (multigpu_*) run afterwards with all of them.
set -uo pipefail
BUILD=$(cd "${1:?usage: tests/gpu/all.sh BUILD_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIPPED: no GPU"; exit 77; fi
OUT=${OUT:-$(mktemp -d)}; export OUT
SUMMARY=$OUT/gpu-summary.md
mkdir -p "$OUT/.lines"
: >"$SUMMARY"
suites=(run.sh)
for f in "$HERE"/*_e2e.sh; do
  [ -e "$f" ] || continue
  grep -qx '# kerncap-gpu-suite: alone' "$f" && continue
  suites+=("${f##*/}")
done
[ -n "${HECBENCH_SRC:-}${CUDA_SAMPLES:-}" ] && suites+=(repro_public.sh)
[ -n "${KERNCAP_GPU_SUITES:-}" ] && read -r -a suites <<<"$KERNCAP_GPU_SUITES"
gpus=$(nvidia-smi -L | grep -c '^GPU')
lanes=${KERNCAP_GPU_LANES:-1}
(( lanes > gpus )) && lanes=$gpus
(( lanes < 1 )) && lanes=1

# One suite: its log under OUT, its summary line in OUT/.lines (gathered in suite order).
run_suite() {
  local s=$1 start rc took last
  if [ ! -x "$HERE/$s" ]; then echo "| $s | missing |" >"$OUT/.lines/$s"; return; fi
  start=$(date +%s)
  "$HERE/$s" "$BUILD" >"$OUT/${s%.sh}.log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  last=$(grep -E '^[0-9]+ passed' "$OUT/${s%.sh}.log" | tail -1)
  echo "| $s | rc $rc | ${took}s | ${last:-no summary line} |${CUDA_VISIBLE_DEVICES:+ GPU $CUDA_VISIBLE_DEVICES |}" >"$OUT/.lines/$s"
  cat "$OUT/.lines/$s"
}

single=() multi=()
for s in "${suites[@]}"; do
  case $s in multigpu_*) multi+=("$s") ;; *) single+=("$s") ;; esac
done
if (( lanes > 1 )); then
  for ((lane = 0; lane < lanes; ++lane)); do
    (
      export CUDA_VISIBLE_DEVICES=$lane
      for ((i = lane; i < ${#single[@]}; i += lanes)); do run_suite "${single[$i]}"; done
    ) &
  done
  wait
else
  for s in "${single[@]}"; do run_suite "$s"; done
fi
for s in "${multi[@]}"; do run_suite "$s"; done

status=0
for s in "${suites[@]}"; do
  line=$(cat "$OUT/.lines/$s" 2>/dev/null || echo "| $s | no result |")
  echo "$line" >>"$SUMMARY"
  case $line in *"| rc 0 |"*) ;; *) status=1 ;; esac
done
if [ -x "$BUILD/tests/fixtures/cubin_driver_check" ]; then
  "$BUILD/tests/fixtures/cubin_driver_check" "$BUILD/tests/fixtures/cubin" >"$OUT/cubin_driver_check.log" 2>&1
  rc=$?; echo "| cubin_driver_check | rc $rc | | $(tail -1 "$OUT/cubin_driver_check.log") |" | tee -a "$SUMMARY"
  [ $rc -eq 0 ] || status=1
fi
for s in "${suites[@]}"; do
  { echo; echo "## ${s%.sh}"; grep -E '^\|' "$OUT/${s%.sh}.log" 2>/dev/null | head -120; } >>"$SUMMARY"
done
exit $status

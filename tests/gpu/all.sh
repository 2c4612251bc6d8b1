#!/usr/bin/env bash
# Runs every GPU suite against one build and gathers their summaries: tests/gpu/all.sh BUILD
# With OUT set (the device tool's output folder), each suite's log and table land under it and
# $OUT/gpu-summary.md holds one line per suite plus every table. Exit 0 only when all passed;
# 77 (skipped) without a GPU.
set -uo pipefail
BUILD=$(cd "${1:?usage: tests/gpu/all.sh BUILD_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIPPED: no GPU"; exit 77; fi
OUT=${OUT:-$(mktemp -d)}; export OUT
SUMMARY=$OUT/gpu-summary.md
: >"$SUMMARY"
suites=(run.sh profile_e2e.sh repro_e2e.sh triton_e2e.sh footprint_e2e.sh contracts_e2e.sh cub_e2e.sh baseline_e2e.sh
        strong_e2e.sh stateful_e2e.sh editloop_e2e.sh)
[ -n "${KERNCAP_GPU_SUITES:-}" ] && read -r -a suites <<<"$KERNCAP_GPU_SUITES"
status=0
for s in "${suites[@]}"; do
  [ -x "$HERE/$s" ] || { echo "| $s | missing |" >>"$SUMMARY"; status=1; continue; }
  start=$(date +%s)
  "$HERE/$s" "$BUILD" >"$OUT/${s%.sh}.log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  last=$(grep -E '^[0-9]+ passed' "$OUT/${s%.sh}.log" | tail -1)
  echo "| $s | rc $rc | ${took}s | ${last:-no summary line} |" | tee -a "$SUMMARY"
  [ $rc -eq 0 ] || status=1
done
if [ -x "$BUILD/tests/fixtures/cubin_driver_check" ]; then
  "$BUILD/tests/fixtures/cubin_driver_check" "$BUILD/tests/fixtures/cubin" >"$OUT/cubin_driver_check.log" 2>&1
  rc=$?; echo "| cubin_driver_check | rc $rc | | $(tail -1 "$OUT/cubin_driver_check.log") |" | tee -a "$SUMMARY"
  [ $rc -eq 0 ] || status=1
fi
for s in "${suites[@]}"; do
  { echo; echo "## ${s%.sh}"; grep -E '^\|' "$OUT/${s%.sh}.log" | head -120; } >>"$SUMMARY"
done
exit $status

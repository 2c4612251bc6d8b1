#!/usr/bin/env bash
# Capture cost: how long a capture takes and how much it writes when the process holds much
# more memory than the kernel touches, with the device scan (default) and without it
# (KERNCAP_DEVICE_SCAN=0: every byte read and stored), measured side by side in one run.
# Each capture is then validated (the verdicts must agree) and its disk use printed.
#
#   bench/capture_cost.sh BUILD_DIR
# CAPTURE_COST_CASES="torch jax" picks cases.
# Environment: KERNCAP_PYTHON (python with torch/jax, default python3), CAPTURE_COST_ZEROS_GIB
# / CAPTURE_COST_RANDOM_GIB (the PyTorch case, default 8 and 4), CAPTURE_COST_JAX_DENSE=1 (also
# capture the JAX case without the scan: ~60 GiB on disk, off by default), OUT (keeps logs),
# CAPTURE_COST_ZSTD_LEVEL (KERNCAP_ZSTD_LEVEL of the captures, default 1; 0: chunks stored raw),
# CAPTURE_COST_PRUNE=1 (also `kerncap footprint` + `kerncap prune` each default capture, then
# validate it again: the size after prune and the prune time are printed).
# Columns: stored = the BEFORE bytes kept (zeros skipped), compressed = the distinct chunks'
# files (what deduplication and zstd leave), on disk = du of the capture.
# Exit 0 measured, 1 a case failed, 77 skipped (no GPU).
set -u -o pipefail

BUILD=${1:?usage: bench/capture_cost.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../tests/gpu/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/gpu/lib.sh"
gpu_build "$BUILD"
PY=${KERNCAP_PYTHON:-python3}
Z=${CAPTURE_COST_ZEROS_GIB:-8}
R=${CAPTURE_COST_RANDOM_GIB:-4}
[ -x "$KC" ] || { echo "missing $KC"; exit 1; }
if [ -n "${OUT:-}" ]; then
  WORK=$OUT/capture_cost && mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-capture-cost.XXXXXX") || exit 1
fi
# The captures themselves are large: always in a scratch folder, removed at exit.
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-capture-cost-data.XXXXXX") || exit 1
trap 'rm -rf "$SCRATCH"' EXIT
echo "disk: $(df -h "$SCRATCH" | tail -1)"
# The disk's own write speed (2 GiB, direct I/O), to set the captures' rates against.
echo "disk write: $(dd if=/dev/zero of="$SCRATCH/dd.bin" bs=64M count=32 oflag=direct 2>&1 | tail -1 | sed 's/.*, //')"
rm -f "$SCRATCH/dd.bin"

rows=()
fail=0
# capture_case NAME SCAN CLOSURE PATTERN -- APP...: extract, validate, print a row.
capture_case() {
  local name=$1 scan=$2 closure=$3 pattern=$4
  shift 5
  local out=$SCRATCH/$name-$scan-$closure log=$WORK/$name-scan$scan-$closure.log
  local t0 wall
  t0=$(now)
  KERNCAP_ZSTD_LEVEL=${CAPTURE_COST_ZSTD_LEVEL:-1} KERNCAP_DEVICE_SCAN=$scan timeout 600 "$KC" extract "$pattern" --regex --closure "$closure" -o "$out" -v -- "$@" \
    >"$log" 2>&1
  local rc=$?
  wall=$(SINCE_DECIMALS=1 since "$t0")
  if [ $rc -ne 0 ]; then
    echo "FAIL $name scan=$scan: extract exit $rc (log $log)"; tail -5 "$log"; fail=1
    rows+=("| $name | $scan | $closure | extract failed | | | | | | | | |"); return
  fi
  local info secs before after disk verdict
  info=$("$KC" info "$out" --json 2>>"$log")
  secs=$(json_get - '"%.2f" % j["stats"]["capture_seconds"]' <<<"$info")
  before=$(json_get - '"%.2f" % (j["stats"]["before_bytes"] / GiB)' <<<"$info")
  after=$(json_get - '"%.1f" % (j["stats"]["after_bytes"] / MiB)' <<<"$info")
  disk=$(du -sb "$out" | awk '{printf "%.3f", $1/2^30}')
  # Stored vs compressed: the chunks the manifest references, and the distinct ones' files.
  local chunks stored_gib comp_gib
  chunks=$(chunk_stats - <<<"$info" | awk '{ printf "%.3f %.3f", $3 / 2^30, $4 / 2^30 }')
  read -r stored_gib comp_gib <<<"$chunks"
  "$KC" validate "$out" >>"$log" 2>&1
  verdict=$(grep -E '^Result:' "$log" | tail -1 | cut -c1-60)
  case "$verdict" in Result:\ PASS*) ;; *) echo "FAIL $name scan=$scan: validate: $verdict"; fail=1 ;; esac
  local pruned="" prune_s=""
  if [ "${CAPTURE_COST_PRUNE:-0}" = 1 ] && [ "$scan$closure" = 1reachable ]; then
    local p0
    "$KC" footprint "$out" -q >>"$log" 2>&1
    p0=$(now)
    "$KC" prune "$out" >>"$log" 2>&1 || { echo "FAIL $name: prune failed (log $log)"; fail=1; }
    prune_s=$(SINCE_DECIMALS=1 since "$p0")
    pruned=$(du -sb "$out" | awk '{printf "%.3f", $1/2^30}')
    "$KC" validate "$out" >>"$log" 2>&1
    local pv
    pv=$(grep -E '^Result:' "$log" | tail -1 | cut -c1-60)
    case "$pv" in Result:\ PASS*) ;; *) echo "FAIL $name: validate after prune: $pv"; fail=1 ;; esac
  fi
  rows+=("| $name | $scan | $closure | $secs | $wall | $before | $stored_gib | $comp_gib | $disk | $after | $pruned | $prune_s | ${verdict#Result: } |")
  echo "$name scan=$scan closure=$closure: capture ${secs}s, BEFORE ${before} GiB, stored ${stored_gib} GiB, compressed ${comp_gib} GiB, on disk ${disk} GiB${pruned:+, after prune ${pruned} GiB}; $verdict"
  grep -E 'device scan:|closure:|snapshot BEFORE:|chunks:' "$log" | sed 's/^/    /' 
  rm -rf "$out"
}

CASES=${CAPTURE_COST_CASES:-torch jax}
if [[ " $CASES " != *" torch "* ]]; then
  :
elif torch_ok; then
  # Default (scan + closure), the scan alone (every region, zeros skipped), neither.
  for sc in "1 reachable" "1 all" "0 all"; do
    set -- $sc
    capture_case "torch_${Z}z_${R}r" "$1" "$2" 'MulFunctor' -- "$PY" "$HERE/capture_cost_torch.py" "$Z" "$R"
  done
else
  echo "torch: not importable, PyTorch case skipped"
fi
if [[ " $CASES " != *" jax "* ]]; then
  :
elif "$PY" -c 'import jax' >/dev/null 2>&1; then
  capture_case jax_prealloc 1 reachable 'multiply|fusion' -- "$PY" "$HERE/capture_cost_jax.py"
  [ "${CAPTURE_COST_JAX_DENSE:-0}" = 1 ] && capture_case jax_prealloc 0 all 'multiply|fusion' -- "$PY" "$HERE/capture_cost_jax.py"
else
  echo "jax: not importable, JAX case skipped"
fi

echo
echo "| case | device scan | closure | capture s | extract wall s | BEFORE GiB | stored GiB | compressed GiB | on disk GiB | AFTER MiB | after prune GiB | prune s | validate |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit $fail

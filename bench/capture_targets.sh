#!/usr/bin/env bash
# The capture-cost targets of docs/capture.md, measured side by side in one run on the GPU
# machine, one row per target:
#   - JAX with XLA's default preallocation (75 % of the GPU), one small fused multiply:
#     capture seconds and GiB on disk (goal <= 5 s, <= 1 GiB);
#   - PyTorch holding 24 GiB (16 GiB zeros + 8 GiB torch.randn), an elementwise kernel that
#     reads and writes 64 MiB: GiB written and capture seconds (goal <= 8.2 GiB, <= 9 s), and
#     the capture after `kerncap footprint` + `kerncap prune` (goal <= 256 MiB);
#   - incompressible data (8 GiB of random bytes, --closure all so that they are stored): the
#     capture's BEFORE write speed against
#     the disk's write speed measured here with dd (goal >= 0.9 x);
#   - the device scan: seconds per 80 GB tracked, from what the captures scanned (goal <= 0.1 s);
#   - restore: GB/s of `restore_speed --gpu` (whole restore, page cache warm; goal >= 5 GB/s)
#     on the 24 GiB captures (default closure, --closure all) and the incompressible one,
#     of the chunk decode alone (host memory), and zstd decode of 8 GiB of synthetic weights.
# Every capture is validated (must PASS). Captures are deleted as soon as they are measured
# (at most ~9 GiB on disk at a time); the run takes about 5-7 minutes.
#
#   bench/capture_targets.sh BUILD_DIR
#
# Environment: KERNCAP_PYTHON (python with torch and jax, default python3), OUT (keeps the
# logs under OUT/capture_targets), TARGETS_CASES (default "jax torch incompressible"),
# TARGETS_INCOMPRESSIBLE_GIB (default 8), TARGETS_DD_GIB (default 4).
# Exit 0 measured (whether or not each goal is met: the table says), 1 a step failed,
# 77 skipped (no GPU).
set -u -o pipefail

BUILD=${1:?usage: bench/capture_targets.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../tests/gpu/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/gpu/lib.sh"
gpu_build "$BUILD"
RS=$BUILD/bench/restore_speed
PY=${KERNCAP_PYTHON:-python3}
CASES=${TARGETS_CASES:-jax torch incompressible}
INC=${TARGETS_INCOMPRESSIBLE_GIB:-8}
DDG=${TARGETS_DD_GIB:-4}
for f in "$KC" "$RS"; do [ -x "$f" ] || { echo "missing $f (build kerncap and restore_speed)"; exit 1; }; done
if [ -n "${OUT:-}" ]; then
  LOGS=$OUT/capture_targets && mkdir -p "$LOGS"
else
  LOGS=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-targets-logs.XXXXXX") || exit 1
fi
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-targets.XXXXXX") || exit 1
trap 'rm -rf "$SCRATCH"' EXIT
unset KERNCAP_STORE KERNCAP_DEVICE_SCAN KERNCAP_ZSTD_LEVEL
T_START=$(date +%s)
echo "GPU: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1); CPUs: $(nproc)"
echo "disk: $(df -h "$SCRATCH" | tail -1)"
echo "logs: $LOGS"

fail=0
rows=()
scan_bytes=0
scan_secs=0
target() {  # target NAME MEASURED GOAL OK(0/1/-)
  local ok=$4
  case $ok in 0) ok=yes ;; 1) ok=NO ;; *) ok="-" ;; esac
  rows+=("| $1 | $2 | $3 | $ok |")
}
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }  # le A B: A <= B
gib_of() { du -sb "$1" | awk '{ printf "%.3f", $1 / 2^30 }'; }
# A human size as kerncap prints it ("59.4 GiB") in bytes.
to_bytes() {
  awk -v s="$1" -v u="$2" 'BEGIN { m = 1; if (u == "KiB") m = 2^10; else if (u == "MiB") m = 2^20;
    else if (u == "GiB") m = 2^30; else if (u == "TiB") m = 2^40; printf "%.0f", s * m }'
}
stat_of() {  # stat_of OUT KEY: a field of info --json's stats
  "$KC" info "$1" --json 2>/dev/null | JSON_FLOAT='' json_get - "stats.$2"
}
chunk_gib() {  # chunk_gib OUT: "stored compressed" GiB of the capture's chunks
  "$KC" info "$1" --json 2>/dev/null | chunk_stats - | awk '{ printf "%.3f %.3f\n", $3 / 2^30, $4 / 2^30 }'
}
# Adds the log's "device scan: X in Y s" to the scan totals.
note_scan() {
  local line
  line=$(grep -m1 -oE 'device scan: [0-9.]+ [KMGT]?i?B in [0-9.]+ s' "$1") || return 0
  read -r _ _ n u _ s _ <<<"$line"
  scan_bytes=$(awk -v a="$scan_bytes" -v b="$(to_bytes "$n" "$u")" 'BEGIN { printf "%.0f", a + b }')
  scan_secs=$(awk -v a="$scan_secs" -v b="$s" 'BEGIN { printf "%.4f", a + b }')
  echo "    $line"
}
# extract NAME PATTERN [extract flags] -- APP...: captures into $SCRATCH/NAME (defaults:
# reachable closure, device scan, zstd level 1).
extract() {
  local name=$1 pattern=$2
  shift 2
  local flags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  local t0 rc
  t0=$(now)
  timeout 600 "$KC" extract "$pattern" --regex "${flags[@]}" -o "$SCRATCH/$name" -v -- "$@" >"$LOGS/$name.extract.log" 2>&1
  rc=$?
  sync
  echo "$name: extract exit $rc in $(since "$t0") s (wall, with the application and sync)"
  if [ $rc -ne 0 ]; then
    echo "FAIL $name: extract (log $LOGS/$name.extract.log)"; tail -5 "$LOGS/$name.extract.log"; fail=1
    return 1
  fi
  grep -E 'device scan:|closure:|snapshot BEFORE|chunks:|captured ' "$LOGS/$name.extract.log" | sed 's/^/    /'
  note_scan "$LOGS/$name.extract.log"
}
validate() {  # validate NAME [LABEL [validate flags]]
  local v name=$1 label=${2:-}
  shift 2 2>/dev/null || shift $#
  "$KC" validate "$SCRATCH/$name" "$@" >"$LOGS/$name.validate${label// /_}.log" 2>&1
  v=$(grep -E '^Result:' "$LOGS/$name.validate${label// /_}.log" | tail -1)
  echo "    validate${label}: ${v:0:150}"
  case "$v" in Result:\ PASS*) return 0 ;; *) echo "FAIL $name: validate${label}"; fail=1; return 1 ;; esac
}
restore_rows() {  # restore_rows NAME LABEL
  local line
  line=$("$RS" --gpu "$SCRATCH/$1" --repeat 3 2>"$LOGS/$1.restore.err" | tee "$LOGS/$1.restore.log" | grep '^restore_gpu')
  if [ -z "$line" ]; then
    echo "FAIL $1: restore_speed --gpu (log $LOGS/$1.restore.err)"; tail -3 "$LOGS/$1.restore.err"; fail=1
  else
    echo "    $line"
    local gbs
    gbs=$(grep -oE '[0-9.]+ GB/s effective' <<<"$line" | cut -d' ' -f1)
    target "restore onto the GPU, $2" "$gbs GB/s" ">= 5 GB/s" "$(le 5 "$gbs"; echo $?)"
  fi
  line=$("$RS" --capture "$SCRATCH/$1" --repeat 2 2>>"$LOGS/$1.restore.err" | grep '^restore_cpu')
  if [ -n "$line" ]; then
    echo "    $line"
    local dec
    dec=$(grep -oE '[0-9.]+ GB/s effective' <<<"$line" | cut -d' ' -f1)
    target "chunk decode into host memory, $2" "$dec GB/s" "(part of the above)" -
  fi
}

# 1. The disk's own write speed: the same file system, 4 GiB, direct I/O, then buffered with
#    the flush counted (what a capture's writes cost once they reach the disk).
dd if=/dev/zero of="$SCRATCH/dd.bin" bs=64M count=$((DDG * 16)) oflag=direct 2>"$LOGS/dd.log"
DD_DIRECT=$(awk -v g="$DDG" '/copied/ { for (i = 1; i <= NF; ++i) if ($i == "s,") t = $(i - 1); printf "%.2f", g / t }' "$LOGS/dd.log")
rm -f "$SCRATCH/dd.bin"
t0=$(now)
dd if=/dev/urandom of="$SCRATCH/rand.bin" bs=64M count=16 iflag=fullblock 2>/dev/null  # 1 GiB of random bytes
cat "$SCRATCH/rand.bin" >/dev/null
t0=$(now)
for i in $(seq 1 "$DDG"); do cat "$SCRATCH/rand.bin"; done >"$SCRATCH/dd.bin"
sync
DD_BUFFERED=$(awk -v g="$DDG" -v t="$(since "$t0")" 'BEGIN { printf "%.2f", g / t }')
rm -f "$SCRATCH/dd.bin" "$SCRATCH/rand.bin"
echo "disk write: ${DD_DIRECT} GiB/s direct (dd oflag=direct, $DDG GiB), ${DD_BUFFERED} GiB/s buffered + sync"
target "disk write speed (dd, direct I/O)" "$DD_DIRECT GiB/s" "(reference)" -

# 2. JAX preallocation.
if [[ " $CASES " == *" jax "* ]]; then
  if "$PY" -c 'import jax' >/dev/null 2>&1; then
    if extract jax 'multiply|fusion' -- "$PY" "$HERE/capture_cost_jax.py"; then
      secs=$(stat_of "$SCRATCH/jax" capture_seconds)
      before=$(stat_of "$SCRATCH/jax" before_bytes)
      disk=$(gib_of "$SCRATCH/jax")
      validate jax
      printf '    BEFORE %.1f GiB tracked, capture %.2f s, %s GiB on disk\n' "$(awk -v b="$before" 'BEGIN { print b / 2^30 }')" "$secs" "$disk"
      target "JAX preallocation: capture seconds" "$(printf %.2f "$secs") s" "<= 5 s" "$(le "$secs" 5; echo $?)"
      target "JAX preallocation: on disk" "$disk GiB" "<= 1 GiB" "$(le "$disk" 1; echo $?)"
      rm -rf "$SCRATCH/jax"
    fi
  else
    echo "jax: not importable, JAX case skipped"
  fi
fi

# 3. PyTorch, 16 GiB zeros + 8 GiB random floats: with the default closure (the random
#    tensors are not reachable from the multiply: recorded by address and size only), then
#    with --closure all (they are stored: zstd on fp32 normals) for the restore of
#    compressed chunks.
if [[ " $CASES " == *" torch "* ]]; then
  if torch_ok; then
    if extract torch24 MulFunctor -- "$PY" "$HERE/capture_cost_torch.py" 16 8; then
      secs=$(stat_of "$SCRATCH/torch24" capture_seconds)
      disk=$(gib_of "$SCRATCH/torch24")
      read -r stored comp <<<"$(chunk_gib "$SCRATCH/torch24")"
      echo "    capture ${secs} s, stored ${stored} GiB, compressed ${comp} GiB, on disk ${disk} GiB"
      validate torch24
      target "PyTorch 24 GiB: written" "$disk GiB (stored $stored, chunks $comp)" "<= 8.2 GiB" "$(le "$disk" 8.2; echo $?)"
      target "PyTorch 24 GiB: capture seconds" "$(printf %.2f "$secs") s" "<= 9 s" "$(le "$secs" 9; echo $?)"
      restore_rows torch24 "PyTorch 24 GiB (unstored bytes memset)"
      t0=$(now)
      if "$KC" footprint "$SCRATCH/torch24" -q >"$LOGS/torch24.footprint.log" 2>&1 &&
         "$KC" prune "$SCRATCH/torch24" >"$LOGS/torch24.prune.log" 2>&1; then
        pruned=$(gib_of "$SCRATCH/torch24")
        pruned_mib=$(awk -v g="$pruned" 'BEGIN { printf "%.1f", g * 1024 }')
        echo "    footprint + prune in $(since "$t0") s: ${pruned_mib} MiB on disk"
        validate torch24 " after prune"
        target "PyTorch 24 GiB: after prune" "$pruned_mib MiB" "<= 256 MiB" "$(le "$pruned_mib" 256; echo $?)"
      else
        echo "FAIL torch24: footprint/prune (logs $LOGS/torch24.footprint.log, .prune.log)"; fail=1
      fi
      rm -rf "$SCRATCH/torch24"
    fi
    if extract torch24all MulFunctor --closure all -- "$PY" "$HERE/capture_cost_torch.py" 16 8; then
      secs=$(stat_of "$SCRATCH/torch24all" capture_seconds)
      disk=$(gib_of "$SCRATCH/torch24all")
      read -r stored comp <<<"$(chunk_gib "$SCRATCH/torch24all")"
      echo "    capture ${secs} s, stored ${stored} GiB, compressed ${comp} GiB, on disk ${disk} GiB"
      validate torch24all "" --footprint never
      target "PyTorch 24 GiB, --closure all: written" "$disk GiB (stored $stored, chunks $comp)" "<= 8.2 GiB" "$(le "$disk" 8.2; echo $?)"
      target "PyTorch 24 GiB, --closure all: capture seconds" "$(printf %.2f "$secs") s" "<= 9 s" "$(le "$secs" 9; echo $?)"
      restore_rows torch24all "PyTorch 24 GiB --closure all (zeros memset, randn chunks decoded)"
      rm -rf "$SCRATCH/torch24all"
    fi
  else
    echo "torch: not importable, PyTorch cases skipped"
  fi
fi

# 4. Incompressible: random bytes, every chunk kept raw.
if [[ " $CASES " == *" incompressible "* ]] && "$PY" -c 'import torch' >/dev/null 2>&1; then
  # --closure all: the random bytes are not reachable from the multiply, and the point here
  # is to write them.
  if extract incompressible MulFunctor --closure all -- "$PY" "$HERE/capture_cost_torch.py" 0 "$INC" bytes; then
    log=$LOGS/incompressible.extract.log
    read -r stored comp <<<"$(chunk_gib "$SCRATCH/incompressible")"
    # BEFORE's cost: the snapshot (copies and chunk writes overlapped) plus the wait for the
    # last chunks after the launch.
    bs=$(grep -oE 'snapshot BEFORE: [0-9.]+ [KMGT]?i?B in [0-9.]+ s' "$log" | tail -1 | awk '{ print $(NF - 1) }')
    ws=$(grep -oE 'waited [0-9.]+ s' "$log" | tail -1 | awk '{ print $2 }')
    rate=$(awk -v g="$comp" -v a="${bs:-0}" -v b="${ws:-0}" 'BEGIN { if (a + b > 0) printf "%.2f", g / (a + b); else print "?" }')
    ratio=$(awk -v r="$rate" -v d="$DD_DIRECT" 'BEGIN { if (d > 0 && r != "?") printf "%.2f", r / d; else print "?" }')
    echo "    ${comp} GiB of chunks written in ${bs:-?} s + ${ws:-?} s wait: ${rate} GiB/s; disk ${DD_DIRECT} GiB/s direct, ${DD_BUFFERED} GiB/s buffered + sync"
    validate incompressible "" --footprint never
    target "incompressible: capture write speed / disk (dd direct)" "$rate / $DD_DIRECT GiB/s = $ratio" ">= 0.9" "$(le 0.9 "$ratio"; echo $?)"
    restore_rows incompressible "incompressible (every byte copied)"
    rm -rf "$SCRATCH/incompressible"
  fi
fi

# 5. zstd decode alone on this machine's cores: a synthetic 8 GiB region of bf16 weights
#    (no zeros: every byte decoded), into host memory as restore reads it.
line=$("$RS" --gib 8 --zeros 0 --kind weights --dir "$SCRATCH/synthetic" --repeat 2 2>"$LOGS/synthetic.err" | tee "$LOGS/synthetic.log" | grep '^restore_cpu')
rm -rf "$SCRATCH/synthetic"
if [ -n "$line" ]; then
  echo "synthetic: $(grep '^synthetic' "$LOGS/synthetic.log")"
  echo "    $line"
  dec=$(grep -oE '[0-9.]+ GB/s decoded' <<<"$line" | cut -d' ' -f1)
  target "zstd decode of 8 GiB bf16 weights into host memory" "$dec GB/s" "(no zeros: the worst case)" -
fi

# 6. The device scan, over everything the captures tracked.
if [ "$scan_bytes" != 0 ]; then
  per80=$(awk -v s="$scan_secs" -v b="$scan_bytes" 'BEGIN { printf "%.4f", s * 80e9 / b }')
  echo "device scan: $(awk -v b="$scan_bytes" 'BEGIN { printf "%.1f", b / 2^30 }') GiB in ${scan_secs} s: ${per80} s per 80 GB"
  target "device scan cost (extrapolated from $(awk -v b="$scan_bytes" 'BEGIN { printf "%.0f", b / 2^30 }') GiB tracked)" "$per80 s per 80 GB" "<= 0.1 s" "$(le "$per80" 0.1; echo $?)"
fi

echo
echo "| target | measured | goal | met |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "total $(( $(date +%s) - T_START )) s"
exit $fail

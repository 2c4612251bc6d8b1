#!/usr/bin/env bash
# Window capture cost (issue 36): capturing a window of W kernels against capturing its largest
# kernel alone, the same application, side by side. For each case, REPS times each:
#   window     kerncap window extract --window WINDOW  (BEFORE: every tracked region, the window
#              recorded, AFTER, the live-out observation after it)
#   single     kerncap extract LARGEST                 (BEFORE: the regions the launch reaches)
#   single_all kerncap extract LARGEST --closure all   (BEFORE as the window takes it)
# Columns: wall = the whole command (application start to capture published and the
# application stopped; Python and model start-up included), capture = the manifest's
# capture_seconds (the capture's own time in the application). Ratios: window / single and
# window / single_all, medians. The largest kernel is the window's operation with the largest
# in-app time; the table says whether LARGEST captured that kernel.
#
#   bench/window_cost.sh BUILD_DIR
# Environment: WINDOW_COST_CASES ("app llama", default both), WINDOW_COST_REPS (default 2),
# TORCH_PY (python with torch and transformers for llama, default python3), OUT (tables and logs).
# Exit 0 measured, 1 a case failed, 77 no GPU.
set -u -o pipefail

BUILD=${1:?usage: bench/window_cost.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../tests/gpu/lib.sh
. "$HERE/../tests/gpu/lib.sh"
gpu_build "$BUILD"
PY=${TORCH_PY:-python3}
REPS=${WINDOW_COST_REPS:-2}
CASES=${WINDOW_COST_CASES:-app llama}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-window-cost.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
LOGS=${OUT:-$WORK}/window_cost
mkdir -p "$LOGS"
TABLE=$LOGS/window_cost.md
failed=0

# one LABEL DIR CMD...: run a capture command, append "wall capture" to $LOGS/LABEL.times.
one() {
  local label=$1 dir=$2
  shift 2
  rm -rf "$dir"
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$LOGS/$label.out" 2>"$LOGS/$label.err"
  local rc=$?
  t1=$(date +%s.%N)
  local cap
  cap=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['stats']['capture_seconds'])" "$dir/capture/manifest.json" 2>/dev/null)
  if [ -z "$cap" ]; then
    echo "$label: no capture (rc $rc): $(tail -2 "$LOGS/$label.err" | tr '\n' ' ')"
    failed=1
    return 1
  fi
  echo "$(python3 -c "print($t1 - $t0)") $cap" >>"$LOGS/$label.times"
}

median() { python3 -c "import statistics,sys; v=[float(l.split()[int(sys.argv[2])]) for l in open(sys.argv[1])]; print('%.3f' % statistics.median(v))" "$1" "$2" 2>/dev/null; }

# bench NAME WINDOW LARGEST [--regex] -- APP...
bench() {
  local name=$1 window=$2 largest=$3
  shift 3
  local flags=()
  [ "${1:-}" = --regex ] && { flags=(--regex); shift; }
  [ "${1:-}" = -- ] && shift
  rm -f "$LOGS/$name".*.times
  for ((r = 0; r < REPS; r++)); do
    one "$name.window" "$WORK/$name.w" "$KC" window extract --window "$window" "${flags[@]}" --json -o "$WORK/$name.w" -- "$@" || return
    one "$name.single" "$WORK/$name.s" "$KC" extract --kernel "$largest" "${flags[@]}" -o "$WORK/$name.s" -- "$@" || return
    one "$name.single_all" "$WORK/$name.a" "$KC" extract --kernel "$largest" "${flags[@]}" --closure all -o "$WORK/$name.a" -- "$@" || return
  done
  # The window's largest operation (in-app time) and whether LARGEST captured that kernel.
  local facts
  facts=$(python3 - "$WORK/$name.w/capture/window.json" "$WORK/$name.s/capture/manifest.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
ks = [o for o in w["ops"] if o["kind"] == "kernel"]
big = max(ks, key=lambda o: o.get("in_app_ns") or 0)
same = big["mangled"] == m["kernel"]["mangled"] if isinstance(m.get("kernel"), dict) else None
print("%d|%.4f|%s|%s" % (len(ks), (big.get("in_app_ns") or 0) / 1e6, big["mangled"][:60], same))
PY
)
  local W wall_w wall_s wall_a cap_w cap_s cap_a
  IFS='|' read -r W bigms bigname same <<<"$facts"
  wall_w=$(median "$LOGS/$name.window.times" 0) cap_w=$(median "$LOGS/$name.window.times" 1)
  wall_s=$(median "$LOGS/$name.single.times" 0) cap_s=$(median "$LOGS/$name.single.times" 1)
  wall_a=$(median "$LOGS/$name.single_all.times" 0) cap_a=$(median "$LOGS/$name.single_all.times" 1)
  ratio() { python3 -c "print('%.2f' % ($1 / $2) if $2 > 0 else '-')"; }
  printf '| %s | %s | %s (%s ms, largest: %s) | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s |\n' "$name" "$W" "$bigname" "$bigms" "$same" \
    "$wall_w" "$cap_w" "$wall_s" "$cap_s" "$wall_a" "$cap_a" \
    "$(ratio "$wall_w" "$wall_s")" "$(ratio "$cap_w" "$cap_s")" "$(ratio "$wall_w" "$wall_a")" "$(ratio "$cap_w" "$cap_a")" | tee -a "$TABLE"
}

{
  echo "| case | W kernels | largest op (in-app) | window wall / capture s | single wall / capture s | single --closure all wall / capture s | window/single wall / capture | window/single_all wall / capture |"
  echo "|---|---|---|---|---|---|---|---|"
} | tee "$TABLE"
for c in $CASES; do
  case $c in
    app)
      SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
      "$NVCC" -O2 -arch="sm_$SM" -o "$WORK/window_app" "$HERE/../tests/gpu/window_apps/window_app.cu" || { failed=1; continue; }
      bench app 'rms_norm@2..residual_add' 'gemm@2' -- "$WORK/window_app" 4 1024 1024
      ;;
    llama)
      if torch_ok "$PY" && "$PY" -c 'import transformers' 2>/dev/null; then
        bench llama 'flash_fwd|fmha|sdpa|attention@2..silu' 'flash_fwd|fmha|sdpa|attention@2' --regex -- "$PY" "$HERE/../tests/gpu/hf_llama.py" 3
      else
        echo "llama: skipped (no torch with CUDA or no transformers in $PY)"
      fi
      ;;
  esac
done
exit $failed

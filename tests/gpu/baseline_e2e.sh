#!/usr/bin/env bash
# Lint, baseline and diff end to end on the vector_add example (GPU):
#   lint_captured      `kerncap lint` on the capture passes (no limits set)
#   lint_limit         a register limit below the slow variant's registers fails (exit 1)
#   save               `kerncap baseline save base OUT --captured` writes OUT/baselines/base.json
#   diff_same          diff of the captured image against its own baseline: no regression (exit 0)
#   diff_slow          a variant with more registers and work: registers and time WORSE, exit 1
#                      with --fail-on-regression
#   diff_faster        baseline of the slow variant, then the captured image: time better, a
#                      speed-up above 1, exit 0
# The variant is written and compiled here (nvcc -cubin for the GPU's SM): the same output,
# 48 live values updated 64 times per element.
# Prints one line per case and "N passed, N failed". Exit 0 all passed, 1 some failed, 77 skipped.
#
#   tests/gpu/baseline_e2e.sh BUILD_DIR
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/baseline_e2e.sh BUILD_DIR}
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "SKIPPED: no GPU"
  exit 77
fi
BUILD=$(cd "$BUILD" && pwd) || exit 1
KC=$BUILD/bin/kerncap
APP=$BUILD/examples/vector_add
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
for f in "$KC" "$APP" "$NVCC"; do
  [ -x "$f" ] || { echo "missing $f: build kerncap with examples first, and have nvcc"; exit 1; }
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-baseline.XXXXXX") || exit 1
trap '[ "${KERNCAP_GPU_KEEP:-0}" = 1 ] || rm -rf "$WORK"' EXIT
passed=0
failed=0
result() {  # result NAME OK NOTE
  if [ "$2" = 1 ]; then passed=$((passed + 1)); printf '%-16s PASS  %s\n' "$1" "$3"
  else failed=$((failed + 1)); printf '%-16s FAIL  %s\n' "$1" "$3"; fi
}
# run NAME CMD...: output in $WORK/NAME.log, exit status in RC.
run() { local n=$1; shift; "$@" >"$WORK/$n.log" 2>&1; RC=$?; }

SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
cat >"$WORK/slow.cu" <<'CU'
__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = a[i], y = b[i];
  float acc[48];
#pragma unroll
  for (int k = 0; k < 48; ++k) acc[k] = x * (k + 1) + y;
#pragma unroll 1
  for (int r = 0; r < 64; ++r) {
#pragma unroll
    for (int k = 0; k < 48; ++k) acc[k] = fmaf(acc[k], 0.999f, acc[(k + 1) % 48]);
  }
  float s = 0;
#pragma unroll
  for (int k = 0; k < 48; ++k) s += acc[k];
  c[i] = x + y + (s == 1.2345e38f ? 1.0f : 0.0f);  // never true: the output stays a + b
}
CU
"$NVCC" -cubin -arch=sm_"$SM" -o "$WORK/slow.cubin" "$WORK/slow.cu" || { echo "nvcc failed"; exit 1; }

OUT=$WORK/vadd
run extract "$KC" extract vectorAdd -o "$OUT" -- "$APP"
[ $RC = 0 ] || { echo "extract failed: $(tail -3 "$WORK/extract.log")"; exit 1; }

run lint_captured "$KC" lint "$OUT" --no-sass
ok=0; [ $RC = 0 ] && grep -q '^Result: PASS' "$WORK/lint_captured.log" && ok=1
result lint_captured $ok "$(grep ' registers ' "$WORK/lint_captured.log" | xargs)"

run lint_limit "$KC" lint "$OUT" --no-sass --cubin "$WORK/slow.cubin" --max-registers 32
ok=0; [ $RC = 1 ] && grep -q 'FAIL  registers' "$WORK/lint_limit.log" && ok=1
result lint_limit $ok "exit $RC: $(grep ' registers ' "$WORK/lint_limit.log" | xargs)"

run save "$KC" baseline save base "$OUT" --captured -n 100
ok=0; [ $RC = 0 ] && [ -f "$OUT/baselines/base.json" ] && ok=1
result save $ok "$(head -1 "$WORK/save.log")"

run diff_same "$KC" diff "$OUT" --baseline base --captured -n 100 --fail-on-regression
ok=0; [ $RC = 0 ] && grep -q 'Result: NO REGRESSION' "$WORK/diff_same.log" && ok=1
result diff_same $ok "exit $RC: $(grep 'time (median)' "$WORK/diff_same.log" | xargs)"

run diff_slow "$KC" diff "$OUT" --baseline base --cubin "$WORK/slow.cubin" -n 100 --fail-on-regression
ok=0
[ $RC = 1 ] && grep -q 'Result: REGRESSION' "$WORK/diff_slow.log" &&
  grep -E '^  registers .*WORSE' "$WORK/diff_slow.log" >/dev/null &&
  grep -E '^  time \(median\) .*WORSE' "$WORK/diff_slow.log" >/dev/null && ok=1
result diff_slow $ok "exit $RC: $(grep -E 'time \(median\)|^  registers' "$WORK/diff_slow.log" | xargs)"

run save_slow "$KC" baseline save slow "$OUT" --cubin "$WORK/slow.cubin" -n 100
run diff_faster "$KC" diff "$OUT" --baseline slow --captured -n 100 --fail-on-regression --json
ok=0
[ $RC = 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = [r for r in d["rows"] if r["metric"] == "time (median)"][0]
sys.exit(0 if t["change"] == "better" and d["speedup"] > 1 and not d["regression"] else 1)' "$WORK/diff_faster.log" && ok=1
result diff_faster $ok "exit $RC: $(python3 -c 'import json,sys; print("speed-up", round(json.load(open(sys.argv[1]))["speedup"], 2))' "$WORK/diff_faster.log" 2>/dev/null)"

if [ "$failed" != 0 ]; then
  KERNCAP_GPU_KEEP=1
  echo "logs: $WORK (kept)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

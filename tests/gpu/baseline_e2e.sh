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
#   inv_default        validate with every invariant on (--invariant): PASS, exit 0
#   inv_negative       a capture of c = a - b (negative outputs) with non_negative = true in its
#                      kerncap.toml: FAIL, exit 1, a non_negative line naming the region
#   inv_must_write     a no-op variant with --invariant must_write: FAIL, exit 1, a must_write line
#   min_speedup        the slow variant with --min-speedup 1.5: Speed-up FAIL, exit 1
#   save_fuzz          baseline save --fuzz 3 stores the fuzz result (SKIPPED without a footprint)
# The variant is written and compiled here (nvcc -cubin for the GPU's SM): the same output,
# 48 live values updated 64 times per element.
# Prints one line per case and "N passed, N failed". Exit 0 all passed, 1 some failed, 77 skipped.
#
#   tests/gpu/baseline_e2e.sh BUILD_DIR
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/baseline_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
APP=$EX/vector_add
for f in "$KC" "$APP" "$NVCC"; do
  [ -x "$f" ] || { echo "missing $f: build kerncap with examples first, and have nvcc"; exit 1; }
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-baseline.XXXXXX") || exit 1
KEEP_FAILED=1  # cleanup: a failed run's files stay
trap cleanup EXIT
LOG=$WORK/log.txt  # step (lib.sh): the command lines there, each step's output alone in $WORK/NAME.log
VERDICT_STYLE=column VERDICT_WIDTH=16  # verdict: "NAME  PASS  NOTE"

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
cat >"$WORK/noop.cu" <<'CU'
__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {}
CU
"$NVCC" -cubin -arch=sm_"$SM" -o "$WORK/noop.cubin" "$WORK/noop.cu" || { echo "nvcc failed"; exit 1; }
cat >"$WORK/sub.cu" <<'CU'
#include <cstdio>
__global__ void subtract(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] - b[i];
}
int main() {
  const int n = 4096;
  float h[n];
  for (int i = 0; i < n; ++i) h[i] = float(i % 100);
  float *a, *b, *c;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&b, n * sizeof(float));
  cudaMalloc(&c, n * sizeof(float));
  cudaMemcpy(a, h, sizeof h, cudaMemcpyHostToDevice);
  for (int i = 0; i < n; ++i) h[i] = 50.0f;
  cudaMemcpy(b, h, sizeof h, cudaMemcpyHostToDevice);
  cudaMemset(c, 0, n * sizeof(float));
  subtract<<<n / 256, 256>>>(a, b, c, n);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
CU
"$NVCC" -arch=sm_"$SM" -o "$WORK/sub" "$WORK/sub.cu" || { echo "nvcc failed"; exit 1; }

CAP=$WORK/vadd
step extract "$KC" extract vectorAdd -o "$CAP" -- "$APP"
[ $RC = 0 ] || { verdict extract FAIL "$(tail -3 "$WORK/extract.log" | tr '\n' ' ')"; summary; exit 1; }

step lint_captured "$KC" lint "$CAP" --no-sass
ok=0; [ $RC = 0 ] && grep -q '^Result: PASS' "$WORK/lint_captured.log" && ok=1
verdict lint_captured "$(pass_if "$ok")" "$(grep ' registers ' "$WORK/lint_captured.log" | tr -s ' \n' ' ' | sed 's/ *$//')"

step lint_limit "$KC" lint "$CAP" --no-sass --cubin "$WORK/slow.cubin" --max-registers 32
ok=0; [ $RC = 1 ] && grep -q 'FAIL  registers' "$WORK/lint_limit.log" && ok=1
verdict lint_limit "$(pass_if "$ok")" "exit $RC: $(grep ' registers ' "$WORK/lint_limit.log" | tr -s ' \n' ' ' | sed 's/ *$//')"

step save "$KC" baseline save base "$CAP" --captured -n 100
ok=0; [ $RC = 0 ] && [ -f "$CAP/baselines/base.json" ] && ok=1
verdict save "$(pass_if "$ok")" "$(head -1 "$WORK/save.log")"

step diff_same "$KC" diff "$CAP" --baseline base --captured -n 100 --fail-on-regression
ok=0; [ $RC = 0 ] && grep -q 'Result: NO REGRESSION' "$WORK/diff_same.log" && ok=1
verdict diff_same "$(pass_if "$ok")" "exit $RC: $(grep 'time (median)' "$WORK/diff_same.log" | tr -s ' \n' ' ' | sed 's/ *$//')"

step diff_slow "$KC" diff "$CAP" --baseline base --cubin "$WORK/slow.cubin" -n 100 --fail-on-regression
ok=0
[ $RC = 1 ] && grep -q 'Result: REGRESSION' "$WORK/diff_slow.log" &&
  grep -E '^  registers .*WORSE' "$WORK/diff_slow.log" >/dev/null &&
  grep -E '^  time \(median\) .*WORSE' "$WORK/diff_slow.log" >/dev/null && ok=1
verdict diff_slow "$(pass_if "$ok")" "exit $RC: $(grep -E 'time \(median\)|^  registers' "$WORK/diff_slow.log" | tr -s ' \n' ' ' | sed 's/ *$//')"

step save_slow "$KC" baseline save slow "$CAP" --cubin "$WORK/slow.cubin" -n 100
step diff_faster "$KC" diff "$CAP" --baseline slow --captured -n 100 --fail-on-regression --json
ok=0
[ $RC = 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = [r for r in d["rows"] if r["metric"] == "time (median)"][0]
sys.exit(0 if t["change"] == "better" and d["speedup"] > 1 and not d["regression"] else 1)' "$WORK/diff_faster.log" && ok=1
verdict diff_faster "$(pass_if "$ok")" "exit $RC: $(json_get "$WORK/diff_faster.log" '"speed-up {}".format(round(j["speedup"], 2))')"

step inv_default "$KC" validate "$CAP" --baseline --footprint never --invariant no_nan,no_inf,non_negative,must_write
ok=0; [ $RC = 0 ] && grep -q '^Invariants: PASS' "$WORK/inv_default.log" && grep -q '^Result: PASS' "$WORK/inv_default.log" && ok=1
verdict inv_default "$(pass_if "$ok")" "exit $RC: $(grep '^Invariants' "$WORK/inv_default.log")"

SUB=$WORK/sub_out
step extract_sub "$KC" extract subtract -o "$SUB" -- "$WORK/sub"
printf '[invariants]\nnon_negative = true\n' >"$SUB/kerncap.toml"
step inv_negative "$KC" validate "$SUB" --baseline --footprint never
ok=0
# a - b < 0 where i % 100 < 50: 2050 of the 4096 outputs, the first at element 0.
[ $RC = 1 ] && grep -q 'invariant violated: non_negative: region .*(fp32 at +0x.*): 2050 negative' "$WORK/inv_negative.log" &&
  grep -q '^Result: FAIL (1 invariant violation' "$WORK/inv_negative.log" && ok=1
verdict inv_negative "$(pass_if "$ok")" "exit $RC: $(grep 'invariant violated' "$WORK/inv_negative.log" | head -1 | tr -s ' \n' ' ' | sed 's/ *$//')"

step inv_must_write "$KC" validate "$CAP" --cubin "$WORK/noop.cubin" --invariant must_write --no-determinism-check
ok=0
[ $RC = 1 ] && grep -q 'invariant violated: must_write: region .*the replay changed none' "$WORK/inv_must_write.log" && ok=1
verdict inv_must_write "$(pass_if "$ok")" "exit $RC: $(grep 'invariant violated' "$WORK/inv_must_write.log" | head -1 | tr -s ' \n' ' ' | sed 's/ *$//')"

step min_speedup "$KC" validate "$CAP" --cubin "$WORK/slow.cubin" --footprint never --min-speedup 1.5
ok=0; [ $RC = 1 ] && grep -q '^Speed-up: FAIL' "$WORK/min_speedup.log" && grep -q '^Result: FAIL (speed-up' "$WORK/min_speedup.log" && ok=1
verdict min_speedup "$(pass_if "$ok")" "exit $RC: $(grep '^Speed-up' "$WORK/min_speedup.log")"

step save_fuzz "$KC" baseline save fuzzed "$CAP" --captured -n 20 --fuzz 3
if [ $RC = 2 ] && grep -q 'needs the launch.s footprint' "$WORK/save_fuzz.log"; then
  verdict save_fuzz SKIP "no footprint (Compute Sanitizer API missing)"
else
  ok=0
  [ $RC = 0 ] && python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))["fuzz"]
sys.exit(0 if f and f["pass"] and f["trials"] == 3 and f["seed"] == 1 else 1)' "$CAP/baselines/fuzzed.json" && ok=1
  verdict save_fuzz "$(pass_if "$ok")" "exit $RC: $(head -1 "$WORK/save_fuzz.log")"
fi

[ "$failed" = 0 ] || echo "logs: $WORK (kept)"
summary

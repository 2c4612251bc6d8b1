#!/usr/bin/env bash
# Overhead of `kerncap profile`: runs bench/profile_overhead_app (~100k tiny kernels) plainly
# and under `kerncap profile`, alternating, and prints the wall-time ratio profile/plain
# (whole process, including CUDA start-up and kerncap's analysis) and the ratio of the
# app's own launch-loop time (the per-launch cost alone), and whether the loop ratio meets
# the 1.10 target. Medians over the repetitions.
#
#   bench/profile_overhead.sh BUILD_DIR
# Environment: KERNCAP_BENCH_KERNELS (default 100000), KERNCAP_BENCH_REPEAT (default 3),
#              KERNCAP_BENCH_STREAMS (default 1).
# Exit 0 measured, 1 failed, 77 skipped (no GPU).
set -u -o pipefail

BUILD=${1:?usage: bench/profile_overhead.sh BUILD_DIR}
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "SKIPPED: no GPU"
  exit 77
fi
BUILD=$(cd "$BUILD" && pwd) || exit 1
KC=$BUILD/bin/kerncap
APP=$BUILD/bench/profile_overhead_app
for f in "$KC" "$APP"; do
  [ -x "$f" ] || { echo "missing $f (build it: cmake --build $BUILD; bench/ needs add_subdirectory(bench))"; exit 1; }
done
N=${KERNCAP_BENCH_KERNELS:-100000}
R=${KERNCAP_BENCH_REPEAT:-3}
S=${KERNCAP_BENCH_STREAMS:-1}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-bench.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT

now_ns() { date +%s%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
loop_ms() { awk '$1 == "loop_ms" { print $2 }' "$1"; }

"$APP" --kernels 1000 >/dev/null || { echo "the benchmark application fails on its own"; exit 1; }  # warm-up
for f in plain_wall prof_wall plain_loop prof_loop; do : >"$WORK/$f"; done
for i in $(seq "$R"); do
  t0=$(now_ns)
  "$APP" --kernels "$N" --streams "$S" >"$WORK/plain.out" || { echo "plain run $i failed"; exit 1; }
  t1=$(now_ns)
  "$KC" profile --top 3 -o "$WORK/profile.json" -- "$APP" --kernels "$N" --streams "$S" >"$WORK/prof.out" 2>"$WORK/prof.err" ||
    { echo "profiled run $i failed:"; tail -n 20 "$WORK/prof.err"; exit 1; }
  t2=$(now_ns)
  echo "$(( (t1 - t0) / 1000 ))" >>"$WORK/plain_wall"
  echo "$(( (t2 - t1) / 1000 ))" >>"$WORK/prof_wall"
  loop_ms "$WORK/plain.out" >>"$WORK/plain_loop"
  loop_ms "$WORK/prof.out" >>"$WORK/prof_loop"
done

recorded=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(k["calls"] for k in d["kernels"] if "tiny_kernel" in k["name"]))' "$WORK/profile.json" 2>/dev/null || echo "?")
pw=$(median <"$WORK/plain_wall"); fw=$(median <"$WORK/prof_wall")
pl=$(median <"$WORK/plain_loop"); fl=$(median <"$WORK/prof_loop")
echo "kerncap profile overhead: $N tiny kernel launches on $S stream(s), median of $R runs"
echo "  GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1)"
awk -v p="$pw" -v f="$fw" 'BEGIN { printf "  wall time   plain %9.1f ms   profiled %9.1f ms   ratio %.2fx\n", p / 1000, f / 1000, f / p }'
awk -v p="$pl" -v f="$fl" 'BEGIN { printf "  launch loop plain %9.1f ms   profiled %9.1f ms   ratio %.2fx  (%.2f us extra per launch)\n", p, f, f / p, (f - p) * 1000 / '"$N"' }'
echo "  kernels recorded in the last profiled run: $recorded of $N"
awk -v p="$pl" -v f="$fl" 'BEGIN { r = f / p; printf "profile ratio (launch loop): %.2fx  target <= 1.10: %s\n", r, (r <= 1.10 ? "met" : "NOT met") }'
[ "$recorded" = "$N" ] || { echo "FAIL: the profile lost launches"; exit 1; }

#!/usr/bin/env bash
# Overhead of capture mode before the target: bench/profile_overhead_app launches ~100k tiny
# kernels with `kerncap extract` watching, the target never among them, side by side with the
# bare application in the same run (alternating, median of the repetitions), and prints the
# ratio of the app's own launch-loop time (loop_ms) for each way of watching:
#   other-kernel   the pattern matches no launched kernel (every launch takes the per-handle
#                  fast path; no kernel records are on: they start at the first match)
#   same-kernel    the pattern matches tiny_kernel but --dispatch lies past the loop, so every
#                  launch is counted as a match; kernel records for the in-app time
#                  (KERNCAP_IN_APP_TIME=match, the default) start only 1024 matches before the
#                  dispatch (docs/capture.md), so never here
#   same, near     as same-kernel with --dispatch just past the loop (N + 512): the records are
#                  on for the loop's last 512 launches
#   same, no rec   as same-kernel with KERNCAP_IN_APP_TIME=off: no kernel records at all
#   records start  as same-kernel with KERNCAP_IN_APP_TIME=start: records of every kernel
#                  from start-up (what a near dispatch costs per launch inside its window)
# Two reference rows place capture mode's cost (not part of the verdict):
#   injected, idle the bare app with libkerncap.so injected (CUDA_INJECTION64_PATH) and no mode:
#                  the library and libcupti loaded, nothing subscribed
#   profile floor  kerncap profile with KERNCAP_PROFILE_CUPTI=kind=none,memory=0: CUPTI's launch
#                  callbacks subscribed at injection, nothing recorded
# With KERNCAP_BENCH_PROBE=1, ten more rows inject bench's libinject_probe.so instead, which
# subscribes at injection time as libkerncap.so does (probe launch, launch+res, capture,
# capture-nores: CUPTI's callback sets with an empty handler; probe watch: kerncap's watcher;
# v2:launch, v2:capture, v2:watch: the same subscribed with cuptiSubscribe_v2, as kerncap does;
# ctx:launch, ctx:watch: the callbacks enabled only once the first context exists):
# they split capture mode's cost into CUPTI's and kerncap's. bench/cupti_callback_cost runs
# the same in one process, subscribed after the context exists.
# Each row prints four estimates of its ratio against the plain runs of the same repetitions
# (median, paired, fastest runs, loop CPU time: bench/overhead_lib.sh says why).
# Target: ratio <= 1.10 (<= 0.3 µs per launch). The extract runs end in "no capture" (exit 1):
# expected, only the loop time is used.
#
#   bench/capture_overhead.sh BUILD_DIR
# Environment: KERNCAP_BENCH_KERNELS (default 100000), KERNCAP_BENCH_REPEAT (default 3),
#              KERNCAP_BENCH_PROBE=1 (the probe rows above),
#              KERNCAP_BENCH_CPUS=LIST (taskset -c LIST for the plain and the watched runs alike),
#              KERNCAP_BENCH_ONLY=REGEX (only the rows whose name matches; the verdict needs
#              other-kernel and same-kernel among them).
# Exit 0 measured, 1 failed, 77 skipped (no GPU).
set -u -o pipefail

BUILD=${1:?usage: bench/capture_overhead.sh BUILD_DIR}
# shellcheck source=../tests/gpu/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/gpu/lib.sh"
# shellcheck source=overhead_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/overhead_lib.sh"
gpu_build "$BUILD"
overhead_setup  # APP, N, R, PIN, WORK (bench/overhead_lib.sh)


# name | environment | how it runs (extract, profile, direct: the app alone) | extract arguments
MODES=(
  "other-kernel||extract|kerncap_bench_no_such_kernel"
  "same-kernel||extract|tiny_kernel --dispatch 100000000"
  "same, near||extract|tiny_kernel --dispatch $((N + 512))"
  "same, no rec|KERNCAP_IN_APP_TIME=off|extract|tiny_kernel --dispatch 100000000"
  "records start|KERNCAP_IN_APP_TIME=start|extract|tiny_kernel --dispatch 100000000"
  "injected, idle|CUDA_INJECTION64_PATH=$BUILD/lib/libkerncap.so|direct|"
  "profile floor|KERNCAP_PROFILE_CUPTI=kind=none,memory=0|profile|"
)
[ -f "$BUILD/lib/libkerncap.so" ] || { echo "missing $BUILD/lib/libkerncap.so"; exit 1; }
if [ "${KERNCAP_BENCH_PROBE:-0}" = 1 ]; then
  PROBE=$BUILD/bench/libinject_probe.so
  [ -f "$PROBE" ] || { echo "missing $PROBE (build it: cmake --build $BUILD)"; exit 1; }
  for k in launch launch+res capture capture-nores watch v2:launch v2:capture v2:watch ctx:launch ctx:watch; do
    MODES+=("probe $k|CUDA_INJECTION64_PATH=$PROBE KERNCAP_PROBE=$k|direct|")
  done
fi

if [ -n "${KERNCAP_BENCH_ONLY:-}" ]; then
  kept=()
  for m in "${MODES[@]}"; do [[ ${m%%|*} =~ $KERNCAP_BENCH_ONLY ]] && kept+=("$m"); done
  (( ${#kept[@]} )) || { echo "KERNCAP_BENCH_ONLY=$KERNCAP_BENCH_ONLY matches no row"; exit 1; }
  MODES=("${kept[@]}")
fi

"$APP" --kernels 1000 >/dev/null || { echo "the benchmark application fails on its own"; exit 1; }  # warm-up
: >"$WORK/plain"; : >"$WORK/plain_cpu"
for m in "${!MODES[@]}"; do : >"$WORK/mode$m"; : >"$WORK/cpu$m"; done
for i in $(seq "$R"); do
  "${PIN[@]}" "$APP" --kernels "$N" >"$WORK/plain.out" || { echo "plain run $i failed"; exit 1; }
  loop_ms "$WORK/plain.out" >>"$WORK/plain"
  loop_cpu_ms "$WORK/plain.out" >>"$WORK/plain_cpu"
  for m in "${!MODES[@]}"; do
    IFS='|' read -r name envs how args <<<"${MODES[$m]}"
    read -r -a xargs_ <<<"$args"
    case $how in
      extract) run=("$KC" extract "${xargs_[@]}" -o "$WORK/cap$m" --force --) ;;
      profile) run=("$KC" profile --top 3 -o "$WORK/profile$m.json" --) ;;
      direct) run=() ;;
    esac
    # shellcheck disable=SC2086
    env $envs "${PIN[@]}" "${run[@]}" "$APP" --kernels "$N" >"$WORK/m$m.out" 2>"$WORK/m$m.err"
    t=$(loop_ms "$WORK/m$m.out")
    [ -n "$t" ] || { echo "$name: the application printed no loop_ms:"; tail -n 20 "$WORK/m$m.err"; exit 1; }
    echo "$t" >>"$WORK/mode$m"
    loop_cpu_ms "$WORK/m$m.out" >>"$WORK/cpu$m"
  done
done

p=$(median <"$WORK/plain")
echo "kerncap capture mode before the target: $N tiny kernel launches, median of $R runs"
echo "  GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1)${PIN:+; CPUs ${KERNCAP_BENCH_CPUS:-}}"
printf '  %-19s loop %9.1f ms\n' "bare app" "$p"
worst=0; worst_fast=0
for m in "${!MODES[@]}"; do
  name=${MODES[$m]%%|*}
  f=$(median <"$WORK/mode$m")
  read -r r fp fm fc < <(overhead_estimates "$WORK/mode$m" "$WORK/plain" "$WORK/cpu$m" "$WORK/plain_cpu")
  awk -v n="$name" -v p="$p" -v f="$f" -v k="$N" -v r="$r" -v fp="$fp" -v fm="$fm" -v fc="$fc" \
    'BEGIN { printf "  %-19s loop %9.1f ms   ratio %.2fx  (%.2f us extra per launch)  paired %.2fx  fastest runs %.2fx  CPU %.2fx\n", n, f, r, (f - p) * 1000 / k, fp, fm, fc }'
  if [ "$name" = other-kernel ] || [ "$name" = same-kernel ]; then
    worst=$(awk -v w="$worst" -v r="$r" 'BEGIN { print (r > w ? r : w) }')
    worst_fast=$(awk -v w="$worst_fast" -v r="$fm" 'BEGIN { print (r > w ? r : w) }')
  fi
done
echo "  launch loop of each run (ms): plain $(tr '\n' ' ' <"$WORK/plain")"
for m in "${!MODES[@]}"; do echo "    ${MODES[$m]%%|*}: $(tr '\n' ' ' <"$WORK/mode$m")"; done
awk -v w="$worst" -v m="$worst_fast" -v v="$(overhead_verdict "$worst" "$worst_fast")" \
  'BEGIN { printf "capture-mode ratio (default settings, worst of other-kernel and same-kernel): %.2fx medians, %.2fx fastest runs  target <= 1.10: %s\n", w, m, v }'

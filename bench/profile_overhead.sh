#!/usr/bin/env bash
# Overhead of `kerncap profile`: runs bench/profile_overhead_app (~100k tiny kernels) plainly
# and under `kerncap profile`, alternating, and prints the wall-time ratio profile/plain
# (whole process, including CUDA start-up and kerncap's analysis), the ratio of the app's own
# launch-loop time (the per-launch cost alone), and whether the loop ratio meets the 1.10
# target. Medians over the repetitions; beside them the median of each repetition's own ratio
# (paired: against the plain run just before), the ratio of the fastest runs and of the loop
# thread's CPU time (steadier where a shared host's noise stretches wall time).
#
# Then one row per CUPTI variant (KERNCAP_PROFILE_CUPTI, a diagnostic: docs/profile.md), each
# with its own launch-loop ratio against the plain runs of the same repetitions, so what each
# part of CUPTI costs shows side by side:
#   default          what `kerncap profile` does: sampled timing, one window in 10 after the first
#                    10000 launches (CONCURRENT_KERNEL records, 8 MiB buffers)
#   exact            `--sample 1`: every launch timed; the CUPTI rows below are exact runs too
#   kind=kernel      KERNEL records instead (serialises kernels)
#   device 32M       CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE 32 MiB
#   device 32M pool  the same with DEVICE_BUFFER_POOL_LIMIT 1000 and 8 pre-allocated buffers
#   per-thread 0     CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER off (one shared buffer)
#   pinned           device buffers in pinned host memory (MEM_ALLOCATION_TYPE_HOST_PINNED)
#   host 32M         32 MiB activity buffers (fewer buffer hand-overs)
#   no memcpy        no MEMCPY/MEMSET records
#   correlation always  external-correlation records from the start (by default only inside
#                    benchmark windows)
#   no records       no kernel records at all (the profile is empty; `profile` exits 2, "no kernels")
#   floor            nor memcpy/memset records: CUPTI subscribed, device records only, and no
#                    launch callbacks (sampled timing is off without kernel records)
#   callback empty   the floor plus the launch callbacks, handled by a function that returns
#                    at once (this minus floor: CUPTI's callback dispatch alone)
#   attach           the floor spelled out (callback=off): the same configuration, so the
#                    spread between it and floor is the run-to-run noise
#   sample 100       one window in 100 (about the launch callback's own cost)
#   sample 20        one window in 20
#   sampled no memcpy  the default without MEMCPY/MEMSET records (what they cost in the windows)
#
#   bench/profile_overhead.sh BUILD_DIR
# Environment: KERNCAP_BENCH_KERNELS (default 100000), KERNCAP_BENCH_REPEAT (default 3),
#              KERNCAP_BENCH_STREAMS (default 1), KERNCAP_BENCH_VARIANTS=0 (the default row only)
#              or a comma-separated list of variant names (the default row and those),
#              KERNCAP_BENCH_CPUS=LIST (taskset -c LIST for the plain and the profiled runs alike:
#              on a shared host the launch loop's speed drifts by 10-20 % between runs, more than
#              what is measured; pinning to the GPU's NUMA node takes most of that out).
# Exit 0 measured, 1 failed, 77 skipped (no GPU).
set -u -o pipefail

BUILD=${1:?usage: bench/profile_overhead.sh BUILD_DIR}
# shellcheck source=../tests/gpu/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/gpu/lib.sh"
# shellcheck source=overhead_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/overhead_lib.sh"
gpu_build "$BUILD"
overhead_setup  # APP, N, R, PIN, WORK (bench/overhead_lib.sh)
S=${KERNCAP_BENCH_STREAMS:-1}

now_ns() { date +%s%N; }
recorded() { json_get "$1" 'sum(k["calls"] for k in j["kernels"] if "tiny_kernel" in k["name"])' || echo "?"; }

# name | KERNCAP_PROFILE_CUPTI | whether every launch must be counted in the profile | profile options
VARIANTS=(
  "default||yes|"
  "exact||yes|--sample 1"
  "kind=kernel|kind=kernel|yes|--sample 1"
  "device 32M|device_buffer=32M|yes|--sample 1"
  "device 32M pool|device_buffer=32M,pool_limit=1000,preallocate=8|yes|--sample 1"
  "per-thread 0|per_thread=0|yes|--sample 1"
  "pinned|pinned=1|yes|--sample 1"
  "host 32M|host_buffer=32M|yes|--sample 1"
  "no memcpy|memory=0|yes|--sample 1"
  "correlation always|correlation=always|yes|--sample 1"
  "no records|kind=none|no|"
  "floor|kind=none,memory=0|no|"
  "callback empty|kind=none,memory=0,callback=empty|no|"
  "attach|kind=none,memory=0,callback=off|no|"
  "sample 100||yes|--sample 100"
  "sample 20||yes|--sample 20"
  "sampled no memcpy|memory=0|yes|"
)
case ${KERNCAP_BENCH_VARIANTS:-1} in
  1) ;;
  0) VARIANTS=("${VARIANTS[0]}") ;;
  *) # a comma-separated list of variant names: the default row and those
    keep=("${VARIANTS[0]}")
    IFS=',' read -r -a wanted <<<"$KERNCAP_BENCH_VARIANTS"
    for w in "${wanted[@]}"; do
      found=0
      for v in "${VARIANTS[@]:1}"; do [ "${v%%|*}" = "$w" ] && { keep+=("$v"); found=1; }; done
      [ "$found" = 1 ] || { echo "KERNCAP_BENCH_VARIANTS: no variant named '$w'"; exit 2; }
    done
    VARIANTS=("${keep[@]}") ;;
esac

"$APP" --kernels 1000 >/dev/null || { echo "the benchmark application fails on its own"; exit 1; }  # warm-up
for f in plain_wall prof_wall plain_loop plain_cpu; do : >"$WORK/$f"; done
for v in "${!VARIANTS[@]}"; do : >"$WORK/loop$v"; : >"$WORK/cpu$v"; done
failed=0
for i in $(seq "$R"); do
  t0=$(now_ns)
  "${PIN[@]}" "$APP" --kernels "$N" --streams "$S" >"$WORK/plain.out" || { echo "plain run $i failed"; exit 1; }
  t1=$(now_ns)
  echo "$(( (t1 - t0) / 1000 ))" >>"$WORK/plain_wall"
  loop_ms "$WORK/plain.out" >>"$WORK/plain_loop"
  loop_cpu_ms "$WORK/plain.out" >>"$WORK/plain_cpu"
  for v in "${!VARIANTS[@]}"; do
    IFS='|' read -r name tuning complete popts <<<"${VARIANTS[$v]}"
    read -r -a popts_ <<<"$popts"
    rm -f "$WORK/profile$v.json"
    t1=$(now_ns)
    KERNCAP_PROFILE_CUPTI=$tuning "${PIN[@]}" "$KC" profile "${popts_[@]}" --top 3 -o "$WORK/profile$v.json" -- "$APP" --kernels "$N" --streams "$S" \
      >"$WORK/prof$v.out" 2>"$WORK/prof$v.err"
    rc=$?
    t2=$(now_ns)
    if [ "$complete" = yes ] && [ "$rc" != 0 ]; then
      echo "$name: the profiled run $i failed (exit $rc):"; tail -n 20 "$WORK/prof$v.err"; exit 1
    fi
    [ "$v" = 0 ] && echo "$(( (t2 - t1) / 1000 ))" >>"$WORK/prof_wall"
    t=$(loop_ms "$WORK/prof$v.out")
    [ -n "$t" ] || { echo "$name: the application printed no loop_ms:"; tail -n 20 "$WORK/prof$v.err"; exit 1; }
    echo "$t" >>"$WORK/loop$v"
    loop_cpu_ms "$WORK/prof$v.out" >>"$WORK/cpu$v"
  done
done

pw=$(median <"$WORK/plain_wall"); fw=$(median <"$WORK/prof_wall")
pl=$(median <"$WORK/plain_loop"); fl=$(median <"$WORK/loop0")
echo "kerncap profile overhead: $N tiny kernel launches on $S stream(s), median of $R runs"
echo "  GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1)${PIN:+; CPUs ${KERNCAP_BENCH_CPUS:-}}"
awk -v p="$pw" -v f="$fw" 'BEGIN { printf "  wall time   plain %9.1f ms   profiled %9.1f ms   ratio %.2fx\n", p / 1000, f / 1000, f / p }'
awk -v p="$pl" -v f="$fl" 'BEGIN { printf "  launch loop plain %9.1f ms   profiled %9.1f ms   ratio %.2fx  (%.2f us extra per launch)\n", p, f, f / p, (f - p) * 1000 / '"$N"' }'
echo "  launch loop per CUPTI variant (KERNCAP_PROFILE_CUPTI), each against the same plain runs:"
for v in "${!VARIANTS[@]}"; do
  IFS='|' read -r name tuning complete popts <<<"${VARIANTS[$v]}"
  f=$(median <"$WORK/loop$v")
  rec=n/a
  if [ "$complete" = yes ]; then
    rec=$(recorded "$WORK/profile$v.json")
    [ "$rec" = "$N" ] || { echo "FAIL: $name: the profile holds $rec of $N launches"; failed=1; }
  fi
  read -r rr fp fmr fcr < <(overhead_estimates "$WORK/loop$v" "$WORK/plain_loop" "$WORK/cpu$v" "$WORK/plain_cpu")
  awk -v n="$name" -v t="${tuning:-${popts:--}}" -v p="$pl" -v f="$f" -v k="$N" -v r="$rec" -v rr="$rr" -v fp="$fp" -v fmr="$fmr" -v fcr="$fcr" \
    'BEGIN { printf "    %-17s loop %9.1f ms   ratio %.2fx  (%5.2f us extra per launch)  paired %.2fx  fastest runs %.2fx  CPU %.2fx  recorded %s   [%s]\n", n, f, rr, (f - p) * 1000 / k, fp, fmr, fcr, r, t }'
done
# Every run's loop time, in run order (plain and each row alternate), so noise shows.
echo "  launch loop of each run (ms): plain $(tr '\n' ' ' <"$WORK/plain_loop")"
for v in "${!VARIANTS[@]}"; do
  echo "    ${VARIANTS[$v]%%|*}: $(tr '\n' ' ' <"$WORK/loop$v")"
done
echo "  (recorded: launches of tiny_kernel the profile counts; with --sample they are counted, a sample timed)"
for v in "${!VARIANTS[@]}"; do
  IFS='|' read -r name tuning complete popts <<<"${VARIANTS[$v]}"
  case $name in default | exact | "sample "*) ;; *) continue ;; esac
  python3 - "$WORK/profile$v.json" "$name" <<'PY' || true
import json, sys
d = json.load(open(sys.argv[1]))
k = next(k for k in d["kernels"] if "tiny_kernel" in k["name"])
p = d["processes"][0]
print(f"    {sys.argv[2]}: tiny_kernel calls {k['calls']}, timed {k['samples']}, estimated {k['estimated']}, "
      f"avg {k['avg_ns']:.0f} ns, total {k['total_ns'] / 1e6:.3f} ms; dispatch list {len(k['extract']['processes'][0]['dispatch'])} long")
PY
done
echo "  kernels recorded in the last profiled run: $(recorded "$WORK/profile0.json") of $N"
read -r r0 fp0 fm0 fc0 < <(overhead_estimates "$WORK/loop0" "$WORK/plain_loop" "$WORK/cpu0" "$WORK/plain_cpu")
awk -v r="$r0" -v fp="$fp0" -v m="$fm0" -v c="$fc0" -v v="$(overhead_verdict "$r0" "$fm0")" \
  'BEGIN { printf "profile ratio (launch loop): %.2fx medians, %.2fx paired, %.2fx fastest runs, %.2fx loop CPU time  target <= 1.10: %s\n", r, fp, m, c, v }'
[ "$failed" = 0 ] || exit 1

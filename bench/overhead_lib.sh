# shellcheck shell=bash
# shellcheck disable=SC2034  # APP, N, R, PIN: read by the benchmarks
# Shared by bench/profile_overhead.sh and bench/capture_overhead.sh (sourced after
# tests/gpu/lib.sh, which defines median).

# overhead_setup: after gpu_build: APP (bench/profile_overhead_app; exit 1 when it or kerncap is
# missing), N (KERNCAP_BENCH_KERNELS, default 100000), R (KERNCAP_BENCH_REPEAT, default 3), PIN
# (taskset -c KERNCAP_BENCH_CPUS, or nothing: for the plain and the watched runs alike) and
# WORK (a temporary directory, removed at exit).
overhead_setup() {
  local f
  APP=$BUILD/bench/profile_overhead_app
  for f in "$KC" "$APP"; do
    [ -x "$f" ] || { echo "missing $f (build it: cmake --build $BUILD; bench/ needs add_subdirectory(bench))"; exit 1; }
  done
  N=${KERNCAP_BENCH_KERNELS:-100000}
  R=${KERNCAP_BENCH_REPEAT:-3}
  PIN=()
  if [ -n "${KERNCAP_BENCH_CPUS:-}" ]; then
    command -v taskset >/dev/null || { echo "KERNCAP_BENCH_CPUS needs taskset (util-linux)"; exit 1; }
    PIN=(taskset -c "$KERNCAP_BENCH_CPUS")
    "${PIN[@]}" true || { echo "KERNCAP_BENCH_CPUS=$KERNCAP_BENCH_CPUS: taskset refuses it"; exit 1; }
  fi
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-bench.XXXXXX") || exit 1
  trap 'rm -rf "$WORK"' EXIT
}

# loop_ms FILE, loop_cpu_ms FILE: the launch loop's wall and CPU milliseconds that
# bench/profile_overhead_app printed (its "loop_ms N" and "loop_cpu_ms N" lines).
loop_ms() { awk '$1 == "loop_ms" { print $2 }' "$1"; }
loop_cpu_ms() { awk '$1 == "loop_cpu_ms" { print $2 }' "$1"; }

# The four estimates of one row's launch-loop ratio
# against the plain runs of the same repetitions. On a shared host the plain loop alone moves
# by 15-25 % from run to run, more than what is measured, so one estimate is not enough:
#   median   median of the row's runs / median of the plain runs
#   paired   median of each repetition's own ratio (the row's run against the plain run just
#            before it): drift over the repetitions cancels out of it
#   fastest  fastest row run / fastest plain run (interference only ever slows a run down)
#   cpu      median loop-thread CPU time / the plain runs' (steal time on a virtualised host
#            does not stretch it); 0 when the application printed none
# overhead_estimates ROW_LOOPS PLAIN_LOOPS ROW_CPU PLAIN_CPU: files of one number per line, in
# repetition order; prints "median paired fastest cpu".
overhead_estimates() {
  local f p fm pm fc pc fp
  f=$(median <"$1"); p=$(median <"$2")
  fm=$(sort -g "$1" | head -n1); pm=$(sort -g "$2" | head -n1)
  fc=$(median <"$3"); pc=$(median <"$4")
  fp=$(paste "$1" "$2" | awk '$2 > 0 { print $1 / $2 }' | median)
  awk -v f="$f" -v p="$p" -v fm="$fm" -v pm="$pm" -v fc="${fc:-0}" -v pc="${pc:-0}" -v fp="$fp" \
    'BEGIN { printf "%.4f %.4f %.4f %.4f\n", f / p, fp, fm / pm, (pc > 0 ? fc / pc : 0) }'
}

# overhead_verdict MEDIAN FASTEST: the 1.10 target by the wall-time estimates.
overhead_verdict() {
  awk -v r="$1" -v m="$2" 'BEGIN { print (r <= 1.10 && m <= 1.10 ? "met (wall time)" : r <= 1.10 || m <= 1.10 ? "met by one wall-time estimate only" : "NOT met (wall time)") }'
}

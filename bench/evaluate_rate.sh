#!/usr/bin/env bash
# Evaluations per second of `kerncap evaluate` (python/kerncap/evaluate_pool.py) on 1 GPU and on
# every GPU of this host (EVAL_GPU_COUNTS, default "1 N"), for two captures side by side in one
# run, and where each run's time went per candidate (bench/evaluate_profile.py):
#   small  vectorAdd of examples/vector_add (1M floats; 12 MiB over three regions), candidates:
#          copies of examples' vector_add.cubin, the tail variant every 10th (FAIL), a
#          faulting one (noop_variant.py --fault) every 50th
#   gemm   the 512x512 SGEMM of bench/fidelity_app (matmul), candidates: the application's
#          source compiled again to a cubin (nvcc -cubin), a no-op variant every 10th (FAIL),
#          a faulting one every 50th
# Every run is timed (--time: 1 warm-up + 10 launches per candidate, the engine's default) with
# no hanging candidates (a hang costs the time limit, not throughput; tests/gpu/evaluate_e2e.sh
# checks them). Each run is checked as evaluate_e2e.sh checks it (every candidate once, the
# copies PASS, the faults do not, the verdicts identical to the capture's 1-GPU run).
# Rates are whole `kerncap evaluate` commands (interpreter, workers' start-up included), the
# pool's own (stats "seconds"), and steady (once every GPU's worker had opened, to the last
# result); scaling = rate on N / (N x rate on 1), both measured here.
# EVAL_SPARES="0 1" also runs each with --spares 0 (no spare workers), side by side.
# Exit 0 when every run's checks passed (the rate is reported, not judged), 1 otherwise, 77
# without a GPU.
#
#   bench/evaluate_rate.sh BUILD_DIR
#
# Environment: EVAL_SMALL (candidates, default 1000), EVAL_GEMM (default 300), EVAL_CAPTURES
# ("small gemm"), EVAL_GPU_COUNTS, EVAL_SPARES (default "1"; "auto" the pool's default), EVAL_TIME_LIMIT (default 20 s),
# OUT (work files under it), KERNCAP_GPU_TIMEOUT (per command, default 600 s).
set -u -o pipefail

BUILD=${1:?usage: bench/evaluate_rate.sh BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
# shellcheck source=tests/gpu/lib.sh
. "$REPO/tests/gpu/lib.sh"
gpu_build "$BUILD"
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-600}
LIMIT=${EVAL_TIME_LIMIT:-20}
PTXAS=$(dirname "$NVCC")/ptxas
APP=$BUILD/bench/fidelity_app
export KERNCAP_REPLAY_LIB=$BUILD/lib/libkerncap_replay.so KERNCAP_BIN=$KC EVAL_HANG=0
export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"
unset KERNCAP_SERVE CUDA_VISIBLE_DEVICES
NGPU=$(nvidia-smi -L | grep -c '^GPU')
counts=${EVAL_GPU_COUNTS:-$( [ "$NGPU" -gt 1 ] && echo "1 $NGPU" || echo 1)}
gpu_work_dir evaluate-rate
LOG=$WORK/log.txt LOG_TAIL=20
D=$WORK
echo "evaluate rate: work in $WORK ($NGPU GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1))"

# candidates DIR N COPY WRONG FAULT: N files, the kinds by number as evaluate_check.py expects them.
candidates() {
  local dir=$1 n=$2 i src
  mkdir -p "$dir"
  for ((i = 0; i < n; i++)); do
    src=$3
    if [ $((i % 50)) = 21 ]; then src=$5
    elif [ $((i % 10)) = 3 ]; then src=$4
    fi
    cp "$src" "$(printf '%s/c%05d.cubin' "$dir" "$i")"
  done
}

# prepare NAME: the capture and its candidates in $WORK/NAME (CAP, CANDS, N), else returns 1.
prepare() {
  local name=$1 w=$WORK/$1 sm copy wrong
  mkdir -p "$w"
  CAP=$w/cap CANDS=$w/cands
  case $name in
    small)
      N=${EVAL_SMALL:-1000}
      run "$name-extract" "$KC" extract vectorAdd -o "$CAP" -- "$EX/vector_add" 1000000 || return 1 ;;
    gemm)
      N=${EVAL_GEMM:-300}
      run "$name-extract" "$KC" extract matmul --dispatch 10 -o "$CAP" -- "$APP" matmul || return 1 ;;
  esac
  run "$name-footprint" "$KC" footprint "$CAP" || echo "  note: $name: no footprint (weak verdicts)"
  "$KC" info --json "$CAP" >"$w/info.json" || return 1
  sm=$(json_get "$w/info.json" '"{}{}".format(*m["device"]["cc"])')
  python3 "$REPO/tests/gpu/noop_variant.py" --fault <"$w/info.json" >"$w/fault.ptx" &&
    "$PTXAS" -arch="sm_$sm" "$w/fault.ptx" -o "$w/fault.cubin" || return 1
  case $name in
    small) copy=$EX/vector_add.cubin wrong=$EX/vector_add_tail.cubin ;;
    gemm)
      copy=$w/recompiled.cubin wrong=$w/noop.cubin
      run "$name-nvcc" "$NVCC" -cubin -arch="sm_$sm" -std=c++17 -O3 "$REPO/bench/fidelity_app.cu" -o "$copy" || return 1
      python3 "$REPO/tests/gpu/noop_variant.py" <"$w/info.json" >"$w/noop.ptx" &&
        "$PTXAS" -arch="sm_$sm" "$w/noop.ptx" -o "$wrong" || return 1 ;;
  esac
  candidates "$CANDS" "$N" "$copy" "$wrong" "$w/fault.cubin"
}

printf '| capture | GPUs | spares | candidates | command s | evaluations/s | pool evaluations/s | per GPU | scaling | steady evaluations/s | steady per GPU | steady scaling | verdicts | restarts | checks |\n' >"$WORK/table"
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n' >>"$WORK/table"
: >"$WORK/profile"
for cap in ${EVAL_CAPTURES:-small gemm}; do
  if ! prepare "$cap"; then
    echo "FAIL: $cap: cannot prepare: $(first_error "$cap-extract" "$cap-nvcc")"
    tally FAIL
    printf '| %s | cannot prepare | | | | | | | | | | FAIL |\n' "$cap" >>"$WORK/table"
    continue
  fi
  REF="" ONE_RATE="" ONE_STEADY=""
  for spares in ${EVAL_SPARES:-1}; do
    for g in $counts; do
      tag=$cap-g$g-s$spares
      t0=$(now)
      run "$tag" "$KC" evaluate "$CAP" --images "$CANDS" --gpus "$(seq -s, 0 $((g - 1)))" --time \
        --time-limit "$LIMIT" --spares "$spares" --stats "$WORK/$tag.stats.json" --quiet
      secs=$(since "$t0")
      mapfile -t chk < <(python3 "$REPO/tests/gpu/evaluate_check.py" "$N" "$LIMIT" "$WORK/$tag.out" ${REF:+"$REF"})
      problems=${chk[1]:-}
      [ "$RC" = 0 ] || problems="exit $RC: $(tail -n1 "$WORK/$tag.err"); $problems"
      rate=$(awk -v n="$N" -v s="$secs" 'BEGIN { printf "%.1f", n / s }')
      pool=$(json_get "$WORK/$tag.stats.json" '"%.1f" % (m["candidates"] / m["seconds"])' || echo "?")
      per=$(awk -v r="$pool" -v g="$g" 'BEGIN { printf "%.1f", r / g }')
      restarts=$(json_get "$WORK/$tag.stats.json" 'm["restarts"]' || echo "?")
      steady=$(python3 -c 'import json, sys; sys.path.insert(0, sys.argv[2]); import evaluate_profile as p
print("%.1f" % p.steady_rate(json.load(open(sys.argv[1]))))' "$WORK/$tag.stats.json" "$HERE" || echo 0)
      steady_per=$(awk -v r="$steady" -v g="$g" 'BEGIN { printf "%.1f", r / g }')
      scaling="-" steady_scaling="-"
      if [ "$g" = 1 ]; then  # each spares setting scales over its own 1-GPU run
        ONE_RATE=$pool ONE_STEADY=$steady
        [ -n "$REF" ] || REF=$WORK/$tag.out
      elif [ -n "$ONE_RATE" ]; then
        scaling=$(awk -v r="$pool" -v o="$ONE_RATE" -v g="$g" 'BEGIN { printf "%.2f", r / (o * g) }')
        steady_scaling=$(awk -v r="$steady" -v o="$ONE_STEADY" -v g="$g" 'BEGIN { if (o > 0) printf "%.2f", r / (o * g); else print "-" }')
      fi
      st=$(pass_unless "$problems")
      tally "$st"
      printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$cap" "$g" "$spares" "$N" \
        "$secs" "$rate" "$pool" "$per" "$scaling" "$steady" "$steady_per" "$steady_scaling" "${chk[0]:-}" "$restarts" \
        "${problems:-$st}" >>"$WORK/table"
      python3 "$HERE/evaluate_profile.py" "$WORK/$tag.out" "$WORK/$tag.stats.json" --label "$tag" >>"$WORK/profile" 2>&1
      echo "  $tag: $pool evaluations/s ($per per GPU, command $rate/s) ${chk[0]:-} $st"
    done
  done
done

echo
cat "$WORK/table"
echo
echo "Per candidate, where the time went (bench/evaluate_profile.py):"
cat "$WORK/profile"
summary

#!/usr/bin/env bash
# GPU suite for `kerncap evaluate` (python/kerncap/evaluate_pool.py): many candidates of one
# capture judged on every GPU of the host, one worker process and engine Session per GPU.
# Extracts examples/vector_add (vectorAdd) and footprints it, then builds N candidates
# (EVAL_CANDIDATES, default 400): copies of the example's vector_add.cubin, the tail variant
# (vector_add_tail.cubin) every 10th, a faulting one (noop_variant.py --fault: a store to
# address 8) every 50th and, unless EVAL_HANG=0, a spinning one (the no-op entry looping
# forever) every 100th. Runs `kerncap evaluate --time --time-limit S` on 1 GPU, 2, 4 ... and all
# GPUs and checks, for each run: every candidate reported exactly once; the copies PASS, the
# faults do not, the hangs are "timed out after S s"; the verdicts (result and line, by index)
# identical to the 1-GPU run's. When Python has dask[distributed], the same candidates through
# kerncap.cluster.evaluate_on on a one-worker LocalCluster: the same verdicts again.
# Prints a table of evaluations/s per GPU count (whole runs: workers' start-up included) and
# the scaling over 1 GPU (EVAL_MIN_SCALING, default 0.9 of linear, reported as a verdict).
# Exit 0 all passed, 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/evaluate_e2e.sh BUILD_DIR
#
# Environment: OUT (work files under it), EVAL_CANDIDATES, EVAL_HANG, EVAL_TIME_LIMIT (default
# 20 s), EVAL_MIN_SCALING, EVAL_GPU_COUNTS ("1 2": the GPU counts to run; default 1, 2, 4, ...
# and all), KERNCAP_GPU_TIMEOUT (per command, default 900 s here).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/evaluate_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-900}
N=${EVAL_CANDIDATES:-400}
LIMIT=${EVAL_TIME_LIMIT:-20}
MIN_SCALING=${EVAL_MIN_SCALING:-0.9}
PTXAS=$(dirname "$NVCC")/ptxas
for f in "$KC" "$BUILD/lib/libkerncap_replay.so" "$EX/vector_add" "$EX/vector_add.cubin" "$EX/vector_add_tail.cubin"; do
  [ -e "$f" ] || { echo "missing $f (build first: cmake --build $BUILD)"; exit 1; }
done
export KERNCAP_REPLAY_LIB=$BUILD/lib/libkerncap_replay.so KERNCAP_BIN=$KC
export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"
unset KERNCAP_SERVE CUDA_VISIBLE_DEVICES
NGPU=$(nvidia-smi -L | grep -c '^GPU')
gpu_work_dir evaluate
LOG=$WORK/log.txt LOG_TAIL=20
echo "evaluate suite: work in $WORK ($NGPU GPU(s), $N candidates)"

D=$WORK
CAP=$WORK/cap
if ! run extract "$KC" extract vectorAdd -o "$CAP" -- "$EX/vector_add" 1000000; then
  echo "FAIL: extract: $(first_error extract)"
  exit 1
fi
run footprint "$KC" footprint "$CAP" || echo "  note: no footprint (weak verdicts): $(first_error footprint)"
"$KC" info --json "$CAP" >"$WORK/info.json"
SM=$(json_get "$WORK/info.json" '"{}{}".format(*m["device"]["cc"])')

# The candidates.
C=$WORK/cands
mkdir -p "$C"
if ! { python3 "$HERE/noop_variant.py" --fault <"$WORK/info.json" >"$WORK/fault.ptx" &&
  "$PTXAS" -arch="sm_$SM" "$WORK/fault.ptx" -o "$WORK/fault.cubin"; }; then
  echo "FAIL: cannot build the fault variant"
  exit 1
fi
SPIN='import sys; t = sys.stdin.read(); assert t.count("{\n  ret;\n}") == 1
print(t.replace("{\n  ret;\n}", "{\nSPIN:\n  bra.uni SPIN;\n}"))'
if ! { python3 "$HERE/noop_variant.py" <"$WORK/info.json" | python3 -c "$SPIN" >"$WORK/hang.ptx" &&
  "$PTXAS" -arch="sm_$SM" "$WORK/hang.ptx" -o "$WORK/hang.cubin"; }; then
  echo "FAIL: cannot build the hang variant"
  exit 1
fi
for ((i = 0; i < N; i++)); do
  src=$EX/vector_add.cubin
  if [ $((i % 100)) = 57 ] && [ "${EVAL_HANG:-1}" = 1 ]; then src=$WORK/hang.cubin
  elif [ $((i % 50)) = 21 ]; then src=$WORK/fault.cubin
  elif [ $((i % 10)) = 3 ]; then src=$EX/vector_add_tail.cubin
  fi
  cp "$src" "$(printf '%s/c%05d.cubin' "$C" "$i")"
done

counts=${EVAL_GPU_COUNTS:-}
if [ -z "$counts" ]; then
  for g in 1 2 4 8; do [ "$g" -lt "$NGPU" ] && counts+="$g "; done
  counts+="$NGPU"
fi
printf '| GPUs | candidates | seconds | evaluations/s | per GPU | scaling | verdicts | restarts | problems | verdict |\n' >"$WORK/table"
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n' >>"$WORK/table"
ONE_RATE=""
for g in $counts; do
  gpus=$(seq -s, 0 $((g - 1)))
  t0=$(now)
  run "gpus$g" "$KC" evaluate "$CAP" --images "$C" --gpus "$gpus" --time --time-limit "$LIMIT" --quiet
  secs=$(since "$t0")
  mapfile -t chk < <(python3 "$HERE/evaluate_check.py" "$N" "$LIMIT" "$WORK/gpus$g.out" ${ONE_REF:+"$ONE_REF"})
  problems=${chk[1]:-}
  [ "$RC" = 0 ] || problems="exit $RC: $(tail -n1 "$WORK/gpus$g.err"); $problems"
  rate=$(awk -v n="$N" -v s="$secs" 'BEGIN { printf "%.1f", n / s }')
  per=$(awk -v r="$rate" -v g="$g" 'BEGIN { printf "%.1f", r / g }')
  restarts=$(grep -o '[0-9]* worker restart' "$WORK/gpus$g.err" | cut -d' ' -f1)
  scaling="-"
  if [ -z "$ONE_RATE" ]; then
    ONE_RATE=$rate ONE_REF=$WORK/gpus$g.out
  else
    scaling=$(awk -v r="$rate" -v o="$ONE_RATE" -v g="$g" 'BEGIN { printf "%.2f", r / (o * g) }')
    if awk -v s="$scaling" -v m="$MIN_SCALING" 'BEGIN { exit !(s < m) }'; then
      problems="${problems:+$problems; }scaling $scaling < $MIN_SCALING of linear"
    fi
  fi
  st=$(pass_unless "$problems")
  tally "$st"
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$g" "$N" "$secs" "$rate" "$per" "$scaling" \
    "${chk[0]:-}" "${restarts:-?}" "${problems:--}" "$st" >>"$WORK/table"
  echo "  $g GPU(s): $rate evaluations/s ($per per GPU) ${chk[0]:-} $st ${problems}"
done

# The Dask path (kerncap.cluster) on a one-worker LocalCluster, when Python has it.
if python3 -c 'import distributed' 2>/dev/null; then
  run dask python3 -c '
import json, sys
from distributed import Client, LocalCluster
from kerncap.cluster import evaluate_on
from kerncap.evaluate_pool import expand_images
cap, cands, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc, Client(lc) as c:
    for r in evaluate_on(c, cap, expand_images([cands]), time_limit=limit, time=True):
        r["image"] = cands + "/" + r["image"].rsplit("/", 1)[-1]
        print(json.dumps(r), flush=True)
' "$CAP" "$C" "$LIMIT"
  mapfile -t chk < <(python3 "$HERE/evaluate_check.py" "$N" "$LIMIT" "$WORK/dask.out" "$ONE_REF")
  problems=${chk[1]:-}
  [ "$RC" = 0 ] || problems="exit $RC: $(first_error dask); $problems"
  st=$(pass_unless "$problems")
  tally "$st"
  printf '| dask (1 worker) | %s | - | - | - | - | %s | - | %s | %s |\n' "$N" "${chk[0]:-}" "${problems:--}" "$st" \
    >>"$WORK/table"
else
  printf '| dask | skipped: no dask[distributed] in python3 | | | | | | | | SKIP |\n' >>"$WORK/table"
fi

echo
cat "$WORK/table"
summary

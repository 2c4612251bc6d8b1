#!/usr/bin/env bash
# What `kerncap run --swap` costs the application (issue 35): tests/gpu/swap_apps/swap_app with
# its own kernel swapped in (an identity variant: the application's source compiled to a cubin,
# so any time difference is the mechanism's, not the kernel's), on a launch-heavy shape (many
# small launches: the per-launch callback is the whole cost) and a bandwidth-bound one.
# Side by side in one run, median of KERNCAP_BENCH_REPEAT (default 7) runs each:
#   plain      the application alone (no kerncap)
#   base arm   `kerncap run`'s unmodified arm: CUPTI kernel records + the swap callbacks counting
#   swap arm   the same with the identity variant served to every launch
# Ratios: swap/base (the swap itself: the issue's bound is 1.02) and base/plain (what measuring
# with CUPTI records costs both arms). Then --shadow's cost per checked launch at each shape.
# Exit 77 without a GPU.
#
#   bench/swap_overhead.sh BUILD_DIR
set -u -o pipefail
BUILD=${1:?usage: bench/swap_overhead.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../tests/gpu/lib.sh
. "$HERE/../tests/gpu/lib.sh"
gpu_build "$BUILD"
REPEAT=${KERNCAP_BENCH_REPEAT:-7}
gpu_work_dir swap-overhead
SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
"$NVCC" -O2 -arch=sm_"$SM" -o "$WORK/swap_app" "$HERE/../tests/gpu/swap_apps/swap_app.cu" -lcuda || exit 1
"$NVCC" -O2 -cubin -arch=sm_"$SM" -o "$WORK/identity.cubin" "$HERE/../tests/gpu/swap_apps/swap_app.cu" || exit 1
K=_Z9scale_addPfPKffi

median() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print('%.4f' % statistics.median(v) if v else '')" "$@"; }

echo "| shape | launches | plain s | base arm s | swap arm s | swap/base | base/plain | shadow ms per checked launch |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for shape in "3000 4099" "20 16777219"; do
  set -- $shape
  ITERS=$1 N=$2
  plain=()
  for _ in $(seq "$REPEAT"); do
    t0=$(date +%s.%N); "$WORK/swap_app" "$ITERS" "$N" >/dev/null || exit 1; t1=$(date +%s.%N)
    plain+=("$(python3 -c "print($t1 - $t0)")")
  done
  "$KC" run --swap "$K=$WORK/identity.cubin" --repeat "$REPEAT" --json -- "$WORK/swap_app" "$ITERS" "$N" \
    >"$WORK/run.json" 2>"$WORK/run.err" || { echo "run failed:"; tail -3 "$WORK/run.err"; exit 1; }
  base=$(json_get "$WORK/run.json" 'j["summary"]["wall_s"]["base"]["median"]')
  swap=$(json_get "$WORK/run.json" 'j["summary"]["wall_s"]["swap"]["median"]')
  ratio=$(JSON_FLOAT=.4f json_get "$WORK/run.json" 'j["summary"]["wall_s"]["ratio"]["median"]')
  lo=$(JSON_FLOAT=.4f json_get "$WORK/run.json" 'j["summary"]["wall_s"]["ratio"]["low"]')
  hi=$(JSON_FLOAT=.4f json_get "$WORK/run.json" 'j["summary"]["wall_s"]["ratio"]["high"]')
  launches=$(json_get "$WORK/run.json" 'j["runs"][1]["launches"]')
  pm=$(median "${plain[@]}")
  "$KC" run --swap "$K=$WORK/identity.cubin" --shadow --json -- "$WORK/swap_app" "$((ITERS < 50 ? ITERS : 50))" "$N" \
    >"$WORK/shadow.json" 2>/dev/null
  sh=$(JSON_FLOAT=.3f json_get "$WORK/shadow.json" 'j["summary"]["shadow_overhead_s"]*1e3')
  echo "| n=$N x $ITERS | $launches | $pm | $base | $swap | $(python3 -c "print('%.4f' % (1/$ratio))") [$(python3 -c "print('%.4f' % (1/$hi))"), $(python3 -c "print('%.4f' % (1/$lo))")] | $(python3 -c "print('%.3f' % ($base/$pm))") | ${sh:-?} |"
done

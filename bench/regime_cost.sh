#!/usr/bin/env bash
# What regimes cost (issue 34): for each application, the wall time of `kerncap extract NAME
# --regimes` against one `kerncap extract NAME` of the same application (the ratio: the
# regimes' profiled run plus one capture run holding every regime), and the wall time of
# `kerncap validate SET --cubin V` over the set against one regime's `validate --regime DIR`
# (judging time per regime, each regime in its own process). Side by side in one run; median
# of KERNCAP_BENCH_REPEAT (default 3) runs each. Exit 77 without a GPU.
#
#   bench/regime_cost.sh BUILD_DIR
#
# Cases: examples/regimes (scaleShift at 3 shapes) and tests/gpu/regimes_torch.py (the layer
# norm of a prefill then decode loop; KERNCAP_PYTHON, default python3, with torch).
set -u -o pipefail
BUILD=${1:?usage: bench/regime_cost.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../tests/gpu/lib.sh
. "$HERE/../tests/gpu/lib.sh"
gpu_build "$BUILD"
PY=${KERNCAP_PYTHON:-python3}
REPEAT=${KERNCAP_BENCH_REPEAT:-3}
gpu_work_dir regime-cost
unset KERNCAP_SERVE

# secs CMD...: wall seconds of CMD (its output in $WORK/last.log), empty when it failed.
secs() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$WORK/last.log" 2>&1 || { echo ""; return 1; }
  t1=$(date +%s.%N)
  python3 -c "print('%.2f' % ($t1 - $t0))"
}
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}'; }

printf '| case | regimes | extract s | extract --regimes s | ratio | validate set s | validate one regime s | per regime s |\n'
printf '|---|---|---|---|---|---|---|---|\n'
status=0
for c in "regimes|scaleShift|$EX/regimes|$EX/regimes.cubin" "torch|layer_norm|$PY $HERE/../tests/gpu/regimes_torch.py|"; do
  IFS='|' read -r name kernel app cubin <<<"$c"
  if [ "$name" = torch ] && ! torch_ok "$PY"; then echo "| $name | SKIPPED: no torch with CUDA in $PY |"; continue; fi
  one=() set=() val=() vone=()
  for ((i = 0; i < REPEAT; i++)); do
    # shellcheck disable=SC2086
    one+=("$(secs "$KC" extract "$kernel" -o "$WORK/$name.one.$i" -- $app)")
    # shellcheck disable=SC2086
    set+=("$(secs "$KC" extract "$kernel" --regimes -o "$WORK/$name.set.$i" -- $app)")
  done
  S=$WORK/$name.set.0
  n=$(json_get "$S/regimes.json" "len(j['regimes'])")
  first=$(json_get "$S/regimes.json" "j['regimes'][0]['dir']")
  # Footprints first (measured once per regime by the first validate): time judging only.
  "$KC" validate "$S" ${cubin:+--cubin "$cubin"} >/dev/null 2>&1
  for ((i = 0; i < REPEAT; i++)); do
    val+=("$(secs "$KC" validate "$S" ${cubin:+--cubin "$cubin"})")
    vone+=("$(secs "$KC" validate "$S" --regime "$first" ${cubin:+--cubin "$cubin"})")
  done
  E1=$(med "${one[@]}") E2=$(med "${set[@]}") V=$(med "${val[@]}") V1=$(med "${vone[@]}")
  if [ -z "$E1" ] || [ -z "$E2" ] || [ -z "$V" ]; then status=1; fi
  ratio=$(python3 -c "print('%.2f' % ($E2 / $E1))" 2>/dev/null || echo -)
  per=$(python3 -c "print('%.2f' % ($V / $n))" 2>/dev/null || echo -)
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "${n:--}" "$E1" "$E2" "$ratio" "$V" "$V1" "$per"
done
exit $status

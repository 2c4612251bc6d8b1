#!/usr/bin/env bash
# Replay fidelity: does `kerncap replay` time a kernel as long as it takes in the application?
# For each case (our examples and PyTorch kernels), captures the kernel, takes its in-app GPU
# time from the capture (the manifest's in_app_median_ns: CUPTI records of the application's
# launches of it with the captured grid; else `kerncap profile`'s median), and replays it twice: with plain events around each launch (the
# old method, launch overhead inside) and with the default timer (CUPTI kernel records, or
# events behind a spin kernel). Prints one row per kernel and how many ratios replay/in-app
# lie within ±5 %.
#
#   bench/replay_fidelity.sh BUILD_DIR
# Environment: KERNCAP_BENCH_ITERATIONS (replay -n, default 200), KERNCAP_PYTHON (python with
# torch for the PyTorch cases, default python3; they are skipped without it),
# KERNCAP_BENCH_CASES (space-separated case names to run, default all), OUT (keeps the work
# directory and logs under $OUT/fidelity).
# Exit 0 measured, 1 a case failed, 77 skipped (no GPU).
set -u -o pipefail

BUILD=${1:?usage: bench/replay_fidelity.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "SKIPPED: no GPU"
  exit 77
fi
BUILD=$(cd "$BUILD" && pwd) || exit 1
KC=$BUILD/bin/kerncap
EX=$BUILD/examples
N=${KERNCAP_BENCH_ITERATIONS:-200}
PY=${KERNCAP_PYTHON:-python3}
[ -x "$KC" ] || { echo "missing $KC (build it: cmake --build $BUILD)"; exit 1; }
if [ -n "${OUT:-}" ]; then
  WORK=$OUT/fidelity && mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-fidelity.XXXXXX") || exit 1
  trap 'rm -rf "$WORK"' EXIT
fi
TORCH=no
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1 && TORCH=yes

# name | extract pattern and flags | the application (after --)
CASES=(
  "vector_add|vectorAdd|$EX/vector_add 1000000"
  "accumulate|accumulate --dispatch 4|$EX/accumulate"
  "batched_ptrs|batchedScale|$EX/batched_ptrs"
  "struct_ptrs|stepParticles --dispatch 1|$EX/struct_ptrs"
  "globals|polyEval --dispatch 1|$EX/globals"
  "big_smem|reverseTiles|$EX/big_smem"
  "templated|transform_kernel<double|$EX/templated"
  "dispatch|iterate --dispatch 3|$EX/dispatch"
  "async_stream|smooth3 --dispatch 1|$EX/async_stream"
  "atomic_norm|sumSquares --dispatch 2|$EX/atomic_norm"
  "cub_reduce|block_sums|$EX/cub_reduce"
  "work_queue|take_tiles --dispatch 1|$EX/work_queue"
  "torch_mul|MulFunctor|torch:$ROOT/tests/gpu/torch_app.py elementwise"
  "torch_reduce|reduce_kernel|torch:$ROOT/tests/gpu/torch_app.py reduce"
  "torch_gemm_fp16|nvjet|gemm|xmma|cutlass --regex|torch:$ROOT/tests/gpu/torch_app.py gemm_fp16"
  "torch_gemm_bf16|nvjet|gemm|xmma|cutlass --regex|torch:$ROOT/tests/gpu/torch_app.py gemm_bf16"
  "torch_onesweep|Onesweep|torch:$ROOT/tests/gpu/torch_sort.py"
)

# json_get FILE EXPR: evaluates EXPR over j = the last JSON object in FILE.
json_get() {
  python3 - "$1" "$2" <<'PY' 2>/dev/null
import json, sys
text = open(sys.argv[1]).read()
j = None
for start in [i for i, c in enumerate(text) if c == "{"]:
    try:
        j = json.loads(text[start:])
        break
    except ValueError:
        continue
print(eval(sys.argv[2], {"j": j}))
PY
}

printf '| %-16s | %10s | %-7s | %10s | %10s | %-16s | %8s | %8s |\n' kernel "in-app µs" "from" "events µs" "replay µs" method "ev/app" "rep/app"
printf '|%s|\n' "------------------|------------|---------|------------|------------|------------------|----------|----------"
status=0 within=0 rated=0
for c in "${CASES[@]}"; do
  name=${c%%|*}
  rest=${c#*|}
  app=${rest##*|}
  pattern=${rest%|*}
  if [ -n "${KERNCAP_BENCH_CASES:-}" ] && [[ " $KERNCAP_BENCH_CASES " != *" $name "* ]]; then continue; fi
  case $app in
    torch:*)
      [ "$TORCH" = yes ] || { printf '| %-16s | SKIPPED: no %s with CUDA torch |\n' "$name" "$PY"; continue; }
      app="$PY ${app#torch:}" ;;
    *) [ -x "${app%% *}" ] || { printf '| %-16s | SKIPPED: %s not built |\n' "$name" "${app%% *}"; continue; } ;;
  esac
  dir=$WORK/$name
  # The pattern may hold '|' (a regex): split only the flags after it.
  flags=()
  pat=$pattern
  while [[ $pat =~ ^(.*)\ (--[a-z]+( [^ -][^ ]*)?)$ ]]; do
    pat=${BASH_REMATCH[1]}
    read -r -a more <<<"${BASH_REMATCH[2]}"
    flags=("${more[@]}" "${flags[@]}")
  done
  # shellcheck disable=SC2086
  if ! "$KC" extract "$pat" "${flags[@]}" -o "$dir" -- $app >"$WORK/$name.extract.log" 2>&1; then
    printf '| %-16s | FAILED: extract (%s) |\n' "$name" "$(grep -m1 -i error "$WORK/$name.extract.log" | cut -c1-80)"
    status=1
    continue
  fi
  mangled=$(json_get "$dir/capture/manifest.json" 'j["kernel"]["mangled"]')
  # In-app: recorded at capture (the manifest's in_app_median_ns: this kernel's launches with
  # the captured grid), else kerncap profile's median of the application's launches of it.
  app_us=$(json_get "$dir/capture/manifest.json" "'%.3f' % (j['in_app_median_ns'] / 1e3) if 'in_app_median_ns' in j else '-'")
  src=capture
  if [ "${app_us:--}" = - ]; then
    src=profile
    # shellcheck disable=SC2086
    "$KC" profile --json -- $app >"$WORK/$name.profile.log" 2>&1
    app_us=$(json_get "$WORK/$name.profile.log" \
      "next(('%.3f' % (k['median_ns'] / 1e3) for k in j['kernels'] if k['name'] == '$mangled'), '-')")
  fi
  "$KC" replay "$dir" -n "$N" --timer events --json >"$WORK/$name.events.log" 2>&1
  ev_us=$(json_get "$WORK/$name.events.log" "'%.3f' % (j['median_ms'] * 1e3)")
  "$KC" replay "$dir" -n "$N" --json >"$WORK/$name.replay.log" 2>&1
  rep_us=$(json_get "$WORK/$name.replay.log" "'%.3f' % (j['median_ms'] * 1e3)")
  method=$(json_get "$WORK/$name.replay.log" "j['method']")
  if [ -z "$ev_us" ] || [ -z "$rep_us" ]; then
    printf '| %-16s | FAILED: replay (%s) |\n' "$name" "$(grep -m1 -iE 'error|fault' "$WORK/$name.replay.log" "$WORK/$name.events.log" | cut -c1-80)"
    status=1
    continue
  fi
  ratio() { [ "${app_us:--}" = - ] && echo - || awk -v a="$1" -v b="$app_us" 'BEGIN { printf "%.3f", a / b }'; }
  ev_r=$(ratio "$ev_us")
  rep_r=$(ratio "$rep_us")
  if [ "$rep_r" != - ]; then
    rated=$((rated + 1))
    awk -v r="$rep_r" 'BEGIN { exit !(r >= 0.95 && r <= 1.05) }' && within=$((within + 1))
  fi
  printf '| %-16s | %10s | %-7s | %10s | %10s | %-16s | %8s | %8s |\n' "$name" "${app_us:--}" "$src" "$ev_us" "$rep_us" "$method" "$ev_r" "$rep_r"
done
echo "$within of $rated replay/in-app ratios within ±5 % (in-app: the capture's in_app_median_ns, else kerncap profile's median)"
exit $status

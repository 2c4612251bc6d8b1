#!/usr/bin/env bash
# Replay fidelity: does `kerncap replay` time a kernel as long as it takes in the application?
# For each case, captures the kernel at a later launch of a loop (--dispatch), takes its in-app
# time from the capture (the manifest's in_app_*: the median GPU duration of the application's
# launches of that kernel with the captured grid, block and dynamic shared memory, the cold
# first one left out, and how many launches that is over), replays it with the default timer
# (CUPTI kernel records, warm L2, the written bytes put back before each launch) and prints
# one row per kernel: in-app µs, replay µs, ratio replay/in-app, n (in-app launches). A
# kernel the application launched once has only its cold first launch: no ratio ("first").
# Ends with "N of M within ±5 %" over the rows with a ratio.
#
#   bench/replay_fidelity.sh BUILD_DIR
# Cases (45): our examples (examples/), bench/fidelity_app.cu (kernels in loops, several of
# 3-10 µs; and the memory group: saxpy over mapped host memory, registered host memory and
# 128 MiB stream-ordered pool buffers), the short group (12 kernels of 2-20 µs from PyTorch,
# cuBLAS, CUB, Triton, a CUDA graph node, CuPy's NVRTC kernels and our own), PyTorch/cuBLAS/cuDNN/CUB kernels and a Triton kernel (bench/fidelity_torch.py).
# Environment: KERNCAP_BENCH_ITERATIONS (replay -n, default 200), KERNCAP_PYTHON (python with
# torch for the PyTorch cases, default python3; they are skipped without it),
# KERNCAP_BENCH_GROUP (examples|apps|memory|torch|short|all, default all: one group fits a 10-minute slot),
# KERNCAP_BENCH_CASES (space-separated case names, default all), KERNCAP_BENCH_EVENTS=1 (also
# replay with plain events around each launch, the old method: two more columns),
# KERNCAP_BENCH_EXTRA="NAME=REPLAY FLAGS;..." (more replays of each capture, e.g.
# "cold=--cache cold;norestore=--no-restore": two columns each, to find what a ratio hangs on), OUT (keeps
# the work directory and logs under $OUT/fidelity).
# Exit 0 measured, 1 a case failed, 77 skipped (no GPU).
set -u -o pipefail

BUILD=${1:?usage: bench/replay_fidelity.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../tests/gpu/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/gpu/lib.sh"
gpu_build "$BUILD"
APP=$BUILD/bench/fidelity_app
N=${KERNCAP_BENCH_ITERATIONS:-200}
PY=${KERNCAP_PYTHON:-python3}
GROUP=${KERNCAP_BENCH_GROUP:-all}
EVENTS=${KERNCAP_BENCH_EVENTS:-0}
[ -x "$KC" ] || { echo "missing $KC (build it: cmake --build $BUILD)"; exit 1; }
if [ -n "${OUT:-}" ]; then
  WORK=$OUT/fidelity && mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-fidelity.XXXXXX") || exit 1
  trap 'rm -rf "$WORK"' EXIT
fi
TORCH=no
torch_ok && TORCH=yes
FT="torch:$HERE/fidelity_torch.py"

# group | name | extract pattern and flags | the application (after --)
# Loops launch 20 times; --dispatch 10 takes the 11th launch, so the in-app median is over
# the 10 launches after the first.
CASES=(
  "examples|vector_add|vectorAdd --dispatch 10|$EX/vector_add 1000000 --repeat 20"
  "examples|accumulate|accumulate --dispatch 4|$EX/accumulate"
  "examples|batched_ptrs|batchedScale|$EX/batched_ptrs"
  "examples|struct_ptrs|stepParticles --dispatch 1|$EX/struct_ptrs"
  "examples|globals|polyEval --dispatch 1|$EX/globals"
  "examples|big_smem|reverseTiles|$EX/big_smem"
  "examples|templated|transform_kernel<double|$EX/templated"
  "examples|dispatch|iterate --dispatch 3|$EX/dispatch"
  "examples|async_stream|smooth3 --dispatch 1|$EX/async_stream"
  "examples|atomic_norm|sumSquares --dispatch 2|$EX/atomic_norm"
  "examples|cub_reduce|block_sums|$EX/cub_reduce"
  "examples|work_queue|take_tiles --dispatch 1|$EX/work_queue"
  "apps|tiny|tiny --dispatch 10|$APP tiny"
  "apps|saxpy_4MB|saxpy --dispatch 10|$APP saxpy"
  "apps|saxpy_256MB|saxpy --dispatch 10|$APP saxpy_big"
  "apps|stencil5|stencil5 --dispatch 10|$APP stencil"
  "apps|transpose|transpose --dispatch 10|$APP transpose"
  "apps|histogram|histogram --dispatch 10|$APP histogram"
  "apps|rowsum|rowsum --dispatch 10|$APP rowsum"
  "apps|matmul|matmul --dispatch 10|$APP matmul"
  "memory|zero_copy|saxpy --dispatch 10|$APP zero_copy"
  "memory|host_registered|saxpy --dispatch 10|$APP host_registered"
  "memory|pool_big|saxpy --dispatch 10|$APP pool_big"
  "torch|torch_add_small|CUDAFunctor_add --dispatch 10|$FT add_small"
  "torch|torch_mul_large|MulFunctor --dispatch 10|$FT mul_large"
  "torch|torch_sum_rows|reduce_kernel --dispatch 10|$FT sum_rows"
  "torch|torch_softmax|SoftMax|softmax --regex --dispatch 10|$FT softmax"
  "torch|torch_layer_norm|layer_norm --dispatch 10|$FT layer_norm"
  "torch|torch_gemm_fp16|nvjet|gemm|xmma|cutlass --regex --dispatch 10|$FT gemm_fp16"
  "torch|torch_gemm_bf16|nvjet|gemm|xmma|cutlass --regex --dispatch 10|$FT gemm_bf16"
  "torch|torch_conv2d|fprop|implicit|convolve|conv2d --regex --dispatch 10|$FT conv2d"
  "torch|torch_onesweep|Onesweep --dispatch 10|$FT sort"
  "torch|triton_add|add_kernel --dispatch 10|$FT triton_add"
  "short|add_small|CUDAFunctor_add --dispatch 10|$FT add_small"
  "short|ln_gpt2|layer_norm --dispatch 10|$FT ln_gpt2"
  "short|softmax_small|SoftMax|softmax --regex --dispatch 10|$FT softmax_small"
  "short|sum_small|reduce_kernel --dispatch 10|$FT sum_small"
  "short|gemm_small|nvjet|gemm|xmma|cutlass --regex --dispatch 10|$FT gemm_small"
  "short|sort_small|Onesweep --dispatch 10|$FT sort_small"
  "short|triton_small|add_kernel --dispatch 10|$FT triton_small"
  "short|graph_add|CUDAFunctor_add --dispatch 10|$FT graph_add"
  "short|cupy_raw|cupy_saxpy --dispatch 10|$FT cupy_raw"
  "short|cupy_elementwise|cupy_fma --dispatch 10|$FT cupy_elementwise"
  "short|tiny|tiny --dispatch 10|$APP tiny"
  "short|stencil5|stencil5 --dispatch 10|$APP stencil"
)

# json_get FILE EXPR (lib.sh): EXPR over j = the JSON object in FILE (the replay's --json output).
# Extra replays, one pair of columns each (µs and ratio to in-app): NAME=FLAGS, ';'-separated.
EXTRA=${KERNCAP_BENCH_EXTRA:-}
[ "$EVENTS" = 1 ] && EXTRA="events=--timer events${EXTRA:+;$EXTRA}"
IFS=';' read -r -a EXTRAS <<<"$EXTRA"
hdr=$(printf '| %-16s | %10s | %6s | %10s | %8s | %8s' kernel "in-app µs" n "replay µs" "stddev" ratio)
sep="|------------------|------------|--------|------------|----------|----------"
for x in "${EXTRAS[@]}"; do
  hdr+=$(printf ' | %10s | %8s' "${x%%=*} µs" "${x%%=*}/app")
  sep+="|------------|----------"
done
printf '%s | %-16s | %s\n' "$hdr" method note
printf '%s|------------------|------|\n' "$sep"
status=0 within=0 rated=0 replayed=0
for c in "${CASES[@]}"; do
  group=${c%%|*}
  c=${c#*|}
  name=${c%%|*}
  rest=${c#*|}
  app=${rest##*|}
  pattern=${rest%|*}
  if [ "$GROUP" != all ] && [ "$GROUP" != "$group" ]; then continue; fi
  if [ -n "${KERNCAP_BENCH_CASES:-}" ] && [[ " $KERNCAP_BENCH_CASES " != *" $name "* ]]; then continue; fi
  case $app in
    torch:*)
      [ "$TORCH" = yes ] || { printf '| %-16s | SKIPPED: no %s with CUDA torch |\n' "$name" "$PY"; continue; }
      app="$PY ${app#torch:}" ;;
    *) [ -x "${app%% *}" ] || { printf '| %-16s | SKIPPED: %s not built |\n' "$name" "${app%% *}"; continue; } ;;
  esac
  dir=$WORK/$name
  rm -rf "$dir"
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
  "$KC" replay "$dir" -n "$N" --json >"$WORK/$name.replay.log" 2>&1
  rep_us=$(json_get "$WORK/$name.replay.log" "'%.3f' % (j['median_ms'] * 1e3)")
  if [ -z "$rep_us" ]; then
    printf '| %-16s | FAILED: replay (%s) |\n' "$name" "$(grep -m1 -iE 'error|fault' "$WORK/$name.replay.log" | cut -c1-80)"
    status=1
    continue
  fi
  replayed=$((replayed + 1))
  app_us=$(json_get "$WORK/$name.replay.log" "'%.3f' % (j['in_app_median_ms'] * 1e3) if j.get('in_app_median_ms') is not None else '-'")
  n=$(json_get "$WORK/$name.replay.log" "j.get('in_app_samples') if j.get('in_app_samples') is not None else '-'")
  launches=$(json_get "$WORK/$name.replay.log" "j.get('in_app_launches') or 0")
  rep_r=$(json_get "$WORK/$name.replay.log" "'%.3f' % j['replay_in_app_ratio'] if j.get('replay_in_app_ratio') is not None else '-'")
  method=$(json_get "$WORK/$name.replay.log" "j['method']")
  note=""
  if [ "${app_us:--}" = - ]; then note="no in-app time in the capture"
  elif [ "$launches" = 1 ]; then note="first: launched once with this shape, no ratio"
  elif [ "$n" = 1 ]; then note="one in-app sample"
  fi
  if [ "${rep_r:--}" != - ]; then
    rated=$((rated + 1))
    awk -v r="$rep_r" 'BEGIN { exit !(r >= 0.95 && r <= 1.05) }' && within=$((within + 1))
  fi
  sd_us=$(json_get "$WORK/$name.replay.log" "'%.3f' % (j['stddev_ms'] * 1e3) if j.get('stddev_ms') is not None else '-'")
  row=$(printf '| %-16s | %10s | %6s | %10s | %8s | %8s' "$name" "${app_us:--}" "${n:--}" "$rep_us" "${sd_us:--}" "${rep_r:--}")
  k=0
  for x in "${EXTRAS[@]}"; do
    k=$((k + 1))
    read -r -a xflags <<<"${x#*=}"
    "$KC" replay "$dir" -n "$N" "${xflags[@]}" --json >"$WORK/$name.extra$k.log" 2>&1
    x_us=$(json_get "$WORK/$name.extra$k.log" "'%.3f' % (j['median_ms'] * 1e3)")
    x_r=$( { [ "${app_us:--}" = - ] || [ -z "$x_us" ]; } && echo - || awk -v a="$x_us" -v b="$app_us" 'BEGIN { printf "%.3f", a / b }')
    row+=$(printf ' | %10s | %8s' "${x_us:--}" "$x_r")
  done
  printf '%s | %-16s | %s\n' "$row" "$method" "$note"
done
echo "$within of $rated within ±5 % (replay median / in-app median; $replayed kernels replayed, $((replayed - rated)) without a ratio)"
exit $status

#!/usr/bin/env bash
# Replay fidelity: does `kerncap replay` time a kernel as long as it takes in the application?
# For each case, captures the kernel at a later launch of a loop (--dispatch), takes its in-app
# time from the capture (the manifest's in_app_*: the median GPU duration of the application's
# launches of that kernel with the captured grid, block and dynamic shared memory, the cold
# first one and the captured one left out, and how many launches that is over), replays it with
# the default timer (CUPTI kernel records, --cache auto, the written bytes put back before each
# launch) and prints one row per kernel: in-app µs, n (in-app launches), replay µs, its stddev,
# ratio replay/in-app. A kernel the application launched once has only its cold first launch: no
# ratio ("first"). Ends with "N of M within ±5 %" over the rows with a ratio (and the zero_copy
# row's ratio against ±10 %, when it ran).
#
#   bench/replay_fidelity.sh BUILD_DIR
# Groups (KERNCAP_BENCH_GROUP):
#   examples  our examples (examples/)
#   apps      bench/fidelity_app.cu: kernels in loops, several of 3-10 µs
#   memory    saxpy over mapped host memory, registered host memory and 128 MiB stream-ordered
#             pool buffers
#   torch     PyTorch/cuBLAS/cuDNN/CUB kernels and a Triton kernel (bench/fidelity_torch.py)
#   short     14 kernels, 12 of them 1-9 µs on an H200, each in a loop of its own op: PyTorch
#             elementwise, layer norm, softmax and reduction, cuBLAS GEMM, CUB onesweep, Triton, a
#             CUDA graph node, CuPy's NVRTC kernels (RawKernel, ElementwiseKernel), our own; plus
#             the zero-copy saxpy and the 128 MiB pool saxpy (issue 33's acceptance group)
#   context   short kernels between other work, as real programs launch them: layer norm and
#             cuBLAS GEMM in a 12-layer GPT-2 MLP (226 MB of weights), onesweep, a graph node, a
#             CuPy and a cuda-python NVRTC (PTX, JIT) kernel each between 256 MiB writes, a 128 MiB
#             add whose output comes from the pool anew every iteration
#   all       every group (default; one group fits a 10-minute slot, all does not)
# Environment: KERNCAP_BENCH_ITERATIONS (replay -n, default 200), KERNCAP_PYTHON (python with
# torch for the PyTorch cases, default python3; they are skipped without it; CuPy and
# cuda-python cases need those), KERNCAP_BENCH_CASES (space-separated case names, default all),
# KERNCAP_BENCH_EVENTS=1 (also replay with plain events around each launch, the old method: two
# more columns), KERNCAP_BENCH_EXTRA="NAME=REPLAY FLAGS;..." (more replays of each capture, e.g.
# "warm=--cache warm;cold=--cache cold;norestore=--no-restore": two columns each, to find what a
# ratio hangs on; leading VAR=value words are the replay's environment), KERNCAP_BENCH_DIAG=1
# (extract -v, and a second table: the capture log's in-app spread, GPU idle time and other
# kernels' time before the launches, the replay's spread and SM clock), OUT (keeps the work
# directory and logs under $OUT/fidelity).
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
# the 9 launches between the first and the captured one.
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
  "short|zero_copy|saxpy --dispatch 10|$APP zero_copy"
  "short|pool_big|saxpy --dispatch 10|$APP pool_big"
  "context|gpt2_ln|layer_norm --dispatch 10|$FT gpt2_mlp"
  "context|gpt2_gemm|nvjet|gemm|xmma|cutlass --regex --dispatch 10|$FT gpt2_mlp"
  "context|sort_mix|Onesweep --dispatch 10|$FT sort_mix"
  "context|graph_mix|CUDAFunctor_add --dispatch 10|$FT graph_mix"
  "context|cupy_mix|cupy_saxpy --dispatch 10|$FT cupy_mix"
  "context|nvrtc_ptx|nvrtc_saxpy --dispatch 10|$FT nvrtc_ptx"
  "context|pool_churn|vadd --dispatch 10|$APP pool_churn"
)

# json_get FILE EXPR (lib.sh): EXPR over j = the JSON object in FILE (the replay's --json output).
# Extra replays, one pair of columns each (µs and ratio to in-app): NAME=FLAGS, ';'-separated.
EXTRA=${KERNCAP_BENCH_EXTRA:-}
[ "$EVENTS" = 1 ] && EXTRA="events=--timer events${EXTRA:+;$EXTRA}"
IFS=';' read -r -a EXTRAS <<<"$EXTRA"
DIAG=${KERNCAP_BENCH_DIAG:-0}
VERBOSE=()
[ "$DIAG" = 1 ] && VERBOSE=(-v)
diag_rows=()
hdr=$(printf '| %-16s | %10s | %6s | %10s | %8s | %8s' kernel "in-app µs" n "replay µs" "stddev" ratio)
sep="|------------------|------------|--------|------------|----------|----------"
for x in "${EXTRAS[@]}"; do
  hdr+=$(printf ' | %10s | %8s' "${x%%=*} µs" "${x%%=*}/app")
  sep+="|------------|----------"
done
printf '%s | %-16s | %s\n' "$hdr" method note
printf '%s|------------------|------|\n' "$sep"
status=0 within=0 rated=0 replayed=0 zero_copy_ratio=
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
  if ! "$KC" extract "${VERBOSE[@]}" "$pat" "${flags[@]}" -o "$dir" -- $app >"$WORK/$name.extract.log" 2>&1; then
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
  [ "$name" = zero_copy ] && zero_copy_ratio=$rep_r
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
    # Leading VAR=value words are the replay's environment (diagnostic switches).
    xenv=()
    while [ ${#xflags[@]} -gt 0 ] && [[ ${xflags[0]} =~ ^[A-Z_][A-Z0-9_]*= ]]; do
      xenv+=("${xflags[0]}")
      xflags=("${xflags[@]:1}")
    done
    env "${xenv[@]}" "$KC" replay "$dir" -n "$N" "${xflags[@]}" --json >"$WORK/$name.extra$k.log" 2>&1
    x_us=$(json_get "$WORK/$name.extra$k.log" "'%.3f' % (j['median_ms'] * 1e3)")
    x_r=$( { [ "${app_us:--}" = - ] || [ -z "$x_us" ]; } && echo - || awk -v a="$x_us" -v b="$app_us" 'BEGIN { printf "%.3f", a / b }')
    row+=$(printf ' | %10s | %8s' "${x_us:--}" "$x_r")
  done
  printf '%s | %-16s | %s\n' "$row" "$method" "$note"
  if [ "$DIAG" = 1 ]; then
    inapp=$(grep -m1 -o 'in-app time: .*' "$WORK/$name.extract.log" | cut -c15-)
    clk=$(json_get "$WORK/$name.replay.log" "'%s/%s MHz' % (j['clock'].get('sm_mhz_before', '?'), j['clock'].get('sm_mhz_after', '?'))")
    spread=$(json_get "$WORK/$name.replay.log" "'min %.2f max %.2f, cache %s' % (j['min_ms'] * 1e3, j['max_ms'] * 1e3, j['cache'])")
    diag_rows+=("$(printf '| %-16s | %s | %s | %s |' "$name" "${inapp:--}" "${spread:--}" "${clk:--}")")
  fi
done
if [ "$DIAG" = 1 ]; then
  echo
  printf '| %-16s | %s | %s | %s |\n' kernel "in-app (capture log)" "replay µs" "SM clock before/after"
  printf '|------------------|---|---|---|\n'
  printf '%s\n' "${diag_rows[@]}"
fi
echo "$within of $rated within ±5 % (replay median / in-app median; $replayed kernels replayed, $((replayed - rated)) without a ratio)"
if [ -n "$zero_copy_ratio" ] && [ "$zero_copy_ratio" != - ]; then
  awk -v r="$zero_copy_ratio" 'BEGIN { exit !(r >= 0.9 && r <= 1.1) }' && w=yes || w=no
  echo "zero_copy: ratio $zero_copy_ratio (within ±10 %: $w)"
fi
exit $status

#!/usr/bin/env bash
# GPU suite for strong validation: on captures of our examples and of PyTorch/cuBLAS kernels,
# many of them taken at a late iteration of a loop that rewrites identical bytes, a launch
# that does nothing and a launch that skips the last block must FAIL, while the captured image
# PASSes strongly. Also: float atomics in a public kernel (PyTorch index_add_) pass as
# nondeterministic within the fp32 tolerance, with the error printed.
#
# PyTorch cases include a small Llama-architecture model of Hugging Face transformers
# (hf_llama.py: attention, embedding, GEMM kernels as a model launches them).
# Per case: extract, `kerncap footprint`, then validate
#   captured   the captured image                             expect PASS strong
#   weak noop  a no-op variant, without the footprint          shown only (PASS = weak proves nothing)
#   noop       the same no-op variant, strong                  expect FAIL
#   grid-1     the captured image launched with one block less expect FAIL
# The no-op variant is generated from the capture (tests/gpu/noop_variant.py: same name and
# parameter layout, empty body) and assembled with ptxas; a captured layout with gaps no PTX
# signature reproduces (cuDNN's runtime-generated SDPA kernel) has none: "n/a", not a failure.
# Prints one table row per case and "N passed, N failed". Exit 0 all passed, 1 some failed,
# 77 skipped (no GPU).
#
#   tests/gpu/strong_e2e.sh BUILD_DIR
#
# Environment: OUT (work files under it), KERNCAP_GPU_CASES (names to run), TORCH_PY
# (python with CUDA torch, default python3), KERNCAP_GPU_TIMEOUT (per command, default 180 s).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/strong_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${TORCH_PY:-python3}
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-180}
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
[ -x "$KC" ] || { echo "missing $KC"; exit 1; }
[ -x "$PTXAS" ] || { echo "missing ptxas (CUDA toolkit)"; exit 1; }
gpu_work_dir strong
LOG=$WORK/log.txt LOG_TAIL=6  # run (lib.sh): each command and the last 6 lines of its output there
echo "strong validation suite: work in $WORK"

# extract_case NAME PATTERN [extract flags] -- APP ARGS: the case's directory D and its capture
# $D/cap (its `kerncap info --json` in $D/info.json); false, with a FAIL row, when extract fails.
extract_case() {
  local name=$1 pattern=$2
  shift 2
  D=$WORK/$name
  mkdir -p "$D"
  if ! run extract "$KC" extract "$pattern" -o "$D/cap" "$@"; then
    row "$name | extract failed: $(first_error extract) | | | | | | FAIL"
    tally FAIL
    return 1
  fi
  "$KC" info --json "$D/cap" >"$D/info.json" 2>>"$LOG"
  return 0
}

# strong_case NAME PATTERN [extract flags] -- APP ARGS
strong_case() {
  want "$1" && extract_case "$@" || return
  local name=$1 cap=$D/cap problems="" wrote rc g weak noop tail captured esc
  wrote=$(info 'sum(r["size"] for r in m["after"]["runs"])')
  local kname
  kname=$(info 'm["kernel"]["demangled"][:48]')
  run footprint "$KC" footprint "$cap" || problems+="footprint: $(first_error footprint); "
  esc=$(grep -ho 'escape_count": *[0-9]*' "$cap/capture/footprint.json" 2>/dev/null | grep -o '[0-9]*$')
  [ "${esc:-0}" = 0 ] || problems+="$esc escaped accesses; "

  run captured "$KC" validate "$cap"
  rc=$?
  captured=$(result_of captured)
  if [ $rc -ne 0 ] || [[ $captured != *strong* ]]; then problems+="captured image: rc $rc ${captured:-$(first_error captured)}; "; fi

  "$KC" info --json "$cap" | "$PY" "$HERE/noop_variant.py" >"$D/noop.ptx" 2>"$D/noop.err"
  rc=$?
  if [ $rc -eq 3 ]; then
    # The captured parameter layout has gaps (cuDNN's runtime-generated SDPA kernel): no PTX
    # signature reproduces it, so there is no no-op variant; the captured image's strong PASS
    # and the short grid's FAIL remain.
    weak="n/a (layout gaps)" noop="n/a (layout gaps)"
    cat "$D/noop.err" >>"$LOG"
  else
    [ $rc -eq 0 ] && "$PTXAS" -arch="$(info '"sm_{}{}".format(*m["device"]["cc"])')" "$D/noop.ptx" -o "$D/noop.cubin" 2>>"$D/noop.err" ||
      problems+="could not build the no-op variant: $(grep -m1 -i 'error\|noop_variant' "$D/noop.err" | cut -c1-160); "
    cat "$D/noop.err" >>"$LOG"
    run weak "$KC" validate "$cap" --cubin "$D/noop.cubin" --footprint never
    weak=$(result_word weak)
    run noop "$KC" validate "$cap" --cubin "$D/noop.cubin"
    rc=$?
    noop=$(result_word noop)
    [ $rc -eq 1 ] && [ "$noop" = FAIL ] || problems+="no-op variant: rc $rc ${noop:-$(first_error noop)}; "
  fi

  # One block less along the first dimension that has more than one (one cluster less for
  # cluster launches: the grid must stay a multiple of the cluster).
  g=$(info "(lambda g, c: next((','.join(str(v - c[i] if j == i else v) for j, v in enumerate(g))
                              for i in range(3) if g[i] > c[i]), ''))(m['launch']['grid'],
                              [max(1, int(x)) for x in (m['launch'].get('cluster') or [1, 1, 1])])")
  if [ -z "$g" ]; then
    tail="n/a (one block)"
  else
    run tail "$KC" validate "$cap" --grid "$g"
    rc=$?
    tail=$(result_word tail)
    [ $rc -eq 1 ] && [ "$tail" = FAIL ] || problems+="grid $g: rc $rc ${tail:-$(first_error tail)}; "
    tail="$tail (grid $g)"
  fi
  case_row "$name" "$problems" "$kname | $wrote | ${captured:8:60} | $weak | $noop | $tail"
}

# atomic_case NAME PATTERN [extract flags] -- APP ARGS: a kernel with float atomics must PASS
# as nondeterministic within tolerance (or byte-exact when the replays happened to agree).
atomic_case() {
  want "$1" && extract_case "$@" || return
  local name=$1 cap=$D/cap rc res status
  run footprint "$KC" footprint "$cap"
  run validate "$KC" validate "$cap"
  rc=$?
  res=$(result_of validate)
  if [ $rc -eq 0 ] && [[ $res == *nondeterministic* ]]; then status=PASS
  elif [ $rc -eq 0 ]; then status="PASS (the two replays agreed this time)"
  else status="FAIL: rc $rc ${res:-$(first_error validate)}"; fi
  tally "$status"
  row "$name | $(info 'm["kernel"]["demangled"][:48]') | $(info 'sum(r["size"] for r in m["after"]["runs"])') | ${res:8:110} | | | | $status"
}

# Our examples (late dispatches where the application loops).
strong_case vector_add_d2 vectorAdd --dispatch 2 -- "$EX/vector_add" 1000000 --repeat 4
strong_case accumulate_d4 accumulate --dispatch 4 -- "$EX/accumulate"
strong_case batched_ptrs batchedScale -- "$EX/batched_ptrs"
strong_case struct_ptrs stepParticles --dispatch 1 -- "$EX/struct_ptrs"
strong_case globals polyEval --dispatch 1 -- "$EX/globals"
strong_case big_smem reverseTiles -- "$EX/big_smem"
strong_case templated 'transform_kernel<double' -- "$EX/templated"
strong_case dispatch_d3 iterate --dispatch 3 -- "$EX/dispatch"
strong_case async_stream smooth3 --dispatch 1 -- "$EX/async_stream"
strong_case managed refine --dispatch 1 -- "$EX/managed"
strong_case driver_extra saxpyExtra -- "$EX/driver_extra"
# PyTorch, cuBLAS: the fourth iteration of a loop on the same inputs (identical rewrites).
if torch_ok; then
  strong_case torch_softmax_d3 'softmax' --regex --dispatch 3 -- "$PY" "$HERE/torch_loop.py" softmax 5
  strong_case torch_layer_norm_d3 'layer_norm' --regex --dispatch 3 -- "$PY" "$HERE/torch_loop.py" layer_norm 5
  strong_case torch_mul_d3 'MulFunctor' --dispatch 3 -- "$PY" "$HERE/torch_loop.py" mul 5
  strong_case torch_sum_d3 'reduce_kernel' --dispatch 3 -- "$PY" "$HERE/torch_loop.py" sum 5
  strong_case torch_gemm_d3 'nvjet|gemm|xmma|cutlass' --regex --dispatch 3 -- "$PY" "$HERE/torch_loop.py" gemm 5
  atomic_case torch_index_add_d3 'index' --regex --dispatch 3 -- "$PY" "$HERE/torch_loop.py" index_add 5
  # A transformers model (tests/gpu/hf_llama.py): the kernels of its second layer, or of a
  # later forward pass, on the same tokens. PyTorch 2.11's SDPA in bf16 on the H100 runs
  # cuDNN's attention (cudnn_generated_fort_native_sdpa_sm90_flash_fprop_...); its embedding
  # is a gather (vectorized_gather_kernel); older versions use flash_fwd/fmha and indexSelect.
  if "$PY" -c 'import transformers' 2>/dev/null; then
    strong_case hf_llama_attention 'sdpa|flash|fmha|attention' --regex --dispatch 3 -- "$PY" "$HERE/hf_llama.py" 3
    strong_case hf_llama_embedding 'gather|indexSelect|embedding' --regex --dispatch 1 -- "$PY" "$HERE/hf_llama.py" 3
    strong_case hf_llama_gemm 'nvjet|gemm|xmma|cutlass' --regex --dispatch 9 -- "$PY" "$HERE/hf_llama.py" 3
  else
    row "hf_llama cases | skipped: no transformers for $PY | | | | | | SKIP"
  fi
else
  row "torch cases | skipped: no $PY with CUDA torch | | | | | | SKIP"
fi
atomic_case atomic_norm_d2 sumSquares --dispatch 2 -- "$EX/atomic_norm"

{
  table "case | kernel | launch wrote (B) | captured image | weak no-op | strong no-op | one block less | verdict"
  echo
  summary
} | tee -a "$LOG"
[ "$failed" -eq 0 ]

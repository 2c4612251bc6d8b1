#!/usr/bin/env bash
# Strong validation on public programs no one here wrote (issue 33, done-when bullet 2): the
# patterns of items 1 and 4 in programs built outside the repository (never committed; their
# paths come from the environment, a row whose variables are unset is SKIPPED). Item 5 (CUTLASS
# example 57) is tests/gpu/ptrarray_e2e.sh's CUTLASS_EX57 row.
#
#   row        item  what the kernel does                                   env: program, tail cubin
#   surface    4     writes only through a surface object into a CUDA array  SURFACE_WRITE_APP, SURFACE_WRITE_TAIL
#                    (cuda-samples simpleSurfaceWrite: surfaceWriteKernel)
#   static     1     a file-static kernel built with -rdc (device name       JACOBI_GRAPHS_APP, JACOBI_GRAPHS_TAIL
#                    __nv_static_..._ZL12JacobiMethod...), launched from a
#                    CUDA graph, double atomicAdd into shared memory and into
#                    a global sum (cuda-samples jacobiCudaGraphs)
#   externc    1     an extern "C" cooperative kernel (no signature types)   CG_MULTIBLOCK_APP, CG_MULTIBLOCK_TAIL
#                    with a grid-wide double reduction by atomicAdd
#                    (cuda-samples conjugateGradientMultiBlockCG)
#   cupy       1     an extern "C" NVRTC kernel of CuPy, double atomicAdd    CUPY_SCATTER_APP, CUPY_SCATTER_TAIL
#                    (cupyx.scatter_add), when given
#
# The program variable holds a command line (split on blanks); it runs in the directory of its
# first word when that is a path (cuda-samples look for data/ there). The tail variable names a
# cubin of the kernel built from a copy of its source whose last block or last elements skip
# their stores. Per row: extract the launch (ROW_DISPATCH, default per row), `kerncap footprint`
# (its probing lines shown), validate the captured image (must PASS, strength strong), validate
# the tail variant (must FAIL). Exit 0 all passed, 1 some failed, 77 no GPU.
#
#   tests/gpu/public_fidelity_e2e.sh BUILD_DIR
#
# Environment: the variables above, KERNCAP_GPU_CASES (row names), KERNCAP_GPU_TIMEOUT (per
# command, default 300 s), OUT (work files under it).
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/public_fidelity_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
unset KERNCAP_SERVE
gpu_work_dir public-fidelity
# shellcheck disable=SC2034  # LOG, LOG_TAIL: read by lib.sh's run
LOG=$WORK/log.txt LOG_TAIL=8
echo "public fidelity suite: work in $WORK"

# public_row NAME ITEM KERNEL DISPATCH APP_VAR TAIL_VAR: see the header.
public_row() {
  local name=$1 item=$2 kernel=$3 dispatch=$4 app_var=$5 tail_var=$6
  want "$name" || return
  local app=${!app_var:-} variant=${!tail_var:-}
  if [ -z "$app" ] || [ -z "$variant" ]; then
    verdict "$name" SKIP "item $item: set $app_var and $tail_var"
    return
  fi
  local -a cmd
  read -r -a cmd <<<"$app"
  local dir=$PWD
  [[ ${cmd[0]} == */* ]] && dir=$(cd "$(dirname "${cmd[0]}")" && pwd)
  D=$WORK/$name
  mkdir -p "$D"
  local C=$D/cap line strength probed tline
  if ! run extract env -C "$dir" "$KC" extract "$kernel" --dispatch "$dispatch" -o "$C" -- "${cmd[@]}"; then
    verdict "${name}_captured" FAIL "item $item, $kernel: extract rc=$RC: $(first_error extract)"
    return
  fi
  echo "  [$name] kernel: $(manifest_get "$C" 'm["kernel"]["mangled"]')"
  run footprint "$KC" footprint "$C"
  [ "$RC" = 0 ] || echo "  [$name] footprint rc=$RC: $(first_error footprint)"
  grep -h 'footprint:' "$D/footprint.err" | grep -E 'prob|surface|written' | sed "s/^/  [$name] /" | cut -c1-240
  run captured "$KC" validate "$C" --json
  line=$(json_get "$STEP_OUT" "j['line']")
  strength=$(json_get "$STEP_OUT" "j['strength']")
  probed=$(json_get "$STEP_OUT" "j.get('probed_poisoned_bytes', 0)")
  verdict "${name}_captured" "$(pass_if "$([ "$RC" = 0 ] && [[ $line == "Result: PASS"* ]] && [ "$strength" = strong ] && echo 1)")" \
    "item $item, $kernel: ${line:-rc=$RC $(first_error captured)} [strength $strength, probed_poisoned_bytes ${probed:-?}]"
  run tail "$KC" validate "$C" --cubin "$variant" --json
  tline=$(json_get "$STEP_OUT" "j['line']")
  verdict "${name}_tail" "$(pass_if "$([ "$RC" = 1 ] && [[ $tline == "Result: FAIL"* ]] && echo 1)")" \
    "$(basename "$variant"): ${tline:-rc=$RC $(first_error tail)}"
}

public_row surface 4 surfaceWriteKernel "${SURFACE_DISPATCH:-0}" SURFACE_WRITE_APP SURFACE_WRITE_TAIL
public_row static 1 JacobiMethod "${STATIC_DISPATCH:-3}" JACOBI_GRAPHS_APP JACOBI_GRAPHS_TAIL
public_row externc 1 gpuConjugateGradient "${EXTERNC_DISPATCH:-0}" CG_MULTIBLOCK_APP CG_MULTIBLOCK_TAIL
public_row cupy 1 cupy_scatter_add "${CUPY_DISPATCH:-1}" CUPY_SCATTER_APP CUPY_SCATTER_TAIL

summary -s | tee -a "$LOG"
[ "$failed" = 0 ]

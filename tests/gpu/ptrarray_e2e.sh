#!/usr/bin/env bash
# GPU suite for strong validation through device arrays of pointers and tensor maps in device
# memory (issue 33 item 5). Programs built here from tests/gpu/ptrarray_apps (sm_90a):
#   bulk_groups  grouped outputs through a device array of pointers, stored with bulk copies
#                (cp.async.bulk); the parameters point only at the pointer arrays
#   tma_store    a TMA tile store whose CUtensorMap, encoded on the host, lies in device memory
#   patched_map  tensor maps patched on the device (tensormap.replace) from a device array of
#                pointers into a workspace, as CUTLASS's pointer-array grouped GEMM does
# The sanitizer sees none of these stores; probing finds the outputs from the pointers in
# device memory. Per case: extract a later launch (the application rewrites identical bytes, so
# a replay that skips its writes passes weakly), `kerncap footprint`, then validate:
#   captured   the captured image                    expect PASS strong, the outputs' bytes
#                                                    poisoned and named as proven by probing
#   weak       the tail-skipping variant, --footprint never   shown only (weak proves nothing)
#   tail       the variant skipping the last group or tile    expect FAIL
# With CUTLASS_EX57 (a build of CUTLASS's examples/57_hopper_grouped_gemm) and CUTLASS_EX57_SKIP
# (a cubin of it whose group scheduler skips the last group), also its cooperative kernel, and
# its captured image on half the grid (shown only: a persistent kernel's tiles need not follow
# the grid; on an H200 it FAILed too).
# Exit 0 all passed, 1 some failed, 77 skipped (no GPU, or not sm_90).
#
#   tests/gpu/ptrarray_e2e.sh BUILD_DIR
set -u -o pipefail
# shellcheck disable=SC2034  # LOG, LOG_TAIL: read by lib.sh's run

BUILD=${1:?usage: tests/gpu/ptrarray_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
unset KERNCAP_SERVE
SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
if [ "$SM" != 90 ]; then
  echo "SKIPPED: the programs use sm_90a instructions (TMA stores); this GPU is sm_$SM"
  exit 77
fi
gpu_work_dir ptrarray
LOG=$WORK/log.txt LOG_TAIL=8
# shellcheck disable=SC2054  # -gencode's value has commas
GEN=(-gencode arch=compute_90a,code=sm_90a -O2 -std=c++17)
echo "ptrarray suite: work in $WORK"

# probe_case NAME KERNEL OUT_BYTES TAIL_GRID VARIANT_CUBIN -- APP ARGS: captured image strong with
# at least OUT_BYTES poisoned in regions probing proved; the variant (a cubin, or the captured
# image on TAIL_GRID when VARIANT_CUBIN is -) FAILs.
probe_case() {
  local name=$1 kernel=$2 out_bytes=$3 grid=$4 variant=$5
  shift 6
  D=$WORK/$name
  mkdir -p "$D"
  local C=$D/cap vflags line strength probed rc
  if ! run extract "$KC" extract "$kernel" --regex --dispatch 1 -o "$C" -- "$@"; then
    verdict "${name}_captured" FAIL "extract: $(first_error extract)"
    return
  fi
  run footprint "$KC" footprint "$C"
  grep -h 'footprint:' "$D/footprint.err" | sed "s/^/  [$name] /" | cut -c1-220
  sed -n '1,12p' "$D/footprint.out" | sed "s/^/  [$name] /"
  run captured "$KC" validate "$C" --json
  line=$(json_get "$STEP_OUT" "j['line']")
  strength=$(json_get "$STEP_OUT" "j['strength']")
  probed=$(json_get "$STEP_OUT" "j.get('probed_poisoned_bytes', 0)")
  verdict "${name}_captured" "$(pass_if "$([ "$RC" = 0 ] && [ "$strength" = strong ] && [ "${probed:-0}" -ge "$out_bytes" ] && echo 1)")" \
    "$line [probed_poisoned_bytes $probed, outputs $out_bytes]"
  if [ "$variant" = - ]; then vflags=(--grid "$grid"); else vflags=(--cubin "$variant"); fi
  run weak "$KC" validate "$C" "${vflags[@]}" --footprint never
  echo "  [$name] weak ${vflags[*]}: $(result_of weak)"
  run tail "$KC" validate "$C" "${vflags[@]}"
  rc=$RC
  verdict "${name}_tail" "$(pass_if "$([ "$rc" = 1 ] && [[ $(result_of tail) == "Result: FAIL"* ]] && echo 1)")" \
    "${vflags[*]##*/}: $(result_of tail)"
}

BIN=$WORK/bin
mkdir -p "$BIN"
build() {  # build NAME [flags]: BIN/NAME, and its kernel alone with flags as BIN/NAME.variant.cubin
  local name=$1 src=$HERE/ptrarray_apps/$1.cu
  shift
  D=$WORK
  run "build_$name" "$NVCC" "${GEN[@]}" "$src" -o "$BIN/$name" -lcuda &&
    { [ $# -eq 0 ] || run "variant_$name" "$NVCC" "${GEN[@]}" -cubin -DKC_KERNEL_ONLY "$@" "$src" -o "$BIN/$name.variant.cubin"; }
}

if want bulk_groups; then
  if build bulk_groups -DKC_SKIP_LAST_GROUP; then
    # 16 tiles of 4 KiB; the last group is tiles 10..15.
    probe_case bulk_groups bulk_group_store 65536 - "$BIN/bulk_groups.variant.cubin" -- "$BIN/bulk_groups" 3
    D=$WORK/bulk_groups
    run grid "$KC" validate "$D/cap" --grid 15
    verdict bulk_groups_grid "$(pass_if "$([ "$RC" = 1 ] && [[ $(result_of grid) == "Result: FAIL"* ]] && echo 1)")" \
      "--grid 15: $(result_of grid)"
  else
    verdict bulk_groups FAIL "nvcc: $(tail -2 "$STEP_ERR" | tr '\n' ' ')"
  fi
fi
if want tma_store; then
  if build tma_store; then
    probe_case tma_store tma_tile_store 262144 7,8 - -- "$BIN/tma_store" 3
  else
    verdict tma_store FAIL "nvcc: $(tail -2 "$STEP_ERR" | tr '\n' ' ')"
  fi
fi
if want patched_map; then
  if build patched_map; then
    probe_case patched_map patched_map_store 196608 4,4,2 - -- "$BIN/patched_map" 3
  else
    verdict patched_map FAIL "nvcc: $(tail -2 "$STEP_ERR" | tr '\n' ' ')"
  fi
fi
if want cutlass57; then
  if [ -x "${CUTLASS_EX57:-}" ] && [ -f "${CUTLASS_EX57_SKIP:-}" ]; then
    # 4 groups of 512x512x256 fp8 -> fp16 D (2 MiB of outputs), alpha 1, beta 0.
    probe_case cutlass57 'KernelPtrArrayTmaWarpSpecializedCooperative' 2097152 - "$CUTLASS_EX57_SKIP" -- \
      "$CUTLASS_EX57" --m=512 --n=512 --k=256 --groups=4 --alpha=1 --beta=0 --iterations=2
    D=$WORK/cutlass57
    "$KC" info --json "$D/cap" >"$D/info.json" 2>/dev/null
    g=$(info "','.join(str(max(1, v // 2)) if i == 0 else str(v) for i, v in enumerate(m['launch']['grid']))")
    run grid "$KC" validate "$D/cap" --grid "$g"
    echo "  [cutlass57] --grid $g (shown only): $(result_of grid)"
  else
    verdict cutlass57 "SKIP" "set CUTLASS_EX57 and CUTLASS_EX57_SKIP (see the header)"
  fi
fi

summary -s
[ "$failed" = 0 ]

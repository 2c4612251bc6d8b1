#!/usr/bin/env bash
# GPU suite for kernels whose element types kerncap cannot read from a signature (issue 33
# item 1), built here from tests/gpu/untyped_apps:
#   atomic_sum    an extern "C" kernel adding doubles atomically into one managed result
#   shared_rows   a kernel in an anonymous namespace (its variant, compiled alone, names it in
#                 another scope) launched from a CUDA graph, adding doubles atomically in shared
#                 memory and storing one per row
# For each: extract, validate the captured image (PASS: the SASS shows float atomics, so its
# float outputs are compared within the spread of the kernel's own replays, not byte-exact);
# the variant that skips its last block FAILs, its line naming each failing region's type and
# where the type came from. Exit 0 all passed, 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/untyped_e2e.sh BUILD_DIR
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/untyped_e2e.sh BUILD_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
unset KERNCAP_SERVE
gpu_work_dir untyped
SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
echo "untyped suite: work in $WORK (sm_$SM)"

for app in atomic_sum:kc_atomic_sum shared_rows:rowSums; do
  name=${app%%:*} kernel=${app#*:}
  want "$name" || continue
  src=$HERE/untyped_apps/$name.cu
  if ! run "build_$name" "$NVCC" -arch="sm_$SM" -O2 "$src" -o "$WORK/$name" ||
     ! run "variant_$name" "$NVCC" -cubin -arch="sm_$SM" -O2 -DKC_KERNEL_ONLY -DKC_SKIP_TAIL "$src" -o "$WORK/$name.tail.cubin"; then
    verdict "$name" FAIL "nvcc: $(tail -2 "$STEP_ERR" | tr '\n' ' ')"
    continue
  fi
  C=$WORK/$name.capture
  if ! run "extract_$name" "$KC" extract "$kernel" --dispatch 2 -o "$C" -- "$WORK/$name"; then
    verdict "$name" FAIL "extract: $(grep -m1 -i error "$STEP_ERR")"
    continue
  fi
  run "validate_$name" "$KC" validate "$C" --json
  cp "$STEP_OUT" "$WORK/$name.captured.json"
  line=$(json_get "$STEP_OUT" "j['line']")
  cause=$(json_get "$STEP_OUT" "j.get('nondeterministic_cause')")
  verdict "${name}_captured" "$(pass_if "$([ "$RC" = 0 ] && [[ $line == "Result: PASS"* ]] && echo 1)")" "$line [cause: $cause]"
  run "tail_$name" "$KC" validate "$C" --cubin "$WORK/$name.tail.cubin" --json
  cp "$STEP_OUT" "$WORK/$name.tail.json"
  line=$(json_get "$STEP_OUT" "j['line']")
  verdict "${name}_tail" "$(pass_if "$([ "$RC" = 1 ] && [[ $line == "Result: FAIL"* ]] && [[ $line == *fp64* ]] && echo 1)")" "$line"
done

summary -s
[ "$failed" = 0 ]

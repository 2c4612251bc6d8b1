#!/usr/bin/env bash
# The edit loop on a kernel whose translation unit includes CUB (examples/cub_reduce.cu):
# CUDA 13's CUB/libcu++ headers give internal-linkage __device__ objects names prefixed by
# the translation unit (file name and a hash of its contents), and the kernel writes an
# anonymous-namespace __device__ counter with such a name. The variant is compiled as
# kernel_variant.cu, so every one of those names differs from the captured module's; replay
# binds them by normalised name (src/replay/global_match.hpp).
#   cub_unedited      extract --source-dir -> source found; the capture holds _INTERNAL_
#                     globals; make recompile; make validate-variant PASS (byte-exact);
#                     kerncap validate --cubin optimized.cubin PASS
#   cub_wrong_output  out[7] off by one             -> validate-variant FAIL
#   cub_wrong_global  the internal counter += 2     -> validate-variant FAIL (a global region)
# Prints one row per case and "N passed, N failed". Exit 0 all passed, 1 some failed,
# 77 skipped (no GPU).
#
#   tests/gpu/cub_e2e.sh BUILD_DIR
#
# Environment: OUT (logs in $OUT/cub-logs), KERNCAP_GPU_KEEP=1 (keep the work directory),
# KERNCAP_GPU_TIMEOUT (per command, default 300 s).
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/cub_e2e.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
APP=$EX/cub_reduce
DB=$BUILD/compile_commands.json
for f in "$KC" "$APP" "$DB"; do
  [ -e "$f" ] || { echo "missing $f: build kerncap with examples first (cmake --build $BUILD)"; exit 1; }
done
command -v make >/dev/null || { echo "make is not installed: the reproducer's Makefile needs it"; exit 1; }

gpu_work_dir cub in-work
trap cleanup EXIT
python3 "$HERE/relocate_compile_db.py" "$DB" "$ROOT" "$BUILD" "$WORK/compile_commands.json" || exit 1
DB=$WORK/compile_commands.json

VERDICT_STYLE=row VERDICT_WIDTH=18  # verdict: one table row per case, at once
ERROR_RE=error                      # first_error

DIR=$WORK/repro
echo "| case               | res  | notes |"
echo "|--------------------|------|-------|"

# ---- unedited: extract, recompile, validate ------------------------------------------------
if ! step extract "$KC" extract block_sums --cmd "$APP" --source-dir "$ROOT/examples" --compile-commands "$DB" -o "$DIR"; then
  verdict cub_unedited FAIL "extract failed: $(first_error)"
  verdict cub_wrong_output FAIL "not run: no capture"
  verdict cub_wrong_global FAIL "not run: no capture"
  echo "logs: $LOGS"; summary; exit
fi
src=$(grep -m1 -oE 'source: [a-z-]+' "$STEP_LOG" | cut -d' ' -f2)
internal=$(grep -rhoE '"_ZN[0-9]+_INTERNAL_[^"]*"' "$DIR" --include='*.json' | sort -u | wc -l)
EDIT=$DIR/kernel_variant.cu
note="source $src; $internal captured globals with a translation-unit prefix"
ok=1
[ "$src" = found ] || { ok=0; note="$note; source not found"; }
[ "$internal" -gt 0 ] || { ok=0; note="$note; expected _INTERNAL_ globals in the capture (CUDA 12 headers have none?)"; }
cp "$EDIT" "$WORK/original.cu" 2>/dev/null || { ok=0; note="$note; no kernel_variant.cu"; }
if step recompile make -C "$DIR" recompile KERNCAP="$KC"; then
  if step validate-variant make -C "$DIR" validate-variant KERNCAP="$KC" && grep -Eq '^Result: PASS \(.*byte-exact' "$STEP_LOG"; then
    note="$note; validate-variant PASS"
  else
    ok=0; note="$note; validate-variant: $(grep -m1 -E '^Result|error' "$STEP_LOG")"
  fi
  if step validate-cubin "$KC" validate "$DIR" --cubin "$DIR/optimized.cubin" && grep -q '^Result: PASS' "$STEP_LOG"; then
    note="$note; validate --cubin PASS"
  else
    ok=0; note="$note; validate --cubin: $(grep -m1 -E '^Result|error|module global' "$STEP_LOG")"
  fi
else
  ok=0; note="$note; recompile: $(first_error)"
fi
verdict cub_unedited "$(pass_if "$ok")" "$note"

# Edits that change results (wrong_edit_case, lib.sh): validate-variant must FAIL.
wrong_edit_case cub_wrong_output "$DIR" "$EDIT" "$WORK/original.cu" \
  's|out\[blockIdx.x\] = s;  // kc:store|out[blockIdx.x] = s + (blockIdx.x == 7 ? 1.0f : 0.0f);  // kc:store|' "out[7] off by one"
wrong_edit_case cub_wrong_global "$DIR" "$EDIT" "$WORK/original.cu" \
  's|atomicAdd(&blocks_seen, 1u);|atomicAdd(\&blocks_seen, 2u);|' "internal counter +2"
cp "$WORK/original.cu" "$EDIT"

echo "logs: $LOGS"
summary

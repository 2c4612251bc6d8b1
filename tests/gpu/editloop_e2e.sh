#!/usr/bin/env bash
# The edit loop on real code (GPU): CUB kernels recompiled from the generated reproducer, and
# torch.compile run the way users run it (caches on, a second run finds them warm).
#   cub_scan         a program including <cub/cub.cuh> (tests/gpu/editloop_apps/cub_scan.cu):
#                    extract (source found) -> make recompile (kernel_instance.cu: the unit up to
#                    the kernel's definition, the rest guarded off) -> make validate-variant PASS ->
#                    kerncap validate --cubin optimized.cubin PASS; the module's internal-linkage
#                    globals are named after kernel_instance.cu in the variant
#   cub_scan_wrong   an edit that changes out[] -> validate-variant FAIL
#   cub_scan_counter the anonymous-namespace counter += 2 -> validate-variant FAIL
#   cub_tmpl         a CUB kernel template in a header (editloop_apps/cub_tmpl.cuh), instantiated
#                    three times by cub_tmpl.cu: make recompile builds kernel_instance.cu (the
#                    captured tmpl_scan<float, 256> alone; its globals named after that file) ->
#                    validate-variant PASS, validate --cubin PASS; cub_tmpl_wrong and
#                    cub_tmpl_counter edit the mirrored header -> FAIL
#   cub_rdc          two units including CUB, -rdc, linked (rdc_main.cu + rdc_other.cu): the
#                    kernel's unit recompiled up to its definition (kernel_instance.cu), as one
#                    whole program (-rdc dropped) -> validate-variant PASS; an edit
#                    of out[] -> FAIL
#   inductor_default_cold / _warm, inductor_maxautotune_cold / _warm
#                    (inductor_maxautotune_cg_cold / _warm, mode="max-autotune", on request)
#                    tests/gpu/editloop_apps/inductor_mlp.py under torch.compile (default and
#                    mode="max-autotune-no-cudagraphs"), run twice with TORCHINDUCTOR_CACHE_DIR
#                    and TRITON_CACHE_DIR in a fresh folder (cold, then warm): the first Triton
#                    launch of the model (--dispatch 0) is captured — it has the model's input
#                    address, which no benchmark launch has (benchmarks are in the ignore
#                    window) —, it is bound to its compilation by the image's sha256 (warm: through
#                    the load-path records), and `python3 reproducer.py` PASSes
# Prints one row per case and "N passed, N failed". Exit 0 all passed, 1 some failed,
# 77 skipped (no GPU; the Inductor cases alone are SKIP without python3 + torch + triton).
#
#   tests/gpu/editloop_e2e.sh BUILD_DIR
#
# Environment: OUT (work in $OUT/editloop-work, logs in $OUT/editloop-logs), KERNCAP_GPU_CASES
# (extended regex over case names), KERNCAP_GPU_KEEP=1 (keep the work folder),
# KERNCAP_GPU_TIMEOUT (per command, default 600 s: max-autotune compiles for minutes),
# KERNCAP_PYTHON (python with torch + triton, default python3), NVCC (default: nvcc on PATH,
# else /usr/local/cuda/bin/nvcc).
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/editloop_e2e.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
REPO=$(cd "$HERE/../.." && pwd)
APPS=$HERE/editloop_apps
PY=${KERNCAP_PYTHON:-python3}
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-600}

gpu_build "$BUILD"
[ -x "$KC" ] || { echo "kerncap is not built: $KC missing"; exit 1; }
[ -x "$NVCC" ] || { echo "no nvcc (set NVCC)"; exit 1; }
command -v make >/dev/null || { echo "make is not installed: the reproducer's Makefile needs it"; exit 1; }
export KERNCAP_REPLAY_LIB=${KERNCAP_REPLAY_LIB:-$BUILD/lib/libkerncap_replay.so}
# Not CC: an exported CC (the C compiler Triton builds its launcher with) would be overwritten.
GPU_CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
ARCH=sm_${GPU_CC:-90}

gpu_work_dir editloop in-work
trap cleanup EXIT

VERDICT_STYLE=row VERDICT_WIDTH=26         # verdict: one table row per case, at once
ERROR_RE='error|fail|cannot|module global'  # first_error

echo "| case                       | res  | notes |"
echo "|----------------------------|------|-------|"

# ---- CUDA: build the programs, with a compile database like CMake's -----------------------
SRC=$WORK/src
mkdir -p "$SRC" && cp "$APPS"/*.cu "$APPS"/*.cuh "$SRC"/
# compile NAME FLAGS...: one unit to NAME.o, recorded in the database
DB_ENTRIES=()
compile() {
  local name=$1
  shift
  local cmd="$NVCC -arch=$ARCH -O2 $* -c -o $SRC/$name.o $SRC/$name.cu"
  DB_ENTRIES+=("{\"directory\": \"$SRC\", \"command\": \"$cmd\", \"file\": \"$SRC/$name.cu\"}")
  step "build-$name" $cmd
}
BUILT=1
compile cub_scan && step link-cub_scan "$NVCC" -arch="$ARCH" -o "$SRC/cub_scan" "$SRC/cub_scan.o" || BUILT=0
compile cub_tmpl && step link-cub_tmpl "$NVCC" -arch="$ARCH" -o "$SRC/cub_tmpl" "$SRC/cub_tmpl.o" || BUILT=0
compile rdc_main -rdc=true && compile rdc_other -rdc=true &&
  step link-rdc "$NVCC" -arch="$ARCH" -rdc=true -o "$SRC/rdc_app" "$SRC/rdc_main.o" "$SRC/rdc_other.o" || BUILT=0
DB=$SRC/compile_commands.json
{ echo "["; (IFS=,; echo "${DB_ENTRIES[*]}"); echo "]"; } >"$DB"

# The file extract says to edit (compile.json edit.file), and what make recompile compiles.
edit_of() { json_get "$1/compile.json" edit.file; }
unit_of() { json_get "$1/compile.json" recompile.unit; }

# cuda_case NAME KERNEL APP STORE_SED COUNTER_SED [UNIT]: extract, recompile (of UNIT, default
# kernel_variant.cu), validate-variant PASS, validate --cubin PASS; then each edit must FAIL.
cuda_case() {
  local name=$1 kernel=$2 app=$3 store_sed=$4 counter_sed=$5 want_unit=${6:-kernel_variant.cu}
  local dir=$WORK/$name note ok=1 src internal unit
  if [ "$BUILT" != 1 ]; then verdict "$name" FAIL "the test programs did not build: $(first_error)"; return; fi
  if ! step "$name-extract" "$KC" extract "$kernel" --cmd "$app" --source-dir "$SRC" --compile-commands "$DB" -o "$dir"; then
    verdict "$name" FAIL "extract failed: $(first_error)"; return
  fi
  src=$(grep -m1 -oE 'source: [a-z-]+' "$STEP_LOG" | cut -d' ' -f2)
  internal=$(grep -rhoE '"(__nv_static_[^"]*|_ZN[0-9]+_INTERNAL_[^"]*)"' "$dir/capture/manifest.json" | sort -u | wc -l)
  note="source ${src:-?}; $internal captured globals with a translation-unit scope"
  [ "$src" = found ] || { ok=0; note="$note; source not found"; }
  [ "$internal" -gt 0 ] || { ok=0; note="$note; expected translation-unit-scoped globals in the capture"; }
  local edit=$dir/$(edit_of "$dir")
  cp "$edit" "$WORK/$name.original.cu" 2>/dev/null || { verdict "$name" FAIL "$note; no file to edit ($edit)"; return; }
  unit=$(unit_of "$dir")
  note="$note; recompile unit ${unit:-?}"
  [ "$unit" = "$want_unit" ] || { ok=0; note="$note (expected $want_unit)"; }
  if step "$name-recompile" make -C "$dir" recompile KERNCAP="$KC"; then
    if step "$name-validate-variant" make -C "$dir" validate-variant KERNCAP="$KC" && grep -q '^Result: PASS' "$STEP_LOG"; then
      note="$note; validate-variant PASS"
    else
      ok=0; note="$note; validate-variant: $(grep -m1 -E '^Result' "$STEP_LOG" || first_error)"
    fi
    if step "$name-validate-cubin" "$KC" validate "$dir" --cubin "$dir/optimized.cubin" && grep -q '^Result: PASS' "$STEP_LOG"; then
      note="$note; validate --cubin PASS"
    else
      ok=0; note="$note; validate --cubin: $(grep -m1 -E '^Result' "$STEP_LOG" || first_error)"
    fi
  else
    ok=0; note="$note; recompile: $(first_error)"
  fi
  verdict "$name" "$(pass_if "$ok")" "$note"
  # Edits that change results (wrong_edit_case, lib.sh): validate-variant must FAIL.
  wrong_edit_case "${name}_wrong" "$dir" "$edit" "$WORK/$name.original.cu" "$store_sed" "an output off by one"
  [ -n "$counter_sed" ] &&
    wrong_edit_case "${name}_counter" "$dir" "$edit" "$WORK/$name.original.cu" "$counter_sed" "the internal counter +2"
  cp "$WORK/$name.original.cu" "$edit"
}

if want -E cub_scan; then
  cuda_case cub_scan scan_tiles "$SRC/cub_scan" \
    's|if (i < n) out\[i\] = v;  // kc:store|if (i < n) out[i] = v + (i == 1000 ? 1.0f : 0.0f);  // kc:store|' \
    's|atomicAdd(&tiles_done, 1u);|atomicAdd(\&tiles_done, 2u);|' kernel_instance.cu
fi
if want -E cub_tmpl; then
  cuda_case cub_tmpl 'tmpl_scan<float, 256>' "$SRC/cub_tmpl" \
    's|if (i < n) out\[i\] = v;  // kc:store|if (i < n) out[i] = v + (i == 1000 ? T(1) : T(0));  // kc:store|' \
    's|atomicAdd(&tmpl_tiles, 1u);|atomicAdd(\&tmpl_tiles, 2u);|' kernel_instance.cu
fi
if want -E cub_rdc; then
  cuda_case cub_rdc tile_max "$SRC/rdc_app" \
    's|out\[blockIdx.x\] = m;  // kc:store|out[blockIdx.x] = m + (blockIdx.x == 7 ? 1.0f : 0.0f);  // kc:store|' \
    's|atomicAdd(&max_blocks, 1u);|atomicAdd(\&max_blocks, 2u);|' kernel_instance.cu
fi

# ---- torch.compile, cold then warm caches -----------------------------------------------
HAVE_TORCH=1
"$PY" -c 'import torch, triton, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null || HAVE_TORCH=0
export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"

# inductor_case LABEL MODE CACHE: capture the model's first Triton launch and run the reproducer.
inductor_case() {
  local label=$1 mode=$2 cache=$3 dir=$WORK/$1 note ok=1 ptrs want how via compiled
  if [ "$HAVE_TORCH" != 1 ]; then verdict "$label" SKIP "$PY cannot import torch (with CUDA) and triton"; return; fi
  PYTHONPATH="$REPO/python/kerncap/triton_shim:$PYTHONPATH" KERNCAP_TRITON_OUT="$dir/triton" \
    TORCHINDUCTOR_CACHE_DIR="$cache/inductor" TRITON_CACHE_DIR="$cache/triton" \
    step "$label-extract" "$KC" extract 'triton_(poi|tem|per|red)_' --regex --dispatch 0 -o "$dir" -- \
    "$PY" "$APPS/inductor_mlp.py" "$mode"
  if [ ! -f "$dir/capture/manifest.json" ]; then verdict "$label" FAIL "extract: $(first_error)"; return; fi
  cp "$STEP_LOG" "$dir/app.log"
  if [ ! -f "$dir/reproducer.py" ]; then
    step "$label-generate" "$PY" -m kerncap.triton_repro "$dir" || { verdict "$label" FAIL "generator: $(first_error)"; return; }
  fi
  want=$(grep -m1 '^MODEL input 0 ' "$dir/app.log" | awk '{print $4}')
  ptrs=$(json_get "$dir/triton/launch.json" '" ".join(str(a["value"]) for a in j["args"] if a["type"].startswith("*"))')
  note="$(json_get "$dir/triton/launch.json" 'j["kernel"]')"
  if [ -n "$want" ] && [[ " $ptrs " == *" $want "* ]]; then
    note="$note; reads the model's input (its own launch)"
  else
    ok=0; note="$note; the captured launch does not read the model's input $want (pointers: $ptrs): a benchmark launch?"
  fi
  how=$(json_get "$dir/triton/name_map.json" 'j["captured"]["how"]')
  via=$(json_get "$dir/triton/name_map.json" '"/".join(sorted({str(c.get("via")) for cs in j["kernels"].values() for c in cs if c["hash"] == j["captured"]["hash"]}))')
  compiled=$(grep -h '"kind": "compile"' "$dir"/triton/records/*.jsonl 2>/dev/null | grep -c '"cache_hit": false')
  loads=$(grep -h '"kind": "load"' "$dir"/triton/records/*.jsonl 2>/dev/null | wc -l)
  ignored=$(json_get "$dir/triton/name_map.json" 'sum(v["benchmarks"] for v in (j.get("benchmarks") or {}).values())')
  note="$note; bound by ${how:-?} (record via ${via:-?}; $compiled fresh compiles, $loads loads, ${ignored:-0} benchmark windows)"
  # Only image hashes bind: a record matched by kernel name means the image was never recorded.
  case "$how" in
    "cubin sha256"|"load record") ;;
    *) ok=0; note="$note; not bound by the image hash" ;;
  esac
  if step "$label-repro" "$PY" "$dir/reproducer.py"; then  # exit 0 is PASS
    note="$note; reproducer PASS"
  else
    ok=0; note="$note; reproducer: $(grep -m1 -E 'FAIL' "$STEP_LOG" || first_error)"
  fi
  verdict "$label" "$(pass_if "$ok")" "$note"
}

# inductor_maxautotune_cg (mode="max-autotune", CUDA graphs on) runs only when KERNCAP_GPU_CASES
# names it: the model's launches after the first call are replays of a CUDA graph.
for spec in "inductor_default default" "inductor_maxautotune max-autotune-no-cudagraphs" \
            "inductor_maxautotune_cg max-autotune"; do
  set -- $spec
  want -E "$1" || continue
  [ "$1" != inductor_maxautotune_cg ] || [[ ${KERNCAP_GPU_CASES:-} == *maxautotune_cg* ]] || continue
  cache=$WORK/cache-$1
  mkdir -p "$cache"
  inductor_case "$1_cold" "$2" "$cache"
  inductor_case "$1_warm" "$2" "$cache"
done

echo "logs: $LOGS"
summary -s

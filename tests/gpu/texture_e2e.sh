#!/usr/bin/env bash
# GPU suite for textures, surfaces and CUDA arrays: a kernel that takes texture or surface
# object handles (as parameters or inside a by-value struct) is captured with the arrays'
# contents and the objects' descriptors, replayed with re-created arrays and objects (new
# handles written into the parameters) and validated, arrays written through surfaces
# compared too. Programs: tests/gpu/texture_apps/tex_apps.cu (built here with nvcc).
#
# Per case (the kernel's 2nd launch, --dispatch 1, with --continue):
#   the application's output identical to a run without kerncap; the manifest names the
#   expected number of handles and arrays; `validate` PASS; `kerncap footprint`, then
#   `validate` PASS (strong when the footprint applies); `validate --grid` with one block
#   less FAIL (the comparison sees the part of the output that block writes: for `surface`
#   that output is the CUDA array itself).
#   linear    tex1Dfetch over linear memory          (1 handle, 0 arrays)
#   pitch2d   tex2D over pitched memory              (1 handle, 0 arrays)
#   array2d   2D cudaArray, linear filtering         (1 handle, 1 array)
#   layered   layered 2D cudaArray                   (1 handle, 1 array)
#   array3d   3D cudaArray, linear filtering         (1 handle, 1 array)
#   mipmap    mipmapped array, every level read      (1 handle, 1 array)
#   surface   surface read/write: output in the array (1 handle, 1 array, AFTER in it)
#   struct    handle inside a by-value struct         (1 handle, 0 arrays)
#   texsurf   a texture over one array, a surface over another (2 handles, 2 arrays). When
#             the driver gives the texture and the surface the same handle value, kerncap
#             cannot tell which the word means and refuses: the row says so (a known limit,
#             counted as passed when the refusal says exactly that)
#   refused   a mipmapped array read whole and written through a level array: extract
#             fails and says why ("both whole and through its level")
# Prints one table row per case and "N passed, N failed". Exit 0 all passed, 1 some failed,
# 77 skipped (no GPU).
#
#   tests/gpu/texture_e2e.sh BUILD_DIR
#
# Environment: OUT (work files under it), KERNCAP_GPU_CASES (names to run),
# KERNCAP_GPU_TIMEOUT (per command, default 180 s), KERNCAP_GPU_KEEP=1 (keep the work directory).
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/texture_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-180}
for f in "$KC" "$NVCC"; do [ -x "$f" ] || { echo "missing $f"; exit 1; }; done
gpu_work_dir texture
[ -n "${OUT:-}" ] || trap cleanup EXIT
echo "texture suite: work in $WORK"

SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
APP=$WORK/tex_apps
if ! "$NVCC" -O2 -arch=sm_"$SM" -o "$APP" "$HERE/texture_apps/tex_apps.cu" >"$WORK/build.log" 2>&1; then
  echo "cannot build tex_apps:"; tail -5 "$WORK/build.log"; exit 1
fi

ERROR_RE='error|fail|refus|cannot'  # first_error

# tex_case NAME KERNEL HANDLES ARRAYS [array_after]: see the header.
tex_case() {
  local name=$1 kernel=$2 handles=$3 arrays=$4 need_after=${5:-} problems="" cap=$WORK/$1.cap
  want "$name" || return
  run "$name.plain" "$APP" "$name"
  if [ $RC -ne 0 ]; then row "$name | $kernel | plain run failed rc=$RC: $(first_error "$name.plain") | | | | | FAIL"; tally FAIL; return; fi
  run "$name.extract" "$KC" extract "$kernel" --dispatch 1 --continue -o "$cap" -- "$APP" "$name"
  if [ $RC -ne 0 ] && [ "$name" = texsurf ] &&
    grep -q 'both a live texture object and a live surface object' "$WORK/$name.extract.out" "$WORK/$name.extract.err"; then
    row "$name | $kernel | refused: the texture and the surface share a handle value ($(grep -h -m1 'APP texsurf handles' "$WORK/$name.plain.out")) | | | | | PASS (known limit)"
    tally PASS; return
  fi
  if [ $RC -ne 0 ] || [ ! -f "$cap/capture/manifest.json" ]; then
    row "$name | $kernel | extract rc=$RC: $(first_error "$name.extract") | | | | | FAIL"; tally FAIL; return
  fi
  local out="identical"
  grep '^APP ' "$WORK/$name.plain.out" >"$WORK/$name.plain.app"
  grep '^APP ' "$WORK/$name.extract.out" >"$WORK/$name.kc.app"
  if ! cmp -s "$WORK/$name.plain.app" "$WORK/$name.kc.app"; then out="DIFFERS"; problems+="--continue output differs; "; fi
  local got
  got=$(manifest_get "$cap" '"{} handles, {} arrays, {} objects, {} B of arrays in AFTER".format(len(textures["handles"]), len(textures["arrays"]), len(textures["objects"]), after_bytes("array"))')
  [ "$(manifest_get "$cap" "len(textures['handles']) == $handles and len(textures['arrays']) == $arrays")" = True ] ||
    problems+="expected $handles handles and $arrays arrays, got: $got; "
  if [ -n "$need_after" ] && [ "$(manifest_get "$cap" 'after_bytes("array") > 0')" != True ]; then problems+="no AFTER bytes in the array; "; fi
  run "$name.validate" "$KC" validate "$cap"
  local weak
  weak=$(result_of "$name.validate")
  [ $RC -eq 0 ] && [[ $weak == "Result: PASS"* ]] || problems+="validate rc=$RC ${weak:-$(first_error "$name.validate")}; "
  run "$name.footprint" "$KC" footprint "$cap"
  [ $RC -eq 0 ] || problems+="footprint rc=$RC $(first_error "$name.footprint"); "
  run "$name.strong" "$KC" validate "$cap"
  local strong
  strong=$(result_of "$name.strong")
  [ $RC -eq 0 ] && [[ $strong == "Result: PASS"* ]] || problems+="validate after footprint rc=$RC ${strong:-$(first_error "$name.strong")}; "
  local strength=weak
  [[ $strong == *strong* ]] && strength=strong
  # One block less along x: the part of the output that block writes is not written.
  local g tail
  g=$(manifest_get "$cap" '",".join(str(v - 1 if i == 0 else v) for i, v in enumerate(m["launch"]["grid"]))')
  if [[ $g == 0,* ]]; then
    g=$(manifest_get "$cap" '",".join(str(v - 1 if i == 1 else v) for i, v in enumerate(m["launch"]["grid"]))')
  fi
  run "$name.grid" "$KC" validate "$cap" --grid "$g"
  tail=$(result_word "$name.grid")
  [ $RC -eq 1 ] && [ "$tail" = FAIL ] || problems+="grid $g: rc=$RC ${tail:-$(first_error "$name.grid")} (expected FAIL); "
  case_row "$name" "$problems" "$kernel | $got | $out | ${strong:8:90} | $strength | ${tail:-?} (grid $g)"
}

# refused_case NAME KERNEL REGEX: extract fails (non-zero), no capture, its output matches REGEX.
refused_case() {
  local name=$1 kernel=$2 re=$3 cap=$WORK/$1.cap status
  want "$name" || return
  run "$name.extract" "$KC" extract "$kernel" -o "$cap" -- "$APP" alias
  if [ $RC -ne 0 ] && [ ! -f "$cap/capture/manifest.json" ] && grep -qE "$re" "$WORK/$name.extract.out" "$WORK/$name.extract.err"; then
    status=PASS
  else
    status="FAIL: rc=$RC, expected a refusal matching '$re'"
  fi
  tally "$status"
  row "$name | $kernel | $(grep -h -m1 -oE 'cannot be captured.{0,120}' "$WORK/$name.extract.out" "$WORK/$name.extract.err" | head -1) | | | | | $status"
}

tex_case linear texLinear 1 0
tex_case pitch2d texPitch 1 0
tex_case array2d texArrayFilter 1 1
tex_case layered texLayered 1 1
tex_case array3d texVolume 1 1
tex_case mipmap texMip 1 1
tex_case surface surfScale 1 1 array_after
tex_case struct texStruct 1 0
tex_case texsurf texToSurf 2 2 array_after
refused_case refused mipAlias 'both whole and through its level'

{
  table "case | kernel | captured | --continue output | validate after footprint | PASS strength | one block less | verdict"
  echo
  summary
} | tee -a "$WORK/log.txt"
[ "$failed" -eq 0 ]

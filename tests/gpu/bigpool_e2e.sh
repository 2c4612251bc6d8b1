#!/usr/bin/env bash
# GPU suite for validating a capture of a huge pool of zeros (a framework's preallocated
# pool: XLA's takes most of the GPU): the application (bigpool_app/bigpool_app.cu) holds
# BIGPOOL_GIB GiB (default 32) of zeros and its kernel writes 16 MiB of it. Restore and
# comparison must cost what the capture stores and the launch writes, not the pool
# (docs/replay.md, "How restore and compare scale"):
#   capture        extract: the capture stores a few MiB
#   weak           validate --footprint never: PASS, the device vouches for the zeros and at
#                  most a few MiB are read back; restore + compare within BIGPOOL_MAX_WORK_S
#   footprint      kerncap footprint (its time is shown, no limit)
#   strong         validate --footprint require: PASS strong, the poison written by memsets
#                  (overlaid), nothing of the pool staged; restore + compare within the limit
#   stray          a variant that also writes one byte three quarters into the zeros: FAIL,
#                  exactly 1 byte differs, at the offset the application printed
#   grid-1         the captured image launched with one block less, strong: FAIL, the last
#                  1 KiB of the output still poisoned (its first offset reported; a few of its
#                  bytes may equal the poison by chance)
#   fuzz           validate --fuzz 2 of the captured image: PASS (the 4 MiB input randomised;
#                  each trial's outputs recorded without the zeros)
#   fuzz-stray     the stray variant with --fuzz 1: the trial FAILs at the stray byte's element
# Each validate's wall time and its restore/compare split (`--json`: restore_work,
# compare_work) are printed. Run against a build without the change, the structural checks
# (bytes staged, bytes read back) fail and the times show the old cost.
# Prints one PASS/FAIL line per case, a table and "N passed, N failed".
# Exit 0 all passed, 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/bigpool_e2e.sh BUILD_DIR
#
# Environment: BIGPOOL_GIB (pool size, default 32; an H100 needs it plus an eighth for the
# footprint's bitmaps), BIGPOOL_MAX_WORK_S (limit on restore + compare seconds of one
# validate, default 3), BIGPOOL_MAX_S (limit on one validate's wall time, default 30),
# KERNCAP_GPU_CASES (names to run; capture always runs), OUT (work files under it),
# KERNCAP_GPU_KEEP=1, KERNCAP_GPU_TIMEOUT (per command, default 600 s).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/bigpool_e2e.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
gpu_build "$BUILD"
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-600}
GIB=${BIGPOOL_GIB:-32}
MAX_WORK=${BIGPOOL_MAX_WORK_S:-3}
MAX_S=${BIGPOOL_MAX_S:-30}
[ -x "$KC" ] || { echo "missing $KC (build kerncap first)"; exit 1; }
gpu_work_dir bigpool
trap cleanup EXIT
echo "big-pool suite: ${GIB} GiB pool, work in $WORK"

MiB=$((1 << 20))
JSON_FLOAT=.2f  # json_get (field): two decimals

# The application and the stray variant, for this GPU's architecture.
SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
APP=$WORK/bigpool_app
STRAY=$WORK/stray.cubin
if ! "$NVCC" -O2 -arch="sm_${SM:-90}" -o "$APP" "$HERE/bigpool_app/bigpool_app.cu" >"$WORK/nvcc.log" 2>&1 ||
  ! "$NVCC" -cubin -O2 -arch="sm_${SM:-90}" -DSTRAY -o "$STRAY" "$HERE/bigpool_app/bigpool_app.cu" >>"$WORK/nvcc.log" 2>&1; then
  check build "nvcc failed (log $WORK/nvcc.log): $(tail -1 "$WORK/nvcc.log")" 1
  summary; exit
fi

# validate_json NAME ARGS...: kerncap validate --json with the time limit; its JSON in
# $WORK/NAME.json, stderr in $WORK/NAME.err, exit status in RC, wall seconds in SECS.
validate_json() {
  local name=$1 t0
  shift
  t0=$(now)
  timeout "$TIMEOUT" "$KC" validate "$CAP" --json "$@" >"$WORK/$name.json" 2>"$WORK/$name.err"
  RC=$?
  SECS=$(since "$t0")
}
# field NAME EXPR: json_get over the JSON of validate NAME (j), "n/a" when it fails (a build
# without restore_work/compare_work).
field() { json_get "$WORK/$1.json" "$2" || echo n/a; }
# work_line NAME: wall time and the restore/compare split of validate NAME.
work_line() {
  echo "wall ${SECS}s; restore $(field "$1" 'j["restore_work"]["seconds"]')s" \
    "(staged $(field "$1" 'j["restore_work"]["copied_bytes"] / MiB') MiB," \
    "memset $(field "$1" 'j["restore_work"]["memset_bytes"] / GiB') GiB," \
    "poison by memset $(field "$1" 'j["restore_work"]["overlaid_bytes"] / MiB') MiB);" \
    "compare $(field "$1" 'j["compare_work"]["seconds"]')s" \
    "(on device $(field "$1" 'j["compare_work"]["on_device_bytes"] / GiB') GiB," \
    "read back $(field "$1" 'j["compare_work"]["read_back_bytes"] / MiB') MiB)"
}
# fast NAME: restore + compare within MAX_WORK and the whole validate within MAX_S.
fast() {
  local work
  work=$(field "$1" 'j["restore_work"]["seconds"] + j["compare_work"]["seconds"]')
  [ "$work" != n/a ] && awk -v w="$work" -v s="$SECS" -v mw="$MAX_WORK" -v ms="$MAX_S" 'BEGIN { exit !(w <= mw && s <= ms) }'
}
# small NAME EXPR: EXPR (bytes) of validate NAME is at most 64 MiB.
small() { local v; v=$(field "$1" "$2"); [ "$v" != n/a ] && [ "$v" -le $((64 * MiB)) ]; }

# capture: the pool's zeros are not stored.
CAP=$WORK/cap
t0=$(now)
# --continue: the application prints where it wrote (and the stray offset) after the launch.
BIGPOOL_GIB=$GIB timeout "$TIMEOUT" "$KC" extract bigpool_write -o "$CAP" -q --continue -- "$APP" >"$WORK/extract.log" 2>&1
rc=$?
secs=$(since "$t0")
line=$(grep -m1 '^bigpool:' "$WORK/extract.log")
stray_at=$(sed -n 's/.*stray offset of the variant \([0-9]*\).*/\1/p' <<<"$line")
out_at=$(sed -n 's/.*written at +\([0-9]*\).*/\1/p' <<<"$line")
disk=$(du -sb "$CAP" 2>/dev/null | awk '{print $1}')
ok=1
[ $rc = 0 ] && [ -n "$stray_at" ] && [ "${disk:-0}" -gt 0 ] && [ "${disk:-0}" -lt $((256 * MiB)) ] && ok=0
check capture "extract ${secs}s, $(awk -v b="${disk:-0}" 'BEGIN { printf "%.1f MiB", b / 1048576 }') on disk (exit $rc)" $ok
[ $ok = 0 ] || { summary; exit; }

# weak: PASS, the zeros compared on the device, a few MiB read back.
if want weak; then
  validate_json weak --footprint never
  ok=1
  [ $RC = 0 ] && [ "$(field weak 'j["result"]')" = PASS ] && small weak 'j["compare_work"]["read_back_bytes"]' &&
    small weak 'j["restore_work"]["copied_bytes"]' && fast weak && ok=0
  check weak "$(work_line weak); $(field weak 'j["line"][:60]')" $ok
fi

# footprint: measured once (the strong and fuzz cases need it).
if want strong || want grid-1 || want fuzz || want fuzz-stray; then
  t0=$(now)
  timeout "$TIMEOUT" "$KC" footprint "$CAP" -q >"$WORK/footprint.log" 2>&1
  rc=$?
  check footprint "kerncap footprint $(since "$t0")s (exit $rc)" $rc
fi

# strong: PASS strong; the poison is memset over the zeros, nothing of the pool staged.
if want strong; then
  validate_json strong --footprint require
  ok=1
  [ $RC = 0 ] && [ "$(field strong 'j["strength"]')" = strong ] && small strong 'j["restore_work"]["copied_bytes"]' &&
    small strong 'j["compare_work"]["read_back_bytes"]' && [ "$(field strong 'j["poisoned_bytes"] > 0')" = True ] &&
    fast strong && ok=0
  check strong "$(work_line strong); poisoned $(field strong 'j["poisoned_bytes"] / MiB') MiB" $ok
fi

# stray: one byte written into the zeros, found by the device and reported exactly. --exact:
# the one judge compares a variant's typed (fp32) regions within tolerance by default, which
# reports whole elements; this case checks the byte-exact path (one differing byte, its offset).
if want stray; then
  validate_json stray --footprint never --cubin "$STRAY" --no-determinism-check --exact
  ok=1
  [ $RC = 1 ] && [ "$(field stray 'j["result"]')" = FAIL ] &&
    [ "$(field stray 'sum(r["differing_bytes"] for r in j["regions"])')" = 1 ] &&
    [ "$(field stray '[r.get("first_bad_offset") for r in j["regions"] if not r["pass"]][0]')" = "$stray_at" ] &&
    small stray 'j["compare_work"]["read_back_bytes"]' && fast stray && ok=0
  check stray "$(work_line stray); $(field stray '[r["summary"] for r in j["regions"] if not r["pass"]][0]') (expected offset $stray_at)" $ok
fi

# grid-1: the last block's 1 KiB of output keeps the poison: FAIL at its first byte.
if want grid-1; then
  blocks=$(( (16 * MiB / 4 + 255) / 256 ))
  validate_json grid-1 --footprint require --grid $((blocks - 1)) --no-determinism-check
  want_at=$(( ${out_at:-0} + 16 * MiB - 1024 ))
  ok=1
  [ $RC = 1 ] && [ "$(field grid-1 'j["result"]')" = FAIL ] &&
    [ "$(field grid-1 '[r.get("first_bad_offset") for r in j["regions"] if not r["pass"]][0]')" = "$want_at" ] &&
    [ "$(field grid-1 '1000 <= sum(r["differing_bytes"] for r in j["regions"]) <= 1024')" = True ] && fast grid-1 &&
    ok=0
  check grid-1 "$(work_line grid-1); $(field grid-1 '[r["summary"] for r in j["regions"] if not r["pass"]][0]') (expected offset $want_at)" $ok
fi

# fuzz: two trials of random inputs (the 4 MiB before the output), the captured image
# against itself: PASS, each trial's outputs recorded without the pool's zeros.
if want fuzz; then
  validate_json fuzz --footprint require --fuzz 2
  ok=1
  [ $RC = 0 ] && [ "$(field fuzz 'j["fuzz"]["result"]')" = PASS ] && [ "$(field fuzz 'j["fuzz"]["inputs"]')" = 1 ] &&
    awk -v s="$SECS" -v ms="$MAX_S" 'BEGIN { exit !(s <= 2 * ms) }' && ok=0
  check fuzz "wall ${SECS}s; $(field fuzz 'j["fuzz"]["line"][:110]')" $ok
fi

# fuzz-stray: the stray variant under fuzzing: its trial FAILs at the stray byte's fp32
# element (fuzzing compares the output as fp32).
if want fuzz-stray; then
  validate_json fuzz-stray --footprint require --fuzz 1 --cubin "$STRAY" --no-determinism-check
  ok=1
  [ $RC = 1 ] && [ "$(field fuzz-stray 'j["fuzz"]["result"]')" = FAIL ] &&
    [ "$(field fuzz-stray 'j["fuzz"]["failures"][0]["first_bad_offset"]')" = "$(( ${stray_at:-3} - 3 ))" ] &&
    awk -v s="$SECS" -v ms="$MAX_S" 'BEGIN { exit !(s <= 2 * ms) }' && ok=0
  check fuzz-stray "wall ${SECS}s; $(field fuzz-stray 'j["fuzz"]["line"][:140]') (expected offset $(( ${stray_at:-3} - 3 )))" $ok
fi

summary

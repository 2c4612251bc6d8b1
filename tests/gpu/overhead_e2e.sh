#!/usr/bin/env bash
# GPU end-to-end checks of kerncap's cost-cutting paths, with bench/profile_overhead_app
# (tiny_kernel launched in a loop):
#  - capture mode's in-app records start only near a far --dispatch: the capture of launch
#    5000 has an in-app time over launches of the window (in_app_launches <= 1025), and one
#    of a near dispatch (launch 10) over every launch from the first;
#  - `profile --sample N` counts every launch (calls, the --dispatch list 0..N-1, exactly as
#    the exact profile) while timing a sample (estimated, samples < calls), and its average
#    agrees with the exact profile's; records of 12000 launches are timed all below the
#    threshold (below 10000: nothing estimated);
#  - KERNCAP_PROFILE_CUPTI variants still profile every launch (kind=kernel, device buffers).
#
#   tests/gpu/overhead_e2e.sh BUILD_DIR
#
# Prints one line per check (PASS/FAIL) and "N passed, N failed". Exit 0 all passed, 1 some
# failed, 77 skipped (no GPU). Environment: OUT (work files under $OUT/overhead-e2e, kept).
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/overhead_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
APP=$BUILD/bench/profile_overhead_app
for f in "$KC" "$APP"; do
  [ -x "$f" ] || { echo "missing $f (build it: cmake --build $BUILD)"; exit 1; }
done
gpu_work_dir overhead-e2e kept  # WORK: $OUT/overhead-e2e (kept), else a temporary directory
[ -n "${OUT:-}" ] || trap cleanup EXIT
# verdict (lib.sh): "PASS  NAME  DETAIL"; a failure shows the last 8 lines of the last command's stderr.
VERDICT_STYLE=status VERDICT_WIDTH=40 VERDICT_TAIL=8
# json_check NAME PYTHON-EXPR FILE...: PASS when the expression (over j = the JSON files, in order) is true.
json_check() {
  local name=$1 expr=$2
  shift 2
  local why
  if why=$(python3 - "$expr" "$@" <<'PY' 2>&1
import json, sys
j = [json.load(open(f)) for f in sys.argv[2:]]
def kern(d, sub="tiny_kernel"):
    return next(k for k in d["kernels"] if sub in k["name"])
ok = eval(sys.argv[1])
if not ok:
    print("false")
    sys.exit(1)
PY
  ); then verdict "$name" PASS; else verdict "$name" FAIL "$why"; fi
}

# --- capture mode: in-app records near the target only
run cap_far "$KC" extract tiny_kernel --dispatch 5000 -o "$WORK/cap_far" --force -- "$APP" --kernels 6000
if [ "$RC" = 0 ] && "$KC" info "$WORK/cap_far" --json >"$WORK/cap_far.json" 2>"$WORK/cap_far_info.err"; then
  json_check "capture far dispatch: window records" \
    'j[0]["in_app_samples"] >= 256 and 1 <= j[0]["in_app_launches"] <= 1025' "$WORK/cap_far.json"
else
  verdict "capture far dispatch: window records" FAIL "extract exit $RC"
fi
run cap_near "$KC" extract tiny_kernel --dispatch 10 -o "$WORK/cap_near" --force -- "$APP" --kernels 100
if [ "$RC" = 0 ] && "$KC" info "$WORK/cap_near" --json >"$WORK/cap_near.json" 2>"$WORK/cap_near_info.err"; then
  json_check "capture near dispatch: every launch" 'j[0]["in_app_launches"] == 11' "$WORK/cap_near.json"
else
  verdict "capture near dispatch: every launch" FAIL "extract exit $RC"
fi

# --- profile --sample: exact counts, sampled times
N=60000
run exact "$KC" profile --sample 1 --top 3 -o "$WORK/exact.json" -- "$APP" --kernels $N
[ "$RC" = 0 ] || verdict "exact profile" FAIL "exit $RC"
run sampled "$KC" profile --sample 10 --top 3 -o "$WORK/sampled.json" -- "$APP" --kernels $N
if [ "$RC" = 0 ]; then
  json_check "sample: calls exact" "kern(j[0])['calls'] == $N == kern(j[1])['calls']" "$WORK/sampled.json" "$WORK/exact.json"
  json_check "sample: dispatch list exact" \
    "kern(j[0])['extract']['processes'][0]['dispatch'] == list(range($N)) == kern(j[1])['extract']['processes'][0]['dispatch']" \
    "$WORK/sampled.json" "$WORK/exact.json"
  json_check "sample: estimated, a sample timed" \
    "kern(j[0])['estimated'] and 10000 <= kern(j[0])['samples'] < $N and j[0]['totals']['estimated'] and j[0]['processes'][0]['sample_period'] == 10" \
    "$WORK/sampled.json"
  json_check "sample: average within 25% of exact" \
    "abs(kern(j[0])['avg_ns'] - kern(j[1])['avg_ns']) <= 0.25 * kern(j[1])['avg_ns']" "$WORK/sampled.json" "$WORK/exact.json"
  if grep -q '~' "$WORK/sampled.out"; then verdict "sample: table marks estimates" PASS; else verdict "sample: table marks estimates" FAIL; fi
  json_check "exact: --sample 1 times every launch" \
    "kern(j[0])['samples'] == $N and not kern(j[0])['estimated']" "$WORK/exact.json"
else
  verdict "sampled profile" FAIL "exit $RC"
fi
# The default is sampled timing with N = 10.
run default "$KC" profile --top 3 -o "$WORK/default.json" -- "$APP" --kernels $N
if [ "$RC" = 0 ]; then
  json_check "default: sampled, one in 10, calls exact" \
    "j[0]['processes'][0]['sample_period'] == 10 and kern(j[0])['estimated'] and kern(j[0])['calls'] == $N" \
    "$WORK/default.json"
else
  verdict "default profile" FAIL "exit $RC"
fi
run small "$KC" profile --sample 10 --top 3 -o "$WORK/small.json" -- "$APP" --kernels 5000
if [ "$RC" = 0 ]; then
  json_check "sample: below the threshold exact" \
    "kern(j[0])['calls'] == kern(j[0])['samples'] == 5000 and not kern(j[0])['estimated']" "$WORK/small.json"
else
  verdict "small sampled profile" FAIL "exit $RC"
fi

# --- CUPTI variants still see every launch
for v in kind=kernel device_buffer=32M,pool_limit=1000 per_thread=0 memory=0; do
  KERNCAP_PROFILE_CUPTI=$v run variant "$KC" profile --sample 1 --top 3 -o "$WORK/variant.json" -- "$APP" --kernels 20000
  if [ "$RC" = 0 ]; then
    json_check "KERNCAP_PROFILE_CUPTI=$v" "kern(j[0])['calls'] == 20000" "$WORK/variant.json"
  else
    verdict "KERNCAP_PROFILE_CUPTI=$v" FAIL "exit $RC"
  fi
done
KERNCAP_PROFILE_CUPTI=kind=none run none "$KC" profile --top 3 -- "$APP" --kernels 1000
[ "$RC" = 2 ] && grep -q 'loop_ms' "$WORK/none.out"
check "KERNCAP_PROFILE_CUPTI=kind=none (no kernels)" "exit $RC" $?

summary

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
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_required
BUILD=$(cd "$BUILD" && pwd) || exit 1
KC=$BUILD/bin/kerncap
APP=$BUILD/bench/profile_overhead_app
for f in "$KC" "$APP"; do
  [ -x "$f" ] || { echo "missing $f (build it: cmake --build $BUILD)"; exit 1; }
done
if [ -n "${OUT:-}" ]; then
  W=$OUT/overhead-e2e && rm -rf "$W" && mkdir -p "$W"
else
  W=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-overhead-e2e.XXXXXX") && trap 'rm -rf "$W"' EXIT
fi
PASS=0 FAIL=0
pass() { PASS=$((PASS + 1)); printf 'PASS  %-40s %s\n' "$1" "${2:-}"; }
fail() {
  FAIL=$((FAIL + 1))
  printf 'FAIL  %-40s %s\n' "$1" "${2:-}"
  [ -n "${LAST:-}" ] && [ -f "$W/$LAST.err" ] && tail -n 8 "$W/$LAST.err" | sed 's/^/        | /'
}
run() {
  LAST=$1
  shift
  timeout -k 5 300 "$@" >"$W/$LAST.out" 2>"$W/$LAST.err"
  RC=$?
}
# verdict NAME PYTHON-EXPR FILE...: PASS when the expression (over j = the JSON files, in order) is true.
verdict() {
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
  ); then pass "$name"; else fail "$name" "$why"; fi
}

# --- capture mode: in-app records near the target only
run cap_far "$KC" extract tiny_kernel --dispatch 5000 -o "$W/cap_far" --force -- "$APP" --kernels 6000
if [ "$RC" = 0 ] && "$KC" info "$W/cap_far" --json >"$W/cap_far.json" 2>"$W/cap_far_info.err"; then
  verdict "capture far dispatch: window records" \
    'j[0]["in_app_samples"] >= 256 and 1 <= j[0]["in_app_launches"] <= 1025' "$W/cap_far.json"
else
  fail "capture far dispatch: window records" "extract exit $RC"
fi
run cap_near "$KC" extract tiny_kernel --dispatch 10 -o "$W/cap_near" --force -- "$APP" --kernels 100
if [ "$RC" = 0 ] && "$KC" info "$W/cap_near" --json >"$W/cap_near.json" 2>"$W/cap_near_info.err"; then
  verdict "capture near dispatch: every launch" 'j[0]["in_app_launches"] == 11' "$W/cap_near.json"
else
  fail "capture near dispatch: every launch" "extract exit $RC"
fi

# --- profile --sample: exact counts, sampled times
N=60000
run exact "$KC" profile --sample 1 --top 3 -o "$W/exact.json" -- "$APP" --kernels $N
[ "$RC" = 0 ] || fail "exact profile" "exit $RC"
run sampled "$KC" profile --sample 10 --top 3 -o "$W/sampled.json" -- "$APP" --kernels $N
if [ "$RC" = 0 ]; then
  verdict "sample: calls exact" "kern(j[0])['calls'] == $N == kern(j[1])['calls']" "$W/sampled.json" "$W/exact.json"
  verdict "sample: dispatch list exact" \
    "kern(j[0])['extract']['processes'][0]['dispatch'] == list(range($N)) == kern(j[1])['extract']['processes'][0]['dispatch']" \
    "$W/sampled.json" "$W/exact.json"
  verdict "sample: estimated, a sample timed" \
    "kern(j[0])['estimated'] and 10000 <= kern(j[0])['samples'] < $N and j[0]['totals']['estimated'] and j[0]['processes'][0]['sample_period'] == 10" \
    "$W/sampled.json"
  verdict "sample: average within 25% of exact" \
    "abs(kern(j[0])['avg_ns'] - kern(j[1])['avg_ns']) <= 0.25 * kern(j[1])['avg_ns']" "$W/sampled.json" "$W/exact.json"
  if grep -q '~' "$W/sampled.out"; then pass "sample: table marks estimates"; else LAST=sampled fail "sample: table marks estimates"; fi
  verdict "exact: --sample 1 times every launch" \
    "kern(j[0])['samples'] == $N and not kern(j[0])['estimated']" "$W/exact.json"
else
  fail "sampled profile" "exit $RC"
fi
# The default is sampled timing with N = 10.
run default "$KC" profile --top 3 -o "$W/default.json" -- "$APP" --kernels $N
if [ "$RC" = 0 ]; then
  verdict "default: sampled, one in 10, calls exact" \
    "j[0]['processes'][0]['sample_period'] == 10 and kern(j[0])['estimated'] and kern(j[0])['calls'] == $N" \
    "$W/default.json"
else
  fail "default profile" "exit $RC"
fi
run small "$KC" profile --sample 10 --top 3 -o "$W/small.json" -- "$APP" --kernels 5000
if [ "$RC" = 0 ]; then
  verdict "sample: below the threshold exact" \
    "kern(j[0])['calls'] == kern(j[0])['samples'] == 5000 and not kern(j[0])['estimated']" "$W/small.json"
else
  fail "small sampled profile" "exit $RC"
fi

# --- CUPTI variants still see every launch
for v in kind=kernel device_buffer=32M,pool_limit=1000 per_thread=0 memory=0; do
  LAST=variant
  KERNCAP_PROFILE_CUPTI=$v timeout -k 5 300 "$KC" profile --sample 1 --top 3 -o "$W/variant.json" -- "$APP" --kernels 20000 \
    >"$W/variant.out" 2>"$W/variant.err"
  RC=$?
  if [ "$RC" = 0 ]; then
    verdict "KERNCAP_PROFILE_CUPTI=$v" "kern(j[0])['calls'] == 20000" "$W/variant.json"
  else
    fail "KERNCAP_PROFILE_CUPTI=$v" "exit $RC"
  fi
done
LAST=none
KERNCAP_PROFILE_CUPTI=kind=none timeout -k 5 300 "$KC" profile --top 3 -- "$APP" --kernels 1000 >"$W/none.out" 2>"$W/none.err"
RC=$?
if [ "$RC" = 2 ] && grep -q 'loop_ms' "$W/none.out"; then pass "KERNCAP_PROFILE_CUPTI=kind=none (no kernels)"; else fail "KERNCAP_PROFILE_CUPTI=kind=none (no kernels)" "exit $RC"; fi

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]

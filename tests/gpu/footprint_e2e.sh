#!/usr/bin/env bash
# GPU suite for `kerncap footprint`: captures example applications, measures their
# footprints and checks the byte counts exactly against what each kernel's source says it
# touches (expectations per case below; data-dependent ones are computed from the
# capture's own BEFORE bytes), that nothing escaped, and what it cost. Also: the cached
# footprint is reused, a kernel that faults under instrumentation and a missing sanitizer
# library give clear errors. Prints one table row per case and "N passed, N failed".
# Exit 0 all passed, 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/footprint_e2e.sh BUILD_DIR
#
# Environment: OUT (work files and logs under it), KERNCAP_GPU_KEEP=1 (keep captures),
# KERNCAP_GPU_TIMEOUT (per-command limit, default 120 s).
set -u -o pipefail
# Chunks stored raw, so check.py can read BEFORE bytes without a zstd module.
export KERNCAP_ZSTD_LEVEL=0

BUILD=${1:?usage: tests/gpu/footprint_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-120}
for f in "$KC" "$EX/vector_add" "$EX/accumulate" "$EX/globals" "$EX/struct_ptrs"; do
  [ -x "$f" ] || { echo "missing $f (build kerncap and its examples first)"; exit 1; }
done
if [ ! -f "$BUILD/lib/libsanitizer-public.so" ]; then
  echo "FAILED: $BUILD/lib/libsanitizer-public.so is missing: this build has no footprint support"
  echo "(run scripts/install-deps.sh, reconfigure, rebuild; see docs/footprint.md)"
  exit 1
fi
gpu_work_dir footprint
KEEP_FAILED=1  # cleanup: keep the captures and the log of a failed run
trap cleanup EXIT
LOG=$WORK/log.txt   # run (lib.sh): each command and its output there
VERDICT_STYLE=rows  # verdict: one row per case into $ROWS: case | result | measured | problems
echo "footprint suite: work in $WORK"

# check.py CASE CAPTURE_DIR FOOTPRINT_JSON: prints "ok ..." or "FAIL ..." lines, then one
# "row <regions summary>" line.
cat >"$WORK/check.py" <<'PY'
import array, json, struct, sys

case, cap, fp_path = sys.argv[1:4]
m = json.load(open(f"{cap}/manifest.json"))
fp = json.load(open(fp_path))
params = open(f"{cap}/{m['params']['file']}", "rb").read()
slots = m["params"]["slots"]
regions = {int(r["base"], 16): r for r in m["regions"]}
by_id = {r["id"]: r for r in fp["regions"]}
fails = []

def ok(cond, what):
    if not cond:
        fails.append(what)

def ptr(slot, extra=0):
    return struct.unpack_from("<Q", params, slots[slot]["offset"] + extra)[0]

def region_at(addr):
    r = regions.get(addr)
    if r is None:
        fails.append(f"no captured region starts at {addr:#x}")
        return None
    return by_id[r["id"]]

def global_named(name):
    for r in m["regions"]:
        if r.get("global") == name:
            return by_id[r["id"]]
    fails.append(f"no module global {name} in the capture")
    return None

def expect(r, name, read=None, written=None, rbw=None, wo=None):
    if r is None:
        return
    got = dict(read=r["read_bytes"], written=r["written_bytes"], rbw=r["rbw_bytes"], wo=r["write_only_bytes"])
    for k, v in dict(read=read, written=written, rbw=rbw, wo=wo).items():
        if v is not None and got[k] != v:
            fails.append(f"{name}: {k} {got[k]} B, expected {v} B")

def before(r):  # the BEFORE bytes of footprint region r, as floats
    x = next(x for x in m["regions"] if x["id"] == r["id"])
    if "file" in x:  # format versions 1 and 2
        data = open(f"{cap}/{x['file']}", "rb").read()
    else:  # version 3: chunks, raw in this suite (KERNCAP_ZSTD_LEVEL=0 below)
        data = b"".join(open(f"{cap}/chunks/{h}.raw", "rb").read() for h, n, z in x["chunks"])
    full, at = bytearray(x["size"]), 0
    for off, size in x.get("stored", [[0, x["size"]]]):
        full[off:off + size] = data[at:at + size]
        at += size
    return array.array("f", bytes(full))

def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]

touched = set()
def mark(*rs):
    for r in rs:
        if r is not None:
            touched.add(r["id"])

if case == "vector_add":
    n = struct.unpack_from("<i", params, slots[3]["offset"])[0]
    a, b, c = (region_at(ptr(i)) for i in range(3))
    expect(a, "a", read=4 * n, written=0, rbw=4 * n, wo=0)
    expect(b, "b", read=4 * n, written=0, rbw=4 * n, wo=0)
    expect(c, "c", read=0, written=4 * n, rbw=0, wo=4 * n)
    ok(fp["accesses"] == 3 * n, f"accesses {fp['accesses']}, expected 3n = {3 * n}")
    mark(a, b, c)
elif case == "accumulate":
    n = struct.unpack_from("<i", params, slots[3]["offset"])[0]
    c, a, b = (region_at(ptr(i)) for i in range(3))
    expect(c, "c (in place)", read=4 * n, written=4 * n, rbw=4 * n, wo=0)
    expect(a, "a", read=4 * n, written=0, rbw=4 * n, wo=0)
    expect(b, "b", read=4 * n, written=0, rbw=4 * n, wo=0)
    ok(fp["accesses"] == 4 * n, f"accesses {fp['accesses']}, expected 4n = {4 * n}")
    mark(a, b, c)
elif case == "globals":
    n = struct.unpack_from("<i", params, slots[2]["offset"])[0]
    x, y = region_at(ptr(0)), region_at(ptr(1))
    expect(x, "x", read=4 * n, written=0, rbw=4 * n, wo=0)
    expect(y, "y", read=0, written=4 * n, rbw=0, wo=4 * n)
    bias, calls, hist, poly = (global_named(g) for g in ("d_bias", "d_calls", "d_hist", "c_poly"))
    expect(bias, "d_bias", read=4, written=0, rbw=4, wo=0)
    expect(calls, "d_calls (atomicAdd)", read=4, written=4, rbw=4, wo=0)
    if hist:
        h = hist["written_bytes"]
        ok(0 < h <= 128 and h % 4 == 0, f"d_hist written {h} B, expected 4..128 in whole ints")
        expect(hist, "d_hist (atomicAdd)", read=h, rbw=h, wo=0)
    # __constant__ data is read through the constant cache, not global loads.
    expect(poly, "c_poly (__constant__)", written=0)
    ok(fp["accesses"] == 4 * n + 1, f"accesses {fp['accesses']}, expected 4n + 1 = {4 * n + 1}")
    mark(x, y, bias, calls, hist, poly)
elif case == "struct_ptrs":
    px, py, pvx, pvy, pb = (ptr(0, 8 * k) for k in range(5))
    n, dt = struct.unpack_from("<if", params, slots[0]["offset"] + 40)
    x, y, vx, vy, bounces = (region_at(p) for p in (px, py, pvx, pvy, pb))
    expect(x, "x", read=4 * n, written=4 * n, rbw=4 * n, wo=0)
    expect(y, "y", read=4 * n, written=4 * n, rbw=4 * n, wo=0)
    if None not in (x, y, vx, vy):
        X, Y, VX, VY = (before(r) for r in (x, y, vx, vy))
        # dt = 0.25: the products are exact, so float32 rounding of one sum is all there is.
        bx = [i for i in range(n) if not (0.0 <= f32(X[i] + f32(VX[i] * dt)) <= 1.0)]
        by = [i for i in range(n) if not (0.0 <= f32(Y[i] + f32(VY[i] * dt)) <= 1.0)]
        expect(vx, "vx", read=4 * n, written=4 * len(bx), rbw=4 * n, wo=0)
        expect(vy, "vy", read=4 * n, written=4 * len(by), rbw=4 * n, wo=0)
        hb = 4 * len({i % 16 for i in bx})
        expect(bounces, "bounces (atomicAdd)", read=hb, written=hb, rbw=hb, wo=0)
        # (no exact access count: whether vy[i] is loaded again after the stores to vx and
        # the atomic is the compiler's choice; the byte sets do not depend on it)
    mark(x, y, vx, vy, bounces)

for r in fp["regions"]:
    if r["id"] not in touched:
        expect(r, f"untouched region {r['id']}", read=0, written=0, rbw=0)
ok(fp["escape_count"] == 0, f"{fp['escape_count']} escaped access(es): {fp['escapes'][:3]}")
ok(fp["seconds"] < 60, f"took {fp['seconds']:.1f} s")
for f in fails:
    print("FAIL", f)
w = sum(r["written_bytes"] for r in fp["regions"])
rd = sum(r["read_bytes"] for r in fp["regions"])
slow = f"{fp['instrumented_ms'] / fp['plain_ms']:.0f}x" if fp["plain_ms"] > 0 else "?"
print(f"row {len(fp['regions'])} regions, read {rd} B, written {w} B, {fp['accesses']} accesses, "
      f"escaped {fp['escape_count']}; instrumented {fp['instrumented_ms']:.3f} ms vs plain {fp['plain_ms']:.4f} ms "
      f"({slow}); {fp['seconds']:.1f} s in all")
PY

# case_result CASE STATUS MEASURED [PROBLEMS]: the case's verdict and row.
case_result() { verdict "$1" "$2" "$3 | ${4:-}"; }

# measure CASE PATTERN [extract flags] -- APP: extract, footprint --json, check.
measure() {
  local name=$1 pattern=$2 cap=$WORK/$1
  shift 2
  if ! run "$name-extract" "$KC" extract "$pattern" -o "$cap" "$@"; then
    case_result "$name" FAIL "extract failed: $(tail -n1 "$WORK/$name-extract.err")"
    return
  fi
  if ! run "$name-footprint" "$KC" footprint "$cap" --json; then
    case_result "$name" FAIL "footprint failed: $(grep -m1 error "$WORK/$name-footprint.err")"
    return
  fi
  python3 "$WORK/check.py" "$name" "$cap/capture" "$WORK/$name-footprint.out" >"$WORK/$name-check.txt" 2>&1
  local fails cols
  fails=$(grep '^FAIL' "$WORK/$name-check.txt" | sed 's/^FAIL //' | paste -sd ';' -)
  cols=$(grep '^row ' "$WORK/$name-check.txt" | cut -c5-)
  [ -n "$cols" ] || fails="${fails:-checker crashed: $(tail -n1 "$WORK/$name-check.txt")}"
  if [ -z "$fails" ]; then case_result "$name" PASS "$cols"; else case_result "$name" FAIL "${cols:--}" "$fails"; fi
}

measure vector_add vectorAdd -- "$EX/vector_add"
measure accumulate accumulate --dispatch 4 -- "$EX/accumulate"
measure globals polyEval --dispatch 1 -- "$EX/globals"
measure struct_ptrs stepParticles --dispatch 1 -- "$EX/struct_ptrs"

# The footprint is kept: a second run prints it without measuring.
if [ -f "$WORK/vector_add/capture/footprint.json" ]; then
  if run cached "$KC" footprint "$WORK/vector_add" && grep -q "measured earlier" "$WORK/cached.out"; then
    case_result cached PASS "second run reused capture/footprint.json"
  else
    case_result cached FAIL "second run did not reuse the footprint: $(head -n1 "$WORK/cached.out")"
  fi
fi

# A kernel that faults under instrumentation: vectorAdd with c pointing at unmapped memory.
if [ -d "$WORK/vector_add/capture" ]; then
  cp -r "$WORK/vector_add" "$WORK/fault"
  rm -f "$WORK/fault/capture/footprint."*
  python3 - "$WORK/fault/capture" <<'PY'
import json, struct, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
p = bytearray(open(d + "/" + m["params"]["file"], "rb").read())
struct.pack_into("<Q", p, m["params"]["slots"][2]["offset"], 0x1000)
open(d + "/" + m["params"]["file"], "wb").write(p)
PY
  run fault "$KC" footprint "$WORK/fault"
  rc=$?
  if [ $rc = 3 ] && grep -q "faulted under footprint instrumentation" "$WORK/fault.err"; then
    case_result fault PASS "exit 3: $(grep -m1 -o 'faulted under footprint instrumentation' "$WORK/fault.err")"
  else
    case_result fault FAIL "exit $rc: $(grep -m1 error "$WORK/fault.err")"
  fi
fi

run nolib "$KC" footprint "$WORK/vector_add" --force --sanitizer-lib /nonexistent/libsanitizer-public.so
rc=$?
if [ $rc = 2 ] && grep -q "footprint needs libsanitizer-public.so" "$WORK/nolib.err"; then
  case_result missing_library PASS "exit 2: footprint needs libsanitizer-public.so"
else
  case_result missing_library FAIL "exit $rc: $(head -n1 "$WORK/nolib.err")"
fi

table "case | result | measured | problems"
echo
summary "(log: $LOG)"

#!/usr/bin/env bash
# The application<->CLI contracts on a real GPU: the events file's first line carries this
# build's tool and protocol versions, CaptureWriter leaves capture/ and no partial
# directory, the published layout opens, and --force keeps what kerncap did not write.
# Prints one PASS/FAIL line per check, a table and "N passed, N failed".
# Usage: tests/gpu/contracts_e2e.sh BUILD_DIR. Exit 0 passed, 1 failed, 77 skipped (no GPU).
set -u
BUILD=${1:-build}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
APP=$EX/vector_add
[ -x "$KC" ] && [ -x "$APP" ] || { echo "FAIL: build $KC and $APP first"; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-contracts.XXXXXX") || exit 1
trap cleanup EXIT

OUT=$WORK/vadd
timeout 120 "$KC" extract vectorAdd -q -o "$OUT" -- "$APP" >"$WORK/extract.log" 2>&1
rc=$?
check "extract succeeds" "exit $rc" $rc
[ -f "$OUT/capture/manifest.json" ]
check "capture/ published" "capture/manifest.json" $?
! ls -d "$OUT"/capture.partial-* >/dev/null 2>&1
check "no partial directory left" "no capture.partial-*" $?
timeout 60 "$KC" info "$OUT" >/dev/null
rc=$?
check "kerncap info opens it" "exit $rc" $rc
proto=$("$KC" env --json | json_get - protocol)
first=$(head -n1 "$OUT"/.kerncap/events-*.jsonl | grep -m1 '"event"')
python3 -c 'import json,sys; e=json.loads(sys.argv[1]); assert e["event"]=="start" and e["protocol"]==int(sys.argv[2]) and e["tool"]' \
  "$first" "$proto"
check "first event is start with protocol $proto" "${first:0:100}" $?
echo notes >"$OUT/notes.txt"
timeout 120 "$KC" extract vectorAdd -q --force -o "$OUT" -- "$APP" >>"$WORK/extract.log" 2>&1
[ -f "$OUT/capture/manifest.json" ]
check "--force recaptures" "capture/manifest.json" $?
[ -f "$OUT/notes.txt" ]
check "--force keeps files kerncap did not write" "notes.txt" $?
timeout 120 "$KC" extract noSuchKernel -q -o "$WORK/none" -- "$APP" >"$WORK/none.log" 2>&1
closest=$(grep -m1 "Closest names:" "$WORK/none.log")
[ -n "$closest" ]
check "a missing kernel is diagnosed with the closest names" "${closest:0:100}" $?

[ "$failed" -eq 0 ] || { echo "--- extract log"; tail -n 30 "$WORK/extract.log"; }
summary

#!/usr/bin/env bash
# The application<->CLI contracts on a real GPU: the events file's first line carries this
# build's tool and protocol versions, CaptureWriter leaves capture/ and no partial
# directory, the published layout opens, and --force keeps what kerncap did not write.
# Usage: tests/gpu/contracts_e2e.sh BUILD_DIR. Exit 0 passed, 1 failed, 77 skipped (no GPU).
set -u
BUILD=$(cd "${1:-build}" && pwd)
KC=$BUILD/bin/kerncap
APP=$BUILD/examples/vector_add
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_required
[ -x "$KC" ] && [ -x "$APP" ] || { echo "FAIL: build $KC and $APP first"; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-contracts.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fails=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi; }

OUT=$WORK/vadd
timeout 120 "$KC" extract vectorAdd -q -o "$OUT" -- "$APP" >"$WORK/extract.log" 2>&1
rc=$?
check "extract succeeds" '[ $rc -eq 0 ]'
check "capture/ published" '[ -f "$OUT/capture/manifest.json" ]'
check "no partial directory left" '! ls -d "$OUT"/capture.partial-* >/dev/null 2>&1'
check "kerncap info opens it" 'timeout 60 "$KC" info "$OUT" >/dev/null'
proto=$("$KC" env --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["protocol"])')
first=$(head -n1 "$OUT"/.kerncap/events-*.jsonl | grep -m1 '"event"')
check "first event is start with protocol $proto" \
  "python3 -c 'import json,sys; e=json.loads(sys.argv[1]); assert e[\"event\"]==\"start\" and e[\"protocol\"]==$proto and e[\"tool\"]' '$first'"
echo notes >"$OUT/notes.txt"
timeout 120 "$KC" extract vectorAdd -q --force -o "$OUT" -- "$APP" >>"$WORK/extract.log" 2>&1
check "--force recaptures" '[ -f "$OUT/capture/manifest.json" ]'
check "--force keeps files kerncap did not write" '[ -f "$OUT/notes.txt" ]'
timeout 120 "$KC" extract noSuchKernel -q -o "$WORK/none" -- "$APP" >"$WORK/none.log" 2>&1
check "a missing kernel is diagnosed with the closest names" 'grep -q "Closest names:" "$WORK/none.log"'

[ $fails -eq 0 ] || { echo "--- extract log"; tail -n 30 "$WORK/extract.log"; }
echo "$((8 - fails)) passed, $fails failed"
[ $fails -eq 0 ]

#!/usr/bin/env bash
# GPU suite for the chunk store and `kerncap prune` (docs/capture.md): two captures of one
# application into one shared store (--store) keep its weights once; such a capture replays
# only with the store named; a capture is compressed; prune refuses without a footprint,
# drops what the launch never touches and the capture still validates PASS, reporting that
# it was pruned; pruning a capture in a shared store deletes nothing from the store.
# Prints one PASS/FAIL line per case, a table and "N passed, N failed".
# Exit 0 all passed, 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/store_e2e.sh BUILD_DIR
#
# Environment: OUT (work files and logs under it), KERNCAP_GPU_KEEP=1 (keep them),
# KERNCAP_GPU_TIMEOUT (per-command limit, default 180 s).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/store_e2e.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-180}
[ -x "$KC" ] || { echo "missing $KC (build kerncap first)"; exit 1; }
gpu_work_dir store
trap cleanup EXIT
unset KERNCAP_STORE
echo "store suite: work in $WORK"

bytes() { du -sb "$1" 2>/dev/null | awk '{print $1}'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

APP=$WORK/store_app
if ! "$NVCC" -O2 -o "$APP" "$HERE/store_app/store_app.cu" >"$WORK/nvcc.log" 2>&1; then
  verdict build FAIL "nvcc failed (log $WORK/nvcc.log)"; tail -5 "$WORK/nvcc.log"
  summary; exit
fi
STORE=$WORK/store

# 1. Two captures (dispatch 0 and 1) into one store: the second adds little.
kc extract store_axpy --store "$STORE" -o "$WORK/a" -q -- "$APP" >"$WORK/a.log" 2>&1
rc_a=$?
s1=$(bytes "$STORE")
kc extract store_axpy --dispatch 1 --store "$STORE" -o "$WORK/b" -q -- "$APP" >"$WORK/b.log" 2>&1
rc_b=$?
s2=$(bytes "$STORE")
grow=$(( ${s2:-0} - ${s1:-0} ))
ok=1
[ $rc_a = 0 ] && [ $rc_b = 0 ] && [ ! -e "$WORK/a/capture/chunks" ] && [ "${s1:-0}" -gt $((8 << 20)) ] &&
  [ "$grow" -lt $((4 << 20)) ] && ok=0
check store_dedup "store $(mib "${s1:-0}") after the first capture, +$(mib "$grow") after the second (weights kept once)" $ok

# 2. info without the store says where the chunks are; with it, --verify reads them all.
info=$(kc info "$WORK/a" 2>&1); rc=$?
ok=1; [ $rc = 0 ] && grep -q "shared chunk store" <<<"$info" && grep -q "^chunks " <<<"$info" && ok=0
check store_info "$(grep -m1 '^chunks ' <<<"$info" | cut -c1-110)" $ok
kc info "$WORK/a" --store "$STORE" --verify >"$WORK/verify.log" 2>&1
check store_verify "info --store --verify exit $?" $?

# 3. Replay needs the store named; with it (flag or KERNCAP_STORE), validation PASSes.
out=$(kc validate "$WORK/a" 2>&1); rc=$?
ok=1; [ $rc = 2 ] && grep -q -- "--store DIR" <<<"$out" && ok=0
check store_required "validate without --store: exit $rc" $ok
out=$(kc validate "$WORK/a" --store "$STORE" 2>&1)
ok=1; grep -q '^Result: PASS' <<<"$out" && ok=0
check store_validate_a "$(grep '^Result:' <<<"$out" | cut -c1-80)" $ok
out=$(KERNCAP_STORE="$STORE" kc validate "$WORK/b" 2>&1)
ok=1; grep -q '^Result: PASS' <<<"$out" && ok=0
check store_validate_b_env "$(grep '^Result:' <<<"$out" | cut -c1-80)" $ok

# 4. A local capture: compressed chunks under OUT/capture/chunks.
kc extract store_axpy -o "$WORK/c" -q -- "$APP" >"$WORK/c.log" 2>&1
rc=$?
c1=$(bytes "$WORK/c/capture")
info=$(kc info "$WORK/c" 2>&1)
ok=1; [ $rc = 0 ] && [ -d "$WORK/c/capture/chunks" ] && grep -q "^chunks " <<<"$info" && ok=0
check local_chunks "capture $(mib "${c1:-0}"): $(grep -m1 '^chunks ' <<<"$info" | cut -c12-120)" $ok

# 5. Prune: refused without a footprint, a dry run changes nothing, then the untouched 63.5 MiB go.
out=$(kc prune "$WORK/c" 2>&1); rc=$?
ok=1; [ $rc = 2 ] && grep -q "kerncap footprint OUT" <<<"$out" && ok=0
check prune_needs_footprint "exit $rc" $ok
kc footprint "$WORK/c" -q >"$WORK/c-footprint.log" 2>&1
rc_fp=$?
c_fp=$(bytes "$WORK/c/capture")  # the footprint adds its own file: compare against this size
out=$(kc prune "$WORK/c" --dry-run 2>&1); rc=$?
ok=1; [ $rc_fp = 0 ] && [ $rc = 0 ] && grep -q "would prune" <<<"$out" && [ "$(bytes "$WORK/c/capture")" = "$c_fp" ] && ok=0
check prune_dry_run "$(grep 'would prune' <<<"$out" | cut -c1-100)" $ok
out=$(kc prune "$WORK/c" 2>&1); rc=$?
c2=$(bytes "$WORK/c/capture")
echo "$out" >"$WORK/c-prune.log"
ok=1; [ $rc = 0 ] && [ "${c2:-0}" -lt $((8 << 20)) ] && [ "${c2:-0}" -lt "${c1:-0}" ] && ok=0
check prune_reclaims "capture $(mib "${c1:-0}") -> $(mib "${c2:-0}")" $ok
out=$(kc validate "$WORK/c" 2>&1)
ok=1; grep -q '^Result: PASS' <<<"$out" && grep -q "pruned:" <<<"$out" && ok=0
check prune_validates "$(grep '^Result:' <<<"$out" | cut -c1-60); $(grep -m1 -o 'pruned: [^(]*' <<<"$out")" $ok
out=$(kc validate "$WORK/c" --footprint require 2>&1)
ok=1; grep -q '^Result: PASS' <<<"$out" && ok=0
check prune_validates_strong "$(grep '^Result:' <<<"$out" | cut -c1-80)" $ok

# 6. Pruning a capture in a shared store: the store loses nothing, the capture still PASSes.
files_before=$(find "$STORE" -type f | wc -l)
kc footprint "$WORK/a" --store "$STORE" -q >"$WORK/a-footprint.log" 2>&1 &&
  kc prune "$WORK/a" --store "$STORE" >"$WORK/a-prune.log" 2>&1
rc=$?
files_after=$(find "$STORE" -type f | wc -l)
out=$(kc validate "$WORK/a" --store "$STORE" 2>&1)
ok=1; [ $rc = 0 ] && [ "$files_after" -ge "$files_before" ] && grep -q '^Result: PASS' <<<"$out" && ok=0
check prune_shared_store "store files $files_before -> $files_after; $(grep '^Result:' <<<"$out" | cut -c1-50)" $ok
out=$(kc validate "$WORK/b" --store "$STORE" 2>&1)
ok=1; grep -q '^Result: PASS' <<<"$out" && ok=0
check store_other_capture_intact "b after pruning a: $(grep '^Result:' <<<"$out" | cut -c1-50)" $ok

summary

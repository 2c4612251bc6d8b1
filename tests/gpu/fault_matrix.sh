#!/usr/bin/env bash
# Issue 38's fault matrix on the GPU: every fault a capture can meet, one row each, with the
# outcome it must have (a clear error naming what happened; nothing half-written that a reader
# could take for complete; nothing lost from a shared store; no application left running).
# The application is tests/gpu/fault_apps/fault_app.cu (built here with nvcc). Rows:
#
#   disk_*      a small file system (tmpfs, when this user may mount one; else skipped) or
#               RLIMIT_FSIZE with SIGXFSZ ignored (writes fail with EFBIG as a full disk's fail
#               with ENOSPC): during BEFORE, during AFTER, chunk writes into a shared store
#   app_*       SIGKILL / SIGTERM of the application during BEFORE and during AFTER
#   extract_*   SIGTERM, SIGINT (to kerncap alone, and to its process group as a terminal's
#               Ctrl-C sends it) and SIGKILL of `kerncap extract` during BEFORE
#   crash_*     the application aborts, segfaults, or another kernel faults, before the target
#               launch and (with --continue) after it; the target launch itself faults
#   replay_oom  replay of a capture larger than the GPU memory left free by another process
#   foreign_*   a capture from another GPU: its manifest edited to another architecture (refused,
#               naming both), to another model of this architecture under another driver (judged,
#               the device line naming both)
#   chunk_deleted_*  a store chunk deleted while `validate` (in process, and through `serve`) reads it
#   disk_footprint   `kerncap footprint --force` whose files may not grow past 1 KiB (RLIMIT_FSIZE);
#               disk_footprint_fs: on a full tmpfs (skipped without mount rights)
#   footprint_sigkill  `kerncap footprint --force` SIGKILLed mid-measurement and inside its write
#   disk_prune_store   `kerncap prune` of a capture sharing its store with another, RLIMIT_FSIZE 1 KiB
#   prune_sigkill_store  the same prune SIGKILLed at moments (the other capture untouched)
#   prune_race  two `prune` and one `validate` of one capture at once; prune_vs_serve: prune
#               while a server holds the capture open
#
# Prints one line per row, then a table | row | expected | measured | result | s | and
# "N passed, N failed". Exit 0 all passed, 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/fault_matrix.sh BUILD_DIR
#
# Environment: OUT (work files and logs under it), KERNCAP_GPU_KEEP=1 (keep them),
# KERNCAP_GPU_TIMEOUT (per-command limit, default 60 s), KERNCAP_GPU_CASES (rows to run, an
# extended regex), KERNCAP_FAULT_BIG_MIB (BEFORE/AFTER of the kill rows, default 3072).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/fault_matrix.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
gpu_build "$BUILD"
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-60}
BIG=${KERNCAP_FAULT_BIG_MIB:-3072}
[ -x "$KC" ] || { echo "missing $KC (build kerncap first)"; exit 1; }
gpu_work_dir faults
unset KERNCAP_STORE
MOUNTS=() BG=()
finish() {
  local p m
  for p in "${BG[@]}"; do kill -9 "$p" 2>/dev/null; done
  for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null; done
  cleanup
}
trap finish EXIT
echo "fault matrix: work in $WORK"

APP=$WORK/fault_app
if ! "$NVCC" -O2 -arch=native -o "$APP" "$HERE/fault_apps/fault_app.cu" >"$WORK/nvcc.log" 2>&1; then
  verdict build FAIL "nvcc failed: $(tail -3 "$WORK/nvcc.log" | tr '\n' ' ')"
  summary
  exit
fi

# ---- helpers ------------------------------------------------------------------------------------

# fm_row NAME EXPECTED MEASURED PROBLEMS: one row of the table, PASS when PROBLEMS is empty.
fm_row() {
  local st
  st=$(pass_unless "$4")
  tally "$st"
  row "$1 | $2 | $3 | $st | $(since "$T_ROW")"
  echo "[$st] $1: $3"
  if [ "$st" != PASS ]; then
    local f
    for f in "$D"/*.log "$D"/*/*.log; do
      [ -f "$f" ] && tail -n 4 "$f" | cut -c1-200 | sed "s|^|        ${f#"$D"/}: |"
    done
  fi
}
begin() { T_ROW=$(now); D=$WORK/$1; mkdir -p "$D"; P=""; }
fm_skip() { tally SKIP; row "$1 | - | $2 | SKIP | -"; echo "[SKIP] $1: $2"; }
problem() { P+="$*; "; }
# The fault_app processes alive now (the hog excepted).
apps_alive() { pgrep -x fault_app | grep -c -v -x "${HOG:-none}"; }
# app_gone: no fault_app left after 5 s (each one found is killed, and counted as a problem).
app_gone() {
  local i
  for ((i = 0; i < 50; i++)); do [ "$(apps_alive)" = 0 ] && return 0; sleep 0.1; done
  problem "the application was left running ($(pgrep -x fault_app | grep -v -x "${HOG:-none}" | tr '\n' ' '))"
  pgrep -x fault_app | grep -v -x "${HOG:-none}" | xargs -r kill -9
  return 1
}
partials() { find "$1" -maxdepth 1 -name 'capture.partial-*' 2>/dev/null | wc -l; }
# no_capture OUT: neither a capture nor a partial one under OUT, and no reader takes OUT for one.
no_capture() {
  [ -e "$1/capture/manifest.json" ] && problem "a capture was published"
  [ "$(partials "$1")" = 0 ] || problem "$(partials "$1") partial directory left"
  if kcx info "$1" >/dev/null 2>&1; then problem "kerncap info reads a capture"; fi
}
# The error line of an extract log (the first "kerncap: error" line, else the last line).
err_line() { { grep -m1 -i 'error' "$1" || tail -n1 "$1"; } 2>/dev/null | cut -c1-170 | tr '|' '/'; }
# wait_path GLOB [SECONDS]: until a path matches GLOB (default 60 s); false otherwise.
wait_path() {
  local i
  for ((i = 0; i < ${2:-60} * 50; i++)); do
    compgen -G "$1" >/dev/null && return 0
    sleep 0.02
  done
  return 1
}
# dfl CMD...: replaces the calling (sub)shell by CMD with SIGINT and SIGQUIT at their defaults,
# as from a terminal (a background job of a script starts with both ignored, and an ignored
# signal stays ignored in kerncap and its application). `dfl CMD &`: $! is CMD's pid.
dfl() {
  if env --default-signal=INT true 2>/dev/null; then
    exec env --default-signal=INT,QUIT "$@"
  else
    exec python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL); signal.signal(signal.SIGQUIT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
  fi
}
# start_extract OUT ARGS... -- APPARGS: kerncap extract fm_step in the background (EXP its pid,
# its output in OUT.log).
start_extract() {
  local out=$1
  shift
  dfl "$KC" extract fm_step -o "$out" "$@" >"$out.log" 2>&1 &
  EXP=$!
}
# wait_extract: its exit status in RC; after TIMEOUT seconds it and its application are killed
# (RC 124).
wait_extract() {
  local i
  for ((i = 0; i < TIMEOUT * 10; i++)); do
    kill -0 "$EXP" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$EXP" 2>/dev/null; then
    pkill -9 -P "$EXP"
    kill -9 "$EXP"
    wait "$EXP" 2>/dev/null
    RC=124
    problem "extract did not end in ${TIMEOUT}s"
    return
  fi
  wait "$EXP"
  RC=$?
}
# KC with the time limit.
kcx() { timeout -k 5 "$TIMEOUT" "$KC" "$@"; }
# app_pid: the fault_app below `kerncap extract` $EXP (a guard process sits between them: the
# application is kerncap's grandchild, or deeper under a --cmd shell).
app_pid() {
  local p q
  for p in $(pgrep -x fault_app); do
    q=$p
    while [ -n "$q" ] && [ "$q" -gt 1 ]; do
      q=$(ps -o ppid= -p "$q" 2>/dev/null | tr -d ' ')
      [ "$q" = "$EXP" ] && { echo "$p"; return; }
    done
  done
}
validate_word() { kcx validate "$@" 2>&1 | grep -m1 -o '^Result: [A-Z]*' | cut -c9-; }
# store_whole STORE: every file of the store is a chunk under its own name (no temporary).
store_whole() {
  local bad
  bad=$(find "$1" -type f | grep -v -E '/[0-9a-f]{32}\.(zst|raw)$' | head -n3)
  [ -z "$bad" ] || problem "store holds non-chunk files: $(tr '\n' ' ' <<<"$bad")"
}
tmpfs() {  # tmpfs DIR SIZE: a small file system at DIR (false when this user may not mount)
  mkdir -p "$1"
  mount -t tmpfs -o "size=$2" tmpfs "$1" 2>/dev/null || return 1
  MOUNTS+=("$1")
}

# ---- disk full ----------------------------------------------------------------------------------

if want -E disk_small_fs; then
  begin disk_small_fs
  if tmpfs "$D/fs" 32m; then
    start_extract "$D/fs/out" --dispatch 1 -- "$APP" ok 128 1
    wait_extract
    [ $RC = 0 ] && problem "extract succeeded"
    grep -q -i "needs up to .* of disk" "$D/fs/out.log" || problem "no disk-space message"
    no_capture "$D/fs/out"
    app_gone
    fm_row disk_small_fs "refused before writing memory, naming the space needed; nothing written" \
      "exit $RC: $(err_line "$D/fs/out.log")" "$P"
  else
    fm_skip disk_small_fs "cannot mount a tmpfs here"
  fi
fi

if want -E disk_before_chunks; then
  begin disk_before_chunks
  # RLIMIT_FSIZE 2 MiB, SIGXFSZ ignored: the first 4 MiB chunk of noise fails with EFBIG.
  (trap '' XFSZ; ulimit -f 2048; exec timeout -k 5 "$TIMEOUT" "$KC" extract fm_step --dispatch 1 -o "$D/out" -- "$APP" ok 256 1) >"$D/out.log" 2>&1
  RC=$?
  [ $RC = 0 ] && problem "extract succeeded"
  grep -q -i -E "too large|no space|disk" "$D/out.log" || problem "no write-failure message"
  no_capture "$D/out"
  [ -e "$D/out/capture.failed" ] || problem "no OUT/capture.failed"
  app_gone
  fm_row disk_before_chunks "error naming the failed write; no capture, no partial; capture.failed says why" \
    "exit $RC: $(err_line "$D/out.log")" "$P"
fi

if want -E disk_after; then
  begin disk_after
  if tmpfs "$D/fs" 96m; then
    # BEFORE about 1 MiB (Y is zero before dispatch 0), AFTER 160 MiB of noise: ENOSPC in AFTER.
    start_extract "$D/fs/out" --dispatch 0 -- "$APP" ok 1 160
    wait_extract
    [ $RC = 0 ] && problem "extract succeeded"
    grep -q -i -E "no space|disk" "$D/fs/out.log" || problem "no disk-full message"
    no_capture "$D/fs/out"
    app_gone
    left=$(du -sm "$D/fs" | cut -f1)
    [ "$left" -lt 8 ] || problem "$left MiB left on the file system"
    fm_row disk_after "error naming the full disk (ENOSPC) during AFTER; no capture, no partial, space given back" \
      "exit $RC: $(err_line "$D/fs/out.log"); ${left} MiB left on the fs" "$P"
  else
    fm_skip disk_after "cannot mount a tmpfs here"
  fi
fi

if want -E disk_store; then
  begin disk_store
  if tmpfs "$D/fs" 400m; then
    S=$D/fs/store
    kcx extract fm_step --dispatch 1 --store "$S" -o "$D/a" -- "$APP" ok 32 1 4 >"$D/a.log" 2>&1
    rc_a=$?
    [ $rc_a = 0 ] || problem "the first capture failed: $(err_line "$D/a.log")"
    # Two captures of 240 MiB each (other seeds: no chunk shared) at once: each alone passes the
    # space check (240 MiB + 64 MiB + 2 % of ~370 MiB free), together they fill the disk.
    timeout -k 5 "$TIMEOUT" "$KC" extract fm_step --dispatch 1 --store "$S" -o "$D/b" -- "$APP" ok 240 1 5 >"$D/b.log" 2>&1 &
    pb=$!
    timeout -k 5 "$TIMEOUT" "$KC" extract fm_step --dispatch 1 --store "$S" -o "$D/c" -- "$APP" ok 240 1 6 >"$D/c.log" 2>&1 &
    pc=$!
    wait $pb; rc_b=$?
    wait $pc; rc_c=$?
    m=""
    for x in b c; do
      rc=$([ $x = b ] && echo $rc_b || echo $rc_c)
      if [ "$rc" = 0 ]; then
        w=$(validate_word "$D/$x" --store "$S")
        [ "$w" = PASS ] || problem "$x captured but validates '$w'"
        m+="$x captured, validates $w; "
      else
        no_capture "$D/$x"
        m+="$x exit $rc: $(err_line "$D/$x.log" | cut -c1-90); "
      fi
    done
    [ $rc_b != 0 ] || [ $rc_c != 0 ] || m+="(both fit: the disk did not fill) "
    store_whole "$S"
    kcx info "$D/a" --store "$S" --verify >"$D/verify.log" 2>&1 || problem "the first capture's chunks no longer verify"
    w=$(validate_word "$D/a" --store "$S")
    [ "$w" = PASS ] || problem "the first capture validates '$w'"
    app_gone
    fm_row disk_store "each capture completes or fails naming the disk; the store holds only whole chunks; the earlier capture verifies and PASSes" \
      "${m}first capture: verify ok, $w" "$P"
  else
    fm_skip disk_store "cannot mount a tmpfs here"
  fi
fi

# ---- kills of the application -------------------------------------------------------------------

# kill_app NAME SIGNAL PHASE: the application killed with SIGNAL while kerncap writes BEFORE
# (a BIG MiB BEFORE) or AFTER (BIG MiB of AFTER, BEFORE tiny).
kill_app() {
  local name=$1 sig=$2 phase=$3 pid inside
  begin "$name"
  # The partial directory appears at the target launch, before BEFORE is written (seconds for
  # BIG MiB); after.bin when AFTER starts.
  if [ "$phase" = before ]; then
    start_extract "$D/out" --dispatch 1 -- "$APP" ok "$BIG" 1
    wait_path "$D/out/capture.partial-*" 30 && sleep 0.3
  else
    start_extract "$D/out" --dispatch 0 -- "$APP" ok 1 "$BIG"
    wait_path "$D/out/capture.partial-*/after.bin" 30
  fi
  pid=$(app_pid)
  inside=$(find "$D"/out/capture.partial-* -maxdepth 1 -mindepth 1 -printf '%f ' 2>/dev/null)
  [ -n "$pid" ] && kill "-$sig" "$pid"
  wait_extract
  [ -n "$pid" ] || problem "no application found to kill"
  [ $RC = 0 ] && problem "extract succeeded"
  grep -q "killed by signal" "$D/out.log" || problem "no 'killed by signal'"
  grep -q "target launch was reached" "$D/out.log" || problem "does not say the target launch was reached"
  no_capture "$D/out"
  app_gone
  fm_row "$name" "error: killed by SIG$sig after the target launch was reached, nothing incomplete kept; no partial" \
    "exit $RC: $(err_line "$D/out.log" | cut -c1-150) (partial held: ${inside:0:60})" "$P"
}
want -E app_sigkill_before && kill_app app_sigkill_before KILL before
want -E app_sigterm_before && kill_app app_sigterm_before TERM before
want -E app_sigkill_after && kill_app app_sigkill_after KILL after
want -E app_sigterm_after && kill_app app_sigterm_after TERM after

# ---- kills of kerncap extract -------------------------------------------------------------------

# kill_extract NAME SIGNAL [group]: kerncap extract itself gets SIGNAL during BEFORE (group: its
# whole process group, as a terminal's Ctrl-C; extract runs under setsid for that).
kill_extract() {
  local name=$1 sig=$2 group=${3:-} app
  begin "$name"
  if [ -n "$group" ]; then
    setsid env --default-signal=INT,QUIT "$KC" extract fm_step --dispatch 1 -o "$D/out" -- "$APP" ok "$BIG" 1 \
      >"$D/out.log" 2>&1 &
    EXP=$!
  else
    start_extract "$D/out" --dispatch 1 -- "$APP" ok "$BIG" 1
  fi
  wait_path "$D/out/capture.partial-*" 30 && sleep 0.3
  app=$(app_pid)
  if [ -n "$group" ]; then kill "-$sig" -- "-$EXP"; else kill "-$sig" "$EXP"; fi
  wait_extract
  [ -n "$app" ] || problem "no application found"
  app_gone
  if [ "$sig" = KILL ]; then
    [ -e "$D/out/capture/manifest.json" ] && problem "a capture was published"
    if kcx info "$D/out" >/dev/null 2>&1; then problem "kerncap info reads a capture"; fi
    left=$(partials "$D/out")
    # The next extract into OUT (--force) removes what the killed one left.
    kcx extract fm_step --dispatch 1 --force -o "$D/out" -- "$APP" ok 8 1 >"$D/again.log" 2>&1
    ra=$?
    [ $ra = 0 ] || problem "the next extract --force failed: $(err_line "$D/again.log")"
    [ "$(partials "$D/out")" = 0 ] || problem "the next extract left the old partial"
    fm_row "$name" "the application dies with kerncap (PR_SET_PDEATHSIG); no capture published; the next extract --force clears the partial" \
      "extract status $RC; application gone: $([ "$(apps_alive)" = 0 ] && echo yes || echo no); $left partial dir left (capture.partial-PID, no reader opens it); next extract --force exit $ra, $(partials "$D/out") partial" "$P"
  else
    [ $RC = 0 ] && problem "extract succeeded"
    grep -q -E "killed by signal|exited with code" "$D/out.log" || problem "does not say how the application ended"
    [ -z "$group" ] && { grep -q "passed it on" "$D/out.log" || problem "does not say the signal was passed on"; }
    no_capture "$D/out"
    fm_row "$name" "the application ends too (signal passed on); error says so; no capture, no partial" \
      "exit $RC: $(err_line "$D/out.log" | cut -c1-160)" "$P"
  fi
}
want -E extract_sigterm && kill_extract extract_sigterm TERM
want -E extract_sigint && kill_extract extract_sigint INT
want -E extract_ctrl_c_group && kill_extract extract_ctrl_c_group INT group
want -E extract_sigkill && kill_extract extract_sigkill KILL

# ---- the application crashes --------------------------------------------------------------------

# crash NAME MODE: the application crashes before dispatch 1 (the target): no capture, the
# error says how the application ended.
crash_before() {
  local name=$1 mode=$2 want_text=$3
  begin "$name"
  start_extract "$D/out" --dispatch 1 -- "$APP" "$mode" 8 1
  wait_extract
  [ $RC = 0 ] && problem "extract succeeded"
  grep -q -E "$want_text" "$D/out.log" || problem "no '$want_text' in the error"
  no_capture "$D/out"
  app_gone
  fm_row "$name" "error: $want_text, the target launch not captured; no capture, no partial" \
    "exit $RC: $(err_line "$D/out.log" | cut -c1-160)" "$P"
}
want -E crash_abort_before && crash_before crash_abort_before abort_before "signal 6"
want -E crash_segv_before && crash_before crash_segv_before segv_before "signal 11"
want -E crash_gpufault_before && crash_before crash_gpufault_before gpufault_before "work before the target launch failed.*(ILLEGAL|fault)"

# crash_after NAME MODE: with --continue, the application crashes after the target launch was
# captured: the capture is complete and validates.
crash_after() {
  local name=$1 mode=$2 w
  begin "$name"
  start_extract "$D/out" --dispatch 1 --continue -- "$APP" "$mode" 8 1
  wait_extract
  w=$(validate_word "$D/out")
  [ "$w" = PASS ] || problem "the capture validates '$w'"
  [ "$(partials "$D/out")" = 0 ] || problem "partial left"
  app_gone
  fm_row "$name" "the capture (made before the crash) is complete and validates PASS" \
    "extract exit $RC ($(grep -m1 -i -E 'signal|exited|crash|warn' "$D/out.log" | cut -c1-100 | tr '|' '/')); validate $w" "$P"
}
want -E crash_abort_after && crash_after crash_abort_after abort_after
want -E crash_segv_after && crash_after crash_segv_after segv_after
want -E crash_gpufault_after && crash_after crash_gpufault_after gpufault_after

if want -E crash_fault_in_target; then
  begin crash_fault_in_target
  start_extract "$D/out" --dispatch 1 -- "$APP" fault_in_target 8 1
  wait_extract
  [ $RC = 0 ] && problem "extract succeeded"
  grep -q -i -E "illegal|fault|exception" "$D/out.log" || problem "the error does not name the fault"
  grep -q "the target launch itself failed" "$D/out.log" || problem "the error does not say the target faulted"
  no_capture "$D/out"
  app_gone
  fm_row crash_fault_in_target "error naming the fault of the target launch; no capture (AFTER would be what a faulted launch left)" \
    "exit $RC: $(err_line "$D/out.log" | cut -c1-160)" "$P"
fi

# ---- a capture from another GPU -------------------------------------------------------------------

# The capture's manifest edited as another machine would have written it: another architecture
# (refused before any context, naming both), and another model of this architecture under
# another driver (replayed; the device line says what differs, as timings do not compare).
foreign_gpu() {  # NAME CC_MAJOR CC_MINOR MODEL DRIVER
  local name=$1
  begin "$name"
  if ! kcx extract fm_step --dispatch 0 -o "$D/src" -q -- "$APP" ok 1 1 >"$D/extract.log" 2>&1; then
    fm_row "$name" "-" "extract failed: $(err_line "$D/extract.log")" "extract failed"
    return 1
  fi
  cp -a "$D/src" "$D/edited"
  python3 - "$D/edited/capture/manifest.json" "$2" "$3" "$4" "$5" <<'PY' || problem "cannot edit the manifest"
import json, sys
p, major, minor, model, driver = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
m = json.load(open(p))
m["device"].update({"cc": [major, minor], "name": model, "driver_version": driver})
m["device"].pop("uuid", None)
json.dump(m, open(p, "w"), indent=1)
PY
  kcx validate "$D/edited" >"$D/validate.log" 2>&1
  RC=$?
  return 0
}
if want -E foreign_arch && foreign_gpu foreign_arch 8 0 "NVIDIA A100-SXM4-80GB" 12080; then
  [ $RC = 2 ] || problem "validate exit $RC, not 2"
  grep -q "taken on sm_80 (NVIDIA A100-SXM4-80GB)" "$D/validate.log" || problem "does not name the capture's architecture"
  grep -q "another architecture" "$D/validate.log" || problem "does not say this GPU is another architecture"
  fm_row foreign_arch "refused (exit 2) before any context, naming the capture's sm_80 GPU and this one's architecture" \
    "exit $RC: $(err_line "$D/validate.log")" "$P"
fi
SMM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
if want -E foreign_model_driver && foreign_gpu foreign_model_driver "${SMM%.*}" "${SMM#*.}" "NVIDIA H100 80GB HBM3" 12080; then
  [ "$(grep -m1 -o '^Result: [A-Z]*' "$D/validate.log")" = "Result: PASS" ] || problem "validate exit $RC without a PASS"
  grep -q "another model (NVIDIA H100 80GB HBM3)" "$D/validate.log" || problem "the device line does not name the captured model"
  grep -q "captured under driver 12.8" "$D/validate.log" || problem "the device line does not name the captured driver"
  fm_row foreign_model_driver "replayed and judged (PASS); the device line names the captured model and driver (timings do not compare)" \
    "exit $RC: $(grep -m1 -o 'captured on device.*' "$D/validate.log" | cut -c1-160 | tr '|' '/'); $(grep -m1 -o '^Result: [A-Z]*' "$D/validate.log")" "$P"
fi

# ---- replay with too little GPU memory; prune races ---------------------------------------------

L=$WORK/large
if want -E 'replay_oom|prune_race|prune_vs_serve'; then
  kcx extract fm_step --dispatch 1 -o "$L" -q -- "$APP" ok 2048 1 >"$WORK/large.log" 2>&1 ||
    echo "large capture failed: $(err_line "$WORK/large.log")"
fi

if want -E replay_oom; then
  begin replay_oom
  "$APP" hog 1024 >"$D/hog.out" 2>&1 &
  HOG=$!
  BG+=("$HOG")
  for ((i = 0; i < 600; i++)); do grep -q 'hog ready' "$D/hog.out" && break; sleep 0.1; done
  free=$(grep -o 'hog ready [0-9]*' "$D/hog.out" | awk '{print $3}')
  kcx validate "$L" >"$D/validate.log" 2>&1
  RC=$?
  kill -9 "$HOG" 2>/dev/null
  wait "$HOG" 2>/dev/null
  HOG=""
  [ "$RC" = 3 ] || problem "exit $RC, expected 3 (device)"
  grep -q -E "needs .* of device memory" "$D/validate.log" || problem "the error does not say what the capture needs"
  w=$(validate_word "$L")
  [ "$w" = PASS ] || problem "after the other process is gone: '$w'"
  fm_row replay_oom "exit 3 naming the memory it needs and what is free; no crash; PASS once memory is free" \
    "${free:-?} MiB free for a 2 GiB capture: exit $RC: $(err_line "$D/validate.log" | cut -c1-150); then $w" "$P"
fi

if want -E 'prune_race|prune_vs_serve'; then
  kcx footprint "$L" -q >"$WORK/footprint.log" 2>&1 || echo "footprint failed: $(err_line "$WORK/footprint.log")"
fi

if want -E prune_vs_serve; then
  begin prune_vs_serve
  "$KC" serve "$L" --idle-timeout 300 >"$D/serve.out" 2>"$D/serve.err" &
  SRV=$!
  BG+=("$SRV")
  for ((i = 0; i < 600; i++)); do grep -q ' ready (pid ' "$D/serve.out" && break; sleep 0.1; done
  before=$(md5sum "$L/capture/manifest.json" | cut -c1-32)
  kcx prune "$L" >"$D/prune.log" 2>&1
  RC=$?
  after=$(md5sum "$L/capture/manifest.json" | cut -c1-32)
  w=$(validate_word "$L")
  kcx serve --stop "$L" >/dev/null 2>&1
  wait "$SRV" 2>/dev/null
  [ "$RC" = 2 ] || problem "prune exit $RC, expected 2"
  grep -q "open in another kerncap process" "$D/prune.log" || problem "prune does not say who holds the capture"
  [ "$before" = "$after" ] || problem "the manifest changed"
  [ "$w" = PASS ] || problem "validate through the server: '$w'"
  fm_row prune_vs_serve "prune waits 10 s for the server, then refuses naming it (exit 2); the capture unchanged; the server still PASSes" \
    "exit $RC: $(err_line "$D/prune.log" | cut -c1-120); served validate $w" "$P"
fi

if want -E prune_race; then
  begin prune_race
  timeout -k 5 "$TIMEOUT" "$KC" validate "$L" >"$D/v.log" 2>&1 &
  pv=$!
  timeout -k 5 "$TIMEOUT" "$KC" prune "$L" >"$D/p1.log" 2>&1 &
  p1=$!
  timeout -k 5 "$TIMEOUT" "$KC" prune "$L" >"$D/p2.log" 2>&1 &
  p2=$!
  wait $pv; rv=$?
  wait $p1; r1=$?
  wait $p2; r2=$?
  w1=$(grep -m1 -o '^Result: [A-Z]*' "$D/v.log" | cut -c9-)
  w2=$(validate_word "$L")
  kcx info "$L" --verify >"$D/verify.log" 2>&1 || problem "info --verify fails: $(err_line "$D/verify.log")"
  { [ "$rv" = 0 ] && [ "$w1" = PASS ]; } || problem "the concurrent validate: exit $rv '$w1'"
  { [ "$r1" = 0 ] && [ "$r2" = 0 ]; } || problem "prune exits $r1, $r2"
  n_pruned=$(cat "$D/p1.log" "$D/p2.log" | grep -c 'new chunks written')
  n_nothing=$(cat "$D/p1.log" "$D/p2.log" | grep -c 'nothing to prune')
  { [ "$n_pruned" = 1 ] && [ "$n_nothing" = 1 ]; } || problem "$n_pruned pruned, $n_nothing found nothing"
  [ "$w2" = PASS ] || problem "afterwards: '$w2'"
  fm_row prune_race "all three succeed: one prune prunes, the other finds nothing left, validate PASSes (each waits for the other); the capture verifies and PASSes after" \
    "validate $w1 (exit $rv); prunes exit $r1/$r2 ($n_pruned pruned, $n_nothing nothing left); after: verify ok, $w2" "$P"
fi

# ---- a store chunk deleted while it is read -----------------------------------------------------

if want -E chunk_deleted; then
  SV=$WORK/vstore
  kcx extract fm_step --dispatch 1 --store "$SV" -o "$WORK/v" -q -- "$APP" ok 1024 1 7 >"$WORK/v.log" 2>&1 ||
    echo "store capture failed: $(err_line "$WORK/v.log")"
  mapfile -t chunks < <(find "$SV" -type f \( -name '*.zst' -o -name '*.raw' \) | sort)
fi

if want -E chunk_deleted_validate; then
  begin chunk_deleted_validate
  timeout -k 5 "$TIMEOUT" "$KC" validate "$WORK/v" --store "$SV" >"$D/v.log" 2>&1 &
  pv=$!
  sleep 0.3
  cp -p "${chunks[100]}" "$WORK/saved-chunk"
  rm -f "${chunks[100]}"
  wait $pv
  RC=$?
  w=$(grep -m1 -o '^Result: [A-Z]*' "$D/v.log" | cut -c9-)
  case $RC in
    0) [ "$w" = PASS ] || problem "exit 0 without PASS" ;;
    2) grep -q -i -E "chunk|no such file|missing" "$D/v.log" || problem "the error does not name the chunk" ;;
    *) problem "exit $RC (neither a verdict nor an input error)" ;;
  esac
  kcx info "$WORK/v" --store "$SV" --verify >"$D/verify.log" 2>&1
  rv=$?
  [ $rv = 2 ] || problem "info --verify exit $rv, expected 2"
  mv "$WORK/saved-chunk" "${chunks[100]}"  # for the next row
  fm_row chunk_deleted_validate "validate PASSes (read before) or exits 2 naming the chunk; never a crash or a wrong verdict; --verify then names it" \
    "validate exit $RC ${w:+$w }$( [ $RC = 2 ] && err_line "$D/v.log" | cut -c1-110); verify exit $rv: $(err_line "$D/verify.log" | cut -c1-80)" "$P"
fi

if want -E chunk_deleted_serve; then
  begin chunk_deleted_serve
  KERNCAP_STORE=$SV "$KC" serve "$WORK/v" --idle-timeout 300 >"$D/serve.out" 2>"$D/serve.err" &
  SRV=$!
  BG+=("$SRV")
  for ((i = 0; i < 600; i++)); do grep -q ' ready (pid ' "$D/serve.out" && break; sleep 0.1; done
  rm -f "${chunks[200]:-/nonexistent}"
  KERNCAP_STORE=$SV kcx validate "$WORK/v" >"$D/v1.log" 2>&1
  r1=$?
  KERNCAP_STORE=$SV kcx validate "$WORK/v" >"$D/v2.log" 2>&1
  r2=$?
  served=$(grep -c 'evaluated by kerncap serve' "$D/v1.log" "$D/v2.log" | awk -F: '{s += $2} END {print s}')
  KERNCAP_STORE=$SV kcx serve --status "$WORK/v" >"$D/status.log" 2>&1
  rs=$?
  kcx serve --stop "$WORK/v" >/dev/null 2>&1
  wait "$SRV" 2>/dev/null
  for r in $r1 $r2; do [ "$r" = 0 ] || [ "$r" = 2 ] || problem "a validate exit $r"; done
  # A validate client opens the capture itself (checking that every chunk file is there) before
  # it asks the server: with a chunk gone it refuses there, naming the chunk.
  for f in "$D/v1.log" "$D/v2.log"; do
    grep -q 'evaluated by kerncap serve' "$f" || grep -q -i 'missing .* chunk' "$f" ||
      problem "$(basename "$f"): neither served nor a refusal naming the chunk"
  done
  [ "$rs" = 0 ] || problem "the server no longer answers (serve --status exit $rs)"
  m1=$(grep -m1 -o '^Result: [A-Z]*' "$D/v1.log" | cut -c9-)
  fm_row chunk_deleted_serve "each validate is answered by the server or refused by the client naming the chunk (exit 2); the server keeps running" \
    "validates exit $r1 ${m1:-$(err_line "$D/v1.log" | cut -c1-80)}, $r2; $served served; serve --status exit $rs" "$P"
fi

# ---- footprint and prune writes: a full disk, SIGKILL ----------------------------------------------
# A capture A and a capture B of the same launch (same seed: every chunk shared) in one store;
# A's footprint is rewritten and A is pruned while B must lose nothing.

# limited KIB CMD...: CMD whose files may not grow past KIB KiB (RLIMIT_FSIZE, SIGXFSZ ignored:
# a write past it fails with EFBIG as a full disk's fail with ENOSPC); its output through a
# pipe, which the limit does not bound; its exit status returned.
limited() {
  local kib=$1
  shift
  (trap '' XFSZ; ulimit -f "$kib"; exec timeout -k 5 "$TIMEOUT" "$@") 2>&1 | cat
  return "${PIPESTATUS[0]}"
}
# fp_sum OUT: a checksum of OUT's footprint pair, or "none".
fp_sum() {
  if [ -e "$1/capture/footprint.json" ]; then
    cat "$1/capture/footprint.json" "$1/capture/footprint.bin" 2>/dev/null | md5sum | cut -c1-12
  else
    echo none
  fi
}
fp_tmps() { find "$1/capture" -maxdepth 1 -name 'footprint.*.tmp' 2>/dev/null | wc -l; }
# running PID: the process is there and not a zombie (kill -0 succeeds on one not yet reaped).
running() { [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
# entries DIR: how many files DIR holds, hidden ones (a chunk's temporary) included.
entries() {
  local f
  f=$(shopt -s dotglob nullglob; set -- "$1"/*; echo $#)
  echo "$f"
}
PS=$WORK/pstore
PA=$WORK/pa
PB=$WORK/pb
if want -E 'disk_footprint|footprint_sigkill|disk_prune_store|prune_sigkill_store'; then
  kcx extract fm_step --dispatch 1 --store "$PS" -o "$PA" -q -- "$APP" ok 32 1 3 >"$WORK/pa.log" 2>&1 ||
    echo "store capture A failed: $(err_line "$WORK/pa.log")"
  kcx extract fm_step --dispatch 1 --store "$PS" -o "$PB" -q -- "$APP" ok 32 1 3 >"$WORK/pb.log" 2>&1 ||
    echo "store capture B failed: $(err_line "$WORK/pb.log")"
  kcx footprint "$PA" --store "$PS" -q >"$WORK/pa-footprint.log" 2>&1 ||
    echo "footprint of A failed: $(err_line "$WORK/pa-footprint.log")"
fi

if want -E disk_footprint; then
  begin disk_footprint
  old=$(fp_sum "$PA")
  jb=$(stat -c %s "$PA/capture/footprint.json" 2>/dev/null) bb=$(stat -c %s "$PA/capture/footprint.bin" 2>/dev/null)
  limited 1 "$KC" footprint "$PA" --store "$PS" --force -q >"$D/full.log"
  RC=$?
  [ $RC = 0 ] && problem "footprint succeeded"
  grep -q "the footprint was not written" "$D/full.log" || problem "the error does not say the footprint was not written"
  grep -q -i -E "too large|no space" "$D/full.log" || problem "the error does not name the failed write"
  grep -q "keeps its earlier footprint" "$D/full.log" || problem "the error does not say the old footprint stays"
  [ "$(fp_sum "$PA")" = "$old" ] || problem "the footprint changed ($old -> $(fp_sum "$PA"))"
  [ "$(fp_tmps "$PA")" = 0 ] || problem "footprint temporaries left"
  w=$(validate_word "$PA" --store "$PS")
  [ "$w" = PASS ] || problem "validate after: '$w'"
  kcx footprint "$PA" --store "$PS" --force -q >"$D/again.log" 2>&1
  ra=$?
  [ $ra = 0 ] || problem "footprint --force with room: exit $ra"
  fm_row disk_footprint "error naming the failed footprint write; the earlier footprint unchanged (json ${jb:-?} B, bin ${bb:-?} B, limit 1 KiB), no temporary; validate PASS; footprint --force with room works" \
    "exit $RC: $(err_line "$D/full.log" | cut -c1-150); validate $w; then footprint exit $ra" "$P"
fi

if want -E disk_footprint_fs; then
  begin disk_footprint_fs
  if tmpfs "$D/fs" 16m; then
    cp -a "$PA" "$D/fs/a"
    old=$(fp_sum "$D/fs/a")
    dd if=/dev/zero of="$D/fs/fill" bs=64k >/dev/null 2>&1  # until the file system is full
    kcx footprint "$D/fs/a" --store "$PS" --force -q >"$D/full.log" 2>&1
    RC=$?
    [ $RC = 0 ] && problem "footprint succeeded"
    grep -q -i "no space" "$D/full.log" || problem "the error does not name the full disk"
    grep -q "keeps its earlier footprint" "$D/full.log" || problem "the error does not say the old footprint stays"
    [ "$(fp_sum "$D/fs/a")" = "$old" ] || problem "the footprint changed"
    [ "$(fp_tmps "$D/fs/a")" = 0 ] || problem "footprint temporaries left"
    w=$(validate_word "$D/fs/a" --store "$PS")
    [ "$w" = PASS ] || problem "validate on the full disk: '$w'"
    fm_row disk_footprint_fs "ENOSPC named; the earlier footprint unchanged, no temporary; validate PASS" \
      "exit $RC: $(err_line "$D/full.log" | cut -c1-150); validate $w" "$P"
  else
    fm_skip disk_footprint_fs "cannot mount a tmpfs here"
  fi
fi

if want -E footprint_sigkill; then
  begin footprint_sigkill
  m=""
  for at in 1.5 write; do
    before=$(fp_sum "$PA")
    "$KC" footprint "$PA" --store "$PS" --force -q >"$D/kill-$at.log" 2>&1 &
    pk=$!
    hit=""
    if [ "$at" = write ]; then
      # The instant its temporary bin appears: the kill lands inside the write.
      for ((i = 0; i < 2000000; i++)); do
        [ -e "$PA/capture/footprint.bin.tmp" ] && { hit=yes; break; }
        ((i % 1000)) || running "$pk" || break
      done
    else
      sleep "$at"
    fi
    kill -9 "$pk" 2>/dev/null
    wait "$pk" 2>/dev/null
    st=$(fp_sum "$PA")
    case $st in "$before") st=old ;; none) ;; *) st=new ;; esac
    w=$(validate_word "$PA" --store "$PS")  # measures one again when none is left
    [ "$w" = PASS ] || problem "after the kill at $at: validate '$w'"
    kcx footprint "$PA" --store "$PS" -q >"$D/next-$at.log" 2>&1
    rn=$?
    [ $rn = 0 ] || problem "after the kill at $at: the next footprint exit $rn: $(err_line "$D/next-$at.log")"
    [ "$(fp_tmps "$PA")" = 0 ] || [ "$st" != new ] || problem "temporaries beside a new footprint"
    m+="killed at ${at}${hit:+ (seen)}: footprint $st, validate $w, next footprint exit $rn; "
  done
  fm_row footprint_sigkill "killed mid-measurement or inside its write: the old footprint, the new one or none (never one validate refuses); validate PASS; the next footprint works" \
    "$m" "$P"
fi

if want -E disk_prune_store; then
  begin disk_prune_store
  cp -a "$PA" "$D/a"
  ma=$(md5sum "$D/a/capture/manifest.json" | cut -c1-32)
  nb=$(find "$PS" -type f | wc -l)
  limited 1 "$KC" prune "$D/a" --store "$PS" >"$D/full.log"
  RC=$?
  [ $RC = 0 ] && problem "prune succeeded"
  grep -q "prune stopped before it changed the capture" "$D/full.log" || problem "the error does not say the capture is unchanged"
  grep -q -i -E "too large|no space" "$D/full.log" || problem "the error does not name the failed write"
  [ "$(md5sum "$D/a/capture/manifest.json" | cut -c1-32)" = "$ma" ] || problem "the manifest changed"
  store_whole "$PS"
  [ "$(find "$PS" -type f | wc -l)" -ge "$nb" ] || problem "chunks left the shared store"
  kcx info "$PB" --store "$PS" --verify >"$D/verify-b.log" 2>&1 || problem "B no longer verifies"
  w=$(validate_word "$D/a" --store "$PS")
  [ "$w" = PASS ] || problem "the capture after the failed prune: '$w'"
  kcx prune "$D/a" --store "$PS" >"$D/again.log" 2>&1
  ra=$?
  [ $ra = 0 ] || problem "prune with room: exit $ra: $(err_line "$D/again.log")"
  w2=$(validate_word "$D/a" --store "$PS")
  [ "$w2" = PASS ] || problem "the pruned capture: '$w2'"
  wb=$(validate_word "$PB" --store "$PS")
  [ "$wb" = PASS ] || problem "B: '$wb'"
  fm_row disk_prune_store "error naming the failed write and that the capture is as it was; the store keeps every chunk; both captures validate; prune with room works" \
    "exit $RC: $(err_line "$D/full.log" | cut -c1-150); validate $w; pruned with room (exit $ra): $w2; B $wb" "$P"
fi

if want -E prune_sigkill_store; then
  begin prune_sigkill_store
  m=""
  for at in 0.03 0.1 chunk; do
    rm -rf "$D/a"
    cp -a "$PA" "$D/a"
    nb=$(entries "$PS")
    "$KC" prune "$D/a" --store "$PS" >"$D/kill-$at.log" 2>&1 &
    pk=$!
    if [ "$at" = chunk ]; then
      # The instant a new chunk (or its temporary) appears in the store.
      for ((i = 0; i < 200000; i++)); do
        [ "$(entries "$PS")" -gt "$nb" ] && break
        ((i % 100)) || running "$pk" || break
      done
    else
      sleep "$at"
    fi
    kill -9 "$pk" 2>/dev/null
    wait "$pk" 2>/dev/null
    st=$(grep -q '"pruned"' "$D/a/capture/manifest.json" && echo new || echo old)
    kcx info "$D/a" --store "$PS" --verify >"$D/verify-$at.log" 2>&1 || problem "killed at $at: the capture does not verify"
    kcx info "$PB" --store "$PS" --verify >"$D/verify-b-$at.log" 2>&1 || problem "killed at $at: B does not verify"
    w=$(validate_word "$D/a" --store "$PS")
    [ "$w" = PASS ] || problem "killed at $at: validate '$w'"
    kcx prune "$D/a" --store "$PS" >"$D/next-$at.log" 2>&1 || problem "killed at $at: the next prune failed"
    m+="killed at $at: $st manifest, verify ok, validate $w; "
  done
  store_whole_tmp=$(find "$PS" -type f -name '.*' | wc -l)
  wb=$(validate_word "$PB" --store "$PS")
  [ "$wb" = PASS ] || problem "B: '$wb'"
  fm_row prune_sigkill_store "killed at any moment: the capture verifies and PASSes (old or new manifest), B untouched, the next prune works" \
    "${m}B $wb; $store_whole_tmp chunk temporaries left in the store" "$P"
fi

table "row | expected | measured | result | s"
echo
summary -S

#!/usr/bin/env bash
# GPU end-to-end suite: extract, replay and validate our own example
# applications (examples/) and PyTorch ops on a real GPU, plus forced relocation, repeated
# replays, --continue and the error cases. Prints one table row per case and ends with the
# line "N passed, N failed". Exit 0 all passed, 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/run.sh BUILD_DIR
#
# Environment:
#   OUT                 work files under $OUT/gpu-work (removed at the end), logs in $OUT/gpu-logs
#   KERNCAP_GPU_CASES   extended regex: run only the cases whose name matches
#   KERNCAP_GPU_KEEP=1  keep the captures (work directory) after the run
#   KERNCAP_GPU_TIMEOUT per-command limit in seconds (default 120)
#   KERNCAP_PYTHON      python with torch for the PyTorch cases (default python3)
set -u -o pipefail
ulimit -c 0  # the crash case aborts on purpose: no core files

BUILD=${1:?usage: tests/gpu/run.sh BUILD_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_required

BUILD=$(cd "$BUILD" && pwd) || exit 1
KC=$BUILD/bin/kerncap
EX=$BUILD/examples
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-120}
ONLY=${KERNCAP_GPU_CASES:-}
TORCH_PY=${KERNCAP_PYTHON:-python3}
if [ ! -x "$KC" ]; then
  echo "kerncap is not built: $KC missing (build first: cmake --build $BUILD)"
  exit 1
fi

gpu_work_dir gpu apart
trap cleanup EXIT
ROWS=$WORK/rows.tsv
FAILTAILS=$WORK/failures.txt
: >"$ROWS"
: >"$FAILTAILS"

SINCE_DECIMALS=1  # since (lib.sh) prints tenths of a second

# ---- steps -------------------------------------------------------------------------------
# run_step NAME CMD...: runs CMD under the per-command timeout; stdout -> $STEP_OUT, stderr
# -> $STEP_ERR (files in the case's directory), both appended to the case log.
run_step() {
  local name=$1 rc
  shift
  STEP_OUT=$CASE_DIR/$name.out
  STEP_ERR=$CASE_DIR/$name.err
  printf '\n$ %s\n' "$*" >>"$LOG"
  timeout -k 5 "$TIMEOUT" "$@" >"$STEP_OUT" 2>"$STEP_ERR"
  rc=$?
  {
    sed 's/^/  out| /' "$STEP_OUT"
    sed 's/^/  err| /' "$STEP_ERR"
    echo "  [exit $rc$([ $rc = 124 ] && echo ", timed out after ${TIMEOUT}s")]"
  } >>"$LOG"
  return $rc
}

# The first line of the last step's output that reads like an error (for the note column).
first_error() {
  local l
  l=$(cat "$STEP_ERR" "$STEP_OUT" 2>/dev/null | grep -m1 -Ei 'error|fail|refus|cannot|not found|no kernel') ||
    l=$(tail -n1 "$STEP_ERR" 2>/dev/null)
  printf '%s' "${l:0:160}"
}

# json_get FILE KEY.PATH: a value of the first JSON object in FILE (other lines ignored).
json_get() {
  python3 - "$1" "$2" <<'PY' 2>/dev/null
import json, sys
text = open(sys.argv[1], errors="replace").read()
dec, i = json.JSONDecoder(), text.find("{")
while i >= 0:
    try:
        v, _ = dec.raw_decode(text, i)
        break
    except ValueError:
        i = text.find("{", i + 1)
else:
    sys.exit(1)
for k in sys.argv[2].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(f"{v:.4g}" if isinstance(v, float) else v)
PY
}

# mpy EXPR: a Python expression over the capture $CAP: m = manifest, p = params.bin bytes,
# param(i, fmt) = parameter i unpacked with struct format fmt, kinds = region kinds.
mpy() {
  python3 - "$CAP/capture" "$1" <<'PY' 2>&1
import json, struct, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
p = open(d + "/" + m["params"]["file"], "rb").read()
def param(i, fmt):
    return struct.unpack_from(fmt, p, m["params"]["slots"][i]["offset"])[0]
kinds = [r["kind"] for r in m["regions"]]
print(eval(sys.argv[2]))
PY
}

# ---- row state (set inside each case's subshell) -------------------------------------------
R_EXTRACT=- R_REPLAY=- R_VALIDATE=- R_FAIL=0 R_SKIP=0 R_NOTE=""

# mcheck EXPR WHAT: a hard check on the capture (see mpy).
mcheck() {
  local v
  v=$(mpy "$1")
  if [ "$v" = True ]; then note "$2"; else bad "NOT $2 (${1} -> ${v:0:100})"; fi
}

# ---- the three standard steps ----------------------------------------------------------------
# do_extract DIR PATTERN [extract flags] (-- APP ARGS | --cmd "...")
do_extract() {
  local dir=$1 pattern=$2 t0 rc
  shift 2
  t0=$(now)
  run_step extract "$KC" extract "$pattern" -o "$dir" "$@"
  rc=$?
  if [ $rc -eq 0 ] && [ -f "$dir/capture/manifest.json" ]; then
    R_EXTRACT="ok $(since "$t0")s $(du -sh "$dir/capture" 2>/dev/null | cut -f1)"
    printf '\n$ kerncap info %s\n' "$dir" >>"$LOG"
    "$KC" info "$dir" >>"$LOG" 2>&1 || note "info failed"
    return 0
  fi
  R_EXTRACT="FAIL rc=$rc"
  if [ $rc -eq 0 ]; then bad "extract exited 0 but wrote no $dir/capture/manifest.json"; else bad "extract: $(first_error)"; fi
  return 1
}

do_replay() {
  local dir=$1 med rel rc
  shift
  run_step replay "$KC" replay "$dir" --iterations 20 --json "$@"
  rc=$?
  if [ $rc -eq 0 ]; then
    med=$(json_get "$STEP_OUT" median_ms) || med="?"
    R_REPLAY="$med ms"
    rel=$(json_get "$STEP_OUT" relocated_regions) && [ "$rel" != 0 ] && note "replay relocated $rel region(s)"
    return 0
  fi
  R_REPLAY="FAIL rc=$rc"
  bad "replay: $(first_error)"
  return 1
}

# do_validate DIR [flags]: expects exit 0 and "Result: PASS" (with --json: exit 0 and no
# "Result: FAIL").
do_validate() {
  local dir=$1 rc res want="Result: PASS"
  shift
  [[ " $* " == *" --json "* ]] && want=""
  run_step validate "$KC" validate "$dir" "$@"
  rc=$?
  res=$(cat "$STEP_OUT" "$STEP_ERR" | grep -m1 '^Result:')
  if [ $rc -eq 0 ] && [[ $res == "$want"* ]] && [[ $res != "Result: FAIL"* ]]; then
    R_VALIDATE=PASS
    # How strong, and whether the footprint saw accesses outside the capture (a capture gap).
    case $res in *"strong:"*) R_VALIDATE="PASS strong" ;; *weak*) R_VALIDATE="PASS weak" ;; esac
    local esc
    if [ -f "$dir/capture/footprint.json" ] && esc=$(json_get "$dir/capture/footprint.json" escape_count); then
      [ "$esc" = 0 ] || note "footprint: $esc escaped access(es)"
    fi
    return 0
  fi
  R_VALIDATE="FAIL rc=$rc"
  bad "validate: ${res:-$(first_error)}"
  return 1
}

# std_flow PATTERN [extract flags] (-- APP ARGS | --cmd ...): extract, replay x20, validate.
CAP=
std_flow() {
  CAP=$CASE_DIR/cap
  do_extract "$CAP" "$@" || return 1
  do_replay "$CAP"
  do_validate "$CAP"
}

need_example() {  # need_example NAME: fail (or skip, for arch-gated ones) when not built
  [ -e "$EX/$1" ] && return 0
  if [ "$1" = cluster_launch ]; then skip "not built (needs KERNCAP_CUDA_ARCH >= 90)"; else bad "example $1 not built in $EX"; fi
  return 1
}

# expect_error STEP WANT_RC REGEX CMD...: CMD must fail cleanly (non-zero, no timeout, no
# signal, no internal error), with WANT_RC when it is a number ("nz" = any), and its output
# must match REGEX (case-insensitive).
expect_error() {
  local step=$1 want=$2 re=$3 rc
  shift 3
  run_step "$step" "$@"
  rc=$?
  case $step in
    extract*) R_EXTRACT="rc=$rc" ;;
    replay*) R_REPLAY="rc=$rc" ;;
    *) R_VALIDATE="rc=$rc" ;;
  esac
  if [ $rc -eq 0 ]; then
    bad "$step succeeded but must fail"
    return 1
  fi
  if [ $rc -ge 124 ] || [ $rc -eq 70 ]; then bad "$step crashed, timed out or hit an internal error (rc=$rc)"; fi
  if [ "$want" != nz ] && [ $rc -ne "$want" ]; then bad "$step exit $rc, expected $want"; fi
  if cat "$STEP_OUT" "$STEP_ERR" | grep -q '^Result: PASS'; then bad "$step printed Result: PASS"; fi
  if ! cat "$STEP_OUT" "$STEP_ERR" | grep -Eqi -- "$re"; then bad "message does not match /$re/"; fi
  note "says: $(first_error)"
}

# A vector_add capture shared by the cases that only read or copy it.
BASE=$WORK/base/cap
base_capture() {
  [ -f "$BASE/capture/manifest.json" ] && return 0
  local saved=$CASE_DIR
  CASE_DIR=$WORK/base
  mkdir -p "$CASE_DIR"
  rm -rf "$BASE"
  run_step extract "$KC" extract vectorAdd -o "$BASE" -- "$EX/vector_add"
  CASE_DIR=$saved
  [ -f "$BASE/capture/manifest.json" ] && return 0
  bad "could not make the base vector_add capture: $(first_error)"
  return 1
}

# ---- cases: our own applications --------------------------------------------------------------
case_vector_add() {
  need_example vector_add || return
  std_flow vectorAdd --cmd "'$EX/vector_add' 1000000" || return
  mcheck 'len(m["params"]["slots"]) == 4 and param(3, "<i") == 1000000' "n=1000000 in params"
}
case_accumulate() {
  need_example accumulate || return
  std_flow accumulate --dispatch 4 -- "$EX/accumulate" || return
  mcheck 'm["kernel"]["dispatch"] == 4' "dispatch 4"
  # Default mode stops the application once the capture is complete.
  if grep -q '^checksum accumulate' "$CASE_DIR/extract.out"; then bad "application ran to the end without --continue"; else note "app stopped"; fi
}
case_batched_ptrs() {
  need_example batched_ptrs || return
  std_flow batchedScale -- "$EX/batched_ptrs" || return
  mcheck 'len(m["regions"]) >= 11' "$(mpy 'len(m["regions"])') regions"
}
case_struct_ptrs() {
  need_example struct_ptrs || return
  std_flow stepParticles --dispatch 1 -- "$EX/struct_ptrs" || return
  mcheck 'len(m["params"]["slots"]) == 1 and m["params"]["slots"][0]["size"] == 48' "one 48-byte struct param"
}
case_globals() {
  need_example globals || return
  std_flow polyEval --dispatch 1 -- "$EX/globals" || return
  mcheck 'kinds.count("global") >= 2' "$(mpy 'kinds.count("global")') global regions"
}
case_big_smem() {
  need_example big_smem || return
  std_flow reverseTiles -- "$EX/big_smem" || return
  mcheck 'm["launch"]["shared_mem_bytes"] == 98304' "96 KB dynamic smem"
}
case_templated() {
  need_example templated || return
  std_flow 'transform_kernel<double' -- "$EX/templated" || return
  mcheck '"Square<double>" in m["kernel"]["demangled"] and len(m["kernel"]["mangled"]) > 60' "Square<double> instantiation"
}
case_dispatch() {
  need_example dispatch || return
  std_flow iterate --dispatch 3 -- "$EX/dispatch" || return
  mcheck 'm["kernel"]["dispatch"] == 3 and param(2, "<i") == 3' "iteration param == 3"
}
case_async_stream() {
  need_example async_stream || return
  std_flow smooth3 --dispatch 1 -- "$EX/async_stream" || return
  note "kinds $(mpy 'sorted(set(kinds))')"
}
case_managed() {
  need_example managed || return
  std_flow refine --dispatch 1 -- "$EX/managed" || return
  mcheck '"managed" in kinds' "managed region"
}
case_mapped_host() {
  need_example mapped_host || return
  std_flow zeroCopyScale -- "$EX/mapped_host" || return
  mcheck '"host_mapped" in kinds' "host_mapped region"
}
case_cluster_launch() {
  need_example cluster_launch || return
  std_flow clusterExchange -- "$EX/cluster_launch" || return
  mcheck 'list(m["launch"]["cluster"]) == [4, 1, 1]' "cluster 4x1x1"
}
case_cooperative() {
  need_example cooperative || return
  std_flow gridSum -- "$EX/cooperative" || return
  mcheck 'm["launch"]["cooperative"] is True' "cooperative"
}
case_driver_extra() {
  need_example driver_extra || return
  std_flow saxpyExtra -- "$EX/driver_extra" || return
  mcheck 'm["params"]["size"] == 24 and param(2, "<f") == 3.0' "24-byte extra buffer, a=3"
  note "source=$(mpy 'm["params"].get("source")')"
}
# Two compilations of one kernel loaded as two modules, the first loaded launched
# (examples/two_configs.cu): the capture must hold the launched image, not the latest of
# that name. `bounds`: their launch bounds differ (256 and 128 threads), so the launched
# function's bounds decide; `same`: both 256, so only the module binding at the image's
# hand-over (inside cuModuleLoadData, or cuModuleGetFunction with lazy loading) decides.
two_configs_case() {
  need_example two_configs || return
  std_flow twoConfigs -- "$EX/two_configs" "$1" || return
  mcheck 'm["launch"]["block"] == [256, 1, 1]' "the launched block (256)"
  # Both configurations compute the same values, so a PASS alone would not show which image
  # was captured: the captured image must be the launched cubin, byte for byte.
  local img
  img=$CAP/capture/$(mpy 'm["image"]["file"]')
  if cmp -s "$img" "$EX/two_configs_256x2.cubin"; then note "captured the launched image"
  else bad "the capture holds another image than the launched two_configs_256x2.cubin"; fi
}
case_two_configs_bounds() { two_configs_case bounds; }
# A kernel launched only from the device (examples/device_launch.cu, dynamic parallelism):
# kerncap sees host-side launches, so extract must fail as for any pattern that matches no launch
# (exit 2) and say that the kernel was loaded but never launched from the host, naming it; its
# parent, launched from the host, is captured.
case_err_device_launch() {
  need_example device_launch || return
  expect_error extract 2 'never launched them.*dynamic parallelism' \
    "$KC" extract scaleChild -o "$CASE_DIR/child" -- "$EX/device_launch"
  cat "$STEP_OUT" "$STEP_ERR" | grep -q 'scaleChild(float\*, float, int)' || bad "the message does not name scaleChild"
  do_extract "$CASE_DIR/parent" scaleParent -- "$EX/device_launch" && note "the parent kernel is captured"
}
case_two_configs_same() { two_configs_case same; }
case_graph_capture() {
  need_example graph_capture || return
  # The launch inside stream capture does not count; the graph's kernel node counts once per
  # graph launch (dispatch 0 and 1, add=1.0; tests/gpu/graph_e2e.sh captures those), so the
  # direct launch that adds 2.0 is dispatch 2.
  std_flow graphStep --dispatch 2 -- "$EX/graph_capture" || return
  mcheck 'param(1, "<f") == 2.0' "direct launch (add=2)"
}

# ---- cases: --cubin, errors ------------------------------------------------------------------
case_cubin_variant() {
  base_capture || return
  do_validate "$BASE" --cubin "$EX/vector_add.cubin"
}
# Float atomics reorder: validate must find the kernel nondeterministic (two replays of the
# captured image differ) and pass within fp32 tolerance, printing the error; with the
# determinism check turned off the byte-exact comparison is expected to fail.
case_nondet_atomic() {
  need_example atomic_norm || return
  CAP=$CASE_DIR/cap
  do_extract "$CAP" sumSquares --dispatch 2 -- "$EX/atomic_norm" || return
  do_validate "$CAP" || return
  local line
  line=$(grep -m1 '^Result:' "$STEP_OUT")
  if [[ $line == *"nondeterministic kernel"* && $line == *"max abs error"* ]]; then note "${line:14:110}"
  else note "replays agreed this time: ${line:0:100}"; fi
  run_step validate_exact "$KC" validate "$CAP" --no-determinism-check
  note "byte-exact without the check: $(grep -m1 -o '^Result: [A-Z]*' "$STEP_OUT")"
}

# Strong validation where the application's launch rewrote identical bytes (dispatch 2 of 4
# launches on the same inputs): weak validation cannot tell a no-op from the kernel; with the
# footprint the captured image passes strongly and a no-op or tail-skipping variant fails.
case_strong_identical() {
  need_example vector_add || return
  CAP=$CASE_DIR/cap
  do_extract "$CAP" vectorAdd --dispatch 2 -- "$EX/vector_add" 1000000 --repeat 4 || return
  mcheck 'len(m["after"]["runs"]) == 0' "AFTER empty (identical rewrite)"
  run_step weak_noop "$KC" validate "$CAP" --cubin "$EX/vector_add_noop.cubin" --footprint never
  note "weak no-op: $(grep -m1 -o '^Result: [A-Z]*' "$STEP_OUT")"
  run_step footprint "$KC" footprint "$CAP" || { bad "footprint: $(first_error)"; return; }
  do_validate "$CAP" || return
  grep -q '^Result: PASS (strong' "$STEP_OUT" || bad "captured image not strongly validated: $(grep -m1 '^Result' "$STEP_OUT")"
  local v rc
  for v in noop tail; do
    run_step "strong_$v" "$KC" validate "$CAP" --cubin "$EX/vector_add_$v.cubin"
    rc=$?
    if [ $rc -eq 1 ] && grep -q '^Result: FAIL' "$STEP_OUT"; then note "$v variant FAILs"; else bad "$v variant: rc $rc $(grep -m1 '^Result' "$STEP_OUT")"; fi
  done
}

# Fuzzing: a variant right only for the captured inputs (b clamped at 0; the captured b >= 0)
# passes plain strong validation and must fail --fuzz 20, naming the seed and trial; the
# kernel's own image passes the same fuzzing. A capture without float inputs is refused.
case_fuzz_clamp() {
  need_example vector_add || return
  CAP=$CASE_DIR/cap
  do_extract "$CAP" vectorAdd -- "$EX/vector_add" 100000 || return
  run_step footprint "$KC" footprint "$CAP" || { bad "footprint: $(first_error)"; return; }
  do_validate "$CAP" --cubin "$EX/vector_add_clamp.cubin" || return
  note "plain: $(grep -m1 -o '^Result: [A-Z]* ([a-z]*' "$STEP_OUT")"
  local rc
  run_step fuzz_clamp "$KC" validate "$CAP" --cubin "$EX/vector_add_clamp.cubin" --fuzz 20 --seed 7
  rc=$?
  if [ $rc -eq 1 ] && grep -q '^Fuzz: FAIL' "$STEP_OUT"; then note "$(grep -m1 '^Fuzz' "$STEP_OUT" | cut -c1-90)"
  else bad "clamp variant under --fuzz: rc $rc $(grep -m1 -E '^(Fuzz|Result)' "$STEP_OUT")"; fi
  run_step fuzz_same "$KC" validate "$CAP" --cubin "$EX/vector_add.cubin" --fuzz 5
  rc=$?
  if [ $rc -eq 0 ] && grep -q '^Fuzz: PASS' "$STEP_OUT"; then note "correct variant fuzz PASS"
  else bad "correct variant under --fuzz: rc $rc $(grep -m1 -E '^(Fuzz|Result)' "$STEP_OUT") $(first_error)"; fi
}
# An off-by-one in the tail mask of a load (the last b reads as 0): the captured b[n-1] is 0
# for n = 100024, so plain strong validation passes; random inputs under --fuzz 20 must not.
case_fuzz_tailmask() {
  need_example vector_add || return
  CAP=$CASE_DIR/cap
  do_extract "$CAP" vectorAdd -- "$EX/vector_add" 100024 || return
  run_step footprint "$KC" footprint "$CAP" || { bad "footprint: $(first_error)"; return; }
  do_validate "$CAP" --cubin "$EX/vector_add_tailmask.cubin" || return
  note "plain: $(grep -m1 -o '^Result: [A-Z]* ([a-z]*' "$STEP_OUT")"
  local rc
  run_step fuzz_tailmask "$KC" validate "$CAP" --cubin "$EX/vector_add_tailmask.cubin" --fuzz 20 --seed 3
  rc=$?
  if [ $rc -eq 1 ] && grep -q '^Fuzz: FAIL' "$STEP_OUT"; then note "$(grep -m1 '^Fuzz' "$STEP_OUT" | cut -c1-110)"
  else bad "tail-mask variant under --fuzz: rc $rc $(grep -m1 -E '^(Fuzz|Result)' "$STEP_OUT")"; fi
}
case_err_fuzz_no_float() {
  need_example struct_ptrs || return
  CAP=$CASE_DIR/cap
  do_extract "$CAP" stepParticles --dispatch 1 -- "$EX/struct_ptrs" || return
  run_step footprint "$KC" footprint "$CAP" || { bad "footprint: $(first_error)"; return; }
  expect_error validate 2 'floating-point inputs' "$KC" validate "$CAP" --fuzz 3
}

# ---- cases: the engine outside the CLI ----------------------------------------------------------
# kerncap-replay (the engine alone) validates and times the base capture.
case_engine_standalone() {
  base_capture || return
  run_step replay_tool "$BUILD/bin/kerncap-replay" "$BASE" --validate --json -n 10 || { bad "kerncap-replay: $(first_error)"; return; }
  local res med
  res=$(json_get "$STEP_OUT" validate.result) || res=missing
  med=$(json_get "$STEP_OUT" timing.median_ms) || med=missing
  R_REPLAY="$med ms"
  R_VALIDATE=$res
  [ "$res" = PASS ] || bad "kerncap-replay --validate: $res"
  [[ $med =~ ^[0-9.e-]+$ ]] || bad "no median in kerncap-replay --json"
}
# The C ABI driven with plain ctypes: compare before the launch fails, after it passes.
case_engine_c_abi() {
  base_capture || return
  run_step c_abi python3 "$HERE/engine_check.py" "$BUILD/lib/libkerncap_replay.so" "$BASE"
  local rc=$?
  note "$(tail -n1 "$STEP_OUT" | cut -c1-150)"
  [ $rc -eq 0 ] || bad "engine_check.py: rc $rc $(first_error)"
  R_VALIDATE=$([ $rc -eq 0 ] && echo PASS || echo FAIL)
}

case_err_unknown_kernel() {
  expect_error extract nz 'vectorAdd' "$KC" extract no_such_kernel_zz -o "$CASE_DIR/cap" -- "$EX/vector_add"
  [ -e "$CASE_DIR/cap/capture" ] && bad "left a capture behind"
}
case_err_exit_before() {
  expect_error extract nz 'exit|ended|finished|before|terminated' \
    "$KC" extract vectorAdd --dispatch 5 -o "$CASE_DIR/cap" -- "$EX/vector_add"
  [ -e "$CASE_DIR/cap/capture" ] && bad "left a capture behind"
}
case_err_app_crash() {
  expect_error extract nz 'signal|abort|crash|killed' \
    "$KC" extract vectorAdd -o "$CASE_DIR/cap" -- "$EX/vector_add" --abort-before-launch
  [ -e "$CASE_DIR/cap/capture" ] && bad "left a capture behind"
}
case_err_dir_exists() {
  local dir=$CASE_DIR/cap
  do_extract "$dir" vectorAdd -- "$EX/vector_add" || return
  expect_error extract2 nz 'force' "$KC" extract vectorAdd -o "$dir" -- "$EX/vector_add"
  if run_step extract3 "$KC" extract vectorAdd -o "$dir" --force -- "$EX/vector_add"; then
    note "--force ok"
    do_validate "$dir"
  else
    bad "--force: $(first_error)"
  fi
}
case_err_truncated() {
  base_capture || return
  cp -r "$BASE" "$CASE_DIR/cap"
  local big
  big=$(find "$CASE_DIR/cap/capture" -type f ! -name manifest.json -printf '%s %p\n' | sort -n | tail -n1 | cut -d' ' -f2-)
  truncate -s $(($(stat -c %s "$big") / 2)) "$big"
  note "halved ${big#"$CASE_DIR/cap/"}"
  expect_error validate 2 'truncat|size|short|incomplete|damaged|corrupt' "$KC" validate "$CASE_DIR/cap"
  expect_error replay 2 'truncat|size|short|incomplete|damaged|corrupt' "$KC" replay "$CASE_DIR/cap" --iterations 1
}
# A BEFORE chunk changed after capture but still the right size: every read checks a chunk
# against its name (format 3; versions 1 and 2 needed --verify), so replay refuses it.
case_err_verify() {
  base_capture || return
  cp -r "$BASE" "$CASE_DIR/cap"
  local big size
  big=$(find "$CASE_DIR/cap/capture/chunks" -type f -size +0 -printf '%s %p\n' | sort -n | tail -n1 | cut -d' ' -f2-)
  size=$(stat -c %s "$big")
  printf '\xa5' | dd of="$big" bs=1 seek=$((size / 2)) conv=notrunc status=none
  cmp -s "$big" "$BASE/capture/chunks/$(basename "$big")" &&
    printf '\x5a' | dd of="$big" bs=1 seek=$((size / 2)) conv=notrunc status=none
  note "changed the middle byte of ${big#"$CASE_DIR/cap/"}"
  expect_error validate 2 'does not match|damaged' "$KC" validate "$CASE_DIR/cap" --verify
  expect_error replay_tool 2 'does not match|damaged' "$BUILD/bin/kerncap-replay" "$CASE_DIR/cap" --verify -n 1
}
case_err_no_manifest() {
  base_capture || return
  cp -r "$BASE" "$CASE_DIR/cap"
  rm "$CASE_DIR/cap/capture/manifest.json"
  expect_error validate 2 'manifest|capture' "$KC" validate "$CASE_DIR/cap"
}
case_err_newer_format() {
  base_capture || return
  cp -r "$BASE" "$CASE_DIR/cap"
  sed -i -E 's/"format_version"[[:space:]]*:[[:space:]]*[0-9]+/"format_version": 999/' "$CASE_DIR/cap/capture/manifest.json"
  grep -q '"format_version": 999' "$CASE_DIR/cap/capture/manifest.json" || { bad "could not edit format_version"; return; }
  expect_error validate 2 'newer|version' "$KC" validate "$CASE_DIR/cap"
}
case_err_cubin_lacks_kernel() {
  base_capture || return
  expect_error validate 2 'vectorAdd|kernel' "$KC" validate "$BASE" --cubin "$EX/driver_extra_kernel.cubin"
}
case_err_no_gpu() {
  base_capture || return
  expect_error validate 3 'gpu|device' env CUDA_VISIBLE_DEVICES= "$KC" validate "$BASE"
}

# ---- cases: the application's results with kerncap attached (--continue) -----------------------
# continue_case APP PATTERN [extract flags]: every line the plain run prints appears, in order,
# in the output of the run under `kerncap extract --continue`; then the capture validates.
continue_case() {
  local app=$1 pattern=$2
  shift 2
  need_example "$app" || return
  run_step plain "$EX/$app" || { bad "plain run failed: $(first_error)"; return; }
  cp "$STEP_OUT" "$CASE_DIR/plain.txt"
  grep -q '^checksum' "$CASE_DIR/plain.txt" || { bad "plain run printed no checksum"; return; }
  do_extract "$CASE_DIR/cap" "$pattern" --continue "$@" -- "$EX/$app" || return
  grep -Fx -f "$CASE_DIR/plain.txt" "$CASE_DIR/extract.out" >"$CASE_DIR/kept.txt"
  if cmp -s "$CASE_DIR/plain.txt" "$CASE_DIR/kept.txt"; then
    note "output identical ($(grep -m1 '^checksum' "$CASE_DIR/plain.txt" | cut -d' ' -f3))"
  else
    bad "output differs: plain [$(tr '\n' ' ' <"$CASE_DIR/plain.txt")] kerncap [$(grep '^checksum' "$CASE_DIR/extract.out" | tr '\n' ' ')]"
  fi
  do_validate "$CASE_DIR/cap"
}
case_continue_accumulate() { continue_case accumulate accumulate --dispatch 4; }
case_continue_globals() { continue_case globals polyEval --dispatch 1; }
case_continue_managed() { continue_case managed refine --dispatch 1; }
case_continue_driver_extra() { continue_case driver_extra saxpyExtra; }

# ---- cases: relocation -------------------------------------------------------------------------
case_collide_vector_add() {
  base_capture || return
  do_validate "$BASE" --collide 0 --json || return
  local rel words
  rel=$(json_get "$STEP_OUT" relocated_regions) || rel=missing
  words=$(json_get "$STEP_OUT" rewritten_words) || words=n/a
  if [[ $rel =~ ^[0-9]+$ ]] && [ "$rel" -ge 1 ]; then note "relocated $rel, rewrote $words words"; else bad "relocated_regions=$rel, expected >= 1"; fi
}
case_collide_no_relocate() {
  base_capture || return
  expect_error validate nz 'reloc|reserv|address|collid|occupied' "$KC" validate "$BASE" --collide 0 --no-relocate
}
# Every memory region of the batched capture collided in turn: each must PASS through relocation,
# and moving the batch buffers must rewrite the pointers held in the device pointer tables.
case_collide_batched() {
  need_example batched_ptrs || return
  CAP=$CASE_DIR/cap
  do_extract "$CAP" batchedScale -- "$EX/batched_ptrs" || return
  local ids id pass=0 n=0 words total=0 known=0 rel
  # Module globals are placed by the module load, not reserved: nothing to collide with.
  ids=$(mpy '" ".join(str(r["id"]) for r in m["regions"] if r["kind"] != "global")')
  for id in $ids; do
    n=$((n + 1))
    run_step "validate_collide_$id" "$KC" validate "$CAP" --collide "$id" --json || { bad "collide $id: $(first_error)"; continue; }
    rel=$(json_get "$STEP_OUT" relocated_regions) || rel=0
    [ "$rel" -ge 1 ] 2>/dev/null || { bad "collide $id: relocated_regions=$rel"; continue; }
    pass=$((pass + 1))
    if words=$(json_get "$STEP_OUT" rewritten_words); then known=1; total=$((total + words)); fi
  done
  R_VALIDATE="$pass/$n PASS"
  if [ "$known" = 1 ]; then note "rewrote $total words in all"; else note "rewritten_words not reported"; fi
  [ "$known" = 1 ] && [ "$total" -eq 0 ] && bad "no pointer words rewritten"
  [ "$n" -gt 0 ] || bad "capture has no regions"
}

# 100 validations of one capture in a row: all must PASS; count those that needed relocation.
case_validate_x100() {
  need_example struct_ptrs || return
  CAP=$CASE_DIR/cap
  do_extract "$CAP" stepParticles --dispatch 1 -- "$EX/struct_ptrs" || return
  local i pass=0 relocated=0 rel t0
  t0=$(now)
  for i in $(seq 1 100); do
    timeout -k 5 "$TIMEOUT" "$KC" validate "$CAP" --json >"$CASE_DIR/v.out" 2>"$CASE_DIR/v.err"
    local rc=$?
    rel=$(json_get "$CASE_DIR/v.out" relocated_regions) || rel="?"
    echo "run $i: exit $rc relocated_regions $rel" >>"$LOG"
    if [ $rc -eq 0 ]; then pass=$((pass + 1)); else sed 's/^/  /' "$CASE_DIR/v.out" "$CASE_DIR/v.err" | tail -n 5 >>"$LOG"; fi
    [ "$rel" != 0 ] && [ "$rel" != "?" ] && relocated=$((relocated + 1))
  done
  R_VALIDATE="$pass/100 PASS"
  note "$relocated needed relocation, $(since "$t0")s"
  [ $pass -eq 100 ] || bad "$((100 - pass)) failed"
}

# ---- cases: PyTorch ------------------------------------------------------------------------------
torch_case() {  # torch_case MODE PATTERN [extract flags]
  local mode=$1 pattern=$2
  shift 2
  if [ ! -f "$WORK/torch_ok" ]; then  # cases run in subshells: remember the answer in a file
    "$TORCH_PY" -c 'import torch, sys; print(torch.__version__); sys.exit(0 if torch.cuda.is_available() else 1)' \
      >>"$LOGS/environment.log" 2>&1 && echo yes >"$WORK/torch_ok" || echo no >"$WORK/torch_ok"
  fi
  [ "$(cat "$WORK/torch_ok")" = yes ] || { skip "no $TORCH_PY with CUDA torch"; return; }
  if ! std_flow "$pattern" "$@" -- "$TORCH_PY" "$HERE/torch_app.py" "$mode"; then
    # Show which kernels the mode launches, to fix the pattern.
    run_step names "$TORCH_PY" "$HERE/torch_app.py" names "$mode" || true
    return 1
  fi
  note "$(mpy 'm["kernel"]["demangled"][:60]')"
  note "params $(mpy '[s["size"] for s in m["params"]["slots"]]')"
}
case_torch_elementwise() { torch_case elementwise 'MulFunctor'; }
case_torch_reduce() { torch_case reduce 'reduce_kernel'; }
case_torch_gemm_fp16() { torch_case gemm_fp16 'nvjet|gemm|xmma|cutlass' --regex; }
case_torch_gemm_bf16() { torch_case gemm_bf16 'nvjet|gemm|xmma|cutlass' --regex; }

# ---- driver -------------------------------------------------------------------------------------
CASES=(
  vector_add accumulate batched_ptrs struct_ptrs globals big_smem templated dispatch
  async_stream managed mapped_host cluster_launch cooperative driver_extra two_configs_bounds two_configs_same
  err_device_launch
  graph_capture
  cubin_variant strong_identical fuzz_clamp fuzz_tailmask err_fuzz_no_float nondet_atomic engine_standalone engine_c_abi err_unknown_kernel err_exit_before err_app_crash err_dir_exists err_truncated err_verify
  err_no_manifest err_newer_format err_cubin_lacks_kernel err_no_gpu
  continue_accumulate continue_globals continue_managed continue_driver_extra
  collide_vector_add collide_no_relocate collide_batched validate_x100
  torch_elementwise torch_reduce torch_gemm_fp16 torch_gemm_bf16
)

run_case() {
  local name=$1 t0 result
  CASE_DIR=$WORK/$name
  LOG=$LOGS/$name.log
  mkdir -p "$CASE_DIR"
  : >"$LOG"
  t0=$(now)
  (
    "case_$name"
    result=PASS
    [ "$R_FAIL" = 1 ] && result=FAIL
    [ "$R_FAIL" = 0 ] && [ "$R_SKIP" = 1 ] && result=SKIP
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$result" "$R_EXTRACT" "$R_REPLAY" "$R_VALIDATE" \
      "$(printf '%s' "$R_NOTE" | tr '\t\n' '  ')" >>"$ROWS"
  )
  if ! grep -q "^$name	" "$ROWS"; then
    printf '%s\tFAIL\t-\t-\t-\tcase script died (see log)\n' "$name" >>"$ROWS"
  fi
  result=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$ROWS")
  echo "[$result] $name ($(since "$t0")s)"
  if [ "$result" = FAIL ]; then
    {
      echo "---- $name: last lines of $LOG"
      tail -n 10 "$LOG" | cut -c1-160
    } >>"$FAILTAILS"
  fi
}

T0=$(now)
{
  echo "kerncap GPU suite, $(date -u +%FT%TZ)"
  nvidia-smi -L
  "$KC" --version
} >"$LOGS/environment.log" 2>&1
echo "GPU suite: $(nvidia-smi -L | head -n1); logs in $LOGS"

# The examples are part of the normal build; build them if this tree lacks them.
if [ ! -x "$EX/vector_add" ] && command -v cmake >/dev/null; then
  echo "building the examples ..."
  cmake --build "$BUILD" --target kerncap_examples >>"$LOGS/environment.log" 2>&1 ||
    echo "building the examples failed (see $LOGS/environment.log)"
fi

for c in "${CASES[@]}"; do
  [ -n "$ONLY" ] && ! [[ $c =~ $ONLY ]] && continue
  run_case "$c"
done

# Failure tails first, capped, so the table and the closing line stay at the very end of the
# output (callers often keep only its tail); the full logs are in $LOGS.
if [ -s "$FAILTAILS" ]; then
  echo
  head -c 5000 "$FAILTAILS"
  [ "$(wc -c <"$FAILTAILS")" -gt 5000 ] && echo "... (more in $LOGS)"
fi
echo
table() {  # table NOTE_WIDTH: the rows as an aligned markdown table
  awk -F'\t' -v nw="$1" '
    BEGIN { h[1] = "case"; h[2] = "result"; h[3] = "extract"; h[4] = "replay median"; h[5] = "validate"; h[6] = "note"
            for (i = 1; i <= 6; i++) w[i] = length(h[i]) }
    { n++; for (i = 1; i <= 6; i++) { v = $i; if (i == 6 && length(v) > nw) v = substr(v, 1, nw - 3) "..."
        c[n, i] = v; if (length(v) > w[i]) w[i] = length(v) } }
    function line(get,   i, s) { s = "|"; for (i = 1; i <= 6; i++) s = s sprintf(" %-" w[i] "s |", get[i]); print s }
    END { line(h); for (i = 1; i <= 6; i++) { d[i] = sprintf("%" w[i] "s", ""); gsub(/ /, "-", d[i]) }; line(d)
          for (r = 1; r <= n; r++) { for (i = 1; i <= 6; i++) row[i] = c[r, i]; line(row) } }' "$ROWS"
}
table 100000 >"$LOGS/summary.md"
table 90
tsv_summary

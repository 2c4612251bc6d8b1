#!/usr/bin/env bash
# shellcheck disable=SC2034  # R_*: a case's row columns, read through CASE_COLUMNS (lib.sh tsv_row)
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

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-120}
TORCH_PY=${KERNCAP_PYTHON:-python3}
if [ ! -x "$KC" ]; then
  echo "kerncap is not built: $KC missing (build first: cmake --build $BUILD)"
  exit 1
fi

gpu_work_dir gpu apart
trap cleanup EXIT
FAILTAILS=$WORK/failures.txt  # run_case (lib.sh): a failed case's last log lines, shown at the end
: >"$FAILTAILS"

SINCE_DECIMALS=1  # since (lib.sh) prints tenths of a second
ERROR_RE='error|fail|refus|cannot|not found|no kernel'  # first_error (lib.sh): the note column

# Each case runs in its own subshell (run_case, lib.sh) with D (its directory) and LOG (its log);
# its commands go through run (lib.sh): stdout in $STEP_OUT, stderr in $STEP_ERR, both logged.
# mpy EXPR: manifest_get (lib.sh) over the capture $CAP.
mpy() { manifest_get "$CAP" "$1"; }

# ---- row state (set inside each case's subshell) -------------------------------------------
R_EXTRACT=- R_REPLAY=- R_VALIDATE=- R_FAIL=0 R_SKIP=0 R_NOTE=""
CASE_COLUMNS=(R_EXTRACT R_REPLAY R_VALIDATE)  # tsv_row: the row's columns after the verdict

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
  run extract "$KC" extract "$pattern" -o "$dir" "$@"
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
  run replay "$KC" replay "$dir" --iterations 20 --json "$@"
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
  run validate "$KC" validate "$dir" "$@"
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
  CAP=$D/cap
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
  run "$step" "$@"
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
  local saved=$D
  D=$WORK/base
  mkdir -p "$D"
  rm -rf "$BASE"
  run extract "$KC" extract vectorAdd -o "$BASE" -- "$EX/vector_add"
  D=$saved
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
  if grep -q '^checksum accumulate' "$D/extract.out"; then bad "application ran to the end without --continue"; else note "app stopped"; fi
}
case_batched_ptrs() {
  need_example batched_ptrs || return
  std_flow batchedScale -- "$EX/batched_ptrs" || return
  mcheck 'len(m["regions"]) >= 11' "$(mpy 'len(m["regions"])') regions"
}
# example_case EXAMPLE PATTERN EXPR WHAT [extract flags]: std_flow on examples/EXAMPLE's kernel
# PATTERN, then mcheck EXPR WHAT on its capture.
example_case() {
  local example=$1 pattern=$2 expr=$3 what=$4
  shift 4
  need_example "$example" || return
  std_flow "$pattern" "$@" -- "$EX/$example" || return
  mcheck "$expr" "$what"
}
case_struct_ptrs() {
  example_case struct_ptrs stepParticles 'len(m["params"]["slots"]) == 1 and m["params"]["slots"][0]["size"] == 48' \
    "one 48-byte struct param" --dispatch 1
}
case_globals() {
  need_example globals || return
  std_flow polyEval --dispatch 1 -- "$EX/globals" || return
  mcheck 'kinds.count("global") >= 2' "$(mpy 'kinds.count("global")') global regions"
}
case_big_smem() { example_case big_smem reverseTiles 'm["launch"]["shared_mem_bytes"] == 98304' "96 KB dynamic smem"; }
case_templated() {
  example_case templated 'transform_kernel<double' \
    '"Square<double>" in m["kernel"]["demangled"] and len(m["kernel"]["mangled"]) > 60' "Square<double> instantiation"
}
case_dispatch() {
  example_case dispatch iterate 'm["kernel"]["dispatch"] == 3 and param(2, "<i") == 3' "iteration param == 3" --dispatch 3
}
case_async_stream() {
  need_example async_stream || return
  std_flow smooth3 --dispatch 1 -- "$EX/async_stream" || return
  note "kinds $(mpy 'sorted(set(kinds))')"
}
case_managed() { example_case managed refine '"managed" in kinds' "managed region" --dispatch 1; }
case_mapped_host() { example_case mapped_host zeroCopyScale '"host_mapped" in kinds' "host_mapped region"; }
case_cluster_launch() { example_case cluster_launch clusterExchange 'list(m["launch"]["cluster"]) == [4, 1, 1]' "cluster 4x1x1"; }
case_cooperative() { example_case cooperative gridSum 'm["launch"]["cooperative"] is True' "cooperative"; }
case_driver_extra() {
  example_case driver_extra saxpyExtra 'm["params"]["size"] == 24 and param(2, "<f") == 3.0' "24-byte extra buffer, a=3" ||
    return
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
    "$KC" extract scaleChild -o "$D/child" -- "$EX/device_launch"
  cat "$STEP_OUT" "$STEP_ERR" | grep -q 'scaleChild(float\*, float, int)' || bad "the message does not name scaleChild"
  do_extract "$D/parent" scaleParent -- "$EX/device_launch" && note "the parent kernel is captured"
}
case_two_configs_same() { two_configs_case same; }
# The launch inside stream capture does not count; the graph's kernel node counts once per
# graph launch (dispatch 0 and 1, add=1.0; tests/gpu/graph_e2e.sh captures those), so the
# direct launch that adds 2.0 is dispatch 2.
case_graph_capture() { example_case graph_capture graphStep 'param(1, "<f") == 2.0' "direct launch (add=2)" --dispatch 2; }

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
  CAP=$D/cap
  do_extract "$CAP" sumSquares --dispatch 2 -- "$EX/atomic_norm" || return
  do_validate "$CAP" || return
  local line
  line=$(grep -m1 '^Result:' "$STEP_OUT")
  if [[ $line == *"nondeterministic kernel"* && $line == *"max abs error"* ]]; then note "${line:14:110}"
  else note "replays agreed this time: ${line:0:100}"; fi
  run validate_exact "$KC" validate "$CAP" --no-determinism-check
  note "byte-exact without the check: $(grep -m1 -o '^Result: [A-Z]*' "$STEP_OUT")"
}

# Strong validation where the application's launch rewrote identical bytes (dispatch 2 of 4
# launches on the same inputs): weak validation cannot tell a no-op from the kernel; with the
# footprint the captured image passes strongly and a no-op or tail-skipping variant fails.
case_strong_identical() {
  need_example vector_add || return
  CAP=$D/cap
  do_extract "$CAP" vectorAdd --dispatch 2 -- "$EX/vector_add" 1000000 --repeat 4 || return
  mcheck 'len(m["after"]["runs"]) == 0' "AFTER empty (identical rewrite)"
  run weak_noop "$KC" validate "$CAP" --cubin "$EX/vector_add_noop.cubin" --footprint never
  note "weak no-op: $(grep -m1 -o '^Result: [A-Z]*' "$STEP_OUT")"
  run footprint "$KC" footprint "$CAP" || { bad "footprint: $(first_error)"; return; }
  do_validate "$CAP" || return
  grep -q '^Result: PASS (strong' "$STEP_OUT" || bad "captured image not strongly validated: $(grep -m1 '^Result' "$STEP_OUT")"
  local v rc
  for v in noop tail; do
    run "strong_$v" "$KC" validate "$CAP" --cubin "$EX/vector_add_$v.cubin"
    rc=$?
    if [ $rc -eq 1 ] && grep -q '^Result: FAIL' "$STEP_OUT"; then note "$v variant FAILs"; else bad "$v variant: rc $rc $(grep -m1 '^Result' "$STEP_OUT")"; fi
  done
}

# fuzz_fails N VARIANT SEED WHAT: a capture of examples/vector_add N (with its footprint) on
# which vector_add_VARIANT.cubin, right only for the captured inputs, passes plain validation
# and must fail --fuzz 20 --seed SEED, naming the seed and trial. False when it got no further
# than the plain validation.
fuzz_fails() {
  local n=$1 variant=$2 seed=$3 what=$4 rc
  need_example vector_add || return
  CAP=$D/cap
  do_extract "$CAP" vectorAdd -- "$EX/vector_add" "$n" || return
  run footprint "$KC" footprint "$CAP" || { bad "footprint: $(first_error)"; return 1; }
  do_validate "$CAP" --cubin "$EX/vector_add_$variant.cubin" || return
  note "plain: $(grep -m1 -o '^Result: [A-Z]* ([a-z]*' "$STEP_OUT")"
  run "fuzz_$variant" "$KC" validate "$CAP" --cubin "$EX/vector_add_$variant.cubin" --fuzz 20 --seed "$seed"
  rc=$?
  if [ $rc -eq 1 ] && grep -q '^Fuzz: FAIL' "$STEP_OUT"; then note "$(grep -m1 '^Fuzz' "$STEP_OUT" | cut -c1-110)"
  else bad "$what variant under --fuzz: rc $rc $(grep -m1 -E '^(Fuzz|Result)' "$STEP_OUT")"; fi
}
# Fuzzing: a variant right only for the captured inputs (b clamped at 0; the captured b >= 0)
# passes plain strong validation and must fail --fuzz 20, naming the seed and trial; the
# kernel's own image passes the same fuzzing. A capture without float inputs is refused.
case_fuzz_clamp() {
  fuzz_fails 100000 clamp 7 clamp || return
  local rc
  run fuzz_same "$KC" validate "$CAP" --cubin "$EX/vector_add.cubin" --fuzz 5
  rc=$?
  if [ $rc -eq 0 ] && grep -q '^Fuzz: PASS' "$STEP_OUT"; then note "correct variant fuzz PASS"
  else bad "correct variant under --fuzz: rc $rc $(grep -m1 -E '^(Fuzz|Result)' "$STEP_OUT") $(first_error)"; fi
}
# An off-by-one in the tail mask of a load (the last b reads as 0): the captured b[n-1] is 0
# for n = 100024, so plain strong validation passes; random inputs under --fuzz 20 must not.
case_fuzz_tailmask() { fuzz_fails 100024 tailmask 3 tail-mask; }
case_err_fuzz_no_float() {
  need_example struct_ptrs || return
  CAP=$D/cap
  do_extract "$CAP" stepParticles --dispatch 1 -- "$EX/struct_ptrs" || return
  run footprint "$KC" footprint "$CAP" || { bad "footprint: $(first_error)"; return; }
  expect_error validate 2 'floating-point inputs' "$KC" validate "$CAP" --fuzz 3
}

# ---- cases: the engine outside the CLI ----------------------------------------------------------
# kerncap-replay (the engine alone) validates and times the base capture.
case_engine_standalone() {
  base_capture || return
  run replay_tool "$BUILD/bin/kerncap-replay" "$BASE" --validate --json -n 10 || { bad "kerncap-replay: $(first_error)"; return; }
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
  run c_abi python3 "$HERE/engine_check.py" "$BUILD/lib/libkerncap_replay.so" "$BASE"
  local rc=$?
  note "$(tail -n1 "$STEP_OUT" | cut -c1-150)"
  [ $rc -eq 0 ] || bad "engine_check.py: rc $rc $(first_error)"
  R_VALIDATE=$([ $rc -eq 0 ] && echo PASS || echo FAIL)
}

case_err_unknown_kernel() {
  expect_error extract nz 'vectorAdd' "$KC" extract no_such_kernel_zz -o "$D/cap" -- "$EX/vector_add"
  [ -e "$D/cap/capture" ] && bad "left a capture behind"
}
case_err_exit_before() {
  expect_error extract nz 'exit|ended|finished|before|terminated' \
    "$KC" extract vectorAdd --dispatch 5 -o "$D/cap" -- "$EX/vector_add"
  [ -e "$D/cap/capture" ] && bad "left a capture behind"
}
case_err_app_crash() {
  expect_error extract nz 'signal|abort|crash|killed' \
    "$KC" extract vectorAdd -o "$D/cap" -- "$EX/vector_add" --abort-before-launch
  [ -e "$D/cap/capture" ] && bad "left a capture behind"
}
case_err_dir_exists() {
  local dir=$D/cap
  do_extract "$dir" vectorAdd -- "$EX/vector_add" || return
  expect_error extract2 nz 'force' "$KC" extract vectorAdd -o "$dir" -- "$EX/vector_add"
  if run extract3 "$KC" extract vectorAdd -o "$dir" --force -- "$EX/vector_add"; then
    note "--force ok"
    do_validate "$dir"
  else
    bad "--force: $(first_error)"
  fi
}
case_err_truncated() {
  base_capture || return
  cp -r "$BASE" "$D/cap"
  local big
  big=$(find "$D/cap/capture" -type f ! -name manifest.json -printf '%s %p\n' | sort -n | tail -n1 | cut -d' ' -f2-)
  truncate -s $(($(stat -c %s "$big") / 2)) "$big"
  note "halved ${big#"$D/cap/"}"
  expect_error validate 2 'truncat|size|short|incomplete|damaged|corrupt' "$KC" validate "$D/cap"
  expect_error replay 2 'truncat|size|short|incomplete|damaged|corrupt' "$KC" replay "$D/cap" --iterations 1
}
# A BEFORE chunk changed after capture but still the right size: every read checks a chunk
# against its name (format 3; versions 1 and 2 needed --verify), so replay refuses it.
case_err_verify() {
  base_capture || return
  cp -r "$BASE" "$D/cap"
  local big size
  big=$(find "$D/cap/capture/chunks" -type f -size +0 -printf '%s %p\n' | sort -n | tail -n1 | cut -d' ' -f2-)
  size=$(stat -c %s "$big")
  printf '\xa5' | dd of="$big" bs=1 seek=$((size / 2)) conv=notrunc status=none
  cmp -s "$big" "$BASE/capture/chunks/$(basename "$big")" &&
    printf '\x5a' | dd of="$big" bs=1 seek=$((size / 2)) conv=notrunc status=none
  note "changed the middle byte of ${big#"$D/cap/"}"
  expect_error validate 2 'does not match|damaged' "$KC" validate "$D/cap" --verify
  expect_error replay_tool 2 'does not match|damaged' "$BUILD/bin/kerncap-replay" "$D/cap" --verify -n 1
}
case_err_no_manifest() {
  base_capture || return
  cp -r "$BASE" "$D/cap"
  rm "$D/cap/capture/manifest.json"
  expect_error validate 2 'manifest|capture' "$KC" validate "$D/cap"
}
case_err_newer_format() {
  base_capture || return
  cp -r "$BASE" "$D/cap"
  sed -i -E 's/"format_version"[[:space:]]*:[[:space:]]*[0-9]+/"format_version": 999/' "$D/cap/capture/manifest.json"
  grep -q '"format_version": 999' "$D/cap/capture/manifest.json" || { bad "could not edit format_version"; return; }
  expect_error validate 2 'newer|version' "$KC" validate "$D/cap"
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
  run plain "$EX/$app" || { bad "plain run failed: $(first_error)"; return; }
  cp "$STEP_OUT" "$D/plain.txt"
  grep -q '^checksum' "$D/plain.txt" || { bad "plain run printed no checksum"; return; }
  do_extract "$D/cap" "$pattern" --continue "$@" -- "$EX/$app" || return
  grep -Fx -f "$D/plain.txt" "$D/extract.out" >"$D/kept.txt"
  if cmp -s "$D/plain.txt" "$D/kept.txt"; then
    note "output identical ($(grep -m1 '^checksum' "$D/plain.txt" | cut -d' ' -f3))"
  else
    bad "output differs: plain [$(tr '\n' ' ' <"$D/plain.txt")] kerncap [$(grep '^checksum' "$D/extract.out" | tr '\n' ' ')]"
  fi
  do_validate "$D/cap"
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
  CAP=$D/cap
  do_extract "$CAP" batchedScale -- "$EX/batched_ptrs" || return
  local ids id pass=0 n=0 words total=0 known=0 rel
  # Module globals are placed by the module load, not reserved: nothing to collide with.
  ids=$(mpy '" ".join(str(r["id"]) for r in m["regions"] if r["kind"] != "global")')
  for id in $ids; do
    n=$((n + 1))
    run "validate_collide_$id" "$KC" validate "$CAP" --collide "$id" --json || { bad "collide $id: $(first_error)"; continue; }
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
  CAP=$D/cap
  do_extract "$CAP" stepParticles --dispatch 1 -- "$EX/struct_ptrs" || return
  local i pass=0 relocated=0 rel t0
  t0=$(now)
  for i in $(seq 1 100); do
    timeout -k 5 "$TIMEOUT" "$KC" validate "$CAP" --json >"$D/v.out" 2>"$D/v.err"
    local rc=$?
    rel=$(json_get "$D/v.out" relocated_regions) || rel="?"
    echo "run $i: exit $rc relocated_regions $rel" >>"$LOG"
    if [ $rc -eq 0 ]; then pass=$((pass + 1)); else sed 's/^/  /' "$D/v.out" "$D/v.err" | tail -n 5 >>"$LOG"; fi
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
    run names "$TORCH_PY" "$HERE/torch_app.py" names "$mode" || true
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
  want -E "$c" && run_case "$c"
done

# Failure tails first, capped, so the table and the closing line stay at the very end of the
# output (callers often keep only its tail); the full logs are in $LOGS.
if [ -s "$FAILTAILS" ]; then
  echo
  head -c 5000 "$FAILTAILS"
  [ "$(wc -c <"$FAILTAILS")" -gt 5000 ] && echo "... (more in $LOGS)"
fi
echo
aligned_table() {  # aligned_table NOTE_WIDTH: the rows as an aligned markdown table
  awk -F'\t' -v nw="$1" '
    BEGIN { h[1] = "case"; h[2] = "result"; h[3] = "extract"; h[4] = "replay median"; h[5] = "validate"; h[6] = "note"
            for (i = 1; i <= 6; i++) w[i] = length(h[i]) }
    { n++; for (i = 1; i <= 6; i++) { v = $i; if (i == 6 && length(v) > nw) v = substr(v, 1, nw - 3) "..."
        c[n, i] = v; if (length(v) > w[i]) w[i] = length(v) } }
    function line(get,   i, s) { s = "|"; for (i = 1; i <= 6; i++) s = s sprintf(" %-" w[i] "s |", get[i]); print s }
    END { line(h); for (i = 1; i <= 6; i++) { d[i] = sprintf("%" w[i] "s", ""); gsub(/ /, "-", d[i]) }; line(d)
          for (r = 1; r <= n; r++) { for (i = 1; i <= 6; i++) row[i] = c[r, i]; line(row) } }' "$ROWS"
}
aligned_table 100000 >"$LOGS/summary.md"
aligned_table 90
tsv_summary

#!/usr/bin/env bash
# GPU suite for kernels inside CUDA graphs: each graph kernel node counts as a launch, and a
# target inside a graph launch is captured there (ancestors run first, the target as an
# ordinary launch), validated, and with --continue the application's printed results are
# identical to a run without kerncap. Programs: tests/gpu/graph_apps/ (built here with nvcc).
#
#   chain_mid     stream-captured graph (fork/join, memset, 5 kernels; source graph destroyed):
#                 gTarget, whose inputs come from earlier nodes, at the 2nd graph launch,
#                 --continue: output identical, k = 3.0 in the parameters, validate PASS
#   chain_strong  the same capture after `kerncap footprint`: validate PASS (strong)
#   chain_first   gInit at dispatch 0 (no ancestors), application stopped after the capture
#   chain_last    gTail (accumulates across launches) at the 3rd launch, --continue identical
#   update        explicit graph, cudaGraphExecKernelNodeSetParams before every launch:
#                 uAxpy at dispatch 2 carries alpha = 3.0, --continue identical, validate PASS
#   torch_profile torch.cuda.CUDAGraph: `kerncap profile` marks the exp kernel in_graph and
#                 lists a --dispatch index for every call (graph replays included)
#   torch_mid     the exp kernel (middle of mul -> exp -> add -> sum) at the 2nd replay
#                 (--dispatch 4: 3 warm-up launches first), --continue identical, validate PASS
#   bad_never     a kernel only in a graph never launched: fails, says "never launched"
#   bad_nested    a graph launched on a stream being captured: fails, says so
#   bad_alloc     a graph with a memory allocation node: fails, names the node kind
# Prints one line per case and "N passed, N failed". Exit 0 all passed, 1 some failed,
# 77 skipped (no GPU).
#
#   tests/gpu/graph_e2e.sh BUILD_DIR
#
# Environment: OUT (logs under it), TORCH_PY (python with CUDA torch, default python3),
# KERNCAP_GPU_CASES (names to run), KERNCAP_GPU_TIMEOUT (per command, default 240 s),
# KERNCAP_GPU_KEEP=1 (keep the work directory).
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/graph_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${TORCH_PY:-python3}
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-240}
for f in "$KC" "$NVCC"; do [ -x "$f" ] || { echo "missing $f"; exit 1; }; done
gpu_work_dir graph
[ -n "${OUT:-}" ] || trap cleanup EXIT
echo "graph suite: work in $WORK"

SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
for app in graph_chain graph_update graph_bad; do
  if ! "$NVCC" -O2 -arch=sm_"$SM" -o "$WORK/$app" "$HERE/graph_apps/$app.cu" >"$WORK/$app.build.log" 2>&1; then
    echo "cannot build $app:"; tail -5 "$WORK/$app.build.log"; exit 1
  fi
done

VERDICT_STYLE=column VERDICT_WIDTH=14                 # verdict: "NAME  PASS  NOTE"
ERROR_RE='error|fail|refus|cannot|never|captur'     # first_error
NOTE=""  # what the case found, its verdict's note
# validate NAME CAP: Result: PASS, exit 0.
validate() {
  run "$1" "$KC" validate "$2"
  local res
  res=$(result_of)
  NOTE="$NOTE; validate: ${res:-rc=$RC}"
  [ $RC -eq 0 ] && [[ $res == "Result: PASS"* ]]
}
# same_output NAME: the APP lines of the plain run and of the run under kerncap are identical.
same_output() {
  grep '^APP ' "$WORK/$1.plain.out" >"$WORK/$1.plain.app"
  grep '^APP ' "$WORK/$1.out" >"$WORK/$1.kc.app"
  [ -s "$WORK/$1.plain.app" ] && cmp -s "$WORK/$1.plain.app" "$WORK/$1.kc.app"
}

# continue_case NAME PATTERN DISPATCH CHECK -- APP ARGS: plain run, extract --continue,
# identical output, CHECK (a manifest_get expression) true, validate PASS.
continue_case() {
  local name=$1 pattern=$2 dispatch=$3 check=$4 ok=1
  shift 5
  NOTE=""
  run "$name.plain" "$@" || { NOTE="plain run failed rc=$RC"; verdict "$name" FAIL "$NOTE"; return; }
  run "$name" "$KC" extract "$pattern" --dispatch "$dispatch" --continue -o "$WORK/$name.cap" -- "$@"
  if [ $RC -ne 0 ] || [ ! -f "$WORK/$name.cap/capture/manifest.json" ]; then
    NOTE="extract rc=$RC: $(first_error "$name")"; verdict "$name" FAIL "$NOTE"; return
  fi
  if same_output "$name"; then NOTE="output identical"; else
    ok=0; NOTE="output differs: plain [$(tr '\n' ' ' <"$WORK/$name.plain.app")] kerncap [$(tr '\n' ' ' <"$WORK/$name.kc.app")]"; fi
  local v
  v=$(manifest_get "$WORK/$name.cap" "$check")
  [ "$v" = True ] || { ok=0; NOTE="$NOTE; NOT $check -> ${v:0:120}"; }
  validate "$name.validate" "$WORK/$name.cap" || ok=0
  verdict "$name" "$(pass_if "$ok")" "$NOTE"
}

# bad_case NAME PATTERN REGEX -- APP ARGS: extract fails cleanly, its output matches REGEX.
bad_case() {
  local name=$1 pattern=$2 re=$3 ok=1
  shift 4
  NOTE=""
  run "$name" "$KC" extract "$pattern" -o "$WORK/$name.cap" -- "$@"
  if [ $RC -eq 0 ]; then ok=0; NOTE="extract succeeded but must fail"; fi
  if [ $RC -ge 124 ] || [ $RC -eq 70 ]; then ok=0; NOTE="crashed, timed out or internal error (rc=$RC)"; fi
  if ! cat "$WORK/$name.out" "$WORK/$name.err" | grep -Eqi -- "$re"; then
    ok=0; NOTE="$NOTE; message does not match /$re/"; fi
  NOTE="$NOTE; says: $(grep -h -m1 -Ei -- "$re" "$WORK/$name.err" "$WORK/$name.out" | cut -c1-150)"
  verdict "$name" "$(pass_if "$ok")" "$NOTE"
}

CHAIN=$WORK/graph_chain
want chain_mid && continue_case chain_mid gTarget 1 'param(3, "<f") == 3.0 and m["kernel"]["dispatch"] == 1' -- "$CHAIN"
if want chain_strong; then
  NOTE=""
  if [ -f "$WORK/chain_mid.cap/capture/manifest.json" ]; then
    run chain_strong.fp "$KC" footprint "$WORK/chain_mid.cap"
    ok=1
    if [ $RC -ne 0 ] && grep -qi 'sanitizer' "$WORK/chain_strong.fp.out" "$WORK/chain_strong.fp.err"; then
      verdict chain_strong SKIP "footprint unavailable: $(first_error chain_strong.fp)"
    else
      [ $RC -eq 0 ] || { ok=0; NOTE="footprint rc=$RC: $(first_error chain_strong.fp)"; }
      validate chain_strong "$WORK/chain_mid.cap" || ok=0
      grep -q 'strong' "$WORK/chain_strong.out" || NOTE="$NOTE (not strong)"
      verdict chain_strong "$(pass_if "$ok")" "$NOTE"
    fi
  else
    NOTE="no chain_mid capture"; verdict chain_strong FAIL "$NOTE"
  fi
fi
if want chain_first; then
  NOTE=""
  run chain_first "$KC" extract gInit --dispatch 0 -o "$WORK/chain_first.cap" -- "$CHAIN"
  ok=1
  [ $RC -eq 0 ] && [ -f "$WORK/chain_first.cap/capture/manifest.json" ] || { ok=0; NOTE="extract rc=$RC: $(first_error chain_first)"; }
  if grep -q '^APP acc 0' "$WORK/chain_first.out"; then ok=0; NOTE="$NOTE; the application ran on without --continue"; else NOTE="app stopped"; fi
  [ $ok = 1 ] && { validate chain_first.validate "$WORK/chain_first.cap" || ok=0; }
  verdict chain_first "$(pass_if "$ok")" "$NOTE"
fi
want chain_last && continue_case chain_last gTail 2 'm["kernel"]["dispatch"] == 2' -- "$CHAIN"
want update && continue_case update uAxpy 2 'param(2, "<f") == 3.0' -- "$WORK/graph_update"

if want torch_profile || want torch_mid; then
  if ! torch_ok; then
    NOTE="no CUDA torch in $PY"
    want torch_profile && verdict torch_profile FAIL "$NOTE"
    want torch_mid && verdict torch_mid FAIL "$NOTE"
  else
    if want torch_profile; then
      NOTE=""
      run torch_profile "$KC" profile -o "$WORK/torch_profile.json" -- "$PY" "$HERE/graph_apps/graph_torch.py"
      v=$(python3 - "$WORK/torch_profile.json" <<'PY' 2>&1
import json, sys
doc = json.load(open(sys.argv[1]))
ks = [k for k in doc["kernels"] if "exp_kernel_cuda" in k["demangled"]]
k = ks[0]
p = k["extract"]["processes"][0]
ok = k["in_graph"] and p["dispatch"] == list(range(p["calls"])) and p["graph_calls"] == 4 and p["calls"] == 7
print(ok, p["calls"], p["graph_calls"], p["dispatch"])
PY
)
      NOTE="exp kernel: calls, graph calls, dispatch = ${v#* }"
      [ $RC -eq 0 ] && [[ $v == True* ]] && verdict torch_profile PASS "$NOTE" || { NOTE="$NOTE (rc=$RC)"; verdict torch_profile FAIL "$NOTE"; }
    fi
    want torch_mid && continue_case torch_mid exp_kernel_cuda 4 'm["kernel"]["dispatch"] == 4' -- "$PY" "$HERE/graph_apps/graph_torch.py"
  fi
fi

want bad_never && bad_case bad_never badNever 'never launched' -- "$WORK/graph_bad" never
want bad_nested && bad_case bad_nested badNested 'being captured|capturing another' -- "$WORK/graph_bad" nested
want bad_alloc && bad_case bad_alloc badAlloc 'memory allocation node' -- "$WORK/graph_bad" alloc

summary

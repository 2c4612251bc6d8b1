#!/usr/bin/env bash
# GPU end-to-end checks of `kerncap profile`: our own examples and
# bench/profile_overhead_app (exit from a thread, fork, a spawned child, several streams,
# no kernels, a failing exit code, a CUPTI conflict), a PyTorch transformer block fwd+bwd,
# a torch.compile'd model, an @triton.autotune matmul (benchmark launches shown apart, not
# given a --dispatch index) and torch.multiprocessing workers. For each: the ranking, the
# percentages, the trace (one event per launch), the classification, and `extract` of the
# top kernel with the name and --dispatch the profile gave.
#
#   tests/gpu/profile_e2e.sh BUILD_DIR
#
# Prints one line per check (PASS/FAIL/SKIP) and "N passed, N failed, N skipped".
# Exit 0 all run checks passed, 1 some failed, 77 skipped (no GPU).
# Environment: OUT (work files under $OUT/profile-e2e, kept), KERNCAP_PYTHON (python with
# torch, default python3), KERNCAP_GPU_TIMEOUT (per command, default 300 s).
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/profile_e2e.sh BUILD_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_required
BUILD=$(cd "$BUILD" && pwd) || exit 1
KC=$BUILD/bin/kerncap
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EX=$BUILD/examples
APP=$BUILD/bench/profile_overhead_app
PY=${KERNCAP_PYTHON:-python3}
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-300}
if [ -n "${OUT:-}" ]; then
  W=$OUT/profile-e2e && rm -rf "$W" && mkdir -p "$W"
else
  W=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-profile-e2e.XXXXXX") && trap 'rm -rf "$W"' EXIT
fi
PASS=0 FAIL=0 SKIP=0

pass() { PASS=$((PASS + 1)); printf 'PASS  %-34s %s\n' "$1" "${2:-}"; }
skip() { SKIP=$((SKIP + 1)); printf 'SKIP  %-34s %s\n' "$1" "${2:-}"; }
fail() {
  FAIL=$((FAIL + 1))
  printf 'FAIL  %-34s %s\n' "$1" "${2:-}"
  [ -n "${LAST:-}" ] && [ -f "$W/$LAST.err" ] && tail -n 8 "$W/$LAST.err" | sed 's/^/        | /'
}
# check NAME CONDITION-COMMAND... : PASS when the command succeeds.
check() {
  local name=$1
  shift
  if "$@"; then pass "$name"; else fail "$name" "($*)"; fi
}

# run NAME CMD...: stdout -> $W/NAME.out, stderr -> $W/NAME.err, status -> $RC.
run() {
  LAST=$1
  shift
  timeout -k 5 "$TIMEOUT" "$@" >"$W/$LAST.out" 2>"$W/$LAST.err"
  RC=$?
}

# q FILE EXPR: evaluates a Python expression over the JSON document d in FILE; prints it.
q() {
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def kernels(match):  # kernels whose mangled or demangled name contains `match`
    return [k for k in d["kernels"] if match in k["name"] or match in k["demangled"]]
def calls(match):
    return sum(k["calls"] for k in kernels(match))
r = eval(sys.argv[2])
print(json.dumps(r) if not isinstance(r, str) else r)
PY
}
# qt FILE EXPR: true when the expression is truthy.
qt() { [ "$(q "$1" "bool($2)" 2>"$W/q.err")" = "true" ]; }

# Trace checks: valid JSON, one kernel X event per launch recorded in the profile.
check_trace() {
  local name=$1 trace=$2 profile=$3
  local res
  res=$(python3 - "$trace" "$profile" <<'PY' 2>&1
import json, sys
t = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[2]))
ev = [e for e in t["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
bad = [e for e in ev if not all(k in e for k in ("name", "ts", "dur", "pid", "tid"))]
if bad or len(ev) != p["totals"]["launches"]:
    print(f"{len(ev)} kernel events for {p['totals']['launches']} launches, {len(bad)} malformed"); sys.exit(1)
print(f"{len(ev)} kernel events")
PY
  ) && pass "$name" "$res" || fail "$name" "$res"
}

check_percent() {
  local name=$1 profile=$2 total
  total=$(q "$profile" 'round(sum(k["percent"] for k in d["kernels"]), 6)')
  if awk -v t="$total" 'BEGIN { exit !(t > 99.99 && t < 100.01) }'; then pass "$name" "sum $total %"; else fail "$name" "sum $total %"; fi
}

# extract_top NAME PROFILE EXPECT-SUBSTRING -- APP...: captures the top kernel (or the first
# kernel whose kind is $KIND when KIND is set) with the pattern and dispatch the profile gave.
extract_top() {
  local name=$1 profile=$2 expect=$3
  shift 4
  local sel='d["kernels"]'
  [ -n "${KIND:-}" ] && sel="[k for k in d[\"kernels\"] if k[\"kind\"] == \"$KIND\"]"
  local pattern dispatch
  pattern=$(q "$profile" "[k for k in $sel if any(p['dispatch'] for p in k['extract']['processes'])][0]['extract']['pattern']") ||
    { fail "$name" "no extractable kernel in the profile"; return; }
  dispatch=$(q "$profile" "[p['dispatch'][0] for k in $sel if k['extract']['pattern'] == '$pattern' for p in k['extract']['processes'] if p['dispatch']][0]")
  run "$name" "$KC" extract "$pattern" --dispatch "$dispatch" -o "$W/iso-$name" -- "$@"
  if [ "$RC" = 0 ] && grep -qF -- "$pattern" "$W/iso-$name/capture/manifest.json" 2>/dev/null &&
    [[ "$pattern" == *"$expect"* ]]; then
    pass "$name" "captured ${pattern:0:60} dispatch $dispatch"
  else
    fail "$name" "extract '${pattern:0:60}' --dispatch $dispatch: exit $RC (expected a capture of *$expect*)"
  fi
}

for f in "$KC" "$EX/dispatch" "$EX/vector_add" "$APP"; do
  [ -x "$f" ] || { echo "missing $f: build everything first (bench/ needs add_subdirectory(bench))"; exit 1; }
done

# ---- our own examples ---------------------------------------------------------------------
run ex_dispatch "$KC" profile -o "$W/ex.json" --trace "$W/ex_trace.json" -- "$EX/dispatch"
check ex_dispatch.exit test "$RC" = 0
check ex_dispatch.table grep -q 'iterate' "$W/ex_dispatch.out"
check ex_dispatch.calls qt "$W/ex.json" 'calls("iterate(") == 8'
check ex_dispatch.kind qt "$W/ex.json" 'kernels("iterate(")[0]["kind"] == "user" and kernels("iterate(")[0]["source_expected"]'
check ex_dispatch.indices qt "$W/ex.json" 'kernels("iterate(")[0]["extract"]["processes"][0]["dispatch"] == list(range(8))'
check_percent ex_dispatch.percent "$W/ex.json"
check_trace ex_dispatch.trace "$W/ex_trace.json" "$W/ex.json"
extract_top ex_dispatch.extract "$W/ex.json" iterate -- "$EX/dispatch"

run ex_vector_add "$KC" profile -o "$W/va.json" -- "$EX/vector_add"
check ex_vector_add.exit test "$RC" = 0
check ex_vector_add.calls qt "$W/va.json" 'calls("vectorAdd") == 1 and d["kernels"][0]["kind"] == "user"'
check ex_vector_add.memcpy qt "$W/va.json" 'd["processes"][0]["memcpy"]["count"] >= 3'
check ex_vector_add.device_name qt "$W/va.json" 'd["processes"][0]["devices"][0].get("name")'

# ---- process shapes (bench/profile_overhead_app) ---------------------------------------------
run busy "$KC" profile -o "$W/busy.json" --trace "$W/busy_trace.json" -- "$APP" --kernels 1000 --busy 3
check busy.exit test "$RC" = 0
check busy.rank qt "$W/busy.json" '"busy_kernel" in d["kernels"][0]["demangled"] and calls("tiny_kernel") == 1000'
check_percent busy.percent "$W/busy.json"
check_trace busy.trace "$W/busy_trace.json" "$W/busy.json"
extract_top busy.extract "$W/busy.json" busy_kernel -- "$APP" --kernels 10 --busy 3

run thread_exit "$KC" profile -o "$W/thread.json" -- "$APP" --kernels 500 --exit-from-thread
check thread_exit.exit test "$RC" = 0
check thread_exit.flushed qt "$W/thread.json" 'calls("tiny_kernel") == 500 and d["processes"][0]["complete"]'

run fork "$KC" profile -o "$W/fork.json" -- "$APP" --kernels 200 --fork-child
check fork.exit test "$RC" = 0
check fork.parent qt "$W/fork.json" 'len(d["processes"]) == 2 and calls("tiny_kernel") == 200'
check fork.child qt "$W/fork.json" \
  'any(p["forked_from"] and p["kernels"] == 0 and p["complete"] for p in d["processes"]) and all(p["complete"] for p in d["processes"])'

run spawn "$KC" profile -o "$W/spawn.json" --trace "$W/spawn_trace.json" -- "$APP" --kernels 100 --spawn-child 300
check spawn.exit test "$RC" = 0
check spawn.per_process qt "$W/spawn.json" \
  'sorted(len(p["dispatch"]) for p in kernels("tiny_kernel")[0]["extract"]["processes"]) == [100, 300] and len({p["pid"] for p in d["processes"]}) == 2'
check_trace spawn.trace "$W/spawn_trace.json" "$W/spawn.json"

run streams "$KC" profile -o "$W/streams.json" --trace "$W/streams_trace.json" -- "$APP" --kernels 1000 --streams 4
check streams.exit test "$RC" = 0
check streams.tids python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
tids = {e["tid"] for e in t["traceEvents"] if e.get("ph") == "X" and "tiny_kernel" in e.get("name", "") + e.get("args", {}).get("name", "")}
sys.exit(0 if len(tids) == 4 else 1)' "$W/streams_trace.json"

run no_kernels "$KC" profile -- "$APP" --no-kernels
check no_kernels.exit test "$RC" = 2
check no_kernels.message grep -q 'launched no kernels' "$W/no_kernels.err"

run exit_code "$KC" profile -o "$W/exit.json" -- "$APP" --kernels 10 --exit-code 3
check exit_code.propagated test "$RC" = 3
check exit_code.still_printed grep -q 'tiny_kernel' "$W/exit_code.out"
check exit_code.recorded qt "$W/exit.json" 'calls("tiny_kernel") == 10 and d["application"]["code"] == 3'

run no_start "$KC" profile -- "$W/does-not-exist"
check no_start.exit test "$RC" = 127
check no_start.message grep -q 'could not be started' "$W/no_start.err"

run cupti_conflict env LD_LIBRARY_PATH="$BUILD/lib:${LD_LIBRARY_PATH:-}" "$KC" profile -- "$APP" --kernels 10 --cupti-first
check cupti_conflict.exit test "$RC" = 2
check cupti_conflict.message grep -q 'another CUPTI client' "$W/cupti_conflict.err"
check cupti_conflict.app_unharmed grep -q 'launched 10' "$W/cupti_conflict.out"

run json_mode "$KC" profile --json -- "$APP" --kernels 50
tail -n 1 "$W/json_mode.out" >"$W/json_mode.json"
check json_mode.last_line qt "$W/json_mode.json" 'd["format"] == "kerncap-profile" and calls("tiny_kernel") == 50'

# ---- PyTorch -------------------------------------------------------------------------------
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  skip torch "torch with CUDA is not importable by $PY (set KERNCAP_PYTHON)"
else
  cat >"$W/block.py" <<'PY'
# A transformer block, forward and backward, in bf16 autocast (cuBLAS GEMMs, flash or
# memory-efficient attention, ATen layer norm / softmax / elementwise kernels).
import torch
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, device="cuda")
x = torch.randn(8, 256, 512, device="cuda", requires_grad=True)
for _ in range(3):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = layer(x)
    y.float().pow(2).mean().backward()
torch.cuda.synchronize()
print("block ok")
PY
  run torch_block "$KC" profile --top 15 -o "$W/block.json" --trace "$W/block_trace.json" -- "$PY" "$W/block.py"
  check torch_block.exit test "$RC" = 0
  check_percent torch_block.percent "$W/block.json"
  check_trace torch_block.trace "$W/block_trace.json" "$W/block.json"
  check torch_block.kinds qt "$W/block.json" \
    '{"aten"} <= {k["kind"] for k in d["kernels"]} and {"cublas", "cublasLt"} & {k["kind"] for k in d["kernels"]}'
  check torch_block.gemm_is_gemm qt "$W/block.json" \
    'all(k["category"] == "gemm" for k in d["kernels"] if k["kind"] in ("cublas", "cublasLt"))'
  check torch_block.aten_is_aten qt "$W/block.json" \
    'all(k["kind"] in ("aten", "cub/thrust", "flash-attn") for k in d["kernels"] if "at::native" in k["demangled"])'
  check torch_block.aten_categories qt "$W/block.json" \
    '{"norm", "elementwise"} <= {k["category"] for k in d["kernels"] if k["kind"] == "aten"}'
  q "$W/block.json" '"\n".join(f"        {k[\"kind\"]:11} {k[\"category\"]:12} {k[\"short\"][:90]}" for k in d["kernels"])' \
    >"$W/block_classes.txt" 2>/dev/null && { echo "      classification of the transformer block's kernels:"; cat "$W/block_classes.txt"; }
  extract_top torch_block.extract "$W/block.json" "" -- "$PY" "$W/block.py"

  cat >"$W/compiled.py" <<'PY'
# A torch.compile'd MLP with layer norm, forward and backward: Inductor's Triton kernels
# (triton_poi_/per_/red_) around cuBLAS GEMMs.
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512),
                            torch.nn.LayerNorm(512)).cuda()
cm = torch.compile(model)
x = torch.randn(256, 512, device="cuda", requires_grad=True)
for _ in range(3):
    y = cm(x)
    y.pow(2).mean().backward()
torch.cuda.synchronize()
print("compiled ok")
PY
  # Compile once unprofiled, so that the profiled run and the extract run both find the
  # same cached kernels and autotuning results (no benchmark launches shifting --dispatch).
  export TORCHINDUCTOR_CACHE_DIR=$W/inductor-cache
  run torch_compile_warmup "$PY" "$W/compiled.py"
  [ "$RC" = 0 ] || fail torch_compile.warmup "the script fails without kerncap (exit $RC)"
  run torch_compile "$KC" profile --top 15 -o "$W/compiled.json" --trace "$W/compiled_trace.json" -- "$PY" "$W/compiled.py"
  check torch_compile.exit test "$RC" = 0
  check_percent torch_compile.percent "$W/compiled.json"
  check_trace torch_compile.trace "$W/compiled_trace.json" "$W/compiled.json"
  check torch_compile.triton qt "$W/compiled.json" \
    'any(k["kind"] == "triton" and k["name"].startswith("triton_") for k in d["kernels"])'
  check torch_compile.triton_categories qt "$W/compiled.json" \
    'all(k["category"] in ("elementwise", "reduce", "norm", "softmax", "copy", "gemm") for k in d["kernels"] if k["name"].startswith("triton_"))'
  check torch_compile.gemm qt "$W/compiled.json" \
    'any(k["kind"] in ("cublas", "cublasLt", "triton") and k["category"] == "gemm" for k in d["kernels"])'
  KIND=triton extract_top torch_compile.extract_triton "$W/compiled.json" triton_ -- "$PY" "$W/compiled.py"

  # An @triton.autotune matmul: the autotuner's benchmark launches (inside the Triton shim's
  # window) are shown apart and have no dispatch index; the program's own two calls are
  # --dispatch 0 and 1, and extract --dispatch 0 captures the first of them.
  if "$PY" -c 'import triton' 2>/dev/null; then
    MM=$HERE/triton_apps/matmul_autotune.py
    run triton_autotune "$KC" profile -o "$W/mm.json" -- "$PY" "$MM"
    check triton_autotune.exit test "$RC" = 0
    check triton_autotune.bench_apart qt "$W/mm.json" \
      'kernels("matmul_kernel")[0]["benchmark_calls"] > 0 and kernels("matmul_kernel")[0]["calls"] == kernels("matmul_kernel")[0]["benchmark_calls"] + 2'
    check triton_autotune.dispatch qt "$W/mm.json" \
      'kernels("matmul_kernel")[0]["extract"]["processes"][0]["dispatch"] == [0, 1]'
    check triton_autotune.table grep -q '\[bench [0-9]' "$W/triton_autotune.out"
    run triton_autotune_extract "$KC" extract matmul_kernel --dispatch 0 -o "$W/mm-cap" -- "$PY" "$MM"
    check triton_autotune.extract_dispatch0 test "$RC" = 0 -a -f "$W/mm-cap/capture/manifest.json"
  else
    skip triton_autotune "triton is not importable by $PY"
  fi

  cat >"$W/workers.py" <<'PY'
# Two worker processes started with torch.multiprocessing (spawn), each using the GPU.
import torch
import torch.multiprocessing as mp

def work(rank):
    x = torch.randn(1024, 1024, device="cuda")
    for _ in range(10 + 10 * rank):
        x = torch.relu(x @ x * 1e-3)
    torch.cuda.synchronize()

if __name__ == "__main__":
    mp.spawn(work, nprocs=2)
    print("workers ok")
PY
  run torch_workers "$KC" profile -o "$W/workers.json" -- "$PY" "$W/workers.py"
  check torch_workers.exit test "$RC" = 0
  check torch_workers.per_process qt "$W/workers.json" \
    'len([p for p in d["processes"] if p["kernels"] > 0]) == 2 and all(p["complete"] for p in d["processes"] if p["kernels"])'
fi

echo "$PASS passed, $FAIL failed, $SKIP skipped (work files: $W)"
[ "$FAIL" = 0 ]

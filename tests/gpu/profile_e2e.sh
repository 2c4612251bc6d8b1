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
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
APP=$BUILD/bench/profile_overhead_app
PY=${KERNCAP_PYTHON:-python3}
gpu_work_dir profile-e2e kept  # WORK: $OUT/profile-e2e (kept), else a temporary directory
[ -n "${OUT:-}" ] || trap cleanup EXIT
# verdict (lib.sh): "PASS  NAME  DETAIL"; a failure shows the last 8 lines of the last command's stderr.
VERDICT_STYLE=status VERDICT_WIDTH=34 VERDICT_TAIL=8

# expect NAME CONDITION-COMMAND... : PASS when the command succeeds.
expect() {
  local name=$1
  shift
  if "$@"; then verdict "$name" PASS; else verdict "$name" FAIL "($*)"; fi
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
qt() { [ "$(q "$1" "bool($2)" 2>"$WORK/q.err")" = "true" ]; }

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
  ) && verdict "$name" PASS "$res" || verdict "$name" FAIL "$res"
}

check_percent() {
  local name=$1 profile=$2 total
  total=$(q "$profile" 'round(sum(k["percent"] for k in d["kernels"]), 6)')
  awk -v t="$total" 'BEGIN { exit !(t > 99.99 && t < 100.01) }'
  check "$name" "sum $total %" $?
}

# profiled NAME FILE -- APP...: kerncap profile --top 15 of APP into $WORK/FILE.json and its trace
# $WORK/FILE_trace.json; then NAME.exit (exit 0), NAME.percent and NAME.trace.
profiled() {
  local name=$1 file=$2
  shift 3
  run "$name" "$KC" profile --top 15 -o "$WORK/$file.json" --trace "$WORK/${file}_trace.json" -- "$@"
  expect "$name.exit" test "$RC" = 0
  check_percent "$name.percent" "$WORK/$file.json"
  check_trace "$name.trace" "$WORK/${file}_trace.json" "$WORK/$file.json"
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
    { verdict "$name" FAIL "no extractable kernel in the profile"; return; }
  dispatch=$(q "$profile" "[p['dispatch'][0] for k in $sel if k['extract']['pattern'] == '$pattern' for p in k['extract']['processes'] if p['dispatch']][0]")
  run "$name" "$KC" extract "$pattern" --dispatch "$dispatch" -o "$WORK/iso-$name" -- "$@"
  if [ "$RC" = 0 ] && grep -qF -- "$pattern" "$WORK/iso-$name/capture/manifest.json" 2>/dev/null &&
    [[ "$pattern" == *"$expect"* ]]; then
    verdict "$name" PASS "captured ${pattern:0:60} dispatch $dispatch"
  else
    verdict "$name" FAIL "extract '${pattern:0:60}' --dispatch $dispatch: exit $RC (expected a capture of *$expect*)"
  fi
}

for f in "$KC" "$EX/dispatch" "$EX/vector_add" "$APP"; do
  [ -x "$f" ] || { echo "missing $f: build everything first (bench/ needs add_subdirectory(bench))"; exit 1; }
done

# ---- our own examples ---------------------------------------------------------------------
run ex_dispatch "$KC" profile -o "$WORK/ex.json" --trace "$WORK/ex_trace.json" -- "$EX/dispatch"
expect ex_dispatch.exit test "$RC" = 0
expect ex_dispatch.table grep -q 'iterate' "$WORK/ex_dispatch.out"
expect ex_dispatch.calls qt "$WORK/ex.json" 'calls("iterate(") == 8'
expect ex_dispatch.kind qt "$WORK/ex.json" 'kernels("iterate(")[0]["kind"] == "user" and kernels("iterate(")[0]["source_expected"]'
expect ex_dispatch.indices qt "$WORK/ex.json" 'kernels("iterate(")[0]["extract"]["processes"][0]["dispatch"] == list(range(8))'
check_percent ex_dispatch.percent "$WORK/ex.json"
check_trace ex_dispatch.trace "$WORK/ex_trace.json" "$WORK/ex.json"
extract_top ex_dispatch.extract "$WORK/ex.json" iterate -- "$EX/dispatch"

run ex_vector_add "$KC" profile -o "$WORK/va.json" -- "$EX/vector_add"
expect ex_vector_add.exit test "$RC" = 0
expect ex_vector_add.calls qt "$WORK/va.json" 'calls("vectorAdd") == 1 and d["kernels"][0]["kind"] == "user"'
expect ex_vector_add.memcpy qt "$WORK/va.json" 'd["processes"][0]["memcpy"]["count"] >= 3'
expect ex_vector_add.device_name qt "$WORK/va.json" 'd["processes"][0]["devices"][0].get("name")'

# ---- process shapes (bench/profile_overhead_app) ---------------------------------------------
run busy "$KC" profile -o "$WORK/busy.json" --trace "$WORK/busy_trace.json" -- "$APP" --kernels 1000 --busy 3
expect busy.exit test "$RC" = 0
expect busy.rank qt "$WORK/busy.json" '"busy_kernel" in d["kernels"][0]["demangled"] and calls("tiny_kernel") == 1000'
check_percent busy.percent "$WORK/busy.json"
check_trace busy.trace "$WORK/busy_trace.json" "$WORK/busy.json"
extract_top busy.extract "$WORK/busy.json" busy_kernel -- "$APP" --kernels 10 --busy 3

run thread_exit "$KC" profile -o "$WORK/thread.json" -- "$APP" --kernels 500 --exit-from-thread
expect thread_exit.exit test "$RC" = 0
expect thread_exit.flushed qt "$WORK/thread.json" 'calls("tiny_kernel") == 500 and d["processes"][0]["complete"]'

run fork "$KC" profile -o "$WORK/fork.json" -- "$APP" --kernels 200 --fork-child
expect fork.exit test "$RC" = 0
expect fork.parent qt "$WORK/fork.json" 'len(d["processes"]) == 2 and calls("tiny_kernel") == 200'
expect fork.child qt "$WORK/fork.json" \
  'any(p["forked_from"] and p["kernels"] == 0 and p["complete"] for p in d["processes"]) and all(p["complete"] for p in d["processes"])'

run spawn "$KC" profile -o "$WORK/spawn.json" --trace "$WORK/spawn_trace.json" -- "$APP" --kernels 100 --spawn-child 300
expect spawn.exit test "$RC" = 0
expect spawn.per_process qt "$WORK/spawn.json" \
  'sorted(len(p["dispatch"]) for p in kernels("tiny_kernel")[0]["extract"]["processes"]) == [100, 300] and len({p["pid"] for p in d["processes"]}) == 2'
check_trace spawn.trace "$WORK/spawn_trace.json" "$WORK/spawn.json"

run streams "$KC" profile -o "$WORK/streams.json" --trace "$WORK/streams_trace.json" -- "$APP" --kernels 1000 --streams 4
expect streams.exit test "$RC" = 0
expect streams.tids python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
tids = {e["tid"] for e in t["traceEvents"] if e.get("ph") == "X" and "tiny_kernel" in e.get("name", "") + e.get("args", {}).get("name", "")}
sys.exit(0 if len(tids) == 4 else 1)' "$WORK/streams_trace.json"

run no_kernels "$KC" profile -- "$APP" --no-kernels
expect no_kernels.exit test "$RC" = 2
expect no_kernels.message grep -q 'launched no kernels' "$WORK/no_kernels.err"

run exit_code "$KC" profile -o "$WORK/exit.json" -- "$APP" --kernels 10 --exit-code 3
expect exit_code.propagated test "$RC" = 3
expect exit_code.still_printed grep -q 'tiny_kernel' "$WORK/exit_code.out"
expect exit_code.recorded qt "$WORK/exit.json" 'calls("tiny_kernel") == 10 and d["application"]["code"] == 3'

run no_start "$KC" profile -- "$WORK/does-not-exist"
expect no_start.exit test "$RC" = 127
expect no_start.message grep -q 'could not be started' "$WORK/no_start.err"

run cupti_conflict env LD_LIBRARY_PATH="$BUILD/lib:${LD_LIBRARY_PATH:-}" "$KC" profile -- "$APP" --kernels 10 --cupti-first
expect cupti_conflict.exit test "$RC" = 2
expect cupti_conflict.message grep -q 'another CUPTI client' "$WORK/cupti_conflict.err"
expect cupti_conflict.app_unharmed grep -q 'launched 10' "$WORK/cupti_conflict.out"

run json_mode "$KC" profile --json -- "$APP" --kernels 50
tail -n 1 "$WORK/json_mode.out" >"$WORK/json_mode.json"
expect json_mode.last_line qt "$WORK/json_mode.json" 'd["format"] == "kerncap-profile" and calls("tiny_kernel") == 50'

# ---- PyTorch -------------------------------------------------------------------------------
if ! torch_ok; then
  verdict torch SKIP "torch with CUDA is not importable by $PY (set KERNCAP_PYTHON)"
else
  cat >"$WORK/block.py" <<'PY'
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
  profiled torch_block block -- "$PY" "$WORK/block.py"
  expect torch_block.kinds qt "$WORK/block.json" \
    '{"aten"} <= {k["kind"] for k in d["kernels"]} and {"cublas", "cublasLt"} & {k["kind"] for k in d["kernels"]}'
  expect torch_block.gemm_is_gemm qt "$WORK/block.json" \
    'all(k["category"] == "gemm" for k in d["kernels"] if k["kind"] in ("cublas", "cublasLt"))'
  expect torch_block.aten_is_aten qt "$WORK/block.json" \
    'all(k["kind"] in ("aten", "cub/thrust", "flash-attn") for k in d["kernels"] if "at::native" in k["demangled"])'
  expect torch_block.aten_categories qt "$WORK/block.json" \
    '{"norm", "elementwise"} <= {k["category"] for k in d["kernels"] if k["kind"] == "aten"}'
  q "$WORK/block.json" '"\n".join(f"        {k[\"kind\"]:11} {k[\"category\"]:12} {k[\"short\"][:90]}" for k in d["kernels"])' \
    >"$WORK/block_classes.txt" 2>/dev/null && { echo "      classification of the transformer block's kernels:"; cat "$WORK/block_classes.txt"; }
  extract_top torch_block.extract "$WORK/block.json" "" -- "$PY" "$WORK/block.py"

  cat >"$WORK/compiled.py" <<'PY'
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
  export TORCHINDUCTOR_CACHE_DIR=$WORK/inductor-cache
  run torch_compile_warmup "$PY" "$WORK/compiled.py"
  [ "$RC" = 0 ] || verdict torch_compile.warmup FAIL "the script fails without kerncap (exit $RC)"
  profiled torch_compile compiled -- "$PY" "$WORK/compiled.py"
  expect torch_compile.triton qt "$WORK/compiled.json" \
    'any(k["kind"] == "triton" and k["name"].startswith("triton_") for k in d["kernels"])'
  expect torch_compile.triton_categories qt "$WORK/compiled.json" \
    'all(k["category"] in ("elementwise", "reduce", "norm", "softmax", "copy", "gemm") for k in d["kernels"] if k["name"].startswith("triton_"))'
  expect torch_compile.gemm qt "$WORK/compiled.json" \
    'any(k["kind"] in ("cublas", "cublasLt", "triton") and k["category"] == "gemm" for k in d["kernels"])'
  KIND=triton extract_top torch_compile.extract_triton "$WORK/compiled.json" triton_ -- "$PY" "$WORK/compiled.py"

  # An @triton.autotune matmul: the autotuner's benchmark launches (inside the Triton shim's
  # window) are shown apart and have no dispatch index; the program's own two calls are
  # --dispatch 0 and 1, and extract --dispatch 0 captures the first of them.
  if "$PY" -c 'import triton' 2>/dev/null; then
    MM=$HERE/triton_apps/matmul_autotune.py
    run triton_autotune "$KC" profile -o "$WORK/mm.json" -- "$PY" "$MM"
    expect triton_autotune.exit test "$RC" = 0
    expect triton_autotune.bench_apart qt "$WORK/mm.json" \
      'kernels("matmul_kernel")[0]["benchmark_calls"] > 0 and kernels("matmul_kernel")[0]["calls"] == kernels("matmul_kernel")[0]["benchmark_calls"] + 2'
    expect triton_autotune.dispatch qt "$WORK/mm.json" \
      'kernels("matmul_kernel")[0]["extract"]["processes"][0]["dispatch"] == [0, 1]'
    expect triton_autotune.table grep -q '\[bench [0-9]' "$WORK/triton_autotune.out"
    run triton_autotune_extract "$KC" extract matmul_kernel --dispatch 0 -o "$WORK/mm-cap" -- "$PY" "$MM"
    expect triton_autotune.extract_dispatch0 test "$RC" = 0 -a -f "$WORK/mm-cap/capture/manifest.json"
  else
    verdict triton_autotune SKIP "triton is not importable by $PY"
  fi

  cat >"$WORK/workers.py" <<'PY'
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
  run torch_workers "$KC" profile -o "$WORK/workers.json" -- "$PY" "$WORK/workers.py"
  expect torch_workers.exit test "$RC" = 0
  expect torch_workers.per_process qt "$WORK/workers.json" \
    'len([p for p in d["processes"] if p["kernels"] > 0]) == 2 and all(p["complete"] for p in d["processes"] if p["kernels"])'
fi

summary -s "(work files: $WORK)"

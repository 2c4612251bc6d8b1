#!/usr/bin/env bash
# GPU suite for `kerncap run --swap` (docs/swap.md): the application runs with one kernel served
# by a variant, paired against the unmodified application. Programs: tests/gpu/swap_apps/
# (swap_app.cu launches scale_add through <<<>>>, cudaLaunchKernelEx, cuLaunchKernel, a
# stream-captured graph and an explicit graph updated in place; the variants are built here).
#
#   fast_name      --swap scale_add=swap_fast.cubin --repeat 3: verdict ok, every host launch and
#                  both explicit-graph node calls served by the variant, the printed results
#                  identical, the kernel's own GPU time lower (ratio > 1.5)
#   fast_capture   the same swap named by a capture of scale_add (layout checked before the run);
#                  the in-app kernel ratio beside `validate --cubin --speedup` on the capture
#   tail_output    a variant with a tail-mask bug: verdict output_differs, exit 1, names the line
#   tail_check     the same with --check comparing the hash: verdict check_failed
#   layout_capture an extern "C" kernel's variant whose parameters differ (same name), named by a
#                  capture: refused before the application runs (no run directory made), the
#                  message gives both layouts
#   layout_name    the same variant named by the kernel's name: refused by the library at the first
#                  launch (verdict refused), the application's results unchanged
#   layout_cxx     a C++ kernel's variant with other parameter types (so another mangled name),
#                  named by a capture: refused before the run, the message gives both signatures
#   tail_shadow    the tail-mask variant passes `validate --cubin` on the captured launch (a size
#                  that is a multiple of 4) and `run --shadow` names the first launch it gets
#                  wrong (launch 0, grid 65537: size 2^24+3), the application's results unchanged
#   fast_shadow    --shadow with the correct variant: every host launch outside graph capture
#                  checked, none differs; the checking time per launch
#   torch_ext      a PyTorch custom CUDA extension (torch.utils.cpp_extension.load_inline) whose
#                  kernel re-reads its input; a faster variant (one read, same bits) compiled by
#                  nvcc: verdict ok, every launch swapped, the in-app kernel ratio beside replay's
#   triton_id      a Triton kernel (launched by Triton's own launcher) served by its own captured
#                  image: every launch swapped, results identical
#   triton_variant the same Triton capture swapped with its OUT/kernel_variant.py (recompiled by the
#                  reproducer into candidate.cubin): verdict ok, the reproducer's verdict shown;
#                  then BLOCK edited 1024 -> 512 (another grid): refused before the run, naming it
#   torch_graph    torch.cuda.CUDAGraph replaying an elementwise kernel: the kernel's own image
#                  (from a capture) swapped in; every replay served by it, results identical
# Prints one row per case and "N passed, N failed". Exit 0 all passed, 1 some failed, 77 skipped
# (no GPU).
#
#   tests/gpu/swap_e2e.sh BUILD_DIR
#
# Environment: OUT (logs under it), TORCH_PY (python with CUDA torch, default python3),
# KERNCAP_GPU_CASES (names to run), KERNCAP_GPU_TIMEOUT (per command, default 300 s).
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/swap_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${TORCH_PY:-python3}
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-300}
LOG=""
gpu_work_dir swap
[ -n "${OUT:-}" ] || trap cleanup EXIT
echo "swap suite: work in $WORK"
passed=0 failed=0 skipped=0

SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
"$NVCC" -O2 -arch=sm_"$SM" -o "$WORK/swap_app" "$HERE/swap_apps/swap_app.cu" -lcuda >"$WORK/build.log" 2>&1 ||
  { echo "cannot build swap_app"; tail -5 "$WORK/build.log"; exit 1; }
for v in swap_fast swap_tail swap_layout; do
  "$NVCC" -O2 -cubin -arch=sm_"$SM" -o "$WORK/$v.cubin" "$HERE/swap_apps/$v.cu" >>"$WORK/build.log" 2>&1 ||
    { echo "cannot build $v"; tail -5 "$WORK/build.log"; exit 1; }
done
APP=$WORK/swap_app
ITERS=20
# host launches of scale_add: ITERS x 3 sizes, cudaLaunchKernelEx, cuLaunchKernel, the two
# launches recorded by stream capture; explicit graph: the node added, then set in the exec graph.
HOST_LAUNCHES=$((ITERS * 3 + 4))
GRAPH_NODES=2
r() { json_get "$D/$1.out" "$2"; }
# A case's row at once too (a suite cut short by a time limit still shows what it measured).
row_now() { case_row "$@"; tail -n1 "$ROWS"; }
D=$WORK

if want fast_name; then
  P=""
  run fast_name "$KC" run --swap scale_add="$WORK/swap_fast.cubin" --repeat 3 --json -- "$APP" $ITERS
  [ $RC = 0 ] || P+="exit $RC ($(r fast_name why)); "
  [ "$(r fast_name verdict)" = ok ] || P+="verdict $(r fast_name verdict); "
  [ "$(r fast_name 'j["runs"][1]["swapped_launches"]')" = $HOST_LAUNCHES ] ||
    P+="swapped $(r fast_name 'j["runs"][1]["swapped_launches"]') of $HOST_LAUNCHES host launches; "
  [ "$(r fast_name 'j["runs"][1]["graph_nodes"]')" = $GRAPH_NODES ] || P+="graph nodes $(r fast_name 'j["runs"][1]["graph_nodes"]'); "
  [ "$(r fast_name 'j["runs"][0]["swapped_launches"]')" = 0 ] || P+="the unmodified arm was swapped; "
  [ "$(r fast_name 'j["summary"]["outputs_identical"]')" = True ] || P+="outputs differ; "
  KR=$(r fast_name 'j["summary"]["kernel_ns"]["ratio"]["median"]')
  [ "$(r fast_name 'j["summary"]["kernel_ns"]["ratio"]["median"] > 1.3')" = True ] || P+="kernel ratio $KR; "
  row_now fast_name "$P" "kernel x$KR, GPU x$(r fast_name 'j["summary"]["gpu_ns"]["ratio"]["median"]'), wall x$(r fast_name 'j["summary"]["wall_s"]["ratio"]["median"]'); swapped $(r fast_name 'j["runs"][1]["swapped_launches"]')/$HOST_LAUNCHES host + $(r fast_name 'j["runs"][1]["graph_nodes"]') nodes; output identical $(r fast_name 'j["summary"]["outputs_identical"]')"
fi

CAP=$WORK/scale_add.cap
"$KC" extract _Z9scale_add --dispatch 1 -o "$CAP" -- "$APP" 2 >"$WORK/extract.log" 2>&1
CAPC=$WORK/scale_add_c.cap
"$KC" extract scale_add_c -o "$CAPC" -- "$APP" 2 >"$WORK/extract_c.log" 2>&1

if want fast_capture; then
  P=""
  [ -f "$CAP/capture/manifest.json" ] || P+="extract failed: $(tail -2 "$WORK/extract.log" | tr '\n' ' '); "
  run fast_capture "$KC" run --swap "$CAP=$WORK/swap_fast.cubin" --repeat 3 --json -- "$APP" $ITERS
  [ "$(r fast_capture verdict)" = ok ] || P+="verdict $(r fast_capture verdict) ($(r fast_capture why)); "
  [ "$(r fast_capture 'j["swaps"][0]["layout_checked"]')" = True ] || P+="layout not checked against the capture; "
  run fast_capture.validate "$KC" validate "$CAP" --cubin "$WORK/swap_fast.cubin" --speedup --json
  VS=$(json_get "$D/fast_capture.validate.out" 'j["speedup"]["speedup"] if "speedup" in j else j.get("timing",{}).get("speedup")')
  KR=$(r fast_capture 'j["summary"]["kernel_ns"]["ratio"]["median"]')
  row_now fast_capture "$P" "in-app kernel x$KR vs replay x${VS:-?} (validate --speedup on dispatch 1, n=2^24+3)"
fi

if want tail_output; then
  P=""
  run tail_output "$KC" run --swap scale_add="$WORK/swap_tail.cubin" --json -- "$APP" 2
  [ $RC = 1 ] || P+="exit $RC; "
  [ "$(r tail_output verdict)" = output_differs ] || P+="verdict $(r tail_output verdict); "
  row_now tail_output "$P" "$(r tail_output why | cut -c1-140)"
fi

if want tail_check; then
  P=""
  run tail_check.plain "$APP" 2
  H=$(grep -o 'hash=[0-9a-f]*' "$D/tail_check.plain.out")
  run tail_check "$KC" run --swap scale_add="$WORK/swap_tail.cubin" --json --check "grep -q '$H' \"\$KERNCAP_RUN_STDOUT\"" -- "$APP" 2
  [ $RC = 1 ] || P+="exit $RC; "
  [ "$(r tail_check verdict)" = check_failed ] || P+="verdict $(r tail_check verdict); "
  [ "$(r tail_check 'j["runs"][0]["check"]["status"]')" = 0 ] || P+="the check failed on the unmodified run; "
  row_now tail_check "$P" "$(r tail_check why)"
fi

if want layout_capture; then
  P=""
  [ -f "$CAPC/capture/manifest.json" ] || P+="extract of scale_add_c failed: $(tail -2 "$WORK/extract_c.log" | tr '\n' ' '); "
  run layout_capture "$KC" run --swap "$CAPC=$WORK/swap_layout.cubin" --dir "$WORK/layout_capture.runs" -- "$APP" 2
  { [ $RC != 0 ] && [ $RC != 70 ] && [ $RC -lt 124 ]; } || P+="exit $RC; "
  grep -q "another layout" "$D/layout_capture.err" || P+="message: $(head -c 200 "$D/layout_capture.err"); "
  [ ! -e "$WORK/layout_capture.runs" ] || P+="the application ran; "
  row_now layout_capture "$P" "rc=$RC: $(grep -o 'size@offset[^;]*' "$D/layout_capture.err" | head -1 | cut -c1-120)"
fi

if want layout_name; then
  P=""
  run layout_name "$KC" run --swap scale_add_c="$WORK/swap_layout.cubin" --json -- "$APP" 2
  [ $RC = 1 ] || P+="exit $RC; "
  [ "$(r layout_name verdict)" = refused ] || P+="verdict $(r layout_name verdict); "
  [ "$(r layout_name 'j["summary"]["outputs_identical"]')" = True ] || P+="the application's results changed; "
  row_now layout_name "$P" "$(r layout_name why | cut -c1-160)"
fi

if want layout_cxx; then
  P=""
  cat >"$WORK/swap_layout_cxx.cu" <<'CUEOF'
__global__ void scale_add(float* y, const float* x, double a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = static_cast<float>(a) * x[i] + y[i];
}
CUEOF
  "$NVCC" -O2 -cubin -arch=sm_"$SM" -o "$WORK/swap_layout_cxx.cubin" "$WORK/swap_layout_cxx.cu" >>"$WORK/build.log" 2>&1
  run layout_cxx "$KC" run --swap "$CAP=$WORK/swap_layout_cxx.cubin" --dir "$WORK/layout_cxx.runs" -- "$APP" 2
  [ $RC != 0 ] || P+="exit 0; "
  grep -q "another parameter layout" "$D/layout_cxx.err" || P+="message: $(head -c 200 "$D/layout_cxx.err"); "
  [ ! -e "$WORK/layout_cxx.runs" ] || P+="the application ran; "
  row_now layout_cxx "$P" "rc=$RC: $(grep -o 'takes.*where[^:]*' "$D/layout_cxx.err" | head -1 | cut -c1-140)"
fi

if want tail_shadow; then
  P=""
  run tail_shadow.validate "$KC" validate "$CAP" --cubin "$WORK/swap_tail.cubin"
  VR=$(result_word)
  [ "$VR" = PASS ] || P+="validate on the captured launch: ${VR:-rc=$RC}; "
  run tail_shadow "$KC" run --swap scale_add="$WORK/swap_tail.cubin" --shadow --json -- "$APP" 2
  [ $RC = 1 ] || P+="exit $RC; "
  [ "$(r tail_shadow verdict)" = shadow_failed ] || P+="verdict $(r tail_shadow verdict) ($(r tail_shadow why)); "
  [ "$(r tail_shadow 'j["runs"][1]["shadow"]["first_failure"]["launch"]')" = 0 ] || P+="first failing launch $(r tail_shadow 'j["runs"][1]["shadow"]["first_failure"]["launch"]'); "
  [ "$(r tail_shadow 'j["summary"]["outputs_identical"]')" = True ] || P+="the application's results changed; "
  row_now tail_shadow "$P" "validate on the capture: ${VR:-?}; $(r tail_shadow why | cut -c1-220)"
fi

if want fast_shadow; then
  P=""
  run fast_shadow "$KC" run --swap scale_add="$WORK/swap_fast.cubin" --shadow --json -- "$APP" $ITERS
  [ $RC = 0 ] || P+="exit $RC; "
  [ "$(r fast_shadow verdict)" = ok ] || P+="verdict $(r fast_shadow verdict) ($(r fast_shadow why)); "
  CH=$(r fast_shadow 'j["runs"][1]["shadow"]["checked"]')
  [ "$CH" = $((HOST_LAUNCHES - 2)) ] || P+="checked $CH of $((HOST_LAUNCHES - 2)) launches outside graph capture; "
  row_now fast_shadow "$P" "checked $CH, skipped $(r fast_shadow 'j["runs"][1]["shadow"]["skipped"]') ($(r fast_shadow 'j["runs"][1]["shadow"]["skip_reason"]' | cut -c1-60)); $(JSON_FLOAT=.3f r fast_shadow 'j["summary"]["shadow_overhead_s"]*1e3') ms per checked launch (2 x 64 MiB saved, compared on the host)"
fi

if want torch_ext; then
  P=""
  mkdir -p "$WORK/ext"
  cat >"$WORK/ext_app.py" <<'PYEOF'
import os, torch
from torch.utils.cpp_extension import load_inline
src = r"""
#include <ATen/cuda/CUDAContext.h>
__global__ void rowscale_kernel(float* out, const float* x, const float* s, int rows, int cols) {
  const int r = blockIdx.x;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = -INFINITY;
#pragma unroll 1
    for (int k = 0; k < 8; ++k) v = fmaxf(v, __ldcv(&x[(size_t)r * cols + c]));
    out[(size_t)r * cols + c] = v * s[r];
  }
}
torch::Tensor rowscale(torch::Tensor x, torch::Tensor s) {
  auto out = torch::empty_like(x);
  rowscale_kernel<<<x.size(0), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      out.data_ptr<float>(), x.data_ptr<float>(), s.data_ptr<float>(), x.size(0), x.size(1));
  return out;
}
"""
ext = load_inline("kc_rowscale", cpp_sources="torch::Tensor rowscale(torch::Tensor x, torch::Tensor s);",
                  cuda_sources=src, functions=["rowscale"], build_directory=os.environ["EXT_DIR"])
torch.manual_seed(0)  # the same inputs in every run: the printed results are comparable
x = torch.randn(4096, 4096, device="cuda")
s = torch.rand(4096, device="cuda")
acc = torch.zeros_like(x)
for _ in range(30):
    acc += ext.rowscale(x, s)
torch.cuda.synchronize()
print("APP", float(acc.double().sum()), float(acc[17, 99]))
PYEOF
  cat >"$WORK/ext_variant.cu" <<'CUEOF'
#include <cmath>
__global__ void rowscale_kernel(float* out, const float* x, const float* s, int rows, int cols) {
  const int r = blockIdx.x;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = fmaxf(-INFINITY, __ldcv(&x[(size_t)r * cols + c]));
    out[(size_t)r * cols + c] = v * s[r];
  }
}
CUEOF
  "$NVCC" -O3 -cubin -arch=sm_"$SM" -o "$WORK/ext_variant.cubin" "$WORK/ext_variant.cu" >>"$WORK/build.log" 2>&1
  export EXT_DIR=$WORK/ext
  run torch_ext.build "$PY" "$WORK/ext_app.py" || P+="the extension does not build or run ($(tail -c 200 "$D/torch_ext.build.err")); "
  run torch_ext.extract "$KC" extract rowscale_kernel --dispatch 2 -o "$WORK/ext.cap" -- "$PY" "$WORK/ext_app.py"
  [ -f "$WORK/ext.cap/capture/manifest.json" ] || P+="extract failed: $(first_error torch_ext.extract); "
  run torch_ext.validate "$KC" validate "$WORK/ext.cap" --cubin "$WORK/ext_variant.cubin" --speedup --json
  VS=$(json_get "$D/torch_ext.validate.out" 'j["speedup"]["speedup"]')
  [ "$(json_get "$D/torch_ext.validate.out" result)" = PASS ] || P+="validate: $(json_get "$D/torch_ext.validate.out" line); "
  run torch_ext "$KC" run --swap "$WORK/ext.cap=$WORK/ext_variant.cubin" --repeat 3 --json -- "$PY" "$WORK/ext_app.py"
  [ "$(r torch_ext verdict)" = ok ] || P+="verdict $(r torch_ext verdict) ($(r torch_ext why)); "
  [ "$(r torch_ext 'j["summary"]["outputs_identical"] and j["summary"]["base_outputs_agree"]')" = True ] || P+="printed results differ; "
  [ "$(r torch_ext 'j["runs"][1]["swapped_launches"]')" = 30 ] || P+="swapped $(r torch_ext 'j["runs"][1]["swapped_launches"]') of 30; "
  row_now torch_ext "$P" "in-app kernel x$(r torch_ext 'j["summary"]["kernel_ns"]["ratio"]["median"]') vs replay x${VS:-?}; GPU x$(r torch_ext 'j["summary"]["gpu_ns"]["ratio"]["median"]'), wall x$(r torch_ext 'j["summary"]["wall_s"]["ratio"]["median"]'); swapped $(r torch_ext 'j["runs"][1]["swapped_launches"]')/30; output identical $(r torch_ext 'j["summary"]["outputs_identical"]')"
fi

if want triton_id; then
  P=""
  cat >"$WORK/triton_app.py" <<'PYEOF'
import torch, triton, triton.language as tl

@triton.jit
def kc_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + tl.load(y_ptr + offs, mask=m), mask=m)

n = (1 << 22) + 5
torch.manual_seed(0)  # the same inputs in every run: the printed results are comparable
x = torch.randn(n, device="cuda")
y = torch.randn(n, device="cuda")
out = torch.empty_like(x)
acc = torch.zeros_like(x)
for _ in range(10):
    kc_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    acc += out
torch.cuda.synchronize()
print("APP", float(acc.double().sum()))
PYEOF
  run triton_id.extract "$KC" extract kc_add_kernel --dispatch 1 -o "$WORK/triton.cap" -- "$PY" "$WORK/triton_app.py"
  IMG=$(ls "$WORK"/triton.cap/capture/image/* 2>/dev/null | head -1)
  if [ -z "$IMG" ]; then
    P+="no capture ($(first_error triton_id.extract)); "
  else
    run triton_id "$KC" run --swap "$WORK/triton.cap=$IMG" --repeat 2 --json -- "$PY" "$WORK/triton_app.py"
    [ "$(r triton_id verdict)" = ok ] || P+="verdict $(r triton_id verdict) ($(r triton_id why)); "
    [ "$(r triton_id 'j["summary"]["outputs_identical"] and j["summary"]["base_outputs_agree"]')" = True ] || P+="printed results differ; "
    [ "$(r triton_id 'j["runs"][1]["swapped_launches"]')" = 10 ] || P+="swapped $(r triton_id 'j["runs"][1]["swapped_launches"]') of 10; "
  fi
  row_now triton_id "$P" "swapped $(r triton_id 'j["runs"][1]["swapped_launches"]' 2>/dev/null)/10 launches, kernel ns base/swap $(r triton_id 'j["summary"]["kernel_ns"]["ratio"]["median"]' 2>/dev/null), output identical $(r triton_id 'j["summary"]["outputs_identical"]' 2>/dev/null)"
fi

if want triton_variant; then
  P=""
  KV=$WORK/triton.cap/kernel_variant.py
  if [ ! -f "$KV" ]; then
    P+="no kernel_variant.py in the Triton capture; "
  else
    run triton_variant "$KC" run --swap "$WORK/triton.cap=$KV" --repeat 1 --json -- "$PY" "$WORK/triton_app.py"
    [ "$(r triton_variant verdict)" = ok ] || P+="verdict $(r triton_variant verdict) ($(r triton_variant why)); "
    [ "$(r triton_variant 'j["runs"][1]["swapped_launches"]')" = 10 ] || P+="swapped $(r triton_variant 'j["runs"][1]["swapped_launches"]') of 10; "
    CV=$(r triton_variant 'j["swaps"][0]["compile_verdict"]')
    cp "$KV" "$KV.orig"
    sed -i 's/"BLOCK": 1024,/"BLOCK": 512,/' "$KV"
    run triton_variant.block "$KC" run --swap "$WORK/triton.cap=$KV" --dir "$WORK/triton_variant.block.runs" -- "$PY" "$WORK/triton_app.py"
    cp "$KV.orig" "$KV"
    [ $RC != 0 ] || P+="a BLOCK edit was swapped; "
    grep -q "changes the launch geometry" "$D/triton_variant.block.err" || P+="message: $(head -c 200 "$D/triton_variant.block.err"); "
    [ ! -e "$WORK/triton_variant.block.runs" ] || P+="the application ran with a BLOCK edit; "
  fi
  row_now triton_variant "$P" "reproducer: ${CV:-?}; BLOCK 1024->512: $(grep -o 'grid [^)]*' "$D/triton_variant.block.err" 2>/dev/null | head -1 | cut -c1-100)"
fi

if want torch_graph; then
  P=""
  cat >"$WORK/torch_graph.py" <<'PYEOF'
import torch
x = torch.linspace(-3, 3, 1 << 22, device="cuda")
y = torch.empty_like(x)
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    for _ in range(3):
        torch.exp(x, out=y)  # warm-up
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    torch.exp(x, out=y)
acc = torch.zeros_like(x)
for _ in range(20):
    g.replay()
    acc += y
torch.cuda.synchronize()
print("APP", float(acc.double().sum()))
PYEOF
  run torch_graph.extract "$KC" extract exp_kernel -o "$WORK/torch_exp.cap" -- "$PY" "$WORK/torch_graph.py"
  IMG=$(ls "$WORK"/torch_exp.cap/capture/image/* 2>/dev/null | head -1)
  if [ -z "$IMG" ]; then
    P+="no capture of the exp kernel ($(first_error torch_graph.extract)); "
  else
    run torch_graph "$KC" run --swap "$WORK/torch_exp.cap=$IMG" --repeat 2 --json -- "$PY" "$WORK/torch_graph.py"
    [ "$(r torch_graph verdict)" = ok ] || P+="verdict $(r torch_graph verdict) ($(r torch_graph why)); "
    [ "$(r torch_graph 'j["runs"][1]["swapped_launches"] >= 4')" = True ] || P+="swapped $(r torch_graph 'j["runs"][1]["swapped_launches"]') launches; "
  fi
  row_now torch_graph "$P" "swapped $(r torch_graph 'j["runs"][1]["swapped_launches"]' 2>/dev/null) launches (3 eager + 1 captured; 20 replays), kernel ns base/swap $(r torch_graph 'j["summary"]["kernel_ns"]["ratio"]["median"]' 2>/dev/null), output identical $(r torch_graph 'j["summary"]["outputs_identical"]' 2>/dev/null)"
fi

table "case | measured | verdict"
echo
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

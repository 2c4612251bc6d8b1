#!/usr/bin/env bash
# GPU suite for windows of launches (`kerncap window`, docs/window.md), on
# tests/gpu/window_apps/window_app.cu: four kernels and a copy and a memset on one stream,
# four iterations (rms_norm -> copy -> memset -> gemm -> silu -> residual_add).
#   extract        the window rms_norm@2..residual_add: 6 operations in order (kernel, copy_d2d,
#                  memset, kernel, kernel, kernel), none foreign, an in-app window time
#   replay         window time and sum of kernel times beside the in-app ones (kernels' ratio within
#                  0.8..1.25, the window's within 0.6..1.5: the in-app window holds kerncap's per-launch work)
#   captured       the captured window PASSes byte for byte
#   swap_good      gemm swapped for a variant with another summation order: PASS within fp32
#                  tolerance, the speed-up printed
#   swap_bad       gemm swapped for one that skips the last row: FAIL naming z's region, last
#                  written by the gemm (op 3)
#   live_out       the same bad swap judged only on W (never written): PASS, the differing
#                  regions counted as outside the live-out
#   reproducer     the Makefile and README.md extract wrote beside the capture: the README's table lists
#                  the 6 operations, `make validate` PASSes the captured window and `make validate
#                  SWAP=3=gemm_unrolled.cubin` the good variant (with VALIDATE_FLAGS' tolerance)
#   one_op         a window of one launch (gemm@1..gemm): 1 operation, PASS
#   end_missing    a window whose end never comes: no capture, the reason said
#   strong         the captured window's validation is strong: the write-only bytes it changed are
#                  poisoned (probed), x (read by rms_norm before residual_add writes it) is not
#   fuse_extract   tests/gpu/window_apps/fuse_app.cu, window fnorm@3..fact of its last iteration (fnorm,
#                  fgemm, fact; then fconsume reads out): window_liveout.json says out is read after the
#                  window and the intermediates h and t are dead
#   fuse_auto      a fused replacement (fnorm and fgemm do nothing, fact computes out from x, w, W; h and t
#                  never written) PASSes under --live-out auto, strong, the speed-up printed
#   fuse_all       the same under --live-out all: FAIL on h and t, each named as a dead intermediate
#   fuse_bad       a fused replacement that skips out's last row FAILs under --live-out auto on out
#   fuse_replace   ops 0..2 replaced by one launch of a new kernel (fused_only, --replace with a launches
#                  file naming the window's regions): PASS under --live-out auto, strong, speed-up printed
#   fuse_py        ops 1..2 (fgemm, fact) replaced by a Python callable (--replace-py
#                  1..2=window_apps/fuse_torch.py:gemm_silu: torch's matmul and SiLU on the replay's stream,
#                  out written, t never): PASS under --live-out auto, strong, through the one judge
#   fuse_py_bad    gemm_silu_bad (out's last row left alone): FAIL under auto naming out's region
#   fuse_py_keep   ops 0..2 replaced by norm_kept: fnorm kept as captured from inside the callable
#                  (window.run_op), then gemm_silu: PASS under auto (not yet run on a GPU)
#   h2d            fuse_app with a host-to-device copy of new weights inside the window: the window has a
#                  copy_h2d operation and the captured window PASSes byte for byte (the host bytes kept)
#   two_streams    tests/gpu/window_apps/two_streams.cu: the window produce@1..join on s0 joins s1 (s0 waits on
#                  s1's event): ops produce, event_record, event_wait, side, event_record, event_wait, join
#                  on streams 0,0,1,1,1,0,0, none foreign; PASS, window strong; replay vs in-app times printed
#   two_streams_refused  the same with side as a CUDA graph launched on s1: refused (a graph on a joined
#                  stream other than the window's is not recorded), the message naming it; no capture
#   torch_mlp      tests/gpu/window_apps/window_torch.py (layer_norm, cuBLAS GEMMs, GELU, add in bf16):
#                  the window layer_norm@2..GeluCUDAKernelImpl (3 kernels: ATen and cuBLAS images)
#                  PASSes byte for byte; its times beside the in-app ones (reported, not bounded)
#   llama          tests/gpu/hf_llama.py (transformers, random weights): the window from layer 0's
#                  attention kernel in the second forward to the next SiLU (o_proj, residual, RMSNorm's
#                  kernels, gate/up GEMMs) PASSes byte for byte; times reported (SKIP without transformers)
#   llama_time     the same window's kernels' GPU time (one timing engine, warm or cold, whichever is
#                  nearer) within ±10 % of the in-app kernels' time (the span is reported: in eager
#                  PyTorch the in-app span is mostly host gaps)
#   graph          tests/gpu/window_apps/graph_app.cu (a stream-captured graph launched 4 times): the
#                  window --graph square@2 has the graph's 7 nodes in order (copy_h2d, scale, memset, add,
#                  add, copy_d2d, square) and PASSes, window strong
#   graph_bad      square swapped for square_bad (skips z's last element): FAIL
#   graph_torch    tests/gpu/graph_apps/graph_torch.py (a torch.cuda.CUDAGraph replayed 4 times): the window
#                  --graph exp_kernel_cuda@2 (its third replay) PASSes, window strong; times reported
#   graph_mixed    graph_app.cu mixed (pre, the graph, post on one stream): the FROM..TO window pre@2..post holds
#                  the graph launch as its nodes (pre, copy_h2d, scale, memset, add, add, copy_d2d, square, post),
#                  none foreign, and PASSes, window strong; pre@2..square ends with the graph's last kernel
#                  (PASS); pre@2..add ends inside the graph: refused, the message saying so
#   graph_torch_mixed  graph_torch.py mixed: the window sigmoid@2..tanh around a torch.cuda.CUDAGraph replay
#                  records the graph's kernels between the eager ones, none foreign, and PASSes
#   llama_fuse     the Llama MLP window silu@2..MulFunctor (silu, up_proj's GEMM, mul; --observe 24):
#                  the captured window PASSes; SiLU·mul fused into one CUDA kernel
#                  (window_apps/silu_mul.cu, launches.json from window_apps/silu_mul_launches.py:
#                  g stashed where t would go when PyTorch gave g's block to u, the GEMM kept with
#                  {"op": 1}) PASSes under --live-out auto (t's piece dead, not judged), FAILs under
#                  all naming t's bytes a dead intermediate; silu_mul_bad FAILs on m's region
#   llama_norm     the window from layer 0's attention through its post-attention RMSNorm (--observe 1:
#                  the gate GEMM that reads the norm's output) with LlamaRMSNorm's
#                  eight kernels replaced by one (window_apps/rms_norm_fused.cu, launches.json from
#                  window_apps/rms_norm_launches.py): PASS under --live-out auto (bf16 tolerance) and
#                  faster (window kernels' speed-up > 1); FAIL under all naming a dead intermediate;
#                  rms_norm_fused_bad (no weight) FAILs on the norm output's region
#   nvtx           tests/gpu/window_apps/nvtx_app.cu (4 iterations of an NVTX range "step" around 3 kernels,
#                  a nested range "inner" around the second): the window --range step@2 (an nvtxRangePushEx
#                  push) has the 3 kernels of its third iteration, none foreign, an in-app time, and PASSes,
#                  window strong; nvtx_pusha: --range step@1 (an nvtxRangePushA push) has the same 3 kernels;
#                  nvtx_missing: --range step@4 (never pushed) captures nothing, the message counting 4 pushes
#   nvtx_torch     tests/gpu/window_apps/nvtx_torch.py plain: torch.cuda.nvtx.range_push("block")/range_pop
#                  around a GEMM, ReLU, scale and residual add: the window --range block@2 holds at least 3
#                  kernels, none foreign, and PASSes (SKIP without torch)
#   nvtx_emit      nvtx_torch.py emit: torch.profiler.record_function("block") under
#                  torch.autograd.profiler.emit_nvtx(): the same window, found through emit_nvtx's ranges
#   inductor       tests/gpu/window_apps/inductor_seq.py (torch.compile default mode, caches in the work folder,
#                  compiled first by a run without kerncap): the window
#                  'triton_(per|red)_fused@8..triton_(per|red)_fused@1' --regex (the second counted call: RMSNorm,
#                  cuBLAS GEMM, GELU, GEMM + residual, LayerNorm) has three Triton kernels (first and last among them),
#                  at least one other kernel, none foreign, and PASSes; inductor_strong: its strength is
#                  "window strong"; inductor_time: kernels' GPU time within ±10 % of in-app (span printed);
#                  inductor_make: the reproducer's `make validate` PASSes
#   inductor_py    the GELU kernel (triton_poi_*) replaced by window_apps/inductor_replace.py:gelu (torch, bf16
#                  tolerance): PASS
#   inductor_py_bad  ... by gelu_bad (its last row left alone): FAIL, the verdict naming the region GELU writes
#                  (its output pointer's region, from the capture's parameters) among the failing ones
#   inductor_range the same call as --range inductor_step@1 (the app's NVTX range around each counted call): the
#                  same kernels as the named window, PASS
#   llama_decode   tests/gpu/window_apps/hf_llama_decode.py: layer 0 of a decode step (one token, KV cache) from
#                  the input RMSNorm's first kernel to down_proj (--range decode_layer0@14: pass 2, step 2):
#                  at least 15 kernels, none foreign, PASS, window strong; llama_decode_time: kernels' GPU time
#                  within ±10 % of in-app (span and busy ratio printed: the in-app span is mostly host gaps)
# Exit 0 all passed, 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/window_e2e.sh BUILD_DIR
#
# Environment: OUT (work files under it), KERNCAP_GPU_TIMEOUT, KERNCAP_GPU_CASES, WINDOW_APPS (a
# folder with window_app, gemm_unrolled.cubin and gemm_skip_row.cubin already built; else built
# here with NVCC for this GPU's architecture).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/window_e2e.sh BUILD_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
unset KERNCAP_SERVE
gpu_work_dir window
VERDICT_STYLE=line
echo "window suite: work in $WORK"

py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($1)" "${@:2}"; }

APPS=${WINDOW_APPS:-}
if [ -z "$APPS" ]; then
  APPS=$WORK/apps
  mkdir -p "$APPS"
  SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
  SRC=$HERE/window_apps/window_app.cu
  "$NVCC" -O2 -arch="sm_$SM" -o "$APPS/window_app" "$SRC" &&
    "$NVCC" -O2 -arch="sm_$SM" -cubin -DVARIANT -DVARIANT_gemm_unrolled -o "$APPS/gemm_unrolled.cubin" "$SRC" &&
    "$NVCC" -O2 -arch="sm_$SM" -cubin -DVARIANT -DVARIANT_gemm_skip_row -o "$APPS/gemm_skip_row.cubin" "$SRC" ||
    { echo "cannot build the window apps with $NVCC"; exit 1; }
fi
if [ ! -x "$APPS/fuse_app" ] || [ ! -x "$APPS/two_streams" ]; then
  SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
  FSRC=$HERE/window_apps/fuse_app.cu
  "$NVCC" -O2 -arch="sm_$SM" -o "$APPS/fuse_app" "$FSRC" &&
    "$NVCC" -O2 -arch="sm_$SM" -cubin -DVARIANT -DVARIANT_fused -o "$APPS/fused.cubin" "$FSRC" &&
    "$NVCC" -O2 -arch="sm_$SM" -cubin -DVARIANT -DVARIANT_fused_bad -o "$APPS/fused_bad.cubin" "$FSRC" &&
    "$NVCC" -O2 -arch="sm_$SM" -o "$APPS/two_streams" "$HERE/window_apps/two_streams.cu" ||
    { echo "cannot build the live-out and stream apps with $NVCC"; exit 1; }
fi
APP=$APPS/window_app
ROWS=1024 DIM=1024
N=$((ROWS * DIM))
S=$WORK/win

# region_of SIZE_IN_FLOATS: the id of the capture's region of that many bytes (the app's buffers
# have distinct sizes: x n, y n+16, z n+32, a n+48, xs n+64, w d, W d*d floats).
region_of() { python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print([r['id'] for r in m['regions'] if r['size'] == int(sys.argv[2]) * 4][0])" "$S/capture/manifest.json" "$1" 2>/dev/null; }
# With ROWS = DIM, x and W have the same size: CHANGED 1 picks the one the window changes (x), 0 the other (W).
region_of_changed() { python3 -c "import json,sys; m=json.load(open(sys.argv[1])); ch={a['region'] for a in m['after']['runs']}; print([r['id'] for r in m['regions'] if r['size'] == int(sys.argv[2]) * 4 and (r['id'] in ch) == (sys.argv[3] == '1')][0])" "$S/capture/manifest.json" "$1" "$2" 2>/dev/null; }

# The window_app capture and its cases run only when one of them is asked for (KERNCAP_GPU_CASES).
MAIN_CASES=0
for c in extract replay captured strong swap_good swap_bad live_out reproducer; do want "$c" && MAIN_CASES=1; done
if [ $MAIN_CASES = 1 ] && run extract "$KC" window extract --window 'rms_norm@2..residual_add' --json -o "$S" -- "$APP" 4 "$ROWS" "$DIM"; then
  sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/extract.json"  # the application's own line comes first (it runs on after the window)
  kinds=$(py '",".join(o["kind"] for o in d["ops"])' "$WORK/extract.json")
  names=$(py '",".join(o["name"].split("(")[0] for o in d["ops"] if o["kind"] == "kernel")' "$WORK/extract.json")
  foreign=$(py 'd["foreign_ops"]' "$WORK/extract.json")
  inapp=$(py 'd["in_app_window_ns"]' "$WORK/extract.json")
  ok=$([ "$kinds" = "kernel,copy_d2d,memset,kernel,kernel,kernel" ] && [ "$names" = "rms_norm,gemm,silu,residual_add" ] &&
    [ "$foreign" = 0 ] && [ "$inapp" != None ] && echo 1)
  verdict extract "$(pass_if "$ok")" "ops $kinds ($names), foreign $foreign, in-app window ${inapp} ns, BEFORE $(py 'd["before_bytes"]' "$WORK/extract.json") B in $(py 'd["regions"]' "$WORK/extract.json") regions, AFTER $(py 'd["after_bytes"]' "$WORK/extract.json") B"
  run info "$KC" window info "$S"
  cat "$STEP_OUT"

  if want replay; then
    run replay_json "$KC" window replay "$S" --json --iterations 20
    cp "$STEP_OUT" "$WORK/replay.json"
    ratio=$(py '"%.3f" % d["timing"]["window_ratio"]' "$WORK/replay.json")
    kr=$(py '"%.3f" % (d["timing"]["kernels_ms"] / d["timing"]["in_app_kernels_ms"])' "$WORK/replay.json")
    # The kernels' own times must agree; the window's in-app time also holds the host's gaps
    # between launches (kerncap describes each launch as it is made), so its bound is looser.
    within=$(python3 -c "print(1 if 0.8 <= $kr <= 1.25 and 0.6 <= $ratio <= 1.5 else 0)" 2>/dev/null)
    verdict replay "$(pass_if "$within")" "window replay $(py '"%.4f" % d["timing"]["window_ms"]' "$WORK/replay.json") ms vs in-app $(py '"%.4f" % d["timing"]["in_app_window_ms"]' "$WORK/replay.json") ms (ratio $ratio); kernels $(py '"%.4f" % d["timing"]["kernels_ms"]' "$WORK/replay.json") ms vs $(py '"%.4f" % d["timing"]["in_app_kernels_ms"]' "$WORK/replay.json") ms (ratio $kr)"
    run replay "$KC" window replay "$S"
    cat "$STEP_OUT"
  fi

  # judge LABEL EXPECT [validate flags]: the document in $WORK/LABEL.json, JUDGED its result.
  judge() {
    local label=$1 expect=$2
    shift 2
    run "$label" "$KC" window validate "$S" --json --iterations 10 "$@"
    cp "$STEP_OUT" "$WORK/$label.json" 2>/dev/null
    JUDGED=$(py 'd["result"]' "$WORK/$label.json" 2>/dev/null)
    LAST_LINE=$(py 'd["line"]' "$WORK/$label.json" 2>/dev/null)
    LAST_LINE=${LAST_LINE:-rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ')}
    [ "$JUDGED" = "$expect" ]
  }
  if want captured; then
    judge captured PASS
    verdict captured "$(pass_if "$([ "$JUDGED" = PASS ] && echo 1)")" "$LAST_LINE"
  fi
  if want strong; then
    [ -f "$WORK/captured.json" ] || judge captured PASS
    XR=$(region_of_changed "$N" 1)
    strength=$(py 'd["strength"]' "$WORK/captured.json" 2>/dev/null)
    poisoned=$(py '",".join(str(i) for i in d["poisoned_regions"])' "$WORK/captured.json" 2>/dev/null)
    readfirst=$(py '",".join(str(i) for i in d["read_first_regions"])' "$WORK/captured.json" 2>/dev/null)
    ok=$([[ "$strength" == "window strong"* ]] && [ -n "$poisoned" ] && [[ ",$readfirst," == *",$XR,"* ]] &&
      [[ ",$poisoned," != *",$XR,"* ]] && echo 1)
    verdict strong "$(pass_if "$ok")" "$strength; poisoned regions $poisoned, read first $readfirst (x is $XR)"
  fi
  if want swap_good; then
    # Another summation order over 1024 terms moves fp32 results by ~1e-5 (near-zero outputs
    # by a large relative amount): the tolerance of a reordered reduction, not fp32's default.
    judge swap_good PASS --swap "3=$APPS/gemm_unrolled.cubin" --dtype fp32 --atol 1e-4 --rtol 1e-3
    sp=$(py '"%.3f" % d["speedup"]' "$WORK/swap_good.json" 2>/dev/null)
    verdict swap_good "$(pass_if "$([ "$JUDGED" = PASS ] && echo 1)")" "$LAST_LINE; window speed-up x$sp"
  fi
  ZR=$(region_of $((N + 32)))
  if want swap_bad; then
    judge swap_bad FAIL --swap "3=$APPS/gemm_skip_row.cubin" --dtype fp32 --atol 1e-4 --rtol 1e-3
    failing=$(py '",".join(str(r["id"]) for r in d["verdict"]["regions"] if not r["pass"])' "$WORK/swap_bad.json" 2>/dev/null)
    writer=$(py '[w["op"] for w in d["last_writers"] if w["region"] == '"${ZR:-999999}"'][0]' "$WORK/swap_bad.json" 2>/dev/null)
    ok=$([ "$JUDGED" = FAIL ] && [[ ",$failing," == *",$ZR,"* ]] && [ "$writer" = 3 ] && echo 1)
    verdict swap_bad "$(pass_if "$ok")" "$LAST_LINE (failing regions $failing; z is region $ZR, last written by op $writer)"
    run swap_bad_text "$KC" window validate "$S" --iterations 5 --swap "3=$APPS/gemm_skip_row.cubin" --dtype fp32 --atol 1e-4 --rtol 1e-3
    cat "$STEP_OUT"
  fi
  if want live_out; then
    WR=$(region_of_changed $((DIM * DIM)) 0)
    judge live_out PASS --swap "3=$APPS/gemm_skip_row.cubin" --dtype fp32 --live-out "$WR"
    ign=$(py 'len(d["not_live_out_differing"])' "$WORK/live_out.json" 2>/dev/null)
    verdict live_out "$(pass_if "$([ "$JUDGED" = PASS ] && [ "${ign:-0}" -ge 1 ] && echo 1)")" "$LAST_LINE (W is region $WR; $ign differing region(s) outside the live-out)"
  fi
  if want reproducer; then
    readme_rows=$(grep -cE '^\| [0-9]+ \| (kernel|copy|memset) \|' "$S/README.md" 2>/dev/null)
    run repro_validate make -s -C "$S" validate ITERATIONS=3 WARMUP=1
    rc_captured=$RC
    run repro_swap make -s -C "$S" validate ITERATIONS=3 WARMUP=1 SWAP="3=$APPS/gemm_unrolled.cubin" \
      VALIDATE_FLAGS="--dtype fp32 --atol 1e-4 --rtol 1e-3"
    rc_swap=$RC
    cat "$STEP_OUT"
    verdict reproducer "$(pass_if "$([ "${readme_rows:-0}" = 6 ] && [ "$rc_captured" = 0 ] && [ "$rc_swap" = 0 ] && echo 1)")" \
      "README rows ${readme_rows:-0}; make validate rc $rc_captured; make validate SWAP=3=gemm_unrolled.cubin rc $rc_swap"
  fi
elif [ $MAIN_CASES = 1 ]; then
  verdict extract FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ')"
fi

if want one_op; then
  S1=$WORK/one
  if run one_extract "$KC" window extract --window 'gemm@1..gemm' --json -o "$S1" -- "$APP" 3 "$ROWS" "$DIM"; then
    sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/one.extract.json"
    nops=$(py 'len(d["ops"])' "$WORK/one.extract.json")
    run one_validate "$KC" window validate "$S1" --json --iterations 3
    res=$(py 'd["result"]' "$STEP_OUT" 2>/dev/null)
    verdict one_op "$(pass_if "$([ "$nops" = 1 ] && [ "$res" = PASS ] && echo 1)")" "$nops operation(s); $(py 'd["line"]' "$STEP_OUT" 2>/dev/null)"
  else
    verdict one_op FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ')"
  fi
fi

if want end_missing; then
  run end_missing "$KC" window extract --window 'rms_norm@3..residual_add@2' -o "$WORK/missing" -- "$APP" 4 "$ROWS" "$DIM"
  said=$(grep -c "ended before the window's end" "$STEP_ERR" "$STEP_OUT" 2>/dev/null | awk -F: '{s+=$NF} END {print s+0}')
  verdict end_missing "$(pass_if "$([ "$RC" != 0 ] && [ ! -e "$WORK/missing/capture/manifest.json" ] && [ "$said" -ge 1 ] && echo 1)")" "rc $RC: $(grep -h "window" "$STEP_ERR" | tail -1 | cut -c1-200)"
fi

# The live-out observation and a fused replacement that skips the intermediates.
F=$WORK/fuse
FROWS=256 FDIM=256
FN=$((FROWS * FDIM))
fregion_of() { python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print([r['id'] for r in m['regions'] if r['size'] == int(sys.argv[2]) * 4][0])" "$F/capture/manifest.json" "$1" 2>/dev/null; }
if want fuse_extract || want fuse_auto || want fuse_all || want fuse_bad || want fuse_replace || want fuse_py || want fuse_py_bad || want fuse_py_keep; then
  if run fuse_extract "$KC" window extract --window 'fnorm@3..fact' --json -o "$F" -- "$APPS/fuse_app" 4 "$FROWS" "$FDIM"; then
    sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/fuse.extract.json"
    HR=$(fregion_of $((FN + 16))) TR=$(fregion_of $((FN + 32))) OR=$(fregion_of $((FN + 48)))
    LO=$F/capture/window_liveout.json
    live=$(py '",".join(str(r["id"]) for r in d["regions"] if r["read"])' "$LO" 2>/dev/null)
    dead=$(py '",".join(str(r["id"]) for r in d["regions"] if not r["read"])' "$LO" 2>/dev/null)
    ended=$(py 'd["ended"] + ", %d launch(es)" % d["launches_observed"]' "$LO" 2>/dev/null)
    ok=$([ "$(py 'len(d["ops"])' "$WORK/fuse.extract.json")" = 3 ] && [ "$live" = "$OR" ] &&
      [[ ",$dead," == *",$HR,"* ]] && [[ ",$dead," == *",$TR,"* ]] && echo 1)
    verdict fuse_extract "$(pass_if "$ok")" "live $live (out $OR), dead $dead (h $HR, t $TR); observation: $ended"
    FUSED=(--swap "0=$APPS/fused.cubin" --swap "1=$APPS/fused.cubin" --swap "2=$APPS/fused.cubin")
    FTOL=(--dtype fp32 --atol 1e-4 --rtol 1e-3)
    fjudge() {  # LABEL [flags]: validate the fuse window, the document in $WORK/LABEL.json
      local label=$1
      shift
      run "$label" "$KC" window validate "$F" --json --iterations 10 "$@"
      cp "$STEP_OUT" "$WORK/$label.json" 2>/dev/null
      JUDGED=$(py 'd["result"]' "$WORK/$label.json" 2>/dev/null)
      LAST_LINE=$(py 'd["line"]' "$WORK/$label.json" 2>/dev/null)
      LAST_LINE=${LAST_LINE:-rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ')}
    }
    if want fuse_auto; then
      fjudge fuse_auto "${FUSED[@]}" --live-out auto "${FTOL[@]}"
      sp=$(py '"%.3f" % d["speedup"]' "$WORK/fuse_auto.json" 2>/dev/null)
      strength=$(py 'd["strength"]' "$WORK/fuse_auto.json" 2>/dev/null)
      verdict fuse_auto "$(pass_if "$([ "$JUDGED" = PASS ] && [[ "$strength" == "window strong"* ]] && echo 1)")" "$LAST_LINE; speed-up x$sp"
    fi
    if want fuse_all; then
      fjudge fuse_all "${FUSED[@]}" --live-out all "${FTOL[@]}"
      deadf=$(py '",".join(str(x["region"]) for x in d["dead_differing"])' "$WORK/fuse_all.json" 2>/dev/null)
      run fuse_all_text "$KC" window validate "$F" --iterations 3 "${FUSED[@]}" --live-out all "${FTOL[@]}"
      cat "$STEP_OUT"
      said=$(grep -c "a dead intermediate" "$STEP_OUT")
      ok=$([ "$JUDGED" = FAIL ] && [[ ",$deadf," == *",$HR,"* ]] && [[ ",$deadf," == *",$TR,"* ]] && [ "$said" -ge 2 ] && echo 1)
      verdict fuse_all "$(pass_if "$ok")" "$LAST_LINE; dead and differing: $deadf (h $HR, t $TR); text names $said dead intermediate(s)"
    fi
    if want fuse_bad; then
      fjudge fuse_bad --swap "0=$APPS/fused.cubin" --swap "1=$APPS/fused.cubin" --swap "2=$APPS/fused_bad.cubin" --live-out auto "${FTOL[@]}"
      failing=$(py '",".join(str(r["id"]) for r in d["verdict"]["regions"] if not r["pass"])' "$WORK/fuse_bad.json" 2>/dev/null)
      verdict fuse_bad "$(pass_if "$([ "$JUDGED" = FAIL ] && [ "$failing" = "$OR" ] && echo 1)")" "$LAST_LINE (failing $failing; out is $OR)"
    fi
    if want fuse_replace; then
      XR=$(fregion_of "$FN") WR=$(fregion_of "$FDIM") WWR=$(fregion_of $((FDIM * FDIM + 80)))
      cat >"$WORK/launches.json" <<JSON
{"launches": [{"image": "$APPS/fused.cubin", "kernel": "fused_only", "grid": [$(((FN + 255) / 256)), 1, 1],
  "block": [256, 1, 1], "args": [{"region": $XR}, {"region": $WR}, {"region": $WWR}, {"region": $OR},
  {"i32": $FROWS}, {"i32": $FDIM}]}]}
JSON
      fjudge fuse_replace --replace "0..2=$WORK/launches.json" --live-out auto "${FTOL[@]}"
      sp=$(py '"%.3f" % d["speedup"]' "$WORK/fuse_replace.json" 2>/dev/null)
      strength=$(py 'd["strength"]' "$WORK/fuse_replace.json" 2>/dev/null)
      verdict fuse_replace "$(pass_if "$([ "$JUDGED" = PASS ] && [[ "$strength" == "window strong"* ]] && echo 1)")" "$LAST_LINE; speed-up x$sp"
    fi
    if want fuse_py || want fuse_py_bad || want fuse_py_keep; then
      if torch_ok "${TORCH_PY:-python3}"; then
        PYR=$HERE/window_apps/fuse_torch.py
        # kerncap.window_replace runs in Python: this tree's package and this build's engine.
        export KERNCAP_REPLAY_LIB=${KERNCAP_REPLAY_LIB:-$BUILD/lib/libkerncap_replay.so}
        PYTHONPATH=$(cd "$HERE/../../python" && pwd)${PYTHONPATH:+:$PYTHONPATH}
        export PYTHONPATH
        if want fuse_py; then
          fjudge fuse_py --replace-py "1..2=$PYR:gemm_silu" --python "${TORCH_PY:-python3}" --live-out auto "${FTOL[@]}"
          sp=$(py '"span x%.3f, kernels x%.3f" % (d["speedup"], d["speedup_kernels"])' "$WORK/fuse_py.json" 2>/dev/null)
          strength=$(py 'd["strength"]' "$WORK/fuse_py.json" 2>/dev/null)
          verdict fuse_py "$(pass_if "$([ "$JUDGED" = PASS ] && [[ "$strength" == "window strong"* ]] && echo 1)")" "$LAST_LINE; speed-up $sp; replacement $(py 'd["replacement"]' "$WORK/fuse_py.json" 2>/dev/null)"
          run fuse_py_text "$KC" window validate "$F" --iterations 5 --replace-py "1..2=$PYR:gemm_silu" --python "${TORCH_PY:-python3}" --live-out auto "${FTOL[@]}"
          cat "$STEP_OUT"
          tail -3 "$STEP_ERR"
        fi
        if want fuse_py_bad; then
          fjudge fuse_py_bad --replace-py "1..2=$PYR:gemm_silu_bad" --python "${TORCH_PY:-python3}" --live-out auto "${FTOL[@]}"
          failing=$(py '",".join(str(r["id"]) for r in d["verdict"]["regions"] if not r["pass"])' "$WORK/fuse_py_bad.json" 2>/dev/null)
          writer=$(py '[w["name"] for w in d["last_writers"] if w["region"] == '"${OR:-999999}"'][0]' "$WORK/fuse_py_bad.json" 2>/dev/null)
          verdict fuse_py_bad "$(pass_if "$([ "$JUDGED" = FAIL ] && [ "$failing" = "$OR" ] && echo 1)")" "$LAST_LINE (failing $failing; out is $OR, last written by ${writer:-?})"
        fi
        if want fuse_py_keep; then
          fjudge fuse_py_keep --replace-py "0..2=$PYR:norm_kept" --python "${TORCH_PY:-python3}" --live-out auto "${FTOL[@]}"
          verdict fuse_py_keep "$(pass_if "$([ "$JUDGED" = PASS ] && echo 1)")" "$LAST_LINE"
        fi
      else
        verdict fuse_py SKIP "no torch with CUDA in ${TORCH_PY:-python3}"
      fi
    fi
  else
    verdict fuse_extract FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ')"
  fi
fi

if want h2d; then
  if run h2d_extract "$KC" window extract --window 'fnorm@3..fact' --json -o "$WORK/h2d" -- "$APPS/fuse_app" 4 "$FROWS" "$FDIM" h2d; then
    kinds=$(sed -n '/^{/,$p' "$STEP_OUT" | python3 -c "import json,sys; print(','.join(o['kind'] for o in json.load(sys.stdin)['ops']))" 2>/dev/null)
    run h2d_validate "$KC" window validate "$WORK/h2d" --json --iterations 3
    res=$(py 'd["result"]' "$STEP_OUT" 2>/dev/null)
    verdict h2d "$(pass_if "$([ "$kinds" = kernel,copy_h2d,kernel,kernel ] && [ "$res" = PASS ] && echo 1)")" "ops $kinds; $(py 'd["line"]' "$STEP_OUT" 2>/dev/null)"
  else
    verdict h2d FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ')"
  fi
fi

# two_streams: the fork/join of two_streams.cu as one window of both streams (version 2: each
# operation's stream, the event records and waits as operations), validated, its times printed.
if want two_streams; then
  T=$WORK/two_streams
  if run two_streams_extract "$KC" window extract --window 'produce@1..join' --json -o "$T" -- "$APPS/two_streams" 3; then
    sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/two_streams_extract.json"
    ops=$(py '",".join("%s/%s" % (o["name"].split("(")[0] if o["kind"] == "kernel" else o["kind"], o["stream"]) for o in d["ops"])' "$WORK/two_streams_extract.json" 2>/dev/null)
    foreign=$(py 'd["foreign_ops"]' "$WORK/two_streams_extract.json" 2>/dev/null)
    run two_streams_validate "$KC" window validate "$T" --json --iterations 3
    cp "$STEP_OUT" "$WORK/two_streams_validate.json"
    res=$(py 'd["result"]' "$WORK/two_streams_validate.json" 2>/dev/null)
    strength=$(py 'd["strength"]' "$WORK/two_streams_validate.json" 2>/dev/null)
    run two_streams_replay "$KC" window replay "$T" --json --iterations 20
    cp "$STEP_OUT" "$WORK/two_streams_replay.json"
    times=$(py '"span %.4f ms vs in-app %s ms; kernels %.4f ms vs in-app %s ms" % (d["timing"]["window_ms"], "%.4f" % d["timing"]["in_app_window_ms"] if d["timing"].get("in_app_window_ms") is not None else "-", d["timing"]["kernels_ms"], "%.4f" % d["timing"]["in_app_kernels_ms"] if d["timing"].get("in_app_kernels_ms") is not None else "-")' "$WORK/two_streams_replay.json" 2>/dev/null)
    want_ops="produce/0,event_record/0,event_wait/1,side/1,event_record/1,event_wait/0,join/0"
    ok=$([ "$ops" = "$want_ops" ] && [ "$foreign" = 0 ] && [ "$res" = PASS ] && [[ "$strength" == "window strong"* ]] && echo 1)
    verdict two_streams "$(pass_if "$ok")" "ops $ops, foreign $foreign; $res, $strength; $times"
    run two_streams_text "$KC" window replay "$T"
    cat "$STEP_OUT"
  else
    verdict two_streams FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ')"
  fi
fi

# two_streams_refused: the side stream's work is a CUDA graph launch, which a window records on its
# own stream only: refused when the window's stream joins s1, the message naming the graph; no capture.
if want two_streams_refused; then
  run two_streams_refused "$KC" window extract --window 'produce@1..join' -o "$WORK/two_streams_refused" -- "$APPS/two_streams" 3 1048576 graph
  said=$(grep -h "cuStreamWaitEvent" "$STEP_ERR" "$STEP_OUT" 2>/dev/null | grep "CUDA graph" | head -1 | cut -c1-300)
  verdict two_streams_refused "$(pass_if "$([ "$RC" != 0 ] && [ ! -e "$WORK/two_streams_refused/capture/manifest.json" ] && [ -n "$said" ] && echo 1)")" "rc $RC: ${said:-$(tail -2 "$STEP_ERR" | tr '\n' ' ')}"
fi

PY=${TORCH_PY:-python3}
# torch_window NAME WINDOW [--regex] -- APP...: extract, replay and validate a window of a PyTorch program.
torch_window() {
  local name=$1 win=$2
  shift 2
  local flags=()
  [ "${1:-}" = --regex ] && { flags=(--regex); shift; }
  [ "${1:-}" = -- ] && shift
  local T=$WORK/$name
  if ! run "${name}_extract" "$KC" window extract --window "$win" "${flags[@]}" --json -o "$T" -- "$@"; then
    verdict "$name" FAIL "extract rc $RC: $(grep -v '^kerncap: note' "$STEP_ERR" | tail -2 | tr '\n' ' ' | cut -c1-300)"
    return
  fi
  sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/$name.extract.json"  # the application's own lines come first
  local ops foreign
  ops=$(py '" > ".join(o["name"].split("(")[0].split("<")[0][-40:] for o in d["ops"])' "$WORK/$name.extract.json")
  foreign=$(py 'd["foreign_ops"]' "$WORK/$name.extract.json")
  run "${name}_info" "$KC" window info "$T"
  cat "$STEP_OUT"
  run "${name}_replay" "$KC" window replay "$T" --json --iterations 20
  cp "$STEP_OUT" "$WORK/$name.replay.json"
  run "${name}_replay_text" "$KC" window replay "$T" --iterations 20
  cat "$STEP_OUT"
  local times
  times=$(py '"span %.4f ms vs in-app %s ms (gaps %s ms); kernels %.4f ms (%s) vs in-app %s ms: ratio %s, within 10%%: %s" % (d["timing"]["window_ms"], d["timing"]["in_app_window_ms"], d["timing"]["in_app_gaps_ms"], d["timing"]["kernels_ms"], d["timing"]["cache"], d["timing"]["in_app_kernels_ms"], d["timing"]["kernels_ratio"], d["timing"]["kernels_within_10pct"])' "$WORK/$name.replay.json" 2>/dev/null)
  verdict "${name}_time" "$(pass_if "$(py '1 if d["timing"]["kernels_within_10pct"] else ""' "$WORK/$name.replay.json" 2>/dev/null)")" "${times:-replay rc $RC}"
  run "${name}_validate" "$KC" window validate "$T" --json --iterations 10
  cp "$STEP_OUT" "$WORK/$name.validate.json"
  local res line
  res=$(py 'd["result"]' "$WORK/$name.validate.json" 2>/dev/null)
  line=$(py 'd["line"]' "$WORK/$name.validate.json" 2>/dev/null)
  run "${name}_auto" "$KC" window validate "$T" --json --iterations 3 --live-out auto
  local auto
  auto=$(py 'd["result"] + " under --live-out auto (%d region(s) judged)" % len(d["live_out"])' "$STEP_OUT" 2>/dev/null)
  verdict "$name" "$(pass_if "$([ "$res" = PASS ] && echo 1)")" "${line:-validate rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ' | cut -c1-300)}; ${auto:-auto: rc $RC}; $(py 'len(d["ops"])' "$WORK/$name.extract.json") ops ($ops), foreign $foreign; $times"
}
# A window of one CUDA graph launch (--graph): window_apps/graph_app.cu's stream-captured graph
# (copy_h2d, scale, memset, add, add, copy_d2d, square) at its third launch, and PyTorch's
# torch.cuda.CUDAGraph of graph_apps/graph_torch.py at its third replay.
if want graph || want graph_bad; then
  G=$WORK/graph
  if [ ! -x "$APPS/graph_app" ]; then
    SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
    "$NVCC" -O2 -arch="sm_$SM" -o "$APPS/graph_app" "$HERE/window_apps/graph_app.cu" &&
      "$NVCC" -O2 -arch="sm_$SM" -cubin -DVARIANT -DVARIANT_square_bad -o "$APPS/square_bad.cubin" \
        "$HERE/window_apps/graph_app.cu" || verdict graph FAIL "cannot build graph_app.cu with $NVCC"
  fi
  if [ -x "$APPS/graph_app" ] && run graph_extract "$KC" window extract --graph 'square@2' --json -o "$G" -- "$APPS/graph_app" 4; then
    sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/graph.extract.json"
    kinds=$(py '",".join(o["kind"] if o["kind"] != "kernel" else o["name"].split("(")[0] for o in d["ops"])' "$WORK/graph.extract.json")
    run graph_info "$KC" window info "$G"
    cat "$STEP_OUT"
    run graph_validate "$KC" window validate "$G" --json --iterations 10
    cp "$STEP_OUT" "$WORK/graph.validate.json"
    res=$(py 'd["result"]' "$WORK/graph.validate.json" 2>/dev/null)
    strength=$(py 'd["strength"]' "$WORK/graph.validate.json" 2>/dev/null)
    verdict graph "$(pass_if "$([ "$kinds" = copy_h2d,scale,memset,add,add,copy_d2d,square ] && [ "$res" = PASS ] &&
      [[ "$strength" == "window strong"* ]] && echo 1)")" "ops $kinds; $(py 'd["line"]' "$WORK/graph.validate.json" 2>/dev/null); $strength"
    if want graph_bad; then
      SQ=$(py '[i for i, o in enumerate(d["ops"]) if o["name"].startswith("square")][0]' "$WORK/graph.extract.json")
      run graph_bad "$KC" window validate "$G" --json --iterations 3 --swap "$SQ=$APPS/square_bad.cubin"
      res=$(py 'd["result"]' "$STEP_OUT" 2>/dev/null)
      verdict graph_bad "$(pass_if "$([ "$res" = FAIL ] && echo 1)")" "square (op $SQ) swapped for square_bad: $(py 'd["line"]' "$STEP_OUT" 2>/dev/null)"
    fi
  else
    verdict graph FAIL "extract rc ${RC:-?}: $(grep -v '^kerncap: note' "${STEP_ERR:-/dev/null}" 2>/dev/null | tail -2 | tr '\n' ' ' | cut -c1-300)"
  fi
fi
# A CUDA graph launched inside a FROM..TO window: its nodes are the window's operations.
if want graph_mixed; then
  if [ ! -x "$APPS/graph_app" ]; then
    SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
    "$NVCC" -O2 -arch="sm_$SM" -o "$APPS/graph_app" "$HERE/window_apps/graph_app.cu" || verdict graph_mixed FAIL "cannot build graph_app.cu"
  fi
  GM=$WORK/graph_mixed
  if run graph_mixed_extract "$KC" window extract --window 'pre@2..post' --json -o "$GM" -- "$APPS/graph_app" 4 1048576 mixed; then
    sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/graph_mixed.extract.json"
    kinds=$(py '",".join(o["kind"] if o["kind"] != "kernel" else o["name"].split("(")[0] for o in d["ops"])' "$WORK/graph_mixed.extract.json")
    foreign=$(py 'd["foreign_ops"]' "$WORK/graph_mixed.extract.json")
    run graph_mixed_info "$KC" window info "$GM"
    cat "$STEP_OUT"
    run graph_mixed_validate "$KC" window validate "$GM" --json --iterations 10
    cp "$STEP_OUT" "$WORK/graph_mixed.validate.json"
    res=$(py 'd["result"]' "$WORK/graph_mixed.validate.json" 2>/dev/null)
    strength=$(py 'd["strength"]' "$WORK/graph_mixed.validate.json" 2>/dev/null)
    verdict graph_mixed "$(pass_if "$([ "$kinds" = pre,copy_h2d,scale,memset,add,add,copy_d2d,square,post ] && [ "$foreign" = 0 ] &&
      [ "$res" = PASS ] && [[ "$strength" == "window strong"* ]] && echo 1)")" "ops $kinds, foreign $foreign; $(py 'd["line"]' "$WORK/graph_mixed.validate.json" 2>/dev/null)"
  else
    verdict graph_mixed FAIL "extract rc $RC: $(grep -v '^kerncap: note' "$STEP_ERR" | tail -2 | tr '\n' ' ' | cut -c1-300)"
  fi
  if run graph_mixed_end_extract "$KC" window extract --window 'pre@2..square' --json -o "$WORK/graph_mixed_end" -- "$APPS/graph_app" 4 1048576 mixed; then
    kinds=$(sed -n '/^{/,$p' "$STEP_OUT" | python3 -c "import json,sys; print(','.join(o['kind'] if o['kind'] != 'kernel' else o['name'].split('(')[0] for o in json.load(sys.stdin)['ops']))" 2>/dev/null)
    run graph_mixed_end_validate "$KC" window validate "$WORK/graph_mixed_end" --json --iterations 3
    res=$(py 'd["result"]' "$STEP_OUT" 2>/dev/null)
    verdict graph_mixed_end "$(pass_if "$([ "$kinds" = pre,copy_h2d,scale,memset,add,add,copy_d2d,square ] && [ "$res" = PASS ] && echo 1)")" "ops $kinds; $(py 'd["line"]' "$STEP_OUT" 2>/dev/null)"
  else
    verdict graph_mixed_end FAIL "extract rc $RC: $(grep -v '^kerncap: note' "$STEP_ERR" | tail -2 | tr '\n' ' ' | cut -c1-300)"
  fi
  run graph_mixed_mid "$KC" window extract --window 'pre@2..add' -o "$WORK/graph_mixed_mid" -- "$APPS/graph_app" 4 1048576 mixed
  said=$(grep -h "a window ends with a whole graph launch" "$STEP_ERR" "$STEP_OUT" 2>/dev/null | head -1 | cut -c1-300)
  verdict graph_mixed_mid "$(pass_if "$([ "$RC" != 0 ] && [ ! -e "$WORK/graph_mixed_mid/capture/manifest.json" ] && [ -n "$said" ] && echo 1)")" "rc $RC: ${said:-$(tail -2 "$STEP_ERR" | tr '\n' ' ')}"
fi
if want graph_torch_mixed; then
  if torch_ok "$PY"; then
    TM=$WORK/graph_torch_mixed
    if run graph_torch_mixed_extract "$KC" window extract --window 'sigmoid_kernel_cuda@2..tanh_kernel_cuda' --json -o "$TM" -- "$PY" "$HERE/graph_apps/graph_torch.py" mixed; then
      sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/graph_torch_mixed.extract.json"
      ops=$(py '" > ".join(o["kind"] if o["kind"] != "kernel" else o["name"].split("(")[0].split("<")[0][-40:] for o in d["ops"])' "$WORK/graph_torch_mixed.extract.json")
      nk=$(py 'd["kernels"]' "$WORK/graph_torch_mixed.extract.json")
      foreign=$(py 'd["foreign_ops"]' "$WORK/graph_torch_mixed.extract.json")
      run graph_torch_mixed_info "$KC" window info "$TM"
      cat "$STEP_OUT"
      run graph_torch_mixed_validate "$KC" window validate "$TM" --json --iterations 10
      cp "$STEP_OUT" "$WORK/graph_torch_mixed.validate.json"
      res=$(py 'd["result"]' "$WORK/graph_torch_mixed.validate.json" 2>/dev/null)
      strength=$(py 'd["strength"]' "$WORK/graph_torch_mixed.validate.json" 2>/dev/null)
      # sigmoid, (the copy back), the graph's mul, exp, add and sum kernels, tanh: at least 6 kernels.
      verdict graph_torch_mixed "$(pass_if "$([ "$res" = PASS ] && [ "$foreign" = 0 ] && [ "${nk:-0}" -ge 6 ] && echo 1)")" "ops $ops; foreign $foreign; $(py 'd["line"]' "$WORK/graph_torch_mixed.validate.json" 2>/dev/null)"
    else
      verdict graph_torch_mixed FAIL "extract rc $RC: $(grep -v '^kerncap: note' "$STEP_ERR" | tail -2 | tr '\n' ' ' | cut -c1-300)"
    fi
  else
    verdict graph_torch_mixed SKIP "no torch with CUDA in $PY"
  fi
fi
if want graph_torch; then
  if torch_ok "$PY"; then
    T=$WORK/graph_torch
    if run graph_torch_extract "$KC" window extract --graph 'exp_kernel_cuda@2' --json -o "$T" -- "$PY" "$HERE/graph_apps/graph_torch.py"; then
      sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/graph_torch.extract.json"
      ops=$(py '" > ".join(o["kind"] if o["kind"] != "kernel" else o["name"].split("(")[0].split("<")[0][-40:] for o in d["ops"])' "$WORK/graph_torch.extract.json")
      run graph_torch_info "$KC" window info "$T"
      cat "$STEP_OUT"
      run graph_torch_replay "$KC" window replay "$T" --iterations 20
      cat "$STEP_OUT"
      run graph_torch_validate "$KC" window validate "$T" --json --iterations 10
      cp "$STEP_OUT" "$WORK/graph_torch.validate.json"
      res=$(py 'd["result"]' "$WORK/graph_torch.validate.json" 2>/dev/null)
      strength=$(py 'd["strength"]' "$WORK/graph_torch.validate.json" 2>/dev/null)
      verdict graph_torch "$(pass_if "$([ "$res" = PASS ] && [[ "$strength" == "window strong"* ]] && echo 1)")" "ops $ops; $(py 'd["line"]' "$WORK/graph_torch.validate.json" 2>/dev/null); $strength"
    else
      verdict graph_torch FAIL "extract rc $RC: $(grep -v '^kerncap: note' "$STEP_ERR" | tail -2 | tr '\n' ' ' | cut -c1-300)"
    fi
  else
    verdict graph_torch SKIP "no torch with CUDA in $PY"
  fi
fi
if want torch_mlp; then
  if torch_ok "$PY"; then
    torch_window torch_mlp 'layer_norm@2..GeluCUDAKernelImpl' -- "$PY" "$HERE/window_apps/window_torch.py" 4
  else
    verdict torch_mlp SKIP "no torch with CUDA in $PY"
  fi
fi
if want llama; then
  if torch_ok "$PY" && "$PY" -c 'import transformers' 2>/dev/null; then
    torch_window llama 'flash_fwd|fmha|sdpa|attention@2..silu' --regex -- "$PY" "$HERE/hf_llama.py" 3
  else
    verdict llama SKIP "no torch with CUDA or no transformers in $PY"
  fi
fi

# The Llama MLP's SiLU and multiply fused into one CUDA kernel (window_apps/silu_mul.cu), standing in
# for silu, up_proj's GEMM (kept as captured) and mul through --replace.
if want llama_fuse; then
  if torch_ok "$PY" && "$PY" -c 'import transformers' 2>/dev/null; then
    L=$WORK/llama_fuse
    SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
    "$NVCC" -O2 -arch="sm_$SM" -cubin -o "$WORK/silu_mul.cubin" "$HERE/window_apps/silu_mul.cu" ||
      verdict llama_fuse FAIL "cannot build silu_mul.cu"
    # --observe 24: the rest of the layer and the next one's first kernels. Later, the next layer's
    # gate GEMM writes its output into the block PyTorch freed after the multiply, which the
    # observation cannot tell from a read (docs/window.md "Live-out").
    if run llama_fuse_extract "$KC" window extract --window 'silu@2..MulFunctor' --observe 24 --json -o "$L" -- "$PY" "$HERE/hf_llama.py" 3; then
      run llama_fuse_info "$KC" window info "$L"
      cat "$STEP_OUT"
      cat "$L/capture/window_liveout.json" 2>/dev/null | head -c 3000
      echo
      python3 "$HERE/window_apps/silu_mul_launches.py" "$L" "$WORK/silu_mul.cubin" silu_mul "$WORK/silu_mul.json" >"$WORK/silu_mul.found" &&
        python3 "$HERE/window_apps/silu_mul_launches.py" "$L" "$WORK/silu_mul.cubin" silu_mul_bad "$WORK/silu_mul_bad.json" >/dev/null
      cat "$WORK/silu_mul.found"
      RSPEC=$(py 'd["replace"]' "$WORK/silu_mul.found" 2>/dev/null)
      TR=$(py 'd["t"][0]' "$WORK/silu_mul.found" 2>/dev/null) MR=$(py 'd["m"][0]' "$WORK/silu_mul.found" 2>/dev/null)
      BSPEC=${RSPEC%=*}=$WORK/silu_mul_bad.json
      BT=(--dtype bf16)
      ljudge() {  # LABEL [flags]
        local label=$1
        shift
        run "$label" "$KC" window validate "$L" --json --iterations 20 "$@"
        cp "$STEP_OUT" "$WORK/$label.json" 2>/dev/null
        JUDGED=$(py 'd["result"]' "$WORK/$label.json" 2>/dev/null)
        LAST_LINE=$(py 'd["line"]' "$WORK/$label.json" 2>/dev/null)
        LAST_LINE=${LAST_LINE:-rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ')}
      }
      ljudge llama_fuse_captured
      verdict llama_fuse_captured "$(pass_if "$([ "$JUDGED" = PASS ] && echo 1)")" "$LAST_LINE"
      if [ -n "$RSPEC" ]; then
        ljudge llama_fuse_auto --replace "$RSPEC" --live-out auto "${BT[@]}"
        sp=$(py '"span x%.3f, kernels x%.3f" % (d["speedup"], d["speedup_kernels"])' "$WORK/llama_fuse_auto.json" 2>/dev/null)
        pieces=$(py '"; ".join("region %d +%#x..+%#x" % (x["region"], x["offset"], x["offset"] + x["size"]) for x in d["dead_pieces"])' "$WORK/llama_fuse_auto.json" 2>/dev/null)
        verdict llama_fuse_auto "$(pass_if "$([ "$JUDGED" = PASS ] && echo 1)")" "$LAST_LINE; speed-up $sp; live-out $(py 'd["live_out"]' "$WORK/llama_fuse_auto.json" 2>/dev/null) (t in region $TR, m in $MR); dead pieces not judged: ${pieces:-none}; $(py '"g reused by u: %s" % d["g_reused_by_u"]' "$WORK/silu_mul.found" 2>/dev/null)"
        run llama_fuse_auto_text "$KC" window validate "$L" --iterations 20 --replace "$RSPEC" --live-out auto "${BT[@]}"
        cat "$STEP_OUT"
        ljudge llama_fuse_all --replace "$RSPEC" --live-out all "${BT[@]}"
        TO=$(py 'd["t"][1]' "$WORK/silu_mul.found" 2>/dev/null)
        deadf=$(py '",".join(str(x["region"]) for x in d["dead_differing"] if x.get("offset", -1) <= '"${TO:-0}"' < x.get("offset", -1) + x.get("size", 0) or "offset" not in x)' "$WORK/llama_fuse_all.json" 2>/dev/null)
        failing=$(py '",".join(str(r["id"]) for r in d["verdict"]["regions"] if not r["pass"])' "$WORK/llama_fuse_all.json" 2>/dev/null)
        run llama_fuse_all_text "$KC" window validate "$L" --iterations 3 --replace "$RSPEC" --live-out all "${BT[@]}"
        cat "$STEP_OUT"
        said=$(grep -c "dead intermediate" "$STEP_OUT")
        verdict llama_fuse_all "$(pass_if "$([ "$JUDGED" = FAIL ] && [[ ",$deadf," == *",$TR,"* ]] && [ "$said" -ge 1 ] && echo 1)")" "$LAST_LINE; failing $failing, dead and differing: ${deadf:-none} (t in region $TR at +$TO); text names $said dead intermediate(s)"
        ljudge llama_fuse_bad --replace "$BSPEC" --live-out auto "${BT[@]}"
        failing=$(py '",".join(str(r["id"]) for r in d["verdict"]["regions"] if not r["pass"])' "$WORK/llama_fuse_bad.json" 2>/dev/null)
        verdict llama_fuse_bad "$(pass_if "$([ "$JUDGED" = FAIL ] && [[ ",$failing," == *",$MR,"* ]] && echo 1)")" "$LAST_LINE (failing $failing; m in region $MR)"
      else
        verdict llama_fuse_auto FAIL "no launches.json: $(tail -2 "$WORK/silu_mul.found" 2>/dev/null)"
      fi
    else
      verdict llama_fuse FAIL "extract rc $RC: $(grep -v '^kerncap: note' "$STEP_ERR" | tail -2 | tr '\n' ' ' | cut -c1-300)"
    fi
  else
    verdict llama_fuse SKIP "no torch with CUDA or no transformers in $PY"
  fi
fi

# LlamaRMSNorm's eight eager kernels replaced by one fused kernel inside the decoder-layer window.
if want llama_norm; then
  if torch_ok "$PY" && "$PY" -c 'import transformers' 2>/dev/null; then
    N=$WORK/llama_norm
    SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
    "$NVCC" -O3 -arch="sm_$SM" -cubin -o "$WORK/rms_norm_fused.cubin" "$HERE/window_apps/rms_norm_fused.cu" ||
      verdict llama_norm FAIL "cannot build rms_norm_fused.cu"
    # The window ends with the norm (its second MulFunctor) and the observation looks one launch
    # further, the gate GEMM that reads the norm's output. The norm's output lies over the front
    # of its float intermediate's freed block (one pointer): judged apart from the block's dead
    # tail because pieces are also cut where the last writer changes (docs/window.md "Pieces").
    if run llama_norm_extract "$KC" window extract --window 'flash_fwd|fmha|sdpa|attention@2..MulFunctor@1' --regex \
      --observe 1 --json -o "$N" -- "$PY" "$HERE/hf_llama.py" 3; then
      python3 "$HERE/window_apps/rms_norm_launches.py" "$N" "$WORK/rms_norm_fused.cubin" rms_norm_fused "$WORK/rms_norm.json" \
        >"$WORK/rms_norm.found" 2>&1 &&
        python3 "$HERE/window_apps/rms_norm_launches.py" "$N" "$WORK/rms_norm_fused.cubin" rms_norm_fused_bad "$WORK/rms_norm_bad.json" >/dev/null
      cat "$WORK/rms_norm.found"
      # The window's reproducer on a real capture: make validate (the one judge) and make time.
      timeout "$TIMEOUT" make -s -C "$N" validate ITERATIONS=5 >"$WORK/llama_norm_make.out" 2>&1
      mrc=$?
      timeout "$TIMEOUT" make -s -C "$N" time ITERATIONS=5 >>"$WORK/llama_norm_make.out" 2>&1
      trc=$?
      rows=$(grep -c -E '^\| [0-9]+ \| (kernel|memset|copy)' "$N/README.md" 2>/dev/null)
      verdict llama_norm_make "$(pass_if "$([ $mrc = 0 ] && [ $trc = 0 ] && grep -q '^Result: PASS' "$WORK/llama_norm_make.out" &&
        [ "${rows:-0}" -ge 11 ] && echo 1)")" "make validate rc $mrc ($(grep -m1 '^Result:' "$WORK/llama_norm_make.out" | cut -c1-120)), make time rc $trc; README lists ${rows:-0} operations"
      NSPEC=$(py 'd["replace"]' "$WORK/rms_norm.found" 2>/dev/null)
      NMR=$(py 'd["m"][0]' "$WORK/rms_norm.found" 2>/dev/null)
      njudge() {  # LABEL [flags]: JUDGED, LAST_LINE
        local label=$1
        shift
        run "$label" "$KC" window validate "$N" --json --iterations 20 --dtype bf16 "$@"
        cp "$STEP_OUT" "$WORK/$label.json" 2>/dev/null
        JUDGED=$(py 'd["result"]' "$WORK/$label.json" 2>/dev/null)
        LAST_LINE=$(py 'd["line"]' "$WORK/$label.json" 2>/dev/null)
        LAST_LINE=${LAST_LINE:-rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ')}
      }
      if [ -n "$NSPEC" ]; then
        njudge llama_norm_auto --replace "$NSPEC" --live-out auto
        sp=$(py '"span x%.3f, kernels x%.3f" % (d["speedup"], d["speedup_kernels"])' "$WORK/llama_norm_auto.json" 2>/dev/null)
        faster=$(py '1 if d["speedup_kernels"] > 1 else ""' "$WORK/llama_norm_auto.json" 2>/dev/null)
        verdict llama_norm_auto "$(pass_if "$([ "$JUDGED" = PASS ] && [ -n "$faster" ] && echo 1)")" \
          "$LAST_LINE; speed-up $sp; 8 kernels -> 1 ($(py 'd["rows"]' "$WORK/rms_norm.found" 2>/dev/null) rows); live-out $(py 'd["live_out"]' "$WORK/llama_norm_auto.json" 2>/dev/null) (norm output in region $NMR)"
        run llama_norm_auto_text "$KC" window validate "$N" --iterations 20 --dtype bf16 --replace "$NSPEC" --live-out auto
        cat "$STEP_OUT"
        njudge llama_norm_all --replace "$NSPEC" --live-out all
        run llama_norm_all_text "$KC" window validate "$N" --iterations 3 --dtype bf16 --replace "$NSPEC" --live-out all
        cat "$STEP_OUT"
        said=$(grep -c "dead intermediate" "$STEP_OUT")
        verdict llama_norm_all "$(pass_if "$([ "$JUDGED" = FAIL ] && [ "$said" -ge 1 ] && echo 1)")" "$LAST_LINE; text names $said dead intermediate(s)"
        njudge llama_norm_bad --replace "${NSPEC%=*}=$WORK/rms_norm_bad.json" --live-out auto
        failing=$(py '",".join(str(r["id"]) for r in d["verdict"]["regions"] if not r["pass"])' "$WORK/llama_norm_bad.json" 2>/dev/null)
        verdict llama_norm_bad "$(pass_if "$([ "$JUDGED" = FAIL ] && [[ ",$failing," == *",$NMR,"* ]] && echo 1)")" "$LAST_LINE (failing $failing; norm output in region $NMR)"
      else
        verdict llama_norm_auto FAIL "no launches.json: $(tail -2 "$WORK/rms_norm.found" 2>/dev/null)"
      fi
    else
      verdict llama_norm FAIL "extract rc $RC: $(grep -v '^kerncap: note' "$STEP_ERR" | tail -2 | tr '\n' ' ' | cut -c1-300)"
    fi
  else
    verdict llama_norm SKIP "no torch with CUDA or no transformers in $PY"
  fi
fi

# A window bounded by an NVTX range (--range): window_apps/nvtx_app.cu's range "step", and PyTorch's
# ranges (torch.cuda.nvtx.range_push, record_function under emit_nvtx) in window_apps/nvtx_torch.py.
if want nvtx; then
  if [ ! -x "$APPS/nvtx_app" ]; then
    SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
    "$NVCC" -O2 -arch="sm_$SM" -o "$APPS/nvtx_app" "$HERE/window_apps/nvtx_app.cu" -ldl ||
      verdict nvtx FAIL "cannot build nvtx_app.cu with $NVCC"
  fi
  NV=$WORK/nvtx
  if [ -x "$APPS/nvtx_app" ] && run nvtx_extract "$KC" window extract --range 'step@2' --json -o "$NV" -- "$APPS/nvtx_app" 4; then
    sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/nvtx.extract.json"  # the application's own line may come first
    ops=$(py '",".join(o["kind"] if o["kind"] != "kernel" else o["name"].split("(")[0] for o in d["ops"])' "$WORK/nvtx.extract.json")
    foreign=$(py 'd["foreign_ops"]' "$WORK/nvtx.extract.json")
    inapp=$(py 'd["in_app_window_ns"]' "$WORK/nvtx.extract.json")
    ranged=$(py '1 if d.get("range") else 0' "$NV/capture/window.json" 2>/dev/null)
    run nvtx_info "$KC" window info "$NV"
    cat "$STEP_OUT"
    title=$(head -1 "$STEP_OUT" | cut -c1-60)
    run nvtx_validate "$KC" window validate "$NV" --json --iterations 10
    cp "$STEP_OUT" "$WORK/nvtx.validate.json"
    res=$(py 'd["result"]' "$WORK/nvtx.validate.json" 2>/dev/null)
    strength=$(py 'd["strength"]' "$WORK/nvtx.validate.json" 2>/dev/null)
    verdict nvtx "$(pass_if "$([ "$ops" = nvtx_scale,nvtx_accumulate,nvtx_square ] && [ "$foreign" = 0 ] &&
      [ "$inapp" != None ] && [ "$ranged" = 1 ] && [[ "$title" == "window range step@2"* ]] && [ "$res" = PASS ] &&
      [[ "$strength" == "window strong"* ]] && echo 1)")" "ops $ops; foreign $foreign; in-app ${inapp} ns; '$title'; $(py 'd["line"]' "$WORK/nvtx.validate.json" 2>/dev/null); $strength"
  else
    verdict nvtx FAIL "extract rc ${RC:-?}: $(grep -v '^kerncap: note' "${STEP_ERR:-/dev/null}" 2>/dev/null | tail -3 | tr '\n' ' ' | cut -c1-400)"
  fi
  if [ -x "$APPS/nvtx_app" ]; then
    if run nvtx_pusha "$KC" window extract --range 'step@1' --json -o "$WORK/nvtx_pusha" -- "$APPS/nvtx_app" 4; then
      ops=$(sed -n '/^{/,$p' "$STEP_OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(",".join(o["name"].split("(")[0] for o in d["ops"]))' 2>/dev/null)
      verdict nvtx_pusha "$(pass_if "$([ "$ops" = nvtx_scale,nvtx_accumulate,nvtx_square ] && echo 1)")" "step@1 (nvtxRangePushA): ops $ops"
    else
      verdict nvtx_pusha FAIL "extract rc $RC: $(grep -v '^kerncap: note' "$STEP_ERR" | tail -3 | tr '\n' ' ' | cut -c1-400)"
    fi
    run nvtx_missing "$KC" window extract --range 'step@4' -o "$WORK/nvtx_missing" -- "$APPS/nvtx_app" 4
    said=$(grep -h "pushed 4 NVTX range(s) named 'step'" "$STEP_ERR" "$STEP_OUT" 2>/dev/null | head -1 | cut -c1-300)
    verdict nvtx_missing "$(pass_if "$([ "$RC" != 0 ] && [ ! -e "$WORK/nvtx_missing/capture/manifest.json" ] && [ -n "$said" ] && echo 1)")" "rc $RC: ${said:-$(tail -2 "$STEP_ERR" | tr '\n' ' ' | cut -c1-300)}"
  fi
fi
for NVTX_MODE in plain emit; do
  NVTX_CASE=$([ "$NVTX_MODE" = plain ] && echo nvtx_torch || echo nvtx_emit)
  want "$NVTX_CASE" || continue
  if ! torch_ok "$PY"; then
    verdict "$NVTX_CASE" SKIP "no torch with CUDA in $PY"
    continue
  fi
  T=$WORK/$NVTX_CASE
  if run "${NVTX_CASE}_extract" "$KC" window extract --range 'block@2' --json -o "$T" -- "$PY" "$HERE/window_apps/nvtx_torch.py" "$NVTX_MODE" 4; then
    sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/$NVTX_CASE.extract.json"
    ops=$(py '" > ".join(o["kind"] if o["kind"] != "kernel" else o["name"].split("(")[0].split("<")[0][-40:] for o in d["ops"])' "$WORK/$NVTX_CASE.extract.json")
    nk=$(py 'd["kernels"]' "$WORK/$NVTX_CASE.extract.json")
    foreign=$(py 'd["foreign_ops"]' "$WORK/$NVTX_CASE.extract.json")
    run "${NVTX_CASE}_info" "$KC" window info "$T"
    cat "$STEP_OUT"
    run "${NVTX_CASE}_validate" "$KC" window validate "$T" --json --iterations 10
    cp "$STEP_OUT" "$WORK/$NVTX_CASE.validate.json"
    res=$(py 'd["result"]' "$WORK/$NVTX_CASE.validate.json" 2>/dev/null)
    strength=$(py 'd["strength"]' "$WORK/$NVTX_CASE.validate.json" 2>/dev/null)
    verdict "$NVTX_CASE" "$(pass_if "$([ "$res" = PASS ] && [ "$foreign" = 0 ] && [ "${nk:-0}" -ge 3 ] && echo 1)")" "ops $ops; foreign $foreign; $(py 'd["line"]' "$WORK/$NVTX_CASE.validate.json" 2>/dev/null); $strength"
  else
    verdict "$NVTX_CASE" FAIL "extract rc $RC: $(grep -v '^kerncap: note' "$STEP_ERR" | tail -3 | tr '\n' ' ' | cut -c1-400)"
  fi
done

# A decode step of the Llama decoder layer (window_apps/hf_llama_decode.py: one token, KV cache):
# layer 0 from its input RMSNorm's first kernel to down_proj, an NVTX range its module hooks set.
if want llama_decode; then
  if torch_ok "$PY" && "$PY" -c 'import transformers' 2>/dev/null; then
    LD=$WORK/llama_decode
    # 3 passes of 6 decode steps: push 14 is pass 2's step 2 (two full passes warmed the allocator).
    if run llama_decode_extract "$KC" window extract --range 'decode_layer0@14' --json -o "$LD" -- \
      "$PY" "$HERE/window_apps/hf_llama_decode.py" 3 6; then
      sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/llama_decode.extract.json"
      DJ=$WORK/llama_decode.extract.json
      dops=$(py '(lambda n: " > ".join(n[:4] + ["..."] + n[-4:]) if len(n) > 8 else " > ".join(n))([o["name"].split("(")[0].split("<")[0][-32:] if o["kind"] == "kernel" else o["kind"] for o in d["ops"]])' "$DJ" 2>/dev/null)
      nk=$(py 'd["kernels"]' "$DJ" 2>/dev/null)
      foreign=$(py 'd["foreign_ops"]' "$DJ" 2>/dev/null)
      run llama_decode_info "$KC" window info "$LD"
      cat "$STEP_OUT"
      run llama_decode_validate "$KC" window validate "$LD" --json --iterations 10
      cp "$STEP_OUT" "$WORK/llama_decode.validate.json"
      res=$(py 'd["result"]' "$WORK/llama_decode.validate.json" 2>/dev/null)
      strength=$(py 'd["strength"]' "$WORK/llama_decode.validate.json" 2>/dev/null)
      verdict llama_decode "$(pass_if "$([ "$res" = PASS ] && [[ "$strength" == "window strong"* ]] && [ "${nk:-0}" -ge 15 ] &&
        [ "$foreign" = 0 ] && echo 1)")" "$nk kernels, foreign $foreign; $(py 'd["line"]' "$WORK/llama_decode.validate.json" 2>/dev/null || echo "validate rc $RC"); ${strength:-no strength}; ops $dops"
      # Kernels: the sum of each kernel's GPU time (CUPTI records, no launch gaps), replay against the
      # application's records. Span: first operation's start to the last one's end; the replay queues
      # them behind a spin kernel (no host gap), the application's holds PyTorch's dispatch between
      # launches, so span / in-app kernels (the busy ratio) is printed beside the span's ratio.
      run llama_decode_replay "$KC" window replay "$LD" --json --iterations 50
      cp "$STEP_OUT" "$WORK/llama_decode.replay.json"
      dtimes=$(py '"kernels %.4f ms (%s) vs in-app %.4f ms: ratio %.3f; span %.4f ms vs in-app %.4f ms: ratio %.3f (in-app gaps %s ms, share %s; replay span / in-app kernels %s)" % (d["timing"]["kernels_ms"], d["timing"]["cache"], d["timing"]["in_app_kernels_ms"], d["timing"]["kernels_ratio"], d["timing"]["window_ms"], d["timing"]["in_app_window_ms"], d["timing"]["window_ratio"], d["timing"].get("in_app_gaps_ms"), d["timing"].get("in_app_gap_share"), d["timing"].get("window_busy_ratio"))' "$WORK/llama_decode.replay.json" 2>/dev/null)
      verdict llama_decode_time "$(pass_if "$(py '1 if d["timing"]["kernels_within_10pct"] else ""' "$WORK/llama_decode.replay.json" 2>/dev/null)")" "${dtimes:-replay rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ' | cut -c1-300)}"
      run llama_decode_replay_text "$KC" window replay "$LD" --iterations 50
      cat "$STEP_OUT"
    else
      verdict llama_decode FAIL "extract rc $RC: $(grep -v '^kerncap: note' "$STEP_ERR" | tail -3 | tr '\n' ' ' | cut -c1-400)"
    fi
  else
    verdict llama_decode SKIP "no torch with CUDA or no transformers in $PY"
  fi
fi

# An Inductor-generated sequence of Triton kernels as one window (window_apps/inductor_seq.py: a
# torch.compile'd RMSNorm, GEMM, GELU, GEMM with the residual add, LayerNorm; three Triton kernels,
# two cuBLAS GEMMs a call). Inductor's and Triton's caches live in the work folder; a first run without kerncap
# compiles (and would autotune) there, so the captured run loads and launches only the model's kernels:
# window mode counts every launch whose name matches, benchmark launches included.
if want inductor || want inductor_py || want inductor_py_bad || want inductor_range; then
  if torch_ok "$PY"; then
    IND=$WORK/inductor
    IAPP=$HERE/window_apps/inductor_seq.py
    IENV=(env TORCHINDUCTOR_CACHE_DIR="$WORK/inductor_cache" TRITON_CACHE_DIR="$WORK/inductor_cache/triton"
      TORCHINDUCTOR_COMPILE_THREADS=1)
    run inductor_warm "${IENV[@]}" "$PY" "$IAPP" warm
    IWARM=$RC
    cat "$STEP_OUT"
    [ "$IWARM" = 0 ] || verdict inductor FAIL "compiling without kerncap: rc $IWARM: $(tail -3 "$STEP_ERR" | tr '\n' ' ' | cut -c1-300)"
    # ops_of JSON: the window's operations, short.
    ops_of() { py '" > ".join(o["name"].split("(")[0].split("<")[0][-44:] if o["kind"] == "kernel" else o["kind"] for o in d["ops"])' "$1" 2>/dev/null; }
    if [ "$IWARM" = 0 ] && { want inductor || want inductor_py || want inductor_py_bad; }; then
      # WARM = 3 calls, then the counted ones; each call launches two triton_(per|red)_fused kernels:
      # @8 is the RMSNorm of counted call 1, and its @1 the LayerNorm of the same call.
      if run inductor_extract "${IENV[@]}" "$KC" window extract --window 'triton_(per|red)_fused@8..triton_(per|red)_fused@1' \
        --regex --json -o "$IND" -- "$PY" "$IAPP" run 6; then
        sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/inductor.extract.json"
        IJ=$WORK/inductor.extract.json
        iops=$(ops_of "$IJ")
        ntri=$(py 'sum(1 for o in d["ops"] if o["kind"] == "kernel" and o["name"].startswith("triton_"))' "$IJ")
        nother=$(py 'sum(1 for o in d["ops"] if o["kind"] == "kernel" and not o["name"].startswith("triton_"))' "$IJ")
        ends=$(py '1 if d["ops"][0]["name"].startswith("triton_") and d["ops"][-1]["name"].startswith("triton_") else 0' "$IJ")
        foreign=$(py 'd["foreign_ops"]' "$IJ")
        POI=$(py '[i for i, o in enumerate(d["ops"]) if o["kind"] == "kernel" and o["name"].startswith("triton_poi")][0]' "$IJ" 2>/dev/null)
        run inductor_info "$KC" window info "$IND"
        cat "$STEP_OUT"
        run inductor_validate "$KC" window validate "$IND" --json --iterations 10
        cp "$STEP_OUT" "$WORK/inductor.validate.json"
        res=$(py 'd["result"]' "$WORK/inductor.validate.json" 2>/dev/null)
        line=$(py 'd["line"]' "$WORK/inductor.validate.json" 2>/dev/null)
        strength=$(py 'd["strength"]' "$WORK/inductor.validate.json" 2>/dev/null)
        verdict inductor "$(pass_if "$([ "$res" = PASS ] && [ "${ntri:-0}" -ge 3 ] && [ "${nother:-0}" -ge 1 ] && [ "$ends" = 1 ] &&
          [ "$foreign" = 0 ] && echo 1)")" "ops $iops ($ntri Triton, $nother other), foreign $foreign; ${line:-validate rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ' | cut -c1-300)}"
        verdict inductor_strong "$(pass_if "$([[ "$strength" == "window strong"* ]] && echo 1)")" "${strength:-none}; poisoned regions $(py 'd.get("poisoned_regions")' "$WORK/inductor.validate.json" 2>/dev/null), read first $(py 'd.get("read_first_regions")' "$WORK/inductor.validate.json" 2>/dev/null)"
        run inductor_replay "$KC" window replay "$IND" --json --iterations 20
        cp "$STEP_OUT" "$WORK/inductor.replay.json"
        itimes=$(py '"kernels %.4f ms (%s) vs in-app %.4f ms: ratio %.3f; span %.4f ms vs in-app %.4f ms (ratio %.3f; in-app gaps %s ms, span / in-app kernels %s)" % (d["timing"]["kernels_ms"], d["timing"]["cache"], d["timing"]["in_app_kernels_ms"], d["timing"]["kernels_ratio"], d["timing"]["window_ms"], d["timing"]["in_app_window_ms"], d["timing"]["window_ratio"], d["timing"].get("in_app_gaps_ms"), d["timing"].get("window_busy_ratio"))' "$WORK/inductor.replay.json" 2>/dev/null)
        verdict inductor_time "$(pass_if "$(py '1 if d["timing"]["kernels_within_10pct"] else ""' "$WORK/inductor.replay.json" 2>/dev/null)")" "${itimes:-replay rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ' | cut -c1-300)}"
        run inductor_replay_text "$KC" window replay "$IND" --iterations 20
        cat "$STEP_OUT"
        timeout "$TIMEOUT" make -s -C "$IND" validate ITERATIONS=3 WARMUP=1 >"$WORK/inductor_make.out" 2>&1
        mrc=$?
        verdict inductor_make "$(pass_if "$([ $mrc = 0 ] && grep -q '^Result: PASS' "$WORK/inductor_make.out" && echo 1)")" "make validate rc $mrc: $(grep -m1 '^Result:' "$WORK/inductor_make.out" | cut -c1-160)"
        # The GELU kernel replaced by a Python callable (torch on the replay's stream), right and wrong.
        export KERNCAP_REPLAY_LIB=${KERNCAP_REPLAY_LIB:-$BUILD/lib/libkerncap_replay.so}
        PYTHONPATH=$(cd "$HERE/../../python" && pwd)${PYTHONPATH:+:$PYTHONPATH}
        export PYTHONPATH
        PYR=$HERE/window_apps/inductor_replace.py
        if [ -z "$POI" ]; then
          { want inductor_py || want inductor_py_bad; } && verdict inductor_py FAIL "no triton_poi_ kernel in the window: $iops"
        else
          if want inductor_py; then
            run inductor_py "$KC" window validate "$IND" --json --iterations 10 --replace-py "$POI..$POI=$PYR:gelu" --python "$PY" --dtype bf16
            cp "$STEP_OUT" "$WORK/inductor_py.json"
            res=$(py 'd["result"]' "$WORK/inductor_py.json" 2>/dev/null)
            sp=$(py '"span x%.3f, kernels x%.3f" % (d["speedup"], d["speedup_kernels"])' "$WORK/inductor_py.json" 2>/dev/null)
            verdict inductor_py "$(pass_if "$([ "$res" = PASS ] && echo 1)")" "op $POI by gelu: $(py 'd["line"]' "$WORK/inductor_py.json" 2>/dev/null || echo "rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ' | cut -c1-300)"); $(py 'd["strength"]' "$WORK/inductor_py.json" 2>/dev/null); speed-up $sp"
          fi
          if want inductor_py_bad; then
            # GELU's output: its parameter word 1 when that points into a region (in_ptr0, out_ptr0), else word 0 (in place).
            AR=$(python3 -c 'import json,os,struct,sys
cap, i = sys.argv[1], int(sys.argv[2])
regs = [(r["id"], int(r["base"], 16), r["size"]) for r in json.load(open(os.path.join(cap, "manifest.json")))["regions"]]
raw = open(os.path.join(cap, "window", "op-%06d.params" % i), "rb").read()
def region(at):
    v = struct.unpack_from("<Q", raw, at)[0] if at + 8 <= len(raw) else 0
    return next((rid for rid, b, s in regs if b <= v < b + s), None)
print(region(8) if region(8) is not None else region(0))' "$IND/capture" "$POI" 2>/dev/null)
            run inductor_py_bad "$KC" window validate "$IND" --json --iterations 3 --replace-py "$POI..$POI=$PYR:gelu_bad" --python "$PY" --dtype bf16
            cp "$STEP_OUT" "$WORK/inductor_py_bad.json"
            res=$(py 'd["result"]' "$WORK/inductor_py_bad.json" 2>/dev/null)
            failing=$(py '",".join(str(r["id"]) for r in d["verdict"]["regions"] if not r["pass"])' "$WORK/inductor_py_bad.json" 2>/dev/null)
            writers=$(py '"; ".join("region %d: %s" % (w["region"], w["name"]) for w in d["last_writers"])' "$WORK/inductor_py_bad.json" 2>/dev/null)
            verdict inductor_py_bad "$(pass_if "$([ "$res" = FAIL ] && [ -n "$AR" ] && [[ ",$failing," == *",$AR,"* ]] && echo 1)")" \
              "op $POI by gelu_bad: ${res:-rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ' | cut -c1-200)} (failing regions $failing; GELU writes region ${AR:-?}; last writers: $writers); $(py 'd["line"]' "$WORK/inductor_py_bad.json" 2>/dev/null | cut -c1-300)"
          fi
        fi
      else
        verdict inductor FAIL "extract rc $RC: $(grep -v '^kerncap: note' "$STEP_ERR" | tail -3 | tr '\n' ' ' | cut -c1-400)"
      fi
    fi
    if [ "$IWARM" = 0 ] && want inductor_range; then
      IR=$WORK/inductor_range
      if run inductor_range_extract "${IENV[@]}" "$KC" window extract --range 'inductor_step@1' --json -o "$IR" -- "$PY" "$IAPP" run 6; then
        sed -n '/^{/,$p' "$STEP_OUT" >"$WORK/inductor_range.extract.json"
        rops=$(ops_of "$WORK/inductor_range.extract.json")
        foreign=$(py 'd["foreign_ops"]' "$WORK/inductor_range.extract.json")
        run inductor_range_validate "$KC" window validate "$IR" --json --iterations 10
        cp "$STEP_OUT" "$WORK/inductor_range.validate.json"
        res=$(py 'd["result"]' "$WORK/inductor_range.validate.json" 2>/dev/null)
        if [ ! -f "$WORK/inductor.extract.json" ]; then
          same="(no named window to compare)"
        elif [ "$rops" = "$(ops_of "$WORK/inductor.extract.json")" ]; then
          same="the named window's ops"
        else
          same="NOT the named window's ops"
        fi
        verdict inductor_range "$(pass_if "$([ "$res" = PASS ] && [ "$foreign" = 0 ] && [[ "$same" != NOT* ]] && echo 1)")" "ops $rops: $same; foreign $foreign; $(py 'd["line"]' "$WORK/inductor_range.validate.json" 2>/dev/null); $(py 'd["strength"]' "$WORK/inductor_range.validate.json" 2>/dev/null)"
      else
        verdict inductor_range FAIL "extract rc $RC: $(grep -v '^kerncap: note' "$STEP_ERR" | tail -3 | tr '\n' ' ' | cut -c1-400)"
      fi
    fi
  else
    verdict inductor SKIP "no torch with CUDA in $PY"
  fi
fi

summary -s
[ "$failed" = 0 ]

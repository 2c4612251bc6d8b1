#!/usr/bin/env bash
# GPU suite for multi-GPU and multi-rank applications (docs/capture.md "Multi-process jobs",
# docs/replay.md "Choosing the GPU"). Cases, each one table row:
#   tp-nccl       torchrun, 2 ranks, NCCL, one GPU each: a tensor-parallel MLP; GELU captured
#                 in rank 1 (--rank 1): the capture says device 1; the job ends (rank 1 stops with
#                 status 75, torchrun ends rank 0); validate PASS on device 1 and on device 0,
#                 replay on device 0
#   tp-gemm       the same job, the column-parallel GEMM (x @ W1_r, a cuBLAS kernel: its name
#                 matched by --regex) captured in rank 1: validate PASS on device 1
#   tp-continue   the same job, rank 0 with --continue: the job finishes normally
#   nccl          NCCL's own all-reduce kernel captured in rank 1: extract explains what its
#                 replay cannot mean, validate refuses it (exit 2)
#   device-one    a program that uses device 1 only, --device 1: the capture says device 1;
#                 validate PASS on the default device and with --device 1
#   device-pick   the same kernel on device 0 then device 1, --device 1: the second launch
#   peer          peer_sum on device 0 reads a buffer of device 1 (cudaDeviceEnablePeerAccess):
#                 the region is tagged device 1; validate PASS on device 0 and on device 1
#   tp-gloo       torchrun, 2 ranks, gloo, both on GPU 0 (the single-GPU fallback): --rank 1
#   start-order   two plain processes without launcher variables: --rank 1 is the second to
#                 initialise CUDA ("cuInit order")
#   arch-refused  a capture whose manifest says another architecture: validate refuses it
#                 before any GPU work (exit 2)
# With one GPU the two-GPU cases print SKIPPED and the others run. Prints one row per case
# and "N passed, N failed, N skipped". Exit 0 all passed (or skipped), 1 some failed, 77 no GPU.
#
#   tests/gpu/multigpu_e2e.sh BUILD_DIR
#
# Environment: OUT (work files under it), KERNCAP_GPU_CASES (names to run), TORCH_PY (python
# with CUDA torch, default python3), KERNCAP_GPU_TIMEOUT (per command, default 300 s).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/multigpu_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${TORCH_PY:-python3}
GPUS=$(nvidia-smi -L | grep -c '^GPU')
[ -x "$KC" ] || { echo "missing $KC"; exit 1; }
gpu_work_dir multigpu
LOG=$WORK/log.txt LOG_TAIL=8  # run (lib.sh): each command and the last 8 lines of its output there
ERROR_RE='error|fail|refus|wrong'  # first_error
echo "multi-GPU suite: $GPUS GPU(s), work in $WORK"

APP=$WORK/devices
if ! "$NVCC" -O2 -o "$APP" "$HERE/multigpu/devices.cu" >"$WORK/nvcc.log" 2>&1; then
  echo "cannot build the test program:"; cat "$WORK/nvcc.log"; exit 1
fi
TORCHRUN=("$PY" -m torch.distributed.run --standalone --nproc-per-node 2)
TP=$HERE/tp_mlp.py
GELU=GeluCUDAKernelImpl  # PyTorch's GELU kernel: its lambdas carry this name

D=$WORK
# manifest EXPR: a Python expression over the case's capture $D/cap (manifest_get: m is its manifest).
manifest() { manifest_get "$D/cap" "$1"; }
# begin NAME GPUS_NEEDED: false (and a SKIPPED row) when the case is not run.
begin() {
  want "$1" || return 1
  D=$WORK/$1
  mkdir -p "$D"
  if [ "$GPUS" -lt "$2" ]; then
    row "$1 | SKIPPED (needs $2 GPUs, this machine has $GPUS)"
    echo "SKIPPED $1"
    tally SKIP
    return 1
  fi
  echo "running $1"
  return 0
}
# case_done NAME PROBLEMS DETAILS: the case's verdict (pass_unless), its row "NAME | VERDICT |
# DETAILS" and a line "PASS NAME" or "FAIL NAME: PROBLEMS".
VERDICT_STYLE=rows  # verdict: the row into $ROWS
case_done() {
  verdict "$1" "$(pass_unless "$2")" "$3"
  if [ -z "$2" ]; then echo "PASS $1"; else echo "FAIL $1: $2"; fi
}
# validate_on STEP DEVICE: "" when validate PASSes on that device, else the problem.
validate_on() {
  local flags=()
  [ -n "$2" ] && flags=(--device "$2")
  if run "$1" "$KC" validate "$D/cap" "${flags[@]}" && result_of "$1" | grep -q PASS; then
    if [ -n "$2" ] && ! grep -q "device $2 (" "$D/$1.out"; then echo "$1 did not say device $2; "; fi
    return
  fi
  echo "$1: $(result_of "$1") $(first_error "$1"); "
}

# --- tp-nccl ------------------------------------------------------------------------------
if begin tp-nccl 2; then
  p=""
  start=$(date +%s)
  if run extract "$KC" extract "$GELU" --rank 1 -o "$D/cap" --json -- "${TORCHRUN[@]}" "$TP" --backend nccl; then
    took=$(( $(date +%s) - start ))
    [ "$(manifest 'm["device"]["ordinal"]')" = 1 ] || p+="captured on device $(manifest 'm["device"]["ordinal"]'), not 1; "
    [ "$(manifest 'm["config"]["rank"]')" = 1 ] || p+="manifest config.rank is not 1; "
    [ -n "$(manifest 'm["device"].get("uuid","")')" ] || p+="no device uuid; "
    grep -q '"source": "RANK"' "$D/extract.out" || p+="extract --json names no RANK source; "
    [ "$took" -lt 120 ] || p+="the job took ${took}s to end after the capture; "
    p+=$(validate_on validate1 1)
    p+=$(validate_on validate0 0)
    run replay0 "$KC" replay "$D/cap" --device 0 || p+="replay --device 0: $(first_error replay0); "
    details="extract ${took}s; $(grep -h -m1 'Result' "$D/validate0.out" | cut -c1-60)"
  else
    p+="extract: $(first_error extract)"
    details=""
  fi
  case_done tp-nccl "$p" "$details"
fi

# --- tp-gemm ------------------------------------------------------------------------------
# cuBLAS picks the GEMM kernel (nvjet, sm90_xmma, cutlass): match any of those names.
if begin tp-gemm 2; then
  p=""
  if run extract "$KC" extract 'nvjet|gemm|xmma|cutlass' --regex --rank 1 -o "$D/cap" -- "${TORCHRUN[@]}" "$TP" --backend nccl; then
    [ "$(manifest 'm["device"]["ordinal"]')" = 1 ] || p+="captured on device $(manifest 'm["device"]["ordinal"]'), not 1; "
    p+=$(validate_on validate1 1)
    details="$(manifest 'm["kernel"]["demangled"][:40]' 2>/dev/null); $(grep -h -m1 'Result' "$D/validate1.out" | cut -c1-60)"
  else
    p+="extract: $(first_error extract)"
    details=""
  fi
  case_done tp-gemm "$p" "$details"
fi

# --- tp-continue --------------------------------------------------------------------------
if begin tp-continue 2; then
  p=""
  if run extract "$KC" extract "$GELU" --rank 0 --continue -o "$D/cap" -- "${TORCHRUN[@]}" "$TP" --backend nccl; then
    grep -q "exited with code 0" "$D/extract.out" || p+="the job did not finish normally: $(grep -h -m1 'application' "$D/extract.out"); "
    [ "$(manifest 'm["device"]["ordinal"]')" = 0 ] || p+="rank 0 captured on device $(manifest 'm["device"]["ordinal"]'); "
  else
    p+="extract: $(first_error extract)"
  fi
  case_done tp-continue "$p" "$(grep -h -m1 'application' "$D/extract.out" 2>/dev/null | cut -c1-60)"
fi

# --- nccl ---------------------------------------------------------------------------------
if begin nccl 2; then
  p=""
  if run extract "$KC" extract ncclDevKernel --rank 1 -o "$D/cap" -- "${TORCHRUN[@]}" "$TP" --backend nccl; then
    grep -q "one rank's half of a collective" "$D/extract.err" || p+="extract gave no NCCL explanation; "
    run validate "$KC" validate "$D/cap"
    rc=$?
    [ $rc -eq 2 ] || p+="validate exit $rc, expected 2 (refused); "
    grep -q "does not replay" "$D/validate.err" || p+="validate did not say why; "
  else
    # An NCCL build whose kernels have other names is no kerncap failure: say so.
    p+="extract: $(first_error extract)"
  fi
  case_done nccl "$p" "$(manifest 'm["kernel"]["demangled"][:50]' 2>/dev/null)"
fi

# --- device-one ---------------------------------------------------------------------------
if begin device-one 2; then
  p=""
  if run extract "$KC" extract scale --device 1 -o "$D/cap" -- "$APP" one; then
    [ "$(manifest 'm["device"]["ordinal"]')" = 1 ] || p+="captured on device $(manifest 'm["device"]["ordinal"]'); "
    p+=$(validate_on validate "")
    p+=$(validate_on validate1 1)
  else
    p+="extract: $(first_error extract)"
  fi
  case_done device-one "$p" "$(grep -h -m1 '^  device' "$D/validate.out" 2>/dev/null | cut -c1-70)"
fi

# --- device-pick --------------------------------------------------------------------------
if begin device-pick 2; then
  p=""
  if run extract "$KC" extract scale --device 1 -o "$D/cap" -- "$APP" both; then
    [ "$(manifest 'm["device"]["ordinal"]')" = 1 ] || p+="captured on device $(manifest 'm["device"]["ordinal"]'); "
    [ "$(manifest 'm["kernel"]["launch_index"]')" = 1 ] || p+="launch_index $(manifest 'm["kernel"]["launch_index"]'), not 1; "
    p+=$(validate_on validate 1)
  else
    p+="extract: $(first_error extract)"
  fi
  case_done device-pick "$p" ""
fi

# --- peer ---------------------------------------------------------------------------------
if begin peer 2; then
  p=""
  timeout "$TIMEOUT" "$APP" peer >"$D/plain.out" 2>&1
  rc=$?
  if [ $rc -eq 3 ]; then
    row "peer | SKIPPED ($(head -1 "$D/plain.out"))"
    echo "SKIPPED peer"
    tally SKIP
  else
    if run extract "$KC" extract peer_sum -o "$D/cap" -- "$APP" peer; then
      peers=$(manifest 'sum(1 for r in m["regions"] if r.get("device", -1) == 1)')
      [ "$peers" -ge 1 ] || p+="no region tagged device 1; "
      grep -q "point into them" "$D/extract.err" || p+="the capture log did not name the peer parameter; "
      p+=$(validate_on validate0 0)
      p+=$(validate_on validate1 1)
      grep -q "lived on other GPU" "$D/validate0.out" || p+="validate gave no peer note; "
    else
      p+="extract: $(first_error extract)"
    fi
    case_done peer "$p" "${peers:-0} peer region(s)"
  fi
fi

# --- tp-gloo (one GPU is enough) ----------------------------------------------------------
if begin tp-gloo 1; then
  p=""
  if CUDA_VISIBLE_DEVICES=0 run extract "$KC" extract "$GELU" --rank 1 -o "$D/cap" -- "${TORCHRUN[@]}" "$TP" --backend gloo; then
    [ "$(manifest 'm["config"]["rank"]')" = 1 ] || p+="manifest config.rank is not 1; "
    p+=$(validate_on validate "")
  else
    p+="extract: $(first_error extract)"
  fi
  case_done tp-gloo "$p" ""
fi

# --- start-order (one GPU is enough) ------------------------------------------------------
if begin start-order 1; then
  p=""
  # The second process starts after the first has initialised CUDA.
  if run extract "$KC" extract scale --rank 1 --json -o "$D/cap" --cmd "env -u RANK -u LOCAL_RANK -u OMPI_COMM_WORLD_RANK -u PMI_RANK -u SLURM_PROCID sh -c '$APP zero & sleep 3; $APP zero; wait'"; then
    grep -q '"source": "cuInit order"' "$D/extract.out" || p+="rank source is not the cuInit order; "
    first=$(cat "$D/cap/.kerncap/rank-slot-0" 2>/dev/null)
    [ "$(manifest 'm["process"]["pid"]')" != "$first" ] || p+="the first process captured; "
  else
    p+="extract: $(first_error extract)"
  fi
  case_done start-order "$p" ""
fi

# --- arch-refused -------------------------------------------------------------------------
if begin arch-refused 1; then
  p=""
  if run extract "$KC" extract scale -o "$D/cap" -- "$APP" zero; then
    "$PY" - "$D/cap/capture/manifest.json" <<'PYEOF'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
m["device"]["cc"] = [1, 0]
json.dump(m, open(p, "w"))
PYEOF
    run validate "$KC" validate "$D/cap"
    rc=$?
    [ $rc -eq 2 ] || p+="validate exit $rc, expected 2; "
    grep -q "another architecture" "$D/validate.err" || p+="no architecture message: $(first_error validate); "
  else
    p+="extract: $(first_error extract)"
  fi
  case_done arch-refused "$p" ""
fi

table "case | result | details"
summary -s

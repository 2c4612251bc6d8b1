#!/usr/bin/env bash
# GPU suite for the one judge (src/replay/judge.hpp): every entry point gives the same verdict
# document for the same capture and candidate. Captures (extracted and footprinted here, so
# every verdict is strong), each with an OUT/kerncap.toml that sets fp32 = { atol = 1e-3,
# rtol = 1e-3 } and no_nan = true:
#   vadd          examples/vector_add (vectorAdd): candidates built from its source: correct,
#                 wrong (+1), noop, nan (one NaN: a difference and an invariant violation), ulp
#                 (x1.0001: outside fp32's default tolerance, inside the kerncap.toml's), fault
#                 (a store to address 8), then correct again
#   atomic        examples/atomic_norm (sumSquares, float atomics: nondeterministic): the captured
#                 image, a recompiled one, noop, fault, the captured image again
#   torch_mul     ATen's MulFunctor kernel (torch_loop.py mul)          } the captured image, noop
#   torch_gemm    cuBLAS's GEMM behind matmul(out=) (torch_loop.py      } (PTX with its name and
#                 gemm_out)                                             } parameters), fault,
#   triton_add    a @triton.jit kernel (triton_apps/vector_add.py)      } captured again;
#                 the torch kernels also hand-written replacements (closed_candidates.py): correct,
#                 wrong (+1), one NaN, a change inside the kerncap.toml's tolerance (fp16 =
#                 { atol = 0.25, rtol = 1e-2 } for the GEMM's output), typed by OUT/compare.json;
#                 triton_add also edits of its own source compiled by Triton through its
#                 reproducer: wrong (+1), one NaN, x1.0001 (inside the kerncap.toml's tolerance)
# judge_check.py judges each candidate through `kerncap validate --server off`, a `kerncap
# serve`, `kerncap-replay --validate`, Python's Session.evaluate and evaluate_all, and the C
# ABI, and checks that the normalised documents are identical, that each candidate gets its
# expected verdict, and that after the fault the sessions judge the next candidate normally.
# triton_add also runs its reproducer.py (kc_evaluate_launch: the Triton launch judged by the
# same judge). Prints one table row per candidate and "N passed, N failed".
# Exit 0 all passed, 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/judge_e2e.sh BUILD_DIR
#
# Environment: OUT (work files under it), KERNCAP_GPU_TIMEOUT (per command, default 300 s),
# KERNCAP_GPU_CASES="vadd atomic ..." picks captures, TORCH_PY (the Python with torch/triton).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/judge_e2e.sh BUILD_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_required
BUILD=$(cd "$BUILD" && pwd) || exit 1
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
KC=$BUILD/bin/kerncap
REPLAY=$BUILD/bin/kerncap-replay
EX=$BUILD/examples
PY=${TORCH_PY:-python3}
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-300}
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
PTXAS=$(dirname "$NVCC")/ptxas
for f in "$KC" "$REPLAY" "$EX/vector_add" "$EX/atomic_norm"; do
  [ -e "$f" ] || { echo "missing $f (build first: cmake --build $BUILD)"; exit 1; }
done
unset KERNCAP_SERVE
# The Python entry points use this build's engine and package (not an installed older one).
export KERNCAP_REPLAY_LIB=$BUILD/lib/libkerncap_replay.so KERNCAP_BIN=$KC
export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"
gpu_work_dir judge
ROWS=$WORK/rows.md
printf '| capture | candidate | expected | entry points agreeing | verdict | document (validate) |\n|---|---|---|---|---|---|\n' >"$ROWS"
passed=0 failed=0
SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
echo "judge suite: work in $WORK (sm_$SM)"

note_row() { echo "| $1 | - | - | - | FAIL | $2 |" >>"$ROWS"; failed=$((failed + 1)); echo "FAIL $1: $2"; }

# capture NAME PATTERN [extract flags] -- APP ARGS: extract, footprint, kerncap.toml; sets D.
capture() {
  local name=$1 pattern=$2
  shift 2
  D=$WORK/$name
  if ! timeout "$TIMEOUT" "$KC" extract "$pattern" -o "$D" "$@" >"$WORK/$name.extract.log" 2>&1; then
    note_row "$name" "extract failed: $(grep -m1 -i error "$WORK/$name.extract.log")"
    return 1
  fi
  if ! timeout "$TIMEOUT" "$KC" footprint "$D" >"$WORK/$name.footprint.log" 2>&1; then
    note_row "$name" "footprint failed: $(grep -m1 -i error "$WORK/$name.footprint.log")"
    return 1
  fi
  printf '[tolerances]\nfp32 = { atol = 1e-3, rtol = 1e-3 }\nfp16 = { atol = 0.25, rtol = 1e-2 }\n[invariants]\nno_nan = true\n' \
    >"$D/kerncap.toml"
}

# generic NAME: the captured image, a no-op and a faulting PTX variant (any kernel: only its
# name and parameter layout matter); sets GEN to their --candidate arguments.
generic() {
  local d=$WORK/$1 img
  img=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["image"]["file"])' "$d/capture/manifest.json")
  "$KC" info "$d" --json >"$d.info.json" || return 1
  "$PY" "$HERE/noop_variant.py" <"$d.info.json" >"$d.noop.ptx" && "$PTXAS" -arch="sm_$SM" "$d.noop.ptx" -o "$d.noop.cubin" || return 1
  "$PY" "$HERE/noop_variant.py" --fault <"$d.info.json" >"$d.fault.ptx" && "$PTXAS" -arch="sm_$SM" "$d.fault.ptx" -o "$d.fault.cubin" || return 1
  GEN=(--candidate "captured=$d/capture/$img:PASS" --candidate "noop=$d.noop.cubin:FAIL"
       --candidate "fault=$d.fault.cubin:FAIL" --candidate "captured_again=$d/capture/$img:PASS")
}

# judge NAME CANDIDATE-ARGS...: judge_check.py; counts its rows.
judge() {
  local name=$1 before rc
  shift
  before=$(wc -l <"$ROWS")
  timeout $((TIMEOUT * 6)) "$PY" "$HERE/judge_check.py" --kerncap "$KC" --replay "$REPLAY" \
    --out "$WORK/$name" --label "$name" --rows "$ROWS" --json "$WORK/$name.judge.json" --timeout "$TIMEOUT" "$@" \
    >"$WORK/$name.judge.log" 2>&1
  rc=$?
  cat "$WORK/$name.judge.log"
  # This run's rows; their fifth column is the verdict (the third says what was expected).
  local ok bad
  ok=$(tail -n +"$((before + 1))" "$ROWS" | awk -F'|' '$6 ~ /^ PASS /' | wc -l)
  bad=$(tail -n +"$((before + 1))" "$ROWS" | awk -F'|' '$6 !~ /^ PASS /' | wc -l)
  passed=$((passed + ok))
  failed=$((failed + bad))
  if [ "$rc" != 0 ] && [ "$bad" = 0 ]; then note_row "$name" "judge_check.py exited $rc (see $name.judge.log)"; fi
}

if want vadd && capture vadd vectorAdd -- "$EX/vector_add" 1000000; then
  ok=1
  for v in "" WRONG NOOP NAN ULP FAULT; do
    "$NVCC" -cubin -arch="sm_$SM" -I"$REPO/examples" ${v:+-DKC_VARIANT_$v} "$REPO/examples/vector_add.cu" \
      -o "$WORK/vadd.${v:-CORRECT}.cubin" || ok=0
  done
  if [ "$ok" = 1 ]; then
    V=$WORK/vadd
    judge vadd --candidate "correct=$V.CORRECT.cubin:PASS" --candidate "wrong=$V.WRONG.cubin:FAIL" \
      --candidate "noop=$V.NOOP.cubin:FAIL" --candidate "nan=$V.NAN.cubin:FAIL" --candidate "ulp=$V.ULP.cubin:PASS" \
      --candidate "fault=$V.FAULT.cubin:FAIL" --candidate "correct_again=$V.CORRECT.cubin:PASS"
  else
    note_row vadd "nvcc could not build the candidates"
  fi
fi

if want atomic && capture atomic sumSquares --dispatch 2 -- "$EX/atomic_norm"; then
  if generic atomic && "$NVCC" -cubin -arch="sm_$SM" -I"$REPO/examples" "$REPO/examples/atomic_norm.cu" \
       -o "$WORK/atomic.recompiled.cubin"; then
    judge atomic --nondeterministic "${GEN[@]:0:2}" --candidate "recompiled=$WORK/atomic.recompiled.cubin:PASS" "${GEN[@]:2}"
  else
    note_row atomic "the candidates could not be built"
  fi
fi

if "$PY" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  # torch_case NAME MODE PATTERN [extract flags]
  # Closed-source kernels: besides the generic candidates, hand-written replacements of the
  # operation at the operands' addresses (closed_candidates.py): correct, wrong, one NaN and a
  # change inside the kerncap.toml's tolerance. The output span is typed by OUT/compare.json
  # (the kernels' signatures carry no element types), which every entry point reads.
  torch_case() {
    local name=$1 mode=$2 c cands=()
    shift 2
    want "$name" || return 0
    KC_LOOP_TENSORS=$WORK/$name.tensors.json capture "$name" "$@" --dispatch 3 -- "$PY" "$HERE/torch_loop.py" "$mode" 5 ||
      return 0
    generic "$name" || { note_row "$name" "the generic candidates could not be built"; return 0; }
    if ! "$PY" "$HERE/closed_candidates.py" "$WORK/$name.info.json" "$WORK/$name.tensors.json" "$WORK/$name.closed" "$SM" \
         --nvcc "$NVCC" --ptxas "$PTXAS" >"$WORK/$name.closed.list" 2>"$WORK/$name.closed.log"; then
      note_row "$name" "closed_candidates.py failed: $(tail -1 "$WORK/$name.closed.log")"
      return 0
    fi
    cp "$WORK/$name.closed/compare.json" "$WORK/$name/compare.json"
    while read -r c; do cands+=(--candidate "$c"); done <"$WORK/$name.closed.list"
    judge "$name" "${GEN[@]:0:2}" "${cands[@]}" "${GEN[@]:2}"
  }
  torch_case torch_mul mul MulFunctor
  torch_case torch_gemm gemm_out 'nvjet|gemm|xmma|cutlass' --regex
  # Triton: the compile shim records what the reproducer needs (as triton_e2e.sh extracts).
  if want triton_add &&
     PYTHONPATH="$REPO/python/kerncap/triton_shim:$PYTHONPATH" KERNCAP_TRITON_OUT="$WORK/triton_add/triton" \
       capture triton_add add_kernel --dispatch 1 -- "$PY" "$HERE/triton_apps/vector_add.py"; then
    if generic triton_add; then
      # Edits of the kernel's own source, compiled by Triton through the reproducer (it writes
      # OUT/candidate.cubin before judging): wrong (+1), one NaN, and a relative change of 1e-4
      # (outside fp32's default tolerance, inside the kerncap.toml's 1e-3).
      T=$WORK/triton_add
      EDITS=()
      if [ -f "$T/kernel_variant.py" ] && cp "$T/kernel_variant.py" "$T/kernel_variant.py.orig"; then
        for e in "wrong|x + y + 1.0|FAIL" "nan|tl.where(offsets == 0, float('nan'), x + y)|FAIL" "ulp|(x + y) * 1.0001|PASS"; do
          IFS='|' read -r ename expr want <<<"$e"
          sed "s/tl.store(out_ptr + offsets, x + y, mask=mask)/tl.store(out_ptr + offsets, $expr, mask=mask)/" \
            "$T/kernel_variant.py.orig" >"$T/kernel_variant.py"
          rm -f "$T/candidate.cubin"
          timeout "$TIMEOUT" "$PY" "$T/reproducer.py" --json >"$WORK/triton_add.$ename.repro.json" 2>&1
          if grep -qF "$expr" "$T/kernel_variant.py" && [ -f "$T/candidate.cubin" ]; then
            cp "$T/candidate.cubin" "$WORK/triton_add.$ename.cubin"
            EDITS+=(--candidate "$ename=$WORK/triton_add.$ename.cubin:$want")
          else
            note_row triton_add "the $ename edit did not build a candidate (see triton_add.$ename.repro.json)"
          fi
        done
        cp "$T/kernel_variant.py.orig" "$T/kernel_variant.py"
      fi
      judge triton_add "${GEN[@]:0:2}" "${EDITS[@]}" "${GEN[@]:2}"
      # The seventh entry point: the Triton reproducer (kc_evaluate_launch) on the unedited kernel.
      if [ -f "$WORK/triton_add/reproducer.py" ]; then
        timeout "$TIMEOUT" "$PY" "$WORK/triton_add/reproducer.py" --json >"$WORK/triton_add.repro.json" \
          2>"$WORK/triton_add.repro.err"
        rc=$?
        line=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("result"), "|", d.get("strength"), "|", d.get("line"))' \
          "$WORK/triton_add.repro.json" 2>/dev/null)
        if [ "$rc" = 0 ] && [[ "$line" == PASS* ]]; then
          echo "| triton_add | reproducer.py (unedited kernel_variant.py) | PASS | kc_evaluate_launch | PASS | ${line//|/;} |" >>"$ROWS"
          passed=$((passed + 1))
        else
          echo "| triton_add | reproducer.py | PASS | kc_evaluate_launch | FAIL | rc $rc: ${line//|/;} $(tail -2 "$WORK/triton_add.repro.err" | tr '\n|' ' ;') |" >>"$ROWS"
          failed=$((failed + 1))
        fi
      else
        note_row triton_add "extract wrote no reproducer.py"
      fi
    else
      note_row triton_add "the candidates could not be built"
    fi
  fi
else
  echo "| torch/triton | - | - | - | SKIPPED | no torch with CUDA in $PY |" >>"$ROWS"
fi

echo
cat "$ROWS"
[ -n "${OUT:-}" ] && cp "$ROWS" "$OUT/judge-rows.md"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

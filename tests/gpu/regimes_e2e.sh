#!/usr/bin/env bash
# GPU suite for workload regimes (`extract KERNEL --regimes`, validate over a regime set):
#   example   examples/regimes: scaleShift at n = 4M (10 launches), 1000003 (5) and 4096 (40):
#             3 regimes captured with launch counts and shares; the captured image PASSes on all
#             (strong); the recompiled kernel PASSes; KC_VARIANT_TAIL FAILs naming only the
#             regime whose n is not a multiple of the block; KC_VARIANT_BIGFAST PASSes with a
#             speed-up above 1 on the large regimes and below 1 on the small one, and its
#             weighted speed-up agrees within 5 % with the kernel's total time measured by
#             `kerncap profile` of the application rebuilt with that variant (rebuild-and-rerun)
#   capped    examples/regimes' gridStride: one grid (capped) at n = 4M (4 launches) and 1M (6),
#             on two output buffers: 2 regimes told apart by n alone (param 2), both captured with
#             the profiled run's n, and the captured image PASSes on both (strong)
#   torch     tests/gpu/regimes_torch.py (prefill then decode): the layer norm kernel's regimes,
#             at least 2, each captured image PASSes
# Exit 0 all passed, 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/regimes_e2e.sh BUILD_DIR
#
# Environment: OUT (work files under it), KERNCAP_GPU_TIMEOUT, KERNCAP_GPU_CASES="example capped torch",
# TORCH_PY (the Python with torch).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/regimes_e2e.sh BUILD_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${TORCH_PY:-python3}
for f in "$KC" "$EX/regimes" "$EX/regimes_bigfast" "$EX/regimes.cubin" "$EX/regimes_tail.cubin" "$EX/regimes_bigfast.cubin"; do
  [ -e "$f" ] || { echo "missing $f (build first: cmake --build $BUILD)"; exit 1; }
done
unset KERNCAP_SERVE
gpu_work_dir regimes
VERDICT_STYLE=line
echo "regimes suite: work in $WORK"

# py EXPR FILE...: EXPR over d (the JSON of the first FILE) and e (the second, if any).
py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); e=json.load(open(sys.argv[2])) if len(sys.argv)>2 else None; print($1)" "${@:2}"; }

if want example; then
  S=$WORK/example
  if run extract "$KC" extract scaleShift --regimes --json -o "$S" -- "$EX/regimes"; then
    cp "$STEP_OUT" "$WORK/example.index.json"
    n=$(py 'len([r for r in d["regimes"] if r["captured"]])' "$S/regimes.json")
    shares=$(py '" ".join("%s:%d:%.2f" % (r["grid"][0], r["launches"], r["share"]) for r in d["regimes"])' "$S/regimes.json")
    launches=$(py 'sorted(r["launches"] for r in d["regimes"]) == [5, 10, 40] and d["launches"] == 55' "$S/regimes.json")
    verdict extract "$(pass_if "$([ "$n" = 3 ] && [ "$launches" = True ] && echo 1)")" "$n regimes captured (grid:launches:share $shares)"
    ODD=$(py '[r["dir"] for r in d["regimes"] if r["grid"][0] == (1000003 + 255) // 256][0]' "$S/regimes.json")

    # judge LABEL EXPECT [validate flags]: the set's document in $WORK/LABEL.json.
    judge() {
      local label=$1 expect=$2
      shift 2
      run "$label" "$KC" validate "$S" --json "$@"
      cp "$STEP_OUT" "$WORK/$label.json" 2>/dev/null
      local res line
      res=$(py 'd["result"]' "$WORK/$label.json" 2>/dev/null)
      line=$(py 'd["line"]' "$WORK/$label.json" 2>/dev/null)
      JUDGED=$res
      [ "$res" = "$expect" ]
      LAST_LINE=${line:-rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ')}
    }
    judge captured PASS
    strong=$(py 'all(r.get("strength") == "strong" for r in d["regimes"])' "$WORK/captured.json" 2>/dev/null)
    verdict captured_image "$(pass_if "$([ "$JUDGED" = PASS ] && [ "$strong" = True ] && echo 1)")" "$LAST_LINE (all strong: $strong)"
    judge recompiled PASS --cubin "$EX/regimes.cubin"
    verdict recompiled "$(pass_if "$([ "$JUDGED" = PASS ] && echo 1)")" "$LAST_LINE"
    judge tail FAIL --cubin "$EX/regimes_tail.cubin"
    named=$(py 'd["failed"]' "$WORK/tail.json" 2>/dev/null)
    verdict tail_bug "$(pass_if "$([ "$JUDGED" = FAIL ] && [ "$named" = "['$ODD']" ] && echo 1)")" "$LAST_LINE (failed: $named, expected ['$ODD'])"
    judge bigfast PASS --cubin "$EX/regimes_bigfast.cubin"
    per=$(py '" ".join("%s:%s" % (r["grid"][0], "%.3f" % r["speedup"] if r["speedup"] else "-") for r in d["regimes"])' "$WORK/bigfast.json" 2>/dev/null)
    shape_ok=$(py 'all((r["speedup"] > 1) == (r["grid"][0] * 256 >= (1 << 20)) for r in d["regimes"])' "$WORK/bigfast.json" 2>/dev/null)
    W=$(py '"%.4f" % d["weighted_speedup"]' "$WORK/bigfast.json" 2>/dev/null)
    verdict bigfast_per_regime "$(pass_if "$([ "$JUDGED" = PASS ] && [ "$shape_ok" = True ] && echo 1)")" "speed-ups grid:x $per; weighted x$W; $LAST_LINE"
    # The same variant inside the application: the kernel's total GPU time, captured build vs
    # variant build, from kerncap profile (median of 3 runs each).
    total() { run "prof_$2" "$KC" profile -o "$WORK/prof_$2.json" -- "$1" && py 'sum(k["total_ns"] for k in d["kernels"] if "scaleShift" in k["demangled"])' "$WORK/prof_$2.json"; }
    a=() b=()
    for i in 1 2 3; do a+=("$(total "$EX/regimes" a$i)"); b+=("$(total "$EX/regimes_bigfast" b$i)"); done
    A=$(printf '%s\n' "${a[@]}" | sort -n | sed -n 2p) B=$(printf '%s\n' "${b[@]}" | sort -n | sed -n 2p)
    INAPP=$(python3 -c "print('%.4f' % ($A / $B))" 2>/dev/null)
    agree=$(python3 -c "print(1 if abs($W / $INAPP - 1) <= 0.05 else 0)" 2>/dev/null)
    verdict weighted_vs_in_app "$(pass_if "$agree")" "weighted x$W vs in-app x$INAPP (kernel total ${A} ns -> ${B} ns, medians of 3 profiles)"
    judge min_speedup FAIL --cubin "$EX/regimes_bigfast.cubin" --min-speedup 100
    verdict min_speedup_weighted "$(pass_if "$([ "$JUDGED" = FAIL ] && echo 1)")" "$LAST_LINE"
    run table "$KC" validate "$S" --cubin "$EX/regimes_bigfast.cubin"
    cp "$STEP_OUT" "$WORK/bigfast.table.txt"
    cat "$STEP_OUT"
  else
    verdict extract FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ')"
  fi
fi

if want capped; then
  S=$WORK/capped
  if run capped_extract "$KC" extract gridStride --regimes -o "$S" -- "$EX/regimes"; then
    cp "$STEP_OUT" "$WORK/capped.table.txt"
    cat "$STEP_OUT"
    n=$(py 'len([r for r in d["regimes"] if r["captured"]])' "$S/regimes.json")
    grids=$(py 'len(set(tuple(r["grid"]) for r in d["regimes"]))' "$S/regimes.json")
    # n (param 2) keys the regimes and varies; the pointers (params 0 and 1) are not in them.
    sizes=$(py 'sorted((r["launches"], [p["value"] for p in r.get("params", []) if p["varies"]]) for r in d["regimes"]) == [(4, [4194304]), (6, [1048576])] and all(p["slot"] >= 2 for r in d["regimes"] for p in r["params"])' "$S/regimes.json")
    table=$(grep -c 'param 2 = ' "$STEP_OUT")
    verdict capped_extract "$(pass_if "$([ "$n" = 2 ] && [ "$grids" = 1 ] && [ "$sizes" = True ] && [ "$table" = 2 ] && echo 1)")" "$n regimes captured, $grids grid(s), launches and n as expected: $sizes, table rows naming n: $table"
    run capped_validate "$KC" validate "$S" --json
    cp "$STEP_OUT" "$WORK/capped.json"
    res=$(py 'd["result"]' "$WORK/capped.json" 2>/dev/null)
    strong=$(py 'all(r.get("strength") == "strong" for r in d["regimes"]) and len(d["regimes"]) == 2' "$WORK/capped.json" 2>/dev/null)
    verdict capped_captured "$(pass_if "$([ "$res" = PASS ] && [ "$strong" = True ] && echo 1)")" "$(py 'd["line"]' "$WORK/capped.json" 2>/dev/null) (2 regimes, all strong: $strong)"
  else
    verdict capped_extract FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ')"
  fi
fi

if want torch; then
  if torch_ok "$PY"; then
    S=$WORK/torch
    if run torch_extract "$KC" extract layer_norm --regimes --json -o "$S" -- "$PY" "$HERE/regimes_torch.py"; then
      n=$(py 'len([r for r in d["regimes"] if r["captured"]])' "$S/regimes.json")
      shares=$(py '" ".join("%s:%d:%.2f" % (r["grid"][0], r["launches"], r["share"]) for r in d["regimes"])' "$S/regimes.json")
      verdict torch_extract "$(pass_if "$([ "${n:-0}" -ge 2 ] && echo 1)")" "$n regimes of $(py 'd["kernel"]["demangled"][:60]' "$S/regimes.json") (grid:launches:share $shares)"
      run torch_validate "$KC" validate "$S" --json
      cp "$STEP_OUT" "$WORK/torch.json"
      res=$(py 'd["result"]' "$WORK/torch.json" 2>/dev/null)
      verdict torch_captured "$(pass_if "$([ "$res" = PASS ] && echo 1)")" "$(py 'd["line"]' "$WORK/torch.json" 2>/dev/null)"
    else
      verdict torch_extract FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ')"
    fi
  else
    verdict torch SKIP "no torch with CUDA in $PY"
  fi
fi

summary -s
[ "$failed" = 0 ]

#!/usr/bin/env bash
# GPU suite for workload regimes (`extract KERNEL --regimes`, validate over a regime set):
#   example   examples/regimes: scaleShift at n = 4M (10 launches), 1000003 (5) and 4096 (40):
#             3 regimes captured with launch counts and shares; the captured image PASSes on all
#             (strong); the recompiled kernel PASSes; KC_VARIANT_TAIL FAILs naming only the
#             regime whose n is not a multiple of the block; KC_VARIANT_BIGFAST PASSes with a
#             speed-up above 1 on the large regimes and below 1 on the small one, and its
#             weighted speed-up agrees within 5 % with the kernel's total time measured by
#             `kerncap profile` of the application rebuilt with that variant (rebuild-and-rerun)
#   evaluate  (within example) `kerncap evaluate` on the set with the three variants: the verdicts
#             and failing regimes validate gave, the weighted speed-up within 10 % of validate's
#             (llama_evaluate: the same for the Llama norm's set and its three variants);
#             evaluate_faults: a variant faulting on the small regime only and one hanging on the
#             odd one, between good ones: each reported once, FAIL naming only its regime, the
#             hang "timed out after 5 s", the good ones after them PASS
#   capped    examples/regimes' gridStride: one grid (capped) at n = 4M (4 launches) and 1M (6),
#             on two output buffers: 2 regimes told apart by n alone (param 2), both captured with
#             the profiled run's n, and the captured image PASSes on both (strong)
#   torch     tests/gpu/regimes_torch.py (prefill then decode): the layer norm kernel's regimes,
#             at least 2, each captured image PASSes
#   llama     tests/gpu/regimes_apps/llama_regimes.py: a Hugging Face Llama-architecture model,
#             prefill then decode steps, its RMSNorm our own kernel (regimes_apps/rms_norm.cu):
#             `extract --regimes --kernel rms_norm_kernel --top 5` takes the regimes of 6 kernels
#             in one pair of runs (norm, cuBLAS GEMMs, attention, elementwise); every captured
#             image PASSes on every regime; a tail-mask variant of the norm FAILs naming only the
#             decode regime (3 rows); a variant faster on prefill and slower on decode gives
#             per-regime speed-ups on both sides and a weighted speed-up that agrees within 5 %
#             with the kernel's GPU time in the application with that variant swapped in
#             (`kerncap run --swap`, medians of paired runs; the set's default timing, blend), and
#             the same with --speedup-cache auto;
#             norm, attention, rotary (rotate_half's negation) and GEMM kernels each with >= 2
#             regimes whose times sum to the kernel's; `kerncap report` of the norm's set, opened
#             in a headless browser when one is installed (python/tests/report_browser.py)
#   autotune  tests/gpu/regimes_apps/triton_autotune.py: a @triton.autotune kernel called under
#             three keys: 3 regimes (the autotuner's benchmark launches not counted), each PASSes
#   ggml      with KERNCAP_GGML_TESTS=path to ggml's test-backend-ops (built outside the repo):
#             the regimes of mul_mat_q over the MUL_MAT perf cases' batch sizes, each PASSes
# Exit 0 all passed, 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/regimes_e2e.sh BUILD_DIR
#
# Environment: OUT (work files under it), KERNCAP_GPU_TIMEOUT, KERNCAP_GPU_CASES="example capped torch llama autotune ggml",
# TORCH_PY (the Python with torch).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/regimes_e2e.sh BUILD_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${TORCH_PY:-python3}
for f in "$KC" "$EX/regimes" "$EX/regimes_bigfast" "$EX/regimes.cubin" "$EX/regimes_tail.cubin" "$EX/regimes_bigfast.cubin" \
         "$EX/regimes_fault_small.cubin" "$EX/regimes_hang_odd.cubin"; do
  [ -e "$f" ] || { echo "missing $f (build first: cmake --build $BUILD)"; exit 1; }
done
unset KERNCAP_SERVE
gpu_work_dir regimes
VERDICT_STYLE=line
echo "regimes suite: work in $WORK"

# py EXPR FILE...: EXPR over d (the JSON of the first FILE) and e (the second, if any).
py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); e=json.load(open(sys.argv[2])) if len(sys.argv)>2 else None; print($1)" "${@:2}"; }

# evaluate_like_validate CASE SET PREFIX LABEL=CUBIN...: `kerncap evaluate SET --images CUBIN...`
# (the regime set spread over the pool) must give each candidate the verdict and the failing
# regimes `kerncap validate SET --cubin CUBIN --json` gave (already in $WORK/PREFIX<LABEL>.json),
# and, where validate measured one, a weighted speed-up within 10 % of it (both timed).
evaluate_like_validate() {
  local name=$1 set=$2 prefix=$3 labels=() images=()
  shift 3
  for x in "$@"; do labels+=("${x%%=*}"); images+=("${x#*=}"); done
  if ! run "$name" "$KC" evaluate "$set" --images "${images[@]}" --time --time-limit 60 --stats "$WORK/$name.stats.json"; then
    verdict "$name" FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ' | cut -c1-300)"
    return
  fi
  cp "$STEP_OUT" "$WORK/$name.jsonl"
  local same
  same=$(python3 - "$WORK" "$name" "$prefix" "${labels[@]}" <<'PY' 2>&1
import json, sys
w, name, prefix, labels = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
recs = {r["index"]: r for r in map(json.loads, open(f"{w}/{name}.jsonl"))}
bad, said = [], []
for i, label in enumerate(labels):
    v, r = json.load(open(f"{w}/{prefix}{label}.json")), recs.get(i)
    if r is None:
        bad.append(f"{label}: no record")
        continue
    e = r["verdict"]
    said.append(f"{label} {e['result']} failed {e['failed']}")
    if (e["result"], e["failed"], e["format"]) != (v["result"], v["failed"], v["format"]):
        bad.append(f"{label}: evaluate {e['result']} {e['failed']} vs validate {v['result']} {v['failed']}")
    if v.get("weighted_speedup") and e.get("weighted_speedup"):
        ratio = e["weighted_speedup"] / v["weighted_speedup"]
        said.append(f"weighted x{e['weighted_speedup']:.3f} vs validate's x{v['weighted_speedup']:.3f}")
        if abs(ratio - 1) > 0.10:
            bad.append(f"{label}: weighted speed-ups {100 * (ratio - 1):+.1f} % apart")
print("; ".join(said))
print("; ".join(bad) if bad else "same")
PY
)
  verdict "$name" "$(pass_if "$(tail -1 <<<"$same" | grep -qx same && echo 1)")" \
    "$(tr '\n' ' ' <<<"$same" | cut -c1-400)| $(grep -m1 'candidates x' "$STEP_ERR" | cut -c1-200)"
}

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
    # The same candidates through the evaluation pool (kerncap evaluate on the set: every regime
    # spread over the GPUs, the set's document from kc_regime_verdict).
    want evaluate && evaluate_like_validate evaluate "$S" "" recompiled="$EX/regimes.cubin" \
      tail="$EX/regimes_tail.cubin" bigfast="$EX/regimes_bigfast.cubin"
    # Faults and hangs on one regime of the set: a store to an illegal address at n = 4096 only
    # and a launch that never ends at n = 1000003, between two good candidates. Each candidate
    # reported once; the bad ones FAIL naming only their regime (the fault's verdict, or
    # "timed out after 5 s"); the good ones after them still PASS (the pool's workers replaced).
    if want evaluate_faults; then
      SMALL=$(py '[r["dir"] for r in d["regimes"] if r["grid"][0] == 16][0]' "$S/regimes.json")
      if run evaluate_faults "$KC" evaluate "$S" --images "$EX/regimes.cubin" "$EX/regimes_fault_small.cubin" \
          "$EX/regimes_hang_odd.cubin" "$EX/regimes_bigfast.cubin" --time --time-limit 5; then
        cp "$STEP_OUT" "$WORK/evaluate_faults.jsonl"
        got=$(python3 - "$WORK/evaluate_faults.jsonl" "$SMALL" "$ODD" <<'PY' 2>&1
import json, sys
recs = [json.loads(x) for x in open(sys.argv[1])]
small, odd = sys.argv[2], sys.argv[3]
by = {r["index"]: r for r in recs}
def regime_line(r, d):
    return next(x["line"] for x in r["verdict"]["regimes"] if x["dir"] == d)
ok = sorted(r["index"] for r in recs) == [0, 1, 2, 3]
ok = ok and by[0]["result"] == "PASS" and by[3]["result"] == "PASS"
ok = ok and by[1]["verdict"]["failed"] == [small] and by[2]["verdict"]["failed"] == [odd]
ok = ok and "timed out after 5 s" in regime_line(by[2], odd)
print(f"{len(recs)} records; fault: {by[1]['verdict']['failed']} {regime_line(by[1], small)[:120]}; "
      f"hang: {by[2]['verdict']['failed']} {regime_line(by[2], odd)[:80]}; after them {by[3]['result']}")
print("ok" if ok else "wrong")
PY
)
        verdict evaluate_faults "$(pass_if "$(tail -1 <<<"$got" | grep -qx ok && echo 1)")" "$(head -1 <<<"$got" | cut -c1-400) | $(grep -m1 'candidates x' "$STEP_ERR" | cut -c1-200)"
      else
        verdict evaluate_faults FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ' | cut -c1-300)"
      fi
    fi
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

if want llama; then
  if torch_ok "$PY" && "$PY" -c "import transformers" >/dev/null 2>&1; then
    SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
    R=$WORK/rms && mkdir -p "$R"
    APPS=$HERE/regimes_apps
    built=1
    "$NVCC" -O2 -arch=sm_"$SM" -Xcompiler -fPIC -shared -o "$R/librms_norm.so" "$APPS/rms_norm.cu" >"$R/build.log" 2>&1 || built=0
    for v in TAIL BIGFAST; do
      "$NVCC" -O2 -cubin -arch=sm_"$SM" -DKC_CUBIN_ONLY -DKC_VARIANT_$v -o "$R/$v.cubin" "$APPS/rms_norm.cu" >>"$R/build.log" 2>&1 || built=0
    done
    "$NVCC" -O2 -cubin -arch=sm_"$SM" -DKC_CUBIN_ONLY -o "$R/SAME.cubin" "$APPS/rms_norm.cu" >>"$R/build.log" 2>&1 || built=0
    APP=("$PY" "$APPS/llama_regimes.py" "$R/librms_norm.so" 16 3)
    S=$WORK/llama
    if [ $built = 0 ]; then
      verdict llama_build FAIL "nvcc: $(tail -3 "$R/build.log" | tr '\n' ' ')"
    # Named: the norm, the attention kernel (whichever SDPA ran most) and rotary's negation
    # (rotate_half's -x2, a kernel only rotary launches); --top 3 adds the heaviest others
    # (cuBLAS GEMMs). Each kind should show a prefill and a decode regime.
    elif run llama_extract "$KC" extract --regimes --regex --kernel rms_norm_kernel \
        --kernel 'fmha_cutlass|flash_fwd|sdpa|attention' --kernel neg_kernel_cuda --top 3 --max-regimes 4 --json \
        -o "$S" -- "${APP[@]}"; then
      cp "$STEP_OUT" "$WORK/llama.index.json"
      kinds=$(py '"; ".join("%s %d/%d regimes %.1f%%" % (k["dir"][:40], k["captured"], k["regimes"], 100.0 * k["time_ns"] / max(k["app_time_ns"], 1)) for k in d["kernels"])' "$S/regime-kernels.json")
      nk=$(py 'len([k for k in d["kernels"] if k["captured"] >= 1])' "$S/regime-kernels.json")
      multi=$(py 'len([k for k in d["kernels"] if k["captured"] >= 2])' "$S/regime-kernels.json")
      verdict llama_extract "$(pass_if "$([ "${nk:-0}" -ge 5 ] && echo 1)")" "$nk kernels captured, $multi with >= 2 regimes: $kinds"
      # Norm, attention, rotary and GEMM: each with >= 2 regimes, and the regimes' shares summing
      # to the kernel's time in the profiled run (listed regimes plus dropped ones; 100.0% each).
      kinds4=$(py '";".join("%s=%d" % (kind, max([k["regimes"] for k in d["kernels"] if any(p in k["demangled"] for p in pats)] or [0])) for kind, pats in (("norm", ["rms_norm_kernel"]), ("attention", ["fmha", "flash_fwd", "sdpa", "ttention"]), ("rotary", ["neg_kernel_cuda"]), ("gemm", ["nvjet", "gemm", "cutlass_80", "sm90_xmma"])))' "$S/regime-kernels.json")
      sums=$(for k in $(py '" ".join(k["dir"] for k in d["kernels"])' "$S/regime-kernels.json"); do
        py '"%s:%s" % (d["kernel"]["demangled"][:24].replace(" ", "_"), "%.1f%%" % (100.0 * (sum(r["time_ns"] for r in d["regimes"]) + d["dropped"]["time_ns"]) / max(d["time_ns"], 1)))' "$S/$k/regimes.json" 2>/dev/null; done | tr '\n' ' ')
      ok4=$(python3 -c "import sys; print(1 if all(int(x.split('=')[1]) >= 2 for x in '$kinds4'.split(';')) else 0)" 2>/dev/null)
      off=$(printf '%s\n' $sums | grep -Evc ':(100\.0|99\.9)%$')
      [ "${off:-1}" = 0 ] || ok4=0
      verdict llama_kinds "$(pass_if "$ok4")" "regimes per kind: $kinds4; shares: $sums"
      run llama_validate "$KC" validate "$S" --json
      cp "$STEP_OUT" "$WORK/llama.validate.json"
      res=$(py 'd["result"]' "$WORK/llama.validate.json" 2>/dev/null)
      strong=$(py 'sum(1 for k in d["kernels"] for r in k["regimes"] if r.get("strength") == "strong")' "$WORK/llama.validate.json" 2>/dev/null)
      all=$(py 'sum(len(k["regimes"]) for k in d["kernels"])' "$WORK/llama.validate.json" 2>/dev/null)
      verdict llama_captured "$(pass_if "$([ "$res" = PASS ] && echo 1)")" "$(py 'd["line"]' "$WORK/llama.validate.json" 2>/dev/null) ($strong of $all strong)"
      NORM=$S/$(py '[k["dir"] for k in d["kernels"] if "rms_norm_kernel" in k["demangled"]][0]' "$S/regime-kernels.json")
      DEC=$(py '[r["dir"] for r in d["regimes"] if r["grid"][0] == 1][0]' "$NORM/regimes.json" 2>/dev/null)
      judge_set() {  # LABEL EXPECT CUBIN
        run "llama_$1" "$KC" validate "$NORM" --json --cubin "$3"
        cp "$STEP_OUT" "$WORK/llama_$1.json" 2>/dev/null
        JUDGED=$(py 'd["result"]' "$WORK/llama_$1.json" 2>/dev/null)
        LAST_LINE=$(py 'd["line"]' "$WORK/llama_$1.json" 2>/dev/null)
        [ -n "$LAST_LINE" ] || LAST_LINE="rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ')"
      }
      judge_set same PASS "$R/SAME.cubin"
      verdict llama_recompiled "$(pass_if "$([ "$JUDGED" = PASS ] && echo 1)")" "$LAST_LINE"
      judge_set tail FAIL "$R/TAIL.cubin"
      named=$(py 'd["failed"]' "$WORK/llama_tail.json" 2>/dev/null)
      verdict llama_tail "$(pass_if "$([ "$JUDGED" = FAIL ] && [ "$named" = "['$DEC']" ] && echo 1)")" "$LAST_LINE (failed: $named, expected ['$DEC'])"
      judge_set bigfast PASS "$R/BIGFAST.cubin"
      per=$(py '" ".join("%s:%s" % (r["grid"][0], "%.3f" % r["speedup"] if r["speedup"] else "-") for r in d["regimes"])' "$WORK/llama_bigfast.json" 2>/dev/null)
      both=$(py 'any(r["speedup"] > 1 for r in d["regimes"]) and any(r["speedup"] < 1 for r in d["regimes"])' "$WORK/llama_bigfast.json" 2>/dev/null)
      W=$(py '"%.4f" % d["weighted_speedup"]' "$WORK/llama_bigfast.json" 2>/dev/null)
      verdict llama_bigfast "$(pass_if "$([ "$JUDGED" = PASS ] && [ "$both" = True ] && echo 1)")" "grid:speed-up $per; weighted x$W; $LAST_LINE"
      want llama_evaluate && evaluate_like_validate llama_evaluate "$NORM" llama_ same="$R/SAME.cubin" \
        tail="$R/TAIL.cubin" bigfast="$R/BIGFAST.cubin"
      # The page, the swap and the cache-state rows (cases llama_report, llama_swap; on by
      # default, left out when KERNCAP_GPU_CASES names the llama case without them).
      if want llama_report || want llama_swap; then
        # The page of this run (kerncap report), checked in a headless browser where one is here;
        # elsewhere the page and its verdict are kept ($WORK/llama_report.html) for the check.
        if run llama_report "$KC" report "$NORM" --verdict "$WORK/llama_bigfast.json" -o "$WORK/llama_report.html"; then
          if [ -f "$HERE/../../python/tests/report_browser.py" ] &&
             python3 "$HERE/../../python/tests/report_browser.py" "$WORK/llama_report.html" "$WORK/llama_bigfast.json" \
               >"$WORK/llama_report.check" 2>&1; then
            verdict llama_report PASS "$(tail -1 "$WORK/llama_report.check")"
          elif grep -q SKIPPED "$WORK/llama_report.check" 2>/dev/null; then
            verdict llama_report SKIP "written ($(wc -c <"$WORK/llama_report.html") bytes); no browser here: check it with python/tests/report_browser.py"
          else
            verdict llama_report FAIL "$(tail -2 "$WORK/llama_report.check" | tr '\n' ' ')"
          fi
        else
          verdict llama_report FAIL "rc $RC: $(tail -2 "$STEP_ERR" | tr '\n' ' ')"
        fi
        # The same variant inside the application: the kernel's own GPU time, unmodified vs swapped.
        run llama_swap "$KC" run --swap rms_norm_kernel="$R/BIGFAST.cubin" --repeat 4 --json -- "${APP[@]}"
        cp "$STEP_OUT" "$WORK/llama_swap.json" 2>/dev/null
        INAPP=$(py '"%.4f" % d["summary"]["kernel_ns"]["ratio"]["median"]' "$WORK/llama_swap.json" 2>/dev/null)
        CI=$(py '"[%.4f, %.4f]" % (d["summary"]["kernel_ns"]["ratio"]["low"], d["summary"]["kernel_ns"]["ratio"]["high"])' "$WORK/llama_swap.json" 2>/dev/null)
        SV=$(py 'd["verdict"]' "$WORK/llama_swap.json" 2>/dev/null)
        agree=$(python3 -c "print(1 if abs($W / $INAPP - 1) <= 0.05 else 0)" 2>/dev/null)
        WR=$(py '"%.4f" % d["weighted_speedup_ratio"]' "$WORK/llama_bigfast.json" 2>/dev/null)
        verdict llama_weighted_vs_swap "$(pass_if "$agree")" "weighted x$W (ratios alone x$WR) vs in-app x$INAPP (95% $CI; kerncap run --swap verdict $SV; $(py '"%d" % d["pairs"]' "$WORK/llama_swap.json" 2>/dev/null) pairs)"
        # The same variant timed in the nearer of warm and cold (--speedup-cache auto), beside the
        # set's default (blend: each image at the application's L2 state), against the same swap.
        run llama_auto "$KC" validate "$NORM" --json --cubin "$R/BIGFAST.cubin" --speedup-cache auto
        cp "$STEP_OUT" "$WORK/llama_auto.json" 2>/dev/null
        WA=$(py '"%.4f" % d["weighted_speedup"]' "$WORK/llama_auto.json" 2>/dev/null)
        # A measurement beside the default (the row passes when auto's figure was measured).
        apart=$(python3 -c "print('%.1f %%' % (100 * abs($WA / $INAPP - 1)))" 2>/dev/null)
        verdict llama_auto_vs_swap "$(pass_if "$([ -n "$apart" ] && echo 1)")" "auto weighted x$WA vs in-app x$INAPP: $apart apart; $(py '" | ".join(r["verdict"]["speedup"]["cache"][:100] for r in d["regimes"])' "$WORK/llama_auto.json" 2>/dev/null)"
      fi
    else
      verdict llama_extract FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ')"
    fi
  else
    verdict llama SKIP "no torch with CUDA or no transformers in $PY"
  fi
fi

if want autotune; then
  if torch_ok "$PY" && "$PY" -c "import triton" >/dev/null 2>&1; then
    S=$WORK/autotune
    if run autotune_extract "$KC" extract scaled_add --regimes --json -o "$S" -- "$PY" "$HERE/regimes_apps/triton_autotune.py"; then
      n=$(py 'len([r for r in d["regimes"] if r["captured"]])' "$S/regimes.json")
      shapes=$(py '" ".join("%s/%s:%d" % (r["grid"][0], r["block"][0], r["launches"]) for r in d["regimes"])' "$S/regimes.json")
      verdict autotune_extract "$(pass_if "$([ "${n:-0}" -ge 3 ] && echo 1)")" "$n regimes (grid/block:launches $shapes; uncounted $(py 'd["uncounted"]' "$S/regimes.json"))"
      run autotune_validate "$KC" validate "$S" --json
      cp "$STEP_OUT" "$WORK/autotune.json"
      verdict autotune_captured "$(pass_if "$([ "$(py 'd["result"]' "$WORK/autotune.json" 2>/dev/null)" = PASS ] && echo 1)")" "$(py 'd["line"]' "$WORK/autotune.json" 2>/dev/null)"
    else
      verdict autotune_extract FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ')"
    fi
  else
    verdict autotune SKIP "no torch with CUDA or no triton in $PY"
  fi
fi

if want ggml; then
  if [ -x "${KERNCAP_GGML_TESTS:-}" ]; then
    S=$WORK/ggml
    if run ggml_extract "$KC" extract mul_mat_q --regimes --max-regimes 8 --json -o "$S" -- "$KERNCAP_GGML_TESTS" perf -o MUL_MAT -b CUDA0; then
      n=$(py 'len([r for r in d["regimes"] if r["captured"]])' "$S/regimes.json")
      verdict ggml_extract "$(pass_if "$([ "${n:-0}" -ge 2 ] && echo 1)")" "$n regimes of $(py 'd["kernel"]["demangled"][:70]' "$S/regimes.json") (grid:launches:share $(py '" ".join("%sx%s:%d:%.2f" % (r["grid"][0], r["grid"][1], r["launches"], r["share"]) for r in d["regimes"])' "$S/regimes.json"))"
      run ggml_validate "$KC" validate "$S" --json
      cp "$STEP_OUT" "$WORK/ggml.json"
      verdict ggml_captured "$(pass_if "$([ "$(py 'd["result"]' "$WORK/ggml.json" 2>/dev/null)" = PASS ] && echo 1)")" "$(py 'd["line"]' "$WORK/ggml.json" 2>/dev/null)"
    else
      verdict ggml_extract FAIL "rc $RC: $(tail -3 "$STEP_ERR" | tr '\n' ' ')"
    fi
  else
    verdict ggml SKIP "KERNCAP_GGML_TESTS (ggml's test-backend-ops, built outside the repository) not given"
  fi
fi

summary -s
[ "$failed" = 0 ]

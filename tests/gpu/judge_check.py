#!/usr/bin/env python3
"""One capture, several candidate images, every entry point of the judge: the verdict
document must be the same from each (tests/gpu/judge_e2e.sh runs this per capture).

    judge_check.py --kerncap BUILD/bin/kerncap --replay BUILD/bin/kerncap-replay \
        --out OUT --candidate NAME=PATH [--candidate ...] --rows ROWS.md --json RESULT.json

Entry points, each judging every candidate in the order given:
  validate     `kerncap validate OUT --cubin C --server off --json` (one process per candidate)
  served       the same through a `kerncap serve OUT` started here ("served_by" must be present)
  replay_tool  `kerncap-replay OUT --cubin C --validate --json` (its "validate" document)
  session      Python kerncap.engine.Session.evaluate in one open session
  evaluate_all Python kerncap.engine.evaluate_all over the list
  c_abi        kc_open + kc_evaluate called directly through ctypes
A candidate named `fault*` must FAIL naming a CUDA error from every entry point; the session
entry points must judge the candidates after it normally (the order puts a correct one after
it). Expected verdicts are given as NAME=PATH:PASS or :FAIL; without one, only agreement is checked.
Exit 0: every candidate agreed across entry points and met its expectation; 1 otherwise.
"""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import time

ENTRY_POINTS = ["validate", "served", "replay_tool", "session", "evaluate_all", "c_abi"]


def norm(doc, nondeterministic=False):
    """The verdict document's fields that must agree: result, strength, spec, the policy,
    invariants, determinism, the fault, and per region pass/exact/mismatches/errors — except
    where the kernel is nondeterministic (it lands elsewhere each run: regions the judge found
    so, or every region of a capture given with --nondeterministic, whose variants may pass
    within tolerance before any determinism check): there only pass and exact."""
    if doc is None:
        return None
    nondet = doc.get("nondeterministic_regions") or []
    if nondeterministic:
        nondet = [r.get("id") for r in doc.get("regions", [])]
    pol = doc.get("policy") or {}
    regions = []
    for r in doc.get("regions", []):
        x = [r.get("id"), r.get("pass"), r.get("exact")]
        if r.get("id") not in nondet:
            x += [r.get("mismatches"), r.get("differing_bytes"), r.get("max_abs_error"), r.get("max_rel_error")]
        regions.append(x)
    inv = doc.get("invariants")
    fault = doc.get("fault")
    return {
        "result": doc.get("result"),
        "strength": doc.get("strength"),
        "spec": doc.get("spec"),
        "line": None if nondet else doc.get("line"),
        "nondeterministic_regions": doc.get("nondeterministic_regions") or [],
        "fault": (re.findall(r"CUDA_ERROR_\w+", fault) or ["?"])[0] if fault else None,
        "invariants": None if not inv else [inv.get("pass"), len(inv.get("violations", [])), inv.get("checked")],
        "policy": {k: pol.get(k) for k in ("exact", "check_determinism", "tolerances", "invariants", "min_speedup",
                                           "forced_spec", "fuzz")}
        | {k: os.path.basename(pol.get(k) or "") for k in ("tolerances_from", "invariants_from")},
        "regions": regions,
    }


def run_json(cmd, timeout):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    try:
        return json.loads(p.stdout), p
    except ValueError:
        return None, p


def validate(a, path, extra=()):
    cmd = [a.kerncap, "validate", a.out, "--cubin", path, "--json", *extra]
    doc, p = run_json(cmd, a.timeout)
    if doc is None:
        return {"error": f"rc {p.returncode}: {p.stderr.strip()[-300:]}"}
    doc["_rc"] = p.returncode
    return doc


def replay_tool(a, path):
    doc, p = run_json([a.replay, a.out, "--cubin", path, "--validate", "--json", "-n", "1"], a.timeout)
    if doc is None or "validate" not in doc:
        return {"error": f"rc {p.returncode}: {p.stderr.strip()[-300:]}"}
    return doc["validate"]


def served(a, cands):
    env = dict(os.environ)
    env.pop("KERNCAP_SERVE", None)
    log = open(os.path.join(a.work, "serve.log"), "w")
    srv = subprocess.Popen([a.kerncap, "serve", a.out, "--idle-timeout", "900"], stdout=log, stderr=subprocess.STDOUT,
                           env=env)
    out = {}
    try:
        deadline = time.time() + a.timeout
        while time.time() < deadline:
            if srv.poll() is not None:
                return {n: {"error": f"kerncap serve exited {srv.returncode} (see serve.log)"} for n, _, _ in cands}
            if subprocess.run([a.kerncap, "serve", "--status", a.out], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
        for name, path, _ in cands:
            doc = validate(a, path)
            if "error" not in doc and "served_by" not in doc:
                doc = {"error": "not evaluated by the server: " + json.dumps(doc.get("line"))}
            out[name] = doc
            if doc.get("context_lost"):
                # The server starts itself again (kerncap serve's exec); meanwhile a validate
                # would run in its own process (same verdict, not served): wait for it.
                deadline = time.time() + a.timeout
                while time.time() < deadline and subprocess.run(
                        [a.kerncap, "serve", "--status", a.out], capture_output=True).returncode != 0:
                    time.sleep(0.5)
    finally:
        subprocess.run([a.kerncap, "serve", "--stop", a.out], capture_output=True, timeout=60)
        try:
            srv.wait(timeout=60)
        except subprocess.TimeoutExpired:
            srv.kill()
    return out


def worker(entry, out, paths):
    """One in-process entry point in this (fresh) process: prints {"docs": [...]} in order.
    c_abi stops after a verdict that lost the context (a C caller continues in a new process)."""
    from kerncap import engine  # this build's package (PYTHONPATH) and engine (KERNCAP_REPLAY_LIB)

    docs = []
    if entry == "session":
        with engine.Session(out) as s:
            for path in paths:
                try:
                    docs.append(s.evaluate(path, time=False))
                except engine.EngineError as e:
                    docs.append({"error": str(e)})
    elif entry == "evaluate_all":
        try:
            for doc in engine.evaluate_all(out, paths, time=False):
                docs.append(doc)
        except engine.EngineError as e:
            docs += [{"error": str(e)}] * (len(paths) - len(docs))
    else:  # the C ABI itself: kc_open, kc_evaluate, kc_free, kc_close
        lib = engine.load().lib
        h = ctypes.c_void_p()
        if lib.kc_open(os.fsencode(out), None, ctypes.byref(h)) != 0:
            docs = [{"error": "kc_open: " + lib.kc_last_error().decode()}]
        else:
            for path in paths:
                res = ctypes.c_void_p()
                rc = lib.kc_evaluate(h, os.fsencode(path), b'{"time": false}', ctypes.byref(res))
                if rc != 0:
                    docs.append({"error": f"kc_evaluate {rc}: {lib.kc_last_error().decode()}"})
                    continue
                docs.append(json.loads(ctypes.cast(res, ctypes.c_char_p).value.decode()))
                lib.kc_free(res)
                if docs[-1].get("context_lost"):
                    break
            lib.kc_close(h)
    print(json.dumps({"docs": docs}))


def in_process(a, cands):
    """session, evaluate_all and c_abi, each in a fresh Python process (a fault in one must not
    decide another's start); c_abi goes on in a new process after a lost context."""
    res = {}
    for entry in ("session", "evaluate_all", "c_abi"):
        res[entry] = {}
        todo = list(cands)
        while todo:
            doc, p = run_json([sys.executable, os.path.abspath(__file__), "--worker", entry, a.out,
                               *[path for _, path, _ in todo]], a.timeout * len(todo))
            got = (doc or {}).get("docs") or [{"error": f"worker rc {p.returncode}: {p.stderr.strip()[-300:]}"}]
            for (name, _, _), d in zip(todo, got):
                res[entry][name] = d
            if len(got) >= len(todo) or "error" in got[-1]:
                for name, _, _ in todo[len(got):]:
                    res[entry][name] = {"error": "not judged: " + str(got[-1].get("error", ""))}
                break
            todo = todo[len(got):]
    return res


def main():
    if len(sys.argv) > 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], sys.argv[4:])
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("--kerncap", required=True)
    p.add_argument("--replay", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--candidate", action="append", required=True, help="NAME=PATH[:PASS|:FAIL]")
    p.add_argument("--rows", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--label", default="")
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--nondeterministic", action="store_true",
                   help="the kernel is nondeterministic: compare per region only pass and exact")
    a = p.parse_args()
    a.work = os.path.dirname(os.path.abspath(a.json))
    cands = []
    for c in a.candidate:
        name, rest = c.split("=", 1)
        path, _, want = rest.rpartition(":") if rest.endswith((":PASS", ":FAIL")) else (rest, "", "")
        cands.append((name, path, want))

    docs = {ep: {} for ep in ENTRY_POINTS}
    t0 = time.time()
    for name, path, _ in cands:
        docs["validate"][name] = validate(a, path, ["--server", "off"])
        docs["replay_tool"][name] = replay_tool(a, path)
    docs["served"] = served(a, cands)
    docs.update(in_process(a, cands))

    ok_all = True
    rows = []
    for name, _, want in cands:
        views = {ep: norm(docs[ep].get(name), a.nondeterministic) if "error" not in (docs[ep].get(name) or {"error": 1}) else None
                 for ep in ENTRY_POINTS}
        errors = {ep: docs[ep].get(name, {}).get("error") for ep in ENTRY_POINTS if views[ep] is None}
        ref = views["validate"]
        agree = [ep for ep in ENTRY_POINTS if views[ep] is not None and views[ep] == ref]
        differ = [ep for ep in ENTRY_POINTS if ep not in agree]
        result = ref["result"] if ref else "?"
        ok = not differ and (not want or result == want)
        if name.startswith("fault"):
            ok = ok and ref is not None and ref["fault"] is not None
        ok_all &= ok
        detail = (f"{result} ({ref['strength']}; {ref['line'] or 'nondeterministic regions ' + str(ref['nondeterministic_regions'])})"
                  if ref else f"validate: {errors.get('validate')}")
        if ref and ref["fault"]:
            detail += f" fault {ref['fault']}"
        if ref and ref["invariants"]:
            detail += f" invariants {ref['invariants']}"
        rows.append(f"| {a.label} | {name} | {want or '-'} | {len(agree)}/{len(ENTRY_POINTS)} | "
                    f"{'PASS' if ok else 'FAIL'} | {detail[:260]}"
                    + (f" — differ: {', '.join(differ)}" if differ else "") + " |")
        if differ:
            for ep in differ:
                v = views[ep]
                if v is None:
                    print(f"  {name} {ep}: error {errors.get(ep)}")
                    continue
                diff = {k: (ref.get(k) if ref else None, v.get(k)) for k in v if not ref or v.get(k) != ref.get(k)}
                print(f"  {name} {ep} differs from validate: {json.dumps(diff)[:800]}")
    # After a fault, the sessions judged the next candidate (recovered, not an error).
    names = [n for n, _, _ in cands]
    for i, n in enumerate(names[:-1]):
        if not n.startswith("fault"):
            continue
        nxt = names[i + 1]
        for ep in ("session", "evaluate_all", "c_abi", "served"):
            d = docs[ep].get(nxt) or {}
            good = "error" not in d and d.get("result") is not None
            rec = (docs[ep].get(n) or {}).get("recovered")
            rec = f"{rec}, context_lost={(docs[ep].get(n) or {}).get('context_lost')}"
            ok_all &= good
            how = " (a new process: the C ABI cannot go on in one whose context is lost)" if ep == "c_abi" else ""
            rows.append(f"| {a.label} | {n} then {nxt} | recovers | {ep} | {'PASS' if good else 'FAIL'} | "
                        f"after the fault: {d.get('result', d.get('error'))}; recovered={rec}{how} |")
    with open(a.rows, "a") as f:
        f.write("\n".join(rows) + "\n")
    with open(a.json, "w") as f:
        json.dump(docs, f, indent=1, default=str)
    print("\n".join(rows))
    print(f"{a.label}: {len(cands)} candidates x {len(ENTRY_POINTS)} entry points in {time.time() - t0:.1f} s")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())

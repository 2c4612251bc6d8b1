#!/usr/bin/env python3
"""Issue 38's soak: many candidates through one Python Session, through `kerncap serve` with
concurrent clients and through `evaluate_all` (the evaluation pool), mixing correct, wrong,
NaN-producing and faulting candidates.

    soak.py CAPTURE --cands DIR [--seconds 150] [--clients 16] [--target 10000]
            [--split session=30,faults=15,serve=30,pool=25] [--mix correct=60,wrong=25,nan=15]
            [--time-every 10] [--seed 38] [--kerncap KC]

CAPTURE: a capture of fault_app's fm_step (tests/gpu/fault_apps); DIR holds the candidates
correct.cubin, wrong.cubin, nan.cubin and fault.cubin (fault_apps/candidate.cu, KIND 0..3).
Phases, in this order, each given its share (--split) of the time left and of the candidates
left to reach --target (a phase that reaches its count early hands its time on):
  session  one in-process Session, no faults (engine memory, fds and threads of this process);
  faults   the same Session, a faulting candidate every 25th (after the first fault the Session
           judges in a `kerncap serve` child, whose process is then sampled);
  serve    `kerncap serve` with CLIENTS concurrent `kerncap validate --cubin` clients (a
           faulting one every 40th request);
  pool     `kerncap.engine.evaluate_all(..., time_limit=60)`: the evaluation pool, one worker
           process and a spare on the GPU, a faulting candidate every 50th (each costs its
           worker, which the spare replaces); the pool's parent (this process) and its workers
           are sampled.
The other candidates are drawn (seeded) from --mix: an agent loop's candidates mostly compile
and are right or plainly wrong, a few produce NaN; each is one of four distinct images, so the
Session loads a new module for most candidates, as it does for an agent's distinct candidates.
Every --time-every-th candidate is also timed. Every verdict must equal the one-shot `kerncap
validate --server off` verdict of its candidate (result, and whether it names a fault); host
RSS, open fds, threads and GPU memory are sampled over each phase, and their slopes printed
(per 1,000 evaluations, and as a share of the mean over the run: issue 38 asks for <= 1 %).
Per phase and kind, where an evaluation's time goes (the verdict's own `phases`, ms). Exit 0
when no verdict differed and every phase judged something; the slopes and the target are
reported, not judged (a short run's noise).
"""
import argparse
import ctypes
import json
import os
import random
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("KERNCAP_PYTHONPATH") or os.path.join(HERE, "..", "..", "python"))
from kerncap import engine  # noqa: E402

KINDS = ("correct", "wrong", "nan", "fault")


def proc_stats(pid):
    """RSS (MiB), open fds, threads of a process (None when it is gone)."""
    try:
        rss = threads = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:") and line.split()[1] in ("Z", "X"):
                    return None  # a worker that ended, not yet reaped: nothing to measure
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) / 1024
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        return rss, len(os.listdir(f"/proc/{pid}/fd")), threads
    except OSError:
        return None


def gpu_used_mib(pid):
    """Device memory the process pid holds (nvidia-smi's compute apps), MiB."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout
        for line in out.splitlines():
            p, used = (x.strip() for x in line.split(","))
            if int(p) == pid:
                return float(used)
        return float("nan")
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return float("nan")


def gpu_memory_now():
    """(device memory in use on GPU 0, {pid: memory each compute process holds}), MiB, from two
    nvidia-smi calls; the device's less the processes' is what no live process holds (what
    workers that ended did not give back would grow it; the driver's reservation is its floor)."""
    try:
        dev = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=20).stdout
        apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20).stdout
        per = {}
        for line in apps.splitlines():
            p, used = (x.strip() for x in line.split(","))
            per[int(p)] = float(used)
        return float(dev.split()[0]), per
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return float("nan"), {}


def fd_targets(pid):
    """What each open fd of pid is (numbers in socket:[N], pipe:[N] dropped)."""
    out = {}
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                t = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            out[int(fd)] = t.split(":[")[0] if ":[" in t else t
    except OSError:
        pass
    return out


def cu_used_mib():
    """Device memory in use as this process's current context sees it (cuMemGetInfo)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return float("nan")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    if cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)) != 0:
        return float("nan")
    return (total.value - free.value) / 1048576


def slope(xs, ys):
    """Least-squares slope of ys over xs, and the growth it implies over the run as a share of
    the mean (the first fifth of the samples dropped: warm-up)."""
    pts = [(x, y) for x, y in zip(xs, ys) if y == y]
    pts = pts[len(pts) // 5:]
    if len(pts) < 3:
        return float("nan"), float("nan")
    n = len(pts)
    mx = sum(p[0] for p in pts) / n
    my = sum(p[1] for p in pts) / n
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    if sxx == 0:
        return float("nan"), float("nan")
    b = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx
    growth = b * (pts[-1][0] - pts[0][0]) / my if my else float("nan")
    return b * 1000, growth * 100


def verdict(doc):
    return (doc.get("result"), bool(doc.get("fault")))


class Phase:
    def __init__(self, name, seconds, quota):
        self.name, self.n, self.mismatch, self.errors = name, 0, [], []
        self.seconds, self.quota = seconds, quota  # its time and its count (None: time only)
        self.t0 = time.monotonic()
        self.secs = 0.0
        self.deadline = self.t0 + seconds
        self.kinds = dict.fromkeys(KINDS, 0)
        # Samples per series (a process in a role): (evaluation, rss, fds, threads, gpu, pid, faults).
        self.series = {}
        self.fds_first, self.fds_last = {}, {}  # series: fd targets at its first and last sample
        self.cost = {}  # kind: {"n", "seconds", "full", "loaded", phase: seconds}
        self.phase_values = {}  # kind: {phase: [seconds, ...]}
        self.unsettled = set()  # series whose samples are all kept (no process of theirs restarts)

    def done(self):
        return time.monotonic() >= self.deadline or (self.quota is not None and self.n >= self.quota)

    def sample(self, pid, gpu, series=None, settle=True):
        st = proc_stats(pid)
        if st:
            key = series or f"pid {pid}"
            if not settle:
                self.unsettled.add(key)
            self.series.setdefault(key, []).append((self.n,) + st + (gpu, pid, self.kinds["fault"]))
            t = fd_targets(pid)
            self.fds_first.setdefault(key, (self.n, self.kinds["fault"], t))
            self.fds_last[key] = (self.n, self.kinds["fault"], t)

    def judge(self, kind, got, refs, doc=None, wall=None):
        self.n += 1
        self.kinds[kind] += 1
        if got != refs[kind] and len(self.mismatch) < 20:
            self.mismatch.append(f"{kind}: got {got}, one-shot {refs[kind]}")
        elif got != refs[kind]:
            self.mismatch.append("...")
        if isinstance(doc, dict) and isinstance(doc.get("phases"), dict):
            c = self.cost.setdefault(kind, {"n": 0, "wall": 0.0, "seconds": 0.0, "full": 0, "loaded": 0, "timed": 0})
            c["n"] += 1
            c["wall"] += wall or 0.0
            c["seconds"] += float(doc.get("seconds") or 0)
            c["full"] += doc.get("memory") == "full"
            c["loaded"] += bool(doc.get("loaded"))
            c["timed"] += bool(doc.get("timing"))
            for k, v in doc["phases"].items():
                if isinstance(v, (int, float)):
                    c[k] = c.get(k, 0.0) + v
                    self.phase_values.setdefault(kind, {}).setdefault(k, []).append(v)

    def report_costs(self):
        """Where an evaluation's time goes, per kind: the verdict's own phases (engine time)."""
        if not self.cost:
            return
        steps = []
        for c in self.cost.values():
            steps += [k for k in c if k not in ("n", "wall", "seconds", "full", "loaded", "timed") and k not in steps]
        print("| kind | evaluations | caller's ms each | engine ms each | full restore | module loaded | timed | "
              + " | ".join(f"{k} ms" for k in steps) + " |")
        print("| --- " * (7 + len(steps)) + "|")
        for kind in KINDS:
            c = self.cost.get(kind)
            if not c:
                continue
            n = c["n"]
            wall = f"{1000 * c['wall'] / n:.2f}" if c["wall"] else "-"
            print(f"| {kind} | {n} | {wall} | {1000 * c['seconds'] / n:.2f} | {100 * c['full'] / n:.0f} % | "
                  f"{100 * c['loaded'] / n:.0f} % | {100 * c['timed'] / n:.0f} % | "
                  + " | ".join(f"{1000 * c.get(k, 0.0) / n:.2f}" for k in steps) + " |")
        # A mean can be carried by a few evaluations (served clients that judged in their own
        # process while the server restarted, 16 at once): the median and the 99th percentile too.
        for kind in KINDS:
            vals = self.phase_values.get(kind)
            if not vals:
                continue
            parts = []
            for k in steps:
                v = sorted(vals.get(k, []))
                if v:
                    parts.append(f"{k} {1000 * v[len(v) // 2]:.2f}/{1000 * v[min(len(v) - 1, (99 * len(v)) // 100)]:.2f}")
            print(f"{kind}: median/p99 ms: " + ", ".join(parts))

    def report_series(self, key, samples):
        # A sample taken in an interval with a fault may catch the process restarting (a serve
        # child re-executes itself: 39 fds before CUDA is up, 50 after): slopes are over the
        # settled samples, those with no fault since the one before.
        settled = [x for i, x in enumerate(samples)
                   if key in self.unsettled or i == 0 or x[6] == samples[i - 1][6]]
        left_out = len(samples) - len(settled)
        print(f"{key}: {len(samples)} samples" + (f", {left_out} taken across a fault left out" if left_out else ""))
        samples = settled
        print("| metric | first | last | slope per 1,000 evaluations | growth over the run |")
        print("| --- | --- | --- | --- | --- |")
        xs = [x[0] for x in samples]
        for i, name in enumerate(("host RSS MiB", "open fds", "threads", "GPU memory used MiB"), start=1):
            ys = [x[i] for x in samples]
            if not ys:
                continue
            b, g = slope(xs, ys)
            print(f"| {name} | {ys[0]:.1f} | {ys[-1]:.1f} | {b:+.3f} | {g:+.2f} % |")
        if key in self.fds_first:
            (n0, f0, t0), (n1, f1, t1) = self.fds_first[key], self.fds_last[key]
            added = {}
            for fd, t in t1.items():
                if t0.get(fd) != t:
                    added[t] = added.get(t, 0) + 1
            gone = sum(1 for fd in t0 if fd not in t1)
            print(f"open fds: {len(t0)} at evaluation {n0} ({f0} faults so far), {len(t1)} at "
                  f"{n1} ({f1} faults); new since: {added or 'none'}; closed: {gone}")
            print("fds over the run (evaluation:faults:fds): "
                  + " ".join(f"{x[0]}:{x[6]}:{x[2]}" for x in samples[:: max(1, len(samples) // 12)]))

    def report(self):
        secs = self.secs or time.monotonic() - self.t0
        quota = f", its share of the target {self.quota}" if self.quota is not None else ""
        print(f"\n## {self.name}: {self.n} evaluations in {secs:.0f} s of {self.seconds:.0f}{quota} "
              f"({self.n / max(secs, 1e-9):.1f}/s), kinds {self.kinds}, {len(self.mismatch)} verdicts differing "
              f"from one-shot validate, {len(self.errors)} errors")
        for m in self.mismatch[:5]:
            print("  differs:", m)
        for e in self.errors[:5]:
            print("  error:", e)
        self.report_costs()
        for key, samples in self.series.items():
            if key.startswith("pid "):  # a Session's: the process that judged at the end
                continue
            self.report_series(key, samples)
        pids = [k for k in self.series if k.startswith("pid ")]
        if pids:
            last = pids[-1]
            earlier = sum(len(self.series[k]) for k in pids[:-1])
            if earlier:
                print(f"(slopes over {last}, the process that judged at the end; {earlier} earlier samples were "
                      "of other processes)")
            self.report_series(last, self.series[last])
        return self.n > 0 and not self.mismatch and not self.errors


def one_shot(kc, cap, cands):
    refs = {}
    for k in KINDS:
        r = subprocess.run([kc, "validate", cap, "--cubin", os.path.join(cands, f"{k}.cubin"), "--json",
                            "--server", "off"], capture_output=True, text=True, timeout=300)
        try:
            doc = json.loads(r.stdout)
        except ValueError:
            doc = {"result": f"exit {r.returncode}: {r.stderr.strip()[-200:]}"}
        refs[k] = verdict(doc)
        print(f"one-shot validate {k}: exit {r.returncode}, {refs[k]}")
    return refs


class Kinds:
    """The candidates' kinds, in a seeded order: every fault_every-th a fault (0: none), the
    others drawn from the mix's weights."""

    def __init__(self, mix, fault_every, seed):
        self.names, self.weights = list(mix), list(mix.values())
        self.fault_every, self.rng, self.i = fault_every, random.Random(seed), 0

    def next(self):
        self.i += 1
        if self.fault_every and self.i % self.fault_every == 0:
            return "fault"
        return self.rng.choices(self.names, self.weights)[0]


def session_phase(ph, s, cands, refs, kinds, time_every, sample_every, in_process):
    i = 0
    while not ph.done():
        k = kinds.next()
        i += 1
        try:
            t0 = time.monotonic()
            doc = s.evaluate(os.path.join(cands, f"{k}.cubin"), time=(time_every > 0 and i % time_every == 0))
            ph.judge(k, verdict(doc), refs, doc, time.monotonic() - t0)
        except engine.EngineError as e:
            ph.errors.append(f"{k}: {e}"[:200])
        if ph.n % sample_every == 0:
            child = s._child  # the serve child after a fault: the process that judges
            pid = child.proc.pid if child is not None else os.getpid()
            gpu = cu_used_mib() if in_process and child is None else gpu_used_mib(pid)
            ph.sample(pid, gpu)


def serve_phase(ph, kc, cap, cands, refs, clients, seed, sample_every):
    log = open(os.path.join(os.path.dirname(os.path.abspath(cap)), "soak-serve.log"), "w")
    srv = subprocess.Popen([kc, "serve", cap, "--idle-timeout", "600"], stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            with open(log.name) as f:
                if " ready (pid " in f.read():
                    break
            time.sleep(0.1)
        lock = threading.Lock()
        counter = [0]
        served = [0]
        kinds = Kinds(MIX, 40, seed)  # one sequence, shared: a fault every 40th request

        def client(cid):
            while not ph.done():
                with lock:
                    k = kinds.next()
                t0 = time.monotonic()
                r = subprocess.run([kc, "validate", cap, "--cubin", os.path.join(cands, f"{k}.cubin"), "--json"],
                                   capture_output=True, text=True, timeout=300)
                wall = time.monotonic() - t0
                with lock:
                    try:
                        doc = json.loads(r.stdout)
                        ph.judge(k, verdict(doc), refs, doc, wall)
                    except ValueError:
                        ph.errors.append(f"{k}: exit {r.returncode} {r.stderr.strip()[-160:]}")
                        continue
                    served[0] += "evaluated by kerncap serve" in r.stderr
                    counter[0] += 1
                    if counter[0] % sample_every == 0:
                        ph.sample(srv.pid, gpu_used_mib(srv.pid), "kerncap serve")

        ts = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        print(f"serve: {served[0]} of {ph.n} answered by the server (the rest in the client's own process, "
              f"while the server restarted after a fault)")
    finally:
        subprocess.run([kc, "serve", "--stop", cap], capture_output=True, timeout=60)
        try:
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()
        log.close()


def pool_phase(ph, cap, cands, refs, kinds, time_every, sample_every):
    """evaluate_all through the pool (time_limit: one worker and its spare on the default GPU);
    candidates are handed out only as the worker frees up, so the generator ends the phase.
    Sampled every sample_every seconds."""
    order = []

    def images():
        while not ph.done():
            k = kinds.next()
            order.append(k)
            yield os.path.join(cands, f"{k}.cubin")

    restarts = [0]

    def progress(ev):
        restarts[0] += ev.get("event") == "restart"

    workers = set()
    next_sample = time.monotonic() + sample_every
    # time= is one option for the whole pool: every time_every-th candidate cannot be asked
    # for; the pool times none (time_every 0) or every one (--time-every 1).
    for rec in engine.evaluate_all(cap, images(), time_limit=60.0, time=time_every == 1, progress=progress):
        k = order[rec["index"]]
        doc = rec.get("verdict")
        if doc is None:
            ph.judge(k, (rec.get("result"), False), refs)
            ph.errors.append(f"{k}: no verdict: {rec.get('error')}"[:200])
        else:
            ph.judge(k, verdict(doc), refs, doc, rec.get("seconds"))
        pid = rec.get("worker_pid")
        if pid:
            workers.add(pid)
        if time.monotonic() >= next_sample:  # by time: nvidia-smi costs ~0.1 s, a candidate ~0.02
            next_sample = time.monotonic() + sample_every
            dev, per = gpu_memory_now()
            ph.sample(os.getpid(), dev - sum(per.values()),
                      "the pool's parent (this process; GPU memory: the device's that no live process holds)",
                      settle=False)
            if pid:  # workers come and go (a fault costs one; a spare, open already, takes over)
                ph.sample(pid, per.get(pid, float("nan")), "the pool's workers (all of them, one series)",
                          settle=False)
    print(f"pool: {len(workers)} worker processes judged, {restarts[0]} restarts")


def parse_weights(text, names):
    out = {}
    for part in text.split(","):
        name, _, w = part.partition("=")
        if name.strip() not in names:
            raise SystemExit(f"soak.py: {name!r} is not one of {', '.join(names)}")
        out[name.strip()] = float(w)
    if any(v < 0 for v in out.values()) or sum(out.values()) <= 0:
        raise SystemExit(f"soak.py: weights {text!r} must be >= 0 with a positive sum")
    return out


MIX = {"correct": 60.0, "wrong": 25.0, "nan": 15.0}
PHASES = ("session", "faults", "serve", "pool")


def main():
    global MIX
    ap = argparse.ArgumentParser()
    ap.add_argument("capture")
    ap.add_argument("--cands", required=True)
    ap.add_argument("--seconds", type=float, default=150)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--target", type=int, default=None,
                    help="candidates to reach over all phases (default or 0: time only)")
    ap.add_argument("--split", default="session=30,faults=15,serve=30,pool=25")
    ap.add_argument("--mix", default="correct=60,wrong=25,nan=15")
    ap.add_argument("--time-every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--kerncap", default=os.environ.get("KERNCAP_BIN", "kerncap"))
    a = ap.parse_args()
    a.target = a.target or None
    split = parse_weights(a.split, PHASES)
    MIX = parse_weights(a.mix, ("correct", "wrong", "nan"))
    print(f"soak: {a.seconds:.0f} s, split {split}, mix {MIX}, a timed candidate every {a.time_every} "
          f"(Session phases), {a.clients} serve clients, target {a.target or 'none'}")
    refs = one_shot(a.kerncap, a.capture, a.cands)
    ok = refs["correct"] == ("PASS", False) and refs["wrong"][0] == "FAIL" and refs["nan"][0] == "FAIL" \
        and refs["fault"] == ("FAIL", True)
    if not ok:
        print("FAIL one-shot references are not PASS/FAIL/FAIL/FAIL(fault):", refs)
    t_end = time.monotonic() + a.seconds
    todo = [p for p in PHASES if split.get(p, 0) > 0]
    phases, done = [], 0

    def begin(name, title):
        """The phase's share of the time and of the candidates left (what earlier phases did not use)."""
        left = sum(split[p] for p in todo[todo.index(name):])
        share = split[name] / left
        quota = None if a.target is None else max(1, round((a.target - done) * share))
        ph = Phase(title, max(0.0, t_end - time.monotonic()) * share, quota)
        phases.append(ph)
        return ph

    def end(ph):
        nonlocal done
        ph.secs = time.monotonic() - ph.t0
        done += ph.n

    seed = a.seed
    if "session" in todo or "faults" in todo:
        with engine.Session(a.capture) as s:
            if "session" in todo:
                ph = begin("session", f"Session, in process (mix {MIX})")
                session_phase(ph, s, a.cands, refs, Kinds(MIX, 0, seed), a.time_every, 25, True)
                end(ph)
            if "faults" in todo:
                ph = begin("faults", "Session with a faulting candidate every 25th (serve child after the first fault)")
                session_phase(ph, s, a.cands, refs, Kinds(MIX, 25, seed + 1), a.time_every, 10, False)
                end(ph)
    if "serve" in todo:
        ph = begin("serve", f"kerncap serve, {a.clients} concurrent validate clients (a fault every 40th)")
        serve_phase(ph, a.kerncap, a.capture, a.cands, refs, a.clients, seed + 2, 10)
        end(ph)
    if "pool" in todo:
        ph = begin("pool", f"evaluate_all (the pool: a worker and its spare, a fault every 50th, "
                           f"{'every candidate' if a.time_every == 1 else 'none'} timed)")
        pool_phase(ph, a.capture, a.cands, refs, Kinds(MIX, 50, seed + 3), a.time_every, 2.0)
        end(ph)
    results = [p.report() for p in phases]
    total = sum(p.n for p in phases)
    bad = sum(len(p.mismatch) for p in phases)
    target = "" if a.target is None else f"; target {a.target}: {'reached' if total >= a.target else 'missed'}"
    print(f"\nsoak: {total} evaluations in {sum(p.secs for p in phases):.0f} s, {bad} verdicts differing from "
          f"one-shot validate{target}; {'PASS' if ok and all(results) else 'FAIL'}")
    return 0 if ok and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

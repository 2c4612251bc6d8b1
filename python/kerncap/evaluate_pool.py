"""Many candidates across every GPU of a host: one worker process per GPU, each with one open
engine Session, fed from one queue; results stream back in completion order.

    from kerncap.evaluate_pool import evaluate_many
    for r in evaluate_many("iso/k0", paths, devices="all", time_limit=30, time=True):
        print(r["index"], r["device"], r["result"], r["line"])

Rules this module keeps (docs/evaluate.md):
- One judge. A worker calls `Session.evaluate` (or, in tests, the judge the `judge=` seam
  names); nothing here compares, times or decides a verdict.
- One process per GPU, started with the 'spawn' context, its device chosen through
  CUDA_VISIBLE_DEVICES before CUDA starts in it: a faulting candidate or a sticky CUDA error
  costs that one process, never the others.
- Exactly once. The parent hands each worker candidates over the worker's own pipe (the one
  it judges and, pipelined, the next) and knows which candidates every worker holds, so a
  worker killed at the time limit or dead by itself has the candidate it was judging
  reported once (`result` FAIL "timed out after N s", or ERROR "worker died"), then is
  restarted; the next one, never started, goes back to the queue. Nothing is retried,
  nothing reported twice.
  (Per-worker pipes, not one shared queue between processes: a process killed while holding
  a multiprocessing.Queue's lock would block every other worker.)
- Timings are only ever the judge's, within one session: `timed_on` names the device.
"""
from __future__ import annotations

import collections
import collections.abc
import importlib
import math
import multiprocessing
import multiprocessing.connection
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from . import capture, engine
from .record_stream import RecordStream

if TYPE_CHECKING:
    from .evaluate_regimes import RegimeSetRun

# The judge a worker opens: "module:callable" (importable in a fresh interpreter) or a
# top-level callable; called as judge(path, **open_options) in the worker, it returns an object
# with evaluate(image, name=None, **options) -> verdict dict, close(), and optionally
# `device_name` and `context_lost` (the process must be replaced after this verdict).
DEFAULT_JUDGE = "kerncap.evaluate_pool:open_engine_judge"
JudgeSpec = Union[str, Callable[..., Any]]
Devices = Union[None, str, int, Sequence[int]]

# How long a worker may take to open its session (reserve, map, restore a capture) before its
# device is given up; large captures restore GiBs.
OPEN_TIMEOUT_S = 900.0
# How long a slot waits for a worker it ended (killed at the time limit, or lost its context)
# to be gone before judging again with its spare: a hung kernel holds the GPU until then.
DRAIN_TIMEOUT_S = 30.0
# Spare workers per GPU at most (each holds a context and a copy of the capture's memory).
MAX_SPARES = 4
# spares="auto" (the default) starts with one spare per GPU and adds one, up to MAX_SPARES,
# each time a take-over finds no spare open yet (candidates fault faster than a worker opens:
# measured on an H200, faults every ~0.5 s against ~1.2 s to open). Every spare holds its own
# context and a copy of the capture on the GPU, so it grows only for captures up to this size.
AUTO_SPARES_MAX_BYTES = 1 << 30
# spares="auto": spares opened from the start, beside the first worker, for a capture up to
# AUTO_SPARES_MAX_BYTES (a larger one starts with one). Three: when candidates fault often
# (measured on an H200: a fault every ~0.5 s, ~1.2 s for a worker to open), the take-overs
# until the spares the first take-over started have opened find these open; from the first
# take-over on, its rate says how many to keep (HostPool._grow_spares).
AUTO_SPARES_START = 3
# Candidates a worker holds at once: the one it judges and the next, already in its pipe, so
# it starts the next the moment it sends a verdict instead of waiting for the parent to read
# the verdict, write its record and hand out another. 1: one at a time.
PIPELINE_DEPTH = 2
# Only candidates this small wait in a worker's pipe (a path, or bytes up to this size): the
# pipe's buffer (64 KiB on Linux) takes them without blocking the parent, which must stay free
# to enforce time limits while that worker judges. A larger image is handed to an idle worker.
PIPELINE_MAX_BYTES = 16 << 10
# In a worker: the GPU's name as the pool already knew it (from the GPU's first worker), so that
# a spare or a restarted worker does not ask nvidia-smi again (a process that queries every GPU
# through the driver while the other worker times its candidates). None: ask; "": do not ask, the
# pool takes the name from the GPU's first worker (a spare opening beside it).
_known_device_name: Optional[str] = None
IMAGE_SUFFIXES = (".cubin", ".fatbin", ".ptx")


# ---------------------------------------------------------------- the real judge (in a worker)

class _PoolSession(engine.Session):
    """engine.Session, except that a verdict that cost this process its CUDA context does not
    move the session to a `kerncap serve` child (one per capture directory: the pool's other
    workers would collide on it); the pool replaces the whole worker process instead."""

    context_lost = False

    def _after(self, doc: Dict[str, Any]) -> Dict[str, Any]:
        if doc.get("context_lost"):
            self.context_lost = True
        return doc


def _ask_device_name() -> Optional["subprocess.Popen[str]"]:
    """nvidia-smi asked for the name of the GPU this worker sees first, not waited for (it runs
    while the session opens); None without nvidia-smi."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    cmd = ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"] + (["-i", visible] if visible else [])
    try:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None


def _device_name(asked: Optional["subprocess.Popen[str]"]) -> Optional[str]:
    """_ask_device_name's answer (None when it has none)."""
    if asked is None:
        return None
    try:
        out, _ = asked.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        asked.kill()
        asked.communicate()
        return None
    lines = out.strip().splitlines()
    return lines[0].strip() if asked.returncode == 0 and lines else None


class EngineJudge:
    """The one judge: an open engine Session on this process's device. Opened with prepare=True
    (the SASS's types and CUPTI loaded before the first candidate, so a spare that takes over
    has nothing left to do on its first one); the pool passes recover=False when it keeps
    spares (a lost context is replaced by the spare, not recovered in the process)."""

    def __init__(self, path: str, **open_options: Any):
        known = _known_device_name
        asked = None if known is not None else _ask_device_name()
        try:
            self.session = _PoolSession(path, **{"prepare": True, **open_options})
        finally:
            self.device_name = known or _device_name(asked)  # "": the pool has it from the first worker

    exit_after_close = True  # see _worker_main

    @property
    def context_lost(self) -> bool:
        return self.session.context_lost

    def evaluate(self, image: engine.ImageArg, name: Optional[str] = None, **options: Any) -> Dict[str, Any]:
        return self.session.evaluate(image, name=name, **options)

    def close(self) -> None:
        self.session.close()


def open_engine_judge(path: str, **open_options: Any) -> EngineJudge:
    return EngineJudge(path, **open_options)


def resolve_judge(spec: JudgeSpec) -> Callable[..., Any]:
    if callable(spec):
        return spec
    module, _, name = str(spec).partition(":")
    if not module or not name:
        raise engine.EngineError(f"judge {spec!r}: expected MODULE:CALLABLE", engine.E_INPUT)
    return getattr(importlib.import_module(module), name)


# ---------------------------------------------------------------- records

def image_label(image: engine.ImageArg, index: int) -> str:
    if image is None:
        return "captured"
    if isinstance(image, (bytes, bytearray, memoryview)):
        return f"image bytes #{index}"
    return os.fspath(image)


def judged(doc: Dict[str, Any]) -> Dict[str, Any]:
    """The body of a record for a verdict the judge returned."""
    return {"result": doc.get("result"), "line": doc.get("line"), "error": None, "verdict": doc}


def failed(result: str, error: str, exit_code: Optional[int] = None) -> Dict[str, Any]:
    """The body of a record for a candidate the judge gave no verdict for."""
    body: Dict[str, Any] = {"result": result, "line": f"Result: {result} ({error})", "error": error, "verdict": None}
    if exit_code is not None:
        body["exit_code"] = exit_code
    return body


def judge_once(judge: Any, image: engine.ImageArg, name: Optional[str], options: Dict[str, Any]) -> Dict[str, Any]:
    """One candidate through the judge: its verdict, or ERROR for an image it refused."""
    try:
        return judged(judge.evaluate(image, name=name, **options))
    except engine.EngineError as e:
        return failed("ERROR", str(e), e.exit_code)
    except Exception as e:  # a judge's bug must not take the worker's other candidates with it
        return failed("ERROR", f"{type(e).__name__}: {e}", engine.E_INTERNAL)


def make_record(index: int, label: str, device: Optional[int], device_name: Optional[str], pid: Optional[int],
                seconds: float, body: Dict[str, Any]) -> Dict[str, Any]:
    verdict = body.get("verdict") or {}
    if device is None and isinstance(verdict.get("device"), int):
        device = verdict["device"]
    rec = {"index": index, "image": label, "result": body["result"], "line": body.get("line"),
           "error": body.get("error"), "device": device, "device_name": device_name, "worker_pid": pid,
           "seconds": round(seconds, 6),
           # The judge's call inside the worker (the rest of `seconds`: the pipe, both ways).
           "judge_seconds": round(body["judge_seconds"], 6) if "judge_seconds" in body else None,
           # Speed-ups and times are the judge's, measured in this one session on this device.
           "timed_on": device if verdict.get("timing") else None}
    if "exit_code" in body:
        rec["exit_code"] = body["exit_code"]
    rec["verdict"] = body.get("verdict")
    return rec


# ---------------------------------------------------------------- devices

def visible_devices() -> Optional[List[str]]:
    v = os.environ.get("CUDA_VISIBLE_DEVICES")
    if v is None:
        return None
    return [d.strip() for d in v.split(",") if d.strip()]


def count_gpus() -> int:
    visible = visible_devices()
    if visible is not None:
        return len(visible)
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise engine.EngineError(f"cannot count the GPUs (nvidia-smi: {e}): name them (devices=[0, 1], --gpus 0,1)",
                                 engine.E_DEVICE) from None
    n = len(out.stdout.split()) if out.returncode == 0 else 0
    if n == 0:
        raise engine.EngineError(f"no GPU found (nvidia-smi exit {out.returncode}: {out.stderr.strip()[:200]})",
                                 engine.E_DEVICE)
    return n


def resolve_devices(devices: Devices) -> List[Optional[int]]:
    """None or "all": every GPU; "0,1" or [0, 1]: those (CUDA's numbering after CUDA_VISIBLE_DEVICES)."""
    if devices is None or devices == "all":
        return list(range(count_gpus()))
    if isinstance(devices, int):
        devices = [devices]
    if isinstance(devices, str):
        try:
            devices = [int(d) for d in devices.split(",") if d.strip()]
        except ValueError:
            raise engine.EngineError(f"devices {devices!r}: expected 'all' or numbers such as 0,1", engine.E_INPUT) \
                from None
    out = [int(d) for d in devices]
    if not out or len(set(out)) != len(out) or min(out) < 0:
        raise engine.EngineError(f"devices {list(devices)}: name each GPU once (0, 1, ...)", engine.E_INPUT)
    visible = visible_devices()
    if visible is not None and max(out) >= len(visible):
        raise engine.EngineError(f"device {max(out)}: CUDA_VISIBLE_DEVICES shows {len(visible)}", engine.E_INPUT)
    return out


def device_environment(device: Optional[int]) -> Dict[str, str]:
    """What a worker for `device` sets before CUDA starts in it: that one GPU visible."""
    if device is None:
        return {}
    visible = visible_devices()
    if visible is not None:
        return {"CUDA_VISIBLE_DEVICES": visible[device]}
    env = {"CUDA_VISIBLE_DEVICES": str(device)}
    if "CUDA_DEVICE_ORDER" not in os.environ:  # the numbering nvidia-smi (and --gpus) uses
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    return env


def expand_images(items: Iterable[Union[str, "os.PathLike[str]"]]) -> List[str]:
    """Files as given; a directory: its *.cubin, *.fatbin and *.ptx files, sorted by name."""
    out: List[str] = []
    for item in items:
        p = os.fspath(item)
        if os.path.isdir(p):
            found = sorted(f for f in os.listdir(p) if f.endswith(IMAGE_SUFFIXES))
            if not found:
                raise engine.EngineError(f"{p}: no {', '.join(IMAGE_SUFFIXES)} files in this directory", engine.E_INPUT)
            out += [os.path.join(p, f) for f in found]
        elif os.path.isfile(p):
            out.append(p)
        else:
            raise engine.EngineError(f"{p}: no such file or directory", engine.E_INPUT)
    return out


# ---------------------------------------------------------------- the worker process

def _worker_main(conn: Any, path: str, env: Dict[str, str], judge_spec: JudgeSpec, open_options: Dict[str, Any],
                 options: Dict[str, Any], device_name: Optional[str] = None) -> None:
    """A worker: its GPU chosen before CUDA starts, one judge opened, then candidates one at a
    time from its pipe until told to stop. Messages: ("ready", pid, device_name),
    ("open_failed", message, exit_code), ("result", index, body)."""
    global _known_device_name
    os.environ.update(env)
    _known_device_name = device_name
    try:
        judge = resolve_judge(judge_spec)(path, **open_options)
    except engine.EngineError as e:
        conn.send(("open_failed", str(e), e.exit_code))
        return
    except Exception as e:
        conn.send(("open_failed", f"{type(e).__name__}: {e}", engine.E_INTERNAL))
        return
    conn.send(("ready", os.getpid(), getattr(judge, "device_name", None)))
    try:
        while True:
            msg = conn.recv()
            if msg[0] != "eval":
                break
            _, index, image, name = msg
            t0 = time.monotonic()
            body = judge_once(judge, image, name, options)
            body["judge_seconds"] = time.monotonic() - t0
            conn.send(("result", index, body))
            if getattr(judge, "context_lost", False):
                return  # the parent starts a fresh process on this GPU
    except (EOFError, KeyboardInterrupt):
        pass
    finally:
        try:
            judge.close()
        except Exception:
            pass
        if getattr(judge, "exit_after_close", False):
            # The engine's session is all this process holds: once it is closed, nothing is
            # left to finalize, and the interpreter's teardown and the libraries' exit
            # handlers (CUPTI's, the driver's) would only add to the time the pool waits for
            # its workers at the end (and a lost context's process to its exit).
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)


def capture_bytes(path: str) -> Optional[int]:
    """The capture's memory (every region's size) as the engine reads its manifest; None when
    it cannot be read here (the workers will say why)."""
    try:
        return sum(r.size for r in capture.load(path).regions)
    except engine.EngineError:
        return None


class Slot:
    """One worker process on one device, and what the parent knows of it: its pipe, whether
    it is ready, and the candidates it holds, in the order it judges them (`busy`: the one it
    judges now, as (index, label, start time); then at most PIPELINE_DEPTH - 1 waiting in its
    pipe, not started)."""

    def __init__(self, ctx: Any, path: str, device: Optional[int], judge: JudgeSpec,
                 open_options: Dict[str, Any], options: Dict[str, Any]):
        self.ctx, self.path, self.device, self.judge = ctx, path, device, judge
        self.open_options, self.options = open_options, options
        self.proc: Any = None
        self.conn: Any = None
        self.pid: Optional[int] = None
        self.device_name: Optional[str] = None
        self.ready = False
        # [index, label, image, start]: start is set when the worker begins it (handed out to an
        # idle worker, or the verdict before it arrived)
        self.held: Deque[List[Any]] = collections.deque()
        self.broken = False  # a hand-out found its pipe broken: the worker is going
        self.started_at = 0.0
        self.restarts = 0

    def start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker_main, name=f"kerncap-evaluate-{self.device}", daemon=True,
                                     args=(child, self.path, device_environment(self.device), self.judge,
                                           self.open_options, self.options, self.device_name))
        self.proc.start()
        child.close()
        self.conn, self.ready, self.pid = parent, False, self.proc.pid
        self.held, self.broken = collections.deque(), False
        self.started_at = time.monotonic()

    @property
    def busy(self) -> Optional[Tuple[int, str, float]]:
        """The candidate the worker judges now: (index, label, start time), or None."""
        if not self.held:
            return None
        index, label, _, start = self.held[0]
        return index, label, start

    def can_take(self, image: engine.ImageArg, depth: int) -> bool:
        """Whether the worker can be handed `image` now, holding fewer than `depth` candidates:
        only an idle worker takes an image too large to wait in its pipe."""
        if not self.ready or self.broken or len(self.held) >= depth:
            return False
        return not self.held or not isinstance(image, (bytes, bytearray, memoryview)) or \
            len(image) <= PIPELINE_MAX_BYTES

    def assign(self, index: int, image: engine.ImageArg, label: str) -> bool:
        """Hands the candidate over; False when the worker's pipe is broken (it is gone: the
        caller keeps the candidate, and the process's end is seen through its sentinel)."""
        name = label if isinstance(image, (bytes, bytearray, memoryview)) else None
        if isinstance(image, (bytearray, memoryview)):
            image = bytes(image)
        try:
            self.conn.send(("eval", index, None if image is None else (image if isinstance(image, bytes)
                                                                       else os.fspath(image)), name))
        except OSError:
            self.broken = True
            return False
        self.held.append([index, label, image, None if self.held else time.monotonic()])
        return True

    def take_unbegun(self) -> List[Tuple[int, engine.ImageArg]]:
        """For a worker being replaced once the candidate it judged is reported: what it still
        holds, handed out behind that one and never begun: (index, image), in order, for the
        queue again."""
        unbegun = [(index, image) for index, _, image, _ in self.held]
        self.held.clear()
        return unbegun

    def receive(self) -> Optional[tuple]:
        """The next message, or None when the pipe broke (the process is gone or going)."""
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            return None

    def detach(self) -> Any:
        """Kills the process without waiting for it to end (the caller waits on its sentinel)
        and forgets it; the process object, or None."""
        proc, self.proc, self.ready = self.proc, None, False
        if proc is None:
            return None
        if proc.is_alive():
            proc.kill()
        self.conn.close()
        return proc

    def adopt(self, other: "Slot") -> None:
        """Takes over `other`'s process (a spare, open or still opening); `other` is left empty."""
        self.proc, self.conn, self.pid = other.proc, other.conn, other.pid
        self.device_name = other.device_name or self.device_name
        self.ready, self.started_at, self.held = other.ready, other.started_at, collections.deque()
        self.broken = other.broken
        other.proc, other.ready = None, False

    def kill(self) -> Optional[int]:
        """Ends the process (killed if it still runs); its exit code."""
        if self.proc is None:
            return None
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(30)
        self.conn.close()
        code = self.proc.exitcode
        self.proc, self.ready = None, False
        return code

    def request_stop(self) -> None:
        """Tells the worker to close its session and end (stop() waits for it)."""
        if self.proc is None:
            return
        try:
            self.conn.send(("stop",))
        except (OSError, ValueError):
            pass

    def stop(self) -> None:
        if self.proc is None:
            return
        self.request_stop()
        self.proc.join(10)
        self.kill()

    def record(self, seconds: float, body: Dict[str, Any]) -> Dict[str, Any]:
        assert self.held
        index, label, _, _ = self.held.popleft()
        if self.held:  # the worker begins the next one as it sends this verdict
            self.held[0][3] = time.monotonic()
        return make_record(index, label, self.device, self.device_name, self.pid, seconds, body)

    def run(self, index: int, image: engine.ImageArg, label: str, time_limit: Optional[float]) -> Dict[str, Any]:
        """One candidate, synchronously (the cluster path's per-task call): starts the worker when
        needed, waits at most time_limit for the verdict, replaces the worker after a hang or a
        death. Raises EngineError when the worker cannot open the capture."""
        if self.proc is None:
            self.start()
        while not self.ready:
            if not self.conn.poll(OPEN_TIMEOUT_S):
                self.kill()
                raise engine.EngineError(f"the evaluation worker did not open {self.path} in {OPEN_TIMEOUT_S:.0f} s",
                                         engine.E_DEVICE)
            msg = self.receive()
            if msg is None or msg[0] == "open_failed":
                code = self.kill()
                text = msg[1] if msg else f"the evaluation worker exited {code} while opening {self.path}"
                raise engine.EngineError(text, msg[2] if msg else engine.E_DEVICE)
            _, self.pid, self.device_name = msg
            self.ready = True
        if not self.assign(index, image, label):  # the worker ended while idle: never delivered
            self.kill()
            self.restarts += 1
            return self.run(index, image, label, time_limit)
        start = time.monotonic()
        if not self.conn.poll(time_limit):
            self.kill()
            self.restarts += 1
            return self.record(time.monotonic() - start, failed("FAIL", f"timed out after {time_limit:g} s"))
        msg = self.receive()
        if msg is None:
            code = self.kill()
            self.restarts += 1
            return self.record(time.monotonic() - start, failed("ERROR", died(code)))
        rec = self.record(time.monotonic() - start, msg[2])
        if not self.proc.is_alive() or (rec["verdict"] or {}).get("context_lost"):
            self.proc.join(30)
            self.kill()
            self.restarts += 1
        return rec


def died(code: Optional[int]) -> str:
    how = f"signal {-code}" if code is not None and code < 0 else f"exit {code}"
    return f"the worker process died ({how}) while evaluating this candidate"


# ---------------------------------------------------------------- the host pool

class HostPool(RecordStream):
    """Iterates over the records of `images` judged on `devices` (see evaluate_many). `stats`
    holds, once iteration ends: candidates, per-device evaluated counts and restarts, seconds,
    and where the devices' time went (`profile`)."""

    def __init__(self, path: str, images: Iterable[engine.ImageArg], devices: Sequence[Optional[int]],
                 time_limit: Optional[float] = None, judge: JudgeSpec = DEFAULT_JUDGE,
                 open_options: Optional[Dict[str, Any]] = None, progress: Optional[Callable[[Dict[str, Any]], None]]
                 = None, spares: Union[int, str] = "auto", **options: Any):
        if time_limit is not None and time_limit <= 0:
            raise engine.EngineError(f"time_limit {time_limit}: must be positive", engine.E_INPUT)
        self.auto_spares = spares == "auto"
        if self.auto_spares:
            spares = 1  # AUTO_SPARES_START once the capture's size is known (_run)
        if isinstance(spares, bool) or not isinstance(spares, int) or not 0 <= spares <= MAX_SPARES:
            raise engine.EngineError(f"spares {spares}: 0 to {MAX_SPARES} per GPU, or \"auto\"", engine.E_INPUT)
        self.path, self.images, self.time_limit, self.progress = path, images, time_limit, progress
        self.ctx = multiprocessing.get_context("spawn")
        self.open_options = dict(open_options or {})
        if spares and "recover" not in self.open_options:
            # A context a fault broke is not recovered in the worker (a device reset and a second
            # open, which the H200's driver refuses anyway): the spare takes over at once.
            self.open_options["recover"] = False
        self.judge, self.options, self.spares = judge, options, spares
        self.spare_target: Dict[int, int] = {}  # per slot, when "auto" has grown it past `spares`
        self.auto_may_grow: Optional[bool] = None  # decided at the start (the capture's size)
        # per slot: when its worker last had to be replaced (or first opened), and how often
        self.last_takeover: Dict[int, float] = {}
        self.takeovers: Dict[int, int] = {}
        # candidates pulled from `images` and not handed out yet, or handed back by a worker
        # replaced before it began them
        self.pending: Deque[Tuple[int, engine.ImageArg]] = collections.deque()
        self.source = iter(enumerate(images))  # pulled lazily, as workers can take candidates
        self.total: Optional[int] = len(images) if isinstance(images, collections.abc.Sized) else None
        self.t0 = time.monotonic()
        self.exhausted = False
        self.slots = [Slot(self.ctx, path, d, judge, self.open_options, options) for d in devices]
        # Per slot: its spares (more workers on the same GPU with the capture open, idle until
        # the slot's worker is replaced; oldest first), the ended worker whose exit the slot
        # waits for before judging again (a hung kernel holds its GPU until its process is gone),
        # whether spares failed to open there, and since when the slot has had no worker to
        # judge with.
        self.spare: Dict[int, List[Slot]] = {}
        self.draining: Dict[int, Tuple[Any, float]] = {}
        self.no_spare: set = set()
        self.blocked_since: Dict[int, float] = {}
        self.zombies: List[Any] = []  # ended workers nobody waits for: reaped as they go, and at the end
        self.stats: Dict[str, Any] = {"candidates": 0, "devices": {}, "restarts": 0, "seconds": 0.0,
                                      "profile": {"startup_s": {}, "restart_wait_s": 0.0, "busy_s": 0.0,
                                                  "spare_takeovers": 0, "spare_failures": 0, "drains": 0,
                                                  "open_s": []}}
        self._it = self._run()

    def _start_spare(self, i: int) -> None:
        """Tops slot i's spares up to `spares` (each opens while the slot's worker judges)."""
        if not self.spares or i in self.no_spare:
            return
        have = self.spare.setdefault(i, [])
        if have and len(have) < self.spare_target.get(i, self.spares) and self._ending():
            # one more could not open before the last candidate: it would only be killed
            self.stats["profile"].setdefault("spares_ending_s", round(time.monotonic() - self.t0, 3))
            return
        while len(have) < self.spare_target.get(i, self.spares):
            sp = Slot(self.ctx, self.path, self.slots[i].device, self.judge, self.open_options, self.options)
            # the GPU's name as its first worker found it ("" before that: that worker asks)
            sp.device_name = self.slots[i].device_name or ""
            sp.start()
            have.append(sp)

    def _ending(self) -> bool:
        """Whether the candidates left (of a sized `images`) will all be judged, at the rate
        since every GPU's worker opened, before a worker started now could open (the median
        open time so far)."""
        prof, left = self.stats["profile"], None
        if self.total is not None:
            left = self.total - self.stats["candidates"]
        opens, since, counted = prof["open_s"], prof.get("steady_from_s"), prof.get("steady_count", 0)
        if left is None or not opens or since is None or counted < 20:
            return False
        rate = counted / max(time.monotonic() - self.t0 - since, 1e-6)
        return left / rate < sorted(opens)[len(opens) // 2]

    def _decide_auto(self) -> None:
        """spares="auto": whether this capture is small enough for more than one spare per GPU
        (each holds a copy of it on the GPU), and then how many open from the start."""
        if self.auto_spares and self.auto_may_grow is None:
            size = capture_bytes(self.path)
            self.auto_may_grow = size is not None and size <= AUTO_SPARES_MAX_BYTES
            if self.auto_may_grow:  # no more than there are candidates that could need them
                self.spares = max(1, min(AUTO_SPARES_START, self.total if self.total is not None else MAX_SPARES))

    def _grow_spares(self, i: int, waited: bool) -> None:
        """spares="auto", at a take-over on slot i: keep as many spares as take-overs come while
        one worker opens (the median open time over the time since the slot's previous
        take-over, or since its first worker opened), and at least one more when this take-over
        found no spare open yet (waited); never fewer than before, at most MAX_SPARES."""
        now = time.monotonic()
        previous = self.last_takeover.get(i)
        self.last_takeover[i] = now
        self.takeovers[i] = self.takeovers.get(i, 0) + 1
        if not self.auto_spares or not self.auto_may_grow:
            return
        have = self.spare_target.get(i, self.spares)
        want = have + 1 if waited else have
        opens = self.stats["profile"]["open_s"]
        if previous is not None and opens:
            open_s = sorted(opens)[len(opens) // 2]
            want = max(want, math.ceil(open_s / max(now - previous, 1e-3)))
        want = min(want, MAX_SPARES)
        if want > have:
            self.spare_target[i] = want
            self.stats["profile"]["spares_grown"] = self.stats["profile"].get("spares_grown", 0) + want - have
            why = "a take-over waited for a spare still opening" if waited and want == have + 1 else \
                "take-overs come faster than a worker opens"
            self._event(event="spares", device=self.slots[i].device, reason=f"{why}: {want} spares kept open")

    def _take_spare(self, i: int) -> Optional[Slot]:
        """Slot i's spare that takes over: an open one, else the one that started opening first."""
        have = [sp for sp in self.spare.get(i, []) if sp.proc is not None]
        if not have:
            return None
        pick = next((sp for sp in have if sp.ready), have[0])
        self.spare[i].remove(pick)
        return pick

    def _opened(self, s: Slot) -> None:
        self.stats["profile"]["open_s"].append(round(time.monotonic() - s.started_at, 4))

    def _restart(self, slot: Slot, reason: str, drain: bool = False) -> None:
        """Replaces slot's worker (its spare takes over when there is one). drain: the ended
        worker may still run a kernel (killed at the time limit): the slot judges again only
        once that process is gone. A worker that lost its context or died runs nothing more."""
        i = self.slots.index(slot)
        proc = slot.detach()
        if proc is not None and drain:
            self.draining[i] = (proc, time.monotonic())
            self.stats["profile"]["drains"] += 1
        elif proc is not None:
            self.zombies.append(proc)
        slot.restarts += 1
        self.stats["restarts"] += 1
        per = self.stats.setdefault("restarts_by_device", {})
        per[str(slot.device)] = per.get(str(slot.device), 0) + 1
        self.blocked_since.setdefault(i, time.monotonic())
        # what it held behind the candidate just reported, it never began: back to the queue
        for item in reversed(slot.take_unbegun()):
            self.pending.appendleft(item)
        spare = self._take_spare(i)
        self._grow_spares(i, waited=spare is not None and not spare.ready)
        if spare is not None:
            slot.adopt(spare)
            self.stats["profile"]["spare_takeovers"] += 1
            self._event(event="restart", device=slot.device, reason=reason + " (its spare took over)")
        else:
            self._event(event="restart", device=slot.device, reason=reason)
            slot.start()
        self._start_spare(i)  # at once: the next take-over may come before this one opens

    def _hand_out(self, i: int, s: Slot, depth: int) -> None:
        """One candidate to slot i's worker when it can take it holding fewer than `depth`:
        the queue's first, else the next pulled from `images`."""
        if i in self.draining:
            return
        if not self.pending and not self.exhausted:
            nxt = next(self.source, None)
            if nxt is None:
                self.exhausted = True
            else:
                self.pending.append(nxt)
        if not self.pending or not s.can_take(self.pending[0][1], depth):
            return
        index, image = self.pending.popleft()
        if not s.assign(index, image, image_label(image, index)):
            self.pending.appendleft((index, image))
            return
        since = self.blocked_since.pop(i, None)
        if since is not None:
            self.stats["profile"]["restart_wait_s"] += time.monotonic() - since

    def _run(self) -> Iterator[Dict[str, Any]]:
        pending = self.pending
        live = list(self.slots)
        done, t0 = 0, time.monotonic()
        self.t0 = t0
        open_errors: List[str] = []
        prof = self.stats["profile"]
        for s in live:
            s.start()
        try:
            # The spares open beside the first workers (the first take-over may come a few
            # candidates in), once "auto" knows how many the capture's size allows.
            self._decide_auto()
            for i in range(len(self.slots)):
                self._start_spare(i)
            while True:
                # Hand out work, pulling candidates only as workers can take them: first one to
                # every idle worker, then one more to wait in each worker's pipe.
                for depth in range(1, PIPELINE_DEPTH + 1):
                    for s in live:
                        self._hand_out(self.slots.index(s), s, depth)
                if self.exhausted and not pending and all(not s.held for s in live):
                    break
                if not live:
                    raise engine.EngineError("no evaluation worker could open the capture: " + "; ".join(open_errors),
                                             engine.E_DEVICE)
                waitables: Dict[Any, Tuple[str, Slot]] = {}
                for s in live:
                    i = self.slots.index(s)
                    waitables[s.conn] = ("worker", s)
                    waitables[s.proc.sentinel] = ("worker", s)
                    for sp in self.spare.get(i, []):
                        if sp.proc is not None:
                            waitables[sp.conn] = ("spare", s)
                            waitables[sp.proc.sentinel] = ("spare", s)
                    if i in self.draining:
                        waitables[self.draining[i][0].sentinel] = ("drain", s)
                ready = multiprocessing.connection.wait(list(waitables), self._next_deadline(live))
                serviced: List[Tuple[str, Slot]] = []
                for w in ready:
                    if waitables[w] not in serviced:
                        serviced.append(waitables[w])
                for what, s in serviced:
                    i = self.slots.index(s)
                    if what == "drain":
                        self._drained(i)
                        continue
                    if what == "spare":
                        self._service_spare(i)
                        continue
                    if s not in live:
                        continue
                    rec, then = self._service(s, open_errors)
                    if then == "retire" and self._spare_opens_instead(i, s, open_errors[-1]):
                        pass
                    elif then == "retire":
                        self._event(event="device_failed", device=s.device, reason=open_errors[-1])
                        live.remove(s)
                        self._stop_spare(i)
                    elif then is not None:
                        self._restart(s, then)
                    elif s.ready:
                        prof["startup_s"].setdefault(i, time.monotonic() - t0)
                        self.last_takeover.setdefault(i, time.monotonic())
                        self._start_spare(i)
                    if rec is not None:
                        done += 1
                        yield self._count(rec, done, t0)
                self.zombies = [p for p in self.zombies if p.exitcode is None]  # exitcode reaps
                now = time.monotonic()
                for s in list(live):  # the time limit; a session that never opens; a slow exit
                    i = self.slots.index(s)
                    if s.busy is not None and self.time_limit is not None and now - s.busy[2] > self.time_limit:
                        rec = s.record(now - s.busy[2], failed("FAIL", f"timed out after {self.time_limit:g} s"))
                        self._restart(s, rec["error"], drain=True)
                        done += 1
                        yield self._count(rec, done, t0)
                    elif not s.ready and now - s.started_at > OPEN_TIMEOUT_S:
                        open_errors.append(f"device {s.device}: not open after {OPEN_TIMEOUT_S:.0f} s")
                        s.kill()
                        live.remove(s)
                        self._stop_spare(i)
                    if i in self.draining and now - self.draining[i][1] > DRAIN_TIMEOUT_S:
                        self._event(event="slow_exit", device=s.device,
                                    reason=f"an ended worker is still not gone after {DRAIN_TIMEOUT_S:.0f} s")
                        self._drained(i, wait=False)
        finally:
            # Every worker closes its session at once and every spare is killed at once; then
            # each is waited for.
            for s in self.slots:
                s.request_stop()
            for i in list(self.spare):
                for sp in self.spare.pop(i):
                    proc = sp.detach()
                    if proc is not None:
                        self.zombies.append(proc)
            for s in self.slots:
                s.stop()
            for i in list(self.draining):
                self._drained(i, wait=True)
            for proc in self.zombies:
                proc.join(30)
            self.zombies = []
            self.stats["seconds"] = time.monotonic() - t0

    def _drained(self, i: int, wait: bool = False) -> None:
        """The ended worker of slot i is gone (or no longer waited for): the slot judges again."""
        proc, _ = self.draining.pop(i)
        proc.join(30 if wait else 0)
        if proc.exitcode is None:  # still not gone: reaped at the end with the others
            self.zombies.append(proc)

    def _spare_opens_instead(self, i: int, s: Slot, why: str) -> bool:
        """Slot i's first worker could not open the capture while its spares open beside it:
        one of them (open, or opening) becomes the slot's worker; the GPU is given up only when
        none is left (usually they fail alike: no GPU, another architecture)."""
        spare = self._take_spare(i)
        if spare is None:
            return False
        s.adopt(spare)
        self._event(event="restart", device=s.device, reason=f"{why} (a spare opens instead)")
        return True

    def _stop_spare(self, i: int) -> None:
        for sp in self.spare.pop(i, []):
            sp.kill()  # it holds no candidate; it may still be opening

    def _service_spare(self, i: int) -> None:
        """One of slot i's spares signalled: it is open now, or it failed (no more spares are
        started on that GPU: the slot's worker is restarted the ordinary way when it must be)."""
        for sp in list(self.spare.get(i, [])):
            if sp.proc is None:
                continue
            msg = sp.receive() if sp.conn.poll() else None
            if msg is not None and msg[0] == "ready":
                _, sp.pid, sp.device_name = msg
                sp.ready = True
                self._opened(sp)
                continue
            if msg is None and sp.proc.is_alive():
                continue  # a spurious wake-up, or another spare's
            why = msg[1] if msg is not None and msg[0] == "open_failed" else "the spare worker ended while opening"
            self.spare[i].remove(sp)
            sp.kill()
            self.no_spare.add(i)
            self.stats["profile"]["spare_failures"] += 1
            self._event(event="spare_failed", device=self.slots[i].device, reason=why)

    def _next_deadline(self, live: List[Slot]) -> Optional[float]:
        now, waits = time.monotonic(), [OPEN_TIMEOUT_S]
        for s in live:
            i = self.slots.index(s)
            if s.busy is not None and self.time_limit is not None:
                waits.append(s.busy[2] + self.time_limit - now)
            elif not s.ready:
                waits.append(s.started_at + OPEN_TIMEOUT_S - now)
            if i in self.draining:
                waits.append(self.draining[i][1] + DRAIN_TIMEOUT_S - now)
        return max(0.0, min(waits)) + 0.01

    def _service(self, s: Slot, open_errors: List[str]) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
        """A slot whose pipe or process signalled: (a record, and "restart"/"retire"/None)."""
        msg = s.receive() if s.conn.poll() else None
        if msg is not None and msg[0] == "ready":
            _, s.pid, s.device_name = msg
            s.ready = True
            self._opened(s)
            return None, None
        if msg is not None and msg[0] == "open_failed":
            open_errors.append(f"device {s.device}: {msg[1]}")
            s.kill()
            return None, "retire"
        if msg is not None and msg[0] == "result" and s.busy is not None and s.busy[0] == msg[1]:
            rec = s.record(time.monotonic() - s.busy[2], msg[2])
            self.stats["profile"]["busy_s"] += rec["seconds"]
            if (rec["verdict"] or {}).get("context_lost"):
                return rec, "the candidate cost the worker its CUDA context"
            return rec, None
        if s.proc is not None and s.proc.is_alive() and msg is None and not s.conn.poll():
            return None, None  # a spurious wake-up
        # The process ended (or its pipe broke): its candidate, if any, is reported once.
        was_ready = s.ready
        code = s.kill()
        if not was_ready and s.busy is None:
            open_errors.append(f"device {s.device}: {died(code).replace(' while evaluating this candidate', '')}"
                               " while opening the capture")
            return None, "retire"
        if s.busy is not None:
            return s.record(time.monotonic() - s.busy[2], failed("ERROR", died(code))), died(code)
        return None, died(code).replace(" while evaluating this candidate", "")

    def _count(self, rec: Dict[str, Any], done: int, t0: float) -> Dict[str, Any]:
        self.stats["candidates"] += 1
        self.stats["last_result_s"] = elapsed = time.monotonic() - t0
        prof = self.stats["profile"]
        if "steady_from_s" in prof:  # every GPU had its worker open: the steady rate counts this one
            prof["steady_count"] += 1
        elif len(prof["startup_s"]) == len(self.slots):
            prof["steady_from_s"], prof["steady_count"] = elapsed, 0
        d = self.stats["devices"].setdefault(str(rec["device"]), {"evaluated": 0, "device_name": rec["device_name"]})
        d["evaluated"] += 1
        self._event(event="result", done=done, elapsed=time.monotonic() - t0, record=rec)
        return rec


def evaluate_many(path: str, images: Iterable[engine.ImageArg], devices: Devices = "all",
                  time_limit: Optional[float] = None, judge: JudgeSpec = DEFAULT_JUDGE,
                  progress: Optional[Callable[[Dict[str, Any]], None]] = None,
                  open_options: Optional[Dict[str, Any]] = None, spares: Union[int, str] = "auto",
                  **options: Any) -> Union[HostPool, "RegimeSetRun"]:
    """Judges every image (a path, bytes, or None for the captured image) on the GPUs named by
    `devices` ("all", [0, 1], "0,1"), one worker process and one engine Session per GPU, and
    returns an iterator of records in completion order: index, image, result, line, error,
    device, device_name, worker_pid, seconds, timed_on, verdict (Session.evaluate's document;
    None when the candidate timed out, killed its worker, or was refused: then `error`).
    options: Session.evaluate's keywords (time, fuzz, judge flags...); open_options: Session's
    (allow_relocate, strong, verify). judge: the seam tests replace ("module:callable").
    spares: N keeps N more workers per GPU with the capture open, which take over at once when
    a candidate hangs, faults or kills its worker (0: a new worker is started then, and the GPU
    waits for it to open the capture); "auto" (default) opens AUTO_SPARES_START (3) beside the
    first worker and keeps as many, up to MAX_SPARES, as take-overs come while a worker opens
    (for captures up to AUTO_SPARES_MAX_BYTES, as each spare holds a copy of the capture on the
    GPU; a larger capture keeps 1). Spares open beside the first workers, from the start.
    progress(event): {"event": "result", "done", "elapsed", "record"}, {"event": "restart",
    "device", "reason"}, {"event": "device_failed" | "spare_failed" | "slow_exit" | "spares", "device",
    "reason"}.

    A regime set (OUT/regimes.json, `extract KERNEL --regimes`): every candidate is judged on
    every captured regime, one regime at a time across all the GPUs, and one record per
    candidate comes back with the set's verdict (kerncap.evaluate_regimes: "verdict" is the
    document `kerncap validate OUT --cubin V --json` prints, "regimes" each regime's device and
    seconds); time_limit applies per candidate and regime."""
    return _evaluate_many(path, images, resolve_devices(devices), time_limit=time_limit, judge=judge,
                          progress=progress, open_options=open_options, spares=spares, **options)


def _evaluate_many(path: str, images: Iterable[engine.ImageArg], devices: List[Optional[int]],
                   time_limit: Optional[float], judge: JudgeSpec, progress: Optional[Callable[[Dict[str, Any]], None]],
                   open_options: Optional[Dict[str, Any]], spares: Union[int, str],
                   **options: Any) -> Union[HostPool, "RegimeSetRun"]:
    """evaluate_many on devices already resolved (engine.evaluate_all: None, the default GPU)."""
    from .evaluate_regimes import RegimeSetRun, is_regime_set
    if time_limit is not None and time_limit <= 0:  # before a regime set's passes begin
        raise engine.EngineError(f"time_limit {time_limit}: must be positive", engine.E_INPUT)
    if is_regime_set(path):
        def run(p: str, imgs: List[engine.ImageArg], opts: Dict[str, Any],
                prog: Optional[Callable[[Dict[str, Any]], None]]) -> HostPool:
            return HostPool(p, imgs, devices, time_limit=time_limit, judge=judge, open_options=open_options,
                            progress=prog, spares=spares, **opts)
        return RegimeSetRun(path, list(images), run, options, progress)
    return HostPool(path, images, devices, time_limit=time_limit, judge=judge, open_options=open_options,
                    progress=progress, spares=spares, **options)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("kerncap.evaluate_pool is a library; the command is `kerncap evaluate` (python -m kerncap.evaluate_cli)")

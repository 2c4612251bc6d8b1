"""Many candidates across hosts, on Dask (`pip install 'kerncap[cluster]'`):

    from dask.distributed import Client
    from kerncap.cluster import evaluate_on
    client = Client("scheduler:8786")        # one Dask worker per GPU, 1 thread each
    for r in evaluate_on(client, "iso/k0", paths, time_limit=30, time=True):
        print(r["index"], r["host"], r["device"], r["result"])

- The capture travels once per node: the client lists OUT's files (the chunk files are named
  by the hash of their bytes; other files are hashed here), each node says which it lacks
  (`client.run`), and only those are scattered to one worker of that node, which writes them
  under its cache directory (CACHE/<capture key>/...; chunks once in CACHE/chunks/ and
  hard-linked into every capture that uses them).
- Images travel as bytes, one Dask task per candidate (retries=0: a task is never run twice).
- Each Dask worker keeps, in a worker plugin, one evaluation worker process per (capture,
  device) — the same `evaluate_pool.Slot` the host pool uses, so the time limit, the restart
  after a hang or a dead worker and the records are the host pool's, and the verdicts the one
  judge's (Session.evaluate) in that process.
Dask, not Ray: docs/evaluate.md says why.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import tempfile
import threading
import uuid
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from . import engine
from .evaluate_pool import DEFAULT_JUDGE, JudgeSpec, Slot, failed, image_label, make_record

try:
    from distributed import WorkerPlugin, as_completed, get_worker
except ImportError:  # pragma: no cover - the optional extra
    WorkerPlugin = object  # type: ignore[misc,assignment]
    as_completed = get_worker = None  # type: ignore[assignment]

PLUGIN_NAME = "kerncap-evaluate"
CHUNKS = os.path.join("capture", "chunks")


def _need_dask() -> None:
    if get_worker is None:
        raise engine.EngineError("kerncap.cluster needs Dask: pip install 'kerncap[cluster]' "
                                 "(dask[distributed])", engine.E_INPUT)


def default_cache_dir() -> str:
    return os.path.join(tempfile.gettempdir(), f"kerncap-cluster-{os.getuid()}")


# ---------------------------------------------------------------- shipping the capture

def capture_root(path: str) -> str:
    p = os.path.abspath(path)
    return os.path.dirname(p) if os.path.basename(p) == "capture" and os.path.isfile(
        os.path.join(p, "manifest.json")) else p


def inventory(path: str) -> Tuple[str, List[Tuple[str, int, str]]]:
    """(capture key, [(relative path, size, digest)]) for every file of OUT. A chunk's digest is
    its name (XXH3-128 of its bytes; the engine checks each chunk against it on read)."""
    root = capture_root(path)
    manifest = os.path.join(root, "capture", "manifest.json")
    if not os.path.isfile(manifest):
        raise engine.EngineError(f"{path}: no capture/manifest.json (not a capture directory)", engine.E_INPUT)
    with open(manifest, "rb") as f:
        try:
            doc = json.load(f)
        except ValueError:
            raise engine.EngineError(f"{manifest}: not JSON", engine.E_INPUT) from None
    if isinstance(doc, dict) and isinstance(doc.get("chunk_store"), dict) and doc["chunk_store"].get("external"):
        raise engine.EngineError(f"{path}: its chunks are in a shared store (extract --store); the cluster path ships "
                                 "only captures that hold their chunks (extract without --store)", engine.E_INPUT)
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for n in sorted(names):
            full = os.path.join(d, n)
            if not os.path.isfile(full) or os.path.islink(full):
                continue
            rel = os.path.relpath(full, root)
            size = os.path.getsize(full)
            if os.path.dirname(rel) == CHUNKS:
                digest = n.split(".")[0]
            else:
                h = hashlib.sha256()
                with open(full, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
                digest = h.hexdigest()
            files.append((rel, size, digest))
    key = hashlib.sha256(json.dumps(files).encode()).hexdigest()[:24]
    return key, files


def _chunk_cache(cache_dir: str, rel: str) -> Optional[str]:
    return os.path.join(cache_dir, "chunks", os.path.basename(rel)) if os.path.dirname(rel) == CHUNKS else None


def _place(src: str, dst: str) -> None:
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    tmp = f"{dst}.{uuid.uuid4().hex}.tmp"
    try:
        os.link(src, tmp)
    except OSError:
        import shutil
        shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def node_missing(cache_dir: str, key: str, files: List[Tuple[str, int, str]]) -> Tuple[str, List[str]]:
    """On a worker: (host name, the files of this capture this node lacks). A chunk already in
    the node's chunk cache (another capture brought it) is linked into place, not reported."""
    base = os.path.join(cache_dir, key)
    missing = []
    for rel, size, _ in files:
        dst = os.path.join(base, rel)
        if os.path.isfile(dst) and os.path.getsize(dst) == size:
            continue
        cached = _chunk_cache(cache_dir, rel)
        if cached and os.path.isfile(cached) and os.path.getsize(cached) == size:
            _place(cached, dst)
            continue
        missing.append(rel)
    return socket.gethostname(), missing


def store_file(cache_dir: str, key: str, rel: str, data: bytes) -> int:
    """On a worker: one file of the capture written (to a temporary name, then renamed)."""
    dst = os.path.join(cache_dir, key, rel)
    target = _chunk_cache(cache_dir, rel) or dst
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, target)
    if target != dst:
        _place(target, dst)
    return len(data)


def ship_capture(client: Any, path: str, cache_dir: Optional[str] = None) -> Dict[str, Any]:
    """Puts OUT on every node of the cluster, sending each node only the files it lacks.
    Returns {"key", "cache_dir", "files", "nodes": {host: {"files_sent", "bytes_sent"}}}."""
    _need_dask()
    cache_dir = cache_dir or default_cache_dir()
    key, files = inventory(path)
    root = capture_root(path)
    answers = client.run(node_missing, cache_dir, key, files)
    by_host: Dict[str, Tuple[str, List[str]]] = {}
    for addr, (host, missing) in sorted(answers.items()):
        if host not in by_host or (missing and not by_host[host][1]):
            by_host[host] = (addr, missing)
    nodes: Dict[str, Dict[str, int]] = {}
    pending = []
    for host, (addr, missing) in by_host.items():
        nodes[host] = {"files_sent": len(missing), "bytes_sent": 0}
        for rel in missing:
            with open(os.path.join(root, rel), "rb") as f:
                data = f.read()
            nodes[host]["bytes_sent"] += len(data)
            blob = client.scatter(data, workers=[addr], hash=True)
            pending.append(client.submit(store_file, cache_dir, key, rel, blob, workers=[addr],
                                         allow_other_workers=False, pure=False, retries=0))
    client.gather(pending)
    still = {a: m for a, (_, m) in client.run(node_missing, cache_dir, key, files).items() if m}
    if still:
        raise engine.EngineError(f"the capture did not arrive on every worker (missing on {sorted(still)}): do workers "
                                 f"of one host name have different file systems at {cache_dir}?", engine.E_DEVICE)
    return {"key": key, "cache_dir": cache_dir, "files": len(files), "nodes": nodes}


# ---------------------------------------------------------------- the workers' evaluation processes

class EvaluatePlugin(WorkerPlugin):  # type: ignore[misc,valid-type]
    """On each Dask worker: the evaluation worker processes (evaluate_pool.Slot), one per
    device, each holding one Session of one capture with one set of options; a task for
    another capture or other options on that device replaces it."""

    name = PLUGIN_NAME

    slots: Dict[Any, Tuple[Any, Slot, threading.Lock]]
    lock: threading.Lock

    def setup(self, worker: Any) -> None:  # on the worker (the plugin travels pickled, without these)
        self.slots, self.lock = {}, threading.Lock()

    def teardown(self, worker: Any) -> None:
        for _, slot, _ in list(self.slots.values()):
            slot.stop()
        self.slots = {}

    def slot(self, path: str, device: Optional[int], judge: JudgeSpec, open_options: Dict[str, Any],
             options: Dict[str, Any]) -> Tuple[Slot, threading.Lock]:
        ident = (path, repr(judge), json.dumps(open_options, sort_keys=True), json.dumps(options, sort_keys=True))
        with self.lock:
            held = self.slots.get(device)
            if held is not None and held[0] != ident:
                held[1].stop()
                held = None
            if held is None:
                import multiprocessing
                slot = Slot(multiprocessing.get_context("spawn"), path, device, judge, open_options, options)
                held = (ident, slot, threading.Lock())
                self.slots[device] = held
            return held[1], held[2]


def _has_plugin(dask_worker: Any) -> bool:
    return PLUGIN_NAME in dask_worker.plugins


def evaluate_task(cache_dir: str, key: str, index: int, image: Optional[bytes], label: str, device: Optional[int],
                  judge: JudgeSpec, open_options: Dict[str, Any], options: Dict[str, Any],
                  time_limit: Optional[float]) -> Dict[str, Any]:
    """One candidate on this Dask worker's evaluation process for `device` (a Dask task)."""
    worker = get_worker()
    plugin = worker.plugins[PLUGIN_NAME]
    slot, lock = plugin.slot(os.path.join(cache_dir, key), device, judge, open_options, options)
    with lock:
        try:
            rec = slot.run(index, image, label, time_limit)
        except AssertionError as e:  # multiprocessing refuses children of a daemonic process
            raise engine.EngineError(f"this Dask worker cannot start the evaluation process ({e}): start workers with "
                                     "--no-nanny or the setting distributed.worker.daemon: False "
                                     "(DASK_DISTRIBUTED__WORKER__DAEMON=False)", engine.E_DEVICE) from None
    rec["host"] = socket.gethostname()
    rec["dask_worker"] = worker.address
    rec["worker_restarts"] = slot.restarts
    return rec


def evaluate_on(client: Any, path: str, images: Iterable[engine.ImageArg], time_limit: Optional[float] = None,
                judge: JudgeSpec = DEFAULT_JUDGE, device: Optional[int] = 0, cache_dir: Optional[str] = None,
                open_options: Optional[Dict[str, Any]] = None,
                progress: Optional[Callable[[Dict[str, Any]], None]] = None, **options: Any) -> Iterator[Dict[str, Any]]:
    """Judges every image (a path or bytes on this machine, or None: the captured image) on the
    Dask cluster behind `client`, yielding evaluate_many's records in completion order plus
    "host", "dask_worker" and "worker_restarts". device: the GPU of each Dask worker to use (0:
    the first it sees; run one Dask worker per GPU). options and open_options: as evaluate_many.
    A task the cluster loses (its Dask worker died) is reported once as ERROR.

    A regime set (OUT/regimes.json): each regime's capture is shipped and judged in turn, one
    record per candidate with the set's verdict (kerncap.evaluate_regimes, as evaluate_many)."""
    _need_dask()
    if time_limit is not None and time_limit <= 0:
        raise engine.EngineError(f"time_limit {time_limit}: must be positive", engine.E_INPUT)
    from .evaluate_regimes import RegimeSetRun, is_regime_set
    if is_regime_set(path):
        def run(p: str, imgs: List[engine.ImageArg], opts: Dict[str, Any],
                prog: Optional[Callable[[Dict[str, Any]], None]]) -> Iterator[Dict[str, Any]]:
            return _evaluate_on(client, p, imgs, time_limit, judge, device, cache_dir, open_options, prog, opts)
        return RegimeSetRun(path, list(images), run, options, progress)
    return _evaluate_on(client, path, images, time_limit, judge, device, cache_dir, open_options, progress, options)


def _evaluate_on(client: Any, path: str, images: Iterable[engine.ImageArg], time_limit: Optional[float],
                 judge: JudgeSpec, device: Optional[int], cache_dir: Optional[str],
                 open_options: Optional[Dict[str, Any]], progress: Optional[Callable[[Dict[str, Any]], None]],
                 options: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    shipped = ship_capture(client, path, cache_dir)
    cache_dir = shipped["cache_dir"]
    if not all(client.run(_has_plugin).values()):
        register = getattr(client, "register_plugin", None) or client.register_worker_plugin
        register(EvaluatePlugin(), name=PLUGIN_NAME)
    run = uuid.uuid4().hex[:12]
    futures: List[Any] = []
    where: Dict[Any, Tuple[int, str]] = {}
    for index, image in enumerate(images):
        label = image_label(image, index)
        if image is not None and not isinstance(image, (bytes, bytearray, memoryview)):
            with open(image, "rb") as f:
                image = f.read()
        elif image is not None:
            image = bytes(image)
        fut = client.submit(evaluate_task, cache_dir, shipped["key"], index, image, label, device, judge,
                            dict(open_options or {}), options, time_limit, key=f"kerncap-evaluate-{run}-{index}",
                            pure=False, retries=0)
        futures.append(fut)
        where[fut.key] = (index, label)
    done = 0
    for fut in as_completed(futures):
        index, label = where[fut.key]
        try:
            rec = fut.result()
        except Exception as e:
            rec = make_record(index, label, None, None, None, 0.0, failed("ERROR", f"the Dask task failed: {e}"))
        done += 1
        if progress is not None:
            progress({"event": "result", "done": done, "record": rec})
        yield rec


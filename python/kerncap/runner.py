"""Runs the `kerncap` CLI as a child process: stdout collected for its JSON, stderr read line by
line so that a long command (profile, extract, footprint, validate --fuzz) can report progress
while it runs, and a non-zero exit turned into the typed exception with the CLI's message."""
from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO, Callable, Dict, List, Optional, Sequence

from .errors import KerncapError, cli_message, error_for


@dataclass(frozen=True)
class Progress:
    """One progress report: seconds since the command started, a counter that only grows, and
    the CLI's latest stderr line (or a "still running" note when it has been quiet)."""

    step: int
    elapsed_s: float
    message: str


ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class Completed:
    argv: List[str]
    returncode: int
    stdout: str
    stderr: str


def _pump(stream: IO[str], sink: "queue.Queue[Optional[str]]") -> None:
    for line in iter(stream.readline, ""):
        sink.put(line)
    sink.put(None)


def run(argv: Sequence[str], *, ok: Sequence[int] = (0,), env: Optional[Dict[str, str]] = None,
        timeout: Optional[float] = None, on_progress: Optional[ProgressFn] = None, tick_s: float = 2.0) -> Completed:
    """Runs argv; returns its output when the exit code is in `ok`, else raises the error of
    that exit code (KerncapInputError, KerncapDeviceError, KerncapError) with the CLI's message.
    `on_progress` is called from this thread for every stderr line and after `tick_s` seconds
    without one."""
    argv = list(argv)
    start = time.monotonic()
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env, errors="replace")
    except OSError as e:
        raise KerncapError(f"cannot run {argv[0]}: {e.strerror}", 2, argv) from e
    out: List[str] = []
    reader = threading.Thread(target=lambda: out.append(p.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    lines: "queue.Queue[Optional[str]]" = queue.Queue()
    threading.Thread(target=_pump, args=(p.stderr, lines), daemon=True).start()
    err: List[str] = []
    step = 0
    verb = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv[:2]))
    def killed() -> KerncapError:
        p.kill()
        p.wait()
        return KerncapError(f"{verb} did not finish within {timeout:g} s (killed)", 124, argv, "".join(err))

    while True:
        elapsed = time.monotonic() - start
        if timeout is not None and elapsed > timeout:
            raise killed()
        wait = tick_s if timeout is None else max(0.05, min(tick_s, timeout - elapsed))
        try:
            line = lines.get(timeout=wait)
        except queue.Empty:
            step += 1
            if on_progress:
                on_progress(Progress(step, time.monotonic() - start, f"{verb}: running ({time.monotonic() - start:.0f} s)"))
            continue
        if line is None:
            break
        err.append(line)
        step += 1
        if on_progress and line.strip():
            on_progress(Progress(step, time.monotonic() - start, line.strip()))
    try:  # stderr is closed; the process may still be exiting
        rc = p.wait(timeout=None if timeout is None else max(0.1, timeout - (time.monotonic() - start)))
    except subprocess.TimeoutExpired:
        raise killed() from None
    reader.join()
    stderr = "".join(err)
    if rc not in ok:
        raise error_for(rc, cli_message(stderr, rc), argv, stderr)
    return Completed(argv, rc, out[0] if out else "", stderr)

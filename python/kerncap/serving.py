"""A `kerncap serve DIR` in the background, for an edit loop or an agent that validates many
variants of one capture: each `kerncap validate DIR [--cubin V]` (and so Kerncap.validate and
the MCP server's validate) is then answered by the server's open session instead of a process
that starts the driver and restores the capture (about 0.6 s saved a validation on an H100).

Kerncap.serve starts one and returns when it answers; whether it answers is asked with
`kerncap serve DIR --status --json` (a versioned document), never read from its printed lines.
The server's output goes to a temporary log file (a pipe nobody reads would stop it once
full), removed when the server is stopped here unless stop(keep_log=True)."""
from __future__ import annotations

import os
import subprocess
import tempfile
import time
from typing import TYPE_CHECKING, List, Optional

from .errors import KerncapError, cli_message, error_for
from .results import ServeStatus

if TYPE_CHECKING:  # pragma: no cover
    from .api import Kerncap


def _tail(path: Optional[str], limit: int = 4000) -> str:
    if not path:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


class Server:
    """One directory's `kerncap serve`. owned: started by this object (stop() ends it); a server
    that was already running is used, not owned, and stop() leaves it alone unless force=True.
    Usable as a context manager (stops on exit)."""

    def __init__(self, kc: "Kerncap", dir: str, status: ServeStatus, proc: Optional[subprocess.Popen] = None,
                 log_path: Optional[str] = None):
        self.kc, self.dir, self.proc, self.log_path = kc, dir, proc, log_path
        self.started = status

    @property
    def owned(self) -> bool:
        return self.proc is not None

    @property
    def pid(self) -> Optional[int]:
        return self.started.pid

    def status(self) -> ServeStatus:
        """Whether it still answers, and what it has served (`kerncap serve DIR --status --json`)."""
        return self.kc.serve_status(self.dir)

    def log(self) -> str:
        """The end of the server's output (its evaluations, one line each), when started here."""
        return _tail(self.log_path)

    def stop(self, timeout: float = 30.0, force: bool = False, keep_log: bool = False) -> None:
        """Asks the server to stop (`kerncap serve DIR --stop`) and waits for it; a server not
        started here is left running unless force. Its log file is removed unless keep_log."""
        if not self.owned and not force:
            return
        if self.proc is None or self.proc.poll() is None:
            self.kc.run(["serve", self.dir, "--stop"], ok=(0, 1, 2, 3, 4))
        if self.proc is not None:
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log_path and not keep_log:
            try:
                os.remove(self.log_path)
            except OSError:
                pass
            self.log_path = None

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(kc: "Kerncap", dir: str, extra: List[str], ready_timeout: float) -> Server:
    """Kerncap.serve's work: reuse a running server, else start one and wait until it answers
    (it first evaluates the captured image, and measures the footprint when strong validation
    needs one it lacks: that can take a while), or until it exits with its error."""
    st = kc.serve_status(dir)
    if st.serving:
        return Server(kc, dir, st)
    fd, log_path = tempfile.mkstemp(prefix="kerncap-serve-", suffix=".log")
    argv = [kc.binary, "serve", dir] + extra
    with os.fdopen(fd, "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=kc._environ(), start_new_session=True)
    deadline = time.monotonic() + ready_timeout
    while True:
        rc = proc.poll()
        if rc is not None:
            text = _tail(log_path)
            os.remove(log_path)
            raise error_for(rc or 70, cli_message(text, rc) or f"kerncap serve {dir} exited with {rc}", argv, text)
        st = kc.serve_status(dir)
        if st.serving:
            return Server(kc, dir, st, proc, log_path)
        if time.monotonic() > deadline:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            text = _tail(log_path)
            os.remove(log_path)
            raise KerncapError(f"kerncap serve {dir} did not answer within {ready_timeout:g} s; its output: "
                               f"{text.strip()[-500:]!r}", 70, argv, text)
        time.sleep(0.2)

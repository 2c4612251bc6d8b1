"""The iterator both evaluation runs are (kerncap.evaluate_pool.HostPool, one capture;
kerncap.evaluate_regimes.RegimeSetRun, a regime set): records from a generator `_it`, events to
`progress`, close() ending the generator (and with it the run's workers)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, Optional


class RecordStream:
    _it: Iterator[Dict[str, Any]]
    progress: Optional[Callable[[Dict[str, Any]], None]]

    def __iter__(self) -> "RecordStream":
        return self

    def __next__(self) -> Dict[str, Any]:
        return next(self._it)

    def close(self) -> None:
        self._it.close()  # type: ignore[attr-defined]

    def _event(self, **event: Any) -> None:
        if self.progress is not None:
            self.progress(event)

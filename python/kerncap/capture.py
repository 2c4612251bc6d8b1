"""A read-only view of a capture, over the manifest the replay engine reads and checks
(engine.capture_info: the C++ reader, no GPU). Nothing here parses or validates the format
itself; it only names the fields the Triton generator and reproducer use.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from . import engine


def _addr(v: Any) -> int:
    return int(v, 16) if isinstance(v, str) else int(v)


@dataclass(frozen=True)
class Region:
    id: int
    kind: str
    base: int
    size: int

    @property
    def end(self) -> int:
        return self.base + self.size


class Manifest:
    def __init__(self, info: Dict[str, Any]):
        self.raw = info
        self.dir: str = info["directory"]  # the folder holding manifest.json
        k, launch, p, im = info["kernel"], info["launch"], info["params"], info["image"]
        self.mangled: str = k["mangled"]
        self.demangled: str = k.get("demangled", self.mangled)
        self.grid: Tuple[int, int, int] = tuple(launch["grid"])
        self.block: Tuple[int, int, int] = tuple(launch["block"])
        self.shared_mem_bytes: int = int(launch["shared_mem_bytes"])
        self.cluster: Tuple[int, int, int] = tuple(launch.get("cluster", (0, 0, 0)))
        self.slots: List[Tuple[int, int]] = [(int(s["offset"]), int(s["size"])) for s in p.get("slots", [])]
        self.params_file: str = p["file"]
        self.image_file: str = im["file"]
        self.device_ordinal: int = int(info.get("device", {}).get("ordinal", 0))
        self.regions: List[Region] = [Region(int(r["id"]), r["kind"], _addr(r["base"]), int(r["size"]))
                                      for r in info["regions"]]

    def path(self, rel: str) -> str:
        return os.path.join(self.dir, rel)

    def params(self) -> bytes:
        """params.bin as captured (the engine checked its size)."""
        with open(self.path(self.params_file), "rb") as f:
            return f.read()

    def image_sha256(self) -> str:
        h = hashlib.sha256()
        with open(self.path(self.image_file), "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()

    def memory(self) -> List[Region]:
        """Allocations (module globals excluded): what kernel pointer arguments point into."""
        return [r for r in self.regions if r.kind != "global"]

    def region_of(self, addr: int) -> Optional[Region]:
        for r in self.memory():
            if r.base <= addr < r.end:
                return r
        return None


def load(path: str) -> Manifest:
    """OUT or OUT/capture. Raises engine.EngineError (exit code 2) for a missing or bad capture."""
    return Manifest(engine.capture_info(path))

"""Reading a kerncap capture directory (capture/manifest.json and its blobs) in pure Python.

The manifest is written by src/format/manifest.cpp; this reader accepts format version 1 and
refuses newer ones with the same advice the C++ reader gives. Used by the Triton reproducer
generator and, copied into each reproducer, by the reproducer at run time (so: stdlib only).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

FORMAT_NAME = "kerncap-capture"
FORMAT_VERSION = 1


class CaptureError(Exception):
    """The capture directory is missing, damaged or newer than this reader."""


@dataclass
class Region:
    id: int
    kind: str
    base: int
    size: int
    file: str
    glob: str = ""  # module global's symbol name (kind == "global")

    @property
    def end(self) -> int:
        return self.base + self.size


@dataclass
class AfterRun:
    region: int
    offset: int
    size: int
    file_offset: int


@dataclass
class Slot:
    offset: int
    size: int


@dataclass
class Manifest:
    dir: str  # the capture/ directory
    raw: dict
    mangled: str
    demangled: str
    grid: Tuple[int, int, int]
    block: Tuple[int, int, int]
    shared_mem_bytes: int
    cluster: Tuple[int, int, int]
    params_file: str
    params_size: int
    slots: List[Slot]
    image_file: str
    image_kind: str
    regions: List[Region]
    after_file: str
    after: List[AfterRun]
    device_ordinal: int = 0
    device_name: str = ""
    cc: Tuple[int, int] = (0, 0)
    launch_attrs: List[dict] = field(default_factory=list)

    def path(self, rel: str) -> str:
        return os.path.join(self.dir, rel)

    def params(self) -> bytes:
        data = _read(self.path(self.params_file))
        if len(data) < self.params_size:
            raise CaptureError(f"{self.params_file} has {len(data)} bytes but the manifest says {self.params_size}: "
                               "the capture is damaged; extract it again")
        return data

    def image(self) -> bytes:
        return _read(self.path(self.image_file))

    def image_sha256(self) -> str:
        return hashlib.sha256(self.image()).hexdigest()

    def region_of(self, addr: int) -> Optional[Region]:
        for r in self.regions:
            if r.kind != "global" and r.base <= addr < r.end:
                return r
        return None

    def before(self, r: Region) -> bytes:
        data = _read(self.path(r.file))
        if len(data) != r.size:
            raise CaptureError(f"{r.file} has {len(data)} bytes but region {r.id} is {r.size} bytes: the capture is "
                               "truncated or damaged; extract it again")
        return data

    def expected(self, r: Region) -> bytearray:
        """BEFORE with the AFTER runs applied: what the application's launch left in region r."""
        data = bytearray(self.before(r))
        runs = [a for a in self.after if a.region == r.id]
        if runs:
            with open(self.path(self.after_file), "rb") as f:
                for a in runs:
                    f.seek(a.file_offset)
                    chunk = f.read(a.size)
                    if len(chunk) != a.size:
                        raise CaptureError(f"{self.after_file} is truncated (run of region {r.id} at file offset "
                                           f"{a.file_offset}); extract again")
                    data[a.offset:a.offset + a.size] = chunk
        return data

    def written(self, r: Region) -> int:
        return sum(a.size for a in self.after if a.region == r.id)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise CaptureError(f"{path} is missing: the capture is incomplete; extract it again") from None


def _hex(s) -> int:
    return int(s, 16) if isinstance(s, str) else int(s)


def capture_dir(path: str) -> str:
    """OUT or OUT/capture -> the directory holding manifest.json."""
    if os.path.isfile(os.path.join(path, "manifest.json")):
        return path
    if os.path.isfile(os.path.join(path, "capture", "manifest.json")):
        return os.path.join(path, "capture")
    raise CaptureError(f"no capture in {path}: expected {path}/capture/manifest.json (run `kerncap extract` first)")


def parse_manifest(j: dict, directory: str = "") -> Manifest:
    if not isinstance(j, dict) or j.get("format") != FORMAT_NAME:
        raise CaptureError('not a kerncap capture manifest (no "format": "kerncap-capture")')
    v = j.get("format_version")
    if not isinstance(v, int) or v < 1:
        raise CaptureError(f"invalid capture format version {v!r}")
    if v > FORMAT_VERSION:
        raise CaptureError(f"this capture was written by a newer kerncap (format version {v}); this reader reads up "
                           f"to version {FORMAT_VERSION}: update kerncap or extract again with this one")
    try:
        k, l, p, im, a = j["kernel"], j["launch"], j["params"], j["image"], j["after"]
        dev = j.get("device", {})
        return Manifest(
            dir=directory,
            raw=j,
            mangled=k["mangled"],
            demangled=k.get("demangled", k["mangled"]),
            grid=tuple(l["grid"]),
            block=tuple(l["block"]),
            shared_mem_bytes=int(l["shared_mem_bytes"]),
            cluster=tuple(l.get("cluster", [0, 0, 0])),
            params_file=p["file"],
            params_size=int(p["size"]),
            slots=[Slot(int(s["offset"]), int(s["size"])) for s in p.get("slots", [])],
            image_file=im["file"],
            image_kind=im.get("kind", "cubin"),
            regions=[Region(int(r["id"]), r["kind"], _hex(r["base"]), int(r["size"]), r["file"], r.get("global", ""))
                     for r in j["regions"]],
            after_file=a["file"],
            after=[AfterRun(int(r["region"]), int(r["offset"]), int(r["size"]), int(r["file_offset"]))
                   for r in a["runs"]],
            device_ordinal=int(dev.get("ordinal", 0)),
            device_name=dev.get("name", ""),
            cc=tuple(dev.get("cc", [0, 0])),
            launch_attrs=list(l.get("attributes", [])),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise CaptureError(f"capture manifest is missing or has a malformed field ({e!r}): the capture is incomplete "
                           "or damaged; extract it again") from None


def load(path: str) -> Manifest:
    d = capture_dir(path)
    with open(os.path.join(d, "manifest.json")) as f:
        try:
            j = json.load(f)
        except json.JSONDecodeError as e:
            raise CaptureError(f"{d}/manifest.json is not valid JSON ({e}); extract again") from None
    return parse_manifest(j, d)


def region_index(m: Manifest) -> Dict[int, Region]:
    return {r.id: r for r in m.regions}

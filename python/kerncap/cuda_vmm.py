"""Captured memory back at its original addresses, from Python, with the CUDA driver's virtual
memory API through ctypes (libcuda.so.1; no other dependency). The same plan as the C++ replay
(src/replay/plan.cpp, address_space.cpp, docs/replay.md): 32 MiB-aligned reservations
covering the regions (hints at that alignment come back on the H100), each block's piece runs
alone when a block does not, and for what still misses a reservation anywhere plus a
relocation map under which every pointer word is rewritten (kerncap_repro.runtime does that).

Must run before anything else in the process uses the GPU (import torch is fine, touching
torch.cuda is not): the caching allocator would otherwise take the addresses.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import List, Tuple

BLOCK_ALIGN = 32 << 20
PIECE_ALIGN = 2 << 20


class CudaError(Exception):
    """A driver call failed (exit code 3 in the reproducer)."""


def align_down(v: int, a: int) -> int:
    return v // a * a


def align_up(v: int, a: int) -> int:
    return (v + a - 1) // a * a


def plan_pieces(spans: List[Tuple[int, int]], piece: int = PIECE_ALIGN) -> List[Tuple[int, int]]:
    ps = sorted((align_down(b, piece), align_up(e, piece)) for b, e in spans if e > b)
    out: List[Tuple[int, int]] = []
    for b, e in ps:
        if out and b <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((b, e))
    return out


def plan_blocks(spans: List[Tuple[int, int]], block: int = BLOCK_ALIGN, piece: int = PIECE_ALIGN):
    """[(block_begin, block_end, [piece runs])] sorted by address, neighbours merged."""
    blocks: List[list] = []
    for b, e in sorted(s for s in spans if s[1] > s[0]):
        s = (align_down(b, block), align_up(e, block))
        if blocks and s[0] <= blocks[-1][1]:
            blocks[-1][1] = max(blocks[-1][1], s[1])
            blocks[-1][2].append((b, e))
        else:
            blocks.append([s[0], s[1], [(b, e)]])
    return [(b, e, plan_pieces(rs, piece)) for b, e, rs in blocks]


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocProp(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_PINNED, _LOC_DEVICE, _PROT_RW, _GRANULARITY_MIN = 1, 1, 3, 0


class Driver:
    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaError(f"cannot load libcuda.so.1 ({e}): no NVIDIA driver on this machine") from None
        u64, sz, ull = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_ulonglong
        self._sig("cuInit", [ctypes.c_uint])
        self._sig("cuDeviceGetCount", [ctypes.POINTER(ctypes.c_int)])
        self._sig("cuDeviceGet", [ctypes.POINTER(ctypes.c_int), ctypes.c_int])
        self._sig("cuDevicePrimaryCtxRetain", [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int])
        self._sig("cuCtxSetCurrent", [ctypes.c_void_p])
        self._sig("cuCtxSynchronize", [])
        self._sig("cuMemGetAllocationGranularity", [ctypes.POINTER(sz), ctypes.POINTER(_AllocProp), ctypes.c_int])
        self._sig("cuMemAddressReserve", [ctypes.POINTER(u64), sz, sz, u64, ull])
        self._sig("cuMemAddressFree", [u64, sz])
        self._sig("cuMemCreate", [ctypes.POINTER(u64), sz, ctypes.POINTER(_AllocProp), ull])
        self._sig("cuMemMap", [u64, sz, sz, u64, ull])
        self._sig("cuMemSetAccess", [u64, sz, ctypes.POINTER(_AccessDesc), sz])
        self._sig("cuMemcpyHtoD_v2", [u64, ctypes.c_void_p, sz])
        self._sig("cuMemcpyDtoH_v2", [ctypes.c_void_p, u64, sz])
        self._sig("cuGetErrorString", [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)])

    def _sig(self, name, argtypes):
        f = getattr(self.lib, name)
        f.argtypes, f.restype = argtypes, ctypes.c_int

    def error_text(self, r: int) -> str:
        s = ctypes.c_char_p()
        if self.lib.cuGetErrorString(r, ctypes.byref(s)) == 0 and s.value:
            return s.value.decode()
        return f"CUresult {r}"

    def call(self, name: str, *args) -> None:
        r = getattr(self.lib, name)(*args)
        if r != 0:
            raise CudaError(f"{name} failed: {self.error_text(r)}")

    def try_call(self, name: str, *args) -> int:
        return getattr(self.lib, name)(*args)


@dataclass
class Placement:
    moves: List[Tuple[int, int, int]] = field(default_factory=list)  # (old_begin, old_end, new_begin)
    blocks: int = 0
    blocks_at_hint: int = 0
    runs_fallback: int = 0
    mapped_bytes: int = 0

    def translate(self, a: int) -> int:
        for b, e, n in self.moves:
            if b <= a < e:
                return n + (a - b)
        return a


class AddressSpace:
    """Reserves and maps the captured spans; contents are written with write()."""

    def __init__(self, ordinal: int):
        self.d = Driver()
        self.d.call("cuInit", 0)
        n = ctypes.c_int()
        self.d.call("cuDeviceGetCount", ctypes.byref(n))
        if n.value == 0:
            raise CudaError("no CUDA device is visible (check CUDA_VISIBLE_DEVICES)")
        dev = ctypes.c_int()
        self.ordinal = ordinal if ordinal < n.value else 0
        self.d.call("cuDeviceGet", ctypes.byref(dev), self.ordinal)
        self.dev = dev.value
        self.prop = _AllocProp()
        self.prop.type, self.prop.location.type, self.prop.location.id = _PINNED, _LOC_DEVICE, self.dev
        g = ctypes.c_size_t()
        self.granularity = PIECE_ALIGN
        if self.d.try_call("cuMemGetAllocationGranularity", ctypes.byref(g), ctypes.byref(self.prop),
                           _GRANULARITY_MIN) == 0 and g.value:
            self.granularity = g.value
        self.placement = Placement()
        self._to_map: List[Tuple[int, int]] = []

    def _reserve(self, size: int, hint: int, keep_if_moved: bool):
        p = ctypes.c_uint64()
        r = self.d.try_call("cuMemAddressReserve", ctypes.byref(p), size, 0, hint, 0)
        if r != 0:
            if not keep_if_moved:
                return None
            self.d.call("cuMemAddressReserve", ctypes.byref(p), size, 0, 0, 0)
        if p.value == hint or keep_if_moved:
            return p.value
        self.d.call("cuMemAddressFree", p.value, size)
        return None

    def reserve(self, spans: List[Tuple[int, int]], allow_relocate: bool = True) -> Placement:
        pl = self.placement
        for b, e, pieces in plan_blocks(spans, BLOCK_ALIGN, self.granularity):
            pl.blocks += 1
            if self._reserve(e - b, b, False) is not None:
                pl.blocks_at_hint += 1
                self._to_map += pieces
                continue
            for rb, re_ in pieces:
                pl.runs_fallback += 1
                if self._reserve(re_ - rb, rb, False) is not None:
                    self._to_map.append((rb, re_))
                    continue
                if not allow_relocate:
                    raise CudaError(f"the captured range {rb:#x}..{re_:#x} cannot be reserved at its address in "
                                    "this process and relocation is forbidden")
                at = self._reserve(re_ - rb, rb, True)
                pl.moves.append((rb, re_, at))
                self._to_map.append((at, at + (re_ - rb)))
        return pl

    def map(self) -> None:
        ctx = ctypes.c_void_p()
        self.d.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), self.dev)
        self.d.call("cuCtxSetCurrent", ctx)
        access = _AccessDesc()
        access.location.type, access.location.id, access.flags = _LOC_DEVICE, self.dev, _PROT_RW
        for b, e in self._to_map:
            h = ctypes.c_uint64()
            self.d.call("cuMemCreate", ctypes.byref(h), e - b, ctypes.byref(self.prop), 0)
            self.d.call("cuMemMap", b, e - b, 0, h.value, 0)
            self.d.call("cuMemSetAccess", b, e - b, ctypes.byref(access), 1)
            self.placement.mapped_bytes += e - b

    def write(self, addr: int, data) -> None:
        buf = (ctypes.c_char * len(data)).from_buffer(data) if isinstance(data, bytearray) else data
        self.d.call("cuMemcpyHtoD_v2", addr, buf, len(data))

    def read(self, addr: int, size: int) -> bytearray:
        out = bytearray(size)
        self.d.call("cuMemcpyDtoH_v2", (ctypes.c_char * size).from_buffer(out), addr, size)
        return out

    def synchronize(self) -> None:
        self.d.call("cuCtxSynchronize")


def rewrite_words(data: bytearray, addr: int, moves: List[Tuple[int, int, int]]) -> int:
    """Rewrites the 8-byte words of data (living at device address addr) that point into a moved
    span; words at 8-byte-aligned device addresses, as src/replay/relocation.cpp. Returns the count."""
    if not moves or len(data) < 8:
        return 0
    lo = min(m[0] for m in moves)
    hi = max(m[1] for m in moves)
    first = (-addr) % 8
    n = (len(data) - first) // 8
    count = 0
    view = memoryview(data)[first:first + 8 * n].cast("Q")
    for i, w in enumerate(view):
        if lo <= w < hi:
            for b, e, nb in moves:
                if b <= w < e:
                    view[i] = nb + (w - b)
                    count += 1
                    break
    del view
    return count

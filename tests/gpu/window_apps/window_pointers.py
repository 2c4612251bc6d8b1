"""The pointer words of a captured window operation's parameters, shared by the launches.json
builders (silu_mul_launches.py, rms_norm_launches.py): each 8-byte word of
capture/window/op-NNNNNN.params that falls inside one of the manifest's regions."""
import json
import os
import struct


def regions_of(cap):
    m = json.load(open(os.path.join(cap, "manifest.json")))
    return [(r["id"], int(r["base"], 16), r["size"]) for r in m["regions"]]


def pointers(cap, regions, i):
    """(the op's parameter bytes, [(region id, offset in it, address), ...] in word order)."""
    raw = open(os.path.join(cap, "window", "op-%06d.params" % i), "rb").read()
    found = []
    for at in range(0, len(raw) - 7, 8):
        v = struct.unpack_from("<Q", raw, at)[0]
        for rid, base, size in regions:
            if base <= v < base + size:
                found.append((rid, v - base, v))
    return raw, found

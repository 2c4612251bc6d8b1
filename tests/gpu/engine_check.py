#!/usr/bin/env python3
"""Drives libkerncap_replay.so through its C ABI with nothing but ctypes (GPU suite helper).

engine_check.py LIB CAPTURE: open, restore, compare before launching (must FAIL: the launch
has not written yet), launch, compare (must PASS), time with the engine's own launch, check
translate/params/stream, close. Prints one JSON line; exit 0 when every check held.
"""
import ctypes
import json
import sys


def main(lib_path: str, capture: str) -> int:
    lib = ctypes.CDLL(lib_path)
    lib.kc_last_error.restype = ctypes.c_char_p
    lib.kc_version.restype = ctypes.c_char_p
    for name in ("kc_capture_info", "kc_restore", "kc_compare", "kc_time"):
        getattr(lib, name).restype = ctypes.c_int
    lib.kc_free.argtypes = [ctypes.c_void_p]
    checks = {}

    def call(name, *args):
        rc = getattr(lib, name)(*args)
        if rc != 0:
            raise RuntimeError(f"{name}: rc {rc}: {lib.kc_last_error().decode()}")

    def text(fn, *args):
        out = ctypes.c_void_p()
        call(fn, *args, ctypes.byref(out))
        s = ctypes.cast(out, ctypes.c_char_p).value.decode()
        lib.kc_free(out)
        return json.loads(s)

    checks["abi"] = lib.kc_abi_version() == 1
    info = text("kc_capture_info", capture.encode())
    s = ctypes.c_void_p()
    call("kc_open", capture.encode(), b'{"verify": true}', ctypes.byref(s))
    restored = text("kc_restore", s)
    checks["restored"] = restored["bytes"] > 0
    before = text("kc_compare", s, None)
    wrote = sum(r["written"] for r in before["regions"])
    checks["unlaunched_fails"] = before["result"] == "FAIL" if wrote else True
    call("kc_launch", s)
    after = text("kc_compare", s, None)
    checks["launched_passes"] = after["result"] == "PASS"
    timing = text("kc_time", s, None, None, b'{"warmup": 2, "iterations": 10}', )
    checks["timed"] = len(timing["times_ms"]) == 10 and timing["median_ms"] > 0
    base = info["regions"][0]["base"]
    base = int(base, 16) if isinstance(base, str) else base
    out = ctypes.c_uint64()
    call("kc_translate", s, ctypes.c_uint64(base), ctypes.byref(out))
    checks["translate"] = out.value != 0
    size = ctypes.c_uint64()
    call("kc_params", s, None, ctypes.c_uint64(0), ctypes.byref(size))
    checks["params"] = size.value == info["params"]["size"]
    stream = ctypes.c_uint64()
    call("kc_stream", s, ctypes.byref(stream))
    checks["stream"] = stream.value != 0
    lib.kc_close(s)
    print(json.dumps({"checks": checks, "written": wrote, "median_ms": timing["median_ms"],
                      "line": after["line"]}))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

"""Shared helpers: the kerncap package under test on sys.path, the shim loaded by file path (as
sitecustomize does), a capture directory writer, and the replay engine library under test.

Two ways to run (run.sh picks one):
- `--installed`: the package the interpreter imports by itself (`pip install .`, or `-e .`), with
  the engine it finds on its own; python/ is not put on sys.path, and a missing engine fails.
- otherwise python/ of this checkout goes first on sys.path; `--engine-lib PATH` (run.sh passes
  the build tree's when CTest runs it) makes a missing library a failure; without it, tests that
  need the engine skip when none is built."""
import importlib.util
import json
import os
import struct
import sys

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/ of this checkout
INSTALLED = "--installed" in sys.argv  # decided before the first import of kerncap
if not INSTALLED and SOURCE not in sys.path:
    sys.path.insert(0, SOURCE)

import pytest  # noqa: E402

from kerncap import engine  # noqa: E402

# The folder holding the kerncap package under test (site-packages when installed).
PY = os.path.dirname(os.path.dirname(os.path.abspath(engine.__file__)))


def pytest_addoption(parser):
    parser.addoption("--engine-lib", help="the libkerncap_replay.so to test; a missing one fails the tests")
    parser.addoption("--installed", action="store_true",
                     help="test the installed kerncap package (pip install .): not python/ of this checkout")


def pytest_configure(config):
    lib = config.getoption("--engine-lib")
    if lib:
        os.environ[engine.ENV_LIBRARY] = os.path.abspath(lib)


def pytest_report_header(config):
    return f"kerncap package under test: {os.path.join(PY, 'kerncap')}"


@pytest.fixture
def engine_lib(request):
    """The replay engine library (real, ABI checked)."""
    try:
        return engine.load()
    except engine.EngineError as e:
        if request.config.getoption("--engine-lib") or request.config.getoption("--installed"):
            pytest.fail(str(e))
        pytest.skip(f"the replay engine is not built: {e}")


@pytest.fixture
def kerncap_bin(request):
    """The kerncap executable under test: $KERNCAP_BIN, else the build tree's bin/kerncap beside
    --engine-lib (a missing one fails, as the engine does), else the API's own lookup; skips
    when there is none."""
    lib = request.config.getoption("--engine-lib")
    if not os.environ.get("KERNCAP_BIN") and lib:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(lib))), "bin", "kerncap")
        if not os.access(path, os.X_OK):
            pytest.fail(f"{path} is not built (the build tree of --engine-lib)")
        return path
    from kerncap import KerncapNotFoundError, find_kerncap
    try:
        return find_kerncap()
    except KerncapNotFoundError as e:
        pytest.skip(f"no kerncap executable: {e}")


def load_shim():
    path = os.path.join(PY, "kerncap", "triton_shim", "_kerncap_triton_shim.py")
    spec = importlib.util.spec_from_file_location("_kerncap_triton_shim_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def shim(tmp_path):
    mod = load_shim()
    mod._state["out"] = str(tmp_path / "triton")
    os.makedirs(tmp_path / "triton" / "records")
    os.makedirs(tmp_path / "triton" / "sources")
    return mod


def xxh3_64(data):
    """The image hash the engine's reader checks (XXH3, 64 bits), from the system libxxhash."""
    import ctypes
    fn = ctypes.CDLL("libxxhash.so.0").XXH3_64bits
    fn.restype, fn.argtypes = ctypes.c_uint64, [ctypes.c_char_p, ctypes.c_size_t]
    return fn(data, len(data))


def write_capture(out, *, name="add_kernel", params=b"", slots=(), regions=(), after=(), grid=(4, 1, 1),
                  block=(128, 1, 1), shared=0, image=b"\x7fELF-fake-cubin", version=1):
    """A small complete capture directory (what the engine's reader accepts): regions =
    [(id, base, bytes)] or [(id, base, bytes, "global", symbol)], after = [(region, offset, bytes)]."""
    cap = os.path.join(out, "capture")
    os.makedirs(os.path.join(cap, "mem"), exist_ok=True)
    os.makedirs(os.path.join(cap, "image"), exist_ok=True)
    with open(os.path.join(cap, "params.bin"), "wb") as f:
        f.write(params)
    with open(os.path.join(cap, "image", "abc.cubin"), "wb") as f:
        f.write(image)
    regs = []
    for rid, base, data, *glob in regions:
        with open(os.path.join(cap, "mem", f"{rid}.bin"), "wb") as f:
            f.write(data)
        regs.append({"id": rid, "kind": glob[0] if glob else "device", "base": hex(base), "size": len(data),
                     "file": f"mem/{rid}.bin", "xxh64": "0x0"})
        if glob:
            regs[-1]["global"] = glob[1]
    runs, blob = [], b""
    for rid, off, data in after:
        runs.append({"region": rid, "offset": off, "size": len(data), "file_offset": len(blob)})
        blob += data
    with open(os.path.join(cap, "after.bin"), "wb") as f:
        f.write(blob)
    m = {"format": "kerncap-capture", "format_version": version, "tool_version": "test", "config": {},
         "process": {"pid": 1, "command": "test"},
         "device": {"ordinal": 0, "name": "H100", "cc": [9, 0], "driver_version": 13000},
         "kernel": {"mangled": name, "demangled": name, "dispatch": 0, "launch_index": 0},
         "launch": {"api": "cuLaunchKernelEx", "grid": list(grid), "block": list(block), "shared_mem_bytes": shared,
                    "cooperative": False, "cluster": [0, 0, 0], "attributes": [], "function_attributes": []},
         "params": {"file": "params.bin", "size": len(params), "source": "kernelParams",
                    "slots": [{"offset": o, "size": s} for o, s in slots]},
         "image": {"file": "image/abc.cubin", "kind": "cubin", "xxh64": hex(xxh3_64(image))},
         "regions": regs, "after": {"file": "after.bin", "chunk_bytes": 4096, "runs": runs},
         "stats": {"before_bytes": 0, "after_bytes": 0, "capture_seconds": 0.1}}
    with open(os.path.join(cap, "manifest.json"), "w") as f:
        json.dump(m, f)
    return cap


def pack_params(items):
    """[(struct fmt, value)] -> (bytes, slots) with natural alignment, as the CUDA ABI lays them out."""
    data, slots = b"", []
    for fmt, v in items:
        size = struct.calcsize("<" + fmt)
        data += b"\0" * ((-len(data)) % size)
        slots.append((len(data), size))
        data += struct.pack("<" + fmt, v)
    return data, slots

"""The shim on load paths where nothing compiles (caches warm): Triton's kernel_load_end_hook,
Inductor's static launcher reading its cubin file, and compile records rebuilt when an Inductor
CachingAutotuner has made its launchers; then those records bind a capture by image hash and
the generator writes a reproducer from them. Fake objects shaped like Torch 2.11 / Triton 3.6
(runtime/static_triton_launcher.py, runtime/triton_heuristics.py): no torch or Triton needed."""
import hashlib
import json
import os
import types

import pytest

from kerncap import triton_records as tr

CUBIN = b"\x7fELF pretend cubin of triton_poi_fused_gelu_0"
SHA = hashlib.sha256(CUBIN).hexdigest()
KERNEL = "triton_poi_fused_gelu_0"
HASH = "3f" * 32

MODULE_SOURCE = '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math

@triton_heuristics.pointwise(size_hints={'x': 131072}, filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}},
    min_elem_per_thread=0)
@triton.jit
def triton_poi_fused_gelu_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + (xindex), xmask)
    tl.store(out_ptr0 + (xindex), tmp0 * 0.5, xmask)
'''
FN_SOURCE = MODULE_SOURCE[MODULE_SOURCE.index("def triton_poi"):]
METADATA = {"hash": HASH, "name": KERNEL, "num_warps": 4, "num_stages": 1, "num_ctas": 1, "shared": 0,
            "maxnreg": None, "debug": True, "enable_fp_fusion": True, "launch_pdl": False,
            "target": {"backend": "cuda", "arch": 90, "warp_size": 32}}
COMPILE_META = {"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"},
                "constants": {"XBLOCK": 256}, "configs": [{(0,): [["tt.divisibility", 16]],
                                                            (1,): [["tt.divisibility", 16]]}],
                "num_warps": 4, "num_stages": 1, "device": 0, "device_type": "cuda"}


def records(tmp_path):
    d = tmp_path / "triton" / "records"
    return [json.loads(line) for f in sorted(os.listdir(d)) for line in open(d / f)]


def triton_cache(tmp_path):
    """Triton's cache as a warm run finds it: the cubin and the metadata JSON beside it."""
    d = tmp_path / "triton-cache" / "PSEUDOKEY"
    d.mkdir(parents=True)
    (d / f"{KERNEL}.cubin").write_bytes(CUBIN)
    (d / f"{KERNEL}.json").write_text(json.dumps(METADATA))
    return str(d / f"{KERNEL}.cubin")


def inductor_module(tmp_path):
    d = tmp_path / "inductor-cache" / "ab"
    d.mkdir(parents=True)
    (d / "cabcdef.py").write_text(MODULE_SOURCE)
    return str(d / "cabcdef.py")


def fake_static_module():
    """runtime/static_triton_launcher.py: a base class that loads, per-device subclasses that do not."""
    mod = types.ModuleType("torch._inductor.runtime.static_triton_launcher")

    class StaticallyLaunchedTritonKernel:
        def __init__(self, cubin_path):
            self.name, self.hash, self.num_warps, self.shared = KERNEL, HASH, 4, 0
            self.arg_names = ["in_ptr0", "out_ptr0", "xnumel", "XBLOCK"]
            self.cubin_path, self.cubin_raw, self.function = cubin_path, None, None
            self.loads = 0

        def load_kernel(self, device):
            if self.function is not None:
                return
            assert self.cubin_path is not None
            self.loads += 1
            self.function = 0x1234 + device
            self.cubin_path = None  # as Inductor does: the path is forgotten once loaded
            self.cubin_raw = None

    class StaticallyLaunchedCudaKernel(StaticallyLaunchedTritonKernel):
        pass

    for cls in (StaticallyLaunchedTritonKernel, StaticallyLaunchedCudaKernel):
        cls.__module__ = mod.__name__
        setattr(mod, cls.__name__, cls)
    return mod


class FakeJit:
    """An Inductor JITFunction after prepare_for_pickle and a pickle round trip: no Python
    function, no globals, its names and source lines kept."""
    arg_names = ["in_ptr0", "out_ptr0", "xnumel", "XBLOCK"]
    params = [types.SimpleNamespace(name=n, is_constexpr=n == "XBLOCK") for n in arg_names]
    fn = None
    __globals__ = None
    __name__ = KERNEL
    __qualname__ = KERNEL
    __module__ = "torch._inductor.codecache.cabcdef"  # what Inductor names the loaded module
    raw_src = ["@triton.jit\n"] + FN_SOURCE.splitlines(keepends=True)
    starting_line_number = 10


def fake_heuristics_module():
    mod = types.ModuleType("torch._inductor.runtime.triton_heuristics")

    class StaticTritonCompileResult:
        def __init__(self, kernel, config, compile_meta):
            self.kernel, self.config, self.compile_meta = kernel, config, compile_meta

        def make_launcher(self):
            self.kernel.load_kernel(self.compile_meta.get("device", 0))
            return types.SimpleNamespace(config=self.config, n_spills=0)

    class CachingAutotuner:
        def __init__(self, results, filename):
            self.fn, self.compile_results, self.filename = FakeJit(), results, filename
            self.inductor_meta, self.launchers = {"kernel_name": KERNEL}, []

        def bench(self, launcher, *args, **kwargs):
            return 0.0

        def benchmark_all_configs(self, *args, **kwargs):
            return [self.bench(launcher) for launcher in self.launchers]

        def _make_launchers(self):
            if len(self.launchers) == len(self.compile_results):
                return "unchanged"
            self.launchers = [r.make_launcher() for r in self.compile_results]
            return "made"

    for cls in (StaticTritonCompileResult, CachingAutotuner):
        cls.__module__ = mod.__name__
        setattr(mod, cls.__name__, cls)
    return mod


def warm_autotuner(shim, tmp_path):
    """What StaticAutotunerFuture.result() hands over on an FX graph cache hit."""
    static, heur = fake_static_module(), fake_heuristics_module()
    shim._patch_static_launcher(static)
    shim._patch_static_launcher(static)  # a second import of the module wraps nothing twice
    shim._patch_inductor(heur)
    kernel = static.StaticallyLaunchedCudaKernel(triton_cache(tmp_path))
    cfg = types.SimpleNamespace(kwargs={"XBLOCK": 256}, num_warps=4, num_stages=1)
    result = heur.StaticTritonCompileResult(kernel, cfg, COMPILE_META)
    return heur.CachingAutotuner([result], inductor_module(tmp_path)), kernel


def test_a_warm_inductor_kernel_is_recorded_on_its_load_path(shim, tmp_path):
    autotuner, kernel = warm_autotuner(shim, tmp_path)
    assert autotuner._make_launchers() == "made"  # the application's return value
    assert autotuner._make_launchers() == "unchanged"
    assert kernel.loads == 1 and kernel.function == 0x1234 and kernel.cubin_path is None
    assert not hasattr(kernel, "_kerncap_cubin_sha256")  # nothing written onto the application's objects

    recs = records(tmp_path)
    loads = [r for r in recs if r["kind"] == "load"]
    assert [(r["via"], r["name"], r["hash"], r["cubin_sha256"], r["cubin_size"]) for r in loads] == [
        ("inductor static launcher", KERNEL, HASH, SHA, len(CUBIN))]
    comp = [r for r in recs if r["kind"] == "compile"]
    assert len(comp) == 1
    c = comp[0]
    assert c["via"] == "inductor load" and c["cubin_sha256"] == SHA and c["hash"] == HASH and c["name"] == KERNEL
    assert c["source_kind"] == "ast" and c["arg_names"] == FakeJit.arg_names and c["constexpr_params"] == ["XBLOCK"]
    assert c["signature"] == COMPILE_META["signature"]
    assert c["constants"] == [[[3], 256]]
    assert c["attrs"] == [[[0], [["tt.divisibility", 16]]], [[1], [["tt.divisibility", 16]]]]
    # The options are Triton's metadata JSON beside the cubin: what a cache hit would have recorded.
    assert c["options"]["num_warps"] == 4 and c["options"]["shared"] == 0 and c["options"]["debug"] is True
    assert c["options"]["target"] == METADATA["target"]
    fn = c["fn"]
    assert fn["name"] == KERNEL and fn["line"] == 10 and fn["file"].endswith("cabcdef.py")
    src_dir = tmp_path / "triton" / "sources"
    assert (src_dir / f"{fn['module_sha256']}.py").read_text() == MODULE_SOURCE
    assert FN_SOURCE in (src_dir / f"{fn['source_sha256']}.py").read_text()
    hooks = [r for r in recs if r.get("event") == "load_hooks"]
    assert hooks and hooks[0]["wrapped"] == ["StaticallyLaunchedTritonKernel"]


def test_benchmark_all_configs_is_inside_the_ignore_window(shim, tmp_path):
    from test_shim_ignore import fake_lib
    calls, state = fake_lib(shim)
    autotuner, _ = warm_autotuner(shim, tmp_path)
    autotuner._make_launchers()
    autotuner.benchmark_all_configs()
    assert calls == [("begin", 1), ("begin", 2), ("end", 1), ("end", 0)] and state["depth"] == 0


def test_load_hooks_never_change_what_the_application_sees(shim, tmp_path):
    static = fake_static_module()
    shim._patch_static_launcher(static)
    # The cubin is gone: the hook records an error, the application's own code decides.
    k = static.StaticallyLaunchedTritonKernel(str(tmp_path / "missing.cubin"))
    k.load_kernel(0)
    assert k.function == 0x1234
    errors = [r for r in records(tmp_path) if r["kind"] == "error"]
    assert errors and errors[0]["where"] == "static launcher load_kernel"
    # The application's exception reaches it unchanged.
    k2 = static.StaticallyLaunchedTritonKernel(None)
    with pytest.raises(AssertionError):
        k2.load_kernel(0)
    # An autotuner missing what the rebuilt record needs: nothing recorded, nothing raised.
    shim.record_inductor_kernels(types.SimpleNamespace(compile_results=[types.SimpleNamespace(kernel=k)]))
    shim.record_inductor_kernels(object())
    # A Torch without the hooked attributes: the patch is skipped with a log line.
    empty = types.ModuleType("torch._inductor.runtime.static_triton_launcher")
    shim._patch_static_launcher(empty)
    heur = types.ModuleType("torch._inductor.runtime.triton_heuristics")

    class CachingAutotuner:
        def bench(self):
            return 1.0

    heur.CachingAutotuner = CachingAutotuner
    shim._patch_inductor(heur)
    assert CachingAutotuner().bench() == 1.0


def test_triton_load_hook_records_each_image_once(shim, tmp_path):
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(CUBIN)
    group = {"k.json": str(tmp_path / "k.json"), "k.cubin": str(cubin)}
    for _ in range(2):
        shim._kernel_loaded(None, 1234, KERNEL, group, HASH)
    shim._kernel_loaded(None, None, KERNEL, {}, HASH)  # no cubin in the group: nothing to record
    loads = [r for r in records(tmp_path) if r["kind"] == "load"]
    assert [(r["via"], r["hash"], r["cubin_sha256"]) for r in loads] == [("triton", HASH, SHA)]
    assert shim._handles[1234] == (KERNEL, HASH)


def test_a_compiled_kernel_is_rebuilt_from_its_own_metadata(shim, tmp_path):
    """A TritonCompileResult (not statically launchable): CompiledKernel carries the binary and
    the metadata namedtuple."""
    md = dict(METADATA, num_warps=8, shared=16)
    kernel = types.SimpleNamespace(kernel=CUBIN, hash=HASH, name=KERNEL, metadata_group={},
                                   metadata=types.SimpleNamespace(_asdict=lambda: dict(md)))
    autotuner = types.SimpleNamespace(fn=FakeJit(), filename=None, inductor_meta={"kernel_name": KERNEL},
                                      compile_results=[types.SimpleNamespace(kernel=kernel, compile_meta=COMPILE_META)])
    shim.record_inductor_kernels(autotuner)
    shim.record_inductor_kernels(autotuner)  # once per compilation and image
    comp = [r for r in records(tmp_path) if r["kind"] == "compile"]
    assert len(comp) == 1 and comp[0]["options"]["num_warps"] == 8 and comp[0]["cubin_sha256"] == SHA
    assert "module_sha256" not in comp[0]["fn"] and comp[0]["fn"]["source_sha256"]


def test_warm_records_bind_the_capture_and_generate_a_reproducer(shim, tmp_path, engine_lib):
    """End to end without a GPU: the warm run's records match the captured image by its hash,
    and the generator writes kernel_variant.py from Inductor's module source."""
    from conftest import pack_params, write_capture
    from kerncap import capture, triton_repro
    autotuner, _ = warm_autotuner(shim, tmp_path)
    autotuner._make_launchers()
    base = 0x7f1200000000
    params, slots = pack_params([("Q", base), ("Q", base + 0x80000), ("i", 131072), ("Q", 0), ("Q", 0)])
    write_capture(str(tmp_path), name=KERNEL, params=params, slots=slots, grid=(512, 1, 1), block=(128, 1, 1),
                  image=CUBIN, regions=[(0, base, b"\0" * 0x100000)])
    found = tr.match(tr.load(str(tmp_path / "triton")), capture.load(str(tmp_path)), SHA)
    assert found.how == "cubin sha256" and found.record["via"] == "inductor load"
    summary = triton_repro.generate(str(tmp_path), quiet=True)
    assert summary["config"]["XBLOCK"] == 256 and summary["config"]["num_warps"] == 4
    variant = open(summary["kernel_variant"]).read()
    assert "def triton_poi_fused_gelu_0(" in variant and "tl.store(out_ptr0" in variant


def test_the_rebuilt_record_equals_what_triton_compile_records(shim, tmp_path):
    """With Triton importable: the record rebuilt from compile_meta is the one the compilation
    listener writes for the ASTSource Inductor builds from the same compile_meta."""
    triton = pytest.importorskip("triton")
    from triton.compiler import ASTSource
    mod_dir = tmp_path / "mod"
    mod_dir.mkdir()
    (mod_dir / "inductor_kernel_mod.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n" + FN_SOURCE)
    import importlib.util
    spec = importlib.util.spec_from_file_location("inductor_kernel_mod", mod_dir / "inductor_kernel_mod.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    jit = m.triton_poi_fused_gelu_0
    meta = dict(COMPILE_META, constants=dict(COMPILE_META["constants"]))
    real = ASTSource(jit, meta["signature"], meta["constants"], meta["configs"][0])
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(CUBIN)
    listened = shim.build_compile_record(real, dict(METADATA), {"k.cubin": str(cubin)}, True)
    rebuilt = shim.build_compile_record(shim.LoadedSource(jit, meta), dict(METADATA), {}, True,
                                        image=(SHA, len(CUBIN)))
    assert triton.__version__ and rebuilt == listened

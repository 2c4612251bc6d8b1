"""The shim on load paths where nothing compiles (warm caches): Triton's kernel_load_end_hook,
Inductor's static CUDA launcher, and compile records rebuilt when an Inductor autotuner makes
its launchers; then the records bind a capture by image hash (fake objects: no torch or Triton)."""
import hashlib
import json
import os
import types

from kerncap import triton_records as tr

CUBIN = b"\x7fELF pretend cubin"
SHA = hashlib.sha256(CUBIN).hexdigest()

MODULE_SOURCE = """
import triton
import triton.language as tl
from torch._inductor.runtime import triton_heuristics

@triton.jit
def triton_poi_fused_gelu_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    pass
"""


def records(tmp_path):
    d = tmp_path / "triton" / "records"
    return [json.loads(l) for f in sorted(os.listdir(d)) for l in open(d / f)]


def test_triton_load_hook_records_the_image_hash_once(shim, tmp_path):
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(CUBIN)
    group = {"k.json": str(tmp_path / "k.json"), "k.cubin": str(cubin)}
    for _ in range(2):
        shim._kernel_loaded(None, 1234, "add_kernel", group, "h-add")
    loads = [r for r in records(tmp_path) if r["kind"] == "load"]
    assert len(loads) == 1
    assert loads[0]["cubin_sha256"] == SHA and loads[0]["hash"] == "h-add" and loads[0]["name"] == "add_kernel"
    assert loads[0]["via"] == "triton kernel_load_end_hook" and shim._handles[1234] == ("add_kernel", "h-add")


def fake_static_module(tmp_path):
    mod = types.ModuleType("torch._inductor.runtime.static_cuda_launcher")

    class StaticallyLaunchedCudaKernel:
        def __init__(self):
            self.cubin_path = str(tmp_path / "static.cubin")
            self.name, self.hash, self.num_warps, self.shared = "triton_poi_fused_gelu_0", "h-static", 4, 0
            self.function = None

        def load_kernel(self):
            self.function = 99
            self.cubin_path = None  # as Inductor does: the path is gone once loaded

    mod.StaticallyLaunchedCudaKernel = StaticallyLaunchedCudaKernel
    return mod


class FakeJit:
    """An Inductor JITFunction after prepare_for_pickle: no Python function, source text kept."""
    arg_names = ["in_ptr0", "out_ptr0", "xnumel", "XBLOCK"]
    params = [types.SimpleNamespace(name=n, is_constexpr=n == "XBLOCK") for n in arg_names]
    fn = None
    src = "def triton_poi_fused_gelu_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):\n    pass\n"
    starting_line_number = 6


def fake_autotuner(kernel, caching_autotuner=None):
    cfg = types.SimpleNamespace(kwargs={"XBLOCK": 256}, num_warps=4, num_stages=1)
    a = (caching_autotuner or types.SimpleNamespace)()
    a.fn = FakeJit()
    a.triton_meta = {"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32"},
                     "constants": {}, "configs": [{(0,): [["tt.divisibility", 16]]}]}
    a.inductor_meta = {"kernel_name": "triton_poi_fused_gelu_0"}
    a.compile_results = [types.SimpleNamespace(kernel=kernel, config=cfg)]
    return a


def test_warm_inductor_kernel_is_recorded_on_its_load_path(shim, tmp_path):
    (tmp_path / "static.cubin").write_bytes(CUBIN)
    static = fake_static_module(tmp_path)
    shim._patch_static_launcher(static)
    shim._patch_static_launcher(static)  # once only

    class AsyncCompile:
        def triton(self, kernel_name, source_code, device_str="cuda"):
            return kernel_name

    ac = types.ModuleType("torch._inductor.async_compile")
    ac.AsyncCompile = AsyncCompile
    shim._patch_async_compile(ac)
    assert ac.AsyncCompile().triton("triton_poi_fused_gelu_0", MODULE_SOURCE) == "triton_poi_fused_gelu_0"

    class CachingAutotuner:
        def bench(self, *a):
            return 0.0

        def _make_launchers(self):
            for r in self.compile_results:
                r.kernel.load_kernel()
            self.launchers = ["launcher"]

    heur = types.ModuleType("torch._inductor.runtime.triton_heuristics")
    heur.CachingAutotuner = CachingAutotuner
    shim._patch_inductor(heur)
    kernel = static.StaticallyLaunchedCudaKernel()
    autotuner = fake_autotuner(kernel, CachingAutotuner)
    autotuner._make_launchers()
    autotuner._make_launchers()  # a second call writes nothing new

    recs = records(tmp_path)
    loads = [r for r in recs if r["kind"] == "load"]
    assert [(r["via"], r["hash"], r["cubin_sha256"]) for r in loads] == [
        ("inductor static_cuda_launcher", "h-static", SHA)]
    comp = [r for r in recs if r["kind"] == "compile"]
    assert len(comp) == 1
    c = comp[0]
    assert c["via"] == "inductor load" and c["cubin_sha256"] == SHA and c["name"] == "triton_poi_fused_gelu_0"
    assert c["signature"]["XBLOCK"] == "constexpr" and c["signature"]["in_ptr0"] == "*fp32"
    assert c["constants"] == [[[3], 256]] and c["constexpr_params"] == ["XBLOCK"]
    assert c["attrs"] == [[[0], [["tt.divisibility", 16]]]]
    assert c["options"]["num_warps"] == 4 and c["options"]["num_stages"] == 1 and c["options"]["shared"] == 0
    src_dir = tmp_path / "triton" / "sources"
    assert (src_dir / f"{c['fn']['module_sha256']}.py").read_text() == MODULE_SOURCE
    assert (src_dir / f"{c['fn']['source_sha256']}.py").read_text() == FakeJit.src


def test_a_compiled_kernel_with_its_source_is_rebuilt_from_it(shim, tmp_path):
    src = types.SimpleNamespace(fn=FakeJit(), signature={"in_ptr0": "*fp16", "out_ptr0": "*fp16", "xnumel": "i32",
                                                         "XBLOCK": "constexpr"},
                                constants={"XBLOCK": 128}, attrs={})
    kernel = types.SimpleNamespace(asm={"cubin": CUBIN}, src=src, hash="h-ck", name="triton_poi_fused_gelu_0",
                                   metadata=types.SimpleNamespace(_asdict=lambda: {"num_warps": 8, "shared": 16}))
    shim.record_inductor_kernels(fake_autotuner(kernel))
    c = [r for r in records(tmp_path) if r["kind"] == "compile"][0]
    assert c["signature"]["in_ptr0"] == "*fp16" and c["constants"] == [[[3], 128]]  # the real ASTSource
    assert c["options"]["num_warps"] == 8 and c["cubin_sha256"] == SHA and c["hash"] == "h-ck"


def test_compile_meta_of_the_result_is_preferred(shim, tmp_path):
    """Inductor's CompileResult keeps what _precompile_config passed to triton.compile."""
    kernel = types.SimpleNamespace(cubin_raw=CUBIN, name="triton_poi_fused_gelu_0", hash="h-meta", num_warps=2,
                                   shared=0)
    a = fake_autotuner(kernel)
    a.compile_results[0].compile_meta = {"signature": {"in_ptr0": "*bf16", "out_ptr0": "*bf16", "xnumel": "i32"},
                                         "constants": {"XBLOCK": 64}, "configs": [{}], "num_stages": 2}
    shim.record_inductor_kernels(a)
    c = [r for r in records(tmp_path) if r["kind"] == "compile"][0]
    assert c["signature"]["in_ptr0"] == "*bf16" and c["constants"] == [[[3], 64]]
    assert c["options"]["num_warps"] == 2 and c["options"]["num_stages"] == 1  # the config's, then the meta's
    assert c["cubin_sha256"] == SHA and c["hash"] == "h-meta"


def test_records_written_on_load_paths_bind_a_capture(shim, tmp_path):
    """End to end without a GPU: the warm run's records match the captured image by its hash."""
    from conftest import write_capture
    from kerncap import capture
    (tmp_path / "static.cubin").write_bytes(CUBIN)
    static = fake_static_module(tmp_path)
    shim._patch_static_launcher(static)
    kernel = static.StaticallyLaunchedCudaKernel()
    kernel.load_kernel()
    shim.record_inductor_kernels(fake_autotuner(kernel))
    write_capture(str(tmp_path), image=CUBIN)
    found = tr.match(tr.load(str(tmp_path / "triton")), capture.load(str(tmp_path)), SHA)
    assert found.how == "cubin sha256" and found.record["via"] == "inductor load"

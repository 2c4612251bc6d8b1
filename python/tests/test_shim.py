"""The Triton shim that runs inside the application (triton_shim/)."""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import PY

from kerncap import triton_launch

SHIM_DIR = os.path.join(PY, "kerncap", "triton_shim")


class constexpr:  # stand-ins named like Triton's classes (the shim goes by class name)
    def __init__(self, v):
        self.value = v


class dtype:
    is_fp16 = primitive_bitwidth = None

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name


def test_values_round_trip_through_json(shim):
    for v in (None, True, 7, 2.5, "ieee", (1, (2, 3))):
        enc = json.loads(json.dumps(shim.encode_value(v)))
        assert triton_launch.decode_value(enc) == v
    assert shim.encode_value(constexpr(64)) == 64
    assert shim.encode_value(float("nan")) == {"float": "nan"}
    assert shim.encode_value(dtype("bf16")) == {"dtype": "bf16"}
    assert "repr" in shim.encode_value(object())


def test_records_are_appended_per_process_and_sources_stored_once(shim, tmp_path):
    shim.write_record({"kind": "shim", "event": "x"})
    h1 = shim.save_source("def k(): pass\n")
    assert shim.save_source("def k(): pass\n") == h1
    lines = open(tmp_path / "triton" / "records" / f"{os.getpid()}.jsonl").read().splitlines()
    rec = json.loads(lines[0])
    assert rec["kind"] == "shim" and rec["version"] == 1 and rec["pid"] == os.getpid()
    assert open(tmp_path / "triton" / "sources" / f"{h1}.py").read() == "def k(): pass\n"


def test_ignore_handshake_through_a_loaded_library(shim, tmp_path, monkeypatch):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    src = tmp_path / "fake.c"
    src.write_text("static int depth, total;\n"
                   "int kerncap_ignore_begin(void) { ++total; return ++depth; }\n"
                   "int kerncap_ignore_end(void) { return --depth; }\n"
                   "int fake_depth(void) { return depth; } int fake_total(void) { return total; }\n")
    lib = tmp_path / "libfake.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    monkeypatch.setenv("CUDA_INJECTION64_PATH", str(lib))
    with shim._Benchmarking("k"):
        pass  # not loaded yet: nothing to call, and no crash
    handle = ctypes.CDLL(str(lib))  # what the CUDA driver does at cuInit
    with shim._Benchmarking("k") as b:
        assert b.ignored and handle.fake_depth() == 1
        with shim._Benchmarking("k"):
            assert handle.fake_depth() == 2
    assert handle.fake_depth() == 0 and handle.fake_total() == 2
    recs = [json.loads(l) for l in open(tmp_path / "triton" / "records" / f"{os.getpid()}.jsonl")]
    assert [r["ignored"] for r in recs if r["kind"] == "bench"] == [False, True]
    assert any(r["kind"] == "shim" and r["available"] for r in recs)


def run_python(tmp_path, code, env_extra, pythonpath):
    env = {k: v for k, v in os.environ.items() if k not in ("KERNCAP_TRITON_OUT", "PYTHONPATH")}
    env.update(env_extra, PYTHONPATH=os.pathsep.join(pythonpath))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)


def test_inert_without_output_and_chains_to_the_shadowed_sitecustomize(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.OTHER_SITE = 1\n")
    code = "import builtins, sys; print(getattr(builtins, 'OTHER_SITE', 0), '_kerncap_triton_shim' in sys.modules)"
    p = run_python(tmp_path, code, {}, [SHIM_DIR, str(other)])
    assert p.stdout.split() == ["1", "False"], p.stderr
    p = run_python(tmp_path, code, {"KERNCAP_TRITON_OUT": str(tmp_path / "t")}, [SHIM_DIR, str(other)])
    assert p.stdout.split() == ["1", "True"], p.stderr
    assert any(json.loads(l)["event"] == "start" for f in os.listdir(tmp_path / "t" / "records")
               for l in open(tmp_path / "t" / "records" / f))


def test_hooks_are_installed_when_the_application_imports_triton(tmp_path):
    pytest.importorskip("triton")
    code = textwrap.dedent("""
        import sys
        assert "triton" not in sys.modules
        import triton
        from triton import knobs
        from triton.runtime.autotuner import Autotuner
        print(knobs.compilation.listener is not None, getattr(Autotuner, "_kerncap_patched", False))
    """)
    p = run_python(tmp_path, code, {"KERNCAP_TRITON_OUT": str(tmp_path / "t")}, [SHIM_DIR])
    assert p.stdout.split() == ["True", "True"], p.stderr
    recs = [json.loads(l) for f in os.listdir(tmp_path / "t" / "records") for l in open(tmp_path / "t" / "records" / f)]
    assert any(r.get("event") == "triton" and r.get("triton_version") for r in recs)
    assert not [r for r in recs if r["kind"] == "error"]


def test_compile_record_of_a_real_jit_function(shim, tmp_path):
    triton = pytest.importorskip("triton")
    from triton.compiler.compiler import ASTSource

    mod = tmp_path / "user_kernels.py"
    mod.write_text(textwrap.dedent('''
        import triton
        import triton.language as tl

        @triton.jit
        def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr, ACT: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * alpha, mask=offs < n)
    '''))
    sys.path.insert(0, str(tmp_path))
    try:
        import user_kernels
    finally:
        sys.path.remove(str(tmp_path))
    jit = user_kernels.scale_kernel
    src = ASTSource(jit, {"x_ptr": "*fp32", "out_ptr": "*fp16", "n": "i32", "alpha": "fp32", "BLOCK": "constexpr",
                          "ACT": "constexpr"}, {"BLOCK": 1024, (5,): triton.language.float16},
                    {(0,): [["tt.divisibility", 16]]})
    cubin = tmp_path / "scale_kernel.cubin"
    cubin.write_bytes(b"\x7fELF cubin bytes")
    rec = shim.build_compile_record(src, {"name": "scale_kernel", "hash": "abc", "num_warps": 4, "num_stages": 3,
                                          "num_ctas": 1, "shared": 0, "target": object()},
                                    {"scale_kernel.cubin": str(cubin), "scale_kernel.json": "x"}, False)
    assert rec["name"] == "scale_kernel" and rec["source_kind"] == "ast"
    assert rec["arg_names"] == ["x_ptr", "out_ptr", "n", "alpha", "BLOCK", "ACT"]
    assert rec["constexpr_params"] == ["BLOCK", "ACT"]
    assert rec["constants"] == [[[4], 1024], [[5], {"dtype": "fp16"}]]
    assert rec["attrs"] == [[[0], [["tt.divisibility", 16]]]]
    assert rec["cubin_size"] == len(b"\x7fELF cubin bytes") and len(rec["cubin_sha256"]) == 64
    assert rec["fn"]["file"] == str(mod) and rec["fn"]["line"] == 5
    assert rec["fn"]["package_root"] == str(tmp_path) and SHIM_DIR not in rec["sys_path"]
    text = open(tmp_path / "triton" / "sources" / (rec["fn"]["module_sha256"] + ".py")).read()
    assert text == mod.read_text()
    json.dumps(rec)  # JSON-safe, target object included


def test_package_root_of_a_module(shim, tmp_path):
    pkg = tmp_path / "src" / "liger_kernel" / "ops"
    assert shim.package_root("liger_kernel.ops.dyt", str(pkg / "dyt.py")) == str(tmp_path / "src")
    assert shim.package_root("liger_kernel.ops", str(pkg / "__init__.py")) == str(tmp_path / "src")
    assert shim.package_root("app", str(tmp_path / "app.py")) == str(tmp_path)
    assert shim.package_root("__main__", str(tmp_path / "run.py")) == str(tmp_path)
    assert shim.package_root("other.dyt", str(pkg / "dyt.py")) is None  # the folders do not spell the module
    assert shim.package_root("dyt", str(pkg / "elsewhere.py")) is None


def test_app_sys_path_is_taken_at_compile_time_without_the_shim(shim, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", [SHIM_DIR, str(tmp_path / "late"), ""])
    assert shim._app_sys_path() == [str(tmp_path / "late"), os.path.abspath(".")]


def test_two_shims_on_the_path_do_not_ask_each_other_forever():
    """Two kerncaps' shims (another checkout, a reproducer's copy) each install a watcher of
    their own class: a watched import must still resolve, through the normal finders."""
    import sys

    from conftest import load_shim
    first, second = load_shim(), load_shim()
    assert first._ImportWatcher is not second._ImportWatcher
    a, b = first._ImportWatcher(), second._ImportWatcher()
    sys.meta_path[:0] = [a, b]
    try:
        name = next(iter(first._WATCH))
        # No module of that name may exist here: the answer is None, reached without recursion.
        spec = a.find_spec(name)
        assert spec is None or spec.name == name
        assert b.find_spec("json") is None  # not watched: left to the normal finders
    finally:
        sys.meta_path.remove(a)
        sys.meta_path.remove(b)

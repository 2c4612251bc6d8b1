"""The reproducer generator end to end, offline: a fake capture of a Triton vector kernel and
the records the shim would have written -> name_map.json, launch.json, kernel_variant.py,
reproducer.py. With Triton importable, kernel_variant.py is imported and its grid evaluated."""
import hashlib
import importlib.util
import json
import os
import subprocess
import sys

import pytest
from conftest import pack_params, write_capture

from kerncap import engine, triton_repro

pytestmark = pytest.mark.usefixtures("engine_lib")

MODULE = '''import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 512}), triton.Config({"BLOCK_SIZE": 1024})],
                 key=["n_elements"])
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def main():
    x = torch.rand(98304, device="cuda")
    add_kernel[lambda m: (triton.cdiv(x.numel(), m["BLOCK_SIZE"]),)](x, x, x, x.numel())


if __name__ == "__main__":
    main()
'''
IMAGE = b"\x7fELF add_kernel cubin"
BASE = 0x7f1200000000


def make(tmp_path):
    out = str(tmp_path / "out")
    params, slots = pack_params([("Q", BASE), ("Q", BASE + 0x60000), ("Q", BASE + 0xC0000), ("i", 98304),
                                 ("Q", 0), ("Q", 0)])
    write_capture(out, name="add_kernel", params=params, slots=slots, grid=(96, 1, 1), block=(128, 1, 1),
                  image=IMAGE, regions=[(0, BASE, b"\0" * 0x120000)])
    tdir = os.path.join(out, "triton")
    os.makedirs(os.path.join(tdir, "records"))
    os.makedirs(os.path.join(tdir, "sources"))
    msha = hashlib.sha256(MODULE.encode()).hexdigest()
    with open(os.path.join(tdir, "sources", msha + ".py"), "w") as f:
        f.write(MODULE)
    rec = {"kind": "compile", "version": 1, "pid": 42, "name": "add_kernel", "hash": "hh", "source_kind": "ast",
           "cubin_sha256": hashlib.sha256(IMAGE).hexdigest(),
           "arg_names": ["x_ptr", "y_ptr", "out_ptr", "n_elements", "BLOCK_SIZE"], "constexpr_params": ["BLOCK_SIZE"],
           "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32",
                         "BLOCK_SIZE": "constexpr"},
           "constants": [[[4], 1024]], "attrs": [],
           "options": {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None, "debug": False,
                       "shared": 0, "enable_fp_fusion": True},
           "fn": {"name": "add_kernel", "qualname": "add_kernel", "module": "app", "file": "/app/app.py", "line": 8,
                  "module_sha256": msha}}
    tune = {"kind": "autotune", "version": 1, "pid": 42, "name": "add_kernel", "kernel_hash": "hh",
            "best": {"kwargs": {"BLOCK_SIZE": 1024}, "num_warps": 4, "num_stages": 3, "num_ctas": 1},
            "configs": [{"kwargs": {"BLOCK_SIZE": 512}}, {"kwargs": {"BLOCK_SIZE": 1024}}],
            "timings": [[{"kwargs": {"BLOCK_SIZE": 512}}, [0.02, 0.02, 0.02]],
                        [{"kwargs": {"BLOCK_SIZE": 1024}}, [0.01, 0.01, 0.01]]]}
    bench = {"kind": "bench", "version": 1, "pid": 42, "name": "add_kernel", "launches": 130, "ignored": True}
    with open(os.path.join(tdir, "records", "42.jsonl"), "w") as f:
        for r in (rec, bench, tune):
            f.write(json.dumps(r) + "\n")
    return out


def test_generates_the_reproducer(tmp_path):
    out = make(tmp_path)
    s = triton_repro.generate(out, quiet=True)
    assert s["kernel"] == "add_kernel" and s["matched_by"] == "cubin sha256" and s["autotuned"]
    nm = json.load(open(os.path.join(out, "triton", "name_map.json")))
    assert nm["captured"]["hash"] == "hh" and nm["autotune"]["best"]["kwargs"] == {"BLOCK_SIZE": 1024}
    assert nm["benchmarks"]["add_kernel"] == {"benchmarks": 1, "launches": 130, "ignored_by_kerncap": True}
    plan = json.load(open(os.path.join(out, "triton", "launch.json")))
    assert plan["programs"] == [96, 1, 1] and plan["extra_slots"] == 2
    src = open(os.path.join(out, "kernel_variant.py")).read()
    assert "triton.autotune" not in src.split("# ---- kerncap")[0].replace("#   @triton.autotune", "")
    assert '"BLOCK_SIZE": 1024,' in src and '"num_warps": 4,' in src
    assert 'return (triton.cdiv(meta["n_elements"], meta["BLOCK_SIZE"]), 1, 1)' in src
    assert "def main" not in src and "__main__" not in src
    assert "0.0100 ms" in src  # the autotuner's timings, best first
    compile(src, "kernel_variant.py", "exec")
    for f in ("reproducer.py", "kerncap_repro/runtime.py", "kerncap_repro/capture.py", "kerncap_repro/engine.py",
              "kerncap_repro/triton_launch.py", "kerncap_repro/__init__.py", "kerncap_repro/" + engine.LIBRARY_NAME):
        assert os.path.isfile(os.path.join(out, f)), f
    assert sorted(os.listdir(os.path.join(out, "kerncap_repro"))) == sorted(
        ["__init__.py", "runtime.py", "capture.py", "engine.py", "triton_launch.py", "out_layout.py",
         engine.LIBRARY_NAME])
    # The three fp32 pointers into the one captured region each own their extent.
    assert json.load(open(os.path.join(out, "compare.json"))) == {"dtype": "bytes", "spans": [
        {"base": hex(BASE), "size": 0x60000, "dtype": "fp32"},
        {"base": hex(BASE + 0x60000), "size": 0x60000, "dtype": "fp32"},
        {"base": hex(BASE + 0xC0000), "size": 0x60000, "dtype": "fp32"}]}
    assert s["compare"] == os.path.join(out, "compare.json")
    # Generating again leaves it be; an edited one is kept aside, never lost.
    assert not any("compare.json" in w for w in triton_repro.generate(out, quiet=True)["warnings"])
    spec = json.load(open(os.path.join(out, "compare.json")))
    spec["spans"][0]["rtol"] = 0.5
    json.dump(spec, open(os.path.join(out, "compare.json"), "w"))
    assert any("compare.json.prev" in w for w in triton_repro.generate(out, quiet=True)["warnings"])
    assert json.load(open(os.path.join(out, "compare.json.prev")))["spans"][0]["rtol"] == 0.5
    assert "rtol" not in json.load(open(os.path.join(out, "compare.json")))["spans"][0]
    assert "add_kernel" in open(os.path.join(out, "reproducer.py")).read()


def test_variant_imports_with_triton_and_grid_follows_block(tmp_path):
    pytest.importorskip("triton")
    from triton.runtime.jit import JITFunction

    out = make(tmp_path)
    triton_repro.generate(out, quiet=True)
    spec = importlib.util.spec_from_file_location("kernel_variant_t", os.path.join(out, "kernel_variant.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert isinstance(mod.KERNEL, JITFunction)
    meta = {"n_elements": 98304, **mod.CONFIG}
    assert tuple(mod.grid(meta)) == (96, 1, 1)
    meta["BLOCK_SIZE"] = 512
    assert tuple(mod.grid(meta)) == (192, 1, 1)


def test_runtime_copy_is_importable_as_its_own_package(tmp_path, monkeypatch):
    out = make(tmp_path)
    triton_repro.generate(out, quiet=True)
    sys.path.insert(0, out)
    monkeypatch.delenv(engine.ENV_LIBRARY, raising=False)
    try:
        import kerncap_repro.engine as eng2
        import kerncap_repro.runtime as rt
        import kerncap_repro.triton_launch as tl2
        opts = rt.parse(["--json", "-n", "5"])
        assert opts.json and opts.iterations == 5
        assert tl2.plan_from_json(json.load(open(os.path.join(out, "triton", "launch.json")))).kernel == "add_kernel"
        # The copy finds the engine copied beside it first, and reads the capture with it.
        assert eng2.locate() == os.path.join(out, "kerncap_repro", engine.LIBRARY_NAME)
        assert rt.capture.load(out).mangled == "add_kernel"
    finally:
        sys.path.remove(out)
        for k in [k for k in sys.modules if k.startswith("kerncap_repro")]:
            del sys.modules[k]


def test_cli_exit_code_2_without_records(tmp_path, capsys):
    out = str(tmp_path / "o")
    write_capture(out)
    assert triton_repro.main([out]) == 2
    assert "no Triton compile or kernel load was recorded" in capsys.readouterr().err
    assert os.path.isfile(os.path.join(out, "triton", "name_map.json"))  # written even then, for diagnosis


def test_auto_mode_notes_a_kernel_no_record_names(tmp_path, capsys):
    # `kerncap extract` runs the generator after every capture of a Python application; a
    # cuBLAS kernel there is no Triton kernel: one note and the exit code extract gave, not an error.
    out = str(tmp_path / "o")
    write_capture(out)
    assert triton_repro.main(["--auto", "--not-triton-exit", "9", out]) == 9
    err = capsys.readouterr().err
    assert "kerncap: note: no Triton reproducer" in err and "error" not in err
    # A manual run without the option gets the default, which no other outcome uses.
    assert triton_repro.main(["--auto", out]) == triton_repro.DEFAULT_NOT_TRITON_EXIT
    assert triton_repro.DEFAULT_NOT_TRITON_EXIT not in triton_repro.OTHER_EXITS
    # Without --auto the same case is an error, whatever the option says.
    assert triton_repro.main(["--not-triton-exit", "9", out]) == 2


@pytest.mark.parametrize("code", ["0", "2", "3", "70", "126", "-1", "x"])
def test_not_triton_exit_refuses_codes_that_mean_something_else(tmp_path, capsys, code):
    # 2 and 3 are the engine's input and device errors: taken for "not Triton", extract would
    # hide them.
    with pytest.raises(SystemExit) as e:
        triton_repro.main(["--auto", "--not-triton-exit", code, str(tmp_path)])
    assert e.value.code == 2
    assert "--not-triton-exit" in capsys.readouterr().err


APP_MODULE = '''from applib.consts import SCALE
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr, SCALE)
'''
# Just enough of `triton` for kernel_variant.py to import (the real one needs a GPU stack).
STUB_TRITON = {"triton/__init__.py": "def jit(f=None, **kw):\n    return f if f else (lambda g: g)\n"
                                     "def cdiv(a, b):\n    return -(-a // b)\n",
               "triton/language/__init__.py": "class constexpr:\n    pass\n"}


def test_variant_imports_the_applications_package(tmp_path):
    """The kernel's module imports its own package (as Liger's kernels do): name_map.json keeps
    the application's package root and sys.path, and kernel_variant.py adds them itself."""
    out = str(tmp_path / "out")
    params, slots = pack_params([("Q", BASE), ("i", 4096), ("Q", 0), ("Q", 0)])
    write_capture(out, name="scale_kernel", params=params, slots=slots, grid=(4, 1, 1), block=(128, 1, 1),
                  image=IMAGE, regions=[(0, BASE, b"\0" * 0x4000)])
    src_root = tmp_path / "app" / "src"
    (src_root / "applib").mkdir(parents=True)
    (src_root / "applib" / "__init__.py").write_text("")
    (src_root / "applib" / "consts.py").write_text("SCALE = 3\n")
    (src_root / "applib" / "kern.py").write_text(APP_MODULE)
    gone = str(tmp_path / "deleted-later")
    tdir = os.path.join(out, "triton")
    os.makedirs(os.path.join(tdir, "records"))
    os.makedirs(os.path.join(tdir, "sources"))
    msha = hashlib.sha256(APP_MODULE.encode()).hexdigest()
    with open(os.path.join(tdir, "sources", msha + ".py"), "w") as f:
        f.write(APP_MODULE)
    rec = {"kind": "compile", "version": 1, "pid": 7, "name": "scale_kernel", "hash": "h2", "source_kind": "ast",
           "cubin_sha256": hashlib.sha256(IMAGE).hexdigest(), "arg_names": ["x_ptr", "n", "BLOCK"],
           "constexpr_params": ["BLOCK"], "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
           "constants": [[[2], 1024]], "attrs": [], "options": {"num_warps": 4, "num_stages": 3, "shared": 0},
           "sys_path": [gone, str(tmp_path / "app")],
           "fn": {"name": "scale_kernel", "qualname": "scale_kernel", "module": "applib.kern",
                  "file": str(src_root / "applib" / "kern.py"), "line": 6, "module_sha256": msha,
                  "package_root": str(src_root)}}
    with open(os.path.join(tdir, "records", "7.jsonl"), "w") as f:
        f.write(json.dumps(rec) + "\n")
    triton_repro.generate(out, quiet=True)
    nm = json.load(open(os.path.join(tdir, "name_map.json")))
    assert nm["python_path"] == {"package_root": str(src_root), "sys_path": [gone, str(tmp_path / "app")]}
    src = open(os.path.join(out, "kernel_variant.py")).read()
    assert src.index("_KC_PACKAGE_ROOT") < src.index("from applib.consts import SCALE")
    stub = tmp_path / "stub"
    for rel, text in STUB_TRITON.items():
        (stub / rel).parent.mkdir(parents=True, exist_ok=True)
        (stub / rel).write_text(text)
    code = ("import runpy, sys; v = runpy.run_path(sys.argv[1]); "
            "print(v['SCALE'], v['CONFIG']['BLOCK'], sys.path.index(sys.argv[2]), sys.argv[3] in sys.path)")
    env = dict(os.environ, PYTHONPATH=str(stub))
    p = subprocess.run([sys.executable, "-S", "-c", code, os.path.join(out, "kernel_variant.py"), str(src_root), gone],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["3", "1024", "0", "False"]


def test_docstring_text_cannot_end_the_docstring():
    evil = 'k"""\nimport os; os.system("touch PWNED")\n"""\\'
    text = triton_repro.docstring_text(evil)
    assert "\n" not in text and '"""' not in text
    src = '"""Reproducer of ' + text + '."""\nRESULT = 1\n'
    ns = {}
    exec(compile(src, "reproducer.py", "exec"), ns)  # one docstring and one assignment, nothing else
    assert ns["RESULT"] == 1 and "os" not in ns
    assert ns["__doc__"] == "Reproducer of " + evil + "."  # the name itself, as text


def _patch_record(out, **changes):
    path = os.path.join(out, "triton", "records", "42.jsonl")
    recs = [json.loads(ln) for ln in open(path)]
    for r in recs:
        if r["kind"] == "compile":
            for k, v in changes.items():
                if k == "fn":
                    r["fn"].update(v)
                else:
                    r[k] = v
    with open(path, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in recs))


def test_capture_data_cannot_inject_code_into_kernel_variant(tmp_path):
    """Names and paths from a (shared, untrusted) capture land in comments and literals of
    kernel_variant.py only as text: a newline or a quote in them starts no code."""
    out = make(tmp_path)
    evil = "x\nimport os; os.system('touch PWNED')\r#"
    _patch_record(out, fn={"file": evil, "qualname": evil, "module": evil}, pid=evil)
    triton_repro.generate(out, quiet=True)
    src = open(os.path.join(out, "kernel_variant.py")).read()
    assert "\nimport os; os.system" not in src and "\rimport" not in src and "\r" not in src
    compile(src, "kernel_variant.py", "exec")


def test_a_kernel_name_that_is_not_an_identifier_is_refused(tmp_path, capsys):
    out = make(tmp_path)
    _patch_record(out, fn={"name": "add_kernel\nimport os"})
    assert triton_repro.main([out, "-q"]) == 2
    assert "not a Python identifier" in capsys.readouterr().err
    assert not os.path.exists(os.path.join(out, "kernel_variant.py"))


def test_constexpr_literals_from_the_capture_stay_literals():
    from kerncap import triton_launch as tl_
    evil = 'inf") + __import__("os").system("touch PWNED") + float("1'
    assert tl_.python_literal({"float": evil}) == "float(" + json.dumps(evil) + ")"
    assert tl_.python_literal({"dtype": evil}).startswith("tl.dtype(\"inf\\\"")
    with pytest.raises(tl_.UnsafeName):
        tl_.python_literal({"jit_function": "pkg.mod.f(); import os"})
    assert tl_.grid_expr(("cdiv", 'n"]+x["', "BLOCK"), 4) == 'triton.cdiv(meta["n\\"]+x[\\""], meta["BLOCK"])'

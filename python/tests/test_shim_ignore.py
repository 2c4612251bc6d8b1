"""The shim's ignore window around benchmarking outside the autotuners: triton.testing.do_bench
and Inductor's Benchmarker, select_algorithm and autotune_process (fake modules: no torch or
Triton needed)."""
import json
import os
import textwrap
import types

from test_shim import SHIM_DIR, run_python


def fake_lib(shim):
    """Stands in for libkerncap's kerncap_ignore_begin/end; returns the call log."""
    calls = []
    state = {"depth": 0}

    def begin():
        state["depth"] += 1
        calls.append(("begin", state["depth"]))
        return state["depth"]

    def end():
        state["depth"] -= 1
        calls.append(("end", state["depth"]))
        return state["depth"]

    shim._lib["fns"] = (begin, end)
    return calls, state


def fake_benchmarking_module(state):
    mod = types.ModuleType("torch._inductor.runtime.benchmarking")

    def depth_now(*_a, **_k):
        return state["depth"]

    class Benchmarker:
        def benchmark(self, fn):
            return self.benchmark_gpu(fn)

        def benchmark_gpu(self, fn):
            fn()
            return depth_now()

        @staticmethod
        def benchmark_static():
            return depth_now()

        @classmethod
        def benchmark_cls(cls):
            return (cls.__name__, depth_now())

        @property
        def benchmark_prop(self):
            return depth_now()

        def benchmark_gen(self):
            yield depth_now()

        def infer_device(self):
            return depth_now()

    class InductorBenchmarker(Benchmarker):
        def benchmark_gpu(self, fn):
            return super().benchmark_gpu(fn)

    for cls in (Benchmarker, InductorBenchmarker):
        cls.__module__ = mod.__name__
        setattr(mod, cls.__name__, cls)
    mod.benchmarker = InductorBenchmarker()
    mod.Imported = dict  # a class from elsewhere: left alone
    return mod


def records(tmp_path, out="triton"):
    d = tmp_path / out / "records"
    return [json.loads(l) for f in sorted(os.listdir(d)) for l in open(d / f)]


def test_benchmark_methods_run_inside_the_ignore_window(shim, tmp_path):
    calls, state = fake_lib(shim)
    mod = fake_benchmarking_module(state)
    shim._patch_benchmark_methods(mod)
    b = mod.benchmarker  # made before the patch, as Inductor's module-level instance is
    assert b.benchmark(lambda: None) == 3  # benchmark -> InductorBenchmarker.benchmark_gpu -> super(): nested
    assert state["depth"] == 0 and calls[0] == ("begin", 1) and calls[-1] == ("end", 0)
    assert mod.Benchmarker.benchmark_static() == 1
    assert mod.InductorBenchmarker.benchmark_cls() == ("InductorBenchmarker", 1)
    assert b.benchmark_prop == 0 and list(b.benchmark_gen()) == [0] and b.infer_device() == 0
    assert not hasattr(dict, "_kerncap_ignoring") and mod.Imported is dict
    rec = [r for r in records(tmp_path) if r.get("event") == "ignore_window"][0]
    assert sorted(rec["wrapped"]) == ["Benchmarker.benchmark", "Benchmarker.benchmark_cls",
                                      "Benchmarker.benchmark_gpu", "Benchmarker.benchmark_static",
                                      "InductorBenchmarker.benchmark_gpu"]
    bench = [r for r in records(tmp_path) if r["kind"] == "bench"]
    assert bench[0]["name"] == "Benchmarker.benchmark" and bench[0]["ignored"] is True


def test_patching_twice_wraps_once(shim):
    calls, state = fake_lib(shim)
    mod = fake_benchmarking_module(state)
    shim._patch_benchmark_methods(mod)
    shim._patch_benchmark_methods(mod)
    assert mod.benchmarker.benchmark_gpu(lambda: None) == 2  # its own window and its super()'s, not 4
    assert mod.Benchmarker.benchmark_static() == 1


def test_do_bench_runs_inside_the_ignore_window_and_exceptions_close_it(shim):
    calls, state = fake_lib(shim)
    mod = types.ModuleType("triton.testing")

    def do_bench(fn, warmup=25, rep=100):
        fn()
        return float(state["depth"])

    def do_bench_cudagraph(fn):
        raise RuntimeError("capture failed")

    mod.do_bench, mod.do_bench_cudagraph = do_bench, do_bench_cudagraph
    shim._patch_triton_testing(mod)
    assert mod.do_bench(lambda: None, rep=3) == 1.0 and mod.do_bench.__name__ == "do_bench"
    try:
        mod.do_bench_cudagraph(lambda: None)
    except RuntimeError:
        pass
    assert state["depth"] == 0 and calls.count(("begin", 1)) == 2


FAKE_TRITON_TESTING = """
import _kerncap_triton_shim as shim
def do_bench(fn, **kw):
    fn()
    return getattr(shim._tls, "bench", 0)
"""
FAKE_BENCHMARKING = """
import _kerncap_triton_shim as shim
class Benchmarker:
    def benchmark_gpu(self, fn, **kw):
        from triton.testing import do_bench
        return (getattr(shim._tls, "bench", 0), do_bench(fn))
benchmarker = Benchmarker()
"""
FAKE_SELECT = """
import _kerncap_triton_shim as shim
class AlgorithmSelectorCache:
    @classmethod
    def benchmark_choices(cls, choices):
        return [getattr(shim._tls, "bench", 0) for _ in choices]
    def __call__(self):
        return getattr(shim._tls, "bench", 0)
"""


def test_watched_modules_are_wrapped_when_the_application_imports_them(tmp_path):
    fake = tmp_path / "fake"
    for rel, text in {"triton/__init__.py": "", "triton/testing.py": FAKE_TRITON_TESTING,
                      "torch/__init__.py": "", "torch/_inductor/__init__.py": "",
                      "torch/_inductor/runtime/__init__.py": "",
                      "torch/_inductor/runtime/benchmarking.py": FAKE_BENCHMARKING,
                      "torch/_inductor/select_algorithm.py": FAKE_SELECT}.items():
        (fake / rel).parent.mkdir(parents=True, exist_ok=True)
        (fake / rel).write_text(text)
    code = textwrap.dedent("""
        from torch._inductor.runtime.benchmarking import benchmarker
        from torch._inductor.select_algorithm import AlgorithmSelectorCache
        import triton.testing
        print(benchmarker.benchmark_gpu(lambda: None), triton.testing.do_bench(lambda: None),
              AlgorithmSelectorCache.benchmark_choices([1, 2]), AlgorithmSelectorCache()())
    """)
    p = run_python(tmp_path, code, {"KERNCAP_TRITON_OUT": str(tmp_path / "t")}, [SHIM_DIR, str(fake)])
    assert p.returncode == 0, p.stderr
    # Nested: benchmark_gpu's window, then do_bench's inside it; the model's own call is outside.
    assert p.stdout.split() == ["(1,", "2)", "1", "[1,", "1]", "0"], p.stdout
    recs = records(tmp_path, "t")
    windows = {r["module"]: r["wrapped"] for r in recs if r.get("event") == "ignore_window"}
    assert windows["triton.testing"] == ["do_bench"]
    assert windows["torch._inductor.runtime.benchmarking"] == ["Benchmarker.benchmark_gpu"]
    assert windows["torch._inductor.select_algorithm"] == ["AlgorithmSelectorCache.benchmark_choices"]
    assert [r["name"] for r in recs if r["kind"] == "bench"] == [
        "Benchmarker.benchmark_gpu", "triton.testing.do_bench", "AlgorithmSelectorCache.benchmark_choices"]

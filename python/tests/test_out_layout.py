"""The OUT/ names Python uses are the C++ definitions (src/format/out_layout.hpp)."""
import os
import re

import pytest

from kerncap import out_layout

HPP = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   "src", "format", "out_layout.hpp")
# Python constant -> the C++ constant that defines it
PAIRS = {"TRITON": "kTriton", "KERNEL_VARIANT_PY": "kKernelVariantPy", "REPRODUCER_PY": "kReproducerPy",
         "REPRO_RUNTIME": "kReproRuntime", "CANDIDATE_CUBIN": "kCandidateCubin",
         "CANDIDATE_JSON": "kCandidateJson", "COMPARE_SPEC": "kCompareSpec", "TRITON_RECORDS": "kTritonRecords",
         "TRITON_LAUNCH_PLAN": "kTritonLaunchPlan", "TRITON_NAME_MAP": "kTritonNameMap",
         "REGIMES_INDEX": "kRegimesIndex",
         "REGIME_KERNELS_INDEX": "kRegimeKernelsIndex"}


def test_python_names_are_the_cpp_names():
    if not os.path.isfile(HPP):
        pytest.skip("src/format/out_layout.hpp is not in this tree yet")
    cpp = dict(re.findall(r'constexpr std::string_view (k\w+) = "([^"]*)"', open(HPP).read()))
    for py, c in PAIRS.items():
        assert c in cpp, f"{c} is gone from out_layout.hpp"
        assert getattr(out_layout, py) == cpp[c], py
    assert sorted(PAIRS) == sorted(n for n in vars(out_layout) if n.isupper())

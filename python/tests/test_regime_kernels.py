"""`extract --regimes` over several kernels: the JSON it prints reads into RegimeKernelsResult
(each kernel's set a RegimesResult with its directory), and `validate OUT`'s document over the
kernels reads into RegimeValidateResult; both formats are known to the package."""
from kerncap.api import KNOWN_FORMATS
from kerncap.json_fields import from_json
from kerncap.results import RegimeKernelsResult, RegimeValidateResult

EXTRACT = {"output": "/iso/model",
           "kernels": [{"format": "kerncap-regimes", "version": 1, "dir": "00-rms_norm_kernel",
                        "kernel": {"mangled": "_Z15rms_norm_kernel", "demangled": "rms_norm_kernel"},
                        "launches": 85, "time_ns": 900, "app_time_ns": 2000,
                        "regimes": [{"dir": "00-rms_norm_kernel", "grid": [1, 1, 1], "block": [128, 1, 1],
                                     "launches": 80, "share": 0.9, "captured": True},
                                    {"dir": "01-rms_norm_kernel", "grid": [192, 1, 1], "block": [128, 1, 1],
                                     "launches": 5, "share": 0.1, "captured": True}]},
                       {"format": "kerncap-regimes", "version": 1, "dir": "01-elementwise_kernel",
                        "kernel": {"mangled": "ew", "demangled": "elementwise_kernel"}, "regimes": []}]}


def test_the_extract_document_reads_into_one_set_per_kernel():
    r = from_json(RegimeKernelsResult, EXTRACT)
    assert r.output == "/iso/model"
    assert [k.dir for k in r.kernels] == ["00-rms_norm_kernel", "01-elementwise_kernel"]
    assert [g.launches for g in r.kernels[0].regimes] == [80, 5]
    assert r.kernels[0].kernel["demangled"] == "rms_norm_kernel"


def test_the_verdict_over_kernels_reads_and_says_pass_or_fail():
    doc = {"format": "kerncap-regime-kernels-verdict", "version": 1, "result": "FAIL",
           "line": "Result: FAIL (1 of 2 kernel(s) fail: 01-gemm)", "failed": ["01-gemm"], "kernels": []}
    v = from_json(RegimeValidateResult, doc)
    assert not v.passed and v.failed == ["01-gemm"]


def test_both_formats_are_known():
    assert KNOWN_FORMATS["kerncap-regime-kernels"] == ("version", 1)
    assert KNOWN_FORMATS["kerncap-regime-kernels-verdict"] == ("version", 1)

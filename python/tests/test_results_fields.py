"""The dataclasses name every key the real CLI prints: `kerncap info --json` on a fixture capture
(offline) fills InfoResult with nothing left over, and each result type's fields are unique JSON
keys."""
import dataclasses

from conftest import write_capture

from kerncap import Kerncap, results


def json_keys(cls):
    return {f.metadata.get("json", f.name) for f in dataclasses.fields(cls)} - {"raw"}


def test_info_has_a_field_for_every_key(kerncap_bin, tmp_path):
    out = tmp_path / "out"
    write_capture(str(out), name="_Z4axpyPff", regions=[(0, 0x7f0000000000, b"\1" * 32)], after=[(0, 0, b"\2" * 8)])
    info = Kerncap(binary=kerncap_bin).info(str(out), verify=True)
    assert set(info.raw) <= json_keys(results.InfoResult), set(info.raw) - json_keys(results.InfoResult)
    assert info.kernel.mangled == "_Z4axpyPff" and info.verified is True and info.format_version >= 1
    assert info.regions[0]["size"] == 32 and info.capture_dir.endswith("capture")


def test_every_result_type_maps_keys_one_to_one():
    for cls in vars(results).values():
        if dataclasses.is_dataclass(cls):
            keys = [f.metadata.get("json", f.name) for f in dataclasses.fields(cls)]
            assert len(keys) == len(set(keys)), cls


def lint_fixture(kerncap_bin):
    """The build's fixture cubin with k_spill (tests/fixtures/cubin/lint.cu), or None."""
    import os
    build = os.path.dirname(os.path.dirname(os.path.abspath(kerncap_bin)))
    path = os.path.join(build, "tests", "fixtures", "cubin", "lint_sm90.cubin")
    return open(path, "rb").read() if os.path.isfile(path) else None


def test_lint_has_a_field_for_every_key(kerncap_bin, tmp_path):
    import pytest
    image = lint_fixture(kerncap_bin)
    if image is None:
        pytest.skip("no fixture cubin in the build tree (tests/fixtures/cubin/lint_sm90.cubin)")
    out = tmp_path / "out"
    write_capture(str(out), name="k_spill", image=image, block=(1024, 1, 1))
    li = Kerncap(binary=kerncap_bin).lint(str(out), no_sass=True, max_registers=24)
    assert set(li.raw) <= json_keys(results.LintResult), set(li.raw) - json_keys(results.LintResult)
    assert not li.passed and li.line == "Result: FAIL" and li.resources is not None and li.resources.registers == 32
    assert set(li.raw["resources"]) <= json_keys(results.LintResources)
    assert any(c.name == "registers" and c.status == "fail" for c in li.checks)


def test_validate_result_has_a_field_for_every_key_of_the_verdict_document(kerncap_bin):
    """`kerncap env --json` lists every key validate --json can print (the one judge's verdict
    document, src/cli/validate_output.cpp): ValidateResult names each of them, and no other."""
    import json
    import subprocess
    out = subprocess.run([kerncap_bin, "env", "--json"], check=True, capture_output=True, text=True).stdout
    keys = set(json.loads(out)["documents"]["kerncap-verdict"]["keys"])
    fields = json_keys(results.ValidateResult)
    assert keys - fields == set(), f"keys without a field in ValidateResult: {sorted(keys - fields)}"
    assert fields - keys == set(), f"ValidateResult fields no document has: {sorted(fields - keys)}"

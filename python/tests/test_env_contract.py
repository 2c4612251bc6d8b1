"""The KERNCAP_* names the Python package uses are the ones the C++ table defines
(src/format/protocol.cpp, printed by `kerncap env --json`): a renamed or new variable
cannot drift between the languages unnoticed."""
import json
import os
import re
import subprocess

import pytest

PY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(PY, "kerncap")
NAME = re.compile(r"\bKERNCAP_[A-Z0-9_]+\b")


def kerncap_binary():
    candidates = [os.environ.get("KERNCAP_BIN")]
    root = os.path.dirname(PY)
    candidates += [os.path.join(root, b, "bin", "kerncap") for b in ("build", "build-release")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    pytest.skip("no kerncap binary (build the project first, or set KERNCAP_BIN)")


@pytest.fixture(scope="module")
def table():
    out = subprocess.run([kerncap_binary(), "env", "--json"], check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    assert isinstance(doc["protocol"], int) and doc["protocol"] >= 1
    return {v["name"]: v for v in doc["variables"]}


def names_in_package():
    """{name: set of files (relative to python/kerncap) that spell it}."""
    found = {}
    for d, _, files in os.walk(PACKAGE):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(d, f)
            with open(path, encoding="utf-8") as fh:
                for name in NAME.findall(fh.read()):
                    found.setdefault(name, set()).add(os.path.relpath(path, PACKAGE))
    return found


def test_the_package_spells_only_variables_of_the_table(table):
    found = names_in_package()
    assert found, "expected the package to use some KERNCAP_* variables"
    unknown = {n: sorted(f) for n, f in found.items() if n not in table}
    assert not unknown, f"KERNCAP_* names in python/kerncap missing from src/format/protocol.cpp: {unknown}"


def test_python_readers_match_the_table(table):
    found = names_in_package()
    for name, files in found.items():
        readers = set(table[name]["readers"])
        if any(f.startswith("triton_shim" + os.sep) for f in files):
            assert "triton-shim" in readers, f"{name} is read by the Triton shim but the table says {readers}"
        assert readers & {"triton-shim", "python-api"}, f"{name} is used from Python but the table says {readers}"
    for name, v in table.items():
        if set(v["readers"]) & {"triton-shim", "python-api"}:
            assert name in found, f"the table says Python reads {name}, but python/kerncap never names it"


def test_the_library_variables_the_shim_shares_have_one_meaning(table):
    # The shim's verbosity is the library's: one variable, not two.
    assert set(table["KERNCAP_VERBOSE"]["readers"]) >= {"library", "triton-shim"}


def test_known_formats_match_the_cli():
    """The documents the Python package reads are the ones, at the versions, the CLI writes
    (`kerncap env --json`'s "documents", from src/cli/document_versions.hpp): a version bump in
    C++ fails here until the package has been checked against it."""
    from kerncap.api import KNOWN_FORMATS
    out = subprocess.run([kerncap_binary(), "env", "--json"], check=True, capture_output=True, text=True).stdout
    documents = json.loads(out)["documents"]
    assert {name: (d["field"], d["version"]) for name, d in documents.items()} == KNOWN_FORMATS

"""The layout `pip install .` leaves (run.sh --installed): the commands run from PATH, the Python
package finds the engine it was installed with, and the CLI finds the capture library it
injects — all inside site-packages/kerncap, nothing from the source tree or the build tree.
No GPU needed."""
import ctypes
import json
import os
import shutil
import sys
import subprocess

import pytest

from conftest import PY, SOURCE
from kerncap import _commands, engine

PACKAGE = os.path.join(PY, "kerncap")

pytestmark = [
    pytest.mark.skipif("not config.getoption('--installed')", reason="tests the installed package (run.sh --installed)"),
    pytest.mark.skipif(PY == SOURCE, reason="an editable install: the package is this checkout's python/"),
]


def run(*args, env=None):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=60, cwd="/", env=env)


@pytest.mark.parametrize("command", ["kerncap", "kerncap-replay"])
def test_commands_run_from_path(command):
    path = shutil.which(command)
    assert path, f"{command} is not on PATH"
    p = run(command, "--help")
    assert p.returncode == 0, p.stderr
    assert "Usage" in p.stdout or "usage" in p.stdout.lower()
    assert _commands.program(command) == os.path.join(PACKAGE, "bin", command)


def test_programs_and_libraries_are_inside_the_package():
    for f in ["bin/kerncap", "bin/kerncap-replay", "lib/libkerncap.so", "lib/libcupti.so.13",
              "lib/libkerncap_replay.so", "triton_shim/sitecustomize.py", "templates/reproducer.py",
              "share/kerncap/locate_rules.toml", "share/kerncap/doc/install.md", "include/kerncap/replay.h"]:
        assert os.path.isfile(os.path.join(PACKAGE, f)), f"{f} is missing from {PACKAGE}"
    for f in ["bin/kerncap", "bin/kerncap-replay"]:
        assert os.access(os.path.join(PACKAGE, f), os.X_OK)


def test_the_package_finds_its_own_engine():
    os.environ.pop(engine.ENV_LIBRARY, None)
    assert engine.locate() == os.path.join(PACKAGE, "lib", engine.LIBRARY_NAME)
    assert engine.load().lib.kc_abi_version() == engine.ABI_VERSION


def test_the_cli_finds_the_capture_library_and_the_python_package():
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNCAP_")}
    p = run("kerncap", "env", "--paths", "--json", env=env)
    assert p.returncode == 0, p.stderr
    found = json.loads(p.stdout)
    assert found["library"] == os.path.join(os.path.realpath(PACKAGE), "lib", "libkerncap.so")
    assert found["python_dir"] == os.path.realpath(PY)


def test_the_capture_library_loads_with_what_is_beside_it():
    # libkerncap.so needs libcupti.so.13, found beside it (RUNPATH $ORIGIN) without LD_LIBRARY_PATH.
    code = f"import ctypes; ctypes.CDLL({os.path.join(PACKAGE, 'lib', 'libkerncap.so')!r}, ctypes.RTLD_LOCAL)"
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr


def test_installed_programs_name_no_build_tree():
    # Stripped, with RPATHs relative to themselves: nothing points back at the build machine's tree.
    build = os.path.join(os.path.dirname(SOURCE), "build").encode()
    for f in ["bin/kerncap", "lib/libkerncap.so", "lib/libkerncap_replay.so"]:
        with open(os.path.join(PACKAGE, f), "rb") as fh:
            assert build + b"/" not in fh.read(), f"{f} names {build.decode()}"

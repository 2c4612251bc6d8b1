"""Which `kerncap` executable the Python API runs: one lookup, in one place.

Order: the caller's `binary=`, $KERNCAP_BIN, the one installed with this package (beside the
package or in this interpreter's scripts folder), PATH, then a CMake build tree of the source
checkout the package was imported from."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
from typing import List, Optional

from .errors import KerncapNotFoundError

ENV_BIN = "KERNCAP_BIN"
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(PACKAGE_DIR))  # the checkout, when imported from python/


def _executable(path: Optional[str]) -> Optional[str]:
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def candidates() -> List[str]:
    """Every place looked at after binary= and $KERNCAP_BIN, in order (for the error message)."""
    places = [os.path.join(PACKAGE_DIR, "bin", "kerncap")]
    scripts = sysconfig.get_path("scripts")
    if scripts:
        places.append(os.path.join(scripts, "kerncap"))
    on_path = shutil.which("kerncap")
    if on_path:
        places.append(on_path)
    places += [os.path.join(SOURCE_ROOT, b, "bin", "kerncap") for b in ("build", "build-release")]
    return places


def find_kerncap(binary: Optional[str] = None) -> str:
    """The kerncap executable to run; KerncapNotFoundError (an input error) when there is none."""
    for given, what in ((binary, "binary="), (os.environ.get(ENV_BIN), f"${ENV_BIN}")):
        if given:
            found = _executable(given) or _executable(shutil.which(given) if os.sep not in given else None)
            if not found:
                raise KerncapNotFoundError(f"{what} {given}: not an executable file", 2, [])
            return found
    for place in candidates():
        if _executable(place):
            return place
    raise KerncapNotFoundError(
        "kerncap executable not found: install the package with its command (pip install kerncap), put kerncap "
        f"on PATH, set ${ENV_BIN}, or pass binary=; looked in " + ", ".join(candidates()), 2, [])


_VERSION = re.compile(r"^kerncap\s+(\S+)")


def cli_version(binary: str, timeout: float = 30) -> str:
    """`kerncap --version`'s version string ("0.4.0"); "" when it prints none."""
    p = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=timeout)
    m = _VERSION.match((p.stdout or p.stderr).strip())
    return m.group(1) if m else ""

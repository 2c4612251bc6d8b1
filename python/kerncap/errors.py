"""The exceptions of the Python API: one per exit code of the `kerncap` CLI, each carrying the
CLI's own message (its `kerncap: error: ...` line) so that a caller, or an agent, sees exactly
what a person at the terminal would."""
from __future__ import annotations

from typing import Dict, List, Optional, Type

# The CLI's exit codes (src/common/error.hpp): 1 is a FAIL verdict, not an error.
EXIT_INPUT = 2
EXIT_DEVICE = 3
EXIT_INTERNAL = 70


class KerncapError(Exception):
    """The CLI (or the API around it) refused or failed.

    message: the CLI's error text, without the "kerncap: error: " prefix; exit_code: its exit
    status; kind: "input" (2: bad flag, damaged capture, no such kernel), "device" (3: no GPU,
    launch failure), "internal" (70 or anything else); command: the argv that ran; stderr:
    everything the CLI printed there."""

    kind = "internal"

    def __init__(self, message: str, exit_code: int, command: Optional[List[str]] = None, stderr: str = ""):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.command: List[str] = list(command or [])
        self.stderr = stderr


class KerncapInputError(KerncapError):
    """Exit 2: the request or a file it names is wrong; fix the input, retrying will not help."""

    kind = "input"


class KerncapDeviceError(KerncapError):
    """Exit 3: the GPU or the driver refused (no device, out of memory, launch failure)."""

    kind = "device"


class KerncapNotFoundError(KerncapInputError):
    """No `kerncap` executable: neither given, nor in $KERNCAP_BIN, beside the package, on PATH or
    in a build tree."""


class KerncapVersionError(KerncapInputError):
    """The CLI printed a document of a newer format version than this Python package reads."""


_BY_CODE: Dict[int, Type[KerncapError]] = {EXIT_INPUT: KerncapInputError, EXIT_DEVICE: KerncapDeviceError}


# The command-line parser's own refusals (an unknown flag, a missing argument) exit with its
# codes, 100 and above.
_PARSER_CODES = range(100, 128)


def error_for(exit_code: int, message: str, command: List[str], stderr: str) -> KerncapError:
    """The exception class of a CLI exit code, carrying its message."""
    if exit_code in _PARSER_CODES:
        return KerncapInputError(message, exit_code, command, stderr)
    return _BY_CODE.get(exit_code, KerncapError)(message, exit_code, command, stderr)


def cli_message(stderr: str, exit_code: int) -> str:
    """The CLI's error message: from its last `kerncap: error: ...` line (prefix removed) to the end
    (some messages go on over several lines, e.g. the closest kernel names), else the tail of
    stderr."""
    lines = [l.rstrip() for l in stderr.splitlines() if l.strip()]
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        for prefix in ("kerncap: error: ", "kerncap: internal error: ", "kerncap: device error: "):
            if line.startswith(prefix):
                return "\n".join([line[len(prefix):]] + lines[i + 1:])
    if lines:
        return "\n".join(lines[-5:])
    return f"kerncap exited with status {exit_code} and printed no message"

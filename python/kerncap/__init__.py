"""kerncap's Python side: the typed API over the CLI (api.py, results.py), the MCP server
(mcp_server.py), and the Triton support (compile-metadata shim, reproducer generator). See
docs/python-api.md, docs/agents.md and docs/triton.md."""
from .api import (Kerncap, baseline_save, default_kerncap, diff, evaluate, extract, footprint, info, lint, locate,
                  profile, replay, run_swapped, serve, serve_status, triton_env, validate)
from .cli_path import find_kerncap
from .errors import (KerncapDeviceError, KerncapError, KerncapInputError, KerncapNotFoundError,
                     KerncapVersionError)
from .results import (BaselineResult, DiffResult, DiffRow, EvaluateResult, ExtractReproducer, ExtractResult, ExtractSource,
                      FootprintResult, FuzzResult, InfoResult, KernelProfile, LintCheck, LintResult, LocateEntry,
                      LocateResult, PieceResult, ProfileResult, RegionResult, ReplayResult, ServeStatus,
                      RunResult, SpeedupResult, ValidateResult)
from .runner import Progress
from .serving import Server

__all__ = [
    "Kerncap", "default_kerncap", "find_kerncap", "triton_env", "Progress",
    "profile", "extract", "info", "replay", "validate", "evaluate", "EvaluateResult", "footprint", "lint", "baseline_save", "diff", "locate",
    "serve", "serve_status", "Server", "ServeStatus", "run_swapped", "RunResult",
    "KerncapError", "KerncapInputError", "KerncapDeviceError", "KerncapNotFoundError", "KerncapVersionError",
    "ProfileResult", "KernelProfile", "ExtractResult", "ExtractSource", "ExtractReproducer", "InfoResult",
    "ReplayResult", "ValidateResult", "RegionResult", "PieceResult", "FuzzResult", "SpeedupResult",
    "FootprintResult", "LintResult", "LintCheck", "BaselineResult", "DiffResult", "DiffRow", "LocateResult",
    "LocateEntry",
]

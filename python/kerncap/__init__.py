"""kerncap's Python side: the API over the CLI, and the Triton support (compile-metadata shim,
reproducer generator). See docs/python-api.md and docs/triton.md."""
from .api import (ExtractResult, Kerncap, KerncapError, KernelProfile, ProfileResult, RegionResult, ReplayResult,
                  ValidateResult, triton_env)

__all__ = ["Kerncap", "KerncapError", "KernelProfile", "ProfileResult", "ExtractResult", "ReplayResult",
           "ValidateResult", "RegionResult", "triton_env"]
